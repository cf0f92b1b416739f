#!/usr/bin/env bash
# Instructions per operation, counted by callgrind: repeatable on a noisy
# machine, so this is the figure to compare for regressions.
# Usage: bench/callgrind.sh [BUILD_DIR] [--compare BASELINE]
#   --compare: also print the change against BASELINE (such as
#   bench/callgrind-baseline.txt) and exit 1 if any operation costs more
#   than 5% more instructions.
set -euo pipefail
build=build
baseline=""
while [ $# -gt 0 ]; do
  case $1 in
  --compare) baseline=${2:?--compare needs a file}; shift 2 ;;
  *) build=$1; shift ;;
  esac
done
bench="$build/idgen-bench"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
count() { # ops which -> total instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --ops "$1" --only "$2" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%-18s %10s\n' operation "instr/op" >"$out"
# The decoders run their AVX2 paths under valgrind (it hides AVX-512), and
# their scalar paths as the "-scalar" rows.
for which in next next-precise next_n compose decompose ulid-encode ulid-decode \
  ulid-decode-scalar ulid-monotonic uuid-format uuid-parse uuid-parse-scalar uuid7-monotonic; do
  small=$(count 100000 "$which")
  large=$(count 1100000 "$which")
  # The difference removes start-up and calibration costs.
  awk -v a="$small" -v b="$large" -v w="$which" 'BEGIN { printf "%-18s %10.1f\n", w, (b - a) / 1000000 }' >>"$out"
done
cat "$out"
[ -n "$baseline" ] || exit 0
awk 'NR == FNR { if (FNR > 1) base[$1] = $2; next }
     FNR > 1 && ($1 in base) {
       d = ($2 - base[$1]) / base[$1] * 100
       printf "%-18s %+6.1f%% against the baseline\n", $1, d
       if (d > 5) bad = 1
     }
     END { exit bad }' "$baseline" "$out"
