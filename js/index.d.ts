// Types of the idgen package (js/README.md): both builds, the Node-API addon
// (index.js) and the WebAssembly module for browsers, Deno and Bun
// (browser.mjs), which has no registry: a Snowflake generator there takes
// the node values given (registry "static" only, its default), and lease()
// is null.

/** Thrown by every call that fails: `code` is the library's name for the error. */
export interface IdgenError extends Error {
  code:
    | 'EINVAL' | 'ENOMEM' | 'ELAYOUT' | 'ERANGE' | 'EPARSE' | 'ECLOCK' | 'EEXHAUSTED'
    | 'EFORKED' | 'EOVERFLOW' | 'ERANDOM' | 'ELEASE' | 'EREGISTRY' | 'EPOOLFULL' | 'EMARK'
    | 'EBATCH' | 'EAGAIN' | 'EEMPTY' | 'ESPACE';
}

export interface SnowflakeOptions {
  /** A preset ("twitter", "discord", "sonyflake", ...) or a layout spec. Default "twitter". */
  layout?: string;
  /** "file:DIR", "postgres://...", "etcd://...", or "static". Default: the CLI's default file: directory (WebAssembly: "static" only). */
  registry?: string;
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
  /** "fast" (default: the calibrated TSC) or "precise" (clock_gettime on every read). */
  clock?: 'fast' | 'precise';
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
  constructor(options?: SnowflakeOptions);
  next(): bigint;
  nextString(): string;
  nextBatch(n: number): BigUint64Array;
  nextAsync(): Promise<bigint>;
  nextBatchAsync(n: number): Promise<BigUint64Array>;
  /** What was leased, or null with the static registry. */
  lease(): LeaseInfo | null;
  /** Gives the lease back; later calls throw EINVAL. */
  close(): void;
}

/** Monotonic ULIDs: strictly increasing within the generator. */
export class UlidGenerator {
  next(): string;
}

/** Monotonic UUIDv7s (RFC 9562 Method 1): strictly increasing within the generator. */
export class Uuid7Generator {
  next(): string;
}

/** The object of `idgen decode --json`. */
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
export const version: string;
