/*
 * ulid.c -- ULIDs (docs/DESIGN.md §6): make, encode, decode (strict and
 * lenient), UUID conversion, and the monotonic generator.
 *
 * Text form: 26 Crockford base32 characters, 10 for the 48-bit time (the
 * first holds only 3 bits, hence "at most 7") and 16 for the 80 random bits.
 * Encoding works on three 64-bit words (time; random bits 79..40; 39..0), so
 * every shift is a plain 64-bit one.  Decoding maps each byte through a
 * table, ORs the results to test all 26 at once, and only on failure walks
 * the input again to name the first bad character.
 *
 * The monotonic generator keeps the last ULID (time and 80 bits) under a
 * fork-aware spin lock (see random.c); the clock is read before the lock is
 * taken.  Random bits are drawn only for a new millisecond: within one, the
 * next ULID is the last plus one, and drawing bytes to throw away cost more
 * than the rest of the call.  Whether the millisecond is new is first
 * guessed without the lock (last_ms, read racily), so that the usual draw happens outside
 * it; the lock decides, and draws inside it only after fork() reset the state.
 */
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "tables.h"

/* Character values, 0xff for invalid (tables.h). */
#define dec_strict idgen__ulid_strict
#define dec_lenient idgen__ulid_lenient

/* Encoding takes two characters per 10 bits: 130 bits (2 of padding, 48 of
 * time, 80 random) are exactly 13 pairs (idgen__ulid_pairs, tables.h). */

static void put_u48(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 6; i++)
    p[i] = (uint8_t)(v >> (40 - 8 * i));
}

int64_t idgen_ulid_time(const idgen_ulid_t *u) {
  return (int64_t)(idgen__load_be64(u->bytes) >> 16);
}

int idgen_ulid_make(idgen_ulid_t *out, int64_t unix_ms, const idgen_random_t *rnd) {
  if (unix_ms < 0 || unix_ms > IDGEN_ULID_MAX_MS)
    return IDGEN_ERANGE;
  int rc = idgen__random(rnd, out->bytes + 6, 10);
  if (rc < 0)
    return rc;
  put_u48(out->bytes, (uint64_t)unix_ms);
  return 0;
}

/* 2k characters from the low 10k bits of v: one 2-byte store per pair. */
static inline void enc_pairs(char *o, uint64_t v, int k) {
#pragma GCC unroll 8
  for (int i = 0; i < k; i++)
    memcpy(o + 2 * i, idgen__ulid_pairs + 2 * ((v >> (10 * (k - 1 - i))) & 1023), 2);
}

static inline void encode_scalar(uint64_t hi, uint64_t lo, char *out) {
  enc_pairs(out, hi >> 16, 5);                            /* time: 50 bits */
  enc_pairs(out + 10, (hi & 0xffff) << 24 | lo >> 40, 4); /* random 79..40 */
  enc_pairs(out + 18, lo & ((UINT64_C(1) << 40) - 1), 4); /* random 39..0 */
  out[26] = '\0';
}

/* The level not yet known (once a process, and after idgen__simd_enable):
 * decided, then the call again. */
static __attribute__((noinline)) void format_undecided(const idgen_ulid_t *u, char *out) {
  (void)idgen__simd_available();
  idgen_ulid_format(u, out);
}

void idgen_ulid_format(const idgen_ulid_t *u, char *out) {
  /* AVX-512 on, or the level not yet known: a tail call.  So no path pays a
   * call's register saves. */
  int level = atomic_load_explicit(&idgen__simd_state, memory_order_relaxed);
  if (IDGEN_UNLIKELY(level < 0)) {
    format_undecided(u, out);
    return;
  }
  uint64_t hi = idgen__load_be64(u->bytes), lo = idgen__load_be64(u->bytes + 8);
#if IDGEN__HAVE_VBMI
  if (IDGEN_LIKELY(level == IDGEN__SIMD_VBMI)) {
    idgen__ulid_encode_vbmi(hi, lo, out);
    return;
  }
#endif
  encode_scalar(hi, lo, out);
}

/* Names the first bad character of s (strict or lenient), for the message. */
static int describe_bad(const char *s, size_t len, int lenient, char *err, size_t errlen) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (lenient && c == '-')
      continue;
    if ((lenient ? dec_lenient : dec_strict)[c] != 0xff)
      continue;
    /* c is a letter in the first two messages; quoted all the same in the third. */
    if (!lenient && dec_lenient[c] != 0xff)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%c' at position %zu is not in the alphabet (lenient "
                        "decoding reads it as %c)",
                        c, i + 1, dec_lenient[c] == 1 ? '1' : '0');
    if (c == 'U' || c == 'u')
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%c' at position %zu is not in the alphabet (U is "
                        "never valid)",
                        c, i + 1);
    if (c >= 0x21 && c < 0x7f)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%s' at position %zu is not in the alphabet",
                        IDGEN_QUOTE(&s[i], 1, '\'', 4), i + 1);
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "ULID: byte 0x%02x at position %zu is not in the alphabet", c, i + 1);
  }
  return idgen__err(err, errlen, IDGEN_EPARSE, "ULID: malformed");
}

/* Folds 2k characters into v, two at a time (10 bits per step keeps the
 * dependency chain short without keeping 26 values alive at once); an
 * invalid character sets bits above 31 in *bad. */
static inline uint64_t dec_run(const unsigned char *tab, const char *s, int k, unsigned *bad) {
  uint64_t v = 0;
  unsigned b = 0;
#pragma GCC unroll 5
  for (int i = 0; i < k; i++) {
    unsigned d0 = tab[(unsigned char)s[2 * i]], d1 = tab[(unsigned char)s[2 * i + 1]];
    b |= d0 | d1;
    v = v << 10 | (d0 << 5 | d1);
  }
  *bad |= b;
  return v;
}

int idgen_ulid_parse(idgen_ulid_t *out, const char *s, size_t len, idgen_ulid_parse_mode_t mode,
                     char *err, size_t errlen) {
  int lenient = mode == IDGEN_ULID_LENIENT;
  const unsigned char *tab = lenient ? dec_lenient : dec_strict;
  char packed[IDGEN_ULID_STRLEN];
  const char *given = s; /* the input as given, for messages */
  size_t first_pos = 1;  /* 1-based position of the first character used */

  if (lenient && memchr(s, '-', len) != NULL) {
    /* Validate while packing, so that positions refer to the input as given. */
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char)s[i];
      if (c == '-')
        continue;
      if (tab[c] == 0xff)
        return describe_bad(s, len, 1, err, errlen);
      if (n < IDGEN_ULID_STRLEN) {
        if (n == 0)
          first_pos = i + 1;
        packed[n] = (char)c;
      }
      n++;
    }
    if (n != IDGEN_ULID_STRLEN)
      return idgen__err(err, errlen, IDGEN_EPARSE, "ULID: %zu characters without hyphens, want 26",
                        n);
    s = packed;
  } else if (len != IDGEN_ULID_STRLEN) {
    return idgen__err(err, errlen, IDGEN_EPARSE, "ULID: %zu characters, want 26", len);
  } else {
    int level = idgen__simd_on();
    if (level >= IDGEN__SIMD_VBMI   ? idgen__ulid_decode_vbmi(s, lenient, out->bytes) == 0
        : level == IDGEN__SIMD_AVX2 ? idgen__ulid_decode_avx2(s, lenient, out->bytes) == 0
                                    : 0)
      return 0;
  }

  unsigned bad = 0;
  unsigned first = tab[(unsigned char)s[0]];
  uint64_t t = dec_run(tab, s, 5, &bad);
  uint64_t hi = dec_run(tab, s + 10, 4, &bad);
  uint64_t lo = dec_run(tab, s + 18, 4, &bad);
  if (IDGEN_UNLIKELY(bad > 31))
    return describe_bad(s, len, lenient, err, errlen);
  if (first > 7)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "ULID: first character '%c' at position %zu overflows 128 bits (at most 7)",
                      given[first_pos - 1], first_pos);
  idgen__store_be64(out->bytes, t << 16 | hi >> 24);
  idgen__store_be64(out->bytes + 8, hi << 40 | lo);
  return 0;
}

void idgen_ulid_to_uuid(const idgen_ulid_t *u, idgen_uuid_t *out) {
  memcpy(out->bytes, u->bytes, 16);
}

void idgen_ulid_from_uuid(const idgen_uuid_t *u, idgen_ulid_t *out) {
  memcpy(out->bytes, u->bytes, 16);
}

struct idgen_ulid_gen {
  idgen__gen128_t c; /* lock, clock, random source */
  /* -1: nothing issued (in this process).  Written under the lock; also
   * read without it, for the guess whether a millisecond is new. */
  _Atomic int64_t last_ms;
  uint16_t last_hi; /* random bits 79..64 */
  uint64_t last_lo; /* random bits 63..0 */
};

int idgen_ulid_gen_new(idgen_ulid_gen_t **out, const idgen_gen128_settings_t *s) {
  idgen_ulid_gen_t *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g == NULL)
    return IDGEN_ENOMEM;
  idgen__gen128_init(&g->c, s);
  atomic_init(&g->last_ms, -1);
  *out = g;
  return 0;
}

void idgen_ulid_gen_free(idgen_ulid_gen_t *g) { free(g); }

static int draw80(idgen_ulid_gen_t *g, uint16_t *hi, uint64_t *lo) {
  uint8_t r[10];
  int rc = idgen__random(g->c.randomp, r, sizeof r);
  if (rc < 0)
    return rc;
  *hi = (uint16_t)(r[0] << 8 | r[1]);
  *lo = idgen__load_be64(r + 2);
  return 0;
}

/* The whole call: any millisecond, fork, overflow, errors. */
static __attribute__((noinline)) int next_full(idgen_ulid_gen_t *g, int64_t now,
                                               idgen_ulid_t *out) {
  if (now < 0 || now > IDGEN_ULID_MAX_MS)
    return IDGEN_ECLOCK;
  uint16_t hi = 0;
  uint64_t lo = 0;
  int drawn = 0, rc;
  /* The guess: last_ms only grows (but for the reset below), so a stale
   * value only makes this draw needless; the draw under the lock below is
   * for a state reset by fork(). */
  if (now > atomic_load_explicit(&g->last_ms, memory_order_relaxed)) {
    if ((rc = draw80(g, &hi, &lo)) < 0)
      return rc;
    drawn = 1;
  }

  int64_t last = -1; /* first use in a child after fork(): fresh random bits */
  if (!idgen__lock_acquire(&g->c.lock))
    last = atomic_load_explicit(&g->last_ms, memory_order_relaxed);
  int64_t ms = now;
  if (now > last && !drawn && (rc = draw80(g, &hi, &lo)) < 0) {
    atomic_store_explicit(&g->last_ms, last, memory_order_relaxed); /* the reset, if any */
    idgen__lock_release(&g->c.lock);
    return rc;
  }
  if (now <= last) {
    /* Same millisecond, or the clock stepped back: previous plus one. */
    ms = last;
    hi = g->last_hi;
    lo = g->last_lo + 1;
    if (lo == 0) {
      if (hi == UINT16_MAX) {
        idgen__lock_release(&g->c.lock);
        return IDGEN_EOVERFLOW;
      }
      hi++;
    }
  }
  atomic_store_explicit(&g->last_ms, ms, memory_order_relaxed);
  g->last_hi = hi;
  g->last_lo = lo;
  idgen__lock_release(&g->c.lock);

  idgen__store_be64(out->bytes, (uint64_t)ms << 16 | hi);
  idgen__store_be64(out->bytes + 8, lo);
  return 0;
}

/* The usual call: a millisecond that is not new (by the racy guess, then
 * under the lock), taken with the lock's one compare-and-swap, in this
 * process's generation, without a carry out of the low 64 bits.  It makes
 * no call, so it saves no registers (DESIGN §6 on why that mattered).
 * Anything else goes to next_full, from the start (the lock released
 * first). */
static inline __attribute__((always_inline)) int next_at(idgen_ulid_gen_t *g, int64_t now,
                                                         idgen_ulid_t *out) {
  if (IDGEN_LIKELY(now <= atomic_load_explicit(&g->last_ms, memory_order_relaxed) && now >= 0)) {
    if (IDGEN_LIKELY(idgen__lock_try(&g->c.lock))) {
      int64_t last = atomic_load_explicit(&g->last_ms, memory_order_relaxed);
      uint64_t lo = g->last_lo + 1;
      if (IDGEN_LIKELY(now <= last && lo != 0)) {
        uint16_t hi = g->last_hi;
        g->last_lo = lo;
        idgen__lock_release(&g->c.lock);
        idgen__store_be64(out->bytes, (uint64_t)last << 16 | hi);
        idgen__store_be64(out->bytes + 8, lo);
        return 0;
      }
      idgen__lock_release(&g->c.lock);
    }
  }
  return next_full(g, now, out);
}

int idgen_ulid_gen_next_at(idgen_ulid_gen_t *g, int64_t now, idgen_ulid_t *out) {
  return next_at(g, now, out);
}

int idgen_ulid_gen_next(idgen_ulid_gen_t *g, idgen_ulid_t *out) {
  return next_at(g, idgen__gen128_now_ms(&g->c), out);
}
