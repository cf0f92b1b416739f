/*
 * serve_lease.c -- the daemon's lease supervision: the generators made at
 * start (leased through the registry, or static), and the lease thread that
 * logs what happens to the lease and replaces one lost for good.  Requests
 * do not read anything from here: they ask the generator (serve_ids.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "server_int.h"

/* With --cache, a cache over g into *out (NULL without); 0, or -1 with a
 * message in err. */
static int make_cache(const serve_config_t *cfg, idgen_snowflake_gen_t *g, idgen_cached_gen_t **out,
                      char *err, size_t n) {
  *out = NULL;
  if (!cfg->s.num[SK_CACHE])
    return 0;
  idgen_cached_settings_t cs;
  idgen_cached_settings_init(&cs);
  cs.boost_power = (int)cfg->s.num[SK_CACHE_BOOST_POWER];
  cs.padding_percent = (int)cfg->s.num[SK_CACHE_PADDING_PERCENT];
  cs.schedule_ms = cfg->s.num[SK_CACHE_SCHEDULE_MS];
  cs.on_empty = (idgen_cache_empty_t)cfg->s.num[SK_CACHE_ON_EMPTY];
  return idgen_cached_gen_new(out, g, &cs, err, n) < 0 ? -1 : 0;
}

/* This host's clock against the registry's own: 0 with s->clock_skew_ms
 * set, or -1 (no clock of its own, or unreachable: left as it was). */
static int measure_skew(serve_daemon_t *s) {
  int64_t skew, theirs, unc;
  if (idgen_registry_clock_skew(s->lx.reg, &skew, &theirs, &unc, NULL, 0) < 0)
    return -1;
  /* Within the round trip's uncertainty, closer to zero. */
  skew = skew > unc ? skew - unc : skew < -unc ? skew + unc : 0;
  atomic_store(&s->clock_skew_ms, skew);
  atomic_store(&s->clock_skew_known, 1);
  return 0;
}

static leased_opts_t lease_opts(const serve_config_t *cfg) {
  leased_opts_t o = {cfg->s.registry, cfg->s.lease_field, cfg->s.lease_ttl_ms,
                     cfg->s.max_start_wait_ms};
  return o;
}

/* Logs the lease now held by s->lx (read through its generator: the
 * lease's own fields are the keeper thread's while it is bound). */
static void log_lease(serve_daemon_t *s, const char *event) {
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(s->lx.gen, &st);
  if (!st.bound)
    return;
  char mark[IDGEN_TIME_TEXT_MAX] = "-";
  if (st.lease.mark_ms > 0)
    idgen_time_format(st.lease.mark_ms, mark);
  log_event("info", event,
            "registry=%s pool=%s node=%s %s=%" PRIu64 " generation=%" PRIu64 " mark=%s holder=%s",
            s->registry_shown, st.lease.pool, st.lease.node, s->layout->fields[st.lease.field].name,
            st.lease.worker, st.lease.generation, mark, st.lease.holder);
}

/* Frees the retired generators (and their caches) that no event loop can
 * still hold: every loop has passed the top of its loop since the swap
 * that retired them (parked requests never touch a generator after a
 * swap).  Without this a daemon kept every fenced generator until exit and
 * stopped leasing after 16 losses: hours of an etcd cluster's faults. */
static void reclaim_retired(serve_daemon_t *s) {
  uint64_t seen = UINT64_MAX;
  for (int i = 0; i < s->nworkers; i++) {
    uint64_t v = atomic_load(&s->workers[i].swaps_seen);
    seen = v < seen ? v : seen;
  }
  int k = 0;
  for (int i = 0; i < s->nretired; i++) {
    if (s->retired_swap[i] <= seen) {
      idgen_cached_gen_free(s->retired_cache[i]); /* its filler uses the generator */
      leased_release(&s->retired[i]);
      continue;
    }
    s->retired[k] = s->retired[i];
    s->retired_cache[k] = s->retired_cache[i];
    s->retired_swap[k] = s->retired_swap[i];
    k++;
  }
  for (int i = k; i < s->nretired; i++) { /* nothing dangling past the end */
    s->retired[i] = (leased_t){0};
    s->retired_cache[i] = NULL;
    s->retired_swap[i] = 0;
  }
  s->nretired = k;
}

/* Logs changes of the bound generator's lease (lost, valid again, failing
 * mark writes); on a lease lost for good, acquires a new one (at most once a
 * second) and swaps in a generator bound to it, starting above the old one's
 * last ID (increasing). */
static void lease_tick(serve_daemon_t *s, int64_t *next_try) {
  if (s->nretired > 0)
    reclaim_retired(s);
  idgen_snowflake_gen_t *g = server_sf(s);
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(g, &st);
  const uint64_t now_ops[SERVE_REG_OPS][2] = {
      [SERVE_REG_RENEW] = {st.renewals, st.renew_failures},
      [SERVE_REG_MARK] = {st.mark_writes, st.mark_failures}};
  for (int op = SERVE_REG_RENEW; op < SERVE_REG_OPS; op++)
    for (int f = 0; f < 2; f++)
      atomic_store(&s->reg_ops[op][f], s->reg_before[op][f] + now_ops[op][f]);
  int was = s->lease_was_valid;
  s->lease_was_valid = st.valid;
  if ((was && !st.valid) || (st.fenced && !s->fence_logged))
    log_event("error", "lease_lost",
              "worker=%" PRIu64 " generation=%" PRIu64 " fenced=%d reason=%s", st.lease.worker,
              st.lease.generation, st.fenced,
              log_quote(st.reason, strlen(st.reason), (char[600]){0}, 600));
  else if (!was && st.valid)
    log_event("info", "lease_valid", "worker=%" PRIu64 " generation=%" PRIu64, st.lease.worker,
              st.lease.generation);
  /* Failing mark writes: requests above the mark fail at once meanwhile.
   * They are retried every 100 ms: a line a second at most, with count=N,
   * the failures since the line before (each of which had a line of its
   * own before); the last ones are reported once they stop, not lost. */
  if (st.mark_failures > s->mark_failures_seen && serve_mono_ms() - s->mark_logged_ms >= 1000) {
    log_event("error", "mark_failed",
              "worker=%" PRIu64 " failures=%" PRIu64 " count=%" PRIu64 " reason=%s",
              st.lease.worker, st.mark_failures, st.mark_failures - s->mark_failures_seen,
              log_quote(st.reason, strlen(st.reason), (char[600]){0}, 600));
    s->mark_failures_seen = st.mark_failures;
    s->mark_logged_ms = serve_mono_ms();
  }
  s->fence_logged = st.fenced;
  if (!st.fenced || serve_mono_ms() < *next_try)
    return;
  *next_try = serve_mono_ms() + 1000;
  if (s->nretired == (int)(sizeof s->retired / sizeof s->retired[0])) {
    /* An event loop has not turned since 16 swaps: wait for it (each look
     * frees what it no longer holds), saying so once. */
    if (!s->retired_full_logged)
      log_event("error", "lease_acquire",
                "error=\"%d lost leases' generators are still held "
                "by an event loop that has not turned since: waiting for it before leasing "
                "again\"",
                s->nretired);
    s->retired_full_logged = 1;
    return;
  }
  s->retired_full_logged = 0;
  idgen_snowflake_stats_t last;
  idgen_snowflake_gen_stats(g, &last);
  idgen_snowflake_settings_t gs = s->cfg->s.gen;
  uint64_t fields[IDGEN_LAYOUT_MAX_FIELDS];
  if (last.last_id != 0)
    idgen_layout_decompose(s->layout, last.last_id, fields, &gs.start_after_ms);
  leased_t nx = {.reg = s->lx.reg};
  leased_opts_t o = lease_opts(s->cfg);
  char err[512];
  idgen_cached_gen_t *nc = NULL;
  if (leased_acquire(&nx, &o, s->layout, &gs, err, sizeof err) < 0 ||
      make_cache(s->cfg, nx.gen, &nc, err, sizeof err) < 0) {
    log_event("error", "lease_acquire", "error=%s",
              log_quote(err, strlen(err), (char[1200]){0}, 1200));
    atomic_fetch_add(&s->reg_ops[SERVE_REG_ACQUIRE][1], 1);
    nx.reg = NULL; /* shared: kept */
    leased_release(&nx);
    return;
  }
  s->retired_cache[s->nretired] = server_cache(s);
  s->retired[s->nretired++] = s->lx;
  s->retired[s->nretired - 1].reg = NULL; /* shared with the new one */
  s->lx = nx;
  atomic_fetch_add(&s->reg_ops[SERVE_REG_ACQUIRE][0], 1);
  for (int op = SERVE_REG_RENEW; op < SERVE_REG_OPS; op++)
    for (int f = 0; f < 2; f++)
      s->reg_before[op][f] += now_ops[op][f]; /* the old lease's calls are over */
  s->mark_failures_seen = 0;                  /* the new lease counts from 0 */
  atomic_store_explicit(&s->sf, nx.gen, memory_order_release);
  atomic_store_explicit(&s->cache, nc, memory_order_release);
  s->retired_swap[s->nretired - 1] = atomic_fetch_add(&s->swaps, 1) + 1; /* after the stores */
  log_lease(s, "lease_acquired");
  /* IDs order by any node field above the time field first (no preset has
   * one): a new tuple lower there makes every later ID lower than the ones
   * before the swap, whatever its clock.  Said, not hidden. */
  const idgen_field_t *tf = &s->layout->fields[s->layout->time_index];
  unsigned top = (unsigned)tf->shift + tf->bits;
  idgen_snowflake_lease_status_t now_st;
  idgen_snowflake_gen_lease_status(nx.gen, &now_st);
  if (top < 64 && now_st.bound && now_st.lease.key >> top < st.lease.key >> top)
    log_event("warn", "ids_decrease",
              "reason=\"the new node tuple is lower in a node field above the time field: IDs "
              "after this swap are below the ones before it\" before=%" PRIu64 " after=%" PRIu64,
              st.lease.key, now_st.lease.key);
}

static void *lease_main(void *arg) {
  serve_daemon_t *s = arg;
  int64_t next_try = 0, next_skew = serve_mono_ms() + 10000;
  while (!atomic_load(&s->stopping)) {
    lease_tick(s, &next_try);
    if (atomic_load(&s->clock_skew_known) && serve_mono_ms() >= next_skew) {
      measure_skew(s);
      next_skew = serve_mono_ms() + 10000;
    }
    struct timespec t = {0, 50 * 1000000L};
    nanosleep(&t, NULL);
  }
  return NULL;
}

int serve_make_generators(serve_daemon_t *s) {
  const serve_config_t *cfg = s->cfg;
  char err[512];
  leased_opts_t o = lease_opts(cfg);
  int rc = leased_acquire(&s->lx, &o, &cfg->s.layout, &cfg->s.gen, err, sizeof err);
  if (rc < 0) {
    fprintf(stderr, "idgen: serve: %s\n", err);
    return -1;
  }
  /* A clock too far from the registry's refuses the start (Twitter's
   * server compared its clock with its peers' and refused past 10 s). */
  if (s->lx.reg != NULL && measure_skew(s) == 0 && cfg->s.num[SK_MAX_CLOCK_SKEW_MS] > 0) {
    int64_t skew = atomic_load(&s->clock_skew_ms), limit = cfg->s.num[SK_MAX_CLOCK_SKEW_MS];
    if (skew > limit || skew < -limit) {
      char here[IDGEN_TIME_TEXT_MAX], there[IDGEN_TIME_TEXT_MAX], uri[1024];
      int64_t now = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
      idgen_time_format(now, here);
      idgen_time_format(now - skew, there);
      fprintf(stderr,
              "idgen: serve: this host's clock (%s) is %" PRId64 " ms %s the registry's (%s, %s), "
              "more than max_clock_skew_ms (%" PRId64 "): set the clock right (NTP), or raise "
              "max_clock_skew_ms\n",
              here, skew > 0 ? skew : -skew, skew > 0 ? "ahead of" : "behind", there,
              leased_uri_display(idgen_registry_uri(s->lx.reg), uri, sizeof uri), limit);
      return -1;
    }
  }
  /* Where the registry is, resolved (an absolute file: directory). */
  leased_uri_display(s->lx.reg ? idgen_registry_uri(s->lx.reg) : cfg->s.registry, s->registry_shown,
                     sizeof s->registry_shown);
  atomic_store(&s->sf, s->lx.gen);
  if (s->lx.lease != NULL)
    atomic_store(&s->reg_ops[SERVE_REG_ACQUIRE][0], 1);
  idgen_cached_gen_t *c;
  if (make_cache(cfg, s->lx.gen, &c, err, sizeof err) < 0) {
    fprintf(stderr, "idgen: serve: cache: %s\n", err);
    return -1;
  }
  atomic_store(&s->cache, c);
  s->layout = &cfg->s.layout; /* the generators' copy, which lives longer than any of them */
  idgen_layout_format(s->layout, s->layout_spec, sizeof s->layout_spec);
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(s->lx.gen, &st);
  s->lease_field = st.bound ? st.lease.field : -1;
  idgen_gen128_settings_t g = {.clock_mode = cfg->s.gen.clock_mode}; /* --clock: every generator */
  if (idgen_ulid_gen_new(&s->ulid, &g) < 0 || idgen_uuid7_gen_new(&s->uuid7, &g) < 0) {
    fprintf(stderr, "idgen: serve: cannot make the ULID and UUIDv7 generators\n");
    return -1;
  }
  return 0;
}

void serve_lease_start(serve_daemon_t *s) {
  if (s->cfg->s.host_nodes[0] != '\0')
    log_event("warn", "node_from_host",
              "nodes=\"%s\" reason=\"unchecked: another process on this host, or another "
              "host whose address has the same low bits, with the same node values makes the "
              "same IDs; a registry (--registry file:DIR or postgres://...) leases node values "
              "and checks them\"",
              s->cfg->s.host_nodes);
  log_lease(s, "lease");
  if (s->lx.lease != NULL) {
    int64_t none = 0;
    lease_tick(s, &none); /* the first look, before any request */
    if (pthread_create(&s->lease_thread, NULL, lease_main, s) == 0)
      s->lease_thread_on = 1;
  }
}
