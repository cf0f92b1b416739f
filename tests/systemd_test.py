#!/usr/bin/python3
"""The daemon under systemd's rules, without a running systemd:

  systemd_test.py IDGEN UNIT_TEMPLATE

1. The sd_notify protocol, with the test as the service manager: a datagram
   socket named by NOTIFY_SOCKET (a path, then the abstract namespace).
   READY=1 comes once the daemon answers (HTTP and RESP are bound and the
   worker ID is leased: an ID is served at once after it), with a STATUS=
   naming the addresses; WATCHDOG=1 comes every WATCHDOG_USEC/2 while the
   loops turn, and not at all when WATCHDOG_PID names another process;
   SIGTERM brings STOPPING=1 before the exit (0).
2. dist/idgen.service.in, configured: `systemd-analyze verify` accepts it and
   `systemd-analyze security --offline=true` rates its exposure at most 2.5
   ("OK"); skipped with a message where systemd-analyze is missing.
Prints "N passed, N failed"; exits 1 on any failure.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
from checks import finish  # noqa: E402
from components import free_port  # noqa: E402


def check(what, ok, detail=""):
    return checks.report(what, ok, detail, limit=800)


def notify_session(idgen, tmp, label, address, bind_name, env_extra, expect_watchdog):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(bind_name)
    sock.settimeout(0.2)
    hport, rport = free_port(), free_port()
    env = dict(os.environ, NOTIFY_SOCKET=address, **env_extra)
    log = open(os.path.join(tmp, label + ".log"), "w")
    p = subprocess.Popen([idgen, "serve", "--http", "127.0.0.1:%d" % hport, "--resp",
                          "127.0.0.1:%d" % rport, "--registry", "file:" + os.path.join(tmp, "reg")],
                         env=env, stdout=subprocess.DEVNULL, stderr=log)
    msgs = []  # (time, text)
    ready_at = None
    first_id = None
    try:
        # READY comes within milliseconds; 60 s are for a busy machine
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and ready_at is None:
            try:
                m = sock.recv(4096).decode()
            except socket.timeout:
                continue
            msgs.append((time.monotonic(), m))
            if "READY=1" in m.split("\n"):
                ready_at = time.monotonic()
                # At READY the daemon must already serve: no retry here.
                with urllib.request.urlopen("http://127.0.0.1:%d/id" % hport, timeout=5) as r:
                    first_id = (r.status, r.read().decode().strip())
                with socket.create_connection(("127.0.0.1", rport), timeout=5) as c:
                    c.sendall(b"PING\r\n")
                    pong = c.recv(64)
        check("%s: READY=1 sent" % label, ready_at is not None, msgs)
        if ready_at is None:
            return
        check("%s: at READY an ID is served at once over HTTP (%s)" % (label, first_id),
              first_id[0] == 200 and first_id[1].isdigit())
        check("%s: at READY the RESP port answers" % label, pong == b"+PONG\r\n", pong)
        ready = [m for _, m in msgs if "READY=1" in m][0]
        check("%s: READY carries a STATUS= naming the addresses and the registry" % label,
              re.search(r"^STATUS=serving: http 127\.0\.0\.1:%d, resp 127\.0\.0\.1:%d, thrift off; "
                        r"registry file:" % (hport, rport), ready, re.M), ready)
        # The watchdog: WATCHDOG_USEC=400000 means a ping every 200 ms.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            try:
                msgs.append((time.monotonic(), sock.recv(4096).decode()))
            except socket.timeout:
                pass
        pings = [t for t, m in msgs if t > t0 and m == "WATCHDOG=1"]
        if expect_watchdog:
            check("%s: WATCHDOG=1 every ~200 ms while the loops turn (%d in 1.5 s)"
                  % (label, len(pings)), 4 <= len(pings) <= 10)
        else:
            check("%s: no WATCHDOG=1 when WATCHDOG_PID names another process (%d)"
                  % (label, len(pings)), len(pings) == 0)
        p.send_signal(signal.SIGTERM)
        stopping = None
        deadline = time.monotonic() + 30  # at once; ends early if it exits
        while time.monotonic() < deadline and stopping is None:
            try:
                m = sock.recv(4096).decode()
            except socket.timeout:
                if p.poll() is not None:
                    break
                continue
            if m.startswith("STOPPING=1"):
                stopping = m
        check("%s: SIGTERM: STOPPING=1 with a STATUS= saying it drains" % label,
              stopping and "STATUS=draining" in stopping, stopping)
        rc = p.wait(30)
        check("%s: then exit 0" % label, rc == 0, rc)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        sock.close()
        log.close()


def unit_checks(idgen, template, tmp):
    sa = shutil.which("systemd-analyze")
    if sa is None:
        print("SKIP: systemd-analyze is missing: the unit is not verified")
        return
    with open(template) as f:
        text = f.read()
    unit = os.path.join(tmp, "idgen.service")
    with open(unit, "w") as f:
        f.write(text.replace("@IDGEN_BINDIR@", os.path.dirname(idgen)).replace(
            "@IDGEN_SYSCONFDIR@", "/etc"))
    left = re.findall(r"@[A-Z_]+@", open(unit).read())
    check("the template is fully configured", not left, left)
    r = subprocess.run([sa, "verify", unit], capture_output=True, text=True)
    # verify also checks the man pages of Documentation= exist; they are not
    # installed for this test, so that one complaint is allowed.
    other = [l for l in r.stderr.splitlines() if l.strip() and "Command 'man idgen" not in l]
    check("systemd-analyze verify: no complaint about the unit", not other, r.stderr)
    r = subprocess.run([sa, "security", "--offline=true", "--threshold=25", unit],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\S+)", r.stdout + r.stderr)
    check("systemd-analyze security: exposure at most 2.5 (%s)" % (m and m.group(0)),
          r.returncode == 0 and m and float(m.group(1)) <= 2.5, r.stdout[-1500:] + r.stderr)
    # The default registry is the state directory, shared with group idgen:
    # not DynamicUser=, whose directory no application could reach.
    check("unit has no DynamicUser=",
          not re.search(r"^DynamicUser=", open(unit).read(), re.M))
    for key in ("Type=notify", "WatchdogSec=", "StateDirectory=idgen", "User=idgen",
                "Group=idgen", "StateDirectoryMode=2770",
                "ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
                "ExecStart=%s serve" % idgen):
        check("unit has %s" % key, key in open(unit).read())


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: systemd_test.py IDGEN UNIT_TEMPLATE")
    idgen, template = os.path.abspath(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="idgen-systemd-")
    try:
        path = os.path.join(tmp, "notify.sock")
        notify_session(idgen, tmp, "path socket", path, path, {"WATCHDOG_USEC": "400000"}, True)
        name = "idgen-test-%d" % os.getpid()
        notify_session(idgen, tmp, "abstract socket", "@" + name, "\0" + name,
                       {"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "1"}, False)
        unit_checks(idgen, template, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
