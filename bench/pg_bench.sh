#!/usr/bin/env bash
# bench/pg_bench.sh: the PostgreSQL extension's ID functions beside the server's own, in one run.
#
#   bench/pg_bench.sh [--rounds N] [--seconds S] [--clients C] [BUILD_DIR]
#
# Installs the extension (pg/, PGXS, on BUILD_DIR/libidgen.a; default build) into the server's
# directories (root), starts a throwaway PostgreSQL 15 (tests/pg_server.sh: loopback, fsync off)
# with shared_preload_libraries = 'idgen', and measures, alternating the functions round by
# round (default 3 rounds):
#
#   inserts  pgbench -n -c C -j 2 -T S (default 8 clients, 10 s), one statement
#            `INSERT INTO t_X DEFAULT VALUES` per transaction into a table whose primary key
#            defaults to the function: idgen_snowflake(), nextval() of a sequence,
#            gen_random_uuid(), idgen_uuid7(), and uuid7_plpgsql(), the common PL/pgSQL
#            UUIDv7 (a random UUID with the millisecond time written over its first 6 bytes
#            and the version bits set); median transactions per second.
#   series   SELECT count(f()) FROM generate_series(1, 1000000), one session, per function
#            (nextval on its sequence); median ms, and ns per call.
#
# Prints a markdown report on stdout, progress on stderr.  Stops the server and removes its
# data at the end, also on an error.  Exit status: 0 done, 1 a step failed, 2 bad usage.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=3 seconds=10 clients=8 build=$repo/build
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
  case $1 in
  --rounds) rounds=${2:?}; shift 2 ;;
  --seconds) seconds=${2:?}; shift 2 ;;
  --clients) clients=${2:?}; shift 2 ;;
  -h | --help) usage; exit 0 ;;
  -*) echo "pg_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  *) build=$(cd "$1" && pwd); shift ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "pg_bench.sh: needs root (it installs the extension)" >&2; exit 2; }
PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PGBIN=/usr/lib/postgresql/15/bin
work=$(mktemp -d /tmp/idgen-pgbench-XXXXXX)
chmod 755 "$work"
cleanup() {
  "$repo/tests/pg_server.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "pg_bench: installing the extension" >&2
make -s -C "$repo/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$build" install >&2
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$repo/tests/pg_server.sh" start "$work/pg" "$port" >/dev/null
echo "shared_preload_libraries = 'idgen'" >>"$work/pg/data/postgresql.conf"
# a registry of the server's own, named (the default is the host's /var/lib/idgen)
echo "idgen.registry = 'file:pg_idgen'" >>"$work/pg/data/postgresql.conf"
"$repo/tests/pg_server.sh" pause "$work/pg"
"$repo/tests/pg_server.sh" resume "$work/pg"
export PGHOST=$work/pg PGPORT=$port PGUSER=postgres PGDATABASE=postgres
q() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1"; }

q "CREATE EXTENSION idgen;
CREATE FUNCTION uuid7_plpgsql() RETURNS uuid LANGUAGE plpgsql VOLATILE AS \$\$
DECLARE
  ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
  b bytea := uuid_send(gen_random_uuid());
BEGIN
  b := overlay(b PLACING substring(int8send(ms) FROM 3) FROM 1 FOR 6);
  b := set_bit(set_bit(b, 52, 1), 53, 1);  -- version 4 (0100) becomes 7 (0111)
  RETURN encode(b, 'hex')::uuid;
END \$\$;
CREATE SEQUENCE s;
CREATE TABLE t_snowflake (id bigint PRIMARY KEY DEFAULT idgen_snowflake());
CREATE TABLE t_nextval (id bigint PRIMARY KEY DEFAULT nextval('s'));
CREATE TABLE t_gen_random_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid());
CREATE TABLE t_uuid7 (id uuid PRIMARY KEY DEFAULT idgen_uuid7());
CREATE TABLE t_uuid7_plpgsql (id uuid PRIMARY KEY DEFAULT uuid7_plpgsql());"
# ready: the background worker holds its lease
for _ in $(seq 1 100); do q "SELECT idgen_snowflake()" >/dev/null 2>&1 && break; sleep 0.2; done
q "SELECT idgen_snowflake()" >/dev/null
v=$(q "SELECT uuid7_plpgsql()")
[ "${v:14:1}" = 7 ] || { echo "pg_bench: uuid7_plpgsql() made $v, not a version 7 UUID" >&2; exit 1; }

names=(snowflake nextval gen_random_uuid uuid7 uuid7_plpgsql)
calls=("idgen_snowflake()" "nextval('s')" "gen_random_uuid()" "idgen_uuid7()" "uuid7_plpgsql()")
declare -A tps series
for r in $(seq 1 "$rounds"); do
  for i in "${!names[@]}"; do
    n=${names[$i]}
    echo "INSERT INTO t_$n DEFAULT VALUES;" >"$work/$n.sql"
    echo "pg_bench: round $r: inserts, $n" >&2
    out=$("$PGBIN/pgbench" -n -c "$clients" -j 2 -T "$seconds" -f "$work/$n.sql" 2>&1) ||
      { echo "$out" >&2; exit 1; }
    t=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out" | head -1)
    f=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
    [ -n "$t" ] && [ "${f:-0}" = 0 ] || { echo "$out" >&2; exit 1; }
    tps[$n]="${tps[$n]:-} $t"
    echo "pg_bench: round $r: series, $n" >&2
    ms=$(psql -qAtX -v ON_ERROR_STOP=1 -c '\timing on' \
      -c "SELECT count(${calls[$i]}) FROM generate_series(1, 1000000)" |
      sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    [ -n "$ms" ] || exit 1
    series[$n]="${series[$n]:-} $ms"
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
base_tps=$(median <<<"${tps[nextval]}")
base_ms=$(median <<<"${series[nextval]}")
echo "### PostgreSQL 15: inserts and calls per ID function (\`bench/pg_bench.sh\`, $(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "CPU: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) cores; pgbench -c $clients -j 2 -T $seconds, $rounds rounds alternating, medians; fsync off."
echo
echo "| function | inserts/s | vs nextval | generate_series 1e6 | ns per call | vs nextval |"
echo "|---|---|---|---|---|---|"
for i in "${!names[@]}"; do
  n=${names[$i]}
  t=$(median <<<"${tps[$n]}")
  m=$(median <<<"${series[$n]}")
  awk -v c="${calls[$i]}" -v t="$t" -v bt="$base_tps" -v m="$m" -v bm="$base_ms" \
    'BEGIN { printf "| `%s` | %.0f | %.2fx | %.0f ms | %.0f | %.2fx |\n", c, t, t / bt, m, m * 1e6 / 1e6, bm / m }'
done
echo
echo "Rounds (inserts/s; ms):"
for n in "${names[@]}"; do echo "- $n:${tps[$n]};${series[$n]}"; done
