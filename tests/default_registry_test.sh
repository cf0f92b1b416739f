#!/usr/bin/env bash
# default_registry_test.sh IDGEN [JS_DIR]: one default registry per host
# (SPEC §8), whatever the user.
#
# 0181e27 gave a user who could not write /var/lib/idgen a registry of its
# own under XDG_STATE_HOME or HOME, silently: a daemon as root and a Node
# application as uid 65534, both on defaults, both leased worker 0 (7.9 M
# duplicates in 25 M IDs).  Now every process that takes the default shares
# /var/lib/idgen or is refused with what to do:
#   1. /var/lib/idgen made by a root daemon (mode 0755): a daemon, `--check-
#      config` and the Node addon as nobody on defaults are refused, naming
#      the directory, the user and the fix; nothing is made for nobody under
#      XDG_STATE_HOME; the per-user directory of an earlier idgen is named.
#   2. /var/lib/idgen missing and nobody cannot make it: refused.
#   3. /var/lib/idgen shared with a group (2770, set-group-ID): a root daemon
#      under the unit's UMask=0027 and a daemon and the Node addon as nobody
#      in that group, from other working directories, lease three tuples; no
#      ID in common; every file the registry made is group-writable.
#   4. A per-user directory named with --registry is used as named.
#   5. A root-made registry shared with the commands case 1's message gives
#      serves two users of the group on two tuples; a user outside a
#      set-group-ID registry's group is refused even where it may write.
#
# It runs itself again in a private mount namespace with a tmpfs over
# /var/lib, so the host's /var/lib/idgen is never seen nor touched; every
# process it starts dies with the namespace.  Needs root (exit 77 otherwise).
# Prints "N passed, N failed".
set -u
IDGEN=$(readlink -f "$1")
JS=${2:+$(readlink -f "$2")}

# shellcheck source=tests/checks.sh
. "$(dirname "$0")/checks.sh"

if [ "${IDGEN_DEFAULT_REGISTRY_NS:-}" != 1 ]; then
  need_root unshare setpriv curl # a mount namespace over /var/lib
  exec env IDGEN_DEFAULT_REGISTRY_NS=1 unshare --mount --propagation private "$0" "$@"
fi

mount -t tmpfs -o mode=0755 idgen-default-registry-test /var/lib || exit 1
tmp=$(mktemp -d)
chmod 0755 "$tmp"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
NOBODY=(setpriv --reuid=65534 --regid=65534 --groups=65534)

# start NAME CWD [PREFIX...] -- ARGS...: `idgen serve` on loopback port 0
# with ARGS, in CWD, as PREFIX runs it (a user), logging to $tmp/NAME.log.
# Waits until it serves (PORT: its HTTP port) or exits (PORT empty).
start() {
  local name=$1 cwd=$2 pre=()
  shift 2
  while [ "$1" != -- ]; do
    pre+=("$1")
    shift
  done
  shift
  (cd "$cwd" && exec "${pre[@]}" "$IDGEN" serve --http 127.0.0.1:0 --resp off \
    --node datacenter=2 "$@") >"$tmp/$name.log" 2>&1 &
  local pid=$! port="" i
  pids+=("$pid")
  echo "$pid" >"$tmp/$name.pid"
  for ((i = 0; i < 600; i++)); do
    port=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/$name.log")
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  PORT=$port
}
stop() { # NAME
  local pid
  pid=$(cat "$tmp/$1.pid")
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
}
exit_of() { # NAME: the exit status of a daemon that did not serve
  local pid
  pid=$(cat "$tmp/$1.pid")
  wait "$pid" 2>/dev/null
  echo $?
}
ids() { # PORT N: N IDs, in batches of 10000
  local left=$2
  while [ "$left" -gt 0 ]; do
    local n=$((left > 10000 ? 10000 : left))
    curl -sf "http://127.0.0.1:$1/id?count=$n" || return 1
    left=$((left - n))
  done
}
worker_of() { # ID: the twitter layout's worker field
  echo $((($1 >> 12) & 31))
}
node_new() { # CODE: runs CODE in node as nobody, with Snowflake in scope
  "${NOBODY[@]}" env HOME=/nonexistent XDG_STATE_HOME="$tmp/xdg-nobody" \
    IDGEN_NODE_ADDON="$JS_ADDON" node -e "const {Snowflake} = require('$JS'); $1"
}
JS_ADDON=""
if [ -n "$JS" ] && command -v node >/dev/null; then
  JS_ADDON=$(dirname "$IDGEN")/js/idgen.node
  [ -f "$JS_ADDON" ] || JS_ADDON=""
fi
mkdir -p "$tmp/cwd-a" "$tmp/cwd-b" "$tmp/xdg-nobody"
chmod 0777 "$tmp/xdg-nobody"

# ---- 1. made by root, not shared: the others are refused -------------------
start root1 / --
port=$PORT
check "1: a root daemon on defaults serves" test -n "$port"
check "1: ... from file:/var/lib/idgen" grep -q 'event=start .*registry=file:/var/lib/idgen' \
  "$tmp/root1.log"
start nobody1 "$tmp/cwd-a" "${NOBODY[@]}" env XDG_STATE_HOME="$tmp/xdg-nobody" --
port2=$PORT
check "1: a daemon as nobody on defaults does not serve" test -z "$port2"
check "1: ... it exits 2 (a setting)" test "$(exit_of nobody1)" = 2
check "1: ... the message names the directory, the user and the fix" \
  grep -q "registry (the default): registry: the host's default registry /var/lib/idgen (group root, mode 0755) is not writable by user nobody (uid 65534) and not shared with a group:.*chgrp -R GROUP /var/lib/idgen.*--registry file:DIR" \
  "$tmp/nobody1.log"
check "1: ... and nothing was made for nobody under XDG_STATE_HOME" \
  test ! -e "$tmp/xdg-nobody/idgen"
out=$("${NOBODY[@]}" "$IDGEN" serve --check-config 2>&1)
check "1: --check-config as nobody: the same refusal" \
  grep -q "the host's default registry /var/lib/idgen .* is not writable by user nobody" <<<"$out"
if [ -n "$JS_ADDON" ]; then
  out=$(node_new "try { new Snowflake(); console.log('LEASED'); } catch (e) { console.log(e.message); }" 2>&1)
  check "1: the Node addon as nobody on defaults: refused, naming the fix" \
    grep -q "the host's default registry /var/lib/idgen .* is not writable by user nobody" <<<"$out"
  leased=$(grep -c LEASED <<<"$out")
  check "1: ... and it leased nothing" test "$leased" = 0
else
  echo "note: no Node addon (JS_DIR not given or node missing): its checks skipped"
fi
mkdir -p "$tmp/xdg-nobody/idgen"
start nobody1b / "${NOBODY[@]}" env XDG_STATE_HOME="$tmp/xdg-nobody" --
port2=$PORT
check "1: an earlier idgen's per-user directory is named, not used" \
  grep -q "an earlier idgen kept this user's default registry in file:$tmp/xdg-nobody/idgen" \
  "$tmp/nobody1b.log"
check "1: ... and stays empty" test -z "$(ls -A "$tmp/xdg-nobody/idgen")"
rmdir "$tmp/xdg-nobody/idgen"
stop root1

# ---- 2. missing, and nobody cannot make it ------------------------------------
rm -rf /var/lib/idgen
start nobody2 / "${NOBODY[@]}" --
port2=$PORT
check "2: missing and not creatable: refused" test -z "$port2"
check "2: ... naming how to make it" \
  grep -q "/var/lib/idgen does not exist and user nobody (uid 65534) cannot create it:.*install -d -m 2770 -g GROUP /var/lib/idgen" \
  "$tmp/nobody2.log"
check "2: ... and nothing was made" test ! -e /var/lib/idgen

# ---- 3. shared with a group: one registry, different tuples ------------------------
install -d -m 2770 -g nogroup /var/lib/idgen
umask 0027 # the unit's
start root3 / --
port_a=$PORT
umask 0022
start nobody3 "$tmp/cwd-b" "${NOBODY[@]}" env HOME=/nonexistent XDG_STATE_HOME="$tmp/xdg-nobody" --
port_b=$PORT
check "3: a root daemon (UMask=0027) on the shared default serves" test -n "$port_a"
check "3: a daemon as nobody in its group, on defaults, serves" test -n "$port_b"
check "3: ... from the same file:/var/lib/idgen" \
  grep -q 'event=start .*registry=file:/var/lib/idgen' "$tmp/nobody3.log"
if [ -n "$port_a" ] && [ -n "$port_b" ]; then
  ids "$port_a" 30000 >"$tmp/a.ids"
  ids "$port_b" 30000 >"$tmp/b.ids"
  wa=$(worker_of "$(head -1 "$tmp/a.ids")") wb=$(worker_of "$(head -1 "$tmp/b.ids")")
  check "3: 30000 IDs from each" test "$(sort -u "$tmp/a.ids" "$tmp/b.ids" | wc -l)" -ge 1
  check "3: two tuples (workers $wa and $wb)" test "$wa" != "$wb"
  dups=$(sort "$tmp/a.ids" "$tmp/b.ids" | uniq -d | wc -l)
  total=$(cat "$tmp/a.ids" "$tmp/b.ids" | wc -l)
  echo "     $total IDs, $dups duplicates"
  check "3: 60000 IDs, no duplicate" test "$total" = 60000 -a "$dups" = 0
  if [ -n "$JS_ADDON" ]; then
    out=$(node_new "const g = new Snowflake({node: 'datacenter=2'}); const l = g.lease(); const id = g.next(); g.close(); console.log('W=' + l.worker + ' ' + l.registry + ' ' + id);" 2>&1)
    wj=$(sed -n 's/^W=\([0-9]*\) .*/\1/p' <<<"$out")
    check "3: the Node addon as nobody on defaults leases from file:/var/lib/idgen" \
      grep -q "^W=[0-9]* file:/var/lib/idgen " <<<"$out"
    check "3: ... a third tuple (worker ${wj:-none})" \
      test -n "$wj" -a "$wj" != "$wa" -a "$wj" != "$wb"
  fi
  list=$("${NOBODY[@]}" "$IDGEN" registry list 2>&1)
  check "3: registry list as nobody, on defaults, shows both holders" \
    test "$(grep -c 'datacenter=2,worker=[0-9]* *held' <<<"$list")" = 2
  bad=$(find /var/lib/idgen -mindepth 1 \( -type f ! -perm -0060 -o -type d ! -perm -2070 \
    -o ! -group nogroup \) -print)
  check "3: every file the registry made is group-writable, in its group" test -z "$bad"
  [ -n "$bad" ] && ls -laR /var/lib/idgen
fi
stop root3
stop nobody3

# ---- 5. made by root, then shared as the refusal says; a user outside its group ----
rm -rf /var/lib/idgen
start root5 / --
stop root5
# Only the top directory shared (as tmpfiles.d or a unit's StateDirectory=
# would do over it): the files root made are still root's alone.
chgrp nogroup /var/lib/idgen && chmod 2770 /var/lib/idgen
start nobody5a / "${NOBODY[@]}" --
check "5: the top directory alone shared: refused, naming the files and the commands" \
  grep -q "Permission denied; this user may not write every file of the registry: share it .*chgrp -R GROUP /var/lib/idgen && chmod -R g+rwX /var/lib/idgen && find /var/lib/idgen -type d -exec chmod g+s {} +" \
  "$tmp/nobody5a.log"
# The commands of case 1's message, as root, with its holders stopped.
chgrp -R nogroup /var/lib/idgen && chmod -R g+rwX /var/lib/idgen &&
  find /var/lib/idgen -type d -exec chmod g+s {} +
OTHER=(setpriv --reuid=65533 --regid=65534 --groups=65534) # another user in the group
start nobody5 / "${NOBODY[@]}" --
port_a=$PORT
start other5 "$tmp/cwd-a" "${OTHER[@]}" --
port_b=$PORT
check "5: shared as the message says: a user in the group serves" test -n "$port_a"
check "5: ... and so does another, on another tuple" \
  test -n "$port_b" -a "$(worker_of "$(curl -sf "http://127.0.0.1:$port_a/id")")" != \
  "$(worker_of "$(curl -sf "http://127.0.0.1:$port_b/id")")"
stop nobody5
stop other5
chmod o+rwx /var/lib/idgen # others may write, but it is the group's
start outsider5 / setpriv --reuid=65532 --regid=65532 --clear-groups --
check "5: a user outside the set-group-ID registry's group is refused, even with the rights" \
  grep -q "is shared with group nogroup, and uid 65532 is not in it .*usermod -aG nogroup" \
  "$tmp/outsider5.log"
chmod o-rwx /var/lib/idgen

# ---- 4. a per-user directory, named ------------------------------------------------
start nobody4 / "${NOBODY[@]}" -- --registry "file:$tmp/xdg-nobody/mine"
port2=$PORT
check "4: a per-user registry named with --registry is used" test -n "$port2"
check "4: ... as named" grep -q "event=start .*registry=file:$tmp/xdg-nobody/mine" "$tmp/nobody4.log"
stop nobody4

for f in "$tmp"/*.log; do
  [ "$fail" = 0 ] || { echo "--- $f"; tail -5 "$f"; }
done
tally
