/*
 * test_public.c -- public IDs: FF1 against NIST's published samples (the
 * reference, AES-128/192/256), the radix-2 fast path against the reference
 * (every bit length 1..64 and 80, 122, 128, 144, several tweaks, single and
 * batch, both ways), the integer and text forms of every kind, their
 * errors (each naming the column, never giving a wrong ID), a text's kind
 * by its shape (idgen_public_kind_of) and read back in that order, key files
 * (mode, symbolic links, generate, add, 32 versions, adds from several
 * processes at once, no key in any message), key rotation and the text
 * batches against the single calls (every bit count, prefixes, errors).  The 10-million round trips and the statistics are
 * test_public_bulk.c's.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ff1.h"
#include "public_int.h"
#include "testutil.h"

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd64(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void rnd_bytes(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)rnd64();
}

static void hex_bytes(const char *hex, uint8_t *out) {
  size_t n = strlen(hex) / 2;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
}

static void to_hex(const uint8_t *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", p[i]);
}

/* Keys seen by the test: no message may contain one (or its first half). */
static char seen_keys[80][65];
static size_t nseen;

static void key_seen(const uint8_t key[32]) {
  if (nseen < 80)
    to_hex(key, 32, seen_keys[nseen++]);
}

static void no_key_in(const char *msg) {
  for (size_t i = 0; i < nseen; i++) {
    char half[33];
    memcpy(half, seen_keys[i], 32);
    half[32] = '\0';
    for (int c = 0; c < 2; c++) {
      if (strcasestr(msg, seen_keys[i]) != NULL || strcasestr(msg, half) != NULL)
        fail_msg("a key appears in the message \"%s\"", msg);
      memcpy(half, seen_keys[i] + 32, 32); /* and its second half */
    }
  }
}

static idgen_public_keys_t *keys_of(size_t n, const unsigned *versions, uint8_t (*k)[32]) {
  idgen_public_keys_t *keys;
  char err[256] = "";
  for (size_t i = 0; i < n; i++)
    key_seen(k[i]);
  if (idgen_public_keys_new(&keys, versions, (const uint8_t(*)[32])k, n, err, sizeof err) != 0)
    fail_msg("keys_new: %s", err);
  return keys;
}

static idgen_public_t *codec(const idgen_public_keys_t *keys, idgen_public_kind_t kind,
                             unsigned bits, const char *prefix) {
  idgen_public_settings_t s = {.kind = kind, .bits = bits, .prefix = prefix};
  idgen_public_t *p;
  char err[256] = "";
  if (idgen_public_new(&p, keys, &s, err, sizeof err) != 0)
    fail_msg("public_new: %s", err);
  return p;
}

/* A codec error expected: code and a piece of the message. */
static void expect_err(int rc, int code, const char *err, const char *piece) {
  if (rc != code)
    fail_msg("expected %d, got %d (\"%s\")", code, rc, err);
  if (piece != NULL && strstr(err, piece) == NULL)
    fail_msg("expected \"%s\" in \"%s\"", piece, err);
  no_key_in(err);
}

/* ---- FF1 --------------------------------------------------------------------- */

static int digit_of(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

static void ff1_known(const char *key, unsigned radix, const char *tweak, const char *pt,
                      const char *ct) {
  uint8_t k[32], t[64], in[256], out[256], back[256];
  size_t n = strlen(pt);
  hex_bytes(key, k);
  hex_bytes(tweak, t);
  for (size_t i = 0; i < n; i++)
    in[i] = (uint8_t)digit_of(pt[i]);
  tu_ok(idgen__ff1_ref(k, strlen(key) / 2, radix, t, strlen(tweak) / 2, in, n, out, 0));
  char got[257];
  for (size_t i = 0; i < n; i++)
    got[i] = "0123456789abcdefghijklmnopqrstuvwxyz"[out[i]];
  got[n] = '\0';
  assert_string_equal(ct, got);
  tu_ok(idgen__ff1_ref(k, strlen(key) / 2, radix, t, strlen(tweak) / 2, out, n, back, 1));
  assert_memory_equal(in, back, n);
}

/* NIST's FF1 samples 1 to 9 (SP 800-38G examples, FF1samples.pdf). */
static void test_ff1_nist_samples(void **state) {
  (void)state;
  static const char *keys[3] = {"2B7E151628AED2A6ABF7158809CF4F3C",
                                "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F",
                                "2B7E151628AED2A6ABF7158809CF4F3CEF4359D8D580AA4F7F036D6F04FC6A94"};
  static const char *ct[3][3] = {{"2433477484", "6124200773", "a9tv40mll9kdu509eum"},
                                 {"2830668132", "2496655549", "xbj3kv35jrawxv32ysr"},
                                 {"6657667009", "1001623463", "xs8a0azh2avyalyzuwd"}};
  for (int k = 0; k < 3; k++) {
    ff1_known(keys[k], 10, "", "0123456789", ct[k][0]);
    ff1_known(keys[k], 10, "39383736353433323130", "0123456789", ct[k][1]);
    ff1_known(keys[k], 36, "3737373770717273373737", "0123456789abcdefghi", ct[k][2]);
  }
}

/* Radix 2 answers from another FF1 implementation's tests: 47 bits, and 192
 * and 197 bits (the latter with S of two blocks, d = 20). */
static void test_ff1_radix2_known(void **state) {
  (void)state;
  static const char key[] = "F4A116D6EE406A53A56CBE0F4AA7B1001CDC0A55CAC963CF5ACE390488B3477A";
  static const char tw[] = "FD7F4B9945A3C535ADB4720027116CA0F4987D7F3FDBA9BBC40E75375FEAA63C";
  ff1_known(key, 2, tw, "00000101011011011101001001010011100111100011001",
            "10110101001110101101110000011000000011111100111");
  ff1_known(key, 2, tw,
            "000010101100011111010000111001100001011010011110100100110010010000000101000011000000"
            "001111110101111100111001001001100100100110101111110000011101010111001111010000010010"
            "111110101100001001100011",
            "111110001101110010010110001010100001101011001010011010111001001101101000011110000110"
            "110000001101011110101100001101000011101110110101001111100001011010010000010111001110"
            "010011001100001111100101");
  ff1_known(key, 2, tw,
            "000001110110100101011111100111100010111110001101000001010010100011000011011110000100"
            "001010111001000101110111010010100101001010101000110101010100001011111110011111001101"
            "00001100011001011010010000110",
            "001100110010001111000101111100010001101101100100101011010010111010011010100100011110"
            "010101001000011101010101011011101100101001101011101110111110101100101011100000011010"
            "00101010100011010100111011000");
}

static void test_ff1_ref_refuses(void **state) {
  (void)state;
  uint8_t k[32] = {0}, d[300] = {0}, out[300];
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_ref(k, 20, 10, NULL, 0, d, 10, out, 0));
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_ref(k, 16, 1, NULL, 0, d, 10, out, 0));
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_ref(k, 16, 10, NULL, 0, d, 0, out, 0));
  d[3] = 10;
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_ref(k, 16, 10, NULL, 0, d, 10, out, 0));
  d[3] = 0;
  /* 2^128 for the half does not fit: refused, not wrapped. */
  assert_int_equal(IDGEN_ERANGE, idgen__ff1_ref(k, 32, 2, NULL, 0, d, 256, out, 0));
  tu_ok(idgen__ff1_ref(k, 32, 2, NULL, 0, d, 254, out, 0));
}

/* x of n bits as digits, MSB first, and back. */
static void bits_to_digits(idgen_u128 hi, idgen_u128 lo, unsigned lobits, unsigned n, uint8_t *d) {
  for (unsigned i = 0; i < n; i++) {
    unsigned bit = n - 1 - i;
    d[i] = (uint8_t)(bit >= lobits ? (hi >> (bit - lobits)) & 1 : (lo >> bit) & 1);
  }
}

static idgen_u128 digits_num(const uint8_t *d, unsigned n) {
  idgen_u128 x = 0;
  for (unsigned i = 0; i < n; i++)
    x = x << 1 | d[i];
  return x;
}

static idgen_u128 rnd_bits(unsigned m) {
  idgen_u128 x = (idgen_u128)rnd64() << 64 | rnd64();
  return m >= 128 ? x : x & (((idgen_u128)1 << m) - 1);
}

/* One n: random values through the fast path single and batch, both ways,
 * against the reference. */
static void fast_vs_ref(const uint8_t key[32], void *ecb, unsigned n, const uint8_t *tweak,
                        size_t t) {
  idgen_ff1_t f;
  tu_ok(idgen__ff1_init(&f, ecb, n, tweak, t));
  enum { CNT = 70 }; /* more than one batch of 64 */
  idgen_u128 a[CNT], b[CNT], ea[CNT], eb[CNT];
  for (int i = 0; i < CNT; i++) {
    a[i] = ea[i] = rnd_bits(f.u);
    b[i] = eb[i] = rnd_bits(f.v);
  }
  tu_ok(idgen__ff1_batch(&f, ea, eb, CNT, 0));
  for (int i = 0; i < CNT; i++) {
    idgen_u128 x = a[i], z = b[i];
    tu_ok(idgen__ff1_encrypt(&f, &x, &z));
    if (x != ea[i] || z != eb[i])
      fail_msg("n=%u t=%zu: batch and single differ at %d", n, t, i);
    if (i < 6) { /* the reference is slow: a few each */
      uint8_t in[IDGEN_FF1_MAX_BITS], out[IDGEN_FF1_MAX_BITS];
      bits_to_digits(a[i], b[i], f.v, n, in);
      tu_ok(idgen__ff1_ref(key, 32, 2, tweak, t, in, n, out, 0));
      if (digits_num(out, f.u) != x || digits_num(out + f.u, f.v) != z)
        fail_msg("n=%u t=%zu: fast path and reference differ", n, t);
      uint8_t back[IDGEN_FF1_MAX_BITS];
      tu_ok(idgen__ff1_ref(key, 32, 2, tweak, t, out, n, back, 1));
      assert_memory_equal(in, back, n);
      /* Decrypting a value that was never encrypted, both ways. */
      idgen_u128 da = a[i], db = b[i];
      tu_ok(idgen__ff1_decrypt(&f, &da, &db));
      tu_ok(idgen__ff1_ref(key, 32, 2, tweak, t, in, n, out, 1));
      if (digits_num(out, f.u) != da || digits_num(out + f.u, f.v) != db)
        fail_msg("n=%u t=%zu: fast and reference decryption differ", n, t);
    }
    tu_ok(idgen__ff1_decrypt(&f, &x, &z));
    if (x != a[i] || z != b[i])
      fail_msg("n=%u t=%zu: decrypt did not give the value back", n, t);
  }
  tu_ok(idgen__ff1_batch(&f, ea, eb, CNT, 1));
  for (int i = 0; i < CNT; i++)
    if (ea[i] != a[i] || eb[i] != b[i])
      fail_msg("n=%u t=%zu: batch decrypt did not give the value back at %d", n, t, i);
}

static void test_ff1_fast_matches_reference(void **state) {
  (void)state;
  static const size_t tlens[] = {0, 1, 4, 5, 11, 12, 15, 16, 17, 31, 67};
  uint8_t key[32], tweak[80];
  rnd_bytes(key, sizeof key);
  rnd_bytes(tweak, sizeof tweak);
  void *ecb = idgen__ff1_ecb_new(key);
  assert_non_null(ecb);
  unsigned ns[70], nn = 0;
  for (unsigned n = 1; n <= 64; n++)
    ns[nn++] = n;
  ns[nn++] = 80;
  ns[nn++] = 122;
  ns[nn++] = 128;
  ns[nn++] = 144;
  for (unsigned i = 0; i < nn; i++)
    for (size_t j = 0; j < 3; j++) /* three tweak lengths for each n, all lengths covered */
      fast_vs_ref(key, ecb, ns[i], tweak, tlens[(i + 4 * j) % (sizeof tlens / sizeof *tlens)]);
  idgen_ff1_t f;
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_init(&f, ecb, 0, NULL, 0));
  assert_int_equal(IDGEN_EINVAL, idgen__ff1_init(&f, ecb, 145, NULL, 0));
  idgen__ff1_ecb_free(ecb);
}

/* ---- integer and text forms --------------------------------------------------- */

static idgen_public_keys_t *one_key(unsigned version) {
  uint8_t k[1][32];
  rnd_bytes(k[0], 32);
  return keys_of(1, &version, k);
}

static void roundtrip64(idgen_public_keys_t *keys, unsigned bits, const char *prefix) {
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, bits, prefix);
  unsigned nb = bits == 0 ? 64 : bits;
  uint64_t lim = nb == 64 ? ~(uint64_t)0 : (((uint64_t)1 << nb) - 1);
  enum { CNT = 200 };
  uint64_t ids[CNT], pubs[CNT], back[CNT];
  for (int i = 0; i < CNT; i++)
    ids[i] = i < 3 ? (uint64_t)i & lim : (i == 3 ? lim : rnd64() & lim);
  tu_ok(idgen_public_map64_batch(p, ids, pubs, CNT));
  int moved = 0;
  for (int i = 0; i < CNT; i++) {
    uint64_t pub, id;
    tu_ok(idgen_public_map64(p, ids[i], &pub));
    assert_int_equal(pubs[i], pub);
    assert_true(pub <= lim);
    moved += pub != ids[i];
    tu_ok(idgen_public_unmap64(p, pub, &id));
    assert_int_equal(ids[i], id);
    char text[IDGEN_PUBLIC_TEXT_MAX], err[256] = "";
    int len = idgen_public_format64(p, ids[i], text, sizeof text);
    size_t plen = prefix && *prefix ? strlen(prefix) + 1 : 0;
    assert_int_equal(plen + IDGEN_PUBLIC_TEXT64_LEN, len);
    assert_int_equal(len, strlen(text));
    unsigned v = 0;
    if (idgen_public_parse64(p, text, (size_t)len, &id, &v, err, sizeof err) != 0)
      fail_msg("parse64 \"%s\": %s", text, err);
    assert_int_equal(ids[i], id);
    assert_int_equal(idgen_public_keys_newest(keys), v);
  }
  if (nb >= 8)
    assert_true(moved > CNT / 2);
  tu_ok(idgen_public_unmap64_batch(p, pubs, back, CNT));
  assert_memory_equal(ids, back, sizeof ids);
  memcpy(back, ids, sizeof ids); /* in place */
  tu_ok(idgen_public_map64_batch(p, back, back, CNT));
  assert_memory_equal(pubs, back, sizeof pubs);
  if (nb < 64) {
    uint64_t out = 7, too = lim + 1;
    char text[IDGEN_PUBLIC_TEXT_MAX];
    assert_int_equal(IDGEN_ERANGE, idgen_public_map64(p, too, &out));
    assert_int_equal(IDGEN_ERANGE, idgen_public_unmap64(p, too, &out));
    assert_int_equal(7, out);
    ids[5] = too;
    assert_int_equal(IDGEN_ERANGE, idgen_public_map64_batch(p, ids, pubs, CNT));
    assert_int_equal(IDGEN_ERANGE, idgen_public_format64(p, too, text, sizeof text));
  }
  idgen_public_free(p);
}

static void test_snowflake_forms(void **state) {
  (void)state;
  idgen_public_keys_t *keys = one_key(3);
  static const unsigned bits[] = {20, 21, 41, 53, 63, 0};
  for (size_t i = 0; i < sizeof bits / sizeof *bits; i++) {
    roundtrip64(keys, bits[i], NULL);
    roundtrip64(keys, bits[i], "user");
  }
  /* The smallest layout taken, 20 bits: its largest value maps within them. */
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 20, NULL);
  uint64_t a, b;
  tu_ok(idgen_public_map64(p, (1u << 20) - 1, &a));
  tu_ok(idgen_public_map64(p, 0, &b));
  assert_true(a < (1u << 20) && b < (1u << 20) && a != b);
  assert_int_equal(IDGEN_ERANGE, idgen_public_map64(p, 1u << 20, &a));
  /* The text form: too small a buffer. */
  char small[IDGEN_PUBLIC_TEXT64_LEN];
  assert_int_equal(IDGEN_ERANGE, idgen_public_format64(p, 1, small, sizeof small));
  uint8_t id16[16] = {0}, pub16[16];
  assert_int_equal(IDGEN_EINVAL, idgen_public_map128(p, id16, pub16));
  idgen_public_free(p);
  idgen_public_keys_free(keys);
}

static void make_uuid7(uint8_t u[16]) {
  rnd_bytes(u, 16);
  u[6] = (uint8_t)(0x70 | (u[6] & 15));
  u[8] = (uint8_t)(0x80 | (u[8] & 0x3f));
}

static void test_128_forms(void **state) {
  (void)state;
  idgen_public_keys_t *keys = one_key(1);
  for (int kind = IDGEN_PUBLIC_ULID; kind <= IDGEN_PUBLIC_UUID7; kind++)
    for (int pre = 0; pre < 2; pre++) {
      idgen_public_t *p = codec(keys, (idgen_public_kind_t)kind, 0, pre ? "order_line" : NULL);
      enum { CNT = 100 };
      uint8_t ids[CNT][16], pubs[CNT][16], back[CNT][16];
      for (int i = 0; i < CNT; i++) {
        if (kind == IDGEN_PUBLIC_UUID7)
          make_uuid7(ids[i]);
        else
          rnd_bytes(ids[i], 16);
      }
      tu_ok(idgen_public_map128_batch(p, (const uint8_t(*)[16])ids, pubs, CNT));
      for (int i = 0; i < CNT; i++) {
        uint8_t pub[16], id[16];
        tu_ok(idgen_public_map128(p, ids[i], pub));
        assert_memory_equal(pubs[i], pub, 16);
        assert_memory_not_equal(ids[i], pub, 16);
        if (kind == IDGEN_PUBLIC_UUID7) {
          assert_int_equal(4, pub[6] >> 4);
          assert_int_equal(0x80, pub[8] & 0xc0);
        }
        tu_ok(idgen_public_unmap128(p, pub, id));
        assert_memory_equal(ids[i], id, 16);
        char text[IDGEN_PUBLIC_TEXT_MAX], err[256] = "";
        int len = idgen_public_format128(p, ids[i], text, sizeof text);
        assert_int_equal((pre ? 11 : 0) + IDGEN_PUBLIC_TEXT128_LEN, len);
        if (idgen_public_parse128(p, text, (size_t)len, id, NULL, err, sizeof err) != 0)
          fail_msg("parse128 \"%s\": %s", text, err);
        assert_memory_equal(ids[i], id, 16);
      }
      tu_ok(idgen_public_unmap128_batch(p, (const uint8_t(*)[16])pubs, back, CNT));
      assert_memory_equal(ids, back, sizeof ids);
      if (kind == IDGEN_PUBLIC_UUID7) {
        /* A UUID not v7 to map, a v7 to unmap: EPARSE, nothing written. */
        uint8_t v4[16], out[16] = {0}, zero[16] = {0};
        memcpy(v4, pubs[0], 16);
        assert_int_equal(IDGEN_EPARSE, idgen_public_map128(p, v4, out));
        assert_int_equal(IDGEN_EPARSE, idgen_public_unmap128(p, ids[0], out));
        assert_memory_equal(zero, out, 16);
        memcpy(ids[7], v4, 16);
        assert_int_equal(IDGEN_EPARSE,
                         idgen_public_map128_batch(p, (const uint8_t(*)[16])ids, pubs, CNT));
        char text[IDGEN_PUBLIC_TEXT_MAX];
        assert_int_equal(IDGEN_EPARSE, idgen_public_format128(p, v4, text, sizeof text));
      }
      uint64_t o;
      assert_int_equal(IDGEN_EINVAL, idgen_public_map64(p, 1, &o));
      idgen_public_free(p);
    }
  idgen_public_keys_free(keys);
}

/* ---- errors ------------------------------------------------------------------ */

static void parse64_err(idgen_public_t *p, const char *text, int code, const char *piece) {
  char err[256] = "";
  uint64_t id = 12345;
  int rc = idgen_public_parse64(p, text, strlen(text), &id, NULL, err, sizeof err);
  expect_err(rc, code, err, piece);
  assert_int_equal(12345, id);
}

static void parse128_err(idgen_public_t *p, const char *text, int code, const char *piece) {
  char err[256] = "";
  uint8_t id[16] = {0}, zero[16] = {0};
  int rc = idgen_public_parse128(p, text, strlen(text), id, NULL, err, sizeof err);
  expect_err(rc, code, err, piece);
  assert_memory_equal(zero, id, 16);
}

static void test_text_malformed(void **state) {
  (void)state;
  idgen_public_keys_t *keys = one_key(1);
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 63, "user");
  idgen_public_t *bare = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 63, NULL);
  char good[IDGEN_PUBLIC_TEXT_MAX], bad[2 * IDGEN_PUBLIC_TEXT_MAX], piece[64];
  int len = idgen_public_format64(p, 123456789, good, sizeof good);
  assert_int_equal(5 + 17, len);
  /* A bad character, an upper-case one, at each column after the prefix. */
  for (int col = 5; col < len; col++) {
    strcpy(bad, good);
    bad[col] = 'u';
    snprintf(piece, sizeof piece, "column %d: 'u'", col + 1);
    parse64_err(p, bad, IDGEN_EPARSE, piece);
    strcpy(bad, good);
    bad[col] = (char)toupper((unsigned char)(good[col] == 'a' ? 'b' : good[col]));
    if (isalpha((unsigned char)bad[col])) {
      snprintf(piece, sizeof piece, "column %d: upper-case", col + 1);
      parse64_err(p, bad, IDGEN_EPARSE, piece);
    }
    strcpy(bad, good);
    bad[col] = '\x01';
    snprintf(piece, sizeof piece, "column %d: byte 0x01", col + 1);
    parse64_err(p, bad, IDGEN_EPARSE, piece);
  }
  /* Wrong lengths. */
  strcpy(bad, good);
  bad[len - 1] = '\0';
  parse64_err(p, bad, IDGEN_EPARSE, "column 6: 16 characters after the prefix, expected 17");
  snprintf(bad, sizeof bad, "%s0", good);
  parse64_err(p, bad, IDGEN_EPARSE, "column 6: 18 characters");
  /* The prefix: missing, another codec's, another one's, malformed. */
  parse64_err(p, good + 5, IDGEN_EPARSE, "column 1: no prefix, expected 'user_'");
  snprintf(bad, sizeof bad, "order_%s", good + 5);
  parse64_err(p, bad, IDGEN_EPARSE, "column 1: prefix 'order' where 'user' is expected");
  snprintf(bad, sizeof bad, "usex_%s", good + 5);
  parse64_err(p, bad, IDGEN_EPARSE, "column 4: prefix 'usex'");
  snprintf(bad, sizeof bad, "User_%s", good + 5);
  parse64_err(p, bad, IDGEN_EPARSE, "column 1: the prefix is not 'user'");
  snprintf(bad, sizeof bad, "user%s", good + 5);
  parse64_err(p, bad, IDGEN_EPARSE, "column 1: no prefix");
  parse64_err(bare, good, IDGEN_EPARSE, "column 5: '_' after a prefix");
  parse64_err(p, "", IDGEN_EPARSE, "column 1");
  /* A 128-bit text to a Snowflake codec, and the other way. */
  idgen_public_t *u = codec(keys, IDGEN_PUBLIC_ULID, 0, "user");
  uint8_t id16[16];
  rnd_bytes(id16, 16);
  char t128[IDGEN_PUBLIC_TEXT_MAX];
  assert_int_equal(5 + 30, idgen_public_format128(u, id16, t128, sizeof t128));
  parse64_err(p, t128, IDGEN_EPARSE, "a 128-bit (ULID, UUID) public ID");
  parse128_err(u, good, IDGEN_EPARSE, "a Snowflake public ID");
  /* The first of 29 characters holds 4 bits. */
  strcpy(bad, t128);
  bad[6] = 'g';
  parse128_err(u, bad, IDGEN_EPARSE, "column 7: 'g' is out of range");
  uint64_t o;
  char err[256] = "";
  assert_int_equal(IDGEN_EINVAL,
                   idgen_public_parse64(u, good, strlen(good), &o, NULL, err, sizeof err));
  idgen_public_free(u);
  idgen_public_free(bare);
  idgen_public_free(p);
  idgen_public_keys_free(keys);
}

/* Altered texts, other keys, other kinds, prefixes and layouts: EKEY, never
 * a wrong ID; an unknown version: EKEY naming it and the versions held. */
static void test_text_wrong_key(void **state) {
  (void)state;
  uint8_t k[3][32];
  rnd_bytes(&k[0][0], sizeof k);
  unsigned v12[2] = {1, 2}, v2 = 2;
  idgen_public_keys_t *keys = keys_of(2, v12, k);
  idgen_public_keys_t *other = keys_of(1, &v2, &k[2]); /* same version, other bytes */
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 63, "user");
  idgen_public_t *q = codec(other, IDGEN_PUBLIC_SNOWFLAKE, 63, "user");
  idgen_public_t *p53 = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 53, "user");
  char text[IDGEN_PUBLIC_TEXT_MAX], bad[IDGEN_PUBLIC_TEXT_MAX];
  int fails = 0;
  for (int i = 0; i < 50; i++) {
    uint64_t id = rnd64() >> 1;
    int len = idgen_public_format64(p, id, text, sizeof text);
    assert_true(len > 0);
    assert_int_equal('1', text[5]); /* the newest, version 2 */
    char err[256] = "";
    uint64_t got = 0;
    int rc = idgen_public_parse64(q, text, (size_t)len, &got, NULL, err, sizeof err);
    fails += rc == IDGEN_EKEY;
    if (rc == 0)
      assert_true(got != id); /* 2^-16: a false accept is not the ID */
    else
      expect_err(rc, IDGEN_EKEY, err, "not made with key version 2");
    rc = idgen_public_parse64(p53, text, (size_t)len, &got, NULL, err, sizeof err);
    fails += rc == IDGEN_EKEY;
    /* One character changed: */
    strcpy(bad, text);
    int col = 6 + (int)(rnd64() % 16);
    bad[col] = bad[col] == '0' ? '1' : '0';
    rc = idgen_public_parse64(p, bad, (size_t)len, &got, NULL, err, sizeof err);
    fails += rc == IDGEN_EKEY;
    if (rc == 0)
      assert_true(got != id);
  }
  assert_true(fails >= 148); /* of 150; each passes with odds 2^-16 or less */
  /* An unknown version. */
  strcpy(bad, text);
  bad[5] = '4';
  parse64_err(p, bad, IDGEN_EKEY, "key version 5 ('4' at column 6) is not held (held: 1, 2)");
  /* Another kind with the same prefix: a ULID text is no UUIDv7 text. */
  idgen_public_t *ul = codec(keys, IDGEN_PUBLIC_ULID, 0, NULL);
  idgen_public_t *uu = codec(keys, IDGEN_PUBLIC_UUID7, 0, NULL);
  uint8_t id16[16];
  make_uuid7(id16);
  int len = idgen_public_format128(ul, id16, text, sizeof text);
  parse128_err(uu, text, IDGEN_EKEY, "not made with key version 2");
  (void)len;
  /* A user_ ID's body under the order_ prefix (the prefix is in the
   * tweak): EKEY, never an order's ID. */
  idgen_public_t *po = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 63, "order");
  fails = 0;
  for (int i = 0; i < 50; i++) {
    uint64_t id = rnd64() >> 1, got = 0;
    int tl = idgen_public_format64(p, id, text, sizeof text);
    assert_int_equal(tl, 5 + IDGEN_PUBLIC_TEXT64_LEN);
    char ob[IDGEN_PUBLIC_TEXT_MAX + 8];
    snprintf(ob, sizeof ob, "order_%s", text + 5);
    char err[256] = "";
    int rc = idgen_public_parse64(po, ob, strlen(ob), &got, NULL, err, sizeof err);
    fails += rc == IDGEN_EKEY;
    if (rc == 0)
      assert_true(got != id);
  }
  assert_true(fails >= 49);
  idgen_public_free(po);
  idgen_public_free(uu);
  idgen_public_free(ul);
  idgen_public_free(p53);
  idgen_public_free(q);
  idgen_public_free(p);
  idgen_public_keys_free(other);
  idgen_public_keys_free(keys);
}

/* A text's kinds by its shape: the count, the order to try, and the
 * length named for a text of no kind. */
static void test_text_kind_by_shape(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int count; /* or the error */
    idgen_public_kind_t first;
    const char *piece;
  } cases[] = {
      {"0123456789abcdefg", 1, IDGEN_PUBLIC_SNOWFLAKE, NULL},
      {"user_0123456789abcdefg", 1, IDGEN_PUBLIC_SNOWFLAKE, NULL},
      {"order_line_0123456789abcdefg", 1, IDGEN_PUBLIC_SNOWFLAKE, NULL},
      {"_0123456789abcdefg", 1, IDGEN_PUBLIC_SNOWFLAKE, NULL},
      {"01234567890123456789012345678z", 2, IDGEN_PUBLIC_UUID7, NULL},
      {"a_b_01234567890123456789012345678z", 2, IDGEN_PUBLIC_UUID7, NULL},
      {"", IDGEN_EPARSE, 0, "this one 0"},
      {"user_", IDGEN_EPARSE, 0, "this one 0"},
      {"0123456789abcdef", IDGEN_EPARSE, 0, "this one 16"},
      {"0123456789abcdefgh", IDGEN_EPARSE, 0, "this one 18"},
      {"user_0123456789abcdefg_", IDGEN_EPARSE, 0, "this one 0"},
      {"0123456789012345678901234567z", IDGEN_EPARSE, 0, "this one 29"},
      {"012345678901234567890123456789z", IDGEN_EPARSE, 0, "this one 31"},
      {"01ARZ3NDEKTSV4RRFFQ69G5FAV", IDGEN_EPARSE, 0, "this one 26"}, /* a ULID */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    idgen_public_kind_t kinds[2] = {0, 0};
    char err[256] = "";
    size_t len = strlen(cases[i].text);
    int rc = idgen_public_kind_of(cases[i].text, len, kinds, err, sizeof err);
    if (rc < 0) {
      expect_err(rc, cases[i].count, err, cases[i].piece);
      assert_string_equal(strstr(err, "not a public ID: a text form has 17 (Snowflake) or 30 "
                                      "(ULID, UUIDv7) characters after its prefix"),
                          err);
      assert_int_equal(0, kinds[0]); /* nothing written */
    } else {
      assert_int_equal(cases[i].count, rc);
      assert_int_equal(cases[i].first, kinds[0]);
      if (rc == 2)
        assert_int_equal(IDGEN_PUBLIC_ULID, kinds[1]);
      assert_string_equal("", err);
    }
    /* The count alone, and no message wanted. */
    assert_int_equal(rc, idgen_public_kind_of(cases[i].text, len, NULL, NULL, 0));
  }
  assert_int_equal(IDGEN_EPARSE, idgen_public_kind_of(NULL, 0, NULL, NULL, 0));
  /* Not NUL-terminated: only len characters count. */
  assert_int_equal(1, idgen_public_kind_of("0123456789abcdefgh", 17, NULL, NULL, 0));
}

/* Texts of every kind, with and without a prefix, each read back as the
 * kind it was made of by trying idgen_public_kind_of's kinds in order. */
static void test_text_kind_read_back(void **state) {
  (void)state;
  idgen_public_keys_t *keys = one_key(1);
  for (int pre = 0; pre < 2; pre++) {
    const char *prefix = pre ? "order_line" : NULL;
    idgen_public_t *c[4] = {NULL};
    for (int k = IDGEN_PUBLIC_SNOWFLAKE; k <= IDGEN_PUBLIC_UUID7; k++)
      c[k] = codec(keys, (idgen_public_kind_t)k, k == IDGEN_PUBLIC_SNOWFLAKE ? 41 : 0, prefix);
    for (int i = 0; i < 200; i++) {
      int made = IDGEN_PUBLIC_SNOWFLAKE + i % 3;
      char text[IDGEN_PUBLIC_TEXT_MAX];
      uint8_t id[16], back[16];
      uint64_t id64 = rnd64() >> 23, back64 = 0;
      int len;
      if (made == IDGEN_PUBLIC_SNOWFLAKE) {
        len = idgen_public_format64(c[made], id64, text, sizeof text);
      } else {
        if (made == IDGEN_PUBLIC_UUID7)
          make_uuid7(id);
        else
          rnd_bytes(id, 16);
        len = idgen_public_format128(c[made], id, text, sizeof text);
      }
      assert_true(len > 0);
      idgen_public_kind_t kinds[2];
      int n = idgen_public_kind_of(text, (size_t)len, kinds, NULL, 0);
      assert_int_equal(made == IDGEN_PUBLIC_SNOWFLAKE ? 1 : 2, n);
      int rc = IDGEN_EKEY, t = 0;
      for (; t < n && rc == IDGEN_EKEY; t++)
        rc = kinds[t] == IDGEN_PUBLIC_SNOWFLAKE
                 ? idgen_public_parse64(c[kinds[t]], text, (size_t)len, &back64, NULL, NULL, 0)
                 : idgen_public_parse128(c[kinds[t]], text, (size_t)len, back, NULL, NULL, 0);
      assert_int_equal(0, rc);
      assert_int_equal(made, kinds[t - 1]);
      if (made == IDGEN_PUBLIC_SNOWFLAKE)
        assert_int_equal(id64, back64);
      else
        assert_memory_equal(id, back, 16);
    }
    for (int k = IDGEN_PUBLIC_SNOWFLAKE; k <= IDGEN_PUBLIC_UUID7; k++)
      idgen_public_free(c[k]);
  }
  idgen_public_keys_free(keys);
}

static void test_settings_and_prefixes(void **state) {
  (void)state;
  static const struct {
    const char *prefix;
    const char *piece;
  } bad[] = {
      {"User", "character 1 ('U')"},    {"us-er", "character 3 ('-')"},
      {"_user", "start with a letter"}, {"user_", "end with a letter"},
      {"us3r", "character 3 ('3')"},    {"user\x7f", "byte 0x7f"},
      {"_", "start with a letter"},
  };
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = '\0';
    expect_err(idgen_public_prefix_check(bad[i].prefix, err, sizeof err), IDGEN_EINVAL, err,
               bad[i].piece);
  }
  char longp[80];
  memset(longp, 'a', 64);
  longp[64] = '\0';
  expect_err(idgen_public_prefix_check(longp, err, sizeof err), IDGEN_EINVAL, err,
             "64 characters, more than 63");
  longp[63] = '\0';
  tu_ok(idgen_public_prefix_check(longp, err, sizeof err));
  tu_ok(idgen_public_prefix_check("a", err, sizeof err));
  tu_ok(idgen_public_prefix_check("order_line", err, sizeof err));
  tu_ok(idgen_public_prefix_check("", err, sizeof err));
  tu_ok(idgen_public_prefix_check(NULL, err, sizeof err));

  idgen_public_keys_t *keys = one_key(2);
  idgen_public_t *p = NULL;
  idgen_public_settings_t s = {.kind = IDGEN_PUBLIC_SNOWFLAKE, .bits = 65};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_EINVAL, err, "bits 65");
  /* Below FF1's smallest domain (a million values): refused, 20 bits taken. */
  s = (idgen_public_settings_t){.kind = IDGEN_PUBLIC_SNOWFLAKE, .bits = 19};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_ERANGE, err, "19 bits");
  s.bits = 20;
  tu_ok(idgen_public_new(&p, keys, &s, err, sizeof err));
  idgen_public_free(p);
  p = NULL;
  s = (idgen_public_settings_t){.kind = IDGEN_PUBLIC_ULID, .bits = 128};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_EINVAL, err, "give 0");
  s = (idgen_public_settings_t){.kind = (idgen_public_kind_t)9};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_EINVAL, err, "kind 9");
  s = (idgen_public_settings_t){.kind = IDGEN_PUBLIC_SNOWFLAKE, .prefix = "Bad"};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_EINVAL, err, "prefix");
  s = (idgen_public_settings_t){.kind = IDGEN_PUBLIC_SNOWFLAKE, .version = 1};
  expect_err(idgen_public_new(&p, keys, &s, err, sizeof err), IDGEN_EINVAL, err,
             "key version 1 is not held (held: 2)");
  assert_null(p);
  /* A longest prefix fits IDGEN_PUBLIC_TEXT_MAX with a 128-bit ID. */
  idgen_public_t *u = codec(keys, IDGEN_PUBLIC_UUID7, 0, longp);
  uint8_t id16[16], back[16];
  make_uuid7(id16);
  char text[IDGEN_PUBLIC_TEXT_MAX];
  int len = idgen_public_format128(u, id16, text, sizeof text);
  assert_int_equal(IDGEN_PUBLIC_TEXT_MAX - 1, len);
  tu_ok(idgen_public_parse128(u, text, (size_t)len, back, NULL, err, sizeof err));
  assert_memory_equal(id16, back, 16);
  idgen_public_free(u);
  idgen_public_keys_free(keys);

  /* keys_new: versions out of range, twice, none. */
  uint8_t k[2][32] = {{1}, {2}};
  unsigned vs[2] = {3, 3};
  idgen_public_keys_t *kk = NULL;
  expect_err(idgen_public_keys_new(&kk, vs, (const uint8_t(*)[32])k, 2, err, sizeof err),
             IDGEN_EINVAL, err, "version 3 given twice");
  vs[1] = 33;
  expect_err(idgen_public_keys_new(&kk, vs, (const uint8_t(*)[32])k, 2, err, sizeof err),
             IDGEN_ERANGE, err, "version 33");
  vs[1] = 0;
  expect_err(idgen_public_keys_new(&kk, vs, (const uint8_t(*)[32])k, 2, err, sizeof err),
             IDGEN_ERANGE, err, "version 0");
  expect_err(idgen_public_keys_new(&kk, vs, (const uint8_t(*)[32])k, 0, err, sizeof err),
             IDGEN_EINVAL, err, NULL);
  vs[1] = 1;
  tu_ok(idgen_public_keys_new(&kk, vs, (const uint8_t(*)[32])k, 2, err, sizeof err));
  unsigned got[4] = {0};
  assert_int_equal(2, idgen_public_keys_versions(kk, got, 4));
  assert_int_equal(1, got[0]);
  assert_int_equal(3, got[1]);
  assert_int_equal(3, idgen_public_keys_newest(kk));
  idgen_public_keys_free(kk);
}

/* ---- text batches ------------------------------------------------------------- */

static const char *const batch_prefixes[] = {
    "", "user", "a", "order_line",
    "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijk"};

/* Checks buf (n texts of len) against the single calls, each read back. */
static void batch_vs_single64(idgen_public_t *p, const uint64_t *ids, size_t n, const char *buf,
                              size_t len) {
  for (size_t i = 0; i < n; i++) {
    char one[IDGEN_PUBLIC_TEXT_MAX], err[256] = "";
    int l = idgen_public_format64(p, ids[i], one, sizeof one);
    assert_int_equal(len, l);
    if (memcmp(one, buf + i * len, len) != 0)
      fail_msg("ID %zu (%llu): batch %.*s, single %s", i, (unsigned long long)ids[i], (int)len,
               buf + i * len, one);
    uint64_t back;
    if (idgen_public_parse64(p, buf + i * len, len, &back, NULL, err, sizeof err) != 0)
      fail_msg("parse64: %s", err);
    assert_int_equal(ids[i], back);
  }
}

static void batch64_one(idgen_public_keys_t *keys, unsigned bits, const char *prefix) {
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, bits, prefix);
  size_t len = (size_t)idgen_public_text_len(p);
  assert_int_equal(len, (*prefix ? strlen(prefix) + 1 : 0) + IDGEN_PUBLIC_TEXT64_LEN);
  uint64_t lim = bits == 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits) - 1);
  static const size_t counts[] = {0, 1, 2, 63, 64, 65, 130};
  uint64_t ids[130];
  for (size_t i = 0; i < 130; i++)
    ids[i] = i == 0 ? 0 : (i == 1 ? lim : rnd64() & lim);
  char *buf = malloc(130 * len + 1);
  assert_non_null(buf);
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    size_t n = counts[c];
    memset(buf, '#', 130 * len + 1);
    tu_ok(idgen_public_format64_batch(p, ids, n, buf, n * len));
    assert_int_equal('#', buf[n * len]); /* nothing past n texts, no NUL */
    batch_vs_single64(p, ids, n, buf, len);
  }
  idgen_public_free(p);
  free(buf);
}

static void test_text_batch64(void **state) {
  (void)state;
  uint8_t k[3][32];
  unsigned versions[3] = {1, 2, 7};
  rnd_bytes(&k[0][0], sizeof k);
  idgen_public_keys_t *keys = keys_of(3, versions, k);
  for (unsigned bits = 20; bits <= 64; bits++)
    for (size_t i = 0; i < sizeof batch_prefixes / sizeof batch_prefixes[0]; i++)
      batch64_one(keys, bits, batch_prefixes[i]);
  idgen_public_free(NULL);
  idgen_public_keys_free(keys);
}

static void batch128_one(idgen_public_keys_t *keys, int kind, const char *prefix) {
  idgen_public_t *p = codec(keys, (idgen_public_kind_t)kind, 0, prefix);
  size_t len = (size_t)idgen_public_text_len(p);
  assert_int_equal(len, (*prefix ? strlen(prefix) + 1 : 0) + IDGEN_PUBLIC_TEXT128_LEN);
  enum { CNT = 140 };
  uint8_t ids[CNT][16];
  for (size_t i = 0; i < CNT; i++) {
    if (kind == IDGEN_PUBLIC_UUID7)
      make_uuid7(ids[i]);
    else
      rnd_bytes(ids[i], 16);
  }
  if (kind == IDGEN_PUBLIC_ULID) {
    memset(ids[0], 0, 16);
    memset(ids[1], 0xff, 16);
  }
  char *buf = malloc(CNT * len + 1);
  assert_non_null(buf);
  static const size_t counts[] = {0, 1, 64, 65, CNT};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    size_t n = counts[c];
    memset(buf, '#', CNT * len + 1);
    tu_ok(idgen_public_format128_batch(p, (const uint8_t(*)[16])ids, n, buf, n * len));
    assert_int_equal('#', buf[n * len]);
    for (size_t i = 0; i < n; i++) {
      char one[IDGEN_PUBLIC_TEXT_MAX], err[256] = "";
      assert_int_equal(len, idgen_public_format128(p, ids[i], one, sizeof one));
      if (memcmp(one, buf + i * len, len) != 0)
        fail_msg("ID %zu: batch %.*s, single %s", i, (int)len, buf + i * len, one);
      uint8_t back[16];
      if (idgen_public_parse128(p, buf + i * len, len, back, NULL, err, sizeof err) != 0)
        fail_msg("parse128: %s", err);
      assert_memory_equal(ids[i], back, 16);
    }
  }
  idgen_public_free(p);
  free(buf);
}

static void test_text_batch128(void **state) {
  (void)state;
  uint8_t k[2][32];
  unsigned versions[2] = {3, 32};
  rnd_bytes(&k[0][0], sizeof k);
  idgen_public_keys_t *keys = keys_of(2, versions, k);
  for (int kind = IDGEN_PUBLIC_ULID; kind <= IDGEN_PUBLIC_UUID7; kind++)
    for (size_t i = 0; i < sizeof batch_prefixes / sizeof batch_prefixes[0]; i++)
      batch128_one(keys, kind, batch_prefixes[i]);
  idgen_public_keys_free(keys);
}

/* An error leaves buf as it was. */
static void untouched(const char *buf, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (buf[i] != '#')
      fail_msg("byte %zu written on an error", i);
}

static void test_text_batch_errors(void **state) {
  (void)state;
  idgen_public_keys_t *keys = one_key(1);
  idgen_public_t *p = codec(keys, IDGEN_PUBLIC_SNOWFLAKE, 41, "user");
  idgen_public_t *u = codec(keys, IDGEN_PUBLIC_UUID7, 0, NULL);
  size_t len = (size_t)idgen_public_text_len(p), ulen = (size_t)idgen_public_text_len(u);
  assert_int_equal(5 + IDGEN_PUBLIC_TEXT64_LEN, len);
  assert_int_equal(IDGEN_PUBLIC_TEXT128_LEN, ulen);
  assert_int_equal(IDGEN_EINVAL, idgen_public_text_len(NULL));
  uint64_t ids[70];
  for (size_t i = 0; i < 70; i++)
    ids[i] = rnd64() >> 23;
  char buf[70 * (5 + IDGEN_PUBLIC_TEXT128_LEN)];
  memset(buf, '#', sizeof buf);
  /* one character short */
  assert_int_equal(IDGEN_ERANGE, idgen_public_format64_batch(p, ids, 70, buf, 70 * len - 1));
  assert_int_equal(IDGEN_ERANGE, idgen_public_format64_batch(p, ids, 1, buf, len - 1));
  assert_int_equal(IDGEN_ERANGE,
                   idgen_public_format64_batch(p, ids, SIZE_MAX / 2, buf, sizeof buf));
  untouched(buf, sizeof buf);
  /* an ID at 2^41, the last of 70: nothing written */
  ids[69] = (uint64_t)1 << 41;
  assert_int_equal(IDGEN_ERANGE, idgen_public_format64_batch(p, ids, 70, buf, sizeof buf));
  untouched(buf, sizeof buf);
  ids[69] -= 1;
  tu_ok(idgen_public_format64_batch(p, ids, 70, buf, 70 * len));
  /* kinds, NULL, n = 0 */
  uint8_t uu[70][16];
  for (size_t i = 0; i < 70; i++)
    make_uuid7(uu[i]);
  assert_int_equal(IDGEN_EINVAL, idgen_public_format64_batch(u, ids, 1, buf, sizeof buf));
  assert_int_equal(IDGEN_EINVAL,
                   idgen_public_format128_batch(p, (const uint8_t(*)[16])uu, 1, buf, sizeof buf));
  assert_int_equal(IDGEN_EINVAL, idgen_public_format64_batch(NULL, ids, 1, buf, sizeof buf));
  assert_int_equal(IDGEN_EINVAL, idgen_public_format64_batch(p, NULL, 1, buf, sizeof buf));
  assert_int_equal(IDGEN_EINVAL, idgen_public_format64_batch(p, ids, 1, NULL, sizeof buf));
  assert_int_equal(IDGEN_EINVAL, idgen_public_format128_batch(u, NULL, 1, buf, sizeof buf));
  tu_ok(idgen_public_format64_batch(p, NULL, 0, NULL, 0));
  tu_ok(idgen_public_format128_batch(u, NULL, 0, NULL, 0));
  /* a UUID of version 4 among v7s: EPARSE, nothing written */
  memset(buf, '#', sizeof buf);
  uu[64][6] = (uint8_t)(0x40 | (uu[64][6] & 15));
  assert_int_equal(IDGEN_EPARSE,
                   idgen_public_format128_batch(u, (const uint8_t(*)[16])uu, 70, buf, sizeof buf));
  untouched(buf, sizeof buf);
  assert_int_equal(IDGEN_ERANGE,
                   idgen_public_format128_batch(u, (const uint8_t(*)[16])uu, 2, buf, 2 * ulen - 1));
  untouched(buf, sizeof buf);
  tu_ok(idgen_public_format128_batch(u, (const uint8_t(*)[16])uu, 64, buf, 64 * ulen));
  idgen_public_free(p);
  idgen_public_free(u);
  idgen_public_keys_free(keys);
}

/* ---- key files ----------------------------------------------------------------- */

static char tmpdir[256];

static void path_in(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", tmpdir, name);
}

static void write_file(const char *path, const char *text, mode_t mode) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
  assert_true(fd >= 0);
  assert_int_equal(strlen(text), write(fd, text, strlen(text)));
  close(fd);
  chmod(path, mode);
}

/* Every key line of a key file is a key seen. */
static void keys_in_file(const char *path) {
  FILE *f = fopen(path, "r");
  char line[256];
  assert_non_null(f);
  while (fgets(line, sizeof line, f))
    if (line[0] == 'v') {
      uint8_t k[32];
      hex_bytes(strchr(line, ' ') + 1, k);
      key_seen(k);
    }
  fclose(f);
}

static void load_err(const char *path, int code, const char *piece) {
  idgen_public_keys_t *k = (void *)1;
  char err[512] = "";
  expect_err(idgen_public_keys_load(&k, path, err, sizeof err), code, err, piece);
  assert_null(k);
}

static void test_key_files(void **state) {
  (void)state;
  char path[300], link[300], msg[400], err[512] = "";
  unsigned v = 0;
  path_in(path, sizeof path, "k");
  tu_ok(idgen_public_keys_generate(path, 0, &v, err, sizeof err));
  assert_int_equal(1, v);
  keys_in_file(path);
  struct stat st;
  tu_ok(stat(path, &st));
  assert_int_equal(0600, st.st_mode & 07777);
  idgen_public_keys_t *k1;
  tu_ok(idgen_public_keys_load(&k1, path, err, sizeof err));
  assert_int_equal(1, idgen_public_keys_newest(k1));
  /* Not over a file that is there. */
  expect_err(idgen_public_keys_generate(path, 0, &v, err, sizeof err), IDGEN_EINVAL, err,
             "is there already");
  /* Group- or world-readable: refused, naming the mode and the fix. */
  chmod(path, 0644);
  snprintf(msg, sizeof msg, "(mode 0644): chmod 600 %s", path);
  load_err(path, IDGEN_EINVAL, msg);
  chmod(path, 0640);
  load_err(path, IDGEN_EINVAL, "mode 0640");
  chmod(path, 0400);
  idgen_public_keys_t *k;
  tu_ok(idgen_public_keys_load(&k, path, err, sizeof err));
  idgen_public_keys_free(k);
  chmod(path, 0600);
  /* A symbolic link, a folder, a missing file. */
  path_in(link, sizeof link, "link");
  tu_ok(symlink(path, link));
  load_err(link, IDGEN_EINVAL, "symbolic link");
  load_err(tmpdir, IDGEN_EINVAL, "not a regular file");
  path_in(link, sizeof link, "none");
  load_err(link, IDGEN_EINVAL, "No such file");
  /* A key given where a key file is named (IDGEN_PUBLIC_KEY=HEX, a
   * mistake): the message, which may reach a log, does not repeat it. */
  {
    static const char *const given[] = {
        "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
        "v1 00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff", NULL};
    for (int g = 0; given[g] != NULL; g++) {
      char e[512] = "";
      idgen_public_keys_t *none = NULL;
      expect_err(idgen_public_keys_load(&none, given[g], e, sizeof e), IDGEN_EINVAL, e,
                 "looks like a key");
      if (strstr(e, "00112233445566778899") != NULL || strstr(e, "aabbccddeeff") != NULL ||
          strstr(e, "AABBCCDDEEFF") != NULL)
        fail_msg("the key is in the message: %s", e);
      expect_err(idgen_public_keys_generate(given[g], 0, NULL, e, sizeof e), IDGEN_EINVAL, e,
                 "looks like a key");
    }
    /* In a folder (docker's overlay2/HEX/...), such a run is a name. */
    char hexdir[400];
    path_in(hexdir, sizeof hexdir,
            "0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a090807060504030201000/k");
    load_err(hexdir, IDGEN_EINVAL, "No such file");
  }
  /* A FIFO of mode 0600 that no one writes: refused at once, not waited on
   * (the alarm fails the test if the open blocks), by load and by add. */
  path_in(link, sizeof link, "fifo");
  tu_ok(mkfifo(link, 0600));
  alarm(20);
  load_err(link, IDGEN_EINVAL, "not a regular file");
  expect_err(idgen_public_keys_generate(link, 1, &v, err, sizeof err), IDGEN_EINVAL, err,
             "not a regular file");
  alarm(0);
  unlink(link);

  /* add: versions grow, the old ones stay; a v1 text still reads. */
  idgen_public_t *p1 = codec(k1, IDGEN_PUBLIC_SNOWFLAKE, 41, "user");
  char text1[IDGEN_PUBLIC_TEXT_MAX];
  int len1 = idgen_public_format64(p1, 777, text1, sizeof text1);
  assert_int_equal('0', text1[5]);
  /* What an add that died before its rename left (every key, 0600) is
   * removed by the next add; a name of another shape is not. */
  char dead[320], other[320];
  snprintf(dead, sizeof dead, "%s.new-Ab3xYz", path);
  snprintf(other, sizeof other, "%s.new-Ab3xYz7", path);
  for (int i = 0; i < 2; i++) {
    int fd = open(i ? other : dead, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
  }
  tu_ok(idgen_public_keys_generate(path, 1, &v, err, sizeof err));
  assert_int_equal(2, v);
  assert_int_equal(-1, access(dead, F_OK));
  tu_ok(access(other, F_OK));
  unlink(other);
  keys_in_file(path);
  tu_ok(stat(path, &st));
  assert_int_equal(0600, st.st_mode & 07777);
  idgen_public_keys_t *k2;
  tu_ok(idgen_public_keys_load(&k2, path, err, sizeof err));
  unsigned vs[4];
  assert_int_equal(2, idgen_public_keys_versions(k2, vs, 4));
  assert_int_equal(1, vs[0]);
  assert_int_equal(2, vs[1]);
  idgen_public_t *p2 = codec(k2, IDGEN_PUBLIC_SNOWFLAKE, 41, "user");
  uint64_t id = 0;
  unsigned used = 0;
  tu_ok(idgen_public_parse64(p2, text1, (size_t)len1, &id, &used, err, sizeof err));
  assert_int_equal(777, id);
  assert_int_equal(1, used);
  char text2[IDGEN_PUBLIC_TEXT_MAX];
  int len2 = idgen_public_format64(p2, 777, text2, sizeof text2);
  assert_int_equal('1', text2[5]);
  tu_ok(idgen_public_parse64(p2, text2, (size_t)len2, &id, &used, err, sizeof err));
  assert_int_equal(2, used);
  /* The old codec does not hold version 2. */
  parse64_err(p1, text2, IDGEN_EKEY, "key version 2 ('1' at column 6) is not held (held: 1)");
  /* The integer form with version 1, by choice, matches the old codec's. */
  idgen_public_settings_t s = {.kind = IDGEN_PUBLIC_SNOWFLAKE, .bits = 41, .version = 1};
  idgen_public_t *p2v1;
  tu_ok(idgen_public_new(&p2v1, k2, &s, err, sizeof err));
  uint64_t a, b;
  tu_ok(idgen_public_map64(p1, 99, &a));
  tu_ok(idgen_public_map64(p2v1, 99, &b));
  assert_int_equal(a, b);
  tu_ok(idgen_public_map64(p2, 99, &b));
  assert_true(a != b);
  idgen_public_free(p2v1);
  idgen_public_free(p2);
  idgen_public_free(p1);
  idgen_public_keys_free(k2);
  idgen_public_keys_free(k1);

  /* An add keeps the file's owner and mode: root adding a version to the
   * file of the daemon's user (mode 0400) must leave it readable by that
   * user, not make it root's (the owner is checked when run as root). */
  tu_ok(chmod(path, 0400));
  if (geteuid() == 0)
    tu_ok(chown(path, 4242, 4243));
  tu_ok(idgen_public_keys_generate(path, 1, &v, err, sizeof err));
  assert_int_equal(3, v);
  tu_ok(stat(path, &st));
  assert_int_equal(0400, st.st_mode & 07777);
  if (geteuid() == 0) {
    assert_int_equal(4242, st.st_uid);
    assert_int_equal(4243, st.st_gid);
    tu_ok(chown(path, 0, 0));
  }
  tu_ok(chmod(path, 0600));

  /* Up to 32 versions; the 33rd is refused and the file is left as it was. */
  for (unsigned want = 4; want <= 32; want++) {
    tu_ok(idgen_public_keys_generate(path, 1, &v, err, sizeof err));
    assert_int_equal(want, v);
  }
  keys_in_file(path);
  expect_err(idgen_public_keys_generate(path, 1, &v, err, sizeof err), IDGEN_ERANGE, err,
             "remove old versions first");
  tu_ok(idgen_public_keys_load(&k, path, err, sizeof err));
  assert_int_equal(32, idgen_public_keys_versions(k, NULL, 0));
  idgen_public_keys_free(k);
  unlink(path);
  path_in(link, sizeof link, "link");
  unlink(link);
}

static void test_key_file_format(void **state) {
  (void)state;
  char path[300], msg[400];
  static const char k1[] = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
  static const char k2[] = "FFEEDDCCBBAA99887766554433221100ffeeddccbbaa99887766554433221100";
  uint8_t kb[32];
  hex_bytes(k1, kb);
  key_seen(kb);
  hex_bytes(k2, kb);
  key_seen(kb);
  path_in(path, sizeof path, "fmt");
  snprintf(msg, sizeof msg, "# keys\n\n  v3 %s  \r\n\t# more\nv1\t%s\n", k2, k1);
  write_file(path, msg, 0600);
  idgen_public_keys_t *k;
  char err[512] = "";
  tu_ok(idgen_public_keys_load(&k, path, err, sizeof err));
  unsigned vs[2];
  assert_int_equal(2, idgen_public_keys_versions(k, vs, 2));
  assert_int_equal(1, vs[0]);
  assert_int_equal(3, vs[1]);
  assert_memory_equal(kb, k->key[1], 32);
  idgen_public_keys_free(k);
  /* Each: head, the key (its first keylen digits), tail, and the key and
   * a newline again if twice is set. */
  static const struct {
    const char *head;
    int keylen;
    const char *tail;
    int twice;
    const char *piece;
  } bad[] = {
      {"v1 ", 64, "\nv1 ", 1, "line 2: version 1 is given twice"},
      {"# c\nv0 ", 64, "\n", 0, "line 2: the version is outside 1..32"},
      {"v33 ", 64, "\n", 0, "line 1: the version is outside 1..32"},
      {"v1 ", 63, "\n", 0, "line 1: expected 'vN' and 64 hex digits"},
      {"v1 ", 64, "a\n", 0, "line 1: expected 'vN' and 64 hex digits"},
      {"v1 ", 64, " # key\n", 0, "line 1: expected"},
      {"\n\nV1 ", 64, "\n", 0, "line 3: expected"},
      {"v1", 64, "\n", 0, "line 1: expected"},
      {"", 64, "\n", 0, "line 1: expected"},
      {"# only a comment ", 64, "\n", 0, "no key version in the file"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char text[400];
    snprintf(text, sizeof text, "%s%.*s%s%s%s", bad[i].head, bad[i].keylen, k1, bad[i].tail,
             bad[i].twice ? k1 : "", bad[i].twice ? "\n" : "");
    write_file(path, text, 0600);
    load_err(path, IDGEN_EPARSE, bad[i].piece);
  }
  /* A wrong character inside the key: the message names the line only. */
  char text[200];
  snprintf(text, sizeof text, "v2 %s\n", k1);
  text[20] = 'g';
  write_file(path, text, 0600);
  load_err(path, IDGEN_EPARSE, "line 1: expected");
  /* 33 versions in one file. */
  char big[4000] = "";
  for (int i = 1; i <= 33; i++)
    snprintf(big + strlen(big), sizeof big - strlen(big), "v%d %s\n", i > 32 ? 1 : i, k1);
  write_file(path, big, 0600);
  load_err(path, IDGEN_EPARSE, "line 33: more than 32 key versions");
  unlink(path);
}

/* Adds from several processes at once: none lost (the folder's lock). */
static void test_key_file_concurrent_adds(void **state) {
  (void)state;
  char path[300], err[512] = "";
  path_in(path, sizeof path, "conc");
  tu_ok(idgen_public_keys_generate(path, 0, NULL, err, sizeof err));
  enum { PROCS = 4, EACH = 5 };
  pid_t kids[PROCS];
  for (int i = 0; i < PROCS; i++) {
    kids[i] = fork();
    assert_true(kids[i] >= 0);
    if (kids[i] == 0) {
      for (int j = 0; j < EACH; j++)
        if (idgen_public_keys_generate(path, 1, NULL, NULL, 0) != 0)
          _exit(1);
      _exit(0);
    }
  }
  for (int i = 0; i < PROCS; i++) {
    int st = -1;
    assert_int_equal(kids[i], waitpid(kids[i], &st, 0));
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  idgen_public_keys_t *k;
  tu_ok(idgen_public_keys_load(&k, path, err, sizeof err));
  assert_int_equal(1 + PROCS * EACH, idgen_public_keys_versions(k, NULL, 0));
  assert_int_equal(1 + PROCS * EACH, idgen_public_keys_newest(k));
  idgen_public_keys_free(k);
  keys_in_file(path);
  unlink(path);
}

static int setup_dir(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/idgen-test-public-XXXXXX");
  return mkdtemp(tmpdir) == NULL ? -1 : 0;
}

static int teardown_dir(void **state) {
  (void)state;
  return rmdir(tmpdir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ff1_nist_samples),
      cmocka_unit_test(test_ff1_radix2_known),
      cmocka_unit_test(test_ff1_ref_refuses),
      cmocka_unit_test(test_ff1_fast_matches_reference),
      cmocka_unit_test(test_snowflake_forms),
      cmocka_unit_test(test_128_forms),
      cmocka_unit_test(test_text_malformed),
      cmocka_unit_test(test_text_wrong_key),
      cmocka_unit_test(test_text_kind_by_shape),
      cmocka_unit_test(test_text_kind_read_back),
      cmocka_unit_test(test_settings_and_prefixes),
      cmocka_unit_test(test_text_batch64),
      cmocka_unit_test(test_text_batch128),
      cmocka_unit_test(test_text_batch_errors),
      cmocka_unit_test(test_key_files),
      cmocka_unit_test(test_key_file_format),
      cmocka_unit_test(test_key_file_concurrent_adds),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
