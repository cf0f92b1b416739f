#!/usr/bin/env bash
# build-deb.sh -- the Debian packages idgen, libidgen0, libidgen-dev and
# postgresql-15-idgen (CREATE EXTENSION idgen).
#
#   scripts/build-deb.sh [OUTDIR]      (default: build/deb)
#
# dpkg-buildpackage writes into the source tree it builds (obj-*/,
# debian/tmp, ../*.deb), so this builds a copy of the working tree (the files
# git lists, committed or not) in a temporary directory and leaves only the
# .deb files, the .changes and .buildinfo in OUTDIR.  Needs dpkg-dev,
# debhelper and postgresql-server-dev-all (pg_buildext;
# scripts/install-deps.sh).  tests/deb_test.sh builds with it and checks the
# result with lintian.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$src/build/deb}" && cd "${1:-$src/build/deb}" && pwd)
for tool in dpkg-buildpackage dh git pg_buildext; do
  command -v "$tool" >/dev/null || { echo "build-deb: $tool is missing: run scripts/install-deps.sh" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/idgen-build-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/idgen"
(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -c --ignore-failed-read) |
  tar -x -C "$tmp/idgen"
# Not an outer make's jobserver (make deb, make test): dpkg-buildpackage sets
# its own -j.
# The commit built, for idgen_build_info (debian/rules passes it to CMake).
commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ]; then
  git -C "$src" update-index -q --refresh >/dev/null 2>&1 || true # a touched file is no change
  git -C "$src" diff-index --quiet HEAD -- || commit="$commit-dirty"
fi
(cd "$tmp/idgen" && unset MAKEFLAGS MFLAGS MAKELEVEL && export IDGEN_COMMIT="$commit" &&
  DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1) || {
  tail -40 "$tmp/build.log" >&2
  echo "build-deb: dpkg-buildpackage failed (the log's end is above)" >&2
  exit 1
}
# dpkg-gensymbols's diff (new symbols: debian/libidgen0.symbols wants them).
grep -A30 'dpkg-gensymbols: warning' "$tmp/build.log" >&2 || true
mv "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo "$out"/
ls -1 "$out"/*.deb
