/*
 * serve_stats.c -- agent names, the Prometheus text of /metrics, and the
 * facts of /info and RESP INFO.
 *
 * Counters live per event loop and are summed when read.  Agent names are
 * published in an open-addressing table: a name is written, then its slot is
 * stored with release; readers probe with acquire loads and never lock.  New
 * names take a mutex, and past max_agents count under "other" (as does a
 * client that calls itself "other").
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server_int.h"

/* Upper bounds of the latency histogram, in ns (the last is +Inf). */
const int64_t serve_bucket_ns[NBUCKETS] = {25000,    50000,     100000,    250000,     500000,
                                           1000000,  2500000,   5000000,   10000000,   25000000,
                                           50000000, 100000000, 250000000, 1000000000, INT64_MAX};

void serve_observe_latency(serve_worker_t *w, int proto, int64_t ns, size_t n) {
  int b = 0;
  while (ns > serve_bucket_ns[b])
    b++;
  CNT_ADD(w->st.hist[proto][b], n);
  CNT_ADD(w->st.hist_sum_ns[proto], (uint64_t)ns * n);
  CNT_ADD(w->st.hist_count[proto], n);
}

int serve_agent_valid(const char *s, size_t n) {
  if (n == 0 || n > AGENT_NAME_MAX)
    return 0;
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  for (size_t i = 1; i < n; i++) {
    char ch = s[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '-'))
      return 0;
  }
  return 1;
}

static uint32_t hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

/* The slot of name, or of the empty slot where it would go. */
static uint32_t probe(serve_daemon_t *s, const char *name, size_t n, uint32_t *index) {
  for (uint32_t i = hash(name, n) & s->agent_mask;; i = (i + 1) & s->agent_mask) {
    uint32_t v = atomic_load_explicit(&s->agent_slots[i], memory_order_acquire);
    if (v == 0 ||
        (strncmp(s->agent_names[v - 1], name, n) == 0 && s->agent_names[v - 1][n] == '\0')) {
      *index = v;
      return i;
    }
  }
}

int serve_agent_setup(serve_daemon_t *s, int64_t max_agents) {
  uint32_t slots = 4;
  while (slots < 2 * (uint32_t)max_agents + 2)
    slots *= 2;
  s->agent_mask = slots - 1;
  s->agent_slots = calloc(slots, sizeof *s->agent_slots);
  s->agent_names = calloc((size_t)(AGENT_FIRST + max_agents), sizeof *s->agent_names);
  pthread_mutex_init(&s->agents_mu, NULL);
  atomic_init(&s->nagents, AGENT_FIRST);
  if (s->agent_slots == NULL || s->agent_names == NULL)
    return -1;
  strcpy(s->agent_names[AGENT_NONE], "-");
  strcpy(s->agent_names[AGENT_OTHER], "other");
  /* A client that calls itself "other" counts in the overflow bucket, so
   * that every series has its own labels.  The table has room: at most
   * max_agents + 1 names in at least 2 * max_agents + 2 slots. */
  uint32_t v;
  uint32_t slot = probe(s, "other", 5, &v);
  atomic_store_explicit(&s->agent_slots[slot], AGENT_OTHER + 1, memory_order_release);
  return 0;
}

int serve_agent_index(serve_daemon_t *s, const char *name, size_t n) {
  uint32_t v;
  probe(s, name, n, &v);
  if (v != 0)
    return (int)v - 1;
  int idx = AGENT_OTHER;
  pthread_mutex_lock(&s->agents_mu);
  uint32_t slot = probe(s, name, n, &v);
  if (v != 0) {
    idx = (int)v - 1;
  } else if (atomic_load(&s->nagents) < AGENT_FIRST + s->cfg->max_agents) {
    idx = atomic_load(&s->nagents);
    memcpy(s->agent_names[idx], name, n);
    s->agent_names[idx][n] = '\0';
    atomic_store(&s->nagents, idx + 1);
    atomic_store_explicit(&s->agent_slots[slot], (uint32_t)idx + 1, memory_order_release);
  }
  pthread_mutex_unlock(&s->agents_mu);
  return idx;
}

/* Sums a counter over the loops: `off` is its offset in serve_wstats_t. */
#define SUM(s, field)                                                                              \
  ({                                                                                               \
    uint64_t t_ = 0;                                                                               \
    for (int i_ = 0; i_ < (s)->nworkers; i_++)                                                     \
      t_ += CNT_GET((s)->workers[i_].st.field);                                                    \
    t_;                                                                                            \
  })

static uint64_t ids_total(serve_daemon_t *s, int kind, int agent) {
  size_t per_kind = (size_t)(AGENT_FIRST + s->cfg->max_agents);
  return SUM(s, ids[(size_t)kind * per_kind + (size_t)agent]);
}

static const char *const close_reason_names[NCR] = {
#define X(name, label) label,
    CLOSE_REASONS(X)
#undef X
};
static const int http_code_values[NHTTP_CODES] = {
#define X(n, phrase) n,
    HTTP_CODES(X)
#undef X
};

/* The lease as the generator in use sees it now. */
static idgen_snowflake_lease_status_t lease_now(serve_daemon_t *s) {
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(server_sf(s), &st);
  return st;
}

static const char *lease_valid_text(serve_daemon_t *s, char *buf, size_t n) {
  idgen_snowflake_lease_status_t st = lease_now(s);
  if (!st.bound || (st.valid && st.valid_ms == INT64_MAX))
    snprintf(buf, n, "+Inf"); /* static, or a lease that does not expire (file:) */
  else
    snprintf(buf, n, "%.3f", st.valid ? (double)st.valid_ms / 1000.0 : 0.0);
  return buf;
}

/* A node field's value in use: the lease's for the leased field. */
static uint64_t node_value(serve_daemon_t *s, const idgen_snowflake_lease_status_t *st, int i) {
  return st->bound && i == s->lease_field ? st->lease.worker : s->cfg->s.gen.node[i];
}

uint64_t serve_node_value(serve_daemon_t *s, int field) {
  idgen_snowflake_lease_status_t st = lease_now(s);
  return node_value(s, &st, field);
}

/* A duration in ms, or `none` for one that does not run out. */
static const char *ms_or(int64_t ms, char *buf, size_t n, const char *none) {
  if (ms < 0 || ms == INT64_MAX)
    return none;
  snprintf(buf, n, "%" PRId64, ms);
  return buf;
}

/* "2026-11-23T10:00:00.000Z", or `none` for 0. */
static const char *time_or(int64_t ms, char *buf, const char *none) {
  if (ms <= 0)
    return none;
  idgen_time_format(ms, buf);
  return buf;
}

static const char *clock_setting(serve_daemon_t *s) {
  return settings_clock_word(s->cfg->s.gen.clock_mode);
}

/* A gauge first in milliseconds, now in seconds: both, the old one marked
 * deprecated in its HELP (kept for one release). */
static void ms_and_seconds(serve_buf_t *b, const char *name, const char *help, int64_t ms) {
  serve_buf_printf(b,
                   "# HELP idgen_%s_seconds %s\n# TYPE idgen_%s_seconds gauge\n"
                   "idgen_%s_seconds %.3f\n"
                   "# HELP idgen_%s_ms Deprecated: use idgen_%s_seconds (removed in the next "
                   "release). %s\n# TYPE idgen_%s_ms gauge\nidgen_%s_ms %" PRId64 "\n",
                   name, help, name, name, (double)ms / 1000.0, name, name, help, name, name, ms);
}

/* The fast clock (docs/DESIGN.md section 2): its state as a state set, and
 * its counters. */
static void clock_metrics(serve_buf_t *b) {
  idgen_clock_stats_t cs;
  idgen_clock_stats(&cs);
  serve_buf_printf(b, "# HELP idgen_clock_fast_mode The fast clock's state, 1 for the current one "
                      "(precise: cooling down after repeated fallbacks; unavailable: no invariant "
                      "TSC).\n# TYPE idgen_clock_fast_mode gauge\n");
  for (int m = IDGEN_CLOCK_STATE_UNAVAILABLE; m <= IDGEN_CLOCK_STATE_PRECISE; m++)
    serve_buf_printf(b, "idgen_clock_fast_mode{mode=\"%s\"} %d\n",
                     idgen_clock_state_name((idgen_clock_state_t)m), (int)cs.state == m);
  serve_buf_printf(
      b,
      "# HELP idgen_clock_fast_fallbacks_total Rejections of the fast clock's TSC model "
      "(a cached millisecond caught after its end, or an implausible calibration).\n"
      "# TYPE idgen_clock_fast_fallbacks_total counter\n"
      "idgen_clock_fast_fallbacks_total %" PRIu64 "\n"
      "# HELP idgen_clock_fast_recalibrations_total Calibrations of the fast clock "
      "completed after the first.\n"
      "# TYPE idgen_clock_fast_recalibrations_total counter\n"
      "idgen_clock_fast_recalibrations_total %" PRIu64 "\n"
      "# HELP idgen_clock_fast_cooldowns_total Cool-downs on precise reads after "
      "repeated fallbacks.\n# TYPE idgen_clock_fast_cooldowns_total counter\n"
      "idgen_clock_fast_cooldowns_total %" PRIu64 "\n",
      cs.fallbacks, cs.recalibrations, cs.cooldowns);
}

/* With --cache: the ring, and the age of the IDs it hands out (the price
 * of the cache: how far their time lags the wall clock). */
static void cache_metrics(serve_daemon_t *s, serve_buf_t *b) {
  idgen_cached_gen_t *c = server_cache(s);
  if (c == NULL)
    return;
  idgen_cached_stats_t cs;
  idgen_cached_gen_stats(c, &cs);
  serve_buf_printf(
      b,
      "# HELP idgen_cache_slots The cached generator's ring size.\n"
      "# TYPE idgen_cache_slots gauge\nidgen_cache_slots %" PRIu64 "\n"
      "# HELP idgen_cache_ready IDs ready in the ring.\n"
      "# TYPE idgen_cache_ready gauge\nidgen_cache_ready %" PRIu64 "\n"
      "# HELP idgen_cache_taken_total IDs handed out from the ring.\n"
      "# TYPE idgen_cache_taken_total counter\nidgen_cache_taken_total %" PRIu64 "\n"
      "# HELP idgen_cache_filled_total IDs the filler put into the ring.\n"
      "# TYPE idgen_cache_filled_total counter\nidgen_cache_filled_total %" PRIu64 "\n"
      "# HELP idgen_cache_empty_total Requests the ring could not serve (then direct or "
      "refused, by cache_on_empty).\n"
      "# TYPE idgen_cache_empty_total counter\nidgen_cache_empty_total %" PRIu64 "\n"
      "# HELP idgen_cache_direct_total Requests served by the generator directly.\n"
      "# TYPE idgen_cache_direct_total counter\nidgen_cache_direct_total %" PRIu64 "\n",
      cs.slots, cs.ready, cs.taken, cs.filled, cs.empty, cs.direct);
  ms_and_seconds(b, "cache_id_age",
                 "How far the next ready ID's time lags the wall clock (negative: borrowed "
                 "ahead).",
                 cs.age_ms);
  ms_and_seconds(b, "cache_id_age_max", "The largest age of an ID handed out (sampled).",
                 cs.age_max_ms);
}

/* The probes' verdicts as gauges, and whether a lease is held. */
static void health_metrics(serve_daemon_t *s, serve_buf_t *b) {
  char why[400];
  int alive = !serve_stalled(s, why, sizeof why);
  serve_buf_printf(b,
                   "# HELP idgen_healthy 1 while every event loop turns (GET /health is 200), 0 "
                   "when one has not for stall_timeout_ms.\n# TYPE idgen_healthy gauge\n"
                   "idgen_healthy %d\n"
                   "# HELP idgen_ready 1 when IDs can be issued now (GET /ready is 200): lease "
                   "held, mark ahead, clock within bounds, no request past its wait, every "
                   "event loop turning, not stopping.\n# TYPE idgen_ready gauge\nidgen_ready %d\n",
                   alive, !serve_not_ready(s, why, sizeof why));
  if (s->lease_field >= 0) {
    idgen_snowflake_lease_status_t ls = lease_now(s);
    serve_buf_printf(b,
                     "# HELP idgen_lease_held 1 while the daemon holds a valid lease on its "
                     "node value from the registry.\n# TYPE idgen_lease_held gauge\n"
                     "idgen_lease_held %d\n",
                     ls.bound && ls.valid);
  }
}

/* What was asked and answered: IDs, requests, refusals, handshakes, and
 * how long requests took. */
static void request_metrics(serve_daemon_t *s, serve_buf_t *b) {
  int nagents = atomic_load(&s->nagents);
  serve_buf_printf(b, "# HELP idgen_ids_issued_total IDs issued, by kind and agent.\n"
                      "# TYPE idgen_ids_issued_total counter\n");
  for (int k = 0; k < NKINDS; k++)
    for (int a = 0; a < nagents; a++) {
      uint64_t v = ids_total(s, k, a);
      if (v || a <= AGENT_NONE)
        serve_buf_printf(b, "idgen_ids_issued_total{kind=\"%s\",agent=\"%s\"} %" PRIu64 "\n",
                         serve_kind_name(k), s->agent_names[a], v);
    }
  serve_buf_printf(b, "# HELP idgen_requests_total Requests answered, by protocol and code.\n"
                      "# TYPE idgen_requests_total counter\n");
  for (int c = 0; c < NHTTP_CODES; c++) {
    uint64_t v = SUM(s, http[c]);
    if (v || c == HC_200)
      serve_buf_printf(b, "idgen_requests_total{proto=\"http\",code=\"%d\"} %" PRIu64 "\n",
                       http_code_values[c], v);
  }
  serve_buf_printf(b, "idgen_requests_total{proto=\"resp\",code=\"ok\"} %" PRIu64 "\n",
                   SUM(s, resp_ok));
  serve_buf_printf(b, "idgen_requests_total{proto=\"resp\",code=\"err\"} %" PRIu64 "\n",
                   SUM(s, resp_err));
  serve_buf_printf(b, "idgen_requests_total{proto=\"thrift\",code=\"ok\"} %" PRIu64 "\n",
                   SUM(s, thrift_ok));
  serve_buf_printf(b, "idgen_requests_total{proto=\"thrift\",code=\"err\"} %" PRIu64 "\n",
                   SUM(s, thrift_err));
  serve_buf_printf(b, "# HELP idgen_auth_failures_total Requests refused for want of a token "
                      "of auth_file (none shown, or a wrong one), by protocol and the agent "
                      "named (- none; other: one the file does not have).\n"
                      "# TYPE idgen_auth_failures_total counter\n");
  for (int p = 0; p < NPROTO; p++)
    for (int a = 0; a < nagents; a++) {
      uint64_t v =
          SUM(s, auth_fail[(size_t)p * (size_t)(AGENT_FIRST + s->cfg->max_agents) + (size_t)a]);
      if (v || a == AGENT_NONE)
        serve_buf_printf(b, "idgen_auth_failures_total{proto=\"%s\",agent=\"%s\"} %" PRIu64 "\n",
                         serve_proto_name(p), s->agent_names[a], v);
    }
  serve_buf_printf(b, "# HELP idgen_auth_slowed_total Tokens from an address that showed wrong "
                      "ones: answers held back (held), or refused unseen (refused), by "
                      "protocol.\n"
                      "# TYPE idgen_auth_slowed_total counter\n");
  for (int p = 0; p < NPROTO; p++) {
    serve_buf_printf(b, "idgen_auth_slowed_total{proto=\"%s\",action=\"held\"} %" PRIu64 "\n",
                     serve_proto_name(p), SUM(s, auth_held[p]));
    serve_buf_printf(b, "idgen_auth_slowed_total{proto=\"%s\",action=\"refused\"} %" PRIu64 "\n",
                     serve_proto_name(p), SUM(s, auth_refused[p]));
  }
  if (s->cfg->tls != NULL) {
    static const char *const results[NTLS_RESULTS] = {"ok", "failed", "aborted", "plaintext"};
    serve_buf_printf(b, "# HELP idgen_tls_handshakes_total TLS handshakes, by result (failed: "
                        "refused by TLS, logged; aborted: the client closed or reset the "
                        "connection halfway; plaintext: a client that spoke plain text to a TLS "
                        "port).\n"
                        "# TYPE idgen_tls_handshakes_total counter\n");
    for (int r = 0; r < NTLS_RESULTS; r++)
      serve_buf_printf(b, "idgen_tls_handshakes_total{result=\"%s\"} %" PRIu64 "\n", results[r],
                       SUM(s, tls_hs[r]));
  }
  serve_buf_printf(b,
                   "# HELP idgen_request_duration_seconds From the read that completed a request "
                   "to the write of its reply.\n"
                   "# TYPE idgen_request_duration_seconds histogram\n");
  for (int p = 0; p < NPROTO; p++) {
    const char *pn = serve_proto_name(p);
    uint64_t cum = 0;
    for (int i = 0; i < NBUCKETS; i++) {
      cum += SUM(s, hist[p][i]);
      if (serve_bucket_ns[i] == INT64_MAX)
        serve_buf_printf(
            b, "idgen_request_duration_seconds_bucket{proto=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", pn,
            cum);
      else
        serve_buf_printf(
            b, "idgen_request_duration_seconds_bucket{proto=\"%s\",le=\"%g\"} %" PRIu64 "\n", pn,
            (double)serve_bucket_ns[i] / 1e9, cum);
    }
    serve_buf_printf(b, "idgen_request_duration_seconds_sum{proto=\"%s\"} %.9f\n", pn,
                     (double)SUM(s, hist_sum_ns[p]) / 1e9);
    serve_buf_printf(b, "idgen_request_duration_seconds_count{proto=\"%s\"} %" PRIu64 "\n", pn,
                     SUM(s, hist_count[p]));
  }
}

/* The generator, the requests waiting for it, the lease and the loops. */
static void generator_metrics(serve_daemon_t *s, serve_buf_t *b) {
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(server_sf(s), &st);
  char valid[32];
  int64_t horizon = idgen_layout_horizon_ms(s->layout);
  int64_t now = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
  ms_and_seconds(b, "clock_borrowed", "How far the generator's clock is ahead of the wall clock.",
                 st.borrowed_ms);
  serve_buf_printf(
      b,
      "# HELP idgen_clock_max_borrow_seconds The most the generator's clock may run ahead "
      "(max_borrow_ms): past it, calls wait (up to max_wait_ms) or are refused.\n"
      "# TYPE idgen_clock_max_borrow_seconds gauge\nidgen_clock_max_borrow_seconds %.3f\n"
      "# HELP idgen_clock_waits_total Calls that waited for the wall clock to come within "
      "max_borrow_ms (waits for the next tick are idgen_sequence_exhausted_total).\n"
      "# TYPE idgen_clock_waits_total counter\nidgen_clock_waits_total %" PRIu64 "\n"
      "# HELP idgen_clock_refusals_total Calls refused because the clock was too far "
      "behind.\n# TYPE idgen_clock_refusals_total counter\n"
      "idgen_clock_refusals_total %" PRIu64 "\n"
      "# HELP idgen_sequence_exhausted_total Calls that waited out a used-up tick.\n"
      "# TYPE idgen_sequence_exhausted_total counter\n"
      "idgen_sequence_exhausted_total %" PRIu64 "\n"
      "# HELP idgen_lease_valid_seconds How long the worker lease is known valid.\n"
      "# TYPE idgen_lease_valid_seconds gauge\nidgen_lease_valid_seconds %s\n"
      "# HELP idgen_layout_seconds_remaining Time left before the layout's time field "
      "runs out.\n# TYPE idgen_layout_seconds_remaining gauge\n"
      "idgen_layout_seconds_remaining %.3f\n",
      (double)s->cfg->s.gen.max_borrow_ms / 1000.0, st.clock_waits, st.clock_refusals,
      st.sequence_exhausted, lease_valid_text(s, valid, sizeof valid),
      (double)(horizon - now) / 1000.0);
  serve_waiting_t wt = serve_waiting(s);
  serve_buf_printf(b,
                   "# HELP idgen_clock_waiting_requests ID requests waiting now for their tick "
                   "or high-water mark (parked on a timer, not holding their event loop).\n"
                   "# TYPE idgen_clock_waiting_requests gauge\n"
                   "idgen_clock_waiting_requests %" PRIu64 "\n"
                   "# HELP idgen_clock_oldest_wait_seconds How long the longest-waiting request "
                   "has waited so far (0 when none waits).\n"
                   "# TYPE idgen_clock_oldest_wait_seconds gauge\n"
                   "idgen_clock_oldest_wait_seconds %.3f\n"
                   "# HELP idgen_clock_wait_bound_seconds The longest one request may wait: "
                   "max_wait_ms, plus the rest of a used-up tick of at most a second; /ready is "
                   "503 while the oldest wait is past it by more than %.3f s.\n"
                   "# TYPE idgen_clock_wait_bound_seconds gauge\n"
                   "idgen_clock_wait_bound_seconds %.3f\n",
                   wt.requests, (double)wt.oldest_ms / 1000.0, WAIT_MARGIN_MS / 1000.0,
                   (double)wt.bound_ms / 1000.0);
  idgen_snowflake_lease_status_t ls = lease_now(s);
  serve_buf_printf(
      b,
      "# HELP idgen_lease_mark_failures_total High-water mark writes that failed "
      "(the registry did not take them; issuing stops at the last durable mark).\n"
      "# TYPE idgen_lease_mark_failures_total counter\n"
      "idgen_lease_mark_failures_total %" PRIu64 "\n"
      "# HELP idgen_requests_parked_total ID requests that waited for their tick on "
      "a timer, without holding their event loop.\n"
      "# TYPE idgen_requests_parked_total counter\nidgen_requests_parked_total %" PRIu64 "\n"
      "# HELP idgen_loop_waits_total Blocking waits for work by the event loops "
      "(one that finds work ready returns at once).\n"
      "# TYPE idgen_loop_waits_total counter\nidgen_loop_waits_total %" PRIu64 "\n"
      "# HELP idgen_busy_polls_total Times an event loop polled for work instead of "
      "waiting at once (busy_poll_us), by whether it found some in time.\n"
      "# TYPE idgen_busy_polls_total counter\n"
      "idgen_busy_polls_total{found=\"work\"} %" PRIu64 "\n"
      "idgen_busy_polls_total{found=\"none\"} %" PRIu64 "\n"
      "# HELP idgen_busy_poll_loops_allowed How many event loops may busy-poll at "
      "once, from the CPUs the host's other runnable threads leave idle.\n"
      "# TYPE idgen_busy_poll_loops_allowed gauge\nidgen_busy_poll_loops_allowed %d\n"
      "# HELP idgen_host_other_runnable_threads The host's runnable threads that are "
      "not this daemon's event loops, at most the CPU count: the mean of the last 32 "
      "samples, taken at most every 5 ms after turns with work (the CPU count before "
      "the first, and always with busy_poll_us 0).\n"
      "# TYPE idgen_host_other_runnable_threads gauge\n"
      "idgen_host_other_runnable_threads %.2f\n",
      ls.mark_failures, SUM(s, parked), SUM(s, waits), SUM(s, polls[1]), SUM(s, polls[0]),
      atomic_load_explicit(&s->pollers_max, memory_order_relaxed),
      atomic_load_explicit(&s->others_x64, memory_order_relaxed) / 64.0);
  if (s->lease_field >= 0) { /* bound to a registry's lease */
    static const char *const op_names[SERVE_REG_OPS] = {"acquire", "renew", "mark"};
    serve_buf_printf(b, "# HELP idgen_registry_operations_total Calls to the registry since "
                        "the start, over every lease held: acquisitions, renewals and "
                        "high-water mark writes, by result.\n"
                        "# TYPE idgen_registry_operations_total counter\n");
    for (int op = 0; op < SERVE_REG_OPS; op++)
      for (int f = 0; f < 2; f++)
        serve_buf_printf(
            b, "idgen_registry_operations_total{op=\"%s\",result=\"%s\"} %" PRIu64 "\n",
            op_names[op], f ? "failed" : "ok", (uint64_t)atomic_load(&s->reg_ops[op][f]));
  }
}

void serve_metrics_text(serve_daemon_t *s, serve_buf_t *b) {
  health_metrics(s, b);
  request_metrics(s, b);
  generator_metrics(s, b);
  clock_metrics(b);
  cache_metrics(s, b);
  serve_audit_metrics(s, b);
  serve_leases_metrics(s, b);
  serve_seq_metrics(s, b);
  serve_public_metrics(s, b);
  if (atomic_load(&s->clock_skew_known))
    ms_and_seconds(b, "registry_clock_skew",
                   "This host's wall clock minus the registry's own (PostgreSQL's), beyond "
                   "the round trip's uncertainty.",
                   (int64_t)atomic_load(&s->clock_skew_ms));
  serve_buf_printf(b, "# HELP idgen_connections Open client connections.\n"
                      "# TYPE idgen_connections gauge\n");
  for (int p = 0; p < NPROTO; p++)
    serve_buf_printf(b, "idgen_connections{proto=\"%s\"} %" PRId64 "\n", serve_proto_name(p),
                     (int64_t)SUM(s, open[p]));
  serve_buf_printf(b, "# HELP idgen_connections_closed_total Connections closed, by reason.\n"
                      "# TYPE idgen_connections_closed_total counter\n");
  for (int r = 0; r < NCR; r++)
    serve_buf_printf(b, "idgen_connections_closed_total{reason=\"%s\"} %" PRIu64 "\n",
                     close_reason_names[r], SUM(s, closed[r]));
  serve_process_metrics(s, b);
}

static double uptime_s(serve_daemon_t *s) {
  return (double)(serve_mono_ms() - s->start_mono_ms) / 1000.0;
}

static const char *layout_name(serve_daemon_t *s) {
  return s->layout->preset[0] ? s->layout->preset : s->layout_spec;
}

/* An INFO value that client libraries will not split: redis-py reads a
 * value holding both ',' and '=' as `k=v,k=v` items (and fails on a layout
 * spec), so '%', ',', '=', and any byte outside '!'..'~' are percent-encoded
 * (RFC 3986's form: %2C, %3D). */
static void info_value(serve_buf_t *b, const char *key, const char *v) {
  serve_buf_printf(b, "%s:", key);
  for (; *v; v++) {
    unsigned char ch = (unsigned char)*v;
    if (ch == '%' || ch == ',' || ch == '=' || ch < '!' || ch > '~')
      serve_buf_printf(b, "%%%02X", ch);
    else
      serve_buf_put(b, v, 1);
  }
  serve_buf_put(b, "\r\n", 2);
}

int serve_info_section(const char *name, size_t n) {
  static const char *const names[] = {"server", "clients", "generator", "stats"};
  for (int i = 0; i < 4; i++)
    if (strlen(names[i]) == n && strncasecmp(name, names[i], n) == 0)
      return 1 << i;
  if ((n == 3 && strncasecmp(name, "all", 3) == 0) ||
      (n == 7 && strncasecmp(name, "default", 7) == 0) ||
      (n == 10 && strncasecmp(name, "everything", 10) == 0))
    return INFO_ALL;
  return 0;
}

void serve_info_text(serve_daemon_t *s, serve_buf_t *b, int sections) {
  const idgen_layout_t *l = s->layout;
  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(server_sf(s), &st);
  idgen_snowflake_lease_status_t ls = lease_now(s);
  idgen_clock_stats_t cs;
  idgen_clock_stats(&cs);
  char mark[IDGEN_TIME_TEXT_MAX];
  if (sections & INFO_SERVER)
    serve_buf_printf(b,
                     "# Server\r\nidgen_version:%s\r\nprocess_id:%ld\r\nuptime_in_seconds:%.0f"
                     "\r\nevent_loops:%d\r\nhttp_addr:%s\r\nresp_addr:%s\r\nthrift_addr:%s\r\n"
                     "tls:%d\r\n\r\n",
                     idgen_version(), (long)getpid(), floor(uptime_s(s)), s->nworkers,
                     s->http_addr[0] ? s->http_addr : "off", s->resp_addr[0] ? s->resp_addr : "off",
                     s->thrift_addr[0] ? s->thrift_addr : "off", s->cfg->tls != NULL);
  if (sections & INFO_CLIENTS)
    serve_buf_printf(b, "# Clients\r\nconnected_clients:%ld\r\nmaxclients:%" PRId64 "\r\n\r\n",
                     (long)atomic_load(&s->nconns), s->cfg->max_connections);
  if (sections & INFO_GENERATOR) {
    serve_buf_printf(b, "# Generator\r\n");
    info_value(b, "layout", layout_name(s));
    info_value(b, "layout_spec", s->layout_spec);
    for (int i = 0; i < l->nfields; i++)
      if (l->fields[i].kind == IDGEN_FIELD_NODE)
        serve_buf_printf(b, "node_%s:%" PRIu64 "\r\n", l->fields[i].name, node_value(s, &ls, i));
    if (s->cfg->s.host_nodes[0] != '\0')
      info_value(b, "node_from_host", s->cfg->s.host_nodes);
    info_value(b, "registry", s->registry_shown);
    serve_buf_printf(b, "lease:%s\r\n",
                     !ls.bound   ? "static"
                     : ls.valid  ? "held"
                     : ls.fenced ? "lost"
                                 : "unconfirmed");
    if (ls.bound) {
      char in[24], valid[24];
      serve_buf_printf(b, "lease_field:%s\r\nlease_worker:%" PRIu64 "\r\n",
                       l->fields[s->lease_field].name, ls.lease.worker);
      info_value(b, "lease_node", ls.lease.node);
      serve_buf_printf(b,
                       "lease_generation:%" PRIu64
                       "\r\nlease_valid_ms:%s\r\nlease_expires_in_ms:%s\r\n"
                       "lease_mark:%s\r\nlease_mark_failures:%" PRIu64 "\r\n",
                       ls.lease.generation, ms_or(ls.valid_ms, valid, sizeof valid, "never"),
                       ms_or(ls.lease.expires_in_ms, in, sizeof in, "never"),
                       time_or(ls.lease.mark_ms, mark, "none"), ls.mark_failures);
    }
    const char *pform, *pprefix;
    char pvers[128];
    unsigned pnewest;
    int pon = serve_public_facts(s, &pform, &pprefix, pvers, sizeof pvers, &pnewest);
    serve_buf_printf(b, "public:%s\r\n", pon ? "on" : "off");
    if (pon) { /* the key versions, never a key */
      serve_buf_printf(b, "public_form:%s\r\n", pform);
      info_value(b, "public_prefix", pprefix);
      info_value(b, "public_key_versions", pvers);
      serve_buf_printf(b, "public_key_newest:%u\r\n", pnewest);
    }
    serve_buf_printf(b,
                     "max_batch:%" PRId64 "\r\nmax_borrow_ms:%" PRId64 "\r\nmax_wait_ms:%" PRId64
                     "\r\nclock_borrowed_ms:%" PRId64 "\r\nclock:%s\r\nclock_fast_mode:%s\r\n"
                     "clock_fast_tsc_hz:%" PRIu64 "\r\nclock_coarse_resolution_ns:%" PRId64
                     "\r\n\r\n",
                     s->cfg->max_batch, s->cfg->s.gen.max_borrow_ms, s->cfg->s.gen.max_wait_ms,
                     st.borrowed_ms, clock_setting(s), idgen_clock_state_name(cs.state), cs.tsc_hz,
                     idgen_clock_coarse_resolution_ns());
  }
  if (!(sections & INFO_STATS))
    return;
  serve_buf_printf(b, "# Stats\r\n");
  for (int k = 0; k < NKINDS; k++) {
    uint64_t t = 0;
    for (int a = 0; a < atomic_load(&s->nagents); a++)
      t += ids_total(s, k, a);
    serve_buf_printf(b, "ids_issued_%s:%" PRIu64 "\r\n", serve_kind_name(k), t);
  }
  serve_buf_printf(b,
                   "clock_waits:%" PRIu64 "\r\nclock_refusals:%" PRIu64
                   "\r\nsequence_exhausted:%" PRIu64 "\r\nclock_fast_fallbacks:%" PRIu64
                   "\r\nclock_fast_recalibrations:%" PRIu64 "\r\nclock_fast_cooldowns:%" PRIu64
                   "\r\n",
                   st.clock_waits, st.clock_refusals, st.sequence_exhausted, cs.fallbacks,
                   cs.recalibrations, cs.cooldowns);
  serve_waiting_t wt = serve_waiting(s);
  serve_buf_printf(b,
                   "clock_waiting_requests:%" PRIu64 "\r\nclock_oldest_wait_ms:%" PRId64
                   "\r\nclock_wait_bound_ms:%" PRId64 "\r\n",
                   wt.requests, wt.oldest_ms, wt.bound_ms);
}

/* The facts of /info as a JSON object (NULL: out of memory). */
static json_t *info_object(serve_daemon_t *s) {
  const idgen_layout_t *l = s->layout;
  json_t *o = json_object(), *node = json_object(), *lease = json_object(), *clock = json_object();
  if (!o || !node || !lease || !clock) {
    json_decref(o);
    json_decref(node);
    json_decref(lease);
    json_decref(clock);
    return NULL;
  }
  idgen_clock_stats_t cs;
  idgen_clock_stats(&cs);
  json_object_set_new(clock, "setting", json_string(clock_setting(s)));
  json_object_set_new(clock, "mode", json_string(idgen_clock_state_name(cs.state)));
  json_object_set_new(clock, "fallbacks", json_integer((json_int_t)cs.fallbacks));
  json_object_set_new(clock, "recalibrations", json_integer((json_int_t)cs.recalibrations));
  json_object_set_new(clock, "cooldowns", json_integer((json_int_t)cs.cooldowns));
  json_object_set_new(clock, "cooldown_ms", json_integer(cs.cooldown_ms));
  json_object_set_new(clock, "tsc_hz", json_integer((json_int_t)cs.tsc_hz));
  /* how far behind the wall clock `coarse` stamps may be */
  json_object_set_new(clock, "coarse_resolution_ns",
                      json_integer((json_int_t)idgen_clock_coarse_resolution_ns()));
  idgen_snowflake_lease_status_t ls = lease_now(s);
  char mark[IDGEN_TIME_TEXT_MAX], gen[24];
  for (int i = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE)
      json_object_set_new(node, l->fields[i].name, json_integer((json_int_t)node_value(s, &ls, i)));
  json_object_set_new(lease, "state",
                      json_string(!ls.bound   ? "static"
                                  : ls.valid  ? "held"
                                  : ls.fenced ? "lost"
                                              : "unconfirmed"));
  if (ls.bound) {
    snprintf(gen, sizeof gen, "%" PRIu64, ls.lease.generation);
    json_object_set_new(lease, "field", json_string(l->fields[s->lease_field].name));
    json_object_set_new(lease, "worker", json_integer((json_int_t)ls.lease.worker));
    json_object_set_new(lease, "generation", json_string(gen));
    json_object_set_new(lease, "node", json_string(ls.lease.node));
    /* Durations, not times: valid_ms by this host's monotonic clock,
     * expires_in_ms as the registry measured it (null: never). */
    json_object_set_new(lease, "valid_ms",
                        ls.valid_ms == INT64_MAX ? json_null() : json_integer(ls.valid_ms));
    json_object_set_new(lease, "expires_in_ms",
                        ls.lease.expires_in_ms < 0 ? json_null()
                                                   : json_integer(ls.lease.expires_in_ms));
    json_object_set_new(lease, "mark", json_string(time_or(ls.lease.mark_ms, mark, "")));
    json_object_set_new(lease, "mark_failures", json_integer((json_int_t)ls.mark_failures));
    if (!ls.valid)
      json_object_set_new(lease, "reason", json_string(ls.reason));
  }
  json_object_set_new(o, "version", json_string(idgen_version()));
  json_object_set_new(o, "layout", json_string(layout_name(s)));
  json_object_set_new(o, "layout_spec", json_string(s->layout_spec));
  json_object_set_new(o, "node", node);
  json_object_set_new(o, "node_from_host",
                      s->cfg->s.host_nodes[0] ? json_string(s->cfg->s.host_nodes) : json_null());
  json_object_set_new(o, "registry", json_string(s->registry_shown));
  json_object_set_new(o, "lease", lease);
  json_object_set_new(o, "uptime_s", json_real(uptime_s(s)));
  json_object_set_new(o, "pid", json_integer(getpid()));
  json_object_set_new(o, "event_loops", json_integer(s->nworkers));
  json_object_set_new(o, "max_batch", json_integer(s->cfg->max_batch));
  json_object_set_new(o, "max_borrow_ms", json_integer(s->cfg->s.gen.max_borrow_ms));
  json_object_set_new(o, "max_wait_ms", json_integer(s->cfg->s.gen.max_wait_ms));
  json_object_set_new(o, "clock", clock);
  /* Requests waiting now for their tick or mark (bounded), and the bound. */
  serve_waiting_t wt = serve_waiting(s);
  json_object_set_new(o, "waiting",
                      json_pack("{sIsIsI}", "requests", (json_int_t)wt.requests, "oldest_ms",
                                (json_int_t)wt.oldest_ms, "bound_ms", (json_int_t)wt.bound_ms));
  idgen_cached_gen_t *c = server_cache(s);
  if (c != NULL) {
    idgen_cached_stats_t st;
    idgen_cached_gen_stats(c, &st);
    json_t *cache = json_pack(
        "{sIsIsIsIsIsIsIsIss}", "slots", (json_int_t)st.slots, "ready", (json_int_t)st.ready,
        "taken", (json_int_t)st.taken, "filled", (json_int_t)st.filled, "empty",
        (json_int_t)st.empty, "direct", (json_int_t)st.direct, "age_ms", (json_int_t)st.age_ms,
        "age_max_ms", (json_int_t)st.age_max_ms, "on_empty",
        s->cfg->s.num[SK_CACHE_ON_EMPTY] == IDGEN_CACHE_FAIL ? "fail" : "direct");
    if (cache != NULL)
      json_object_set_new(o, "cache", cache);
  } else {
    json_object_set_new(o, "cache", json_null());
  }
  json_object_set_new(o, "audit", serve_audit_json(s));
  json_object_set_new(o, "leases", serve_leases_json(s));
  json_object_set_new(o, "sequences", serve_seq_info(s));
  json_object_set_new(o, "public", serve_public_json(s));
  json_object_set_new(o, "connections", json_integer(atomic_load(&s->nconns)));
  json_object_set_new(o, "tls", json_boolean(s->cfg->tls != NULL));
  json_object_set_new(o, "tls_client_certificates",
                      json_boolean(s->cfg->tls != NULL && s->cfg->s.value[SK_TLS_CLIENT_CA][0]));
  return o;
}

int serve_json_line(struct json_t *o, serve_buf_t *b) {
  /* 15 significant digits: a double's shortest round trip needs 17, and
   * printed /info's uptime_s 3.191 as 3.1909999999999998. */
  char *text =
      o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(o);
  if (text == NULL)
    return -1;
  serve_buf_put(b, text, strlen(text));
  serve_buf_put(b, "\n", 1);
  free(text);
  return 0;
}

int serve_info_json(serve_daemon_t *s, serve_buf_t *b) {
  return serve_json_line(info_object(s), b);
}

/* /status.json: /info's facts and the counters behind the status page.
 * Counters are totals since the start; the page turns two successive
 * snapshots into rates and a recent p99. */
int serve_status_json(serve_daemon_t *s, serve_buf_t *b) {
  json_t *o = info_object(s);
  if (o == NULL)
    return -1;
  int64_t now = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
  char why[400], when[IDGEN_TIME_TEXT_MAX];
  int sick = serve_not_ready(s, why, sizeof why);
  json_object_set_new(o, "now_ms", json_integer(now));
  json_object_set_new(o, "mono_ms", json_integer(serve_mono_ms()));
  json_object_set_new(o, "health", json_pack("{sbss?}", "ok", !sick, "reason", sick ? why : NULL));

  json_t *ids = json_array();
  int nagents = atomic_load(&s->nagents);
  for (int k = 0; k < NKINDS; k++)
    for (int a = 0; a < nagents; a++) {
      uint64_t v = ids_total(s, k, a);
      if (v)
        json_array_append_new(ids, json_pack("{sssssI}", "kind", serve_kind_name(k), "agent",
                                             s->agent_names[a], "total", (json_int_t)v));
    }
  json_object_set_new(o, "ids", ids);

  idgen_snowflake_stats_t st;
  idgen_snowflake_gen_stats(server_sf(s), &st);
  json_object_set_new(o, "generator",
                      json_pack("{sIsIsIsIsI}", "borrowed_ms", (json_int_t)st.borrowed_ms,
                                "clock_waits", (json_int_t)st.clock_waits, "clock_refusals",
                                (json_int_t)st.clock_refusals, "sequence_exhausted",
                                (json_int_t)st.sequence_exhausted, "capacity",
                                (json_int_t)idgen_snowflake_gen_capacity(server_sf(s))));
  idgen_snowflake_lease_status_t ls = lease_now(s);
  json_t *lease = json_object_get(o, "lease");
  if (ls.bound && lease != NULL && ls.lease.mark_ms > 0) {
    json_object_set_new(lease, "mark_ms", json_integer(ls.lease.mark_ms));
    json_object_set_new(lease, "mark_ahead_ms", json_integer(ls.lease.mark_ms - now));
  }
  int64_t horizon = idgen_layout_horizon_ms(s->layout);
  idgen_time_format(horizon, when);
  json_object_set_new(o, "layout_end", json_string(when));
  json_object_set_new(o, "layout_days_left", json_real((double)(horizon - now) / 86400000.0));

  /* Requests and the latency histogram, by protocol (cumulative bucket
   * counts; "le_us" null is +Inf). */
  json_t *req = json_object(), *lat = json_object(), *le = json_array(), *conns = json_object();
  for (int i = 0; i < NBUCKETS; i++)
    json_array_append_new(le, serve_bucket_ns[i] == INT64_MAX
                                  ? json_null()
                                  : json_integer(serve_bucket_ns[i] / 1000));
  json_object_set_new(lat, "le_us", le);
  uint64_t http = 0;
  for (int c = 0; c < NHTTP_CODES; c++)
    http += SUM(s, http[c]);
  json_object_set_new(req, "http", json_integer((json_int_t)http));
  json_object_set_new(req, "resp", json_integer((json_int_t)(SUM(s, resp_ok) + SUM(s, resp_err))));
  json_object_set_new(req, "thrift",
                      json_integer((json_int_t)(SUM(s, thrift_ok) + SUM(s, thrift_err))));
  json_object_set_new(req, "errors",
                      json_integer((json_int_t)(http - SUM(s, http[HC_200]) + SUM(s, resp_err) +
                                                SUM(s, thrift_err))));
  for (int p = 0; p < NPROTO; p++) {
    json_t *cum = json_array();
    uint64_t c = 0;
    for (int i = 0; i < NBUCKETS; i++) {
      c += SUM(s, hist[p][i]);
      json_array_append_new(cum, json_integer((json_int_t)c));
    }
    json_object_set_new(lat, serve_proto_name(p), cum);
    json_object_set_new(conns, serve_proto_name(p), json_integer((json_int_t)SUM(s, open[p])));
  }
  json_object_set_new(o, "requests", req);
  json_object_set_new(o, "latency", lat);
  json_object_set_new(o, "connections_by_proto", conns);
  return serve_json_line(o, b);
}

int serve_health_text(serve_daemon_t *s, serve_buf_t *b) {
  char why[400];
  int dead = serve_stalled(s, why, sizeof why);
  serve_buf_printf(b, "%s\n", dead ? why : "ok");
  if (!dead && serve_not_ready(s, why, sizeof why)) /* alive all the same: see /ready */
    serve_buf_printf(b, "not ready: %s\n", why);
  serve_seq_health(s, b); /* a sequence whose claims fail: said, alive all the same */
  serve_public_health_line(s, b);
  return dead;
}

int serve_ready_text(serve_daemon_t *s, serve_buf_t *b) {
  char why[400];
  int sick = serve_not_ready(s, why, sizeof why);
  /* A 200 may say "degraded: ..." (the audit log loses lines: IDs go on). */
  serve_buf_printf(b, "%s\n", sick || serve_audit_degraded(s, why, sizeof why) ? why : "ok");
  serve_waiting_t wt = serve_waiting(s);
  if (wt.requests > 0) /* durations, by this host's monotonic clock */
    serve_buf_printf(b, "waiting requests=%" PRIu64 " oldest_ms=%" PRId64 " bound_ms=%" PRId64 "\n",
                     wt.requests, wt.oldest_ms, wt.bound_ms);
  idgen_snowflake_lease_status_t ls = lease_now(s);
  if (ls.bound) {
    /* Durations (valid_ms by this host, expires_in_ms by the registry) and
     * the mark by this host's clock: no two clocks side by side. */
    char mark[IDGEN_TIME_TEXT_MAX], in[24], valid[24];
    serve_buf_printf(b,
                     "lease %s=%" PRIu64 " node=%s generation=%" PRIu64
                     " valid_ms=%s expires_in_ms=%s mark=%s\n",
                     s->layout->fields[s->lease_field].name, ls.lease.worker, ls.lease.node,
                     ls.lease.generation, ms_or(ls.valid_ms, valid, sizeof valid, "never"),
                     ms_or(ls.lease.expires_in_ms, in, sizeof in, "never"),
                     time_or(ls.lease.mark_ms, mark, "none"));
  }
  serve_audit_health_line(s, b);
  return sick;
}
