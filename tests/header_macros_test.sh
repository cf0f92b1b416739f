#!/usr/bin/env bash
# header_macros_test.sh SRC -- every public macro idgen.h defines is used by
# tests/header_cxx.cpp, so that the C++ build of that file (the test
# header.cxx) covers each one.  Private names (IDGEN__*, a trailing _) and
# the include guard and export marker are left out.
set -u
src=$1
hdr=$src/include/idgen.h
cxx=$src/tests/header_cxx.cpp
n=0 missing=0
for m in $(sed -nE 's/^[[:space:]]*#[[:space:]]*define[[:space:]]+([A-Za-z_][A-Za-z0-9_]*).*/\1/p' "$hdr" |
  sort -u); do
  case $m in
  IDGEN_H | IDGEN_API | IDGEN__* | *_) continue ;;
  esac
  n=$((n + 1))
  if ! grep -qw -- "$m" "$cxx"; then
    echo "header.macros: $m (include/idgen.h) is not used in tests/header_cxx.cpp" >&2
    missing=$((missing + 1))
  fi
done
[ "$n" -ge 40 ] || { echo "header.macros: found only $n macros in idgen.h" >&2; exit 1; }
echo "header.macros: $n macros, $missing not used"
[ "$missing" = 0 ]
