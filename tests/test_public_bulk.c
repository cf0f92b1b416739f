/*
 * test_public_bulk.c -- public IDs in bulk: round trips over 10 million IDs
 * of each kind (ULID, UUIDv7, and Snowflake layouts of every total bit count
 * from 41 to 64), and statistical checks that the public form shows nothing
 * of the order of the IDs it came from.
 *
 * Round trips.  The IDs come from the real generators: ULID and UUIDv7 from
 * idgen_ulid_gen / idgen_uuid7_gen on the system clock; Snowflake IDs from
 * idgen_snowflake_gen_next_n on a test clock moved by hand (one tick per
 * 4096 IDs, so 10 million IDs need no 2.4 s of real time per layout), with
 * the time field's top bit set so that the IDs reach the top of their bit
 * length.  Each batch is mapped, the public IDs are sorted and scanned for a
 * repeat, each is checked to be below 2^bits (a UUIDv4 for a UUIDv7), and
 * unmapped back to the same ID.  The text forms go round on 1 million IDs;
 * parse(format(x)) == x for every x already proves the texts distinct.
 *
 * Sizes: 10 million IDs per kind in the plain build, divided by
 * $IDGEN_TEST_SCALE (10 under `make sanitize`), and by 10 more under ASan or
 * TSan (TU_UNDER_SANITIZER), whose instrumented code is several times slower.
 * The statistics always use 1 million IDs: their bounds are sized for it.
 *
 * Statistics (1 million consecutive IDs of one generator):
 *   - Spearman's rank correlation between the IDs and their public IDs is
 *     within +-0.01.  For a random permutation its standard deviation is
 *     1/sqrt(n - 1) = 0.001: the bound is 10 of them.
 *   - each output bit is 1 in 50% +- 0.5% of the public IDs.  A count of
 *     ones is binomial(n, 1/2): sd sqrt(n)/2 = 500 of 10^6, 0.05%: the bound
 *     is 10 sd for each bit.
 *   - avalanche: flipping input bit i of m IDs flips on average N/2 +- 1 of
 *     the N output bits, for each i.  Two distinct inputs of a random
 *     permutation give nearly independent uniform outputs, so the flips of
 *     one pair are about binomial(N, 1/2), sd sqrt(N)/2 (3.97 for N = 63,
 *     5.52 for N = 122); the mean of m = 4096 pairs has sd sqrt(N)/(2*64):
 *     0.062 and 0.086, so the bound of 1 is 16 and 11 sd.
 * Each statistic is also run on the unpermuted IDs (an identity "codec")
 * and must report failure there, so none of them passes by construction.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include "testutil.h"

typedef unsigned __int128 u128;

#define BULK_N 10000000u
#define TEXT_N 1000000u
#define STAT_N 1000000u
#define AVAL_M 4096u
#define CHUNK 4096u /* IDs per generator call and per tick of the test clock */

static size_t bulk_count(size_t n) {
  n = tu_scaled(n);
#ifdef TU_UNDER_SANITIZER
  n /= 10;
#endif
  return n < 1000 ? 1000 : n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  assert_non_null(p);
  return p;
}

/* ---- keys and codecs ---- */

/* Two key versions of fixed bytes (reproducible runs); the newest is 2. */
static idgen_public_keys_t *test_keys(void) {
  unsigned versions[2] = {1, 2};
  uint8_t keys[2][IDGEN_PUBLIC_KEY_BYTES];
  for (size_t i = 0; i < IDGEN_PUBLIC_KEY_BYTES; i++) {
    keys[0][i] = (uint8_t)(i * 7 + 3);
    keys[1][i] = (uint8_t)(i * 13 + 101);
  }
  idgen_public_keys_t *k = NULL;
  char err[256] = "";
  if (idgen_public_keys_new(&k, versions, (const uint8_t(*)[IDGEN_PUBLIC_KEY_BYTES])keys, 2, err,
                            sizeof err) != 0)
    fail_msg("idgen_public_keys_new: %s", err);
  return k;
}

static idgen_public_t *codec(idgen_public_kind_t kind, unsigned bits, const char *prefix) {
  idgen_public_keys_t *k = test_keys();
  idgen_public_settings_t s = {kind, bits, prefix, 0};
  idgen_public_t *p = NULL;
  char err[256] = "";
  if (idgen_public_new(&p, k, &s, err, sizeof err) != 0)
    fail_msg("idgen_public_new: %s", err);
  idgen_public_keys_free(k);
  return p;
}

/* ---- sorting (LSD radix, 16 bits a pass) ---- */

static void radix64(uint64_t *a, uint64_t *tmp, size_t n) {
  size_t *count = xmalloc(65536 * sizeof *count);
  for (unsigned shift = 0; shift < 64; shift += 16) {
    memset(count, 0, 65536 * sizeof *count);
    for (size_t i = 0; i < n; i++)
      count[(a[i] >> shift) & 0xffff]++;
    size_t sum = 0;
    for (size_t d = 0; d < 65536; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      tmp[count[(a[i] >> shift) & 0xffff]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
  free(count);
}

/* Sorted values repeat? */
static int has_repeat64(const uint64_t *a, size_t n) {
  for (size_t i = 1; i < n; i++)
    if (a[i] == a[i - 1])
      return 1;
  return 0;
}

static int cmp_u128(const void *x, const void *y) {
  u128 a = *(const u128 *)x, b = *(const u128 *)y;
  return a < b ? -1 : a > b;
}

/* ---- Snowflake round trips ---- */

/* A layout of `bits` bits: time (at most 40 bits of ms), worker, 12 bits of
 * sequence. */
static idgen_layout_t layout_of(unsigned bits, unsigned *time_bits) {
  unsigned t = bits - 17 > 40 ? 40 : bits - 17;
  char spec[160];
  snprintf(spec, sizeof spec, "time:%u@1ms,worker:%u,sequence:12,epoch=1288834974657", t,
           bits - 12 - t);
  *time_bits = t;
  idgen_layout_t l = tu_layout(spec);
  assert_int_equal((int)bits, l.total_bits);
  return l;
}

/* n consecutive IDs of one generator on layout `l` from a test clock at
 * start_ms, moved one tick per CHUNK IDs. */
static void snowflake_ids_at(const idgen_layout_t *l, int64_t start_ms, uint64_t *ids, size_t n) {
  tu_clock_t tc;
  tu_clock_init(&tc, start_ms);
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &tc.clock;
  int w = idgen_layout_field_index(l, "worker");
  if (w >= 0)
    s.node[w] = ((uint64_t)1 << (l->fields[w].bits - 1)) | 5;
  idgen_snowflake_gen_t *g = NULL;
  char err[256] = "";
  if (idgen_snowflake_gen_new(&g, l, &s, err, sizeof err) != 0)
    fail_msg("idgen_snowflake_gen_new: %s", err);
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t k = n - i < CHUNK ? n - i : CHUNK;
    tu_ok(idgen_snowflake_gen_next_n(g, ids + i, k));
    tu_clock_add_ms(&tc, 1);
  }
  idgen_snowflake_gen_free(g);
}

/* The same with the time field's top bit set: the IDs reach the top bit of
 * their bit length. */
static void snowflake_ids(const idgen_layout_t *l, unsigned time_bits, uint64_t *ids, size_t n) {
  snowflake_ids_at(l, l->epoch_ms + ((int64_t)1 << (time_bits - 1)) + 777, ids, n);
}

static void snowflake_round_trip(unsigned bits, size_t n, uint64_t *ids, uint64_t *pubs,
                                 uint64_t *tmp) {
  unsigned tb;
  idgen_layout_t l = layout_of(bits, &tb);
  snowflake_ids(&l, tb, ids, n);
  idgen_public_t *p = codec(IDGEN_PUBLIC_SNOWFLAKE, bits, NULL);
  tu_ok(idgen_public_map64_batch(p, ids, pubs, n));
  uint64_t top = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  for (size_t i = 0; i < n; i++)
    if (pubs[i] > top)
      fail_msg("%u bits: public ID %llu of ID %llu is not below 2^%u", bits,
               (unsigned long long)pubs[i], (unsigned long long)ids[i], bits);
  /* Back, one chunk at a time into tmp, against the IDs. */
  for (size_t i = 0; i < n; i += CHUNK) {
    size_t k = n - i < CHUNK ? n - i : CHUNK;
    tu_ok(idgen_public_unmap64_batch(p, pubs + i, tmp, k));
    for (size_t j = 0; j < k; j++)
      if (tmp[j] != ids[i + j])
        fail_msg("%u bits: ID %llu -> %llu -> %llu", bits, (unsigned long long)ids[i + j],
                 (unsigned long long)pubs[i + j], (unsigned long long)tmp[j]);
  }
  radix64(pubs, tmp, n);
  if (has_repeat64(pubs, n))
    fail_msg("%u bits: two IDs gave one public ID", bits);
  idgen_public_free(p);
}

static void test_snowflake_round_trips(void **state) {
  (void)state;
  size_t n = bulk_count(BULK_N);
  uint64_t *ids = xmalloc(n * sizeof *ids), *pubs = xmalloc(n * sizeof *pubs),
           *tmp = xmalloc(n * sizeof *tmp);
  for (unsigned bits = 41; bits <= 64; bits++) {
    double t0 = now_s();
    snowflake_round_trip(bits, n, ids, pubs, tmp);
    print_message("snowflake %u bits: %zu IDs in %.2f s\n", bits, n, now_s() - t0);
  }
  free(ids);
  free(pubs);
  free(tmp);
}

/* ---- ULID and UUIDv7 round trips ---- */

static void ids128(idgen_public_kind_t kind, uint8_t (*ids)[16], size_t n) {
  if (kind == IDGEN_PUBLIC_ULID) {
    idgen_ulid_gen_t *g = NULL;
    tu_ok(idgen_ulid_gen_new(&g, NULL));
    for (size_t i = 0; i < n; i++) {
      idgen_ulid_t u;
      tu_ok(idgen_ulid_gen_next(g, &u));
      memcpy(ids[i], u.bytes, 16);
    }
    idgen_ulid_gen_free(g);
  } else {
    idgen_uuid7_gen_t *g = NULL;
    tu_ok(idgen_uuid7_gen_new(&g, NULL));
    for (size_t i = 0; i < n; i++) {
      idgen_uuid_t u;
      tu_ok(idgen_uuid7_gen_next(g, &u));
      memcpy(ids[i], u.bytes, 16);
    }
    idgen_uuid7_gen_free(g);
  }
}

static u128 be128(const uint8_t b[16]) {
  u128 v = 0;
  for (int i = 0; i < 16; i++)
    v = (v << 8) | b[i];
  return v;
}

static void hex16(const uint8_t b[16], char out[33]) {
  for (int i = 0; i < 16; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void round_trip128(idgen_public_kind_t kind, size_t n) {
  const char *name = kind == IDGEN_PUBLIC_ULID ? "ULID" : "UUIDv7";
  uint8_t(*ids)[16] = xmalloc(n * 16), (*pubs)[16] = xmalloc(n * 16);
  ids128(kind, ids, n);
  idgen_public_t *p = codec(kind, 0, NULL);
  tu_ok(idgen_public_map128_batch(p, (const uint8_t(*)[16])ids, pubs, n));
  uint8_t(*back)[16] = xmalloc(CHUNK * 16);
  for (size_t i = 0; i < n; i++) {
    char a[33], b[33];
    if (kind == IDGEN_PUBLIC_UUID7) {
      idgen_uuid_t u;
      memcpy(u.bytes, pubs[i], 16);
      if (idgen_uuid_version(&u) != 4 || !idgen_uuid_is_rfc_variant(&u)) {
        hex16(pubs[i], a);
        fail_msg("UUIDv7 -> %s: not a version 4 UUID of RFC 9562's variant", a);
      }
    }
    /* Back a chunk at a time, the batch and (one in 64) the single call. */
    if (i % CHUNK == 0)
      tu_ok(idgen_public_unmap128_batch(p, (const uint8_t(*)[16])pubs + i, back,
                                        n - i < CHUNK ? n - i : CHUNK));
    uint8_t one[16];
    const uint8_t *got = back[i % CHUNK];
    if (i % 64 == 0) {
      tu_ok(idgen_public_unmap128(p, pubs[i], one));
      got = one;
    }
    if (memcmp(got, ids[i], 16) != 0 || memcmp(back[i % CHUNK], ids[i], 16) != 0) {
      hex16(ids[i], a);
      hex16(got, b);
      fail_msg("%s %s -> back %s", name, a, b);
    }
  }
  free(back);
  free(ids);
  /* Distinct: the high 64 bits sorted and scanned; distinct high halves are
   * enough, and where two are equal (about 3e-6 for 10^7 random values) the
   * whole values are sorted and scanned instead. */
  uint64_t *hi = xmalloc(n * sizeof *hi), *tmp = xmalloc(n * sizeof *tmp);
  for (size_t i = 0; i < n; i++)
    hi[i] = (uint64_t)(be128(pubs[i]) >> 64);
  radix64(hi, tmp, n);
  if (has_repeat64(hi, n)) {
    u128 *all = xmalloc(n * sizeof *all);
    for (size_t i = 0; i < n; i++)
      all[i] = be128(pubs[i]);
    qsort(all, n, sizeof *all, cmp_u128);
    for (size_t i = 1; i < n; i++)
      if (all[i] == all[i - 1])
        fail_msg("%s: two IDs gave one public ID", name);
    free(all);
  }
  free(hi);
  free(tmp);
  idgen_public_free(p);
  free(pubs);
}

static void test_ulid_round_trip(void **state) {
  (void)state;
  double t0 = now_s();
  size_t n = bulk_count(BULK_N);
  round_trip128(IDGEN_PUBLIC_ULID, n);
  print_message("ULID: %zu IDs in %.2f s\n", n, now_s() - t0);
}

static void test_uuid7_round_trip(void **state) {
  (void)state;
  double t0 = now_s();
  size_t n = bulk_count(BULK_N);
  round_trip128(IDGEN_PUBLIC_UUID7, n);
  print_message("UUIDv7: %zu IDs in %.2f s\n", n, now_s() - t0);
}

/* ---- text forms ---- */

static void text_round_trip64(unsigned bits, const char *prefix, size_t n) {
  unsigned tb;
  idgen_layout_t l = layout_of(bits, &tb);
  uint64_t *ids = xmalloc(n * sizeof *ids);
  snowflake_ids(&l, tb, ids, n);
  idgen_public_t *p = codec(IDGEN_PUBLIC_SNOWFLAKE, bits, prefix);
  size_t want = IDGEN_PUBLIC_TEXT64_LEN + (prefix ? strlen(prefix) + 1 : 0);
  for (size_t i = 0; i < n; i++) {
    char buf[IDGEN_PUBLIC_TEXT_MAX], err[256] = "";
    int len = idgen_public_format64(p, ids[i], buf, sizeof buf);
    if (len < 0 || (size_t)len != want)
      fail_msg("%u bits: format64(%llu) gave %d, want length %zu", bits, (unsigned long long)ids[i],
               len, want);
    uint64_t back = 0;
    unsigned version = 0;
    if (idgen_public_parse64(p, buf, (size_t)len, &back, &version, err, sizeof err) != 0)
      fail_msg("%u bits: parse64(\"%s\"): %s", bits, buf, err);
    if (back != ids[i] || version != 2)
      fail_msg("%u bits: %llu -> \"%s\" -> %llu (key version %u)", bits, (unsigned long long)ids[i],
               buf, (unsigned long long)back, version);
  }
  idgen_public_free(p);
  free(ids);
}

static void text_round_trip128(idgen_public_kind_t kind, const char *prefix, size_t n) {
  uint8_t(*ids)[16] = xmalloc(n * 16);
  ids128(kind, ids, n);
  idgen_public_t *p = codec(kind, 0, prefix);
  size_t want = IDGEN_PUBLIC_TEXT128_LEN + (prefix ? strlen(prefix) + 1 : 0);
  for (size_t i = 0; i < n; i++) {
    char buf[IDGEN_PUBLIC_TEXT_MAX], err[256] = "", hex[33];
    uint8_t back[16];
    unsigned version = 0;
    int len = idgen_public_format128(p, ids[i], buf, sizeof buf);
    hex16(ids[i], hex);
    if (len < 0 || (size_t)len != want)
      fail_msg("format128(%s) gave %d, want length %zu", hex, len, want);
    if (idgen_public_parse128(p, buf, (size_t)len, back, &version, err, sizeof err) != 0)
      fail_msg("parse128(\"%s\"): %s", buf, err);
    if (memcmp(back, ids[i], 16) != 0 || version != 2)
      fail_msg("%s -> \"%s\" -> another ID (key version %u)", hex, buf, version);
  }
  idgen_public_free(p);
  free(ids);
}

static void test_text_round_trips(void **state) {
  (void)state;
  size_t n = bulk_count(TEXT_N);
  static const unsigned bits[] = {41, 53, 63, 64};
  double t0 = now_s();
  for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
    text_round_trip64(bits[i], i % 2 ? "user" : NULL, n);
  text_round_trip128(IDGEN_PUBLIC_ULID, "order", n);
  text_round_trip128(IDGEN_PUBLIC_UUID7, NULL, n);
  print_message("text forms: %zu IDs x 6 in %.2f s\n", n, now_s() - t0);
}

/* ---- statistics ---- */

/* A mapping of n values of `bits` bits (the free bits of an ID, packed). */
typedef struct mapper {
  void (*map)(const struct mapper *m, const u128 *in, u128 *out, size_t n);
  idgen_public_t *p;
  unsigned bits;
} mapper_t;

static void map_identity(const mapper_t *m, const u128 *in, u128 *out, size_t n) {
  (void)m;
  memmove(out, in, n * sizeof *in);
}

static void map_snowflake(const mapper_t *m, const u128 *in, u128 *out, size_t n) {
  uint64_t *a = xmalloc(n * sizeof *a);
  for (size_t i = 0; i < n; i++)
    a[i] = (uint64_t)in[i];
  tu_ok(idgen_public_map64_batch(m->p, a, a, n));
  for (size_t i = 0; i < n; i++)
    out[i] = a[i];
  free(a);
}

/* A UUID's 122 free bits packed: 48 of time, 12 of rand_a, 62 of rand_b. */
static u128 uuid_pack(const uint8_t b[16]) {
  u128 v = be128(b);
  u128 time = v >> 80, rand_a = (v >> 64) & 0xfff, rand_b = v & (((u128)1 << 62) - 1);
  return (time << 74) | (rand_a << 62) | rand_b;
}

static void uuid_unpack(u128 v, unsigned version, uint8_t b[16]) {
  u128 time = v >> 74, rand_a = (v >> 62) & 0xfff, rand_b = v & (((u128)1 << 62) - 1);
  u128 w = (time << 80) | ((u128)version << 76) | (rand_a << 64) | ((u128)2 << 62) | rand_b;
  for (int i = 15; i >= 0; i--, w >>= 8)
    b[i] = (uint8_t)w;
}

static void map_uuid7(const mapper_t *m, const u128 *in, u128 *out, size_t n) {
  uint8_t(*a)[16] = xmalloc(n * 16);
  for (size_t i = 0; i < n; i++)
    uuid_unpack(in[i], 7, a[i]);
  tu_ok(idgen_public_map128_batch(m->p, (const uint8_t(*)[16])a, a, n));
  for (size_t i = 0; i < n; i++) {
    idgen_uuid_t u;
    memcpy(u.bytes, a[i], 16);
    assert_int_equal(4, idgen_uuid_version(&u));
    out[i] = uuid_pack(a[i]);
  }
  free(a);
}

typedef struct ranked {
  u128 v;
  size_t i;
} ranked_t;

static int cmp_ranked(const void *x, const void *y) {
  return cmp_u128(&((const ranked_t *)x)->v, &((const ranked_t *)y)->v);
}

/* rank[i] = the rank of v[i] among v (distinct values). */
static void ranks(const u128 *v, size_t n, double *rank) {
  ranked_t *r = xmalloc(n * sizeof *r);
  for (size_t i = 0; i < n; i++)
    r[i] = (ranked_t){v[i], i};
  qsort(r, n, sizeof *r, cmp_ranked);
  for (size_t i = 0; i < n; i++)
    rank[r[i].i] = (double)i;
  free(r);
}

/* Spearman's rho between x and y is within +-0.01. */
static int spearman_ok(const u128 *x, const u128 *y, size_t n, double *rho) {
  double *rx = xmalloc(n * sizeof *rx), *ry = xmalloc(n * sizeof *ry);
  ranks(x, n, rx);
  ranks(y, n, ry);
  long double d2 = 0;
  for (size_t i = 0; i < n; i++)
    d2 += (long double)(rx[i] - ry[i]) * (rx[i] - ry[i]);
  long double nn = (long double)n;
  *rho = (double)(1.0L - 6.0L * d2 / (nn * (nn * nn - 1.0L)));
  free(rx);
  free(ry);
  return fabs(*rho) <= 0.01;
}

/* Each of the `bits` bits is 1 in 50% +- 0.5% of y; the worst in *worst. */
static int bits_ok(const u128 *y, size_t n, unsigned bits, double *worst) {
  int ok = 1;
  *worst = 0.5;
  for (unsigned b = 0; b < bits; b++) {
    size_t ones = 0;
    for (size_t i = 0; i < n; i++)
      ones += (size_t)(y[i] >> b) & 1;
    double f = (double)ones / (double)n;
    if (fabs(f - 0.5) > fabs(*worst - 0.5))
      *worst = f;
    if (fabs(f - 0.5) > 0.005)
      ok = 0;
  }
  return ok;
}

static unsigned popcount128(u128 v) {
  return (unsigned)(__builtin_popcountll((uint64_t)v) + __builtin_popcountll((uint64_t)(v >> 64)));
}

/* For each input bit, flipping it in x[0..m) flips on average bits/2 +- 1
 * output bits; the mean furthest from bits/2 in *worst. */
static int avalanche_ok(const mapper_t *mp, const u128 *x, size_t m, double *worst) {
  u128 *base = xmalloc(m * sizeof *base), *in = xmalloc(m * sizeof *in),
       *out = xmalloc(m * sizeof *out);
  double half = mp->bits / 2.0;
  int ok = 1;
  *worst = half;
  mp->map(mp, x, base, m);
  for (unsigned b = 0; b < mp->bits; b++) {
    for (size_t i = 0; i < m; i++)
      in[i] = x[i] ^ ((u128)1 << b);
    mp->map(mp, in, out, m);
    size_t flips = 0;
    for (size_t i = 0; i < m; i++)
      flips += popcount128(base[i] ^ out[i]);
    double mean = (double)flips / (double)m;
    if (fabs(mean - half) > fabs(*worst - half))
      *worst = mean;
    if (fabs(mean - half) > 1.0)
      ok = 0;
  }
  free(base);
  free(in);
  free(out);
  return ok;
}

/* The three statistics on x -> mp(x), which must pass; and on x -> x, which
 * must fail each. */
static void statistics(const char *name, const mapper_t *mp, const u128 *x, size_t n) {
  double t0 = now_s();
  u128 *y = xmalloc(n * sizeof *y);
  double rho, worst_bit, worst_flips;
  mp->map(mp, x, y, n);
  int s = spearman_ok(x, y, n, &rho), b = bits_ok(y, n, mp->bits, &worst_bit),
      a = avalanche_ok(mp, x, AVAL_M, &worst_flips);
  print_message("%s: rho %.5f, worst bit 1 in %.4f%%, worst mean flips %.3f of %u\n", name, rho,
                100 * worst_bit, worst_flips, mp->bits);
  if (!s)
    fail_msg("%s: rank correlation %.5f, outside +-0.01", name, rho);
  if (!b)
    fail_msg("%s: a bit is 1 in %.4f%% of public IDs, outside 50%% +- 0.5%%", name,
             100 * worst_bit);
  if (!a)
    fail_msg("%s: flipping one input bit flips %.3f output bits on average, outside %u/2 +- 1",
             name, worst_flips, mp->bits);
  /* The identity fails each, or the statistic proves nothing. */
  mapper_t id = {map_identity, NULL, mp->bits};
  double r2, b2, f2;
  assert_false(spearman_ok(x, x, n, &r2));
  assert_false(bits_ok(x, n, mp->bits, &b2));
  assert_false(avalanche_ok(&id, x, AVAL_M, &f2));
  print_message("%s unpermuted: rho %.5f, worst bit %.4f%%, mean flips %.3f (all fail); %.2f s\n",
                name, r2, 100 * b2, f2, now_s() - t0);
  free(y);
}

static void test_statistics_twitter(void **state) {
  (void)state;
  idgen_layout_t l = tu_layout("twitter");
  uint64_t *ids = xmalloc(STAT_N * sizeof *ids);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snowflake_ids_at(&l, (int64_t)ts.tv_sec * 1000, ids, STAT_N);
  u128 *x = xmalloc(STAT_N * sizeof *x);
  for (size_t i = 0; i < STAT_N; i++) {
    if (i > 0)
      assert_true(ids[i] > ids[i - 1]); /* consecutive, in issue order */
    x[i] = ids[i];
  }
  mapper_t mp = {map_snowflake, codec(IDGEN_PUBLIC_SNOWFLAKE, 63, NULL), 63};
  statistics("twitter", &mp, x, STAT_N);
  idgen_public_free(mp.p);
  free(ids);
  free(x);
}

static void test_statistics_uuid7(void **state) {
  (void)state;
  uint8_t(*ids)[16] = xmalloc(STAT_N * 16);
  ids128(IDGEN_PUBLIC_UUID7, ids, STAT_N);
  u128 *x = xmalloc(STAT_N * sizeof *x);
  for (size_t i = 0; i < STAT_N; i++) {
    x[i] = uuid_pack(ids[i]);
    if (i > 0)
      assert_true(x[i] > x[i - 1]);
  }
  mapper_t mp = {map_uuid7, codec(IDGEN_PUBLIC_UUID7, 0, NULL), 122};
  statistics("UUIDv7 -> UUIDv4", &mp, x, STAT_N);
  idgen_public_free(mp.p);
  free(ids);
  free(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_statistics_twitter), cmocka_unit_test(test_statistics_uuid7),
      cmocka_unit_test(test_text_round_trips),   cmocka_unit_test(test_ulid_round_trip),
      cmocka_unit_test(test_uuid7_round_trip),   cmocka_unit_test(test_snowflake_round_trips),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
