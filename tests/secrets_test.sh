#!/usr/bin/env bash
# secrets_test.sh BUILD_DIR [JS_DIR] -- a registry's password is shown
# nowhere (SPEC §13, issue 40).
#
# A PostgreSQL server of its own with md5 authentication and a role with a
# real password, and an etcd of its own with authentication on (a user with
# a password, `etcdctl auth enable`).  With those passwords in the registry
# URIs (as user:password@ and as ?password=), it runs what users run: the
# CLI (IDs, `registry list`, `--check-config`, refusals that quote the
# URI), the daemon (its log, its audit log, /info, /status.json, /, /metrics,
# RESP INFO), the Node addon (`lease()`, an error), and the extension leasing
# from postgres:// (its server log, the files it writes in $PGDATA, SHOW,
# current_setting() and pg_settings as a role that is not a superuser).
# Then it searches every byte those wrote, every file under its directory
# (the processes' HOME and TMPDIR are there), not a list of places: the only
# files allowed to hold a password are the configuration the test itself
# wrote (postgresql.conf and postgresql.auto.conf) and etcd's own data.
#
# Then the extension leases from postgres:// with the password in a libpq
# passfile named by the URI (?passfile=), not in the configuration, as
# docs/POSTGRES.md's "Keeping the password out of the configuration" says,
# and the CLI with PGPASSFILE.
#
# Installs the extension into PostgreSQL 15's directories (root: PGXS writes
# under /usr), as tests/pg_ext_test.sh does.  Exit status: 0 passed,
# 1 failed, 77 skipped (not root, or a tool missing).  Ends with
# "N passed, N failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: secrets_test.sh BUILD_DIR [JS_DIR]}" && pwd)
JS=${2:+$(cd "$2" && pwd)}
IDGEN=$BUILD/idgen
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}

# shellcheck source=tests/checks.sh
. "$ROOT/tests/checks.sh"
need_root psql curl redis-cli etcd etcdctl python3
[ -x "$PG_CONFIG" ] || {
  echo "skipped: no $PG_CONFIG (postgresql-server-dev-15)"
  exit 77
}

work=$(mktemp -d /tmp/idgen-secrets-XXXXXX)
chmod 755 "$work" # the postgres user reaches its data directory below
mkdir -p "$work/home" "$work/tmp" "$work/out"
export HOME=$work/home TMPDIR=$work/tmp
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  "$ROOT/tests/pg_server.sh" stop "$work/pg" >/dev/null 2>&1
  "$ROOT/tests/etcd_server.sh" stop "$work/etcd" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
finish() {
  tally && exit 0
  exit 1
}

# Passwords as users pick them: long, and each different, so that a hit
# names what leaked.  Letters and digits only: the URI holds them as they
# are, so a search for the bytes finds every copy.
rnd() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }
PGPW=Pg$(rnd)
ETPW=Et$(rnd)
ROOTPW=Rt$(rnd)

# ---- the servers ------------------------------------------------------------
PGPORT=$(free_port)
"$ROOT/tests/pg_server.sh" start "$work/pg" "$PGPORT" >/dev/null || {
  bad "PostgreSQL did not start"
  finish
}
PGDATA=$work/pg/data
q() { psql -h "$work/pg" -p "$PGPORT" -U "${QUSER:-postgres}" -d postgres -qAtX -v ON_ERROR_STOP=1 -c "$1"; }
# The role the registry connects as, with a password, over TCP with md5
# (the Unix socket, the test's own psql, stays trust).
q "CREATE ROLE idgen_app LOGIN PASSWORD '$PGPW'; GRANT CREATE ON DATABASE postgres TO idgen_app;
   CREATE ROLE someone LOGIN" >/dev/null
sed -i 's/^\(host .*\) trust$/\1 md5/' "$PGDATA/pg_hba.conf"
q "SELECT pg_reload_conf()" >/dev/null
PGURI="postgres://idgen_app:$PGPW@127.0.0.1:$PGPORT/postgres"
PGURI_Q="postgres://idgen_app@127.0.0.1:$PGPORT/postgres?sslmode=disable&password=$PGPW"
check "setup: md5 authentication refuses the role without its password" \
  bash -c "! PGPASSWORD=wrong psql 'postgres://idgen_app@127.0.0.1:$PGPORT/postgres' -c 'SELECT 1'"

ETPORT=$(free_port 2) # etcd_server.sh takes the port and the next
ETURI0=$("$ROOT/tests/etcd_server.sh" start "$work/etcd" "$ETPORT") || {
  bad "etcd did not start"
  finish
}
E=(env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$ETPORT")
{
  "${E[@]}" user add "root:$ROOTPW" &&
    "${E[@]}" user add "idgen:$ETPW" &&
    "${E[@]}" user grant-role idgen root &&
    "${E[@]}" auth enable
} >/dev/null 2>&1 || {
  bad "etcd: authentication could not be enabled"
  finish
}
ETURI="etcd://idgen:$ETPW@${ETURI0#etcd://}"
check "setup: etcd refuses a client without the password" \
  bash -c "! ${E[*]} put /x y"

# ---- the CLI ----------------------------------------------------------------
O=$work/out
# the three ways the passwords reach a registry: user info, ?password=, etcd
declare -A URIS=([pg]=$PGURI [pgq]=$PGURI_Q [etcd]=$ETURI)
withp() { # URI PARAM: URI with one more query parameter
  case $1 in
    *\?*) echo "$1&$2" ;;
    *) echo "$1?$2" ;;
  esac
}
checkv() { # WHAT CMD...: check, showing what a failing run says
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
run() { # NAME CMD...: runs CMD, its output and errors in $O/NAME.{out,err}
  local name=$1
  shift
  "$@" >"$O/$name.out" 2>"$O/$name.err" && return 0
  # shown masked: the search below is for every copy of the password
  sed -e "s/$PGPW/<PG PASSWORD>/g; s/$ETPW/<ETCD PASSWORD>/g; s/^/     $name: /" "$O/$name.err" | tail -3
  return 1
}
for b in pg pgq etcd; do
  U=${URIS[$b]}
  checkv "cli $b: IDs from the registry with a password" \
    run "cli-$b-ids" "$IDGEN" snowflake -n 3 --registry "$U" --node datacenter=3
  checkv "cli $b: registry list" run "cli-$b-list" "$IDGEN" registry list --registry "$U"
  run "cli-$b-listjson" "$IDGEN" registry list --json --registry "$U"
  checkv "cli $b: serve --check-config" \
    run "cli-$b-check" "$IDGEN" serve --check-config --registry "$U" --http 127.0.0.1:0 --resp off
  check "cli $b: --check-config shows the registry, masked" grep -q "\*\*\*" "$O/cli-$b-check.out"
  # refusals that quote the URI: a parameter nobody knows, a bad space, the
  # wrong port (the client library's own message)
  run "cli-$b-unknown" "$IDGEN" snowflake --registry "$(withp "$U" nosuch=1)" --node datacenter=3
  run "cli-$b-space" "$IDGEN" snowflake --registry "$U" --space 'Bad Space' --node datacenter=3
  run "cli-$b-env" env IDGEN_REGISTRY="$(withp "$U" nosuch=1)" "$IDGEN" serve --check-config
done
run cli-pg-port "$IDGEN" snowflake --registry "postgres://idgen_app:$PGPW@127.0.0.1:1/postgres" --node datacenter=3
run cli-etcd-port "$IDGEN" snowflake --registry "etcd://idgen:$ETPW@127.0.0.1:1" --node datacenter=3
# the settings' refusals that name the registry: a node value for the
# field it leases, a value from the host's address with a leasing registry
run cli-pg-nodegiven "$IDGEN" snowflake --registry "$PGURI" --node datacenter=3,worker=1
run cli-etcd-nodeip "$IDGEN" snowflake --registry "$ETURI" --node datacenter=@ip
run cli-pg-scheme "$IDGEN" snowflake --registry "postgresql+psycopg://idgen_app:$PGPW@127.0.0.1/postgres"
check "cli: a refusal of a node value names the registry, masked" \
  grep -q "idgen_app:\*\*\*@127.0.0.1" "$O/cli-pg-nodegiven.err"
run cli-pg-pwbad "$IDGEN" snowflake --registry "postgres://idgen_app:$PGPW%zz@127.0.0.1:$PGPORT/postgres" --node datacenter=3
check "cli: a refusal still says what is wrong (the unknown parameter is named)" \
  grep -q nosuch "$O/cli-pg-unknown.err"

# ---- the daemon -------------------------------------------------------------
# serve NAME URI: a daemon on loopback port 0 with its log and audit log in
# $O; HTTP and RESP ports in HP and RP (empty if it did not serve)
serve() {
  local name=$1 uri=$2 i
  "$IDGEN" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 --node datacenter=4 \
    --registry "$uri" --log-file "$O/$name.log" --audit-log "$O/$name.audit" \
    --pid-file "$O/$name.pid" >"$O/$name.out" 2>"$O/$name.err" &
  pids+=($!)
  HP="" RP=""
  for ((i = 0; i < 600; i++)); do
    HP=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$O/$name.log" 2>/dev/null)
    RP=$(sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$O/$name.log" 2>/dev/null)
    [ -n "$HP" ] && [ -n "$RP" ] && break
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.05
  done
}
for b in pg pgq etcd; do
  U=${URIS[$b]}
  serve "serve-$b" "$U"
  if [ -z "$HP" ]; then
    bad "serve $b: the daemon serves with the registry's password"
    sed 's/^/     /' "$O/serve-$b.err" "$O/serve-$b.log" 2>/dev/null | tail -5
    continue
  fi
  ok "serve $b: the daemon serves with the registry's password"
  for path in id?count=5 info status.json / metrics health ready; do
    curl -sf "http://127.0.0.1:$HP/$path" >"$O/serve-$b-http-${path//[^a-z]/_}" 2>&1
  done
  check "serve $b: /info names the registry (user and host shown)" \
    grep -q "idgen_app\|idgen:\*\*\*@\|127.0.0.1" "$O/serve-$b-http-info"
  redis-cli -h 127.0.0.1 -p "$RP" INFO >"$O/serve-$b-resp-info" 2>&1
  redis-cli -h 127.0.0.1 -p "$RP" INFO registry >"$O/serve-$b-resp-info2" 2>&1
  check "serve $b: RESP INFO answers" grep -q "registry" "$O/serve-$b-resp-info"
  kill "${pids[-1]}" && wait "${pids[-1]}" 2>/dev/null
done

# ---- the Node addon ---------------------------------------------------------
if [ -n "$JS" ] && command -v node >/dev/null && [ -f "$BUILD/js/idgen.node" ]; then
  for b in pg pgq etcd; do
    U=${URIS[$b]}
    checkv "js $b: lease() from the registry with a password" \
      run "js-$b" env IDGEN_NODE_ADDON="$BUILD/js/idgen.node" U="$U" UBAD="$(withp "$U" nosuch=1)" node -e "
        const { Snowflake } = require('$JS');
        (async () => {
          const g = await Snowflake.open({ registry: process.env.U, node: 'datacenter=5' });
          console.log(JSON.stringify(g.lease()), String(g.next()));
          await g.close();
          try { new Snowflake({ registry: process.env.UBAD }); }
          catch (e) { console.log(e.message); }
        })().catch((e) => { console.error(e); process.exit(1); });"
    check "js $b: lease() names the registry" grep -q '"registry"' "$O/js-$b.out"
  done
else
  echo "note: no Node addon or JS_DIR: the addon's checks skipped"
fi

# ---- the extension, the password in idgen.registry -----------------------------
echo "== make -C pg install (PGXS, on $BUILD/pg-libs)"
if ! make -s -C "$ROOT/pg" PG_CONFIG="$PG_CONFIG" IDGEN_BUILD="$BUILD" install >/dev/null; then
  bad "the extension did not build or install"
  finish
fi
restart() { "$ROOT/tests/pg_server.sh" pause "$work/pg" && "$ROOT/tests/pg_server.sh" resume "$work/pg"; }
# when_ready SQL: retries SQL until it answers (the worker takes its lease)
when_ready() { retry 60 q "$1"; }
printf "shared_preload_libraries = 'idgen'\nidgen.registry = '%s'\n" "$PGURI" >>"$PGDATA/postgresql.conf"
restart || {
  bad "the server did not start with the extension"
  finish
}
q "CREATE EXTENSION idgen" >/dev/null
check "ext: idgen_snowflake() from postgres:// with the password in idgen.registry" \
  when_ready "SELECT idgen_snowflake()"
for how in "SHOW idgen.registry" "SELECT current_setting('idgen.registry')" \
  "SELECT setting FROM pg_settings WHERE name = 'idgen.registry'"; do
  QUSER=someone q "$how" >>"$O/ext-someone" 2>&1
done
check "ext: a role that is not a superuser is refused SHOW idgen.registry" \
  grep -q "must be superuser\|permission denied\|pg_read_all_settings" "$O/ext-someone"
check "ext: ... and pg_settings has no row for it" \
  bash -c "[ \"\$(QUSER=someone psql -h '$work/pg' -p $PGPORT -U someone -d postgres -qAtX -c \"SELECT count(*) FROM pg_settings WHERE name = 'idgen.registry'\")\" = 0 ]"
# a refusal of the extension's: the URI with an unknown parameter
sed -i "s|^idgen.registry = .*|idgen.registry = '$PGURI?nosuch=1'|" "$PGDATA/postgresql.conf"
restart >/dev/null 2>&1
for ((i = 0; i < 20; i++)); do
  q "SELECT idgen_snowflake()" >"$O/ext-refused" 2>&1 || break
  sleep 0.5
done
check "ext: a bad idgen.registry is refused, naming what is wrong" grep -q nosuch "$O/ext-refused"
"$ROOT/tests/pg_server.sh" pause "$work/pg"

# ---- every byte written -----------------------------------------------------
# Every file under the test's directory: outputs, logs, audit logs, HOME,
# TMPDIR, $PGDATA (the server log, pg_idgen.last, WAL) but the configuration
# the test wrote, and etcd's log (not its data: etcd 3.4 keeps a user's
# password in its write-ahead log).
hits=$(grep -rlaF -e "$PGPW" -e "$ETPW" -e "$ROOTPW" "$work" \
  --exclude=postgresql.conf --exclude=postgresql.auto.conf --exclude-dir=etcd 2>/dev/null)
hits+=$(grep -laF -e "$PGPW" -e "$ETPW" -e "$ROOTPW" "$work"/etcd/*.log 2>/dev/null)
if [ -z "$hits" ]; then
  ok "no password in any byte written ($(find "$work" -type f -not -path "$work/etcd/*" | wc -l) files, $(du -sk --exclude=etcd "$work" | cut -f1) kB)"
else
  bad "a password was written to:"
  for f in $hits; do
    echo "     $f: $(grep -aoF -e "$PGPW" -e "$ETPW" -e "$ROOTPW" "$f" | head -1 | cut -c1-4)…"
    grep -aF -e "$PGPW" -e "$ETPW" "$f" | head -2 | sed "s/$PGPW/<PG PASSWORD>/g; s/$ETPW/<ETCD PASSWORD>/g; s/^/       /" | cut -c1-300
  done
fi
check "the search would find one (the configuration the test wrote holds it)" \
  grep -qF "$PGPW" "$PGDATA/postgresql.conf"

# ---- the password in a passfile ---------------------------------------------
# libpq's passfile: mode 0600, owned by the user that reads it (the server's)
pgpass=$work/pgpass
echo "127.0.0.1:$PGPORT:postgres:idgen_app:$PGPW" >"$pgpass"
chown postgres: "$pgpass"
chmod 0600 "$pgpass"
"$ROOT/tests/pg_server.sh" resume "$work/pg" || {
  bad "the server did not start again"
  finish
}
sed -i "s|^idgen.registry = .*|idgen.registry = 'postgres://idgen_app@127.0.0.1:$PGPORT/postgres?passfile=$pgpass'|" \
  "$PGDATA/postgresql.conf"
restart || {
  bad "the server did not start with the passfile"
  finish
}
check "passfile: no password in the configuration" bash -c "! grep -qF '$PGPW' '$PGDATA/postgresql.conf'"
check "passfile: the extension leases from postgres:// with the password in ?passfile=" \
  when_ready "SELECT idgen_snowflake()"
check "passfile: the extension's holder is in the registry" \
  bash -c "PGPASSFILE='$pgpass' '$IDGEN' registry list --registry 'postgres://idgen_app@127.0.0.1:$PGPORT/postgres' | grep -q 'held'"
cp "$pgpass" "$work/pgpass-root" && chown root: "$work/pgpass-root"
check "passfile: the CLI with PGPASSFILE" \
  env PGPASSFILE="$work/pgpass-root" "$IDGEN" snowflake -n 2 --node datacenter=6 \
  --registry "postgres://idgen_app@127.0.0.1:$PGPORT/postgres"
check "passfile: without it the CLI is refused (the password is needed)" \
  bash -c "! PGPASSFILE=/nonexistent '$IDGEN' snowflake --node datacenter=6 --registry 'postgres://idgen_app@127.0.0.1:$PGPORT/postgres'"

finish
