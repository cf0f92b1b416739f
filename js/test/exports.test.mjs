// The declarations (index.d.ts) and the builds agree on what the package
// exports: every value index.d.ts declares is exported by the addon
// (index.js) and the WebAssembly module (browser.mjs, where IDGEN_WASM_DIR
// names it), and neither exports a public name the declarations lack.
// (The types themselves: ctest js.types, tsc on test/types/check.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
const dts = fs.readFileSync(path.join(here, '..', 'index.d.ts'), 'utf8');
const declared = [...dts.matchAll(/^export (?:class|function|const) (\w+)/gm)].map((m) => m[1]);
const builds = [['addon', require('../index.js')]];
if (process.env.IDGEN_WASM_DIR)
  builds.push(['wasm', await import(pathToFileURL(path.join(process.env.IDGEN_WASM_DIR, 'browser.mjs')))]);
for (const [, mod] of builds) await mod.init();

test('every declared value is exported by each build, and nothing public is undeclared', () => {
  assert.ok(declared.includes('Snowflake') && declared.includes('plan'), declared.join(' '));
  for (const [name, mod] of builds) {
    for (const k of declared) assert.notEqual(mod[k], undefined, `${name} lacks ${k}`);
    const pub = Object.keys(mod).filter((k) => !k.startsWith('_') && k !== 'default');
    assert.deepEqual(pub.filter((k) => !declared.includes(k)), [], `${name} exports undeclared names`);
  }
});

// index.mjs names each of index.js's exports (Node cannot detect them in
// the CommonJS file: they are the addon's values), the same values.
test('index.mjs names every export of index.js', async () => {
  const esm = await import('../index.mjs');
  const cjs = require('../index.js');
  const missing = Object.keys(cjs).filter((k) => !(k in esm) || esm[k] !== cjs[k]);
  assert.deepEqual(missing, [], 'index.mjs lacks these of index.js');
  const extra = Object.keys(esm).filter((k) => k !== 'default' && !(k in cjs));
  assert.deepEqual(extra, [], 'index.mjs names what index.js does not export');
});

// One list of option names (src/common/options.c): a misspelt one is
// refused by both builds, naming it and the known ones, never read as its
// default; Snowflake.open() refuses it too.
test('an unknown option is refused by each build, with one message', async () => {
  const want = /^unknown option "nod"; known: layout, registry, space, node, leaseField, ttlMs, maxWaitMs, maxBorrowMs, maxStartWaitMs, randomSequenceStart, clock$/;
  for (const [name, mod] of builds) {
    assert.throws(() => new mod.Snowflake({ registry: 'static', nod: 'datacenter=1' }),
                  { code: 'EINVAL', message: want }, name);
    await assert.rejects(mod.Snowflake.open({ registry: 'static', nod: 'datacenter=1' }),
                         { code: 'EINVAL', message: want }, name);
    const g = new mod.Snowflake({ registry: 'static', node: 'datacenter=1,worker=1' }); // known ones
    assert.equal(typeof g.next(), 'bigint', name);
    await g.close();
  }
});

// Sequence is the native addon's: the WebAssembly build's constructor
// refuses, saying so.
test('the WebAssembly build has no Sequence, and says so', () => {
  for (const [name, mod] of builds) {
    if (name !== 'wasm') continue;
    assert.throws(() => new mod.Sequence('orders', { registry: 'file:/tmp/x' }),
                  { code: 'EINVAL', message: /not available in the WebAssembly build/ }, name);
  }
});
