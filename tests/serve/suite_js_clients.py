#!/usr/bin/env python3
"""RESP through JavaScript's Redis clients, ioredis 5 and node-redis 4, installed
from npm at test time (into BUILD/npm-clients, beside the idgen under test;
never into the source tree).  JavaScript reads a RESP integer as a Number, so
`ID` comes back rounded above 2^53; `IDSTR` (a bulk string per ID) and ioredis's
`stringNumbers` are the exact paths, and this suite checks that they are:
every ID exact, unique and increasing for IDSTR, IDSTR N, pipelines and
node-redis's MULTI sent as a pipeline.

Usage: python3 tests/serve/suite_js_clients.py PATH/TO/idgen
       (or: ctest -R serve.js_clients)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()
import suite_tls  # noqa: E402  its certificates, and ioredis and node-redis over TLS

PACKAGES = {"ioredis": "5", "redis": "4"}
HERE = os.path.dirname(os.path.abspath(__file__))
NPM_DIR = os.path.join(os.path.dirname(os.path.abspath(IDGEN)), "npm-clients")


def installed_major(name):
    try:
        with open(os.path.join(NPM_DIR, "node_modules", name, "package.json")) as f:
            return json.load(f)["version"].split(".")[0]
    except (OSError, ValueError, KeyError):
        return None


def group_install():
    want = [n for n, major in PACKAGES.items() if installed_major(n) != major]
    if want:
        os.makedirs(NPM_DIR, exist_ok=True)
        p = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", NPM_DIR]
                           + ["%s@%s" % (n, PACKAGES[n]) for n in want],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=240)
        check("npm install %s" % " ".join("%s@%s" % (n, PACKAGES[n]) for n in want), p.returncode == 0,
              p.stdout.decode(errors="replace")[-1500:])
    for n, major in PACKAGES.items():
        check("%s %s.x is installed in %s" % (n, major, NPM_DIR), installed_major(n) == major,
              "found %r" % installed_major(n))


def group_clients(d):
    p = subprocess.run(["node", os.path.join(HERE, "js_clients.mjs"), os.path.join(NPM_DIR, "node_modules"),
                        str(d.resp)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    check("node js_clients.mjs exits 0", p.returncode == 0, p.stderr.decode(errors="replace")[-1500:])
    try:
        out = json.loads(p.stdout.decode())
    except ValueError:
        check("node js_clients.mjs prints its results as JSON", False, p.stdout[:500])
        return
    exact = (("ioredis_idstr", "ioredis IDSTR, IDSTR 3, a pipeline of 1000 IDSTR, IDSTR 100", 1104),
             ("ioredis_stringnumbers_id", "ioredis (stringNumbers) ID, ID 3, a pipeline of 1000 ID", 1004),
             ("noderedis_idstr", "node-redis IDSTR, IDSTR 3, 1000 IDSTR in flight, MULTI of 10 as a pipeline",
              1014))
    for key, what, n in exact:
        got = out.get(key, [])
        digits = all(re.fullmatch(r"[1-9][0-9]*", x) for x in got)
        check("%s: %d IDs, each a decimal string" % (what, n), len(got) == n and digits,
              "%d values, first %r" % (len(got), got[:3]))
        if digits:
            ids = [int(x) for x in got]
            check("%s: exact (below 2^63), unique and increasing" % what,
                  increasing(ids) and ids[-1] < 1 << 63, short(ids[:5]))
            add_snow(key.split("_")[0] + " " + key, ids)
    # What the integer reply gives a client that reads it as a Number: for
    # the record (the README's advice rests on it), not a check of ours.
    for key in ("ioredis_id_number", "noderedis_id_number"):
        print("  %s (read as a JS Number): %s" % (key, " ".join(out.get(key, []))), flush=True)


def group_auth():
    token = "0123456789abcdef0123456789abcdef"
    path = os.path.join(TMP, "tokens")
    with open(path, "w") as f:
        f.write("app %s\n" % token)
    os.chmod(path, 0o600)
    d = Daemon("auth", ["--auth-file", path])
    try:
        p = subprocess.run(["node", os.path.join(HERE, "js_clients_auth.mjs"), os.path.join(NPM_DIR, "node_modules"),
                            str(d.resp), "app", token], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        try:
            out = json.loads(p.stdout.decode())
        except ValueError:
            check("node js_clients_auth.mjs prints its results as JSON", False,
                  (p.stdout[:500], p.stderr.decode(errors="replace")[-1000:]))
            return
        for key, what in (("ioredis_options", "ioredis with username and password"),
                          ("ioredis_url", "ioredis with redis://app:TOKEN@host:port"),
                          ("noderedis_url", "node-redis 4 with redis://app:TOKEN@host:port")):
            check("auth_file: %s gets an ID" % what, re.fullmatch(r"[1-9][0-9]*", out.get(key, "")), out.get(key))
        for key, what in (("ioredis_wrong", "ioredis"), ("noderedis_wrong", "node-redis 4")):
            check("auth_file: %s with a wrong token is refused (WRONGPASS)" % what,
                  "WRONGPASS" in out.get(key, ""), out.get(key))
    finally:
        d.stop()


def group_tls():
    suite_tls.group_js_tls(os.path.join(NPM_DIR, "node_modules"))


if __name__ == "__main__":
    run_suite("js_clients",
              before=[("npm: ioredis 5 and node-redis 4", group_install)],
              with_daemon=[("JavaScript clients: IDSTR and stringNumbers", group_clients)],
              after=[("JavaScript clients with auth_file", group_auth),
                     ("JavaScript clients over TLS", group_tls)],
              snow_kinds=["ioredis", "noderedis"])
