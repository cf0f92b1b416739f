"""How long `idgen serve` takes to start: from the fork to a connection its
HTTP listener accepts, with the file: registry (a fresh directory, and one
whose worker IDs were used before), the static registry beside it.

Usage: python3 bench/start_bench.py PATH/TO/idgen [RUNS]

Each run starts the daemon on a free loopback port and connects every
0.2 ms until it accepts; the daemon is then stopped with SIGTERM (so its
lease is released and its mark written, as in normal use).  Prints the
median, the 90th percentile and the extremes in ms for each registry.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

IDGEN = os.path.abspath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 21


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_once(registry):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    t0 = time.perf_counter()
    p = subprocess.Popen([IDGEN, "serve", "--http", "127.0.0.1:%d" % port, "--resp", "off",
                          "--registry", registry, "--node", "datacenter=1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if p.poll() is not None:
                raise SystemExit("idgen serve exited with %s" % p.returncode)
            time.sleep(0.0002)
    t = time.perf_counter() - t0
    p.send_signal(signal.SIGTERM)
    p.wait(10)
    return t * 1000


def report(name, xs):
    xs = sorted(xs)
    print("%-34s median %6.2f ms  p90 %6.2f ms  [min %.2f, max %.2f]  (%d runs)"
          % (name, xs[len(xs) // 2], xs[int(len(xs) * 0.9)], xs[0], xs[-1], len(xs)))


def main():
    tmp = tempfile.mkdtemp(prefix="idgen-start-bench-")
    try:
        fresh, reused, static = [], [], []
        for i in range(RUNS):  # alternating, so that drift falls on all three
            fresh.append(start_once("file:%s/fresh-%d" % (tmp, i)))
            reused.append(start_once("file:%s/reused" % tmp))
            static.append(start_once("static"))
        report("file: (a new directory)", fresh)
        report("file: (IDs used before)", reused)
        report("static (no registry)", static)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
