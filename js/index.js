'use strict';
// idgen for Node.js: the addon (src/addon.c), the first of these that loads:
//   1. IDGEN_NODE_ADDON, a path (the tests use it; no fallback from it)
//   2. the prebuilt binary for this platform, prebuilds/<platform>-<arch>-<libc>/
//      idgen.node (in the npm package: scripts/prepack.js puts it there)
//   3. the one built from the package's sources by its install script
//      (scripts/install.js: build/idgen.node), where install scripts run
//   4. the build of the idgen tree this folder sits in (../build/js)
// and where none does, the WebAssembly build (lib/wasm.js on idgen.wasm),
// with one warning: ULIDs, UUIDv7s, decode, plan and Snowflake IDs of node
// values given (unchecked) or leased from a daemon (idgen://); no file:,
// postgres:// or etcd:// registry.
const path = require('node:path');
const fs = require('node:fs');

const platform = require('./lib/platform.js')();

function loadAddon() {
  if (process.env.IDGEN_NODE_ADDON) {
    const p = path.resolve(process.env.IDGEN_NODE_ADDON);
    return { addon: require(p), path: p };
  }
  const tries = [
    path.join(__dirname, 'prebuilds', platform, 'idgen.node'),
    path.join(__dirname, 'build', 'idgen.node'),
    path.join(__dirname, '..', 'build', 'js', 'idgen.node'),
  ];
  const failed = [];
  for (const p of tries) {
    if (!fs.existsSync(p)) {
      failed.push(`${p} (absent)`);
      continue;
    }
    try {
      return { addon: require(p), path: p };
    } catch (e) {
      failed.push(`${p} (${e.message.split('\n')[0]})`);
    }
  }
  return { addon: null, path: null, failed };
}

const found = loadAddon();
if (found.addon === null) {
  module.exports = require('./lib/fallback.js')(platform, found.failed);
  return;
}
const addon = found.addon;
const shared = require('./lib/layout.js');

// decode(id, {layout}) → the object of `idgen decode --json` (a field above
// 2^53 as a BigInt): id a BigInt, a number (exact below 2^53 only: a larger
// one is refused) or a string (decimal digits, a ULID, a UUID).  Snowflake
// IDs are read in JavaScript from the layout's shifts (lib/layout.js); the
// rest, and every error, by the addon.
const layoutInfo = (layout) => JSON.parse(addon.layoutInfo(layout));
const slowDecode = (text, layout) => shared.parseDecoded(addon.decodeJson(text, layout));
const decode = shared.makeDecode(layoutInfo, slowDecode);
const decodeInterpreted = shared.makeDecode(layoutInfo, slowDecode, false); // the tests'

// plan({layout, rate, maxBorrowMs}) → what `idgen plan` shows, as numbers.
function plan(options) {
  const layout = options && options.layout !== undefined ? options.layout : 'twitter';
  const native = (rate, borrow) => JSON.parse(addon.layoutPlan(layout, rate, borrow));
  return shared.plan(options, native, addon.maxBorrowMsDefault);
}

// nextBatchAsync(n) / nextAsync(): the same IDs as nextBatch / next, for a
// call that would wait (its tick not come yet, the clock behind within the
// borrow, a mark write): the event loop goes on meanwhile, and the promise
// resolves when the IDs are due (or rejects with the library's error, at
// the same bound the blocking call has).
function batchAsync(g, n) {
  return new Promise((resolve, reject) => {
    const step = (f) => {
      let r;
      try {
        r = f();
      } catch (e) {
        reject(e);
        return;
      }
      if (r instanceof BigUint64Array) resolve(r);
      else setTimeout(() => step(() => g._batchResume(r.wait)), r.waitMs);
    };
    step(() => g._batchStart(n));
  });
}
addon.Snowflake.prototype.nextBatchAsync = function nextBatchAsync(n) {
  return batchAsync(this, n);
};
addon.Snowflake.prototype.nextAsync = function nextAsync() {
  return batchAsync(this, 1).then((a) => a[0]);
};

// Snowflake.open(options) → a Promise of a Snowflake: the registry opened,
// a node tuple leased and the generator bound on a thread of the addon's
// own, so the event loop goes on whatever the registry does (a frozen file
// system, a server that does not answer); rejected with the Error the
// constructor would throw (its `code`, its message).  `new Snowflake()` does
// the same on the JavaScript thread (README: "What may block").
addon.Snowflake.open = function open(options) {
  try {
    return addon.open(options);
  } catch (e) {
    return Promise.reject(e); // a wrong option's type: a rejection too
  }
};

// close() → a Promise: the generator stops issuing at once (later calls
// throw EINVAL) and gives its lease back off the event loop; the promise
// resolves when that is done.  A second call returns the first's promise.
const kClosing = Symbol('idgen.closing');
addon.Snowflake.prototype.close = function close() {
  if (this[kClosing] === undefined) this[kClosing] = this._close();
  return this[kClosing];
};
// `await using g = await Snowflake.open({...})` where the runtime has it.
if (typeof Symbol.asyncDispose === 'symbol') {
  addon.Snowflake.prototype[Symbol.asyncDispose] = function asyncDispose() {
    return this.close();
  };
}

// Sequence.open(name, options) → a Promise of a Sequence: the holder
// registered and the first range claimed on a thread of the addon's own, so
// the event loop goes on whatever the registry does; rejected with the
// Error the constructor would throw.
addon.Sequence.open = function open(name, options) {
  try {
    return addon.seqOpen(name, options);
  } catch (e) {
    return Promise.reject(e); // a wrong name or option: a rejection too
  }
};
// Sequence: close() as a Snowflake's (a Promise; the sequence stops at once,
// the unissued rest of its ranges goes back off the event loop; a second
// call returns the first's promise), `using` and `await using`.
addon.Sequence.prototype.close = function close() {
  if (this[kClosing] === undefined) this[kClosing] = this._close();
  return this[kClosing];
};
if (typeof Symbol.dispose === 'symbol') {
  addon.Sequence.prototype[Symbol.dispose] = function dispose() {
    this.close();
  };
}
if (typeof Symbol.asyncDispose === 'symbol') {
  addon.Sequence.prototype[Symbol.asyncDispose] = function asyncDispose() {
    return this.close();
  };
}

// Public: the keyed public form of IDs (README: "Public IDs").  keyFile
// defaults to the file IDGEN_PUBLIC_KEY names, read from process.env here
// (a worker thread's own process.env included).
class Public extends addon.Public {
  constructor(options) {
    const env = process.env.IDGEN_PUBLIC_KEY;
    let o = options;
    if (env && (o === undefined ||
                (o !== null && typeof o === 'object' && o.keyFile === undefined && o.key === undefined)))
      o = { ...o, keyFile: env };
    super(o);
  }
  // (key-free, as browser.mjs has it)
  static isPublicText(text, options) {
    return shared.isPublicText(text, options);
  }
}

module.exports = {
  Snowflake: addon.Snowflake,
  Public,
  Sequence: addon.Sequence,
  UlidGenerator: addon.UlidGenerator,
  Uuid7Generator: addon.Uuid7Generator,
  ulid: addon.ulid,
  ulidToUuid: addon.ulidToUuid,
  uuidToUlid: addon.uuidToUlid,
  decode,
  plan,
  version: addon.version,
  init: () => Promise.resolve(), // browser.mjs's, where it loads idgen.wasm; nothing to load here
  _decodeJson: addon.decodeJson,
  _addonPath: found.path, // the addon loaded (null: the WebAssembly build)
  _decodeInterpreted: decodeInterpreted, // decode() where compiling is not allowed (CSP) // the CLI's JSON text: the tests' oracle for decode()
};
