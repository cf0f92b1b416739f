/*
 * ff1.c -- FF1 (NIST SP 800-38G): the literal reference and the radix-2
 * fast path the public IDs run on (ff1.h).  AES is libcrypto's (EVP, ECB
 * mode used as the block function); nothing here is a cipher of its own.
 *
 * The fast path rests on one observation.  A round's PRF is a CBC-MAC over
 * P || Q, where P and every byte of Q but the round number and NUM(B) are
 * the same in all ten rounds and for all values of one context.  The MAC
 * state after P and Q's whole constant blocks is computed once (h, with the
 * constant head of Q's last block XORed in); a round is then R = AES(h XOR
 * [0..0, i, NUM(B)]).  For radix 2 and halves of at most 72 bits, b <= 9
 * and d <= 16, so S is R's first d bytes and y mod 2^m its low m bits.
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "ff1.h"

/* ---- shared pieces --------------------------------------------------------- */

/* AES-ECB over len bytes (a multiple of 16) in place.  EVP_Cipher, not
 * EVP_EncryptUpdate: it goes straight to the cipher, without the update's
 * buffering, which costs as much as the AES of a block.  It returns the
 * bytes done for a provider's cipher, 1 for an engine's, <= 0 on failure. */
static int aes_ecb(EVP_CIPHER_CTX *c, uint8_t *buf, size_t len) {
  return EVP_Cipher(c, buf, buf, (unsigned)len) > 0 ? 0 : IDGEN_ENOMEM;
}

/* The CBC-MAC (zero IV), fed byte by byte: y holds the running state. */
typedef struct mac {
  EVP_CIPHER_CTX *c;
  uint8_t y[16];
  size_t fill;
  int rc;
} mac_t;

static void mac_put(mac_t *m, const uint8_t *p, size_t len) {
  for (size_t i = 0; i < len; i++) {
    m->y[m->fill++] ^= p[i];
    if (m->fill == 16) {
      if (aes_ecb(m->c, m->y, 16) != 0)
        m->rc = IDGEN_ENOMEM;
      m->fill = 0;
    }
  }
}

static void mac_byte(mac_t *m, uint8_t v) { mac_put(m, &v, 1); }

/* P of Algorithm 7 step 5. */
static void make_p(uint8_t p[16], unsigned radix, size_t u, size_t n, size_t t) {
  p[0] = 1;
  p[1] = 2;
  p[2] = 1;
  p[3] = (uint8_t)(radix >> 16);
  p[4] = (uint8_t)(radix >> 8);
  p[5] = (uint8_t)radix;
  p[6] = 10;
  p[7] = (uint8_t)(u % 256);
  for (int i = 0; i < 4; i++) {
    p[8 + i] = (uint8_t)(n >> (24 - 8 * i));
    p[12 + i] = (uint8_t)(t >> (24 - 8 * i));
  }
}

/* d of step 4 from b. */
static unsigned d_of(unsigned b) { return 4 * ((b + 3) / 4) + 4; }

/* Padding of Q: (-t-b-1) mod 16. */
static size_t pad_of(size_t t, unsigned b) { return (16 - (t + b + 1) % 16) % 16; }

/* ---- the reference ----------------------------------------------------------- */

static const EVP_CIPHER *aes_for(size_t keylen) {
  switch (keylen) {
  case 16:
    return EVP_aes_128_ecb();
  case 24:
    return EVP_aes_192_ecb();
  case 32:
    return EVP_aes_256_ecb();
  default:
    return NULL;
  }
}

/* radix^e into *out; -1 if it does not fit 128 bits. */
static int upow(unsigned radix, size_t e, idgen_u128 *out) {
  idgen_u128 r = 1;
  for (size_t i = 0; i < e; i++) {
    if (r > ~(idgen_u128)0 / radix)
      return -1;
    r *= radix;
  }
  *out = r;
  return 0;
}

static unsigned bitlen(idgen_u128 x) {
  unsigned k = 0;
  while (x != 0) {
    k++;
    x >>= 1;
  }
  return k;
}

/* (a + y) mod M and (a - y) mod M for a, y < M (the sum may carry out). */
static idgen_u128 addmod(idgen_u128 a, idgen_u128 y, idgen_u128 mod) {
  idgen_u128 s = a + y;
  return (s < a || s >= mod) ? s - mod : s;
}

static idgen_u128 submod(idgen_u128 a, idgen_u128 y, idgen_u128 mod) {
  return a >= y ? a - y : a + (mod - y);
}

/* NUM(s[0..len)) mod M, bit by bit: s may be longer than 16 bytes. */
static idgen_u128 num_mod(const uint8_t *s, size_t len, idgen_u128 mod) {
  idgen_u128 r = 0;
  for (size_t i = 0; i < len; i++)
    for (int k = 7; k >= 0; k--) {
      int carry = (int)(r >> 127);
      r = (r << 1) | ((s[i] >> k) & 1);
      if (carry || r >= mod)
        r -= mod;
    }
  return r;
}

/* S of step 6.iii: d bytes from R. */
static int ref_s(EVP_CIPHER_CTX *c, const uint8_t r[16], uint8_t *s, unsigned d) {
  memcpy(s, r, d < 16 ? d : 16);
  for (unsigned j = 1; 16 * j < d; j++) {
    uint8_t blk[16];
    for (int k = 0; k < 16; k++)
      blk[k] = r[k];
    for (int k = 0; k < 4; k++)
      blk[15 - k] ^= (uint8_t)(j >> (8 * k));
    if (aes_ecb(c, blk, 16) != 0)
      return IDGEN_ENOMEM;
    size_t take = d - 16 * j < 16 ? d - 16 * j : 16;
    memcpy(s + 16 * j, blk, take);
  }
  return 0;
}

typedef struct ref_params {
  unsigned radix, b, d;
  size_t n, u, v, t;
  const uint8_t *tweak;
  uint8_t p[16];
} ref_params_t;

/* y mod radix^m of round i over NUM(x) (B encrypting, A decrypting). */
static int ref_round(EVP_CIPHER_CTX *c, const ref_params_t *rp, unsigned i, idgen_u128 x,
                     idgen_u128 mod, idgen_u128 *y) {
  mac_t m = {c, {0}, 0, 0};
  mac_put(&m, rp->p, 16);
  mac_put(&m, rp->tweak, rp->t);
  for (size_t k = pad_of(rp->t, rp->b); k > 0; k--)
    mac_byte(&m, 0);
  mac_byte(&m, (uint8_t)i);
  for (unsigned k = rp->b; k > 0; k--)
    mac_byte(&m, k > 16 ? 0 : (uint8_t)(x >> (8 * (k - 1))));
  if (m.rc != 0 || m.fill != 0)
    return IDGEN_ENOMEM;
  uint8_t s[32];
  int rc = ref_s(c, m.y, s, rp->d);
  if (rc != 0)
    return rc;
  *y = num_mod(s, rp->d, mod);
  return 0;
}

static int ref_rounds(EVP_CIPHER_CTX *c, const ref_params_t *rp, idgen_u128 *a, idgen_u128 *b,
                      int decrypt) {
  for (unsigned r = 0; r < 10; r++) {
    unsigned i = decrypt ? 9 - r : r;
    idgen_u128 mod = 1, y;
    (void)upow(rp->radix, (i & 1) ? rp->v : rp->u, &mod); /* fits: radix^v did */
    int rc = ref_round(c, rp, i, decrypt ? *a : *b, mod, &y);
    if (rc != 0)
      return rc;
    if (!decrypt) {
      idgen_u128 cc = addmod(*a, y, mod);
      *a = *b;
      *b = cc;
    } else {
      idgen_u128 cc = submod(*b, y, mod);
      *b = *a;
      *a = cc;
    }
  }
  return 0;
}

int idgen__ff1_ref(const uint8_t *key, size_t keylen, unsigned radix, const uint8_t *tweak,
                   size_t t, const uint8_t *in, size_t n, uint8_t *out, int decrypt) {
  const EVP_CIPHER *cipher = aes_for(keylen);
  if (cipher == NULL || radix < 2 || radix > 256 || n == 0 || n > 0xffffffffu || t > 0xffffffffu ||
      (t > 0 && tweak == NULL))
    return IDGEN_EINVAL;
  for (size_t i = 0; i < n; i++)
    if (in[i] >= radix)
      return IDGEN_EINVAL;
  ref_params_t rp = {.radix = radix, .n = n, .u = n / 2, .v = n - n / 2, .t = t, .tweak = tweak};
  idgen_u128 rv;
  if (upow(radix, rp.v, &rv) != 0)
    return IDGEN_ERANGE;
  rp.b = (bitlen(rv - 1) + 7) / 8;
  rp.d = d_of(rp.b);
  make_p(rp.p, radix, rp.u, n, t);

  idgen_u128 a = 0, b = 0;
  for (size_t i = 0; i < rp.u; i++)
    a = a * radix + in[i];
  for (size_t i = rp.u; i < n; i++)
    b = b * radix + in[i];

  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  int rc = IDGEN_ENOMEM;
  if (c == NULL || EVP_EncryptInit_ex(c, cipher, NULL, key, NULL) != 1 ||
      EVP_CIPHER_CTX_set_padding(c, 0) != 1)
    goto out;
  rc = ref_rounds(c, &rp, &a, &b, decrypt);
  if (rc != 0)
    goto out;
  for (size_t i = rp.u; i > 0; i--, a /= radix)
    out[i - 1] = (uint8_t)(a % radix);
  for (size_t i = n; i > rp.u; i--, b /= radix)
    out[i - 1] = (uint8_t)(b % radix);
out:
  EVP_CIPHER_CTX_free(c);
  return rc;
}

/* ---- the fast radix-2 path --------------------------------------------------- */

static inline idgen_u128 mask_of(unsigned m) { return ((idgen_u128)1 << m) - 1; }

static inline uint64_t be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

static inline void put_be64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}

void *idgen__ff1_ecb_new(const uint8_t key[32]) {
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
  if (c == NULL)
    return NULL;
  if (EVP_EncryptInit_ex(c, EVP_aes_256_ecb(), NULL, key, NULL) != 1 ||
      EVP_CIPHER_CTX_set_padding(c, 0) != 1) {
    EVP_CIPHER_CTX_free(c);
    return NULL;
  }
  return c;
}

void idgen__ff1_ecb_free(void *ecb) { EVP_CIPHER_CTX_free(ecb); }

int idgen__ff1_init(idgen_ff1_t *f, void *ecb, unsigned n, const uint8_t *tweak, size_t t) {
  if (n < 1 || n > IDGEN_FF1_MAX_BITS || ecb == NULL || t > 0xffffffffu || (t > 0 && !tweak))
    return IDGEN_EINVAL;
  memset(f, 0, sizeof *f);
  f->ecb = ecb;
  f->n = n;
  f->u = n / 2;
  f->v = n - f->u;
  f->b = (f->v + 7) / 8;
  f->d = d_of(f->b);
  uint8_t p[16];
  make_p(p, 2, f->u, n, t);
  /* Q = T || 0^pad || [i] || NUM(B): q bytes, all constant but the last b + 1. */
  size_t q = t + pad_of(t, f->b) + 1 + f->b;
  mac_t m = {ecb, {0}, 0, 0};
  mac_put(&m, p, 16);
  for (size_t k = 0; k < q - 16; k++)
    mac_byte(&m, k < t ? tweak[k] : 0);
  if (m.rc != 0 || m.fill != 0)
    return IDGEN_ENOMEM;
  for (size_t k = 0; k < 15 - f->b; k++) {
    size_t at = q - 16 + k;
    m.y[k] ^= at < t ? tweak[at] : 0;
  }
  f->h64[0] = be64(m.y);
  f->h64[1] = be64(m.y + 8);
  for (unsigned i = 0; i < 10; i++)
    f->qi[i] = (idgen_u128)i << (8 * f->b);
  f->mask_u = mask_of(f->u);
  f->mask_v = mask_of(f->v);
  return 0;
}

/* The round's block: h XOR the last 16 bytes of Q, which read as one
 * big-endian number are i << 8b | NUM(x) (f->qi[i] | x). */
static inline void fast_block(const idgen_ff1_t *f, unsigned i, idgen_u128 x, uint8_t blk[16]) {
  idgen_u128 q = f->qi[i] | x;
  put_be64(blk, f->h64[0] ^ (uint64_t)(q >> 64));
  put_be64(blk + 8, f->h64[1] ^ (uint64_t)q);
}

/* NUM(S) mod 2^m, m <= 72: the low bits of R's first d bytes, of which the
 * last 9 suffice (d is 8, 12 or 16; with d = 8 m is at most 32). */
static inline idgen_u128 fast_y(const idgen_ff1_t *f, const uint8_t r[16], idgen_u128 mask) {
  idgen_u128 y = be64(r + f->d - 8);
  if (f->d > 8)
    y |= (idgen_u128)r[f->d - 9] << 64;
  return y & mask;
}

int idgen__ff1_encrypt(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b) {
  uint8_t blk[16];
  idgen_u128 x = *a, z = *b;
  for (unsigned i = 0; i < 10; i++) {
    idgen_u128 mask = (i & 1) ? f->mask_v : f->mask_u;
    fast_block(f, i, z, blk);
    if (aes_ecb(f->ecb, blk, 16) != 0)
      return IDGEN_ENOMEM;
    idgen_u128 c = (x + fast_y(f, blk, mask)) & mask;
    x = z;
    z = c;
  }
  *a = x;
  *b = z;
  return 0;
}

int idgen__ff1_decrypt(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b) {
  uint8_t blk[16];
  idgen_u128 x = *a, z = *b;
  for (unsigned i = 10; i-- > 0;) {
    idgen_u128 mask = (i & 1) ? f->mask_v : f->mask_u;
    fast_block(f, i, x, blk);
    if (aes_ecb(f->ecb, blk, 16) != 0)
      return IDGEN_ENOMEM;
    idgen_u128 c = (z - fast_y(f, blk, mask)) & mask;
    z = x;
    x = c;
  }
  *a = x;
  *b = z;
  return 0;
}

/* Up to IDGEN_FF1_BATCH values: each round's blocks in one AES call. */
static int batch_enc(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b, size_t cnt) {
  uint8_t blk[IDGEN_FF1_BATCH][16];
  for (unsigned i = 0; i < 10; i++) {
    idgen_u128 mask = (i & 1) ? f->mask_v : f->mask_u;
    for (size_t k = 0; k < cnt; k++)
      fast_block(f, i, b[k], blk[k]);
    if (aes_ecb(f->ecb, &blk[0][0], 16 * cnt) != 0)
      return IDGEN_ENOMEM;
    for (size_t k = 0; k < cnt; k++) {
      idgen_u128 c = (a[k] + fast_y(f, blk[k], mask)) & mask;
      a[k] = b[k];
      b[k] = c;
    }
  }
  return 0;
}

static int batch_dec(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b, size_t cnt) {
  uint8_t blk[IDGEN_FF1_BATCH][16];
  for (unsigned i = 10; i-- > 0;) {
    idgen_u128 mask = (i & 1) ? f->mask_v : f->mask_u;
    for (size_t k = 0; k < cnt; k++)
      fast_block(f, i, a[k], blk[k]);
    if (aes_ecb(f->ecb, &blk[0][0], 16 * cnt) != 0)
      return IDGEN_ENOMEM;
    for (size_t k = 0; k < cnt; k++) {
      idgen_u128 c = (b[k] - fast_y(f, blk[k], mask)) & mask;
      b[k] = a[k];
      a[k] = c;
    }
  }
  return 0;
}

int idgen__ff1_batch(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b, size_t cnt, int decrypt) {
  for (size_t k = 0; k < cnt; k += IDGEN_FF1_BATCH) {
    size_t c = cnt - k < IDGEN_FF1_BATCH ? cnt - k : IDGEN_FF1_BATCH;
    int rc = decrypt ? batch_dec(f, a + k, b + k, c) : batch_enc(f, a + k, b + k, c);
    if (rc != 0)
      return rc;
  }
  return 0;
}
