#!/usr/bin/env bash
# The Thrift service beside RESP and HTTP: one daemon (twitter layout, the
# static registry, 2 event loops) with all three listeners, and one load
# client (bench/proto_load.c) that drives each the same way: C connections,
# one request for one ID at a time each, S seconds; runs alternate between
# the protocols, R rounds, and the medians are printed.
# Usage: bench/thrift_bench.sh BUILD_DIR [CONNECTIONS] [SECONDS] [ROUNDS]
set -eu
build=${1:?usage: thrift_bench.sh BUILD_DIR [CONNECTIONS] [SECONDS] [ROUNDS]}
conns=${2:-50}
secs=${3:-5}
rounds=${4:-3}
tmp=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$build/idgen" serve --registry static --node datacenter=1 --node worker=1 --threads 2 \
  --http 127.0.0.1:0 --resp 127.0.0.1:0 --thrift 127.0.0.1:0 2>"$tmp/log" &
pid=$!
for _ in $(seq 100); do [ "$(grep -c event=listen "$tmp/log")" = 3 ] && break; sleep 0.05; done
port() { sed -n "s/.*event=listen proto=$1 addr=127.0.0.1:\([0-9]*\).*/\1/p" "$tmp/log"; }
echo "# $(date -u +%FT%TZ) $("$build/idgen" --version | head -1); $conns connections, ${secs} s runs, $rounds rounds"
for _ in $(seq "$rounds"); do
  for p in thrift resp http; do
    "$build/proto_load" "$p" 127.0.0.1 "$(port $p)" "$conns" "$secs" | tee -a "$tmp/$p"
  done
done
echo "# medians of $rounds:"
for p in thrift resp http; do
  sort -k4 -n "$tmp/$p" | sed -n "$(((rounds + 1) / 2))p"
done
