// The Node.js addon: Snowflake generators on the default registry's kind
// (file:, in a directory of this test's own), static node values, errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

// Twitter's layout: time 41 bits at 22, datacenter 5 at 17, worker 5 at 12.
const fields = (id) => ({
  ms: Number(id >> 22n) + 1288834974657,
  datacenter: Number((id >> 17n) & 31n),
  worker: Number((id >> 12n) & 31n),
});

test('static node values: next() is a BigInt with them, increasing', () => {
  const g = new idgen.Snowflake({ registry: 'static', node: 'datacenter=3, worker=17' });
  const t0 = Date.now();
  let last = 0n;
  for (let i = 0; i < 100000; i++) {
    const id = g.next();
    assert.equal(typeof id, 'bigint');
    assert.ok(id > last, `${id} after ${last}`);
    last = id;
  }
  const f = fields(last);
  assert.equal(f.datacenter, 3);
  assert.equal(f.worker, 17);
  assert.ok(f.ms >= t0 - 5 && f.ms <= Date.now() + 1100, `time ${f.ms}`);
  assert.equal(g.lease(), null);
  g.close();
});

test('nextString and nextBatch agree with next: one increasing sequence', () => {
  const g = new idgen.Snowflake({ registry: 'static', node: 'datacenter=1,worker=2' });
  const seq = [g.next(), BigInt(g.nextString())];
  const batch = g.nextBatch(5000);
  assert.ok(batch instanceof BigUint64Array);
  assert.equal(batch.length, 5000);
  seq.push(...batch, g.next());
  for (let i = 1; i < seq.length; i++) assert.ok(seq[i] > seq[i - 1], `at ${i}`);
  assert.match(g.nextString(), /^[1-9][0-9]{15,19}$/);
  g.close();
});

test('file: leases a worker per generator; close gives it back', async () => {
  const registry = 'file:' + dir + '/reg1';
  const a = new idgen.Snowflake({ registry, node: 'datacenter=1' });
  const b = new idgen.Snowflake({ registry, node: 'datacenter=1' });
  const la = a.lease(), lb = b.lease();
  assert.equal(la.worker, 0);
  assert.equal(lb.worker, 1);
  assert.equal(la.registry, registry);
  assert.equal(fields(a.next()).worker, 0);
  assert.equal(fields(b.next()).worker, 1);
  const closing = a.close();
  assert.throws(() => a.next(), { code: 'EINVAL', message: /closed/ }); // at once
  await closing;
  const c = new idgen.Snowflake({ registry, node: 'datacenter=1' });
  assert.equal(c.lease().worker, 0, 'the closed one\'s worker is free again');
  await Promise.all([b.close(), c.close()]);
});

test('errors carry the library\'s code and message', () => {
  assert.throws(() => new idgen.Snowflake({ layout: 'time:41,worker:99', registry: 'static' }),
                (e) => e.code === 'ELAYOUT' && /worker/.test(e.message));
  assert.throws(() => new idgen.Snowflake({ registry: 'static', node: 'worker=32' }),
                { code: 'ERANGE', message: /worker.*32.*0\.\.31|0 to 31/ });
  assert.throws(() => new idgen.Snowflake({ registry: 'file:' + dir + '/r2', node: 'worker=1' }),
                { code: 'EINVAL' });
  assert.throws(() => new idgen.Snowflake({ registry: 'static', leaseField: 'worker' }),
                { code: 'EINVAL' });
  assert.throws(() => new idgen.Snowflake({ registry: 'nosuch://x' }), { code: 'EINVAL' });
  assert.throws(() => new idgen.Snowflake({ registry: 42 }), TypeError);
  assert.throws(() => new idgen.Snowflake({ registry: 'static', ttlMs: 1.5 }), { code: 'ERANGE' });
  const g = new idgen.Snowflake({ registry: 'static' });
  for (const n of [0, -1, 1.5, 1000001, '3', undefined])
    assert.throws(() => g.nextBatch(n), { code: 'ERANGE' }, `nextBatch(${n})`);
  g.close();
});

test('ulid(): 26 characters of Crockford base32, current time', () => {
  const seen = new Set();
  for (let i = 0; i < 10000; i++) {
    const u = idgen.ulid();
    assert.match(u, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/);
    seen.add(u);
  }
  assert.equal(seen.size, 10000);
});

test('nextAsync and nextBatchAsync continue the same sequence', async () => {
  const g = new idgen.Snowflake({ registry: 'static', node: 'datacenter=1,worker=3' });
  const a = g.next();
  const b = await g.nextAsync();
  const c = await g.nextBatchAsync(20000); // more than a tick holds: waits for the next ticks
  assert.equal(typeof b, 'bigint');
  assert.ok(b > a);
  assert.equal(c.length, 20000);
  assert.ok(c[0] > b);
  for (let i = 1; i < c.length; i++) assert.ok(c[i] > c[i - 1], `at ${i}`);
  await assert.rejects(g.nextBatchAsync(0), { code: 'ERANGE' });
  g.close();
  await assert.rejects(g.nextAsync(), { code: 'EINVAL', message: /closed/ });
});
