#!/usr/bin/env bash
# Applies the house style (.clang-format) to the C sources, or, with
# --check, lists the files that differ from it and fails (the test `format`).
# The sources are git's C and header files, or every *.c and *.h under src,
# include, pg, tests, bench and fuzz outside a git checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  --check) mode=check ;;
  "") mode=apply ;;
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "format.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
cf=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$cf" ]; then
  echo "format.sh: clang-format not found (Debian package clang-format-14; scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.c' '*.h')
else
  mapfile -t files < <(find src include pg tests bench fuzz js/src -name '*.[ch]' | sort)
fi
if [ "$mode" = apply ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" "$f" | cmp -s - "$f"; then
    echo "format: $f differs from .clang-format (scripts/format.sh applies it; diff: $cf $f | diff $f -)"
    bad=$((bad + 1))
  fi
done
echo "format: ${#files[@]} files, $bad not in the house style"
[ "$bad" -eq 0 ]
