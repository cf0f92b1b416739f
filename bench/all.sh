#!/usr/bin/env bash
# bench/all.sh: every benchmark docs/BENCHMARKS.md quotes, one after another
# on one machine, each one's output kept in OUTDIR (default
# /tmp/idgen-bench-all-$UID): the figures of one table per machine.
#
#   bench/all.sh [--quick] [--out OUTDIR] [BUILD_DIR]      (make bench-all)
#
#   machine.txt  the machine line, the date and the commit
#   core.txt     build/idgen-bench (the generators and codecs; --quick: --quick)
#   threads.txt  idgen bench --threads N, N = the core count and 4
#   peers.txt    bench/peers.sh (yitter/IdGenerator and skeeto/ulid-c; their sources
#                must be there: see bench/peers.sh)
#   serve.txt    bench/serve_bench.sh (the daemon beside redis-server and nginx)
#   thrift.txt   bench/thrift_bench.sh
#   tls.txt      bench/tls_bench.sh (the daemon with and without TLS)
#   pg.txt       bench/pg_bench.sh (the PostgreSQL extension; needs root)
#   js.txt       bench/js/run.sh (the addon and the WebAssembly build beside npm's
#                packages; needs the npm registry)
#   public.txt   build/public_bench (public IDs: each idgen_public_* call beside AES)
#   public-node.txt  bench/public_node.sh (the addon's Public beside hashids and sqids)
#   public-daemon.txt  bench/public_daemon.sh (/id?format=public against /id)
#
# A benchmark that fails or cannot run here is noted in its file and the run
# goes on; the exit status is 1 if any failed.  Nothing is run in parallel:
# the figures are for one quiet machine.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
quick=""
out=/tmp/idgen-bench-all-$(id -u)
build=$repo/build
while [ $# -gt 0 ]; do
  case $1 in
  --quick) quick=--quick; shift ;;
  --out) out=${2:?--out needs a directory}; shift 2 ;;
  -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "all.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  *) build=$(cd "$1" && pwd); shift ;;
  esac
done
mkdir -p "$out"
failed=0
run() { # name command...: runs it, output to $out/name.txt
  local name=$1
  shift
  echo "all.sh: $name: $*" >&2
  local t0=$SECONDS
  if "$@" >"$out/$name.txt" 2>"$out/$name.err"; then
    echo "all.sh: $name done in $((SECONDS - t0)) s" >&2
  else
    echo "all.sh: $name FAILED (exit $?; $out/$name.err)" >&2
    failed=1
  fi
}
{
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD)$(git -C "$repo" diff --quiet || echo ' (with changes)')"
  echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores"
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)"
  echo "kernel: $(uname -r); compiler: $(${CC:-cc} --version | head -1)"
} >"$out/machine.txt"
cores=$(nproc)
if [ -n "$quick" ]; then
  run core "$build/idgen-bench" --quick
  run threads "$build/idgen-bench" --threads "$((cores > 4 ? cores : 4))" --runs 3 --seconds 0.2
else
  run core "$build/idgen-bench"
  run threads "$build/idgen-bench" --threads "$((cores > 4 ? cores : 4))" --runs 5 --seconds 0.5
fi
run peers "$repo/bench/peers.sh" --idgen-build "$build" $quick
run serve "$repo/bench/serve_bench.sh" $quick "$build/idgen"
run thrift "$repo/bench/thrift_bench.sh" "$build"
run tls "$repo/bench/tls_bench.sh" $quick "$build/idgen"
if [ -n "$quick" ]; then
  run pg "$repo/bench/pg_bench.sh" --rounds 1 --seconds 3 "$build"
else
  run pg "$repo/bench/pg_bench.sh" "$build"
fi
IDGEN_NODE_ADDON=$build/js/idgen.node run js "$repo/bench/js/run.sh" $quick
if [ -n "$quick" ]; then
  run public "$build/public_bench" --runs 3 --ids 50000
else
  run public "$build/public_bench"
fi
IDGEN_NODE_ADDON=$build/js/idgen.node run public-node "$repo/bench/public_node.sh" "$build" $quick
run public-daemon "$repo/bench/public_daemon.sh" $quick "$build/idgen"
echo "all.sh: outputs in $out" >&2
exit $failed
