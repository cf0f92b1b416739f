/*
 * test_snowflake.c -- the generator on an injected clock: known answers,
 * clock faults (step back within borrow, within wait, beyond both), sequence
 * exhaustion (borrow, or wait), the last tick of the time field (also with a
 * full 64-bit state), batches across tick boundaries, random sequence start,
 * settings validation, fork, and the real clock's tick accuracy.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "snowflake_int.h"
#include "testutil.h"

#define T0 1505914988849 /* the design document's worked example */

static idgen_snowflake_settings_t settings(tu_clock_t *c, int64_t borrow, int64_t wait) {
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &c->clock;
  s.max_borrow_ms = borrow;
  s.max_wait_ms = wait;
  return s;
}

/* Time, node and sequence of a twitter-layout ID. */
static uint64_t tw_tick(uint64_t id) { return id >> 22; }
static uint64_t tw_seq(uint64_t id) { return id & 4095; }
static const uint64_t TW_TICK0 = T0 - 1288834974657;

static void test_known_answer(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  s.node[1] = 17;
  s.node[2] = 25;
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(UINT64_C(910499571847892992), id);
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(UINT64_C(910499571847892993), id);
  assert_string_equal("twitter", idgen_snowflake_gen_layout(g)->preset);
  idgen_snowflake_gen_free(g);
}

static void test_step_back_within_borrow(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  uint64_t prev = 0, id;
  for (int i = 0; i < 10; i++) {
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev);
    prev = id;
  }
  tu_clock_set_ms(&c, T0 - 500);
  for (int i = 0; i < 1000; i++) {
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev);
    assert_true(tw_tick(id) >= TW_TICK0); /* the generator keeps its own clock */
    prev = id;
  }
  tu_clock_add_ms(&c, 1);
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_true(id > prev);
  assert_int_equal(0, atomic_load(&c.sleeps));
  idgen_snowflake_gen_free(g);
}

/* One step of the wall clock back, on the twitter layout, from a generator
 * that issued one ID at T0: what the next call does, by max_borrow_ms and
 * max_wait_ms.  Each case then moves the clock to just within the borrow
 * and checks that the generator works again and still increases. */
static const struct step_case {
  const char *what;
  int64_t borrow, wait, back_ms;
  int rc;            /* of the next call (next, then next_n of one) */
  int64_t waited_ms; /* how long that call slept on the injected clock */
} step_cases[] = {
    {"50 ms beyond the borrow, within the wait: waits 50 ms", 1000, 100, 1050, 0, 50},
    {"200 ms beyond the borrow, more than the wait: refused at once", 1000, 100, 1200, IDGEN_ECLOCK,
     0},
    {"no borrow, no wait, 5 ms back: refused at once", 0, 0, 5, IDGEN_ECLOCK, 0},
    {"no borrow, 10 ms wait, 5 ms back: waits 5 ms", 0, 10, 5, 0, 5},
    {"borrow 10, no wait, 50 ms back: refused at once", 10, 0, 50, IDGEN_ECLOCK, 0},
    {"borrow 10, no wait, 10 ms back: issued at once (within the borrow)", 10, 0, 10, 0, 0},
};

static void test_step_back_table(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof step_cases / sizeof step_cases[0]; i++) {
    const struct step_case *k = &step_cases[i];
    print_message("step back: %s\n", k->what);
    tu_clock_t c;
    tu_clock_init(&c, T0);
    idgen_snowflake_settings_t s = settings(&c, k->borrow, k->wait);
    idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
    uint64_t prev, id;
    tu_ok(idgen_snowflake_gen_next(g, &prev));
    tu_clock_set_ms(&c, T0 - k->back_ms);
    int calls = 1;
    assert_int_equal(k->rc, idgen_snowflake_gen_next(g, &id));
    if (k->rc == 0) {
      assert_true(id > prev);
      prev = id;
    } else {
      assert_int_equal(k->rc, idgen_snowflake_gen_next_n(g, &id, 1));
      calls = 2;
    }
    assert_int_equal(k->waited_ms ? 1 : 0, atomic_load(&c.sleeps)); /* no pointless wait */
    assert_int_equal(k->waited_ms * 1000000, atomic_load(&c.slept_ns));
    idgen_snowflake_stats_t st;
    idgen_snowflake_gen_stats(g, &st);
    assert_int_equal(k->waited_ms ? 1 : 0, st.clock_waits);
    assert_int_equal(k->rc ? calls : 0, st.clock_refusals);
    assert_int_equal(0, st.sequence_exhausted);
    /* Back within the borrow: it works again, and still increases. */
    tu_clock_set_ms(&c, T0 - k->borrow + 1);
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev);
    idgen_snowflake_gen_free(g);
  }
}

/* The clock at Unix ns `ns` exactly. */
static void clock_set_ns(tu_clock_t *c, int64_t ns) { atomic_store(&c->ns, ns); }

/* The hot path (one fetch_add), which an injected clock otherwise turns
 * off: its calls give the same answers, and these tests need it to make
 * the generator's own state as full load makes it. */
static void hot_path_on(idgen_snowflake_gen_t *g) {
  assert_int_equal(1, g->unit);
  g->fast = 1;
}

/* Bounded: with max_borrow_ms = max_wait_ms = 0, a call after the clock moved
 * back, by a whole tick or by part of one across a tick boundary, is
 * refused at once (IDGEN_ECLOCK): next, and next_n of one and of three;
 * on every tick length.  Before, a step back into the tick just below the
 * generator's was waited out as if that tick were used up: 48.8 s on
 * `@60s` after a 50 s step, about 12 h on `@86400s` after a 12 h one.
 * A step back within one tick needs no wait and issues at once, and when
 * the clock is back the IDs go on increasing. */
static const struct back_case {
  const char *what, *layout;
  int64_t at_ns;   /* the clock when the generator issues its first ID */
  int64_t back_ns; /* how far the clock then steps back */
  int rc;          /* of the next calls */
} back_cases[] = {
    {"twitter, 0.7 ms back across a tick boundary", "twitter", (T0 * 1000000) + 500000, 700000,
     IDGEN_ECLOCK},
    {"twitter, 1 tick back", "twitter", T0 * 1000000 + 500000, 1000000, IDGEN_ECLOCK},
    {"twitter, 5 ticks back", "twitter", T0 * 1000000 + 500000, 5000000, IDGEN_ECLOCK},
    {"@1s, 0.5 s back across a second", "time:41@1s,worker:10,sequence:12",
     (T0 - T0 % 1000 + 300) * 1000000, 500000000, IDGEN_ECLOCK},
    {"@1s, 3 s back", "time:41@1s,worker:10,sequence:12", (T0 - T0 % 1000 + 300) * 1000000,
     3000000000, IDGEN_ECLOCK},
    {"@60s, 50 s back across a minute (the issue's case)", "time:41@60s,worker:10,sequence:12",
     (T0 - T0 % 60000 + 10000) * 1000000, 50000000000, IDGEN_ECLOCK},
    {"@60s, 5 minutes back", "time:41@60s,worker:10,sequence:12",
     (T0 - T0 % 60000 + 10000) * 1000000, 300000000000, IDGEN_ECLOCK},
    {"@86400s, 12 h back across a day (the issue's case)", "time:31@86400s,worker:10,sequence:12",
     (T0 - T0 % 86400000 + 21600000) * 1000000, 43200000000000, IDGEN_ECLOCK},
    {"@86400s, 3 days back", "time:31@86400s,worker:10,sequence:12",
     (T0 - T0 % 86400000 + 21600000) * 1000000, 3 * 86400000000000, IDGEN_ECLOCK},
    {"@60s, 5 s back within the minute: issued at once", "time:41@60s,worker:10,sequence:12",
     (T0 - T0 % 60000 + 10000) * 1000000, 5000000000, 0},
};

static void test_step_back_refused_at_once(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof back_cases / sizeof back_cases[0]; i++) {
    const struct back_case *k = &back_cases[i];
    print_message("step back, no borrow, no wait: %s\n", k->what);
    tu_clock_t c;
    tu_clock_init(&c, 0);
    clock_set_ns(&c, k->at_ns);
    idgen_snowflake_settings_t s = settings(&c, 0, 0);
    idgen_snowflake_gen_t *g = tu_gen(k->layout, &s);
    uint64_t prev, id, ids[3];
    tu_ok(idgen_snowflake_gen_next(g, &prev));
    clock_set_ns(&c, k->at_ns - k->back_ns);
    int rc = idgen_snowflake_gen_next(g, &id);
    if (rc != k->rc || atomic_load(&c.sleeps) != 0) {
      /* Every case is tried, so that a failure lists them all. */
      print_error("  %s: next() returned %d after waiting %.3f s; want %d at once\n", k->what, rc,
                  (double)atomic_load(&c.slept_ns) / 1e9, k->rc);
      bad++;
      idgen_snowflake_gen_free(g);
      continue;
    }
    assert_int_equal(k->rc, idgen_snowflake_gen_next_n(g, ids, 1));
    assert_int_equal(k->rc, idgen_snowflake_gen_next_n(g, ids, 3));
    assert_int_equal(0, atomic_load(&c.sleeps)); /* at once */
    idgen_snowflake_stats_t st;
    idgen_snowflake_gen_stats(g, &st);
    assert_int_equal(k->rc ? 3 : 0, st.clock_refusals);
    assert_int_equal(0, st.clock_waits + st.sequence_exhausted);
    if (k->rc == 0)
      assert_true(id > prev && ids[0] > id);
    /* /health's question: nothing can be issued now. */
    assert_int_equal(k->rc ? 0 : 1, idgen_snowflake_gen_capacity(g) > 0);
    /* The clock back where it was: IDs again, above the ones before. */
    clock_set_ns(&c, k->at_ns);
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev && (k->rc || id > ids[2]));
    idgen_snowflake_gen_free(g);
  }
  assert_int_equal(0, bad);
}

/* Bounded, on ticks longer than a second: the rest of a used-up tick counts
 * against max_wait_ms like any other wait (it was always allowed: 30 s on
 * `@60s` with max_wait_ms = 0).  Within max_wait_ms of the tick's end it
 * is waited out, and counted as a used-up tick.  On a tick of one second
 * or less it is still waited out beside max_wait_ms. */
static void test_long_tick_rest_counts(void **state) {
  (void)state;
  const char *minute = "time:41@60s,worker:10,sequence:2", *day = "time:31@86400s,sequence:2";
  const int64_t m0 = T0 - T0 % 60000, d0 = T0 - T0 % 86400000;
  uint64_t id, ids[4];
  idgen_snowflake_stats_t st;
  tu_clock_t c;
  struct {
    const char *layout;
    int64_t at_ms, wait, slept_ms;
    int rc;
  } cases[] = {
      {minute, m0 + 30000, 0, 0, IDGEN_ECLOCK},       /* 30 s left, no wait: refused */
      {minute, m0 + 30000, 100, 0, IDGEN_ECLOCK},     /* 30 s left, 100 ms wait: refused */
      {minute, m0 + 59950, 100, 50, 0},               /* 50 ms left, 100 ms wait: waits */
      {minute, m0 + 59950, 0, 0, IDGEN_ECLOCK},       /* 50 ms left, no wait: refused */
      {day, d0 + 43200000, 3600000, 0, IDGEN_ECLOCK}, /* 12 h left, an hour's wait */
      {day, d0 + 86400000 - 1000, 3600000, 1000, 0},  /* a second left: waits it */
      {"time:41@1s,worker:10,sequence:2", m0 + 300, 0, 700, 0}, /* a second's rest: free */
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    print_message("used-up tick: %s, %lld ms before its end, max_wait_ms %lld\n", cases[i].layout,
                  (long long)(tu_layout(cases[i].layout).unit_ms -
                              cases[i].at_ms % tu_layout(cases[i].layout).unit_ms),
                  (long long)cases[i].wait);
    tu_clock_init(&c, cases[i].at_ms);
    idgen_snowflake_settings_t s = settings(&c, 0, cases[i].wait);
    idgen_snowflake_gen_t *g = tu_gen(cases[i].layout, &s);
    tu_ok(idgen_snowflake_gen_next_n(g, ids, 4)); /* the tick's four */
    int rc = idgen_snowflake_gen_next(g, &id);
    if (rc != cases[i].rc || atomic_load(&c.slept_ns) != cases[i].slept_ms * 1000000) {
      print_error("  returned %d after waiting %.3f s; want %d after %.3f s\n", rc,
                  (double)atomic_load(&c.slept_ns) / 1e9, cases[i].rc,
                  (double)cases[i].slept_ms / 1e3);
      bad++;
      idgen_snowflake_gen_free(g);
      continue;
    }
    if (cases[i].rc == 0)
      assert_true(id > ids[3]);
    else
      assert_int_equal(0, idgen_snowflake_gen_capacity(g));
    idgen_snowflake_gen_stats(g, &st);
    assert_int_equal(cases[i].rc ? 0 : 1, st.sequence_exhausted);
    assert_int_equal(0, st.clock_waits);
    assert_int_equal(cases[i].rc ? 1 : 0, st.clock_refusals);
    idgen_snowflake_gen_free(g);
  }
  assert_int_equal(0, bad);
  /* A batch is one call: five at mid-minute, the fifth in the next minute,
   * is refused before anything is taken, at once (5b10abb waited 30 s);
   * the four that fit are there after it. */
  tu_clock_init(&c, m0 + 30000);
  idgen_snowflake_settings_t s = settings(&c, 0, 100);
  idgen_snowflake_gen_t *g = tu_gen(minute, &s);
  uint64_t five[5];
  assert_int_equal(4, idgen_snowflake_gen_capacity(g));
  assert_int_equal(IDGEN_EBATCH, idgen_snowflake_gen_next_n(g, five, 5));
  assert_int_equal(0, atomic_load(&c.sleeps));
  tu_ok(idgen_snowflake_gen_next_n(g, five, 4));
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next_n(g, five, 2));
  assert_int_equal(0, atomic_load(&c.sleeps));
  idgen_snowflake_gen_free(g);
}

/* A used-up tick and a step back together (D2 of the g3-stepback branch):
 * sequence:1, max_wait_ms 10.  The step counts against max_wait_ms, the
 * rest of the used-up tick after the highest reading does not: a 9.5 ms
 * step from 0.2 ms into a tick is served after 10.3 ms (the step and the
 * rest 0.8 ms), as before; a 10.5 ms step is more than max_wait_ms and is
 * refused at once.  (The branch counted the rest of the tick too and
 * refused the first.) */
static void test_used_up_tick_after_step_back(void **state) {
  (void)state;
  const int64_t at = T0 * 1000000 + 200000;
  for (int k = 0; k < 2; k++) {
    int64_t back = k ? 10500000 : 9500000;
    tu_clock_t c;
    tu_clock_init(&c, 0);
    clock_set_ns(&c, at);
    idgen_snowflake_settings_t s = settings(&c, 0, 10);
    idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=0", &s);
    uint64_t a, b, id;
    tu_ok(idgen_snowflake_gen_next(g, &a));
    tu_ok(idgen_snowflake_gen_next(g, &b)); /* the tick is used up */
    clock_set_ns(&c, at - back);
    idgen_snowflake_stats_t st;
    if (k == 0) {
      tu_ok(idgen_snowflake_gen_next(g, &id));
      assert_int_equal((uint64_t)(T0 + 1) << 1, id); /* the next tick, sequence 0 */
      assert_int_equal(10300000, atomic_load(&c.slept_ns));
      idgen_snowflake_gen_stats(g, &st);
      assert_int_equal(1, st.clock_waits); /* a wait for the clock, not a used-up tick */
      assert_int_equal(0, st.sequence_exhausted);
    } else {
      assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id));
      assert_int_equal(0, atomic_load(&c.sleeps));
    }
    idgen_snowflake_gen_free(g);
  }
}

/* Under full load a tick is reached because the one before ran out, not
 * because a reading moved the generator to it (D1 of the g3-stepback
 * branch, which recorded only such moves).  Here a waiting call reaches
 * tick T0+1, the hot path then issues from it at T0+1, and the clock steps
 * back 0.5 ms into T0: the step is seen, and refused at once with no
 * borrow and no wait (before: waited out as a used-up tick).  Likewise
 * when the ticks were reached by borrowing on the hot path alone (borrow
 * 1 ms, a 1 ms step). */
static void test_full_load_step_back(void **state) {
  (void)state;
  const char *eight = "time:41,sequence:3,epoch=1288834974657"; /* 8 IDs a tick */
  const char *what[] = {"a tick reached by a waiting call", "... then issued from on the hot path",
                        "ticks reached by borrowing on the hot path"};
  int bad = 0;
  for (int v = 0; v < 3; v++) {
    tu_clock_t c;
    tu_clock_init(&c, 0);
    clock_set_ns(&c, T0 * 1000000 + 300000);
    idgen_snowflake_settings_t s = settings(&c, v == 2 ? 1 : 0, 0);
    idgen_snowflake_gen_t *g = tu_gen(eight, &s);
    hot_path_on(g);
    uint64_t id, prev = 0;
    int n = v == 2 ? 16 : 9; /* borrow 1: T0's and T0+1's at once */
    for (int i = 0; i < n; i++) {
      tu_ok(idgen_snowflake_gen_next(g, &id));
      assert_true(id > prev);
      prev = id;
    }
    if (v < 2) {
      /* the ninth waited out the rest of T0 (free) and took from T0+1 */
      assert_int_equal(700000, atomic_load(&c.slept_ns));
      assert_int_equal(TW_TICK0 + 1, id >> 3);
    } else {
      assert_int_equal(0, atomic_load(&c.sleeps));
      clock_set_ns(&c, (T0 + 1) * 1000000 + 200000);
    }
    if (v >= 1) /* and the hot path issues from that tick at it */
      for (int i = 0; i < v; i++) {
        int64_t sleeps = atomic_load(&c.sleeps);
        tu_ok(idgen_snowflake_gen_next(g, &id));
        assert_int_equal(sleeps, atomic_load(&c.sleeps));
        assert_true(id > prev);
        prev = id;
      }
    atomic_fetch_sub(&c.ns, v == 2 ? 1000000 : 500000);
    int64_t slept = atomic_load(&c.slept_ns);
    int rc = idgen_snowflake_gen_next(g, &id);
    if (rc != IDGEN_ECLOCK || atomic_load(&c.slept_ns) != slept) {
      print_error("  %s: after the step back next() returned %d after waiting %lld ns\n", what[v],
                  rc, (long long)(atomic_load(&c.slept_ns) - slept));
      bad++;
    } else {
      assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next_n(g, &id, 1));
      assert_int_equal(slept, atomic_load(&c.slept_ns));
    }
    idgen_snowflake_gen_free(g);
  }
  assert_int_equal(0, bad);
}

/* The same step back while an event loop's call waits: a call reserved
 * T0+1 at T0 and was resumed at T0+1; the clock then steps back into T0;
 * the next async call is refused at once, not asked to wait. */
static void test_async_step_back_refused(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 0);
  clock_set_ns(&c, T0 * 1000000 + 300000);
  idgen_snowflake_settings_t s = settings(&c, 0, 0);
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=0", &s);
  uint64_t ids[2], id;
  idgen_snowflake_wait_t w;
  tu_ok(idgen_snowflake_gen_next_n_async(g, ids, 2, &w));
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_next_n_async(g, &id, 1, &w));
  clock_set_ns(&c, (T0 + 1) * 1000000);
  tu_ok(idgen_snowflake_gen_resume(g, &w, &id));
  clock_set_ns(&c, T0 * 1000000 + 600000);
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next_n_async(g, &id, 1, &w));
  idgen_snowflake_gen_free(g);
}

/* Refused calls take nothing: after 100 refusals the next ID is the very
 * next value.  This covers the slow path; the hot path (system clock only)
 * is covered by test_tiny_sequence_no_livelock in test_concurrency.c, which
 * hung when the hot path took a value on every call it then refused. */
static void test_refusals_consume_nothing(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 0, 0);
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,node:3,epoch=1288834974657", &s);
  uint64_t a, b, id;
  tu_ok(idgen_snowflake_gen_next(g, &a));
  tu_ok(idgen_snowflake_gen_next(g, &b));
  assert_int_equal(a + 8, b); /* sequence 1 bit above 3 node bits */
  tu_clock_add_ms(&c, -5);
  for (int i = 0; i < 100; i++)
    assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id));
  tu_clock_add_ms(&c, 5);
  tu_ok(idgen_snowflake_gen_next(g, &id)); /* waits out the tick: the next tick, sequence 0 */
  assert_int_equal((TW_TICK0 + 1) << 4, id);
  idgen_snowflake_gen_free(g);
}

static void test_sequence_exhausted_borrows(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  uint64_t prev = 0, id;
  for (int i = 0; i < 3 * 4096; i++) {
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev);
    assert_int_equal(TW_TICK0 + (uint64_t)i / 4096, tw_tick(id));
    assert_int_equal((uint64_t)i % 4096, tw_seq(id));
    prev = id;
  }
  assert_int_equal(0, atomic_load(&c.sleeps));
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(g, &st);
  assert_int_equal(2, st.borrowed_ms);
  assert_int_equal(prev, st.last_id);
  idgen_snowflake_gen_free(g);
}

static void test_sequence_exhausted_waits(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  atomic_fetch_add(&c.ns, 300000); /* 0.3 ms into the tick */
  idgen_snowflake_settings_t s = settings(&c, 0, 0);
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  uint64_t id;
  for (int i = 0; i < 4096; i++) {
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_int_equal(TW_TICK0, tw_tick(id));
  }
  /* The tick is used up: waiting out its last 0.7 ms is allowed even with
   * max_wait_ms = 0, and is not a clock wait. */
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(TW_TICK0 + 1, tw_tick(id));
  assert_int_equal(0, tw_seq(id));
  assert_int_equal(1, atomic_load(&c.sleeps));
  assert_int_equal(700000, atomic_load(&c.slept_ns));
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(g, &st);
  assert_int_equal(1, st.sequence_exhausted);
  assert_int_equal(0, st.clock_waits);
  assert_int_equal(0, st.borrowed_ms);
  idgen_snowflake_gen_free(g);
}

static void test_last_tick(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 14); /* horizon of time:4@1ms from epoch 0 is 16 ms */
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("time:4@1ms,sequence:2,epoch=0", &s);
  uint64_t id, prev = 0;
  for (int i = 0; i < 8; i++) { /* tick 14, then borrowed tick 15 */
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(i == 0 || id > prev);
    prev = id;
  }
  assert_int_equal(63, prev); /* the largest ID the layout has */
  for (int i = 0; i < 3; i++)
    assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next(g, &id));
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next_n(g, &id, 1));
  tu_clock_set_ms(&c, 15);
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next(g, &id));
  tu_clock_set_ms(&c, 40); /* the wall clock past the horizon too */
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next(g, &id));
  idgen_snowflake_gen_free(g);

  /* Refused at start once the horizon has passed, naming the date. */
  idgen_layout_t l;
  char err[256];
  tu_ok(idgen_layout_parse(&l, "time:4@1ms,sequence:2,epoch=0", NULL, 0));
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
  assert_string_equal("layout ran out on 1970-01-01", err);
  tu_ok(idgen_layout_parse(&l, "baidu", NULL, 0));
  tu_clock_set_ms(&c, 1763769600000); /* 2025-11-22 */
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
  assert_string_equal("layout ran out on 2024-11-20", err);
}

/* A full 64-bit state (time + sequence = 64 bits): the generator must stop
 * below 2^64 - 1 rather than wrap. */
static void test_last_tick_64bit_state(void **state) {
  (void)state;
  const int64_t last_ms = (INT64_C(1) << 43) - 1;
  tu_clock_t c;
  tu_clock_init(&c, last_ms);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("time:43@1ms,sequence:21,epoch=0", &s);
  size_t n = (size_t)1 << 21;
  uint64_t *ids = malloc(n * sizeof *ids);
  assert_non_null(ids);
  tu_ok(idgen_snowflake_gen_next_n(g, ids, n - 2));
  for (size_t i = 1; i < n - 2; i++)
    assert_int_equal(ids[i - 1] + 1, ids[i]);
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(UINT64_MAX - 1, id);
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next(g, &id));
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next_n(g, ids, 5));
  free(ids);
  idgen_snowflake_gen_free(g);
}

static void test_batches_cross_ticks(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  s.node[1] = 3;
  s.node[2] = 9;
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  enum { N = 10000 };
  static uint64_t ids[N];
  uint64_t one;
  tu_ok(idgen_snowflake_gen_next(g, &one));
  tu_ok(idgen_snowflake_gen_next_n(g, ids, N));
  assert_true(ids[0] > one);
  for (int i = 0; i < N; i++) {
    uint64_t k = (uint64_t)i + 1; /* one ID came before the batch */
    assert_int_equal(TW_TICK0 + k / 4096, tw_tick(ids[i]));
    assert_int_equal(k % 4096, tw_seq(ids[i]));
    assert_int_equal(3, (ids[i] >> 17) & 31);
    assert_int_equal(9, (ids[i] >> 12) & 31);
  }
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 0));
  idgen_snowflake_gen_free(g);

  /* Sonyflake: the sequence sits above the machine field, 10 ms ticks. */
  const int64_t sf_epoch = 1409529600000;
  tu_clock_init(&c, sf_epoch + 12345);
  s = settings(&c, 1000, 100);
  s.node[2] = 0xbeef;
  g = tu_gen("sonyflake", &s);
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 600));
  for (int i = 0; i < 600; i++) {
    assert_int_equal(1234 + i / 256, ids[i] >> 24);
    assert_int_equal(i % 256, (ids[i] >> 16) & 255);
    assert_int_equal(0xbeef, ids[i] & 0xffff);
    assert_true(i == 0 || ids[i] > ids[i - 1]);
  }
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(g, &st);
  assert_int_equal(15, st.borrowed_ms); /* tick 1236 starts at +12360, now +12345 */
  idgen_snowflake_gen_free(g);
}

/* A batch is one call for the bound: with no borrowing and no wait it may wait out
 * the rest of the current tick, no more, so at the start of a tick twitter
 * can fill two ticks' worth; a larger batch is refused before anything is
 * claimed (52df1fb granted a fresh wait per tick: 3 ticks here). */
static void test_batch_waits_for_ticks(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 0, 0);
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  enum { N = 10000 };
  static uint64_t ids[N];
  assert_int_equal(8192, idgen_snowflake_gen_capacity(g));
  assert_int_equal(IDGEN_EBATCH, idgen_snowflake_gen_next_n(g, ids, N));
  assert_int_equal(0, atomic_load(&c.sleeps));     /* refused at once */
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 8192)); /* nothing was taken before */
  for (int i = 0; i < 8192; i++) {
    assert_int_equal(TW_TICK0 + (uint64_t)i / 4096, tw_tick(ids[i]));
    assert_int_equal((uint64_t)i % 4096, tw_seq(ids[i]));
  }
  assert_int_equal(1, atomic_load(&c.sleeps)); /* the rest of the tick: 1 ms */
  assert_int_equal(1000000, atomic_load(&c.slept_ns));
  idgen_snowflake_gen_free(g);
}

/* The batches of the review, each bounded by the rest of the tick plus
 * max_wait_ms in all (52df1fb: sonyflake count=100000 took 2.9 s; a
 * 16-per-second layout took 5.3 s for 120). */
static void test_batch_total_wait_bounded(void **state) {
  (void)state;
  static uint64_t ids[100000];
  /* sonyflake: 256 IDs per 10 ms tick; borrow 1 s and wait 100 ms allow
   * the current tick, the next, and 110 more: 112 * 256 at a tick start */
  const int64_t sf_epoch = 1409529600000;
  tu_clock_t c;
  tu_clock_init(&c, sf_epoch + 1000000);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("sonyflake", &s);
  assert_int_equal(112 * 256, idgen_snowflake_gen_capacity(g));
  assert_int_equal(IDGEN_EBATCH, idgen_snowflake_gen_next_n(g, ids, 100000));
  assert_int_equal(0, atomic_load(&c.sleeps));
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 112 * 256)); /* the whole window: waits the rest */
  assert_true(atomic_load(&c.slept_ns) <= (10 + 100) * 1000000LL);
  idgen_snowflake_gen_free(g);
  /* 16 IDs per second: at a second's start, this second, the next and the
   * one after come within borrow + wait: 48 */
  tu_clock_init(&c, T0 - T0 % 1000);
  g = tu_gen("time:41@1s,worker:10,sequence:4", &s);
  assert_int_equal(48, idgen_snowflake_gen_capacity(g));
  assert_int_equal(IDGEN_EBATCH, idgen_snowflake_gen_next_n(g, ids, 120));
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 40));
  assert_true(atomic_load(&c.slept_ns) <= (1000 + 100) * 1000000LL);
  for (int i = 1; i < 40; i++)
    assert_true(ids[i] > ids[i - 1]);
  idgen_snowflake_gen_free(g);
  /* with no wait allowed, 8 IDs are there at once */
  tu_clock_init(&c, T0 - T0 % 1000 + 500);
  s = settings(&c, 1000, 0);
  g = tu_gen("time:41@1s,worker:10,sequence:4", &s);
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 8));
  assert_int_equal(0, atomic_load(&c.sleeps));
  idgen_snowflake_gen_free(g);
}

/* Near the layout's end a batch that does not fit takes nothing: the last
 * IDs remain for smaller calls (52df1fb kept the ticks it had claimed). */
static void test_batch_at_the_end_takes_nothing(void **state) {
  (void)state;
  const int64_t last_ms = (INT64_C(1) << 10) - 1; /* time:10 ticks, epoch 0 */
  tu_clock_t c;
  tu_clock_init(&c, last_ms);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  idgen_snowflake_gen_t *g = tu_gen("time:10,sequence:4,epoch=0", &s);
  uint64_t ids[32];
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next_n(g, ids, 17));
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 16)); /* all 16 of the last tick */
  assert_int_equal((uint64_t)last_ms << 4, ids[0]);
  assert_int_equal(IDGEN_EEXHAUSTED, idgen_snowflake_gen_next(g, ids));
  idgen_snowflake_gen_free(g);
}

/* The non-blocking calls: a call that must wait says when, keeps its place,
 * and is answered on resume with the IDs a blocking call would have got. */
static void test_async_wait_and_resume(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 0, 100);
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  uint64_t ids[4096], more[4], one;
  idgen_snowflake_wait_t w;
  tu_ok(idgen_snowflake_gen_next_n_async(g, ids, 4096, &w)); /* this tick: at once */
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_next_n_async(g, more, 4, &w));
  assert_int_equal((T0 + 1) * 1000000, w.due_ns); /* the next tick */
  /* its place is kept: a later call queues behind it */
  idgen_snowflake_wait_t w2;
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_next_n_async(g, &one, 1, &w2));
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_resume(g, &w, more)); /* not yet */
  tu_clock_add_ms(&c, 1);
  tu_ok(idgen_snowflake_gen_resume(g, &w, more));
  tu_ok(idgen_snowflake_gen_resume(g, &w2, &one));
  assert_int_equal(TW_TICK0 + 1, tw_tick(more[0]));
  assert_int_equal(0, tw_seq(more[0]));
  assert_int_equal(3, tw_seq(more[3]));
  assert_int_equal(4, tw_seq(one));
  assert_int_equal(0, atomic_load(&c.sleeps)); /* it never slept */
  /* a clock that stands still: each resume asks for the wait again, and the
   * asks add up to the budget (rest of the tick + 100 ms): then refused */
  tu_ok(idgen_snowflake_gen_next_n(g, ids, 4091)); /* the rest of tick 1 */
  assert_int_equal(IDGEN_EAGAIN, idgen_snowflake_gen_next_n_async(g, more, 1, &w));
  int rc, rounds = 0;
  while ((rc = idgen_snowflake_gen_resume(g, &w, more)) == IDGEN_EAGAIN)
    rounds++;
  assert_int_equal(IDGEN_ECLOCK, rc);
  assert_in_range(rounds, 99, 101);
  idgen_snowflake_gen_free(g);
}

/* An event loop that resumes before w.due_ns (it polls) spends only the
 * time that really passed, on the real clock: a wait that fits the budget
 * ends with the IDs however often it is polled.  (Before, each early resume
 * was charged the whole remaining wait again, and a few polls ended the
 * call with IDGEN_ECLOCK.)  Ticks of 10 ms and no max_wait_ms: the budget
 * is what is left of the tick, and the wait is to the next one.  The
 * budget it spends is never less than the real time it has waited. */
static void test_async_polled_early(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.max_borrow_ms = 0;
  s.max_wait_ms = 0;
  idgen_snowflake_gen_t *g = tu_gen("time:41@10ms,worker:10,sequence:2,epoch=1288834974000", &s);
  uint64_t ids[4], one = 0;
  idgen_snowflake_wait_t w;
  int polls = 0;
  for (int tries = 0; tries < 20 && polls < 3; tries++) {
    int rc;
    /* use up a tick, then ask for one more: reserved in the next tick */
    while ((rc = idgen_snowflake_gen_next_n_async(g, ids, 4, &w)) == 0)
      ;
    if (rc == IDGEN_EAGAIN) /* the tick turned meanwhile: let it run out */
      while ((rc = idgen_snowflake_gen_resume(g, &w, ids)) == IDGEN_EAGAIN)
        ;
    tu_ok(rc);
    rc = idgen_snowflake_gen_next_n_async(g, &one, 1, &w);
    if (rc == 0)
      continue; /* a new tick came between the two calls */
    assert_int_equal(IDGEN_EAGAIN, rc);
    int64_t t_asked = tu_mono_ns();
    polls = 0;
    for (;;) {
      int64_t t_before = tu_mono_ns();
      if ((rc = idgen_snowflake_gen_resume(g, &w, &one)) != IDGEN_EAGAIN)
        break;
      polls++;
      /* Spent: at least the real time it has waited.  (Each resume once
       * read the clock twice and gave back the time in between: a loop
       * that resumed without pause was charged about 64% of its wait.) */
      if (w.charged_ns < t_before - t_asked)
        fail_msg("charged %lld ns after %lld ns of waiting", (long long)w.charged_ns,
                 (long long)(t_before - t_asked));
    }
    tu_ok(rc);
    assert_true(one > ids[3]);
  }
  if (polls < 3)
    fail_msg("never polled a waiting call more than twice: nothing was shown");
  idgen_snowflake_gen_free(g);
}

static void test_random_sequence_start(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  s.random_sequence_start = 1;
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  int shard[4] = {0}, nonzero = 0;
  uint64_t prev = 0, id;
  for (int i = 0; i < 4000; i++) {
    tu_clock_add_ms(&c, 1);
    tu_ok(idgen_snowflake_gen_next(g, &id));
    assert_true(id > prev);
    assert_true(tw_seq(id) < 2048); /* the lower half keeps half the tick's room */
    nonzero += tw_seq(id) != 0;
    shard[id % 4]++;
    prev = id;
  }
  /* Expected 1000 each; a fixed start would put all 4000 in shard 0. */
  for (int k = 0; k < 4; k++)
    assert_true(shard[k] > 800);
  assert_true(nonzero > 3900);
  /* Within one tick the sequence still counts up by one. */
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(prev + 1, id);
  idgen_snowflake_gen_free(g);
}

/* A scripted clock for the three cases below: `stale` is returned by the
 * next read only; sleeping may step back once, or not move time at all. */
struct script_clock {
  int64_t now, stale, back_to;
  int sleeps, moves;
};

static int64_t script_now(void *ctx) {
  struct script_clock *c = ctx;
  if (c->stale != 0) {
    int64_t v = c->stale;
    c->stale = 0;
    return v;
  }
  return c->now;
}

static void script_sleep(void *ctx, int64_t ns) {
  struct script_clock *c = ctx;
  c->sleeps++;
  if (c->back_to != 0) {
    c->now = c->back_to;
    c->back_to = 0;
  } else if (c->moves) {
    c->now += ns;
  }
}

/* A call whose own clock reading is old (it was preempted after reading it
 * while another call moved on) must not be refused for it. */
static void test_stale_reading_not_refused(void **state) {
  (void)state;
  for (int borrow = 0; borrow <= 1000; borrow += 1000) {
    struct script_clock sc = {T0 * 1000000, 0, 0, 0, 1};
    idgen_clock_t ck = {script_now, script_sleep, &sc};
    idgen_snowflake_settings_t s;
    idgen_snowflake_settings_init(&s);
    s.clock = &ck;
    s.max_borrow_ms = borrow;
    s.max_wait_ms = borrow ? 100 : 0;
    idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
    uint64_t a, b;
    sc.now += (borrow ? 1200 : 3) * 1000000;
    tu_ok(idgen_snowflake_gen_next(g, &a));
    sc.stale = T0 * 1000000; /* this call's first reading is old */
    tu_ok(idgen_snowflake_gen_next(g, &b));
    assert_true(b > a);
    assert_int_equal(0, sc.sleeps);
    idgen_snowflake_gen_free(g);
  }
}

/* A reading taken inside the generator can be old by the time it claims
 * too: other calls moved the clock on by waiting and used up the next tick
 * after this call's re-read (here: from inside the clock read, as a thread
 * running in between would).  Without a step back the call must not be
 * refused: at its claim the generator is in the clock's tick. */
struct race_clock {
  int64_t now;
  int reads, burst_at;
  idgen_snowflake_gen_t *g;
  int sleeps;
};

static int64_t race_now(void *ctx) {
  struct race_clock *c = ctx;
  int64_t v = c->now;
  if (++c->reads == 1)
    return v - 1000000; /* the caller's reading: old, below `seen` */
  if (c->reads == c->burst_at) {
    c->now += 1000000; /* another call's wait moved the clock on ... */
    uint64_t id;
    for (int i = 0; i < 3; i++) /* ... it used up T+1, reserved T+2, waited */
      tu_ok(idgen_snowflake_gen_next(c->g, &id));
  }
  return v; /* T: current when taken, old at the claim */
}

static void race_sleep(void *ctx, int64_t ns) {
  struct race_clock *c = ctx;
  c->sleeps++;
  if (ns > 0)
    c->now += ns;
}

static void test_reread_reading_gone_stale(void **state) {
  (void)state;
  struct race_clock rc = {T0 * 1000000 + 500000, 0, 0, NULL, 0};
  idgen_clock_t ck = {race_now, race_sleep, &rc};
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &ck;
  s.max_borrow_ms = 0;
  s.max_wait_ms = 0;
  rc.reads = 1; /* gen_new's reading: not the caller's */
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=0", &s);
  rc.g = g;
  uint64_t a, b, id;
  rc.reads = 1;
  tu_ok(idgen_snowflake_gen_next(g, &a)); /* T, 2 a tick: used up */
  tu_ok(idgen_snowflake_gen_next(g, &id));
  rc.reads = 0;
  rc.burst_at = 2; /* the generator's own re-read */
  int sleeps = rc.sleeps;
  tu_ok(idgen_snowflake_gen_next(g, &b));
  assert_true(b > id);
  assert_int_equal(1, rc.sleeps - sleeps); /* the other call's wait only */
  idgen_snowflake_gen_free(g);
}

/* A clock that moves on by a millisecond at every reading (an injected
 * one, or the system clock sped up under libfaketime) after a step back of
 * a day: a call that cannot be served within its budget is refused after a
 * few readings, not after the clock has made up the step.  (Each failed
 * claim's re-read is newer than its reading, so a re-read alone does not
 * bound the retries; and the generator's state the claim failed on does
 * not fit the budget at the re-read either.)  Past `limit` readings the
 * clock stands still, so a generator that retries while it moves still
 * ends. */
struct racing_clock {
  int64_t now;
  int64_t reads, limit;
};

static int64_t racing_now(void *ctx) {
  struct racing_clock *c = ctx;
  if (c->limit > 0 && ++c->reads <= c->limit)
    c->now += 1000000;
  return c->now;
}

static void racing_sleep(void *ctx, int64_t ns) {
  struct racing_clock *c = ctx;
  if (ns > 0)
    c->now += ns;
}

static const struct racing_case {
  const char *what, *layout;
  int64_t borrow, wait, back_ms;
  size_t n, used; /* the call's IDs; IDs issued first (the tick used up) */
  int rc;
} racing_cases[] = {
    {"twitter, a day back, no borrow or wait: next", "twitter", 0, 0, 86400000, 1, 1, IDGEN_ECLOCK},
    {"twitter, a day back, borrow 1 s, wait 100 ms: next_n", "twitter", 1000, 100, 86400000, 3, 1,
     IDGEN_ECLOCK},
    {"a day a tick, one value left, wait 1 s: a batch into the next day",
     "time:31@86400s,sequence:1,epoch=0", 10, 1000, 0, 3, 1, IDGEN_EBATCH},
    {"a day a tick, the tick used up, wait 1 s: next", "time:31@86400s,sequence:1,epoch=0", 0, 1000,
     0, 1, 2, IDGEN_ECLOCK},
};

static void test_racing_clock_refused_soon(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof racing_cases / sizeof racing_cases[0]; i++) {
    const struct racing_case *k = &racing_cases[i];
    print_message("racing clock: %s\n", k->what);
    struct racing_clock rc = {T0 * 1000000 + 500000, 0, 0};
    idgen_clock_t ck = {racing_now, racing_sleep, &rc};
    idgen_snowflake_settings_t s;
    idgen_snowflake_settings_init(&s);
    s.clock = &ck;
    s.max_borrow_ms = k->borrow;
    s.max_wait_ms = k->wait;
    idgen_snowflake_gen_t *g = tu_gen(k->layout, &s);
    uint64_t ids[3];
    for (size_t j = 0; j < k->used; j++)
      tu_ok(idgen_snowflake_gen_next(g, &ids[0]));
    rc.now -= k->back_ms * 1000000;
    rc.limit = 100000; /* from here on, a millisecond a reading */
    int r = k->n == 1 ? idgen_snowflake_gen_next(g, ids) : idgen_snowflake_gen_next_n(g, ids, k->n);
    assert_int_equal(k->rc, r);
    assert_in_range(rc.reads, 1, 4); /* the caller's, and a re-read or two */
    idgen_snowflake_gen_free(g);
  }
}

/* The clock steps back past the layout's epoch while a call sleeps on a
 * reserved tick: the call is refused, it does not sleep for the gap. */
static void test_step_before_epoch_while_waiting(void **state) {
  (void)state;
  const int64_t epoch = 1735689600000; /* js53's */
  struct script_clock sc = {(epoch + 5000) * 1000000, 0, (epoch - 86400000) * 1000000, 0, 1};
  idgen_clock_t ck = {script_now, script_sleep, &sc};
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &ck;
  s.max_borrow_ms = 0;
  s.max_wait_ms = 100;
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=2025-01-01T00:00:00Z", &s);
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  tu_ok(idgen_snowflake_gen_next(g, &id));                          /* the tick is used up */
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id)); /* reserves, sleeps, refused */
  assert_int_equal(1, sc.sleeps);
  idgen_snowflake_gen_free(g);
}

/* An injected clock that never moves (no sleep function): the wait is
 * charged in full and the call ends with IDGEN_ECLOCK instead of spinning. */
static void test_frozen_clock_wait_ends(void **state) {
  (void)state;
  struct script_clock sc = {T0 * 1000000 + 500000, 0, 0, 0, 0};
  idgen_clock_t ck = {script_now, NULL, &sc};
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &ck;
  s.max_borrow_ms = 0;
  s.max_wait_ms = 100;
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=0", &s);
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id));
  idgen_snowflake_gen_free(g);
}

/* An injected clock that stands still a nanosecond before the next tick,
 * with a sleep that does not move it: each wait asks for that nanosecond,
 * so charging the wait asked ended the call only after max_wait_ms of
 * them (100 million rounds of reading and sleeping for 100 ms; 3.6 * 10^12
 * for an hour).  A sleep after which the clock has not moved at all is
 * charged at least a millisecond: a round per millisecond of budget.  Past
 * `limit` readings the clock goes back a day, so a generator that keeps
 * waiting still ends (refused). */
struct still_clock {
  int64_t now;
  int64_t reads, limit;
  int sleeps;
};

static int64_t still_now(void *ctx) {
  struct still_clock *c = ctx;
  if (c->limit > 0 && ++c->reads == c->limit)
    c->now -= (int64_t)86400000 * 1000000;
  return c->now;
}

static void still_sleep(void *ctx, int64_t ns) {
  (void)ns;
  ((struct still_clock *)ctx)->sleeps++;
}

static void test_still_clock_wait_ends(void **state) {
  (void)state;
  for (int64_t wait = 0; wait <= 100; wait += 100) {
    struct still_clock sc = {T0 * 1000000 + 999999, 0, 0, 0};
    idgen_clock_t ck = {still_now, still_sleep, &sc};
    idgen_snowflake_settings_t s;
    idgen_snowflake_settings_init(&s);
    s.clock = &ck;
    s.max_borrow_ms = 0;
    s.max_wait_ms = wait;
    idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,epoch=0", &s);
    uint64_t id;
    tu_ok(idgen_snowflake_gen_next(g, &id));
    tu_ok(idgen_snowflake_gen_next(g, &id)); /* the tick is used up */
    sc.reads = 0;
    sc.limit = 100000;
    assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id));
    print_message("max_wait_ms %lld: %lld readings, %d sleeps\n", (long long)wait,
                  (long long)sc.reads, sc.sleeps);
    assert_in_range(sc.sleeps, 1, wait + 2); /* the rest of the tick, and the wait */
    assert_in_range(sc.reads, 1, 3 * (wait + 2) + 4);
    idgen_snowflake_gen_free(g);
  }
}

/* Settings idgen_snowflake_gen_new refuses, each with the message naming the
 * setting and its bounds; *out is reset to NULL. */
static const struct bad_setting {
  int64_t borrow, wait;
  int node_index;
  uint64_t node_value;
  int rc;
  const char *message;
} bad_settings[] = {
    {1000, 100, 2, 32, IDGEN_ERANGE, "worker 32 out of range 0..31"},
    {1000, 100, 1, 32, IDGEN_ERANGE, "datacenter 32 out of range 0..31"},
    {-1, 100, -1, 0, IDGEN_ERANGE, "max_borrow_ms -1 out of range 0..86400000"},
    {IDGEN_MAX_BORROW_MS_MAX + 1, 100, -1, 0, IDGEN_ERANGE,
     "max_borrow_ms 86400001 out of range 0..86400000"},
    {1000, -1, -1, 0, IDGEN_ERANGE, "max_wait_ms -1 out of range 0..3600000"},
    {1000, IDGEN_MAX_WAIT_MS_MAX + 1, -1, 0, IDGEN_ERANGE,
     "max_wait_ms 3600001 out of range 0..3600000"},
};

static void test_settings_validation(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, T0);
  idgen_layout_t l;
  char err[256];
  tu_ok(idgen_layout_parse(&l, "twitter", NULL, 0));
  for (size_t i = 0; i < sizeof bad_settings / sizeof bad_settings[0]; i++) {
    const struct bad_setting *b = &bad_settings[i];
    idgen_snowflake_gen_t *g = (idgen_snowflake_gen_t *)&c; /* must be reset to NULL */
    idgen_snowflake_settings_t s = settings(&c, b->borrow, b->wait);
    if (b->node_index >= 0)
      s.node[b->node_index] = b->node_value;
    assert_int_equal(b->rc, idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
    assert_string_equal(b->message, err);
    assert_null(g);
  }
  /* The largest values are accepted; the sequence entry of node[] is
   * ignored, as documented. */
  idgen_snowflake_gen_t *g;
  idgen_snowflake_settings_t s = settings(&c, IDGEN_MAX_BORROW_MS_MAX, IDGEN_MAX_WAIT_MS_MAX);
  s.node[3] = 99999;
  tu_ok(idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
  idgen_snowflake_gen_free(g);
  idgen_snowflake_gen_free(NULL);
  /* NULL settings: the defaults, on the system clock. */
  tu_ok(idgen_snowflake_gen_new(&g, &l, NULL, err, sizeof err));
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  idgen_snowflake_gen_free(g);
}

static void test_clock_before_epoch(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1577836800000); /* 2020-01-01 */
  idgen_layout_t l;
  idgen_snowflake_gen_t *g;
  char err[256];
  tu_ok(idgen_layout_parse(&l, "js53", NULL, 0));
  idgen_snowflake_settings_t s = settings(&c, 1000, 100);
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
  assert_string_equal("clock 2020-01-01T00:00:00.000Z is before the layout epoch "
                      "2025-01-01T00:00:00.000Z",
                      err);
  tu_clock_set_ms(&c, 1735689600000 + 10);
  tu_ok(idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err));
  uint64_t id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  assert_int_equal(10, id >> 12);
  tu_clock_set_ms(&c, 1735689600000 - 5000);
  assert_int_equal(IDGEN_ECLOCK, idgen_snowflake_gen_next(g, &id));
  idgen_snowflake_gen_free(g);
}

static void test_fork_child_refused(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = tu_gen("twitter", NULL);
  uint64_t id, pid_id;
  tu_ok(idgen_snowflake_gen_next(g, &id));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The child: the parent's generator refuses, in both forms; a generator
     * of its own works. */
    int bad = idgen_snowflake_gen_next(g, &id) != IDGEN_EFORKED ||
              idgen_snowflake_gen_next_n(g, &id, 4) != IDGEN_EFORKED;
    idgen_snowflake_gen_t *own = tu_gen("twitter", NULL);
    bad |= idgen_snowflake_gen_next(own, &id) != 0;
    _exit(bad ? 3 : 0);
  }
  int st;
  assert_int_equal(pid, waitpid(pid, &st, 0));
  assert_true(WIFEXITED(st));
  assert_int_equal(0, WEXITSTATUS(st));
  tu_ok(idgen_snowflake_gen_next(g, &pid_id)); /* the parent is unaffected */
  assert_true(pid_id > id);
  idgen_snowflake_gen_free(g);
}

static int64_t precise_ms(void) { return idgen_clock_now_ms(IDGEN_CLOCK_PRECISE); }

/* The system clock, both modes: an ID's time lies between clock readings
 * taken before and after the call (no borrowing at this rate). */
static void test_real_clock_accuracy(void **state) {
  (void)state;
  for (int mode = 0; mode < 2; mode++) {
    idgen_snowflake_settings_t s;
    idgen_snowflake_settings_init(&s);
    s.clock_mode = mode ? IDGEN_CLOCK_PRECISE : IDGEN_CLOCK_FAST;
    idgen_snowflake_gen_t *g = tu_gen("time:41@1ms,sequence:22,epoch=0", &s);
    size_t n = tu_scaled(3000000);
    uint64_t prev = 0;
    for (size_t i = 0; i < n; i++) {
      int64_t before = precise_ms();
      uint64_t id;
      tu_ok(idgen_snowflake_gen_next(g, &id));
      int64_t after = precise_ms(), t = (int64_t)(id >> 22);
      if (t < before || t > after)
        fail_msg("mode %d call %zu: ID time %" PRId64 " outside [%" PRId64 ", %" PRId64 "]", mode,
                 i, t, before, after);
      assert_true(id > prev);
      prev = id;
    }
    /* The fast clock agrees with the precise one to the millisecond. */
    for (int i = 0; i < 1000; i++) {
      int64_t a = precise_ms(), f = idgen_clock_now_ms(IDGEN_CLOCK_FAST), b = precise_ms();
      assert_true(a <= f && f <= b);
    }
    idgen_snowflake_gen_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answer),
      cmocka_unit_test(test_step_back_within_borrow),
      cmocka_unit_test(test_step_back_table),
      cmocka_unit_test(test_step_back_refused_at_once),
      cmocka_unit_test(test_long_tick_rest_counts),
      cmocka_unit_test(test_used_up_tick_after_step_back),
      cmocka_unit_test(test_full_load_step_back),
      cmocka_unit_test(test_async_step_back_refused),
      cmocka_unit_test(test_refusals_consume_nothing),
      cmocka_unit_test(test_sequence_exhausted_borrows),
      cmocka_unit_test(test_sequence_exhausted_waits),
      cmocka_unit_test(test_last_tick),
      cmocka_unit_test(test_last_tick_64bit_state),
      cmocka_unit_test(test_batches_cross_ticks),
      cmocka_unit_test(test_batch_waits_for_ticks),
      cmocka_unit_test(test_batch_total_wait_bounded),
      cmocka_unit_test(test_batch_at_the_end_takes_nothing),
      cmocka_unit_test(test_async_wait_and_resume),
      cmocka_unit_test(test_async_polled_early),
      cmocka_unit_test(test_random_sequence_start),
      cmocka_unit_test(test_stale_reading_not_refused),
      cmocka_unit_test(test_reread_reading_gone_stale),
      cmocka_unit_test(test_racing_clock_refused_soon),
      cmocka_unit_test(test_step_before_epoch_while_waiting),
      cmocka_unit_test(test_frozen_clock_wait_ends),
      cmocka_unit_test(test_still_clock_wait_ends),
      cmocka_unit_test(test_settings_validation),
      cmocka_unit_test(test_clock_before_epoch),
      cmocka_unit_test(test_fork_child_refused),
      cmocka_unit_test(test_real_clock_accuracy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
