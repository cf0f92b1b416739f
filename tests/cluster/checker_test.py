#!/usr/bin/python3
"""checker_test.py -- the cluster test's checker, fed synthetic runs.

    tests/cluster/checker_test.py tests/cluster/checker.py

A clean run of two daemons must pass; the same run with one planted defect
(a duplicate ID, an order violation, a write after fencing, an answer above
the durable mark, a refusal longer than the recovery bound) must fail, and
fail on that check alone; things that are legal (IDs lower after a restart,
overlapping requests answered out of order, a long refusal after a clock
step) must not fail; a malformed file is exit 2 naming the file and line.
"""
import os
import shutil
import subprocess
import sys
import tempfile

CHECKER = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else \
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "checker.py")
EPOCH, SHIFT, MASK = 1288834974657, 22, 0x3ff000
UNIX0 = 1_790_000_000_000  # ms: the wall clock at monotonic 0
S = 1_000_000_000
CHECKS = ("duplicate", "order", "superseded", "mark", "recovery")


def make_id(ms, node, seq):
    return ((ms - EPOCH) << SHIFT) | (node << 12) | seq


class Run:
    """Two daemons, d1 (worker 1, pid 101) and d2 (worker 2, pid 102); a
    request each every 10 ms on RESP for 20 s; d1 partitioned 5..7 s and
    refusing until 7.5 s; the registry observed every 250 ms, marks 3 s ahead."""

    def __init__(self):
        self.meta = {"epoch_ms": EPOCH, "time_shift": SHIFT, "node_mask": hex(MASK),
                     "backend": "synthetic", "ttl_ms": 2000, "quarantine_ms": 2000,
                     "acquire_ms": 1500, "hosts": ["d1", "d2"], "seed": 1,
                     "mono_to_unix_ns": UNIX0 * 1000000}
        self.incs = [["d1", 101, 0, "-"], ["d2", 102, 0, "-"]]
        self.conns = [["d1", "resp", 1, 10], ["d2", "resp", 2, 10]]
        self.hist, self.reg = [], []
        self.node = {"d1": 1, "d2": 2}
        for i in range(1, 2000):
            t = i * 10_000_000
            for host, conn in (("d1", 1), ("d2", 2)):
                if host == "d1" and 5 * S <= t < 7.5 * S:
                    self.hist.append([host, "resp", conn, t, t + 300_000, "refused",
                                      "ERR lease lost 42 ms ago"])
                    continue
                self.answer(host, conn, t, t + 300_000)
        for i in range(80):
            t = i * 250_000_000
            for host, pid in (("d1", 101), ("d2", 102)):
                self.reg.append([t, t + 5_000_000, hex(self.node[host] << 12), 1, pid,
                                 UNIX0 + t // 1000000 + 3000, "held"])
        self.faults = [["partition", "partition", "d1", 5 * S, 7 * S, 1]]
        self.phases = [["baseline", 0, 5 * S], ["partition", 5 * S, 20 * S]]
        self.load = [["d1", "baseline", 5.0, 0, 7, 5], ["d2", "baseline", 5.0, 0, 8, 5]]
        self.cpu = [["idle", 3.0, 0, 6.0], ["baseline", 5.0, 25, 50.0]]

    def answer(self, host, conn, send, recv, ms=None, node=None):
        ms = UNIX0 + send // 1000000 if ms is None else ms
        node = self.node[host] if node is None else node
        ids = [make_id(ms, node, s) for s in range(3)]
        self.hist.append([host, "resp", conn, send, recv, "ok", ",".join(map(str, ids))])
        return ids

    def write(self, d):
        def tsv(name, rows):
            with open(os.path.join(d, name), "w") as f:
                f.writelines("\t".join(map(str, r)) + "\n" for r in rows)
        import json
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(self.meta, f)
        tsv("incarnations.tsv", self.incs)
        tsv("conns.tsv", self.conns)
        tsv("history.tsv", sorted(self.hist, key=lambda r: r[4]))
        tsv("registry.tsv", self.reg)
        tsv("faults.tsv", self.faults)
        tsv("phases.tsv", self.phases)
        tsv("load.tsv", self.load)
        tsv("registry_cpu.tsv", self.cpu)


def find(run, host, at):
    """The history row of HOST's request sent at AT ns."""
    for r in run.hist:
        if r[0] == host and r[3] == at:
            return r
    raise KeyError((host, at))


# -- the plants: each returns the check that must fail (None: must pass) --

def clean(run):
    return None


def duplicate(run):
    # d1 answers, on a second connection at 11.5 s, an ID it answered at
    # 11 s: a duplicate and nothing else (its IDs are d1's worker's, under
    # d1's marks, and the request overlaps none that came back after 11 s)
    dup = find(run, "d1", 11 * S)[6].split(",")[1]
    run.conns.append(["d1", "http", 3, 11 * S])
    run.hist.append(["d1", "http", 3, 10 * S, 11_500_000_000, "ok", dup])
    return "duplicate"


def order(run):
    # d2's answer at 15 s carries IDs of 14.5 s (unique: 14.5 s's request
    # had its own, and these are seq 5..7, never issued)
    r = find(run, "d2", 15 * S)
    ms = UNIX0 + 14_500
    r[6] = ",".join(str(make_id(ms, 2, s)) for s in (5, 6, 7))
    return "order"


def order_in_answer(run):
    r = find(run, "d2", 15 * S)
    ids = r[6].split(",")
    r[6] = ",".join([ids[1], ids[0], ids[2]])
    return "order"


def superseded(run):
    # From 10 s the registry shows worker 1 held by pid 102 at generation 2
    # (d2 also answers as worker 1 meanwhile is not needed: the observer
    # says so); d1 (pid 101) goes on answering as worker 1.
    for r in run.reg:
        if r[2] == hex(1 << 12) and r[0] >= 10 * S:
            r[3], r[4] = 2, 102
    return "superseded"


def superseded_not_bracketed(run):
    # The same, but d1 took worker 1 back at generation 3 between two
    # observations: the answers in between are not judged, those after are
    # d1's own again.  Only answers bracketed by generation 2 are wrong,
    # and there are none if the generation-2 view lasts one poll.
    for r in run.reg:
        if r[2] == hex(1 << 12):
            if r[0] == 10 * S:
                r[3], r[4] = 2, 102
            elif r[0] > 10 * S:
                r[3] = 3
    return None


def mark(run):
    # the mark at 16 s is behind d1's answer at 15.9 s
    for r in run.reg:
        if r[2] == hex(1 << 12) and 15 * S < r[0] <= 16 * S:
            r[5] = UNIX0 + 15_000
    return "mark"


def recovery(run):
    # d1 refuses until 14 s after the partition ends at 7 s (bound 6.5 s)
    run.hist = [r for r in run.hist if not (r[0] == "d1" and 7.5 * S <= r[3] < 14 * S)]
    for i in range(750, 1400):
        t = i * 10_000_000
        run.hist.append(["d1", "resp", 1, t, t + 300_000, "refused", "ERR no lease"])
    return "recovery"


def recovery_after_clock(run):
    # The same long refusal, but the fault was a clock step: no bound
    recovery(run)
    run.faults = [["clock", "clock-10s", "d1", 5 * S, 7 * S, 0]]
    return None


def recovery_after_clock_catch_up(run):
    # The long refusal after the partition (5..7 s), but d1's clock was
    # stepped +10 s at 1..4.5 s: it ended before the partition began, and
    # d1 refuses until its clock catches up (14.5 s): no bound
    recovery(run)
    run.faults.append(["clock", "clock+10s", "d1", 1 * S, int(4.5 * S), 0])
    return None


def recovery_after_other_hosts_clock(run):
    # The same, but the clock step was d2's: d1's long refusal still fails
    recovery(run)
    run.faults.append(["clock", "clock+10s", "d2", 1 * S, int(4.5 * S), 0])
    return "recovery"


def recovery_overlapped(run):
    # d1 partitioned 5..7 s, then SIGSTOPped 7.2..12 s: the partition's
    # recovery counts from 12 s, and d1 answers again at 14 s: within bound
    recovery(run)
    run.faults.append(["sigstop", "sigstop", "d1", int(7.2 * S), 12 * S, 1])
    return None


def restart_lower(run):
    # d1 killed at 12 s and restarted as pid 103 whose clock is 2 s behind:
    # its IDs are lower than its previous incarnation's, which is legal (the
    # mark is per worker; here it is worker 3, a fresh one)
    run.incs[0][3] = 12 * S
    run.incs.append(["d1", 103, 12 * S + 1, "-"])
    run.conns.append(["d1", "resp", 4, 12 * S + 5])
    run.hist = [r for r in run.hist if not (r[0] == "d1" and r[3] >= 12 * S)]
    run.node["d1"] = 3
    for i in range(1210, 2000):
        t = i * 10_000_000
        run.answer("d1", 4, t, t + 300_000, ms=UNIX0 + t // 1000000 - 2000)
    for i in range(48, 80):
        t = i * 250_000_000
        run.reg.append([t, t + 5_000_000, hex(3 << 12), 1, 103, UNIX0 + t // 1000000 + 3000,
                        "held"])
    return None


def overlapping(run):
    # Two d2 requests that overlap: B sent at 13 s before A (sent 12.99 s)
    # came back at 13.2 s; B's IDs are below A's.  Legal: neither preceded
    # the other.
    a = find(run, "d2", 12_990_000_000)
    a[4] = 13_200_000_000
    run.conns.append(["d2", "http", 5, 10 * S])
    ms = UNIX0 + 12_985
    run.hist.append(["d2", "http", 5, 13 * S, 13 * S + 100_000, "ok",
                     ",".join(str(make_id(ms, 2, s)) for s in (7, 8, 9))])
    return None


def malformed(run):
    run.hist[5][3] = "soon"
    return "malformed"


PLANTS = [clean, duplicate, order, order_in_answer, superseded, superseded_not_bracketed, mark,
          recovery, recovery_after_clock, recovery_after_clock_catch_up,
          recovery_after_other_hosts_clock, recovery_overlapped, restart_lower, overlapping,
          malformed]


def main():
    failed = 0
    top = tempfile.mkdtemp(prefix="checker-test-")
    try:
        for plant in PLANTS:
            d = os.path.join(top, plant.__name__)
            os.makedirs(d)
            run = Run()
            expect = plant(run)
            run.write(d)
            args = [sys.executable, CHECKER, d]
            png = os.path.join(d, "timeline.png")
            if plant is clean:
                args += ["--plot", png]
            r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            why = []
            if expect == "malformed":
                if r.returncode != 2:
                    why.append("exit %d, expected 2" % r.returncode)
                if "history.tsv:6" not in r.stderr or "send_ns" not in r.stderr:
                    why.append("the message does not name history.tsv:6 and send_ns: %r" %
                               r.stderr)
            else:
                want = 1 if expect else 0
                if r.returncode != want:
                    why.append("exit %d, expected %d" % (r.returncode, want))
                for c in CHECKS:
                    line = [ln for ln in r.stdout.splitlines() if ln.strip().startswith(c + " ")]
                    bad = bool(line) and "FAILED" in line[0]
                    if not line:
                        why.append("no %s line in the summary" % c)
                    elif bad != (c == expect):
                        why.append("%s is %s" % (c, "FAILED" if bad else "ok"))
                if not os.path.exists(os.path.join(d, "summary.txt")):
                    why.append("no summary.txt")
                if plant is clean:
                    with open(png, "rb") as f:
                        if f.read(8) != b"\x89PNG\r\n\x1a\n":
                            why.append("timeline.png is not a PNG")
                    for text in ("availability", "time to answer again", "registry load",
                                 "1.40", "1.00", "40 ms above idle (1.60 ms a call)", "idle (no daemons): 2 ms a second"):
                        if text not in r.stdout:
                            why.append("the summary lacks %r" % text)
            print("%-26s %s" % (plant.__name__, "ok" if not why else "FAILED: " + "; ".join(why)))
            if why:
                failed += 1
                print(r.stdout[-3000:] + r.stderr[-2000:])
    finally:
        shutil.rmtree(top)
    print("checker_test: %d of %d failed" % (failed, len(PLANTS)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
