// idgen for browsers, Deno and Bun: the core compiled to WebAssembly
// (idgen.wasm, built by js/wasm/CMakeLists.txt), with the API of index.js
// where it applies.  No registry here: a Snowflake generator takes the node
// values the caller gives (unchecked, as the command's @ip is), and every
// ID it makes is unique only within it unless the caller keeps node values
// apart.  The wall clock is Date.now() (the system's, steps and all: the
// generators are made for a clock that steps), durations are
// performance.now(), the random bytes crypto.getRandomValues(); one thread.

import * as layoutModule from './lib/layout.js';

// (a module where the file is read as CommonJS: Node, Bun; otherwise it left
// its exports on globalThis)
const shared = layoutModule.default || globalThis.__idgenLayout;

const WASM_URLS = [
  new URL('./idgen.wasm', import.meta.url),
  new URL('../build/js/browser/idgen.wasm', import.meta.url),
];

let mem; // the module's memory: its buffer changes when it grows
let exp; // the module's exports
const enc = new TextEncoder();
const dec = new TextDecoder();

const bytes = () => new Uint8Array(mem.buffer);
const view = () => new DataView(mem.buffer);

function nowNs() {
  return BigInt(Date.now()) * 1000000n;
}
function monoNs() {
  return BigInt(Math.round(performance.now() * 1e6));
}

// The WASI calls the C library makes: the clocks, random bytes, sleeping
// (a busy wait: there is no other way to block here, and the core sleeps at
// most its max_wait_ms plus the rest of a tick), and writes (to the console).
const wasi = {
  clock_time_get(id, precision, out) {
    view().setBigUint64(out, id === 0 ? nowNs() : monoNs(), true);
    return 0;
  },
  random_get(buf, len) {
    for (let off = 0; off < len; off += 65536)
      crypto.getRandomValues(new Uint8Array(mem.buffer, buf + off, Math.min(65536, len - off)));
    return 0;
  },
  poll_oneoff(inp, out, nsubs, nevents) {
    const v = view();
    let n = 0;
    for (let i = 0; i < nsubs; i++) {
      const s = inp + 48 * i;
      if (v.getUint8(s + 8) !== 0) continue; // not a clock: no file descriptors here
      const id = v.getUint32(s + 16, true);
      const timeout = v.getBigUint64(s + 24, true);
      const absolute = (v.getUint16(s + 40, true) & 1) !== 0;
      const now = id === 0 ? nowNs : monoNs;
      const until = absolute ? timeout : now() + timeout;
      while (now() < until);
      const e = out + 32 * n++;
      v.setBigUint64(e, v.getBigUint64(s, true), true);
      v.setUint16(e + 8, 0, true);
      v.setUint8(e + 10, 0);
    }
    v.setUint32(nevents, n, true);
    return 0;
  },
  fd_write(fd, iovs, niovs, nwritten) {
    const v = view();
    let text = '', total = 0;
    for (let i = 0; i < niovs; i++) {
      const p = v.getUint32(iovs + 8 * i, true), len = v.getUint32(iovs + 8 * i + 4, true);
      text += dec.decode(bytes().subarray(p, p + len));
      total += len;
    }
    if (text) (fd === 2 ? console.error : console.log)(text.replace(/\n$/, ''));
    v.setUint32(nwritten, total, true);
    return 0;
  },
  fd_close() { return 0; },
  fd_seek() { return 8; }, // EBADF
  sched_yield() { return 0; },
  proc_exit(code) { throw new Error('idgen.wasm exited with ' + code); },
};

async function fetchBytes(url) {
  if (url.protocol === 'file:' && typeof Deno === 'undefined') {
    const fs = await import('node:fs/promises'); // Bun, Node
    return fs.readFile(url);
  }
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: ${r.status} ${r.statusText}`);
  return r.arrayBuffer();
}

async function instantiate() {
  const tried = [];
  for (const url of WASM_URLS) {
    let b;
    try {
      b = await fetchBytes(url);
    } catch (e) {
      tried.push(`${url} (${e.message})`);
      continue;
    }
    const { instance } = await WebAssembly.instantiate(b, { wasi_snapshot_preview1: wasi });
    return instance;
  }
  throw new Error('idgen.wasm not found (tried ' + tried.join(', ') +
                  '): build it with `make build` at the top of the idgen tree');
}

const instance = await instantiate();
exp = instance.exports;
mem = exp.memory;
if (exp._initialize) exp._initialize();

const IN = exp.in1(), IN2 = exp.in2(), OUT = exp.out(), ERR = exp.err(), IN_MAX = exp.in_max();

function cstr(p) {
  const b = bytes();
  let e = p;
  while (b[e] !== 0) e++;
  return dec.decode(b.subarray(p, e));
}

function idgenError(rc, message) {
  const e = new Error(message || cstr(exp.strerror(rc)));
  e.code = cstr(exp.err_name(rc));
  return e;
}
function typeError(message) {
  const e = new TypeError(message);
  e.code = 'EINVAL';
  return e;
}
function check(rc) {
  if (rc < 0) throw idgenError(rc, cstr(ERR));
  return rc;
}

// Writes s into the input buffer at p (NUL-terminated); its length in bytes.
function put(p, s, what) {
  if (typeof s !== 'string') throw typeError(`${what} must be a string`);
  const b = enc.encode(s);
  if (b.length + 1 > IN_MAX)
    throw idgenError(-5, `${what} is ${b.length} bytes long: longer than any ID`);
  const m = bytes();
  m.set(b, p);
  m[p + b.length] = 0;
  return b.length;
}

// o[name], a whole number from lo to hi (the library's bounds, from the
// module), or -1 when absent; the message is the Node.js build's.
function optInt(o, name, lo, hi) {
  const v = o[name];
  if (v === undefined || v === null) return -1;
  if (!Number.isInteger(v) || v < lo || v > hi)
    throw idgenError(-4, `option ${name} must be a whole number from ${lo} to ${hi}`);
  return v;
}

// Frees what the module holds for a generator the program dropped.
const reclaim = new FinalizationRegistry(({ free, ptr, slot }) => {
  free(ptr);
  if (slot) exp.dealloc(slot);
});

const warned = new Set();
const EAGAIN = -16;

export class Snowflake {
  #g = 0;
  #slot = 0;
  #token = {};
  constructor(options = {}) {
    if (options === null || typeof options !== 'object')
      throw typeError('new Snowflake(options): options must be an object');
    const registry = options.registry ?? 'static';
    if (registry !== 'static') {
      throw idgenError(-1, `registry ${JSON.stringify(String(registry))}: the WebAssembly build ` +
                           'has no registry; only "static" (the node values given, unchecked)');
    }
    for (const name of ['space', 'leaseField', 'ttlMs', 'maxStartWaitMs'])
      if (options[name] !== undefined && options[name] !== null)
        throw idgenError(-1, `option ${name}: leases need a registry, which the WebAssembly build has not`);
    // The clock's word, as the library reads it (accepted for the one API;
    // here every clock is Date.now()).
    if (options.clock !== undefined && options.clock !== null) {
      put(IN, options.clock, 'option clock');
      const rc = exp.clock_mode_parse();
      if (rc < 0) throw idgenError(rc, 'option clock: ' + cstr(ERR));
    }
    const layout = options.layout ?? 'twitter';
    const node = options.node ?? '';
    put(IN, layout, 'option layout');
    put(IN2, node, 'option node');
    const wait = optInt(options, 'maxWaitMs', 0, exp.max_wait_ms_max());
    const borrow = optInt(options, 'maxBorrowMs', 0, exp.max_borrow_ms_max());
    const rss = optInt(options, 'randomSequenceStart', 0, 1);
    this.#g = check(exp.sf_new(BigInt(borrow), BigInt(wait), rss < 0 ? 0 : rss));
    this.#slot = exp.alloc(8);
    reclaim.register(this, { free: exp.sf_free, ptr: this.#g, slot: this.#slot }, this.#token);
    if (node.trim() !== '' && !warned.has(node)) {
      warned.add(node);
      console.warn(`warning: node values given (${node}) are unchecked: another page, worker or ` +
                   'process with the same values makes the same IDs; a registry leases node ' +
                   'values and checks them (the Node.js build)');
    }
  }
  #live() {
    if (this.#g === 0) throw idgenError(-1, 'the generator is closed');
    return this.#g;
  }
  next() {
    check(exp.sf_next_n(this.#live(), this.#slot, 1));
    return new BigUint64Array(mem.buffer, this.#slot, 1)[0];
  }
  nextString() {
    return this.next().toString();
  }
  nextBatch(n) {
    if (!Number.isSafeInteger(n) || n < 0)
      throw typeError('nextBatch(n): n must be a non-negative integer');
    const g = this.#live();
    if (n === 0) return new BigUint64Array(0);
    const p = exp.alloc(8 * n);
    if (p === 0) throw idgenError(-2);
    try {
      check(exp.sf_next_n(g, p, n));
      return new BigUint64Array(mem.buffer, p, n).slice();
    } finally {
      exp.dealloc(p);
    }
  }
  // The same IDs as nextBatch and next, for a call that would wait (its
  // tick not come yet, the clock behind within the borrow): the event loop
  // goes on meanwhile, on a timer, and the promise resolves when the IDs are
  // due (or rejects with the library's error at the bound the blocking call
  // has).
  nextBatchAsync(n) {
    return new Promise((resolve, reject) => {
      if (!Number.isSafeInteger(n) || n < 1 || n > 1000000)
        throw idgenError(-4, 'n must be a whole number from 1 to 1000000');
      const w = exp.alloc(exp.wait_size()), p = exp.alloc(8 * n);
      if (w === 0 || p === 0) {
        exp.dealloc(w);
        exp.dealloc(p);
        throw idgenError(-2);
      }
      const step = (call) => {
        let rc;
        try {
          rc = call(this.#live());
        } catch (e) {
          rc = e;
        }
        if (rc === EAGAIN) {
          setTimeout(() => step((g) => exp.sf_resume(g, w, p)), exp.wait_ms(w));
          return;
        }
        if (rc instanceof Error) reject(rc);
        else if (rc < 0) reject(idgenError(rc, cstr(ERR)));
        else resolve(new BigUint64Array(mem.buffer, p, n).slice());
        exp.dealloc(w);
        exp.dealloc(p);
      };
      step((g) => exp.sf_start(g, w, p, n));
    });
  }
  nextAsync() {
    return this.nextBatchAsync(1).then((a) => a[0]);
  }
  lease() {
    this.#live();
    return null;
  }
  // The Node.js build's API: there, open() leases and close() gives the
  // lease back off the event loop; here there is no registry, so both are
  // done at once and their promises are settled already.
  static open(options) {
    try {
      return Promise.resolve(new this(options));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  close() {
    if (this.#g !== 0) {
      reclaim.unregister(this.#token);
      exp.sf_free(this.#g);
      exp.dealloc(this.#slot);
      this.#g = 0;
    }
    return Promise.resolve();
  }
}
// `await using g = await Snowflake.open({...})` where the runtime has it.
if (typeof Symbol.asyncDispose === 'symbol') {
  Snowflake.prototype[Symbol.asyncDispose] = function asyncDispose() {
    return this.close();
  };
}

// The monotonic 128-bit generators.  A call into the module per ID costs
// more than the ID (the WASI clock, the text's decoding), so the module
// makes a few of one millisecond at once (ulid_gen_fill), and next() hands
// them out in order while Date.now() still shows the millisecond read
// before they were made: every ID handed out is the generator's next, in
// order, and none is older than the millisecond it is handed out in.  The
// rest of a batch is dropped when the millisecond ends (never handed out,
// so nothing repeats).  The batch grows while batches run out within their
// millisecond and shrinks while most of one is dropped: one ID a call at a
// low rate, up to 64 at a high one.
const BATCH_MAX = 64;
class Gen128 {
  #g;
  #fill;
  #len;
  #buf = '';
  #pos = 0;
  #n = 0;
  #ms = -1;
  #batch = 1;
  constructor(make, free, fill, len) {
    this.#g = check(make());
    this.#fill = fill;
    this.#len = len;
    reclaim.register(this, { free, ptr: this.#g, slot: 0 });
  }
  next() {
    const now = Date.now();
    if (now === this.#ms) {
      if (this.#pos < this.#n) return this.#buf.slice(this.#pos * this.#len, ++this.#pos * this.#len);
      if (this.#batch < BATCH_MAX) this.#batch *= 2; // used up within its millisecond
    } else if (this.#pos * 2 < this.#n) {
      this.#batch >>= 1; // most of the last one dropped
      if (this.#batch < 1) this.#batch = 1;
    }
    const n = check(this.#fill(this.#g, this.#batch));
    this.#buf = dec.decode(bytes().subarray(OUT, OUT + n * this.#len));
    this.#n = n;
    this.#pos = 1;
    this.#ms = now;
    return this.#buf.slice(0, this.#len);
  }
}

/** Monotonic ULIDs: strictly increasing within the generator. */
export class UlidGenerator extends Gen128 {
  constructor() {
    super(exp.ulid_gen_new, exp.ulid_gen_free, exp.ulid_gen_fill, 26);
  }
}

/** Monotonic UUIDv7s: strictly increasing within the generator. */
export class Uuid7Generator extends Gen128 {
  constructor() {
    super(exp.uuid7_gen_new, exp.uuid7_gen_free, exp.uuid7_gen_fill, 36);
  }
}

export function ulid() {
  check(exp.ulid());
  return cstr(OUT);
}

export function ulidToUuid(text) {
  check(exp.ulid_to_uuid(put(IN, text, 'ulidToUuid(ulid): ulid')));
  return cstr(OUT);
}

export function uuidToUlid(text) {
  check(exp.uuid_to_ulid(put(IN, text, 'uuidToUlid(uuid): uuid')));
  return cstr(OUT);
}

// decode(id, {layout}) and plan({layout, rate, maxBorrowMs}), as index.js:
// Snowflake IDs read in JavaScript from the layout's shifts (lib/layout.js),
// the rest by the module.
function layoutInfo(layout) {
  put(IN2, layout, 'layout');
  check(exp.layout_info());
  return JSON.parse(cstr(OUT));
}
function slowDecode(text, layout) {
  const len = put(IN, text, 'decode(id): id');
  put(IN2, layout, 'decode(id, {layout}): layout');
  check(exp.decode_json(len));
  return shared.parseDecoded(cstr(OUT));
}
export const decode = shared.makeDecode(layoutInfo, slowDecode);
// decode() where compiling is not allowed (a Content-Security-Policy
// without 'unsafe-eval'): the tests read every layout both ways
export const _decodeInterpreted = shared.makeDecode(layoutInfo, slowDecode, false);

export function plan(options) {
  const layout = options && options.layout !== undefined ? options.layout : 'twitter';
  const native = (rate, borrow) => {
    put(IN2, layout, 'layout');
    check(exp.layout_plan(rate, borrow));
    return JSON.parse(cstr(OUT));
  };
  return shared.plan(options, native, exp.max_borrow_ms_default());
}

export const version = cstr(exp.version());

