#!/usr/bin/python3
"""The WebAssembly build (js/browser.mjs and idgen.wasm) in a real browser:
headless Chromium, driven over the DevTools protocol (python3-websocket).

  wasm_browser_test.py BROWSERDIR OUTDIR [IDGEN]

BROWSERDIR holds browser.mjs, lib/layout.js, lib/wasm.js and idgen.wasm (build/js/browser).  A page
served on a free loopback port imports the module and makes 100,000 ULIDs,
100,000 UUIDv7s and 100,000 Snowflake IDs (node datacenter=1,worker=2,
one next() call each), and keeps every ID in the page (window.ids; the
first and last 500 of each shown), with a batch that waits for its ticks
(nextBatchAsync: the event loop turns meanwhile) and the errors a few bad
inputs throw.  The test reads the IDs back and checks them
itself: 100,000 of each, well formed, distinct and strictly increasing,
times within a minute of now, the Snowflake IDs' node fields the ones
given; the errors' codes, and their messages against the ones `idgen`
(IDGEN) prints for the same input.  Every request the page made went to
the test's server.  Screenshot: OUTDIR/wasm-browser.png (its path printed),
an artifact: one that does not come in time is said ("screenshot not
taken: ...") and changes no result (status_page_test.Browser.screenshot).

Then, in the same browser, the example page js/examples/snowflake.html,
served as its comment says (the tree over HTTP: js/ from the source, and
build/js/browser/ for idgen.wasm, which the page passes to init() when it
is not beside browser.mjs): the page must finish without an exception and report
its 10,000 Snowflake IDs distinct and increasing, the first decoded with
the node values it gave, and a well-formed UUIDv7.

Exits 77 (skipped) with a message when Chromium or python3-websocket is
missing; prints "N passed, N failed" and exits 1 on any failure.
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
from checks import finish  # noqa: E402
from status_page_test import CHROMIUM, PAGE_S, Browser, websocket  # noqa: E402

N = 100000
# The page's run: 9 to 13 s with the machine's load at 12 to 17 (207 s when
# every ID was laid out in the textareas).  A wait for it, long enough that
# only a page that never finishes fails, within js.wasm's 180 s.
RUN_S = 120

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>idgen: WebAssembly</title>
<style>
body { font: 14px sans-serif; margin: 16px; }
td, th { padding: 2px 10px; text-align: left; }
.ok { color: #080; } .bad { color: #c00; }
textarea { width: 32%; height: 260px; font: 10px monospace; }
pre { background: #f4f4f4; padding: 6px; white-space: pre-wrap; }
</style></head>
<body>
<h1>idgen in WebAssembly</h1>
<p id="status">running</p>
<table id="summary"><tr><th>kind</th><th>IDs</th><th>ms</th><th>first</th><th>last</th>
<th>distinct, increasing</th></tr></table>
<h2>nextBatchAsync</h2><pre id="async"></pre>
<h2>Decoded</h2><pre id="decoded"></pre>
<h2>Errors thrown</h2><pre id="errors"></pre>
<textarea id="ulid"></textarea>
<textarea id="uuid7"></textarea>
<textarea id="snowflake"></textarea>
<script type="module">
const status = document.getElementById('status');
try {
  const idgen = await import('./browser.mjs');
  await idgen.init();
  const N = @N@;
  window.ids = {};
  const row = (kind, ids, ms, ok) => {
    const tr = document.createElement('tr');
    for (const v of [kind, ids.length, ms.toFixed(0), String(ids[0]), String(ids[ids.length - 1]),
                     ok ? 'yes' : 'NO'])
      tr.appendChild(document.createElement('td')).textContent = v;
    tr.className = ok ? 'ok' : 'bad';
    document.getElementById('summary').appendChild(tr);
    // Every ID for the test to read back (window.ids), the first and last
    // 500 on show: a textarea of 100,000 lines takes the browser minutes to
    // lay out on a busy machine, and the page's thread with it.
    window.ids[kind] = ids.join('\\n');
    document.getElementById(kind).textContent = [...ids.slice(0, 500).map(String),
      `... ${ids.length - 1000} more ...`, ...ids.slice(-500).map(String)].join('\\n');
  };
  const increasing = (ids) => ids.every((v, i) => i === 0 || ids[i - 1] < v);
  const run = (kind, make) => {
    const ids = new Array(N);
    const t = performance.now();
    for (let i = 0; i < N; i++) ids[i] = make();
    const ms = performance.now() - t;
    row(kind, ids, ms, increasing(ids) && new Set(ids).size === N);
    return ids;
  };
  // A batch that waits for its ticks (4 IDs a millisecond): the page's
  // event loop turns meanwhile.  First, before the page holds 300,000 IDs
  // to lay out.
  const slow = new idgen.Snowflake({ layout: 'time:41@1ms,worker:10,sequence:2', node: 'worker=5',
                                     maxBorrowMs: 0, maxWaitMs: 1000 });
  let turns = 0;
  const timer = setInterval(() => turns++, 1);
  const t0 = performance.now();
  const batch = [...await slow.nextBatchAsync(400)];
  clearInterval(timer);
  document.getElementById('async').textContent = JSON.stringify({
    n: batch.length, increasing: increasing(batch), turns, ms: performance.now() - t0 });
  const u = new idgen.UlidGenerator();
  run('ulid', () => u.next());
  const v = new idgen.Uuid7Generator();
  run('uuid7', () => v.next());
  const g = new idgen.Snowflake({ layout: 'twitter', node: 'datacenter=1,worker=2' });
  const sf = run('snowflake', () => g.next());
  g.close();
  document.getElementById('decoded').textContent = JSON.stringify({
    snowflake: idgen.decode(sf[N - 1]),
    ulid: idgen.decode('01ARZ3NDEKTSV4RRFFQ69G5FAV'),
    ulidToUuid: idgen.ulidToUuid('01ARZ3NDEKTSV4RRFFQ69G5FAV'),
    uuidToUlid: idgen.uuidToUlid('01563e3a-b5d3-d676-4c61-efb99302bd5b'),
    version: idgen.version,
  }, null, 1);
  const errors = {};
  const tryIt = (name, f) => {
    try {
      f();
      errors[name] = null;
    } catch (e) {
      errors[name] = { code: e.code, message: e.message };
    }
  };
  tryIt('decode_27', () => idgen.decode('01ARZ3NDEKTSV4RRFFQ69G5FAVX'));
  tryIt('decode_2_64', () => idgen.decode('18446744073709551616'));
  tryIt('ulidToUuid_27', () => idgen.ulidToUuid('01ARZ3NDEKTSV4RRFFQ69G5FAVX'));
  tryIt('layout', () => new idgen.Snowflake({ layout: 'time:41,worker:30' }));
  tryIt('registry', () => new idgen.Snowflake({ registry: 'file:/tmp/reg' }));
  tryIt('node_range', () => new idgen.Snowflake({ node: 'worker=32' }));
  tryIt('closed', () => g.next());
  document.getElementById('errors').textContent = JSON.stringify(errors, null, 1);
  status.textContent = 'done';
  status.className = 'ok';
} catch (e) {
  status.textContent = 'failed: ' + (e && e.stack || e);
  status.className = 'bad';
}
</script>
</body></html>
"""


def check(what, ok, detail=""):
    return checks.report(what, ok, detail, limit=800)


class Server:
    """A static file server for `root` on 127.0.0.1, a free port; it keeps
    the paths it was asked for."""

    def __init__(self, root):
        seen = self.paths = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=root, **kw)

            def log_message(self, fmt, *args):
                seen.append(self.path)

        Handler.extensions_map = dict(Handler.extensions_map, **{".wasm": "application/wasm",
                                                                 ".mjs": "text/javascript"})
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def cli_message(idgen, args):
    """What `idgen ARGS` prints on standard error, without "idgen: "."""
    p = subprocess.run([idgen] + args, capture_output=True, text=True, timeout=120)
    return re.sub(r"^idgen: ", "", p.stderr.strip())


def crockford(s):
    n = 0
    for c in s:
        n = n * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(c)
    return n


def check_ids(kind, ids, t0_ms, now_ms):
    if not check("%s: %d IDs read back from the page" % (kind, N), len(ids) == N, len(ids)) and not ids:
        return  # nothing to look at (the page failed: said above)
    if kind == "ulid":
        bad = [x for x in ids if not re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", x)]
        keys = ids
        times = [crockford(x[:10]) for x in (ids[0], ids[-1])]
    elif kind == "uuid7":
        bad = [x for x in ids
               if not re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", x)]
        keys = ids
        times = [int(x.replace("-", "")[:12], 16) for x in (ids[0], ids[-1])]
    else:
        bad = [x for x in ids if not re.fullmatch(r"[0-9]{1,20}", x)]
        keys = [int(x) for x in ids if x.isdigit()]
        times = [(k >> 22) + 1288834974657 for k in (keys[0], keys[-1])] if keys else []
        nodes = {((k >> 17) & 31, (k >> 12) & 31) for k in keys}
        check("snowflake: every ID carries datacenter=1, worker=2", nodes == {(1, 2)}, nodes)
    check("%s: every ID well formed" % kind, not bad, bad[:3])
    check("%s: distinct" % kind, len(set(keys)) == len(keys))
    up = all(keys[i - 1] < keys[i] for i in range(1, len(keys)))
    check("%s: strictly increasing" % kind, up)
    # made between the page's load and their reading back (however long the
    # page took), give or take 5 s (a Snowflake generator may run ahead of
    # its clock by max_borrow_ms, 1 s by default)
    check("%s: times between the page's load and now" % kind,
          times and all(t0_ms - 5000 <= t <= now_ms + 5000 for t in times), (times, t0_ms, now_ms))


def check_example(browser, tmp, browser_dir):
    """js/examples/snowflake.html, served as a checkout of the tree is."""
    tree = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(tree, "build", "js"))
    src_js = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "js")
    os.symlink(src_js, os.path.join(tree, "js"))
    os.symlink(browser_dir, os.path.join(tree, "build", "js", "browser"))
    server = Server(tree)
    try:
        errors_before = len(browser.console_errors)
        url = "http://127.0.0.1:%d/js/examples/snowflake.html" % server.port
        browser.call("Page.navigate", url=url)
        # the page writes its report over "working…" when done; an
        # exception leaves "working…" and is caught by the driver
        text = browser.wait("the example page", lambda: browser.eval(
            "document.readyState === 'complete' && (document.getElementById('out') || {}).textContent")
            not in (None, False, "", "working…") and browser.text("out"), PAGE_S) or ""
        errors = browser.console_errors[errors_before:]
        print("js/examples/snowflake.html reports:\n  " + text.replace("\n", "\n  "))
        check("example: the page finishes without an exception", text and not errors,
              (text, errors))
        lines = text.split("\n")
        check("example: 10000 IDs, 10000 distinct, increasing",
              lines[0] == "10000 IDs, 10000 distinct, increasing: true", lines[0])
        m = re.fullmatch(r"first ([0-9]+), last ([0-9]+)", lines[1] if len(lines) > 1 else "")
        check("example: first and last IDs shown, last above first",
              m and int(m.group(2)) > int(m.group(1)), lines[1:2])
        d = json.loads(lines[2][len("decoded: "):]) if len(lines) > 2 and \
            lines[2].startswith("decoded: ") else {}
        check("example: the first ID decoded with its node values (datacenter=1, worker=1)",
              m and d.get("id") == m.group(1) and d.get("kind") == "snowflake" and
              d.get("fields", {}).get("datacenter") == 1 and d.get("fields", {}).get("worker") == 1,
              d)
        check("example: a UUIDv7 shown", len(lines) > 3 and re.fullmatch(
            r"a UUIDv7 needs no node value: [0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-"
            r"[0-9a-f]{12}", lines[3]), lines[3:4])
        check("example: the page fetched the module, its layout code and idgen.wasm",
              all(p in server.paths for p in ("/js/browser.mjs", "/js/lib/layout.js")) and
              # (js/idgen.wasm where npm pack's prepack left a copy there)
              ("/build/js/browser/idgen.wasm" in server.paths or "/js/idgen.wasm" in server.paths),
              server.paths)
    finally:
        server.close()


def run(browser_dir, out, idgen):
    tmp = tempfile.mkdtemp(prefix="idgen-wasm-")
    server = browser = None
    try:
        site = os.path.join(tmp, "site")
        os.mkdir(site)
        for f in ("browser.mjs", "idgen.wasm"):
            shutil.copy(os.path.join(browser_dir, f), site)
        # browser.mjs imports ./lib/wasm.js and ./lib/layout.js (the API; decode and plan)
        shutil.copytree(os.path.join(browser_dir, "lib"), os.path.join(site, "lib"))
        with open(os.path.join(site, "index.html"), "w") as f:
            f.write(PAGE.replace("@N@", str(N)))
        server = Server(site)
        browser = Browser(tmp)
        url = "http://127.0.0.1:%d/" % server.port
        t0, t0_ms = time.monotonic(), time.time() * 1000
        browser.call("Page.navigate", url=url)
        st = browser.wait("the page's run", lambda: (browser.text("status") or "running") != "running"
                          and browser.text("status"), RUN_S)
        print("the page ran in %.1f s" % (time.monotonic() - t0))
        check("the page loads the module and makes its IDs", st == "done", st)
        for row in browser.eval("[...document.querySelectorAll('#summary tr')]"
                                ".map(r => r.innerText)") or []:
            print("  " + row.replace("\t", "  "))
        now_ms = time.time() * 1000
        for kind in ("ulid", "uuid7", "snowflake"):
            text = browser.eval("window.ids && window.ids[%s]" % json.dumps(kind)) or ""
            check_ids(kind, text.split("\n") if text else [], t0_ms, now_ms)

        a = json.loads(browser.text("async") or "{}")
        print("nextBatchAsync: " + json.dumps(a))
        check("nextBatchAsync(400) at 4 IDs a ms: increasing, the event loop turned meanwhile",
              a.get("n") == 400 and a.get("increasing") and a.get("turns", 0) > 0, a)
        check("nextBatchAsync(400): resolved when its 100 ticks had come (not before, not 1 s late)",
              99 <= a.get("ms", 0) < 1000, a)
        decoded = json.loads(browser.text("decoded") or "{}")
        sf = decoded.get("snowflake", {})
        check("decode: a Snowflake ID's fields", sf.get("kind") == "snowflake" and
              sf.get("fields", {}).get("datacenter") == 1 and sf.get("fields", {}).get("worker") == 2,
              sf)
        want_ulid = {"id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "kind": "ulid", "unix_ms": 1469922850259,
                     "time": "2016-07-30T23:54:10.259Z",
                     "uuid": "01563e3a-b5d3-d676-4c61-efb99302bd5b"}
        check("decode: a ULID as `idgen decode --json`", decoded.get("ulid") == want_ulid,
              decoded.get("ulid"))
        if idgen:
            cli = json.loads(subprocess.run([idgen, "decode", "--json", sf.get("id", "0")],
                                            capture_output=True, text=True, timeout=120).stdout
                             or "{}")
            check("decode: the same object as `idgen decode --json`", cli == sf, (cli, sf))
        check("ulidToUuid, uuidToUlid: the known pair",
              decoded.get("ulidToUuid") == "01563e3a-b5d3-d676-4c61-efb99302bd5b" and
              decoded.get("uuidToUlid") == "01ARZ3NDEKTSV4RRFFQ69G5FAV", decoded)

        errors = json.loads(browser.text("errors") or "{}")
        print("errors thrown: " + json.dumps(errors))
        codes = {"decode_27": "EPARSE", "decode_2_64": "EPARSE", "ulidToUuid_27": "EPARSE",
                 "layout": "ELAYOUT", "registry": "EINVAL", "node_range": "ERANGE",
                 "closed": "EINVAL"}
        for name, code in codes.items():
            e = errors.get(name) or {}
            check("error %s: thrown with code %s" % (name, code),
                  e.get("code") == code and e.get("message"), e)
        if idgen:
            for name, args in (("decode_27", ["decode", "01ARZ3NDEKTSV4RRFFQ69G5FAVX"]),
                               ("decode_2_64", ["decode", "18446744073709551616"])):
                want = cli_message(idgen, args)
                got = (errors.get(name) or {}).get("message")
                check("error %s: the message `idgen %s` prints" % (name, " ".join(args)),
                      got == want, (got, want))
            want = cli_message(idgen, ["snowflake", "--layout", "time:41,worker:30"])
            got = (errors.get("layout") or {}).get("message") or "?"
            check("error layout: the message `idgen snowflake --layout` ends with",
                  want.endswith(got), (got, want))

        check("no exception in the page", not browser.console_errors, browser.console_errors)
        foreign = [u for u in browser.requests if not u.startswith(url)]
        check("every request went to the test's server", not foreign, foreign)
        check("the page fetched the module and its code",
              "/idgen.wasm" in server.paths and "/browser.mjs" in server.paths, server.paths)

        os.makedirs(out, exist_ok=True)
        browser.screenshot(os.path.join(out, "wasm-browser.png"))  # an artifact: prints, never fails
        check_example(browser, tmp, browser_dir)
    finally:
        if browser:
            browser.close()
        if server:
            server.close()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: wasm_browser_test.py BROWSERDIR OUTDIR [IDGEN]")
    browser_dir, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    idgen = os.path.abspath(sys.argv[3]) if len(sys.argv) == 4 else None
    if CHROMIUM is None or websocket is None:
        print("SKIP: the browser test needs Debian's chromium and python3-websocket "
              "(scripts/install-deps.sh installs both)")
        sys.exit(77)
    run(browser_dir, out, idgen)
    finish()


if __name__ == "__main__":
    main()
