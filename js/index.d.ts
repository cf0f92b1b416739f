// Types of the @idgen/idgen package (js/README.md): both builds, the
// Node-API addon (index.js, index.mjs) and the WebAssembly module for
// browsers, Deno, Bun and bundlers (browser.mjs), which has no file:,
// postgres:// or etcd:// registry: a Snowflake generator there takes the
// node values given (registry "static", its default in browsers; under Node,
// where the addon's default is the host's registry, it must be named) or
// leases them from a daemon (idgen://).
//
// Needs `"target": "es2020"` or later, or `"lib": ["es2020"]` (BigInt,
// BigUint64Array); checked with `tsc --strict --module nodenext`.

/** Thrown by every call that fails: `code` is the library's name for the error. */
export interface IdgenError extends Error {
  code:
    | 'EINVAL' | 'ENOMEM' | 'ELAYOUT' | 'ERANGE' | 'EPARSE' | 'ECLOCK' | 'EEXHAUSTED'
    | 'EFORKED' | 'EOVERFLOW' | 'ERANDOM' | 'ELEASE' | 'EREGISTRY' | 'EPOOLFULL' | 'EMARK'
    | 'EBATCH' | 'EAGAIN' | 'EEMPTY' | 'ESPACE' | 'EKEY';
}

export interface SnowflakeOptions {
  /** A preset ("twitter", "discord", "sonyflake", ...) or a layout spec. Default "twitter". */
  layout?: string;
  /** "file:DIR", "postgres://...", "etcd://...", "idgen://HOST:PORT" (a daemon run with --leases), or "static". Default: the host's registry, file:/var/lib/idgen (WebAssembly: "static" in browsers; the Node fallback takes no default). */
  registry?: string;
  /** The registry's ID space (as the CLI's --space: the URI's ?space=NAME); not with "static". */
  space?: string;
  /** Node values, "datacenter=1,worker=2"; with a leasing registry the leased field is the registry's. */
  node?: string;
  /** The leased field (default "worker", or the layout's only node field). */
  leaseField?: string;
  /** Lease TTL, ms (300 to 3600000). */
  ttlMs?: number;
  /** How long a call may wait for the clock, ms (default 100). */
  maxWaitMs?: number;
  /** How far the generator may run ahead of the clock, ms (default 1000). */
  maxBorrowMs?: number;
  /** How long acquiring a lease may wait for a mark to fall behind the clock, ms. */
  maxStartWaitMs?: number;
  /** 1: start each tick's sequence at a random value in its lower half. */
  randomSequenceStart?: 0 | 1;
  /** "fast" (default: the calibrated TSC), "precise" (clock_gettime on every read) or
   * "coarse" (the kernel's last tick: behind the wall clock by one or two ticks, 4 to 8 ms). */
  clock?: 'fast' | 'precise' | 'coarse';
}

export interface LeaseInfo {
  worker: number;
  node: string;
  pool: string;
  space: string;
  holder: string;
  markMs: number;
  registry: string;
}

export class Snowflake {
  /**
   * A generator whose node tuple is leased from the registry, the lease
   * taken on a thread of its own: the event loop goes on meanwhile, whatever
   * the registry does.  Rejects with the IdgenError the constructor throws.
   * Recommended over the constructor (README: "What may block").
   */
  static open(options?: SnowflakeOptions): Promise<Snowflake>;
  /**
   * Leases on the JavaScript thread: with a leasing registry the event loop
   * may wait for it, up to maxStartWaitMs + 2 s for a file: registry that
   * does not answer.  The static registry (and the WebAssembly build) never
   * waits.  Prefer Snowflake.open().
   */
  constructor(options?: SnowflakeOptions);
  next(): bigint;
  nextString(): string;
  nextBatch(n: number): BigUint64Array;
  nextAsync(): Promise<bigint>;
  nextBatchAsync(n: number): Promise<BigUint64Array>;
  /** What was leased, or null with the static registry. */
  lease(): LeaseInfo | null;
  /**
   * Stops issuing at once (later calls throw EINVAL) and gives the lease back
   * off the event loop; resolves when that is done.  A second call returns
   * the same promise.
   */
  close(): Promise<void>;
}

/** The options of `new Sequence(name, options)` (README: "Sequences"). */
export interface SequenceOptions {
  /** file:DIR, postgres://..., etcd://... (not static); default: the host's registry. */
  registry?: string;
  /** The registry's ID space (the URI's ?space=NAME). */
  space?: string;
  /** Bounds of the adaptive step (defaults 1,000 and 100,000,000; at most 2^39). */
  minStep?: number;
  maxStep?: number;
  /** The first claim's step (default minStep). */
  step?: number;
  /** Claim ahead once this share of a range is used: (0, 1), default 0.25. */
  prefetch?: number;
  /** Ranges kept claimed ahead, 1 to 4 (default 1). */
  ahead?: number;
  /** The step doubles when a range lasts less, halves when over twice (default 60,000). */
  segmentTargetMs?: number;
  /** The holder's entry in the registry (default 10,000). */
  ttlMs?: number;
  /** How long next() waits for a claim when nothing is in hand (default 5,000; 0 or -1: not at all). */
  waitMs?: number;
  /** One holder at a time, strictly increasing across holders. */
  strict?: boolean;
  /** A business-number template ("INV{date:%Y%m%d}{seq:04}"), for nextText(). */
  format?: string;
  /** The template's time zone (an IANA name; default UTC). */
  tz?: string;
}

export interface SequenceStats {
  key: string;
  generation: number;
  step: number;
  inHand: number;
  issued: number;
  claimed: number;
  claims: number;
  givenBack: number;
  claimFailures: number;
  failing: boolean;
  rate: number;
  lastsMs: number;
  claimNsLast: number;
  claimNsMax: number;
  reason: string;
}

/**
 * Dense numbers of a named counter in a registry (the native addon only: the
 * WebAssembly builds throw EINVAL from the constructor).  Numbers are BigInts,
 * as Snowflake IDs are (a sequence goes up to 2^63-1).  `using` and
 * `await using` close it where the runtime has Symbol.dispose.
 */
export class Sequence {
  /**
   * Registers the holder and claims the first range on a thread of the
   * addon's own: the event loop goes on meanwhile.  Rejects with the
   * IdgenError the constructor throws.
   */
  static open(name: string, options?: SequenceOptions): Promise<Sequence>;
  /** The same on the JavaScript thread, which waits for the registry meanwhile. */
  constructor(name: string, options?: SequenceOptions);
  next(): bigint;
  nextBatch(n: number): BigUint64Array;
  /** The business number: the format rendered with the next number of its period's counter. */
  nextText(): string;
  stats(): SequenceStats;
  /** Stops at once; the unissued rest goes back off the event loop; resolves when done. */
  close(): Promise<void>;
}

/** The kinds of ID a Public codec maps. */
export type PublicKind = 'snowflake' | 'ulid' | 'uuid7';
/** An ID (and an integer public form) of a kind: a BigInt for Snowflake IDs,
 * the 26 characters of a ULID, a UUID's text (a UUIDv7; its public form a UUIDv4). */
export type PublicId<K extends PublicKind> = K extends 'snowflake' ? bigint : string;

export interface PublicOptions<K extends PublicKind = PublicKind> {
  /** A key file (lines `vN <64 hex digits>`, mode 0600 or 0400: anything group or others may
   * read is refused).  Default: the file IDGEN_PUBLIC_KEY names. */
  keyFile?: string;
  /** Instead of keyFile: the 32 key bytes, from the caller's own secret store (wiped from the
   * addon's memory once the codec holds its own copy; the Buffer is the caller's to wipe). */
  key?: Uint8Array;
  /** The version of `key` (1 to 32, default 1). */
  keyVersion?: number;
  /** Default "snowflake". */
  kind?: K;
  /** Snowflake: the layout whose bit count the integer form keeps (default "twitter": 63 bits). */
  layout?: string;
  /** Snowflake: the bit count (20 to 64; fewer is refused, too small to hide) instead of a layout. */
  bits?: number;
  /** The text form's type prefix (TypeID's rules: a-z and _, at most 63, starting and ending
   * with a letter); default none.  A text made with one prefix fails (EPARSE) with another. */
  prefix?: string;
  /** The key version the integer forms use (default 0: the newest). */
  version?: number;
}

/**
 * Public IDs: a keyed, reversible form of an ID (FF1 on AES-256) that shows
 * nothing of its time, worker or volume to whoever lacks the key.  Native
 * addon only: the WebAssembly build (browser.mjs) throws EINVAL from the
 * constructor, since a browser cannot keep a key; there, public IDs are
 * opaque strings.  One codec per object (a worker thread makes its own).
 */
export class Public<K extends PublicKind = 'snowflake'> {
  constructor(options?: PublicOptions<K>);
  /** The integer form: a Snowflake ID of N bits to N bits (a BigInt); a ULID to 26
   * characters; a UUIDv7 to a UUIDv4. */
  map(id: PublicId<K> | (K extends 'snowflake' ? number : never)): PublicId<K>;
  /** Back from the integer form, with one key version (no check: a wrong key gives a wrong ID). */
  unmap(pub: PublicId<K> | (K extends 'snowflake' ? number : never)): PublicId<K>;
  /** map() of many IDs at once (several times faster per ID): a BigUint64Array of Snowflake
   * IDs, or an Array of ULID or UUID texts. */
  mapMany(ids: K extends 'snowflake' ? BigUint64Array : readonly string[]): K extends 'snowflake' ? BigUint64Array : string[];
  unmapMany(pubs: K extends 'snowflake' ? BigUint64Array : readonly string[]): K extends 'snowflake' ? BigUint64Array : string[];
  /** The text form, `[prefix_]` + key version + 16 (Snowflake) or 29 characters. */
  format(id: PublicId<K> | (K extends 'snowflake' ? number : never)): string;
  /** Back from the text form: EPARSE for a malformed text, EKEY for a wrong key, an unknown key
   * version, another prefix or an altered text. */
  parse(text: string): PublicId<K>;
  /** parse(), with the key version the text was made with. */
  parseWithVersion(text: string): { id: PublicId<K>; version: number };
  /** Whether `text` has the shape of a text form (no key needed or used: it cannot tell a real
   * public ID from a string of that shape; parse() can). */
  static isPublicText(text: unknown, options?: { prefix?: string; kind?: PublicKind }): boolean;
}

/** Monotonic ULIDs: strictly increasing within the generator. */
export class UlidGenerator {
  next(): string;
}

/** Monotonic UUIDv7s (RFC 9562 Method 1): strictly increasing within the generator. */
export class Uuid7Generator {
  next(): string;
}

/**
 * The object of `idgen decode --json` (JSON.stringify writes exactly the
 * command's text).  For a Snowflake ID, `id` and `time` are getters made
 * when first read; the own properties are kind, layout, unix_ms and fields.
 */
export interface Decoded {
  id: string;
  kind: 'snowflake' | 'ulid' | 'uuid';
  layout?: string;
  unix_ms?: number;
  time?: string;
  fields?: Record<string, number>;
  uuid?: string;
  version?: number;
  variant?: string;
}

export function ulid(): string;
export function ulidToUuid(ulid: string): string;
export function uuidToUlid(uuid: string): string;
export function decode(id: bigint | number | string, options?: { layout?: string }): Decoded;

/** What `idgen plan` shows of a layout, as numbers. */
export interface Plan {
  /** the preset's name, or null for a layout spec */
  layout: string | null;
  spec: string;
  totalBits: number;
  fields: { name: string; bits: number; shift: number; kind: 'time' | 'node' | 'sequence' }[];
  epochMs: number;
  tickMs: number;
  lifetimeMs: number;
  lifetimeYears: number;
  /** the first Unix millisecond the time field cannot hold */
  exhaustsAtMs: number;
  exhausted: boolean;
  /** every ID is below 2^53 (exact as a JavaScript number) */
  below2to53: boolean;
  /** when IDs reach 2^63 (negative in signed 64-bit columns): a Unix
   * millisecond, 'node' when a node field's top bit puts them there, null
   * if never */
  reaches2to63: number | 'node' | null;
  idsPerTick: number;
  idsPerSecond: number;
  nodes: number;
  nodeFields: { name: string; max: number }[];
  clusterIdsPerSecond: number;
  /** with options.rate: how one generator copes with it (burstMs: how long
   * borrowing absorbs it, Infinity when sustained) */
  rate?: { idsPerSecond: number; ratio: number; sustained: boolean; burstMs: number; nodesNeeded: number };
}
export function plan(options?: { layout?: string; rate?: number; maxBorrowMs?: number }): Plan;
/** The library's version (browser.mjs: null until init() has resolved). */
export const version: string;

/** Where browser.mjs finds idgen.wasm: a URL (or its text), a fetch() Response
 * (or its promise), the bytes, or a compiled WebAssembly.Module. */
export type WasmSource =
  | string
  | { readonly href: string }
  | ArrayBuffer
  | ArrayBufferView
  | { arrayBuffer(): Promise<ArrayBuffer> }
  | PromiseLike<{ arrayBuffer(): Promise<ArrayBuffer> }>
  | object;
/** browser.mjs: loads idgen.wasm (default: new URL('./idgen.wasm',
 * import.meta.url)); await it once before any other call (Snowflake.open()
 * awaits it itself).  Under Node (index.js) the module is ready at once and
 * this resolves at once. */
export function init(source?: WasmSource): Promise<void>;
