"""The worker-ID registry end to end: unique, fenced and durable (idgen.h),
and the registry of docs/DESIGN.md §11.

Usage: python3 tests/registry_test.py PATH/TO/idgen [contract file|postgres|etcd] [file|pg|etcd|swap|faults|mix]...

Runs the real `idgen snowflake` and `idgen serve` against a file: registry
in a temporary directory, a throwaway PostgreSQL started on loopback with
tests/pg_server.sh (as the postgres user) and a throwaway etcd cluster
started with tests/etcd_server.sh, each stopped at the end.  `contract
BACKEND` runs the registry contract, the same checks on every backend (see
contract()): 32 processes at once, kill -9 of a holder, a restart under a
clock stepped back 10 s (libfaketime), the field choice and a full pool,
`idgen registry list|free`, every pair of lease fields.  The other groups
test what one backend alone has: `file` (a lock file replaced under a
daemon, start time), `pg` (free --force fencing a live holder, PostgreSQL
stopped or paused under a daemon, hostile defaults, starters waiting for
the schema lock), `etcd` (on 3 members: free --force fencing, a paused
holder, clock skew, members and the leader killed under a daemon, the
majority lost and back, authentication; TLS with client certificates),
`swap` and `faults` (a file:
holder paused, its lock removed, failing mark writes), `mix` (holders of
every lease field mixed, with removed records).  Prints
one line per check and "N passed, M failed"; exits 1 if any check failed.
"""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import checks  # tests/checks.py: the tally

if len(sys.argv) < 2:
    sys.exit("usage: registry_test.py PATH/TO/idgen [contract file|postgres|etcd] "
             "[file|pg|etcd|swap|faults|mix]...")
IDGEN = os.path.abspath(sys.argv[1])
GROUPS = sys.argv[2:] or ["file", "pg"]
# "contract BACKEND" names a backend, not a group.
OTHER = [g for i, g in enumerate(GROUPS) if g != "contract" and (i == 0 or GROUPS[i - 1] != "contract")]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = tempfile.mkdtemp(prefix="idgen-registry-test-")
os.chmod(TMP, 0o755)  # the postgres user reaches its data directory below
TWITTER_EPOCH = 1288834974657
TWITTER_POOL = "epoch=1288834974657,tick=1ms,time@22,sequence@0:12"
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
ASAN = b"AddressSanitizer" in open(IDGEN, "rb").read()
# Sanitizer builds run slower: make sanitize and make tsan set a divisor.
SCALE = max(1, int(os.environ.get("IDGEN_TEST_SCALE", "1")))
DAEMONS = []


def check(name, cond, detail=""):
    return checks.report(name, cond, detail, limit=600)


def faketime_usable(label):
    """libfaketime can be preloaded here (present; not an ASan build); says
    why not as a failed check or a SKIP line."""
    if not os.path.exists(FAKETIME):
        check("%s: libfaketime present (scripts/install-deps.sh)" % label, False, FAKETIME)
        return False
    if ASAN:
        print("SKIP %s: libfaketime cannot be preloaded into an ASan build" % label)
        return False
    return True


def faketime_env(label, offset):
    """The environment of a process whose wall clock is `offset` ("-10s")
    from the real one, through a stamp file that can be rewritten later (the
    monotonic clock is left alone)."""
    stamp = os.path.join(TMP, label.replace(" ", "-") + ".faketime")
    with open(stamp, "w") as f:
        f.write(offset + "\n")
    return {"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1"}, stamp


def idgen(*args, env=None, timeout=60):
    e = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    e.update(env or {})
    return subprocess.run([IDGEN] + list(args), capture_output=True, text=True, env=e,
                          timeout=timeout)


def twitter_fields(i):
    """(unix_ms, datacenter, worker, sequence) of a twitter ID."""
    return ((i >> 22) + TWITTER_EPOCH, (i >> 17) & 31, (i >> 12) & 31, i & 4095)


def worker_of(i):
    return twitter_fields(i)[2]


class Daemon:
    """`idgen serve` on free loopback ports, read back from its log."""

    def __init__(self, name, args, env=None, wait=True, cwd=None, user=None):
        self.name = name
        self.logpath = os.path.join(TMP, name + ".log")
        e = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
        e.update(env or {})
        # As another user (setpriv execs, so the pid is the daemon's).
        pre = ["setpriv", "--reuid=" + user, "--regid=nogroup", "--clear-groups"] if user else []
        with open(self.logpath, "ab") as log:
            self.p = subprocess.Popen(pre + [IDGEN, "serve", "--http", "127.0.0.1:0", "--resp",
                                             "off", "--threads", "1"] + list(args),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=log, env=e, cwd=cwd)
        DAEMONS.append(self)
        self.port = None
        if wait:
            self.wait_listening()

    def wait_listening(self, seconds=15):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = re.search(r"event=listen proto=http addr=127\.0\.0\.1:(\d+)", self.log())
            if m:
                self.port = int(m.group(1))
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.01)
        return False

    def log(self):
        with open(self.logpath, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def get(self, path):
        """(status, body) of GET path; (0, error) if the daemon did not answer."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            c.request("GET", path)
            r = c.getresponse()
            out = (r.status, r.read().decode())
            c.close()
            return out
        except (OSError, http.client.HTTPException) as e:
            return (0, str(e))

    def ids(self, n=1):
        st, body = self.get("/id?count=%d" % n)
        return [int(x) for x in body.split()] if st == 200 else None

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def first_ids(d, n, name):
    """The daemon's first n IDs, checked as `name`; None, with the daemon
    stopped, if it does not serve."""
    ids = d.ids(n)
    if not check(name, ids is not None, d.log()[-500:]):
        d.stop()
    return ids


def resp_call(port, *commands):
    """Each command (a list of words) sent over one RESP connection; the raw
    replies, one per command (single-line or bulk replies only)."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as so:
        f = so.makefile("rb")
        for words in commands:
            so.sendall(("*%d\r\n" % len(words)).encode() +
                       b"".join(b"$%d\r\n%s\r\n" % (len(w), w.encode()) for w in words))
            line = f.readline()
            if line.startswith(b"$") and int(line[1:]) >= 0:
                line += f.read(int(line[1:]) + 2)
            out.append(line.decode("utf-8", "replace"))
    return out


def wait_for(pred, seconds, step=0.02):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


# ------------------------------------------------------------ many processes


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


# -------------------------------------------------------------- kill -9


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
        r = idgen("snowflake", "--registry", registry, *lay)
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


# ------------------------------------------------- the clock stepped back


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
        m = re.search(r"^idgen_clock_borrowed_ms (\d+)", body, re.M)
        check("%s: it says it borrows (idgen_clock_borrowed_ms ~ 10000)" % label,
              m and 8000 <= int(m.group(1)) <= 12000, m and m.group(0))
    b.stop()
    other.stop()


# --------------------------------------------------- field choice, full pool


def in_space(registry, name):
    """REGISTRY's URI with ?space=NAME (or &space=NAME)."""
    return registry + ("&" if "?" in registry else "?") + "space=" + name


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
          r.returncode == 1 and 'all 2 values of field "worker" (1 bits) with rack=5 are held'
          in r.stderr, r.stderr)
    a.stop()
    b.stop()


# ------------------------------------------------------------ ID spaces


SEQ11 = "time:41@1ms,datacenter:5,worker:6,sequence:11,epoch=1288834974657"


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
        ids = wait_for(lambda: d.ids(1), 5, 0.05)
        if not ids:
            break
        lock = swap_lock(registry, 15, ids[0])
        if not os.path.exists(lock):
            break
        os.rename(lock, lock + ".moved.%d" % n)
        if not wait_for(lambda: d.log().count("event=lease_acquired") > n, 6):
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


def list_row(registry, node):
    """The `idgen registry list` line of tuple `node` in twitter's pool."""
    r = idgen("registry", "list", "--registry", registry)
    rows, pool = [], None
    for l in r.stdout.splitlines():
        if l.startswith("pool "):
            pool = l[5:]
        elif pool == TWITTER_POOL and re.match(r"^  %s +" % re.escape(node), l):
            rows.append(l)
    return (rows[0] if rows else None), r


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


# -------------------------------------------- a lease is a whole node tuple

MIX_LAYOUT = "time:41,region:3,datacenter:4,worker:4,sequence:11,epoch=1288834974657"
MIX_POOL = "epoch=1288834974657,tick=1ms,time@22,sequence@0:11"
MIX_FIELDS = ("region", "datacenter", "worker")


def mix_tuple(i):
    """The node tuple of an ID of MIX_LAYOUT: its 11 node bits (region 3,
    datacenter 4, worker 4) above the 11-bit sequence."""
    return (i >> 11) & 0x7ff


def mix_args(field):
    """A configuration: lease `field`, the other two node fields 0, so that
    every configuration's first candidate is the tuple (0, 0, 0)."""
    args = ["--layout", MIX_LAYOUT, "--lease-field", field]
    for f in MIX_FIELDS:
        if f != field:
            args += ["--node", "%s=0" % f]
    return args


def apart(label, holders):
    """holders: (name, IDs) pairs.  No ID is issued twice, and per node
    tuple the holders' ID ranges do not overlap: no two holders held one
    tuple at the same time."""
    every = [i for _, ids in holders for i in ids]
    check("%s: no duplicate among %d IDs from %d holders" % (label, len(every), len(holders)),
          len(set(every)) == len(every), "%d duplicates" % (len(every) - len(set(every))))
    ranges = {}
    for name, ids in holders:
        by = {}
        for i in ids:
            by.setdefault(mix_tuple(i), []).append(i)
        for t, xs in by.items():
            ranges.setdefault(t, []).append((min(xs), max(xs), name))
    shared = []
    for t, rs in ranges.items():
        rs.sort()
        for a, b in zip(rs, rs[1:]):
            if b[0] <= a[1]:
                shared.append((t, a[2], b[2]))
    check("%s: no node tuple held by two holders at once (%d tuples)" % (label, len(ranges)),
          not shared, shared[:4])


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


def cli_holder(name, registry, field, cwd, env=None, n=400000 // SCALE, extra=()):
    """`idgen snowflake -n n` in a configuration of MIX_LAYOUT (field), or
    with `extra` alone (field None), running in the background."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    e.update(env or {})
    out = open(os.path.join(TMP, name + ".out"), "wb+")
    err = open(os.path.join(TMP, name + ".err"), "wb+")
    p = subprocess.Popen([IDGEN, "snowflake", "-n", str(n), "--registry", registry] +
                         (mix_args(field) if field else []) + list(extra), stdout=out, stderr=err,
                         env=e, cwd=cwd)
    return (name, p, out, err)


def cli_done(h):
    name, p, out, err = h
    rc = p.wait(120)
    out.seek(0)
    err.seek(0)
    ids = [int(x) for x in out.read().split()]
    msg = err.read().decode()[:300]
    out.close()
    err.close()
    return name, rc, ids, msg


def mix_run(registry, label, remove):
    """Three daemons and three `idgen snowflake` holders per configuration
    (lease region, datacenter or worker; the others 0) at once on one
    registry, from three working directories (file: given relative to each
    of them); then one daemon per configuration stopped, its tuple's record
    removed (remove(key)), and restarted under a clock 10 s behind, with
    three more command-line holders under that clock.  No duplicate ID and
    no tuple held twice at once."""
    cwds = []
    for k in range(3):
        cwds.append(os.path.join(TMP, "%s-cwd%d" % (label, k), "sub" * k))
        os.makedirs(cwds[-1], exist_ok=True)
    root = registry[len("file:"):] if registry.startswith("file:") else None

    def reg_for(k):  # file: relative to the working directory, resolved at start
        return "file:" + os.path.relpath(root, cwds[k]) if root and k else registry

    daemons, holders = [], []
    for f in MIX_FIELDS:
        for k in range(3):
            daemons.append(Daemon("%s-%s-%d" % (label, f, k), ["--registry", reg_for(k)] +
                                  mix_args(f), cwd=cwds[k]))
    got = {d.name: [] for d in daemons}

    def run_all(clis, what):
        """Takes IDs from every daemon while the command-line holders run:
        3 batches each, within 20 s (a daemon just restarted may still be
        taking its lease: under TSan, beside the other tests, that has taken
        longer than its first requests)."""
        deadline = time.time() + 20
        for _ in range(3):
            for d in daemons:
                ids = d.ids(2000)
                while ids is None and time.time() < deadline:
                    time.sleep(0.1)
                    ids = d.ids(2000)
                got[d.name] += ids or []
        results = [cli_done(h) for h in clis]
        bad = [(n, rc, m) for n, rc, ids, m in results if rc != 0]
        short = [(d.name, len(got[d.name])) for d in daemons if len(got[d.name]) < 6000]
        check("%s: %s" % (label, what), not bad and not short, (bad[:3], short[:3]))
        holders.extend((n, ids) for n, rc, ids, m in results)

    run_all([cli_holder("%s-cli-%s-%d" % (label, f, k), reg_for(k), f, cwds[k])
             for f in MIX_FIELDS for k in range(3)],
            "9 daemons and 9 command-line holders at once")
    if root:
        logs = "".join(d.log() for d in daemons)
        rel = [m for m in re.findall(r"event=(?:start|lease) .*?registry=(\S+)", logs)]
        check("%s: every daemon logs the registry's absolute path" % label,
              rel and all(r == "file:" + os.path.realpath(root) for r in rel), set(rel))
    # One daemon per configuration: stopped, its tuple's record removed,
    # restarted under a clock 10 s behind.
    fake = {}
    if ASAN:
        print("SKIP %s: the clock 10 s behind (libfaketime cannot be preloaded into ASan)" % label)
    else:
        fake = {"LD_PRELOAD": FAKETIME, "FAKETIME": "-10s", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    for c, f in enumerate(MIX_FIELDS):
        d = daemons[3 * c]
        ids = got[d.name]
        d.stop()
        if ids:
            try:
                remove(mix_tuple(ids[0]) << 11)
            except OSError as e:
                check("%s: the record of the stopped daemon's tuple removed" % label, False, e)
        n = Daemon(d.name + "-again", ["--registry", registry, "--max-borrow-ms", "30000"] +
                   mix_args(f), env=fake, cwd=cwds[1])
        daemons[3 * c] = n
        got[n.name] = []
    run_all([cli_holder("%s-cli2-%s-%d" % (label, f, k), reg_for(k), f, cwds[k], env=fake,
                        extra=["--max-borrow-ms", "30000"]) for f in MIX_FIELDS for k in range(3)],
            "after the restarts under a clock 10 s behind, all serve")
    for d in daemons:
        d.stop()
    holders += list(got.items())
    apart(label, holders)


def mix_spaces(registry, label):
    """Two layouts (twitter's, and its 10 node bits split 5+6 with an 11-bit
    sequence) and two named spaces on one registry, 12 holders started at
    once: in each space 3 daemons and 3 `idgen snowflake` holders, of both
    layouts.  In each space one layout wins and the other's holders are
    refused, naming it (IDGEN_ESPACE; counted); no ID is issued twice within
    a space (across spaces they may be: a space is its own ID space)."""
    lays = {"twitter": ["--layout", "twitter"], "seq11": ["--layout", SEQ11]}
    daemons, clis, refused, other = [], [], {}, []
    plan = {"alpha": (["twitter", "seq11", "twitter"], ["seq11", "twitter", "seq11"]),
            "beta": (["seq11", "twitter", "seq11"], ["twitter", "seq11", "twitter"])}
    for sp, (ds, cs) in plan.items():
        reg = in_space(registry, sp)
        for k, lay in enumerate(ds):
            d = Daemon("%s-%s-d%d-%s" % (label, sp, k, lay), ["--registry", reg] + lays[lay],
                       wait=False)
            daemons.append((sp, lay, d))
        for k, lay in enumerate(cs):
            clis.append((sp, lay, cli_holder("%s-%s-c%d-%s" % (label, sp, k, lay), reg, None,
                                             None, n=200000 // SCALE, extra=lays[lay])))
    ids = {sp: [] for sp in plan}
    served = {sp: set() for sp in plan}
    for sp, lay, d in daemons:
        if d.wait_listening(30):
            got = []
            for _ in range(3):
                got += d.ids(2000) or []
            ids[sp] += got
            if got:
                served[sp].add(lay)
        else:
            log = d.log()
            if "is in use by layout" in log:
                refused[sp] = refused.get(sp, 0) + 1
            else:
                other.append((d.name, log[-300:]))
    for sp, lay, h in clis:
        name, rc, got, msg = cli_done(h)
        if rc == 0:
            ids[sp] += got
            served[sp].add(lay)
        elif rc == 1 and "is in use by layout" in msg:
            refused[sp] = refused.get(sp, 0) + 1
        else:
            other.append((name, rc, msg))
    for _, _, d in daemons:
        d.stop()
    check("%s: every holder served or was refused for the ID space, nothing else" % label,
          not other, other[:3])
    for sp in plan:
        every = ids[sp]
        check("%s: space %s: no duplicate among %d IDs (layouts that served: %s)" %
              (label, sp, len(every), ", ".join(sorted(served[sp]))),
              every and len(set(every)) == len(every),
              "%d duplicates" % (len(every) - len(set(every))))
        check("%s: space %s: %d of 6 holders refused (two layouts raced)" %
              (label, sp, refused.get(sp, 0)), refused.get(sp, 0) >= 1, refused)


def file_remover(registry):
    root = registry[len("file:"):]

    def remove(key):
        os.unlink(os.path.join(root, MIX_POOL, "%016x.lock" % key))
    return remove


def default_registry(label):
    """Two daemons on the default registry, started from two working
    directories (as a user, whose default is under XDG_STATE_HOME): one
    registry, two tuples (52df1fb defaulted to file:./var/idgen, and both
    leased worker 0: 57,344 of 81,920 IDs identical); both log its absolute
    path."""
    xdg = os.path.join(TMP, "xdg")
    os.makedirs(xdg, exist_ok=True)
    os.chmod(xdg, 0o777)
    ds = []
    for k in range(2):
        cwd = os.path.join(TMP, "default-cwd%d" % k)
        os.makedirs(cwd, exist_ok=True)
        os.chmod(cwd, 0o777)
        ds.append(Daemon("%s-%d" % (label, k), ["--node", "datacenter=3"], cwd=cwd,
                         user="nobody", env={"XDG_STATE_HOME": xdg}))
    a, b = ds[0].ids(4000), ds[1].ids(4000)
    check("%s: both serve" % label, a is not None and b is not None,
          (ds[0].log()[-300:], ds[1].log()[-300:]))
    if a and b:
        check("%s: two tuples, no ID in common" % label,
              worker_of(a[0]) != worker_of(b[0]) and not set(a) & set(b),
              (worker_of(a[0]), worker_of(b[0])))
    want = "registry=file:%s/idgen " % xdg
    check("%s: both log the absolute default (%s)" % (label, want.strip()),
          all(want in d.log() for d in ds), [d.log()[:300] for d in ds])
    for d in ds:
        d.stop()


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
    fenced = wait_for(lambda: re.search(r"event=lease_lost .*fenced=1", a.log()), 6)
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
    st, body = d.get("/health")
    t_health = time.monotonic() - t
    for th in threads:
        th.join()
    check("%s: /health answers within 100 ms while 8 clients fail (%.1f ms)" %
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
    logged = wait_for(lambda: re.search(r"event=mark_failed .*reason=", d.log()), 3)
    check("%s: logged as event=mark_failed with the reason" % label, logged, d.log()[-500:])
    st, body = d.get("/metrics")
    m = re.search(r"^idgen_lease_mark_failures_total (\d+)$", body, re.M)
    check("%s: counted in idgen_lease_mark_failures_total" % label, m and int(m.group(1)) > 0,
          m and m.group(0))
    os.unlink(fault)
    back = wait_for(lambda: d.ids(10), 5, 0.05)
    check("%s: serves again once writes work" % label, back is not None, d.log()[-300:])
    d.stop()


def parked_clock_step(registry, label):
    """A request parked for its tick while the wall clock steps back 30 s:
    answered within its budget (the rest of the tick plus max_wait_ms), not
    after the step (the timer runs on the monotonic clock; the attack on
    this change saw it parked for 30 s)."""
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


# ---------------------------------------------------------------- PostgreSQL


class Postgres:
    def __init__(self):
        self.dir = os.path.join(TMP, "pg")
        # A port below the ephemeral range (32768..), so that no client
        # connection of another test can be holding it; free now.
        for port in range(25000 + os.getpid() % 5000, 32000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
                break
            except OSError:
                pass
            finally:
                s.close()
        self.port = port
        r = subprocess.run([os.path.join(HERE, "pg_server.sh"), "start", self.dir, str(self.port)],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("pg_server.sh start: " + r.stderr)
        self.uri = r.stdout.strip().splitlines()[-1]

    def ctl(self, action):
        r = subprocess.run([os.path.join(HERE, "pg_server.sh"), action, self.dir],
                           capture_output=True, text=True, timeout=120)
        return r.returncode == 0 or print(r.stderr)

    def stop(self):
        self.ctl("stop")


class Etcd:
    """A throwaway etcd cluster of `members` (tests/etcd_server.sh) on free
    ports below the ephemeral range."""

    def __init__(self, members=1, name="etcd", tls=False):
        self.dir = os.path.join(TMP, name)
        self.members = members
        for port in range(22000 + (os.getpid() * 7) % 2900 * 2, 32000, 2):
            if all(port_free(port + j) for j in range(2 * members)):
                break
        r = subprocess.run([os.path.join(HERE, "etcd_server.sh"), "start", self.dir, str(port),
                            str(members)] + (["tls"] if tls else []), capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError("etcd_server.sh start: " + r.stderr)
        self.uri = r.stdout.strip().splitlines()[-1]

    def ctl(self, *args):
        r = subprocess.run([os.path.join(HERE, "etcd_server.sh"), args[0], self.dir] +
                           [str(a) for a in args[1:]], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            print(r.stderr)
        return r.stdout.strip() if r.returncode == 0 else None

    def stop(self):
        self.ctl("stop")


def port_free(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


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
    st, body = d.get("/health")
    check("%s: /health 503 with the reason and the lease line" % label,
          st == 503 and re.search(r"lease worker=%d node=datacenter=11,worker=%d generation=\d+ valid_ms=\S+ expires_in_ms=\S+ mark=" % (w, w), body), (st, body))
    # Nobody else can get the worker ID meanwhile (the registry is down); the
    # lease then runs out by the daemon's own clock.
    invalid = wait_for(lambda: re.search(r"^idgen_lease_valid_seconds 0(\.0+)?$",
                                         d.get("/metrics")[1], re.M), 4, 0.05)
    check("%s: the lease can no longer be shown valid within the TTL" % label, invalid)
    st, body = d.get("/id")
    check("%s: 503 lease lost, naming the failed renewals" % label,
          st == 503 and "lease lost: not renewed within its TTL (2000 ms)" in body, body)
    # Once the daemon itself says the lease is lost (/health, from its lease
    # supervisor), ULIDs and UUIDv7s are still served.
    wait_for(lambda: "lease lost" in d.get("/health")[1], 2, 0.02)
    st_u, body_u = d.get("/ulid")
    st_v, body_v = d.get("/uuid7")
    check("%s: ULIDs and UUIDv7s still served while /health says lease lost" % label,
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


def pg_remover(pg):
    def remove(key):
        r = subprocess.run(["psql", "-q", "-X", pg.uri, "-c",
                            "DELETE FROM idgen_nodes WHERE pool = '%s' AND node = %d" %
                            (MIX_POOL, key)], capture_output=True, text=True)
        if r.returncode != 0:
            raise OSError(r.stderr)
    return remove


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
    m = re.search(r"^idgen_registry_clock_skew_ms (-?\d+)", body or "", re.M)
    # etcd's clock is an HTTP Date header: whole seconds.
    slack = 1000 if pg.uri.startswith("etcd:") else 500
    check("%s: 3 s ahead: serves, and /metrics says idgen_registry_clock_skew_ms ~ 3000" % label,
          d.ids(1) is not None and m and abs(int(m.group(1)) - 3000) <= slack, m and m.group(0))
    d.stop()
    d = Daemon(label + "-off", ["--registry", pg.uri, "--node", "datacenter=21",
                                "--max-clock-skew-ms", "0"], env=env("+20s"))
    check("%s: max_clock_skew_ms = 0 does not check" % label, d.ids(1) is not None, d.log()[-300:])
    d.stop()


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
                             "BEGIN; SELECT 1 FROM idgen_nodes WHERE pool = '%s'"
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
    lock = subprocess.Popen(["psql", "-q", "-X", uri, "-c",
                             "BEGIN; SELECT pg_advisory_xact_lock(7283920174628301);"
                             " SELECT pg_sleep(3.5); COMMIT;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_sleeping(uri, "pg_advisory_xact_lock")
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
    lock = subprocess.Popen(["psql", "-q", "-X", uri, "-c",
                             "BEGIN; LOCK TABLE idgen_pools IN EXCLUSIVE MODE;"
                             " SELECT pg_sleep(3.5); COMMIT;"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_sleeping(uri, "LOCK TABLE idgen_pools")
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
                        "DELETE FROM idgen_nodes WHERE pool LIKE 'spaces/deleted-row/%%' "
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
    for breaker in ("DROP TRIGGER idgen_nodes_truncated ON idgen_nodes",
                    "ALTER TABLE idgen_pools DISABLE TRIGGER idgen_pools_kept",
                    "DROP TRIGGER idgen_nodes_removed ON idgen_nodes"):
        b = sql(breaker)
        r = idgen("snowflake", "--registry", uri, "--datacenter", "4")
        n = sql(count).stdout.strip()
        check("%s: after %s, the next starter puts it back (%s of 3 triggers)"
              % (label, breaker, n), b.returncode == 0 and r.returncode == 0 and n == "3",
              b.stderr + r.stderr)
    # And it works: a TRUNCATE raises the pool's floor to the marks it removes.
    sql("DROP TRIGGER idgen_nodes_truncated ON idgen_nodes")
    idgen("snowflake", "--registry", uri, "--datacenter", "4")
    floor_q = "SELECT floor_ms FROM idgen_pools WHERE pool = '%s'" % TWITTER_POOL
    before = sql(floor_q).stdout.strip()
    mark = sql("SELECT max(mark_ms) FROM idgen_nodes WHERE pool = '%s'" % TWITTER_POOL)
    t = sql("TRUNCATE idgen_nodes")
    after = sql(floor_q).stdout.strip()
    mark = mark.stdout.strip()
    check("%s: a TRUNCATE after the mend raised the floor from %s to the marks' %s (now %s)"
          % (label, before, mark, after),
          t.returncode == 0 and mark.isdigit() and before.isdigit() and after.isdigit()
          and int(mark) > int(before) and int(after) >= int(mark), t.stderr)


def etcd_members(etcd, label):
    """A daemon given every member of a 3-member cluster keeps its lease
    (same worker ID, no lease lost) while the member it talks to is killed
    and while the leader is killed (five times: a write sent to a follower
    during the election used to hang there for 5 s, past the 3 s TTL, which
    a kill meets about one time in three; a request now gives up on a
    member after 750 ms); with two of three
    members down it refuses (503) once its lease can no longer be shown
    valid, and serves again, without a restart, when they return.  No ID
    repeats."""
    d = Daemon(label, ["--registry", etcd.uri, "--node", "datacenter=17", "--lease-ttl-ms", "3000"])
    ids = first_ids(d, 10, "%s: serves on a 3-member cluster" % label)
    if ids is None:
        return
    w = worker_of(ids[0])
    every = list(ids)

    def still(what):
        time.sleep(3.5)  # more than three renewals (every second) and mark writes (every 1.5 s)
        got = d.ids(10) or []
        every.extend(got)
        check("%s: %s: still serves on worker ID %d, no lease lost" % (label, what, w),
              got and worker_of(got[0]) == w and "event=lease_lost" not in d.log(),
              d.log()[-600:])
    etcd.ctl("kill", 0)  # the first endpoint: the one the daemon talks to
    still("member 0 killed")
    etcd.ctl("restart", 0)
    for n in range(5):
        leader = etcd.ctl("leader")
        etcd.ctl("kill", leader)
        still("the leader (member %s) killed, %d of 5" % (leader, n + 1))
        etcd.ctl("restart", leader)
    down = [i for i in range(3) if str(i) != etcd.ctl("leader")][:1] + [int(etcd.ctl("leader"))]
    for i in down:
        etcd.ctl("kill", i)
    t = time.monotonic()

    def refused():
        st, _ = d.get("/id")
        return st == 503
    ok = wait_for(refused, 4.0, 0.05)
    check("%s: two of three members down: refuses (503) within the TTL (3 s; %.1f s after the "
          "kills)" % (label, time.monotonic() - t), ok, d.log()[-600:])
    for i in down:
        etcd.ctl("restart", i)
    back = wait_for(lambda: d.ids(10), 15, 0.2)
    every.extend(back or [])
    check("%s: members back: serves again without a restart" % label, back, d.log()[-600:])
    check("%s: no ID repeats, and they increase (%d IDs)" % (label, len(every)),
          len(set(every)) == len(every) and every == sorted(every))
    d.stop()


def etcd_auth(etcd, label):
    """With etcd's authentication on, a URI with USER:PASSWORD works, a
    wrong password is refused naming the failure, and the password is never
    shown."""
    ep = etcd.uri[len("etcd://"):].split(",")[0]

    def ctl(*args):
        return subprocess.run(["etcdctl", "--endpoints", ep] + list(args), capture_output=True,
                              text=True, env=dict(os.environ, ETCDCTL_API="3"))
    r = ctl("user", "add", "root:s3cret")
    r2 = ctl("auth", "enable")
    if not check("%s: etcdctl user add, auth enable" % label, r.returncode == 0 and
                 r2.returncode == 0, r.stderr + r2.stderr):
        return
    try:
        uri = "etcd://root:s3cret@" + etcd.uri[len("etcd://"):]
        d = Daemon(label, ["--registry", uri, "--node", "datacenter=18"])
        check("%s: USER:PASSWORD in the URI: serves" % label, d.ids(5) is not None, d.log()[-300:])
        check("%s: the password is not in the log" % label, "s3cret" not in d.log())
        st, body = d.get("/info")
        check("%s: nor in /info" % label, st == 200 and "s3cret" not in body)
        d.stop()
        r = idgen("snowflake", "--registry", "etcd://root:wrong@" + ep, "--datacenter", "18")
        check("%s: a wrong password is refused, naming the failure" % label,
              r.returncode == 1 and "authentication failed" in r.stderr and "wrong" not in r.stderr,
              r.stderr)
        r = idgen("snowflake", "--registry", etcd.uri, "--datacenter", "18")
        check("%s: no user: refused, naming it" % label,
              r.returncode == 1 and "user name is empty" in r.stderr, r.stderr)
    finally:
        ctl("--user", "root:s3cret", "auth", "disable")


def etcd_tls(label):
    """A member that takes only TLS clients with a certificate of its CA:
    the URI's cacert, cert and key reach it; without the client
    certificate, or without the CA, it is refused, naming the TLS failure."""
    etcd = Etcd(name="etcd-tls", tls=True)
    try:
        r = idgen("snowflake", "-n", "3", "--registry", etcd.uri, "--datacenter", "19")
        check("%s: ?cacert=&cert=&key=: 3 IDs over TLS" % label,
              r.returncode == 0 and len(r.stdout.split()) == 3, r.stderr)
        base, opts = etcd.uri.split("?")
        cacert = [o for o in opts.split("&") if o.startswith("cacert=")][0]
        r = idgen("snowflake", "--registry", base + "?" + cacert, "--datacenter", "19")
        check("%s: without a client certificate: refused" % label,
              r.returncode == 1 and "registry: etcd: https://" in r.stderr, r.stderr)
        r = idgen("snowflake", "--registry", base + "?tls=1&" + opts.split("&", 1)[1],
                  "--datacenter", "19")
        check("%s: without the CA: refused, naming the certificate" % label,
              r.returncode == 1 and "certificate" in r.stderr, r.stderr)
    finally:
        etcd.stop()


# -------------------------------------------------------------------- main


# ---------------------------------------------- the contract of a registry

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


def main():
    try:
        if "contract" in GROUPS:  # registry_test.py IDGEN contract file|postgres|etcd
            backend = GROUPS[GROUPS.index("contract") + 1]
            if backend == "file":
                contract("file", "file:" + os.path.join(TMP, "reg-contract"))
            elif backend == "etcd":
                etcd = Etcd()
                try:
                    contract("etcd", etcd.uri)
                finally:
                    etcd.stop()
            else:
                pg = Postgres()
                try:
                    contract("postgres", pg.uri)
                finally:
                    pg.stop()
        if "swap" in OTHER:  # the daemon's lease thread, also under ThreadSanitizer
            reg = "file:" + os.path.join(TMP, "reg-swap")
            swap(reg, "file lease replaced")
            swap(reg, "file lease replaced, cached", ["--cache"])
            swap_many(reg, "file lease replaced 20 times")
            swap_many(reg, "file lease replaced 20 times, cached", ["--cache"])
            kill9(reg, "file kill -9")
        if "swap" in OTHER or "faults" in OTHER:  # a file: holder paused, its file removed, failing marks
            reg = "file:" + os.path.join(TMP, "reg-faults")
            file_pause(reg, "file SIGSTOP")
            removed_while_alive(reg, "file lock removed")
            mark_fails_fast(reg, "file mark fails")
            parked_clock_step(reg, "parked clock step")
        if "mix" in OTHER:  # node tuples: holders of every lease field mixed, with removals
            reg = "file:" + os.path.join(TMP, "reg-mix")
            mix_run(reg, "file mix", file_remover(reg))
            mix_spaces(reg, "file spaces mix")
            default_registry("default registry")
            pg = Postgres()
            try:
                mix_run(pg.uri, "postgres mix", pg_remover(pg))
                mix_spaces(pg.uri, "postgres spaces mix")
            finally:
                pg.stop()
            etcd = Etcd()
            try:
                mix_spaces(etcd.uri, "etcd spaces mix")
            finally:
                etcd.stop()
        if "file" in OTHER:  # what only file: has
            reg = "file:" + os.path.join(TMP, "reg")
            swap(reg, "file lease replaced")
            start = []
            for i in range(7):
                t = time.monotonic()
                x = Daemon("file-start-%d" % i, ["--registry", reg, "--node", "datacenter=13"])
                start.append(time.monotonic() - t)
                x.stop()
            start.sort()
            print("info file: daemon start to listening, median of 7: %.1f ms (min %.1f, max %.1f)"
                  % (start[3] * 1000, start[0] * 1000, start[-1] * 1000))
        if "etcd" in OTHER:
            # what only etcd:// has: a cluster of 3 members, authentication
            etcd = Etcd(members=3, name="etcd3")
            try:
                fence_by_hand(etcd, "etcd fence")
                paused_holder(etcd, "etcd SIGSTOP")
                clock_skew(etcd, "etcd clock skew")
                etcd_members(etcd, "etcd members")
                etcd_auth(etcd, "etcd auth")
            finally:
                etcd.stop()
            etcd_tls("etcd TLS")
        if "pg" in OTHER:  # what only postgres:// has: expiry, fencing by hand, outages
            pg = Postgres()
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
            finally:
                pg.stop()
    finally:
        for d in DAEMONS:
            if d.p.poll() is None:
                try:
                    d.p.send_signal(signal.SIGCONT)
                except OSError:
                    pass
                d.p.kill()
                d.p.wait()
    print(checks.summary())
    if checks.failed:
        print("failed: " + "; ".join(checks.failures))
        sys.exit(1)
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
