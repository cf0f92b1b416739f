#!/usr/bin/env bash
# settings_table_test.sh -- the node list, the lease-field rules, the lease
# TTL's, max_borrow_ms' and max_wait_ms' bounds and the clock's words have
# one owner, the library: one table of inputs, run through the six front
# ends, gets the same verdict and the same message from each.
#
#   tests/settings_table_test.sh BUILD_DIR
#
# Each row: a registry, idgen.node / --node / `node =`, a lease field, a
# lease TTL, more settings (max_borrow_ms=N, max_wait_ms=N, clock=WORD,
# space=NAME: `idgen serve`'s keys); the verdict (ok or refused) and, for a refusal,
# the library's message that each front end must show.  The front ends:
#   cli     `idgen snowflake` with the flags (ok: it prints an ID);
#   serve   `idgen serve --config FILE --check-config` (ok: exit 0);
#   addon   new Snowflake({...}) of the Node.js addon (js/index.js; the
#           keys camelCase: maxBorrowMs), ok when next() answers;
#   python  idgen.Snowflake(**options) of the Python extension (BUILD/python,
#           python/; the keys as here, lease_ttl_ms as ttl_ms), ok when
#           next() answers;
#   wasm    the same of the WebAssembly build (js/browser.mjs on idgen.wasm,
#           under node), which leases only from a daemon: it takes the rows
#           of the static registry and the idgen:// ones through
#           Snowflake.open() (an idgen:// row it cannot reach is refused
#           naming the registry: no daemon runs here, and the node rule of
#           a lease is the daemon's, tests/serve/suite_leases.py), and
#           refuses the file: ones, saying it leases from a daemon;
#   pg      the extension in a PostgreSQL 15 with shared_preload_libraries =
#           'idgen' (tests/pg_server.sh), the settings given by ALTER SYSTEM
#           and the server restarted: ok when idgen_snowflake() answers, a
#           refusal when ALTER SYSTEM refuses (the lease TTL's check) or
#           idgen_snowflake() says the settings are wrong.  It has no
#           borrow, wait or clock setting: it takes the rows without them
#           (idgen.space: the rows with space= alone).
# The public_key and public_prefix rows (`@` is the test's directory: a
# key file of mode 0600, one of 0644, one missing) go through cli and serve
# only: the addon, the Python and WebAssembly builds and the extension take
# no key file (the extension's keys are its own), so those rows are skipped
# there as the extension skips the rows of settings it lacks.
# The layout is twitter's (datacenter and worker; the registry leases
# worker).  The idgen:// rows are refused before anything is reached (no
# daemon runs here: registry.idgen runs one).  `file` is a file: registry of the test's own (the extension's
# file:pg_idgen, in its data directory, named: never the default, the
# host's /var/lib/idgen).
#
# Builds and installs the extension as tests/pg_ext_test.sh does (root:
# PGXS writes under /usr).  Exit status: 0 passed, 1 failed, 77 skipped (not
# root).  Ends with "N passed, N failed".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: settings_table_test.sh BUILD_DIR}" && pwd)
IDGEN=$BUILD/idgen
ADDON=$BUILD/js/idgen.node
PYDIR=$BUILD/python
WASM=$BUILD/js/browser/browser.mjs
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
if [ "$(id -u)" != 0 ]; then
  echo "SKIP settings table: installing the extension into the server's directories needs root"
  exit 77
fi
for f in "$ADDON" "$WASM" "$PYDIR/idgen/__init__.py"; do
  if [ ! -f "$f" ]; then
    echo "FAIL settings table: $f was not built (node, Node-API's headers or the WebAssembly" \
      "toolchain or Python's headers missing when the build was configured:" \
      "scripts/install-deps.sh)" >&2
    exit 1
  fi
done

#  registry | node                       | lease_field | ttl | more | verdict | message
TABLE='
static | datacenter=1 ,worker=2     |        |     |                        | ok      |
static | datacenter = 1 , worker = 2, |      |     |                        | ok      |
static | datacenter=1               | worker |     |                        | refused | a lease field needs a registry other than static
file   | datacenter=1,worker=2      |        |     |                        | refused | assigns worker: leave it out of node
file   | rack=1                     |        |     |                        | refused | "rack" is not a node field of the layout
file   | datacenter=1               |        | 100 |                        | refused | lease TTL 100 ms is not from 300 to 3600000
file   | datacenter=1               |        | 299 |                        | refused | lease TTL 299 ms is not from 300 to 3600000
file   | datacenter=1               |        | 300 |                        | ok      |
static | datacenter=1,worker=2      |        |     | max_borrow_ms=86400000 | ok      |
static | datacenter=1,worker=2      |        |     | max_borrow_ms=86400001 | refused | whole number from 0 to 86400000
static | datacenter=1,worker=2      |        |     | max_borrow_ms=0        | ok      |
static | datacenter=1,worker=2      |        |     | max_wait_ms=3600000    | ok      |
static | datacenter=1,worker=2      |        |     | max_wait_ms=3600001    | refused | whole number from 0 to 3600000
static | datacenter=1,worker=2      |        |     | clock=precise          | ok      |
static | datacenter=1,worker=2      |        |     | clock=coarse           | ok      |
static | datacenter=1,worker=2      |        |     | clock=sundial          | refused | expected fast, precise or coarse
file   | datacenter=1               |        |     | max_borrow_ms=86400000 clock=coarse | ok |
static | datacenter=1,worker=2      |        |     | space=billing          | refused | the static registry keeps no ID spaces
file   | datacenter=1               |        |     | space=billing          | ok      |
file   | datacenter=1               |        |     | space=Billing          | refused | not a space name
idgen://127.0.0.1:1?bogus=1 | datacenter=1 |  |     |                        | refused | unknown parameter "bogus"; known: space
idgen://127.0.0.1:1 | datacenter=1,worker=2 |       |     |                        | refused | assigns worker: leave it out of node
static | datacenter=1,worker=2      |        |     | public_key=@good.key   | ok      |
static | datacenter=1,worker=2      |        |     | public_key=@open.key   | refused | chmod 600
static | datacenter=1,worker=2      |        |     | public_key=@missing.key | refused | missing.key
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_prefix=order | ok |
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_prefix=Order | refused | public_prefix = "Order"
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_prefix=order_ | refused | public_prefix = "order_"
static | datacenter=1,worker=2      |        |     | public_prefix=order    | refused | a prefix without `public_key`
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_key_version=1 | ok |
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_key_version=2 | refused | the key file holds no version 2
static | datacenter=1,worker=2      |        |     | public_key=@good.key public_key_version=33 | refused | public_key_version = "33"
'

work=$(mktemp -d /tmp/idgen-settings-XXXXXX)
chmod 755 "$work" # the postgres user reaches its data directory below
cleanup() {
  "$ROOT/tests/pg_server.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0

# A generator of the options OPTIONS (JSON) from the addon (index.js) or the
# WebAssembly build (browser.mjs): its first ID, or the refusal's code and
# message (exit 1).
cat >"$work/try.mjs" <<'EOF'
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
const [front, where, options] = process.argv.slice(2);
const idgen = front === 'addon' ? createRequire(import.meta.url)(where)
                                : await import(pathToFileURL(where).href);
try {
  const g = front === 'addon' ? new idgen.Snowflake(JSON.parse(options))
                              : await idgen.Snowflake.open(JSON.parse(options));
  console.log(String(g.next()));
  await g.close();
} catch (e) {
  console.log(`${e.code}: ${e.message}`);
  process.exit(1);
}
EOF

# The same from the Python extension: its first ID, or "CODE: message"
# (exit 1).
cat >"$work/try.py" <<'EOF'
import json, sys
import idgen
try:
    with idgen.Snowflake(**json.loads(sys.argv[1])) as g:
        print(g.next())
except idgen.Error as e:
    print("%s: %s" % (e.code, e))
    sys.exit(1)
EOF

# The row's settings as the Python extension's keyword options (JSON).
py_options() {
  local o="{\"layout\":\"twitter\",\"registry\":\"$1\",\"node\":\"$2\"" kv val
  [ -z "$3" ] || o+=",\"lease_field\":\"$3\""
  [ -z "$4" ] || o+=",\"ttl_ms\":$4"
  for kv in $5; do
    val=${kv#*=}
    if [[ $val =~ ^[0-9]+$ ]]; then o+=",\"${kv%%=*}\":$val"; else o+=",\"${kv%%=*}\":\"$val\""; fi
  done
  printf '%s}' "$o"
}

trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  printf '%s' "${s%"${s##*[![:space:]]}"}"
}

# The row's settings as the JavaScript builds' options (JSON): js_options
# REGISTRY NODE FIELD TTL MORE, MORE's keys camelCase (max_borrow_ms:
# maxBorrowMs).
js_options() {
  local o="{\"layout\":\"twitter\",\"registry\":\"$1\",\"node\":\"$2\"" kv key val
  [ -z "$3" ] || o+=",\"leaseField\":\"$3\""
  [ -z "$4" ] || o+=",\"ttlMs\":$4"
  for kv in $5; do
    key=$(sed -E 's/_(.)/\U\1/g' <<<"${kv%%=*}") val=${kv#*=}
    if [[ $val =~ ^[0-9]+$ ]]; then o+=",\"$key\":$val"; else o+=",\"$key\":\"$val\""; fi
  done
  printf '%s}' "$o"
}

# check FRONT_END ROW RC OUTPUT VERDICT MESSAGE
check() {
  local what=$1 row=$2 rc=$3 out=$4 verdict=$5 msg=$6 got=ok
  [ "$rc" = 0 ] || got=refused
  if [ "$got" = "$verdict" ] && { [ -z "$msg" ] || [[ $out == *"$msg"* ]]; }; then
    echo "ok   $what: $row: $got${msg:+ ($msg)}"
    passed=$((passed + 1))
  else
    echo "FAIL $what: $row: $got, want $verdict${msg:+ with \"$msg\"}; said: $out" >&2
    failed=$((failed + 1))
  fi
}

# Key files for the public_key rows: made by the command (mode 0600), and a
# copy that others may read.
"$IDGEN" public --new-key "$work/good.key" >/dev/null
cp "$work/good.key" "$work/open.key"
chmod 644 "$work/open.key"

# The command, the daemon's config file, the addon, the Python extension and the
# WebAssembly build.
n=0
while IFS='|' read -r reg node field ttl more verdict msg; do
  reg=$(trim "$reg")
  [ -n "$reg" ] || continue
  node=$(trim "$node") field=$(trim "$field") ttl=$(trim "$ttl") more=$(trim "$more")
  verdict=$(trim "$verdict") msg=$(trim "$msg")
  more=${more//@/$work/}
  n=$((n + 1))
  uri=$reg
  [ "$reg" != file ] || uri=file:$work/reg$n
  row="registry $reg, node \"$node\"${field:+, lease_field $field}${ttl:+, lease_ttl_ms $ttl}"
  row+=${more:+, $more}
  args=(--layout twitter --registry "$uri" --node "$node")
  conf="layout = twitter
registry = $uri
node = $node"
  [ -z "$field" ] || { args+=(--lease-field "$field"); conf+=$'\n'"lease_field = $field"; }
  [ -z "$ttl" ] || { args+=(--lease-ttl-ms "$ttl"); conf+=$'\n'"lease_ttl_ms = $ttl"; }
  for kv in $more; do
    key=${kv%%=*}
    args+=("--${key//_/-}" "${kv#*=}")
    conf+=$'\n'"$key = ${kv#*=}"
  done
  rc=0
  out=$("$IDGEN" snowflake "${args[@]}" 2>&1) || rc=$?
  check cli "$row" "$rc" "$out" "$verdict" "$msg"
  printf '%s\n' "$conf" >"$work/serve$n.conf"
  rc=0
  out=$("$IDGEN" serve --config "$work/serve$n.conf" --check-config 2>&1) || rc=$?
  check serve "$row" "$rc" "$out" "$verdict" "$msg"
  [[ $more != *public_* ]] || continue # cli and serve only (above)
  js_uri=$reg
  [ "$reg" != file ] || js_uri=file:$work/addon$n
  rc=0
  out=$(IDGEN_NODE_ADDON=$ADDON node "$work/try.mjs" addon "$ROOT/js/index.js" \
    "$(js_options "$js_uri" "$node" "$field" "$ttl" "$more")" 2>&1) || rc=$?
  check addon "$row" "$rc" "$out" "$verdict" "$msg"
  py_uri=$reg
  [ "$reg" != file ] || py_uri=file:$work/python$n
  rc=0
  out=$(PYTHONPATH=$PYDIR /usr/bin/python3 "$work/try.py" \
    "$(py_options "$py_uri" "$node" "$field" "$ttl" "$more")" 2>&1) || rc=$?
  check python "$row" "$rc" "$out" "$verdict" "$msg"
  rc=0
  out=$(node "$work/try.mjs" wasm "$WASM" \
    "$(js_options "$js_uri" "$node" "$field" "$ttl" "$more")" 2>&1) || rc=$?
  if [ "$reg" = static ] && [ -z "$ttl" ]; then
    check wasm "$row" "$rc" "$out" "$verdict" "$msg"
  elif [[ $reg == idgen://* && $verdict == refused && $msg == *"unknown parameter"* ]]; then
    check wasm "$row" "$rc" "$out" "$verdict" "$msg"
  elif [[ $reg == idgen://* ]]; then
    check wasm "$row" "$rc" "$out" refused "EREGISTRY: registry: idgen://127.0.0.1:1:"
  else
    check wasm "$row" "$rc" "$out" refused "leases from a daemon"
  fi
done <<<"$TABLE"

# The extension.
make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$BUILD" install
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ROOT/tests/pg_server.sh" start "$work/pg" "$port" >/dev/null
printf "shared_preload_libraries = 'idgen'\nidgen.layout = 'twitter'\n" >>"$work/pg/data/postgresql.conf"
export PGHOST=$work/pg PGPORT=$port PGUSER=postgres PGDATABASE=postgres
q() { psql -qAtX -v ON_ERROR_STOP=1 -c "$1" 2>&1; }
"$ROOT/tests/pg_server.sh" pause "$work/pg"
"$ROOT/tests/pg_server.sh" resume "$work/pg"
q "CREATE EXTENSION idgen" >/dev/null

# idgen_snowflake() once the worker has decided: an ID, or its refusal
# (waits out the worker's start, at most 30 s).
pg_answer() {
  local out
  for _ in $(seq 1 60); do
    if out=$(q "SELECT idgen_snowflake()"); then
      echo "$out"
      return 0
    fi
    case $out in
      *"has no generator"*starting* | *"has no generator: "*"retrying"*) ;;
      *"has no generator"*) echo "$out"; return 1 ;;
    esac
    sleep 0.5
  done
  echo "$out"
  return 1
}

while IFS='|' read -r reg node field ttl more verdict msg; do
  reg=$(trim "$reg")
  [ -n "$reg" ] || continue
  more=$(trim "$more")
  space=
  if [[ $more == space=* ]]; then space=${more#space=}; else [ -z "$more" ] || continue; fi
  node=$(trim "$node") field=$(trim "$field") ttl=$(trim "$ttl")
  verdict=$(trim "$verdict") msg=$(trim "$msg")
  row="registry $reg, node \"$node\"${field:+, lease_field $field}${ttl:+, lease_ttl_ms $ttl}"
  row+=${space:+, space=$space}
  uri=$reg
  [ "$reg" != file ] || uri=file:pg_idgen # the server's own, in its data directory
  rc=0
  out=$(q "ALTER SYSTEM RESET ALL") || rc=$?
  [ "$rc" != 0 ] || out=$(q "ALTER SYSTEM SET idgen.registry = '$uri'") || rc=$?
  [ "$rc" != 0 ] || out=$(q "ALTER SYSTEM SET idgen.node = '$node'") || rc=$?
  [ "$rc" != 0 ] || [ -z "$field" ] || out=$(q "ALTER SYSTEM SET idgen.lease_field = '$field'") || rc=$?
  [ "$rc" != 0 ] || [ -z "$ttl" ] || out=$(q "ALTER SYSTEM SET idgen.lease_ttl_ms = $ttl") || rc=$?
  [ "$rc" != 0 ] || [ -z "$space" ] || out=$(q "ALTER SYSTEM SET idgen.space = '$space'") || rc=$?
  if [ "$rc" = 0 ]; then
    "$ROOT/tests/pg_server.sh" pause "$work/pg"
    "$ROOT/tests/pg_server.sh" resume "$work/pg"
    out=$(pg_answer) || rc=$?
  fi
  check pg "$row" "$rc" "$out" "$verdict" "$msg"
done <<<"$TABLE"

# At startup, a lease TTL the library refuses is refused with its message
# (the server keeps the default) rather than taken by the worker, which
# would retry forever.
q "ALTER SYSTEM RESET ALL" >/dev/null
q "ALTER SYSTEM SET idgen.registry = 'file:pg_idgen'" >/dev/null
printf "idgen.lease_ttl_ms = 299\n" >>"$work/pg/data/postgresql.conf"
"$ROOT/tests/pg_server.sh" pause "$work/pg"
"$ROOT/tests/pg_server.sh" resume "$work/pg"
rc=0
out=$(pg_answer) || rc=$?
log=$(grep -A1 'idgen.lease_ttl_ms' "$work/pg/log" || true)
check pg "idgen.lease_ttl_ms = 299 at startup" 1 "$log" refused \
  "lease TTL 299 ms is not from 300 to 3600000"
check pg "idgen.lease_ttl_ms = 299 at startup: idgen_snowflake() on the default TTL" "$rc" \
  "$out" ok ""

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
