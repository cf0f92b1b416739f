/*
 * clock.c -- the default wall clock, its fast path, and fork detection.
 *
 * DESIGN.  A Snowflake ID needs the current tick, normally one millisecond.
 * clock_gettime(CLOCK_REALTIME) costs about 22 ns here, most of the price of
 * an ID.  On x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8) the
 * fast path instead reads the kernel clock once per millisecond per thread
 * and computes, in TSC counts, when that millisecond ends.  Until then rdtsc
 * (about 10 ns, and it overlaps with the work around it) tells that the
 * millisecond has not ended, so the cached value is what clock_gettime would
 * have returned.  The estimate errs early, never late:
 *   - the TSC is read before the kernel clock, so the start is early;
 *   - the TSC rate is calibrated against CLOCK_MONOTONIC_RAW over 20 ms or
 *     more and then lowered by 1/256, so the remaining time is short;
 *   - 2 us are taken off every millisecond for skew between cores.
 * A TSC that moves backwards (migration, a hypervisor) fails the unsigned
 * window test and forces a fresh read.  Every 1024th fast answer is checked
 * against a real read; if the cache ever shows a millisecond that had
 * already ended, the fast path is switched off for the process for good.
 * A wall-clock step is seen at the next millisecond boundary, at most 1 ms
 * late: as if the step had happened up to 1 ms later, which the generator's
 * step-back handling (G3) covers either way.
 *
 * Fork detection: see fork_init() below (G1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core_int.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <x86intrin.h>
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

#define MARGIN_NS 2000
#define CALIBRATE_NS 20000000LL
#define VERIFY_EVERY 1024

int64_t idgen__clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void idgen__sleep_ns(int64_t ns) {
  if (ns <= 0)
    return;
  struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

#if HAVE_TSC

/* -1 not yet known, 0 off, 1 usable (invariant TSC); rate 0 = not calibrated. */
static _Atomic int tsc_state = -1;
static _Atomic uint64_t tsc_rate_q32; /* TSC counts per ns, times 2^32 */
static pthread_once_t base_once = PTHREAD_ONCE_INIT;
static uint64_t base_tsc;
static int64_t base_raw_ns;

struct tsc_cache {
  uint64_t start;    /* TSC count read just before the kernel clock */
  uint64_t span;     /* counts from start until (before) the millisecond ends */
  int64_t ms;        /* the millisecond the kernel clock read */
  uint32_t verify;   /* fast answers left until the next check */
};
static __thread struct tsc_cache tls_cache __attribute__((tls_model("initial-exec")));

static int64_t raw_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A (TSC, raw ns) pair read close together; retried if interrupted between. */
static void tsc_pair(uint64_t *tsc, int64_t *ns) {
  for (int i = 0; i < 5; i++) {
    uint64_t a = __rdtsc();
    *ns = raw_ns();
    uint64_t b = __rdtsc();
    *tsc = a + (b - a) / 2;
    if (b - a < 20000)
      return;
  }
}

/* Detects an invariant TSC and takes the calibration base, once; the state
 * is published last (release), so a reader that sees 1 also sees the base. */
static void tsc_init(void) {
  unsigned a, b, c, d;
  int ok = __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
  if (ok)
    tsc_pair(&base_tsc, &base_raw_ns);
  atomic_store_explicit(&tsc_state, ok, memory_order_release);
}

static int tsc_usable(void) {
  int s = atomic_load_explicit(&tsc_state, memory_order_acquire);
  if (s < 0) {
    pthread_once(&base_once, tsc_init);
    s = atomic_load_explicit(&tsc_state, memory_order_acquire);
  }
  return s;
}

/* The calibrated rate, or 0 while less than CALIBRATE_NS has passed. */
static uint64_t tsc_rate(void) {
  uint64_t r = atomic_load_explicit(&tsc_rate_q32, memory_order_relaxed);
  if (r != 0)
    return r;
  uint64_t t;
  int64_t ns;
  tsc_pair(&t, &ns);
  if (ns - base_raw_ns < CALIBRATE_NS)
    return 0;
  unsigned __int128 q = ((unsigned __int128)(t - base_tsc) << 32) / (uint64_t)(ns - base_raw_ns);
  r = (uint64_t)q;
  r -= r / 256;
  /* Outside 0.1 to 20 GHz the counter is not a clock we understand. */
  if (r < (UINT64_C(1) << 32) / 10 || r > (UINT64_C(20) << 32)) {
    atomic_store_explicit(&tsc_state, 0, memory_order_relaxed);
    return 0;
  }
  atomic_store_explicit(&tsc_rate_q32, r, memory_order_relaxed);
  return r;
}

static int64_t tsc_refresh(struct tsc_cache *c) {
  uint64_t t = __rdtsc();
  int64_t ns = idgen__clock_ns();
  int64_t ms = idgen__ns_to_ms(ns);
  c->ms = ms;
  c->start = t;
  c->span = 0;
  if (c->verify == 0) /* first use; afterwards the countdown runs across windows */
    c->verify = VERIFY_EVERY;
  if (!tsc_usable())
    return ms;
  uint64_t rate = tsc_rate();
  int64_t left = (ms + 1) * 1000000 - ns - MARGIN_NS;
  if (rate != 0 && left > 0 && atomic_load_explicit(&tsc_state, memory_order_relaxed) == 1)
    c->span = ((uint64_t)left * rate) >> 32;
  return ms;
}

int64_t idgen__clock_fast_ms(void) {
  struct tsc_cache *c = &tls_cache;
  uint64_t t = __rdtsc();
  if (IDGEN_LIKELY(t - c->start < c->span)) {
    if (IDGEN_LIKELY(--c->verify != 0))
      return c->ms;
    /* A check: a real read inside the window must show the same millisecond.
     * The read is bracketed by a second rdtsc: only if that is still inside
     * the window was the read too, so a later millisecond proves the TSC
     * model wrong here.  (Without the bracket, a thread preempted between
     * rdtsc and clock_gettime would condemn a sound model.) */
    int64_t ms = idgen__ns_to_ms(idgen__clock_ns());
    uint64_t t2 = __rdtsc();
    /* Exactly the next millisecond: the model ran late.  Two or more: the
     * wall clock was stepped forward, which is no fault of the model. */
    if (ms == c->ms + 1 && t2 - c->start < c->span)
      atomic_store_explicit(&tsc_state, 0, memory_order_relaxed);
    if (ms != c->ms)
      return tsc_refresh(c);
    c->verify = VERIFY_EVERY;
    return ms;
  }
  return tsc_refresh(c);
}

int idgen__clock_fast_available(void) {
  return tsc_usable() && atomic_load_explicit(&tsc_state, memory_order_relaxed) == 1;
}

#else

int64_t idgen__clock_fast_ms(void) { return idgen__clock_precise_ms(); }
int idgen__clock_fast_available(void) { return 0; }

#endif

int64_t idgen_clock_now_ms(idgen_clock_mode_t mode) {
  if (mode == IDGEN_CLOCK_FAST)
    return idgen__clock_fast_ms();
  return idgen__clock_precise_ms();
}

/*
 * Fork detection.  The current generation lives in a page marked
 * MADV_WIPEONFORK: in a child made by any kind of fork -- fork(), _Fork(),
 * clone() without CLONE_VM -- the page reads as zero, before any fork
 * handler or other code runs.  The first caller in the child then takes the
 * next generation.  Generators remember the generation they were made in
 * (or last used), so a mismatch means "this state was copied from another
 * process".  Where the kernel lacks MADV_WIPEONFORK (before Linux 4.14), a
 * pthread_atfork child handler, registered when the library loads, bumps an
 * ordinary counter instead: that covers fork() but not _Fork().
 */
static _Atomic unsigned fallback_gen = 1;
_Atomic unsigned *idgen__fork_word = &fallback_gen;
static _Atomic unsigned last_gen = 1; /* ordinary memory: copied into children */

static void on_fork_child(void) {
  unsigned g = atomic_load_explicit(&fallback_gen, memory_order_relaxed) + 1;
  atomic_store_explicit(&fallback_gen, g ? g : 1, memory_order_relaxed);
}

__attribute__((constructor)) static void fork_init(void) {
  long psz = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED && madvise(p, (size_t)psz, MADV_WIPEONFORK) == 0) {
    atomic_store_explicit((_Atomic unsigned *)p, 1, memory_order_relaxed);
    idgen__fork_word = p;
    return;
  }
  if (p != MAP_FAILED)
    munmap(p, (size_t)psz);
  pthread_atfork(NULL, NULL, on_fork_child);
}

unsigned idgen__fork_renew(void) {
  unsigned want = atomic_load_explicit(&last_gen, memory_order_relaxed) + 1, zero = 0;
  if (want == 0)
    want = 1;
  if (atomic_compare_exchange_strong(idgen__fork_word, &zero, want)) {
    atomic_store_explicit(&last_gen, want, memory_order_relaxed);
    return want;
  }
  return zero; /* another thread of this new process renewed it first */
}
