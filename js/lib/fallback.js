// The WebAssembly build under Node (index.js, where no native addon loads):
// lib/wasm.js on idgen.wasm, compiled and instantiated synchronously (so
// that require() returns a ready module, as with the addon), and one
// warning saying what this build cannot do.
'use strict';
const path = require('node:path');
const fs = require('node:fs');

module.exports = function fallback(platform, failed) {
  const make = require('./wasm.js');
  const shared = require('./layout.js');
  const why = `no native addon loads for ${platform}`;
  const w = make(shared, {
    noPagehide: true,
    quietNodes: true, // the one warning below says it
    defaultRegistryRefused: true, // the addon's default is file:/var/lib/idgen
    registryNote: ` (${why}: this is idgen's WebAssembly build; install where the prebuilt ` +
                  'binary fits, or allow install scripts with a C compiler and cmake, for ' +
                  'file:, postgres:// and etcd:// registries)',
  });
  const tries = [path.join(__dirname, '..', 'idgen.wasm'),
                 path.join(__dirname, '..', '..', 'build', 'js', 'browser', 'idgen.wasm')];
  const file = tries.find((p) => fs.existsSync(p));
  if (file === undefined)
    throw new Error(`idgen: ${why} (${failed.join('; ')}) and idgen.wasm is not found either ` +
                    `(${tries.join(', ')})`);
  const instance = new WebAssembly.Instance(new WebAssembly.Module(fs.readFileSync(file)), w.imports);
  w.attach(instance);
  process.emitWarning(`${why} (tried ${failed.join('; ')}): using the WebAssembly build: ULIDs, ` +
                      'UUIDv7s and Snowflake IDs of node values given (unchecked: keep them apart) or ' +
                      'leased from idgen://; no file:, postgres:// or etcd:// registries',
                      { type: 'IdgenWarning', code: 'IDGEN_WASM_FALLBACK' });
  return {
    Snowflake: w.Snowflake,
    Sequence: w.Sequence,
    Public: w.Public,
    UlidGenerator: w.UlidGenerator,
    Uuid7Generator: w.Uuid7Generator,
    ulid: w.ulid,
    ulidToUuid: w.ulidToUuid,
    uuidToUlid: w.uuidToUlid,
    decode: w.decode,
    plan: w.plan,
    version: w.version(),
    init: () => Promise.resolve(), // loaded above already
    _decodeJson: undefined,
    _decodeInterpreted: w._decodeInterpreted,
    _addonPath: null,
  };
};
