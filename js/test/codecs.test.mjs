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
const here = path.dirname(fileURLToPath(import.meta.url));
const V = JSON.parse(fs.readFileSync(path.join(here, '..', '..', 'tests', 'vectors', 'vectors.json')));

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
    assert.deepEqual(outcome(() => w.decode(id, o)), outcome(() => a.decode(id, o)), id);
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
    assert.deepEqual(idgen.decode(id, { layout }), JSON.parse(idgen._decodeJson(id, layout)), `${id} in ${layout}`);
  }
});
