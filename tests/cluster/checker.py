#!/usr/bin/python3
"""checker.py -- judges a run of the multi-host fault test (cluster.py).

    tests/cluster/checker.py RUN_DIR [--plot PNG] [--slack-ms MS]

Reads the run directory that cluster.py wrote and fails (exit 1) on any of:

  duplicate   an ID answered twice, by any daemon, in any answer
  order       one daemon process (an incarnation) answered B after A had been
              received (A.recv < B.send) with an ID not above all of A's, or
              one answer's IDs not strictly increasing.  Requests that overlap
              in time are not ordered; neither are two incarnations of a host
              (a restarted daemon may hold another worker ID).
  superseded  a daemon answered with the worker ID K while another process
              held K under one generation G for the whole request: an
              observation of the registry that ended before the request was
              sent, and another that began after its answer came back, both
              show K held by that other process at generation G.  (A holder's
              own re-acquisition would bump the generation, so this is never a
              false alarm; an answer the observations do not bracket is not
              judged.)
  mark        an ID whose millisecond is above the durable mark the registry
              showed for its worker ID in the first observation that began
              after the answer was received (a mark only grows, and a holder
              writes it before it answers past it)
  recovery    after a fault with a bound (every fault but a clock step), the
              host's first answer came later than TTL + quarantine + one
              acquisition + slack after the fault ended, counting from the end
              of the last fault that overlapped it on that host; not judged
              while a clock step on the host, or its catch-up (as long as the
              step), overlaps the wait

It reports availability per host and phase (the fraction of requests
answered, p50 and p99 latency of the answers), the time each host took to
answer again after each fault, the refusals by class, and the registry load
per host.  The report goes to stdout and RUN_DIR/summary.txt; --plot writes a
PNG timeline: one row per host, answered and refused requests per second,
fault windows shaded, phases marked.

Exit status: 0 the run passed, 1 a check failed, 2 the run directory is
unreadable or malformed (the message names the file and line).

The run directory (tab-separated, times in CLOCK_MONOTONIC ns):
  meta.json          epoch_ms, time_shift, node_mask, ttl_ms, quarantine_ms,
                     acquire_ms, hosts, backend, seed, mono_to_unix_ns
  history.tsv        host proto conn send_ns recv_ns ok|refused|error payload
                     (ok: the IDs, comma-separated; conn 0: no connection)
  conns.tsv          host proto conn open_ns
  incarnations.tsv   host pid start_ns end_ns|-
  registry.tsv       t0_ns t1_ns key generation holder_pid|- mark_ms state
  faults.tsv         phase fault hosts|* start_ns end_ns bound(1|0)
  phases.tsv         phase start_ns end_ns
  load.tsv           host window seconds acquisitions renewals mark_writes
  registry_cpu.tsv   window seconds calls cpu_ms
"""
import argparse
import bisect
import collections
import json
import os
import re
import sys

FAIL, BAD = 1, 2
MAX_REPORTED = 10  # violations printed per check; all are counted


class Malformed(Exception):
    pass


def read_tsv(path, fields, required=True):
    """Rows of PATH split on tabs, each with at least FIELDS fields (the last
    one keeps any further tabs).  A missing optional file is no rows."""
    rows = []
    try:
        f = open(path)
    except FileNotFoundError:
        if required:
            raise Malformed("%s: missing" % path)
        return rows
    with f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("\t", fields - 1)
            if len(parts) < fields:
                raise Malformed("%s:%d: %d fields, expected %d: %r" %
                                (path, n, len(parts), fields, line[:80]))
            rows.append((n, parts))
    return rows


def num(path, n, text, what):
    try:
        return int(text)
    except ValueError:
        raise Malformed("%s:%d: %s is not an integer: %r" % (path, n, what, text))


def fnum(path, n, text, what):
    try:
        return float(text)
    except ValueError:
        raise Malformed("%s:%d: %s is not a number: %r" % (path, n, what, text))


Answer = collections.namedtuple("Answer", "host proto conn send recv status payload ids inc")
Incarnation = collections.namedtuple("Incarnation", "host pid start end")
Obs = collections.namedtuple("Obs", "t0 t1 key gen pid mark state")
Fault = collections.namedtuple("Fault", "phase kind hosts start end bound")


class RunData:
    def __init__(self, d):
        self.dir = d
        p = lambda name: os.path.join(d, name)
        try:
            with open(p("meta.json")) as f:
                self.meta = json.load(f)
        except FileNotFoundError:
            raise Malformed("%s: missing" % p("meta.json"))
        except ValueError as e:
            raise Malformed("%s: not JSON: %s" % (p("meta.json"), e))
        for k in ("epoch_ms", "time_shift", "node_mask", "ttl_ms", "quarantine_ms",
                  "acquire_ms", "hosts"):
            if k not in self.meta:
                raise Malformed("%s: no %r" % (p("meta.json"), k))
        try:
            self.node_mask = int(str(self.meta["node_mask"]), 0)
        except ValueError:
            raise Malformed("%s: node_mask %r is not an integer" %
                            (p("meta.json"), self.meta["node_mask"]))
        self.hosts = list(self.meta["hosts"])

        path = p("incarnations.tsv")
        self.incs = collections.defaultdict(list)  # host -> [Incarnation] by start
        for n, r in read_tsv(path, 4):
            end = None if r[3] == "-" else num(path, n, r[3], "end")
            self.incs[r[0]].append(Incarnation(r[0], num(path, n, r[1], "pid"),
                                               num(path, n, r[2], "start"), end))
        for v in self.incs.values():
            v.sort(key=lambda i: i.start)

        path = p("conns.tsv")
        self.conn_inc = {}  # conn -> Incarnation: the one started last before the connect
        for n, r in read_tsv(path, 4):
            conn, opened = num(path, n, r[2], "conn"), num(path, n, r[3], "open_ns")
            self.conn_inc[conn] = self.incarnation_at(r[0], opened)

        path = p("history.tsv")
        self.answers = []
        for n, r in read_tsv(path, 7):
            host, proto, status, payload = r[0], r[1], r[5], r[6]
            conn = num(path, n, r[2], "conn")
            send, recv = num(path, n, r[3], "send_ns"), num(path, n, r[4], "recv_ns")
            if status not in ("ok", "refused", "error"):
                raise Malformed("%s:%d: status %r is not ok, refused or error" % (path, n, status))
            if recv < send:
                raise Malformed("%s:%d: received before sent" % (path, n))
            ids = ()
            if status == "ok":
                try:
                    ids = tuple(int(x) for x in payload.split(","))
                except ValueError:
                    raise Malformed("%s:%d: an answer that is not IDs: %r" %
                                    (path, n, payload[:80]))
                if conn not in self.conn_inc:
                    raise Malformed("%s:%d: an answer on connection %d, which conns.tsv "
                                    "does not open" % (path, n, conn))
            self.answers.append(Answer(host, proto, conn, send, recv, status, payload, ids,
                                       self.conn_inc.get(conn)))

        path = p("registry.tsv")
        self.obs = collections.defaultdict(list)  # key -> [Obs] by t0
        for n, r in read_tsv(path, 7):
            pid = None if r[4] == "-" else num(path, n, r[4], "holder_pid")
            try:
                key = int(r[2], 0)
            except ValueError:
                raise Malformed("%s:%d: key %r is not an integer" % (path, n, r[2]))
            self.obs[key].append(Obs(num(path, n, r[0], "t0"), num(path, n, r[1], "t1"), key,
                                     num(path, n, r[3], "generation"), pid,
                                     num(path, n, r[5], "mark_ms"), r[6]))
        for v in self.obs.values():
            v.sort(key=lambda o: o.t0)

        path = p("faults.tsv")
        self.faults = []
        for n, r in read_tsv(path, 6):
            hosts = self.hosts if r[2] == "*" else r[2].split(",")
            self.faults.append(Fault(r[0], r[1], hosts, num(path, n, r[3], "start"),
                                     num(path, n, r[4], "end"), num(path, n, r[5], "bound")))
        path = p("phases.tsv")
        self.phases = [(r[0], num(path, n, r[1], "start"), num(path, n, r[2], "end"))
                       for n, r in read_tsv(path, 3)]
        path = p("load.tsv")
        self.load = [(r[0], r[1], fnum(path, n, r[2], "seconds"), num(path, n, r[3], "acquire"),
                      num(path, n, r[4], "renew"), num(path, n, r[5], "mark"))
                     for n, r in read_tsv(path, 6, required=False)]
        path = p("registry_cpu.tsv")
        self.cpu = [(r[0], fnum(path, n, r[1], "seconds"), num(path, n, r[2], "calls"),
                     fnum(path, n, r[3], "cpu_ms"))
                    for n, r in read_tsv(path, 4, required=False)]

    def incarnation_at(self, host, t):
        best = None
        for inc in self.incs.get(host, ()):
            if inc.start <= t:
                best = inc
        return best

    def id_ms(self, i):
        return self.meta["epoch_ms"] + (i >> self.meta["time_shift"])


# ---------------------------------------------------------------- the checks

class Verdict:
    def __init__(self):
        self.failures = collections.OrderedDict()  # check -> [message]
        self.counts = collections.Counter()
        self.judged = collections.Counter()  # what each check looked at

    def fail(self, check, msg):
        self.counts[check] += 1
        lst = self.failures.setdefault(check, [])
        if len(lst) < MAX_REPORTED:
            lst.append(msg)


def ms(t0, t):
    return "%.3f s" % ((t - t0) / 1e9)


def check_duplicates(run, v, t0):
    seen = {}
    for a in run.answers:
        for i in a.ids:
            first = seen.get(i)
            if first is not None:
                v.fail("duplicate", "ID %d from %s/%s at %s, and before from %s/%s at %s" %
                       (i, a.host, a.proto, ms(t0, a.recv), first.host, first.proto,
                        ms(t0, first.recv)))
            else:
                seen[i] = a
    return len(seen)


def check_order(run, v, t0):
    """Per incarnation, sweep requests by send time against the highest ID
    of every answer received before it."""
    by_inc = collections.defaultdict(list)
    for a in run.answers:
        if a.ids:
            if any(x >= y for x, y in zip(a.ids, a.ids[1:])):
                v.fail("order", "%s/%s at %s: one answer's IDs not increasing: %s" %
                       (a.host, a.proto, ms(t0, a.recv), a.payload[:80]))
            by_inc[(a.host, a.inc.pid if a.inc else None)].append(a)
    for (host, pid), lst in by_inc.items():
        by_recv = sorted(lst, key=lambda a: a.recv)
        j, top, top_a = 0, None, None
        for b in sorted(lst, key=lambda a: a.send):
            while j < len(by_recv) and by_recv[j].recv < b.send:
                if top is None or by_recv[j].ids[-1] > top:
                    top, top_a = by_recv[j].ids[-1], by_recv[j]
                j += 1
            if top is not None and b.ids[0] <= top:
                v.fail("order", "%s (pid %s): %s/%s sent at %s answered %d, not above %d "
                       "answered on %s/%s and received at %s" %
                       (host, pid, b.host, b.proto, ms(t0, b.send), b.ids[0], top,
                        top_a.host, top_a.proto, ms(t0, top_a.recv)))


def check_superseded(run, v, t0):
    ends = {k: [o.t1 for o in obs] for k, obs in run.obs.items()}
    starts = {k: [o.t0 for o in obs] for k, obs in run.obs.items()}
    for a in run.answers:
        if not a.ids or a.inc is None:
            continue
        for key in sorted({i & run.node_mask for i in a.ids}):
            obs = run.obs.get(key)
            if not obs:
                continue
            # the last observation that ended before the send, and the first
            # that began after the answer came back
            k1 = bisect.bisect_left(ends[key], a.send) - 1
            k2 = bisect.bisect_right(starts[key], a.recv)
            if k1 < 0 or k2 >= len(obs):
                continue
            v.judged["superseded"] += 1
            o1, o2 = obs[k1], obs[k2]
            if o1.state == "held" and o1.pid is not None and o1.pid != a.inc.pid and \
                    o2.state == "held" and o2.pid == o1.pid and o2.gen == o1.gen:
                v.fail("superseded", "%s (pid %d) answered worker %#x at %s..%s while pid %d "
                       "held it at generation %d (seen at %s and %s)" %
                       (a.host, a.inc.pid, key, ms(t0, a.send), ms(t0, a.recv), o1.pid,
                        o1.gen, ms(t0, o1.t1), ms(t0, o2.t0)))


def check_mark(run, v, t0):
    starts = {k: [o.t0 for o in obs] for k, obs in run.obs.items()}
    for a in run.answers:
        for i in a.ids:
            key = i & run.node_mask
            obs = run.obs.get(key)
            if not obs:
                continue
            k = bisect.bisect_right(starts[key], a.recv)
            if k < len(obs) and obs[k].mark:
                v.judged["mark"] += 1
            if k < len(obs) and obs[k].mark and run.id_ms(i) > obs[k].mark:
                v.fail("mark", "%s/%s answered %d (ms %d) at %s, above worker %#x's durable "
                       "mark %d seen at %s" % (a.host, a.proto, i, run.id_ms(i), ms(t0, a.recv),
                                               key, obs[k].mark, ms(t0, obs[k].t0)))


def clock_catch_up_ns(f):
    """How long after clock fault F ended its host may still refuse: the
    size of the step (kinds like clock+10s); 0 for faults with a bound."""
    m = re.search(r"clock[+-](\d+(?:\.\d+)?)s", f.kind)
    return int(float(m.group(1)) * 1e9) if m and not f.bound else 0


def recovery(run, v, t0, slack_ms):
    """Rows (fault, host, seconds or None, note); fails past the bound."""
    m = run.meta
    bound_ns = (m["ttl_ms"] + m["quarantine_ms"] + m["acquire_ms"] + slack_ms) * 1000000
    oks = collections.defaultdict(list)
    last = run.answers[-1].recv if run.answers else 0
    for a in run.answers:
        last = max(last, a.recv)
        if a.status == "ok":
            oks[a.host].append(a.recv)
    for h in oks:
        oks[h].sort()
    rows = []
    for f in run.faults:
        for h in f.hosts:
            # from the end of the last fault on this host that began before it answered
            hs = oks.get(h, [])
            end, clock = f.end, not f.bound
            while True:
                k = bisect.bisect_left(hs, end)
                first = hs[k] if k < len(hs) else None
                later = [g for g in run.faults if h in g.hosts and g.end > end and
                         (first is None or g.start <= first)]
                if not later:
                    break
                end = max(g.end for g in later)
                clock = clock or any(not g.bound for g in later)
            # a clock step still holds the host back after it ended, until the
            # clock has caught up with the IDs issued meanwhile: no bound
            # while one that began before the answer may still do so
            clock = clock or any(
                h in g.hosts and not g.bound and g.start <= (first if first else last) and
                g.end + clock_catch_up_ns(g) > f.start for g in run.faults)
            took = None if first is None else (first - end) / 1e9
            note = ""
            if end != f.end:
                note = "overlapped until %s" % ms(t0, end)
            if clock:
                note = (note + "; " if note else "") + "clock step: no bound"
            elif first is None:
                if last - end > bound_ns:
                    v.fail("recovery", "%s never answered after %s (%s) ended at %s" %
                           (h, f.kind, f.phase, ms(t0, end)))
                else:
                    note = (note + "; " if note else "") + "run ended first"
            elif first - end > bound_ns:
                v.fail("recovery", "%s answered %.2f s after %s (%s) ended at %s; the bound is "
                       "%.2f s" % (h, took, f.kind, f.phase, ms(t0, end), bound_ns / 1e9))
            rows.append((f, h, took, note))
    return rows, bound_ns


# ---------------------------------------------------------------- the report

def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    return sorted_vals[min(len(sorted_vals) - 1, int(p * len(sorted_vals)))]


def refusal_class(payload):
    """A refusal's message without its numbers: one class per cause."""
    text = re.sub(r"0x[0-9a-f]+|\d+(\.\d+)?", "N", payload)
    return text[:90]


def report(run, v, rows, bound_ns, nids, t0):
    out = []
    w = out.append
    m = run.meta
    ok = sum(1 for a in run.answers if a.status == "ok")
    w("cluster run %s: backend %s, %d daemons, seed %s" %
      (run.dir, m.get("backend", "?"), len(run.hosts), m.get("seed", "?")))
    w("  %d requests, %d answered, %d IDs; %d registry observations; %d faults; "
      "TTL %d ms, quarantine %d ms, acquisition %d ms" %
      (len(run.answers), ok, nids, sum(len(o) for o in run.obs.values()), len(run.faults),
       m["ttl_ms"], m["quarantine_ms"], m["acquire_ms"]))
    w("")
    w("checks")
    judged = {"duplicate": "%d IDs" % nids, "order": "%d answers" % ok,
              "superseded": "%d answers bracketed by registry observations" %
                            v.judged["superseded"],
              "mark": "%d IDs under an observed mark" % v.judged["mark"],
              "recovery": "%d host-faults" % len(rows)}
    for check in ("duplicate", "order", "superseded", "mark", "recovery"):
        n = v.counts[check]
        w("  %-11s %-12s %s" % (check, "ok" if n == 0 else "FAILED (%d)" % n,
                                "(judged: %s)" % judged[check]))
        for msg in v.failures.get(check, []):
            w("      " + msg)
    w("")
    w("availability per host and phase: answered / requests, p50 and p99 latency (ms)")
    phases = run.phases or [("run", min((a.send for a in run.answers), default=0),
                             max((a.recv for a in run.answers), default=0))]
    w("  %-12s" % "phase" + "".join("%-24s" % h for h in run.hosts))
    cells = collections.defaultdict(list)
    for a in run.answers:
        for name, s, e in phases:
            if s <= a.send < e:
                cells[(name, a.host)].append(a)
                break
    for name, s, e in phases:
        line = "  %-12s" % name
        for h in run.hosts:
            lst = cells.get((name, h), [])
            lat = sorted((a.recv - a.send) / 1e6 for a in lst if a.status == "ok")
            if not lst:
                line += "%-24s" % "-"
                continue
            cell = "%5.1f%% %.1f/%.1f" % (100.0 * len(lat) / len(lst), pct(lat, 0.5) or 0,
                                          pct(lat, 0.99) or 0)
            line += "%-24s" % cell
        w(line)
    w("")
    w("time to answer again after each fault (bound %.2f s: TTL + quarantine + one "
      "acquisition + slack)" % (bound_ns / 1e9))
    w("  %-12s %-22s %-6s %8s %8s  %s" % ("phase", "fault", "host", "at", "took", "note"))
    for f, h, took, note in rows:
        w("  %-12s %-22s %-6s %8.1f %8s  %s" % (f.phase, f.kind, h, (f.end - t0) / 1e9,
                                                "-" if took is None else "%.2f s" % took, note))
    w("")
    w("refusals and errors by class (all hosts)")
    classes = collections.Counter()
    for a in run.answers:
        if a.status != "ok":
            classes[(a.status, refusal_class(a.payload))] += 1
    for (status, cls), n in classes.most_common(15):
        w("  %7d  %-7s %s" % (n, status, cls))
    if not classes:
        w("  none")
    if run.load:
        w("")
        w("registry load per host (calls per second; faults excluded: quiet windows)")
        w("  %-8s %-10s %8s %8s %8s" % ("host", "window", "acquire", "renew", "mark"))
        tot = collections.defaultdict(lambda: [0.0, 0, 0, 0])
        for host, window, secs, acq, ren, mk in run.load:
            w("  %-8s %-10s %8.2f %8.2f %8.2f" % (host, window, acq / secs, ren / secs, mk / secs))
            t = tot[window]
            t[0] += secs
            t[1] += acq
            t[2] += ren
            t[3] += mk
        for window, (secs, acq, ren, mk) in tot.items():
            w("  %-8s %-10s %8.2f %8.2f %8.2f   (mean per host)" % (
                "mean", window, acq / secs, ren / secs, mk / secs))
        idle = [max(0.0, cpu) / secs for window, secs, calls, cpu in run.cpu
                if window == "idle" and secs]
        rate = idle[0] if idle else 0.0  # ms a second
        if idle:
            w("  registry CPU idle (no daemons): %.0f ms a second" % rate)
        for window, secs, calls, cpu in run.cpu:
            if window != "idle":
                net = max(0.0, cpu - rate * secs)
                w("  registry CPU (%s): %d calls in %.1f s used %.0f ms, %.0f ms above idle "
                  "(%.2f ms a call)" % (window, calls, secs, cpu, net, net / calls if calls else 0))
    return "\n".join(out) + "\n"


def plot(run, path, t0):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    hosts = run.hosts
    end = max([a.recv for a in run.answers] + [p[2] for p in run.phases] + [t0])
    secs = int((end - t0) / 1e9) + 1
    fig, axes = plt.subplots(len(hosts), 1, sharex=True, figsize=(14, 1.3 * len(hosts) + 1.2),
                             squeeze=False)
    for row, h in enumerate(hosts):
        ax = axes[row][0]
        good, bad = [0] * secs, [0] * secs
        for a in run.answers:
            if a.host == h:
                s = int((a.send - t0) / 1e9)
                if 0 <= s < secs:
                    (good if a.status == "ok" else bad)[s] += 1
        xs = list(range(secs))
        ax.fill_between(xs, good, step="post", color="#2a9d4b", alpha=0.85, label="answered")
        ax.fill_between(xs, [-b for b in bad], step="post", color="#d62728", alpha=0.85,
                        label="refused or failed")
        for f in run.faults:
            if h in f.hosts:
                color = "#f2a93b" if f.bound else "#7f7fff"
                ax.axvspan((f.start - t0) / 1e9, (f.end - t0) / 1e9, color=color, alpha=0.25,
                           lw=0)
                ax.text((f.start - t0) / 1e9, 0.97, f.kind.split(":")[0], fontsize=6, va="top",
                        transform=ax.get_xaxis_transform())
        for name, s, e in run.phases:
            ax.axvline((s - t0) / 1e9, color="#555555", lw=0.6, ls=":")
            if row == 0:
                ax.text((s - t0) / 1e9, 1.02, name, transform=ax.get_xaxis_transform(),
                        fontsize=7, rotation=30, ha="left", va="bottom")
        ax.axhline(0, color="black", lw=0.5)
        ax.set_ylabel(h, rotation=0, labelpad=18, fontsize=9)
        ax.tick_params(labelsize=7)
    axes[-1][0].set_xlabel("seconds since the start (answers up, refusals down, per second; "
                           "orange: fault, blue: clock step)", fontsize=8)
    axes[0][0].legend(loc="lower left", fontsize=7, ncol=2)
    fig.suptitle("idgen cluster test: %s, seed %s" % (run.meta.get("backend", "?"),
                                                      run.meta.get("seed", "?")), y=0.995)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 2)[2])
    p.add_argument("run", help="the run directory cluster.py wrote")
    p.add_argument("--plot", metavar="PNG", help="write the timeline here")
    p.add_argument("--slack-ms", type=int, default=1000,
                   help="added to TTL + quarantine + one acquisition (default 1000)")
    a = p.parse_args()
    try:
        run = RunData(a.run)
    except Malformed as e:
        print("checker: %s" % e, file=sys.stderr)
        return BAD
    t0 = min([s for _, s, _ in run.phases] + [x.send for x in run.answers] or [0])
    v = Verdict()
    nids = check_duplicates(run, v, t0)
    check_order(run, v, t0)
    check_superseded(run, v, t0)
    check_mark(run, v, t0)
    rows, bound_ns = recovery(run, v, t0, a.slack_ms)
    text = report(run, v, rows, bound_ns, nids, t0)
    sys.stdout.write(text)
    with open(os.path.join(a.run, "summary.txt"), "w") as f:
        f.write(text)
    if a.plot:
        plot(run, a.plot, t0)
        print("timeline: %s" % a.plot)
    bad = [c for c in v.counts if v.counts[c]]
    print("checker: %s" % ("FAILED: " + ", ".join(bad) if bad else "passed"))
    return FAIL if bad else 0


if __name__ == "__main__":
    sys.exit(main())
