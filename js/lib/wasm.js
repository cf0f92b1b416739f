// The WebAssembly build's API on idgen.wasm (built by js/wasm/CMakeLists.txt),
// for two callers: browser.mjs (browsers, Deno, Bun, bundlers), which loads
// the module in its init(), and index.js, which falls back to it under Node
// where no native addon loads.  The factory makes the classes and functions
// at once; they refuse every call (a clear error) until attach(instance).
//
// A Snowflake generator either leases its node tuple from a daemon
// (`Snowflake.open({registry: 'idgen://HOST:PORT'})`, the daemon started
// with `idgen serve --leases`: docs/SERVE.md "Leases for clients"), or takes
// the node values the caller gives (unchecked, as the command's @ip is:
// every ID it makes is unique only within it unless the caller keeps node
// values apart).  The wall clock is Date.now() (the system's, steps and all:
// the generators are made for a clock that steps), durations are
// performance.now(), the random bytes crypto.getRandomValues(); one thread.
//
// index.js (CommonJS) requires this file; browser.mjs imports it as a
// module, where it has no `module` and leaves the factory on globalThis
// (as lib/layout.js does).
//
// make(shared, host): shared is lib/layout.js's exports; host may hold
//   ensure()      a Promise that loads the module (Snowflake.open waits on it)
//   notReady      the message of a call made before the module is loaded
//   registryNote  added to the refusal of a registry this build cannot use
//   noPagehide    no pagehide listener (Node)
//   quietNodes    no warning per unchecked node value (the caller warned once)
// and it returns the API, `imports` (the module's), attach(instance) and
// version() (null until attached).
(function (root, make) {
  if (typeof module === 'object' && module.exports) module.exports = make;
  else root.__idgenWasm = make;
})(typeof globalThis !== 'undefined' ? globalThis : this, function make(shared, host) {
  'use strict';
  host = host || {};

  let mem; // the module's memory: its buffer changes when it grows
  let exp; // the module's exports
  const enc = new TextEncoder();
  let IN, IN2, OUT, ERR, IN_MAX;
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

  // Sync calls before the module is loaded: a clear error, not a TypeError
  // from deep inside.
  function need() {
    if (exp !== undefined) return;
    const e = new Error(host.notReady ||
                        'idgen: the WebAssembly module is not loaded yet: `await init()` once ' +
                        'before any other call (init(url | Response | bytes) where the bundler ' +
                        'or server puts idgen.wasm elsewhere)');
    e.code = 'EINVAL';
    throw e;
  }

  // Every name in options is one the generator reads (src/common/options.c,
  // the addon's list and message); `_leased` is openLeased's own.
  function checkNames(options) {
    for (const k of Object.keys(options)) {
      if (k === '_leased') continue;
      put(IN, k, 'option name');
      if (!exp.option_known()) {
        exp.option_unknown();
        throw idgenError(-1, cstr(ERR));
      }
    }
  }

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

  // ---- Leases from a daemon (idgen serve --leases) --------------------------
  //
  // Here no thread keeps the lease: the lease below does it from timers, and
  // the generator (sf_lease_start) issues nothing above the mark it was told
  // is recorded (sf_keep).  The rules are the native keeper's
  // (src/core/lease_keeper.c): renew at a third of the TTL; the lease is
  // valid until the last successful renewal's *send* time plus the TTL less a
  // tenth, by performance.now(), checked before each ID, so a page frozen or
  // in a background tab past that issues nothing when it wakes until it holds
  // a new lease; the mark is moved ahead (half a TTL a step) before the IDs
  // reach it; a refusal of the lease (409) ends it for good.

  const LEASE_CODES = { invalid: -1, lease: -11, registry: -12, pool_full: -13, limit: -13,
                        clock: -6, space: -18, auth: -12, off: -12 };
  const live = new Set(); // the leases open, released when the page goes away

  function hex(n) {
    const b = crypto.getRandomValues(new Uint8Array(n));
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  // idgen://[AGENT:TOKEN@]HOST:PORT (idgens:// over HTTPS; http:// and
  // https:// URLs as they are), with an optional ?space=NAME.
  function leaseTarget(registry) {
    const text = String(registry);
    const m = /^(idgens?|https?):\/\//.exec(text);
    if (!m) return null;
    const proto = m[1] === 'idgen' || m[1] === 'http' ? 'http:' : 'https:';
    let u;
    try {
      u = new URL(proto + text.slice(m[1].length + 1));
    } catch (e) {
      throw idgenError(-1, `registry: not a URL: ${e.message}`);
    }
    const shown = `${m[1]}://${u.username ? u.username + ':***@' : ''}${u.host}`;
    if (u.pathname !== '/' && u.pathname !== '')
      throw idgenError(-1, `registry ${shown}: a path is not part of an idgen:// URI`);
    let space = null;
    for (const [k, v] of u.searchParams) {
      if (k !== 'space' || space !== null)
        throw idgenError(-1, `registry ${shown}: unknown parameter "${k}"; known: space`);
      space = v;
    }
    return { url: `${proto}//${u.host}`, token: decodeURIComponent(u.password), space, shown };
  }

  class Lease {
    constructor(target, opts) {
      this.t = target;
      this.ttl = opts.ttl;
      this.busy = false;
      this.lost = null; // why the lease ended, once it has
      this.timer = null;
    }
    async call(path, body, keepalive = false) {
      const headers = { 'Content-Type': 'text/plain' }; // a simple request: no preflight
      if (this.t.token) headers.Authorization = 'Bearer ' + this.t.token;
      const init = { method: 'POST', headers, body: JSON.stringify(body), keepalive };
      if (typeof AbortSignal !== 'undefined' && AbortSignal.timeout)
        init.signal = AbortSignal.timeout(Math.max(1000, Math.floor(this.ttl / 3)));
      let r;
      try {
        r = await fetch(this.t.url + path, init);
      } catch (e) {
        throw idgenError(-12, `registry: ${this.t.shown}: ${e.message}`);
      }
      let j = null;
      try {
        j = await r.json();
      } catch (e) {
        j = null;
      }
      if (!r.ok || j === null || typeof j !== 'object') {
        const word = j && typeof j.error === 'string' ? j.error : 'registry';
        const msg = j && typeof j.message === 'string' ? j.message : `HTTP ${r.status}`;
        const e = idgenError(LEASE_CODES[word] ?? -12, `registry: ${this.t.shown}: ${msg}`);
        e.status = r.status;
        e.retryAfter = Number(r.headers.get('Retry-After')) || 0;
        throw e;
      }
      return j;
    }
    identity() {
      const i = this.info;
      return { space: i.space, layout: i.layout, field: i.field, node: i.node,
               generation: i.generation, holder: this.holder, secret: this.secret };
    }
  }

  // Leases a tuple for `options` and makes a generator on it.
  async function openLeased(cls, options, target) {
    const ttl = options.ttlMs ?? 10000;
    if (!Number.isInteger(ttl) || ttl < 300 || ttl > 3600000)
      throw idgenError(-1, `option ttlMs must be a whole number from 300 to 3600000`);
    const wait = options.maxStartWaitMs ?? 10000;
    if (!Number.isInteger(wait) || wait < 0 || wait > 3600000)
      throw idgenError(-1, `option maxStartWaitMs must be a whole number from 0 to 3600000`);
    const l = new Lease(target, { ttl });
    l.holder = `browser:0:${hex(4)}`;
    l.secret = hex(16);
    // The start may borrow as the generator will (a tuple whose mark is a
    // little ahead starts at once, above it); the rest is waited below.
    const borrow = options.maxBorrowMs ?? exp.max_borrow_ms_default();
    const body = { layout: options.layout ?? 'twitter', holder: l.holder, secret: l.secret,
                   ttl_ms: ttl, max_start_wait_ms: wait, start_borrow_ms: borrow,
                   clock_ms: Date.now() };
    if (options.node) body.node = options.node;
    if (options.leaseField) body.field = options.leaseField;
    const space = options.space ?? target.space;
    if (space) body.space = space;
    // The start wait, as the native client waits: the daemon answers at once
    // (max_start_wait_ms 0) and says when to look again.
    const until = performance.now() + wait;
    let sent;
    for (;;) {
      sent = performance.now();
      try {
        l.info = await l.call('/lease', body);
        break;
      } catch (e) {
        const again = e.retryAfter > 0 ? e.retryAfter * 1000 : 1000;
        if (e.status !== 503 || !['ECLOCK', 'EPOOLFULL'].includes(e.code) ||
            performance.now() + again > until)
          throw e;
        await new Promise((res) => setTimeout(res, again));
        body.clock_ms = Date.now();
      }
    }
    l.deadline = sent + ttl - ttl / 10;
    l.renewAt = sent + ttl / 3;
    l.step = l.info.mark_step_ms || Math.floor(ttl / 2);
    // The daemon lends at once, whatever the tuple's marks: the page starts
    // above them, so it waits here until the clock is within its borrow of
    // them (within maxStartWaitMs), renewing meanwhile.
    const start = Math.max(l.info.mark_ms, l.info.floor_ms || 0) - borrow;
    if (start - Date.now() > until - performance.now()) {
      l.call('/lease/release', l.identity()).catch(() => {});
      throw idgenError(-6, `registry: ${target.shown}: the ${l.info.field} lent ` +
                           `(${l.info.worker}) can start in ${start - Date.now()} ms, above its mark, ` +
                           `more than maxStartWaitMs (${Math.round(until - performance.now())})`);
    }
    while (Date.now() < start) {
      await new Promise((res) => setTimeout(res, Math.min(start - Date.now(), ttl / 3)));
      if (Date.now() < start) await renewOnce(l);
    }
    const g = new cls({ layout: options.layout ?? 'twitter', node: l.info.node,
                        maxWaitMs: options.maxWaitMs, maxBorrowMs: options.maxBorrowMs,
                        randomSequenceStart: options.randomSequenceStart, _leased: true });
    try {
      check(exp.sf_lease_start(g._handle(), BigInt(l.info.mark_ms), BigInt(l.info.floor_ms || 0)));
      l.mark = 0;
      await markAhead(l, g);
    } catch (e) {
      l.call('/lease/release', l.identity()).catch(() => {});
      g._drop();
      throw e;
    }
    g._lease(l);
    return g;
  }

  // Records a mark one step beyond what the generator needs now, then lets
  // it issue up to it.
  async function markAhead(l, g) {
    const want = Number(exp.sf_needed_ms(g._handle())) + l.step;
    const r = await l.call('/lease/mark', { ...l.identity(), mark_ms: want });
    l.mark = r.mark_ms;
    if (performance.now() < l.deadline) setCeiling(l, g, l.mark);
  }

  // The mark the generator may issue up to (0: nothing), unless it is closed
  // or its lease ended meanwhile (the timers' answers come after awaits).
  function setCeiling(l, g, mark) {
    if (g._alive() && (!l.lost || mark === 0)) exp.sf_keep(g._handle(), BigInt(mark));
  }

  function endLease(l, g, why) {
    if (l.lost) return;
    setCeiling(l, g, 0);
    l.lost = why;
  }

  // One renewal: valid for the TTL less a tenth from when it was sent (by
  // performance.now()), unless that has passed by the answer; whether it
  // made the lease valid.  A daemon holding it for less than the lease's TTL
  // (by which validity is counted) is no renewal.
  async function renewOnce(l) {
    const sent = performance.now();
    const r = await l.call('/lease/renew', { ...l.identity(), ttl_ms: l.ttl });
    if (!(r.ttl_ms >= l.ttl))
      throw idgenError(-12, `registry: ${l.t.shown}: renewed for ${r.ttl_ms} ms, less ` +
                            `than the lease's TTL (${l.ttl} ms)`);
    l.renewAt = sent + l.ttl / 3;
    if (sent + l.ttl - l.ttl / 10 <= performance.now()) return false;
    l.deadline = sent + l.ttl - l.ttl / 10;
    return true;
  }

  // One turn of the lease's timer: renew when due, move the mark when less
  // than half a step is left, end the lease at its deadline.
  async function keep(l, g) {
    if (l.busy || l.lost || !g._alive()) return;
    l.busy = true;
    try {
      const now = performance.now();
      if (now >= l.deadline) setCeiling(l, g, 0); // until a renewal shows it valid
      if (now >= l.renewAt) {
        try {
          if (await renewOnce(l) && l.mark) setCeiling(l, g, l.mark);
        } catch (e) {
          if (e.code === 'ELEASE') return endLease(l, g, e.message);
          l.renewAt = performance.now() + Math.min(1000, Math.max(100, l.ttl / 10));
          l.failure = e.message;
          return;
        }
      }
      if (g._alive() && !l.lost && Number(exp.sf_needed_ms(g._handle())) + l.step / 2 > l.mark) {
        try {
          await markAhead(l, g);
        } catch (e) {
          if (e.code === 'ELEASE') return endLease(l, g, e.message);
          l.failure = e.message;
        }
      }
    } finally {
      l.busy = false;
    }
  }

  function releaseOnExit() {
    for (const { l } of live) {
      const body = JSON.stringify(l.identity());
      if (!l.t.token && typeof navigator !== 'undefined' && navigator.sendBeacon)
        navigator.sendBeacon(l.t.url + '/lease/release', body);
      else l.call('/lease/release', l.identity(), true).catch(() => {});
    }
  }
  if (typeof addEventListener === 'function' && typeof window !== 'undefined' && !host.noPagehide)
    addEventListener('pagehide', releaseOnExit);

  // Sequences need a registry's conditional writes (file:, postgres://,
  // etcd://), which this build has not: the class is here so that the
  // exports match the addon's, and its constructor says why.
  class Sequence {
    constructor() {
      const e = new Error('Sequence is not available in the WebAssembly build: sequences are ' +
                          "the native addon's (Node.js with idgen.node loaded; file:, " +
                          'postgres:// or etcd:// registries)' + (host.registryNote || ''));
      e.code = 'EINVAL';
      throw e;
    }
  }

  // Public IDs need the key, and a page (or anything else shipped to a
  // browser) cannot keep one: whoever loads the page has the key, and the
  // public IDs become as readable as the IDs they hide.  So this build has
  // no codec: the class is here so that the exports match the addon's, its
  // constructor says why, and isPublicText() checks a text's shape (no key).
  // A browser keeps and sends public IDs as opaque strings; the server maps
  // them back (js/README.md, "Public IDs").
  class Public {
    constructor() {
      const e = new Error('Public is not available in the WebAssembly build: public IDs are ' +
                          'mapped where the key is kept (a server: the Node.js addon, Python, ' +
                          'the daemon or PostgreSQL); a key sent to a browser is no longer ' +
                          'secret, so a browser keeps public IDs as opaque strings' +
                          (host.registryNote || ''));
      e.code = 'EINVAL';
      throw e;
    }
    static isPublicText(text, options) {
      return shared.isPublicText(text, options);
    }
  }

  class Snowflake {
    #g = 0;
    #slot = 0;
    #token = {};
    constructor(options = {}) {
      need();
      if (options === null || typeof options !== 'object')
        throw typeError('new Snowflake(options): options must be an object');
      checkNames(options);
      // Under Node, the native addon's default is the host's registry
      // (file:/var/lib/idgen), which this build cannot reach: the same code
      // must not quietly mean static node values here.
      if (host.defaultRegistryRefused && (options.registry === undefined || options.registry === null))
        throw idgenError(-1, 'registry not given: the native addon leases from the host\'s registry ' +
                             '(file:/var/lib/idgen) by default, which this build cannot reach; give ' +
                             'registry "idgen://HOST:PORT" (a daemon with --leases) or "static" with ' +
                             'node values kept apart by hand' + (host.registryNote || ''));
      const registry = options.registry ?? 'static';
      const leased = options._leased === true;
      if (!leased && registry !== 'static') {
        if (leaseTarget(registry) !== null)
          throw idgenError(-1, `registry ${leaseTarget(registry).shown}: a lease takes a round trip: ` +
                               'make the generator with `await Snowflake.open({...})`');
        throw idgenError(-1, `registry ${JSON.stringify(String(registry))}: the WebAssembly build ` +
                             'leases from a daemon (idgen://HOST:PORT, idgens://, http(s)://) or ' +
                             'takes "static" (the node values given, unchecked)' +
                             (host.registryNote || ''));
      }
      // The library's words for these (registry.c, idgen_lease_settings_verify
      // and idgen_registry_uri_with_space; tests/settings_table_test.sh holds
      // them equal): this build has no registry library to ask.
      const staticWords = { leaseField: 'a lease field needs a registry other than static',
                            space: 'the static registry keeps no ID spaces' };
      for (const name of ['space', 'leaseField', 'ttlMs', 'maxStartWaitMs'])
        if (!leased && options[name] !== undefined && options[name] !== null)
          throw idgenError(-1, `option ${name}: ` + (staticWords[name] ??
                                                     'leases need a registry (idgen://HOST:PORT)'));
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
      if (!leased && !warned.has(node) && !host.quietNodes) { /* with no node values too: all 0 */
        warned.add(node);
        const what = node.trim() !== '' ? `node values given (${node}) are`
                                         : 'no node values given (every node field 0):';
        console.warn(`warning: ${what} unchecked: another page, worker or process with the same ` +
                     'values makes the same IDs; a registry leases node values and checks them ' +
                     '(Snowflake.open({registry: "idgen://HOST:PORT"}))');
      }
    }
    #lease = null;
    #live() {
      if (this.#g === 0) throw idgenError(-1, 'the generator is closed');
      const l = this.#lease;
      if (l !== null && (l.lost || performance.now() >= l.deadline)) {
        exp.sf_keep(this.#g, 0n);
        throw idgenError(-11, `the lease ${l.info.node} is ${l.lost ? 'lost: ' + l.lost :
                              'not valid: not renewed within its TTL' +
                              (l.failure ? ` (${l.failure})` : '')}`);
      }
      return this.#g;
    }
    // (for openLeased)
    _handle() { return this.#g; }
    _alive() { return this.#g !== 0; }
    _drop() { this.close(); }
    _lease(l) {
      this.#lease = l;
      const turn = () => {
        keep(l, this).finally(() => {
          if (this.#g !== 0 && !l.lost) {
            l.timer = setTimeout(turn, Math.max(20, Math.min(250, l.ttl / 10)));
            // (Node, Deno, Bun: the lease alone does not keep the program running)
            if (typeof l.timer === 'object' && l.timer.unref) l.timer.unref();
          }
        });
      };
      l.timer = setTimeout(turn, 0);
      live.add({ l, g: this });
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
      const l = this.#lease;
      if (l === null) return null;
      const i = l.info;
      return { registry: l.t.shown, space: i.space, pool: i.pool ?? null, field: i.field,
               worker: i.worker, node: i.node, generation: i.generation, markMs: l.mark,
               ttlMs: l.ttl, holder: i.holder, validMs: Math.max(0, Math.round(l.deadline - performance.now())) };
    }
    // As the Node.js build: open() leases (from a daemon, with an
    // idgen:// registry) and close() gives the lease back; without a registry
    // both are done at once and their promises are settled already.
    static open(options) {
      if (exp === undefined && host.ensure)
        return host.ensure().then(() => this.open(options));
      try {
        need();
        if (options !== null && typeof options === 'object') checkNames(options);
        const target = options && options.registry != null ? leaseTarget(options.registry) : null;
        if (target !== null) return openLeased(this, options, target);
        return Promise.resolve(new this(options));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    close() {
      const l = this.#lease;
      if (this.#g !== 0) {
        reclaim.unregister(this.#token);
        exp.sf_free(this.#g);
        exp.dealloc(this.#slot);
        this.#g = 0;
      }
      if (l === null) return Promise.resolve();
      this.#lease = null;
      clearTimeout(l.timer);
      for (const e of live) if (e.l === l) live.delete(e);
      if (l.lost) return Promise.resolve();
      l.lost = 'released';
      return l.call('/lease/release', l.identity()).then(() => undefined);
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
      need();
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
  class UlidGenerator extends Gen128 {
    constructor() {
      need();
      super(exp.ulid_gen_new, exp.ulid_gen_free, exp.ulid_gen_fill, 26);
    }
  }

  /** Monotonic UUIDv7s: strictly increasing within the generator. */
  class Uuid7Generator extends Gen128 {
    constructor() {
      need();
      super(exp.uuid7_gen_new, exp.uuid7_gen_free, exp.uuid7_gen_fill, 36);
    }
  }

  function ulid() {
    need();
    check(exp.ulid());
    return cstr(OUT);
  }

  function ulidToUuid(text) {
    need();
    check(exp.ulid_to_uuid(put(IN, text, 'ulidToUuid(ulid): ulid')));
    return cstr(OUT);
  }

  function uuidToUlid(text) {
    need();
    check(exp.uuid_to_ulid(put(IN, text, 'uuidToUlid(uuid): uuid')));
    return cstr(OUT);
  }

  // decode(id, {layout}) and plan({layout, rate, maxBorrowMs}), as index.js:
  // Snowflake IDs read in JavaScript from the layout's shifts (lib/layout.js),
  // the rest by the module.
  function layoutInfo(layout) {
    need();
    put(IN2, layout, 'layout');
    check(exp.layout_info());
    return JSON.parse(cstr(OUT));
  }
  function slowDecode(text, layout) {
    need();
    const len = put(IN, text, 'decode(id): id');
    put(IN2, layout, 'decode(id, {layout}): layout');
    check(exp.decode_json(len));
    return shared.parseDecoded(cstr(OUT));
  }
  const decode = shared.makeDecode(layoutInfo, slowDecode);
  // decode() where compiling is not allowed (a Content-Security-Policy
  // without 'unsafe-eval'): the tests read every layout both ways
  const _decodeInterpreted = shared.makeDecode(layoutInfo, slowDecode, false);

  function plan(options) {
    need();
    const layout = options && options.layout !== undefined ? options.layout : 'twitter';
    const native = (rate, borrow) => {
      put(IN2, layout, 'layout');
      check(exp.layout_plan(rate, borrow));
      return JSON.parse(cstr(OUT));
    };
    return shared.plan(options, native, exp.max_borrow_ms_default());
  }

  function attach(instance) {
    if (exp !== undefined) return;
    exp = instance.exports;
    mem = exp.memory;
    if (exp._initialize) exp._initialize();
    IN = exp.in1();
    IN2 = exp.in2();
    OUT = exp.out();
    ERR = exp.err();
    IN_MAX = exp.in_max();
  }

  return {
    Snowflake, Sequence, Public, UlidGenerator, Uuid7Generator, ulid, ulidToUuid, uuidToUlid,
    decode, _decodeInterpreted, plan,
    imports: { wasi_snapshot_preview1: wasi },
    attach,
    version: () => (exp === undefined ? null : cstr(exp.version())),
  };
});
