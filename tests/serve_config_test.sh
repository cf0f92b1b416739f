#!/usr/bin/env bash
# Black-box tests of `idgen serve`'s settings and lifecycle: precedence of
# flags over IDGEN_* over the config file, --check-config, messages naming
# key, value and source, refusals at start, the pid file, SIGHUP reopening
# the log, SIGTERM exiting 0.  (Protocols: tests/serve/suite_*.py.)
# Usage: serve_config_test.sh PATH/TO/idgen.  Ends with "N passed, N failed".
set -u
IDGEN=${1:?usage: serve_config_test.sh PATH/TO/idgen}
pass=0
fail=0
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
unset "${!IDGEN_@}"

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# check NAME CONDITION-COMMAND...
check() { local name=$1; shift; if "$@"; then ok; else bad "$name"; fi; }
has() { grep -qF -- "$2" "$1"; }
# within SECONDS COMMAND...: true as soon as COMMAND is, false if it is not
# after SECONDS.  For what the daemon does on its own (listen, write a line):
# it takes milliseconds, the seconds are for a busy machine.
within() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -ge "$end" ] && return 1
    sleep 0.05
  done
}

# serve ARGS... : runs `idgen serve ARGS` expecting it to exit (bad settings,
# --check-config, --help); status in $rc, output in $tmp/out, $tmp/err.
serve() { "$IDGEN" serve "$@" >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?; }

# --- --help and --check-config ------------------------------------------
serve --help
check "help exits 0" [ $rc = 0 ]
check "help lists --max-batch" has "$tmp/out" "--max-batch N"
check "help names the environment" has "$tmp/out" "IDGEN_MAX_BATCH"

serve --check-config
check "check-config exits 0" [ $rc = 0 ]
check "default http" grep -q '^http = 127.0.0.1:8080 .*# default$' "$tmp/out"
# The default registry is an absolute directory, the same from any working
# directory (52df1fb: file:./var/idgen, so two daemons started from two
# directories both leased worker 0): /var/lib/idgen, the host's, for every
# user (tests/default_registry_test.sh starts daemons on it).
if [ "$(id -u)" = 0 ]; then
  check "default registry as root" grep -q '^registry = file:/var/lib/idgen .*# default$' "$tmp/out"
fi
grep '^registry = ' "$tmp/out" >"$tmp/reg-here"
(cd / && "$IDGEN" serve --check-config) 2>/dev/null | grep '^registry = ' >"$tmp/reg-root"
check "default registry: absolute, whatever the working directory" \
  bash -c "grep -q '^registry = file:/' '$tmp/reg-here' && cmp -s '$tmp/reg-here' '$tmp/reg-root'"
if command -v runuser >/dev/null && [ "$(id -u)" = 0 ] && ! runuser -u nobody -- test -w /var/lib/idgen; then
  # A user who may not write the host's directory is refused, whatever its
  # environment (0181e27 gave it a registry of its own under XDG_STATE_HOME).
  mkdir -p "$tmp/xdg" && chmod 777 "$tmp/xdg" "$tmp"
  out=$(cd / && runuser -u nobody -- env XDG_STATE_HOME="$tmp/xdg" "$IDGEN" serve --check-config 2>&1)
  check "default registry as a user who may not write it: refused, naming the fix" \
    grep -q "registry (the default): registry: the host's default registry /var/lib/idgen .*--registry file:DIR" <<<"$out"
  check "... and no directory of its own" test ! -e "$tmp/xdg/idgen"
fi
# Every daemon below leases from a registry of its own, not the default.
export IDGEN_REGISTRY="file:$tmp/reg"
check "threads resolved" grep -q '^threads = [1-9][0-9]* .*# default: one per CPU$' "$tmp/out"

# Precedence: flag > environment > file.
cat >"$tmp/conf" <<'CONF'
# a comment, then settings
max_batch = 10
max_wait_ms = 7
layout = sonyflake
CONF
IDGEN_MAX_BATCH=20 IDGEN_MAX_WAIT_MS=8 serve --config "$tmp/conf" --max-batch 30 --check-config
check "precedence: exit 0" [ $rc = 0 ]
check "flag beats env and file" grep -q '^max_batch = 30 .*# flag --max-batch$' "$tmp/out"
check "env beats file" grep -q '^max_wait_ms = 8 .*# IDGEN_MAX_WAIT_MS$' "$tmp/out"
check "file beats default" grep -q "^layout = sonyflake .*# $tmp/conf:4\$" "$tmp/out"
IDGEN_CONFIG="$tmp/conf" serve --check-config
check "IDGEN_CONFIG names the file" grep -q '^max_batch = 10 ' "$tmp/out"

# The printed settings are themselves a valid config file.
grep -v '^#' "$tmp/out" | sed 's/ *#.*//' >"$tmp/conf2"
serve --config "$tmp/conf2" --check-config
check "printed settings read back" [ $rc = 0 ]

# Repeated --node flags join; the environment's list is comma-separated.
serve --registry static --node datacenter=1 --node worker=2 --check-config
check "nodes joined" grep -q '^node = datacenter=1,worker=2 ' "$tmp/out"

# --- bad settings: exit 2, the key, the value and the source named ------
expect_err() { # NAME WANT_SUBSTRING ARGS...
  local name=$1 want=$2
  shift 2
  serve "$@"
  if [ $rc != 2 ]; then bad "$name: exit $rc, want 2"; return; fi
  if ! has "$tmp/err" "$want"; then bad "$name: stderr: $(cat "$tmp/err"), want: $want"; return; fi
  if [ "$(wc -l <"$tmp/err")" != 1 ]; then bad "$name: not one line: $(cat "$tmp/err")"; return; fi
  ok
}
expect_err "bad int flag" 'idgen: serve: max_batch = "lots" (from flag --max-batch): not a whole number from 1 to 10000000' --max-batch lots
IDGEN_MAX_BATCH=0 expect_err "bad int env" 'max_batch = "0" (from IDGEN_MAX_BATCH)' --check-config
printf 'max_bacth = 5\n' >"$tmp/c1"
expect_err "unknown file key" "$tmp/c1:1: unknown key \"max_bacth\"" --config "$tmp/c1"
printf 'max_batch = 5\nmax_batch = 6\n' >"$tmp/c2"
expect_err "key twice" "$tmp/c2:2: key \"max_batch\" given twice" --config "$tmp/c2"
printf '\njust words\n' >"$tmp/c3"
expect_err "line without =" "$tmp/c3:2: \"just words\" is not a key = value line" --config "$tmp/c3"
expect_err "missing file" "config file $tmp/nope:" --config "$tmp/nope"
expect_err "bad layout" 'layout = "time:41,seq:12" (from flag --layout): layout:' --layout time:41,seq:12
expect_err "node not in layout" '"rack" is not a node field of the layout (its node fields: datacenter, worker)' --node rack=1
expect_err "node out of range" 'worker value "32" is not a number from 0 to 31' --node worker=32
# The leased field's rule is the library's (idgen_lease_field), refused at
# --check-config as at acquisition.
expect_err "two node fields, none named worker" \
  'registry: the layout has 2 node fields and none is named worker: name the one to lease' \
  --layout 'time:41,a:5,b:5,sequence:12'
expect_err "bad registry" \
  'registry = "redis://x" (from flag --registry): registry: unknown scheme in "redis://x" (known: static, file:DIR, postgres://..., etcd://HOST:PORT, idgen://HOST:PORT)' \
  --registry redis://x
expect_err "bad postgres URI, caught before connecting" \
  'registry = "postgres://h/db?nope=1" (from flag --registry): registry: postgres: bad URI: invalid URI query parameter: "nope"' \
  --registry 'postgres://h/db?nope=1'
expect_err "leased field set by hand" 'node = "worker=3" (from flag --node): the registry file:'"$tmp"'/reg assigns worker: leave it out of node, or use registry = static' --node worker=3
expect_err "lease field not a node field" \
  'lease_field = "sequence" (from flag --lease-field): registry: "sequence" is not a node field of the layout' \
  --lease-field sequence
expect_err "bad address" 'http = "localhost" (from flag --http): expected HOST:PORT' --http localhost
expect_err "bad port" 'port "99999" is not a number from 0 to 65535' --resp 127.0.0.1:99999
expect_err "all off" 'http, resp and thrift are all off' --http off --resp off
expect_err "busy poll out of range" 'busy_poll_us = "1001" (from flag --busy-poll-us): not a whole number from 0 to 1000' --busy-poll-us 1001
expect_err "bad clock" 'clock = "slow" (from flag --clock): expected fast, precise or coarse' --clock slow
expect_err "same port twice" 'http and resp are both 127.0.0.1:7000: give each its own port' --http 127.0.0.1:7000 --resp 127.0.0.1:7000
expect_err "thrift on resp's port" 'resp and thrift are both 127.0.0.1:7001: give each its own port' --resp 127.0.0.1:7001 --thrift 127.0.0.1:7001
expect_err "output limit below one full batch" 'max_output_bytes = 65536 (from flag --max-output-bytes) is too small for one reply of max_batch = 100000 IDs (from default: the layout within borrow + wait): it needs 4369632' --max-output-bytes 65536
# The default max_batch is what the layout can make within borrow + wait
# (a batch never waits longer than one ID may): sonyflake's 256 IDs per
# 10 ms tick for 1 + 110 ticks; a 16-per-second layout, 32.
serve --registry static --layout sonyflake --check-config
check "max_batch from the layout (sonyflake)" grep -q '^max_batch = 28416 .*# default: the layout within borrow + wait$' "$tmp/out"
serve --registry static --layout 'time:41@1s,worker:10,sequence:4' --check-config
check "max_batch from the layout (16 per second)" grep -q '^max_batch = 32 ' "$tmp/out"
serve --registry static --layout twitter --max-borrow-ms 0 --max-wait-ms 0 --check-config
check "max_batch from the layout (twitter, no borrow, no wait)" grep -q '^max_batch = 4096 ' "$tmp/out"
IDGEN_THREADS=0 serve --check-config
check "threads 0 from the environment keeps its source" grep -q '^threads = 0 .*# IDGEN_THREADS$' "$tmp/out"
expect_err "unknown option" 'unknown option --bogus' --bogus
expect_err "stray argument" 'unexpected argument "extra"' extra

# Messages quote settings as printable ASCII (\xHH for other bytes), whole
# after a NUL; nothing else but printable ASCII and the newline reaches stderr.
expect_quoted() { # NAME WANT_SUBSTRING ARGS... (--check-config: a setting wrongly taken does not start a daemon)
  expect_err "$@" --check-config
  LC_ALL=C grep -q '[^ -~]' "$tmp/err" && bad "$1: a raw byte in: $(od -c "$tmp/err" | head -5)"
}
printf 'max_b\xc1tch = 5\n' >"$tmp/q1"
expect_quoted "file key with 0xC1" "$tmp/q1:1: unknown key \"max_b\\xC1tch\"" --config "$tmp/q1"
printf '# ok\nmax_batch = 5\0junk\n' >"$tmp/q2"
expect_quoted "file line with a NUL" "$tmp/q2:2: a NUL byte in \"max_batch = 5\\x00junk\"" --config "$tmp/q2"
printf 'layout = tw\x7fitter\n' >"$tmp/q3"
expect_quoted "file value with DEL" "layout = \"tw\\x7Fitter\" (from $tmp/q3:1): layout: unknown preset \"tw\\x7Fitter\"" --config "$tmp/q3"
printf 'just\x1b[31m words\n' >"$tmp/q4"
expect_quoted "file line with ESC" "$tmp/q4:1: \"just\\x1B[31m words\" is not a key = value line" --config "$tmp/q4"
expect_quoted "flag value with 0xC1" 'max_batch = "1\xC1" (from flag --max-batch): not a whole number' --max-batch $'1\xc1'
expect_quoted "node name with 0xE9" '"w\xE9" is not a node field of the layout' --registry static --node $'w\xe9=1'
expect_quoted "node value with 0xFF" 'worker value "1\xFF" is not a number from 0 to 31' --registry static --node $'worker=1\xff'
expect_quoted "port with 0xC1" 'port "80\xC1" is not a number from 0 to 65535' --http $'127.0.0.1:80\xc1'
expect_quoted "unknown option with 0xC1" 'unknown option --x\xC1' $'--x\xc1'
expect_quoted "stray argument with ESC" 'unexpected argument "e\x1Bx"' $'e\x1bx'
expect_quoted "config path with 0xC1" "config file $tmp/no\\xC1: " --config "$tmp/no"$'\xc1'

# --- lifecycle -----------------------------------------------------------
# start_daemon ARGS...: starts it in the background; sets $dpid, $http.
http_in() { http=$(sed -n 's/.*event=listen proto=http addr=\([^ ]*\).*/\1/p' "$1" 2>/dev/null); [ -n "$http" ]; }
# start_daemon FLAGS...: the daemon on free ports, its log in $tmp/log (or
# the --log-file given), waited for until it listens.
start_daemon() {
  local log=$tmp/log a prev=
  for a in "$@"; do
    [ "$prev" != --log-file ] || log=$a
    prev=$a
  done
  : >"$tmp/log"
  "$IDGEN" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 "$@" 2>>"$tmp/log" &
  dpid=$!
  pids+=("$dpid")
  within 60 http_in "$log"
}

start_daemon --pid-file "$tmp/pid" --log-file "$tmp/daemon.log" --audit-log "$tmp/audit" \
  --registry static --node datacenter=1 --node worker=2
# With --log-file the log goes to the file (start_daemon found the port
# there).
check "log file has the start line" has "$tmp/daemon.log" "event=start"
check "pid file names the daemon" [ "$(cat "$tmp/pid" 2>/dev/null)" = "$dpid" ]
check "serves" [ "$(curl -s "http://$http/health" | head -1)" = ok ]
check "unknown query parameter on /health is a 400" \
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$http/health?foo=bar")" = 400 ]
# A second daemon on the same pid file refuses to start.
serve --http 127.0.0.1:0 --resp off --pid-file "$tmp/pid"
check "pid file of a live daemon refused (exit 1)" [ $rc = 1 ]
check "pid file message" has "$tmp/err" "names process $dpid, which is running"
# And one on the same port refuses too, even though both use SO_REUSEPORT.
serve --http "$http" --resp off
check "address in use refused" [ $rc = 1 ]
check "address in use message" has "$tmp/err" "cannot listen on http $http: Address already in use"
# The audit log: a line per Snowflake request, its first ID, count, agent.
first=$(curl -s "http://$http/id?count=3&agent=auditor" | head -1)
resp_port=$(sed -n 's/.*event=listen proto=resp addr=127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/daemon.log")
one=$(redis-cli -p "$resp_port" ID | tr -d '\r')
curl -s "http://$http/ulid" >/dev/null # not a Snowflake request: no line
lines_in() { [ "$(wc -l <"$1")" -ge "$2" ]; }
within 30 lines_in "$tmp/audit" 2
check "audit: the HTTP request's line" grep -Eq "^ms=[0-9]{13} proto=http first=$first count=3 agent=auditor\$" "$tmp/audit"
check "audit: the RESP request's line" grep -Eq "^ms=[0-9]{13} proto=resp first=$one count=1 agent=-\$" "$tmp/audit"
check "audit: two lines (the ULID is not audited)" [ "$(wc -l <"$tmp/audit")" = 2 ]
# SIGHUP reopens the log and the audit log: after a rotation, new lines go
# to the new files.
mv "$tmp/daemon.log" "$tmp/daemon.log.1"
mv "$tmp/audit" "$tmp/audit.1"
kill -HUP "$dpid"
within 30 test -s "$tmp/daemon.log"
check "HUP reopened the log" has "$tmp/daemon.log" "event=reopen_log signal=HUP"
check "HUP reopened the audit log" has "$tmp/daemon.log.1" "event=reopen_audit_log signal=HUP"
after=$(curl -s "http://$http/id")
within 30 test -s "$tmp/audit"
check "audit: after HUP, lines go to the new file" grep -q "first=$after count=1" "$tmp/audit"
check "audit: the rotated file has nothing new" [ "$(wc -l <"$tmp/audit.1")" = 2 ]
kill -TERM "$dpid"
wait "$dpid"
rc=$?
check "TERM exits 0" [ $rc = 0 ]
check "exit logged" has "$tmp/daemon.log" "event=exit code=0"
check "pid file removed" [ ! -e "$tmp/pid" ]

# --- the wall clock steps back 10 s under a running daemon (libfaketime) ---
# Bounded (include/idgen.h): it refuses with 503 / -ERR naming how long
# until it can go on, /ready says why, the refusal is logged and counted;
# when the clock returns, it serves again, and no ID repeats or goes back.
faketime_lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
if [ ! -e "$faketime_lib" ]; then
  bad "libfaketime missing ($faketime_lib): run scripts/install-deps.sh"
elif grep -qa AddressSanitizer "$IDGEN"; then
  # ASan's runtime and a preloaded libfaketime deadlock at start-up; the
  # regular build runs this group.
  echo "SKIP: clock step under libfaketime (not possible in an ASan build)"
else
  echo "+0" >"$tmp/faketime"
  FAKETIME_DONT_FAKE_MONOTONIC=1 FAKETIME_NO_CACHE=1 FAKETIME_TIMESTAMP_FILE="$tmp/faketime" \
    LD_PRELOAD="$faketime_lib" start_daemon --max-wait-ms 0
  rport=$(sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9]*\).*/\1/p' "$tmp/log")
  before=$(curl -s "http://$http/id")
  echo "-10s" >"$tmp/faketime"
  sleep 0.05
  curl -s -D "$tmp/h" -o "$tmp/body" "http://$http/id"
  check "step back: 503" grep -q '^HTTP/1.1 503' "$tmp/h"
  check "step back: Retry-After" grep -qE '^Retry-After: (9|10)' "$tmp/h"
  check "step back: reason names the wait" grep -qE '^clock: the wall clock is [0-9]+ ms behind the generator \(max_borrow_ms 1000\); IDs resume in about [0-9]+ ms$' "$tmp/body"
  check "step back: /ready 503" [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$http/ready")" = 503 ]
  redis-cli -p "$rport" ID >"$tmp/r"
  check "step back: RESP -ERR clock" grep -q '^ERR clock: the wall clock is' "$tmp/r"
  check "step back: logged" has "$tmp/log" "event=clock_refusal"
  check "step back: counted" [ "$(curl -s "http://$http/metrics" | sed -n 's/^idgen_clock_refusals_total //p')" -ge 2 ]
  echo "+0" >"$tmp/faketime"
  sleep 0.05
  after=$(curl -s "http://$http/id")
  check "clock back: serves again, above the ID before the step ($before < $after)" [ "$after" -gt "$before" ]
  check "clock back: /ready ok" [ "$(curl -s "http://$http/ready" | head -1)" = ok ]
  kill -TERM "$dpid"; wait "$dpid"
fi

# --- limits: max_connections, and running out of file descriptors --------
# hold N PORT SECONDS WANT: opens N connections, waits for WANT refusal
# lines (they come as the daemon accepts: at most 30 s, then 0.3 s more for
# any beyond), holds them SECONDS, prints how many got a refusal line, then
# (after closing them) whether a new client is served (within 30 s: the
# daemon must first see the others go).
hold() {
  python3 - "$@" <<'PY'
import select, socket, sys, time
n, port, secs, want = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
pending, refused = list(socks), 0
def read_until(until, enough):
    global refused
    while pending and refused < enough:
        left = until - time.monotonic()
        if left <= 0:
            return
        for s in select.select(pending, [], [], left)[0]:
            pending.remove(s)
            try:
                refused += s.recv(100).startswith(b"-ERR max number of clients reached")
            except OSError:
                pass
read_until(time.monotonic() + 30, want)
read_until(time.monotonic() + 0.3, n)
time.sleep(secs)
for s in socks:
    s.close()
served, deadline = False, time.monotonic() + 30
while not served and time.monotonic() < deadline:
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=5)
        c.sendall(b"PING\r\n")
        served = c.recv(100) == b"+PONG\r\n"
        c.close()
    except OSError:
        pass
    if not served:
        time.sleep(0.1)
print(refused, served)
PY
}
resp_port() { sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9]*\).*/\1/p' "$tmp/log"; }

start_daemon --max-connections 5
got=$(hold 8 "$(resp_port)" 0 3)
check "max_connections: 3 of 8 refused, then served again ($got)" [ "$got" = "3 True" ]
kill -TERM "$dpid"; wait "$dpid"

# With 40 descriptors the daemon runs out (EMFILE) well before 200
# connections: it must drop the extra ones without spinning on the
# listening socket, and serve again once they are gone.  It starts with
# only stdin, stdout and stderr open: descriptors this script inherited
# (from make, ctest, a CI runner: 30 of them leave the daemon too few to
# start) would count against its 40.
# The log is emptied first: the daemon before wrote its own listen line
# there, which a look made before this one's shell opens the file would find.
: >"$tmp/log"
(ulimit -n 40 && exec python3 -c 'import os, sys; os.closerange(3, 4096); os.execv(sys.argv[1], sys.argv[1:])' \
  "$IDGEN" serve --http off --resp 127.0.0.1:0 --threads 1 2>>"$tmp/log") &
dpid=$!
pids+=("$dpid")
has_resp_port() { [ -n "$(resp_port)" ]; }
within 60 has_resp_port
check "fd limit warned" has "$tmp/log" "event=fd_limit limit=40"
cpu() { awk '{print $14 + $15}' "/proc/$dpid/stat"; }
before=$(cpu)
got=$(hold 200 "$(resp_port)" 1 0)
after=$(cpu)
check "EMFILE: served again afterwards ($got)" [ "${got#* }" = True ]
# 1.3 s or more of holding: a spinning loop would burn ~130 ticks; allow 60.
check "EMFILE: no spinning (cpu ticks $before -> $after)" [ $((after - before)) -lt 60 ]
check "EMFILE logged" has "$tmp/log" "event=accept_error"
kill -TERM "$dpid"; wait "$dpid"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
