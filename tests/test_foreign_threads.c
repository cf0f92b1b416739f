/*
 * test_foreign_threads.c -- callers the C library does not see as threads.
 *
 * A generator's hot path may skip the lock prefix only for the thread that
 * owns the generator (bias.c), never on the word of the C library about how
 * many threads there are.  Two callers it must survive:
 *
 *  - a signal handler taking IDs from the generator its thread is in the
 *    middle of (Snowflake: its take is one instruction, which a handler can
 *    come before or after but never inside; a take written as a load and a
 *    store would lose to it);
 *  - a thread started by a second copy of glibc in the process, a plug-in
 *    loaded with dlmopen(): the main copy's __libc_single_threaded still
 *    says "one thread", so a shortcut that trusted it repeated IDs.
 *    A build that trusted the flag issued 141,902 duplicate Snowflake IDs
 *    and 225,376 duplicate ULIDs in 4,000,000 here (DESIGN §1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "snowflake_int.h"
#include "testutil.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static int cmp16(const void *a, const void *b) { return memcmp(a, b, 16); }

/* The number of repeated values among n of `size` bytes (sorts them). */
static size_t repeats(void *v, size_t n, size_t size) {
  qsort(v, n, size, size == 8 ? cmp_u64 : cmp16);
  size_t d = 0;
  for (size_t i = 1; i < n; i++)
    d += memcmp((char *)v + i * size, (char *)v + (i - 1) * size, size) == 0;
  return d;
}

/* ---- a signal handler between the caller's takes ---- */

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

/* The precise clock, so that the handler and the caller share nothing but
 * the generator's state word. */
static void test_signal_handler_takes_between(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock_mode = IDGEN_CLOCK_PRECISE;
  sig_gen = tu_gen("time:41@1ms,sequence:22", &s);
  const size_t cap = tu_scaled(4000000);
  uint64_t *ids = malloc((cap + HANDLER_MAX) * sizeof *ids);
  assert_non_null(ids);

  tu_alarm_every_us(on_alarm, 20);
  size_t n = 0;
  while (n < cap && sig_n < HANDLER_MAX / 2) {
    uint64_t id;
    assert_int_equal(idgen_snowflake_gen_next(sig_gen, &id), 0);
    if (n > 0 && id <= ids[n - 1])
      fail_msg("ID %llu after %llu", (unsigned long long)id, (unsigned long long)ids[n - 1]);
    ids[n++] = id;
  }
  tu_alarm_off();
  assert_false(sig_failed);
  print_message("%zu IDs taken by the caller, %d by the handler between them\n", n, (int)sig_n);
  assert_true(sig_n > 100); /* the handler did come between the caller's takes */
  for (int i = 1; i < sig_n; i++)
    assert_true(sig_ids[i] > sig_ids[i - 1]);
  memcpy(ids + n, sig_ids, (size_t)sig_n * sizeof *sig_ids);
  assert_int_equal(repeats(ids, n + (size_t)sig_n, sizeof *ids), 0);
  free(ids);
  idgen_snowflake_gen_free(sig_gen);
}

/* ---- a thread from a second C library ---- */

#ifndef TU_UNDER_SANITIZER
enum { PLUGIN_N = 1000000 };

static struct shared {
  idgen_snowflake_gen_t *sf;
  idgen_ulid_gen_t *ulid;
  idgen_uuid7_gen_t *uuid;
  uint64_t *sf_ids; /* 2 * PLUGIN_N: the main thread's, then the plug-in's */
  idgen_ulid_t *ulids;
  idgen_uuid_t *uuids;
  _Atomic int ready;
  _Atomic int failed;
} sh;

/* Runs on both threads; arg is where its IDs go (0 or PLUGIN_N). */
static void hammer(void *arg) {
  size_t off = (size_t)(uintptr_t)arg;
  atomic_fetch_add(&sh.ready, 1);
  while (atomic_load(&sh.ready) < 2) /* start together */
    ;
  for (size_t i = off; i < off + PLUGIN_N; i++)
    if (idgen_snowflake_gen_next(sh.sf, &sh.sf_ids[i]) != 0 ||
        idgen_ulid_gen_next(sh.ulid, &sh.ulids[i]) != 0 ||
        idgen_uuid7_gen_next(sh.uuid, &sh.uuids[i]) != 0) {
      atomic_store(&sh.failed, 1);
      return;
    }
}

static void test_dlmopen_plugin_thread(void **state) {
  (void)state;
  /* Both copies of glibc move the same program break: the main copy must not
   * grow its heap with brk() while the plug-in's copy does, or its malloc
   * aborts ("malloc assertion failure in sysmalloc").  Every allocation of
   * the main copy from here on is its own mapping. */
  mallopt(M_MMAP_THRESHOLD, 0);
  void *h = dlmopen(LM_ID_NEWLM, PLUGIN_THREAD_PATH, RTLD_NOW);
  if (h == NULL) {
    print_message("dlmopen(%s): %s\n", PLUGIN_THREAD_PATH, dlerror());
    fail();
  }
  int (*start)(void (*)(void *), void *, pthread_t *);
  int (*join)(pthread_t);
  *(void **)&start = dlsym(h, "plugin_start");
  *(void **)&join = dlsym(h, "plugin_join");
  assert_true(start != NULL && join != NULL);

  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock_mode = IDGEN_CLOCK_PRECISE;
  sh.sf = tu_gen("time:41@1ms,sequence:22", &s);
  idgen_gen128_settings_t g;
  memset(&g, 0, sizeof g);
  assert_int_equal(idgen_ulid_gen_new(&sh.ulid, &g), 0);
  assert_int_equal(idgen_uuid7_gen_new(&sh.uuid, &g), 0);
  sh.sf_ids = calloc(2 * PLUGIN_N, sizeof *sh.sf_ids);
  sh.ulids = calloc(2 * PLUGIN_N, sizeof *sh.ulids);
  sh.uuids = calloc(2 * PLUGIN_N, sizeof *sh.uuids);
  assert_true(sh.sf_ids && sh.ulids && sh.uuids);

  /* This thread owns the Snowflake generator before the plug-in's thread
   * starts: that thread's first take revokes the ownership (bias.c) while
   * this one keeps taking, although glibc's copy of ours never heard of
   * that thread. */
  uint64_t first;
  assert_int_equal(idgen_snowflake_gen_next(sh.sf, &first), 0);
  /* And this thread has drawn random bytes before the plug-in's thread
   * starts: OpenSSL's first call sets up its global state (a pthread_once
   * and write locks, malloc), which the main copy of glibc runs without its
   * multi-thread locking here (__libc_single_threaded) and which hung or
   * corrupted the heap now and then when both threads made it at once.
   * What this test races is the generators, not OpenSSL's set-up. */
  idgen_ulid_t first_ulid;
  idgen_uuid_t first_uuid;
  assert_int_equal(idgen_ulid_gen_next(sh.ulid, &first_ulid), 0);
  assert_int_equal(idgen_uuid7_gen_next(sh.uuid, &first_uuid), 0);
  int owned = idgen__bias_can_own(); /* off without rseq: then all takes are locked */
  if (owned)
    assert_int_equal(atomic_load(&sh.sf->bias), idgen__bias_me());
  pthread_t t;
  assert_int_equal(start(hammer, (void *)(uintptr_t)PLUGIN_N, &t), 0);
  hammer((void *)0);
  assert_int_equal(join(t), 0);
  assert_false(atomic_load(&sh.failed));

  if (owned)
    assert_int_equal(atomic_load(&sh.sf->bias), BIAS_SHARED);
  size_t d_sf = repeats(sh.sf_ids, 2 * PLUGIN_N, sizeof *sh.sf_ids);
  d_sf += bsearch(&first, sh.sf_ids, 2 * PLUGIN_N, sizeof first, cmp_u64) != NULL;
  size_t d_ulid = repeats(sh.ulids, 2 * PLUGIN_N, sizeof *sh.ulids);
  d_ulid += bsearch(&first_ulid, sh.ulids, 2 * PLUGIN_N, sizeof first_ulid, cmp16) != NULL;
  size_t d_uuid = repeats(sh.uuids, 2 * PLUGIN_N, sizeof *sh.uuids);
  d_uuid += bsearch(&first_uuid, sh.uuids, 2 * PLUGIN_N, sizeof first_uuid, cmp16) != NULL;
  print_message("repeats among %d: Snowflake %zu, ULID %zu, UUIDv7 %zu\n", 2 * PLUGIN_N, d_sf,
                d_ulid, d_uuid);
  assert_int_equal(d_sf, 0);
  assert_int_equal(d_ulid, 0);
  assert_int_equal(d_uuid, 0);
  free(sh.sf_ids);
  free(sh.ulids);
  free(sh.uuids);
  idgen_snowflake_gen_free(sh.sf);
  idgen_ulid_gen_free(sh.ulid);
  idgen_uuid7_gen_free(sh.uuid);
  /* The namespace stays loaded: unloading a libc copy is not supported. */
}
#else
/* A plug-in built with the sanitizers cannot load into a namespace of its
 * own (their runtime is in the main one: undefined __asan_* symbols). */
static void test_dlmopen_plugin_thread(void **state) {
  (void)state;
  skip();
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_signal_handler_takes_between),
      cmocka_unit_test(test_dlmopen_plugin_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
