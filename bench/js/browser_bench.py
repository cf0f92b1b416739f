#!/usr/bin/python3
"""idgen's WebAssembly build beside the pure-JavaScript npm packages people
use instead, in a browser (the browser half of make bench-js): headless
Chromium loads a page, served on a free loopback port, that imports
build/js/browser/browser.mjs and the peers' browser ES modules from the
peers' node_modules (an import map names them), and times each operation
there as bench.mjs does in Node: n calibrated so a round takes about
ROUND_MS, ROUNDS rounds, the median ops/s; then duplicates and order
violations over N1 IDs from each generator.

  bench/js/browser_bench.py PEERS_NODE_MODULES [--quick]

bench/js/run.sh installs the peers and runs this after bench.mjs.  The
module comes from IDGEN_WASM_DIR or build/js/browser.  Uses the DevTools
driver of tests/status_page_test.py and the static server of
tests/wasm_browser_test.py.  Exits 77 with a message when Chromium or
python3-websocket is missing, 1 when the page fails.
"""
import json
import os
import shutil
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(os.path.dirname(here))
sys.path.insert(0, os.path.join(top, "tests"))
from status_page_test import CHROMIUM, Browser, websocket  # noqa: E402
from wasm_browser_test import Server  # noqa: E402

PEERS = ["uuid", "ulid", "ulidx", "uuidv7", "@sapphire/snowflake"]
# The conditions a bundler targeting browsers as ES modules matches in a
# package's "exports" (the first key in the object's order that matches
# wins, as Node's resolver does); "node" and "require" never match here.
CONDITIONS = ("browser", "import", "module", "default")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>idgen: browser benchmark</title>
<script type="importmap">@IMPORTS@</script>
</head>
<body>
<p id="status">running</p>
<p id="progress"></p>
<pre id="result"></pre>
<script type="module">
const status = document.getElementById('status');
const progress = document.getElementById('progress');
const QUICK = @QUICK@;
const ROUNDS = QUICK ? 3 : 7, ROUND_MS = QUICK ? 100 : 300, N1 = QUICK ? 200000 : 1000000;
const TWITTER = 1288834974657;
// a turn of the event loop between measurements: the driver's DevTools
// calls are answered only between tasks
const yieldTurn = () => new Promise((r) => setTimeout(r, 0));
let sink; // the last value made, kept so no call's result is dead code
const time = (f) => {
  let n = 1000;
  for (;;) { // calibrate: n calls take about ROUND_MS
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sink = f();
    const ms = performance.now() - t0;
    if (ms > ROUND_MS / 4) { n = Math.ceil(n * ROUND_MS / ms); break; }
    n *= 4;
  }
  const rates = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) sink = f();
    rates.push(n / ((performance.now() - t0) / 1e3));
  }
  rates.sort((a, b) => a - b);
  return rates[ROUNDS >> 1];
};
// as bench.mjs: compared as BigInt for bigints, as text otherwise; in
// chunks with a turn between them (a slow peer's million IDs take longer
// than the driver waits for an answer)
async function correctness(f, n) {
  const seen = new Set();
  let dups = 0, order = 0, last = null;
  for (let i = 0; i < n; i++) {
    if (i % 50000 === 0) await yieldTurn();
    const v = f();
    const k = typeof v === 'bigint' ? v : String(v);
    if (seen.has(k)) dups++;
    seen.add(k);
    if (last !== null && !(k > last)) order++;
    last = k;
  }
  return { dups, order };
}
try {
  const idgen = await import('/idgen/browser.mjs');
  await idgen.init();
  const { v7: uuidV7 } = await import('uuid');
  const ulidPkg = await import('ulid');
  const ulidx = await import('ulidx');
  const { uuidv7 } = await import('uuidv7');
  const { Snowflake: Sapphire } = await import('@sapphire/snowflake');
  // each package with its defaults; idgen's Snowflake takes its node
  // values from the caller here (no registry in a browser)
  const g = new idgen.Snowflake({ layout: 'twitter', node: 'datacenter=1,worker=1' });
  const sap = new Sapphire(BigInt(TWITTER));
  const mu = ulidPkg.monotonicFactory(), mx = ulidx.monotonicFactory();
  const ug = new idgen.UlidGenerator(), vg = new idgen.Uuid7Generator();
  const ops = {
    'Snowflake, BigInt': { idgen: () => g.next(), '@sapphire/snowflake': () => sap.generate() },
    'Snowflake, string': { idgen: () => g.nextString(),
      '@sapphire/snowflake': () => sap.generate().toString() },
    'ULID': { idgen: () => idgen.ulid(), ulid: () => ulidPkg.ulid(), ulidx: () => ulidx.ulid() },
    'monotonic ULID': { idgen: () => ug.next(), ulid: () => mu(), ulidx: () => mx() },
    'UUIDv7': { idgen: () => vg.next(), uuid: () => uuidV7(), uuidv7: () => uuidv7() },
  };
  const rows = [];
  for (const [kind, byName] of Object.entries(ops)) {
    for (const [name, f] of Object.entries(byName)) {
      progress.textContent = `${kind} | ${name}`;
      await yieldTurn();
      try {
        const rate = time(f);
        await yieldTurn();
        rows.push({ kind, name, rate, ...await correctness(f, N1) });
      } catch (e) {
        rows.push({ kind, name, error: String(e && e.message || e).split('\\n')[0] });
      }
    }
  }
  // decode: a Snowflake ID (a BigInt) to its fields
  const id = g.next();
  const sapd = new Sapphire(BigInt(TWITTER));
  for (const [name, f] of [['idgen', () => idgen.decode(id)],
                           ['@sapphire/snowflake', () => sapd.deconstruct(id)]]) {
    progress.textContent = `decode | ${name}`;
    await yieldTurn();
    rows.push({ kind: 'decode (Snowflake)', name, rate: time(f) });
  }
  g.close();
  document.getElementById('result').textContent = JSON.stringify({
    rows, ROUNDS, ROUND_MS, N1, cores: navigator.hardwareConcurrency,
    isolated: self.crossOriginIsolated });
  status.textContent = 'done';
} catch (e) {
  status.textContent = 'failed: ' + (e && e.stack || e);
}
</script>
</body></html>
"""


def esm_entry(pkg_dir):
    """The file (relative to pkg_dir) a browser imports for the package as
    an ES module, from its package.json."""
    with open(os.path.join(pkg_dir, "package.json")) as f:
        meta = json.load(f)

    def pick(target):
        if isinstance(target, str):
            return target
        if isinstance(target, list):
            for t in target:
                r = pick(t)
                if r:
                    return r
            return None
        if isinstance(target, dict):
            for key, value in target.items():
                if key in CONDITIONS:
                    r = pick(value)
                    if r:
                        return r
        return None

    exports = meta.get("exports")
    if exports is not None:
        if isinstance(exports, dict) and any(k.startswith(".") for k in exports):
            exports = exports.get(".")
        entry = pick(exports)
        if entry:
            return entry
        raise RuntimeError("%s: no browser, import or default entry in its exports" % pkg_dir)
    entry = meta.get("module") or meta.get("main") or "index.js"
    browser = meta.get("browser")
    if isinstance(browser, dict):  # the old field: file replacements for browsers
        entry = browser.get(entry, browser.get("./" + entry.lstrip("./"), entry))
    return entry


def import_map(node_modules):
    """An import map for the peers and what they import, recursively
    (ulidx imports layerr): each name to its ES module entry, served
    under /node_modules/."""
    imports, todo = {}, list(PEERS)
    while todo:
        name = todo.pop()
        if name in imports:
            continue
        d = os.path.join(node_modules, name)
        if not os.path.isdir(d):
            raise RuntimeError("%s is not installed in %s" % (name, node_modules))
        imports[name] = "/node_modules/%s/%s" % (name, os.path.normpath(esm_entry(d)))
        with open(os.path.join(d, "package.json")) as f:
            todo.extend(json.load(f).get("dependencies", {}))
    return {"imports": imports}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def report(result, product):
    rounds, round_ms, n1 = result["ROUNDS"], result["ROUND_MS"], result["N1"]
    print("# %s (headless), %s, %s cores; %d rounds of ~%d ms, medians; correctness over %d IDs"
          % (product, cpu_model(), result["cores"], rounds, round_ms, n1))
    print("| operation | package | ops/s | ns/op | dups | order violations |")
    print("|---|---|---|---|---|---|")
    by_kind = {}
    for r in result["rows"]:
        by_kind.setdefault(r["kind"], []).append(r)
        if "error" in r:
            print("| %s | %s | fails: %s | | | |" % (r["kind"], r["name"], r["error"]))
            continue
        print("| %s | %s | %.2f M | %.1f | %s | %s |"
              % (r["kind"], r["name"], r["rate"] / 1e6, 1e9 / r["rate"],
                 r.get("dups", ""), r.get("order", "")))
    summary = []
    for kind, rows in by_kind.items():
        me = next((r for r in rows if r["name"] == "idgen" and "error" not in r), None)
        if me is None:
            summary.append("%s: idgen failed" % kind)
            continue
        if kind.startswith("decode"):
            sap = next((r for r in rows if r["name"] != "idgen" and "error" not in r), None)
            if sap:
                summary.append("decode: idgen %.2fx %s's deconstruct" % (me["rate"] / sap["rate"], sap["name"]))
            continue
        # the measure: the fastest peer without duplicates (and, but for a
        # plain ULID, which promises no order within a millisecond, without
        # order violations)
        ordered = kind != "ULID"
        clean = [r for r in rows if r["name"] != "idgen" and "error" not in r and r["dups"] == 0
                 and (not ordered or r["order"] == 0)]
        best = max(clean, key=lambda r: r["rate"]) if clean else None
        line = "%s: idgen %.2f M/s" % (kind, me["rate"] / 1e6)
        if best:
            line += ", %.2fx the fastest peer without duplicates (%s, %.2f M/s)" % (
                me["rate"] / best["rate"], best["name"], best["rate"] / 1e6)
        else:
            line += ", every peer made duplicates or went out of order"
        summary.append(line)
    print("\n" + "\n".join(summary))


def main():
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:]
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit("usage: browser_bench.py PEERS_NODE_MODULES [--quick]")
    node_modules = os.path.abspath(args[0])
    browser_dir = os.path.abspath(os.environ.get("IDGEN_WASM_DIR") or
                                  os.path.join(top, "build", "js", "browser"))
    if CHROMIUM is None or websocket is None:
        print("browser_bench.py: skipped: needs Debian's chromium and python3-websocket "
              "(scripts/install-deps.sh installs both)", file=sys.stderr)
        sys.exit(77)
    for f in ("browser.mjs", "idgen.wasm", os.path.join("lib", "layout.js"),
              os.path.join("lib", "wasm.js")):
        if not os.path.exists(os.path.join(browser_dir, f)):
            sys.exit("browser_bench.py: %s not found: build it with `make build` (or set IDGEN_WASM_DIR)"
                     % os.path.join(browser_dir, f))
    imports = import_map(node_modules)
    tmp = tempfile.mkdtemp(prefix="idgen-bench-browser-")
    server = browser = None
    try:
        # the site: the page, and links to the module's folder and the peers
        site = os.path.join(tmp, "site")
        os.mkdir(site)
        os.symlink(browser_dir, os.path.join(site, "idgen"))
        os.symlink(node_modules, os.path.join(site, "node_modules"))
        with open(os.path.join(site, "index.html"), "w") as f:
            f.write(PAGE.replace("@IMPORTS@", json.dumps(imports))
                    .replace("@QUICK@", "true" if quick else "false"))
        server = Server(site)
        browser = Browser(tmp)
        product = browser.call("Browser.getVersion").get("product", "Chromium")
        browser.call("Page.navigate", url="http://127.0.0.1:%d/" % server.port)
        last = [None]

        def finished():
            st = browser.text("status") or "running"
            p = browser.text("progress")
            if p and p != last[0]:  # where it is, on standard error
                print("  browser: " + p, file=sys.stderr)
                last[0] = p
            return st != "running" and st

        st = browser.wait("the benchmark page", finished, 1800)
        if st != "done":
            sys.exit("browser_bench.py: the page %s; exceptions: %s"
                     % (st or "did not finish in 30 minutes", browser.console_errors))
        report(json.loads(browser.text("result")), product)
    finally:
        if browser:
            browser.close()
        if server:
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
