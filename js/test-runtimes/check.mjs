// The WebAssembly build (browser.mjs) under Deno and Bun, the runtimes its
// package exports name: run by js/test-runtimes/run.sh (ctest js.runtimes)
// as `deno run --allow-read check.mjs DIR` and `bun check.mjs DIR`, DIR
// holding browser.mjs, lib/layout.js, lib/wasm.js and idgen.wasm.  Plain code, no test
// framework (each runtime has its own): prints a line per check, exits 1 if
// any failed.  (Not under js/test/: node --test runs every file there.)
const args = globalThis.Deno ? Deno.args : process.argv.slice(2);
const runtime = globalThis.Deno ? `deno ${Deno.version.deno}` : globalThis.Bun ? `bun ${Bun.version}` : 'node';
const dir = new URL(args[0].endsWith('/') ? args[0] : args[0] + '/', 'file://' + (globalThis.Deno ? Deno.cwd() : process.cwd()) + '/');
const m = await import(new URL('browser.mjs', dir).href);
await m.init();
const V = (await import(new URL('../../tests/vectors/vectors.json', import.meta.url).href, { with: { type: 'json' } })).default;

let failed = 0;
function check(what, ok, detail = '') {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${runtime}: ${what}${ok ? '' : ` (${detail})`}`);
  if (!ok) failed++;
}
function throwsCode(f, code, re) {
  try {
    f();
  } catch (e) {
    return e.code === code && re.test(e.message) ? true : `${e.code}: ${e.message}`;
  }
  return 'nothing thrown';
}
const increasing = (a) => a.every((x, i) => i === 0 || a[i - 1] < x);

const N = 100000;
const g = new m.Snowflake({ layout: 'twitter', node: 'datacenter=1,worker=2' });
const sf = Array.from({ length: N }, () => g.next());
check(`${N} Snowflake IDs: BigInts, distinct and increasing`, typeof sf[0] === 'bigint' && increasing(sf));
const d = m.decode(sf[N - 1]);
check('their node fields are the ones given', d.fields.datacenter === 1 && d.fields.worker === 2, JSON.stringify(d));
check('their time is now', Math.abs(d.unix_ms - Date.now()) < 60000, d.unix_ms);
for (const [name, G] of [['ULID', m.UlidGenerator], ['UUIDv7', m.Uuid7Generator]]) {
  const gen = new G();
  const ids = Array.from({ length: N }, () => gen.next());
  check(`${N} monotonic ${name}s: distinct and increasing`, increasing(ids), ids.slice(0, 2));
}
const batch = await g.nextBatchAsync(5000);
check('nextBatchAsync(5000): 5000 IDs above the last next()', batch.length === 5000 && batch[0] > sf[N - 1]);

for (const v of V.snowflake.twitter_compose) {
  for (const id of [v.id, BigInt(v.id)]) {
    for (const [how, decode] of [['compiled', m.decode], ['interpreted', m._decodeInterpreted]]) {
      const x = JSON.parse(JSON.stringify(decode(id, { layout: v.layout })));
      check(`decode (${how}) ${typeof id} ${v.id}: the vector's fields and time`,
            x.id === v.id && x.unix_ms === v.unix_ms && JSON.stringify(x.fields) === JSON.stringify(v.fields),
            JSON.stringify(x));
    }
  }
}
const u = m.decode(V.ulid.spec_example.ulid);
check('decode of the ULID spec example: its time and UUID', u.unix_ms === V.ulid.spec_example.time_ms &&
      u.uuid === V.ulid.spec_example.uuid, JSON.stringify(u));
check('ulidToUuid / uuidToUlid both ways', m.ulidToUuid(V.ulid.spec_example.ulid) === V.ulid.spec_example.uuid &&
      m.uuidToUlid(V.ulid.spec_example.uuid) === V.ulid.spec_example.ulid);
check('plan: twitter makes 4,096,000 IDs/s per node', m.plan({ layout: 'twitter' }).idsPerSecond === 4096000);
const errs = [
  ['an ID past 2^64 is EPARSE with the command\'s message', () => m.decode('18446744073709551616'), 'EPARSE',
   /does not fit in 64 bits/],
  ['a 27-character ULID is EPARSE', () => m.decode('01ARZ3NDEKTSV4RRFFQ69G5FAVX'), 'EPARSE', /27 characters/],
  ['a bad layout is ELAYOUT', () => new m.Snowflake({ layout: 'time:41', node: 'worker=1' }), 'ELAYOUT', /sequence/],
  ['a registry is refused here (EINVAL)', () => new m.Snowflake({ registry: 'file:/tmp/x', node: 'worker=1' }),
   'EINVAL', /registry/],
];
for (const [what, f, code, re] of errs) {
  const r = throwsCode(f, code, re);
  check(what, r === true, r);
}
console.log(`${runtime}: ${failed ? failed + ' failed' : 'all passed'}`);
if (failed) (globalThis.Deno ? Deno.exit : process.exit)(1);
