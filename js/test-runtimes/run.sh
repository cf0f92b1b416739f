#!/bin/sh
# ctest js.runtimes: the WebAssembly build under Deno and Bun.  Neither is a
# Debian package; both are published on npm (the binaries in their
# platform packages, @deno/linux-x64-glibc and @oven/bun-linux-x64), so this
# installs them at test time into NPMDIR (beside the build, never into the
# source tree), as serve.js_clients installs its Redis clients, then runs
# check.mjs under each.
#
#   run.sh BROWSERDIR NPMDIR
set -eu
here=$(cd "$(dirname "$0")" && pwd)
browser=$1
npmdir=$2
want=""
[ -x "$npmdir/node_modules/.bin/deno" ] || want="$want deno@2"
[ -x "$npmdir/node_modules/.bin/bun" ] || want="$want bun@1"
if [ -n "$want" ]; then
  mkdir -p "$npmdir"
  echo "npm install$want (into $npmdir)"
  # shellcheck disable=SC2086  # $want is a list of package names
  npm install --prefix "$npmdir" --no-audit --no-fund --no-save --loglevel=error $want
fi
rc=0
"$npmdir/node_modules/.bin/deno" run --allow-read "$here/check.mjs" "$browser" || rc=1
"$npmdir/node_modules/.bin/bun" "$here/check.mjs" "$browser" || rc=1
exit $rc
