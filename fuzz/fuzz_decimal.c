/*
 * fuzz_decimal.c -- libFuzzer target for decimal Snowflake ID parsing.
 *
 * Checks against a slow reference: the input is accepted exactly when it is
 * 1 to 20 digits with a value below 2^64 (and below 2^63 for the twitter
 * layout); accepted values print back to the input without leading zeros;
 * every rejection has a message.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference: 0 ok, 1 not digits, 2 too large for 64 bits. */
static int reference(const uint8_t *d, size_t n, uint64_t *v) {
  if (n == 0)
    return 1;
  unsigned __int128 x = 0;
  for (size_t i = 0; i < n; i++) {
    if (d[i] < '0' || d[i] > '9')
      return 1;
    x = x * 10 + (d[i] - '0');
    if (x > UINT64_MAX)
      return 2;
  }
  *v = (uint64_t)x;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static idgen_layout_t twitter;
  static int init;
  if (!init) {
    idgen_layout_parse(&twitter, "twitter", NULL, 0);
    init = 1;
  }
  char err[256] = "";
  uint64_t id = 0, want = 0;
  int ref = reference(data, size, &want);
  int rc = idgen_snowflake_parse(NULL, (const char *)data, size, &id, err, sizeof err);
  if ((rc == 0) != (ref == 0))
    abort();
  if (rc != 0 && err[0] == '\0')
    abort();
  if (rc == 0) {
    if (id != want)
      abort();
    char back[32];
    snprintf(back, sizeof back, "%" PRIu64, id);
    size_t skip = 0;
    while (skip + 1 < size && data[skip] == '0')
      skip++;
    if (strlen(back) != size - skip || memcmp(back, data + skip, size - skip) != 0)
      abort();
  }
  err[0] = '\0';
  rc = idgen_snowflake_parse(&twitter, (const char *)data, size, &id, err, sizeof err);
  if ((rc == 0) != (ref == 0 && want < (UINT64_C(1) << 63)))
    abort();
  if (rc != 0 && err[0] == '\0')
    abort();
  return 0;
}
