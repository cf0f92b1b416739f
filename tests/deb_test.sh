#!/usr/bin/env bash
# deb_test.sh -- the Debian packages (debian/), built and used the usual way.
#
#   tests/deb_test.sh [SOURCE_DIR]     (default: this script's ../)
#
# Builds the packages as `make deb` does (scripts/build-deb.sh: the files git
# lists, tracked and untracked but not ignored, as they are in the working
# tree, so uncommitted changes are tested, copied into a temporary directory,
# then `dpkg-buildpackage -us -uc -b` there with
# DEB_BUILD_OPTIONS="nocheck parallel=2"), then:
#   - lintian on the .changes: no error or warning (info tags are printed);
#   - `dpkg-deb -c`: idgen, libidgen0 and libidgen-dev each hold what belongs
#     there (and no libidgen-registry.so); idgen's postinst enables the unit,
#     /etc/idgen/idgen.env is a conffile whose examples the daemon takes;
#   - the three packages unpacked (dpkg -x) into a fresh directory tree: the
#     tree's `idgen --version`, and a short daemon session from it (HTTP and
#     RESP on ports it picks, a file: registry in the temporary directory):
#     an ID with curl, IDs with redis-cli, SIGTERM, exit status 0;
#   - the binaries hardened (PIE, RELRO, BIND_NOW, stack protector, fortify);
#   - a C program built with the tree's pkg-config files against its header
#     and libidgen.so.0, and one with its libidgen-registry.a taking a lease;
#   - the packages installed with dpkg -i in a mount namespace
#     (tests/deb_installed.sh): the packaged daemon and a non-root
#     application on defaults share /var/lib/idgen and lease two tuples.
# Exits 77 (skipped) when dpkg-buildpackage, debhelper or lintian is missing.
# Removes the temporary directory and stops the daemon on any exit.  Ends
# with the line "N passed, N failed".
# The functions below are called through check and the traps.
# shellcheck disable=SC2317
set -u
src=$(cd "${1:-$(dirname "$0")/..}" && pwd)

skip() { echo "deb_test: skipped: $*" >&2; exit 77; }
for tool in dpkg-buildpackage dpkg-deb dh lintian git cc readelf pkg-config curl redis-cli; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (the package build and this test need dpkg-dev," \
    "debhelper, lintian, curl and redis-tools: scripts/install-deps.sh)"
done
git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1 || skip "$src is not a git work tree"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-deb.XXXXXX")
daemon=""
cleanup() {
  if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
    kill -KILL "$daemon" 2>/dev/null
    wait "$daemon" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

pass=0
fail=0
check() { if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $*" >&2; fi; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" = 0 ]; exit; }
t0=$SECONDS

# ---- the build --------------------------------------------------------------
# The same build as `make deb` (scripts/build-deb.sh: a copy of the working
# tree, dpkg-buildpackage -us -uc -b), its products into $tmp.
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
upstream=${version%-*}
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
echo "deb_test: scripts/build-deb.sh (idgen $version, $arch)"
if ! "$src/scripts/build-deb.sh" "$tmp" >/dev/null; then
  echo "FAIL: scripts/build-deb.sh" >&2
  fail=$((fail + 1))
  finish
fi
echo "deb_test: built in $((SECONDS - t0)) s"
changes=$tmp/idgen_${version}_${arch}.changes
deb() { echo "$tmp/${1}_${version}_${arch}.deb"; }
for p in idgen libidgen0 libidgen-dev; do check test -f "$(deb $p)"; done

# ---- lintian ----------------------------------------------------------------
# Errors and warnings fail; info tags are shown.  (As root lintian says it
# should not be: that line is dropped.)
if lintian --display-info --fail-on error,warning "$changes" >"$tmp/lintian.out" 2>&1; then
  pass=$((pass + 1))
else
  fail=$((fail + 1))
  echo "FAIL: lintian" >&2
fi
grep -v 'running with root privileges' "$tmp/lintian.out" >&2
echo "deb_test: lintian done at $((SECONDS - t0)) s"

# ---- what each package holds ------------------------------------------------
has() {  # has PACKAGE PATH...: the package holds each path (a file or a link)
  local p=$1 f
  shift
  for f in "$@"; do
    grep -qxF "./$f" "$tmp/$p.list" || { echo "$p lacks /$f" >&2; return 1; }
  done
}
lacks() {  # lacks PACKAGE REGEX: no path in the package matches
  ! grep -E "$2" "$tmp/$1.list" >&2
}
for p in idgen libidgen0 libidgen-dev; do
  dpkg-deb --fsys-tarfile "$(deb $p)" | tar -t | sed 's,/$,,' >"$tmp/$p.list"
done
lib=usr/lib/$triplet
check has idgen usr/bin/idgen etc/idgen/idgen.env lib/systemd/system/idgen.service \
  usr/share/man/man1/idgen.1.gz usr/share/man/man1/idgen-serve.1.gz \
  usr/share/bash-completion/completions/idgen usr/share/doc/idgen/copyright
check lacks idgen '\.so|\.a$|\.h$|pkgconfig'
check has libidgen0 "$lib/libidgen.so.0" "$lib/libidgen.so.$upstream" \
  usr/share/doc/libidgen0/copyright
check lacks libidgen0 'bin/|\.a$|\.h$|pkgconfig|registry|libidgen\.so$'
check has libidgen-dev usr/include/idgen.h "$lib/libidgen.so" "$lib/libidgen.a" \
  "$lib/libidgen-registry.a" "$lib/pkgconfig/idgen.pc" "$lib/pkgconfig/idgen-registry.pc" \
  usr/share/man/man3/libidgen.3.gz
check lacks libidgen-dev 'bin/|\.so\.|systemd'
# The unit is enabled and started the Debian way (dh_installsystemd).
check grep -q 'deb-systemd-helper' <(dpkg-deb -I "$(deb idgen)" postinst 2>/dev/null)
check grep -q 'deb-systemd-invoke' <(dpkg-deb -I "$(deb idgen)" prerm 2>/dev/null)
check grep -qx /etc/idgen/idgen.env <(dpkg-deb -I "$(deb idgen)" conffiles 2>/dev/null)
# libidgen0's symbols file and shlibs name the package.
check grep -q '^libidgen.so.0 libidgen0' <(dpkg-deb -I "$(deb libidgen0)" symbols 2>/dev/null)

# ---- a fresh tree -----------------------------------------------------------
root=$tmp/root
mkdir "$root"
for p in idgen libidgen0 libidgen-dev; do dpkg -x "$(deb $p)" "$root"; done
check grep -qx "ExecStart=/usr/bin/idgen serve" "$root/lib/systemd/system/idgen.service"
# The settings file's examples, uncommented, are settings the daemon takes.
# shellcheck disable=SC2016
check env -i PATH="$PATH" bash -c 'set -a; . <(sed -n "s/^#\(IDGEN_[A-Z_]*=\)/\1/p" "$1")
  [ -n "$IDGEN_NODE" ] && "$2" serve --check-config >/dev/null' _ \
  "$root/etc/idgen/idgen.env" "$root/usr/bin/idgen"
out=$("$root/usr/bin/idgen" --version 2>&1)
echo "deb_test: $out"
check test "$out" = "idgen $upstream"
check gzip -t "$root/usr/share/man/man1/idgen.1.gz"
# The tool links libidgen statically: it needs no libidgen0.
check test -z "$(ldd "$root/usr/bin/idgen" | grep -E 'libidgen')"

# dpkg-buildflags' hardening reached the build (the project's CMakeLists
# keeps CFLAGS and LDFLAGS): PIE, full RELRO, stack protector, fortify.
hardened() {
  readelf -h "$1" | grep -q 'Type:.*DYN' &&
    readelf -lW "$1" | grep -q GNU_RELRO &&
    readelf -dW "$1" | grep -qE 'BIND_NOW|FLAGS.*NOW' &&
    readelf -sW --dyn-syms "$1" | grep -q '__stack_chk_fail' &&
    readelf -sW --dyn-syms "$1" | grep -qE '__[a-z]+_chk'
}
check hardened "$root/usr/bin/idgen"
check hardened "$root/$lib/libidgen.so.0"

# A short daemon session: ports picked by the daemon (port 0, read back from
# its listen lines), a file: registry of its own.
"$root/usr/bin/idgen" serve --http 127.0.0.1:0 --resp 127.0.0.1:0 \
  --registry "file:$tmp/registry" --node datacenter=1 >"$tmp/serve.log" 2>&1 &
daemon=$!
http=""
resp=""
# listening takes milliseconds; 60 s (600 x 0.1) are for a busy machine
for _ in $(seq 600); do
  http=$(sed -n 's/.*event=listen proto=http addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/serve.log")
  resp=$(sed -n 's/.*event=listen proto=resp addr=[^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/serve.log")
  [ -n "$http" ] && [ -n "$resp" ] && break
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
done
check test -n "$http"
check test -n "$resp"
if [ -n "$http" ] && [ -n "$resp" ]; then
  id=$(curl -fsS --max-time 60 "http://127.0.0.1:$http/id")
  check grep -qxE '[0-9]{10,20}' <<<"$id"
  decoded=$(curl -fsS --max-time 60 "http://127.0.0.1:$http/decode/$id")
  check grep -q '"datacenter":1' <<<"$decoded"
  ids=$(redis-cli -p "$resp" ID 3)
  check test "$(grep -cxE '[0-9]{10,20}' <<<"$ids")" = 3
  check test "$(redis-cli -p "$resp" PING)" = PONG
fi
kill -TERM "$daemon" 2>/dev/null
for _ in $(seq 300); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
kill -0 "$daemon" 2>/dev/null && { echo "the daemon ignored SIGTERM for 30 s" >&2; kill -KILL "$daemon"; }
wait "$daemon"
status=$?
daemon=""
check test "$status" = 0
[ "$status" = 0 ] || tail -20 "$tmp/serve.log" >&2

# ---- a program on the tree's libidgen-dev -----------------------------------
# The .pc files find their prefix from where they are: no sysroot needed.
export PKG_CONFIG_PATH=$root/$lib/pkgconfig
# shellcheck disable=SC2046
check cc -o "$tmp/app" "$src/tests/app.c" $(pkg-config --cflags --libs idgen)
check grep -q "$root/$lib/libidgen.so.0" <(LD_LIBRARY_PATH=$root/$lib ldd "$tmp/app")
check grep -qE '^[0-9]+ 01ARZ3NDEK' <(LD_LIBRARY_PATH=$root/$lib "$tmp/app")

# libidgen-registry comes as its archive only: -lidgen-registry finds it, on
# top of libidgen.so.0, with its dependencies' shared libraries (libpq and
# libcurl are not among them: they are loaded for their registries only),
# with the README's line as it is (no --static).
# shellcheck disable=SC2046
check cc -o "$tmp/leased" "$src/tests/leased.c" $(pkg-config --cflags --libs idgen idgen-registry)
check test -z "$(LD_LIBRARY_PATH=$root/$lib ldd "$tmp/leased" | grep -E 'libpq|libcurl')"
check grep -qxE '[0-9]+' <(LD_LIBRARY_PATH=$root/$lib "$tmp/leased" "file:$tmp/leases")
check test -n "$(find "$tmp/leases" -name '*.lock')"

# ---- installed with dpkg -i, beside an application --------------------------
# In a mount namespace with overlays over /etc, /usr and /var
# (tests/deb_installed.sh): the postinst's user, group and /var/lib/idgen,
# an earlier DynamicUser registry moved back, and the packaged daemon and a
# non-root application on defaults leasing two tuples of one registry.
chmod 0755 "$tmp"
mkdir "$tmp/installed"
LD_LIBRARY_PATH=$root/$lib "$src/tests/deb_installed.sh" "$tmp/installed" "$(deb idgen)" \
  "$(deb libidgen0)" "$tmp/leased"
case $? in
0) pass=$((pass + 1)) ;;
77) echo "deb_test: the installed session was skipped (above)" ;;
*) fail=$((fail + 1)) && echo "FAIL: tests/deb_installed.sh" >&2 ;;
esac

echo "deb_test: done in $((SECONDS - t0)) s"
finish
