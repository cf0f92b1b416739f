#!/usr/bin/env bash
# frozen_registry_test.sh IDGEN: a file: registry whose file system stops
# answering (fsfreeze, as a snapshot tool or a hung mount does) holds no
# caller past its bound (issue 39.3; include/idgen.h IDGEN_REGISTRY_CALL_MS).
#
# 0181e27 held `idgen snowflake --registry file:…` and a daemon's start for
# the whole freeze (9.9 s of a 10 s one; for ever on a hung mount).  Now:
#   1. `idgen snowflake` on a frozen registry says so, naming the registry,
#      within max_start_wait_ms + 2 s (its exit status follows the thaw: a
#      thread in an uninterruptible write cannot be ended, and the kernel
#      reaps no process before all its threads end), also when the
#      registry's directory is still to be made; `idgen registry list` only
#      reads, and answers;
#   2. a daemon started on a frozen registry logs the same and stops trying
#      within the bound;
#   3. a daemon whose registry freezes while it serves: `/health` answers
#      throughout; SIGTERM logs its exit within shutdown + the release's
#      bound; after the thaw the tuple is free again and a new holder starts
#      above every ID the frozen one issued.
# The file system is a 64 MB ext4 image of the test's own, loop-mounted in
# its temporary directory, always thawed and unmounted on exit.  Needs root
# and a loop device (exit 77 otherwise).  Prints "N passed, N failed".
set -u
IDGEN=$(readlink -f "$1")
# shellcheck source=tests/checks.sh
. "$(dirname "$0")/checks.sh"
need_root fsfreeze mkfs.ext4 losetup curl # mount, fsfreeze
tmp=$(mktemp -d)
mnt=$tmp/mnt
pids=()
cleanup() {
  fsfreeze -u "$mnt" 2>/dev/null
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  umount "$mnt" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$mnt"
truncate -s 64M "$tmp/fs.img"
mkfs.ext4 -q "$tmp/fs.img" || exit 1
mount -o loop "$tmp/fs.img" "$mnt" 2>"$tmp/mount.err" || {
  echo "skipped: cannot loop-mount an image ($(cat "$tmp/mount.err"))"
  exit 77
}
reg=file:$mnt/reg

ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_for FILE REGEX SECONDS: until FILE has a line matching REGEX; the ms
# it took, or nothing.
wait_for() {
  local t0 i
  t0=$(ms)
  for ((i = 0; i < $3 * 20; i++)); do
    grep -qE "$2" "$1" 2>/dev/null && { echo $(($(ms) - t0)); return; }
    sleep 0.05
  done
}

# The registry made while it answers (so that a freeze finds one to use).
"$IDGEN" snowflake --registry "$reg" -n 1 >/dev/null || exit 1

# ---- 1. the CLI on a frozen registry -------------------------------------------
fsfreeze -f "$mnt"
"$IDGEN" snowflake --registry "$reg" --max-start-wait-ms 500 -n 1 >"$tmp/cli.out" 2>"$tmp/cli.err" &
cli=$!
pids+=("$cli")
took=$(wait_for "$tmp/cli.err" "idgen: registry $reg: the acquisition did not finish within 2500 ms" 20)
check "1: the CLI gives up within its bound (max_start_wait_ms 500 + 2000; took ${took:-more than 20000} ms)" \
  test -n "$took" -a "${took:-99999}" -lt 5000
check "1: ... naming the registry and the file system" \
  grep -q "its file system does not answer" "$tmp/cli.err"

"$IDGEN" snowflake --registry "file:$mnt/new" -n 1 >"$tmp/cli-new.out" 2>"$tmp/cli-new.err" &
pids+=($!)
took=$(wait_for "$tmp/cli-new.err" "idgen: registry file:$mnt/new: the opening did not finish within 2000 ms" 20)
check "1: ... and on a registry still to be made there, within 2000 ms (took ${took:-more than 20000} ms)" \
  test -n "$took" -a "${took:-99999}" -lt 4500
t0=$(ms)
timeout 20 "$IDGEN" registry list --registry "$reg" >"$tmp/list.out" 2>&1
rc=$?
check "1: registry list reads a frozen registry (exit $rc, $(($(ms) - t0)) ms)" \
  test "$rc" = 0 -a "$(grep -c '^registry ' "$tmp/list.out")" = 1

# ---- 2. a daemon started on a frozen registry -----------------------------------
"$IDGEN" serve --http 127.0.0.1:0 --resp off --registry "$reg" --max-start-wait-ms 0 \
  >"$tmp/d1.log" 2>&1 &
pids+=($!)
took=$(wait_for "$tmp/d1.log" "registry $reg: the acquisition did not finish within 2000 ms" 20)
check "2: a daemon's start gives up within its bound (took ${took:-more than 20000} ms)" \
  test -n "$took" -a "${took:-99999}" -lt 4500
fsfreeze -u "$mnt"
wait "$cli"
check "1: after the thaw the CLI exits 1, having issued nothing" \
  test $? = 1 -a ! -s "$tmp/cli.out"

# ---- 3. frozen under a serving daemon ----------------------------------------------
"$IDGEN" serve --http 127.0.0.1:0 --resp off --registry "$reg" --shutdown-timeout-ms 1000 \
  >"$tmp/d2.log" 2>&1 &
d2=$!
pids+=("$d2")
wait_for "$tmp/d2.log" "event=listen proto=http" 20 >/dev/null
port=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/d2.log")
check "3: a daemon serves on the registry" test -n "$port"
curl -sf "http://127.0.0.1:$port/id?count=1000" >"$tmp/before.ids"
fsfreeze -f "$mnt"
slow=0
for _ in $(seq 12); do # about 3 s frozen: past the release's bound
  t0=$(ms)
  curl -s --max-time 5 -o /dev/null "http://127.0.0.1:$port/health"
  [ $(($(ms) - t0)) -lt 1000 ] || slow=$((slow + 1))
  curl -s --max-time 5 "http://127.0.0.1:$port/id?count=100" >>"$tmp/frozen.ids"
  sleep 0.25
done
check "3: /health answers throughout the freeze (slow answers: $slow)" test "$slow" = 0
kill -TERM "$d2"
took=$(wait_for "$tmp/d2.log" "event=exit" 20)
check "3: SIGTERM on a frozen registry: the exit is logged within shutdown + release bounds (${took:-more than 20000} ms)" \
  test -n "$took" -a "${took:-99999}" -lt 6000
fsfreeze -u "$mnt"
wait "$d2"
check "3: after the thaw the daemon's exit status is 0" test $? = 0
"$IDGEN" serve --http 127.0.0.1:0 --resp off --registry "$reg" >"$tmp/d3.log" 2>&1 &
d3=$!
pids+=("$d3")
wait_for "$tmp/d3.log" "event=listen proto=http" 20 >/dev/null
port=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/d3.log")
curl -sf "http://127.0.0.1:$port/id?count=1000" >"$tmp/after.ids"
kill -TERM "$d3"
wait "$d3"
last=$(cat "$tmp/before.ids" "$tmp/frozen.ids" | grep -E '^[0-9]+$' | sort -n | tail -1)
first=$(sort -n "$tmp/after.ids" | head -1)
check "3: the next holder serves after the thaw" test -n "$first"
check "3: ... above every ID the frozen one issued ($first > $last)" \
  test -n "$first" -a -n "$last" -a "${first:-0}" -gt "${last:-0}"
check "3: ... and none repeats" \
  test -z "$(cat "$tmp/before.ids" "$tmp/frozen.ids" "$tmp/after.ids" | grep -E '^[0-9]+$' | sort | uniq -d)"

[ "${SHOW_LOGS:-}" = "" ] && [ "$fail" = 0 ] || for f in "$tmp"/*.log "$tmp"/*.err; do echo "--- $f"; tail -8 "$f"; done
tally
