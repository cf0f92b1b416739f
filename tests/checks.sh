# checks.sh -- the tally of the shell tests (sourced; tests/checks.py is the
# Python one):
#   check WHAT CMD...   runs CMD, quiet, and counts "ok   WHAT" or
#                       "FAIL WHAT" (prefixed by $CHECK_PREFIX, if set)
#   ok WHAT / bad WHAT  count a result decided by the caller
#   tally               prints "N passed, N failed"; 0 if none failed
#   need_root TOOL...   exits 77 (skipped) unless root with every TOOL
#   retry SECONDS CMD...
#                       runs CMD every 0.5 s until it succeeds (its output on
#                       stdout), at most SECONDS (then its last output on
#                       stderr, status 1)
#   free_port [N]       a loopback port the kernel hands out, with the N-1
#                       after it free too (etcd_server.sh takes a pair)
# shellcheck shell=bash
pass=0 fail=0
ok() {
  pass=$((pass + 1))
  echo "${CHECK_PREFIX:-}ok   $*"
}
bad() {
  fail=$((fail + 1))
  echo "${CHECK_PREFIX:-}FAIL $*"
}
check() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}
tally() {
  echo "${CHECK_PREFIX:-}$pass passed, $fail failed"
  [ "$fail" = 0 ]
}
need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "skipped: needs root"
    exit 77
  fi
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || {
      echo "skipped: $t is missing"
      exit 77
    }
  done
}
retry() {
  local n=$(($1 * 2)) out i
  shift
  for ((i = 0; i < n; i++)); do
    out=$("$@" 2>&1) && {
      echo "$out"
      return 0
    }
    sleep 0.5
  done
  echo "$out" >&2
  return 1
}
free_port() {
  python3 - "${1:-1}" <<'PY'
import socket, sys
n = int(sys.argv[1])
for _ in range(100):
    socks = [socket.socket()]
    socks[0].bind(("127.0.0.1", 0))
    base = socks[0].getsockname()[1]
    try:
        for k in range(1, n):
            socks.append(socket.socket())
            socks[-1].bind(("127.0.0.1", base + k))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    break
else:
    sys.exit("free_port: no %d free ports in a row" % n)
PY
}
