/*
 * test_clock.c -- the fast clock (IDGEN_CLOCK_FAST) on injected time
 * sources: a TSC, a wall clock and a monotonic clock that the tests move by
 * hand (idgen__clock_test_hooks), so no test sleeps.  Forward steps of the
 * wall clock are rejections that end in a re-calibration, not in a fast
 * path switched off for good; a step back is answered with the pre-step
 * millisecond at most until that millisecond would have ended; a model that
 * keeps being wrong (a TSC slow against the wall clock, an implausible rate)
 * is retried after cool-downs that double up to a bound; every rejection is
 * counted in idgen_clock_stats().
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core_int.h"
#include "testutil.h"

#define MS 1000000LL
#define US 1000LL
#define CALIBRATE (20 * MS)    /* clock.c's CALIBRATE_NS */
#define COOLDOWN_MIN_MS 1000   /* clock.c's COOLDOWN_MIN_NS */
#define COOLDOWN_MAX_MS 300000 /* clock.c's COOLDOWN_MAX_NS */
#define HEALTHY (60000 * MS)   /* clock.c's HEALTHY_NS */

/* The injected sources.  `advance` moves them together: the TSC at
 * tsc_per_ns counts per ns of the monotonic clock, the wall clock at
 * rt_num/rt_den of it; `step` moves only the wall clock. */
static struct {
  int64_t mono, rt, rt_num, rt_den, rt_rem;
  uint64_t tsc, tsc_per_ns;
  int reads; /* wall-clock reads: the fast clock's refreshes and checks */
} F;

static uint64_t f_tsc(void *ctx) {
  (void)ctx;
  return F.tsc;
}

static int64_t f_realtime(void *ctx) {
  (void)ctx;
  F.reads++;
  return F.rt;
}

static int64_t f_mono(void *ctx) {
  (void)ctx;
  return F.mono;
}

static void advance(int64_t ns) {
  F.mono += ns;
  F.tsc += (uint64_t)ns * F.tsc_per_ns;
  int64_t q = ns * F.rt_num + F.rt_rem;
  F.rt += q / F.rt_den;
  F.rt_rem = q % F.rt_den;
}

static void step(int64_t ns) { F.rt += ns; }

/* The wall clock's millisecond now (floor; the test times are after 1970). */
static int64_t wall_ms(void) { return F.rt / MS; }

static int64_t fast(void) { return idgen_clock_now_ms(IDGEN_CLOCK_FAST); }

/* A call answered from the cache: no wall-clock read. */
static int64_t cached(void) {
  int r = F.reads;
  int64_t v = fast();
  assert_int_equal(r, F.reads);
  return v;
}

/* A call answered by a wall-clock read. */
static int64_t read_through(void) {
  int r = F.reads;
  int64_t v = fast();
  assert_int_equal(r + 1, F.reads);
  return v;
}

static idgen_clock_stats_t stats(void) {
  idgen_clock_stats_t st;
  idgen_clock_stats(&st);
  return st;
}

/* Moves time on to `us` microseconds into the next wall-clock millisecond. */
static void to_next_ms_at(int64_t us) {
  int64_t want = (wall_ms() + 1) * MS + us * US - F.rt; /* of wall-clock time */
  advance((want * F.rt_den + F.rt_num - 1) / F.rt_num);
}

static void expect_state(idgen_clock_state_t want) {
  idgen_clock_stats_t st = stats();
  if (st.state != want)
    fail_msg("clock state %s, expected %s", idgen_clock_state_name(st.state),
             idgen_clock_state_name(want));
}

static void expect_counts(uint64_t fallbacks, uint64_t recalibrations, uint64_t cooldowns) {
  idgen_clock_stats_t st = stats();
  assert_int_equal(fallbacks, st.fallbacks);
  assert_int_equal(recalibrations, st.recalibrations);
  assert_int_equal(cooldowns, st.cooldowns);
}

/* Fresh sources at 2023-11-14, a 3 GHz TSC and a wall clock in step with the
 * monotonic clock, and a fast clock reset to its start; then its first
 * calibration (CALIBRATE of monotonic time). */
static int hooked;

static int setup(void **state) {
  (void)state;
  memset(&F, 0, sizeof F);
  F.mono = 5000 * MS;
  F.rt = 1700000000000 * MS;
  F.rt_num = F.rt_den = 1;
  F.tsc = UINT64_C(1) << 40;
  F.tsc_per_ns = 3;
  idgen__clock_hooks_t h = {f_tsc, f_realtime, f_mono, NULL};
  hooked = idgen__clock_test_hooks(&h) == 0; /* not where there is no TSC fast path */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  idgen__clock_test_hooks(NULL);
  return 0;
}

static void calibrate_first(void) {
  if (!hooked)
    skip();
  assert_int_equal(wall_ms(), read_through());
  expect_state(IDGEN_CLOCK_STATE_CALIBRATING);
  advance(CALIBRATE - 1);
  assert_int_equal(wall_ms(), read_through());
  expect_state(IDGEN_CLOCK_STATE_CALIBRATING);
  advance(1);
  assert_int_equal(wall_ms(), read_through());
  expect_state(IDGEN_CLOCK_STATE_FAST);
  expect_counts(0, 0, 0);
}

/* Calls at this instant until one runs a check (a wall-clock read inside a
 * window), then VERIFY_EVERY - 1 cached ones: the next call inside a window
 * is a check. */
static void arm_check(void) {
  fast(); /* a refresh if this instant has no window yet */
  int checked = 0;
  for (int i = 0; i <= IDGEN__CLOCK_VERIFY_EVERY && !checked; i++) {
    int r = F.reads;
    fast();
    checked = F.reads != r;
  }
  assert_true(checked);
  for (int i = 0; i < IDGEN__CLOCK_VERIFY_EVERY - 1; i++)
    assert_int_equal(wall_ms(), cached());
}

/* Ends a calibration under way: state fast, the path cached again. */
static void finish_calibration(void) {
  expect_state(IDGEN_CLOCK_STATE_CALIBRATING);
  advance(CALIBRATE);
  to_next_ms_at(100);
  assert_int_equal(wall_ms(), read_through());
  expect_state(IDGEN_CLOCK_STATE_FAST);
  for (int i = 0; i < 100; i++) {
    advance(1 * US);
    assert_int_equal(wall_ms(), cached());
  }
}

/* (a) A forward step of the wall clock inside a window, caught by a check:
 * the answer is the new time, the rejection is counted, the clock
 * re-calibrates (reading the wall clock meanwhile) and then uses the fast
 * path again. */
static void forward_step(int64_t step_ms) {
  calibrate_first();
  to_next_ms_at(100);
  arm_check();
  int64_t m = wall_ms();
  step(step_ms * MS);
  advance(1 * US);
  assert_int_equal(m + step_ms, fast());
  expect_state(IDGEN_CLOCK_STATE_CALIBRATING);
  expect_counts(1, 0, 0);
  for (int i = 0; i < 5; i++) {
    advance(300 * US);
    assert_int_equal(wall_ms(), read_through());
  }
  finish_calibration();
  expect_counts(1, 1, 0);
}

static void test_forward_step_1ms(void **state) {
  (void)state;
  forward_step(1);
}

static void test_forward_step_2ms(void **state) {
  (void)state;
  forward_step(2);
}

/* (b) A step back of 10 s: the pre-step millisecond is answered only from the
 * window it was cached in, which ends before that millisecond would have
 * ended -- at most 1 ms of TSC time at the calibrated rate -- and then the new
 * time.  A check inside the window answers the new time at once.  Neither is
 * a rejection. */
static void test_step_back(void **state) {
  (void)state;
  calibrate_first();
  to_next_ms_at(100); /* the window starts 100 us into m: m ends 900 us later */
  arm_check();
  int64_t m = wall_ms(), old_until = -1, new_from = -1;
  assert_int_equal(m, read_through()); /* the check: none in the next 1023 cached calls */
  uint64_t tsc0 = F.tsc;
  step(-10000 * MS);
  for (int64_t t = 5 * US; t <= 1200 * US; t += 5 * US) {
    advance(5 * US);
    int64_t v = fast();
    if (v == m) {
      if (new_from >= 0)
        fail_msg("pre-step ms %" PRId64 " again at %" PRId64 " ns, after the new time", m, t);
      old_until = t;
      assert_true(F.tsc - tsc0 < stats().tsc_hz / 1000); /* < 1 ms at the calibrated rate */
    } else {
      assert_int_equal(wall_ms(), v); /* m - 10000, or m - 9999 once m would have ended */
      if (new_from < 0)
        new_from = t;
    }
  }
  /* The window was in use, and ended before m would have ended. */
  if (old_until < 800 * US || old_until >= 900 * US || new_from > 900 * US)
    fail_msg("pre-step ms until %" PRId64 " ns, new time from %" PRId64 " ns", old_until, new_from);

  to_next_ms_at(100);
  arm_check();
  m = wall_ms();
  step(-10000 * MS);
  advance(1 * US);
  assert_int_equal(m - 10000, fast()); /* the check */
  assert_int_equal(wall_ms(), cached());
  expect_state(IDGEN_CLOCK_STATE_FAST);
  expect_counts(0, 0, 0);
}

/* One rejection on a model that is wrong: with the wall clock 10 % fast, a
 * check 850 us (of the monotonic clock) into a window that started 100 us
 * into a millisecond falls after that millisecond's end (818 us) but inside
 * the window (about 894 us: 898 us of wall-clock time at the rate the
 * monotonic clock calibrated). */
static void slow_tsc_caught(void) {
  to_next_ms_at(100);
  arm_check();
  int64_t m = wall_ms();
  advance(850 * US);
  assert_int_equal(m + 1, wall_ms());
  assert_int_equal(m + 1, fast());
}

/* (c) Repeated genuine evidence: a TSC that runs slow against the wall clock
 * (here the wall clock runs 10 % fast, which calibration against the
 * monotonic clock cannot see).  Two rejections re-calibrate at once; from the
 * third, each is followed by a cool-down, on precise reads, of 1 s doubling
 * up to 300 s, then a new calibration.  A model that then holds for a minute
 * starts over: its next rejection re-calibrates at once. */
static void test_slow_tsc_cools_down(void **state) {
  (void)state;
  calibrate_first();
  F.rt_num = 11;
  F.rt_den = 10;
  for (uint64_t k = 1; k <= 13; k++) {
    slow_tsc_caught();
    if (k <= 2) {
      expect_counts(k, k - 1, 0);
      finish_calibration();
      expect_counts(k, k, 0);
      continue;
    }
    int64_t cool = k - 3 >= 9 ? COOLDOWN_MAX_MS : COOLDOWN_MIN_MS << (k - 3);
    if (cool > COOLDOWN_MAX_MS)
      cool = COOLDOWN_MAX_MS;
    expect_state(IDGEN_CLOCK_STATE_PRECISE);
    expect_counts(k, k - 1, k - 2);
    assert_int_equal(cool, stats().cooldown_ms);
    for (int i = 0; i < 5; i++) {
      advance(300 * US);
      assert_int_equal(wall_ms(), read_through());
    }
    advance((cool - 1) * MS - 1500 * US);
    assert_int_equal(wall_ms(), read_through());
    expect_state(IDGEN_CLOCK_STATE_PRECISE);
    assert_int_equal(1, stats().cooldown_ms);
    advance(1 * MS);
    assert_int_equal(wall_ms(), read_through()); /* the cool-down ends */
    expect_counts(k, k - 1, k - 2);
    finish_calibration();
    expect_counts(k, k, k - 2);
  }
  /* The wall clock agrees with the TSC again; a minute later a forward step. */
  F.rt_num = F.rt_den = 1;
  advance(HEALTHY);
  to_next_ms_at(100);
  arm_check();
  int64_t m = wall_ms();
  step(1 * MS);
  advance(1 * US);
  assert_int_equal(m + 1, fast());
  expect_state(IDGEN_CLOCK_STATE_CALIBRATING);
  expect_counts(14, 13, 11);
}

/* An implausible rate (a "50 GHz" TSC) is a rejection too: retried, then
 * cooled down, and the fast path comes back once the TSC makes sense. */
static void test_implausible_rate_retried(void **state) {
  (void)state;
  if (!hooked)
    skip();
  F.tsc_per_ns = 50;
  assert_int_equal(wall_ms(), read_through());
  for (uint64_t k = 1; k <= 3; k++) {
    advance(CALIBRATE);
    assert_int_equal(wall_ms(), read_through());
    expect_counts(k, 0, k == 3);
  }
  expect_state(IDGEN_CLOCK_STATE_PRECISE);
  F.tsc_per_ns = 3;
  advance(COOLDOWN_MIN_MS * MS);
  assert_int_equal(wall_ms(), read_through());
  finish_calibration();
  expect_counts(3, 0, 1);
  idgen_clock_stats_t st = stats();
  assert_true(st.tsc_hz > 2980000000u && st.tsc_hz < 3000000000u); /* 3 GHz less 1/256 */
}

/* Unhooked: the real clock calibrates within a few tens of ms of first use
 * (no sleeping: it is used meanwhile, and must agree with precise reads). */
static void fast_between_precise(void) {
  int64_t a = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), f = fast(),
          b = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
  if (f < a || f > b)
    fail_msg("fast %" PRId64 " outside precise [%" PRId64 ", %" PRId64 "]", f, a, b);
}

/* How far behind the precise clock a coarse stamp may be here: the kernel
 * updates the coarse clock at its timer ticks, and on this project's
 * machine (a VM, 4 ms ticks) a read lags by 4 to 8 ms, not 0 to 4: the
 * update comes a tick late.  A tick delayed further on a loaded machine
 * must not fail the test, whose point is that COARSE reads that clock (a
 * wrong clock or unit is off by far more): two ticks and 100 ms. */
static int64_t coarse_lag_bound_ms(void) {
  return 2 * ((idgen_clock_coarse_resolution_ns() + 999999) / 1000000) + 100;
}

/* IDGEN_CLOCK_COARSE: the kernel's last tick, never ahead of the precise
 * clock and not far behind it. */
static void test_coarse_clock_bounds(void **state) {
  (void)state;
  int64_t res = idgen_clock_coarse_resolution_ns();
  assert_true(res >= 1 && res <= 100 * 1000000); /* Linux: one timer tick, 1 to 10 ms */
  int64_t lag_ms = coarse_lag_bound_ms();
  for (int i = 0; i < 200000; i++) {
    int64_t a = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), c = idgen_clock_now_ms(IDGEN_CLOCK_COARSE),
            b = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
    if (c > b || c < a - lag_ms)
      fail_msg("coarse %" PRId64 " outside [precise %" PRId64 " - %" PRId64 ", %" PRId64 "]", c, a,
               lag_ms, b);
  }
}

/* The 128-bit generators and Snowflake in COARSE mode: increasing, and
 * stamped within the coarse clock's lag of the precise one (never ahead of
 * it but by Snowflake's borrow). */
static void test_coarse_generators(void **state) {
  (void)state;
  int64_t lag_ms = coarse_lag_bound_ms();
  idgen_gen128_settings_t set = {.clock_mode = IDGEN_CLOCK_COARSE};
  idgen_ulid_gen_t *ug;
  idgen_uuid7_gen_t *vg;
  assert_int_equal(0, idgen_ulid_gen_new(&ug, &set));
  assert_int_equal(0, idgen_uuid7_gen_new(&vg, &set));
  idgen_snowflake_settings_t ss;
  idgen_snowflake_settings_init(&ss);
  ss.clock_mode = IDGEN_CLOCK_COARSE;
  idgen_layout_t l;
  assert_int_equal(0, idgen_layout_parse(&l, "time:41@1ms,sequence:22,epoch=0", NULL, 0));
  idgen_snowflake_gen_t *sg;
  assert_int_equal(0, idgen_snowflake_gen_new(&sg, &l, &ss, NULL, 0));
  idgen_ulid_t u, pu;
  idgen_uuid_t v, pv;
  uint64_t id, pid = 0;
  memset(&pu, 0, sizeof pu);
  memset(&pv, 0, sizeof pv);
  for (int i = 0; i < 300000; i++) {
    int64_t a = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
    assert_int_equal(0, idgen_ulid_gen_next(ug, &u));
    assert_int_equal(0, idgen_uuid7_gen_next(vg, &v));
    assert_int_equal(0, idgen_snowflake_gen_next(sg, &id));
    int64_t b = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
    assert_true(memcmp(&u, &pu, sizeof u) > 0 && memcmp(&v, &pv, sizeof v) > 0 && id > pid);
    int64_t tu = idgen_ulid_time(&u), ts = (int64_t)(id >> 22);
    /* (the generators may run ahead of the clock within the borrow: ULIDs
     * and UUIDs by their counters' overflow, never here; Snowflake IDs by
     * at most max_borrow_ms) */
    if (tu > b || tu < a - lag_ms || ts < a - lag_ms || ts > b + ss.max_borrow_ms)
      fail_msg("stamps %" PRId64 " (ULID), %" PRId64 " (Snowflake) outside precise [%" PRId64
               " - %" PRId64 ", %" PRId64 "]",
               tu, ts, a, lag_ms, b);
    pu = u;
    pv = v;
    pid = id;
  }
  idgen_ulid_gen_free(ug);
  idgen_uuid7_gen_free(vg);
  idgen_snowflake_gen_free(sg);
  /* and a mode the library does not know is refused */
  ss.clock_mode = (idgen_clock_mode_t)7;
  assert_int_equal(IDGEN_EINVAL, idgen_snowflake_gen_new(&sg, &l, &ss, NULL, 0));
}

static void test_real_clock_calibrates(void **state) {
  (void)state;
  idgen__clock_test_hooks(NULL);
  idgen_clock_stats_t st = stats();
  int64_t until = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) + 5000;
  while (st.state == IDGEN_CLOCK_STATE_CALIBRATING &&
         idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) < until) {
    fast_between_precise();
    st = stats();
  }
  if (st.state == IDGEN_CLOCK_STATE_UNAVAILABLE)
    skip(); /* no invariant TSC here */
  expect_state(IDGEN_CLOCK_STATE_FAST);
  assert_true(st.tsc_hz >= 100000000u && st.tsc_hz <= 20000000000u);
  for (int i = 0; i < 1000; i++)
    fast_between_precise();
}

static int64_t ts_ns(const struct timespec *t) {
  return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/* The ID clocks' read (idgen__wall_read): the kernel's answer, between two
 * reads of clock_gettime, for both clocks.  (Under libfaketime and shims:
 * clock_follow.) */
static void test_wall_read(void **state) {
  (void)state;
  const clockid_t ids[] = {CLOCK_REALTIME, IDGEN__CLOCK_COARSE_ID};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 10000; i++) {
      struct timespec a, b, c;
      clock_gettime(ids[k], &a);
      idgen__wall_read(ids[k], &b);
      clock_gettime(ids[k], &c);
      if (ts_ns(&a) > ts_ns(&b) || ts_ns(&b) > ts_ns(&c))
        fail_msg("clock %d: %" PRId64 " not within [%" PRId64 ", %" PRId64 "]", (int)ids[k],
                 ts_ns(&b), ts_ns(&a), ts_ns(&c));
    }
#ifdef IDGEN_VDSO_DIRECT
    /* Built with the vDSO trick: the entry called directly where the
   * program's clock_gettime is the C library's own (no preload, no
   * sanitizer's interceptor, which GCC and clang name differently). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  const int intercepted = 1;
#elif defined(__has_feature)
  const int intercepted = __has_feature(address_sanitizer) || __has_feature(thread_sanitizer);
#else
  const int intercepted = 0;
#endif
  int direct = idgen__gettime_direct();
  print_message("ID clocks read through %s\n", direct > 0 ? "the vDSO's entry" : "clock_gettime");
  if (!intercepted && getenv("LD_PRELOAD") == NULL)
    assert_int_equal(1, direct);
#endif
}

static void test_state_names(void **state) {
  (void)state;
  assert_string_equal("unavailable", idgen_clock_state_name(IDGEN_CLOCK_STATE_UNAVAILABLE));
  assert_string_equal("calibrating", idgen_clock_state_name(IDGEN_CLOCK_STATE_CALIBRATING));
  assert_string_equal("fast", idgen_clock_state_name(IDGEN_CLOCK_STATE_FAST));
  assert_string_equal("precise", idgen_clock_state_name(IDGEN_CLOCK_STATE_PRECISE));
  assert_string_equal("unknown", idgen_clock_state_name((idgen_clock_state_t)42));
}

/* The clock setting's words, one way and back; anything else refused with
 * the one message every front end shows. */
static void test_mode_words(void **state) {
  (void)state;
  static const idgen_clock_mode_t modes[] = {IDGEN_CLOCK_FAST, IDGEN_CLOCK_PRECISE,
                                             IDGEN_CLOCK_COARSE};
  idgen_clock_mode_t m;
  char err[200];
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    const char *w = idgen_clock_mode_name(modes[i]);
    assert_non_null(strstr(IDGEN_CLOCK_MODE_WORDS, w));
    assert_int_equal(idgen_clock_mode_parse(w, &m, err, sizeof err), 0);
    assert_int_equal(m, modes[i]);
  }
  assert_string_equal(idgen_clock_mode_name((idgen_clock_mode_t)42), "unknown");
  m = IDGEN_CLOCK_COARSE;
  static const char *const bad[] = {"", "Fast", "fast ", "sundial", "unknown"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(idgen_clock_mode_parse(bad[i], &m, err, sizeof err), IDGEN_EINVAL);
    assert_int_equal(m, IDGEN_CLOCK_COARSE);
  }
  assert_string_equal(err, "\"unknown\" is not a clock (expected fast, precise or coarse)");
  assert_int_equal(idgen_clock_mode_parse("x\n", &m, NULL, 0), IDGEN_EINVAL);
  assert_int_equal(idgen_clock_mode_parse("x\n", &m, err, sizeof err), IDGEN_EINVAL);
  assert_string_equal(err, "\"x\\x0A\" is not a clock (expected fast, precise or coarse)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_forward_step_1ms, setup, teardown),
      cmocka_unit_test_setup_teardown(test_forward_step_2ms, setup, teardown),
      cmocka_unit_test_setup_teardown(test_step_back, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_tsc_cools_down, setup, teardown),
      cmocka_unit_test_setup_teardown(test_implausible_rate_retried, setup, teardown),
      cmocka_unit_test(test_real_clock_calibrates),
      cmocka_unit_test(test_coarse_clock_bounds),
      cmocka_unit_test(test_coarse_generators),
      cmocka_unit_test(test_wall_read),
      cmocka_unit_test(test_state_names),
      cmocka_unit_test(test_mode_words),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
