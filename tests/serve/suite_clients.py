#!/usr/bin/env python3
"""The client matrix: RESP through the Redis clients users have today and the
ones before, each on its default options, making the same requests in the
same order: ID, ID 5, IDSTR, IDSTR 3, ULID 3, UUID7 2, DECODE, INFO, INFO
clients, a pipeline of 100 IDSTR, a transaction (MULTI IDSTR, IDSTR 2, ULID,
ID, EXEC), the error of ID abc (and PING after it), and HELLO for the
protocol in effect.

  - redis-cli (Debian's redis-tools): ID, IDSTR 3, a pipeline (--pipe),
    MULTI/EXEC, an error, and RESP3 (-3);
  - redis-py (Debian's python3-redis): redis.Redis and redis.asyncio.Redis,
    each with the parser redis-py picks (hiredis when python3-hiredis is
    importable) and with its pure-Python parser;
  - hiredis, the C client (Debian's libhiredis-dev): tests/serve/clients_hiredis.c,
    compiled here with pkg-config's flags;
  - ioredis 5 and 6, node-redis 4, 5 and 6: tests/serve/clients_matrix.mjs,
    each major installed from npm at test time into a prefix of its own,
    BUILD/npm-clients-matrix/NAME@MAJOR (kept between runs; never in the
    source tree).

Each client's replies are judged the same way (judge()): exact IDs where
the path is exact (IDSTR's strings, and ID where the client reads integers
as 64-bit integers, BigInts or strings), the protocol in effect the client's
default (ioredis 6 and node-redis 6 open with HELLO 3), and whether `ID`
comes back exact or rounded (a JavaScript Number above 2^53), which is
recorded and compared with docs/SERVE.md's "Clients" table.  Every exact
Snowflake ID joins the suite's uniqueness and order check.  The checks are
shown to fail on a doctored result (a rounded IDSTR, a missing reply, an
error not raised).

Usage: python3 tests/serve/suite_clients.py PATH/TO/idgen
       (or: ctest -R serve.clients)
"""

import asyncio
import concurrent.futures
import inspect
import json
import os
import re
import subprocess
import time

from harness import (HOST, IDGEN, SNOW, T_START_MS, TMP, ULID_RE, ULIDS, UUID7_RE, UUIDS, add_snow, check,
                     idgen_decode, increasing, rcli, redis, run_suite, sf_fields, short)

HERE = os.path.dirname(os.path.abspath(__file__))
SERVE_MD = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "SERVE.md")
MATRIX_DIR = os.path.join(os.path.dirname(os.path.abspath(IDGEN)), "npm-clients-matrix")
# (the name in docs/SERVE.md's table and in the checks, npm package, major)
JS_CLIENTS = [("ioredis", "ioredis", "5"), ("ioredis", "ioredis", "6"), ("node-redis", "redis", "4"),
              ("node-redis", "redis", "5"), ("node-redis", "redis", "6")]
HIREDIS_BIN = os.path.join(TMP, "clients_hiredis")
ERR_NOT_INT = "value is not an integer or out of range"
MULTI = "MULTI IDSTR, IDSTR 2, ULID, ID, EXEC"
STEPS = ["ID", "ID 5", "IDSTR", "IDSTR 3", "ULID 3", "UUID7 2", "DECODE", "INFO", "INFO clients",
         "pipeline of 100 IDSTR", MULTI, "ID abc", "PING after the error", "HELLO"]
# What each client measured: {table row name: {"protocol", "id", "versions", "paths"}}
MEASURED = {}
JUDGED = []  # (label, the result judged), for the doctored-result check
NOTHING = object()  # a step that has no value: missing, or failed


# -------------------------------------------------------------- the judge


def decimal(v):
    """(int, how) for an encoded value holding a decimal ID, how its client
    gave it: "string", "int" (a 64-bit or Python integer), "bigint" or
    "number" (a JavaScript Number); None if it holds none."""
    if isinstance(v, str):
        how, t = "string", v
    elif isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("number", "bigint", "int"):
        how, t = next(iter(v.items()))
    else:
        return None
    return (int(t), how) if isinstance(t, str) and re.fullmatch(r"[1-9][0-9]{0,19}", t) else None


def exact(d):
    return d[1] != "number" or d[0] <= 1 << 53


def plausible(n):
    """An ID of this test's daemon, its time field within the test: true of a
    rounded one too (a double near 2^61 is off by at most 128: sequence bits)."""
    f = sf_fields(n)
    return f["top"] == 0 and T_START_MS - 2000 <= f["unix_ms"] <= time.time() * 1000 + 2000


def text_of(v):
    """An encoded string (a bulk string, a status, a Buffer), else None."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and len(v) == 1 and next(iter(v)) in ("status", "buffer"):
        return next(iter(v.values()))
    return None


def pairs(v):
    """A HELLO or INFO reply as (key, value) pairs: a flat array or a map."""
    if isinstance(v, dict) and "map" in v:
        return [(text_of(k), x) for k, x in v["map"]]
    if isinstance(v, list) and len(v) % 2 == 0:
        return [(text_of(v[i]), v[i + 1]) for i in range(0, len(v), 2)]
    return []


def judge(label, res):
    """The verdicts on one client's result (clients_matrix.mjs's JSON, or
    the same built by the redis-py runs): a list of (step, name, ok, detail),
    and the facts: the protocol in effect, whether ID is exact, the exact
    Snowflake IDs in the order obtained, ULIDs, UUIDv7s.  No side effects."""
    out = []
    facts = {"protocol": None, "id": None, "snow": [], "ulids": [], "uuids": [], "paths": []}
    steps = {}
    for name, r in res.get("steps", []):
        steps.setdefault(name, r)

    def verdict(step, name, ok, detail=""):
        out.append((step, "%s: %s" % (label, name), bool(ok), detail))

    def got(step):
        """(value, detail): the step's value, or NOTHING and why."""
        r = steps.get(step)
        if r is None:
            return NOTHING, "no reply (step missing)"
        if "ok" not in r:
            return NOTHING, "failed: %s (%s)" % (r.get("error"), r.get("name"))
        return r["ok"], short(r["ok"], 200)

    def snow(step, ds):
        facts["snow"].extend(("%s %s" % (label, step), d[0]) for d in ds)

    events = res.get("events", [])
    verdict("events", "no error events from the client", not events, short(events))

    v, det = got("HELLO")
    proto = dict(pairs(v)).get("proto") if v is not NOTHING else None
    proto = decimal(proto)[0] if decimal(proto) else None
    facts["protocol"] = proto
    want = res.get("default_protocol")
    verdict("HELLO", "HELLO: the protocol in effect is RESP%s, the client's default" % want,
            proto is not None and proto == want, "proto %r; %s" % (proto, det))

    v, det = got("ID")
    d = decimal(v)
    ok = d is not None and plausible(d[0])
    if ok:
        facts["id"] = "exact" if exact(d) else "rounded"
    verdict("ID", "ID: an ID, %s" % ({"exact": "exact (%s)" % (d[1] if d else ""),
                                      "rounded": "rounded (a Number above 2^53)"}.get(facts["id"], "?")),
            ok, det)
    if ok and exact(d):
        snow("ID", [d])

    v, det = got("ID 5")
    ds = [decimal(x) for x in v] if isinstance(v, list) else []
    ok = len(ds) == 5 and all(x and plausible(x[0]) for x in ds)
    if ok and all(exact(x) for x in ds):
        ok = increasing([x[0] for x in ds])
        verdict("ID 5", "ID 5: five exact IDs, increasing", ok, det)
        if ok:
            snow("ID 5", ds)
    else:
        verdict("ID 5", "ID 5: five IDs (rounded: %d distinct)" % len({x[0] for x in ds if x}), ok, det)

    v, det = got("IDSTR")
    d = decimal(v)
    ok = d is not None and d[1] == "string" and plausible(d[0])
    verdict("IDSTR", "IDSTR: an exact ID, a string", ok, det)
    if ok:
        snow("IDSTR", [d])

    for step, n in (("IDSTR 3", 3), ("pipeline of 100 IDSTR", 100)):
        v, det = got(step)
        ds = [decimal(x) for x in v] if isinstance(v, list) else []
        ok = (len(ds) == n and all(x and x[1] == "string" and plausible(x[0]) for x in ds)
              and increasing([x[0] for x in ds]))
        verdict(step, "%s: %d exact IDs, strings, increasing" % (step, n), ok, det)
        if ok:
            snow(step, ds)

    for step, n, rx, key in (("ULID 3", 3, ULID_RE, "ulids"), ("UUID7 2", 2, UUID7_RE, "uuids")):
        v, det = got(step)
        ok = (isinstance(v, list) and len(v) == n and all(isinstance(x, str) and rx.fullmatch(x) for x in v)
              and increasing(v))
        verdict(step, "%s: %d, canonical, increasing" % (step, n), ok, det)
        if ok:
            facts[key].extend(v)

    v, det = got("DECODE")
    idstr = steps.get("IDSTR", {}).get("ok")
    try:
        dj = json.loads(text_of(v)) if text_of(v) is not None else None
    except ValueError:
        dj = None
    verdict("DECODE", "DECODE: the JSON of idgen decode --json",
            dj is not None and isinstance(idstr, str) and dj == idgen_decode(idstr), det)

    v, det = got("INFO")
    t = text_of(v)
    kv = dict(pairs(v)) if t is None else dict(ln.split(":", 1) for ln in t.split("\r\n") if ":" in ln)
    ok = "connected_clients" in kv and "layout_spec" in kv and "idgen_version" in kv
    if t is not None:
        ok = ok and t.startswith("# Server\r\n")
    verdict("INFO", "INFO: Redis's sections, connected_clients, layout_spec", ok, short(v, 120))
    v, det = got("INFO clients")
    t = text_of(v)
    ok = (re.findall(r"^# (\w+)", t, re.M) == ["Clients"] and "connected_clients:" in t if t is not None
          else {k for k, _ in pairs(v)} == {"connected_clients", "maxclients"})
    verdict("INFO clients", "INFO clients: that section only", ok, det)

    v, det = got(MULTI)
    ok = isinstance(v, list) and len(v) == 4 and isinstance(v[1], list) and len(v[1]) == 2
    ds = [decimal(x) for x in ([v[0]] + v[1])] if ok else []
    ok = ok and all(x and x[1] == "string" and plausible(x[0]) for x in ds) and increasing([x[0] for x in ds])
    ok = ok and isinstance(v[2], str) and ULID_RE.fullmatch(v[2]) is not None
    last = decimal(v[3]) if ok else None
    ok = ok and last is not None and plausible(last[0])
    if ok and exact(last):
        ok = last[0] > ds[-1][0]
        ds.append(last)
    verdict(MULTI, "MULTI/EXEC: the four replies in order (IDSTR, IDSTR 2, ULID, ID), IDs increasing", ok, det)
    if ok:
        snow("MULTI", ds)
        facts["ulids"].append(v[2])

    r = steps.get("ID abc")
    verdict("ID abc", "ID abc: an error raised, ERR %s" % ERR_NOT_INT,
            r is not None and "ok" not in r and str(r.get("error", "")).endswith(ERR_NOT_INT), short(r))
    v, det = got("PING after the error")
    verdict("PING after the error", "PING after the error: PONG (the connection still works)",
            v in ("PONG", {"status": "PONG"}, {"bool": "true"}), det)

    # The client's own exact path for integer replies (stringNumbers, a type mapping).
    ds = []
    for step, r in res.get("steps", []):
        if not step.startswith("exact: "):
            continue
        v, det = got(step)
        vs = v if isinstance(v, list) else [v]
        these = [decimal(x) for x in vs]
        ok = all(x and x[1] == "string" and plausible(x[0]) for x in these) and bool(these)
        ok = ok and increasing([x[0] for x in ds + these])
        verdict(step, "%s: exact IDs, strings, increasing" % step, ok, det)
        if ok:
            ds += these
            path = re.search(r"\((.*)\)", step).group(1)
            if path not in facts["paths"]:
                facts["paths"].append(path)
    snow("exact", ds)
    return out, facts


def report(label, res, version):
    """Reports one client's verdicts, adds its exact IDs to the suite's, and
    records what it measured for the docs check."""
    verdicts, facts = judge(label, res)
    JUDGED.append((label, res))
    for _, name, ok, detail in verdicts:
        check(name, ok, detail)
    SNOW.extend(facts["snow"])  # each source begins with the client's kind: ioredis, redis-py...
    ULIDS.extend(facts["ulids"])
    UUIDS.extend(facts["uuids"])
    print("  %s %s: RESP%s; ID %s; exact paths: IDSTR%s" % (label, version, facts["protocol"], facts["id"],
                                                           "".join(", " + p for p in facts["paths"])), flush=True)
    record(label.split(" (")[0], facts["protocol"], facts["id"], version)


def record(row, protocol, id_exact, version):
    m = MEASURED.setdefault(row, {"protocol": set(), "id": set(), "versions": set()})
    m["protocol"].add(protocol)
    m["id"].add(id_exact)
    m["versions"].add(version)


# -------------------------------------------------------------- redis-cli


def group_redis_cli(d):
    p = d.resp
    ver = subprocess.run(["redis-cli", "--version"], capture_output=True, text=True).stdout.split()
    ver = ver[1] if len(ver) > 1 else "?"

    def one(args, pattern, name, stdin=None):
        rc, out, err = rcli(p, *args, stdin=stdin)
        m = re.fullmatch(pattern, out, re.S)
        check("redis-cli %s" % name, rc == 0 and m is not None, "exit %d out %r err %r" % (rc, out, err))
        return m

    id_exact = None
    m = one(["ID"], r"\(integer\) (\d+)\n", "ID: an integer, exact")
    if m:
        add_snow("redis-cli ID", [int(m.group(1))])
        id_exact = "exact" if plausible(int(m.group(1))) else None
    m = one(["IDSTR", "3"], r'1\) "(\d+)"\n2\) "(\d+)"\n3\) "(\d+)"\n', "IDSTR 3: three strings")
    if m:
        ids = [int(x) for x in m.groups()]
        check("redis-cli IDSTR 3: increasing", increasing(ids), ids)
        add_snow("redis-cli IDSTR 3", ids)
    rc, out, err = rcli(p, "--pipe", stdin="IDSTR\r\n" * 100)
    check("redis-cli --pipe, 100 IDSTR: errors: 0, replies: 100", rc == 0 and "errors: 0, replies: 100" in out,
          "exit %d out %r err %r" % (rc, out, err))
    for proto, flags in ((2, []), (3, ["-3"])):
        m = one(flags + [], r"OK\nQUEUED\nQUEUED\nQUEUED\nQUEUED\n1\) \"(\d+)\"\n2\) 1\) \"(\d+)\"\n   2\) \"(\d+)\"\n"
                r"3\) \"([0-9A-Z]{26})\"\n4\) \(integer\) (\d+)\n",
                "%sMULTI, IDSTR, IDSTR 2, ULID, ID, EXEC: OK, QUEUED x4, the four replies" % (
                    "-3 " if flags else ""), stdin="MULTI\nIDSTR\nIDSTR 2\nULID\nID\nEXEC\n")
        if m:
            ids = [int(m.group(i)) for i in (1, 2, 3, 5)]
            check("redis-cli %sMULTI/EXEC: IDs increasing" % " ".join(flags + [""]), increasing(ids), ids)
            add_snow("redis-cli MULTI RESP%d" % proto, ids)
            ULIDS.append(m.group(4))
        one(flags + ["ID", "abc"], r"\(error\) ERR %s\n" % ERR_NOT_INT,
            "%sID abc: (error) ERR %s" % (" ".join(flags + [""]), ERR_NOT_INT))
    m = one(["HELLO"], r'.*\d+\) "proto"\n\s*\d+\) \(integer\) (\d)\n.*', "HELLO: a flat array (RESP2)")
    protocol = int(m.group(1)) if m else None
    check("redis-cli speaks RESP2 by default (HELLO: proto 2)", protocol == 2, protocol)
    one(["-3", "HELLO"], r'1# "server" => "idgen"\n.*\d# "proto" => \(integer\) 3\n.*',
        "-3 HELLO: a map, proto 3 (RESP3)")
    m = one(["-3", "ID", "2"], r"1\) \(integer\) (\d+)\n2\) \(integer\) (\d+)\n", "-3 ID 2: two integers")
    if m:
        add_snow("redis-cli -3 ID 2", [int(x) for x in m.groups()])
    m = one(["-3", "IDSTR"], r'"(\d+)"\n', "-3 IDSTR: a string")
    if m:
        add_snow("redis-cli -3 IDSTR", [int(m.group(1))])
    one(["-3", "CONFIG", "GET", "save"], r'1# "save" => ""\n', "-3 CONFIG GET save: a map")
    record("redis-cli", protocol, id_exact, ver)


# --------------------------------------------------------------- redis-py


def enc_py(v):
    """A redis-py reply in clients_matrix.mjs's form (an int is exact: "int")."""
    if isinstance(v, bool):
        return {"bool": "true" if v else "false"}
    if isinstance(v, int):
        return {"int": str(v)}
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return [enc_py(x) for x in v]
    if isinstance(v, dict):
        return {"map": [[enc_py(k), enc_py(x)] for k, x in v.items()]}
    if v is None:
        return None
    return {"other": repr(v)}


async def py_steps(r):
    """The matrix's steps on a redis-py client, sync or asyncio (whose
    methods return awaitables): the result as clients_matrix.mjs prints it."""
    steps = []

    async def step(name, fn):
        try:
            v = fn()
            if inspect.isawaitable(v):
                v = await v
            steps.append([name, {"ok": enc_py(v)}])
        except Exception as e:  # noqa: BLE001  the error is the result
            steps.append([name, {"error": str(e), "name": type(e).__name__}])

    def pipeline(transaction, cmds):
        p = r.pipeline(transaction=transaction)
        for c in cmds:
            p.execute_command(*c)
        return p.execute()

    for name in ("ID", "ID 5", "IDSTR", "IDSTR 3", "ULID 3", "UUID7 2"):
        await step(name, lambda name=name: r.execute_command(*name.split()))
    idstr = steps[2][1].get("ok")
    await step("DECODE", lambda: r.execute_command("DECODE", idstr if isinstance(idstr, str) else "1"))
    await step("INFO", lambda: r.info())
    await step("INFO clients", lambda: r.info("clients"))
    await step("pipeline of 100 IDSTR", lambda: pipeline(False, [("IDSTR",)] * 100))
    await step(MULTI, lambda: pipeline(True, [("IDSTR",), ("IDSTR", "2"), ("ULID",), ("ID",)]))
    await step("ID abc", lambda: r.execute_command("ID", "abc"))
    await step("PING after the error", lambda: r.ping())
    await step("HELLO", lambda: r.execute_command("HELLO"))
    return {"events": [], "default_protocol": 2, "steps": steps}


def parser_name(pool):
    c = pool.get_connection("_")
    try:
        return type(c._parser).__name__
    finally:
        pool.release(c)


async def parser_name_async(pool):
    c = await pool.get_connection("_")
    try:
        return type(c._parser).__name__
    finally:
        await pool.release(c)


def group_redis_py(d):
    if redis is None:
        check("redis-py (python3-redis) importable", False, "scripts/install-deps.sh installs it")
        return
    import redis.asyncio as redis_asyncio
    import redis.utils as redis_utils
    hi = redis_utils.HIREDIS_AVAILABLE
    print("  redis-py %s; redis.utils.HIREDIS_AVAILABLE=%s%s" % (
        redis.__version__, hi, " (hiredis %s)" % __import__("hiredis").__version__ if hi else
        ": python3-hiredis is not installed, the hiredis parser is not tested"), flush=True)
    # redis-py's choice (hiredis when importable), then its pure-Python parser.
    parsers = [None] + ([redis.connection.PythonParser] if hi else [])
    for parser in parsers:
        kw = {"parser_class": parser} if parser else {}
        pool = redis.ConnectionPool(host=HOST, port=d.resp, **kw)
        r = redis.Redis(connection_pool=pool)
        try:
            res = asyncio.run(py_steps(r))
            name = parser_name(pool)
        finally:
            r.close()
            pool.disconnect()
        label = "redis-py (sync, %s%s)" % (name, "" if parser else ", its default")
        report(label, res, redis.__version__)
    aparsers = [None] + ([redis_asyncio.connection.PythonParser] if hi else [])

    async def run_async(parser):
        kw = {"parser_class": parser} if parser else {}
        pool = redis_asyncio.ConnectionPool(host=HOST, port=d.resp, **kw)
        r = redis_asyncio.Redis(connection_pool=pool)
        try:
            return await py_steps(r), await parser_name_async(pool)
        finally:
            await r.close()
            await pool.disconnect()
    for parser in aparsers:
        res, name = asyncio.run(run_async(parser))
        label = "redis-py (asyncio, %s%s)" % (name, "" if parser else ", its default")
        report(label, res, redis.__version__)


# ---------------------------------------------------------------- hiredis


def group_build_hiredis():
    pc = subprocess.run(["pkg-config", "--cflags", "--libs", "hiredis"], capture_output=True, text=True)
    if not check("pkg-config finds hiredis (libhiredis-dev)", pc.returncode == 0,
                 pc.stderr.strip() + " (scripts/install-deps.sh installs libhiredis-dev)"):
        return
    cc = subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-o", HIREDIS_BIN,
                         os.path.join(HERE, "clients_hiredis.c")] + pc.stdout.split(),
                        capture_output=True, text=True, timeout=120)
    check("clients_hiredis.c compiles against hiredis without warnings", cc.returncode == 0,
          cc.stderr[-1500:])


def group_hiredis(d):
    if not os.path.exists(HIREDIS_BIN):
        check("hiredis: clients_hiredis was built", False, "see the build check above")
        return
    p = subprocess.run([HIREDIS_BIN, HOST, str(d.resp)], capture_output=True, timeout=60)
    res = parse_json_out("clients_hiredis", p)
    if res is not None:
        report("hiredis", res, res.get("version"))


# --------------------------------------------------------- the JS clients


def prefix(pkg, major):
    return os.path.join(MATRIX_DIR, "%s@%s" % (pkg, major))


def installed(pkg, major):
    try:
        with open(os.path.join(prefix(pkg, major), "node_modules", pkg, "package.json")) as f:
            v = json.load(f)["version"]
        return v if v.split(".")[0] == major else None
    except (OSError, ValueError, KeyError):
        return None


def group_npm_install():
    """Each major into its prefix, those missing at once (npm takes seconds
    each, mostly waiting for the registry)."""
    def install(pkg, major):
        os.makedirs(prefix(pkg, major), exist_ok=True)
        return subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix",
                               prefix(pkg, major), "%s@%s" % (pkg, major)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
    want = [(pkg, major) for _, pkg, major in JS_CLIENTS if not installed(pkg, major)]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(want))) as ex:
        for (pkg, major), p in zip(want, ex.map(lambda a: install(*a), want)):
            check("npm install %s@%s into %s" % (pkg, major, prefix(pkg, major)), p.returncode == 0,
                  p.stdout.decode(errors="replace")[-1500:])
    for name, pkg, major in JS_CLIENTS:
        check("%s %s: %s %s.x is installed" % (name, major, pkg, major), installed(pkg, major),
              "in %s" % prefix(pkg, major))


def parse_json_out(what, p):
    ok = check("%s exits 0" % what, p.returncode == 0, p.stderr.decode(errors="replace")[-1500:])
    try:
        return json.loads(p.stdout.decode())
    except ValueError:
        check("%s prints its results as JSON" % what, False,
              "%s; stderr %s" % (short(p.stdout, 500), p.stderr.decode(errors="replace")[-500:]) if ok else "")
        return None


def js_group(name, pkg, major):
    def run(d):
        if not installed(pkg, major):
            check("%s %s ran" % (name, major), False, "not installed (see the npm checks)")
            return
        p = subprocess.run(["node", os.path.join(HERE, "clients_matrix.mjs"), name,
                            os.path.join(prefix(pkg, major), "node_modules"), str(d.resp)],
                           capture_output=True, timeout=60)
        res = parse_json_out("node clients_matrix.mjs %s %s" % (name, major), p)
        if res is not None:
            report("%s %s" % (name, major), res, res.get("version"))
    return run


# ------------------------------------------------- the checks, and the docs


def group_doctored():
    """The checks can fail: a result whose IDSTR came back rounded (as a
    Number would), whose ULID 3 reply is missing and whose ID abc raised
    nothing fails those three, and DECODE's (whose ID is IDSTR's)."""
    if not JUDGED:
        check("a result to doctor", False, "no client ran")
        return
    label, res = JUDGED[0]
    steps = [[n, dict(r)] for n, r in res["steps"] if n != "ULID 3"]
    for n, r in steps:
        if n == "IDSTR" and isinstance(r.get("ok"), str):
            r["ok"] = {"number": "%d" % float(int(r["ok"]))}
        if n == "ID abc":
            r.pop("error", None)
            r["ok"] = {"int": "1"}
    verdicts, _ = judge("doctored " + label, dict(res, steps=steps))
    failed = {s for s, _, ok, _ in verdicts if not ok}
    check("the matrix's checks fail on a doctored copy of %s's result: a rounded IDSTR, a missing ULID 3 "
          "reply, an ID abc not refused" % label, failed == {"IDSTR", "ULID 3", "ID abc", "DECODE"},
          "failed: %s" % sorted(failed))


def group_docs():
    """docs/SERVE.md's "Clients" table says what this suite measured: for
    each client, its default protocol and whether ID is exact by default."""
    with open(SERVE_MD) as f:
        text = f.read()
    m = re.search(r"\n\| client[^\n]*\n\|[-| ]+\|\n((?:\|[^\n]*\n)+)", text)
    if not check("docs/SERVE.md has the Clients table", m is not None):
        return
    rows = [[c.strip() for c in ln.strip().strip("|").split("|")] for ln in m.group(1).splitlines()]
    for row, got in sorted(MEASURED.items()):
        doc = [r for r in rows if re.match(re.escape(row) + r"\b", r[0])]
        proto, ids = got["protocol"], got["id"]  # one each, whichever variant (redis-py's four)
        want = None
        if len(proto) == 1 and len(ids) == 1 and None not in proto | ids:
            want = ("RESP%d" % next(iter(proto)), next(iter(ids)))
        cells = (re.search(r"RESP\d", doc[0][1]).group(0) if doc and re.search(r"RESP\d", doc[0][1]) else None,
                 doc[0][2].split()[0] if doc and doc[0][2] else None)
        check("docs/SERVE.md's Clients table: %s (%s): %s by default, ID %s" % (
            row, ", ".join(sorted(str(v) for v in got["versions"])), want and want[0], want and want[1]),
            want is not None and len(doc) == 1 and cells == want,
            "measured %r; the table's row: %r" % (got, doc))
    ran = [r[0] for r in rows if not any(re.match(re.escape(row) + r"\b", r[0]) for row in MEASURED)]
    check("docs/SERVE.md's Clients table: every row is a client this suite ran (%d rows)" % len(rows),
          rows and not ran, "not run: %s" % ran)


if __name__ == "__main__":
    run_suite("clients",
              before=[("npm: ioredis 5 and 6, node-redis 4, 5 and 6", group_npm_install),
                      ("hiredis: compile clients_hiredis.c", group_build_hiredis)],
              with_daemon=[("redis-cli", group_redis_cli),
                           ("redis-py: sync and asyncio, each parser", group_redis_py),
                           ("hiredis (C)", group_hiredis)]
              + [("%s %s" % (name, major), js_group(name, pkg, major)) for name, pkg, major in JS_CLIENTS],
              after=[("the checks fail on a doctored result", group_doctored),
                     ("docs/SERVE.md's Clients table", group_docs)],
              snow_kinds=["redis-cli", "redis-py", "hiredis", "ioredis", "node-redis"])
