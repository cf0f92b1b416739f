#!/usr/bin/env bash
# pg_ext_test.sh -- CREATE EXTENSION idgen (pg/) in a throwaway PostgreSQL 15.
#
#   tests/pg_ext_test.sh BUILD_DIR
#
# Builds the extension on BUILD_DIR/libidgen.a and installs it into the
# server's directories the PGXS way (root: it writes under /usr), starts a
# server on a free loopback port (tests/pg_server.sh), runs the extension's
# pg_regress suite (pg/sql/idgen.sql against pg/expected/idgen.out: known
# answers, bad input, a changed layout), then has 4 sessions at once fill one
# table keyed by idgen_uuid7() and idgen_ulid() defaults: no unique
# violation, every row there.  Stops the server and removes its data.
#
# Exit status: 0 passed, 1 failed, 77 skipped (not root: the message says so).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
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
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

echo "== make -C pg install (PGXS, on $BUILD/libidgen.a)"
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
