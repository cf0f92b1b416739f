// Public IDs in Node: idgen's addon (Public) against what users reach for
// today, hashids and sqids from npm, encoding and decoding the same
// 1,000,000 twitter-size IDs in one process (ms per run, the median of
// ROUNDS runs; ns per ID; and each one's ratio to idgen's text form, the
// one comparable to theirs: a short string that goes back to the integer).
//
//   node bench/public_node.mjs PEERS_NODE_MODULES [--quick]
//
// bench/public_node.sh installs the peers into a temporary folder and runs
// this (make bench-public-node).  The addon comes from IDGEN_NODE_ADDON or
// build/js.  Limits of the peers, as a user meets them:
//   - sqids takes non-negative integers up to Number.MAX_SAFE_INTEGER
//     (2^53 - 1) only: a 63-bit ID is given as two numbers, its high and low
//     32 bits, and joined again after decode;
//   - hashids takes a BigInt (and gives BigInts back for values past 2^53).
// None of them is a cipher: hashids' and sqids' authors say so.
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const [peersDir, ...flags] = process.argv.slice(2);
const quick = flags.includes('--quick');
const N = quick ? 100000 : 1000000;
const ROUNDS = quick ? 3 : 5;
const require = createRequire(import.meta.url);
const idgen = require(path.join(here, '..', 'js', 'index.js'));
const peer = async (name) =>
  import(pathToFileURL(require.resolve(name, { paths: [peersDir] })).href);
const cjs = (mod) => (typeof mod.default === 'function' ? mod.default : mod.default?.default ?? mod);

const Hashids = cjs(await peer('hashids'));
const sqidsMod = await peer('sqids');
const Sqids = sqidsMod.default?.default ?? sqidsMod.default ?? sqidsMod.Sqids;

// Twitter-size IDs as one generator issues them: consecutive values from a
// time field at today's time (63 bits, above 2^53).
const TWITTER = 1288834974657n;
const base = (BigInt(Date.now()) - TWITTER) << 22n;
const ids = new Array(N);
const big = new BigUint64Array(N);
for (let i = 0; i < N; i++) {
  ids[i] = base + BigInt(i);
  big[i] = ids[i];
}
const MASK32 = 0xffffffffn;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

// One contender: enc(i) -> its public form of ids[i]; dec(form) -> a BigInt.
// Each round encodes all N, then decodes them all; checked once after.
function measure(name, enc, dec) {
  const encMs = [], decMs = [];
  let out = new Array(N), back = new Array(N);
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) out[i] = enc(i);
    encMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) back[i] = dec(out[i]);
    decMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  for (let i = 0; i < N; i++)
    if (BigInt(back[i]) !== ids[i]) throw new Error(`${name}: ${ids[i]} -> ${out[i]} -> ${back[i]}`);
  return { name, enc: median(encMs), dec: median(decMs), sample: String(out[N - 1]) };
}

// Batches: one call over all N (mapMany / unmapMany).
function measureBatch(name, encAll, decAll) {
  const encMs = [], decMs = [];
  let out, back;
  for (let r = 0; r < ROUNDS; r++) {
    let t0 = process.hrtime.bigint();
    out = encAll();
    encMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
    t0 = process.hrtime.bigint();
    back = decAll(out);
    decMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  for (let i = 0; i < N; i++)
    if (back[i] !== ids[i]) throw new Error(`${name}: ${ids[i]} -> ${out[i]} -> ${back[i]}`);
  return { name, enc: median(encMs), dec: median(decMs), sample: String(out[N - 1]) };
}

const rows = [];
const hashids = new Hashids('a salt of this benchmark', 0);
rows.push(measure('hashids (BigInt)', (i) => hashids.encode(ids[i]), (s) => hashids.decode(s)[0]));
const sqids = new Sqids();
rows.push(measure('sqids ([hi32, lo32]: past 2^53)',
  (i) => sqids.encode([Number(ids[i] >> 32n), Number(ids[i] & MASK32)]),
  (s) => { const [hi, lo] = sqids.decode(s); return (BigInt(hi) << 32n) | BigInt(lo); }));

let idgenNote = '';
if (typeof idgen.Public === 'function' && idgen._addonPath) {
  let pub;
  try {
    pub = new idgen.Public({ key: randomBytes(32), kind: 'snowflake', layout: 'twitter' });
  } catch (e) {
    idgenNote = `idgen: Public not usable here (${e.code || ''} ${e.message})`;
  }
  if (pub) {
    rows.push(measure('idgen Public format/parse (text)', (i) => pub.format(ids[i]), (s) => pub.parse(s)));
    rows.push(measure('idgen Public map/unmap (BigInt)', (i) => pub.map(ids[i]), (p) => pub.unmap(p)));
    rows.push(measureBatch('idgen Public mapMany/unmapMany', () => pub.mapMany(big), (p) => pub.unmapMany(p)));
  }
} else {
  idgenNote = 'idgen: this build\'s Node addon has no Public class (not built yet): its rows are missing';
}

const ref = rows.find((r) => r.name.startsWith('idgen Public format')) || rows[0];
console.log(`# ${N} twitter-size IDs (63 bits), medians of ${ROUNDS} runs, one node process ${process.version}`);
if (idgenNote) console.log(`# ${idgenNote}`);
const refName = ref.name.split(' ')[0];
console.log(`| library | encode ms | ns/ID | decode ms | ns/ID | encode vs ${refName} | decode vs ${refName} | example |`);
console.log('|---|---:|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.enc.toFixed(0)} | ${(r.enc * 1e6 / N).toFixed(0)} | ${r.dec.toFixed(0)} | ` +
    `${(r.dec * 1e6 / N).toFixed(0)} | ${(r.enc / ref.enc).toFixed(2)}x | ${(r.dec / ref.dec).toFixed(2)}x | ` +
    `\`${r.sample}\` |`);
}
