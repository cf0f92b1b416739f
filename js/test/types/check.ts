// The declarations (js/index.d.ts) against the way the README uses the
// package: `tsc --noEmit --strict` on this file is ctest js.types.  Each
// line marked as an expected error is a misuse the types must refuse; if a
// declaration grew too loose to refuse it, tsc reports the unused marker and
// the test fails.  js/test/exports.test.mjs checks that every name the
// declarations export is exported by both builds at run time.
import {
  Snowflake, UlidGenerator, Uuid7Generator, ulid, ulidToUuid, uuidToUlid, decode, plan, version, init,
  Decoded, Plan, LeaseInfo, IdgenError, SnowflakeOptions, Sequence, SequenceOptions, SequenceStats,
  Public, PublicOptions,
} from '../../index';

const opts: SnowflakeOptions = { layout: 'twitter', registry: 'static', node: 'datacenter=1,worker=2', clock: 'fast' };
const g = new Snowflake(opts);
const a: bigint = g.next();
const s: string = g.nextString();
const b: BigUint64Array = g.nextBatch(10);
const p1: Promise<bigint> = g.nextAsync();
const p2: Promise<BigUint64Array> = g.nextBatchAsync(10);
const l: LeaseInfo | null = g.lease();
if (l !== null) {
  const w: number = l.worker;
  const node: string = l.node;
}
const closed: Promise<void> = g.close();
async function opened(): Promise<bigint> {
  const h: Snowflake = await Snowflake.open({ registry: 'file:/tmp/ids', maxStartWaitMs: 500 });
  const id = h.next();
  await h.close();
  return id;
}

const u: string = new UlidGenerator().next();
const v: string = new Uuid7Generator().next();
const one: string = ulid();
const uu: string = ulidToUuid(one);
const back: string = uuidToUlid(uu);
const d: Decoded = decode(1862107412345683968n, { layout: 'discord' });
const d2: Decoded = decode('01ARZ3NDEKTSV4RRFFQ69G5FAV');
const d3: Decoded = decode(12345);
const ms: number | undefined = d.unix_ms;
const kind: 'snowflake' | 'ulid' | 'uuid' = d.kind;
const pl: Plan = plan({ layout: 'sonyflake', rate: 1e6, maxBorrowMs: 500 });
const ids: number = pl.idsPerSecond;
const when: number | 'node' | null = pl.reaches2to63;
const ver: string = version;
const loaded: Promise<void> = init();
const loadedFrom: Promise<void> = init('/assets/idgen.wasm');
const loadedBytes: Promise<void> = init(new Uint8Array(8));
try {
  decode('x');
} catch (e) {
  const code: IdgenError['code'] = (e as IdgenError).code;
  // @ts-expect-error: not one of the library's codes
  const bad: IdgenError['code'] = 'ENOPE';
}

// @ts-expect-error: next() is a BigInt, not a number
const n: number = g.next();
// @ts-expect-error: clock is 'fast' or 'precise'
new Snowflake({ clock: 'coarse-ish' });
// @ts-expect-error: nextBatch takes a count
g.nextBatch('10');
// @ts-expect-error: decode takes no object
decode({ id: 1 });
// @ts-expect-error: plan's rate is a number
plan({ rate: '5' });
// @ts-expect-error: open() is a promise, not a generator
Snowflake.open().next();
// @ts-expect-error: open() takes the constructor's options
Snowflake.open({ registry: 1 });
// @ts-expect-error: a ULID generator makes strings
const ub: bigint = new UlidGenerator().next();

const sopts: SequenceOptions = { registry: 'file:/tmp/ids', minStep: 100, strict: false, format: 'INV{seq:04}' };
const q = new Sequence('orders', sopts);
const qn: bigint = q.next();
const qb: BigUint64Array = q.nextBatch(10);
const qt: string = q.nextText();
const qs: SequenceStats = q.stats();
const qi: number = qs.inHand;
const qc: Promise<void> = q.close();
const qo: Promise<Sequence> = Sequence.open('orders', { registry: 'file:/tmp/ids' });
// @ts-expect-error: a sequence's numbers are BigInts
const qx: number = q.next();
// @ts-expect-error: minStep is a number
new Sequence('orders', { minStep: '100' });

export { qn, qb, qt, qi, qc, qo, a, s, b, p1, p2, closed, opened, u, v, back, d2, d3, ms, kind, ids, when, ver };

// Public IDs: a BigInt for Snowflake codecs, strings for ULID and UUIDv7 ones.
const pub = new Public({ keyFile: '/etc/idgen/public.key', layout: 'twitter', prefix: 'user' });
const pubId: bigint = pub.map(123n);
const pubBack: bigint = pub.unmap(pubId);
const pubText: string = pub.format(123n);
const pubParsed: bigint = pub.parse(pubText);
const pubV: { id: bigint; version: number } = pub.parseWithVersion(pubText);
const pubMany: BigUint64Array = pub.mapMany(new BigUint64Array([1n, 2n]));
const pubUlid = new Public({ kind: 'ulid', key: new Uint8Array(32), keyVersion: 2 });
const pubUlidText: string = pubUlid.map('01ARZ3NDEKTSV4RRFFQ69G5FAV');
const pubUlids: string[] = pubUlid.mapMany(['01ARZ3NDEKTSV4RRFFQ69G5FAV']);
// @ts-expect-error a ULID codec's batch is an Array of texts
pubUlid.mapMany(new BigUint64Array(1));
const pubUuid: string = new Public({ kind: 'uuid7' }).parse('order_0abc');
const shaped: boolean = Public.isPublicText('user_0abc', { prefix: 'user', kind: 'snowflake' });
const pubOpts: PublicOptions = { keyFile: 'k', bits: 53 };
// @ts-expect-error a ULID codec maps strings, not BigInts
pubUlid.map(1n);
// @ts-expect-error a Snowflake codec gives a BigInt, not a string
const pubWrong: string = pub.map(1n);
// @ts-expect-error no such kind
new Public({ kind: 'uuid4' });
// @ts-expect-error key bytes are a Uint8Array, never a string
new Public({ key: 'secret' });
