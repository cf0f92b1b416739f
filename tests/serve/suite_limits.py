#!/usr/bin/env python3
"""Limits (timing): redis-benchmark, requests parked until their tick,
max_agents and max_connections, unique metric series, 10000 connections.

Usage: python3 tests/serve/suite_limits.py PATH/TO/idgen  (or: ctest -R serve.limits)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()


def group_benchmark(d):
    p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-t", "ping", "-n", "20000", "-q"],
                       capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace").replace("\r", "\n")
    check("redis-benchmark -t ping -n 20000: exit 0, inline and multibulk PING report requests per second",
          p.returncode == 0 and re.search(r"PING_INLINE: [0-9.]+ requests per second", out)
          and re.search(r"PING_MBULK: [0-9.]+ requests per second", out), "exit %d: %r %r" % (
              p.returncode, out[-400:], p.stderr.decode()[-300:]))
    m0, _ = get_metrics(d)
    p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-n", "20000", "-q", "ID"],
                       capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace").replace("\r", "\n")
    m1, _ = get_metrics(d)
    check("redis-benchmark -n 20000 ID: exit 0, reports requests per second",
          p.returncode == 0 and re.search(r"ID: [0-9.]+ requests per second", out),
          "exit %d: %r %r" % (p.returncode, out[-400:], p.stderr.decode()[-300:]))
    issued = msum(m1, "idgen_ids_issued_total", kind="snowflake") - msum(m0, "idgen_ids_issued_total", kind="snowflake")
    check("redis-benchmark ID: 20000 IDs issued (metrics)", issued == 20000, "issued %r" % issued)
    errs = (mget(m1, "idgen_requests_total", proto="resp", code="err") or 0) - \
        (mget(m0, "idgen_requests_total", proto="resp", code="err") or 0)
    check("redis-benchmark ID: no RESP error replies (CONFIG GET answered)", errs == 0, "err +%r" % errs)
    waits = (mget(m1, "idgen_loop_waits_total") or 0) - (mget(m0, "idgen_loop_waits_total") or 0)
    allowed = mget(m1, "idgen_busy_poll_loops_allowed")
    others = mget(m1, "idgen_host_other_runnable_threads")
    check("the loops waited for work (%r); the busy-poll gate's gauges are present and in range: "
          "%r loops may poll (of 2), %r other runnable threads" % (waits, allowed, others),
          waits > 0 and allowed is not None and 0 <= allowed <= 2 and others is not None
          and others >= 0)


def write_loadavg(name, running):
    """A stand-in for /proc/loadavg (IDGEN_TEST_LOADAVG): `running` threads runnable, or the
    text itself when it is a str."""
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(running if isinstance(running, str) else "0.50 0.40 0.30 %d/300 4242\n" % running)
    return path


def cpu_ticks(pid):
    """User + system CPU time of a process, in clock ticks (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


IDLE_S = 1.0  # how long a daemon is watched doing nothing after its load


def poll_run(name, running, extra=(), clients=50):
    """redis-benchmark -n 20000 ID (`clients` connections, each sending its next request as
    its reply comes) against a daemon that reads the host's runnable threads from a file; then
    IDLE_S seconds with no client.  The benchmark, the metrics after the idle spell, and the
    CPU time (ticks) the daemon used during it."""
    d = Daemon(name, list(extra), env_extra={"IDGEN_TEST_LOADAVG": write_loadavg(name + ".loadavg", running)})
    try:
        p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-c", str(clients), "-n", "20000",
                            "-q", "ID"], capture_output=True, timeout=60)
        c0 = cpu_ticks(d.p.pid)
        time.sleep(IDLE_S)
        idle = cpu_ticks(d.p.pid) - c0
        m, _ = get_metrics(d)
        return p, m, idle
    finally:
        d.stop()


def group_busy_poll():
    """Busy polling is on by default (20 us) but only onto idle CPUs.  What it promises, and
    what is checked here: with nothing else runnable, the loops may poll (the gate's gauges say
    so) and do poll, also when the only connection is on a loop other than the first (any loop
    with work takes the samples: a gate sampled by the first loop alone stayed shut); with the
    host's CPUs taken by other threads, with a load file that cannot be read as one, or with
    --busy-poll-us 0, no loop polls; every request is answered; and a loop polls only after a
    turn with work, so a daemon with no client uses no CPU (under a tenth of one while
    watched), polling or not.  How often a poll finds work is the heuristic's quality, not a
    promise: it depends on the client and on what else the machine runs (216 polls found none
    in a TSan build beside another workload), so it is printed here and measured by
    bench/resp_wakeups.py (docs/DESIGN.md §10), not asserted."""
    ncpus = len(os.sched_getaffinity(0))
    hz = os.sysconf("SC_CLK_TCK")
    # One connection on eight loops, in four fresh daemons: the kernel places it, and a gate
    # sampled by the first loop only polled just when it landed there.
    cases = (("poll-idle-host", 1, (), 50, True),) + tuple(
        ("poll-one-conn-8-loops-%d" % i, 1, ("--threads", "8"), 1, True) for i in range(4)) + (
             ("poll-busy-host", 64, (), 50, False),
             ("poll-garbage-load", "0.1 0.1 0.1 x/300 1\n", (), 50, False),
             ("poll-negative-load", "0.1 0.1 0.1 -5/300 1\n", (), 50, False),
             ("poll-off", 1, ("--busy-poll-us", "0"), 50, False))
    for name, running, extra, clients, want_polls in cases:
        p, m, idle = poll_run(name, running, extra, clients)
        issued = msum(m, "idgen_ids_issued_total", kind="snowflake")
        polls = {f: mget(m, "idgen_busy_polls_total", found=f) or 0 for f in ("work", "none")}
        waits = mget(m, "idgen_loop_waits_total") or 0
        allowed = mget(m, "idgen_busy_poll_loops_allowed")
        others = mget(m, "idgen_host_other_runnable_threads")
        ok = p.returncode == 0 and issued == 20000 and waits > 0
        if want_polls:
            # The gauge is the mean of the last LOAD_SAMPLES (32) samples, which start at
            # "every CPU taken"; a quick run (24 samples in an ASan build once) leaves some of
            # those, so it has fallen below the CPU count, not to 0.
            ok = ok and polls["work"] + polls["none"] > 0 and allowed is not None and allowed >= 1 \
                and others is not None and others < ncpus
        else:
            ok = ok and polls["work"] + polls["none"] == 0 and allowed == 0
            if name != "poll-off":  # the others: at most (and here all) the CPU count
                ok = ok and others is not None and abs(others - ncpus) < 0.01
        check("%s (load %r%s, %d clients): redis-benchmark's 20000 ID answered (%r issued), %s (%r); "
              "loops allowed to poll %r, others %r (of %d CPUs); the loops waited (%r)"
              % (name, running, " " + " ".join(extra) if extra else "", clients, issued,
                 "the loops polled" if want_polls else "no poll", polls, allowed, others, ncpus, waits),
              ok, p.stderr.decode()[-300:])
        check("%s: no client for %.1f s: the daemon used %.2f s of CPU (under a tenth of one CPU)"
              % (name, IDLE_S, idle / hz), idle < 0.1 * IDLE_S * hz, "%d ticks" % idle)
        if want_polls:
            print("#    (%s: %d of %d polls found work; a figure, not a check)"
                  % (name, polls["work"], polls["work"] + polls["none"]))


SLOW_LAYOUT = "time:41@1s,worker:10,sequence:4,epoch=1288834974000"  # 16 IDs a second
SLOW_EPOCH_S = 1288834974.0  # its epoch, in Unix seconds


def group_waiting():
    """A request that must wait for its tick is parked on the loop's timer:
    with one event loop, other connections are answered while it waits, and
    its own connection's next request comes after it (52df1fb slept in the
    loop: /health waited with it).  Batches never wait longer than one ID
    may: a count above what the layout makes within borrow + wait is a 400
    naming max_batch, a count that does not fit now a 503 naming what does,
    both at once."""
    d = Daemon("waiting", ["--threads", "1", "--max-borrow-ms", "0"],
               node_args=["--layout", SLOW_LAYOUT, "--registry", "static", "--node", "worker=5"])
    try:
        # Start early in a second, so that the wait for the next is long.
        time.sleep(1.02 - time.time() % 1.0)
        a = Conn(d.http)
        a.send(http_req("/id?count=16"))  # all of this second's IDs: at once
        r1 = a.http()
        first = digits_lines(r1.body) or []
        check("waiting: this second's 16 IDs at once", r1.status == 200 and len(first) == 16,
              (r1.status, short(r1.body)))
        t0 = time.monotonic()
        a.send(http_req("/id?count=4") + http_req("/health"))  # the next second's, then /health
        b = Conn(d.http)
        b.send(http_req("/health"))
        rb = b.http(timeout=3)
        t_b = time.monotonic() - t0
        c = Conn(d.resp)
        c.send(resp_cmd("PING"))
        pong = c.resp(timeout=3)
        t_c = time.monotonic() - t0
        r2 = a.http(timeout=3)
        t_a = time.monotonic() - t0
        wall_a = time.time()
        r3 = a.http(timeout=3)
        second = digits_lines(r2.body) or []
        # The batch can only come once the next second has begun (no borrowing): that, and
        # the other connection answered before it, is the promise.  How long the wait was
        # depends on where in its second the test began, which a loaded machine moves.
        next_second = SLOW_EPOCH_S + ((first[0] >> 14) + 1 if first else 0)
        check("waiting: another HTTP connection is answered while the batch waits "
              "(%.0f ms; the batch after %.0f ms, %.3f s into the next second)"
              % (t_b * 1000, t_a * 1000, wall_a - next_second),
              rb.status == 200 and t_b < t_a and wall_a >= next_second - 0.005,
              (rb.status, t_b, t_a, wall_a - next_second))
        check("waiting: and a RESP PING (%.0f ms)" % (t_c * 1000), pong == "PONG" and t_c < t_a,
              (pong, t_c))
        check("waiting: the batch is the next second's first 4 IDs, above this second's",
              r2.status == 200 and len(second) == 4 and second[0] > first[-1] and
              (second[0] >> 14) == (first[0] >> 14) + 1, (r2.status, short(r2.body)))
        check("waiting: its connection's next request (/health) came after it, in order",
              r3.status == 200 and r3.body.startswith(b"ok"), (r3.status, short(r3.body)))
        # RESP in order too: ID 16 then PING on one connection, while another pings.
        time.sleep(1.02 - time.time() % 1.0)
        c.send(resp_cmd("ID", "16"))
        c.resp(timeout=3)
        t0 = time.monotonic()
        c.send(resp_cmd("ID", "2") + resp_cmd("PING"))
        e = Conn(d.resp)
        e.send(resp_cmd("PING"))
        pe = e.resp(timeout=3)
        t_e = time.monotonic() - t0
        ids = c.resp(timeout=3)
        t_ids = time.monotonic() - t0
        pc = c.resp(timeout=3)
        check("waiting: RESP ID 2 waits for the next second (%.0f ms) while another connection's "
              "PING is answered (%.0f ms), and its own PING comes after it" % (t_ids * 1000, t_e * 1000),
              pe == "PONG" and t_e < t_ids and type(ids) is list and len(ids) == 2
              and pc == "PONG", (pe, t_e, ids, t_ids, pc))
        m, _ = get_metrics(d)
        check("waiting: idgen_requests_parked_total counts them",
              (mget(m, "idgen_requests_parked_total") or 0) >= 2, mget(m, "idgen_requests_parked_total"))
        for x in (a, b, c, e):
            x.close()
        # Above max_batch (16 here: no borrowing, so one second's): 400 at once.
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=120")
        t = time.monotonic() - t0
        check("waiting: count 120 is a 400 naming max_batch 16, at once (%.0f ms)" % (t * 1000),
              r and r.status == 400 and b"from 1 to 16 (max_batch)" in r.body and t < 0.5,
              r and (r.status, short(r.body)))
    finally:
        d.stop()
    # sonyflake: 256 IDs per 10 ms tick; the default max_batch is 28416.
    d = Daemon("waiting-sonyflake", ["--threads", "1"],
               node_args=["--layout", "sonyflake", "--registry", "static", "--node", "machine=9"])
    try:
        h = Conn(d.http)
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=100000")
        h.send(http_req("/health"))
        rh = h.http(timeout=3)
        t = time.monotonic() - t0
        check("waiting: sonyflake count=100000 is a 400 naming max_batch 28416, and /health is "
              "answered at once (%.0f ms; 52df1fb held the loop 2.9 s)" % (t * 1000),
              r and r.status == 400 and b"from 1 to 28416 (max_batch)" in r.body and
              rh.status == 200 and t < 0.5, (r and (r.status, short(r.body)), rh.status, t))
        h.close()
    finally:
        d.stop()
    d = Daemon("waiting-sonyflake-big", ["--threads", "1", "--max-batch", "100000",
                                         "--max-output-bytes", str(8 << 20)],
               node_args=["--layout", "sonyflake", "--registry", "static", "--node", "machine=9"])
    try:
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=100000")
        t = time.monotonic() - t0
        check("waiting: with max_batch 100000, count=100000 is a 503 naming how many fit now, "
              "at once (%.0f ms), with Retry-After" % (t * 1000),
              r and r.status == 503 and re.search(rb"can make at most \d+ IDs within max_wait_ms",
                                                  r.body) and r.h("retry-after") and t < 0.5,
              r and (r.status, short(r.body)))
        r, _ = curl(d.http, "/id?count=28416")
        ids = digits_lines(r.body) if r else None
        check("waiting: count=28416 (the window) is served, increasing",
              r and r.status == 200 and ids and len(ids) == 28416 and increasing(ids),
              r and (r.status, short(r.body)))
    finally:
        d.stop()


FAKETIME_SO = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def sanitized(path):
    with open(path, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def group_fast_reader():
    """One loop, one client pipelining 200 `ULID 100000` (3.3 MB each) and
    reading as fast as it can: the kernel takes every reply whole, so
    nothing was ever queued and one turn made all 200 while every other
    connection of the loop waited (a PING took 2.2 s behind 300); SIGTERM
    waited too (the drain ran 1.3 s past a 1 s limit).  A connection now
    makes at most TURN_OUT_LIMIT (1 MiB) of replies per turn, then the
    others' events come first: the PINGs are answered while the reader has
    had less than half of its replies (without the limit, only after all of
    them were made), whatever the build's speed."""
    n, size = 200, 3300009
    d = Daemon("fast-reader", ["--threads", "1", "--max-batch", "100000"])
    a = b = None
    try:
        a, b = Conn(d.resp, timeout=120), Conn(d.resp)
        got = [0]

        def drain():
            while got[0] < n * size:
                try:
                    x = a.s.recv(1 << 22)
                except OSError:
                    return
                if not x:
                    return
                got[0] += len(x)
        th = threading.Thread(target=drain, daemon=True)
        th.start()
        a.send(resp_cmd("ULID", "100000") * n)
        time.sleep(0.05)
        seen, pongs = [], []
        for _ in range(5):
            b.send(resp_cmd("PING"))
            pongs.append(b.resp(timeout=120))
            seen.append(got[0])
        th.join(120)
        check("fast reader of large batches: another connection's 5 PINGs are answered while "
              "the reader has had under half its replies (at most %.0f of %d)" % (max(seen) / size, n),
              pongs == ["PONG"] * 5 and max(seen) < n * size / 2, "%r %r" % (pongs, seen))
        check("fast reader of large batches: all %d replies arrive (%d bytes)" % (n, got[0]),
              got[0] == n * size)
    finally:
        for c in (a, b):
            if c is not None:
                c.close()
        d.stop()


def group_steady_reader():
    """slow_timeout_ms closes a client whose replies make no progress, not
    one that reads slowly but steadily.  Once both socket buffers are full,
    such a reader frees room in steps too small to wake EPOLLOUT (a third of
    the send buffer, over 1 MB), so no write showed its progress and it was
    closed as slow (82 KB/s at the default 10 s; here 1.3 MB/s at 500 ms).
    The sweep now also counts the kernel's send queue shrinking.  A client
    that never reads is still closed."""
    n, size = 2, 3300009
    d = Daemon("steady", ["--threads", "1", "--max-batch", "100000", "--slow-timeout-ms", "500"])
    a = b = None
    try:
        a, b = Conn(d.resp, timeout=10), Conn(d.resp, timeout=10)
        b.send(resp_cmd("ULID", "100000") * 4)  # and never reads
        a.send(resp_cmd("ULID", "100000") * n)
        got, t0, ended = 0, time.monotonic(), None
        while got < n * size and time.monotonic() - t0 < 20:
            try:
                x = a.s.recv(65536)
            except OSError as e:
                ended = repr(e)
                break
            if not x:
                ended = "EOF"
                break
            got += len(x)
            time.sleep(0.05)
        t = time.monotonic() - t0
        log = d.log()
        check("steady reader: 64 KiB every 50 ms (%.1f s) gets all %d bytes, not closed as slow "
              "(slow_timeout_ms 500)" % (t, n * size), got == n * size and ended is None,
              "%d bytes, %s" % (got, ended))
        try:
            b_closed = b.read_to_eof(10)
        except OSError:
            b_closed = True
        slow = re.findall(r"event=client_closed reason=slow", log + d.log())
        check("steady reader: a client that never reads is still closed as slow", b_closed and slow,
              short(d.log()[-600:]))
    finally:
        for c in (a, b):
            if c is not None:
                c.close()
        d.stop()


def group_frozen_clock():
    """Under libfaketime given a fixed date (no '@'), the wall clock and the
    C library's CLOCK_MONOTONIC both stand still.  A request that must wait
    for the next tick can never have it: it is answered 503 within its
    budget (the rest of the tick + max_wait_ms), not left parked for ever,
    because parked requests' due times and the generator's budget read the
    kernel's clock by a system call (before, curl waited until it gave up);
    and SIGTERM still ends the daemon when a client stays (the drain's time
    limit reads that clock too; before, it never exited).
    Not for a sanitizer build: ASan and a preloaded libfaketime deadlock."""
    if sanitized(IDGEN):
        print("skip frozen clock: a sanitizer build cannot have libfaketime preloaded")
        return
    d = Daemon("frozen", ["--threads", "1", "--max-borrow-ms", "0", "--max-wait-ms", "100",
                          "--shutdown-timeout-ms", "1000"],
               env_extra={"LD_PRELOAD": FAKETIME_SO, "FAKETIME": "2026-11-26 13:00:00"},
               node_args=["--layout", SLOW_LAYOUT, "--registry", "static", "--node", "worker=5"])
    try:
        r1, d1 = curl(d.http, "/id?count=16")  # the frozen second's 16 IDs
        t0 = time.monotonic()
        r2, d2 = curl(d.http, "/id?count=4", timeout=8)
        t = time.monotonic() - t0
        check("frozen clock: the second's 16 IDs, then count=4 is a 503 within its budget "
              "(%.2f s, the rest of the second + 100 ms), not parked for ever" % t,
              r1 and r1.status == 200 and r2 and r2.status == 503 and t < 4,
              (r1 and r1.status, d1, r2 and (r2.status, short(r2.body)), d2))
        r, _ = curl(d.http, "/health")
        check("frozen clock: /health answered meanwhile and after", r and r.status == 200)
        # A client that stays connected: the drain's time limit (1 s) still ends it.
        idle = Conn(d.http)
        t0 = time.monotonic()
        rc = d.stop(timeout=8)
        t = time.monotonic() - t0
        idle.close()
        check("frozen clock: SIGTERM with an idle client connected exits 0 after the 1 s drain "
              "limit (%.2f s)" % t, rc == 0 and t < 4, "exit %r" % rc)
    finally:
        d.stop()


def group_mark_failed_log():
    """A registry whose mark writes fail (the file: registry's fdatasync made
    to fail with EIO by tests/fault_preload.c) is retried every 100 ms; the
    log says so at most once a second, each line with count=N, the failures
    since the line before (each had a line of its own before), and the last
    ones are reported once they stop: the counts add up to
    idgen_lease_mark_failures_total.  Issue 30: event=mark_failed came every
    100 ms (10 lines a second) through the whole outage."""
    so = os.environ.get("IDGEN_TEST_FAULT_SO")
    if not so or not os.path.exists(so):
        check("mark_failed: the fault injector is built (IDGEN_TEST_FAULT_SO)", False, repr(so))
        return
    fault = os.path.join(TMP, "mark.fault")
    reg = os.path.join(TMP, "mark-registry")
    d = Daemon("mark-failed", ["--threads", "1", "--max-wait-ms", "100"],
               env_extra={"LD_PRELOAD": so, "IDGEN_TEST_FAULT_FILE": fault},
               node_args=["--registry", "file:" + reg, "--node", "datacenter=1"])
    try:
        open(fault, "w").close()
        # Borrowing pushes the generator to its durable mark: the writes begin.
        t_end = time.monotonic() + 5
        st = 200
        while time.monotonic() < t_end and st == 200:
            r, _ = curl(d.http, "/id?count=4096")
            st = r.status if r else 0
        check("mark_failed: requests above the mark fail (503) once mark writes fail", st == 503, st)
        t_end = time.monotonic() + 3.5  # an outage of some seconds, requests going on
        while time.monotonic() < t_end:
            curl(d.http, "/id")
            time.sleep(0.05)
        os.unlink(fault)
        back = False
        for _ in range(100):
            r, _ = curl(d.http, "/id")
            if r and r.status == 200:
                back = True
                break
            time.sleep(0.05)
        check("mark_failed: served again once mark writes work", back)
        time.sleep(1.3)  # a second on: the failures since the last line are reported
        m, _ = get_metrics(d)
        failures = int(mget(m, "idgen_lease_mark_failures_total") or 0)
        lines = [ln for ln in d.log().splitlines() if "event=mark_failed" in ln]
        stamps = []
        for ln in lines:
            t = re.match(r"ts=\d{4}-\d\d-\d\dT(\d\d):(\d\d):(\d\d\.\d+)Z ", ln)
            stamps.append(int(t.group(1)) * 3600 + int(t.group(2)) * 60 + float(t.group(3)) if t else -1)
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        check("mark_failed: at most one line a second through a %d-failure outage (%d lines, "
              "smallest gap %.3f s)" % (failures, len(lines), min(gaps) if gaps else -1),
              failures >= 20 and len(lines) >= 3 and min(gaps) >= 0.99 and len(lines) <= 8,
              short("\n".join(lines), 1500))
        counts = [int(re.search(r" count=(\d+) ", ln).group(1)) if re.search(r" count=(\d+) ", ln) else -1
                  for ln in lines]
        check("mark_failed: each line counts the failures it stands for (count=%s), adding up to "
              "idgen_lease_mark_failures_total (%d)" % (counts, failures),
              all(c > 0 for c in counts) and sum(counts) == failures, short("\n".join(lines), 1500))
    finally:
        if os.path.exists(fault):
            os.unlink(fault)
        rc = d.stop()
        check("mark-failed daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_agents_and_limit():
    d = Daemon("agents", ["--max-agents", "2", "--max-connections", "20"])
    try:
        for path in ("/id?agent=a1", "/id?agent=a2&count=2", "/id?agent=a3&count=3"):
            curl(d.http, path)
        rcli(d.resp, stdin="CLIENT SETNAME a4\nID 4\n")
        m, _ = get_metrics(d)
        got = {a: mget(m, "idgen_ids_issued_total", kind="snowflake", agent=a) for a in ("a1", "a2", "a3", "a4", "other")}
        check("max_agents 2: a1 and a2 counted by name, a3 and a4 under other",
              got == {"a1": 1, "a2": 2, "a3": None, "a4": None, "other": 7}, repr(got))
        # max_connections 20
        conns = []
        for i in range(20):
            c = Conn(d.resp)
            c.send(b"PING\r\n")
            conns.append(c)
        ok = True
        for c in conns:
            try:
                ok = ok and c.resp() == "PONG"
            except Exception:  # noqa: BLE001
                ok = False
        check("max_connections 20: 20 connections served", ok)
        for port, proto, req in ((d.resp, "RESP", b"PING\r\n"), (d.http, "HTTP", http_req("/health"))):
            c = Conn(port)
            try:
                c.s.settimeout(1)
                try:
                    d0 = c.s.recv(4096)
                    c.buf += d0
                    if not d0:
                        c.closed = True
                except socket.timeout:
                    try:
                        c.send(req)
                    except OSError:
                        pass
                closed = c.closed or c.read_to_eof(3)
            except OSError:
                closed = True
            if proto == "RESP":
                good = c.buf.startswith(b"-ERR ") and c.buf.endswith(b"\r\n") and c.buf.count(b"\r\n") == 1
            else:
                try:
                    r = parse_http(c.buf)
                    good = r is not None and r[0].status >= 500 and one_line_error(r[0])
                except ProtoError:
                    good = False
            check("max_connections 20: the 21st (%s) is answered with an error and closed" % proto,
                  good and closed, "got %s closed=%s" % (short(c.buf), closed))
            c.close()
        for c in conns:
            c.close()
        time.sleep(0.3)
        served(d, "max_connections reached and released")
        m, _ = get_metrics(d)
        check('metrics: idgen_connections_closed_total{reason="limit"} = 2',
              mget(m, "idgen_connections_closed_total", reason="limit") == 2,
              repr(mget(m, "idgen_connections_closed_total", reason="limit")))
    finally:
        rc = d.stop()
        check("agents daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_metrics_unique():
    """Every /metrics sample is unique by (name, labels), read with the real
    Prometheus parser, also when a client names itself `other`: the name of
    the bucket that counts agents past max_agents.  With --max-agents 3, the
    client `other` comes first (it must not take a name's place), then u0..u7
    (u3..u7 overflow), then CLIENT SETNAME other."""
    if text_string_to_metric_families is None:
        check("python3-prometheus-client is installed (scripts/install-deps.sh)", False)
        return
    d = Daemon("unique", ["--max-agents", "3"])
    try:
        curl(d.http, "/id?agent=other")
        for i in range(8):
            curl(d.http, "/id?agent=u%d&count=2" % i)
        rc, out, err = rcli(d.resp, stdin="CLIENT SETNAME other\nID 4\n")
        check("redis-cli CLIENT SETNAME other, ID 4", rc == 0 and out.startswith("OK\n"), repr(out))
        curl(d.http, "/ulid?agent=other")
        _, text = get_metrics(d)
        seen, dups, err = {}, [], None
        try:
            for fam in text_string_to_metric_families(text):
                for smp in fam.samples:
                    key = (smp.name, tuple(sorted(smp.labels.items())))
                    if key in seen:
                        dups.append(key)
                    seen[key] = smp.value
        except Exception as e:  # noqa: BLE001
            err = "%s: %s" % (type(e).__name__, e)
        check("metrics: prometheus_client's parser reads /metrics", err is None and seen, err or "no samples")
        check("metrics: no two samples with the same name and labels (prometheus_client's parser)", not dups,
              repr(dups[:5]))

        def issued(kind, agent):
            return seen.get(("idgen_ids_issued_total", (("agent", agent), ("kind", kind))))
        got = {a: issued("snowflake", a) for a in ("u0", "u1", "u2", "u3", "other")}
        check('metrics: agent "other" (HTTP and CLIENT SETNAME) counts in the overflow series: '
              "u0..u2 by name, other = 1 + 5 * 2 + 4",
              got == {"u0": 2, "u1": 2, "u2": 2, "u3": None, "other": 15}, repr(got))
        check('metrics: /ulid?agent=other counted under kind="ulid",agent="other"', issued("ulid", "other") == 1,
              repr(issued("ulid", "other")))
    finally:
        rc = d.stop()
        check("unique daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_many_connections():
    """10,000 connections opened and dropped; the daemon started with a soft
    RLIMIT_NOFILE of 1024 raises its own."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 20000)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if want < 10200:
        check("RLIMIT_NOFILE hard limit allows 10000 connections", False, "hard %d" % hard)
        return
    d = Daemon("many", [], nofile_soft=1024)
    socks = []
    try:
        lim = None
        with open("/proc/%d/limits" % d.p.pid) as f:
            for ln in f:
                if ln.startswith("Max open files"):
                    lim = int(ln.split()[3])
        check("daemon started with soft RLIMIT_NOFILE 1024 raised its own (now %s)" % lim,
              lim is not None and lim >= 10100)
        t0 = time.monotonic()
        deadline = t0 + 10
        err = ""
        for batch in range(20):
            pending = []
            for i in range(500):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                e = s.connect_ex((HOST, d.http if (batch * 500 + i) % 2 == 0 else d.resp))
                if e not in (0, errno.EINPROGRESS):
                    err = os.strerror(e)
                pending.append(s)
                socks.append(s)
            poller = select.poll()
            fds = {}
            for s in pending:
                poller.register(s, select.POLLOUT)
                fds[s.fileno()] = s
            while fds and time.monotonic() < deadline:
                for fd, ev in poller.poll(200):
                    s = fds.pop(fd)
                    poller.unregister(fd)
                    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if e:
                        err = os.strerror(e)
            if fds:
                err = err or "connect timed out"
                break
        t_open = time.monotonic() - t0
        check("10000 connections opened (%.1fs)" % t_open, not err and len(socks) == 10000, err)
        cnt, deadline = 0, time.monotonic() + 10
        while time.monotonic() < deadline:
            m, _ = get_metrics(d)
            cnt = msum(m, "idgen_connections")
            if cnt >= 10000:
                break
            time.sleep(0.2)
        check("10000 connections accepted by the daemon (idgen_connections >= 10000)", cnt >= 10000, "gauge %r" % cnt)
        fds, maxfds = mget(m, "process_open_fds"), mget(m, "process_max_fds")
        check("process_open_fds counts them: at least 10000, below process_max_fds (%r of %r)" % (fds, maxfds),
              fds is not None and maxfds is not None and 10000 <= fds < maxfds)
        served(d, "10000 connections open")
        for k, s in enumerate(socks):
            if k % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        socks = []
        cnt, deadline = None, time.monotonic() + 10
        while time.monotonic() < deadline:
            m, _ = get_metrics(d)
            cnt = msum(m, "idgen_connections")
            if cnt <= 2:
                break
            time.sleep(0.2)
        check("10000 connections dropped (half reset): idgen_connections back to <= 2", cnt is not None and cnt <= 2,
              "gauge %r" % cnt)
        served(d, "10000 connections dropped")
    finally:
        for s in socks:
            s.close()
        rc = d.stop()
        check("many-connections daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


if __name__ == "__main__":
    run_suite("limits",
              before=[],
              with_daemon=[('redis-benchmark', group_benchmark)],
              after=[('busy polling and its gate', group_busy_poll),
                     ('requests that wait for their tick', group_waiting),
                     ('a fast reader of large batches', group_fast_reader),
                     ('a slow but steady reader', group_steady_reader),
                     ('a clock that stands still', group_frozen_clock),
                     ('failing mark writes, logged once a second', group_mark_failed_log),
                     ('agents and max_connections', group_agents_and_limit), ('metrics series unique (agent other)', group_metrics_unique), ('10000 connections', group_many_connections)],
              snow_kinds=None)
