/*
 * seqfmt_stub.c -- stands in for the business-number templates until they
 * are built: every template is refused.
 */
#include <stdint.h>

#include "core_int.h"

int idgen_seq_format_parse(idgen_seq_format_t **out, const char *tmpl, const char *tz, char *err,
                           size_t errlen) {
  (void)tmpl, (void)tz;
  *out = NULL;
  return idgen__err(err, errlen, IDGEN_EINVAL, "business-number templates are not built yet");
}

void idgen_seq_format_free(idgen_seq_format_t *f) { (void)f; }

int idgen_seq_format_period(const idgen_seq_format_t *f, int64_t unix_ms, char *key, size_t n,
                            int64_t *end_ms) {
  (void)f, (void)unix_ms;
  if (n)
    key[0] = '\0';
  if (end_ms)
    *end_ms = INT64_MAX;
  return 0;
}

int idgen_seq_format_render(const idgen_seq_format_t *f, int64_t unix_ms, uint64_t n, char *buf,
                            size_t buflen) {
  (void)f, (void)unix_ms, (void)n, (void)buf, (void)buflen;
  return IDGEN_ERANGE;
}

int idgen_seq_format_width(const idgen_seq_format_t *f) {
  (void)f;
  return 0;
}

double idgen_seq_format_periods_per_year(const idgen_seq_format_t *f) {
  (void)f;
  return 0;
}
