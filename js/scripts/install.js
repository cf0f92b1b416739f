#!/usr/bin/env node
// The package's install script (package.json "install"), where npm runs
// install scripts: nothing to do when the prebuilt addon for this platform
// loads; otherwise it builds the addon from sources/ (scripts/addon.cmake)
// with cmake into build/idgen.node, which index.js tries next.  It never
// fails the install: without cmake, a compiler or a header, it says so and
// index.js falls back to the WebAssembly build.  IDGEN_BUILD_FROM_SOURCE=1
// builds even when the prebuilt loads (the tests and the benchmark).
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const pkgDir = path.join(__dirname, '..');
const say = (msg) => console.error(`@idgen/idgen install: ${msg}`);

const platform = require('../lib/platform.js')();

function loads(p) {
  if (!fs.existsSync(p)) return false;
  // In a child: an addon that does not fit may abort its process.
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(p)})`], { stdio: 'ignore' });
  return r.status === 0;
}

function main() {
  const force = process.env.IDGEN_BUILD_FROM_SOURCE === '1';
  const prebuilt = path.join(pkgDir, 'prebuilds', platform, 'idgen.node');
  if (!force && loads(prebuilt)) return;
  const sources = path.join(pkgDir, 'sources');
  if (!fs.existsSync(path.join(sources, 'CMakeLists.txt'))) return; // the tree's js/: make build
  if (spawnSync('cmake', ['--version'], { stdio: 'ignore' }).status !== 0) {
    say(`no prebuilt addon for ${platform} and no cmake to build one: the WebAssembly build ` +
        'will be used (no file:, postgres:// or etcd:// registries)');
    return;
  }
  const out = path.join(pkgDir, 'build');
  const work = path.join(out, 'cmake');
  const hints = [path.join(path.dirname(process.execPath), '..', 'include', 'node')];
  const root = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' });
  if (root.status === 0) hints.unshift(path.join(root.stdout.trim(), 'node-api-headers', 'include'));
  say(`building the addon for ${platform} from sources (cmake)`);
  const steps = [
    ['cmake', ['-S', sources, '-B', work, '-DCMAKE_BUILD_TYPE=Release',
               `-DNODE_API_HINTS=${hints.join(';')}`]],
    ['cmake', ['--build', work, '-j', process.env.IDGEN_BUILD_JOBS || '2']],
  ];
  for (const [cmd, args] of steps) {
    const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) {
      say(`the build failed (${cmd} ${args.join(' ')}): the WebAssembly build will be used`);
      return;
    }
  }
  fs.copyFileSync(path.join(work, 'idgen.node'), path.join(out, 'idgen.node'));
  fs.rmSync(work, { recursive: true, force: true });
  if (!loads(path.join(out, 'idgen.node'))) {
    fs.rmSync(path.join(out, 'idgen.node'), { force: true });
    say('the addon built does not load: the WebAssembly build will be used');
    return;
  }
  say(`built ${path.join(out, 'idgen.node')}`);
}

try {
  main();
} catch (e) {
  say(`${e.message}: the WebAssembly build will be used`);
}
