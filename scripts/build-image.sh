#!/usr/bin/env bash
# build-image.sh -- the daemon's OCI image, FROM scratch, built with buildah.
#
#   scripts/build-image.sh [--static] [--build DIR] [--output FILE] [--name NAME]
#
# Writes an OCI archive (default DIR/idgen-image.oci.tar, or
# DIR/idgen-image-static.oci.tar with --static) holding one image, named
# NAME:VERSION (default localhost/idgen:0.1.0; VERSION-static with
# --static), whose tag dist/kubernetes/idgen.yaml names.  Load it with
# `podman load -i FILE`, or copy it to a registry with
# `skopeo copy oci-archive:FILE docker://HOST/idgen:VERSION`.
#
# What is in the image (docs/SERVE.md, "Containers and Kubernetes"):
#   /usr/bin/idgen       stripped; `idgen serve` is the entrypoint
#   /etc/passwd, group   root and the user idgen, 65532:65532, which runs it
#   /var/lib/idgen       the default file: registry, owned by idgen, mode
#                        0700, a VOLUME (its marks must outlive the container)
#   the default flavour: the dynamic binary, the dynamic loader and the exact
#                        ldd closure of the binary and of the libraries the
#                        registries load with dlopen (the sonames named by
#                        IDGEN__DYNLIB in src/registry: libpq, libcurl), each
#                        Debian package's copyright file and a list of the
#                        packages (/usr/share/doc/idgen-image/packages.txt),
#                        the CA bundle (etcd:// and idgens:// over https);
#                        every registry works
#   --static:            the binary linked -static (IDGEN_STATIC_EXE) and
#                        nothing else besides the files above: file: and
#                        static registries only, postgres://, etcd:// and
#                        idgen:// are refused at start naming the library
#                        they lack
# ENV IDGEN_HTTP=0.0.0.0:8080 IDGEN_RESP=0.0.0.0:6380 (every other setting is
# the daemon's default; flags after the image name, and -e IDGEN_*, win),
# EXPOSE 8080 6380, USER 65532:65532, labels org.opencontainers.image.*.
#
# The binary is built in DIR/image-dynamic or DIR/image-static (only the
# target idgen, no tests).  buildah runs with storage of its own in a
# temporary directory (driver vfs: no daemon, no fuse, no overlay mounts),
# removed at exit, so nothing is left in /var/lib/containers.  Run as root
# (buildah without root needs user namespaces and subuid ranges).
# SOURCE_DATE_EPOCH, else the last commit's time, is the image's creation
# time and every file's mtime.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
flavour=dynamic
build=$src/build
output=
name=localhost/idgen
uid=65532 # the conventional "nonroot" of distroless images: no host user has it by accident
usage() { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
  --static) flavour=static ;;
  --build) build=${2:?--build DIR}; shift ;;
  --output) output=${2:?--output FILE}; shift ;;
  --name) name=${2:?--name NAME}; shift ;;
  -h | --help) usage; exit 0 ;;
  *) echo "build-image: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
die() { echo "build-image: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "run as root (buildah with storage of its own, driver vfs, and chown to $uid)"
for tool in buildah cmake strip readelf unshare; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/install-deps.sh"
done
mkdir -p "$build"
build=$(cd "$build" && pwd)
suffix=${flavour/dynamic/}
[ -n "$output" ] || output=$build/idgen-image${suffix:+-$suffix}.oci.tar
mkdir -p "$(dirname "$output")"
output=$(cd "$(dirname "$output")" && pwd)/$(basename "$output")

# ---- the binary -------------------------------------------------------------
bdir=$build/image-$flavour
static_opt=OFF
[ "$flavour" = static ] && static_opt=ON
echo "build-image: building idgen ($flavour) in $bdir" >&2
unset MAKEFLAGS MFLAGS MAKELEVEL # not an outer make's jobserver (make image): -j of its own
cmake -S "$src" -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
  -DIDGEN_STATIC_EXE=$static_opt >"$bdir.log" 2>&1 || { tail -20 "$bdir.log" >&2; die "cmake failed"; }
cmake --build "$bdir" -j "${JOBS:-2}" --target idgen >>"$bdir.log" 2>&1 ||
  { tail -30 "$bdir.log" >&2; die "the build failed (the log's end is above; all of it: $bdir.log)"; }
bin=$bdir/idgen
version=$("$bin" --version | awk '{print $2}')
[ -n "$version" ] || die "$bin --version printed no version"
tag=$version${suffix:+-$suffix}
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
if [ "$flavour" = static ]; then
  [ -z "$interp" ] || die "$bin asks for the program interpreter $interp: not a static binary"
else
  [ -n "$interp" ] || die "no program interpreter in $bin"
fi

revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
if [ "$revision" != unknown ] && [ -n "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  revision=$revision-dirty
fi
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)

# ---- buildah, with storage of its own -----------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-build-image.XXXXXX")
ctr=
# In a mount namespace of its own where /var/lib is read-only: buildah's
# blob-info cache (/var/lib/containers/cache, which no flag moves) stays in
# memory instead of being left on the host.  Its temporary files go to
# $tmp/vartmp.
bah() {
  TMPDIR=$tmp/vartmp unshare --mount --propagation private -- sh -c \
    'mount --bind /var/lib /var/lib && mount -o remount,bind,ro /var/lib && exec "$@"' sh \
    buildah --root "$tmp/storage" --runroot "$tmp/run" --storage-driver vfs "$@"
}
cleanup() {
  if [ -n "$ctr" ]; then
    bah umount "$ctr" >/dev/null 2>&1 || true
    bah rm "$ctr" >/dev/null 2>&1 || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/vartmp" # buildah's own temporary files (else /var/tmp)
export BUILDAH_ISOLATION=chroot # nothing is run inside; no namespaces needed
ctr=$(bah from --quiet scratch)
root=$(bah mount "$ctr")

install -d -m 0755 "$root/usr/bin" "$root/etc" "$root/var/lib" "$root/usr/share/doc/idgen-image"
install -d -m 1777 "$root/tmp"
strip --strip-unneeded -o "$root/usr/bin/idgen" "$bin"
chmod 0755 "$root/usr/bin/idgen"
printf '%s\n' "root:x:0:0:root:/root:/sbin/nologin" \
  "idgen:x:$uid:$uid:idgen daemon:/var/lib/idgen:/sbin/nologin" >"$root/etc/passwd"
printf '%s\n' "root:x:0:" "idgen:x:$uid:" >"$root/etc/group"
# glibc's files and dns modules are inside libc (2.34 and later), static or not.
printf '%s\n' "passwd: files" "group: files" "hosts: files dns" >"$root/etc/nsswitch.conf"
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/nsswitch.conf"
# The default registry (file:/var/lib/idgen): the daemon's user's alone.
install -d -m 0700 -o "$uid" -g "$uid" "$root/var/lib/idgen"

# The Debian package that holds FILE (dpkg knows the path it installed, which
# on a merged-/usr system may be the /usr one or the other), or nothing.
package_of() {
  local f=$1 alt
  case $f in /usr/*) alt=${f#/usr} ;; *) alt=/usr$f ;; esac
  for p in "$f" "$alt" "$(readlink -f "$f")"; do
    dpkg-query -S "$p" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
}

if [ "$flavour" = dynamic ]; then
  for tool in ldd dpkg-query; do
    command -v "$tool" >/dev/null || die "$tool is missing"
  done
  # What the binary needs at start, and what it loads with dlopen when a
  # postgres://, etcd:// or idgen:// registry is used (its sonames, from the source).
  mapfile -t sonames < <(grep -ho 'IDGEN__DYNLIB([^;]*' "$src"/src/registry/*.c |
    grep -o '"lib[^"]*\.so\.[0-9]*"' | tr -d '"' | sort -u)
  [ ${#sonames[@]} -gt 0 ] || die "no IDGEN__DYNLIB sonames found in src/registry"
  # They are looked for where the binary's libc is (its multiarch directory),
  # which is where the loader's default search finds them in the image.
  libdir=$(ldd "$bin" | awk '$1 ~ /^libc\.so/ && $2 == "=>" {print $3}')
  libdir=${libdir%/*}
  [ -n "$libdir" ] || die "ldd $bin names no libc"
  roots=("$bin")
  for so in "${sonames[@]}"; do
    [ -e "$libdir/$so" ] || die "$libdir/$so is missing (scripts/install-deps.sh: libpq-dev, libcurl4-openssl-dev)"
    roots+=("$libdir/$so")
    echo "$libdir/$so" >>"$tmp/files"
  done
  echo "$interp" >>"$tmp/files"
  for f in "${roots[@]}"; do
    out=$(ldd "$f") || die "ldd $f failed"
    if grep -q 'not found' <<<"$out"; then
      die "ldd $f: $(grep 'not found' <<<"$out" | tr -s '\t\n' '  ')"
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<<"$out" >>"$tmp/files"
  done
  sort -u "$tmp/files" -o "$tmp/files"
  : >"$tmp/packages"
  while read -r f; do
    install -D -m 0755 "$(readlink -f "$f")" "$root$f"
    pkg=$(package_of "$f")
    [ -n "$pkg" ] || die "$f belongs to no Debian package: cannot name its licence"
    echo "$pkg" >>"$tmp/packages"
  done <"$tmp/files"
  # Each package's copyright file: the libraries' licences travel with them.
  sort -u "$tmp/packages" | while read -r pkg; do
    base=${pkg%%:*}
    cr=/usr/share/doc/$base/copyright
    [ -f "$cr" ] && install -D -m 0644 "$cr" "$root/usr/share/doc/$base/copyright"
    dpkg-query -W -f='${Package} ${Version}\n' "$pkg"
  done >"$root/usr/share/doc/idgen-image/packages.txt"
  sed 's/^/  /' "$root/usr/share/doc/idgen-image/packages.txt" >&2
  if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
    install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
fi
# The binary must start inside the image with only what was copied.
chroot "$root" /usr/bin/idgen --version >/dev/null ||
  die "the binary does not start from the image's root (a library is missing?)"
{
  echo "idgen $version ($flavour), revision $revision, built $created"
  (cd "$root" && find . -type f -printf '%m %U:%G %s %p\n' | sort -k4)
} >"$tmp/contents"
install -m 0644 "$tmp/contents" "$root/usr/share/doc/idgen-image/contents.txt"
bah umount "$ctr" >/dev/null

description="idgen serve: unique, time-ordered IDs over HTTP (8080) and the Redis protocol (6380)"
[ "$flavour" = static ] && description="$description; static binary: registries file: and static only"
bah config \
  --user "$uid:$uid" --workingdir / \
  --env IDGEN_HTTP=0.0.0.0:8080 --env IDGEN_RESP=0.0.0.0:6380 \
  --entrypoint '["/usr/bin/idgen", "serve"]' \
  --port 8080/tcp --port 6380/tcp --volume /var/lib/idgen --stop-signal SIGTERM \
  --created-by "scripts/build-image.sh${suffix:+ --$suffix}" \
  --label org.opencontainers.image.title=idgen \
  --label "org.opencontainers.image.description=$description" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.created=$created" \
  "$ctr"
rm -f "$output"
bah commit --quiet --identity-label=false --disable-compression=false --timestamp "$epoch" --format oci \
  "$ctr" "oci-archive:$output:$name:$tag" >/dev/null
echo "build-image: $name:$tag in $output ($(du -k "$output" | cut -f1) KiB; $(awk 'NR > 1 {n++; s += $3} END {printf "%d files, %d KiB", n, s / 1024}' "$tmp/contents") unpacked)" >&2
