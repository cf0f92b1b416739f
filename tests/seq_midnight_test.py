#!/usr/bin/env python3
"""Business numbers across midnight, under libfaketime (no waiting for a
real midnight):

  - `idgen seq invoices --format 'INV{date:%Y%m%d}-{seq:04}' --tz
    Asia/Shanghai` run at 15:59:59 UTC (23:59:59 in Shanghai) and at
    16:00:01 UTC: the counter restarts (INV20261204-0001 after
    INV20261203-0003), a run back on the first day goes on where that
    day's counter stopped, no two texts are equal, every text has the
    template's widths;
  - the same in UTC across 00:00 (the Shanghai date would not change);
  - an ambiguous template ({seq} running into a date's digits) is refused
    with a message saying why;
  - the daemon (seq_format, seq_tz) with its wall clock stepped across
    Shanghai's midnight while it runs: GET /seq/invoices restarts at 0001
    with the next day's date, the JSON form gives the same texts' numbers.

Each part uses a file: registry of its own.  Skipped (77) under a
sanitizer build: ASan and a preloaded libfaketime deadlock.

Usage: seq_midnight_test.py PATH/TO/idgen
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402
import components  # noqa: E402

IDGEN = os.path.abspath(sys.argv[1])
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
FAKETIME_MT = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
TEMPLATE = "INV{date:%Y%m%d}-{seq:04}"
TEXT_RE = re.compile(r"INV(\d{8})-(\d{4,})")


def sanitized(path):
    with open(path, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def cli_at(when, reg, *args):
    """`idgen seq ...` with the wall clock starting at `when` (UTC,
    "YYYY-MM-DD hh:mm:ss"), the monotonic clock left alone:
    (exit status, stdout lines, stderr)."""
    env = components.clean_env({"LD_PRELOAD": FAKETIME, "FAKETIME": "@" + when,
                                "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": "UTC"})
    p = subprocess.run([IDGEN, "seq"] + list(args) + ["--registry", reg], env=env,
                       capture_output=True, timeout=60)
    return p.returncode, p.stdout.decode().split(), p.stderr.decode()


def widths_hold(texts, day_digits=8, min_seq=4):
    return all(TEXT_RE.fullmatch(t) and len(TEXT_RE.fullmatch(t).group(1)) == day_digits
               and len(TEXT_RE.fullmatch(t).group(2)) >= min_seq for t in texts)


def across(work, tz, before, after, day1, day2):
    """Runs of 3 before and after a midnight of `tz`, then one back before."""
    reg = "file:" + os.path.join(work, "reg-" + tz.replace("/", "-"))
    tzargs = ["--tz", tz] if tz != "UTC" else []
    rc1, a, e1 = cli_at(before, reg, "invoices", "--format", TEMPLATE, *tzargs, "-n", "3")
    rc2, b, e2 = cli_at(after, reg, "invoices", "--format", TEMPLATE, *tzargs, "-n", "3")
    rc3, c, e3 = cli_at(before, reg, "invoices", "--format", TEMPLATE, *tzargs, "-n", "2")
    rc4, d, e4 = cli_at(after, reg, "invoices", "--format", TEMPLATE, *tzargs, "-n", "2")
    checks.report("%s: the runs succeed" % tz, rc1 == rc2 == rc3 == rc4 == 0, e1 + e2 + e3 + e4)
    want_a = ["INV%s-%04d" % (day1, i) for i in (1, 2, 3)]
    want_b = ["INV%s-%04d" % (day2, i) for i in (1, 2, 3)]
    checks.report("%s: at %s UTC the day is %s, numbered from 0001" % (tz, before, day1),
                  a == want_a, a)
    checks.report("%s: at %s UTC the counter restarts on %s" % (tz, after, day2), b == want_b, b)
    checks.report("%s: each day's counter goes on where it stopped" % tz,
                  c == ["INV%s-0004" % day1, "INV%s-0005" % day1]
                  and d == ["INV%s-0004" % day2, "INV%s-0005" % day2], (c, d))
    texts = a + b + c + d
    checks.report("%s: no two texts equal (%d)" % (tz, len(texts)), len(set(texts)) == len(texts), texts)
    checks.report("%s: every text has the template's widths" % tz, widths_hold(texts), texts)
    return reg


def ambiguous(work):
    reg = "file:" + os.path.join(work, "reg-ambiguous")
    for tmpl, why in (("{seq}{date:%Y}", "runs into the digits"),
                      ("INV{date:%d}-{seq:04}", "%d")):
        p = subprocess.run([IDGEN, "seq", "invoices", "--format", tmpl, "--registry", reg],
                           capture_output=True, timeout=60)
        err = p.stderr.decode()
        checks.report("template %r refused (exit 2) with a message" % tmpl,
                      p.returncode == 2 and why in err and "format" in err and not p.stdout,
                      "exit %d: %s" % (p.returncode, err))


def http_get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=30) as r:
        return r.status, r.read().decode()


def set_clock(path, when):
    with open(path + ".new", "w") as f:
        f.write("@%s\n" % when)
    os.replace(path + ".new", path)  # whole, for a reader at any moment


def daemon(work):
    clock = os.path.join(work, "daemon.faketime")
    set_clock(clock, "2026-12-03 15:59:57")
    env = {"LD_PRELOAD": FAKETIME_MT, "FAKETIME_TIMESTAMP_FILE": clock, "FAKETIME_NO_CACHE": "1",
           "FAKETIME_DONT_FAKE_MONOTONIC": "1", "TZ": "UTC"}
    reg = "file:" + os.path.join(work, "reg-daemon")
    d = components.Daemon(IDGEN, work, "daemon", ["--layout", "twitter", "--registry", reg,
                                                  "--node", "datacenter=1",
                                                  "--seq-format", "invoices=" + TEMPLATE,
                                                  "--seq-tz", "Asia/Shanghai"], env=env)
    try:
        if not checks.report("daemon under libfaketime starts", d.http is not None, d.log()[-800:]):
            return
        st, body = http_get(d.http, "/seq/invoices?count=3")
        before = body.split()
        st2, body2 = http_get(d.http, "/seq/invoices?count=2&format=json")
        j = json.loads(body2)
        set_clock(clock, "2026-12-03 16:00:01")
        time.sleep(0.05)
        after = []
        for _ in range(3):
            st3, body3 = http_get(d.http, "/seq/invoices")
            after += body3.split()
        checks.report("daemon: 23:59:57 in Shanghai: INV20261203-0001..0003, then JSON 0004, 0005",
                      before == ["INV20261203-%04d" % i for i in (1, 2, 3)]
                      and j.get("texts") == ["INV20261203-0004", "INV20261203-0005"]
                      and j.get("numbers") == [4, 5], (before, j))
        checks.report("daemon: stepped past Shanghai's midnight, INV20261204-0001..0003",
                      after == ["INV20261204-%04d" % i for i in (1, 2, 3)], after)
        texts = before + j.get("texts", []) + after
        checks.report("daemon: no two texts equal, widths hold",
                      len(set(texts)) == len(texts) and widths_hold(texts), texts)
    finally:
        rc = d.stop()
        checks.report("daemon: SIGTERM exits 0", rc == 0, "exit %r: %s" % (rc, d.log()[-600:]))


def main():
    if sanitized(IDGEN):
        print("skip: a sanitizer build cannot have libfaketime preloaded")
        sys.exit(77)
    work = components.Workdir("idgen-seqmidnight-").path
    try:
        across(work, "Asia/Shanghai", "2026-12-03 15:59:59", "2026-12-03 16:00:01",
               "20261203", "20261204")
        across(work, "UTC", "2026-12-03 23:59:59", "2026-12-04 00:00:01", "20261203", "20261204")
        ambiguous(work)
        daemon(work)
    finally:
        components.stop_all()
        subprocess.run(["rm", "-rf", work])
    checks.finish()


if __name__ == "__main__":
    main()
