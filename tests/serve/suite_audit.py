#!/usr/bin/env python3
"""The audit log (--audit-log; docs/SERVE.md, "The audit log") when its file
system fails under it: full (a tiny tmpfs this suite mounts, then grows) and
frozen (`fsfreeze -f` of an ext4 image this suite makes and loop-mounts, as
snapshot hooks do).  Issue 30 found, on a 1 MiB tmpfs, 86% of the answered
requests without a line, /ready 200 and no metric saying so, and after the
disk was grown a record glued onto half of another; under a 12 s freeze,
/ready and /metrics took 12 s (the event loop waited in write()).

Checked here: the loops never wait for the file (/ready and /metrics fast
while it is frozen); in audit_mode count (the default) every line is either
written or counted as lost (written + lost = requests answered, exactly),
/ready says "degraded", the file marks each gap with a `lost=` line, and no
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
VOID_RE = re.compile(r"ms=\d{13} void=(\d+) count=(\d+) proto=(?:http|resp|thrift) agent=\S+ reason=.+")
BOUND_MS = 250  # audit_timeout_ms's default: "well under a second"
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
    """(status, body text, seconds) of GET /ready on a fresh connection."""
    t = time.monotonic()
    try:
        c = Conn(d.http, timeout=timeout)
        c.send(http_req("/ready"))
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
             "queued_bytes", "failing", "blocked_seconds", "refusals_total", "write_errors_total",
             "stalled", "timeouts_total", "reopens_total")}


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


def parse_file(lines, voids=None):
    """(first IDs of the records, the loss lines' lost counts, the lines that
    are neither); void lines' (first, count) into `voids` if given, else
    they count as neither."""
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
        m = VOID_RE.fullmatch(ln) if voids is not None else None
        if m:
            voids.append((int(m.group(1)), int(m.group(2))))
            continue
        bad.append(ln)
    return firsts, losses, bad


def records(lines):
    """{first ID: count} of the record lines, and how many first IDs came twice."""
    out, twice = {}, 0
    for ln in lines:
        m = RECORD_RE.fullmatch(ln)
        if m:
            twice += int(m.group(1)) in out
            out[int(m.group(1))] = int(m.group(2))
    return out, twice


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
    line is written or counted as lost, /ready says so; grown, the file
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
        check("full disk, count: /ready 200 and says so: \"degraded: audit log: ... No space left "
              "on device ...\"", st == 200 and first.startswith("degraded: audit log: ")
              and "No space left on device" in first, "%r %r" % (st, body))
        check("full disk, count: /ready's audit line counts the lost records",
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
        check("full disk, count: /ready 200 once grown", st == 200, body)
    finally:
        rc = d.stop()
        check("full-count daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)


def group_full_require():
    """audit_mode require on a 64 KiB tmpfs: each ID arrives only once its
    line is in the file; the request whose line the disk cannot take waits,
    and the ones after it are refused, naming the reason; grown, it is
    answered and the file is whole.  (audit_timeout_ms at its largest, a
    minute, so that the request waits for the disk to be grown; the bound
    itself is group_frozen_require's.)"""
    mnt = mount_tmpfs("full-require", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("full-require", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require", "IDGEN_AUDIT_TIMEOUT_MS": "60000"})
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
        check("full disk, require: /ready 503 naming the audit log (%.3f s)" % t,
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
    began, so its request's ID is recorded whole; then the file is reopened.
    (audit_timeout_ms a minute: the request waits for the disk.)"""
    mnt = mount_tmpfs("reopen-require", "64k")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("reopen-require", ["--threads", "1", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require", "IDGEN_AUDIT_TIMEOUT_MS": "60000"})
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
    one event loop under load: /ready and /metrics answer at once
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
        check("frozen, count: /ready answered at once all through the freeze (%d looks, slowest "
              "%.3f s)" % (len(times), max(times)), max(times) < 1.0 and all(b[0] == 200 for b in bodies),
              short(bodies[-3:]))
        check("frozen, count: /metrics at once while frozen (%.3f s)" % tm, m1 is not None and tm < 1.0)
        blocked = [b for b in bodies if b[1].startswith("degraded: audit stalled: a write to ")
                   and "has been waiting for" in b[1]]
        check("frozen, count: /ready says the write has stalled (degraded: audit stalled: ...)",
              blocked, short(bodies[-3:]))
        f = {k: mget(m1, "idgen_audit_" + k) for k in ("blocked_seconds", "failing", "stalled",
                                                       "lost_records_total")} if m1 else {}
        check("frozen, count: metrics show the stalled write and count the lines lost meanwhile (%r)" % f,
              (f.get("blocked_seconds") or 0) >= 1 and f.get("failing") == 1 and f.get("stalled") == 1
              and (f.get("lost_records_total") or 0) > 0)
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


class Load:
    """Clients that ask for Snowflake IDs until stopped, each on a connection
    of its own, one request (or one pipelined batch) at a time: RESP `ID` one
    by one, RESP batches of `ID 2` pipelined, and HTTP `GET /id?count=3`
    kept alive.  Each request's (sent, answered, IDs, error) is kept, so that
    a check can say when a request was sent and how long its answer took; a
    client that meets an exception (a time-out, a close) keeps it and stops."""

    def __init__(self, d, singles=2, pipelined=1, http=1, batch=20, timeout=30):
        self.stop, self.lock, self.timeout = threading.Event(), threading.Lock(), timeout
        self.done, self.failures = [], []
        work = [(d.resp, 1)] * singles + [(d.resp, batch)] * pipelined + [(d.http, 0)] * http
        self.threads = [threading.Thread(target=self._run, args=w, daemon=True) for w in work]

    def _run(self, port, batch):
        try:
            c = Conn(port, timeout=self.timeout)
        except Exception as e:  # noqa: BLE001
            self.failures.append(e)
            return
        try:
            while not self.stop.is_set():
                t0 = time.monotonic()
                out = []
                if batch == 0:
                    c.send(http_req("/id?count=3"))
                    r = c.http(self.timeout)
                    t1 = time.monotonic()
                    ids = digits_lines(r.body) if r.status == 200 else None
                    out.append((t0, t1, ids or [], None if ids else "%d %s" % (r.status, r.text())))
                else:
                    c.send(b"ID\r\n" if batch == 1 else resp_cmd("ID", "2") * batch)
                    rs = c.resp_n(batch, self.timeout)
                    t1 = time.monotonic()
                    for r in rs:
                        if isinstance(r, RErr):
                            out.append((t0, t1, [], str(r)))
                        else:
                            out.append((t0, t1, [r] if isinstance(r, int) else list(r), None))
                with self.lock:
                    self.done.extend(out)
        except Exception as e:  # noqa: BLE001
            self.failures.append(e)
        finally:
            c.close()

    def start(self):
        for t in self.threads:
            t.start()
        return self

    def finish(self):
        """Stops the clients once their requests in flight are answered."""
        self.stop.set()
        for t in self.threads:
            t.join(self.timeout + 5)

    def results(self):
        with self.lock:
            return list(self.done)

    def answered_since(self, t):
        return sum(1 for t0, _, ids, _ in self.results() if ids and t0 >= t)


def read_records(path):
    """The lines of a file (none if it is not there) and whether they are whole."""
    if not os.path.exists(path):
        return [], True
    return read_lines(path)


def group_frozen_require():
    """fsfreeze of the audit log's file system for 4 s, audit_mode require at
    the default audit_timeout_ms, two event loops under load from RESP (one
    by one and pipelined) and HTTP clients.  Issue 39 found each
    connection's request held for the whole freeze (12.28 s in a 12 s one;
    for ever on a hung NFS mount).  Checked: no request is answered later
    than the bound after it was sent (with 1.5 s of slack for this shared
    machine); the requests whose lines the frozen file could not take are
    refused (503 / -ERR audit stalled: ...), their IDs never sent; /ready
    answers at once, a 503 saying `audit stalled`, and the metrics say it
    (idgen_audit_stalled 1, idgen_audit_timeouts_total).  Thawed: IDs flow;
    every ID sent has its record and no void line, every request refused at
    the bound has a void line after its record, and nothing else is in the
    file: records without a void line = the requests answered with IDs."""
    mnt = mount_ext4("frozen-require")
    path = os.path.join(mnt, "audit.log")
    d = Daemon("frozen-require", ["--threads", "2", "--audit-log", path],
               env_extra={"IDGEN_AUDIT_MODE": "require"})
    fr = None
    load = Load(d)
    try:
        a = info_audit(d) or {}
        check("frozen, require: audit_timeout_ms is %d ms by default (/info's audit.timeout_ms %r)"
              % (BOUND_MS, a.get("timeout_ms")), a.get("timeout_ms") == BOUND_MS, a)
        load.start()
        wait_for(lambda: len(load.results()) >= 300, 10)
        fr = Frozen(mnt)
        looks, m_mid = [], None
        while time.monotonic() - fr.t0 < 4.0:
            st, body, t = health(d, timeout=8)
            looks.append((round(time.monotonic() - fr.t0, 2), st, body.split("\n")[0], t))
            if m_mid is None and time.monotonic() - fr.t0 >= 2.0:
                m_mid, _ = metrics_timed(d, timeout=8)
            time.sleep(0.1)
        fr.thaw()
        t_thaw = time.monotonic()
        flowed = wait_for(lambda: load.answered_since(t_thaw) >= 300, 15)
        load.finish()
        drained_f = wait_for(lambda: drained(d), 10)
        res = load.results()
        check("frozen, require: the clients met no time-out or close", not load.failures,
              short(load.failures[:2]))
        slow = max(res, key=lambda r: r[1] - r[0]) if res else (0, 0, [], None)
        limit = BOUND_MS / 1000 + 1.5
        check("frozen, require: no request waited past audit_timeout_ms (%d ms) + 1.5 s: the slowest "
              "took %.2f s (%s)" % (BOUND_MS, slow[1] - slow[0], "IDs" if slow[2] else short(slow[3], 120)),
              res and slow[1] - slow[0] <= limit,
              "machine stalls meanwhile: %.1f s" % stalled_since(fr.t0))
        errs = [e for _, _, _, e in res if e is not None]
        timed = [e for e in errs if "was not written within audit_timeout_ms (%d ms)" % BOUND_MS in e]
        check("frozen, require: requests refused while frozen (%d), each naming the audit log and "
              "audit_mode require; %d held at the freeze refused at the bound (\"... this request's line "
              "was not written within audit_timeout_ms ...\")" % (len(errs), len(timed)),
              errs and timed and all(("audit stalled: " in e or "audit log: " in e) and "audit_mode require" in e
                                     for e in errs), short(errs[:2]))
        stalled = [lk for lk in looks if lk[1] == 503 and lk[2].startswith("audit stalled: ")]
        check("frozen, require: /ready answered at once all through the freeze (slowest %.3f s) and "
              "was a 503 saying \"audit stalled: ...\"" % max(lk[3] for lk in looks),
              stalled and max(lk[3] for lk in looks) < 1.0, short(looks[-2:]))
        mm = {k: mget(m_mid, "idgen_audit_" + k) for k in ("stalled", "timeouts_total", "refusals_total")} \
            if m_mid else {}
        check("frozen, require: metrics while frozen: idgen_audit_stalled 1, timeouts and refusals "
              "counted (%r)" % mm, mm.get("stalled") == 1 and (mm.get("timeouts_total") or 0) >= 1
              and (mm.get("refusals_total") or 0) >= (mm.get("timeouts_total") or 0))
        check("frozen, require: thawed, IDs flow again (%s answered after it)" % load.answered_since(t_thaw),
              flowed)
        st, body, _ = health(d)
        check("frozen, require: thawed and written out, /ready is 200 ok", drained_f and st == 200
              and body.startswith("ok\n"), body)
        lines, whole = read_lines(path)
        voids = []
        firsts, losses, bad = parse_file(lines, voids)
        recs, twice = records(lines)
        void_at = {v for v, _ in voids}
        sent = [(ids[0], len(ids)) for _, _, ids, _ in res if ids]
        missing = [x for x in sent if recs.get(x[0]) != x[1]]
        voided_sent = [x for x in sent if x[0] in void_at]
        orphan = [v for v in voids if recs.get(v[0]) != v[1]]
        seen, order = set(), []  # void lines before their record
        for ln in lines:
            m = RECORD_RE.fullmatch(ln) or VOID_RE.fullmatch(ln)
            if m and " void=" in ln and int(m.group(1)) not in seen:
                order.append(ln)
            elif m:
                seen.add(int(m.group(1)))
        check("frozen, require: whole lines only, no lost= line, none unknown", whole and not losses and not bad,
              short(bad[:2]))
        check("frozen, require: every one of the %d requests answered with IDs has its record (first and "
              "count) and no void line" % len(sent), sent and not missing and not voided_sent and not twice,
              "missing %s, voided %s, records twice %d" % (short(missing[:3]), short(voided_sent[:3]), twice))
        ft = audit_figures(d)
        check("frozen, require: a void line after the record of each request refused at the bound "
              "(%d void lines, %r timeouts counted)" % (len(voids), ft.get("timeouts_total")),
              voids and not orphan and not order and len(voids) == ft.get("timeouts_total"),
              "orphans %s, before their record %s" % (short(orphan[:3]), short(order[:3])))
        check("frozen, require: records without a void line (%d) = the requests answered with IDs (%d)"
              % (len(set(recs) - void_at), len(sent)), set(recs) - void_at == {x[0] for x in sent})
    finally:
        load.stop.set()
        if fr is not None:
            fr.thaw()
        load.finish()
        rc = d.stop()
        check("frozen-require daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)
        unmount(mnt)
        os.unlink(mnt + ".img")


# ------------------------------------------------------------ files moved under it


def own_dir(name):
    path = os.path.join(TMP, name)
    os.mkdir(path)
    return path


def group_removed():
    """The audit file removed (rm) while the daemon runs, audit_mode require,
    two loops under load, no SIGHUP.  Issue 39 found the lines going on into
    the removed file: 33,493 requests (3.35 M IDs) with no line anywhere,
    /ready `ok`, `lost=0`.  Checked: the path has a file again at once;
    every answered request has its record in the removed file (read through
    a descriptor this suite keeps open) or in the new one, and every request
    sent after the removal has it in the new one, at the path; the writer
    says so in its log and metrics."""
    path = os.path.join(own_dir("removed"), "audit.log")
    d = Daemon("removed", ["--threads", "2", "--audit-log", path], env_extra={"IDGEN_AUDIT_MODE": "require"})
    load = Load(d)
    keep = None
    try:
        load.start()
        wait_for(lambda: len(load.results()) >= 300, 10)
        keep = open(path, "rb")
        os.unlink(path)
        t_rm = time.monotonic()
        back = wait_for(lambda: os.path.exists(path), 5)
        wait_for(lambda: load.answered_since(t_rm) >= 2000, 20)
        load.finish()
        f = wait_for(lambda: drained(d), 10)
        res = load.results()
        old = keep.read().decode("utf-8", "replace").split("\n")[:-1]
        new, whole = read_records(path)
        old_recs, _ = records(old)
        new_recs, twice = records(new)
        sent = [(t0, ids[0], len(ids)) for t0, _, ids, _ in res if ids]
        after = [x for x in sent if x[0] >= t_rm]
        nowhere = [x for x in sent if old_recs.get(x[1]) != x[2] and new_recs.get(x[1]) != x[2]]
        not_new = [x for x in after if new_recs.get(x[1]) != x[2]]
        check("removed: the clients met no time-out or close, and no refusal",
              not load.failures and all(e is None for _, _, _, e in res),
              short(load.failures[:2] + [e for _, _, _, e in res if e][:2]))
        check("removed: the path has a file again within a second of the removal", back)
        check("removed: every one of the %d requests answered has its record, in the removed file or "
              "the new one" % len(sent), sent and not nowhere, "%d nowhere: %s" % (len(nowhere), short(nowhere[:3])))
        check("removed: every one of the %d requests sent after the removal has its record in the new "
              "file, at the path" % len(after), after and not not_new,
              "%d not: %s" % (len(not_new), short(not_new[:3])))
        parse_new = parse_file(new)
        check("removed: the new file holds whole records only, each once", whole and not parse_new[2]
              and not parse_new[1] and not twice, short(parse_new[2][:2]))
        st, body, _ = health(d)
        check("removed: /ready ok, nothing lost, the reopen counted (reopens=N)",
              f and st == 200 and re.search(r"^audit mode=require state=ok .* lost=0 .*reopens=[1-9]", body, re.M),
              body)
        check("removed: the writer logs it (event=reopen_audit_log reason=removed)",
              "event=reopen_audit_log reason=removed audit_log=%s" % path in d.log(), d.log()[-400:])
    finally:
        load.finish()
        if keep is not None:
            keep.close()
        rc = d.stop()
        check("removed daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


def group_renamed(mode):
    """Rotation by rename under load, audit_mode `mode`: first without a
    SIGHUP (the writer finds the path naming no file, or another, and opens
    it again: within a second), then with one (logrotate's postrotate).
    Every answered request has its record exactly once over the rotated
    files and the new one; no request sent a second after a rename has its
    record in the file renamed away."""
    path = os.path.join(own_dir("renamed-" + mode), "audit.log")
    d = Daemon("renamed-" + mode, ["--threads", "2", "--audit-log", path], env_extra={"IDGEN_AUDIT_MODE": mode})
    load = Load(d)
    try:
        load.start()
        wait_for(lambda: len(load.results()) >= 300, 10)
        os.rename(path, path + ".1")
        t1 = time.monotonic()
        back = wait_for(lambda: os.path.exists(path), 5)
        wait_for(lambda: load.answered_since(t1 + 1.0) >= 1000, 20)
        if back:  # (the code before made no file there: nothing to rotate again)
            os.rename(path, path + ".2")
        d.p.send_signal(signal.SIGHUP)
        t2 = time.monotonic()
        wait_for(lambda: load.answered_since(t2 + 1.0) >= 1000, 20)
        load.finish()
        f = wait_for(lambda: drained(d), 10)
        res = load.results()
        files = {}
        for name in (path + ".1", path + ".2", path):
            lines, whole = read_records(name)
            recs, twice = records(lines)
            _, losses, bad = parse_file(lines)
            files[name] = (recs, whole and not bad and not losses and not twice)
        sent = [(t0, ids[0], len(ids)) for t0, _, ids, _ in res if ids]
        where = {}
        for name, (recs, _) in files.items():
            for first in recs:
                where.setdefault(first, []).append(name)
        nowhere = [x for x in sent if x[1] not in where]
        two = [(x, where[x[1]]) for x in sent if len(where.get(x[1], [])) > 1]
        late1 = [x for x in sent if x[0] >= t1 + 1.0 and path + ".1" in where.get(x[1], [])]
        late2 = [x for x in sent if x[0] >= t2 + 1.0 and path + ".2" in where.get(x[1], [])]
        m = "%s, renamed" % mode
        check(m + ": the clients met no time-out or close, and no refusal",
              not load.failures and all(e is None for _, _, _, e in res),
              short(load.failures[:2] + [e for _, _, _, e in res if e][:2]))
        check(m + " without SIGHUP: the path has a file again within a second", back)
        check(m + ": every one of the %d requests answered has its record, exactly once over %s"
              % (len(sent), ", ".join(os.path.basename(n) for n in files)), sent and not nowhere and not two,
              "%d nowhere %s; %d twice %s" % (len(nowhere), short(nowhere[:2]), len(two), short(two[:2])))
        check(m + " without SIGHUP: none sent a second after the rename is in the file renamed away "
              "(audit.log.1)", not late1, "%d: %s" % (len(late1), short(late1[:2])))
        check(m + " with SIGHUP: none sent a second after it is in the file renamed away (audit.log.2)",
              not late2, "%d: %s" % (len(late2), short(late2[:2])))
        check(m + ": each file holds whole records only, each once, no lost= line",
              all(ok for _, ok in files.values()), {n: ok for n, (_, ok) in files.items()})
        st, body, _ = health(d)
        check(m + ": /ready ok, nothing lost", f and st == 200 and re.search(r"^audit mode=%s state=ok .* lost=0 "
                                                                            % mode, body, re.M), body)
        check(m + ": the writer logs the rename it found (event=reopen_audit_log reason=renamed)",
              "event=reopen_audit_log reason=renamed audit_log=%s" % path in d.log(), d.log()[-400:])
    finally:
        load.finish()
        rc = d.stop()
        check("renamed-%s daemon: SIGTERM exits 0" % mode, rc == 0, "exit %r" % rc)


def group_copytruncate():
    """logrotate's copytruncate under load (audit_mode count): the file is
    copied, then truncated to nothing while the daemon writes to it.  The
    lines after the truncation land at the start of the file (O_APPEND), not
    after a hole of NUL bytes at the old offset; every request sent after
    the truncation has its record in the file.  (What comes between the copy
    and the truncation is lost to both: SERVE.md says so and recommends
    rotation by rename.)"""
    path = os.path.join(own_dir("copytruncate"), "audit.log")
    d = Daemon("copytruncate", ["--threads", "2", "--audit-log", path])
    load = Load(d)
    try:
        load.start()
        wait_for(lambda: len(load.results()) >= 300, 10)
        shutil.copyfile(path, path + ".1")
        os.truncate(path, 0)
        t = time.monotonic()
        wait_for(lambda: load.answered_since(t) >= 1000, 20)
        load.finish()
        wait_for(lambda: drained(d), 10)
        with open(path, "rb") as fh:
            data = fh.read()
        lines, whole = read_lines(path)
        recs, twice = records(lines)
        _, losses, bad = parse_file(lines)
        after = [(ids[0], len(ids)) for t0, _, ids, _ in load.results() if ids and t0 >= t]
        check("copytruncate: the file starts with a whole record (no hole of NUL bytes at the old "
              "offset: %d NUL bytes)" % data.count(b"\0"), b"\0" not in data and lines
              and RECORD_RE.fullmatch(lines[0]), short(data[:80]))
        check("copytruncate: whole records only, each once", whole and not bad and not losses and not twice,
              short(bad[:2]))
        check("copytruncate: every one of the %d requests sent after the truncation has its record"
              % len(after), after and all(recs.get(f) == n for f, n in after))
    finally:
        load.finish()
        rc = d.stop()
        check("copytruncate daemon: SIGTERM exits 0", rc == 0, "exit %r" % rc)


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
    p = subprocess.run([IDGEN, "serve", "--check-config", "--audit-timeout-ms", "5"], capture_output=True,
                       timeout=10, env=env)
    err = p.stderr.decode().strip()
    check("--audit-timeout-ms 5: exit 2 naming the bounds (10 to 60000)",
          p.returncode == 2 and 'audit_timeout_ms = "5"' in err and "10" in err and "60000" in err, err)


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
                         ("a frozen file system, audit_mode require: bounded waits", group_frozen_require),
                         ("the file removed, audit_mode require", group_removed),
                         ("rotation by rename, audit_mode require", lambda: group_renamed("require")),
                         ("rotation by rename, audit_mode count", lambda: group_renamed("count")),
                         ("rotation by copytruncate", group_copytruncate)],
                  watchdog_s=240)
    finally:
        for mnt in reversed(MOUNTS[:]):
            run("fsfreeze", "-u", mnt)
            unmount(mnt)
