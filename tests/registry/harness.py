"""The harness of the registry's end-to-end suites (tests/registry/suite_*.py):
the worker-ID registry through the real `idgen snowflake` and `idgen serve`,
against file:, a throwaway PostgreSQL and a throwaway etcd, for the promises
of include/idgen.h (unique, fenced, durable) and the registry of
docs/DESIGN.md section 11.

Each suite is one area and runs alone: `python3 tests/registry/suite_pg.py
PATH/TO/idgen`, or through CTest (`ctest -R registry.postgres`; the names
are in tests/CMakeLists.txt).  It prints one line per check and ends with
"N passed, M failed"; exit 1 if any check failed.

This file holds what the suites share: the daemon (Daemon, on
tests/components.py, with the PostgreSQL and etcd the suites start), the
`idgen` command, fields of an ID, clients, the configurations of the
node-tuple tests (MIX_*), command-line holders in the background
(cli_holder, cli_done) and the runner (run).  tests/registry/shared.py holds
the scenarios more than one suite runs.
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
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402  tests/checks.py: the tally
import components  # noqa: E402  tests/components.py: daemon, PostgreSQL, etcd

if len(sys.argv) < 2:
    sys.exit("usage: %s PATH/TO/idgen [ARGS]" % os.path.basename(sys.argv[0]))
IDGEN = os.path.abspath(sys.argv[1])
ARGS = sys.argv[2:]
WORK = components.Workdir("idgen-registry-test-")  # readable by the postgres user
TMP = WORK.path
TWITTER_EPOCH = 1288834974657
TWITTER_POOL = "epoch=1288834974657,tick=1ms,time@22,sequence@0:12"
FAKETIME = components.FAKETIME
ASAN = b"AddressSanitizer" in open(IDGEN, "rb").read()
# Sanitizer builds run slower: make sanitize and make tsan set a divisor.
SCALE = max(1, int(os.environ.get("IDGEN_TEST_SCALE", "1")))


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
    monotonic clock is left alone); and that file."""
    stamp = os.path.join(TMP, label.replace(" ", "-") + ".faketime")
    return components.faketime_env(stamp, offset), stamp


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


class Daemon(components.Daemon):
    """`idgen serve` (tests/components.py) with its log in TMP: HTTP on a
    free loopback port, no RESP, one thread, then `args`.  wait: for its
    listen line (up to 60 s: a start takes a second at most, the rest is for
    a busy machine); a daemon that does not start is seen in the checks that
    use it."""

    def __init__(self, name, args, env=None, wait=True, cwd=None, user=None):
        super().__init__(IDGEN, TMP, name, ["--threads", "1"] + list(args), env=env, cwd=cwd,
                         user=user, wait=60 if wait else 0)


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
    with socket.create_connection(("127.0.0.1", port), timeout=30) as so:
        f = so.makefile("rb")
        for words in commands:
            so.sendall(("*%d\r\n" % len(words)).encode() +
                       b"".join(b"$%d\r\n%s\r\n" % (len(w), w.encode()) for w in words))
            line = f.readline()
            if line.startswith(b"$") and int(line[1:]) >= 0:
                line += f.read(int(line[1:]) + 2)
            out.append(line.decode("utf-8", "replace"))
    return out


# A wait for what a daemon will do on its own (lease again, log a line, serve
# again): it comes within a second or two; WAIT_S is there for a busy
# machine, and only something that never comes meets it.
WAIT_S = 30


def wait_for(pred, seconds, step=0.02):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


def in_space(registry, name):
    """REGISTRY's URI with ?space=NAME (or &space=NAME)."""
    return registry + ("&" if "?" in registry else "?") + "space=" + name


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


SEQ11 = "time:41@1ms,datacenter:5,worker:6,sequence:11,epoch=1288834974657"


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


def postgres():
    """A throwaway PostgreSQL (tests/pg_server.sh) with its data in TMP/pg."""
    return components.Postgres(os.path.join(TMP, "pg"))


def etcd_cluster(members=1, name="etcd", tls=False):
    """A throwaway etcd cluster (tests/etcd_server.sh) with its data in TMP/NAME."""
    return components.Etcd(os.path.join(TMP, name), members, tls)


def run(body):
    """Runs a suite's body, kills whatever daemon it left running, prints
    "N passed, M failed" and exits 1 if a check failed; the work directory
    is removed only if none did."""
    try:
        body()
    finally:
        components.stop_all()
    print(checks.summary())
    if checks.failed:
        print("failed: " + "; ".join(checks.failures))
        sys.exit(1)
    WORK.remove()
