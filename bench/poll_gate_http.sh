#!/usr/bin/env bash
# Busy polling's gate under a load that leaves no CPU idle: HTTP with two wrk threads.
#
# Usage: bench/poll_gate_http.sh [--rounds N] [PATH_TO_idgen]
#
# Starts two `idgen serve` daemons on loopback (static registry): the defaults, which poll
# only onto idle CPUs (docs/DESIGN.md §10), and `--busy-poll-us 0`, which never polls. Each
# round runs `wrk -t2 -c64 -d4s --latency` on /id against both, after a second of idle, in
# alternating order, and prints requests/s and p99. At the end: the medians, and the default
# daemon's busy-poll counters. On a two-core machine, two wrk threads leave no CPU idle, so
# the gate should keep the default daemon from polling, and both should show the same p99
# (a loop that polls there is preempted and waits out a time slice: p99 7-8 ms against 1-3).
# Needs wrk and curl. Exit status 0, or 1 when a daemon or wrk failed.
set -u
rounds=6
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "poll_gate_http.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
idgen=${1:-$(dirname "$0")/../build/idgen}
for t in wrk curl; do
  command -v $t >/dev/null || { echo "poll_gate_http.sh: needs $t" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

# start LABEL ARGS...: a daemon; sets PORT
start() {
  local label=$1; shift
  "$idgen" serve --http 127.0.0.1:0 --resp off --registry static --node "worker=$((${#pids[@]} + 1))" \
    "$@" > /dev/null 2> "$tmp/$label.log" &
  pids+=($!)
  for _ in $(seq 100); do
    PORT=$(sed -n 's/.*event=listen proto=http addr=127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$label.log")
    [ -n "$PORT" ] && return 0
    sleep 0.05
  done
  echo "poll_gate_http.sh: $label did not start:" >&2; cat "$tmp/$label.log" >&2; exit 1
}
start default; port_default=$PORT
start nopoll --busy-poll-us 0; port_nopoll=$PORT

run() { # LABEL PORT
  sleep 1
  local out
  out=$(wrk -t2 -c64 -d4s --latency "http://127.0.0.1:$2/id") || { echo "wrk failed" >&2; exit 1; }
  local rps p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<< "$out")
  p99=$(awk '$1 == "99%" {print $2}' <<< "$out")
  echo "$1 $rps $p99" >> "$tmp/results"
  printf '%-8s %10s requests/s  p99 %s\n' "$1" "$rps" "$p99"
}
for ((r = 1; r <= rounds; r++)); do
  echo "round $r/$rounds"
  if ((r % 2)); then run default "$port_default"; run nopoll "$port_nopoll"
  else run nopoll "$port_nopoll"; run default "$port_default"; fi
done
echo
echo "medians of $rounds rounds (wrk -t2 -c64 -d4s --latency /id):"
for l in default nopoll; do
  awk -v l="$l" '$1 == l {
      r[++n] = $2; v = $3; u = v ~ /us$/ ? 0.001 : v ~ /ms$/ ? 1 : 1000; sub(/[a-z]+$/, "", v); p[n] = v * u }
    function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n + 1) / 2] : (a[n/2] + a[n/2 + 1]) / 2 }
    END { printf "%-8s %10.0f requests/s  p99 %.2f ms\n", l, med(r, n), med(p, n) }' "$tmp/results"
done
echo "default daemon: $(curl -s "http://127.0.0.1:$port_default/metrics" |
  grep -E '^idgen_(busy_polls_total|busy_poll_loops_allowed|host_other_runnable_threads)' | tr '\n' ' ')"
