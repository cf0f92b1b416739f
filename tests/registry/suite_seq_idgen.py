#!/usr/bin/env python3
"""Sequence records through idgen:// (src/registry/registry_idgen.c's
seq_load, seq_store and seq_keys; the daemon's POST /lease/seq/load, /store
and /keys in src/server/serve_leases.c; docs/SERVE.md, "Leases for
clients").  Starts a real `idgen serve --leases` on a file: registry of the
test's own, and another with --auth-file, then:

- runs the registry contract's sequence tests (tests/test_registry_contract.c
  idgen 'test_seq_*': load missing, store(0) creates, a second store(0) and
  a stale version refused as `again`, versions grow, a text with line feeds
  round-trips, 4 threads x 500 compare-and-set increments make exactly
  2000, the keys listed in order) through idgen://;
- runs tests/test_seq_idgen.c (keys over several pages, a malformed key and
  an oversized text refused with the daemon's message, the token required,
  a static registry refused);
- end to end (when the build has tests/seq_worker.c, the sequences' helper):
  4 processes x 100,000 numbers of one sequence through idgen://
  (idgen_seq_open on an idgen:// registry): no duplicate, and the record's
  accounting exact (`seq_worker check`);
- the raw routes: the answers' JSON, 400 `invalid` naming the member, 409
  `again`, 401 without the token, a body over the route's limit refused.

Usage: python3 tests/registry/suite_seq_idgen.py PATH/TO/idgen PATH/TO/test_seq_idgen \
           PATH/TO/test_registry_contract
"""

import struct

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()

TEST = os.path.abspath(ARGS[0]) if ARGS else None
CONTRACT = os.path.abspath(ARGS[1]) if len(ARGS) > 1 else None


def post(port, path, body, token=None, raw=None):
    """(status, answer as JSON or None, raw text)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    data = raw if raw is not None else json.dumps(body).encode()
    c.request("POST", path, body=data, headers=h)
    r = c.getresponse()
    text = r.read().decode("utf-8", "replace")
    c.close()
    try:
        return r.status, json.loads(text), text
    except ValueError:
        return r.status, None, text


def raw_routes(port):
    sp = "raw-%d" % os.getpid()
    s, j, t = post(port, "/lease/seq/load", {"space": sp, "key": "orders"})
    check("load of a counter without a record: 200, text null, version 0",
          s == 200 and j == {"text": None, "version": 0}, (s, t))
    rec = "idgen-seq v1\nnext=1\n"
    s, j, t = post(port, "/lease/seq/store", {"space": sp, "key": "orders", "text": rec,
                                               "version": 0})
    check("store at version 0 creates: ok true and a version", s == 200 and j.get("ok") is True
          and j.get("version", 0) > 0, (s, t))
    stored = j.get("version") if j else None
    s, j, t = post(port, "/lease/seq/store", {"space": sp, "key": "orders", "text": rec,
                                               "version": 0})
    check("store at version 0 again: 409 again", s == 409 and j and j.get("error") == "again",
          (s, t))
    s, j, t = post(port, "/lease/seq/load", {"space": sp, "key": "orders"})
    check("load gives the text back, line feeds and all, at the version the store said",
          s == 200 and j and j["text"] == rec and j["version"] == stored, (s, t, stored))
    s, j, t = post(port, "/lease/seq/keys", {"space": sp})
    check("keys: SPACE KEY lines, more false", s == 200 and j == {"keys": sp + " orders\n",
                                                                  "more": False}, (s, t))
    s, j, t = post(port, "/lease/seq/keys", {"every": 1})
    check("keys of every space: this space's among them", s == 200 and j
          and (sp + " orders\n") in j.get("keys", ""), (s, t[-300:]))
    s, j, t = post(port, "/lease/seq/keys", {"every": 1, "space": sp})
    check("every beside a space: 400 invalid", s == 400, (s, t))
    for body, member in (({"space": sp, "key": "Bad"}, "key"),
                         ({"space": sp, "key": "a" * 65}, "key"),
                         ({"space": sp, "key": "a@"}, "key"),
                         ({"space": "Nope", "key": "a"}, "space"),
                         ({"space": sp}, "key"),
                         ({"space": sp, "key": "a", "holder": "x"}, "holder")):
        s, j, t = post(port, "/lease/seq/load", body)
        check("load %s: 400 invalid naming \"%s\"" % (json.dumps(body)[:60], member),
              s == 400 and j and j.get("error") == "invalid" and member in j.get("message", ""),
              (s, t))
    s, j, t = post(port, "/lease/seq/store", {"space": sp, "key": "big", "text": "x" * 32769,
                                               "version": 0})
    check("a text over 32768 bytes: 400 invalid naming \"text\"",
          s == 400 and j and "text" in j.get("message", ""), (s, t))
    s, j, t = post(port, "/lease/seq/store", {"space": sp, "key": "big", "text": "x",
                                               "version": -1})
    check("a negative version: 400 invalid", s == 400, (s, t))
    s, j, t = post(port, "/lease/seq/load", None, raw=b"{" + b" " * 5000 + b"}")
    check("a load body over 4096 bytes: 413", s == 413, (s, t))


def auth_routes(port, token):
    s, j, t = post(port, "/lease/seq/load", {"key": "orders"})
    check("with --auth-file, no token: 401", s == 401, (s, t))
    s, j, t = post(port, "/lease/seq/keys", {}, token="wrong-token-0123456789")
    check("a wrong token: 401", s == 401, (s, t))
    s, j, t = post(port, "/lease/seq/load", {"key": "orders"}, token=token)
    check("with the token: 200", s == 200, (s, t))


def end_to_end(port):
    worker = os.path.join(os.path.dirname(TEST), "seq_worker") if TEST else ""
    if not os.path.exists(worker):
        print("end to end: skipped (no seq_worker in this build)")
        return
    uri = "idgen://127.0.0.1:%d?space=e2e" % port
    outs = [os.path.join(TMP, "e2e.%d" % i) for i in range(4)]
    n = 100000 // SCALE
    procs = [subprocess.Popen([worker, "take", uri, "orders", str(n), o], stderr=subprocess.PIPE)
             for o in outs]
    errs = [p.communicate(timeout=240)[1].decode()[-400:] for p in procs]
    check("4 processes x %d numbers of one sequence through idgen://" % n,
          all(p.returncode == 0 for p in procs), errs)
    every = []
    for o in outs:
        with open(o, "rb") as f:
            b = f.read()
        every += struct.unpack("%dQ" % (len(b) // 8), b)
    check("%d numbers, no duplicate" % len(every),
          len(every) == 4 * n and len(set(every)) == len(every), len(every) - len(set(every)))
    r = subprocess.run([worker, "check", uri, "orders"] + outs, capture_output=True, text=True,
                       timeout=120)
    check("the record through idgen://: no duplicate, claimed = issued + given + lost",
          r.returncode == 0, (r.stdout + r.stderr)[-600:])
    print(r.stdout.strip())


def body():
    d = Daemon("seq", ["--leases", "--registry", WORK.registry("seq-reg")])
    if not check("idgen serve --leases starts", d.port is not None, d.log()[-600:]):
        return
    token = "t0k3n-" + os.urandom(12).hex()
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("orders %s\n" % token)
    os.chmod(tokens, 0o600)
    a = Daemon("seq-auth", ["--leases", "--registry", WORK.registry("seq-auth-reg"),
                            "--auth-file", tokens])
    if not check("idgen serve --leases --auth-file starts", a.port is not None, a.log()[-600:]):
        return
    s, j, t = post(d.port, "/lease/seq/load", {"key": "probe"})
    if s == 400 and j and "keeps no sequences" in j.get("message", ""):
        print("skipped: this build's file: registry keeps no sequences yet (%s)" % j["message"])
        sys.exit(77)
    raw_routes(d.port)
    auth_routes(a.port, token)
    env = dict(os.environ)
    env["IDGEN_TEST_SEQ_URI"] = "idgen://127.0.0.1:%d" % d.port
    env["IDGEN_TEST_SEQ_AUTH_URI"] = "idgen://orders:%s@127.0.0.1:%d" % (token, a.port)
    env["IDGEN_TEST_SEQ_NOAUTH_URI"] = "idgen://127.0.0.1:%d" % a.port
    if CONTRACT:
        env["IDGEN_TEST_IDGEN_URI"] = env["IDGEN_TEST_SEQ_URI"]
        p = subprocess.run([CONTRACT, "idgen", "test_seq_*"], env=env, capture_output=True,
                           text=True, timeout=240)
        out = p.stdout + p.stderr
        check("the registry contract's sequence tests pass through idgen://",
              p.returncode == 0 and "[  PASSED  ] 3 test(s)" in out, out[-3000:])
        print(out[-1500:])
    if TEST:
        p = subprocess.run([TEST], env=env, capture_output=True, text=True, timeout=240)
        check("test_seq_idgen passes against the daemons", p.returncode == 0,
              (p.stdout + p.stderr)[-3000:])
        print(p.stdout[-1500:])
    end_to_end(d.port)
    check("no daemon log shows the token", token not in d.log() + a.log())
    check("the daemons stop cleanly", d.stop() == 0 and a.stop() == 0, d.log()[-400:])


run(body)
