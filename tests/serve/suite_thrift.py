#!/usr/bin/env python3
"""Twitter's Snowflake Thrift service (`idgen serve --thrift`), with the real
Apache Thrift client: Debian's thrift-compiler generates Python code from the
shipped IDL (docs/snowflake.thrift) at test time, and python3-thrift calls
every method over a framed binary connection, from many connections at once
and pipelined; then the abuse: unknown methods, bad user agents, malformed
and oversized frames, a frame cut short, none of which harm other clients.

Usage: python3 tests/serve/suite_thrift.py PATH/TO/idgen  (or: ctest -R serve.thrift)
"""

import importlib

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

IDL = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                   "docs", "snowflake.thrift")

try:
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport
    from thrift.Thrift import TApplicationException
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        from thrift.protocol import TBinaryProtocol
        from thrift.transport import TSocket, TTransport
        from thrift.Thrift import TApplicationException
    except ImportError:
        TBinaryProtocol = None

Snowflake = None


def generate():
    """thrift --gen py from the shipped IDL, imported from TMP."""
    global Snowflake
    out = os.path.join(TMP, "gen")
    os.makedirs(out, exist_ok=True)
    p = subprocess.run(["thrift", "--gen", "py", "-out", out, IDL], capture_output=True, timeout=60)
    check("thrift --gen py docs/snowflake.thrift (thrift-compiler)", p.returncode == 0,
          p.stderr.decode()[-400:])
    if p.returncode != 0:
        return False
    sys.path.insert(0, out)
    Snowflake = importlib.import_module("snowflake.Snowflake")
    return True


def client(port):
    sock = TSocket.TSocket(HOST, port)
    sock.setTimeout(10000)
    tr = TTransport.TFramedTransport(sock)
    tr.open()
    return Snowflake.Client(TBinaryProtocol.TBinaryProtocol(tr)), tr


def thrift_daemon(name, extra=()):
    d = Daemon(name, list(extra) + ["--thrift", HOST + ":0"])
    m = re.search(r"event=listen proto=thrift addr=127\.0\.0\.1:(\d+)", d.log())
    d.thrift = int(m.group(1)) if m else None
    return d


def frame(payload):
    return struct.pack(">I", len(payload)) + payload


def call_bytes(name, seqid, args=b"\x00", mtype=1):
    n = name.encode()
    return frame(struct.pack(">I", 0x80010000 | mtype) + struct.pack(">I", len(n)) + n +
                 struct.pack(">i", seqid) + args)


def read_frame(sock, timeout=5):
    sock.settimeout(timeout)
    buf = b""
    try:
        while len(buf) < 4:
            b = sock.recv(4 - len(buf))
            if not b:
                return None
            buf += b
        n = struct.unpack(">I", buf)[0]
        body = b""
        while len(body) < n:
            b = sock.recv(n - len(body))
            if not b:
                return None
            body += b
        return body
    except socket.timeout:
        return None


def group_methods(d):
    if TBinaryProtocol is None:
        check("python3-thrift importable (scripts/install-deps.sh)", False)
        return
    if not generate():
        return
    c, tr = client(d.thrift)
    try:
        check("get_worker_id() is the worker node value (17)", c.get_worker_id() == WORKER)
        check("get_datacenter_id() is the datacenter node value (3)", c.get_datacenter_id() == DC)
        t = c.get_timestamp()
        check("get_timestamp() is the server's clock in ms", abs(t - time.time() * 1000) < 5000, t)
        ids = [c.get_id("thrift-test") for _ in range(200)]
        check("get_id(): 200 IDs, strictly increasing, this daemon's node values",
              increasing(ids) and all(sf_fields(i)["datacenter"] == DC and sf_fields(i)["worker"] == WORKER
                                      for i in ids), ids[:3])
        add_snow("thrift get_id", ids)
        try:
            c.get_id("bad agent!")
            check("get_id('bad agent!'): a TApplicationException", False, "no exception")
        except TApplicationException as e:
            check("get_id('bad agent!'): TApplicationException naming InvalidUserAgentError and the rule",
                  "InvalidUserAgentError" in str(e.message) and "[a-zA-Z][a-zA-Z0-9-]*" in str(e.message),
                  e.message)
        check("the connection goes on after the exception", c.get_id("thrift-test") > ids[-1])
        m, _ = get_metrics(d)
        check("metrics: IDs counted under the agent thrift-test",
              (mget(m, "idgen_ids_issued_total", kind="snowflake", agent="thrift-test") or 0) >= 201)
        check("metrics: idgen_requests_total{proto=thrift}: ok and err",
              (mget(m, "idgen_requests_total", proto="thrift", code="ok") or 0) >= 204
              and (mget(m, "idgen_requests_total", proto="thrift", code="err") or 0) >= 1)
        check("metrics: idgen_connections{proto=thrift} >= 1",
              (mget(m, "idgen_connections", proto="thrift") or 0) >= 1)
    finally:
        tr.close()


def group_many(d):
    """Eight connections, each 500 calls, at once: no ID twice, each
    connection's increasing."""
    if Snowflake is None:
        return
    results, errors = {}, []

    def run(k):
        try:
            c, tr = client(d.thrift)
            results[k] = [c.get_id("conn%d" % k) for _ in range(500)]
            tr.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    ts = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    allids = [i for v in results.values() for i in v]
    check("8 connections x 500 get_id: all answered", not errors and len(allids) == 4000, errors[:2])
    check("8 connections: no ID twice", len(set(allids)) == len(allids))
    check("8 connections: each connection's IDs increasing", all(increasing(v) for v in results.values()))


def group_pipelined(d):
    """Calls written back to back before reading: answered in order, each
    with its own sequence id."""
    s = socket.create_connection((HOST, d.thrift))
    try:
        ua = b"\x0b\x00\x01" + struct.pack(">I", 4) + b"pipe" + b"\x00"
        s.sendall(b"".join(call_bytes("get_id", 100 + k, ua) for k in range(50)) +
                  call_bytes("get_worker_id", 999))
        got = [read_frame(s) for _ in range(51)]
        seqs, ids = [], []
        for b in got[:50]:
            if b is None:
                break
            n = struct.unpack(">I", b[4:8])[0]
            seqs.append(struct.unpack(">i", b[8 + n:12 + n])[0])
            ids.append(struct.unpack(">q", b[15 + n:23 + n])[0])
        check("50 pipelined get_id calls: 50 replies in order (sequence ids 100..149)",
              seqs == list(range(100, 150)), seqs[:5])
        check("pipelined IDs increasing", len(ids) == 50 and increasing(ids))
        last = got[50]
        check("then get_worker_id: its reply, sequence id 999",
              last is not None and last[-9:] == struct.pack(">q", WORKER) + b"\x00"
              and struct.unpack(">i", last[21:25])[0] == 999, short(last))
    finally:
        s.close()


def group_abuse(d):
    def exchange(data, name):
        s = socket.create_connection((HOST, d.thrift))
        try:
            s.sendall(data)
            b = read_frame(s, 3)
            s.settimeout(3)
            try:
                closed = s.recv(1) == b""
            except (socket.timeout, ConnectionResetError):
                closed = False
            return b, closed
        finally:
            s.close()
    b, closed = exchange(call_bytes("get_nothing", 7), "unknown")
    check("an unknown method: TApplicationException UNKNOWN_METHOD (type 3 message), "
          "\"Invalid method name: 'get_nothing'\"",
          b is not None and struct.unpack(">I", b[:4])[0] == 0x80010003 and b"Invalid method name: 'get_nothing'" in b
          and b.endswith(b"\x08\x00\x02\x00\x00\x00\x01\x00"), short(b))
    b, closed = exchange(call_bytes("get_id", 8, b"\x00"), "no agent")
    check("get_id without its user agent: InvalidUserAgentError", b is not None and b"InvalidUserAgentError" in b,
          short(b))
    b, closed = exchange(frame(struct.pack(">I", 0x80020001) + b"\x00" * 8), "bad version")
    check("a bad protocol version: closed, no reply", b is None and closed, short(b))
    b, closed = exchange(call_bytes("get_id", 9, b"\x0b\x00\x01\xff\xff\xff\xff\x00"), "negative string")
    check("a negative string length: PROTOCOL_ERROR naming it, then closed",
          b is not None and b"negative string length" in b and closed, short(b))
    b, closed = exchange(call_bytes("get_id", 10, b"\x0c\x00\x05" * 40 + b"\x00" * 41), "deep")
    check("structs nested 40 deep: PROTOCOL_ERROR (at most 32), then closed",
          b is not None and b"nesting deeper than 32" in b and closed, short(b))
    b, closed = exchange(struct.pack(">I", 1 << 30), "huge frame")
    check("a 1 GiB frame announced: refused at its length, closed", b is None and closed)
    b, closed = exchange(call_bytes("get_id", 11, b"\x0f\x00\x02\x08\x7f\xff\xff\xff\x00"), "huge list")
    check("a list claiming 2^31 elements in a small frame: PROTOCOL_ERROR, closed",
          b is not None and b"shorter than its contents" in b and closed, short(b))
    b, closed = exchange(call_bytes("get_timestamp", 12, b"\x00", mtype=2), "reply")
    check("a REPLY sent to the server: INVALID_MESSAGE_TYPE", b is not None and b"is not a call" in b, short(b))
    # A frame cut short and the connection left open: the slow timeout, not a hang.
    s = socket.create_connection((HOST, d.thrift))
    s.sendall(call_bytes("get_timestamp", 13)[:9])
    served(d, "a Thrift frame cut short")
    s.close()
    if Snowflake is not None:
        c, tr = client(d.thrift)
        check("after all of it, a well-behaved client is served", c.get_id("after") > 0)
        tr.close()


if __name__ == "__main__":
    def with_thrift():
        d = thrift_daemon("thrift", MAIN_ARGS)
        try:
            check("thrift listener bound (event=listen proto=thrift)", d.thrift is not None, d.log()[-400:])
            if d.thrift:
                for name, fn in (("methods (python3-thrift)", group_methods),
                                 ("many connections", group_many), ("pipelined", group_pipelined),
                                 ("abuse", group_abuse)):
                    run_group(name, fn, d)
                run_group("Snowflake IDs in the order obtained", group_snow_order, ["thrift"])
        finally:
            check("thrift daemon: SIGTERM exits 0", d.stop() == 0, d.log()[-400:])
    run_suite("thrift", after=[("the Thrift service", with_thrift)])
