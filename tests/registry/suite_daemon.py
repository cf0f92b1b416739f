#!/usr/bin/env python3
"""The daemon's lease thread on a file: registry, also under ThreadSanitizer
(tests/registry/harness.py says how the suites fit): a lease lost for good
(its lock file replaced), once and 20 times, with and without the cache; a
holder killed with SIGKILL; then the faults: a holder paused past its TTL,
its lock file removed, mark writes that fail, a parked request under a clock
step.

Usage: python3 tests/registry/suite_daemon.py PATH/TO/idgen [faults]
       (faults: only the faults; or: ctest -R registry_daemon)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()
from shared import *  # noqa: F401,F403  scenarios shared with other suites


def swap_many(registry, label, extra=(), rounds=20):
    """More fenced losses than the daemon keeps generators for (16): each
    lost lease's generator is freed once no event loop can hold it, so the
    daemon leases again every time, while two clients ask without pause for
    batches that make requests wait for a tick (parked across the swaps).
    Every ID is unique and each client's increase."""
    d, _ = swap_daemon(registry, label, 15, extra, 1)
    if d is None:
        return
    stop, got, bad = threading.Event(), [], []

    def client():
        mine = []
        while not stop.is_set():
            try:
                c = http.client.HTTPConnection("127.0.0.1", d.port, timeout=5)
                while not stop.is_set():
                    c.request("GET", "/id?count=3000")
                    r = c.getresponse()
                    body = r.read().decode()
                    if r.status == 200:
                        ids = [int(x) for x in body.split()]
                        if mine and ids[0] <= mine[-1]:
                            bad.append((mine[-1], ids[0]))
                        mine.extend(ids)
                    elif r.status != 503:
                        bad.append((r.status, body[:200]))
                c.close()
            except (OSError, http.client.HTTPException) as e:
                bad.append(str(e))
                time.sleep(0.05)
        got.append(mine)
    threads = [threading.Thread(target=client) for _ in range(2)]
    for t in threads:
        t.start()
    done = 0
    for n in range(rounds):
        ids = wait_for(lambda: d.ids(1), WAIT_S, 0.05)
        if not ids:
            break
        lock = swap_lock(registry, 15, ids[0])
        if not os.path.exists(lock):
            break
        os.rename(lock, lock + ".moved.%d" % n)
        if not wait_for(lambda: d.log().count("event=lease_acquired") > n, WAIT_S):
            break
        done += 1
    stop.set()
    for t in threads:
        t.join(10)
    every = [i for lst in got for i in lst]
    check("%s: fenced and leased again %d times of %d without a restart" % (label, done, rounds),
          done == rounds and d.p.poll() is None and "not trying again" not in d.log(),
          d.log()[-800:])
    check("%s: %d IDs from 2 clients meanwhile: unique, each client's increasing" %
          (label, len(every)), len(every) > 0 and len(set(every)) == len(every) and not bad,
          bad[:5])
    check("%s: exits 0 on TERM" % label, d.stop() == 0, d.log()[-400:])


def lock_file_of(root, pid):
    """The lock file whose record names process `pid` as its holder."""
    for dirpath, _, names in os.walk(root):
        for n in names:
            if n.endswith(".lock"):
                path = os.path.join(dirpath, n)
                with open(path, "rb") as f:
                    if (":%d:" % pid).encode() in f.read():
                        return path
    return None


def removed_while_alive(registry, label):
    """A live holder's lock file removed: the next holder of that tuple
    starts above everything the pool issued, while the old one still issues
    up to its mark (52df1fb read the new, empty file as "never used": about
    42,000 duplicates in 3 of 4 runs)."""
    root = registry[len("file:"):]
    lay = ["--layout", "time:41@1ms,datacenter:5,worker:1,sequence:12,epoch=1288834974657",
           "--node", "datacenter=17"]
    a = Daemon(label + "-a", ["--registry", registry] + lay)
    c = Daemon(label + "-c", ["--registry", registry] + lay)  # holds the other worker ID
    ids_a = first_ids(a, 1000, "%s: holder serves" % label)
    if ids_a is None or c.ids(1) is None:
        return
    path = lock_file_of(root, a.p.pid)
    if not check("%s: found the holder's lock file" % label, path is not None):
        return
    os.unlink(path)
    b = cli_holder(label + "-b", registry, None, TMP, n=300000 // SCALE, extra=lay)
    while b[1].poll() is None:
        ids_a += a.ids(4000) or []
    name, rc, ids_b, msg = cli_done(b)
    check("%s: the next holder ran on the same worker ID" % label,
          rc == 0 and ids_b and worker_of(ids_b[0]) == worker_of(ids_a[0]), (rc, msg))
    common = set(ids_a) & set(ids_b)
    check("%s: no ID in common with the live holder (%d and %d IDs)" %
          (label, len(ids_a), len(ids_b)), not common, "%d in common" % len(common))
    fenced = wait_for(lambda: re.search(r"event=lease_lost .*fenced=1", a.log()), WAIT_S)
    check("%s: the live holder is fenced at its next check" % label, fenced, a.log()[-400:])
    a.stop()
    c.stop()


def mark_fails_fast(registry, label):
    """Mark writes that fail (fdatasync EIO, injected): a request above the
    durable mark fails at once with the reason, not after a 250 ms wait
    (52df1fb: every such request cost 250 ms, so N clients made /health
    take N x 250 ms, and nothing was logged); the failures are logged as
    event=mark_failed and counted in /metrics; once writes work again, so
    does the daemon."""
    so = os.environ.get("IDGEN_TEST_FAULT_SO")
    if not so or not os.path.exists(so):
        check("%s: the fault injector is built (IDGEN_TEST_FAULT_SO)" % label, False, so)
        return
    fault = os.path.join(TMP, label.replace(" ", "-") + ".fault")
    d = Daemon(label, ["--registry", registry, "--node", "datacenter=18", "--max-wait-ms", "100"],
               env={"LD_PRELOAD": so, "IDGEN_TEST_FAULT_FILE": fault})
    if first_ids(d, 100, "%s: serves" % label) is None:
        return
    open(fault, "w").close()
    # Borrowing pushes the generator to its durable mark (a step ahead).
    t_end = time.monotonic() + 5
    st, body = 200, ""
    while time.monotonic() < t_end and st == 200:
        st, body = d.get("/id?count=4096")
    check("%s: requests above the mark fail: 503 naming the mark write's failure" % label,
          st == 503 and "high-water mark" in body and "Input/output error" in body, (st, body))
    slow = []
    for _ in range(20):
        t = time.monotonic()
        st, body = d.get("/id")
        slow.append(time.monotonic() - t)
    slow.sort()
    check("%s: each fails at once (median %.1f ms, max %.1f ms; 52df1fb: 250 ms each)" %
          (label, slow[10] * 1000, slow[-1] * 1000), slow[10] < 0.05, slow)
    results = []

    def hammer():
        for _ in range(10):
            results.append(d.get("/id")[0])
    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for th in threads:
        th.start()
    t = time.monotonic()
    st, body = d.get("/ready")
    t_health = time.monotonic() - t
    for th in threads:
        th.join()
    check("%s: /ready answers within 100 ms while 8 clients fail (%.1f ms)" %
          (label, t_health * 1000), t_health < 0.1 and st == 503, (st, t_health))
    # Each failing request pokes the writer; the writer still tries only
    # every 100 ms (the cluster test saw 45 failed writes in 50 ms: one per
    # request, all on a registry already in trouble).
    failures = lambda: int(re.search(r"^idgen_lease_mark_failures_total (\d+)$",
                                     d.get("/metrics")[1], re.M).group(1))
    f0, t0, asked = failures(), time.monotonic(), 0
    while time.monotonic() - t0 < 1.0:
        d.get("/id")
        asked += 1
    writes = failures() - f0
    limit = (time.monotonic() - t0) * 10 + 3
    check("%s: %d requests in 1 s cost %d mark writes (at most one per 100 ms: %.0f)" %
          (label, asked, writes, limit), writes <= limit and asked > 2 * limit, (asked, writes))
    logged = wait_for(lambda: re.search(r"event=mark_failed .*reason=", d.log()), WAIT_S)
    check("%s: logged as event=mark_failed with the reason" % label, logged, d.log()[-500:])
    st, body = d.get("/metrics")
    m = re.search(r"^idgen_lease_mark_failures_total (\d+)$", body, re.M)
    check("%s: counted in idgen_lease_mark_failures_total" % label, m and int(m.group(1)) > 0,
          m and m.group(0))
    os.unlink(fault)
    back = wait_for(lambda: d.ids(10), WAIT_S, 0.05)
    check("%s: serves again once writes work" % label, back is not None, d.log()[-300:])
    d.stop()


def parked_clock_step(registry, label):
    """A request parked for its tick while the wall clock steps back 30 s:
    answered within its budget (the rest of the tick plus max_wait_ms), not
    after the step (the timer runs on the monotonic clock; on the wall
    clock it was once parked for 30 s)."""
    if not faketime_usable(label):
        return
    env, stamp = faketime_env(label, "+0")
    d = Daemon(label, ["--registry", registry, "--layout", "time:41@1s,worker:10,sequence:4",
                       "--max-borrow-ms", "0", "--max-wait-ms", "0"], env=env)
    if first_ids(d, 16, "%s: serves" % label) is None:
        return
    # Early in a second, use up its 16 IDs, so that the next request must
    # wait for the next second (the layout makes 16 a second).
    time.sleep(1.05 - time.time() % 1.0)
    d.get("/id?count=16")
    result = {}

    def ask():
        t = time.monotonic()
        result["r"] = d.get("/id?count=16")
        result["t"] = time.monotonic() - t
    th = threading.Thread(target=ask)
    th.start()
    time.sleep(0.1)  # parked until the next second
    with open(stamp, "w") as f:
        f.write("-30s\n")
    th.join(40)
    st, body = result.get("r", (0, ""))
    t = result.get("t", -1)
    check("%s: the parked request is answered within its budget (%.2f s), refused: %s" %
          (label, t, body.strip()[:80]), 0 <= t < 2.5 and st == 503 and "clock" in body, (st, t))
    d.stop()


def file_pause(registry, label):
    """A file: holder stopped (SIGSTOP) past its TTL has lost nothing (its
    flock is held): resumed, it answers at once and never logs lease_lost
    (52df1fb answered "lease lost" for ~50 ms and logged it)."""
    d = Daemon(label, ["--registry", registry, "--node", "datacenter=16", "--lease-ttl-ms", "300"])
    if first_ids(d, 10, "%s: serves" % label) is None:
        return
    d.p.send_signal(signal.SIGSTOP)
    time.sleep(1.0)
    d.p.send_signal(signal.SIGCONT)
    st, body = d.get("/id")
    check("%s: resumed, it answers 200 at once" % label, st == 200, (st, body))
    time.sleep(0.3)
    check("%s: and never logged lease_lost" % label, "lease_lost" not in d.log(), d.log()[-400:])
    d.stop()


def main():
    if "faults" not in ARGS:
        reg = WORK.registry("reg-swap")
        swap(reg, "file lease replaced")
        swap(reg, "file lease replaced, cached", ["--cache"])
        swap_many(reg, "file lease replaced 20 times")
        swap_many(reg, "file lease replaced 20 times, cached", ["--cache"])
        kill9(reg, "file kill -9")
    # A file: holder paused, its file removed, failing marks.
    reg = WORK.registry("reg-faults")
    file_pause(reg, "file SIGSTOP")
    removed_while_alive(reg, "file lock removed")
    mark_fails_fast(reg, "file mark fails")
    parked_clock_step(reg, "parked clock step")


if __name__ == "__main__":
    run(main)
