/*
 * snowflake.c -- the lock-free Snowflake generator: unique, increasing and
 * bounded (idgen.h's promises; docs/DESIGN.md §1).
 *
 * DESIGN.  The whole mutable state is one atomic 64-bit word, `next`: the
 * next (tick, sequence) pair to issue, packed as tick << S | sequence where S
 * is the sequence width.  Adding 1 to it moves to the next sequence number,
 * and past the last one carries into the next tick: that carry *is*
 * borrowing from the future.  Every ID is the value of `next` before some
 * atomic read-modify-write that moved it up, so IDs follow the word's
 * modification order: they are unique and increase in real-time order across
 * threads (unique, increasing) without a lock.
 *
 * The hot path (millisecond ticks, no injected clock, T+S <= 63 bits) is one
 * fetch_add: take c = next++, and keep c if its tick is neither behind the
 * wall clock nor further ahead than max_borrow_ms allows.  Otherwise c is
 * dropped (never issued, so never repeated) and the slow path decides with a
 * compare-and-swap: jump to the wall clock's tick, or wait, or refuse.  A c
 * that was *ahead* of the window sets the `ahead` flag (in `seen`); while it
 * is set, calls look at `next` before taking, so they do not each drop a
 * future value (with a small sequence that outran the clock and livelocked).
 * The first look that finds the window open clears the flag.  Looking on
 * every call instead would cost a second transfer of the contended line: 84
 * against 50 million IDs/s with two threads here.  The same word holds the
 * highest millisecond any call has read, so that the slow path can tell a
 * step back from a used-up tick; the hot path compares the whole word with
 * its own millisecond, one comparison as for the flag alone, and the first
 * call of each millisecond records it.
 * The generator's first caller owns it and takes without the lock prefix,
 * inside a restartable sequence; another thread revokes the ownership (a
 * membarrier that restarts any sequence in progress, no waiting) before its
 * first take, and from then every take is locked (bias_enter, bias.c).
 * fetch_add cannot wrap: `next` stays below 2^63 + (number of calls), and for
 * 64-bit state (T+S = 64) the generator only uses compare-and-swap.
 *
 * Waiting (bounded).  When the next value's tick is more than max_borrow_ms ahead
 * of the wall clock, the call reserves it and sleeps until it may be issued.
 * Sleeping to the end of a used-up tick of at most one second is allowed
 * beside max_wait_ms; anything else counts against it: a longer tick's rest,
 * and every wait for a clock that stepped back, which a call knows by its
 * reading being below `seen`, the highest reading any call made.  If the
 * needed wait is larger, the call fails at once with IDGEN_ECLOCK instead of
 * sleeping in vain.  Reserving first makes waiting calls take their turn in
 * order, so every wait is bounded (see claim_once()).
 *
 * A batch (next_n) claims as much of the allowed window as it needs in one
 * compare-and-swap and writes the IDs tick by tick with additions.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bind_int.h"
#include "snowflake_int.h"

/* Callers allocate idgen_snowflake_wait_t: its size is part of the ABI. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(idgen_snowflake_wait_t) == 80, "idgen_snowflake_wait_t changed size");
#endif

#define BORROW_MAX_MS ((long long)IDGEN_MAX_BORROW_MS_MAX)
#define WAIT_MAX_MS ((long long)IDGEN_MAX_WAIT_MS_MAX)

void idgen_snowflake_settings_init(idgen_snowflake_settings_t *s) {
  memset(s, 0, sizeof *s);
  s->max_borrow_ms = IDGEN_MAX_BORROW_MS_DEFAULT;
  s->max_wait_ms = IDGEN_MAX_WAIT_MS_DEFAULT;
  s->clock_mode = IDGEN_CLOCK_FAST;
}

/* The cached generator's defaults live here, not in cached.c: a build
 * without it (IDGEN_KEEPER=OFF, keeper_none.c) has them too. */
void idgen_cached_settings_init(idgen_cached_settings_t *s) {
  memset(s, 0, sizeof *s);
  s->boost_power = IDGEN_CACHE_BOOST_DEFAULT;
  s->padding_percent = IDGEN_CACHE_PADDING_DEFAULT;
  s->on_empty = IDGEN_CACHE_DIRECT;
  s->max_wait_ms = IDGEN_MAX_WAIT_MS_DEFAULT;
}

/* The wall clock with nanoseconds, for the slow path. */
static int64_t now_ns(const idgen_snowflake_gen_t *g) { return idgen__sf_now_ns(g); }

static inline int64_t now_ms(const idgen_snowflake_gen_t *g) {
  if (IDGEN_LIKELY(g->clock_kind == CLOCK_KIND_FAST))
    return idgen__clock_fast_ms();
  if (g->clock_kind == CLOCK_KIND_PRECISE)
    return idgen__clock_precise_ms();
  if (g->clock_kind == CLOCK_KIND_COARSE)
    return idgen__clock_coarse_ms();
  return idgen__ns_to_ms(g->clock.now_ns(g->clock.ctx));
}

static void sleep_ns(const idgen_snowflake_gen_t *g, int64_t ns) {
  if (g->clock.now_ns != NULL) {
    if (g->clock.sleep_ns != NULL)
      g->clock.sleep_ns(g->clock.ctx, ns);
    return;
  }
  idgen__sleep_ns(ns);
}

/* A sequence start for a new tick: 0, or random in the lower half of the
 * range.  This randomness only spreads IDs over shards; it is not secret, so
 * a per-thread splitmix64 seeded from the clock and the thread is enough. */
static uint64_t seq_start(const idgen_snowflake_gen_t *g) {
  static __thread uint64_t s;
  if (!g->random_start)
    return 0;
  if (s == 0)
    s = (uint64_t)idgen__clock_ns() ^ (uint64_t)(uintptr_t)&s ^ 0x9e3779b97f4a7c15u;
  uint64_t z = (s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  z ^= z >> 31;
  return z & (g->seq_mask >> 1);
}

static inline uint64_t compose(const idgen_snowflake_gen_t *g, uint64_t v) {
  return g->node_bits | ((v >> g->seq_bits) << g->time_shift) | ((v & g->seq_mask) << g->seq_shift);
}

static int refuse(idgen_snowflake_gen_t *g) {
  atomic_fetch_add_explicit(&g->clock_refusals, 1, memory_order_relaxed);
  return IDGEN_ECLOCK;
}

/*
 * One call's slow path, as a state machine that never sleeps by itself: a
 * blocking call sleeps between its steps, an event loop parks it.
 *
 * The budget (bounded: per call).  From the call's first reading of the clock,
 * ms, the call may wait max_wait_ms, and beside it the rest of a used-up
 * tick of at most one second: its deadline (budget_start).  Every value it
 * takes must be issuable by then, so a batch is claimed whole or not at
 * all; and the waits it asks for add up to at most deadline - start, so a
 * clock that stands still or steps back while it waits ends it too.
 *
 * A claim takes `k` consecutive values with one compare-and-swap.  Values
 * whose tick is within max_borrow_ms of the wall clock are returned at
 * once.  Otherwise the call *reserves* them (the same compare-and-swap) and
 * waits until the last one's tick may be issued.  Reserving before waiting
 * serves waiting calls in the order they came: without it, a caller could
 * lose the race for every new tick and wait without bound.  A call that
 * cannot fit in its budget takes nothing: IDGEN_ECLOCK, or IDGEN_EBATCH when
 * a smaller batch would have fitted.
 */
enum { CL_NOW, CL_RESERVED, CL_MARK, CL_STALE };

/* The end (Unix ms) of the tick holding Unix ms `ms` (>= the epoch). */
static inline int64_t tick_end_ms(const idgen_snowflake_gen_t *g, int64_t ms) {
  return g->epoch + ((ms - g->epoch) / g->unit + 1) * g->unit;
}

/*
 * The budget of a call whose first reading is Unix ms `ms`; `seen` is
 * g->seen loaded before that reading was taken (a fresh reading), or after
 * it (the caller's, which may be old: a budget too small for it only makes
 * the call read the clock again, see run()).
 *
 * The highest reading any call made, h, tells a step back: the clock went
 * back by `back` = h - ms.  What the call may wait counts that part in
 * full; only the rest of the tick after h (that tick used up) is free, and
 * only on ticks of at most a second.  So with back <= max_wait_ms the
 * deadline is ms + max_wait_ms + (end of h's tick - h), and with back >
 * max_wait_ms it is ms + max_wait_ms: the step alone is more than the call
 * may wait, so it may wait only for what lies before h.  Without a step
 * (back = 0) this is the end of the current tick plus max_wait_ms, as
 * always.  (Both in whole milliseconds, as readings are kept.)
 */
static void budget_start(const idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, int64_t ms,
                         uint64_t seen) {
  int64_t h = g->epoch + (int64_t)(seen & ~SEEN_AHEAD);
  int64_t back = h > ms ? h - ms : 0, dl;
  if (ms < g->epoch) /* refused: no value can be issued */
    dl = ms + 1 + g->wait_ms;
  else if (g->unit > FREE_TICK_MAX_MS || back > g->wait_ms)
    dl = ms + g->wait_ms;
  else
    dl = tick_end_ms(g, back ? h : ms) + g->wait_ms - back;
  w->deadline_ns = dl * NS_PER_MS;
  w->allowance_ms = (int32_t)(dl - ms); /* <= an hour and a second */
  w->charged_ns = 0;
  w->stepped = back > 0;
}

/* Records a reading of the clock (Unix ms, >= the epoch) in g->seen. */
static void see(idgen_snowflake_gen_t *g, int64_t ms) {
  uint64_t v = (uint64_t)(ms - g->epoch);
  uint64_t a = atomic_load_explicit(&g->seen, memory_order_relaxed);
  while ((a & ~SEEN_AHEAD) < v &&
         !atomic_compare_exchange_weak_explicit(&g->seen, &a, (a & SEEN_AHEAD) | v,
                                                memory_order_relaxed, memory_order_relaxed))
    ;
}

static inline int bias_enter(idgen_snowflake_gen_t *g, uintptr_t me);

/* The last state issuable at wall ms `ms` (>= the epoch) at once (*lim)
 * and by w's deadline (*limr). */
static void window(const idgen_snowflake_gen_t *g, const idgen_snowflake_wait_t *w, int64_t ms,
                   uint64_t *lim_out, uint64_t *limr_out) {
  const unsigned S = g->seq_bits;
  /* Ticks issuable now (tl), and by the deadline (tr). */
  int64_t dl_ms = w->deadline_ns / NS_PER_MS;
  uint64_t tl = (uint64_t)(ms - g->epoch + g->borrow_ms) / (uint64_t)g->unit;
  uint64_t tr = dl_ms + g->borrow_ms < g->epoch
                    ? 0
                    : (uint64_t)(dl_ms + g->borrow_ms - g->epoch) / (uint64_t)g->unit;
  if (tl > g->max_tick)
    tl = g->max_tick;
  if (tr > g->max_tick)
    tr = g->max_tick;
  if (tr < tl)
    tr = tl;
  uint64_t lim = (tl << S) | g->seq_mask, limr = (tr << S) | g->seq_mask;
  if (lim > g->max_state)
    lim = g->max_state;
  if (limr > g->max_state)
    limr = g->max_state;
  *lim_out = lim;
  *limr_out = limr;
}

/* Whether a claim of w->n values at wall ms `ms` within w's budget can
 * fit with `next` at `cur` or above (a claim then decides, with the
 * random start): 1, or 0 with *first (where it would start at the least)
 * and *last (the last state the budget allows). */
static int may_fit(const idgen_snowflake_gen_t *g, const idgen_snowflake_wait_t *w, int64_t ms,
                   uint64_t cur, uint64_t *first, uint64_t *last) {
  *first = 1;
  *last = 0;
  if (ms < g->epoch)
    return 0;
  uint64_t x = (uint64_t)(ms - g->epoch) / (uint64_t)g->unit, lim;
  if (x > g->max_tick || cur > g->max_state)
    return 1; /* the claim reports it */
  uint64_t start = (cur >> g->seq_bits) < x ? x << g->seq_bits : cur;
  if (w->n - 1 > g->max_state - start)
    return 1; /* past the layout's end: the claim reports it */
  window(g, w, ms, &lim, last);
  *first = start;
  return start <= *last && w->n - 1 <= *last - start;
}

/* One decision on w->n values at wall ms `ms` within w's budget: CL_NOW or
 * CL_RESERVED with [*first, *last] taken; CL_MARK (nothing taken) when the
 * last is above a bound generator's ceiling (*last: the state needed);
 * CL_STALE (nothing taken) when the call does not fit in its budget
 * (*first: the state `next` held); or an error. */
static int claim_once(idgen_snowflake_gen_t *g, const idgen_snowflake_wait_t *w, int64_t ms,
                      uint64_t *first, uint64_t *last) {
  const unsigned S = g->seq_bits;
  const uint64_t k = w->n;
  if (ms < g->epoch)
    return refuse(g);
  uint64_t x = (uint64_t)(ms - g->epoch) / (uint64_t)g->unit;
  if (x > g->max_tick)
    return IDGEN_EEXHAUSTED;
  see(g, ms);
  uint64_t lim, limr;
  window(g, w, ms, &lim, &limr);
  /* A bound generator's high-water mark (max_state when unbound). */
  uint64_t ceil = atomic_load_explicit(&g->ceiling, memory_order_acquire);

  /* The compare-and-swap below is locked; what matters is that no other
   * thread still owns g and takes unlocked meanwhile. */
  if (bias_enter(g, idgen__bias_me()) < 0)
    return IDGEN_EINVAL;
  uint64_t cur = atomic_load_explicit(&g->next, memory_order_acquire);
  for (;;) {
    if (cur > g->max_state)
      return IDGEN_EEXHAUSTED;
    uint64_t start = cur;
    if ((start >> S) < x)
      start = (x << S) | seq_start(g);
    /* Past the layout's end: nothing is taken, so smaller calls can still
     * have the last values. */
    if (k - 1 > g->max_state - start)
      return IDGEN_EEXHAUSTED;
    uint64_t end = start + k - 1;
    if (end > limr) {
      *first = cur;
      return CL_STALE;
    }
    if (end > ceil) {
      *last = end;
      return CL_MARK;
    }
    if (atomic_compare_exchange_weak_explicit(&g->next, &cur, end + 1, memory_order_acq_rel,
                                              memory_order_acquire)) {
      /* Read again after the take, as on the fast path: the values are
       * dropped if a fence came first. */
      if (end > atomic_load_explicit(&g->ceiling, memory_order_acquire)) {
        *last = end;
        return CL_MARK;
      }
      *first = start;
      *last = end;
      return end <= lim ? CL_NOW : CL_RESERVED;
    }
  }
}

/* The kernel's CLOCK_MONOTONIC, by a system call: a clock faker loaded
 * with LD_PRELOAD (libfaketime, which stops this clock too unless told not
 * to) cannot make the budget's real time stand still.  Slow path only. */
static int64_t kernel_mono_ns(void) {
#ifdef SYS_clock_gettime
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
    return idgen__mono_ns();
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#else /* no system calls (WebAssembly): the C library's clock */
  return idgen__mono_ns();
#endif
}

/* A wait of `ns` asked of the caller: charged to the call's budget now.
 * Its end on the monotonic clock is kept, so that a resume that comes
 * before it gives back what was not waited (idgen__sf_wait_early).  The
 * end counts from the resume's own reading (kept negated), not from a
 * second one: the time spent in here between the two would otherwise be
 * given back too, and a loop that resumes without pause would be charged
 * a fraction of the time it waits (36% in one measurement;
 * test_async_polled_early in tests/test_snowflake.c holds the rule). */
static void ask(const idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, int64_t ns) {
  w->charged_ns += ns;
  if (g->clock.now_ns != NULL) {
    w->asked_mono_ns = 0;
    return;
  }
  int64_t from = w->asked_mono_ns < 0 ? -w->asked_mono_ns : kernel_mono_ns();
  w->asked_mono_ns = from + ns;
}

void idgen__sf_wait_early(idgen_snowflake_wait_t *w) {
  int64_t now = kernel_mono_ns();
  /* Polled before the end of what it asked: only the time that passed is
   * spent.  (A wall clock that stands still while the caller waits out the
   * whole wait spends it all, as before, and so ends the call.)  So the
   * budget spent is the real time since the first wait began plus the wait
   * asked now. */
  if (w->asked_mono_ns > now) { /* now > 0: a reading kept negated never is */
    int64_t left = w->asked_mono_ns - now;
    w->charged_ns -= left < w->charged_ns ? left : w->charged_ns;
  } else if (w->asked_mono_ns > 0) {
    /* Polled after the end it asked for, and the tick not come yet (the
     * end counts from the resume's first reading, a little before the
     * wall-clock reading the wait was measured from; a preempted resume
     * makes that gap long): the time past the end was waited too.
     * Without this a waiting call was charged less than it waited (CI, a
     * loaded machine: 9.73 ms charged after 9.88 ms). */
    w->charged_ns += now - w->asked_mono_ns;
  }
  w->asked_mono_ns = -now;
}

/* A reserved call: 0 once its last value's tick is within max_borrow_ms of
 * the wall clock (and the lease still covers it); IDGEN_EAGAIN with
 * w->due_ns while it must wait and may; or a refusal (the reserved values
 * are dropped, never reissued). */
static int reserved_check(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w) {
  int64_t t_ns = now_ns(g), ms = idgen__ns_to_ms(t_ns);
  if (ms < g->epoch)
    return refuse(g); /* stepped back past the epoch while waiting */
  see(g, ms);         /* a tick reached by waiting, then stepped back from, is a step */
  int64_t target_ms = g->epoch + (int64_t)(w->last >> g->seq_bits) * g->unit - g->borrow_ms;
  if (target_ms <= ms) /* and the lease did not go while it waited */
    return w->last <= atomic_load_explicit(&g->ceiling, memory_order_acquire) ? 0 : IDGEN_ELEASE;
  int64_t allowance = idgen__sf_allowance_ns(w);
  /* Far out of reach (the clock stepped back meanwhile): no ns arithmetic. */
  if (target_ms - ms > allowance / NS_PER_MS + 1)
    return refuse(g);
  int64_t need = target_ms * NS_PER_MS - t_ns;
  if (w->charged_ns + need > allowance)
    return refuse(g);
  ask(g, w, need);
  w->due_ns = target_ms * NS_PER_MS;
  return IDGEN_EAGAIN;
}

/* Writes the IDs of states w->first..w->last into w->ids: within a tick,
 * consecutive IDs differ by 1 << seq_shift. */
static void fill(const idgen_snowflake_gen_t *g, const idgen_snowflake_wait_t *w) {
  uint64_t v = w->first, got = w->last - w->first + 1, *ids = w->ids;
  while (got > 0) {
    uint64_t in_tick = g->seq_mask - (v & g->seq_mask) + 1;
    uint64_t m = got < in_tick ? got : in_tick;
    uint64_t id = compose(g, v), step = UINT64_C(1) << g->seq_shift;
    for (uint64_t j = 0; j < m; j++)
      ids[j] = id + j * step;
    ids += m;
    v += m;
    got -= m;
  }
}

/* idgen__keeper_wait for a call in a process other than the keeper's, which it
 * cannot reach: it asks by raising `remote_want` (the keeper's I/O thread
 * looks at it every 10 ms for a shared generator) and looks at the
 * ceiling.  0 when it covers `want`, IDGEN_ELEASE while it is 0 (the lease
 * cannot be shown valid), else IDGEN_EAGAIN. */
static int64_t remote_wait(idgen_snowflake_gen_t *g, uint64_t want) {
  uint64_t c = atomic_load_explicit(&g->ceiling, memory_order_acquire);
  if (c >= want)
    return 0;
  if (c == 0)
    return IDGEN_ELEASE;
  uint64_t cur = atomic_load_explicit(&g->remote_want, memory_order_relaxed);
  while (cur < want && !atomic_compare_exchange_weak_explicit(
                           &g->remote_want, &cur, want, memory_order_relaxed, memory_order_relaxed))
    ;
  return IDGEN_EAGAIN;
}

/* Runs a call from where `w` stands until it is done (0), fails, or would
 * wait.  `ms` is a reading of the clock (fresh: taken in here, not by a
 * caller that may since have been preempted).  Blocking calls sleep and
 * wait for the mark here; others get IDGEN_EAGAIN. */
static int run(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, int64_t ms, int fresh,
               int blocking) {
  for (;;) {
    if (w->phase == PHASE_RESERVED) {
      int rc = reserved_check(g, w);
      if (rc == 0)
        fill(g, w);
      if (rc != IDGEN_EAGAIN || !blocking)
        return rc;
      int64_t before = now_ns(g);
      sleep_ns(g, w->due_ns - before);
      /* Charge what the sleep cost, not only the wait asked: on a clock
       * that stands still just before the tick, each wait asked is that
       * nanosecond, and the call went round max_wait_ms / 1 ns times,
       * sleeping a nanosleep's least each time.  The system clock: the
       * real time slept, as for a resumed call.  An injected clock that
       * has not moved at all across the sleep: at least a millisecond
       * (the budget's unit), so at most allowance_ms + 1 rounds.  (Not
       * "ends the call": a clock read from a coarse source stands still
       * across a short sleep and moves later.) */
      if (g->clock.now_ns == NULL)
        idgen__sf_wait_early(w);
      else if (now_ns(g) == before && w->due_ns - before < NS_PER_MS)
        w->charged_ns += NS_PER_MS - (w->due_ns - before);
      continue;
    }
    uint64_t first = 0, last = 0;
    int r = claim_once(g, w, ms, &first, &last);
    if (r < 0)
      return r;
    if (r == CL_STALE) {
      /* Refuse only on a reading taken after the claim failed: the
       * caller's may be old (it was preempted while other threads moved
       * `next` on), and so may one taken here (preempted between taking
       * it and claiming).  So read the clock again, and claim again only
       * if the state the claim failed on fits at that reading; else a claim
       * at it would fail too (`next` only grows): refuse.  A claim that
       * fails again saw other calls take values since, as a failed
       * compare-and-swap does.  (Claiming again on any newer reading never
       * ended with a clock that moves a millisecond a reading, until it had
       * made up a step back: test_racing_clock_refused_soon.) */
      /* `seen` first: every reading it holds was taken before this one,
       * so it is above this one only if the clock stepped back. */
      uint64_t seen = atomic_load_explicit(&g->seen, memory_order_acquire);
      int64_t now = idgen__ns_to_ms(now_ns(g));
      int moved = !fresh || now > ms;
      if (moved) {
        fresh = 1;
        ms = now;
        if (w->charged_ns == 0)
          budget_start(g, w, ms, seen);
        if (ms >= g->epoch)
          see(g, ms); /* every reading counts, claimed with or not */
      }
      if (may_fit(g, w, ms, first, &first, &last) && moved)
        continue;
      return w->n > 1 && first <= last ? IDGEN_EBATCH : refuse(g);
    }
    if (r == CL_MARK) {
      /* Within the clock's window, above the mark: the keeper moves the
       * mark (or the lease is gone); the budget bounds the wait. */
      int64_t left = idgen__sf_allowance_ns(w) - w->charged_ns;
      int64_t rc = idgen__sf_remote(g)
                       ? remote_wait(g, last)
                       : idgen__keeper_wait(g, last, blocking ? (left > 0 ? left : 0) : -1);
      if (rc == IDGEN_EAGAIN && blocking) {
        /* Another process's keeper: look again in a millisecond. */
        if (w->charged_ns + NS_PER_MS > idgen__sf_allowance_ns(w))
          return IDGEN_EMARK;
        w->charged_ns += NS_PER_MS;
        sleep_ns(g, NS_PER_MS);
        ms = idgen__ns_to_ms(now_ns(g));
        fresh = 1;
        continue;
      }
      if (rc == IDGEN_EAGAIN) {
        /* Look again in a millisecond, within the budget. */
        if (w->charged_ns + NS_PER_MS > idgen__sf_allowance_ns(w))
          return IDGEN_EMARK;
        ask(g, w, NS_PER_MS);
        w->due_ns = now_ns(g) + NS_PER_MS;
        return IDGEN_EAGAIN;
      }
      if (rc < 0)
        return (int)rc;
      if (blocking)
        w->charged_ns += rc; /* the ns it waited */
      ms = idgen__ns_to_ms(now_ns(g));
      fresh = 1;
      continue;
    }
    w->first = first;
    w->last = last;
    if (r == CL_NOW) {
      fill(g, w);
      return 0;
    }
    /* Reserved: counted once, as waiting out a used-up tick or as waiting
     * for the clock beyond it (or for a clock that stepped back). */
    int64_t target_ms = g->epoch + (int64_t)(last >> g->seq_bits) * g->unit - g->borrow_ms;
    atomic_fetch_add_explicit(
        target_ms <= tick_end_ms(g, ms) && !w->stepped ? &g->sequence_exhausted : &g->clock_waits,
        1, memory_order_relaxed);
    w->phase = PHASE_RESERVED;
  }
}

/* Starts a call of n values at the caller's reading `ms`; `from` is a
 * resume's monotonic reading, negated, that its waits count from (or 0). */
static int call(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n, int64_t ms,
                idgen_snowflake_wait_t *w, int blocking, int64_t from) {
  memset(w, 0, sizeof *w);
  w->asked_mono_ns = from;
  w->ids = ids;
  w->n = n;
  budget_start(g, w, ms, atomic_load_explicit(&g->seen, memory_order_acquire));
  return run(g, w, ms, 0, blocking);
}

/* One take from `next`: a locked fetch_add, or for the owner a restartable
 * sequence (bias.c) that looks at `bias` and commits next + 1 with a plain
 * store.  A section that the kernel aborts (preemption, a signal, another
 * thread's revoking barrier) falls back to the locked take, which is always
 * safe for the owner. */
static inline __attribute__((always_inline)) uint64_t take(idgen_snowflake_gen_t *g, int owner) {
#if IDGEN_BIAS_TAKE
  if (owner) {
    uint64_t c;
    if (IDGEN_LIKELY(idgen__owner_take((uint64_t *)&g->next, (const uintptr_t *)&g->bias,
                                       idgen__bias_me(), &c)))
      return c;
  }
#else
  (void)owner;
#endif
  return atomic_fetch_add_explicit(&g->next, 1, memory_order_acq_rel);
}

/* One take and its check: 1 with *id, or 0 (c dropped; if it was ahead
 * of the window, the generator is marked ahead).  The ceiling is read after
 * the value is taken: a fence (ceiling 0) that comes before the take in
 * `next`'s order is seen (DESIGN §11). */
static inline __attribute__((always_inline)) int fast_try(idgen_snowflake_gen_t *g, uint64_t base,
                                                          uint64_t *id, int owner) {
  uint64_t c = take(g, owner);
  if (IDGEN_LIKELY(c - base <= g->fast_span &&
                   c <= atomic_load_explicit(&g->ceiling, memory_order_relaxed))) {
    *id = compose(g, c);
    return 1;
  }
  /* c was past the window: the generator is ahead of the clock.  Until it
   * is not, look before taking (fast_other), so that calls made while it
   * is ahead do not each throw away a future value. */
  if (c >= base)
    atomic_fetch_or_explicit(&g->seen, SEEN_AHEAD, memory_order_relaxed);
  return 0;
}

/* The hot path's other cases (`a`: g->seen as loaded): the first call of a
 * millisecond, which records it; a reading below `seen` (the clock stepped
 * back, or another thread's reading is newer); and the generator ahead. */
static __attribute__((noinline)) int fast_other(idgen_snowflake_gen_t *g, uint64_t x, uint64_t base,
                                                uint64_t *id, int owner, uint64_t a) {
  while ((a & ~SEEN_AHEAD) < x &&
         !atomic_compare_exchange_weak_explicit(&g->seen, &a, (a & SEEN_AHEAD) | x,
                                                memory_order_relaxed, memory_order_relaxed))
    ;
  if (!(a & SEEN_AHEAD))
    return fast_try(g, base, id, owner);
  uint64_t c = atomic_load_explicit(&g->next, memory_order_relaxed);
  if (c - base <= g->fast_span && c <= atomic_load_explicit(&g->ceiling, memory_order_relaxed)) {
    atomic_fetch_and_explicit(&g->seen, ~SEEN_AHEAD, memory_order_relaxed);
    return fast_try(g, base, id, owner);
  }
  return 0;
}

/* The hot path's decision for one take at tick x (= base >> S); see
 * fast_take.  `seen` equal to x says both that x is recorded and that the
 * generator is not ahead: one comparison, as the flag's test was. */
static inline __attribute__((always_inline)) int fast_body(idgen_snowflake_gen_t *g, uint64_t x,
                                                           uint64_t base, uint64_t *id, int owner) {
  uint64_t a = atomic_load_explicit(&g->seen, memory_order_relaxed);
  if (IDGEN_LIKELY(a == x))
    return fast_try(g, base, id, owner);
  return fast_other(g, x, base, id, owner, a);
}

/*
 * Ownership (bias.c, DESIGN §1).  1 if the calling thread owns g: it may
 * take with the restartable sequence.  0 if it must take locked, and from
 * now on may: no owner's section that began before can still commit.
 * IDGEN_EINVAL if the ownership cannot be revoked (the barrier refused
 * after it was registered: a seccomp filter installed since).
 */
static int bias_enter_slow(idgen_snowflake_gen_t *g, uintptr_t me) {
  for (;;) {
    uintptr_t b = atomic_load_explicit(&g->bias, memory_order_acquire);
    if (b == me)
      return 1;
    /* Shared; or this thread is the owner being revoked: its own sections
     * are behind it in program order (a signal aborts one in progress). */
    if (b == BIAS_SHARED || (b & ~BIAS_REVOKING) == me)
      return 0;
    if (b == BIAS_FREE) {
      uintptr_t want = idgen__bias_can_own() ? me : BIAS_SHARED;
      if (atomic_compare_exchange_strong_explicit(&g->bias, &b, want, memory_order_acq_rel,
                                                  memory_order_acquire))
        return want == me;
      continue;
    }
    if (!(b & BIAS_REVOKING)) {
      atomic_compare_exchange_strong_explicit(&g->bias, &b, b | BIAS_REVOKING, memory_order_acq_rel,
                                              memory_order_acquire);
      continue;
    }
    /* Owned by another thread and marked.  The barrier restarts every
     * section running on another CPU (one preempted is restarted when it
     * runs again); a section that restarts, or starts later, sees the mark.
     * Each thread that saw the mark makes sure for itself: nothing waits
     * for another thread. */
    if (idgen__bias_barrier() != 0)
      return IDGEN_EINVAL;
    atomic_compare_exchange_strong_explicit(&g->bias, &b, BIAS_SHARED, memory_order_acq_rel,
                                            memory_order_acquire);
    return 0;
  }
}

/* Makes g shared for good, revoking another thread's ownership; the caller
 * never becomes the owner.  An owner calling it stays one: its own takes
 * are behind it in program order.  0, or IDGEN_EINVAL as bias_enter_slow. */
static int bias_share(idgen_snowflake_gen_t *g, uintptr_t me) {
  for (;;) {
    uintptr_t b = atomic_load_explicit(&g->bias, memory_order_acquire);
    if (b == BIAS_SHARED || (b & ~BIAS_REVOKING) == me)
      return 0;
    if (b != BIAS_FREE)
      return bias_enter_slow(g, me) < 0 ? IDGEN_EINVAL : 0;
    if (atomic_compare_exchange_strong_explicit(&g->bias, &b, BIAS_SHARED, memory_order_acq_rel,
                                                memory_order_acquire))
      return 0;
  }
}

static inline int bias_enter(idgen_snowflake_gen_t *g, uintptr_t me) {
  uintptr_t b = atomic_load_explicit(&g->bias, memory_order_acquire);
  if (IDGEN_LIKELY(b == me))
    return 1;
  if (IDGEN_LIKELY(b == BIAS_SHARED))
    return 0;
  return bias_enter_slow(g, me);
}

/* The hot path: one fetch_add when the clock allows it.  1 with *id, or 0
 * for the slow path (nothing issued). */
static inline __attribute__((always_inline)) int fast_take(idgen_snowflake_gen_t *g, int64_t ms,
                                                           uint64_t *id) {
  if (IDGEN_UNLIKELY(!g->fast))
    return 0;
  /* Unsigned: a clock before the epoch gives a huge x and takes the slow path. */
  uint64_t x = (uint64_t)(ms - g->epoch);
  if (IDGEN_UNLIKELY(x > g->max_tick))
    return 0;
  uint64_t base = x << g->seq_bits;
  int own = bias_enter(g, idgen__bias_me());
  if (IDGEN_LIKELY(own > 0))
    return fast_body(g, x, base, id, 1);
  if (IDGEN_UNLIKELY(own < 0))
    return 0; /* the slow path reports it */
  return fast_body(g, x, base, id, 0);
}

int idgen_snowflake_gen_next(idgen_snowflake_gen_t *g, uint64_t *id) {
  if (IDGEN_UNLIKELY(g->fork_gen != idgen__fork_gen()) && !g->shared)
    return IDGEN_EFORKED;
  int64_t ms = now_ms(g);
  if (IDGEN_LIKELY(fast_take(g, ms, id)))
    return 0;
  idgen_snowflake_wait_t w;
  return call(g, id, 1, ms, &w, 1, 0);
}

int idgen_snowflake_gen_next_n(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n) {
  if (IDGEN_UNLIKELY(g->fork_gen != idgen__fork_gen()) && !g->shared)
    return IDGEN_EFORKED;
  if (n == 0)
    return 0;
  idgen_snowflake_wait_t w;
  return call(g, ids, n, now_ms(g), &w, 1, 0);
}

int idgen__sf_next_n_async_from(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n,
                                idgen_snowflake_wait_t *w, int64_t from) {
  if (IDGEN_UNLIKELY(g->fork_gen != idgen__fork_gen()) && !g->shared)
    return IDGEN_EFORKED;
  if (n == 0)
    return 0;
  int64_t ms = now_ms(g);
  if (n == 1 && fast_take(g, ms, ids)) /* one ID: next()'s hot path */
    return 0;
  return call(g, ids, n, ms, w, 0, from);
}

int idgen_snowflake_gen_next_n_async(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n,
                                     idgen_snowflake_wait_t *w) {
  return idgen__sf_next_n_async_from(g, ids, n, w, 0);
}

int idgen_snowflake_gen_resume(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, uint64_t *ids) {
  if (IDGEN_UNLIKELY(g->fork_gen != idgen__fork_gen()) && !g->shared)
    return IDGEN_EFORKED;
  w->ids = ids + w->offset;
  idgen__sf_wait_early(w);
  return run(g, w, idgen__ns_to_ms(now_ns(g)), 1, 0);
}

uint64_t idgen_snowflake_gen_capacity(idgen_snowflake_gen_t *g) {
  idgen_snowflake_wait_t w;
  uint64_t seen = atomic_load_explicit(&g->seen, memory_order_acquire);
  int64_t ms = idgen__ns_to_ms(now_ns(g));
  if (ms < g->epoch)
    return 0;
  memset(&w, 0, sizeof w);
  budget_start(g, &w, ms, seen);
  const unsigned S = g->seq_bits;
  uint64_t x = (uint64_t)(ms - g->epoch) / (uint64_t)g->unit;
  uint64_t tr = (uint64_t)(w.deadline_ns / NS_PER_MS + g->borrow_ms - g->epoch) / (uint64_t)g->unit;
  if (x > g->max_tick)
    return 0;
  uint64_t limr = tr > g->max_tick ? g->max_state : (tr << S) | g->seq_mask;
  if (limr > g->max_state)
    limr = g->max_state;
  uint64_t start = atomic_load_explicit(&g->next, memory_order_acquire);
  if ((start >> S) < x) /* a new tick, with the largest random start */
    start = (x << S) | (g->random_start ? g->seq_mask >> 1 : 0);
  return start > limr ? 0 : limr - start + 1;
}

const idgen_layout_t *idgen_snowflake_gen_layout(const idgen_snowflake_gen_t *g) {
  return &g->layout;
}

void idgen_snowflake_gen_stats(idgen_snowflake_gen_t *g, idgen_snowflake_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->clock_waits = atomic_load_explicit(&g->clock_waits, memory_order_relaxed);
  st->clock_refusals = atomic_load_explicit(&g->clock_refusals, memory_order_relaxed);
  st->sequence_exhausted = atomic_load_explicit(&g->sequence_exhausted, memory_order_relaxed);
  /* After a fence (ceiling 0) no owner may take unlocked any more: an
   * owner's plain store of next + 1 can still sit in its CPU's store buffer
   * while its look at the ceiling already passed, and the read below would
   * miss the value it issues.  Revoking waits for no one (the owner's
   * committed takes are visible after the barrier, the rest restart
   * locked); an owned generator is then shared for good, which only a
   * fenced or suspended lease costs. */
  int unsure = 0;
  if (atomic_load_explicit(&g->ceiling, memory_order_acquire) == 0)
    unsure = bias_share(g, idgen__bias_me()) < 0;
  /* A read-modify-write, not a load: every value taken later in `next`'s
   * order is then seen with the ceiling as it is now, so after a fence
   * nothing can be issued above last_id (DESIGN §11). */
  uint64_t nx = atomic_fetch_add_explicit(&g->next, 0, memory_order_acq_rel);
  uint64_t last = nx == 0 ? 0 : nx - 1 > g->max_state ? g->max_state : nx - 1;
  if (unsure) {
    /* The owner could not be revoked (bias.c: the barrier refused since):
     * it issues nothing above the durable mark, the ceiling's last value. */
    idgen_snowflake_lease_status_t ls;
    idgen_snowflake_gen_lease_status(g, &ls);
    uint64_t m = ls.bound ? idgen__sf_state_of_ms(g, ls.lease.mark_ms) : g->max_state;
    if (m > last)
      last = m;
  }
  if (last == 0 && nx == 0)
    return;
  st->last_id = compose(g, last);
  int64_t ahead = g->epoch + (int64_t)(last >> g->seq_bits) * g->unit - now_ms(g);
  st->borrowed_ms = ahead > 0 ? ahead : 0;
}

/* The generator's size, rounded up to whole cache lines. */
static size_t gen_size(void) {
  return (sizeof(idgen_snowflake_gen_t) + IDGEN_CACHELINE - 1) & ~(size_t)(IDGEN_CACHELINE - 1);
}

/* The settings' own bounds (gen_setup's first step). */
static int settings_check(const idgen_snowflake_settings_t *s, char *err, size_t errlen) {
  if (s->max_borrow_ms < 0 || s->max_borrow_ms > BORROW_MAX_MS)
    return idgen__err(err, errlen, IDGEN_ERANGE, "max_borrow_ms %" PRId64 " out of range 0..%lld",
                      s->max_borrow_ms, BORROW_MAX_MS);
  if (s->max_wait_ms < 0 || s->max_wait_ms > WAIT_MAX_MS)
    return idgen__err(err, errlen, IDGEN_ERANGE, "max_wait_ms %" PRId64 " out of range 0..%lld",
                      s->max_wait_ms, WAIT_MAX_MS);
  if (s->clock_mode != IDGEN_CLOCK_FAST && s->clock_mode != IDGEN_CLOCK_PRECISE &&
      s->clock_mode != IDGEN_CLOCK_COARSE)
    return idgen__err(err, errlen, IDGEN_EINVAL, "clock_mode %d unknown", (int)s->clock_mode);
  return 0;
}

/* What the lease says (*lease), checked against the layout: a lease of
 * another layout, or from a registry library of another release, is
 * refused.  s->lease is set. */
static int lease_check(const idgen_layout_t *l, const idgen_snowflake_settings_t *s,
                       idgen_lease_info_t *lease, char *err, size_t errlen) {
  const idgen__lease_bind_t *bind = idgen__lease_bind(s->lease);
  /* The version first, before anything else of the table is read: a
   * registry library of another version may lay out the rest otherwise. */
  if (bind->version != IDGEN__BIND_VERSION)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "the lease's bind table is version %d (from libidgen-registry of another "
                      "release) and libidgen %s binds version %d: install libidgen and "
                      "libidgen-registry of the same release",
                      bind->version, idgen_version(), IDGEN__BIND_VERSION);
  bind->info(s->lease, lease);
  if (lease->field < 0 || lease->field >= l->nfields ||
      l->fields[lease->field].kind != IDGEN_FIELD_NODE ||
      lease->worker >> l->fields[lease->field].bits != 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "the lease was not acquired for this layout (field %d, %s %" PRIu64 ")",
                      lease->field, lease->pool, lease->worker);
  return 0;
}

/* The node fields' bits of every ID (*out): the settings' values, the
 * leased field's from the lease. */
static int node_bits_of(const idgen_layout_t *l, const idgen_snowflake_settings_t *s,
                        const idgen_lease_info_t *lease, uint64_t *out, char *err, size_t errlen) {
  uint64_t node_bits = 0;
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *f = &l->fields[i];
    if (f->kind != IDGEN_FIELD_NODE)
      continue;
    uint64_t max = (UINT64_C(1) << f->bits) - 1, v = s->node[i];
    if (s->lease != NULL && i == lease->field)
      v = lease->worker;
    if (v > max)
      return idgen__err(err, errlen, IDGEN_ERANGE, "%s %" PRIu64 " out of range 0..%" PRIu64,
                        f->name, v, max);
    node_bits |= v << f->shift;
  }
  *out = node_bits;
  return 0;
}

/* g from the layout and the settings: the fields, the hot path's spans,
 * the bias, the atomics. */
static void gen_fill(idgen_snowflake_gen_t *g, int shared, const idgen_layout_t *l,
                     const idgen_snowflake_settings_t *s, uint64_t node_bits) {
  memset(g, 0, gen_size());
  g->shared = shared;
  g->owner = (int)getpid();

  const idgen_field_t *tf = &l->fields[l->time_index], *sf = &l->fields[l->sequence_index];
  g->layout = *l;
  g->epoch = l->epoch_ms;
  g->unit = l->unit_ms;
  g->borrow_ms = s->max_borrow_ms;
  g->wait_ms = s->max_wait_ms;
  g->node_bits = node_bits;
  g->seq_bits = sf->bits;
  g->seq_shift = sf->shift;
  g->time_shift = tf->shift;
  g->seq_mask = (UINT64_C(1) << sf->bits) - 1;
  g->max_tick = (UINT64_C(1) << tf->bits) - 1;
  unsigned state_bits = tf->bits + sf->bits;
  /* Keep one value free in a full 64-bit state so that `next` never wraps. */
  g->max_state = state_bits == 64 ? UINT64_MAX - 1 : (UINT64_C(1) << state_bits) - 1;
  g->random_start = s->random_sequence_start != 0;
  g->clock_kind = s->clock_mode == IDGEN_CLOCK_FAST     ? CLOCK_KIND_FAST
                  : s->clock_mode == IDGEN_CLOCK_COARSE ? CLOCK_KIND_COARSE
                                                        : CLOCK_KIND_PRECISE;
  if (s->clock != NULL) {
    g->clock = *s->clock;
    g->clock_kind = CLOCK_KIND_INJECTED;
  }
  /* Hot path: c - (x << S) <= fast_span means x <= tick(c) <= x + borrow. */
  g->fast = l->unit_ms == 1 && state_bits <= 63 && s->clock == NULL;
  if ((uint64_t)g->borrow_ms < (UINT64_C(1) << (63 - sf->bits)))
    g->fast_span = (((uint64_t)g->borrow_ms + 1) << sf->bits) - 1;
  else
    g->fast_span = UINT64_C(1) << 63;
  g->fork_gen = idgen__fork_gen();
  /* Only the hot path takes unlocked, and only in one process: another
   * process's takes need every take locked.  A bound generator may be
   * owned too: its fence's reading revokes the owner (gen_stats). */
  atomic_init(&g->bias, g->fast && !shared ? BIAS_FREE : BIAS_SHARED);
  atomic_init(&g->next, 0);
  atomic_init(&g->seen, 0);
  atomic_init(&g->ceiling, g->max_state);
}

/* The clock within the layout's life: after its epoch, before its end. */
static int gen_check_now(idgen_snowflake_gen_t *g, const idgen_layout_t *l, char *err,
                         size_t errlen) {
  char date[IDGEN_TIME_TEXT_MAX], now_buf[IDGEN_TIME_TEXT_MAX];
  int64_t ms = idgen__ns_to_ms(now_ns(g));
  int64_t horizon = idgen_layout_horizon_ms(l);
  if (ms >= horizon) {
    idgen__date_format(horizon, date);
    return idgen__err(err, errlen, IDGEN_EEXHAUSTED, "layout ran out on %s", date);
  }
  if (ms < l->epoch_ms) {
    idgen_time_format(l->epoch_ms, date);
    idgen_time_format(ms, now_buf);
    return idgen__err(err, errlen, IDGEN_ECLOCK, "clock %s is before the layout epoch %s", now_buf,
                      date);
  }
  return 0;
}

/* A bound generator (s->lease set) starts above the lease's marks and
 * start_after_ms, and its keeper runs. */
static int gen_start_bound(idgen_snowflake_gen_t *g, const idgen_snowflake_settings_t *s,
                           const idgen_lease_info_t *lease, char *err, size_t errlen) {
  /* Start above everything the worker ID's earlier holders may have
   * issued (durable), and above start_after_ms. */
  uint64_t from = 0, v;
  if ((v = idgen__sf_state_of_ms(g, lease->mark_ms)) != 0)
    from = v + 1;
  if ((v = idgen__sf_state_of_ms(g, lease->floor_ms)) != 0 && v + 1 > from)
    from = v + 1; /* its layout's floor in the registry's ID space */
  if ((v = idgen__sf_state_of_ms(g, s->start_after_ms)) != 0 && v + 1 > from)
    from = v + 1;
  if (from > g->max_state)
    return idgen__err(err, errlen, IDGEN_EEXHAUSTED,
                      "the lease's high-water mark is at the end of the layout");
  atomic_init(&g->next, from ? from : 1);
  return idgen__keeper_start(g, s->lease, err, errlen);
}

/* The start of a generator its host keeps (snowflake_int.h): above the
 * marks, as gen_start_bound starts a bound one. */
int idgen__sf_external_start(idgen_snowflake_gen_t *g, int64_t mark_ms, int64_t floor_ms, char *err,
                             size_t errlen) {
  uint64_t from = 0, v;
  if ((v = idgen__sf_state_of_ms(g, mark_ms)) != 0)
    from = v + 1;
  if ((v = idgen__sf_state_of_ms(g, floor_ms)) != 0 && v + 1 > from)
    from = v + 1;
  if (from > g->max_state)
    return idgen__err(err, errlen, IDGEN_EEXHAUSTED,
                      "the lease's high-water mark is at the end of the layout");
  g->external = 1;
  atomic_store(&g->bias, BIAS_SHARED);
  atomic_store(&g->ceiling, 0);
  atomic_store(&g->remote_want, 0);
  atomic_store(&g->next, from ? from : 1);
  return 0;
}

void idgen__sf_external_keep(idgen_snowflake_gen_t *g, int64_t mark_ms) {
  atomic_store_explicit(&g->ceiling, mark_ms > 0 ? idgen__sf_state_of_ms(g, mark_ms) : 0,
                        memory_order_release);
}

int64_t idgen__sf_external_needed_ms(idgen_snowflake_gen_t *g) {
  int64_t wall = idgen__ns_to_ms(now_ns(g));
  uint64_t nx = atomic_load_explicit(&g->next, memory_order_acquire);
  uint64_t want = atomic_load_explicit(&g->remote_want, memory_order_relaxed);
  if (want > nx)
    nx = want;
  int64_t own = idgen__sf_ms_of_state(g, nx > g->max_state ? g->max_state : nx);
  return own > wall ? own : wall;
}

/* Makes a generator in g (gen_size() bytes, aligned): idgen_snowflake_gen_new's
 * checks and start.  On failure g holds nothing to release. */
static int gen_setup(idgen_snowflake_gen_t *g, int shared, const idgen_layout_t *l,
                     const idgen_snowflake_settings_t *s, char *err, size_t errlen) {
  idgen_snowflake_settings_t defaults;
  if (s == NULL) {
    idgen_snowflake_settings_init(&defaults);
    s = &defaults;
  }
  int rc = settings_check(s, err, errlen);
  idgen_lease_info_t lease;
  if (rc == 0 && s->lease != NULL)
    rc = lease_check(l, s, &lease, err, errlen);
  uint64_t node_bits = 0;
  if (rc == 0)
    rc = node_bits_of(l, s, s->lease != NULL ? &lease : NULL, &node_bits, err, errlen);
  if (rc < 0)
    return rc;
  gen_fill(g, shared, l, s, node_bits);
  if ((rc = gen_check_now(g, l, err, errlen)) < 0)
    return rc;
  return s->lease != NULL ? gen_start_bound(g, s, &lease, err, errlen) : 0;
}

int idgen_snowflake_gen_new(idgen_snowflake_gen_t **out, const idgen_layout_t *l,
                            const idgen_snowflake_settings_t *s, char *err, size_t errlen) {
  *out = NULL;
  /* aligned_alloc wants a size that is a multiple of the alignment. */
  idgen_snowflake_gen_t *g = aligned_alloc(IDGEN_CACHELINE, gen_size());
  if (g == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  int rc = gen_setup(g, 0, l, s, err, errlen);
  if (rc < 0) {
    free(g);
    return rc;
  }
  *out = g;
  return 0;
}

size_t idgen_snowflake_gen_shared_size(void) { return gen_size(); }

int idgen_snowflake_gen_init_shared(void *mem, const idgen_layout_t *l,
                                    const idgen_snowflake_settings_t *s, char *err, size_t errlen) {
  if (mem == NULL || (uintptr_t)mem % IDGEN_CACHELINE != 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "shared generator memory must be aligned to %d bytes", IDGEN_CACHELINE);
  return gen_setup(mem, 1, l, s, err, errlen);
}

void idgen_snowflake_gen_fini_shared(idgen_snowflake_gen_t *g) {
  if (g != NULL && g->keeper != NULL && !idgen__sf_remote(g))
    idgen__keeper_stop(g);
}

void idgen_snowflake_gen_free(idgen_snowflake_gen_t *g) {
  if (g == NULL)
    return;
  if (g->keeper != NULL)
    idgen__keeper_stop(g);
  free(g);
}
