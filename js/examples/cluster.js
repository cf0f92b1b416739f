// Eight Node.js cluster workers on one host, each with its own Snowflake
// generator: the default file: registry leases each worker process its own
// worker value, so no two repeat an ID (no worker IDs assigned by hand).
//
//   node js/examples/cluster.js            (after `make build`)
//
// The primary collects 10,000 IDs from each worker and counts duplicates.
'use strict';
const cluster = require('node:cluster');
const { Snowflake } = require('..');

const WORKERS = 8, EACH = 10000;

if (cluster.isPrimary) {
  const all = [];
  let done = 0;
  for (let i = 0; i < WORKERS; i++) {
    cluster.fork().on('message', (m) => {
      all.push(...m.ids.map(BigInt));
      console.log(`worker process ${m.pid}: worker value ${m.worker}, ${m.ids.length} IDs`);
      if (++done === WORKERS) {
        const distinct = new Set(all).size;
        console.log(`${all.length} IDs, ${all.length - distinct} duplicates`);
        process.exitCode = distinct === all.length ? 0 : 1;
      }
    });
  }
} else {
  // node: the values that are not leased; the registry leases `worker`
  Snowflake.open({ layout: 'twitter', node: 'datacenter=1' }).then((g) => {
    const ids = Array.from(g.nextBatch(EACH), String);
    process.send({ pid: process.pid, worker: g.lease().worker, ids }, async () => {
      await g.close(); // the worker value back before the process ends
      process.exit(0);
    });
  });
}
