"""How long `/health` and `PING` take while `idgen serve` has requests that
must wait for their tick: the event loop must never sleep for them.

Usage: python3 bench/latency_bench.py [--seconds S] [--quick] PATH/TO/idgen [PATH/TO/other-idgen]

Two scenes, each on a daemon with one event loop (--threads 1), so that a
request that held the loop would hold every probe:

  saturated   layout twitter with --max-borrow-ms 0: 50 redis-benchmark
              clients send `ID 1000` without pause.  They ask for more IDs
              than the layout's 4,096,000 a second, so most requests wait
              for a tick.
  slow batch  layout time:41@1s,worker:10,sequence:4 (16 IDs a second): one
              client asks for `ID 16` again and again, so a batch is always
              waiting for the next second.

Meanwhile a probe sends one `GET /health` (a new HTTP connection's request
on a kept-alive connection) and one RESP `PING` every 5 ms and records how
long each took.  Prints, per binary and scene, the probes' median, p99 and
maximum in ms and the load's throughput; with two binaries, both in one run,
alternating.  Each daemon uses a file: registry in a temporary directory.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

args = sys.argv[1:]
SECONDS = 10.0
if "--quick" in args:
    args.remove("--quick")
    SECONDS = 3.0
if "--seconds" in args:
    i = args.index("--seconds")
    SECONDS = float(args[i + 1])
    del args[i:i + 2]
if not args or len(args) > 2 or any(a.startswith("-") for a in args):
    sys.exit(__doc__)
BINARIES = [os.path.abspath(a) for a in args]
TMP = tempfile.mkdtemp(prefix="idgen-latency-bench-")
SLOW = "time:41@1s,worker:10,sequence:4,epoch=1288834974000"


def start(idgen, name, layout_args):
    log = open(os.path.join(TMP, name + ".log"), "wb+")
    p = subprocess.Popen([idgen, "serve", "--threads", "1", "--http", "127.0.0.1:0", "--resp",
                          "127.0.0.1:0", "--registry", "file:" + os.path.join(TMP, "reg")] +
                         layout_args, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read().decode("utf-8", "replace")
        ports = {}
        for proto in ("http", "resp"):
            key = "event=listen proto=%s addr=127.0.0.1:" % proto
            if key in text:
                ports[proto] = int(text.split(key)[1].split()[0])
        if len(ports) == 2:
            return p, ports["http"], ports["resp"]
        if p.poll() is not None:
            break
        time.sleep(0.02)
    p.kill()
    sys.exit("%s: %s did not start: %s" % (name, idgen, text[-400:]))


def recv_until(s, done):
    buf = b""
    while not done(buf):
        d = s.recv(65536)
        if not d:
            raise EOFError
        buf += d
    return buf


def http_done(buf):
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    return len(body) >= n


def probe(http_port, resp_port, stop, out):
    """One /health and one PING every 5 ms; their latencies in ms."""
    h = socket.create_connection(("127.0.0.1", http_port))
    r = socket.create_connection(("127.0.0.1", resp_port))
    for s in (h, r):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.settimeout(30)
    while not stop.is_set():
        t = time.perf_counter()
        h.sendall(b"GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
        recv_until(h, http_done)
        out["health"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        r.sendall(b"*1\r\n$4\r\nPING\r\n")
        recv_until(r, lambda b: b.endswith(b"\r\n"))
        out["ping"].append((time.perf_counter() - t) * 1000)
        time.sleep(0.005)
    h.close()
    r.close()


def slow_client(resp_port, stop, count):
    s = socket.create_connection(("127.0.0.1", resp_port))
    s.settimeout(30)
    while not stop.is_set():
        s.sendall(b"*2\r\n$2\r\nID\r\n$2\r\n16\r\n")
        buf = recv_until(s, lambda b: b.count(b"\r\n") >= 17 or b.startswith(b"-"))
        if not buf.startswith(b"-"):
            count[0] += 16
    s.close()


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def scene(idgen, name):
    out = {"health": [], "ping": []}
    stop = threading.Event()
    load_rate = ""
    if name == "saturated":
        p, hp, rp = start(idgen, name, ["--layout", "twitter", "--max-borrow-ms", "0"])
        th = threading.Thread(target=probe, args=(hp, rp, stop, out))
        th.start()
        bench = subprocess.Popen(["redis-benchmark", "-h", "127.0.0.1", "-p", str(rp), "-c", "50",
                                  "-n", "100000000", "-q", "ID", "1000"],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(SECONDS)
        m = metrics(hp)
        bench.terminate()
        bench.wait()
        stop.set()
        th.join()
        load_rate = "%.2f M IDs/s" % (m / SECONDS / 1e6)
    else:
        p, hp, rp = start(idgen, name, ["--layout", SLOW, "--node", "worker=5",
                                         "--registry", "static"])
        count = [0]
        lt = threading.Thread(target=slow_client, args=(rp, stop, count))
        lt.start()
        th = threading.Thread(target=probe, args=(hp, rp, stop, out))
        th.start()
        time.sleep(SECONDS)
        stop.set()
        th.join()
        lt.join()
        load_rate = "%d IDs/s" % (count[0] / SECONDS)
    p.terminate()
    p.wait()
    return out, load_rate


def metrics(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\n\r\n")
    buf = recv_until(s, http_done)
    s.close()
    for line in buf.decode().splitlines():
        if line.startswith('idgen_ids_issued_total{kind="snowflake"'):
            return float(line.split()[-1])
    return 0.0


def main():
    rows = []
    for name in ("saturated", "slow batch"):
        for idgen in BINARIES:
            out, rate = scene(idgen, name)
            rows.append((name, idgen, out, rate))
    print("| scene | binary | /health median / p99 / max (ms) | PING median / p99 / max (ms) "
          "| probes | load |")
    print("|---|---|---|---|---|---|")
    for name, idgen, out, rate in rows:
        h, p = out["health"], out["ping"]
        print("| %s | %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %d | %s |" %
              (name, idgen, pct(h, 0.5), pct(h, 0.99), max(h or [0]), pct(p, 0.5), pct(p, 0.99),
               max(p or [0]), len(h), rate))
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
