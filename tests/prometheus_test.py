#!/usr/bin/python3
"""The alert rules of dist/prometheus against promtool and a real Prometheus
scraping a real daemon (docs/SERVE.md, "Alerts (dist/prometheus)").

  prometheus_test.py IDGEN SOURCE_DIR

1. `promtool check rules` on dist/prometheus/idgen.rules.yml, and `promtool
   test rules` on dist/prometheus/idgen.rules.test.yml, whose tests must
   hold, for every alert (and each of its severities), an evaluation where
   it fires and one where it does not.
2. `promtool check metrics` on the /metrics of two real daemons (one with
   the cache, the audit log and every listener; one leased from a file:
   registry): no lint but the one about the deprecated `_ms` names that
   stay for a release beside their `_seconds` twins (HELP "Deprecated: ..."),
   which are printed.
3. A real Prometheus (Debian's /usr/bin/prometheus: its own data directory,
   a free loopback port, scrape and evaluation every second) scrapes a real
   `idgen serve` on a file: registry, run under libfaketimeMT so that its
   wall clock can be stepped while a client asks it for 20 IDs a second.
   Prometheus loads a copy of the rules whose `for:` durations are cut to
   FOR_LIVE (the expressions are the shipped ones, checked line by line; the
   durations themselves are what step 1 tests).  Through Prometheus's HTTP
   API (/api/v1/alerts, /api/v1/rules, /api/v1/query):
   - with nothing wrong, every rule evaluates without error and no idgen
     alert is pending or firing for QUIET_S seconds;
   - the wall clock stepped back 300 s (beyond max_borrow_ms +
     max_wait_ms): requests are refused, IdgenClockRefusing and
     IdgenNotReady fire, IdgenLeaseLost does not; the clock put back,
     idgen_ready is 1 and IdgenNotReady resolves;
   - the lease lost: the lease's lock file removed from the registry's pool
     directory, which the daemon's user may no longer write (the daemon
     then cannot lease again; as root the daemon runs as nobody, since root
     writes anything): IdgenLeaseLost fires, naming the instance; the
     directory writable again, the daemon leases again and it resolves;
   - the daemon stopped: IdgenDown fires.
   How long each alert took to fire is printed.

Processes are stopped through the Popen that started them; the temporary
directory is removed when every check passed (kept, and named, otherwise).
Exits 77 (skipped) when prometheus or promtool is missing (Debian's
package `prometheus`; scripts/install-deps.sh installs it).  Not under the
sanitizers (tests/CMakeLists.txt): libfaketime cannot be preloaded there.
Prints "N passed, N failed" and exits 1 on any failure.
"""
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checks  # noqa: E402  tests/checks.py: the tally
import components  # noqa: E402  tests/components.py: the daemon, ports

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
FOR_LIVE = "3s"  # every `for:` of the live copy of the rules
QUIET_S = 6  # how long no alert may be pending or firing, nothing wrong
FIRE_S = 60  # the most an alert may take to fire (it takes seconds)
STEP_BACK = "-300s"  # far beyond max_borrow_ms + max_wait_ms (1.1 s)
T0 = time.monotonic()


def check(what, ok, detail=""):
    return checks.report(what, ok, detail, limit=1500)


def run(*args, stdin=None):
    r = subprocess.run(list(args), input=stdin, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def until(pred, seconds, step=0.2):
    """Polls pred() until it returns something true, for at most
    `seconds`: (that value or the last one, seconds taken)."""
    t0 = time.monotonic()
    while True:
        v = pred()
        if v or time.monotonic() - t0 > seconds:
            return v, time.monotonic() - t0
        time.sleep(step)


# ---------------------------------------------------------- 1. the rules


def pairs_in_rules(text):
    """[(alertname, severity)] of the rules file, in order."""
    return re.findall(r"- alert: (\w+)\n(?:.*\n)*?\s+severity: (\w+)", text)


def rule_files(src):
    rules = os.path.join(src, "dist", "prometheus", "idgen.rules.yml")
    tests = os.path.join(src, "dist", "prometheus", "idgen.rules.test.yml")
    with open(rules) as f:
        rules_text = f.read()
    rc, out = run(PROMTOOL, "check", "rules", rules)
    n = len(re.findall(r"^\s+- (?:alert|record): ", rules_text, re.M))
    check("promtool check rules: %d rules, no problem" % n,
          rc == 0 and "SUCCESS: %d rules found" % n in out, out)
    rc, out = run(PROMTOOL, "test", "rules", tests)
    check("promtool test rules: every unit test passes",
          rc == 0 and "SUCCESS" in out, out[-3000:])
    # Each alert_rule_test entry: its alertname, whether it expects no
    # alert, and the severities it expects.
    with open(tests) as f:
        entries = f.read().split("- eval_time:")[1:]
    fires, quiet = set(), set()
    for e in entries:
        name = re.search(r"alertname: (\w+)", e)
        if name is None:
            continue
        if re.search(r"exp_alerts: \[\]", e):
            quiet.add(name.group(1))
        for sev in re.findall(r"severity: '?(\w+)'?", e):
            fires.add((name.group(1), sev))
    pairs = pairs_in_rules(rules_text)
    check("the unit tests see each of the %d alerts (and each severity) "
          "fire" % len(pairs), pairs and set(pairs) <= fires,
          "never firing in a test: %r" % sorted(set(pairs) - fires))
    names = {a for a, _ in pairs}
    check("... and each one not fire (before its for:, below its "
          "threshold, or recovered)", names <= quiet,
          "never quiet in a test: %r" % sorted(names - quiet))
    return rules_text


def live_rules(rules_text, path):
    """The shipped rules with every `for:` cut to FOR_LIVE, written to
    path; checks that nothing else differs."""
    live, n = re.subn(r"(?m)^(\s+for: )\S+$", r"\g<1>" + FOR_LIVE,
                      rules_text)
    a, b = rules_text.splitlines(), live.splitlines()
    other = [(x, y) for x, y in zip(a, b)
             if x != y and not re.fullmatch(r"\s+for: \S+", x)]
    check("the live copy differs from the shipped rules in the %d for: "
          "lines alone" % n, n > 0 and len(a) == len(b) and not other,
          repr(other[:3]))
    with open(path, "w") as f:
        f.write(live)


# ------------------------------------------------------- 2. the metrics


def lint(what, text):
    """promtool check metrics on a /metrics text: what it says about the
    deprecated _ms names is allowed (and printed), nothing else is."""
    rc, out = run(PROMTOOL, "check", "metrics", stdin=text)
    deprecated = set(re.findall(r"^# HELP (\w+) Deprecated: ", text, re.M))
    allowed, other = [], []
    for line in out.splitlines():
        m = re.fullmatch(r"(\w+) metric names should not contain "
                         r"abbreviated units", line)
        if m and m.group(1).endswith("_ms") and m.group(1) in deprecated:
            allowed.append(line)
        elif line.strip():
            other.append(line)
    for line in allowed:
        print("     promtool check metrics (%s): %s" % (what, line))
    check("promtool check metrics on %s's /metrics: clean but for %d "
          "deprecated _ms names (HELP: Deprecated)" % (what, len(allowed)),
          rc in ((3,) if allowed else (0,)) and not other,
          "exit %d: %s" % (rc, "\n".join(other)))


def get(port, path):
    """(status, body) of GET http://127.0.0.1:port/path; (0, why) on an
    error."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                    timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def lint_full_daemon(idgen, work):
    """A daemon with every listener, the cache and the audit log, so that
    every metric it can show is linted."""
    d = components.Daemon(idgen, work.path, "lint", [
        "--registry", "static", "--cache", "--thrift", "127.0.0.1:0",
        "--audit-log", work.join("lint-audit.log")], resp="127.0.0.1:0")
    try:
        if not check("a daemon with the cache, the audit log and Thrift "
                     "serves", d.port is not None, d.log()[-2000:]):
            return
        get(d.port, "/id?count=3")
        get(d.port, "/no-such-route")
        st, text = get(d.port, "/metrics")
        if check("... and answers GET /metrics", st == 200, text[:300]):
            lint("a daemon with the cache and the audit log", text)
    finally:
        d.stop()


# ------------------------------------------------- 3. a real Prometheus


class Prometheus:
    """/usr/bin/prometheus with its own data directory, on a free loopback
    port, scraping `targets` as job idgen every second and evaluating
    `rules` every second."""

    def __init__(self, work, rules, targets):
        self.port = components.free_ports_below_ephemeral(1, 26000)
        cfg = work.join("prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "rule_files:\n  - %s\n"
                    "scrape_configs:\n  - job_name: idgen\n"
                    "    static_configs:\n      - targets: [%s]\n"
                    % (rules, ", ".join("'%s'" % t for t in targets)))
        self.logpath = work.join("prometheus.log")
        with open(self.logpath, "wb") as log:
            self.p = subprocess.Popen(
                [PROMETHEUS, "--config.file=" + cfg,
                 "--storage.tsdb.path=" + work.join("tsdb"),
                 "--web.listen-address=127.0.0.1:%d" % self.port],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                cwd=work.path)

    def log(self):
        with open(self.logpath, errors="replace") as f:
            return f.read()

    def ready(self, seconds=60):
        ok, _ = until(lambda: self.p.poll() is not None
                      or get(self.port, "/-/ready")[0] == 200, seconds)
        return ok and self.p.poll() is None

    def api(self, path, **params):
        """The `data` of /api/v1/PATH, or None."""
        st, body = get(self.port, "/api/v1/%s?%s"
                       % (path, urllib.parse.urlencode(params)))
        try:
            j = json.loads(body) if st == 200 else {}
        except ValueError:
            j = {}
        return j.get("data") if j.get("status") == "success" else None

    def alerts(self):
        """{(alertname, severity): alert} of the idgen alerts pending or
        firing now; None if the API did not answer."""
        data = self.api("alerts")
        if data is None:
            return None
        return {(a["labels"]["alertname"], a["labels"].get("severity")): a
                for a in data.get("alerts", [])
                if a["labels"]["alertname"].startswith("Idgen")}

    def firing(self, name):
        return [a for (n, _), a in (self.alerts() or {}).items()
                if n == name and a["state"] == "firing"]

    def value(self, q):
        """The single value of an instant query, or None."""
        r = (self.api("query", query=q) or {}).get("result") or []
        return float(r[0]["value"][1]) if len(r) == 1 else None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return None


class Client(threading.Thread):
    """Asks the daemon for an ID 20 times a second until stopped (at most
    5 minutes), counting the answers by status."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stopped = port, threading.Event()
        self.codes = {}

    def run(self):
        end = time.monotonic() + 300
        while not self.stopped.is_set() and time.monotonic() < end:
            st, _ = get(self.port, "/id")
            self.codes[st] = self.codes.get(st, 0) + 1
            self.stopped.wait(0.05)


def summary(alerts):
    if alerts is None:
        return "/api/v1/alerts did not answer"
    return ", ".join(sorted("%s/%s %s" % (n, s, a["state"])
                            for (n, s), a in alerts.items())) or "none"


def fires(prom, t0, *names):
    """Waits up to FIRE_S for the alerts `names` to fire: {name: seconds
    from t0 until it was first seen firing, or None}."""
    seen = dict.fromkeys(names)

    def all_seen():
        for (n, _), a in (prom.alerts() or {}).items():
            if n in seen and seen[n] is None and a["state"] == "firing":
                seen[n] = time.monotonic() - t0
        return None not in seen.values()

    until(all_seen, FIRE_S)
    return seen


def secs(t):
    return "%.1f s" % t if t is not None else "not within %d s" % FIRE_S


def resolves(prom, name):
    """Whether alert `name` is neither pending nor firing now."""
    now = prom.alerts()
    return now is not None and all(n != name for n, _ in now)


def set_clock(stamp, offset):
    """Steps the daemon's wall clock to `offset` from the real one (the
    file replaced whole, for a reader at any moment): when, monotonic."""
    with open(stamp + ".new", "w") as f:
        f.write(offset + "\n")
    os.chmod(stamp + ".new", 0o644)  # the daemon's user reads it
    os.replace(stamp + ".new", stamp)
    return time.monotonic()


def live(idgen, work, rules_text):
    user = "nobody" if os.geteuid() == 0 else None
    home = work.join("nobody" if user else "own")
    os.mkdir(home)
    if user:  # the registry and the audit log are the daemon's user's
        pw = pwd.getpwnam(user)
        os.chown(home, pw.pw_uid, pw.pw_gid)
    stamp = work.join("clock")
    env = components.faketime_env(stamp, "+0")
    os.chmod(stamp, 0o644)
    # libfaketime is preloaded into the daemon alone, through env(1) after
    # setpriv: preloaded into setpriv (root), it would make its shared
    # semaphore there, which the daemon (nobody) may not open after exec.
    wrap = (["setpriv", "--reuid=" + user, "--regid=nogroup",
             "--clear-groups"] if user else []) + [
        "env", "LD_PRELOAD=" + env.pop("LD_PRELOAD")]
    d = components.Daemon(idgen, work.path, "live", [
        "--registry", "file:" + os.path.join(home, "reg"),
        "--audit-log", os.path.join(home, "audit.log")], env=env, wrap=wrap)
    prom = client = None
    pool = None
    try:
        if not check("a daemon on a file: registry, under libfaketimeMT%s, "
                     "serves" % (" as nobody" if user else ""),
                     d.port is not None, d.log()[-2000:]):
            return
        st, text = get(d.port, "/metrics")
        if check("... and answers GET /metrics with idgen_lease_held 1",
                 st == 200 and "\nidgen_lease_held 1\n" in text, text[:300]):
            lint("a daemon leased from a file: registry", text)
        rules = work.join("idgen.rules.live.yml")
        live_rules(rules_text, rules)
        prom = Prometheus(work, rules, ["127.0.0.1:%d" % d.port])
        if not check("Prometheus %s is ready on port %d"
                     % (PROMETHEUS, prom.port), prom.ready(),
                     prom.log()[-3000:]):
            return
        client = Client(d.port)
        client.start()

        # -- nothing wrong
        up, took = until(lambda: prom.value('up{job="idgen"}') == 1
                         and prom.value("idgen_ready") == 1, FIRE_S)
        check("Prometheus scrapes the daemon: up 1, idgen_ready 1 (%.1f s)"
              % took, up, prom.log()[-2000:])
        quiet, took = until(lambda: prom.alerts() == {}, 30)
        seen = {}

        def still_quiet():
            now = prom.alerts()
            seen.update({("/api/v1/alerts unanswered", None): {
                "state": "?"}} if now is None else now)
            return bool(seen)

        loud, _ = until(still_quiet, QUIET_S, 0.5)
        check("nothing wrong: no idgen alert pending or firing for %d s "
              "(quiet after %.1f s)" % (QUIET_S, took),
              quiet and not loud, summary(seen))
        groups = (prom.api("rules") or {}).get("groups", [])
        rules_seen = [r for g in groups for r in g["rules"]]
        bad = [(r["name"], r.get("health"), r.get("lastError"))
               for r in rules_seen if r.get("health") != "ok"]
        n = len(re.findall(r"^\s+- (?:alert|record): ", rules_text, re.M))
        check("/api/v1/rules: the %d rules loaded, each evaluated without "
              "error" % n, len(rules_seen) == n and not bad,
              "%d rules; %r" % (len(rules_seen), bad[:5]))

        # -- the wall clock stepped back while the client asks for IDs
        t0 = set_clock(stamp, STEP_BACK)
        t = fires(prom, t0, "IdgenClockRefusing", "IdgenNotReady")
        now = prom.alerts()
        check("clock stepped back 300 s: IdgenClockRefusing fires (%s)"
              % secs(t["IdgenClockRefusing"]),
              t["IdgenClockRefusing"] is not None, summary(now))
        check("... and IdgenNotReady (%s)" % secs(t["IdgenNotReady"]),
              t["IdgenNotReady"] is not None, summary(now))
        print("     alerts now: " + summary(now))
        check("... IdgenLeaseLost does not (the lease is held)",
              resolves(prom, "IdgenLeaseLost"), summary(now))
        check("... /api/v1/query: idgen_ready 0, refusals counted, the "
              "client got 503s",
              prom.value("idgen_ready") == 0
              and (prom.value("increase(idgen_clock_refusals_total[5m])")
                   or 0) > 0 and client.codes.get(503, 0) > 0,
              "%r %r" % (prom.value("idgen_ready"), client.codes))
        set_clock(stamp, "+0")
        back, took = until(lambda: prom.value("idgen_ready") == 1
                           and resolves(prom, "IdgenNotReady"), 30)
        check("clock put back: idgen_ready 1 and IdgenNotReady resolved "
              "(%.1f s)" % took, back, summary(prom.alerts()))

        # -- the lease lost, and kept lost
        locks = [(p, f) for p, _, fs in os.walk(os.path.join(home, "reg"))
                 for f in fs if re.fullmatch(r"[0-9a-f]{16}\.lock", f)]
        if not check("the registry holds one lease's lock file",
                     len(locks) == 1, repr(locks)):
            return
        pool, lock = locks[0][0], os.path.join(*locks[0])
        t0 = time.monotonic()
        if user:  # root may remove it from a directory it made read-only
            os.chmod(pool, 0o555)
            os.unlink(lock)
        else:  # a window of microseconds: renewals come every 3.3 s
            os.unlink(lock)
            os.chmod(pool, 0o555)
        t = fires(prom, t0, "IdgenLeaseLost")["IdgenLeaseLost"]
        now = prom.alerts()
        inst = "127.0.0.1:%d" % d.port
        ll = prom.firing("IdgenLeaseLost")
        check("lock file removed, pool directory unwritable: IdgenLeaseLost "
              "fires (%s)" % secs(t), t is not None,
              summary(now) + "\n" + d.log()[-1500:])
        print("     alerts now: " + summary(now))
        check("... its summary names the instance (%s)" % inst,
              ll and inst in ll[0]["annotations"].get("summary", ""),
              ll and ll[0]["annotations"])
        check("... /api/v1/query: idgen_lease_held 0; the daemon logged "
              "lease_lost and failed to lease again",
              prom.value("idgen_lease_held") == 0
              and "event=lease_lost" in d.log()
              and "event=lease_acquire error=" in d.log(),
              "%r\n%s" % (prom.value("idgen_lease_held"), d.log()[-1500:]))
        os.chmod(pool, 0o755)
        pool = None
        back, took = until(lambda: prom.value("idgen_lease_held") == 1
                           and resolves(prom, "IdgenLeaseLost"), 30)
        check("pool directory writable again: leased again, IdgenLeaseLost "
              "resolved (%.1f s)" % took, back, summary(prom.alerts()))

        # -- the daemon stopped
        client.stopped.set()
        client.join()
        t0 = time.monotonic()
        rc = d.stop()
        check("the daemon stops on SIGTERM, exit 0", rc == 0, "exit %r" % rc)
        t = fires(prom, t0, "IdgenDown")["IdgenDown"]
        check("daemon stopped: IdgenDown fires (%s)" % secs(t),
              t is not None, summary(prom.alerts()))
        print("     client: %r" % client.codes)
    finally:
        if pool is not None:
            os.chmod(pool, 0o755)
        if client is not None:
            client.stopped.set()
            client.join()
        if d.alive():
            d.stop()
        if prom is not None:
            rc = prom.stop()
            check("Prometheus stops on SIGTERM, exit 0", rc == 0,
                  "exit %r: %s" % (rc, prom.log()[-1500:]))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: prometheus_test.py IDGEN SOURCE_DIR")
    idgen, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if PROMETHEUS is None or PROMTOOL is None:
        print("skip: prometheus and promtool are needed (Debian's package "
              "prometheus; scripts/install-deps.sh)")
        sys.exit(77)
    work = components.Workdir("idgen-prometheus-test-")
    try:
        rules_text = rule_files(src)
        lint_full_daemon(idgen, work)
        live(idgen, work, rules_text)
    finally:
        components.stop_all()
        if checks.failed == 0:
            work.remove()
        else:
            print("kept for reading: " + work.path)
        print("took %.1f s" % (time.monotonic() - T0))
    checks.finish()


if __name__ == "__main__":
    main()
