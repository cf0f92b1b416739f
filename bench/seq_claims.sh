#!/usr/bin/env bash
# bench/seq_claims.sh: a sequence's claims per second against each registry (file: on /tmp,
# a throwaway PostgreSQL 15 with fsync off, a one-member etcd 3.4), one holder and 4 holders
# of one sequence (each with min_step = max_step = 1 and no background thread: every next()
# is one claim), the modes alternated round by round, medians; then the adaptive step under a
# rate that steps 1k/s -> 100k/s -> 10M/s (simulated clock: bench/seq_claims.c steps).
#
#   bench/seq_claims.sh [--rounds N] [--seconds S] [BUILD_DIR]     (make bench-seq-claims)
#
# BUILD_DIR (default build) holds seq_claims.  The servers are started with
# tests/pg_server.sh and tests/etcd_server.sh on free loopback ports under a temporary
# directory and stopped by those scripts at the end.  Prints markdown on stdout; the
# per-round lines and the step trace on stderr.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=3 seconds=3 build=$repo/build
while [ $# -gt 0 ]; do
  case $1 in
  --rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
  --seconds) seconds=${2:?--seconds needs a number}; shift 2 ;;
  -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) build=$1; shift ;;
  esac
done
bin=$build/seq_claims
[ -x "$bin" ] || { echo "seq_claims.sh: no $bin (make build, or cmake --build BUILD --target seq_claims)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/idgen-seqclaims-XXXXXX)
chmod 755 "$tmp" # the postgres user keeps its data under it
cleanup() {
  "$repo/tests/pg_server.sh" stop "$tmp/pg" >/dev/null 2>&1 || true
  "$repo/tests/etcd_server.sh" stop "$tmp/etcd" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_ports() { /usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import components; print(components.free_ports_below_ephemeral(int(sys.argv[2]), 24000))' "$repo/tests" "$1"; }

mkdir -p "$tmp/file"
declare -A URI=([file]="file:$tmp/file")
URI[postgres]=$("$repo/tests/pg_server.sh" start "$tmp/pg" "$(free_ports 1)") || { echo "seq_claims.sh: PostgreSQL did not start" >&2; exit 1; }
URI[etcd]=$("$repo/tests/etcd_server.sh" start "$tmp/etcd" "$(free_ports 2)") || { echo "seq_claims.sh: etcd did not start" >&2; exit 1; }

declare -A RATE P50 P99 MAX
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; r++)); do
  for b in file postgres etcd; do
    for t in 1 4; do
      line=$("$bin" claims "${URI[$b]}" "$seconds" "$t") || { echo "seq_claims.sh: $b x$t failed" >&2; continue; }
      echo "round $r $b threads=$t: $line" >&2
      RATE[$b$t]+=" $(kv "$line" claims_per_s)"
      P50[$b$t]+=" $(kv "$line" p50_us)"
      P99[$b$t]+=" $(kv "$line" p99_us)"
      MAX[$b$t]+=" $(kv "$line" max_us)"
    done
  done
done

echo "### Claims per second ($rounds rounds of $seconds s, medians; $started; load at start $load)"
echo
echo "\`make bench-seq-claims\` (bench/seq_claims.sh): one holder, and 4 holders of one sequence in"
echo "one process (each its own registry handle), every \`idgen_seq_next\` one claim"
echo "(min_step = max_step = 1, no background thread)."
echo
echo "| registry | holders | claims/s (all holders) | claim p50 | claim p99 | claim max |"
echo "|---|---:|---:|---:|---:|---:|"
for b in file postgres etcd; do
  for t in 1 4; do
    printf '| %s | %d | %s | %s us | %s us | %s us |\n' "$b" "$t" \
      "$(printf '%s' "${RATE[$b$t]-}" | median)" "$(printf '%s' "${P50[$b$t]-}" | median)" \
      "$(printf '%s' "${P99[$b$t]-}" | median)" "$(printf '%s' "${MAX[$b$t]-}" | median)"
  done
done
echo
echo "### The adaptive step (segment_target 1 s, simulated clock: \`seq_claims steps\`)"
echo
"$bin" steps >"$tmp/steps" || { echo "seq_claims.sh: steps failed" >&2; exit 1; }
grep -v '^phase .*: [0-9]* numbers/s$' "$tmp/steps" >&2
grep -E '^phase [0-9]+: [0-9]+ numbers/s:' "$tmp/steps" | sed 's/^/- /'
