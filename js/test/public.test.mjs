// Public IDs in the Node addon (Public): round trips of each kind, the text
// forms with a prefix and key versions, a wrong key or prefix refused
// (EKEY), a key file others may read refused, the key never in a message,
// and the integer form checked against FF1 written again in JavaScript on
// node:crypto (test/ff1-reference.mjs, itself checked against NIST's FF1
// samples here), so that the addon cannot agree with itself only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ff1, ff1Bits } from './ff1-reference.mjs';

const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const { Public } = idgen;
const native = idgen._addonPath !== null;
const skip = native ? false : 'the WebAssembly build has no Public (test/wasm.test.mjs checks it)';

let dir;
const KEY1 = crypto.randomBytes(32), KEY2 = crypto.randomBytes(32), OTHER = crypto.randomBytes(32);
const file = (name) => path.join(dir, name);
function keyFile(name, lines, mode = 0o600) {
  const p = file(name);
  fs.writeFileSync(p, `# test keys\n${lines.map(([v, k]) => `v${v} ${k.toString('hex')}`).join('\n')}\n`,
                   { mode });
  fs.chmodSync(p, mode);
  return p;
}
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-public-'));
  keyFile('k1', [[1, KEY1]]);
  keyFile('k12', [[1, KEY1], [2, KEY2]]);
  keyFile('other', [[1, OTHER]]);
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const rand64 = (bits) => {
  const b = crypto.randomBytes(8).readBigUInt64BE();
  return bits === 64 ? b : b & ((1n << BigInt(bits)) - 1n);
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CROCKFORD = /^[0-9A-HJKMNP-TV-Z]{26}$/;

test('NIST FF1 samples (AES-128 and AES-256) pass the JavaScript reference', () => {
  const ab = '0123456789abcdefghijklmnopqrstuvwxyz';
  const dig = (s) => [...s].map((c) => ab.indexOf(c)), txt = (d) => d.map((i) => ab[i]).join('');
  const k128 = Buffer.from('2B7E151628AED2A6ABF7158809CF4F3C', 'hex');
  const k256 = Buffer.from('2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94', 'hex');
  const none = Buffer.alloc(0), t10 = Buffer.from('39383736353433323130', 'hex');
  const t11 = Buffer.from('3737373770717273373737', 'hex');
  const samples = [
    [k128, 10, none, '0123456789', '2433477484'], [k128, 10, t10, '0123456789', '6124200773'],
    [k128, 36, t11, '0123456789abcdefghi', 'a9tv40mll9kdu509eum'],
    [k256, 10, none, '0123456789', '6657667009'], [k256, 10, t10, '0123456789', '1001623463'],
    [k256, 36, t11, '0123456789abcdefghi', 'xs8a0azh2avyalyzuwd'],
  ];
  for (const [k, radix, tw, pt, ct] of samples) {
    assert.equal(txt(ff1(k, radix, tw, dig(pt))), ct);
    assert.equal(txt(ff1(k, radix, tw, dig(ct), true)), pt);
  }
});

test('Snowflake: map and unmap round trip within the layout bits; mapMany agrees', { skip }, () => {
  for (const [layout, bits] of [['twitter', 63], ['js53', 53]]) {
    const p = new Public({ keyFile: file('k1'), layout });
    const ids = new BigUint64Array(2000);
    for (let i = 0; i < ids.length; i++) ids[i] = i < 1000 ? BigInt(i) : rand64(bits);
    const pubs = p.mapMany(ids);
    assert.equal(pubs.length, ids.length);
    const seen = new Set();
    for (let i = 0; i < ids.length; i++) {
      const x = p.map(ids[i]);
      assert.equal(typeof x, 'bigint');
      assert.equal(x, pubs[i], `mapMany and map differ at ${i}`);
      assert.ok(x < 1n << BigInt(bits), `${layout}: ${x} has more than ${bits} bits`);
      assert.equal(p.unmap(x), ids[i]);
      seen.add(x);
    }
    assert.equal(seen.size, new Set(ids).size);
    assert.deepEqual([...p.unmapMany(pubs)], [...ids]);
    // consecutive IDs give public IDs with no order to them
    let up = 0;
    for (let i = 1; i < 1000; i++) up += pubs[i] > pubs[i - 1] ? 1 : 0;
    assert.ok(up > 400 && up < 600, `${up} of 999 consecutive pairs in order`);
    if (bits === 53) assert.ok(Number.isSafeInteger(Number(pubs[1999])));
    assert.throws(() => p.map(1n << BigInt(bits)), { code: 'ERANGE' });
    assert.equal(p.map(5), p.map(5n), 'a safe number is taken as its BigInt');
  }
  const b = new Public({ keyFile: file('k1'), bits: 41 });
  assert.ok(b.map((1n << 41n) - 1n) < 1n << 41n);
  assert.throws(() => b.map(-1n), { code: 'ERANGE' });
  assert.throws(() => b.map('12'), { name: 'TypeError', code: 'EINVAL' });
});

test('ULID and UUIDv7: 26 characters, and a UUIDv4 whose 122 bits are permuted', { skip }, () => {
  const pu = new Public({ keyFile: file('k1'), kind: 'ulid' });
  const g = new idgen.UlidGenerator();
  for (let i = 0; i < 200; i++) {
    const u = g.next(), x = pu.map(u);
    assert.match(x, CROCKFORD);
    assert.notEqual(x, u);
    assert.equal(pu.unmap(x), u);
    const text = pu.format(u);
    assert.equal(text.length, 30);
    assert.equal(pu.parse(text), u);
  }
  const pv = new Public({ keyFile: file('k1'), kind: 'uuid7', prefix: 'order' });
  const gv = new idgen.Uuid7Generator();
  const prev = [];
  for (let i = 0; i < 200; i++) {
    const u = gv.next(), x = pv.map(u);
    assert.match(x, UUID);
    assert.equal(pv.unmap(x), u);
    const text = pv.format(u);
    assert.match(text, /^order_0[0-9a-hjkmnp-tv-z]{29}$/);
    assert.equal(pv.parse(text), u);
    prev.push(x);
  }
  assert.equal(new Set(prev).size, 200);
  assert.throws(() => pv.map('0190b0b5-8ad1-4c4f-9b1e-3a4f5e6d7c8b'), { code: 'EPARSE' }, 'a UUIDv4 is not a UUIDv7');
  assert.throws(() => pu.map(1n), { name: 'TypeError' });
  assert.throws(() => pu.mapMany(new BigUint64Array(2)), { name: 'TypeError' });
  const us = Array.from({ length: 300 }, () => g.next());
  const many = pu.mapMany(us);
  assert.deepEqual(many, us.map((u) => pu.map(u)));
  assert.deepEqual(pu.unmapMany(many), us);
  const vs = Array.from({ length: 300 }, () => gv.next());
  assert.deepEqual(pv.unmapMany(pv.mapMany(vs)), vs);
  assert.deepEqual(pv.mapMany([]), []);
  assert.throws(() => pv.mapMany([vs[0], '0190b0b5-8ad1-4c4f-9b1e-3a4f5e6d7c8b']), { code: 'EPARSE' });
});

test('text forms: a prefix, the key version, and EKEY for another key, prefix or an altered text', { skip }, () => {
  const user = new Public({ keyFile: file('k1'), prefix: 'user' });
  const id = 1777777777777777777n;
  const text = user.format(id);
  assert.match(text, /^user_0[0-9a-hjkmnp-tv-z]{16}$/);
  assert.ok(Public.isPublicText(text, { prefix: 'user' }));
  assert.equal(user.parse(text), id);
  assert.deepEqual(user.parseWithVersion(text), { id, version: 1 });
  const order = new Public({ keyFile: file('k1'), prefix: 'order' });
  assert.throws(() => order.parse(`order_${text.slice(5)}`), { code: 'EKEY' }, 'a user_ ID as an order_ one');
  assert.throws(() => order.parse(text), { code: 'EPARSE' }, 'another prefix');
  const other = new Public({ keyFile: file('other'), prefix: 'user' });
  assert.throws(() => other.parse(text), { code: 'EKEY' });
  // one character changed: EKEY (the check), but for 1 in 65,536
  const last = text[text.length - 1] === '0' ? '1' : '0';
  assert.throws(() => user.parse(text.slice(0, -1) + last), { code: 'EKEY' });
  assert.throws(() => user.parse(text.slice(0, -1)), { code: 'EPARSE' }, 'a length of another kind');
  assert.throws(() => user.parse(`${text.slice(0, -1)}u`), { code: 'EPARSE' }, 'u is not in the alphabet');
  assert.throws(() => user.parse(`user_5${text.slice(6)}`), { code: 'EKEY' }, 'key version 6 is not held');
  // rotation: v2 makes new texts, v1's are still read
  const both = new Public({ keyFile: file('k12'), prefix: 'user' });
  const t2 = both.format(id);
  assert.equal(t2[5], '1');
  assert.deepEqual(both.parseWithVersion(text), { id, version: 1 });
  assert.deepEqual(both.parseWithVersion(t2), { id, version: 2 });
  assert.throws(() => user.parse(t2), { code: 'EKEY' });
  // the integer form takes the version asked for
  assert.equal(new Public({ keyFile: file('k12'), version: 1 }).map(id), new Public({ keyFile: file('k1') }).map(id));
  assert.notEqual(both.map(id), user.map(id));
});

test('keys: from a Buffer, from IDGEN_PUBLIC_KEY, never in a message; files others may read refused', { skip }, () => {
  const a = new Public({ keyFile: file('k12') });
  const b = new Public({ key: KEY2, keyVersion: 2 });
  assert.equal(a.map(123456789n), b.map(123456789n));
  assert.equal(b.format(99n)[0], '1', 'key version 2 is written 1');
  const saved = process.env.IDGEN_PUBLIC_KEY;
  try {
    process.env.IDGEN_PUBLIC_KEY = file('k12');
    assert.equal(new Public().map(123456789n), a.map(123456789n));
    assert.equal(new Public({ prefix: 'x' }).parse(new Public({ key: KEY2, keyVersion: 2, prefix: 'x' }).format(7n)), 7n);
    delete process.env.IDGEN_PUBLIC_KEY;
    assert.throws(() => new Public({}), { code: 'EINVAL', message: /IDGEN_PUBLIC_KEY/ });
  } finally {
    if (saved === undefined) delete process.env.IDGEN_PUBLIC_KEY;
    else process.env.IDGEN_PUBLIC_KEY = saved;
  }
  const open = keyFile('open', [[1, KEY1]], 0o644);
  const hex = KEY1.toString('hex');
  let e = null;
  try {
    new Public({ keyFile: open });
  } catch (x) {
    e = x;
  }
  assert.ok(e !== null, 'a key file of mode 0644 was taken');
  assert.match(e.message, /644/);
  assert.match(e.message, /chmod 600/);
  assert.ok(!e.message.includes(hex) && !e.message.toLowerCase().includes(hex.slice(0, 16)));
  // a malformed line is named by its number, never its text
  const bad = file('bad');
  fs.writeFileSync(bad, `v1 ${hex}\nv2 ${hex.slice(0, 60)}zzzz\n`, { mode: 0o600 });
  assert.throws(() => new Public({ keyFile: bad }), (x) => /line 2/.test(x.message) && !x.message.includes(hex.slice(0, 16)));
  assert.throws(() => new Public({ key: Buffer.alloc(16) }), { code: 'EINVAL', message: /16 bytes/ });
  assert.throws(() => new Public({ key: 'x'.repeat(32) }), { name: 'TypeError' });
  assert.throws(() => new Public({ keyFile: file('k1'), key: KEY1 }), { code: 'EINVAL' });
  assert.throws(() => new Public({ keyFile: file('k1'), prefx: 'user' }), { code: 'EINVAL', message: /prefx/ });
  assert.throws(() => new Public({ keyFile: file('k1'), prefix: 'User' }), { code: 'EINVAL' });
  assert.throws(() => new Public({ keyFile: file('k1'), kind: 'ulid', layout: 'twitter' }), { code: 'EINVAL' });
  assert.throws(() => new Public({ keyFile: file('k1'), version: 2 }), { code: 'EINVAL' });
  assert.throws(() => new Public({ keyFile: file('absent') }), (x) => typeof x.code === 'string');
});

test('Public.isPublicText: the shape only, no key', () => {
  assert.ok(Public.isPublicText('0' + '7'.repeat(16)));
  assert.ok(Public.isPublicText('user_z' + 'a'.repeat(16), { prefix: 'user' }));
  assert.ok(Public.isPublicText('1' + 'a'.repeat(29), { kind: 'ulid' }));
  assert.ok(!Public.isPublicText('user_z' + 'a'.repeat(16)), 'a prefix not asked for');
  assert.ok(!Public.isPublicText('0' + 'u'.repeat(16)), 'u is not in the alphabet');
  assert.ok(!Public.isPublicText('0' + 'A'.repeat(16)), 'upper case');
  assert.ok(!Public.isPublicText('0' + 'a'.repeat(15)));
  assert.ok(!Public.isPublicText(12n));
  assert.throws(() => Public.isPublicText('x', { kind: 'uuid4' }), { code: 'EINVAL' });
});

test('a worker thread makes its own codec: the same public IDs', { skip }, async () => {
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    const { Public } = require(workerData.index);
    const p = new Public({ keyFile: workerData.key, prefix: 'user' });
    parentPort.postMessage([String(p.map(42n)), p.format(42n)]);`;
  const w = new Worker(code, { eval: true, workerData: { index: require.resolve('../index.js'), key: file('k1') } });
  const [m, t] = await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  await w.terminate();
  const p = new Public({ keyFile: file('k1'), prefix: 'user' });
  assert.equal(BigInt(m), p.map(42n));
  assert.equal(p.parse(t), 42n);
});

// The addon's public IDs against FF1 written again here (ff1-reference.mjs,
// node:crypto): the tweak is [form, kind, bits, key version] and, for text
// forms, the prefix's bytes (form 1 integer, 2 text; kind 1 Snowflake, 2
// ULID, 3 UUIDv7); a text body is FF1 over 80 bits of (id << 16), in
// lower-case Crockford base32 after the version character.
test('the integer and text forms equal FF1 computed in JavaScript on node:crypto', { skip }, () => {
  const ALPHA = '0123456789abcdefghjkmnpqrstvwxyz';
  const b32 = (x, chars) => {
    let s = '';
    for (let i = 0; i < chars; i++, x >>= 5n) s = ALPHA[Number(x & 31n)] + s;
    return s;
  };
  const tweak = (form, kind, bits, version, prefix = '') =>
    Buffer.concat([Buffer.from([form, kind, bits & 255, version]), Buffer.from(prefix, 'latin1')]);
  for (const [layout, bits] of [['twitter', 63], ['js53', 53], ['64', 64]]) {
    const opts = bits === 64 ? { bits: 64 } : { layout };
    const p = new Public({ keyFile: file('k12'), prefix: 'user', ...opts });
    const p1 = new Public({ keyFile: file('k12'), version: 1, ...opts });
    for (let i = 0; i < 5; i++) {
      const id = rand64(bits);
      assert.equal(p.map(id), ff1Bits(KEY2, tweak(1, 1, bits, 2), id, bits), `${layout} integer, v2`);
      assert.equal(p1.map(id), ff1Bits(KEY1, tweak(1, 1, bits, 1), id, bits), `${layout} integer, v1`);
      const body = ff1Bits(KEY2, tweak(2, 1, bits, 2, 'user'), id << 16n, 80);
      assert.equal(p.format(id), `user_1${b32(body, 16)}`, `${layout} text`);
    }
  }
  const pu = new Public({ keyFile: file('k1'), kind: 'ulid' });
  const u = new idgen.UlidGenerator().next();
  const bytes = Buffer.from(idgen.ulidToUuid(u).replace(/-/g, ''), 'hex');
  const n = bytes.reduce((a, x) => (a << 8n) | BigInt(x), 0n);
  const want = ff1Bits(KEY1, tweak(1, 2, 128, 1), n, 128).toString(16).padStart(32, '0');
  assert.equal(idgen.ulidToUuid(pu.map(u)).replace(/-/g, ''), want, 'ULID integer form');
});
