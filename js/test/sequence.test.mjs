// Sequence: dense numbers of a named counter in a registry (README:
// "Sequences"): each holder's increase, four processes on one file:
// registry repeat none, close() gives the rest back (the next holder goes on
// right after), and an unknown option is refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const here = path.dirname(fileURLToPath(import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-seq-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

test('numbers increase: next(), nextBatch(), BigInts from 1', async () => {
  const s = new idgen.Sequence('orders', { registry: 'file:' + dir + '/inc', minStep: 10, maxStep: 40 });
  let last = s.next();
  assert.equal(typeof last, 'bigint');
  assert.equal(last, 1n);
  for (let i = 0; i < 500; i++) {
    const b = s.nextBatch(7);
    assert.ok(b instanceof BigUint64Array && b.length === 7);
    for (const v of b) {
      assert.ok(v > last, `${v} after ${last}`);
      last = v;
    }
    const v = s.next();
    assert.ok(v > last, `${v} after ${last}`);
    last = v;
  }
  const st = s.stats();
  assert.equal(st.key, 'orders');
  assert.equal(st.issued, 4001);
  assert.ok(st.claimed >= st.issued && st.claims >= 1, JSON.stringify(st));
  await s.close();
  assert.throws(() => s.next(), { code: 'EINVAL', message: /closed/ });
  assert.throws(() => s.nextBatch(0), { code: 'EINVAL' }); // closed comes first
});

test('4 processes x 100,000 numbers on one file: registry: no duplicates, each increasing', async () => {
  const registry = 'file:' + dir + '/procs';
  const N = 100000, P = 4;
  const runs = [], opened = [], children = [];
  for (let p = 0; p < P; p++) {
    const out = path.join(dir, `nums.${p}`);
    const child = fork(path.join(here, '..', 'fixtures', 'seq_numbers.cjs'),
                       [registry, 'invoices', String(N), out, p % 2 ? 'batch' : 'next']);
    children.push(child);
    opened.push(new Promise((resolve) => child.once('message', resolve)));
    runs.push(new Promise((resolve, reject) => {
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`process ${p} exited ${code}`))));
    }));
  }
  await Promise.all(opened); // every holder registered before any takes a number
  for (const c of children) c.send('go');
  const done = await Promise.all(runs);
  const all = new BigUint64Array(N * P);
  done.forEach((out, p) => {
    const buf = fs.readFileSync(out);
    const nums = new BigUint64Array(buf.buffer, buf.byteOffset, buf.length / 8);
    assert.equal(nums.length, N);
    for (let i = 1; i < N; i++) if (!(nums[i] > nums[i - 1])) assert.fail(`process ${p}: number ${i} not above the one before`);
    all.set(nums, p * N);
  });
  all.sort();
  let dups = 0;
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) dups++;
  assert.equal(dups, 0, `${dups} duplicate numbers among ${all.length}`);
});

test('close() gives the rest back: a second holder continues right after', async () => {
  const registry = 'file:' + dir + '/giveback';
  const a = new idgen.Sequence('tickets', { registry, minStep: 1000 });
  const got = a.nextBatch(5);
  assert.deepEqual([...got], [1n, 2n, 3n, 4n, 5n]);
  assert.ok(a.stats().inHand > 0);
  const p = a.close();
  assert.equal(a.close(), p, 'a second close() returns the first promise');
  await p;
  const b = new idgen.Sequence('tickets', { registry });
  assert.equal(b.next(), 6n);
  b[Symbol.dispose] ? b[Symbol.dispose]() : b.close();
  await b.close();
  const c = new idgen.Sequence('tickets', { registry });
  assert.equal(c.next(), 7n, 'dispose gave back too');
  await c.close();
});

test('an unknown option is refused, naming it and the known ones', () => {
  const want = /^unknown option "minstep"; known: registry, space, minStep, maxStep, step, prefetch, ahead, segmentTargetMs, ttlMs, waitMs, strict, format, tz$/;
  assert.throws(() => new idgen.Sequence('orders', { registry: 'file:' + dir + '/opt', minstep: 5 }),
                { code: 'EINVAL', message: want });
  assert.throws(() => new idgen.Sequence('orders', { registry: 'file:' + dir + '/opt', ahead: 9 }),
                { code: 'ERANGE', message: /ahead/ });
  assert.throws(() => new idgen.Sequence('orders', { registry: 'file:' + dir + '/opt', prefetch: 0 }),
                { code: 'ERANGE', message: /prefetch/ });
  assert.throws(() => new idgen.Sequence(5), { code: 'EINVAL', name: 'TypeError' });
  assert.throws(() => new idgen.Sequence('a\0b', { registry: 'file:' + dir + '/opt' }),
                { code: 'EINVAL', message: /NUL/ });
  assert.throws(() => new idgen.Sequence('a'.repeat(100), { registry: 'file:' + dir + '/opt' }),
                { code: 'EINVAL', message: /longer/ });
  assert.throws(() => new idgen.Sequence('Bad Name', { registry: 'file:' + dir + '/opt' }),
                { code: 'EINVAL' });
  assert.throws(() => new idgen.Sequence('orders', { registry: 'static' }), { code: 'EINVAL' });
  const s = new idgen.Sequence('plain', { registry: 'file:' + dir + '/opt' });
  assert.throws(() => s.nextText(), { code: 'EINVAL', message: /no format/ });
  s.close();
});

test('strict: one holder at a time; the next starts above every number claimed', async () => {
  const registry = 'file:' + dir + '/strict';
  const a = new idgen.Sequence('receipts', { registry, strict: true, minStep: 10 });
  assert.equal(a.next(), 1n);
  assert.throws(() => new idgen.Sequence('receipts', { registry, strict: true }),
                { code: 'ELEASE', message: /strict, held by/ });
  await a.close();
  const b = new idgen.Sequence('receipts', { registry, strict: true });
  assert.equal(b.next(), 2n);
  await b.close();
});

test('a Sequence collected gives its rest back', async () => {
  const v8 = await import('node:v8');
  const vm = await import('node:vm');
  const { setImmediate: tick } = await import('node:timers/promises');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const registry = 'file:' + dir + '/gc';
  (() => {
    const s = new idgen.Sequence('dropped', { registry, minStep: 1000 });
    assert.equal(s.next(), 1n);
  })();
  // collected, then given back on a thread of the addon's: a probe before
  // that would claim past the range, so the probe comes after a second
  for (let i = 0; i < 20; i++) {
    gc();
    await tick();
    await new Promise((r) => setTimeout(r, 50));
  }
  const probe = new idgen.Sequence('dropped', { registry, minStep: 1 });
  const next = probe.next();
  await probe.close();
  assert.equal(next, 2n, 'the collected sequence gave its range back');
});

test('Sequence.open() opens off the event loop; a bad option is a rejection', async () => {
  const registry = 'file:' + dir + '/open';
  const a = await idgen.Sequence.open('orders', { registry, minStep: 10 });
  assert.ok(a instanceof idgen.Sequence);
  assert.equal(a.next(), 1n);
  await a.close();
  const b = await idgen.Sequence.open('orders', { registry });
  assert.equal(b.next(), 2n);
  await b.close();
  await assert.rejects(idgen.Sequence.open('orders', { registry, minstep: 1 }),
                       { code: 'EINVAL', message: /^unknown option "minstep"/ });
  await assert.rejects(idgen.Sequence.open('Bad Name', { registry }), { code: 'EINVAL' });
  await assert.rejects(idgen.Sequence.open(7), { code: 'EINVAL', name: 'TypeError' });
});

test('business numbers: nextText() renders the format in its time zone; an ambiguous one is refused', async () => {
  const registry = 'file:' + dir + '/biz';
  const day = () => new Date(Date.now() + 8 * 3600e3).toISOString().slice(0, 10).replace(/-/g, ''); // Shanghai: UTC+8, no DST
  const before = day();
  const s = new idgen.Sequence('inv', { registry, format: 'INV{date:%Y%m%d}-{seq:04}', tz: 'Asia/Shanghai' });
  const a = s.nextText(), b = s.nextText();
  const after = day();
  const m = /^INV(\d{8})-(\d{4})$/.exec(a);
  assert.ok(m, a);
  assert.ok(m[1] === before || m[1] === after, `${a}: not Shanghai's day (${before})`);
  assert.deepEqual([m[2], b.slice(-4)], ['0001', '0002']);
  assert.equal(s.stats().key, 'inv@' + m[1]);
  await s.close();
  assert.throws(() => new idgen.Sequence('inv2', { registry, format: 'A{seq}{date:%Y}' }),
                { code: 'EINVAL', message: /runs into the digits/ });
  assert.throws(() => new idgen.Sequence('inv3', { registry, format: 'A{seq:04}', tz: 'Nowhere/None' }),
                { code: 'EINVAL' });
});

test('a Sequence left open gives its rest back at a normal exit', async () => {
  const { execFileSync } = await import('node:child_process');
  const registry = 'file:' + dir + '/exit';
  const code = `const s = new (require(${JSON.stringify(path.join(here, '..', 'index.js'))}).Sequence)` +
               `('atexit', { registry: ${JSON.stringify(registry)}, minStep: 1000 }); console.log(String(s.next()));`;
  for (const want of ['1', '2'])
    assert.equal(execFileSync(process.execPath, ['-e', code], { encoding: 'utf8' }).trim(), want);
});
