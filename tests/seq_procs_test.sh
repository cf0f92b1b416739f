#!/bin/sh
# Sequences across processes on one file: registry (tests/seq_worker.c):
#   1. 8 processes x 200,000 numbers of one sequence: no duplicates, each
#      process's numbers increasing, and after all closed the record's
#      claimed = issued + given + lost;
#   2. 3 holders with a TTL of 300 ms, one stopped (SIGSTOP) for 1.5 s:
#      the others reap it; continued, it is fenced out, registers again
#      with a late report; no duplicates, the accounting exact.
set -eu
worker=$1
dir=$(mktemp -d /tmp/idgen-seqprocs-XXXXXX)
trap 'rm -rf "$dir"' EXIT
uri="file:$dir/reg"

pids=
for i in 1 2 3 4 5 6 7 8; do
  "$worker" take "$uri" many 200000 "$dir/many.$i" &
  pids="$pids $!"
done
for p in $pids; do wait "$p"; done
"$worker" check "$uri" many "$dir"/many.*

"$worker" take "$uri" paused 60000 "$dir/paused.1" 300 20 &
a=$!
"$worker" take "$uri" paused 60000 "$dir/paused.2" 300 20 &
b=$!
"$worker" take "$uri" paused 60000 "$dir/paused.3" 300 20 &
c=$!
sleep 0.5
kill -STOP "$a"
sleep 1.5
kill -CONT "$a"
wait "$a"
wait "$b"
wait "$c"
out=$("$worker" check "$uri" paused "$dir"/paused.*)
echo "$out"
case $out in
*" lost=0 "*) echo "seq_procs: the stopped holder was not reaped (lost=0)" >&2; exit 1 ;;
esac
