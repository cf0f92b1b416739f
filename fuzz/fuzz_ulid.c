/*
 * fuzz_ulid.c -- libFuzzer target for ULID decoding, strict and lenient.
 *
 * Properties: never crashes; a rejection has a message starting "ULID: ";
 * strict acceptance implies lenient acceptance of the same bytes; an
 * accepted input decodes then encodes to its canonical form (upper case,
 * lenient aliases mapped, hyphens gone), and that form decodes strictly to
 * the same 16 bytes; the SIMD decoders the CPU has (AVX2, AVX-512 VBMI)
 * agree with the scalar one.
 */
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char canonical(char c) {
  if (c >= 'a' && c <= 'z')
    c = (char)(c - 32);
  if (c == 'I' || c == 'L')
    return '1';
  return c == 'O' ? '0' : c;
}

static void check(const uint8_t *data, size_t size, int mode) {
  idgen_ulid_t u, back;
  char err[256] = "", text[IDGEN_ULID_STRLEN + 1];
  if (idgen_ulid_parse(&u, (const char *)data, size, mode, err, sizeof err) != 0) {
    if (strncmp(err, "ULID: ", 6) != 0)
      abort();
    return;
  }
  idgen_ulid_format(&u, text);
  size_t n = 0;
  for (size_t i = 0; i < size; i++) {
    if (data[i] == '-' && mode == IDGEN_ULID_LENIENT)
      continue;
    if (n >= IDGEN_ULID_STRLEN || canonical((char)data[i]) != text[n])
      abort();
    n++;
  }
  if (n != IDGEN_ULID_STRLEN)
    abort();
  if (idgen_ulid_parse(&back, text, IDGEN_ULID_STRLEN, IDGEN_ULID_STRICT, NULL, 0) != 0 ||
      memcmp(u.bytes, back.bytes, 16) != 0)
    abort();
}

/* Decodes on the scalar path and at each SIMD level the CPU has (AVX2,
 * AVX-512 VBMI) and insists they agree. */
static void differential(const uint8_t *data, size_t size, int mode) {
  idgen_ulid_t a, b;
  memset(&a, 0, sizeof a);
  idgen__simd_enable(IDGEN__SIMD_OFF);
  int r1 = idgen_ulid_parse(&a, (const char *)data, size, mode, NULL, 0);
  for (int level = IDGEN__SIMD_AVX2; level <= IDGEN__SIMD_VBMI; level++) {
    memset(&b, 0, sizeof b);
    idgen__simd_enable(level);
    int r2 = idgen_ulid_parse(&b, (const char *)data, size, mode, NULL, 0);
    if (r1 != r2 || (r1 == 0 && memcmp(a.bytes, b.bytes, 16) != 0))
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  idgen_ulid_t u;
  differential(data, size, IDGEN_ULID_STRICT);
  differential(data, size, IDGEN_ULID_LENIENT);
  check(data, size, IDGEN_ULID_STRICT);
  check(data, size, IDGEN_ULID_LENIENT);
  if (idgen_ulid_parse(&u, (const char *)data, size, IDGEN_ULID_STRICT, NULL, 0) == 0 &&
      idgen_ulid_parse(&u, (const char *)data, size, IDGEN_ULID_LENIENT, NULL, 0) != 0)
    abort();
  return 0;
}
