'use strict';
// idgen for Node.js: the addon (src/addon.c), found where the build put it.
// IDGEN_NODE_ADDON names it explicitly (the tests use it); otherwise the
// project's build directory beside this package, or ./build.
const path = require('node:path');
const fs = require('node:fs');

function addonPath() {
  if (process.env.IDGEN_NODE_ADDON) return path.resolve(process.env.IDGEN_NODE_ADDON);
  const tries = [
    path.join(__dirname, 'build', 'idgen.node'),
    path.join(__dirname, '..', 'build', 'js', 'idgen.node'),
  ];
  for (const p of tries) if (fs.existsSync(p)) return p;
  throw new Error('idgen.node not found (looked in ' + tries.join(', ') +
                  '): build it with `make build` at the top of the idgen tree');
}

module.exports = require(addonPath());
