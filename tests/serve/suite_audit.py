#!/usr/bin/env python3
"""The audit log (--audit-log; docs/SERVE.md, "The audit log") when its file
system fails under it: full (a tiny tmpfs this suite mounts, then grows) and
frozen (`fsfreeze -f` of an ext4 image this suite makes and loop-mounts, as
snapshot hooks do).  Issue 30 found, on a 1 MiB tmpfs, 86% of the answered
requests without a line, /health 200 and no metric saying so, and after the
disk was grown a record glued onto half of another; under a 12 s freeze,
/health and /metrics took 12 s (the event loop waited in write()).

Checked here: the loops never wait for the file (/health and /metrics fast
while it is frozen); in audit_mode count (the default) every line is either
written or counted as lost (written + lost = requests answered, exactly),
/health says "degraded", the file marks each gap with a `lost=` line, and no
line is ever glued to or cut by another; in audit_mode require every ID sent
has its line in the file at the moment it arrives, and ID requests are
refused (503 / -ERR naming the reason) while lines cannot be written; SIGHUP
reopens the file, also with a line cut in it.

The settings new with this (audit_mode, audit_queue_bytes) are given as
IDGEN_* variables, which a daemon without them ignores: the same checks run
against the code before (5b10abb) and fail there on what it did.

Needs root: mount(8), losetup, mkfs.ext4, fsfreeze(8).  Where they are not
permitted the suite says so and exits 77 (skipped).  It freezes only the
file system it made, and a guard process of its own thaws it if the suite
dies while it is frozen.

Usage: python3 tests/serve/suite_audit.py PATH/TO/idgen  (or: ctest -R serve.audit)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()

RECORD_RE = re.compile(r"ms=\d{13} proto=(?:http|resp|thrift) first=(\d+) count=(\d+) agent=\S+")
LOSS_RE = re.compile(r"ms=\d{13} lost=(\d+) bytes=(\d+) reason=.+")
MOUNTS = []  # mount points this suite made, newest last


def run(*cmd, timeout=30):
    return subprocess.run(list(cmd), capture_output=True, timeout=timeout)


def mount_tmpfs(name, size):
    path = os.path.join(TMP, name)
    os.mkdir(path)
    r = run("mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "idgen-test-" + name, path)
    if r.returncode != 0:
        raise RuntimeError("mount tmpfs: %s" % r.stderr.decode().strip())
    MOUNTS.append(path)
    return path


def mount_ext4(name, size_mb=32):
    img, path = os.path.join(TMP, name + ".img"), os.path.join(TMP, name)
    with open(img, "wb") as f:
        f.truncate(size_mb << 20)
    r = run("mkfs.ext4", "-q", "-F", img)
    if r.returncode != 0:
        raise RuntimeError("mkfs.ext4: %s" % r.stderr.decode().strip())
    os.mkdir(path)
    r = run("mount", "-o", "loop", img, path)
    if r.returncode != 0:
        raise RuntimeError("mount -o loop: %s" % r.stderr.decode().strip())
    MOUNTS.append(path)
    return path


def unmount(path):
    if path in MOUNTS:
        MOUNTS.remove(path)
    if run("umount", path).returncode != 0:
        run("umount", "-l", path)


class Frozen:
    """fsfreeze -f on a file system this suite made, and -u on leaving; a
    guard process thaws it after `guard_s` should this process die first
    (a write to a frozen file system cannot be killed: nothing else would
    ever end)."""

    def __init__(self, path, guard_s=60):
        self.path = path
        self.guard = subprocess.Popen(
            ["sh", "-c", 'sleep %d; mountpoint -q "$0" && fsfreeze -u "$0"' % guard_s, path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        r = run("fsfreeze", "-f", path)
        if r.returncode != 0:
            self.thaw()
            raise RuntimeError("fsfreeze -f: %s" % r.stderr.decode().strip())
        self.frozen = True
        self.t0 = time.monotonic()

    def thaw(self):
        if getattr(self, "frozen", False):
            run("fsfreeze", "-u", self.path)
            self.frozen = False
        if self.guard.poll() is None:
            self.guard.kill()  # by its recorded PID
            self.guard.wait()


def why_not_permitted():
    """None if this machine lets the suite mount, loop-mount and freeze; else why not."""
    if os.geteuid() != 0:
        return "not root (mount, losetup and fsfreeze need CAP_SYS_ADMIN)"
    for tool in ("mount", "umount", "mkfs.ext4", "fsfreeze", "mountpoint"):
        if shutil.which(tool) is None:
            return "no %s on PATH" % tool
    try:
        unmount(mount_tmpfs("probe-tmpfs", "64k"))
        p = mount_ext4("probe-ext4", 8)
        f = Frozen(p, guard_s=20)
        f.thaw()
        unmount(p)
        os.unlink(p + ".img")
    except Exception as e:  # noqa: BLE001
        for m in reversed(MOUNTS[:]):
            unmount(m)
        return str(e)
    return None


def health(d, timeout=5):
    """(status, body text, seconds) of GET /health on a fresh connection."""
    t = time.monotonic()
    try:
        c = Conn(d.http, timeout=timeout)
        c.send(http_req("/health"))
        r = c.http(timeout)
        c.close()
        return r.status, r.text(), time.monotonic() - t
    except Exception as e:  # noqa: BLE001
        return None, repr(e), time.monotonic() - t


def metrics_timed(d, timeout=5):
    """(samples or None, seconds) of GET /metrics on a fresh connection."""
    t = time.monotonic()
    try:
        c = Conn(d.http, timeout=timeout)
        c.send(http_req("/metrics"))
        r = c.http(timeout)
        c.close()
        samples = {}
        for ln in r.text().splitlines():
            m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)", ln)
            if m and not ln.startswith("#"):
                samples[(m.group(1), frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")))] = \
                    float(m.group(3))
        return samples, time.monotonic() - t
    except Exception:  # noqa: BLE001
        return None, time.monotonic() - t


def audit_figures(d):
    m, _ = metrics_timed(d)
    if m is None:
        return {}
    return {k: mget(m, "idgen_audit_" + k) for k in
            ("written_records_total", "lost_records_total", "lost_bytes_total", "queued_records",
             "queued_bytes", "failing", "blocked_seconds", "refusals_total", "write_errors_total")}


def info_audit(d):
    r = one_request(d.http, http_req("/info"))
    j = json_body(r) if isinstance(r, HttpResp) else None
    return j.get("audit") if isinstance(j, dict) else None


def one_request(port, data, timeout=5):
    c = Conn(port, timeout=timeout)
    try:
        c.send(data)
        return c.http(timeout)
    except Exception as e:  # noqa: BLE001
        return e
    finally:
        c.close()


def resp_ids(port, n, batch=500, timeout=10):
    """n RESP `ID` requests pipelined in batches on one connection: the
    integer replies (one ID each) and the error replies, in order."""
    ids, errs = [], []
    c = Conn(port, timeout=timeout)
    try:
        left = n
        while left > 0:
            k = min(batch, left)
            c.send(b"ID\r\n" * k)
            for r in c.resp_n(k, timeout):
                (ids if isinstance(r, int) else errs).append(r)
            left -= k
    finally:
        c.close()
    return ids, errs


def read_lines(path):
    """The file's lines, and whether it ends with a newline."""
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode("utf-8", "replace")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), data.endswith(b"\n") or not data


def parse_file(lines):
    """(first IDs of the records, the loss lines' lost counts, the lines that are neither)."""
    firsts, losses, bad = [], [], []
    for ln in lines:
        m = RECORD_RE.fullmatch(ln)
        if m:
            firsts.append(int(m.group(1)))
            continue
        m = LOSS_RE.fullmatch(ln)
        if m:
            losses.append(int(m.group(1)))
            continue
        bad.append(ln)
    return firsts, losses, bad


def wait_for(pred, seconds, step=0.05):
    end = time.monotonic() + seconds
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


def drained(d):
    f = audit_figures(d)
    return f if f.get("queued_bytes") == 0 and f.get("failing") == 0 else None


# --------------------------------------------------------------- full disk


def group_full_count():
    """audit_mode count (the default) on a 64 KiB tmpfs: IDs flow, every
    line is written or counted as lost, /health says so; grown, the file
    holds whole lines only, its gaps marked, and the sums agree."""
    mnt = mount_tmpfs("full-count", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("full-count", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_QUEUE_BYTES": "65536"})
    try:
        ids, errs = resp_ids(d.resp, 20000)
        check("full disk, count: every ID request answered (20000) while the disk is full",
              len(ids) == 20000 and not errs, "%d IDs, errors %s" % (len(ids), short(errs[:2])))
        st, body, t = health(d)
        first = body.split("\n")[0]
        check("full disk, count: /health 200 and says so: \"degraded: audit log: ... No space left "
              "on device ...\"", st == 200 and first.startswith("degraded: audit log: ")
              and "No space left on device" in first, "%r %r" % (st, body))
        check("full disk, count: /health's audit line counts the lost records",
              re.search(r"^audit mode=count state=failing written=\d+ lost=[1-9]", body, re.M), body)
        f = audit_figures(d)
        lost, written, queued = (f.get("lost_records_total"), f.get("written_records_total"),
                                 f.get("queued_records"))
        check("full disk, count: metrics count the loss (idgen_audit_lost_records_total %r, "
              "failing %r)" % (lost, f.get("failing")),
              lost is not None and lost > 0 and f.get("failing") == 1 and f.get("write_errors_total", 0) > 0, f)
        check("full disk, count: written %r + lost %r + waiting %r = the 20000 answered" % (written, lost, queued),
              None not in (lost, written, queued) and written + lost + queued == 20000, f)
        a = info_audit(d)
        check("full disk, count: /info's audit says failing, with the reason and the count",
              isinstance(a, dict) and a.get("state") == "failing" and a.get("lost", 0) > 0
              and "No space left on device" in (a.get("reason") or ""), a)
        r = run("mount", "-o", "remount,size=16m", mnt)
        check("full disk, count: the tmpfs is grown (mount -o remount,size=16m)", r.returncode == 0, r.stderr)
        more, _ = resp_ids(d.resp, 200, batch=50)  # after the gap: its loss line goes before them
        f = wait_for(lambda: drained(d), 5)
        check("full disk, count: once grown, what waited is written (queued 0, failing 0)", f, audit_figures(d))
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("full disk, count: the file holds whole lines only (records and lost= lines, none "
              "glued or cut; a cut record once read 'first=212646ms=...')", whole and not bad and lines,
              "%d bad, e.g. %s" % (len(bad), short(bad[:3])))
        f = audit_figures(d)
        total = 20200
        check("full disk, count: records in the file (%d) = idgen_audit_written_records_total (%r)"
              % (len(firsts), f.get("written_records_total")), len(firsts) == f.get("written_records_total"))
        check("full disk, count: the lost= lines mark %d lost records = idgen_audit_lost_records_total (%r)"
              % (sum(losses), f.get("lost_records_total")), losses and sum(losses) == f.get("lost_records_total"))
        check("full disk, count: records + lost = every request answered (%d + %d = %d)" % (
            len(firsts), sum(losses), total), len(firsts) + sum(losses) == total)
        answered = set(ids + more)
        check("full disk, count: each record is an answered request's, in the order answered (one loop)",
              set(firsts) <= answered and increasing(firsts), short(sorted(set(firsts) - answered)[:3]))
        check("full disk, count: the requests after the growth all have their lines",
              set(more) <= set(firsts), short(sorted(set(more) - set(firsts))[:3]))
        st, body, t = health(d)
        check("full disk, count: /health 200 once grown", st == 200, body)
    finally:
        rc = d.stop()
        check("full-count daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)


def group_full_require():
    """audit_mode require on a 64 KiB tmpfs: each ID arrives only once its
    line is in the file; the request whose line the disk cannot take waits,
    and the ones after it are refused, naming the reason; grown, it is
    answered and the file is whole."""
    mnt = mount_tmpfs("full-require", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("full-require", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require"})
    c = Conn(d.resp, timeout=5)
    try:
        answered, unrecorded, held_id = [], [], None
        text = ""
        with open(path, "rb") as f:
            held = False
            for _ in range(5000):  # about 900 lines fill 64 KiB
                c.send(b"ID\r\n")
                try:
                    r = c.resp(2)
                except TimeoutError:
                    held = True
                    break
                if not isinstance(r, int):
                    break
                answered.append(r)
                text += f.read().decode()
                if (" first=%d " % r) not in text:
                    unrecorded.append(r)
        check("full disk, require: %d IDs answered, each with its line already in the file when it arrived"
              % len(answered), len(answered) > 100 and not unrecorded,
              "%d without: %s" % (len(unrecorded), short(unrecorded[:3])))
        check("full disk, require: the request whose line the full disk cannot take gets no ID (it waits)",
              held, "the loop ended after %d IDs" % len(answered))
        t0 = time.monotonic()
        r = None
        for _ in range(20):
            e = None
            try:
                e = Conn(d.resp, timeout=3)
                e.send(b"ID\r\n")
                r = e.resp(3)
            except Exception as ex:  # noqa: BLE001
                r = ex
            if e is not None:
                e.close()
            if isinstance(r, RErr):
                break
            time.sleep(0.05)
        check("full disk, require: a new ID request is refused at once: -ERR audit log: ... No space "
              "left on device ... (audit_mode require)",
              isinstance(r, RErr) and r.startswith("ERR audit log: ") and "No space left on device" in r
              and "audit_mode require" in r, "%r after %.2f s" % (r, time.monotonic() - t0))
        r = one_request(d.http, http_req("/id?count=3"))
        check("full disk, require: GET /id is a 503 naming the audit log, with Retry-After",
              isinstance(r, HttpResp) and r.status == 503 and b"audit log: " in r.body
              and r.h("retry-after") is not None, repr(r))
        st, body, t = health(d)
        check("full disk, require: /health 503 naming the audit log (%.3f s)" % t,
              st == 503 and body.startswith("audit log: ") and "refused" in body and t < 1, body)
        f = audit_figures(d)
        check("full disk, require: refusals counted, nothing lost (refusals %r, lost %r)" % (
            f.get("refusals_total"), f.get("lost_records_total")),
              f.get("refusals_total", 0) >= 2 and f.get("lost_records_total") == 0 and f.get("failing") == 1, f)
        r = run("mount", "-o", "remount,size=16m", mnt)
        check("full disk, require: the tmpfs is grown", r.returncode == 0, r.stderr)
        try:
            late = c.resp(5)
        except Exception as ex:  # noqa: BLE001
            late = ex
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("full disk, require: the waiting request is answered once grown, its line written first",
              isinstance(late, int) and late in firsts, "%r" % (late,))
        more, errs = resp_ids(d.resp, 100, batch=10)
        check("full disk, require: IDs flow again", len(more) == 100 and not errs, short(errs[:2]))
        f = wait_for(lambda: drained(d), 5)
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("full disk, require: the file holds whole lines only, no lost= line",
              whole and not bad and not losses, short(bad[:3]))
        want = set(answered + more + ([late] if isinstance(late, int) else []))
        check("full disk, require: every ID answered has its record (%d)" % len(want),
              want <= set(firsts), short(sorted(want - set(firsts))[:3]))
    finally:
        c.close()
        rc = d.stop()
        check("full-require daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)


def group_reopen_cut():
    """SIGHUP while a line is cut at the end of the full file (count): the
    old file keeps its half line and nothing after it; the new file begins
    with a lost= line for it once the disk takes lines again."""
    mnt = mount_tmpfs("reopen", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("reopen", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_QUEUE_BYTES": "65536"})
    try:
        ids, _ = resp_ids(d.resp, 5000)
        wait_for(lambda: audit_figures(d).get("failing") == 1, 3)
        with open(path, "rb") as f:
            old = f.read()
        cut = not old.endswith(b"\n")
        os.rename(path, path + ".1")
        d.p.send_signal(signal.SIGHUP)
        reopened = wait_for(lambda: "event=reopen_audit_log signal=HUP" in d.log(), 3)
        check("reopen, full disk: SIGHUP reopens the audit log (the writer logs it)", reopened, d.log()[-600:])
        run("mount", "-o", "remount,size=16m", mnt)
        more, _ = resp_ids(d.resp, 100, batch=10)
        wait_for(lambda: drained(d), 5)
        with open(path + ".1", "rb") as f:
            rotated = f.read()
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("reopen, full disk: the rotated file is as it was at the reopen: nothing glued after "
              "its %s" % ("cut line" if cut else "last line"), rotated == old, short(rotated[len(old):]))
        check("reopen, full disk: the new file holds whole lines only", whole and not bad and lines, short(bad[:3]))
        if cut:
            check("reopen, full disk: the new file begins with a lost= line for the cut record",
                  LOSS_RE.fullmatch(lines[0]) and "reopened" in lines[0], short(lines[:2]))
        else:
            check("reopen, full disk: no line was cut (the disk filled between lines): no lost= line "
                  "for one", not lines or not lines[0].startswith("ms=") or " lost=1 " not in lines[0], lines[:1])
        check("reopen, full disk: the requests after it are in the new file", set(more) <= set(firsts),
              short(sorted(set(more) - set(firsts))[:3]))
    finally:
        rc = d.stop()
        check("reopen daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)


def group_reopen_cut_require():
    """SIGHUP while a line is cut at the end of the full file (require): the
    reopen waits (logged as pending) until the line is completed where it
    began, so its request's ID is recorded whole; then the file is reopened."""
    mnt = mount_tmpfs("reopen-require", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("reopen-require", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require"})
    c = Conn(d.resp, timeout=5)
    try:
        held = False
        for _ in range(5000):
            c.send(b"ID\r\n")
            try:
                r = c.resp(2)
            except TimeoutError:
                held = True
                break
            if not isinstance(r, int):
                break
        check("reopen, require: a request waits for its line on the full disk", held)
        with open(path, "rb") as f:
            old = f.read()
        cut = not old.endswith(b"\n")
        os.rename(path, path + ".1")
        d.p.send_signal(signal.SIGHUP)
        if cut:
            pending = wait_for(lambda: "event=reopen_audit_log signal=HUP audit_log=%s state=pending" % path
                               in d.log(), 3)
            check("reopen, require: with a line cut in the old file the reopen waits (state=pending)",
                  pending and not os.path.exists(path), d.log()[-500:])
        run("mount", "-o", "remount,size=16m", mnt)
        try:
            late = c.resp(5)
        except Exception as ex:  # noqa: BLE001
            late = ex
        reopened = wait_for(lambda: re.search(r"event=reopen_audit_log signal=HUP audit_log=\S+\n", d.log()), 3)
        check("reopen, require: once the disk takes lines, the file is reopened", reopened, d.log()[-500:])
        more, errs = resp_ids(d.resp, 50, batch=10)
        wait_for(lambda: drained(d), 5)
        old_lines, old_whole = read_lines(path + ".1")
        new_lines, new_whole = read_lines(path)
        of, ol, ob = parse_file(old_lines)
        nf, nl, nb = parse_file(new_lines)
        check("reopen, require: the waiting request's ID arrives, its line whole in the old file",
              isinstance(late, int) and late in of and old_whole and not ob, "%r; bad %s" % (late, short(ob[:2])))
        check("reopen, require: the requests after it are in the new file, whole, nothing lost",
              len(more) == 50 and set(more) <= set(nf) and new_whole and not nb and not nl and not ol,
              short(nb[:2]))
    finally:
        c.close()
        rc = d.stop()
        check("reopen-require daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)


# ---------------------------------------------------------- frozen file system


def load(port, stop, out, batch=200):
    """Pipelined RESP ID batches until `stop` is set: answered IDs into out."""
    try:
        c = Conn(port, timeout=20)
        while not stop.is_set():
            c.send(b"ID\r\n" * batch)
            for r in c.resp_n(batch, 20):
                if isinstance(r, int):
                    out.append(r)
        c.close()
    except Exception as e:  # noqa: BLE001
        out.append(e)


def group_frozen_count():
    """fsfreeze of the audit log's file system for 5 s, audit_mode count,
    one event loop under load: /health and /metrics answer at once
    throughout (they once took 12.0 s for a 12 s freeze), requests are answered,
    the blocked write shows; thawed, the lines are whole and add up."""
    mnt = mount_ext4("frozen-count")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("frozen-count", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_QUEUE_BYTES": "65536"})
    fr = None
    stop, got = threading.Event(), []
    th = threading.Thread(target=load, args=(d.resp, stop, got))
    try:
        resp_ids(d.resp, 100)
        m0, _ = metrics_timed(d)
        fr = Frozen(mnt)
        th.start()
        times, bodies = [], []
        while time.monotonic() - fr.t0 < 4.0:
            st, body, t = health(d, timeout=8)
            times.append(t)
            bodies.append((st, body.split("\n")[0]))
            time.sleep(0.2)
        n_during = len(got)  # before the scrape: one loop timed each in a turn before the scrape's
        m1, tm = metrics_timed(d, timeout=8)
        stop.set()
        th.join(30)
        check("frozen, count: /health answered at once all through the freeze (%d looks, slowest "
              "%.3f s)" % (len(times), max(times)), max(times) < 1.0 and all(b[0] == 200 for b in bodies),
              short(bodies[-3:]))
        check("frozen, count: /metrics at once while frozen (%.3f s)" % tm, m1 is not None and tm < 1.0)
        blocked = [b for b in bodies if b[1].startswith("degraded: audit log: a write to ")
                   and "has been blocked for" in b[1]]
        check("frozen, count: /health says the write has been blocked for over a second (degraded)",
              blocked, short(bodies[-3:]))
        f = {k: mget(m1, "idgen_audit_" + k) for k in ("blocked_seconds", "failing", "lost_records_total")} \
            if m1 else {}
        check("frozen, count: metrics show the blocked write and count the lines lost meanwhile (%r)" % f,
              (f.get("blocked_seconds") or 0) >= 1 and f.get("failing") == 1 and (f.get("lost_records_total") or 0) > 0)
        served_n = (msum(m1, "idgen_request_duration_seconds_count", proto="resp") -
                    msum(m0, "idgen_request_duration_seconds_count", proto="resp")) if m1 and m0 else 0
        check("frozen, count: requests answered (and timed) while frozen: %d IDs, %d in the latency "
              "histogram" % (n_during, served_n), n_during > 1000 and served_n >= n_during)
        fr.thaw()
        more, _ = resp_ids(d.resp, 100, batch=10)
        f = wait_for(lambda: drained(d), 5)
        check("frozen, count: thawed, what waited is written", f, audit_figures(d))
        ids = [i for i in got if isinstance(i, int)]
        total = 100 + len(ids) + 100
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        f = audit_figures(d)
        check("frozen, count: whole lines only after the thaw", whole and not bad, short(bad[:3]))
        check("frozen, count: records (%d) + lost= lines (%d) = requests answered (%d), as the metrics "
              "say (%r written, %r lost)" % (len(firsts), sum(losses), total, f.get("written_records_total"),
                                             f.get("lost_records_total")),
              len(firsts) + sum(losses) == total and len(firsts) == f.get("written_records_total")
              and sum(losses) == f.get("lost_records_total"))
    finally:
        stop.set()
        if fr is not None:
            fr.thaw()
        if th.is_alive():
            th.join(30)
        rc = d.stop()
        check("frozen-count daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)
        os.unlink(mnt + ".img")


def group_frozen_require():
    """fsfreeze, audit_mode require: a request made while the write blocks
    waits (its ID is not sent unrecorded); after a second of it, ID requests
    are refused at once naming the blocked write, /health is a 503 at once;
    thawed, the waiting request is answered with its line written."""
    mnt = mount_ext4("frozen-require")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("frozen-require", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require"})
    fr = None
    a = None
    try:
        resp_ids(d.resp, 100)
        fr = Frozen(mnt)
        a = Conn(d.resp, timeout=10)
        a.send(b"ID\r\n")
        try:
            early = a.resp(0.5)
        except TimeoutError as e:
            early = e
        check("frozen, require: an ID request made as the file system freezes gets no ID yet (its "
              "line cannot be written)", isinstance(early, TimeoutError), repr(early))
        r, t_ref = None, None
        while time.monotonic() - fr.t0 < 4:
            e = None
            try:
                e = Conn(d.resp, timeout=3)
                e.send(b"ID\r\n")
                r = e.resp(0.3)
            except Exception as ex:  # noqa: BLE001
                r = ex
            if e is not None:
                e.close()
            if isinstance(r, RErr):
                t_ref = time.monotonic() - fr.t0
                break
        check("frozen, require: ID requests are refused once the write has been blocked a second: "
              "-ERR audit log: a write ... has been blocked ... (after %s s)" % (
                  "%.2f" % t_ref if t_ref else "-"),
              isinstance(r, RErr) and "audit log: a write to " in r and "blocked" in r and 0.9 <= t_ref < 3.5, repr(r))
        r = one_request(d.http, http_req("/id"))
        check("frozen, require: GET /id is a 503 naming the blocked write",
              isinstance(r, HttpResp) and r.status == 503 and b"blocked" in r.body, repr(r))
        st, body, t = health(d, timeout=8)
        check("frozen, require: /health is a 503 at once (%.3f s)" % t,
              st == 503 and body.startswith("audit log: a write to ") and t < 1.0, body)
        m, tm = metrics_timed(d, timeout=8)
        check("frozen, require: /metrics at once (%.3f s), refusals counted" % tm,
              m is not None and tm < 1.0 and (mget(m, "idgen_audit_refusals_total") or 0) >= 2
              and (mget(m, "idgen_audit_blocked_seconds") or 0) >= 1)
        fr.thaw()
        try:
            late = a.resp(5)
        except Exception as ex:  # noqa: BLE001
            late = ex
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("frozen, require: thawed, the waiting request gets its ID, its line written before it",
              isinstance(late, int) and late in firsts, repr(late))
        more, errs = resp_ids(d.resp, 100, batch=10)
        check("frozen, require: IDs flow again after the thaw", len(more) == 100 and not errs, short(errs[:2]))
        wait_for(lambda: drained(d), 5)
        lines, whole = read_lines(path)
        firsts, losses, bad = parse_file(lines)
        check("frozen, require: whole lines only, none lost, every ID answered recorded",
              whole and not bad and not losses and set(more) <= set(firsts), short(bad[:3]))
    finally:
        if fr is not None:
            fr.thaw()
        if a is not None:
            a.close()
        rc = d.stop()
        check("frozen-require daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)
        os.unlink(mnt + ".img")


def group_settings():
    env = {k: v for k, v in os.environ.items() if not k.startswith("IDGEN_")}
    p = subprocess.run([IDGEN, "serve", "--check-config", "--audit-mode", "always"], capture_output=True,
                       timeout=10, env=env)
    err = p.stderr.decode().strip()
    check("--audit-mode always: exit 2 naming the key, the value and the choices",
          p.returncode == 2 and 'audit_mode = "always"' in err and "count" in err and "require" in err, err)
    p = subprocess.run([IDGEN, "serve", "--check-config", "--audit-queue-bytes", "1000"], capture_output=True,
                       timeout=10, env=env)
    err = p.stderr.decode().strip()
    check("--audit-queue-bytes 1000: exit 2 naming the bounds",
          p.returncode == 2 and 'audit_queue_bytes = "1000"' in err and "65536" in err, err)


if __name__ == "__main__":
    why = why_not_permitted()
    if why is not None:
        print("SKIP: serve.audit needs to mount a tmpfs, loop-mount an ext4 image and freeze it: %s" % why)
        shutil.rmtree(TMP, ignore_errors=True)
        sys.exit(77)
    try:
        run_suite("audit",
                  before=[("settings", group_settings)],
                  after=[("a full disk, audit_mode count", group_full_count),
                         ("a full disk, audit_mode require", group_full_require),
                         ("SIGHUP with a line cut by a full disk", group_reopen_cut),
                         ("SIGHUP with a line cut by a full disk, audit_mode require",
                          group_reopen_cut_require),
                         ("a frozen file system, audit_mode count", group_frozen_count),
                         ("a frozen file system, audit_mode require", group_frozen_require)],
                  watchdog_s=240)
    finally:
        for mnt in reversed(MOUNTS[:]):
            run("fsfreeze", "-u", mnt)
            unmount(mnt)
