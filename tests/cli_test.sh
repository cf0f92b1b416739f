#!/usr/bin/env bash
# Black-box tests of the idgen command: outputs, exit codes, error lines,
# JSON exactly as the README shows it.  Usage: cli_test.sh PATH/TO/idgen
# Ends with the line "N passed, N failed".
set -u
IDGEN=${1:?usage: cli_test.sh PATH/TO/idgen}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }

# expect NAME WANT_STATUS WANT_STDOUT WANT_STDERR -- ARGS...
# WANT_STDOUT / WANT_STDERR: exact text, or "*" for "don't care".
expect() {
  local name=$1 want_rc=$2 want_out=$3 want_err=$4
  shift 5
  "$IDGEN" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  if [ "$rc" != "$want_rc" ]; then
    bad "$name: exit status $rc, want $want_rc (stderr: $(cat "$tmp/err"))"
    return
  fi
  if [ "$want_out" != "*" ] && [ "$(cat "$tmp/out")" != "$want_out" ]; then
    bad "$name: stdout was:"$'\n'"$(cat "$tmp/out")"$'\n'"want:"$'\n'"$want_out"
    return
  fi
  if [ "$want_err" != "*" ] && [ "$(cat "$tmp/err")" != "$want_err" ]; then
    bad "$name: stderr was: $(cat "$tmp/err")"$'\n'"want: $want_err"
    return
  fi
  ok
}

# --- decode: known answers, text and JSON ---------------------------------
expect "decode json twitter" 0 \
  '{"id":"910499571847892992","kind":"snowflake","layout":"twitter","unix_ms":1505914988849,"time":"2017-09-20T13:43:08.849Z","fields":{"datacenter":17,"worker":25,"sequence":0}}' \
  "" -- decode --json 910499571847892992
expect "decode text twitter" 0 "id         910499571847892992
kind       snowflake
layout     twitter
unix_ms    1505914988849
time       2017-09-20T13:43:08.849Z
datacenter 17
worker     25
sequence   0" "" -- decode 910499571847892992
expect "decode epoch0 layout" 0 \
  '{"id":"7173916012573569024","kind":"snowflake","layout":"time:41@1ms,node:10,sequence:12,epoch=0","unix_ms":1710394862311,"time":"2024-03-14T05:41:02.311Z","fields":{"node":755,"sequence":0}}' \
  "" -- decode --json --layout 'time:41@1ms,node:10,sequence:12,epoch=0' 7173916012573569024
expect "decode baidu still works after it ran out" 0 '*' "" -- decode --layout baidu 1
printf '910499571847892992\n\n0\n' | "$IDGEN" decode --json - >"$tmp/o" 2>&1 &&
  [ "$(wc -l <"$tmp/o")" = 2 ] && ok || bad "decode - reads stdin"
expect "decode lenient hyphens" 0 '*' "" -- decode --lenient 910-499-571-847-892-992
# --format baidu prints a UID as Baidu's parseUID() does.  The UID is seed
# 003's layout with delta 12345678 s, worker 1234, sequence 42:
# (12345678 << 34) | (1234 << 13) | 42; its time 1474300800 + 12345678 s is
# 2017-02-09 13:21:18 UTC, 21:21:18 in UTC+8 (TZ=CST-8 needs no tzdata).
BAIDU_LAYOUT='time:29@1s,worker:21,sequence:13,epoch=1474300800000'
TZ=CST-8 expect "decode --format baidu, UTC+8" 0 \
  '{"UID":"212097133037895722","timestamp":"2017-02-09 21:21:18","workerId":"1234","sequence":"42"}' \
  "" -- decode --format baidu --layout "$BAIDU_LAYOUT" 212097133037895722
TZ=UTC expect "decode --format baidu, UTC" 0 \
  '{"UID":"212097133037895722","timestamp":"2017-02-09 13:21:18","workerId":"1234","sequence":"42"}' \
  "" -- decode --format baidu --layout "$BAIDU_LAYOUT" 212097133037895722
TZ=UTC expect "decode --format baidu: twitter's workerId is datacenter and worker" 0 \
  '{"UID":"910499571847892992","timestamp":"2017-09-20 13:43:08","workerId":"569","sequence":"0"}' \
  "" -- decode --format baidu 910499571847892992
expect "decode --format baidu refuses a ULID" 1 "" \
  'idgen: --format baidu: "01ARZ3NDEKTSV4RRFFQ69G5FAV" is not a Snowflake ID' \
  -- decode --format baidu 01ARZ3NDEKTSV4RRFFQ69G5FAV
expect "decode --format unknown" 2 "" 'idgen: --format: "yaml" is not text, json or baidu' \
  -- decode --format yaml 1

# --- decode: errors name the problem; other IDs still decoded -------------
expect "decode not a digit" 1 "" \
  'idgen: not an ID: "12x4" is 4 characters (expected 1 to 20 decimal digits, a 26-character ULID, or a UUID of 36 characters or 32 hex digits)' \
  -- decode 12x4
expect "decode too long" 1 "" \
  'idgen: not an ID: "123456789012345678901" has 21 digits; a 64-bit ID has at most 20' \
  -- decode 123456789012345678901
expect "decode over 64 bits" 1 "" \
  'idgen: 18446744073709551616 does not fit in 64 bits (at most 18446744073709551615)' \
  -- decode 18446744073709551616
expect "decode over layout bits" 1 "" \
  "idgen: 9223372036854775808 does not fit the layout's 63 bits (at most 9223372036854775807)" \
  -- decode 9223372036854775808
expect "decode mixed good and bad" 1 '*' '*' -- decode 0 x 1
[ "$(grep -c '^id ' "$tmp/out")" = 2 ] && ok || bad "decode mixed: both good IDs decoded"
expect "decode needs an ID" 2 "" \
  "idgen: decode needs at least one ID, or - to read them from standard input" -- decode
expect "decode bad layout" 2 "" 'idgen: layout: field "worker" repeated' \
  -- decode --layout 'time:41,worker:5,worker:5,sequence:12' 1

# --- snowflake: make IDs ---------------------------------------------------
# The IDs' times lie between the clock read before the command and after it
# (a window that a busy machine widens: a fixed distance from "now" read
# afterwards failed there), give or take 50 ms for the fast clock's
# calibration and max_borrow_ms (1 s) ahead.
now_ms() { echo $(($(date +%s%N) / 1000000)); }
before_ms=$(now_ms)
expect "snowflake 1000" 0 '*' "" -- snowflake -n 1000 --datacenter 17 --worker 25
after_ms=$(now_ms)
[ "$(wc -l <"$tmp/out")" = 1000 ] && ok || bad "snowflake -n 1000 prints 1000 lines"
sort -n -c "$tmp/out" 2>/dev/null && [ "$(sort -u "$tmp/out" | wc -l)" = 1000 ] && ok ||
  bad "snowflake IDs strictly increasing"
"$IDGEN" decode --json "$(head -1 "$tmp/out")" | grep -q '"fields":{"datacenter":17,"worker":25,' &&
  ok || bad "snowflake IDs carry the node values"
t=$("$IDGEN" decode --json "$(tail -1 "$tmp/out")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unix_ms"])')
[ "$t" -ge $((before_ms - 50)) ] && [ "$t" -le $((after_ms + 1050)) ] && ok ||
  bad "snowflake ID time $t is between $before_ms - 50 and $after_ms + 1050"
expect "snowflake json" 0 '*' "" -- snowflake -n 3 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ids"])==3 and all(isinstance(x,str) for x in d["ids"])' "$tmp/out" &&
  ok || bad "snowflake --json gives {\"ids\":[3 strings]}"
expect "snowflake node option" 0 '*' "" -- snowflake --layout 'time:41@1ms,node:10,sequence:12,epoch=0' --node node=755
"$IDGEN" decode --json --layout 'time:41@1ms,node:10,sequence:12,epoch=0' "$(cat "$tmp/out")" |
  grep -q '"node":755' && ok || bad "--node node=755 lands in the ID"
expect "snowflake js53 below 2^53" 0 '*' "" -- snowflake --layout js53 --worker 63 -n 5
[ "$(sort -n "$tmp/out" | tail -1)" -lt 9007199254740992 ] && ok || bad "js53 IDs below 2^53"

# Processes with distinct worker values never collide (static registry).
for w in 1 2 3; do "$IDGEN" snowflake -n 20000 --worker $w >"$tmp/w$w" & done
wait
[ "$(cat "$tmp"/w? | sort -u | wc -l)" = 60000 ] && ok || bad "3 processes, distinct workers, 60000 distinct IDs"

# --- snowflake: errors -----------------------------------------------------
expect "worker out of range" 2 "" 'idgen: snowflake: node = "worker=32" (from flag --worker): worker value "32" is not a number from 0 to 31' \
  -- snowflake --worker 32
expect "unknown node field" 2 "" \
  'idgen: snowflake: node = "shard=1" (from flag --node): "shard" is not a node field of the layout (its node fields: datacenter, worker)' \
  -- snowflake --node shard=1
expect "node not a number" 2 "" 'idgen: snowflake: node = "worker=x" (from flag --worker): worker value "x" is not a number from 0 to 31' \
  -- snowflake --worker x
expect "bad count" 2 "" 'idgen: --count: 0 out of range 1..100000000' -- snowflake -n 0
expect "lease field without a registry" 2 "" 'idgen: snowflake: lease_field = "worker" (from flag --lease-field): a lease field needs a registry other than static' \
  -- snowflake --lease-field worker
expect "bad count text" 2 "" 'idgen: --count: "many" is not a whole number' -- snowflake -n many
expect "baidu refused" 1 "" "idgen: layout ran out on 2024-11-20" -- snowflake --layout baidu
# With a registry too: the run-out named first (not the 22-bit worker field a
# registry cannot lease), and nothing leased for it.
expect "baidu refused with a file: registry, nothing leased" 1 "" \
  "idgen: layout ran out on 2024-11-20" -- snowflake --layout baidu --registry "file:$tmp/reg-baidu"
[ -z "$(ls -A "$tmp/reg-baidu" 2>/dev/null)" ] && ok ||
  bad "a file: registry holds a record for baidu's run-out layout: $(ls -A "$tmp/reg-baidu")"
expect "unknown preset" 2 "" \
  'idgen: snowflake: layout = "twiter" (from flag --layout): layout: unknown preset "twiter" (presets: twitter, discord, sonyflake, baidu, instagram, mastodon, js53)' \
  -- snowflake --layout twiter

# --- one settings table: idgen snowflake and idgen serve agree -------------
# The generator's settings have one definition (src/common/settings.c): the
# same lines in both commands' --help, the same checks and messages, the same
# rules between them.
helpof() { # helpof CMD OPT: the option's lines in CMD's --help
  "$IDGEN" "$1" --help | awk -v o="$2" '
    $0 ~ "^ +(-., )?" o "([ []|$)" { p = 1; print; next }
    p && /^                             / { print; next }
    { p = 0 }'
}
for opt in --layout --node --registry --lease-field --lease-ttl-ms --max-start-wait-ms \
  --max-borrow-ms --max-wait-ms --clock --random-sequence-start; do
  helpof snowflake "$opt" >"$tmp/h1"
  helpof serve "$opt" >"$tmp/h2"
  if [ "$opt" = --registry ]; then # only the default differs
    grep -q '(default static)' "$tmp/h1" && ok || bad "snowflake --help: registry default static"
    sed -i '/default/,$d' "$tmp/h1" "$tmp/h2"
  fi
  [ -s "$tmp/h1" ] && cmp -s "$tmp/h1" "$tmp/h2" && ok || bad "$opt: the same help in snowflake and serve"
done
for args in "--max-wait-ms 3600001" "--lease-ttl-ms 299" "--clock slow" "--random-sequence-start=maybe" \
  "--layout twiter" "--node shard=1" "--registry redis://x" "--lease-field sequence"; do
  # shellcheck disable=SC2086
  a=$("$IDGEN" snowflake $args 2>&1 >/dev/null; echo "rc=$?")
  # shellcheck disable=SC2086
  b=$("$IDGEN" serve --registry "file:$tmp/reg-same" $args --check-config 2>&1 >/dev/null; echo "rc=$?")
  [ "${a#idgen: snowflake: }" = "${b#idgen: serve: }" ] && [ "${a##*rc=}" = 2 ] && ok ||
    bad "$args: the same refusal from snowflake and serve: $a / $b"
done
# The rules between settings: a lease field needs a registry; node must not
# set the leased field (the command used to ignore --worker under a registry).
expect "leased field set by hand" 2 "" \
  "idgen: snowflake: node = \"worker=3\" (from flag --worker): the registry file:$tmp/reg-rule assigns worker: leave it out of node, or use registry = static to set it by hand" \
  -- snowflake --registry "file:$tmp/reg-rule" --worker 3
expect "serve: lease field with static" 2 "" \
  'idgen: serve: lease_field = "worker" (from flag --lease-field): a lease field needs a registry other than static' \
  -- serve --registry static --lease-field worker --check-config
expect "snowflake --clock precise" 0 '*' "" -- snowflake --clock precise -n 3
expect "snowflake --clock coarse" 0 '*' "" -- snowflake --clock coarse -n 3
expect "ulid --clock coarse" 0 '*' "" -- ulid --monotonic --clock coarse -n 3
expect "uuid7 --clock coarse" 0 '*' "" -- uuid7 --clock coarse -n 3
# Holders of one worker ID on one file: registry that alternate between the
# fast and the coarse clock (whose stamps lag by a timer tick or two): each
# starts above the mark of the one before, so the IDs of all of them, in
# order, strictly increase.
mkdir "$tmp/reg-clocks"
: >"$tmp/clocks"
for i in 1 2 3 4 5 6 7 8 9 10; do
  if [ $((i % 2)) = 0 ]; then clk=fast; else clk=coarse; fi
  "$IDGEN" snowflake --registry "file:$tmp/reg-clocks" --clock $clk -n 2000 >>"$tmp/clocks" 2>"$tmp/err" ||
    bad "holder $i (--clock $clk): $(cat "$tmp/err")"
done
# 19-digit IDs of one layout: as text of equal length, sort order is numeric order
if [ "$(wc -l <"$tmp/clocks")" = 20000 ] && LC_ALL=C sort -c -u "$tmp/clocks" 2>"$tmp/err"; then
  ok
else
  bad "fast and coarse holders of one worker: IDs not strictly increasing: $(cat "$tmp/err")"
fi
expect "ulid --clock bad" 2 "" 'idgen: --clock: "slow" is not a clock (expected fast, precise or coarse)' \
  -- ulid --clock slow
"$IDGEN" snowflake --random-sequence-start -n 2000 --layout 'time:41@1s,worker:10,sequence:12' >"$tmp/rs" &&
  [ "$(sort -u "$tmp/rs" | wc -l)" = 2000 ] && sort -c -n "$tmp/rs" 2>/dev/null && ok ||
  bad "snowflake --random-sequence-start: 2000 unique increasing IDs"
expect "serve: random_sequence_start" 0 '*' "" -- serve --random-sequence-start --check-config
grep -q '^random_sequence_start = true .*# flag --random-sequence-start$' "$tmp/out" && ok ||
  bad "random_sequence_start in --check-config"
expect "unknown option" 2 "" "idgen: snowflake: unknown option --bogus (see 'idgen snowflake --help')" \
  -- snowflake --bogus
expect "missing value" 2 "" "idgen: snowflake: option --layout needs a value (see 'idgen snowflake --help')" \
  -- snowflake --layout
expect "registry unknown scheme" 2 "" \
  'idgen: snowflake: registry = "redis://x" (from flag --registry): registry: unknown scheme in "redis://x" (known: static, file:DIR, postgres://..., etcd://HOST:PORT, idgen://HOST:PORT)' \
  -- snowflake --registry redis://x
expect "negative borrow" 2 "" 'idgen: snowflake: max_borrow_ms = "-1" (from flag --max-borrow-ms): not a whole number from 0 to 86400000' \
  -- snowflake --max-borrow-ms -1
# Registry messages quote what they echo: no raw bytes.
expect "registry scheme quoted" 2 "" \
  'idgen: snowflake: registry = "no\xC1pe:x" (from flag --registry): registry: unknown scheme in "no\xC1pe:x" (known: static, file:DIR, postgres://..., etcd://HOST:PORT, idgen://HOST:PORT)' \
  -- snowflake --registry $'no\xc1pe:x'
expect "registry free: pool quoted" 2 "" \
  'idgen: registry: pool "epoch=\x7F" is not a pool name (epoch=...,tick=...,time@...,sequence@...: as listed)' \
  -- registry free --registry "file:$tmp/reg" $'epoch=\x7f' worker=1
expect "registry free: node quoted" 2 "" \
  'idgen: registry: "worker=\xC1" is not a node tuple (NAME=VALUE,..., or 0x and its key, as listed)' \
  -- registry free --registry "file:$tmp/reg" epoch=1,tick=1ms,time@9,sequence@0:3 $'worker=\xc1'
"$IDGEN" snowflake --registry "file:$tmp/reg-free" -n 1 >/dev/null
expect "registry free: node values by the one NAME=VALUE rule" 2 "" \
  'idgen: registry: worker value "99" is not a number from 0 to 31' \
  -- registry free --registry "file:$tmp/reg-free" epoch=1288834974657,tick=1ms,time@22,sequence@0:12 \
  datacenter=0,worker=99


# --- ULID and UUID: decode (the README shows the JSON exactly) ----------
expect "decode json ulid" 0 \
  '{"id":"01ARZ3NDEKTSV4RRFFQ69G5FAV","kind":"ulid","unix_ms":1469922850259,"time":"2016-07-30T23:54:10.259Z","uuid":"01563e3a-b5d3-d676-4c61-efb99302bd5b"}' \
  "" -- decode --json 01ARZ3NDEKTSV4RRFFQ69G5FAV
expect "decode json uuid7" 0 \
  '{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"unix_ms":1645557742000,"time":"2022-02-22T19:22:22.000Z"}' \
  "" -- decode --json 017F22E2-79B0-7CC3-98C4-DC0C0C07398F
expect "decode urn and 32 hex" 0 \
  '{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"unix_ms":1645557742000,"time":"2022-02-22T19:22:22.000Z"}
{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"unix_ms":1645557742000,"time":"2022-02-22T19:22:22.000Z"}' \
  "" -- decode --json urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f 017f22e279b07cc398c4dc0c0c07398f
expect "decode uuid v4 has no time" 0 '{"id":"919108f7-52d1-4320-9bac-f847db4148a8","kind":"uuid","version":4}' \
  "" -- decode --json 919108f7-52d1-4320-9bac-f847db4148a8
expect "decode max ulid" 0 \
  '{"id":"7ZZZZZZZZZZZZZZZZZZZZZZZZZ","kind":"ulid","unix_ms":281474976710655,"time":"+10889-08-02T05:31:50.655Z","uuid":"ffffffff-ffff-ffff-ffff-ffffffffffff"}' \
  "" -- decode --json 7zzzzzzzzzzzzzzzzzzzzzzzzz
expect "decode lenient ulid" 0 \
  '{"id":"01ARZ3NDEKTSV4RRFFQ69G5FA1","kind":"ulid","unix_ms":1469922850259,"time":"2016-07-30T23:54:10.259Z","uuid":"01563e3a-b5d3-d676-4c61-efb99302bd41"}' \
  "" -- decode --json --lenient 0lARZ3NDEK-TSV4RRFFQ69G5FAi
expect "decode strict ulid alias" 1 "" \
  "idgen: \"01ARZ3NDEKTSV4RRFFQ69G5FAI\": ULID: character 'I' at position 26 is not in the alphabet (lenient decoding reads it as 1)" \
  -- decode 01ARZ3NDEKTSV4RRFFQ69G5FAI
expect "decode ulid U" 1 "" \
  "idgen: \"01ARUZ3NDEKTSV4RRFFQ69G5FA\": ULID: character 'U' at position 5 is not in the alphabet (U is never valid)" \
  -- decode --lenient 01ARUZ3NDEKTSV4RRFFQ69G5FA
expect "decode ulid overflow" 1 "" \
  "idgen: \"8ZZZZZZZZZZZZZZZZZZZZZZZZZ\": ULID: first character '8' at position 1 overflows 128 bits (at most 7)" \
  -- decode 8ZZZZZZZZZZZZZZZZZZZZZZZZZ
expect "decode bad uuid" 1 "" "idgen: \"017f22e2-79b0-7cc3-98c4-dc0c0c07398g\": UUID: character 'g' at position 36 is not a hex digit" \
  -- decode 017f22e2-79b0-7cc3-98c4-dc0c0c07398g
expect "decode near-uuid separator" 1 "" "idgen: \"017f22e2+79b0-7cc3-98c4-dc0c0c07398f\": UUID: character '+' at position 9 is not '-'" \
  -- decode 017f22e2+79b0-7cc3-98c4-dc0c0c07398f
expect "decode urn with 32 hex" 0 \
  '{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"unix_ms":1645557742000,"time":"2022-02-22T19:22:22.000Z"}' \
  "" -- decode --json URN:UUID:017f22e279b07cc398c4dc0c0c07398f
expect "decode lenient urn" 0 \
  '{"id":"017f22e2-79b0-7cc3-98c4-dc0c0c07398f","kind":"uuid","version":7,"unix_ms":1645557742000,"time":"2022-02-22T19:22:22.000Z"}' \
  "" -- decode --json --lenient urn:uuid:017f22e2-79b0-7cc3-98c4-dc0c0c07398f
expect "decode ulid overflow names the character" 1 "" \
  "idgen: \"z1ARZ3NDEKTSV4RRFFQ69G5FAV\": ULID: first character 'z' at position 1 overflows 128 bits (at most 7)" \
  -- decode z1ARZ3NDEKTSV4RRFFQ69G5FAV
expect "decode lenient quotes input as given" 1 "" \
  'idgen: not an ID: "12-x4" is 4 characters (expected 1 to 20 decimal digits, a 26-character ULID, or a UUID of 36 characters or 32 hex digits)' \
  -- decode --lenient 12-x4

# --- ulid and uuid7: make them ---------------------------------------------
expect "ulid 1000" 0 '*' "" -- ulid -n 1000
[ "$(grep -cE '^[0-7][0-9A-HJKMNP-TV-Z]{25}$' "$tmp/out")" = 1000 ] && [ "$(sort -u "$tmp/out" | wc -l)" = 1000 ] &&
  ok || bad "ulid -n 1000: 1000 distinct canonical ULIDs"
expect "ulid monotonic" 0 '*' "" -- ulid -n 5000 --monotonic
LC_ALL=C sort -c -u "$tmp/out" 2>/dev/null && [ "$(wc -l <"$tmp/out")" = 5000 ] && ok ||
  bad "ulid --monotonic strictly increasing"
expect "ulid at" 0 '*' "" -- ulid --at 1469922850259
"$IDGEN" decode --json "$(cat "$tmp/out")" | grep -q '"unix_ms":1469922850259,' && ok || bad "ulid --at sets the time"
expect "ulid uuid form" 0 '*' "" -- ulid --uuid --at 1469922850259
grep -qE '^01563e3a-b5d3-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' "$tmp/out" && ok || bad "ulid --uuid prints the UUID form"
expect "ulid json" 0 '*' "" -- ulid -n 2 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ids"])==2' "$tmp/out" && ok || bad "ulid --json"
expect "ulid bad at" 2 "" "idgen: --at: 281474976710656 out of range 0..281474976710655" -- ulid --at 281474976710656
before_ms=$(now_ms)
expect "uuid7 1000" 0 '*' "" -- uuid7 -n 1000
after_ms=$(now_ms)
grep -cE '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$' "$tmp/out" | grep -qx 1000 &&
  LC_ALL=C sort -c -u "$tmp/out" 2>/dev/null && ok || bad "uuid7 -n 1000: version 7, variant 10, strictly increasing"
t=$("$IDGEN" decode --json "$(head -1 "$tmp/out")" | python3 -c 'import json,sys; print(json.load(sys.stdin)["unix_ms"])')
[ "$t" -ge $((before_ms - 50)) ] && [ "$t" -le $((after_ms + 50)) ] && ok ||
  bad "uuid7 time $t is between $before_ms - 50 and $after_ms + 50"
expect "uuid7 json" 0 '*' "" -- uuid7 -n 3 --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ids"])==3' "$tmp/out" && ok || bad "uuid7 --json"

# --- review findings: repeated nodes, bundled options, write errors, stdin trimming
expect "node given twice" 2 "" 'idgen: snowflake: node = "worker=1,worker=2" (from flag --worker): worker given twice' \
  -- snowflake --worker 1 --worker 2
expect "node given twice, mixed" 2 "" \
  'idgen: snowflake: node = "worker=1,worker=31" (from flags --node, --worker): worker given twice' \
  -- snowflake --node worker=1 --worker 31
expect "bundled unknown short option" 2 "" "idgen: unknown option -x (see 'idgen ulid --help')" -- ulid -mx
expect "bundled option missing value" 2 "" "idgen: option -n needs a value (see 'idgen ulid --help')" -- ulid -mn
for c in "snowflake -n 3" "snowflake -n 3 --json" "ulid -n 3" "uuid7 -n 3" "layouts" "plan" "decode 0"; do
  # shellcheck disable=SC2086
  "$IDGEN" $c >/dev/full 2>"$tmp/err"
  [ $? = 1 ] && grep -q '^idgen: cannot write to standard output' "$tmp/err" && ok ||
    bad "$c >/dev/full: exit 1 with a message"
done
printf '  910499571847892992 \t\n\n' | "$IDGEN" decode --json - >"$tmp/out" 2>&1 &&
  grep -q '"id":"910499571847892992"' "$tmp/out" && ok || bad "decode - trims spaces and tabs"
printf '01ARZ3NDEKTSV4RRFFQ69G5FAU\n' | "$IDGEN" decode - 2>"$tmp/err" >/dev/null
grep -q '^idgen: "01ARZ3NDEKTSV4RRFFQ69G5FAU": ULID: ' "$tmp/err" && ok || bad "decode - names the bad line"
expect "plan node on top" 0 '*' "" -- plan --layout 'worker:1,time:41,sequence:22'
grep -q "the top bit is worker's: IDs with worker 1 or more are >= 2^63" "$tmp/out" && ok ||
  bad "plan: a node field on top is not called safe"
expect "plan huge cluster" 0 '*' "" -- plan --layout 'time:2,a:30,sequence:32'
grep -q '^per cluster   4.61e+21 IDs/s$' "$tmp/out" && ok || bad "plan: huge rates do not overflow"

# --- layouts, plan, help, version ------------------------------------------
expect "layouts" 0 '*' "" -- layouts
[ "$(wc -l <"$tmp/out")" = 7 ] && grep -q '^baidu .*ran out 2024-11-20$' "$tmp/out" &&
  grep -q '^twitter .*until 2080-07-10$' "$tmp/out" && ok || bad "layouts lists 7 presets with dates"
expect "plan twitter" 0 '*' "" -- plan
grep -q '^exhaustion    2080-07-10 ' "$tmp/out" && grep -q '^per node      4,096 IDs per tick = 4,096,000 IDs/s$' "$tmp/out" &&
  grep -q '^per cluster   4,194,304,000 IDs/s$' "$tmp/out" && ok || bad "plan twitter figures"
expect "plan baidu ran out" 0 '*' "" -- plan --layout baidu
grep -q '^exhaustion    ran out on 2024-11-20' "$tmp/out" && ok || bad "plan baidu says ran out on 2024-11-20"
expect "plan mastodon sign bit" 0 '*' "" -- plan --layout mastodon
grep -q 'IDs reach 2^63 from 6429-10-17' "$tmp/out" && ok || bad "plan mastodon names the 2^63 date"
expect "plan rate burst" 0 '*' "" -- plan --rate 8192000
grep -q '2.00 times one node.s capacity; borrowing (max_borrow_ms 1000) absorbs a burst of 1.0 s' "$tmp/out" &&
  ok || bad "plan --rate burst figure"
expect "plan bad layout" 2 "" 'idgen: layout: no "sequence" field' -- plan --layout time:41
# plan --seq: the counter's lifetime, and a format's width against a rate
expect "plan seq" 0 '*' "" -- plan --seq --rate 1000
grep -q '^counter       63 bits: 9,223,372,036,854,775,807 numbers, 1 to 9,223,372,036,854,775,807$' "$tmp/out" &&
  grep -q '^rate          1,000 numbers/s: the counter lasts 292,277,025 years$' "$tmp/out" &&
  ok || bad "plan --seq lifetime"
expect "plan seq format widens" 0 '*' "" -- plan --seq --format 'ORD{date:%Y%m%d}{seq:06}' --rate 2000/s --tz Asia/Shanghai
grep -q '^period        day (365.243 a year)' "$tmp/out" &&
  grep -q '^warning       at 2,000/s a day needs 172,800,000 numbers: {seq:06} widens after 999,999, about 8 min into each day$' "$tmp/out" &&
  grep -Eq '^example       ORD[0-9]{8}000001 \.\.\. ORD[0-9]{8}999999, then ORD[0-9]{8}1000000$' "$tmp/out" &&
  ok || bad "plan --seq --format warns of the width"
expect "plan seq format fits" 0 '*' "" -- plan --seq --format 'A{date:%Y%m%d%H%M}-{seq:03}' --rate 3 --start 0
grep -q '^fits          at 3/s a minute needs 180 numbers: 18.0% of what {seq:03} holds$' "$tmp/out" &&
  ok || bad "plan --seq --format fits"
expect "plan seq ambiguous" 2 "" 'idgen: plan: format: column 2: {seq} runs into the digits after it ("{seq}{date:%d}" reads 1|12 or 11|2 once the number grows): put a separator after {seq}' \
  -- plan --seq --format 'T{seq}{date:%Y%m%d}'
expect "plan seq bad tz" 2 "" '*' -- plan --seq --format 'T{seq}' --tz ../etc/passwd
expect "plan seq layout" 2 "" "idgen: plan: --layout is for IDs, not --seq (see 'idgen plan --help')" -- plan --seq --layout twitter
expect "plan format without seq" 2 "" "idgen: plan: --format needs --seq (see 'idgen plan --help')" -- plan --format 'T{seq}'
expect "version" 0 "idgen 0.1.0" "" -- --version
for c in snowflake ulid uuid7 decode plan layouts bench; do
  expect "$c --help" 0 '*' "" -- $c --help
  grep -q '^Usage: idgen '"$c" "$tmp/out" && ok || bad "$c --help shows usage"
done
expect "help" 0 '*' "" -- --help
expect "unknown command" 2 "" "idgen: unknown command \"frobnicate\" (see 'idgen --help')" -- frobnicate
expect "no command" 2 "" '*' --

# --- errors quote input as printable ASCII: \xHH for other bytes -------------
# (invalid UTF-8, DEL, control bytes; after a NUL the message goes on)
notid='is %d characters (expected 1 to 20 decimal digits, a 26-character ULID, or a UUID of 36 characters or 32 hex digits)'
# shellcheck disable=SC2059
expect "decode quotes invalid UTF-8 and DEL" 1 "" \
  "idgen: not an ID: \"a\\xC1\\x7Fb\\x1B\" $(printf "$notid" 5)" -- decode $'a\xc1\x7fb\x1b'
expect "decode quotes a ULID-length input" 1 "" \
  'idgen: "01ARZ3NDEKTSV4RR\xC1FQ69G5FA\x5C": ULID: byte 0xc1 at position 17 is not in the alphabet' \
  -- decode $'01ARZ3NDEKTSV4RR\xc1FQ69G5FA\\'
printf '12\0x4\n7\xc1\n' | "$IDGEN" decode - >"$tmp/out" 2>"$tmp/err"
rc=$?
# shellcheck disable=SC2059
want="idgen: not an ID: \"12\\x00x4\" $(printf "$notid" 5)
idgen: not an ID: \"7\\xC1\" $(printf "$notid" 2)"
[ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(cat "$tmp/err")" = "$want" ] && ok ||
  bad "decode - with a NUL and 0xC1 in lines: exit $rc, stdout $(od -c "$tmp/out" | head -3), stderr $(od -c "$tmp/err" | head -8)"
expect "layout spec quotes a bad field name" 2 "" \
  'idgen: layout: bad field name "w\xC1rker\x7F" (use [a-z][a-z0-9_]*)' \
  -- decode --layout $'time:41,w\xc1rker\x7f:5,sequence:12' 1
expect "layout spec quotes an unknown preset" 2 "" \
  'idgen: layout: unknown preset "tw\x09itter\xFF" (presets: twitter, discord, sonyflake, baidu, instagram, mastodon, js53)' \
  -- decode --layout $'tw\titter\xff' 1
expect "unknown command quoted" 2 "" "idgen: unknown command \"fo\\xC1\\x22o\" (see 'idgen --help')" -- $'fo\xc1"o'
expect "unknown option quoted" 2 "" "idgen: unknown option --x\\xC1 (see 'idgen decode --help')" -- decode $'--x\xc1'
expect "node name quoted" 2 "" \
  'idgen: snowflake: node = "w\xE9=1" (from flag --node): "w\xE9" is not a node field of the layout (its node fields: datacenter, worker)' \
  -- snowflake --node $'w\xe9=1'
expect "count quoted" 2 "" 'idgen: --count: "1\x7F" is not a whole number' -- snowflake -n $'1\x7f'

# --- libpq and libcurl are loaded only for their registries ------------------
# The binary links neither; a missing one is named when its scheme is used,
# and file: and static go on without them.  A private mount namespace hides
# each library behind an empty file (root only; skipped elsewhere).
if ldd "$IDGEN" | grep -qE 'libpq|libcurl'; then
  bad "the idgen binary links libpq or libcurl: $(ldd "$IDGEN" | grep -E 'libpq|libcurl' | tr '\n' ' ')"
else
  ok
fi
hide() { # hide SONAME... -- COMMAND...: runs COMMAND with those libraries unloadable
  local binds="" path
  while [ "$1" != -- ]; do
    path=$(ldconfig -p | awk -v so="$1" '$1 == so {print $NF; exit}')
    [ -n "$path" ] || return 77
    binds="$binds mount --bind /dev/null $path &&"
    shift
  done
  shift
  unshare -m sh -c "$binds"' exec "$@"' hide "$@"
}
if [ "$(id -u)" = 0 ] && hide libpq.so.5 -- true 2>/dev/null; then
  hide libpq.so.5 -- "$IDGEN" registry list --registry postgres://127.0.0.1:1/x >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 1 ] && grep -q '^idgen: registry: postgres: needs libpq.so.5 (Debian package libpq5): ' "$tmp/err"; then
    ok
  else
    bad "postgres:// without libpq: exit $rc, stderr: $(cat "$tmp/err")"
  fi
  # Settings validation leaves the URI to the open: exit 1 (failure), not 2 (bad usage).
  hide libpq.so.5 -- "$IDGEN" snowflake --registry postgres://127.0.0.1:1/x -n 1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 1 ] && grep -q '^idgen: registry: postgres: needs libpq.so.5 ' "$tmp/err"; then
    ok
  else
    bad "snowflake on postgres:// without libpq: exit $rc, stderr: $(cat "$tmp/err")"
  fi
  hide libcurl.so.4 -- "$IDGEN" registry list --registry etcd://127.0.0.1:1 >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" = 1 ] && grep -q '^idgen: registry: etcd: needs libcurl.so.4 (Debian package libcurl4 or libcurl4t64): ' "$tmp/err"; then
    ok
  else
    bad "etcd:// without libcurl: exit $rc, stderr: $(cat "$tmp/err")"
  fi
  mkdir "$tmp/reg-nolibs"
  if hide libpq.so.5 libcurl.so.4 -- "$IDGEN" snowflake --registry "file:$tmp/reg-nolibs" -n 2 >"$tmp/out" 2>"$tmp/err" &&
     [ "$(wc -l <"$tmp/out")" = 2 ]; then
    ok
  else
    bad "file: without libpq and libcurl: stderr: $(cat "$tmp/err")"
  fi
else
  echo "skipped: the missing-library checks need root and unshare -m"
fi

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
