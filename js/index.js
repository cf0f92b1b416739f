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

const addon = require(addonPath());
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

module.exports = {
  Snowflake: addon.Snowflake,
  UlidGenerator: addon.UlidGenerator,
  Uuid7Generator: addon.Uuid7Generator,
  ulid: addon.ulid,
  ulidToUuid: addon.ulidToUuid,
  uuidToUlid: addon.uuidToUlid,
  decode,
  plan,
  version: addon.version,
  _decodeJson: addon.decodeJson,
  _decodeInterpreted: decodeInterpreted, // decode() where compiling is not allowed (CSP) // the CLI's JSON text: the tests' oracle for decode()
};
