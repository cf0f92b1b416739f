#!/usr/bin/env bash
# A sequence's registry down for longer than a range lasts (tests/seq_down.c),
# on a server of the test's own (the shared fixtures' servers keep running):
#   postgres  a throwaway PostgreSQL (tests/pg_server.sh), stopped with
#             `pause` and started again with `resume`;
#   etcd      a throwaway one-member etcd (tests/etcd_server.sh), its member
#             SIGKILLed and restarted on its data;
#   etcd3     a throwaway three-member etcd whose leader is SIGKILLed for as
#             long, then restarted: the others elect a new leader and the
#             holders are served throughout (seq_down ... failover).
# Then the accounting as idgen_seq_list() reports it (tests/seq_list_check.c).
#
#   seq_down_test.sh postgres|etcd|etcd3 SEQ_DOWN SEQ_LIST_CHECK
set -euo pipefail
backend=$1 down=$2 check=$3
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/idgen-seqdown-XXXXXX)
chmod 755 "$dir" # the postgres user makes its data under it
srv=$dir/srv
cleanup() {
  case $backend in
  postgres) "$here/pg_server.sh" stop "$srv" >/dev/null 2>&1 || true ;;
  etcd*) "$here/etcd_server.sh" stop "$srv" >/dev/null 2>&1 || true ;;
  esac
  rm -rf "$dir"
}
trap cleanup EXIT
# Free ports below the ephemeral range (an etcd member takes a pair).
port=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import components; print(components.free_ports_below_ephemeral(6, 23000))' "$here")
mode=

case $backend in
postgres)
  uri=$("$here/pg_server.sh" start "$srv" "$port")
  stop_cmd="'$here/pg_server.sh' pause '$srv'"
  start_cmd="'$here/pg_server.sh' resume '$srv'"
  ;;
etcd)
  uri=$("$here/etcd_server.sh" start "$srv" "$port")
  stop_cmd="'$here/etcd_server.sh' kill '$srv' 0"
  start_cmd="'$here/etcd_server.sh' restart '$srv' 0"
  ;;
etcd3)
  uri=$("$here/etcd_server.sh" start "$srv" "$port" 3)
  leader=$("$here/etcd_server.sh" leader "$srv")
  port=$((port + 2 * leader))
  echo "the leader is member $leader (127.0.0.1:$port)"
  stop_cmd="'$here/etcd_server.sh' kill '$srv' $leader"
  start_cmd="'$here/etcd_server.sh' restart '$srv' $leader"
  mode=failover
  ;;
*)
  echo "usage: $0 postgres|etcd|etcd3 SEQ_DOWN SEQ_LIST_CHECK" >&2
  exit 2
  ;;
esac
uri="$uri$(case $uri in *'?'*) echo '&' ;; *) echo '?' ;; esac)space=down"

"$down" "$uri" "127.0.0.1:$port" "$stop_cmd" "$start_cmd" $mode | tee "$dir/out"
issued=$(sed -n 's/^ISSUED=//p' "$dir/out")
"$check" "$uri" down "$issued"
echo "1 passed, 0 failed"
