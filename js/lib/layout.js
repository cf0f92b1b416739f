// What both builds do in JavaScript from what their native side gives (the
// JSON of layout_info_json, decode_json and layout_plan_json in
// src/common/decode.c): decode() of Snowflake IDs by their fields' shifts,
// without a call into the native code per ID, the native decode's text made
// an object, and the names of the layout planner's numbers (`idgen plan`).
//
// index.js (CommonJS) requires this file; browser.mjs imports it as a
// module, where it has no `module` and leaves its exports on globalThis.
(function (root, make) {
  if (typeof module === 'object' && module.exports) module.exports = make();
  else root.__idgenLayout = make();
})(typeof globalThis !== 'undefined' ? globalThis : this, function make() {
  'use strict';

  const U64_MAX = (1n << 64n) - 1n;
  const TWO32 = 4294967296;
  const ISO_MAX_MS = 253402300799999; // 9999-12-31T23:59:59.999Z: past it, C and JS write years apart
  // A BigInt's two 32-bit halves without a BigInt operation: through memory.
  const b64 = new BigUint64Array(1);
  const u32 = new Uint32Array(b64.buffer);
  b64[0] = 1n;
  const LO = u32[0] === 1 ? 0 : 1, HI = 1 - LO;

  // How a field is read from the halves (hi, lo) of an ID: bits [shift,
  // shift+bits) as a Number, for any field of at most 53 bits.  The same
  // reading two ways: as JavaScript source (compiled once per layout, the
  // fast way), and as a closure where compiling is not allowed (a page
  // whose Content-Security-Policy forbids eval).
  function fieldParts(shift, bits) {
    const top = shift + bits; // one past the field's top bit
    const mask = (n) => (n === 32 ? null : 2 ** n - 1); // null: the whole half
    if (top <= 32) return { half: 'lo', s: shift, mask: mask(bits) };
    if (shift >= 32) return { half: 'hi', s: shift - 32, mask: mask(bits) };
    return { half: 'both', s: shift, hiMask: mask(top - 32), scale: 2 ** (32 - shift) };
  }
  function fieldSource(p) {
    if (p.half !== 'both') {
      const v = p.s ? `(${p.half} >>> ${p.s})` : p.half;
      return p.mask === null ? v : `(${v} & ${p.mask})`;
    }
    const h = p.hiMask === null ? 'hi' : `(hi & ${p.hiMask})`;
    return `(${h} * ${p.scale} + ${p.s ? `(lo >>> ${p.s})` : 'lo'})`;
  }
  function fieldClosure(p) {
    const { s, mask, hiMask, scale } = p;
    if (p.half === 'lo') return mask === null ? (hi, lo) => lo >>> s : (hi, lo) => (lo >>> s) & mask;
    if (p.half === 'hi') return mask === null ? (hi) => hi >>> s : (hi) => (hi >>> s) & mask;
    return hiMask === null ? (hi, lo) => hi * scale + (lo >>> s) : (hi, lo) => (hi & hiMask) * scale + (lo >>> s);
  }

  // The result of decode() for a Snowflake ID: the object of
  // `idgen decode --json`, as JSON.stringify writes it.  `id` (the decimal
  // text) and `time` (ISO 8601) are getters, made when first read: most
  // callers want a field or unix_ms, and the two strings cost ten and forty
  // times the rest of the decode.  The own, enumerable properties are kind,
  // layout, unix_ms and fields.
  const INSPECT = Symbol.for('nodejs.util.inspect.custom');
  class Decoded {
    #id;
    #time;
    constructor(id, layout, unixMs, fields) {
      this.#id = id;
      this.kind = 'snowflake';
      this.layout = layout;
      this.unix_ms = unixMs;
      this.fields = fields;
    }
    get id() {
      return typeof this.#id === 'string' ? this.#id : (this.#id = String(this.#id));
    }
    get time() {
      return this.#time === undefined ? (this.#time = new Date(this.unix_ms).toISOString()) : this.#time;
    }
    toJSON() { // the command's keys in its order
      return { id: this.id, kind: 'snowflake', layout: this.layout, unix_ms: this.unix_ms,
               time: this.time, fields: this.fields };
    }
    [INSPECT]() {
      return this.toJSON();
    }
  }

  // A decoder of one layout: (id) => Decoded, or null when this path does
  // not apply (an ID outside the layout's bits, a field over 53 bits, a
  // time past year 9999): the caller then asks the native code, which
  // gives the command's answer or its message.  compile false: never
  // compile (the tests read every layout both ways).
  function makeDecoder(info, compile) {
    if (info.fields.some((f) => f.bits > 53)) return () => null;
    const name = info.layout || info.spec;
    const total = info.total_bits;
    // the halves of every ID below 2^total: hi < hiLimit, lo < loLimit
    const hiLimit = total >= 64 ? TWO32 : total > 32 ? 2 ** (total - 32) : 1;
    const loLimit = total >= 32 ? TWO32 : 2 ** total;
    const nodes = info.fields.filter((f) => f.kind !== 'time');
    const tf = info.fields.find((f) => f.kind === 'time'), time = fieldParts(tf.shift, tf.bits);
    let fromHalves = null;
    if (compile) {
      // field names are [a-z][a-z0-9_]* (the layout parser's rule): plain keys
      const src = `return function fromHalves(id, hi, lo) {
        if (hi >= ${hiLimit} || lo >= ${loLimit}) return null;
        const unixMs = ${info.epoch_ms} + ${fieldSource(time)} * ${info.tick_ms};
        if (!(unixMs <= ${ISO_MAX_MS})) return null;
        return new Decoded(id, name, unixMs, {${nodes.map((f) => `${f.name}: ${fieldSource(fieldParts(f.shift, f.bits))}`).join(', ')}});
      };`;
      try {
        fromHalves = new Function('Decoded', 'name', src)(Decoded, name);
      } catch (e) { // compiling is not allowed here: read by closures
      }
    }
    if (fromHalves === null) {
      const readers = nodes.map((f) => fieldClosure(fieldParts(f.shift, f.bits)));
      const names = nodes.map((f) => f.name), readTime = fieldClosure(time);
      const epoch = info.epoch_ms, tick = info.tick_ms, n = readers.length;
      fromHalves = function (id, hi, lo) {
        if (hi >= hiLimit || lo >= loLimit) return null;
        const unixMs = epoch + readTime(hi, lo) * tick;
        if (!(unixMs <= ISO_MAX_MS)) return null;
        const fields = {};
        for (let i = 0; i < n; i++) fields[names[i]] = readers[i](hi, lo);
        return new Decoded(id, name, unixMs, fields);
      };
    }
    return function decode(id) {
      if (typeof id === 'bigint') {
        if (id < 0n || id > U64_MAX) return null;
        b64[0] = id;
        return fromHalves(id, u32[HI], u32[LO]);
      }
      // a safe integer (the caller checked)
      if (typeof id === 'number') return fromHalves(id, Math.floor(id / TWO32), id % TWO32);
      // decimal text: read into the halves four digits at a time (exact:
      // lo * 10^4 + 9999 and hi stay below 2^53); anything else is the
      // library's to read
      const len = id.length;
      if (len === 0 || len > 20) return null;
      let hi = 0, lo = 0;
      for (let i = 0; i < len;) {
        let chunk = 0, scale = 1;
        for (const end = Math.min(i + 4, len); i < end; i++) {
          const c = id.charCodeAt(i) - 48;
          if (c < 0 || c > 9) return null;
          chunk = chunk * 10 + c;
          scale *= 10;
        }
        lo = lo * scale + chunk;
        const carry = Math.floor(lo / TWO32);
        lo -= carry * TWO32;
        hi = hi * scale + carry;
      }
      if (hi >= TWO32) return null; // past 2^64
      // the text as given, unless it has leading zeros (the command's is canonical)
      return fromHalves(len > 1 && id[0] === '0' ? BigInt(id) : id, hi, lo);
    };
  }

  // decode(id, options) for both builds: info(layout) gives the layout's
  // geometry (parsed JSON, or the command's message thrown), slow(text,
  // layout) the native decode of any ID's text.
  function makeDecode(info, slow, compile = true) {
    const decoders = new Map();
    let lastLayout = 'twitter', last = null; // the layout asked for last, and its decoder
    return function decode(id, options) {
      const layout = options && options.layout !== undefined ? options.layout : 'twitter';
      if (typeof id === 'number') {
        if (!Number.isSafeInteger(id) || id < 0) {
          const e = new RangeError(`decode(${id}): a Number is exact only up to 2^53; pass a BigInt or a string`);
          e.code = 'ERANGE';
          throw e;
        }
      } else if (typeof id !== 'bigint' && typeof id !== 'string') {
        return slow(String(id), layout); // the command's message
      }
      let d = layout === lastLayout ? last : decoders.get(layout);
      if (d === null || d === undefined) {
        if (typeof layout !== 'string') return slow(String(id), layout);
        d = decoders.get(layout);
        if (d === undefined) {
          d = makeDecoder(info(layout), compile);
          if (decoders.size > 64) decoders.clear(); // bounded: a layout per call would grow it
          decoders.set(layout, d);
        }
      }
      lastLayout = layout;
      last = d;
      const r = d(id);
      return r !== null ? r : slow(String(id), layout);
    };
  }

  // The object of `idgen decode --json` from its text (the native side's
  // decode_json): JSON.parse, except that a field past 2^53 comes back a
  // BigInt, read from the text (a Number would round it).  Field names are
  // [a-z][a-z0-9_]* and "fields" is the last key, so a field's value is
  // found by its name after it.
  function parseDecoded(text) {
    const d = JSON.parse(text);
    if (d.kind === 'snowflake') {
      const at = text.indexOf('"fields":{');
      for (const k of Object.keys(d.fields))
        if (!Number.isSafeInteger(d.fields[k]))
          d.fields[k] = BigInt(new RegExp(`[{,]"${k}":(\\d+)`).exec(text.slice(at + 9))[1]);
    }
    return d;
  }

  // plan(options, native, maxBorrowDefault) → what `idgen plan` shows, as
  // numbers: the layout's bits, lifetime, the date its time field runs out,
  // IDs per second per node and per cluster, and with `rate`, how one
  // generator copes with that rate.  The numbers are the library's
  // (idgen_layout_plan): native(rate, maxBorrowMs) gives them as parsed
  // JSON (layout_plan_json), or throws the command's message; this names
  // them.  (Milliseconds past 2^53 are approximate; no layout's dates need
  // more.)
  function plan(options, native, maxBorrowDefault) {
    const o = options || {};
    const rate = o.rate === undefined ? 0 : o.rate;
    const borrow = o.maxBorrowMs === undefined ? maxBorrowDefault : o.maxBorrowMs;
    for (const [k, v] of [['rate', rate], ['maxBorrowMs', borrow]])
      if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
        const e = new RangeError(`plan: option ${k} must be a number >= 0 (got ${String(v)})`);
        e.code = 'EINVAL';
        throw e;
      }
    const n = native(rate, borrow), info = n.info;
    const p = {
      layout: info.layout || null,
      spec: info.spec,
      totalBits: info.total_bits,
      fields: info.fields.map((f) => ({ name: f.name, bits: f.bits, shift: f.shift, kind: f.kind })),
      epochMs: info.epoch_ms,
      tickMs: info.tick_ms,
      lifetimeMs: n.lifetime_ms,
      lifetimeYears: n.lifetime_years,
      exhaustsAtMs: n.horizon_ms,
      exhausted: n.exhausted,
      below2to53: info.total_bits <= 53,
      // when IDs reach 2^63 (signed 64-bit columns store them as negative):
      // null if never, 'node' if a node field's top bit puts them there
      reaches2to63: info.sign_bit === 'never' ? null : info.sign_bit === 'node' ? 'node' : info.sign_bit_ms,
      idsPerTick: n.ids_per_tick,
      idsPerSecond: n.ids_per_s,
      nodes: n.nodes,
      nodeFields: n.node_fields,
      clusterIdsPerSecond: n.cluster_ids_per_s,
    };
    const r = n.rate;
    if (r !== null)
      p.rate = { idsPerSecond: r.ids_per_s, ratio: r.ratio, sustained: r.sustained,
                 burstMs: r.burst_ms ?? Infinity, nodesNeeded: r.nodes_needed };
    return p;
  }

  // Public.isPublicText(text, {prefix, kind}): whether text has the shape
  // of a public ID's text form ([prefix_]V BODY: V a key version, BODY 16
  // characters for a Snowflake ID, 29 for a ULID or UUIDv7, all in TypeID's
  // lower-case alphabet).  No key is needed or used: it cannot tell a
  // public ID from a string of the same shape (only parse(), with the key,
  // can), so it is for rejecting typos early, never for trusting a value.
  const PUBLIC_ALPHABET = /^[0-9a-hjkmnp-tv-z]+$/;
  const PUBLIC_PREFIX = /^(?:[a-z](?:[a-z_]{0,61}[a-z])?)?$/;
  function isPublicText(text, options) {
    const prefix = options && options.prefix !== undefined ? options.prefix : '';
    const kind = options && options.kind !== undefined ? options.kind : 'snowflake';
    const len = kind === 'snowflake' ? 17 : kind === 'ulid' || kind === 'uuid7' ? 30 : -1;
    if (len < 0 || typeof prefix !== 'string' || !PUBLIC_PREFIX.test(prefix)) {
      const e = new Error('isPublicText(text, {prefix, kind}): kind must be "snowflake", "ulid" ' +
                          'or "uuid7", and prefix a-z and _ (at most 63, starting and ending ' +
                          'with a letter) or ""');
      e.code = 'EINVAL';
      throw e;
    }
    if (typeof text !== 'string') return false;
    const head = prefix === '' ? '' : `${prefix}_`;
    if (!text.startsWith(head) || text.length !== head.length + len) return false;
    return PUBLIC_ALPHABET.test(text.slice(head.length));
  }

  return { makeDecode, parseDecoded, plan, Decoded, isPublicText };
});
