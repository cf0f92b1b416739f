/*
 * fuzz_uuid.c -- libFuzzer target for UUID parsing.
 *
 * Properties: never crashes; a rejection has a message starting "UUID: ";
 * an accepted input formats back to its canonical lower-case 8-4-4-4-12 form
 * (compared with the input's hex digits, case folded), which parses to the
 * same bytes.  Where the CPU has the SIMD fast paths (AVX2, AVX-512 VBMI),
 * their results must equal the scalar path's.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core_int.h"
#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  idgen_uuid_t u, back, a, b;
  /* The scalar path and each SIMD level the CPU has agree. */
  memset(&a, 0, sizeof a);
  idgen__simd_enable(IDGEN__SIMD_OFF);
  int r1 = idgen_uuid_parse(&a, (const char *)data, size, NULL, 0);
  for (int level = IDGEN__SIMD_AVX2; level <= IDGEN__SIMD_VBMI; level++) {
    memset(&b, 0, sizeof b);
    idgen__simd_enable(level);
    int r2 = idgen_uuid_parse(&b, (const char *)data, size, NULL, 0);
    if (r1 != r2 || (r1 == 0 && memcmp(a.bytes, b.bytes, 16) != 0))
      abort();
  }
  char err[256] = "", text[IDGEN_UUID_STRLEN + 1];
  if (idgen_uuid_parse(&u, (const char *)data, size, err, sizeof err) != 0) {
    if (strncmp(err, "UUID: ", 6) != 0)
      abort();
    return 0;
  }
  idgen_uuid_format(&u, text);
  /* The input's hex digits, folded to lower case, are the output's. */
  const uint8_t *p = data;
  size_t n = size;
  if (n >= 9 && strncasecmp((const char *)p, "urn:uuid:", 9) == 0) {
    p += 9;
    n -= 9;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    char c = (char)p[i];
    if (c == '-')
      continue;
    if (c >= 'A' && c <= 'F')
      c = (char)(c + 32);
    while (text[k] == '-')
      k++;
    if (text[k++] != c)
      abort();
  }
  if (idgen_uuid_parse(&back, text, IDGEN_UUID_STRLEN, NULL, 0) != 0 ||
      memcmp(u.bytes, back.bytes, 16) != 0)
    abort();
  return 0;
}
