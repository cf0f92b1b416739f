"""The tally shared by the Python tests: one line per check ("ok   NAME" or
"FAIL NAME: DETAIL"), and the counts for the closing "N passed, M failed"."""

passed = 0
failed = 0
failures = []  # the names of the failed checks


def report(name, cond, detail="", limit=None):
    """Prints and counts one check; returns whether it passed.  `limit`
    cuts the detail (str()'d) to that many characters."""
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + name, flush=True)
    else:
        failed += 1
        failures.append(name)
        detail = str(detail) if detail else ""
        if limit:
            detail = detail[:limit]
        print("FAIL " + name + (": " + detail if detail else ""), flush=True)
    return bool(cond)


def summary():
    """The closing line."""
    return "%d passed, %d failed" % (passed, failed)


def finish():
    """Prints the closing line and exits: 1 if any check failed."""
    print(summary(), flush=True)
    raise SystemExit(1 if failed else 0)

