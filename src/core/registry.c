/*
 * registry.c -- opening a registry by URI scheme, choosing the leased field
 * and its pool, and the `static` backend (SPEC section 8).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "registry_int.h"

static const idgen__registry_ops_t *const backends[] = {
    &idgen__registry_static, &idgen__registry_file, &idgen__registry_postgres,
    &idgen__registry_postgresql};

int idgen_registry_open(idgen_registry_t **out, const char *uri, char *err, size_t errlen) {
  *out = NULL;
  if (uri == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no URI");
  const char *colon = strchr(uri, ':');
  size_t slen = colon ? (size_t)(colon - uri) : strlen(uri);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    const idgen__registry_ops_t *ops = backends[i];
    if (strlen(ops->scheme) != slen || strncmp(ops->scheme, uri, slen) != 0)
      continue;
    idgen_registry_t *r = calloc(1, sizeof *r);
    if (r == NULL)
      return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
    r->ops = ops;
    r->uri = strdup(uri);
    int rc = r->uri ? ops->open(r, colon ? colon + 1 : "", err, errlen) : IDGEN_ENOMEM;
    if (rc < 0) {
      free(r->uri);
      free(r);
      return rc;
    }
    *out = r;
    return 0;
  }
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: unknown scheme in \"%.100s\" (known: static, file:DIR, "
                    "postgres://...)",
                    uri);
}

void idgen_registry_close(idgen_registry_t *r) {
  if (r == NULL)
    return;
  if (r->ops->close)
    r->ops->close(r);
  free(r->path);
  free(r->uri);
  free(r);
}

int64_t idgen__req_now_ms(const idgen_lease_request_t *req) {
  if (req->clock)
    return req->clock->now_ns(req->clock->ctx) / 1000000;
  return idgen__clock_precise_ms();
}

void idgen__req_sleep_ms(const idgen_lease_request_t *req, int64_t ms) {
  if (req->clock) {
    req->clock->sleep_ns(req->clock->ctx, ms * 1000000);
    return;
  }
  struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0)
    ;
}

/* The leased field (SPEC section 8) and the pool's namespace. */
static int make_pool(const idgen_lease_request_t *req, idgen__pool_t *p, char *err,
                     size_t errlen) {
  const idgen_layout_t *l = req->layout;
  int f = -1, nodes = 0;
  memset(p, 0, sizeof *p);
  for (int i = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE) {
      nodes++;
      if (req->field ? strcmp(l->fields[i].name, req->field) == 0
                     : strcmp(l->fields[i].name, "worker") == 0)
        f = i;
    }
  if (nodes == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: the layout has no node field to lease (a registry needs one; "
                      "use a layout with a worker field, or no registry)");
  if (f < 0 && req->field != NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: \"%.40s\" is not a node field of the "
                                                 "layout", req->field);
  if (f < 0 && nodes > 1)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: the layout has %d node fields and none is named worker: name "
                      "the one to lease (--lease-field)", nodes);
  if (f < 0)
    for (int i = 0; i < l->nfields; i++)
      if (l->fields[i].kind == IDGEN_FIELD_NODE)
        f = i;
  if (l->fields[f].bits > 20)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: field \"%s\" has %d bits; a registry leases fields of at most "
                      "20 bits (1048576 IDs)",
                      l->fields[f].name, l->fields[f].bits);
  p->field = f;
  snprintf(p->field_name, sizeof p->field_name, "%s", l->fields[f].name);
  p->size = UINT64_C(1) << l->fields[f].bits;
  for (int i = 0; i < l->nfields; i++)
    if (i != f && l->fields[i].kind == IDGEN_FIELD_NODE) {
      size_t used = strlen(p->ns);
      snprintf(p->ns + used, sizeof p->ns - used, "%s%s=%llu", used ? "," : "",
               l->fields[i].name, (unsigned long long)(req->node ? req->node[i] : 0));
    }
  return 0;
}

int idgen_registry_acquire(idgen_registry_t *r, const idgen_lease_request_t *req,
                           idgen_lease_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (r == NULL || req == NULL || req->layout == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no layout");
  idgen_lease_t *l = calloc(1, sizeof *l);
  if (l == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  l->r = r;
  l->fd = -1;
  l->fork_gen = idgen__fork_gen();
  l->ttl_ms = req->ttl_ms ? req->ttl_ms : IDGEN_LEASE_TTL_DEFAULT_MS;
  l->quarantine_ms = req->quarantine_ms ? req->quarantine_ms : l->ttl_ms;
  l->mark_step_ms = req->mark_step_ms ? req->mark_step_ms
                    : r->ops->mark_step_ms ? r->ops->mark_step_ms
                                           : l->ttl_ms;
  int rc = 0;
  if (l->ttl_ms < IDGEN_LEASE_TTL_MIN_MS || l->ttl_ms > IDGEN_LEASE_TTL_MAX_MS ||
      l->quarantine_ms < 0 ||
      l->quarantine_ms > 86400000 || l->mark_step_ms < 1 || l->mark_step_ms > 3600000)
    rc = idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: ttl_ms %" PRId64 " (%d..%d), quarantine_ms %" PRId64
                    " (0..86400000) or mark_step_ms %" PRId64 " (1..3600000) out of range",
                    l->ttl_ms, IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS, l->quarantine_ms,
                    l->mark_step_ms);
  if (rc == 0)
    rc = make_pool(req, &l->pool, err, errlen);
  if (rc == 0) {
    snprintf(l->pool_name, sizeof l->pool_name, "%s@%s", l->pool.field_name,
             l->pool.ns[0] ? l->pool.ns : "-");
    char host[64] = "localhost";
    uint8_t tok[4] = {0};
    gethostname(host, sizeof host - 1);
    idgen_random_bytes(tok, sizeof tok);
    snprintf(l->holder, sizeof l->holder, "%s:%ld:%02x%02x%02x%02x", host, (long)getpid(), tok[0],
             tok[1], tok[2], tok[3]);
    rc = r->ops->acquire(l, req, err, errlen);
  }
  if (rc < 0) {
    free(l);
    return rc;
  }
  *out = l;
  return 0;
}

void idgen_lease_info(const idgen_lease_t *l, idgen_lease_info_t *out) {
  memset(out, 0, sizeof *out);
  out->field = l->pool.field;
  out->worker = l->worker;
  out->generation = l->generation;
  out->mark_ms = l->mark_ms;
  out->ttl_ms = l->ttl_ms;
  out->mark_step_ms = l->mark_step_ms;
  out->expires_ms = l->expires_ms;
  snprintf(out->holder, sizeof out->holder, "%s", l->holder);
  snprintf(out->pool, sizeof out->pool, "%s", l->pool_name);
}

int idgen_lease_record_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  if (l->fork_gen != idgen__fork_gen())
    return idgen__err(err, errlen, IDGEN_EFORKED, "registry: the lease belongs to the parent");
  if (mark_ms <= l->mark_ms)
    return 0;
  return l->r->ops->mark(l, mark_ms, err, errlen);
}

int idgen__lease_final_mark(idgen_lease_t *l, int64_t mark_ms) {
  if (l->fork_gen != idgen__fork_gen() || mark_ms == l->mark_ms)
    return 0;
  return l->r->ops->mark(l, mark_ms, NULL, 0);
}

int idgen_lease_renew(idgen_lease_t *l, char *err, size_t errlen) {
  if (l->fork_gen != idgen__fork_gen())
    return idgen__err(err, errlen, IDGEN_EFORKED, "registry: the lease belongs to the parent");
  return l->r->ops->renew(l, err, errlen);
}

int idgen_registry_list(idgen_registry_t *r, int (*cb)(void *ctx, const idgen_lease_row_t *row),
                        void *ctx, char *err, size_t errlen) {
  if (r->ops->list == NULL)
    return 0; /* static: nothing is kept */
  return r->ops->list(r, cb, ctx, err, errlen);
}

int idgen_registry_free(idgen_registry_t *r, const char *pool, uint64_t worker, int force,
                        char *err, size_t errlen) {
  if (r->ops->free == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: %s keeps no leases to free",
                      r->ops->scheme);
  if (pool == NULL || strchr(pool, '@') == NULL || strchr(pool, '/') != NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: pool \"%.100s\" is not FIELD@NAMESPACE (as listed)",
                      pool ? pool : "");
  return r->ops->free(r, pool, worker, force, err, errlen);
}

void idgen_lease_release(idgen_lease_t *l) {
  if (l == NULL)
    return;
  if (l->fork_gen == idgen__fork_gen())
    l->r->ops->release(l);
  free(l);
}

/* ---- static: the node values as given; nothing is coordinated ---------- */

static int static_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  (void)r;
  if (rest[0] != '\0')
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: static takes no argument");
  return 0;
}

static int static_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                          size_t errlen) {
  (void)err;
  (void)errlen;
  l->worker = req->node ? req->node[l->pool.field] : 0;
  l->generation = 1;
  return 0;
}

static int static_renew(idgen_lease_t *l, char *err, size_t errlen) {
  (void)l;
  (void)err;
  (void)errlen;
  return 0;
}

static int static_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  l->mark_ms = mark_ms; /* nowhere to keep it: uniqueness is the user's job */
  return 0;
}

static void static_release(idgen_lease_t *l) { (void)l; }

const idgen__registry_ops_t idgen__registry_static = {
    .scheme = "static",
    .mark_step_ms = 1000,
    .open = static_open,
    .acquire = static_acquire,
    .renew = static_renew,
    .mark = static_mark,
    .release = static_release,
};
