#!/usr/bin/env python3
"""The npm package (@idgen/idgen) as a new user gets it: `npm pack` in js/
(its prepack step gathers the prebuilt addon, idgen.wasm and the sources
from BUILDDIR), then the tarball installed into fresh directories under the
system's temporary folder, outside the tree, with the build out of reach
(no IDGEN_NODE_ADDON, no IDGEN_WASM_DIR; the package's in-tree fallback,
../build/js, does not exist there).  Checked there:

  - the addon loaded is the package's prebuilt one (its path inside the
    installed package); require() makes Snowflake IDs on a file: registry
    lease, ULIDs, UUIDv7s, decode, plan; a misspelt option is refused;
  - `import` names every export index.js has (index.mjs), and a named
    import of each works;
  - TypeScript (typescript from npm, at test time): `tsc --strict --module
    nodenext` compiles a CommonJS and an ES module use, which then run;
  - esbuild and vite (from npm, at test time) bundle the browser entry
    (esbuild with --loader:.wasm=file and the URL passed to init(), as
    js/README.md says; vite with no configuration at all), and each bundle
    makes IDs in headless Chromium;
  - 4 processes x 200,000 Snowflake IDs on one file: registry: 0 duplicates,
    each process's increasing;
  - the prebuilt binary under another platform's name: the WebAssembly
    build, with exactly one warning, makes ULIDs and Snowflake IDs of node
    values given, and refuses a file: registry saying why;
  - then the install script allowed (`npm install-scripts approve`, `npm
    rebuild`): it builds the addon from the package's sources with cmake,
    and that addon leases from file:.

npm, the registry behind it and Chromium are needed: when one is missing
the test fails, saying which (never skips).

usage: npm_package_test.py JSDIR BUILDDIR
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
from checks import finish  # noqa: E402
from status_page_test import CHROMIUM, Browser, websocket  # noqa: E402
from wasm_browser_test import Server  # noqa: E402

PROCS = 4
PER_PROC = 200000
NPM_S = 240  # one npm install from the registry (typescript, esbuild, vite)


def check(what, ok, detail=""):
    return checks.report(what, ok, detail, limit=1500)


def env_out_of_tree():
    e = {k: v for k, v in os.environ.items()
         if k not in ("IDGEN_NODE_ADDON", "IDGEN_WASM_DIR", "IDGEN_BUILD_DIR", "NODE_PATH")}
    e["npm_config_update_notifier"] = "false"
    return e


def run(cmd, cwd, timeout=120, env=None, what=None):
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=env or env_out_of_tree())
    print("$ %s  (%.1f s, exit %d)" % (" ".join(cmd), time.monotonic() - t0, p.returncode),
          flush=True)
    if p.returncode != 0:
        print((p.stdout + p.stderr)[-3000:], flush=True)
    return p


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


CJS = r"""
const idgen = require('@idgen/idgen');
const reg = 'file:' + process.argv[2];
const g = new idgen.Snowflake({ registry: reg, layout: 'twitter' });
const ids = g.nextBatch(1000);
let increasing = true;
for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) increasing = false;
let unknown = null;
try { new idgen.Snowflake({ nod: 'datacenter=1' }); } catch (e) { unknown = e.code + ': ' + e.message; }
// Public IDs (the native addon's): a key given as bytes, a round trip each way
let pub = null;
try {
  const p = new idgen.Public({ key: Buffer.alloc(32, 7), prefix: 'user' });
  pub = String(p.parse(p.format(ids[0])) === ids[0] && p.unmap(p.map(ids[0])) === ids[0] &&
               p.map(ids[0]) !== ids[0]);
} catch (e) { pub = e.code + ': ' + e.message; }
const l = g.lease();
console.log(JSON.stringify({
  pub,
  addon: idgen._addonPath, version: idgen.version, first: String(ids[0]), increasing,
  lease: l && { worker: l.worker, registry: l.registry },
  ulid: new idgen.UlidGenerator().next(), uuid7: new idgen.Uuid7Generator().next(),
  decoded: idgen.decode(ids[0]).kind, plan: typeof idgen.plan().idsPerSecond, unknown,
}));
g.close();
"""

ESM = r"""
import * as m from '@idgen/idgen';
import { Snowflake, UlidGenerator, Uuid7Generator, ulid, ulidToUuid, uuidToUlid, decode, plan,
         version, init } from '@idgen/idgen';
import { createRequire } from 'node:module';
const cjs = createRequire(import.meta.url)('@idgen/idgen');
const missing = Object.keys(cjs).filter((k) => !(k in m) || m[k] !== cjs[k]);
await init();
const g = new Snowflake({ registry: 'static', node: 'datacenter=1,worker=2' });
console.log(JSON.stringify({
  keys: Object.keys(cjs), missing, id: String(g.next()), ulid: ulid(), gen: new UlidGenerator().next(),
  uuid7: new Uuid7Generator().next(), back: uuidToUlid(ulidToUuid('01ARZ3NDEKTSV4RRFFQ69G5FAV')),
  kind: decode(g.next()).kind, plan: typeof plan({ layout: 'twitter' }).idsPerSecond, version,
}));
"""

TS = r"""
import { Snowflake, UlidGenerator, Uuid7Generator, decode, plan, version, init } from '@idgen/idgen';
import type { Decoded, SnowflakeOptions } from '@idgen/idgen';
const opts: SnowflakeOptions = { layout: 'twitter', registry: 'static', node: 'datacenter=1,worker=3' };
async function main(): Promise<void> {
  await init();
  const g = new Snowflake(opts);
  const id: bigint = g.next();
  const batch: BigUint64Array = g.nextBatch(3);
  const d: Decoded = decode(id);
  const u: string = new UlidGenerator().next() + ' ' + new Uuid7Generator().next();
  console.log(JSON.stringify({ id: id.toString(), n: batch.length, kind: d.kind, u,
                               rate: plan().idsPerSecond, version }));
}
main();
"""

# The browser entry, as a page would use it; no top-level await (esbuild's
# default output format, an IIFE, has none).
ENTRY = r"""
import { init, Snowflake, UlidGenerator, Uuid7Generator, decode, version } from '@idgen/idgen';
@IMPORT@
const out = document.getElementById('out');
init(@SOURCE@).then(() => {
  const g = new Snowflake({ node: 'datacenter=1,worker=4' });
  const ids = g.nextBatch(10000);
  let inc = true;
  for (let i = 1; i < ids.length; i++) if (ids[i] <= ids[i - 1]) inc = false;
  out.textContent = JSON.stringify({ n: ids.length, distinct: new Set(ids).size, increasing: inc,
    worker: decode(ids[0]).fields.worker, ulid: new UlidGenerator().next(),
    uuid7: new Uuid7Generator().next(), version });
}, (e) => { out.textContent = 'error: ' + e.message; });
"""

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>bundle</title></head>
<body><pre id="out">running</pre>@SCRIPT@</body></html>
"""

WORKER = r"""
const fs = require('node:fs');
const idgen = require('@idgen/idgen');
const [reg, n, out] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const g = new idgen.Snowflake({ registry: 'file:' + reg, layout: 'twitter' });
const all = new BigUint64Array(n);
for (let off = 0; off < n; off += 10000) all.set(g.nextBatch(Math.min(10000, n - off)), off);
fs.writeFileSync(out, Buffer.from(all.buffer));
g.close();
"""

FALLBACK = r"""
const idgen = require('@idgen/idgen');
const g = new idgen.Snowflake({ registry: 'static', node: 'datacenter=2,worker=5' });
const h = new idgen.Snowflake({ registry: 'static', node: 'datacenter=2,worker=6' });
const a = g.nextBatch(1000);
let refused = null, noRegistry = null, noRegistryOpen = null;
try { new idgen.Snowflake({ registry: 'file:' + process.argv[2] }); } catch (e) { refused = e.code + ': ' + e.message; }
// The addon's default is the host's registry: here the same code is refused, not static.
try { new idgen.Snowflake({ node: 'datacenter=1' }); } catch (e) { noRegistry = e.code + ': ' + e.message; }
idgen.Snowflake.open({ layout: 'twitter' }).then(() => null, (e) => e.code + ': ' + e.message).then((o) => {
  noRegistryOpen = o;
  console.log(JSON.stringify({ addon: idgen._addonPath, ulid: new idgen.UlidGenerator().next(),
    uuid7: new idgen.Uuid7Generator().next(), first: String(a[0]), other: String(h.next()),
    worker: idgen.decode(a[0]).fields.worker, distinct: new Set(a).size, refused, noRegistry,
    noRegistryOpen }));
});
"""

ULID_RE = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
UUID7_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def last_json(p):
    for line in reversed((p.stdout or "").strip().split("\n")):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {}


def new_app(tmp, name, tarball, extra=()):
    app = os.path.join(tmp, name)
    os.mkdir(app)
    write(os.path.join(app, "package.json"), json.dumps({"name": name, "private": True}))
    p = run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", tarball] + list(extra),
            app, timeout=NPM_S)
    check("%s: npm install of the tarball%s" % (name, " and " + ", ".join(extra) if extra else ""),
          p.returncode == 0, p.stderr[-2000:])
    return app


def browser_phase(tmp, app, pkg):
    if not check("Chromium and python3-websocket are here (the bundles run in a browser)",
                 CHROMIUM and websocket, "chromium: %s, websocket: %s" % (CHROMIUM, websocket)):
        return
    # esbuild: the .wasm emitted as a file (--loader:.wasm=file) and its URL
    # passed to init(), as js/README.md says.
    ed = os.path.join(app, "esbuild")
    os.mkdir(ed)
    write(os.path.join(ed, "entry.js"),
          ENTRY.replace("@IMPORT@", "import wasmUrl from '@idgen/idgen/idgen.wasm';")
          .replace("@SOURCE@", "wasmUrl"))
    p = run([os.path.join(app, "node_modules", ".bin", "esbuild"), "entry.js", "--bundle",
             "--outdir=dist", "--loader:.wasm=file"], ed)
    check("esbuild bundles the browser entry (--bundle --loader:.wasm=file)",
          p.returncode == 0 and os.path.exists(os.path.join(ed, "dist", "entry.js")), p.stderr)
    write(os.path.join(ed, "dist", "index.html"),
          PAGE.replace("@SCRIPT@", '<script src="entry.js"></script>'))
    bundle = open(os.path.join(ed, "dist", "entry.js")).read() if p.returncode == 0 else ""
    check("esbuild's bundle has no node: import and no top-level await",
          not re.search(r"""(\bfrom\s*|\b(import|require)\s*\(\s*)["']node:""", bundle)
          and not re.search(r"^await ", bundle, re.M), "")
    # vite: no configuration; the .wasm found by new URL(..., import.meta.url).
    vd = os.path.join(app, "vite")
    os.mkdir(vd)
    write(os.path.join(vd, "entry.js"), ENTRY.replace("@IMPORT@", "").replace("@SOURCE@", ""))
    write(os.path.join(vd, "index.html"),
          PAGE.replace("@SCRIPT@", '<script type="module" src="./entry.js"></script>'))
    p = run([os.path.join(app, "node_modules", ".bin", "vite"), "build", "--logLevel", "warn"], vd,
            timeout=180)
    wasm_out = [f for f in os.listdir(os.path.join(vd, "dist", "assets"))
                if f.endswith(".wasm")] if p.returncode == 0 else []
    check("vite builds the browser entry with no configuration, and emits idgen.wasm",
          p.returncode == 0 and wasm_out, p.stdout[-1500:] + p.stderr[-1500:])
    check("vite says nothing was externalized (no node: import reached)",
          "externalized" not in p.stdout + p.stderr, p.stdout[-1500:] + p.stderr[-1500:])
    browser = None
    try:
        browser = Browser(tmp)
        for name, root in (("esbuild", os.path.join(ed, "dist")), ("vite", os.path.join(vd, "dist"))):
            if not os.path.exists(os.path.join(root, "index.html")):
                check("%s: the bundle makes IDs in Chromium" % name, False, "no bundle")
                continue
            server = Server(root)
            try:
                browser.call("Page.navigate", url="http://127.0.0.1:%d/" % server.port)
                text = browser.wait("the page", lambda: (browser.text("out") or "running") != "running"
                                    and browser.text("out"), 60) or ""
                print("%s page: %s" % (name, text), flush=True)
                try:
                    r = json.loads(text)
                except ValueError:
                    r = {}
                check("%s: the bundle makes 10,000 Snowflake IDs in Chromium, distinct, increasing, "
                      "with the node values given" % name,
                      r.get("n") == 10000 and r.get("distinct") == 10000 and r.get("increasing")
                      and r.get("worker") == 4, text)
                check("%s: a ULID, a UUIDv7 and the version (%s)" % (name, pkg["version"]),
                      ULID_RE.fullmatch(r.get("ulid", "")) and UUID7_RE.fullmatch(r.get("uuid7", ""))
                      and r.get("version") == pkg["version"], r)
                check("%s: idgen.wasm fetched from the bundle's server" % name,
                      any(x.endswith(".wasm") for x in server.paths), server.paths)
            finally:
                server.close()
        check("no exception in the pages", not browser.console_errors, browser.console_errors)
    except Exception as e:  # noqa: BLE001  said as a failure, never a skip
        check("Chromium ran the bundles", False, "%s: %s" % (type(e).__name__, e))
    finally:
        if browser:
            browser.close()


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    jsdir, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not check("npm is here", shutil.which("npm"), "npm not found: scripts/install-deps.sh"):
        finish()
    tmp = tempfile.mkdtemp(prefix="idgen-npm-")
    t_all = time.monotonic()
    try:
        # ---- pack
        packdir = os.path.join(tmp, "pack")
        os.mkdir(packdir)
        env = dict(env_out_of_tree(), IDGEN_BUILD_DIR=build)
        p = run(["npm", "pack", "--pack-destination", packdir, "--loglevel=error"], jsdir, env=env)
        tars = [f for f in os.listdir(packdir) if f.endswith(".tgz")]
        if not check("npm pack in js/ makes one tarball (prepack gathers from %s)" % build,
                     p.returncode == 0 and len(tars) == 1, p.stderr[-2000:]):
            finish()
        tarball = os.path.join(packdir, tars[0])
        with tarfile.open(tarball) as t:
            names = t.getnames()
            pkg = json.load(t.extractfile("package/package.json"))
        print("tarball: %s, %d files, %.1f kB" % (tars[0], len(names), os.path.getsize(tarball) / 1e3))
        prebuilt = [n for n in names if n.startswith("package/prebuilds/") and n.endswith(".node")]
        check("the tarball holds a prebuilt addon, idgen.wasm, browser.mjs, index.mjs and sources/",
              prebuilt and all("package/" + f in names for f in (
                  "idgen.wasm", "browser.mjs", "index.mjs", "index.d.ts", "sources/CMakeLists.txt",
                  "sources/cmake/sources.cmake", "sources/js/src/addon.c", "scripts/install.js")),
              names)
        check("package.json: named @idgen/idgen, not private, engines node >= 18",
              pkg.get("name") == "@idgen/idgen" and "private" not in pkg
              and pkg.get("engines", {}).get("node") == ">=18", pkg)

        # ---- a fresh directory: the package, and the tools the checks use
        app = new_app(tmp, "app", tarball, ["typescript@5", "esbuild", "vite"])
        inst = os.path.join(app, "node_modules", "@idgen", "idgen")
        reg = os.path.join(tmp, "registry")
        write(os.path.join(app, "cjs.js"), CJS)
        p = run(["node", "cjs.js", reg], app)
        r = last_json(p)
        print("require: " + json.dumps(r))
        check("require(): the addon loaded is the package's prebuilt one (inside %s)" % inst,
              str(r.get("addon", "")).startswith(os.path.join(inst, "prebuilds") + os.sep), r)
        check("require(): 1,000 Snowflake IDs leased from file:, increasing, the lease shown",
              r.get("increasing") and r.get("lease") and r["lease"].get("registry", "").startswith("file:"),
              r)
        check("require(): ULID, UUIDv7, decode, plan, version",
              ULID_RE.fullmatch(r.get("ulid", "")) and UUID7_RE.fullmatch(r.get("uuid7", ""))
              and r.get("decoded") == "snowflake" and r.get("plan") == "number"
              and r.get("version") == pkg["version"], r)
        check("require(): a misspelt option is refused, naming it and the known ones",
              (r.get("unknown") or "").startswith('EINVAL: unknown option "nod"; known: layout,'), r)
        check("require(): Public maps an ID and back (format, parse, map, unmap)",
              r.get("pub") == "true", r)

        write(os.path.join(app, "esm.mjs"), ESM)
        p = run(["node", "esm.mjs"], app)
        r = last_json(p)
        check("import: every export of require() is named in ESM (%d names), the same values"
              % len(r.get("keys", [])), r.get("keys") and r.get("missing") == [], r)
        check("import: named imports make IDs", ULID_RE.fullmatch(r.get("ulid", "")) and
              r.get("back") == "01ARZ3NDEKTSV4RRFFQ69G5FAV" and r.get("kind") == "snowflake", r)

        write(os.path.join(app, "use.ts"), TS)
        write(os.path.join(app, "use-esm.mts"), TS)
        tsc = os.path.join(app, "node_modules", ".bin", "tsc")
        p = run([tsc, "--strict", "--module", "nodenext", "--outDir", "out", "use.ts", "use-esm.mts"],
                app)
        check("tsc --strict --module nodenext compiles a CommonJS and an ES module use",
              p.returncode == 0, p.stdout + p.stderr)
        for f in ("use.js", "use-esm.mjs"):
            q = run(["node", os.path.join("out", f)], app)
            r = last_json(q)
            check("the compiled %s runs: Snowflake, decode, plan" % f,
                  r.get("n") == 3 and r.get("kind") == "snowflake" and r.get("version") == pkg["version"],
                  q.stdout + q.stderr)

        browser_phase(tmp, app, pkg)

        # ---- 4 processes on one file: registry
        write(os.path.join(app, "worker.js"), WORKER)
        reg4 = os.path.join(tmp, "registry4")
        t0 = time.monotonic()
        procs = [subprocess.Popen(["node", "worker.js", reg4, str(PER_PROC),
                                   os.path.join(tmp, "ids%d.bin" % i)], cwd=app,
                                  env=env_out_of_tree(), stderr=subprocess.PIPE, text=True)
                 for i in range(PROCS)]
        errs = [pr.communicate(timeout=120)[1] for pr in procs]
        seen, total, inc = set(), 0, True
        for i in range(PROCS):
            path = os.path.join(tmp, "ids%d.bin" % i)
            ids = struct.unpack("<%dQ" % PER_PROC, open(path, "rb").read()) \
                if os.path.exists(path) else ()
            total += len(ids)
            inc = inc and len(ids) == PER_PROC and all(ids[k] < ids[k + 1] for k in range(len(ids) - 1))
            seen.update(ids)
        print("%d processes x %d IDs in %.1f s" % (PROCS, PER_PROC, time.monotonic() - t0))
        check("%d processes x %d Snowflake IDs on one file: registry: 0 duplicates, each increasing"
              % (PROCS, PER_PROC),
              all(pr.returncode == 0 for pr in procs) and total == PROCS * PER_PROC
              and len(seen) == total and inc,
              "total %d, distinct %d, increasing %s, stderr %s" % (total, len(seen), inc, errs))

        # ---- the prebuilt binary unusable: the WebAssembly build
        app2 = new_app(tmp, "app2", tarball)
        inst2 = os.path.join(app2, "node_modules", "@idgen", "idgen")
        pre = os.path.join(inst2, "prebuilds")
        for d in os.listdir(pre):
            os.rename(os.path.join(pre, d), os.path.join(pre, "linux-arm64-gnu" if "x64" in d
                                                         else "linux-x64-gnu"))
        write(os.path.join(app2, "fallback.js"), FALLBACK)
        p = run(["node", "fallback.js", os.path.join(tmp, "registry-wasm")], app2)
        r = last_json(p)
        print("fallback: " + json.dumps(r))
        warnings = p.stderr.count("IdgenWarning")
        check("another platform's prebuilt only: the WebAssembly build, with exactly one warning "
              "(%d)" % warnings, r.get("addon", "x") is None and warnings == 1 and
              "IDGEN_WASM_FALLBACK" in p.stderr, p.stderr)
        check("the WebAssembly build makes ULIDs and Snowflake IDs of the node values given",
              ULID_RE.fullmatch(r.get("ulid", "")) and UUID7_RE.fullmatch(r.get("uuid7", ""))
              and r.get("worker") == 5 and r.get("distinct") == 1000, r)
        check("the WebAssembly build refuses a Snowflake without a registry (the addon's default "
              "is the host's registry; static must be asked for), in new and in open()",
              all("registry not given" in (r.get(k) or "") and "static" in (r.get(k) or "")
                  for k in ("noRegistry", "noRegistryOpen")), r)
        check("the WebAssembly build refuses a file: registry, saying why",
              "WebAssembly" in (r.get("refused") or "") and
              "no native addon loads" in (r.get("refused") or ""), r)

        # ---- the install script allowed: the addon built from the sources
        t0 = time.monotonic()
        p = run(["npm", "install-scripts", "approve", "@idgen/idgen"], app2)
        if p.returncode != 0:  # an npm without allowScripts runs install scripts anyway
            print("npm install-scripts approve: not here; npm rebuild runs the script as it is")
        p = run(["npm", "rebuild", "@idgen/idgen", "--foreground-scripts"], app2, timeout=300)
        built = os.path.join(inst2, "build", "idgen.node")
        check("npm rebuild runs the install script, which builds the addon from sources/ with "
              "cmake (%.1f s)" % (time.monotonic() - t0), p.returncode == 0 and os.path.exists(built),
              p.stdout[-2000:] + p.stderr[-2000:])
        write(os.path.join(app2, "cjs.js"), CJS)
        p = run(["node", "cjs.js", os.path.join(tmp, "registry-src")], app2)
        r = last_json(p)
        check("the addon built from sources loads and leases from file:",
              r.get("addon") == built and r.get("increasing") and r.get("lease"), r)
        check("the addon built from sources has Public (libcrypto linked)", r.get("pub") == "true",
              r)
    finally:
        print("npm package test: %.1f s" % (time.monotonic() - t_all))
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
