#!/usr/bin/python3
"""Pages that lease their worker value from a daemon: the WebAssembly build's
`Snowflake.open({registry: 'idgen://…'})` in headless Chromium, against a real
`idgen serve --leases` on a file: registry (docs/SERVE.md "Leases for
clients", SPEC §12).

  browser_lease_test.py BROWSERDIR IDGEN

BROWSERDIR holds browser.mjs, lib/layout.js, lib/wasm.js and idgen.wasm (build/js/browser).
The example page js/examples/snowflake.html is served from a checkout-like
tree on one free loopback port; the daemon listens on another and lets that
origin call it (--lease-cors-origins).  Then:

- two tabs of the example page, `?registry=idgen://127.0.0.1:PORT&n=100000`,
  each lease a tuple (datacenter 1, the worker value the registry lends)
  and make 100,000 IDs: both report theirs distinct and increasing, their
  worker values differ, `idgen registry list` shows both leases held by
  "browser:… via …", and the 200,000 IDs read back are distinct;
- a tab frozen (Page.setWebLifecycleState frozen: its timers stop, as in a
  background tab) past its TTL and the quarantine: on resume its next ID is
  refused with ELEASE, and it issues nothing until it opens a new lease,
  which it then gets;
- a closed tab gives its tuple back (the release on close()/pagehide):
  the registry shows it free again without waiting for a TTL.

Exits 77 (skipped) when Chromium or python3-websocket is missing; prints
"N passed, N failed" and exits 1 on any failure.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
from checks import finish, report as check  # noqa: E402
from components import Daemon, stop_all  # noqa: E402
from status_page_test import CHROMIUM, PAGE_S, Browser, websocket  # noqa: E402
from wasm_browser_test import Server  # noqa: E402

N = 100000
TTL_MS = 1500  # the frozen tab's lease: short, so the test waits seconds
RUN_S = 120


def registry_rows(idgen, reg):
    """The tuples `idgen registry list --json` shows in the file: registry
    `reg` (one object a line; the spaces' lines left out)."""
    r = subprocess.run([idgen, "registry", "list", "--json", "--registry", "file:" + reg],
                       capture_output=True, text=True, timeout=60)
    rows = []
    for line in r.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("kind") != "space":
            rows.append(o)
    return rows


def held_by_browsers(idgen, reg):
    """The node tuples held in `reg` for pages (holder "browser:… via …")."""
    return sorted(r.get("node", "") for r in registry_rows(idgen, reg)
                  if r.get("state") == "held" and str(r.get("holder", "")).startswith("browser:"))


def aeval(page, expr):
    """The value of `expr` in the page, a promise awaited."""
    r = page.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
    return r.get("result", {}).get("value")


class Tab:
    """A second page of the same browser (Target.createTarget), spoken to
    over its own DevTools connection with the first page's methods."""

    def __init__(self, browser, url):
        self.b = browser
        tid = browser.call("Target.createTarget", url="about:blank")["targetId"]
        with open(os.path.join(browser.profile, "DevToolsActivePort")) as f:
            port = int(f.readline())
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                                   timeout=30))
        t = next(t for t in targets if t["id"] == tid)
        self.page = Browser.__new__(Browser)
        self.page.ws = websocket.create_connection(t["webSocketDebuggerUrl"], timeout=30,
                                                   suppress_origin=True)
        self.page.next_id = 0
        self.page.requests, self.page.console_errors = [], []
        self.page.shots_left = 0
        self.page.call("Runtime.enable")
        self.page.call("Page.enable")
        self.page.call("Page.navigate", url=url)


def page_report(page):
    """The example page's report once it is written, or ""."""
    return page.wait("the page's report", lambda: (page.text("out") or "working…") != "working…"
                     and page.text("out"), RUN_S) or ""


def run(browser_dir, idgen):
    tmp = tempfile.mkdtemp(prefix="idgen-browser-lease-")
    server = browser = None
    try:
        tree = os.path.join(tmp, "tree")
        os.makedirs(os.path.join(tree, "build", "js"))
        src_js = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "js")
        os.symlink(src_js, os.path.join(tree, "js"))
        os.symlink(browser_dir, os.path.join(tree, "build", "js", "browser"))
        server = Server(tree)
        origin = "http://127.0.0.1:%d" % server.port
        reg = os.path.join(tmp, "registry")
        # The daemon's own generator on datacenter 0 (its default), the
        # pages on datacenter 1: one ID space, one layout, apart by tuple.
        d = Daemon(idgen, tmp, "daemon",
                   ["--leases", "--lease-cors-origins", origin, "--registry", "file:" + reg])
        if not check("the daemon starts with --leases", d.http is not None, d.log()[-800:]):
            return
        registry = "idgen://127.0.0.1:%d" % d.http
        page = "%s/js/examples/snowflake.html?registry=%s" % (origin, registry)
        browser = Browser(tmp)

        # Two tabs, 100,000 IDs each.
        browser.call("Page.navigate", url=page + "&n=%d" % N)
        second = Tab(browser, page + "&n=%d" % N).page
        reports = [page_report(browser), page_report(second)]
        ids = []
        workers = []
        for i, (p, text) in enumerate(zip((browser, second), reports)):
            print("tab %d reports:\n  %s" % (i + 1, text.replace("\n", "\n  ")))
            lines = text.split("\n")
            check("tab %d: %d IDs, distinct, increasing" % (i + 1, N),
                  lines[0] == "%d IDs, %d distinct, increasing: true" % (N, N), lines[0])
            lease = json.loads(lines[-1][len("lease: "):]) if lines[-1].startswith("lease: ") \
                else {}
            workers.append(lease.get("worker"))
            check("tab %d: its lease is the daemon's (held for browser:…_via_ the daemon)" % (i + 1),
                  "_via_" in str(lease.get("holder", "")) and
                  str(lease.get("registry", "")).startswith("idgen://"), lease)
            got = (p.eval("window.ids") or "").split("\n")
            ids.extend(int(x) for x in got if x.isdigit())
        check("the two tabs hold distinct worker values", None not in workers and
              len(set(workers)) == 2, workers)
        check("every ID of both tabs read back (%d)" % (2 * N), len(ids) == 2 * N, len(ids))
        check("0 duplicates across the two tabs", len(set(ids)) == len(ids),
              len(ids) - len(set(ids)))
        nodes = {((x >> 17) & 31, (x >> 12) & 31) for x in ids}
        check("each ID carries datacenter 1 and its tab's worker",
              nodes == {(1, w) for w in workers if w is not None}, nodes)
        held = held_by_browsers(idgen, reg)
        check("registry list: both pages' tuples held by browser:… via the daemon",
              len(held) == 2, held)

        # The second tab closes its generator: the tuple is free at once.
        aeval(second, "window.generator.close()")
        left = browser.wait("the release in the registry",
                            lambda: len(held_by_browsers(idgen, reg)) == 1, 30)
        check("a closed generator gives its tuple back at once (no TTL waited)", left,
              held_by_browsers(idgen, reg))

        # The first tab frozen past its TTL and the quarantine.
        browser.eval("window.g2 = null; window.tryNext = () => { try { return String("
                     "window.g2 ? window.g2.next() : window.generator.next()); } catch (e) "
                     "{ return 'error ' + e.code; } }")
        aeval(browser, "window.generator.close()")
        opened = aeval(browser, 
            "import('/js/browser.mjs').then(m => m.Snowflake.open({layout: 'twitter', "
            "node: 'datacenter=1', registry: %s, ttlMs: %d})).then(g => { window.generator = g; "
            "return 'ok'; }, e => 'error ' + e.code + ' ' + e.message)"
            % (json.dumps(registry), TTL_MS))
        before = browser.eval("window.tryNext()")
        check("a lease with a %d ms TTL issues IDs" % TTL_MS, str(before).isdigit(),
              (opened, before))
        check("its tuple is held before the freeze", held_by_browsers(idgen, reg),
              held_by_browsers(idgen, reg))
        browser.call("Page.setWebLifecycleState", state="frozen")
        # TTL + quarantine (TTL + lease_max_skew_ms 1000) and some: the
        # daemon has released the tuple by then
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and held_by_browsers(idgen, reg):
            time.sleep(0.2)
        check("while the tab is frozen its lease expires and the tuple is freed",
              not held_by_browsers(idgen, reg), held_by_browsers(idgen, reg))
        browser.call("Page.setWebLifecycleState", state="active")
        after = browser.eval("window.tryNext()")
        check("on resume its next ID is refused (ELEASE), nothing issued", after == "error ELEASE",
              after)
        again = browser.eval("window.tryNext()")
        check("and the next one too, until it has a new lease", again == "error ELEASE", again)
        reopened = aeval(browser, 
            "import('/js/browser.mjs').then(m => m.Snowflake.open({layout: 'twitter', "
            "node: 'datacenter=1', registry: %s})).then(g => { window.g2 = g; "
            "return window.tryNext(); }, e => 'error ' + e.code)" % json.dumps(registry))
        check("a new lease issues again, above the frozen one's IDs",
              str(reopened).isdigit() and str(before).isdigit() and int(reopened) > int(before),
              (before, reopened))
    finally:
        if browser is not None:
            browser.close()
        if server is not None:
            server.close()
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: browser_lease_test.py BROWSERDIR IDGEN")
    if CHROMIUM is None or websocket is None:
        print("skipped: headless Chromium or python3-websocket not found")
        sys.exit(77)
    run(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    finish()
