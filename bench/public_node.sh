#!/bin/sh
# Public IDs in Node (make bench-public-node): idgen's addon (Public) against
# hashids and sqids from npm, encode and decode of the same 1,000,000
# twitter-size IDs in one node process (bench/public_node.mjs).  The peers
# are installed into a temporary folder outside the tree (today's versions,
# printed), removed after.  Needs the addon built (make build) and the npm
# registry.
#
#   bench/public_node.sh [BUILD] [--quick]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
quick=""
[ "${2:-}" = "--quick" ] && quick=--quick
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
if [ -z "${IDGEN_NODE_ADDON:-}" ] && [ -f "$build/js/idgen.node" ]; then
  IDGEN_NODE_ADDON="$build/js/idgen.node"
  export IDGEN_NODE_ADDON
fi
peers=$(mktemp -d "${TMPDIR:-/tmp}/idgen-public-peers.XXXXXX")
trap 'rm -rf "$peers"' EXIT
npm install --prefix "$peers" --no-audit --no-fund --no-save --loglevel=error hashids sqids >/dev/null
node -e 'const fs = require("fs"), d = process.argv[1];
  const v = (p) => JSON.parse(fs.readFileSync(d + "/" + p + "/package.json")).version;
  console.log("# peers: " + process.argv.slice(2).map((p) => p + "@" + v(p)).join(" "));' \
  "$peers/node_modules" hashids sqids
node "$here/public_node.mjs" "$peers/node_modules" $quick
