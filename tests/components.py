"""The real components the Python suites start: `idgen serve` daemons, a
throwaway PostgreSQL (tests/pg_server.sh), a throwaway etcd cluster
(tests/etcd_server.sh) and the directories they keep their files in.

Used by the daemon's suites (tests/serve/harness.py), the registry's
(tests/registry/harness.py), the status page's (tests/status_page_test.py)
and the cluster test (tests/cluster/cluster.py), so that each component is
started, found and stopped one way:

- ports are free because something bound them: a daemon listens on port 0
  and the test reads the port the kernel gave it back from its
  `event=listen` log lines; a server that must be told its port gets one
  that a bind found free (below the ephemeral range, where no client
  connection of another test can be holding it);
- a process is stopped through the Popen (or the PID file of the script)
  that started it, never found by name (scripts/check-scoped-kills.py);
- files go under a directory the test made (Workdir), removed when every
  check passed and kept for reading when one failed.

Uses only the Python standard library.
"""

import http.client
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PG_SERVER = os.path.join(HERE, "pg_server.sh")
ETCD_SERVER = os.path.join(HERE, "etcd_server.sh")
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"

DAEMONS = []  # every daemon started by this process, for stop_all()


# ------------------------------------------------------------ ports, dirs


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port):
    """Whether `port` on 127.0.0.1 can be bound now."""
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_ports_below_ephemeral(n=1, first=22000, step=1):
    """The first of `n` consecutive free ports, found by binding, between
    `first` (moved by this process's pid, so that two tests started together
    look in different places) and 32000, below the ephemeral range
    (32768..): no client connection of another test holds one of them."""
    span = 32000 - first - n
    for k in range(0, span, step):
        port = first + (os.getpid() * 7 * step + k) % span // step * step
        if all(port_free(port + j) for j in range(n)):
            return port
    raise RuntimeError("no %d free ports below 32000" % n)


class Workdir:
    """A directory this test made (tempfile.mkdtemp), readable by the
    postgres user (a throwaway PostgreSQL keeps its data inside)."""

    def __init__(self, prefix):
        self.path = tempfile.mkdtemp(prefix=prefix)
        os.chmod(self.path, 0o755)

    def join(self, *names):
        return os.path.join(self.path, *names)

    def registry(self, name):
        """A file: registry in a directory of its own here (the registry
        makes it at its first lease)."""
        return "file:" + self.join(name)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)


def clean_env(extra=None):
    """This process's environment without IDGEN_* (a setting left in the
    caller's shell must not reach the daemon under test), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    env.update(extra or {})
    return env


def faketime_env(stamp, offset):
    """The environment of a process whose wall clock is `offset` ("-10s",
    "+0") from the real one, read from the file `stamp`, which can be
    rewritten while it runs; the monotonic clock is left alone."""
    with open(stamp, "w") as f:
        f.write(offset + "\n")
    return {"LD_PRELOAD": FAKETIME, "FAKETIME_TIMESTAMP_FILE": stamp, "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


# ---------------------------------------------------------------- the daemon


LISTEN_RE = re.compile(r"event=listen proto=(\w+) addr=\S*:(\d+)")


class Daemon:
    """One `idgen serve` process: its log (stderr) in DIR/NAME.log, its
    ports read back from its `event=listen` lines.

    args    the settings after `serve --http HTTP --resp RESP`
    http, resp  where it listens ("127.0.0.1:0": a port the kernel picks;
            resp "off": none)
    env     added to the environment, which loses every IDGEN_* variable
    cwd, user   its working directory; another user to run as (setpriv execs,
            so the recorded pid is the daemon's)
    wrap    a command prefix that execs it (ip netns exec NS)
    nofile_soft  its RLIMIT_NOFILE soft limit
    stdout  a file for its standard output (default: none)
    wait    seconds to wait for its listen lines (0: do not wait); a start
            takes milliseconds (a network registry's lease, a second), so
            the default is there for a busy machine, and only a daemon that
            never listens meets it

    After the wait, self.http and self.resp are the ports (None if not
    seen); self.port is self.http.  self.p is the Popen: signals go to it
    and to nothing else."""

    def __init__(self, idgen, workdir, name, args=(), http="127.0.0.1:0", resp="off", env=None,
                 cwd=None, user=None, wrap=(), nofile_soft=None, stdout=None, wait=60):
        self.name = name
        self.logpath = os.path.join(workdir, name + ".log")
        pre = ["setpriv", "--reuid=" + user, "--regid=nogroup", "--clear-groups"] if user else []
        self.args = [idgen, "serve", "--http", http, "--resp", resp] + list(args)
        self.want = ["http"] + ([] if resp == "off" else ["resp"])

        def limit():
            if nofile_soft is not None:
                _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile_soft, hard))

        # Appended to, and read from where this daemon began: a name used
        # again does not see (or clobber) the lines of the one before.
        with open(self.logpath, "ab") as log:
            self.log_from = log.tell()
            out = open(stdout, "wb") if stdout else subprocess.DEVNULL
            try:
                self.p = subprocess.Popen(list(wrap) + pre + self.args, stdin=subprocess.DEVNULL,
                                          stdout=out, stderr=log, env=clean_env(env), cwd=cwd,
                                          preexec_fn=limit if nofile_soft is not None else None)
            finally:
                if stdout:
                    out.close()
        DAEMONS.append(self)
        self.http = self.resp = self.port = None
        if wait:
            self.wait_listening(wait)

    def wait_listening(self, seconds=60):
        """Whether it logged a listen line for each protocol it was given
        within `seconds` (False at once if it exited); sets the ports."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ports = dict(LISTEN_RE.findall(self.log()))
            if all(p in ports for p in self.want):
                self.http = self.port = int(ports["http"])
                self.resp = int(ports["resp"]) if "resp" in ports else None
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.01)
        return False

    def log(self):
        with open(self.logpath, "rb") as f:
            f.seek(self.log_from)
            return f.read().decode("utf-8", "replace")

    def alive(self):
        return self.p.poll() is None

    def get(self, path, host="127.0.0.1"):
        """(status, body) of GET path; (0, the error) if it did not answer
        within 30 s (an answer takes milliseconds; a busy machine may stand
        still for seconds)."""
        try:
            c = http.client.HTTPConnection(host, self.port, timeout=30)
            c.request("GET", path)
            r = c.getresponse()
            out = (r.status, r.read().decode())
            c.close()
            return out
        except (OSError, http.client.HTTPException) as e:
            return (0, str(e))

    def ids(self, n=1):
        """n Snowflake IDs from GET /id?count=n, or None."""
        st, body = self.get("/id?count=%d" % n)
        return [int(x) for x in body.split()] if st == 200 else None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig` and waits: its exit status, or None if it had to be
        killed after `timeout` seconds (the drain's limit, 5 s by default,
        and the lease's release are well within it)."""
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        """SIGKILL (which also ends a stopped process) and reap."""
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()


def stop_all():
    """Kills every daemon this process started that still runs."""
    for d in DAEMONS:
        d.kill()


# ------------------------------------------------------------ the registries


def run_script(script, *args, env=None, wrap=(), timeout=120):
    return subprocess.run(list(wrap) + [script] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **(env or {})))


class Postgres:
    """A throwaway PostgreSQL 15 (tests/pg_server.sh: initdb in `dir` as the
    postgres user, trust authentication, its socket in `dir`).  `port`
    defaults to a free one below the ephemeral range; `host` (PG_HOST) and
    `wrap` (ip netns exec NS) serve the cluster test.  self.uri is its
    registry URI.  Stopped, and `dir` removed, by the script."""

    def __init__(self, dir, port=None, host=None, wrap=(), start=True):
        self.dir = dir
        self.port = port or free_ports_below_ephemeral(1, 25000)
        self.env = {"PG_HOST": host} if host else {}
        self.wrap = list(wrap)
        self.uri = "postgres://postgres@%s:%d/postgres" % (host or "127.0.0.1", self.port)
        if start:
            self.start()

    def start(self):
        r = run_script(PG_SERVER, "start", self.dir, self.port, env=self.env, wrap=self.wrap)
        if r.returncode != 0:
            raise RuntimeError("pg_server.sh start: " + r.stderr)
        self.uri = r.stdout.strip().splitlines()[-1]

    def ctl(self, action):
        """pause (stop, keeping the data), resume or stop; whether it worked
        (the script's complaint printed if not)."""
        r = run_script(PG_SERVER, action, self.dir, env=self.env, wrap=self.wrap)
        return r.returncode == 0 or print(r.stderr)

    def stop(self):
        self.ctl("stop")

    def postmaster_pid(self):
        """The postmaster's pid from its own PID file, or None."""
        try:
            with open(os.path.join(self.dir, "data", "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None


class Etcd:
    """A throwaway etcd cluster of `members` (tests/etcd_server.sh) with its
    data in `dir`; member I's client port is PORT+2I, its peer port
    PORT+2I+1, PORT by default the first of free ports below the ephemeral
    range.  `tls`: clients must show a certificate of its CA.  `hosts` and
    `netns` (the cluster test): member I listens on hosts[I], inside network
    namespace netns[I].  self.uri is its registry URI."""

    def __init__(self, dir, members=1, tls=False, hosts=None, netns=None, port=None, start=True):
        self.dir = dir
        self.members = members
        self.tls = tls
        self.port = port or free_ports_below_ephemeral(2 * members, 22000, 2)
        self.env = {}
        if hosts:
            self.env["ETCD_HOSTS"] = ",".join(hosts)
        if netns:
            self.env["ETCD_NETNS"] = ",".join(netns)
        self.uri = "etcd://" + ",".join("%s:%d" % (h, self.port + 2 * i) for i, h in
                                        enumerate(hosts or ["127.0.0.1"] * members))
        if start:
            self.start()

    def start(self):
        r = run_script(ETCD_SERVER, "start", self.dir, self.port, self.members,
                       *(["tls"] if self.tls else []), env=self.env)
        if r.returncode != 0:
            raise RuntimeError("etcd_server.sh start: " + r.stderr)
        self.uri = r.stdout.strip().splitlines()[-1]

    def ctl(self, action, *args):
        """kill|term|pause|resume I, restart I..., or leader: the script's
        output, or None (its complaint printed) if it failed."""
        r = run_script(ETCD_SERVER, action, self.dir, *args)
        if r.returncode != 0:
            print(r.stderr)
        return r.stdout.strip() if r.returncode == 0 else None

    def stop(self):
        self.ctl("stop")

    def pids(self):
        """The members' pids, from the PID files the script wrote, of those
        still running."""
        out = []
        for i in range(self.members):
            try:
                with open(os.path.join(self.dir, "m%d.pid" % i)) as f:
                    pid = int(f.read())
            except (OSError, ValueError):
                continue
            if os.path.exists("/proc/%d" % pid):
                out.append(pid)
        return out
