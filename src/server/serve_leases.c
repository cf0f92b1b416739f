/*
 * serve_leases.c -- the lease service for clients, `idgen serve --leases`
 * (docs/SERVE.md, "Leases for clients: `--leases` and `idgen://`").
 *
 * DESIGN.  Registry calls block (a file system, a database, etcd), so none
 * runs on an event loop: the HTTP side (serve_http.c) parses a request's
 * body (lease_body.c), hands it here as a job and parks its connection (no
 * further request of it is parsed until the answer is in: replies stay in
 * order).  ONE service thread takes the jobs in turn, makes every registry
 * call, writes the answer into the job and gives it back to its loop,
 * which it wakes through the loop's eventfd; the loop then answers and
 * resumes the connection (serve_leases_run_done).  A connection closed
 * meanwhile has let go of its job (serve_leases_forget): the answer is
 * dropped, never written to a freed connection.
 *
 * The table of client leases is the service thread's alone; the mutex
 * guards the queue of jobs and the loops' lists of answers.  The figures
 * /info, /status.json and /metrics show are atomics.  Between requests the
 * same thread expires clients that stopped renewing (LIVE -> HOLD: the
 * tuple stays held in the registry for the quarantine, renewed there every
 * TTL/3 where the registry's leases expire) and then releases them.
 *
 * Sequences: /lease/seq/load, /store and /keys move a sequence's record
 * (opaque text) between an idgen:// client and this daemon's registry, on
 * the same thread (the registry call may block), in the space the client
 * names (the daemon's registry opened for it, as for its leases).
 *
 * Identity: a client lease is (space, canonical layout, leased field, key,
 * generation); its holder name and secret (compared in constant time) say
 * that the caller is its client.  The daemon keeps nothing on disk: a
 * daemon restarted on the same registry takes a grant over with
 * idgen_registry_adopt at the client's next request.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "seq_io.h"
#include "server_int.h"
#include "settings.h"

#define SPACES_MAX 16
#define MARK_AHEAD_MAX_MS 86400000 /* a mark at most a day (and 2 TTLs) ahead */

enum { CL_LIVE, CL_HOLD };

typedef struct client {
  struct client *next;
  int state; /* CL_LIVE, CL_HOLD */
  char space[IDGEN_SPACE_NAME_MAX];
  char layout_spec[IDGEN_LAYOUT_SPEC_MAX];
  int field;
  uint64_t key, generation;
  char holder[LEASE_HOLDER_MAX + 1];
  char secret[LEASE_SECRET_HEX + 1];
  uint8_t peer_key[16];
  int agent;
  idgen_lease_t *lease; /* in the daemon's registry */
  int reg_expires;      /* the registry's lease expires unless renewed */
  int64_t ttl_ms, quarantine_ms;
  int64_t ahead_ms;      /* how far ahead of the daemon's clock its marks may go */
  int64_t expires_ms;    /* LIVE: the client's expiry (monotonic, ms) */
  int64_t hold_until_ms; /* HOLD: released then */
  int64_t renewed_ms;    /* the registry lease's last renewal */
} client_t;

typedef struct space_reg {
  char name[IDGEN_SPACE_NAME_MAX];
  idgen_registry_t *reg;
} space_reg_t;

struct serve_leases {
  serve_daemon_t *s;
  pthread_t thread;
  int thread_on;
  pthread_mutex_t mu;
  pthread_cond_t cv; /* CLOCK_MONOTONIC */
  int stopping;
  serve_lease_job_t *queue, *queue_last;
  serve_lease_job_t **done; /* [nworkers]: answers for each loop */
  atomic_int *pending;      /* [nworkers]: answers waiting in done[] */
  /* The service thread's own. */
  client_t *table;
  space_reg_t spaces[SPACES_MAX];
  int nspaces;
  char own_space[IDGEN_SPACE_NAME_MAX];
  char base_uri[2048];
  char holder_suffix[IDGEN_HOLDER_MAX + 8]; /* "_via_HOST:PID:TOKEN" */
  /* For /info, /status.json and /metrics. */
  _Atomic uint64_t live, held, acquisitions, refusals, renewals, marks, releases, expiries,
      adoptions;
};

static int64_t wall_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- answers ------------------------------------------------------------ */

static void answer_json(serve_lease_job_t *j, int status, json_t *o) {
  j->status = status;
  free(j->json);
  j->json = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  if (j->json == NULL) {
    j->status = 500;
    j->json = strdup("{\"error\":\"registry\",\"message\":\"out of memory\"}");
  }
  j->json_len = j->json ? strlen(j->json) : 0;
}

static void answer_error(serve_lease_job_t *j, int status, const char *word, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void answer_error(serve_lease_job_t *j, int status, const char *word, const char *fmt, ...) {
  char msg[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  answer_json(j, status, json_pack("{s:s,s:s}", "error", word, "message", msg));
}

/* A registry error as the protocol's status and word. */
static void answer_registry_error(serve_lease_job_t *j, int rc, const char *msg) {
  switch (rc) {
  case IDGEN_EINVAL:
  case IDGEN_ELAYOUT:
  case IDGEN_ERANGE:
    answer_error(j, 400, "invalid", "%s", msg);
    break;
  case IDGEN_ELEASE:
    answer_error(j, 409, "lease", "%s", msg);
    break;
  case IDGEN_ESPACE:
    answer_error(j, 409, "space", "%s", msg);
    break;
  case IDGEN_EPOOLFULL:
    answer_error(j, 503, "pool_full", "%s", msg);
    break;
  case IDGEN_ECLOCK:
    answer_error(j, 503, "clock", "%s", msg);
    break;
  default:
    answer_error(j, 503, "registry", "%s", msg);
  }
}

/* ---- the table ---------------------------------------------------------- */

/* Equal strings in time that depends on their length only. */
static int secret_eq(const char *a, const char *b) {
  unsigned char d = 0;
  for (size_t i = 0; i < LEASE_SECRET_HEX; i++)
    d |= (unsigned char)(a[i] ^ b[i]);
  return d == 0;
}

static const char *space_of(const struct serve_leases *L, const lease_body_t *b) {
  return b->space[0] ? b->space : L->own_space;
}

/* The tuple's key: every node field's bits in place in the ID. */
static uint64_t tuple_key(const lease_body_t *b) {
  uint64_t key = 0;
  const idgen_layout_t *l = &b->layout;
  for (int i = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE)
      key |= b->node[i] << l->fields[i].shift;
  return key;
}

static client_t *find(struct serve_leases *L, const lease_body_t *b) {
  uint64_t key = tuple_key(b);
  for (client_t *c = L->table; c; c = c->next)
    if (c->key == key && c->generation == b->generation && c->field == b->field &&
        strcmp(c->space, space_of(L, b)) == 0 && strcmp(c->layout_spec, b->layout_spec) == 0)
      return c;
  return NULL;
}

/* Refusals are logged at most 10 a second (a client may send many). */
static log_limit_t refusal_log = LOG_LIMIT_INIT(10);

static void log_client(const char *level, const char *action, const client_t *c, const char *more) {
  char h[120], n[IDGEN_NODE_TEXT_MAX], line[IDGEN_NODE_TEXT_MAX + 400];
  idgen_lease_info_t li;
  idgen_lease_info(c->lease, &li);
  snprintf(line, sizeof line, "action=%s holder=%s space=%s node=%s generation=%" PRIu64 "%s%s",
           action, log_quote(c->holder, strlen(c->holder), h, sizeof h), c->space,
           log_quote(li.node, strlen(li.node), n, sizeof n), c->generation, more[0] ? " " : "",
           more);
  if (strcmp(action, "renew_refused") == 0)
    log_limited(&refusal_log, level, "client_lease", "%s", line);
  else
    log_event(level, "client_lease", "%s", line);
}

static void set_live(struct serve_leases *L, client_t *c, int live) {
  if (live && c->state != CL_LIVE) {
    atomic_fetch_add(&L->live, 1);
    atomic_fetch_sub(&L->held, 1);
  } else if (!live && c->state == CL_LIVE) {
    atomic_fetch_sub(&L->live, 1);
    atomic_fetch_add(&L->held, 1);
  }
  c->state = live ? CL_LIVE : CL_HOLD;
}

/* Releases the registry lease and drops the entry. */
static void drop(struct serve_leases *L, client_t *c) {
  for (client_t **p = &L->table; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  atomic_fetch_sub(c->state == CL_LIVE ? &L->live : &L->held, 1);
  idgen_lease_release(c->lease);
  free(c);
}

/* A client past its expiry: HOLD for its quarantine. */
static void expire(struct serve_leases *L, client_t *c, int64_t now) {
  set_live(L, c, 0);
  c->hold_until_ms = now + c->quarantine_ms;
  atomic_fetch_add(&L->expiries, 1);
  char more[64];
  snprintf(more, sizeof more, "quarantine_ms=%" PRId64, c->quarantine_ms);
  log_client("info", "expire", c, more);
}

/* Expiries, releases after the quarantine, and the registry's renewals;
 * returns when next to look (monotonic ms). */
static int64_t tick(struct serve_leases *L) {
  int64_t now = serve_mono_ms(), next = now + 1000;
  for (client_t *c = L->table, *nx; c; c = nx) {
    nx = c->next;
    if (c->state == CL_LIVE && now >= c->expires_ms)
      expire(L, c, now);
    if (c->state == CL_HOLD && now >= c->hold_until_ms) {
      log_client("info", "release", c, "reason=quarantine_over");
      drop(L, c);
      continue;
    }
    if (c->reg_expires && now - c->renewed_ms >= c->ttl_ms / 3) {
      char err[600];
      int rc = idgen_lease_renew(c->lease, err, sizeof err);
      if (rc == 0) {
        c->renewed_ms = now;
      } else if (rc == IDGEN_ELEASE) { /* fenced: nothing left to hold */
        log_client("warn", "renew_refused", c, "reason=fenced");
        drop(L, c);
        continue;
      } else { /* not reached: again in 200 ms, not at once (no loop on a registry down) */
        c->renewed_ms = now + 200 - c->ttl_ms / 3;
      }
    }
    int64_t due = c->state == CL_LIVE ? c->expires_ms : c->hold_until_ms;
    if (c->reg_expires && c->renewed_ms + c->ttl_ms / 3 < due)
      due = c->renewed_ms + c->ttl_ms / 3;
    if (due < next)
      next = due;
  }
  return next;
}

/* ---- registries by space ------------------------------------------------ */

/* The registry of `space`: the daemon's own, or one opened for it (at most
 * SPACES_MAX).  NULL after an answer to j. */
static idgen_registry_t *space_registry(struct serve_leases *L, const char *space,
                                        serve_lease_job_t *j) {
  if (strcmp(space, L->own_space) == 0)
    return L->s->lx.reg;
  for (int i = 0; i < L->nspaces; i++)
    if (strcmp(L->spaces[i].name, space) == 0)
      return L->spaces[i].reg;
  if (L->nspaces == SPACES_MAX) {
    answer_error(j, 429, "limit", "the daemon lends in %d ID spaces already, its most", SPACES_MAX);
    return NULL;
  }
  char uri[sizeof L->base_uri + IDGEN_SPACE_NAME_MAX + 8], err[1200];
  if (idgen_registry_uri_with_space(L->base_uri, space, uri, sizeof uri, err, sizeof err) < 0) {
    answer_error(j, 400, "invalid", "space \"%s\": %s", space, err);
    return NULL;
  }
  idgen_registry_t *r;
  int rc = idgen_registry_open(&r, uri, err, sizeof err);
  if (rc < 0) {
    answer_registry_error(j, rc == IDGEN_EINVAL ? IDGEN_EREGISTRY : rc, err);
    return NULL;
  }
  snprintf(L->spaces[L->nspaces].name, IDGEN_SPACE_NAME_MAX, "%s", space);
  L->spaces[L->nspaces++].reg = r;
  return r;
}

static void request_of(const lease_body_t *b, idgen_lease_request_t *req) {
  memset(req, 0, sizeof *req);
  req->layout = &b->layout;
  req->node = b->node;
  req->field = b->layout.fields[b->field].name;
}

/* ---- the routes --------------------------------------------------------- */

static int64_t quarantine_of(const struct serve_leases *L, int64_t ttl_ms) {
  const serve_config_t *cfg = L->s->cfg;
  return cfg->lease_quarantine_ms > 0 ? cfg->lease_quarantine_ms : ttl_ms + cfg->lease_max_skew_ms;
}

/* 429 when one of the limits is reached. */
static int over_limit(struct serve_leases *L, serve_lease_job_t *j, const char *space) {
  const serve_config_t *cfg = L->s->cfg;
  int64_t peer = 0, agent = 0, in_space = 0;
  for (client_t *c = L->table; c; c = c->next) {
    if (c->state != CL_LIVE)
      continue;
    peer += memcmp(c->peer_key, j->peer_key, 16) == 0;
    agent += j->agent != AGENT_NONE && c->agent == j->agent;
    in_space += strcmp(c->space, space) == 0;
  }
  const char *which = peer >= cfg->lease_max_per_client      ? "lease_max_per_client"
                      : agent >= cfg->lease_max_per_agent    ? "lease_max_per_agent"
                      : in_space >= cfg->lease_max_per_space ? "lease_max_per_space"
                                                             : NULL;
  if (which == NULL)
    return 0;
  int64_t n = which[10] == 'c'   ? cfg->lease_max_per_client
              : which[10] == 'a' ? cfg->lease_max_per_agent
                                 : cfg->lease_max_per_space;
  answer_error(j, 429, "limit", "%s (%" PRId64 ") reached: release a lease first", which, n);
  return 1;
}

/* Seconds until the first tuple held in quarantine in `space` frees. */
static int64_t retry_after_s(struct serve_leases *L, const char *space, int64_t ttl_ms) {
  int64_t now = serve_mono_ms(), best = ttl_ms;
  for (client_t *c = L->table; c; c = c->next)
    if (c->state == CL_HOLD && strcmp(c->space, space) == 0 && c->hold_until_ms - now < best)
      best = c->hold_until_ms - now;
  return best <= 0 ? 1 : (best + 999) / 1000;
}

/* A client's lease, held now in the registry (`lease`), into the table:
 * acquired or adopted (`action`, logged and counted).  NULL, the lease
 * released and the answer given, when out of memory. */
static client_t *client_add(struct serve_leases *L, serve_lease_job_t *j, const lease_body_t *b,
                            const char *space, idgen_lease_t *lease, int64_t ttl_ms,
                            const char *action) {
  client_t *c = calloc(1, sizeof *c);
  if (c == NULL) {
    idgen_lease_release(lease);
    answer_error(j, 503, "registry", "out of memory");
    return NULL;
  }
  idgen_lease_info_t li;
  idgen_lease_info(lease, &li);
  int64_t now = serve_mono_ms();
  *c = (client_t){.state = CL_LIVE,
                  .field = b->field,
                  .key = li.key,
                  .generation = li.generation,
                  .agent = j->agent,
                  .lease = lease,
                  .reg_expires = li.expires_ms != 0,
                  .ttl_ms = ttl_ms,
                  .quarantine_ms = quarantine_of(L, ttl_ms),
                  .expires_ms = now + ttl_ms,
                  .renewed_ms = now};
  /* Its marks: its own clock may run ahead by its borrow (the acquisition's
   * start_borrow_ms, which clients give as their max_borrow_ms), its wall
   * clock by lease_max_skew_ms, and a mark is a step (half a TTL) beyond;
   * a grant taken over after a restart (no borrow said): a day. */
  c->ahead_ms = ((b->have & LB_BORROW) && strcmp(action, "adopt") != 0 ? b->start_borrow_ms
                                                                       : MARK_AHEAD_MAX_MS) +
                L->s->cfg->lease_max_skew_ms + 2 * ttl_ms;
  snprintf(c->space, sizeof c->space, "%s", space);
  snprintf(c->layout_spec, sizeof c->layout_spec, "%s", b->layout_spec);
  memcpy(c->holder, b->holder, sizeof c->holder);
  memcpy(c->secret, b->secret, sizeof c->secret);
  memcpy(c->peer_key, j->peer_key, 16);
  c->next = L->table;
  L->table = c;
  atomic_fetch_add(&L->live, 1);
  atomic_fetch_add(strcmp(action, "adopt") == 0 ? &L->adoptions : &L->acquisitions, 1);
  log_client("info", action, c, "");
  return c;
}

static void route_acquire(struct serve_leases *L, serve_lease_job_t *j) {
  const lease_body_t *b = &j->body;
  const serve_config_t *cfg = L->s->cfg;
  int64_t now_wall = wall_ms();
  if ((b->have & LB_CLOCK) && llabs(b->clock_ms - now_wall) > cfg->lease_max_skew_ms) {
    answer_error(j, 503, "clock",
                 "the client's clock (%" PRId64 ") is %" PRId64 " ms from the daemon's (%" PRId64
                 "), over lease_max_skew_ms (%" PRId64 ")",
                 b->clock_ms, b->clock_ms - now_wall, now_wall, cfg->lease_max_skew_ms);
    return;
  }
  const char *space = space_of(L, b);
  if (over_limit(L, j, space))
    return;
  idgen_registry_t *r = space_registry(L, space, j);
  if (r == NULL)
    return;
  idgen_lease_request_t req;
  request_of(b, &req);
  req.ttl_ms = b->ttl_ms ? b->ttl_ms : IDGEN_LEASE_TTL_DEFAULT_MS;
  /* One thread serves every client, so it never waits for a mark here:
   * the tuple is granted at once, within the client's start wait and
   * borrow, and the client waits out the rest itself, renewing meanwhile
   * (registry_idgen.c, browser.mjs: it starts above mark_ms and floor_ms).
   * Asking again instead would never end while other clients' mark steps
   * keep a file: pool's mark further ahead than the daemon would wait. */
  int64_t wait = (b->have & LB_START_WAIT) ? b->max_start_wait_ms : IDGEN_START_WAIT_MS_DEFAULT;
  req.max_start_wait_ms = 0;
  req.start_borrow_ms = b->start_borrow_ms + wait;
  char holder[IDGEN_HOLDER_MAX + 64], err[1200];
  snprintf(holder, sizeof holder, "%s%s", b->holder, L->holder_suffix);
  idgen_lease_t *lease;
  int rc = idgen_registry_acquire_for(r, &req, holder, &lease, err, sizeof err);
  if (rc < 0) {
    answer_registry_error(j, rc, err);
    if (rc == IDGEN_EPOOLFULL)
      snprintf(j->extra + strlen(j->extra), sizeof j->extra - strlen(j->extra),
               "Retry-After: %" PRId64 "\r\n", retry_after_s(L, space, req.ttl_ms));
    return;
  }
  client_t *c = client_add(L, j, b, space, lease, req.ttl_ms, "acquire");
  if (c == NULL)
    return;
  idgen_lease_info_t li;
  idgen_lease_info(lease, &li);
  char key[24];
  snprintf(key, sizeof key, "0x%016" PRIx64, li.key);
  answer_json(j, 200,
              json_pack("{s:s,s:s,s:s,s:s,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:I}", "space",
                        li.space[0] ? li.space : space, "layout", b->layout_spec, "field",
                        b->layout.fields[b->field].name, "node", li.node, "worker",
                        (json_int_t)li.worker, "key", key, "generation", (json_int_t)li.generation,
                        "mark_ms", (json_int_t)li.mark_ms, "floor_ms", (json_int_t)li.floor_ms,
                        "ttl_ms", (json_int_t)c->ttl_ms, "quarantine_ms",
                        (json_int_t)c->quarantine_ms, "mark_step_ms", (json_int_t)(c->ttl_ms / 2),
                        "holder", li.holder, "clock_ms", (json_int_t)wall_ms()));
}

/* A grant the registry shows: the tuple `key` at `generation` in `space`,
 * last held by this client through a lease service ("CLIENT_via_..."),
 * whose holder name adoption needs. */
typedef struct grant_find {
  uint64_t key, generation;
  const char *space, *client;
  char holder[IDGEN_HOLDER_MAX];
} grant_find_t;

static int grant_row(void *ctx, const idgen_lease_row_t *row) {
  grant_find_t *f = ctx;
  size_t n = strlen(f->client);
  if (row->key != f->key || row->generation != f->generation || strcmp(row->space, f->space) != 0 ||
      strncmp(row->holder, f->client, n) != 0 || strncmp(row->holder + n, "_via_", 5) != 0)
    return 0;
  snprintf(f->holder, sizeof f->holder, "%s", row->holder);
  return 1;
}

/* The entry of an identity route's lease, taken over after a restart if
 * the table lacks it; NULL after an answer. */
static client_t *identify(struct serve_leases *L, serve_lease_job_t *j) {
  const lease_body_t *b = &j->body;
  client_t *c = find(L, b);
  if (c != NULL) {
    if (strcmp(c->holder, b->holder) != 0 || !secret_eq(c->secret, b->secret)) {
      log_client("warn", "renew_refused", c, "reason=not_this_holder");
      answer_error(j, 409, "lease", "the lease is not this holder's (a wrong holder or secret)");
      return NULL;
    }
    if (c->state == CL_LIVE && serve_mono_ms() >= c->expires_ms)
      expire(L, c, serve_mono_ms());
    if (c->state != CL_LIVE) {
      log_client("warn", "renew_refused", c, "reason=expired");
      answer_error(j, 409, "lease", "the lease expired: it was not renewed within its TTL");
      return NULL;
    }
    return c;
  }
  /* Not in the table: a grant of a daemon that ran before on this registry?
   * Not if this daemon holds the tuple, for whichever client (the identity
   * named it in another layout's words or by another field). */
  const char *space = space_of(L, b);
  for (client_t *o = L->table; o; o = o->next)
    if (o->key == tuple_key(b) && strcmp(o->space, space) == 0) {
      log_client("warn", "renew_refused", o, "reason=another_identity");
      answer_error(j, 409, "lease", "the lease is not this holder's (a wrong holder or secret)");
      return NULL;
    }
  idgen_registry_t *r = space_registry(L, space, j);
  if (r == NULL)
    return NULL;
  idgen_lease_request_t req;
  request_of(b, &req);
  /* The client's TTL, which its renewal carries (else the daemon's). */
  req.ttl_ms = b->ttl_ms                   ? b->ttl_ms
               : L->s->cfg->s.lease_ttl_ms ? L->s->cfg->s.lease_ttl_ms
                                           : IDGEN_LEASE_TTL_DEFAULT_MS;
  char holder[IDGEN_HOLDER_MAX + 64], err[1200];
  snprintf(holder, sizeof holder, "%s%s", b->holder, L->holder_suffix);
  /* The grant as the registry shows it: this client's, at this
   * generation (its holder name, the service's before, is adopt's). */
  grant_find_t f = {
      .key = tuple_key(b), .generation = b->generation, .space = space, .client = b->holder};
  int rc = idgen_registry_list(r, grant_row, &f, err, sizeof err);
  if (rc < 0) {
    answer_registry_error(j, IDGEN_EREGISTRY, err);
    return NULL;
  }
  size_t hn = strlen(f.holder), sn = strlen(L->holder_suffix);
  if (rc == 0 || (hn >= sn && strcmp(f.holder + hn - sn, L->holder_suffix) == 0)) {
    answer_error(j, 409, "lease",
                 "an unknown grant: the registry shows no grant of %s at generation %" PRIu64
                 " to %s through a lease service",
                 b->layout_spec, b->generation, b->holder);
    return NULL;
  }
  idgen_lease_t *lease;
  rc = idgen_registry_adopt(r, &req, f.key, b->generation, f.holder, holder, &lease, err,
                            sizeof err);
  if (rc < 0) {
    if (rc == IDGEN_EREGISTRY)
      answer_registry_error(j, rc, err);
    else
      answer_error(j, 409, "lease", "an unknown grant, which the registry does not give over: %s",
                   err);
    return NULL;
  }
  c = client_add(L, j, b, space, lease, req.ttl_ms, "adopt");
  return c;
}

/* A registry call on c failed: fenced (409, dropped) or not reached (503). */
static void lease_call_failed(struct serve_leases *L, serve_lease_job_t *j, client_t *c, int rc,
                              const char *err) {
  if (rc == IDGEN_ELEASE) {
    log_client("warn", "renew_refused", c, "reason=fenced");
    drop(L, c);
  }
  answer_registry_error(j, rc == IDGEN_ELEASE ? rc : IDGEN_EREGISTRY, err);
}

static void route_renew(struct serve_leases *L, serve_lease_job_t *j) {
  client_t *c = identify(L, j);
  if (c == NULL)
    return;
  char err[600];
  int rc = idgen_lease_renew(c->lease, err, sizeof err);
  if (rc < 0) {
    lease_call_failed(L, j, c, rc, err);
    return;
  }
  int64_t now = serve_mono_ms();
  c->renewed_ms = now;
  c->expires_ms = now + c->ttl_ms;
  atomic_fetch_add(&L->renewals, 1);
  idgen_lease_info_t li;
  idgen_lease_info(c->lease, &li);
  answer_json(j, 200,
              json_pack("{s:I,s:I,s:I}", "ttl_ms", (json_int_t)c->ttl_ms, "expires_in_ms",
                        (json_int_t)c->ttl_ms, "mark_ms", (json_int_t)li.mark_ms));
}

/* A mark the daemon takes: no further past its clock than the lease may
 * run ahead (client_add: its borrow, lease_max_skew_ms, two TTLs). */
static int mark_ok(serve_lease_job_t *j, const client_t *c, int64_t mark_ms) {
  int64_t limit = wall_ms() + c->ahead_ms;
  if (mark_ms <= limit)
    return 1;
  answer_error(j, 400, "invalid",
               "member \"mark_ms\": %" PRId64 " is further ahead of the daemon's clock than "
               "the lease's borrow, lease_max_skew_ms and two TTLs allow (%" PRId64 ")",
               mark_ms, limit);
  return 0;
}

static void route_mark(struct serve_leases *L, serve_lease_job_t *j) {
  client_t *c = identify(L, j);
  if (c == NULL || !mark_ok(j, c, j->body.mark_ms))
    return;
  char err[600];
  int rc = idgen_lease_record_mark(c->lease, j->body.mark_ms, err, sizeof err);
  if (rc < 0) {
    lease_call_failed(L, j, c, rc, err);
    return;
  }
  atomic_fetch_add(&L->marks, 1);
  idgen_lease_info_t li;
  idgen_lease_info(c->lease, &li);
  answer_json(j, 200, json_pack("{s:I}", "mark_ms", (json_int_t)li.mark_ms));
}

static void route_release(struct serve_leases *L, serve_lease_job_t *j) {
  client_t *c = identify(L, j);
  if (c == NULL)
    return;
  if (j->body.have & LB_MARK) {
    if (!mark_ok(j, c, j->body.mark_ms))
      return;
    char err[600];
    int rc = idgen_lease_record_mark(c->lease, j->body.mark_ms, err, sizeof err);
    if (rc < 0) {
      lease_call_failed(L, j, c, rc, err);
      return;
    }
  }
  atomic_fetch_add(&L->releases, 1);
  log_client("info", "release", c, "reason=client");
  drop(L, c);
  answer_json(j, 200, json_object());
}

/* ---- sequence records (idgen:// clients' seq_load, seq_store, seq_keys) -- */

/* The registry of j's space for the sequence routes; NULL after an answer.
 * (A registry that keeps no sequences, static, is refused by the calls:
 * IDGEN_EINVAL, 400 invalid.) */
static idgen_registry_t *seq_registry(struct serve_leases *L, serve_lease_job_t *j) {
  return space_registry(L, space_of(L, &j->body), j);
}

static void route_seq_load(struct serve_leases *L, serve_lease_job_t *j) {
  idgen_registry_t *r = seq_registry(L, j);
  if (r == NULL)
    return;
  char *text = NULL, err[1200];
  uint64_t version = 0;
  int rc = idgen__seq_io_load(r, j->body.key, &text, &version, err, sizeof err);
  if (rc < 0) {
    answer_registry_error(j, rc == IDGEN_EINVAL ? rc : IDGEN_EREGISTRY, err);
    return;
  }
  answer_json(j, 200,
              json_pack("{s:o,s:I}", "text", text ? json_string(text) : json_null(), "version",
                        (json_int_t)version));
  free(text);
}

/* The answer to a store that succeeded: {"ok":true,"version":V}, V read
 * back (a backend's versions need not count by one: etcd's are revisions);
 * without "version" when the record read back is not this text (another
 * store came between) or cannot be read. */
static json_t *stored_version(idgen_registry_t *r, const lease_body_t *b) {
  char *text = NULL, err[600];
  uint64_t v = 0;
  json_t *o = json_pack("{s:b}", "ok", 1);
  if (idgen__seq_io_load(r, b->key, &text, &v, err, sizeof err) == 0 && text != NULL &&
      strcmp(text, b->text) == 0 && v > b->version)
    json_object_set_new(o, "version", json_integer((json_int_t)v));
  free(text);
  return o;
}

static void route_seq_store(struct serve_leases *L, serve_lease_job_t *j) {
  idgen_registry_t *r = seq_registry(L, j);
  if (r == NULL)
    return;
  char err[1200];
  const lease_body_t *b = &j->body;
  int rc = idgen__seq_io_store(r, b->key, b->text, b->version, err, sizeof err);
  if (rc == IDGEN_EAGAIN)
    answer_error(j, 409, "again", "sequence %s: the record's version is no longer %" PRIu64, b->key,
                 b->version);
  else if (rc < 0)
    answer_registry_error(j, rc == IDGEN_EINVAL ? rc : IDGEN_EREGISTRY, err);
  else
    answer_json(j, 200, stored_version(r, b));
}

/* The keys as "SPACE KEY" lines, sorted, after `after`. */
typedef struct seq_keys {
  char **v;
  size_t n, cap;
  int failed;
} seq_keys_t;

static int seq_key_cb(void *ctx, const char *space, const char *key) {
  seq_keys_t *k = ctx;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    char **v = realloc(k->v, cap * sizeof *v);
    if (v == NULL)
      return k->failed = 1;
    k->v = v;
    k->cap = cap;
  }
  size_t n = strlen(space) + strlen(key) + 2;
  if ((k->v[k->n] = malloc(n)) == NULL)
    return k->failed = 1;
  snprintf(k->v[k->n++], n, "%s %s", space, key);
  return 0;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The most bytes of keys in one answer: the rest comes with "after". */
#define SEQ_KEYS_PAGE 32768

static void route_seq_keys(struct serve_leases *L, serve_lease_job_t *j) {
  const lease_body_t *b = &j->body;
  idgen_registry_t *r = NULL;
  char err[1200];
  int rc = 0;
  if (b->every) { /* the daemon's registry without a space named: every space */
    rc = idgen_registry_open(&r, L->base_uri, err, sizeof err);
    if (rc < 0) {
      answer_registry_error(j, IDGEN_EREGISTRY, err);
      return;
    }
  } else if ((r = seq_registry(L, j)) == NULL) {
    return;
  }
  seq_keys_t k = {0};
  rc = idgen__seq_io_keys(r, seq_key_cb, &k, err, sizeof err);
  if (b->every)
    idgen_registry_close(r);
  if (rc == 0 && k.failed) {
    snprintf(err, sizeof err, "out of memory");
    rc = IDGEN_ENOMEM;
  }
  if (rc < 0) {
    answer_registry_error(j, rc == IDGEN_EINVAL ? rc : IDGEN_EREGISTRY, err);
  } else {
    qsort(k.v, k.n, sizeof *k.v, str_cmp);
    serve_buf_t out = {0};
    int more = 0;
    for (size_t i = 0; i < k.n && !more; i++) {
      if (b->after[0] && strcmp(k.v[i], b->after) <= 0)
        continue;
      if (out.len + strlen(k.v[i]) + 1 > SEQ_KEYS_PAGE)
        more = 1;
      else
        serve_buf_printf(&out, "%s\n", k.v[i]);
    }
    json_t *o = json_pack("{s:s%,s:b}", "keys", out.len ? out.p : "", out.len, "more", more);
    answer_json(j, 200, o);
    serve_buf_free(&out);
  }
  for (size_t i = 0; i < k.n; i++)
    free(k.v[i]);
  free(k.v);
}

/* ---- the thread and the loops ------------------------------------------- */

static void deliver(struct serve_leases *L, serve_lease_job_t *j) {
  serve_worker_t *w = &L->s->workers[j->worker];
  pthread_mutex_lock(&L->mu);
  j->next = L->done[j->worker];
  L->done[j->worker] = j;
  atomic_fetch_add(&L->pending[j->worker], 1);
  pthread_mutex_unlock(&L->mu);
  uint64_t one = 1;
  ssize_t wr = write(w->wakefd, &one, sizeof one);
  (void)wr;
}

static void *service_main(void *arg) {
  struct serve_leases *L = arg;
  int64_t next = serve_mono_ms() + 1000;
  pthread_mutex_lock(&L->mu);
  for (;;) {
    while (L->queue == NULL && !L->stopping && serve_mono_ms() < next) {
      struct timespec t;
      clock_gettime(CLOCK_MONOTONIC, &t);
      int64_t wait = next - serve_mono_ms();
      if (wait < 1)
        wait = 1;
      t.tv_sec += (time_t)(wait / 1000);
      t.tv_nsec += (long)(wait % 1000) * 1000000L;
      if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&L->cv, &L->mu, &t);
    }
    if (L->stopping)
      break;
    serve_lease_job_t *j = L->queue;
    if (j != NULL && (L->queue = j->next) == NULL)
      L->queue_last = NULL;
    pthread_mutex_unlock(&L->mu);
    if (j != NULL) {
      switch (j->body.route) {
      case LR_ACQUIRE:
        route_acquire(L, j);
        break;
      case LR_RENEW:
        route_renew(L, j);
        break;
      case LR_MARK:
        route_mark(L, j);
        break;
      case LR_SEQ_LOAD:
        route_seq_load(L, j);
        break;
      case LR_SEQ_STORE:
        route_seq_store(L, j);
        break;
      case LR_SEQ_KEYS:
        route_seq_keys(L, j);
        break;
      default:
        route_release(L, j);
      }
      if (j->status >= 400 && !(j->body.route == LR_SEQ_STORE && j->status == 409))
        atomic_fetch_add(&L->refusals, 1); /* (a store's `again` is the protocol's, not one) */
      deliver(L, j);
    }
    next = tick(L);
    pthread_mutex_lock(&L->mu);
  }
  pthread_mutex_unlock(&L->mu);
  return NULL;
}

int serve_leases_start(serve_daemon_t *s) {
  const serve_config_t *cfg = s->cfg;
  if (!cfg->leases)
    return 0;
  struct serve_leases *L = calloc(1, sizeof *L);
  if (L == NULL)
    return -1;
  L->s = s;
  L->done = calloc((size_t)s->nworkers, sizeof *L->done);
  L->pending = calloc((size_t)s->nworkers, sizeof *L->pending);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&L->cv, &ca);
  pthread_condattr_destroy(&ca);
  pthread_mutex_init(&L->mu, NULL);
  if (L->done == NULL || L->pending == NULL || s->lx.reg == NULL) {
    fprintf(stderr, "idgen: serve: leases: %s\n",
            s->lx.reg == NULL ? "no registry to lend from" : "out of memory");
    return -1;
  }
  snprintf(L->own_space, sizeof L->own_space, "%s", idgen_registry_space(s->lx.reg));
  const char *base = cfg->s.value[SK_REGISTRY];
  char err[600];
  if (base[0] != '\0')
    snprintf(L->base_uri, sizeof L->base_uri, "%s", base);
  else if (idgen_registry_default_uri(L->base_uri, sizeof L->base_uri, err, sizeof err) < 0)
    L->base_uri[0] = '\0';
  idgen_lease_info_t li;
  idgen_lease_info(s->lx.lease, &li);
  /* The registry's holder names have no spaces (`registry list` shows
   * them in a column): "CLIENT_via_DAEMON". */
  snprintf(L->holder_suffix, sizeof L->holder_suffix, "_via_%s", li.holder);
  if (pthread_create(&L->thread, NULL, service_main, L) != 0) {
    fprintf(stderr, "idgen: serve: leases: cannot start the service thread\n");
    return -1;
  }
  L->thread_on = 1;
  s->leases = L;
  return 0;
}

void serve_leases_stop(serve_daemon_t *s) {
  struct serve_leases *L = s->leases;
  if (L == NULL || !L->thread_on)
    return;
  pthread_mutex_lock(&L->mu);
  L->stopping = 1;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
  pthread_join(L->thread, NULL);
  L->thread_on = 0;
  /* The loops have ended: what waits is nobody's.  The clients' leases
   * stay held in the registry (a daemon restarted takes them over). */
  for (serve_lease_job_t *j = L->queue, *nx; j; j = nx) {
    nx = j->next;
    free(j->json);
    free(j);
  }
  for (int i = 0; i < s->nworkers; i++)
    for (serve_lease_job_t *j = L->done[i], *nx; j; j = nx) {
      nx = j->next;
      free(j->json);
      free(j);
    }
  L->queue = NULL;
  memset(L->done, 0, (size_t)s->nworkers * sizeof *L->done);
}

void serve_leases_submit(serve_daemon_t *s, serve_lease_job_t *j) {
  struct serve_leases *L = s->leases;
  j->next = NULL;
  pthread_mutex_lock(&L->mu);
  if (L->queue_last)
    L->queue_last->next = j;
  else
    L->queue = j;
  L->queue_last = j;
  pthread_cond_signal(&L->cv);
  pthread_mutex_unlock(&L->mu);
}

void serve_leases_run_done(serve_worker_t *w, serve_resume_cb resume) {
  struct serve_leases *L = w->srv->leases;
  if (L == NULL || atomic_load(&L->pending[w->index]) == 0)
    return;
  pthread_mutex_lock(&L->mu);
  serve_lease_job_t *list = L->done[w->index];
  L->done[w->index] = NULL;
  atomic_store(&L->pending[w->index], 0);
  pthread_mutex_unlock(&L->mu);
  for (serve_lease_job_t *j = list, *nx; j; j = nx) {
    nx = j->next;
    serve_conn_t *c = j->c;
    if (c != NULL) {
      c->lease_job = NULL;
      w->out.len = 0;
      w->replies = 0;
      j->answer(w, c, j);
      resume(w, c, j->read_ns);
    }
    free(j->json);
    free(j);
  }
}

void serve_leases_forget(serve_conn_t *c) {
  if (c->lease_job != NULL) {
    c->lease_job->c = NULL; /* its answer is dropped (serve_leases_run_done) */
    c->lease_job = NULL;
  }
}

json_t *serve_leases_json(serve_daemon_t *s) {
  struct serve_leases *L = s->leases;
  if (L == NULL)
    return json_null();
  return json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "live", (json_int_t)L->live, "held",
                   (json_int_t)L->held, "acquisitions", (json_int_t)L->acquisitions, "refusals",
                   (json_int_t)L->refusals, "renewals", (json_int_t)L->renewals, "marks",
                   (json_int_t)L->marks, "releases", (json_int_t)L->releases, "expiries",
                   (json_int_t)L->expiries, "adoptions", (json_int_t)L->adoptions);
}

void serve_leases_metrics(serve_daemon_t *s, serve_buf_t *b) {
  struct serve_leases *L = s->leases;
  if (L == NULL)
    return;
  serve_buf_printf(b,
                   "# HELP idgen_client_leases Client leases (--leases) held now, by state.\n"
                   "# TYPE idgen_client_leases gauge\n"
                   "idgen_client_leases{state=\"live\"} %" PRIu64 "\n"
                   "idgen_client_leases{state=\"quarantine\"} %" PRIu64 "\n",
                   (uint64_t)L->live, (uint64_t)L->held);
  serve_buf_printf(b,
                   "# HELP idgen_client_lease_operations_total Lease service requests answered, "
                   "by operation; refusals of any.\n"
                   "# TYPE idgen_client_lease_operations_total counter\n"
                   "idgen_client_lease_operations_total{op=\"acquire\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"renew\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"mark\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"release\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"expire\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"adopt\"} %" PRIu64 "\n"
                   "idgen_client_lease_operations_total{op=\"refused\"} %" PRIu64 "\n",
                   (uint64_t)L->acquisitions, (uint64_t)L->renewals, (uint64_t)L->marks,
                   (uint64_t)L->releases, (uint64_t)L->expiries, (uint64_t)L->adoptions,
                   (uint64_t)L->refusals);
}
