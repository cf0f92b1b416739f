/*
 * simd.c -- AVX-512 VBMI fast paths for ULID decoding and encoding and UUID
 * parsing.
 *
 * The decoders only *accept*: given a string of the right length, they decode it if
 * every character is valid and report failure otherwise, and the caller then
 * runs the portable scalar code, which decides and words the error.  So the
 * scalar code stays the single source of truth for what is valid, and the
 * fuzz targets compare the two paths byte for byte.
 *
 * Used only where CPUID reports AVX-512 F, BW, VL and VBMI (Intel Ice Lake
 * and later, AMD Zen 4 and later), checked once at run time; valgrind hides
 * AVX-512, so callgrind counts measure the scalar path.
 * idgen__simd_enable(0) turns the fast paths off (tests use it to cover both).
 *
 * ULID: the 26 characters are looked up in a 128-entry table with one
 * vpermi2b, shifted right by 6 zero characters (making 32 characters = 160
 * bits whose top 32 bits must be zero), then packed 2 -> 10 bits
 * (vpmaddubsw), 4 -> 20 bits (vpmaddwd), 8 -> 40 bits (shifts), and the 16
 * output bytes gathered big-endian with one vpermb.
 * UUID: one vpermb gathers the 32 hex digits out of the 36 characters, a
 * vpermi2b looks them up, and vpmaddubsw + vpmovwb pack the nibbles.
 */
#include <stdatomic.h>
#include <string.h>

#include "core_int.h"
#include "tables.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_VBMI 1
#define VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi")))
#else
#define HAVE_VBMI 0
#endif

_Atomic int idgen__simd_state = -1; /* -1 unknown, 0 off, 1 on */

void idgen__simd_enable(int on) {
  if (!on) {
    atomic_store_explicit(&idgen__simd_state, 0, memory_order_relaxed);
    return;
  }
  atomic_store_explicit(&idgen__simd_state, -1, memory_order_relaxed);
}

int idgen__simd_available(void) {
  int s = atomic_load_explicit(&idgen__simd_state, memory_order_relaxed);
  if (s < 0) {
#if HAVE_VBMI
    __builtin_cpu_init();
    s = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vbmi");
#else
    s = 0;
#endif
    atomic_store_explicit(&idgen__simd_state, s, memory_order_relaxed);
  }
  return s;
}

#if HAVE_VBMI

/* Looks up the low 7 bits of each byte of x in a 128-entry table. */
VBMI static inline __m512i lookup128(__m512i x, const unsigned char *table) {
  __m512i lo = _mm512_loadu_si512((const void *)table);
  __m512i hi = _mm512_loadu_si512((const void *)(table + 64));
  return _mm512_permutex2var_epi8(lo, x, hi);
}

VBMI int idgen__ulid_decode_simd(const char *s, int lenient, uint8_t *out) {
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
  __m256i w10 = _mm256_maddubs_epi16(vals, _mm256_set1_epi16(0x0120));          /* a*32+b */
  __m256i w20 = _mm256_madd_epi16(w10, _mm256_set1_epi32(0x00010400));          /* a*1024+b */
  /* Each qword: low dword A (first 20 bits), high dword B: want A << 20 | B. */
  __m256i a20 = _mm256_and_si256(w20, _mm256_set1_epi64x(0xfffff));
  __m256i q40 = _mm256_or_si256(_mm256_slli_epi64(a20, 20), _mm256_srli_epi64(w20, 32));
  /* The top 32 of the 160 bits (qword 0, bits 39..8) must be zero: a first
   * character above 7 overflows 128 bits. */
  if ((uint64_t)_mm256_extract_epi64(q40, 0) >> 8)
    return -1;
  static const uint8_t gather[32] = {0,  12, 11, 10, 9,  8,  20, 19, 18, 17, 16,
                                     28, 27, 26, 25, 24};
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
VBMI static void ulid_encode_simd(uint64_t hi, uint64_t lo, char *out) {
  static const uint8_t offsets[32] = {59, 54, 49, 44, 39, 34, 29, 24, 35, 30, 25, 20, 15, 10, 5, 0,
                                      35, 30, 25, 20, 15, 10, 5,  0,  30, 25, 20, 15, 10, 5, 0, 0};
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

VBMI int idgen__uuid_parse36_simd(const char *s, uint8_t *out) {
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

#else

int idgen__ulid_decode_simd(const char *s, int lenient, uint8_t *out) {
  (void)s, (void)lenient, (void)out;
  return -1;
}

int idgen__uuid_parse36_simd(const char *s, uint8_t *out) {
  (void)s, (void)out;
  return -1;
}

#endif

void idgen__ulid_encode_fast(uint64_t hi, uint64_t lo, char *out) {
#if HAVE_VBMI
  if (idgen__simd_available()) {
    ulid_encode_simd(hi, lo, out);
    return;
  }
#endif
  idgen__ulid_encode_scalar(hi, lo, out);
}
