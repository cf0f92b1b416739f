#!/usr/bin/env python3
"""What only the postgres:// registry has, beside the contract
(tests/registry/harness.py says how the suites fit): free --force fencing a
live holder, PostgreSQL stopped or paused under a daemon, a node field above
the time field, clock skew, hostile database defaults, starters waiting for
the schema lock, the schema mended, a deleted row's IDs kept; one registry
whatever the session's search_path, an earlier version's registry in another
schema refused (and one that appears beside a running daemon: fenced out),
unknown URI parameters refused.

Usage: python3 tests/registry/suite_pg.py PATH/TO/idgen  (or: ctest -R registry.postgres)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()
from shared import *  # noqa: F401,F403  scenarios shared with other suites


def pg_outage(pg, label):
    """PostgreSQL stopped under a daemon: it issues until its lease can no
    longer be shown valid (or its mark is reached), then answers 503; the
    worker ID is not granted to anyone before; when PostgreSQL returns,
    service resumes without a restart."""
    # With a password in the URI (trust authentication ignores it): it is
    # never shown.
    reg = pg.uri.replace("postgres://postgres@", "postgres://postgres:s3cret@")
    d = Daemon(label, ["--registry", reg, "--node", "datacenter=11", "--lease-ttl-ms", "2000",
                       "--resp", "127.0.0.1:0"])
    first = first_ids(d, 10, "%s: serves with a postgres lease" % label)
    if first is None:
        return
    st, info = d.get("/info")
    check("%s: the password is not shown in the log or /info" % label,
          "s3cret" not in d.log() + info and "postgres:***@" in info and "postgres:***@" in d.log(),
          info)
    w = worker_of(first[0])
    time.sleep(0.8)  # a renewal or two
    t0 = time.monotonic()
    pg.ctl("pause")
    served_after, t_503, body503 = [], None, ""
    while time.monotonic() - t0 < 6:
        st, body = d.get("/id")
        if st == 200:
            served_after.append(int(body))
        elif st == 503:
            t_503, body503 = time.monotonic() - t0, body
            break
        time.sleep(0.02)
    check("%s: issues while the lease is still known valid" % label, len(served_after) > 0)
    check("%s: then 503 within the TTL of 2 s, +1 s for a busy machine (%.2f s after the stop)"
          % (label, t_503 or -1),
          t_503 is not None and t_503 <= 3.0, body503)
    check("%s: 503 says why (lease or mark)" % label,
          "lease lost" in body503 or "high-water mark" in body503, body503)
    st, body = d.get("/ready")
    check("%s: /ready 503 with the reason and the lease line" % label,
          st == 503 and re.search(r"lease worker=%d node=datacenter=11,worker=%d generation=\d+ valid_ms=\S+ expires_in_ms=\S+ mark=" % (w, w), body), (st, body))
    # Nobody else can get the worker ID meanwhile (the registry is down); the
    # lease then runs out by the daemon's own clock.
    invalid = wait_for(lambda: re.search(r"^idgen_lease_valid_seconds 0(\.0+)?$",
                                         d.get("/metrics")[1], re.M), 4, 0.05)
    check("%s: the lease can no longer be shown valid within the TTL" % label, invalid)
    mt = d.get("/metrics")[1]
    check("%s: idgen_lease_held 0, idgen_ready 0, idgen_healthy 1 (alive: no restart wanted)" % label,
          all(re.search(r"^%s$" % ln, mt, re.M) for ln in ("idgen_lease_held 0", "idgen_ready 0", "idgen_healthy 1")),
          re.findall(r"^idgen_(?:lease_held|ready|healthy) .*$", mt, re.M))
    st, body = d.get("/id")
    check("%s: 503 lease lost, naming the failed renewals" % label,
          st == 503 and "lease lost: not renewed within its TTL (2000 ms)" in body, body)
    # Once the daemon itself says the lease is lost (/ready, from its lease
    # supervisor), ULIDs and UUIDv7s are still served.
    wait_for(lambda: "lease lost" in d.get("/ready")[1], 2, 0.02)
    st_u, body_u = d.get("/ulid")
    st_v, body_v = d.get("/uuid7")
    check("%s: ULIDs and UUIDv7s still served while /ready says lease lost" % label,
          st_u == 200 and len(body_u.strip()) == 26 and st_v == 200 and len(body_v.strip()) == 36,
          (st_u, body_u, st_v, body_v))
    m = re.search(r"event=listen proto=resp addr=127\.0\.0\.1:(\d+)", d.log())
    resp = resp_call(int(m.group(1)), ["ULID"], ["UUID7"], ["ID"]) if m else None
    check("%s: over RESP too: ULID and UUID7 answered, ID refused (lease lost)" % label,
          resp is not None and re.fullmatch(r"\$26\r\n[0-9A-Z]{26}\r\n", resp[0]) is not None
          and re.fullmatch(r"\$36\r\n[0-9a-f-]{36}\r\n", resp[1]) is not None
          and resp[2].startswith("-ERR lease lost"), resp)
    pg.ctl("resume")
    t1 = time.monotonic()
    back = wait_for(lambda: d.ids(5), 10, 0.05)
    check("%s: service resumes without a restart (%.2f s after PostgreSQL returned)"
          % (label, time.monotonic() - t1), back is not None and d.p.poll() is None)
    held = wait_for(lambda: re.search(r"^idgen_lease_held 1$", d.get("/metrics")[1], re.M), 2, 0.05)
    check("%s: idgen_lease_held 1 again" % label, held)
    every = first + served_after + (back or [])
    check("%s: the same worker ID throughout; IDs increase" % label,
          all(worker_of(i) == w for i in every) and every == sorted(set(every)))
    # The lease thread logs what it sees every 50 ms; service itself resumes as
    # soon as the generator's lease is valid again, maybe before that look.
    check("%s: logged lease_lost and lease_valid" % label,
          wait_for(lambda: "event=lease_lost" in d.log() and "event=lease_valid" in d.log(), 2),
          d.log()[-800:])
    check("%s: TERM exits 0" % label, d.stop() == 0)
    row, r = list_row(reg, "datacenter=11,worker=%d" % w)
    check("%s: the stopped daemon released its lease: free at once, not in quarantine" % label,
          row and re.search(r" free ", row), r.stdout[-400:])


HIGH_NODE_LAYOUT = "worker:3,time:41@1ms,sequence:12,epoch=1288834974657"


def node_above_time(registry, label):
    """A node field above the time field: a daemon fenced off worker 1 leases
    worker 0 again, so its IDs after the swap are below the ones before, which
    DESIGN says and the log says (event=ids_decrease); no ID repeats."""
    args = ["--registry", registry, "--layout", HIGH_NODE_LAYOUT, "--lease-ttl-ms", "1000"]
    d0 = Daemon(label + "-0", args)
    d1 = Daemon(label + "-1", args)
    d0.stop()  # worker 0 free again at once (released)
    before = d1.ids(50) or []
    check("%s: the second daemon serves on worker 1" % label,
          before and all(i >> 53 == 1 for i in before), before[:1])
    r = idgen("registry", "list", "--registry", registry, "--json")
    pools = {json.loads(l)["pool"] for l in r.stdout.splitlines()
             if l.startswith("{") and json.loads(l).get("layout", "").startswith("worker:3,")}
    r = idgen("registry", "free", "--registry", registry, "--force", *(list(pools)[:1]), "worker=1")
    check("%s: free --force fences it" % label, r.returncode == 0 and len(pools) == 1,
          (pools, r.stderr))
    warned = wait_for(lambda: "event=ids_decrease" in d1.log(), 8, 0.05)
    check("%s: it leases again and logs ids_decrease" % label, warned, d1.log()[-800:])
    after = wait_for(lambda: d1.ids(50), 5, 0.05) or []
    check("%s: ... truly: its IDs after the swap are lower, on worker 0, none repeated" % label,
          after and before and after[-1] < before[0] and after[0] >> 53 == 0
          and not set(after) & set(before), (before[-1:], after[:1]))
    d1.stop()


def wait_sleeping(uri, needle, timeout=20):
    """Until the session on uri's database whose query holds `needle` is
    inside pg_sleep(): the psql started just before has taken the lock its
    earlier statements ask for (a fixed sleep was too short on a loaded
    machine, and the test then measured no wait at all).  The needle and the
    database matter: an earlier test's killed psql leaves its backend
    sleeping on."""
    deadline = time.monotonic() + timeout
    q = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'"
         " AND datname = current_database() AND pid <> pg_backend_pid()"
         " AND position('%s' in query) > 0" % needle)
    while time.monotonic() < deadline:
        r = subprocess.run(["psql", "-qtAX", uri, "-c", q], capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() not in ("", "0"):
            return
        time.sleep(0.05)
    check("a psql session reached pg_sleep within %d s" % timeout, False)


def hostile_defaults(pg, label):
    """A database whose defaults would break the registry (REPEATABLE READ,
    a 60 s statement timeout, asynchronous commit): the registry's session
    settings override them, and 16 processes at once still each get a
    worker ID."""
    sql = ("ALTER DATABASE postgres SET default_transaction_isolation = 'repeatable read';"
           "ALTER DATABASE postgres SET statement_timeout = '60s';"
           "ALTER DATABASE postgres SET synchronous_commit = off;")
    r = subprocess.run(["psql", "-q", "-X", pg.uri, "-c", sql], capture_output=True, text=True)
    if not check("%s: set with psql" % label, r.returncode == 0, r.stderr):
        return
    many_processes(pg.uri, label, n=16, count=20000)
    # A row locked elsewhere (here: psql, holding worker 0 FOR UPDATE for
    # 8 s) costs an acquirer at most lock_timeout (2 s), not the statement
    # timeout: it moves on to the next free ID.
    r = idgen("snowflake", "--registry", pg.uri, "--datacenter", "15")
    check("%s: worker 0 of datacenter=15 used once (a row exists)" % label,
          r.returncode == 0 and worker_of(int(r.stdout)) == 0, r.stderr)
    lock = subprocess.Popen(["psql", "-q", "-X", pg.uri, "-c",
                             "BEGIN; SELECT 1 FROM idgen.idgen_nodes WHERE pool = '%s'"
                             " AND node = %d FOR UPDATE; SELECT pg_sleep(8); COMMIT;"
                             % (TWITTER_POOL, 15 << 17)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_sleeping(pg.uri, "FOR UPDATE")
    t = time.monotonic()
    r = idgen("snowflake", "--registry", pg.uri, "--datacenter", "15")
    took = time.monotonic() - t
    check("%s: past a locked row in %.1f s (lock_timeout 2 s), on worker 1" % (label, took),
          r.returncode == 0 and worker_of(int(r.stdout)) == 1 and took < 4.5, r.stderr)
    lock.kill()
    lock.wait()


def hold_for_3_5_s(uri, statement):
    """A psql session that runs `statement` in a transaction held open for
    3.5 s, once it has taken what the statement asks for (it is sleeping)."""
    lock = subprocess.Popen(["psql", "-q", "-X", uri, "-c",
                             "BEGIN; %s; SELECT pg_sleep(3.5); COMMIT;" % statement],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_sleeping(uri, statement)
    return lock


def schema_wait(pg, label):
    """Starters on an empty database while another session holds the schema
    lock (a server slow to create the tables, as under load in CI): they
    wait for it on their side instead of failing at lock_timeout (2 s), and
    all start once it is let go."""
    r = subprocess.run(["psql", "-q", "-X", pg.uri, "-c", "CREATE DATABASE schema_wait"],
                       capture_output=True, text=True)
    if not check("%s: an empty database" % label, r.returncode == 0, r.stderr):
        return
    uri = pg.uri.rsplit("/", 1)[0] + "/schema_wait"
    lock = hold_for_3_5_s(uri, "SELECT pg_advisory_xact_lock(7283920174628301)")
    t = time.monotonic()
    procs = [subprocess.Popen([IDGEN, "snowflake", "-n", "5", "--registry", uri, "--datacenter",
                               "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    took = time.monotonic() - t
    lock.wait()
    ids = [int(x) for o, _ in outs for x in o.split()]
    check("%s: 4 starters waited %.1f s for the schema lock (held 3 s more), then each made 5 IDs"
          % (label, took), all(p.returncode == 0 for p in procs) and len(set(ids)) == 20
          and took > 2.5, [e for _, e in outs if e])
    # The same for the pool row's insert: idgen_pools locked against writes
    # for 3.5 s (by hand here; a slow commit of another starter's insert).
    lock = hold_for_3_5_s(uri, "LOCK TABLE idgen.idgen_pools IN EXCLUSIVE MODE")
    t = time.monotonic()
    r = idgen("snowflake", "--registry", in_space(uri, "sony"), "--layout", "sonyflake")
    took = time.monotonic() - t
    lock.wait()
    check("%s: a starter of a new pool waited %.1f s for idgen_pools (locked 3 s more)"
          % (label, took), r.returncode == 0 and took > 2.5, r.stderr)


def deleted_row_takeover(pg, label):
    """A row of idgen_nodes deleted by hand (a decommissioned host's tuple)
    keeps its mark in the pool's floor, and now its key too: a layout that
    takes the ID space over is refused, or starts above that tuple's IDs,
    though its node field sits above the time field (a hostile review:
    1,500,864 of 30,000,000 IDs repeated when the key was lost)."""
    y = "w:1,time:41,sequence:12,epoch=1288834974657"
    sp = in_space(pg.uri, "deleted-row")
    a = Daemon(label + "-y0", ["--registry", sp, "--layout", y, "--lease-ttl-ms", "1000"])
    b = Daemon(label + "-y1", ["--registry", sp, "--layout", y, "--lease-ttl-ms", "1000"])
    old = (a.ids(50000) or []) + (b.ids(50000) or [])
    a.stop()
    b.stop()
    w1 = [i for i in old if i >> 53 == 1]
    if not check("%s: two holders of %s, one on w=1 (above the time field)" % (label, y),
                 len(old) == 100000 and len(w1) == 50000, (len(old), len(w1))):
        return
    r = subprocess.run(["psql", "-qAtX", pg.uri, "-c",
                        "DELETE FROM idgen.idgen_nodes WHERE pool LIKE 'spaces/deleted-row/%%' "
                        "AND node = %d" % (1 << 53)], capture_output=True, text=True)
    check("%s: its row deleted by hand" % label, r.returncode == 0 and "DELETE 1" not in r.stderr,
          r.stderr)
    ticks = [(i >> 12) & ((1 << 41) - 1) for i in w1]
    # A layout whose IDs at this moment land on w=1's (its epoch chosen so).
    ez = int(time.time() * 1000) + 4000 - (2 ** 40 + (min(ticks) + max(ticks)) // 4)
    z = "time:41,worker:1,sequence:12,epoch=%d" % ez
    r = idgen("snowflake", "-n", "3000000", "--registry", sp, "--layout", z)
    new = [int(x) for x in r.stdout.split()]
    check("%s: the new layout is refused or starts above every ID of the deleted tuple" % label,
          (r.returncode != 0 and "above every ID" in r.stderr)
          or (new and min(new) > max(w1) and not set(new) & set(old)),
          (r.returncode, r.stderr[:300], len(set(new) & set(old))))


def schema_mended(pg, label):
    """A floor-keeping trigger dropped or disabled by hand is put back by the
    next starter: without the truncate trigger, a TRUNCATE of idgen_nodes
    handed a live holder's worker ID to a newcomer with the floor unraised
    (a hostile review shared 1,067,728 IDs that way)."""
    r = subprocess.run(["psql", "-q", "-X", pg.uri, "-c", "CREATE DATABASE schema_mend"],
                       capture_output=True, text=True)
    if not check("%s: an empty database" % label, r.returncode == 0, r.stderr):
        return
    uri = pg.uri.rsplit("/", 1)[0] + "/schema_mend"

    def sql(q):
        return subprocess.run(["psql", "-qtAX", uri, "-c", q], capture_output=True, text=True)
    count = ("SELECT count(*) FROM pg_trigger WHERE tgenabled IN ('O', 'A') AND tgname IN"
             " ('idgen_nodes_removed', 'idgen_nodes_truncated', 'idgen_pools_kept')")
    r = idgen("snowflake", "--registry", uri, "--datacenter", "4")
    check("%s: a first starter makes the schema" % label,
          r.returncode == 0 and sql(count).stdout.strip() == "3", r.stderr)
    for breaker in ("DROP TRIGGER idgen_nodes_truncated ON idgen.idgen_nodes",
                    "ALTER TABLE idgen.idgen_pools DISABLE TRIGGER idgen_pools_kept",
                    "DROP TRIGGER idgen_nodes_removed ON idgen.idgen_nodes",
                    # an earlier version's function, which found its tables
                    # through the session's search_path
                    "ALTER FUNCTION idgen.idgen_nodes_removed() RESET search_path"):
        b = sql(breaker)
        r = idgen("snowflake", "--registry", uri, "--datacenter", "4")
        n = sql(count).stdout.strip()
        pinned = sql("SELECT count(*) FROM pg_proc WHERE proconfig IS NOT NULL AND proname IN"
                     " ('idgen_nodes_removed', 'idgen_pools_kept')").stdout.strip()
        check("%s: after %s, the next starter puts it back (%s of 3 triggers, %s of 2 functions"
              " with their search_path)" % (label, breaker, n, pinned),
              b.returncode == 0 and r.returncode == 0 and n == "3" and pinned == "2",
              b.stderr + r.stderr)
    # And it works: a TRUNCATE raises the pool's floor to the marks it removes.
    sql("DROP TRIGGER idgen_nodes_truncated ON idgen.idgen_nodes")
    idgen("snowflake", "--registry", uri, "--datacenter", "4")
    floor_q = "SELECT floor_ms FROM idgen.idgen_pools WHERE pool = '%s'" % TWITTER_POOL
    before = sql(floor_q).stdout.strip()
    mark = sql("SELECT max(mark_ms) FROM idgen.idgen_nodes WHERE pool = '%s'" % TWITTER_POOL)
    # as a session whose search_path has no idgen in it (the trigger's
    # function names its tables)
    t = sql("SET search_path = pg_catalog; TRUNCATE idgen.idgen_nodes")
    after = sql(floor_q).stdout.strip()
    mark = mark.stdout.strip()
    check("%s: a TRUNCATE after the mend raised the floor from %s to the marks' %s (now %s)"
          % (label, before, mark, after),
          t.returncode == 0 and mark.isdigit() and before.isdigit() and after.isdigit()
          and int(mark) > int(before) and int(after) >= int(mark), t.stderr)


def psql(uri, statements):
    """psql -c STATEMENTS on uri, stopping at the first error."""
    return subprocess.run(["psql", "-qtAX", "-v", "ON_ERROR_STOP=1", uri, "-c", statements],
                          capture_output=True, text=True)


def search_path_roles(pg, label):
    """Two roles whose search_path leads each to a schema of its own (ALTER
    ROLE ... SET search_path), and a connection with
    options=-csearch_path=other, on one database: one registry.  Their
    daemons lease three tuples and, asked at the same time, never issue the
    same ID; command-line holders under the three mixed make no duplicate
    either.  (The tables were found through search_path: each made its own
    and all leased worker 0, 1,369,216 duplicates in 4,000,000 IDs.)"""
    r = psql(pg.uri, "CREATE DATABASE search_path")
    db = pg.uri.rsplit("/", 1)[0] + "/search_path"
    setup = psql(db, "CREATE ROLE idgen_a LOGIN; CREATE ROLE idgen_b LOGIN IN ROLE idgen_a;"
                     "GRANT CREATE ON DATABASE search_path TO idgen_a;"
                     "CREATE SCHEMA sa AUTHORIZATION idgen_a; CREATE SCHEMA sb AUTHORIZATION idgen_b;"
                     "CREATE SCHEMA other;"
                     "ALTER ROLE idgen_a SET search_path = sa; ALTER ROLE idgen_b SET search_path = sb")
    host = db.split("@", 1)[1]
    ua, ub = "postgres://idgen_a@" + host, "postgres://idgen_b@" + host
    uo = db + "?options=-csearch_path%3Dother"
    paths = [psql(u, "SHOW search_path").stdout.strip() for u in (ua, ub, uo)]
    if not check("%s: roles idgen_a, idgen_b (a member of idgen_a) and a URI with options: "
                 "search_path %s" % (label, ", ".join(paths)),
                 r.returncode == 0 and setup.returncode == 0 and paths == ["sa", "sb", "other"],
                 r.stderr + setup.stderr):
        return
    # idgen_a first: the registry's owner (idgen_b uses it as a member of idgen_a)
    ds = [Daemon("%s-%s" % (label, k), ["--registry", u, "--node", "datacenter=5"])
          for k, u in (("a", ua), ("b", ub), ("options", uo))]
    firsts = [d.ids(1) for d in ds]
    if not check("%s: a daemon of each serves" % label, all(firsts),
                 [d.log()[-300:] for d in ds]):
        return
    workers = [worker_of(f[0]) for f in firsts]
    check("%s: they lease three tuples (workers %s)" % (label, workers), len(set(workers)) == 3)
    got = [[] for _ in ds]

    def fetch(k):
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            got[k].extend(ds[k].ids(5000) or [])
    threads = [threading.Thread(target=fetch, args=(k,)) for k in range(len(ds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for g in got for i in g]
    check("%s: asked at the same time, %d IDs, no duplicate" % (label, len(every)),
          all(got) and len(set(every)) == len(every), len(every) - len(set(every)))
    r = idgen("registry", "list", "--registry", ub)
    held = re.findall(r"^  datacenter=5,worker=\d+ +held ", r.stdout, re.M)
    check("%s: idgen_b's registry list shows the three held" % label, len(held) == 3, r.stdout)
    for d in ds:
        d.stop()
    tables = psql(db, "SELECT string_agg(DISTINCT relnamespace::regnamespace::text, ',')"
                      " FROM pg_class WHERE relname = 'idgen_nodes'").stdout.strip()
    check("%s: one idgen_nodes, in schema idgen (%s)" % (label, tables), tables == "idgen")
    # Command-line holders of the three at once: 12 processes, 4 per URI.
    procs = [subprocess.Popen([IDGEN, "snowflake", "-n", "50000", "--registry",
                               (ua, ub, uo)[k % 3] + ("&" if k % 3 == 2 else "?")
                               + "connect_timeout=15", "--datacenter", "6"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(12)]
    outs = [p.communicate(timeout=120) for p in procs]
    ids = [int(x) for o, _ in outs for x in o.split()]
    check("%s: 12 command-line holders, 4 per role or URI, at once: %d IDs, no duplicate"
          % (label, len(ids)),
          all(p.returncode == 0 for p in procs) and len(ids) == 600000 and len(set(ids)) == len(ids),
          (len(ids) - len(set(ids)), [e[:200] for _, e in outs if e][:3]))


def new_database(pg, name):
    """A database of its own on pg (a scenario's tables stay apart): its URI,
    or None if it could not be made."""
    r = psql(pg.uri, "CREATE DATABASE " + name)
    return pg.uri.rsplit("/", 1)[0] + "/" + name if r.returncode == 0 else None


def earlier_tables(db, rows):
    """An earlier version's registry in public, as it made one (through
    search_path): its three tables, and rows (datacenter, worker, holder or
    None, the SQL of its mark) of twitter's pool, held for an hour if a
    holder is given, else released.  psql's result."""
    values = ",".join("('%s', %d, %s, 1, now() + interval '%s', now() + interval '%s', %s)"
                      % (TWITTER_POOL, dc << 17 | w << 12, "'%s'" % h if h else "NULL",
                         "1 hour" if h else "0 s", "2 hours" if h else "0 s", mark)
                      for dc, w, h, mark in rows)
    return psql(db, "CREATE TABLE public.idgen_pools (pool text PRIMARY KEY, layout text NOT NULL,"
                    " floor_ms bigint NOT NULL DEFAULT 0, keys bigint NOT NULL DEFAULT 0);"
                    "CREATE TABLE public.idgen_spaces (space text PRIMARY KEY,"
                    " version bigint NOT NULL DEFAULT 0, state text NOT NULL DEFAULT '');"
                    "CREATE TABLE public.idgen_nodes (pool text NOT NULL, node bigint NOT NULL,"
                    " holder text, generation bigint NOT NULL, expires_at timestamptz NOT NULL,"
                    " free_at timestamptz NOT NULL, mark_ms bigint NOT NULL,"
                    " PRIMARY KEY (pool, node));"
                    "INSERT INTO public.idgen_nodes VALUES " + values)


def unix_ms(i):
    return twitter_fields(i)[0]


def earlier_registry(pg, label):
    """A registry an earlier version made in public (through search_path),
    and nothing in schema idgen: a starter is refused, naming public, its
    live holder and the fixes, never "drop them", and makes nothing (a
    second registry would lease its tuples again); ?schema=public uses it.
    In another database, its holders stopped with marks 2 s ahead on every
    worker of datacenter 9: moved into schema idgen as the message says, it
    is this version's registry, and a holder starts above those marks.
    (tests/test_registry_pg.c has the rest: two earlier registries, the
    mend, a schema named on purpose.)"""
    db = new_database(pg, "earlier")
    old = earlier_tables(db, [(7, 0, "old:1:aa", "0")]) if db else None
    if not check("%s: an earlier version's tables in public, worker 0 of datacenter 7 held"
                 % label, old is not None and old.returncode == 0, old and old.stderr):
        return
    r = idgen("snowflake", "--registry", db, "--datacenter", "7")
    made = psql(db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'idgen'").stdout.strip()
    check("%s: refused (exit 1), naming public, its live holder, ?schema=public and the move; "
          "nothing made" % label,
          r.returncode == 1 and not r.stdout and made == "0"
          and "schema idgen has no registry, but schema public has one an earlier idgen made "
          "(through search_path), 1 lease live (old:1:aa)" in r.stderr
          and "add ?schema=public to the URI" in r.stderr
          and "once every holder is upgraded and none of its leases is live, move it: CREATE "
          "SCHEMA IF NOT EXISTS idgen; ALTER TABLE public.idgen_nodes SET SCHEMA idgen (and "
          "idgen_pools, idgen_spaces). Never drop it" in r.stderr
          and "drop them" not in r.stderr, (r.returncode, made, r.stderr))
    r = idgen("snowflake", "--registry", db + "?schema=public", "--datacenter", "7")
    check("%s: with ?schema=public it is used: worker 1, 0 is held" % label,
          r.returncode == 0 and worker_of(int(r.stdout)) == 1, (r.returncode, r.stderr))
    # Moved, as the message says: its marks are this registry's.
    db = new_database(pg, "earlier_moved")
    mark = int(time.time() * 1000) + 2000
    old = earlier_tables(db, [(9, w, None, str(mark)) for w in range(32)]) if db else None
    r = idgen("snowflake", "--registry", db, "--datacenter", "9") if db else None
    if not check("%s: every worker of datacenter 9 stopped, marks 2 s ahead; refused, its "
                 "holders stopped" % label,
                 old is not None and old.returncode == 0 and r.returncode == 1
                 and "1 lease live" not in r.stderr and "move it: CREATE SCHEMA" in r.stderr,
                 (old and old.stderr, r and r.stderr)):
        return
    mv = psql(db, "CREATE SCHEMA IF NOT EXISTS idgen; ALTER TABLE public.idgen_nodes SET SCHEMA"
                  " idgen; ALTER TABLE public.idgen_pools SET SCHEMA idgen;"
                  " ALTER TABLE public.idgen_spaces SET SCHEMA idgen")
    r = idgen("snowflake", "--registry", db, "--datacenter", "9", "-n", "3")
    ids = [int(x) for x in r.stdout.split()] if r.returncode == 0 else []
    check("%s: moved into idgen, a holder starts above the old marks (%s > %d)"
          % (label, ids and unix_ms(ids[0]), mark),
          mv.returncode == 0 and len(ids) == 3 and unix_ms(ids[0]) > mark,
          (mv.stderr, r.stderr))


def earlier_registry_appears(pg, label):
    """An earlier version's registry appears in public while a daemon of
    this version serves (an earlier server started while none of this
    version ran, or tables made by hand: the guard stops an earlier version
    making them while one runs, which is checked first).  The daemon stops
    issuing within a TTL, fenced out at its next renewal, and /ready and
    its log say why; a new holder beside it is refused, naming it, its live
    holder and the fix; refused still once its holder stopped, until it is
    parked in schema idgen_earlier as the message says; then the daemon
    leases again by itself and new holders start, above its marks.  No ID
    repeats.  (Before: nothing looked after the registry was made, and the
    reviewer's daemons made 73,504 and 224,352 duplicates in 1.6 M.)"""
    db = new_database(pg, "appears")
    ttl = 3000
    d = Daemon(label, ["--registry", db, "--node", "datacenter=8", "--lease-ttl-ms", str(ttl)])
    first = first_ids(d, 10, "%s: a daemon serves" % label)
    if first is None:
        return
    w = worker_of(first[0])
    guard = psql(db, "SELECT pg_try_advisory_xact_lock(7283920174628301)").stdout.strip()
    check("%s: while it runs, an earlier version cannot take the lock it makes its tables under"
          % label, guard == "f", guard)
    served, stopped = [], []

    def fetch():
        deadline = time.monotonic() + 4 * ttl / 1000 + 5
        while time.monotonic() < deadline:
            got = d.ids(100)
            if got is None:
                stopped.append(time.monotonic())
                return
            served.append((time.monotonic(), got))
    t = threading.Thread(target=fetch)
    t.start()
    time.sleep(0.5)
    mark = int(time.time() * 1000) + 4000
    old = earlier_tables(db, [(8, w, "old:1:aa", str(mark))])
    appeared = time.monotonic()
    t.join()
    took = stopped[0] - appeared if stopped else -1
    check("%s: an earlier registry appeared with worker %d held: the daemon stopped issuing "
          "%.2f s later (its TTL %.1f s, +1 s for a busy machine)" % (label, w, took, ttl / 1000),
          old.returncode == 0 and stopped and took <= ttl / 1000 + 1, old.stderr)
    st, body = d.get("/ready")
    check("%s: /ready 503 says why: fenced out by the earlier registry in public" % label,
          st == 503 and "lease lost: registry: postgres: renew: fenced out: schema public has an "
          "earlier idgen's registry (1 lease live: old:1:aa)" in body
          and "move its tables into schema idgen_earlier" in body, (st, body))
    check("%s: logged as a fenced lease" % label,
          wait_for(lambda: re.search(r"event=lease_lost worker=%d generation=\d+ fenced=1 "
                                     r"reason=\"registry: postgres: renew: fenced out: schema "
                                     r"public" % w, d.log()), WAIT_S), d.log()[-800:])
    r = idgen("snowflake", "--registry", db, "--datacenter", "8")
    check("%s: a new holder is refused, naming public, its live holder and the fix" % label,
          r.returncode == 1 and not r.stdout
          and "schema public has a registry an earlier idgen made (through search_path), 1 lease "
          "live (old:1:aa)" in r.stderr and "Upgrade every holder" in r.stderr
          and "CREATE SCHEMA idgen_earlier; ALTER TABLE public.idgen_nodes SET SCHEMA "
          "idgen_earlier (and idgen_pools, idgen_spaces). Never drop it" in r.stderr
          and "drop them" not in r.stderr, (r.returncode, r.stderr))
    psql(db, "UPDATE public.idgen_nodes SET holder = NULL, expires_at = now(), free_at = now()")
    r = idgen("snowflake", "--registry", db, "--datacenter", "8")
    check("%s: its holder stopped: still refused while it is where an earlier version finds it"
          % label, r.returncode == 1 and "lease live" not in r.stderr
          and "CREATE SCHEMA idgen_earlier" in r.stderr, r.stderr)
    mv = psql(db, "CREATE SCHEMA idgen_earlier; ALTER TABLE public.idgen_nodes SET SCHEMA"
                  " idgen_earlier; ALTER TABLE public.idgen_pools SET SCHEMA idgen_earlier;"
                  " ALTER TABLE public.idgen_spaces SET SCHEMA idgen_earlier")
    back = wait_for(lambda: d.ids(10), WAIT_S, 0.1)
    check("%s: parked as the message says: the daemon leases again by itself, above the old "
          "mark (%s > %d)" % (label, back and unix_ms(back[0]), mark),
          mv.returncode == 0 and back and unix_ms(back[0]) > mark
          and "event=lease_acquired" in d.log(), (mv.stderr, d.log()[-600:]))
    r = idgen("snowflake", "--registry", db, "--datacenter", "8", "-n", "1000")
    cli = [int(x) for x in r.stdout.split()] if r.returncode == 0 else []
    check("%s: and a new holder starts, above the old mark" % label,
          len(cli) == 1000 and unix_ms(cli[0]) > mark, r.stderr)
    every = first + [i for _, g in served for i in g] + (back or []) + cli
    check("%s: %d IDs, no duplicate" % (label, len(every)), len(set(every)) == len(every),
          len(every) - len(set(every)))
    d.stop()


def main():
    pg = postgres()
    try:
        fence_by_hand(pg, "postgres fence")
        pg_outage(pg, "postgres outage")
        paused_holder(pg, "postgres SIGSTOP")
        node_above_time(in_space(pg.uri, "high"), "postgres node above time")
        clock_skew(pg, "postgres clock skew")
        hostile_defaults(pg, "postgres hostile defaults")
        schema_wait(pg, "postgres schema lock")
        schema_mended(pg, "postgres schema mended")
        deleted_row_takeover(pg, "postgres deleted row")
        search_path_roles(pg, "postgres search_path")
        earlier_registry(pg, "postgres earlier registry")
        earlier_registry_appears(pg, "postgres earlier registry appears")
        unknown_uri_params(pg.uri, "postgres URI", ["space", "schema", "libpq's"])
    finally:
        pg.stop()


if __name__ == "__main__":
    run(main)
