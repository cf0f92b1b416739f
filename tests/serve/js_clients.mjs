// The daemon's RESP side through the JavaScript clients people use: ioredis 5
// and node-redis 4 (installed from npm by tests/serve/suite_js_clients.py).
//
//   node js_clients.mjs NODE_MODULES PORT
//
// Prints one JSON object: for each client and way of asking, the IDs as the
// client returned them, written as decimal strings (a JS number as
// String(n), so a rounded one shows rounded).  The suite checks them.
import { createRequire } from 'node:module';
import path from 'node:path';

const [modules, port] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const Redis = require('ioredis');
const { createClient } = require('redis');

const text = (v) => (Array.isArray(v) ? v.map(text) : typeof v === 'bigint' ? v.toString() : String(v));
const out = {};

// ioredis, default options: ID is an integer reply, read as a Number.
{
  const r = new Redis({ host: '127.0.0.1', port: Number(port), lazyConnect: true });
  await r.connect();
  const seq = [];
  seq.push(text(await r.call('IDSTR')));
  seq.push(...text(await r.call('IDSTR', '3')));
  const p = r.pipeline();
  for (let i = 0; i < 1000; i++) p.call('IDSTR');
  for (const [err, v] of await p.exec()) seq.push(err ? 'error: ' + err.message : text(v));
  seq.push(...text(await r.call('IDSTR', '100')));
  out.ioredis_idstr = seq;
  out.ioredis_id_number = [text(await r.call('ID')), ...text(await r.call('ID', '3'))];
  await r.quit();
}

// ioredis with stringNumbers: the integer reply as the server wrote it.
{
  const r = new Redis({ host: '127.0.0.1', port: Number(port), lazyConnect: true, stringNumbers: true });
  await r.connect();
  const seq = [];
  seq.push(text(await r.call('ID')));
  seq.push(...text(await r.call('ID', '3')));
  const p = r.pipeline();
  for (let i = 0; i < 1000; i++) p.call('ID');
  for (const [err, v] of await p.exec()) seq.push(err ? 'error: ' + err.message : text(v));
  out.ioredis_stringnumbers_id = seq;
  await r.quit();
}

// node-redis 4: sendCommand; IDSTR's bulk strings come back as strings.
{
  const c = createClient({ socket: { host: '127.0.0.1', port: Number(port) } });
  c.on('error', () => {});
  await c.connect();
  const seq = [];
  seq.push(text(await c.sendCommand(['IDSTR'])));
  seq.push(...text(await c.sendCommand(['IDSTR', '3'])));
  // node-redis pipelines commands sent without awaiting each one
  const many = [];
  for (let i = 0; i < 1000; i++) many.push(c.sendCommand(['IDSTR']));
  seq.push(...(await Promise.all(many)).map(text));
  const multi = c.multi();
  for (let i = 0; i < 10; i++) multi.addCommand(['IDSTR']);
  seq.push(...text(await multi.execAsPipeline()));
  out.noderedis_idstr = seq;
  out.noderedis_id_number = [text(await c.sendCommand(['ID'])), ...text(await c.sendCommand(['ID', '3']))];
  await c.quit();
}

process.stdout.write(JSON.stringify(out) + '\n');
