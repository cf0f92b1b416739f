/*
 * peers.c -- idgen beside the two peers issue 16 names, in one process:
 * yitter/IdGenerator's C port (its classic method, SnowWorkerM2) and
 * skeeto/ulid-c (ulid_generate), with two floors: a bare
 * clock_gettime(CLOCK_REALTIME) loop and one rdtsc plus one atomic
 * fetch_add on a shared counter; and two for the precise mode: the clock read
 * plus one fetch_add (what a take locked on every call costs) and the clock
 * read under a pthread mutex (yitter's locking).  idgen's precise mode is
 * measured twice: as a program uses it (its first caller owns the generator
 * and takes without the lock prefix, DESIGN §1), and with every take locked,
 * as a generator that threads share.
 *
 * Built and run by bench/peers.sh, which compiles the peers from their own
 * public sources (no peer code lives in this repository) and links this file
 * against them and against the project's static libidgen.
 *
 * Method.  Every contender runs once per round for the same wall-clock
 * duration; rounds are interleaved (each round visits every contender, the
 * starting point rotating from round to round), so the machine's drift falls
 * on all of them alike.  A figure is the median of the rounds' rates; a ratio
 * is the ratio of two medians, and the range beside it is the spread of the
 * same ratio taken round by round (the two runs of a pair are seconds apart).
 * Before round 1 every contender runs once untimed (warm-up), after the fast
 * clock has finished calibrating.  Every timed loop adds something of each
 * result to a local accumulator, written to a volatile once at the end (as
 * bench/bench.c does); the contenders are calls into separately compiled
 * archives, which the compiler cannot elide.  Nothing is pinned: the
 * scheduler places the one thread as it does for the daemon.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"
/* The private header (libidgen.a has its functions): the codecs' SIMD level
 * in use, and a cap on it, as bench.c's "scalar path" rows use them. */
#include "core_int.h"

/* The peers' own headers, from the sources bench/peers.sh was given. */
#include "YitIdHelper.h"
#include "ulid.h"

#include "machine.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define HAVE_RDTSC 1
#else
#define HAVE_RDTSC 0
#endif

static const char usage[] =
    "Usage: peers [--threaded] [--runs N] [--seconds S] [--yitter-rev REV]\n"
    "             [--skeeto-rev REV] [--peer-cflags FLAGS]\n"
    "\n"
    "idgen beside yitter/IdGenerator (C, classic method) and skeeto/ulid-c, and two\n"
    "floors, in one process: interleaved rounds, the median of N. Normally run by\n"
    "bench/peers.sh, which builds the peers and this program.\n"
    "\n"
    "  --threaded          start (and join) a second thread first, so that the process\n"
    "                      is multi-threaded, as a server is: glibc's mutexes (yitter's)\n"
    "                      then use locked instructions\n"
    "  --runs N            rounds (default 7)\n"
    "  --seconds S         length of each timed run (default 0.5)\n"
    "  --yitter-rev REV    --skeeto-rev REV   --peer-cflags FLAGS\n"
    "                      shown in the header (what the script built)\n"
    "  -h, --help          show this help\n";

/* Snowflake: 41 bits of milliseconds from the Twitter epoch (good until 2080),
 * 22 bits of sequence, as in issue 16 and bench/bench.c's "wide" layout. */
#define EPOCH_MS INT64_C(1288834974657)
#define LAYOUT "time:41@1ms,sequence:22,epoch=1288834974657"
/* yitter allows WorkerIdBitLength >= 1 and WorkerIdBitLength + SeqBitLength
 * <= 22, SeqBitLength <= 21: the nearest to time:41,sequence:22 is one worker
 * bit (worker 0) and 21 sequence bits.  The time field sits at the same bit
 * (22) from the same epoch; 2^21 - 5 IDs per ms never limits a single thread
 * (about 50 000 a ms here). */
#define YITTER_WORKER_BITS 1
#define YITTER_SEQ_BITS 21

#define MAXRUNS 64

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "peers: %s failed: %s\n", what, rc < 0 ? idgen_strerror(rc) : "");
  exit(1);
}

/* ---- the contenders -------------------------------------------------- */

static idgen_snowflake_gen_t *sf_fast, *sf_precise, *sf_precise_locked;
/* libidgen's internal switch (src/core/bias.c): 0 = generators made from
 * now on get no owner, every take locked.  For the "locked" row only. */
void idgen__bias_enable(int on);
static idgen_ulid_gen_t *ulid_fast, *ulid_coarse;
static idgen_uuid7_gen_t *uuid7_fast, *uuid7_coarse;
static struct ulid_generator skeeto;
static _Atomic uint64_t shared_counter;

static struct sample run_clock(double seconds) {
  TIMED_LOOP(seconds, {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    acc += (uint64_t)ts.tv_nsec;
  });
}

/* The precise mode's floors: the clock to ms, as the generators use it, then
 * one fetch_add; or the same under a mutex, as yitter takes its lock. */
static pthread_mutex_t floor_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t floor_plain;
static inline int64_t realtime_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static struct sample run_clock_xadd(double seconds) {
  TIMED_LOOP(seconds, {
    int64_t ms = realtime_ms();
    acc += (uint64_t)ms + atomic_fetch_add(&shared_counter, 1);
  });
}
static struct sample run_clock_mutex(double seconds) {
  TIMED_LOOP(seconds, {
    int64_t ms = realtime_ms();
    pthread_mutex_lock(&floor_mu);
    uint64_t v = floor_plain++;
    pthread_mutex_unlock(&floor_mu);
    acc += (uint64_t)ms + v;
  });
}

static struct sample run_coarse(double seconds) {
  TIMED_LOOP(seconds, {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    acc += (uint64_t)ts.tv_nsec;
  });
}

#if HAVE_RDTSC
static struct sample run_rdtsc_xadd(double seconds) {
  TIMED_LOOP(seconds, {
    uint64_t t = __rdtsc();
    acc += t + atomic_fetch_add(&shared_counter, 1);
  });
}
#endif

static struct sample run_sf(double seconds, idgen_snowflake_gen_t *g) {
  TIMED_LOOP(seconds, {
    uint64_t id;
    int rc = idgen_snowflake_gen_next(g, &id);
    if (rc < 0)
      die("idgen_snowflake_gen_next", rc);
    acc += id;
  });
}
static struct sample run_sf_fast(double s) { return run_sf(s, sf_fast); }
static struct sample run_sf_precise(double s) { return run_sf(s, sf_precise); }
static struct sample run_sf_precise_locked(double s) { return run_sf(s, sf_precise_locked); }

static struct sample run_yitter(double seconds) {
  TIMED_LOOP(seconds, { acc += (uint64_t)NextId(); });
}

/* The fast clock's read, as the generators make it: the floor of their
 * "clock + N ns" (a TSC read and a compare, not clock_gettime). */
static struct sample run_fast_clock(double seconds) {
  TIMED_LOOP(seconds, { acc += (uint64_t)idgen_clock_now_ms(IDGEN_CLOCK_FAST); });
}
/* The coarse clock's read, as the generators make it (through
 * idgen_clock_now_ms): the floor of COARSE's "clock + N ns".  skeeto's floor
 * is the bare clock_gettime call. */
static struct sample run_coarse_clock(double seconds) {
  TIMED_LOOP(seconds, { acc += (uint64_t)idgen_clock_now_ms(IDGEN_CLOCK_COARSE); });
}

static struct sample run_ulid_gen(double seconds, idgen_ulid_gen_t *g) {
  TIMED_LOOP(seconds, {
    idgen_ulid_t u;
    char text[IDGEN_ULID_STRLEN + 1];
    int rc = idgen_ulid_gen_next(g, &u);
    if (rc < 0)
      die("idgen_ulid_gen_next", rc);
    idgen_ulid_format(&u, text);
    acc += (uint64_t)(unsigned char)text[25] + (uint64_t)(unsigned char)text[9];
  });
}
static struct sample run_ulid(double s) { return run_ulid_gen(s, ulid_fast); }
static struct sample run_ulid_coarse(double s) { return run_ulid_gen(s, ulid_coarse); }

/* The same with the scalar codecs, which CPUs without AVX-512 VBMI run
 * (Intel before Ice Lake, AMD before Zen 4): only where the CPU has it, so
 * that this row differs from the one above. */
static struct sample run_ulid_scalar(double seconds) {
  idgen__simd_enable(IDGEN__SIMD_OFF);
  struct sample s = run_ulid(seconds);
  idgen__simd_enable(IDGEN__SIMD_VBMI);
  return s;
}

static struct sample run_skeeto(double seconds) {
  TIMED_LOOP(seconds, {
    char text[27];
    ulid_generate(&skeeto, text);
    acc += (uint64_t)(unsigned char)text[25] + (uint64_t)(unsigned char)text[9];
  });
}

/* skeeto's generator is not thread-safe: a program that shares one between
 * threads calls it under a lock, as here (free in a process with one thread,
 * where glibc skips the mutex's atomic instructions). */
static pthread_mutex_t skeeto_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sample run_skeeto_mutex(double seconds) {
  TIMED_LOOP(seconds, {
    char text[27];
    pthread_mutex_lock(&skeeto_mu);
    ulid_generate(&skeeto, text);
    pthread_mutex_unlock(&skeeto_mu);
    acc += (uint64_t)(unsigned char)text[25] + (uint64_t)(unsigned char)text[9];
  });
}

/* Two threads sharing one generator, for `seconds` each, started together:
 * the IDs of both over the longer of the two times.  Only in a --threaded
 * run (a one-thread process would stop being one).  The two threads may run
 * on every online CPU, whatever the process is pinned to: pinned to one,
 * they would take turns instead of contending. */
struct pair_arg {
  struct sample (*fn)(double);
  double seconds;
  pthread_barrier_t *start;
  struct sample s;
};
static void *pair_main(void *p) {
  struct pair_arg *a = p;
  pthread_barrier_wait(a->start);
  a->s = a->fn(a->seconds);
  return NULL;
}
static struct sample run_pair(double seconds, struct sample (*fn)(double)) {
  pthread_t th[2];
  pthread_barrier_t start;
  pthread_attr_t attr;
  cpu_set_t all;
  struct pair_arg a[2];
  CPU_ZERO(&all);
  for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; c++)
    CPU_SET((int)c, &all);
  pthread_attr_init(&attr);
  pthread_attr_setaffinity_np(&attr, sizeof all, &all);
  pthread_barrier_init(&start, NULL, 2);
  for (int i = 0; i < 2; i++) {
    a[i] = (struct pair_arg){fn, seconds, &start, {0, 0}};
    if (pthread_create(&th[i], &attr, pair_main, &a[i]) != 0) {
      fprintf(stderr, "peers: could not start a thread\n");
      exit(1);
    }
  }
  for (int i = 0; i < 2; i++)
    pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  pthread_attr_destroy(&attr);
  return (struct sample){a[0].s.ids + a[1].s.ids,
                         a[0].s.secs > a[1].s.secs ? a[0].s.secs : a[1].s.secs};
}
static struct sample run_ulid_pair(double s) { return run_pair(s, run_ulid); }
static struct sample run_skeeto_mutex_pair(double s) { return run_pair(s, run_skeeto_mutex); }

static struct sample run_uuid7_gen(double seconds, idgen_uuid7_gen_t *g) {
  TIMED_LOOP(seconds, {
    idgen_uuid_t u;
    int rc = idgen_uuid7_gen_next(g, &u);
    if (rc < 0)
      die("idgen_uuid7_gen_next", rc);
    acc += (uint64_t)u.bytes[15] + (uint64_t)u.bytes[7];
  });
}
static struct sample run_uuid7(double s) { return run_uuid7_gen(s, uuid7_fast); }
static struct sample run_uuid7_coarse(double s) { return run_uuid7_gen(s, uuid7_coarse); }
static struct sample run_ulid_coarse_pair(double s) { return run_pair(s, run_ulid_coarse); }

enum {
  C_CLOCK,
  C_COARSE,
  C_RDTSC,
  C_CLOCK_XADD,
  C_CLOCK_MUTEX,
  C_SF_FAST,
  C_SF_PRECISE,
  C_SF_PRECISE_LOCKED,
  C_YITTER,
  C_ULID,
  C_ULID_SCALAR,
  C_SKEETO,
  C_SKEETO_MUTEX,
  C_UUID7,
  C_ULID_PAIR,
  C_SKEETO_MUTEX_PAIR,
  C_FAST_CLOCK,
  C_ULID_COARSE,
  C_UUID7_COARSE,
  C_ULID_COARSE_PAIR,
  C_COARSE_CLOCK,
  NCONT
};

static const struct contender {
  const char *key;
  const char *name;
  struct sample (*fn)(double);
  int pair; /* two threads: --threaded runs only */
} cont[NCONT] = {
    [C_CLOCK] = {"clock", "clock_gettime(CLOCK_REALTIME) loop", run_clock},
    [C_COARSE] = {"clock_coarse", "clock_gettime(CLOCK_REALTIME_COARSE) loop", run_coarse},
#if HAVE_RDTSC
    [C_RDTSC] = {"rdtsc_fetch_add", "rdtsc + fetch_add (shared counter)", run_rdtsc_xadd},
#else
    [C_RDTSC] = {"rdtsc_fetch_add", "rdtsc + fetch_add (not x86: skipped)", NULL},
#endif
    [C_CLOCK_XADD] = {"clock_fetch_add", "clock_gettime + fetch_add (shared counter)",
                      run_clock_xadd},
    [C_CLOCK_MUTEX] = {"clock_mutex", "clock_gettime + pthread mutex", run_clock_mutex},
    [C_SF_FAST] = {"idgen_next_fast", "idgen next, fast clock", run_sf_fast},
    [C_SF_PRECISE] = {"idgen_next_precise", "idgen next, IDGEN_CLOCK_PRECISE", run_sf_precise},
    [C_SF_PRECISE_LOCKED] = {"idgen_next_precise_locked",
                             "idgen next, IDGEN_CLOCK_PRECISE, no owner (every take locked)",
                             run_sf_precise_locked},
    [C_YITTER] = {"yitter_m2", "yitter C NextId, Method 2 (classic)", run_yitter},
    [C_ULID] = {"idgen_ulid_mono_encode", "idgen ULID monotonic + encode", run_ulid},
    [C_ULID_SCALAR] = {"idgen_ulid_mono_encode_scalar",
                       "idgen ULID monotonic + encode, scalar codecs", run_ulid_scalar},
    [C_SKEETO] = {"skeeto_ulid_generate", "skeeto ulid_generate (26 chars)", run_skeeto},
    [C_SKEETO_MUTEX] = {"skeeto_ulid_generate_mutex", "skeeto ulid_generate under a mutex",
                        run_skeeto_mutex},
    [C_UUID7] = {"idgen_uuid7_mono", "idgen UUIDv7 monotonic", run_uuid7},
    [C_ULID_PAIR] = {"idgen_ulid_mono_encode_2t", "idgen ULID, 2 threads sharing one",
                     run_ulid_pair, 1},
    [C_SKEETO_MUTEX_PAIR] = {"skeeto_ulid_generate_mutex_2t",
                             "skeeto under a mutex, 2 threads sharing one", run_skeeto_mutex_pair,
                             1},
    [C_FAST_CLOCK] = {"fast_clock", "idgen fast clock read loop (TSC)", run_fast_clock},
    [C_ULID_COARSE] = {"idgen_ulid_mono_encode_coarse",
                       "idgen ULID monotonic + encode, IDGEN_CLOCK_COARSE", run_ulid_coarse},
    [C_UUID7_COARSE] = {"idgen_uuid7_mono_coarse", "idgen UUIDv7 monotonic, IDGEN_CLOCK_COARSE",
                        run_uuid7_coarse},
    [C_ULID_COARSE_PAIR] = {"idgen_ulid_mono_encode_coarse_2t",
                            "idgen ULID coarse, 2 threads sharing one", run_ulid_coarse_pair, 1},
    [C_COARSE_CLOCK] = {"coarse_clock", "idgen's coarse clock read", run_coarse_clock},
};

/* ---- set-up and sanity ----------------------------------------------- */

static void setup(void) {
  idgen_layout_t l;
  idgen_snowflake_settings_t s;
  char err[256];
  int rc;
  if ((rc = idgen_layout_parse(&l, LAYOUT, err, sizeof err)) < 0) {
    fprintf(stderr, "peers: layout: %s\n", err);
    exit(1);
  }
  idgen_snowflake_settings_init(&s); /* max_borrow_ms 1000, as bench/bench.c's "wide" */
  s.clock_mode = IDGEN_CLOCK_FAST;
  if ((rc = idgen_snowflake_gen_new(&sf_fast, &l, &s, err, sizeof err)) < 0) {
    fprintf(stderr, "peers: %s\n", err);
    exit(1);
  }
  s.clock_mode = IDGEN_CLOCK_PRECISE;
  if ((rc = idgen_snowflake_gen_new(&sf_precise, &l, &s, err, sizeof err)) < 0 ||
      (rc = idgen_snowflake_gen_new(&sf_precise_locked, &l, &s, err, sizeof err)) < 0) {
    fprintf(stderr, "peers: %s\n", err);
    exit(1);
  }
  /* Ownership is settled by a generator's first take. */
  uint64_t first;
  idgen__bias_enable(0);
  if ((rc = idgen_snowflake_gen_next(sf_precise_locked, &first)) < 0)
    die("idgen_snowflake_gen_next", rc);
  idgen__bias_enable(1);
  idgen_gen128_settings_t g = {.clock_mode = IDGEN_CLOCK_FAST};
  if ((rc = idgen_ulid_gen_new(&ulid_fast, &g)) < 0)
    die("idgen_ulid_gen_new", rc);
  if ((rc = idgen_uuid7_gen_new(&uuid7_fast, &g)) < 0)
    die("idgen_uuid7_gen_new", rc);
  g.clock_mode = IDGEN_CLOCK_COARSE; /* skeeto's clock: equal accuracy */
  if ((rc = idgen_ulid_gen_new(&ulid_coarse, &g)) < 0)
    die("idgen_ulid_gen_new", rc);
  if ((rc = idgen_uuid7_gen_new(&uuid7_coarse, &g)) < 0)
    die("idgen_uuid7_gen_new", rc);

  /* yitter's classic method.  Its options struct has no initialiser of its
   * own besides BuildIdGenOptions() (which picks Method 1). */
  IdGeneratorOptions yo = BuildIdGenOptions(0);
  yo.Method = 2;
  yo.BaseTime = (uint64_t)EPOCH_MS;
  yo.WorkerIdBitLength = YITTER_WORKER_BITS;
  yo.SeqBitLength = YITTER_SEQ_BITS;
  yo.MaxSeqNumber = 0; /* 2^SeqBitLength - 1 */
  yo.MinSeqNumber = 5; /* its minimum: 0..4 are reserved */
  SetIdGenerator(yo);

  /* skeeto's default flags: monotonic, RC4, CLOCK_REALTIME_COARSE. */
  if (ulid_generator_init(&skeeto, 0) != 0)
    fprintf(stderr, "peers: note: skeeto's generator fell back to userspace entropy\n");
}

static void sanity_fail(const char *what) {
  fprintf(stderr, "peers: sanity check failed: %s\n", what);
  exit(1);
}

/* Every generator makes what we think it makes: strictly increasing over
 * 10 000 calls, with a time field close to the wall clock. */
static void sanity(void) {
  enum { N = 10000 };
  uint64_t prev = 0, id = 0;
  int64_t t0 = now_ms();
  for (int k = 0; k < N; k++) {
    if (idgen_snowflake_gen_next(sf_fast, &id) < 0 || id <= prev)
      sanity_fail("idgen next (fast) not increasing");
    prev = id;
  }
  if (llabs((int64_t)(id >> 22) + EPOCH_MS - t0) > 1000)
    sanity_fail("idgen next (fast): time field far from the clock");
  prev = 0;
  for (int k = 0; k < N; k++) {
    id = (uint64_t)NextId();
    if (id <= prev)
      sanity_fail("yitter NextId not increasing");
    prev = id;
  }
  if (llabs((int64_t)(id >> (YITTER_WORKER_BITS + YITTER_SEQ_BITS)) + EPOCH_MS - t0) > 1000)
    sanity_fail("yitter NextId: time field far from the clock (layout not as configured?)");

  char a[27] = "", b[27];
  idgen_ulid_t u;
  for (int k = 0; k < N; k++) {
    if (idgen_ulid_gen_next(ulid_fast, &u) < 0)
      sanity_fail("idgen ULID");
    idgen_ulid_format(&u, b);
    if (strlen(b) != 26 || strcmp(b, a) <= 0)
      sanity_fail("idgen ULID text not increasing");
    memcpy(a, b, sizeof a);
  }
  if (llabs(idgen_ulid_time(&u) - t0) > 1000)
    sanity_fail("idgen ULID time far from the clock");
  a[0] = 0;
  for (int k = 0; k < N; k++) {
    ulid_generate(&skeeto, b);
    if (strlen(b) != 26 || strcmp(b, a) <= 0)
      sanity_fail("skeeto ULID text not increasing");
    memcpy(a, b, sizeof a);
  }
  unsigned char bin[16];
  if (ulid_decode(bin, b) != 0)
    sanity_fail("skeeto ULID does not decode");
  int64_t st = 0;
  for (int k = 0; k < 6; k++)
    st = st << 8 | bin[k];
  if (llabs(st - t0) > 1000)
    sanity_fail("skeeto ULID time far from the clock");
  idgen_uuid_t v, pv = {{0}};
  for (int k = 0; k < N; k++) {
    if (idgen_uuid7_gen_next(uuid7_fast, &v) < 0 || memcmp(v.bytes, pv.bytes, 16) <= 0)
      sanity_fail("idgen UUIDv7 not increasing");
    pv = v;
  }
  if (llabs(idgen_uuid7_time(&v) - t0) > 1000)
    sanity_fail("idgen UUIDv7 time far from the clock");
}

/* ---- measurement and report ------------------------------------------ */

static double rate[NCONT][MAXRUNS]; /* IDs/s, by round */
static double med[NCONT], lo[NCONT], hi[NCONT];

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n, double *mn, double *mx) {
  double s[MAXRUNS];
  memcpy(s, v, sizeof s[0] * (size_t)n);
  qsort(s, (size_t)n, sizeof s[0], cmp_double);
  if (mn)
    *mn = s[0];
  if (mx)
    *mx = s[n - 1];
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static int threaded; /* --threaded */
/* Whether contender c runs in this process. */
static int runs_here(int c) {
  return cont[c].fn != NULL && (!cont[c].pair || threaded) &&
         (c != C_ULID_SCALAR || idgen__simd_available() >= IDGEN__SIMD_VBMI);
}
static int have(int c) { return runs_here(c) && med[c] > 0; }
static double ns(int c) { return 1e9 / med[c]; }

/* idgen is better by this factor: the peer's time over idgen's (median over
 * median), with the round-by-round range of the same ratio. */
struct ratio {
  double v, rmin, rmax;
};
static struct ratio ratio(int idg, int peer, int runs) {
  double r[MAXRUNS];
  struct ratio x;
  for (int k = 0; k < runs; k++)
    r[k] = rate[idg][k] / rate[peer][k];
  median(r, runs, &x.rmin, &x.rmax);
  x.v = med[idg] / med[peer];
  return x;
}

static const char *met(int ok) { return ok ? "met" : "**not met**"; }

static void *idle_thread(void *arg) { return arg; }

int main(int argc, char **argv) {
  static const struct option lopts[] = {{"runs", required_argument, 0, 'r'},
                                        {"seconds", required_argument, 0, 's'},
                                        {"yitter-rev", required_argument, 0, 'y'},
                                        {"skeeto-rev", required_argument, 0, 'k'},
                                        {"peer-cflags", required_argument, 0, 'f'},
                                        {"threaded", no_argument, 0, 't'},
                                        {"help", no_argument, 0, 'h'},
                                        {0, 0, 0, 0}};
  int runs = 7, c;
  double seconds = 0.5;
  const char *yrev = "unknown", *krev = "unknown", *pflags = "unknown";
  while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
    switch (c) {
    case 'r':
      runs = atoi(optarg);
      break;
    case 's':
      seconds = atof(optarg);
      break;
    case 'y':
      yrev = optarg;
      break;
    case 'k':
      krev = optarg;
      break;
    case 'f':
      pflags = optarg;
      break;
    case 't':
      threaded = 1;
      break;
    case 'h':
      fputs(usage, stdout);
      return 0;
    default:
      fputs(usage, stderr);
      return 2;
    }
  }
  if (optind != argc || runs < 1 || runs > MAXRUNS || !(seconds > 0 && seconds <= 60)) {
    fprintf(stderr, "peers: --runs must be 1..%d and --seconds in (0, 60]\n", MAXRUNS);
    return 2;
  }

  if (threaded) {
    pthread_t th;
    if (pthread_create(&th, NULL, idle_thread, NULL) != 0 || pthread_join(th, NULL) != 0) {
      fprintf(stderr, "peers: could not start a thread\n");
      return 1;
    }
  }

  /* The fast clock calibrates on first use (about 20 ms): wait for it. */
  idgen_clock_stats_t cs0, cs1;
  double t = mono();
  idgen_clock_now_ms(IDGEN_CLOCK_FAST);
  do {
    idgen_clock_now_ms(IDGEN_CLOCK_FAST);
    idgen_clock_stats(&cs0);
  } while (cs0.state == IDGEN_CLOCK_STATE_CALIBRATING && mono() - t < 3.0);

  char cpu[160], clocksource[64];
  bench_machine(cpu, sizeof cpu, clocksource, sizeof clocksource);
  printf("idgen %s beside its peers: median of %d interleaved rounds of %.2f s\n", idgen_version(),
         runs, seconds);
  cpu_set_t set;
  int pinned = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  printf("CPU %s (%ld cores); running on CPU %d (%s); clocksource %s; TSC fast clock %s "
         "(state %s); SIMD codecs: %s\n",
         cpu, sysconf(_SC_NPROCESSORS_ONLN), sched_getcpu(),
         pinned == 1 ? "pinned" : "not pinned: the scheduler may move it", clocksource,
         cs0.state == IDGEN_CLOCK_STATE_UNAVAILABLE ? "not available" : "available",
         idgen_clock_state_name(cs0.state), idgen__simd_name(idgen__simd_available()));
  printf("peers: yitter/IdGenerator C %s, skeeto/ulid-c %s, built with %s; harness built "
         "with gcc %s\n",
         yrev, krev, pflags, __VERSION__);
  printf("layout %s; yitter Method 2, BaseTime %lld, WorkerIdBitLength %d, SeqBitLength %d\n",
         LAYOUT, (long long)EPOCH_MS, YITTER_WORKER_BITS, YITTER_SEQ_BITS);
  printf("process: %s\n\n",
         threaded ? "multi-threaded (a second thread was started first): glibc's mutexes use "
                    "locked instructions, as in a server"
                  : "one thread: glibc's mutexes (yitter's) skip their atomic instructions; "
                    "idgen's hot paths keep theirs (DESIGN §1)");
  fflush(stdout);

  setup();
  sanity();

  /* Warm-up: each contender once, untimed. */
  double warm = seconds < 0.2 ? seconds : 0.2;
  for (int k = 0; k < NCONT; k++)
    if (runs_here(k))
      cont[k].fn(warm);
  idgen_clock_stats(&cs0);

  for (int r = 0; r < runs; r++) {
    for (int j = 0; j < NCONT; j++) {
      int k = (j + r) % NCONT;
      if (!runs_here(k))
        continue;
      struct sample s = cont[k].fn(seconds);
      rate[k][r] = s.ids / s.secs;
    }
    fprintf(stderr, "peers: round %d/%d done\n", r + 1, runs);
  }
  idgen_clock_stats(&cs1);

  for (int k = 0; k < NCONT; k++)
    if (runs_here(k))
      med[k] = median(rate[k], runs, &lo[k], &hi[k]);

  /* All figures, one per contender. */
  printf("%-44s %9s %11s   %s\n", "contender", "ns/op", "M ops/s", "[min, max M/s]");
  for (int k = 0; k < NCONT; k++) {
    if (!have(k)) {
      printf("%-44s %9s\n", cont[k].name, "-");
      continue;
    }
    printf("%-44s %9.2f %11.2f   [%.2f, %.2f]\n", cont[k].name, ns(k), med[k] / 1e6, lo[k] / 1e6,
           hi[k] / 1e6);
  }
  if (cs0.state != IDGEN_CLOCK_STATE_FAST || cs1.state != IDGEN_CLOCK_STATE_FAST ||
      cs1.fallbacks != cs0.fallbacks || cs1.cooldowns != cs0.cooldowns)
    printf("\nNOTE: the fast clock was not on throughout (state %s -> %s, %llu rejections, "
           "%llu cool-downs during the runs): its figures are those of the precise clock in "
           "part\n",
           idgen_clock_state_name(cs0.state), idgen_clock_state_name(cs1.state),
           (unsigned long long)(cs1.fallbacks - cs0.fallbacks),
           (unsigned long long)(cs1.cooldowns - cs0.cooldowns));

  /* The table for docs/BENCHMARKS.md. */
  struct ratio sf_y = ratio(C_SF_FAST, C_YITTER, runs);
  struct ratio sf_c = ratio(C_SF_FAST, C_CLOCK, runs);
  struct ratio sp_y = ratio(C_SF_PRECISE, C_YITTER, runs);
  struct ratio ul_k = ratio(C_ULID, C_SKEETO, runs);
  struct ratio ul_km = ratio(C_ULID, C_SKEETO_MUTEX, runs);
  /* above the clock read each generator makes: the fast clock's */
  double ul_above = ns(C_ULID) - ns(C_FAST_CLOCK);
  double u7_above = ns(C_UUID7) - ns(C_FAST_CLOCK);
  struct ratio uc_k = ratio(C_ULID_COARSE, C_SKEETO, runs);
  struct ratio vc_k = ratio(C_UUID7_COARSE, C_SKEETO, runs);
  printf("\n%s process:\n\n| operation | idgen | peer or floor, same run | ratio (>1 = idgen "
         "better) | target |\n|---|---|---|---|---|\n",
         threaded ? "Multi-threaded" : "One-thread");
  printf("| floor: bare `clock_gettime(CLOCK_REALTIME)` loop | | %.1f ns (%.1f M/s) | | |\n",
         ns(C_CLOCK), med[C_CLOCK] / 1e6);
  if (have(C_RDTSC))
    printf("| floor: `rdtsc` + `fetch_add` on a shared counter | | %.1f ns (%.1f M/s) | | |\n",
           ns(C_RDTSC), med[C_RDTSC] / 1e6);
  printf("| floor: `clock_gettime` + `fetch_add` | | %.1f ns (%.1f M/s) | | |\n", ns(C_CLOCK_XADD),
         med[C_CLOCK_XADD] / 1e6);
  printf("| floor: `clock_gettime` + pthread mutex | | %.1f ns (%.1f M/s) | | |\n",
         ns(C_CLOCK_MUTEX), med[C_CLOCK_MUTEX] / 1e6);
  printf("| Snowflake `next`, 1 thread, `time:41,sequence:22` | %.1f ns (%.1f M/s) | "
         "yitter C (-O3, Method 2, worker:%d,sequence:%d) %.1f ns | %.2fx yitter (rounds "
         "%.2f-%.2f); %.2fx the clock loop |",
         ns(C_SF_FAST), med[C_SF_FAST] / 1e6, YITTER_WORKER_BITS, YITTER_SEQ_BITS, ns(C_YITTER),
         sf_y.v, sf_y.rmin, sf_y.rmax, sf_c.v);
  if (have(C_RDTSC)) {
    struct ratio sf_f = ratio(C_SF_FAST, C_RDTSC, runs);
    double x = ns(C_SF_FAST) / ns(C_RDTSC);
    printf(" %.2fx the time of `rdtsc + fetch_add` (rounds %.2f-%.2f) against <= 1.25x: %s |\n", x,
           1 / sf_f.rmax, 1 / sf_f.rmin, met(x <= 1.25));
  } else {
    printf(" (no rdtsc floor on this CPU) |\n");
  }
  printf("| same, `IDGEN_CLOCK_PRECISE` | %.1f ns (%.1f M/s) | yitter %.1f ns | %.2fx yitter "
         "(rounds %.2f-%.2f); %.2fx the time of `clock_gettime + fetch_add`; yitter %.2fx the "
         "time of `clock_gettime` + mutex | >= 1.00x yitter: %s |\n",
         ns(C_SF_PRECISE), med[C_SF_PRECISE] / 1e6, ns(C_YITTER), sp_y.v, sp_y.rmin, sp_y.rmax,
         ns(C_SF_PRECISE) / ns(C_CLOCK_XADD), ns(C_YITTER) / ns(C_CLOCK_MUTEX), met(sp_y.v >= 1.0));
  struct ratio spl_y = ratio(C_SF_PRECISE_LOCKED, C_YITTER, runs);
  printf("| same, no owner: every take locked (a generator shared by threads) | %.1f ns | "
         "yitter %.1f ns | %.2fx yitter (rounds %.2f-%.2f); %.2fx the time of `clock_gettime + "
         "fetch_add` | |\n",
         ns(C_SF_PRECISE_LOCKED), ns(C_YITTER), spl_y.v, spl_y.rmin, spl_y.rmax,
         ns(C_SF_PRECISE_LOCKED) / ns(C_CLOCK_XADD));
  printf("| floor: idgen's fast clock read (TSC) | | %.1f ns (%.1f M/s) | | |\n", ns(C_FAST_CLOCK),
         med[C_FAST_CLOCK] / 1e6);
  printf("| floor: `clock_gettime(CLOCK_REALTIME_COARSE)` (skeeto's clock) | | "
         "%.1f ns (%.1f M/s) | | |\n",
         ns(C_COARSE), med[C_COARSE] / 1e6);
  printf("| floor: idgen's coarse clock read (the same clock, through idgen_clock_now_ms) "
         "| | %.1f ns (%.1f M/s) | | |\n",
         ns(C_COARSE_CLOCK), med[C_COARSE_CLOCK] / 1e6);
  printf("| monotonic ULID new + encode (26 chars) | %.1f ns (%.1f M/s) | skeeto/ulid-c "
         "(-O3, default flags: 4 ms coarse clock, RC4) %.1f ns; fast clock loop %.1f ns | %.2fx "
         "skeeto (rounds %.2f-%.2f); clock %+.1f ns | clock + 5 ns: %s |\n",
         ns(C_ULID), med[C_ULID] / 1e6, ns(C_SKEETO), ns(C_FAST_CLOCK), ul_k.v, ul_k.rmin,
         ul_k.rmax, ul_above, met(ul_above <= 5.0));
  printf(
      "| same, `IDGEN_CLOCK_COARSE` (skeeto's clock) | %.1f ns (%.1f M/s) | skeeto %.1f ns; "
      "idgen's coarse clock loop %.1f ns | %.2fx skeeto (rounds %.2f-%.2f); clock %+.1f ns | >= 1.5x "
      "skeeto: %s |\n",
      ns(C_ULID_COARSE), med[C_ULID_COARSE] / 1e6, ns(C_SKEETO), ns(C_COARSE_CLOCK), uc_k.v,
      uc_k.rmin, uc_k.rmax, ns(C_ULID_COARSE) - ns(C_COARSE_CLOCK), met(uc_k.v >= 1.5));
  if (have(C_ULID_SCALAR)) {
    struct ratio us_k = ratio(C_ULID_SCALAR, C_SKEETO, runs);
    printf("| same, scalar codecs (as on CPUs without AVX-512 VBMI) | %.1f ns | skeeto %.1f ns | "
           "%.2fx skeeto (rounds %.2f-%.2f); clock %+.1f ns | |\n",
           ns(C_ULID_SCALAR), ns(C_SKEETO), us_k.v, us_k.rmin, us_k.rmax,
           ns(C_ULID_SCALAR) - ns(C_FAST_CLOCK));
  }
  printf("| same, skeeto under a mutex (shared by threads) | %.1f ns | skeeto + mutex %.1f ns | "
         "%.2fx (rounds %.2f-%.2f) | |\n",
         ns(C_ULID), ns(C_SKEETO_MUTEX), ul_km.v, ul_km.rmin, ul_km.rmax);
  printf("| UUIDv7 monotonic | %.1f ns (%.1f M/s) | fast clock loop %.1f ns | clock %+.1f ns | "
         "clock + 5 ns: %s |\n",
         ns(C_UUID7), med[C_UUID7] / 1e6, ns(C_FAST_CLOCK), u7_above, met(u7_above <= 5.0));
  printf("| same, `IDGEN_CLOCK_COARSE` | %.1f ns (%.1f M/s) | skeeto's ULID %.1f ns | %.2fx "
         "skeeto (rounds %.2f-%.2f); clock %+.1f ns | >= 1.5x skeeto: %s |\n",
         ns(C_UUID7_COARSE), med[C_UUID7_COARSE] / 1e6, ns(C_SKEETO), vc_k.v, vc_k.rmin, vc_k.rmax,
         ns(C_UUID7_COARSE) - ns(C_COARSE_CLOCK), met(vc_k.v >= 1.5));
  if (have(C_ULID_PAIR) && have(C_SKEETO_MUTEX_PAIR)) {
    struct ratio p2 = ratio(C_ULID_PAIR, C_SKEETO_MUTEX_PAIR, runs);
    printf("| monotonic ULID + encode, 2 threads sharing one generator (unpinned) | %.1f ns an "
           "ID (%.1f M/s together) | skeeto under a mutex, same: %.1f ns | %.2fx (rounds "
           "%.2f-%.2f) | |\n",
           ns(C_ULID_PAIR), med[C_ULID_PAIR] / 1e6, ns(C_SKEETO_MUTEX_PAIR), p2.v, p2.rmin,
           p2.rmax);
  }
  if (have(C_ULID_COARSE_PAIR) && have(C_SKEETO_MUTEX_PAIR)) {
    struct ratio p2 = ratio(C_ULID_COARSE_PAIR, C_SKEETO_MUTEX_PAIR, runs);
    printf("| same, `IDGEN_CLOCK_COARSE` (skeeto's clock) | %.1f ns an ID (%.1f M/s together) | "
           "skeeto under a mutex %.1f ns | %.2fx (rounds %.2f-%.2f) | >= 1.0x: %s |\n",
           ns(C_ULID_COARSE_PAIR), med[C_ULID_COARSE_PAIR] / 1e6, ns(C_SKEETO_MUTEX_PAIR), p2.v,
           p2.rmin, p2.rmax, met(p2.v >= 1.0));
  }
  printf("\nskeeto's own floor, `clock_gettime(CLOCK_REALTIME_COARSE)` loop: %.1f ns "
         "(skeeto = coarse clock %+.1f ns)\n",
         ns(C_COARSE), ns(C_SKEETO) - ns(C_COARSE));

  /* Machine-readable lines. */
  const char *pr = threaded ? "peers.threaded" : "peers";
  printf("\n");
  for (int k = 0; k < NCONT; k++)
    if (have(k))
      printf("%s.result %s ns=%.3f mops=%.3f min_mops=%.3f max_mops=%.3f\n", pr, cont[k].key, ns(k),
             med[k] / 1e6, lo[k] / 1e6, hi[k] / 1e6);
  printf("%s.ratio next_fast_vs_yitter %.4f\n", pr, sf_y.v);
  printf("%s.ratio next_precise_vs_yitter %.4f\n", pr, sp_y.v);
  printf("%s.ratio next_precise_locked_vs_yitter %.4f\n", pr, spl_y.v);
  printf("%s.ratio next_fast_vs_clock %.4f\n", pr, sf_c.v);
  printf("%s.ratio next_precise_time_over_clock_fetch_add %.4f\n", pr,
         ns(C_SF_PRECISE) / ns(C_CLOCK_XADD));
  printf("%s.ratio clock_mutex_vs_clock_fetch_add %.4f\n", pr,
         ratio(C_CLOCK_MUTEX, C_CLOCK_XADD, runs).v);
  if (have(C_RDTSC))
    printf("%s.ratio next_fast_time_over_rdtsc_fetch_add %.4f\n", pr, ns(C_SF_FAST) / ns(C_RDTSC));
  printf("%s.ratio ulid_vs_skeeto %.4f\n", pr, ul_k.v);
  printf("%s.ratio ulid_vs_skeeto_mutex %.4f\n", pr, ul_km.v);
  if (have(C_ULID_SCALAR))
    printf("%s.ratio ulid_scalar_vs_skeeto %.4f\n", pr, ratio(C_ULID_SCALAR, C_SKEETO, runs).v);
  if (have(C_ULID_PAIR) && have(C_SKEETO_MUTEX_PAIR))
    printf("%s.ratio ulid_2t_vs_skeeto_mutex_2t %.4f\n", pr,
           ratio(C_ULID_PAIR, C_SKEETO_MUTEX_PAIR, runs).v);
  printf("%s.ratio ulid_coarse_vs_skeeto %.4f\n", pr, uc_k.v);
  printf("%s.ratio uuid7_coarse_vs_skeeto %.4f\n", pr, vc_k.v);
  printf("%s.above_clock ulid_ns %.3f\n", pr, ul_above);
  printf("%s.above_clock uuid7_ns %.3f\n", pr, u7_above);

  idgen_snowflake_gen_free(sf_fast);
  idgen_snowflake_gen_free(sf_precise);
  idgen_snowflake_gen_free(sf_precise_locked);
  idgen_ulid_gen_free(ulid_fast);
  idgen_uuid7_gen_free(uuid7_fast);
  idgen_ulid_gen_free(ulid_coarse);
  idgen_uuid7_gen_free(uuid7_coarse);
  return 0;
}
