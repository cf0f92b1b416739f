/*
 * simd.c -- SIMD fast paths for ULID decoding and UUID parsing (AVX-512 VBMI,
 * else AVX2) and ULID encoding (AVX-512 VBMI only).
 *
 * The decoders only *accept*: given a string of the right length, they decode it if
 * every character is valid and report failure otherwise, and the caller then
 * runs the portable scalar code, which decides and words the error.  So the
 * scalar code stays the single source of truth for what is valid, and the
 * fuzz targets compare the two paths byte for byte.
 *
 * The level is checked once at run time: AVX-512 F, BW, VL and VBMI (Intel
 * Ice Lake and later, AMD Zen 4 and later), else AVX2 (Intel Haswell and
 * later, AMD Zen 1-3: many cloud Xeons, Skylake and Cascade Lake, stop
 * here), else none.  valgrind hides AVX-512 but not AVX2, so callgrind counts
 * measure the AVX2 decoders and the scalar encoder.  idgen__simd_enable(L)
 * caps the level at L (tests and benchmarks use it to cover every path).
 *
 * ULID: the 26 characters are looked up in a 128-entry table with one
 * vpermi2b, shifted right by 6 zero characters (making 32 characters = 160
 * bits whose top 32 bits must be zero), then packed 2 -> 10 bits
 * (vpmaddubsw), 4 -> 20 bits (vpmaddwd), 8 -> 40 bits (shifts), and the 16
 * output bytes gathered big-endian with one vpermb.
 * UUID: one vpermb gathers the 32 hex digits out of the 36 characters, a
 * vpermi2b looks them up, and vpmaddubsw + vpmovwb pack the nibbles.
 *
 * The AVX2 decoders have no byte-masked loads, so they read only inside the
 * input, with overlapping loads, and gather with vpshufb within each 16-byte
 * lane.  With no 128-entry lookup either, the ULID decoder looks characters
 * up by their two nibbles (16-entry vpshufb tables) and the UUID parser
 * classifies hex digits by comparisons; the differential tests and fuzz
 * targets hold both to the scalar tables byte for byte.
 */
#include <stdatomic.h>
#include <string.h>

#include "core_int.h"
#include "tables.h"

#if IDGEN__HAVE_VBMI
#include <immintrin.h>
#define HAVE_VBMI 1
#define VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
#define AVX2 __attribute__((target("avx2")))
#else
#define HAVE_VBMI 0
#endif

_Atomic int idgen__simd_state = -1; /* -1 unknown, else the level in use */
static _Atomic int simd_cap = IDGEN__SIMD_VBMI;

void idgen__simd_enable(int level) {
  atomic_store_explicit(&simd_cap, level, memory_order_relaxed);
  atomic_store_explicit(&idgen__simd_state, -1, memory_order_relaxed); /* decided again */
}

int idgen__simd_available(void) {
  int s = atomic_load_explicit(&idgen__simd_state, memory_order_relaxed);
  if (s < 0) {
    s = IDGEN__SIMD_OFF;
#if HAVE_VBMI
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi") &&
        __builtin_cpu_supports("avx2"))
      s = IDGEN__SIMD_VBMI;
    else if (__builtin_cpu_supports("avx2"))
      s = IDGEN__SIMD_AVX2;
#endif
    int cap = atomic_load_explicit(&simd_cap, memory_order_relaxed);
    if (s > cap)
      s = cap < IDGEN__SIMD_OFF ? IDGEN__SIMD_OFF : cap;
    atomic_store_explicit(&idgen__simd_state, s, memory_order_relaxed);
  }
  return s;
}

const char *idgen__simd_name(int level) {
  return level >= IDGEN__SIMD_VBMI ? "AVX-512 VBMI" : level == IDGEN__SIMD_AVX2 ? "AVX2" : "scalar";
}

#if HAVE_VBMI

/* Looks up the low 7 bits of each byte of x in a 128-entry table. */
VBMI static inline __m512i lookup128(__m512i x, const unsigned char *table) {
  __m512i lo = _mm512_loadu_si512((const void *)table);
  __m512i hi = _mm512_loadu_si512((const void *)(table + 64));
  return _mm512_permutex2var_epi8(lo, x, hi);
}

VBMI int idgen__ulid_decode_vbmi(const char *s, int lenient, uint8_t *out) {
  const unsigned char *table = lenient ? idgen__ulid_lenient : idgen__ulid_strict;
  __m512i in = _mm512_maskz_loadu_epi8((1ULL << 26) - 1, s);
  __m512i v = lookup128(in, table);
  /* Bad: a byte >= 0x80 in the input, or a lookup of 0xff (both have the
   * top bit set), among the 26 characters. */
  __mmask64 bad = _mm512_movepi8_mask(_mm512_or_si512(in, v)) & ((1ULL << 26) - 1);
  if (bad)
    return -1;
  /* Shift right by 6 characters, zero-filling: 32 values = 160 bits. */
  static const uint8_t shift6[32] = {0,  0,  0,  0,  0,  0,  0,  1,  2,  3,  4,
                                     5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                     16, 17, 18, 19, 20, 21, 22, 23, 24, 25};
  __m256i vals = _mm256_maskz_permutexvar_epi8(~0x3fu, _mm256_loadu_si256((const void *)shift6),
                                               _mm512_castsi512_si256(v));
  __m256i w10 = _mm256_maddubs_epi16(vals, _mm256_set1_epi16(0x0120)); /* a*32+b */
  __m256i w20 = _mm256_madd_epi16(w10, _mm256_set1_epi32(0x00010400)); /* a*1024+b */
  /* Each qword: low dword A (first 20 bits), high dword B: want A << 20 | B. */
  __m256i a20 = _mm256_and_si256(w20, _mm256_set1_epi64x(0xfffff));
  __m256i q40 = _mm256_or_si256(_mm256_slli_epi64(a20, 20), _mm256_srli_epi64(w20, 32));
  /* The top 32 of the 160 bits (qword 0, bits 39..8) must be zero: a first
   * character above 7 overflows 128 bits. */
  if ((uint64_t)_mm256_extract_epi64(q40, 0) >> 8)
    return -1;
  static const uint8_t gather[32] = {0, 12, 11, 10, 9, 8, 20, 19, 18, 17, 16, 28, 27, 26, 25, 24};
  __m256i bytes = _mm256_permutexvar_epi8(_mm256_loadu_si256((const void *)gather), q40);
  _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(bytes));
  return 0;
}

/* ULID encoding: each of the 26 characters is a 5-bit group of the 130-bit
 * number (2 zero bits, then the 128), character i at bits 125-5i and up.
 * vpmultishiftqb takes 8 bits at any offset within a qword, so each of 4
 * qwords holds a window of the number that contains its characters' groups
 * whole: the number >> 66 (characters 0-7; its top 2 bits are the zero
 * padding), >> 50 (8-15), >> 35 (11-18) and itself (19-25).  Masked to 5
 * bits, vpermb looks them up in the alphabet, with the last byte zeroed: the
 * low lane is characters 0-15, the high lane 11-25 and the NUL, stored as two
 * overlapping 16-byte stores (characters 11-15 twice, equal). */
VBMI void idgen__ulid_encode_vbmi(uint64_t hi, uint64_t lo, char *out) {
  static const uint8_t offsets[32] = {59, 54, 49, 44, 39, 34, 29, 24, 35, 30, 25, 20, 15, 10, 5, 0,
                                      35, 30, 25, 20, 15, 10, 5,  0,  30, 25, 20, 15, 10, 5,  0, 0};
  static const char alphabet[33] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
  __m256i windows = _mm256_set_epi64x((long long)lo, (long long)(hi << 29 | lo >> 35),
                                      (long long)(hi << 14 | lo >> 50), (long long)(hi >> 2));
  __m256i groups = _mm256_and_si256(
      _mm256_multishift_epi64_epi8(_mm256_loadu_si256((const void *)offsets), windows),
      _mm256_set1_epi8(0x1f));
  __m256i chars = _mm256_maskz_permutexvar_epi8(0x7fffffffu, groups,
                                                _mm256_loadu_si256((const void *)alphabet));
  _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(chars));
  _mm_storeu_si128((__m128i *)(out + 11), _mm256_extracti128_si256(chars, 1));
}

VBMI int idgen__uuid_parse36_vbmi(const char *s, uint8_t *out) {
  __m512i in = _mm512_maskz_loadu_epi8((1ULL << 36) - 1, s);
  const __mmask64 dashes = (1ULL << 8) | (1ULL << 13) | (1ULL << 18) | (1ULL << 23);
  if (_mm512_mask_cmpneq_epi8_mask(dashes, in, _mm512_set1_epi8('-')))
    return -1;
  static const uint8_t digits[64] = {0,  1,  2,  3,  4,  5,  6,  7,  9,  10, 11,
                                     12, 14, 15, 16, 17, 19, 20, 21, 22, 24, 25,
                                     26, 27, 28, 29, 30, 31, 32, 33, 34, 35};
  __m512i hex = _mm512_permutexvar_epi8(_mm512_loadu_si512((const void *)digits), in);
  __m512i v = lookup128(hex, idgen__hex);
  if (_mm512_movepi8_mask(_mm512_or_si512(hex, v)) & 0xffffffffULL)
    return -1;
  __m256i nib = _mm512_castsi512_si256(v);
  __m256i w = _mm256_maddubs_epi16(nib, _mm256_set1_epi16(0x0110)); /* hi*16+lo */
  _mm_storeu_si128((__m128i *)out, _mm256_cvtepi16_epi8(w));
  return 0;
}

/* Signed byte comparisons, so a byte of 0x80 or above (negative) is in no
 * range: lo <= x <= hi, for lo > 0. */
AVX2 static inline __m256i in_range(__m256i x, char lo, char hi) {
  return _mm256_and_si256(_mm256_cmpgt_epi8(x, _mm256_set1_epi8((char)(lo - 1))),
                          _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(hi + 1)), x));
}
AVX2 static inline __m256i is(__m256i x, char c) {
  return _mm256_cmpeq_epi8(x, _mm256_set1_epi8(c));
}

/* The same 16 bytes in both lanes (vpshufb looks up within each lane). */
#define LANES(...) _mm256_setr_epi8(__VA_ARGS__, __VA_ARGS__)

/* As the VBMI decoder, from two overlapping loads (s[0..15] moved up by six
 * places, with '0's below, and s[10..25]): 32 characters, the first six
 * '0's.  Each character is looked up by its two nibbles.  Its high nibble
 * gives its row of the ASCII table: 3 (digits: bit 0), 4 or 6 (A-O, either
 * case: bit 1), 5 or 7 (P-Z: bit 2), else none; its low nibble, the rows in
 * which it is in the alphabet (I, L, O, U and the punctuation around the
 * letters are not; lenient decoding takes I, L and O).  The value is the low
 * nibble in row 3, else from a 16-entry table of the row (in row 4, I and L
 * are 1 and O is 0, for lenient decoding). */
AVX2 int idgen__ulid_decode_avx2(const char *s, int lenient, uint8_t *out) {
  __m128i a = _mm_loadu_si128((const __m128i *)s);
  __m128i b = _mm_loadu_si128((const __m128i *)(s + 10));
  a = _mm_or_si128(_mm_slli_si128(a, 6),
                   _mm_setr_epi8('0', '0', '0', '0', '0', '0', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
  __m256i c = _mm256_set_m128i(b, a);
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  __m256i lo = _mm256_and_si256(c, nibble);
  __m256i row = _mm256_shuffle_epi8(LANES(0, 0, 0, 1, 2, 4, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0),
                                    _mm256_and_si256(_mm256_srli_epi16(c, 4), nibble));
  __m256i in = lenient ? LANES(5, 7, 7, 7, 7, 3, 7, 7, 7, 7, 6, 2, 2, 2, 2, 2)
                       : LANES(5, 7, 7, 7, 7, 3, 7, 7, 7, 5, 6, 2, 0, 2, 2, 0);
  __m256i ok = _mm256_and_si256(row, _mm256_shuffle_epi8(in, lo));
  if (_mm256_movemask_epi8(_mm256_cmpeq_epi8(ok, _mm256_setzero_si256())) != 0)
    return -1;
  const __m256i a_to_o = LANES(0, 10, 11, 12, 13, 14, 15, 16, 17, 1, 18, 19, 1, 20, 21, 0);
  const __m256i p_to_z = LANES(22, 23, 24, 25, 26, 0, 27, 28, 29, 30, 31, 0, 0, 0, 0, 0);
  __m256i vals = _mm256_blendv_epi8(lo, _mm256_shuffle_epi8(a_to_o, lo),
                                    _mm256_cmpeq_epi8(row, _mm256_set1_epi8(2)));
  vals = _mm256_blendv_epi8(vals, _mm256_shuffle_epi8(p_to_z, lo),
                            _mm256_cmpeq_epi8(row, _mm256_set1_epi8(4)));
  __m256i w10 = _mm256_maddubs_epi16(vals, _mm256_set1_epi16(0x0120)); /* a*32+b */
  __m256i w20 = _mm256_madd_epi16(w10, _mm256_set1_epi32(0x00010400)); /* a*1024+b */
  __m256i a20 = _mm256_and_si256(w20, _mm256_set1_epi64x(0xfffff));
  __m256i q40 = _mm256_or_si256(_mm256_slli_epi64(a20, 20), _mm256_srli_epi64(w20, 32));
  if ((uint64_t)_mm_cvtsi128_si64(_mm256_castsi256_si128(q40)) >> 8) /* above 128 bits */
    return -1;
  /* Byte 0 of qword 0, then bytes 4..0 of qwords 1, 2 and 3, each lane's
   * share in its own bytes of the 16. */
  const __m256i gather =
      _mm256_setr_epi8(0, 12, 11, 10, 9, 8, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                       -1, -1, 4, 3, 2, 1, 0, 12, 11, 10, 9, 8);
  __m256i g = _mm256_shuffle_epi8(q40, gather);
  _mm_storeu_si128((__m128i *)out,
                   _mm_or_si128(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1)));
  return 0;
}

/* As the VBMI parser, from s[0..31] and s[4..35]: the dashes checked in the
 * first, the 32 hex digits gathered from both (each lane from the same lane
 * of the two: s[0..15] and s[4..19], s[16..31] and s[20..35]). */
AVX2 int idgen__uuid_parse36_avx2(const char *s, uint8_t *out) {
  __m256i v1 = _mm256_loadu_si256((const __m256i *)s);
  __m256i v2 = _mm256_loadu_si256((const __m256i *)(s + 4));
  const unsigned dashes = 1u << 8 | 1u << 13 | 1u << 18 | 1u << 23;
  if (((unsigned)_mm256_movemask_epi8(is(v1, '-')) & dashes) != dashes)
    return -1;
  const __m256i from1 = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 14, 15, -1, -1, 3,
                                         4, 5, 6, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m256i from2 =
      _mm256_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 12, 13, -1, -1, -1,
                       -1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m256i c = _mm256_or_si256(_mm256_shuffle_epi8(v1, from1), _mm256_shuffle_epi8(v2, from2));
  __m256i digit = in_range(c, '0', '9');
  __m256i alpha = in_range(_mm256_or_si256(c, _mm256_set1_epi8(0x20)), 'a', 'f');
  if (_mm256_movemask_epi8(_mm256_or_si256(digit, alpha)) != -1)
    return -1;
  /* '0'-'9' and 'a'/'A'-'f'/'F' end in 0-9 and 1-6 */
  __m256i nib = _mm256_add_epi8(_mm256_and_si256(c, _mm256_set1_epi8(0x0f)),
                                _mm256_and_si256(alpha, _mm256_set1_epi8(9)));
  __m256i w = _mm256_maddubs_epi16(nib, _mm256_set1_epi16(0x0110)); /* hi*16+lo */
  __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi16(w, w), 0x08);
  _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(p));
  return 0;
}

#else

int idgen__ulid_decode_vbmi(const char *s, int lenient, uint8_t *out) {
  (void)s, (void)lenient, (void)out;
  return -1;
}

int idgen__uuid_parse36_vbmi(const char *s, uint8_t *out) {
  (void)s, (void)out;
  return -1;
}

int idgen__ulid_decode_avx2(const char *s, int lenient, uint8_t *out) {
  (void)s, (void)lenient, (void)out;
  return -1;
}

int idgen__uuid_parse36_avx2(const char *s, uint8_t *out) {
  (void)s, (void)out;
  return -1;
}

#endif
