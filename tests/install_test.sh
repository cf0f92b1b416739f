#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a program against it
# with pkg-config, linked shared and static.  Usage: install_test.sh BUILD_DIR
# Ends with the line "N passed, N failed".
set -u
build=${1:?usage: install_test.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
check() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*" >&2; fi; }

cmake --install "$build" --prefix "$tmp/usr" >/dev/null
libdir=$(find "$tmp/usr" -name 'idgen.pc' -printf '%h\n' | head -1)
check test -n "$libdir"
export PKG_CONFIG_PATH="$libdir"
check test -f "$tmp/usr/include/idgen.h"
check test -x "$tmp/usr/bin/idgen"
check test -n "$(find "$tmp/usr" -name 'libidgen.a')"
check test -n "$(find "$tmp/usr" -name 'libidgen.so*')"

cat >"$tmp/app.c" <<'C'
#include <idgen.h>
#include <stdio.h>
int main(void) {
  idgen_layout_t l;
  idgen_snowflake_t *g;
  idgen_ulid_t u;
  uint64_t id;
  char text[IDGEN_ULID_STRLEN + 1];
  if (idgen_layout_parse(&l, "twitter", NULL, 0) || idgen_snowflake_new(&g, &l, NULL, NULL, 0) ||
      idgen_snowflake_next(g, &id) || idgen_ulid_new(&u, 1469922850259, NULL))
    return 1;
  idgen_ulid_encode(&u, text);
  printf("%llu %s\n", (unsigned long long)id, text);
  idgen_snowflake_free(g);
  return 0;
}
C
# shellcheck disable=SC2046
check cc -o "$tmp/app-shared" "$tmp/app.c" $(pkg-config --cflags --libs idgen)
check env LD_LIBRARY_PATH="$libdir/.." "$tmp/app-shared"
# shellcheck disable=SC2046
check cc -o "$tmp/app-static" "$tmp/app.c" $(pkg-config --cflags idgen) "$libdir/../libidgen.a" \
  $(pkg-config --libs-only-l --static idgen | sed 's/-lidgen//')
check "$tmp/app-static"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
