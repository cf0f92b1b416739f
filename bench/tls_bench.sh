#!/usr/bin/env bash
# bench/tls_bench.sh: what TLS costs `idgen serve`: the same daemon plain and with
# tls_cert/tls_key, side by side, in one run.
#
#   bench/tls_bench.sh [--quick] [--rounds N] [--key-type ec|rsa] [--out FILE] [--keep] [PATH_TO_idgen]
#
# PATH_TO_idgen defaults to build/idgen (relative to the repository).
#
# Two daemons with the same settings (a file: registry in the temporary directory, HTTP and
# RESP on free 127.0.0.1 ports), one of them with a certificate made here for 127.0.0.1
# (a throwaway CA, ECDSA P-256 keys; --key-type rsa: RSA 2048).  Each round measures both,
# the order alternating from round to round:
#
#   HTTP keep-alive      wrk -t2 -c64 -d10s GET /id (wrk's default: persistent connections)
#   HTTP new connections the same with -H 'Connection: close': a connection per request.
#                        wrk resumes its TLS sessions (session tickets), so these TLS
#                        handshakes are abbreviated ones.
#   RESP -P 1, -P 16     redis-benchmark -c 50 -n 1000000 (-P 16: 2000000) ID, with
#                        --tls --cacert CA for the TLS daemon
#   RESP new connections redis-benchmark -c 50 -n 30000 -k 0 ID: a connection per request;
#                        redis-benchmark (hiredis) never resumes: full handshakes.
#
# Each figure is the median of N rounds (default 3): requests/s, the p99 latency, and the
# daemon's CPU time per request (all its threads, /proc/PID/stat); the table gives the
# ratios TLS/plain.  Clients and daemons share the machine's cores.
#
# --quick: one round, wrk -d2s, redis-benchmark -n 100000 (-k 0: 5000), a smoke run.
# --out FILE: also write the report there.  --keep: keep the temporary directory.
#
# Progress on stderr, a markdown report on stdout.  Everything it starts is stopped by its
# PID at the end, also on Ctrl-C or an error.  Exit status: 0 done, 1 a benchmark or a
# sanity check failed (client errors, non-2xx replies, failed handshakes, a daemon that
# died), 2 bad usage or a missing tool.
# shellcheck disable=SC2317 # functions called from traps
set -uo pipefail

prog=tls_bench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

# ---------------------------------------------------------------- options
key_type=ec
while [ $# -gt 0 ]; do
  case "$1" in
    --key-type) [ $# -ge 2 ] || { echo "$prog: --key-type needs ec or rsa" >&2; exit 2; }
                key_type=$2; shift 2 ;;
    --key-type=*) key_type=${1#*=}; shift ;;
    *) bench_option "$@"; shift "$OPT_SHIFT" ;;
  esac
done
bench_options_end
case "$key_type" in ec|rsa) ;; *) echo "$prog: --key-type is ec or rsa, not '$key_type'" >&2; exit 2 ;; esac
if [ "$quick" = 1 ]; then
  wrk_d=2s resp_n=100000 resp_n16=100000 resp_nk=5000
else
  wrk_d=10s resp_n=1000000 resp_n16=2000000 resp_nk=30000
fi
wrk_t=2 wrk_c=64 resp_c=50

resolve_idgen

# ---------------------------------------------------------------- tools
need redis-benchmark redis-tools
need redis-cli redis-tools
need wrk wrk
need curl curl
need openssl openssl
need_end
if ! redis-benchmark --help 2>&1 | grep -q -- '--tls'; then
  echo "$prog: this redis-benchmark was built without TLS (no --tls option)" >&2
  exit 2
fi
if ! "$idgen" serve --help 2>/dev/null | grep -q -- '--tls-cert'; then
  echo "$prog: $idgen serve has no --tls-cert setting (a build without TLS?)" >&2
  exit 2
fi

# ---------------------------------------------------------------- state, cleanup
bench_state idgen-tls-bench "logs, certificates and client outputs"

# ---------------------------------------------------------------- certificates
# A CA and a server certificate for 127.0.0.1 (and localhost) signed by it.
pki=$tmp/pki
mkdir -p "$pki"
genkey() {  # genkey FILE
  if [ "$key_type" = rsa ]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$1" 2>/dev/null
  else
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
  fi && chmod 600 "$1"
}
make_pki() {
  genkey "$pki/ca.key" &&
    openssl req -x509 -new -key "$pki/ca.key" -out "$pki/ca.pem" -days 2 -subj "/CN=idgen bench CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null &&
    genkey "$pki/server.key" &&
    openssl req -new -key "$pki/server.key" -out "$pki/server.csr" -subj "/CN=localhost" 2>/dev/null &&
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      "subjectKeyIdentifier=hash" "authorityKeyIdentifier=keyid" >"$pki/server.ext" &&
    openssl x509 -req -in "$pki/server.csr" -CA "$pki/ca.pem" -CAkey "$pki/ca.key" -set_serial 1 -days 2 \
      -extfile "$pki/server.ext" -out "$pki/server.pem" 2>/dev/null
}
if ! make_pki; then
  echo "$prog: openssl could not make the certificates (in $pki)" >&2
  exit 2
fi
ca=$pki/ca.pem

# ---------------------------------------------------------------- daemons
# start_idgen NAME ARGS...: idgen_serve with HTTP and RESP on free ports; one space: the two
# daemons lease two workers of it.
start_idgen() { idgen_serve "$1" --space bench --http 127.0.0.1:0 --resp 127.0.0.1:0 "${@:2}"; }

# ---------------------------------------------------------------- measurements
declare -A OCPU
# run_client OUTFILE SECONDS SERVER_PID OTHER_PID COMMAND...: bg_client, measured.  Sets
# RUN_SERVER_TICKS (the server's CPU meanwhile) and RUN_OTHER_TICKS, RUN_OTHER_PCT (the idle
# daemon's CPU meanwhile, in ticks and in % of one core).
run_client() {
  local f=$1 t=$2 spid=$3 opid=$4 rc s0 o0 w0 w1; shift 4
  s0=$(ticks "$spid") o0=$(ticks "$opid") w0=$(now)
  bg_client "$f" "$t" "$@"; rc=$?
  w1=$(now)
  RUN_SERVER_TICKS=$(($(ticks "$spid") - s0))
  RUN_OTHER_TICKS=$(($(ticks "$opid") - o0))
  RUN_OTHER_PCT=$(awk -v t="$RUN_OTHER_TICKS" -v hz="$hz" -v a="$w0" -v b="$w1" \
    'BEGIN { printf "%.1f", t / hz / (b - a) * 100 }')
  return "$rc"
}
other_cpu() {  # other_cpu KEY: note an idle daemon that was not idle
  OCPU[$1]="${OCPU[$1]-}${OCPU[$1]:+ }$RUN_OTHER_PCT"
  # more than one clock tick (10 ms: a short run's one tick is a few %), and above 2%
  awk -v p="$RUN_OTHER_PCT" -v t="$RUN_OTHER_TICKS" 'BEGIN { exit !(p > 2 && t > 1) }' &&
    note "$1: the other (idle) daemon used $RUN_OTHER_PCT% of a core meanwhile"
}

# wrk_run KEY SERVER_PID OTHER_PID URL [WRK_ARGS...]
wrk_run() {
  local key=$1 spid=$2 opid=$3 url=$4; shift 4
  local f cpu
  f=$tmp/wrk-$key-$RANDOM.log
  local cmd=(wrk -t"$wrk_t" -c"$wrk_c" -d"$wrk_d" --latency -s "$tmp/report.lua" "$@" "$url")
  [ -n "${CMD[$key]-}" ] || CMD[$key]="wrk -t$wrk_t -c$wrk_c -d$wrk_d --latency ${*:+$(printf "'%s' " "$@")}$url"
  run_client "$f" $((${wrk_d%s} + 60)) "$spid" "$opid" "${cmd[@]}"; local rc=$?
  wrk_figures "$key" "$f" "$rc" "$url" "${cmd[@]}" || return 1
  cpu=$(cpu_per_req "$WRK_N")
  add "$key" "$WRK_RPS" "$WRK_P99" "$cpu"
  other_cpu "$key"
  log "$key: $(fmt_int "$WRK_RPS") requests/s, p99 $WRK_P99 ms, server CPU $cpu µs/request"
}

# resp_run KEY SERVER_PID OTHER_PID PORT N REDIS_BENCHMARK_ARGS...
resp_run() {
  local key=$1 spid=$2 opid=$3 port=$4 n=$5; shift 5
  local f cpu
  f=$tmp/rb-$key-$RANDOM.log
  local cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -c "$resp_c" -n "$n" --csv "$@" ID)
  [ -n "${CMD[$key]-}" ] || CMD[$key]="${cmd[*]}"
  run_client "$f" $((n / 500 + 120)) "$spid" "$opid" "${cmd[@]}"; local rc=$?
  rb_figures "$key" "$f" "$rc" "${cmd[@]}" || return 1
  if grep -qi 'error' "$f"; then
    err "$key: errors: $(grep -i -m1 'error' "$f" | tr '\r' ' ' | cut -c1-200)"
  fi
  cpu=$(cpu_per_req "$n")
  add "$key" "$RB_RPS" "$RB_P99" "$cpu"
  other_cpu "$key"
  log "$key: $(fmt_int "$RB_RPS") requests/s, p99 $RB_P99 ms, server CPU $cpu µs/request"
}

# ---------------------------------------------------------------- number helpers
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "–"; else printf "%.2f", a / b }'; }
wrk_lua

# ---------------------------------------------------------------- start
bench_facts
rb_version=$(redis-benchmark --version 2>/dev/null | awk '{print $2}')
ossl_version=$(openssl version | awk '{print $2}')
log "$prog: $idgen_version; $rounds round(s); $key_type keys; temp dir $tmp"

start_idgen plain || exit 1
plain_pid=$IDGEN_PID plain_http=$HTTP_PORT plain_resp=$RESP_PORT
start_idgen tls --tls-cert "$pki/server.pem" --tls-key "$pki/server.key" || exit 1
tls_pid=$IDGEN_PID tls_http=$HTTP_PORT tls_resp=$RESP_PORT

metrics() {  # metrics tls|plain: the daemon's /metrics
  if [ "$1" = tls ]; then curl -sS --max-time 10 --cacert "$ca" "https://127.0.0.1:$tls_http/metrics"
  else curl -sS --max-time 10 "http://127.0.0.1:$plain_http/metrics"; fi
}
handshakes() {  # handshakes RESULT: idgen_tls_handshakes_total{result=RESULT} of the TLS daemon
  metrics tls 2>/dev/null | awk -v r="result=\"$1\"" 'index($0, "idgen_tls_handshakes_total{") == 1 && index($0, r) { print $2 }'
}

# tls_guard ALLOWED COMMAND...: runs a TLS benchmark; the handshakes the daemon counted failed
# meanwhile must not pass ALLOWED.  A client that opens a connection per request leaves up to
# one handshake per connection unfinished when its run ends (wrk and redis-benchmark stop
# mid-handshake): the daemon sees a reset and counts a failure.  They are reported.
ABANDONED=0
tls_guard() {
  local allowed=$1 f0 f1 d rc; shift
  f0=$(handshakes failed)
  "$@"; rc=$?
  sleep 0.2  # the daemon counts a reset when its loop sees it
  f1=$(handshakes failed)
  d=$(awk -v a="$f0" -v b="$f1" 'BEGIN { if (a != "" && b != "") print b - a; else print "?" }')
  if [ "$d" = "?" ]; then err "$2: no idgen_tls_handshakes_total{result=\"failed\"} in /metrics"
  elif [ "$d" -gt "$allowed" ]; then err "$2: the daemon counted $d failed handshakes (at most $allowed expected)"
  else ABANDONED=$((ABANDONED + d)); fi
  return "$rc"
}

# ---------------------------------------------------------------- sanity checks
sanity() {
  local out
  out=$(curl -sS --max-time 10 "http://127.0.0.1:$plain_http/id" 2>&1)
  [[ $out =~ ^[0-9]+$ ]] || { err "sanity: plain GET /id answered '$out'"; return 1; }
  out=$(curl -sS --max-time 10 --cacert "$ca" "https://127.0.0.1:$tls_http/id" 2>&1)
  [[ $out =~ ^[0-9]+$ ]] || { err "sanity: curl --cacert https:// GET /id answered '$out'"; return 1; }
  out=$(curl -sS --max-time 10 "http://127.0.0.1:$tls_http/id" 2>&1)
  [[ $out == *https* ]] || { err "sanity: plain text on the TLS port answered '$out' (no TLS?)"; return 1; }
  out=$(redis-cli -h 127.0.0.1 -p "$plain_resp" ID 2>&1)
  [[ $out =~ ^[0-9]+$ ]] || { err "sanity: plain RESP ID answered '$out'"; return 1; }
  out=$(redis-cli --tls --cacert "$ca" -h 127.0.0.1 -p "$tls_resp" ID 2>&1)
  [[ $out =~ ^[0-9]+$ ]] || { err "sanity: redis-cli --tls ID answered '$out'"; return 1; }
  log "sanity checks passed"
}
sanity || exit 1
hs_ok0=$(handshakes ok) hs_failed0=$(handshakes failed)

# ---------------------------------------------------------------- rounds
plain_url=http://127.0.0.1:$plain_http/id tls_url=https://127.0.0.1:$tls_http/id
tls_rb=(--tls --cacert "$ca")
for ((r = 1; r <= rounds; r++)); do
  # odd rounds plain first, even rounds TLS first: the machine's drift falls on both
  if ((r % 2)); then order="plain tls"; else order="tls plain"; fi
  log "round $r/$rounds ($order)"
  for kind in $order; do
    if [ "$kind" = plain ]; then
      wrk_run http_keep_plain "$plain_pid" "$tls_pid" "$plain_url"
      wrk_run http_close_plain "$plain_pid" "$tls_pid" "$plain_url" -H 'Connection: close'
      resp_run resp_p1_plain "$plain_pid" "$tls_pid" "$plain_resp" "$resp_n" -P 1
      resp_run resp_p16_plain "$plain_pid" "$tls_pid" "$plain_resp" "$resp_n16" -P 16
      resp_run resp_k0_plain "$plain_pid" "$tls_pid" "$plain_resp" "$resp_nk" -k 0
    else
      tls_guard 0 wrk_run http_keep_tls "$tls_pid" "$plain_pid" "$tls_url"
      tls_guard "$wrk_c" wrk_run http_close_tls "$tls_pid" "$plain_pid" "$tls_url" -H 'Connection: close'
      tls_guard 0 resp_run resp_p1_tls "$tls_pid" "$plain_pid" "$tls_resp" "$resp_n" -P 1 "${tls_rb[@]}"
      tls_guard 0 resp_run resp_p16_tls "$tls_pid" "$plain_pid" "$tls_resp" "$resp_n16" -P 16 "${tls_rb[@]}"
      tls_guard "$resp_c" resp_run resp_k0_tls "$tls_pid" "$plain_pid" "$tls_resp" "$resp_nk" -k 0 "${tls_rb[@]}"
    fi
  done
done

hs_ok1=$(handshakes ok) hs_failed1=$(handshakes failed)
hs_ok=$(awk -v a="$hs_ok0" -v b="$hs_ok1" 'BEGIN { if (a != "" && b != "") print b - a }')
hs_failed=$(awk -v a="$hs_failed0" -v b="$hs_failed1" 'BEGIN { if (a != "" && b != "") print b - a }')
[ -n "$hs_ok" ] || err "no idgen_tls_handshakes_total{result=\"ok\"} in the TLS daemon's /metrics"
tls_rss=$(hwm_kb "$tls_pid")
plain_rss=$(hwm_kb "$plain_pid")

stop_daemons "$plain_pid" "$tls_pid"
for f in "$tmp"/idgen-*.log; do
  note_log "$f" 'level=info|event=tls_failed'
  w=$(sed -n 's/.*event=tls_failed.* error=\("[^"]*"\|[^ ]*\).*/\1/p' "$f" | sort | uniq -c | sort -rn |
      awk '{ c = $1; $1 = ""; printf "%s%s ×%d", (NR > 1 ? ", " : ""), substr($0, 2), c }')
  [ -z "$w" ] || note "$(basename "$f" .log) logged event=tls_failed (rate-limited): $w"
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
row() {  # row LABEL KEY
  local p t
  p=$(med RPS "$2_plain") t=$(med RPS "$2_tls")
  echo "| $1 | $(runs "$2_plain") | $(runs "$2_tls") | **$(ratio "$t" "$p")** | $(med P99 "$2_plain") / $(med P99 "$2_tls") ms | $(ratio "$(med P99 "$2_tls")" "$(med P99 "$2_plain")") | $(med SCPU "$2_plain") / $(med SCPU "$2_tls") µs | $(ratio "$(med SCPU "$2_tls")" "$(med SCPU "$2_plain")") |"
}
report() {
  local k
  echo "## idgen serve, plain against TLS: $started, \`bench/tls_bench.sh$([ "$quick" = 1 ] && echo ' --quick')$([ "$key_type" = rsa ] && echo ' --key-type rsa')\`"
  echo
  echo "$idgen_version (defaults: $(nproc) event loops) · OpenSSL $ossl_version · wrk $wrk_version · redis-benchmark $rb_version ·"
  echo "$(nproc) cores ($cpu) · load average $load_start at the start, $load_end at the end."
  echo "Server certificate: $([ "$key_type" = rsa ] && echo 'RSA 2048' || echo 'ECDSA P-256'), signed by a throwaway CA; TLS 1.3 (the clients' default)."
  echo "Clients and daemons share the cores. Each figure: the median of $rounds run(s); requests/s of each run in the columns."
  [ "$quick" = 1 ] && echo "**Quick run** (smoke test): short runs, one round; the figures are indicative only."
  echo
  echo "| benchmark | plain requests/s | TLS requests/s | TLS / plain | p99 plain / TLS | p99 TLS / plain | server CPU per request plain / TLS | CPU TLS / plain |"
  echo "|---|---|---|---|---|---|---|---|"
  row "HTTP \`GET /id\`, keep-alive (wrk -t$wrk_t -c$wrk_c -d$wrk_d)" http_keep
  row "HTTP \`GET /id\`, \`Connection: close\` (a connection per request; TLS sessions resumed)" http_close
  row "RESP \`ID\`, -P 1 (redis-benchmark -c $resp_c -n $resp_n)" resp_p1
  row "RESP \`ID\`, -P 16 (-n $resp_n16)" resp_p16
  row "RESP \`ID\`, -k 0 (a connection per request, -n $resp_nk; full TLS handshakes)" resp_k0
  echo
  echo "TLS daemon: $(fmt_int "${hs_ok:-}") handshakes counted ok during the runs, ${hs_failed:-?} failed ($ABANDONED of them"
  echo "in the runs of a connection per request, cut off when the client stopped: at most one per connection);"
  echo "peak RSS $(mb "${tls_rss:-}") (plain: $(mb "${plain_rss:-}"))."
  echo "wrk resumes TLS sessions on reconnection (abbreviated handshakes); redis-benchmark (hiredis) does not."
  echo
  echo "### Commands"
  echo
  echo '```sh'
  echo "$idgen serve --registry file:DIR --space bench --http 127.0.0.1:0 --resp 127.0.0.1:0"
  echo "$idgen serve --registry file:DIR --space bench --http 127.0.0.1:0 --resp 127.0.0.1:0 --tls-cert server.pem --tls-key server.key"
  for k in http_keep_plain http_keep_tls http_close_plain http_close_tls resp_p1_plain resp_p1_tls \
           resp_p16_plain resp_p16_tls resp_k0_plain resp_k0_tls; do
    [ -n "${CMD[$k]-}" ] && echo "${CMD[$k]}"
  done
  echo '```'
  report_problems
}
report_end
