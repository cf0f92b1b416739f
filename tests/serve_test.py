#!/usr/bin/env python3
"""Black-box integration test of `idgen serve` (SPEC section 7, docs/SERVE.md).

Usage: python3 tests/serve_test.py PATH/TO/idgen

Starts the real daemon on free loopback ports (port 0, read back from its
`event=listen` log lines) and drives it with the real clients: curl,
redis-cli, redis-benchmark, the python3-redis module, and raw sockets for the
exact bytes and for abuse.  Prints one line per check and ends with the line
"N passed, M failed"; exits 1 if any check failed.

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

import checks  # tests/checks.py: the tally

if len(sys.argv) != 2:
    sys.exit("usage: serve_test.py PATH/TO/idgen")
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
TWITTER_SPEC = "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657"
DC, WORKER = 3, 17
# The static registry: these tests pin the node values (the registry's own
# behaviour is tested in tests/registry_test.py).
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

TMP = tempfile.mkdtemp(prefix="idgen-serve-test-")
DAEMONS = []  # every daemon started, killed at exit if still running
CHILDREN = []  # other long-running children (redis-benchmark)


BUFFER = None  # while a group may be run again: [(ok, name, detail)], reported when it is kept
STALLS = []  # (monotonic start, seconds) when this process could not run at all for over 0.5 s


def stall_watch():
    """This machine is shared: now and then no process runs for seconds (seen:
    up to 10 s).  Timing checks that fail across such a pause are run again."""
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
    if BUFFER is not None:
        BUFFER.append((bool(cond), name, detail))
        return bool(cond)
    return checks.report(name, cond, detail)



def short(b, n=300):
    r = repr(b)
    return r if len(r) <= n else r[:n] + "...(%d bytes)" % len(b)


# ---------------------------------------------------------------- the daemon


class StartError(Exception):
    pass


class Daemon:
    """One `idgen serve` process, its log in a file, its ports from the log."""

    def __init__(self, name, extra=(), nofile_soft=None, env_extra=None, node_args=NODE_ARGS):
        self.name = name
        self.logpath = os.path.join(TMP, name + ".log")
        self.outpath = os.path.join(TMP, name + ".out")
        self.args = [IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0"] + list(node_args) + list(extra)
        env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
        env.update(env_extra or {})

        def pre():
            if nofile_soft is not None:
                _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile_soft, hard))

        with open(self.logpath, "wb") as log, open(self.outpath, "wb") as out:
            self.p = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                      env=env, preexec_fn=pre)
        DAEMONS.append(self)
        self.http = self.resp = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = self.log()
            m1 = re.search(r"event=listen proto=http addr=127\.0\.0\.1:(\d+)", text)
            m2 = re.search(r"event=listen proto=resp addr=127\.0\.0\.1:(\d+)", text)
            if m1 and m2:
                self.http, self.resp = int(m1.group(1)), int(m2.group(1))
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.02)
        self.kill()
        raise StartError("%s: no listen lines (exit %s); log:\n%s" % (name, self.p.poll(), self.log()[-2000:]))

    def log(self):
        with open(self.logpath, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def alive(self):
        return self.p.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=10):
        if self.p.poll() is None:
            self.p.send_signal(sig)
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


# ------------------------------------------------------------- wire parsers


class ProtoError(Exception):
    pass


class RErr(str):
    """A RESP error reply."""


class RSimple(str):
    """A RESP simple-string reply."""


NIL = object()  # a RESP nil bulk string or nil array
INT_RE = re.compile(rb"-?[0-9]+")


def parse_resp(buf, pos=0):
    """One RESP2 reply at buf[pos:]: (value, next_pos), None if incomplete;
    ProtoError if the bytes are not RESP2."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        if len(buf) > pos and buf[pos:pos + 1] not in (b"+", b"-", b":", b"$", b"*"):
            raise ProtoError("reply type byte %r" % buf[pos:pos + 1])
        return None
    t, line = buf[pos:pos + 1], buf[pos + 1:end]
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
    c = Conn(port)
    try:
        c.send(data)
        try:
            r = c.http()
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
    """Another client is still served: a fresh curl GET /health and a RESP PING
    (tried again if it was slow only because the whole machine stood still)."""
    t0 = time.monotonic()
    ok, detail = served_once(d)
    if not ok and stalled_since(t0) > 0.5:
        ok, detail = served_once(d)
        detail += " (second try; the machine stood still %.1fs)" % stalled_since(t0)
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


# ================================================================ groups


def group_http_routes(d):
    # /id text
    r, det = curl(d.http, "/id")
    ids = digits_lines(r.body) if r else None
    check("GET /id: 200 text/plain, one decimal ID and a newline",
          r is not None and r.status == 200 and (r.h("content-type") or "").startswith("text/plain")
          and ids is not None and len(ids) == 1, det or repr(r))
    check("GET /id: Content-Length matches", r is not None and r.h("content-length") == str(len(r.body)), repr(r))
    add_snow("curl /id", ids or [])

    # /id?count=5
    r, det = curl(d.http, "/id?count=5")
    ids = digits_lines(r.body) if r else None
    check("GET /id?count=5: five IDs", r is not None and r.status == 200 and ids is not None and len(ids) == 5,
          det or repr(r))
    add_snow("curl /id?count=5", ids or [])

    # max_batch exactly
    r, det = curl(d.http, "/id?count=%d" % MAX_BATCH)
    ids = digits_lines(r.body) if r else None
    check("GET /id?count=max_batch (%d): all of them" % MAX_BATCH,
          r is not None and r.status == 200 and ids is not None and len(ids) == MAX_BATCH, det or repr(r))
    add_snow("curl /id?count=max", ids or [])

    # JSON by format=json
    r, det = curl(d.http, "/id?format=json")
    j = json_body(r)
    ok = r is not None and r.status == 200 and (r.h("content-type") or "").startswith("application/json") \
        and isinstance(j, dict) and list(j) == ["ids"] and len(j["ids"]) == 1 \
        and all(isinstance(x, str) and x.isdigit() for x in j["ids"])
    check("GET /id?format=json: application/json {\"ids\":[\"…\"]}, IDs as strings", ok, det or repr(r))
    if ok:
        add_snow("curl /id?format=json", [int(x) for x in j["ids"]])

    # JSON by Accept
    r, det = curl(d.http, "/id?count=3", "-H", "Accept: application/json")
    j = json_body(r)
    ok = r is not None and r.status == 200 and (r.h("content-type") or "").startswith("application/json") \
        and isinstance(j, dict) and len(j.get("ids", [])) == 3 \
        and all(isinstance(x, str) and x.isdigit() for x in j["ids"])
    check("GET /id?count=3 with Accept: application/json: JSON of 3", ok, det or repr(r))
    if ok:
        add_snow("curl /id?count=3 Accept json", [int(x) for x in j["ids"]])

    # format=text wins over Accept
    r, det = curl(d.http, "/id?count=2&format=text", "-H", "Accept: application/json")
    ids = digits_lines(r.body) if r else None
    check("GET /id?count=2&format=text with Accept: application/json: text",
          r is not None and r.status == 200 and (r.h("content-type") or "").startswith("text/plain")
          and ids is not None and len(ids) == 2, det or repr(r))
    add_snow("curl format=text", ids or [])

    # ULIDs and UUIDv7s, text and JSON
    for kind, chk, rx in (("ulid", check_ulids, ULID_RE), ("uuid7", check_uuids, UUID7_RE)):
        r, det = curl(d.http, "/" + kind)
        lines = text_lines(r.body) if r else None
        check("GET /%s: 200 text/plain, one line" % kind,
              r is not None and r.status == 200 and (r.h("content-type") or "").startswith("text/plain")
              and lines is not None and len(lines) == 1, det or repr(r))
        chk("GET /" + kind, lines or [])
        r, det = curl(d.http, "/%s?count=50" % kind)
        lines = text_lines(r.body) if r else None
        check("GET /%s?count=50: 50 lines" % kind, r is not None and r.status == 200 and lines is not None
              and len(lines) == 50, det or repr(r))
        chk("GET /%s?count=50" % kind, lines or [])
        for how, path, hdr in (("format=json", "/%s?count=4&format=json" % kind, []),
                               ("Accept", "/%s?count=4" % kind, ["-H", "Accept: application/json"])):
            r, det = curl(d.http, path, *hdr)
            j = json_body(r)
            ok = r is not None and r.status == 200 and (r.h("content-type") or "").startswith("application/json") \
                and isinstance(j, dict) and list(j) == ["ids"] and len(j["ids"]) == 4
            check("GET /%s JSON by %s: {\"ids\":[4 strings]}" % (kind, how), ok, det or repr(r))
            chk("GET /%s JSON by %s" % (kind, how), j["ids"] if ok else [])
        r, det = curl(d.http, "/%s?count=%d" % (kind, MAX_BATCH + 1))
        check("GET /%s?count=max_batch+1: 400 one line" % kind,
              r is not None and r.status == 400 and one_line_error(r), det or repr(r))

    # a ULID's and a UUIDv7's time is now
    now = int(time.time() * 1000)
    if ULIDS:
        dj = idgen_decode(ULIDS[-1])
        check("a served ULID's time is now (idgen decode)", dj is not None and abs(dj["unix_ms"] - now) < 5000,
              repr(dj))
    if UUIDS:
        dj = idgen_decode(UUIDS[-1])
        check("a served UUIDv7's time is now (idgen decode)", dj is not None and dj.get("version") == 7
              and abs(dj["unix_ms"] - now) < 5000, repr(dj))

    # count errors
    for q in ("count=0", "count=-1", "count=abc", "count=", "count=%d" % (MAX_BATCH + 1),
              "count=99999999999999999999999", "count=1.5", "foo=1", "format=xml"):
        r, det = curl(d.http, "/id?" + q)
        check("GET /id?%s: 400 with a one-line text body" % q[:40],
              r is not None and r.status == 400 and one_line_error(r), det or repr(r))
    served(d, "bad counts and parameters")
    # SERVE.md: a 400 for a bad query, a 404, or a 405 without a body keeps the connection open
    for name, first, status in (("GET /id?count=0", http_req("/id?count=0"), 400),
                                ("GET /id?agent=a_b", http_req("/id?agent=a_b"), 400),
                                ("GET /nope", http_req("/nope"), 404),
                                ("POST /id without a body", http_req("/id", method="POST"), 405)):
        c = Conn(d.http)
        c.send(first + http_req("/health"))
        try:
            r1, r2 = c.http(), c.http()
            ok = r1.status == status and r2.status == 200 and r2.body.strip() == b"ok"
        except Exception as e:  # noqa: BLE001
            ok, r1, r2 = False, e, None
        check("%s pipelined with GET /health: %d, then the health answer on the same connection" % (name, status),
              ok, "%r %r" % (r1, r2))
        c.close()
    # ... while a 405 with a body closes it
    r, closed, rest = http_then_eof(d.http, b"POST /id HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
                                    + http_req("/health"))
    check("POST /id with a body: 405, then closed (nothing after it answered)",
          isinstance(r, HttpResp) and r.status == 405 and closed and rest == b"", "%r then %s closed=%s" % (
              r, short(rest), closed))

    # agents
    m0, _ = get_metrics(d)
    base_sf = mget(m0, "idgen_ids_issued_total", kind="snowflake", agent="curl-test") or 0
    base_ul = mget(m0, "idgen_ids_issued_total", kind="ulid", agent="curl-test") or 0
    r1, det1 = curl(d.http, "/id?agent=curl-test")
    r2, det2 = curl(d.http, "/id?count=4&agent=curl-test&format=json")
    r3, det3 = curl(d.http, "/ulid?agent=curl-test")
    ok = all(r is not None and r.status == 200 for r in (r1, r2, r3))
    check("GET with agent=curl-test: 200", ok, "%r %r %r %s%s%s" % (r1, r2, r3, det1, det2, det3))
    if ok:
        add_snow("curl agent", digits_lines(r1.body) or [])
        try:
            add_snow("curl agent json", [int(x) for x in json.loads(r2.body)["ids"]])
        except Exception as e:  # noqa: BLE001
            check("GET agent+format=json parses", False, repr(e))
    m1, _ = get_metrics(d)
    sf = mget(m1, "idgen_ids_issued_total", kind="snowflake", agent="curl-test")
    ul = mget(m1, "idgen_ids_issued_total", kind="ulid", agent="curl-test")
    check('metrics: idgen_ids_issued_total{kind="snowflake",agent="curl-test"} counts 5',
          sf is not None and sf - base_sf == 5, "value %r (before %r)" % (sf, base_sf))
    check('metrics: idgen_ids_issued_total{kind="ulid",agent="curl-test"} counts 1',
          ul is not None and ul - base_ul == 1, "value %r (before %r)" % (ul, base_ul))
    r, det = curl(d.http, "/id?agent=" + "a" * 64)
    check("agent of 64 characters: 200", r is not None and r.status == 200, det or repr(r))
    add_snow("curl agent64", (digits_lines(r.body) or []) if r and r.status == 200 else [])
    for bad in ("9lives", "a_b", "a.b", "a" * 65, "", "-a", "%C3%A9t%C3%A9"):
        r, det = curl(d.http, "/id?agent=" + bad)
        check("agent=%s: 400 one line" % (bad[:20] + ("…" if len(bad) > 20 else "")),
              r is not None and r.status == 400 and one_line_error(r), det or repr(r))

    # decode
    for kind, id_text, layout in (("snowflake", str(SNOW[-1][1]) if SNOW else "0", "twitter"),
                                  ("ULID", ULIDS[-1] if ULIDS else "0", "twitter"),
                                  ("UUIDv7", UUIDS[-1] if UUIDS else "0", "twitter"),
                                  ("known snowflake", "910499571847892992", "twitter")):
        r, det = curl(d.http, "/decode/" + id_text)
        want = idgen_decode(id_text, layout)
        got = json_body(r)
        check("GET /decode/<%s>: application/json equal to idgen decode --json" % kind,
              r is not None and r.status == 200 and (r.h("content-type") or "").startswith("application/json")
              and want is not None and got == want, "%s want %r got %r" % (det, want, r))
    r, det = curl(d.http, "/decode/12x4")
    check("GET /decode/12x4 (not an ID): 400 (or 404) one line",
          r is not None and r.status in (400, 404) and one_line_error(r),
          det or repr(r))
    if SNOW:
        dj = idgen_decode(str(SNOW[-1][1]))
        check("served Snowflake decodes (idgen decode --json) to datacenter=3 worker=17",
              dj is not None and dj["fields"].get("datacenter") == DC and dj["fields"].get("worker") == WORKER,
              repr(dj))

    # info
    r, det = curl(d.http, "/info")
    info = json_body(r)
    check("GET /info: 200 application/json object", r is not None and r.status == 200 and isinstance(info, dict)
          and (r.h("content-type") or "").startswith("application/json"), det or repr(r))
    if isinstance(info, dict):
        flat = {}

        def walk(o, path):
            flat[path] = o
            if isinstance(o, dict):
                for k, v in o.items():
                    walk(v, path + (k,))
        walk(info, ())
        ver = subprocess.run([IDGEN, "--version"], capture_output=True).stdout.decode().split()[-1]
        keys = {p[-1] for p in flat if p}
        check("/info: version matches idgen --version", any(p and p[-1] == "version" and v == ver for p, v in flat.items()),
              "want %s in %r" % (ver, info))
        check("/info: layout twitter (name or spec)",
              any("layout" in "/".join(p) and isinstance(v, str) and (v == "twitter" or TWITTER_SPEC in v)
                  for p, v in flat.items()), repr(info))
        check("/info: node values datacenter=3 worker=17",
              any(p and p[-1] == "datacenter" and v in (DC, str(DC)) for p, v in flat.items())
              and any(p and p[-1] == "worker" and v in (WORKER, str(WORKER)) for p, v in flat.items()), repr(info))
        check("/info: registry static", any("registry" in "/".join(p) and v == "static" for p, v in flat.items()),
              repr(info))
        check("/info: lease and uptime present", any("lease" in "/".join(p) for p in flat)
              and any("uptime" in k for k in keys), repr(info))
        check("/info: limits (max_batch %d)" % MAX_BATCH,
              any("max_batch" in "/".join(p) and v in (MAX_BATCH, str(MAX_BATCH)) for p, v in flat.items()), repr(info))
        ck = info.get("clock")
        check("/info: clock {setting fast, mode, fallbacks, recalibrations, cooldowns, cooldown_ms, tsc_hz}",
              isinstance(ck, dict) and ck.get("setting") == "fast"
              and ck.get("mode") in ("fast", "precise", "calibrating", "unavailable")
              and all(isinstance(ck.get(k), int) and ck[k] >= 0
                      for k in ("fallbacks", "recalibrations", "cooldowns", "cooldown_ms", "tsc_hz")), repr(ck))

    # health
    r, det = curl(d.http, "/health")
    check("GET /health: 200 ok", r is not None and r.status == 200 and r.body.strip() == b"ok", det or repr(r))

    # 404 / 405
    r, det = curl(d.http, "/nope")
    check("GET /nope: 404 one line", r is not None and r.status == 404 and one_line_error(r), det or repr(r))
    r, det = curl(d.http, "/id/", timeout=5)
    check("GET /id/: 404", r is not None and r.status == 404, det or repr(r))
    for meth in ("POST", "DELETE", "PUT"):
        r, det = curl(d.http, "/id", "-X", meth)
        check("%s /id: 405 with Allow: GET, HEAD, one line" % meth,
              r is not None and r.status == 405 and r.h("allow") == "GET, HEAD"
              and one_line_error(r), det or repr(r))
    r, det = curl(d.http, "/nope", "-X", "POST")
    check("POST /nope (unknown path): 404", r is not None and r.status == 404, det or repr(r))

    # 431 and 413 by curl
    r, det = curl(d.http, "/id", "-H", "X-Big: " + "a" * (MAX_REQ + 100))
    check("curl with a header block over max_request_bytes: 431 one line",
          r is not None and r.status == 431 and one_line_error(r), det or repr(r))
    served(d, "431 by curl")


def group_keepalive(d):
    # curl reuses its connection for two URLs
    cmd = ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{num_connects}\n",
           "http://%s:%d/health" % (HOST, d.http), "http://%s:%d/health" % (HOST, d.http)]
    p = subprocess.run(cmd, capture_output=True, timeout=15)
    check("keep-alive: curl reuses one connection for two requests",
          p.returncode == 0 and p.stdout.decode().split() == ["1", "0"], short(p.stdout + p.stderr))

    # raw keep-alive: three requests one after the other on one socket
    c = Conn(d.http)
    got = []
    try:
        for path in ("/id", "/id?count=2", "/health"):
            c.send(http_req(path))
            got.append(c.http())
        ok = [r.status for r in got] == [200, 200, 200]
    except Exception as e:  # noqa: BLE001
        ok = False
        got.append(e)
    check("keep-alive: three requests in turn on one connection", ok, repr(got))
    if ok:
        add_snow("raw keep-alive", (digits_lines(got[0].body) or []) + (digits_lines(got[1].body) or []))
    # 404 does not close (only 400/413/431/501/505 do)
    try:
        c.send(http_req("/nope") + http_req("/health"))
        a, b = c.http(), c.http()
        ok = a.status == 404 and b.status == 200
    except Exception as e:  # noqa: BLE001
        ok, a, b = False, e, None
    check("keep-alive: the connection goes on after a 404", ok, "%r %r" % (a, b))
    c.close()

    # pipelining: seven requests in one write, answers in order
    reqs = [("/id", "id"), ("/ulid?count=2", "ulid"), ("/uuid7?format=json", "uuid7json"), ("/health", "health"),
            ("/id?count=3", "id"), ("/info", "info"), ("/id?format=json", "idjson")]
    c = Conn(d.http)
    data = b"".join(http_req(p) for p, _ in reqs) + http_req("/id", headers=["Connection: close"])
    c.send(data)
    res, err = [], ""
    try:
        for _ in range(len(reqs) + 1):
            res.append(c.http())
    except Exception as e:  # noqa: BLE001
        err = repr(e)
    ok = len(res) == len(reqs) + 1
    pipe_ids = []
    if ok:
        for (path, kind), r in zip(reqs + [("/id close", "id")], res):
            if kind == "id":
                ids = digits_lines(r.body)
                ok = ok and r.status == 200 and ids is not None
                pipe_ids += ids or []
            elif kind == "ulid":
                ok = ok and r.status == 200 and all(ULID_RE.fullmatch(x) for x in text_lines(r.body) or ["x"])
            elif kind == "uuid7json":
                try:
                    ok = ok and r.status == 200 and UUID7_RE.fullmatch(json.loads(r.body)["ids"][0])
                except Exception:  # noqa: BLE001
                    ok = False
            elif kind == "health":
                ok = ok and r.status == 200 and r.body.strip() == b"ok"
            elif kind == "info":
                ok = ok and r.status == 200 and r.body.startswith(b"{")
            elif kind == "idjson":
                try:
                    pipe_ids += [int(x) for x in json.loads(r.body)["ids"]]
                    ok = ok and r.status == 200
                except Exception:  # noqa: BLE001
                    ok = False
    check("pipelining: 8 requests in one write answered in order", ok, err or repr(res))
    add_snow("raw pipelined", pipe_ids)
    closed = c.read_to_eof(2)
    check("pipelining: Connection: close closes after its answer", closed and c.buf == b"", short(c.buf))
    c.close()

    # pipelined requests whose answers add up to more than 64 KiB
    c = Conn(d.http)
    c.send(http_req("/id?count=%d" % MAX_BATCH) * 8)
    res, err = [], ""
    try:
        for _ in range(8):
            res.append(c.http(5))
    except Exception as e:  # noqa: BLE001
        err = repr(e)
    ok = len(res) == 8 and all(r.status == 200 and len(digits_lines(r.body) or []) == MAX_BATCH for r in res)
    check("pipelining: 8 x GET /id?count=%d in one write (~160 KB of answers) all answered" % MAX_BATCH, ok,
          "%d answered, %s" % (len(res), err))
    if ok:
        for r in res:
            add_snow("raw HTTP big pipeline", digits_lines(r.body))
    c.close()
    c = Conn(d.http)
    c.send(http_req("/health") * 1000)
    try:
        n, err = 0, ""
        for _ in range(1000):
            r = c.http(5)
            n += r.status == 200
    except Exception as e:  # noqa: BLE001
        err = repr(e)
    check("pipelining: 1000 x GET /health in one write all answered", n == 1000, "%d answered, %s" % (n, err))
    c.close()

    # HTTP/1.0: closes by default, keeps alive when asked
    r, closed, _ = http_then_eof(d.http, b"GET /health HTTP/1.0\r\n\r\n")
    check("HTTP/1.0 without keep-alive: answered, then closed",
          isinstance(r, HttpResp) and r.status == 200 and closed, repr(r))
    c = Conn(d.http)
    try:
        c.send(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        r1 = c.http()
        c.send(b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        r2 = c.http()
        ok = r1.status == 200 and r2.status == 200
    except Exception as e:  # noqa: BLE001
        ok, r1, r2 = False, e, None
    check("HTTP/1.0 with Connection: keep-alive: two requests on one connection", ok, "%r %r" % (r1, r2))
    c.close()


HTTP_ABUSE = [
    ("garbage request line", b"GARBAGE\r\n\r\n", 400),
    ("method only", b"GET\r\n\r\n", 400),
    ("no version", b"GET /id\r\n\r\n", 400),
    ("target without /", b"GET id HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    ("bare LF line ends", b"GET /id HTTP/1.1\nHost: x\n\n", 400),
    ("HTTP/2.0", b"GET /id HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ("bad version text", b"GET /id HTTP/x.y\r\nHost: x\r\n\r\n", (400, 505)),
    ("header without colon", b"GET /id HTTP/1.1\r\nHost x\r\n\r\n", 400),
    ("space before colon", b"GET /id HTTP/1.1\r\nHost : x\r\n\r\n", 400),
    ("control byte in header", b"GET /id HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n\r\n", 400),
    ("obsolete line folding", b"GET /id HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\n\r\n", 400),
    ("conflicting Content-Length", b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400),
    ("bad Content-Length", b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400),
    ("Transfer-Encoding", b"GET /id HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501),
    ("body on a GET", b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", 400),
    ("Content-Length over max_request_bytes", b"GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", 413),
    ("head over max_request_bytes", b"GET /id HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_REQ + 10) + b"\r\n\r\n", 431),
    ("head over max_request_bytes, never ending", b"GET /id HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_REQ * 2), 431),
    ("TLS ClientHello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(32)) + b"\r\n\r\n", 400),
    ("random binary junk", random.Random(7).randbytes(3000), 400),
]


def group_http_abuse(d):
    for name, data, status in HTTP_ABUSE:
        statuses = status if isinstance(status, tuple) else (status,)
        c = Conn(d.http)
        r, err = None, ""
        try:
            c.send(data)
            r = c.http(5)
        except Exception as e:  # noqa: BLE001
            err = repr(e)
        closed = c.read_to_eof(2) if r is not None else c.closed
        check("HTTP %s: %s, one-line text/plain body, connection closed" % (name, "/".join(map(str, statuses))),
              r is not None and r.status in statuses and one_line_error(r) and closed,
              "sent %s; got %r %s; closed=%s" % (short(data, 80), r, err, closed))
        c.close()
    served(d, "HTTP abuse")
    # a well-formed request pipelined behind a bad one is not answered
    r, closed, rest = http_then_eof(d.http, b"GET id HTTP/1.1\r\n\r\n" + http_req("/health"))
    check("HTTP: nothing is answered after a 400 on the same connection",
          isinstance(r, HttpResp) and r.status == 400 and closed and rest == b"", "%r rest %s" % (r, short(rest)))
    # connections dropped mid-request: the daemon goes on
    for part in (b"GET /id HTTP/1.1\r\nHo", b"GET /id?count=1000 HTTP/1.1\r\nHost: x\r\n\r\n"):
        s = socket.create_connection((HOST, d.http))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(part)
        s.close()
    served(d, "HTTP connections reset mid-request and mid-reply")


def group_http_conformance(d):
    """RFC 9112 / RFC 9110 details a strict server gets right (SERVE.md, HTTP/1.1)."""
    # Host: HTTP/1.1 requires exactly one; any request with two is refused (RFC 9112 section 3.2)
    for name, data in (("HTTP/1.1 without Host", b"GET /health HTTP/1.1\r\n\r\n"),
                       ("HTTP/1.1 with two Host lines", b"GET /health HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"),
                       ("HTTP/1.0 with two Host lines", b"GET /health HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n")):
        r, closed, rest = http_then_eof(d.http, data + http_req("/health"))
        check("%s: 400 with a one-line reason naming Host, then closed" % name,
              isinstance(r, HttpResp) and r.status == 400 and one_line_error(r) and b"Host" in r.body
              and closed and rest == b"", "%r closed=%s rest %s" % (r, closed, short(rest)))
    served(d, "requests without Host")

    # absolute-form targets (RFC 9112 section 3.2.2): path and query from the target
    c = Conn(d.http)
    try:
        c.send(b"GET http://127.0.0.1:%d/id?count=2 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % d.http
               + b"GET HTTPS://idgen.example/health HTTP/1.1\r\nHost: idgen.example\r\n\r\n")
        r1, r2 = c.http(), c.http()
    except Exception as e:  # noqa: BLE001
        r1, r2 = e, None
    c.close()
    ids = digits_lines(r1.body) if isinstance(r1, HttpResp) and r1.status == 200 else None
    check("GET http://127.0.0.1:PORT/id?count=2 (absolute-form): 200, two IDs", ids is not None and len(ids) == 2,
          repr(r1))
    add_snow("absolute-form", ids or [])
    check("GET HTTPS://idgen.example/health (scheme in upper case): 200 ok",
          isinstance(r2, HttpResp) and r2.status == 200 and r2.body.strip() == b"ok", repr(r2))
    for name, target, word in (("ftp:// target", b"ftp://h/id", b"scheme"), ("OPTIONS *", b"*", b"*"),
                               ("authority-form", b"127.0.0.1:80", b"/path"),
                               ("absolute-form with user@", b"http://u@h/id", b"host")):
        method = b"OPTIONS" if target == b"*" else b"GET"
        r, closed, rest = http_then_eof(d.http, b"%s %s HTTP/1.1\r\nHost: h\r\n\r\n" % (method, target))
        check("%s: 400 with a one-line reason (naming %s)" % (name, word.decode()),
              isinstance(r, HttpResp) and r.status == 400 and one_line_error(r) and word in r.body, repr(r))

    # Connection is a token list: close anywhere closes, whatever the other tokens or lines say
    for name, hdrs in (("Connection: close, keep-alive", ["Connection: close, keep-alive"]),
                       ("Connection: keep-alive then Connection: close", ["Connection: keep-alive", "Connection: Close"]),
                       ("Connection: close then Connection: keep-alive", ["Connection: close", "Connection: keep-alive"])):
        r, closed, rest = http_then_eof(d.http, http_req("/health", headers=hdrs) + http_req("/health"))
        check("%s: answered with Connection: close, then closed (the next request unanswered)" % name,
              isinstance(r, HttpResp) and r.status == 200 and (r.h("connection") or "").lower() == "close"
              and closed and rest == b"", "%r closed=%s rest %s" % (r, closed, short(rest)))

    # Accept: application/json with q=0 means JSON is not acceptable; q>0 asks for it
    for accept, path, want_json in (("application/json;q=0", "/id?count=2", False),
                                    ("text/plain, application/json; Q=0.000", "/ulid", False),
                                    ("application/json;charset=utf-8;q=0.0", "/uuid7", False),
                                    ("text/plain;q=0.9, application/json;q=0.5", "/id", True),
                                    ("*/*", "/id", False),
                                    ("application/json;q=0", "/id?format=json", True)):
        r, det = curl(d.http, path, "-H", "Accept: " + accept)
        ctype = (r.h("content-type") or "") if r else ""
        check("GET %s with Accept: %s: %s" % (path, accept, "JSON" if want_json else "text"),
              r is not None and r.status == 200 and ctype.startswith("application/json" if want_json else "text/plain"),
              det or repr(r))
        if r is not None and r.status == 200 and path.startswith("/id"):
            j = json_body(r) if ctype.startswith("application/json") else None
            add_snow("Accept " + accept, [int(x) for x in j["ids"]] if j else (digits_lines(r.body) or []))

    # HEAD on every GET route: GET's status line and headers, Content-Length included, and no body;
    # pipelined HEAD then GET keeps the framing
    routes = ["/id", "/id?count=3", "/ulid?count=2", "/uuid7?format=json", "/decode/910499571847892992",
              "/health", "/info", "/metrics", "/id?count=0", "/nope"]
    c = Conn(d.http)
    try:
        c.send(b"".join(http_req(p, method="HEAD") + http_req(p) for p in routes))
        pairs = [(c.http(head=True), c.http()) for _ in routes]
    except Exception as e:  # noqa: BLE001
        pairs = e
    c.close()
    check("pipelined HEAD then GET on %d routes: all answered, in order, the framing intact" % len(routes),
          isinstance(pairs, list), repr(pairs))
    fixed = ("/id", "/id?count=3", "/ulid?count=2", "/uuid7?format=json", "/decode/910499571847892992",
             "/health", "/id?count=0", "/nope")  # routes whose body length does not change between two requests
    for path, (h, g) in zip(routes, pairs if isinstance(pairs, list) else []):
        same = h.status == g.status and h.reason == g.reason and \
            [n for n, _ in h.headers] == [n for n, _ in g.headers] and \
            all(hv == gv for (n, hv), (_, gv) in zip(h.headers, g.headers) if n not in ("date", "content-length"))
        length_ok = h.h("content-length") == str(len(g.body)) if path in fixed else int(h.h("content-length")) > 0
        check("HEAD %s: GET's status (%d) and headers, Content-Length %s, no body" % (
            path, g.status, "equal to GET's body" if path in fixed else "given"),
            same and length_ok and h.body == b"", "HEAD %s %r / GET %s %r" % (h.raw_head, h.body, g.raw_head, g))
        if g.status == 200 and path.startswith("/id"):
            add_snow("GET after HEAD", digits_lines(g.body) or [])
    r, det = curl(d.http, "/id", "-I")
    check("curl -I /id (HEAD): 200 text/plain with a Content-Length, no body",
          r is not None and r.status == 200 and r.body == b"" and int(r.h("content-length") or 0) > 1, det or repr(r))
    c = Conn(d.http)
    c.send(b"HEAD /health HTTP/1.1\r\n\r\n" + http_req("/health"))
    closed = c.read_to_eof(3)
    c.close()
    check("HEAD without Host: 400 without a body, then closed",
          closed and c.buf.startswith(b"HTTP/1.1 400 ") and c.buf.endswith(b"\r\n\r\n") and c.buf.count(b"HTTP/") == 1,
          short(c.buf))
    for meth in ("POST", "OPTIONS", "PATCH"):
        r = raw_get(d.http, "/health", method=meth)
        check("%s /health: 405 with Allow: GET, HEAD" % meth,
              isinstance(r, HttpResp) and r.status == 405 and r.h("allow") == "GET, HEAD" and one_line_error(r),
              repr(r))

    # the query is percent-decoded (keys and values) before use; + is not a space
    m0, _ = get_metrics(d)
    billing0 = mget(m0, "idgen_ids_issued_total", kind="snowflake", agent="billing") or 0
    for path, n in (("/id?count=%33", 3), ("/id?%63ount=2", 2), ("/id?agent=bill%69ng", 1),
                    ("/id?count=%31%30", 10)):
        r = raw_get(d.http, path)
        ids = digits_lines(r.body) if isinstance(r, HttpResp) and r.status == 200 else None
        check("GET %s: 200 and %d IDs (percent-decoded)" % (path, n), ids is not None and len(ids) == n, repr(r))
        add_snow("percent-decoded", ids or [])
    r = raw_get(d.http, "/id?count=2&format=%6Ason")
    j = json_body(r) if isinstance(r, HttpResp) and r.status == 200 else None
    check("GET /id?count=2&format=%6Ason: JSON of 2", isinstance(j, dict) and len(j.get("ids", [])) == 2, repr(r))
    if isinstance(j, dict):
        add_snow("percent-decoded json", [int(x) for x in j.get("ids", [])])
    m1, _ = get_metrics(d)
    billing1 = mget(m1, "idgen_ids_issued_total", kind="snowflake", agent="billing") or 0
    check('agent=bill%69ng counts under agent="billing"', billing1 - billing0 == 1, "+%r" % (billing1 - billing0))
    for path, want in (("/id?count=%", b'percent-escape "%"'), ("/id?count=%3", b'percent-escape "%3"'),
                       ("/id?count=%zz", b'percent-escape "%zz"'), ("/id?co%3unt=1", b'percent-escape "%3u"'),
                       ("/id?count=%2D1", b'"-1"'), ("/id?count=1+1", b'"1+1"'),
                       ("/id?agent=a%00b%C1", b'"a\\x00b\\xC1": a name matches')):
        r = raw_get(d.http, path)
        check("GET %s: 400, one line with %s" % (path, want.decode()),
              isinstance(r, HttpResp) and r.status == 400 and one_line_error(r) and want in r.body, repr(r))


def printable_reply(b, framing):
    """b holds no raw byte outside 0x20..0x7E once the framing's CRLFs / final LF are taken out."""
    return all(0x20 <= c <= 0x7E for c in b.replace(framing, b""))


def group_quoting(d):
    """Error texts quote what they echo as printable ASCII (\\xHH), in HTTP and RESP (SERVE.md)."""
    # HTTP: a path with a byte >= 0x80, an ID that is no ID, a decoded query value with DEL and NUL
    for target, want in ((b"/x\xc1y\xff", b"no such path: /x\\xC1y\\xFF"),
                         (b"/decode/\xc1\xff%00", b'not an ID: "\\xC1\\xFF%00" is 5 characters'),
                         (b"/id?agent=%C1%7F%00z", b'bad agent "\\xC1\\x7F\\x00z": a name matches'),
                         (b"/id?count=%C1%7F%00", b'not "\\xC1\\x7F\\x00"')):
        c = Conn(d.http)
        try:
            c.send(b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            r = c.http()
        except Exception as e:  # noqa: BLE001
            r = e
        c.close()
        check("HTTP GET %s: the reason quotes it as %s, no raw bytes" % (short(target), want.decode()),
              isinstance(r, HttpResp) and r.status in (400, 404) and want in r.body
              and printable_reply(r.body, b"\n"), repr(r))
    # bytes the request line may not hold at all: refused without echoing them
    for target in (b"/x\x7fy", b"/x\x00y"):
        r, closed, _ = http_then_eof(d.http, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        check("HTTP GET %s: 400, the reply printable" % short(target),
              isinstance(r, HttpResp) and r.status == 400 and printable_reply(r.body, b"\n") and closed, repr(r))
    # RESP: unknown command and its arguments, inline and multibulk; other echoes
    cases = [
        ("unknown command with 0xC1, DEL and NUL", resp_cmd(b"X\xc1\x7f\x00Y", b"a\x00\xc1b", b"c'd\\"),
         b"-ERR unknown command 'X\\xC1\\x7F\\x00Y', with args beginning with: 'a\\x00\\xC1b' 'c\\x27d\\x5C' \r\n"),
        ("inline unknown command with 0xC1, DEL and NUL", b"X\xc1\x7f\x00Y a\x00b\r\n",
         b"-ERR unknown command 'X\\xC1\\x7F\\x00Y', with args beginning with: 'a\\x00b' \r\n"),
        ("CLIENT subcommand", resp_cmd("CLIENT", b"\xc1\x00"),
         b"-ERR unknown subcommand '\\xC1\\x00'. Try CLIENT HELP.\r\n"),
        ("COMMAND subcommand", resp_cmd("COMMAND", b"\x7f"),
         b"-ERR unknown subcommand '\\x7F'. Try COMMAND HELP.\r\n"),
        ("HELLO option", resp_cmd("HELLO", "2", b"\xc1"), b"-ERR Syntax error in HELLO option '\\xC1'\r\n"),
        ("CONFIG subcommand", resp_cmd("CONFIG", b"S\x00T"), b"-ERR CONFIG S\\x00T is not supported by idgen\r\n"),
        ("DECODE", resp_cmd("DECODE", b"\xc1\x00"),
         b'-ERR not an ID: "\\xC1\\x00" is 2 characters (expected 1 to 20 decimal digits, a 26-character ULID, '
         b'or a UUID of 36 characters or 32 hex digits)\r\n'),
    ]
    for name, req, want in cases:
        c = Conn(d.resp)
        c.send(req + b"PING\r\n")
        try:
            got = c.resp()
            pong = c.resp()
        except Exception as e:  # noqa: BLE001
            got, pong = e, None
        c.close()
        raw = b"-" + got.encode("latin-1") + b"\r\n" if isinstance(got, RErr) else None
        check("RESP %s: %s, then the connection goes on" % (name, short(want, 90)),
              raw == want and printable_reply(raw, b"\r\n") and pong == "PONG", "got %r then %r" % (got, pong))
    c = Conn(d.resp)
    c.send(b"*1\r\n\xc1")
    closed = c.read_to_eof(3)
    c.close()
    check("RESP a byte 0xC1 where '$' belongs: the protocol error quotes it, then closed",
          closed and c.buf == b"-ERR Protocol error: expected '$', got '\\xC1'\r\n", short(c.buf))
    served(d, "quoted errors")
    time.sleep(1.1)  # client errors are logged at most 10 a second: a fresh second for this one
    raw_get(d.http, "/id?agent=%C1%7F%00q")
    time.sleep(0.2)
    with open(d.logpath, "rb") as f:
        log = f.read()
    bad_lines = [ln for ln in log.split(b"\n") if not printable_reply(ln, b"")]
    check("the log holds only printable ASCII lines after those errors (reasons quoted)",
          not bad_lines and b'status=400 reason="bad agent \\x22\\x5CxC1\\x5Cx7F\\x5Cx00q\\x22' in log,
          short(bad_lines[:3]) + " " + short(log[-400:]))


def group_resp_cli(d):
    p = d.resp

    def one(args, pattern, name, stdin=None):
        rc, out, err = rcli(p, *args, stdin=stdin)
        m = re.fullmatch(pattern, out, re.S)
        check("redis-cli %s" % name, rc == 0 and m is not None, "exit %d out %r err %r" % (rc, out, err))
        return m

    m = one(["ID"], r"\(integer\) (\d+)\n", "ID: an integer")
    if m:
        add_snow("redis-cli ID", [int(m.group(1))])
    m = one(["id", "5"], r"((?:\d+\) \(integer\) \d+\n){5})", "id 5 (lower case): array of 5 integers")
    if m:
        add_snow("redis-cli ID 5", [int(x) for x in re.findall(r"\(integer\) (\d+)", m.group(1))])
    m = one(["ID", str(MAX_BATCH)], r"((?:\s*\d+\) \(integer\) \d+\n){%d})" % MAX_BATCH, "ID max_batch: all of them")
    if m:
        add_snow("redis-cli ID max", [int(x) for x in re.findall(r"\(integer\) (\d+)", m.group(1))])
    for bad in (["ID", str(MAX_BATCH + 1)], ["ID", "0"], ["ID", "-1"], ["ID", "1", "2"]):
        one(bad, r"\(error\) ERR .+\n", "%s: an -ERR" % " ".join(bad))
    one(["ID", "abc"], r"\(error\) ERR value is not an integer or out of range\n",
        "ID abc: ERR value is not an integer or out of range")
    for kind, chk in (("ULID", check_ulids), ("UUID7", check_uuids)):
        m = one([kind], r'"([^"]+)"\n', kind + ": a bulk string")
        chk("redis-cli " + kind, [m.group(1)] if m else [])
        m = one([kind.lower(), "7"], r'((?:\d+\) "[^"]+"\n){7})', kind + " 7: array of 7 bulk strings")
        chk("redis-cli %s 7" % kind, re.findall(r'"([^"]+)"', m.group(1)) if m else [])
        one([kind, "0"], r"\(error\) ERR .+\n", kind + " 0: an -ERR")
        one([kind, "x"], r"\(error\) ERR value is not an integer or out of range\n", kind + " x: not an integer")
    # DECODE
    if SNOW:
        sid = str(SNOW[-1][1])
        m = one(["DECODE", sid], r'"(.*)"\n', "DECODE snowflake: a bulk string")
        want = idgen_decode(sid)
        got = None
        try:
            got = json.loads(m.group(1).replace('\\"', '"')) if m else None
        except Exception:  # noqa: BLE001
            pass
        check("redis-cli DECODE: the JSON of idgen decode --json", got is not None and got == want,
              "%r vs %r" % (got, want))
    one(["DECODE"], r"\(error\) ERR wrong number of arguments for 'decode' command\n", "DECODE: wrong arity")
    one(["DECODE", "12x4"], r"\(error\) ERR .+\n", "DECODE 12x4: an -ERR")
    # INFO
    rc, out, err = rcli(p, "--raw", "INFO")
    lines = [x for x in out.replace("\r", "").split("\n") if x]
    kv = [x for x in lines if not x.startswith("#")]
    check("redis-cli INFO: key:value lines, Redis-style sections",
          rc == 0 and kv and all(re.fullmatch(r"[a-z_0-9]+:.*", x) for x in kv)
          and any(x.startswith("# ") for x in lines), "exit %d out %r" % (rc, out[:500]))
    info = dict(x.split(":", 1) for x in kv)
    check("redis-cli INFO: clock:fast, clock_fast_mode, and the fast clock's counters",
          info.get("clock") == "fast"
          and info.get("clock_fast_mode") in ("fast", "precise", "calibrating", "unavailable")
          and all(re.fullmatch(r"\d+", info.get(k, "")) for k in (
              "clock_fast_tsc_hz", "clock_fast_fallbacks", "clock_fast_recalibrations", "clock_fast_cooldowns")),
          repr({k: v for k, v in info.items() if k.startswith("clock")}))
    # PING ECHO
    one(["PING"], r"PONG\n", "PING: PONG")
    one(["ping", "hello world"], r'"hello world"\n', "PING msg: msg as a bulk string")
    one(["PING", "a", "b"], r"\(error\) ERR wrong number of arguments for 'ping' command\n", "PING a b: wrong arity")
    one(["ECHO", "hé"], r'"h\\xc3\\xa9"\n', "ECHO: bulk string (binary-safe)")
    one(["ECHO"], r"\(error\) ERR wrong number of arguments for 'echo' command\n", "ECHO: wrong arity")
    one(["QUIT"], r"OK\n", "QUIT: OK")
    # CLIENT
    m0, _ = get_metrics(d)
    b0 = mget(m0, "idgen_ids_issued_total", kind="snowflake", agent="cli-agent") or 0
    rc, out, err = rcli(p, stdin="CLIENT GETNAME\nCLIENT SETNAME cli-agent\nCLIENT GETNAME\nID 3\nCLIENT ID\n")
    m = re.fullmatch(r"\(nil\)\nOK\n\"cli-agent\"\n((?:\d\) \(integer\) \d+\n){3})\(integer\) \d+\n", out)
    check("redis-cli CLIENT GETNAME (nil), SETNAME, GETNAME, ID 3, CLIENT ID on one connection",
          rc == 0 and m is not None, "exit %d out %r err %r" % (rc, out, err))
    if m:
        add_snow("redis-cli named", [int(x) for x in re.findall(r"\(integer\) (\d+)", m.group(1))])
    m1, _ = get_metrics(d)
    b1 = mget(m1, "idgen_ids_issued_total", kind="snowflake", agent="cli-agent")
    check('metrics: ids issued to CLIENT SETNAME cli-agent counted under agent="cli-agent"',
          b1 is not None and b1 - b0 == 3, "%r (before %r)" % (b1, b0))
    one(["CLIENT", "SETNAME", "bad_name"], r"\(error\) ERR .+\n", "CLIENT SETNAME bad_name: an -ERR (agent rule)")
    one(["CLIENT", "SETNAME", "a b"], r"\(error\) ERR .+\n", "CLIENT SETNAME 'a b': an -ERR")
    one(["CLIENT", "ID"], r"\(integer\) \d+\n", "CLIENT ID: integer")
    # COMMAND
    rc, out, err = rcli(p, "COMMAND", "COUNT")
    mc = re.fullmatch(r"\(integer\) (\d+)\n", out)
    check("redis-cli COMMAND COUNT: a positive integer", rc == 0 and mc and int(mc.group(1)) > 0, repr(out))
    rc, out, err = rcli(p, "COMMAND")
    check("redis-cli COMMAND: an array naming ID, PING and QUIT",
          rc == 0 and re.match(r"\s*1\) ", out) is not None and all('"%s"' % n in out.lower() for n in ("id", "ping", "quit")),
          repr(out[:300]))
    one(["COMMAND", "DOCS"], r"\(empty array\)\n", "COMMAND DOCS: empty array")
    rc, out, err = rcli(p, "HELLO", "2")
    check("redis-cli HELLO 2: flat array with proto 2", rc == 0 and re.search(r'"proto"\n\s*\d+\) \(integer\) 2\n', out)
          is not None and '"server"' in out, repr(out))
    one(["HELLO", "3"], r"\(error\) NOPROTO.*\n", "HELLO 3: -NOPROTO")
    one(["CONFIG", "GET", "save"], r'1\) "save"\n2\) ""\n', 'CONFIG GET save: save ""')
    one(["CONFIG", "GET", "maxmemory"], r"\(empty array\)\n", "CONFIG GET maxmemory: empty array")
    one(["SELECT", "0"], r"OK\n", "SELECT 0: OK")
    one(["SELECT", "1"], r"\(error\) ERR .+\n", "SELECT 1: an -ERR")
    one(["FOO", "a", "b"], r"\(error\) ERR unknown command 'FOO', with args beginning with: 'a' 'b' \n",
        "unknown command: Redis's error form")


def group_resp_raw(d):
    """Exact bytes of the replies (as a Redis 7.0 server sends them)."""
    cases = [
        ("PING", b"PING\r\n", b"+PONG\r\n"),
        ("PING msg", resp_cmd("PING", "hello"), b"$5\r\nhello\r\n"),
        ("ECHO", resp_cmd("ECHO", b"a\r\nb"), b"$4\r\na\r\nb\r\n"),
        ("ECHO empty", resp_cmd("ECHO", ""), b"$0\r\n\r\n"),
        ("unknown command", b"FOO a b\r\n", b"-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"),
        ("unknown command, no args", resp_cmd("foo"), b"-ERR unknown command 'foo', with args beginning with: \r\n"),
        ("wrong arity", b"ECHO\r\n", b"-ERR wrong number of arguments for 'echo' command\r\n"),
        ("ID abc", b"ID abc\r\n", b"-ERR value is not an integer or out of range\r\n"),
        ("CLIENT GETNAME unnamed", b"CLIENT GETNAME\r\n", b"$-1\r\n"),
        ("CONFIG GET appendonly", resp_cmd("CONFIG", "GET", "appendonly"), b"*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"),
        ("CONFIG GET save", resp_cmd("CONFIG", "GET", "save"), b"*2\r\n$4\r\nsave\r\n$0\r\n\r\n"),
        ("CONFIG GET other", resp_cmd("CONFIG", "GET", "maxmemory"), b"*0\r\n"),
        ("SELECT 0", b"SELECT 0\r\n", b"+OK\r\n"),
        ("COMMAND DOCS", b"COMMAND DOCS\r\n", b"*0\r\n"),
    ]
    for name, req, want in cases:
        c = Conn(d.resp)
        c.send(req + b"PING\r\n")
        raw, got = b"", None
        try:
            deadline = time.monotonic() + 5
            while not raw.endswith(b"+PONG\r\n") or len(raw) < len(want) + 7:
                c._more(deadline)
                raw = c.buf
        except Exception as e:  # noqa: BLE001
            got = e
        c.close()
        check("RESP %s: exact reply %s" % (name, short(want, 80)), raw == want + b"+PONG\r\n",
              "got %s %s" % (short(raw), got if isinstance(got, Exception) else ""))
    # integer replies for ID, arrays for ID N
    c = Conn(d.resp)
    c.send(b"ID\r\n" + resp_cmd("ID", "3") + b"ULID\r\nUUID7 2\r\nHELLO 2\r\nHELLO\r\nCLIENT ID\r\nCOMMAND COUNT\r\nCOMMAND\r\n")
    try:
        rs = c.resp_n(9)
    except Exception as e:  # noqa: BLE001
        rs = [e]
    c.close()
    ok = len(rs) == 9
    check("RESP ID: an integer reply", ok and type(rs[0]) is int, repr(rs[:1]))
    check("RESP ID 3: an array of 3 integers", ok and isinstance(rs[1], list) and len(rs[1]) == 3
          and all(type(x) is int for x in rs[1]), repr(rs[1:2]))
    if ok and type(rs[0]) is int and isinstance(rs[1], list):
        add_snow("raw RESP", [rs[0]] + [x for x in rs[1] if type(x) is int])
    check("RESP ULID: a bulk string", ok and isinstance(rs[2], bytes) and ULID_RE.fullmatch(rs[2].decode()),
          repr(rs[2:3]))
    check("RESP UUID7 2: an array of 2 bulk strings", ok and isinstance(rs[3], list) and len(rs[3]) == 2
          and all(isinstance(x, bytes) and UUID7_RE.fullmatch(x.decode()) for x in rs[3]), repr(rs[3:4]))
    if ok:
        check_ulids("raw RESP ULID", [rs[2].decode()] if isinstance(rs[2], bytes) else [])
        check_uuids("raw RESP UUID7 2", [x.decode() for x in rs[3]] if isinstance(rs[3], list) else [])
    for i, name in ((4, "HELLO 2"), (5, "HELLO")):
        h = rs[i] if ok else None
        good = isinstance(h, list) and len(h) % 2 == 0 and len(h) >= 4
        if good:
            kvs = dict(zip(h[0::2], h[1::2]))
            good = kvs.get(b"proto") == 2 and b"server" in kvs and b"version" in kvs
        check("RESP %s: flat array of name/value pairs with server, version, proto 2" % name, good, repr(h))
    check("RESP CLIENT ID: an integer", ok and type(rs[6]) is int, repr(rs[6:7]))
    check("RESP COMMAND: an array whose length is COMMAND COUNT", ok and type(rs[7]) is int and
          isinstance(rs[8], list) and len(rs[8]) == rs[7] > 0, repr(rs[7:9])[:300])
    # HELLO 3: NOPROTO, connection stays
    c = Conn(d.resp)
    c.send(b"HELLO 3\r\nPING\r\n")
    try:
        a, b = c.resp(), c.resp()
    except Exception as e:  # noqa: BLE001
        a, b = e, None
    c.close()
    check("RESP HELLO 3: -NOPROTO, and the connection goes on", isinstance(a, RErr) and a.startswith("NOPROTO")
          and b == "PONG", "%r %r" % (a, b))
    # QUIT: +OK then closed
    c = Conn(d.resp)
    c.send(b"QUIT\r\nPING\r\n")
    closed = c.read_to_eof(3)
    check("RESP QUIT: +OK, then closed (the PING after it unanswered)", closed and c.buf == b"+OK\r\n", short(c.buf))
    c.close()
    # pipelining: 200 commands in one write, answered in order
    c = Conn(d.resp)
    c.send(b"ID\r\n" * 100 + resp_cmd("ECHO", "mid") + resp_cmd("ID") * 99 + b"PING\r\n")
    try:
        rs = c.resp_n(201)
        ok = all(type(x) is int for x in rs[:100]) and rs[100] == b"mid" and \
            all(type(x) is int for x in rs[101:200]) and rs[200] == "PONG"
    except Exception as e:  # noqa: BLE001
        ok, rs = False, [e]
    check("RESP pipelining: 201 commands in one write answered in order", ok, short(rs))
    if ok:
        add_snow("raw RESP pipelined", rs[:100] + rs[101:200])
    c.close()
    # pipelines whose replies add up to more than 64 KiB
    for name, one, n in (("ID", resp_cmd("ID"), 4000), ("PING inline", b"PING\r\n", 20000),
                         ("ID 1000", b"ID 1000\r\n", 10)):
        c = Conn(d.resp)
        c.send(one * n)
        try:
            rs = c.resp_n(n, timeout=8)
            ok, err = len(rs) == n, ""
        except Exception as e:  # noqa: BLE001
            ok, err = False, repr(e)[:200]
        check("RESP pipelining: %d x %s in one write (%d bytes) all answered" % (n, name, len(one) * n), ok, err)
        if ok and name != "PING inline":
            add_snow("raw RESP big pipeline", [x for r in rs for x in (r if isinstance(r, list) else [r])])
        c.close()
    # counters for RESP ok/err
    m0, _ = get_metrics(d)
    c = Conn(d.resp)
    c.send(b"PING\r\nPING\r\nNOSUCH\r\n")
    try:
        c.resp_n(3)
    except Exception:  # noqa: BLE001
        pass
    c.close()
    time.sleep(0.1)
    m1, _ = get_metrics(d)
    dok = (mget(m1, "idgen_requests_total", proto="resp", code="ok") or 0) - (mget(m0, "idgen_requests_total", proto="resp", code="ok") or 0)
    der = (mget(m1, "idgen_requests_total", proto="resp", code="err") or 0) - (mget(m0, "idgen_requests_total", proto="resp", code="err") or 0)
    check('metrics: idgen_requests_total{proto="resp"} counts 2 ok and 1 err', dok == 2 and der == 1,
          "ok +%r err +%r" % (dok, der))


RESP_ABUSE_CLOSE = [
    ("$x bulk length", b"*1\r\n$x\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("$1000000000 bulk length", b"*1\r\n$1000000000\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("negative bulk length", b"*1\r\n$-3\r\n", b"-ERR Protocol error: invalid bulk length\r\n"),
    ("bulk over max_request_bytes", b"*2\r\n$4\r\nECHO\r\n$%d\r\n" % (MAX_REQ + 1), b"-ERR Protocol error: invalid bulk length\r\n"),
    ("non-numeric multibulk", b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("multibulk over 1M", b"*2000000\r\n", b"-ERR Protocol error: invalid multibulk length\r\n"),
    ("integer where a bulk belongs", b"*1\r\n:5\r\n", b"-ERR Protocol error: expected '$', got ':'\r\n"),
    ("unbalanced quotes", b'ECHO "abc\r\n', b"-ERR Protocol error: unbalanced quotes in request\r\n"),
    ("bulk not followed by CRLF", b"*1\r\n$4\r\nPINGxx", b"-ERR Protocol error: bulk string not followed by CRLF\r\n"),
]


def group_resp_abuse(d):
    for name, data, want in RESP_ABUSE_CLOSE:
        c = Conn(d.resp)
        c.send(data)
        closed = c.read_to_eof(3)
        check("RESP %s: %s then closed" % (name, short(want, 70)), closed and c.buf == want,
              "sent %s got %s closed=%s" % (short(data, 60), short(c.buf), closed))
        c.close()
    served(d, "RESP protocol errors")
    # an inline command over max_request_bytes: an error and/or closed
    c = Conn(d.resp)
    try:
        c.send(b"ECHO " + b"a" * (MAX_REQ * 2) + b"\r\n")
    except OSError:
        pass
    closed = c.read_to_eof(3)
    check("RESP inline command over max_request_bytes: closed, with at most an -ERR Protocol error",
          closed and (c.buf == b"" or (c.buf.startswith(b"-ERR Protocol error") and c.buf.count(b"\r\n") == 1)),
          "got %s closed=%s" % (short(c.buf), closed))
    c.close()
    # negative and zero multibulk counts: empty requests, no reply, connection stays
    for data in (b"*-5\r\n", b"*0\r\n", b"*-1\r\n"):
        c = Conn(d.resp)
        c.send(data)
        time.sleep(0.2)
        c.send(b"PING\r\n")
        try:
            r = c.resp()
        except Exception as e:  # noqa: BLE001
            r = e
        check("RESP %s: no reply, the connection stays (next PING gets +PONG first)" % data.strip().decode(),
              r == "PONG" and isinstance(r, RSimple) and c.buf == b"", "%r rest %s" % (r, short(c.buf)))
        c.close()
    # truncated frames, then the client half-closes: no reply, the daemon closes
    for data in (b"*2\r\n$2\r\nID\r\n$1", b"*3\r\n$3\r\nSET", b"*1\r\n", b"*1\r\n$4\r\nPI", b"*1"):
        c = Conn(d.resp)
        c.send(data)
        c.s.shutdown(socket.SHUT_WR)
        closed = c.read_to_eof(3)
        check("RESP truncated %s then EOF: no reply, closed" % short(data, 40), closed and c.buf == b"",
              "got %s closed=%s" % (short(c.buf), closed))
        c.close()
    # truncated frames, then reset
    for data in (b"*2\r\n$2\r\nID\r\n$1", b"*1\r\n$4\r\nPI"):
        s = socket.create_connection((HOST, d.resp))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.sendall(data)
        s.close()
    served(d, "truncated RESP frames")
    # random binary junk: whatever comes back is whole RESP error replies; then closed or quiet
    rnd = random.Random(42)
    for i in range(3):
        junk = rnd.randbytes(4096)
        c = Conn(d.resp)
        try:
            c.send(junk)
        except OSError:
            pass
        closed = c.read_to_eof(2.5)
        try:
            reps, rest = parse_resp_all(c.buf)
            ok = rest == b"" and all(isinstance(x, RErr) for x in reps)
        except ProtoError as e:
            ok, reps = False, [e]
        check("RESP random junk #%d: only whole -ERR replies come back (closed=%s)" % (i + 1, closed), ok,
              short(c.buf))
        c.close()
    served(d, "random RESP junk")
    # HTTP sent to the RESP port and RESP to the HTTP port
    c = Conn(d.resp)
    c.send(http_req("/id"))
    closed = c.read_to_eof(2)
    try:
        reps, rest = parse_resp_all(c.buf)
        ok = rest == b"" and all(isinstance(x, RErr) for x in reps)
    except ProtoError:
        ok = False
    check("HTTP request on the RESP port: only -ERR replies", ok, short(c.buf))
    c.close()
    r, closed, _ = http_then_eof(d.http, b"*1\r\n$4\r\nPING\r\n\r\n")
    check("RESP on the HTTP port: 400 and closed", isinstance(r, HttpResp) and r.status == 400 and closed, repr(r))
    served(d, "cross-protocol requests")


def group_python(d):
    if redis is None:
        check("python3-redis importable", False, "import redis failed (install python3-redis)")
        return

    def client():
        return redis.Redis(host=HOST, port=d.resp, socket_timeout=20, client_name="py-agent")

    def step(name, fn):
        r = client()
        try:
            fn(r)
        except Exception as e:  # noqa: BLE001
            check("python redis: %s ran" % name, False, repr(e))
        finally:
            r.close()

    def basics(r):
        check("python redis: ping()", r.ping() is True)
        check("python redis: echo()", r.echo("hé") == "hé".encode())
        one = r.execute_command("ID")
        check("python redis: ID is an int", type(one) is int, repr(one))
        add_snow("python ID", [one] if type(one) is int else [])
        five = r.execute_command("ID", 5)
        check("python redis: ID 5 is 5 ints", isinstance(five, list) and len(five) == 5
              and all(type(x) is int for x in five), repr(five))
        add_snow("python ID 5", five if isinstance(five, list) else [])
        try:
            r.execute_command("ID", "abc")
            check("python redis: ID abc raises ResponseError", False)
        except redis.ResponseError as e:
            check("python redis: ID abc raises ResponseError", "not an integer" in str(e), str(e))

    def pipeline(r):
        m0, _ = get_metrics(d)
        t0 = time.monotonic()
        pipe = r.pipeline(transaction=False)
        for _ in range(10000):
            pipe.execute_command("ID")
        try:
            res = pipe.execute()
        except Exception as e:  # noqa: BLE001
            check("python redis: pipeline of 10000 ID answered (%.2fs)" % (time.monotonic() - t0), False, repr(e))
            return
        dt = time.monotonic() - t0
        ok = len(res) == 10000 and all(type(x) is int for x in res)
        check("python redis: pipeline of 10000 ID: 10000 ints (%.2fs)" % dt, ok, short(res[:5]))
        if ok:
            check("python redis pipeline: strictly increasing", increasing(res))
            add_snow("python pipeline", res)
        m1, _ = get_metrics(d)
        v0 = mget(m0, "idgen_ids_issued_total", kind="snowflake", agent="py-agent") or 0
        v1 = mget(m1, "idgen_ids_issued_total", kind="snowflake", agent="py-agent")
        check('metrics: the pipeline counted under agent="py-agent" (client_name)', v1 is not None and v1 - v0 == 10000,
              "%r (before %r)" % (v1, v0))

    def others(r):
        ul = r.execute_command("ULID", 20)
        check_ulids("python ULID 20", [x.decode() for x in ul] if isinstance(ul, list) else [])
        uu = r.execute_command("UUID7", 20)
        check_uuids("python UUID7 20", [x.decode() for x in uu] if isinstance(uu, list) else [])

    def small_pipelines(r):
        # 500 commands: replies well under 64 KiB
        for kind, chk in (("ULID", check_ulids), ("UUID7", check_uuids)):
            pipe = r.pipeline(transaction=False)
            for _ in range(500):
                pipe.execute_command(kind)
            res = pipe.execute()
            chk("python pipeline of 500 %s" % kind, [x.decode() for x in res if isinstance(x, bytes)])

    step("ping/echo/ID", basics)
    step("ULID/UUID7", others)
    step("pipelines of 500 ULID/UUID7", small_pipelines)
    step("pipeline of 10000 ID", pipeline)
    served(d, "python pipelines")


def group_benchmark(d):
    p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-t", "ping", "-n", "20000", "-q"],
                       capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace").replace("\r", "\n")
    check("redis-benchmark -t ping -n 20000: exit 0, inline and multibulk PING report requests per second",
          p.returncode == 0 and re.search(r"PING_INLINE: [0-9.]+ requests per second", out)
          and re.search(r"PING_MBULK: [0-9.]+ requests per second", out), "exit %d: %r %r" % (
              p.returncode, out[-400:], p.stderr.decode()[-300:]))
    m0, _ = get_metrics(d)
    p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-n", "20000", "-q", "ID"],
                       capture_output=True, timeout=60)
    out = p.stdout.decode("utf-8", "replace").replace("\r", "\n")
    m1, _ = get_metrics(d)
    check("redis-benchmark -n 20000 ID: exit 0, reports requests per second",
          p.returncode == 0 and re.search(r"ID: [0-9.]+ requests per second", out),
          "exit %d: %r %r" % (p.returncode, out[-400:], p.stderr.decode()[-300:]))
    issued = msum(m1, "idgen_ids_issued_total", kind="snowflake") - msum(m0, "idgen_ids_issued_total", kind="snowflake")
    check("redis-benchmark ID: 20000 IDs issued (metrics)", issued == 20000, "issued %r" % issued)
    errs = (mget(m1, "idgen_requests_total", proto="resp", code="err") or 0) - \
        (mget(m0, "idgen_requests_total", proto="resp", code="err") or 0)
    check("redis-benchmark ID: no RESP error replies (CONFIG GET answered)", errs == 0, "err +%r" % errs)


def group_metrics(d):
    m, text = get_metrics(d)
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    want = {"idgen_ids_issued_total": "counter", "idgen_requests_total": "counter",
            "idgen_request_duration_seconds": "histogram", "idgen_clock_borrowed_ms": "gauge",
            "idgen_clock_waits_total": "counter", "idgen_clock_refusals_total": "counter",
            "idgen_sequence_exhausted_total": "counter", "idgen_lease_valid_seconds": "gauge",
            "idgen_layout_seconds_remaining": "gauge", "idgen_connections": "gauge",
            "idgen_connections_closed_total": "counter", "idgen_clock_fast_mode": "gauge",
            "idgen_clock_fast_fallbacks_total": "counter", "idgen_clock_fast_recalibrations_total": "counter",
            "idgen_clock_fast_cooldowns_total": "counter"}
    for name, typ in want.items():
        present = any(n == name or (typ == "histogram" and n.startswith(name + "_")) for n, _ in m)
        check("metrics: %s present, # TYPE %s" % (name, typ), present and types.get(name) == typ,
              "type %r present %s" % (types.get(name), present))
    for kind in ("snowflake", "ulid", "uuid7"):
        check('metrics: idgen_ids_issued_total{kind="%s",agent="-"} > 0' % kind,
              (mget(m, "idgen_ids_issued_total", kind=kind, agent="-") or 0) > 0)
    check('metrics: idgen_lease_valid_seconds is +Inf (static registry)',
          mget(m, "idgen_lease_valid_seconds") == float("inf"), repr(mget(m, "idgen_lease_valid_seconds")))
    rem = mget(m, "idgen_layout_seconds_remaining")
    want_rem = (TWITTER_EPOCH + (1 << 41) - time.time() * 1000) / 1000
    check("metrics: idgen_layout_seconds_remaining is the twitter layout's (until 2080-07-10)",
          rem is not None and abs(rem - want_rem) < 300, "%r vs %r" % (rem, want_rem))
    for proto in ("http", "resp"):
        buckets = sorted(((float(dict(ls)["le"]), v) for (n, ls), v in m.items()
                          if n == "idgen_request_duration_seconds_bucket" and dict(ls).get("proto") == proto))
        cnt = mget(m, "idgen_request_duration_seconds_count", proto=proto)
        sm = mget(m, "idgen_request_duration_seconds_sum", proto=proto)
        ok = len(buckets) >= 4 and buckets[-1][0] == float("inf") and \
            all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])) and cnt is not None and buckets[-1][1] == cnt \
            and sm is not None and sm >= 0
        check('metrics: histogram idgen_request_duration_seconds{proto="%s"}: cumulative buckets, +Inf = _count, _sum'
              % proto, ok, "buckets %r count %r sum %r" % (buckets, cnt, sm))
        total = msum(m, "idgen_requests_total", proto=proto)
        check('metrics: histogram _count{proto="%s"} matches idgen_requests_total (±1 for this scrape)' % proto,
              cnt is not None and abs(cnt - total) <= 1, "count %r requests %r" % (cnt, total))
    check("metrics: idgen_connections{proto=http} and {proto=resp}",
          mget(m, "idgen_connections", proto="http") is not None and mget(m, "idgen_connections", proto="resp") is not None
          and mget(m, "idgen_connections", proto="http") >= 1)
    modes = {dict(ls).get("mode"): v for (n, ls), v in m.items() if n == "idgen_clock_fast_mode"}
    check("metrics: idgen_clock_fast_mode{mode} for fast, precise, calibrating, unavailable; exactly one is 1",
          set(modes) == {"fast", "precise", "calibrating", "unavailable"} and sorted(modes.values()) == [0, 0, 0, 1],
          repr(modes))
    for g in ("idgen_clock_borrowed_ms", "idgen_clock_waits_total", "idgen_clock_refusals_total",
              "idgen_sequence_exhausted_total", "idgen_clock_fast_fallbacks_total",
              "idgen_clock_fast_recalibrations_total", "idgen_clock_fast_cooldowns_total"):
        v = mget(m, g)
        check("metrics: %s is an unlabelled non-negative number" % g, v is not None and v >= 0, repr(v))
    # counts move by exactly what we did
    m0, _ = get_metrics(d)
    for _ in range(3):
        curl(d.http, "/health")
    curl(d.http, "/nope")
    m1, _ = get_metrics(d)
    d200 = (mget(m1, "idgen_requests_total", proto="http", code="200") or 0) - (mget(m0, "idgen_requests_total", proto="http", code="200") or 0)
    d404 = (mget(m1, "idgen_requests_total", proto="http", code="404") or 0) - (mget(m0, "idgen_requests_total", proto="http", code="404") or 0)
    check('metrics: idgen_requests_total{proto="http",code="200"} +3 health +1 scrape, code="404" +1',
          4 <= d200 <= 5 and d404 == 1, "200 +%r, 404 +%r" % (d200, d404))
    r, det = curl(d.http, "/metrics")
    check("GET /metrics: 200 text/plain", r is not None and r.status == 200
          and (r.h("content-type") or "").startswith("text/plain"), det or repr(r))


def group_idle(d):
    """1000 idle connections: others served meanwhile; closed at the idle timeout."""
    socks, opened = [], []
    t0 = time.monotonic()
    for i in range(1000):
        s = socket.create_connection((HOST, d.http if i % 2 == 0 else d.resp), timeout=5)
        s.setblocking(False)
        socks.append(s)
        opened.append(time.monotonic())
    t_open = time.monotonic() - t0
    deadline = time.monotonic() + 2
    cnt = 0
    while time.monotonic() < deadline:
        m, _ = get_metrics(d)
        cnt = msum(m, "idgen_connections")
        if cnt >= 1000:
            break
        time.sleep(0.05)
    check("1000 idle connections opened (%.2fs): idgen_connections >= 1000" % t_open, cnt >= 1000, "gauge %r" % cnt)
    served(d, "1000 idle connections open")
    # the idle timeout closes them, not earlier than idle_timeout, not much later
    closed_at = {}
    poller = select.poll()
    fdmap = {s.fileno(): i for i, s in enumerate(socks)}
    for s in socks:
        poller.register(s, select.POLLIN | select.POLLHUP | select.POLLERR)
    end = time.monotonic() + IDLE_MS / 1000 + 3
    while len(closed_at) < len(socks) and time.monotonic() < end:
        for fd, ev in poller.poll(100):
            i = fdmap[fd]
            try:
                data = socks[i].recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed_at[i] = time.monotonic() - opened[i]
                poller.unregister(fd)
    times = sorted(closed_at.values())
    check("idle timeout: all 1000 closed by the daemon", len(times) == 1000, "%d closed" % len(times))
    if times:
        check("idle timeout %dms: closed between %.1fs and %.1fs after opening (got %.2f..%.2f)" % (
            IDLE_MS, IDLE_MS / 1000 - 0.5, IDLE_MS / 1000 + 1.5, times[0], times[-1]),
            times[0] >= IDLE_MS / 1000 - 0.5 and times[-1] <= IDLE_MS / 1000 + 1.5)
    for s in socks:
        s.close()
    m, _ = get_metrics(d)
    check('metrics: idgen_connections_closed_total{reason="idle"} >= 1000',
          (mget(m, "idgen_connections_closed_total", reason="idle") or 0) >= 1000,
          repr(mget(m, "idgen_connections_closed_total", reason="idle")))
    served(d, "idle timeouts")


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


def group_slow(d):
    res = {}
    m0, _ = get_metrics(d)
    jobs = [("HTTP one byte a second", d.http, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", True),
            ("RESP one byte a second", d.resp, b"*1\r\n$4\r\nPING\r\n", True),
            ("HTTP request stalled mid-head", d.http, b"GET /health HTTP/1.1\r\nHo", False),
            ("RESP command stalled mid-frame", d.resp, b"*1\r\n$4\r\nPI", False),
            ("HTTP keep-alive, stalled mid second request", d.http, http_req("/health") + b"GET /he", False)]
    threads = [threading.Thread(target=slow_client, args=(port, data, bps, res, name)) for name, port, data, bps in jobs]
    for t in threads:
        t.start()
    time.sleep(0.5)
    served(d, "slow clients connected (while they are)")
    for t in threads:
        t.join()
    lo, hi = SLOW_MS / 1000 - 0.3, SLOW_MS / 1000 + 1.2
    for name, _, _, _ in jobs:
        closed, got = res.get(name, (None, b""))
        check("slow timeout %dms: %s closed %.1f..%.1fs after its first byte (got %s)" % (
            SLOW_MS, name, lo, hi, "never" if closed is None else "%.2fs" % closed),
            closed is not None and lo <= closed <= hi, "sent back %s" % short(got))
    closed, got = res.get("HTTP keep-alive, stalled mid second request", (None, b""))
    check("slow keep-alive client: its first request was answered", got.startswith(b"HTTP/1.1 200"), short(got))
    # A close is counted when its lingering read ends, on the connection's
    # own loop, which may come after another loop answers /metrics: look
    # again for a moment.
    deadline = time.monotonic() + 3
    while True:
        m1, _ = get_metrics(d)
        dslow = (mget(m1, "idgen_connections_closed_total", reason="slow") or 0) - \
            (mget(m0, "idgen_connections_closed_total", reason="slow") or 0)
        if dslow >= 5 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check('metrics: idgen_connections_closed_total{reason="slow"} +5', dslow == 5, "+%r" % dslow)
    served(d, "slow clients")


def tcp_state(s):
    try:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0]
    except OSError:
        return -1


def group_nonreader(d):
    """A client that never reads its replies: closed (output limit or slow
    timeout); meanwhile others are served."""
    m0, _ = get_metrics(d)
    base = sum((mget(m0, "idgen_connections_closed_total", reason=r) or 0) for r in ("output", "slow"))
    s = socket.create_connection((HOST, d.resp), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s.setblocking(False)
    req = b"ID 1000\r\n" * 50
    sent, t0, blocked = 0, time.monotonic(), False
    closed_by_metrics = None
    probes = []
    while time.monotonic() - t0 < 12:
        if sent < 2000 and not blocked:
            try:
                n = s.send(req)
                sent += n // len(b"ID 1000\r\n")
            except BlockingIOError:
                blocked = True
            except OSError:
                break
        else:
            time.sleep(0.2)
            t1 = time.monotonic()
            r, _ = curl(d.http, "/health", timeout=3)
            probes.append((r is not None and r.status == 200, time.monotonic() - t1))
            m, _ = get_metrics(d)
            now = sum((mget(m, "idgen_connections_closed_total", reason=r) or 0) for r in ("output", "slow"))
            if now > base:
                closed_by_metrics = time.monotonic() - t0
                break
            blocked = False
    check("non-reading client (%d x ID 1000 sent): closed by the daemon (reason output or slow) within 12s" % sent,
          closed_by_metrics is not None, "not closed; tcp state %d" % tcp_state(s))
    check("non-reading client: others served meanwhile (%d probes, all 200 within 2s)" % len(probes),
          len(probes) > 0 and all(ok and dt < 2 for ok, dt in probes), repr(probes))
    # the socket really is closed: drained, it ends
    s.setblocking(True)
    s.settimeout(5)
    total, eof = 0, False
    t1 = time.monotonic()
    try:
        while time.monotonic() - t1 < 8:
            b = s.recv(1 << 20)
            if not b:
                eof = True
                break
            total += len(b)
    except (ConnectionResetError, BrokenPipeError):
        eof = True
    except socket.timeout:
        pass
    s.close()
    check("non-reading client: its connection ends (EOF or reset) once drained (%d bytes)" % total, eof)
    m1, _ = get_metrics(d)
    out = (mget(m1, "idgen_connections_closed_total", reason="output") or 0) - (mget(m0, "idgen_connections_closed_total", reason="output") or 0)
    print("#    (closed with reason output: +%d, else slow; max_output_bytes %d)" % (out, MAX_OUT))
    served(d, "a client that never reads")


def group_log(d):
    time.sleep(1.5)  # a quiet spell, then one more client error: it carries the suppressed count
    c = Conn(d.http)
    c.send(b"GARBAGE\r\n\r\n")
    c.read_to_eof(2)
    c.close()
    time.sleep(0.2)
    text = d.log()
    lines = text.splitlines()
    bad = [ln for ln in lines if not re.match(r'ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z level=(debug|info|warn|error) event=[a-z_]+( |$)', ln)]
    check("log: every line is ts=… level=… event=… key=value", lines and not bad, short(bad[:3]))
    check("log: start line with version, pid, layout, registry",
          re.search(r"level=info event=start version=\S+ pid=%d .*layout=twitter.*registry=static" % d.p.pid, text)
          is not None, short(lines[:2]))
    ce = [ln for ln in lines if "event=client_error" in ln]
    check("log: client_error lines with proto, peer and status=400",
          any(re.search(r"proto=http peer=127\.0\.0\.1:\d+ status=400 reason=", ln) for ln in ce), short(ce[:3]))
    per_sec = {}
    for ln in ce:
        m = re.match(r"ts=(\S{19})", ln)
        if m:
            per_sec[m.group(1)] = per_sec.get(m.group(1), 0) + 1
    check("log: client errors at most 10 per second", per_sec and max(per_sec.values()) <= 10, repr(per_sec))
    check("log: the line after a quiet spell says how many were suppressed (suppressed=N)",
          re.search(r"event=client_error.*suppressed=[1-9]", text) is not None, short(ce[-3:]))


def group_snow_order():
    ids = [i for _, i in SNOW]
    n = len(ids)
    kinds = {src.split()[0] for src, _ in SNOW}
    check("collected %d Snowflake IDs from curl, redis-cli, python and raw clients" % n,
          kinds >= {"curl", "redis-cli", "python", "raw"}, "from %s" % sorted(kinds))
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
    check("all ULIDs unique (%d)" % len(ULIDS), len(ULIDS) > 0 and len(set(ULIDS)) == len(ULIDS))
    check("all UUIDv7s unique (%d)" % len(UUIDS), len(UUIDS) > 0 and len(set(UUIDS)) == len(UUIDS))


def group_settings():
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    p = subprocess.run([IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0", "--max-batch", "lots"],
                       capture_output=True, timeout=10, env=env)
    err = p.stderr.decode()
    check("serve --max-batch lots: exit 2, the message names max_batch and the value",
          p.returncode == 2 and "max_batch" in err and '"lots"' in err, "exit %d %r" % (p.returncode, err))
    env2 = dict(env, IDGEN_MAX_BATCH="lots")
    p = subprocess.run([IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0"], capture_output=True,
                       timeout=10, env=env2)
    err = p.stderr.decode().strip()
    check("IDGEN_MAX_BATCH=lots: exit 2, one line naming key, value and source as the manual's example",
          p.returncode == 2 and "\n" not in err
          and err.startswith('idgen: serve: max_batch = "lots" (from IDGEN_MAX_BATCH): '),
          "exit %d %r" % (p.returncode, err))


def group_agents_and_limit():
    d = Daemon("agents", ["--max-agents", "2", "--max-connections", "20"])
    try:
        for path in ("/id?agent=a1", "/id?agent=a2&count=2", "/id?agent=a3&count=3"):
            curl(d.http, path)
        rcli(d.resp, stdin="CLIENT SETNAME a4\nID 4\n")
        m, _ = get_metrics(d)
        got = {a: mget(m, "idgen_ids_issued_total", kind="snowflake", agent=a) for a in ("a1", "a2", "a3", "a4", "other")}
        check("max_agents 2: a1 and a2 counted by name, a3 and a4 under other",
              got == {"a1": 1, "a2": 2, "a3": None, "a4": None, "other": 7}, repr(got))
        # max_connections 20
        conns = []
        for i in range(20):
            c = Conn(d.resp)
            c.send(b"PING\r\n")
            conns.append(c)
        ok = True
        for c in conns:
            try:
                ok = ok and c.resp() == "PONG"
            except Exception:  # noqa: BLE001
                ok = False
        check("max_connections 20: 20 connections served", ok)
        for port, proto, req in ((d.resp, "RESP", b"PING\r\n"), (d.http, "HTTP", http_req("/health"))):
            c = Conn(port)
            try:
                c.s.settimeout(1)
                try:
                    d0 = c.s.recv(4096)
                    c.buf += d0
                    if not d0:
                        c.closed = True
                except socket.timeout:
                    try:
                        c.send(req)
                    except OSError:
                        pass
                closed = c.closed or c.read_to_eof(3)
            except OSError:
                closed = True
            if proto == "RESP":
                good = c.buf.startswith(b"-ERR ") and c.buf.endswith(b"\r\n") and c.buf.count(b"\r\n") == 1
            else:
                try:
                    r = parse_http(c.buf)
                    good = r is not None and r[0].status >= 500 and one_line_error(r[0])
                except ProtoError:
                    good = False
            check("max_connections 20: the 21st (%s) is answered with an error and closed" % proto,
                  good and closed, "got %s closed=%s" % (short(c.buf), closed))
            c.close()
        for c in conns:
            c.close()
        time.sleep(0.3)
        served(d, "max_connections reached and released")
        m, _ = get_metrics(d)
        check('metrics: idgen_connections_closed_total{reason="limit"} = 2',
              mget(m, "idgen_connections_closed_total", reason="limit") == 2,
              repr(mget(m, "idgen_connections_closed_total", reason="limit")))
    finally:
        rc = d.stop()
        check("agents daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_metrics_unique():
    """Every /metrics sample is unique by (name, labels), read with the real
    Prometheus parser, also when a client names itself `other`: the name of
    the bucket that counts agents past max_agents.  With --max-agents 3, the
    client `other` comes first (it must not take a name's place), then u0..u7
    (u3..u7 overflow), then CLIENT SETNAME other."""
    if text_string_to_metric_families is None:
        check("python3-prometheus-client is installed (scripts/install-deps.sh)", False)
        return
    d = Daemon("unique", ["--max-agents", "3"])
    try:
        curl(d.http, "/id?agent=other")
        for i in range(8):
            curl(d.http, "/id?agent=u%d&count=2" % i)
        rc, out, err = rcli(d.resp, stdin="CLIENT SETNAME other\nID 4\n")
        check("redis-cli CLIENT SETNAME other, ID 4", rc == 0 and out.startswith("OK\n"), repr(out))
        curl(d.http, "/ulid?agent=other")
        _, text = get_metrics(d)
        seen, dups, err = {}, [], None
        try:
            for fam in text_string_to_metric_families(text):
                for smp in fam.samples:
                    key = (smp.name, tuple(sorted(smp.labels.items())))
                    if key in seen:
                        dups.append(key)
                    seen[key] = smp.value
        except Exception as e:  # noqa: BLE001
            err = "%s: %s" % (type(e).__name__, e)
        check("metrics: prometheus_client's parser reads /metrics", err is None and seen, err or "no samples")
        check("metrics: no two samples with the same name and labels (prometheus_client's parser)", not dups,
              repr(dups[:5]))

        def issued(kind, agent):
            return seen.get(("idgen_ids_issued_total", (("agent", agent), ("kind", kind))))
        got = {a: issued("snowflake", a) for a in ("u0", "u1", "u2", "u3", "other")}
        check('metrics: agent "other" (HTTP and CLIENT SETNAME) counts in the overflow series: '
              "u0..u2 by name, other = 1 + 5 * 2 + 4",
              got == {"u0": 2, "u1": 2, "u2": 2, "u3": None, "other": 15}, repr(got))
        check('metrics: /ulid?agent=other counted under kind="ulid",agent="other"', issued("ulid", "other") == 1,
              repr(issued("ulid", "other")))
    finally:
        rc = d.stop()
        check("unique daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_many_connections():
    """10,000 connections opened and dropped; the daemon started with a soft
    RLIMIT_NOFILE of 1024 raises its own."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 20000)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if want < 10200:
        check("RLIMIT_NOFILE hard limit allows 10000 connections", False, "hard %d" % hard)
        return
    d = Daemon("many", [], nofile_soft=1024)
    socks = []
    try:
        lim = None
        with open("/proc/%d/limits" % d.p.pid) as f:
            for ln in f:
                if ln.startswith("Max open files"):
                    lim = int(ln.split()[3])
        check("daemon started with soft RLIMIT_NOFILE 1024 raised its own (now %s)" % lim,
              lim is not None and lim >= 10100)
        t0 = time.monotonic()
        deadline = t0 + 10
        err = ""
        for batch in range(20):
            pending = []
            for i in range(500):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.setblocking(False)
                e = s.connect_ex((HOST, d.http if (batch * 500 + i) % 2 == 0 else d.resp))
                if e not in (0, errno.EINPROGRESS):
                    err = os.strerror(e)
                pending.append(s)
                socks.append(s)
            poller = select.poll()
            fds = {}
            for s in pending:
                poller.register(s, select.POLLOUT)
                fds[s.fileno()] = s
            while fds and time.monotonic() < deadline:
                for fd, ev in poller.poll(200):
                    s = fds.pop(fd)
                    poller.unregister(fd)
                    e = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if e:
                        err = os.strerror(e)
            if fds:
                err = err or "connect timed out"
                break
        t_open = time.monotonic() - t0
        check("10000 connections opened (%.1fs)" % t_open, not err and len(socks) == 10000, err)
        cnt, deadline = 0, time.monotonic() + 10
        while time.monotonic() < deadline:
            m, _ = get_metrics(d)
            cnt = msum(m, "idgen_connections")
            if cnt >= 10000:
                break
            time.sleep(0.2)
        check("10000 connections accepted by the daemon (idgen_connections >= 10000)", cnt >= 10000, "gauge %r" % cnt)
        served(d, "10000 connections open")
        for k, s in enumerate(socks):
            if k % 2:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
        socks = []
        cnt, deadline = None, time.monotonic() + 10
        while time.monotonic() < deadline:
            m, _ = get_metrics(d)
            cnt = msum(m, "idgen_connections")
            if cnt <= 2:
                break
            time.sleep(0.2)
        check("10000 connections dropped (half reset): idgen_connections back to <= 2", cnt is not None and cnt <= 2,
              "gauge %r" % cnt)
        served(d, "10000 connections dropped")
    finally:
        for s in socks:
            s.close()
        rc = d.stop()
        check("many-connections daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def read_all(sock, timeout):
    """Reads until EOF; returns (bytes, how it ended: "eof", "reset" or "timeout")."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(data), "timeout"
        sock.settimeout(left)
        try:
            d = sock.recv(1 << 20)
        except socket.timeout:
            return bytes(data), "timeout"
        except ConnectionResetError:
            return bytes(data), "reset"
        if not d:
            return bytes(data), "eof"
        data += d


def group_close_cleanly():
    """A connection closed by the daemon after its last reply (Connection:
    close, QUIT, a drain) must deliver that reply whole, even when the client
    sent more that the daemon never reads: a plain close() would make the
    kernel reset the connection and drop what was still unsent."""
    d = Daemon("close", ["--max-batch", "100000", "--shutdown-timeout-ms", "5000"])
    try:
        s = socket.create_connection((HOST, d.http), timeout=5)
        s.sendall(b"GET /id?count=100000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        time.sleep(0.2)
        try:
            s.sendall(b"GET /id HTTP/1.1\r\nHost: x\r\n\r\n")  # never to be read
        except OSError:
            pass
        data, how = read_all(s, 10)
        s.close()
        r = parse_http(data)
        ok = r is not None and r[0].status == 200 and len(digits_lines(r[0].body) or []) == 100000
        check("Connection: close after a 2 MB reply, more sent meanwhile: the reply arrives whole, then EOF",
              ok and how == "eof", "%s after %d bytes" % (how, len(data)))

        s = socket.create_connection((HOST, d.resp), timeout=5)
        s.sendall(b"ID 100000\r\nQUIT\r\n")
        time.sleep(0.2)
        try:
            s.sendall(b"PING\r\n")
        except OSError:
            pass
        data, how = read_all(s, 10)
        s.close()
        replies, left = parse_resp_all(data)
        ok = (not left and len(replies) == 2 and isinstance(replies[0], list)
              and len(replies[0]) == 100000 and replies[1] == "OK")
        check("ID 100000 then QUIT, more sent meanwhile: both replies whole, then EOF", ok and how == "eof",
              "%s after %d bytes" % (how, len(data)))

        # SIGTERM while six large replies wait for a client that has not read yet.
        s = socket.create_connection((HOST, d.resp), timeout=5)
        for _ in range(6):
            s.sendall(b"ID 100000\r\n")
            time.sleep(0.05)
        d.p.send_signal(signal.SIGTERM)
        data, how = read_all(s, 10)
        s.close()
        replies, left = parse_resp_all(data)
        ok = (not left and len(replies) == 6
              and all(isinstance(x, list) and len(x) == 100000 for x in replies))
        check("SIGTERM with six 2 MB replies queued: all six arrive whole, then EOF", ok and how == "eof",
              "%s after %d bytes, %d replies" % (how, len(data), len(replies)))
        rc = d.stop()
        check("close daemon: exits 0 after the drain", rc == 0, "exit %r" % rc)
    finally:
        d.kill()


def group_shutdown():
    pidfile = os.path.join(TMP, "idgen.pid")
    d = Daemon("shutdown", ["--pid-file", pidfile, "--shutdown-timeout-ms", "3000"])
    bench = None
    try:
        try:
            with open(pidfile) as f:
                pid_text = f.read().strip()
        except OSError as e:
            pid_text = repr(e)
        check("pid file written with the daemon's pid", pid_text == str(d.p.pid), pid_text)
        bench = subprocess.Popen(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-c", "20", "-n", "10000000",
                                  "-P", "16", "-q", "ID"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        CHILDREN.append(bench)
        # our own pipelining client, reading as it goes
        s = socket.create_connection((HOST, d.resp), timeout=5)
        s.setblocking(False)
        req = resp_cmd("ID") * 64
        buf = bytearray()
        replies, pos, sent_reqs, ids = 0, 0, 0, []
        replies_at_term = sent_at_term = None
        parse_err = None
        t0 = time.monotonic()
        termed = None
        eof = False
        send_open = True
        while time.monotonic() - t0 < 15:
            want_w = send_open and sent_reqs - replies < 256
            r, w, _ = select.select([s], [s] if want_w else [], [], 0.05)
            if w:
                try:
                    n = s.send(req)
                    if n % len(resp_cmd("ID")):
                        # finish a partly sent command so every request is whole
                        rest = req[n:n + (len(resp_cmd("ID")) - n % len(resp_cmd("ID")))]
                        s.setblocking(True)
                        s.settimeout(2)
                        s.sendall(rest)
                        s.setblocking(False)
                        n += len(rest)
                    sent_reqs += n // len(resp_cmd("ID"))
                    if termed is None and time.monotonic() - t0 > 1.0:
                        # SIGTERM right after a write: requests are in flight
                        d.p.send_signal(signal.SIGTERM)
                        termed = time.monotonic()
                        replies_at_term, sent_at_term = replies, sent_reqs
                except (BlockingIOError, socket.timeout):
                    pass
                except OSError:
                    send_open = False
            if r:
                try:
                    data = s.recv(1 << 20)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    eof = True
                    break
                if data:
                    buf += data
                    try:
                        while True:
                            res = parse_resp(buf, pos)
                            if res is None:
                                break
                            ids.append(res[0])
                            pos = res[1]
                            replies += 1
                    except ProtoError as e:
                        parse_err = e
                        break
                    if pos > 1 << 20:
                        del buf[:pos]
                        pos = 0
        s.close()
        rc = None
        try:
            rc = d.p.wait(8)
        except subprocess.TimeoutExpired:
            pass
        t_exit = time.monotonic() - termed if termed else None
        check("graceful shutdown: our client saw EOF", eof, "replies %d" % replies)
        check("graceful shutdown: %d replies to our pipelined IDs parse as whole RESP (no half reply at EOF)" % replies,
              parse_err is None and pos == len(buf) and replies > 0,
              "error %r; %d bytes left over: %s" % (parse_err, len(buf) - pos, short(bytes(buf[pos:pos + 100]))))
        ints = [x for x in ids if type(x) is int]
        check("graceful shutdown: every reply was an ID, strictly increasing", len(ints) == len(ids) and increasing(ints),
              short([x for x in ids if type(x) is not int][:3]))
        check("graceful shutdown: the daemon exits 0 (%s)" % ("%.2fs after SIGTERM" % t_exit if rc is not None else "still running"),
              rc == 0 and t_exit is not None and t_exit < 3 + 2, "exit %r" % rc)
        check("graceful shutdown: the drain finished before shutdown_timeout_ms (3000; every client was reading)",
              rc is not None and t_exit is not None and t_exit < 3.0, "exit after %s s" % t_exit)
        check("graceful shutdown: every request our client sent before SIGTERM was answered "
              "(%s sent, %s answered at SIGTERM; %d answered in all)" % (sent_at_term, replies_at_term, replies),
              sent_at_term is not None and 0 < replies_at_term < sent_at_term <= replies,
              "in all %d sent, %d answered" % (sent_reqs, replies))
        text = d.log()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        check("graceful shutdown: log has event=stop signal=TERM", re.search(r"event=stop signal=TERM", text) is not None,
              short(lines[-3:]))
        check("graceful shutdown: the log ends with event=exit code=0",
              lines and re.search(r"level=info event=exit code=0\b", lines[-1]) is not None, short(lines[-3:]))
        check("graceful shutdown: pid file removed", not os.path.exists(pidfile))
    finally:
        if bench is not None:
            try:
                bench.wait(5)
            except subprocess.TimeoutExpired:
                bench.kill()
                bench.wait()
        d.kill()


SLOW_LAYOUT = "time:41@1s,worker:10,sequence:4,epoch=1288834974000"  # 16 IDs a second


def group_waiting():
    """A request that must wait for its tick is parked on the loop's timer:
    with one event loop, other connections are answered while it waits, and
    its own connection's next request comes after it (52df1fb slept in the
    loop: /health waited with it).  Batches never wait longer than one ID
    may: a count above what the layout makes within borrow + wait is a 400
    naming max_batch, a count that does not fit now a 503 naming what does,
    both at once."""
    d = Daemon("waiting", ["--threads", "1", "--max-borrow-ms", "0"],
               node_args=["--layout", SLOW_LAYOUT, "--registry", "static", "--node", "worker=5"])
    try:
        # Start early in a second, so that the wait for the next is long.
        time.sleep(1.02 - time.time() % 1.0)
        a = Conn(d.http)
        a.send(http_req("/id?count=16"))  # all of this second's IDs: at once
        r1 = a.http()
        first = digits_lines(r1.body) or []
        check("waiting: this second's 16 IDs at once", r1.status == 200 and len(first) == 16,
              (r1.status, short(r1.body)))
        t0 = time.monotonic()
        a.send(http_req("/id?count=4") + http_req("/health"))  # the next second's, then /health
        b = Conn(d.http)
        b.send(http_req("/health"))
        rb = b.http(timeout=3)
        t_b = time.monotonic() - t0
        c = Conn(d.resp)
        c.send(resp_cmd("PING"))
        pong = c.resp(timeout=3)
        t_c = time.monotonic() - t0
        r2 = a.http(timeout=3)
        t_a = time.monotonic() - t0
        r3 = a.http(timeout=3)
        second = digits_lines(r2.body) or []
        check("waiting: another HTTP connection is answered while the batch waits "
              "(%.0f ms, the batch after %.0f ms)" % (t_b * 1000, t_a * 1000),
              rb.status == 200 and t_b < 0.3 and t_b < t_a and t_a > 0.5, (rb.status, t_b, t_a))
        check("waiting: and a RESP PING (%.0f ms)" % (t_c * 1000), pong == "PONG" and t_c < t_a,
              (pong, t_c))
        check("waiting: the batch is the next second's first 4 IDs, above this second's",
              r2.status == 200 and len(second) == 4 and second[0] > first[-1] and
              (second[0] >> 14) == (first[0] >> 14) + 1, (r2.status, short(r2.body)))
        check("waiting: its connection's next request (/health) came after it, in order",
              r3.status == 200 and r3.body.startswith(b"ok"), (r3.status, short(r3.body)))
        # RESP in order too: ID 16 then PING on one connection, while another pings.
        time.sleep(1.02 - time.time() % 1.0)
        c.send(resp_cmd("ID", "16"))
        c.resp(timeout=3)
        t0 = time.monotonic()
        c.send(resp_cmd("ID", "2") + resp_cmd("PING"))
        e = Conn(d.resp)
        e.send(resp_cmd("PING"))
        pe = e.resp(timeout=3)
        t_e = time.monotonic() - t0
        ids = c.resp(timeout=3)
        t_ids = time.monotonic() - t0
        pc = c.resp(timeout=3)
        check("waiting: RESP ID 2 waits for the next second (%.0f ms) while another connection's "
              "PING is answered (%.0f ms), and its own PING comes after it" % (t_ids * 1000, t_e * 1000),
              pe == "PONG" and t_e < 0.3 and t_e < t_ids and type(ids) is list and len(ids) == 2
              and pc == "PONG", (pe, t_e, ids, t_ids, pc))
        m, _ = get_metrics(d)
        check("waiting: idgen_requests_parked_total counts them",
              (mget(m, "idgen_requests_parked_total") or 0) >= 2, mget(m, "idgen_requests_parked_total"))
        for x in (a, b, c, e):
            x.close()
        # Above max_batch (16 here: no borrowing, so one second's): 400 at once.
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=120")
        t = time.monotonic() - t0
        check("waiting: count 120 is a 400 naming max_batch 16, at once (%.0f ms)" % (t * 1000),
              r and r.status == 400 and b"from 1 to 16 (max_batch)" in r.body and t < 0.5,
              r and (r.status, short(r.body)))
    finally:
        d.stop()
    # sonyflake: 256 IDs per 10 ms tick; the default max_batch is 28416.
    d = Daemon("waiting-sonyflake", ["--threads", "1"],
               node_args=["--layout", "sonyflake", "--registry", "static", "--node", "machine=9"])
    try:
        h = Conn(d.http)
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=100000")
        h.send(http_req("/health"))
        rh = h.http(timeout=3)
        t = time.monotonic() - t0
        check("waiting: sonyflake count=100000 is a 400 naming max_batch 28416, and /health is "
              "answered at once (%.0f ms; 52df1fb held the loop 2.9 s)" % (t * 1000),
              r and r.status == 400 and b"from 1 to 28416 (max_batch)" in r.body and
              rh.status == 200 and t < 0.5, (r and (r.status, short(r.body)), rh.status, t))
        h.close()
    finally:
        d.stop()
    d = Daemon("waiting-sonyflake-big", ["--threads", "1", "--max-batch", "100000",
                                         "--max-output-bytes", str(8 << 20)],
               node_args=["--layout", "sonyflake", "--registry", "static", "--node", "machine=9"])
    try:
        t0 = time.monotonic()
        r, _ = curl(d.http, "/id?count=100000")
        t = time.monotonic() - t0
        check("waiting: with max_batch 100000, count=100000 is a 503 naming how many fit now, "
              "at once (%.0f ms), with Retry-After" % (t * 1000),
              r and r.status == 503 and re.search(rb"can make at most \d+ IDs within max_wait_ms",
                                                  r.body) and r.h("retry-after") and t < 0.5,
              r and (r.status, short(r.body)))
        r, _ = curl(d.http, "/id?count=28416")
        ids = digits_lines(r.body) if r else None
        check("waiting: count=28416 (the window) is served, increasing",
              r and r.status == 200 and ids and len(ids) == 28416 and increasing(ids),
              r and (r.status, short(r.body)))
    finally:
        d.stop()


def run_group(name, fn, *args, again_after_stall=False):
    """Runs a group of checks.  With again_after_stall (groups that collect no
    IDs and measure time), a group that failed while the whole machine stood
    still (see stall_watch) is run once more and only that run counts."""
    global BUFFER
    print("# " + name, flush=True)
    for attempt in (1, 2):
        BUFFER = [] if again_after_stall else None
        t0 = time.monotonic()
        try:
            fn(*args)
        except Exception:  # noqa: BLE001
            check("%s ran to the end" % name, False, traceback.format_exc().strip().replace("\n", " | ")[-600:])
        results, BUFFER = BUFFER, None
        if results is None:
            return
        stalled = stalled_since(t0)
        if attempt == 1 and stalled > 0.5 and not all(ok for ok, _, _ in results):
            print("#    this machine stood still for %.1fs during the group (no process ran); running it again:"
                  % stalled, flush=True)
            for ok, n, det in results:
                if not ok:
                    print("#    (first run: FAIL %s: %s)" % (n, det[:300]), flush=True)
            continue
        for ok, n, det in results:
            checks.report(n, ok, det)
        return


def main():
    t_begin = time.monotonic()

    def on_alarm(signum, frame):
        check("test finished within the watchdog's 170s", False, "stuck in:\n" + "".join(traceback.format_stack(frame)[-3:]))
        for c in CHILDREN + [dd.p for dd in DAEMONS]:
            if c.poll() is None:
                c.kill()
        print(checks.summary(), flush=True)
        os._exit(1)
    threading.Thread(target=stall_watch, daemon=True).start()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(170)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < min(hard, 20000):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 20000), hard))
    try:
        run_group("settings", group_settings)
        try:
            d = Daemon("main", ["--max-batch", str(MAX_BATCH), "--max-request-bytes", str(MAX_REQ),
                                "--slow-timeout-ms", str(SLOW_MS), "--idle-timeout-ms", str(IDLE_MS),
                                "--max-output-bytes", str(MAX_OUT)])
            check("daemon starts; listen lines give the ports",
                  d.p.poll() is None and 0 < d.http < 65536 and 0 < d.resp < 65536
                  and d.http != d.resp, (d.http, d.resp))
        except StartError as e:
            check("daemon starts; listen lines give the ports", False, str(e))
            d = None
        if d:
            for name, fn in (("HTTP routes (curl)", group_http_routes), ("keep-alive and pipelining", group_keepalive),
                             ("RESP commands (redis-cli)", group_resp_cli), ("RESP exact bytes", group_resp_raw),
                             ("python3-redis", group_python), ("HTTP abuse", group_http_abuse),
                             ("HTTP conformance", group_http_conformance), ("quoted errors", group_quoting),
                             ("RESP abuse", group_resp_abuse), ("redis-benchmark", group_benchmark),
                             ("metrics", group_metrics), ("slow clients", group_slow),
                             ("idle connections", group_idle), ("a client that never reads", group_nonreader)):
                run_group(name, fn, d, again_after_stall=fn in (
                    group_http_abuse, group_resp_abuse, group_benchmark, group_metrics, group_slow, group_idle,
                    group_nonreader))
                if not d.alive():
                    check("daemon still running after %s" % name, False, d.log()[-1000:])
                    break
            # one more ID of each client kind after everything
            r, _ = curl(d.http, "/id")
            add_snow("curl last", (digits_lines(r.body) or []) if r else [])
            rc, out, _ = rcli(d.resp, "ID")
            m = re.fullmatch(r"\(integer\) (\d+)\n", out)
            add_snow("redis-cli last", [int(m.group(1))] if m else [])
            run_group("Snowflake IDs across all clients", group_snow_order)
            run_group("log", group_log, d)
            rc = d.stop()
            check("main daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        run_group("requests that wait for their tick", group_waiting, again_after_stall=True)
        run_group("agents and max_connections", group_agents_and_limit, again_after_stall=True)
        run_group("metrics series unique (agent other)", group_metrics_unique)
        run_group("10000 connections", group_many_connections, again_after_stall=True)
        run_group("graceful shutdown under load", group_shutdown, again_after_stall=True)
        run_group("closing without losing replies", group_close_cleanly, again_after_stall=True)
    finally:
        signal.alarm(0)
        for c in CHILDREN:
            if c.poll() is None:
                c.kill()
                c.wait()
        for dd in DAEMONS:
            dd.kill()
    if checks.failed:
        print("# %.1fs; daemon logs kept in %s" % (time.monotonic() - t_begin, TMP))
    else:
        print("# %.1fs" % (time.monotonic() - t_begin))
        shutil.rmtree(TMP, ignore_errors=True)
    print(checks.summary())
    sys.exit(1 if checks.failed else 0)


if __name__ == "__main__":
    main()
