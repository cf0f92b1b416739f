/*
 * test_seq_attack.c -- sequences attacked with legal settings and ordinary
 * user actions: each test is a way a number (or a business number's text)
 * came out twice.  An injected clock; file: registries in temporary
 * directories.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry_int.h"
#include "seq_int.h"

typedef struct fake_clock {
  _Atomic int64_t ns;
} fake_clock_t;

static int64_t fake_now(void *ctx) { return atomic_load(&((fake_clock_t *)ctx)->ns); }
static void fake_sleep(void *ctx, int64_t ns) { atomic_fetch_add(&((fake_clock_t *)ctx)->ns, ns); }

static void rm_rf(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* The wall clock steps back across a day's start while a formatted holder
 * runs (an NTP correction after a step forward): the holder keeps the new
 * day's counter, so it must not render the old day's date with it -- the
 * old day's counter already issued those numbers. */
static void test_clock_back_across_period(void **state) {
  (void)state;
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256], text[64];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  fake_clock_t fc = {INT64_C(1796342398000000000)}; /* 2026-12-03T23:59:58Z */
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.format = "ORD{date:%Y%m%d}{seq:06}";
  set.ttl_ms = 86400000;
  set.no_thread = 1;
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  char seen[8][64];
  int k = 0;
  for (int i = 0; i < 3; i++)
    assert_true(idgen_seq_next_text(s, seen[k++], sizeof seen[0], NULL) > 0);
  assert_string_equal(seen[0], "ORD20261203000001");
  fake_sleep(&fc, INT64_C(4000000000)); /* 2026-12-04T00:00:02Z */
  assert_true(idgen_seq_next_text(s, seen[k++], sizeof seen[0], NULL) > 0);
  assert_string_equal(seen[3], "ORD20261204000001");
  atomic_store(&fc.ns, INT64_C(1796342399000000000)); /* back to 23:59:59 */
  for (int i = 0; i < 3; i++)
    assert_true(idgen_seq_next_text(s, seen[k++], sizeof seen[0], NULL) > 0);
  for (int i = 0; i < k; i++)
    for (int j = i + 1; j < k; j++) {
      if (strcmp(seen[i], seen[j]) == 0)
        fail_msg("issued twice: %s (the %dth and the %dth)", seen[i], i + 1, j + 1);
    }
  /* Another holder opened now (its clock on the old day) continues the old
   * day's counter: no text of it repeats either. */
  idgen_seq_t *s2;
  assert_int_equal(idgen_seq_open(&s2, r, "orders", &set, err, sizeof err), 0);
  assert_true(idgen_seq_next_text(s2, text, sizeof text, NULL) > 0);
  for (int i = 0; i < k; i++)
    assert_string_not_equal(text, seen[i]);
  idgen_seq_close(s2);
  idgen_seq_close(s);
  idgen_registry_close(r);
  rm_rf(dir);
}

/* The counter's record is removed (rm seq/orders, a DELETE, an etcd del)
 * or replaced by an older copy while a holder runs: the holder's next
 * claim must not take numbers it (or anyone) already claimed. */
static void run_record_goes_back(int restore) {
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256], path[128], save[400];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.no_thread = 1;
  set.min_step = set.step = 10;
  set.max_step = 10;
  set.ttl_ms = 86400000;
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  uint64_t n, hi = 0;
  assert_int_equal(idgen_seq_next(s, &n), 0);
  snprintf(path, sizeof path, "%s/seq/orders", dir);
  snprintf(save, sizeof save, "cp '%s' '%s.old'", path, path);
  assert_int_equal(system(save), 0);
  for (int i = 0; i < 25; i++) {
    assert_int_equal(idgen_seq_next(s, &n), 0);
    hi = n;
  }
  if (restore)
    snprintf(save, sizeof save, "mv '%s.old' '%s'", path, path);
  else
    snprintf(save, sizeof save, "rm '%s'", path);
  assert_int_equal(system(save), 0);
  for (int i = 0; i < 30; i++) {
    int rc = idgen_seq_next(s, &n);
    if (rc < 0)
      break; /* refusing is fine; issuing again is not */
    if (n <= hi)
      fail_msg("issued %" PRIu64 " after %" PRIu64 " (the record %s)", n, hi,
               restore ? "restored from a copy" : "removed");
    hi = n;
  }
  idgen_seq_close(s);
  idgen_registry_close(r);
  rm_rf(dir);
}

static void test_record_removed(void **state) {
  (void)state;
  run_record_goes_back(0);
}

static void test_record_restored(void **state) {
  (void)state;
  run_record_goes_back(1);
}

/* A counter's record removed by hand once every holder has stopped (so no
 * holder is left to see it go back): the next holder started the counter
 * at 1 again.  It now starts at the counter's ceiling, above every range
 * ever claimed, for plain and period counters alike; the listing shows no
 * ceiling records, and counts the numbers of the removed record as lost. */
typedef struct first_row {
  int n;
  idgen_seq_row_t row;
} first_row_t;
static int first_row_cb(void *ctx, const idgen_seq_row_t *row) {
  first_row_t *f = ctx;
  if (f->n++ == 0)
    f->row = *row;
  return 0;
}

static void run_removed_when_stopped(const char *fmt, const char *file) {
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256], path[200], cmd[300], text[64];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.no_thread = 1;
  set.min_step = set.step = set.max_step = 10;
  set.format = fmt;
  uint64_t n, hi = 0;
  for (int round = 0; round < 2; round++) {
    idgen_seq_t *s;
    assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
    for (int i = 0; i < 35; i++) {
      if (fmt)
        assert_true(idgen_seq_next_text(s, text, sizeof text, &n) > 0);
      else
        assert_int_equal(idgen_seq_next(s, &n), 0);
      if (n <= hi)
        fail_msg("issued %" PRIu64 " again (after %" PRIu64 "), round %d", n, hi, round);
      hi = n;
    }
    idgen_seq_close(s);
    snprintf(path, sizeof path, "%s/seq/%s", dir, file);
    snprintf(cmd, sizeof cmd, "rm '%s'", path);
    if (round == 0)
      assert_int_equal(system(cmd), 0);
  }
  first_row_t f = {0};
  assert_int_equal(idgen_seq_list(r, first_row_cb, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 1); /* the counter; its ceiling is not listed */
  assert_int_equal(f.row.claimed, f.row.issued + f.row.given_back + f.row.lost);
  assert_true(f.row.lost >= 35);
  idgen_registry_close(r);
  rm_rf(dir);
}

static void test_removed_when_stopped(void **state) {
  (void)state;
  run_removed_when_stopped(NULL, "orders");
  run_removed_when_stopped("T{date:%Y}-{seq}", "orders@2026");
}

/* A holder stopped (SIGSTOP, a debugger, a frozen VM) while it stores a
 * file: record holds the record's lock: every other holder of the
 * sequence, and a daemon's event loop opening it, waited for the lock with
 * no end.  A claim now gives up after a bounded wait, as for a registry
 * that cannot be reached. */
static void test_record_lock_held(void **state) {
  (void)state;
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256], lock[128];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.no_thread = 1;
  idgen_seq_t *s;
  uint64_t n;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  assert_int_equal(idgen_seq_next(s, &n), 0);
  idgen_seq_close(s);
  snprintf(lock, sizeof lock, "%s/seq/orders.lock", dir);
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) { /* the stopped writer: holds the lock and never lets go */
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1), dup2(devnull, 2);
    int fd = open(lock, O_RDWR);
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
      _exit(1);
    (void)!write(ready[1], "x", 1);
    for (;;)
      pause();
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  alarm(60); /* the failure this test catches is a wait with no end */
  int rc = idgen_seq_open(&s, r, "orders", &set, err, sizeof err);
  if (rc == 0) {
    rc = idgen_seq_next(s, &n);
    idgen_seq_close(s);
  }
  alarm(0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  close(ready[0]);
  close(ready[1]);
  assert_int_equal(rc, IDGEN_EREGISTRY);
  assert_true(t1.tv_sec - t0.tv_sec < 30);
  idgen_registry_close(r);
  rm_rf(dir);
}

/* Holds path's lock in a child that never lets go: its pid. */
static pid_t hold_lock(const char *path) {
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1), dup2(devnull, 2);
    int fd = open(path, O_RDWR);
    if (fd < 0 || flock(fd, LOCK_EX) < 0)
      _exit(1);
    (void)!write(ready[1], "x", 1);
    for (;;)
      pause();
  }
  char c;
  assert_int_equal(read(ready[0], &c, 1), 1);
  close(ready[0]);
  close(ready[1]);
  return child;
}

typedef struct waiter {
  idgen_seq_t *s;
  int rc;
  _Atomic int started;
} waiter_t;

static void *wait_next(void *arg) {
  waiter_t *w = arg;
  uint64_t n;
  atomic_store(&w->started, 1);
  for (int i = 0; i < 2000 && w->rc == 0; i++)
    w->rc = idgen_seq_next(w->s, &n);
  return NULL;
}

/* close() while another thread waits in next() for a claim that cannot go
 * through: close "waits for calls under way", so the waiter must return
 * (an error) before the holder's memory goes, not wake in freed memory. */
static void test_close_while_waiting(void **state) {
  (void)state;
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256], lock[128];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = set.step = set.max_step = 10;
  set.wait_ms = 60000; /* far longer than close takes with the registry stuck */
  set.ttl_ms = 60000;
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, r, "orders", &set, err, sizeof err), 0);
  snprintf(lock, sizeof lock, "%s/seq/orders.lock", dir);
  pid_t child = hold_lock(lock);
  waiter_t w = {s, 0, 0};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, wait_next, &w), 0);
  while (!atomic_load(&w.started))
    usleep(1000);
  usleep(200000); /* the waiter has used the range up and waits */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  alarm(120);
  idgen_seq_close(s);
  pthread_join(t, NULL);
  alarm(0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  /* close: the thread's claim and its own store, each given up after the
   * file: lock's bound; not the waiter's wait_ms */
  assert_true(t1.tv_sec - t0.tv_sec < 45);
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  assert_true(w.rc < 0);
  idgen_registry_close(r);
  rm_rf(dir);
}

/* A holder paused past its TTL is reaped; when it wakes, the sequence has
 * 64 live holders (the record's cap) and it cannot register again.  That
 * is for now: it must not die for good with IDGEN_ERANGE (the code of a
 * counter past 2^63-1), but register once a place is free. */
static void test_reaped_holder_at_the_cap(void **state) {
  (void)state;
  char dir[] = "/tmp/idgen-seqatk-XXXXXX", uri[64], err[256];
  assert_non_null(mkdtemp(dir));
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, uri, err, sizeof err), 0);
  fake_clock_t fc = {INT64_C(1796342398000000000)};
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.no_thread = 1;
  set.min_step = set.step = set.max_step = 2;
  set.ttl_ms = 1000;
  idgen_seq_t *a, *o[IDGEN_SEQ_HOLDERS_MAX];
  uint64_t n;
  assert_int_equal(idgen_seq_open(&a, r, "orders", &set, err, sizeof err), 0);
  assert_int_equal(idgen_seq_next(a, &n), 0);
  fake_sleep(&fc, INT64_C(5000000000)); /* a is paused past its TTL */
  set.ttl_ms = 86400000;
  for (int i = 0; i < IDGEN_SEQ_HOLDERS_MAX; i++)
    assert_int_equal(idgen_seq_open(&o[i], r, "orders", &set, err, sizeof err), 0);
  idgen_seq_t *extra;
  int rc = idgen_seq_open(&extra, r, "orders", &set, err, sizeof err);
  assert_int_equal(rc, IDGEN_EPOOLFULL);
  assert_int_equal(idgen_seq_next(a, &n), 0); /* its range in hand */
  rc = idgen_seq_next(a, &n);
  assert_true(rc < 0); /* reaped, and no place to register again */
  assert_int_not_equal(rc, IDGEN_ERANGE);
  idgen_seq_close(o[0]);
  assert_int_equal(idgen_seq_next(a, &n), 0); /* a place again */
  for (int i = 1; i < IDGEN_SEQ_HOLDERS_MAX; i++)
    idgen_seq_close(o[i]);
  idgen_seq_close(a);
  idgen_registry_close(r);
  rm_rf(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_clock_back_across_period), cmocka_unit_test(test_record_removed),
      cmocka_unit_test(test_record_restored),          cmocka_unit_test(test_removed_when_stopped),
      cmocka_unit_test(test_record_lock_held),         cmocka_unit_test(test_close_while_waiting),
      cmocka_unit_test(test_reaped_holder_at_the_cap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
