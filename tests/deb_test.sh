#!/usr/bin/env bash
# deb_test.sh -- the Debian packages (debian/), built and used the usual way.
#
#   tests/deb_test.sh [SOURCE_DIR]     (default: this script's ../)
#
# Builds the packages as `make deb` does (scripts/build-deb.sh: the files git
# lists, tracked and untracked but not ignored, as they are in the working
# tree, so uncommitted changes are tested, copied into a temporary directory,
# then `dpkg-buildpackage -us -uc -b` there with
# DEB_BUILD_OPTIONS="nocheck parallel=2"), then:
#   - lintian on the .changes: no error or warning (info tags are printed);
#   - `dpkg-deb -c`: idgen, libidgen0 and libidgen-dev each hold what belongs
#     there (and no libidgen-registry.so); idgen's postinst enables the unit,
#     /etc/idgen/idgen.env is a conffile whose examples the daemon takes;
#   - the three packages unpacked (dpkg -x) into a fresh directory tree: the
#     tree's `idgen --version`, and a short daemon session from it (HTTP and
#     RESP on ports it picks, a file: registry in the temporary directory):
#     an ID with curl, IDs with redis-cli, SIGTERM, exit status 0;
#   - the binaries hardened (PIE, RELRO, BIND_NOW, stack protector, fortify);
#   - a C program built with the tree's pkg-config files against its header
#     and libidgen.so.0, and one with its libidgen-registry.a taking a lease;
#   - the packages installed with dpkg -i in a mount namespace
#     (tests/deb_installed.sh): the packaged daemon and a non-root
#     application on defaults share /var/lib/idgen and lease two tuples;
#   - postgresql-15-idgen: its files in PostgreSQL 15's directories, its
#     Depends (postgresql-15, and the package of every library idgen.so
#     links), idgen.so hardened; then installed with dpkg -i in a mount
#     namespace (pg_session, below) and used by a throwaway server: the
#     extension's pg_regress suite, CREATE EXTENSION idgen, UUIDv7s and ULIDs,
#     and with shared_preload_libraries idgen_snowflake(); dpkg -r.
# Exits 77 (skipped) when dpkg-buildpackage, debhelper or lintian is missing.
# Removes the temporary directory and stops the daemon and the PostgreSQL
# server on any exit.  Ends with the line "N passed, N failed".
# The functions below are called through check and the traps.
# shellcheck disable=SC2317
set -u

# pg_session WORK DEB: postgresql-15-idgen installed with dpkg -i and used
# by a throwaway PostgreSQL 15 server.  This script runs it as
# `deb_test.sh --pg-session SOURCE_DIR WORK DEB` in a mount namespace of its
# own (near the end): it prints check lines and "N passed, N failed", exits
# 1 on a failure, 77 when it cannot run (the reason on its first line).
#
# Why dpkg -i, in a namespace: PostgreSQL 15 finds an extension's control
# file only in its sharedir (/usr/share/postgresql/15/extension; a search
# path for control files, extension_control_path, came in 18), so an
# unpacked tree cannot be pointed to honestly: dynamic_library_path would
# find the .so, but the control and SQL files would have to be copied into
# the host's directories anyway, outside any package.  dpkg -i also checks
# what the package says: its Depends must be met on this machine, and its
# files land where dpkg puts them.  Overlays over /etc, /usr and /var (their
# changes kept in WORK, gone with the namespace) keep the host's files and
# package database as they were, even if a postgresql-15-idgen is installed
# there already (then it is said, and the overlay's copy is replaced, not
# the host's), and even if this test is killed.
pg_session() {
  local work=$1 deb=$2 pgbin=/usr/lib/postgresql/15/bin
  local pkglib=/usr/lib/postgresql/15/lib share=/usr/share/postgresql/15/extension
  local d t host port data log out
  local -a stray
  for t in "$pgbin/postgres" "$pgbin/initdb" "$pgbin/pg_isready" "$pgbin/psql" \
    "$pkglib/pgxs/src/test/regress/pg_regress"; do
    [ -x "$t" ] || { echo "no $t (postgresql-15 and postgresql-client-15)"; exit 77; }
  done
  for t in setpriv python3; do
    command -v "$t" >/dev/null || { echo "no $t"; exit 77; }
  done
  id postgres >/dev/null 2>&1 || { echo "no user postgres (postgresql-15)"; exit 77; }
  for d in etc usr var; do
    mkdir -p "$work/ov-$d/upper" "$work/ov-$d/work"
    mount -t overlay "ov-$d" -o "lowerdir=/$d,upperdir=$work/ov-$d/upper,workdir=$work/ov-$d/work" \
      "/$d" || { echo "cannot overlay /$d"; exit 77; }
  done
  # shellcheck source=tests/checks.sh
  . "$(dirname "${BASH_SOURCE[0]}")/checks.sh"
  # shellcheck disable=SC2034 # read by checks.sh's ok and bad
  CHECK_PREFIX="deb_test (postgresql-15-idgen installed): "
  # try WHAT CMD...: check, returning CMD's status (what follows needs it)
  try() {
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what" && return 1; fi
  }

  # The server, the postmaster itself our child: setpriv execs it, so $! is
  # its PID, recorded in pid (global: the EXIT trap reads it) and the only
  # process this session signals.  SIGINT is PostgreSQL's fast shutdown.
  pid=""
  stop_server() {  # stop_server: 0 when it stopped by itself with status 0
    local st end=$((SECONDS + 60))
    [ -n "$pid" ] || return 0
    kill -INT "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$end" ]; do sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { echo "the server ignored SIGINT for 60 s" >&2; kill -KILL "$pid"; }
    wait "$pid"
    st=$?
    pid=""
    return "$st"
  }
  trap 'stop_server' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  start_server() {  # start_server -c NAME=VALUE...: started, answering on $port
    local end=$((SECONDS + 60))
    setpriv --reuid=postgres --regid=postgres --init-groups -- "$pgbin/postgres" -D "$data" \
      -c port="$port" -c listen_addresses=127.0.0.1 -c unix_socket_directories="$work/pg" \
      -c fsync=off "$@" >>"$log" 2>&1 </dev/null &
    pid=$!
    # a start takes about a second; 60 s are for a busy machine
    until "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -t 5; do
      if ! kill -0 "$pid" 2>/dev/null || [ "$SECONDS" -ge "$end" ]; then
        tail -n 20 "$log" >&2
        return 1
      fi
      sleep 0.1
    done
  }
  q() { "$pgbin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1 -c "$1"; }

  # What a `make -C pg install` left in the server's directories would be
  # found in the package's place: removed here (in the overlay only), so
  # only the package's files can be loaded.
  mapfile -t stray < <(ls -d "$pkglib"/idgen.so "$share"/idgen.control "$share"/idgen--*.sql 2>/dev/null)
  if [ ${#stray[@]} -gt 0 ]; then
    echo "deb_test: removed in the overlay only, before dpkg -i (a make -C pg install's?): ${stray[*]}"
    rm -f "${stray[@]}"
  fi
  host=$(dpkg-query -W -f='${Status} ${Version}' postgresql-15-idgen 2>/dev/null)
  case $host in
  "install ok installed"*)
    echo "deb_test: this host has postgresql-15-idgen ${host##* } installed: the dpkg -i" \
      "below replaces it in the overlay only; the host's stays as it is" ;;
  esac
  DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$work/dpkg.log" 2>&1
  try "dpkg -i (its Depends met by this machine's packages)" test $? = 0 ||
    { tail -20 "$work/dpkg.log" >&2; tally; exit; }
  out=$(dpkg --verify postgresql-15-idgen 2>&1)
  try "dpkg --verify: the files are the package's" test -z "$out" || echo "$out" >&2

  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  data=$work/pg/data
  log=$work/pg/log
  mkdir -p "$work/pg"
  chown postgres: "$work/pg"
  setpriv --reuid=postgres --regid=postgres --init-groups -- "$pgbin/initdb" -D "$data" -A trust \
    -U postgres -E UTF8 --no-sync >"$work/initdb.log" 2>&1
  try "initdb" test $? = 0 || { tail -20 "$work/initdb.log" >&2; tally; exit; }

  # 1. Without shared_preload_libraries: the extension's pg_regress suite
  # (pg/sql/idgen.sql: known answers, bad input, idgen_snowflake() refused
  # for want of the preload) and a table keyed by its UUIDv7 and ULID.
  start_server
  try "a server on 127.0.0.1:$port (PID $pid)" test $? = 0 || { tally; exit; }
  "$pkglib/pgxs/src/test/regress/pg_regress" --inputdir="$src/pg" --outputdir="$work/regress" \
    --bindir="$pgbin" --host=127.0.0.1 --port="$port" --user=postgres \
    --dbname=contrib_regression_idgen idgen >"$work/regress.log" 2>&1
  try "pg_regress: pg/sql/idgen.sql gives pg/expected/idgen.out" test $? = 0 ||
    { cat "$work/regress.log" && head -100 "$work/regress/regression.diffs"; } >&2
  check "CREATE EXTENSION idgen" q "CREATE EXTENSION idgen"
  check "its version is idgen.control's default_version" test "$(q "SELECT extversion FROM
    pg_extension WHERE extname = 'idgen'")" = "$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/pg/idgen.control")"
  out=$(q "CREATE TABLE t (u uuid PRIMARY KEY DEFAULT idgen_uuid7(), l text UNIQUE DEFAULT idgen_ulid(),
             n int); INSERT INTO t (n) SELECT generate_series(1, 10000);
           SELECT count(*), count(DISTINCT u), count(DISTINCT l),
                  count(*) FILTER (WHERE u::text ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab]'
                                     AND l ~ '^[0-7][0-9A-HJKMNP-TV-Z]{25}$') FROM t" 2>&1)
  check "10000 rows keyed by idgen_uuid7() and idgen_ulid(): distinct, well formed ($out)" \
    test "$out" = "10000|10000|10000|10000"
  out=$(q "SELECT idgen_snowflake()" 2>&1)
  check "idgen_snowflake() without the preload: refused, saying so" grep -q shared_preload_libraries <<<"$out"
  stop_server
  check "the server stops on SIGINT, status 0" test $? = 0

  # 2. shared_preload_libraries = 'idgen', a registry of this server's own
  # (file:pg_idgen, in its data directory; never the host's /var/lib/idgen):
  # the lease keeper leases a worker ID, idgen_snowflake() issues.
  start_server -c shared_preload_libraries=idgen -c idgen.registry=file:pg_idgen
  try "a server with shared_preload_libraries = 'idgen' (PID $pid)" test $? = 0 || { tally; exit; }
  check "the postmaster loaded $pkglib/idgen.so" grep -q " $pkglib/idgen.so\$" "/proc/$pid/maps"
  # the worker takes its lease within milliseconds; 60 s for a busy machine
  out=$(retry 60 q "SELECT idgen_snowflake()")
  check "idgen_snowflake() issues once the worker holds its lease" grep -qxE '[0-9]{10,19}' <<<"$out"
  check "... leased from file:pg_idgen in the data directory" \
    test -n "$(find "$data/pg_idgen" -name '*.lock' 2>/dev/null)"
  out=$(q "SELECT count(*), count(DISTINCT x), count(*) FILTER (WHERE x <= p) FROM
             (SELECT x, lag(x) OVER (ORDER BY o) AS p
                FROM idgen_snowflake_n(100000) WITH ORDINALITY a(x, o)) y" 2>&1)
  check "idgen_snowflake_n(100000): distinct and increasing ($out)" test "$out" = "100000|100000|0"
  out=$(q "SELECT abs(extract(epoch FROM idgen_time(idgen_snowflake()) - now())) < 60" 2>&1)
  check "idgen_time() of a new ID is now ($out)" test "$out" = t
  stop_server
  check "the server stops on SIGINT, status 0" test $? = 0

  DEBIAN_FRONTEND=noninteractive dpkg -r postgresql-15-idgen >>"$work/dpkg.log" 2>&1
  check "dpkg -r postgresql-15-idgen" test $? = 0
  check "... removes its files" test -z "$(ls -d "$pkglib"/idgen.so "$share"/idgen* 2>/dev/null)"
  tally
}

if [ "${1:-}" = --pg-session ]; then
  src=$2
  pg_session "$3" "$4"
  exit
fi

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)

skip() { echo "deb_test: skipped: $*" >&2; exit 77; }
for tool in dpkg-buildpackage dpkg-deb dh lintian git cc readelf pkg-config curl redis-cli; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (the package build and this test need dpkg-dev," \
    "debhelper, lintian, curl and redis-tools: scripts/install-deps.sh)"
done
# postgresql-15-idgen's build: pg_buildext and its debian/control check
[ -f /usr/share/postgresql-common/pgxs_debian_control.mk ] && command -v pg_buildext >/dev/null ||
  skip "postgresql-server-dev-all is not installed (pg_buildext: scripts/install-deps.sh)"
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "$src is not a git work tree"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-deb.XXXXXX")
daemon=""
session=""
cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -KILL "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
  fi
  # the PostgreSQL session stops its server (by its PID) on SIGTERM
  if [ -n "$session" ] && kill -0 "$session" 2>/dev/null; then
    kill -TERM "$session" 2>/dev/null
    wait "$session" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass=0
fail=0
check() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*" >&2; fi; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }
t0=$SECONDS

# ---- the build --------------------------------------------------------------
# The same build as `make deb` (scripts/build-deb.sh: a copy of the working
# tree, dpkg-buildpackage -us -uc -b), its products into $tmp.
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
upstream=${version%-*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
echo "deb_test: scripts/build-deb.sh (idgen $version, $arch)"
built_from=$(git -C "$src" rev-parse --short=12 HEAD) # idgen_build_info's commit, below
if ! "$src/scripts/build-deb.sh" "$tmp" >/dev/null; then
  echo "FAIL: scripts/build-deb.sh" >&2
  fail=$((fail + 1))
  finish
fi
echo "deb_test: built in $((SECONDS - t0)) s"
changes=$tmp/idgen_${version}_${arch}.changes
deb() { echo "$tmp/${1}_${version}_${arch}.deb"; }
packages="idgen libidgen0 libidgen-dev postgresql-15-idgen"
for p in $packages; do check test -f "$(deb $p)"; done

# ---- lintian ----------------------------------------------------------------
# Errors and warnings fail; info tags are shown.  (As root lintian says it
# should not be: that line is dropped.)
if lintian --display-info --fail-on error,warning "$changes" >"$tmp/lintian.out" 2>&1; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: lintian" >&2
fi
grep -v 'running with root privileges' "$tmp/lintian.out" >&2
echo "deb_test: lintian done at $((SECONDS - t0)) s"

# ---- what each package holds ------------------------------------------------
has() {  # has PACKAGE PATH...: the package holds each path (a file or a link)
  local p=$1 f
  shift
  for f in "$@"; do
    grep -qxF "./$f" "$tmp/$p.list" || { echo "$p lacks /$f" >&2; return 1; }
  done
}
lacks() {  # lacks PACKAGE REGEX: no path in the package matches
  ! grep -E "$2" "$tmp/$1.list" >&2
}
for p in $packages; do
  dpkg-deb --fsys-tarfile "$(deb $p)" | tar -t | sed 's,/$,,' >"$tmp/$p.list"
done
lib=usr/lib/$triplet
check has idgen usr/bin/idgen etc/idgen/idgen.env lib/systemd/system/idgen.service \
  usr/share/man/man1/idgen.1.gz usr/share/man/man1/idgen-serve.1.gz \
  usr/share/bash-completion/completions/idgen usr/share/doc/idgen/copyright
check lacks idgen '\.so|\.a$|\.h$|pkgconfig'
check has libidgen0 "$lib/libidgen.so.0" "$lib/libidgen.so.$upstream" \
  usr/share/doc/libidgen0/copyright
check lacks libidgen0 'bin/|\.a$|\.h$|pkgconfig|registry|libidgen\.so$'
check has libidgen-dev usr/include/idgen.h "$lib/libidgen.so" "$lib/libidgen.a" \
  "$lib/libidgen-registry.a" "$lib/pkgconfig/idgen.pc" "$lib/pkgconfig/idgen-registry.pc" \
  usr/share/man/man3/libidgen.3.gz
check lacks libidgen-dev 'bin/|\.so\.|systemd'
# The extension where PostgreSQL 15 looks (Debian's pkglibdir and sharedir:
# module_pathname '$libdir/idgen'), every script of pg/ (idgen--*.sql), and
# no LLVM bitcode (pg/Makefile: with_llvm := no; bitcode would need
# postgresql-15-jit-llvm).
pglib=usr/lib/postgresql/15/lib
pgext=usr/share/postgresql/15/extension
mapfile -t pgscripts < <(cd "$src/pg" && printf '%s\n' idgen--*.sql | sed "s,^,$pgext/,")
check has postgresql-15-idgen "$pglib/idgen.so" "$pgext/idgen.control" "${pgscripts[@]}" \
  usr/share/doc/postgresql-15-idgen/copyright
check lacks postgresql-15-idgen 'bin/|\.a$|\.h$|pkgconfig|systemd|bitcode|libidgen'
# Its Depends: PostgreSQL 15's server (pg_buildext's ${postgresql:Depends}),
# and for every library idgen.so links (its NEEDED entries), the package
# that holds it (${shlibs:Depends}).
pgdeps=$(dpkg-deb -f "$(deb postgresql-15-idgen)" Depends)
echo "deb_test: postgresql-15-idgen Depends: $pgdeps"
depends_on() {  # depends_on PACKAGE: named in the Depends
  grep -qE "(^|, )$1( |,|$)" <<<"$pgdeps" || { echo "Depends lacks $1" >&2; return 1; }
}
check depends_on postgresql-15
# The unit is enabled and started the Debian way (dh_installsystemd).
check grep -q 'deb-systemd-helper' <(dpkg-deb -I "$(deb idgen)" postinst 2>/dev/null)
check grep -q 'deb-systemd-invoke' <(dpkg-deb -I "$(deb idgen)" prerm 2>/dev/null)
check grep -qx /etc/idgen/idgen.env <(dpkg-deb -I "$(deb idgen)" conffiles 2>/dev/null)
# libidgen0's symbols file and shlibs name the package.
check grep -q '^libidgen.so.0 libidgen0' <(dpkg-deb -I "$(deb libidgen0)" symbols 2>/dev/null)

# ---- a fresh tree -----------------------------------------------------------
root=$tmp/root
mkdir "$root"
for p in $packages; do dpkg -x "$(deb $p)" "$root"; done
check grep -qx "ExecStart=/usr/bin/idgen serve" "$root/lib/systemd/system/idgen.service"
# The settings file's examples, uncommented, are settings the daemon takes.
# shellcheck disable=SC2016
check env -i PATH="$PATH" bash -c 'set -a; . <(sed -n "s/^#\(IDGEN_[A-Z_]*=\)/\1/p" "$1")
  [ -n "$IDGEN_NODE" ] && "$2" serve --check-config >/dev/null' _ \
  "$root/etc/idgen/idgen.env" "$root/usr/bin/idgen"
out=$("$root/usr/bin/idgen" --version 2>&1)
echo "deb_test: $out"
check test "$out" = "idgen $upstream"
check gzip -t "$root/usr/share/man/man1/idgen.1.gz"
# The tool links libidgen statically: it needs no libidgen0.
check test -z "$(ldd "$root/usr/bin/idgen" | grep -E 'libidgen')"

# dpkg-buildflags' hardening reached the build (the project's CMakeLists
# keeps CFLAGS and LDFLAGS): PIE, full RELRO, stack protector, fortify.
hardened() {
  readelf -h "$1" | grep -q 'Type:.*DYN' &&
    readelf -lW "$1" | grep -q GNU_RELRO &&
    readelf -dW "$1" | grep -qE 'BIND_NOW|FLAGS.*NOW' &&
    readelf -sW --dyn-syms "$1" | grep -q '__stack_chk_fail' &&
    readelf -sW --dyn-syms "$1" | grep -qE '__[a-z]+_chk'
}
check hardened "$root/usr/bin/idgen"
check hardened "$root/$lib/libidgen.so.0"
# idgen.so too (PGXS links with pg_config's LDFLAGS, -z relro -z now, and
# compiles with the package's CFLAGS, handed over by pg_buildext as COPT).
check hardened "$root/$pglib/idgen.so"

# Every library idgen.so links (NEEDED, found where ldd finds it) is held by
# a package named in postgresql-15-idgen's Depends (${shlibs:Depends}):
# libidgen and jansson are linked in, so libcrypto and libc it should be.
needed_packages_depended() {
  local so path pkg n=0
  for so in $(readelf -dW "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    path=$(ldd "$1" | awk -v so="$so" '$1 == so { print $3 } $1 ~ "/" so "$" { print $1 }' | head -1)
    [ -n "$path" ] || { echo "ldd does not find $so" >&2; return 1; }
    # a merged /usr: dpkg may know the file under /usr
    pkg=$({ dpkg -S "$path" || dpkg -S "/usr$path"; } 2>/dev/null | grep -v '^diversion' | head -1)
    pkg=${pkg%%:*}
    [ -n "$pkg" ] || { echo "no package holds $path ($so)" >&2; return 1; }
    echo "deb_test: idgen.so links $so, from $pkg"
    depends_on "$pkg" || return 1
    n=$((n + 1))
  done
  [ "$n" -ge 2 ] # libc and libcrypto at least
}
check needed_packages_depended "$root/$pglib/idgen.so"

# A short daemon session: ports picked by the daemon (port 0, read back from
# its listen lines), a file: registry of its own.
"$root/usr/bin/idgen" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 \
  --registry "file:$tmp/registry" --node datacenter=1 >"$tmp/serve.log" 2>&1 &
daemon=$!
http=""
resp=""
# listening takes milliseconds; 60 s (600 x 0.1) are for a busy machine
for _ in $(seq 600); do
  http=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/serve.log")
  resp=$(sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$http" ] && [ -n "$resp" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
check test -n "$http"
check test -n "$resp"
if [ -n "$http" ] && [ -n "$resp" ]; then
  id=$(curl -fsS --max-time 60 "http://127.0.0.1:$http/id")
  check grep -qxE '[0-9]{10,20}' <<<"$id"
  decoded=$(curl -fsS --max-time 60 "http://127.0.0.1:$http/decode/$id")
  check grep -q '"datacenter":1' <<<"$decoded"
  ids=$(redis-cli -p "$resp" ID 3)
  check test "$(grep -cxE '[0-9]{10,20}' <<<"$ids")" = 3
  check test "$(redis-cli -p "$resp" PING)" = PONG
  # The copy dpkg-buildpackage built has no .git: build-deb.sh hands the
  # commit over (IDGEN_COMMIT), so /metrics names the source's.
  check grep -qE "^idgen_build_info\{version=\"[0-9.]+\",commit=\"$built_from(-dirty)?\"\} 1\$" \
    <<<"$(curl -fsS --max-time 60 "http://127.0.0.1:$http/metrics")"
fi
kill -TERM "$daemon" 2>/dev/null
for _ in $(seq 300); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon" 2>/dev/null && { echo "the daemon ignored SIGTERM for 30 s" >&2; kill -KILL "$daemon"; }
wait "$daemon"
status=$?
daemon=""
check test "$status" = 0
[ "$status" = 0 ] || tail -20 "$tmp/serve.log" >&2

# ---- a program on the tree's libidgen-dev -----------------------------------
# The .pc files find their prefix from where they are: no sysroot needed.
export PKG_CONFIG_PATH=$root/$lib/pkgconfig
# shellcheck disable=SC2046
check cc -o "$tmp/app" "$src/tests/app.c" $(pkg-config --cflags --libs idgen)
check grep -q "$root/$lib/libidgen.so.0" <(LD_LIBRARY_PATH=$root/$lib ldd "$tmp/app")
check grep -qE '^[0-9]+ 01ARZ3NDEK' <(LD_LIBRARY_PATH=$root/$lib "$tmp/app")

# libidgen-registry comes as its archive only: -lidgen-registry finds it, on
# top of libidgen.so.0, with its dependencies' shared libraries (libpq and
# libcurl are not among them: they are loaded for their registries only),
# with the README's line as it is (no --static).
# shellcheck disable=SC2046
check cc -o "$tmp/leased" "$src/tests/leased.c" $(pkg-config --cflags --libs idgen idgen-registry)
check test -z "$(LD_LIBRARY_PATH=$root/$lib ldd "$tmp/leased" | grep -E 'libpq|libcurl')"
check grep -qxE '[0-9]+' <(LD_LIBRARY_PATH=$root/$lib "$tmp/leased" "file:$tmp/leases")
check test -n "$(find "$tmp/leases" -name '*.lock')"

# ---- installed with dpkg -i, beside an application --------------------------
# In a mount namespace with overlays over /etc, /usr and /var
# (tests/deb_installed.sh): the postinst's user, group and /var/lib/idgen,
# an earlier DynamicUser registry moved back, and the packaged daemon and a
# non-root application on defaults leasing two tuples of one registry.
chmod 0755 "$tmp"
mkdir "$tmp/installed"
LD_LIBRARY_PATH=$root/$lib "$src/tests/deb_installed.sh" "$tmp/installed" "$(deb idgen)" \
  "$(deb libidgen0)" "$tmp/leased"
case $? in
0) pass=$((pass + 1)) ;;
77) echo "deb_test: the installed session was skipped (above)" ;;
*) fail=$((fail + 1)) && echo "FAIL: tests/deb_installed.sh" >&2 ;;
esac

# ---- postgresql-15-idgen installed, used by a throwaway server ---------------
# pg_session (at the top) in a mount namespace of its own: dpkg -i into
# overlays of /etc, /usr and /var, a PostgreSQL 15 server on a loopback port
# it picks, stopped by its PID.  It runs in the background so that this
# script's cleanup can stop it (SIGTERM: it stops its server, then exits).
if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null || ! grep -qw overlay /proc/filesystems; then
  echo "deb_test: the PostgreSQL session was skipped: it needs root, unshare and overlayfs"
else
  mkdir "$tmp/pg-installed"
  unshare --mount --propagation private "$self" --pg-session "$src" "$tmp/pg-installed" \
    "$(deb postgresql-15-idgen)" &
  session=$!
  wait "$session"
  status=$?
  session=""
  case $status in
  0) pass=$((pass + 1)) ;;
  77) echo "deb_test: the PostgreSQL session was skipped (above)" ;;
  *) fail=$((fail + 1)) && echo "FAIL: the PostgreSQL session (postgresql-15-idgen installed)" >&2 ;;
  esac
fi

echo "deb_test: done in $((SECONDS - t0)) s"
finish
