/*
 * test_concurrency.c -- uniqueness and order across threads and processes:
 *   - 2 threads x 10 million IDs from one generator: all distinct, each
 *     thread's strictly increasing (also through next_n batches, and mixed);
 *   - real-time order: an ID obtained after another call returned is larger;
 *   - the same while an injected clock jumps back and forth under the threads;
 *   - sequence exhaustion under contention (twitter layout, waiting);
 *   - after full load on the hot path, a step back of the clock is refused
 *     at once by both threads with no borrow and no wait (bounded);
 *   - several processes with distinct worker values never collide.
 * Sizes are divided by $IDGEN_TEST_SCALE (the sanitizer builds use it).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snowflake_int.h"
#include "testutil.h"

#define WIDE "time:41@1ms,sequence:22,epoch=1288834974657"

enum mode { MODE_NEXT, MODE_BATCH, MODE_MIXED };

struct worker {
  idgen_snowflake_gen_t *g;
  enum mode mode;
  int index;
  size_t n;
  uint64_t *ids;
  int failures;     /* calls that returned an error */
  int order_errors; /* real-time order violations seen */
  _Atomic uint64_t *published;
  tu_clock_t *chaos; /* if set, this worker also moves the clock */
  int64_t chaos_base;
  pthread_barrier_t *start;
};

/* Raises *p to at least v. */
static void publish(_Atomic uint64_t *p, uint64_t v) {
  uint64_t cur = atomic_load(p);
  while (cur < v && !atomic_compare_exchange_weak(p, &cur, v)) {
  }
}

static void *worker_main(void *arg) {
  struct worker *w = arg;
  pthread_barrier_wait(w->start);
  size_t i = 0, step = 0;
  while (i < w->n) {
    int batch = w->mode == MODE_BATCH || (w->mode == MODE_MIXED && w->index == 1);
    size_t k = batch ? 1 + (step * 7919) % 1000 : 1;
    if (k > w->n - i)
      k = w->n - i;
    /* Everything published so far came from calls that have returned. */
    uint64_t seen = atomic_load(w->published);
    int rc = batch ? idgen_snowflake_gen_next_n(w->g, w->ids + i, k)
                   : idgen_snowflake_gen_next(w->g, w->ids + i);
    if (rc != 0) {
      w->failures++;
      continue;
    }
    if (w->ids[i] <= seen && seen != 0)
      w->order_errors++;
    publish(w->published, w->ids[i + k - 1]);
    i += k;
    if (w->chaos != NULL && ++step % 5000 == 0) {
      /* The clock moves 2 ms forward per event (the generator borrows about
       * 1.2 ms per 5000 IDs) and is set back by up to 0.8 s, within the
       * borrow, so every call must succeed. */
      uint64_t ev = step / 5000;
      tu_clock_set_ms(w->chaos,
                      w->chaos_base + (int64_t)(2 * ev) - (int64_t)(ev * 2654435761u % 800));
    }
    step++;
  }
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Runs 2 threads taking n IDs each and checks everything. */
static void run_two(idgen_snowflake_gen_t *g, enum mode mode, size_t n, tu_clock_t *chaos) {
  struct worker w[2];
  pthread_t th[2];
  pthread_barrier_t bar;
  _Atomic uint64_t published = 0;
  pthread_barrier_init(&bar, NULL, 2);
  for (int t = 0; t < 2; t++) {
    w[t] = (struct worker){g,
                           mode,
                           t,
                           n,
                           malloc(n * sizeof(uint64_t)),
                           0,
                           0,
                           &published,
                           t == 0 ? chaos : NULL,
                           chaos ? tu_clock_ms(chaos) : 0,
                           &bar};
    assert_non_null(w[t].ids);
    assert_int_equal(0, pthread_create(&th[t], NULL, worker_main, &w[t]));
  }
  for (int t = 0; t < 2; t++)
    pthread_join(th[t], NULL);
  pthread_barrier_destroy(&bar);

  for (int t = 0; t < 2; t++) {
    assert_int_equal(0, w[t].failures);
    assert_int_equal(0, w[t].order_errors);
    for (size_t i = 1; i < n; i++)
      if (w[t].ids[i] <= w[t].ids[i - 1])
        fail_msg("thread %d: ID %zu (%llu) not above the one before (%llu)", t, i,
                 (unsigned long long)w[t].ids[i], (unsigned long long)w[t].ids[i - 1]);
  }
  /* Both lists are sorted: a merge finds any ID issued twice. */
  size_t a = 0, b = 0;
  while (a < n && b < n) {
    if (w[0].ids[a] == w[1].ids[b])
      fail_msg("ID %llu issued to both threads", (unsigned long long)w[0].ids[a]);
    if (w[0].ids[a] < w[1].ids[b])
      a++;
    else
      b++;
  }
  free(w[0].ids);
  free(w[1].ids);
}

static void test_two_threads_next(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = tu_gen(WIDE, NULL);
  run_two(g, MODE_NEXT, tu_scaled(10000000), NULL);
  idgen_snowflake_gen_free(g);
}

/* Two threads on one WIDE generator reading the clock in `clock`. */
static void run_two_on_clock(idgen_clock_mode_t clock, enum mode mode, size_t n) {
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock_mode = clock;
  idgen_snowflake_gen_t *g = tu_gen(WIDE, &s);
  run_two(g, mode, n, NULL);
  idgen_snowflake_gen_free(g);
}

static void test_two_threads_next_precise_clock(void **state) {
  (void)state;
  run_two_on_clock(IDGEN_CLOCK_PRECISE, MODE_NEXT, tu_scaled(2000000));
}

static void test_two_threads_next_coarse_clock(void **state) {
  (void)state;
  run_two_on_clock(IDGEN_CLOCK_COARSE, MODE_MIXED, tu_scaled(4000000));
}

static void test_two_threads_batches(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = tu_gen(WIDE, NULL);
  run_two(g, MODE_BATCH, tu_scaled(10000000), NULL);
  idgen_snowflake_gen_free(g);
}

static void test_two_threads_mixed(void **state) {
  (void)state;
  idgen_snowflake_gen_t *g = tu_gen(WIDE, NULL);
  run_two(g, MODE_MIXED, tu_scaled(4000000), NULL);
  idgen_snowflake_gen_free(g);
}

/* Twitter layout, no borrowing: the threads use up each tick and wait. */
static void test_two_threads_sequence_exhaustion(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.max_borrow_ms = 0;
  s.max_wait_ms = 0;
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  run_two(g, MODE_MIXED, tu_scaled(1000000), NULL);
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(g, &st);
  assert_true(st.sequence_exhausted > 0);
  assert_int_equal(0, st.clock_refusals);
  idgen_snowflake_gen_free(g);
}

/* An injected clock jumping back and forth (within the borrow) under two
 * threads; the fake sleep moves it forward when a wait is needed. */
static void test_two_threads_clock_chaos(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &c.clock;
  s.max_borrow_ms = 1000;
  s.max_wait_ms = 100;
  idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
  run_two(g, MODE_MIXED, tu_scaled(1000000), &c);
  idgen_snowflake_gen_free(g);
}

/* 4 threads on a 1-bit sequence (2 IDs per ms), no borrowing and no waiting:
 * many calls are refused (they may not wait beyond the current tick), but
 * the generator must keep issuing at the layout's rate -- refused calls take
 * nothing -- and every ID is unique and increasing per thread. */
struct tiny {
  idgen_snowflake_gen_t *g;
  int want;
  uint64_t ids[400];
  long refused;
};

static void *tiny_main(void *p) {
  struct tiny *t = p;
  uint64_t prev = 0;
  for (int got = 0; got < t->want;) {
    uint64_t id;
    int rc = idgen_snowflake_gen_next(t->g, &id);
    if (rc == IDGEN_ECLOCK) {
      t->refused++;
      continue;
    }
    if (rc != 0 || id <= prev)
      return (void *)1;
    t->ids[got++] = prev = id;
  }
  return NULL;
}

static void test_tiny_sequence_no_livelock(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.max_borrow_ms = 0;
  s.max_wait_ms = 0;
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:1,node:3", &s);
  static struct tiny t[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    t[i] = (struct tiny){g, 200, {0}, 0};
    pthread_create(&th[i], NULL, tiny_main, &t[i]);
  }
  for (int i = 0; i < 4; i++) {
    void *r;
    pthread_join(th[i], &r);
    assert_null(r);
  }
  uint64_t all[800];
  for (int i = 0; i < 4; i++)
    memcpy(all + 200 * i, t[i].ids, sizeof(uint64_t) * 200);
  qsort(all, 800, sizeof all[0], cmp_u64);
  for (int i = 1; i < 800; i++)
    assert_true(all[i] != all[i - 1]);
  /* 800 IDs at 2 per ms take about 0.4 s; allow a loaded machine 10 times that. */
  assert_true((all[799] >> 4) - (all[0] >> 4) < 4000);
  idgen_snowflake_gen_free(g);
}

/* Bounded under full load, two threads (a tick reached by using up the
 * previous one still counts as a reading): on the
 * hot path and an injected clock that moves only when a call waits, the
 * threads use up every tick; each tick is reached because the one before
 * ran out (a waiting call reserved it), and then issued from on the hot
 * path.  Waiting out those ticks is free: no refusal.  Then the clock steps
 * back into the tick before the generator's: every call of both threads is
 * refused at once, none waits (before, the step was waited out as a used-up
 * tick, and the calls went on). */
struct load {
  idgen_snowflake_gen_t *g;
  pthread_barrier_t *bar;
  size_t n;
  uint64_t *ids;
  int failures, order_errors, after_ok, after_other;
};

static void *load_main(void *arg) {
  struct load *l = arg;
  pthread_barrier_wait(l->bar);
  for (size_t i = 0; i < l->n; i++) {
    if (idgen_snowflake_gen_next(l->g, &l->ids[i]) != 0) {
      l->failures++;
      l->ids[i] = i ? l->ids[i - 1] + 1 : 0; /* keeps the list sorted */
    } else if (i > 0 && l->ids[i] <= l->ids[i - 1]) {
      l->order_errors++;
    }
  }
  pthread_barrier_wait(l->bar); /* the main thread steps the clock back */
  pthread_barrier_wait(l->bar);
  for (int i = 0; i < 50; i++) {
    uint64_t id;
    int rc = idgen_snowflake_gen_next(l->g, &id);
    if (rc == 0)
      l->after_ok++;
    else if (rc != IDGEN_ECLOCK)
      l->after_other++;
  }
  return NULL;
}

static void test_step_back_after_full_load(void **state) {
  (void)state;
  const int64_t t0 = 1700000000000;
  tu_clock_t c;
  tu_clock_init(&c, t0);
  atomic_fetch_add(&c.ns, 300000);
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock = &c.clock;
  s.max_borrow_ms = 0;
  s.max_wait_ms = 0;
  idgen_snowflake_gen_t *g = tu_gen("time:41,sequence:4,epoch=0", &s); /* 16 a tick */
  g->fast = 1; /* the hot path, which the injected clock turns off */
  size_t n = tu_scaled(40000);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 3);
  struct load l[2];
  pthread_t th[2];
  for (int t = 0; t < 2; t++) {
    l[t] = (struct load){g, &bar, n, malloc(n * sizeof(uint64_t)), 0, 0, 0, 0};
    assert_non_null(l[t].ids);
    assert_int_equal(0, pthread_create(&th[t], NULL, load_main, &l[t]));
  }
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar); /* both have made theirs */
  /* One more, until its tick still has room: the generator is then in the
   * clock's tick, reached by a wait or by the hot path. */
  uint64_t id;
  do
    tu_ok(idgen_snowflake_gen_next(g, &id));
  while ((id & 15) == 15);
  assert_int_equal(id >> 4, (uint64_t)tu_clock_ms(&c));
  /* Back to the middle of the tick before: less than two ticks back. */
  atomic_store(&c.ns, (int64_t)(id >> 4) * 1000000 - 500000);
  int64_t sleeps = atomic_load(&c.sleeps);
  pthread_barrier_wait(&bar);
  for (int t = 0; t < 2; t++)
    pthread_join(th[t], NULL);
  pthread_barrier_destroy(&bar);
  for (int t = 0; t < 2; t++) {
    assert_int_equal(0, l[t].failures); /* used-up ticks are waited out */
    assert_int_equal(0, l[t].order_errors);
    assert_int_equal(0, l[t].after_ok); /* the step back: refused ... */
    assert_int_equal(0, l[t].after_other);
  }
  assert_int_equal(sleeps, atomic_load(&c.sleeps)); /* ... at once */
  size_t a = 0, b = 0;
  while (a < n && b < n) {
    if (l[0].ids[a] == l[1].ids[b])
      fail_msg("ID %llu issued to both threads", (unsigned long long)l[0].ids[a]);
    if (l[0].ids[a] < l[1].ids[b])
      a++;
    else
      b++;
  }
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(g, &st);
  assert_true(st.sequence_exhausted > 0);
  assert_int_equal(100, st.clock_refusals);
  free(l[0].ids);
  free(l[1].ids);
  idgen_snowflake_gen_free(g);
}

/* Processes with distinct worker values (the static registry's contract). */
static void test_processes(void **state) {
  (void)state;
  enum { P = 3 };
  size_t n = tu_scaled(300000);
  int fds[P][2];
  pid_t pids[P];
  for (int p = 0; p < P; p++) {
    assert_int_equal(0, pipe(fds[p]));
    pids[p] = fork();
    assert_true(pids[p] >= 0);
    if (pids[p] == 0) {
      close(fds[p][0]);
      idgen_snowflake_settings_t s;
      idgen_snowflake_settings_init(&s);
      s.node[2] = (uint64_t)p; /* worker */
      idgen_snowflake_gen_t *g = tu_gen("twitter", &s);
      uint64_t buf[1000];
      for (size_t done = 0; done < n; done += 1000) {
        if (idgen_snowflake_gen_next_n(g, buf, 1000) != 0)
          _exit(3);
        if (write(fds[p][1], buf, sizeof buf) != (ssize_t)sizeof buf)
          _exit(4);
      }
      _exit(0);
    }
    close(fds[p][1]);
  }
  size_t per = (n + 999) / 1000 * 1000;
  uint64_t *all = malloc(P * per * sizeof *all);
  assert_non_null(all);
  for (int p = 0; p < P; p++) {
    size_t got = 0;
    char *dst = (char *)(all + (size_t)p * per);
    ssize_t r;
    while ((r = read(fds[p][0], dst + got, per * sizeof(uint64_t) - got)) > 0)
      got += (size_t)r;
    close(fds[p][0]);
    int st;
    waitpid(pids[p], &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(0, WEXITSTATUS(st));
    assert_int_equal(per * sizeof(uint64_t), got);
    for (size_t i = 0; i < per; i++)
      assert_int_equal((uint64_t)p, (all[(size_t)p * per + i] >> 12) & 31);
  }
  qsort(all, P * per, sizeof *all, cmp_u64);
  for (size_t i = 1; i < P * per; i++)
    assert_true(all[i] != all[i - 1]);
  free(all);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_two_threads_next),
      cmocka_unit_test(test_two_threads_next_precise_clock),
      cmocka_unit_test(test_two_threads_next_coarse_clock),
      cmocka_unit_test(test_two_threads_batches),
      cmocka_unit_test(test_two_threads_mixed),
      cmocka_unit_test(test_two_threads_sequence_exhaustion),
      cmocka_unit_test(test_two_threads_clock_chaos),
      cmocka_unit_test(test_tiny_sequence_no_livelock),
      cmocka_unit_test(test_step_back_after_full_load),
      cmocka_unit_test(test_processes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
