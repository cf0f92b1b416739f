/*
 * bench.c -- the benchmark suite, run by `idgen-bench` and `idgen bench`.
 *
 * Every figure is the median of several runs measured in this process, next
 * to a bare clock_gettime(CLOCK_REALTIME) loop measured in the same run, so
 * ratios stay meaningful on a noisy shared machine.  Each run is a fixed
 * wall-clock duration; the loop checks the time every 1024 operations.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core_int.h"
#include "idgen.h"
#include "machine.h"

int idgen_bench_main(int argc, char **argv);

static const char usage[] =
    "Usage: idgen bench [--runs N] [--seconds S] [--twitter-seconds S] [--quick]\n"
    "                   [--only NAME]\n"
    "\n"
    "Measure the generators and codecs on this machine: ns per ID and IDs per second,\n"
    "the median of N runs, beside a bare clock_gettime(CLOCK_REALTIME) loop\n"
    "measured in the same run.\n"
    "\n"
    "  --runs N             runs per benchmark (default 5)\n"
    "  --seconds S          length of each run (default 0.5)\n"
    "  --twitter-seconds S  length of each run of the Twitter-layout rate test\n"
    "                       (default 10, as the acceptance figure asks)\n"
    "  --quick              --runs 3 --seconds 0.2 --twitter-seconds 1\n"
    "  --only NAME          run only benchmarks whose name contains NAME\n"
    "  --ops N              instead of timing, run each single-thread benchmark for\n"
    "                       exactly N operations (for callgrind instruction counts:\n"
    "                       bench/callgrind.sh)\n"
    "  --threads N          instead, T threads sharing one generator for T = 1, 2, 4,\n"
    "                       ... up to N (1 to 256): next on one generator and take on\n"
    "                       one ring, beside the same-run floor of T threads each\n"
    "                       reading the clock and adding one to a shared counter\n"
    "  -h, --help           show this help\n";

#define WIDE "time:41@1ms,sequence:22,epoch=1288834974657"
/* The same width with a node field, for a registry to lease. */
#define WIDE_LEASED "time:41@1ms,worker:1,sequence:21,epoch=1288834974657"
/* For the cached generator: a ring of 2^18 << 3 slots. */
#define CACHED_LAYOUT "time:41@1ms,worker:4,sequence:18,epoch=1288834974657"

struct opts {
  long ops;
  int threads; /* --threads: the T sweep up to this, or 0 */
  int runs;
  double seconds;
  double twitter_seconds;
  const char *only;
};

typedef struct sample (*bench_fn)(double seconds, void *arg);

static struct sample run_clock(double seconds, void *arg) {
  (void)arg;
  TIMED_LOOP(seconds, {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    acc += (uint64_t)ts.tv_nsec;
  });
}

/* A loop of the clock read a generator in `mode` makes (idgen__clock_mode_ms,
 * the same inline read): the floor its "clock +N ns" figures are against. */
static struct sample run_clock_mode(double seconds, void *arg) {
  idgen_clock_mode_t mode = *(const idgen_clock_mode_t *)arg;
  TIMED_LOOP(seconds, { acc += (uint64_t)idgen__clock_mode_ms(mode); });
}

/* How far the coarse clock is behind the precise one, over n reads of
 * both: the median and the largest, in ms. */
static void coarse_lag(int n, int64_t *median, int64_t *max) {
  int64_t hist[64] = {0};
  for (int i = 0; i < n; i++) {
    int64_t d = idgen__clock_precise_ms() - idgen__clock_coarse_ms();
    hist[d < 0 ? 0 : d > 63 ? 63 : d]++;
  }
  int64_t seen = 0;
  *median = -1;
  *max = 0;
  for (int d = 0; d < 64; d++) {
    seen += hist[d];
    if (*median < 0 && seen * 2 >= n)
      *median = d;
    if (hist[d])
      *max = d;
  }
}

struct gen_arg {
  const char *layout;
  idgen_clock_mode_t mode;
  int64_t borrow;
  int threads;
  size_t batch;
  const char *registry; /* bind to a lease from this registry, or NULL */
  int cached;           /* take from an idgen_cached_gen over the generator */
};

/* The lease of a bound benchmark generator: one at a time. */
static idgen_registry_t *bench_reg;
static idgen_lease_t *bench_lease;

static idgen_snowflake_gen_t *make_gen(const struct gen_arg *a) {
  idgen_layout_t l;
  idgen_snowflake_settings_t s;
  char err[256];
  idgen_snowflake_gen_t *g;
  if (idgen_layout_parse(&l, a->layout, err, sizeof err) < 0) {
    fprintf(stderr, "idgen: bench: %s\n", err);
    exit(1);
  }
  idgen_snowflake_settings_init(&s);
  s.clock_mode = a->mode;
  s.max_borrow_ms = a->borrow;
  if (a->registry != NULL) {
    idgen_lease_request_t req = {.layout = &l, .max_start_wait_ms = -1};
    if (idgen_registry_open(&bench_reg, a->registry, err, sizeof err) < 0 ||
        idgen_registry_acquire(bench_reg, &req, &bench_lease, err, sizeof err) < 0) {
      fprintf(stderr, "idgen: bench: %s\n", err);
      exit(1);
    }
    s.lease = bench_lease;
  }
  if (idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err) < 0) {
    fprintf(stderr, "idgen: bench: %s\n", err);
    exit(1);
  }
  return g;
}

#define MAX_THREADS 256

struct thread_arg {
  idgen_snowflake_gen_t *g;
  idgen_cached_gen_t *c; /* or NULL */
  size_t batch;
  double seconds;
  pthread_barrier_t *start;
  struct sample out;
};

static void *gen_thread(void *p) {
  struct thread_arg *ta = p;
  uint64_t *buf = malloc(sizeof(uint64_t) * (ta->batch ? ta->batch : 1));
  uint64_t n = 0, acc = 0;
  if (ta->start)
    pthread_barrier_wait(ta->start);
  double t0 = mono(), t;
  do {
    if (ta->c != NULL) {
      for (int i = 0; i < 1024; i++) {
        uint64_t id;
        if (idgen_cached_gen_take(ta->c, &id) < 0)
          abort();
        acc += id;
      }
      n += 1024;
    } else if (ta->batch == 0) {
      for (int i = 0; i < 1024; i++) {
        uint64_t id;
        if (idgen_snowflake_gen_next(ta->g, &id) < 0)
          abort();
        acc += id;
      }
      n += 1024;
    } else {
      if (idgen_snowflake_gen_next_n(ta->g, buf, ta->batch) < 0)
        abort();
      acc += buf[ta->batch - 1];
      n += ta->batch;
    }
  } while ((t = mono()) - t0 < ta->seconds);
  sink = acc;
  free(buf);
  ta->out = (struct sample){(double)n, t - t0};
  return NULL;
}

/* n threads running fn on copies of `proto`, started together (a barrier
 * when n > 1): the IDs of all over the longest of their times. */
static struct sample run_threads(int n, void *(*fn)(void *), struct thread_arg proto) {
  struct thread_arg ta[MAX_THREADS];
  pthread_t th[MAX_THREADS];
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)n);
  for (int i = 0; i < n; i++) {
    ta[i] = proto;
    ta[i].start = n > 1 ? &bar : NULL;
    pthread_create(&th[i], NULL, fn, &ta[i]);
  }
  struct sample s = {0, 0};
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    s.ids += ta[i].out.ids;
    if (ta[i].out.secs > s.secs)
      s.secs = ta[i].out.secs;
  }
  pthread_barrier_destroy(&bar);
  return s;
}

static struct sample run_gen(double seconds, void *arg) {
  const struct gen_arg *a = arg;
  idgen_snowflake_gen_t *g = make_gen(a);
  idgen_cached_gen_t *c = NULL;
  char err[256];
  if (a->cached && idgen_cached_gen_new(&c, g, NULL, err, sizeof err) < 0) {
    fprintf(stderr, "idgen: bench: %s\n", err);
    exit(1);
  }
  struct sample s = run_threads(a->threads, gen_thread,
                                (struct thread_arg){g, c, a->batch, seconds, NULL, {0, 0}});
  idgen_cached_gen_free(c);
  idgen_snowflake_gen_free(g);
  idgen_lease_release(bench_lease);
  idgen_registry_close(bench_reg);
  bench_lease = NULL;
  bench_reg = NULL;
  return s;
}

static struct sample run_compose(double seconds, void *arg) {
  (void)arg;
  idgen_layout_t l;
  uint64_t v[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  idgen_layout_parse(&l, "twitter", NULL, 0);
  TIMED_LOOP(seconds, {
    uint64_t id;
    v[1] = i & 31;
    v[3] = i & 4095;
    idgen_layout_compose(&l, 1505914988849 + (int64_t)(i & 1023), v, &id, NULL, 0);
    acc += id;
  });
}

static struct sample run_decompose(double seconds, void *arg) {
  (void)arg;
  idgen_layout_t l;
  uint64_t v[IDGEN_LAYOUT_MAX_FIELDS];
  idgen_layout_parse(&l, "twitter", NULL, 0);
  TIMED_LOOP(seconds, {
    int64_t ms;
    idgen_layout_decompose(&l, UINT64_C(910499571847892992) + i, v, &ms);
    acc += v[3] + (uint64_t)ms;
  });
}

/* The floor of T threads sharing one generator: each reads the fast clock
 * (the generator's read) and adds one to a counter all share -- the least a
 * call that hands out IDs increasing in real time across threads must do
 * (DESIGN section 2, "Threads sharing one generator"). */
static _Atomic uint64_t floor_counter;
static void *floor_thread(void *p) {
  struct thread_arg *ta = p;
  uint64_t n = 0, acc = 0;
  if (ta->start)
    pthread_barrier_wait(ta->start);
  double t0 = mono(), t;
  do {
    for (int i = 0; i < 1024; i++)
      acc += (uint64_t)idgen__clock_fast_ms() +
             atomic_fetch_add_explicit(&floor_counter, 1, memory_order_relaxed);
    n += 1024;
  } while ((t = mono()) - t0 < ta->seconds);
  sink = acc;
  ta->out = (struct sample){(double)n, t - t0};
  return NULL;
}
static struct sample run_floor(double seconds, void *arg) {
  return run_threads(*(const int *)arg, floor_thread,
                     (struct thread_arg){NULL, NULL, 0, seconds, NULL, {0, 0}});
}

static double median_of(double *v, int n);

/* --threads N: for T = 1, 2, 4, ... N, the floor, next on one generator and
 * take on one ring, in interleaved runs (the machine's drift falls on all
 * three); the medians and the ratios to the floor. */
static int thread_sweep(const struct opts *o) {
  printf("T threads sharing one generator: IDs/s of all T together, medians of %d runs of %.1f s "
         "(interleaved); floor = T threads each reading the fast clock and adding one to a "
         "shared counter\n",
         o->runs, o->seconds);
  printf("%7s %14s %14s %14s %10s %10s %10s\n", "threads", "floor M/s", "next M/s", "take M/s",
         "next/floor", "take/floor", "take/next");
  for (int t = 1;; t = t * 2 > o->threads && t < o->threads ? o->threads : t * 2) {
    struct gen_arg nx = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, t, 0, NULL, 0};
    struct gen_arg ca = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, t, 0, NULL, 1};
    double rf[64], rn[64], rc[64];
    int runs = o->runs > 64 ? 64 : o->runs;
    for (int i = 0; i < runs; i++) {
      struct sample a = run_floor(o->seconds, &t), b = run_gen(o->seconds, &nx),
                    c = run_gen(o->seconds, &ca);
      rf[i] = a.ids / a.secs;
      rn[i] = b.ids / b.secs;
      rc[i] = c.ids / c.secs;
    }
    double f = median_of(rf, runs), n = median_of(rn, runs), c = median_of(rc, runs);
    printf("%7d %14.2f %14.2f %14.2f %10.2f %10.2f %10.2f\n", t, f / 1e6, n / 1e6, c / 1e6, n / f,
           c / f, c / n);
    printf("bench.threads %d floor_mops=%.3f next_mops=%.3f take_mops=%.3f\n", t, f / 1e6, n / 1e6,
           c / 1e6);
    fflush(stdout);
    if (t >= o->threads)
      break;
  }
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Runs fn `runs` times; returns the median rate in IDs/s. */
static double measure(const char *name, const struct opts *o, bench_fn fn, void *arg,
                      double seconds, double floor_rate, const char *note) {
  double rates[64];
  int runs = o->runs > 64 ? 64 : o->runs;
  if (o->only != NULL && strstr(name, o->only) == NULL)
    return 0;
  for (int i = 0; i < runs; i++) {
    struct sample s = fn(seconds, arg);
    rates[i] = s.ids / s.secs;
  }
  qsort(rates, (size_t)runs, sizeof rates[0], cmp_double);
  double med = runs % 2 ? rates[runs / 2] : (rates[runs / 2 - 1] + rates[runs / 2]) / 2;
  printf("%-34s %9.2f ns/ID %9.2f M IDs/s", name, 1e9 / med, med / 1e6);
  if (floor_rate > 0)
    printf("  %5.0f%% of clock loop", 100.0 * med / floor_rate);
  else if (floor_rate < 0) /* -floor_rate is the clock loop's rate: show the cost above it */
    printf("  clock %+6.2f ns", 1e9 / med - 1e9 / -floor_rate);
  printf("   [min %.2f, max %.2f M/s]", rates[0] / 1e6, rates[runs - 1] / 1e6);
  if (note != NULL)
    printf("  %s", note);
  putchar('\n');
  fflush(stdout);
  return med;
}

/* Two benchmarks in alternating runs (the machine's drift falls on both);
 * prints both medians and the ratio b/a. */
static void measure_pair(const char *name, const struct opts *o, bench_fn fn, void *a, void *b,
                         const char *name_a, const char *name_b) {
  double ra[64], rb[64];
  int runs = o->runs > 64 ? 64 : o->runs;
  if (o->only != NULL && strstr(name, o->only) == NULL)
    return;
  for (int i = 0; i < runs; i++) {
    struct sample x = fn(o->seconds, a), y = fn(o->seconds, b);
    ra[i] = x.ids / x.secs;
    rb[i] = y.ids / y.secs;
  }
  qsort(ra, (size_t)runs, sizeof ra[0], cmp_double);
  qsort(rb, (size_t)runs, sizeof rb[0], cmp_double);
  double ma = runs % 2 ? ra[runs / 2] : (ra[runs / 2 - 1] + ra[runs / 2]) / 2;
  double mb = runs % 2 ? rb[runs / 2] : (rb[runs / 2 - 1] + rb[runs / 2]) / 2;
  printf("%-34s %9.2f ns/ID %9.2f M IDs/s  %s\n", name, 1e9 / ma, ma / 1e6, name_a);
  printf("%-34s %9.2f ns/ID %9.2f M IDs/s  %s: %.1f%% of %s\n", "", 1e9 / mb, mb / 1e6, name_b,
         100.0 * mb / ma, name_a);
  fflush(stdout);
}

/* Inputs for the codec benchmarks: 64 random values in each form, cycled, so
 * that no benchmark writes into the very string it is about to read. */
#define NINPUTS 64
static idgen_ulid_t in_ulid[NINPUTS];
static char in_ulid_text[NINPUTS][IDGEN_ULID_STRLEN + 1];
static idgen_uuid_t in_uuid[NINPUTS];
static char in_uuid_text[NINPUTS][IDGEN_UUID_STRLEN + 1];

static void make_inputs(void) {
  for (int k = 0; k < NINPUTS; k++) {
    idgen_random_bytes(in_ulid[k].bytes, 16);
    in_ulid[k].bytes[0] &= 0x3f; /* keep the time below 2^46 ms, as real ULIDs are */
    idgen_ulid_format(&in_ulid[k], in_ulid_text[k]);
    idgen_random_bytes(in_uuid[k].bytes, 16);
    idgen_uuid_format(&in_uuid[k], in_uuid_text[k]);
  }
}

static struct sample run_ulid_encode(double seconds, void *arg) {
  (void)arg;
  char out[IDGEN_ULID_STRLEN + 1];
  TIMED_LOOP(seconds, {
    idgen_ulid_format(&in_ulid[i % NINPUTS], out);
    acc += (uint64_t)out[25];
  });
}

static struct sample run_ulid_decode(double seconds, void *arg) {
  (void)arg;
  idgen_ulid_t u;
  TIMED_LOOP(seconds, {
    idgen_ulid_parse(&u, in_ulid_text[i % NINPUTS], IDGEN_ULID_STRLEN, IDGEN_ULID_STRICT, NULL, 0);
    acc += u.bytes[15];
  });
}

static struct sample run_ulid_new(double seconds, void *arg) {
  idgen_clock_mode_t mode = *(const idgen_clock_mode_t *)arg;
  idgen_ulid_t u;
  char out[IDGEN_ULID_STRLEN + 1];
  TIMED_LOOP(seconds, {
    idgen_ulid_make(&u, idgen_clock_now_ms(mode), NULL);
    idgen_ulid_format(&u, out);
    acc += (uint64_t)out[25];
  });
}

static struct sample run_ulid_mono(double seconds, void *arg) {
  idgen_gen128_settings_t s = {*(const idgen_clock_mode_t *)arg, NULL, NULL};
  idgen_ulid_gen_t *g;
  idgen_ulid_t u;
  char out[IDGEN_ULID_STRLEN + 1];
  struct sample r;
  idgen_ulid_gen_new(&g, &s);
  TIMED(r, seconds, {
    idgen_ulid_gen_next(g, &u);
    idgen_ulid_format(&u, out);
    acc += (uint64_t)out[25];
  });
  idgen_ulid_gen_free(g);
  return r;
}

static struct sample run_uuid7_new(double seconds, void *arg) {
  (void)arg;
  idgen_uuid_t u;
  TIMED_LOOP(seconds, {
    idgen_uuid7_make(&u);
    acc += u.bytes[15];
  });
}

static struct sample run_uuid7_gen(double seconds, void *arg) {
  idgen_gen128_settings_t s = {*(const idgen_clock_mode_t *)arg, NULL, NULL};
  idgen_uuid7_gen_t *g;
  idgen_uuid_t u;
  struct sample r;
  idgen_uuid7_gen_new(&g, &s);
  TIMED(r, seconds, {
    idgen_uuid7_gen_next(g, &u);
    acc += u.bytes[15];
  });
  idgen_uuid7_gen_free(g);
  return r;
}

static struct sample run_uuid_format(double seconds, void *arg) {
  (void)arg;
  char out[IDGEN_UUID_STRLEN + 1];
  TIMED_LOOP(seconds, {
    idgen_uuid_format(&in_uuid[i % NINPUTS], out);
    acc += (uint64_t)out[35];
  });
}

static struct sample run_uuid_parse(double seconds, void *arg) {
  (void)arg;
  idgen_uuid_t u;
  TIMED_LOOP(seconds, {
    idgen_uuid_parse(&u, in_uuid_text[i % NINPUTS], IDGEN_UUID_STRLEN, NULL, 0);
    acc += u.bytes[15];
  });
}

/* The same codecs at a lower SIMD level: what CPUs without AVX-512 VBMI
 * (AVX2) or without either (scalar) get. */
static struct sample run_at_level(double seconds, bench_fn fn, int level) {
  idgen__simd_enable(level);
  struct sample r = fn(seconds, NULL);
  idgen__simd_enable(IDGEN__SIMD_VBMI);
  return r;
}
static struct sample run_scalar(double seconds, void *arg) {
  return run_at_level(seconds, (bench_fn)arg, IDGEN__SIMD_OFF);
}
static struct sample run_avx2(double seconds, void *arg) {
  return run_at_level(seconds, (bench_fn)arg, IDGEN__SIMD_AVX2);
}

static struct sample run_random10(double seconds, void *arg) {
  (void)arg;
  uint8_t b[10];
  TIMED_LOOP(seconds, {
    idgen_random_bytes(b, sizeof b);
    acc += b[9];
  });
}

enum {
  OP_ULID_ENCODE,
  OP_ULID_DECODE,
  OP_ULID_MONOTONIC,
  OP_UUID_FORMAT,
  OP_UUID_PARSE,
  OP_UUID7_MONOTONIC
};

/* The codec operation `which` names, or -1.  "-scalar" after a decoder's
 * name: the same on the scalar path (the SIMD level in use otherwise: under
 * valgrind, which hides AVX-512, that is AVX2). */
static int codec_op(const char *which, int *scalar) {
  static const struct {
    const char *name;
    int op, scalar;
  } ops[] = {{"ulid-encode", OP_ULID_ENCODE, 0},        {"ulid-decode", OP_ULID_DECODE, 0},
             {"ulid-decode-scalar", OP_ULID_DECODE, 1}, {"ulid-monotonic", OP_ULID_MONOTONIC, 0},
             {"uuid-format", OP_UUID_FORMAT, 0},        {"uuid-parse", OP_UUID_PARSE, 0},
             {"uuid-parse-scalar", OP_UUID_PARSE, 1},   {"uuid7-monotonic", OP_UUID7_MONOTONIC, 0}};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
    if (strcmp(which, ops[k].name) == 0) {
      *scalar = ops[k].scalar;
      return ops[k].op;
    }
  return -1;
}

/* Exactly `ops` operations of one kind, for instruction counting. */
static int fixed_ops(long ops, const char *which) {
  struct gen_arg wide = {WIDE, IDGEN_CLOCK_FAST, 1000, 1, 0};
  int op, scalar = 0;
  uint64_t acc = 0, buf[1000], v[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  idgen_layout_t l;
  idgen_layout_parse(&l, "twitter", NULL, 0);
  if (which == NULL)
    which = "next";
  if (strcmp(which, "next") == 0 || strcmp(which, "next-precise") == 0) {
    if (which[4] == '-')
      wide.mode = IDGEN_CLOCK_PRECISE;
    idgen_snowflake_gen_t *g = make_gen(&wide);
    for (long i = 0; i < ops; i++) {
      uint64_t id;
      idgen_snowflake_gen_next(g, &id);
      acc += id;
    }
    idgen_snowflake_gen_free(g);
  } else if (strcmp(which, "next_n") == 0) {
    idgen_snowflake_gen_t *g = make_gen(&wide);
    for (long i = 0; i < ops; i += 1000) {
      idgen_snowflake_gen_next_n(g, buf, 1000);
      acc += buf[999];
    }
    idgen_snowflake_gen_free(g);
  } else if (strcmp(which, "decompose") == 0) {
    for (long i = 0; i < ops; i++) {
      int64_t ms;
      idgen_layout_decompose(&l, UINT64_C(910499571847892992) + (uint64_t)i, v, &ms);
      acc += v[3] + (uint64_t)ms;
    }
  } else if (strcmp(which, "compose") == 0) {
    for (long i = 0; i < ops; i++) {
      uint64_t id;
      v[3] = (uint64_t)i & 4095;
      idgen_layout_compose(&l, 1505914988849 + i, v, &id, NULL, 0);
      acc += id;
    }
  } else if ((op = codec_op(which, &scalar)) >= 0) {
    make_inputs();
    idgen_ulid_t u = {{0}};
    idgen_uuid_t vv = {{0}};
    char text[40] = "";
    idgen_ulid_gen_t *ug = NULL;
    idgen_uuid7_gen_t *vg = NULL;
    idgen_ulid_gen_new(&ug, NULL);
    idgen_uuid7_gen_new(&vg, NULL);
    if (scalar)
      idgen__simd_enable(IDGEN__SIMD_OFF);
    for (long i = 0; i < ops; i++) {
      switch (op) { /* decided once: the count is the operation's, not the choice's */
      case OP_ULID_ENCODE:
        idgen_ulid_format(&in_ulid[i % NINPUTS], text);
        break;
      case OP_ULID_DECODE:
        idgen_ulid_parse(&u, in_ulid_text[i % NINPUTS], 26, IDGEN_ULID_STRICT, NULL, 0);
        break;
      case OP_ULID_MONOTONIC:
        idgen_ulid_gen_next(ug, &u);
        break;
      case OP_UUID_FORMAT:
        idgen_uuid_format(&in_uuid[i % NINPUTS], text);
        break;
      case OP_UUID_PARSE:
        idgen_uuid_parse(&vv, in_uuid_text[i % NINPUTS], 36, NULL, 0);
        break;
      default:
        idgen_uuid7_gen_next(vg, &vv);
        break;
      }
      acc += (uint64_t)text[0] + u.bytes[15] + vv.bytes[15];
    }
    idgen__simd_enable(IDGEN__SIMD_VBMI);
    idgen_ulid_gen_free(ug);
    idgen_uuid7_gen_free(vg);
  } else {
    fprintf(stderr, "idgen: bench: --ops takes --only next, next-precise, next_n, compose, "
                    "decompose, ulid-encode, ulid-decode, ulid-decode-scalar, ulid-monotonic, "
                    "uuid-format, uuid-parse, uuid-parse-scalar or uuid7-monotonic\n");
    return 2;
  }
  sink = acc;
  printf("%ld %s operations\n", ops, which);
  return 0;
}

/* The latency of single takes (cached) or next() calls, one thread, while
 * the filler runs: each call timed with the TSC, `n` calls. */
static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void latency(const char *name, const struct opts *o, const char *layout, int cached) {
  if (o->only != NULL && strstr(name, o->only) == NULL)
    return;
  struct gen_arg a = {layout, IDGEN_CLOCK_FAST, 1000, 1, 0, NULL, cached};
  idgen_snowflake_gen_t *g = make_gen(&a);
  idgen_cached_gen_t *c = NULL;
  if (cached && idgen_cached_gen_new(&c, g, NULL, NULL, 0) < 0)
    exit(1);
  enum { N = 2000000 };
  uint64_t *t = malloc(N * sizeof *t), acc = 0;
  double ns_per_tick = 1.0;
  {
    double w0 = mono();
    uint64_t c0 = __builtin_ia32_rdtsc();
    while (mono() - w0 < 0.05) {
    }
    ns_per_tick = (mono() - w0) * 1e9 / (double)(__builtin_ia32_rdtsc() - c0);
  }
  for (int i = 0; i < N; i++) {
    uint64_t id, t0 = __builtin_ia32_rdtsc();
    int rc = c ? idgen_cached_gen_take(c, &id) : idgen_snowflake_gen_next(g, &id);
    t[i] = __builtin_ia32_rdtsc() - t0;
    if (rc < 0)
      abort();
    acc += id;
  }
  sink = acc;
  qsort(t, N, sizeof *t, cmp_u64);
  printf("%-34s p50 %6.1f ns  p99 %6.1f ns  p99.9 %7.1f ns  max %9.1f ns  (%d calls, TSC)\n", name,
         (double)t[N / 2] * ns_per_tick, (double)t[N / 100 * 99] * ns_per_tick,
         (double)t[N / 1000 * 999] * ns_per_tick, (double)t[N - 1] * ns_per_tick, N);
  fflush(stdout);
  free(t);
  idgen_cached_gen_free(c);
  idgen_snowflake_gen_free(g);
}

/* Seed 003's own settings under a burst: after an idle spell the ring holds
 * the seconds that went unused, where the generator alone makes 8192 IDs a
 * second (plus max_borrow_ms ahead) and must wait for the next second. */
#define BAIDU "time:29@1s,worker:21,sequence:13,epoch=1474300800000"
static void burst(const struct opts *o) {
  const char *name = "cached burst baidu";
  if (o->only != NULL && strstr(name, o->only) == NULL)
    return;
  enum { BURST = 50000 };
  struct gen_arg a = {BAIDU, IDGEN_CLOCK_FAST, 1000, 1, 0, NULL, 1};
  idgen_snowflake_gen_t *g = make_gen(&a);
  idgen_cached_gen_t *c = NULL;
  if (idgen_cached_gen_new(&c, g, NULL, NULL, 0) < 0)
    exit(1);
  idgen_cached_stats_t st;
  double w0 = mono();
  do { /* the ring fills a second's IDs each second */
    struct timespec ts = {0, 100000000};
    nanosleep(&ts, NULL);
    idgen_cached_gen_stats(c, &st);
  } while (st.ready < BURST && mono() - w0 < 10);
  uint64_t id, acc = 0;
  double t0 = mono();
  int n = 0;
  for (; n < BURST; n++) {
    if (idgen_cached_gen_take(c, &id) < 0)
      break;
    acc += id;
  }
  double tc = mono() - t0;
  idgen_cached_gen_stats(c, &st);
  printf("%-34s %d IDs in %8.3f ms after %.1f s idle (ring %llu, oldest %lld ms old)\n", name, n,
         tc * 1e3, t0 - w0, (unsigned long long)st.slots, (long long)st.age_max_ms);
  idgen_cached_gen_free(c);
  idgen_snowflake_gen_free(g);
  /* The generator alone, the same burst: it waits for each next second
   * (max_wait_ms raised so that it waits rather than refuse). */
  idgen_layout_t l;
  idgen_snowflake_settings_t s;
  idgen_layout_parse(&l, BAIDU, NULL, 0);
  idgen_snowflake_settings_init(&s);
  s.max_wait_ms = 10000;
  if (idgen_snowflake_gen_new(&g, &l, &s, NULL, 0) < 0)
    exit(1);
  t0 = mono();
  for (n = 0; n < BURST; n++) {
    if (idgen_snowflake_gen_next(g, &id) < 0)
      break;
    acc += id;
  }
  double tu = mono() - t0;
  sink = acc;
  printf("%-34s %d IDs in %8.3f ms (8192 a second, 1 s borrowed): %.0fx the cached time\n",
         "  uncached, the same burst", n, tu * 1e3, tu / tc);
  fflush(stdout);
  idgen_snowflake_gen_free(g);
}

int idgen_bench_main(int argc, char **argv) {
  static const struct option lopts[] = {{"runs", required_argument, 0, 'r'},
                                        {"seconds", required_argument, 0, 's'},
                                        {"twitter-seconds", required_argument, 0, 't'},
                                        {"quick", no_argument, 0, 'q'},
                                        {"only", required_argument, 0, 'o'},
                                        {"ops", required_argument, 0, 'O'},
                                        {"threads", required_argument, 0, 'T'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  struct opts o = {0, 0, 5, 0.5, 10.0, NULL};
  int c;
  optind = 1;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
    switch (c) {
    case 'r':
      o.runs = atoi(optarg);
      break;
    case 's':
      o.seconds = atof(optarg);
      break;
    case 't':
      o.twitter_seconds = atof(optarg);
      break;
    case 'q':
      o.runs = 3;
      o.seconds = 0.2;
      o.twitter_seconds = 1.0;
      break;
    case 'o':
      o.only = optarg;
      break;
    case 'O':
      o.ops = atol(optarg);
      break;
    case 'T':
      o.threads = atoi(optarg);
      if (o.threads < 1 || o.threads > MAX_THREADS) {
        fprintf(stderr, "idgen: bench: --threads must be 1..%d\n", MAX_THREADS);
        return 2;
      }
      break;
    case 'h':
      fputs(usage, stdout);
      return 0;
    default:
      fprintf(stderr,
              "idgen: bench: unknown option or missing value: %s (see 'idgen bench --help')\n",
              argv[optind - 1]);
      return 2;
    }
  }
  if (o.runs < 1 || o.runs > 64 || o.seconds <= 0 || o.twitter_seconds <= 0) {
    fprintf(stderr, "idgen: bench: --runs must be 1..64 and the durations positive\n");
    return 2;
  }

  if (o.ops > 0)
    return fixed_ops(o.ops, o.only);
  if (o.threads > 0)
    return thread_sweep(&o);
  char cpu[160], clocksource[64];
  bench_machine(cpu, sizeof cpu, clocksource, sizeof clocksource);
  printf("idgen %s bench: median of %d runs of %.1f s; CPU %s (%ld cores); clocksource %s; "
         "TSC fast clock %s; SIMD codecs: %s\n",
         idgen_version(), o.runs, o.seconds, cpu, sysconf(_SC_NPROCESSORS_ONLN), clocksource,
         idgen__clock_fast_available() ? "available" : "not available",
         idgen__simd_name(idgen__simd_available()));
  struct opts all = o;
  all.only = NULL;
  double floor_rate = measure("clock_gettime(CLOCK_REALTIME) loop", &all, run_clock, NULL,
                              o.seconds, 0, "(the floor)");
  static const idgen_clock_mode_t fast = IDGEN_CLOCK_FAST, precise = IDGEN_CLOCK_PRECISE,
                                  coarse = IDGEN_CLOCK_COARSE;
  /* each mode's own clock read, the floor of its generators' figures */
  double fast_floor = measure("clock read loop, fast (TSC)", &all, run_clock_mode, (void *)&fast,
                              o.seconds, 0, "(the fast modes' floor)");
  double coarse_floor = measure("clock read loop, coarse", &all, run_clock_mode, (void *)&coarse,
                                o.seconds, 0, "(the coarse modes' floor)");
  int64_t lag_med, lag_max;
  coarse_lag(2000000, &lag_med, &lag_max);
  printf("coarse clock: resolution %.1f ms; behind the precise clock by %" PRId64
         " ms (median), %" PRId64 " ms (most) over 2,000,000 reads\n",
         (double)idgen_clock_coarse_resolution_ns() / 1e6, lag_med, lag_max);

  struct gen_arg wide1 = {WIDE, IDGEN_CLOCK_FAST, 1000, 1, 0};
  struct gen_arg wide1p = {WIDE, IDGEN_CLOCK_PRECISE, 1000, 1, 0};
  struct gen_arg wide2 = {WIDE, IDGEN_CLOCK_FAST, 1000, 2, 0};
  struct gen_arg wide2p = {WIDE, IDGEN_CLOCK_PRECISE, 1000, 2, 0};
  struct gen_arg batch = {WIDE, IDGEN_CLOCK_FAST, 1000, 1, 1000};
  measure("next wide 1 thread fast-clock", &o, run_gen, &wide1, o.seconds, floor_rate, NULL);
  measure("next wide 1 thread precise-clock", &o, run_gen, &wide1p, o.seconds, floor_rate, NULL);
  struct gen_arg wide1c = {WIDE, IDGEN_CLOCK_COARSE, 1000, 1, 0};
  measure("next wide 1 thread coarse-clock", &o, run_gen, &wide1c, o.seconds, floor_rate, NULL);
  measure("next wide 2 threads fast-clock", &o, run_gen, &wide2, o.seconds, floor_rate,
          "(both threads together)");
  measure("next wide 2 threads precise-clock", &o, run_gen, &wide2p, o.seconds, floor_rate,
          "(both threads together)");
  measure("next_n(1000) wide", &o, run_gen, &batch, o.seconds, floor_rate, NULL);
  /* The cached generator (Baidu's CachedUidGenerator claims 6 M UIDs/s): a
   * take against next() on the same layout, 18 sequence bits (262 M IDs/s
   * possible, so that the layout is not the limit), in alternating runs. */
  struct gen_arg nx1 = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, 1, 0, NULL, 0};
  struct gen_arg ca1 = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, 1, 0, NULL, 1};
  struct gen_arg nx2 = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, 2, 0, NULL, 0};
  struct gen_arg ca2 = {CACHED_LAYOUT, IDGEN_CLOCK_FAST, 1000, 2, 0, NULL, 1};
  measure_pair("cached take 1 thread", &o, run_gen, &nx1, &ca1, "next", "cached take");
  measure_pair("cached take 2 threads", &o, run_gen, &nx2, &ca2, "next", "cached take");
  latency("cached: latency of next()", &o, CACHED_LAYOUT, 0);
  latency("cached: latency of a take", &o, CACHED_LAYOUT, 1);
  burst(&o);
  /* A generator bound to a lease (file: in a fresh directory) against the
   * same layout unbound: the mark is kept ahead off the hot path. */
  char regdir[] = "/tmp/idgen-bench-XXXXXX", reguri[64];
  if (mkdtemp(regdir) != NULL) {
    snprintf(reguri, sizeof reguri, "file:%s", regdir);
    struct gen_arg un1 = {WIDE_LEASED, IDGEN_CLOCK_FAST, 1000, 1, 0, NULL};
    struct gen_arg bd1 = {WIDE_LEASED, IDGEN_CLOCK_FAST, 1000, 1, 0, reguri};
    struct gen_arg un2 = {WIDE_LEASED, IDGEN_CLOCK_FAST, 1000, 2, 0, NULL};
    struct gen_arg bd2 = {WIDE_LEASED, IDGEN_CLOCK_FAST, 1000, 2, 0, reguri};
    measure_pair("next 1 thread, bound to file:", &o, run_gen, &un1, &bd1, "unbound", "bound");
    measure_pair("next 2 threads, bound to file:", &o, run_gen, &un2, &bd2, "unbound", "bound");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", regdir);
    if (system(cmd) != 0)
      fprintf(stderr, "idgen: bench: could not remove %s\n", regdir);
  }
  measure("compose twitter", &o, run_compose, NULL, o.seconds, 0, NULL);
  measure("decompose twitter", &o, run_decompose, NULL, o.seconds, 0, NULL);

  make_inputs();
  measure("random 10 bytes", &o, run_random10, NULL, o.seconds, 0, NULL);
  measure("ulid encode", &o, run_ulid_encode, NULL, o.seconds, 0, NULL);
  measure("ulid decode (strict, validating)", &o, run_ulid_decode, NULL, o.seconds, 0, NULL);
  /* "clock +N ns": against the loop of the clock read the generator makes */
  measure("ulid new+encode fast-clock", &o, run_ulid_new, (void *)&fast, o.seconds, -fast_floor,
          NULL);
  measure("ulid new+encode precise-clock", &o, run_ulid_new, (void *)&precise, o.seconds,
          -floor_rate, NULL);
  measure("ulid monotonic+encode fast-clock", &o, run_ulid_mono, (void *)&fast, o.seconds,
          -fast_floor, NULL);
  measure("ulid monotonic+encode precise-clock", &o, run_ulid_mono, (void *)&precise, o.seconds,
          -floor_rate, NULL);
  measure("ulid monotonic+encode coarse-clock", &o, run_ulid_mono, (void *)&coarse, o.seconds,
          -coarse_floor, NULL);
  measure("uuid7 new (fast clock)", &o, run_uuid7_new, NULL, o.seconds, -fast_floor, NULL);
  measure("uuid7 monotonic fast-clock", &o, run_uuid7_gen, (void *)&fast, o.seconds, -fast_floor,
          NULL);
  measure("uuid7 monotonic precise-clock", &o, run_uuid7_gen, (void *)&precise, o.seconds,
          -floor_rate, NULL);
  measure("uuid7 monotonic coarse-clock", &o, run_uuid7_gen, (void *)&coarse, o.seconds,
          -coarse_floor, NULL);
  measure("uuid format", &o, run_uuid_format, NULL, o.seconds, 0, NULL);
  measure("uuid parse", &o, run_uuid_parse, NULL, o.seconds, 0, NULL);
  if (idgen__simd_available() >= IDGEN__SIMD_VBMI) {
    measure("ulid decode, AVX2 path", &o, run_avx2, (void *)run_ulid_decode, o.seconds, 0, NULL);
    measure("uuid parse, AVX2 path", &o, run_avx2, (void *)run_uuid_parse, o.seconds, 0, NULL);
  }
  if (idgen__simd_available() >= IDGEN__SIMD_AVX2) {
    measure("ulid decode, scalar path", &o, run_scalar, (void *)run_ulid_decode, o.seconds, 0,
            NULL);
    measure("uuid parse, scalar path", &o, run_scalar, (void *)run_uuid_parse, o.seconds, 0, NULL);
  }

  struct gen_arg tw = {"twitter", IDGEN_CLOCK_FAST, 0, 1, 0};
  char note[128];
  snprintf(note, sizeof note, "(%.0f s runs; the layout's limit is 4.096 M/s)", o.twitter_seconds);
  double r = measure("next twitter max_borrow_ms=0", &o, run_gen, &tw, o.twitter_seconds, 0, note);
  if (r > 0)
    printf("%-34s %.2f%% of 4,096,000 IDs/s\n", "  twitter sustained", 100.0 * r / 4096000.0);
  return 0;
}
