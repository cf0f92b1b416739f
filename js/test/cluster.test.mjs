// Eight processes on one file: registry, as eight Node cluster workers or PM2
// processes on one host would be: each leases its own worker value, so no
// two repeat an ID; each one's IDs increase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-cluster-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

test('8 processes x 200,000 IDs on one file: registry: unique, each increasing', async () => {
  const registry = 'file:' + dir + '/reg';
  const N = 200000, P = 8;
  const runs = [], leased = [], children = [];
  for (let p = 0; p < P; p++) {
    const out = path.join(dir, `ids.${p}`);
    const child = fork(path.join(here, '..', 'fixtures', 'make_ids.cjs'),
                       [registry, String(N), out, p % 2 ? 'batch' : 'next']);
    children.push(child);
    leased.push(new Promise((resolve) => child.once('message', (m) => resolve(m.worker))));
    runs.push(new Promise((resolve, reject) => {
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`process ${p} exited ${code}`))));
    }));
  }
  // every process holds its lease before any makes an ID
  const workers = new Set(await Promise.all(leased));
  assert.equal(workers.size, P, `workers leased at once: ${[...workers]}`);
  for (const c of children) c.send('go');
  const done = await Promise.all(runs);
  const all = new BigUint64Array(N * P);
  done.forEach((out, p) => {
    const buf = fs.readFileSync(out);
    const ids = new BigUint64Array(buf.buffer, buf.byteOffset, buf.length / 8);
    assert.equal(ids.length, N);
    for (let i = 1; i < N; i++) if (!(ids[i] > ids[i - 1])) assert.fail(`process ${p}: ID ${i} not above the one before`);
    all.set(ids, p * N);
  });
  all.sort();
  let dups = 0;
  for (let i = 1; i < all.length; i++) if (all[i] === all[i - 1]) dups++;
  assert.equal(dups, 0, `${dups} duplicate IDs among ${all.length}`);
});
