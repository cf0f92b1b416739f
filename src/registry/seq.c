/*
 * seq.c -- sequences (idgen.h "Sequences", docs/DESIGN.md "Sequences"): a
 * holder claims ranges of a counter kept in the registry and hands numbers
 * out of them in memory.
 *
 * The hot path is one atomic word, the cursor: epoch (24 bits) | offset (40
 * bits).  The ranges in hand sit in a ring of 8 descriptors {tag, base,
 * len}, slot epoch & 7, each written seqlock-style under the mutex (tag
 * invalid, then base and len, then the tag with release).  A take is a
 * fetch_add on the cursor and reads of its range's descriptor; a take past
 * the range's end is a miss (counted, never issued) and goes to the slow
 * path, which moves the cursor to the next range under the mutex, or waits
 * for the claim under way.  What a range issued is min(final offset, len),
 * known when the cursor leaves it.
 *
 * A background thread claims ahead (woken by the take that crosses the
 * prefetch share), renews the holder's entry at a third of its TTL, adapts
 * the step, and retries failures with capped backoff.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

#include "registry_int.h"
#include "seq_int.h"

#define OFF_BITS 40
#define OFF_MASK ((UINT64_C(1) << OFF_BITS) - 1)
#define EPOCH_MASK ((UINT64_C(1) << 24) - 1)
#define RING 8
#define OVERRUN (UINT64_C(1) << 20)
#define TAG_NONE UINT64_MAX
#define STEP_LIMIT (UINT64_C(1) << 39)
#define RETRIES 200

typedef struct seq_desc {
  _Atomic uint64_t tag, base, len, thr;
  _Atomic uint64_t stamp; /* of the epoch's wrap (struct idgen_seq's stamp) */
  char pad[24];
} seq_desc_t;

struct idgen_seq {
  _Alignas(64) _Atomic uint64_t cursor;
  char pad0[56];
  seq_desc_t ring[RING];
  /* Read by every take, written once at open. */
  unsigned fork_gen;
  int strict;
  int formatted; /* has a format: next() goes through next_text */
  /* 1: none of the above, and this memory is wiped in a forked child
   * (MADV_WIPEONFORK), so that one load of this line decides the fast path
   * (a child reads 0 and goes the checked way: its fork_gen, 0 too, is not
   * the process's). */
  unsigned fast;
  _Atomic int64_t valid_until_ns; /* strict: by s_now_ns */
  /* strict, on a registry whose clock is this machine's wall clock (file:):
   * the same bound by that clock, which a step ahead moves for the
   * reaper too */
  _Atomic int64_t valid_until_wall_ms;
  /* Unique in the process per holder and wrap of the cursor's epoch
   * (wraps = the full epoch >> 24): stamp_base + wraps, where each holder
   * takes 2^32 stamps of its own at open.  Threads key their cached range
   * by it. */
  _Atomic uint64_t stamp;
  uint64_t wraps, stamp_base;
  char pad1[12];

  pthread_mutex_t mu;
  pthread_cond_t cv_thread, cv_wait; /* monotonic */
  pthread_t thread;
  int has_thread, closing, kicked, waiters;
  int inside; /* callers in take_slow or kick, which close waits out */
  idgen_registry_t *r;
  idgen_seq_settings_t set;
  const idgen_clock_t *clock;
  char key[IDGEN_SEQ_KEY_MAX], who[IDGEN_HOLDER_MAX];
  uint64_t gen;
  uint64_t epoch, installed; /* full counts; the cursor holds epoch & EPOCH_MASK */
  uint64_t rb[RING], rl[RING];
  int64_t range_start_ns;  /* when the current range became current */
  uint64_t issued_retired; /* by the ranges the cursor left */
  uint64_t issued_base;    /* issued_total at this generation's register */
  uint64_t reported;       /* issued_total in the last report that went through */
  uint64_t misses;
  uint64_t step, claimed, claims, given_back, claim_failures;
  uint64_t claimed_hi;    /* the end of the highest range claimed here */
  uint64_t ceiling;       /* the counter's ceiling as last read or raised here */
  int64_t claim_since_ns; /* real monotonic: the claim under way began; 0: none */
  int failing, fatal_rc, last_rc;
  char reason[IDGEN_REASON_MAX];
  double rate;
  int64_t rate_ns;
  uint64_t rate_issued;
  int64_t claim_ns_last, claim_ns_max;
  int64_t renew_at, retry_at, backoff_ms; /* real monotonic ns, ms */
  /* Business numbers: the format, and the holder of the current period. */
  idgen_seq_format_t *fmt;
  idgen_seq_t *inner;
  char name[IDGEN_SEQ_NAME_MAX];
  int64_t period_end_ms;
  int64_t wall_last_ms; /* the latest wall time rendered: a clock stepped
                         * back renders no earlier period than the counter's */
};

/* Stamps handed to holders, 2^32 at a time: the 2^64 values last for 2^32
 * opens in one process, and a holder's for 2^56 ranges. */
static _Atomic uint64_t seq_stamps;
#define STAMPS_PER_HOLDER (UINT64_C(1) << 32)

/* The stamp of full epoch e's wrap. */
static uint64_t stamp_of(const idgen_seq_t *s, uint64_t e) { return s->stamp_base + (e >> 24); }

/* Before the cursor moves to full epoch e: the stamp of e's wrap.  A
 * taker reads the stamp after its fetch_add (an acquire that reads the
 * cursor's move, a release after this store), so a take that landed in
 * e's wrap sees this stamp or a later one, never the previous wrap's. */
static void set_wraps(idgen_seq_t *s, uint64_t e) {
  if (e >> 24 != s->wraps) {
    s->wraps = e >> 24;
    atomic_store_explicit(&s->stamp, stamp_of(s, e), memory_order_release);
  }
}

/* ---- clocks --------------------------------------------------------------- */

static int64_t real_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The holder's own time: the injected clock's, else the monotonic clock. */
static int64_t s_now_ns(const idgen_seq_t *s) {
  return s->clock ? s->clock->now_ns(s->clock->ctx) : real_mono_ns();
}

/* The registry's clock, Unix ms. */
static int reg_now_ms(idgen_registry_t *r, const idgen_clock_t *clock, int64_t *ms, char *err,
                      size_t errlen) {
  if (r->ops->clock != NULL)
    return r->ops->clock(r, ms, err, errlen);
  if (clock != NULL) {
    *ms = clock->now_ns(clock->ctx) / 1000000;
    return 0;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  *ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  return 0;
}

/* ---- load, transition, store ---------------------------------------------- */

typedef int (*seq_tx_fn)(idgen__seq_rec_t *rec, void *arg, int64_t now_ms, char *err,
                         size_t errlen);

/* Loads r's counter `key` (a new one when it has none), applies fn and
 * stores the result conditionally, again from the load while another
 * writer got in between (bounded, with jitter). */
static int seq_apply(idgen_registry_t *r, const char *key, const idgen_clock_t *clock, seq_tx_fn fn,
                     void *arg, char *err, size_t errlen) {
  if (r->ops->seq_load == NULL || r->ops->seq_store == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "sequence: the %s registry keeps no sequences",
                      r->ops->scheme);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  char *buf = malloc(IDGEN__SEQ_TEXT_MAX);
  int rc = rec && buf ? IDGEN_EAGAIN : idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  for (int tries = 0; rc == IDGEN_EAGAIN && tries < RETRIES; tries++) {
    char *text = NULL;
    uint64_t version = 0;
    int64_t now;
    if (tries > 0) {
      uint32_t j = 0;
      idgen_random_bytes(&j, sizeof j);
      usleep((useconds_t)(j % (tries < 10 ? 200u << tries : 200000u)));
    }
    rc = r->ops->seq_load(r, key, &text, &version, err, errlen);
    if (rc == 0 && text != NULL)
      rc = idgen__seq_rec_parse(text, strlen(text), rec, err, errlen);
    else if (rc == 0)
      idgen__seq_rec_init(rec);
    free(text);
    if (rc == 0)
      rc = reg_now_ms(r, clock, &now, err, errlen);
    if (rc == 0)
      rc = fn(rec, arg, now, err, errlen);
    if (rc == 0 && idgen__seq_rec_format(rec, buf, IDGEN__SEQ_TEXT_MAX) < 0)
      rc = idgen__err(err, errlen, IDGEN_ERANGE, "sequence: record too long");
    if (rc == 0)
      rc = r->ops->seq_store(r, key, buf, version, err, errlen);
  }
  if (rc == IDGEN_EAGAIN)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    "sequence: %s: %d writers in a row got in first; gave up", key, RETRIES);
  free(rec);
  free(buf);
  return rc;
}

typedef struct tx_arg {
  const idgen_seq_t *s;
  const idgen__seq_late_t *late;
  uint64_t gen, step, issued, reported, rate, lo, hi, given, next;
  const uint64_t *u, *h;
  int n;
  uint64_t floor_next, floor_gen; /* what this holder saw: the record is not below */
  uint64_t start_at;              /* register: where a counter whose record is new starts */
  uint64_t ceiling;               /* claim: the counter's ceiling known (0: none yet) */
  uint64_t want;                  /* claim: the ceiling it needs first (the claim returned 1) */
  int64_t now;                    /* the registry's clock at the transition, ms */
} tx_arg_t;

/*
 * The counter's ceiling: a second record per counter, key "NAME@ceiling"
 * ("NAME@PERIODceiling" for a period's counter), whose next is above the
 * end of every range ever claimed from the counter.  A claim that would
 * pass it first raises it (to twice the claim's end: a few writes over a
 * counter's life), and a counter whose record is new starts at it: a
 * record removed by hand, when no holder is left to notice
 * (went_back), does not hand out its numbers again.  Removing both records
 * starts the counter anew, as removing the registry would.
 */
#define CEILING_SUFFIX "ceiling"

static void ceiling_key(const char *key, char *out, size_t n) {
  snprintf(out, n, "%s%s" CEILING_SUFFIX, key, strchr(key, '@') ? "" : "@");
}

/* 1 if `key` is a counter's ceiling, not a counter. */
static int is_ceiling_key(const char *key) {
  const char *at = strchr(key, '@');
  size_t n = at ? strlen(at + 1) : 0;
  return n >= sizeof CEILING_SUFFIX - 1 &&
         strcmp(at + 1 + n - (sizeof CEILING_SUFFIX - 1), CEILING_SUFFIX) == 0;
}

/* A record below what this holder already saw (removed, or replaced by an
 * older copy): claiming from it would hand out numbers claimed before. */
static int went_back(const idgen__seq_rec_t *rec, const tx_arg_t *a, char *err, size_t errlen) {
  if (rec->next >= a->floor_next && rec->gen >= a->floor_gen)
    return 0;
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    "sequence: the counter's record went back (next %" PRIu64
                    ", generation %" PRIu64 "; this holder claimed up to %" PRIu64
                    " as generation %" PRIu64
                    "): removed or restored from an old copy? Set it forward (idgen seq set) "
                    "past every number issued",
                    rec->next, rec->gen, a->floor_next, a->floor_gen);
}

static int tx_register(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  tx_arg_t *a = arg;
  int rc = went_back(rec, a, err, errlen);
  if (rc < 0)
    return rc;
  a->now = now;
  if (rec->gen == 0 && rec->claimed == 0 && rec->next < a->start_at) {
    /* A new record of a counter that had one: what its ranges held is
     * lost (counted so that claimed = issued + given + lost holds). */
    rec->lost += a->start_at - rec->next;
    rec->claimed += a->start_at - rec->next;
    rec->next = a->start_at;
  }
  return idgen__seq_register(rec, a->s->who, now, a->s->set.ttl_ms, a->s->set.strict, a->late,
                             &a->gen, err, errlen);
}

static int tx_claim(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  tx_arg_t *a = arg;
  int rc = went_back(rec, a, err, errlen);
  if (rc < 0)
    return rc;
  a->now = now;
  /* Where the claim ends (exclusive): at most one past the highest number. */
  uint64_t end = rec->next + a->step, top = IDGEN_SEQ_COUNTER_MAX + 1;
  if (end > top || end < rec->next)
    end = top;
  if (end > a->ceiling) { /* the ceiling first (nothing stored now) */
    a->want = end <= top / 2 ? 2 * end : top;
    return 1;
  }
  return idgen__seq_claim(rec, a->gen, a->step, now, a->s->set.ttl_ms, a->issued, a->rate, &a->lo,
                          &a->hi, err, errlen);
}

static int tx_renew(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  tx_arg_t *a = arg;
  int rc = went_back(rec, a, err, errlen);
  if (rc < 0)
    return rc;
  a->now = now;
  return idgen__seq_renew(rec, a->gen, now, a->s->set.ttl_ms, a->issued, a->rate, err, errlen);
}

static int tx_close(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  tx_arg_t *a = arg;
  int rc = went_back(rec, a, err, errlen);
  if (rc < 0)
    return rc;
  return idgen__seq_close(rec, a->gen, now, a->s->set.ttl_ms, a->u, a->h, a->n, a->issued,
                          a->reported, &a->given, err, errlen);
}

/* Raises a ceiling record to a->want (never lowers it); a->want becomes
 * its value. */
static int tx_ceiling(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  (void)now, (void)err, (void)errlen;
  tx_arg_t *a = arg;
  if (rec->next < a->want)
    rec->next = a->want;
  a->want = rec->next;
  return 0;
}

/* The ceiling of counter `key` as recorded (0 when none): 0 or an error. */
static int ceiling_read(idgen_registry_t *r, const char *key, uint64_t *out, char *err,
                        size_t errlen) {
  char ck[IDGEN_SEQ_KEY_MAX + sizeof CEILING_SUFFIX + 1], *text = NULL;
  uint64_t version;
  ceiling_key(key, ck, sizeof ck);
  *out = 0;
  int rc = r->ops->seq_load(r, ck, &text, &version, err, errlen);
  if (rc == 0 && text != NULL) {
    idgen__seq_rec_t *rec = malloc(sizeof *rec);
    rc = rec ? idgen__seq_rec_parse(text, strlen(text), rec, err, errlen)
             : idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
    if (rc == 0)
      *out = rec->next;
    free(rec);
  }
  free(text);
  return rc;
}

static int tx_set(idgen__seq_rec_t *rec, void *arg, int64_t now, char *err, size_t errlen) {
  (void)now;
  return idgen__seq_set(rec, ((tx_arg_t *)arg)->next, err, errlen);
}

/* ---- the ranges in hand (under s->mu) ------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Numbers issued by this holder so far (the current range's by its cursor). */
static uint64_t issued_total(idgen_seq_t *s) {
  uint64_t w = atomic_load_explicit(&s->cursor, memory_order_relaxed);
  return s->issued_retired + min_u64(w & OFF_MASK, s->rl[s->epoch & (RING - 1)]);
}

static uint64_t in_hand(idgen_seq_t *s) {
  uint64_t w = atomic_load_explicit(&s->cursor, memory_order_relaxed);
  uint64_t len = s->rl[s->epoch & (RING - 1)], n = len - min_u64(w & OFF_MASK, len);
  for (uint64_t e = s->epoch + 1; e <= s->installed; e++)
    n += s->rl[e & (RING - 1)];
  return n;
}

/* Publishes full epoch e's range [base, base + len) and its prefetch
 * offset in the ring. */
static void desc_write(idgen_seq_t *s, uint64_t e, uint64_t base, uint64_t len, uint64_t thr) {
  seq_desc_t *d = &s->ring[e & (RING - 1)];
  /* Release stores (plain moves on x86): none is seen before the
   * invalid tag. */
  atomic_store_explicit(&d->tag, TAG_NONE, memory_order_relaxed);
  atomic_store_explicit(&d->stamp, stamp_of(s, e), memory_order_release);
  atomic_store_explicit(&d->base, base, memory_order_release);
  atomic_store_explicit(&d->len, len, memory_order_release);
  atomic_store_explicit(&d->thr, thr, memory_order_release);
  atomic_store_explicit(&d->tag, e & EPOCH_MASK, memory_order_release);
}

static void install(idgen_seq_t *s, uint64_t lo, uint64_t hi) {
  uint64_t e = ++s->installed, len = hi - lo;
  uint64_t thr = (uint64_t)((double)len * s->set.prefetch);
  if (thr >= len)
    thr = len - 1;
  s->rb[e & (RING - 1)] = lo;
  s->rl[e & (RING - 1)] = len;
  desc_write(s, e, lo, len, thr);
}

/* The step for the next claim, from how long the range just left lasted. */
static void adapt_step(idgen_seq_t *s, uint64_t len, int64_t lasted_ns) {
  /* Measured on the range that was used up (len), not on the step: the
   * range claimed ahead has the step of before, and judging the step by it
   * would double (or halve) twice for one change in demand.  The step
   * settles on the one power-of-two multiple whose range lasts between the
   * target and twice it. */
  int64_t target = s->set.segment_target_ms * 1000000;
  if (lasted_ns < target) {
    uint64_t up = len <= s->set.max_step / 2 ? len * 2 : s->set.max_step;
    if (up > s->step)
      s->step = up;
  } else if (lasted_ns > 2 * target) {
    uint64_t down = len / 2 >= s->set.min_step ? len / 2 : s->set.min_step;
    if (down < s->step)
      s->step = down;
  }
}

/* Moves the cursor to the next range in hand when the current one is used
 * up: 1 if it moved.  Also bounds the offset's overrun. */
static int advance(idgen_seq_t *s) {
  for (;;) {
    uint64_t w = atomic_load_explicit(&s->cursor, memory_order_relaxed);
    uint64_t off = w & OFF_MASK, len = s->rl[s->epoch & (RING - 1)];
    if (off < len)
      return 0;
    if (s->installed == s->epoch) {
      uint64_t back = (w & ~OFF_MASK) | len;
      if (off > len + OVERRUN &&
          atomic_compare_exchange_weak_explicit(&s->cursor, &w, back, memory_order_relaxed,
                                                memory_order_relaxed))
        s->misses += off - len;
      if (off <= len + OVERRUN)
        return 0;
      continue;
    }
    uint64_t next = ((s->epoch + 1) & EPOCH_MASK) << OFF_BITS;
    set_wraps(s, s->epoch + 1);
    if (!atomic_compare_exchange_weak_explicit(&s->cursor, &w, next, memory_order_release,
                                               memory_order_relaxed))
      continue;
    s->issued_retired += len;
    s->misses += off - len;
    int64_t now = s_now_ns(s);
    if (len > 0)
      adapt_step(s, len, now - s->range_start_ns);
    s->range_start_ns = now;
    s->epoch++;
    return 1;
  }
}

/* Leaves every range in hand at once (fenced out, or closing): the cursor
 * moves to full epoch e2 (> s->installed), with no range.  Fills u/h with
 * what is left unissued, ascending (when not NULL): how many. */
static int drop_ranges_to(idgen_seq_t *s, uint64_t e2, uint64_t *u, uint64_t *h) {
  set_wraps(s, e2);
  uint64_t w =
      atomic_exchange_explicit(&s->cursor, (e2 & EPOCH_MASK) << OFF_BITS, memory_order_acq_rel);
  uint64_t slot = s->epoch & (RING - 1), len = s->rl[slot], off = min_u64(w & OFF_MASK, len);
  int n = 0;
  s->issued_retired += off;
  if (off < len && u != NULL)
    u[n] = s->rb[slot] + off, h[n] = s->rb[slot] + len, n++;
  for (uint64_t e = s->epoch + 1; e <= s->installed; e++) {
    slot = e & (RING - 1);
    if (u != NULL && s->rl[slot] > 0)
      u[n] = s->rb[slot], h[n] = s->rb[slot] + s->rl[slot], n++;
    atomic_store_explicit(&s->ring[slot].tag, TAG_NONE, memory_order_relaxed);
  }
  s->epoch = s->installed = e2;
  s->rl[e2 & (RING - 1)] = 0;
  desc_write(s, e2, 0, 0, 0);
  s->range_start_ns = s_now_ns(s);
  return n;
}

static int drop_ranges(idgen_seq_t *s, uint64_t *u, uint64_t *h) {
  return drop_ranges_to(s, s->installed + 1, u, h);
}

void idgen__seq_test_jump(idgen_seq_t *s, uint64_t epoch) {
  pthread_mutex_lock(&s->mu);
  if (epoch > s->installed) {
    /* Through the last RING epochs before it, each without a range, as if
     * the epochs skipped had gone by: every slot of the ring then holds
     * one of them, as it would have, and none a descriptor whose 24-bit
     * tag matches an epoch the cursor reaches next (a jump straight there
     * left the slot of an epoch 2^24 before, which a take landing in the
     * new epoch read before its descriptor was written: a duplicate no
     * holder can reach). */
    uint64_t k = s->installed + 1;
    if (epoch > RING && epoch - RING > k)
      k = epoch - RING;
    for (; k <= epoch; k++)
      drop_ranges_to(s, k, NULL, NULL);
  }
  pthread_mutex_unlock(&s->mu);
}

static void note_failure(idgen_seq_t *s, int rc, const char *why) {
  s->failing = 1;
  s->last_rc = rc;
  snprintf(s->reason, sizeof s->reason, "%s", why);
}

static void strict_valid(idgen_seq_t *s, int64_t sent_ns, int64_t reg_ms) {
  int64_t ttl = s->set.ttl_ms * 1000000, margin = ttl / 5;
  atomic_store_explicit(&s->valid_until_ns, sent_ns + ttl - margin, memory_order_release);
  if (s->r->ops->clock == NULL)
    atomic_store_explicit(&s->valid_until_wall_ms, reg_ms + (ttl - margin) / 1000000,
                          memory_order_release);
}

/* Registers again after being fenced out, reporting what was issued since
 * the last report under the old generation.  Under s->mu, released around
 * the registry's calls. */
static int reregister(idgen_seq_t *s, char *err, size_t errlen) {
  drop_ranges(s, NULL, NULL);
  uint64_t total = s->issued_retired;
  idgen__seq_late_t late = {s->gen, total > s->reported ? total - s->reported : 0};
  tx_arg_t a = {.s = s, .late = &late, .floor_next = s->claimed_hi, .floor_gen = s->gen};
  pthread_mutex_unlock(&s->mu);
  int rc = seq_apply(s->r, s->key, s->clock, tx_register, &a, err, errlen);
  pthread_mutex_lock(&s->mu);
  if (rc == 0) {
    s->gen = a.gen;
    s->issued_base = s->reported = total;
  }
  return rc;
}

/* One claim of s->step numbers (under s->mu, released around the
 * registry's calls): 0 with the range installed, or an error noted. */
static int claim_once(idgen_seq_t *s) {
  char err[IDGEN_REASON_MAX];
  int64_t t0 = real_mono_ns(), sent = s_now_ns(s);
  uint64_t total = issued_total(s);
  tx_arg_t a = {.s = s,
                .gen = s->gen,
                .step = s->step,
                .issued = total - s->issued_base,
                .rate = (uint64_t)s->rate,
                .floor_next = s->claimed_hi,
                .floor_gen = s->gen,
                .ceiling = s->ceiling};
  s->claim_since_ns = t0;
  pthread_mutex_unlock(&s->mu);
  /* A claim past the ceiling raises it first (tx_claim returns 1); another
   * holder's claims may pass the raised one meanwhile: a few rounds. */
  int rc = 1;
  for (int round = 0; rc == 1 && round < 8; round++) {
    rc = seq_apply(s->r, s->key, s->clock, tx_claim, &a, err, sizeof err);
    if (rc == 1) {
      char ck[IDGEN_SEQ_KEY_MAX + sizeof CEILING_SUFFIX + 1];
      ceiling_key(s->key, ck, sizeof ck);
      rc = seq_apply(s->r, ck, s->clock, tx_ceiling, &a, err, sizeof err);
      if (rc == 0) {
        a.ceiling = a.want;
        rc = 1;
      }
    }
  }
  if (rc == 1)
    rc = idgen__err(err, sizeof err, IDGEN_EAGAIN,
                    "sequence: %s: the counter's ceiling was passed 8 times in a row", s->key);
  pthread_mutex_lock(&s->mu);
  if (a.ceiling > s->ceiling)
    s->ceiling = a.ceiling;
  /* Still a claim under way while registering again (claim_since_ns is
   * set): callers without a thread wait for it rather than claim too. */
  if (rc == IDGEN_ELEASE && !s->closing) {
    rc = reregister(s, err, sizeof err);
    if (rc == 0)
      return claim_once(s);
  }
  s->claim_since_ns = 0;
  s->claim_ns_last = real_mono_ns() - t0;
  if (s->claim_ns_last > s->claim_ns_max)
    s->claim_ns_max = s->claim_ns_last;
  if (rc < 0) {
    s->claim_failures++;
    note_failure(s, rc, err);
    if (rc == IDGEN_ERANGE || (rc == IDGEN_ELEASE && s->set.strict))
      s->fatal_rc = rc;
    pthread_cond_broadcast(&s->cv_wait); /* callers waiting for this claim */
    return rc;
  }
  if (s->installed == s->epoch && s->rl[s->epoch & (RING - 1)] == 0)
    s->range_start_ns = s_now_ns(s);
  install(s, a.lo, a.hi);
  if (a.hi > s->claimed_hi)
    s->claimed_hi = a.hi;
  s->reported = total;
  s->claimed += a.hi - a.lo;
  s->claims++;
  s->failing = 0;
  s->reason[0] = '\0';
  if (s->strict)
    strict_valid(s, sent, a.now);
  advance(s);
  pthread_cond_broadcast(&s->cv_wait);
  return 0;
}

static int renew_once(idgen_seq_t *s) {
  char err[IDGEN_REASON_MAX];
  int64_t sent = s_now_ns(s);
  uint64_t total = issued_total(s);
  tx_arg_t a = {.s = s,
                .gen = s->gen,
                .issued = total - s->issued_base,
                .rate = (uint64_t)s->rate,
                .floor_next = s->claimed_hi,
                .floor_gen = s->gen};
  pthread_mutex_unlock(&s->mu);
  int rc = seq_apply(s->r, s->key, s->clock, tx_renew, &a, err, sizeof err);
  pthread_mutex_lock(&s->mu);
  if (rc == IDGEN_ELEASE && !s->set.strict && !s->closing)
    rc = reregister(s, err, sizeof err);
  if (rc < 0) {
    note_failure(s, rc, err);
    if (rc == IDGEN_ELEASE && s->set.strict)
      s->fatal_rc = rc;
    return rc;
  }
  s->reported = total;
  s->failing = 0;
  if (s->strict)
    strict_valid(s, sent, a.now);
  return 0;
}

static void update_rate(idgen_seq_t *s) {
  int64_t now = s_now_ns(s);
  uint64_t total = issued_total(s);
  if (s->rate_ns != 0 && now > s->rate_ns)
    s->rate = (double)(total - s->rate_issued) * 1e9 / (double)(now - s->rate_ns);
  s->rate_ns = now;
  s->rate_issued = total;
}

/* ---- the background thread ------------------------------------------------ */

static int need_claim(idgen_seq_t *s) {
  if (s->fatal_rc || s->installed - s->epoch >= (uint64_t)s->set.ahead)
    return 0;
  if (s->kicked || s->waiters)
    return 1;
  uint64_t w = atomic_load_explicit(&s->cursor, memory_order_relaxed);
  uint64_t len = s->rl[s->epoch & (RING - 1)], off = w & OFF_MASK;
  return off >= (uint64_t)((double)len * s->set.prefetch);
}

static void wait_until(idgen_seq_t *s, pthread_cond_t *cv, int64_t mono_ns) {
  struct timespec ts = {(time_t)(mono_ns / 1000000000), (long)(mono_ns % 1000000000)};
  pthread_cond_timedwait(cv, &s->mu, &ts);
}

static void *seq_thread(void *arg) {
  idgen_seq_t *s = arg;
  pthread_mutex_lock(&s->mu);
  while (!s->closing) {
    int64_t now = real_mono_ns();
    int need = need_claim(s);
    if (need && now >= s->retry_at) {
      s->kicked = 0;
      int rc = claim_once(s);
      if (rc < 0) {
        s->backoff_ms = s->backoff_ms ? s->backoff_ms * 2 : 20;
        if (s->backoff_ms > 2000)
          s->backoff_ms = 2000;
        s->retry_at = real_mono_ns() + s->backoff_ms * 1000000;
        pthread_cond_broadcast(&s->cv_wait);
      } else {
        s->backoff_ms = 0;
        s->retry_at = 0;
        s->renew_at = real_mono_ns() + s->set.ttl_ms * 1000000 / 3;
      }
      continue;
    }
    if (now >= s->renew_at && !s->fatal_rc) {
      update_rate(s);
      int rc = renew_once(s);
      s->renew_at = real_mono_ns() + (rc < 0 ? 200 : s->set.ttl_ms / 3) * 1000000;
      continue;
    }
    int64_t wake = s->renew_at;
    if (need && s->retry_at < wake)
      wake = s->retry_at;
    wait_until(s, &s->cv_thread, wake);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- taking --------------------------------------------------------------- */

/* The take that crossed the prefetch share: the thread claims ahead (or,
 * without one, this caller does). */
__attribute__((noinline)) static void kick(idgen_seq_t *s) {
  pthread_mutex_lock(&s->mu);
  s->inside++;
  s->kicked = 1;
  if (s->has_thread)
    pthread_cond_signal(&s->cv_thread);
  else if (!s->closing && !s->claim_since_ns && need_claim(s) && claim_once(s) == 0)
    s->kicked = 0;
  if (--s->inside == 0 && s->closing)
    pthread_cond_broadcast(&s->cv_wait);
  pthread_mutex_unlock(&s->mu);
}

/* One number from the ranges in hand without a lock: 1, 2 (the take that
 * crossed the prefetch share: the thread is to claim ahead), or 0 (a
 * miss). */
static inline int take(idgen_seq_t *s, uint64_t *n) {
  uint64_t w = atomic_fetch_add_explicit(&s->cursor, 1, memory_order_acquire);
  uint64_t e = w >> OFF_BITS, off = w & OFF_MASK;
  seq_desc_t *d = &s->ring[e & (RING - 1)];
  if (IDGEN_LIKELY(atomic_load_explicit(&d->tag, memory_order_acquire) == e)) {
    /* Acquire loads (plain moves on x86) keep the tag's second read
     * after them. */
    uint64_t base = atomic_load_explicit(&d->base, memory_order_acquire);
    uint64_t len = atomic_load_explicit(&d->len, memory_order_acquire);
    uint64_t thr = atomic_load_explicit(&d->thr, memory_order_acquire);
    if (IDGEN_LIKELY(off < len && atomic_load_explicit(&d->tag, memory_order_relaxed) == e)) {
      *n = base + off;
      return IDGEN_UNLIKELY(off == thr) ? 2 : 1;
    }
  }
  return 0;
}

/* A claim that has run this long is a registry that does not answer. */
#define CLAIM_HUNG_NS INT64_C(1000000000)

/* Why a caller gets no number (under s->mu): the holder's fatal error; the
 * last claim's failure while failing; IDGEN_EREGISTRY for a claim that has
 * run past a second without an answer; else IDGEN_EAGAIN (nothing failed:
 * the claim under way has not landed yet). */
static int slow_error(idgen_seq_t *s) {
  if (s->fatal_rc)
    return s->fatal_rc;
  if (s->failing && s->last_rc)
    return s->last_rc;
  int64_t ran = s->claim_since_ns ? real_mono_ns() - s->claim_since_ns : 0;
  if (ran < CLAIM_HUNG_NS)
    return IDGEN_EAGAIN;
  snprintf(s->reason, sizeof s->reason,
           "sequence: %s: the registry has not answered a claim for %" PRId64 " ms", s->key,
           ran / 1000000);
  return IDGEN_EREGISTRY;
}

/* The slow path: under the mutex, the next range in hand, a claim (in the
 * caller without a thread), or a wait for the thread's claim. */
__attribute__((noinline)) static int take_slow(idgen_seq_t *s, uint64_t *n) {
  int rc = 0;
  int64_t deadline = s->set.wait_ms > 0 ? real_mono_ns() + s->set.wait_ms * 1000000 : 0;
  pthread_mutex_lock(&s->mu);
  s->inside++;
  for (;;) {
    if (s->closing) { /* close() under way: nothing more is issued */
      rc = IDGEN_ELEASE;
      break;
    }
    int got = take(s, n);
    if (got == 2) {
      s->kicked = 1;
      pthread_cond_signal(&s->cv_thread);
    }
    if (got)
      break;
    if (advance(s))
      continue;
    if (s->fatal_rc && s->installed == s->epoch) {
      rc = s->fatal_rc;
      break;
    }
    if (!s->has_thread) {
      /* One claim at a time: another caller's claim under way is waited
       * for (each released the mutex around the registry's call, and
       * callers claiming at once would install more ranges than the ring
       * has slots, one over the range in use). */
      if (s->claim_since_ns) {
        s->waiters++;
        pthread_cond_wait(&s->cv_wait, &s->mu);
        s->waiters--;
      } else if ((rc = claim_once(s)) < 0) {
        break;
      }
      continue;
    }
    if (s->set.wait_ms < 0 || (deadline && real_mono_ns() >= deadline)) {
      rc = slow_error(s);
      break;
    }
    s->waiters++;
    pthread_cond_signal(&s->cv_thread);
    wait_until(s, &s->cv_wait, deadline);
    s->waiters--;
  }
  if (--s->inside == 0 && s->closing)
    pthread_cond_broadcast(&s->cv_wait);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/*
 * Each thread keeps the descriptor of the range it last took from, keyed by
 * the holder's stamp (holder and wrap) and the cursor word's epoch: a
 * range's base and length never change once published for an epoch, so a
 * take whose fetch_add lands in the same epoch needs no read of the ring.
 * The cache holds cursor words, so that the chain after the fetch_add is
 * one subtraction and two compares: wlo = the epoch's word at offset 0
 * (w - wlo < len: the same epoch and an offset in range, since len <
 * 2^OFF_BITS), nb = base - wlo (the number is w + nb, mod 2^64) and wthr
 * = wlo + thr.  The stamp is read after the fetch_add, so it is that of
 * the wrap the take landed in or of a later one (set_wraps): a thread
 * whose cached range is 2^24 epochs old never matches it (docs/DESIGN.md
 * "Sequences").
 */
static int after_take(idgen_seq_t *s, uint64_t *n, int got);

typedef struct seq_tls {
  uint64_t stamp, wlo, len, nb, wthr;
} seq_tls_t;
static __thread seq_tls_t seq_tls __attribute__((tls_model("initial-exec")));

/* The cache entry for epoch e's descriptor. */
static inline seq_tls_t tls_entry(uint64_t stamp, uint64_t e, uint64_t base, uint64_t len,
                                  uint64_t thr) {
  uint64_t wlo = e << OFF_BITS;
  return (seq_tls_t){stamp, wlo, len, base - wlo, wlo + thr};
}

/* A take from the ring, for cursor word w (the epoch not in this thread's
 * cache): the thread's cache filled on a hit. */
__attribute__((noinline)) static int take_ring(idgen_seq_t *s, uint64_t *n, uint64_t w) {
  uint64_t e = w >> OFF_BITS, off = w & OFF_MASK;
  seq_desc_t *d = &s->ring[e & (RING - 1)];
  if (atomic_load_explicit(&d->tag, memory_order_acquire) == e) {
    uint64_t base = atomic_load_explicit(&d->base, memory_order_acquire);
    uint64_t len = atomic_load_explicit(&d->len, memory_order_acquire);
    uint64_t thr = atomic_load_explicit(&d->thr, memory_order_acquire);
    uint64_t ds = atomic_load_explicit(&d->stamp, memory_order_acquire);
    if (off < len && atomic_load_explicit(&d->tag, memory_order_relaxed) == e) {
      /* Keyed by the descriptor's stamp: the one the caller read after
       * the fetch_add may be a later wrap's. */
      seq_tls = tls_entry(ds, e, base, len, thr);
      *n = base + off;
      return off == thr ? after_take(s, n, 2) : 0;
    }
  }
  return take_slow(s, n);
}

static int64_t wall_ms(const idgen_seq_t *s);

/* A strict holder that cannot show its entry valid by its own clock (and,
 * on a registry that reaps by this machine's wall clock, by that one). */
__attribute__((noinline)) static int strict_expired(idgen_seq_t *s) {
  if (s_now_ns(s) > atomic_load_explicit(&s->valid_until_ns, memory_order_acquire))
    return 1;
  return s->r->ops->clock == NULL &&
         wall_ms(s) > atomic_load_explicit(&s->valid_until_wall_ms, memory_order_acquire);
}

/* After a take that was not a plain hit: the claim ahead to wake, or the
 * slow path. */
__attribute__((noinline)) static int after_take(idgen_seq_t *s, uint64_t *n, int got) {
  if (got == 2) {
    kick(s);
    return 0;
  }
  return take_slow(s, n);
}

static int next_formatted(idgen_seq_t *s, uint64_t *n);

/* A number with every check: fork, format, strict validity. */
__attribute__((noinline)) static int next_plain(idgen_seq_t *s, uint64_t *n) {
  if (s->fork_gen != idgen__fork_gen())
    return IDGEN_EFORKED;
  if (s->formatted)
    return next_formatted(s, n);
  if (s->strict && strict_expired(s))
    return IDGEN_ELEASE;
  int got = take(s, n);
  return got == 1 ? 0 : after_take(s, n, got);
}

/* ---- the API -------------------------------------------------------------- */

int idgen_seq_name_check(const char *name, char *err, size_t errlen) {
  size_t n = name ? strlen(name) : 0;
  int ok = n >= 1 && n < IDGEN_SEQ_NAME_MAX && name[0] >= 'a' && name[0] <= 'z';
  for (size_t i = 1; ok && i < n; i++) {
    char c = name[i];
    ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  if (!ok)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: name \"%.80s\" is not [a-z][a-z0-9_-]{0,63}", name ? name : "");
  return 0;
}

void idgen_seq_settings_init(idgen_seq_settings_t *s) {
  memset(s, 0, sizeof *s);
  s->min_step = 1000;
  s->max_step = 100000000;
  s->step = s->min_step;
  s->prefetch = 0.25;
  s->ahead = 1;
  s->segment_target_ms = 60000;
  s->ttl_ms = 10000;
  s->wait_ms = 5000;
}

/* in with every zero member replaced by its default, checked. */
static int settings_fill(idgen_seq_settings_t *o, const idgen_seq_settings_t *in, char *err,
                         size_t errlen) {
  idgen_seq_settings_t d;
  idgen_seq_settings_init(&d);
  *o = in ? *in : d;
  if (!o->min_step)
    o->min_step = d.min_step;
  if (!o->max_step)
    o->max_step = o->min_step > d.max_step ? o->min_step : d.max_step;
  if (!o->step)
    o->step = o->min_step;
  if (o->prefetch == 0)
    o->prefetch = d.prefetch;
  if (!o->ahead)
    o->ahead = d.ahead;
  if (!o->segment_target_ms)
    o->segment_target_ms = d.segment_target_ms;
  if (!o->ttl_ms)
    o->ttl_ms = d.ttl_ms;
  if (!o->wait_ms)
    o->wait_ms = d.wait_ms;
  if (o->max_step > STEP_LIMIT || o->min_step > o->max_step)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: min_step %" PRIu64 " and max_step %" PRIu64
                      ": 1 <= min_step <= max_step <= 2^39",
                      o->min_step, o->max_step);
  if (o->step < o->min_step || o->step > o->max_step)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: step %" PRIu64 " is not within [min_step, max_step]", o->step);
  if (!(o->prefetch > 0 && o->prefetch < 1))
    return idgen__err(err, errlen, IDGEN_EINVAL, "sequence: prefetch %g is not in (0, 1)",
                      o->prefetch);
  if (o->ahead < 1 || o->ahead > 4)
    return idgen__err(err, errlen, IDGEN_EINVAL, "sequence: ahead %d is not 1..4", o->ahead);
  if (o->segment_target_ms < 1 || o->segment_target_ms > INT64_C(86400000) * 366 ||
      o->ttl_ms < 30 || o->ttl_ms > 86400000 || o->wait_ms < -1)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: segment_target_ms %" PRId64 " (1..31622400000), ttl_ms %" PRId64
                      " (30..86400000) or wait_ms %" PRId64 " (>= -1) out of range",
                      o->segment_target_ms, o->ttl_ms, o->wait_ms);
  if (o->holder != NULL && (strlen(o->holder) == 0 || strlen(o->holder) >= IDGEN_HOLDER_MAX ||
                            strpbrk(o->holder, " \t\n") != NULL))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: holder \"%.80s\" is not 1..127 printable bytes without spaces",
                      o->holder);
  return 0;
}

/* The holder's memory: pages of its own, wiped in a forked child. */
static size_t seq_map_size(void) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  return (sizeof(idgen_seq_t) + pg - 1) / pg * pg;
}

static void seq_unmap(idgen_seq_t *s) { munmap(s, seq_map_size()); }

static void seq_free(idgen_seq_t *s) {
  pthread_mutex_destroy(&s->mu);
  pthread_cond_destroy(&s->cv_thread);
  pthread_cond_destroy(&s->cv_wait);
  seq_unmap(s);
}

static idgen_seq_t *seq_alloc(idgen_registry_t *r, const idgen_seq_settings_t *set) {
  void *mem =
      mmap(NULL, seq_map_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED)
    return NULL;
  idgen_seq_t *s = mem;
#ifdef MADV_WIPEONFORK
  int wiped = madvise(mem, seq_map_size(), MADV_WIPEONFORK) == 0;
#else
  int wiped = 0;
#endif
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv_thread, &ca);
  pthread_cond_init(&s->cv_wait, &ca);
  pthread_condattr_destroy(&ca);
  for (int i = 0; i < RING; i++)
    atomic_init(&s->ring[i].tag, TAG_NONE);
  s->r = r;
  s->set = *set;
  s->clock = set->clock;
  s->strict = set->strict;
  s->fast = wiped && !set->strict && set->format == NULL;
  s->step = set->step;
  s->fork_gen = idgen__fork_gen();
  s->stamp_base = atomic_fetch_add(&seq_stamps, STAMPS_PER_HOLDER) + STAMPS_PER_HOLDER;
  atomic_init(&s->stamp, s->stamp_base);
  if (set->holder != NULL) {
    snprintf(s->who, sizeof s->who, "%s", set->holder);
  } else {
    char host[64] = "localhost";
    uint8_t tok[4] = {0};
    gethostname(host, sizeof host - 1);
    for (char *p = host; *p; p++)
      if (*p <= ' ' || *p >= 0x7f)
        *p = '_';
    idgen_random_bytes(tok, sizeof tok);
    snprintf(s->who, sizeof s->who, "%s:%ld:%02x%02x%02x%02x", host, (long)getpid(), tok[0], tok[1],
             tok[2], tok[3]);
  }
  return s;
}

/* Opens the holder of counter `key` (no format). */
static int open_key(idgen_seq_t **out, idgen_registry_t *r, const char *key,
                    const idgen_seq_settings_t *set, char *err, size_t errlen) {
  idgen_seq_t *s = seq_alloc(r, set);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  snprintf(s->key, sizeof s->key, "%s", key);
  int rc = ceiling_read(r, key, &s->ceiling, err, errlen);
  tx_arg_t a = {.s = s, .start_at = s->ceiling};
  if (rc == 0)
    rc = seq_apply(r, key, s->clock, tx_register, &a, err, errlen);
  if (rc < 0) {
    seq_free(s);
    return rc;
  }
  s->gen = a.gen;
  s->range_start_ns = s_now_ns(s);
  if (s->strict)
    strict_valid(s, s->range_start_ns, a.now);
  if (!set->no_thread) {
    pthread_mutex_lock(&s->mu);
    rc = claim_once(s);
    if (rc < 0)
      snprintf(err, errlen, "%s", s->reason);
    s->has_thread = rc == 0;
    s->renew_at = real_mono_ns() + s->set.ttl_ms * 1000000 / 3;
    pthread_mutex_unlock(&s->mu);
    if (rc == 0 && pthread_create(&s->thread, NULL, seq_thread, s) != 0) {
      s->has_thread = 0;
      rc = idgen__err(err, errlen, IDGEN_ENOMEM, "sequence: cannot start its thread");
    }
    if (rc < 0) {
      idgen_seq_close(s);
      return rc;
    }
  }
  *out = s;
  return 0;
}

/* The holder for the period of unix_ms: opens it when the period changed,
 * closing the previous one.  Under s->mu. */
static int rotate(idgen_seq_t *s, int64_t unix_ms, char *err, size_t errlen) {
  char period[64], key[IDGEN_SEQ_KEY_MAX];
  int64_t end;
  int rc = idgen_seq_format_period(s->fmt, unix_ms, period, sizeof period, &end);
  if (rc < 0)
    return idgen__err(err, errlen, rc, "sequence: no period for %" PRId64 " ms", unix_ms);
  snprintf(key, sizeof key, "%s%s%s", s->name, period[0] ? "@" : "", period);
  if (s->inner != NULL && strcmp(key, s->inner->key) == 0) {
    s->period_end_ms = end;
    return 0;
  }
  idgen_seq_t *n = NULL;
  idgen_seq_settings_t set = s->set;
  set.format = NULL;
  rc = open_key(&n, s->r, key, &set, err, errlen);
  if (rc < 0)
    return rc;
  if (s->inner != NULL)
    idgen_seq_close(s->inner);
  s->inner = n;
  snprintf(s->key, sizeof s->key, "%s", key);
  s->period_end_ms = end;
  return 0;
}

/* The holder's wall clock, Unix ms (the period of business numbers). */
static int64_t wall_ms(const idgen_seq_t *s) {
  if (s->clock != NULL)
    return s->clock->now_ns(s->clock->ctx) / 1000000;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int idgen_seq_open(idgen_seq_t **out, idgen_registry_t *r, const char *name,
                   const idgen_seq_settings_t *settings, char *err, size_t errlen) {
  idgen_seq_settings_t set;
  *out = NULL;
  int rc = idgen_seq_name_check(name, err, errlen);
  if (rc == 0)
    rc = settings_fill(&set, settings, err, errlen);
  if (rc == 0 && (r == NULL || r->ops->seq_load == NULL))
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "sequence: the %s registry keeps no sequences",
                    r ? r->ops->scheme : "(no)");
  if (rc < 0)
    return rc;
  if (set.format == NULL)
    return open_key(out, r, name, &set, err, errlen);
  idgen_seq_t *s = seq_alloc(r, &set);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  snprintf(s->name, sizeof s->name, "%s", name);
  s->formatted = 1;
  rc = idgen_seq_format_parse(&s->fmt, set.format, set.tz, err, errlen);
  if (rc == 0)
    rc = rotate(s, wall_ms(s), err, errlen);
  if (rc < 0) {
    idgen_seq_format_free(s->fmt);
    seq_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

__attribute__((noinline)) static int next_formatted(idgen_seq_t *s, uint64_t *n) {
  {
    char buf[8];
    int rc = idgen_seq_next_text(s, buf, sizeof buf, n);
    return rc == IDGEN_ERANGE || rc >= 0 ? 0 : rc;
  }
}

int idgen_seq_next(idgen_seq_t *s, uint64_t *n) {
  /* The common case in a few instructions and tail calls: a holder that is
   * neither strict nor formatted, in the process that opened it. */
  if (IDGEN_UNLIKELY(s->fast != 1))
    return next_plain(s, n);
  seq_tls_t *t = &seq_tls;
  uint64_t w = atomic_fetch_add_explicit(&s->cursor, 1, memory_order_acquire);
  uint64_t stamp = atomic_load_explicit(&s->stamp, memory_order_relaxed);
  if (IDGEN_LIKELY(t->stamp == stamp && w - t->wlo < t->len)) {
    *n = w + t->nb;
    return IDGEN_LIKELY(w != t->wthr) ? 0 : after_take(s, n, 2);
  }
  return take_ring(s, n, w);
}

int idgen_seq_next_n(idgen_seq_t *s, uint64_t *out, size_t n) {
  size_t i = 0;
  /* A batch from the thread's cached range with one fetch_add; what does
   * not fit there (the offsets past its end are misses) one by one. */
  if (n > 1 && n <= OVERRUN && s->fast == 1) {
    seq_tls_t *t = &seq_tls;
    uint64_t w = atomic_fetch_add_explicit(&s->cursor, n, memory_order_acquire);
    uint64_t stamp = atomic_load_explicit(&s->stamp, memory_order_relaxed);
    uint64_t e = w >> OFF_BITS;
    int hit = t->stamp == stamp && t->wlo == e << OFF_BITS;
    if (!hit) {
      /* Not the cached range: its descriptor from the ring (the offsets
       * taken are this range's all the same, whichever wrap's stamp was
       * read after the fetch_add: a later one if the cursor went into the
       * next wrap meanwhile). */
      seq_desc_t *d = &s->ring[e & (RING - 1)];
      if (atomic_load_explicit(&d->tag, memory_order_acquire) == e) {
        seq_tls_t c = tls_entry(atomic_load_explicit(&d->stamp, memory_order_acquire), e,
                                atomic_load_explicit(&d->base, memory_order_acquire),
                                atomic_load_explicit(&d->len, memory_order_acquire),
                                atomic_load_explicit(&d->thr, memory_order_acquire));
        if (atomic_load_explicit(&d->tag, memory_order_relaxed) == e) {
          *t = c;
          hit = 1;
        }
      }
    }
    uint64_t off = w - t->wlo;
    if (hit && off < t->len) {
      for (; i < n && off + i < t->len; i++)
        out[i] = w + i + t->nb;
      if (w <= t->wthr && t->wthr < w + i)
        kick(s);
    }
  }
  for (; i < n; i++) {
    int rc = idgen_seq_next(s, &out[i]);
    if (rc < 0)
      return rc;
  }
  return 0;
}

int idgen_seq_next_text(idgen_seq_t *s, char *buf, size_t buflen, uint64_t *n) {
  /* The fork first: in a child the holder reads as zeros, fmt too. */
  if (s->fork_gen != idgen__fork_gen())
    return IDGEN_EFORKED;
  if (s->fmt == NULL)
    return IDGEN_EINVAL;
  uint64_t v = 0;
  pthread_mutex_lock(&s->mu);
  int64_t now = wall_ms(s);
  /* A clock stepped back keeps the current period: its counter is the one
   * in hand, and an earlier period's counter issued its numbers already. */
  if (now < s->wall_last_ms)
    now = s->wall_last_ms;
  s->wall_last_ms = now;
  int rc = now >= s->period_end_ms ? rotate(s, now, s->reason, sizeof s->reason) : 0;
  if (rc == 0)
    rc = next_plain(s->inner, &v);
  pthread_mutex_unlock(&s->mu);
  if (rc < 0)
    return rc;
  if (n != NULL)
    *n = v;
  return idgen_seq_format_render(s->fmt, now, v, buf, buflen);
}

void idgen_seq_close(idgen_seq_t *s) {
  if (s == NULL)
    return;
  if (s->fork_gen != idgen__fork_gen()) {
    /* A forked child's copy: the parent's thread is not in this process and
     * its ranges are not the child's to give back. */
    seq_unmap(s); /* all zeros where the kernel wiped it */
    return;
  }
  if (s->fmt != NULL) {
    idgen_seq_close(s->inner);
    idgen_seq_format_free(s->fmt);
    seq_free(s);
    return;
  }
  pthread_mutex_lock(&s->mu);
  s->closing = 1;
  pthread_cond_broadcast(&s->cv_thread);
  pthread_cond_broadcast(&s->cv_wait); /* waiting callers return */
  pthread_mutex_unlock(&s->mu);
  if (s->has_thread)
    pthread_join(s->thread, NULL);
  {
    uint64_t u[RING], h[RING];
    char err[IDGEN_REASON_MAX];
    pthread_mutex_lock(&s->mu);
    while (s->inside > 0) /* the callers under way leave first */
      pthread_cond_wait(&s->cv_wait, &s->mu);
    int k = drop_ranges(s, u, h);
    tx_arg_t a = {.s = s,
                  .gen = s->gen,
                  .u = u,
                  .h = h,
                  .n = k,
                  .issued = s->issued_retired - s->issued_base,
                  .reported = s->reported - s->issued_base,
                  .floor_next = s->claimed_hi,
                  .floor_gen = s->gen};
    pthread_mutex_unlock(&s->mu);
    if (seq_apply(s->r, s->key, s->clock, tx_close, &a, err, sizeof err) == 0)
      s->given_back += a.given;
  }
  seq_free(s);
}

void idgen_seq_stats(idgen_seq_t *s, idgen_seq_stats_t *st) {
  memset(st, 0, sizeof *st);
  pthread_mutex_lock(&s->mu);
  idgen_seq_t *q = s->fmt != NULL ? s->inner : s;
  if (q != s)
    pthread_mutex_lock(&q->mu);
  snprintf(st->key, sizeof st->key, "%s", q->key);
  st->generation = q->gen;
  st->step = q->step;
  st->in_hand = in_hand(q);
  st->issued = issued_total(q);
  st->claimed = q->claimed;
  st->claims = q->claims;
  st->given_back = q->given_back;
  st->claim_failures = q->claim_failures;
  st->failing = q->failing;
  st->rate = q->rate;
  st->lasts_ms = q->rate > 0 ? (int64_t)((double)st->in_hand * 1000 / q->rate) : -1;
  st->claim_ns_last = q->claim_ns_last;
  st->claim_ns_max = q->claim_ns_max;
  st->claim_running_ms = q->claim_since_ns ? (real_mono_ns() - q->claim_since_ns) / 1000000 : -1;
  snprintf(st->reason, sizeof st->reason, "%s", q->reason);
  if (q != s)
    pthread_mutex_unlock(&q->mu);
  pthread_mutex_unlock(&s->mu);
}

typedef struct list_arg {
  idgen_registry_t *r;
  idgen_seq_list_cb cb;
  void *ctx;
  char *err;
  size_t errlen;
  idgen__seq_rec_t rec;
  idgen_seq_row_t row;
} list_arg_t;

static void row_fill(idgen_seq_row_t *row, const idgen__seq_rec_t *rec, const char *space,
                     const char *key, int64_t now) {
  memset(row, 0, sizeof *row);
  snprintf(row->space, sizeof row->space, "%s", space);
  snprintf(row->key, sizeof row->key, "%s", key);
  row->next = rec->next, row->generation = rec->gen, row->claimed = rec->claimed;
  row->issued = rec->issued, row->given_back = rec->given, row->lost = rec->lost;
  row->strict = rec->strict;
  row->nholders = rec->n;
  for (int i = 0; i < rec->n; i++) {
    idgen_seq_holder_row_t *h = &row->holders[i];
    const idgen__seq_holder_t *x = &rec->h[i];
    snprintf(h->holder, sizeof h->holder, "%s", x->who);
    h->generation = x->gen, h->lo = x->lo, h->hi = x->hi;
    h->claimed = x->claimed, h->issued = x->issued, h->rate = (double)x->rate;
    h->expires_in_ms = x->expires_ms - now;
    h->owner = rec->strict && rec->owner == x->gen;
  }
}

static int list_one(void *ctx, const char *space, const char *key) {
  list_arg_t *a = ctx;
  if (is_ceiling_key(key))
    return 0;
  idgen_registry_t view = *a->r;
  snprintf(view.space, sizeof view.space, "%s", space);
  if (strcmp(space, "default") == 0)
    view.space_path[0] = '\0';
  else
    snprintf(view.space_path, sizeof view.space_path, "spaces/%s/", space);
  char *text = NULL;
  uint64_t version;
  int64_t now = 0;
  int rc = a->r->ops->seq_load(&view, key, &text, &version, a->err, a->errlen);
  if (rc == 0 && text == NULL)
    return 0;
  if (rc == 0)
    rc = idgen__seq_rec_parse(text, strlen(text), &a->rec, a->err, a->errlen);
  free(text);
  if (rc == 0)
    rc = reg_now_ms(a->r, NULL, &now, a->err, a->errlen);
  if (rc < 0)
    return rc;
  row_fill(&a->row, &a->rec, space, key, now);
  return a->cb(a->ctx, &a->row);
}

int idgen_seq_list(idgen_registry_t *r, idgen_seq_list_cb cb, void *ctx, char *err, size_t errlen) {
  if (r->ops->seq_keys == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "sequence: the %s registry keeps no sequences",
                      r->ops->scheme);
  list_arg_t *a = malloc(sizeof *a);
  if (a == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  a->r = r, a->cb = cb, a->ctx = ctx, a->err = err, a->errlen = errlen;
  int rc = r->ops->seq_keys(r, list_one, a, err, errlen);
  free(a);
  return rc;
}

int idgen_seq_set(idgen_registry_t *r, const char *key, uint64_t next, char *err, size_t errlen) {
  const char *at = strchr(key, '@');
  char name[IDGEN_SEQ_NAME_MAX];
  size_t k = at ? (size_t)(at - key) : strlen(key);
  if (k >= sizeof name || strlen(key) >= IDGEN_SEQ_KEY_MAX ||
      (at && (!at[1] || strchr(at + 1, '/') || strchr(at + 1, '.'))))
    return idgen__err(err, errlen, IDGEN_EINVAL, "sequence: key \"%.80s\" is not NAME[@PERIOD]",
                      key);
  memcpy(name, key, k);
  name[k] = '\0';
  int rc = idgen_seq_name_check(name, err, errlen);
  if (rc < 0)
    return rc;
  tx_arg_t a = {.next = next};
  return seq_apply(r, key, NULL, tx_set, &a, err, errlen);
}
