#!/usr/bin/env python3
"""What only the file: registry has, beside the contract
(tests/registry/harness.py says how the suites fit): a lock file replaced
under a daemon, and how long a daemon takes from start to listening.

Usage: python3 tests/registry/suite_file.py PATH/TO/idgen  (or: ctest -R registry.file)
"""

from harness import *  # noqa: F401,F403  the daemon, servers, clients, check()
from shared import *  # noqa: F401,F403  scenarios shared with other suites





def main():
    reg = WORK.registry("reg")
    swap(reg, "file lease replaced")
    start = []
    for i in range(7):
        t = time.monotonic()
        x = Daemon("file-start-%d" % i, ["--registry", reg, "--node", "datacenter=13"])
        start.append(time.monotonic() - t)
        x.stop()
    start.sort()
    print("info file: daemon start to listening, median of 7: %.1f ms (min %.1f, max %.1f)"
          % (start[3] * 1000, start[0] * 1000, start[-1] * 1000))


if __name__ == "__main__":
    run(main)
