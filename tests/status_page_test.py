#!/usr/bin/python3
"""The daemon's status page (GET /) in a real browser: headless Chromium,
driven over the DevTools protocol (python3-websocket).

  status_page_test.py IDGEN OUTDIR

1. A daemon under libfaketime (its clock can be stepped) serves IDs to a
   client thread; Chromium loads http://ADDR/ and the test waits for the
   live numbers to appear and change (IDs/s above 0, the update count and
   the ID totals growing), with the banner green; every request the page
   made went to the daemon (self-contained: no CDN, font or script from
   elsewhere).  Screenshot: OUTDIR/status-page.png.
2. The wall clock steps back 10 s: the page turns red and shows the
   daemon's reason ("clock: the wall clock is ... ms behind"); when the
   clock returns, green again.  Screenshot: OUTDIR/status-page-clock.png.
3. A daemon on a postgres:// registry (a throwaway PostgreSQL,
   tests/pg_server.sh) whose server stops: the lease runs out and the page
   shows "lease lost: ..." in red.  Screenshot: OUTDIR/status-page-lease.png.
4. Requests that wait for their tick (4 IDs a second, a client asking for
   the next second's all the time): the clock card shows them waiting and
   the oldest wait, the banner green; with the bound lowered
   (IDGEN_TEST_WAIT_BOUND_MS) and two such clients, /ready and the page
   turn red naming the wait.
   Screenshot: OUTDIR/status-page-waiting.png.
5. A daemon whose audit log is on a 64 KiB tmpfs (root: the test mounts
   it) that fills: the banner turns amber ("Serving IDs, but: degraded:
   audit log: ... No space left on device"), the audit card says failing;
   grown, green again.  Screenshot: OUTDIR/status-page-audit.png.

The screenshots are artifacts: one that does not come in time (SHOT_S) is
said ("screenshot not taken: ...") and changes no result.

Exits 77 (skipped) with a message when Chromium or python3-websocket is
missing; prints "N passed, N failed" and exits 1 on any failure.
"""
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.request

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    import websocket  # python3-websocket (websocket-client)
except ImportError:
    websocket = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
import components  # noqa: E402  tests/components.py: the daemon, PostgreSQL
from checks import finish  # noqa: E402

FAKETIME = components.FAKETIME


def check(what, ok, detail=""):
    return checks.report(what, ok, detail, limit=800)


def start_daemon(idgen, tmp, name, args, env=None):
    """`idgen serve` on a free loopback port (tests/components.py), HTTP
    only; RuntimeError if it does not listen within 60 s (a start takes
    milliseconds; the rest is for a busy machine)."""
    d = components.Daemon(idgen, tmp, name, args, env=env, wait=60)
    if d.port is None:
        d.kill()
        raise RuntimeError("daemon did not serve: " + d.log())
    return d


# How long a DevTools call may take: it waits for the page's main thread,
# which the page's script and layout hold for a while (a busy machine makes
# that many seconds: 200 s once for 300,000 IDs laid out in textareas).
# Reached only when the browser is stuck.
DEVTOOLS_S = 120
# A screenshot is an artifact, not a check: it is taken when it comes within
# SHOT_S (a second or two on a quiet machine, 7 s at a load of 17, over 90 s
# for a page slow to lay out), and a browser spends at most SHOTS_S on all of
# its screenshots, so that the pictures never cost a test its time limit.
# One not taken is said ("screenshot not taken: ...") and changes no result.
SHOT_S = 90
SHOTS_S = 150
# Waits for what the page or the daemon will do (the page's first update, a
# banner turning red after a fault): generous, so that only a page that
# never does it fails, however busy the machine.
PAGE_S = 60


class Browser:
    """Headless Chromium and one page, spoken to over the DevTools protocol."""

    def __init__(self, tmp):
        self.profile = os.path.join(tmp, "chromium-profile")
        os.mkdir(self.profile)
        self.p = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--user-data-dir=" + self.profile,
             "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1280,1000",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "chromium.log"), "w"),
            # its profile is its home too: no ~/.pki or ~/.cache in the caller's
            env=dict(os.environ, HOME=self.profile, XDG_CONFIG_HOME=self.profile,
                     XDG_CACHE_HOME=self.profile))
        # DevToolsActivePort holds the port and the browser's path, one a
        # line: read it once both are there (not half written).
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + DEVTOOLS_S
        while True:
            try:
                with open(port_file) as f:
                    lines = f.read().split("\n")
                if len(lines) >= 2 and lines[0].strip().isdigit():
                    port = int(lines[0])
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.p.poll() is not None:
                raise RuntimeError("chromium did not start its DevTools endpoint within %d s"
                                   % DEVTOOLS_S)
            time.sleep(0.1)
        targets = json.load(urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                                   timeout=DEVTOOLS_S))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=DEVTOOLS_S,
                                              suppress_origin=True)
        self.next_id = 0
        self.requests = []
        self.console_errors = []
        self.shots_left = SHOTS_S
        self.call("Network.enable")
        self.call("Runtime.enable")
        self.call("Page.enable")

    def _event(self, m):
        if m.get("method") == "Network.requestWillBeSent":
            self.requests.append(m["params"]["request"]["url"])
        elif m.get("method") == "Runtime.exceptionThrown":
            self.console_errors.append(m["params"]["exceptionDetails"].get("text", ""))

    def call(self, method, **params):
        """The result of one DevTools call (within DEVTOOLS_S)."""
        return self.call_within(DEVTOOLS_S, method, **params)

    def call_within(self, seconds, method, **params):
        """The result of one DevTools call; websocket.WebSocketTimeoutException
        if it did not come within `seconds` (events meanwhile do not extend
        it).  A reply that comes later is passed over by the next call."""
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + seconds
        late = websocket.WebSocketTimeoutException("%s: no reply within %g s" % (method, seconds))
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise late
                self.ws.settimeout(left)
                try:
                    m = json.loads(self.ws.recv())
                except websocket.WebSocketTimeoutException:
                    raise late from None
                if m.get("id") == mid:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m.get("result", {})
                self._event(m)
        finally:
            self.ws.settimeout(DEVTOOLS_S)

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r.get("result", {}).get("value")

    def text(self, element_id):
        return self.eval("(document.getElementById(%s)||{}).textContent" % json.dumps(element_id))

    def wait(self, what, pred, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            time.sleep(0.2)
        return None

    def screenshot(self, path):
        """Saves the whole page as a PNG at `path` if the picture comes in
        time (see SHOT_S); prints where it is, or why it was not taken.
        Whether it was taken; never raises and never fails a check."""
        if self.shots_left < 1:
            print("screenshot not taken: %s (the browser's %d s for screenshots are used up)"
                  % (path, SHOTS_S), flush=True)
            return False
        t0 = time.monotonic()
        try:
            r = self.call_within(min(SHOT_S, self.shots_left), "Page.captureScreenshot",
                                 format="png", captureBeyondViewport=True)
            with open(path, "wb") as f:
                f.write(base64.b64decode(r["data"]))
        except Exception as e:  # noqa: BLE001  an artifact: whatever went wrong, say it and go on
            print("screenshot not taken: %s (%s: %s, after %.1f s)"
                  % (path, type(e).__name__, e, time.monotonic() - t0), flush=True)
            return False
        finally:
            self.shots_left -= time.monotonic() - t0
        print("screenshot: %s (%d bytes, %.1f s)" % (path, os.path.getsize(path),
                                                     time.monotonic() - t0), flush=True)
        return True

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
        self.p.terminate()
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def load(browser, d):
    browser.call("Page.navigate", url="http://127.0.0.1:%d/" % d.port)
    return browser.wait("first update", lambda: (browser.text("updates") or "0") not in ("0", ""), PAGE_S)


def number(text):
    """'1,234' or '1.50 M' from the page, as a float (None if no number)."""
    m = re.match(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(M?)", text or "")
    if not m:
        return None
    return float(m.group(1).replace(",", "")) * (1e6 if m.group(2) else 1)


def client(d, stop):
    """Makes IDs while the page watches: Snowflake IDs for two agents, ULIDs."""
    paths = ["/id?agent=billing", "/id?count=5&agent=orders", "/ulid"]
    i = 0
    while not stop.is_set():
        try:
            d.get(paths[i % 3])
        except OSError:
            pass
        i += 1
        time.sleep(0.005)


def live_phase(idgen, tmp, out, browser):
    clock_file = os.path.join(tmp, "faketime")
    env = components.faketime_env(clock_file, "+0")
    d = start_daemon(idgen, tmp, "live", ["--registry", "file:" + os.path.join(tmp, "reg"),
                                          "--node", "datacenter=3", "--max-wait-ms", "0"], env)
    for i in range(25):  # more agents than the page lists: the busiest 20, then a count
        d.get("/id?agent=bulk%d" % i)
    stop = threading.Event()
    t = threading.Thread(target=client, args=(d, stop), daemon=True)
    t.start()
    try:
        check("the page loads and its script updates it", load(browser, d))
        first = browser.wait("IDs/s above 0",
                             lambda: (number(browser.text("ids-rate")) or 0) > 0 and
                             (browser.text("ids-rate"), browser.text("updates"),
                              browser.text("ids-table")), PAGE_S)
        check("live numbers appear: IDs per second above 0", first, browser.text("ids-rate"))
        changed = first and browser.wait(
            "numbers change",
            lambda: int(browser.text("updates")) >= int(first[1]) + 2 and
            browser.text("ids-table") != first[2], PAGE_S)
        check("the numbers change from one second to the next (updates %s -> %s)"
              % (first and first[1], browser.text("updates")), changed)
        table = browser.text("ids-table") or ""
        check("IDs/s by kind and agent: snowflake for billing and orders, ulid",
              "snowflake · billing" in table and "snowflake · orders" in table and
              "ulid · no agent" in table, table)
        check("28 kinds and agents: the busiest 20 listed, then 'and 8 more'",
              table.count("/s ·") == 20 and "and 8 more kinds and agents" in table, table)
        check("banner green: OK", browser.eval("document.getElementById('banner').className") == "ok",
              browser.text("banner"))
        check("the lease: held, worker field shown", (browser.text("lease-state") or "").startswith("held · worker"),
              browser.text("lease-state"))
        check("node values shown", "datacenter=3" in (browser.text("node") or ""), browser.text("node"))
        check("mark ahead of the clock shown",
              re.match(r"^\d+(\.\d+)? (ms|s)$", browser.text("mark-ahead") or ""), browser.text("mark-ahead"))
        check("p99 latency shown", (browser.text("p99") or "").startswith("≤"), browser.text("p99"))
        check("the layout's end and days left (twitter: 2080)",
              (browser.text("layout-end") or "").startswith("2080-") and
              (number(browser.text("days-left")) or 0) > 19000,
              (browser.text("layout-end"), browser.text("days-left")))
        check("connections shown", re.match(r"^\d+ \(http \d+", browser.text("conns") or ""),
              browser.text("conns"))
        browser.screenshot(os.path.join(out, "status-page.png"))
        outside = [u for u in browser.requests if not u.startswith("http://127.0.0.1:%d/" % d.port)]
        check("the page asked only its daemon (no CDN, font or script from elsewhere)", not outside,
              outside)
        check("no script errors on the page", not browser.console_errors, browser.console_errors)

        # The clock steps back 10 s: requests are refused (bounded), and the page says why.
        with open(clock_file, "w") as f:
            f.write("-10s\n")
        red = browser.wait("red", lambda: browser.eval(
            "document.getElementById('banner').className") == "bad" and
            "clock: the wall clock is" in (browser.text("banner") or ""), PAGE_S)
        check("clock stepped back: banner red with the daemon's reason", red, browser.text("banner"))
        check("clock card red, naming the wait",
              browser.eval("document.getElementById('card-clock').className") == "bad" and
              re.search(r"\d+ ms behind the generator", browser.text("clock-why") or ""),
              browser.text("clock-why"))
        check("refusals counted and shown red",
              browser.eval("document.getElementById('refusals').className") == "bad-text" and
              (number(browser.text("refusals")) or 0) > 0, browser.text("refusals"))
        browser.screenshot(os.path.join(out, "status-page-clock.png"))
        with open(clock_file, "w") as f:
            f.write("+0\n")
        green = browser.wait("green", lambda: browser.eval(
            "document.getElementById('banner').className") == "ok", PAGE_S)
        check("clock back: banner green again", green, browser.text("banner"))
    finally:
        stop.set()
        t.join()
        d.stop()


def waiting_client(d, stop):
    """Asks for a second's four IDs again and again: each request waits for
    the next second, so one is nearly always waiting."""
    while not stop.is_set():
        try:
            d.get("/id?count=4")
        except OSError:
            time.sleep(0.05)


def waiting_phase(idgen, tmp, out, browser):
    slow = ["--layout", "time:41@1s,worker:10,sequence:2,epoch=1288834974000", "--registry",
            "static", "--node", "worker=5", "--max-borrow-ms", "0", "--max-wait-ms", "2000"]
    for overdue in (False, True):
        d = start_daemon(idgen, tmp, "waiting-%d" % overdue, slow,
                         {"IDGEN_TEST_WAIT_BOUND_MS": "0"} if overdue else None)
        stop = threading.Event()
        # Past the bound, two clients: one of them has always waited for
        # most of a second (with one, each wait starts anew at the second's
        # turn, and a page that fetches early in every second sees none).
        ts = [threading.Thread(target=waiting_client, args=(d, stop), daemon=True)
              for _ in range(2 if overdue else 1)]
        for t in ts:
            t.start()
        try:
            check("waiting phase%s: the page loads" % (" (past the bound)" if overdue else ""),
                  load(browser, d))
            if not overdue:
                seen = browser.wait("a waiting request", lambda: browser.text("waiting") == "1" and
                                    re.match(r"^\d+ ms \(bound 3000 ms\)$", browser.text("oldest-wait") or "")
                                    and browser.text("oldest-wait"), PAGE_S)
                check("requests waiting for their tick: the clock card shows 1 waiting and the "
                      "oldest wait against its bound", seen, (browser.text("waiting"), browser.text("oldest-wait")))
                check("... and the banner stays green (waiting for a tick is no fault)",
                      browser.eval("document.getElementById('banner').className") == "ok",
                      browser.text("banner"))
                browser.screenshot(os.path.join(out, "status-page-waiting.png"))
            else:
                said = []

                def daemon_says():
                    said.append(d.get("/ready"))
                    return said[-1][0] == 503 and said[-1][1].startswith("waiting: ")
                check("a request waiting past its bound: /ready says so",
                      browser.wait("/ready 503", daemon_says, PAGE_S), said[-3:])
                red = browser.wait("overdue", lambda: browser.eval(
                    "document.getElementById('banner').className") == "bad" and
                    "waiting: a request has waited" in (browser.text("banner") or ""), PAGE_S)
                check("a request waiting past its bound: banner red, naming the wait", red,
                      (browser.text("banner"), browser.text("updates"), d.get("/ready")))
                check("... and the clock card red with the same reason",
                      browser.eval("document.getElementById('card-clock').className") == "bad" and
                      "longer than its bound" in (browser.text("clock-why") or ""),
                      browser.text("clock-why"))
        finally:
            stop.set()
            d.stop()
            for t in ts:
                t.join()


def lease_phase(idgen, tmp, out, browser):
    try:
        pg = components.Postgres(os.path.join(tmp, "pg"))
    except RuntimeError as e:
        check("a throwaway PostgreSQL starts (tests/pg_server.sh)", False, str(e))
        return
    d = None
    try:
        d = start_daemon(idgen, tmp, "lease", ["--registry", pg.uri, "--lease-ttl-ms", "2000",
                                               "--node", "datacenter=4"])
        check("postgres:// daemon: page green", load(browser, d) and browser.wait(
            "green", lambda: browser.eval("document.getElementById('banner').className") == "ok", PAGE_S),
            browser.text("banner"))
        pg.ctl("pause")
        red = browser.wait("lease lost", lambda: "lease lost" in (browser.text("banner") or ""), PAGE_S)
        check("registry stopped: banner red, 'lease lost' and why", red and browser.eval(
            "document.getElementById('banner').className") == "bad", browser.text("banner"))
        check("lease card red with the reason (not renewed within its TTL)",
              browser.eval("document.getElementById('card-lease').className") == "bad" and
              "not renewed within its TTL" in (browser.text("lease-why") or ""),
              browser.text("lease-why"))
        check("lease state shown red", browser.eval(
            "document.getElementById('lease-state').className") == "bad-text",
            browser.text("lease-state"))
        browser.screenshot(os.path.join(out, "status-page-lease.png"))
    finally:
        if d:
            d.stop()
        pg.stop()


def audit_phase(idgen, tmp, out, browser):
    mnt = os.path.join(tmp, "audit-fs")
    os.mkdir(mnt)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "idgen-status-audit", mnt],
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        print("SKIP: the audit log phase (cannot mount a tmpfs: %s)" % r.stderr.strip())
        return
    d = None
    try:
        d = start_daemon(idgen, tmp, "audit", ["--registry", "static", "--node", "datacenter=5",
                                               "--audit-log", os.path.join(mnt, "audit.log")])
        check("audit log: page green, the audit card ok", load(browser, d) and browser.wait(
            "green", lambda: browser.eval("document.getElementById('banner').className") == "ok"
            and browser.text("audit-state") == "ok", PAGE_S), browser.text("banner"))
        for _ in range(1500):  # about 920 lines fill 64 KiB
            d.get("/id")
        amber = browser.wait("amber", lambda: browser.eval(
            "document.getElementById('banner').className") == "warn" and
            "degraded: audit log" in (browser.text("banner") or ""), PAGE_S)
        check("audit log's disk full: banner amber, IDs served, the daemon's reason",
              amber and "No space left on device" in (browser.text("banner") or ""),
              browser.text("banner"))
        check("audit card: failing, with the reason; lines waiting shown",
              browser.text("audit-state") == "failing" and
              browser.eval("document.getElementById('card-audit').className") == "bad" and
              "No space left on device" in (browser.text("audit-why") or "") and
              (number(browser.text("audit-queued")) or 0) > 0,
              (browser.text("audit-state"), browser.text("audit-why"), browser.text("audit-queued")))
        browser.screenshot(os.path.join(out, "status-page-audit.png"))
        subprocess.run(["mount", "-o", "remount,size=16m", mnt], capture_output=True, timeout=30)
        green = browser.wait("green", lambda: browser.eval(
            "document.getElementById('banner').className") == "ok" and
            browser.text("audit-state") == "ok", PAGE_S)
        check("audit log's disk grown: what waited is written, green again", green,
              (browser.text("banner"), browser.text("audit-state")))
    finally:
        if d:
            d.stop()
        if subprocess.run(["umount", mnt], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", mnt], capture_output=True)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: status_page_test.py IDGEN OUTDIR")
    idgen, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if CHROMIUM is None or websocket is None:
        print("SKIP: the browser test needs Debian's chromium and python3-websocket "
              "(scripts/install-deps.sh installs both)")
        sys.exit(77)
    if not os.path.exists(FAKETIME):
        check("libfaketime present (%s)" % FAKETIME, False)
    os.makedirs(out, exist_ok=True)
    work = components.Workdir("idgen-status-")  # readable by the throwaway PostgreSQL's user
    tmp = work.path
    browser = None
    try:
        browser = Browser(tmp)
        if os.path.exists(FAKETIME):
            live_phase(idgen, tmp, out, browser)
        waiting_phase(idgen, tmp, out, browser)
        if os.geteuid() == 0 and os.path.exists("/usr/lib/postgresql/15/bin/initdb"):
            lease_phase(idgen, tmp, out, browser)
        else:
            print("SKIP: the lease-lost phase (needs root and PostgreSQL 15)")
        if os.geteuid() == 0:
            audit_phase(idgen, tmp, out, browser)
        else:
            print("SKIP: the audit log phase (needs root to mount a tmpfs)")
    finally:
        if browser:
            browser.close()
        work.remove()
    finish()


if __name__ == "__main__":
    main()
