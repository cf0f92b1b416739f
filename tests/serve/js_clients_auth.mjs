// The daemon with auth_file through the JavaScript Redis clients: ioredis 5
// (username and password options, and a redis:// URL) and node-redis 4 (a
// redis:// URL), each with the right token and with a wrong one.
//
//   node js_clients_auth.mjs NODE_MODULES PORT AGENT TOKEN
//
// Prints one JSON object: for each way, the ID it got (a decimal string) or
// the error's message.  tests/serve/suite_js_clients.py checks them.
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, port, agent, token] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const Redis = require('ioredis');
const { createClient } = require('redis');
const url = (t) => `redis://${agent}:${t}@127.0.0.1:${port}`;
const out = {};

async function ioredis(name, make) {
  const r = make();
  let first = ''; // a refused AUTH comes as an 'error' event; the call then says "closed"
  r.on('error', (e) => { first = first || e.message + ' / '; });
  try {
    await r.connect();
    out[name] = String(await r.call('IDSTR'));
  } catch (e) {
    out[name] = 'error: ' + first + e.message;
  }
  r.disconnect();
}
const opts = (t) => ({ host: '127.0.0.1', port: Number(port), username: agent, password: t,
                       lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
await ioredis('ioredis_options', () => new Redis(opts(token)));
await ioredis('ioredis_url', () => new Redis(url(token), { lazyConnect: true, retryStrategy: () => null }));
await ioredis('ioredis_wrong', () => new Redis(opts(token + 'x')));

async function noderedis(name, t) {
  const c = createClient({ url: url(t), socket: { reconnectStrategy: false } });
  c.on('error', () => {});
  try {
    await c.connect();
    out[name] = String(await c.sendCommand(['IDSTR']));
    await c.quit();
  } catch (e) {
    out[name] = 'error: ' + e.message;
    try { await c.disconnect(); } catch { /* closed already */ }
  }
}
await noderedis('noderedis_url', token);
await noderedis('noderedis_wrong', token + 'x');
console.log(JSON.stringify(out));
