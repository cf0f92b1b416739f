#!/usr/bin/env python3
"""One sequence, mixed callers at once, on one registry (file:, postgres://
or etcd://): 8 callers x 200,000 numbers =

  - 4 library processes (tests/seq_worker.c take),
  - 1 daemon (`idgen serve`) serving 2 RESP clients, each sending
    `SEQ mixed 1000` 200 times (a refusal, while the daemon has no number
    in hand, is retried),
  - 2 CLI callers, each running `idgen seq mixed -n 10000` 20 times.

Then: no number twice; each caller's numbers strictly increase (a CLI
caller's across its runs too: a new holder starts above every number
claimed before it, except those given back, which are above its own);
and, the daemon stopped (SIGTERM: it gives back its rest), the counter's
accounting as `idgen seq list --json` shows it: no holder left,
claimed = issued + given back + lost, next = claimed - given back + 1, and
issued = the numbers delivered (plus, if the daemon refused a request after
taking part of it, those numbers: counted issued, never delivered).

Usage: seq_mixed_test.py IDGEN SEQ_WORKER file|URI
The sequence lives in an ID space of the run's own (?space=).
"""

import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
import components  # noqa: E402

IDGEN, WORKER, BASE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
NAME = "mixed"
# 200,000 a caller, divided by $IDGEN_TEST_SCALE (the sanitizer builds set it)
PER = max(20000, 200000 // max(1, int(os.environ.get("IDGEN_TEST_SCALE", "1") or 1)) // 10000 * 10000)
RESP_BATCH = 1000
CLI_BATCH = 10000


def resp_client(port, out, errors):
    """200 x SEQ mixed 1000 on one connection: the numbers, in order."""
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    f = s.makefile("rb")
    cmd = b"*3\r\n$3\r\nSEQ\r\n$%d\r\n%s\r\n$4\r\n1000\r\n" % (len(NAME), NAME.encode())
    got = 0
    while got < PER:
        s.sendall(cmd)
        line = f.readline()
        if line.startswith(b"-"):
            errors.append(line.decode().strip())
            time.sleep(0.01)
            continue
        m = re.fullmatch(rb"\*(\d+)\r\n", line)
        if not m:
            errors.append("unexpected reply: %r" % line[:200])
            return
        for _ in range(int(m.group(1))):
            out.append(int(f.readline()[1:]))
        got += int(m.group(1))
    s.close()


def cli_caller(uri, out, errors):
    while len(out) < PER:
        p = subprocess.run([IDGEN, "seq", NAME, "-n", str(CLI_BATCH), "--registry", uri],
                           capture_output=True, timeout=120, env=components.clean_env())
        if p.returncode != 0:
            errors.append(p.stderr.decode().strip())
            return
        out.extend(int(x) for x in p.stdout.split())


def main():
    work = components.Workdir("idgen-seqmixed-").path
    if BASE == "file":
        os.makedirs(os.path.join(work, "reg"))
        base = "file:" + os.path.join(work, "reg")
    else:
        base = BASE
    uri = base + ("&" if "?" in base else "?") + "space=mixed%d" % os.getpid()
    label = base.split(":")[0]
    d = None
    try:
        d = components.Daemon(IDGEN, work, "daemon",
                              ["--layout", "twitter", "--registry", uri, "--node", "datacenter=1",
                               "--max-batch", str(RESP_BATCH)], resp="127.0.0.1:0")
        if not checks.report("%s: the daemon starts" % label, d.resp is not None, d.log()[-800:]):
            return
        t0 = time.monotonic()
        workers = [subprocess.Popen([WORKER, "take", uri, NAME, str(PER),
                                     os.path.join(work, "lib.%d" % i)], stderr=subprocess.PIPE)
                   for i in range(4)]
        outs = {"resp%d" % i: [] for i in range(2)}
        outs.update({"cli%d" % i: [] for i in range(2)})
        errors = []
        ths = [threading.Thread(target=resp_client, args=(d.resp, outs["resp%d" % i], errors))
               for i in range(2)]
        ths += [threading.Thread(target=cli_caller, args=(uri, outs["cli%d" % i], errors))
                for i in range(2)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        for i, w in enumerate(workers):
            rc = w.wait(timeout=600)
            err = w.stderr.read().decode()
            checks.report("%s: library process %d took %d numbers" % (label, i, PER), rc == 0, err)
            with open(os.path.join(work, "lib.%d" % i), "rb") as f:
                data = f.read()
            outs["lib%d" % i] = list(struct.unpack("=%dQ" % (len(data) // 8), data))
        secs = time.monotonic() - t0
        failures = 0
        st, body = d.get("/metrics")
        for line in body.splitlines() if st == 200 else ():
            if line.startswith("idgen_seq_request_failures_total{") and 'seq="%s"' % NAME in line:
                failures += int(float(line.split()[-1]))
        if st != 200:
            errors.append("metrics: %s" % body)
        rc = d.stop()
        checks.report("%s: the daemon stops on SIGTERM (exit 0)" % label, rc == 0,
                      "exit %r: %s" % (rc, d.log()[-600:]))
        checks.report("%s: no caller failed" % label, not [e for e in errors if "unexpected" in e
                                                           or "metrics" in e or "idgen" in e],
                      errors[:5])
        print("   %s: 8 callers in %.1f s; %d daemon refusals (retried)%s" % (
            label, secs, failures, (": e.g. " + errors[0]) if errors else ""))
        for k, v in sorted(outs.items()):
            checks.report("%s: %s: %d numbers, strictly increasing" % (label, k, PER),
                          len(v) == PER and all(b > a for a, b in zip(v, v[1:])),
                          (len(v), next(((a, b) for a, b in zip(v, v[1:]) if b <= a), None)))
        allnums = [n for v in outs.values() for n in v]
        dups = len(allnums) - len(set(allnums))
        checks.report("%s: %d numbers (8 x %d), 0 duplicates" % (label, len(allnums), PER), dups == 0,
                      "%d duplicates" % dups)
        p = subprocess.run([IDGEN, "seq", "list", "--json", "--registry", uri], capture_output=True,
                           timeout=60, env=components.clean_env())
        rows = [json.loads(x) for x in p.stdout.decode().splitlines() if x.strip()]
        row = next((r for r in rows if r.get("key") == NAME), {})
        print("   %s: %s" % (label, json.dumps({k: row.get(k) for k in (
            "next", "claimed", "issued", "given_back", "lost", "holders")})))
        ok = (row and not row["holders"]
              and row["claimed"] == row["issued"] + row["given_back"] + row["lost"]
              and row["next"] == row["claimed"] - row["given_back"] + 1)
        checks.report("%s: no holder left; claimed = issued + given back + lost; "
                      "next = claimed - given back + 1" % label, ok, row or p.stderr.decode())
        delivered = len(allnums)
        spent = row.get("issued", 0) - delivered
        checks.report("%s: issued = the numbers delivered (+ those the daemon took for a request "
                      "it then refused: %d)" % (label, spent),
                      spent == 0 or (0 < spent <= failures * RESP_BATCH),
                      "issued %s, delivered %d, daemon refusals %d" % (row.get("issued"), delivered,
                                                                       failures))
    finally:
        components.stop_all()
        if checks.summary().endswith(" 0 failed"):
            subprocess.run(["rm", "-rf", work])
    checks.finish()


if __name__ == "__main__":
    main()
