// Leasing from a daemon in Node.js (bench/lease_bench.sh): IDs/s of a
// Snowflake minting locally on a lease from the daemon (idgen://) against
// the static registry's, and of fetching the IDs from the daemon instead
// (GET /id?count=1 and count=100 with fetch, one request at a time).
// Usage: node bench/js/lease.mjs HOST:PORT LAYOUT
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const require = createRequire(import.meta.url);
const idgen = require(path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'js'));
const [target, layout] = process.argv.slice(2);
const RUNS = 5, N = 2000000;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

const gens = [
  ['static', new idgen.Snowflake({ layout, node: 'datacenter=1,worker=15', registry: 'static' })],
  [`idgen://${target}`, await idgen.Snowflake.open({ layout, node: 'datacenter=1',
                                                     registry: `idgen://${target}` })],
];
const rates = gens.map(() => []);
let sink = 0n;
for (let r = 0; r < RUNS; r++)
  gens.forEach(([, g], i) => { // in turns
    const t0 = process.hrtime.bigint();
    for (let j = 0; j < N; j++) sink ^= g.next();
    rates[i].push(N / (Number(process.hrtime.bigint() - t0) / 1e9));
  });
console.log('%s %s %s %s', 'Node: mint locally, registry'.padEnd(44), 'IDs/s'.padStart(12),
            'ns/ID'.padStart(10), 'ratio'.padStart(8));
const base = median(rates[0]);
gens.forEach(([name], i) => {
  const m = median(rates[i]);
  console.log('%s %s %s %s', name.padEnd(44), m.toFixed(0).padStart(12),
              (1e9 / m).toFixed(2).padStart(10), (base / m).toFixed(2).padStart(8));
});
for (const [, g] of gens) await g.close();

console.log('%s %s %s', 'Node: fetch from the daemon'.padEnd(44), 'IDs/s'.padStart(12),
            'ns/ID'.padStart(10));
for (const count of [1, 100]) {
  let ids = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < 2000) {
    const r = await fetch(`http://${target}/id?count=${count}`);
    await r.text();
    ids += count;
  }
  const rate = ids / ((performance.now() - t0) / 1000);
  console.log('%s %s %s', `GET /id?count=${count}`.padEnd(44), rate.toFixed(0).padStart(12),
              (1e9 / rate).toFixed(2).padStart(10));
}
if (sink === 1n) console.log('');
