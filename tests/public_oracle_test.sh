#!/usr/bin/env bash
# idgen public against an independent FF1 (tests/public_ff1_oracle.py: SP
# 800-38G's Algorithm 7 written out in Python on the `cryptography`
# package's AES): every kind, both forms, layouts of 20 to 64 bits,
# prefixes of 0, 1 and 63 characters, two key versions; and each public
# form read back with --reverse gives the ID.  Exit 77 (skipped) without
# python3 and cryptography.
set -euo pipefail
idgen=$1
here=$(cd "$(dirname "$0")" && pwd)
python3 -c 'import cryptography' 2>/dev/null || {
  echo "skip: python3 with cryptography is needed"
  exit 77
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
key=$tmp/k.key
"$idgen" public --new-key "$key" >/dev/null
"$idgen" public --new-key "$key" --add >/dev/null # text forms name version 2
fail=0
long=$(printf 'p%.0s' $(seq 62))z # 63 characters

# check KIND LAYOUT BITS PREFIX FORM ID...: the CLI's output, the oracle's,
# and the CLI's --reverse of its own output.
check() {
  local kind=$1 layout=$2 bits=$3 prefix=$4 form=$5
  shift 5
  local args=(--public-key "$key" --kind "$kind" --form "$form")
  [ "$kind" = snowflake ] && args+=(--layout "$layout")
  [ "$prefix" != - ] && args+=(--prefix "$prefix")
  local got want back
  got=$("$idgen" public "${args[@]}" "$@")
  want=$(for id in "$@"; do echo "$kind $bits $prefix $form $id"; done |
    python3 "$here/public_ff1_oracle.py" "$key")
  if [ "$got" != "$want" ]; then
    echo "FAIL: $kind $layout prefix=$prefix form=$form: idgen and the oracle differ"
    diff <(echo "$got") <(echo "$want") | head -5
    fail=1
  fi
  local pubs
  mapfile -t pubs <<<"$got"
  back=$("$idgen" public "${args[@]}" --reverse "${pubs[@]}")
  local ids
  ids=$(printf '%s\n' "$@")
  if [ "$kind" = uuid7 ]; then ids=${ids,,}; fi
  if [ "$back" != "$ids" ]; then
    echo "FAIL: $kind $layout prefix=$prefix form=$form: --reverse does not give the IDs"
    fail=1
  fi
}

small='time:12@1s,sequence:8,epoch=0'
mapfile -t snow < <("$idgen" snowflake -n 3)
mapfile -t ulids < <("$idgen" ulid -n 3)
mapfile -t uuids < <("$idgen" uuid7 -n 4)
for prefix in - a "$long"; do
  for form in int text; do
    [ "$prefix" != - ] && [ "$form" = int ] && continue
    check snowflake twitter 63 "$prefix" "$form" 0 1 123456789 9223372036854775807 \
      "${snow[@]}"
    check snowflake discord 64 "$prefix" "$form" 0 18446744073709551615 12345678901234567890
    check snowflake js53 53 "$prefix" "$form" 0 9007199254740991 4503599627370496
    check snowflake "$small" 20 "$prefix" "$form" 0 1 1048575 524288
    check ulid - 0 "$prefix" "$form" 00000000000000000000000000 7ZZZZZZZZZZZZZZZZZZZZZZZZZ \
      "${ulids[@]}"
    check uuid7 - 0 "$prefix" "$form" "${uuids[@]}" \
      ffffffff-ffff-7fff-bfff-ffffffffffff 00000000-0000-7000-8000-000000000000
  done
done
# Sweeps, one oracle run: every prefix length 1..63 (the tweak's tail moves
# through the MAC's last block) for Snowflake and ULID texts, and every
# layout size 20..64 in both forms.
cases=$tmp/cases
u=${ulids[0]}
: >"$cases"
: >"$tmp/got"
for n in $(seq 63); do
  p=$(printf 'b%.0s' $(seq "$n"))
  echo "snowflake 63 $p text 987654321" >>"$cases"
  echo "ulid 0 $p text $u" >>"$cases"
  "$idgen" public --public-key "$key" --prefix "$p" 987654321 >>"$tmp/got"
  "$idgen" public --public-key "$key" --kind ulid --prefix "$p" "$u" >>"$tmp/got"
done
for bits in $(seq 20 64); do
  layout="time:$((bits - 12))@1s,sequence:12,epoch=0"
  id=$(python3 -c "import random; print(random.getrandbits($bits))")
  for form in int text; do
    echo "snowflake $bits - $form $id" >>"$cases"
    "$idgen" public --public-key "$key" --layout "$layout" --form "$form" "$id" >>"$tmp/got"
  done
done
python3 "$here/public_ff1_oracle.py" "$key" <"$cases" >"$tmp/want"
if ! diff -q "$tmp/got" "$tmp/want" >/dev/null; then
  echo "FAIL: the sweeps of prefix lengths and layout sizes differ from the oracle:"
  paste -d'|' "$cases" "$tmp/got" "$tmp/want" | awk -F'|' '$2 != $3' | head -5
  fail=1
fi

[ "$fail" = 0 ] && echo "ok: idgen public agrees with the independent FF1"
exit "$fail"
