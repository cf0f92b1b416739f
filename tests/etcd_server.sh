#!/usr/bin/env bash
# etcd_server.sh -- a throwaway etcd 3.4 cluster on loopback for the etcd://
# registry tests (tests/registry/ and tests/cluster/, through
# tests/components.py; the C contract's etcd_start fixture).
#
#   tests/etcd_server.sh start DIR PORT [N [tls]]
#                                            N members (default 1) with data
#                                            under DIR (created; must not exist,
#                                            or be left over from an earlier
#                                            start); member I listens for
#                                            clients on 127.0.0.1:PORT+2I and for
#                                            peers on PORT+2I+1; waits until the
#                                            cluster has a leader and prints the
#                                            registry URI on stdout:
#                                            etcd://127.0.0.1:PORT[,...]
#                                            With `tls`, clients must speak TLS
#                                            with a client certificate: a CA,
#                                            server and client certificates are
#                                            made under DIR/tls (openssl), and
#                                            the URI carries ?cacert=&cert=&key=
#   tests/etcd_server.sh stop DIR            stop every member and remove DIR
#   tests/etcd_server.sh kill DIR I          SIGKILL member I (and wait for it)
#   tests/etcd_server.sh term DIR I          SIGTERM member I (and wait for it)
#   tests/etcd_server.sh restart DIR I...    start members I... again on their
#                                            data, then wait until each is healthy
#   tests/etcd_server.sh pause DIR I         SIGSTOP member I
#   tests/etcd_server.sh resume DIR I        SIGCONT member I
#   tests/etcd_server.sh leader DIR          print the index of the leader
#
# ETCD_HOSTS=A0,A1,... at start: member I listens on address AI instead of
# 127.0.0.1; ETCD_NETNS=NS0,NS1,...: member I runs in network namespace NSI
# (the cluster test's hosts).  Both are kept in DIR for the other commands.
# Everything but the URI and the leader goes to stderr; member I's log is
# DIR/mI.log, its pid in DIR/mI.pid.
set -euo pipefail

MARK=.idgen-etcd-server # marks a DIR this script made, so that only such a DIR is removed

die() {
  echo "etcd_server.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start DIR PORT [N [tls]] | stop DIR | kill|term|pause|resume DIR I | restart DIR I... | leader DIR" >&2
  exit 2
}

command -v etcd >/dev/null || die "etcd not found (scripts/install-deps.sh installs etcd-server)"

port_busy() {
  (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null
}

# Word I (from 0) of a comma-separated list, or $3 if the list is shorter.
nth() {
  local IFS=, words
  read -r -a words <<<"$1"
  echo "${words[$2]:-$3}"
}

# Member I's address; the namespace it runs in (empty: this one).
host_of() {
  nth "$(cat "$1/hosts" 2>/dev/null)" "$2" 127.0.0.1
}
netns_of() {
  nth "$(cat "$1/netns" 2>/dev/null)" "$2" ""
}

# Member I's command line; $3: new or existing.
member_args() {
  local dir=$1 i=$2 state=$3 port n cluster="" j scheme=http tls=() h
  port=$(cat "$dir/port")
  n=$(cat "$dir/members")
  h=$(host_of "$dir" "$i")
  if [ -e "$dir/tls/ca.pem" ]; then
    scheme=https
    tls=(--cert-file "$dir/tls/server.pem" --key-file "$dir/tls/server.key"
      --client-cert-auth --trusted-ca-file "$dir/tls/ca.pem")
  fi
  for ((j = 0; j < n; j++)); do
    cluster+="${cluster:+,}m$j=http://$(host_of "$dir" "$j"):$((port + 2 * j + 1))"
  done
  echo --name "m$i" --data-dir "$dir/m$i.data" \
    --listen-client-urls "$scheme://$h:$((port + 2 * i))" \
    --advertise-client-urls "$scheme://$h:$((port + 2 * i))" \
    --listen-peer-urls "http://$h:$((port + 2 * i + 1))" \
    --initial-advertise-peer-urls "http://$h:$((port + 2 * i + 1))" \
    --initial-cluster "$cluster" --initial-cluster-state "$state" \
    --initial-cluster-token "idgen-test-$port" \
    --heartbeat-interval 50 --election-timeout 500 "${tls[@]}"
}

# A CA, a server certificate for 127.0.0.1 and a client certificate, under DIR/tls.
make_certs() {
  local t=$1/tls
  mkdir -p "$t"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=idgen-test-ca \
    -keyout "$t/ca.key" -out "$t/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -keyout "$t/server.key" \
    -out "$t/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >"$t/server.ext"
  openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
    -days 2 -extfile "$t/server.ext" -out "$t/server.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj /CN=idgen-client -keyout "$t/client.key" \
    -out "$t/client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$t/client.ext"
  openssl x509 -req -in "$t/client.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
    -days 2 -extfile "$t/client.ext" -out "$t/client.pem" 2>/dev/null
}

start_member() {
  local dir=$1 i=$2 state=$3 ns in_ns=()
  ns=$(netns_of "$dir" "$i")
  [ -z "$ns" ] || in_ns=(ip netns exec "$ns") # execs etcd: $! stays the member's pid
  # shellcheck disable=SC2046 # the arguments have no spaces
  setsid "${in_ns[@]}" etcd $(member_args "$dir" "$i" "$state") >>"$dir/m$i.log" 2>&1 </dev/null &
  echo $! >"$dir/m$i.pid"
}

# Whether process PID has exited: gone, or a zombie (it is not this
# script's child: whoever inherited it reaps it in its own time).
exited() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) } # the fields after the command name: the state first
  [ "${stat:0:1}" = Z ]
}

# Waits (at most $3 tenths of a second) until member I's recorded process
# has exited; false if it has not.
wait_gone() {
  local pid
  pid=$(cat "$1/m$2.pid")
  for _ in $(seq 1 "$3"); do
    exited "$pid" && return 0
    sleep 0.1
  done
  exited "$pid"
}

# Waits until member I answers /health with a leader: about a second on a
# quiet machine, at most 90 s on a busy one.
wait_healthy() {
  local dir=$1 i=$2 port c=(curl -s -m 5) scheme=http end=$((SECONDS + 90))
  port=$(cat "$dir/port")
  if [ -e "$dir/tls/ca.pem" ]; then
    scheme=https
    c+=(--cacert "$dir/tls/ca.pem" --cert "$dir/tls/client.pem" --key "$dir/tls/client.key")
  fi
  until "${c[@]}" "$scheme://$(host_of "$dir" "$i"):$((port + 2 * i))/health" 2>/dev/null |
    grep -q '"health":"true"'; do
    if [ "$SECONDS" -ge "$end" ]; then
      tail -n 20 "$dir/m$i.log" >&2
      die "member $i of $dir did not become healthy in 90 s"
    fi
    sleep 0.1
  done
}

uri() {
  local dir=$1 port n u="" j
  port=$(cat "$dir/port")
  n=$(cat "$dir/members")
  for ((j = 0; j < n; j++)); do
    u+="${u:+,}$(host_of "$dir" "$j"):$((port + 2 * j))"
  done
  if [ -e "$dir/tls/ca.pem" ]; then
    u+="?cacert=$dir/tls/ca.pem&cert=$dir/tls/client.pem&key=$dir/tls/client.key"
  fi
  echo "etcd://$u"
}

stop_all() {
  local dir=$1 f pid
  for f in "$dir"/m*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    kill -CONT "$pid" 2>/dev/null || true
    kill -KILL "$pid" 2>/dev/null || true
  done
  for f in "$dir"/m*.pid; do
    [ -e "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  done
}

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || usage
case $cmd in
start)
  port=${3:-}
  n=${4:-1}
  tls=${5:-}
  [[ $port =~ ^[0-9]+$ ]] && [[ $n =~ ^[1-9]$ ]] && [[ $tls =~ ^(tls)?$ ]] || usage
  if [ -e "$dir" ]; then
    [ -e "$dir/$MARK" ] || die "$dir exists and is not a directory this script made"
    stop_all "$dir"
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  touch "$dir/$MARK"
  echo "$port" >"$dir/port"
  echo "$n" >"$dir/members"
  [ -z "${ETCD_HOSTS:-}" ] || echo "$ETCD_HOSTS" >"$dir/hosts"
  [ -z "${ETCD_NETNS:-}" ] || echo "$ETCD_NETNS" >"$dir/netns"
  for ((j = 0; j < 2 * n; j++)); do
    ! port_busy "$(host_of "$dir" $((j / 2)))" $((port + j)) || die "port $((port + j)) is in use"
  done
  [ -z "$tls" ] || make_certs "$dir"
  for ((j = 0; j < n; j++)); do
    start_member "$dir" "$j" new
  done
  for ((j = 0; j < n; j++)); do
    wait_healthy "$dir" "$j"
  done
  uri "$dir"
  ;;
stop)
  [ -e "$dir" ] || exit 0
  [ -e "$dir/$MARK" ] || die "$dir is not a directory this script made"
  stop_all "$dir"
  rm -rf "$dir"
  ;;
kill | term | pause | resume)
  i=${3:-}
  [[ $i =~ ^[0-9]$ ]] || usage
  sig=KILL
  [ "$cmd" = term ] && sig=TERM
  [ "$cmd" = pause ] && sig=STOP
  [ "$cmd" = resume ] && sig=CONT
  kill -$sig "$(cat "$dir/m$i.pid")"
  case $cmd in
  kill) wait_gone "$dir" "$i" 50 || true ;;
  term) # at most 10 s, then SIGKILL, as a service manager would
    wait_gone "$dir" "$i" 100 || {
      kill -KILL "$(cat "$dir/m$i.pid")" 2>/dev/null || true
      wait_gone "$dir" "$i" 50 || true
    }
    ;;
  esac
  ;;
restart)
  shift 2
  [ $# -gt 0 ] || usage
  for i in "$@"; do
    [[ $i =~ ^[0-9]$ ]] || usage
  done
  for i in "$@"; do
    start_member "$dir" "$i" existing
  done
  for i in "$@"; do
    wait_healthy "$dir" "$i"
  done
  ;;
leader)
  port=$(cat "$dir/port")
  n=$(cat "$dir/members")
  for ((j = 0; j < n; j++)); do
    s=$(curl -s -m 1 -X POST -d '{}' "http://$(host_of "$dir" "$j"):$((port + 2 * j))/v3/maintenance/status" 2>/dev/null) || continue
    python3 -c '
import json, sys
s = json.loads(sys.argv[1])
sys.exit(0 if s.get("leader") and s["leader"] == s["header"]["member_id"] else 1)' "$s" && {
      echo "$j"
      exit 0
    }
  done
  die "no member says it is the leader"
  ;;
*)
  usage
  ;;
esac
