// Memory: 10 million calls of each kind hold Node's RSS flat.  A leak of
// a handle scope, a BigInt, a string or a buffer per call (two bytes would
// do) shows as tens of megabytes over 10 million calls; RSS is read after a
// full collection, once after a warm-up of a million calls and once after
// the ten million, and may grow by MAX_GROWTH at most (the heap's and the
// allocator's own wobble).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-mem-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

const MAX_GROWTH = 12 * 1024 * 1024;
const N = Number(process.env.IDGEN_JS_MEMORY_CALLS || 10000000);

const turn = () => new Promise((resolve) => setImmediate(resolve));

// After a full collection and a turn of the event loop: Node-API runs the
// finalizers of collected objects (a generator's C memory) after the
// collection, from the loop.
async function rss() {
  gc();
  await turn();
  gc();
  await turn();
  return process.memoryUsage().rss;
}

// f called n times in a loop, the result kept in a variable as a caller
// would; the loop lets the event loop turn every `every` calls (0: never),
// as a program does between requests.
async function flat(name, f, n = N, every = 0) {
  let x;
  for (let i = 0, warm = Math.min(1000000, n / 10); i < warm; i++) {
    x = f(i);
    if (every && i % every === 0) await turn();
  }
  const before = await rss();
  for (let i = 0; i < n; i++) {
    x = f(i);
    if (every && i % every === 0) await turn();
  }
  const after = await rss();
  assert.ok(after - before < MAX_GROWTH,
            `${name}: RSS grew by ${((after - before) / 1048576).toFixed(1)} MB over ${n} calls ` +
            `(${(before / 1048576).toFixed(1)} -> ${(after / 1048576).toFixed(1)} MB); last ${x}`);
}

test('10 million calls of each kind hold RSS flat', async () => {
  const g = new idgen.Snowflake({ registry: 'file:' + dir, node: 'datacenter=1' });
  await flat('Snowflake next', () => g.next());
  await flat('Snowflake nextString', () => g.nextString());
  await flat('Snowflake nextBatch(16)', () => g.nextBatch(16)[15], N / 16);
  g.close();
  const u = new idgen.UlidGenerator(), v = new idgen.Uuid7Generator();
  await flat('ulid()', () => idgen.ulid());
  await flat('UlidGenerator next', () => u.next());
  await flat('Uuid7Generator next', () => v.next());
  const id = 1862107412345683968n;
  await flat('decode (Snowflake, BigInt)', () => idgen.decode(id).fields.worker);
  await flat('decode (ULID, native)', () => idgen.decode('01ARZ3NDEKTSV4RRFFQ69G5FAV').unix_ms, N / 10);
  await flat('ulidToUuid', () => idgen.ulidToUuid('01ARZ3NDEKTSV4RRFFQ69G5FAV'), N / 10);
  // a thrown error per call: its message and code
  await flat('errors thrown', () => {
    try {
      idgen.decode('x');
    } catch (e) {
      return e.code;
    }
  }, N / 10);
});

test('generators made and dropped hold RSS flat: closed, and left to the collector', async () => {
  const reg = 'file:' + dir;
  await flat('Snowflake made and closed (static)', () => {
    const s = new idgen.Snowflake({ registry: 'static', node: 'datacenter=1,worker=1' });
    s.close();
  }, 200000, 1000);
  // each holds a lease of the file: registry until collected (32 workers,
  // so a leak of leases would soon be EPOOLFULL, not only RSS)
  await flat('Snowflake with a lease, dropped unclosed', (i) => {
    if (i % 16 === 0) gc(); // the collector's turn: the leases go back at the loop's next turn
    const s = new idgen.Snowflake({ registry: reg, node: 'datacenter=2' });
    return s.next();
  }, 400, 16);
});
