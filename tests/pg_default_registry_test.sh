#!/usr/bin/env bash
# pg_default_registry_test.sh BUILD_DIR -- the PostgreSQL extension on
# defaults takes the host's registry (SPEC §8: one per host, whatever the
# user), as the daemon does.
#
# An earlier extension defaulted to file:$PGDATA/pg_idgen: a daemon on
# defaults and the extension on defaults both leased datacenter=0,worker=0
# from two registries (612,800 duplicates in 12 M IDs in a review).  Now:
#   1. /var/lib/idgen missing (the server's user cannot make it), then there
#      but not the server's user's (group nogroup, 2770): idgen_snowflake()
#      is refused with the library's message and the extension's way out
#      (the group, a restart, or idgen.registry naming a registry of the
#      server's own), and nothing is leased nor made.
#   2. /var/lib/idgen shared with the server's group: the worker takes it
#      without a restart; beside a daemon on defaults (as root, the unit's
#      UMask=0027), the two lease different tuples of one registry, and 2 M
#      IDs from each have no duplicate.
#   3. The upgrade: a server whose data directory holds the earlier default's
#      registry (made here by naming it, which makes the same files), with
#      idgen.registry unset, is refused, naming both ways out; keeping it by
#      name issues above its earlier IDs; switching to the host's (unset, the
#      old one moved aside) issues above every earlier ID although the clock
#      is behind them and pg_idgen.last lagged them (as after a crash).
#
# It runs itself again in a private mount namespace with a tmpfs over
# /var/lib, so the host's /var/lib/idgen is never seen nor touched; the
# servers it started are stopped, and the daemon (a recorded PID) killed.
# Installs the extension into the server's directories (root: PGXS writes
# under /usr), as tests/pg_ext_test.sh does.  Exit status: 0 passed, 1
# failed, 77 skipped (not root, or a tool missing).  Ends with
# "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: pg_default_registry_test.sh BUILD_DIR}" && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
FAKETIME_SO=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1

# shellcheck source=tests/checks.sh
. "$ROOT/tests/checks.sh"

if [ "${IDGEN_PG_DEFAULT_NS:-}" != 1 ]; then
  need_root unshare curl psql # a mount namespace over /var/lib; PGXS installs under /usr
  [ -x "$PG_CONFIG" ] || {
    echo "skipped: no $PG_CONFIG (postgresql-server-dev-15)"
    exit 77
  }
  [ -f "$FAKETIME_SO" ] || {
    echo "skipped: no $FAKETIME_SO (faketime)"
    exit 77
  }
  exec env IDGEN_PG_DEFAULT_NS=1 unshare --mount --propagation private "$0" "$@"
fi

mount -t tmpfs -o mode=0755 idgen-pg-default-registry-test /var/lib || exit 1
work=$(mktemp -d /tmp/idgen-pgdef-XXXXXX)
chmod 755 "$work" # the postgres user reaches its data directories below
daemon=""
cleanup() {
  [ -z "$daemon" ] || { kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null; }
  "$ROOT/tests/pg_server.sh" stop "$work/s" >/dev/null 2>&1
  "$ROOT/tests/pg_server.sh" stop "$work/u" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
finish() {
  [ "$fail" = 0 ] || for d in s u; do
    [ -f "$work/$d/log" ] && { echo "--- $d's log"; grep idgen "$work/$d/log" | tail -8; }
  done
  [ -f "$work/daemon.log" ] && [ "$fail" != 0 ] && { echo "--- the daemon's log"; tail -5 "$work/daemon.log"; }
  tally && exit 0
  exit 1
}

echo "== make -C pg install (PGXS, on $BUILD/pg-libs)"
make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$BUILD" install >/dev/null || {
  bad "the extension did not build or install"
  finish
}

# q DIR SQL: SQL on DIR's server; ans DIR SQL: its answer or its error
q() { psql -h "$1" -p "$(cat "$1/port")" -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1 -c "$2"; }
ans() { q "$1" "$2" 2>&1; }
# when_ready DIR SQL [SECONDS]: retries SQL until it succeeds (the worker is
# taking its lease, or waiting for the clock), at most SECONDS (60)
when_ready() {
  local out end=$((SECONDS + ${3:-60}))
  while :; do
    out=$(q "$1" "$2" 2>&1) && {
      echo "$out"
      return 0
    }
    [ "$SECONDS" -lt "$end" ] || break
    sleep 0.5
  done
  echo "$out" >&2
  return 1
}
# refusal DIR PATTERN: idgen_snowflake()'s error once it matches PATTERN
# (the worker looks at the registry again every second), within 20 s
refusal() {
  local out i
  for i in $(seq 1 40); do
    out=$(ans "$1" "SELECT idgen_snowflake()")
    grep -q -- "$2" <<<"$out" && break
    sleep 0.5
  done
  echo "$out"
}
restart() { # DIR [ENV...]: stops DIR's server and starts it again with ENV
  local dir=$1
  shift
  "$ROOT/tests/pg_server.sh" pause "$dir" && env "$@" "$ROOT/tests/pg_server.sh" resume "$dir"
}
AHEAD=(FAKETIME=+25s FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$FAKETIME_SO)
# a twitter ID's time (Unix ms) and tuple
ms_of() { echo $((($1 >> 22) + 1288834974657)); }
tuple_of() { echo "datacenter=$((($1 >> 17) & 31)),worker=$((($1 >> 12) & 31))"; }

# ---- 1. the host's registry missing, then not the server's user's -----------
S=$work/s
"$ROOT/tests/pg_server.sh" start "$S" "$(free_port)" >/dev/null || {
  bad "the server did not start"
  finish
}
echo "shared_preload_libraries = 'idgen'" >>"$S/data/postgresql.conf"
restart "$S" || {
  bad "the server did not start with the extension"
  finish
}
q "$S" "CREATE EXTENSION idgen" >/dev/null
out=$(refusal "$S" "host's default registry")
echo "     $out"
check "1: on defaults, /var/lib/idgen missing: idgen_snowflake() refused" \
  grep -q "ERROR: .*idgen_snowflake() has no generator: idgen.registry (the default)" <<<"$out"
check "1: ... with the library's message (the directory, the user, how to make it)" \
  grep -q "the host's default registry /var/lib/idgen does not exist and user postgres (uid [0-9]*) cannot create it:.*install -d -m 2770 -g GROUP /var/lib/idgen" <<<"$out"
check "1: ... and the extension's: restart, or a registry of the server's own by name" \
  grep -q "restart the server.*ALTER SYSTEM SET idgen.registry = 'file:$S/data/pg_idgen' is a registry private to this server" <<<"$out"
check "1: ... nothing made: no /var/lib/idgen" test ! -e /var/lib/idgen
check "1: ... and no registry in the data directory" test ! -e "$S/data/pg_idgen"

install -d -m 2770 -g nogroup /var/lib/idgen
out=$(refusal "$S" "is not writable by user postgres")
check "1: /var/lib/idgen made for group nogroup: refused, naming the group to join" \
  grep -q "the host's default registry /var/lib/idgen (group nogroup, mode 2770) is not writable by user postgres (uid [0-9]*):.*usermod -aG nogroup postgres.*restart the server" <<<"$out"
check "1: ... and nothing leased in it" test -z "$(ls -A /var/lib/idgen)"

# ---- 2. shared: the extension and a daemon on defaults -----------------------
chgrp postgres /var/lib/idgen
got=$(when_ready "$S" "SELECT idgen_snowflake()" 30)
check "2: /var/lib/idgen shared with the server's group: the worker takes it, no restart" \
  test -n "$got"
ready=$(grep -o "idgen_snowflake() is ready: .*" "$S/log" | tail -1)
echo "     extension: $ready"
check "2: ... leased from file:/var/lib/idgen" grep -q " from file:/var/lib/idgen" <<<"$ready"
(umask 0027 && exec "$BUILD/idgen" serve --http 127.0.0.1:0 --resp off) >"$work/daemon.log" 2>&1 &
daemon=$!
port=""
for i in $(seq 1 600); do
  port=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$work/daemon.log")
  [ -n "$port" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
check "2: a daemon on defaults (as root) serves" test -n "$port"
check "2: ... from file:/var/lib/idgen" grep -q "event=start .*registry=file:/var/lib/idgen" \
  "$work/daemon.log"
if [ -n "$port" ]; then
  N=1000000
  pids=()
  for k in 1 2; do
    q "$S" "SELECT idgen_snowflake_n($N)" >"$work/pg$k.ids" &
    pids+=($!)
  done
  (for i in $(seq 1 $((2 * N / 10000))); do
    curl -sf "http://127.0.0.1:$port/id?count=10000" || exit 1
    echo
  done) >"$work/d.ids" &
  pids+=($!)
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  # counts, tuples (twitter's datacenter and worker) and duplicates, exactly
  read -r np nd tp td dups < <(python3 - "$work/pg1.ids" "$work/pg2.ids" "$work/d.ids" <<'PY'
import sys
def ids(paths):
    return [int(l) for p in paths for l in open(p) if l.strip().isdigit()]
def tuples(xs):
    t = sorted({"datacenter=%d,worker=%d" % (x >> 17 & 31, x >> 12 & 31) for x in xs})
    return "+".join(t) or "none"
pg, d = ids(sys.argv[1:3]), ids(sys.argv[3:4])
print(len(pg), len(d), tuples(pg), tuples(d), len(pg) + len(d) - len(set(pg) | set(d)))
PY
  )
  echo "     extension $np IDs on $tp, daemon $nd IDs on $td: $dups duplicates"
  check "2: 2 M IDs from the extension and 2 M from the daemon, at once" \
    test "$rc" = 0 -a "$np" = $((2 * N)) -a "$nd" = $((2 * N))
  check "2: ... each on one tuple of its own ($tp, $td)" \
    test "$tp" != "$td" -a "${tp#*+}" = "$tp" -a "${td#*+}" = "$td"
  check "2: ... no duplicate" test "$dups" = 0
  list=$("$BUILD/idgen" registry list 2>&1)
  check "2: registry list on defaults shows both holders" \
    test "$(grep -c 'datacenter=0,worker=[0-9]* *held' <<<"$list")" = 2
fi

# ---- 3. the upgrade: the earlier default's registry in the data directory ----
U=$work/u
"$ROOT/tests/pg_server.sh" start "$U" "$(free_port)" >/dev/null || {
  bad "the second server did not start"
  finish
}
UD=$(readlink -f "$U/data")
# What the earlier default made (file:$PGDATA/pg_idgen, its pg_idgen.owner
# and pg_idgen.last), made here by naming it; the clock 25 s ahead, so that
# the later starts on the true clock are behind these IDs.
printf "shared_preload_libraries = 'idgen'\nidgen.registry = 'file:%s/pg_idgen'\n" "$UD" \
  >>"$U/data/postgresql.conf"
restart "$U" "${AHEAD[@]}" || {
  bad "the second server did not start with the extension"
  finish
}
q "$U" "CREATE EXTENSION idgen;
        CREATE TABLE t (id bigint PRIMARY KEY DEFAULT idgen_snowflake(), run int NOT NULL)"
when_ready "$U" "INSERT INTO t (run) SELECT 1 FROM generate_series(1, 100000)" >/dev/null
max1=$(q "$U" "SELECT max(id) FROM t")
check "3: a server on the earlier default's registry issues (run 1, clock 25 s ahead)" \
  test -n "$max1" -a -d "$UD/pg_idgen" -a -f "$UD/pg_idgen.last"
# lag NAME RUN: pg_idgen.last's time put below every ID of run RUN, as a
# crash between its once-a-second writes leaves it (by up to a second; here
# by all of them, so that any ID the next start puts below them shows)
lag() {
  local first
  first=$(q "$U" "SELECT min(id) FROM t WHERE run = $1")
  echo "$(($(ms_of "$first") - 1))" >"$work/lag"
}
set_lag() { sed -i "s/issued_ms=[0-9]*/issued_ms=$(cat "$work/lag")/" "$UD/pg_idgen.last"; }
lag 1
# The upgraded server on defaults: idgen.registry unset, the clock true.
"$ROOT/tests/pg_server.sh" pause "$U"
sed -i '/^idgen.registry = /d' "$U/data/postgresql.conf"
set_lag
"$ROOT/tests/pg_server.sh" resume "$U"
out=$(refusal "$U" "earlier")
echo "     $out"
check "3: upgraded, on defaults, the earlier default's registry there: refused" \
  grep -q "idgen.registry is not set, and the data directory holds $UD/pg_idgen, the registry earlier versions of idgen used by default" <<<"$out"
check "3: ... naming the way to keep it: idgen.registry by name" \
  grep -q "keep this server's own registry, which no other idgen on this host shares.*ALTER SYSTEM SET idgen.registry = 'file:$UD/pg_idgen'" <<<"$out"
check "3: ... and the way to share the host's: move it aside" \
  grep -q "or share the host's registry (file:/var/lib/idgen) by moving this one aside: mv $UD/pg_idgen $UD/pg_idgen.retired" <<<"$out"
check "3: ... leasing nothing from the host's registry" \
  test "$("$BUILD/idgen" registry list 2>&1 | grep -c 'datacenter=0,worker=[0-9]* *held')" = 2
issued=$(sed -n 's/.* issued_ms=\([0-9]*\)$/\1/p' "$UD/pg_idgen.last")
check "3: ... and pg_idgen.last now covers every earlier ID (from the old registry's marks)" \
  test "${issued:-0}" -ge "$(ms_of "$max1")"

# Way out 1: keep it, by name; the clock ahead again for the switch below.
q "$U" "ALTER SYSTEM SET idgen.registry = 'file:$UD/pg_idgen'" >/dev/null
restart "$U" "${AHEAD[@]}"
when_ready "$U" "INSERT INTO t (run) SELECT 2 FROM generate_series(1, 100000)" >/dev/null
got=$(q "$U" "SELECT count(*), min(id) > $max1 FROM t WHERE run = 2")
check "3: kept by name (ALTER SYSTEM SET idgen.registry): 100000 IDs, all above the earlier ones" \
  test "$got" = "100000|t"
max2=$(q "$U" "SELECT max(id) FROM t")
lag 2

# Way out 2: the host's registry.  Unset again: refused again (each start
# says so), and pg_idgen.last brought up to the old registry's marks again.
q "$U" "ALTER SYSTEM RESET idgen.registry" >/dev/null
"$ROOT/tests/pg_server.sh" pause "$U"
set_lag
"$ROOT/tests/pg_server.sh" resume "$U"
out=$(refusal "$U" "earlier")
check "3: unset again: refused again" grep -q "the registry earlier versions of idgen used by default" <<<"$out"
"$ROOT/tests/pg_server.sh" pause "$U"
mv "$UD/pg_idgen" "$UD/pg_idgen.retired"
"$ROOT/tests/pg_server.sh" resume "$U"
behind=$(($(date +%s%3N) - $(ms_of "$max2")))
when_ready "$U" "INSERT INTO t (run) SELECT 3 FROM generate_series(1, 100000)" 90 >/dev/null
got=$(q "$U" "SELECT count(*), min(id) > $max2 FROM t WHERE run = 3")
echo "     the switch started $((-behind)) ms behind the last ID; $(grep -o "idgen_snowflake() starts in [0-9]* ms" "$U/log" | tail -1)"
check "3: moved aside: on the host's registry, 100000 IDs, all above every earlier one (clock behind them)" \
  test "$got" = "100000|t"
ready=$(grep -o "idgen_snowflake() is ready: .*" "$U/log" | tail -1)
echo "     $ready"
check "3: ... leased from file:/var/lib/idgen" grep -q " from file:/var/lib/idgen" <<<"$ready"
tu=$(tuple_of "$(q "$U" "SELECT min(id) FROM t WHERE run = 3")")
check "3: ... a third tuple ($tu), not the daemon's nor the other server's" \
  test "$tu" != "${td:-}" -a "$tu" != "${tp:-}"

finish
