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
  idgen_snowflake_gen_t *g;
  idgen_ulid_t u;
  uint64_t id;
  char text[IDGEN_ULID_STRLEN + 1];
  if (idgen_layout_parse(&l, "twitter", NULL, 0) || idgen_snowflake_gen_new(&g, &l, NULL, NULL, 0) ||
      idgen_snowflake_gen_next(g, &id) || idgen_ulid_make(&u, 1469922850259, NULL))
    return 1;
  idgen_ulid_format(&u, text);
  printf("%llu %s\n", (unsigned long long)id, text);
  idgen_snowflake_gen_free(g);
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
# A program that only makes IDs loads no PostgreSQL client (libpq and what
# it pulls: Kerberos, LDAP, GnuTLS...): that is libidgen-registry's.
check test -z "$(env LD_LIBRARY_PATH="$libdir/.." ldd "$tmp/app-shared" | grep -E 'libpq|libidgen-registry')"

# A generator bound to a lease from a file: registry, through libidgen-registry.
cat >"$tmp/leased.c" <<'C'
#include <idgen.h>
#include <stdio.h>
int main(int argc, char **argv) {
  char err[256];
  idgen_layout_t l;
  idgen_registry_t *r;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *g;
  idgen_snowflake_settings_t s;
  uint64_t id;
  if (argc < 2 || idgen_layout_parse(&l, "twitter", NULL, 0) ||
      idgen_registry_open(&r, argv[1], err, sizeof err))
    return 1;
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  if (idgen_registry_acquire(r, &req, &lease, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  idgen_snowflake_settings_init(&s);
  s.lease = lease;
  if (idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err) || idgen_snowflake_gen_next(g, &id)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  printf("%llu\n", (unsigned long long)id);
  idgen_snowflake_gen_free(g);
  idgen_lease_release(lease);
  idgen_registry_close(r);
  return 0;
}
C
# shellcheck disable=SC2046
check cc -o "$tmp/leased-shared" "$tmp/leased.c" $(pkg-config --cflags --libs idgen-registry)
check env LD_LIBRARY_PATH="$libdir/.." "$tmp/leased-shared" "file:$tmp/reg"
check test -n "$(find "$tmp/reg" -name '*.lock')"
# Both archives, with libpq, libcurl, jansson and libcrypto shared (Debian ships no static
# libpgcommon, so a wholly static libpq is not an option there).
# shellcheck disable=SC2046
check cc -o "$tmp/leased-static" "$tmp/leased.c" $(pkg-config --cflags idgen-registry) \
  "$libdir/../libidgen-registry.a" "$libdir/../libidgen.a" $(pkg-config --libs libpq libcurl jansson libcrypto) \
  -lpthread
check "$tmp/leased-static" "file:$tmp/reg"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
