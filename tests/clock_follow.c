/*
 * clock_follow.c -- the IDs carry the time the program is shown: every
 * clock mode reads the program's clock_gettime (clock.c); run by CTest
 *   - under libfaketime a day back;
 *   - under tests/clock_shim.c, which moves clock_gettime a day back and
 *     wraps getauxval too;
 *   - built as a non-PIE program that takes the address of clock_gettime and
 *     getauxval, under libfaketime a day back;
 *   - with nothing preloaded.
 * A read that went around the program's clock_gettime (a direct vDSO call,
 * a raw syscall) would stamp IDs a day ahead of the program's clock.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <time.h>

#include "core_int.h"
#include "testutil.h"

/* Both addresses taken in code: in a non-PIE build that is an absolute
 * address in an instruction, so the linker makes the executable's stubs the
 * functions' addresses for the whole program, the library's references too. */
void *volatile clock_follow_keep[2];
static void keep_addresses(void) {
  clock_follow_keep[0] = (void *)clock_gettime;
  clock_follow_keep[1] = (void *)getauxval;
}

static int64_t program_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Within a second of what the program reads (the coarse clock lags by a few
 * ticks); a day off when the shim or libfaketime is skipped. */
static void near(const char *what, int64_t ids_ms, int64_t program) {
  int64_t d = ids_ms - program;
  if (d < -1000 || d > 1000)
    fail_msg("%s: %" PRId64 " ms from the program's clock", what, d);
}

static void test_ids_follow_the_program_clock(void **state) {
  (void)state;
  const idgen_clock_mode_t modes[] = {IDGEN_CLOCK_PRECISE, IDGEN_CLOCK_COARSE, IDGEN_CLOCK_FAST};
  const clockid_t ids[] = {CLOCK_REALTIME, CLOCK_REALTIME_COARSE, CLOCK_REALTIME};
  for (int k = 0; k < 3; k++) {
    near("idgen_clock_now_ms", idgen_clock_now_ms(modes[k]), program_ms(ids[k]));
    idgen_gen128_settings_t set = {.clock_mode = modes[k]};
    idgen_ulid_gen_t *ug;
    idgen_uuid7_gen_t *vg;
    tu_ok(idgen_ulid_gen_new(&ug, &set));
    tu_ok(idgen_uuid7_gen_new(&vg, &set));
    idgen_ulid_t u;
    idgen_uuid_t v;
    tu_ok(idgen_ulid_gen_next(ug, &u));
    tu_ok(idgen_uuid7_gen_next(vg, &v));
    near("ULID", idgen_ulid_time(&u), program_ms(ids[k]));
    near("UUIDv7", idgen_uuid7_time(&v), program_ms(ids[k]));
    idgen_ulid_gen_free(ug);
    idgen_uuid7_gen_free(vg);
  }
#ifdef IDGEN_VDSO_DIRECT
  /* Built with the vDSO trick: which read the library chose (CTest says
   * what it must be: 1 the vDSO's entry, with nothing preloaded; 0
   * clock_gettime, under libfaketime, the shim, as a non-PIE program). */
  const char *want = getenv("IDGEN_TEST_EXPECT_DIRECT");
  if (want == NULL)
    fail_msg("IDGEN_TEST_EXPECT_DIRECT is not set (CTest sets it)");
  print_message("ID clocks read through %s\n",
                idgen__gettime_direct() > 0 ? "the vDSO's entry" : "clock_gettime");
  assert_int_equal(atoi(want), idgen__gettime_direct());
#endif
}

int main(void) {
  keep_addresses();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids_follow_the_program_clock),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
