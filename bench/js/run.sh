#!/bin/sh
# idgen's Node.js addon beside the npm packages people use instead (make
# bench-js): installs them into a temporary folder (never into the tree),
# then runs bench/js/bench.mjs, and then bench/js/browser_bench.py: the
# WebAssembly build beside the pure-JavaScript peers in headless Chromium
# (skipped, with a message, where Chromium or python3-websocket is missing).
# Needs the addon and idgen.wasm built (make build) and the npm registry.
#
#   bench/js/run.sh [--quick] [--node-only] [--keep-peers DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
quick=""
peers=""
browser=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=--quick; shift ;;
    --node-only) browser=""; shift ;;
    --keep-peers) peers="$2"; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$peers" ]; then
  peers=$(mktemp -d "${TMPDIR:-/tmp}/idgen-js-peers.XXXXXX")
  trap 'rm -rf "$peers"' EXIT
fi
mkdir -p "$peers"
npm install --prefix "$peers" --no-audit --no-fund --no-save --loglevel=error \
  uuid ulid ulidx uuidv7 @sapphire/snowflake nodejs-snowflake snowflake-id flake-idgen >/dev/null
node -e 'const fs = require("fs"), d = process.argv[1];
  const v = (p) => JSON.parse(fs.readFileSync(d + "/" + p + "/package.json")).version;
  console.log("# peers: " + process.argv.slice(2).map((p) => p + "@" + v(p)).join(" "));' \
  "$peers/node_modules" uuid ulid ulidx uuidv7 @sapphire/snowflake nodejs-snowflake snowflake-id flake-idgen
node "$here/bench.mjs" "$peers/node_modules" $quick
if [ -n "$browser" ]; then
  echo
  echo "# in a browser: the WebAssembly build (build/js/browser) and the pure-JavaScript peers"
  # (77: no Chromium or python3-websocket here; the script said so)
  rc=0
  /usr/bin/python3 "$here/browser_bench.py" "$peers/node_modules" $quick || rc=$?
  [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || exit "$rc"
fi
