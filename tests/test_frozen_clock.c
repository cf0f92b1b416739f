/*
 * test_frozen_clock.c -- run by CTest under libfaketime with a date and no
 * '@': CLOCK_REALTIME and CLOCK_MONOTONIC both stand still (libfaketime's
 * default), as a user may run a program to see it at a fixed time.
 *
 * The bound still holds for the non-blocking calls resumed by a loop that polls
 * every millisecond: the waits they ask for cannot be had on a clock that
 * does not move, and the call ends with IDGEN_ECLOCK within its budget of
 * real time.  An early resume is charged only the real time that passed
 * (DESIGN §2), and that time is read from the kernel by a system call,
 * which libfaketime does not see.  Reading it through the C library (which
 * libfaketime replaces) left such a call polled for ever.  A blocking call
 * is charged the real time it slept, on the same clock.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/* Real time and real sleeps: system calls, past libfaketime. */
static double real_s(void) {
  struct timespec t;
  syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void real_sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
  syscall(SYS_nanosleep, &t, NULL);
}

/* The premise: the C library's clocks stand still here. */
static void test_clocks_stand_still(void **state) {
  (void)state;
  if (getenv("LD_PRELOAD") == NULL || strstr(getenv("LD_PRELOAD"), "faketime") == NULL)
    fail_msg("not run under libfaketime (CTest preloads it)");
  struct timespec a, b, c, d;
  clock_gettime(CLOCK_REALTIME, &a);
  clock_gettime(CLOCK_MONOTONIC, &c);
  real_sleep_ms(5);
  clock_gettime(CLOCK_REALTIME, &b);
  clock_gettime(CLOCK_MONOTONIC, &d);
  assert_true(a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec);
  assert_true(c.tv_sec == d.tv_sec && c.tv_nsec == d.tv_nsec);
}

static idgen_snowflake_gen_t *two_a_ms(void) {
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.max_borrow_ms = 0;
  s.max_wait_ms = 100; /* the budget: the rest of the tick + 100 ms */
  s.clock_mode = IDGEN_CLOCK_PRECISE;
  return tu_gen("time:41@1ms,sequence:1,epoch=1288834974657", &s);
}

/* Polls a waiting call every millisecond for at most 3 s of real time. */
static int poll(idgen_snowflake_gen_t *g, idgen_cached_gen_t *c, idgen_snowflake_wait_t *w,
                uint64_t *ids, double *took) {
  double t0 = real_s();
  int rc = IDGEN_EAGAIN;
  while (rc == IDGEN_EAGAIN && real_s() - t0 < 3.0) {
    real_sleep_ms(1);
    rc = c ? idgen_cached_gen_resume(c, w, ids) : idgen_snowflake_gen_resume(g, w, ids);
  }
  *took = real_s() - t0;
  return rc;
}

static void test_polled_call_ends(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = two_a_ms();
  uint64_t ids[2];
  idgen_snowflake_wait_t w;
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 2)); /* the tick's two */
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_next_n_async(g, ids, 1, &w));
  double took;
  int rc = poll(g, NULL, &w, ids, &took);
  print_message("polled call: %s after %.3f s of real time\n", idgen_strerror(rc), took);
  assert_int_equal(IDGEN_ECLOCK, rc);
  assert_true(took < 1.0); /* 0.1 s of budget; generous for a loaded host */
  idgen_snowflake_gen_free(g);
}

/* The same through a cache whose filler cannot fill (direct policy). */
static void test_polled_cached_call_ends(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = two_a_ms();
  idgen_cached_settings_t cs;
  idgen_cached_settings_init(&cs);
  idgen_cached_gen_t *c = NULL;
  char err[256];
  if (idgen_cached_gen_new(&c, g, &cs, err, sizeof err) != 0)
    fail_msg("idgen_cached_gen_new: %s", err);
  uint64_t ids[4];
  idgen_snowflake_wait_t w;
  int rc = idgen_cached_gen_take_n_async(c, ids, 4, &w);
  double took = 0;
  if (rc == IDGEN_EAGAIN)
    rc = poll(g, c, &w, ids, &took);
  print_message("polled cached call: %s after %.3f s of real time\n", idgen_strerror(rc), took);
  assert_int_equal(IDGEN_ECLOCK, rc);
  assert_true(took < 1.0);
  idgen_cached_gen_free(c);
  idgen_snowflake_gen_free(g);
}

/* A blocking call, on a clock frozen a microsecond before a millisecond
 * ends (CTest runs this file a second time at 13:00:00.999999): each of its
 * waits asks for that microsecond and really sleeps far longer (a
 * nanosleep's least, tens of microseconds).  Charging the wait asked, the
 * call slept 100 ms of budget a microsecond at a time: 8.6 s of real time
 * (84 s for max_wait_ms = 1000).  The real time slept is charged, as for a
 * resumed call. */
static void test_blocking_call_ends(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = two_a_ms();
  uint64_t ids[2];
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 2)); /* the tick's two */
  double t0 = real_s();
  int rc = idgen_snowflake_gen_next(g, ids);
  double took = real_s() - t0;
  print_message("blocking call: %s after %.3f s of real time\n", idgen_strerror(rc), took);
  assert_int_equal(IDGEN_ECLOCK, rc);
  assert_true(took < 4.0); /* 0.1 s of budget (8.6 s before); generous for a loaded host */
  idgen_snowflake_gen_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clocks_stand_still),
      cmocka_unit_test(test_polled_call_ends),
      cmocka_unit_test(test_polled_cached_call_ends),
      cmocka_unit_test(test_blocking_call_ends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
