// Known answers shared with the C tests (tests/vectors/vectors.json): decode,
// ULID <-> UUID, and the monotonic ULID and UUIDv7 generators; bad input
// thrown with the CLI's message.  For both builds: the addon, and the
// WebAssembly module (browser.mjs) where IDGEN_WASM_DIR names its directory,
// which must then give the same answers and messages as the addon.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const builds = [['addon', require('../index.js')]];
if (process.env.IDGEN_WASM_DIR)
  builds.push(['wasm', await import(pathToFileURL(path.join(process.env.IDGEN_WASM_DIR, 'browser.mjs')))]);
for (const [, mod] of builds) await mod.init();
const here = path.dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(fs.readFileSync(path.join(here, '..', '..', 'tests', 'vectors', 'vectors.json')));
// what JSON.stringify writes of a decode result (Snowflake results have id
// and time as getters), BigInts as tagged text
const plain = (x) => JSON.parse(JSON.stringify(x, (k, v) => (typeof v === 'bigint' ? { bigint: String(v) } : v)));

for (const [build, idgen] of builds) {
  test(`${build}: decode: the Snowflake vectors, as idgen decode --json gives them`, () => {
    for (const group of ['twitter_compose', 'epoch0_compose']) {
      for (const v of V.snowflake[group]) {
        for (const id of [v.id, BigInt(v.id)]) {
          const d = idgen.decode(id, { layout: v.layout });
          assert.equal(d.kind, 'snowflake');
          assert.equal(d.id, v.id);
          assert.equal(d.unix_ms, v.unix_ms);
          assert.deepEqual(d.fields, v.fields);
        }
      }
    }
    // a Discord ID, by its preset (its docs' example: 2016-04-30T11:18:25.796Z)
    const d = idgen.decode('175928847299117063', { layout: 'discord' });
    assert.equal(d.time, '2016-04-30T11:18:25.796Z');
  });

  test(`${build}: decode: ULIDs and UUIDs; ULID <-> UUID both ways`, () => {
    const ex = V.ulid.spec_example;
    const d = idgen.decode(ex.ulid);
    assert.equal(d.kind, 'ulid');
    assert.equal(d.unix_ms, ex.time_ms);
    assert.equal(d.uuid, ex.uuid);
    assert.equal(idgen.ulidToUuid(ex.ulid), ex.uuid);
    assert.equal(idgen.uuidToUlid(ex.uuid), ex.ulid);
    for (const v of V.ulid.decode_time) assert.equal(idgen.decode(v.input).unix_ms, v.expected_ms);
    const r = V.uuidv7.rfc9562_example;
    const u = idgen.decode(r.uuid);
    assert.equal(u.kind, 'uuid');
    assert.equal(u.version, 7);
    assert.equal(u.unix_ms, r.unix_ts_ms);
    assert.equal(idgen.ulidToUuid(idgen.uuidToUlid(r.uuid)), r.uuid.toLowerCase());
  });

  test(`${build}: bad input throws the message the CLI prints`, () => {
    assert.throws(() => idgen.decode('01ARZ3NDEKTSV4RRFFQ69G5FAVX'),
                  { code: 'EPARSE', message: /is 27 characters \(expected 1 to 20 decimal digits, a 26-character ULID/ });
    assert.throws(() => idgen.decode('18446744073709551616'), { code: 'EPARSE', message: /18446744073709551616/ });
    assert.throws(() => idgen.decode(2 ** 60), { code: 'ERANGE' });
    assert.throws(() => idgen.decode('1', { layout: 'time:41,bogus' }), { code: 'ELAYOUT' });
    for (const v of V.ulid.invalid) {
      assert.throws(() => idgen.ulidToUuid(v.input), { code: /EPARSE|ERANGE/ }, `${JSON.stringify(v.input)}: ${v.reason}`);
    }
    assert.throws(() => idgen.uuidToUlid('017f22e2-79b0-7cc3-98c4-dc0c0c07398g'),
                  { code: 'EPARSE', message: /'g' at position 36/ });
    assert.throws(() => idgen.ulidToUuid(42), TypeError);
  });

  test(`${build}: monotonic ULID and UUIDv7 generators: strictly increasing, distinct, current time`, () => {
    for (const [G, re] of [[idgen.UlidGenerator, /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/],
                           [idgen.Uuid7Generator, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/]]) {
      const g = new G();
      const t0 = Date.now();
      let last = '';
      for (let i = 0; i < 100000; i++) {
        const x = g.next();
        assert.ok(re.test(x), x);
        assert.ok(x > last, `${x} after ${last}`); // both sort as text in time order
        last = x;
      }
      const ms = idgen.decode(last).unix_ms;
      assert.ok(ms >= t0 && ms <= Date.now() + 1, `time ${ms}`);
    }
  });

  // (The WebAssembly build hands out IDs made a few at a time, while the
  // millisecond they were made in lasts: none may be older than the moment
  // it is handed out, at any rate of calls.)
  test(`${build}: monotonic ULIDs and UUIDv7s are never older than the call that returns them`, async () => {
    const timeOf = (x) => idgen.decode(x).unix_ms;
    for (const G of [idgen.UlidGenerator, idgen.Uuid7Generator]) {
      const g = new G();
      let last = '', calls = 0;
      const until = Date.now() + 300;
      while (Date.now() < until) {
        // bursts of 1 to 4,096 calls, then a pause of 0 to 2 ms
        const burst = 1 << Math.floor(Math.random() * 13);
        for (let i = 0; i < burst; i++, calls++) {
          const t0 = Date.now();
          const x = g.next();
          const t1 = Date.now();
          const ms = timeOf(x);
          assert.ok(x > last, `${x} after ${last}`);
          assert.ok(ms >= t0 && ms <= t1, `${G.name}: ${x} is of ${ms}, called in [${t0}, ${t1}]`);
          last = x;
        }
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 3)));
      }
      assert.ok(calls > 1000, `${calls} calls`);
    }
  });
}

test('both builds: the same decode objects and error messages', (t) => {
  if (builds.length < 2) {
    t.skip('IDGEN_WASM_DIR not set: the WebAssembly build is not tested here');
    return;
  }
  const [[, a], [, w]] = builds;
  const outcome = (f) => {
    try {
      return f();
    } catch (e) {
      return { code: e.code, message: e.message };
    }
  };
  const inputs = [['175928847299117063', 'discord'], [V.ulid.spec_example.ulid],
                  [V.uuidv7.rfc9562_example.uuid], ['01ARZ3NDEKTSV4RRFFQ69G5FAVX'],
                  ['18446744073709551616'], ['1', 'time:41,bogus'], ['x'], ['']];
  for (const v of V.snowflake.twitter_compose) inputs.push([v.id, v.layout]);
  for (const v of V.ulid.invalid) inputs.push([v.input]);
  for (const [id, layout] of inputs) {
    const o = layout ? { layout } : undefined;
    assert.deepEqual(outcome(() => plain(w.decode(id, o))), outcome(() => plain(a.decode(id, o))), id);
  }
  for (const v of V.ulid.invalid)
    assert.deepEqual(outcome(() => w.ulidToUuid(v.input)), outcome(() => a.ulidToUuid(v.input)));
});

test('addon: decode gives exactly the CLI\'s JSON, for every kind and many layouts', () => {
  const idgen = builds[0][1];
  const cases = [['1862107412345683968', 'twitter'], ['175928847299117063', 'discord'], ['0', 'twitter'],
                 ['9223372036854775807', 'time:41@1ms,node:10,sequence:12,epoch=0'],
                 ['18446744073709551615', 'time:44@1ms,node:8,sequence:12,epoch=0'],
                 ['432345564227567615', 'sonyflake'], [V.ulid.spec_example.ulid, 'twitter'],
                 [V.uuidv7.rfc9562_example.uuid, 'twitter'], ['00000000-0000-4000-8000-000000000000', 'twitter'],
                 ['6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'twitter']];
  for (const [id, layout] of cases) {
    assert.deepEqual(plain(idgen.decode(id, { layout })), JSON.parse(idgen._decodeJson(id, layout)), `${id} in ${layout}`);
  }
});

// A random layout spec: time, sequence (below time) and up to three node
// fields in any order, widths to 64 bits in all, a field across the 32-bit
// boundary more often than not; epochs and ticks that put some IDs past
// year 9999 (read by the native path) and most before.
function randomLayout(rand) {
  const time = 20 + Math.floor(rand() * 34), seq = 1 + Math.floor(rand() * 16);
  const nodes = [];
  let room = 64 - time - seq;
  for (let i = 0, k = Math.floor(rand() * 4); i < k && room > 0; i++) {
    const b = 1 + Math.floor(rand() * Math.min(room, 20));
    nodes.push(`n${i}:${b}`);
    room -= b;
  }
  const order = [`time:${time}@${[1, 10, 1000][Math.floor(rand() * 3)]}ms`, ...nodes];
  order.splice(1 + Math.floor(rand() * (order.length)), 0, `sequence:${seq}`); // below time
  const total = time + seq + nodes.reduce((a, f) => a + Number(f.split(':')[1]), 0);
  return [order.join(',') + `,epoch=${Math.floor(rand() * 2e12)}`, total];
}

test('decode in JavaScript (Snowflake IDs by shifts) gives exactly the CLI\'s JSON: random layouts and IDs, both builds', () => {
  let seed = 20261128;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const oracle = builds[0][1]._decodeJson;
  let n = 0;
  for (let l = 0; l < 300; l++) {
    const [spec, total] = randomLayout(rand);
    for (let i = 0; i < 40; i++) {
      // a random ID below 2^total, and the layout's edges
      let id = 0n;
      for (let b = 0; b < total; b += 16) id = (id << 16n) | BigInt(Math.floor(rand() * 65536));
      id &= (1n << BigInt(total)) - 1n;
      if (i === 0) id = 0n;
      if (i === 1) id = (1n << BigInt(total)) - 1n;
      const want = JSON.parse(oracle(String(id), spec));
      for (const [name, idgen] of builds) {
        const forms = [id, String(id)];
        if (id <= BigInt(Number.MAX_SAFE_INTEGER)) forms.push(Number(id));
        for (const x of forms) {
          for (const [how, decode] of [['compiled', idgen.decode], ['interpreted', idgen._decodeInterpreted]]) {
            assert.deepEqual(plain(decode(x, { layout: spec })), want, `${name} (${how}): ${typeof x} ${id} in ${spec}`);
            n++;
          }
        }
      }
    }
    // one past the layout's bits: the command's message, from every form
    if (total < 64) {
      const over = 1n << BigInt(total);
      for (const [name, idgen] of builds)
        assert.throws(() => idgen.decode(over, { layout: spec }), { code: 'EPARSE', message: /does not fit/ },
                      `${name}: ${over} in ${spec}`);
    }
  }
  assert.ok(n > 50000 * builds.length, `${n} decodes compared`);
});

test('decode: a field over 2^53 comes back a BigInt (read natively); leading zeros are dropped from id', () => {
  for (const [name, idgen] of builds) {
    const d = idgen.decode((2n << 62n) | (1n << 60n) | 1n, { layout: 'time:2@1ms,node:60,sequence:2,epoch=0' });
    if (name === 'addon') assert.equal(d.fields.node, 1n << 58n);
    assert.equal(d.unix_ms, 2);
    const z = idgen.decode('00012345');
    assert.equal(z.id, '12345', name);
    assert.equal(JSON.parse(JSON.stringify(z)).id, '12345', name);
    // the result's own keys, and the getters
    const s = idgen.decode(1862107412345683968n);
    assert.deepEqual(Object.keys(s), ['kind', 'layout', 'unix_ms', 'fields'], name);
    assert.equal(s.time, '2024-11-28T12:12:58.042Z', name);
    assert.equal(s.id, '1862107412345683968', name);
  }
});

test('plan: what idgen plan shows, as numbers', () => {
  for (const [name, idgen] of builds) {
    const p = idgen.plan({ layout: 'twitter', rate: 5000000 });
    assert.equal(p.layout, 'twitter', name);
    assert.equal(p.spec, 'time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657');
    assert.equal(p.totalBits, 63);
    assert.equal(p.idsPerSecond, 4096000);
    assert.equal(p.nodes, 1024);
    assert.equal(p.clusterIdsPerSecond, 4096000 * 1024);
    assert.equal(p.exhaustsAtMs, 1288834974657 + 2 ** 41);
    assert.equal(p.reaches2to63, null);
    assert.equal(p.rate.nodesNeeded, 2);
    assert.ok(Math.abs(p.rate.burstMs - 1000 / (5000000 / 4096000 - 1)) < 1e-6, `${p.rate.burstMs}`);
    assert.equal(idgen.plan({ layout: 'sonyflake', rate: 100 }).rate.sustained, true);
    assert.equal(idgen.plan({ layout: 'baidu' }).exhausted, true); // ran out in 2024
    assert.equal(idgen.plan({ layout: 'js53' }).below2to53, true);
    assert.equal(idgen.plan({ layout: 'time:40@1ms,sequence:12,node:12,epoch=0' }).reaches2to63, 2 ** 39);
    assert.equal(idgen.plan({ layout: 'node:1,time:41@1ms,sequence:22,epoch=0' }).reaches2to63, 'node');
    assert.throws(() => idgen.plan({ layout: 'time:41' }), { code: 'ELAYOUT', message: /sequence/ });
    assert.throws(() => idgen.plan({ rate: -1 }), { code: 'EINVAL', message: /rate/ });
  }
});
