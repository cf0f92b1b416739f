#!/usr/bin/env bash
# settings-doc.sh IDGEN [--check]: docs/SERVE.md's settings table is made by
# `IDGEN serve --settings-markdown` from the one settings table
# (src/common/settings.c).  Rewrites the table between its two marker lines,
# or with --check fails (exit 1, with a diff) when the file is stale.
set -eu
idgen=${1:?usage: settings-doc.sh PATH/TO/idgen [--check]}
mode=${2:-write}
doc=$(cd "$(dirname "$0")/.." && pwd)/docs/SERVE.md
new=$(mktemp)
trap 'rm -f "$new"' EXIT
table=$("$idgen" serve --settings-markdown)
TABLE=$table awk '
  BEGIN { table = ENVIRON["TABLE"] }  # not -v, which would read backslashes
  /^<!-- settings table:/ { print; print table; skip = 1; next }
  /^<!-- end of settings table -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$new"
grep -q '^<!-- end of settings table -->' "$new" || { echo "settings-doc: no markers in $doc" >&2; exit 1; }
if [ "$mode" = --check ]; then
  if ! diff -u "$doc" "$new"; then
    echo "settings-doc: docs/SERVE.md's settings table is stale: run scripts/settings-doc.sh $idgen" >&2
    exit 1
  fi
  echo "settings-doc: docs/SERVE.md matches the settings table"
else
  cat "$new" >"$doc"
fi
