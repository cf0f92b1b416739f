// What happens to a lease: given back when its object is collected; lost
// (its lock file removed behind its back) as an exception, never as a
// repeated ID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { setImmediate as tick } from 'node:timers/promises';

const require = createRequire(import.meta.url);
const idgen = require('../index.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-lease-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');

// The tuples' lock files under a registry directory (Node 18 has no
// recursive readdir).
const lockFiles = (root) => fs.readdirSync(root, { withFileTypes: true }).flatMap((e) => {
  const p = path.join(root, e.name);
  if (e.isDirectory()) return lockFiles(p);
  return /^[0-9a-f]{16}\.lock$/.test(e.name) ? [p] : [];
});

test('a generator that is collected gives its worker back', async () => {
  const registry = 'file:' + dir + '/gc';
  (() => {
    const g = new idgen.Snowflake({ registry, node: 'datacenter=4' });
    assert.equal(g.lease().worker, 0);
    g.next();
  })();
  let worker = -1;
  for (let i = 0; i < 50 && worker !== 0; i++) {
    gc();
    await tick();
    const probe = new idgen.Snowflake({ registry, node: 'datacenter=4' });
    worker = probe.lease().worker;
    await probe.close();
  }
  assert.equal(worker, 0, 'worker 0 is free again once the first generator was collected');
});

test('a lock file removed: ELEASE, and its successor repeats nothing', async () => {
  const root = dir + '/lost';
  const registry = 'file:' + root;
  const g = new idgen.Snowflake({ registry, node: 'datacenter=5', ttlMs: 300 });
  const before = [];
  before.push(g.next());
  const locks = lockFiles(root);
  assert.equal(locks.length, 1, `one lock file: ${locks}`);
  fs.rmSync(locks[0]);
  // renewed every 100 ms: the removal shows within a few renewals
  let err = null;
  const deadline = Date.now() + 10000;
  while (!err && Date.now() < deadline) {
    try {
      before.push(g.next());
    } catch (e) {
      err = e;
    }
    if (before.length % 1000 === 0) await tick();
  }
  assert.ok(err, 'the generator stopped');
  assert.equal(err.code, 'ELEASE', err.message);
  const h = new idgen.Snowflake({ registry, node: 'datacenter=5' });
  assert.equal(h.lease().worker, 0, 'the successor takes the same worker');
  const seen = new Set(before);
  for (let i = 0; i < 100000; i++) {
    const id = h.next();
    if (seen.has(id)) assert.fail(`the successor repeated ${id}`);
  }
  await Promise.all([h.close(), g.close()]);
});
