/*
 * test_seq_rotate.c -- a sequence with a business-number format rotates
 * to the counter "NAME@PERIOD" when the period of its clock changes: a new
 * holder on the new key, the old one closed.  Periods of one minute, by an
 * injected clock.
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
  fake_clock_t fc = {1800000000500000000}; /* 2027-01-15T08:00:00.5Z */
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.format = "P{date:%Y%m%d%H%M}-{seq}";
  set.ttl_ms = 86400000;
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  uint64_t n;
  assert_int_equal(idgen_seq_next_text(s, text, sizeof text, &n), (int)strlen("P202701150800-1"));
  assert_string_equal(text, "P202701150800-1");
  assert_int_equal(idgen_seq_next_text(s, text, sizeof text, &n), (int)strlen(text));
  assert_string_equal(text, "P202701150800-2");
  idgen_seq_stats_t st;
  idgen_seq_stats(s, &st);
  assert_string_equal(st.key, "orders@202701150800");
  /* The next minute: a new counter from 1, the old holder closed. */
  fake_sleep(&fc, 60000000000);
  assert_true(idgen_seq_next_text(s, text, sizeof text, &n) > 0);
  assert_string_equal(text, "P202701150801-1");
  assert_int_equal(n, 1);
  idgen_seq_stats(s, &st);
  assert_string_equal(st.key, "orders@202701150801");
  seen_t seen = {0};
  assert_int_equal(idgen_seq_list(r, list_cb, &seen, err, sizeof err), 0);
  assert_int_equal(seen.n, 2);
  assert_string_equal(seen.keys[0], "orders@202701150800");
  assert_int_equal(seen.holders[0], 0);
  assert_int_equal(seen.issued[0], 2);
  assert_string_equal(seen.keys[1], "orders@202701150801");
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
