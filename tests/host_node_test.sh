#!/usr/bin/env bash
# Node values from the host (--node NAME=@ip / NAME=@mac), in a network
# namespace of its own (unshare --net) holding one bridge interface with a
# private IPv4 address and a MAC address we choose, so that the expected
# values are known: 172.16.5.9 gives Sonyflake's machine ID 5 * 256 + 9 =
# 1289; MAC 02:00:00:ab:cd:ef gives twitter's 5-bit worker 0xef & 31 = 15.
# Usage: host_node_test.sh PATH/TO/idgen.  Exit 77 (skipped) where a network
# namespace cannot be made.
set -u
IDGEN=${1:?usage: host_node_test.sh PATH/TO/idgen}
if [ "${IN_NETNS:-}" != 1 ]; then
  if ! unshare --net true 2>/dev/null; then
    echo "SKIP: cannot make a network namespace here (unshare --net needs CAP_SYS_ADMIN)"
    exit 77
  fi
  exec unshare --net env IN_NETNS=1 bash "$0" "$@"
fi
pass=0
fail=0
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
unset "${!IDGEN_@}"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
fields() { "$IDGEN" decode --json --layout "$1" "$2"; }

ip link set lo up
# Only loopback so far: no address to take, a clear refusal.
out=$("$IDGEN" snowflake --node worker=@ip 2>&1)
[ $? = 2 ] && [[ $out == *"worker: @ip: no private IPv4 address"* ]] && ok || bad "no private address: $out"
out=$("$IDGEN" snowflake --node worker=@mac 2>&1)
[ $? = 2 ] && [[ $out == *"@mac: no interface that is up"* ]] && ok || bad "no MAC: $out"

ip link add b0 type bridge && ip link set b0 address 02:00:00:ab:cd:ef &&
  ip addr add 192.0.2.7/24 dev b0 && ip addr add 172.16.5.9/24 dev b0 && ip link set b0 up ||
  { echo "SKIP: cannot make a bridge interface in the namespace"; exit 77; }

id=$("$IDGEN" snowflake --layout sonyflake --node machine=@ip 2>/dev/null)
[[ $(fields sonyflake "$id") == *'"machine":1289'* ]] && ok ||
  bad "@ip on sonyflake: machine 1289 (Sonyflake's lower 16 bits of 172.16.5.9): $(fields sonyflake "$id")"
id=$("$IDGEN" snowflake --node datacenter=2 --node worker=@mac 2>"$tmp/warn")
grep -q "^idgen: warning: node values from the host (worker=@mac b0 02:00:00:ab:cd:ef -> 15) are unchecked" \
  "$tmp/warn" && ok || bad "snowflake says the host value is unchecked: $(cat "$tmp/warn")"
[[ $(fields twitter "$id") == *'"datacenter":2,"worker":15'* ]] && ok ||
  bad "@mac on twitter: worker 15: $(fields twitter "$id")"
out=$("$IDGEN" snowflake --registry "file:$tmp/reg" --node datacenter=@ip 2>&1)
[ $? = 2 ] && [[ $out == *"unchecked and the registry file:$tmp/reg leases node values instead"* ]] &&
  ok || bad "@ip with a registry is refused: $out"

# The daemon: says at start that these are unchecked, shows them in /info.
"$IDGEN" serve --registry static --layout sonyflake --node machine=@ip --http 127.0.0.1:0 \
  --resp off 2>"$tmp/log" &
for _ in $(seq 100); do grep -q "event=listen" "$tmp/log" && break; sleep 0.05; done
port=$(sed -n 's/.*event=listen proto=http addr=127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
grep -q 'level=warn event=node_from_host nodes="machine=@ip b0 172.16.5.9 -> 1289" reason="unchecked' \
  "$tmp/log" && ok || bad "serve: the warning at start: $(cat "$tmp/log")"
info=$(curl -s "127.0.0.1:$port/info")
[[ $info == *'"node_from_host":"machine=@ip b0 172.16.5.9 -> 1289"'* ]] && ok || bad "/info: $info"
id=$(curl -s "127.0.0.1:$port/id")
[[ $(fields sonyflake "$id") == *'"machine":1289'* ]] && ok || bad "serve /id: $(fields sonyflake "$id")"
kill %1
wait
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
