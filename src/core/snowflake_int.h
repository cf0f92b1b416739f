/*
 * snowflake_int.h -- the Snowflake generator's state, shared by snowflake.c
 * (issuing), cached.c (Baidu's ring, which fills from a generator) and
 * lease_keeper.c (the background threads of a generator bound to a lease,
 * which reach the registry only through the lease's table, bind_int.h).
 */
#ifndef IDGEN_SNOWFLAKE_INT_H
#define IDGEN_SNOWFLAKE_INT_H

#include <stdatomic.h>
#include <unistd.h>

#include "core_int.h"

#define NS_PER_MS 1000000LL

typedef struct idgen__keeper idgen__keeper_t;

enum { CLOCK_KIND_FAST, CLOCK_KIND_PRECISE, CLOCK_KIND_COARSE, CLOCK_KIND_INJECTED };

/* idgen_snowflake_gen.bias; an owner's token is aligned to 8. */
#define BIAS_FREE ((uintptr_t)0)
#define BIAS_REVOKING ((uintptr_t)1)
#define BIAS_SHARED ((uintptr_t)2)

struct idgen_snowflake_gen {
  /* Read-only after creation; shared by all threads. */
  int64_t epoch;
  int64_t unit;
  int64_t borrow_ms;
  int64_t wait_ms;
  uint64_t node_bits; /* all node fields, already in place */
  unsigned seq_bits;  /* S */
  unsigned seq_shift;
  unsigned time_shift;
  uint64_t seq_mask;
  uint64_t max_tick;       /* 2^T - 1 */
  uint64_t max_state;      /* largest issuable (tick, sequence), <= 2^64 - 2 */
  idgen__keeper_t *keeper; /* bound to a lease (lease_keeper.c), or NULL */
  uint64_t fast_span;      /* hot path: c - (x << S) must be <= this */
  int fast;                /* hot path usable */
  int random_start;
  int clock_kind;      /* CLOCK_KIND_*: where now_ms() reads the time */
  idgen_clock_t clock; /* clock.now_ns == NULL: the system clock */
  unsigned fork_gen;
  /* Made by idgen_snowflake_gen_init_shared in memory shared by processes:
   * no fork check; only the process `owner` (which made it and holds its
   * keeper) may reach the keeper, others wait for the ceiling by looking. */
  int shared;
  int owner; /* pid */
  /* Kept by the host program instead of a keeper thread (a host without
   * threads: the WebAssembly build's JavaScript holds the lease and moves
   * the mark, idgen__sf_external_*); its calls wait for the ceiling by
   * looking, as another process's calls on a shared generator do. */
  int external;
  idgen_layout_t layout;

  /* The largest state that may be issued now: max_state for an unbound
   * generator; for a bound one, the recorded high-water mark's last state
   * while the lease is valid, else 0.  Written by the keeper a few times a
   * second at most; read (relaxed) on every call. */
  _Atomic uint64_t ceiling;

  /* Who may take without a locked instruction (bias.c, DESIGN §1): BIAS_FREE
   * until the first take, then the owner's idgen__bias_me(), | BIAS_REVOKING
   * once another thread has marked it for its barrier, then BIAS_SHARED.
   * Shared generators (other processes take too) are BIAS_SHARED from the
   * start; a bound one is owned until its fenced reading revokes it. */
  _Atomic uintptr_t bias;

  /* The state word, alone on its cache line. */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t next;

  /* The highest reading of the wall clock any call has made, in ms since
   * the epoch (bits 0-62), and SEEN_AHEAD while the generator is ahead of
   * the clock.  A call whose reading is below it knows that the clock
   * stepped back: its wait for that step counts against max_wait_ms (bounded,
   * DESIGN §1 "Waiting").  The hot path compares it with its own reading
   * in one instruction, as it tested the flag alone before: equal means
   * "this millisecond is recorded and the generator is not ahead".  Written
   * once per millisecond and when the flag changes; a line of its own. */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t seen;

  /* Slow-path counters, on their own line so they never disturb `next`. */
  _Alignas(IDGEN_CACHELINE) _Atomic uint64_t clock_waits;
  _Atomic uint64_t clock_refusals;
  _Atomic uint64_t sequence_exhausted;
  /* A shared generator's highest state a call in another process found
   * above the ceiling: the keeper moves the mark to cover it (its poke). */
  _Atomic uint64_t remote_want;
};

/* g->seen's flag: the generator is ahead of the clock (DESIGN §1). */
#define SEEN_AHEAD (UINT64_C(1) << 63)

/* The longest tick whose used-up rest a call may wait out without counting
 * it against max_wait_ms (bounded): Twitter's millisecond, Baidu's second. */
#define FREE_TICK_MAX_MS 1000

/* Whether the calling process is not the one that may reach g's keeper. */
static inline int idgen__sf_remote(const idgen_snowflake_gen_t *g) {
  return g->external || (g->shared && g->owner != (int)getpid());
}

/*
 * A generator kept by its host program (g->external): the host leases the
 * tuple (the generator was made with its node values, unbound) and keeps
 * the mark, with these three calls on the generator's one thread:
 *   start:  before the first call: IDs start above the ticks of mark_ms and
 *           floor_ms (the lease's), and none is issued until keep;
 *   keep:   the mark now recorded (durable) in the registry, Unix ms: calls
 *           may issue up to its tick; 0 when the lease cannot be shown
 *           valid: nothing more is issued (IDGEN_ELEASE);
 *   needed: the mark the generator needs now (the later of the wall clock
 *           and the tick of the highest state a call asked for), Unix ms.
 * start fails (IDGEN_EEXHAUSTED) when the marks are at the layout's end.
 */
int idgen__sf_external_start(idgen_snowflake_gen_t *g, int64_t mark_ms, int64_t floor_ms, char *err,
                             size_t errlen);
void idgen__sf_external_keep(idgen_snowflake_gen_t *g, int64_t mark_ms);
int64_t idgen__sf_external_needed_ms(idgen_snowflake_gen_t *g);

/* idgen_snowflake_wait_t.phase: nothing taken yet (the call claims when it
 * runs), or values reserved (w->first..w->last) that it issues when due. */
enum { PHASE_CLAIM = 0, PHASE_RESERVED = 1 };

/* Before an async call is resumed: if it comes before the end of the wait
 * it was asked, the part not waited is given back to its budget. */
void idgen__sf_wait_early(idgen_snowflake_wait_t *w);
/* idgen_snowflake_gen_next_n_async for a resume that starts a call anew
 * (a cache's): `from` is w->asked_mono_ns after idgen__sf_wait_early. */
int idgen__sf_next_n_async_from(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n,
                                idgen_snowflake_wait_t *w, int64_t from);

/* A call's budget in ns: how long its waits may add up to. */
static inline int64_t idgen__sf_allowance_ns(const idgen_snowflake_wait_t *w) {
  return (int64_t)w->allowance_ms * 1000000;
}

/* The wall clock in ns of g (injected or system). */
static inline int64_t idgen__sf_now_ns(const idgen_snowflake_gen_t *g) {
  if (g->clock.now_ns != NULL)
    return g->clock.now_ns(g->clock.ctx);
  return idgen__clock_ns();
}

/* The last state of the tick holding Unix ms `ms` (capped at max_state), or
 * 0 when `ms` is before the epoch (nothing may be issued). */
static inline uint64_t idgen__sf_state_of_ms(const idgen_snowflake_gen_t *g, int64_t ms) {
  if (ms < g->epoch)
    return 0;
  uint64_t t = (uint64_t)(ms - g->epoch) / (uint64_t)g->unit;
  if (t >= g->max_tick)
    return g->max_state;
  uint64_t v = ((t + 1) << g->seq_bits) - 1;
  return v < g->max_state ? v : g->max_state;
}

/* The last Unix ms of the tick of state v. */
static inline int64_t idgen__sf_ms_of_state(const idgen_snowflake_gen_t *g, uint64_t v) {
  return g->epoch + (int64_t)((v >> g->seq_bits) + 1) * g->unit - 1;
}

/*
 * Binding a generator to a lease (lease_keeper.c), which reaches the
 * registry only through the lease's table (bind_int.h):
 *   start: binds g to `lease` (g->keeper set, ceiling raised after a first
 *          renewal and mark write), or fails with a message;
 *   wait:  called when a call's values are above the ceiling but not past
 *          the layout: pokes the keeper to move the mark to `want`, and with
 *          max_ns >= 0 waits for it at most max_ns (real time), returning
 *          the ns it waited, or with max_ns < 0 only looks (0, or
 *          IDGEN_EAGAIN); IDGEN_ELEASE when the lease is not valid,
 *          IDGEN_EMARK at once when the last mark write failed and none is
 *          under way, or when the wait ran out; IDGEN_EEXHAUSTED unbound;
 *   stop:  final mark, joins, frees (g->keeper back to NULL); in a forked
 *          child only forgets the parent's keeper.
 * start and wait run only in the process that owns the keeper
 * (idgen__sf_remote).
 */
int idgen__keeper_start(idgen_snowflake_gen_t *g, idgen_lease_t *lease, char *err, size_t errlen);
int64_t idgen__keeper_wait(idgen_snowflake_gen_t *g, uint64_t want, int64_t max_ns);
void idgen__keeper_stop(idgen_snowflake_gen_t *g);

#endif
