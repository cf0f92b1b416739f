// idgen's Node.js addon beside the npm packages people use instead, in one
// run: speed (ops/s, median of ROUNDS rounds) and correctness (duplicates
// and order violations over 1,000,000 IDs in one process, and across 4
// processes started together with each package's defaults).
//
//   node bench/js/bench.mjs PEERS_NODE_MODULES [--quick]
//
// bench/js/run.sh installs the peers into a temporary folder and runs this
// (make bench-js).  The addon comes from IDGEN_NODE_ADDON or build/js.
import { createRequire } from 'node:module';
import { fork, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [peersDir, ...flags] = process.argv.slice(2);
const quick = flags.includes('--quick');
const role = process.env.IDGEN_BENCH_CHILD; // set in the 4-process children
const require = createRequire(import.meta.url);
const idgen = require(path.join(here, '..', '..', 'js', 'index.js'));
const peer = async (name) => import(pathToFileURL(path.join(peersDir, name, '')).href).catch(() =>
  import(pathToFileURL(require.resolve(name, { paths: [peersDir] })).href));
const TWITTER = 1288834974657;

const { v7: uuidV7 } = await peer('uuid');
const ulidPkg = await peer('ulid');
const ulidx = await peer('ulidx');
const { uuidv7 } = await peer('uuidv7');
const { Snowflake: Sapphire } = await peer('@sapphire/snowflake');
const NS = await peer('nodejs-snowflake');
const cjs = (mod) => (typeof mod.default === 'function' ? mod.default : mod.default?.default ?? mod);
const SnowflakeId = cjs(await peer('snowflake-id'));
const FlakeId = cjs(await peer('flake-idgen'));

// One file: registry for the run and its 4-process children (as one host's
// processes share the default one).
const regDir = process.env.IDGEN_BENCH_REGISTRY || fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-bench-js-'));
process.env.IDGEN_BENCH_REGISTRY = regDir;
const registry = 'file:' + regDir + '/reg';

// Each kind's makers with their defaults (what a user who reads the README
// gets); Snowflake makers also get the same node values where they take one.
function makers() {
  const g = new idgen.Snowflake({ registry, node: 'datacenter=1' });
  const sap = new Sapphire(BigInt(TWITTER));
  const ns = new (NS.Snowflake || NS.default.Snowflake)({ custom_epoch: TWITTER, instance_id: 1 });
  const si = new SnowflakeId({ mid: 1, offset: TWITTER });
  const fl = new FlakeId({ id: 1 });
  const mu = ulidPkg.monotonicFactory(), mx = ulidx.monotonicFactory();
  const ug = new idgen.UlidGenerator(), vg = new idgen.Uuid7Generator();
  return {
    close: () => g.close(),
    ops: {
      'Snowflake, BigInt': { idgen: () => g.next(), '@sapphire/snowflake': () => sap.generate(),
        'nodejs-snowflake': () => ns.getUniqueID() },
      'Snowflake, string': { idgen: () => g.nextString(), 'snowflake-id': () => si.generate(),
        '@sapphire/snowflake': () => sap.generate().toString(),
        'nodejs-snowflake': () => ns.getUniqueID().toString(),
        'flake-idgen (hex)': () => fl.next().toString('hex') },
      'ULID': { idgen: () => idgen.ulid(), ulid: () => ulidPkg.ulid(), ulidx: () => ulidx.ulid() },
      'monotonic ULID': { idgen: () => ug.next(), ulid: () => mu(), ulidx: () => mx() },
      'UUIDv7': { idgen: () => vg.next(), uuid: () => uuidV7(), uuidv7: () => uuidv7() },
    },
  };
}

// Duplicates and order violations among n values of f (compared as BigInt
// for numbers and bigints, as text otherwise: every kind here sorts so).
function correctness(f, n) {
  const seen = new Set();
  let dups = 0, order = 0, last = null;
  for (let i = 0; i < n; i++) {
    const v = f();
    const k = typeof v === 'bigint' ? v : String(v);
    if (seen.has(k)) dups++;
    seen.add(k);
    if (last !== null && !(k > last)) order++;
    last = k;
  }
  return { dups, order };
}

// The addon's cost per call beside the C library's for the same operation,
// in the same run: idgen bench (the C figure) and the same call from
// JavaScript.  The Snowflake pair uses bench's wide layout (22 sequence
// bits), whose rate the clock does not cap.
function overhead(time) {
  const bin = process.env.IDGEN_BIN || path.join(here, '..', '..', 'build', 'idgen');
  const pairs = [
    ['next wide 1 thread fast-clock', 'Snowflake next (BigInt), wide layout', () => {
      const g = new idgen.Snowflake({ registry: 'static', layout: 'time:41@1ms,sequence:22,epoch=1288834974657' });
      return [() => g.next(), () => g.close()];
    }],
    ['ulid monotonic+encode fast-clock', 'monotonic ULID', () => {
      const g = new idgen.UlidGenerator();
      return [() => g.next(), () => {}];
    }],
    ['uuid7 monotonic fast-clock', 'UUIDv7 (monotonic)', () => {
      const g = new idgen.Uuid7Generator();
      return [() => g.next(), () => {}];
    }],
    ['ulid new+encode fast-clock', 'ULID (one-off)', () => [() => idgen.ulid(), () => {}]],
  ];
  const out = spawnSync(bin, ['bench', ...(quick ? ['--quick'] : ['--runs', '5', '--seconds', '0.3']),
                              '--only', 'fast-clock'], { encoding: 'utf8' });
  if (out.status !== 0) {
    console.log(`\n(per-call overhead: ${bin} bench failed: ${(out.stderr || out.error || '').toString().trim()})`);
    return;
  }
  console.log('\n| operation | C library (idgen bench) | from JavaScript (addon) | the addon\'s cost per call |');
  console.log('|---|---|---|---|');
  for (const [cname, jsname, make] of pairs) {
    const line = out.stdout.split('\n').find((l) => l.startsWith(cname + ' '));
    const cns = line ? Number(/([0-9.]+) ns\/ID/.exec(line)[1]) : NaN;
    const [f, close] = make();
    const jns = 1e9 / time(f);
    close();
    console.log(`| ${jsname} | ${cns.toFixed(1)} ns | ${jns.toFixed(1)} ns | ${(jns - cns).toFixed(1)} ns |`);
  }
}

if (role) {
  // a child of the 4-process run: N values of one maker, as text, to stdout
  const m = makers();
  const [kind, name, n] = role.split('|');
  const f = m.ops[kind][name];
  const out = [];
  for (let i = 0; i < Number(n); i++) out.push(String(f()));
  process.send(out, () => {
    m.close();
    process.exit(0);
  });
} else {
  const ROUNDS = quick ? 3 : 7, ROUND_MS = quick ? 100 : 300, N1 = quick ? 200000 : 1000000;
  const m = makers();
  const time = (f) => {
    let n = 1000;
    for (;;) { // calibrate: n calls take about ROUND_MS
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) f();
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (ms > ROUND_MS / 4) { n = Math.ceil(n * ROUND_MS / ms); break; }
      n *= 4;
    }
    const rates = [];
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) f();
      rates.push(n / (Number(process.hrtime.bigint() - t0) / 1e9));
    }
    rates.sort((a, b) => a - b);
    return rates[ROUNDS >> 1];
  };
  const fourProcesses = async (kind, name) => {
    const per = N1 / 4;
    const kids = [];
    for (let p = 0; p < 4; p++) {
      kids.push(new Promise((resolve, reject) => {
        const c = fork(fileURLToPath(import.meta.url), [peersDir],
          { env: { ...process.env, IDGEN_BENCH_CHILD: `${kind}|${name}|${per}` } });
        c.once('message', resolve);
        c.on('exit', (code) => code && reject(new Error(`${name}: child exited ${code}`)));
      }));
    }
    const all = (await Promise.all(kids)).flat();
    return all.length - new Set(all).size;
  };
  console.log(`# node ${process.version}, ${os.cpus()[0].model}, ${os.cpus().length} cores; ` +
              `${ROUNDS} rounds of ~${ROUND_MS} ms, medians; correctness over ${N1} IDs`);
  console.log('| operation | package | ops/s | ns/op | dups (1 process) | order violations | dups (4 processes) |');
  console.log('|---|---|---|---|---|---|---|');
  const summary = [];
  for (const [kind, byName] of Object.entries(m.ops)) {
    const rows = [];
    for (const [name, f] of Object.entries(byName)) {
      let rate, c, d4;
      try {
        rate = time(f);
        c = correctness(f, N1);
        d4 = await fourProcesses(kind, name);
      } catch (e) { // flake-idgen throws when a millisecond's sequence runs out
        console.log(`| ${kind} | ${name} | fails: ${e.message.split('\n')[0]} | | | | |`);
        continue;
      }
      rows.push({ name, rate, ...c, d4 });
      console.log(`| ${kind} | ${name} | ${(rate / 1e6).toFixed(2)} M | ${(1e9 / rate).toFixed(1)} | ` +
                  `${c.dups} | ${c.order} | ${d4} |`);
    }
    const me = rows.find((r) => r.name === 'idgen');
    // the measure: the fastest peer without duplicates in one process (none
    // coordinates node values across processes, so all repeat there)
    // (a plain ULID promises no order within a millisecond: only its
    // duplicates count)
    const ordered = kind !== 'ULID';
    const clean = rows.filter((r) => r.name !== 'idgen' && r.dups === 0 && (!ordered || r.order === 0));
    const best = clean.sort((a, b) => b.rate - a.rate)[0];
    summary.push(`${kind}: idgen ${(me.rate / 1e6).toFixed(2)} M/s` + (best
      ? `, ${(me.rate / best.rate).toFixed(2)}x the fastest peer without duplicates (${best.name}, ${(best.rate / 1e6).toFixed(2)} M/s)`
      : ', every peer made duplicates or went out of order'));
  }
  // decode: a Snowflake ID to its fields (sapphire's deconstruct gives
  // BigInts and no ISO time; idgen's decode the command's object, whose id
  // and time strings are made when read: the second row reads them)
  const id = m.ops['Snowflake, BigInt'].idgen();
  const sapd = new Sapphire(BigInt(TWITTER));
  const dec = {
    'decode (Snowflake, BigInt)': { idgen: () => idgen.decode(id).fields.worker,
      '@sapphire/snowflake': () => sapd.deconstruct(id).workerId },
    'decode, and id and time as text': { idgen: () => { const d = idgen.decode(id); return d.time + d.id; },
      '@sapphire/snowflake': () => { const d = sapd.deconstruct(id); return new Date(Number(d.timestamp)).toISOString() + d.id; } },
    'decode (Snowflake, decimal text)': { idgen: () => idgen.decode('1862107412345683968').fields.worker,
      '@sapphire/snowflake': () => sapd.deconstruct('1862107412345683968').workerId },
  };
  for (const [kind, byName] of Object.entries(dec)) {
    const r = {};
    for (const [name, f] of Object.entries(byName)) {
      r[name] = time(f);
      console.log(`| ${kind} | ${name} | ${(r[name] / 1e6).toFixed(2)} M | ${(1e9 / r[name]).toFixed(1)} | | | |`);
    }
    summary.push(`${kind}: idgen ${(r.idgen / r['@sapphire/snowflake']).toFixed(2)}x @sapphire/snowflake's deconstruct`);
  }
  console.log('\n' + summary.join('\n'));
  overhead(time);
  m.close();
  fs.rmSync(regDir, { recursive: true, force: true });
}
