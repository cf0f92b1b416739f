#!/usr/bin/env bash
# bench/public_daemon.sh: the daemon's public IDs against its plain IDs, in one run
# (make bench-public-daemon).
#
#   bench/public_daemon.sh [--quick] [--rounds N] [--out FILE] [--keep] [PATH_TO_idgen]
#
# A key file from `idgen public --new-key` (mode 0600, in a temporary directory), then two
# daemons with --public-key: "int" (the integer form: a twitter-size ID stays a 63-bit
# integer) and "text" (--public-prefix user: the text form, user_ and 17 characters).
#   HTTP   wrk -t2 -c64 -d10s: /id against /id?format=public (int), /id?format=public (text),
#          and /id?count=1000 against /id?count=1000&format=public (a batch, mapped as one).
#   RESP   redis-benchmark -c 50: `ID` against `PUBLIC ID` (an ID made before) and
#          `UNPUBLIC PUB` (its public form), on the int daemon.
# The daemons run the layout time:41,worker:4,sequence:18 (bench/serve_bench.sh's batch
# layout), so that a batch is not held back by a twitter tick's 4,096 IDs.  Runs alternate,
# N rounds (default 3); medians.  The load average is printed: the machine is shared.
#
# --quick: one round, redis-benchmark -n 100000, wrk -d2s.  Exit status: 0 done, 1 a run
# failed (client errors, non-2xx replies, a daemon that died), 2 bad usage or a missing tool,
# 77 an idgen without public IDs (no `idgen public` command, or no format=public).
# shellcheck disable=SC2317,SC2086 # trap-called functions; word-split number lists
set -uo pipefail

prog=public_daemon
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

while [ $# -gt 0 ]; do bench_option "$@"; shift "$OPT_SHIFT"; done
bench_options_end
if [ "$quick" = 1 ]; then resp_n=100000 wrk_d=2s; else resp_n=1000000 wrk_d=10s; fi
resp_c=50 wrk_t=2 wrk_c=64
layout=time:41,worker:4,sequence:18
resolve_idgen

need redis-benchmark redis-tools
need redis-cli redis-tools
need wrk wrk
need python3 python3
need_end
if ! "$idgen" public --help >/dev/null 2>&1; then
  echo "$prog: $idgen has no 'public' command: this build has no public IDs (skipped)" >&2
  exit 77
fi

bench_state idgen-public-bench "logs, the key file and configs"
wrk_lua

http_get() {  # http_get PORT PATH: the body on stdout; fails unless the status is 200
  python3 - "$1" "$2" <<'PY'
import sys, http.client
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", sys.argv[2])
r = c.getresponse()
body = r.read()
sys.stdout.write(body.decode("utf-8", "replace"))
sys.exit(0 if r.status == 200 else 1)
PY
}

run_client() {  # run_client OUTFILE SECONDS "SERVER_PIDS" COMMAND...: sets RUN_SERVER_TICKS
  local f=$1 t=$2 spids=$3 rc s0; shift 3
  s0=$(ticks $spids)
  bg_client "$f" "$t" "$@"; rc=$?
  RUN_SERVER_TICKS=$(($(ticks $spids) - s0))
  return "$rc"
}
wrk_run() {  # wrk_run KEY PID URL
  local key=$1 pid=$2 url=$3 f=$tmp/wrk-$1-$RANDOM.log rc
  local cmd=(wrk -t"$wrk_t" -c"$wrk_c" -d"$wrk_d" --latency -s "$tmp/report.lua" "$url")
  [ -n "${CMD[$key]-}" ] || CMD[$key]="wrk -t$wrk_t -c$wrk_c -d$wrk_d --latency '/${url#http://127.0.0.1:*/}'"
  run_client "$f" $(( ${wrk_d%s} + 60 )) "$pid" "${cmd[@]}"; rc=$?
  wrk_figures "$key" "$f" "$rc" "$url" "${cmd[@]}"; rc=$?
  [ "$rc" = 0 ] || return 1
  add "$key" "$WRK_RPS" "$WRK_P99" "$(cpu_per_req "$WRK_N")"
  log "$key: $(fmt_int "$WRK_RPS") requests/s, p99 $WRK_P99 ms"
}
resp_run() {  # resp_run KEY PID PORT COMMAND...
  local key=$1 pid=$2 port=$3 f=$tmp/rb-$1-$RANDOM.log rc; shift 3
  local cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -c "$resp_c" -n "$resp_n" --csv "$@")
  [ -n "${CMD[$key]-}" ] || CMD[$key]="redis-benchmark -c $resp_c -n $resp_n $*"
  run_client "$f" $((resp_n / 5000 + 60)) "$pid" "${cmd[@]}"; rc=$?
  rb_figures "$key" "$f" "$rc" "${cmd[@]}" || return 1
  if grep -q 'Error from server' "$f"; then err "$key: error replies: $(grep -m1 'Error from server' "$f")"; fi
  add "$key" "$RB_RPS" "$RB_P99" "$(cpu_per_req "$resp_n")"
  log "$key: $(fmt_int "$RB_RPS") requests/s, p99 $RB_P99 ms"
}

bench_facts
key=$tmp/public.key
if ! "$idgen" public --new-key "$key" >"$tmp/new-key.log" 2>&1; then
  err "idgen public --new-key failed: $(tail -2 "$tmp/new-key.log" | tr '\n' ' ')"
  exit 1
fi
idgen_serve int --space int --layout "$layout" --http 127.0.0.1:0 --resp 127.0.0.1:0 \
  --public-key "$key" || exit 1
int_pid=$IDGEN_PID int_http=$HTTP_PORT int_resp=$RESP_PORT
idgen_serve text --space text --layout "$layout" --http 127.0.0.1:0 --resp off \
  --public-key "$key" --public-prefix user || exit 1
text_pid=$IDGEN_PID text_http=$HTTP_PORT

# Sanity: each form answers, and goes back to an ID.
int_sample=$(http_get "$int_http" '/id?format=public') || { err "/id?format=public (int) failed: $int_sample"; exit 1; }
text_sample=$(http_get "$text_http" '/id?format=public') || { err "/id?format=public (text) failed: $text_sample"; exit 1; }
case "$text_sample" in user_*) ;; *) err "the text daemon's public ID '$text_sample' lacks its prefix"; exit 1 ;; esac
plain_id=$(http_get "$int_http" /id) || { err "/id failed"; exit 1; }
pub_id=$(redis-cli -p "$int_resp" PUBLIC "$plain_id")
back_id=$(redis-cli -p "$int_resp" UNPUBLIC "$pub_id")
[ "$back_id" = "$plain_id" ] || { err "UNPUBLIC(PUBLIC $plain_id) gave '$back_id' (via '$pub_id')"; exit 1; }
log "samples: int $int_sample, text $text_sample; PUBLIC $plain_id = $pub_id"

int_url=http://127.0.0.1:$int_http text_url=http://127.0.0.1:$text_http
for ((r = 1; r <= rounds; r++)); do
  log "round $r of $rounds"
  wrk_run http_id "$int_pid" "$int_url/id"
  wrk_run http_pub_int "$int_pid" "$int_url/id?format=public"
  wrk_run http_pub_text "$text_pid" "$text_url/id?format=public"
  wrk_run http_batch "$int_pid" "$int_url/id?count=1000"
  wrk_run http_batch_pub "$int_pid" "$int_url/id?count=1000&format=public"
  resp_run resp_id "$int_pid" "$int_resp" ID
  resp_run resp_public "$int_pid" "$int_resp" PUBLIC "$plain_id"
  resp_run resp_unpublic "$int_pid" "$int_resp" UNPUBLIC "$pub_id"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f", a / b }'; }
row() {  # row KEY LABEL IDS_PER_REQUEST BASE_KEY
  local m b; m=$(med RPS "$1") b=$(med RPS "$4")
  echo "| $2 | $(runs "$1") | **$(fmt_int "$m")** | $(fmt_int "$(awk -v m="$m" -v k="$3" 'BEGIN{ if (m != "") print m * k }')") | $(med P99 "$1") ms | $(med SCPU "$1") µs | $(ratio "$m" "$b")× |"
}
report() {
  echo "## Public IDs from the daemon: $started, \`bench/public_daemon.sh$([ "$quick" = 1 ] && echo ' --quick')\`"
  echo
  echo "$idgen_version · layout \`$layout\` · wrk $wrk_version · $(nproc) cores ($cpu) ·"
  echo "load average $load_start at the start, $load_end at the end. Clients and the daemons share"
  echo "the cores; $rounds round(s), alternating; medians. Samples: int \`$int_sample\`, text \`$text_sample\`."
  [ "$quick" = 1 ] && echo "**Quick run**: short runs, one round; indicative only."
  echo
  echo "| request | requests/s, each run | median | IDs/s | p99 | server CPU/request | vs plain |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  row http_id "HTTP \`/id\`" 1 http_id
  row http_pub_int "HTTP \`/id?format=public\` (int)" 1 http_id
  row http_pub_text "HTTP \`/id?format=public\` (text, \`user_\`)" 1 http_id
  row http_batch "HTTP \`/id?count=1000\`" 1000 http_batch
  row http_batch_pub "HTTP \`/id?count=1000&format=public\` (int)" 1000 http_batch
  row resp_id "RESP \`ID\`" 1 resp_id
  row resp_public "RESP \`PUBLIC ID\`" 1 resp_id
  row resp_unpublic "RESP \`UNPUBLIC PUB\`" 1 resp_id
  echo
  echo "Commands: \`${CMD[http_id]-}\` (and the other URLs), \`${CMD[resp_id]-}\`, \`${CMD[resp_public]-}\`."
  report_problems
}
report_end
