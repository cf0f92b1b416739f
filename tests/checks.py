"""What the stand-alone Python tests share (status_page_test.py,
systemd_test.py): named checks counted for the closing "N passed, N failed"
line, and a free loopback port."""
import socket
import sys

passed = failed = 0


def check(what, ok, detail=""):
    """Prints "ok   WHAT" or "FAIL WHAT" with the detail; returns ok."""
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + what)
    else:
        failed += 1
        print("FAIL " + what + ("\n     " + str(detail)[:800] if detail != "" else ""))
    return ok


def finish():
    """The closing line; exits 1 if any check failed."""
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
