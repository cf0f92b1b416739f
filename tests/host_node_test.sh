#!/usr/bin/env bash
# Node values from the host (--node NAME=@ip / NAME=@mac): from the interface
# of the default route, never a bridge, a container/VM tool's virtual
# interface or an address many hosts share by convention (docs/DESIGN.md §11).
# Runs in a network namespace of its own (unshare --net: the kernel removes
# it with this process, also when the test fails or is killed), built like a
# public host that runs Docker: a docker0 bridge on 172.17.0.1, made first so
# that it has the lower interface index and a naive pick takes it, and an
# eth0 (a veth, as in a container) on 192.0.2.7 (RFC 5737's documentation
# range, standing for a public address) with the default route via it.  The
# expected values are known: 192.0.2.7 gives Sonyflake's machine ID 2 * 256 +
# 7 = 519; MAC 02:00:00:ab:cd:ef gives twitter's 5-bit worker 0xef & 31 = 15.
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
skip() { echo "SKIP: $*"; exit 77; }
# refused WHAT NODE TEXT...: `idgen snowflake --node NODE` exits 2 and its
# message holds each TEXT.
refused() {
  local what=$1 node=$2 out t
  shift 2
  out=$("$IDGEN" snowflake --node "$node" 2>&1)
  local rc=$?
  [ $rc = 2 ] || { bad "$what: exit $rc, not 2: $out"; return; }
  for t in "$@"; do
    [[ $out == *"$t"* ]] || { bad "$what: no \"$t\" in: $out"; return; }
  done
  ok
}
# takes WHAT LAYOUT NODE DECODED: `idgen snowflake --layout LAYOUT --node
# NODE` makes an ID whose decoded fields hold DECODED.
takes() {
  local id
  id=$("$IDGEN" snowflake --layout "$2" --node "$3" 2>"$tmp/err")
  [[ $(fields "$2" "$id") == *"$4"* ]] && ok || bad "$1: $4: $(fields "$2" "$id") $(cat "$tmp/err")"
}

ip link set lo up
# Only loopback: nothing to take, a clear refusal.
refused "loopback only, @ip" worker=@ip "worker: @ip: no default route" "none but loopback" \
  "give the value by hand"
refused "loopback only, @mac" worker=@mac "worker: @mac: no default route"

# Only a docker0-like bridge on Docker's address, and no default route: the
# old rule (the first private IPv4 address) took 172.17.0.1.
ip link add docker0 type bridge && ip link set docker0 address 02:42:0a:0b:0c:0d &&
  ip addr add 172.17.0.1/16 dev docker0 && ip link set docker0 up ||
  skip "cannot make a bridge interface in the namespace"
refused "only the bridge, @ip" worker=@ip "no default route in the main table" \
  "docker0 (bridge) 172.17.0.1"
refused "only the bridge, @mac" worker=@mac "no default route in the main table" "docker0 (bridge)"
# The default route via the bridge: refused, naming it.
ip route add default via 172.17.0.254 dev docker0
refused "default route via docker0, @ip" worker=@ip "the default route is via docker0, a bridge" \
  "default IPv4 route via docker0 (metric 0)"
refused "default route via docker0, @mac" worker=@mac "the default route is via docker0, a bridge"
ip route del default

# The public host: eth0 (a veth) on 192.0.2.7, the default route via it.
ip link add eth0 type veth peer name eth0p && ip link set eth0 address 02:00:00:ab:cd:ef &&
  ip link set eth0p up && ip link set eth0 up && ip addr add 192.0.2.7/24 dev eth0 &&
  ip route add default via 192.0.2.1 dev eth0 || skip "cannot make a veth pair in the namespace"
[ "$(ip -o link show docker0 | cut -d: -f1)" -lt "$(ip -o link show eth0 | cut -d: -f1)" ] ||
  bad "docker0 should have the lower index"
takes "@ip on sonyflake, not docker0's 172.17.0.1" sonyflake machine=@ip '"machine":519'
id=$("$IDGEN" snowflake --node datacenter=2 --node worker=@mac 2>"$tmp/warn")
grep -q "^idgen: warning: node values from the host (worker=@mac eth0 02:00:00:ab:cd:ef -> 15) are unchecked" \
  "$tmp/warn" && ok || bad "snowflake says the host value is unchecked: $(cat "$tmp/warn")"
[[ $(fields twitter "$id") == *'"datacenter":2,"worker":15'* ]] && ok ||
  bad "@mac on twitter: worker 15: $(fields twitter "$id")"
"$IDGEN" snowflake --node worker=@ip 2>"$tmp/warn" >/dev/null
grep -q "(worker=@ip eth0 192.0.2.7 -> 7)" "$tmp/warn" && ok || bad "@ip names eth0: $(cat "$tmp/warn")"
out=$("$IDGEN" snowflake --registry "file:$tmp/reg" --node datacenter=@ip 2>&1)
[ $? = 2 ] && [[ $out == *"unchecked and the registry file:$tmp/reg leases node values instead"* ]] &&
  ok || bad "@ip with a registry is refused: $out"

# The daemon: says at start that these are unchecked, shows them in /info.
"$IDGEN" serve --registry static --layout sonyflake --node machine=@ip --http 127.0.0.1:0 \
  --resp off 2>"$tmp/log" &
serve_pid=$!
# listening takes milliseconds; up to 60 s for a busy machine
end=$((SECONDS + 60))
until grep -q "event=listen" "$tmp/log" || [ "$SECONDS" -ge "$end" ]; do sleep 0.05; done
port=$(sed -n 's/.*event=listen proto=http addr=127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/log")
grep -q 'level=warn event=node_from_host nodes="machine=@ip eth0 192.0.2.7 -> 519" reason="unchecked' \
  "$tmp/log" && ok || bad "serve: the warning at start: $(cat "$tmp/log")"
info=$(curl -s "127.0.0.1:$port/info")
[[ $info == *'"node_from_host":"machine=@ip eth0 192.0.2.7 -> 519"'* ]] && ok || bad "/info: $info"
id=$(curl -s "127.0.0.1:$port/id")
[[ $(fields sonyflake "$id") == *'"machine":519'* ]] && ok || bad "serve /id: $(fields sonyflake "$id")"
kill "$serve_pid"
wait "$serve_pid"

# Several default routes: the lowest metric wins, whatever the order.
ip link add eth1 type veth peer name eth1p && ip link set eth1p up && ip link set eth1 up &&
  ip addr add 198.51.100.9/24 dev eth1 && ip addr add 198.51.100.10/24 dev eth1 || skip "eth1"
ip route del default && ip route add default via 192.0.2.1 dev eth0 metric 200
ip route add default via 198.51.100.1 dev eth1 metric 100
takes "the lower metric (eth1), its primary address" sonyflake machine=@ip '"machine":'$((100 * 256 + 9))
# The lowest-metric default route via a bridge (by kind, whatever its name):
# refused, not passed over for the next one.
ip link add uplink0 type bridge && ip link set uplink0 up && ip addr add 203.0.113.5/24 dev uplink0
ip route add default via 203.0.113.1 dev uplink0 metric 50
refused "default route via a bridge named uplink0" worker=@ip \
  "the default route is via uplink0, a bridge" "default IPv4 route via uplink0 (metric 50)"
ip route del default via 203.0.113.1 dev uplink0 metric 50
# A virtual interface by its name (here a veth called like Docker's host ends).
ip link add veth1a2b type veth peer name veth1a2c && ip link set veth1a2c up && ip link set veth1a2b up &&
  ip addr add 203.0.113.9/24 dev veth1a2b && ip route add default via 203.0.113.1 dev veth1a2b metric 10
refused "default route via veth1a2b" worker=@ip "the default route is via veth1a2b, by its name a virtual"
ip route del default via 203.0.113.1 dev veth1a2b metric 10
ip route del default via 198.51.100.1 dev eth1 metric 100

# Addresses many hosts hold by convention, on the default route's interface.
conventional() { # WHAT ADDR/PREFIX GATEWAY TEXT
  ip addr flush dev eth0 scope global && ip addr add "$2" dev eth0 &&
    ip route replace default via "$3" dev eth0 metric 200
  refused "$1" worker=@ip "the default route's interface eth0 has ${2%/*}, $4" \
    "default IPv4 route via eth0 (metric 200)"
}
conventional "a QEMU/VirtualBox NAT guest" 10.0.2.15/24 10.0.2.2 "the guest address of QEMU"
conventional "a Docker container" 172.17.0.2/16 172.17.0.1 \
  "an address of Docker's default bridge network"
conventional "a libvirt guest" 192.168.122.87/24 192.168.122.1 "an address of libvirt's default network"
conventional "the host side of docker0" 172.17.0.1/16 172.17.0.254 \
  "an address of Docker's default bridge network"
conventional "a rootless container (slirp4netns)" 10.0.2.100/24 10.0.2.2 \
  "the address slirp4netns gives every rootless container"
conventional "a Podman container" 10.88.0.5/16 10.88.0.1 "an address of Podman's default network"
# A container on a Docker network other than the default one: its address is
# Docker's choice (the same order on every host), told by the MAC Docker made
# from it.
ip link set eth0 address 02:42:ac:12:00:02
conventional "a container of a compose network" 172.18.0.2/16 172.18.0.1 \
  "an address Docker assigned on one of its bridge networks"
refused "a container of a compose network, @mac" worker=@mac \
  "eth0 has MAC 02:42:ac:12:00:02, a MAC Docker made from the interface's address"
ip link set eth0 address 02:00:00:ab:cd:ef
# ...and neighbours of those, which are not conventional, are taken.
ip addr flush dev eth0 scope global && ip addr add 10.0.2.16/24 dev eth0 &&
  ip route replace default via 10.0.2.2 dev eth0 metric 200
takes "10.0.2.16 is not the NAT guest's" sonyflake machine=@ip '"machine":'$((2 * 256 + 16))
# Conventional MACs: QEMU's default and Docker's derived ones.
ip link set eth0 address 52:54:00:12:34:56
refused "QEMU's default MAC" worker=@mac "eth0 has MAC 52:54:00:12:34:56, QEMU's default MAC"
ip link set eth0 address 02:42:ac:11:00:02
refused "Docker's derived MAC" worker=@mac "eth0 has MAC 02:42:ac:11:00:02, a MAC Docker derives"
ip link set eth0 address 02:00:00:ab:cd:ef

# Policy routing: a default route only in another table is not read.
ip route del default
ip route add default via 10.0.2.2 dev eth0 table 7
refused "default route only in table 7" worker=@ip "no default route in the main table" \
  "(and 1 in other tables, which are not read: policy routing)"
ip route del default table 7

# IPv6 only: the default route's global address that is not deprecated (nor
# temporary, tentative or link-local): 2001:db8::5, numerically lower, is
# deprecated.
ip addr flush dev eth0 scope global
if ip -6 addr add 2001:db8::1:208/64 dev eth0 nodad 2>/dev/null; then
  ip -6 addr add 2001:db8::5/64 dev eth0 nodad preferred_lft 0
  ip -6 route add default via 2001:db8::1 dev eth0
  takes "IPv6 only: 2001:db8::1:208" sonyflake machine=@ip '"machine":'$((0x208))
  "$IDGEN" snowflake --node worker=@ip 2>"$tmp/warn" >/dev/null
  grep -q "(worker=@ip eth0 2001:db8::1:208 -> 8)" "$tmp/warn" && ok || bad "IPv6 @ip: $(cat "$tmp/warn")"
  # An IPv4 default route, where there is one, comes first.
  ip addr add 192.0.2.7/24 dev eth0 && ip route add default via 192.0.2.1 dev eth0 metric 500
  takes "IPv4 before IPv6" sonyflake machine=@ip '"machine":519'
else
  echo "note: no IPv6 in the namespace; the IPv6 cases are not run"
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
