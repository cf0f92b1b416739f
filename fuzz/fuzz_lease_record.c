/*
 * fuzz_lease_record.c -- libFuzzer target for the file: registry's lease
 * record parser (src/core/registry_file.c).  A record that is accepted must
 * be exactly 256 bytes, in canonical form (written back, the same bytes),
 * with a mark that is not negative; anything else is rejected, never read
 * as some mark (a wrong mark could repeat IDs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint64_t gen;
  int64_t mark;
  char holder[300], again[IDGEN__LEASE_RECORD_SIZE];
  /* As read from a file: the bytes as they are, and padded to a whole record
   * (so that short inputs reach the field parsing too). */
  char padded[IDGEN__LEASE_RECORD_SIZE];
  memset(padded, ' ', sizeof padded);
  memcpy(padded, data, size < sizeof padded ? size : sizeof padded);
  padded[sizeof padded - 1] = '\n';
  const char *inputs[2] = {(const char *)data, padded};
  size_t sizes[2] = {size, sizeof padded};
  for (int i = 0; i < 2; i++) {
    if (idgen__lease_record_parse(inputs[i], sizes[i], &gen, &mark, holder, sizeof holder) < 0) {
      if (gen != 0 || mark != 0)
        abort(); /* a rejected record leaves nothing behind */
      continue;
    }
    if (sizes[i] != IDGEN__LEASE_RECORD_SIZE || mark < 0)
      abort();
    if (idgen__lease_record_format(again, gen, mark, holder) < 0 ||
        memcmp(again, inputs[i], IDGEN__LEASE_RECORD_SIZE) != 0)
      abort();
  }
  return 0;
}
