/*
 * test_owner.c -- a Snowflake generator's owner takes without the lock
 * prefix; other threads revoke the ownership first (src/core/bias.c,
 * DESIGN §1).  What must hold across the handover:
 *   - no ID repeats, whoever took it (owner, other threads, signal handlers);
 *   - real-time order both ways: an ID taken after another thread's take
 *     returned is larger (increasing), in the owner and in the revokers;
 *   - the kernel restarts the owner's sequence when a signal comes inside;
 *   - the states: first taker owns, a second thread leaves it shared for
 *     good, bound-to-nothing but not hot-path generators never own, a child
 *     of fork() can own its own generators;
 *   - a barrier the kernel refuses (a seccomp filter installed after the
 *     owner was made) leaves the other threads no ID at all;
 *   - a generator bound to a lease is owned too; once its lease is fenced,
 *     the stats' reading (what the daemon starts its next lease above)
 *     revokes the owner, so nothing it issued is above that reading, and
 *     with the barrier refused the reading is the durable mark.
 * Each round's handover happens once per generator, so the rounds make many
 * generators and start the other threads while the owner is taking.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "snowflake_int.h"
#include "testutil.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static uintptr_t bias_of(idgen_snowflake_gen_t *g) {
  return atomic_load_explicit(&g->bias, memory_order_acquire);
}

static idgen_snowflake_gen_t *make(int precise) {
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.clock_mode = precise ? IDGEN_CLOCK_PRECISE : IDGEN_CLOCK_FAST;
  return tu_gen("time:41@1ms,sequence:22", &s);
}

/* Ownership needs Linux 5.10+, glibc 2.35+ with rseq on, x86-64: where it is
 * off (GLIBC_TUNABLES=glibc.pthread.rseq=0, valgrind) these tests skip,
 * unless IDGEN_TEST_OWNER_REQUIRED is set (this project's CI machines). */
static void need_owner(void) {
  if (idgen__bias_can_own())
    return;
  if (getenv("IDGEN_TEST_OWNER_REQUIRED") != NULL)
    fail_msg("this machine cannot make owners (rseq or membarrier unavailable)");
  skip();
}

static void test_first_taker_owns(void **state) {
  (void)state;
  need_owner();
  idgen_snowflake_gen_t *g = make(1);
  assert_int_equal(bias_of(g), BIAS_FREE);
  uint64_t a, b;
  assert_int_equal(idgen_snowflake_gen_next(g, &a), 0);
  assert_int_equal(bias_of(g), idgen__bias_me());
  assert_int_equal(idgen_snowflake_gen_next(g, &b), 0);
  assert_true(b > a);
  idgen_snowflake_gen_free(g);

  /* A batch first (the slow path) also makes its caller the owner. */
  g = make(0);
  uint64_t ids[3];
  assert_int_equal(idgen_snowflake_gen_next_n(g, ids, 3), 0);
  assert_int_equal(bias_of(g), idgen__bias_me());
  idgen_snowflake_gen_free(g);

  /* Off (tests, benchmarks): generators stay shared. */
  idgen__bias_enable(0);
  g = make(1);
  assert_int_equal(idgen_snowflake_gen_next(g, &a), 0);
  assert_int_equal(bias_of(g), BIAS_SHARED);
  idgen_snowflake_gen_free(g);
  idgen__bias_enable(1);
}

/* Generators whose takes are not all the hot path's are shared from the
 * start: seconds as the unit (compare-and-swap only), an injected clock. */
static void test_not_hot_path_never_owned(void **state) {
  (void)state;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  idgen_snowflake_gen_t *g = tu_gen("time:32@1s,sequence:20", &s);
  uint64_t id;
  assert_int_equal(idgen_snowflake_gen_next(g, &id), 0);
  assert_int_equal(bias_of(g), BIAS_SHARED);
  idgen_snowflake_gen_free(g);
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  idgen_snowflake_settings_init(&s);
  s.clock = &c.clock;
  g = tu_gen("time:41@1ms,sequence:22", &s);
  assert_int_equal(idgen_snowflake_gen_next(g, &id), 0);
  assert_int_equal(bias_of(g), BIAS_SHARED);
  idgen_snowflake_gen_free(g);
}

/* ---- the handover under load ---- */

enum { OTHERS = 3, HANDLER_MAX = 4096 };

static struct round {
  idgen_snowflake_gen_t *g;
  size_t n;                          /* IDs per thread */
  uint64_t *ids[OTHERS + 1];         /* [0]: the owner's */
  _Atomic uint64_t last[OTHERS + 1]; /* each thread's last returned ID */
  _Atomic int go;
  _Atomic int failed;
} rd;

static uint64_t handler_ids[HANDLER_MAX];
static _Atomic int handler_n;
static _Atomic int handler_failed;

static void on_alarm(int signo) {
  (void)signo;
  int i = atomic_fetch_add(&handler_n, 1);
  if (i >= HANDLER_MAX)
    return;
  if (idgen_snowflake_gen_next(rd.g, &handler_ids[i]) != 0)
    atomic_store(&handler_failed, 1);
}

/* Takes n IDs as thread k.  Before each take it reads what every other
 * thread had returned last; the take must come out above all of them. */
static void run_thread(int k) {
  for (size_t i = 0; i < rd.n; i++) {
    uint64_t floor = 0;
    for (int j = 0; j <= OTHERS; j++) {
      uint64_t v = atomic_load_explicit(&rd.last[j], memory_order_acquire);
      if (j != k && v > floor)
        floor = v;
    }
    uint64_t id;
    if (idgen_snowflake_gen_next(rd.g, &id) != 0 || id <= floor ||
        (i > 0 && id <= rd.ids[k][i - 1])) {
      atomic_store(&rd.failed, 1);
      return;
    }
    rd.ids[k][i] = id;
    atomic_store_explicit(&rd.last[k], id, memory_order_release);
  }
}

static void *other(void *arg) {
  while (!atomic_load(&rd.go))
    ;
  run_thread((int)(intptr_t)arg);
  return NULL;
}

static void test_handover_under_load(void **state) {
  (void)state;
  need_owner();
  const int rounds = (int)tu_scaled(300);
  rd.n = tu_scaled(3000);
  for (int k = 0; k <= OTHERS; k++)
    rd.ids[k] = malloc(rd.n * sizeof(uint64_t));
  uint64_t *all = malloc(((OTHERS + 1) * rd.n + HANDLER_MAX) * sizeof(uint64_t));
  assert_non_null(all);
  size_t handled = 0;

  for (int r = 0; r < rounds; r++) {
    rd.g = make(r % 2);
    for (int k = 0; k <= OTHERS; k++)
      atomic_store(&rd.last[k], 0);
    atomic_store(&rd.go, 0);
    atomic_store(&handler_n, 0);
    /* This thread owns the generator before the others exist. */
    uint64_t first;
    assert_int_equal(idgen_snowflake_gen_next(rd.g, &first), 0);
    assert_int_equal(bias_of(rd.g), idgen__bias_me());
    atomic_store(&rd.last[0], first);
    pthread_t t[OTHERS];
    for (int k = 1; k <= OTHERS; k++)
      assert_int_equal(pthread_create(&t[k - 1], NULL, other, (void *)(intptr_t)k), 0);
    /* Signals to the process land on any of the four threads, inside or
     * between their takes, during the handover. */
    tu_alarm_every_us(on_alarm, 50);
    atomic_store(&rd.go, 1);
    run_thread(0);
    for (int k = 0; k < OTHERS; k++)
      pthread_join(t[k], NULL);
    tu_alarm_off();
    assert_false(atomic_load(&rd.failed));
    assert_false(atomic_load(&handler_failed));
    assert_int_equal(bias_of(rd.g), BIAS_SHARED);

    size_t m = 0;
    all[m++] = first;
    for (int k = 0; k <= OTHERS; k++) {
      memcpy(all + m, rd.ids[k], rd.n * sizeof(uint64_t));
      m += rd.n;
    }
    int h = atomic_load(&handler_n);
    h = h > HANDLER_MAX ? HANDLER_MAX : h;
    memcpy(all + m, handler_ids, (size_t)h * sizeof(uint64_t));
    m += (size_t)h;
    handled += (size_t)h;
    qsort(all, m, sizeof *all, cmp_u64);
    for (size_t i = 1; i < m; i++)
      if (all[i] == all[i - 1])
        fail_msg("round %d: ID %llu taken twice", r, (unsigned long long)all[i]);
    idgen_snowflake_gen_free(rd.g);
  }
  print_message("%d handovers, %zu IDs taken by signal handlers among them\n", rounds, handled);
  assert_true(handled > 0);
  for (int k = 0; k <= OTHERS; k++)
    free(rd.ids[k]);
  free(all);
}

/* ---- the kernel restarts the owner's sequence ---- */

static volatile sig_atomic_t alarms;
static void count_alarm(int signo) {
  (void)signo;
  alarms = alarms + 1;
}

/* Signals delivered inside the owner's restartable sequence send it to its
 * abort address (the kernel checks the signature before it, and kills the
 * process if it is wrong): such takes report nothing taken, and the values
 * that were taken follow each other with no gap and no repeat. */
static void test_sections_restart(void **state) {
  (void)state;
  need_owner();
#ifdef TU_UNDER_SANITIZER
  /* ThreadSanitizer holds signals back until the next call it intercepts,
   * which the loop below never makes. */
  skip();
#endif
  idgen_snowflake_gen_t *g = make(1);
  uint64_t first, c, prev;
  assert_int_equal(idgen_snowflake_gen_next(g, &first), 0);
  assert_int_equal(bias_of(g), idgen__bias_me());
  alarms = 0;
  tu_alarm_every_us(count_alarm, 20);
  prev = atomic_load(&g->next) - 1;
  long taken = 0, aborted = 0;
  for (long n = 0; alarms < 3000; n++) {
    if (n > 4000000000L)
      fail_msg("3000 signals did not arrive");
    if (idgen__owner_take((uint64_t *)&g->next, (const uintptr_t *)&g->bias, idgen__bias_me(),
                          &c)) {
      if (c != prev + 1)
        fail_msg("took %llu after %llu", (unsigned long long)c, (unsigned long long)prev);
      prev = c;
      taken++;
    } else {
      aborted++;
    }
  }
  tu_alarm_off();
  print_message("%ld takes, %ld restarted by %d signals\n", taken, aborted, (int)alarms);
  assert_true(aborted > 0);
  assert_int_equal(atomic_load(&g->next), prev + 1);
  idgen_snowflake_gen_free(g);
}

/* ---- fork ---- */

static void *take_many(void *arg) {
  uint64_t *out = arg;
  for (int i = 0; i < 100000; i++)
    if (idgen_snowflake_gen_next(rd.g, &out[i]) != 0)
      return (void *)1;
  return NULL;
}

/* The membarrier registration is the process's: a child of fork() must
 * register again before it can revoke its own generators' owners. */
static void test_child_owns_its_generators(void **state) {
  (void)state;
  need_owner();
  idgen_snowflake_gen_t *parent = make(1);
  uint64_t id;
  assert_int_equal(idgen_snowflake_gen_next(parent, &id), 0);
  assert_int_equal(bias_of(parent), idgen__bias_me());
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (idgen_snowflake_gen_next(parent, &id) != IDGEN_EFORKED)
      _exit(2);
    rd.g = make(1);
    uint64_t *a = malloc(200000 * sizeof *a);
    if (a == NULL || idgen_snowflake_gen_next(rd.g, &a[0]) != 0 ||
        bias_of(rd.g) != idgen__bias_me())
      _exit(3);
    pthread_t t;
    if (pthread_create(&t, NULL, take_many, a + 100000) != 0)
      _exit(4);
    void *r1 = take_many(a);
    void *r2;
    pthread_join(t, &r2);
    if (r1 != NULL || r2 != NULL || bias_of(rd.g) != BIAS_SHARED)
      _exit(5);
    qsort(a, 200000, sizeof *a, cmp_u64);
    for (int i = 1; i < 200000; i++)
      if (a[i] == a[i - 1])
        _exit(6);
    _exit(0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  idgen_snowflake_gen_free(parent);
}

/* A seccomp filter installed after a thread owns a generator makes
 * membarrier() fail with EPERM (a legal setting: idgen.h names it).  Then
 * the ownership cannot be revoked, and another thread must get no ID
 * (IDGEN_EINVAL) rather than take beside an owner whose section may still
 * commit; the owner carries on, and no new owners are made.  A revocation
 * that skipped the barrier would hand that thread IDs here. */
static void *take_one(void *arg) {
  uint64_t id;
  return (void *)(intptr_t)idgen_snowflake_gen_next(arg, &id);
}

static int refuse_membarrier(void) {
  struct sock_filter f[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_membarrier, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return -1;
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* The forked child's steps exit with the number of the one that failed. */
static void child_passed(pid_t pid) {
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  if (WEXITSTATUS(st) != 0)
    fail_msg("the child failed at step %d", WEXITSTATUS(st));
}
static void test_refused_barrier_gives_others_nothing(void **state) {
  (void)state;
  need_owner();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) { /* the filter stays in the child */
    idgen_snowflake_gen_t *g = make(1);
    uint64_t a, b;
    if (idgen_snowflake_gen_next(g, &a) != 0 || bias_of(g) != idgen__bias_me())
      _exit(2);
    if (refuse_membarrier() != 0)
      _exit(3);
    pthread_t t;
    void *r;
    if (pthread_create(&t, NULL, take_one, g) != 0 || pthread_join(t, &r) != 0)
      _exit(4);
    if ((intptr_t)r != IDGEN_EINVAL)
      _exit(5); /* the other thread took beside the owner */
    if (idgen_snowflake_gen_next(g, &b) != 0 || b <= a)
      _exit(6); /* the owner carries on */
    idgen_snowflake_gen_t *g2 = make(1);
    if (idgen_snowflake_gen_next(g2, &a) != 0 || bias_of(g2) != BIAS_SHARED)
      _exit(7); /* no new owner: its takes are locked */
    if (pthread_create(&t, NULL, take_one, g2) != 0 || pthread_join(t, &r) != 0 || r != NULL)
      _exit(8);
    _exit(0);
  }
  child_passed(pid);
}

typedef struct {
  idgen_snowflake_gen_t *g;
  idgen_snowflake_stats_t *out;
} stats_arg_t;

static void *read_stats(void *arg) {
  stats_arg_t *a = arg;
  idgen_snowflake_gen_stats(a->g, a->out);
  return NULL;
}

/* ---- bound to a lease ---------------------------------------------------- */

/* A file: registry in a fresh directory, a lease of twitter's layout with a
 * short TTL, and a generator bound to it (the system clock: the hot path). */
typedef struct {
  char dir[64];
  idgen_layout_t tw;
  idgen_registry_t *r;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *g;
} bound_t;

static int bound_open(bound_t *b) {
  snprintf(b->dir, sizeof b->dir, "/tmp/idgen-owner-XXXXXX");
  if (mkdtemp(b->dir) == NULL)
    return -1;
  char uri[100], err[300];
  snprintf(uri, sizeof uri, "file:%s", b->dir);
  b->tw = tu_layout("twitter");
  if (idgen_registry_open(&b->r, uri, err, sizeof err) != 0)
    return -1;
  idgen_lease_request_t req = {&b->tw, NULL, NULL, -1, NULL, .ttl_ms = 300};
  if (idgen_registry_acquire(b->r, &req, &b->lease, err, sizeof err) != 0)
    return -1;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.lease = b->lease;
  s.max_wait_ms = 0;
  return idgen_snowflake_gen_new(&b->g, &b->tw, &s, err, sizeof err);
}

/* The lease's lock file replaced (another process could lock the new one):
 * its next renewal fences the generator.  0 once it is fenced. */
static int bound_fence(bound_t *b) {
  char cmd[700];
  snprintf(cmd, sizeof cmd,
           "f=$(find '%s' -name '*.lock' | head -n 1) && "
           "[ -n \"$f\" ] && mv \"$f\" \"$f.moved\"",
           b->dir);
  if (system(cmd) != 0)
    return -1;
  for (int i = 0; i < 500; i++) { /* renewed every 100 ms */
    idgen_snowflake_lease_status_t st;
    idgen_snowflake_gen_lease_status(b->g, &st);
    if (st.fenced)
      return 0;
    usleep(10000);
  }
  return -1;
}

static void bound_close(bound_t *b) {
  char cmd[100];
  idgen_snowflake_gen_free(b->g);
  idgen_lease_release(b->lease);
  idgen_registry_close(b->r);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", b->dir);
  if (system(cmd) != 0)
    fprintf(stderr, "could not remove %s\n", b->dir);
}

typedef struct {
  idgen_snowflake_gen_t *g;
  uintptr_t token; /* the thread's idgen__bias_me() */
  uint64_t last;   /* the largest ID it was given */
  long n;
  _Atomic int owned; /* 1 once its first take made it the owner */
} taker_t;

/* Takes until the generator refuses. */
static void *take_until_refused(void *arg) {
  taker_t *t = arg;
  t->token = idgen__bias_me();
  uint64_t id;
  while (idgen_snowflake_gen_next(t->g, &id) == 0) {
    if (id <= t->last && t->n > 0)
      return (void *)1; /* not increasing */
    t->last = id;
    if (t->n++ == 0)
      atomic_store(&t->owned, bias_of(t->g) == t->token);
  }
  return NULL;
}

static void test_bound_owned_then_fenced(void **state) {
  (void)state;
  need_owner();
  for (int round = 0; round < 3; round++) {
    bound_t b;
    if (bound_open(&b) != 0)
      fail_msg("a bound generator in a fresh file: registry");
    taker_t t = {.g = b.g};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, take_until_refused, &t), 0);
    while (t.n == 0 && !atomic_load(&t.owned))
      sched_yield();
    assert_int_equal(bound_fence(&b), 0);
    /* Read while the owner may still be taking: the reading revokes it. */
    idgen_snowflake_stats_t st;
    idgen_snowflake_gen_stats(b.g, &st);
    assert_int_equal(bias_of(b.g), BIAS_SHARED);
    void *r;
    assert_int_equal(pthread_join(th, &r), 0);
    assert_null(r);
    assert_true(atomic_load(&t.owned)); /* it was the owner: its takes were unlocked */
    assert_true(t.n > 0);
    if (t.last > st.last_id)
      fail_msg("round %d: the owner issued %llu above the fenced reading %llu", round,
               (unsigned long long)t.last, (unsigned long long)st.last_id);
    bound_close(&b);
  }
}

/* With the barrier refused since the owner was made, the owner cannot be
 * revoked: the fenced reading is the durable mark, above all it issued. */
static void test_bound_refused_barrier_reads_the_mark(void **state) {
  (void)state;
  need_owner();
#ifdef TU_UNDER_TSAN
  skip(); /* the child starts threads after a fork */
#endif
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    bound_t b;
    if (bound_open(&b) != 0)
      _exit(2);
    uint64_t a;
    if (idgen_snowflake_gen_next(b.g, &a) != 0 || bias_of(b.g) != idgen__bias_me())
      _exit(3);
    if (refuse_membarrier() != 0)
      _exit(4);
    if (bound_fence(&b) != 0)
      _exit(5);
    idgen_snowflake_lease_status_t ls;
    idgen_snowflake_gen_lease_status(b.g, &ls);
    pthread_t t;
    idgen_snowflake_stats_t st = {0};
    if (pthread_create(&t, NULL, read_stats, &(stats_arg_t){b.g, &st}) != 0 ||
        pthread_join(t, NULL) != 0)
      _exit(6);
    if (bias_of(b.g) == BIAS_SHARED)
      _exit(7); /* revoked although the barrier is refused? */
    uint64_t v[IDGEN_LAYOUT_MAX_FIELDS];
    int64_t ms;
    if (st.last_id < a ||
        idgen_layout_decompose(idgen_snowflake_gen_layout(b.g), st.last_id, v, &ms) != 0 ||
        ms < ls.lease.mark_ms)
      _exit(8); /* below the durable mark: an owner's take could be above it */
    bound_close(&b);
    _exit(0);
  }
  child_passed(pid);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_first_taker_owns),
      cmocka_unit_test(test_not_hot_path_never_owned),
      cmocka_unit_test(test_sections_restart),
      cmocka_unit_test(test_handover_under_load),
      cmocka_unit_test(test_child_owns_its_generators),
      cmocka_unit_test(test_refused_barrier_gives_others_nothing),
      cmocka_unit_test(test_bound_owned_then_fenced),
      cmocka_unit_test(test_bound_refused_barrier_reads_the_mark),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
