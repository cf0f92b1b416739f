/*
 * fuzz_layout.c -- libFuzzer target for the layout-spec parser.
 *
 * Properties checked on every input: the parser never crashes; a rejection
 * always comes with a message starting "layout: "; an accepted layout is
 * self-consistent (fields tile total_bits, time and sequence present, the
 * sequence below the time), formats to a spec that parses back to the same
 * layout, and compose/decompose round-trip on it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char spec[512], err[512], buf[IDGEN_LAYOUT_SPEC_MAX];
  idgen_layout_t l, back;
  if (size >= sizeof spec)
    return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  err[0] = '\0';
  if (idgen_layout_parse(&l, spec, err, sizeof err) != 0) {
    if (strncmp(err, "layout: ", 8) != 0)
      abort();
    return 0;
  }
  int bits = 0;
  for (int i = 0; i < l.nfields; i++)
    bits += l.fields[i].bits;
  if (bits != l.total_bits || bits > 64 || l.time_index < 0 || l.sequence_index < 0 ||
      l.sequence_index < l.time_index || l.unit_ms < 1)
    abort();
  if (idgen_layout_format(&l, buf, sizeof buf) < 0)
    abort();
  if (idgen_layout_parse(&back, buf, err, sizeof err) != 0)
    abort();
  memset(l.preset, 0, sizeof l.preset);
  if (memcmp(&l, &back, sizeof l) != 0)
    abort();

  /* Compose the largest value of every field at the last millisecond. */
  uint64_t v[IDGEN_LAYOUT_MAX_FIELDS], out[IDGEN_LAYOUT_MAX_FIELDS], id;
  for (int i = 0; i < l.nfields; i++)
    v[i] = (UINT64_C(1) << l.fields[i].bits) - 1;
  int64_t ms = idgen_layout_horizon_ms(&l) - 1, ms_back;
  if (idgen_layout_compose(&l, ms, v, &id, err, sizeof err) != 0)
    abort();
  if (idgen_layout_decompose(&l, id, out, &ms_back) != 0)
    abort();
  for (int i = 0; i < l.nfields; i++)
    if (out[i] != v[i])
      abort();
  if (ms_back > ms || ms - ms_back >= l.unit_ms)
    abort();
  return 0;
}
