/*
 * test_solo.c -- the generators while the process has one thread, where the
 * hot paths take their values without the lock prefix (core_int.h,
 * idgen__take and idgen__lock_acquire), and across the moment it gets a
 * second thread.  Its own executable: the process must still have one thread
 * when the first test runs, and cmocka runs the tests in order, the last one
 * starting the threads.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "../src/core/core_int.h"
#include "testutil.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Fails on a repeated value among n (sorts them). */
static void assert_all_distinct(uint64_t *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_u64);
  for (size_t i = 1; i < n; i++)
    if (v[i] == v[i - 1])
      fail_msg("value %llu issued twice", (unsigned long long)v[i]);
}

static int cmp16(const void *a, const void *b) { return memcmp(a, b, 16); }

/* Fails on a 16-byte value that is in both runs of PAIR_N, or twice in one. */
static void assert_distinct16(const void *x, const void *y, size_t size);

/* Where the path exists (glibc on x86-64), this process must be using it:
 * otherwise the tests below would only test the locked path again. */
static void test_solo_path_is_taken(void **state) {
  (void)state;
#if defined(IDGEN__SOLO) && !defined(UNDER_TSAN)
  assert_int_equal(idgen__solo(), 1);
#else
  print_message("the one-thread path is not built here (not glibc on x86-64, or TSan)\n");
#endif
}

/* The unlocked xadd against a signal handler that takes IDs from the same
 * generator between any two instructions of the caller: a take split by the
 * handler would give both the same value.  The precise clock, so that the
 * handler and the caller share nothing but `next`. */
enum { HANDLER_MAX = 20000 };
static idgen_snowflake_gen_t *sig_gen;
static uint64_t sig_ids[HANDLER_MAX];
static volatile sig_atomic_t sig_n, sig_failed;

static void on_alarm(int signo) {
  (void)signo;
  if (sig_n >= HANDLER_MAX)
    return;
  uint64_t id;
  if (idgen_snowflake_gen_next(sig_gen, &id) != 0) {
    sig_failed = 1;
    return;
  }
  sig_ids[sig_n] = id;
  sig_n = sig_n + 1;
}

static void test_signal_handler_takes_between(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock_mode = IDGEN_CLOCK_PRECISE;
  sig_gen = tu_gen("time:41@1ms,sequence:22", &s);
  const size_t cap = tu_scaled(4000000);
  uint64_t *main_ids = malloc((cap + HANDLER_MAX) * sizeof *main_ids);
  assert_non_null(main_ids);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
  struct itimerval it = {{0, 20}, {0, 20}}; /* every 20 us */
  assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
  size_t n = 0;
  while (n < cap && sig_n < HANDLER_MAX / 2) {
    uint64_t id;
    assert_int_equal(idgen_snowflake_gen_next(sig_gen, &id), 0);
    if (n > 0 && id <= main_ids[n - 1])
      fail_msg("ID %llu after %llu", (unsigned long long)id,
               (unsigned long long)main_ids[n - 1]);
    main_ids[n++] = id;
  }
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  signal(SIGALRM, SIG_DFL);
  assert_false(sig_failed);
  print_message("%zu IDs taken by the caller, %d by the handler between them\n", n, (int)sig_n);
  /* The handler must really have come between the caller's takes. */
  assert_true(sig_n > 100);
  for (int i = 1; i < sig_n; i++)
    assert_true(sig_ids[i] > sig_ids[i - 1]);
  memcpy(main_ids + n, sig_ids, (size_t)sig_n * sizeof *sig_ids);
  assert_all_distinct(main_ids, n + (size_t)sig_n);
  free(main_ids);
  idgen_snowflake_gen_free(sig_gen);
}

/* Values taken while the process had one thread, then by two threads: the
 * second thread must see every unlocked write, and take over from the last. */
enum { SOLO_N = 200000, PAIR_N = 300000 };

struct worker {
  idgen_snowflake_gen_t *sf;
  idgen_ulid_gen_t *ulid;
  idgen_uuid7_gen_t *uuid;
  uint64_t *sf_ids;           /* PAIR_N */
  idgen_ulid_t *ulids;        /* PAIR_N */
  idgen_uuid_t *uuids;        /* PAIR_N */
  int rc;
};

static void *work(void *arg) {
  struct worker *w = arg;
  for (size_t i = 0; i < PAIR_N && w->rc == 0; i++) {
    w->rc = idgen_snowflake_gen_next(w->sf, &w->sf_ids[i]);
    if (w->rc == 0)
      w->rc = idgen_ulid_gen_next(w->ulid, &w->ulids[i]);
    if (w->rc == 0)
      w->rc = idgen_uuid7_gen_next(w->uuid, &w->uuids[i]);
  }
  return NULL;
}

static void worker_alloc(struct worker *w) {
  w->sf_ids = calloc(PAIR_N, sizeof *w->sf_ids);
  w->ulids = calloc(PAIR_N, sizeof *w->ulids);
  w->uuids = calloc(PAIR_N, sizeof *w->uuids);
  assert_true(w->sf_ids && w->ulids && w->uuids);
}

static void worker_free(struct worker *w) {
  free(w->sf_ids);
  free(w->ulids);
  free(w->uuids);
}

/* Each thread's values strictly increase, and all come after `floor`. */
static void assert_after(const struct worker *w, uint64_t sf_floor, const idgen_ulid_t *ulid_floor,
                         const idgen_uuid_t *uuid_floor) {
  assert_int_equal(w->rc, 0);
  for (size_t i = 0; i < PAIR_N; i++) {
    const uint64_t *prev_sf = i ? &w->sf_ids[i - 1] : &sf_floor;
    const idgen_ulid_t *prev_ulid = i ? &w->ulids[i - 1] : ulid_floor;
    const idgen_uuid_t *prev_uuid = i ? &w->uuids[i - 1] : uuid_floor;
    assert_true(w->sf_ids[i] > *prev_sf);
    assert_true(memcmp(w->ulids[i].bytes, prev_ulid->bytes, 16) > 0);
    assert_true(memcmp(w->uuids[i].bytes, prev_uuid->bytes, 16) > 0);
  }
}

static void assert_distinct16(const void *x, const void *y, size_t size) {
  assert_int_equal(size, 16);
  uint8_t *all = malloc(2 * PAIR_N * 16);
  assert_non_null(all);
  memcpy(all, x, PAIR_N * 16);
  memcpy(all + PAIR_N * 16, y, PAIR_N * 16);
  qsort(all, 2 * PAIR_N, 16, cmp16);
  for (size_t i = 1; i < 2 * PAIR_N; i++)
    if (memcmp(all + i * 16, all + (i - 1) * 16, 16) == 0)
      fail_msg("a 128-bit ID issued twice (entry %zu)", i);
  free(all);
}

static void test_second_thread_takes_over(void **state) {
  (void)state;
  struct worker a = {0}, b = {0};
  a.sf = tu_gen("time:41@1ms,sequence:22", NULL);
  assert_int_equal(idgen_ulid_gen_new(&a.ulid, NULL), 0);
  assert_int_equal(idgen_uuid7_gen_new(&a.uuid, NULL), 0);
  b.sf = a.sf;
  b.ulid = a.ulid;
  b.uuid = a.uuid;
  worker_alloc(&a);
  worker_alloc(&b);

  uint64_t last_sf = 0;
  idgen_ulid_t last_ulid;
  idgen_uuid_t last_uuid;
  memset(&last_ulid, 0, sizeof last_ulid);
  memset(&last_uuid, 0, sizeof last_uuid);
  for (int i = 0; i < SOLO_N; i++) {
    uint64_t id;
    idgen_ulid_t u;
    idgen_uuid_t v;
    assert_int_equal(idgen_snowflake_gen_next(a.sf, &id), 0);
    assert_int_equal(idgen_ulid_gen_next(a.ulid, &u), 0);
    assert_int_equal(idgen_uuid7_gen_next(a.uuid, &v), 0);
    assert_true(id > last_sf);
    assert_true(memcmp(u.bytes, last_ulid.bytes, 16) > 0);
    assert_true(memcmp(v.bytes, last_uuid.bytes, 16) > 0);
    last_sf = id;
    last_ulid = u;
    last_uuid = v;
  }

  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, work, &b), 0);
  assert_int_equal(idgen__solo(), 0);
  work(&a);
  assert_int_equal(pthread_join(t, NULL), 0);

  assert_after(&a, last_sf, &last_ulid, &last_uuid);
  assert_after(&b, last_sf, &last_ulid, &last_uuid);
  /* And no value twice between the two threads. */
  uint64_t *all = malloc(2 * PAIR_N * sizeof *all);
  assert_non_null(all);
  memcpy(all, a.sf_ids, PAIR_N * sizeof *all);
  memcpy(all + PAIR_N, b.sf_ids, PAIR_N * sizeof *all);
  assert_all_distinct(all, 2 * PAIR_N);
  assert_distinct16(a.ulids, b.ulids, sizeof *a.ulids);
  assert_distinct16(a.uuids, b.uuids, sizeof *a.uuids);
  free(all);
  worker_free(&a);
  worker_free(&b);
  idgen_snowflake_gen_free(a.sf);
  idgen_ulid_gen_free(a.ulid);
  idgen_uuid7_gen_free(a.uuid);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_solo_path_is_taken),
      cmocka_unit_test(test_signal_handler_takes_between),
      cmocka_unit_test(test_second_thread_takes_over),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
