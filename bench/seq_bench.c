/*
 * seq_bench.c -- a sequence's hot path (idgen_seq_next) against a bare
 * atomic_fetch_add on a shared counter, at 1 and 2 threads: ns per number
 * (per thread, wall clock), numbers/s (all threads) and the ratio, and
 * the same by the threads' CPU time (on a machine shared with other work),
 * medians of 5 runs of each, alternating; and, as the floor of any
 * function that returns a number through a pointer, the same fetch_add
 * behind a call that is not inlined.
 * The sequence is on a file: registry in a temporary directory, with
 * step = max_step so that claims (one fsync'ed write each, in the
 * background) are rare.
 *   seq_bench [NUMBERS_PER_THREAD]      (default 50,000,000)
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idgen.h"

#define RUNS 5

static _Atomic uint64_t shared_counter;
static idgen_seq_t *seq;
static long per_thread;
static pthread_barrier_t start;
static _Atomic uint64_t sink;
/* The threads' CPU time in the last run, ns, summed: on a machine shared
 * with other work, time a thread was not running does not count. */
static _Atomic int64_t cpu_ns;

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run_atomic(void *arg) {
  (void)arg;
  uint64_t x = 0;
  pthread_barrier_wait(&start);
  int64_t c0 = thread_cpu_ns();
  for (long i = 0; i < per_thread; i++)
    x += atomic_fetch_add_explicit(&shared_counter, 1, memory_order_relaxed);
  atomic_fetch_add(&cpu_ns, thread_cpu_ns() - c0);
  atomic_fetch_add(&sink, x);
  return NULL;
}

/* The floor for any call that returns its number through a pointer: a
 * bare fetch_add behind a function call that is not inlined. */
__attribute__((noinline)) static int called_add(uint64_t *n) {
  *n = atomic_fetch_add_explicit(&shared_counter, 1, memory_order_relaxed);
  return 0;
}

static void *run_called(void *arg) {
  (void)arg;
  uint64_t x = 0, n;
  pthread_barrier_wait(&start);
  int64_t c0 = thread_cpu_ns();
  for (long i = 0; i < per_thread; i++) {
    if (called_add(&n) != 0)
      exit(1);
    x += n;
  }
  atomic_fetch_add(&cpu_ns, thread_cpu_ns() - c0);
  atomic_fetch_add(&sink, x);
  return NULL;
}

static void *run_seq(void *arg) {
  (void)arg;
  uint64_t x = 0, n;
  pthread_barrier_wait(&start);
  int64_t c0 = thread_cpu_ns();
  for (long i = 0; i < per_thread; i++) {
    if (idgen_seq_next(seq, &n) != 0) {
      fprintf(stderr, "seq_bench: idgen_seq_next failed\n");
      exit(1);
    }
    x += n;
  }
  atomic_fetch_add(&cpu_ns, thread_cpu_ns() - c0);
  atomic_fetch_add(&sink, x);
  return NULL;
}

/* Seconds for one run of `threads` threads doing per_thread each; *cpu:
 * their CPU time per number, ns. */
static double one_run(void *(*fn)(void *), int threads, double *cpu) {
  pthread_t th[8];
  atomic_store(&cpu_ns, 0);
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int t = 0; t < threads; t++)
    pthread_create(&th[t], NULL, fn, NULL);
  pthread_barrier_wait(&start);
  double t0 = now_s();
  for (int t = 0; t < threads; t++)
    pthread_join(th[t], NULL);
  double dt = now_s() - t0;
  pthread_barrier_destroy(&start);
  if (cpu != NULL)
    *cpu = (double)atomic_load(&cpu_ns) / ((double)per_thread * threads);
  return dt;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Medians of RUNS runs of each, alternating (so that a machine's other
 * load weighs on both alike). */
static double median(double *v) {
  qsort(v, RUNS, sizeof v[0], cmp_d);
  return v[RUNS / 2];
}

static void median_three(int threads, double *a, double *s, double *c, double *ca, double *cs,
                         double *cc) {
  double ra[RUNS], rs[RUNS], rc[RUNS], pa[RUNS], ps[RUNS], pc[RUNS];
  for (int i = 0; i < RUNS; i++) {
    ra[i] = one_run(run_atomic, threads, &pa[i]);
    rs[i] = one_run(run_seq, threads, &ps[i]);
    rc[i] = one_run(run_called, threads, &pc[i]);
  }
  *a = median(ra), *s = median(rs), *c = median(rc);
  *ca = median(pa), *cs = median(ps), *cc = median(pc);
}

int main(int argc, char **argv) {
  per_thread = argc > 1 ? atol(argv[1]) : 50000000;
  char dir[] = "/tmp/idgen-seqbench-XXXXXX", uri[64], err[256];
  if (mkdtemp(dir) == NULL)
    return 1;
  snprintf(uri, sizeof uri, "file:%s", dir);
  idgen_registry_t *r;
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.step = set.max_step;
  set.min_step = set.max_step;
  if (idgen_registry_open(&r, uri, err, sizeof err) < 0 ||
      idgen_seq_open(&seq, r, "bench", &set, err, sizeof err) < 0) {
    fprintf(stderr, "seq_bench: %s\n", err);
    return 1;
  }
  printf("seq_bench: %ld numbers per thread, median of %d runs, step %" PRIu64 "\n", per_thread,
         RUNS, set.step);
  printf("%-8s %-22s %10s %14s %8s %12s %10s\n", "threads", "what", "ns/op", "numbers/s", "ratio",
         "cpu ns/op", "cpu ratio");
  for (int threads = 1; threads <= 2; threads++) {
    one_run(run_seq, threads, NULL); /* warm up: the first claims */
    double a, s, c, ca, cs, cc;
    median_three(threads, &a, &s, &c, &ca, &cs, &cc);
    double na = a * 1e9 / (double)per_thread, ns = s * 1e9 / (double)per_thread;
    double nc = c * 1e9 / (double)per_thread;
    printf("%-8d %-22s %10.2f %14.0f %8s %12.2f %10s\n", threads, "atomic_fetch_add", na,
           (double)per_thread * threads / a, "", ca, "");
    printf("%-8d %-22s %10.2f %14.0f %8.2f %12.2f %10.2f\n", threads, "fetch_add in a call", nc,
           (double)per_thread * threads / c, nc / na, cc, cc / ca);
    printf("%-8d %-22s %10.2f %14.0f %8.2f %12.2f %10.2f\n", threads, "idgen_seq_next (file:)", ns,
           (double)per_thread * threads / s, ns / na, cs, cs / ca);
  }
  idgen_seq_stats_t st;
  idgen_seq_stats(seq, &st);
  printf("claims %" PRIu64 ", claim failures %" PRIu64 ", last claim %.2f ms\n", st.claims,
         st.claim_failures, (double)st.claim_ns_last / 1e6);
  idgen_seq_close(seq);
  idgen_registry_close(r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
