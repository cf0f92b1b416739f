#!/usr/bin/env python3
"""The registry contract: the same checks, word for word, on every backend
(tests/registry/harness.py says how the suites fit): 32 processes at once,
kill -9 of a holder, a restart under a clock stepped back 10 s (libfaketime),
the field choice and a full pool, `idgen registry list|free`, every pair of
lease fields, ID spaces.

Usage: python3 tests/registry/suite_contract.py PATH/TO/idgen file|postgres|etcd
       (or: ctest -R registry.contract.file)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()
from shared import *  # noqa: F401,F403  scenarios shared with other suites


def clock_step(registry, label):
    """A restart under a wall clock stepped back 10 s keeps its worker ID
    (the pool has no other free one) and stays bounded: it refuses at start
    naming the wait, or it borrows; no ID repeats."""
    if not faketime_usable(label):
        return
    layout = ["--layout", "time:41@1ms,datacenter:5,worker:1,sequence:12,epoch=1288834974657",
              "--node", "datacenter=4"]
    other = Daemon(label + "-other", ["--registry", registry] + layout)  # holds worker 0
    a = Daemon(label + "-a", ["--registry", registry] + layout)  # worker 1
    ids_a = first_ids(a, 5000, "%s: first holder serves" % label)
    if ids_a is None:
        other.stop()
        return
    w = (ids_a[0] >> 12) & 1
    a.stop()
    fenv, _ = faketime_env(label, "-10s")
    # A clock 10 s behind is at max_clock_skew_ms's default, which a network
    # registry's clock check (whole seconds for etcd) may find just past:
    # this test is about the mark, so the check gets room.
    layout = layout + ["--max-clock-skew-ms", "30000"]
    # The mark is ~10 s ahead of the faked clock: with a 2 s start wait it
    # refuses, naming how long until it could start.
    r = idgen("serve", "--http", "127.0.0.1:0", "--resp", "off", "--registry", registry,
              "--max-start-wait-ms", "2000", *layout, env=fenv)
    check("%s: refused at start (exit 1), naming the wait" % label,
          r.returncode == 1 and re.search(r"can start in (8|9|10)\d{3} ms, more than "
                                          r"max_start_wait_ms \(2000\)", r.stderr),
          (r.returncode, r.stderr))
    # Borrowing up to 15 s, it starts at once on the same worker ID, above
    # the last ID of the run before the step.
    b = Daemon(label + "-b", ["--registry", registry, "--max-borrow-ms", "15000"] + layout,
               env=fenv)
    ids_b = b.ids(5000)
    check("%s: borrowing, it serves on the same worker ID %d" % (label, w),
          ids_b is not None and all((i >> 12) & 1 == w for i in ids_b), b.log()[-300:])
    if ids_b:
        check("%s: no ID repeats: the first is above the last before the step" % label,
              ids_b[0] > ids_a[-1], (ids_a[-1], ids_b[0]))
        st, body = b.get("/metrics")
        m = re.search(r"^idgen_clock_borrowed_seconds ([\d.]+)", body, re.M)
        check("%s: it says it borrows (idgen_clock_borrowed_seconds ~ 10)" % label,
              m and 8 <= float(m.group(1)) <= 12, m and m.group(0))
    b.stop()
    other.stop()


def field_choice(registry, label):
    r = idgen("snowflake", "--registry", registry, "--layout", "mastodon")
    check("%s: mastodon is refused: no node field to lease" % label,
          r.returncode == 2 and "no node field to lease" in r.stderr, r.stderr)
    r = idgen("serve", "--registry", registry, "--layout", "mastodon", "--http", "127.0.0.1:0")
    check("%s: serve refuses mastodon too" % label,
          r.returncode != 0 and "no node field to lease" in r.stderr, r.stderr)
    # Each layout in an ID space of its own: their IDs could be equal.
    sony = in_space(registry, "fields-sony")
    r = idgen("snowflake", "-n", "2", "--registry", sony, "--layout", "sonyflake")
    ok = r.returncode == 0
    check("%s: sonyflake (no worker field) leases its only node field" % label, ok, r.stderr)
    disc = in_space(registry, "fields-discord")
    r = idgen("snowflake", "--registry", disc, "--layout", "discord")
    check("%s: discord leases worker; process is a namespace" % label, r.returncode == 0, r.stderr)
    r = idgen("snowflake", "--registry", disc, "--layout", "discord", "--lease-field",
              "process", "--node", "worker=3")
    check("%s: --lease-field process" % label, r.returncode == 0, r.stderr)
    # A pool of two: two holders, a third is refused naming size and field.
    full = in_space(registry, "fields-full")
    lay = ["--layout", "time:41@1ms,rack:3,worker:1,sequence:12,epoch=1288834974657",
           "--node", "rack=5"]
    a = Daemon(label + "-full-a", ["--registry", full] + lay)
    b = Daemon(label + "-full-b", ["--registry", full] + lay)
    r = idgen("snowflake", "--registry", full, *lay)
    check("%s: a full pool names its size and the field" % label,
          r.returncode == 1 and 'all 2 values of field "worker" (1 bits) with rack=5 are taken: '
          '2 held by live holders' in r.stderr, r.stderr)
    a.stop()
    b.stop()


def spaces(registry, label):
    """One registry, one ID space (docs/DESIGN.md §11).  Twitter's 10 node bits
    split 5+6 with an 11-bit sequence made 250,144 duplicates of 1,000,000
    beside twitter's layout on one registry, silently.  Now: while a
    twitter daemon holds a tuple, that layout is refused (CLI and daemon),
    naming the layout in use and its holder; a named space takes it; once
    the twitter daemon has stopped, the new layout takes the space over and
    its first ID is above every ID the space issued; `registry list` groups
    by space and shows the highest ID."""
    mig, other = in_space(registry, label.split()[0] + "-mig"), in_space(registry, "other")
    a = Daemon(label + "-space-a", ["--registry", mig, "--lease-ttl-ms", "1000"])
    old = first_ids(a, 1000, "%s: a twitter daemon leases in the space" % label)
    if old is None:
        return
    r = idgen("snowflake", "-n", "1", "--registry", mig, "--layout", SEQ11)
    check("%s: another layout on the same space is refused while twitter's is held (CLI)" % label,
          r.returncode == 1 and "is in use by layout time:41@1ms,datacenter:5,worker:5,"
          "sequence:12" in r.stderr and "held or in quarantine" in r.stderr
          and "--space NAME" in r.stderr, r.stderr)
    check("%s: the refusal names the live holder" % label,
          (":%d:" % a.p.pid) in r.stderr, r.stderr)
    b = Daemon(label + "-space-b", ["--registry", mig, "--layout", SEQ11], wait=False)
    code = b.p.wait(30)
    check("%s: ... and refused by the daemon too, which exits" % label,
          code != 0 and "is in use by layout" in b.log(), b.log()[-600:])
    r = idgen("snowflake", "-n", "3", "--registry", other, "--layout", SEQ11)
    check("%s: a named space takes that layout beside twitter's" % label, r.returncode == 0,
          r.stderr)
    more = a.ids(1000) or []
    a.stop()
    old_max = max(old + more)
    # The old holder stopped (released: free at once): the new layout takes over.
    c = Daemon(label + "-space-c", ["--registry", mig, "--layout", SEQ11])
    new = first_ids(c, 1000, "%s: after the twitter daemon stopped, the new layout leases" % label)
    if new is not None:
        check("%s: the new layout's IDs are all above every ID the space issued before" % label,
              min(new) > old_max, "min new %d, old max %d" % (min(new), old_max))
    r = idgen("snowflake", "-n", "1", "--registry", mig)
    check("%s: now twitter's layout is the one refused" % label,
          r.returncode == 1 and "is in use by layout " + SEQ11 in r.stderr, r.stderr)
    lst = idgen("registry", "list", "--registry", registry)
    m = re.search(r"\nspace %s\n  highest ID (\d+)" % re.escape(label.split()[0] + "-mig"),
                  lst.stdout)
    check("%s: registry list shows the space with its highest ID and layout" % label,
          lst.returncode == 0 and m is not None and int(m.group(1)) >= max(new or [0])
          and ("  layout     " + SEQ11) in lst.stdout and "\nspace other\n" in lst.stdout,
          lst.stdout[-1500:] + lst.stderr)
    c.stop()


def registry_cli(registry, label, refused_re, extra=()):
    d = Daemon(label + "-list", ["--registry", registry, "--node", "datacenter=9"] + list(extra))
    ids = d.ids(1)
    w = worker_of(ids[0]) if ids else -1
    node = "datacenter=9,worker=%d" % w
    line, r = list_row(registry, node)
    check("%s: registry list shows the daemon's lease as held" % label,
          r.returncode == 0 and line and re.search(r" held ", line)
          and (":%d:" % d.p.pid) in line, (r.stdout[-600:], r.stderr))
    r = idgen("registry", "free", "--registry", registry, TWITTER_POOL, node)
    check("%s: registry free refuses a live holder" % label,
          r.returncode == 1 and re.search(refused_re, r.stderr), (r.returncode, r.stderr))
    check("%s: the refused free did not disturb the holder" % label, d.ids(1) is not None)
    return d, w


def mix_pairs(registry, label):
    """Every ordered pair of lease fields, on one registry: the second
    holder never gets the first one's tuple (52df1fb gave both (0,0,0):
    61,440 of 81,920 IDs identical)."""
    for a in MIX_FIELDS:
        for b in MIX_FIELDS:
            da = Daemon("%s-%s-%s-a" % (label, a, b), ["--registry", registry] + mix_args(a))
            db = Daemon("%s-%s-%s-b" % (label, a, b), ["--registry", registry] + mix_args(b))
            ia, ib = da.ids(4000), db.ids(4000)
            ok = ia is not None and ib is not None
            ta, tb = ({mix_tuple(i) for i in x} for x in (ia or [], ib or []))
            check("%s: lease %s, then %s: tuples %s and %s, no ID in common" %
                  (label, a, b, sorted(ta), sorted(tb)),
                  ok and ta.isdisjoint(tb) and not set(ia) & set(ib),
                  (da.log()[-300:], db.log()[-300:]))
            da.stop()
            db.stop()


# What differs between backends in the contract: how soon a killed holder's
# tuple is free (file: at once, its flock gone; postgres: after its TTL and
# a quarantine of one TTL), and how `registry free` names a live holder.
BACKENDS = {
    "file": {"kill9": ([], 0.0), "held": "locked by a live process"},
    "postgres": {"kill9": (["--lease-ttl-ms", "2000"], 4.0),
                 "held": r"is held by \S+ \(its lease expires in"},
    # An etcd lease of TTL + quarantine (4 s); etcd's leader looks for
    # expired leases every 500 ms.
    "etcd": {"kill9": (["--lease-ttl-ms", "2000"], 4.7),
             "held": r"is held by \S+ \(its lease expires in"},
}


def contract(backend, uri):
    """The registry contract: the same checks, word for word, on every
    backend (file:, postgres://; etcd:// will join): 32 processes at once
    with no duplicate, a holder killed with SIGKILL and its tuple taken over
    above its last ID, a restart under a clock 10 s behind, the leased
    field's choice and a full pool, `registry list` and `registry free`
    against a live holder, and every pair of lease fields meeting on one
    node tuple."""
    args, free_after_s = BACKENDS[backend]["kill9"]
    many_processes(uri, backend + " 32 processes")
    kill9(uri, backend + " kill -9", args, free_after_s=free_after_s)
    clock_step(uri, backend + " clock step -10 s")
    field_choice(uri, backend + " fields")
    d, _ = registry_cli(uri, backend + " registry", BACKENDS[backend]["held"])
    d.stop()
    if backend != "file":
        # The shortest TTL: etcd says a lease's time left in whole seconds,
        # cut, and a 2 s etcd lease (TTL 1 s + quarantine 1 s) read "1 s
        # left" as "in quarantine", so a free without --force took the tuple
        # from its live holder.
        d, _ = registry_cli(uri, backend + " registry, TTL 1 s", BACKENDS[backend]["held"],
                            ["--lease-ttl-ms", "1000"])
        d.stop()
    mix_pairs(uri, backend + " pairs")
    spaces(uri, backend + " spaces")


def main():
    backend = ARGS[0] if ARGS else ""
    if backend not in BACKENDS:
        sys.exit("usage: suite_contract.py PATH/TO/idgen file|postgres|etcd")
    if backend == "file":
        contract("file", WORK.registry("reg-contract"))
    elif backend == "etcd":
        etcd = etcd_cluster()
        try:
            contract("etcd", etcd.uri)
        finally:
            etcd.stop()
    else:
        pg = postgres()
        try:
            contract("postgres", pg.uri)
        finally:
            pg.stop()


if __name__ == "__main__":
    run(main)
