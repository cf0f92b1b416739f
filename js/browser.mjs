// idgen for browsers, Deno, Bun and bundlers (esbuild, vite): the core
// compiled to WebAssembly (idgen.wasm), with the API of index.js where it
// applies (lib/wasm.js: the generators, leases from a daemon, decode, plan).
//
// No top-level await and no `node:` import: `await init()` loads the module
// once, before any other call (a call made earlier throws, saying so;
// Snowflake.open() waits for it itself).  init() takes where idgen.wasm is:
// by default new URL('./idgen.wasm', import.meta.url), which esbuild (with
// --loader:.wasm=file) and vite both rewrite to the file they emit; or a
// URL, a string, a Response (or its Promise), the bytes, or a compiled
// WebAssembly.Module.  js/README.md, "Bundlers".

import * as layoutModule from './lib/layout.js';
import * as wasmModule from './lib/wasm.js';

// (a module where the file is read as CommonJS: Node, Bun, bundlers;
// otherwise it left its exports on globalThis)
const shared = layoutModule.default || globalThis.__idgenLayout;
const make = wasmModule.default || globalThis.__idgenWasm;

const w = make(shared, { ensure: () => init() });
let loading = null;

async function bytesOf(source) {
  let s = await source;
  if (typeof s === 'string') s = new URL(s, globalThis.location?.href ?? import.meta.url);
  if (s instanceof URL) {
    // Node has no fetch() of file: URLs; process.getBuiltinModule reads the
    // file without an import a bundler would follow (Node 20.16, 22.3).
    const gbm = globalThis.process?.getBuiltinModule;
    if (s.protocol === 'file:' && typeof gbm === 'function' && typeof Deno === 'undefined')
      return gbm('fs').readFileSync(s);
    const r = await fetch(s);
    if (!r.ok) throw new Error(`${s}: ${r.status} ${r.statusText}`);
    return r.arrayBuffer();
  }
  if (typeof Response !== 'undefined' && s instanceof Response) {
    if (!s.ok) throw new Error(`${s.url}: ${s.status} ${s.statusText}`);
    return s.arrayBuffer();
  }
  return s; // bytes (an ArrayBuffer or a view) or a WebAssembly.Module
}

async function load(source) {
  const where = source ?? new URL('./idgen.wasm', import.meta.url);
  let b;
  try {
    b = await bytesOf(where);
  } catch (e) {
    throw new Error(`idgen.wasm not loaded from ${where} (${e.message}): serve it beside ` +
                    'browser.mjs, or pass its URL or bytes to init() (js/README.md, "Bundlers")');
  }
  const r = await WebAssembly.instantiate(b, w.imports);
  w.attach(r.instance ?? r); // a Module gives an Instance, bytes an object
  version = w.version();
}

/** Loads idgen.wasm once; every later call returns the same promise. */
export function init(source) {
  if (loading === null)
    loading = load(source).catch((e) => {
      loading = null; // another try may name another source
      throw e;
    });
  return loading;
}

export const Snowflake = w.Snowflake;
export const Sequence = w.Sequence;
// Public IDs: no codec in a browser (it would hold the key); the
// constructor throws saying so, Public.isPublicText() checks a text's shape.
export const Public = w.Public;
export const UlidGenerator = w.UlidGenerator;
export const Uuid7Generator = w.Uuid7Generator;
export const ulid = w.ulid;
export const ulidToUuid = w.ulidToUuid;
export const uuidToUlid = w.uuidToUlid;
export const decode = w.decode;
// decode() where compiling is not allowed (a Content-Security-Policy
// without 'unsafe-eval'): the tests read every layout both ways
export const _decodeInterpreted = w._decodeInterpreted;
export const plan = w.plan;
/** The library's version; null until init() has resolved. */
export let version = null;
