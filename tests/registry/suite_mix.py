#!/usr/bin/env python3
"""Node tuples: a lease stands for all node fields, whichever is leased
(tests/registry/harness.py says how the suites fit).  Daemons and
command-line holders of every lease field mixed, with restarts under a clock
10 s behind and removed records, on file: and a PostgreSQL; two layouts
racing for two ID spaces on file:, PostgreSQL and etcd.  (The default
registry, from several users and working directories:
tests/default_registry_test.sh.  Every pair of lease fields on one tuple is
part of the contract, suite_contract.py.)

Usage: python3 tests/registry/suite_mix.py PATH/TO/idgen  (or: ctest -R registry_mix)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()


def apart(label, holders):
    """holders: (name, IDs) pairs.  No ID is issued twice, and per node
    tuple the holders' ID ranges do not overlap: no two holders held one
    tuple at the same time."""
    every = [i for _, ids in holders for i in ids]
    check("%s: no duplicate among %d IDs from %d holders" % (label, len(every), len(holders)),
          len(set(every)) == len(every), "%d duplicates" % (len(every) - len(set(every))))
    ranges = {}
    for name, ids in holders:
        by = {}
        for i in ids:
            by.setdefault(mix_tuple(i), []).append(i)
        for t, xs in by.items():
            ranges.setdefault(t, []).append((min(xs), max(xs), name))
    shared = []
    for t, rs in ranges.items():
        rs.sort()
        for a, b in zip(rs, rs[1:]):
            if b[0] <= a[1]:
                shared.append((t, a[2], b[2]))
    check("%s: no node tuple held by two holders at once (%d tuples)" % (label, len(ranges)),
          not shared, shared[:4])


def mix_run(registry, label, remove):
    """Three daemons and three `idgen snowflake` holders per configuration
    (lease region, datacenter or worker; the others 0) at once on one
    registry, from three working directories (file: given relative to each
    of them); then one daemon per configuration stopped, its tuple's record
    removed (remove(key)), and restarted under a clock 10 s behind, with
    three more command-line holders under that clock.  No duplicate ID and
    no tuple held twice at once."""
    cwds = []
    for k in range(3):
        cwds.append(os.path.join(TMP, "%s-cwd%d" % (label, k), "sub" * k))
        os.makedirs(cwds[-1], exist_ok=True)
    root = registry[len("file:"):] if registry.startswith("file:") else None

    def reg_for(k):  # file: relative to the working directory, resolved at start
        return "file:" + os.path.relpath(root, cwds[k]) if root and k else registry

    daemons, holders = [], []
    for f in MIX_FIELDS:
        for k in range(3):
            daemons.append(Daemon("%s-%s-%d" % (label, f, k), ["--registry", reg_for(k)] +
                                  mix_args(f), cwd=cwds[k]))
    got = {d.name: [] for d in daemons}

    def run_all(clis, what):
        """Takes IDs from every daemon while the command-line holders run:
        3 batches each, within 20 s (a daemon just restarted may still be
        taking its lease: under TSan, beside the other tests, that has taken
        longer than its first requests)."""
        deadline = time.time() + 20
        for _ in range(3):
            for d in daemons:
                ids = d.ids(2000)
                while ids is None and time.time() < deadline:
                    time.sleep(0.1)
                    ids = d.ids(2000)
                got[d.name] += ids or []
        results = [cli_done(h) for h in clis]
        bad = [(n, rc, m) for n, rc, ids, m in results if rc != 0]
        short = [(d.name, len(got[d.name])) for d in daemons if len(got[d.name]) < 6000]
        check("%s: %s" % (label, what), not bad and not short, (bad[:3], short[:3]))
        holders.extend((n, ids) for n, rc, ids, m in results)

    run_all([cli_holder("%s-cli-%s-%d" % (label, f, k), reg_for(k), f, cwds[k])
             for f in MIX_FIELDS for k in range(3)],
            "9 daemons and 9 command-line holders at once")
    if root:
        logs = "".join(d.log() for d in daemons)
        rel = [m for m in re.findall(r"event=(?:start|lease) .*?registry=(\S+)", logs)]
        check("%s: every daemon logs the registry's absolute path" % label,
              rel and all(r == "file:" + os.path.realpath(root) for r in rel), set(rel))
    # One daemon per configuration: stopped, its tuple's record removed,
    # restarted under a clock 10 s behind.
    fake = {}
    if ASAN:
        print("SKIP %s: the clock 10 s behind (libfaketime cannot be preloaded into ASan)" % label)
    else:
        fake = {"LD_PRELOAD": FAKETIME, "FAKETIME": "-10s", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    for c, f in enumerate(MIX_FIELDS):
        d = daemons[3 * c]
        ids = got[d.name]
        d.stop()
        if ids:
            try:
                remove(mix_tuple(ids[0]) << 11)
            except OSError as e:
                check("%s: the record of the stopped daemon's tuple removed" % label, False, e)
        n = Daemon(d.name + "-again", ["--registry", registry, "--max-borrow-ms", "30000"] +
                   mix_args(f), env=fake, cwd=cwds[1])
        daemons[3 * c] = n
        got[n.name] = []
    run_all([cli_holder("%s-cli2-%s-%d" % (label, f, k), reg_for(k), f, cwds[k], env=fake,
                        extra=["--max-borrow-ms", "30000"]) for f in MIX_FIELDS for k in range(3)],
            "after the restarts under a clock 10 s behind, all serve")
    for d in daemons:
        d.stop()
    holders += list(got.items())
    apart(label, holders)


def mix_spaces(registry, label):
    """Two layouts (twitter's, and its 10 node bits split 5+6 with an 11-bit
    sequence) and two named spaces on one registry, 12 holders started at
    once: in each space 3 daemons and 3 `idgen snowflake` holders, of both
    layouts.  In each space one layout wins and the other's holders are
    refused, naming it (IDGEN_ESPACE; counted); no ID is issued twice within
    a space (across spaces they may be: a space is its own ID space)."""
    lays = {"twitter": ["--layout", "twitter"], "seq11": ["--layout", SEQ11]}
    daemons, clis, refused, other = [], [], {}, []
    plan = {"alpha": (["twitter", "seq11", "twitter"], ["seq11", "twitter", "seq11"]),
            "beta": (["seq11", "twitter", "seq11"], ["twitter", "seq11", "twitter"])}
    for sp, (ds, cs) in plan.items():
        reg = in_space(registry, sp)
        for k, lay in enumerate(ds):
            d = Daemon("%s-%s-d%d-%s" % (label, sp, k, lay), ["--registry", reg] + lays[lay],
                       wait=False)
            daemons.append((sp, lay, d))
        for k, lay in enumerate(cs):
            clis.append((sp, lay, cli_holder("%s-%s-c%d-%s" % (label, sp, k, lay), reg, None,
                                             None, n=200000 // SCALE, extra=lays[lay])))
    ids = {sp: [] for sp in plan}
    served = {sp: set() for sp in plan}
    for sp, lay, d in daemons:
        if d.wait_listening(30):
            got = []
            for _ in range(3):
                got += d.ids(2000) or []
            ids[sp] += got
            if got:
                served[sp].add(lay)
        else:
            log = d.log()
            if "is in use by layout" in log:
                refused[sp] = refused.get(sp, 0) + 1
            else:
                other.append((d.name, log[-300:]))
    for sp, lay, h in clis:
        name, rc, got, msg = cli_done(h)
        if rc == 0:
            ids[sp] += got
            served[sp].add(lay)
        elif rc == 1 and "is in use by layout" in msg:
            refused[sp] = refused.get(sp, 0) + 1
        else:
            other.append((name, rc, msg))
    for _, _, d in daemons:
        d.stop()
    check("%s: every holder served or was refused for the ID space, nothing else" % label,
          not other, other[:3])
    for sp in plan:
        every = ids[sp]
        check("%s: space %s: no duplicate among %d IDs (layouts that served: %s)" %
              (label, sp, len(every), ", ".join(sorted(served[sp]))),
              every and len(set(every)) == len(every),
              "%d duplicates" % (len(every) - len(set(every))))
        check("%s: space %s: %d of 6 holders refused (two layouts raced)" %
              (label, sp, refused.get(sp, 0)), refused.get(sp, 0) >= 1, refused)


def file_remover(registry):
    root = registry[len("file:"):]

    def remove(key):
        os.unlink(os.path.join(root, MIX_POOL, "%016x.lock" % key))
    return remove


def pg_remover(pg):
    def remove(key):
        r = subprocess.run(["psql", "-q", "-X", pg.uri, "-c",
                            "DELETE FROM idgen.idgen_nodes WHERE pool = '%s' AND node = %d" %
                            (MIX_POOL, key)], capture_output=True, text=True)
        if r.returncode != 0:
            raise OSError(r.stderr)
    return remove


def main():
    reg = WORK.registry("reg-mix")
    mix_run(reg, "file mix", file_remover(reg))
    mix_spaces(reg, "file spaces mix")
    pg = postgres()
    try:
        mix_run(pg.uri, "postgres mix", pg_remover(pg))
        mix_spaces(pg.uri, "postgres spaces mix")
    finally:
        pg.stop()
    etcd = etcd_cluster()
    try:
        mix_spaces(etcd.uri, "etcd spaces mix")
    finally:
        etcd.stop()


if __name__ == "__main__":
    run(main)
