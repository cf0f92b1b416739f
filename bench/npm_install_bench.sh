#!/usr/bin/env bash
# npm_install_bench.sh -- how long a new user's `npm install` of the npm
# package (@idgen/idgen) takes: the tarball packed from js/ (its prepack
# step takes the addon and idgen.wasm from BUILD), installed into a fresh
# directory under the system's temporary folder, ROUNDS times each way:
#   prebuilt   `npm install TARBALL` (install scripts not run, npm's
#              default): the prebuilt addon is used as it is;
#   source     the same with the install script allowed and
#              IDGEN_BUILD_FROM_SOURCE=1: the addon built from the
#              package's sources with cmake (-j2);
# then the first require() and 1,000 IDs from a file: registry lease.
# Medians and each run, in seconds, as a Markdown table (docs/BENCHMARKS.md,
# "npm package").  The npm cache is warmed by one install first (the
# tarball is a local file; nothing else is fetched).
#
#   bench/npm_install_bench.sh [BUILD] [ROUNDS]     (default build, 3)
#   make bench-npm
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
rounds=${2:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-npm-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset IDGEN_NODE_ADDON IDGEN_WASM_DIR

(cd "$repo/js" && IDGEN_BUILD_DIR=$build npm pack --pack-destination "$tmp" --loglevel=error >/dev/null)
tarball=$(echo "$tmp"/*.tgz)

now() { date +%s.%N; }
# one_install DIR MODE: the seconds `npm install` took
one_install() {
  local d=$1 mode=$2 t0 t1
  mkdir "$d"
  printf '{"name":"bench","private":true}\n' >"$d/package.json"
  t0=$(now)
  if [ "$mode" = source ]; then
    (cd "$d" && IDGEN_BUILD_FROM_SOURCE=1 npm install --no-audit --no-fund --loglevel=error \
      --dangerously-allow-all-scripts "$tarball" >/dev/null 2>&1)
    [ -f "$d/node_modules/@idgen/idgen/build/idgen.node" ] ||
      { echo "npm_install_bench: no addon built from sources in $d" >&2; exit 1; }
  else
    (cd "$d" && npm install --no-audit --no-fund --loglevel=error "$tarball" >/dev/null 2>&1)
  fi
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
# first_use DIR: the seconds of node's first require() and 1,000 leased IDs
first_use() {
  local t0 t1
  t0=$(now)
  (cd "$1" && node -e "const i = require('@idgen/idgen');
    const g = new i.Snowflake({ registry: 'file:' + process.argv[1] }); g.nextBatch(1000); g.close();" \
    "$1/registry")
  t1=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

one_install "$tmp/warm" prebuilt >/dev/null
declare -A runs=()
for mode in prebuilt source; do
  for i in $(seq "$rounds"); do
    runs[$mode]+="$(one_install "$tmp/$mode$i" "$mode") "
    runs[$mode-use]+="$(first_use "$tmp/$mode$i") "
  done
done

size=$(du -k "$tarball" | cut -f1)
echo "| install | median (s) | runs (s) | first require() + 1,000 leased IDs, median (s) |"
echo "|---|---|---|---|"
for mode in prebuilt source; do
  read -ra r <<<"${runs[$mode]}"
  read -ra u <<<"${runs[$mode-use]}"
  echo "| $mode | $(median "${r[@]}") | ${runs[$mode]% } | $(median "${u[@]}") |"
done
echo
echo "tarball $(basename "$tarball"): ${size} kB; node $(node --version), npm $(npm --version)," \
     "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
