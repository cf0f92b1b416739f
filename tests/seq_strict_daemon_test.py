#!/usr/bin/env python3
"""A strict sequence through the daemon (seq_strict), the daemon SIGKILLed
and started again on the same file: registry while clients keep fetching:

  - 3 clients (HTTP GET /seq/ledger?count=5 and RESP SEQ ledger 5) fetch
    throughout; a 503 / -ERR while no daemon can serve is retried;
  - a second daemon on the same registry, started while the first is alive,
    cannot serve the strict sequence: 503 with a message naming the holder;
  - after the SIGKILL a new daemon serves once the dead holder's entry has
    expired (and its quarantine passed): every number it serves is above
    every number served before the kill (strictly increasing across the
    restart), each client's numbers strictly increase, and no number twice.
    (Within one daemon's life the clients' requests overlap, so the order
    they were answered in is not known here: each client's own order is.)

Usage: seq_strict_daemon_test.py PATH/TO/idgen
"""

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
import components  # noqa: E402

IDGEN = os.path.abspath(sys.argv[1])
TTL_MS = 600


def daemon(work, name, reg):
    return components.Daemon(IDGEN, work, name,
                             ["--layout", "twitter", "--registry", reg, "--node", "datacenter=1",
                              "--seq-strict", "ledger", "--seq-ttl-ms", str(TTL_MS),
                              "--seq-min-step", "50", "--seq-max-step", "50"],
                             resp="127.0.0.1:0")


def http_seq(port, n):
    """(numbers, None) or (None, the refusal)."""
    try:
        url = "http://127.0.0.1:%d/seq/ledger?count=%d" % (port, n)
        with urllib.request.urlopen(url, timeout=10) as r:
            return [int(x) for x in r.read().split()], None
    except urllib.error.HTTPError as e:
        return None, "%d %s" % (e.code, e.read().decode("utf-8", "replace").strip())
    except OSError as e:
        return None, str(e)


def resp_seq(port, n):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"*3\r\n$3\r\nSEQ\r\n$6\r\nledger\r\n$%d\r\n%d\r\n" % (len(str(n)), n))
            buf = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                if buf.startswith(b"-") and buf.endswith(b"\r\n"):
                    return None, buf.decode().strip()
                if buf.startswith(b"*") and buf.count(b"\r\n") >= n + 1:
                    break
            lines = buf.split(b"\r\n")
            if not lines[0].startswith(b"*"):
                return None, buf.decode("utf-8", "replace")
            return [int(x[1:]) for x in lines[1:n + 1]], None
    except OSError as e:
        return None, str(e)


class World:
    def __init__(self):
        self.lock = threading.Lock()
        self.port = None  # (http, resp) of the daemon serving now
        self.life = 0  # which daemon: 1 before the kill, 2 after
        self.stop = False
        self.log = []  # (life, client, numbers) in the order answered
        self.refusals = []


def client(w, k, proto):
    mine = []
    while not w.stop:
        with w.lock:
            ports, life = w.port, w.life
        if ports is None:
            time.sleep(0.01)
            continue
        nums, why = http_seq(ports[0], 5) if proto == "http" else resp_seq(ports[1], 5)
        if nums is None:
            with w.lock:
                w.refusals.append((life, k, why))
            time.sleep(0.02)
            continue
        with w.lock:
            # the daemon that answered: the one current when it was asked
            w.log.append((life, k, nums))
        mine += nums
        time.sleep(0.005)
    return mine


def main():
    work = components.Workdir("idgen-seqstrict-").path
    reg = "file:" + os.path.join(work, "reg")
    os.makedirs(reg[5:])
    w = World()
    results = {}
    try:
        d1 = daemon(work, "d1", reg)
        if not checks.report("first daemon starts", d1.http is not None, d1.log()[-800:]):
            return
        w.port, w.life = (d1.http, d1.resp), 1
        ths = []
        for k, proto in enumerate(("http", "http", "resp")):
            t = threading.Thread(target=lambda k=k, p=proto: results.__setitem__(k, client(w, k, p)))
            t.start()
            ths.append(t)
        time.sleep(1.0)
        # a second daemon on the same registry while the first is alive
        d2 = daemon(work, "d2", reg)
        nums, why = http_seq(d2.http, 1) if d2.http else (None, "did not start")
        nums2, why2 = resp_seq(d2.resp, 1) if d2.resp else (None, "did not start")
        checks.report("a second daemon cannot serve the strict sequence while the first lives "
                      "(503 naming the holder)",
                      nums is None and why.startswith("503") and "held" in why.lower()
                      and nums2 is None and why2.startswith("-ERR"), (why, why2))
        print("   the second daemon said: %s" % why)
        d2.stop()
        time.sleep(1.0)
        with w.lock:
            served1 = sum(len(x[2]) for x in w.log)
            w.port = None
        d1.kill()  # SIGKILL: nothing given back, the holder's entry stays until it expires
        d3 = daemon(work, "d3", reg)
        if not checks.report("the restarted daemon starts", d3.http is not None, d3.log()[-800:]):
            return
        with w.lock:
            w.port, w.life = (d3.http, d3.resp), 2
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            with w.lock:
                served2 = sum(len(x[2]) for x in w.log if x[0] == 2)
            if served2 >= 300:
                break
            time.sleep(0.05)
        waited = time.monotonic() - t0
        w.stop = True
        for t in ths:
            t.join()
        rc = d3.stop()
        checks.report("restarted daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        before = [n for life, _, ns in w.log if life == 1 for n in ns]
        after = [n for life, _, ns in w.log if life == 2 for n in ns]
        print("   %d numbers before the kill, %d after; the new daemon served after %.1f s; "
              "%d refusals, e.g. %s" % (served1, len(after), waited, len(w.refusals),
                                       w.refusals[-1:] if w.refusals else "none"))
        checks.report("numbers served before and after the restart", before and len(after) >= 300,
                      (len(before), len(after)))
        checks.report("every number after the restart is above every one before",
                      before and after and min(after) > max(before),
                      (max(before) if before else None, min(after) if after else None))
        inc = all(all(b > a for a, b in zip(v, v[1:])) for v in results.values())
        checks.report("each client's numbers strictly increase", inc, "")
        everything = before + after
        checks.report("no number twice (%d)" % len(everything), len(set(everything)) == len(everything), "")
        p = subprocess.run([IDGEN, "seq", "list", "--json", "--registry", reg], capture_output=True,
                           timeout=60)
        print("   " + p.stdout.decode().strip())
    finally:
        w.stop = True
        components.stop_all()
        if checks.summary().endswith(" 0 failed"):
            subprocess.run(["rm", "-rf", work])
    checks.finish()


if __name__ == "__main__":
    main()
