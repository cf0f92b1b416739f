/*
 * fuzz_public_keys.c -- libFuzzer target for the key-file parser
 * (idgen__public_keys_parse, the text of a file idgen_public_keys_load has
 * checked).
 *
 * Properties: never crashes; a rejection is IDGEN_EPARSE with a message
 * starting with the file's name and holding no run of 16 or more hex digits
 * (so no key, whole or in part, from the input); an accepted file holds 1 to
 * 32 versions, ascending and distinct, each of 1..32, and a codec can be made
 * from it.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "public_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void no_hex_run(const char *err) {
  size_t run = 0;
  for (const char *c = err; *c; c++) {
    run = isxdigit((unsigned char)*c) ? run + 1 : 0;
    if (run >= 16)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  idgen_public_keys_t *k = NULL;
  char err[256] = "";
  int rc = idgen__public_keys_parse(&k, (const char *)data, size, "fuzz", err, sizeof err);
  if (rc != 0) {
    if (rc != IDGEN_EPARSE || k != NULL || strncmp(err, "fuzz", 4) != 0)
      abort();
    no_hex_run(err);
    return 0;
  }
  unsigned v[IDGEN_PUBLIC_VERSION_MAX + 1];
  size_t n = idgen_public_keys_versions(k, v, IDGEN_PUBLIC_VERSION_MAX + 1);
  if (n < 1 || n > IDGEN_PUBLIC_VERSION_MAX || idgen_public_keys_newest(k) != v[n - 1])
    abort();
  for (size_t i = 0; i < n; i++)
    if (v[i] < 1 || v[i] > IDGEN_PUBLIC_VERSION_MAX || (i > 0 && v[i] <= v[i - 1]))
      abort();
  idgen_public_settings_t s = {.kind = IDGEN_PUBLIC_SNOWFLAKE, .version = v[0]};
  idgen_public_t *p;
  if (idgen_public_new(&p, k, &s, err, sizeof err) != 0)
    abort();
  idgen_public_free(p);
  idgen_public_keys_free(k);
  return 0;
}
