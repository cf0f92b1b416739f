#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a program against it
# with pkg-config, linked shared and static; checks the man pages, the bash
# completion and the systemd unit installed beside it; uninstalls (`make
# uninstall`'s dist/uninstall.cmake) and checks that only what was there
# before is left.  Then the same with DESTDIR, through the top-level Makefile.
# Usage: install_test.sh BUILD_DIR.  Ends with the line "N passed, N failed".
set -u
build=$(cd "${1:?usage: install_test.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
# The build directory's record of its last install is the developer's: put
# it aside for this test, and back afterwards.
mkdir "$tmp/saved"
for f in install_manifest.txt install_dirs.txt; do
  [ -f "$build/$f" ] && mv "$build/$f" "$tmp/saved/"
done
restore() {
  rm -f "$build/install_manifest.txt" "$build/install_dirs.txt"
  for f in "$tmp"/saved/*; do [ -f "$f" ] && mv "$f" "$build/"; done
  rm -rf "$tmp"
}
trap restore EXIT
pass=0
fail=0
check() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*" >&2; fi; }

# What was there before the install stays after the uninstall: an empty
# include directory and another package's man page.
mkdir -p "$tmp/usr/include" "$tmp/usr/share/man/man1"
echo '.TH OTHER 1' >"$tmp/usr/share/man/man1/other.1"
before=$(cd "$tmp/usr" && find . | sort)

cmake --install "$build" --prefix "$tmp/usr" >/dev/null
libdir=$(find "$tmp/usr" -name 'idgen.pc' -printf '%h\n' | head -1)
check test -n "$libdir"
export PKG_CONFIG_PATH="$libdir"
check test -f "$tmp/usr/include/idgen.h"
check test -x "$tmp/usr/bin/idgen"
check test -n "$(find "$tmp/usr" -name 'libidgen.a')"
check test -n "$(find "$tmp/usr" -name 'libidgen.so*')"

# shellcheck disable=SC2046
check cc -o "$tmp/app-shared" "$src/tests/app.c" $(pkg-config --cflags --libs idgen)
check env LD_LIBRARY_PATH="$libdir/.." "$tmp/app-shared"
# shellcheck disable=SC2046
check cc -o "$tmp/app-static" "$src/tests/app.c" $(pkg-config --cflags idgen) "$libdir/../libidgen.a" \
  $(pkg-config --libs-only-l --static idgen | sed 's/-lidgen//')
check "$tmp/app-static"
# A program that only makes IDs loads no PostgreSQL client (libpq and what
# it pulls: Kerberos, LDAP, GnuTLS...): that is libidgen-registry's.
check test -z "$(env LD_LIBRARY_PATH="$libdir/.." ldd "$tmp/app-shared" | grep -E 'libpq|libidgen-registry')"

# The README's program, as the README shows it, built with the line it gives.
awk '/^## The library/ { lib = 1 } lib && /^```c$/ { on = 1; next } on && /^```$/ { exit } on' \
  "$src/README.md" >"$tmp/readme-app.c"
check grep -q 'int main' "$tmp/readme-app.c"
# shellcheck disable=SC2046
check cc -Wall -Werror -o "$tmp/readme-app" "$tmp/readme-app.c" $(pkg-config --cflags --libs idgen)
check grep -qxE '[0-9]+' <(LD_LIBRARY_PATH="$libdir/.." "$tmp/readme-app")

# A generator bound to a lease from a file: registry, through libidgen-registry,
# with the README's line.
# shellcheck disable=SC2046
check cc -o "$tmp/leased-shared" "$src/tests/leased.c" $(pkg-config --cflags --libs idgen idgen-registry)
check env LD_LIBRARY_PATH="$libdir/.." "$tmp/leased-shared" "file:$tmp/reg"
check test -n "$(find "$tmp/reg" -name '*.lock')"
# Both archives, with jansson and libcrypto shared: libpq and libcurl are not linked (a
# postgres:// or etcd:// registry loads them when it is opened).
# shellcheck disable=SC2046
check cc -o "$tmp/leased-static" "$src/tests/leased.c" $(pkg-config --cflags idgen-registry) \
  "$libdir/../libidgen-registry.a" "$libdir/../libidgen.a" $(pkg-config --libs jansson libcrypto) \
  -lpthread -ldl
check test -z "$(ldd "$tmp/leased-static" | grep -E 'libpq|libcurl')"
check "$tmp/leased-static" "file:$tmp/reg"

# ---- the binary, the man pages, the completion, the unit ---------------------
check test "$("$tmp/usr/bin/idgen" --version)" = "idgen $(sed -n 's/^#define IDGEN_VERSION_STRING "\(.*\)"/\1/p' "$src/include/idgen.h")"
man1=$tmp/usr/share/man/man1
man3=$tmp/usr/share/man/man3
for page in "$man1/idgen.1" "$man1/idgen-serve.1" "$man3/libidgen.3"; do
  check test -f "$page"
  check test "$(MANWIDTH=80 man -l "$page" 2>&1 | grep -c .)" -gt 40
done
# man finds them by name in the prefix's manual.
check test "$(man --manpath="$tmp/usr/share/man" -w idgen-serve 2>/dev/null)" = "$man1/idgen-serve.1"
check test "$(man --manpath="$tmp/usr/share/man" -w 3 libidgen 2>/dev/null)" = "$man3/libidgen.3"
# libidgen(3)'s example compiles against the installed header and library, and runs.
MANWIDTH=200 man -l "$man3/libidgen.3" 2>/dev/null |
  awk '/^EXAMPLES$/ { f = 1; next } /^[A-Z]/ { f = 0 } f' >"$tmp/example.c"
check grep -q 'idgen_snowflake_gen_next' "$tmp/example.c"
# shellcheck disable=SC2046
check cc -o "$tmp/example" "$tmp/example.c" $(pkg-config --cflags --libs idgen)
check test -n "$(env LD_LIBRARY_PATH="$libdir/.." "$tmp/example" | grep -xE '[0-9]{15,20}')"

completion=$tmp/usr/share/bash-completion/completions/idgen
check test -f "$completion"
check test "$(bash -c 'source "$1"; COMP_WORDS=("$2" sn); COMP_CWORD=1; _idgen; echo "${COMPREPLY[*]}"' \
  _ "$completion" "$tmp/usr/bin/idgen")" = snowflake

unit=$tmp/usr/lib/systemd/system/idgen.service
check test -f "$unit"
check grep -qx "ExecStart=$tmp/usr/bin/idgen serve" "$unit"
check grep -qx "EnvironmentFile=-$tmp/usr/etc/idgen/idgen.env" "$unit"
check grep -qx 'Type=notify' "$unit"
check test -z "$(grep -n '@[A-Z_]*@' "$unit")"
# The unit's user and the host's registry: sysusers.d and tmpfiles.d files.
check grep -q '^u idgen ' "$tmp/usr/lib/sysusers.d/idgen.conf"
check grep -q '^d /var/lib/idgen 2770 idgen idgen' "$tmp/usr/lib/tmpfiles.d/idgen.conf"

# ---- uninstall: every file, and the directories the install made -------------
check test -f "$build/install_manifest.txt"
cmake -DBUILD="$build" -P "$src/dist/uninstall.cmake" >/dev/null
after=$(cd "$tmp/usr" && find . | sort)
check test "$after" = "$before"
[ "$after" = "$before" ] || diff <(echo "$before") <(echo "$after") >&2
check test ! -e "$build/install_manifest.txt"

# ---- make install / make uninstall with DESTDIR --------------------------------
# The unit names the final paths, not the staging directory.
make -s -C "$src" install BUILD="$build" DESTDIR="$tmp/stage" PREFIX=/opt/idgen >/dev/null
check test -x "$tmp/stage/opt/idgen/bin/idgen"
check test -f "$tmp/stage/opt/idgen/share/man/man1/idgen-serve.1"
check grep -qx "ExecStart=/opt/idgen/bin/idgen serve" "$tmp/stage/opt/idgen/lib/systemd/system/idgen.service"
check grep -qx "EnvironmentFile=-/etc/opt/idgen/idgen/idgen.env" \
  "$tmp/stage/opt/idgen/lib/systemd/system/idgen.service"
make -s -C "$src" uninstall BUILD="$build" >/dev/null
check test ! -e "$tmp/stage"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
