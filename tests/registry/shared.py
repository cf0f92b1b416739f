"""The registry scenarios more than one suite runs (tests/registry/harness.py
says how the suites fit): many processes at once, a holder killed with
SIGKILL, a lease lost and taken again, fencing by hand, a paused holder, a
clock ahead of the registry's.
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()


def many_processes(registry, label, n=32, count=100000):
    """n `idgen snowflake -n count` at once: no duplicate among the n*count
    IDs; each process used one worker ID; processes that shared a worker ID
    ran one after another, the later starting above the earlier's last ID."""
    if registry.startswith("postgres://") and "connect_timeout" not in registry:
        # 32 processes making IDs at full speed share 2 cores (under ASan,
        # with other tests beside them): one that has not connected yet can
        # wait for the CPU longer than the registry's 2 s connect_timeout.
        # That tests the machine, not uniqueness; the URI's setting wins.
        registry += ("&" if "?" in registry else "?") + "connect_timeout=15"
    procs, outs = [], []
    for i in range(n):
        out = open(os.path.join(TMP, "%s-%d.out" % (label, i)), "wb+")
        err = open(os.path.join(TMP, "%s-%d.err" % (label, i)), "wb+")
        procs.append(subprocess.Popen([IDGEN, "snowflake", "-n", str(count), "--registry", registry,
                                       "--datacenter", "1"], stdout=out, stderr=err))
        outs.append((out, err))
    runs, bad = [], []
    for p, (out, err) in zip(procs, outs):
        rc = p.wait(120)
        out.seek(0)
        err.seek(0)
        ids = [int(x) for x in out.read().split()]
        if rc != 0 or len(ids) != count:
            bad.append((rc, len(ids), err.read().decode()[:300]))
            continue
        runs.append(ids)
    check("%s: %d processes each made %d IDs" % (label, n, count), not bad, bad[:3])
    every = [i for r in runs for i in r]
    check("%s: no duplicate among %d IDs" % (label, len(every)),
          len(set(every)) == len(every) == n * count, len(every) - len(set(every)))
    one_worker = all(len({worker_of(i) for i in r}) == 1 for r in runs)
    check("%s: each process used one worker ID, datacenter 1" % label,
          one_worker and all(twitter_fields(r[0])[1] == 1 for r in runs))
    by_worker = {}
    for r in runs:
        by_worker.setdefault(worker_of(r[0]), []).append((r[0], r[-1]))
    overlaps = []
    for w, rs in by_worker.items():
        rs.sort()
        for (a0, a1), (b0, b1) in zip(rs, rs[1:]):
            if b0 <= a1:
                overlaps.append((w, a0, a1, b0, b1))
    check("%s: a worker ID's holders did not overlap; each started above the last (%d IDs "
          "used by %d processes)" % (label, len(by_worker), len(runs)), not overlaps, overlaps[:3])
    check("%s: every process's IDs increase" % label,
          all(all(a < b for a, b in zip(r, r[1:])) for r in runs))


def kill9(registry, label, args=(), free_after_s=0.0):
    """A holder killed with SIGKILL frees its worker ID (at once for file:,
    after expiry and quarantine for postgres) and the next holder's first ID
    is above the dead one's last.  The pool has two IDs and another daemon
    holds the other one, so the next holder needs exactly the dead one's."""
    lay = ["--layout", "time:41@1ms,datacenter:5,worker:1,sequence:12,epoch=1288834974657",
           "--node", "datacenter=2"] + list(args)
    other = Daemon(label + "-other", ["--registry", registry] + lay)
    a = Daemon(label + "-a", ["--registry", registry] + lay)
    ids_a = first_ids(a, 1000, "%s: holder serves" % label)
    if ids_a is None:
        other.stop()
        return
    w = (ids_a[0] >> 12) & 1
    a.stop(signal.SIGKILL)
    t_dead = time.monotonic()
    if free_after_s > 0:
        # Until expiry and quarantine pass, nobody else gets it: the pool is full.
        # (No start wait: one would wait for the quarantine's end.)
        r = idgen("snowflake", "--registry", registry, "--max-start-wait-ms", "0", *lay)
        check("%s: before expiry and quarantine the dead lease still holds (pool full)" % label,
              r.returncode == 1 and "pool is full" in r.stderr and
              time.monotonic() - t_dead < free_after_s, (r.returncode, r.stderr))
        time.sleep(max(0.0, free_after_s - (time.monotonic() - t_dead)) + 0.3)
    b = Daemon(label + "-b", ["--registry", registry] + lay)
    ids_b = b.ids(1000)
    check("%s: the next holder serves on the dead one's worker ID %d%s (%.2f s after the kill)"
          % (label, w, "" if free_after_s else " at once", time.monotonic() - t_dead),
          ids_b is not None and all((i >> 12) & 1 == w for i in ids_b), b.log()[-500:])
    check("%s: the next holder's first ID is above the dead one's last" % label,
          ids_b is not None and ids_b[0] > ids_a[-1], (ids_a[-1], ids_b and ids_b[0]))
    b.stop()
    other.stop()


def swap_daemon(registry, label, dc, extra, n):
    """A daemon on file: REGISTRY with datacenter DC and a 900 ms TTL, and
    its first N IDs; (None, None) if it does not serve."""
    d = Daemon(label, ["--registry", registry, "--node", "datacenter=%d" % dc, "--lease-ttl-ms",
                       "900"] + list(extra))
    ids = first_ids(d, n, "%s: serves" % label)
    return (d, ids) if ids is not None else (None, None)


def swap_lock(registry, dc, an_id):
    """The lock file of the tuple (DC, the worker of AN_ID) in twitter's pool."""
    return os.path.join(registry[len("file:"):], TWITTER_POOL,
                        "%016x.lock" % (dc << 17 | worker_of(an_id) << 12))


def swap(registry, label, extra=()):
    """The daemon's lease lost for good (its lock file replaced): it says
    so, leases again and goes on, its IDs still increasing and unique.  With
    --cache (extra), the cache is replaced with the generator: nothing from
    the old ring is handed out after the fence."""
    d, before = swap_daemon(registry, label, 14, extra, 1000)
    if d is None:
        return
    lock = swap_lock(registry, 14, before[0])
    os.rename(lock, lock + ".moved")  # never do this (the pool-wide mark keeps the IDs unique)
    fenced = wait_for(lambda: re.search(r"event=lease_lost .*fenced=1", d.log()), 5)
    check("%s: fenced: the lock file was replaced" % label, fenced, d.log()[-600:])
    again = wait_for(lambda: "event=lease_acquired" in d.log(), 5)
    check("%s: leased again without a restart" % label, again and d.p.poll() is None,
          d.log()[-600:])
    after = wait_for(lambda: d.ids(1000), 5, 0.05)
    check("%s: serves again, every ID above the ones before" % label,
          after is not None and after[0] > before[-1], (before[-1:], after and after[:1]))
    check("%s: exits 0 on TERM" % label, d.stop() == 0, d.log()[-400:])


def fence_by_hand(pg, label):
    """`registry free --force` fences a live holder: at its next renewal (a
    third of the 10 s TTL) it stops issuing on that worker ID and leases
    another, and its log says so."""
    d = Daemon(label, ["--registry", pg.uri, "--node", "datacenter=9"])
    ids = first_ids(d, 1, "%s: serves" % label)
    if ids is None:
        return
    w = worker_of(ids[0])
    r = idgen("registry", "free", "--registry", pg.uri, "--force", TWITTER_POOL,
              "datacenter=9,worker=%d" % w)
    check("%s: free --force fences the live holder" % label, r.returncode == 0, r.stderr)

    def on_another():
        got = d.ids(1)
        return got is not None and worker_of(got[0]) != w
    check("%s: the fenced holder moves to another worker ID" % label, wait_for(on_another, 8, 0.1))
    check("%s: its log says it was fenced" % label,
          re.search(r"event=lease_lost worker=%d .*fenced=1" % w, d.log()) and
          "event=lease_acquired" in d.log(), d.log()[-600:])
    d.stop()


def paused_holder(pg, label):
    """A holder paused (SIGSTOP) past TTL and quarantine: another process
    takes its worker ID; resumed, the paused one fails its next renewal or
    mark write on the fencing generation, stops issuing on that ID, and no
    ID is issued twice."""
    reg = pg.uri
    args = ["--registry", reg, "--node", "datacenter=12", "--lease-ttl-ms", "1000"]
    a = Daemon(label + "-a", args)
    ids_a = first_ids(a, 100, "%s: holder serves" % label)
    if ids_a is None:
        return
    w = worker_of(ids_a[0])
    a.p.send_signal(signal.SIGSTOP)
    time.sleep(2.0 + 1.2)  # TTL 1 s + quarantine 1 s (one TTL), and the mark behind the clock
    b = Daemon(label + "-b", args)
    ids_b = b.ids(100)
    check("%s: another process takes the paused holder's worker ID %d" % (label, w),
          ids_b is not None and worker_of(ids_b[0]) == w,
          ids_b and "got %d" % worker_of(ids_b[0]))
    check("%s: and starts above the paused one's mark" % label, ids_b and ids_b[0] > ids_a[-1])
    a.p.send_signal(signal.SIGCONT)
    got = []
    t0 = time.monotonic()
    refused = None
    while time.monotonic() - t0 < 5:
        st, body = a.get("/id")
        if st == 200:
            got.append(int(body))
        else:
            refused = (st, body)
            break
    check("%s: resumed, it refuses (503) on the old lease" % label,
          refused is not None and refused[0] == 503, refused)
    fenced = wait_for(lambda: re.search(r"event=lease_lost worker=%d .*fenced=1" % w, a.log()), 5)
    check("%s: its renewal or mark write failed on the fencing generation" % label, fenced,
          a.log()[-800:])
    # It may lease another worker ID; nothing it issued collides with b.
    later = wait_for(lambda: a.ids(100), 5, 0.1) or []
    check("%s: it serves again on a new lease, another worker ID" % label,
          later and worker_of(later[0]) != w, later[:1])
    more_b = b.ids(100) or []
    every = ids_a + got + later + ids_b + more_b
    check("%s: no ID issued twice (%d IDs)" % (label, len(every)), len(set(every)) == len(every))
    ws = [i for i in got if worker_of(i) == w]
    check("%s: what it issued on worker %d after resuming is below b's first ID" % (label, w),
          all(i < ids_b[0] for i in ws), (ws[-1:], ids_b[:1]))
    a.stop()
    b.stop()


def clock_skew(pg, label):
    """A daemon whose clock is 20 s ahead of the registry's (libfaketime)
    refuses to start, naming both clocks (Twitter's server refused past 10 s
    from its peers); 3 s ahead, it starts and exports the skew it measured."""
    if not faketime_usable(label):
        return

    def env(offset):
        return faketime_env(label, offset)[0]
    r = idgen("serve", "--http", "127.0.0.1:0", "--resp", "off", "--registry", pg.uri,
              "--node", "datacenter=21", env=env("+20s"))
    check("%s: 20 s ahead: refused at start (exit 1), naming both clocks and max_clock_skew_ms" % label,
          r.returncode == 1 and re.search(r"this host's clock \(\S+\) is (19|20)\d{3} ms ahead of the "
                                          r"registry's \(\S+, %s://" % pg.uri.split(":")[0], r.stderr)
          and "max_clock_skew_ms (10000)" in r.stderr, (r.returncode, r.stderr))
    d = Daemon(label, ["--registry", pg.uri, "--node", "datacenter=21"], env=env("+3s"))
    st, body = d.get("/metrics")
    m = re.search(r"^idgen_registry_clock_skew_seconds (-?[\d.]+)", body or "", re.M)
    # etcd's clock is an HTTP Date header: whole seconds.
    slack = 1.0 if pg.uri.startswith("etcd:") else 0.5
    check("%s: 3 s ahead: serves, and /metrics says idgen_registry_clock_skew_seconds ~ 3" % label,
          d.ids(1) is not None and m and abs(float(m.group(1)) - 3.0) <= slack, m and m.group(0))
    d.stop()
    d = Daemon(label + "-off", ["--registry", pg.uri, "--node", "datacenter=21",
                                "--max-clock-skew-ms", "0"], env=env("+20s"))
    check("%s: max_clock_skew_ms = 0 does not check" % label, d.ids(1) is not None, d.log()[-300:])
    d.stop()


def unknown_uri_params(registry, label, known):
    """A URI parameter the backend does not know is refused at start (exit 2),
    naming it and the known ones (SPEC section 8): ?Space=billing never means
    the default space, and says which name was meant."""
    for param, name, hint in (("Space=billing", "Space", "did you mean space?"),
                              ("bogus=1", "bogus", "")):
        uri = registry + ("&" if "?" in registry else "?") + param
        for cmd in (["snowflake"], ["registry", "list"]):
            r = idgen(*cmd, "--registry", uri)
            check("%s: idgen %s with ?%s: refused, naming %s and the known parameters"
                  % (label, cmd[0], param, name),
                  r.returncode == 2 and not r.stdout and '"%s"' % name in r.stderr
                  and hint in r.stderr and all(k in r.stderr for k in known),
                  (r.returncode, r.stdout[:100], r.stderr))
