#!/usr/bin/python3
"""screenshots.py -- docs/status-page.png and docs/status-page-clock.png,
taken from real daemons under load (`make screenshots`).

  scripts/screenshots.py [IDGEN] [--out DIR]

IDGEN is the binary to run (default build/idgen under the repository; this
script builds nothing).  DIR is where the two PNGs go (default docs/ of the
repository); they are written only when both were taken.

Two scenes run side by side, each a daemon of its own (`idgen serve` on
ports the kernel picks, a file: registry in a temporary directory), its own
load and its own headless Chromium, spoken to over the DevTools protocol
(python3-websocket), as tests/status_page_test.py does:

- the load: wrk over HTTP (four kinds of IDs, each for an agent of its own,
  at a rate that rises and falls in a 50 s wave) and a RESP client of this
  script (`ID 50` as the agent `ledger`: a steady trickle with a batch every
  minute), so that the chart of IDs per second has a shape;
- status-page.png: the page once its chart holds the two minutes it keeps
  (120 samples: the page polls /status.json once a second), banner green;
- status-page-clock.png: the same under a daemon whose wall clock
  libfaketime (libfaketimeMT, preloaded; it reads its file again each
  second) steps back 10 s once the chart is full: the page taken while the
  banner is red and the clock card counts refusals, the drop at the
  chart's end.

The page is shot whole (the viewport set to the page's height, 1280 px wide)
and the PNGs are made smaller with optipng (lossless).  Takes about two and
a half minutes.  Every process it started is stopped through the PID it
recorded (its process group: Chromium's helpers too) and the temporary
directory removed, however it ends.  Exits 1 with a message on failure
("screenshots: ..."), 2 on bad usage.

Needs Debian's chromium, python3-websocket, wrk, faketime and optipng
(scripts/install-deps.sh installs them).
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

try:
    import websocket  # python3-websocket (websocket-client)
except ImportError:
    websocket = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1280
SAMPLES = 120  # status.html keeps the last 120 rates (`history`), one a second
STEP_BACK = "-10s"  # docs/SERVE.md's caption says 10 s
START = time.monotonic()


class Failure(Exception):
    """What went wrong, in words for the person who ran the script."""


def say(scene, text):
    print("[%4.0f s] %s: %s" % (time.monotonic() - START, scene, text), flush=True)


# ------------------------------------------------------------ the processes
#
# Each process starts in a process group of its own (Chromium's helpers
# join its group) and is recorded here; stop_all() signals those groups by
# the recorded PIDs and nothing else.

PROCS = []
PROCS_LOCK = threading.Lock()
ABORT = threading.Event()  # one scene failed or the script was interrupted: the other stops waiting


def spawn(argv, log, env=None):
    with open(log, "ab") as out, PROCS_LOCK:
        if ABORT.is_set():
            raise Failure("stopped")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                             env=env, start_new_session=True)
        PROCS.append(p)
    return p


def exited(p):
    """Whether `p` has exited, without reaping it: while it is a zombie its
    PID (and so its group's number) cannot be given to another process."""
    if p.returncode is not None:
        return True
    return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def how_exited(p):
    """'status N' or 'signal N' for a process that exited() (unreaped)."""
    r = os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    if r is None:
        return "status %s" % p.returncode
    return ("status %d" if r.si_code == os.CLD_EXITED else "signal %d") % r.si_status


def stop(p, grace):
    """SIGTERM to p's group, up to `grace` seconds for p to exit, then
    SIGKILL to whatever of the group is left; reaps p."""
    if p.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 0)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait
        while not exited(p) and time.monotonic() < deadline:
            time.sleep(0.05)
    p.wait()


def stop_all():
    """Every recorded process, the last started first (a browser and a load
    before the daemon they talk to).  A daemon drains within 5 s."""
    with PROCS_LOCK:
        procs = PROCS[::-1]
        PROCS.clear()
    for p in procs:
        stop(p, 10)


# ----------------------------------------------------------------- the daemon

LISTEN_RE = re.compile(r"event=listen proto=(\w+) addr=\S*:(\d+)")


class Daemon:
    """`idgen serve` with HTTP and RESP on ports the kernel picks, read back
    from its `event=listen` lines; its log in TMP/NAME.log."""

    def __init__(self, idgen, tmp, name, env_extra=None):
        self.name = name
        self.logpath = os.path.join(tmp, name + ".log")
        # A setting left in the caller's environment must not reach it.
        env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
        env.update(env_extra or {})
        self.p = spawn([idgen, "serve", "--http", "127.0.0.1:0", "--resp", "127.0.0.1:0",
                        "--registry", "file:" + os.path.join(tmp, name + "-registry"),
                        "--node", "datacenter=1"], self.logpath, env)
        deadline = time.monotonic() + 30  # a start takes milliseconds
        while True:
            ports = dict(LISTEN_RE.findall(self.log()))
            if "http" in ports and "resp" in ports:
                self.http, self.resp = int(ports["http"]), int(ports["resp"])
                break
            if exited(self.p):
                raise Failure("%s: the daemon exited (%s) before it listened; its log: %s"
                              % (name, how_exited(self.p), self.log_tail()))
            if time.monotonic() > deadline:
                raise Failure("%s: the daemon did not listen within 30 s; its log: %s"
                              % (name, self.log_tail()))
            time.sleep(0.05)
        say(name, "idgen serve pid %d: http 127.0.0.1:%d, resp 127.0.0.1:%d"
            % (self.p.pid, self.http, self.resp))

    def log(self):
        with open(self.logpath, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def log_tail(self):
        lines = self.log().strip().split("\n")[-8:]
        return "\n  " + "\n  ".join(lines) if lines != [""] else "(empty)"

    def check(self):
        if exited(self.p):
            raise Failure("%s: the daemon exited (%s); its log: %s"
                          % (self.name, how_exited(self.p), self.log_tail()))


# ------------------------------------------------------------------- the load

# wrk: four kinds of IDs in turn, each for an agent, 8 connections whose
# pace (delay(), per connection) follows a wave between LOW and HIGH
# requests a second, PERIOD seconds long.  os.time() ticks in seconds, as
# often as the page samples.
WRK_LUA = """\
local paths = {"/id?agent=checkout&count=20", "/id?agent=billing&count=5",
               "/ulid?agent=sessions&count=10", "/uuid7?agent=uploads&count=4"}
local conns, low, high, period = %d, %d, %d, %d
local i, t0 = 0, os.time()
request = function()
  i = i + 1
  return wrk.format("GET", paths[i %% #paths + 1])
end
delay = function()
  local t = os.time() - t0
  local rate = low + (high - low) * (1 - math.cos(2 * math.pi * t / period)) / 2
  return conns * 1000 / rate
end
"""
WRK_CONNS, WRK_LOW, WRK_HIGH, WRK_PERIOD = 8, 250, 1250, 50


def start_wrk(tmp, name, port):
    script = os.path.join(tmp, name + "-load.lua")
    with open(script, "w") as f:
        f.write(WRK_LUA % (WRK_CONNS, WRK_LOW, WRK_HIGH, WRK_PERIOD))
    # Its own -d is only a backstop: it is stopped with the rest.
    return spawn(["wrk", "-t1", "-c%d" % WRK_CONNS, "-d900s", "--timeout", "5s", "-s", script,
                  "http://127.0.0.1:%d/" % port], os.path.join(tmp, name + "-wrk.log"))


def resp_rate(t):
    """`ID 50` requests a second at t seconds: 40 (2,000 IDs/s), and 160
    (8,000 IDs/s) for a 15 s batch each minute."""
    return 160 if 20 <= t % 60 < 35 else 40


def resp_command(*words):
    return b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w) for w in words)


class RespLoad(threading.Thread):
    """The RESP client: CLIENT SETNAME ledger (the agent counted), then
    `ID 50` at resp_rate(), one request at a time."""

    def __init__(self, name, port):
        super().__init__(name=name + "-resp", daemon=True)
        self.port = port
        self.stop = threading.Event()
        self.error = None

    def run(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
                f = s.makefile("rb")
                s.sendall(resp_command(b"CLIENT", b"SETNAME", b"ledger"))
                if f.readline() != b"+OK\r\n":
                    raise OSError("CLIENT SETNAME was not answered +OK")
                ask = resp_command(b"ID", b"50")
                t0 = due = time.monotonic()
                while not self.stop.is_set():
                    s.sendall(ask)
                    self.reply(f)
                    now = time.monotonic()
                    due = max(due + 1 / resp_rate(now - t0), now - 0.1)  # no catching up in a burst
                    if due > now:
                        time.sleep(due - now)
        except (OSError, ValueError) as e:
            self.error = "RESP client: %s: %s" % (type(e).__name__, e)

    @staticmethod
    def reply(f):
        """Reads one reply: an array of integers (or bulk strings), or an
        error line (IDs refused while the clock is behind)."""
        line = f.readline()
        if not line.endswith(b"\r\n"):
            raise OSError("the connection closed")
        if line[:1] == b"*":
            for _ in range(int(line[1:])):
                e = f.readline()
                if e[:1] == b"$" and int(e[1:]) >= 0:
                    f.readline()
        elif line[:1] not in (b"-", b":", b"+"):
            raise ValueError("unexpected reply %r" % line[:60])


# ---------------------------------------------------------------- the browser

DEVTOOLS_S = 60  # one DevTools call; only a stuck browser takes this long


class Browser:
    """Headless Chromium and one page, spoken to over the DevTools protocol."""

    def __init__(self, tmp, name):
        profile = os.path.join(tmp, name + "-chromium")
        os.mkdir(profile)
        # Its profile is its home too: no ~/.pki or ~/.cache in the caller's.
        env = dict(os.environ, HOME=profile, XDG_CONFIG_HOME=profile,
                   XDG_CACHE_HOME=profile)
        self.p = spawn([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", "--disable-extensions", "--hide-scrollbars",
                        "--user-data-dir=" + profile, "--remote-debugging-port=0",
                        "--remote-allow-origins=*", "--window-size=%d,900" % WIDTH,
                        "about:blank"], os.path.join(tmp, name + "-chromium.log"), env)
        # DevToolsActivePort holds the port, then the browser's path: read
        # it once both lines are there (not half written).
        port_file = os.path.join(profile, "DevToolsActivePort")
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
            if exited(self.p) or time.monotonic() > deadline:
                raise Failure("%s: chromium did not open its DevTools port (its log: %s)"
                              % (name, os.path.join(tmp, name + "-chromium.log")))
            time.sleep(0.1)
        with urllib.request.urlopen("http://127.0.0.1:%d/json/list" % port,
                                    timeout=DEVTOOLS_S) as r:
            page = next(t for t in json.load(r) if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=DEVTOOLS_S,
                                              suppress_origin=True)
        self.next_id = 0
        self.errors = []
        self.call("Runtime.enable")

    def call(self, method, **params):
        """The result of one DevTools call; events that come first are
        looked at for script errors."""
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            m = json.loads(self.ws.recv())
            if m.get("method") == "Runtime.exceptionThrown":
                self.errors.append(m["params"]["exceptionDetails"].get("text", ""))
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise Failure("DevTools %s: %s" % (method, m["error"]))
                return m.get("result", {})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        if "exceptionDetails" in r:
            raise Failure("the page's script threw: %s"
                          % r["exceptionDetails"].get("exception", {}).get("description"))
        return r.get("result", {}).get("value")

    def state(self):
        """What the page shows now, as a dict (empty values while the page
        is not there yet)."""
        return self.eval("""(() => {
          const t = (id) => (document.getElementById(id) || {}).textContent || "";
          const c = (id) => (document.getElementById(id) || {}).className || "";
          const line = document.querySelector("#ids-spark polyline");
          const ys = line ? line.getAttribute("points").trim().split(/\\s+/)
                              .map((p) => parseFloat(p.split(",")[1])) : [];
          return {updates: parseInt(t("updates")) || 0, rate: t("ids-rate"), points: ys.length,
                  spread: ys.length ? Math.max(...ys) - Math.min(...ys) : 0,
                  banner: c("banner"), refusals: c("refusals"),
                  bannerText: ((document.getElementById("banner") || {}).innerText || "")
                                .replace(/\\n+/g, " / "),
                  clockWhy: t("clock-why"), conns: t("conns")};
        })()""")

    def screenshot(self):
        """The whole page as PNG bytes: the viewport set to the page's
        height, so that nothing is cut off and nothing is left below."""
        for _ in range(3):
            height = self.eval("Math.ceil(document.body.getBoundingClientRect().height)")
            self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=height,
                      deviceScaleFactor=1, mobile=False)
            r = self.call("Page.captureScreenshot", format="png",
                          clip={"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1})
            # The page changes once a second (a line more in the banner):
            # taken again if it grew or shrank meanwhile.
            if self.eval("Math.ceil(document.body.getBoundingClientRect().height)") == height:
                return base64.b64decode(r["data"])
        raise Failure("the page's height kept changing while it was shot")


def wait_for(what, pred, seconds, scene, daemon, load):
    """Polls pred() twice a second until it returns something true (that
    value), Failure after `seconds` or when the daemon or the load fails."""
    deadline = time.monotonic() + seconds
    while True:
        if ABORT.is_set():
            raise Failure("stopped")
        daemon.check()
        if load.error:
            raise Failure("%s: %s" % (scene, load.error))
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Failure("%s: %s did not come within %d s" % (scene, what, seconds))
        time.sleep(0.5)


# ----------------------------------------------------------------- the scenes


def fill_chart(scene, browser, daemon, load):
    """Waits until the chart holds SAMPLES rates that are not a flat line."""
    last = [0]

    def full():
        s = browser.state()
        if time.monotonic() - last[0] >= 20:
            last[0] = time.monotonic()
            say(scene, "chart %d/%d samples, %s IDs/s, banner %s"
                % (s["points"], SAMPLES, s["rate"], s["banner"] or "-"))
        return s["points"] >= SAMPLES and s["updates"] >= SAMPLES + 4 and s
    # The page polls once a second: 121 polls fill the chart, and 3 more
    # scroll its first, partial second off; a busy machine takes longer.
    s = wait_for("a full chart", full, SAMPLES * 2 + 60, scene, daemon, load)
    if s["spread"] < 5:  # of the 36 units the chart's line may span
        raise Failure("%s: the chart is flat (%r): the load did not vary the rate" % (scene, s))
    return s


def scene_live(idgen, tmp):
    scene = "status-page"
    d = Daemon(idgen, tmp, scene)
    return run_scene(scene, tmp, d, None)


def scene_clock(idgen, tmp):
    scene = "status-page-clock"
    clock = os.path.join(tmp, scene + ".faketime")
    set_clock(clock, "+0")
    # The file is read again each second, not at every call as with
    # FAKETIME_NO_CACHE (tests/status_page_test.py), whose read per call put
    # milliseconds on the page's p99 latency.
    env = {"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": clock,
           "FAKETIME_CACHE_DURATION": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    d = Daemon(idgen, tmp, scene, env)
    return run_scene(scene, tmp, d, clock)


def set_clock(path, offset):
    with open(path + ".new", "w") as f:
        f.write(offset + "\n")
    os.replace(path + ".new", path)  # whole, for libfaketime reading it at any moment


def run_scene(scene, tmp, d, clock):
    start_wrk(tmp, scene, d.http)
    load = RespLoad(scene, d.resp)
    load.start()
    try:
        b = Browser(tmp, scene)
        b.call("Page.navigate", url="http://127.0.0.1:%d/" % d.http)
        s = fill_chart(scene, b, d, load)
        if clock is None:
            if s["banner"] != "ok" or not re.match(r"\d+ \(http [1-9]\d*, resp [1-9]", s["conns"]):
                raise Failure("%s: expected a green banner and HTTP and RESP clients: %r"
                              % (scene, s))
            png = b.screenshot()
        else:
            png = shoot_step_back(scene, b, d, load, clock)
        if b.errors:
            raise Failure("%s: script errors on the page: %s" % (scene, b.errors))
        s = b.state()
        say(scene, "taken: %s IDs/s, banner: %s" % (s["rate"], s["bannerText"][:100]))
        return png
    finally:
        load.stop.set()
        load.join(15)


def showing(b, pred):
    """For wait_for: the page's state once pred(state) holds."""
    def f():
        s = b.state()
        return pred(s) and s
    return f


def refusing(s):
    return (s["banner"] == "bad" and "clock: the wall clock is" in s["bannerText"]
            and s["refusals"] == "bad-text")


def shoot_step_back(scene, b, d, load, clock):
    """Steps the daemon's wall clock back; shoots the page once it has shown
    the refusals for 3 updates (with max_borrow_ms 1000 and max_wait_ms 100
    it refuses for about 9 s, until the clock is within 1.1 s of the
    generator again).  A picture that missed that window is taken again
    after the clock is put right and stepped back once more."""
    for _ in range(3):
        set_clock(clock, STEP_BACK)
        say(scene, "wall clock stepped back (%s)" % STEP_BACK)
        first = wait_for("the banner turning red", showing(b, refusing), 30, scene, d, load)
        wait_for("3 updates of the red page", lambda: b.state()["updates"] >= first["updates"] + 3,
                 30, scene, d, load)
        png = b.screenshot()
        s = b.state()
        if refusing(s) and s["points"] >= SAMPLES:
            return png
        say(scene, "the page was no longer red when shot (%s); again" % s["bannerText"][:80])
        set_clock(clock, "+0")
        green = wait_for("the banner turning green", showing(b, lambda s: s["banner"] == "ok"),
                         60, scene, d, load)
        # Ten green seconds before the next step back.
        wait_for("10 green updates", lambda: b.state()["updates"] >= green["updates"] + 10,
                 60, scene, d, load)
    raise Failure("%s: no picture of the red page in 3 tries" % scene)


# -------------------------------------------------------------------- the rest


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise Failure("Chromium's screenshot is not a PNG")
    return struct.unpack(">II", data[16:24])


def prerequisites(idgen):
    missing = []
    if CHROMIUM is None:
        missing.append("chromium")
    if websocket is None:
        missing.append("python3-websocket")
    for tool, package in (("wrk", "wrk"), ("optipng", "optipng")):
        if shutil.which(tool) is None:
            missing.append(package)
    if not os.path.exists(FAKETIME):
        missing.append("faketime (%s)" % FAKETIME)
    if missing:
        raise Failure("missing %s (scripts/install-deps.sh installs them)" % ", ".join(missing))
    if not (os.path.isfile(idgen) and os.access(idgen, os.X_OK)):
        raise Failure("no idgen binary at %s (make build; or give its path)" % idgen)
    with open(idgen, "rb") as f:
        data = f.read()
    if b"__asan_init" in data or b"__tsan_init" in data:
        raise Failure("%s is a sanitizer build: libfaketime cannot be preloaded into it" % idgen)


def on_signal(signum, frame):
    raise Failure("interrupted by signal %d" % signum)


def main():
    ap = argparse.ArgumentParser(
        description="Regenerates docs/status-page.png and docs/status-page-clock.png from "
                    "real daemons under load (about 2.5 minutes).")
    ap.add_argument("idgen", nargs="?", default=os.path.join(ROOT, "build", "idgen"),
                    help="the idgen binary (default: build/idgen of this repository)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs"),
                    help="where the PNGs go (default: docs/ of this repository)")
    args = ap.parse_args()
    idgen = os.path.abspath(args.idgen)
    tmp = None
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        prerequisites(idgen)
        if not os.path.isdir(args.out):
            raise Failure("no directory %s" % args.out)
        tmp = tempfile.mkdtemp(prefix="idgen-screenshots-")
        results, errors = {}, []

        def run(name, fn):
            try:
                results[name] = fn(idgen, tmp)
            except Exception as e:  # noqa: BLE001  said below, and the other scene stops
                errors.append(e if isinstance(e, Failure) else
                              Failure("%s: %s: %s" % (name, type(e).__name__, e)))
                ABORT.set()
        threads = [threading.Thread(target=run, args=(n, fn), daemon=True)
                   for n, fn in (("status-page", scene_live), ("status-page-clock", scene_clock))]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # a join with a timeout, so that signals are seen
                t.join(0.5)
        real = [e for e in errors if str(e) != "stopped"]
        if real or errors:
            raise (real or errors)[0]
        stop_all()
        written = []
        for name in ("status-page", "status-page-clock"):
            path = os.path.join(tmp, name + ".png")
            with open(path, "wb") as f:
                f.write(results[name])
            raw = len(results[name])
            r = subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", path],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise Failure("optipng %s: %s" % (path, r.stderr.strip()))
            with open(path, "rb") as f:
                w, h = png_size(f.read(24))
            written.append((name, path, raw, os.path.getsize(path), w, h))
        for name, path, raw, size, w, h in written:
            dest = os.path.join(args.out, name + ".png")
            shutil.copyfile(path, dest + ".new")
            os.replace(dest + ".new", dest)
            print("wrote %s: %dx%d, %d bytes (%d before optipng)" % (dest, w, h, size, raw))
        print("screenshots: done in %.0f s" % (time.monotonic() - START))
        return 0
    except Failure as e:
        ABORT.set()
        print("screenshots: %s" % e, file=sys.stderr)
        return 1
    finally:
        ABORT.set()
        stop_all()
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
