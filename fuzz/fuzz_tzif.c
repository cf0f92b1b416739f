/*
 * fuzz_tzif.c -- libFuzzer target for the TZif reader (src/core/tzif.c).
 *
 * Properties checked on every input: the reader never crashes nor reads
 * past the bytes given; a rejection always says "tz: ..."; an accepted
 * zone's offsets stay within a day and a few hours, and its transitions,
 * walked from several times, are each later than the time asked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "tzif.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  idgen__tz_t *tz;
  /* A copy of exactly `size` bytes: ASan sees a read past the end. */
  uint8_t *buf = malloc(size ? size : 1);
  if (buf == NULL)
    return 0;
  memcpy(buf, data, size);
  err[0] = '\0';
  int rc = idgen__tz_parse(&tz, buf, size, err, sizeof err);
  free(buf);
  if (rc != 0) {
    if (strncmp(err, "tz: ", 4) != 0)
      abort();
    return 0;
  }
  static const int64_t starts[] = {-62000000000LL, -2208988800LL, 0,
                                   1796299200LL,   4102444800LL,  253402000000LL};
  for (size_t i = 0; i < sizeof starts / sizeof starts[0]; i++) {
    int64_t t = starts[i];
    for (int k = 0; k < 8; k++) {
      int32_t off = idgen__tz_offset(tz, t);
      if (off < -26 * 3600 || off > 26 * 3600)
        abort();
      int64_t next = idgen__tz_next(tz, t);
      if (next <= t)
        abort();
      if (next == INT64_MAX || next > 253402300799LL)
        break;
      t = next;
    }
  }
  idgen__tz_free(tz);
  return 0;
}
