#!/bin/sh
# What leasing from a daemon costs (docs/BENCHMARKS.md "Leases from the
# daemon"), in one run: a daemon with --leases on a file: registry of its
# own, then
#   - acquisition latency through it (idgen://) against the same registry
#     direct (file:);
#   - IDs/s of one thread minting on a lease from it, against the static
#     registry (the ceiling) and the file: registry direct;
#   - IDs/s of one client fetching its IDs from the daemon instead
#     (GET /id?count=1 and count=100);
#   - the same three in Node.js (bench/js/lease.mjs) when the addon is built.
# Usage: bench/lease_bench.sh [BUILD]   (make bench-leases)
set -eu
build=${1:-build}
idgen=$build/idgen
tmp=$(mktemp -d /tmp/idgen-lease-bench.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
# The daemon's own generator on datacenter 0 (its default); the clients
# lease on datacenter 1.
layout=time:41@1ms,datacenter:2,worker:4,sequence:16,epoch=1288834974657 # as lease_bench.c's
"$idgen" serve --leases --registry "file:$tmp/reg" --layout "$layout" \
  --http 127.0.0.1:0 --resp off 2>"$tmp/daemon.log" &
pid=$!
port=
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*event=listen proto=http addr=.*:\([0-9][0-9]*\).*/\1/p' "$tmp/daemon.log" | head -n 1)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "lease_bench: the daemon did not listen:" >&2; cat "$tmp/daemon.log" >&2; exit 1; }
echo "# $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ); daemon pid $pid on port $port"
"$build/lease_bench" acquire 300 "idgen://127.0.0.1:$port" "file:$tmp/reg"
echo
"$build/lease_bench" mint 7 5000000 static "idgen://127.0.0.1:$port" "file:$tmp/reg"
echo
"$build/lease_bench" fetch 3 127.0.0.1 "$port" 1 100
if [ -f "$build/js/idgen.node" ] && command -v node >/dev/null; then
  echo
  IDGEN_NODE_ADDON="$build/js/idgen.node" node "$(dirname "$0")/js/lease.mjs" "127.0.0.1:$port" "$layout"
fi
