#!/usr/bin/env bash
# pg_public_test.sh -- public IDs in the extension (pg/idgen_public.c)
# against a throwaway PostgreSQL 15 (tests/pg_server.sh).
#
#   tests/pg_public_test.sh BUILD_DIR
#
# Installs the extension the PGXS way (root: it writes under /usr), makes
# key files (the server's user's, mode 0600) and names them in
# idgen.public_keys in postgresql.conf, starts the server with
# log_statement = all and log_min_messages = debug1, and checks:
#   - ALTER EXTENSION idgen UPDATE from 0.1 brings the functions;
#   - a generated column `pub bigint GENERATED ALWAYS AS (idgen_public(id,
#     'users', 1)) STORED` over 100,000 Snowflake IDs: distinct, a positive
#     bigint each, idgen_unpublic gives every ID back;
#   - text forms with a prefix, round trip; another prefix, another key, an
#     altered character: an error each, never an ID;
#   - UUIDv7 <-> UUIDv4, ULIDs, round trip;
#   - the values equal the command's (`idgen public`, BUILD_DIR/idgen) for
#     the same key file, made by `idgen public --new-key`, and the command
#     reads the extension's text form back;
#   - a second key version added (`idgen public --new-key FILE --add`,
#     which renames a new file over it): the text
#     form takes it within a second and reads both versions, the integer
#     form of version 1 and the stored column do not change;
#   - a role that is not a superuser calls the functions, but neither sets
#     nor reads idgen.public_keys (SET, SHOW, pg_settings, ALTER ROLE, a
#     placeholder set before the library loads) nor reads the key file
#     (pg_read_file);
#   - a key file group or others may read is refused, naming the mode and
#     chmod 600;
#   - the key's hex (and base64) is nowhere in the server's log, nor in any
#     setting a superuser sees.
# Exit status: 0 passed, 1 failed, 77 skipped (not root).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tests/checks.sh
. "$ROOT/tests/checks.sh"
BUILD=$(cd "${1:?usage: pg_public_test.sh BUILD_DIR}" && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
need_root xxd
[ -x "$BUILD/idgen" ] || {
  echo "pg public: no $BUILD/idgen (the command): build it first" >&2
  exit 1
}
[ -x "$PG_CONFIG" ] || {
  echo "pg public: no $PG_CONFIG: run scripts/install-deps.sh (postgresql-server-dev-15)" >&2
  exit 1
}
work=$(mktemp -d /tmp/idgen-pgpub-XXXXXX)
chmod 755 "$work"
cleanup() {
  "$ROOT/tests/pg_server.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== make -C pg install (PGXS, on $BUILD/pg-libs)"
make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$BUILD" install

# Key files: the server's user's, in a directory of its own.
keys=$work/keys
mkdir -m 700 "$keys"
for k in users orders loose; do "$BUILD/idgen" public --new-key "$keys/$k.key" >/dev/null; done
chmod 644 "$keys/loose.key" # world-readable: refused
chown -R postgres "$keys"

port=$(free_port)
"$ROOT/tests/pg_server.sh" start "$work/pg" "$port" >/dev/null
cat >>"$work/pg/data/postgresql.conf" <<EOF
idgen.public_keys = 'users=$keys/users.key, orders=$keys/orders.key, loose=$keys/loose.key'
log_statement = all
log_min_messages = debug1
EOF
"$ROOT/tests/pg_server.sh" pause "$work/pg"
"$ROOT/tests/pg_server.sh" resume "$work/pg"
export PGHOST=$work/pg PGPORT=$port PGUSER=postgres PGDATABASE=postgres
q() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
# A statement that must fail, its message on stdout.
q_fails() {
  local out
  if out=$(psql -qAtX -v ON_ERROR_STOP=1 "${@:2}" -c "$1" 2>&1); then
    echo "unexpectedly succeeded: $out"
    return 1
  fi
  echo "$out"
}

echo "== ALTER EXTENSION idgen UPDATE from 0.1"
q "CREATE EXTENSION idgen VERSION '0.1'"
check "pg public: 0.1 has no idgen_public" \
  test "$(q "SELECT count(*) FROM pg_proc WHERE proname = 'idgen_public'")" = 0
q "ALTER EXTENSION idgen UPDATE"
check "pg public: ALTER EXTENSION idgen UPDATE reaches 0.2" \
  test "$(q "SELECT extversion FROM pg_extension WHERE extname = 'idgen'")" = 0.2
check "pg public: 0.2 has idgen_public for bigint and uuid" \
  test "$(q "SELECT count(*) FROM pg_proc WHERE proname = 'idgen_public'")" = 2

echo "== a generated column over 100000 Snowflake IDs"
q "CREATE TABLE users (id bigint PRIMARY KEY,
     pub bigint GENERATED ALWAYS AS (idgen_public(id, 'users', 1)) STORED UNIQUE);
   INSERT INTO users (id)
     SELECT idgen_first_id('2026-01-01 00:00:00+00') + (g << 12) + (g % 7)
       FROM generate_series(1, 100000) g"
check "pg public: 100000 distinct public IDs, each a positive bigint and not its ID" \
  test "$(q "SELECT count(DISTINCT pub) FILTER (WHERE pub >= 0 AND pub <> id) FROM users")" = 100000
check "pg public: idgen_unpublic gives every ID back" \
  test "$(q "SELECT count(*) FROM users WHERE idgen_unpublic(pub, 'users', 1) = id")" = 100000
check "pg public: consecutive IDs' public IDs are out of order (rank correlation within 0.02)" \
  test "$(q "SELECT abs(corr(r1, r2)) < 0.02 FROM (SELECT rank() OVER (ORDER BY id) r1,
              rank() OVER (ORDER BY pub) r2 FROM users) x")" = t
check "pg public: js53 (53 bits): below 2^53, round trip" \
  test "$(q "SELECT count(*) FROM (SELECT g, idgen_public(g, 'users', 1, 53) p
              FROM generate_series(1, 10000) g) x
              WHERE p < (1::bigint << 53) AND idgen_unpublic(p, 'users', 1, 53) = g")" = 10000
out=$(q_fails "SELECT idgen_public(1::bigint << 53, 'users', 1, 53)") || true
check "pg public: an ID above its bits is refused" grep -q "not an ID of 53 bits" <<<"$out"

echo "== text forms"
check "pg public: text with prefix user_: round trip for all" \
  test "$(q "SELECT count(*) FROM users WHERE idgen_unpublic_text(idgen_public_text(id, 'users', 'user'),
              'users', 'user') = id AND idgen_public_text(id, 'users', 'user') ~ '^user_0[0-9a-hjkmnp-tv-z]{16}$'")" = 100000
t=$(q "SELECT idgen_public_text(910499571847892992, 'users', 'user')")
out=$(q_fails "SELECT idgen_unpublic_text('$t', 'users', 'order')") || true
check "pg public: a user_ text read as order_: an error" test -n "$out"
out=$(q_fails "SELECT idgen_unpublic_text('$t', 'orders', 'user')" -v VERBOSITY=verbose) || true
check "pg public: a text read with another key: an error (22023)" grep -q 22023 <<<"$out"
alt=${t:0:10}$([ "${t:10:1}" = a ] && echo b || echo a)${t:11}
out=$(q_fails "SELECT idgen_unpublic_text('$alt', 'users', 'user')") || true
check "pg public: an altered text: an error" test -n "$out"
out=$(q_fails "SELECT idgen_unpublic_text('${t:0:21}', 'users', 'user')" -v VERBOSITY=verbose) || true
check "pg public: a short text: 22P02" grep -q 22P02 <<<"$out"

echo "== UUIDv7 <-> UUIDv4"
check "pg public: 10000 UUIDv7s: public ones of version 4, distinct, round trip" \
  test "$(q "SELECT count(DISTINCT p) FROM (SELECT u, idgen_public(u, 'users', 1) p
              FROM (SELECT idgen_uuid7() u FROM generate_series(1, 10000)) a) b
              WHERE substr(p::text, 15, 1) = '4' AND idgen_unpublic(p, 'users', 1) = u")" = 10000
check "pg public: UUID text form with prefix, round trip" \
  test "$(q "SELECT idgen_unpublic_text_uuid(idgen_public_text(u, 'users', 'user'), 'users', 'user') = u
              FROM (SELECT idgen_uuid7() u) a")" = t

echo "== the same values as the command's, idgen public, for the same key file"
ids=(1 910499571847892992 9223372036854775807 4096)
cli() { "$BUILD/idgen" public --public-key "$keys/users.key" "$@"; }
want=$(cli --key-version 1 "${ids[@]}" | tr '\n' ' ')
got=$(for i in "${ids[@]}"; do q "SELECT idgen_public($i, 'users', 1)"; done | tr '\n' ' ')
check "pg public: integer form equals idgen public's ($got)" test "$want" = "$got"
want=$(cli --layout js53 1 4503599627370495 | tr '\n' ' ')
got=$(for i in 1 4503599627370495; do q "SELECT idgen_public($i, 'users', 1, 53)"; done | tr '\n' ' ')
check "pg public: js53 (53 bits) equals idgen public --layout js53's ($got)" test "$want" = "$got"
want=$(cli --prefix user "${ids[@]}" | tr '\n' ' ')
got=$(for i in "${ids[@]}"; do q "SELECT idgen_public_text($i, 'users', 'user')"; done | tr '\n' ' ')
check "pg public: text form equals idgen public --prefix user's ($got)" test "$want" = "$got"
u=017f22e2-79b0-7cc3-98c4-dc0c0c07398f
check "pg public: UUID form equals idgen public --kind uuid7's" \
  test "$(cli --kind uuid7 $u)" = "$(q "SELECT idgen_public('$u'::uuid, 'users', 1)")"
check "pg public: UUID text form equals idgen public --kind uuid7 --prefix user's" \
  test "$(cli --kind uuid7 --prefix user $u)" = "$(q "SELECT idgen_public_text('$u'::uuid, 'users', 'user')")"
l=01ARYZ6S410000000000000000
check "pg public: ULID form equals idgen public --kind ulid's" \
  test "$(cli --kind ulid $l)" = "$(q "SELECT idgen_public_ulid('$l', 'users', 1)")"
check "pg public: ULID text form equals idgen public --kind ulid --prefix user's" \
  test "$(cli --kind ulid --prefix user $l)" = "$(q "SELECT idgen_public_ulid_text('$l', 'users', 'user')")"
check "pg public: 10000 ULIDs: distinct, round trip (both forms)" \
  test "$(q "SELECT count(DISTINCT p) FROM (SELECT l, idgen_public_ulid(l, 'users', 1) p
              FROM (SELECT idgen_ulid() l FROM generate_series(1, 10000)) a) b
              WHERE idgen_unpublic_ulid(p, 'users', 1) = l
                AND idgen_unpublic_ulid_text(idgen_public_ulid_text(l, 'users', 'user'), 'users', 'user') = l")" = 10000
t=$(q "SELECT idgen_public_text(910499571847892992, 'users', 'user')")
check "pg public: idgen public --reverse reads the extension's text" \
  test "$(cli --reverse --prefix user "$t")" = 910499571847892992

echo "== a second key version"
before=$(q "SELECT md5(string_agg(pub::text, ',' ORDER BY id)) FROM users")
v1=$(q "SELECT idgen_public(910499571847892992, 'users', 1)")
"$BUILD/idgen" public --new-key "$keys/users.key" --add >/dev/null # renamed over it
chown postgres "$keys/users.key"
sleep 1.2
t2=$(q "SELECT idgen_public_text(910499571847892992, 'users', 'user')")
check "pg public: the text form takes version 2 (V '1')" test "${t2:5:1}" = 1
check "pg public: both versions' texts read back" \
  test "$(q "SELECT idgen_unpublic_text('$t', 'users', 'user') = idgen_unpublic_text('$t2', 'users', 'user')")" = t
check "pg public: the integer form of version 1 is unchanged" \
  test "$(q "SELECT idgen_public(910499571847892992, 'users', 1)")" = "$v1"
q "UPDATE users SET id = id WHERE id % 2 = 0" # recomputes the column
check "pg public: the stored column is the same after an update" \
  test "$(q "SELECT md5(string_agg(pub::text, ',' ORDER BY id)) FROM users")" = "$before"

echo "== a role that is not a superuser"
q "CREATE ROLE app LOGIN; GRANT SELECT ON users TO app"
check "pg public: it calls idgen_public and idgen_unpublic" \
  test "$(psql -qAtX -U app -c "SELECT idgen_unpublic(idgen_public(42, 'users', 1), 'users', 1)")" = 42
# (the library loaded first: before, a SET makes a placeholder, below)
loaded="SELECT idgen_public(0, 'users', 1);"
out=$(q_fails "$loaded SET idgen.public_keys = 'users=/etc/passwd'" -U app) || true
check "pg public: it cannot SET idgen.public_keys" grep -q "permission denied" <<<"$out"
out=$(q_fails "$loaded SHOW idgen.public_keys" -U app) || true
check "pg public: it cannot SHOW idgen.public_keys" grep -q "must be superuser" <<<"$out"
check "pg public: pg_settings does not show it idgen.public_keys" \
  test "$(psql -qAtX -U app -c "SELECT count(*) FROM pg_settings WHERE name = 'idgen.public_keys'")" = 0
out=$(q_fails "ALTER ROLE app SET idgen.public_keys = 'users=/etc/passwd'" -U app) || true
check "pg public: it cannot ALTER ROLE ... SET idgen.public_keys" grep -q "permission denied" <<<"$out"
out=$(q_fails "SELECT pg_read_file('$keys/users.key')" -U app) || true
check "pg public: it cannot pg_read_file the key" grep -q "permission denied" <<<"$out"
# Set before the library is loaded (a placeholder): refused when it loads.
out=$(psql -qAtX -U app -c "SET idgen.public_keys = 'users=$keys/orders.key'" \
  -c "SELECT idgen_public(42, 'users', 1)" 2>&1) || true
check "pg public: a placeholder set before the library loads is ignored, with a warning" \
  test "$(tail -n 1 <<<"$out")" = "$(q "SELECT idgen_public(42, 'users', 1)")"

echo "== a key file others may read"
out=$(q_fails "SELECT idgen_public(1, 'loose', 1)") || true
check "pg public: a world-readable key file is refused, naming chmod 600 ($out)" \
  grep -q "chmod 600" <<<"$out"
out=$(q_fails "SELECT idgen_public(1, 'nonesuch', 1)") || true
check "pg public: an unknown key name is an error" grep -q 'no key named "nonesuch"' <<<"$out"

echo "== no key byte in the log or the settings"
q "SELECT pg_reload_conf()" >/dev/null
# every version of every key file, at the end (users.key has two)
leaks=0 n=0
for hex in $(cat "$keys"/*.key | sed -n 's/^v[0-9]* \([0-9a-f]\{64\}\)$/\1/p'); do
  n=$((n + 1))
  b64=$(printf '%s' "$hex" | xxd -r -p | base64 -w0)
  if grep -qiF -e "$hex" -e "${hex:0:16}" -e "${hex:48}" -e "$b64" "$work/pg/log"; then
    leaks=$((leaks + 1))
  fi
  [ "$(q "SELECT count(*) FROM pg_settings WHERE setting ILIKE '%${hex:0:16}%'")" = 0 ] ||
    leaks=$((leaks + 1))
done
check "pg public: none of the $n keys' hex or base64 is in the server's log or a setting" \
  test "$n" = 4 -a "$leaks" = 0
tally
