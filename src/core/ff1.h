/*
 * ff1.h -- FF1 (NIST SP 800-38G, Algorithms 7 and 8) on AES from libcrypto,
 * private to the core (public.c uses it; tests and fuzz targets may).
 *
 * Two ways in:
 *   idgen__ff1_ref   the literal algorithm: any radix 2..256, any tweak,
 *                    AES-128/192/256 by key length, numerals held in
 *                    unsigned __int128.  Slow (it sets up AES per call); it
 *                    is the known-answer reference and the fast path's oracle.
 *   idgen__ff1_*     radix 2 only, n of 1..144 bits, one tweak fixed when the
 *                    context is made: the CBC-MAC over P and the tweak's
 *                    whole blocks is computed once, so each of the 10 rounds
 *                    is one AES block.  The batch forms run a round of up to
 *                    IDGEN_FF1_BATCH values in one EVP_EncryptUpdate.
 * A value of n bits is given as its two halves, as FF1 splits it: a, the
 * high u = n / 2 bits, and b, the low v = n - u bits.
 */
#ifndef IDGEN_FF1_H
#define IDGEN_FF1_H

#include <stddef.h>
#include <stdint.h>

typedef unsigned __int128 idgen_u128;

#define IDGEN_FF1_MAX_BITS 144 /* halves of at most 72 bits */
#define IDGEN_FF1_BATCH 64     /* values per EVP_EncryptUpdate */

/* One FF1 on digits in[n] (each below radix) into out[n] (may be in), with
 * key[keylen] (16, 24 or 32 bytes) and tweak[t].  0, IDGEN_EINVAL for a
 * radix, key length or digit out of range or n == 0, IDGEN_ERANGE when
 * radix^(n - n/2) does not fit 128 bits, IDGEN_ENOMEM. */
int idgen__ff1_ref(const uint8_t *key, size_t keylen, unsigned radix, const uint8_t *tweak,
                   size_t t, const uint8_t *in, size_t n, uint8_t *out, int decrypt);

/* The fast radix-2 form.  ecb is an AES-256-ECB context (padding off) for
 * the key, owned by the caller and shared by every context of that key. */
typedef struct idgen_ff1 {
  void *ecb;         /* EVP_CIPHER_CTX * */
  uint64_t h64[2];   /* CBC-MAC state before the last block of Q, XORed with
                       that block's constant bytes (big-endian halves) */
  unsigned n, u, v;  /* bits: all, high half, low half */
  unsigned b, d;     /* bytes of NUM(B) in Q; bytes of S */
  idgen_u128 qi[10]; /* round i's number in Q's last 16 bytes: i << 8b */
  idgen_u128 mask_u, mask_v;
} idgen_ff1_t;

/* Makes f for n bits (1..144) and tweak[t].  0, IDGEN_EINVAL, or
 * IDGEN_ENOMEM if AES failed. */
int idgen__ff1_init(idgen_ff1_t *f, void *ecb, unsigned n, const uint8_t *tweak, size_t t);
/* One value: *a (u bits) and *b (v bits) in place.  0, or IDGEN_ENOMEM if AES
 * failed (it does not, once the context is made). */
int idgen__ff1_encrypt(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b);
int idgen__ff1_decrypt(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b);
/* cnt values (a[i], b[i]) in place, any cnt. */
int idgen__ff1_batch(const idgen_ff1_t *f, idgen_u128 *a, idgen_u128 *b, size_t cnt, int decrypt);

/* A new AES-256-ECB context for key[32] with padding off, or NULL. */
void *idgen__ff1_ecb_new(const uint8_t key[32]);
void idgen__ff1_ecb_free(void *ecb);

#endif /* IDGEN_FF1_H */
