"""RESP without pipelining, and what waking the server costs the client.

Usage: python3 bench/resp_wakeups.py [--rounds N] [--requests N] [--pipeline P]
                                     [--idgen PATH] [LABEL=ARGS ...]

Starts one redis-server and one `idgen serve` per LABEL=ARGS (ARGS: extra
`idgen serve` options, comma-separated; `default=` for none), then runs
`redis-benchmark -c 50 -n N -P P` against each in turn, N rounds, the order
reversed every other round, and prints for each server the medians of:
requests/s; the ratio to the Redis run of the same round (made within
seconds of it, which cancels this machine's drift between minutes); inter-processor
interrupts per request, whole machine (CAL and RES in /proc/interrupts: how a
wake-up reaches a sleeping thread's idle CPU); the server's voluntary
context switches per request (its sleeps); its CPU per request; the
client's CPU per request; and for idgen, busy polling's figures from its
/metrics: polls per request and the share of them that found work (how well
the heuristic of docs/DESIGN.md §10 does with this client on this machine;
the tests check only what it promises: tests/serve/suite_limits.py).

Without LABEL=ARGS it compares the defaults (busy polling, 20 us, onto
idle CPUs), `--busy-poll-us 0` (never polling), and `--threads 1`.  Needs
redis-server and redis-benchmark (Debian's redis-server and redis-tools).  Exit status 0, or 1 when a client failed.
"""

import argparse
import glob
import os
import random
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def ipis():
    total = 0
    with open("/proc/interrupts") as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] in ("CAL:", "RES:"):
                total += sum(int(x) for x in fields[1:] if x.isdigit())
    return total


def sleeps(pid):
    total = 0
    for path in glob.glob("/proc/%d/task/*/status" % pid):
        with open(path) as f:
            for line in f:
                if line.startswith("voluntary_ctxt_switches"):
                    total += int(line.split()[1])
    return total


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def polls(http_port):
    """(found work, found none) from an idgen daemon's /metrics."""
    if http_port is None:
        return 0, 0
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % http_port, timeout=10) as r:
        text = r.read().decode()
    got = {}
    for found in ("work", "none"):
        m = re.search(r'^idgen_busy_polls_total\{found="%s"\} (\d+)$' % found, text, re.M)
        got[found] = int(m.group(1)) if m else 0
    return got["work"], got["none"]


def wait_port(port, proc, what):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit("resp_wakeups: %s exited (%s) before listening" % (what, proc.returncode))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit("resp_wakeups: %s does not listen on %d" % (what, port))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--pipeline", type=int, default=1)
    ap.add_argument("--idgen", default=os.path.join(HERE, "..", "build", "idgen"))
    ap.add_argument("servers", nargs="*", metavar="LABEL=ARGS")
    a = ap.parse_args()
    specs = a.servers or ["default=", "no-poll=--busy-poll-us,0", "1-loop=--threads,1"]
    for tool in ("redis-server", "redis-benchmark"):
        if subprocess.run(["sh", "-c", "command -v " + tool], capture_output=True).returncode:
            sys.exit("resp_wakeups: %s not found (apt-get install -y redis-server redis-tools)" % tool)
    procs, targets = [], []
    try:
        port = free_port()
        rp = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                               "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(rp)
        wait_port(port, rp, "redis-server")
        targets.append(("redis", rp, port, None, ["INCR", "counter"]))
        for spec in specs:
            label, _, args = spec.partition("=")
            port, http = free_port(), free_port()
            p = subprocess.Popen([a.idgen, "serve", "--http", "127.0.0.1:%d" % http,
                                  "--resp", "127.0.0.1:%d" % port,
                                  "--registry", "static", "--node", "worker=%d" % random.randrange(32)]
                                 + [x for x in args.split(",") if x],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(p)
            wait_port(port, p, label)
            wait_port(http, p, label)
            targets.append((label, p, port, http, ["ID"]))
        res = {t[0]: [] for t in targets}
        for r in range(a.rounds):
            for label, p, port, http, cmd in (targets if r % 2 == 0 else targets[::-1]):
                w0, n0 = polls(http)
                i0, s0, c0 = ipis(), sleeps(p.pid), cpu_s(p.pid)
                u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run(["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", "50",
                                      "-n", str(a.requests), "-P", str(a.pipeline), "--csv"] + cmd,
                                     capture_output=True, text=True)
                u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                i1, s1, c1 = ipis(), sleeps(p.pid), cpu_s(p.pid)
                w1, n1 = polls(http)
                try:
                    rps = float(out.stdout.strip().splitlines()[-1].split(",")[1].strip('"'))
                except (IndexError, ValueError):
                    print("resp_wakeups: redis-benchmark against %s failed: %s" % (label, out.stderr[-300:]))
                    return 1
                n = a.requests
                client = u1.ru_utime + u1.ru_stime - u0.ru_utime - u0.ru_stime
                made = (w1 - w0) + (n1 - n0)
                res[label].append((rps, (i1 - i0) / n, (s1 - s0) / n, (c1 - c0) * 1e6 / n, client * 1e6 / n,
                                   made / n, (w1 - w0) / made if made else None))
            print("round %d: %s" % (r + 1, "  ".join("%s %.0f" % (l, v[-1][0]) for l, v in res.items())),
                  flush=True)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
    med = statistics.median
    print("\nredis-benchmark -c 50 -n %d -P %d, %d rounds; medians:" % (a.requests, a.pipeline, a.rounds))
    print("%-10s %10s %9s %9s %9s %12s %12s %10s %10s" % (
        "server", "req/s", "/ Redis", "IPIs/req", "sleeps/req", "server us/req", "client us/req",
        "polls/req", "polls hit"))
    for label, v in res.items():
        ratio = med(x[0] / y[0] for x, y in zip(v, res["redis"]))
        hits = [x[6] for x in v if x[6] is not None]
        print("%-10s %10.0f %9.3f %9.3f %9.3f %12.2f %12.2f %10s %10s" % (
            label, med(x[0] for x in v), ratio, med(x[1] for x in v), med(x[2] for x in v),
            med(x[3] for x in v), med(x[4] for x in v),
            "%.3f" % med(x[5] for x in v) if label != "redis" else "-",
            "%.0f%%" % (100 * med(hits)) if hits else "-"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
