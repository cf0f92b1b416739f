#!/usr/bin/env python3
"""The idgen:// registry end to end (src/registry/registry_idgen.c;
docs/SERVE.md, "Leases for clients"): real `idgen snowflake` clients leasing
their node tuples from a real `idgen serve --leases` on a file: registry of
the test's own (tests/registry/harness.py says how the suites fit).

- two clients at once: distinct tuples, none the daemon's own, 1,000,000
  IDs without a duplicate, each client's strictly increasing; the daemon's
  registry shows them as "CLIENT_via_DAEMON";
- refusals: a daemon without --leases, and list on an idgen:// registry;
- another daemon whose registry is idgen:// (it leases, renews and marks
  through its keeper as on any network registry), and the Node.js addon's
  Snowflake (when the build made it);
- idgens:// with ?cacert= to a daemon with TLS and --auth-file: served with
  the token, refused without it (401) or without the CA (peer not
  verified), the token never shown;
- fencing: in a pool of two tuples (a 1-bit worker, in a space of its own,
  so the daemon's lease is not in it), one held by a live client, a client
  stopped (SIGSTOP) past its TTL and the quarantine loses its tuple to a
  new client; on SIGCONT it issues nothing more and exits with the lease
  error, and the two never share an ID;
- an unreachable daemon (stopped with SIGSTOP): a streaming client issues
  nothing stamped past its last renewal's TTL and exits with the lease
  error.

Usage: python3 tests/registry/suite_idgen.py PATH/TO/idgen  (or: ctest -R registry.idgen)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()

HERE = os.path.dirname(os.path.abspath(__file__))

N = 500000 // SCALE
FENCE_LAYOUT = "time:41@1ms,worker:1,sequence:12,epoch=1288834974657"
TTL_MS = 600
QUARANTINE_MS = TTL_MS + 1000  # the daemon's default: the TTL + lease_max_skew_ms


def fence_fields(i):
    """(unix_ms, worker) of an ID of FENCE_LAYOUT."""
    return ((i >> 13) + TWITTER_EPOCH, (i >> 12) & 1)


def increasing(ids):
    return all(a < b for a, b in zip(ids, ids[1:]))


def concurrent_clients(uri, names, while_held=None):
    """`idgen snowflake -n N` for each name, holding their leases at once:
    each writes into a pipe read only once every one has printed its first
    ID (a client blocks on a full pipe, so none can finish and give its tuple
    back before the others have theirs).  [(name, rc, ids, stderr)]."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    # Read through the buffer readline() filled (communicate() with a
    # time-out reads the descriptor, past it).
    errs = [open(os.path.join(TMP, n + ".err"), "wb+") for n in names]
    procs = [subprocess.Popen([IDGEN, "snowflake", "-n", str(N), "--registry", uri],
                              stdout=subprocess.PIPE, stderr=e, env=env) for e in errs]
    firsts = [p.stdout.readline() for p in procs]
    if while_held:
        while_held()  # every client holds its lease now
    out = [None] * len(procs)

    def drain(i):
        rest = procs[i].stdout.read()
        procs[i].wait(120)
        errs[i].seek(0)
        out[i] = (names[i], procs[i].returncode, [int(x) for x in (firsts[i] + rest).split()],
                  errs[i].read().decode()[:300])
        errs[i].close()

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(procs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def two_clients(d, reg, uri):
    own = first_ids(d, 1, "daemon with --leases serves its own IDs")
    listed = []
    got = concurrent_clients(uri, ["client-a", "client-b"],
                             lambda: listed.append(idgen("registry", "list", "--registry", reg)))
    tuples = []
    for name, rc, ids, msg in got:
        check("%s: exit 0 with %d IDs" % (name, N), rc == 0 and len(ids) == N,
              "rc %d, %d IDs: %s" % (rc, len(ids), msg))
        check("%s: strictly increasing" % name, increasing(ids))
        t = {twitter_fields(i)[1:3] for i in ids}
        check("%s: one tuple" % name, len(t) == 1, t)
        tuples.append(t)
    check("the two clients' tuples differ", tuples[0] != tuples[1], tuples)
    if own:
        mine = {twitter_fields(own[0])[1:3]}
        check("neither is the daemon's own tuple", mine != tuples[0] and mine != tuples[1],
              (mine, tuples))
    every = got[0][2] + got[1][2]
    check("no duplicate among %d IDs" % len(every), len(set(every)) == len(every),
          len(every) - len(set(every)))
    r = listed[0]  # (a tuple given back keeps no holder's name)
    check("while they hold, the daemon's registry names the clients as CLIENT_via_DAEMON",
          r.returncode == 0 and len(re.findall(r"_via_", r.stdout)) >= 2,
          r.stdout[-600:] + r.stderr)


def refusals(uri):
    r = idgen("registry", "list", "--registry", uri)
    check("registry list on idgen:// is refused, naming the daemon's registry",
          r.returncode != 0 and "the daemon's own registry" in r.stderr, r.stderr)
    off = Daemon("no-leases", ["--registry", WORK.registry("other"), "--node", "datacenter=3"])
    r = idgen("snowflake", "--registry", "idgen://127.0.0.1:%d" % off.port)
    check("a daemon without --leases: exit 1, the message after idgen://HOST:PORT",
          r.returncode == 1 and ("registry: idgen://127.0.0.1:%d: " % off.port) in r.stderr,
          r.stderr)
    off.stop()


def relay(d, uri):
    # The clients before it left the pool's mark up to a mark step (half
    # their TTL) ahead: a start wait that covers it.
    r = Daemon("relay", ["--registry", uri, "--max-start-wait-ms", "10000"])
    if not check("a daemon with --registry idgen:// starts", r.port is not None, r.log()[-600:]):
        return
    ids = first_ids(r, 1000, "a daemon with --registry idgen:// serves IDs")
    own = d.ids(1)
    if ids and own:
        check("its tuple is not the lending daemon's",
              twitter_fields(ids[0])[1:3] != twitter_fields(own[0])[1:3],
              (twitter_fields(ids[0]), twitter_fields(own[0])))
    check("it stops cleanly, releasing its lease", r.stop() == 0, r.log()[-600:])


ADDON = os.path.join(os.path.dirname(IDGEN), "js", "idgen.node")
INDEX_JS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "js", "index.js")
NODE_SCRIPT = """
const idgen = require(process.argv[1]);
(async () => {
  const g = new idgen.Snowflake({ registry: process.argv[2] });
  const ids = [];
  for (let i = 0; i < 1000; i++) ids.push(String(g.next()));
  console.log(ids.join("\\n"));
  await g.close();
})().catch((e) => { console.error(`${e.code}: ${e.message}`); process.exit(1); });
"""


def addon(d, uri):
    if not os.path.exists(ADDON) or shutil.which("node") is None:
        print("SKIP the Node.js addon: %s not built or node missing" % ADDON)
        return
    env = dict(os.environ, IDGEN_NODE_ADDON=ADDON)
    p = subprocess.run(["node", "-e", NODE_SCRIPT, INDEX_JS, uri], capture_output=True, text=True,
                       timeout=60, env=env)
    ids = [int(x) for x in p.stdout.split()]
    check("the Node.js addon leases through idgen://: 1000 increasing IDs",
          p.returncode == 0 and len(ids) == 1000 and increasing(ids), p.stderr[-400:])
    own = d.ids(1)
    if ids and own:
        check("the addon's tuple is not the lending daemon's",
              twitter_fields(ids[0])[1:3] != twitter_fields(own[0])[1:3])


def tls_and_token():
    cert, key = os.path.join(TMP, "cert.pem"), os.path.join(TMP, "key.pem")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                        "subjectAltName=IP:127.0.0.1"], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    if not check("openssl made a certificate for 127.0.0.1", p.returncode == 0, p.stderr[-300:]):
        return
    os.chmod(key, 0o600)
    token = "t0k3n-" + os.urandom(12).hex()
    tokens = os.path.join(TMP, "tokens")
    with open(tokens, "w") as f:
        f.write("orders %s\n" % token)
    os.chmod(tokens, 0o600)
    d = Daemon("tls", ["--leases", "--registry", WORK.registry("tls-reg"), "--auth-file", tokens,
                       "--tls-cert", cert, "--tls-key", key])
    if not check("idgen serve --leases with TLS and tokens starts", d.port is not None,
                 d.log()[-600:]):
        return
    hp = "127.0.0.1:%d" % d.port
    r = idgen("snowflake", "-n", "1000", "--registry",
              "idgens://orders:%s@%s/?cacert=%s" % (token, hp, cert))
    check("idgens:// with the CA and the token: 1000 IDs",
          r.returncode == 0 and len(r.stdout.split()) == 1000, r.stderr[-400:])
    r = idgen("snowflake", "--registry", "idgens://%s?cacert=%s" % (hp, cert))
    check("idgens:// without a token: exit 1, the daemon's refusal after idgens://HOST:PORT",
          r.returncode == 1 and ("registry: idgens://%s: " % hp) in r.stderr, r.stderr[-400:])
    r = idgen("snowflake", "--registry", "idgens://orders:%s@%s" % (token, hp))
    check("idgens:// without the CA: exit 1, the peer not verified",
          r.returncode == 1 and "cannot reach the daemon" in r.stderr, r.stderr[-400:])
    r2 = idgen("snowflake", "--registry", "idgens://orders:%s@%s/?cacert=/nonexistent" % (token, hp))
    check("no message shows the token", token not in r.stderr + r2.stderr + d.log(),
          r.stderr + r2.stderr)
    d.stop()


def fencing(uri):
    fence = in_space(uri, "fence")
    args = ["snowflake", "-n", "100000000", "--layout", FENCE_LAYOUT, "--registry", fence,
            "--lease-ttl-ms", str(TTL_MS)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    err1 = open(os.path.join(TMP, "paused.err"), "wb+")
    # Its output is a pipe this test reads: it issues only as fast as read.
    p1 = subprocess.Popen([IDGEN] + args, stdout=subprocess.PIPE, stderr=err1, env=env)
    first = []
    for _ in range(200):
        line = p1.stdout.readline()
        if not line:
            break
        first.append(int(line))
        time.sleep(0.002)
    if not check("paused client: started and issuing", len(first) == 200,
                 open(err1.name).read()[:300]):
        p1.kill()
        p1.wait()
        return
    w1 = fence_fields(first[0])[1]
    # The pool's other tuple, held by a live client that never gets read
    # (the default TTL: a busy machine must not make it lose its tuple).
    holder = subprocess.Popen([IDGEN] + args[:-2], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env)
    line = holder.stdout.readline()
    check("the second tuple is held by a live client",
          line and fence_fields(int(line))[1] != w1, line)
    p1.send_signal(signal.SIGSTOP)
    stopped_ms = int(time.time() * 1000)
    time.sleep((TTL_MS + QUARANTINE_MS + 1000) / 1000.0)
    r = idgen("snowflake", "-n", str(100000 // SCALE), "--layout", FENCE_LAYOUT, "--registry",
              fence, "--lease-ttl-ms", str(TTL_MS), timeout=120)
    ids2 = [int(x) for x in r.stdout.split()]
    check("a new client takes the stopped client's tuple",
          r.returncode == 0 and ids2 and {fence_fields(i)[1] for i in ids2} == {w1},
          "rc %d: %s" % (r.returncode, r.stderr[:300]))
    resumed_ms = int(time.time() * 1000)
    p1.send_signal(signal.SIGCONT)
    rest = p1.stdout.read()  # through the buffer readline() filled
    p1.wait(60)
    ids1 = first + [int(x) for x in rest.split()]
    err1.seek(0)
    msg = err1.read().decode()
    err1.close()
    check("the resumed client exits 1 with the lease error",
          p1.returncode == 1 and "lease is lost" in msg,
          "rc %s: %s" % (p1.returncode, msg[:400]))
    late = [i for i in ids1 if fence_fields(i)[0] >= resumed_ms]
    check("the resumed client issued nothing after SIGCONT", not late,
          "%d IDs stamped after the resume (stopped at %d, resumed at %d)"
          % (len(late), stopped_ms, resumed_ms))
    check("the resumed client's IDs strictly increase", increasing(ids1))
    check("no ID of the stopped client's is the new client's",
          not set(ids1) & set(ids2), len(set(ids1) & set(ids2)))
    check("the new client starts above everything the stopped one issued",
          ids2 and max(ids1) < min(ids2), (max(ids1), min(ids2) if ids2 else None))
    holder.kill()
    holder.wait()


def daemon_paused(d, uri):
    ttl = 900
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    err = open(os.path.join(TMP, "unreachable.err"), "wb+")
    # No borrowing: every ID is stamped with the time it was made.
    p = subprocess.Popen([IDGEN, "snowflake", "-n", "100000000", "--registry",
                          in_space(uri, "pause"), "--lease-ttl-ms", str(ttl),
                          "--max-borrow-ms", "0"], stdout=subprocess.PIPE, stderr=err, env=env)
    first = [p.stdout.readline() for _ in range(100)]
    if not check("a streaming client starts", all(first), open(err.name).read()[:300]):
        p.kill()
        p.wait()
        return
    d.p.send_signal(signal.SIGSTOP)
    stopped_ms = int(time.time() * 1000)
    time.sleep((ttl * 3 + 1000) / 1000.0)
    d.p.send_signal(signal.SIGCONT)
    rest = p.stdout.read()  # through the buffer readline() filled
    p.wait(60)
    ids = [int(x) for x in first] + [int(x) for x in rest.split()]
    err.seek(0)
    msg = err.read().decode()
    err.close()
    late = [i for i in ids if twitter_fields(i)[0] > stopped_ms + ttl]
    check("with the daemon unreachable, nothing stamped past the last renewal's TTL",
          not late, "%d IDs, the last at +%d ms" % (len(late), twitter_fields(max(ids))[0] -
                                                   stopped_ms))
    check("the client exits 1 with the lease error (lost at its TTL)",
          p.returncode == 1 and "lease" in msg, "rc %s: %s" % (p.returncode, msg[:400]))
    check("its IDs strictly increase", increasing(ids))


def main():
    reg = WORK.registry("reg")
    d = Daemon("leases", ["--leases", "--registry", reg])
    if not check("idgen serve --leases starts", d.port is not None, d.log()[-600:]):
        return
    uri = "idgen://127.0.0.1:%d" % d.port
    two_clients(d, reg, uri)
    refusals(uri)
    relay(d, uri)
    addon(d, uri)
    tls_and_token()
    fencing(uri)
    daemon_paused(d, uri)
    d.stop()


if __name__ == "__main__":
    run(main)
