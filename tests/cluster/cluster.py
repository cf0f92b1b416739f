#!/usr/bin/python3
"""cluster.py -- idgen on several hosts, under the faults of a real network.

    tests/cluster/cluster.py --idgen build/idgen --backend postgres|etcd
                             [--out DIR] [--daemons N] [--seed S] [--soak SECONDS]

Builds a small cluster on this machine out of Linux network namespaces (root
only): one namespace per `idgen serve` daemon (d1..dN), one for PostgreSQL or
three for an etcd cluster, one for the load clients, joined by veth pairs on a
bridge that lives in a namespace of its own, with addresses in 198.18.0.0/24
(RFC 2544's benchmarking range) that exist only inside those namespaces.

From the client namespace, load threads ask every daemon for IDs over RESP
and over HTTP for the whole run and record each answer with its send and
receive times (history.tsv); an observer polls the registry's lease table
(`idgen registry list --json`) and records every tuple's generation, holder
and durable mark (registry.tsv).  Meanwhile faults are injected, each in a
phase of its own and then mixed at random with a fixed seed:

    partition      a daemon cut off from the registry (nftables drop) for 2.5 TTLs
    sigstop        a daemon stopped (SIGSTOP) for 2.5 TTLs, then resumed
    kill9          a daemon killed (SIGKILL) and restarted
    clock          a daemon's wall clock stepped +10 s (and back) and another's -10 s
                   (libfaketime, under the running process)
    restart        the registry restarted (PostgreSQL: a fast restart; etcd: every member)
    leader_kill    etcd: the leader killed and restarted; PostgreSQL: the postmaster killed
                   (crash recovery)
    half           the registry cut off from half of the daemons

Then tests/cluster/checker.py reads the run directory: any duplicate ID, any
daemon's IDs out of real-time order, any ID issued after its lease was
superseded, any answer above the durable mark, or a daemon that refuses
longer than TTL + quarantine + one acquisition after a fault (registry
reachable) fails the run.  It writes summary.txt and timeline.png.

Exit status: 0 passed, 1 failed, 77 skipped (not root, or `ip netns` not
permitted here: the message says which).  The namespaces are removed on exit,
also after a failure; ones left by a run that was killed are removed by the
next run.
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import components  # noqa: E402  tests/components.py: the daemon, PostgreSQL

FAKETIME = components.FAKETIME
NET = "198.18.0."            # a /24 inside the namespaces only
CLIENT_IP, PG_IP = NET + "2", NET + "10"
ETCD_IPS = [NET + "11", NET + "12", NET + "13"]
HTTP_PORT, RESP_PORT, PG_PORT, ETCD_PORT = 8080, 6380, 5432, 2379
SKIP = 77

# The daemons' lease settings: short, so that a fault past the TTL fits in a
# CI run.  Quarantine is one TTL (the default); one acquisition is the lease
# thread's retry spacing (1 s) plus the registry's round trips.
TTL_MS, QUARANTINE_MS, ACQUIRE_MS = 2000, 2000, 1500
LAYOUT = {"epoch_ms": 1288834974657, "time_shift": 22, "node_mask": "0x3ff000"}  # twitter


def mono():
    return time.monotonic_ns()


def log(msg):
    print("cluster: %s" % msg, flush=True)


def run(args, check=True, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr.strip()))
    return r


def in_ns(ns, args):
    return ["ip", "netns", "exec", ns] + list(args)


# ---------------------------------------------------------------- the network

def host_names(daemons, backend):
    reg = ["pg"] if backend == "postgres" else ["e1", "e2", "e3"]
    return ["client"] + reg + ["d%d" % i for i in range(1, daemons + 1)]


def host_ip(name):
    if name == "client":
        return CLIENT_IP
    if name == "pg":
        return PG_IP
    if name.startswith("e"):
        return ETCD_IPS[int(name[1:]) - 1]
    return NET + str(20 + int(name[1:]))


def remove_stale():
    """Namespaces left by a run that was killed (its pid is gone)."""
    out = run(["ip", "netns", "list"], check=False).stdout
    for line in out.splitlines():
        m = re.match(r"^(idgc(\d+)-\S+)", line)
        if m and not os.path.exists("/proc/%s" % m.group(2)):
            delete_ns(m.group(1))


def delete_ns(ns):
    pids = run(["ip", "netns", "pids", ns], check=False).stdout.split()
    for p in pids:
        try:
            os.kill(int(p), signal.SIGKILL)  # scoped: in an idgc namespace this test made
        except (ProcessLookupError, ValueError):
            pass
    run(["ip", "netns", "del", ns], check=False)


def make_network(prefix, names):
    """A bridge in namespace PREFIX-br; each host a namespace with eth0 on it."""
    br = prefix + "-br"
    made = [br]
    run(["ip", "netns", "add", br])
    run(["ip", "-n", br, "link", "add", "br0", "type", "bridge"])
    run(["ip", "-n", br, "link", "set", "br0", "up"])
    for h in names:
        ns = "%s-%s" % (prefix, h)
        run(["ip", "netns", "add", ns])
        made.append(ns)
        run(["ip", "-n", br, "link", "add", h, "type", "veth", "peer", "name", "eth0", "netns", ns])
        run(["ip", "-n", br, "link", "set", h, "master", "br0", "up"])
        run(["ip", "-n", ns, "addr", "add", host_ip(h) + "/24", "dev", "eth0"])
        run(["ip", "-n", ns, "link", "set", "eth0", "up"])
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
    return made


def can_make_namespaces():
    """None, or why this machine cannot run the test (a skip)."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, nftables)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = "idgc%d-probe" % os.getpid()
    r = run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return "`ip netns add` is not permitted here: %s" % r.stderr.strip()
    run(["ip", "netns", "del", probe], check=False)
    return None


def missing_tools(backend):
    need = ["nft", "curl"]
    need += ["etcd", "etcdctl"] if backend == "etcd" else []
    gone = [t for t in need if shutil.which(t) is None]
    if not os.path.exists(FAKETIME):
        gone.append(FAKETIME)
    if backend == "postgres" and not os.path.exists("/usr/lib/postgresql/15/bin/initdb"):
        gone.append("postgresql-15")
    return gone


def outer(a):
    """Root namespace: check, build the network, run the test inside the
    client's namespace, tear everything down."""
    why = can_make_namespaces()
    if why:
        print("SKIP cluster test: %s" % why, flush=True)
        return SKIP
    gone = missing_tools(a.backend)
    if gone:
        print("cluster: missing %s: run scripts/install-deps.sh" % ", ".join(gone), flush=True)
        return 1
    remove_stale()
    prefix = "idgc%d" % os.getpid()
    names = host_names(a.daemons, a.backend)
    made = []
    try:
        made = make_network(prefix, names)
        args = [sys.executable, os.path.abspath(__file__), "--inner", prefix] + sys.argv[1:]
        r = subprocess.run(in_ns(prefix + "-client", args))
        return r.returncode
    finally:
        for ns in reversed(made):
            delete_ns(ns)


# ---------------------------------------------------------------- the registry

class Postgres(components.Postgres):
    """The throwaway PostgreSQL of tests/components.py (tests/pg_server.sh),
    run in a namespace of its own on PG_IP."""
    name = "postgres"

    def __init__(self, prefix, out):
        self.ns = prefix + "-pg"
        # The postgres user must reach the directory; its socket path short.
        super().__init__("/tmp/%s-pg" % prefix, PG_PORT, host=PG_IP, wrap=in_ns(self.ns, []),
                         start=False)
        self.ips = [PG_IP]
        self.namespaces = [self.ns]
        self.out = out

    def _ctl(self, action):
        if not self.ctl(action):
            raise RuntimeError("pg_server.sh %s %s failed" % (action, self.dir))

    def stop(self):
        if os.path.exists(os.path.join(self.dir, "data")):
            shutil.copy(os.path.join(self.dir, "log"), os.path.join(self.out, "postgres.log"))
        self._ctl("stop")

    def pids(self):
        """The server's processes: the postmaster and its children."""
        pid = self.postmaster_pid()
        return [pid] + children(pid) if pid else []

    def restart(self):
        """Fault: a fast restart.  Returns when it takes connections again."""
        self._ctl("pause")
        self._ctl("resume")

    def leader_kill(self, down_s):
        """Fault: the postmaster killed (crash recovery on restart)."""
        pid = self.postmaster_pid()
        backends = children(pid)
        os.kill(pid, signal.SIGKILL)  # scoped: our server's, from its data directory
        time.sleep(down_s)
        for _ in range(200):  # its backends notice the postmaster is gone and exit
            if not any(os.path.exists("/proc/%d" % c) for c in backends):
                break
            time.sleep(0.05)
        self._ctl("resume")
        return "postmaster"


def cpu_ms(pids):
    """CPU time (user + system) the processes PIDS have used, in ms."""
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total * 1000.0 / os.sysconf("SC_CLK_TCK")


def children(pid):
    """The processes whose parent is PID (pgrep -P), as ints."""
    return [int(c) for c in os.listdir("/proc")  # scoped: only those whose parent is pid
            if c.isdigit() and parent(c) == pid]


def parent(pid):
    """The parent pid of process PID (a string), or 0 once it is gone."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


class Etcd(components.Etcd):
    """The throwaway etcd cluster of tests/components.py
    (tests/etcd_server.sh): three members, each in a namespace of its own."""
    name = "etcd"

    def __init__(self, prefix, out):
        self.ips = list(ETCD_IPS)
        self.namespaces = ["%s-e%d" % (prefix, i) for i in (1, 2, 3)]
        self.out = out
        super().__init__("/tmp/%s-etcd" % prefix, 3, hosts=ETCD_IPS, netns=self.namespaces,
                         port=ETCD_PORT, start=False)

    def _ctl(self, action, *args):
        out = self.ctl(action, *args)
        if out is None:
            raise RuntimeError("etcd_server.sh %s %s failed" % (action, self.dir))
        return out

    def stop(self):
        for i in range(3):
            log = os.path.join(self.dir, "m%d.log" % i)
            if os.path.exists(log):
                shutil.copy(log, os.path.join(self.out, "etcd-e%d.log" % (i + 1)))
        self._ctl("stop")

    def restart(self):
        """Fault: every member stopped (SIGTERM), then all started again."""
        for i in range(3):
            self._ctl("term", i)
        self._ctl("restart", 0, 1, 2)

    def leader(self):
        return int(self.ctl("leader") or 0)

    def leader_kill(self, down_s):
        i = self.leader()
        self._ctl("kill", i)
        time.sleep(down_s)
        self._ctl("restart", i)
        return "e%d" % (i + 1)


# ---------------------------------------------------------------- the daemons

class Daemon:
    """One host's `idgen serve` (tests/components.py's Daemon, run in the
    host's namespace under libfaketime), started again after a kill; each
    start is an incarnation in the history."""

    def __init__(self, prefix, name, a, uri, out, incarnations):
        self.name, self.ip = name, host_ip(name)
        self.ns = "%s-%s" % (prefix, name)
        self.idgen, self.uri, self.out = a.idgen, uri, out
        self.clock_file = os.path.join(out, name + ".faketime")
        self.d = None
        self.stopped = False  # SIGSTOPped
        self.incarnations = incarnations
        with open(self.clock_file, "w") as f:
            f.write("+0\n")

    @property
    def proc(self):
        return self.d.p if self.d else None

    def start(self):
        # The preload goes to the daemon alone, not to `ip netns exec`.
        env = ["env", "LD_PRELOAD=" + FAKETIME, "FAKETIME_NO_CACHE=1",
               "FAKETIME_DONT_FAKE_MONOTONIC=1", "FAKETIME_TIMESTAMP_FILE=" + self.clock_file]
        start = mono()
        self.d = components.Daemon(
            self.idgen, self.out, self.name,
            ["--registry", self.uri, "--threads", "1", "--lease-ttl-ms", str(TTL_MS),
             "--max-clock-skew-ms", "30000"],
            http="%s:%d" % (self.ip, HTTP_PORT), resp="%s:%d" % (self.ip, RESP_PORT),
            wrap=in_ns(self.ns, env), wait=0)
        self.incarnations.append([self.name, self.proc.pid, start, None])
        # Up when it listens (the lease is held before it listens).
        if self.d.wait_listening(15):
            return
        if self.proc.poll() is not None:
            self.end()
            raise RuntimeError("%s exited %d at start (see %s.log)" %
                               (self.name, self.proc.returncode, self.name))
        self.kill9()
        raise RuntimeError("%s does not listen after 15 s" % self.name)

    def end(self):
        for inc in self.incarnations:
            if inc[1] == self.proc.pid and inc[3] is None:
                inc[3] = mono()

    def alive(self):
        return self.d is not None and self.d.alive()

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill9(self):
        self.end()
        self.d.kill()

    def stop(self):
        """Graceful (SIGTERM), at the end of the run."""
        if not self.alive():
            return
        if self.stopped:
            self.signal(signal.SIGCONT)
        self.end()
        self.d.stop(timeout=10)

    def set_clock(self, offset):
        tmp = self.clock_file + ".new"
        with open(tmp, "w") as f:
            f.write(offset + "\n")
        os.rename(tmp, self.clock_file)

    def metrics(self):
        """idgen_registry_operations_total by op (ok + failed), and uptime."""
        try:
            with socket.create_connection((self.ip, HTTP_PORT), timeout=1) as s:
                s.sendall(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
                data = b""
                s.settimeout(2)
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
        except OSError:
            return None
        ops = {"acquire": 0, "renew": 0, "mark": 0}
        for m in re.finditer(rb'idgen_registry_operations_total\{op="(\w+)",result="\w+"\} (\d+)',
                             data):
            ops[m.group(1).decode()] += int(m.group(2))
        return ops


# ---------------------------------------------------------------- load

class Load:
    """One thread per daemon and protocol: a request every `interval`, each
    for `count` IDs, on one connection until it fails; every answer is a
    history line."""

    def __init__(self, out, daemons, count=3, interval=0.01, timeout=1.0):
        self.out, self.daemons = out, daemons
        self.count, self.interval, self.timeout = count, interval, timeout
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.next_conn = 0
        self.threads = []
        self.hist = open(os.path.join(out, "history.tsv"), "w")
        self.conns = open(os.path.join(out, "conns.tsv"), "w")

    def start(self):
        for d in self.daemons:
            for proto in ("resp", "http"):
                t = threading.Thread(target=self.worker, args=(d, proto), daemon=True)
                t.start()
                self.threads.append(t)

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(5)
        self.hist.close()
        self.conns.close()

    def record(self, lines):
        with self.lock:
            self.hist.write("".join(lines))

    def worker(self, d, proto):
        port = RESP_PORT if proto == "resp" else HTTP_PORT
        req = (b"ID %d\r\n" % self.count if proto == "resp" else
               b"GET /id?count=%d HTTP/1.1\r\nHost: %s\r\n\r\n" % (self.count, d.ip.encode()))
        sock, buf, conn, pending = None, b"", 0, []
        next_at = time.monotonic()
        while not self.stop.is_set():
            t0 = mono()
            if sock is None:
                try:
                    sock = socket.create_connection((d.ip, port), timeout=self.timeout)
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    with self.lock:
                        self.next_conn += 1
                        conn = self.next_conn
                        self.conns.write("%s\t%s\t%d\t%d\n" % (d.name, proto, conn, mono()))
                    buf = b""
                except OSError as e:
                    pending.append("%s\t%s\t0\t%d\t%d\terror\tconnect: %s\n" %
                                   (d.name, proto, t0, mono(), clean(str(e))))
                    sock = None
                    self.pace(0.05)
                    continue
            t0 = mono()
            try:
                sock.sendall(req)
                status, payload, buf = read_reply(sock, buf, proto)
            except (OSError, ValueError) as e:
                pending.append("%s\t%s\t%d\t%d\t%d\terror\t%s\n" %
                               (d.name, proto, conn, t0, mono(), clean(str(e) or type(e).__name__)))
                sock.close()
                sock = None
                continue
            pending.append("%s\t%s\t%d\t%d\t%d\t%s\t%s\n" % (d.name, proto, conn, t0, mono(),
                                                            status, payload))
            if len(pending) >= 64:
                self.record(pending)
                pending = []
            next_at = max(next_at + self.interval, time.monotonic())
            self.pace(next_at - time.monotonic())
        if pending:
            self.record(pending)
        if sock:
            sock.close()

    def pace(self, s):
        if s > 0:
            self.stop.wait(s)


def clean(text):
    return re.sub(r"[\t\r\n]+", " ", text)[:200]


def recv_more(sock, buf):
    chunk = sock.recv(65536)
    if not chunk:
        raise ValueError("connection closed by the server")
    return buf + chunk


def read_reply(sock, buf, proto):
    """(status, payload, rest of buf): ok with IDs comma-separated, or refused."""
    if proto == "resp":
        while b"\r\n" not in buf:
            buf = recv_more(sock, buf)
        if buf.startswith(b"-"):
            line, _, rest = buf.partition(b"\r\n")
            return "refused", clean(line[1:].decode(errors="replace")), rest
        if not buf.startswith(b"*"):
            raise ValueError("unexpected RESP reply %r" % buf[:40])
        n = int(buf[1:buf.index(b"\r\n")])
        while buf.count(b"\r\n") < n + 1:
            buf = recv_more(sock, buf)
        lines = buf.split(b"\r\n")
        ids = [x[1:].decode() for x in lines[1:n + 1]]
        if any(not x.isdigit() for x in ids):
            raise ValueError("unexpected RESP element in %r" % buf[:80])
        rest = b"\r\n".join(lines[n + 1:])
        return "ok", ",".join(ids), rest
    while b"\r\n\r\n" not in buf:
        buf = recv_more(sock, buf)
    head, _, body = buf.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
    if not m:
        raise ValueError("HTTP reply without Content-Length")
    length = int(m.group(1))
    while len(body) < length:
        body = recv_more(sock, body)
    code = int(head.split(b" ", 2)[1])
    text, rest = body[:length].decode(errors="replace"), body[length:]
    if code == 200:
        return "ok", ",".join(text.split()), rest
    return "refused", clean("%d %s" % (code, text.strip())), rest


# ---------------------------------------------------------------- the observer

class Observer:
    """Polls the registry's lease table every `interval` s: registry.tsv."""

    def __init__(self, idgen, uri, out, interval=0.25):
        self.idgen, self.uri, self.interval = idgen, uri, interval
        self.f = open(os.path.join(out, "registry.tsv"), "w")
        self.stop, self.paused = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.polls = self.failures = 0

    def poll(self):
        t0 = mono()
        r = run([self.idgen, "registry", "list", "--registry", self.uri, "--json"], check=False,
                timeout=10)
        t1 = mono()
        if r.returncode != 0:
            self.failures += 1
            return
        self.polls += 1
        lines = []
        for line in r.stdout.splitlines():
            row = json.loads(line)
            if "key" not in row:
                continue
            m = re.match(r"^[^:]*:(\d+):", row.get("holder") or "")
            lines.append("%d\t%d\t%s\t%s\t%s\t%d\t%s\n" % (
                t0, t1, row["key"], row["generation"], m.group(1) if m else "-",
                row.get("mark_ms") or 0, row["state"]))
        self.f.write("".join(lines))

    def loop(self):
        while not self.stop.is_set():
            if self.paused.is_set():
                self.stop.wait(0.05)
                continue
            try:
                self.poll()
            except (subprocess.TimeoutExpired, ValueError):
                self.failures += 1
            self.stop.wait(self.interval)

    def finish(self):
        self.stop.set()
        self.thread.join(15)
        self.poll()  # the final state
        self.f.close()


# ---------------------------------------------------------------- faults

class Run:
    def __init__(self, a, prefix):
        self.a, self.prefix = a, prefix
        self.out = a.out
        self.faults, self.phases, self.incarnations = [], [], []
        self.reg = (Postgres if a.backend == "postgres" else Etcd)(prefix, self.out)
        self.daemons = [Daemon(prefix, "d%d" % i, a, self.reg.uri, self.out, self.incarnations)
                        for i in range(1, a.daemons + 1)]
        self.observer = None
        self.busy = set()        # hosts (and "registry") under a fault now
        self.busy_lock = threading.Lock()
        self.errors = []

    # -- partitions (nftables) --
    def nft_drop(self, ns, ips, table):
        rules = "table inet %s {\n" % table
        for hook, way in (("input", "saddr"), ("output", "daddr")):
            rules += ("  chain %s { type filter hook %s priority 0; ip %s { %s } drop; }\n" %
                      (hook, hook, way, ", ".join(ips)))
        rules += "}\n"
        run(in_ns(ns, ["nft", "-f", "-"]), input=rules)

    def nft_heal(self, ns, table):
        run(in_ns(ns, ["nft", "delete", "table", "inet", table]), check=False)

    # -- one fault: runs in its own thread in the mixed phase --
    def fault(self, phase, kind, targets, hold):
        """Injects KIND on TARGETS (daemons) for about HOLD seconds; records it."""
        names = ",".join(d.name for d in targets) if targets else "*"
        start, bound, note = mono(), 1, ""
        if kind == "partition":
            for d in targets:
                self.nft_drop(d.ns, self.reg.ips, "idgc")
            time.sleep(hold)
            for d in targets:
                self.nft_heal(d.ns, "idgc")
        elif kind == "half":
            for ns in self.reg.namespaces:
                self.nft_drop(ns, [d.ip for d in targets], "idgc")
            time.sleep(hold)
            for ns in self.reg.namespaces:
                self.nft_heal(ns, "idgc")
        elif kind == "sigstop":
            for d in targets:
                d.stopped = True
                d.signal(signal.SIGSTOP)
            time.sleep(hold)
            for d in targets:
                d.signal(signal.SIGCONT)
                d.stopped = False
        elif kind == "kill9":
            for d in targets:
                d.kill9()
            time.sleep(hold)
            for d in targets:
                self.start_daemon(d)
        elif kind.startswith("clock"):
            step = kind[len("clock"):]  # "+10s" or "-10s"
            for d in targets:
                d.set_clock(step)
            time.sleep(hold)
            for d in targets:
                d.set_clock("+0")
            bound = 0  # refusing until the clock catches up is the design
        elif kind == "restart":
            self.reg.restart()
        elif kind == "leader_kill":
            note = self.reg.leader_kill(hold)
        end = mono()
        self.faults.append((phase, kind + (":" + note if note else ""), names, start, end, bound))
        log("  %-12s %-10s %5.1f s" % (kind, names, (end - start) / 1e9))

    def start_daemon(self, d):
        """A restart; retried, since a start can meet a registry that is down."""
        for attempt in range(30):
            try:
                d.start()
                return
            except RuntimeError as e:
                if attempt == 29:
                    self.errors.append(str(e))
                    return
                time.sleep(0.5)

    def phase(self, name, body, settle):
        start = mono()
        log("phase %s" % name)
        body()
        time.sleep(settle)
        self.phases.append((name, start, mono()))

    # -- the schedule --
    def scripted(self):
        d = self.daemons
        hold = 2.5 * TTL_MS / 1000
        settle = (TTL_MS + QUARANTINE_MS + ACQUIRE_MS) / 1000 + 1.5
        self.phase("baseline", lambda: self.measure_load("baseline", 6), 0)
        self.phase("partition", lambda: self.fault("partition", "partition", [d[0]], hold), settle)
        self.phase("sigstop", lambda: self.fault("sigstop", "sigstop", [d[1]], hold), settle)
        self.phase("kill9", lambda: self.fault("kill9", "kill9", [d[2]], 1.0), settle)

        def clocks():
            ts = [threading.Thread(target=self.fault, args=("clock", "clock+10s", [d[3]], 3)),
                  threading.Thread(target=self.fault, args=("clock", "clock-10s", [d[-1]], 3))]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
        self.phase("clock", clocks, 12)
        self.phase("restart", lambda: self.fault("restart", "restart", [], 0), settle)
        self.phase("leader_kill", lambda: self.fault("leader_kill", "leader_kill", [], 1.5), settle)
        half = d[:len(d) // 2]
        self.phase("half", lambda: self.fault("half", "half", half, hold), settle)

    def mixed(self, seconds):
        """Faults at random (fixed seed), overlapping, for SECONDS; clock
        steps only in time for their catch-up to end with the phase."""
        rng = random.Random(self.a.seed)
        kinds = ["partition", "sigstop", "kill9", "clock+10s", "clock-10s", "partition",
                 "sigstop", "kill9", "restart", "leader_kill", "half"]
        end = time.monotonic() + seconds
        threads = []
        while time.monotonic() < end:
            kind = rng.choice(kinds)
            hold = rng.uniform(0.5, 2.5 * TTL_MS / 1000)
            if kind.startswith("clock") and time.monotonic() + hold + 12 > end:
                continue
            if kind in ("restart", "leader_kill", "half"):
                key = {"registry"}
                targets = rng.sample(self.daemons, len(self.daemons) // 2) if kind == "half" else []
            else:
                targets = [rng.choice(self.daemons)]
                key = {targets[0].name}
            with self.busy_lock:
                if key & self.busy:
                    key = None
                else:
                    self.busy |= key
            if key:
                def one(kind=kind, targets=targets, hold=hold, key=key):
                    try:
                        self.fault("mixed", kind, targets, hold)
                    finally:
                        with self.busy_lock:
                            self.busy -= key
                t = threading.Thread(target=one)
                t.start()
                threads.append(t)
            time.sleep(rng.uniform(0.5, 2.0))
        for t in threads:
            t.join()

    def measure_idle(self, seconds):
        """The registry's CPU time with no daemon (etcd's heartbeats,
        PostgreSQL's background writers): registry_cpu.tsv's idle row, which
        the checker subtracts from the windows with load."""
        pids = self.reg.pids()
        cpu0 = cpu_ms(pids)
        time.sleep(seconds)
        idle = cpu_ms(pids) - cpu0
        with open(os.path.join(self.out, "registry_cpu.tsv"), "a") as f:
            f.write("idle\t%.1f\t0\t%.1f\n" % (seconds, idle))
        log("  registry idle: %.0f ms of CPU in %.1f s" % (idle, seconds))

    def measure_load(self, window, seconds):
        """Registry calls per host over a quiet window (load.tsv), and the
        registry's CPU time for them (registry_cpu.tsv).  The observer is
        paused meanwhile: its polls are not the daemons' load."""
        if self.observer:
            self.observer.paused.set()
        pids = self.reg.pids()
        before, cpu0 = {d.name: d.metrics() for d in self.daemons}, cpu_ms(pids)
        time.sleep(seconds)
        after, cpu1 = {d.name: d.metrics() for d in self.daemons}, cpu_ms(pids)
        if self.observer:
            self.observer.paused.clear()
        ops = 0
        with open(os.path.join(self.out, "load.tsv"), "a") as f:
            for d in self.daemons:
                b, e = before[d.name], after[d.name]
                if b and e:
                    n = [e[k] - b[k] for k in ("acquire", "renew", "mark")]
                    ops += sum(n)
                    f.write("%s\t%s\t%.1f\t%d\t%d\t%d\n" % ((d.name, window, seconds) + tuple(n)))
        with open(os.path.join(self.out, "registry_cpu.tsv"), "a") as f:
            f.write("%s\t%.1f\t%d\t%.1f\n" % (window, seconds, ops, cpu1 - cpu0))
        log("  registry load (%s): %d calls from %d daemons in %.1f s, %.0f ms of the registry's "
            "CPU" % (window, ops, len(self.daemons), seconds, cpu1 - cpu0))

    def write(self):
        o = self.out
        with open(os.path.join(o, "faults.tsv"), "w") as f:
            for row in self.faults:
                f.write("%s\t%s\t%s\t%d\t%d\t%d\n" % row)
        with open(os.path.join(o, "phases.tsv"), "w") as f:
            for row in self.phases:
                f.write("%s\t%d\t%d\n" % row)
        with open(os.path.join(o, "incarnations.tsv"), "w") as f:
            for host, pid, start, end in self.incarnations:
                f.write("%s\t%d\t%d\t%s\n" % (host, pid, start, "-" if end is None else end))
        meta = dict(LAYOUT, backend=self.reg.name, ttl_ms=TTL_MS, quarantine_ms=QUARANTINE_MS,
                    acquire_ms=ACQUIRE_MS, hosts=[d.name for d in self.daemons], seed=self.a.seed,
                    mono_to_unix_ns=time.time_ns() - mono(), registry=self.reg.uri)
        with open(os.path.join(o, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)

    def main(self):
        log("%s registry at %s; %d daemons; output in %s" %
            (self.reg.name, self.reg.uri, len(self.daemons), self.out))
        self.reg.start()
        load = obs = None
        try:
            self.measure_idle(3)
            for d in self.daemons:
                d.start()
            obs = self.observer = Observer(self.a.idgen, self.reg.uri, self.out)
            obs.thread.start()
            load = Load(self.out, self.daemons)
            load.start()
            self.scripted()
            mixed = self.a.soak or 30
            settle = (TTL_MS + QUARANTINE_MS + ACQUIRE_MS) / 1000 + 3
            self.phase("mixed", lambda: self.mixed(mixed), settle)
            self.phase("end", lambda: self.measure_load("end", 3), 0)
            for d in self.daemons:  # a restart that failed in the mixed phase: the run fails
                if not d.alive():
                    self.errors.append("%s is not running at the end" % d.name)
        finally:
            if load:
                load.finish()
            if obs:
                obs.finish()
                log("observer: %d polls, %d failed" % (obs.polls, obs.failures))
            for d in self.daemons:
                d.stop()
            self.reg.stop()
            self.write()
        for e in self.errors:
            log("error: %s" % e)
        return 1 if self.errors else 0


def inner(a, prefix):
    # Ten load threads and an observer share one interpreter: with the
    # default 5 ms GIL switch interval a reply can wait tens of ms for its
    # thread to run, and p99 would measure the client, not the daemons.
    sys.setswitchinterval(0.0005)
    os.makedirs(a.out, exist_ok=True)
    for f in os.listdir(a.out):
        p = os.path.join(a.out, f)
        if os.path.isfile(p):
            os.remove(p)
    rc = Run(a, prefix).main()
    checker = [sys.executable, os.path.join(HERE, "checker.py"), a.out,
               "--plot", os.path.join(a.out, "timeline.png")]
    crc = subprocess.run(checker).returncode
    return rc or crc


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("--idgen", required=True, help="the idgen binary")
    p.add_argument("--backend", choices=["postgres", "etcd"], required=True)
    p.add_argument("--out", help="the run directory (default: build/cluster-BACKEND)")
    p.add_argument("--daemons", type=int, default=5, choices=range(4, 7), metavar="4..6")
    p.add_argument("--seed", type=int, default=1, help="the mixed phase's random seed")
    p.add_argument("--soak", type=int, default=0, metavar="SECONDS",
                   help="run the mixed phase this long (default: 30 s)")
    p.add_argument("--inner", metavar="PREFIX", help=argparse.SUPPRESS)
    argv = sys.argv[1:]
    if argv[:1] == ["--inner"]:
        argv = argv[2:]
    a = p.parse_args(argv)
    a.idgen = os.path.abspath(a.idgen)
    a.out = os.path.abspath(a.out or os.path.join(os.path.dirname(a.idgen), "cluster-" + a.backend))
    if sys.argv[1:2] == ["--inner"]:
        return inner(a, sys.argv[2])
    return outer(a)


if __name__ == "__main__":
    sys.exit(main())
