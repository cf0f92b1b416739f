/*
 * test_seq_rotate.c -- a sequence with a business-number format rotates
 * to the counter "NAME@PERIOD" when the period of its clock changes: a new
 * holder on the new key, the old one closed.  The format here is a stand-in
 * defined in this file (periods of one second, text "P<period>-<n>"), so
 * that the rotation is tested apart from the templates' own code (the
 * static library's templates are then not linked in).
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry_int.h"
#include "seq_int.h"

struct idgen_seq_format {
  int unused;
};

int idgen_seq_format_parse(idgen_seq_format_t **out, const char *tmpl, const char *tz, char *err,
                           size_t errlen) {
  (void)tz, (void)err, (void)errlen;
  if (strcmp(tmpl, "per-second") != 0)
    return IDGEN_EINVAL;
  *out = calloc(1, sizeof **out);
  return *out ? 0 : IDGEN_ENOMEM;
}

void idgen_seq_format_free(idgen_seq_format_t *f) { free(f); }

int idgen_seq_format_period(const idgen_seq_format_t *f, int64_t unix_ms, char *key, size_t n,
                            int64_t *end_ms) {
  (void)f;
  snprintf(key, n, "%" PRId64, unix_ms / 1000);
  if (end_ms)
    *end_ms = (unix_ms / 1000 + 1) * 1000;
  return 0;
}

int idgen_seq_format_render(const idgen_seq_format_t *f, int64_t unix_ms, uint64_t n, char *buf,
                            size_t buflen) {
  (void)f;
  int w = snprintf(buf, buflen, "P%" PRId64 "-%" PRIu64, unix_ms / 1000, n);
  return w < 0 || (size_t)w >= buflen ? IDGEN_ERANGE : w;
}

int idgen_seq_format_width(const idgen_seq_format_t *f) {
  (void)f;
  return 0;
}

double idgen_seq_format_periods_per_year(const idgen_seq_format_t *f) {
  (void)f;
  return 31536000;
}

typedef struct fake_clock {
  _Atomic int64_t ns;
} fake_clock_t;

static int64_t fake_now(void *ctx) { return atomic_load(&((fake_clock_t *)ctx)->ns); }
static void fake_sleep(void *ctx, int64_t ns) { atomic_fetch_add(&((fake_clock_t *)ctx)->ns, ns); }

typedef struct seen {
  int n;
  char keys[4][IDGEN_SEQ_KEY_MAX];
  int holders[4];
  uint64_t issued[4];
} seen_t;

static int list_cb(void *ctx, const idgen_seq_row_t *row) {
  seen_t *s = ctx;
  if (s->n < 4) {
    snprintf(s->keys[s->n], sizeof s->keys[0], "%s", row->key);
    s->holders[s->n] = row->nholders;
    s->issued[s->n] = row->issued;
    s->n++;
  }
  return 0;
}

static void test_rotation(void **state) {
  (void)state;
  char dir[] = "/tmp/idgen-seqrot-XXXXXX", uri[64], err[256], text[64], cmd[96];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  fake_clock_t fc = {1800000000500000000}; /* 1800000000.5 s */
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.format = "per-second";
  set.ttl_ms = 86400000;
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  uint64_t n;
  assert_int_equal(idgen_seq_next_text(s, text, sizeof text, &n), (int)strlen("P1800000000-1"));
  assert_string_equal(text, "P1800000000-1");
  assert_int_equal(idgen_seq_next_text(s, text, sizeof text, &n), (int)strlen(text));
  assert_string_equal(text, "P1800000000-2");
  idgen_seq_stats_t st;
  idgen_seq_stats(s, &st);
  assert_string_equal(st.key, "orders@1800000000");
  /* The next second: a new counter from 1, the old holder closed. */
  fake_sleep(&fc, 600000000);
  assert_true(idgen_seq_next_text(s, text, sizeof text, &n) > 0);
  assert_string_equal(text, "P1800000001-1");
  assert_int_equal(n, 1);
  idgen_seq_stats(s, &st);
  assert_string_equal(st.key, "orders@1800000001");
  seen_t seen = {0};
  assert_int_equal(idgen_seq_list(r, list_cb, &seen, err, sizeof err), 0);
  assert_int_equal(seen.n, 2);
  assert_string_equal(seen.keys[0], "orders@1800000000");
  assert_int_equal(seen.holders[0], 0);
  assert_int_equal(seen.issued[0], 2);
  assert_string_equal(seen.keys[1], "orders@1800000001");
  assert_int_equal(seen.holders[1], 1);
  /* idgen_seq_next on a formatted sequence takes from the current period. */
  assert_int_equal(idgen_seq_next(s, &n), 0);
  assert_int_equal(n, 2);
  idgen_seq_close(s);
  idgen_registry_close(r);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_rotation)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
