# bench/lib.sh: what the benchmarks that start daemons share (bench/serve_bench.sh,
# bench/tls_bench.sh): options, the idgen path, the tools check, a temporary directory and
# the processes started (stopped by PID at the end, also on Ctrl-C or an error), the log,
# wrk's and redis-benchmark's figures, medians, the report's end.  Sourced, not run:
#
#   prog=NAME here=BENCH_DIR repo=REPOSITORY
#   # shellcheck source=bench/lib.sh
#   . "$here/lib.sh"
#
# prog names the script in messages; the default idgen is $repo/build/idgen.  Sourcing only
# defines functions and empty state (options at their defaults, no figures).
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2317 # variables the scripts read; functions called from traps
: "${prog:?set prog before sourcing bench/lib.sh}" "${repo:?set repo before sourcing bench/lib.sh}"

# ---------------------------------------------------------------- options
quick=0 rounds=3 rounds_given=0 out="" keep=0 idgen=""
# usage: the script's header comment, up to its first `# shellcheck` line
usage() { sed -n '2,/^# shellcheck/{/^# shellcheck/d;s/^# \{0,1\}//;p}' "$0"; }
# bench_option ARGS...: takes the option in $1 (--quick, --rounds N, --out FILE, --keep,
# -h/--help, or the one PATH_TO_idgen), sets OPT_SHIFT to the words it used; exits 2 on an
# unknown option or a missing value.  A script matches its own options before calling it.
bench_option() {
  OPT_SHIFT=1
  case "$1" in
    --quick) quick=1 ;;
    --rounds) [ $# -ge 2 ] || { echo "$prog: --rounds needs a number" >&2; exit 2; }
              rounds=$2; rounds_given=1; OPT_SHIFT=2 ;;
    --rounds=*) rounds=${1#*=}; rounds_given=1 ;;
    --out) [ $# -ge 2 ] || { echo "$prog: --out needs a file" >&2; exit 2; }; out=$2; OPT_SHIFT=2 ;;
    --out=*) out=${1#*=} ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "$prog: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) [ -z "$idgen" ] || { echo "$prog: one idgen path only" >&2; exit 2; }; idgen=$1 ;;
  esac
}
# bench_options_end: after the options: exits 2 unless rounds is a positive integer; --quick
# without --rounds makes it 1
bench_options_end() {
  case "$rounds" in ''|*[!0-9]*|0) echo "$prog: --rounds wants a positive integer, not '$rounds'" >&2; exit 2 ;; esac
  if [ "$quick" = 1 ] && [ "$rounds_given" != 1 ]; then rounds=1; fi
}

# resolve_idgen: makes $idgen (default $repo/build/idgen) an absolute path; exits 2 unless
# it is an executable
resolve_idgen() {
  [ -n "$idgen" ] || idgen=$repo/build/idgen
  case "$idgen" in */*) ;; *) idgen=./$idgen ;; esac
  if [ ! -x "$idgen" ]; then
    echo "$prog: $idgen: not an executable (build it first: make build, or give its path)" >&2
    exit 2
  fi
  idgen=$(cd "$(dirname "$idgen")" && pwd)/$(basename "$idgen")
}

# ---------------------------------------------------------------- tools
missing=() pkgs=()
need() {  # need COMMAND PACKAGE: notes COMMAND as missing unless it is on PATH
  if ! command -v "$1" >/dev/null 2>&1; then
    missing+=("$1")
    case " ${pkgs[*]-} " in *" $2 "*) ;; *) pkgs+=("$2") ;; esac
  fi
}
# need_end: exits 2, naming the Debian packages, if a need found a command missing
need_end() {
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$prog: missing ${missing[*]}: install the Debian package(s) ${pkgs[*]}" >&2
    echo "$prog: (scripts/install-deps.sh installs them; or: apt-get install -y ${pkgs[*]})" >&2
    exit 2
  fi
}

# ---------------------------------------------------------------- state, cleanup
pids=() names=()      # what cleanup stops, by PID, and how the log names each
errors=() notes=()    # for the report's "Problems seen"; an error makes the exit status 1
failed=0
CLIENT_PID="" HOLDER_PID=""  # a benchmark client, a helper: TERMed first by cleanup

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }  # log TEXT: on stderr, timed
err() { errors+=("$*"); failed=1; log "ERROR: $*"; }      # err TEXT: an error, reported
note() { notes+=("$*"); log "note: $*"; }                 # note TEXT: a remark, reported

# bench_state PREFIX KEPT: makes the temporary directory $tmp (${TMPDIR:-/tmp}/PREFIX.XXXXXX;
# exits 2 if it cannot) and sets the traps: on exit cleanup; on SIGINT or SIGTERM a message
# and the exit status 130 or 143.  KEPT says what $tmp holds, when it is kept.
bench_state() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 2
  kept_what=$2
  trap cleanup EXIT
  trap 'echo "$prog: interrupted" >&2; exit 130' INT
  trap 'echo "$prog: terminated" >&2; exit 143' TERM
}
# cleanup: the EXIT trap: stops CLIENT_PID, HOLDER_PID and every process in pids, removes
# $tmp unless the exit status is not 0 or --keep was given (then says where it is)
cleanup() {
  local rc=$? i p
  trap - EXIT INT TERM
  for p in "$CLIENT_PID" "$HOLDER_PID"; do
    if [ -n "$p" ]; then kill -TERM "$p" 2>/dev/null; wait "$p" 2>/dev/null; fi
  done
  for i in "${!pids[@]}"; do
    stop_pid "${pids[$i]}" "${names[$i]}" >/dev/null 2>&1
  done
  if [ "$rc" -eq 0 ] && [ "$keep" = 0 ]; then rm -rf "$tmp"
  else echo "$prog: $kept_what kept in $tmp" >&2; fi
  exit "$rc"
}

stop_pid() {  # stop_pid PID NAME: TERM, up to 8 s, then KILL; returns the exit status
  local pid=$1 name=$2 i st
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return $?; }
  kill -TERM "$pid" 2>/dev/null
  for ((i = 0; i < 80; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    # a zombie child is "alive" for kill -0 until it is reaped
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
    log "$name (pid $pid) ignored SIGTERM for 8 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null; st=$?
  return $st
}
forget() {  # forget PID: no longer ours to stop
  local i
  for i in "${!pids[@]}"; do [ "${pids[$i]}" = "$1" ] && unset 'pids[i]' 'names[i]'; done
}
# stop_daemons PID...: stops each (it must not have died meanwhile, and must exit 0 on
# SIGTERM: err otherwise) and forgets it
stop_daemons() {
  local pid name i st
  for pid in "$@"; do
    name=$(for i in "${!pids[@]}"; do [ "${pids[$i]}" = "$pid" ] && echo "${names[$i]}"; done)
    kill -0 "$pid" 2>/dev/null || err "$name died during the benchmarks"
    stop_pid "$pid" "$name"; st=$?
    forget "$pid"
    [ "$st" = 0 ] || err "$name: exit status $st after SIGTERM (expected 0)"
  done
}
# note_log FILE SKIP_REGEX: a note with the first 5 lines of a daemon's log that SKIP_REGEX
# (grep -E) does not match, if any
note_log() {
  local w
  w=$(grep -Ev "$2" "$1" | head -5)
  [ -z "$w" ] || note "$(basename "$1" .log) logged: $(printf '%s' "$w" | tr '\n' '|' | cut -c1-400)"
}

# ---------------------------------------------------------------- daemons
# idgen_serve NAME ARGS...: `$idgen serve --registry file:$tmp/registry ARGS...` in the
# background (a registry of its own: the default, /var/lib/idgen as root, is the host's), its
# log in $tmp/idgen-NAME.log; waits up to 10 s for its event=listen lines, HTTP and RESP
# unless ARGS say --http off or --resp off.  Sets IDGEN_PID, HTTP_PORT, RESP_PORT (empty
# when off); returns 1 (an err) if it exits or does not listen.
idgen_serve() {
  local name=$1 i; shift
  local logf=$tmp/idgen-$name.log
  "$idgen" serve --registry "file:$tmp/registry" "$@" </dev/null 2>"$logf" &
  IDGEN_PID=$!
  pids+=("$IDGEN_PID"); names+=("idgen serve ($name)")
  HTTP_PORT="" RESP_PORT=""
  local want_http=1 want_resp=1 a prev=""
  for a in "$@"; do
    [ "$prev" = --http ] && [ "$a" = off ] && want_http=0
    [ "$prev" = --resp ] && [ "$a" = off ] && want_resp=0
    prev=$a
  done
  for ((i = 0; i < 100; i++)); do
    if ! kill -0 "$IDGEN_PID" 2>/dev/null; then
      err "idgen serve ($name) exited at start: $(tail -3 "$logf" | tr '\n' ' ')"
      return 1
    fi
    HTTP_PORT=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$logf" | head -1)
    RESP_PORT=$(sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$logf" | head -1)
    if { [ "$want_http" = 0 ] || [ -n "$HTTP_PORT" ]; } && { [ "$want_resp" = 0 ] || [ -n "$RESP_PORT" ]; }; then
      log "idgen serve ($name): pid $IDGEN_PID, http ${HTTP_PORT:-off}, resp ${RESP_PORT:-off}"
      return 0
    fi
    sleep 0.1
  done
  err "idgen serve ($name): no 'event=listen' log lines within 10 s (log: $(head -3 "$logf" | tr '\n' ' '))"
  return 1
}
rss_kb() { awk '/^VmRSS:/{print $2}' "/proc/$1/status" 2>/dev/null; }  # rss_kb PID: its VmRSS
hwm_kb() { awk '/^VmHWM:/{print $2}' "/proc/$1/status" 2>/dev/null; }  # hwm_kb PID: its peak RSS

# ---------------------------------------------------------------- measurements
# Figures by key (a benchmark), each a space-separated list, a value per run; CMD: the
# command line the report shows.
declare -A RPS P99 SCPU CCPU CMD
push() {  # push ARRAY KEY VALUE: appends VALUE to the list ARRAY[KEY]
  local -n push_to=$1
  push_to[$2]="${push_to[$2]-}${push_to[$2]:+ }$3"
}
# add KEY RPS P99_MS SERVER_CPU_US_PER_REQUEST [CLIENT_CPU_PERCENT]: a run's figures
add() {
  push RPS "$1" "$2"; push P99 "$1" "$3"; push SCPU "$1" "$4"
  [ $# -lt 5 ] || push CCPU "$1" "$5"
}
# ticks PID...: CPU time in clock ticks of the given processes (all their threads; 0 for gone)
ticks() { local p; for p in "$@"; do awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null; done | awk '{s += $1} END {print s + 0}'; }
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
now() { date +%s.%N; }
# bg_client OUTFILE SECONDS COMMAND...: COMMAND under `timeout SECONDS`, its output in
# OUTFILE, in the background, so that a Ctrl-C runs the trap at once (bash defers a trap until
# a foreground command ends, and skips it when that command catches SIGINT itself, as wrk
# does); cleanup() stops it.  Returns its exit status.
bg_client() {
  local f=$1 t=$2 rc; shift 2
  timeout "$t" "$@" >"$f" 2>&1 &
  CLIENT_PID=$!
  wait "$CLIENT_PID"; rc=$?
  CLIENT_PID=""
  return "$rc"
}
# cpu_per_req N: server CPU microseconds per request of N, from RUN_SERVER_TICKS
cpu_per_req() { awk -v t="$RUN_SERVER_TICKS" -v hz="$hz" -v n="$1" 'BEGIN{ if (n > 0) printf "%.2f", t / hz * 1e6 / n }'; }
kv() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }  # kv "K=V K=V" K: V

# wrk_lua: writes $tmp/report.lua, for wrk -s: its done() hook prints a WRKRESULT line
wrk_lua() {
  cat >"$tmp/report.lua" <<'EOF'
-- wrk's done() hook: the figures, machine-readable (latency in microseconds)
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "WRKRESULT requests=%d duration_us=%d bytes=%d p50_us=%d p99_us=%d max_us=%d connect=%d read=%d write=%d status=%d timeout=%d\n",
    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99),
    latency.max, e.connect, e.read, e.write, e.status, e.timeout))
end
EOF
}
# wrk_figures KEY FILE RC URL COMMAND...: the figures of the wrk run COMMAND (exit status RC)
# that wrote FILE: sets WRK_RES (the WRKRESULT line), WRK_N (requests), WRK_RPS, WRK_P99 (ms).
# Returns 1 (an err) for a failed run; errs for error responses (status >= 400) and socket
# errors; returns 2 (an err) when no request completed.
wrk_figures() {
  local key=$1 f=$2 rc=$3 url=$4 st errs; shift 4
  WRK_RES=$(grep '^WRKRESULT' "$f" | tail -1)
  if [ "$rc" -ne 0 ] || [ -z "$WRK_RES" ]; then
    err "$key: '$*' failed (exit $rc): $(head -3 "$f" | tr '\n' ' ')"
    return 1
  fi
  WRK_N=$(kv "$WRK_RES" requests)
  WRK_RPS=$(awk -v n="$WRK_N" -v d="$(kv "$WRK_RES" duration_us)" 'BEGIN{printf "%.2f", n / (d / 1e6)}')
  WRK_P99=$(awk -v u="$(kv "$WRK_RES" p99_us)" 'BEGIN{printf "%.3f", u / 1000}')
  st=$(kv "$WRK_RES" status)
  errs="connect $(kv "$WRK_RES" connect), read $(kv "$WRK_RES" read), write $(kv "$WRK_RES" write), timeout $(kv "$WRK_RES" timeout)"
  [ "$st" = 0 ] || err "$key: $st non-2xx/3xx responses of $WRK_N ($url)"
  case "$errs" in "connect 0, read 0, write 0, timeout 0") ;;
    *) err "$key: wrk socket errors: $errs ($url)" ;; esac
  [ "$WRK_N" -gt 0 ] || { err "$key: no requests completed ($url)"; return 2; }
}
# rb_figures KEY FILE RC COMMAND...: the figures of the redis-benchmark --csv run COMMAND
# (exit status RC) that wrote FILE: sets RB_RPS and RB_P99 (ms) from its last line; returns 1
# (an err with the output's last lines) for a failed run or one without figures
rb_figures() {
  local key=$1 f=$2 rc=$3 line; shift 3
  line=$(grep -v '^"test"' "$f" | grep '^"' | tail -1 | tr -d '"')
  RB_RPS=$(printf '%s' "$line" | awk -F, '{print $2}')
  RB_P99=$(printf '%s' "$line" | awk -F, '{print $7}')
  if [ "$rc" -ne 0 ] || [ -z "$RB_RPS" ]; then
    err "$key: '$*' failed (exit $rc): $(grep -v '^"' "$f" | tr '\r' '\n' | grep . | tail -3 | tr '\n' ' ')"
    return 1
  fi
}

# ---------------------------------------------------------------- numbers
# fmt_int X: X rounded, with thousands separators; – for none
fmt_int() { awk -v x="$1" 'BEGIN { if (x == "") { print "–"; exit } s = sprintf("%.0f", x); r = "";
  while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }
  print s r }'; }
# median X...: the median of the non-empty arguments; empty for none
median() { printf '%s\n' "$@" | grep . | sort -g | awk '{ a[NR] = $1 }
  END { if (NR == 0) { print ""; exit } if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
med() { local -n med_of=$1; local v; read -ra v <<<"${med_of[$2]-}"; median "${v[@]}"; }  # med ARRAY KEY
# runs KEY: the requests/s of each run, "a · b · c"; "failed" for none
runs() { local v out="" a; read -ra a <<<"${RPS[$1]-}"; for v in "${a[@]}"; do out="$out${out:+ · }$(fmt_int "$v")"; done; echo "${out:-failed}"; }
mb() { awk -v k="$1" 'BEGIN{ if (k == "") print "–"; else printf "%.1f MB", k / 1024 }'; }  # mb KB

# ---------------------------------------------------------------- start, report
# bench_facts: sets started (UTC), load_start, cpu, idgen_version, wrk_version
bench_facts() {
  started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  load_start=$(cut -d' ' -f1-3 /proc/loadavg)
  idgen_version=$("$idgen" --version 2>/dev/null | head -1)
  wrk_version=$(wrk --version 2>&1 | head -1 | awk '{print $2}')
  cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
}
# report_problems: the report's "Problems seen" section: the errors and the notes, if any
report_problems() {
  local e
  if [ ${#errors[@]} -gt 0 ] || [ ${#notes[@]} -gt 0 ]; then
    echo
    echo "### Problems seen"
    echo
    for e in "${errors[@]}"; do echo "- error: $e"; done
    for e in "${notes[@]}"; do echo "- $e"; done
  fi
}
# report_end: prints the script's report() on stdout (and into --out's file), then exits:
# 1 if there was an error, else 0
report_end() {
  local text
  text=$(report)
  printf '%s\n' "$text"
  [ -z "$out" ] || printf '%s\n' "$text" >"$out"
  exit "$failed"
}
