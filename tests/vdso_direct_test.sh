#!/usr/bin/env bash
# vdso_direct_test.sh -- the library built with -DIDGEN_VDSO_DIRECT=ON (the
# vDSO's clock_gettime called directly: src/core/clock_vdso.c, off by
# default) passes the clock tests: test_clock (the read is the kernel's
# answer, through the vDSO's entry with nothing preloaded) and clock_follow
# (IDs follow libfaketime, a shim and a non-PIE program: clock_gettime is
# chosen there).
#
#   tests/vdso_direct_test.sh
#
# Configures and builds those tests only, in a directory of its own under
# /tmp (removed at the end).  Exit status: 0 passed, 1 failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/idgen-vdso-XXXXXX)
trap 'rm -rf "$work"' EXIT
cmake -S "$ROOT" -B "$work/b" -DIDGEN_VDSO_DIRECT=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/b" -j 2 --target test_clock clock_follow clock_follow_nopie clock_shim \
  >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
cd "$work/b"
ctest -R '^(test_clock|clock_follow|clock_follow\..*)$' --no-tests=error --output-on-failure -V |
  grep -E "ID clocks read through|Test #|tests passed|FAILED|Error" || true
ctest -R '^(test_clock|clock_follow|clock_follow\..*)$' --no-tests=error >/dev/null
