/*
 * fuzz_seqfmt.c -- libFuzzer target for the business-number templates
 * (idgen_seq_format_* in idgen.h).
 *
 * Input: one byte choosing the time zone, eight bytes of unix_ms, eight of
 * the number, then the template.  Properties checked on every input: the
 * parser never crashes; a rejection says "format: ..." or "tz: ..."; an
 * accepted template renders any number at any time into a buffer of exactly
 * its length (ASan sees a byte past it), refuses a buffer one byte short,
 * renders the same text twice, and its period, where the time is in range,
 * ends after that time and has the same key just before it ends.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t le64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *zones[] = {
      NULL,           "UTC",           "America/New_York", "Asia/Shanghai", "Australia/Lord_Howe",
      "Asia/Kolkata", "../etc/passwd", "Nowhere"};
  char tmpl[512], err[256];
  if (size < 17 || size - 17 >= sizeof tmpl)
    return 0;
  const char *tz = zones[data[0] % 8];
  int64_t ms = (int64_t)le64(data + 1);
  uint64_t n = le64(data + 9);
  if (data[0] & 0x80) /* mostly times within the years that render */
    ms = (int64_t)((uint64_t)ms % 253000000000000ULL);
  memcpy(tmpl, data + 17, size - 17);
  tmpl[size - 17] = '\0';
  idgen_seq_format_t *f;
  err[0] = '\0';
  if (idgen_seq_format_parse(&f, tmpl, tz, err, sizeof err) != 0) {
    if (strncmp(err, "format: ", 8) != 0 && strncmp(err, "tz: ", 4) != 0)
      abort();
    return 0;
  }
  char big[1024];
  int len = idgen_seq_format_render(f, ms, n, big, sizeof big);
  if (len >= 0) {
    char *exact = malloc((size_t)len + 1);
    if (exact == NULL)
      abort();
    if (idgen_seq_format_render(f, ms, n, exact, (size_t)len + 1) != len ||
        memcmp(exact, big, (size_t)len + 1) != 0)
      abort();
    if (idgen_seq_format_render(f, ms, n, exact, (size_t)len) != IDGEN_ERANGE)
      abort();
    free(exact);
  } else if (len != IDGEN_ERANGE) {
    abort();
  }
  char key[64], key2[64];
  int64_t end;
  if (idgen_seq_format_period(f, ms, key, sizeof key, &end) == 0) {
    if (end <= ms && end != INT64_MAX) /* INT64_MAX: never ends */
      abort();
    if (end != INT64_MAX && idgen_seq_format_period(f, end - 1, key2, sizeof key2, NULL) == 0 &&
        strcmp(key, key2) != 0)
      abort();
  }
  idgen_seq_format_free(f);
  return 0;
}
