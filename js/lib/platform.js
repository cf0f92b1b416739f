// The name of this platform's prebuilt addon, as esbuild and other native
// packages name theirs: <platform>-<arch>[-<libc>], e.g. linux-x64-gnu,
// linux-arm64-musl, darwin-arm64.  One function for index.js (which loads
// prebuilds/NAME/idgen.node), scripts/prepack.js (which puts it there) and
// scripts/install.js (which builds one where it does not load).
'use strict';
const fs = require('node:fs');

// 'gnu' or 'musl' on Linux: the C library this node is linked with, from its
// mappings (cheap), else from process.report (a few ms).
function libc() {
  try {
    return /\/ld-musl-|\/libc\.musl-/.test(fs.readFileSync('/proc/self/maps', 'utf8')) ? 'musl'
                                                                                       : 'gnu';
  } catch (e) {
    const r = process.report && process.report.getReport ? process.report.getReport() : null;
    return r && r.header && r.header.glibcVersionRuntime ? 'gnu' : 'musl';
  }
}

module.exports = function platformName() {
  return [process.platform, process.arch, process.platform === 'linux' ? libc() : '']
    .filter(Boolean).join('-');
};
