// nextAsync under a clock stepped back (libfaketime in a child process): the
// call waits for the clock to come back to the last ID's time, as next()
// would, but the event loop keeps turning meanwhile, and the ID is above the
// ones before the step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const FAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1';

test('nextAsync waits out a 1 s step back without blocking the event loop', { skip: !fs.existsSync(FAKETIME) && 'libfaketime is not installed' }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-async-'));
  const file = path.join(dir, 'faketime');
  fs.writeFileSync(file, '+0s\n');
  const child = spawn(process.execPath, [path.join(here, '..', 'fixtures', 'async_step.cjs')], {
    env: { ...process.env, LD_PRELOAD: FAKETIME, FAKETIME_TIMESTAMP_FILE: file, FAKETIME_NO_CACHE: '1',
           FAKETIME_DONT_FAKE_MONOTONIC: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const result = new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.startsWith('ready\n') && !out.includes('{')) fs.writeFileSync(file, '-1s\n');
    });
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}: ${out}`))));
  });
  const text = await result;
  fs.rmSync(dir, { recursive: true, force: true });
  const r = JSON.parse(text.split('\n').find((l) => l.startsWith('{')));
  t.diagnostic(`waited ${r.waited.toFixed(0)} ms; the event loop turned ${r.turns} times meanwhile`);
  assert.equal(r.err, undefined, r.err);
  assert.ok(BigInt(r.id) > BigInt(r.before), `${r.id} after ${r.before}`);
  assert.ok(r.waited >= 400 && r.waited <= 4000, `waited ${r.waited} ms for the clock to come back`);
  assert.ok(r.turns >= r.waited / 10 / 4, `the event loop turned ${r.turns} times in ${r.waited} ms`);
});
