// The daemon's RESP side over TLS through the JavaScript Redis clients:
// ioredis 5 (`tls: { ca }`) and node-redis 4 (`socket: { tls: true, ca }`),
// each trusting the test CA only, so that the server's certificate is
// checked (chain, and the address 127.0.0.1 in its subjectAltName).
//
//   node js_clients_tls.mjs NODE_MODULES PORT CA_FILE
//
// Prints one JSON object: for each client, the IDs it got as decimal
// strings (IDSTR: exact), or the error's message as a string.
// tests/serve/suite_tls.py (group_js_tls, run by suite_js_clients.py) checks them.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const [modules, port, caFile] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const Redis = require('ioredis');
const { createClient } = require('redis');
const ca = fs.readFileSync(caFile);
const text = (v) => (Array.isArray(v) ? v.map(text) : String(v));
const out = {};

{
  const r = new Redis({ host: '127.0.0.1', port: Number(port), tls: { ca }, lazyConnect: true,
                        maxRetriesPerRequest: 0, retryStrategy: () => null });
  let first = '';
  r.on('error', (e) => { first = first || e.message + ' / '; });
  try {
    await r.connect();
    const seq = [text(await r.call('IDSTR')), ...text(await r.call('IDSTR', '3'))];
    const p = r.pipeline();
    for (let i = 0; i < 100; i++) p.call('IDSTR');
    for (const [err, v] of await p.exec()) seq.push(err ? 'error: ' + err.message : text(v));
    out.ioredis = seq;
  } catch (e) {
    out.ioredis = 'error: ' + first + e.message;
  }
  r.disconnect();
}

{
  const c = createClient({ socket: { host: '127.0.0.1', port: Number(port), tls: true, ca,
                                     reconnectStrategy: false } });
  let first = '';
  c.on('error', (e) => { first = first || e.message + ' / '; });
  try {
    await c.connect();
    out.noderedis = [text(await c.sendCommand(['IDSTR'])), ...text(await c.sendCommand(['IDSTR', '3']))];
    await c.quit();
  } catch (e) {
    out.noderedis = 'error: ' + first + e.message;
    try { await c.disconnect(); } catch { /* closed already */ }
  }
}
console.log(JSON.stringify(out));
