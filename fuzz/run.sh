#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time from its seed corpus.
# Usage: fuzz/run.sh BUILD_DIR SECONDS
set -euo pipefail
build=${1:?build dir}
secs=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for t in $(grep -E '^[a-z_]+$' "$here/targets"); do
  work=$(mktemp -d)
  cp "$here/corpus/$t"/* "$work/"
  echo "fuzz_$t: ${secs}s"
  if ! "$build/fuzz_$t" -max_total_time="$secs" -max_len=512 -print_final_stats=1 \
       -artifact_prefix="$build/" "$work" 2>"$build/fuzz_$t.log"; then
    tail -40 "$build/fuzz_$t.log"
    status=1
  else
    grep -E 'stat::number_of_executed_units' "$build/fuzz_$t.log" || true
  fi
  rm -rf "$work"
done
exit $status
