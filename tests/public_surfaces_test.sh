#!/usr/bin/env bash
# The same key file, layout and prefix give the same public IDs in every
# surface that makes them here: idgen public, the Python package (Public)
# and the Node addon (Public), for Snowflake IDs of several layouts, ULIDs
# and UUIDv7s, integer and text forms, with and without a prefix; and each
# surface reads back the others' forms.  (The daemon and the extension are
# checked against idgen public by serve.public and pg.public.)  A surface
# not built is skipped; exit 77 when neither is.
#   public_surfaces_test.sh IDGEN BUILD_DIR
set -euo pipefail
idgen=$1
build=$2
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
key=$tmp/k.key
"$idgen" public --new-key "$key" >/dev/null
"$idgen" public --new-key "$key" --add >/dev/null

# The cases: kind layout prefix form id (one a line); '-' for none.
cases=$tmp/cases
long=$(printf 'q%.0s' $(seq 62))z
{
  for id in 0 1 123456789 9223372036854775807 $("$idgen" snowflake -n 2); do
    for p in - user "$long"; do
      [ "$p" = - ] && echo "snowflake twitter - int $id"
      echo "snowflake twitter $p text $id"
    done
  done
  for id in 0 9007199254740991 4503599627370497; do
    echo "snowflake js53 - int $id"
    echo "snowflake js53 user text $id"
    echo "snowflake discord order_line text $id"
  done
  for id in 18446744073709551615 12345678901234567890; do
    echo "snowflake discord - int $id"
    echo "snowflake mastodon a text $id"
  done
  for id in $("$idgen" ulid -n 2) 00000000000000000000000000 7ZZZZZZZZZZZZZZZZZZZZZZZZZ; do
    echo "ulid - - int $id"
    echo "ulid - - text $id"
    echo "ulid - user text $id"
  done
  for id in $("$idgen" uuid7 -n 2) 00000000-0000-7000-8000-000000000000; do
    echo "uuid7 - - int $id"
    echo "uuid7 - - text $id"
    echo "uuid7 - order text $id"
  done
} >"$cases"

# idgen public: the reference.
while read -r kind layout prefix form id; do
  args=(--public-key "$key" --kind "$kind" --form "$form")
  [ "$layout" != - ] && args+=(--layout "$layout")
  [ "$prefix" != - ] && args+=(--prefix "$prefix")
  "$idgen" public "${args[@]}" "$id"
done <"$cases" >"$tmp/cli"

fail=0 ran=0
compare() { # NAME FILE
  if diff -q "$tmp/cli" "$2" >/dev/null; then
    echo "ok: $1 gives idgen public's $(wc -l <"$2") public forms, and reads them back"
  else
    echo "FAIL: $1 and idgen public differ:"
    paste -d'|' "$cases" "$tmp/cli" "$2" | awk -F'|' '$2 != $3' | head -5
    fail=1
  fi
}

pydir=$build/python
if [ -d "$pydir/idgen" ] && PYTHONPATH=$pydir python3 -c 'import idgen; idgen.Public' 2>/dev/null; then
  ran=1
  PYTHONPATH=$pydir python3 - "$key" "$cases" "$tmp/cli" >"$tmp/py" <<'PY'
import sys, uuid
import idgen
key, cases, cli = sys.argv[1], sys.argv[2], open(sys.argv[3]).read().split("\n")
for n, line in enumerate(open(cases)):
    kind, layout, prefix, form, i = line.split()
    kw = {"kind": kind, "prefix": "" if prefix == "-" else prefix}
    if layout != "-":
        kw["layout"] = layout
    p = idgen.Public(key, **kw)
    v = int(i) if kind == "snowflake" else uuid.UUID(i) if kind == "uuid7" else i
    out = p.map(v) if form == "int" else p.format(v)
    out = str(out)
    print(out)
    # The CLI's form read back here gives the ID.
    theirs = cli[n]
    if form == "int":
        back = p.unmap(int(theirs) if kind == "snowflake" else uuid.UUID(theirs) if kind == "uuid7" else theirs)
    else:
        back = p.parse(theirs)
    if str(back).upper() != i.upper():
        print("python read %s back as %s, not %s" % (theirs, back, i), file=sys.stderr)
        sys.exit(1)
PY
  compare "the Python package" "$tmp/py"
else
  echo "skip: the Python package is not built ($pydir)"
fi

addon=$build/js/idgen.node
if [ -f "$addon" ] && command -v node >/dev/null; then
  ran=1
  IDGEN_NODE_ADDON=$addon node - "$src/js/index.js" "$key" "$cases" "$tmp/cli" >"$tmp/js" <<'JS'
const fs = require('fs');
const [index, key, cases, cliFile] = process.argv.slice(2);
const { Public } = require(index);
const cli = fs.readFileSync(cliFile, 'utf8').split('\n');
fs.readFileSync(cases, 'utf8').trim().split('\n').forEach((line, n) => {
  const [kind, layout, prefix, form, id] = line.split(' ');
  const o = { keyFile: key, kind };
  if (prefix !== '-') o.prefix = prefix;
  if (layout !== '-') o.layout = layout;
  const p = new Public(o);
  const v = kind === 'snowflake' ? BigInt(id) : id;
  console.log(String(form === 'int' ? p.map(v) : p.format(v)));
  const theirs = cli[n];
  const back = form === 'int' ? p.unmap(kind === 'snowflake' ? BigInt(theirs) : theirs) : p.parse(theirs);
  if (String(back).toUpperCase() !== id.toUpperCase()) {
    console.error(`node read ${theirs} back as ${back}, not ${id}`);
    process.exit(1);
  }
});
JS
  compare "the Node addon" "$tmp/js"
else
  echo "skip: the Node addon is not built ($addon)"
fi
[ "$ran" = 1 ] || exit 77
exit "$fail"
