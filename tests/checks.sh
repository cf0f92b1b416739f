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
