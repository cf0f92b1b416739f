#!/usr/bin/env python3
"""What only the etcd:// registry has, beside the contract
(tests/registry/harness.py says how the suites fit), on a cluster of 3
members: free --force fencing, a paused holder, clock skew, members and the
leader killed under a daemon, the majority lost and back, authentication;
then TLS with client certificates on a member of its own; unknown URI
parameters refused.

Usage: python3 tests/registry/suite_etcd.py PATH/TO/idgen  (or: ctest -R registry.etcd)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()
from shared import *  # noqa: F401,F403  scenarios shared with other suites


def etcd_members(etcd, label):
    """A daemon given every member of a 3-member cluster keeps its lease
    (same worker ID, no lease lost) while the member it talks to is killed
    and while the leader is killed (five times: a write sent to a follower
    during the election used to hang there for 5 s, past the 3 s TTL, which
    a kill meets about one time in three; a request now gives up on a
    member after 750 ms; the TTL is 5 s: on a loaded CI host one election in
    15 kept a 3 s lease from renewing, lost and taken again 50 ms later,
    2026-12-03); with two of three
    members down it refuses (503) once its lease can no longer be shown
    valid, and serves again, without a restart, when they return.  No ID
    repeats."""
    d = Daemon(label, ["--registry", etcd.uri, "--node", "datacenter=17", "--lease-ttl-ms", "5000"])
    ids = first_ids(d, 10, "%s: serves on a 3-member cluster" % label)
    if ids is None:
        return
    w = worker_of(ids[0])
    every = list(ids)

    def still(what):
        time.sleep(5.5)  # more than three renewals (every TTL/3) and mark writes
        got = d.ids(10) or []
        every.extend(got)
        check("%s: %s: still serves on worker ID %d, no lease lost" % (label, what, w),
              got and worker_of(got[0]) == w and "event=lease_lost" not in d.log(),
              d.log()[-600:])
    etcd.ctl("kill", 0)  # the first endpoint: the one the daemon talks to
    still("member 0 killed")
    etcd.ctl("restart", 0)
    for n in range(5):
        leader = etcd.ctl("leader")
        etcd.ctl("kill", leader)
        still("the leader (member %s) killed, %d of 5" % (leader, n + 1))
        etcd.ctl("restart", leader)
    down = [i for i in range(3) if str(i) != etcd.ctl("leader")][:1] + [int(etcd.ctl("leader"))]
    for i in down:
        etcd.ctl("kill", i)
    t = time.monotonic()

    def refused():
        st, _ = d.get("/id")
        return st == 503
    ok = wait_for(refused, 6.0, 0.05)
    check("%s: two of three members down: refuses (503) within the TTL (5 s; %.1f s after the "
          "kills)" % (label, time.monotonic() - t), ok, d.log()[-600:])
    for i in down:
        etcd.ctl("restart", i)
    back = wait_for(lambda: d.ids(10), 15, 0.2)
    every.extend(back or [])
    check("%s: members back: serves again without a restart" % label, back, d.log()[-600:])
    check("%s: no ID repeats, and they increase (%d IDs)" % (label, len(every)),
          len(set(every)) == len(every) and every == sorted(every))
    d.stop()


def etcd_auth(etcd, label):
    """With etcd's authentication on, a URI with USER:PASSWORD works, a
    wrong password is refused naming the failure, and the password is never
    shown."""
    ep = etcd.uri[len("etcd://"):].split(",")[0]

    def ctl(*args):
        return subprocess.run(["etcdctl", "--endpoints", ep] + list(args), capture_output=True,
                              text=True, env=dict(os.environ, ETCDCTL_API="3"))
    r = ctl("user", "add", "root:s3cret")
    r2 = ctl("auth", "enable")
    if not check("%s: etcdctl user add, auth enable" % label, r.returncode == 0 and
                 r2.returncode == 0, r.stderr + r2.stderr):
        return
    try:
        uri = "etcd://root:s3cret@" + etcd.uri[len("etcd://"):]
        d = Daemon(label, ["--registry", uri, "--node", "datacenter=18"])
        check("%s: USER:PASSWORD in the URI: serves" % label, d.ids(5) is not None, d.log()[-300:])
        check("%s: the password is not in the log" % label, "s3cret" not in d.log())
        st, body = d.get("/info")
        check("%s: nor in /info" % label, st == 200 and "s3cret" not in body)
        d.stop()
        r = idgen("snowflake", "--registry", "etcd://root:wrong@" + ep, "--datacenter", "18")
        check("%s: a wrong password is refused, naming the failure" % label,
              r.returncode == 1 and "authentication failed" in r.stderr and "wrong" not in r.stderr,
              r.stderr)
        r = idgen("snowflake", "--registry", etcd.uri, "--datacenter", "18")
        check("%s: no user: refused, naming it" % label,
              r.returncode == 1 and "user name is empty" in r.stderr, r.stderr)
    finally:
        ctl("--user", "root:s3cret", "auth", "disable")


def etcd_tls(label):
    """A member that takes only TLS clients with a certificate of its CA:
    the URI's cacert, cert and key reach it; without the client
    certificate, or without the CA, it is refused, naming the TLS failure."""
    etcd = etcd_cluster(name="etcd-tls", tls=True)
    try:
        r = idgen("snowflake", "-n", "3", "--registry", etcd.uri, "--datacenter", "19")
        check("%s: ?cacert=&cert=&key=: 3 IDs over TLS" % label,
              r.returncode == 0 and len(r.stdout.split()) == 3, r.stderr)
        base, opts = etcd.uri.split("?")
        cacert = [o for o in opts.split("&") if o.startswith("cacert=")][0]
        r = idgen("snowflake", "--registry", base + "?" + cacert, "--datacenter", "19")
        check("%s: without a client certificate: refused" % label,
              r.returncode == 1 and "registry: etcd: https://" in r.stderr, r.stderr)
        r = idgen("snowflake", "--registry", base + "?tls=1&" + opts.split("&", 1)[1],
                  "--datacenter", "19")
        check("%s: without the CA: refused, naming the certificate" % label,
              r.returncode == 1 and "certificate" in r.stderr, r.stderr)
    finally:
        etcd.stop()


def main():
    etcd = etcd_cluster(members=3, name="etcd3")
    try:
        fence_by_hand(etcd, "etcd fence")
        paused_holder(etcd, "etcd SIGSTOP")
        clock_skew(etcd, "etcd clock skew")
        etcd_members(etcd, "etcd members")
        etcd_auth(etcd, "etcd auth")
    finally:
        etcd.stop()
    etcd_tls("etcd TLS")
    unknown_uri_params("etcd://127.0.0.1:1", "etcd URI",
                       ["space", "prefix", "tls", "cacert", "cert", "key"])
    # An option given twice is refused, as space= and schema= are (the
    # last prefix= won, silently: another key prefix, another registry).
    r = idgen("registry", "list", "--registry", "etcd://127.0.0.1:1?prefix=a&prefix=b")
    check("etcd URI: prefix= given twice is refused", r.returncode == 2 and
          "option prefix given twice" in r.stderr, (r.returncode, r.stderr))


if __name__ == "__main__":
    run(main)
