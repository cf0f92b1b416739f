/*
 * test_seq_clockstep.c -- a strict sequence on file: across a step of the
 * machine's wall clock.  Run under libfaketime (tests/CMakeLists.txt) with
 * the monotonic clock left real and the wall clock read from
 * $FAKETIME_TIMESTAMP_FILE, which this test rewrites: the registry's clock
 * (the wall clock, for file:) jumps an hour ahead while the owner's own
 * validity (the monotonic clock) still runs.  A second holder then reaped
 * the owner and claimed above it, and the owner went on issuing smaller
 * numbers: the strict sequence's numbers went back.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry_int.h"

static void step_to(const char *offset) {
  const char *f = getenv("FAKETIME_TIMESTAMP_FILE");
  FILE *o = fopen(f, "w");
  assert_non_null(o);
  fprintf(o, "%s\n", offset);
  fclose(o);
}

static void test_strict_wall_step(void **state) {
  (void)state;
  if (getenv("FAKETIME_TIMESTAMP_FILE") == NULL)
    skip();
  step_to("+0");
  char dir[] = "/tmp/idgen-seqstep-XXXXXX", uri[64], err[256], cmd[96];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *ra, *rb;
  assert_int_equal(idgen_registry_open(&ra, uri, err, sizeof err), 0);
  assert_int_equal(idgen_registry_open(&rb, uri, err, sizeof err), 0);
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.strict = 1;
  set.ttl_ms = 60000;
  set.no_thread = 1;
  set.min_step = set.step = set.max_step = 100;
  idgen_seq_t *a, *b;
  uint64_t x, y, last = 0;
  assert_int_equal(idgen_seq_open(&a, ra, "tickets", &set, err, sizeof err), 0);
  assert_int_equal(idgen_seq_next(a, &x), 0);
  last = x;
  step_to("+3600s"); /* the machine's clock stepped an hour ahead */
  int rb_rc = idgen_seq_open(&b, rb, "tickets", &set, err, sizeof err);
  if (rb_rc == 0) {
    assert_int_equal(idgen_seq_next(b, &y), 0);
    assert_true(y > last);
    last = y;
  }
  int rc = idgen_seq_next(a, &x);
  if (rc == 0 && x < last)
    fail_msg("strict sequence went back: %" PRIu64 " after %" PRIu64, x, last);
  if (rb_rc == 0)
    idgen_seq_close(b);
  idgen_seq_close(a);
  idgen_registry_close(ra);
  idgen_registry_close(rb);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_strict_wall_step)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
