#!/usr/bin/env python3
"""Public IDs in the daemon (public_key, SPEC §11): format=public on /id,
/ulid and /uuid7 (integer and text forms, a prefix), /decode of a public
form, RESP PUBLIC and UNPUBLIC through redis-cli, the errors (no key, a
wrong prefix, a malformed or altered text, another key), SIGHUP after
`idgen public --new-key FILE --add` (new IDs use the new version, old texts
still decode; a file made world-readable or malformed is refused and the
keys kept), a world-readable key refused at start, and the key's hex never
in the log, /info, the status page, /status.json, /metrics, /health or the
daemon's command line.

Usage: python3 tests/serve/suite_public.py PATH/TO/idgen  (or: ctest -R serve.public)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

KEYS = []  # every key's hex written here: none may show anywhere


def key_file(name, versions=(1,), mode=0o600, text=None):
    """A key file written here (`vN HEX` lines of fresh random keys)."""
    path = os.path.join(TMP, name)
    if text is None:
        lines = []
        for v in versions:
            h = os.urandom(32).hex()
            KEYS.append(h)
            lines.append("v%d %s" % (v, h))
        text = "# a test key\n" + "\n".join(lines) + "\n"
    if os.path.exists(path):
        os.chmod(path, 0o600)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def file_keys(path):
    """The hex of each key line of a key file the CLI wrote."""
    with open(path) as f:
        return re.findall(r"^v\d+\s+([0-9a-fA-F]{64})\s*$", f.read(), re.M)


def body_lines(port, path, *args):
    r, detail = curl(port, path, *args)
    if r is None or r.status != 200:
        raise AssertionError("GET %s: %s" % (path, detail or (r.status, r.body[:300])))
    return r.text().split()


def bulk(out):
    """redis-cli --no-raw's bulk string "..." (or None for an error)."""
    m = re.fullmatch(r'"(.*)"\n', out)
    return m.group(1) if m else None


def unpublic(d, pub):
    rc, out, err = rcli(d.resp, "UNPUBLIC", pub)
    return bulk(out), out + err


def serve_refusal(*args):
    p = subprocess.run([IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0"] + NODE_ARGS
                       + list(args), capture_output=True, timeout=60)
    return p.returncode, p.stderr.decode("utf-8", "replace")


def no_key_in(what, text):
    leaked = [k for k in KEYS if k.lower() in text.lower()]
    check("no key's hex in %s" % what, not leaked, "found %d key(s)" % len(leaked))


def group_refusals():
    loose = key_file("loose.key", mode=0o644)
    rc, err = serve_refusal("--public-key", loose)
    check("a world-readable key is refused at start (exit 2), naming the mode and chmod 600",
          rc == 2 and "chmod 600" in err and "644" in err, "exit %d: %s" % (rc, err))
    no_key_in("the refusal of a world-readable key", err)
    bad = key_file("bad.key", text="# x\nv1 %s\nv2 nothex\n" % os.urandom(32).hex())
    KEYS.append(open(bad).read().split()[3])
    rc, err = serve_refusal("--public-key", bad)
    check("a malformed key file is refused at start, naming line 3",
          rc == 2 and "line 3" in err, "exit %d: %s" % (rc, err))
    no_key_in("the refusal of a malformed key file", err)
    good = key_file("good.key")
    long_prefix = "a" * 63
    rc, err = serve_refusal("--public-key", good, "--public-prefix", long_prefix,
                            "--max-batch", "10000", "--max-output-bytes", "500000")
    check("max_output_bytes too small for max_batch text forms of a 63-letter prefix: refused",
          rc == 2 and "max_output_bytes" in err, "exit %d: %s" % (rc, err))
    rc, err = serve_refusal("--public-key", good, "--max-batch", "10000", "--max-output-bytes",
                            "500000", "--check-config")
    check("... the same with the integer form fits (43 bytes an ID)", rc == 0, "exit %d: %s" % (rc, err))
    rc, err = serve_refusal("--public-prefix", "user")
    check("a prefix without a key is refused", rc == 2 and "public_key" in err, "exit %d: %s" % (rc, err))
    # A layout too small to hide (under 20 bits): refused at start, as
    # idgen snowflake does, not a failure on every format=public request.
    p = subprocess.run([IDGEN, "serve", "--http", HOST + ":0", "--resp", HOST + ":0", "--registry",
                        "static", "--layout", "time:16@86400s,node:1,sequence:2,epoch=1700000000000",
                        "--node", "node=0", "--public-key", good, "--check-config"],
                       capture_output=True, timeout=60)
    rc, err = p.returncode, p.stderr.decode("utf-8", "replace")
    check("a public_key with a layout of 19 bits is refused at start, naming 20 bits",
          rc == 2 and "20 bits" in err, "exit %d: %s" % (rc, err))


def group_no_key(d):
    """The main daemon has no public_key: every public request is refused."""
    for path in ("/id?format=public", "/ulid?format=public", "/uuid7?format=public"):
        r, detail = curl(d.http, path)
        check("no key: GET %s is 400 naming public_key" % path,
              r is not None and r.status == 400 and b"public_key" in r.body, detail or (r.status, r.body))
    r, detail = curl(d.http, "/decode/123?public=1")
    check("no key: /decode?public=1 is 400 naming public_key",
          r is not None and r.status == 400 and b"public_key" in r.body, detail or (r.status, r.body))
    rc, out, err = rcli(d.resp, "PUBLIC", "123")
    check("no key: PUBLIC is -ERR naming public_key", "(error) ERR" in out and "public_key" in out, out + err)
    rc, out, err = rcli(d.resp, "UNPUBLIC", "123")
    check("no key: UNPUBLIC is -ERR naming public_key", "(error) ERR" in out and "public_key" in out, out + err)
    info = json.loads(body_lines(d.http, "/info")[0])
    check("no key: /info says public IDs are off", info.get("public") == {"on": False}, info.get("public"))


def group_int(d):
    """Integer forms: a twitter ID's stays below 2^63; ULID and UUIDv4 shapes."""
    pubs = body_lines(d.http, "/id?count=50&format=public")
    nums = [int(p) for p in pubs if p.isdigit()]
    check("format=public count=50: 50 integers below 2^63, distinct",
          len(nums) == 50 and all(0 <= n < 2 ** 63 for n in nums) and len(set(nums)) == 50, pubs[:3])
    check("... not in increasing order (the order is gone)", nums != sorted(nums), nums[:5])
    ids = []
    for p in pubs:
        v, detail = unpublic(d, p)
        ids.append(int(v) if v and v.isdigit() else None)
    check("UNPUBLIC gives back 50 Snowflake IDs, increasing, of this node",
          None not in ids and ids == sorted(ids) and len(set(ids)) == 50
          and all(sf_fields(i)["datacenter"] == DC for i in ids), ids[:3])
    check("... which are not the public ones", not set(ids) & set(nums))
    now = int(time.time() * 1000)
    check("... made just now", ids[0] is not None and abs(sf_fields(ids[0])["unix_ms"] - now) < 60000,
          ids[:1])
    rc, out, err = rcli(d.resp, "PUBLIC", str(ids[7]))
    check("PUBLIC of an ID gives the public form /id gave", bulk(out) == pubs[7], (out, pubs[7]))
    # The CLI, with the same key file, reverses what the daemon gave.
    p = subprocess.run([IDGEN, "public", "--reverse", "--layout", "twitter", "--public-key", d.key]
                       + pubs[:5], capture_output=True, timeout=20)
    got = p.stdout.decode().split()
    check("idgen public --reverse gives back the daemon's IDs", got == [str(i) for i in ids[:5]],
          (p.returncode, got, p.stderr.decode()[-300:]))
    for kind, shape in (("ulid", re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")),
                        ("uuid7", re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"))):
        got = body_lines(d.http, "/%s?count=5&format=public" % kind)
        check("/%s?format=public: 5 of the integer form's shape" % kind,
              len(got) == 5 and all(shape.fullmatch(g) for g in got), got)
        back = [unpublic(d, g)[0] for g in got]
        dec = [idgen_decode(b) if b else None for b in back]
        check("... UNPUBLIC gives back a %s made just now" % kind,
              all(x and abs(x.get("unix_ms", 0) - now) < 60000 for x in dec)
              and (kind == "ulid" or all(x.get("version") == 7 for x in dec)), (back, dec[:1]))
    r, detail = curl(d.http, "/id?count=3&format=public", "-H", "Accept: application/json")
    j = json_body(r) if r is not None else None
    check("format=public with Accept: application/json: {\"ids\": [3 strings]}",
          isinstance(j, dict) and len(j.get("ids", [])) == 3 and all(x.isdigit() for x in j["ids"]), detail or j)
    r, detail = curl(d.http, "/decode/%s?public=1" % pubs[0])
    j = json_body(r) if r is not None and r.status == 200 else None
    check("/decode/PUB?public=1: the decode of the ID behind it, with public and form",
          j is not None and j.get("id") == str(ids[0]) and j.get("public") == pubs[0]
          and j.get("form") == "int" and j.get("fields", {}).get("datacenter") == DC,
          detail or (r.status, r.body[:300]))
    r, detail = curl(d.http, "/decode/%s" % pubs[0])
    j = json_body(r) if r is not None and r.status == 200 else None
    check("/decode/PUB without public=1 decodes the integer as it is", j is not None and j.get("id") == pubs[0]
          and "public" not in j, detail or j)
    rc, out, err = rcli(d.resp, "PUBLIC", str(2 ** 63))
    check("PUBLIC of an ID at 2^63 (over twitter's 63 bits): -ERR naming the bits",
          "(error) ERR" in out and "2^63" in out, out + err)
    rc, out, err = rcli(d.resp, "UNPUBLIC", "not-an-id")
    check("UNPUBLIC of a malformed text: -ERR", out.startswith("(error) ERR"), out + err)
    r, detail = curl(d.http, "/seq/x?format=public")
    check("format=public on /seq: 400", r is not None and r.status == 400, detail or r.status)
    rc, out, err = rcli(d.resp, "PUBLIC")
    check("PUBLIC without an argument: the arity error", "wrong number of arguments" in out, out)


def group_text(d):
    """Text forms with a prefix: user_ and 17 or 30 characters."""
    pubs = body_lines(d.http, "/id?count=20&format=public")
    check("text form: user_ and 17 characters, the version char '0' first",
          len(pubs) == 20 and all(re.fullmatch(r"user_0[0-9a-hjkmnp-tv-z]{16}", p) for p in pubs), pubs[:3])
    back = [unpublic(d, p)[0] for p in pubs]
    check("UNPUBLIC gives back 20 increasing Snowflake IDs",
          all(b and b.isdigit() for b in back) and [int(b) for b in back] == sorted(int(b) for b in back)
          and len(set(back)) == 20, back[:3])
    r, detail = curl(d.http, "/decode/%s" % pubs[0])
    j = json_body(r) if r is not None and r.status == 200 else None
    check("/decode/user_...: recognised by its prefix; the ID behind it and key_version 1",
          j is not None and j.get("id") == back[0] and j.get("key_version") == 1 and j.get("form") == "text",
          detail or (r.status, r.body[:300]))
    for kind in ("ulid", "uuid7"):
        got = body_lines(d.http, "/%s?count=3&format=public" % kind)
        ok = len(got) == 3 and all(re.fullmatch(r"user_0[0-9a-hjkmnp-tv-z]{29}", g) for g in got)
        back128 = [unpublic(d, g)[0] for g in got]
        shape = ULID_RE if kind == "ulid" else re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}")
        check("/%s?format=public: user_ and 30 characters; UNPUBLIC gives a %s back" % (kind, kind),
              ok and all(b and shape.fullmatch(b) for b in back128), (got, back128))
    # A UUIDv7's text is read back as that UUIDv7, never as a ULID: one
    # UUIDv7 text in 65,536 also passes the ULID codec's 16-bit check, so
    # the ULID must not be tried first.  Such texts are found with the CLI
    # (same key file): 600,000 UUIDv7s give about nine.
    u7 = subprocess.run([IDGEN, "uuid7", "-n", "600000"], capture_output=True, timeout=120).stdout
    texts = subprocess.run([IDGEN, "public", "--public-key", d.key, "--kind", "uuid7", "--prefix",
                            "user", "-"], input=u7, capture_output=True, timeout=120).stdout
    as_ulid = subprocess.run([IDGEN, "public", "--public-key", d.key, "--reverse", "--kind", "ulid",
                              "--prefix", "user", "--json", "-"], input=texts, capture_output=True,
                             timeout=120).stdout.decode().splitlines()
    both = [json.loads(x)["input"] for x in as_ulid if '"error"' not in x]
    by_text = dict(zip(texts.decode().split(), u7.decode().split()))
    check("UUIDv7 texts that pass the ULID codec's check too were found", len(both) > 0, len(both))
    for t in both[:3]:
        got, detail = unpublic(d, t)
        check("UNPUBLIC of a UUIDv7 text that a ULID codec also accepts gives the UUIDv7",
              got == by_text[t], (t, got, by_text[t], detail))
    wrong = "order_" + pubs[0][5:]
    r, detail = curl(d.http, "/decode/%s?public=1" % wrong)
    check("another prefix (order_): 400 naming the prefix",
          r is not None and r.status == 400 and b"prefix" in r.body, detail or (r.status, r.body))
    r, detail = curl(d.http, "/decode/%s" % wrong)
    check("... and without public=1 (told by its shape)",
          r is not None and r.status == 400 and b"prefix" in r.body, detail or (r.status, r.body))
    rc, out, err = rcli(d.resp, "UNPUBLIC", wrong)
    check("... and UNPUBLIC: -ERR naming the prefix", "(error) ERR" in out and "prefix" in out, out + err)
    body = pubs[0][6:]
    flip = "0" if body[5] != "0" else "1"
    altered = pubs[0][:11] + flip + pubs[0][12:]
    r, detail = curl(d.http, "/decode/%s" % altered)
    check("an altered text: 400, never a wrong ID", r is not None and r.status == 400, detail or (r.status, r.body))
    rc, out, err = rcli(d.resp, "UNPUBLIC", altered)
    check("... and UNPUBLIC: -ERR", out.startswith("(error) ERR"), out + err)
    rc, out, err = rcli(d.resp, "UNPUBLIC", pubs[0][:-1])
    check("a text one character short: -ERR", out.startswith("(error) ERR"), out + err)
    # This daemon makes text forms only: an integer-shaped input (a raw ID,
    # a ULID, a UUID) is refused, not unmapped with the unchecked integer
    # form into some ID (as idgen public --reverse --prefix user refuses it).
    for raw in (back[0], "12345", "01ARZ3NDEKTSV4RRFFQ69G5FAV",
                "0e3b9b58-1985-4748-9104-5196ac98f3d2"):
        rc, out, err = rcli(d.resp, "UNPUBLIC", raw)
        check("text daemon: UNPUBLIC %s (integer-shaped) is -ERR naming the text form" % raw,
              out.startswith("(error) ERR") and "text form" in out, out + err)
    # 17 digits: a text form's length, read as one (here: no prefix).
    rc, out, err = rcli(d.resp, "UNPUBLIC", "0" * 17)
    check("text daemon: UNPUBLIC of 17 digits is -ERR (read as a text, its prefix missing)",
          out.startswith("(error) ERR") and "prefix" in out, out + err)
    r, detail = curl(d.http, "/decode/%s?public=1" % back[0])
    check("... and /decode/ID?public=1: 400", r is not None and r.status == 400,
          detail or (r.status, r.body))
    rc, out, err = rcli(d.resp, "UNPUBLIC", pubs[0][:5] + "9" + pubs[0][6:])
    check("an unknown key version: -ERR naming the version", out.startswith("(error) ERR")
          and "version" in out, out + err)
    # A daemon with another key and the same prefix: its IDs fail here.
    other = Daemon("public-other", ["--public-key", key_file("other.key"), "--public-prefix", "user"])
    try:
        theirs = body_lines(other.http, "/id?format=public")[0]
    finally:
        other.stop()
    rc, out, err = rcli(d.resp, "UNPUBLIC", theirs)
    check("another key's ID: -ERR with the library's key error", out.startswith("(error) ERR"), out + err)
    r, detail = curl(d.http, "/decode/%s" % theirs)
    check("... and /decode: 400", r is not None and r.status == 400, detail or (r.status, r.body))
    s, _ = get_metrics(d)
    check("metrics: public IDs made and reversed counted",
          msum(s, "idgen_public_ids_total", op="made") >= 26 and msum(s, "idgen_public_ids_total", op="reversed") >= 20,
          (msum(s, "idgen_public_ids_total", op="made"), msum(s, "idgen_public_ids_total", op="reversed")))
    check("metrics: failures by code (key, parse)",
          msum(s, "idgen_public_failures_total", code="key") >= 2
          and msum(s, "idgen_public_failures_total", code="parse") >= 1,
          {c: msum(s, "idgen_public_failures_total", code=c) for c in ("key", "parse", "range", "nokey", "other")})


def group_shown(d, what):
    """The key never shows: log, /info, /, /status.json, /metrics, /health, cmdline."""
    info = json.loads(body_lines(d.http, "/info")[0])
    pub = info.get("public") or {}
    check("%s: /info says public IDs are on, the form, the prefix, the versions" % what,
          pub.get("on") is True and pub.get("form") in ("int", "text") and "key_versions" in pub
          and pub.get("newest") == max(pub.get("key_versions") or [0]), pub)
    texts = {"the log": d.log()}
    for path in ("/info", "/", "/status", "/status.json", "/metrics", "/health", "/ready"):
        r, detail = curl(d.http, path)
        texts[path] = r.text() if r is not None else ""
    with open("/proc/%d/cmdline" % d.p.pid, "rb") as f:
        texts["/proc/PID/cmdline"] = f.read().decode("utf-8", "replace")
    texts["ps -o args"] = subprocess.run(["ps", "-o", "args=", "-p", str(d.p.pid)], capture_output=True,
                                         timeout=10).stdout.decode()
    check("%s: /health names the public form and versions" % what, "public form=" in texts["/health"],
          texts["/health"])
    rc, out, err = rcli(d.resp, "INFO", "generator")
    texts["RESP INFO"] = out
    check("%s: RESP INFO says public:on and the newest version" % what,
          "public:on" in out and "public_key_newest:%d" % pub.get("newest", -1) in out, out[-400:])
    for name, text in texts.items():
        no_key_in("%s (%s)" % (name, what), text)


def group_reload():
    path = os.path.join(TMP, "rot.key")
    p = subprocess.run([IDGEN, "public", "--new-key", path], capture_output=True, timeout=20)
    check("idgen public --new-key FILE makes a key file 0600",
          p.returncode == 0 and os.path.exists(path) and os.stat(path).st_mode & 0o777 == 0o600,
          p.stderr.decode()[-300:])
    KEYS.extend(file_keys(path))
    no_key_in("idgen public --new-key's output", (p.stdout + p.stderr).decode())
    d = Daemon("public-reload", ["--public-key", path, "--public-prefix", "user"])
    d.key = path
    try:
        old = body_lines(d.http, "/id?format=public")[0]
        old_id = unpublic(d, old)[0]
        p = subprocess.run([IDGEN, "public", "--new-key", path, "--add"], capture_output=True, timeout=20)
        KEYS.extend(file_keys(path))
        check("idgen public --new-key FILE --add: version 2 added", p.returncode == 0 and len(file_keys(path)) == 2,
              p.stderr.decode()[-300:])
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "newest=2" not in d.log():
            time.sleep(0.05)
        check("SIGHUP: the key file read again (event=public_key_reload newest=2)", "newest=2" in d.log(),
              d.log()[-500:])
        new = body_lines(d.http, "/id?format=public")[0]
        check("SIGHUP: new IDs use version 2 (its char '1')", new.startswith("user_1"), new)
        got, detail = unpublic(d, old)
        check("SIGHUP: an old text (version 1) still decodes to its ID", got == old_id and got is not None, detail)
        r, detail = curl(d.http, "/decode/%s" % new)
        j = json_body(r) if r is not None and r.status == 200 else None
        check("/decode of the new text: key_version 2", j is not None and j.get("key_version") == 2,
              detail or (r and r.body))
        group_shown(d, "after SIGHUP")
        # Reloads while both loops serve public IDs: every reply whole (the
        # codecs remade per loop; the sanitizer builds look for races).
        results = {}

        def hammer(key):
            got = []
            c = Conn(d.http)
            try:
                for _ in range(150):
                    c.send(http_req("/id?count=20&format=public"))
                    r = c.http()
                    got.append(r.status == 200 and len(r.text().split()) == 20)
            except Exception as e:  # noqa: BLE001
                got.append(repr(e))
            finally:
                c.close()
            results[key] = got
        threads = [threading.Thread(target=hammer, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for _ in range(4):
            d.p.send_signal(signal.SIGHUP)
            time.sleep(0.02)
        for t in threads:
            t.join(60)
        allok = [x for k in results for x in results[k]]
        check("SIGHUPs while two clients take public IDs: every reply whole (300 of them)",
              len(allok) == 300 and all(x is True for x in allok), [x for x in allok if x is not True][:3])
        os.chmod(path, 0o644)
        n_kept = d.log().count("action=kept")
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and d.log().count("action=kept") == n_kept:
            time.sleep(0.05)
        log = d.log()
        check("SIGHUP with a world-readable file: refused, the keys kept, the mode named",
              log.count("action=kept") > n_kept and "chmod 600" in log, log[-600:])
        os.chmod(path, 0o600)
        with open(path, "a") as f:
            f.write("v3 zz\n")
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and d.log().count("action=kept") <= n_kept + 1:
            time.sleep(0.05)
        check("SIGHUP with a malformed file: refused naming the line, the keys kept",
              d.log().count("action=kept") > n_kept + 1 and "line" in d.log()[-800:], d.log()[-600:])
        got, detail = unpublic(d, new)
        check("... version 2's texts still decode", got is not None and got.isdigit(), detail)
        no_key_in("the log after refused reloads", d.log())
    finally:
        rc = d.stop()
        check("the reloaded daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def cli_reverse(d, texts, kind):
    """The IDs behind texts, read back by `idgen public -r` (the CLI's codec)."""
    p = subprocess.run([IDGEN, "public", "--public-key", d.key, "-r", "--prefix", "user", "--kind", kind],
                       input="\n".join(texts) + "\n", capture_output=True, text=True, timeout=30)
    return p.stdout.split() if p.returncode == 0 else ["exit %d: %s" % (p.returncode, p.stderr[:300])]


def group_text_counts(d):
    """Counts of text forms, made in batches: every one the same as the library's
    single form would be (read back by the CLI), in order, of every kind."""
    shapes = {"id": (r"user_0[0-9a-hjkmnp-tv-z]{16}", "snowflake"),
              "ulid": (r"user_0[0-9a-hjkmnp-tv-z]{29}", "ulid"),
              "uuid7": (r"user_0[0-9a-hjkmnp-tv-z]{29}", "uuid7")}
    for route, (shape, kind) in shapes.items():
        got = body_lines(d.http, "/%s?count=300&format=public" % route)
        check("/%s?count=300&format=public: 300 distinct text forms" % route,
              len(got) == 300 and len(set(got)) == 300 and all(re.fullmatch(shape, g) for g in got), got[:3])
        back = cli_reverse(d, got, kind)
        if kind == "snowflake":
            ordered = len(back) == 300 and all(b.isdigit() for b in back) and increasing([int(b) for b in back])
        else:
            ordered = len(back) == 300 and increasing(back)
        check("... read back by the CLI: 300 increasing %s IDs" % kind, ordered, back[:3])
    r, detail = curl(d.http, "/ulid?count=70&format=public", "-H", "Accept: application/json")
    j = json_body(r) if r is not None and r.status == 200 else None
    ids = j.get("ids") if isinstance(j, dict) else None
    check("/ulid?count=70&format=public as JSON: 70 text forms",
          isinstance(ids, list) and len(ids) == 70
          and all(isinstance(i, str) and re.fullmatch(r"user_0[0-9a-hjkmnp-tv-z]{29}", i) for i in ids),
          detail or (r.status, r.body[:300]))


def group_keyed():
    key = key_file("int.key")
    d = Daemon("public-int", ["--public-key", key])
    d.key = key
    try:
        run_group("integer forms", group_int, d)
        run_group("never shown (integer form)", group_shown, d, "integer form")
    finally:
        rc = d.stop()
        check("the keyed daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
    key = key_file("text.key")
    d = Daemon("public-text", ["--public-prefix", "user"], env_extra={"IDGEN_PUBLIC_KEY": key})
    d.key = key
    try:
        d.key = key
        run_group("text forms (the key named by IDGEN_PUBLIC_KEY)", group_text, d)
        run_group("text forms by the count", group_text_counts, d)
        run_group("never shown (text form)", group_shown, d, "text form")
    finally:
        rc = d.stop()
        check("the text daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_pinned():
    """public_key_version pins the integer form's key: adding a version and
    SIGHUP change nothing it maps; a file without that version is refused
    at start and on SIGHUP (the keys kept)."""
    path = key_file("pin.key", versions=(1,))
    rc, err = serve_refusal("--public-key", path, "--public-key-version", "2")
    check("public_key_version naming a version the file lacks: refused at start",
          rc != 0 and "no version 2" in err, err[-300:])
    d = Daemon("public-pin", ["--public-key", path, "--public-key-version", "1"])
    d.key = path
    try:
        rc, out, err = rcli(d.resp, "ID")
        the_id = out.strip().replace("(integer) ", "")
        rc, out, err = rcli(d.resp, "PUBLIC", the_id)
        before = bulk(out) or out.strip()
        key_file("pin.key", versions=(1, 2), text=open(path).read() + "v2 %s\n" % os.urandom(32).hex())
        KEYS.extend(file_keys(path))
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "newest=2" not in d.log():
            time.sleep(0.05)
        rc, out, err = rcli(d.resp, "PUBLIC", the_id)
        after = bulk(out) or out.strip()
        check("pinned to version 1: the same public integer after version 2 is added and SIGHUP",
              "newest=2" in d.log() and before == after and before.isdigit(), (before, after))
        got, detail = unpublic(d, after)
        check("pinned: the public integer still maps back to its ID", got == the_id, detail)
        key_file("pin.key", versions=(3,))
        d.p.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "no key version 1" not in d.log():
            time.sleep(0.05)
        check("SIGHUP with a file that lost the pinned version: refused, the keys kept",
              "no key version 1" in d.log() and unpublic(d, after)[0] == the_id, d.log()[-400:])
    finally:
        rc = d.stop()
        check("the pinned daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


if __name__ == "__main__":
    run_suite("public",
              before=[("refused at start", group_refusals)],
              with_daemon=[("without a key", group_no_key)],
              after=[("with a key", group_keyed), ("SIGHUP", group_reload),
                     ("a pinned key version", group_pinned)])
