#!/usr/bin/env bash
# Public IDs through the idgen command: `idgen public` both ways for each
# kind (Snowflake twitter and js53, integer and text forms; ULID; UUIDv7 to
# a UUIDv4), from arguments and standard input, with a prefix; the public
# forms of `idgen snowflake`, `idgen ulid` and `idgen uuid7 --public-key`
# turned back; the errors (a wrong key, another prefix, a malformed text, a
# key file others may read, --new-key over a file); --add and old text forms;
# and that a key's hex never shows: in any output of any command run here,
# in the command line (ps, /proc/PID/cmdline) or the environment of a
# running `idgen public -`.  Usage: cli_public_test.sh PATH/TO/idgen.  Ends
# with the line "N passed, N failed".
set -u
IDGEN=${1:?usage: cli_public_test.sh PATH/TO/idgen}
pass=0
fail=0
tmp=$(mktemp -d)
bgpid=""
cleanup() {
  [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
unset IDGEN_PUBLIC_KEY

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
check() { # check NAME COMMAND...: passes when the command succeeds
  local name=$1
  shift
  if "$@"; then ok; else bad "$name"; fi
}

# run ARGS...: idgen with its stdout in $tmp/out, its stderr in $tmp/err,
# its status in $rc; both outputs are kept in $tmp/all.log for the key
# search at the end.
run() {
  "$IDGEN" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  cat "$tmp/out" "$tmp/err" >>"$tmp/all.log"
}
# runin FILE ARGS...: the same with standard input from FILE.
runin() {
  local in=$1
  shift
  "$IDGEN" "$@" <"$in" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  cat "$tmp/out" "$tmp/err" >>"$tmp/all.log"
}
# want_rc NAME RC: the last run's status.
want_rc() {
  if [ "$rc" = "$2" ]; then ok; else bad "$1: exit status $rc, want $2 (stderr: $(cat "$tmp/err"))"; fi
}
# err_has NAME TEXT: the last run's stderr holds TEXT (fixed string).
err_has() {
  if grep -qiF -- "$2" "$tmp/err"; then ok; else bad "$1: stderr lacks '$2': $(cat "$tmp/err")"; fi
}

K=$tmp/a.key
K2=$tmp/b.key
# ---- key files ----------------------------------------------------------------
run public --new-key "$K"
want_rc "new-key" 0
check "new-key says the file, version 1 and the mode" \
  grep -qxF "$K: key version 1 written (mode 0600)" "$tmp/out"
check "new-key file is mode 600" test "$(stat -c %a "$K")" = 600
run public --new-key "$K2"
want_rc "second key" 0
cp "$K" "$tmp/before"
run public --new-key "$K"
want_rc "new-key over an existing file" 1
check "new-key over an existing file leaves it" cmp -s "$K" "$tmp/before"

# ---- Snowflake twitter: integer form, arguments and stdin ---------------------
run snowflake -n 2000
want_rc "snowflake" 0
cp "$tmp/out" "$tmp/ids"
runin "$tmp/ids" public --public-key "$K" -
want_rc "twitter int from stdin" 0
cp "$tmp/out" "$tmp/pub"
check "twitter int: one per ID" test "$(wc -l <"$tmp/pub")" = 2000
check "twitter int: distinct" test "$(sort -u "$tmp/pub" | wc -l)" = 2000
check "twitter int: not the IDs" test "$(comm -12 <(sort "$tmp/ids") <(sort "$tmp/pub") | wc -l)" = 0
check "twitter int: not in order" test "$(sort -n "$tmp/pub" | cmp -s - "$tmp/pub" && echo same)" = ""
# below 2^63 = 9223372036854775808 (19 digits): as numbers, with awk-free compare
check "twitter int: below 2^63" \
  test "$(python3 -c 'import sys; print(max(int(l) for l in open(sys.argv[1])) < 2**63)' "$tmp/pub")" = True
runin "$tmp/pub" public --public-key "$K" --reverse
want_rc "twitter int reversed" 0
check "twitter int: back to the IDs" cmp -s "$tmp/out" "$tmp/ids"
one=$(head -1 "$tmp/ids")
run public --public-key "$K" "$one"
check "twitter int from an argument is the same as from stdin" test "$(cat "$tmp/out")" = "$(head -1 "$tmp/pub")"
IDGEN_PUBLIC_KEY=$K run public "$one"
check "IDGEN_PUBLIC_KEY names the key file" test "$(cat "$tmp/out")" = "$(head -1 "$tmp/pub")"
run public --public-key "$K2" "$one"
check "another key gives another public ID" test "$(cat "$tmp/out")" != "$(head -1 "$tmp/pub")"

# ---- Snowflake twitter: text form with a prefix ---------------------------------
runin "$tmp/ids" public --public-key "$K" --prefix order
want_rc "twitter text" 0
cp "$tmp/out" "$tmp/text"
check "twitter text: order_ and 17 characters" \
  test "$(grep -cxE 'order_[0-9a-hjkmnp-tv-z]{17}' "$tmp/text")" = 2000
check "twitter text: distinct" test "$(sort -u "$tmp/text" | wc -l)" = 2000
runin "$tmp/text" public --public-key "$K" --reverse --prefix order
want_rc "twitter text reversed" 0
check "twitter text: back to the IDs" cmp -s "$tmp/out" "$tmp/ids"
t1=$(head -1 "$tmp/text")
run public --public-key "$K" --reverse --prefix user "$t1"
want_rc "another prefix refused" 1
err_has "another prefix: the input named" "\"$t1\""
run public --public-key "$K" --reverse "$t1"
want_rc "a prefix where none is expected refused" 1
run public --public-key "$K2" --reverse --prefix order "$t1"
want_rc "wrong key refused" 1
err_has "wrong key: the input named" "\"$t1\""
check "wrong key: no ID printed" test ! -s "$tmp/out"
# One character changed (the last), and a character outside the alphabet.
last=${t1: -1}
alt=${t1:0:${#t1}-1}$([ "$last" = 0 ] && echo 1 || echo 0)
run public --public-key "$K" --reverse --prefix order "$alt"
want_rc "altered text refused" 1
run public --public-key "$K" --reverse --prefix order "${t1:0:${#t1}-1}u"
want_rc "a character outside the alphabet refused" 1
run public --public-key "$K" --reverse --prefix order "order_0abc"
want_rc "a short text refused" 1
# A bad input among good ones: named, the others printed, status 1.
run public --public-key "$K" --reverse --prefix order "$t1" 'order_x"y' "$(sed -n 2p "$tmp/text")"
want_rc "bad among good" 1
check "bad among good: the good ones printed" test "$(cat "$tmp/out")" = "$(head -2 "$tmp/ids")"
err_has "bad among good: the bad one quoted" '"order_x\x22y"'
# A prefix with '_' in it.
run public --public-key "$K" --prefix my_order "$one"
want_rc "a prefix with '_'" 0
check "a prefix with '_': its text form" grep -qxE 'my_order_[0-9a-z]{17}' "$tmp/out"
run public --public-key "$K" --reverse --prefix my_order "$(cat "$tmp/out")"
check "a prefix with '_': back" test "$(cat "$tmp/out")" = "$one"
run public --public-key "$K2" --reverse --kind ulid "$(head -1 "$tmp/text" | sed 's/^order_//')"
want_rc "a Snowflake text form given as a ULID refused" 1
run public --public-key "$K" "not-an-id"
want_rc "malformed ID" 1
err_has "malformed ID named" '"not-an-id"'
run public --public-key "$K" --reverse --form int "$t1"
want_rc "a text form given as int refused" 1

# ---- js53 --------------------------------------------------------------------
run snowflake --layout js53 -n 2000
cp "$tmp/out" "$tmp/js"
runin "$tmp/js" public --public-key "$K" --layout js53
want_rc "js53 int" 0
cp "$tmp/out" "$tmp/jspub"
check "js53 int: below 2^53" \
  test "$(python3 -c 'import sys; print(max(int(l) for l in open(sys.argv[1])) < 2**53)' "$tmp/jspub")" = True
check "js53 int: distinct" test "$(sort -u "$tmp/jspub" | wc -l)" = 2000
runin "$tmp/jspub" public --public-key "$K" --layout js53 -r
check "js53 int: back" cmp -s "$tmp/out" "$tmp/js"
runin "$tmp/js" public --public-key "$K" --layout js53 --form text
want_rc "js53 text" 0
cp "$tmp/out" "$tmp/jstext"
check "js53 text: 17 characters" test "$(grep -cxE '[0-9a-hjkmnp-tv-z]{17}' "$tmp/jstext")" = 2000
runin "$tmp/jstext" public --public-key "$K" --layout js53 -r
check "js53 text: back" cmp -s "$tmp/out" "$tmp/js"
runin "$tmp/jstext" public --public-key "$K" -r
want_rc "js53 text read as twitter refused (bits in the tweak)" 1
run public --public-key "$K" --layout js53 9007199254740992
want_rc "js53: an ID of 2^53 refused" 1
err_has "js53: 2^53 says the bits" "2^53"

# ---- idgen snowflake --public-key ----------------------------------------------
run snowflake -n 500 --public-key "$K"
want_rc "snowflake --public-key" 0
cp "$tmp/out" "$tmp/sfpub"
runin "$tmp/sfpub" public --public-key "$K" -r
want_rc "snowflake --public-key reversed" 0
check "snowflake --public-key: back to increasing IDs" sort -n -C "$tmp/out"
check "snowflake --public-key: 500 distinct" test "$(sort -u "$tmp/out" | wc -l)" = 500
# text forms: the generator's batches (up to 4096) made as one batch each
run snowflake -n 9000 --public-key "$K" --public-form text
cp "$tmp/out" "$tmp/sfpub"
check "snowflake -n 9000 text: 17 characters each" test "$(grep -cxE '[0-9a-z]{17}' "$tmp/sfpub")" = 9000
runin "$tmp/sfpub" public --public-key "$K" -r
want_rc "snowflake -n 9000 text reversed" 0
check "snowflake -n 9000 text: back to increasing IDs" sort -n -C -u "$tmp/out"
check "snowflake -n 9000 text: 9000 back" test "$(wc -l <"$tmp/out")" = 9000
IDGEN_PUBLIC_KEY=$K run snowflake -n 3 --public-prefix order --json
want_rc "snowflake IDGEN_PUBLIC_KEY, prefix, json" 0
check "snowflake --json text forms" grep -qE '^\{"ids":\["order_[0-9a-z]{17}","order_[0-9a-z]{17}","order_[0-9a-z]{17}"\]\}$' "$tmp/out"
run snowflake --public-prefix order
want_rc "a prefix without a key refused" 2
run snowflake --public-key "$K" --public-prefix 'Order'
want_rc "an invalid prefix refused" 2

# ---- ULID ------------------------------------------------------------------------
run ulid -n 500 --monotonic
cp "$tmp/out" "$tmp/ulid"
runin "$tmp/ulid" public --public-key "$K"
want_rc "ulid int" 0
cp "$tmp/out" "$tmp/ulidpub"
check "ulid int: 26 characters" test "$(grep -cxE '[0-9A-HJKMNP-TV-Z]{26}' "$tmp/ulidpub")" = 500
check "ulid int: not the ULIDs" test "$(comm -12 <(sort "$tmp/ulid") <(sort "$tmp/ulidpub") | wc -l)" = 0
runin "$tmp/ulidpub" public --public-key "$K" -r
check "ulid int: back" cmp -s "$tmp/out" "$tmp/ulid"
runin "$tmp/ulid" public --public-key "$K" --prefix user
cp "$tmp/out" "$tmp/ulidtext"
check "ulid text: user_ and 30 characters" test "$(grep -cxE 'user_[0-9a-hjkmnp-tv-z]{30}' "$tmp/ulidtext")" = 500
runin "$tmp/ulidtext" public --public-key "$K" -r --prefix user
check "ulid text: back (tried as UUIDv7 first)" cmp -s "$tmp/out" "$tmp/ulid"
runin "$tmp/ulidtext" public --public-key "$K" -r --prefix user --kind ulid
check "ulid text: back with --kind" cmp -s "$tmp/out" "$tmp/ulid"
run ulid -n 200 --monotonic --public-key "$K" --public-prefix user
cp "$tmp/out" "$tmp/ulidgen"
check "ulid --public-key: 200 text forms" test "$(grep -cxE 'user_[0-9a-z]{30}' "$tmp/ulidgen")" = 200
runin "$tmp/ulidgen" public --public-key "$K" -r --prefix user --kind ulid
want_rc "ulid --public-key reversed" 0
check "ulid --public-key: back to increasing ULIDs" sort -C "$tmp/out"
# text forms made 256 at a time: 600 crosses two batches and ends in a part one
run ulid -n 600 --monotonic --public-key "$K" --public-form text
cp "$tmp/out" "$tmp/ulidgen"
check "ulid -n 600 text: 600 text forms" test "$(grep -cxE '[0-9a-z]{30}' "$tmp/ulidgen")" = 600
check "ulid -n 600 text: distinct" test "$(sort -u "$tmp/ulidgen" | wc -l)" = 600
runin "$tmp/ulidgen" public --public-key "$K" -r --kind ulid
want_rc "ulid -n 600 text reversed" 0
check "ulid -n 600 text: back to 600 increasing ULIDs" sort -C -u "$tmp/out"
check "ulid -n 600 text: 600 back" test "$(wc -l <"$tmp/out")" = 600

# ---- UUIDv7 -> UUIDv4 ----------------------------------------------------------------
run uuid7 -n 500
cp "$tmp/out" "$tmp/u7"
runin "$tmp/u7" public --public-key "$K"
want_rc "uuid7 int" 0
cp "$tmp/out" "$tmp/u4"
check "uuid7 int: UUIDv4s" \
  test "$(grep -cxE '[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}' "$tmp/u4")" = 500
check "uuid7 int: distinct" test "$(sort -u "$tmp/u4" | wc -l)" = 500
runin "$tmp/u4" public --public-key "$K" -r
check "uuid7 int: back" cmp -s "$tmp/out" "$tmp/u7"
runin "$tmp/u7" public --public-key "$K" --form text
cp "$tmp/out" "$tmp/u7text"
runin "$tmp/u7text" public --public-key "$K" -r
check "uuid7 text: back" cmp -s "$tmp/out" "$tmp/u7"
run public --public-key "$K" "$(head -1 "$tmp/u4")"
want_rc "a UUIDv4 given as an ID refused" 1
run uuid7 -n 200 --public-key "$K"
cp "$tmp/out" "$tmp/u7gen"
check "uuid7 --public-key: 200 UUIDv4s" test "$(grep -c '^........-....-4' "$tmp/u7gen")" = 200
runin "$tmp/u7gen" public --public-key "$K" -r
want_rc "uuid7 --public-key reversed" 0
check "uuid7 --public-key: back to increasing UUIDv7s" sort -C "$tmp/out"
check "uuid7 --public-key: version 7" test "$(grep -c '^........-....-7' "$tmp/out")" = 200
run uuid7 -n 600 --public-key "$K" --public-prefix doc --json
check "uuid7 -n 600 text --json: 600 elements" \
  test "$(grep -oE '"doc_[0-9a-z]{30}"' "$tmp/out" | wc -l)" = 600
check "uuid7 -n 600 text --json: one object, 599 commas" \
  test "$(sed -E 's/"doc_[0-9a-z]{30}"//g' "$tmp/out")" = "{\"ids\":[$(printf ',%.0s' $(seq 599))]}"
grep -oE 'doc_[0-9a-z]{30}' "$tmp/out" >"$tmp/u7gen"
runin "$tmp/u7gen" public --public-key "$K" -r --prefix doc
want_rc "uuid7 -n 600 text reversed" 0
check "uuid7 -n 600 text: back to 600 increasing UUIDv7s" sort -C -u "$tmp/out"
check "uuid7 -n 600 text: version 7" test "$(grep -c '^........-....-7' "$tmp/out")" = 600
run public --public-key "$K" --json "$one" nope
check "json: one object per input" test "$(wc -l <"$tmp/out")" = 2
check "json: the result" grep -qxF "{\"input\":\"$one\",\"output\":\"$(head -1 "$tmp/pub")\",\"kind\":\"snowflake\"}" "$tmp/out"
check "json: the error" grep -qE '^\{"input":"nope","error":".+"\}$' "$tmp/out"

# ---- a key file others may read, a missing one ------------------------------------
cp "$K" "$tmp/open.key"
chmod 644 "$tmp/open.key"
run public --public-key "$tmp/open.key" "$one"
want_rc "world-readable key file refused" 2
err_has "world-readable key: names chmod 600" "chmod 600"
err_has "world-readable key: names the mode" "644"
run snowflake --public-key "$tmp/open.key"
want_rc "snowflake: world-readable key file refused" 2
err_has "snowflake: world-readable key: chmod 600" "chmod 600"
run uuid7 --public-key "$tmp/open.key"
want_rc "uuid7: world-readable key file refused" 2
run public --public-key "$tmp/missing.key" "$one"
want_rc "missing key file refused" 2
run public "$one"
want_rc "no key" 2

# ---- --add: version 2; old text forms still reverse -------------------------------
run public --new-key "$K" --add
want_rc "--add" 0
check "--add says version 2" grep -qxF "$K: key version 2 written (mode 0600)" "$tmp/out"
check "--add keeps mode 600" test "$(stat -c %a "$K")" = 600
runin "$tmp/text" public --public-key "$K" --reverse --prefix order
want_rc "old text forms with version 2 added" 0
check "old text forms: back to the IDs" cmp -s "$tmp/out" "$tmp/ids"
run public --public-key "$K" --prefix order "$one"
check "new text forms carry version 2 ('1')" grep -qxE 'order_1[0-9a-z]{16}' "$tmp/out"
t2=$(cat "$tmp/out")
run public --public-key "$K" --reverse --prefix order "$t2"
want_rc "version 2 text form reversed" 0
check "version 2 text form: back" test "$(cat "$tmp/out")" = "$one"
runin "$tmp/pub" public --public-key "$K" --reverse --key-version 1
check "integer forms of version 1 with --key-version 1" cmp -s "$tmp/out" "$tmp/ids"
runin "$tmp/pub" public --public-key "$K" --reverse
check "integer forms of version 1 with version 2: other IDs" test "$(cat "$tmp/out")" != "$(cat "$tmp/ids")"
run public --public-key "$K" --key-version 3 "$one"
want_rc "a key version not in the file refused" 2
# Version 1 removed: its text forms fail with a key error, not a wrong ID.
grep -v '^v1 ' "$K" >"$tmp/v2only.key"
chmod 600 "$tmp/v2only.key"
run public --public-key "$tmp/v2only.key" --reverse --prefix order "$t1"
want_rc "a removed key version refused" 1

# ---- a running `idgen public -`: its command line and environment ----------------
run public --public-key "$K" "$one"
want_bg=$(cat "$tmp/out")
mkfifo "$tmp/fifo"
IDGEN_PUBLIC_KEY=$K "$IDGEN" public - <"$tmp/fifo" >"$tmp/bg.out" 2>&1 &
bgpid=$!
exec 7>"$tmp/fifo"
echo "$one" >&7
for _ in $(seq 100); do
  [ -s "$tmp/bg.out" ] || grep -q public "/proc/$bgpid/cmdline" 2>/dev/null && break
  sleep 0.05
done
tr '\0' ' ' <"/proc/$bgpid/cmdline" >"$tmp/cmdline"
ps -o args= -p "$bgpid" >"$tmp/ps"
tr '\0' '\n' <"/proc/$bgpid/environ" >"$tmp/environ"
check "running: cmdline is idgen public -" grep -q 'public -' "$tmp/cmdline"
check "running: ps shows it" grep -q 'public -' "$tmp/ps"
check "running: the environment names the file" grep -qxF "IDGEN_PUBLIC_KEY=$K" "$tmp/environ"
exec 7>&-
wait "$bgpid"
check "running: exits 0 at the end of its input" test $? = 0
bgpid=""
cat "$tmp/bg.out" >>"$tmp/all.log"
check "running: printed the public ID" test "$(cat "$tmp/bg.out")" = "$want_bg"

# ---- a key given where its file is named: refused, not repeated ----------------------
khex=$(awk '/^v1 / { print $2; exit }' "$K")
run public --public-key "$khex" 1
want_rc "--public-key HEX" 2
err_has "--public-key HEX" "looks like a key"
IDGEN_PUBLIC_KEY="v1 $khex" run public 1
want_rc "IDGEN_PUBLIC_KEY='v1 HEX'" 2
err_has "IDGEN_PUBLIC_KEY='v1 HEX'" "looks like a key"
run snowflake --public-key "$khex"
want_rc "snowflake --public-key HEX" 2
err_has "snowflake --public-key HEX" "not shown"
IDGEN_PUBLIC_KEY=$khex run ulid
want_rc "ulid with IDGEN_PUBLIC_KEY=HEX" 2
cd "$tmp" || exit 1 # a bare name (no folder), and no stray file elsewhere should it be made
run public --new-key "$khex"
cd - >/dev/null || exit 1
want_rc "--new-key HEX" 1
check "--new-key HEX makes no file" test ! -e "$tmp/$khex"

# ---- no key's hex anywhere ------------------------------------------------------------
for f in "$K" "$K2"; do
  for hex in $(awk '/^v[0-9]+ / { print $2 }' "$f"); do
    check "the key file holds a 64-hex key" test ${#hex} = 64
    for where in all.log cmdline ps environ; do
      if grep -qiF -- "$hex" "$tmp/$where"; then bad "a key's hex in $where"; else ok; fi
      # half of it either: no partial print
      if grep -qiF -- "${hex:16:32}" "$tmp/$where"; then bad "part of a key's hex in $where"; else ok; fi
    done
  done
done

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
