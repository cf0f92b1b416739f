#!/usr/bin/env python3
"""The harness of the daemon's black-box suites (tests/serve/suite_*.py).

Each suite is one area of `idgen serve` (docs/SERVE.md) and
runs alone: `python3 tests/serve/suite_resp.py PATH/TO/idgen`, or through
CTest as `ctest -R serve.resp`.  A suite starts the real daemon on free
loopback ports (port 0, read back from its `event=listen` log lines) and
drives it with the real clients: curl, redis-cli, redis-benchmark, the
python3-redis module, and raw sockets for the exact bytes and for abuse.  It
prints one line per check and ends with "N passed, M failed"; exit 1 if any
check failed.

This file holds what the suites share: the daemon (Daemon, on
tests/components.py, which the other Python suites use too), wire parsers for
RESP and HTTP, clients (Conn, curl, rcli), metrics parsing, the Snowflake IDs
collected in the order obtained (SNOW) and the suite runner (run_suite).
Checks that depend on timing are in the suites labelled `timing` in
tests/CMakeLists.txt; they are not run again when they fail.

Uses only the Python standard library, the `redis` module (Debian's
python3-redis) and the binaries /usr/bin/curl, redis-cli and redis-benchmark.
"""

import errno
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import checks  # noqa: E402  tests/checks.py: the tally
import components  # noqa: E402  tests/components.py: the daemon

if len(sys.argv) != 2:
    sys.exit("usage: %s PATH/TO/idgen" % os.path.basename(sys.argv[0]))
IDGEN = os.path.abspath(sys.argv[1])

try:
    import redis  # python3-redis
except ImportError:  # a python3 other than Debian's (pyenv, venv) on PATH
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import redis
    except ImportError:
        redis = None
try:  # python3-prometheus-client: a real parser for /metrics
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    text_string_to_metric_families = None

HOST = "127.0.0.1"
TWITTER_EPOCH = 1288834974657
TWITTER_LAYOUT = "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657"
DC, WORKER = 3, 17
# The static registry: these tests pin the node values (the registry's own
# behaviour is tested in tests/registry/).
NODE_ARGS = ["--layout", "twitter", "--registry", "static", "--node", "datacenter=%d" % DC,
             "--node", "worker=%d" % WORKER]
MAX_BATCH = 1000
MAX_REQ = 4096
SLOW_MS = 2000
IDLE_MS = 3000
MAX_OUT = 1048576
ULID_RE = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")
UUID7_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
T_START_MS = int(time.time() * 1000)

WORK = components.Workdir("idgen-serve-test-")
TMP = WORK.path
DAEMONS = components.DAEMONS  # every daemon started, killed at exit if still running
CHILDREN = []  # other long-running children (redis-benchmark)


STALLS = []  # (monotonic start, seconds) when this process could not run at all for over 0.5 s


def stall_watch():
    """This machine is shared: now and then no process runs for seconds (seen:
    up to 10 s).  Nothing is run again for it; a failed suite says how long
    the machine stood still, so that a reader can tell a stall from a fault."""
    last = time.monotonic()
    while True:
        time.sleep(0.02)
        now = time.monotonic()
        if now - last > 0.5:
            STALLS.append((last, now - last))
        last = now


def stalled_since(t0):
    return sum(sec for start, sec in STALLS if start + sec >= t0)


def check(name, cond, detail=""):
    return checks.report(name, cond, detail)



def short(b, n=300):
    r = repr(b)
    return r if len(r) <= n else r[:n] + "...(%d bytes)" % len(b)


# ---------------------------------------------------------------- the daemon


class StartError(Exception):
    pass


class Daemon(components.Daemon):
    """One `idgen serve` process (tests/components.py) on free loopback
    ports for HTTP and RESP, NODE_ARGS and `extra` its settings, its log and
    its standard output in TMP; StartError if it does not listen within 60 s
    (a start takes milliseconds: the rest is for a busy machine)."""

    def __init__(self, name, extra=(), nofile_soft=None, env_extra=None, node_args=NODE_ARGS):
        super().__init__(IDGEN, TMP, name, list(node_args) + list(extra), http=HOST + ":0",
                         resp=HOST + ":0", env=env_extra, nofile_soft=nofile_soft,
                         stdout=os.path.join(TMP, name + ".out"), wait=60)
        if self.http is None:
            self.kill()
            raise StartError("%s: no listen lines (exit %s); log:\n%s"
                             % (name, self.p.poll(), self.log()[-2000:]))

    def stop(self, sig=signal.SIGTERM, timeout=30):
        return super().stop(sig, timeout)


# ------------------------------------------------------------- wire parsers


class ProtoError(Exception):
    pass


class RErr(str):
    """A RESP error reply."""


class RSimple(str):
    """A RESP simple-string reply."""


NIL = object()  # a RESP nil bulk string or nil array
INT_RE = re.compile(rb"-?[0-9]+")


class BigNum(int):
    """A RESP3 big number (`(`), told apart from an integer (`:`)."""


def parse_resp(buf, pos=0):
    """One RESP2 reply at buf[pos:], or one of the RESP3 types idgen sends
    after HELLO 3 (null `_` as NIL, map `%` as a dict, big number `(` as a
    BigNum, an int): (value, next_pos),
    None if incomplete; ProtoError if the bytes are neither."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        if len(buf) > pos and buf[pos:pos + 1] not in (b"+", b"-", b":", b"$", b"*", b"%", b"_", b"("):
            raise ProtoError("reply type byte %r" % buf[pos:pos + 1])
        return None
    t, line = buf[pos:pos + 1], buf[pos + 1:end]
    if t == b"(":
        if not re.fullmatch(rb"-?[0-9]+", line):
            raise ProtoError("bad big number %r" % line)
        return BigNum(int(line)), end + 2
    if t == b"_":
        if line:
            raise ProtoError("null with %r" % line)
        return NIL, end + 2
    if t == b"+":
        return RSimple(line.decode("latin-1")), end + 2
    if t == b"-":
        return RErr(line.decode("latin-1")), end + 2
    if not INT_RE.fullmatch(line):
        raise ProtoError("bad number %r after %r" % (line, t))
    n = int(line)
    if t == b":":
        return n, end + 2
    if t == b"$":
        if n == -1:
            return NIL, end + 2
        if n < 0:
            raise ProtoError("bulk length %d" % n)
        if len(buf) < end + 2 + n + 2:
            return None
        if buf[end + 2 + n:end + 4 + n] != b"\r\n":
            raise ProtoError("bulk string not followed by CRLF")
        return buf[end + 2:end + 2 + n], end + 4 + n
    if t == b"*":
        if n == -1:
            return NIL, end + 2
        if n < 0:
            raise ProtoError("array length %d" % n)
        items, p = [], end + 2
        for _ in range(n):
            r = parse_resp(buf, p)
            if r is None:
                return None
            items.append(r[0])
            p = r[1]
        return items, p
    if t == b"%":
        if n < 0:
            raise ProtoError("map length %d" % n)
        items, p = {}, end + 2
        for _ in range(2 * n):
            r = parse_resp(buf, p)
            if r is None:
                return None
            items[len(items)] = r[0]
            p = r[1]
        return {items[2 * i]: items[2 * i + 1] for i in range(n)}, p
    raise ProtoError("reply type byte %r" % t)


def parse_resp_all(buf):
    """All replies in buf: (list, leftover_bytes)."""
    out, pos = [], 0
    while pos < len(buf):
        r = parse_resp(buf, pos)
        if r is None:
            break
        out.append(r[0])
        pos = r[1]
    return out, buf[pos:]


class HttpResp:
    def __init__(self, status, reason, headers, body, raw_head):
        self.status, self.reason, self.headers, self.body, self.raw_head = status, reason, headers, body, raw_head

    def h(self, name):
        vals = [v for n, v in self.headers if n == name.lower()]
        return vals[-1] if vals else None

    def text(self):
        return self.body.decode("utf-8", "replace")

    def __repr__(self):
        return "<%d %s %s>" % (self.status, self.reason, short(self.body, 200))


def parse_http(buf, pos=0, to_head=False):
    """One HTTP/1.x response at buf[pos:]: (HttpResp, next_pos) or None if
    incomplete.  Insists on a Content-Length (SERVE.md: every response has one).
    to_head: the answer to a HEAD request, which has no body whatever its
    Content-Length says."""
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        if len(buf) - pos >= 5 and not buf[pos:pos + 5] == b"HTTP/":
            raise ProtoError("not an HTTP response: %s" % short(buf[pos:pos + 60]))
        return None
    head = buf[pos:end].decode("latin-1")
    lines = head.split("\r\n")
    m = re.fullmatch(r"HTTP/1\.[01] (\d{3}) ?(.*)", lines[0])
    if not m:
        raise ProtoError("bad status line %r" % lines[0])
    headers = []
    for ln in lines[1:]:
        name, sep, val = ln.partition(":")
        if not sep or not name or name != name.strip():
            raise ProtoError("bad header line %r" % ln)
        headers.append((name.lower(), val.strip()))
    cls = [v for n, v in headers if n == "content-length"]
    if len(cls) != 1 or not cls[0].isdigit():
        raise ProtoError("response without one Content-Length: %r" % head)
    body_end = end + 4 + (0 if to_head else int(cls[0]))
    if len(buf) < body_end:
        return None
    return HttpResp(int(m.group(1)), m.group(2), headers, buf[end + 4:body_end], head), body_end


class Conn:
    """A raw client socket with a receive buffer."""

    def __init__(self, port, timeout=5.0):
        self.s = socket.create_connection((HOST, port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.closed = False  # EOF or reset seen

    def send(self, data):
        self.s.sendall(data)

    def _more(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out; have %s" % short(self.buf))
        self.s.settimeout(left)
        try:
            d = self.s.recv(1 << 20)
        except socket.timeout:
            raise TimeoutError("timed out; have %s" % short(self.buf))
        except (ConnectionResetError, BrokenPipeError):
            d = b""
        if not d:
            self.closed = True
            raise EOFError("connection closed; have %s" % short(self.buf))
        self.buf += d

    def _one(self, parser, timeout):
        deadline = time.monotonic() + timeout
        while True:
            r = parser(self.buf)
            if r is not None:
                self.buf = self.buf[r[1]:]
                return r[0]
            self._more(deadline)

    def http(self, timeout=5.0, head=False):
        return self._one(lambda b: parse_http(b, to_head=head), timeout)

    def resp(self, timeout=5.0):
        return self._one(parse_resp, timeout)

    def resp_n(self, n, timeout=10.0):
        """n replies, parsed from one growing buffer (cheap for many)."""
        deadline = time.monotonic() + timeout
        out, pos = [], 0
        while len(out) < n:
            r = parse_resp(self.buf, pos)
            if r is None:
                self.buf = self.buf[pos:]
                pos = 0
                self._more(deadline)
                continue
            out.append(r[0])
            pos = r[1]
        self.buf = self.buf[pos:]
        return out

    def read_to_eof(self, timeout):
        """Reads until the peer closes (True) or `timeout` passes (False);
        the bytes are left in self.buf."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                self._more(deadline)
        except EOFError:
            return True
        except TimeoutError:
            return False

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def slow_client(port, payload, byte_per_s, result, key):
    """Sends `payload` (all at once if not byte_per_s, else one byte a second);
    result[key] = seconds from the first byte to the daemon's close (None: not
    closed within 6 s), and what it sent back."""
    s = socket.create_connection((HOST, port), timeout=5)
    got, t0, closed = b"", time.monotonic(), None
    chunks = [payload[i:i + 1] for i in range(len(payload))] if byte_per_s else [payload]
    next_send = t0
    while time.monotonic() - t0 < 6.5 and closed is None:
        if chunks and time.monotonic() >= next_send:
            try:
                s.send(chunks.pop(0))
            except OSError:
                closed = time.monotonic() - t0
                break
            next_send += 1.0
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data:
                got += data
            else:
                closed = time.monotonic() - t0
    s.close()
    result[key] = (closed, got)


def resp_exchange(port, data, n):
    """Sends data on a new RESP connection and reads n replies: their list,
    or the exception n times (so that each check shows it)."""
    c = Conn(port)
    try:
        c.send(data)
        return c.resp_n(n)
    except Exception as e:  # noqa: BLE001
        return [e] * n
    finally:
        c.close()


def http_req(path, method="GET", headers=(), version="1.1"):
    lines = ["%s %s HTTP/%s" % (method, path, version), "Host: 127.0.0.1"] + list(headers)
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def raw_get(port, path, method="GET", headers=()):
    """One request on a new connection, its exact target as given: the
    response, or the exception met reading it."""
    c = Conn(port)
    try:
        c.send(http_req(path, method=method, headers=headers))
        return c.http()
    except Exception as e:  # noqa: BLE001
        return e
    finally:
        c.close()


def http_then_eof(port, data, eof_timeout=2):
    """Sends raw bytes on a new HTTP connection; returns (the first response
    or the exception met reading it, whether the daemon then closed, the
    bytes that came after the response)."""
    return reply_then_eof(port, data, Conn.http, eof_timeout)


def reply_then_eof(port, data, read, eof_timeout=2):
    """http_then_eof with `read` (Conn.http, Conn.resp) reading the reply."""
    c = Conn(port)
    try:
        c.send(data)
        try:
            r = read(c)
        except Exception as e:  # noqa: BLE001
            r = e
        closed = c.read_to_eof(eof_timeout)
        return r, closed, c.buf
    finally:
        c.close()


def json_body(r):
    """The response's body as JSON, or None (no response, or not JSON)."""
    try:
        return json.loads(r.body)
    except Exception:  # noqa: BLE001
        return None


def resp_cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


# ------------------------------------------------------------ real clients


def curl(port, path, *args, timeout=10):
    """curl -i: (HttpResp or None, detail)."""
    cmd = ["curl", "-sS", "-i", "--max-time", str(timeout)] + list(args) + ["http://%s:%d%s" % (HOST, port, path)]
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout + 5)
    except subprocess.TimeoutExpired:
        return None, "curl hung"
    if p.returncode != 0:
        return None, "curl exit %d: %s (stdout %s)" % (p.returncode, p.stderr.decode().strip(), short(p.stdout))
    try:
        r = parse_http(p.stdout, to_head="-I" in args)
    except ProtoError as e:
        return None, "curl output: %s" % e
    if r is None:
        return None, "incomplete response: %s" % short(p.stdout)
    if r[1] != len(p.stdout):
        return None, "bytes after the response: %s" % short(p.stdout[r[1]:])
    return r[0], ""


def rcli(port, *args, stdin=None, timeout=20):
    """redis-cli --no-raw: (exit status, stdout text, stderr text)."""
    cmd = ["redis-cli", "-h", HOST, "-p", str(port), "--no-raw"] + [str(a) for a in args]
    try:
        p = subprocess.run(cmd, input=(stdin or "").encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "", "redis-cli hung"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def idgen_decode(id_text, layout="twitter"):
    p = subprocess.run([IDGEN, "decode", "--json", "--layout", layout, id_text], capture_output=True, timeout=10)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout.decode())


def sf_fields(i):
    return {"unix_ms": (i >> 22) + TWITTER_EPOCH, "datacenter": (i >> 17) & 31,
            "worker": (i >> 12) & 31, "sequence": i & 4095, "top": i >> 63}


def get_metrics(d):
    """{(name, frozenset(labels)): value} from GET /metrics (raw socket), and the text."""
    c = Conn(d.http)
    try:
        c.send(http_req("/metrics"))
        r = c.http()
    finally:
        c.close()
    if r.status != 200:
        raise AssertionError("GET /metrics: %r" % r)
    text = r.text()
    samples = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?", ln)
        if not m:
            raise AssertionError("unparsable metrics line %r" % ln)
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        samples[(m.group(1), labels)] = float(m.group(3))
    return samples, text


def msum(samples, name, **labels):
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


def mget(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())))


def served(d, what):
    """Another client is still served: a fresh curl GET /health and a RESP PING."""
    ok, detail = served_once(d)
    return check("still served after %s (GET /health, PING)" % what, ok, detail)


def served_once(d):
    t0 = time.monotonic()
    r, det = curl(d.http, "/health", timeout=5)
    ok_http = r is not None and r.status == 200 and r.body.strip() == b"ok"
    dt_http = time.monotonic() - t0
    ok_resp, got = False, None
    try:
        c = Conn(d.resp, timeout=3)
        c.send(b"PING\r\n")
        got = c.resp(3)
        ok_resp = got == "PONG" and isinstance(got, RSimple)
        c.close()
    except Exception as e:  # noqa: BLE001
        got = e
    dt = time.monotonic() - t0
    return (ok_http and ok_resp and d.alive() and dt < 3,
            "health=%r %s (%.2fs) ping=%r (%.2fs) alive=%s" % (r, det, dt_http, got, dt - dt_http, d.alive()))


def one_line_error(r):
    """An error response: text/plain, one non-empty line (a final newline or not)."""
    b = r.body[:-1] if r.body.endswith(b"\n") else r.body
    return (r.h("content-type") or "").startswith("text/plain") and len(b.strip()) > 0 and \
        b"\n" not in b and b"\r" not in b


# --------------------------------------------------------- collected IDs

SNOW = []  # (source, id) in the order obtained; all requests sequential


def add_snow(source, ids):
    for i in ids:
        SNOW.append((source, i))


def increasing(seq):
    return all(a < b for a, b in zip(seq, seq[1:]))


ULIDS, UUIDS = [], []  # every ULID / UUIDv7 text seen, for global uniqueness


def check_ulids(name, ids):
    ULIDS.extend(ids)
    ok = len(ids) > 0 and all(isinstance(x, str) and ULID_RE.fullmatch(x) for x in ids)
    check(name + ": canonical ULIDs", ok, short(ids))
    check(name + ": ULIDs strictly increasing", ok and increasing(ids), short(ids))


def check_uuids(name, ids):
    UUIDS.extend(ids)
    ok = len(ids) > 0 and all(isinstance(x, str) and UUID7_RE.fullmatch(x) for x in ids)
    check(name + ": UUIDv7 form (version 7, variant 10, lower case)", ok, short(ids))
    check(name + ": UUIDv7s strictly increasing", ok and increasing(ids), short(ids))


def digits_lines(body):
    t = body.decode("ascii", "replace")
    if not t.endswith("\n"):
        return None
    lines = t[:-1].split("\n")
    if not all(re.fullmatch(r"[0-9]{1,20}", x) for x in lines):
        return None
    return [int(x) for x in lines]


def text_lines(body):
    t = body.decode("ascii", "replace")
    return t[:-1].split("\n") if t.endswith("\n") else None


def group_snow_order(kinds):
    """The Snowflake IDs this suite collected, from every client kind in
    `kinds`, in the order obtained: unique, strictly increasing, with this
    test's node values and times.  ULIDs and UUIDv7s collected: unique."""
    ids = [i for _, i in SNOW]
    n = len(ids)
    got = {src.split()[0] for src, _ in SNOW}
    check("collected %d Snowflake IDs from %s" % (n, ", ".join(sorted(kinds))),
          got >= set(kinds), "from %s" % sorted(got))
    check("all Snowflake IDs unique", len(set(ids)) == n, "%d duplicates" % (n - len(set(ids))))
    bad = [(SNOW[k], SNOW[k + 1]) for k in range(n - 1) if not SNOW[k][1] < SNOW[k + 1][1]]
    check("Snowflake IDs strictly increasing in the order obtained (across clients)", not bad, short(bad[:3]))
    now = int(time.time() * 1000)
    wrong = [(src, i, sf_fields(i)) for src, i in SNOW
             if not (sf_fields(i)["datacenter"] == DC and sf_fields(i)["worker"] == WORKER and sf_fields(i)["top"] == 0
                     and T_START_MS - 2000 <= sf_fields(i)["unix_ms"] <= now + 2000)]
    check("every Snowflake ID decodes to datacenter=3 worker=17 and a time within the test",
          not wrong, short(wrong[:3]))
    sample = [SNOW[0][1], SNOW[n // 2][1], SNOW[-1][1]] if n else []
    ok = bool(sample)
    for i in sample:
        dj = idgen_decode(str(i))
        f = sf_fields(i)
        ok = ok and dj is not None and dj["fields"] == {"datacenter": f["datacenter"], "worker": f["worker"],
                                                        "sequence": f["sequence"]} and dj["unix_ms"] == f["unix_ms"]
    check("idgen decode --json agrees with the bit arithmetic (first, middle, last)", ok)
    if ULIDS or UUIDS:
        check("all ULIDs unique (%d)" % len(ULIDS), len(ULIDS) > 0 and len(set(ULIDS)) == len(ULIDS))
        check("all UUIDv7s unique (%d)" % len(UUIDS), len(UUIDS) > 0 and len(set(UUIDS)) == len(UUIDS))


MAIN_ARGS = ["--max-batch", str(MAX_BATCH), "--max-request-bytes", str(MAX_REQ),
             "--slow-timeout-ms", str(SLOW_MS), "--idle-timeout-ms", str(IDLE_MS),
             "--max-output-bytes", str(MAX_OUT)]


def run_group(name, fn, *args):
    """Runs one group of checks; an exception is a failed check."""
    print("# " + name, flush=True)
    try:
        fn(*args)
    except Exception:  # noqa: BLE001
        check("%s ran to the end" % name, False, traceback.format_exc().strip().replace("\n", " | ")[-600:])


def run_suite(name, before=(), with_daemon=(), after=(), snow_kinds=None, watchdog_s=270):
    """Runs a suite: the groups of `before` (name, fn) with no daemon; then,
    if `with_daemon`, one daemon with MAIN_ARGS (the static registry, node
    datacenter=3 worker=17) through which each of those groups runs, and the
    order check of the Snowflake IDs from `snow_kinds`; then the groups of
    `after`, which start daemons of their own.  Exits 0 if every check
    passed, else 1.  The watchdog (a suite takes 5 to 55 s with the machine
    busy) ends a stuck suite with its stack, before ctest's 300 s would end
    it without one."""
    t_begin = time.monotonic()

    def on_alarm(signum, frame):
        check("suite %s finished within the watchdog's %ds" % (name, watchdog_s), False,
              "stuck in:\n" + "".join(traceback.format_stack(frame)[-3:]))
        for c in CHILDREN + [dd.p for dd in DAEMONS]:
            if c.poll() is None:
                c.kill()
        print(checks.summary(), flush=True)
        os._exit(1)
    threading.Thread(target=stall_watch, daemon=True).start()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(watchdog_s)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < min(hard, 20000):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
    try:
        for group, fn in before:
            run_group(group, fn)
        if with_daemon:
            try:
                d = Daemon("main", MAIN_ARGS)
                check("daemon starts; listen lines give the ports",
                      d.p.poll() is None and 0 < d.http < 65536 and 0 < d.resp < 65536
                      and d.http != d.resp, (d.http, d.resp))
            except StartError as e:
                check("daemon starts; listen lines give the ports", False, str(e))
                d = None
            for group, fn in with_daemon if d else ():
                run_group(group, fn, d)
                if not d.alive():
                    check("daemon still running after %s" % group, False, d.log()[-1000:])
                    break
            if d and snow_kinds:
                run_group("Snowflake IDs across all clients", group_snow_order, snow_kinds)
            if d:
                rc = d.stop()
                check("main daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        for group, fn in after:
            run_group(group, fn)
    finally:
        signal.alarm(0)
        for c in CHILDREN:
            if c.poll() is None:
                c.kill()
                c.wait()
        for dd in DAEMONS:
            dd.kill()
    # A sanitizer's report does not always change an exit status (a race seen by
    # ThreadSanitizer in a daemon that is killed, not stopped): read every log.
    # The daemon's own lines (ts=...) may quote what a client sent; a sanitizer's never start so.
    reports = []
    for dd in DAEMONS:
        for ln in dd.log().splitlines():
            if ln.startswith("ts="):
                continue
            if re.search(r"WARNING: ThreadSanitizer|ERROR: (Address|Leak)Sanitizer|^\S+:\d+:\d+: runtime error: ", ln):
                reports.append("%s: %s" % (dd.name, ln[:160]))
                break
    check("no sanitizer report in the %d daemons' logs" % len(DAEMONS), not reports,
          "%s; logs in %s" % ("; ".join(reports[:5]), TMP))
    took = time.monotonic() - t_begin
    if checks.failed:
        stood = stalled_since(0)
        print("# %.1fs; daemon logs kept in %s%s" % (took, TMP, "; the machine stood still %.1fs in all (no "
                                                              "process ran), see the failed checks' times" % stood
                                                     if stood > 0.5 else ""))
    else:
        print("# %.1fs" % took)
        WORK.remove()
    print(checks.summary())
    sys.exit(1 if checks.failed else 0)
