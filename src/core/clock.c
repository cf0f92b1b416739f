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
 * window test and forces a fresh read.
 *
 * Every 1024th fast answer of a thread is checked against a real read.  If
 * the cache shows a millisecond that had already ended, the model is
 * rejected: a forward step of the wall clock and a TSC that runs slow look
 * the same.  Each rejection is counted (idgen_clock_stats) and ends the fast
 * path until a new calibration (20 ms, on precise reads); rejections that keep
 * coming -- more than two before a model holds for a minute -- are followed
 * by a cool-down on precise reads first, 1 s doubling up to 5 min.  Nothing
 * switches the fast path off for good but a CPU without an invariant TSC.
 * A wall-clock step is seen at the next millisecond boundary, at most 1 ms
 * late: as if the step had happened up to 1 ms later, which the generator's
 * step-back handling (bounded) covers either way.
 *
 * Fork detection: see idgen__fork_renew() below and platform_posix.c.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
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
/* After a rejection: calibrate again at once, QUICK_RETRIES times in a row;
 * past that, first cool down on precise reads, COOLDOWN_MIN_NS doubling up to
 * COOLDOWN_MAX_NS.  A model that stays in use HEALTHY_NS has its record of
 * rejections wiped. */
#define QUICK_RETRIES 2
#define COOLDOWN_MIN_NS 1000000000LL
#define COOLDOWN_MAX_NS 300000000000LL
#define HEALTHY_NS 60000000000LL

int64_t idgen__clock_ns(void) {
  struct timespec ts;
  idgen__wall_read(CLOCK_REALTIME, &ts);
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

/*
 * The model, process-wide, in one word so that a refresh reads the state and
 * the rate together: rate << 3 | state, where the rate is TSC counts per ns
 * times 2^32, already lowered by 1/256.  Transitions take model_lock, which
 * also guards `cal`; the hot path never looks at either.
 */
enum { S_UNKNOWN = 0, S_UNAVAILABLE, S_CALIBRATING, S_COOLDOWN, S_FAST };
#define S_MASK 7u
#define MODEL(rate, s) ((uint64_t)(rate) << 3 | (s))
#define MODEL_RATE(w) ((w) >> 3)

static _Atomic uint64_t model;
static _Atomic int64_t model_due; /* mono ns: a calibration may end, a cool-down ends */
static _Atomic uint64_t n_fallbacks, n_recalibrations, n_cooldowns, last_rate;
static idgen__lock_t model_lock; /* zero: its first use takes it as "new process" */
static struct {
  uint64_t base_tsc; /* the calibration's start, as a (TSC, raw ns) pair */
  int64_t base_raw;
  int calibrated;     /* a calibration has completed before */
  int strikes;        /* rejections since the model last held HEALTHY_NS */
  int64_t fast_since; /* mono ns when the model in use was published */
} cal;

struct tsc_cache {
  uint64_t start;  /* TSC count read just before the kernel clock */
  uint64_t span;   /* counts from start until (before) the millisecond ends */
  int64_t ms;      /* the millisecond the kernel clock read */
  uint32_t verify; /* fast answers left until the next check */
  uint64_t model;  /* the model the window was computed with */
};
static __thread struct tsc_cache tls_cache __attribute__((tls_model("initial-exec")));

/* Tests only: the time sources, and the cache the hooked clock uses instead
 * of the thread's (see idgen__clock_test_hooks). */
static idgen__clock_hooks_t hook_copy;
static const idgen__clock_hooks_t *hooks;
static struct tsc_cache hook_cache;

static uint64_t tsc_read(void) {
  return IDGEN_UNLIKELY(hooks != NULL) ? hooks->tsc(hooks->ctx) : __rdtsc();
}

static int64_t realtime_read(void) {
  return IDGEN_UNLIKELY(hooks != NULL) ? hooks->realtime_ns(hooks->ctx) : idgen__clock_ns();
}

static int64_t mono_read(clockid_t id) {
  if (IDGEN_UNLIKELY(hooks != NULL))
    return hooks->mono_ns(hooks->ctx);
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A (TSC, CLOCK_MONOTONIC_RAW ns) pair read close together; retried if
 * interrupted between. */
static void tsc_pair(uint64_t *tsc, int64_t *ns) {
  for (int i = 0; i < 5; i++) {
    uint64_t a = tsc_read();
    *ns = mono_read(CLOCK_MONOTONIC_RAW);
    uint64_t b = tsc_read();
    *tsc = a + (b - a) / 2;
    if (b - a < 20000)
      return;
  }
}

/* Deadlines (model_due) are kept on the coarse clock: it costs a few ns,
 * and while the model is not in use it is read on every call. */
static int64_t due_clock(void) { return mono_read(CLOCK_MONOTONIC_COARSE); }

static int tsc_invariant(void) {
  unsigned a, b, c, d;
  return hooks != NULL || (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)));
}

static void model_publish(uint64_t w) { atomic_store_explicit(&model, w, memory_order_release); }

/* The calling thread holds model_lock in the functions below. */

static void calibration_start(uint64_t t, int64_t raw, int64_t now) {
  cal.base_tsc = t;
  cal.base_raw = raw;
  atomic_store_explicit(&model_due, now + CALIBRATE_NS, memory_order_relaxed);
  model_publish(MODEL(0, S_CALIBRATING));
}

/* The model was shown wrong, by a check or by an implausible rate: measure
 * again, at once or after a cool-down, never give up for good. */
static void model_strike(uint64_t t, int64_t raw, int64_t now) {
  atomic_fetch_add_explicit(&n_fallbacks, 1, memory_order_relaxed);
  if (++cal.strikes <= QUICK_RETRIES) {
    calibration_start(t, raw, now);
    return;
  }
  int shift = cal.strikes - QUICK_RETRIES - 1;
  int64_t cool = shift >= 9 ? COOLDOWN_MAX_NS : COOLDOWN_MIN_NS << shift;
  if (cool > COOLDOWN_MAX_NS)
    cool = COOLDOWN_MAX_NS;
  atomic_fetch_add_explicit(&n_cooldowns, 1, memory_order_relaxed);
  atomic_store_explicit(&model_due, now + cool, memory_order_relaxed);
  model_publish(MODEL(0, S_COOLDOWN));
}

static void calibration_end(uint64_t t, int64_t raw, int64_t now) {
  int64_t dns = raw - cal.base_raw;
  if (dns < 0) /* the pair was read before another thread restarted the calibration */
    return;
  if (dns < CALIBRATE_NS) { /* the coarse deadline came before 20 ms of raw time */
    atomic_store_explicit(&model_due, now + (CALIBRATE_NS - dns), memory_order_relaxed);
    return;
  }
  unsigned __int128 q = ((unsigned __int128)(t - cal.base_tsc) << 32) / (uint64_t)dns;
  uint64_t r = (uint64_t)q;
  r -= r / 256;
  /* Outside 0.1 to 20 GHz the counter is not a clock we understand. */
  if (r < (UINT64_C(1) << 32) / 10 || r > (UINT64_C(20) << 32)) {
    model_strike(t, raw, now);
    return;
  }
  if (cal.calibrated)
    atomic_fetch_add_explicit(&n_recalibrations, 1, memory_order_relaxed);
  cal.calibrated = 1;
  cal.fast_since = now;
  atomic_store_explicit(&last_rate, r, memory_order_relaxed);
  model_publish(MODEL(r, S_FAST));
}

/* Takes model_lock.  The first use in a process (also after fork(), where a
 * parent's thread may have held it) restarts a calibration under way: its
 * base may have been half written. */
static void model_lock_take(uint64_t t, int64_t raw, int64_t now) {
  if (idgen__lock_acquire(&model_lock) &&
      (atomic_load_explicit(&model, memory_order_relaxed) & S_MASK) == S_CALIBRATING)
    calibration_start(t, raw, now);
}

/* Moves the model on when it is not in use: starts it on first use, ends a
 * calibration or a cool-down that is due.  Returns the model now. */
static __attribute__((noinline)) uint64_t model_advance(uint64_t w) {
  unsigned s = w & S_MASK;
  if (s == S_UNAVAILABLE || s == S_FAST)
    return w;
  if (s == S_UNKNOWN && !tsc_invariant()) {
    model_publish(MODEL(0, S_UNAVAILABLE)); /* the same answer for every thread */
    return MODEL(0, S_UNAVAILABLE);
  }
  int64_t now = due_clock();
  if (s != S_UNKNOWN && now - atomic_load_explicit(&model_due, memory_order_relaxed) < 0)
    return w;
  uint64_t t;
  int64_t raw;
  tsc_pair(&t, &raw);
  model_lock_take(t, raw, now);
  w = atomic_load_explicit(&model, memory_order_relaxed);
  switch (w & S_MASK) {
  case S_UNKNOWN:
    calibration_start(t, raw, now);
    break;
  case S_CALIBRATING:
    if (now - atomic_load_explicit(&model_due, memory_order_relaxed) >= 0)
      calibration_end(t, raw, now);
    break;
  case S_COOLDOWN:
    if (now - atomic_load_explicit(&model_due, memory_order_relaxed) >= 0)
      calibration_start(t, raw, now);
    break;
  }
  idgen__lock_release(&model_lock);
  return atomic_load_explicit(&model, memory_order_acquire);
}

static uint64_t model_now(void) {
  uint64_t w = atomic_load_explicit(&model, memory_order_acquire);
  return IDGEN_LIKELY((w & S_MASK) == S_FAST) ? w : model_advance(w);
}

/* A check caught the window `seen` answering a millisecond that had ended. */
static __attribute__((noinline)) void model_reject(uint64_t seen) {
  uint64_t t;
  int64_t raw;
  tsc_pair(&t, &raw);
  int64_t now = due_clock();
  model_lock_take(t, raw, now);
  /* Once per model: other threads' windows may show the same evidence. */
  if (atomic_load_explicit(&model, memory_order_relaxed) == seen) {
    if (now - cal.fast_since >= HEALTHY_NS)
      cal.strikes = 0; /* a model that held this long was sound: one event */
    model_strike(t, raw, now);
  }
  idgen__lock_release(&model_lock);
}

static int64_t tsc_refresh(struct tsc_cache *c);
static int64_t tsc_check(struct tsc_cache *c);

/* The hot path: one rdtsc, a subtraction and a comparison. */
static inline int64_t cached_ms(struct tsc_cache *c, uint64_t t) {
  if (IDGEN_LIKELY(t - c->start < c->span)) {
    if (IDGEN_LIKELY(--c->verify != 0))
      return c->ms;
    return tsc_check(c);
  }
  return tsc_refresh(c);
}

static __attribute__((noinline)) int64_t tsc_refresh(struct tsc_cache *c) {
  /* Hooked, the thread's own cache never gets a window, so every call comes
   * here and runs the same code on the hooked sources. */
  if (IDGEN_UNLIKELY(hooks != NULL) && c == &tls_cache)
    return cached_ms(&hook_cache, hooks->tsc(hooks->ctx));
  uint64_t w = model_now();
  uint64_t t = tsc_read();
  int64_t ns = realtime_read();
  int64_t ms = idgen__ns_to_ms(ns);
  c->ms = ms;
  c->start = t;
  c->span = 0;
  c->model = w;
  if (c->verify == 0) /* first use; afterwards the countdown runs across windows */
    c->verify = IDGEN__CLOCK_VERIFY_EVERY;
  /* ns lies in [ms, ms + 1) ms, so left < 1 ms: a window never outlasts the
   * rest of this millisecond at the calibrated rate. */
  int64_t left = (ms + 1) * 1000000 - ns - MARGIN_NS;
  if ((w & S_MASK) == S_FAST && left > 0)
    c->span = ((uint64_t)left * MODEL_RATE(w)) >> 32;
  return ms;
}

/* A check: a real read inside the window must show the same millisecond.
 * The read is bracketed by a second TSC reading: only if that is still inside
 * the window was the read too, so a later millisecond proves the cached one
 * wrong.  (Without the bracket, a thread preempted between rdtsc and
 * clock_gettime would condemn a sound model.) */
static __attribute__((noinline)) int64_t tsc_check(struct tsc_cache *c) {
  int64_t ms = idgen__ns_to_ms(realtime_read());
  uint64_t t2 = tsc_read();
  if (ms == c->ms) {
    c->verify = IDGEN__CLOCK_VERIFY_EVERY;
    return ms;
  }
  /* A later millisecond: the model ran late, or the wall clock was stepped
   * forward; one reading cannot tell them apart, and either way the model
   * is measured again.  An earlier one is a step back: just refresh. */
  if (ms > c->ms && t2 - c->start < c->span)
    model_reject(c->model);
  return tsc_refresh(c);
}

int64_t idgen__clock_fast_ms(void) { return cached_ms(&tls_cache, __rdtsc()); }

int idgen__clock_fast_available(void) { return (model_now() & S_MASK) != S_UNAVAILABLE; }

void idgen_clock_stats(idgen_clock_stats_t *st) {
  static const idgen_clock_state_t shown[] = {[S_UNKNOWN] = IDGEN_CLOCK_STATE_CALIBRATING,
                                              [S_UNAVAILABLE] = IDGEN_CLOCK_STATE_UNAVAILABLE,
                                              [S_CALIBRATING] = IDGEN_CLOCK_STATE_CALIBRATING,
                                              [S_COOLDOWN] = IDGEN_CLOCK_STATE_PRECISE,
                                              [S_FAST] = IDGEN_CLOCK_STATE_FAST};
  uint64_t w = model_now();
  memset(st, 0, sizeof *st);
  st->state = shown[w & S_MASK];
  st->fallbacks = atomic_load_explicit(&n_fallbacks, memory_order_relaxed);
  st->recalibrations = atomic_load_explicit(&n_recalibrations, memory_order_relaxed);
  st->cooldowns = atomic_load_explicit(&n_cooldowns, memory_order_relaxed);
  if ((w & S_MASK) == S_COOLDOWN) {
    int64_t left = atomic_load_explicit(&model_due, memory_order_relaxed) - due_clock();
    st->cooldown_ms = left > 0 ? (left + 999999) / 1000000 : 0;
  }
  /* counts per ns times 2^32, to counts per second */
  unsigned __int128 r = atomic_load_explicit(&last_rate, memory_order_relaxed);
  st->tsc_hz = (uint64_t)((r * 1000000000) >> 32);
}

int idgen__clock_test_hooks(const idgen__clock_hooks_t *h) {
  if (h != NULL)
    hook_copy = *h;
  hooks = h != NULL ? &hook_copy : NULL;
  atomic_store(&model, 0);
  atomic_store(&model_due, 0);
  atomic_store(&n_fallbacks, 0);
  atomic_store(&n_recalibrations, 0);
  atomic_store(&n_cooldowns, 0);
  atomic_store(&last_rate, 0);
  memset(&cal, 0, sizeof cal);
  memset(&tls_cache, 0, sizeof tls_cache);
  memset(&hook_cache, 0, sizeof hook_cache);
  return 0;
}

#else

int64_t idgen__clock_fast_ms(void) { return idgen__clock_precise_ms(); }
int idgen__clock_fast_available(void) { return 0; }

void idgen_clock_stats(idgen_clock_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->state = IDGEN_CLOCK_STATE_UNAVAILABLE;
}

int idgen__clock_test_hooks(const idgen__clock_hooks_t *h) {
  (void)h;
  return IDGEN_EINVAL;
}

#endif

const char *idgen_clock_state_name(idgen_clock_state_t s) {
  switch (s) {
  case IDGEN_CLOCK_STATE_UNAVAILABLE:
    return "unavailable";
  case IDGEN_CLOCK_STATE_CALIBRATING:
    return "calibrating";
  case IDGEN_CLOCK_STATE_FAST:
    return "fast";
  case IDGEN_CLOCK_STATE_PRECISE:
    return "precise";
  }
  return "unknown";
}

/* The clock setting's words, in IDGEN_CLOCK_MODE_WORDS' order. */
static const struct {
  const char *word;
  idgen_clock_mode_t mode;
} clock_words[] = {
    {"fast", IDGEN_CLOCK_FAST}, {"precise", IDGEN_CLOCK_PRECISE}, {"coarse", IDGEN_CLOCK_COARSE}};

int idgen_clock_mode_parse(const char *word, idgen_clock_mode_t *mode, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof clock_words / sizeof clock_words[0]; i++)
    if (strcmp(word, clock_words[i].word) == 0) {
      *mode = clock_words[i].mode;
      return 0;
    }
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "\"%s\" is not a clock (expected " IDGEN_CLOCK_MODE_WORDS ")",
                    IDGEN_QUOTE(word, strlen(word), '"', 100));
}

const char *idgen_clock_mode_name(idgen_clock_mode_t mode) {
  for (size_t i = 0; i < sizeof clock_words / sizeof clock_words[0]; i++)
    if (clock_words[i].mode == mode)
      return clock_words[i].word;
  return "unknown";
}

int64_t idgen_clock_now_ms(idgen_clock_mode_t mode) { return idgen__clock_mode_ms(mode); }

int64_t idgen_clock_coarse_resolution_ns(void) {
  struct timespec ts;
  if (IDGEN__CLOCK_COARSE_ID == CLOCK_REALTIME || clock_getres(IDGEN__CLOCK_COARSE_ID, &ts) != 0)
    return 1;
  int64_t ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
  return ns > 0 ? ns : 1;
}

/*
 * Fork detection: the generation word starts as this counter, 1; the
 * platform's file (platform_posix.c) points it at a page the kernel wipes
 * in a child, or bumps the counter in a fork() child.  The first caller in
 * a child takes the next generation here.
 */
static _Atomic unsigned fallback_gen = 1;
_Atomic unsigned *idgen__fork_word = &fallback_gen;
static _Atomic unsigned last_gen = 1; /* ordinary memory: copied into children */

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
