/*
 * fuzz_seq_record.c -- libFuzzer target for a sequence counter's record
 * (src/registry/seq_record.c, one text in every backend).
 *   - A record that is accepted is written back byte for byte, and parsed
 *     again to the same record; a rejected one leaves an empty record and
 *     says why.
 *   - Transitions on an accepted record (a claim, a renewal, a close, a
 *     reap, a register with a late report), driven by its bytes, keep the
 *     accounting identity and give a record that is accepted again.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"
#include "seq_int.h"

static uint64_t held(const idgen__seq_rec_t *r) {
  uint64_t n = 0;
  for (int i = 0; i < r->n; i++)
    n += r->h[i].claimed - r->h[i].issued;
  return n;
}

static void again(const idgen__seq_rec_t *r) {
  static char buf[IDGEN__SEQ_TEXT_MAX];
  static idgen__seq_rec_t back;
  char err[256];
  if (r->claimed != r->issued + r->given + r->lost + held(r))
    abort();
  int n = idgen__seq_rec_format(r, buf, sizeof buf);
  if (n < 0 || idgen__seq_rec_parse(buf, (size_t)n, &back, err, sizeof err) < 0)
    abort();
}

static void transitions(idgen__seq_rec_t *r, const uint8_t *data, size_t size) {
  uint64_t x = 0, lo = 0, hi = 0, gen, given;
  char err[256];
  for (size_t i = 0; i < size && i < 8; i++)
    x = x << 8 | data[i];
  int64_t now = (int64_t)(x % 100000);
  uint64_t g = r->n ? r->h[x % (unsigned)r->n].gen : 1;
  idgen__seq_claim(r, g, x % 1000 + 1, now, 100, x % 50, 0, &lo, &hi, err, sizeof err);
  again(r);
  idgen__seq_renew(r, g, now + 10, 100, x % 70, 0, err, sizeof err);
  again(r);
  uint64_t u = lo + x % 7;
  if (u > hi)
    u = hi;
  idgen__seq_close(r, g, now + 20, 100, &u, &hi, 1, x % 90, x % 30, &given, err, sizeof err);
  again(r);
  idgen__seq_late_t late = {x % 5, x % 11};
  idgen__seq_register(r, "fuzz:1:x", now + 30, 100, (int)(x & 1), &late, &gen, err, sizeof err);
  again(r);
  idgen__seq_reap(r, now + 1000, 100);
  again(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static idgen__seq_rec_t rec;
  static char out[IDGEN__SEQ_TEXT_MAX];
  char err[256];
  err[0] = '\0';
  if (idgen__seq_rec_parse((const char *)data, size, &rec, err, sizeof err) < 0) {
    if (rec.n != 0 || rec.next != 0 || err[0] == '\0')
      abort();
    return 0;
  }
  int n = idgen__seq_rec_format(&rec, out, sizeof out);
  if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
    abort();
  again(&rec);
  transitions(&rec, data, size);
  return 0;
}
