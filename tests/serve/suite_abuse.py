#!/usr/bin/env python3
"""Abuse (timing): malformed and hostile HTTP and RESP, slow clients, idle
connections, a client that never reads, and the rate-limited log of client
errors; every other client is still served.

Usage: python3 tests/serve/suite_abuse.py PATH/TO/idgen  (or: ctest -R serve.abuse)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()


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
    # again until it is (a moment; up to 30 s on a busy machine).
    deadline = time.monotonic() + 30
    while True:
        m1, _ = get_metrics(d)
        dslow = (mget(m1, "idgen_connections_closed_total", reason="slow") or 0) - \
            (mget(m0, "idgen_connections_closed_total", reason="slow") or 0)
        if dslow >= 5 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    check('metrics: idgen_connections_closed_total{reason="slow"} +5', dslow == 5, "+%r" % dslow)
    served(d, "slow clients")


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
    deadline = time.monotonic() + 30  # until the daemon has them all (a moment, on a quiet machine)
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


TOKEN = "0123456789abcdef0123456789abcdef"


def bearer_get(sock, token, path="/id"):
    """GET path with a Bearer token on a keep-alive socket: (status, seconds,
    Retry-After)."""
    t0 = time.monotonic()
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                  % (path, token)).encode())
    buf = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ProtoError("EOF after %r" % buf[:200])
        buf += chunk
        r = parse_http(buf)
        if r is not None:
            return r[0].status, time.monotonic() - t0, r[0].h("retry-after")


def one_attempt(port, token, source="127.0.0.1"):
    """One token on a new connection from `source`: (status, seconds, Retry-After)."""
    s = socket.create_connection((HOST, port), timeout=15, source_address=(source, 0))
    try:
        return bearer_get(s, token)
    finally:
        s.close()


def p99(xs):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))]


def group_auth_slowed():
    """SPEC §13: wrong tokens are slowed by address; another address is
    served as before."""
    path = os.path.join(TMP, "auth-slowed")
    with open(path, "w") as f:
        f.write("app %s\n" % TOKEN)
    os.chmod(path, 0o600)
    d = Daemon("auth-slowed", MAIN_ARGS + ["--auth-file", path, "--auth-metrics=false"])
    other = socket.create_connection((HOST, d.http), timeout=15, source_address=("127.0.0.2", 0))
    base = [bearer_get(other, TOKEN)[:2] for _ in range(400)]
    check("another address: 400 requests with the right token, all 200",
          all(st == 200 for st, _ in base), repr(set(st for st, _ in base)))
    # 100 wrong tokens from 127.0.0.1, four at a time, each on a new connection.
    results, lock, done = [], threading.Lock(), threading.Event()

    def attacker(n):
        for i in range(n):
            r = one_attempt(d.http, "guess-%04d-xxxxxxxxxx" % len(results))
            with lock:
                results.append(r)
    t0 = time.monotonic()
    threads = [threading.Thread(target=attacker, args=(25,)) for _ in range(4)]
    for t in threads:
        t.start()
    during = []
    while any(t.is_alive() for t in threads):
        during.append(bearer_get(other, TOKEN)[:2])
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    statuses = [st for st, _, _ in results]
    check("100 wrong tokens from one address: each refused (401, or 429 past the hold)",
          len(results) == 100 and set(statuses) <= {401, 429}, repr(sorted(set(statuses))))
    samples, _ = get_metrics(d)
    failed = msum(samples, "idgen_auth_failures_total", proto="http")
    held = msum(samples, "idgen_auth_slowed_total", proto="http", action="held")
    refused = msum(samples, "idgen_auth_slowed_total", proto="http", action="refused")
    check("... counted: failures + refused unseen = 100", failed + refused == 100,
          "failures %s refused %s" % (failed, refused))
    check("... the first 5 answered at once, the rest held back (idgen_auth_slowed_total)",
          held >= 100 - 5 - refused and refused + held <= 95, "held %s refused %s" % (held, refused))
    check("... slowed: the held ones took 100 ms each, one after another (>= %.1f s)"
          % (0.09 * held), took >= 0.09 * held, "%.2f s for %d held" % (took, held))
    b99, d99 = p99([x for _, x in base]), p99([x for _, x in during])
    check("... meanwhile another address is served unharmed: p99 %.2f ms vs %.2f ms before "
          "(within 5 ms)" % (d99 * 1e3, b99 * 1e3),
          len(during) >= 20 and all(st == 200 for st, _ in during) and d99 <= b99 + 0.005,
          "%d requests, statuses %r" % (len(during), set(st for st, _ in during)))
    # The right token from the slowed address waits its turn too (an
    # attacker learns nothing sooner by guessing right).
    time.sleep(0.3)
    guesses = [threading.Thread(target=one_attempt, args=(d.http, "guess-again-xxxxxxxxxx"))
               for _ in range(3)]
    for t in guesses:
        t.start()
    time.sleep(0.02)  # (sent, not answered: they are held)
    st, secs, _ = one_attempt(d.http, TOKEN)
    for t in guesses:
        t.join()
    check("the right token from the slowed address: 200, answered only when due (>= 50 ms)",
          st == 200 and secs >= 0.05, "%s after %.3f s" % (st, secs))
    st, secs, _ = one_attempt(d.http, TOKEN, source="127.0.0.2")
    check("... while from another address at once (< 50 ms)", st == 200 and secs < 0.05,
          "%s after %.3f s" % (st, secs))
    # Many at once: past 2 s behind, refused without a look at the token.
    burst = []

    def burster():
        r = one_attempt(d.http, "guess-burst-xxxxxxxxxx")
        with lock:
            burst.append(r)
    ts = [threading.Thread(target=burster) for _ in range(40)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    t1 = time.monotonic()
    _, out, err = rcli(d.resp, "AUTH", "guess-resp-xxxxxxxxxx")
    rsecs = time.monotonic() - t1
    for t in ts:
        t.join()
    limited = [r for r in burst if r[0] == 429]
    check("40 at once: those past 2 s behind get 429 with Retry-After, at once",
          limited and all(ra == "2" and secs < 1.0 for _, secs, ra in limited),
          repr(sorted(set((st, ra) for st, _, ra in burst))))
    check("RESP AUTH from that address meanwhile: -ERR too many wrong tokens, or held >= 1 s",
          "too many wrong tokens" in out or ("WRONGPASS" in out and rsecs >= 1.0),
          "%s%s after %.2f s" % (out, err, rsecs))
    other.close()
    rc = d.stop()
    check("the daemon exits 0", rc == 0, "exit %r" % rc)
    log = d.log()
    check("the log names the address, never a token",
          "event=auth_failed proto=http peer=127.0.0.1:" in log and "guess-" not in log
          and TOKEN not in log,
          short(log[-600:].encode()))


if __name__ == "__main__":
    run_suite("abuse",
              before=[],
              with_daemon=[('HTTP abuse', group_http_abuse), ('RESP abuse', group_resp_abuse), ('slow clients', group_slow), ('idle connections', group_idle), ('a client that never reads', group_nonreader), ('log', group_log)],
              after=[('wrong tokens slowed by address', group_auth_slowed)],
              snow_kinds=None)
