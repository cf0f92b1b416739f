/*
 * public.c -- public IDs (idgen.h, "Public IDs"; docs/DESIGN.md): a keyed
 * permutation of an ID, FF1 on AES-256 in radix 2 over the ID's exact bit
 * length (ff1.c), in integer and text forms.
 *
 * Every form has its own FF1 tweak, bytes [form, kind, bits, key version]
 * followed, for text forms, by the prefix: so a form, a kind, a layout's bit
 * count, a key version or a prefix other than the one a public ID was made
 * for unmaps to noise, never to the ID.
 *
 *   integer, Snowflake   FF1 over the layout's N bits
 *   integer, ULID        FF1 over 128 bits
 *   integer, UUIDv7      FF1 over the 122 bits besides version and variant,
 *                        shown as a UUID of version 4
 *   text, Snowflake      FF1 over 80 bits, the ID shifted up by 16: the low
 *                        16 bits of the result unmapped must be zero and the
 *                        ID below 2^N (the check)
 *   text, ULID/UUIDv7    FF1 over 144 bits, the 128-bit ID shifted up by 16
 *                        (and a UUIDv7 must come back a UUIDv7)
 * Text: [prefix_] V BODY, V the key version in TypeID's alphabet ('0' is
 * version 1), BODY lower-case Crockford base32 of the 80 or 144 bits (16 or
 * 29 characters; the first of 29 holds 4 bits).
 *
 * A codec keeps one AES context per key version (text forms are read back
 * with the version they name) and a precomputed FF1 state per form, so it is
 * used by one thread at a time.
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "ff1.h"
#include "public_int.h"

enum { FORM_INT = 1, FORM_TEXT = 2 };
#define TEXT64_BITS 80
#define TEXT128_BITS 144
#define BODY64 (IDGEN_PUBLIC_TEXT64_LEN - 1)
#define BODY128 (IDGEN_PUBLIC_TEXT128_LEN - 1)

static const char alphabet[33] = "0123456789abcdefghjkmnpqrstvwxyz";

typedef struct pub_version {
  unsigned version;
  void *ecb;        /* AES-256-ECB with this version's key */
  idgen_ff1_t text; /* the text form's FF1 */
} pub_version_t;

struct idgen_public {
  idgen_public_kind_t kind;
  unsigned bits; /* the integer form's: N, 128 or 122 */
  char prefix[IDGEN_PUBLIC_PREFIX_MAX];
  size_t plen;
  idgen_ff1_t intf; /* the integer form's FF1, with the integer version's key */
  size_t newest;    /* index in ver of the newest version */
  size_t nver;
  pub_version_t ver[IDGEN_PUBLIC_VERSION_MAX];
};

static inline idgen_u128 mask_of(unsigned m) { return ((idgen_u128)1 << m) - 1; }

/* ---- making a codec -------------------------------------------------------- */

int idgen_public_prefix_check(const char *prefix, char *err, size_t errlen) {
  if (prefix == NULL || prefix[0] == '\0')
    return 0;
  size_t n = strlen(prefix);
  if (n > IDGEN_PUBLIC_PREFIX_MAX - 1)
    return idgen__err(err, errlen, IDGEN_EINVAL, "prefix: %zu characters, more than %d", n,
                      IDGEN_PUBLIC_PREFIX_MAX - 1);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)prefix[i];
    if (!((c >= 'a' && c <= 'z') || c == '_')) {
      if (c > 0x20 && c < 0x7f)
        return idgen__err(err, errlen, IDGEN_EINVAL,
                          "prefix: character %zu ('%c') is not a to z or '_'", i + 1, c);
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "prefix: character %zu (byte 0x%02x) is not a to z or '_'", i + 1, c);
    }
  }
  if (prefix[0] == '_' || prefix[n - 1] == '_')
    return idgen__err(err, errlen, IDGEN_EINVAL, "prefix: it must %s with a letter, not '_'",
                      prefix[0] == '_' ? "start" : "end");
  return 0;
}

/* The tweak [form, kind, bits, version, prefix...] into t: its length. */
static size_t make_tweak(uint8_t *t, int form, const idgen_public_t *p, unsigned version) {
  t[0] = (uint8_t)form;
  t[1] = (uint8_t)p->kind;
  t[2] = (uint8_t)p->bits;
  t[3] = (uint8_t)version;
  if (form == FORM_INT)
    return 4;
  memcpy(t + 4, p->prefix, p->plen);
  return 4 + p->plen;
}

/* The AES contexts wipe their key schedules; the MAC states, derived from
 * the keys, are wiped here. */
static void codec_free(idgen_public_t *p) {
  for (size_t i = 0; i < p->nver; i++)
    idgen__ff1_ecb_free(p->ver[i].ecb);
  OPENSSL_cleanse(p, sizeof *p);
  free(p);
}

void idgen_public_free(idgen_public_t *p) {
  if (p != NULL)
    codec_free(p);
}

static int settings_check(idgen_public_t *p, const idgen_public_settings_t *s, char *err,
                          size_t errlen) {
  switch (s->kind) {
  case IDGEN_PUBLIC_SNOWFLAKE:
    if (s->bits > 64)
      return idgen__err(err, errlen, IDGEN_EINVAL, "public: bits %u is outside 20..64", s->bits);
    /* FF1's smallest domain (SP 800-38G Rev. 1): a million values. */
    if (s->bits != 0 && s->bits < 20)
      return idgen__err(err, errlen, IDGEN_ERANGE,
                        "public: a layout of %u bits is too small to hide (FF1 needs 20 bits "
                        "or more: a permutation of fewer values is learned from its pairs)",
                        s->bits);
    p->bits = s->bits == 0 ? 64 : s->bits;
    break;
  case IDGEN_PUBLIC_ULID:
  case IDGEN_PUBLIC_UUID7:
    if (s->bits != 0)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "public: bits is for Snowflake IDs only (give 0, not %u)", s->bits);
    p->bits = s->kind == IDGEN_PUBLIC_ULID ? 128 : 122;
    break;
  default:
    return idgen__err(err, errlen, IDGEN_EINVAL, "public: kind %d is not a kind of ID",
                      (int)s->kind);
  }
  p->kind = s->kind;
  int rc = idgen_public_prefix_check(s->prefix, err, errlen);
  if (rc != 0)
    return rc;
  p->plen = s->prefix != NULL ? strlen(s->prefix) : 0;
  memcpy(p->prefix, s->prefix != NULL ? s->prefix : "", p->plen);
  return 0;
}

int idgen_public_new(idgen_public_t **out, const idgen_public_keys_t *keys,
                     const idgen_public_settings_t *s, char *err, size_t errlen) {
  if (out == NULL || keys == NULL || s == NULL || keys->n == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public: NULL argument or no keys");
  *out = NULL;
  idgen_public_t *p = calloc(1, sizeof *p);
  if (p == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "public: out of memory");
  int rc = settings_check(p, s, err, errlen);
  if (rc != 0)
    goto fail;
  unsigned want = s->version != 0 ? s->version : keys->version[keys->n - 1];
  size_t intv = keys->n;
  uint8_t tweak[4 + IDGEN_PUBLIC_PREFIX_MAX];
  for (size_t i = 0; i < keys->n; i++) {
    pub_version_t *v = &p->ver[i];
    v->version = keys->version[i];
    if ((v->ecb = idgen__ff1_ecb_new(keys->key[i])) == NULL) {
      rc = idgen__err(err, errlen, IDGEN_ENOMEM, "public: AES could not be set up");
      goto fail;
    }
    p->nver = i + 1;
    size_t t = make_tweak(tweak, FORM_TEXT, p, v->version);
    unsigned n = p->kind == IDGEN_PUBLIC_SNOWFLAKE ? TEXT64_BITS : TEXT128_BITS;
    if ((rc = idgen__ff1_init(&v->text, v->ecb, n, tweak, t)) != 0) {
      rc = idgen__err(err, errlen, IDGEN_ENOMEM, "public: AES could not be set up");
      goto fail;
    }
    if (v->version == want)
      intv = i;
  }
  p->newest = keys->n - 1;
  if (intv == keys->n) {
    char held[160];
    idgen__public_versions_text(keys, held, sizeof held);
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "public: key version %u is not held (held: %s)",
                    want, held);
    goto fail;
  }
  size_t t = make_tweak(tweak, FORM_INT, p, want);
  if (idgen__ff1_init(&p->intf, p->ver[intv].ecb, p->bits, tweak, t) != 0) {
    rc = idgen__err(err, errlen, IDGEN_ENOMEM, "public: AES could not be set up");
    goto fail;
  }
  *out = p;
  return 0;
fail:
  codec_free(p);
  return rc;
}

/* ---- integer forms --------------------------------------------------------- */

/* x of f->n bits through FF1 either way. */
static int ff1_value(const idgen_ff1_t *f, idgen_u128 *x, int decrypt) {
  idgen_u128 a = *x >> f->v, b = *x & mask_of(f->v);
  int rc = decrypt ? idgen__ff1_decrypt(f, &a, &b) : idgen__ff1_encrypt(f, &a, &b);
  *x = a << f->v | b;
  return rc;
}

static int map64(idgen_public_t *p, uint64_t in, uint64_t *out, int decrypt) {
  if (p == NULL || out == NULL || p->kind != IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  if (p->bits < 64 && in >> p->bits != 0)
    return IDGEN_ERANGE;
  idgen_u128 x = in;
  int rc = ff1_value(&p->intf, &x, decrypt);
  if (rc == 0)
    *out = (uint64_t)x;
  return rc;
}

int idgen_public_map64(idgen_public_t *p, uint64_t id, uint64_t *pub) {
  return map64(p, id, pub, 0);
}

int idgen_public_unmap64(idgen_public_t *p, uint64_t pub, uint64_t *id) {
  return map64(p, pub, id, 1);
}

static int map64_batch(idgen_public_t *p, const uint64_t *in, uint64_t *out, size_t n,
                       int decrypt) {
  if (p == NULL || (n > 0 && (in == NULL || out == NULL)) || p->kind != IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (p->bits < 64 && in[i] >> p->bits != 0)
      return IDGEN_ERANGE;
  const idgen_ff1_t *f = &p->intf;
  idgen_u128 a[IDGEN_FF1_BATCH], b[IDGEN_FF1_BATCH];
  for (size_t at = 0; at < n; at += IDGEN_FF1_BATCH) {
    size_t cnt = n - at < IDGEN_FF1_BATCH ? n - at : IDGEN_FF1_BATCH;
    for (size_t k = 0; k < cnt; k++) {
      a[k] = in[at + k] >> f->v;
      b[k] = in[at + k] & (uint64_t)mask_of(f->v);
    }
    int rc = idgen__ff1_batch(f, a, b, cnt, decrypt);
    if (rc != 0)
      return rc;
    for (size_t k = 0; k < cnt; k++)
      out[at + k] = (uint64_t)(a[k] << f->v | b[k]);
  }
  return 0;
}

int idgen_public_map64_batch(idgen_public_t *p, const uint64_t *ids, uint64_t *pubs, size_t n) {
  return map64_batch(p, ids, pubs, n, 0);
}

int idgen_public_unmap64_batch(idgen_public_t *p, const uint64_t *pubs, uint64_t *ids, size_t n) {
  return map64_batch(p, pubs, ids, n, 1);
}

static idgen_u128 load128(const uint8_t b[16]) {
  idgen_u128 x = 0;
  for (int i = 0; i < 16; i++)
    x = x << 8 | b[i];
  return x;
}

static void store128(uint8_t b[16], idgen_u128 x) {
  for (int i = 15; i >= 0; i--, x >>= 8)
    b[i] = (uint8_t)x;
}

static int is_uuid(const uint8_t b[16], unsigned version) {
  return (b[6] >> 4) == version && (b[8] & 0xc0) == 0x80;
}

/* A UUID's 122 bits besides version and variant, and back. */
static idgen_u128 uuid_bits(idgen_u128 u) {
  return (u >> 80) << 74 | ((u >> 64) & 0xfff) << 62 | (u & mask_of(62));
}

static idgen_u128 uuid_from_bits(idgen_u128 x, unsigned version) {
  return (x >> 74) << 80 | (idgen_u128)version << 76 | ((x >> 62) & 0xfff) << 64 |
         (idgen_u128)2 << 62 | (x & mask_of(62));
}

/* The integer form's input for one 128-bit ID: IDGEN_EPARSE for a UUID of
 * another version than the form takes. */
static int in128(const idgen_public_t *p, const uint8_t v[16], int decrypt, idgen_u128 *x) {
  if (p->kind == IDGEN_PUBLIC_ULID) {
    *x = load128(v);
    return 0;
  }
  if (!is_uuid(v, decrypt ? 4 : 7))
    return IDGEN_EPARSE;
  *x = uuid_bits(load128(v));
  return 0;
}

static void out128(const idgen_public_t *p, idgen_u128 x, int decrypt, uint8_t v[16]) {
  store128(v, p->kind == IDGEN_PUBLIC_ULID ? x : uuid_from_bits(x, decrypt ? 7 : 4));
}

static int map128(idgen_public_t *p, const uint8_t in[16], uint8_t out[16], int decrypt) {
  if (p == NULL || in == NULL || out == NULL || p->kind == IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  idgen_u128 x;
  int rc = in128(p, in, decrypt, &x);
  if (rc == 0)
    rc = ff1_value(&p->intf, &x, decrypt);
  if (rc == 0)
    out128(p, x, decrypt, out);
  return rc;
}

int idgen_public_map128(idgen_public_t *p, const uint8_t id[16], uint8_t pub[16]) {
  return map128(p, id, pub, 0);
}

int idgen_public_unmap128(idgen_public_t *p, const uint8_t pub[16], uint8_t id[16]) {
  return map128(p, pub, id, 1);
}

static int map128_batch(idgen_public_t *p, const uint8_t (*in)[16], uint8_t (*out)[16], size_t n,
                        int decrypt) {
  if (p == NULL || (n > 0 && (in == NULL || out == NULL)) || p->kind == IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  idgen_u128 x, a[IDGEN_FF1_BATCH], b[IDGEN_FF1_BATCH];
  for (size_t i = 0; i < n; i++)
    if (in128(p, in[i], decrypt, &x) != 0)
      return IDGEN_EPARSE;
  const idgen_ff1_t *f = &p->intf;
  for (size_t at = 0; at < n; at += IDGEN_FF1_BATCH) {
    size_t cnt = n - at < IDGEN_FF1_BATCH ? n - at : IDGEN_FF1_BATCH;
    for (size_t k = 0; k < cnt; k++) {
      (void)in128(p, in[at + k], decrypt, &x);
      a[k] = x >> f->v;
      b[k] = x & mask_of(f->v);
    }
    int rc = idgen__ff1_batch(f, a, b, cnt, decrypt);
    if (rc != 0)
      return rc;
    for (size_t k = 0; k < cnt; k++)
      out128(p, a[k] << f->v | b[k], decrypt, out[at + k]);
  }
  return 0;
}

int idgen_public_map128_batch(idgen_public_t *p, const uint8_t (*ids)[16], uint8_t (*pubs)[16],
                              size_t n) {
  return map128_batch(p, ids, pubs, n, 0);
}

int idgen_public_unmap128_batch(idgen_public_t *p, const uint8_t (*pubs)[16], uint8_t (*ids)[16],
                                size_t n) {
  return map128_batch(p, pubs, ids, n, 1);
}

/* ---- text forms ------------------------------------------------------------ */

/* The length of the codec's text forms, without a NUL. */
static size_t text_len(const idgen_public_t *p) {
  size_t body =
      p->kind == IDGEN_PUBLIC_SNOWFLAKE ? IDGEN_PUBLIC_TEXT64_LEN : IDGEN_PUBLIC_TEXT128_LEN;
  return (p->plen ? p->plen + 1 : 0) + body;
}

/* Puts [prefix_]V and the body of hi:lo (lo of lobits bits) in nchars at w,
 * without a NUL. */
static void text_put(const idgen_public_t *p, unsigned version, idgen_u128 hi, idgen_u128 lo,
                     unsigned lobits, size_t nchars, char *w) {
  if (p->plen) {
    memcpy(w, p->prefix, p->plen);
    w += p->plen;
    *w++ = '_';
  }
  *w++ = alphabet[version - 1];
  if (lobits == 40) { /* 80 bits: each half is 8 characters, in 64-bit words */
    uint64_t h = (uint64_t)hi, l = (uint64_t)lo;
    for (size_t k = 8; k-- > 0; h >>= 5, l >>= 5) {
      w[k] = alphabet[h & 31];
      w[8 + k] = alphabet[l & 31];
    }
    return;
  }
  for (size_t k = nchars; k-- > 0;) {
    w[k] = alphabet[(unsigned)(lo & 31)];
    lo = (lo >> 5) | (hi & 31) << (lobits - 5);
    hi >>= 5;
  }
}

/* The same into buf[buflen], NUL ended: the length, or IDGEN_ERANGE. */
static int text_write(const idgen_public_t *p, unsigned version, idgen_u128 hi, idgen_u128 lo,
                      unsigned lobits, size_t nchars, char *buf, size_t buflen) {
  size_t len = text_len(p);
  if (buf == NULL || buflen < len + 1)
    return IDGEN_ERANGE;
  text_put(p, version, hi, lo, lobits, nchars, buf);
  buf[len] = '\0';
  return (int)len;
}

int idgen_public_text_len(const idgen_public_t *p) {
  return p != NULL ? (int)text_len(p) : IDGEN_EINVAL;
}

int idgen_public_format64(idgen_public_t *p, uint64_t id, char *buf, size_t buflen) {
  if (p == NULL || p->kind != IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  if (p->bits < 64 && id >> p->bits != 0)
    return IDGEN_ERANGE;
  const pub_version_t *v = &p->ver[p->newest];
  idgen_u128 a = id >> 24, b = (idgen_u128)(id & 0xffffff) << 16;
  int rc = idgen__ff1_encrypt(&v->text, &a, &b);
  if (rc != 0)
    return rc;
  return text_write(p, v->version, a, b, TEXT64_BITS / 2, BODY64, buf, buflen);
}

int idgen_public_format128(idgen_public_t *p, const uint8_t id[16], char *buf, size_t buflen) {
  if (p == NULL || id == NULL || p->kind == IDGEN_PUBLIC_SNOWFLAKE)
    return IDGEN_EINVAL;
  if (p->kind == IDGEN_PUBLIC_UUID7 && !is_uuid(id, 7))
    return IDGEN_EPARSE;
  const pub_version_t *v = &p->ver[p->newest];
  idgen_u128 x = load128(id), a = x >> 56, b = (x & mask_of(56)) << 16;
  int rc = idgen__ff1_encrypt(&v->text, &a, &b);
  if (rc != 0)
    return rc;
  return text_write(p, v->version, a, b, TEXT128_BITS / 2, BODY128, buf, buflen);
}

/* Room for n texts of len characters in buflen: n * len, checked. */
static int batch_room(size_t n, size_t len, size_t buflen) {
  return n <= buflen / len ? 0 : IDGEN_ERANGE;
}

int idgen_public_format64_batch(idgen_public_t *p, const uint64_t *ids, size_t n, char *buf,
                                size_t buflen) {
  if (p == NULL || p->kind != IDGEN_PUBLIC_SNOWFLAKE || (n > 0 && (ids == NULL || buf == NULL)))
    return IDGEN_EINVAL;
  size_t len = text_len(p);
  if (batch_room(n, len, buflen) != 0)
    return IDGEN_ERANGE;
  for (size_t i = 0; i < n; i++)
    if (p->bits < 64 && ids[i] >> p->bits != 0)
      return IDGEN_ERANGE;
  const pub_version_t *v = &p->ver[p->newest];
  idgen_u128 a[IDGEN_FF1_BATCH], b[IDGEN_FF1_BATCH];
  for (size_t at = 0; at < n; at += IDGEN_FF1_BATCH) {
    size_t cnt = n - at < IDGEN_FF1_BATCH ? n - at : IDGEN_FF1_BATCH;
    for (size_t k = 0; k < cnt; k++) {
      a[k] = ids[at + k] >> 24;
      b[k] = (idgen_u128)(ids[at + k] & 0xffffff) << 16;
    }
    int rc = idgen__ff1_batch(&v->text, a, b, cnt, 0);
    if (rc != 0)
      return rc;
    for (size_t k = 0; k < cnt; k++)
      text_put(p, v->version, a[k], b[k], TEXT64_BITS / 2, BODY64, buf + (at + k) * len);
  }
  return 0;
}

int idgen_public_format128_batch(idgen_public_t *p, const uint8_t (*ids)[16], size_t n, char *buf,
                                 size_t buflen) {
  if (p == NULL || p->kind == IDGEN_PUBLIC_SNOWFLAKE || (n > 0 && (ids == NULL || buf == NULL)))
    return IDGEN_EINVAL;
  size_t len = text_len(p);
  if (batch_room(n, len, buflen) != 0)
    return IDGEN_ERANGE;
  if (p->kind == IDGEN_PUBLIC_UUID7)
    for (size_t i = 0; i < n; i++)
      if (!is_uuid(ids[i], 7))
        return IDGEN_EPARSE;
  const pub_version_t *v = &p->ver[p->newest];
  idgen_u128 a[IDGEN_FF1_BATCH], b[IDGEN_FF1_BATCH];
  for (size_t at = 0; at < n; at += IDGEN_FF1_BATCH) {
    size_t cnt = n - at < IDGEN_FF1_BATCH ? n - at : IDGEN_FF1_BATCH;
    for (size_t k = 0; k < cnt; k++) {
      idgen_u128 x = load128(ids[at + k]);
      a[k] = x >> 56;
      b[k] = (x & mask_of(56)) << 16;
    }
    int rc = idgen__ff1_batch(&v->text, a, b, cnt, 0);
    if (rc != 0)
      return rc;
    for (size_t k = 0; k < cnt; k++)
      text_put(p, v->version, a[k], b[k], TEXT128_BITS / 2, BODY128, buf + (at + k) * len);
  }
  return 0;
}

static int char_value(char c) {
  const char *at = c != '\0' ? memchr(alphabet, c, 32) : NULL;
  return at != NULL ? (int)(at - alphabet) : -1;
}

/* The EPARSE for a character at column col that is not in the alphabet. */
static int bad_char(char c, size_t col, const char *what, char *err, size_t errlen) {
  unsigned char u = (unsigned char)c;
  if (u >= 'A' && u <= 'Z' && char_value((char)(u - 'A' + 'a')) >= 0)
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "public ID: column %zu: upper-case '%c' in the %s (public IDs are lower "
                      "case)",
                      col, c, what);
  if (u > 0x20 && u < 0x7f)
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "public ID: column %zu: '%c' in the %s is not in the alphabet "
                      "(0-9 and a-z without i, l, o, u)",
                      col, c, what);
  return idgen__err(err, errlen, IDGEN_EPARSE,
                    "public ID: column %zu: byte 0x%02x in the %s is not in the alphabet", col, u,
                    what);
}

/* Checks the prefix of text[len] against the codec's: *skip is where V is. */
static int text_prefix(const idgen_public_t *p, const char *text, size_t len, size_t *skip,
                       char *err, size_t errlen) {
  const char *us = NULL;
  for (size_t i = len; i > 0; i--)
    if (text[i - 1] == '_') {
      us = text + i - 1;
      break;
    }
  if (us == NULL) {
    *skip = 0;
    if (p->plen == 0)
      return 0;
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "public ID: column 1: no prefix, expected '%s_' (a '_' is missing)",
                      p->prefix);
  }
  size_t tlen = (size_t)(us - text);
  *skip = tlen + 1;
  if (p->plen == 0)
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "public ID: column %zu: '_' after a prefix, and this codec's IDs have no "
                      "prefix",
                      tlen + 1);
  if (tlen == p->plen && memcmp(text, p->prefix, tlen) == 0)
    return 0;
  size_t col = 0;
  while (col < tlen && col < p->plen && text[col] == p->prefix[col])
    col++;
  if (tlen > 0 && tlen < IDGEN_PUBLIC_PREFIX_MAX) {
    char other[IDGEN_PUBLIC_PREFIX_MAX];
    memcpy(other, text, tlen);
    other[tlen] = '\0';
    if (idgen_public_prefix_check(other, NULL, 0) == 0)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "public ID: column %zu: prefix '%s' where '%s' is expected", col + 1, other,
                        p->prefix);
  }
  return idgen__err(err, errlen, IDGEN_EPARSE,
                    "public ID: column %zu: the prefix is not '%s' (expected '%s_' then the "
                    "ID)",
                    col + 1, p->prefix, p->prefix);
}

/* Parses [prefix_]V BODY of nchars: the body's bits into hi:lo (lobits in lo)
 * and the key version's index into *vi. */
static int text_read(const idgen_public_t *p, const char *text, size_t len, size_t nchars,
                     unsigned lobits, idgen_u128 *hi, idgen_u128 *lo, size_t *vi, char *err,
                     size_t errlen) {
  if (text == NULL)
    return idgen__err(err, errlen, IDGEN_EPARSE, "public ID: no text");
  size_t skip;
  int rc = text_prefix(p, text, len, &skip, err, errlen);
  if (rc != 0)
    return rc;
  size_t rest = len - skip, other = nchars == BODY64 ? BODY128 : BODY64;
  if (rest != nchars + 1) {
    if (rest == other + 1)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "public ID: column %zu: %zu characters after the prefix are a %s "
                        "public ID, and this codec reads %s ones (%zu characters)",
                        skip + 1, rest, other == BODY64 ? "Snowflake" : "128-bit (ULID, UUID)",
                        nchars == BODY64 ? "Snowflake" : "128-bit", nchars + 1);
    return idgen__err(err, errlen, IDGEN_EPARSE,
                      "public ID: column %zu: %zu characters after the prefix, expected %zu",
                      skip + 1, rest, nchars + 1);
  }
  int vc = char_value(text[skip]);
  if (vc < 0)
    return bad_char(text[skip], skip + 1, "key version", err, errlen);
  *hi = *lo = 0;
  for (size_t k = 0; k < nchars; k++) {
    size_t at = skip + 1 + k;
    int c = char_value(text[at]);
    if (c < 0)
      return bad_char(text[at], at + 1, "ID", err, errlen);
    if (k == 0 && nchars == BODY128 && c > 15)
      return idgen__err(err, errlen, IDGEN_EPARSE,
                        "public ID: column %zu: '%c' is out of range (the first character of "
                        "the ID is at most 'f')",
                        at + 1, text[at]);
    *hi = (*hi << 5) | *lo >> (lobits - 5);
    *lo = ((*lo << 5) | (unsigned)c) & mask_of(lobits);
  }
  unsigned version = (unsigned)vc + 1;
  for (size_t i = 0; i < p->nver; i++)
    if (p->ver[i].version == version) {
      *vi = i;
      return 0;
    }
  char held[160] = "";
  size_t at = 0;
  for (size_t i = 0; i < p->nver && at < sizeof held; i++)
    at += (size_t)snprintf(held + at, sizeof held - at, "%s%u", i ? ", " : "", p->ver[i].version);
  return idgen__err(err, errlen, IDGEN_EKEY,
                    "public ID: key version %u ('%c' at column %zu) is not held (held: %s)",
                    version, text[skip], skip + 1, held);
}

int idgen_public_kind_of(const char *text, size_t len, idgen_public_kind_t kinds[2], char *err,
                         size_t errlen) {
  size_t body = 0; /* the characters after the last '_' */
  while (text != NULL && body < len && text[len - 1 - body] != '_')
    body++;
  if (body == IDGEN_PUBLIC_TEXT64_LEN) {
    if (kinds != NULL)
      kinds[0] = IDGEN_PUBLIC_SNOWFLAKE;
    return 1;
  }
  if (body == IDGEN_PUBLIC_TEXT128_LEN) {
    /* The UUIDv7 first: its check is 22 bits stricter (idgen.h). */
    if (kinds != NULL) {
      kinds[0] = IDGEN_PUBLIC_UUID7;
      kinds[1] = IDGEN_PUBLIC_ULID;
    }
    return 2;
  }
  return idgen__err(err, errlen, IDGEN_EPARSE,
                    "not a public ID: a text form has %d (Snowflake) or %d (ULID, UUIDv7) "
                    "characters after its prefix, this one %zu",
                    IDGEN_PUBLIC_TEXT64_LEN, IDGEN_PUBLIC_TEXT128_LEN, body);
}

static int check_failed(unsigned version, char *err, size_t errlen) {
  return idgen__err(err, errlen, IDGEN_EKEY,
                    "public ID: not made with key version %u for this kind and prefix (another "
                    "key, an altered text or another type's ID)",
                    version);
}

int idgen_public_parse64(idgen_public_t *p, const char *text, size_t len, uint64_t *id,
                         unsigned *version, char *err, size_t errlen) {
  if (p == NULL || id == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public ID: NULL argument");
  if (p->kind != IDGEN_PUBLIC_SNOWFLAKE)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public ID: this codec reads 128-bit IDs");
  idgen_u128 a, b;
  size_t vi;
  int rc = text_read(p, text, len, BODY64, TEXT64_BITS / 2, &a, &b, &vi, err, errlen);
  if (rc != 0)
    return rc;
  const pub_version_t *v = &p->ver[vi];
  if ((rc = idgen__ff1_decrypt(&v->text, &a, &b)) != 0)
    return idgen__err(err, errlen, rc, "public ID: AES failed");
  idgen_u128 x = a << 40 | b;
  if ((x & 0xffff) != 0 || (p->bits < 64 && (x >> 16) >> p->bits != 0))
    return check_failed(v->version, err, errlen);
  *id = (uint64_t)(x >> 16);
  if (version != NULL)
    *version = v->version;
  return 0;
}

int idgen_public_parse128(idgen_public_t *p, const char *text, size_t len, uint8_t id[16],
                          unsigned *version, char *err, size_t errlen) {
  if (p == NULL || id == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public ID: NULL argument");
  if (p->kind == IDGEN_PUBLIC_SNOWFLAKE)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public ID: this codec reads Snowflake IDs");
  idgen_u128 a, b;
  size_t vi;
  int rc = text_read(p, text, len, BODY128, TEXT128_BITS / 2, &a, &b, &vi, err, errlen);
  if (rc != 0)
    return rc;
  const pub_version_t *v = &p->ver[vi];
  if ((rc = idgen__ff1_decrypt(&v->text, &a, &b)) != 0)
    return idgen__err(err, errlen, rc, "public ID: AES failed");
  if ((b & 0xffff) != 0)
    return check_failed(v->version, err, errlen);
  uint8_t out[16];
  store128(out, a << 56 | b >> 16);
  if (p->kind == IDGEN_PUBLIC_UUID7 && !is_uuid(out, 7))
    return check_failed(v->version, err, errlen);
  memcpy(id, out, 16);
  if (version != NULL)
    *version = v->version;
  return 0;
}
