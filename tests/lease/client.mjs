// A client that mints on a lease from a daemon (tests/lease_clients_test.py):
//   node client.mjs REGISTRY N [STREAM_MS] [TTL_MS]
// Opens a Snowflake (twitter, datacenter=1) on REGISTRY (idgen://…) and
// writes its lease's node as "lease NODE" on stdout, then N IDs, one a line.
// With STREAM_MS, it makes them over time instead: 100 IDs every STREAM_MS
// (after each write; -1 for ever), so that a test can stop the daemon or
// the client meanwhile.  On an error it writes "error CODE MESSAGE" and
// exits 3; on SIGTERM it closes the generator (the lease given back) and
// exits 0.
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const idgen = require(process.env.IDGEN_JS);
const [registry, nText, streamText, ttlText] = process.argv.slice(2);
const n = Number(nText), stream = streamText ? Number(streamText) : 0;
const out = (s) => process.stdout.write(s + '\n');
let g;
try {
  g = await idgen.Snowflake.open({ layout: 'twitter', node: 'datacenter=1', registry,
                                   ...(ttlText ? { ttlMs: Number(ttlText) } : {}) });
} catch (e) {
  out(`error ${e.code} ${e.message}`);
  process.exit(3);
}
out('lease ' + g.lease().node);
let closing = false;
process.on('SIGTERM', async () => {
  closing = true; // no turn after this one
  await g.close();
  process.exit(0);
});
const fail = (e) => {
  out(`error ${e.code} ${e.message}`);
  process.exit(3);
};
if (!stream) {
  const lines = [];
  try {
    for (let i = 0; i < n; i++) lines.push(g.next());
  } catch (e) {
    out(lines.join('\n'));
    fail(e);
  }
  out(lines.join('\n'));
  await g.close();
} else {
  let made = 0;
  const turn = () => {
    if (closing) return;
    const lines = [];
    try {
      for (let i = 0; i < 100; i++) lines.push(g.next());
    } catch (e) {
      if (lines.length) out(lines.join('\n'));
      fail(e);
    }
    out(lines.join('\n'));
    made += 100;
    if (n >= 0 && made >= n) g.close().then(() => process.exit(0));
    else setTimeout(turn, stream);
  };
  turn();
}
