#!/usr/bin/env bash
# Instructions per operation, counted by callgrind: repeatable on a noisy
# machine, so this is the figure to compare for regressions.
# Usage: bench/callgrind.sh [BUILD_DIR]   (default build)
set -euo pipefail
build=${1:-build}
bench="$build/idgen-bench"
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
count() { # ops which -> total instructions
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --ops "$1" --only "$2" 2>&1 |
    sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
printf '%-14s %12s\n' operation "instr/op"
for which in next next-precise next_n compose decompose ulid-encode ulid-decode \
  ulid-monotonic uuid-format uuid-parse uuid7-monotonic; do
  small=$(count 100000 "$which")
  large=$(count 1100000 "$which")
  # The difference removes start-up and calibration costs.
  awk -v a="$small" -v b="$large" -v w="$which" 'BEGIN { printf "%-14s %12.1f\n", w, (b - a) / 1000000 }'
done
