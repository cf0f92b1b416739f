#!/usr/bin/env python3
"""Sequences in the daemon: GET /seq/NAME with real curl, RESP SEQ NAME [N]
with real redis-cli (and redis-benchmark), business numbers (seq_format),
bad names and counts refused with a message, the cap on open sequences
(seq_max_open), 0 duplicates across 4 concurrent clients, the per-sequence
metrics, /health and /info lines, auth_file on the new route and command,
the config file's repeatable seq_format / seq_strict keys, and the numbers
in hand given back at shutdown (the next taker continues right after).

Each daemon uses a file: registry of its own (sequences need a registry).

Usage: python3 tests/serve/suite_seq.py PATH/TO/idgen  (or: ctest -R serve.seq)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

TOKEN = "0123456789abcdef0123456789abcdef"


def registry(name):
    path = os.path.join(TMP, "reg-" + name)
    os.makedirs(path, exist_ok=True)
    return "file:" + path


def seq_daemon(name, extra=(), reg=None):
    reg = reg or registry(name)
    return Daemon(name, ["--max-batch", str(MAX_BATCH)] + list(extra),
                  node_args=["--layout", "twitter", "--registry", reg, "--node", "datacenter=1"]), reg


def nums_of(body):
    return [int(x) for x in body.decode().split()]


def group_config():
    """The config file's keys: seq_format and seq_strict repeat; a bad
    template or name is refused naming the key."""
    good = os.path.join(TMP, "seq-good.conf")
    with open(good, "w") as f:
        f.write("seq_format = invoices=INV-{date:%Y}-{seq:06}\n"
                "seq_format = orders=ORD-{seq:08}\n"
                "seq_strict = invoices\nseq_strict = ledger\nseq_min_step = 10\n")
    p = subprocess.run([IDGEN, "serve", "--config", good, "--check-config", "--registry", "static",
                        "--node", "datacenter=1,worker=1"], capture_output=True, timeout=60)
    out = p.stdout.decode()
    check("config: seq_format and seq_strict repeat (--check-config lists each)",
          p.returncode == 0 and out.count("seq_format = ") == 2 and out.count("seq_strict = ") == 2,
          "exit %d: %s %s" % (p.returncode, out[-600:], p.stderr.decode()[-300:]))
    for text, want in (("seq_format = invoices\n", "NAME=TEMPLATE"),
                       ("seq_format = invoices=INV-no-field\n", "seq_format"),
                       ("seq_strict = Bad\n", "seq_strict"),
                       ("seq_format = a=X{seq:04}\nseq_format = a=Y{seq:04}\n", "named twice"),
                       ("seq_prefetch = 1\n", "seq_prefetch"),
                       ("seq_max_open = -1\n", "seq_max_open")):
        bad = os.path.join(TMP, "seq-bad.conf")
        with open(bad, "w") as f:
            f.write(text)
        p = subprocess.run([IDGEN, "serve", "--config", bad, "--check-config", "--registry", "static",
                            "--node", "datacenter=1,worker=1"], capture_output=True, timeout=60)
        err = p.stderr.decode()
        check("config: %r refused naming %s" % (text.strip(), want), p.returncode == 2 and want in err,
              "exit %d: %s" % (p.returncode, err[-300:]))


def group_routes():
    d, reg = seq_daemon("routes", ["--seq-format", "invoices=INV-{date:%Y}-{seq:06}"])
    r, det = curl(d.http, "/seq/orders?count=5")
    first = nums_of(r.body) if r and r.status == 200 else []
    check("curl GET /seq/orders?count=5: 5 increasing numbers, a line each",
          len(first) == 5 and increasing(first) and first[0] >= 1, det or (r and r.body[:200]))
    r, det = curl(d.http, "/seq/orders?count=3&format=json")
    j = json.loads(r.body) if r and r.status == 200 else {}
    check("GET /seq/orders?format=json: {sequence, numbers}, after the first",
          j.get("sequence") == "orders" and len(j.get("numbers", [])) == 3
          and first and j["numbers"][0] > first[-1] and increasing(j["numbers"]), det or j)
    r, det = curl(d.http, "/seq/orders", "-H", "Accept: application/json")
    check("Accept: application/json: JSON too",
          r is not None and r.status == 200 and r.h("content-type") == "application/json", det or r)
    rc, out, err = rcli(d.resp, "SEQ", "orders", "100")
    got = [int(x.split(") (integer) ")[-1]) for x in out.splitlines() if "(integer)" in x]
    check("redis-cli SEQ orders 100: an array of 100 increasing integers after the HTTP ones",
          rc == 0 and len(got) == 100 and increasing(got) and got[0] > j.get("numbers", [0])[-1],
          out[:200] + err)
    rc, out, err = rcli(d.resp, "SEQ", "orders")
    check("redis-cli SEQ orders: one integer", rc == 0 and out.startswith("(integer) "), out + err)
    year = time.strftime("%Y", time.gmtime())
    r, det = curl(d.http, "/seq/invoices?count=2")
    lines = r.body.decode().split() if r and r.status == 200 else []
    check("GET /seq/invoices (seq_format): business numbers INV-YYYY-NNNNNN",
          len(lines) == 2 and all(re.fullmatch(r"INV-(%s-)?\d{6}" % year, x) for x in lines), det or lines)
    r, det = curl(d.http, "/seq/invoices?format=json")
    j = json.loads(r.body) if r and r.status == 200 else {}
    check("GET /seq/invoices?format=json: numbers and texts",
          len(j.get("numbers", [])) == 1 and len(j.get("texts", [])) == 1
          and j["texts"][0].startswith("INV-"), det or j)
    rs = resp_exchange(d.resp, resp_cmd("SEQ", "invoices", "2"), 1)
    check("RESP SEQ invoices 2: bulk strings", isinstance(rs[0], list) and len(rs[0]) == 2
          and all(isinstance(x, bytes) and x.startswith(b"INV-") for x in rs[0]), repr(rs)[:200])
    # Refusals.
    for path, want in (("/seq/Bad", "Bad"), ("/seq/9x", "9x"), ("/seq/" + "a" * 70, "is not"),
                       ("/seq/a%2Fb", "is not")):
        r, det = curl(d.http, path)
        check("GET %s: 400 naming the name" % path[:20],
              r is not None and r.status == 400 and want in r.body.decode(), det or (r and r.body[:200]))
    r, det = curl(d.http, "/seq/orders", "-I")
    check("HEAD /seq/orders: 405 (it would drop numbers), Allow: GET",
          r is not None and r.status == 405 and r.h("allow") == "GET", det or r)
    r, det = curl(d.http, "/seq/orders", "-X", "POST")
    check("POST /seq/orders: 405", r is not None and r.status == 405, det or r)
    r, det = curl(d.http, "/seq/orders?count=%d" % (MAX_BATCH + 1))
    check("count over max_batch: 400 naming it",
          r is not None and r.status == 400 and "max_batch" in r.body.decode(), det or r)
    rc, out, err = rcli(d.resp, "SEQ", "Bad")
    check("SEQ Bad: -ERR naming the name", "ERR" in out and "Bad" in out, out + err)
    rc, out, err = rcli(d.resp, "SEQ", "orders", "0")
    check("SEQ orders 0: -ERR out of range", "ERR" in out and "max_batch" in out, out + err)
    rc, out, err = rcli(d.resp, "SEQ")
    check("SEQ without a name: -ERR wrong number of arguments", "wrong number" in out, out + err)
    # Concurrency: 4 clients, HTTP and RESP, no number twice.
    seen, lock, errs = [], threading.Lock(), []

    def client(k):
        try:
            for i in range(50):
                if k % 2:
                    c = Conn(d.http)
                    c.send(http_req("/seq/shared?count=20"))
                    r = c.http()
                    c.close()
                    got = nums_of(r.body) if r.status == 200 else []
                else:
                    rs = resp_exchange(d.resp, resp_cmd("SEQ", "shared", "20"), 1)
                    got = [int(x) for x in rs[0]] if isinstance(rs[0], list) else []
                if len(got) != 20 or not increasing(got):
                    errs.append((k, i, got[:3]))
                with lock:
                    seen.extend(got)
        except Exception as e:  # noqa: BLE001
            errs.append(repr(e))
    ts = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    check("4 concurrent clients (HTTP and RESP), 4000 numbers: 0 duplicates",
          not errs and len(seen) == 4000 and len(set(seen)) == 4000,
          "errors %s; %d numbers, %d distinct" % (errs[:3], len(seen), len(set(seen))))
    if shutil.which("redis-benchmark"):
        p = subprocess.run(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-n", "20000", "-c", "4",
                            "-q", "SEQ", "bench", "1"], capture_output=True, timeout=120)
        check("redis-benchmark -n 20000 SEQ bench 1: runs", p.returncode == 0
              and b"requests per second" in p.stdout, p.stdout[-200:] + p.stderr[-200:])
    # Metrics, /health, /info.
    samples, text = get_metrics(d)
    check("metrics: idgen_seq_requests_total per sequence",
          (mget(samples, "idgen_seq_requests_total", seq="orders", key="orders") or 0) >= 4, text[-400:])
    for fam in ("idgen_seq_claims_total", "idgen_seq_claim_seconds_max", "idgen_seq_numbers_issued_total",
                "idgen_seq_numbers_given_back_total", "idgen_seq_in_hand",
                "idgen_seq_in_hand_lasts_seconds", "idgen_seq_failing", "idgen_seq_numbers_lost"):
        check("metrics: %s{seq=\"shared\"}" % fam,
              any(n == fam and ("seq", "shared") in ls for (n, ls) in samples), fam)
    check("metrics: 4000 numbers issued for shared",
          msum(samples, "idgen_seq_numbers_issued_total", seq="shared") >= 4000,
          msum(samples, "idgen_seq_numbers_issued_total", seq="shared"))
    check("metrics: shared's claims counted, claimed >= issued, a step, no failures",
          msum(samples, "idgen_seq_claims_total", seq="shared") >= 1
          and msum(samples, "idgen_seq_numbers_claimed_total", seq="shared")
          >= msum(samples, "idgen_seq_numbers_issued_total", seq="shared")
          and msum(samples, "idgen_seq_step", seq="shared") >= 1
          and msum(samples, "idgen_seq_claim_failures_total", seq="shared") == 0
          and msum(samples, "idgen_seq_failing", seq="shared") == 0,
          sorted((k[0], v) for k, v in samples.items() if ("seq", "shared") in k[1]))
    r, det = curl(d.http, "/health")
    check("/health: a line per sequence, claims ok and how long the numbers in hand last",
          r is not None and r.status == 200 and "seq orders" in r.body.decode()
          and "claims=ok" in r.body.decode() and "lasts_ms=" in r.body.decode(), det or r.body)
    r, det = curl(d.http, "/info")
    info = json.loads(r.body) if r and r.status == 200 else {}
    names = sorted(x.get("name") for x in info.get("sequences", []))
    check("/info: sequences", {"orders", "invoices", "shared"} <= set(names), names)
    # Shutdown gives back the numbers in hand: the next taker continues.
    rc, out, err = rcli(d.resp, "SEQ", "orders")
    last = int(out.split()[-1]) if rc == 0 and out.startswith("(integer)") else -1
    rc = d.stop()
    check("SIGTERM exits 0, logging each sequence closed",
          rc == 0 and "event=seq_closed seq=orders" in d.log(), d.log()[-500:])
    p = subprocess.run([IDGEN, "seq", "orders", "--registry", reg], capture_output=True, timeout=60)
    nxt = int(p.stdout) if p.returncode == 0 and p.stdout.strip().isdigit() else None
    check("after the stop, idgen seq orders continues right after the daemon's last number",
          nxt == last + 1, "daemon's last %d, next %r (%s)" % (last, nxt, p.stderr.decode()))


def group_cap():
    d, _ = seq_daemon("cap", ["--seq-max-open", "2"])
    codes = []
    for name in ("one", "two", "three"):
        r, det = curl(d.http, "/seq/" + name)
        codes.append((r.status, r.body.decode()) if r else (None, det))
    check("seq_max_open = 2: a third sequence is refused (429) naming the limit",
          codes[0][0] == 200 and codes[1][0] == 200 and codes[2][0] == 429 and "seq_max_open" in codes[2][1],
          codes)
    r, det = curl(d.http, "/seq/one")
    check("... the open ones still serve", r is not None and r.status == 200, det)
    rc, out, err = rcli(d.resp, "SEQ", "four")
    check("... RESP too: -ERR naming the limit", "seq_max_open" in out, out + err)
    d.stop()


def group_auth():
    path = os.path.join(TMP, "seq-auth")
    with open(path, "w") as f:
        f.write("app %s\n" % TOKEN)
    os.chmod(path, 0o600)
    d, _ = seq_daemon("auth", ["--auth-file", path])
    r, det = curl(d.http, "/seq/orders")
    check("auth_file: GET /seq/orders without a token: 401", r is not None and r.status == 401, det or r)
    r, det = curl(d.http, "/seq/orders", "-H", "Authorization: Bearer " + TOKEN)
    check("auth_file: with the token: 200", r is not None and r.status == 200, det or r)
    rc, out, err = rcli(d.resp, "SEQ", "orders")
    check("auth_file: SEQ before AUTH: NOAUTH", "NOAUTH" in out, out + err)
    rc, out, err = rcli(d.resp, "--user", "app", "--pass", TOKEN, "SEQ", "orders")
    check("auth_file: SEQ after AUTH: a number", "(integer)" in out, out + err)
    d.stop()


def group_static():
    d = Daemon("static", ["--max-batch", str(MAX_BATCH)])
    r, det = curl(d.http, "/seq/orders")
    check("registry static: GET /seq/orders is refused with a message (not a crash)",
          r is not None and r.status in (400, 503) and len(r.body) > 10, det or r)
    check("... the daemon serves on", served_once(d)[0], "")
    d.stop()


if __name__ == "__main__":
    run_suite("seq",
              before=[("config keys", group_config)],
              after=[("routes and RESP", group_routes), ("seq_max_open", group_cap),
                     ("auth_file", group_auth), ("static registry", group_static)])
