// A file: registry whose file system is frozen (fsfreeze) holds every call
// made to it until it is thawed.  Snowflake.open() and close() wait for it
// on threads of the addon's own, so the event loop keeps turning: a 50 ms
// interval timer fires on time throughout (no gap over MAX_GAP_MS).  The
// library bounds the calls (IDGEN_REGISTRY_CALL_MS, 2 s; an acquisition
// maxStartWaitMs more), so open() rejects with EREGISTRY naming the
// registry, and close() resolves, within that bound (plus slack for a busy
// machine).
//
// The file system is a 32 MB ext4 image of this test's own, loop-mounted in
// its own temporary directory; it is thawed and unmounted in the after hook
// and at exit whatever happened.  A thread stuck in a write on a frozen file
// system cannot be ended, so a process that has one cannot exit until the
// file system is thawed: a guard process, started here, thaws it if this
// process ends without doing so (killed by a time-out) or is still frozen
// after GUARD_S seconds, then unmounts and removes the directory once this
// process is gone.  Needs root and loop devices; skipped, saying why,
// without them.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const require = createRequire(import.meta.url);
const { Snowflake } = require('../index.js');

const MAX_GAP_MS = 500;     // the longest the 50 ms timer may wait on a busy machine
const CALL_MS = 2000;       // IDGEN_REGISTRY_CALL_MS
const START_WAIT_MS = 500;  // the acquisition's maxStartWaitMs here
const SLACK_MS = 5000;      // a busy machine's: threads scheduled late
const GUARD_S = 150;        // longer than this file's tests take, shorter than ctest's time-out

const run = (cmd, args) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const quiet = (cmd, args) => {
  try {
    run(cmd, args);
    return true;
  } catch {
    return false;
  }
};

// The image, its mount and the guard, or {skip: why}.
function setup() {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0)
    return { skip: 'needs root (mount -o loop, fsfreeze): not run' };
  for (const tool of ['mkfs.ext4', 'mount', 'umount', 'fsfreeze'])
    if (!quiet('sh', ['-c', `command -v ${tool}`])) return { skip: `${tool} not found: not run` };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'idgen-js-frozen-'));
  const img = path.join(dir, 'img'), mnt = path.join(dir, 'mnt');
  fs.mkdirSync(mnt);
  try {
    fs.writeFileSync(img, '');
    fs.truncateSync(img, 32 * 1024 * 1024);
    run('mkfs.ext4', ['-q', '-F', img]);
    run('mount', ['-o', 'loop', img, mnt]);
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    return { skip: `cannot loop-mount an ext4 image (no loop devices?): ${String(e.stderr || e.message).trim()}` };
  }
  if (!quiet('fsfreeze', ['-f', mnt]) || !quiet('fsfreeze', ['-u', mnt])) {
    quiet('umount', [mnt]);
    fs.rmSync(dir, { recursive: true, force: true });
    return { skip: 'fsfreeze does not work on the loop-mounted image: not run' };
  }
  const guard = spawn('sh', ['-c', `
    p=$1 mnt=$2 dir=$3 i=0
    while kill -0 "$p" 2>/dev/null && [ $i -lt $((${GUARD_S} * 10)) ]; do sleep 0.1; i=$((i + 1)); done
    fsfreeze -u "$mnt" 2>/dev/null
    while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
    umount "$mnt" 2>/dev/null && rm -rf "$dir"`, 'guard', String(process.pid), mnt, dir],
  { detached: true, stdio: 'ignore' });
  guard.unref();
  return { dir, mnt, guard };
}

const fx = setup();
const skip = fx.skip || false;
let frozen = false;
const thaw = () => {
  if (frozen) quiet('fsfreeze', ['-u', fx.mnt]);
  frozen = false;
};
const freeze = () => {
  run('fsfreeze', ['-f', fx.mnt]);
  frozen = true;
};
// Promises still waiting on the file system when a check gave up: settled
// after the thaw, before the unmount.
const outstanding = [];

let mounted = !skip;
const unmount = () => {
  if (mounted && quiet('umount', [fx.mnt])) mounted = false;
  return !mounted;
};

function cleanup() {
  thaw();
  if (!unmount() && quiet('umount', ['-l', fx.mnt])) mounted = false;
  if (!mounted) fs.rmSync(fx.dir, { recursive: true, force: true });
  if (fx.guard.exitCode === null) fx.guard.kill();
}

if (!skip) {
  process.on('exit', () => {
    if (fs.existsSync(fx.dir)) cleanup();
  });
  after(async () => {
    thaw();
    await Promise.allSettled(outstanding);
    // a call the library gave up on finishes once thawed; the unmount
    // waits for its files to close (polled, with a generous deadline)
    for (const deadline = Date.now() + 20000; Date.now() < deadline;) {
      if (unmount()) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    cleanup();
  });
}

// The event loop's longest wait between the fires of a 50 ms interval
// timer, from start() to stop().
function loopWatch() {
  let last = performance.now(), worst = 0, fired = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    fired++;
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      worst = Math.max(worst, performance.now() - last);
      return { worst: Math.round(worst), fired };
    },
  };
}

// {ok, value|error, ms} once p settles, or null if it has not within ms.
async function within(p, ms) {
  const t0 = performance.now();
  let timer;
  const r = await Promise.race([
    p.then((value) => ({ ok: true, value }), (error) => ({ ok: false, error })),
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(null), ms);
    }),
  ]);
  clearTimeout(timer);
  return r && { ...r, ms: Math.round(performance.now() - t0) };
}

test('open() on a frozen file: registry', { skip }, async (t) => {
  // a registry in use: its directories made before the freeze
  const registry = 'file:' + fx.mnt + '/reg';
  await (await Snowflake.open({ registry, node: 'datacenter=1' })).close();
  // and one whose directory open() must make
  const fresh = 'file:' + fx.mnt + '/fresh';
  const options = { node: 'datacenter=1', maxStartWaitMs: START_WAIT_MS };
  const bound = START_WAIT_MS + CALL_MS;
  let called, r, rFresh, loop;
  freeze();
  try {
    const watch = loopWatch();
    const t0 = performance.now();
    const opening = Snowflake.open({ registry, ...options });
    const openingFresh = Snowflake.open({ registry: fresh, ...options });
    called = performance.now() - t0;
    // both watched from now: the second may settle first
    const settling = [within(opening, bound + SLACK_MS), within(openingFresh, bound + SLACK_MS)];
    [r, rFresh] = await Promise.all(settling);
    loop = watch.stop();
    // still waiting for the file system, or leased: given back once thawed
    for (const [p, got] of [[opening, r], [openingFresh, rFresh]]) {
      if (got === null) outstanding.push(p.then((g) => g.close(), () => {}));
      else if (got.ok) outstanding.push(got.value.close());
    }
  } finally {
    thaw();
  }
  const rejected = (got, dir) => {
    assert.ok(got !== null, `open() had not settled ${bound + SLACK_MS} ms after the call: nothing ` +
                            'bounded the registry\'s calls on the frozen file system');
    assert.ok(!got.ok, `open() leased on a frozen file system? (${got.ms} ms)`);
    assert.equal(got.error.code, 'EREGISTRY', got.error.message);
    assert.ok(got.error.message.includes(fx.mnt + dir), got.error.message);
  };
  await t.test('the event loop keeps turning while it waits', () => {
    assert.ok(called < 100, `open() itself took ${called} ms`);
    assert.ok(loop.worst <= MAX_GAP_MS, `the 50 ms timer waited ${loop.worst} ms (fired ${loop.fired} times)`);
    assert.ok(loop.fired >= 10, `the 50 ms timer fired ${loop.fired} times`);
  });
  await t.test(`it rejects within maxStartWaitMs + ${CALL_MS} ms, naming the registry`, () => {
    rejected(r, '/reg');
  });
  // idgen_registry_open makes the directory (mkdir): bounded too.
  await t.test('a registry directory still to be made: the same', () => {
    rejected(rFresh, '/fresh');
  });
});

// Each call given up holds a thread and a descriptor until the thaw: past
// 16 in the process, new calls are refused at once instead of piling up.
test('calls given up are capped', { skip }, async (t) => {
  const registry = 'file:' + fx.mnt + '/reg3';
  await (await Snowflake.open({ registry, node: 'datacenter=1' })).close();
  const options = { registry, node: 'datacenter=1', maxStartWaitMs: 0 };
  let first, next;
  freeze();
  try {
    const opening = [];
    for (let i = 0; i < 16; i++) opening.push(Snowflake.open(options));
    first = await Promise.all(opening.map((p) => within(p, CALL_MS + SLACK_MS)));
    for (const [i, got] of first.entries()) if (got === null) outstanding.push(opening[i].then((g) => g.close(), () => {}));
    const t0 = performance.now();
    next = await within(Snowflake.open(options), CALL_MS + SLACK_MS);
    next = next && { ...next, ms: Math.round(performance.now() - t0) };
  } finally {
    thaw();
  }
  await t.test('16 given up, each with its error', () => {
    for (const got of first) {
      assert.ok(got !== null && !got.ok, 'an open() on the frozen file system did not give up');
      assert.equal(got.error.code, 'EREGISTRY', got.error.message);
    }
  });
  await t.test('the next is refused at once, saying why', () => {
    assert.ok(next !== null && !next.ok, 'the 17th open() did not settle, or leased');
    assert.ok(next.ms < 1000, `the 17th open() took ${next.ms} ms`);
    assert.match(next.error.message, /16 earlier calls to file: registries have not returned/);
  });
  await t.test('once thawed, the calls given up end and new ones are taken', async () => {
    let g = null, last = null;
    for (const deadline = Date.now() + 30000; g === null && Date.now() < deadline;) {
      try {
        g = await Snowflake.open(options);
      } catch (e) {
        last = e;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    assert.ok(g !== null, `still refused 30 s after the thaw: ${last && last.message}`);
    await g.close();
  });
});

test('close() of a generator whose file system is then frozen', { skip }, async (t) => {
  const registry = 'file:' + fx.mnt + '/reg2';
  const g = await Snowflake.open({ registry, node: 'datacenter=1' });
  assert.equal(g.lease().worker, 0);
  g.next();
  // the final mark, the lease's release: a release is bounded by CALL_MS,
  // and so is each write before it (the keeper's last, the final mark)
  const bound = 3 * CALL_MS;
  let called, stopped, r, loop;
  freeze();
  try {
    const watch = loopWatch();
    const t0 = performance.now();
    const closing = g.close();
    called = performance.now() - t0;
    try {
      g.next();
      stopped = false;
    } catch (e) {
      stopped = e.code === 'EINVAL';
    }
    r = await within(closing, bound + SLACK_MS);
    loop = watch.stop();
    if (r === null) outstanding.push(closing);
  } finally {
    thaw();
  }
  await t.test('it stops issuing at once, and the event loop keeps turning', () => {
    assert.ok(called < 100, `close() itself took ${called} ms`);
    assert.ok(stopped, 'next() after close() threw EINVAL');
    assert.ok(loop.worst <= MAX_GAP_MS, `the 50 ms timer waited ${loop.worst} ms (fired ${loop.fired} times)`);
  });
  await t.test(`it resolves within ${bound} ms`, () => {
    assert.ok(r !== null, `close() had not settled ${bound + SLACK_MS} ms after the call: nothing ` +
                          'bounds the release on a frozen file system');
    assert.ok(r.ok, r.error && r.error.message);
  });
  // thawed: the worker is free again (the release, or the process's lock
  // given up, finished once the file system answered)
  const deadline = Date.now() + 20000;
  let h;
  for (;;) {
    h = await Snowflake.open({ registry, node: 'datacenter=1' });
    if (h.lease().worker === 0 || Date.now() > deadline) break;
    await h.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const worker = h.lease().worker;
  await h.close();
  assert.equal(worker, 0, 'worker 0 free again after the thaw');
});
