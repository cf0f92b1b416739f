#!/usr/bin/env python3
"""HTTP: settings refused at start, every route with curl, keep-alive and pipelining,
conformance (Host, absolute-form, Accept, HEAD, percent-decoding), quoted
errors, /metrics.

Usage: python3 tests/serve/suite_routes.py PATH/TO/idgen  (or: ctest -R serve.routes)
"""

import ctypes  # noqa: E402  ptrace, to stop one event loop

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()


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

    # a ULID's and a UUIDv7's time is the time it was asked for (fresh ones:
    # the lists' last may be from long ago on a slow machine)
    for kind, path in (("ULID", "/ulid"), ("UUIDv7", "/uuid7")):
        before = int(time.time() * 1000)
        r, det = curl(d.http, path)
        after = int(time.time() * 1000)
        dj = idgen_decode(r.body.decode().strip()) if r is not None and r.status == 200 else None
        check("a served %s's time is when it was asked for (idgen decode: %s ms within [%d, %d])"
              % (kind, dj and dj.get("unix_ms"), before, after),
              dj is not None and (kind == "ULID" or dj.get("version") == 7)
              and before - 5 <= dj["unix_ms"] <= after + 5, det or repr(dj))

    # count errors
    for q in ("count=0", "count=-1", "count=abc", "count=", "count=%d" % (MAX_BATCH + 1),
              "count=99999999999999999999999", "count=1.5", "foo=1", "format=xml"):
        r, det = curl(d.http, "/id?" + q)
        check("GET /id?%s: 400 with a one-line text body" % q[:40],
              r is not None and r.status == 400 and one_line_error(r), det or repr(r))
    # a parameter given twice is named as such, whatever its values
    for q, key in (("agent=x&agent=y", "agent"), ("count=2&count=3", "count"),
                   ("format=json&format=text", "format")):
        r, det = curl(d.http, "/id?" + q)
        check("GET /id?%s: 400 'query parameter \"%s\" given twice'" % (q, key),
              r is not None and r.status == 400
              and r.body.strip() == ('query parameter "%s" given twice' % key).encode(),
              det or repr(r))
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
              any("layout" in "/".join(p) and isinstance(v, str) and (v == "twitter" or TWITTER_LAYOUT in v)
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
        check("/info: clock {setting fast, mode, fallbacks, recalibrations, cooldowns, cooldown_ms, tsc_hz, "
              "coarse_resolution_ns}",
              isinstance(ck, dict) and ck.get("setting") == "fast"
              and ck.get("mode") in ("fast", "precise", "calibrating", "unavailable")
              and all(isinstance(ck.get(k), int) and ck[k] >= 0
                      for k in ("fallbacks", "recalibrations", "cooldowns", "cooldown_ms", "tsc_hz"))
              and isinstance(ck.get("coarse_resolution_ns"), int)
              and 1 <= ck["coarse_resolution_ns"] <= 100000000, repr(ck))

    # the status page and its data (the page itself runs in Chromium: serve.status_page)
    for path in ("/", "/status"):
        r, det = curl(d.http, path)
        body = r.body if r else b""
        check("GET %s: 200 text/html, the status page, self-contained (CSP default-src 'none', "
              "no external URL)" % path,
              r is not None and r.status == 200 and (r.h("content-type") or "").startswith("text/html")
              and b"<title>idgen status</title>" in body and b"/status.json" in body
              and "default-src 'none'" in (r.h("content-security-policy") or "")
              and not re.search(rb"(src|href)=\"(https?:)?//", body), det or repr(r))
    r, det = curl(d.http, "/status.json", "-H", "Accept: application/json")
    st = json_body(r) if r is not None and r.status == 200 else None
    check("GET /status.json: health ok, ids by kind and agent, generator, latency buckets, layout end",
          isinstance(st, dict) and st.get("health") == {"ok": True, "reason": None}
          and isinstance(st.get("ids"), list) and all({"kind", "agent", "total"} <= set(x) for x in st["ids"])
          and {"borrowed_ms", "clock_refusals", "capacity"} <= set(st.get("generator", {}))
          and len(st.get("latency", {}).get("le_us", [])) == len(st.get("latency", {}).get("http", [None]))
          and str(st.get("layout_end", "")).startswith("2080-") and st.get("layout_days_left", 0) > 0,
          det or repr(st)[:600])
    r, det = curl(d.http, "/", "-X", "POST")
    check("POST /: 405", r is not None and r.status == 405, det or repr(r))

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


def nosniff_once(r):
    return isinstance(r, HttpResp) and [v for n, v in r.headers if n == "x-content-type-options"] == ["nosniff"]


def one_answer(port, data, head=False):
    """The first response to raw bytes on a new connection, or the exception."""
    c = Conn(port)
    try:
        c.send(data)
        return c.http(head=head)
    except Exception as e:  # noqa: BLE001
        return e
    finally:
        c.close()


def group_nosniff(d):
    """X-Content-Type-Options: nosniff on every HTTP answer, on every route and
    every kind of error, so that no browser reads an echoed text/plain error as
    HTML (GET /decode/<script>... once echoed it in a 400 without it)."""
    routes = ["/", "/status", "/status.json", "/id", "/id?count=3&format=json", "/ulid", "/uuid7",
              "/decode/1", "/info", "/health", "/metrics"]
    for path in routes:
        for method in ("GET", "HEAD"):
            r = one_answer(d.http, http_req(path, method=method), head=method == "HEAD")
            check("%s %s: %s with X-Content-Type-Options: nosniff (once)" % (
                method, path, getattr(r, "status", "?")), nosniff_once(r) and r.status == 200, repr(r))
    junk = "/decode/%3Cscript%3Ealert(1)%3C%2Fscript%3E"
    errors = [
        ("400, /decode/ of markup (echoed)", http_req(junk), 400),
        ("400, a bad query", http_req("/id?count=0"), 400),
        ("404", http_req("/nope"), 404),
        ("405", http_req("/id", method="POST"), 405),
        ("400, a GET with a body", b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab", 400),
        ("400, a bad request line", b"GET\r\n\r\n", 400),
        ("400, HTTP/1.1 without Host", b"GET /health HTTP/1.1\r\n\r\n", 400),
        ("413", b"POST /id HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n", 413),
        ("431, a head over max_request_bytes",
         b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (MAX_REQ + 100) + b"\r\n\r\n", 431),
        ("431, more than max_headers headers", http_req("/health", headers=["X-H: 1"] * 200), 431),
        ("501", b"GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        ("505", b"GET /health HTTP/2.0\r\nHost: x\r\n\r\n", 505),
    ]
    for name, data, status in errors:
        r = one_answer(d.http, data)
        check("%s: X-Content-Type-Options: nosniff (once)" % name,
              nosniff_once(r) and r.status == status, repr(r))
    # 503s: a refused request (a batch the generator cannot make within its
    # wait), and a connection past max_connections (its own canned answer).
    e = Daemon("nosniff-503", ["--threads", "1", "--max-borrow-ms", "0", "--max-wait-ms", "0",
                               "--max-batch", "100", "--max-connections", "1"],
               node_args=["--layout", "time:41@1ms,sequence:2", "--registry", "static"])
    try:
        c = Conn(e.http)
        c.send(http_req("/id?count=100"))
        r = c.http()
        check("503, a batch the generator cannot make: X-Content-Type-Options: nosniff (once)",
              nosniff_once(r) and r.status == 503, repr(r))
        r = one_answer(e.http, http_req("/health"))
        check("503, past max_connections: X-Content-Type-Options: nosniff (once)",
              nosniff_once(r) and r.status == 503, repr(r))
        c.close()
    finally:
        e.stop()


def group_max_headers(d):
    """max_headers (default 100: proxies, meshes and tracing add headers):
    exactly the limit is served, one more is a 431 naming the limit and its
    setting, and the setting moves it (it was a fixed 32: a request through
    a mesh with 33 headers was refused)."""
    r = one_answer(d.http, http_req("/health", headers=["X-H%d: v" % i for i in range(99)]))
    check("max_headers default 100: Host and 99 more headers are served (200)",
          isinstance(r, HttpResp) and r.status == 200, repr(r))
    r, closed, rest = http_then_eof(d.http, http_req("/health", headers=["X-H%d: v" % i for i in range(100)]))
    check("max_headers default 100: 101 headers are a 431 naming the limit and the setting, then closed",
          isinstance(r, HttpResp) and r.status == 431 and one_line_error(r)
          and r.body.strip() == b"more than 100 headers (max_headers)" and closed, "%r closed=%s" % (r, closed))
    served(d, "too many headers")
    e = Daemon("max-headers", ["--threads", "1", "--max-headers", "5"])
    try:
        r = one_answer(e.http, http_req("/health", headers=["A: 1", "B: 2", "C: 3", "D: 4"]))
        check("--max-headers 5: 5 headers are served", isinstance(r, HttpResp) and r.status == 200, repr(r))
        r = one_answer(e.http, http_req("/health", headers=["A: 1", "B: 2", "C: 3", "D: 4", "E: 5"]))
        check("--max-headers 5: 6 headers are a 431 naming 5",
              isinstance(r, HttpResp) and r.status == 431 and b"more than 5 headers (max_headers)" in r.body,
              repr(r))
    finally:
        e.stop()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    for bad, src in (("0", "IDGEN_MAX_HEADERS"), ("lots", "IDGEN_MAX_HEADERS")):
        p = subprocess.run([IDGEN, "serve", "--check-config"], capture_output=True, timeout=10,
                           env=dict(env, IDGEN_MAX_HEADERS=bad))
        err = p.stderr.decode().strip()
        check("IDGEN_MAX_HEADERS=%s: exit 2 naming the key, the value and the bounds" % bad,
              p.returncode == 2 and err.startswith('idgen: serve: max_headers = "%s" (from %s): ' % (bad, src))
              and "1 to 10000" in err, err)


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
            "idgen_clock_fast_cooldowns_total": "counter", "idgen_clock_borrowed_seconds": "gauge",
            "idgen_clock_max_borrow_seconds": "gauge", "idgen_healthy": "gauge", "idgen_ready": "gauge",
            "idgen_build_info": "gauge", "process_cpu_seconds_total": "counter",
            "process_resident_memory_bytes": "gauge", "process_virtual_memory_bytes": "gauge",
            "process_start_time_seconds": "gauge", "process_open_fds": "gauge", "process_max_fds": "gauge"}
    for name, typ in want.items():
        present = any(n == name or (typ == "histogram" and n.startswith(name + "_")) for n, _ in m)
        check("metrics: %s present, # TYPE %s" % (name, typ), present and types.get(name) == typ,
              "type %r present %s" % (types.get(name), present))
    for kind in ("snowflake", "ulid", "uuid7"):
        check('metrics: idgen_ids_issued_total{kind="%s",agent="-"} > 0' % kind,
              (mget(m, "idgen_ids_issued_total", kind=kind, agent="-") or 0) > 0)
    check("metrics: idgen_healthy 1 and idgen_ready 1; no idgen_lease_held without a registry's lease",
          mget(m, "idgen_healthy") == 1 and mget(m, "idgen_ready") == 1
          and not any(n == "idgen_lease_held" for n, _ in m), repr((mget(m, "idgen_healthy"), mget(m, "idgen_ready"))))
    ver = subprocess.run([IDGEN, "--version"], capture_output=True, text=True).stdout.split()[-1]
    info = [dict(ls) for n, ls in m if n == "idgen_build_info"]
    check("metrics: idgen_build_info{version,commit} 1, the version `idgen --version` says and a commit "
          "(12 or more hex digits, -dirty for a changed tree, or unknown)",
          len(info) == 1 and info[0].get("version") == ver
          and re.fullmatch(r"[0-9a-f]{12,40}(-dirty)?|unknown", info[0].get("commit", "")) is not None, repr((info, ver)))
    with open("/proc/%d/stat" % d.p.pid) as f:
        rss_now = int(f.read().rsplit(")", 1)[1].split()[21]) * os.sysconf("SC_PAGE_SIZE")
    start = mget(m, "process_start_time_seconds") or 0
    fds, maxfds = mget(m, "process_open_fds") or 0, mget(m, "process_max_fds") or 0
    check("metrics: process_* are the daemon's own: started within the test, open fds below the "
          "limit and as many as /proc lists, resident memory within 2x of /proc's, CPU seconds >= 0",
          time.time() - 600 < start <= time.time() + 1 and 0 < fds < maxfds
          and abs(fds - len(os.listdir("/proc/%d/fd" % d.p.pid))) <= 2
          and rss_now / 2 <= (mget(m, "process_resident_memory_bytes") or 0) <= rss_now * 2
          and (mget(m, "process_cpu_seconds_total") is not None and mget(m, "process_cpu_seconds_total") >= 0),
          repr([(k, mget(m, k)) for k in ("process_start_time_seconds", "process_open_fds", "process_max_fds",
                                          "process_resident_memory_bytes", "process_cpu_seconds_total")] + [rss_now]))
    check("metrics: idgen_clock_borrowed_seconds is idgen_clock_borrowed_ms / 1000; the _ms name's HELP says "
          "it is deprecated", mget(m, "idgen_clock_borrowed_seconds") == (mget(m, "idgen_clock_borrowed_ms") or 0) / 1000
          and re.search(r"^# HELP idgen_clock_borrowed_ms Deprecated: use idgen_clock_borrowed_seconds", text, re.M)
          and mget(m, "idgen_clock_max_borrow_seconds") == 1.0,
          repr((mget(m, "idgen_clock_borrowed_seconds"), mget(m, "idgen_clock_borrowed_ms"))))
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


PTRACE_SEIZE, PTRACE_INTERRUPT, PTRACE_DETACH, WALL = 0x4206, 0x4207, 17, 0x40000000


def thread_state(pid, tid):
    """A thread's state letter in /proc (R, S, t: stopped by a tracer...)."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def named_threads(pid):
    """{name: tid} of a process's threads (their /proc comm)."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                out[f.read().strip()] = int(tid)
        except OSError:
            pass
    return out


class StoppedThread:
    """One thread of another process stopped alone: PTRACE_SEIZE then
    PTRACE_INTERRUPT stop that thread and no other (SIGSTOP would stop the
    whole process), until thaw().  What a loop stuck in a system call or a
    lock looks like from outside."""

    def __init__(self, tid):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.tid = tid
        if self.libc.ptrace(PTRACE_SEIZE, tid, None, None) != 0:
            raise OSError(ctypes.get_errno(), "PTRACE_SEIZE %d: %s" % (tid, os.strerror(ctypes.get_errno())))
        st = ctypes.c_int()
        if (self.libc.ptrace(PTRACE_INTERRUPT, tid, None, None) != 0
                or self.libc.waitpid(tid, ctypes.byref(st), WALL) != tid):
            err = ctypes.get_errno()
            self.thaw()
            raise OSError(err, "PTRACE_INTERRUPT %d: %s" % (tid, os.strerror(err)))

    def thaw(self):
        if self.tid is not None:
            self.libc.ptrace(PTRACE_DETACH, self.tid, None, None)
            self.tid = None


def ask_any_loop(port, path, want, seconds):
    """New connections, each asking `path`, until an answer satisfies
    `want` (those that land on a stopped loop get none within a second and
    are kept open in the returned list); (answer or None, seconds taken,
    waiting conns)."""
    t0, waiting = time.monotonic(), []
    while time.monotonic() - t0 < seconds:
        c = Conn(port)
        c.send(http_req(path))
        try:
            r = c.http(timeout=1.0)
        except TimeoutError:
            waiting.append(c)
            continue
        except EOFError:
            r = None
        c.close()
        if r is not None and want(r):
            return r, time.monotonic() - t0, waiting
        time.sleep(0.02)
    return None, time.monotonic() - t0, waiting


STALLED_1 = re.compile(rb"stalled: event loop 1 has not turned for (\d+) ms \(stall_timeout_ms 2000\)\n")


def group_probes():
    """/health says whether the daemon is alive (every event loop turns),
    /ready whether it can issue IDs now (SERVE.md "Probes"): a liveness
    probe on /health restarts only a daemon with a stuck loop, never one
    whose clock is briefly behind.  One of two event loops is stopped from
    outside (ptrace stops that thread alone): /health, answered by the other
    loop, turns 503 naming it once stall_timeout_ms has passed, and so does
    /ready (the clients on the stopped loop wait: ready implies alive);
    idgen_healthy and idgen_ready are 0; the requests that waited on the
    stopped loop are answered once it runs again, and both probes are 200
    again."""
    d = Daemon("probes", ["--threads", "2", "--stall-timeout-ms", "2000"])
    stopped, waiting = None, []
    try:
        r, det = curl(d.http, "/health")
        check("probes: GET /health is 200 `ok` and nothing else", r and r.status == 200 and r.body == b"ok\n",
              det or repr(r))
        r, det = curl(d.http, "/ready")
        check("probes: GET /ready is 200 `ok`", r and r.status == 200 and r.body.startswith(b"ok\n"), det or repr(r))
        threads = named_threads(d.p.pid)
        check("probes: the event loops' threads are named idgen-loop-0 and idgen-loop-1 (top -H, ps -L)",
              {"idgen-loop-0", "idgen-loop-1"} <= set(threads), repr(sorted(threads)))
        if "idgen-loop-1" not in threads:
            return
        try:
            stopped = StoppedThread(threads["idgen-loop-1"])
        except OSError as e:  # a kernel or sandbox that refuses ptrace (Yama scope 3, seccomp)
            print("skip probes with a stopped loop: %s" % e)
            return
        check("probes: loop 1 is stopped (t) and loop 0 is not",
              thread_state(d.p.pid, threads["idgen-loop-1"]) == "t"
              and thread_state(d.p.pid, threads["idgen-loop-0"]) != "t")
        r, t, waiting = ask_any_loop(d.http, "/health", lambda r: STALLED_1.fullmatch(r.body) is not None, 15)
        m = STALLED_1.fullmatch(r.body) if r is not None else None
        check("probes: loop 1 stopped: /health from loop 0 is 503 `stalled: event loop 1 has not turned for N ms "
              "(stall_timeout_ms 2000)`, N >= 2000 (%.2f s after the stop; %d asks waited on loop 1)" % (t, len(waiting)),
              r is not None and r.status == 503 and m is not None and int(m.group(1)) >= 2000, r and short(r.body))
        r, _, w2 = ask_any_loop(d.http, "/ready", lambda r: True, 10)
        waiting += w2
        check("probes: loop 1 stopped: /ready from loop 0 is 503 with the same reason (its clients wait)",
              r is not None and r.status == 503 and STALLED_1.fullmatch(r.body.split(b"\n", 1)[0] + b"\n"),
              r and short(r.body))
        r, _, w3 = ask_any_loop(d.http, "/metrics", lambda r: r.status == 200, 10)
        waiting += w3
        g = {}
        if r is not None:
            for ln in r.text().splitlines():
                if ln.startswith("idgen_healthy ") or ln.startswith("idgen_ready "):
                    k, v = ln.split()
                    g[k] = float(v)
        check("probes: loop 1 stopped: idgen_healthy 0, idgen_ready 0", g == {"idgen_healthy": 0, "idgen_ready": 0},
              repr(g))
        stopped.thaw()
        answers = []
        for c in waiting:
            try:
                answers.append(c.http(timeout=5).status)
            except (TimeoutError, EOFError) as e:
                answers.append(repr(e))
        check("probes: loop 1 running again: the %d requests that waited on it are answered" % len(waiting),
              all(isinstance(a, int) for a in answers), repr(answers))
        ok = []
        for path in ("/health", "/ready"):
            r, t, w4 = ask_any_loop(d.http, path, lambda r: r.status == 200, 5)
            waiting += w4
            ok.append(r is not None and r.body.startswith(b"ok\n") and not w4)
        check("probes: loop 1 running again: /health and /ready are 200 ok", all(ok), repr(ok))
        rc = d.stop()
        check("probes: SIGTERM exits 0", rc == 0, "exit %r" % rc)
    finally:
        if stopped is not None:
            stopped.thaw()
        for c in waiting:
            c.close()
        d.kill()


if __name__ == "__main__":
    run_suite("routes",
              before=[('settings', group_settings)],
              with_daemon=[('HTTP routes (curl)', group_http_routes), ('keep-alive and pipelining', group_keepalive), ('HTTP conformance', group_http_conformance), ('quoted errors', group_quoting), ('metrics', group_metrics),
                           ('X-Content-Type-Options: nosniff on every answer', group_nosniff),
                           ('max_headers', group_max_headers)],
              after=[('probes: /health (alive) and /ready', group_probes)],
              snow_kinds=['curl', 'raw'])
