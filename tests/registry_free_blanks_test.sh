#!/bin/sh
# `idgen registry free` reads its tuple with the one node-list rule: spaces
# and tabs around items and around '=' are ignored, as for --node, the
# daemon's node setting and the extension's idgen.node. A tuple spelled with
# blanks gets the same answer as its plain spelling; blanks inside a name or
# a value are still refused.
# Usage: tests/registry_free_blanks_test.sh [build/idgen]  (or: ctest -R registry.free_blanks)
set -u
B=${1:-build/idgen}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
P='epoch=1288834974657,tick=1ms,time@22,sequence@0:12'
"$B" snowflake -n 1 --registry "file:$D" --node datacenter=1 >/dev/null || exit 1
tab=$(printf '\t')
plain=$("$B" registry free --registry "file:$D" "$P" "datacenter=01,worker=0" 2>&1)
rc1=$?
blank=$("$B" registry free --registry "file:$D" "$P" " datacenter = 01 ,${tab}worker=0${tab}" 2>&1)
rc2=$?
if [ "$rc1" != "$rc2" ] || [ "$plain" != "$blank" ]; then
  echo "FAIL: plain spelling: rc=$rc1 $plain"
  echo "      with blanks:    rc=$rc2 $blank"
  exit 1
fi
inner=$("$B" registry free --registry "file:$D" "$P" "datacenter=0 1,worker=0" 2>&1)
if [ $? != 2 ]; then
  echo "FAIL: a blank inside a value was taken: $inner"
  exit 1
fi
echo ok
