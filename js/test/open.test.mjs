// Snowflake.open() and close() as promises: the lease taken and given back
// off the event loop (frozen.test.mjs shows the loop turning while a
// registry does not answer); errors of the constructor's shape; and a full
// pool's message counting this process's generators that were not closed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { setImmediate as tick } from 'node:timers/promises';

const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const { Snowflake } = idgen;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-open-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

// Twitter's worker field (5 bits at 12).
const workerOf = (id) => Number((id >> 12n) & 31n);

test('open() leases on a file: registry; await close() gives the worker back', async () => {
  const registry = 'file:' + dir + '/reg';
  const opening = Snowflake.open({ registry, node: 'datacenter=1' });
  assert.ok(opening instanceof Promise);
  const g = await opening;
  assert.ok(g instanceof Snowflake);
  const l = g.lease();
  assert.equal(l.worker, 0);
  assert.equal(l.registry, registry);
  assert.equal(workerOf(g.next()), 0);
  assert.equal(typeof g.nextString(), 'string');
  assert.equal((await g.nextBatchAsync(10)).length, 10);

  const h = await Snowflake.open({ registry, node: 'datacenter=1' });
  assert.equal(h.lease().worker, 1, 'a second holder at once: the next worker');

  const closing = g.close();
  assert.ok(closing instanceof Promise);
  assert.equal(g.close(), closing, 'a second close() is the first one\'s promise');
  assert.throws(() => g.next(), { code: 'EINVAL', message: /closed/ }, 'no ID after close()');
  assert.throws(() => g.lease(), { code: 'EINVAL', message: /closed/ });
  assert.equal(await closing, undefined);

  const again = await Snowflake.open({ registry, node: 'datacenter=1' });
  assert.equal(again.lease().worker, 0, 'the closed one\'s worker is free again');
  assert.equal(workerOf(again.next()), 0);
  await Promise.all([again.close(), h.close()]);
  await again.close(); // harmless, settled
});

test('open() rejects with the Error the constructor throws', async () => {
  const cases = [
    { registry: 'static', node: 'worker=32' },
    { layout: 'time:41,worker:99', registry: 'static' },
    { registry: 'file:' + dir + '/r2', node: 'worker=1' },
    { registry: 'nosuch://x' },
    { registry: 'static', ttlMs: 1.5 },
    { registry: 'static', clock: 'sundial' },
  ];
  for (const options of cases) {
    let thrown;
    try {
      new Snowflake(options);
    } catch (e) {
      thrown = e;
    }
    assert.ok(thrown, JSON.stringify(options));
    await assert.rejects(Snowflake.open(options), (e) => {
      assert.equal(e.constructor, thrown.constructor, JSON.stringify(options));
      assert.equal(e.code, thrown.code, JSON.stringify(options));
      assert.equal(e.message, thrown.message, JSON.stringify(options));
      return true;
    });
  }
  // a wrong type: a TypeError, as a rejection too (never a throw)
  await assert.rejects(Snowflake.open({ registry: 42 }), TypeError);
  await assert.rejects(Snowflake.open('twitter'), TypeError);
});

test('the static registry: open() and close() settle, nothing leased', async () => {
  const g = await Snowflake.open({ registry: 'static', node: 'datacenter=3,worker=17' });
  assert.equal(g.lease(), null);
  assert.equal(workerOf(g.next()), 17);
  await g.close();
  assert.throws(() => g.next(), { code: 'EINVAL' });
  // the constructor's generator closes the same way
  const c = new Snowflake({ registry: 'static' });
  await c.close();
});

test('await using: Symbol.asyncDispose closes', { skip: typeof Symbol.asyncDispose !== 'symbol' && 'no Symbol.asyncDispose' }, async () => {
  const registry = 'file:' + dir + '/dispose';
  const g = await Snowflake.open({ registry, node: 'datacenter=1' });
  assert.equal(g.lease().worker, 0);
  await g[Symbol.asyncDispose]();
  assert.throws(() => g.next(), { code: 'EINVAL' });
  const h = await Snowflake.open({ registry, node: 'datacenter=1' });
  assert.equal(h.lease().worker, 0);
  await h.close();
});

// A worker field of 2 bits: four workers.
const SMALL = 'time:41@1ms,worker:2,sequence:12';

test('a full pool names the generators not closed', async () => {
  const registry = 'file:' + dir + '/small';
  const held = [];
  for (let i = 0; i < 4; i++) held.push(await Snowflake.open({ layout: SMALL, registry }));
  assert.deepEqual(held.map((g) => g.lease().worker).sort(), [0, 1, 2, 3]);
  const named = /\(4 generators of this process were made and not closed: call close\(\), or await using\)/;
  assert.throws(() => new Snowflake({ layout: SMALL, registry }), (e) => {
    assert.equal(e.code, 'EPOOLFULL');
    assert.match(e.message, named);
    return true;
  });
  await assert.rejects(Snowflake.open({ layout: SMALL, registry }), (e) => {
    assert.equal(e.code, 'EPOOLFULL');
    assert.match(e.message, named);
    return true;
  });
  // closed ones are not counted, and their workers come back
  await held.pop().close();
  await held.pop().close();
  const c = await Snowflake.open({ layout: SMALL, registry });
  const d = new Snowflake({ layout: SMALL, registry });
  await assert.rejects(Snowflake.open({ layout: SMALL, registry }),
                       { code: 'EPOOLFULL', message: /\(4 generators of this process were made/ });
  await Promise.all([...held, c, d].map((g) => g.close()));
  // a static generator holds no worker: not counted
  const s = new Snowflake({ layout: SMALL, registry: 'static', node: 'worker=1' });
  const four = [];
  for (let i = 0; i < 4; i++) four.push(await Snowflake.open({ layout: SMALL, registry }));
  await assert.rejects(Snowflake.open({ layout: SMALL, registry }),
                       { code: 'EPOOLFULL', message: /\(4 generators of this process were made/ });
  await Promise.all([s, ...four].map((g) => g.close()));
});

test('a collected generator is no longer counted, and its worker comes back', async () => {
  const registry = 'file:' + dir + '/collected';
  const kept = [];
  for (let i = 0; i < 2; i++) kept.push(await Snowflake.open({ layout: SMALL, registry }));
  (() => {
    for (let i = 0; i < 2; i++) new Snowflake({ layout: SMALL, registry }).next();
  })();
  // dropped, not yet collected (finalizers run from the loop, which has not
  // turned since): counted
  assert.throws(() => new Snowflake({ layout: SMALL, registry }),
                { code: 'EPOOLFULL', message: /\(4 generators of this process were made/ });
  // the two dropped are given back once collected (their finalizers run
  // from the loop, and release on a thread): poll, with a generous deadline
  let g = null, last = null;
  for (const deadline = Date.now() + 20000; g === null && Date.now() < deadline;) {
    gc();
    await tick();
    try {
      g = await Snowflake.open({ layout: SMALL, registry });
    } catch (e) {
      last = e;
      assert.equal(e.code, 'EPOOLFULL', e.message);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  assert.ok(g, `no worker came back: ${last && last.message}`);
  const h = await Snowflake.open({ layout: SMALL, registry });
  await assert.rejects(Snowflake.open({ layout: SMALL, registry }),
                       { code: 'EPOOLFULL', message: /\(4 generators of this process were made/ });
  await Promise.all([g, h, ...kept].map((x) => x.close()));
});
