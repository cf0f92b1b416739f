#!/usr/bin/env python3
"""python_bench.py -- idgen's Python package beside the stdlib and the
packages Python users pick (`make bench-python`; docs/BENCHMARKS.md,
"Python").

    bench/python_bench.py BUILD_DIR [--runs N] [--calls N] [--peers DIR]

Per call and per batch, the median of N runs (default 7) of N calls
(default 200,000): idgen's Snowflake next() (static and leased from a file:
registry), next_batch(1000) per ID, ulid(), ULIDGenerator.next(), uuid7(),
UUID7Generator.next(), decode(); uuid.uuid4() and uuid.uuid1(); python-ulid
(ULID() and str(ULID())), uuid6 (uuid7(), uuid6()) and snowflake-id
(SnowflakeGenerator).  Each generator is checked for duplicates over
1,000,000 IDs in one process and over 4 processes (forked, 250,000 each,
started together, each making its own generator as a service's workers
would); a peer with a duplicate is not "correct".  The ratio is the fastest
correct peer's time per call over idgen's.  Beside it, the C library's cost
for the same operation in this run (BUILD_DIR/idgen-bench).

Peers are installed with pip into a temporary virtual environment under
/tmp (never into the tree); where pip cannot reach PyPI, --peers DIR (or
IDGEN_PY_PEERS) names a folder holding their public repositories' sources
(mdomke/python-ulid, oittaa/uuid6-python, vd2org/snowflake: `git clone` or
an archive of each), which are put on sys.path; peers found neither way are
left out, and the report says so.
"""
import argparse
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

PEER_SOURCES = {  # import name: (repository, folder of the package inside it, PyPI name)
    "ulid": ("mdomke/python-ulid", "", "python-ulid"),
    "uuid6": ("oittaa/uuid6-python", "src", "uuid6"),
    "snowflake": ("vd2org/snowflake", "src", "snowflake-id"),
}


def load_peers(tmp, peers_dir):
    """Makes the peers importable; returns {import name: how it was got}."""
    got = {}
    venv = os.path.join(tmp, "venv")
    r = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True)
    if r.returncode == 0:
        r = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check",
                            "--retries", "0", "--timeout", "10",
                            "python-ulid", "uuid6", "snowflake-id"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode == 0:
            site = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                                   "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True).stdout.strip()
            sys.path.append(site)
            return {k: "PyPI" for k in PEER_SOURCES}
    for name, (repo, sub, dist) in PEER_SOURCES.items():
        if not peers_dir:
            continue
        for cand in (repo.replace("/", "+"), repo.split("/")[1], repo.replace("/", "_")):
            root = os.path.join(peers_dir, cand)
            if os.path.isdir(os.path.join(root, sub, name)):
                path = os.path.join(root, sub)
                sys.path.append(path)
                # Some read their version from installed metadata: a stub of it.
                meta = os.path.join(tmp, "meta", dist.replace("-", "_") + "-0.0.0.dist-info")
                os.makedirs(meta, exist_ok=True)
                with open(os.path.join(meta, "METADATA"), "w") as f:
                    f.write("Metadata-Version: 2.1\nName: %s\nVersion: 0.0.0\n" % dist)
                if os.path.join(tmp, "meta") not in sys.path:
                    sys.path.append(os.path.join(tmp, "meta"))
                rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True).stdout.strip()
                got[name] = "github.com/%s%s" % (repo, "@" + rev if rev else " (source)")
                break
    return got


def per_call(f, calls, runs):
    """Median ns per call of f() over `runs` runs of `calls` calls."""
    rng = range(calls)
    out = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        for _ in rng:
            f()
        out.append((time.perf_counter_ns() - t) / calls)
    return statistics.median(out)


def per_batch(f, size, calls, runs):
    rng = range(max(1, calls // size))
    out = []
    for _ in range(runs):
        t = time.perf_counter_ns()
        for _ in rng:
            f(size)
        out.append((time.perf_counter_ns() - t) / (len(rng) * size))
    return statistics.median(out)


def _child(make, n, q):
    f = make()
    q.put([f() for _ in range(n)])


def duplicates(make, n=1_000_000, procs=4):
    """(duplicates in one process over n, duplicates over procs processes of
    n/procs each, order violations in one process, calls that gave no ID)."""
    f = make()
    ids = [f() for _ in range(n)]
    bad = sum(1 for x in ids if x is None)  # snowflake-id: None when a millisecond runs out
    ids = [x for x in ids if x is not None]
    one = len(ids) - len(set(ids))
    order = sum(1 for a, b in zip(ids, ids[1:]) if not a < b)
    del ids
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    ps = [ctx.Process(target=_child, args=(make, n // procs, q)) for _ in range(procs)]
    for p in ps:
        p.start()
    allids = []
    for _ in ps:
        allids.extend(x for x in q.get() if x is not None)
    for p in ps:
        p.join()
    return one, len(allids) - len(set(allids)), order, bad


def c_costs(build):
    """ns per ID of the C library's same operations (idgen-bench, this run)."""
    exe = os.path.join(build, "idgen-bench")
    want = {
        "next": "next wide 1 thread fast-clock",
        "next bound": "next 1 thread, bound to file:",
        "next_n": "next_n(1000) wide",
        "ulid": "ulid new+encode precise-clock",
        "ulid mono": "ulid monotonic+encode fast-clock",
        "uuid7": "uuid7 new (fast clock)",
        "uuid7 mono": "uuid7 monotonic fast-clock",
        "decode": "decompose twitter",
        "ulid decode": "ulid decode (strict, validating)",
    }
    out = {}
    for key, name in want.items():
        r = subprocess.run([exe, "--runs", "3", "--seconds", "0.2", "--only", name],
                           capture_output=True, text=True)
        for line in r.stdout.splitlines():
            m = re.match(r"(.*?)\s+([0-9.]+) ns/ID", line)
            if m and m.group(1).strip() == name:
                out[key] = float(m.group(2))
                break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=200_000)
    ap.add_argument("--peers", default=os.environ.get("IDGEN_PY_PEERS", ""))
    ap.add_argument("--dup-n", type=int, default=1_000_000)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.build, "python"))
    import idgen

    tmp = tempfile.mkdtemp(prefix="idgen-pybench-")
    reg = "file:" + os.path.join(tmp, "registry")
    try:
        got = load_peers(tmp, a.peers)
        print("Python %s; idgen %s (build/python); peers: %s" % (
            sys.version.split()[0], idgen.library_version,
            ", ".join("%s from %s" % (k, v) for k, v in got.items()) or "none (stdlib only)"))
        missing = [k for k in PEER_SOURCES if k not in got]
        if missing:
            print("not measured (neither pip nor --peers had them): " + ", ".join(missing))

        static = idgen.Snowflake(registry="static", node="datacenter=1,worker=1")
        leased = idgen.Snowflake(registry=reg)
        ug, vg = idgen.ULIDGenerator(), idgen.UUID7Generator()
        sid = str(static.next())
        # name, kind, per-call function, maker for the duplicate check
        rows = [
            ("idgen Snowflake.next() static", "snowflake", static.next,
             lambda: idgen.Snowflake(registry=reg).next),
            ("idgen Snowflake.next() file: lease", "snowflake", leased.next, None),
            ("idgen ulid()", "ulid", idgen.ulid, lambda: idgen.ulid),
            ("idgen ULIDGenerator.next()", "ulid", ug.next, lambda: idgen.ULIDGenerator().next),
            ("idgen uuid7()", "uuid7", idgen.uuid7, lambda: idgen.uuid7),
            ("idgen UUID7Generator.next()", "uuid7", vg.next, lambda: idgen.UUID7Generator().next),
            ("idgen decode(snowflake text)", "decode", lambda: idgen.decode(sid), None),
            ("idgen decode(ULID text)", "decode", lambda u=idgen.ulid(): idgen.decode(u), None),
            ("stdlib uuid.uuid4()", "uuid", uuid.uuid4, lambda: uuid.uuid4),
            ("stdlib uuid.uuid1()", "uuid", uuid.uuid1, lambda: uuid.uuid1),
        ]
        if "ulid" in got:
            import ulid
            rows += [("python-ulid ULID()", "ulid", ulid.ULID, lambda: ulid.ULID),
                     ("python-ulid str(ULID())", "ulid", lambda: str(ulid.ULID()),
                      lambda: (lambda: str(ulid.ULID()))),
                     ("python-ulid ULID.from_str()", "decode",
                      lambda s=str(ulid.ULID()): ulid.ULID.from_str(s).timestamp, None)]
        if "uuid6" in got:
            import uuid6
            rows += [("uuid6 uuid7()", "uuid7", uuid6.uuid7, lambda: uuid6.uuid7),
                     ("uuid6 uuid6()", "uuid", uuid6.uuid6, lambda: uuid6.uuid6)]
        if "snowflake" in got:
            import snowflake
            rows += [("snowflake-id SnowflakeGenerator(1)", "snowflake",
                      (lambda g=snowflake.SnowflakeGenerator(1): next(g)),
                      lambda: (lambda g=snowflake.SnowflakeGenerator(1): next(g)))]

        res = []
        for name, kind, f, make in rows:
            ns = per_call(f, a.calls, a.runs)
            dup = duplicates(make, a.dup_n) if make else None
            res.append((name, kind, ns, dup))
            print("  %-38s %9.1f ns/call  %s" % (name, ns, "duplicates (1 process, 4), order violations, no ID: %s" % (dup,)
                                                   if dup else ""), flush=True)
        nb = per_batch(static.next_batch, 1000, a.calls * 5, a.runs)
        print("  %-38s %9.1f ns/ID" % ("idgen Snowflake.next_batch(1000)", nb))
        cc = c_costs(a.build)

        print("\nC library, same run (idgen-bench, ns/ID): " +
              ", ".join("%s %.1f" % kv for kv in cc.items()))

        def correct(r):
            if r[1] == "decode":  # nothing made: nothing to repeat
                return True
            return r[3] is not None and r[3][0] == 0 and r[3][1] == 0 and r[3][3] == 0

        peers = [r for r in res if not r[0].startswith("idgen") and correct(r)]
        failed = [r for r in res if not r[0].startswith("idgen") and r[3] and not correct(r)]
        makers = [r for r in peers if r[1] != "decode"]
        fastest = min(makers, key=lambda r: r[2]) if makers else None
        print("\n| operation | idgen ns/call | C library ns/ID | fastest correct peer | ratio |")
        print("|---|---|---|---|---|")
        cmap = {"idgen Snowflake.next() static": "next", "idgen Snowflake.next() file: lease":
                "next bound", "idgen ulid()": "ulid", "idgen ULIDGenerator.next()": "ulid mono",
                "idgen uuid7()": "uuid7", "idgen UUID7Generator.next()": "uuid7 mono",
                "idgen decode(snowflake text)": "decode",
                "idgen decode(ULID text)": "ulid decode"}
        for name, kind, ns, dup in res:
            if not name.startswith("idgen"):
                continue
            same = [r for r in peers if r[1] == kind] or ([fastest] if fastest and kind != "decode"
                                                          else [])
            best = min(same, key=lambda r: r[2]) if same else None
            c = cc.get(cmap.get(name, ""), float("nan"))
            print("| %s | %.1f | %.1f | %s | %s |" % (
                name[6:], ns, c, "%s %.1f ns" % (best[0], best[2]) if best else "none",
                "%.2fx" % (best[2] / ns) if best else ""))
        print("| Snowflake.next_batch(1000), per ID | %.1f | %.1f | | |" % (nb, cc.get("next_n", float("nan"))))
        if fastest:
            s = [r for r in res if r[0] == "idgen Snowflake.next() static"][0]
            print("\nSnowflake next() against the fastest correct peer of any kind (%s, %.1f ns): %.2fx"
                  % (fastest[0], fastest[2], fastest[2] / s[2]))
        for r in failed:
            print("not correct: %s: %d duplicates in one process, %d across 4 processes, "
                  "%d calls without an ID" % (r[0], r[3][0], r[3][1], r[3][3]))
        static.close()
        leased.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
