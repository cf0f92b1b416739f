#!/usr/bin/env bash
# pg_ext_test.sh -- CREATE EXTENSION idgen (pg/) in a throwaway PostgreSQL 15.
#
#   tests/pg_ext_test.sh BUILD_DIR
#
# Builds the extension (on libidgen.a and libidgen-registry.a from its own
# CMake build, BUILD_DIR/pg-libs, without etcd) and installs it into the
# server's directories the PGXS way (root: it writes under /usr), starts a
# server on a free loopback port (tests/pg_server.sh), runs the extension's
# pg_regress suites (pg/sql/idgen.sql against pg/expected/idgen.out: known
# answers, bad input, a changed layout, idgen_snowflake() refused without
# shared_preload_libraries; pg/sql/idgen_public.sql: public IDs with test keys
# it writes with adminpack, tests/pg_public_test.sh has the rest), then has 4 sessions at once fill one table keyed
# by idgen_uuid7() and idgen_ulid() defaults: no unique violation, every row
# there.  Then a second server with shared_preload_libraries = 'idgen' (its
# registry named on purpose, idgen.registry = 'file:pg_idgen': one private
# to it, in its data directory, a layout of 2 workers; the default, the
# host's registry, is tests/pg_default_registry_test.sh's):
#   - 8 sessions at once insert 1,000,000 rows each into a table keyed by
#     `default idgen_snowflake()`: no unique violation, every row there, each
#     session's IDs increasing in its rows' order; idgen_snowflake_n(100000)
#     increasing;
#   - the lease's lock file is removed (the lease is lost): the worker takes a
#     new one and inserts go on, still unique;
#   - the background worker stopped with SIGTERM comes back;
#   - the server restarts with its clock 10 s behind (libfaketime), both
#     workers' marks ahead of it (`idgen snowflake` marked the second): every
#     new ID is above every old one;
#   - an etcd:// registry is refused with the reason (the extension's
#     registry library is built without etcd, pg/Makefile);
#   - a standby made with pg_basebackup refuses idgen_snowflake() (it would
#     issue its primary's IDs), and once promoted refuses its copy of the
#     primary's registry, saying what to do; without that registry it refuses
#     a first use on timeline 2, and once told to adopt it (`adopt` in
#     pg_idgen.owner, the way out it names) it issues.
# Stops the servers and removes their data.  PG_EXT_ROWS changes the
# 1,000,000.
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root: the message says so).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/checks.sh
. "$ROOT/tests/checks.sh" # retry
BUILD=$(cd "${1:?usage: pg_ext_test.sh BUILD_DIR}" && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP pg extension: installing it into the server's directories needs root"
  exit 77
fi
if [ ! -x "$PG_CONFIG" ]; then
  echo "pg extension: no $PG_CONFIG: run scripts/install-deps.sh (postgresql-server-dev-15)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/idgen-pgext-XXXXXX)
chmod 755 "$work" # the postgres user reaches its data directory below
cleanup() {
  "$ROOT/tests/pg_server.sh" stop "$work/pg" >/dev/null 2>&1 || true
  "$ROOT/tests/pg_server.sh" stop "$work/pg2" >/dev/null 2>&1 || true
  "$ROOT/tests/pg_server.sh" stop "$work/pgr" >/dev/null 2>&1 || true
  [ ! -f "$work/pg3/data/postmaster.pid" ] ||
    runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D "$work/pg3/data" -m immediate \
      stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo "== make -C pg install (PGXS, on $BUILD/pg-libs: libidgen, libidgen-registry without etcd)"
make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$BUILD" install
"$ROOT/tests/pg_server.sh" start "$work/pg" "$port" >/dev/null
export PGHOST=$work/pg PGPORT=$port PGUSER=postgres PGDATABASE=postgres

echo "== pg_regress (pg/sql/idgen.sql)"
if ! make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" installcheck; then
  cat "$ROOT/pg/regression.diffs" 2>/dev/null || true
  exit 1
fi

echo "== 4 sessions at once, 50000 rows each, keyed by idgen_uuid7() and idgen_ulid()"
psql -qAtX -v ON_ERROR_STOP=1 -c "CREATE EXTENSION idgen;
  CREATE TABLE ids (u uuid PRIMARY KEY DEFAULT idgen_uuid7(),
                    l text UNIQUE DEFAULT idgen_ulid(), s int NOT NULL)"
pids=()
for s in 1 2 3 4; do
  psql -qAtX -v ON_ERROR_STOP=1 -c "INSERT INTO ids (s) SELECT $s FROM generate_series(1, 50000)" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
rows=$(psql -qAtX -c "SELECT count(*) FROM ids")
if [ "$rc" != 0 ] || [ "$rows" != 200000 ]; then
  echo "FAIL pg extension: sessions failed (a unique violation?) or rows missing: $rows of 200000" >&2
  exit 1
fi
echo "ok   pg extension: 200000 rows from 4 sessions, no unique violation"

# ---------------------------------------------------------------- idgen_snowflake()
"$ROOT/tests/pg_server.sh" stop "$work/pg" >/dev/null
ROWS=${PG_EXT_ROWS:-1000000}
LAYOUT='time:41,worker:1,sequence:12,epoch=1288834974657'
FAKETIME_SO=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1
PGBIN=/usr/lib/postgresql/15/bin
fail() {
  echo "FAIL pg extension: $*" >&2
  grep idgen "$work/pg2/log" | tail -20 >&2 || true
  exit 1
}
q() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
# Retries a statement until it succeeds (the worker is taking a lease) or 40 s.
q_when_ready() { retry 40 q "$1"; }
ready_count() { grep -c "idgen_snowflake() is ready" "$work/pg2/log" || true; }
port2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ROOT/tests/pg_server.sh" start "$work/pg2" "$port2" >/dev/null
# A registry private to this server, named: relative, so in whichever data
# directory the server runs (a copy's is the copy's, which the owner check
# refuses below).  Never the default: the host's /var/lib/idgen.
PRIVATE="idgen.registry = 'file:pg_idgen'"
printf "shared_preload_libraries = 'idgen'\nidgen.layout = '%s'\n%s\n" "$LAYOUT" "$PRIVATE" \
  >>"$work/pg2/data/postgresql.conf"
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
"$ROOT/tests/pg_server.sh" resume "$work/pg2"
export PGHOST=$work/pg2 PGPORT=$port2

echo "== shared_preload_libraries = 'idgen': 8 sessions at once, $ROWS rows each, default idgen_snowflake()"
q "CREATE EXTENSION idgen;
   CREATE TABLE sf (id bigint PRIMARY KEY DEFAULT idgen_snowflake(), s int NOT NULL,
                    n bigint NOT NULL)"
q_when_ready "SELECT idgen_snowflake()" >/dev/null || fail "idgen_snowflake() never became ready"
# idgen.registry may hold a password: a role that is not a superuser reads
# it neither with SHOW, current_setting() nor pg_settings.
q "CREATE ROLE idgen_reader LOGIN"
out=$(psql -qAtX -U idgen_reader -c "SHOW idgen.registry" 2>&1) &&
  fail "a role that is not a superuser read idgen.registry: $out"
out=$(psql -qAtX -U idgen_reader -c "SELECT current_setting('idgen.registry')" 2>&1) &&
  fail "current_setting('idgen.registry') for a role that is not a superuser: $out"
[ "$(psql -qAtX -U idgen_reader -c "SELECT count(*) FROM pg_settings WHERE name = 'idgen.registry'")" = 0 ] ||
  fail "pg_settings shows idgen.registry to a role that is not a superuser"
[ "$(q "SHOW idgen.registry")" = file:pg_idgen ] || fail "a superuser no longer reads idgen.registry"
echo "ok   pg extension: idgen.registry is for superusers only (SHOW, current_setting, pg_settings)"
pids=()
for s in 1 2 3 4 5 6 7 8; do
  q "INSERT INTO sf (s, n) SELECT $s, g FROM generate_series(1, $ROWS) g" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
rows=$(q "SELECT count(*) FROM sf")
[ "$rc" = 0 ] && [ "$rows" = $((8 * ROWS)) ] ||
  fail "sessions failed (a unique violation?) or rows missing: $rows of $((8 * ROWS))"
echo "ok   pg extension: $rows rows from 8 sessions keyed by idgen_snowflake(), no unique violation"
bad=$(q "SELECT count(*) FROM (SELECT id, lag(id) OVER (PARTITION BY s ORDER BY n) AS p FROM sf) x
         WHERE id <= p")
[ "$bad" = 0 ] || fail "$bad rows have an ID not above the one before in their session"
echo "ok   pg extension: each session's IDs increase in its rows' order"
got=$(q "SELECT count(*), count(DISTINCT x), count(*) FILTER (WHERE x <= p) FROM
           (SELECT x, lag(x) OVER (ORDER BY o) AS p
              FROM idgen_snowflake_n(100000) WITH ORDINALITY a(x, o)) y")
[ "$got" = "100000|100000|0" ] || fail "idgen_snowflake_n(100000): count|distinct|not increasing = $got"
echo "ok   pg extension: idgen_snowflake_n(100000): 100000 distinct, increasing"

echo "== the lease's lock file removed: a new lease, inserts go on"
before=$(ready_count)
locks=$(find "$work/pg2/data/pg_idgen" -name '*.lock' | wc -l)
[ "$locks" -ge 1 ] || fail "no lock file under $work/pg2/data/pg_idgen"
find "$work/pg2/data/pg_idgen" -name '*.lock' -delete
for i in $(seq 1 80); do
  [ "$(ready_count)" -gt "$before" ] && break
  sleep 0.5
done
[ "$(ready_count)" -gt "$before" ] || fail "no new lease within 40 s of removing the lock file"
q_when_ready "INSERT INTO sf (s, n) SELECT 10, g FROM generate_series(1, 100000) g" >/dev/null ||
  fail "inserts after the new lease failed"
echo "ok   pg extension: $(grep "idgen:.*lost" "$work/pg2/log" | tail -1 | sed 's/.*idgen: //' | cut -c1-120)"
echo "ok   pg extension: 100000 more rows on the new lease, no unique violation"

echo "== the idgen background worker stopped (SIGTERM): it comes back"
before=$(ready_count)
# only our own server's worker: a child of its postmaster (never another
# server's: `pgrep -f` alone took the first on the machine)
wpid=$(pgrep -P "$(head -n 1 "$work/pg2/data/postmaster.pid")" -f "idgen lease keeper" | head -1)
[ -n "$wpid" ] || fail "no idgen lease keeper process"
kill -TERM "$wpid"
q_when_ready "SELECT idgen_snowflake()" >/dev/null || fail "idgen_snowflake() did not come back after SIGTERM"
[ "$(ready_count)" -gt "$before" ] || fail "the worker did not take a new lease after SIGTERM"
echo "ok   pg extension: the worker came back after SIGTERM"

echo "== a restart with the clock 10 s behind (libfaketime): every new ID above every old one"
old=$(q "SELECT max(id) FROM sf")
# the other worker ID's mark ahead too, so that the restart cannot start on a
# worker ID without one
runuser -u postgres -- "$BUILD/idgen" snowflake -n 1 --layout "$LAYOUT" \
  --registry "file:$work/pg2/data/pg_idgen" >/dev/null || fail "idgen snowflake on the server's registry"
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
FAKETIME=-10s FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$FAKETIME_SO \
  "$ROOT/tests/pg_server.sh" resume "$work/pg2"
behind=$(q "SELECT round(extract(epoch FROM now()) * 1000) - $(date +%s%3N)")
[ "$behind" -le -8000 ] || fail "the restarted server's clock is not 10 s behind ($behind ms)"
q_when_ready "INSERT INTO sf (s, n) SELECT 9, g FROM generate_series(1, 100000) g" >/dev/null ||
  fail "inserts after the restart failed"
got=$(q "SELECT count(*), min(id) > $old FROM sf WHERE s = 9")
[ "$got" = "100000|t" ] || fail "after the restart: rows|all above the old maximum = $got"
echo "ok   pg extension: restarted $((-behind)) ms behind; 100000 new IDs, all above the old maximum"

echo "== a shared postgres:// registry: restarted with the clock 12 s behind the last IDs"
# The server issues on worker 0 with its clock 12 s ahead (libfaketime: the
# sessions' clocks, which stamp the IDs), then restarts on the true clock:
# worker 0's mark is ahead of it, worker 1 is new to the pool, so the lease
# goes to worker 1 -- whose IDs must still come after worker 0's.
portr=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REG=$("$ROOT/tests/pg_server.sh" start "$work/pgr" "$portr")
echo "idgen.registry = '$REG'" >>"$work/pg2/data/postgresql.conf"
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
FAKETIME=+12s FAKETIME_DONT_FAKE_MONOTONIC=1 LD_PRELOAD=$FAKETIME_SO \
  "$ROOT/tests/pg_server.sh" resume "$work/pg2"
q_when_ready "INSERT INTO sf (s, n) SELECT 20, g FROM generate_series(1, 100000) g" >/dev/null ||
  fail "inserts on the shared registry failed"
old=$(q "SELECT max(id) FROM sf")
w_before=$(q "SELECT (max(id) >> 12) & 1 FROM sf WHERE s = 20")
# Another layout whose IDs could equal these, beside it in the same ID
# space, is refused naming it.  (twitter's would be let in: its IDs are all
# above 2^54 by now, where these 54-bit IDs never reach.)
err=$("$BUILD/idgen" snowflake -n 1 --layout 'time:41,worker:2,sequence:11,epoch=1288834974657' \
  --registry "$REG" 2>&1) && fail "a second layout leased beside the extension's: $err"
grep -q "is in use by layout time:41@1ms,worker:1,sequence:12" <<<"$err" ||
  fail "the second layout's refusal: $err"
echo "ok   pg extension: another layout on its ID space is refused: $(cut -c1-100 <<<"${err#idgen: }")..."
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
"$ROOT/tests/pg_server.sh" resume "$work/pg2"
q_when_ready "INSERT INTO sf (s, n) SELECT 21, g FROM generate_series(1, 100000) g" >/dev/null ||
  fail "inserts after the restart on the shared registry failed"
got=$(q "SELECT count(*), min(id) > $old, (min(id) >> 12) & 1 FROM sf WHERE s = 21")
[ "${got%|*}" = "100000|t" ] ||
  fail "after the restart 12 s behind: rows|all above the old maximum = $got (old worker $w_before;" \
    "per session: $(q "SELECT string_agg(s || ':' || min(id) || '..' || max(id), ' ') FROM sf GROUP BY s" |
      tr '\n' ' '); last: $(cat "$work/pg2/data/pg_idgen.last"); registry: $(psql -qAtX "$REG" -c \
      "SELECT string_agg(node || '/' || generation || '/' || mark_ms, ' ') FROM idgen.idgen_nodes"))"
echo "ok   pg extension: restarted 12 s behind its last IDs, on worker ${got##*|} (was $w_before): 100000 new IDs, all above the old maximum"
waited=$(grep -o "idgen_snowflake() starts in [0-9]* ms" "$work/pg2/log" | head -1 || true)
echo "info pg extension: ${waited:-the restart did not have to wait for the clock}"
"$ROOT/tests/pg_server.sh" stop "$work/pgr" >/dev/null

echo "== etcd:// is refused, saying why (the registry library is built without it)"
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
sed -i "s|^idgen.registry = .*|idgen.registry = 'etcd://127.0.0.1:1'|" "$work/pg2/data/postgresql.conf"
"$ROOT/tests/pg_server.sh" resume "$work/pg2"
for i in $(seq 1 40); do
  err=$(psql -qAtX -c "SELECT idgen_snowflake()" 2>&1) && fail "etcd:// issued an ID: $err"
  grep -q "etcd:// is not available" <<<"$err" && break
  sleep 0.5
done
grep -q "etcd:// is not available in this build.*cannot be linked into a server module" \
  <<<"$err" || fail "etcd:// inside the server: $err"
echo "ok   pg extension: etcd:// refused: $(cut -c1-110 <<<"$err")..."
"$ROOT/tests/pg_server.sh" pause "$work/pg2"
sed -i '/^idgen.registry = /d' "$work/pg2/data/postgresql.conf"
echo "$PRIVATE" >>"$work/pg2/data/postgresql.conf"
"$ROOT/tests/pg_server.sh" resume "$work/pg2"

echo "== a standby refuses; promoted, its copied registry is refused"
port3=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/pg3" && chown postgres "$work/pg3"
runuser -u postgres -- "$PGBIN/pg_basebackup" -h "$work/pg2" -p "$port2" -U postgres \
  -D "$work/pg3/data" -R -X stream -c fast >/dev/null 2>&1 || fail "pg_basebackup"
pg3() { runuser -u postgres -- "$PGBIN/pg_ctl" -D "$work/pg3/data" -l "$work/pg3/log" -w "$@" >/dev/null; }
pg3 -o "-p $port3 -k $work/pg3 -c listen_addresses=''" start || fail "the standby did not start"
standby_stop() { pg3 -m fast stop || true; }
err=$(PGHOST=$work/pg3 PGPORT=$port3 psql -qAtX -c "SELECT idgen_snowflake()" 2>&1) &&
  { standby_stop; fail "a standby issued an ID: $err"; }
grep -q "does not run on a standby" <<<"$err" || { standby_stop; fail "the standby's error: $err"; }
echo "ok   pg extension: a standby refuses: ${err#ERROR:  }"
pg3 promote || { standby_stop; fail "promote"; }
for i in $(seq 1 40); do grep -q "idgen_snowflake() is off" "$work/pg3/log" && break; sleep 0.25; done
err=$(PGHOST=$work/pg3 PGPORT=$port3 psql -qAtX -c "SELECT idgen_snowflake()" 2>&1) &&
  { standby_stop; fail "the promoted copy issued an ID: $err"; }
grep -q "was made by another server" <<<"$err" || { standby_stop; fail "the promoted copy's error: $err"; }
echo "ok   pg extension: the promoted copy refuses: $(cut -c1-150 <<<"${err#ERROR:  }")..."
# Without the copied registry (as a standby made before the primary first
# used idgen): a server on timeline 2 has no record of its own.
standby_stop
rm -rf "$work/pg3/data/pg_idgen" "$work/pg3/data/pg_idgen.owner"
pg3 -o "-p $port3 -k $work/pg3 -c listen_addresses=''" start || fail "the promoted server did not start"
# (a call waits while the worker starts, then gets its reason)
err=$(PGHOST=$work/pg3 PGPORT=$port3 psql -qAtX -c "SELECT idgen_snowflake()" 2>&1) &&
  { standby_stop; fail "the promoted server without a registry issued an ID: $err"; }
grep -q "on WAL timeline 2" <<<"$err" || { standby_stop; fail "timeline 2's error: $err"; }
echo "ok   pg extension: a first use on timeline 2 refuses: $(cut -c1-110 <<<"${err#ERROR:  }")..."
grep -q "echo adopt > $work/pg3/data/pg_idgen.owner" <<<"$err" ||
  { standby_stop; fail "timeline 2's error names no way to adopt the registry: $err"; }
# The way out it names: adopt it (the original will never issue again).
echo adopt >"$work/pg3/data/pg_idgen.owner"
pg3 -m fast restart -o "-p $port3 -k $work/pg3 -c listen_addresses=''" || fail "restart"
got=$(PGHOST=$work/pg3 PGPORT=$port3 q_when_ready "SELECT idgen_snowflake() > 0") || true
standby_stop
[ "$got" = t ] || fail "told to adopt its registry, the promoted server still refuses: $got"
grep -q "^data_directory=.* timeline=2$" "$work/pg3/data/pg_idgen.owner" ||
  fail "adopted, pg_idgen.owner is not this server's record: $(cat "$work/pg3/data/pg_idgen.owner")"
echo "ok   pg extension: told to adopt it (echo adopt > pg_idgen.owner), it issues and records itself"
