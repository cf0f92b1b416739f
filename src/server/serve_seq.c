/*
 * serve_seq.c -- the daemon's sequences: GET /seq/NAME and RESP SEQ NAME [N]
 * take numbers (or business numbers) from sequence NAME of the daemon's
 * registry and space, opened on first use and closed (the rest given back)
 * at shutdown; their metrics, /health lines and /info entries.
 *
 * The table holds at most seq_max_open sequences, each opened once and
 * never removed: readers scan the published entries without a lock (an
 * entry is complete before the count that shows it grows); openers hold
 * the mutex, so a name is opened once.  The registry is opened with the
 * first sequence.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "server_int.h"

typedef struct seq_entry {
  char name[IDGEN_SEQ_NAME_MAX];
  idgen_seq_t *q;
  int text; /* has a template: business numbers */
  /* Counted by every loop (read-modify-write: the loops share an entry). */
  _Atomic uint64_t requests; /* requests answered with numbers */
  _Atomic uint64_t failures; /* requests refused by the library */
  /* The registry's counts, from the lister's last idgen_seq_list (every
   * period's counter of the name together). */
  _Atomic uint64_t lost;
  /* After a failure (not a burst): until then (monotonic ns) a request is
   * refused at once, without the wait below, so that a registry down costs
   * a loop at most one wait per QUIET_NS per sequence. */
  _Atomic int64_t quiet_until_ns;
  _Atomic int quiet_rc; /* the error that began it, answered meanwhile */
} seq_entry_t;

/* An event loop waits at most WAIT_MS for the claim under way when a burst
 * has used up the numbers in hand (a claim takes 0.3-5 ms, tens under
 * load); after a failure, or while a claim has run past HUNG_MS (a
 * registry that hangs rather than fails), it does not wait for QUIET_NS. */
#define WAIT_MS 50
#define HUNG_MS 1000
#define QUIET_NS 250000000

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct serve_seqs {
  pthread_mutex_t mu; /* opening: the registry and new entries */
  idgen_registry_t *r;
  int64_t max;
  atomic_int n; /* published entries */
  seq_entry_t **e;
  char tmpl[1100]; /* scratch for settings_seq_for, under mu */
  /* The lister: a thread that reads the registry's counts every
   * LIST_EVERY_MS (lost numbers are the registry's to count), started with
   * the first sequence. */
  pthread_t lister;
  int lister_on, stop;
  pthread_cond_t cv; /* with mu: stop */
};

#define LIST_EVERY_MS 30000

int serve_seqs_init(serve_daemon_t *s) {
  struct serve_seqs *t = calloc(1, sizeof *t);
  if (t == NULL)
    return -1;
  t->max = s->cfg->s.num[SK_SEQ_MAX_OPEN];
  t->e = calloc(t->max > 0 ? (size_t)t->max : 1, sizeof *t->e);
  if (t->e == NULL) {
    free(t);
    return -1;
  }
  pthread_mutex_init(&t->mu, NULL);
  pthread_cond_init(&t->cv, NULL);
  atomic_init(&t->n, 0);
  s->seqs = t;
  return 0;
}

typedef struct listed {
  struct serve_seqs *t;
  const char *space;
  uint64_t *lost; /* per entry, summed over its periods */
} listed_t;

static int on_row(void *ctx, const idgen_seq_row_t *row) {
  listed_t *l = ctx;
  if (strcmp(row->space, l->space) != 0)
    return 0;
  int n = atomic_load_explicit(&l->t->n, memory_order_acquire);
  for (int i = 0; i < n; i++) {
    size_t k = strlen(l->t->e[i]->name);
    if (strncmp(row->key, l->t->e[i]->name, k) == 0 && (row->key[k] == '\0' || row->key[k] == '@'))
      l->lost[i] += row->lost;
  }
  return 0;
}

static void *lister_main(void *arg) {
  serve_daemon_t *s = arg;
  struct serve_seqs *t = s->seqs;
  const char *space = s->cfg->s.value[SK_SPACE];
  uint64_t *lost = calloc(t->max > 0 ? (size_t)t->max : 1, sizeof *lost);
  pthread_mutex_lock(&t->mu);
  while (!t->stop && lost != NULL) {
    pthread_mutex_unlock(&t->mu);
    int n = atomic_load_explicit(&t->n, memory_order_acquire);
    memset(lost, 0, (size_t)n * sizeof *lost);
    listed_t l = {t, space && space[0] ? space : "default", lost};
    char err[600];
    if (idgen_seq_list(t->r, on_row, &l, err, sizeof err) == 0)
      for (int i = 0; i < n; i++)
        atomic_store_explicit(&t->e[i]->lost, lost[i], memory_order_relaxed);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += LIST_EVERY_MS / 1000;
    pthread_mutex_lock(&t->mu);
    while (!t->stop && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0) {
    }
  }
  pthread_mutex_unlock(&t->mu);
  free(lost);
  return NULL;
}

void serve_seqs_close(serve_daemon_t *s) {
  struct serve_seqs *t = s->seqs;
  if (t == NULL)
    return;
  pthread_mutex_lock(&t->mu);
  t->stop = 1;
  pthread_cond_broadcast(&t->cv);
  pthread_mutex_unlock(&t->mu);
  if (t->lister_on)
    pthread_join(t->lister, NULL);
  pthread_cond_destroy(&t->cv);
  int n = atomic_load(&t->n);
  for (int i = 0; i < n; i++) {
    idgen_seq_stats_t st;
    idgen_seq_stats(t->e[i]->q, &st);
    idgen_seq_close(t->e[i]->q); /* gives back what it did not issue */
    log_event("info", "seq_closed", "seq=%s issued=%" PRIu64 " given_back=%" PRIu64, t->e[i]->name,
              st.issued, st.in_hand);
    free(t->e[i]);
  }
  if (t->r != NULL)
    idgen_registry_close(t->r);
  pthread_mutex_destroy(&t->mu);
  free(t->e);
  free(t);
  s->seqs = NULL;
}

static seq_entry_t *find(struct serve_seqs *t, const char *name) {
  int n = atomic_load_explicit(&t->n, memory_order_acquire);
  for (int i = 0; i < n; i++)
    if (strcmp(t->e[i]->name, name) == 0)
      return t->e[i];
  return NULL;
}

/* The entry of `name`, opened on first use: NULL and an HTTP status with
 * why when it cannot be. */
static seq_entry_t *get(serve_daemon_t *s, const char *name, int *status, char *why, size_t n) {
  struct serve_seqs *t = s->seqs;
  seq_entry_t *e = find(t, name);
  if (e != NULL)
    return e;
  pthread_mutex_lock(&t->mu);
  e = find(t, name);
  if (e != NULL) {
    pthread_mutex_unlock(&t->mu);
    return e;
  }
  int cnt = atomic_load(&t->n);
  char err[1100] = "";
  int rc = 0;
  *status = 503;
  if (cnt >= t->max) {
    snprintf(why, n,
             "sequence %s: the daemon has %d sequences open, its seq_max_open: no more can be "
             "opened",
             name, cnt);
    *status = 429;
    rc = -1;
  }
  if (rc == 0 && t->r == NULL &&
      (rc = idgen_registry_open(&t->r, s->cfg->s.registry, err, sizeof err)) < 0)
    snprintf(why, n, "sequence %s: %s", name, err);
  idgen_seq_settings_t ss;
  settings_seq_for(&s->cfg->s, name, &ss, t->tmpl, sizeof t->tmpl);
  ss.wait_ms = WAIT_MS;
  idgen_seq_t *q = NULL;
  if (rc == 0 && (rc = idgen_seq_open(&q, t->r, name, &ss, err, sizeof err)) < 0) {
    snprintf(why, n, "sequence %s: %s", name, err);
    *status = rc == IDGEN_EINVAL ? 400 : 503;
  }
  if (rc == 0 && (e = calloc(1, sizeof *e)) == NULL) {
    idgen_seq_close(q);
    snprintf(why, n, "out of memory");
    rc = -1;
  }
  if (rc == 0) {
    snprintf(e->name, sizeof e->name, "%s", name);
    e->q = q;
    e->text = ss.format != NULL;
    t->e[cnt] = e;
    atomic_store_explicit(&t->n, cnt + 1, memory_order_release);
    log_event("info", "seq_opened", "seq=%s format=%s strict=%d", name,
              ss.format ? ss.format : "none", ss.strict);
    if (!t->lister_on && pthread_create(&t->lister, NULL, lister_main, s) == 0)
      t->lister_on = 1; /* (without it: no lost counts in the metrics) */
  }
  pthread_mutex_unlock(&t->mu);
  return e;
}

static void count(seq_entry_t *e, uint64_t req, uint64_t fails) {
  atomic_fetch_add_explicit(&e->requests, req, memory_order_relaxed);
  atomic_fetch_add_explicit(&e->failures, fails, memory_order_relaxed);
}

int serve_seq_take(serve_daemon_t *s, const char *name, size_t len, size_t cnt, uint64_t *nums,
                   char **texts, char *why, size_t n) {
  char nm[IDGEN_SEQ_NAME_MAX], err[300];
  if (len >= sizeof nm || memchr(name, '\0', len) != NULL) {
    snprintf(why, n, "sequence name \"%s\" is not [a-z][a-z0-9_-]{0,63}",
             IDGEN_QUOTE(name, len, 0, 80));
    return 400;
  }
  memcpy(nm, name, len);
  nm[len] = '\0';
  if (idgen_seq_name_check(nm, err, sizeof err) < 0) {
    snprintf(why, n, "%s", err);
    return 400;
  }
  int status = 503;
  seq_entry_t *e = get(s, nm, &status, why, n);
  if (e == NULL)
    return status;
  *texts = NULL;
  int rc = 0, quiet = mono_ns() < atomic_load_explicit(&e->quiet_until_ns, memory_order_relaxed);
  if (quiet) {
    rc = atomic_load_explicit(&e->quiet_rc, memory_order_relaxed); /* refused at once */
  } else if (e->text) { /* room for the texts only when there are texts */
    if ((*texts = malloc(cnt * SERVE_SEQ_TEXT_MAX)) == NULL) {
      snprintf(why, n, "out of memory");
      return 500;
    }
    for (size_t i = 0; rc >= 0 && i < cnt; i++)
      rc = idgen_seq_next_text(e->q, *texts + i * SERVE_SEQ_TEXT_MAX, SERVE_SEQ_TEXT_MAX, &nums[i]);
  } else {
    rc = idgen_seq_next_n(e->q, nums, cnt);
  }
  if (rc < 0) {
    idgen_seq_stats_t st;
    idgen_seq_stats(e->q, &st);
    /* A failure, or a claim that has run longer than a burst's wait (a
     * registry hung rather than failing): the quiet time begins (not again
     * from a refusal within it). */
    if (!quiet && (rc != IDGEN_EAGAIN || st.claim_running_ms > HUNG_MS)) {
      atomic_store_explicit(&e->quiet_rc, rc, memory_order_relaxed);
      atomic_store_explicit(&e->quiet_until_ns, mono_ns() + QUIET_NS, memory_order_relaxed);
    }
    if (rc == IDGEN_EAGAIN && st.claim_running_ms > HUNG_MS)
      snprintf(why, n, "sequence %s: the registry has not answered a claim for %" PRId64 " ms", nm,
               st.claim_running_ms);
    else if (rc == IDGEN_EAGAIN)
      snprintf(why, n,
               "sequence %s: the numbers in hand ran out before the claim ahead landed: "
               "retry",
               nm);
    else
      snprintf(why, n, "sequence %s: %s%s%s", nm, idgen_strerror(rc), st.reason[0] ? ": " : "",
               st.reason);
    count(e, 0, 1);
    free(*texts);
    *texts = NULL;
    return rc == IDGEN_ERANGE && e->text ? 500 : 503;
  }
  count(e, 1, 0);
  return 0;
}

/* Prometheus text: a family's HELP and TYPE, then a sample per sequence. */
static void family(serve_buf_t *b, const char *name, const char *type, const char *help) {
  serve_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* What a metrics family's sample is. */
typedef enum {
  S_U64,      /* a uint64_t member of the stats */
  S_SECONDS,  /* an int64_t member of the stats, ns, shown in seconds */
  S_RATE,     /* the stats' rate */
  S_LASTS,    /* the stats' lasts_ms, shown in seconds (-1: no rate) */
  S_FAILING,  /* the stats' failing, 0 or 1 */
  S_REQUESTS, /* the entry's counters */
  S_FAILURES,
  S_LOST
} sample_t;

/* One sample's value and its newline. */
static void sample(serve_buf_t *b, sample_t kind, size_t off, seq_entry_t *e,
                   const idgen_seq_stats_t *x) {
  const char *p = (const char *)x + off;
  uint64_t u = 0;
  int64_t ns;
  switch (kind) {
  case S_U64:
    memcpy(&u, p, sizeof u);
    break;
  case S_SECONDS:
    memcpy(&ns, p, sizeof ns);
    serve_buf_printf(b, "%.9f\n", (double)ns / 1e9);
    return;
  case S_RATE:
    serve_buf_printf(b, "%.3f\n", x->rate);
    return;
  case S_LASTS:
    serve_buf_printf(b, "%.3f\n", x->lasts_ms < 0 ? -1.0 : (double)x->lasts_ms / 1000.0);
    return;
  case S_FAILING:
    u = x->failing ? 1 : 0;
    break;
  case S_REQUESTS:
    u = atomic_load_explicit(&e->requests, memory_order_relaxed);
    break;
  case S_FAILURES:
    u = atomic_load_explicit(&e->failures, memory_order_relaxed);
    break;
  case S_LOST:
    u = atomic_load_explicit(&e->lost, memory_order_relaxed);
    break;
  }
  serve_buf_printf(b, "%" PRIu64 "\n", u);
}

void serve_seq_metrics(serve_daemon_t *s, serve_buf_t *b) {
  struct serve_seqs *t = s->seqs;
  int n = t ? atomic_load_explicit(&t->n, memory_order_acquire) : 0;
  if (n == 0)
    return;
  idgen_seq_stats_t *st = calloc((size_t)n, sizeof *st);
  if (st == NULL)
    return;
  for (int i = 0; i < n; i++)
    idgen_seq_stats(t->e[i]->q, &st[i]);
  static const struct {
    const char *name, *type, *help;
    sample_t kind;
    size_t off; /* of the stats' member, for S_U64 and S_SECONDS */
  } fams[] = {
      {"idgen_seq_requests_total", "counter", "Requests answered with numbers, per sequence.",
       S_REQUESTS, 0},
      {"idgen_seq_request_failures_total", "counter",
       "Requests refused: no number could be taken (the registry unreachable, fenced out).",
       S_FAILURES, 0},
      {"idgen_seq_numbers_issued_total", "counter", "Numbers this daemon issued, per sequence.",
       S_U64, offsetof(idgen_seq_stats_t, issued)},
      {"idgen_seq_claims_total", "counter", "Ranges claimed from the registry.", S_U64,
       offsetof(idgen_seq_stats_t, claims)},
      {"idgen_seq_claim_failures_total", "counter", "Claims that failed.", S_U64,
       offsetof(idgen_seq_stats_t, claim_failures)},
      {"idgen_seq_numbers_claimed_total", "counter", "Numbers claimed from the registry.", S_U64,
       offsetof(idgen_seq_stats_t, claimed)},
      {"idgen_seq_numbers_given_back_total", "counter",
       "Numbers given back to the registry unissued.", S_U64,
       offsetof(idgen_seq_stats_t, given_back)},
      {"idgen_seq_claim_seconds_last", "gauge", "How long the last claim took.", S_SECONDS,
       offsetof(idgen_seq_stats_t, claim_ns_last)},
      {"idgen_seq_claim_seconds_max", "gauge", "How long the slowest claim took.", S_SECONDS,
       offsetof(idgen_seq_stats_t, claim_ns_max)},
      {"idgen_seq_in_hand", "gauge", "Numbers claimed here and not yet issued.", S_U64,
       offsetof(idgen_seq_stats_t, in_hand)},
      {"idgen_seq_step", "gauge", "The next claim's size.", S_U64,
       offsetof(idgen_seq_stats_t, step)},
      {"idgen_seq_rate", "gauge", "Numbers issued per second, recently.", S_RATE, 0},
      {"idgen_seq_in_hand_lasts_seconds", "gauge",
       "How long the numbers in hand last at that rate (-1: no rate yet).", S_LASTS, 0},
      {"idgen_seq_failing", "gauge", "1 while the last claim or renewal failed.", S_FAILING, 0},
      {"idgen_seq_numbers_lost", "gauge",
       "Numbers the registry counts lost (ranges of holders that died or were reaped), every "
       "period's counter of the sequence, as last listed (every 30 s).",
       S_LOST, 0},
  };
  for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
    family(b, fams[f].name, fams[f].type, fams[f].help);
    for (int i = 0; i < n; i++) {
      serve_buf_printf(b, "%s{seq=\"%s\",key=\"%s\"} ", fams[f].name, t->e[i]->name, st[i].key);
      sample(b, fams[f].kind, fams[f].off, t->e[i], &st[i]);
    }
  }
  free(st);
}

int serve_seq_health(serve_daemon_t *s, serve_buf_t *b) {
  struct serve_seqs *t = s->seqs;
  int n = t ? atomic_load_explicit(&t->n, memory_order_acquire) : 0, failing = 0;
  for (int i = 0; i < n; i++) {
    idgen_seq_stats_t x;
    idgen_seq_stats(t->e[i]->q, &x);
    char lasts[32] = "unknown";
    if (x.lasts_ms >= 0)
      snprintf(lasts, sizeof lasts, "%" PRId64, x.lasts_ms);
    serve_buf_printf(b, "seq %s key=%s claims=%s in_hand=%" PRIu64 " lasts_ms=%s%s%s\n",
                     t->e[i]->name, x.key, x.failing ? "failing" : "ok", x.in_hand, lasts,
                     x.failing && x.reason[0] ? " reason=" : "", x.failing ? x.reason : "");
    failing += x.failing != 0;
  }
  return failing;
}

struct json_t *serve_seq_info(serve_daemon_t *s) {
  struct serve_seqs *t = s->seqs;
  int n = t ? atomic_load_explicit(&t->n, memory_order_acquire) : 0;
  json_t *a = json_array();
  for (int i = 0; a != NULL && i < n; i++) {
    idgen_seq_stats_t x;
    idgen_seq_stats(t->e[i]->q, &x);
    json_array_append_new(
        a, json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:b, s:o}", "name", t->e[i]->name, "key",
                     x.key, "business", t->e[i]->text, "issued", (json_int_t)x.issued, "in_hand",
                     (json_int_t)x.in_hand, "step", (json_int_t)x.step, "failing", x.failing,
                     "lasts_ms", x.lasts_ms >= 0 ? json_integer(x.lasts_ms) : json_null()));
  }
  return a;
}
