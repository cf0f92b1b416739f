// The WebAssembly build (browser.mjs) under Node, where IDGEN_WASM_DIR names
// its directory (js.node sets it when the module is built): the Snowflake
// generator with the caller's node values, a wall clock (Date.now) that
// steps back, the options a build without a registry refuses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.IDGEN_WASM_DIR;
const idgen = dir ? await import(pathToFileURL(path.join(dir, 'browser.mjs'))) : null;
if (idgen) await idgen.init();
const skip = dir ? false : 'IDGEN_WASM_DIR not set: the WebAssembly build is not tested here';

// Runs f with Date.now() `ms` behind the real clock.
function clockBehind(ms, f) {
  const real = Date.now;
  Date.now = () => real() - ms;
  try {
    return f();
  } finally {
    Date.now = real;
  }
}

test('Snowflake: node values given, warned once as unchecked; next, nextString, nextBatch', { skip }, (t) => {
  const warnings = [];
  t.mock.method(console, 'warn', (m) => warnings.push(m));
  const g = new idgen.Snowflake({ layout: 'discord', node: 'worker=3,process=4' });
  new idgen.Snowflake({ layout: 'discord', node: 'worker=3,process=4' }).close();
  assert.equal(warnings.length, 1);
  assert.match(warnings[0], /worker=3,process=4\) are unchecked/);
  // No node values at all is every node field 0: unchecked too, and said so.
  new idgen.Snowflake({ layout: 'discord' }).close();
  assert.equal(warnings.length, 2);
  assert.match(warnings[1], /no node values given \(every node field 0\): unchecked/);
  const a = g.next(), b = BigInt(g.nextString()), c = g.nextBatch(10000);
  assert.ok(a < b && b < c[0]);
  for (let i = 1; i < c.length; i++) assert.ok(c[i - 1] < c[i]);
  const d = idgen.decode(c[9999], { layout: 'discord' });
  assert.equal(d.fields.worker, 3);
  assert.equal(d.fields.process, 4);
  assert.ok(Math.abs(d.unix_ms - Date.now()) < 5000, `${d.time}`);
  assert.equal(g.lease(), null);
  g.close();
  assert.throws(() => g.next(), { code: 'EINVAL' });
});

test('a wall clock that steps back: borrowed within maxBorrowMs, else ECLOCK', { skip }, (t) => {
  t.mock.method(console, 'warn', () => {});
  const g = new idgen.Snowflake({ node: 'worker=1' }); // borrow 1000 ms, wait 100 ms
  const before = g.nextBatch(1000);
  const after = clockBehind(500, () => g.nextBatch(1000)); // borrowed: still above
  assert.ok(after[0] > before[999]);
  for (let i = 1; i < after.length; i++) assert.ok(after[i - 1] < after[i]);
  const t0 = performance.now();
  clockBehind(10000, () => assert.throws(() => g.next(), { code: 'ECLOCK' }));
  const waited = performance.now() - t0;
  assert.ok(waited < 1000, `waited ${waited} ms`); // at most maxWaitMs (and the spin's slack)
  const strict = new idgen.Snowflake({ node: 'worker=2', maxBorrowMs: 0, maxWaitMs: 0 });
  const last = strict.next();
  clockBehind(1000, () => assert.throws(() => strict.next(), { code: 'ECLOCK' }));
  assert.ok(strict.next() > last); // the clock back: it issues again, above
  assert.ok(g.next() > after[999]);
  g.close();
  strict.close();
});

test('what the WebAssembly build refuses: registries it cannot reach, leases without open()', { skip }, async () => {
  assert.throws(() => new idgen.Snowflake({ registry: 'file:/tmp/x' }),
                { code: 'EINVAL', message: /leases from a daemon \(idgen:\/\/HOST:PORT.*or takes "static"/ });
  assert.throws(() => new idgen.Snowflake({ registry: 'idgen://u:secret@127.0.0.1:1' }),
                { code: 'EINVAL', message: /^registry idgen:\/\/u:\*\*\*@127\.0\.0\.1:1: a lease takes a round trip/ });
  await assert.rejects(idgen.Snowflake.open({ registry: 'idgen://127.0.0.1:1/x' }),
                       { code: 'EINVAL', message: /a path is not part of/ });
  await assert.rejects(idgen.Snowflake.open({ registry: 'idgen://127.0.0.1:1?spaec=a' }),
                       { code: 'EINVAL', message: /unknown parameter "spaec"; known: space/ });
  await assert.rejects(idgen.Snowflake.open({ registry: 'idgen://127.0.0.1:1', ttlMs: 100 }),
                       { code: 'EINVAL', message: /ttlMs/ });
  // nothing listens on port 1: the registry's error, naming it without the token
  await assert.rejects(idgen.Snowflake.open({ registry: 'idgen://a:tok@127.0.0.1:1' }),
                       (e) => e.code === 'EREGISTRY' && /idgen:\/\/a:\*\*\*@127\.0\.0\.1:1/.test(e.message) &&
                              !/tok/.test(e.message));
  for (const o of [{ leaseField: 'worker' }, { ttlMs: 1000 }, { maxStartWaitMs: 10 }])
    assert.throws(() => new idgen.Snowflake({ registry: 'static', ...o }), { code: 'EINVAL' });
  assert.throws(() => new idgen.Snowflake({ node: 'worker=@ip' }), { code: 'ERANGE' });
  assert.throws(() => new idgen.Snowflake({ layout: 'nosuch' }), { code: 'ELAYOUT' });
  assert.throws(() => new idgen.Snowflake({ maxWaitMs: -1 }), { code: 'ERANGE' });
});

test('open() and close(): the Node build\'s promises, settled at once', { skip }, async (t) => {
  t.mock.method(console, 'warn', () => {});
  const g = await idgen.Snowflake.open({ layout: 'discord', node: 'worker=5,process=6' });
  assert.ok(g instanceof idgen.Snowflake);
  assert.equal(idgen.decode(g.next(), { layout: 'discord' }).fields.worker, 5);
  const closing = g.close();
  assert.ok(closing instanceof Promise);
  assert.throws(() => g.next(), { code: 'EINVAL' });
  await closing;
  await g.close();
  await assert.rejects(idgen.Snowflake.open({ registry: 'file:/tmp/x' }),
                       { code: 'EINVAL', message: /or takes "static"/ });
});

// init(): no top-level await in browser.mjs, so a call made before the
// module is loaded throws, saying what to do; Snowflake.open() loads it
// itself; init() takes the bytes too, and a wrong source says where it
// looked.  (A fresh instance of the module: its own load.)
test('init: sync calls before it throw a clear error; open() and bytes load it', { skip }, async () => {
  const url = pathToFileURL(path.join(dir, 'browser.mjs')).href;
  const a = await import(url + '?before-init');
  assert.equal(a.version, null);
  assert.throws(() => a.ulid(), { code: 'EINVAL', message: /not loaded yet: `await init\(\)`/ });
  assert.throws(() => new a.UlidGenerator(), /await init\(\)/);
  assert.throws(() => new a.Snowflake({ node: 'datacenter=1,worker=1' }), /await init\(\)/);
  const g = await a.Snowflake.open({ registry: 'static', node: 'datacenter=1,worker=1' });
  assert.equal(typeof g.next(), 'bigint');
  assert.match(a.ulid(), /^[0-9A-Z]{26}$/);
  assert.equal(a.version, idgen.version);
  await g.close();

  const b = await import(url + '?bytes');
  await assert.rejects(b.init(new URL('file:///nonexistent/idgen.wasm')),
                       /idgen\.wasm not loaded from file:\/\/\/nonexistent\/idgen\.wasm/);
  const fs = await import('node:fs');
  await b.init(fs.readFileSync(path.join(dir, 'idgen.wasm'))); // a failed init() may be retried
  assert.match(new b.Uuid7Generator().next(), /^[0-9a-f]{8}-[0-9a-f]{4}-7/);
});

// Public IDs need a key, which a browser cannot keep: the WebAssembly build
// has no codec; its constructor says why, and isPublicText() (no key) works.
test('Public: absent from the WebAssembly build, saying why; isPublicText works', { skip }, () => {
  assert.throws(() => new idgen.Public({ keyFile: '/nonexistent' }),
                { code: 'EINVAL', message: /not available in the WebAssembly build.*key/ });
  assert.throws(() => new idgen.Public({ key: new Uint8Array(32) }), { code: 'EINVAL' });
  assert.equal(idgen.Public.isPublicText('user_0' + 'a'.repeat(16), { prefix: 'user' }), true);
  assert.equal(idgen.Public.isPublicText('user_0' + 'a'.repeat(16), { prefix: 'order' }), false);
});
