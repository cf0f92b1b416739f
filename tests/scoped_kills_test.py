#!/usr/bin/env python3
"""scoped_kills_test.py -- scripts/check-scoped-kills.py flags what it must
and passes what it must (ctest: scoped_kills.rules).

Each case is a small shell or Python file written to a temporary directory
and checked; a BAD case must give at least one finding (on the line given),
a GOOD case none.  The first BAD case is tests/pg_ext_test.sh's line of issue
30, as it was.  Ends with `N passed, N failed`.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "check_scoped_kills", os.path.join(HERE, "..", "scripts", "check-scoped-kills.py"))
ck = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ck)

# (name, file suffix, text, line of the finding) -- must be flagged.
BAD = [
    ("pg_ext_test.sh's old pgrep -f", ".sh",
     'before=$(ready_count)\nwpid=$(pgrep -f "idgen lease keeper" | head -1)\n'
     '[ -n "$wpid" ] || fail "no idgen lease keeper process"\nkill -TERM "$wpid"\n', 2),
    ("pgrep by name", ".sh", "pids=$(pgrep postgres)\n", 1),
    ("pgrep -u", ".sh", "pgrep -u postgres -f 'lease keeper' >/dev/null\n", 1),
    ("pgrep on a continued line", ".sh", "pid=$(pgrep \\\n  -f idgen)\n", 1),
    ("pkill -f", ".sh", "pkill -f 'idgen serve' || true\n", 1),
    ("killall", ".sh", "x=1\nkillall -9 etcd 2>/dev/null\n", 2),
    ("pidof", ".sh", 'kill -9 "$(pidof etcd)"\n', 1),
    ("fuser -k", ".sh", "fuser -k 5432/tcp\n", 1),
    ("lsof -t", ".sh", 'kill "$(lsof -t -i :6380)"\n', 1),
    ("ps aux | xargs kill", ".sh", "ps aux | grep '[i]dgen' | awk '{print $2}' | xargs kill\n", 1),
    ("ps -ef", ".sh", "pid=$(ps -ef | awk '/etcd/ {print $2}')\n", 1),
    ("a glob of /proc", ".sh", "for p in /proc/[0-9]*; do :; done\n", 1),
    ("kill a number", ".sh", "kill 1234\n", 1),
    ("kill every process", ".sh", "kill -- -1\n", 1),
    ("kill -9 -1 (bash: every process)", ".sh", "kill -9 -1\n", 1),
    ("kill 0 (the whole group)", ".sh", "kill -TERM 0\n", 1),
    ("kill of an unjudged substitution", ".sh", 'kill "$(awk "{print \\$1}" f | tail -1)"\n', 1),
    ("sudo kill", ".sh", "sudo -u postgres kill 42\n", 1),
    ("timeout kill", ".sh", "timeout 5 kill -TERM 42\n", 1),
    ("in a trap", ".sh", "trap 'kill $(pgrep -f idgen); rm -rf \"$tmp\"' EXIT\n", 1),
    ("in bash -c", ".sh", "bash -c 'kill 77'\n", 1),
    ("in a here-document", ".sh", "ssh h <<EOF\npkill idgen\nEOF\n", 2),
    ("after a multi-line string", ".sh", 'psql -c "SELECT 1;\n  SELECT 2"\nkill 5\n', 3),
    ("# scoped: without a reason", ".sh", "kill 42  # scoped: ok\n", 1),
    ("# scoped: where nothing needs it", ".sh", 'kill "$pid"  # scoped: our own daemon process\n', 1),
    ("ps by command name", ".sh", "pid=$(ps -C postgres -o pid= | head -1)\n", 1),
    ("pgrep -P of a number (children of init: every daemon)", ".sh", "pgrep -P 1 -f idgen\n", 1),
    ("kill of pgrep -P of a number", ".sh", "kill $(pgrep -P 1)\n", 1),
    ("its parent", ".sh", 'kill -TERM "$PPID"\n', 1),
    ("another program's PID file", ".sh", 'kill "$(cat /run/postgresql/15-main.pid)"\n', 1),
    ("python: sh -c kill", ".py", 'import subprocess\nsubprocess.run(["sh", "-c", "kill 42"])\n', 2),
    ("python: sudo kill", ".py", 'import subprocess\nsubprocess.run(["sudo", "kill", "42"])\n', 2),
    ("python: shell=True", ".py", 'import subprocess\nsubprocess.run("kill -9 -1", shell=True)\n', 2),
    ("python: pkill -P of a number", ".py",
     'import subprocess\nsubprocess.run(["pkill", "-P", "1"])\n', 2),
    ("a system service", ".sh", "systemctl stop postgresql\nservice redis-server restart\n", 1),
    ("a system service, from python", ".py",
     'import subprocess\nsubprocess.run(["systemctl", "--quiet", "stop", "etcd"])\n', 2),
    ("python: pkill in argv", ".py", 'import subprocess\nsubprocess.run(["pkill", "-f", "idgen"])\n', 2),
    ("python: pgrep -f", ".py", 'import subprocess\nsubprocess.run(["pgrep", "-f", "x"])\n', 2),
    ("python: killall in a shell string", ".py", 'import os\nos.system("killall idgen")\n', 2),
    ("python: kill in argv", ".py", 'import subprocess\nsubprocess.call(["kill", str(pid)])\n', 2),
    ("python: os.kill of a number read elsewhere", ".py",
     "import os\npid = int(open('/run/x.pid').read())\nos.kill(pid, 15)\n", 3),
    ("python: os.killpg", ".py", "import os\nos.killpg(0, 9)\n", 2),
    ("python: psutil", ".py", "import psutil\n", 1),
    ("python: a listing of /proc", ".py", 'import os\nfor c in os.listdir("/proc"):\n    pass\n', 2),
    ("python: os.kill over lines", ".py", "import os\nos.kill(\n    pid,\n    9)\n", 2),
]

# (name, file suffix, text) -- must pass.
GOOD = [
    ("pg_ext_test.sh's line, scoped to its own postmaster", ".sh",
     'wpid=$(pgrep -P "$(head -n 1 "$work/pg2/data/postmaster.pid")" -f "idgen lease keeper" '
     '| head -1)\nkill -TERM "$wpid"\n'),
    ("a recorded PID", ".sh", '"$IDGEN" serve &\npid=$!\nkill -TERM "$pid"\nwait "$pid"\n'),
    ("$!", ".sh", "sleep 9 &\nkill -s TERM $!\n"),
    ("a job", ".sh", "sleep 9 &\nkill %1\nwait\n"),
    ("jobs -p in a trap", ".sh", "trap 'kill $(jobs -p) 2>/dev/null; rm -rf \"$tmp\"' EXIT\n"),
    ("an array of recorded PIDs", ".sh",
     'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done\n'),
    ("a PID file it wrote", ".sh", 'kill -$sig "$(cat "$dir/m$i.pid")"\nkill "$(< "$d/pid")"\n'),
    ("a liveness check", ".sh", 'kill -0 "$pid" 2>/dev/null || break\n'),
    ("a process group of a recorded PID", ".sh", 'kill -TERM -- -"$pgid"\n'),
    ("kill -l", ".sh", "kill -l 15\n"),
    ("children of its own process", ".sh", 'n=$(pgrep -P "$NGINX_PID" | wc -l)\n'),
    ("kill of children of its own process", ".sh", 'kill $(pgrep -P "$pid")\n'),
    ("words in text and comments", ".sh",
     'echo "never kill 1234 by hand"\n# pkill -f x, killall y\n'
     'case $cmd in\nkill | pause) echo ;;\nesac\n[ "$cmd" = kill ]\n'),
    ("its own process's /proc", ".sh", 'cat "/proc/$pid/stat"\nls "/proc/$pid/fd"\n'),
    ("redirections are no targets", ".sh", 'kill "$p" 2>/dev/null >&2 </dev/null\n'),
    ("a reviewed excuse", ".sh", 'kill "$(awk 1 f)"  # scoped: f holds the PID we wrote\n'),
    ("ps of its own process", ".sh",
     'ps -o rss= -p "$pid"\nps -o pid,exe -p "$pid"\nps --ppid "$pid" -o pid=\n'),
    ("python: a command line that signals a PID file's process", ".py",
     'import subprocess\nsubprocess.run("kill $(cat pid)", shell=True)\n'),
    ("python: Popen methods", ".py",
     "import signal, subprocess\np = subprocess.Popen(['sleep', '9'])\n"
     "p.send_signal(signal.SIGTERM)\np.kill()\np.terminate()\n"),
    ("python: os.kill of a Popen's pid", ".py",
     "import os, signal\nos.kill(p.pid, signal.SIGSTOP)\nos.kill(self.proc.pid, 0)\n"),
    ("python: pgrep -P", ".py",
     'import subprocess\nsubprocess.run(["pgrep", "-P", str(p.pid)])\n'),
    ("python: a reviewed excuse", ".py",
     "import os\nos.kill(pid, 9)  # scoped: pid from our server's postmaster.pid\n"),
    ("python: a reviewed excuse on another line of the call", ".py",
     "import os\nos.kill(\n    pid,  # scoped: pid from our server's postmaster.pid\n    9)\n"),
]


def check(suffix, text):
    with tempfile.NamedTemporaryFile("w", suffix=suffix, delete=False) as f:
        f.write(text)
    try:
        return ck.check_file(f.name).findings
    finally:
        os.unlink(f.name)


def main():
    passed = failed = 0
    for name, suffix, text, line in BAD:
        got = check(suffix, text)
        if any(ln == line for ln, _ in got):
            passed += 1
        else:
            failed += 1
            print("FAIL: not flagged on line %d: %s: %r -> %r" % (line, name, text, got))
    for name, suffix, text in GOOD:
        got = check(suffix, text)
        if not got:
            passed += 1
        else:
            failed += 1
            print("FAIL: flagged: %s: %r -> %r" % (name, text, got))
    # The original file, where git still has it.
    orig = subprocess.run(["git", "-C", HERE, "show", "5b10abb:tests/pg_ext_test.sh"],
                          capture_output=True, text=True).stdout
    if orig:
        got = check(".sh", orig)
        if any("pgrep without -P" in w for _, w in got):
            passed += 1
        else:
            failed += 1
            print("FAIL: tests/pg_ext_test.sh of 5b10abb passes: %r" % got)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
