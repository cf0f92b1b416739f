#!/usr/bin/env bash
# keeper_off_test.sh -- the library built with -DIDGEN_KEEPER=OFF (no lease
# keeper, no cached generator: src/core/keeper_none.c in their place, from
# cmake/sources.cmake's lists) exports exactly the symbols of the full
# build, and refuses what needs the keeper with a message that says so.
#
#   tests/keeper_off_test.sh BUILD_DIR
#
# Configures and builds only the libraries, in a directory of its own under
# /tmp (removed at the end).  Exit status: 0 passed, 1 failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: keeper_off_test.sh BUILD_DIR}" && pwd)
work=$(mktemp -d /tmp/idgen-nokeeper-XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=0
check() { # check WHAT CONDITION_RC DETAIL
  if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1: $3" >&2; failed=1; fi
}

cmake -S "$ROOT" -B "$work/b" -DIDGEN_KEEPER=OFF -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
  >"$work/configure.log" 2>&1 || { cat "$work/configure.log" >&2; exit 1; }
cmake --build "$work/b" -j 2 --target idgen_shared idgen_static >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log" >&2; exit 1; }

syms() { nm -D --defined-only "$1" | awk '{print $3}' | sort; }
syms "$BUILD/libidgen.so" >"$work/full"
syms "$work/b/libidgen.so" >"$work/off"
rc=0
d=$(diff "$work/full" "$work/off") || rc=1
check "IDGEN_KEEPER=OFF exports the full build's $(wc -l <"$work/full") symbols, no more, no fewer" \
  "$rc" "$d"
members=$(ar t "$work/b/libidgen.a" | tr '\n' ' ')
rc=0
[[ " $members" != *" lease_keeper.c.o "* && " $members" != *" cached.c.o "* &&
  " $members" == *" keeper_none.c.o "* ]] || rc=1
check "IDGEN_KEEPER=OFF builds keeper_none.c in place of lease_keeper.c and cached.c" "$rc" "$members"

# A program on that library: a generator without a lease works, a cache is
# refused, saying why.
cat >"$work/app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <idgen.h>
int main(void) {
  idgen_layout_t l;
  char err[256];
  if (idgen_layout_parse(&l, "twitter", err, sizeof err) < 0) return 2;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  idgen_snowflake_gen_t *g;
  uint64_t id;
  if (idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err) < 0 || idgen_snowflake_gen_next(g, &id) < 0) {
    printf("snowflake: %s\n", err);
    return 1;
  }
  idgen_cached_gen_t *c;
  int rc = idgen_cached_gen_new(&c, g, NULL, err, sizeof err);
  printf("id %llu cached %d %s\n", (unsigned long long)id, rc, err);
  idgen_snowflake_gen_free(g);
  return rc < 0 && strstr(err, "IDGEN_KEEPER=OFF") ? 0 : 1;
}
C
rc=0
out=$(cc -std=c11 -I"$ROOT/include" "$work/app.c" "$work/b/libidgen.a" -lcrypto -lpthread -o "$work/app" 2>&1 &&
  "$work/app" 2>&1) || rc=$?
check "IDGEN_KEEPER=OFF: a Snowflake ID, and the cached generator refused naming IDGEN_KEEPER=OFF" \
  "$rc" "$out"
exit "$failed"
