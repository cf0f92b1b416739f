#!/usr/bin/env bash
# deb_installed.sh WORK IDGEN_DEB LIBIDGEN0_DEB APP: the packages installed
# with dpkg -i, as a user installs them, then the packaged daemon and a
# non-root application on defaults (tests/deb_test.sh runs it).
#
# Runs itself again in a private mount namespace with overlays over /etc,
# /usr and /var (their changes land in WORK and vanish with the namespace),
# so the host's users, packages and /var/lib/idgen are never touched.
#   - an earlier package's registry (DynamicUser=yes: /var/lib/private/idgen
#     behind a link) is moved back to /var/lib/idgen with its marks;
#   - the postinst makes the user and group idgen and /var/lib/idgen, owned
#     by idgen, mode 2770;
#   - the daemon as the unit runs it (user idgen, UMask=0027, its settings
#     file) on the default registry, and APP (tests/leased.c, built on the
#     package's libidgen-dev) as a user in group idgen, on defaults: two
#     tuples (SPEC §8: one registry per host);
#   - APP as a user outside the group: refused, naming the group to join;
#   - the postinst again, over links to root's files planted in the
#     registry by a member of the group: nothing of root's changes.
# Prints check lines and "N passed, N failed"; exits 1 on a failure, 77
# when it cannot make the namespace.
set -u
work=$1 deb_idgen=$2 deb_lib=$3 app=$4

if [ "${IDGEN_DEB_INSTALLED_NS:-}" != 1 ]; then
  [ "$(id -u)" = 0 ] || { echo "deb_installed: skipped: needs root"; exit 77; }
  grep -qw overlay /proc/filesystems || { echo "deb_installed: skipped: no overlayfs"; exit 77; }
  exec env IDGEN_DEB_INSTALLED_NS=1 unshare --mount --propagation private "$0" "$@"
fi

# shellcheck source=tests/checks.sh
. "$(dirname "$0")/checks.sh"
CHECK_PREFIX="deb_installed: "
finish() {
  tally
  exit
}
daemon=""
cleanup() {
  if [ -n "$daemon" ]; then
    kill -KILL "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
  fi
}
trap cleanup EXIT

for d in etc usr var; do
  mkdir -p "$work/ov-$d/upper" "$work/ov-$d/work"
  mount -t overlay "ov-$d" -o "lowerdir=/$d,upperdir=$work/ov-$d/upper,workdir=$work/ov-$d/work" \
    "/$d" || { echo "deb_installed: skipped: cannot overlay /$d"; exit 77; }
done
chmod 0755 "$work"

# An earlier package's registry, as systemd kept it under DynamicUser=yes.
rm -rf /var/lib/idgen /var/lib/private/idgen
mkdir -p /var/lib/private
chmod 0700 /var/lib/private
"$app" file:/var/lib/private/idgen >"$work/old.id" || echo "could not make the old registry" >&2
ln -s private/idgen /var/lib/idgen
old_pool=$(cat /var/lib/private/idgen/epoch=*/pool | od -An -c | head -c 200)

DEBIAN_FRONTEND=noninteractive dpkg -i "$deb_lib" "$deb_idgen" >"$work/dpkg.log" 2>&1
check "dpkg -i libidgen0 idgen" test $? = 0 || tail -20 "$work/dpkg.log" >&2
check "the group idgen" getent group idgen
check "the system user idgen, in group idgen" \
  test "$(id -gn idgen 2>/dev/null)" = idgen
check "/var/lib/idgen: a directory (not the old link), idgen:idgen, 2770" \
  test ! -L /var/lib/idgen -a "$(stat -c '%U:%G %a' /var/lib/idgen 2>/dev/null)" = "idgen:idgen 2770"
check "the earlier registry moved back with its marks" \
  test "$(cat /var/lib/idgen/epoch=*/pool 2>/dev/null | od -An -c | head -c 200)" = "$old_pool"
unit=/lib/systemd/system/idgen.service
check "the unit runs as User=idgen, Group=idgen" grep -qx 'User=idgen' "$unit"
check "... StateDirectoryMode=2770, no DynamicUser" \
  bash -c "grep -qx 'StateDirectoryMode=2770' '$unit' && ! grep -q '^DynamicUser' '$unit'"
check "sysusers.d and tmpfiles.d name the same" \
  bash -c "grep -q '^u idgen ' /usr/lib/sysusers.d/idgen.conf && grep -q '^d /var/lib/idgen 2770 idgen idgen' /usr/lib/tmpfiles.d/idgen.conf"

# The daemon as the unit starts it: its user and group, UMask=0027, the
# settings file, on the default registry (only the ports are set, to ones it
# picks, as `systemctl edit` would).
(
  umask 0027
  set -a
  # shellcheck disable=SC1091
  . /etc/idgen/idgen.env
  set +a
  exec setpriv --reuid=idgen --regid=idgen --init-groups env IDGEN_HTTP=127.0.0.1:0 \
    IDGEN_RESP=off /usr/bin/idgen serve
) >"$work/daemon.log" 2>&1 &
daemon=$!
port=""
# listening takes milliseconds; 60 s (600 x 0.1) are for a busy machine
for _ in $(seq 600); do
  port=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$work/daemon.log")
  [ -n "$port" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
check "the packaged daemon serves, on file:/var/lib/idgen" \
  grep -q 'event=start .*registry=file:/var/lib/idgen' "$work/daemon.log"
[ -n "$port" ] || { tail -5 "$work/daemon.log" >&2; finish; }
dw=$(sed -n 's/.*event=lease .* worker=\([0-9]*\) .*/\1/p' "$work/daemon.log")

useradd --no-create-home --shell /usr/sbin/nologin --groups idgen idgen-test-app
useradd --no-create-home --shell /usr/sbin/nologin idgen-test-other
id=$(setpriv --reuid=idgen-test-app --regid=idgen-test-app --init-groups "$app" default 2>"$work/app.err")
check "an application in group idgen, on defaults, leases" grep -qxE '[0-9]+' <<<"$id"
aw=$(((${id:-0} >> 12) & 31))
check "... another tuple than the daemon's (worker $aw, the daemon's ${dw:-?})" \
  test -n "$id" -a -n "$dw" -a "$aw" != "${dw:-x}"
ids=$(curl -fsS --max-time 60 "http://127.0.0.1:$port/id?count=1000")
check "... none of the daemon's IDs is its ID" bash -c "! grep -qx '${id:-x}' <<<'$ids'"
out=$(setpriv --reuid=idgen-test-other --regid=idgen-test-other --init-groups "$app" default 2>&1)
check "an application outside group idgen: refused, naming the group to join" \
  grep -q "is not writable by user idgen-test-other (uid [0-9]*): .* join its group (as root: usermod -aG idgen idgen-test-other" <<<"$out"
bad=$(find /var/lib/idgen -mindepth 1 \( -type f ! -perm -0060 -o ! -group idgen \) -print)
check "every file in /var/lib/idgen is group idgen's, group-writable" test -z "$bad"
[ -z "$bad" ] || ls -laR /var/lib/idgen >&2

kill -TERM "$daemon"
wait "$daemon"
check "the daemon stops with 0" test $? = 0
daemon=""

# An upgrade's postinst over a registry a member of the group has written
# in: a link to root's secret changes nothing of root's (a review: the
# first postinst's chgrp/chmod followed it and gave the group /etc's file).
install -m 0600 /dev/null /etc/idgen-test-secret
setpriv --reuid=idgen-test-app --regid=idgen-test-app --init-groups \
  ln -s /etc/idgen-test-secret /var/lib/idgen/planted
setpriv --reuid=idgen-test-app --regid=idgen-test-app --init-groups \
  ln -s /etc/idgen-test-secret "$(ls -d /var/lib/idgen/epoch=* | head -1)/pool.planted"
/var/lib/dpkg/info/idgen.postinst configure 0.1.0-2 >"$work/reconfigure.log" 2>&1
check "the postinst again (an upgrade) runs" test $? = 0
check "... and a link planted by a member of the group changed nothing of root's" \
  test "$(stat -c '%U:%G %a' /etc/idgen-test-secret)" = "root:root 600"
finish
