#!/usr/bin/python3
"""Clients that lease from a daemon (`idgen serve --leases`, `idgen://`,
SPEC §12) with the daemon on each registry: the command line and Node.js
side by side, a daemon killed and restarted under them.

  lease_clients_test.py IDGEN JSDIR file|postgres|etcd

The daemon runs on a file: registry of the test's own, a throwaway
PostgreSQL or a throwaway etcd (tests/components.py), its own generator on
datacenter 0, the clients on datacenter 1 (a pool of 32 worker values).

1. Two `idgen snowflake -n 250000` processes and two Node.js processes
   (tests/lease/client.mjs, the addon) at once, each on a lease of its own
   from the daemon: four distinct worker values, 1,000,000 IDs, no
   duplicate, each process's IDs strictly increasing.
2. The daemon killed (-9) and started again on the same registry and port
   within the TTL, under two Node.js clients minting over time: they renew
   against the new process and go on (more IDs after the restart, exit 0
   when stopped), no duplicate.
3. The daemon killed and started on an EMPTY registry instead: the clients'
   next renewal is refused and they stop with ELEASE, within a few TTLs.

Prints one line per check and "N passed, M failed"; exit 1 on a failure.
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import finish, report as check  # noqa: E402
import components  # noqa: E402
from components import Daemon, Workdir, stop_all  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TTL_MS = 3000
N = 250000


def worker_of(x):
    return (x >> 12) & 31


def read_ids(path):
    """(lease node, IDs, error line) of a client's output file."""
    node, ids, error = None, [], None
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("lease "):
                node = line[6:]
            elif line.startswith("error "):
                error = line
            elif line.isdigit():
                ids.append(int(line))
            elif line:
                error = error or "unexpected line: " + line[:200]
    return node, ids, error


def increasing(ids):
    return all(ids[i - 1] < ids[i] for i in range(1, len(ids)))


class Client:
    """A Node.js client (tests/lease/client.mjs), its output in a file."""

    def __init__(self, wd, name, js, registry, n, stream_ms=0, ttl_ms=TTL_MS):
        self.out = wd.join(name + ".out")
        args = ["node", os.path.join(HERE, "lease", "client.mjs"), registry, str(n)]
        if stream_ms:
            args += [str(stream_ms), str(ttl_ms)]
        self.p = subprocess.Popen(args, stdout=open(self.out, "w"), stderr=subprocess.STDOUT,
                                  env=dict(os.environ, IDGEN_JS=js))

    def count(self):
        return len(read_ids(self.out)[1])

    def result(self):
        return read_ids(self.out)


def wait_for(pred, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())


def start_registry(kind, wd):
    """(registry URI, a fresh empty registry URI of the same kind, stop)."""
    if kind == "file":
        return "file:" + wd.join("reg"), "file:" + wd.join("empty"), lambda: None
    if kind == "postgres":
        pg = components.Postgres(wd.join("pg"))
        sep = "&" if "?" in pg.uri else "?"
        return pg.uri, pg.uri + sep + "schema=fresh", pg.stop
    et = components.Etcd(wd.join("etcd"))
    sep = "&" if "?" in et.uri else "?"
    return et.uri, et.uri + sep + "prefix=fresh", et.stop


def run(idgen, js, kind):
    wd = Workdir("idgen-lease-clients-")
    stop_registry = lambda: None  # noqa: E731
    try:
        uri, empty_uri, stop_registry = start_registry(kind, wd)
        daemon_args = ["--leases", "--registry", uri, "--lease-ttl-ms", str(TTL_MS)]
        d = Daemon(idgen, wd.path, "daemon", daemon_args)
        if not check("%s: the daemon starts with --leases" % kind, d.http, d.log()[-600:]):
            return
        port = d.http
        reg = "idgen://127.0.0.1:%d" % port

        # 1. Two CLI and two Node.js clients at once, holding their leases
        # together: each writes into a pipe read only once every one has
        # written its first line (a client blocks on the full pipe, so none
        # finishes and gives its tuple back before the others have theirs).
        procs = [subprocess.Popen([idgen, "snowflake", "-n", str(N), "--registry", reg,
                                   "--node", "datacenter=1"], stdout=subprocess.PIPE,
                                  stderr=open(wd.join("cli%d.err" % i), "w")) for i in range(2)]
        procs += [subprocess.Popen(["node", os.path.join(HERE, "lease", "client.mjs"), reg,
                                    str(N)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, IDGEN_JS=js)) for _ in range(2)]
        names = ["CLI 1", "CLI 2", "Node.js 1", "Node.js 2"]
        firsts = [p.stdout.readline() for p in procs]
        outs = [None] * 4

        def drain(i):
            outs[i] = firsts[i] + procs[i].stdout.read()
            procs[i].wait(300)

        threads = [threading.Thread(target=drain, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        every, workers = [], []
        for i, p in enumerate(procs):
            lines = outs[i].decode().split("\n")
            ids = [int(x) for x in lines if x.isdigit()]
            bad = [x for x in lines if x and not x.isdigit() and not x.startswith("lease ")]
            check("%s: %d IDs on its lease (exit 0)" % (names[i], N),
                  p.returncode == 0 and len(ids) == N and not bad, (p.returncode, len(ids), bad[:2]))
            check("%s: its IDs strictly increasing" % names[i], increasing(ids))
            workers.append({worker_of(x) for x in ids})
            every += ids
        check("%s: four processes at once, four distinct worker values" % kind,
              all(len(w) == 1 for w in workers) and len(set().union(*workers)) == 4, workers)
        check("%s: 0 duplicates over %d IDs" % (kind, len(every)),
              len(every) == 4 * N and len(set(every)) == len(every),
              len(every) - len(set(every)))

        # 2. The daemon killed and restarted on the same registry within the TTL.
        streams = [Client(wd, "stream%d" % i, js, reg, -1, stream_ms=20) for i in range(2)]
        ok = wait_for(lambda: all(s.count() >= 500 for s in streams), 60)
        check("%s: two streaming clients mint" % kind, ok, [s.result()[2] for s in streams])
        d.kill()
        killed_at = time.monotonic()
        d = Daemon(idgen, wd.path, "daemon2", daemon_args, http="127.0.0.1:%d" % port)
        check("%s: the daemon restarts on the same port within the TTL" % kind,
              d.http == port and time.monotonic() - killed_at < TTL_MS / 1000, d.log()[-400:])
        before = [s.count() for s in streams]
        time.sleep(3 * TTL_MS / 1000)  # three TTLs: renewals only the new process answers
        after = [s.count() for s in streams]
        alive = [s.p.poll() is None for s in streams]
        check("%s: after the restart both clients renew against the new daemon and go on" % kind,
              all(alive) and all(a > b + 100 for a, b in zip(after, before)),
              (alive, before, after, [s.result()[2] for s in streams], d.log()[-600:]))
        for s in streams:
            s.p.send_signal(signal.SIGTERM)
        ids = []
        for i, s in enumerate(streams):
            s.p.wait(timeout=60)
            _, got, error = s.result()
            check("%s: streaming client %d stops cleanly (exit 0), its IDs increasing" % (kind, i + 1),
                  s.p.returncode == 0 and error is None and increasing(got),
                  (s.p.returncode, error))
            ids += got
        check("%s: 0 duplicates across the restart (%d IDs)" % (kind, len(ids)),
              len(set(ids)) == len(ids), len(ids) - len(set(ids)))

        # 3. Restarted on an empty registry: the clients stop.
        streams = [Client(wd, "lost%d" % i, js, reg, -1, stream_ms=20) for i in range(2)]
        ok = wait_for(lambda: all(s.count() >= 200 for s in streams), 60)
        check("%s: two more clients mint" % kind, ok, [s.result()[2] for s in streams])
        d.kill()
        d = Daemon(idgen, wd.path, "daemon3",
                   ["--leases", "--registry", empty_uri, "--lease-ttl-ms", str(TTL_MS)],
                   http="127.0.0.1:%d" % port)
        check("%s: the daemon restarts on an empty registry" % kind, d.http == port,
              d.log()[-400:])
        stopped = wait_for(lambda: all(s.p.poll() is not None for s in streams), 4 * TTL_MS / 1000)
        errors = [s.result()[2] for s in streams]
        check("%s: on an empty registry the clients' renewals are refused and they stop (ELEASE)"
              % kind, stopped and all(e and e.startswith("error ELEASE") for e in errors),
              (stopped, errors, d.log()[-600:]))
        for s in streams:
            if s.p.poll() is None:
                s.p.kill()
    finally:
        stop_all()
        stop_registry()
        wd.remove()


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ("file", "postgres", "etcd"):
        sys.exit("usage: lease_clients_test.py IDGEN JSDIR file|postgres|etcd")
    run(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3])
    finish()
