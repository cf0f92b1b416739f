/*
 * addon.c -- idgen for Node.js, over Node-API (js/README.md).
 *
 * One class, Snowflake: a generator of any layout, its node values leased
 * from a registry as the command line's are (file: by default, postgres://,
 * etcd://, or static with the values given), and module functions for
 * ULIDs.  Every failure is thrown as an Error whose `code` is the library's
 * name for it ("ECLOCK", "ELEASE") and whose message is the library's, as
 * the CLI prints it.  A generator's lease is released by close(), when the
 * object is collected, and when the environment ends (process exit, a
 * worker thread's end).
 *
 * Node-API, not V8's API: one build serves every Node.js version with
 * Node-API 8 (Node 12.22 and later).  JavaScript runs on one thread per
 * environment, so a generator is used by one thread at a time here; the
 * library's own threads (the lease keeper) are the library's business.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "idgen.h"

#define ERR_MAX 1100

/* ---- errors ------------------------------------------------------------ */

/* Throws Error(message) with .code = the library's name for rc. */
static void throw_idgen(napi_env env, int rc, const char *msg) {
  napi_value code, text, e;
  napi_create_string_utf8(env, idgen_err_name(rc), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, msg && msg[0] ? msg : idgen_strerror(rc), NAPI_AUTO_LENGTH, &text);
  napi_create_error(env, code, text, &e);
  napi_throw(env, e);
}

/* A TypeError for a wrong argument type, with .code EINVAL. */
static void throw_type(napi_env env, const char *msg) { napi_throw_type_error(env, "EINVAL", msg); }

/* ---- argument helpers -------------------------------------------------- */

/* obj[name] into *v and its type: 1 present, 0 absent (undefined or null),
 * -1 on a failed call (an exception pending). */
static int opt_get(napi_env env, napi_value obj, const char *name, napi_value *v,
                   napi_valuetype *t) {
  if (napi_get_named_property(env, obj, name, v) != napi_ok || napi_typeof(env, *v, t) != napi_ok)
    return -1;
  return *t == napi_undefined || *t == napi_null ? 0 : 1;
}

/* obj[name] as a string into buf: 1 found, 0 absent (undefined or null),
 * -1 thrown (not a string, or too long). */
static int opt_string(napi_env env, napi_value obj, const char *name, char *buf, size_t n) {
  napi_value v;
  napi_valuetype t;
  int got = opt_get(env, obj, name, &v, &t);
  if (got <= 0)
    return got;
  char msg[160];
  if (t != napi_string) {
    snprintf(msg, sizeof msg, "option %s must be a string", name);
    throw_type(env, msg);
    return -1;
  }
  size_t len;
  napi_get_value_string_utf8(env, v, NULL, 0, &len);
  if (len + 1 > n) {
    snprintf(msg, sizeof msg, "option %s is longer than %zu bytes", name, n - 1);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  napi_get_value_string_utf8(env, v, buf, n, &len);
  if (strlen(buf) != len) {
    snprintf(msg, sizeof msg, "option %s holds a NUL character", name);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  return 1;
}

/* obj[name] as a whole number from lo to hi into *out: 1 found, 0 absent,
 * -1 thrown. */
static int opt_int(napi_env env, napi_value obj, const char *name, int64_t lo, int64_t hi,
                   int64_t *out) {
  napi_value v;
  napi_valuetype t;
  int got = opt_get(env, obj, name, &v, &t);
  if (got <= 0)
    return got;
  double d;
  char msg[200];
  if (t != napi_number || napi_get_value_double(env, v, &d) != napi_ok || d != (double)(int64_t)d ||
      d < (double)lo || d > (double)hi) {
    snprintf(msg, sizeof msg, "option %s must be a whole number from %lld to %lld", name,
             (long long)lo, (long long)hi);
    throw_idgen(env, IDGEN_ERANGE, msg);
    return -1;
  }
  *out = (int64_t)d;
  return 1;
}

static void set_str(napi_env env, napi_value o, const char *name, const char *v) {
  napi_value x;
  napi_create_string_utf8(env, v, NAPI_AUTO_LENGTH, &x);
  napi_set_named_property(env, o, name, x);
}

static void set_num(napi_env env, napi_value o, const char *name, double v) {
  napi_value x;
  napi_create_double(env, v, &x);
  napi_set_named_property(env, o, name, x);
}

/* ---- Snowflake ----------------------------------------------------------- */

typedef struct sf {
  idgen_layout_t layout;
  idgen_registry_t *reg;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *gen;
  napi_env env;
  struct sf *prev, *next; /* the environment's live generators, for its cleanup */
} sf_t;

/* What the addon keeps per environment (its instance data): the live
 * generators, and the layout decode() parsed last (decoding many IDs of one
 * layout parses it once). */
typedef struct {
  sf_t *head;
  char layout_text[IDGEN_LAYOUT_SPEC_MAX];
  idgen_layout_t layout;
} sf_list_t;

static void sf_close(sf_t *s) {
  idgen_snowflake_gen_free(s->gen);
  idgen_lease_release(s->lease);
  idgen_registry_close(s->reg);
  s->gen = NULL;
  s->lease = NULL;
  s->reg = NULL;
}

static void sf_unlink(sf_list_t *list, sf_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else if (list->head == s)
    list->head = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

static sf_list_t *env_list(napi_env env) {
  sf_list_t *list = NULL;
  napi_get_instance_data(env, (void **)&list);
  return list;
}

/* The object was collected: its lease goes back. */
static void sf_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  sf_t *s = data;
  sf_list_t *list = env_list(env);
  if (list)
    sf_unlink(list, s);
  sf_close(s);
  free(s);
}

/* The environment ends (process exit, a worker's end): every lease goes
 * back, before the objects' finalizers (which then find them closed). */
static void env_cleanup(void *arg) {
  sf_list_t *list = arg;
  for (sf_t *s = list->head; s; s = s->next)
    sf_close(s);
}

static void env_free(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  sf_list_t *list = data;
  while (list->head)
    sf_unlink(list, list->head);
  free(list);
}

/* The layout option: a preset's name or a layout spec. */
static int parse_layout(napi_env env, const char *text, idgen_layout_t *l) {
  char err[ERR_MAX];
  int rc = idgen_layout_parse(l, text, err, sizeof err); /* a preset keeps its name */
  if (rc < 0)
    throw_idgen(env, rc, err);
  return rc;
}

/* new Snowflake({layout, registry, node, leaseField, ttlMs, maxWaitMs,
 * maxBorrowMs, maxStartWaitMs, randomSequenceStart}) */
static napi_value sf_new(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], self;
  napi_get_cb_info(env, info, &argc, argv, &self, NULL);
  napi_valuetype t = napi_undefined;
  if (argc >= 1)
    napi_typeof(env, argv[0], &t);
  if (t != napi_object && t != napi_undefined) {
    throw_type(env, "new Snowflake(options): options must be an object");
    return NULL;
  }
  napi_value o = argv[0];
  if (t == napi_undefined)
    napi_create_object(env, &o);

  char layout[IDGEN_LAYOUT_SPEC_MAX] = "twitter", registry[2048] = "", node[1024] = "";
  char field[64] = "", clock[16] = "", err[ERR_MAX];
  int64_t ttl = 0, wait = -1, borrow = -1, start_wait = -1, rss = 0;
  int has_field;
  if (opt_string(env, o, "layout", layout, sizeof layout) < 0 ||
      opt_string(env, o, "registry", registry, sizeof registry) < 0 ||
      opt_string(env, o, "node", node, sizeof node) < 0 ||
      opt_string(env, o, "clock", clock, sizeof clock) < 0 ||
      (has_field = opt_string(env, o, "leaseField", field, sizeof field)) < 0 ||
      opt_int(env, o, "ttlMs", 0, IDGEN_LEASE_TTL_MAX_MS, &ttl) < 0 ||
      opt_int(env, o, "maxWaitMs", 0, 3600000, &wait) < 0 ||
      opt_int(env, o, "maxBorrowMs", 0, 3600000, &borrow) < 0 ||
      opt_int(env, o, "maxStartWaitMs", 0, IDGEN_START_WAIT_MS_MAX, &start_wait) < 0 ||
      opt_int(env, o, "randomSequenceStart", 0, 1, &rss) < 0)
    return NULL;

  if (clock[0] && strcmp(clock, "fast") != 0 && strcmp(clock, "precise") != 0 &&
      strcmp(clock, "coarse") != 0) {
    throw_idgen(env, IDGEN_EINVAL, "option clock must be \"fast\", \"precise\" or \"coarse\"");
    return NULL;
  }
  sf_t *s = calloc(1, sizeof *s);
  if (s == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  if (parse_layout(env, layout, &s->layout) < 0) {
    free(s);
    return NULL;
  }
  idgen_snowflake_settings_t set;
  idgen_snowflake_settings_init(&set);
  if (wait >= 0)
    set.max_wait_ms = wait;
  if (borrow >= 0)
    set.max_borrow_ms = borrow;
  set.random_sequence_start = (int)rss;
  set.clock_mode = strcmp(clock, "precise") == 0  ? IDGEN_CLOCK_PRECISE
                   : strcmp(clock, "coarse") == 0 ? IDGEN_CLOCK_COARSE
                                                  : IDGEN_CLOCK_FAST;
  unsigned given = 0;
  int rc = idgen_layout_nodes_parse(&s->layout, node, idgen_host_node_resolve, NULL, set.node,
                                    &given, err, sizeof err);
  int from_host = strchr(node, '@') != NULL;
  if (rc == 0 && registry[0] == 0)
    rc = idgen_registry_default_uri(registry, sizeof registry, err, sizeof err);
  int leased = -1;
  const char *setting = NULL;
  char why[ERR_MAX - 80];
  if (rc == 0 &&
      (rc = idgen_lease_settings_check(registry, &s->layout, has_field ? field : NULL, given,
                                       from_host, &leased, &setting, why, sizeof why)) < 0)
    snprintf(err, sizeof err, "%s: %s", setting ? setting : "options", why);
  if (rc == 0)
    rc = idgen_registry_open(&s->reg, registry, err, sizeof err);
  if (rc == 0) {
    idgen_bind_request_t req = {.layout = &s->layout,
                                .settings = &set,
                                .field = has_field ? field : NULL,
                                .ttl_ms = ttl,
                                .max_start_wait_ms = start_wait};
    rc = idgen_registry_bind(s->reg, &req, &s->lease, &s->gen, err, sizeof err);
  }
  if (rc < 0) {
    sf_close(s);
    free(s);
    throw_idgen(env, rc, err);
    return NULL;
  }
  s->env = env;
  if (napi_wrap(env, self, s, sf_finalize, NULL, NULL) != napi_ok) {
    sf_close(s);
    free(s);
    throw_idgen(env, IDGEN_ENOMEM, "cannot attach the generator to its object");
    return NULL;
  }
  sf_list_t *list = env_list(env);
  s->next = list->head;
  if (list->head)
    list->head->prev = s;
  list->head = s;
  return self;
}

/* this's generator, or NULL with an exception thrown (closed, or not one). */
static sf_t *sf_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  napi_value self;
  size_t n = argc ? *argc : 0;
  napi_get_cb_info(env, info, argc ? argc : &n, argv, &self, NULL);
  sf_t *s = NULL;
  if (napi_unwrap(env, self, (void **)&s) != napi_ok || s == NULL) {
    throw_type(env, "not a Snowflake generator");
    return NULL;
  }
  if (s->gen == NULL) {
    throw_idgen(env, IDGEN_EINVAL, "the generator is closed");
    return NULL;
  }
  return s;
}

static int sf_next_id(napi_env env, sf_t *s, uint64_t *id) {
  int rc = idgen_snowflake_gen_next(s->gen, id);
  if (rc < 0)
    throw_idgen(env, rc, NULL);
  return rc;
}

/* next() → BigInt */
static napi_value sf_next(napi_env env, napi_callback_info info) {
  sf_t *s = sf_this(env, info, NULL, NULL);
  uint64_t id;
  napi_value v = NULL;
  if (s && sf_next_id(env, s, &id) == 0)
    napi_create_bigint_uint64(env, id, &v);
  return v;
}

/* nextString() → the decimal digits */
static napi_value sf_next_string(napi_env env, napi_callback_info info) {
  sf_t *s = sf_this(env, info, NULL, NULL);
  uint64_t id;
  napi_value v = NULL;
  if (s && sf_next_id(env, s, &id) == 0) {
    char text[24], *p = text + sizeof text;
    do { /* the digits from the end: no printf on this path */
      *--p = (char)('0' + id % 10);
      id /= 10;
    } while (id);
    napi_create_string_latin1(env, p, (size_t)(text + sizeof text - p), &v);
  }
  return v;
}

/* nextBatch(n) → BigUint64Array of n increasing IDs, all or none. */
static napi_value sf_next_batch(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  sf_t *s = sf_this(env, info, &argc, argv);
  if (s == NULL)
    return NULL;
  double d = 0;
  napi_valuetype t = napi_undefined;
  if (argc >= 1)
    napi_typeof(env, argv[0], &t);
  if (t != napi_number || napi_get_value_double(env, argv[0], &d) != napi_ok || d < 1 ||
      d > 1000000 || d != (double)(int64_t)d) {
    throw_idgen(env, IDGEN_ERANGE, "nextBatch(n): n must be a whole number from 1 to 1000000");
    return NULL;
  }
  size_t n = (size_t)d;
  void *data;
  napi_value buf, arr;
  if (napi_create_arraybuffer(env, n * sizeof(uint64_t), &data, &buf) != napi_ok) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  int rc = idgen_snowflake_gen_next_n(s->gen, data, n);
  if (rc < 0) {
    throw_idgen(env, rc, NULL);
    return NULL;
  }
  napi_create_typedarray(env, napi_biguint64_array, n, buf, 0, &arr);
  return arr;
}

/* ---- the async variant: nothing waits on the event loop -------------------- */

/* A call that waits for its tick: its reserved values and where it stands. */
typedef struct sf_wait {
  idgen_snowflake_wait_t w;
  size_t n;
  uint64_t ids[];
} sf_wait_t;

static void wait_finalize(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  free(data);
}

/* The outcome of a start or resume: the IDs as a BigUint64Array, or
 * {wait, waitMs} to resume after waitMs (the index.js wrapper's timer); NULL
 * with an exception thrown. */
static napi_value wait_outcome(napi_env env, int rc, sf_wait_t *sw, napi_value handle) {
  if (rc == 0) {
    void *data;
    napi_value buf, arr;
    if (napi_create_arraybuffer(env, sw->n * sizeof(uint64_t), &data, &buf) != napi_ok) {
      throw_idgen(env, IDGEN_ENOMEM, NULL);
      return NULL;
    }
    memcpy(data, sw->ids, sw->n * sizeof(uint64_t));
    napi_create_typedarray(env, napi_biguint64_array, sw->n, buf, 0, &arr);
    return arr;
  }
  if (rc != IDGEN_EAGAIN) {
    throw_idgen(env, rc, NULL);
    return NULL;
  }
  /* due_ns is by the generator's clock: the wall clock's reading now gives
   * the wait, which a timer (monotonic) then measures. */
  int64_t now_ns = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) * 1000000;
  int64_t ms = (sw->w.due_ns - now_ns + 999999) / 1000000;
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "wait", handle);
  set_num(env, o, "waitMs", (double)(ms < 0 ? 0 : ms > 3600000 ? 3600000 : ms));
  return o;
}

/* _batchStart(n): see wait_outcome. */
static napi_value sf_batch_start(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  sf_t *s = sf_this(env, info, &argc, argv);
  double d = 0;
  if (s == NULL)
    return NULL;
  if (argc < 1 || napi_get_value_double(env, argv[0], &d) != napi_ok || d < 1 || d > 1000000 ||
      d != (double)(int64_t)d) {
    throw_idgen(env, IDGEN_ERANGE, "n must be a whole number from 1 to 1000000");
    return NULL;
  }
  size_t n = (size_t)d;
  sf_wait_t *sw = calloc(1, sizeof *sw + n * sizeof(uint64_t));
  if (sw == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  sw->n = n;
  int rc = idgen_snowflake_gen_next_n_async(s->gen, sw->ids, n, &sw->w);
  napi_value handle = NULL;
  if (rc == IDGEN_EAGAIN &&
      napi_create_external(env, sw, wait_finalize, NULL, &handle) != napi_ok) {
    free(sw);
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  napi_value v = wait_outcome(env, rc, sw, handle);
  if (rc != IDGEN_EAGAIN)
    free(sw);
  return v;
}

/* _batchResume(wait): see wait_outcome. */
static napi_value sf_batch_resume(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  sf_t *s = sf_this(env, info, &argc, argv);
  sf_wait_t *sw = NULL;
  if (s == NULL)
    return NULL;
  if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&sw) != napi_ok || sw == NULL ||
      sw->n == 0) {
    throw_type(env, "_batchResume: not a waiting call");
    return NULL;
  }
  int rc = idgen_snowflake_gen_resume(s->gen, &sw->w, sw->ids);
  napi_value v = wait_outcome(env, rc, sw, argv[0]);
  if (rc != IDGEN_EAGAIN)
    sw->n = 0; /* ended: a second resume is refused */
  return v;
}

/* close(): the lease goes back now; later calls throw. */
static napi_value sf_close_js(napi_env env, napi_callback_info info) {
  napi_value self;
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, NULL, &self, NULL);
  sf_t *s = NULL;
  if (napi_unwrap(env, self, (void **)&s) == napi_ok && s)
    sf_close(s);
  return NULL;
}

/* lease() → {worker, node, pool, space, holder, markMs, registry} or null
 * (static). */
static napi_value sf_lease(napi_env env, napi_callback_info info) {
  sf_t *s = sf_this(env, info, NULL, NULL);
  if (s == NULL)
    return NULL;
  napi_value o;
  if (s->lease == NULL) {
    napi_get_null(env, &o);
    return o;
  }
  idgen_lease_info_t li;
  idgen_lease_info(s->lease, &li);
  napi_create_object(env, &o);
  set_num(env, o, "worker", (double)li.worker);
  set_str(env, o, "node", li.node);
  set_str(env, o, "pool", li.pool);
  set_str(env, o, "space", li.space);
  set_str(env, o, "holder", li.holder);
  set_num(env, o, "markMs", (double)li.mark_ms);
  set_str(env, o, "registry", idgen_registry_uri(s->reg));
  return o;
}

/* ---- ULID and UUIDv7 ------------------------------------------------------ */

/* A monotonic ULID or UUIDv7 generator: one class each, one struct. */
typedef struct g128 {
  int uuid; /* 0: ULID, 1: UUIDv7 */
  idgen_ulid_gen_t *ulid;
  idgen_uuid7_gen_t *uuid7;
} g128_t;

static void g128_finalize(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  g128_t *g = data;
  idgen_ulid_gen_free(g->ulid);
  idgen_uuid7_gen_free(g->uuid7);
  free(g);
}

static napi_value g128_new(napi_env env, napi_callback_info info, int uuid) {
  napi_value self;
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, NULL, &self, NULL);
  g128_t *g = calloc(1, sizeof *g);
  if (g == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  g->uuid = uuid;
  int rc = uuid ? idgen_uuid7_gen_new(&g->uuid7, NULL) : idgen_ulid_gen_new(&g->ulid, NULL);
  if (rc < 0 || napi_wrap(env, self, g, g128_finalize, NULL, NULL) != napi_ok) {
    g128_finalize(env, g, NULL);
    throw_idgen(env, rc < 0 ? rc : IDGEN_ENOMEM, NULL);
    return NULL;
  }
  return self;
}

static napi_value ulid_gen_new(napi_env env, napi_callback_info info) {
  return g128_new(env, info, 0);
}

static napi_value uuid7_gen_new(napi_env env, napi_callback_info info) {
  return g128_new(env, info, 1);
}

/* next() → the next ULID (26 characters) or UUIDv7 (36), increasing. */
static napi_value g128_next(napi_env env, napi_callback_info info) {
  napi_value self, v;
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, NULL, &self, NULL);
  g128_t *g = NULL;
  if (napi_unwrap(env, self, (void **)&g) != napi_ok || g == NULL) {
    throw_type(env, "not a ULID or UUIDv7 generator");
    return NULL;
  }
  char text[IDGEN_UUID_STRLEN + 1];
  int rc;
  if (g->uuid) {
    idgen_uuid_t u;
    if ((rc = idgen_uuid7_gen_next(g->uuid7, &u)) == 0)
      idgen_uuid_format(&u, text);
  } else {
    idgen_ulid_t u;
    if ((rc = idgen_ulid_gen_next(g->ulid, &u)) == 0)
      idgen_ulid_format(&u, text);
  }
  if (rc < 0) {
    throw_idgen(env, rc, NULL);
    return NULL;
  }
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &v);
  return v;
}

/* The string argument i (at most n - 1 bytes) into buf, or -1 thrown. */
static int arg_string(napi_env env, napi_callback_info info, size_t i, const char *what, char *buf,
                      size_t n, size_t *len) {
  size_t argc = 2;
  napi_value argv[2];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  napi_valuetype t = napi_undefined;
  if (i < argc)
    napi_typeof(env, argv[i], &t);
  char msg[120];
  if (t != napi_string) {
    snprintf(msg, sizeof msg, "%s must be a string", what);
    throw_type(env, msg);
    return -1;
  }
  napi_get_value_string_utf8(env, argv[i], NULL, 0, len);
  if (*len + 1 > n) {
    snprintf(msg, sizeof msg, "%s is %zu bytes long: longer than any ID", what, *len);
    throw_idgen(env, IDGEN_EPARSE, msg);
    return -1;
  }
  napi_get_value_string_utf8(env, argv[i], buf, n, len);
  return 0;
}

/* ulidToUuid(text) and uuidToUlid(text): the same 128 bits in the other
 * form; to_uuid picks the direction. */
static napi_value convert(napi_env env, napi_callback_info info, int to_uuid) {
  char in[128], err[ERR_MAX], text[IDGEN_UUID_STRLEN + 1];
  size_t len;
  if (arg_string(env, info, 0, to_uuid ? "ulidToUuid(ulid): ulid" : "uuidToUlid(uuid): uuid", in,
                 sizeof in, &len) < 0)
    return NULL;
  idgen_ulid_t u;
  idgen_uuid_t x;
  int rc = to_uuid ? idgen_ulid_parse(&u, in, len, IDGEN_ULID_STRICT, err, sizeof err)
                   : idgen_uuid_parse(&x, in, len, err, sizeof err);
  if (rc < 0) {
    throw_idgen(env, rc, err);
    return NULL;
  }
  if (to_uuid) {
    idgen_ulid_to_uuid(&u, &x);
    idgen_uuid_format(&x, text);
  } else {
    idgen_ulid_from_uuid(&x, &u);
    idgen_ulid_format(&u, text);
  }
  napi_value v;
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &v);
  return v;
}

static napi_value ulid_to_uuid(napi_env env, napi_callback_info info) {
  return convert(env, info, 1);
}

static napi_value uuid_to_ulid(napi_env env, napi_callback_info info) {
  return convert(env, info, 0);
}

/* The environment's parsed layout for `text` (the last one asked for is
 * kept), or NULL with the error thrown. */
static const idgen_layout_t *layout_cached(napi_env env, const char *text) {
  sf_list_t *e = env_list(env);
  if (e->layout_text[0] && strcmp(e->layout_text, text) == 0)
    return &e->layout;
  e->layout_text[0] = 0;
  if (parse_layout(env, text, &e->layout) < 0)
    return NULL;
  snprintf(e->layout_text, sizeof e->layout_text, "%s", text);
  return &e->layout;
}

/* layoutInfo(layout) → the layout's geometry as JSON text (layout_info_json:
 * the planner's input, and the shifts decode() reads Snowflake IDs by in
 * JavaScript), or the CLI's message thrown. */
static napi_value layout_info_js(napi_env env, napi_callback_info info) {
  char text[IDGEN_LAYOUT_SPEC_MAX], json[LAYOUT_INFO_MAX];
  size_t len;
  if (arg_string(env, info, 0, "layout", text, sizeof text, &len) < 0)
    return NULL;
  const idgen_layout_t *l = layout_cached(env, text);
  if (l == NULL)
    return NULL;
  int n = layout_info_json(l, json, sizeof json);
  if (n < 0) {
    throw_idgen(env, IDGEN_ERANGE, NULL);
    return NULL;
  }
  napi_value v;
  napi_create_string_utf8(env, json, (size_t)n, &v);
  return v;
}

/* Decodes argument 0 (text) in the layout of argument 1 into d, or -1
 * thrown with the CLI's message (EPARSE). */
static int decode_args(napi_env env, napi_callback_info info, decoded_t *d) {
  char in[128], layout[IDGEN_LAYOUT_SPEC_MAX], err[ERR_MAX];
  size_t len, llen;
  if (arg_string(env, info, 0, "decode(id): id", in, sizeof in, &len) < 0 ||
      arg_string(env, info, 1, "decode(id, {layout}): layout", layout, sizeof layout, &llen) < 0)
    return -1;
  const idgen_layout_t *l = layout_cached(env, layout);
  if (l == NULL)
    return -1;
  if (decode_id(l, in, len, 0, d, err, sizeof err) < 0) {
    throw_idgen(env, IDGEN_EPARSE, err);
    return -1;
  }
  return 0;
}

/* decodeJson(text, layout) → the JSON text of `idgen decode --json` (the
 * oracle the tests hold decode() to), or the CLI's message thrown. */
static napi_value decode_json_js(napi_env env, napi_callback_info info) {
  decoded_t d;
  if (decode_args(env, info, &d) < 0)
    return NULL;
  json_t *j = decoded_json(&d);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (text == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  napi_value v;
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &v);
  free(text);
  return v;
}

/* A field's value: a Number when exact (below 2^53), else a BigInt. */
static void set_u64(napi_env env, napi_value o, const char *name, uint64_t v) {
  napi_value x;
  if (v < (UINT64_C(1) << 53))
    napi_create_double(env, (double)v, &x);
  else
    napi_create_bigint_uint64(env, v, &x);
  napi_set_named_property(env, o, name, x);
}

/* decode(text, layout) → the object of `idgen decode --json`, made here
 * with the same keys in the same order (decoded_json's). */
static napi_value decode_js(napi_env env, napi_callback_info info) {
  decoded_t d;
  if (decode_args(env, info, &d) < 0)
    return NULL;
  napi_value o, f;
  napi_create_object(env, &o);
  set_str(env, o, "id", d.id);
  switch (d.kind) {
  case DECODED_SNOWFLAKE:
    set_str(env, o, "kind", "snowflake");
    set_str(env, o, "layout", d.layout_name);
    set_num(env, o, "unix_ms", (double)d.unix_ms);
    set_str(env, o, "time", d.time);
    napi_create_object(env, &f);
    for (int i = 0; i < d.layout->nfields; i++)
      if (i != d.layout->time_index)
        set_u64(env, f, d.layout->fields[i].name, d.values[i]);
    napi_set_named_property(env, o, "fields", f);
    break;
  case DECODED_ULID:
    set_str(env, o, "kind", "ulid");
    set_num(env, o, "unix_ms", (double)d.unix_ms);
    set_str(env, o, "time", d.time);
    set_str(env, o, "uuid", d.uuid);
    break;
  case DECODED_UUID:
    set_str(env, o, "kind", "uuid");
    set_num(env, o, "version", d.version);
    if (strcmp(d.variant, "rfc9562") != 0)
      set_str(env, o, "variant", d.variant);
    if (d.has_time) {
      set_num(env, o, "unix_ms", (double)d.unix_ms);
      set_str(env, o, "time", d.time);
    }
    break;
  }
  return o;
}

/* ---- ULID (one-off) -------------------------------------------------------- */

/* ulid() → a new ULID's 26 characters (not monotonic). */
static napi_value ulid_js(napi_env env, napi_callback_info info) {
  (void)info;
  idgen_ulid_t u;
  int rc = idgen_ulid_make(&u, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), NULL);
  if (rc < 0) {
    throw_idgen(env, rc, NULL);
    return NULL;
  }
  char text[27];
  idgen_ulid_format(&u, text);
  napi_value v;
  napi_create_string_utf8(env, text, 26, &v);
  return v;
}

/* ---- the module ---------------------------------------------------------- */

static napi_value init(napi_env env, napi_value exports) {
  sf_list_t *list = calloc(1, sizeof *list);
  if (list == NULL || napi_set_instance_data(env, list, env_free, NULL) != napi_ok) {
    free(list);
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  napi_add_env_cleanup_hook(env, env_cleanup, list);
  napi_property_descriptor methods[] = {
      {"next", NULL, sf_next, NULL, NULL, NULL, napi_default, NULL},
      {"nextString", NULL, sf_next_string, NULL, NULL, NULL, napi_default, NULL},
      {"nextBatch", NULL, sf_next_batch, NULL, NULL, NULL, napi_default, NULL},
      {"lease", NULL, sf_lease, NULL, NULL, NULL, napi_default, NULL},
      {"_batchStart", NULL, sf_batch_start, NULL, NULL, NULL, napi_default, NULL},
      {"_batchResume", NULL, sf_batch_resume, NULL, NULL, NULL, napi_default, NULL},
      {"close", NULL, sf_close_js, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_value cls, fn, ver;
  napi_define_class(env, "Snowflake", NAPI_AUTO_LENGTH, sf_new, NULL,
                    sizeof methods / sizeof methods[0], methods, &cls);
  napi_set_named_property(env, exports, "Snowflake", cls);
  napi_property_descriptor gen_methods[] = {
      {"next", NULL, g128_next, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_class(env, "UlidGenerator", NAPI_AUTO_LENGTH, ulid_gen_new, NULL, 1, gen_methods,
                    &cls);
  napi_set_named_property(env, exports, "UlidGenerator", cls);
  napi_define_class(env, "Uuid7Generator", NAPI_AUTO_LENGTH, uuid7_gen_new, NULL, 1, gen_methods,
                    &cls);
  napi_set_named_property(env, exports, "Uuid7Generator", cls);
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {{"ulid", ulid_js},
             {"ulidToUuid", ulid_to_uuid},
             {"uuidToUlid", uuid_to_ulid},
             {"decodeJson", decode_json_js},
             {"decode", decode_js},
             {"layoutInfo", layout_info_js}};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn);
    napi_set_named_property(env, exports, fns[i].name, fn);
  }
  napi_create_string_utf8(env, idgen_version(), NAPI_AUTO_LENGTH, &ver);
  napi_set_named_property(env, exports, "version", ver);
  napi_value borrow; /* plan()'s default, as `idgen plan` has it */
  napi_create_int64(env, IDGEN_MAX_BORROW_MS_DEFAULT, &borrow);
  napi_set_named_property(env, exports, "maxBorrowMsDefault", borrow);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
