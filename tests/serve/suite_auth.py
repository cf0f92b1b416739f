#!/usr/bin/env python3
"""Authentication (auth_file, SPEC §13): every route and command without a
token, with a wrong one and with the right one; redis-cli --user/--pass,
HELLO 2 AUTH and HELLO 3 AUTH (RESP3), redis-py; the token's agent in the metrics; SIGHUP reads the
file again; the refusals of a file others may read, of a malformed file,
and of Thrift beyond loopback.

Usage: python3 tests/serve/suite_auth.py PATH/TO/idgen  (or: ctest -R serve.auth)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

APP = "0123456789abcdef0123456789abcdef"
OPS = "fedcba9876543210fedcba9876543210"
WRONG = "0123456789abcdef0123456789abcdeX"


def auth_file(name, text, mode=0o600):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def serve_refusal(*args):
    """idgen serve ARGS that must not start: (exit status, stderr)."""
    p = subprocess.run([IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0"] + NODE_ARGS
                       + list(args), capture_output=True, timeout=60)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def group_refusals():
    loose = auth_file("loose", "app %s\n" % APP, 0o644)
    rc, err = serve_refusal("--auth-file", loose)
    check("a file any user may read is refused at start (exit 2), naming the fix",
          rc == 2 and "chmod o-rwx" in err and "auth_file" in err, "exit %d: %s" % (rc, err))
    rc, err = serve_refusal("--auth-file", loose, "--check-config")
    check("... and by --check-config", rc == 2 and "chmod o-rwx" in err, "exit %d: %s" % (rc, err))
    for text, what, want in (("app\n", "one word", "line 1: expected AGENT TOKEN"),
                             ("# c\n\napp short\n", "a short token", "line 3: app's token is 5 characters"),
                             ("app %s\nops %s\n" % (APP, APP), "two agents, one token", "line 2: ops has the token of app"),
                             ("app %s\napp %s\n" % (APP, OPS), "an agent twice", "line 2: agent app is named twice"),
                             ("9app %s\n" % APP, "a bad agent name", "line 1: the agent is not an agent name"),
                             ("# nothing\n", "no line", "has no AGENT TOKEN line")):
        path = auth_file("bad", text)
        rc, err = serve_refusal("--auth-file", path)
        check("a malformed file is refused (%s), naming the line, not the token" % what,
              rc == 2 and want in err and APP not in err and OPS not in err, "exit %d: %s" % (rc, err))
    good = auth_file("good", "app %s\n" % APP)
    rc, err = serve_refusal("--auth-file", good, "--thrift", "0.0.0.0:0")
    check("Thrift beyond loopback with auth is refused, naming thrift_without_auth",
          rc == 2 and "thrift_without_auth" in err, "exit %d: %s" % (rc, err))
    try:
        d = Daemon("thrift-open", ["--auth-file", good, "--thrift", "0.0.0.0:0", "--thrift-without-auth"])
        check("... and starts with thrift_without_auth = true", d.alive())
        d.stop()
    except StartError as e:
        check("... and starts with thrift_without_auth = true", False, str(e))


def http_status(port, path, token=None, scheme="Bearer"):
    args = ["-H", "Authorization: %s %s" % (scheme, token)] if token else []
    r, detail = curl(port, path, *args)
    return (r.status if r else None), r, detail


ROUTES = ["/id", "/id?count=3", "/ulid", "/uuid7", "/decode/1", "/info", "/metrics", "/", "/status.json"]


def group_http(d):
    for path in ROUTES:
        st, r, detail = http_status(d.http, path)
        check("HTTP %s without a token: 401 with WWW-Authenticate: Bearer" % path,
              st == 401 and (r.h("www-authenticate") or "").startswith("Bearer"), detail or (st, r and r.body[:100]))
        st, r, detail = http_status(d.http, path, WRONG)
        check("HTTP %s with a wrong token: 401" % path, st == 401, detail or st)
        st, r, detail = http_status(d.http, path, APP)
        check("HTTP %s with app's token: 200" % path, st == 200, detail or (st, r and r.body[:200]))
    st, r, detail = http_status(d.http, "/id", APP, scheme="bearer")
    check("HTTP: the scheme's name in any case (bearer)", st == 200, detail or st)
    st, r, detail = http_status(d.http, "/id", APP, scheme="Basic")
    check("HTTP: another scheme is no token (401)", st == 401, detail or st)
    for probe in ("/health", "/ready"):
        st, r, detail = http_status(d.http, probe)
        check("HTTP %s without a token: 200 (probes)" % probe, st == 200, detail or st)
    st, r, detail = http_status(d.http, "/id?agent=ops", APP)
    check("HTTP: agent= naming another agent than the token's: 400", st == 400, detail or st)
    st, r, detail = http_status(d.http, "/id?count=7&agent=app", APP)
    check("HTTP: agent= naming the token's agent: 200", st == 200, detail or st)
    st, r, detail = http_status(d.http, "/id?count=5", OPS)
    check("HTTP with ops's token: 200", st == 200, detail or st)
    c = Conn(d.http)  # wrong tokens on one keep-alive connection: closed after the third
    try:
        c.send(b"".join(http_req("/id", headers=["Authorization: Bearer guess%011d" % i]) for i in range(4)))
        rs = [c.http() for _ in range(3)]
        closed = c.read_to_eof(5)
        check("HTTP: 4 wrong tokens on one connection: three 401s, the third with Connection: close, then EOF",
              [x.status for x in rs] == [401] * 3 and (rs[2].h("connection") or "").lower() == "close"
              and closed and c.buf == b"", ([x.status for x in rs], short(c.buf)))
    finally:
        c.close()
    c = Conn(d.http)  # no token at all: told so each time, the connection kept
    try:
        c.send(http_req("/id") * 4 + http_req("/id", headers=["Authorization: Bearer " + APP]))
        rs = [c.http() for _ in range(5)]
        check("HTTP: 4 requests without a token on one connection: 401s, kept; then a token: 200",
              [x.status for x in rs] == [401] * 4 + [200], [x.status for x in rs])
    finally:
        c.close()


def group_resp(d):
    p = d.resp
    rc, out, err = rcli(p, "ID")
    check("redis-cli ID without a token: NOAUTH", "NOAUTH Authentication required." in out, out + err)
    rc, out, err = rcli(p, "--user", "app", "--pass", APP, "--no-auth-warning", "ID")
    check("redis-cli --user app --pass TOKEN ID: an integer", re.fullmatch(r"\(integer\) \d+\n", out), out + err)
    rc, out, err = rcli(p, "--pass", APP, "--no-auth-warning", "ID")
    check("redis-cli --pass TOKEN (AUTH TOKEN) ID: an integer", re.fullmatch(r"\(integer\) \d+\n", out), out + err)
    rc, out, err = rcli(p, "--user", "ops", "--pass", APP, "--no-auth-warning", "ID")
    check("redis-cli --user ops with app's token: WRONGPASS, then NOAUTH",
          "WRONGPASS" in out + err and "NOAUTH" in out, out + err)
    c = Conn(p)
    try:
        c.send(resp_cmd("PING") + resp_cmd("HELLO", "2") + resp_cmd("AUTH", WRONG)
               + resp_cmd("AUTH", "app", APP) + resp_cmd("ID") + resp_cmd("CLIENT", "SETNAME", "other")
               + resp_cmd("ID", "2"))
        rs = c.resp_n(7)
        check("raw RESP: PING before AUTH is -NOAUTH", isinstance(rs[0], RErr) and rs[0].startswith("NOAUTH"), rs[:1])
        check("raw RESP: HELLO 2 without AUTH is -NOAUTH", isinstance(rs[1], RErr) and rs[1].startswith("NOAUTH"), rs[1:2])
        check("raw RESP: AUTH with a wrong token is -WRONGPASS", isinstance(rs[2], RErr) and rs[2].startswith("WRONGPASS"), rs[2:3])
        check("raw RESP: AUTH app TOKEN is +OK, then ID an integer", rs[3] == "OK" and isinstance(rs[4], int), rs[3:5])
        check("raw RESP: CLIENT SETNAME after AUTH is +OK, and ID 2 answers", rs[5] == "OK" and isinstance(rs[6], list), rs[5:])
    finally:
        c.close()
    c = Conn(p)
    try:
        c.send(resp_cmd("HELLO", "2", "AUTH", "ops", OPS, "SETNAME", "x") + resp_cmd("ID"))
        rs = c.resp_n(2)
        check("raw RESP: HELLO 2 AUTH ops TOKEN SETNAME x: the map, then IDs",
              isinstance(rs[0], list) and b"idgen" in rs[0] and isinstance(rs[1], int), rs)
    finally:
        c.close()
    c = Conn(p)  # RESP3, as node-redis 5 and later open: HELLO 3 AUTH
    try:
        c.send(resp_cmd("HELLO", "3") + resp_cmd("HELLO", "3", "AUTH", "default", WRONG)
               + resp_cmd("HELLO", "3", "AUTH", "app", APP) + resp_cmd("ID") + resp_cmd("CLIENT", "GETNAME"))
        rs = c.resp_n(5)
        check("raw RESP: HELLO 3 without AUTH is -NOAUTH, with a wrong token -WRONGPASS",
              isinstance(rs[0], RErr) and rs[0].startswith("NOAUTH") and isinstance(rs[1], RErr)
              and rs[1].startswith("WRONGPASS"), rs[:2])
        check("raw RESP: HELLO 3 AUTH app TOKEN: the RESP3 map (proto 3), then IDs and RESP3 nulls",
              isinstance(rs[2], dict) and rs[2].get(b"proto") == 3 and isinstance(rs[3], int) and rs[4] is NIL,
              rs)
    finally:
        c.close()
    rc, out, err = rcli(p, "-3", "--user", "app", "--pass", APP, "--no-auth-warning", "ID")
    check("redis-cli -3 --user app --pass TOKEN: ID an integer", re.fullmatch(r"\(integer\) \d+\n", out), out + err)
    c = Conn(p)  # guesses pipelined on one connection: it ends after the third
    try:
        c.send(b"".join(resp_cmd("AUTH", "app", "guess%011d" % i) for i in range(5)) + resp_cmd("PING"))
        rs = c.resp_n(3)
        closed = c.read_to_eof(5)
        check("raw RESP: 5 wrong tokens pipelined: 3 WRONGPASS, then the connection is closed",
              all(isinstance(x, RErr) and x.startswith("WRONGPASS") for x in rs) and closed and c.buf == b"",
              (rs, short(c.buf)))
    finally:
        c.close()
    c = Conn(p)  # a token given where the agent goes is not logged
    try:
        c.send(resp_cmd("AUTH", OPS, "ops"))
        rs = c.resp_n(1)
        check("raw RESP: AUTH TOKEN AGENT (swapped) is -WRONGPASS", rs[0].startswith("WRONGPASS"), rs)
    finally:
        c.close()
    c = Conn(p)  # commands without a token are answered NOAUTH, never closed for it
    try:
        c.send(resp_cmd("PING") * 5 + resp_cmd("AUTH", APP) + resp_cmd("PING"))
        rs = c.resp_n(7)
        check("raw RESP: 5 commands without a token: 5 NOAUTH, the connection stays, AUTH then works",
              all(x.startswith("NOAUTH") for x in rs[:5]) and rs[5] == "OK" and rs[6] == "PONG", rs)
    finally:
        c.close()
    if redis is None:
        check("redis-py is installed (python3-redis)", False)
        return
    r = redis.Redis(host=HOST, port=p, username="app", password=APP)
    v = r.execute_command("ID")
    check("redis-py with username and password: ID", isinstance(v, int), repr(v))
    try:
        redis.Redis(host=HOST, port=p).execute_command("ID")
        check("redis-py without a password: refused", False)
    except redis.exceptions.RedisError as e:
        check("redis-py without a password: refused (NOAUTH)", "NOAUTH" in str(e) or "Authentication" in str(e), str(e))
    try:
        redis.Redis(host=HOST, port=p, username="app", password=WRONG).execute_command("ID")
        check("redis-py with a wrong password: refused", False)
    except redis.exceptions.RedisError as e:
        check("redis-py with a wrong password: refused", True, str(e))


def group_metrics(d):
    samples = get_metrics_with(d, APP)
    check("metrics: IDs counted under the token's agent (app: 1+3+1+1+7+1 HTTP, RESP's after)",
          (mget(samples, "idgen_ids_issued_total", kind="snowflake", agent="app") or 0) >= 13, samples and "see /metrics")
    check("metrics: ops's IDs under ops",
          (mget(samples, "idgen_ids_issued_total", kind="snowflake", agent="ops") or 0) >= 5)
    check("metrics: failures counted, HTTP (no agent named: agent -)",
          (mget(samples, "idgen_auth_failures_total", proto="http", agent="-") or 0) >= 2 * len(ROUTES))
    check("metrics: failures counted, RESP", msum(samples, "idgen_auth_failures_total", proto="resp") >= 4)
    check("metrics: RESP failures by the agent named: app (3 guesses), ops, other (not in the file)",
          (mget(samples, "idgen_auth_failures_total", proto="resp", agent="app") or 0) >= 3
          and (mget(samples, "idgen_auth_failures_total", proto="resp", agent="ops") or 0) >= 1
          and (mget(samples, "idgen_auth_failures_total", proto="resp", agent="other") or 0) >= 1,
          sorted((dict(ls).get("agent"), v) for (n, ls), v in samples.items()
                 if n == "idgen_auth_failures_total" and dict(ls).get("proto") == "resp"))
    check("metrics: no label holds a token (AUTH TOKEN AGENT, swapped, counts under other)",
          not any(OPS in str(ls) or APP in str(ls) for (n, ls) in samples), "")
    check("metrics: connections closed for wrong tokens (reason auth): the RESP and the HTTP one",
          (mget(samples, "idgen_connections_closed_total", reason="auth") or 0) >= 2,
          mget(samples, "idgen_connections_closed_total", reason="auth"))
    log = d.log()
    check("the log names failures (event=auth_failed with the peer) and never a token",
          "event=auth_failed" in log and APP not in log and OPS not in log and WRONG not in log
          and "guess" not in log)


def get_metrics_with(d, token):
    """get_metrics's samples, asked with a token."""
    c = Conn(d.http)
    try:
        c.send(http_req("/metrics", headers=["Authorization: Bearer " + token]))
        r = c.http()
    finally:
        c.close()
    samples = {}
    for ln in r.text().splitlines() if r.status == 200 else []:
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)", ln)
        if m:
            labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
            samples[(m.group(1), labels)] = float(m.group(3))
    return samples


def group_reload():
    path = auth_file("reload", "app %s\n" % APP)
    d = Daemon("reload", ["--auth-file", path, "--auth-metrics=false"])
    try:
        c = Conn(d.resp)  # first, before the log's rate limit could hide a line
        c.send(resp_cmd("AUTH", APP, "app") + resp_cmd("AUTH", "app", WRONG))
        rs = c.resp_n(2)
        c.close()
        deadline = time.monotonic() + 20
        while d.log().count("event=auth_failed") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        log = d.log()
        check("log: AUTH TOKEN AGENT (swapped): agent=unknown, the token not logged; a known agent named",
              all(x.startswith("WRONGPASS") for x in rs) and "agent=unknown reason=wrong-token" in log
              and "agent=app reason=wrong-token" in log and APP not in log and WRONG not in log,
              (rs, log[-600:]))
        st, r, detail = http_status(d.http, "/metrics")
        check("auth_metrics = false: /metrics without a token: 200", st == 200, detail or st)
        st, r, detail = http_status(d.http, "/")
        check("auth_metrics = false: the status page without a token: 200", st == 200, detail or st)
        st, r, detail = http_status(d.http, "/id")
        check("auth_metrics = false: /id still needs one (401)", st == 401, detail or st)
        c = Conn(d.resp)  # signed in before the reload: stays
        c.send(resp_cmd("AUTH", APP))
        first = c.resp_n(1)
        auth_file("reload", "app %s\nops %s\n" % (OPS + "new", OPS))
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "event=auth_reload" not in d.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        check("SIGHUP: the file is read again (event=auth_reload agents=2)", "agents=2" in d.log(), d.log()[-500:])
        st, r, detail = http_status(d.http, "/id", APP)
        check("SIGHUP: app's old token is refused now", st == 401, detail or st)
        st, r, detail = http_status(d.http, "/id", OPS + "new")
        check("SIGHUP: app's new token is taken", st == 200, detail or st)
        c.send(resp_cmd("ID"))
        check("SIGHUP: a RESP connection signed in before goes on", first == ["OK"] and isinstance(c.resp_n(1)[0], int))
        c.close()
        os.chmod(path, 0o644)
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while "action=kept" not in d.log() and time.monotonic() < deadline:
            time.sleep(0.05)
        check("SIGHUP with a file others may read: refused, the tokens kept (action=kept)",
              "action=kept" in d.log() and http_status(d.http, "/id", OPS)[0] == 200, d.log()[-500:])
    finally:
        d.stop()


def group_no_auth(d):
    rc, out, err = rcli(d.resp, "AUTH", APP)
    check("without auth_file: AUTH is an error, as in a Redis with no password",
          "without any password configured" in out, out + err)
    rc, out, err = rcli(d.resp, "ID")
    check("without auth_file: ID needs no token", re.fullmatch(r"\(integer\) \d+\n", out), out + err)


def group_main():
    path = auth_file("tokens", "# the daemon's clients\napp %s\n\n  ops\t%s  \n" % (APP, OPS))
    d = Daemon("auth", ["--auth-file", path])
    try:
        for name, fn in (("HTTP", group_http), ("RESP", group_resp), ("metrics", group_metrics)):
            run_group(name, fn, d)
    finally:
        rc = d.stop()
        check("the daemon with auth_file: SIGTERM exits 0", rc == 0, "exit %r" % rc)


if __name__ == "__main__":
    run_suite("auth",
              before=[("refused at start", group_refusals)],
              with_daemon=[("without auth_file", group_no_auth)],
              after=[("with auth_file", group_main), ("SIGHUP and auth_metrics", group_reload)])
