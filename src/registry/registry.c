/*
 * registry.c -- opening a registry by URI scheme, choosing the leased field
 * and its pool, and the `static` backend (docs/DESIGN.md §11).
 */
#include <assert.h>
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef IDGEN_NO_ETCD
#include <jansson.h>
#endif

#include "registry_int.h"

static void scrub_secrets(char *err, size_t errlen, const char *uri);

#ifdef IDGEN_NO_ETCD
/* Built without etcd:// (cmake -DIDGEN_ETCD=OFF, as the PostgreSQL
 * extension's libraries are: its JSON parser, jansson's, cannot be linked
 * into a server module, docs/DESIGN.md §14): the scheme is known, and
 * refused with the reason. */
static int etcd_off(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)uri;
  (void)rest;
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: etcd:// is not available in this build (libidgen-registry built "
                    "without etcd, as the PostgreSQL extension's is: etcd's JSON parser cannot "
                    "be linked into a server module); use postgres:// or file:");
}

const idgen__registry_ops_t idgen__registry_etcd = {
    .version = IDGEN__REGISTRY_OPS_VERSION,
    .scheme = "etcd",
    .check = etcd_off,
};
#endif

static const idgen__registry_ops_t *const backends[] = {
    &idgen__registry_static,     &idgen__registry_file, &idgen__registry_postgres,
    &idgen__registry_postgresql, &idgen__registry_etcd, &idgen__registry_idgen,
    &idgen__registry_idgens};

/* The rule bind and idgen_lease_settings_verify share: `static` leases
 * nothing, so there is no field for it to assign. */
static const char static_field[] = "a lease field needs a registry other than static";

/* The backend for uri's scheme, with *rest after its colon; NULL with a
 * message if the scheme is unknown or the backend of another version. */
static const idgen__registry_ops_t *backend_of(const char *uri, const char **rest, char *err,
                                               size_t errlen) {
  if (uri == NULL) {
    idgen__err(err, errlen, IDGEN_EINVAL, "registry: no URI");
    return NULL;
  }
  const char *colon = strchr(uri, ':');
  size_t slen = colon ? (size_t)(colon - uri) : strlen(uri);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    const idgen__registry_ops_t *ops = backends[i];
    if (strlen(ops->scheme) != slen || strncmp(ops->scheme, uri, slen) != 0)
      continue;
    if (ops->version != IDGEN__REGISTRY_OPS_VERSION) {
      idgen__err(err, errlen, IDGEN_EINVAL,
                 "registry: the %s backend was built for ops version %d, not %d", ops->scheme,
                 ops->version, IDGEN__REGISTRY_OPS_VERSION);
      return NULL;
    }
    *rest = colon ? colon + 1 : "";
    return ops;
  }
  char masked[1100]; /* a mistyped scheme's URI still has its password */
  idgen_registry_uri_redact(uri, masked, sizeof masked);
  idgen__err(
      err, errlen, IDGEN_EINVAL,
      "registry: unknown scheme in \"%s\" (known: static, file:DIR, postgres://..., etcd://HOST:PORT, "
      "idgen://HOST:PORT)",
      IDGEN_QUOTE(masked, strlen(masked), '"', 100));
  return NULL;
}

int idgen_registry_clock_skew(idgen_registry_t *r, int64_t *skew_ms, int64_t *registry_ms,
                              int64_t *uncertainty_ms, char *err, size_t errlen) {
  *skew_ms = *registry_ms = *uncertainty_ms = 0;
  if (r->ops->clock == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s has no clock of its own (its time is this host's)",
                      r->ops->scheme);
  int64_t before = idgen__clock_ns(), theirs;
  int rc = r->ops->clock(r, &theirs, err, errlen);
  int64_t after = idgen__clock_ns();
  if (rc < 0)
    return rc;
  /* The read happened between before and after: take the middle. */
  int64_t mid_ms = idgen__ns_to_ms(before + (after - before) / 2);
  *registry_ms = theirs;
  *skew_ms = mid_ms - theirs;
  *uncertainty_ms = (after - before) / 2000000 + 1;
  return 0;
}

/* A space given to the static registry, in its URI (idgen_registry_open)
 * or beside it (idgen_registry_uri_with_space): one refusal. */
#define STATIC_NO_SPACES "registry: the static registry keeps no ID spaces (space=%s)"

/* uri without its space= parameter (a malloc'ed copy in *bare), the space's
 * name into space[] ("" if none), the backend and what follows its colon:
 * the backend, or NULL with a message. */
static const idgen__registry_ops_t *parse_uri(const char *uri, char **bare, char *space,
                                              const char **rest, char *err, size_t errlen) {
  *bare = NULL;
  if (uri == NULL)
    return backend_of(uri, rest, err, errlen);
  size_t n = strlen(uri) + 1;
  if ((*bare = malloc(n)) == NULL) {
    idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
    return NULL;
  }
  const idgen__registry_ops_t *ops = NULL;
  if (idgen__uri_take_space(uri, *bare, n, space, err, errlen) == 0 &&
      (ops = backend_of(*bare, rest, err, errlen)) != NULL && space[0] != '\0' &&
      ops == &idgen__registry_static) {
    idgen__err(err, errlen, IDGEN_EINVAL, STATIC_NO_SPACES, space);
    ops = NULL;
  }
  if (ops == NULL) { /* the message may quote the URI (an unknown scheme) */
    scrub_secrets(err, errlen, uri);
    free(*bare);
    *bare = NULL;
  }
  return ops;
}

int idgen_registry_check(const char *uri, char *err, size_t errlen) {
  const char *rest;
  char *bare, space[IDGEN_SPACE_NAME_MAX];
  const idgen__registry_ops_t *ops = parse_uri(uri, &bare, space, &rest, err, errlen);
  if (ops == NULL)
    return IDGEN_EINVAL;
  int rc = ops->check(bare, rest, err, errlen);
  if (rc < 0)
    scrub_secrets(err, errlen, uri);
  free(bare);
  return rc;
}

int idgen_registry_open(idgen_registry_t **out, const char *uri, char *err, size_t errlen) {
  *out = NULL;
  const char *rest;
  char *bare, space[IDGEN_SPACE_NAME_MAX];
  const idgen__registry_ops_t *ops = parse_uri(uri, &bare, space, &rest, err, errlen);
  if (ops == NULL)
    return IDGEN_EINVAL;
  int rc = ops->check(bare, rest, err, errlen);
  if (rc < 0)
    scrub_secrets(err, errlen, uri);
  idgen_registry_t *r = rc < 0 ? NULL : calloc(1, sizeof *r);
  if (rc == 0 && r == NULL)
    rc = idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  if (rc < 0) {
    free(bare);
    return rc;
  }
  r->ops = ops;
  r->uri = bare;
  r->space_given = space[0] != '\0';
  snprintf(r->space, sizeof r->space, "%s", space[0] ? space : "default");
  if (r->space_given && strcmp(space, "default") != 0)
    snprintf(r->space_path, sizeof r->space_path, "spaces/%s/", space);
  int given_up = 0;
  rc = idgen__bounded_open(r, rest, &given_up, err, errlen);
  if (rc < 0)
    scrub_secrets(err, errlen, uri);
  if (given_up)
    return rc;   /* r is the call's, which frees it */
  if (rc == 0) { /* what is shown: the URI as opened, with its space, secrets masked */
    size_t n = strlen(r->uri) + IDGEN_SPACE_NAME_MAX + 8;
    char *full = malloc(n);
    rc = full == NULL ? idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory")
                      : idgen_registry_uri_with_space(r->uri, r->space_given ? r->space : NULL,
                                                      full, n, err, errlen);
    if (rc == 0 && (r->shown = malloc(2 * n + 16)) == NULL)
      rc = idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
    if (rc == 0)
      idgen_registry_uri_redact(full, r->shown, 2 * n + 16);
    free(full);
    if (rc < 0 && ops->close)
      ops->close(r);
  }
  if (rc < 0) {
    free(r->uri);
    free(r);
    return rc;
  }
  *out = r;
  return 0;
}

const char *idgen_registry_space(const idgen_registry_t *r) { return r->space; }

void idgen_registry_close(idgen_registry_t *r) {
  if (r == NULL)
    return;
  idgen__bounded_close(r);
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

int idgen__fenced(const char *pfx, const idgen_lease_t *l, const char *what, const char *why,
                  char *err, size_t errlen) {
  return idgen__err(err, errlen, IDGEN_ELEASE,
                    "%s%s: fenced out: generation %" PRIu64 " of %s in pool %s is no longer this "
                    "holder's%s",
                    pfx, what, l->generation, l->node, l->pool.name, why);
}

int idgen__pool_full(const char *pfx, const idgen_lease_request_t *req, const idgen__pool_t *p,
                     uint64_t held, uint64_t quarantined, int64_t next_ms, int64_t *waited,
                     char *err, size_t errlen) {
  int64_t max = req->max_start_wait_ms < 0 ? IDGEN_START_WAIT_MS_DEFAULT : req->max_start_wait_ms;
  if (quarantined > 0 && next_ms >= 0 && *waited + next_ms + 1 <= max) {
    /* One comes back within the start wait: wait for it, as for a mark. */
    idgen__req_sleep_ms(req, next_ms + 1);
    *waited += next_ms + 1;
    return 0;
  }
  char q[200] = "";
  if (quarantined > 0)
    snprintf(q, sizeof q,
             ", %" PRIu64 " in quarantine after their holders stopped (the first free again in "
             "%" PRId64 " ms, past max_start_wait_ms %" PRId64 "%s)",
             quarantined, next_ms, max, *waited > 0 ? " with what was waited" : "");
  return idgen__err(err, errlen, IDGEN_EPOOLFULL,
                    "%sthe pool is full: all %" PRIu64 " values of field \"%s\" (%d bits)%s%s are "
                    "taken: %" PRIu64 " held by live holders%s; free one (stop a holder, or "
                    "`idgen registry list` to see them) or give this holder another tuple",
                    pfx, p->size, p->field_name, (int)__builtin_ctzll(p->size),
                    p->others[0] ? " with " : "", p->others, held, q);
}

int idgen__start_wait(const char *pfx, const idgen_lease_request_t *req, const idgen__pool_t *p,
                      uint64_t v, int64_t mark, int64_t now, int64_t *waited, const char *why,
                      char *err, size_t errlen) {
  int64_t max = req->max_start_wait_ms < 0 ? IDGEN_START_WAIT_MS_DEFAULT : req->max_start_wait_ms;
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  int64_t wait = mark - now - borrow + 1;
  if (*waited + wait > max)
    return idgen__err(err, errlen, IDGEN_ECLOCK,
                      "%severy free tuple has a mark ahead of the wall clock; the nearest (%s "
                      "%" PRIu64 "%s%s) can start in %" PRId64 " ms, more than max_start_wait_ms "
                      "(%" PRId64 ")%s",
                      pfx, p->field_name, v, p->others[0] ? " with " : "", p->others, wait, max,
                      why);
  idgen__req_sleep_ms(req, wait);
  *waited += wait;
  return 0;
}

void idgen__node_text(const idgen_layout_t *l, uint64_t key, char *buf) {
  size_t used = 0;
  buf[0] = '\0';
  if (l == NULL) {
    snprintf(buf, IDGEN_NODE_TEXT_MAX, "0x%016llx", (unsigned long long)key);
    return;
  }
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *f = &l->fields[i];
    if (f->kind != IDGEN_FIELD_NODE)
      continue;
    uint64_t v = (key >> f->shift) & ((UINT64_C(1) << f->bits) - 1);
    used += (size_t)snprintf(buf + used, IDGEN_NODE_TEXT_MAX - used, "%s%s=%llu", used ? "," : "",
                             f->name, (unsigned long long)v);
    if (used >= IDGEN_NODE_TEXT_MAX)
      break; /* cannot happen: 14 node fields of 31 + 1 + 20 + 1 bytes fit */
  }
}

int idgen__node_key(const idgen_layout_t *l, const char *node, uint64_t *key, char *err,
                    size_t errlen) {
  *key = 0;
  if (node[0] == '0' && (node[1] == 'x' || node[1] == 'X')) {
    char *end;
    if (node[2] == '\0' || strlen(node) > 18 ||
        strspn(node + 2, "0123456789abcdefABCDEF") != strlen(node + 2))
      return idgen__err(err, errlen, -1,
                        "\"%s\" is not a key in hex (0x and 1 to 16 hex "
                        "digits)",
                        IDGEN_QUOTE(node, strlen(node), '"', 40));
    *key = strtoull(node + 2, &end, 16);
    return 0;
  }
  if (l == NULL)
    return idgen__err(err, errlen, -1,
                      "the pool's layout is unknown: give the tuple's key in "
                      "hex (0x...), as listed");
  unsigned seen = 0;
  uint64_t values[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  /* the one node-list rule: the command's, the daemon's, the extension's */
  if (idgen_layout_nodes_parse(l, node, NULL, NULL, values, &seen, err, errlen) < 0)
    return -1;
  for (int i = 0; i < l->nfields; i++)
    if (seen >> i & 1)
      *key |= values[i] << l->fields[i].shift;
  for (int i = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE && !(seen >> i & 1))
      return idgen__err(err, errlen, -1,
                        "node field %s missing (give every node field, as "
                        "listed)",
                        l->fields[i].name);
  return 0;
}

/* A generator made by idgen_snowflake_gen_new (mem NULL), or in `mem` by
 * idgen_snowflake_gen_init_shared. */
static int make_gen(void *mem, const idgen_layout_t *l, const idgen_snowflake_settings_t *s,
                    idgen_snowflake_gen_t **g, char *err, size_t errlen) {
  if (mem == NULL)
    return idgen_snowflake_gen_new(g, l, s, err, errlen);
  int rc = idgen_snowflake_gen_init_shared(mem, l, s, err, errlen);
  if (rc == 0)
    *g = mem;
  return rc;
}

int idgen_registry_bind(idgen_registry_t *r, const idgen_bind_request_t *breq,
                        idgen_lease_t **lease, idgen_snowflake_gen_t **g, char *err,
                        size_t errlen) {
  *lease = NULL;
  *g = NULL;
  if (r == NULL || breq == NULL || breq->layout == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no registry or no layout");
  if (breq->mem != NULL && breq->mem_size < idgen_snowflake_gen_shared_size())
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: caller memory of %zu bytes is smaller than a generator's %zu "
                      "(idgen_snowflake_gen_shared_size())",
                      breq->mem_size, idgen_snowflake_gen_shared_size());
  const idgen_layout_t *l = breq->layout;
  const idgen_snowflake_settings_t *s = breq->settings;
  idgen_snowflake_settings_t defaults;
  if (s == NULL) {
    idgen_snowflake_settings_init(&defaults);
    s = &defaults;
  }
  if (r->ops == &idgen__registry_static) {
    if (breq->field != NULL)
      return idgen__err(err, errlen, IDGEN_EINVAL, "%s", static_field);
    return make_gen(breq->mem, l, s, g, err, errlen);
  }
  idgen_lease_request_t req = {
      .layout = l,
      .node = s->node,
      .field = breq->field,
      .max_start_wait_ms = breq->max_start_wait_ms,
      .clock = s->clock,
      .ttl_ms = breq->ttl_ms,
      .start_borrow_ms = s->max_borrow_ms,
  };
  int rc = idgen_registry_acquire(r, &req, lease, err, errlen);
  if (rc < 0)
    return rc;
  idgen_snowflake_settings_t bound = *s;
  bound.lease = *lease;
  if ((rc = make_gen(breq->mem, l, &bound, g, err, errlen)) < 0) {
    idgen_lease_release(*lease);
    *lease = NULL;
  }
  return rc;
}

int idgen_lease_ttl_check(int64_t ttl_ms, char *err, size_t errlen) {
  if (ttl_ms < IDGEN_LEASE_TTL_MIN_MS || ttl_ms > IDGEN_LEASE_TTL_MAX_MS)
    return idgen__err(err, errlen, IDGEN_EINVAL, "lease TTL %" PRId64 " ms is not from %d to %d",
                      ttl_ms, IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS);
  return 0;
}

int idgen_lease_settings_verify(idgen_lease_settings_t *s, char *err, size_t errlen) {
  const idgen_layout_t *l = s->layout;
  const char *field = s->field;
  s->leased = -1;
  s->blame = IDGEN_LEASE_SETTING_REGISTRY;
  const char *rest;
  char *bare, space[IDGEN_SPACE_NAME_MAX];
  const idgen__registry_ops_t *ops = parse_uri(s->uri, &bare, space, &rest, err, errlen);
  if (ops == NULL)
    return IDGEN_EINVAL;
  free(bare);
  s->blame = IDGEN_LEASE_SETTING_FIELD;
  if (field != NULL && idgen_lease_field(l, field, err, errlen) < 0)
    return IDGEN_EINVAL;
  char masked[1100];
  idgen_registry_uri_redact(s->uri, masked, sizeof masked);
  const char *shown = IDGEN_QUOTE(masked, strlen(masked), 0, 100);
  s->blame = IDGEN_LEASE_SETTING_NODE;
  if (s->node_from_host && ops != &idgen__registry_static)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "values from the host's address (@ip, @mac) are unchecked and the "
                      "registry %s leases node values instead: give registry = static to use "
                      "them, or leave them out",
                      shown);
  s->blame = IDGEN_LEASE_SETTING_FIELD;
  if (ops == &idgen__registry_static && field != NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "%s", static_field);
  if (ops == &idgen__registry_static) {
    s->blame = IDGEN_LEASE_SETTING_NONE;
    return 0;
  }
  s->blame = field != NULL ? IDGEN_LEASE_SETTING_FIELD : IDGEN_LEASE_SETTING_LAYOUT;
  int f = idgen_lease_field(l, field, err, errlen);
  if (f < 0)
    return f;
  s->blame = IDGEN_LEASE_SETTING_NODE;
  if (s->node_given >> f & 1)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "the registry %s assigns %s: leave it out of node, or use registry = "
                      "static to set it by hand",
                      shown, l->fields[f].name);
  s->leased = f;
  s->blame = IDGEN_LEASE_SETTING_NONE;
  return 0;
}

/* The deprecated form of idgen_lease_settings_verify, kept for programs
 * built with 0.1.0's header: the setting by its config key. */
int idgen_lease_settings_check(const char *uri, const idgen_layout_t *l, const char *field,
                               unsigned node_given, int node_from_host, int *leased,
                               const char **setting, char *err, size_t errlen) {
  static const char *const keys[] = {
      [IDGEN_LEASE_SETTING_NONE] = "",
      [IDGEN_LEASE_SETTING_REGISTRY] = "registry",
      [IDGEN_LEASE_SETTING_LAYOUT] = "layout",
      [IDGEN_LEASE_SETTING_NODE] = "node",
      [IDGEN_LEASE_SETTING_FIELD] = "lease_field",
  };
  idgen_lease_settings_t s = {.uri = uri,
                              .layout = l,
                              .field = field,
                              .node_given = node_given,
                              .node_from_host = node_from_host};
  int rc = idgen_lease_settings_verify(&s, err, errlen);
  *leased = s.leased;
  *setting = keys[s.blame];
  return rc;
}

int idgen_lease_field(const idgen_layout_t *l, const char *field, char *err, size_t errlen) {
  int f = -1, nodes = 0;
  for (int i = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE) {
      nodes++;
      if (strcmp(l->fields[i].name, field ? field : "worker") == 0)
        f = i;
    }
  if (nodes == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: the layout has no node field to lease (a registry needs one; "
                      "use a layout with a worker field, or no registry)");
  if (f < 0 && field != NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: \"%s\" is not a node field of the "
                      "layout",
                      IDGEN_QUOTE(field, strlen(field), '"', 40));
  if (f < 0 && nodes > 1)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: the layout has %d node fields and none is named worker: name "
                      "the one to lease (--lease-field)",
                      nodes);
  for (int i = 0; f < 0 && i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE)
      f = i;
  return f;
}

/* The leased field (docs/DESIGN.md §11), the other node fields' bits, and the
 * pool's name. */
static int make_pool(const idgen_lease_request_t *req, const char *space_path, idgen__pool_t *p,
                     char *err, size_t errlen) {
  const idgen_layout_t *l = req->layout;
  memset(p, 0, sizeof *p);
  /* A layout that has run out can make no ID whatever its node: say so
   * first, as a generator would, and lease nothing (a file: record was
   * made for baidu's layout, and its 22-bit worker named instead). */
  int64_t horizon = idgen_layout_horizon_ms(l);
  if (idgen__req_now_ms(req) >= horizon) {
    char date[IDGEN_TIME_TEXT_MAX];
    idgen_time_format(horizon, date);
    char *t = strchr(date, 'T');
    if (t != NULL)
      *t = '\0';
    return idgen__err(err, errlen, IDGEN_EEXHAUSTED, "layout ran out on %s", date);
  }
  int f = idgen_lease_field(l, req->field, err, errlen);
  if (f < 0)
    return f;
  if (l->fields[f].bits > 20)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: field \"%s\" has %d bits; a registry leases fields of at most "
                      "20 bits (1048576 IDs)",
                      l->fields[f].name, l->fields[f].bits);
  p->field = f;
  snprintf(p->field_name, sizeof p->field_name, "%s", l->fields[f].name);
  p->shift = l->fields[f].shift;
  p->size = UINT64_C(1) << l->fields[f].bits;
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *fi = &l->fields[i];
    if (i == f || fi->kind != IDGEN_FIELD_NODE)
      continue;
    uint64_t v = req->node ? req->node[i] : 0;
    if (v >> fi->bits != 0)
      return idgen__err(err, errlen, IDGEN_ERANGE, "%s %llu out of range 0..%llu", fi->name,
                        (unsigned long long)v, (unsigned long long)((UINT64_C(1) << fi->bits) - 1));
    p->fixed |= v << fi->shift;
    size_t used = strlen(p->others);
    snprintf(p->others + used, sizeof p->others - used, "%s%s=%llu", used ? "," : "", fi->name,
             (unsigned long long)v);
  }
  idgen__pool_name(l, p->name);
  if (idgen_layout_format(l, p->layout, sizeof p->layout) < 0)
    p->layout[0] = '\0';
  snprintf(p->store, sizeof p->store, "%s%s", space_path, p->name);
  return 0;
}

/* The mark written when a bound generator stops: the last tick it used,
 * which may be below l->mark_ms (nothing above it was issued). */
static int lease_final_mark(idgen_lease_t *l, int64_t mark_ms) {
  if (l->fork_gen != idgen__fork_gen() || mark_ms == l->mark_ms)
    return 0;
  return idgen__bounded_mark(l, mark_ms, NULL, 0);
}

/* A holder name a lease service gives (idgen_registry_acquire_for): 0, or
 * IDGEN_EINVAL. */
static int holder_check(const char *holder, const char *what, char *err, size_t errlen) {
  size_t n = holder ? strlen(holder) : 0;
  int ok = n > 0 && n < IDGEN_HOLDER_MAX;
  for (size_t i = 0; ok && i < n; i++)
    ok = holder[i] > ' ' && holder[i] < 0x7f;
  if (!ok)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s must be 1 to %d printable characters without spaces", what,
                      IDGEN_HOLDER_MAX - 1);
  return 0;
}

/* A new lease of r for req, before the backend is asked: its table, TTL,
 * quarantine, mark step, pool and holder (`holder`, or this process's
 * "host:pid:token" when NULL).  0 with *out, or an error (nothing held). */
static int lease_new(idgen_registry_t *r, const idgen_lease_request_t *req, const char *holder,
                     idgen_lease_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (r == NULL || req == NULL || req->layout == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no layout");
  if (holder != NULL && holder_check(holder, "a holder's name", err, errlen) < 0)
    return IDGEN_EINVAL;
  idgen_lease_t *l = calloc(1, sizeof *l);
  if (l == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  /* The table the core's keeper binds through (bind_int.h). */
  l->bind.version = IDGEN__BIND_VERSION;
  l->bind.info = idgen_lease_info;
  l->bind.renew = idgen_lease_renew;
  l->bind.mark = idgen_lease_record_mark;
  l->bind.final_mark = lease_final_mark;
  l->bind.expires = r->ops->expires;
  atomic_init(&l->bind.bound, 0);
  l->r = r;
  l->expires_in_ms = -1;
  l->fork_gen = idgen__fork_gen();
  l->ttl_ms = req->ttl_ms ? req->ttl_ms : IDGEN_LEASE_TTL_DEFAULT_MS;
  l->quarantine_ms = req->quarantine_ms ? req->quarantine_ms : l->ttl_ms;
  l->mark_step_ms = req->mark_step_ms      ? req->mark_step_ms
                    : r->ops->mark_step_ms ? r->ops->mark_step_ms
                                           : l->ttl_ms;
  int rc = idgen_lease_ttl_check(l->ttl_ms, err, errlen);
  if (rc == 0 && (l->quarantine_ms < 0 || l->quarantine_ms > 86400000 || l->mark_step_ms < 1 ||
                  l->mark_step_ms > 3600000))
    rc = idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: quarantine_ms %" PRId64 " (0..86400000) or mark_step_ms %" PRId64
                    " (1..3600000) out of range",
                    l->quarantine_ms, l->mark_step_ms);
  if (rc == 0)
    rc = make_pool(req, r->space_path, &l->pool, err, errlen);
  if (rc < 0) {
    free(l);
    return rc;
  }
  if (holder != NULL) {
    snprintf(l->holder, sizeof l->holder, "%s", holder);
  } else {
    char host[64] = "localhost";
    uint8_t tok[4] = {0};
    gethostname(host, sizeof host - 1);
    idgen_random_bytes(tok, sizeof tok);
    snprintf(l->holder, sizeof l->holder, "%s:%ld:%02x%02x%02x%02x", host, (long)getpid(), tok[0],
             tok[1], tok[2], tok[3]);
  }
  *out = l;
  return 0;
}

int idgen_registry_acquire_for(idgen_registry_t *r, const idgen_lease_request_t *req,
                               const char *holder, idgen_lease_t **out, char *err, size_t errlen) {
  *out = NULL;
  idgen_lease_t *l;
  int rc = lease_new(r, req, holder, &l, err, errlen);
  if (rc < 0)
    return rc;
  int given_up = 0;
  rc = idgen__bounded_acquire(l, req, &given_up, err, errlen);
  if (given_up)
    return rc; /* the lease is the call's, which gives it back */
  if (rc < 0) {
    free(l->be);
    free(l);
    return rc;
  }
  l->key = l->pool.fixed | l->worker << l->pool.shift;
  idgen__node_text(req->layout, l->key, l->node);
  *out = l;
  return 0;
}

int idgen_registry_acquire(idgen_registry_t *r, const idgen_lease_request_t *req,
                           idgen_lease_t **out, char *err, size_t errlen) {
  return idgen_registry_acquire_for(r, req, NULL, out, err, errlen);
}

int idgen_registry_adopt(idgen_registry_t *r, const idgen_lease_request_t *req, uint64_t key,
                         uint64_t generation, const char *holder, const char *new_holder,
                         idgen_lease_t **out, char *err, size_t errlen) {
  *out = NULL;
  if (holder_check(holder, "the holder to take over from", err, errlen) < 0)
    return IDGEN_EINVAL;
  idgen_lease_t *l;
  int rc = lease_new(r, req, new_holder ? new_holder : holder, &l, err, errlen);
  if (rc < 0)
    return rc;
  l->worker = (key >> l->pool.shift) & (l->pool.size - 1);
  l->key = key;
  l->generation = generation;
  idgen__node_text(req->layout, key, l->node); /* the backend's messages name it */
  if ((key & ~((l->pool.size - 1) << l->pool.shift)) != l->pool.fixed)
    rc = idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: key 0x%016" PRIx64 " is not a tuple with the node values given (%s)",
                    key, l->pool.others[0] ? l->pool.others : "none");
  else if (r->ops->adopt == NULL)
    rc = idgen__err(err, errlen, IDGEN_ELEASE,
                    "registry: %s: cannot take over another process's lease", r->ops->scheme);
  else {
    int given_up = 0;
    rc = idgen__bounded_adopt(l, holder, &given_up, err, errlen);
    if (given_up)
      return rc; /* the lease is the call's, which gives it back */
  }
  if (rc < 0) {
    free(l->be);
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
  out->floor_ms = l->floor_ms;
  out->ttl_ms = l->ttl_ms;
  out->mark_step_ms = l->mark_step_ms;
  out->expires_ms = l->expires_ms;
  out->expires_in_ms = l->expires_in_ms;
  out->key = l->key;
  snprintf(out->holder, sizeof out->holder, "%s", l->holder);
  snprintf(out->pool, sizeof out->pool, "%s", l->pool.name);
  snprintf(out->node, sizeof out->node, "%s", l->node);
  snprintf(out->space, sizeof out->space, "%s", l->r->space);
}

int idgen_lease_record_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  if (l->fork_gen != idgen__fork_gen())
    return idgen__err(err, errlen, IDGEN_EFORKED, "registry: the lease belongs to the parent");
  if (mark_ms <= l->mark_ms)
    return 0;
  return idgen__bounded_mark(l, mark_ms, err, errlen);
}

int idgen_lease_renew(idgen_lease_t *l, char *err, size_t errlen) {
  if (l->fork_gen != idgen__fork_gen())
    return idgen__err(err, errlen, IDGEN_EFORKED, "registry: the lease belongs to the parent");
  return idgen__bounded_renew(l, err, errlen);
}

int idgen_registry_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err,
                        size_t errlen) {
  if (r->ops->list == NULL)
    return 0; /* static: nothing is kept */
  return r->ops->list(r, cb, ctx, err, errlen);
}

typedef struct spaces_ctx {
  idgen_registry_spaces_cb cb;
  void *ctx;
  char *err;
  size_t errlen;
  idgen_space_info_t info;
} spaces_ctx_t;

/* One space's record as idgen_space_info_t: each layout's live tuples and
 * highest possible ID from its pool's marks. */
static int space_info(void *ctx, const char *space, const idgen__space_t *s,
                      const idgen__space_probe_t *probe) {
  spaces_ctx_t *c = ctx;
  idgen_space_info_t *in = &c->info;
  memset(in, 0, sizeof *in);
  snprintf(in->name, sizeof in->name, "%s", space);
  if (s->nretired > 0) {
    in->has_retired = in->has_highest = 1;
    in->retired_highest = in->highest_id = s->hi[s->nretired - 1];
  }
  for (int i = 0; i < s->n && i < IDGEN_SPACE_LAYOUTS_MAX; i++) {
    idgen_space_layout_t *o = &in->layouts[in->nlayouts++];
    char holders[8];
    int64_t mark = 0;
    uint64_t keys = 0;
    idgen_layout_t l;
    snprintf(o->pool, sizeof o->pool, "%s", s->m[i].pool);
    snprintf(o->layout, sizeof o->layout, "%s", s->m[i].spec);
    o->floor_ms = s->m[i].floor_ms;
    int live = probe->live(probe->ctx, o->pool, holders, sizeof holders, c->err, c->errlen);
    if (live < 0 || probe->issued(probe->ctx, o->pool, &mark, &keys, c->err, c->errlen) < 0)
      return live < 0 ? live : IDGEN_EREGISTRY;
    o->live = live;
    if (idgen_layout_parse(&l, o->layout, NULL, 0) == 0 &&
        idgen__space_high_id(&l, mark, keys, &o->highest_id)) {
      o->has_highest = 1;
      if (!in->has_highest || o->highest_id > in->highest_id)
        in->highest_id = o->highest_id;
      in->has_highest = 1;
    }
  }
  return c->cb(c->ctx, in);
}

int idgen_registry_spaces(idgen_registry_t *r, idgen_registry_spaces_cb cb, void *ctx, char *err,
                          size_t errlen) {
  if (r->ops->spaces == NULL)
    return 0; /* static: nothing is kept */
  spaces_ctx_t *c = malloc(sizeof *c);
  if (c == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  c->cb = cb;
  c->ctx = ctx;
  c->err = err;
  c->errlen = errlen;
  int rc = r->ops->spaces(r, space_info, c, err, errlen);
  free(c);
  return rc;
}

#define PLAIN "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_=,@:."

/* node without the spaces and tabs around its items and around '=' (the
 * node-list rule), into out[0..n); a blank inside a name or a value stays,
 * and is refused as not plain. Returns -1 when it does not fit. */
static int drop_item_blanks(const char *node, char *out, size_t n) {
  size_t len = strlen(node), o = 0;
  for (size_t i = 0; i < len; i++) {
    char c = node[i];
    if (c == ' ' || c == '\t') {
      size_t j = i, k = i;
      while (j > 0 && (node[j - 1] == ' ' || node[j - 1] == '\t'))
        j--;
      while (k < len && (node[k] == ' ' || node[k] == '\t'))
        k++;
      if (j == 0 || node[j - 1] == ',' || node[j - 1] == '=' || k == len || node[k] == ',' ||
          node[k] == '=')
        continue;
    }
    if (o + 1 >= n)
      return -1;
    out[o++] = c;
  }
  out[o] = '\0';
  return 0;
}

int idgen_registry_free(idgen_registry_t *r, const char *pool, const char *node, int force,
                        char *err, size_t errlen) {
  if (r->ops->free == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: %s keeps no leases to free",
                      r->ops->scheme);
  /* Pool names and tuples are plain ASCII: anything else is refused here,
   * quoted, so that no message below echoes raw bytes. */
  if (pool == NULL || strncmp(pool, "epoch=", 6) != 0 || strchr(pool, '/') != NULL ||
      strlen(pool) >= IDGEN_POOL_NAME_MAX || strspn(pool, PLAIN) != strlen(pool))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: pool \"%s\" is not a pool name (epoch=...,tick=...,"
                      "time@...,sequence@...: as listed)",
                      pool ? IDGEN_QUOTE(pool, strlen(pool), '"', 100) : "");
  char tuple[1024];
  if (node == NULL || drop_item_blanks(node, tuple, sizeof tuple) < 0 || tuple[0] == '\0' ||
      strspn(tuple, PLAIN) != strlen(tuple))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: \"%s\" is not a node tuple (NAME=VALUE,..., or 0x and its key, "
                      "as listed)",
                      node ? IDGEN_QUOTE(node, strlen(node), '"', 100) : "");
  return r->ops->free(r, pool, tuple, force, err, errlen);
}

int idgen__pct_decode(char *dst, size_t dstlen, const char *src, size_t n, int strict) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)src[i];
    if (c == '%' && i + 2 < n && isxdigit((unsigned char)src[i + 1]) &&
        isxdigit((unsigned char)src[i + 2])) {
      char hex[3] = {src[i + 1], src[i + 2], 0};
      c = (int)strtol(hex, NULL, 16);
      i += 2;
    } else if (c == '%' && strict) {
      return -1;
    }
    if ((c == 0 && strict) || o + 1 >= dstlen)
      return -1;
    dst[o++] = (char)c;
  }
  dst[o] = '\0';
  return 0;
}

/* 1 if the query parameter name[0..n) is one that holds a secret
 * (libpq's password and sslpassword), compared after percent-decoding and
 * case-folding, so that no spelling of it shows. */
static int secret_param(const char *name, size_t n) {
  static const char *const secrets[] = {"password", "sslpassword"};
  char dec[32];
  if (idgen__pct_decode(dec, sizeof dec, name, n, 0) < 0)
    return 0;
  for (char *c = dec; *c; c++)
    *c = (char)tolower((unsigned char)*c);
  for (size_t k = 0; k < sizeof secrets / sizeof secrets[0]; k++)
    if (strcmp(dec, secrets[k]) == 0)
      return 1;
  return 0;
}

/* A letter, digit or one of -._~%: a secret quoted in a message stands
 * between quotes or URI delimiters, never next to one of these, so a match
 * inside a word ("registry" for the password "y", "etcd:" for ":") is the
 * message's own text.  A secret that is a whole word of the message
 * ("etcd") is masked there too: masking too much is the safe side. */
static int uri_word_byte(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_' || c == '~' || c == '%';
}

/* Replaces every occurrence of secret[0..n) in err[errlen] that stands
 * alone (no such byte on either side) with "***". */
static void scrub_one(char *err, size_t errlen, const char *secret, size_t n) {
  char needle[1100];
  if (n == 0 || n >= sizeof needle)
    return;
  memcpy(needle, secret, n);
  needle[n] = '\0';
  for (char *from = err, *at; (at = strstr(from, needle)) != NULL;) {
    if ((at > err && uri_word_byte(at[-1])) || uri_word_byte(at[n])) {
      from = at + 1;
      continue;
    }
    from = at + 3;
    size_t pos = (size_t)(at - err), tail = strlen(at + n);
    if (pos + 4 > errlen) { /* no room for the mask: the message ends here */
      *at = '\0';
      return;
    }
    if (pos + 3 + tail + 1 > errlen)
      tail = errlen - pos - 4;
    memmove(at + 3, at + n, tail);
    at[3 + tail] = '\0';
    memcpy(at, "***", 3);
  }
}

/* A message about `uri` (a client library's, which may quote the part of
 * it that it could not read) with the URI's secrets masked, as given and
 * percent-decoded: what idgen_registry_uri_redact masks. */
static void scrub_secrets(char *err, size_t errlen, const char *uri) {
  if (err == NULL || errlen < 8 || uri == NULL || strlen(uri) >= 1000)
    return;
  char masked[2200], dec[1100];
  idgen_registry_uri_redact(uri, masked, sizeof masked);
  /* The secrets are what the mask replaced: walk both side by side. */
  const char *u = uri, *m = masked;
  while (*u && *m) {
    if (*u == *m && strncmp(m, "***", 3) != 0) {
      u++, m++;
      continue;
    }
    if (strncmp(m, "***", 3) != 0)
      return; /* cannot happen: the mask only replaces */
    /* the secret in u runs to the byte that follows the mask in m */
    char stop[2] = {m[3], 0};
    size_t n = stop[0] ? strcspn(u, stop) : strlen(u);
    scrub_one(err, errlen, u, n);
    if (idgen__pct_decode(dec, sizeof dec, u, n, 0) == 0)
      scrub_one(err, errlen, dec, strlen(dec));
    u += n, m += 3;
  }
}

char *idgen_registry_uri_redact(const char *uri, char *buf, size_t n) {
  if (n == 0)
    return buf;
  size_t o = 0;
#define PUT(p, len)                                                                                \
  do {                                                                                             \
    size_t l_ = (len);                                                                             \
    if (o + l_ >= n)                                                                               \
      l_ = n - 1 - o;                                                                              \
    memcpy(buf + o, (p), l_);                                                                      \
    o += l_;                                                                                       \
  } while (0)
  const char *p = uri ? uri : "", *auth = strstr(p, "://");
  if (auth != NULL) {
    auth += 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL; /* the last '@' of the authority ends the user info */
    for (size_t i = 0; i < alen; i++)
      if (auth[i] == '@')
        at = auth + i;
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon != NULL) {
      PUT(p, (size_t)(colon - p) + 1);
      PUT("***", 3);
      p = at;
    }
  }
  const char *q = strchr(p, '?');
  if (q == NULL) {
    PUT(p, strlen(p));
  } else {
    PUT(p, (size_t)(q - p) + 1);
    for (const char *item = q + 1;;) {
      size_t len = strcspn(item, "&#"), name = strcspn(item, "=&#");
      if (name < len && secret_param(item, name)) {
        PUT(item, name + 1);
        PUT("***", 3);
      } else {
        PUT(item, len);
      }
      item += len;
      if (*item != '&') {
        PUT(item, strlen(item)); /* "" or the fragment */
        break;
      }
      PUT("&", 1);
      item++;
    }
  }
#undef PUT
  buf[o] = '\0';
  return buf;
}

int idgen_registry_uri_with_space(const char *uri, const char *space, char *buf, size_t n,
                                  char *err, size_t errlen) {
  if (n > 0)
    buf[0] = '\0';
  size_t ulen = strlen(uri);
  if (space == NULL || space[0] == '\0') {
    if (ulen >= n)
      return idgen__err(err, errlen, IDGEN_ERANGE, "registry: the URI is longer than %zu bytes",
                        n > 0 ? n - 1 : 0);
    memcpy(buf, uri, ulen + 1);
    return 0;
  }
  if (strcspn(uri, ":") == 6 && strncmp(uri, "static", 6) == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, STATIC_NO_SPACES,
                      IDGEN_QUOTE(space, strlen(space), 0, 60));
  const char *q = strchr(uri, '?');
  for (const char *p = q; p != NULL; p = strchr(p + 1, '&'))
    if (strncmp(p + 1, "space", 5) == 0 && strchr("=&", p[6]) != NULL) /* (or its NUL) */
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: the registry URI names a space already (%s)",
                        IDGEN_QUOTE(p + 1, strcspn(p + 1, "&"), 0, 60));
  int rc = idgen__space_name_check(space, err, errlen);
  if (rc < 0)
    return rc;
  if (ulen + strlen(space) + 8 > n)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "registry: the URI with space=%s is longer than %zu bytes", space,
                      n > 0 ? n - 1 : 0);
  snprintf(buf, n, "%s%sspace=%s", uri, q ? "&" : "?", space);
  return 0;
}

const char *idgen_registry_uri(const idgen_registry_t *r) { return r->shown; }

/* The host's default registry (one registry per host, whatever the user:
 * docs/DESIGN.md §11, "The default registry").  A build may move it
 * (-DIDGEN_DEFAULT_REGISTRY_DIR=...); it never depends on the user, the
 * environment or the working directory. */
#ifndef IDGEN_DEFAULT_REGISTRY_DIR
#define IDGEN_DEFAULT_REGISTRY_DIR "/var/lib/idgen"
#endif

/* "alice (uid 1000)" for the effective user, into buf[n]; its name alone
 * into name[namelen] ("" if it has none). */
static void who_am_i(char *buf, size_t n, char *name, size_t namelen) {
  uid_t uid = geteuid();
  struct passwd pw, *res = NULL;
  char tmp[1024];
  name[0] = '\0';
  if (getpwuid_r(uid, &pw, tmp, sizeof tmp, &res) == 0 && res != NULL)
    snprintf(name, namelen, "%s", res->pw_name);
  if (name[0])
    snprintf(buf, n, "user %s (uid %u)", name, (unsigned)uid);
  else
    snprintf(buf, n, "uid %u", (unsigned)uid);
}

/* The name of group gid, or its number, into buf[n]. */
static void group_name(gid_t gid, char *buf, size_t n) {
  struct group gr, *res = NULL;
  char tmp[1024];
  if (getgrgid_r(gid, &gr, tmp, sizeof tmp, &res) == 0 && res != NULL)
    snprintf(buf, n, "%s", res->gr_name);
  else
    snprintf(buf, n, "%u", (unsigned)gid);
}

/* 1 if the process is in group gid (its own or a supplementary one). */
static int in_group(gid_t gid) {
  if (getegid() == gid)
    return 1;
  gid_t groups[256];
  int n = getgroups(256, groups);
  for (int i = 0; i < n; i++)
    if (groups[i] == gid)
      return 1;
  return 0;
}

/* "; an earlier idgen kept this user's default registry in file:DIR ..."
 * when the per-user directory an earlier version defaulted to exists (so
 * that its marks are not forgotten), else "". */
static void earlier_default(char *buf, size_t n) {
  const char *x = getenv("XDG_STATE_HOME"), *h = getenv("HOME");
  char dir[1100] = "";
  struct stat st;
  buf[0] = '\0';
  if (x != NULL && x[0] == '/')
    snprintf(dir, sizeof dir, "%s/idgen", x);
  if ((dir[0] == '\0' || stat(dir, &st) != 0) && h != NULL && h[0] == '/')
    snprintf(dir, sizeof dir, "%s/.local/state/idgen", h);
  if (dir[0] && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
    snprintf(buf, n,
             "; an earlier idgen kept this user's default registry in file:%.600s (give it by "
             "name to keep using it)",
             dir);
}

int idgen_registry_default_uri(char *buf, size_t n, char *err, size_t errlen) {
  static const char dir[] = IDGEN_DEFAULT_REGISTRY_DIR;
  static const char byname[] =
      "give a registry by name instead (--registry file:DIR for one of your own, which "
      "no other user's processes share; postgres://... or etcd://... across machines)";
  char who[300], name[256], earlier[700], grp[256];
  struct stat st;
  if (stat(dir, &st) == 0) {
    /* It exists: used by whoever may, refused to the others (never a
     * directory of their own instead: two registries on one host lease
     * the same worker IDs).  One shared with a group (set-group-ID) is the
     * group's members': a user let in by an ACL or by the others' bits
     * makes directories whose set-group-ID bit the kernel clears, and the
     * group's next members could not write in them. */
    int outsider = (st.st_mode & S_ISGID) && geteuid() != 0 && !in_group(st.st_gid);
    if (outsider && faccessat(AT_FDCWD, dir, R_OK | W_OK | X_OK, AT_EACCESS) == 0) {
      who_am_i(who, sizeof who, name, sizeof name);
      group_name(st.st_gid, grp, sizeof grp);
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: the host's default registry %s is shared with group %s, and "
                        "%s is not in it (what it made there would not be the group's): join "
                        "the group (as root: usermod -aG %s %s, then log in again), or %s",
                        dir, grp, who, grp, name[0] ? name : "USER", byname);
    }
    if (faccessat(AT_FDCWD, dir, R_OK | W_OK | X_OK, AT_EACCESS) != 0) {
      who_am_i(who, sizeof who, name, sizeof name);
      earlier_default(earlier, sizeof earlier);
      group_name(st.st_gid, grp, sizeof grp);
      if ((st.st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP))
        return idgen__err(err, errlen, IDGEN_EINVAL,
                          "registry: the host's default registry %s (group %s, mode %04o) is "
                          "not writable by %s: every process on the host that takes the "
                          "default shares it, so join its group (as root: usermod -aG %s %s, "
                          "then log in again), or %s%s",
                          dir, grp, (unsigned)(st.st_mode & 07777), who, grp,
                          name[0] ? name : "USER", byname, earlier);
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: the host's default registry %s (group %s, mode %04o) is "
                        "not writable by %s and not shared with a group: every process on the "
                        "host that takes the default shares it, so share it (as root, with "
                        "its holders stopped: chgrp -R GROUP %s && chmod -R g+rwX %s && find %s "
                        "-type d -exec chmod g+s {} +, then add the users to GROUP; the idgen "
                        "package makes it for group idgen), or %s%s",
                        dir, grp, (unsigned)(st.st_mode & 07777), who, dir, dir, dir, byname,
                        earlier);
    }
  } else {
    char parent[sizeof dir];
    snprintf(parent, sizeof parent, "%s", dir);
    *strrchr(parent, '/') = '\0';
    if (errno != ENOENT ||
        faccessat(AT_FDCWD, parent[0] ? parent : "/", W_OK | X_OK, AT_EACCESS) != 0) {
      who_am_i(who, sizeof who, name, sizeof name);
      earlier_default(earlier, sizeof earlier);
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: the host's default registry %s does not exist and %s cannot "
                        "create it: make it once for every user of idgen on the host (as root: "
                        "install -d -m 2770 -g GROUP %s, then add the users to GROUP; the idgen "
                        "package makes it for group idgen), or %s%s",
                        dir, who, dir, byname, earlier);
    }
  }
  int rc = snprintf(buf, n, "file:%s", dir);
  if (rc < 0 || (size_t)rc >= n)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: the default path is too long");
  return 0;
}

void idgen_lease_release(idgen_lease_t *l) {
  if (l == NULL)
    return;
  if (l->fork_gen == idgen__fork_gen()) {
    idgen__bounded_release(l); /* frees it, now or when its call is done */
    return;
  }
  free(l->be);
  free(l);
}

/* ---- static: the node values as given; nothing is coordinated ---------- */

static int static_check(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)uri;
  if (rest[0] != '\0')
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: static takes no argument");
  return 0;
}

static int static_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  (void)r, (void)rest, (void)err, (void)errlen;
  return 0;
}

static int static_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                          size_t errlen) {
  /* The tuple as given: nothing compares it with anyone's. */
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
    .version = IDGEN__REGISTRY_OPS_VERSION,
    .scheme = "static",
    .check = static_check,
    .mark_step_ms = 1000,
    .expires = 0,
    .open = static_open,
    .acquire = static_acquire,
    .renew = static_renew,
    .mark = static_mark,
    .release = static_release,
};

/* ---- client libraries loaded on first use ---- */

/* One lock for every load.  fork() takes it first (the handlers below,
 * registered when the library is loaded), so a child is never made while
 * another thread is inside dlopen(): that child's dynamic loader would be
 * half-updated, and its own first open failed or crashed. */
static pthread_mutex_t dynlib_mu = PTHREAD_MUTEX_INITIALIZER;
static void dynlib_lock(void) { pthread_mutex_lock(&dynlib_mu); }
static void dynlib_unlock(void) { pthread_mutex_unlock(&dynlib_mu); }
void idgen__fork_lock(void) { dynlib_lock(); }
void idgen__fork_unlock(void) { dynlib_unlock(); }
__attribute__((constructor)) static void dynlib_init(void) {
  pthread_atfork(dynlib_lock, dynlib_unlock, dynlib_unlock);
  /* jansson seeds its hash tables on the first json_object(); a thread
   * that is not first spins (sched_yield) until the first is done, and a
   * child forked while the first was inside spins for ever: its etcd://
   * open hung in registry.fork_first_open (etcd, 3000 us, gdb: spinning in
   * json_object_seed).  Seeded here, before the program's threads. */
#ifndef IDGEN_NO_ETCD
  json_object_seed(0);
#endif
}

static void dynlib_load(idgen__dynlib_t *d) {
  void *h = dlopen(d->soname, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    snprintf(d->why, sizeof d->why, "%s", dlerror());
    return;
  }
  for (size_t i = 0; i < d->n; i++)
    if ((d->fns[i] = dlsym(h, d->names[i])) == NULL) {
      snprintf(d->why, sizeof d->why, "%s has no %s (too old)", d->soname, d->names[i]);
      return; /* the handle stays: a library that has been loaded is never unloaded */
    }
}

int idgen__dynlib_need(idgen__dynlib_t *d, const char *pfx, char *err, size_t errlen) {
  dynlib_lock();
  if (!d->tried) {
    dynlib_load(d);
    if (d->why[0] == '\0' && d->init != NULL)
      d->init(); /* a library's own global set-up: a fork must not split it either */
    d->tried = 1;
  }
  int loaded = d->why[0] == '\0';
  dynlib_unlock();
  if (loaded)
    return 0;
  return idgen__err(err, errlen, IDGEN_EREGISTRY, "%sneeds %s (Debian package %s): %s", pfx,
                    d->soname, d->package, d->why);
}
