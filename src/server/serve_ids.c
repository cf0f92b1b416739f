/*
 * serve_ids.c -- making IDs for a request, in the form its protocol wants.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"

#include "server_int.h"

/* The longest a request may wait (bounded): max_wait_ms, plus the rest of a
 * used-up tick when the layout's tick is a second or shorter. */
static int64_t wait_bound_ms(const serve_daemon_t *s) {
  /* Tests only: a bound that a request waiting by the rules passes, to see
   * /ready's 503 without a fault to cause it. */
  const char *t = getenv("IDGEN_TEST_WAIT_BOUND_MS");
  if (t != NULL)
    return strtoll(t, NULL, 10);
  int64_t unit = s->layout->unit_ms;
  return s->cfg->s.gen.max_wait_ms + (unit <= 1000 ? unit : 0);
}

serve_waiting_t serve_waiting(serve_daemon_t *s) {
  serve_waiting_t wt = {0, 0, wait_bound_ms(s)};
  int64_t oldest = 0;
  for (int i = 0; i < s->nworkers; i++) {
    serve_worker_t *w = &s->workers[i];
    uint64_t k = atomic_load_explicit(&w->ids_waiting, memory_order_relaxed);
    int64_t since = atomic_load_explicit(&w->ids_waiting_since, memory_order_relaxed);
    wt.requests += k;
    if (k > 0 && since > 0 && (oldest == 0 || since < oldest))
      oldest = since;
  }
  if (oldest > 0) {
    int64_t age = serve_kernel_mono_ns() - oldest;
    wt.oldest_ms = age > 0 ? age / 1000000 : 0;
  }
  return wt;
}

/* This loop's waiting requests, for the other loops to read. */
static void publish_waiting(serve_worker_t *w) {
  atomic_store_explicit(&w->ids_waiting_since, w->parked_last ? w->parked_last->since_mono_ns : 0,
                        memory_order_relaxed);
  atomic_store_explicit(&w->ids_waiting, w->nparked, memory_order_relaxed);
}

/* A loop that has ended (a drain) stamps INT64_MAX: never stalled. */
int64_t serve_loop_stalled_ms(serve_daemon_t *s, int *loop) {
  int64_t now = serve_mono_ms(), oldest = 0;
  *loop = -1;
  for (int i = 0; i < s->nworkers; i++) {
    int64_t age = now - atomic_load_explicit(&s->workers[i].turned_ms, memory_order_relaxed);
    if (age > oldest) {
      oldest = age;
      *loop = i;
    }
  }
  return oldest;
}

int serve_stalled(serve_daemon_t *s, char *why, size_t n) {
  int loop;
  int64_t age = serve_loop_stalled_ms(s, &loop);
  if (age < s->cfg->stall_timeout_ms)
    return 0;
  snprintf(why, n,
           "stalled: event loop %d has not turned for %" PRId64 " ms (stall_timeout_ms %" PRId64
           ")",
           loop, age, s->cfg->stall_timeout_ms);
  return 1;
}

/* Asks the generator itself (no copy kept by the daemon): ID requests are
 * answered from the generator's own errors, and /ready from its status. */
int serve_not_ready(serve_daemon_t *s, char *why, size_t n) {
  if (atomic_load(&s->stopping)) { /* a load balancer sends no new clients */
    snprintf(why, n,
             "shutting down: a graceful stop is under way (shutdown_timeout_ms %" PRId64 ")",
             s->cfg->shutdown_timeout_ms);
    return 1;
  }
  if (serve_stalled(s, why, n)) /* its clients wait: ready implies alive */
    return 1;
  idgen_snowflake_lease_status_t ls;
  idgen_snowflake_gen_lease_status(server_sf(s), &ls);
  if (ls.bound && !ls.valid) {
    snprintf(why, n, "lease lost: %s", ls.reason[0] ? ls.reason : "not valid");
    return 1;
  }
  /* The lease is valid but the mark fell behind the clock: the registry
   * has not taken a new one, and IDs stop at the mark. */
  if (ls.bound && ls.mark_failing) { /* IDs stop at the last durable mark */
    snprintf(why, n, "high-water mark: the last mark write failed: %s", ls.reason);
    return 1;
  }
  if (ls.bound && ls.lease.mark_ms < idgen_clock_now_ms(IDGEN_CLOCK_PRECISE)) {
    snprintf(why, n,
             "high-water mark: the registry has not recorded a mark ahead of the "
             "clock%s%s",
             ls.reason[0] ? ": " : "", ls.reason);
    return 1;
  }
  /* A request waiting for its tick is no fault, unless it has waited
   * longer than `bounded` allows (a loop that did not resume it in time,
   * or a wait the generator should have refused). */
  serve_waiting_t wt = serve_waiting(s);
  if (wt.oldest_ms > wt.bound_ms + WAIT_MARGIN_MS) {
    snprintf(why, n,
             "waiting: a request has waited %" PRId64 " ms, longer than its bound of %" PRId64
             " ms (max_wait_ms %" PRId64 " and the rest of a used-up tick of at most a second); "
             "%" PRIu64 " waiting",
             wt.oldest_ms, wt.bound_ms, s->cfg->s.gen.max_wait_ms, wt.requests);
    return 1;
  }
  /* One that would be refused is: the generator is further ahead than
   * borrow and wait allow. */
  idgen_cached_gen_t *c = server_cache(s);
  idgen_cached_stats_t cst = {0};
  if (c != NULL)
    idgen_cached_gen_stats(c, &cst);
  if (cst.ready == 0 && idgen_snowflake_gen_capacity(server_sf(s)) == 0) {
    idgen_snowflake_stats_t st;
    idgen_snowflake_gen_stats(server_sf(s), &st);
    snprintf(why, n,
             "clock: the wall clock is %" PRId64 " ms behind the generator (max_borrow_ms %" PRId64
             ", max_wait_ms %" PRId64 ")",
             st.borrowed_ms, s->cfg->s.gen.max_borrow_ms, s->cfg->s.gen.max_wait_ms);
    return 1;
  }
  return serve_audit_unhealthy(s, why, n); /* audit_mode require: IDs are refused */
}

/* The reason an ID request failed with rc, naming how long until IDs can
 * be issued again for a clock refusal; returns that wait in ms. */
static int64_t error_text(serve_daemon_t *s, int rc, size_t count, char *buf, size_t n) {
  if (rc == IDGEN_EBATCH) {
    snprintf(buf, n,
             "count %zu: the generator can make at most %" PRIu64
             " IDs within max_wait_ms (%" PRId64 " ms) now; ask for fewer, or again shortly",
             count, idgen_snowflake_gen_capacity(server_sf(s)), s->cfg->s.gen.max_wait_ms);
    return 1;
  }
  if (rc == IDGEN_ELEASE || rc == IDGEN_EMARK) {
    idgen_snowflake_lease_status_t ls;
    idgen_snowflake_gen_lease_status(server_sf(s), &ls);
    snprintf(buf, n, "%s: %s", rc == IDGEN_ELEASE ? "lease lost" : "high-water mark",
             ls.reason[0] ? ls.reason : idgen_strerror(rc));
    return 1000;
  }
  if (rc == SERVE_ESHUTDOWN) {
    snprintf(buf, n,
             "shutting down: this request's IDs are not due before the drain's time limit "
             "(shutdown_timeout_ms %" PRId64 "); ask another instance, or again once it is back",
             s->cfg->shutdown_timeout_ms);
    return 1000;
  }
  if (rc == SERVE_EAUDIT) {
    serve_audit_refusal_text(s, buf, n);
    return 1000;
  }
  if (rc == IDGEN_EEMPTY) {
    snprintf(buf, n,
             "cache: fewer than %zu IDs are ready and cache_on_empty is fail; ask again "
             "shortly",
             count);
    return 1000;
  }
  if (rc != IDGEN_ECLOCK) {
    snprintf(buf, n, "cannot issue IDs now: %s", idgen_strerror(rc));
    return 1000;
  }
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(server_sf(s), &st);
  int64_t wait = st.borrowed_ms - s->cfg->s.gen.max_borrow_ms;
  if (wait < 1)
    wait = 1;
  snprintf(buf, n,
           "clock: the wall clock is %" PRId64 " ms behind the generator (max_borrow_ms %" PRId64
           "); IDs resume in about %" PRId64 " ms",
           st.borrowed_ms, s->cfg->s.gen.max_borrow_ms, wait);
  return wait;
}

/* n IDs of `kind` given to `agent`, for the metrics. */
static void count_ids(serve_worker_t *w, int kind, int agent, size_t n) {
  size_t per_kind = (size_t)(AGENT_FIRST + w->srv->cfg->max_agents);
  CNT_ADD(w->st.ids[(size_t)kind * per_kind + (size_t)agent], n);
}

int serve_ids_make128(serve_daemon_t *s, int kind, char *out) {
  int rc;
  if (kind == KIND_ULID) {
    idgen_ulid_t u;
    if ((rc = idgen_ulid_gen_next(s->ulid, &u)) < 0)
      return rc;
    idgen_ulid_format(&u, out); /* and a NUL, which out has room for */
    return IDGEN_ULID_STRLEN;
  }
  idgen_uuid_t u;
  if ((rc = idgen_uuid7_gen_next(s->uuid7, &u)) < 0)
    return rc;
  idgen_uuid_format(&u, out);
  return IDGEN_UUID_STRLEN;
}

/* Gives back the room of a large batch (SCRATCH_KEEP bytes or more). */
static void ids_shrink(serve_worker_t *w) {
  if (w->ids_cap * sizeof *w->ids <= SCRATCH_KEEP)
    return;
  uint64_t *p = realloc(w->ids, 1024 * sizeof *p);
  if (p != NULL) {
    w->ids = p;
    w->ids_cap = 1024;
  }
}

/* The reply to an ID request that failed with rc. */
static void answer_error(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                         int rc) {
  char why[400];
  int64_t wait_ms = error_text(w->srv, rc, sh->count, why, sizeof why);
  if (rc == IDGEN_ECLOCK) {
    idgen_snowflake_stats_t st;
    idgen_snowflake_gen_stats(server_sf(w->srv), &st);
    log_limited(&w->srv->clock_log, "warn", "clock_refusal",
                "borrowed_ms=%" PRId64 " max_borrow_ms=%" PRId64 " max_wait_ms=%" PRId64
                " refusals=%" PRIu64,
                st.borrowed_ms, w->srv->cfg->s.gen.max_borrow_ms, w->srv->cfg->s.gen.max_wait_ms,
                st.clock_refusals);
  }
  sh->replies->error(w, c, sh, rc, why, wait_ms);
}

/* The reply to an ID request whose IDs are made (Snowflake: in `ids`). */
static void answer(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                   const uint64_t *ids) {
  /* audit_mode require: no IDs while their lines cannot be written (the
   * IDs made are dropped, never reissued, as for a client that goes). */
  if (sh->kind == KIND_SNOWFLAKE && !sh->head && serve_audit_refuses(w->srv)) {
    answer_error(w, c, sh, SERVE_EAUDIT);
    return;
  }
  size_t start = w->out.len; /* where its reply begins (require: held, maybe refused) */
  int rc = sh->replies->ids(w, c, sh, ids);
  if (rc < 0) {
    answer_error(w, c, sh, rc);
    return;
  }
  /* HEAD makes the IDs only to know the length; no one receives them */
  if (rc == 0 && !sh->head) {
    count_ids(w, sh->kind, sh->agent, sh->count);
    if (sh->kind == KIND_SNOWFLAKE)
      serve_audit(w, c, sh, ids[0], start);
  }
}

/* Starts (or, after a lost lease, restarts on the generator now in use) a
 * Snowflake call into ids: 0, IDGEN_EAGAIN (wait), or an error. */
static int start_snowflakes(serve_worker_t *w, idgen_snowflake_gen_t **g,
                            idgen_cached_gen_t **cache, uint64_t *swaps, uint64_t *ids, size_t n,
                            idgen_snowflake_wait_t *wait) {
  for (int again = 0;; again++) {
    /* With --cache, from its ring (resumed, if it must wait, through the
     * cache: the pair is read through the cache). */
    *swaps = server_swaps(w->srv);
    idgen_cached_gen_t *c = server_cache(w->srv);
    int rc;
    *cache = c;
    if (c != NULL) {
      *g = idgen_cached_gen_generator(c);
      rc = idgen_cached_gen_take_n_async(c, ids, n, wait);
      if (rc == IDGEN_ELEASE && !again && server_cache(w->srv) != c)
        continue; /* swapped meanwhile: the new one */
    } else {
      *g = server_sf(w->srv);
      rc = idgen_snowflake_gen_next_n_async(*g, ids, n, wait);
      if (rc == IDGEN_ELEASE && !again && server_sf(w->srv) != *g)
        continue;
    }
    return rc;
  }
}

/* When a call waiting until wall-clock time w->due_ns is due, on the
 * monotonic clock.  The generator's budget is real time: if the wall clock
 * steps back meanwhile, the resumed call sees it and is refused or asks
 * again within its budget, instead of the timer waiting for the step.
 * `now_mono`: the kernel's monotonic clock read by the caller. */
static int64_t due_mono(const idgen_snowflake_wait_t *w, int64_t now_mono) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  int64_t left = w->due_ns - ((int64_t)t.tv_sec * 1000000000 + t.tv_nsec);
  return now_mono + (left > 0 ? left : 0);
}

void serve_ids_request(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh) {
  if (sh->kind != KIND_SNOWFLAKE) {
    answer(w, c, sh, NULL);
    return;
  }
  size_t n = sh->count;
  if (n > w->ids_cap) {
    uint64_t *p = realloc(w->ids, n * sizeof *p);
    if (p == NULL) {
      answer_error(w, c, sh, IDGEN_ENOMEM);
      return;
    }
    w->ids = p;
    w->ids_cap = n;
  }
  idgen_snowflake_gen_t *g;
  idgen_cached_gen_t *cache;
  idgen_snowflake_wait_t wait;
  uint64_t swaps;
  int rc = start_snowflakes(w, &g, &cache, &swaps, w->ids, n, &wait);
  int64_t due = 0;
  if (rc == IDGEN_EAGAIN) {
    due = due_mono(&wait, serve_kernel_mono_ns());
    if (due > w->park_until_ns)
      rc = SERVE_ESHUTDOWN; /* its reserved values are dropped */
  }
  if (rc == IDGEN_EAGAIN) {
    serve_parked_t *p = malloc(sizeof *p + n * sizeof p->ids[0]);
    if (p == NULL) {
      answer_error(w, c, sh, IDGEN_ENOMEM); /* its reserved values are dropped */
      ids_shrink(w);
      return;
    }
    p->c = c;
    p->g = g;
    p->cache = cache;
    p->swaps = swaps;
    p->wait = wait;
    /* With --cache, the ring's IDs already taken come first (the generator's
     * resume fills from ids + wait.offset). */
    memcpy(p->ids, w->ids, wait.offset * sizeof p->ids[0]);
    p->due_mono_ns = due;
    p->shape = *sh;
    p->read_ns = w->read_ns;
    p->since_mono_ns = serve_kernel_mono_ns();
    p->prev = NULL;
    p->next = w->parked;
    if (w->parked)
      w->parked->prev = p;
    else
      w->parked_last = p;
    w->parked = p;
    w->nparked++;
    publish_waiting(w);
    c->parked = p;
    w->parks++;
    CNT_ADD(w->st.parked, 1);
    ids_shrink(w);
    return;
  }
  if (rc == 0)
    answer(w, c, sh, w->ids);
  else
    answer_error(w, c, sh, rc);
  ids_shrink(w);
}

void serve_ids_unpark(serve_worker_t *w, serve_conn_t *c) {
  serve_parked_t *p = c->parked;
  if (p == NULL)
    return;
  if (p->prev)
    p->prev->next = p->next;
  else
    w->parked = p->next;
  if (p->next)
    p->next->prev = p->prev;
  else
    w->parked_last = p->prev;
  w->nparked--;
  publish_waiting(w);
  c->parked = NULL;
  free(p);
}

/* `next` (the ns until the first parked request is due, or -1) with p's
 * due time, from the kernel clock's reading t, taken in. */
static int64_t sooner(int64_t next, const serve_parked_t *p, int64_t t) {
  int64_t left = p->due_mono_ns > t ? p->due_mono_ns - t : 0;
  return next < 0 || left < next ? left : next;
}

int64_t serve_ids_run_parked(serve_worker_t *w, serve_resume_cb resume) {
  int64_t now = serve_kernel_mono_ns(), next = -1;
  uint64_t parks = w->parks;
  for (serve_parked_t *p = w->parked, *nx; p; p = nx) {
    nx = p->next;
    int rc;
    if (p->due_mono_ns > w->park_until_ns) {
      rc = SERVE_ESHUTDOWN; /* a drain began, and it is due after its limit */
    } else if (p->due_mono_ns > now) {
      next = sooner(next, p, now);
      continue;
    } else {
      /* A new lease since it parked: its generator is fenced (it would only
       * fail) and may be freed; start again on the new one.  Else resume, and
       * if the lease was lost meanwhile and a new one is in, start there. */
      rc = IDGEN_ELEASE;
      if (p->swaps == server_swaps(w->srv))
        rc = p->cache ? idgen_cached_gen_resume(p->cache, &p->wait, p->ids)
                      : idgen_snowflake_gen_resume(p->g, &p->wait, p->ids);
      if (rc == IDGEN_ELEASE && server_swaps(w->srv) != p->swaps)
        rc = start_snowflakes(w, &p->g, &p->cache, &p->swaps, p->ids, p->shape.count, &p->wait);
    }
    if (rc == IDGEN_EAGAIN) {
      int64_t t = serve_kernel_mono_ns();
      p->due_mono_ns = due_mono(&p->wait, t);
      if (p->due_mono_ns <= w->park_until_ns) {
        next = sooner(next, p, t);
        continue;
      }
      rc = SERVE_ESHUTDOWN;
    }
    serve_conn_t *c = p->c;
    int64_t read_ns = p->read_ns;
    w->out.len = 0;
    if (rc == 0)
      answer(w, c, &p->shape, p->ids);
    else
      answer_error(w, c, &p->shape, rc);
    serve_ids_unpark(w, c); /* p is freed; nx is still the next */
    resume(w, c, read_ns);
  }
  /* Requests that resume() parked (the ones behind an answered one) went
   * to the list's head, before the walk: among its first `added` entries.
   * Without them the loop would sleep a sweep (100 ms) past a due time. */
  uint64_t added = w->parks - parks;
  if (added > 0) {
    int64_t t = serve_kernel_mono_ns();
    for (serve_parked_t *p = w->parked; p && added > 0; p = p->next, added--)
      next = sooner(next, p, t);
  }
  return next;
}

void serve_ids_end_parked(serve_worker_t *w, serve_resume_cb resume) {
  /* Before this reading, so that one asking to wait again is refused;
   * answers and refusals only: what waits behind them would be cut off
   * by the close (a large reply made now could not be sent in time). */
  w->park_until_ns = serve_kernel_mono_ns() - 1;
  for (serve_parked_t *p = w->parked; p; p = p->next)
    p->c->stop_parsing = 1;
  serve_ids_run_parked(w, resume);
}
