/*
 * test_seq_hostile.c -- the sequence hot path attacked with legal settings
 * (and the test-only jump of the cursor's epoch to reach its wraps): each
 * test is a way a number came out twice, out of order, or the holder got
 * stuck.  A clock that can hold a caller inside the registry's call (the
 * claim's transaction reads it with the holder's mutex released); file:
 * registries in temporary directories.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry_int.h"
#include "testutil.h"
#include "seq_int.h"

/* ---- a clock that holds callers --------------------------------------------- */

/* A thread that sets tl_hold_at to k is held at its k-th clock read from
 * then on, until the test opens its ticket (tickets in order of arrival). */
typedef struct gate {
  _Atomic int64_t ns;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int arrived, opened;
} gate_t;

static __thread int tl_hold_at;

static int64_t gate_now(void *ctx) {
  gate_t *g = ctx;
  if (tl_hold_at > 0 && --tl_hold_at == 0) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 30; /* a guard against a test that never opens it */
    pthread_mutex_lock(&g->mu);
    int me = g->arrived++;
    pthread_cond_broadcast(&g->cv);
    while (g->opened <= me && pthread_cond_timedwait(&g->cv, &g->mu, &dl) == 0) {
    }
    pthread_mutex_unlock(&g->mu);
  }
  return atomic_load(&g->ns);
}

static void gate_sleep(void *ctx, int64_t ns) { atomic_fetch_add(&((gate_t *)ctx)->ns, ns); }

static void gate_init(gate_t *g) {
  atomic_init(&g->ns, INT64_C(1796342398000000000));
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
  g->arrived = g->opened = 0;
}

/* Waits at most ms until `n` callers arrived in all: how many arrived. */
static int gate_wait(gate_t *g, int n, int64_t ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  int64_t ns = dl.tv_nsec + ms % 1000 * 1000000;
  dl.tv_sec += (time_t)(ms / 1000 + ns / 1000000000);
  dl.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_lock(&g->mu);
  int rc = 0;
  while (g->arrived < n && rc == 0)
    rc = pthread_cond_timedwait(&g->cv, &g->mu, &dl);
  int got = g->arrived;
  pthread_mutex_unlock(&g->mu);
  return got;
}

static void gate_open(gate_t *g, int n) {
  pthread_mutex_lock(&g->mu);
  g->opened = n;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

/* ---- the registry ------------------------------------------------------------- */

static char dir[64];
static idgen_registry_t *reg;

static int setup(void **state) {
  (void)state;
  reg = tu_tmp_registry(dir, sizeof dir, "seqh");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return tu_tmp_registry_free(reg, dir);
}

static void load(const char *key, idgen__seq_rec_t *rec) { tu_seq_load(reg, key, rec); }

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* ---- many callers claiming at once without a thread --------------------------- */

/*
 * Without a background thread the callers claim, each with the holder's
 * mutex released around the registry's call.  Eight callers that found
 * nothing in hand claim at once; the first back takes past the prefetch
 * share of its range and claims ahead while the seven others' claims are
 * still out.  Their eight ranges land behind the current one: the ring has
 * 8 slots, so the last lands in the current range's slot.
 */
enum { NT = 8, STEP = 64, AFTER = 400 };

typedef struct many_arg {
  idgen_seq_t *s;
  int first;
  pthread_barrier_t *bar;
  uint64_t out[1 + STEP / 2 + AFTER];
  int n, rc;
  _Atomic int *done;
} many_arg_t;

static void *many_taker(void *p) {
  many_arg_t *a = p;
  tl_hold_at = 2; /* the claim's `sent`, then the transaction's clock */
  if (idgen_seq_next(a->s, &a->out[a->n]) < 0)
    a->rc = -1;
  a->n++;
  if (a->first) {
    /* Up to the prefetch share: its take claims ahead, held too. */
    tl_hold_at = 2;
    for (int i = 0; i < STEP / 2 && a->rc == 0; i++, a->n++)
      if (idgen_seq_next(a->s, &a->out[a->n]) < 0)
        a->rc = -1;
  }
  pthread_barrier_wait(a->bar);
  for (int i = 0; i < AFTER && a->rc == 0; i++, a->n++)
    if (idgen_seq_next(a->s, &a->out[a->n]) < 0)
      a->rc = -1;
  atomic_fetch_add(a->done, 1);
  return NULL;
}

static void test_claims_at_once_no_thread(void **state) {
  (void)state;
  gate_t g;
  gate_init(&g);
  idgen_clock_t clk = {gate_now, gate_sleep, &g};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = set.step = set.max_step = STEP;
  set.prefetch = 0.5;
  set.no_thread = 1;
  set.clock = &clk;
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "many", &set, err, sizeof err), 0);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, NT);
  _Atomic int done = 0;
  static many_arg_t a[NT];
  pthread_t th[NT];
  for (int t = 0; t < NT; t++) {
    a[t] = (many_arg_t){.s = s, .first = t == 0, .bar = &bar, .done = &done};
    assert_int_equal(pthread_create(&th[t], NULL, many_taker, &a[t]), 0);
    /* The first caller's claim is out first (ticket 0). */
    if (t == 0)
      assert_int_equal(gate_wait(&g, 1, 30000), 1);
  }
  /* The others' claims (a holder that has them wait for the first claim
   * instead sends none: this wait then ends after a second). */
  int out = gate_wait(&g, NT, 1000);
  gate_open(&g, 1); /* the first back: its range, then a claim ahead */
  assert_int_equal(gate_wait(&g, out + 1, 30000), out + 1);
  gate_open(&g, NT + 1); /* every claim lands */
  /* A stuck caller fails the test rather than hanging it. */
  for (int i = 0; i < 2000 && atomic_load(&done) < NT; i++)
    usleep(10000);
  if (atomic_load(&done) < NT)
    fail_msg("callers stuck after eight claims at once (%d of %d done)", atomic_load(&done), NT);
  uint64_t *all = malloc(sizeof *all * NT * (1 + STEP / 2 + AFTER));
  size_t n = 0;
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    assert_int_equal(a[t].rc, 0);
    for (int i = 0; i < a[t].n; i++) {
      if (i > 0)
        assert_true(a[t].out[i] > a[t].out[i - 1]);
      all[n++] = a[t].out[i];
    }
  }
  qsort(all, n, sizeof *all, cmp_u64);
  for (size_t i = 1; i < n; i++)
    if (all[i] == all[i - 1])
      fail_msg("%" PRIu64 " issued twice", all[i]);
  free(all);
  idgen_seq_stats_t st;
  idgen_seq_stats(s, &st);
  assert_int_equal(st.issued, n);
  idgen_seq_close(s);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  load("many", rec);
  assert_int_equal(rec->issued, n);
  assert_int_equal(rec->claimed, rec->issued + rec->given + rec->lost);
  free(rec);
  pthread_barrier_destroy(&bar);
}

/*
 * Two callers without a thread claim at once while the holder's entry has
 * expired (paused past its TTL): the first is fenced, registers again and
 * claims; the second, fenced under the old generation, registers again
 * too, leaving the range the first just claimed and reporting under the
 * first's new generation.  Its close then removes the other generation's
 * entry, not the live one: the entry stays, and when it expires the
 * numbers the first issued under it are counted lost.
 */
typedef struct fence_arg {
  idgen_seq_t *s;
  uint64_t out[8];
  int n, rc;
} fence_arg_t;

static void *fence_taker(void *p) {
  fence_arg_t *a = p;
  tl_hold_at = 2; /* the claim's `sent`, then the transaction's clock */
  for (int i = 0; i < 4 && a->rc == 0; i++, a->n++)
    if (idgen_seq_next(a->s, &a->out[a->n]) < 0)
      a->rc = -1;
  return NULL;
}

static void test_fenced_claims_at_once_no_thread(void **state) {
  (void)state;
  gate_t g;
  gate_init(&g);
  idgen_clock_t clk = {gate_now, gate_sleep, &g};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = set.step = set.max_step = 4;
  set.prefetch = 0.9;
  set.ttl_ms = 1000;
  set.no_thread = 1;
  set.clock = &clk;
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "fenced", &set, err, sizeof err), 0);
  fence_arg_t a[2] = {{.s = s}, {.s = s}};
  pthread_t th[2];
  assert_int_equal(pthread_create(&th[0], NULL, fence_taker, &a[0]), 0);
  assert_int_equal(gate_wait(&g, 1, 30000), 1);
  assert_int_equal(pthread_create(&th[1], NULL, fence_taker, &a[1]), 0);
  /* The second's claim (a holder that has it wait for the first's sends
   * none: this wait then ends after a second). */
  gate_wait(&g, 2, 1000);
  atomic_fetch_add(&g.ns, INT64_C(2000000000)); /* past the TTL: reaped */
  gate_open(&g, 1);
  pthread_join(th[0], NULL);
  gate_open(&g, 2);
  pthread_join(th[1], NULL);
  uint64_t all[16];
  size_t n = 0;
  for (int t = 0; t < 2; t++) {
    assert_int_equal(a[t].rc, 0);
    for (int i = 0; i < a[t].n; i++) {
      if (i > 0)
        assert_true(a[t].out[i] > a[t].out[i - 1]);
      all[n++] = a[t].out[i];
    }
  }
  qsort(all, n, sizeof *all, cmp_u64);
  for (size_t i = 1; i < n; i++)
    assert_true(all[i] != all[i - 1]);
  idgen_seq_close(s);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  load("fenced", rec);
  assert_int_equal(rec->n, 0); /* closed: no entry left */
  assert_int_equal(rec->issued, n);
  assert_int_equal(rec->claimed, rec->issued + rec->given + rec->lost);
  free(rec);
}

/* ---- fork ------------------------------------------------------------------ */

/* In a forked child every way of taking a number is IDGEN_EFORKED: a
 * business number's too (the child's copy of the holder reads as zeros,
 * and "no format" was checked first: IDGEN_EINVAL). */
static void test_fork_every_call(void **state) {
  (void)state;
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.format = "ORD{date:%Y%m%d}{seq:04}";
  idgen_seq_t *f, *p;
  char err[256], buf[64];
  assert_int_equal(idgen_seq_open(&f, reg, "forkfmt", &set, err, sizeof err), 0);
  set.format = NULL;
  assert_int_equal(idgen_seq_open(&p, reg, "forkplain", &set, err, sizeof err), 0);
  uint64_t n, b[3];
  assert_true(idgen_seq_next_text(f, buf, sizeof buf, &n) > 0);
  assert_int_equal(idgen_seq_next(p, &n), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int bad = 0;
    bad |= (idgen_seq_next_text(f, buf, sizeof buf, &n) != IDGEN_EFORKED) << 0;
    bad |= (idgen_seq_next(f, &n) != IDGEN_EFORKED) << 1;
    bad |= (idgen_seq_next_n(f, b, 3) != IDGEN_EFORKED) << 2;
    bad |= (idgen_seq_next(p, &n) != IDGEN_EFORKED) << 3;
    bad |= (idgen_seq_next_n(p, b, 3) != IDGEN_EFORKED) << 4;
    _exit(bad);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_true(idgen_seq_next_text(f, buf, sizeof buf, &n) > 0);
  idgen_seq_close(f);
  idgen_seq_close(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_claims_at_once_no_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fenced_claims_at_once_no_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fork_every_call, setup, teardown),
  };
  /* One test alone: a failing one can leave callers stuck behind it. */
  if (getenv("SEQ_HOSTILE_TEST") != NULL)
    cmocka_set_test_filter(getenv("SEQ_HOSTILE_TEST"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
