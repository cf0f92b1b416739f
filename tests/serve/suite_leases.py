#!/usr/bin/env python3
"""serve.leases: the lease service, `idgen serve --leases` (docs/SERVE.md,
"Leases for clients: `--leases` and `idgen://`"), driven with curl and raw
sockets against real daemons on file: registries of the suite's own, each
registry read back with `idgen registry list --json`.

Groups: the routes (acquire, renew, mark, release, as the registry shows
them); bodies the daemon refuses, each with its status and the member
named, while another connection keeps getting IDs; pipelining (replies in
order behind a parked lease request); limits (429); a mark too far ahead
and a client clock too far off; expiry and quarantine (a 600 ms TTL), on
file: and on a throwaway etcd (tests/etcd_server.sh, through
tests/components.py), whose leases the daemon must renew meanwhile; an
exhausted pool (503 pool_full with Retry-After); a daemon without
--leases (404) and --leases with the static registry (refused at start);
auth_file (401); CORS; and a restart (kill -9) whose clients go on by
adoption (idgen_registry_adopt): until the backends take grants over, that
last check reports XFAIL with the library's message rather than passing.
"""

import json
import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (IDGEN, TMP, WORK, Conn, Daemon, check, curl, json_body,  # noqa: E402
                     parse_http, run_suite, short)

SECRET = "00112233445566778899aabbccddeeff"
OTHER_SECRET = "ffeeddccbbaa99887766554433221100"
TWITTER = "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657"
# A worker field of one bit: two tuples for each datacenter.
SMALL = "time:41@1ms,datacenter:5,worker:1,sequence:16,epoch=1288834974657"


def lease_daemon(name, reg, extra=(), layout="twitter", node="datacenter=1"):
    return Daemon(name, ["--leases"] + list(extra),
                  node_args=["--layout", layout, "--registry", WORK.registry(reg), "--node", node])


def post(d, path, body, *args):
    """POST path with a JSON body (a dict, or bytes as given) by curl:
    (status, the JSON answer or None, the response)."""
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    r, detail = curl(d.http, path, "-X", "POST", "-H", "Content-Type: application/json",
                     "--data-binary", data, *args)
    if r is None:
        return 0, None, detail
    return r.status, json_body(r), r


def acquire(d, holder, secret=SECRET, node="datacenter=2", layout="twitter", **more):
    body = {"layout": layout, "node": node, "holder": holder, "secret": secret}
    body.update(more)
    return post(d, "/lease", body)


def identity(lease, holder, secret=SECRET, layout="twitter"):
    return {"space": lease["space"], "layout": layout, "field": lease["field"],
            "node": lease["node"], "generation": lease["generation"], "holder": holder,
            "secret": secret}


def registry_rows(reg):
    """The tuples of file: registry `reg` (or of the registry URI `reg`)
    ({node: row}), by `registry list --json`."""
    uri = reg if ":" in reg else WORK.registry(reg)
    p = subprocess.run([IDGEN, "registry", "list", "--registry", uri, "--json"],
                       capture_output=True, timeout=30)
    rows = {}
    for line in p.stdout.decode().splitlines():
        o = json.loads(line)
        if "node" in o:
            rows[o["node"]] = o
    return rows


def poll(fn, seconds=10.0):
    """fn() until it is true or `seconds` pass: its last value."""
    deadline = time.monotonic() + seconds
    v = fn()
    while not v and time.monotonic() < deadline:
        time.sleep(0.05)
        v = fn()
    return v


def ids_ok(d):
    st, body = d.get("/id")
    return st == 200 and body.strip().isdigit()


# ---------------------------------------------------------------- groups


def group_routes(d):
    st1, a, r1 = acquire(d, "laptop:1:ab")
    st2, b, r2 = acquire(d, "laptop:2:cd", OTHER_SECRET)
    check("POST /lease: 200 with the lease", st1 == 200 and a and a.get("generation", 0) >= 1, r1)
    check("a second client's lease: another tuple", st2 == 200 and b and b["node"] != a["node"]
          and b["key"] != a["key"], (a, b))
    if not (a and b):
        return
    check("the lease names its layout (canonical), field, TTL and quarantine",
          a["layout"] == TWITTER and a["field"] == "worker" and a["ttl_ms"] == 10000
          and a["quarantine_ms"] == 11000 and a["mark_step_ms"] == 5000, a)
    check("clock_ms: the daemon's wall clock", abs(a["clock_ms"] - time.time() * 1000) < 60000, a)
    rows = registry_rows("routes")
    row = rows.get(a["node"], {})
    check("registry list: the tuple held, as CLIENT_via_DAEMON",
          row.get("state") == "held" and row.get("holder", "").startswith("laptop:1:ab_via_")
          and row.get("holder") == a["holder"], row)
    st, o, r = post(d, "/lease/renew", identity(a, "laptop:1:ab"))
    check("renew: 200 with ttl_ms, expires_in_ms, mark_ms",
          st == 200 and o and o["ttl_ms"] == 10000 and o["expires_in_ms"] == 10000
          and "mark_ms" in o, r)
    # (A little ahead only: file: raises the pool-wide mark with it, above
    # which every tuple new to the pool starts.)
    # (The tuple may start ahead of the clock, above the pool's mark: the
    # daemon grants at once and the client waits; so above its mark too.)
    mark = max(int(time.time() * 1000), a["mark_ms"]) + 400
    body = identity(a, "laptop:1:ab")
    body["mark_ms"] = mark
    st, o, r = post(d, "/lease/mark", body)
    check("mark: 200, recorded", st == 200 and o == {"mark_ms": mark}, r)
    row = registry_rows("routes").get(a["node"], {})
    check("registry list: the mark recorded", row.get("mark_ms") == mark, row)
    st, o, r = post(d, "/lease/renew", identity(a, "laptop:1:ab", OTHER_SECRET))
    check("renew with a wrong secret: 409 lease", st == 409 and o and o["error"] == "lease", r)
    st, o, r = post(d, "/lease/renew", identity(a, "laptop:9:zz"))
    check("renew by another holder: 409 lease", st == 409 and o and o["error"] == "lease", r)
    body = identity(a, "laptop:1:ab")
    body["generation"] += 7
    st, o, r = post(d, "/lease/renew", body)
    check("renew of an unknown grant: 409 lease", st == 409 and o and o["error"] == "lease", r)
    st, o, r = post(d, "/lease/release", identity(a, "laptop:1:ab"))
    check("release: 200 {}", st == 200 and o == {}, r)
    row = registry_rows("routes").get(a["node"], {})
    check("registry list: the tuple free at once", row.get("state") == "free", row)
    st, o, r = post(d, "/lease/renew", identity(a, "laptop:1:ab"))
    check("renew after the release: 409 lease", st == 409 and o and o["error"] == "lease", r)
    st, o, r = post(d, "/lease/release", identity(b, "laptop:2:cd", OTHER_SECRET))
    check("the second client's release: 200", st == 200, r)
    st, c, r = acquire(d, "laptop:3:ef", space="billing")
    check("a lease in another ID space (the registry opened for it)",
          st == 200 and c["space"] == "billing", r)
    if st == 200:
        p = subprocess.run([IDGEN, "registry", "list", "--registry", WORK.registry("routes"),
                            "--space", "billing", "--json"], capture_output=True, timeout=30)
        rows = [json.loads(x) for x in p.stdout.decode().splitlines()]
        check("registry list --space billing: the tuple held there",
              any(o.get("node") == c["node"] and o.get("space") == "billing"
                  and o.get("state") == "held" for o in rows), rows)
        st, o, r = post(d, "/lease/release", identity(c, "laptop:3:ef"))
        check("its release: 200", st == 200, r)
    st, body = d.get("/info")
    info = json.loads(body) if st == 200 else {}
    lz = info.get("leases") or {}
    check("/info: leases live 0, acquisitions 3, renewals 1, marks 1, releases 3",
          lz.get("live") == 0 and lz.get("acquisitions") == 3 and lz.get("renewals") == 1
          and lz.get("marks") == 1 and lz.get("releases") == 3 and lz.get("refusals", 0) >= 3, lz)
    st, body = d.get("/metrics")
    check("/metrics: idgen_client_leases{state=...}",
          'idgen_client_leases{state="live"} 0' in body
          and 'idgen_client_lease_operations_total{op="acquire"} 3' in body, body[-800:])
    log = d.log()
    check("log: event=client_lease action=acquire and release with the holder, never the secret",
          "event=client_lease action=acquire holder=laptop:1:ab" in log
          and "action=release holder=laptop:2:cd" in log and SECRET not in log
          and OTHER_SECRET not in log, log[-1500:])


def raw(d, data, timeout=5):
    """One raw request on a new connection: (the response or the error,
    whether the daemon closed after it)."""
    c = Conn(d.http)
    try:
        c.send(data)
        try:
            r = c.http(timeout=timeout)
        except Exception as e:  # noqa: BLE001
            r = e
        return r, c.read_to_eof(2)
    finally:
        c.close()


def post_bytes(body, extra_headers=b"", length=True):
    head = b"POST /lease HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_headers
    if length:
        head += b"Content-Length: %d\r\n" % len(body)
    return head + b"\r\n" + body


def group_bad_bodies(d):
    good = {"layout": "twitter", "node": "datacenter=2", "holder": "h:1:x", "secret": SECRET}
    cases = [
        ("not JSON", b"{layout", 400, "not JSON"),
        ("an array", b"[1,2]", 400, "must be a JSON object"),
        ("an unknown member", json.dumps(dict(good, colour="red")).encode(), 400,
         'unknown member \\"colour\\"'),
        ("a wrong type", json.dumps(dict(good, ttl_ms="10")).encode(), 400,
         'member \\"ttl_ms\\" must be a whole number'),
        ("an overlong holder", json.dumps(dict(good, holder="h" * 57)).encode(), 400,
         'member \\"holder\\" is too long'),
        ("a bad layout", json.dumps(dict(good, layout="time:99")).encode(), 400,
         'member \\"layout\\"'),
        ("a bad node", json.dumps(dict(good, node="rack=1")).encode(), 400, 'member \\"node\\"'),
        ("the leased field in node", json.dumps(dict(good, node="datacenter=2,worker=1")).encode(),
         400, "leave it out of node"),
        ("a bad secret", json.dumps(dict(good, secret="xyz")).encode(), 400,
         'member \\"secret\\" must be 32 hex digits'),
        ("a TTL too short", json.dumps(dict(good, ttl_ms=100)).encode(), 400,
         "lease TTL 100 ms is not from 300 to 3600000"),
        ("a bad space", json.dumps(dict(good, space="Billing")).encode(), 400, 'member \\"space\\"'),
        ("a missing member", json.dumps({"layout": "twitter"}).encode(), 400,
         'member \\"holder\\" is missing'),
    ]
    for name, body, status, words in cases:
        r, closed = raw(d, post_bytes(body))
        ok = not isinstance(r, Exception) and r.status == status and words.encode() in r.body
        check("%s: %d invalid naming it" % (name, status), ok and b'"error":"invalid"' in r.body,
              r if isinstance(r, Exception) else short(r.body))
        check("%s: the connection stays open" % name, not closed)
        check("%s: another connection still gets IDs" % name, ids_ok(d))
    big = b"{" + b" " * 5000 + b"}"
    r, closed = raw(d, post_bytes(big))
    check("a 5002-byte body: 413, closed", not isinstance(r, Exception) and r.status == 413
          and closed, r)
    r, closed = raw(d, post_bytes(json.dumps(good).encode(), length=False))
    check("no Content-Length: 411, closed", not isinstance(r, Exception) and r.status == 411
          and b"Content-Length" in r.body and closed, r)
    r, closed = raw(d, post_bytes(b"5\r\n{}   \r\n0\r\n\r\n", b"Transfer-Encoding: chunked\r\n",
                                  length=False))
    check("a chunked body: 411, closed", not isinstance(r, Exception) and r.status == 411
          and closed, r)
    r, closed = raw(d, b"GET /lease HTTP/1.1\r\nHost: x\r\n\r\n")
    check("GET /lease: 405, Allow: POST, OPTIONS", not isinstance(r, Exception)
          and r.status == 405 and r.h("allow") == "POST, OPTIONS", r)
    check("after all that, IDs from /id", ids_ok(d))


def group_pipelining(d):
    """A body that comes in pieces, and requests pipelined behind a lease
    request: answered in order."""
    body = json.dumps({"layout": "twitter", "node": "datacenter=3", "holder": "pipe:1:a",
                       "secret": SECRET}).encode()
    req = post_bytes(body)
    c = Conn(d.http)
    try:
        c.send(req[:-5])
        time.sleep(0.2)  # (the daemon must wait for the rest, with no line feed to come)
        c.send(req[-5:] + req + b"GET /id HTTP/1.1\r\nHost: x\r\n\r\n")
        r1, r2, r3 = c.http(), c.http(), c.http()
        a, b = json_body(r1), json_body(r2)
        check("a body sent in two pieces, then a second POST and a GET pipelined: three "
              "answers in order", r1.status == 200 and r2.status == 200 and r3.status == 200
              and a and b and a["node"] != b["node"] and r3.body.strip().isdigit(),
              (r1, r2, r3))
        for lz in (a, b):
            if lz and r1.status == 200 and r2.status == 200:
                post(d, "/lease/release", identity(lz, "pipe:1:a"))
    finally:
        c.close()
    c = Conn(d.http)
    c.send(req)  # closed before the answer: the daemon drops it
    c.close()
    time.sleep(0.3)
    check("a connection closed while its lease request waits: the daemon goes on", ids_ok(d))


def group_mark_and_clock(d):
    st, a, r = acquire(d, "m:1:a", node="datacenter=4")
    if st != 200:
        check("acquire for the mark checks", False, r)
        return
    body = identity(a, "m:1:a")
    body["mark_ms"] = int(time.time() * 1000) + 86400000 + 2 * 10000 + 60000
    st, o, r = post(d, "/lease/mark", body)
    check("a mark more than a day and two TTLs ahead: 400 naming mark_ms",
          st == 400 and o and "mark_ms" in o["message"], r)
    body["mark_ms"] = int(time.time() * 1000) + 100
    st, o, r = post(d, "/lease/release", body)
    check("release with a final mark: 200", st == 200, r)
    st, o, r = acquire(d, "m:2:a", node="datacenter=4", clock_ms=int(time.time() * 1000) - 5000)
    check("a client clock 5 s off (lease_max_skew_ms 1000): 503 clock",
          st == 503 and o and o["error"] == "clock", r)


def group_loop_free():
    """The service thread waits for no client: an acquisition of a tuple
    whose start is ahead of the clock (the pool's mark, raised by a mark
    900 ms ahead) is granted at once with that mark, which the client waits
    out itself (registry_idgen.c, browser.mjs); with one event loop, IDs
    keep coming meanwhile."""
    import threading
    d = lease_daemon("busy", "busy", ["--threads", "1"])
    try:
        st, a, r = acquire(d, "b:1:a")
        body = identity(a, "b:1:a") if st == 200 else {}
        ahead = int(time.time() * 1000) + 900
        body["mark_ms"] = ahead  # (file: raises the pool's mark too)
        st, o, r = post(d, "/lease/mark", body)
        check("a mark 900 ms ahead", st == 200, r)
        out = {}

        def slow():
            t = time.monotonic()
            out["st"], out["lease"], _ = acquire(d, "b:2:a", node="datacenter=3")
            out["s"] = time.monotonic() - t
        th = threading.Thread(target=slow)
        th.start()
        check_ids = None
        while th.is_alive():
            check_ids = ids_ok(d)
            time.sleep(0.02)
        th.join()
        lease = out.get("lease") or {}
        check("an acquisition whose tuple starts 900 ms ahead: 200 at once (under 0.4 s), its "
              "mark_ms at or above the pool's mark", out.get("st") == 200 and out.get("s", 9) < 0.4
              and lease.get("mark_ms", 0) >= ahead, out)
        check("meanwhile the one event loop answers /id", ids_ok(d) and check_ids is not False)
    finally:
        d.stop()


def group_limits():
    d = lease_daemon("limits", "limits", ["--lease-max-per-client", "2"])
    try:
        got = [acquire(d, "lim:%d:a" % i)[0] for i in range(3)]
        st, o, r = acquire(d, "lim:9:a")
        check("lease_max_per_client 2: the third lease and after are 429 limit",
              got[:2] == [200, 200] and got[2] == 429 and st == 429 and o["error"] == "limit"
              and "lease_max_per_client" in o["message"], (got, r))
    finally:
        d.stop()


def group_expiry():
    d = lease_daemon("expiry", "expiry", ["--lease-quarantine-ms", "1500"])
    try:
        st, a, r = acquire(d, "exp:1:a", ttl_ms=600)
        check("a lease with ttl_ms 600", st == 200 and a["ttl_ms"] == 600
              and a["quarantine_ms"] == 1500, r)
        if st != 200:
            return
        t0 = time.monotonic()
        time.sleep(0.9)
        st, o, r = post(d, "/lease/renew", identity(a, "exp:1:a"))
        check("renew after the TTL: 409 lease", st == 409 and o["error"] == "lease", r)
        held = registry_rows("expiry").get(a["node"], {}).get("state")
        check("the tuple is still held during the quarantine",
              held == "held" and time.monotonic() - t0 < 0.6 + 1.5, held)
        freed = poll(lambda: registry_rows("expiry").get(a["node"], {}).get("state") == "free")
        check("then freed once the quarantine is over", freed and time.monotonic() - t0 >= 1.5,
              registry_rows("expiry").get(a["node"]))
        check("log: action=expire, renew_refused, then action=release",
              "action=expire holder=exp:1:a" in d.log()
              and "action=renew_refused holder=exp:1:a" in d.log()
              and "reason=quarantine_over" in d.log(), d.log()[-800:])
    finally:
        d.stop()


def group_etcd():
    """On a registry whose leases expire (etcd): a client that stops
    renewing keeps its tuple held through the quarantine, the daemon
    renewing it there every TTL/3, past the registry's own TTL; then it is
    released."""
    import components
    try:
        e = components.Etcd(WORK.join("etcd"))
    except Exception as ex:  # noqa: BLE001
        check("etcd starts (tests/etcd_server.sh)", False, str(ex))
        return
    d = None
    try:
        d = Daemon("etcd", ["--leases", "--lease-quarantine-ms", "3000"],
                   node_args=["--layout", "twitter", "--registry", e.uri, "--node",
                              "datacenter=1"])
        st, a, r = acquire(d, "e:1:a", ttl_ms=600)
        check("etcd: a lease with ttl_ms 600", st == 200, r)
        if st != 200:
            return
        t0 = time.monotonic()
        time.sleep(2.0)
        st, o, r = post(d, "/lease/renew", identity(a, "e:1:a"))
        check("etcd: renew after the TTL: 409 lease", st == 409, r)
        row = registry_rows(e.uri).get(a["node"], {})
        check("etcd: 2 s on (past the registry's own 600 ms TTL), the tuple still held",
              row.get("state") == "held" and time.monotonic() - t0 < 3.0, row)
        freed = poll(lambda: registry_rows(e.uri).get(a["node"], {}).get("state") != "held")
        check("etcd: released once the quarantine is over", freed and
              time.monotonic() - t0 >= 3.0, registry_rows(e.uri).get(a["node"]))
        # A registry that cannot tell a live holder from a stopped one:
        # another identity of a live client's grant is not taken over from
        # this daemon, which holds it (the review's finding, 2026-12-02).
        st, v, r = acquire(d, "victim:1:aa", node="datacenter=6")
        body = dict(identity(v, "victim:1:aa", OTHER_SECRET), field="datacenter") if v else {}
        st2, o, r2 = post(d, "/lease/renew", body)
        check("etcd: a live client's grant by another field and secret: 409 lease", st == 200
              and st2 == 409 and o and o["error"] == "lease", (r, r2))
        st, o, r = post(d, "/lease/renew", identity(v, "victim:1:aa")) if v else (0, None, None)
        check("etcd: and the client renews as before", st == 200, r)
    finally:
        if d:
            d.stop()
        e.stop()


def group_pool_full():
    # The daemon holds datacenter=1,worker=0 of SMALL: one tuple of that
    # datacenter is left.
    d = lease_daemon("pool", "pool", layout=SMALL)
    try:
        st, a, r = acquire(d, "p:1:a", layout=SMALL, node="datacenter=1")
        check("the last tuple of the pool: 200", st == 200 and a["node"] ==
              "datacenter=1,worker=1", r)
        st, o, r = acquire(d, "p:2:a", layout=SMALL, node="datacenter=1")
        check("no tuple left: 503 pool_full with Retry-After",
              st == 503 and o and o["error"] == "pool_full" and r.h("retry-after")
              and int(r.h("retry-after")) >= 1, r)
    finally:
        d.stop()


def group_off_and_static():
    d = Daemon("off", [], node_args=["--layout", "twitter", "--registry", WORK.registry("off"),
                                     "--node", "datacenter=1"])
    try:
        st, o, r = acquire(d, "o:1:a")
        check("without --leases: 404 off", st == 404 and o and o["error"] == "off", r)
    finally:
        d.stop()
    p = subprocess.run([IDGEN, "serve", "--leases", "--registry", "static", "--node",
                        "datacenter=1,worker=1", "--http", "127.0.0.1:0", "--resp", "off"],
                       capture_output=True, timeout=30)
    err = p.stderr.decode()
    check("--leases with the static registry: refused at start, saying why",
          p.returncode == 2 and "static registry keeps no leases" in err, (p.returncode, err))
    p = subprocess.run([IDGEN, "serve", "--registry", WORK.registry("cors"), "--node",
                        "datacenter=1", "--lease-cors-origins", "https://a.example,ftp://x",
                        "--check-config"], capture_output=True, timeout=30)
    err = p.stderr.decode()
    check("lease_cors_origins with an origin that is not http[s]://host[:port]: refused, naming it",
          p.returncode == 2 and 'bad origin "ftp://x"' in err, (p.returncode, err))


def group_auth_and_cors():
    tokens = os.path.join(TMP, "tokens")
    token = "t0ken-" + "a" * 30
    with open(tokens, "w") as f:
        f.write("app %s\n" % token)
    os.chmod(tokens, 0o600)
    d = lease_daemon("auth", "auth", ["--auth-file", tokens, "--lease-max-per-agent", "1",
                                      "--lease-cors-origins",
                                      "https://app.example,http://localhost:3000"])
    try:
        st, o, r = acquire(d, "a:1:a")
        check("with auth_file, no token: 401 auth", st == 401 and o and o["error"] == "auth"
              and r.h("www-authenticate"), r)
        body = json.dumps({"layout": "twitter", "node": "datacenter=2", "holder": "a:1:a",
                           "secret": SECRET})
        st, o, r = post(d, "/lease", body, "-H", "Authorization: Bearer " + token, "-H",
                        "Origin: https://app.example")
        check("with the token: 200, and Access-Control-Allow-Origin for a listed origin",
              st == 200 and r.h("access-control-allow-origin") == "https://app.example", r)
        st, o, r = post(d, "/lease", body, "-H", "Authorization: Bearer " + token, "-H",
                        "Origin: https://evil.example")
        check("another origin: no Access-Control-Allow-Origin",
              r.h("access-control-allow-origin") is None, r)
        check("lease_max_per_agent 1: the agent's second lease is 429 limit",
              st == 429 and o and o["error"] == "limit" and "lease_max_per_agent" in o["message"],
              r)
        r, detail = curl(d.http, "/lease/renew", "-X", "OPTIONS", "-H",
                         "Origin: http://localhost:3000", "-H",
                         "Access-Control-Request-Method: POST")
        check("a preflight (no token): 204 with the allowed methods and headers",
              r is not None and r.status == 204
              and r.h("access-control-allow-origin") == "http://localhost:3000"
              and r.h("access-control-allow-methods") == "POST"
              and "Authorization" in (r.h("access-control-allow-headers") or "")
              and r.h("access-control-max-age"), r or detail)
    finally:
        d.stop()


def group_restart():
    """kill -9, a new daemon on the same registry: the client's renewal
    takes its grant over (idgen_registry_adopt)."""
    d = lease_daemon("restart1", "restart")
    st, a, r = acquire(d, "r:1:a")
    check("a lease before the restart", st == 200, r)
    d.kill()
    if st != 200:
        return
    d2 = lease_daemon("restart2", "restart", node="datacenter=5")
    try:
        st, o, r = post(d2, "/lease/renew", identity(a, "r:1:a"))
        if st == 409 and o and "cannot take over another process's lease" in o.get("message", ""):
            print("XFAIL  renew after a restart takes the grant over: the file: backend has no "
                  "adoption yet (%s)" % o["message"], flush=True)
        else:
            check("renew after a restart: 200, the grant taken over", st == 200 and o
                  and o["ttl_ms"] > 0, r)
            row = registry_rows("restart").get(a["node"], {})
            check("registry list: held by the new daemon, at the same generation",
                  row.get("state") == "held" and row.get("generation") == str(a["generation"])
                  and row.get("holder", "").startswith("r:1:a_via_"), row)
            st, o, r = post(d2, "/lease/renew", identity(a, "r:1:a", OTHER_SECRET))
            check("after the adoption, another secret: 409 lease", st == 409, r)
            check("log: action=adopt", "action=adopt holder=r:1:a" in d2.log(), d2.log()[-600:])
        body = identity(a, "r:1:a")
        body["generation"] += 1
        st, o, r = post(d2, "/lease/renew", body)
        check("after a restart, a grant the registry does not show: 409 lease",
              st == 409 and o and o["error"] == "lease", r)
    finally:
        d2.stop()


def group_hostile(d):
    """What a review with legal settings found (2026-12-02): another client's
    grant, named in another layout's words or by another field, is not taken
    over from this daemon (it holds the tuple: a 409, the holder's lease
    untouched); a holder may not carry the service's "_via_"; a mark further
    ahead than the lease's borrow, the skew and two TTLs is refused (one
    client cannot push a file: pool's mark a day ahead)."""
    st, a, r = acquire(d, "victim:1:aa", node="datacenter=6", start_borrow_ms=1000)
    if not check("a victim's lease", st == 200, r):
        return
    alias = "time:41@1ms,dc:5,worker:5,sequence:12,epoch=1288834974657"
    for what, body in (
            ("another layout's words", dict(identity(a, "victim:1:aa", OTHER_SECRET), layout=alias,
                                            node=a["node"].replace("datacenter", "dc"))),
            ("another field", dict(identity(a, "victim:1:aa", OTHER_SECRET), field="datacenter"))):
        st, o, r = post(d, "/lease/renew", body)
        check("renew of its grant in %s, with another secret: 409 lease" % what,
              st == 409 and o and o["error"] == "lease", r)
        st, o, r = post(d, "/lease/release", body)
        check("release of it so: 409 lease", st == 409 and o and o["error"] == "lease", r)
    st, o, r = post(d, "/lease/renew", identity(a, "victim:1:aa"))
    check("the victim renews as before", st == 200, r)
    row = registry_rows("routes").get(a["node"], {})
    check("and holds its tuple", row.get("state") == "held" and
          row.get("holder", "").startswith("victim:1:aa_via_"), row)
    st, o, r = acquire(d, "x_via_y:1:aa", node="datacenter=7")
    check("a holder with _via_ in it: 400 naming it", st == 400 and o and "_via_" in o["message"],
          r)
    body = identity(a, "victim:1:aa")
    body["mark_ms"] = int(time.time() * 1000) + 86400000
    st, o, r = post(d, "/lease/mark", body)
    check("a mark a day ahead, beyond the lease's borrow (1 s), skew and two TTLs: 400",
          st == 400 and o and o["error"] == "invalid" and "borrow" in o["message"], r)
    post(d, "/lease/release", identity(a, "victim:1:aa"))


def group_main():
    d = lease_daemon("routes", "routes")
    try:
        for name, fn in (("routes", group_routes), ("bad bodies", group_bad_bodies),
                         ("pipelining", group_pipelining),
                         ("mark and clock", group_mark_and_clock), ("hostile", group_hostile)):
            print("# " + name, flush=True)
            fn(d)
        check("the daemon still runs", d.alive(), d.log()[-800:])
    finally:
        rc = d.stop()
        check("SIGTERM exits 0", rc == 0, "exit %r" % rc)


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    run_suite("leases",
              after=[("the routes", group_main), ("one loop, a slow registry call", group_loop_free),
                     ("limits", group_limits),
                     ("expiry and quarantine", group_expiry),
                     ("expiry on etcd", group_etcd), ("an exhausted pool", group_pool_full),
                     ("off, and static", group_off_and_static),
                     ("auth_file and CORS", group_auth_and_cors), ("restart", group_restart)])
