#!/usr/bin/env python3
"""RESP: every command with redis-cli, the exact bytes on a raw socket, and the
python3-redis client.

Usage: python3 tests/serve/suite_resp.py PATH/TO/idgen  (or: ctest -R serve.resp)
"""

import urllib.parse

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()


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
    check("redis-cli INFO: the layout spec percent-encoded (no ',' or '=' for clients to split)",
          urllib.parse.unquote(info.get("layout_spec", "")) == TWITTER_LAYOUT
          and "," not in info.get("layout_spec", ",") and "=" not in info["layout_spec"],
          repr(info.get("layout_spec")))
    rc, out, err = rcli(p, "--raw", "INFO", "clients")
    heads = re.findall(r"^# (\w+)", out, re.M)
    check("redis-cli INFO clients: that section only, connected_clients", heads == ["Clients"]
          and re.search(r"^connected_clients:\d+\r?$", out, re.M) is not None, repr(out))
    rc, out, err = rcli(p, "--raw", "INFO", "server", "STATS")
    heads = re.findall(r"^# (\w+)", out, re.M)
    check("redis-cli INFO server STATS: those two sections", heads == ["Server", "Stats"], repr(heads))
    rc, out, err = rcli(p, "INFO", "nosuch")
    check("redis-cli INFO nosuch: empty, as Redis 7", rc == 0 and out.strip() in ("", '""'), repr(out))
    c = Conn(p)
    try:
        c.send(resp_cmd("INFO", "nosuch"))
        got = c.resp()
    finally:
        c.close()
    check("raw RESP INFO nosuch: an empty bulk string", got == b"", repr(got))
    if redis is not None:
        r = redis.Redis(host=HOST, port=p)
        try:
            i = r.info()
            check("redis-py info(): parses; the layout spec, clients and IDs counted",
                  urllib.parse.unquote(i.get("layout_spec", "")) == TWITTER_LAYOUT
                  and isinstance(i.get("connected_clients"), int)
                  and isinstance(i.get("ids_issued_snowflake"), int), repr(i)[:400])
            check("redis-py info('clients') and info('nosuch')",
                  set(r.info("clients")) == {"connected_clients", "maxclients"} and r.info("nosuch") == {},
                  repr(r.info("clients")))
        except Exception as e:  # noqa: BLE001
            check("redis-py info(): parses", False, repr(e))
        finally:
            r.close()
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
    # Redis's rule for names, so that client libraries' handshakes work; a name
    # that is not an agent name counts under agent="other".
    o0 = mget(m1, "idgen_ids_issued_total", kind="snowflake", agent="other") or 0
    rc, out, err = rcli(p, stdin="CLIENT SETNAME my_app:1\nCLIENT GETNAME\nID 2\n"
                              "HELLO 2 SETNAME app.v2\nCLIENT GETNAME\n")
    check("redis-cli CLIENT SETNAME my_app:1 and HELLO 2 SETNAME app.v2 (not agent names): OK, "
          "GETNAME gives them back, ID 2 answered",
          rc == 0 and out.startswith('OK\n"my_app:1"\n1) (integer) ') and out.endswith('"app.v2"\n'),
          "exit %d out %r err %r" % (rc, out, err))
    m2, _ = get_metrics(d)
    o1 = mget(m2, "idgen_ids_issued_total", kind="snowflake", agent="other")
    check('metrics: the 2 IDs issued to CLIENT SETNAME my_app:1 counted under agent="other"',
          o1 is not None and o1 - o0 == 2, "%r (before %r)" % (o1, o0))
    one(["CLIENT", "SETNAME", "a b"], r"\(error\) ERR Client names cannot contain spaces.+\n",
        "CLIENT SETNAME 'a b': Redis's -ERR")
    one(["CLIENT", "SETNAME", "x" * 65], r"\(error\) ERR Client names of more than 64 .+\n",
        "CLIENT SETNAME of 65 characters: an -ERR naming the limit")
    one(["HELLO", "2", "SETNAME", "a\tb"], r"\(error\) ERR Client names cannot contain spaces.+\n",
        "HELLO 2 SETNAME with a tab: Redis's -ERR")
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
    rc, out, err = rcli(p, "-3", "HELLO", "3")
    check("redis-cli -3 HELLO 3: a map with proto 3", rc == 0 and re.search(r'"proto" => \(integer\) 3', out)
          is not None, repr(out))
    one(["HELLO", "4"], r"\(error\) NOPROTO.*\n", "HELLO 4: -NOPROTO")
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
    # IDSTR: the same IDs as bulk strings (exact in clients that read
    # integers as doubles); the integer form of ID is unchanged beside it
    c = Conn(d.resp)
    c.send(b"IDSTR\r\n" + resp_cmd("idstr", "3") + b"ID\r\nIDSTR 1 2\r\nIDSTR 0\r\n")
    try:
        rs = c.resp_n(5)
    except Exception as e:  # noqa: BLE001
        rs = [e]
    c.close()
    ok = len(rs) == 5
    dec = lambda x: isinstance(x, bytes) and re.fullmatch(rb"[1-9][0-9]*", x) is not None  # noqa: E731
    check("RESP IDSTR: a bulk string of decimal digits", ok and dec(rs[0]), repr(rs[:1]))
    check("RESP idstr 3: an array of 3 bulk strings", ok and isinstance(rs[1], list) and len(rs[1]) == 3
          and all(dec(x) for x in rs[1]), repr(rs[1:2]))
    check("RESP ID after IDSTR: still an integer", ok and type(rs[2]) is int, repr(rs[2:3]))
    check("RESP IDSTR 1 2: wrong arity, named idstr",
          ok and rs[3] == "ERR wrong number of arguments for 'idstr' command", repr(rs[3:4]))
    check("RESP IDSTR 0: an -ERR naming max_batch", ok and isinstance(rs[4], RErr) and "max_batch" in rs[4],
          repr(rs[4:5]))
    if ok and dec(rs[0]) and isinstance(rs[1], list) and all(dec(x) for x in rs[1]) and type(rs[2]) is int:
        add_snow("raw RESP IDSTR", [int(rs[0])] + [int(x) for x in rs[1]] + [rs[2]])
    # HELLO 3: RESP3, whose only differences in idgen's replies are HELLO's
    # map and nulls; HELLO 4: NOPROTO, connection stays
    rs = resp_exchange(d.resp, b"HELLO 3\r\nCLIENT GETNAME\r\nID\r\nCONFIG GET save\r\nHELLO 2\r\n"
                       b"CLIENT GETNAME\r\nHELLO 4\r\nPING\r\n", 8)
    check("RESP HELLO 3: a map with proto 3 and server idgen",
          isinstance(rs[0], dict) and rs[0].get(b"proto") == 3 and rs[0].get(b"server") == b"idgen",
          repr(rs[0])[:300])
    check("... then RESP3: a null is `_`, ID an integer, CONFIG GET a map",
          rs[1] is NIL and type(rs[2]) is int and rs[3] == {b"save": b""}, repr(rs[1:4]))
    check("... HELLO 2 goes back: a flat array with proto 2, a null is $-1",
          isinstance(rs[4], list) and rs[4][rs[4].index(b"proto") + 1] == 2 and rs[5] is NIL,
          repr(rs[4:6])[:300])
    check("RESP HELLO 4: -NOPROTO, and the connection goes on",
          isinstance(rs[6], RErr) and rs[6].startswith("NOPROTO") and rs[7] == "PONG", repr(rs[6:8]))
    # MULTI / EXEC / DISCARD / WATCH, as Redis answers them
    tx = [("EXEC",), ("DISCARD",), ("WATCH", "k"), ("MULTI",), ("ID",), ("ID", "2"), ("MULTI",),
          ("WATCH", "k"), ("PING",), ("EXEC",), ("PING", "after"),
          ("MULTI",), ("ID",), ("ECHO", "a", "b"), ("EXEC",),
          ("MULTI",), ("ID",), ("DISCARD",), ("EXEC",), ("MULTI",), ("EXEC",),
          ("MULTI",), ("NOSUCH",), ("PING",), ("EXEC",), ("WATCH",), ("EXEC", "x")]
    rs = resp_exchange(d.resp, b"".join(resp_cmd(*x) for x in tx), len(tx))
    check("RESP EXEC, DISCARD without MULTI: -ERR; WATCH: +OK (no keys to watch)",
          rs[0] == "ERR EXEC without MULTI" and rs[1] == "ERR DISCARD without MULTI" and rs[2] == "OK", rs[:3])
    check("RESP MULTI: +OK, commands +QUEUED, MULTI and WATCH inside are -ERR (the transaction goes on)",
          rs[3] == "OK" and rs[4] == rs[5] == rs[8] == "QUEUED"
          and rs[6] == "ERR MULTI calls can not be nested" and rs[7] == "ERR WATCH inside MULTI is not allowed",
          rs[3:9])
    ex = rs[9]
    check("RESP EXEC: an array of the queued commands' replies, in order; then the next command",
          isinstance(ex, list) and len(ex) == 3 and type(ex[0]) is int and isinstance(ex[1], list)
          and len(ex[1]) == 2 and ex[2] == "PONG" and rs[10] == b"after", rs[9:11])
    if isinstance(ex, list) and len(ex) == 3 and isinstance(ex[1], list):
        check("RESP EXEC: its IDs strictly increasing", increasing([ex[0]] + ex[1]))
        add_snow("raw RESP EXEC", [ex[0]] + ex[1])
    check("RESP a command refused when queued (wrong arity) spoils the transaction: -EXECABORT",
          rs[11] == "OK" and rs[12] == "QUEUED" and isinstance(rs[13], RErr)
          and rs[14].startswith("EXECABORT"), rs[11:15])
    check("RESP DISCARD: +OK, the queue dropped (EXEC after it: -ERR); MULTI EXEC: an empty array",
          rs[15] == "OK" and rs[16] == "QUEUED" and rs[17] == "OK" and rs[18] == "ERR EXEC without MULTI"
          and rs[19] == "OK" and rs[20] == [], rs[15:21])
    check("RESP a refused command spoils the transaction even when valid ones follow: -EXECABORT",
          rs[21] == "OK" and isinstance(rs[22], RErr) and rs[23] == "QUEUED"
          and isinstance(rs[24], RErr) and rs[24].startswith("EXECABORT"), rs[21:25])
    check("RESP WATCH without a key, EXEC with an argument: wrong number of arguments",
          all(isinstance(x, RErr) and "wrong number of arguments" in x for x in rs[25:27]), rs[25:])
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

    def transactions(r):
        # redis-py's default pipeline is a transaction: MULTI ... EXEC
        pipe = r.pipeline()
        for _ in range(300):
            pipe.execute_command("ID")
        pipe.execute_command("ID", 3)
        pipe.execute_command("IDSTR")
        pipe.execute_command("ULID")
        pipe.execute_command("PING")
        res = pipe.execute()
        ids = res[:300] if isinstance(res, list) else []
        check("python redis: pipeline() (MULTI/EXEC) of 304 commands: their replies, in order",
              isinstance(res, list) and len(res) == 304 and all(type(x) is int for x in ids)
              and isinstance(res[300], list) and len(res[300]) == 3 and res[301].isdigit()
              and ULID_RE.fullmatch(res[302].decode()) is not None and res[303] is True, short(res[298:]))
        if len(ids) == 300 and isinstance(res[300], list):
            seq = ids + res[300] + [int(res[301])]
            check("python redis: a transaction's IDs strictly increasing", increasing(seq))
            add_snow("python transaction", seq)
        pipe = r.pipeline()
        pipe.execute_command("ID")
        pipe.execute_command("NOSUCH", "x")
        try:
            pipe.execute()
            check("python redis: a transaction with an unknown command raises (EXECABORT)", False)
        except redis.ResponseError as e:
            check("python redis: a transaction with an unknown command raises (EXECABORT)",
                  "NOSUCH" in str(e) or "EXECABORT" in str(e), str(e))
        check("python redis: the connection serves after an aborted transaction",
              type(r.execute_command("ID")) is int)

    step("ping/echo/ID", basics)
    step("transactions", transactions)
    step("ULID/UUID7", others)
    step("pipelines of 500 ULID/UUID7", small_pipelines)
    step("pipeline of 10000 ID", pipeline)
    served(d, "python pipelines")


def group_top_bit():
    """IDs past 2^63 (a layout whose top field is a node field set to 1): RESP2
    sends them as bulk strings (a RESP integer is signed 64-bit), RESP3 as
    big numbers; IDSTR as bulk strings in both."""
    d = Daemon("top-bit", ["--max-batch", "100"], node_args=[
        "--layout", "worker:1,time:41@1ms,sequence:22", "--registry", "static", "--node", "worker=1"])
    rs = resp_exchange(d.resp, resp_cmd("ID") + resp_cmd("ID", "2") + resp_cmd("HELLO", "3") + resp_cmd("ID")
                       + resp_cmd("ID", "2") + resp_cmd("IDSTR"), 6)
    d.stop()
    big = [rs[0]] + (rs[1] if isinstance(rs[1], list) else [None])
    check("RESP2: an ID past 2^63 is a bulk string of its digits (ID, ID 2)",
          all(isinstance(x, bytes) and x.isdigit() and int(x) >= 1 << 63 for x in big), repr(rs[:2]))
    after = [rs[3]] + (rs[4] if isinstance(rs[4], list) else [None])
    check("RESP3 (after HELLO 3): a big number `(` (ID, ID 2); IDSTR still a bulk string",
          isinstance(rs[2], dict) and all(isinstance(x, BigNum) and x >= 1 << 63 for x in after)
          and isinstance(rs[5], bytes) and int(rs[5]) >= 1 << 63, repr(rs[3:]))
    if all(isinstance(x, bytes) and x.isdigit() for x in big) and all(isinstance(x, int) for x in after):
        seq = [int(x) for x in big] + [int(x) for x in after]
        check("... exact and increasing across both", increasing(seq) and seq[0] < 1 << 64, short(seq))


if __name__ == "__main__":
    run_suite("resp",
              before=[],
              with_daemon=[('RESP commands (redis-cli)', group_resp_cli), ('RESP exact bytes', group_resp_raw), ('python3-redis', group_python)],
              after=[('IDs past 2^63', group_top_bit)],
              snow_kinds=['redis-cli', 'raw', 'python'])
