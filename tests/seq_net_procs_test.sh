#!/bin/sh
# One sequence across processes on a network registry (postgres:// or
# etcd://; the file: case is seq_procs_test.sh):
#   8 processes x 200,000 numbers of one sequence, each process checking
#   that its numbers increase (tests/seq_worker.c take); then no number in
#   two places and the record's accounting (seq_worker check), and the same
#   accounting as idgen_seq_list() reports it (tests/seq_list_check.c).
#
#   seq_net_procs_test.sh WORKER LIST_CHECK URI
#
# The sequence lives in an ID space of the run's own (?space=), so runs
# sharing one server never meet.
set -eu
worker=$1 check=$2 base=$3
dir=$(mktemp -d /tmp/idgen-seqnet-XXXXXX)
trap 'rm -rf "$dir"' EXIT
case $base in
*'?'*) uri="$base&space=procs$$" ;;
*) uri="$base?space=procs$$" ;;
esac

start=$(date +%s)
pids=
for i in 1 2 3 4 5 6 7 8; do
  "$worker" take "$uri" many 200000 "$dir/many.$i" &
  pids="$pids $!"
done
for p in $pids; do wait "$p"; done
"$worker" check "$uri" many "$dir"/many.*
"$check" "$uri" many 1600000
echo "seq_net_procs: 8 x 200000 numbers in $(($(date +%s) - start)) s"
echo "1 passed, 0 failed"
