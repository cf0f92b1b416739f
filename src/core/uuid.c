/*
 * uuid.c -- UUID text (RFC 9562) both ways, and UUIDv7: a stateless maker
 * and a monotonic generator (RFC 9562 section 6.2, Method 1).
 *
 * DESIGN.  UUIDv7 layout: 48-bit Unix ms | ver 4 | rand_a 12 | var 2 |
 * rand_b 62.  The monotonic generator uses rand_a and the top 30 bits of
 * rand_b as a 42-bit counter, and the low 32 bits of rand_b as fresh random
 * bits in every UUID.  At a new millisecond the counter starts at a random
 * value below 2^41 (the rollover guard of RFC 9562 section 6.2), leaving at
 * least 2^41 increments before it could overflow.  Within a millisecond, and
 * when the clock steps back, the counter goes up by one; on overflow the time
 * field moves one millisecond ahead of the clock and the counter restarts
 * (RFC 9562: "increment the timestamp ahead of the actual time").  The clock
 * and the random bytes are read before taking the lock, so the lock is held
 * for a few instructions.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core_int.h"
#include "tables.h"

#define UUID7_MAX_MS ((INT64_C(1) << 48) - 1)
#define COUNTER_BITS 42
#define COUNTER_MAX ((UINT64_C(1) << COUNTER_BITS) - 1)

static const uint8_t at36[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};

void idgen_uuid_format(const idgen_uuid_t *u, char *out) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++)
    memcpy(out + at36[i], idgen__hex_pairs + 2 * u->bytes[i], 2);
  out[8] = out[13] = out[18] = out[23] = '-';
  out[36] = '\0';
}

static int bad_char(char *err, size_t errlen, unsigned char c, size_t pos, const char *want) {
  if (c >= 0x21 && c < 0x7f)
    return idgen__err(err, errlen, IDGEN_EPARSE, "UUID: character '%s' at position %zu is not %s",
                      IDGEN_QUOTE(&c, 1, '\'', 4), pos, want);
  return idgen__err(err, errlen, IDGEN_EPARSE, "UUID: byte 0x%02x at position %zu is not %s", c,
                    pos, want);
}

static const uint8_t at32[16] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};

/* Decodes 16 bytes whose digit pairs start at s[at[i]]; returns the OR of all
 * digit values, above 15 if any digit was bad. */
static inline unsigned hex_bytes(uint8_t *out, const char *s, const uint8_t *at) {
  unsigned bad = 0;
#pragma GCC unroll 16
  for (int i = 0; i < 16; i++) {
    unsigned char a = idgen__hex[(unsigned char)s[at[i]]];
    unsigned char b = idgen__hex[(unsigned char)s[at[i] + 1]];
    bad |= a | b;
    out[i] = (uint8_t)(a << 4 | (b & 15));
  }
  return bad;
}

/* Reports the first character of s[0..len) that is not where it should be. */
static int describe_uuid(const char *s, size_t len, size_t base, int hyphens, char *err,
                         size_t errlen) {
  for (size_t j = 0; j < len; j++) {
    int dash = hyphens && (j == 8 || j == 13 || j == 18 || j == 23);
    unsigned char c = (unsigned char)s[j];
    if (dash && c != '-')
      return bad_char(err, errlen, c, base + j + 1, "'-'");
    if (!dash && idgen__hex[c] == 0xff)
      return bad_char(err, errlen, c, base + j + 1, "a hex digit");
  }
  return idgen__err(err, errlen, IDGEN_EPARSE, "UUID: malformed");
}

int idgen_uuid_parse(idgen_uuid_t *u, const char *s, size_t len, char *err, size_t errlen) {
  size_t base = 0; /* characters skipped, for 1-based positions in the input */
  if (len >= 9 && strncasecmp(s, "urn:uuid:", 9) == 0) {
    s += 9;
    len -= 9;
    base = 9;
  }
  if (len != 36 && len != 32)
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "UUID: %zu characters, want 36 (8-4-4-4-12) or 32 hex digits", len + base);
  int hyphens = len == 36;
  unsigned bad;
  int level = hyphens ? idgen__simd_on() : IDGEN__SIMD_OFF;
  if (level >= IDGEN__SIMD_VBMI   ? idgen__uuid_parse36_vbmi(s, u->bytes) == 0
      : level == IDGEN__SIMD_AVX2 ? idgen__uuid_parse36_avx2(s, u->bytes) == 0
                                  : 0)
    return 0;
  if (hyphens) {
    if ((s[8] != '-') | (s[13] != '-') | (s[18] != '-') | (s[23] != '-'))
      return describe_uuid(s, len, base, hyphens, err, errlen);
    bad = hex_bytes(u->bytes, s, at36);
  } else {
    bad = hex_bytes(u->bytes, s, at32);
  }
  if (IDGEN_UNLIKELY(bad > 15))
    return describe_uuid(s, len, base, hyphens, err, errlen);
  return 0;
}

int idgen_uuid_version(const idgen_uuid_t *u) { return u->bytes[6] >> 4; }

int idgen_uuid_is_rfc_variant(const idgen_uuid_t *u) { return (u->bytes[8] & 0xc0) == 0x80; }

int64_t idgen_uuid7_time(const idgen_uuid_t *u) {
  return (int64_t)(idgen__load_be64(u->bytes) >> 16);
}

/* Writes ms, version 7, rand_a (12 bits), variant 10 and rand_b (62 bits). */
static void uuid7_pack(idgen_uuid_t *u, int64_t ms, uint64_t rand_a, uint64_t rand_b) {
  idgen__store_be64(u->bytes, (uint64_t)ms << 16 | UINT64_C(0x7000) | (rand_a & 0xfff));
  idgen__store_be64(u->bytes + 8, UINT64_C(0x8000000000000000) | (rand_b & (UINT64_MAX >> 2)));
}

int idgen_uuid7_make(idgen_uuid_t *out) {
  uint64_t r[2];
  int64_t ms = idgen__clock_fast_ms();
  if (ms < 0 || ms > UUID7_MAX_MS)
    return IDGEN_ECLOCK;
  int rc = idgen__random(NULL, r, sizeof r);
  if (rc < 0)
    return rc;
  uuid7_pack(out, ms, r[0], r[1]);
  return 0;
}

/* The monotonic generator (RFC 9562 section 6.2, method 1): a 42-bit
 * counter under the lock, seeded with random bits (its top bit clear) at
 * each new millisecond and incremented within one; rand_b's low 32 bits are
 * random on every call.  As in ulid.c, the seed is drawn only for a new
 * millisecond, guessed without the lock (last_ms read racily: it only
 * grows, but for fork()'s reset, so a stale guess only wastes a draw) and
 * drawn inside it after fork() reset the state or when the counter is used
 * up. */
struct idgen_uuid7_gen {
  idgen__gen128_t c; /* lock, clock, random source */
  /* -1: nothing issued (in this process).  Written under the lock; also
   * read without it, for the guess whether a millisecond is new. */
  _Atomic int64_t last_ms;
  uint64_t counter;
};

int idgen_uuid7_gen_new(idgen_uuid7_gen_t **out, const idgen_gen128_settings_t *s) {
  idgen_uuid7_gen_t *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g == NULL)
    return IDGEN_ENOMEM;
  idgen__gen128_init(&g->c, s);
  atomic_init(&g->last_ms, -1);
  *out = g;
  return 0;
}

void idgen_uuid7_gen_free(idgen_uuid7_gen_t *g) { free(g); }

void idgen__uuid7_gen_set(idgen_uuid7_gen_t *g, int64_t ms, uint64_t counter) {
  idgen__lock_acquire(&g->c.lock);
  atomic_store_explicit(&g->last_ms, ms, memory_order_relaxed);
  g->counter = counter;
  idgen__lock_release(&g->c.lock);
}

/* The usual call, as ulid.c's next_at: a millisecond that is not new (by
 * the racy guess, then under the lock), the lock's one compare-and-swap, the
 * counter not used up, then the tail from the thread's random buffer without
 * a call.  The tail is taken under the lock, after the compare-and-swap:
 * taken before it, the store of the buffer's position held the locked
 * instruction back (1.2 ns of 11 here).  Anything else, or a buffer that
 * needs refilling: next_full, from the start, with nothing taken. */
static int next_full(idgen_uuid7_gen_t *g, int64_t now, idgen_uuid_t *out);

int idgen_uuid7_gen_next(idgen_uuid7_gen_t *g, idgen_uuid_t *out) {
  int64_t now = idgen__gen128_now_ms(&g->c);
  if (IDGEN_LIKELY(now >= 0 && now <= atomic_load_explicit(&g->last_ms, memory_order_relaxed) &&
                   idgen__lock_try(&g->c.lock))) {
    int64_t last = atomic_load_explicit(&g->last_ms, memory_order_relaxed);
    uint64_t counter = g->counter + 1;
    uint32_t tail;
    if (IDGEN_LIKELY(now <= last && counter <= COUNTER_MAX &&
                     idgen__random_quick(g->c.randomp, &tail, sizeof tail))) {
      g->counter = counter;
      idgen__lock_release(&g->c.lock);
      uuid7_pack(out, last, counter >> 30, (counter & ((UINT64_C(1) << 30) - 1)) << 32 | tail);
      return 0;
    }
    idgen__lock_release(&g->c.lock);
  }
  return next_full(g, now, out);
}

static int next_full(idgen_uuid7_gen_t *g, int64_t now, idgen_uuid_t *out) {
  uint64_t seed = 0;
  uint32_t tail;
  if (now < 0 || now > UUID7_MAX_MS)
    return IDGEN_ECLOCK;
  int seeded = 0, rc;
  if (now > atomic_load_explicit(&g->last_ms, memory_order_relaxed)) {
    if ((rc = idgen__random(g->c.randomp, &seed, sizeof seed)) < 0)
      return rc;
    seeded = 1;
  }
  if ((rc = idgen__random(g->c.randomp, &tail, sizeof tail)) < 0)
    return rc;

  int64_t ms = -1; /* first use in a child after fork(): start afresh */
  if (!idgen__lock_acquire(&g->c.lock))
    ms = atomic_load_explicit(&g->last_ms, memory_order_relaxed);
  uint64_t counter;
  if (now <= ms && g->counter < COUNTER_MAX) {
    counter = g->counter + 1;
  } else if (now <= ms && ms >= UUID7_MAX_MS) {
    idgen__lock_release(&g->c.lock);
    return IDGEN_EOVERFLOW;
  } else {
    /* A new millisecond, or the counter used up: then run one millisecond
     * ahead of the clock.  Either way a fresh seed. */
    if (!seeded && (rc = idgen__random(g->c.randomp, &seed, sizeof seed)) < 0) {
      atomic_store_explicit(&g->last_ms, ms, memory_order_relaxed); /* the reset, if any */
      idgen__lock_release(&g->c.lock);
      return rc;
    }
    ms = now > ms ? now : ms + 1;
    counter = seed & (COUNTER_MAX >> 1);
  }
  atomic_store_explicit(&g->last_ms, ms, memory_order_relaxed);
  g->counter = counter;
  idgen__lock_release(&g->c.lock);

  /* rand_a = counter's top 12 bits; rand_b = counter's low 30 bits, 32 random. */
  uuid7_pack(out, ms, counter >> 30, (counter & ((UINT64_C(1) << 30) - 1)) << 32 | tail);
  return 0;
}
