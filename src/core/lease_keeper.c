/*
 * lease_keeper.c -- what keeps a generator bound to a lease honest (fenced,
 * durable): a durable high-water mark ahead of the IDs, and a lease that is known
 * valid.  Threads and the ceiling only: every renewal and mark write goes
 * through the table the lease carries (bind_int.h), filled by the registry
 * library, so the core does no I/O of its own and calls nothing of the
 * registry's by name.
 *
 * DESIGN.  The hot path already compares each state it takes with a limit;
 * for a bound generator that limit, `ceiling`, is the last state of the
 * tick of the mark recorded in the registry, or 0 while the lease cannot be
 * shown valid.  So binding costs the hot path nothing but a relaxed load of
 * a line that is written a few times a second.  Two threads per bound
 * generator do the rest:
 *
 *   - the I/O thread renews the lease at a third of its TTL and keeps the
 *     mark ahead: when less than half a mark step is left above the later of
 *     the wall clock and the generator's own clock, it writes a mark one step
 *     beyond, and only after the write returns (durable) raises `ceiling`.
 *     A call that finds its next state above the ceiling pokes it and waits;
 *   - the watchdog drops `ceiling` to 0 when the lease's deadline passes:
 *     the last successful renewal's *send* time plus the TTL less a tenth,
 *     on CLOCK_MONOTONIC.  It is a thread of its own because the I/O thread
 *     may be stuck in a call to a registry that does not answer.  A lease
 *     that does not expire (file:, held by a flock for the life of the
 *     process) has no deadline: a holder paused past its TTL has lost
 *     nothing, and only a renewal's check (its lock file removed or
 *     replaced) ends it.
 *
 * The ceiling never exceeds a mark that is durable, so even a holder that
 * was paused past its deadline (SIGSTOP), whose watchdog has not run yet,
 * issues nothing above its recorded mark; the next holder starts above it
 * (durable).  A renewal or mark write that fails on the fencing generation
 * (IDGEN_ELEASE) ends the binding for good: the ID may be someone else's.
 * A registry that cannot be reached only suspends issuing: renewals go on,
 * and the first success restores it (the generation proves nobody else got
 * the ID meanwhile).
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bind_int.h"
#include "snowflake_int.h"

struct idgen__keeper {
  idgen_lease_t *lease;
  idgen__lease_bind_t *bind; /* the lease's table */
  int64_t ttl_ms, step_ms, margin_ms;
  int expires; /* the lease expires unless renewed (network) */
  pthread_t io, watch;
  int threads; /* how many of them run */
  pthread_mutex_t mu;
  pthread_cond_t io_cv;    /* wakes the I/O thread: poke, stop */
  pthread_cond_t watch_cv; /* wakes the watchdog: a new deadline, stop */
  pthread_cond_t mark_cv;  /* wakes callers waiting for the ceiling */
  /* Under mu: */
  int stop, poke, valid, fenced;
  int failing;             /* the last renewal failed (reason says why) */
  int writing;             /* a mark write is under way */
  int mark_failing;        /* the last mark write failed (not fenced) */
  uint64_t want;           /* the highest state a waiting call needs */
  int64_t deadline;        /* CLOCK_MONOTONIC ms until which the lease is
                              * valid; INT64_MAX for one that does not expire */
  int64_t renewed_at;      /* CLOCK_MONOTONIC ms of the last renewal's answer */
  int64_t next_renew;      /* CLOCK_MONOTONIC ms */
  int64_t mark_ms;         /* durable */
  int64_t mark_retry_at;   /* CLOCK_MONOTONIC ms: no mark write before it
                              * (after a failure, also when poked) */
  idgen_lease_info_t info; /* the lease as of the last registry call */
  uint64_t renewals, renew_failures, mark_writes, mark_waits, mark_failures;
  char reason[256];
};

/* How soon a failed mark write is tried again. */
#define MARK_RETRY_MS 100

static struct timespec mono_abs(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
  return ts;
}

/* Sets `ceiling` from the state: the mark's last state while valid, else 0.
 * Under mu. */
static void apply(idgen_snowflake_gen_t *g) {
  idgen__keeper_t *k = g->keeper;
  uint64_t c = k->valid && !k->fenced ? idgen__sf_state_of_ms(g, k->mark_ms) : 0;
  assert(c <= g->max_state); /* the hot path issues up to the ceiling unchecked */
  atomic_store_explicit(&g->ceiling, c, memory_order_release);
  pthread_cond_broadcast(&k->mark_cv);
}

static void fence(idgen_snowflake_gen_t *g, const char *why) {
  idgen__keeper_t *k = g->keeper;
  k->fenced = 1;
  k->valid = 0;
  snprintf(k->reason, sizeof k->reason, "%s", why);
  apply(g);
  pthread_cond_signal(&k->watch_cv);
}

/* The mark a bound generator needs now: the later of the wall clock and the
 * last ms of the tick of its next state. */
static int64_t mark_needed(const idgen_snowflake_gen_t *g) {
  int64_t wall = idgen__ns_to_ms(idgen__sf_now_ns(g));
  uint64_t nx = atomic_load_explicit(&g->next, memory_order_acquire);
  if (g->keeper->want > nx) /* a waiter read an older clock; it must not spin */
    nx = g->keeper->want;
  uint64_t remote = atomic_load_explicit(&g->remote_want, memory_order_relaxed);
  if (remote > nx) /* the same, from a process sharing the generator */
    nx = remote;
  int64_t own = idgen__sf_ms_of_state(g, nx > g->max_state ? g->max_state : nx);
  return own > wall ? own : wall;
}

/* One renewal; under mu, which it drops around the call.  0 or the error. */
static int renew_once(idgen_snowflake_gen_t *g) {
  idgen__keeper_t *k = g->keeper;
  char e[256] = "";
  int64_t sent = idgen__mono_ms();
  pthread_mutex_unlock(&k->mu);
  int rc = k->bind->renew(k->lease, e, sizeof e);
  pthread_mutex_lock(&k->mu);
  k->bind->info(k->lease, &k->info); /* only this thread calls the lease */
  if (rc == 0) {
    k->renewals++;
    k->failing = 0;
    k->deadline = k->expires ? sent + k->ttl_ms - k->margin_ms : INT64_MAX;
    k->renewed_at = idgen__mono_ms();
    k->next_renew = sent + k->ttl_ms / 3;
    if (!k->fenced) {
      k->reason[0] = '\0';
      /* A renewal so slow that its own deadline has passed restores nothing. */
      if (!k->valid && k->deadline > idgen__mono_ms()) {
        k->valid = 1;
        apply(g);
      }
    }
    pthread_cond_signal(&k->watch_cv);
  } else if (rc == IDGEN_ELEASE || rc == IDGEN_EFORKED) {
    fence(g, e[0] ? e : "the lease was granted to another holder");
  } else {
    k->renew_failures++;
    k->failing = 1;
    if (k->valid) /* still valid: the failure is news, not yet a loss */
      snprintf(k->reason, sizeof k->reason, "%s", e[0] ? e : idgen_strerror(rc));
    else
      snprintf(k->reason, sizeof k->reason, "not renewed within its TTL (%lld ms): %.180s",
               (long long)k->ttl_ms, e[0] ? e : idgen_strerror(rc));
    int64_t retry = k->ttl_ms / 10 < 100 ? 100 : k->ttl_ms / 10;
    k->next_renew = idgen__mono_ms() + (retry > 1000 ? 1000 : retry);
  }
  return rc;
}

/* One mark write to `target`; under mu, dropped around the call. */
static int mark_once(idgen_snowflake_gen_t *g, int64_t target) {
  idgen__keeper_t *k = g->keeper;
  char e[256] = "";
  k->writing = 1;
  pthread_mutex_unlock(&k->mu);
  int rc = k->bind->mark(k->lease, target, e, sizeof e);
  pthread_mutex_lock(&k->mu);
  k->writing = 0;
  k->bind->info(k->lease, &k->info);
  if (rc == 0) {
    k->mark_writes++;
    k->mark_failing = 0;
    if (target > k->mark_ms)
      k->mark_ms = target;
    if (k->valid && !k->failing)
      k->reason[0] = '\0';
    apply(g);
  } else if (rc == IDGEN_ELEASE || rc == IDGEN_EFORKED) {
    fence(g, e[0] ? e : "the lease was granted to another holder");
  } else {
    /* Callers above the ceiling fail at once until a write succeeds: they
     * are woken to see it. */
    k->mark_failures++;
    k->mark_failing = 1;
    if (k->valid) /* a lease that ran out while the write was away keeps saying so */
      snprintf(k->reason, sizeof k->reason, "%s", e[0] ? e : idgen_strerror(rc));
    pthread_cond_broadcast(&k->mark_cv);
  }
  return rc;
}

static void *io_main(void *arg) {
  idgen_snowflake_gen_t *g = arg;
  idgen__keeper_t *k = g->keeper;
  /* How often the headroom is looked at: a quarter step, 10..250 ms; for
   * a generator shared with other processes every 10 ms, since their calls
   * cannot poke (they raise remote_want, looked at here) and wait at most
   * their budget, max_wait_ms plus a tick. */
  int64_t look = k->step_ms / 4 < 10 ? 10 : k->step_ms / 4 > 250 ? 250 : k->step_ms / 4;
  if (g->shared)
    look = 10;
  pthread_mutex_lock(&k->mu);
  while (!k->stop && !k->fenced) {
    int64_t now = idgen__mono_ms(), wake = now + look;
    if (now >= k->next_renew)
      renew_once(g);
    if (!k->stop && k->valid) {
      int64_t need = mark_needed(g);
      /* A failed write is retried MARK_RETRY_MS later, however many calls
       * poke meanwhile (they fail at once while it fails): a registry in
       * trouble gets one write per holder per interval, not one per
       * request. */
      if ((k->poke || k->mark_ms - need < k->step_ms / 2) && now >= k->mark_retry_at &&
          mark_once(g, need + k->step_ms) < 0)
        k->mark_retry_at = idgen__mono_ms() + MARK_RETRY_MS;
      if (k->mark_failing && k->mark_retry_at < wake)
        wake = k->mark_retry_at;
    }
    k->poke = 0; /* a waiter that still needs more pokes again when woken */
    if (k->next_renew < wake)
      wake = k->next_renew;
    if (k->stop || k->fenced)
      break;
    struct timespec ts = mono_abs(wake);
    pthread_cond_timedwait(&k->io_cv, &k->mu, &ts);
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

/* Ends validity once the deadline has passed; under mu.  The watch thread
 * calls it at the deadline, and so does every reader (a waiter, the status),
 * so none of them sees a lease valid past its deadline while the watch
 * thread has yet to run. */
static void expire_if_due(idgen_snowflake_gen_t *g) {
  idgen__keeper_t *k = g->keeper;
  if (!k->valid || idgen__mono_ms() < k->deadline)
    return;
  char last[sizeof k->reason];
  snprintf(last, sizeof last, "%s", k->failing ? k->reason : "");
  k->valid = 0;
  snprintf(k->reason, sizeof k->reason, "not renewed within its TTL (%lld ms)%s%.180s",
           (long long)k->ttl_ms, last[0] ? ": " : "", last);
  apply(g);
  k->next_renew = idgen__mono_ms(); /* retry renewing at once */
  pthread_cond_signal(&k->io_cv);
}

static void *watch_main(void *arg) {
  idgen_snowflake_gen_t *g = arg;
  idgen__keeper_t *k = g->keeper;
  pthread_mutex_lock(&k->mu);
  while (!k->stop) {
    expire_if_due(g);
    if (k->valid && k->deadline != INT64_MAX) {
      struct timespec ts = mono_abs(k->deadline);
      pthread_cond_timedwait(&k->watch_cv, &k->mu, &ts);
    } else {
      pthread_cond_wait(&k->watch_cv, &k->mu);
    }
  }
  pthread_mutex_unlock(&k->mu);
  return NULL;
}

static void keeper_free(idgen__keeper_t *k) {
  pthread_cond_destroy(&k->io_cv);
  pthread_cond_destroy(&k->watch_cv);
  pthread_cond_destroy(&k->mark_cv);
  pthread_mutex_destroy(&k->mu);
  free(k);
}

static int cond_init_mono(pthread_cond_t *c) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  int rc = pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
  return rc;
}

int idgen__keeper_start(idgen_snowflake_gen_t *g, idgen_lease_t *lease, char *err, size_t errlen) {
  idgen__lease_bind_t *bind = idgen__lease_bind(lease);
  if (atomic_exchange(&bind->bound, 1))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "the lease is already bound to a generator (one generator per lease)");
  idgen__keeper_t *k = calloc(1, sizeof *k);
  if (k == NULL) {
    atomic_store(&bind->bound, 0);
    return idgen__err(err, errlen, IDGEN_ENOMEM, "out of memory");
  }
  idgen_lease_info_t info;
  bind->info(lease, &info);
  k->lease = lease;
  k->bind = bind;
  k->ttl_ms = info.ttl_ms;
  k->expires = bind->expires;
  k->margin_ms = info.ttl_ms / 10;
  k->step_ms = info.mark_step_ms;
  k->mark_ms = info.mark_ms;
  k->info = info;
  pthread_mutex_init(&k->mu, NULL);
  cond_init_mono(&k->io_cv);
  cond_init_mono(&k->watch_cv);
  cond_init_mono(&k->mark_cv);
  g->keeper = k;
  atomic_store_explicit(&g->ceiling, 0, memory_order_release);

  /* The first renewal and mark, before any ID: the lease's deadline starts
   * from a renewal this process sent, and the ceiling from a durable mark. */
  pthread_mutex_lock(&k->mu);
  int rc = renew_once(g); /* sets valid and the deadline */
  if (rc == 0)
    rc = mark_once(g, mark_needed(g) + k->step_ms);
  char why[256];
  snprintf(why, sizeof why, "%s", k->reason);
  pthread_mutex_unlock(&k->mu);
  if (rc == 0 && pthread_create(&k->io, NULL, io_main, g) == 0) {
    k->threads = 1;
    if (pthread_create(&k->watch, NULL, watch_main, g) == 0)
      k->threads = 2;
  }
  if (rc == 0 && k->threads == 2)
    return 0;
  if (k->threads) {
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_signal(&k->io_cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->io, NULL);
  }
  g->keeper = NULL;
  keeper_free(k);
  atomic_store(&bind->bound, 0);
  if (rc == 0)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "cannot start the lease's thread");
  return idgen__err(err, errlen, rc, "%s", why[0] ? why : idgen_strerror(rc));
}

int64_t idgen__keeper_wait(idgen_snowflake_gen_t *g, uint64_t want, int64_t max_ns) {
  idgen__keeper_t *k = g->keeper;
  if (k == NULL)
    return IDGEN_EEXHAUSTED; /* unbound: the ceiling is the layout's end */
  int64_t t0 = idgen__mono_ns();
  int64_t rc = 0;
  pthread_mutex_lock(&k->mu);
  k->mark_waits++;
  for (;;) {
    expire_if_due(g);
    if (atomic_load_explicit(&g->ceiling, memory_order_acquire) >= want)
      break;
    if (!k->valid || k->fenced || k->stop) {
      rc = IDGEN_ELEASE;
      break;
    }
    k->poke = 1;
    if (want > k->want)
      k->want = want;
    pthread_cond_signal(&k->io_cv);
    /* The last write failed and no other is under way: nothing will move
     * the mark before the retry, so waiting would only hold the caller. */
    if (k->mark_failing && !k->writing) {
      rc = IDGEN_EMARK;
      break;
    }
    int64_t left = max_ns - (idgen__mono_ns() - t0);
    if (max_ns < 0 || left <= 0) {
      rc = max_ns < 0 ? IDGEN_EAGAIN : IDGEN_EMARK;
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t until = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + left;
    ts.tv_sec = (time_t)(until / 1000000000);
    ts.tv_nsec = (long)(until % 1000000000);
    pthread_cond_timedwait(&k->mark_cv, &k->mu, &ts);
  }
  pthread_mutex_unlock(&k->mu);
  if (rc == 0 && max_ns >= 0)
    rc = idgen__mono_ns() - t0;
  return rc;
}

void idgen__keeper_stop(idgen_snowflake_gen_t *g) {
  idgen__keeper_t *k = g->keeper;
  if (g->fork_gen != idgen__fork_gen()) {
    /* A forked child: the threads are the parent's, and the mutex may have
     * been held at the fork.  Leave all of it; the memory is the child's. */
    g->keeper = NULL;
    return;
  }
  pthread_mutex_lock(&k->mu);
  k->stop = 1;
  atomic_store_explicit(&g->ceiling, 0, memory_order_release);
  pthread_cond_signal(&k->io_cv);
  pthread_cond_signal(&k->watch_cv);
  pthread_cond_broadcast(&k->mark_cv);
  pthread_mutex_unlock(&k->mu);
  pthread_join(k->io, NULL);
  pthread_join(k->watch, NULL);
  /* The final mark: the last tick that may have been used, so that the next
   * holder can start as soon as the clock allows.  Everything issued is at
   * or below both it and the durable mark (nothing is issued from now on). */
  if (!k->fenced) {
    uint64_t nx = atomic_load_explicit(&g->next, memory_order_acquire);
    uint64_t last = nx == 0 ? 0 : nx - 1;
    uint64_t ceil = idgen__sf_state_of_ms(g, k->mark_ms);
    if (last > ceil)
      last = ceil; /* values above the ceiling were taken but never issued */
    int64_t final = idgen__sf_ms_of_state(g, last);
    if (final < k->mark_ms)
      k->bind->final_mark(k->lease, final);
  }
  atomic_store(&k->bind->bound, 0);
  g->keeper = NULL;
  keeper_free(k);
}

void idgen_snowflake_gen_lease_status2(idgen_snowflake_gen_t *g,
                                       idgen_snowflake_lease_status_t *st) {
  memset(st, 0, sizeof *st);
  idgen__keeper_t *k = g->keeper;
  if (k == NULL || (g->shared ? idgen__sf_remote(g) : g->fork_gen != idgen__fork_gen()))
    return; /* in a forked child (or another process) the binding is the owner's */
  pthread_mutex_lock(&k->mu);
  expire_if_due(g);
  st->lease = k->info;
  st->bound = 1;
  st->valid = k->valid && !k->fenced;
  st->fenced = k->fenced;
  int64_t now = idgen__mono_ms(), left = k->deadline - now;
  st->valid_ms = !st->valid ? 0 : k->deadline == INT64_MAX ? INT64_MAX : left > 0 ? left : 0;
  if (k->info.expires_in_ms >= 0) {
    int64_t in = k->info.expires_in_ms - (now - k->renewed_at);
    st->lease.expires_in_ms = in > 0 ? in : 0;
  } else {
    st->lease.expires_in_ms = -1;
  }
  st->lease.mark_ms = k->mark_ms;
  st->renewals = k->renewals;
  st->renew_failures = k->renew_failures;
  st->mark_writes = k->mark_writes;
  st->mark_waits = k->mark_waits;
  st->mark_failures = k->mark_failures;
  st->mark_failing = k->mark_failing;
  snprintf(st->reason, sizeof st->reason, "%s", k->reason);
  pthread_mutex_unlock(&k->mu);
}
