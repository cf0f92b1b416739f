/*
 * ulid.c -- ULIDs (SPEC section 4): make, encode, decode (strict and
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
 * fork-aware spin lock (see random.c); the clock and the random bytes are
 * read before the lock is taken.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"

static const char alphabet[32] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* Character values plus one, 0 for invalid: strict, then lenient. */
static unsigned char dec_strict[256], dec_lenient[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void tables_init(void) {
  for (int i = 0; i < 32; i++) {
    unsigned char c = (unsigned char)alphabet[i];
    dec_strict[c] = dec_lenient[c] = (unsigned char)(i + 1);
    if (c >= 'A' && c <= 'Z')
      dec_strict[c + 32] = dec_lenient[c + 32] = (unsigned char)(i + 1);
  }
  static const char aliases[] = "IiLl";
  for (int i = 0; aliases[i]; i++)
    dec_lenient[(unsigned char)aliases[i]] = 2; /* 1 */
  dec_lenient['O'] = dec_lenient['o'] = 1;      /* 0 */
}

static void put_u48(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 6; i++)
    p[i] = (uint8_t)(v >> (40 - 8 * i));
}

static uint64_t get_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | p[i];
  return v;
}

int64_t idgen_ulid_time(const idgen_ulid_t *u) { return (int64_t)get_be(u->bytes, 6); }

int idgen_ulid_new(idgen_ulid_t *out, int64_t unix_ms, const idgen_random_t *rnd) {
  if (unix_ms < 0 || unix_ms > IDGEN_ULID_MAX_MS)
    return IDGEN_ERANGE;
  int rc = idgen__random(rnd, out->bytes + 6, 10);
  if (rc < 0)
    return rc;
  put_u48(out->bytes, (uint64_t)unix_ms);
  return 0;
}

/* 8 characters from the low 40 bits of v. */
static void enc40(char *o, uint64_t v) {
  for (int i = 0; i < 8; i++)
    o[i] = alphabet[(v >> (35 - 5 * i)) & 31];
}

void idgen_ulid_encode(const idgen_ulid_t *u, char *out) {
  uint64_t t = get_be(u->bytes, 6);
  uint64_t hi = get_be(u->bytes + 6, 5), lo = get_be(u->bytes + 11, 5);
  out[0] = alphabet[t >> 45];
  out[1] = alphabet[(t >> 40) & 31];
  enc40(out + 2, t);
  enc40(out + 10, hi);
  enc40(out + 18, lo);
  out[26] = '\0';
}

static uint64_t dec40(const unsigned char *v) {
  uint64_t x = 0;
  for (int i = 0; i < 8; i++)
    x = x << 5 | v[i];
  return x;
}

/* Names the first bad character of s (strict or lenient), for the message. */
static int describe_bad(const char *s, size_t len, int lenient, char *err, size_t errlen) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (lenient && c == '-')
      continue;
    if ((lenient ? dec_lenient : dec_strict)[c] != 0)
      continue;
    if (!lenient && dec_lenient[c] != 0)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%c' at position %zu is not in the alphabet (lenient "
                        "decoding reads it as %c)",
                        c, i + 1, dec_lenient[c] == 2 ? '1' : '0');
    if (c == 'U' || c == 'u')
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%c' at position %zu is not in the alphabet (U is "
                        "never valid)",
                        c, i + 1);
    if (c >= 0x21 && c < 0x7f)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: character '%c' at position %zu is not in the alphabet", c, i + 1);
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "ULID: byte 0x%02x at position %zu is not in the alphabet", c, i + 1);
  }
  return idgen__err(err, errlen, IDGEN_EPARSE, "ULID: malformed");
}

int idgen_ulid_decode(idgen_ulid_t *out, const char *s, size_t len, int mode, char *err,
                      size_t errlen) {
  pthread_once(&tables_once, tables_init);
  int lenient = mode == IDGEN_ULID_LENIENT;
  const unsigned char *tab = lenient ? dec_lenient : dec_strict;
  unsigned char v[26];
  size_t first_pos = 1; /* 1-based position of the first character used */

  if (!lenient || memchr(s, '-', len) == NULL) {
    if (len != IDGEN_ULID_STRLEN)
      return idgen__err(err, errlen, IDGEN_EPARSE, "ULID: %zu characters, want 26", len);
    unsigned bad = 0;
    for (int i = 0; i < 26; i++) {
      v[i] = tab[(unsigned char)s[i]];
      bad |= v[i] == 0;
    }
    if (bad)
      return describe_bad(s, len, lenient, err, errlen);
  } else {
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
      if (s[i] == '-')
        continue;
      if (n == 26) {
        n++;
        break;
      }
      if (n == 0)
        first_pos = i + 1;
      v[n] = tab[(unsigned char)s[i]];
      if (v[n] == 0)
        return describe_bad(s, len, 1, err, errlen);
      n++;
    }
    if (n != 26) {
      size_t total = 0;
      for (size_t i = 0; i < len; i++)
        total += s[i] != '-';
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "ULID: %zu characters without hyphens, want 26", total);
    }
  }
  for (int i = 0; i < 26; i++)
    v[i]--;
  if (v[0] > 7)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "ULID: first character '%c' at position %zu overflows 128 bits (at most 7)",
                      alphabet[v[0]], first_pos);
  uint64_t t = (uint64_t)v[0] << 45 | (uint64_t)v[1] << 40 | dec40(v + 2);
  uint64_t hi = dec40(v + 10), lo = dec40(v + 18);
  put_u48(out->bytes, t);
  for (int i = 0; i < 5; i++) {
    out->bytes[6 + i] = (uint8_t)(hi >> (32 - 8 * i));
    out->bytes[11 + i] = (uint8_t)(lo >> (32 - 8 * i));
  }
  return 0;
}

void idgen_ulid_to_uuid(const idgen_ulid_t *u, idgen_uuid_t *out) {
  memcpy(out->bytes, u->bytes, 16);
}

void idgen_ulid_from_uuid(const idgen_uuid_t *u, idgen_ulid_t *out) {
  memcpy(out->bytes, u->bytes, 16);
}

struct idgen_ulid_gen {
  idgen__lock_t lock;
  int64_t last_ms;      /* -1: nothing issued (in this process) */
  uint16_t last_hi;     /* random bits 79..64 */
  uint64_t last_lo;     /* random bits 63..0 */
  idgen_clock_mode_t mode;
  idgen_clock_t clock;
  const idgen_clock_t *clockp;
  idgen_random_t random;
  const idgen_random_t *randomp;
};

int idgen_ulid_gen_new(idgen_ulid_gen_t **out, const idgen_gen128_settings_t *s) {
  idgen_ulid_gen_t *g = calloc(1, sizeof *g);
  *out = NULL;
  if (g == NULL)
    return IDGEN_ENOMEM;
  idgen__lock_init(&g->lock);
  g->last_ms = -1;
  if (s != NULL) {
    g->mode = s->clock_mode;
    if (s->clock != NULL) {
      g->clock = *s->clock;
      g->clockp = &g->clock;
    }
    if (s->random != NULL) {
      g->random = *s->random;
      g->randomp = &g->random;
    }
  }
  *out = g;
  return 0;
}

void idgen_ulid_gen_free(idgen_ulid_gen_t *g) { free(g); }

int idgen_ulid_gen_next_at(idgen_ulid_gen_t *g, int64_t now, idgen_ulid_t *out) {
  uint8_t r[10];
  if (now < 0 || now > IDGEN_ULID_MAX_MS)
    return IDGEN_ECLOCK;
  int rc = idgen__random(g->randomp, r, sizeof r);
  if (rc < 0)
    return rc;
  uint16_t hi = (uint16_t)(r[0] << 8 | r[1]);
  uint64_t lo = get_be(r + 2, 8);

  if (idgen__lock_acquire(&g->lock))
    g->last_ms = -1; /* first use in a child after fork(): fresh random bits */
  int64_t ms = now;
  if (now <= g->last_ms) {
    /* Same millisecond, or the clock stepped back: previous plus one. */
    ms = g->last_ms;
    hi = g->last_hi;
    lo = g->last_lo + 1;
    if (lo == 0) {
      if (hi == UINT16_MAX) {
        idgen__lock_release(&g->lock);
        return IDGEN_EOVERFLOW;
      }
      hi++;
    }
  }
  g->last_ms = ms;
  g->last_hi = hi;
  g->last_lo = lo;
  idgen__lock_release(&g->lock);

  put_u48(out->bytes, (uint64_t)ms);
  out->bytes[6] = (uint8_t)(hi >> 8);
  out->bytes[7] = (uint8_t)hi;
  for (int i = 0; i < 8; i++)
    out->bytes[8 + i] = (uint8_t)(lo >> (56 - 8 * i));
  return 0;
}

int idgen_ulid_gen_next(idgen_ulid_gen_t *g, idgen_ulid_t *out) {
  int64_t ms;
  if (g->clockp != NULL) {
    int64_t ns = g->clock.now_ns(g->clock.ctx);
    ms = ns >= 0 ? ns / 1000000 : -1;
  } else {
    ms = g->mode == IDGEN_CLOCK_PRECISE ? idgen__clock_precise_ms() : idgen__clock_fast_ms();
  }
  return idgen_ulid_gen_next_at(g, ms, out);
}
