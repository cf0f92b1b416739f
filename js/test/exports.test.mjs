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
