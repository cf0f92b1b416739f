#!/usr/bin/env bash
# bench/seq_peers.sh: dense numbers as users make them today, beside idgen's sequences, in
# one run: PostgreSQL nextval() on a sequence without CACHE and with CACHE 100, Redis INCR,
# Redis INCRBY range allocation by the client (1,000 numbers a call), and the idgen daemon's
# RESP `SEQ bench 1` and `SEQ bench 100` (file: registry).  One client each, SECONDS per run
# (default 3), the modes alternated round by round (default 3 rounds); medians.
#
#   bench/seq_peers.sh [--quick] [--rounds N] [--seconds S] [--out FILE] [--keep] [PATH_TO_idgen]
#
# Starts a throwaway PostgreSQL 15 (tests/pg_server.sh: loopback, fsync off), redis-server
# (loopback, no persistence) and `idgen serve` on ports picked free, and stops them by PID at
# the end.  Builds bench/seq_peers.c (hiredis, libpq) in its temporary directory.  Prints a markdown table on stdout.
# shellcheck disable=SC2317 # functions called from traps
set -uo pipefail
prog=seq_peers.sh
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
seconds=3
while [ $# -gt 0 ]; do
  case $1 in
  --seconds) seconds=${2:?--seconds needs a number}; shift 2; continue ;;
  esac
  bench_option "$@"; shift "$OPT_SHIFT"
done
bench_options_end
[ "$quick" = 1 ] && seconds=1
resolve_idgen
need redis-server redis-server
need /usr/lib/postgresql/15/bin/initdb postgresql-15
need cc gcc
need_end
pkg-config --exists hiredis libpq ||
  { echo "$prog: needs libhiredis-dev and libpq-dev (scripts/install-deps.sh installs them)" >&2; exit 2; }
bench_state idgen-seq-peers "the servers' logs"
peers=$tmp/seq_peers
# shellcheck disable=SC2046 # pkg-config's words
cc -std=c11 -O2 -o "$peers" "$here/seq_peers.c" $(pkg-config --cflags --libs hiredis libpq) ||
  { echo "$prog: bench/seq_peers.c did not build" >&2; exit 2; }

median() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "-"}'; }
report() {
  local m label
  echo "### Dense numbers, one client ($rounds rounds of ${seconds} s, medians; $started)"
  echo
  echo "CPU: $cpu; load at start: $load_start; $idgen_version"
  echo
  echo "| what | ns per call | numbers/s |"
  echo "|---|---:|---:|"
  for m in "${modes[@]}"; do
    case $m in
    pg1) label="PostgreSQL \`SELECT nextval()\` (no CACHE)" ;;
    pg100) label="PostgreSQL \`SELECT nextval()\` (CACHE 100)" ;;
    incr) label="Redis \`INCR\`" ;;
    incrby) label="Redis \`INCRBY 1000\`, numbers handed out by the client" ;;
    seq1) label="idgen daemon, RESP \`SEQ bench 1\`" ;;
    seq100) label="idgen daemon, RESP \`SEQ bench 100\`" ;;
    esac
    printf '| %s | %s | %s |\n' "$label" "$(printf '%s' "${NS[$m]-}" | median)" \
      "$(printf '%s' "${RATE[$m]-}" | median)"
  done
  report_problems
}
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

bench_facts
pg_dir=$(mktemp -u "${TMPDIR:-/tmp}/idgen-seq-peers-pg.XXXXXX") # the postgres user writes it: not under $tmp (0700)
pg_port=$(free_port)
pg_uri=$("$repo/tests/pg_server.sh" start "$pg_dir" "$pg_port") || { err "PostgreSQL did not start"; report_end; }
stop_pg() { "$repo/tests/pg_server.sh" stop "$pg_dir" >/dev/null 2>&1 || true; }
redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
  --daemonize no >"$tmp/redis.log" 2>&1 &
pids+=("$!"); names+=("redis-server")
for ((i = 0; i < 50; i++)); do redis-cli -p "$redis_port" PING >/dev/null 2>&1 && break; sleep 0.1; done
idgen_serve seq --http 127.0.0.1:0 --resp 127.0.0.1:0 || { stop_pg; report_end; }

declare -A NS RATE
modes=(pg1 pg100 incr incrby seq1 seq100)
run_mode() {
  case $1 in
  pg1) "$peers" pg "$pg_uri" 1 "$seconds" ;;
  pg100) "$peers" pg "$pg_uri" 100 "$seconds" ;;
  incr) "$peers" incr 127.0.0.1 "$redis_port" "$seconds" ;;
  incrby) "$peers" incrby 127.0.0.1 "$redis_port" 1000 "$seconds" ;;
  seq1) "$peers" seq 127.0.0.1 "$RESP_PORT" 1 "$seconds" ;;
  seq100) "$peers" seq 127.0.0.1 "$RESP_PORT" 100 "$seconds" ;;
  esac
}
for ((r = 1; r <= rounds; r++)); do
  for m in "${modes[@]}"; do
    line=$(run_mode "$m" 2>"$tmp/err-$m") || { err "$m: $(tr '\n' ' ' <"$tmp/err-$m")"; continue; }
    log "round $r $m: $line"
    push NS "$m" "$(kv "$line" ns_per_call)"
    push RATE "$m" "$(kv "$line" numbers_per_s)"
  done
done
stop_pg

report_end
