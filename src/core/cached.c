/*
 * cached.c -- the cached Snowflake generator (idgen.h, "The cached Snowflake
 * generator"; docs/DESIGN.md §12).
 *
 * The ring is a bounded single-producer, multi-consumer queue in the manner
 * of Vyukov's: each slot carries a sequence word saying whose turn it is.
 * Slot i of position p (p & mask == i) is
 *   free for the filler at position p   when seq == p,
 *   ready for a take at position p       when seq == p + 1,
 * and a take that has read it gives it back for position p + size by
 * storing seq = p + size.  Takes claim positions with one compare-and-swap
 * on `head`; the filler alone advances `tail`.
 *
 * Order: the filler puts the IDs of each batch, which the generator issued
 * in increasing order, into consecutive positions, and batches follow one
 * another, so the ID at a position is larger than the ID at every earlier
 * one.  A take claims the position `head` names and moves it on; a take
 * that starts after another returned reads a `head` at least one past the
 * other's position, so it gets a larger ID.  A take served directly by the
 * generator (the ring empty) holds `fill_mu`, which the filler holds from
 * asking the generator until its IDs are in the ring: so every ID already
 * in the ring when the direct take looked was taken before it, and every ID
 * the filler puts later was issued after it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "snowflake_int.h"

typedef struct slot {
  _Atomic uint64_t seq;
  _Atomic uint64_t id; /* relaxed: ordered by seq; atomic for the stats' peek */
} slot_t;

struct idgen_cached_gen {
  /* Read-only after creation. */
  idgen_snowflake_gen_t *g;
  slot_t *slots;
  uint64_t size, mask;
  uint64_t low_water; /* wake the filler below this many ready */
  int64_t schedule_ms;
  int64_t max_wait_ms;
  idgen_cache_empty_t on_empty;
  unsigned fork_gen;

  /* The takes' cursor, alone on its line. */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t head;

  /* The filler's cursor as published (written once a batch). */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t tail;
  _Atomic int filler_idle; /* the filler sleeps on fill_cv */
  _Atomic int waiters;     /* takes sleeping on ready_cv */
  _Atomic int filler_error;
  _Atomic int64_t age_max_ms;

  /* Counters of the slow paths and the filler (never on the take's path
   * while the ring has IDs, except taken, counted by the filler). */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t filled, fills, empty, direct, waits, rejected;

  pthread_mutex_t fill_mu; /* the filler from asking the generator to publishing */
  pthread_cond_t fill_cv;  /* the filler's sleep */
  pthread_mutex_t ready_mu;
  pthread_cond_t ready_cv; /* takes waiting for the filler */
  int stop;                /* under fill_mu */
  pthread_t filler;
  int started;        /* the filler thread runs */
  uint64_t buf[4096]; /* the filler's batch, under fill_mu */
};

static uint64_t ready_now(idgen_cached_gen_t *c) {
  uint64_t t = atomic_load_explicit(&c->tail, memory_order_acquire);
  uint64_t h = atomic_load_explicit(&c->head, memory_order_acquire);
  return t > h ? t - h : 0;
}

/* A deadline `ms` from now on CLOCK_MONOTONIC, for pthread_cond_timedwait
 * on a condition made with that clock. */
static struct timespec deadline_in(int64_t ms) {
  int64_t ns = idgen__mono_ns() + ms * NS_PER_MS;
  return (struct timespec){.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
}

/* Puts ids[0..n) at positions tail.. (the room was checked: each slot is
 * free, or about to be, its take between its claim and its release). */
static void publish(idgen_cached_gen_t *c, const uint64_t *ids, size_t n) {
  uint64_t t = atomic_load_explicit(&c->tail, memory_order_relaxed);
  for (size_t i = 0; i < n; i++, t++) {
    slot_t *s = &c->slots[t & c->mask];
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != t)
      ; /* a take claimed it and has not yet given it back: nanoseconds */
    atomic_store_explicit(&s->id, ids[i], memory_order_relaxed);
    atomic_store_explicit(&s->seq, t + 1, memory_order_release);
  }
  atomic_store_explicit(&c->tail, t, memory_order_release);
  atomic_fetch_add_explicit(&c->filled, n, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->fills, 1, memory_order_relaxed);
  /* Dekker with a waiting take: it counts itself, then looks at the ring;
   * we publish, then look at the count. */
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load_explicit(&c->waiters, memory_order_relaxed) > 0) {
    pthread_mutex_lock(&c->ready_mu);
    pthread_cond_broadcast(&c->ready_cv);
    pthread_mutex_unlock(&c->ready_mu);
  }
}

/* How many values g issues now without waiting: up to the last of the tick
 * max_borrow_ms ahead of the wall clock (the filler never makes a call
 * wait for the clock, and never borrows beyond what g allows). */
static uint64_t issuable_now(const idgen_snowflake_gen_t *g) {
  int64_t ms = idgen__ns_to_ms(idgen__sf_now_ns(g));
  if (ms < g->epoch)
    return 0;
  uint64_t x = (uint64_t)(ms - g->epoch) / (uint64_t)g->unit;
  if (x > g->max_tick)
    return 0;
  uint64_t lim = idgen__sf_state_of_ms(g, ms + g->borrow_ms);
  uint64_t start = atomic_load_explicit(&g->next, memory_order_relaxed);
  if ((start >> g->seq_bits) < x) /* a new tick, with the largest random start */
    start = (x << g->seq_bits) | (g->random_start ? g->seq_mask >> 1 : 0);
  /* Values above a bound generator's ceiling would wait for a mark write,
   * holding fill_mu and with it any take that falls back to the generator
   * (an event loop's): ask the lease keeper for the mark without waiting,
   * and take only what is below the ceiling now. */
  uint64_t ceiling = atomic_load_explicit(&g->ceiling, memory_order_acquire);
  if (lim > ceiling) {
    if (g->keeper != NULL && start <= lim)
      idgen__keeper_wait((idgen_snowflake_gen_t *)g, lim, -1); /* a poke: never waits */
    lim = ceiling;
  }
  return start > lim ? 0 : lim - start + 1;
}

/* One batch from the generator into the ring, under fill_mu: as many as
 * fit and as the generator issues now without waiting for the clock.
 * Returns the count put, 0 if the generator has none now, or an error. */
static int fill_once(idgen_cached_gen_t *c) {
  uint64_t room = c->size - ready_now(c);
  if (room == 0)
    return 0;
  uint64_t k = issuable_now(c->g);
  if (k > room)
    k = room;
  if (k > sizeof c->buf / sizeof c->buf[0])
    k = sizeof c->buf / sizeof c->buf[0];
  if (k == 0)
    return 0;
  int rc = idgen_snowflake_gen_next_n(c->g, c->buf, (size_t)k);
  if (rc == IDGEN_EBATCH) /* the window moved since capacity(): one */
    rc = idgen_snowflake_gen_next_n(c->g, c->buf, (size_t)(k = 1));
  if (rc < 0)
    return rc;
  publish(c, c->buf, (size_t)k);
  return (int)k;
}

/* Fills the ring until it is full or the generator has no more now. */
static int fill_up(idgen_cached_gen_t *c) {
  int rc, any = 0;
  while ((rc = fill_once(c)) > 0)
    any = 1;
  if (rc < 0) {
    atomic_store_explicit(&c->filler_error, rc, memory_order_relaxed);
    return rc;
  }
  atomic_store_explicit(&c->filler_error, 0, memory_order_relaxed);
  return any;
}

static void *filler_main(void *arg) {
  idgen_cached_gen_t *c = arg;
  const int64_t tick_ms = c->g->unit > 0 ? c->g->unit : 1;
  pthread_mutex_lock(&c->fill_mu);
  while (!c->stop) {
    int rc = fill_up(c);
    /* Then sleep: after an error 100 ms; below the low water mark (the
     * generator had no more now: its clock is max_borrow_ms ahead) one
     * tick; else until a take finds the ring low, or schedule_ms. */
    atomic_store_explicit(&c->filler_idle, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst); /* Dekker with poke_filler */
    int low = ready_now(c) < c->low_water;
    int64_t sleep_ms = rc < 0 ? 100 : low ? tick_ms : c->schedule_ms > 0 ? c->schedule_ms : 1000;
    if (rc < 0 || !low) {
      struct timespec ts = deadline_in(sleep_ms);
      int w = 0;
      while (!c->stop && w != ETIMEDOUT &&
             atomic_load_explicit(&c->filler_idle, memory_order_relaxed))
        w = pthread_cond_timedwait(&c->fill_cv, &c->fill_mu, &ts);
      if (w == ETIMEDOUT && c->schedule_ms > 0 && rc >= 0 && ready_now(c) == c->size)
        atomic_fetch_add_explicit(&c->rejected, 1, memory_order_relaxed);
    } else if (!c->stop) {
      struct timespec ts = deadline_in(sleep_ms);
      pthread_cond_timedwait(&c->fill_cv, &c->fill_mu, &ts);
    }
    atomic_store_explicit(&c->filler_idle, 0, memory_order_relaxed);
  }
  pthread_mutex_unlock(&c->fill_mu);
  return NULL;
}

/* A take saw the ring low: wake the filler if it sleeps. */
static void poke_filler(idgen_cached_gen_t *c) {
  atomic_thread_fence(memory_order_seq_cst); /* Dekker with the filler's sleep */
  if (atomic_load_explicit(&c->filler_idle, memory_order_relaxed) &&
      atomic_exchange_explicit(&c->filler_idle, 0, memory_order_relaxed)) {
    pthread_mutex_lock(&c->fill_mu);
    pthread_cond_signal(&c->fill_cv);
    pthread_mutex_unlock(&c->fill_mu);
  }
}

/* The state of an ID of g (its tick and sequence), to compare with the
 * generator's ceiling. */
static inline uint64_t state_of(const idgen_snowflake_gen_t *g, uint64_t id) {
  return ((id >> g->time_shift) << g->seq_bits) | ((id >> g->seq_shift) & g->seq_mask);
}

/* The lease is lost (the ceiling is 0, or below IDs in the ring): empty the
 * ring, so that nothing made under the lost lease is handed out later. */
static int fenced(idgen_cached_gen_t *c) {
  uint64_t h = atomic_load_explicit(&c->head, memory_order_acquire);
  for (;;) {
    uint64_t t = atomic_load_explicit(&c->tail, memory_order_acquire);
    if (h >= t)
      break;
    /* Claim everything up to t and give the slots back unread. */
    if (atomic_compare_exchange_weak_explicit(&c->head, &h, t, memory_order_acq_rel,
                                              memory_order_acquire)) {
      for (uint64_t p = h; p < t; p++) {
        slot_t *s = &c->slots[p & c->mask];
        while (atomic_load_explicit(&s->seq, memory_order_acquire) != p + 1)
          ;
        atomic_store_explicit(&s->seq, p + c->size, memory_order_release);
      }
      break;
    }
  }
  return IDGEN_ELEASE;
}

static void sample_age(idgen_cached_gen_t *c, uint64_t id) {
  const idgen_snowflake_gen_t *g = c->g;
  int64_t t = g->epoch + (int64_t)(id >> g->time_shift & g->max_tick) * g->unit;
  int64_t age = idgen__ns_to_ms(idgen__sf_now_ns(g)) - t;
  int64_t m = atomic_load_explicit(&c->age_max_ms, memory_order_relaxed);
  while (age > m && !atomic_compare_exchange_weak_explicit(
                        &c->age_max_ms, &m, age, memory_order_relaxed, memory_order_relaxed))
    ;
}

/* Claims n consecutive ready positions: 1 with ids[], 0 if fewer are
 * ready, or IDGEN_ELEASE.  With `poke`, wakes the filler when the ring is
 * low (never while holding fill_mu). */
static inline int take_ring(idgen_cached_gen_t *c, uint64_t *ids, size_t n, int poke) {
  uint64_t h = atomic_load_explicit(&c->head, memory_order_relaxed);
  for (;;) {
    slot_t *last = &c->slots[(h + n - 1) & c->mask];
    /* The filler fills in order, so the last of n ready means all are. */
    if (atomic_load_explicit(&last->seq, memory_order_acquire) != h + n)
      return 0;
    if (atomic_compare_exchange_weak_explicit(&c->head, &h, h + n, memory_order_acq_rel,
                                              memory_order_relaxed))
      break;
  }
  for (size_t i = 0; i < n; i++) {
    slot_t *s = &c->slots[(h + i) & c->mask];
    ids[i] = atomic_load_explicit(&s->id, memory_order_relaxed);
    atomic_store_explicit(&s->seq, h + i + c->size, memory_order_release);
  }
  /* Fenced: the IDs are the generator's, checked against its ceiling now
   * (0 once the lease is lost), as next() checks the values it takes. */
  if (IDGEN_UNLIKELY(state_of(c->g, ids[n - 1]) >
                     atomic_load_explicit(&c->g->ceiling, memory_order_relaxed)))
    return fenced(c);
  /* Signed: a stale tail below our claim means the ring is low too. */
  int64_t left = (int64_t)(atomic_load_explicit(&c->tail, memory_order_relaxed) - (h + n));
  if (IDGEN_UNLIKELY(left < (int64_t)c->low_water) && poke)
    poke_filler(c);
  if (IDGEN_UNLIKELY(((h + n) & 1023) < n)) /* one take in about 1024 */
    sample_age(c, ids[0]);
  return 1;
}

/* Waits for n ready IDs at most max_wait_ms: 1 with ids[], 0 on timeout,
 * or IDGEN_ELEASE.  Locks: ready_mu alone (the filler takes it inside
 * fill_mu to wake us, so we never take fill_mu while holding it). */
static int take_waiting(idgen_cached_gen_t *c, uint64_t *ids, size_t n) {
  atomic_fetch_add_explicit(&c->waits, 1, memory_order_relaxed);
  int64_t until = idgen__mono_ns() + c->max_wait_ms * NS_PER_MS;
  int rc;
  /* Dekker with publish(): count ourselves, then look at the ring. */
  atomic_fetch_add_explicit(&c->waiters, 1, memory_order_seq_cst);
  for (;;) {
    atomic_thread_fence(memory_order_seq_cst);
    if ((rc = take_ring(c, ids, n, 0)) != 0)
      break;
    int64_t left = until - idgen__mono_ns();
    if (left <= 0)
      break;
    poke_filler(c);
    pthread_mutex_lock(&c->ready_mu);
    if (ready_now(c) < n) { /* publish() broadcasts under ready_mu: not lost */
      /* At most a millisecond at a time: a wake-up is never the only way out. */
      int64_t at = idgen__mono_ns() + (left < NS_PER_MS ? left : NS_PER_MS);
      struct timespec ts = {.tv_sec = at / 1000000000, .tv_nsec = at % 1000000000};
      pthread_cond_timedwait(&c->ready_cv, &c->ready_mu, &ts);
    }
    pthread_mutex_unlock(&c->ready_mu);
  }
  atomic_fetch_sub_explicit(&c->waiters, 1, memory_order_relaxed);
  return rc;
}

/* Under fill_mu, so the filler cannot publish: claims every ready
 * position, up to n.  The count m, with ids[0..m); or IDGEN_ELEASE. */
static int64_t claim_ready(idgen_cached_gen_t *c, uint64_t *ids, size_t n) {
  uint64_t t = atomic_load_explicit(&c->tail, memory_order_acquire);
  uint64_t h = atomic_load_explicit(&c->head, memory_order_relaxed), m;
  do {
    if (h >= t)
      return 0;
    m = t - h < n ? t - h : n;
  } while (!atomic_compare_exchange_weak_explicit(&c->head, &h, h + m, memory_order_acq_rel,
                                                  memory_order_relaxed));
  for (uint64_t i = 0; i < m; i++) {
    slot_t *s = &c->slots[(h + i) & c->mask];
    while (atomic_load_explicit(&s->seq, memory_order_acquire) != h + i + 1)
      ; /* published (below tail); its previous take is giving it back */
    ids[i] = atomic_load_explicit(&s->id, memory_order_relaxed);
    atomic_store_explicit(&s->seq, h + i + c->size, memory_order_release);
  }
  if (IDGEN_UNLIKELY(state_of(c->g, ids[m - 1]) >
                     atomic_load_explicit(&c->g->ceiling, memory_order_relaxed)))
    return fenced(c);
  return (int64_t)m;
}

/* The ring cannot serve n: the empty policy. */
static int take_empty(idgen_cached_gen_t *c, uint64_t *ids, size_t n, idgen_snowflake_wait_t *w) {
  atomic_fetch_add_explicit(&c->empty, 1, memory_order_relaxed);
  poke_filler(c);
  if (c->on_empty == IDGEN_CACHE_FAIL || (c->on_empty == IDGEN_CACHE_WAIT && w != NULL))
    return IDGEN_EEMPTY;
  if (c->on_empty == IDGEN_CACHE_WAIT) {
    int rc = take_waiting(c, ids, n);
    return rc == 1 ? 0 : rc < 0 ? rc : IDGEN_EEMPTY;
  }
  /* Direct, under fill_mu so that the filler is not between asking the
   * generator and publishing (see the top of this file).  The IDs still
   * in the ring come first: they are smaller than any the generator makes
   * now, and left there they would be handed out after these. */
  pthread_mutex_lock(&c->fill_mu);
  int64_t m = claim_ready(c, ids, n);
  int rc = m < 0 ? (int)m : 0;
  if (m >= 0 && (size_t)m < n) {
    atomic_fetch_add_explicit(&c->direct, 1, memory_order_relaxed);
    if (w != NULL) {
      rc = idgen_snowflake_gen_next_n_async(c->g, ids + m, n - (size_t)m, w);
      w->offset = (size_t)m; /* resume() fills from ids + m */
    } else {
      rc = idgen_snowflake_gen_next_n(c->g, ids + m, n - (size_t)m);
    }
    /* (Refused, the m IDs from the ring are lost: never handed out.) */
  }
  pthread_mutex_unlock(&c->fill_mu);
  return rc;
}

static inline int take(idgen_cached_gen_t *c, uint64_t *ids, size_t n, idgen_snowflake_wait_t *w) {
  if (IDGEN_UNLIKELY(c->fork_gen != idgen__fork_gen()))
    return IDGEN_EFORKED;
  if (IDGEN_UNLIKELY(n == 0))
    return 0;
  if (IDGEN_UNLIKELY(n > c->size)) /* more than the ring holds: direct, or refused */
    return c->on_empty == IDGEN_CACHE_DIRECT ? take_empty(c, ids, n, w) : IDGEN_EINVAL;
  int rc = take_ring(c, ids, n, 1);
  if (IDGEN_LIKELY(rc == 1))
    return 0;
  if (rc < 0)
    return rc;
  return take_empty(c, ids, n, w);
}

int idgen_cached_gen_take(idgen_cached_gen_t *c, uint64_t *id) { return take(c, id, 1, NULL); }

int idgen_cached_gen_resume(idgen_cached_gen_t *c, idgen_snowflake_wait_t *w, uint64_t *ids) {
  if (IDGEN_UNLIKELY(c->fork_gen != idgen__fork_gen()))
    return IDGEN_EFORKED;
  /* Values reserved when the call began (under fill_mu): below everything
   * the filler has put in the ring since; the generator issues them. */
  if (w->phase == PHASE_RESERVED)
    return idgen_snowflake_gen_resume(c->g, w, ids);
  /* Nothing reserved (it waited for a mark write): what it claims now must
   * be claimed as a direct take claims, under fill_mu, the ring's ready IDs
   * first -- the filler may have put there IDs below anything the generator
   * issues now.  Claiming from the generator alone here would hand out IDs
   * above ring IDs that a later take then gets (the attack on this code
   * found such replies going backwards).  The call keeps its budget. */
  idgen__sf_wait_early(w);
  int64_t deadline_ns = w->deadline_ns, charged_ns = w->charged_ns, from = w->asked_mono_ns;
  int32_t allowance_ms = w->allowance_ms;
  size_t off = w->offset, rest = w->n;
  pthread_mutex_lock(&c->fill_mu);
  int64_t m = claim_ready(c, ids + off, rest);
  int rc = m < 0 ? (int)m : 0;
  if (m >= 0 && (size_t)m < rest) {
    rc = idgen__sf_next_n_async_from(c->g, ids + off + m, rest - (size_t)m, w, from);
    w->offset = off + (size_t)m;
    if (rc == IDGEN_EAGAIN) { /* the first call's budget, not a new one */
      w->charged_ns += charged_ns;
      w->allowance_ms = allowance_ms;
      w->deadline_ns = deadline_ns;
      if (w->charged_ns > idgen__sf_allowance_ns(w))
        rc = w->phase == PHASE_RESERVED ? IDGEN_ECLOCK : IDGEN_EMARK;
    }
  }
  pthread_mutex_unlock(&c->fill_mu);
  return rc;
}

int idgen_cached_gen_take_n(idgen_cached_gen_t *c, uint64_t *ids, size_t n) {
  return take(c, ids, n, NULL);
}

int idgen_cached_gen_take_n_async(idgen_cached_gen_t *c, uint64_t *ids, size_t n,
                                  idgen_snowflake_wait_t *w) {
  return take(c, ids, n, w);
}

int idgen_cached_gen_new(idgen_cached_gen_t **out, idgen_snowflake_gen_t *g,
                         const idgen_cached_settings_t *s, char *err, size_t errlen) {
  idgen_cached_settings_t defaults;
  *out = NULL;
  if (s == NULL) {
    idgen_cached_settings_init(&defaults);
    s = &defaults;
  }
  if (s->boost_power < 0 || s->boost_power > IDGEN_CACHE_BOOST_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL, "boost_power %d is not from 0 to %d",
                      s->boost_power, IDGEN_CACHE_BOOST_MAX);
  int padding = s->padding_percent == 0 ? IDGEN_CACHE_PADDING_DEFAULT : s->padding_percent;
  if (padding < IDGEN_CACHE_PADDING_MIN || padding > IDGEN_CACHE_PADDING_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL, "padding_percent %d is not from %d to %d",
                      s->padding_percent, IDGEN_CACHE_PADDING_MIN, IDGEN_CACHE_PADDING_MAX);
  if (s->schedule_ms < 0 || s->schedule_ms > IDGEN_CACHE_SCHEDULE_MS_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL, "schedule_ms %lld is not from 0 (off) to %d",
                      (long long)s->schedule_ms, IDGEN_CACHE_SCHEDULE_MS_MAX);
  if (s->on_empty != IDGEN_CACHE_DIRECT && s->on_empty != IDGEN_CACHE_WAIT &&
      s->on_empty != IDGEN_CACHE_FAIL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "on_empty %d is not direct, wait or fail",
                      (int)s->on_empty);
  if (s->max_wait_ms < 0 || s->max_wait_ms > IDGEN_MAX_WAIT_MS_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL, "max_wait_ms %lld is not from 0 to %d",
                      (long long)s->max_wait_ms, IDGEN_MAX_WAIT_MS_MAX);
  uint64_t per_tick = UINT64_C(1) << g->seq_bits;
  if ((UINT64_C(1) << (g->seq_bits + (unsigned)s->boost_power)) > IDGEN_CACHE_SLOTS_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "a ring of 2^%u IDs a tick << boost_power %d is more than the %d slots "
                      "allowed; lower boost_power",
                      g->seq_bits, s->boost_power, IDGEN_CACHE_SLOTS_MAX);
  idgen_cached_gen_t *c;
  if (posix_memalign((void **)&c, IDGEN_CACHELINE, sizeof *c) != 0)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  memset(c, 0, sizeof *c);
  c->g = g;
  c->size = per_tick << s->boost_power;
  c->mask = c->size - 1;
  c->low_water = (c->size * (uint64_t)padding + 99) / 100;
  c->schedule_ms = s->schedule_ms;
  c->max_wait_ms = s->max_wait_ms;
  c->on_empty = s->on_empty;
  c->fork_gen = idgen__fork_gen();
  if (posix_memalign((void **)&c->slots, IDGEN_CACHELINE, c->size * sizeof(slot_t)) != 0) {
    unsigned long long slots = c->size;
    free(c);
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory for %llu slots", slots);
  }
  for (uint64_t i = 0; i < c->size; i++)
    atomic_init(&c->slots[i].seq, i);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&c->fill_mu, NULL);
  pthread_mutex_init(&c->ready_mu, NULL);
  pthread_cond_init(&c->fill_cv, &ca);
  pthread_cond_init(&c->ready_cv, &ca);
  pthread_condattr_destroy(&ca);
  /* Filled at start, here, so that the first takes find IDs. */
  pthread_mutex_lock(&c->fill_mu);
  int rc = fill_up(c);
  pthread_mutex_unlock(&c->fill_mu);
  if (rc < 0 && rc != IDGEN_ECLOCK) {
    idgen__err(err, errlen, rc, "the generator cannot fill the cache: %s", idgen_strerror(rc));
    idgen_cached_gen_free(c);
    return rc;
  }
  if (pthread_create(&c->filler, NULL, filler_main, c) != 0) {
    idgen_cached_gen_free(c);
    return idgen__err(err, errlen, IDGEN_ENOMEM, "cannot start the filler thread");
  }
  c->started = 1;
  *out = c;
  return 0;
}

void idgen_cached_gen_free(idgen_cached_gen_t *c) {
  if (c == NULL)
    return;
  /* In a child after fork() the filler does not exist: free the memory only. */
  if (c->fork_gen != idgen__fork_gen()) {
    free(c->slots);
    free(c);
    return;
  }
  if (c->started) {
    pthread_mutex_lock(&c->fill_mu);
    c->stop = 1;
    pthread_cond_signal(&c->fill_cv);
    pthread_mutex_unlock(&c->fill_mu);
    pthread_join(c->filler, NULL);
  }
  pthread_cond_destroy(&c->fill_cv);
  pthread_cond_destroy(&c->ready_cv);
  pthread_mutex_destroy(&c->fill_mu);
  pthread_mutex_destroy(&c->ready_mu);
  free(c->slots);
  free(c);
}

idgen_snowflake_gen_t *idgen_cached_gen_generator(const idgen_cached_gen_t *c) { return c->g; }

void idgen_cached_gen_stats(idgen_cached_gen_t *c, idgen_cached_stats_t *st) {
  memset(st, 0, sizeof *st);
  st->slots = c->size;
  uint64_t h = atomic_load_explicit(&c->head, memory_order_acquire);
  uint64_t t = atomic_load_explicit(&c->tail, memory_order_acquire);
  st->ready = t > h ? t - h : 0;
  st->taken = h;
  st->filled = atomic_load_explicit(&c->filled, memory_order_relaxed);
  st->fills = atomic_load_explicit(&c->fills, memory_order_relaxed);
  st->empty = atomic_load_explicit(&c->empty, memory_order_relaxed);
  st->direct = atomic_load_explicit(&c->direct, memory_order_relaxed);
  st->waits = atomic_load_explicit(&c->waits, memory_order_relaxed);
  st->rejected_puts = atomic_load_explicit(&c->rejected, memory_order_relaxed);
  st->age_max_ms = atomic_load_explicit(&c->age_max_ms, memory_order_relaxed);
  st->filler_error = atomic_load_explicit(&c->filler_error, memory_order_relaxed);
  if (st->ready > 0) {
    /* The next ID's slot may be taken meanwhile: read it as a hint only,
     * through its sequence word. */
    slot_t *s = &c->slots[h & c->mask];
    if (atomic_load_explicit(&s->seq, memory_order_acquire) == h + 1) {
      const idgen_snowflake_gen_t *g = c->g;
      uint64_t id = atomic_load_explicit(&s->id, memory_order_relaxed);
      int64_t at = g->epoch + (int64_t)(id >> g->time_shift & g->max_tick) * g->unit;
      st->age_ms = idgen__ns_to_ms(idgen__sf_now_ns(g)) - at;
    }
  }
}
