#!/usr/bin/env node
// npm pack's prepack step (package.json): gathers from the idgen tree into
// this folder what the package ships and git does not hold (js/.gitignore;
// `--clean`, the postpack step, removes it again):
//   prebuilds/<platform>-<arch>-<libc>/idgen.node  the addon built by the
//       tree's `make build` (debug sections stripped where `strip` is here)
//   idgen.wasm   the WebAssembly build (browser.mjs, and index.js's fallback)
//   sources/     the C sources the addon needs and scripts/addon.cmake as
//                their CMakeLists.txt, for scripts/install.js to build from
// The build directory is IDGEN_BUILD_DIR, or ../build.  It fails, saying
// why, when the package's version is not the library's (include/idgen.h
// IDGEN_VERSION_STRING and CMakeLists.txt's project version) or a built
// file is missing.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const pkgDir = path.join(__dirname, '..');
const tree = path.join(pkgDir, '..');
const gathered = ['prebuilds', 'idgen.wasm', 'sources'];

// --clean (npm's postpack): the gathered files removed again, so that the
// tree's js/ never loads a copy older than the build (index.js tries
// prebuilds/ before ../build/js).
if (process.argv[2] === '--clean') {
  for (const f of gathered) fs.rmSync(path.join(pkgDir, f), { recursive: true, force: true });
  process.exit(0);
}
const build = path.resolve(process.env.IDGEN_BUILD_DIR || path.join(tree, 'build'));

function fail(msg) {
  console.error(`prepack: ${msg}`);
  process.exit(1);
}

// The version: one, the library's.
const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const header = fs.readFileSync(path.join(tree, 'include', 'idgen.h'), 'utf8');
const hv = /#define IDGEN_VERSION_STRING "([^"]+)"/.exec(header);
const cv = /project\(idgen VERSION ([0-9.]+)/.exec(
  fs.readFileSync(path.join(tree, 'CMakeLists.txt'), 'utf8'));
if (!hv || !cv) fail('the library\'s version not found in include/idgen.h and CMakeLists.txt');
if (pkg.version !== hv[1] || pkg.version !== cv[1])
  fail(`package.json's version ${pkg.version} is not the library's (include/idgen.h ${hv[1]}, ` +
       `CMakeLists.txt ${cv[1]}): make them one`);

const platform = require('../lib/platform.js')();

function need(p, what) {
  if (!fs.existsSync(p))
    fail(`${p} not found (${what}): run \`make build\` at the top of the idgen tree, or name ` +
         'the build directory with IDGEN_BUILD_DIR');
  return p;
}

const addon = need(path.join(build, 'js', 'idgen.node'), 'the addon');
const wasm = need(path.join(build, 'js', 'browser', 'idgen.wasm'), 'the WebAssembly build');

const pre = path.join(pkgDir, 'prebuilds');
fs.rmSync(pre, { recursive: true, force: true });
fs.mkdirSync(path.join(pre, platform), { recursive: true });
const dest = path.join(pre, platform, 'idgen.node');
fs.copyFileSync(addon, dest);
if (spawnSync('strip', ['--strip-debug', dest], { stdio: 'inherit' }).status !== 0)
  console.error('prepack: strip not run: the prebuilt addon keeps its debug sections');
fs.copyFileSync(wasm, path.join(pkgDir, 'idgen.wasm'));

// The sources, in the tree's layout (cmake/sources.cmake names them so).
const src = path.join(pkgDir, 'sources');
fs.rmSync(src, { recursive: true, force: true });
const copies = [
  ['include', () => true],
  ['src/core', (f) => /\.[ch]$/.test(f)],
  ['src/registry', (f) => /\.[ch]$/.test(f)],
  ['src/common', (f) => /^(decode|options)\.[ch]$/.test(f)],
];
for (const [dir, keep] of copies) {
  fs.mkdirSync(path.join(src, dir), { recursive: true });
  for (const f of fs.readdirSync(path.join(tree, dir)))
    if (keep(f) && fs.statSync(path.join(tree, dir, f)).isFile())
      fs.copyFileSync(path.join(tree, dir, f), path.join(src, dir, f));
}
fs.mkdirSync(path.join(src, 'cmake'));
fs.copyFileSync(path.join(tree, 'cmake', 'sources.cmake'), path.join(src, 'cmake', 'sources.cmake'));
fs.mkdirSync(path.join(src, 'js', 'src'), { recursive: true });
fs.copyFileSync(path.join(pkgDir, 'src', 'addon.c'), path.join(src, 'js', 'src', 'addon.c'));
fs.copyFileSync(path.join(__dirname, 'addon.cmake'), path.join(src, 'CMakeLists.txt'));
console.error(`prepack: ${platform} addon from ${addon}, idgen.wasm and sources/ gathered`);
