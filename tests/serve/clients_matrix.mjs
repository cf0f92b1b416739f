// One JavaScript Redis client, one version, on its DEFAULT options, against
// the daemon's RESP port: what tests/serve/suite_clients.py's client matrix
// runs for ioredis 5 and 6 and node-redis 4, 5 and 6 (each installed from
// npm into a prefix of its own).
//
//   node clients_matrix.mjs ioredis|node-redis NODE_MODULES PORT
//
// Runs the matrix's steps in order (ID, ID 5, IDSTR, IDSTR 3, ULID 3,
// UUID7 2, DECODE, INFO, INFO clients, a pipeline of 100 IDSTR, MULTI/EXEC,
// the error of ID abc, PING after it, HELLO for the protocol in effect, then
// the client's own exact path for integers) and prints one JSON object:
// {client, version, default_protocol, events, steps: [[name, result]...]}.
// A result is {ok: VALUE} or {error: MESSAGE, name: ERROR_CLASS}; a VALUE
// keeps the JavaScript type of what the client returned: a string as a
// string, a Number as {number: String(n)} (so a rounded one shows rounded),
// a BigInt as {bigint: "..."}, an array as an array, a map as {map: [[k, v]...]},
// null as null.  The suite checks them; this script judges nothing.
import { createRequire } from 'node:module';
import path from 'node:path';

const [kind, modules, port] = process.argv.slice(2);
const require = createRequire(path.join(modules, 'x.js'));
const pkg = kind === 'ioredis' ? 'ioredis' : 'redis';
const version = require(pkg + '/package.json').version;

const enc = (v) => {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return { number: String(v) };
  if (typeof v === 'bigint') return { bigint: v.toString() };
  if (Buffer.isBuffer(v)) return { buffer: v.toString('latin1') };
  if (Array.isArray(v)) return v.map(enc);
  if (v instanceof Map) return { map: [...v].map(([k, x]) => [enc(k), enc(x)]) };
  if (v instanceof Error) return { error: v.message, name: v.constructor.name };
  if (typeof v === 'object') return { map: Object.entries(v).map(([k, x]) => [k, enc(x)]) };
  return { other: String(v) };
};
const steps = [];
const events = [];
const step = async (name, fn) => {
  try {
    steps.push([name, { ok: enc(await fn()) }]);
  } catch (e) {
    steps.push([name, { error: String(e && e.message), name: e && e.constructor && e.constructor.name }]);
  }
};
const timeout = (ms) =>
  new Promise((_, reject) => setTimeout(() => reject(new Error('no reply within ' + ms + ' ms')), ms).unref());
const within = (p) => Promise.race([p, timeout(10000)]);

// The steps both clients take alike: `cmd` sends a command, `client.info()` INFO.
const commonSteps = async (cmd, client) => {
  await step('ID', () => cmd('ID'));
  await step('ID 5', () => cmd('ID', '5'));
  await step('IDSTR', () => cmd('IDSTR'));
  await step('IDSTR 3', () => cmd('IDSTR', '3'));
  await step('ULID 3', () => cmd('ULID', '3'));
  await step('UUID7 2', () => cmd('UUID7', '2'));
  const last = steps.find(([n]) => n === 'IDSTR')[1].ok;
  await step('DECODE', () => cmd('DECODE', typeof last === 'string' ? last : '1'));
  await step('INFO', () => within(client.info()));
  await step('INFO clients', () => within(client.info('clients')));
};

let c, defaultProtocol;
if (kind === 'ioredis') {
  const Redis = require('ioredis');
  // ioredis 6 opens with HELLO 3 (protocol: 3), 5 knows nothing but RESP2.
  defaultProtocol = (Redis.defaultOptions && Redis.defaultOptions.protocol) || 2;
  // Default options: the address, and lazyConnect to await the connection.
  const opts = { host: '127.0.0.1', port: Number(port), lazyConnect: true };
  c = new Redis(opts);
  c.on('error', (e) => events.push('error: ' + e.message));
  await within(c.connect());
  const cmd = (...a) => within(c.call(...a));
  await commonSteps(cmd, c);
  await step('pipeline of 100 IDSTR', async () => {
    const p = c.pipeline();
    for (let i = 0; i < 100; i++) p.call('IDSTR');
    return (await within(p.exec())).map(([err, v]) => (err ? err : v));
  });
  await step('MULTI IDSTR, IDSTR 2, ULID, ID, EXEC', async () => {
    const r = await within(c.multi().call('IDSTR').call('IDSTR', '2').call('ULID').call('ID').exec());
    return r.map(([err, v]) => (err ? err : v));
  });
  await step('ID abc', () => cmd('ID', 'abc'));
  await step('PING after the error', () => cmd('PING'));
  await step('HELLO', () => cmd('HELLO'));
  await within(c.quit());
  // The exact path: stringNumbers hands integer replies over as strings.
  const exact = new Redis({ ...opts, stringNumbers: true });
  exact.on('error', (e) => events.push('error (stringNumbers): ' + e.message));
  await within(exact.connect());
  await step('exact: ID (stringNumbers)', () => within(exact.call('ID')));
  await step('exact: ID 3 (stringNumbers)', () => within(exact.call('ID', '3')));
  await within(exact.quit());
} else {
  const redis = require('redis');
  // node-redis 6 opens with HELLO 3 (DEFAULT_RESP); 4 and 5 send no HELLO.
  defaultProtocol = redis.DEFAULT_RESP || 2;
  c = redis.createClient({ socket: { host: '127.0.0.1', port: Number(port) } });
  c.on('error', (e) => events.push('error: ' + e.message));
  await within(c.connect());
  const cmd = (...a) => within(c.sendCommand(a));
  await commonSteps(cmd, c);
  await step('pipeline of 100 IDSTR', () => {
    const m = c.multi();
    for (let i = 0; i < 100; i++) m.addCommand(['IDSTR']);
    return within(m.execAsPipeline());
  });
  await step('MULTI IDSTR, IDSTR 2, ULID, ID, EXEC', () =>
    within(c.multi().addCommand(['IDSTR']).addCommand(['IDSTR', '2']).addCommand(['ULID']).addCommand(['ID']).exec()));
  await step('ID abc', () => cmd('ID', 'abc'));
  await step('PING after the error', () => cmd('PING'));
  await step('HELLO', () => cmd('HELLO'));
  // The exact path of node-redis 5 and later: integer replies as strings
  // through a type mapping, given with each command (node-redis 5's
  // withTypeMapping() does not reach sendCommand(); 6's does).  node-redis 4
  // has no type mappings: IDSTR is its path.
  if (redis.RESP_TYPES) {
    const tm = { typeMapping: { [redis.RESP_TYPES.NUMBER]: String } };
    await step('exact: ID (typeMapping NUMBER: String)', () => within(c.sendCommand(['ID'], tm)));
    await step('exact: ID 3 (typeMapping NUMBER: String)', () => within(c.sendCommand(['ID', '3'], tm)));
  }
  await within(c.quit());
}

process.stdout.write(JSON.stringify({ client: kind, version, default_protocol: defaultProtocol, events, steps }) + '\n');
