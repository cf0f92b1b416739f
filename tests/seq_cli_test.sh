#!/usr/bin/env bash
# Black-box tests of `idgen seq`, `idgen seq list` and `idgen seq set` on a
# file: registry in a temporary directory: numbers increase across runs
# (what a run does not print is given back), set moves a counter forward
# only, list's JSON fields, the help texts, bad names and settings refused
# with a message.  Usage: seq_cli_test.sh PATH/TO/idgen
# Ends with the line "N passed, N failed".
set -u
IDGEN=${1:?usage: seq_cli_test.sh PATH/TO/idgen}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
REG=file:$tmp/reg
mkdir -p "$tmp/reg"

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# run ARGS...: status in $rc, stdout in $out, stderr in $err.
run() {
  "$IDGEN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
  out=$(cat "$tmp/out")
  err=$(cat "$tmp/err")
}
# check NAME WANT_RC [STDERR_SUBSTRING]
check() {
  if [ "$rc" != "$2" ]; then
    bad "$1: exit status $rc, want $2 (stderr: $err)"
  elif [ -n "${3-}" ] && [[ $err != *"$3"* ]]; then
    bad "$1: stderr \"$err\" does not say \"$3\""
  else
    ok
  fi
}

# --- numbers increase across runs ------------------------------------------
run seq orders -n 3 --registry "$REG"
check "first run" 0
[ "$out" = $'1\n2\n3' ] && ok || bad "first run printed: $out"
run seq orders -n 2 --registry "$REG"
check "second run" 0
[ "$out" = $'4\n5' ] && ok || bad "second run continues where the first stopped: $out"
prev=5
for i in 1 2 3; do
  run seq orders -n 1000 --registry "$REG"
  first=$(head -1 <<<"$out")
  last=$(tail -1 <<<"$out")
  lines=$(wc -l <<<"$out")
  sorted=$(sort -n -u <<<"$out" | wc -l)
  if [ "$rc" = 0 ] && [ "$lines" = 1000 ] && [ "$sorted" = 1000 ] && [ "$first" -gt "$prev" ]; then
    ok
  else
    bad "run $i of 1000: rc=$rc lines=$lines distinct=$sorted first=$first after $prev"
  fi
  prev=$last
done
# Four runs at once: no number twice.
for i in 1 2 3 4; do
  "$IDGEN" seq orders -n 500 --registry "$REG" >"$tmp/par$i" 2>"$tmp/parerr$i" &
done
wait
total=$(cat "$tmp"/par[1-4] | wc -l)
distinct=$(cat "$tmp"/par[1-4] | sort -u | wc -l)
[ "$total" = 2000 ] && [ "$distinct" = 2000 ] && ok ||
  bad "4 concurrent runs: $total numbers, $distinct distinct ($(cat "$tmp"/parerr*))"

# --- JSON --------------------------------------------------------------------
run seq jsonseq -n 2 --json --registry "$REG"
check "json" 0
[ "$out" = '{"sequence":"jsonseq","numbers":[1,2]}' ] && ok || bad "json output: $out"

# --- business numbers ------------------------------------------------------
run seq invoices --format 'INV-{date:%Y}-{seq:06}' -n 2 --registry "$REG"
check "format" 0
year=$(date -u +%Y)
if [ "$out" = "INV-$year-000001"$'\n'"INV-$year-000002" ]; then ok; else
  bad "business numbers: $out (want INV-$year-000001...)"
fi
run seq invoices --format 'INV-no-seq' --registry "$REG"
check "a template without {seq}" 2 "seq_format"
run seq invoices --format 'INV-{date:%Y}-{seq:06}' --tz Nowhere/Land --registry "$REG"
check "an unknown time zone" 2 "Nowhere/Land"
run seq list --json --registry "$REG"
[[ $out == *"\"key\":\"invoices@$year\""* ]] && ok || bad "the dated counter is invoices@$year: $out"

# --- set: forward only -----------------------------------------------------
run seq set orders 100000 --registry "$REG"
check "set forward" 0
run seq orders --registry "$REG"
[ "$out" = 100000 ] && ok || bad "after set 100000 the next is $out"
run seq set orders 50 --registry "$REG"
check "set backward refused" 1 "forward"
run seq orders --registry "$REG"
[ "$out" = 100001 ] && ok || bad "a refused set moved the counter: next is $out"
run seq set orders --registry "$REG"
check "set without VALUE" 2 "NAME and VALUE"
run seq set orders abc --registry "$REG"
check "set VALUE not a number" 2
run seq set Orders 5 --registry "$REG"
check "set bad name" 2 "Orders"

# --- list --------------------------------------------------------------------
run seq list --json --registry "$REG"
check "list json" 0
python3 - "$out" <<'PY' && ok || bad "list json fields: $out"
import json, sys
rows = [json.loads(l) for l in sys.argv[1].splitlines()]
keys = {r["key"]: r for r in rows}
assert "orders" in keys and "jsonseq" in keys, keys
need = {"registry", "space", "key", "next", "claimed", "issued", "given_back", "lost",
        "strict", "generation", "holders"}
for r in rows:
    assert need <= set(r), set(r)
    assert isinstance(r["holders"], list)
    assert "***" in r["registry"] or "@" not in r["registry"]
assert keys["orders"]["next"] == 100002, keys["orders"]
PY
run seq list --registry "$REG"
check "list text" 0
[[ $out == *"sequence orders"* && $out == *"next"* ]] && ok || bad "list text: $out"
run seq list extra --registry "$REG"
check "list with an argument" 2 "unexpected argument"

# --- names, usage, help --------------------------------------------------------
run seq Bad --registry "$REG"
check "upper-case name" 2 "is not [a-z]"
run seq 9lives --registry "$REG"
check "name starting with a digit" 2 "9lives"
run seq "$(printf 'a%.0s' {1..70})" --registry "$REG"
check "name too long" 2 "is not"
run seq
check "no name" 2 "say a sequence NAME"
run seq -n 3 orders
check "options before the name" 2 "NAME comes first"
run seq orders -n 0 --registry "$REG"
check "count 0" 2 "--count"
run seq orders --seq-prefetch 1.5 --registry "$REG"
check "prefetch out of range" 2 "seq_prefetch"
run seq orders --seq-min-step 0 --registry "$REG"
check "min step 0" 2 "seq_min_step"
run seq orders --nope --registry "$REG"
check "unknown option" 2 "unknown option"
for h in "seq --help" "seq orders --help" "seq list --help" "seq set --help"; do
  # shellcheck disable=SC2086
  run $h
  if [ "$rc" = 0 ] && [[ $out == *"Usage: idgen seq NAME"* && $out == *"--seq-min-step"* &&
    $out == *"Exit status"* ]]; then ok; else bad "$h: rc=$rc"; fi
done
run --help
[[ $out == *"  seq "* ]] && ok || bad "idgen --help does not list seq"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
