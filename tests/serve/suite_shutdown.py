#!/usr/bin/env python3
"""Shutdown (timing): a graceful stop under load, and closing without losing
replies.

Usage: python3 tests/serve/suite_shutdown.py PATH/TO/idgen  (or: ctest -R serve.shutdown)
"""

from harness import *  # noqa: F401,F403  the daemon, clients, parsers, check()


def read_all(sock, timeout):
    """Reads until EOF; returns (bytes, how it ended: "eof", "reset" or "timeout")."""
    deadline = time.monotonic() + timeout
    data = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return bytes(data), "timeout"
        sock.settimeout(left)
        try:
            d = sock.recv(1 << 20)
        except socket.timeout:
            return bytes(data), "timeout"
        except ConnectionResetError:
            return bytes(data), "reset"
        if not d:
            return bytes(data), "eof"
        data += d


def group_shutdown():
    pidfile = os.path.join(TMP, "idgen.pid")
    d = Daemon("shutdown", ["--pid-file", pidfile, "--shutdown-timeout-ms", "3000"])
    bench = None
    try:
        try:
            with open(pidfile) as f:
                pid_text = f.read().strip()
        except OSError as e:
            pid_text = repr(e)
        check("pid file written with the daemon's pid", pid_text == str(d.p.pid), pid_text)
        bench = subprocess.Popen(["redis-benchmark", "-h", HOST, "-p", str(d.resp), "-c", "20", "-n", "10000000",
                                  "-P", "16", "-q", "ID"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        CHILDREN.append(bench)
        # our own pipelining client, reading as it goes
        s = socket.create_connection((HOST, d.resp), timeout=5)
        s.setblocking(False)
        req = resp_cmd("ID") * 64
        buf = bytearray()
        replies, pos, sent_reqs, ids = 0, 0, 0, []
        replies_at_term = sent_at_term = None
        parse_err = None
        t0 = time.monotonic()
        termed = None
        eof = False
        send_open = True
        while time.monotonic() - t0 < 15:
            want_w = send_open and sent_reqs - replies < 256
            r, w, _ = select.select([s], [s] if want_w else [], [], 0.05)
            if w:
                try:
                    n = s.send(req)
                    if n % len(resp_cmd("ID")):
                        # finish a partly sent command so every request is whole
                        rest = req[n:n + (len(resp_cmd("ID")) - n % len(resp_cmd("ID")))]
                        s.setblocking(True)
                        s.settimeout(2)
                        s.sendall(rest)
                        s.setblocking(False)
                        n += len(rest)
                    sent_reqs += n // len(resp_cmd("ID"))
                    if termed is None and time.monotonic() - t0 > 1.0:
                        # SIGTERM right after a write: requests are in flight
                        d.p.send_signal(signal.SIGTERM)
                        termed = time.monotonic()
                        replies_at_term, sent_at_term = replies, sent_reqs
                except (BlockingIOError, socket.timeout):
                    pass
                except OSError:
                    send_open = False
            if r:
                try:
                    data = s.recv(1 << 20)
                except BlockingIOError:
                    data = None
                except OSError:
                    data = b""
                if data == b"":
                    eof = True
                    break
                if data:
                    buf += data
                    try:
                        while True:
                            res = parse_resp(buf, pos)
                            if res is None:
                                break
                            ids.append(res[0])
                            pos = res[1]
                            replies += 1
                    except ProtoError as e:
                        parse_err = e
                        break
                    if pos > 1 << 20:
                        del buf[:pos]
                        pos = 0
        s.close()
        rc = None
        try:
            rc = d.p.wait(8)
        except subprocess.TimeoutExpired:
            pass
        t_exit = time.monotonic() - termed if termed else None
        check("graceful shutdown: our client saw EOF", eof, "replies %d" % replies)
        check("graceful shutdown: %d replies to our pipelined IDs parse as whole RESP (no half reply at EOF)" % replies,
              parse_err is None and pos == len(buf) and replies > 0,
              "error %r; %d bytes left over: %s" % (parse_err, len(buf) - pos, short(bytes(buf[pos:pos + 100]))))
        ints = [x for x in ids if type(x) is int]
        check("graceful shutdown: every reply was an ID, strictly increasing", len(ints) == len(ids) and increasing(ints),
              short([x for x in ids if type(x) is not int][:3]))
        check("graceful shutdown: the daemon exits 0 (%s)" % ("%.2fs after SIGTERM" % t_exit if rc is not None else "still running"),
              rc == 0 and t_exit is not None and t_exit < 3 + 2, "exit %r" % rc)
        check("graceful shutdown: the drain finished before shutdown_timeout_ms (3000; every client was reading)",
              rc is not None and t_exit is not None and t_exit < 3.0, "exit after %s s" % t_exit)
        check("graceful shutdown: every request our client sent before SIGTERM was answered "
              "(%s sent, %s answered at SIGTERM; %d answered in all)" % (sent_at_term, replies_at_term, replies),
              sent_at_term is not None and 0 < replies_at_term < sent_at_term <= replies,
              "in all %d sent, %d answered" % (sent_reqs, replies))
        text = d.log()
        lines = [ln for ln in text.splitlines() if ln.strip()]
        check("graceful shutdown: log has event=stop signal=TERM", re.search(r"event=stop signal=TERM", text) is not None,
              short(lines[-3:]))
        check("graceful shutdown: the log ends with event=exit code=0",
              lines and re.search(r"level=info event=exit code=0\b", lines[-1]) is not None, short(lines[-3:]))
        check("graceful shutdown: pid file removed", not os.path.exists(pidfile))
    finally:
        if bench is not None:
            try:
                bench.wait(5)
            except subprocess.TimeoutExpired:
                bench.kill()
                bench.wait()
        d.kill()


def group_close_cleanly():
    """A connection closed by the daemon after its last reply (Connection:
    close, QUIT, a drain) must deliver that reply whole, even when the client
    sent more that the daemon never reads: a plain close() would make the
    kernel reset the connection and drop what was still unsent."""
    d = Daemon("close", ["--max-batch", "100000", "--shutdown-timeout-ms", "5000"])
    try:
        s = socket.create_connection((HOST, d.http), timeout=5)
        s.sendall(b"GET /id?count=100000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        time.sleep(0.2)
        try:
            s.sendall(b"GET /id HTTP/1.1\r\nHost: x\r\n\r\n")  # never to be read
        except OSError:
            pass
        data, how = read_all(s, 10)
        s.close()
        r = parse_http(data)
        ok = r is not None and r[0].status == 200 and len(digits_lines(r[0].body) or []) == 100000
        check("Connection: close after a 2 MB reply, more sent meanwhile: the reply arrives whole, then EOF",
              ok and how == "eof", "%s after %d bytes" % (how, len(data)))

        s = socket.create_connection((HOST, d.resp), timeout=5)
        s.sendall(b"ID 100000\r\nQUIT\r\n")
        time.sleep(0.2)
        try:
            s.sendall(b"PING\r\n")
        except OSError:
            pass
        data, how = read_all(s, 10)
        s.close()
        replies, left = parse_resp_all(data)
        ok = (not left and len(replies) == 2 and isinstance(replies[0], list)
              and len(replies[0]) == 100000 and replies[1] == "OK")
        check("ID 100000 then QUIT, more sent meanwhile: both replies whole, then EOF", ok and how == "eof",
              "%s after %d bytes" % (how, len(data)))

        # SIGTERM while six large replies wait for a client that has not read yet.
        s = socket.create_connection((HOST, d.resp), timeout=5)
        for _ in range(6):
            s.sendall(b"ID 100000\r\n")
            time.sleep(0.05)
        d.p.send_signal(signal.SIGTERM)
        data, how = read_all(s, 10)
        s.close()
        replies, left = parse_resp_all(data)
        ok = (not left and len(replies) == 6
              and all(isinstance(x, list) and len(x) == 100000 for x in replies))
        check("SIGTERM with six 2 MB replies queued: all six arrive whole, then EOF", ok and how == "eof",
              "%s after %d bytes, %d replies" % (how, len(data), len(replies)))
        rc = d.stop()
        check("close daemon: exits 0 after the drain", rc == 0, "exit %r" % rc)
    finally:
        d.kill()


def group_parked_at_stop():
    """SIGTERM while requests are parked for their tick.  One that comes due
    within the drain's time limit is answered with its IDs; one that would
    come due only after it is refused at once (503 / -ERR "shutting down"),
    and the requests behind it on its connection are still answered.  Before,
    such a request was cut off at the limit: its connection closed with no
    reply."""
    layout = "time:41@1s,worker:10,sequence:2,epoch=1288834974000"  # 4 IDs a second
    d = Daemon("parked-stop", ["--threads", "1", "--max-borrow-ms", "0", "--max-wait-ms", "10000",
                               "--shutdown-timeout-ms", "2000"],
               node_args=["--layout", layout, "--registry", "static", "--node", "worker=5"])
    conns = []
    try:
        # Early in a second, so that `soon` is still parked at SIGTERM.
        time.sleep(1.02 - time.time() % 1.0)
        r, _ = curl(d.http, "/id?count=4")  # this second's IDs
        check("parked at stop: this second's 4 IDs", r is not None and r.status == 200)
        soon, late, resp = Conn(d.http), Conn(d.http), Conn(d.resp)
        conns += [soon, late, resp]
        # In this order: `soon` takes the next second's IDs, the others the
        # four seconds after (due after the 2 s limit).
        soon.send(http_req("/id?count=4") + http_req("/ready"))  # /ready answered in the drain
        time.sleep(0.05)
        late.send(http_req("/id?count=16"))
        time.sleep(0.05)
        resp.send(resp_cmd("ID", "16") + resp_cmd("PING"))
        time.sleep(0.05)
        m, _ = get_metrics(d)
        parked = mget(m, "idgen_requests_parked_total")
        t0 = time.monotonic()
        d.p.send_signal(signal.SIGTERM)
        try:
            r_late, t_late = late.http(timeout=5), time.monotonic() - t0
        except (EOFError, TimeoutError) as e:
            r_late, t_late = e, time.monotonic() - t0
        ok = (isinstance(r_late, HttpResp) and r_late.status == 503
              and b"shutting down" in r_late.body and r_late.h("retry-after") == "1")
        check("parked at stop: a request due after the drain's limit is refused at once: 503 "
              "shutting down, Retry-After: 1 (%.2f s after SIGTERM, limit 2 s)" % t_late,
              ok and t_late < 1.0, "parked %r; %s" % (parked, r_late if not isinstance(r_late, HttpResp)
                                                    else (r_late.status, short(r_late.body))))
        try:
            got = resp.resp_n(2, timeout=5)
        except (EOFError, TimeoutError) as e:
            got = [repr(e)]
        check("parked at stop: RESP ID 16 gets -ERR shutting down, the PING behind it PONG",
              len(got) == 2 and isinstance(got[0], RErr) and "shutting down" in got[0]
              and got[1] == "PONG", repr(got))
        try:
            r_soon = soon.http(timeout=5)
        except (EOFError, TimeoutError) as e:
            r_soon = e
        t_soon = time.monotonic() - t0
        ids = digits_lines(r_soon.body) if isinstance(r_soon, HttpResp) else None
        check("parked at stop: a request due within the limit gets its 4 IDs during the drain "
              "(%.2f s after SIGTERM)" % t_soon,
              isinstance(r_soon, HttpResp) and r_soon.status == 200 and ids is not None
              and len(ids) == 4 and 0.3 < t_soon < 2.0, repr(r_soon))
        try:
            r_ready = soon.http(timeout=5)
        except (EOFError, TimeoutError) as e:
            r_ready = e
        check("parked at stop: GET /ready behind it, answered during the drain: 503 shutting down "
              "(a load balancer sends no new clients)",
              isinstance(r_ready, HttpResp) and r_ready.status == 503
              and r_ready.body.startswith(b"shutting down: a graceful stop is under way"), repr(r_ready))
        eofs = [c.read_to_eof(5) for c in conns]
        check("parked at stop: each connection then ends (EOF)", all(eofs), repr(eofs))
        rc = d.stop(timeout=8)
        check("parked at stop: the daemon exits 0", rc == 0, "exit %r" % rc)
    finally:
        for c in conns:
            c.close()
        d.kill()


def group_parked_in_turn():
    """Requests that park one after another on one connection, on a layout
    of 4 IDs every 10 ms.  Pipelined, each is answered when its tick comes:
    one parked while the one before it was answered was left out of the
    loop's next wake-up, which slept a sweep (100 ms) past it (40 took
    1.8 s, not 0.4 s).  And during a drain, a request that the drain's read loop read
    and parked lost its reply, and so did those behind it: the loop read
    on, found nothing more and half-closed the connection under it."""
    layout = "time:41@10ms,worker:10,sequence:2,epoch=1288834974000"
    d = Daemon("parked-turn", ["--threads", "1", "--max-borrow-ms", "0", "--max-wait-ms", "10000",
                               "--shutdown-timeout-ms", "2000"],
               node_args=["--layout", layout, "--registry", "static", "--node", "worker=5"])
    c = None
    try:
        c = Conn(d.resp)
        t0 = time.monotonic()
        c.send(resp_cmd("ID", "4") * 40)
        try:
            got = c.resp_n(40, timeout=5)
        except (EOFError, TimeoutError) as e:
            got = [repr(e)]
        t = time.monotonic() - t0
        ids = [i for r in got if isinstance(r, list) for i in r]
        check("parked in turn: 40 pipelined ID 4, 160 increasing IDs over 40 ticks of 10 ms, "
              "in %.2f s (under 1 s; sleeping a sweep past due times took 1.8 s)" % t,
              len(ids) == 160 and increasing(ids) and t < 1.0, short(repr(got)))
        c.send(resp_cmd("ID", "40"))  # parks for 10 ticks
        time.sleep(0.02)
        c.send(resp_cmd("ID", "40"))  # in the kernel behind it: read by the drain, then parked
        time.sleep(0.02)
        d.p.send_signal(signal.SIGTERM)
        try:
            got = c.resp_n(2, timeout=5)
        except (EOFError, TimeoutError) as e:
            got = [repr(e)]
        ids = [i for r in got if isinstance(r, list) for i in r]
        check("parked in turn, SIGTERM: the parked request and the one behind it both get "
              "their 40 IDs within the drain", len(ids) == 80 and increasing(ids), short(repr(got)))
        check("parked in turn, SIGTERM: then EOF", c.read_to_eof(5), short(c.buf))
        rc = d.stop(timeout=8)
        check("parked-turn daemon: exits 0", rc == 0, "exit %r" % rc)
    finally:
        if c is not None:
            c.close()
        d.kill()


def group_drain_on_time():
    """A drain that a client outlasts ends at its limit, not at the loop's
    next sweep: the loop's wait stops at the limit (it slept up to 100 ms
    past it).  Timed from the daemon's own log (event=stop to event=exit)."""
    d = Daemon("on-time", ["--threads", "1", "--shutdown-timeout-ms", "50"])
    c = None
    try:
        c = Conn(d.resp)
        c.send(resp_cmd("PING"))
        c.resp()
        d.p.send_signal(signal.SIGTERM)
        rc = d.stop(timeout=8)
        stamps = {}
        for m in re.finditer(r"ts=\S+T(\d\d):(\d\d):(\d\d\.\d{3})Z level=\w+ event=(stop|exit)", d.log()):
            stamps[m.group(4)] = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        took = stamps.get("exit", 0) - stamps.get("stop", 1e9)
        check("drain on time: a client that stays; the 50 ms limit ends the drain in %.0f ms "
              "(at least 50, under 85)" % (took * 1000), rc == 0 and 0.049 <= took < 0.085,
              "exit %r; %r" % (rc, stamps))
    finally:
        if c is not None:
            c.close()
        d.kill()


if __name__ == "__main__":
    run_suite("shutdown",
              before=[],
              with_daemon=[],
              after=[('graceful shutdown under load', group_shutdown), ('closing without losing replies', group_close_cleanly),
                     ('requests parked at SIGTERM', group_parked_at_stop),
                     ('requests parked one after another', group_parked_in_turn),
                     ('a drain ends at its limit', group_drain_on_time)],
              snow_kinds=None)
