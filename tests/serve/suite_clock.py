#!/usr/bin/env python3
"""The daemon's clock promises at every tick length: increasing and bounded
(include/idgen.h; docs/DESIGN.md section 1, "Waiting"; docs/SERVE.md
"Requests that wait"):

- `@60s` and `@86400s` layouts with max_borrow_ms = max_wait_ms = 0, their
  wall clock stepped back under libfaketime (by 50 s inside a minute, by 12 h
  inside a day): GET /id and RESP ID are refused within 50 ms (before, the
  request was parked for 40 s, or for 6 hours, while /health said ok and no
  counter moved), /ready says why, and once the clock is past the
  generator's tick the IDs go on increasing;
- a used-up minute is not waited out with max_wait_ms = 0: refused at once;
- requests that wait for their tick are shown while they wait: /ready's
  `waiting` line, the gauges idgen_clock_waiting_requests and
  idgen_clock_oldest_wait_seconds, /info's and /status.json's `waiting`,
  RESP INFO's clock_waiting_requests; and /ready is 503 naming the wait
  while one has waited past its bound (the bound lowered for the test with
  IDGEN_TEST_WAIT_BOUND_MS: by the rules no request outwaits it).

Usage: python3 tests/serve/suite_clock.py PATH/TO/idgen  (or: ctest -R serve.clock)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

FAKETIME_MT = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
SLOW = "time:41@1s,worker:10,sequence:2,epoch=1288834974000"  # 4 IDs a second


def sanitized(path):
    with open(path, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def timed(conn, data, reader):
    """Sends on an open connection; (reply or the exception, seconds)."""
    t0 = time.monotonic()
    try:
        conn.send(data)
        r = reader()
    except Exception as e:  # noqa: BLE001
        r = e
    return r, time.monotonic() - t0


def stepped_daemon(name, layout, start):
    """A daemon whose wall clock libfaketime reads from a file (its monotonic
    clock left alone), started at `start` ("YYYY-MM-DD hh:mm:ss", UTC)."""
    clock = os.path.join(TMP, name + ".faketime")
    with open(clock, "w") as f:
        f.write("@%s\n" % start)
    env = {"LD_PRELOAD": FAKETIME_MT, "FAKETIME_TIMESTAMP_FILE": clock, "FAKETIME_NO_CACHE": "1",
           "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": "UTC"}
    d = Daemon(name, ["--max-borrow-ms", "0", "--max-wait-ms", "0"], env_extra=env,
               node_args=["--layout", layout, "--registry", "static", "--node", "worker=5"])
    return d, clock


def set_clock(path, when):
    with open(path + ".new", "w") as f:
        f.write("@%s\n" % when)
    os.replace(path + ".new", path)  # whole, for a reader at any moment


def group_step_back(what, layout, start, back_to, after):
    """The issue's case: the clock steps back inside the generator's tick's
    neighbour; with no borrow and no wait the next requests are refused at
    once, not parked until the clock is back."""
    if sanitized(IDGEN):
        print("skip %s: a sanitizer build cannot have libfaketime preloaded" % what)
        return
    d, clock = stepped_daemon("step-" + what, layout, start)
    h = rc = None
    try:
        h, rc = Conn(d.http, timeout=3), Conn(d.resp, timeout=3)
        h.send(http_req("/id"))
        r0 = h.http()
        first = digits_lines(r0.body)
        check("%s: an ID at %s" % (what, start), r0.status == 200 and first and len(first) == 1,
              repr(r0))
        set_clock(clock, back_to)
        time.sleep(0.05)
        t_all = time.monotonic()
        r, t = timed(h, http_req("/id"), lambda: h.http(timeout=3))
        check("%s: stepped back to %s, GET /id is a 503 within 50 ms (%.1f ms), naming the clock"
              % (what, back_to, t * 1000),
              isinstance(r, HttpResp) and r.status == 503 and r.body.startswith(b"clock: ")
              and r.h("retry-after") and t < 0.05,
              "%r; the machine stood still %.1f s" % (r, stalled_since(t_all)))
        r, t = timed(rc, resp_cmd("ID"), lambda: rc.resp(timeout=3))
        check("%s: RESP ID is -ERR clock within 50 ms (%.1f ms)" % (what, t * 1000),
              isinstance(r, RErr) and r.startswith("ERR clock: ") and t < 0.05,
              "%r; the machine stood still %.1f s" % (r, stalled_since(t_all)))
        r, t = timed(rc, resp_cmd("ID", "3"), lambda: rc.resp(timeout=3))
        check("%s: RESP ID 3 (a batch) too (%.1f ms)" % (what, t * 1000),
              isinstance(r, RErr) and r.startswith("ERR clock: ") and t < 0.05, repr(r))
        r, _ = curl(d.http, "/ready")
        check("%s: /ready is 503 with the clock's reason" % what,
              r and r.status == 503 and r.body.startswith(b"clock: the wall clock is"), r and short(r.body))
        r, _ = curl(d.http, "/health")
        check("%s: /health (alive) stays 200 ok, saying `not ready: clock: ...` (a liveness probe "
              "must not restart it)" % what,
              r and r.status == 200 and r.body.startswith(b"ok\nnot ready: clock: the wall clock is"),
              r and short(r.body))
        m, _ = get_metrics(d)
        check("%s: idgen_clock_refusals_total counts the 3 refusals; nothing waits; idgen_ready 0, "
              "idgen_healthy 1" % what,
              mget(m, "idgen_clock_refusals_total") == 3 and mget(m, "idgen_clock_waiting_requests") == 0
              and mget(m, "idgen_clock_waits_total") == 0 and mget(m, "idgen_ready") == 0
              and mget(m, "idgen_healthy") == 1,
              repr([mget(m, k) for k in ("idgen_clock_refusals_total", "idgen_clock_waiting_requests",
                                          "idgen_clock_waits_total", "idgen_ready", "idgen_healthy")]))
        set_clock(clock, after)
        time.sleep(0.05)
        h.send(http_req("/id"))
        r = h.http()
        ids = digits_lines(r.body) if r.status == 200 else None
        check("%s: at %s (past the generator's tick) IDs again, above the one before" % (what, after),
              ids and first and ids[0] > first[0], repr(r))
        r, _ = curl(d.http, "/ready")
        check("%s: /ready ok again" % what, r and r.status == 200, r and short(r.body))
        m, _ = get_metrics(d)
        check("%s: idgen_ready 1 again" % what, mget(m, "idgen_ready") == 1, repr(mget(m, "idgen_ready")))
    finally:
        for c in (h, rc):
            if c is not None:
                c.close()
        rc_ = d.stop()
        check("%s: SIGTERM exits 0" % what, rc_ == 0, "exit %r" % rc_)


def group_used_up_minute():
    """`@60s` with four IDs a minute and max_wait_ms 0: once the minute's
    four are issued, the next request is refused at once (the rest of a tick
    longer than a second counts against max_wait_ms), not parked until the
    minute ends.  The real clock: if the minute turns between the two
    requests, try again."""
    d = Daemon("minute", ["--max-borrow-ms", "0", "--max-wait-ms", "0"],
               node_args=["--layout", "time:41@60s,worker:10,sequence:2", "--registry", "static",
                          "--node", "worker=5"])
    h = None
    try:
        h = Conn(d.http, timeout=3)
        for _ in range(3):
            h.send(http_req("/id?count=4"))
            r4 = h.http()
            r, t = timed(h, http_req("/id"), lambda: h.http(timeout=3))
            if not (isinstance(r, HttpResp) and r.status == 200):
                break
        check("used-up minute: count=4, then GET /id is a 503 within 50 ms (%.1f ms)" % (t * 1000),
              r4.status == 200 and isinstance(r, HttpResp) and r.status == 503 and t < 0.05,
              "%r %r" % (r4, r))
        m, _ = get_metrics(d)
        check("used-up minute: counted as a refusal; nothing waits",
              mget(m, "idgen_clock_refusals_total") >= 1 and mget(m, "idgen_clock_waiting_requests") == 0,
              repr(mget(m, "idgen_clock_refusals_total")))
    finally:
        if h is not None:
            h.close()
        d.stop()


def waiting_daemon(name, env_extra=None):
    # 4 IDs a second, up to 2 s of waiting: count=8 after the second's four
    # waits for the start of the second after next (1 to 2 s).
    return Daemon(name, ["--max-borrow-ms", "0", "--max-wait-ms", "2000"], env_extra=env_extra,
                  node_args=["--layout", SLOW, "--registry", "static", "--node", "worker=5"])


def park(d):
    """Uses up this second and parks a request for the next two: the open
    connection, and when it was sent."""
    r, _ = curl(d.http, "/id?count=4")
    if not (r and r.status == 200):
        raise AssertionError("count=4: %r" % r)
    c = Conn(d.http, timeout=5)
    c.send(http_req("/id?count=8"))
    return c, time.monotonic()


def group_waiting_shown():
    d = waiting_daemon("waiting")
    c = None
    try:
        c, t0 = park(d)
        time.sleep(0.2)
        r, _ = curl(d.http, "/ready")
        lines = r.body.decode().splitlines() if r else []
        m = re.fullmatch(r"waiting requests=1 oldest_ms=(\d+) bound_ms=3000", lines[1]) if len(lines) > 1 else None
        check("waiting: /ready stays 200 ok and says `waiting requests=1 oldest_ms=N bound_ms=3000`",
              r and r.status == 200 and lines[0] == "ok" and m and 100 <= int(m.group(1)) < 2500,
              r and short(r.body))
        ms, _ = get_metrics(d)
        oldest = mget(ms, "idgen_clock_oldest_wait_seconds")
        check("waiting: idgen_clock_waiting_requests 1, idgen_clock_oldest_wait_seconds above 0.1, "
              "idgen_clock_wait_bound_seconds 3",
              mget(ms, "idgen_clock_waiting_requests") == 1 and oldest is not None and 0.1 <= oldest < 2.5
              and mget(ms, "idgen_clock_wait_bound_seconds") == 3,
              repr([mget(ms, k) for k in ("idgen_clock_waiting_requests", "idgen_clock_oldest_wait_seconds",
                                           "idgen_clock_wait_bound_seconds")]))
        r, _ = curl(d.http, "/info")
        j = json_body(r) if r else None
        w = j.get("waiting") if isinstance(j, dict) else None
        check("waiting: /info's waiting object: requests 1, oldest_ms, bound_ms 3000",
              isinstance(w, dict) and w.get("requests") == 1 and w.get("oldest_ms", 0) >= 100
              and w.get("bound_ms") == 3000, repr(w))
        r, _ = curl(d.http, "/status.json")
        j = json_body(r) if r else None
        check("waiting: /status.json has it too, and health ok",
              isinstance(j, dict) and j.get("waiting", {}).get("requests") == 1
              and j.get("health", {}).get("ok") is True, repr(j and (j.get("waiting"), j.get("health"))))
        rc = Conn(d.resp)
        rc.send(resp_cmd("INFO"))
        info = rc.resp()
        rc.close()
        info = info.decode() if isinstance(info, bytes) else str(info)
        check("waiting: RESP INFO clock_waiting_requests:1, clock_oldest_wait_ms, clock_wait_bound_ms:3000",
              "\r\nclock_waiting_requests:1\r\n" in info and re.search(r"\r\nclock_oldest_wait_ms:\d+\r\n", info)
              and "\r\nclock_wait_bound_ms:3000\r\n" in info, short(info[-300:]))
        r = c.http(timeout=5)
        t = time.monotonic() - t0
        ids = digits_lines(r.body) if r.status == 200 else None
        check("waiting: the parked request is answered with 8 IDs within its bound (%.2f s)" % t,
              ids and len(ids) == 8 and increasing(ids) and t < 3.25, repr(r))
        r, _ = curl(d.http, "/ready")
        ms, _ = get_metrics(d)
        check("waiting: after it, /ready is `ok` alone and the gauges are 0",
              r and r.status == 200 and r.body == b"ok\n" and mget(ms, "idgen_clock_waiting_requests") == 0
              and mget(ms, "idgen_clock_oldest_wait_seconds") == 0, r and short(r.body))
    finally:
        if c is not None:
            c.close()
        rc = d.stop()
        check("waiting daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_waiting_past_bound():
    """A request that has waited longer than its bound makes /ready 503,
    naming it, and only while it waits."""
    d = waiting_daemon("overdue", env_extra={"IDGEN_TEST_WAIT_BOUND_MS": "0"})
    c = None
    try:
        c, t0 = park(d)
        time.sleep(0.5)  # past the bound (0 here) and the margin (250 ms)
        r, _ = curl(d.http, "/ready")
        check("waiting past its bound: /ready is 503 naming the wait",
              r and r.status == 503 and re.match(rb"waiting: a request has waited \d+ ms, longer than its "
                                                 rb"bound of 0 ms", r.body), r and short(r.body))
        r, _ = curl(d.http, "/status.json")
        j = json_body(r) if r else None
        check("waiting past its bound: /status.json's health says so",
              isinstance(j, dict) and j["health"]["ok"] is False and j["health"]["reason"].startswith("waiting:"),
              repr(j and j.get("health")))
        r = c.http(timeout=5)
        check("waiting past its bound: the request itself is still answered", r.status == 200, repr(r))
        r, _ = curl(d.http, "/ready")
        check("waiting past its bound: /ready ok again once it is answered", r and r.status == 200,
              r and short(r.body))
    finally:
        if c is not None:
            c.close()
        d.stop()


def group_coarse():
    """--clock coarse: every generator of the daemon reads the coarse clock;
    /info and INFO say so and give its resolution; the IDs of each kind are
    increasing and their times no later than now and not far behind it."""
    d = Daemon("coarse", ["--clock", "coarse", "--max-batch", "1000"])
    try:
        r, _ = curl(d.http, "/info")
        ck = (json_body(r) or {}).get("clock", {}) if r else {}
        check("--clock coarse: /info clock.setting coarse, coarse_resolution_ns 1 ns to 100 ms",
              ck.get("setting") == "coarse" and 1 <= ck.get("coarse_resolution_ns", 0) <= 100000000, repr(ck))
        rc, out, _ = rcli(d.resp, "--raw", "INFO")
        check("--clock coarse: INFO clock:coarse", "clock:coarse" in out.replace("\r", ""), short(out))
        t0 = int(time.time() * 1000)
        got = {}
        for kind, path in (("snowflake", "/id?count=1000"), ("ulid", "/ulid?count=1000"),
                           ("uuid7", "/uuid7?count=1000")):
            r, det = curl(d.http, path)
            got[kind] = r.body.decode().split() if r and r.status == 200 else []
            check("--clock coarse: %s: 1000 IDs, increasing" % kind,
                  len(got[kind]) == 1000 and (kind != "snowflake" or increasing([int(x) for x in got[kind]]))
                  and (kind == "snowflake" or got[kind] == sorted(got[kind]) and len(set(got[kind])) == 1000),
                  det if not r else short(r.body))
        t1 = int(time.time() * 1000)
        if got["snowflake"]:
            ms = [sf_fields(int(x))["unix_ms"] for x in (got["snowflake"][0], got["snowflake"][-1])]
            check("--clock coarse: the Snowflake IDs' times are at most 1 s behind the requests, and "
                  "not after them but by the borrow", t0 - 1000 <= ms[0] and ms[1] <= t1 + 1000, (ms, t0, t1))
    finally:
        d.stop()


if __name__ == "__main__":
    run_suite("clock", after=[
        ("a @60s layout stepped back 50 s", lambda: group_step_back(
            "@60s", "time:41@60s,worker:10,sequence:12", "2026-11-27 10:00:10", "2026-11-27 09:59:20",
            "2026-11-27 10:01:00")),
        ("a @86400s layout stepped back 12 h", lambda: group_step_back(
            "@86400s", "time:31@86400s,worker:10,sequence:12", "2026-11-27 06:00:00",
            "2026-11-26 18:00:00", "2026-11-28 00:00:01")),
        ("a used-up minute", group_used_up_minute),
        ("requests that wait, shown", group_waiting_shown),
        ("a request past its bound", group_waiting_past_bound),
        ("--clock coarse", group_coarse),
    ])
