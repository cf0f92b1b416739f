#!/usr/bin/env bash
# bench/serve_bench.sh: `idgen serve` beside Redis (RESP) and nginx (HTTP), in one run.
#
#   bench/serve_bench.sh [--quick] [--rounds N] [--out FILE] [--keep] [PATH_TO_idgen]
#
# PATH_TO_idgen defaults to build/idgen (relative to the repository).
#
#   RESP     redis-benchmark -c 50 -n 2000000: `ID` against idgen, `INCR counter` against a
#            redis-server started here; at -P 1 and -P 16; idgen and Redis alternate, N rounds.
#            At -P 1 also an idgen with --busy-poll-us 0 (never polling; the default polls).
#            For information also -P 16 with `redis-benchmark --threads 2`.
#   HTTP     wrk -t2 -c64 -d10s on /id: idgen against nginx answering `return 200 "…\n"`
#            (bench/nginx.conf.in); alternating, N rounds.
#   Batches  wrk -t2 -c64 -d10s on /id?count=1000: an idgen with the layout
#            time:41,worker:4,sequence:18 (target 20 M IDs/s), and one with `twitter`
#            and --max-borrow-ms 0 (its limit is 4,096,000 IDs/s; target 98% of it).
#   Memory   VmRSS of a fresh idgen serve and a fresh redis-server: idle, then holding 1,000
#            and 10,000 open idle connections (a python3 helper opens them), then after one
#            request on each of the 10,000.
#
# Each run also records the server's CPU time per request (all its threads, /proc/PID/stat)
# and the client's CPU: with two cores shared, the client is often the bottleneck.
#
# --quick: one round, redis-benchmark -n 100000, wrk -d2s (a smoke run for CI).
# --rounds N: rounds per comparison (default 3).  --out FILE: also write the report there.
# --keep: keep the temporary directory (logs, configs) even on success.
#
# Prints progress on stderr and a markdown report on stdout.  Every server it starts is
# stopped at the end, also on Ctrl-C or an error.  Exit status: 0 done (targets are
# reported, not enforced: this machine is noisy), 1 a benchmark or a sanity check failed
# (errors from a client, non-2xx replies, a server that died), 2 bad usage or a missing tool.
# shellcheck disable=SC2317,SC2086,SC2012,SC2015,SC2028 # trap-called functions; word-split number lists; /proc fd counts
set -uo pipefail

prog=serve_bench
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

# ---------------------------------------------------------------- options
while [ $# -gt 0 ]; do bench_option "$@"; shift "$OPT_SHIFT"; done
bench_options_end
if [ "$quick" = 1 ]; then
  resp_n=100000; wrk_d=2s
else
  resp_n=2000000; wrk_d=10s
fi
resp_c=50 wrk_t=2 wrk_c=64
mem_levels=(1000 10000)
nginx_body=1288834974657
wide_layout=time:41,worker:4,sequence:18
batch=1000

resolve_idgen

# ---------------------------------------------------------------- tools
need redis-server redis-server
need redis-benchmark redis-tools
need redis-cli redis-tools
need wrk wrk
need python3 python3
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need nginx nginx-light
nginx_bin=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
need_end
if ! "$idgen" serve --help >/dev/null 2>&1; then
  echo "$prog: $idgen has no working 'serve' command ('$idgen serve --help' failed)" >&2
  exit 2
fi

# Enough descriptors for 10,000 connections in the clients and the servers (children inherit).
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 20000 ]; then ulimit -n 20000 2>/dev/null || true
else ulimit -n "$hard" 2>/dev/null || true; fi
nofile=$(ulimit -n)

# ---------------------------------------------------------------- state, cleanup
bench_state idgen-serve-bench "logs and configs"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wait_port() {  # wait_port PORT PID: until something accepts on 127.0.0.1:PORT (10 s)
  local i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$2" 2>/dev/null || return 1
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  return 1
}
nfds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
http_get() {  # http_get PORT PATH: the body on stdout; fails unless the status is 200
  python3 - "$1" "$2" <<'EOF'
import sys, http.client
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("GET", sys.argv[2])
r = c.getresponse()
body = r.read()
sys.stdout.write(body.decode("utf-8", "replace"))
sys.exit(0 if r.status == 200 else 1)
EOF
}

# ---------------------------------------------------------------- servers
# start_idgen NAME ARGS...: idgen_serve with an ID space per daemon: their layouts differ
# (wide beside twitter), and one space refuses a layout whose IDs could equal a live one's.
start_idgen() { idgen_serve "$1" --space "$1" "${@:2}"; }
# start_redis NAME [ARGS...]: sets REDIS_PID, REDIS_PORT
start_redis() {
  local name=$1; shift
  REDIS_PORT=$(free_port)
  redis-server --bind 127.0.0.1 --port "$REDIS_PORT" --save '' --appendonly no \
               --daemonize no --dir "$tmp" --logfile "$tmp/redis-$name.log" "$@" &
  REDIS_PID=$!
  pids+=("$REDIS_PID"); names+=("redis-server ($name)")
  if ! wait_port "$REDIS_PORT" "$REDIS_PID"; then
    err "redis-server ($name) did not start: $(tail -3 "$tmp/redis-$name.log" | tr '\n' ' ')"
    return 1
  fi
  log "redis-server ($name): pid $REDIS_PID, port $REDIS_PORT"
}
start_nginx() {
  NGINX_PORT=$(free_port)
  sed -e "s|@DIR@|$tmp/nginx|g" -e "s|@PORT@|$NGINX_PORT|g" "$here/nginx.conf.in" >"$tmp/nginx.conf.tmp"
  mkdir -p "$tmp/nginx"
  mv "$tmp/nginx.conf.tmp" "$tmp/nginx/nginx.conf"
  "$nginx_bin" -p "$tmp/nginx" -e "$tmp/nginx/error.log" -c "$tmp/nginx/nginx.conf" \
    >"$tmp/nginx/stdout.log" 2>&1 &
  NGINX_PID=$!
  pids+=("$NGINX_PID"); names+=("nginx")
  if ! wait_port "$NGINX_PORT" "$NGINX_PID"; then
    err "nginx did not start: $(tail -3 "$tmp/nginx/error.log" "$tmp/nginx/stdout.log" 2>/dev/null | tr '\n' ' ')"
    return 1
  fi
  sleep 0.3
  log "nginx: pid $NGINX_PID, port $NGINX_PORT, $(pgrep -P "$NGINX_PID" | wc -l) workers"
}

# ---------------------------------------------------------------- measurements
declare -A BYTES IPI
# CPU time in clock ticks of this shell's waited-for children (the benchmark client, reaped
# through timeout).
child_ticks() { awk '{print $16 + $17}' "/proc/$$/stat"; }
# Inter-processor interrupts so far, all CPUs: function calls and reschedules, which is how
# a wake-up reaches a sleeping thread's idle CPU (the price a client pays to wake a server).
ipis() { awk '$1 == "CAL:" || $1 == "RES:" { for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) s += $i }
  END { print s + 0 }' /proc/interrupts 2>/dev/null; }

# run_client OUTFILE SECONDS "SERVER_PIDS" COMMAND...: bg_client, measured.  Sets
# RUN_SERVER_TICKS (CPU the servers used meanwhile), RUN_CLIENT_PCT (the client's CPU, % of
# one core), RUN_IPIS (inter-processor interrupts meanwhile).
run_client() {
  local f=$1 t=$2 spids=$3 rc s0 c0 w0 i0 s1 c1 w1; shift 3
  s0=$(ticks $spids) c0=$(child_ticks) w0=$(now) i0=$(ipis)
  bg_client "$f" "$t" "$@"; rc=$?
  s1=$(ticks $spids) c1=$(child_ticks) w1=$(now)
  RUN_IPIS=$(($(ipis) - i0))
  RUN_SERVER_TICKS=$((s1 - s0))
  RUN_CLIENT_PCT=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v w0="$w0" -v w1="$w1" 'BEGIN{ printf "%.0f", c / hz / (w1 - w0) * 100 }')
  return "$rc"
}

# resp_run KEY "SERVER_PIDS" PORT PIPELINE COMMAND...
resp_run() {
  local key=$1 spids=$2 port=$3 P=$4; shift 4
  local f=$tmp/rb-$key-$RANDOM.log rc
  local cmd=(redis-benchmark -h 127.0.0.1 -p "$port" -c "$resp_c" -n "$resp_n" -P "$P" --csv "$@")
  [ -n "${CMD[$key]-}" ] || CMD[$key]="${cmd[*]}"
  run_client "$f" $((resp_n / 5000 + 60)) "$spids" "${cmd[@]}"; rc=$?
  rb_figures "$key" "$f" "$rc" "${cmd[@]}" || return 1
  if grep -q 'Error from server' "$f"; then
    err "$key: error replies: $(grep -m1 'Error from server' "$f")"
  fi
  local cpu ipi; cpu=$(cpu_per_req "$resp_n")
  ipi=$(awk -v i="$RUN_IPIS" -v n="$resp_n" 'BEGIN{ printf "%.3f", i / n }')
  add "$key" "$RB_RPS" "$RB_P99" "$cpu" "$RUN_CLIENT_PCT"
  push IPI "$key" "$ipi"
  log "$key: $(fmt_int "$RB_RPS") requests/s, p99 $RB_P99 ms, server CPU $cpu µs/request, client CPU $RUN_CLIENT_PCT%, $ipi IPIs/request"
}

# wrk_run KEY "SERVER_PIDS" URL
wrk_run() {
  local key=$1 spids=$2 url=$3
  local f=$tmp/wrk-$key-$RANDOM.log rc bytes
  local cmd=(wrk -t"$wrk_t" -c"$wrk_c" -d"$wrk_d" --latency -s "$tmp/report.lua" "$url")
  [ -n "${CMD[$key]-}" ] || CMD[$key]="wrk -t$wrk_t -c$wrk_c -d$wrk_d --latency $url"
  run_client "$f" $(( ${wrk_d%s} + 60 )) "$spids" "${cmd[@]}"; rc=$?
  wrk_figures "$key" "$f" "$rc" "$url" "${cmd[@]}"; rc=$?
  [ "$rc" != 1 ] || return 1
  bytes=$(awk -v b="$(kv "$WRK_RES" bytes)" -v n="$WRK_N" 'BEGIN{ if (n > 0) printf "%.0f", b / n; else print 0 }')
  push BYTES "$key" "$bytes"
  [ "$rc" = 0 ] || return 1
  local cpu; cpu=$(cpu_per_req "$WRK_N")
  add "$key" "$WRK_RPS" "$WRK_P99" "$cpu" "$RUN_CLIENT_PCT"
  log "$key: $(fmt_int "$WRK_RPS") requests/s, p99 $WRK_P99 ms, $bytes bytes/response, server CPU $cpu µs/request, client CPU $RUN_CLIENT_PCT%"
}

# ---------------------------------------------------------------- number helpers
med_p99() { med P99 "$1"; }
med_cpu() { local m; m=$(med SCPU "$1"); [ -n "$m" ] && echo "$m µs" || echo "–"; }
med_ccpu() { local m; m=$(med CCPU "$1"); echo "${m:-–}"; }
# pairs A B: "r1, r2, ... (median m)", each run of A over the run of B made next to it.
pairs() { local a b rs="" out=""; read -ra a <<<"${RPS[$1]-}"; read -ra b <<<"${RPS[$2]-}"
  for i in "${!a[@]}"; do [ -n "${b[$i]-}" ] || continue; rs="$rs $(ratio "${a[$i]}" "${b[$i]}")"; done
  for x in $rs; do out="$out${out:+, }$x"; done
  # shellcheck disable=SC2086
  [ -n "$out" ] && echo "$out (median $(median $rs))" || echo "–"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a == "" || b == "" || b == 0) print ""; else printf "%.2f", a / b }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN{ if (v == "") print "no result"; else if (v >= t) print "met"; else print "**not met**" }'; }

# ---------------------------------------------------------------- helper files
wrk_lua
cat >"$tmp/holder.py" <<'EOF'
# Holds idle TCP connections.  stdin commands: "open HOST PORT TOTAL" (open up to TOTAL in
# all), "check" (how many the server has closed or written to), "request http|resp" (one
# request on each connection, wait for every reply), "close".  One reply line each.
import resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
except (ValueError, OSError):
    pass
socks = []
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "open":
        host, port, total = cmd[1], int(cmd[2]), int(cmd[3])
        error = ""
        while len(socks) < total:
            s = socket.socket()
            s.settimeout(20)
            try:
                s.connect((host, port))
            except OSError as e:
                s.close()
                error = " error=" + repr(str(e)).replace(" ", "_")
                break
            socks.append(s)
        print("open %d%s" % (len(socks), error), flush=True)
    elif cmd[0] == "check":
        closed = spoke = 0
        for s in socks:
            s.setblocking(False)
            try:
                d = s.recv(256, socket.MSG_PEEK)
                if d:
                    spoke += 1
                else:
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        print("check closed=%d spoke=%d" % (closed, spoke), flush=True)
    elif cmd[0] == "request":
        req = (b"GET /id HTTP/1.1\r\nHost: bench\r\n\r\n" if cmd[1] == "http"
               else b"*1\r\n$4\r\nPING\r\n")
        ok = bad = 0
        first_bad = ""
        for s in socks:
            s.setblocking(True)
            s.settimeout(20)
            s.sendall(req)
        for s in socks:
            buf = b""
            try:
                while True:
                    d = s.recv(4096)
                    if not d:
                        break
                    buf += d
                    if cmd[1] == "http":
                        head, sep, body = buf.partition(b"\r\n\r\n")
                        if sep:
                            n = 0
                            for h in head.split(b"\r\n")[1:]:
                                k, _, v = h.partition(b":")
                                if k.strip().lower() == b"content-length":
                                    n = int(v)
                            if len(body) >= n:
                                break
                    elif buf.endswith(b"\r\n"):
                        break
            except OSError:
                pass
            good = buf.startswith(b"HTTP/1.1 200 ") if cmd[1] == "http" else buf == b"+PONG\r\n"
            if good:
                ok += 1
            else:
                bad += 1
                first_bad = first_bad or repr(buf[:60]).replace(" ", "_")
        print("request ok=%d bad=%d %s" % (ok, bad, first_bad), flush=True)
    elif cmd[0] == "close":
        for s in socks:
            s.close()
        socks = []
        print("closed", flush=True)
EOF

# ---------------------------------------------------------------- start
bench_facts
redis_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
nginx_version=$("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///')
clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null ||
  echo unknown)
# whether idgen's fast clock and SIMD codecs are on here: the first line of `idgen bench`
idgen_clock=$("$idgen" bench --only none --runs 1 --seconds 0.01 2>/dev/null | head -1 |
  sed -n 's/.*\(TSC fast clock.*\)/\1/p')
log "$prog: $idgen_version vs Redis $redis_version and nginx $nginx_version; $rounds round(s); temp dir $tmp"

start_idgen main --http 127.0.0.1:0 --resp 127.0.0.1:0 || exit 1
main_pid=$IDGEN_PID main_http=$HTTP_PORT main_resp=$RESP_PORT
main_threads=$(sed -n 's/.*event=start.* threads=\([0-9]*\).*/\1/p' "$tmp/idgen-main.log" | head -1)
start_idgen wide --http 127.0.0.1:0 --resp off --layout "$wide_layout" || exit 1
wide_pid=$IDGEN_PID wide_http=$HTTP_PORT
start_idgen twitter --http 127.0.0.1:0 --resp off --layout twitter --max-borrow-ms 0 || exit 1
tw_pid=$IDGEN_PID tw_http=$HTTP_PORT
# The same as main without busy polling (docs/DESIGN.md §10), for RESP -P 1.
start_idgen nopoll --http off --resp 127.0.0.1:0 --busy-poll-us 0 || exit 1
nopoll_pid=$IDGEN_PID nopoll_resp=$RESP_PORT
start_redis bench || exit 1
redis_pid=$REDIS_PID redis_port=$REDIS_PORT
start_nginx || exit 1
nginx_pids="$NGINX_PID $(pgrep -P "$NGINX_PID" | tr '\n' ' ')"

# ---------------------------------------------------------------- sanity checks
sanity() {
  local out
  out=$(redis-cli -h 127.0.0.1 -p "$main_resp" ID 2>&1)
  printf '%s' "$out" | grep -Eq '^[0-9]+$' || { err "sanity: RESP 'ID' answered '$out'"; return 1; }
  out=$(redis-cli -h 127.0.0.1 -p "$redis_port" INCR counter 2>&1)
  printf '%s' "$out" | grep -Eq '^[0-9]+$' || { err "sanity: Redis 'INCR counter' answered '$out'"; return 1; }
  out=$(http_get "$main_http" /id) && printf '%s' "$out" | grep -Eq '^[0-9]+$' ||
    { err "sanity: idgen GET /id answered '$out'"; return 1; }
  out=$(http_get "$NGINX_PORT" /id) && [ "$out" = "$nginx_body" ] ||
    { err "sanity: nginx GET /id answered '$out'"; return 1; }
  local p n u
  for p in "$wide_http" "$tw_http"; do
    out=$(http_get "$p" "/id?count=$batch") || { err "sanity: GET /id?count=$batch on port $p failed: $(printf '%s' "$out" | head -c 200)"; return 1; }
    n=$(printf '%s\n' "$out" | grep -Ec '^[0-9]+$')
    u=$(printf '%s\n' "$out" | grep -E '^[0-9]+$' | sort -u | wc -l)
    [ "$n" = "$batch" ] && [ "$u" = "$batch" ] ||
      { err "sanity: GET /id?count=$batch on port $p gave $n numeric lines, $u distinct"; return 1; }
  done
  log "sanity checks passed"
}
sanity || exit 1

# ---------------------------------------------------------------- RESP
for P in 1 16; do
  for ((r = 1; r <= rounds; r++)); do
    log "RESP -P $P, round $r/$rounds"
    resp_run "resp_idgen_P$P" "$main_pid" "$main_resp" "$P" ID
    [ "$P" = 1 ] && resp_run resp_nopoll_P1 "$nopoll_pid" "$nopoll_resp" 1 ID
    resp_run "resp_redis_P$P" "$redis_pid" "$redis_port" "$P" INCR counter
  done
done
# For information: at -P 16 one client thread is the bottleneck; with two, the server gets less CPU.
for ((r = 1; r <= rounds; r++)); do
  log "RESP -P 16 with redis-benchmark --threads 2, round $r/$rounds"
  resp_run resp_idgen_P16T2 "$main_pid" "$main_resp" 16 --threads 2 ID
  resp_run resp_redis_P16T2 "$redis_pid" "$redis_port" 16 --threads 2 INCR counter
done

# ---------------------------------------------------------------- HTTP
# busy polls so far (both kinds) of the daemon on HTTP port $1
polls_of() { http_get "$1" /metrics 2>/dev/null | awk '/^idgen_busy_polls_total/ {s += $2} END {print s + 0}'; }
http_polls=()
for ((r = 1; r <= rounds; r++)); do
  log "HTTP /id, round $r/$rounds"
  p0=$(polls_of "$main_http")
  wrk_run http_idgen "$main_pid" "http://127.0.0.1:$main_http/id"
  http_polls+=($(( $(polls_of "$main_http") - p0 )))
  wrk_run http_nginx "$nginx_pids" "http://127.0.0.1:$NGINX_PORT/id"
done

# ---------------------------------------------------------------- batches
for ((r = 1; r <= rounds; r++)); do
  log "HTTP /id?count=$batch, round $r/$rounds"
  wrk_run batch_wide "$wide_pid" "http://127.0.0.1:$wide_http/id?count=$batch"
  wrk_run batch_twitter "$tw_pid" "http://127.0.0.1:$tw_http/id?count=$batch"
done

# Peak and final memory of the benchmarked daemon, its counters, then stop the bench servers.
main_rss_after=$(rss_kb "$main_pid") main_hwm=$(hwm_kb "$main_pid")
nginx_rss_after=$(( $(rss_kb "$NGINX_PID" || echo 0) + $(for c in $(pgrep -P "$NGINX_PID"); do rss_kb "$c"; done | awk '{s += $1} END {print s + 0}') ))
redis_rss_after=$(rss_kb "$redis_pid")
metrics_main=$(http_get "$main_http" /metrics 2>/dev/null || true)
metrics_wide=$(http_get "$wide_http" /metrics 2>/dev/null || true)
metrics_tw=$(http_get "$tw_http" /metrics 2>/dev/null || true)

stop_daemons "$main_pid" "$wide_pid" "$tw_pid" "$nopoll_pid"
stop_pid "$redis_pid" redis-server; forget "$redis_pid"
stop_pid "$NGINX_PID" nginx; forget "$NGINX_PID"

# ---------------------------------------------------------------- memory
declare -A MEM
# mem_series WHO PID PORT PROTO
mem_series() {
  local who=$1 pid=$2 port=$3 proto=$4 n base reply got i closed
  sleep 1
  MEM[${who}_0]=$(rss_kb "$pid")
  base=$(nfds "$pid")
  log "memory: $who idle: $(mb "${MEM[${who}_0]}")"
  coproc HOLDER { exec python3 "$tmp/holder.py"; }
  HOLDER_PID=$!
  for n in "${mem_levels[@]}"; do
    if [ "$nofile" -lt $((n + 100)) ]; then
      note "memory: $n connections skipped: RLIMIT_NOFILE is $nofile"
      continue
    fi
    echo "open 127.0.0.1 $port $n" >&"${HOLDER[1]}"
    reply=""
    read -r -t 300 reply <&"${HOLDER[0]}" || true
    got=$(printf '%s' "$reply" | awk '{print $2}')
    if [ "$got" != "$n" ]; then
      err "memory: $who: opened ${got:-?} of $n connections ($reply)"
      break
    fi
    # wait until the server has accepted them (its descriptor count), at most 30 s
    for ((i = 0; i < 300; i++)); do
      [ "$(nfds "$pid")" -ge $((base + n)) ] && break
      sleep 0.1
    done
    [ "$(nfds "$pid")" -ge $((base + n)) ] || note "memory: $who holds $(( $(nfds "$pid") - base )) descriptors for $n connections after 30 s"
    sleep 1
    MEM[${who}_$n]=$(rss_kb "$pid")
    echo check >&"${HOLDER[1]}"
    read -r -t 60 reply <&"${HOLDER[0]}" || true
    closed=$(printf '%s' "$reply" | sed -n 's/.*closed=\([0-9]*\).*/\1/p')
    [ "${closed:-0}" = 0 ] || err "memory: $who closed $closed of $n idle connections ($reply)"
    case "$reply" in *spoke=0*) ;; *) note "memory: $who wrote to idle connections ($reply)" ;; esac
    log "memory: $who with $n connections: $(mb "${MEM[${who}_$n]}")"
  done
  if [ -n "${MEM[${who}_$maxn]-}" ]; then
    echo "request $proto" >&"${HOLDER[1]}"
    reply=""
    read -r -t 300 reply <&"${HOLDER[0]}" || true
    case "$reply" in
      "request ok=$maxn bad=0"*) ;;
      *) err "memory: $who: one request on each of $maxn connections: ${reply:-no answer}" ;;
    esac
    sleep 1
    MEM[${who}_req]=$(rss_kb "$pid")
    log "memory: $who with $maxn connections after one request each: $(mb "${MEM[${who}_req]}")"
  fi
  echo close >&"${HOLDER[1]}"
  read -r -t 60 reply <&"${HOLDER[0]}" || true
  eval "exec ${HOLDER[1]}>&-"
  wait "$HOLDER_PID" 2>/dev/null
  HOLDER_PID=""
}
maxn=${mem_levels[${#mem_levels[@]}-1]}
start_idgen mem --http 127.0.0.1:0 --resp 127.0.0.1:0 || exit 1
mem_pid=$IDGEN_PID
mem_series idgen "$mem_pid" "$HTTP_PORT" http
sleep 1
mem_idgen_after=$(rss_kb "$mem_pid")
stop_pid "$mem_pid" "idgen serve (mem)"; st=$?; forget "$mem_pid"
[ "$st" = 0 ] || err "idgen serve (mem): exit status $st after SIGTERM (expected 0)"
start_redis mem --maxclients $((maxn + 100)) || exit 1
mem_series redis "$REDIS_PID" "$REDIS_PORT" resp
stop_pid "$REDIS_PID" "redis-server (mem)"; forget "$REDIS_PID"

# daemon log lines above info level
for f in "$tmp"/idgen-*.log; do note_log "$f" 'level=info'; done

load_end=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report
metric() {  # metric TEXT NAME-REGEX: matching sample lines, compacted
  printf '%s\n' "$1" | grep -E "^($2)[{ ]" | sed 's/^idgen_//' | tr '\n' ';' | sed 's/;$//; s/;/; /g'
}
report() {
  local m1 m2 rt p
  echo "## idgen serve beside Redis and nginx: $started, \`bench/serve_bench.sh$([ "$quick" = 1 ] && echo ' --quick')\`"
  echo
  echo "$idgen_version (\`serve\`: $main_threads threads, defaults otherwise) · Redis $redis_version · nginx $nginx_version ·"
  echo "redis-benchmark $redis_version · wrk $wrk_version · $(nproc) cores ($cpu) · clocksource $clocksource · ${idgen_clock:-idgen bench did not say which clock} · load average $load_start at the start, $load_end at the end."
  echo "Clients and servers share the cores. Each figure: $rounds run(s), the servers alternating; \"median\" is of those runs."
  [ "$quick" = 1 ] && echo "**Quick run** (smoke test): short runs, one round; the figures are indicative only."
  echo
  echo "### RESP: \`redis-benchmark -c $resp_c -n $resp_n\`, \`ID\` (idgen) against \`INCR counter\` (Redis)"
  echo
  echo "| server, pipeline | requests/s, each run | median | p99 latency | server CPU per request | idgen / Redis | target | |"
  echo "|---|---|---|---|---|---|---|---|"
  for p in 1 16; do
    m1=$(med RPS "resp_idgen_P$p") m2=$(med RPS "resp_redis_P$p") rt=$(ratio "$m1" "$m2")
    local t=1.0; [ "$p" = 16 ] && t=1.2
    echo "| idgen \`ID\`, -P $p | $(runs "resp_idgen_P$p") | **$(fmt_int "${m1:-0}")** | $(med_p99 "resp_idgen_P$p") ms | $(med_cpu "resp_idgen_P$p") | **${rt:-–}×** | ≥ ${t}× | $(verdict "$rt" "$t") |"
    echo "| Redis \`INCR counter\`, -P $p | $(runs "resp_redis_P$p") | $(fmt_int "${m2:-0}") | $(med_p99 "resp_redis_P$p") ms | $(med_cpu "resp_redis_P$p") | | | |"
    if [ "$p" = 1 ]; then
      m1=$(med RPS resp_nopoll_P1) rt=$(ratio "$m1" "$m2")
      echo "| idgen \`ID\`, -P 1, \`--busy-poll-us 0\` | $(runs resp_nopoll_P1) | $(fmt_int "${m1:-0}") | $(med_p99 resp_nopoll_P1) ms | $(med_cpu resp_nopoll_P1) | ${rt:-–}× | for information | |"
    fi
  done
  m1=$(med RPS resp_idgen_P16T2) m2=$(med RPS resp_redis_P16T2) rt=$(ratio "$m1" "$m2")
  echo "| idgen \`ID\`, -P 16, \`--threads 2\` | $(runs resp_idgen_P16T2) | $(fmt_int "${m1:-0}") | $(med_p99 resp_idgen_P16T2) ms | $(med_cpu resp_idgen_P16T2) | ${rt:-–}× | for information | |"
  echo "| Redis \`INCR counter\`, -P 16, \`--threads 2\` | $(runs resp_redis_P16T2) | $(fmt_int "${m2:-0}") | $(med_p99 resp_redis_P16T2) ms | $(med_cpu resp_redis_P16T2) | | | |"
  echo
  echo "Round by round (each idgen run over the Redis run made next to it, which cancels the"
  echo "machine's drift between minutes): -P 1 $(pairs resp_idgen_P1 resp_redis_P1); -P 1 with \`--busy-poll-us 0\` $(pairs resp_nopoll_P1 resp_redis_P1); -P 16 $(pairs resp_idgen_P16 resp_redis_P16)."
  echo
  echo "redis-benchmark's CPU (median, % of one core): -P 1 $(med_ccpu resp_idgen_P1)% beside idgen, $(med_ccpu resp_redis_P1)% beside Redis;"
  echo "-P 16 $(med_ccpu resp_idgen_P16)% and $(med_ccpu resp_redis_P16)%; -P 16 with \`--threads 2\` $(med_ccpu resp_idgen_P16T2)% and $(med_ccpu resp_redis_P16T2)%. With one client thread near"
  echo "100%, the client sets the pace, and what it pays in its own system calls decides the rate: above"
  echo "all, waking a server thread asleep in \`epoll_wait\` (an inter-processor interrupt to its idle CPU)."
  # shellcheck disable=SC2086
  echo "IPIs per request (median, whole machine): -P 1 $(median ${IPI[resp_idgen_P1]-}) beside idgen, $(median ${IPI[resp_nopoll_P1]-}) beside idgen never polling, $(median ${IPI[resp_redis_P1]-}) beside Redis;"
  # shellcheck disable=SC2086
  echo "-P 16 $(median ${IPI[resp_idgen_P16]-}) and $(median ${IPI[resp_redis_P16]-}) (busy polling cuts idgen's: bench/resp_wakeups.py, docs/DESIGN.md §10)."
  echo "The \`--threads 2\` rows leave the server less CPU on two cores."
  echo
  echo "### HTTP: \`wrk -t$wrk_t -c$wrk_c -d$wrk_d\` on \`/id\`, idgen against nginx \`return 200 \"$nginx_body\\n\"\`"
  echo
  echo "| server | requests/s, each run | median | p99 latency | server CPU per request | idgen / nginx | target | |"
  echo "|---|---|---|---|---|---|---|---|"
  m1=$(med RPS http_idgen) m2=$(med RPS http_nginx) rt=$(ratio "$m1" "$m2")
  echo "| idgen \`GET /id\` | $(runs http_idgen) | **$(fmt_int "${m1:-0}")** | $(med_p99 http_idgen) ms | $(med_cpu http_idgen) | **${rt:-–}×** | ≥ 1.0× | $(verdict "$rt" 1.0) |"
  echo "| nginx \`return 200\` | $(runs http_nginx) | $(fmt_int "${m2:-0}") | $(med_p99 http_nginx) ms | $(med_cpu http_nginx) | | | |"
  echo
  echo "nginx: \`worker_processes auto\` ($(( $(wc -w <<<"$nginx_pids") - 1 )) workers), \`access_log off\`, \`keepalive_requests\` raised so that wrk never"
  echo "reconnects (bench/nginx.conf.in). wrk's CPU (median, % of one core, $wrk_t threads): $(med_ccpu http_idgen)% beside idgen, $(med_ccpu http_nginx)% beside nginx."
  echo "idgen's busy polls in each run: ${http_polls[*]:-–} (the gate lets loops poll only onto CPUs that the wrk threads leave idle: docs/DESIGN.md §10)."
  echo
  echo "### Batches: \`wrk -t$wrk_t -c$wrk_c -d$wrk_d\` on \`/id?count=$batch\` (keep-alive)"
  echo
  echo "| layout | requests/s, each run | median IDs/s | p99 latency | server CPU per request | bytes/response | target | |"
  echo "|---|---|---|---|---|---|---|---|"
  local ids pct
  m1=$(med RPS batch_wide); ids=$(awk -v r="$m1" -v b="$batch" 'BEGIN{ if (r != "") print r * b }')
  echo "| \`$wide_layout\` | $(runs batch_wide) | **$(awk -v x="$ids" 'BEGIN{ if (x == "") print "–"; else printf "%.1f M", x / 1e6 }')** | $(med_p99 batch_wide) ms | $(med_cpu batch_wide) | $(median ${BYTES[batch_wide]-}) | ≥ 20 M IDs/s | $(verdict "$ids" 20000000) |"
  m2=$(med RPS batch_twitter); ids=$(awk -v r="$m2" -v b="$batch" 'BEGIN{ if (r != "") print r * b }')
  pct=$(awk -v x="$ids" 'BEGIN{ if (x != "") printf "%.2f", x / 4096000 * 100 }')
  echo "| \`twitter\`, \`--max-borrow-ms 0\` | $(runs batch_twitter) | **$(awk -v x="$ids" 'BEGIN{ if (x == "") print "–"; else printf "%.3f M", x / 1e6 }')** = **${pct:-–}%** of 4,096,000 | $(med_p99 batch_twitter) ms | $(med_cpu batch_twitter) | $(median ${BYTES[batch_twitter]-}) | ≥ 98% | $(verdict "$pct" 98) |"
  echo
  echo "IDs/s = requests/s × $batch. The \`twitter\` layout can make 4,096 IDs per millisecond; without"
  echo "\`--max-borrow-ms 0\` the daemon would borrow up to a second of future IDs (the default) and a"
  echo "${wrk_d} run could pass the limit, so the run measures the sustained rate."
  echo
  echo "### Memory (VmRSS): a fresh daemon, idle, then holding idle connections"
  echo
  echo "| state | idgen serve | redis-server |"
  echo "|---|---|---|"
  echo "| idle, just started | $(mb "${MEM[idgen_0]-}") | $(mb "${MEM[redis_0]-}") |"
  for n in "${mem_levels[@]}"; do
    echo "| $(fmt_int "$n") open idle connections | $(mb "${MEM[idgen_$n]-}") | $(mb "${MEM[redis_$n]-}") |"
  done
  echo "| $(fmt_int "$maxn") connections, after one request each (idle again) | $(mb "${MEM[idgen_req]-}") | $(mb "${MEM[redis_req]-}") |"
  local per_i per_r
  per_i=$(awk -v a="${MEM[idgen_0]-}" -v b="${MEM[idgen_$maxn]-}" -v n="$maxn" 'BEGIN{ if (a != "" && b != "") printf "%.2f KB", (b - a) / n; else print "–" }')
  per_r=$(awk -v a="${MEM[redis_0]-}" -v b="${MEM[redis_$maxn]-}" -v n="$maxn" 'BEGIN{ if (a != "" && b != "") printf "%.2f KB", (b - a) / n; else print "–" }')
  echo "| per connection (from idle to $(fmt_int "$maxn")) | $per_i | $per_r |"
  echo
  echo "idgen's connections go to its HTTP listener, Redis's to its port; connected, nothing sent; then one"
  echo "request on each (\`GET /id\`; Redis \`PING\`), every reply read, the connections left open."
  echo "idgen after the connections closed: $(mb "$mem_idgen_after"). After the throughput runs:"
  echo "the benchmarked idgen $(mb "$main_rss_after") (peak $(mb "$main_hwm")), redis-server $(mb "$redis_rss_after"),"
  echo "nginx master and workers $(mb "$nginx_rss_after")."
  echo
  echo "### Commands"
  echo
  echo '```sh'
  echo "$idgen serve --http 127.0.0.1:0 --resp 127.0.0.1:0                       # RESP and /id"
  echo "$idgen serve --http off --resp 127.0.0.1:0 --busy-poll-us 0                 # RESP -P 1, never polling"
  echo "$idgen serve --http 127.0.0.1:0 --resp off --layout $wide_layout"
  echo "$idgen serve --http 127.0.0.1:0 --resp off --layout twitter --max-borrow-ms 0"
  echo "redis-server --bind 127.0.0.1 --port PORT --save '' --appendonly no"
  echo "nginx -p DIR -e DIR/error.log -c DIR/nginx.conf                        # from bench/nginx.conf.in"
  for k in resp_idgen_P1 resp_nopoll_P1 resp_redis_P1 resp_idgen_P16 resp_redis_P16 resp_idgen_P16T2 resp_redis_P16T2 http_idgen http_nginx batch_wide batch_twitter; do
    [ -n "${CMD[$k]-}" ] && echo "${CMD[$k]}"
  done
  echo "python3 holder.py    # opens ${mem_levels[*]} connections, reads VmRSS from /proc/PID/status"
  echo '```'
  echo
  echo "### Daemon counters after the runs (\`/metrics\`)"
  echo
  echo "- main: $(metric "$metrics_main" 'idgen_requests_total|idgen_connections_closed_total|idgen_clock_refusals_total|idgen_sequence_exhausted_total|idgen_busy_polls_total|idgen_busy_poll_loops_allowed|idgen_host_other_runnable_threads|idgen_loop_waits_total')"
  echo "- wide: $(metric "$metrics_wide" 'idgen_requests_total|idgen_clock_waits_total|idgen_sequence_exhausted_total|idgen_clock_refusals_total')"
  echo "- twitter: $(metric "$metrics_tw" 'idgen_requests_total|idgen_clock_waits_total|idgen_sequence_exhausted_total|idgen_clock_refusals_total')"
  report_problems
}
report_end
