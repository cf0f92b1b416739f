/*
 * fuzz_lease_record.c -- libFuzzer target for the file: registry's record
 * parsers (src/core/registry_file.c): a tuple's lease record, a pool's
 * record, and a pool file's tuple slot.  A record that is accepted must be exactly the record's size, in
 * canonical form (written back, the same bytes), with a mark that is not
 * negative; anything else is rejected, never read as some mark (a wrong
 * mark could repeat IDs).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

/* The input as read from a file, and padded to a whole record of `size`
 * bytes (so that short inputs reach the field parsing too). */
static size_t padded(const uint8_t *data, size_t size, char *out, size_t record) {
  memset(out, ' ', record);
  memcpy(out, data, size < record ? size : record);
  out[record - 1] = '\n';
  return record;
}

static void lease(const char *in, size_t n) {
  idgen__lease_record_t rec;
  char again[IDGEN__LEASE_RECORD_SIZE];
  if (idgen__lease_record_parse(in, n, &rec) < 0) {
    if (rec.generation != 0 || rec.mark_ms != 0 || rec.key != 0 || rec.holder[0] != '\0')
      abort(); /* a rejected record leaves nothing behind */
    return;
  }
  if (n != IDGEN__LEASE_RECORD_SIZE || rec.mark_ms < 0)
    abort();
  if (idgen__lease_record_format(again, &rec) < 0 || memcmp(again, in, n) != 0)
    abort();
}

static void pool(const char *in, size_t n) {
  int64_t mark;
  char layout[IDGEN__POOL_RECORD_SIZE], again[IDGEN__POOL_RECORD_SIZE];
  if (idgen__pool_record_parse(in, n, &mark, layout, sizeof layout) < 0) {
    if (mark != 0 || layout[0] != '\0')
      abort();
    return;
  }
  if (n != IDGEN__POOL_RECORD_SIZE || mark < 0)
    abort();
  if (idgen__pool_record_format(again, mark, layout) < 0 || memcmp(again, in, n) != 0)
    abort();
}

static void slot(const char *in, size_t n) {
  uint64_t key;
  int64_t mark;
  char again[IDGEN__POOL_SLOT_SIZE];
  if (idgen__pool_slot_parse(in, n, &key, &mark) < 0) {
    if (key != 0 || mark != 0)
      abort();
    return;
  }
  if (n != IDGEN__POOL_SLOT_SIZE || mark < 0)
    abort();
  if (idgen__pool_slot_format(again, key, mark) < 0 || memcmp(again, in, n) != 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char l[IDGEN__LEASE_RECORD_SIZE], p[IDGEN__POOL_RECORD_SIZE];
  lease((const char *)data, size);
  lease(l, padded(data, size, l, sizeof l));
  pool((const char *)data, size);
  pool(p, padded(data, size, p, sizeof p));
  char t[IDGEN__POOL_SLOT_SIZE];
  slot((const char *)data, size);
  slot(t, padded(data, size, t, sizeof t));
  return 0;
}
