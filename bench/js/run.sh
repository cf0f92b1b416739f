#!/bin/sh
# idgen's Node.js addon beside the npm packages people use instead (make
# bench-js): installs them into a temporary folder (never into the tree),
# then runs bench/js/bench.mjs.  Needs the addon built (make build) and the
# npm registry.
#
#   bench/js/run.sh [--quick] [--keep-peers DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
quick=""
peers=""
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=--quick; shift ;;
    --keep-peers) peers="$2"; shift 2 ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
