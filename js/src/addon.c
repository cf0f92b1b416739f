/*
 * addon.c -- idgen for Node.js, over Node-API (js/README.md).
 *
 * One class, Snowflake: a generator of any layout, its node values leased
 * from a registry as the command line's are (file: by default, postgres://,
 * etcd://, or static with the values given), and module functions for
 * ULIDs; and Sequence, dense numbers of a named counter in a registry
 * (idgen_seq_*), released as a generator's lease is; and Public, the keyed
 * public form of IDs (idgen_public_*).  Every failure is thrown as an Error
 * whose `code` is the library's name for it ("ECLOCK", "ELEASE") and whose
 * message is the library's, as the CLI prints it.  A generator's lease is released by close(), when the
 * object is collected, and when the environment ends (a normal exit, a
 * worker thread's end).
 *
 * The event loop never waits for a registry: Snowflake.open() leases, and
 * close(), a collected generator and the environment's end release, each on
 * a detached thread of its own (the "jobs" below), so a registry that does
 * not answer (a frozen file system, a server gone) holds that thread only.
 * The library bounds those calls (IDGEN_REGISTRY_CALL_MS); the constructor,
 * which leases on the JavaScript thread, waits up to that bound.
 *
 * Node-API, not V8's API: one build serves every Node.js version with
 * Node-API 8 (Node 12.22 and later).  JavaScript runs on one thread per
 * environment, so a generator is used by one thread at a time here; the
 * library's own threads (the lease keeper) are the library's business.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#define NAPI_VERSION 8
#include <node_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decode.h"
#include "options.h"
#include "idgen.h"

#define ERR_MAX 1100
#define REGISTRY_MAX 2048 /* the registry option's URI, with its space */

/* ---- errors ------------------------------------------------------------ */

/* A Node-API call that did not return napi_ok: its Error thrown (code
 * EINVAL, Node-API's message), unless an exception is pending already (the
 * call met one: a getter that threw, the environment's end).  -1. */
static int call_failed(napi_env env, napi_status st, const char *call) {
  const napi_extended_error_info *info = NULL; /* (asked first: the next call resets it) */
  const char *why =
      napi_get_last_error_info(env, &info) == napi_ok && info != NULL && info->error_message != NULL
          ? info->error_message
          : "failed";
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || pending)
    return -1;
  char msg[200];
  snprintf(msg, sizeof msg, "Node-API %.*s: %s (status %d)", (int)strcspn(call, "("), call, why,
           (int)st);
  (void)napi_throw_error(env, idgen_err_name(IDGEN_EINVAL), msg); /* (failing, no more to say) */
  return -1;
}

static int call_ok(napi_env env, napi_status st, const char *call) {
  return st == napi_ok || call_failed(env, st, call) == 0;
}

/* Every Node-API call goes through one of these, as Node-API's
 * documentation has it: NAPI_OK(env, call) is 1 for napi_ok, else 0 with
 * the Error thrown (call_failed); NAPI_CALL returns NULL from the calling
 * function (a callback: the exception is its outcome), NAPI_CALL_RET the
 * given value. */
#define NAPI_OK(env, call) call_ok((env), (call), #call)
#define NAPI_CALL_RET(env, call, ret)                                                              \
  do {                                                                                             \
    if (!NAPI_OK(env, call))                                                                       \
      return ret;                                                                                  \
  } while (0)
#define NAPI_CALL(env, call) NAPI_CALL_RET(env, call, NULL)

/* Error(message) with .code = the library's name for rc; NULL thrown. */
static napi_value make_error(napi_env env, int rc, const char *msg) {
  napi_value code, text, e;
  NAPI_CALL(env, napi_create_string_utf8(env, idgen_err_name(rc), NAPI_AUTO_LENGTH, &code));
  NAPI_CALL(env, napi_create_string_utf8(env, msg && msg[0] ? msg : idgen_strerror(rc),
                                         NAPI_AUTO_LENGTH, &text));
  NAPI_CALL(env, napi_create_error(env, code, text, &e));
  return e;
}

/* Throws make_error(rc, msg). */
static void throw_idgen(napi_env env, int rc, const char *msg) {
  napi_value e = make_error(env, rc, msg);
  if (e != NULL)
    NAPI_CALL_RET(env, napi_throw(env, e), );
}

/* A TypeError for a wrong argument type, with .code EINVAL. */
static void throw_type(napi_env env, const char *msg) {
  NAPI_CALL_RET(env, napi_throw_type_error(env, "EINVAL", msg), );
}

/* ---- argument helpers -------------------------------------------------- */

/* obj[name] into *v and its type: 1 present, 0 absent (undefined or null),
 * -1 thrown (a getter that threw, or a failed call). */
static int opt_get(napi_env env, napi_value obj, const char *name, napi_value *v,
                   napi_valuetype *t) {
  NAPI_CALL_RET(env, napi_get_named_property(env, obj, name, v), -1);
  NAPI_CALL_RET(env, napi_typeof(env, *v, t), -1);
  return *t == napi_undefined || *t == napi_null ? 0 : 1;
}

/* v (NULL: absent) as a string of at most n - 1 bytes into buf and its
 * length in bytes into *len: 0, or -1 thrown.  Not a string: a TypeError,
 * "<what> must be a string".  With a name: "<name> is longer than <max>
 * bytes" or "<name> holds a NUL character" (EINVAL).  Without (an ID's
 * text): "<what> is <length> bytes long: longer than any ID" (EPARSE), and
 * a NUL inside is left to the reader, which has the length. */
static int str_take(napi_env env, napi_value v, const char *what, const char *name, size_t max,
                    char *buf, size_t n, size_t *len) {
  napi_valuetype t = napi_undefined;
  char msg[200];
  if (v != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, v, &t), -1);
  if (t != napi_string) {
    snprintf(msg, sizeof msg, "%s must be a string", what);
    throw_type(env, msg);
    return -1;
  }
  NAPI_CALL_RET(env, napi_get_value_string_utf8(env, v, NULL, 0, len), -1);
  if (*len + 1 > n) {
    if (name != NULL)
      snprintf(msg, sizeof msg, "%s is longer than %zu bytes", name, max);
    else
      snprintf(msg, sizeof msg, "%s is %zu bytes long: longer than any ID", what, *len);
    throw_idgen(env, name != NULL ? IDGEN_EINVAL : IDGEN_EPARSE, msg);
    return -1;
  }
  NAPI_CALL_RET(env, napi_get_value_string_utf8(env, v, buf, n, len), -1);
  if (name != NULL && strlen(buf) != *len) {
    snprintf(msg, sizeof msg, "%s holds a NUL character", name);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  return 0;
}

/* obj[name] as a string into buf: 1 found, 0 absent (undefined or null),
 * -1 thrown (not a string, or too long). */
static int opt_string(napi_env env, napi_value obj, const char *name, char *buf, size_t n) {
  napi_value v;
  napi_valuetype t;
  int got = opt_get(env, obj, name, &v, &t);
  if (got <= 0)
    return got;
  char what[100];
  size_t len;
  snprintf(what, sizeof what, "option %s", name);
  return str_take(env, v, what, what, n - 1, buf, n, &len) < 0 ? -1 : 1;
}

/* obj[name] and its type into *t, and into *d its value if a number (else
 * 0): 1 present, 0 absent, -1 thrown. */
static int opt_number(napi_env env, napi_value obj, const char *name, napi_valuetype *t,
                      double *d) {
  napi_value v;
  int got = opt_get(env, obj, name, &v, t);
  *d = 0;
  if (got > 0 && *t == napi_number)
    NAPI_CALL_RET(env, napi_get_value_double(env, v, d), -1);
  return got;
}

/* obj[name] as a whole number from lo to hi (the library's bounds) into
 * *out: 1 found, 0 absent, -1 thrown. */
static int opt_int(napi_env env, napi_value obj, const char *name, int64_t lo, int64_t hi,
                   int64_t *out) {
  napi_valuetype t;
  double d;
  int got = opt_number(env, obj, name, &t, &d);
  if (got <= 0)
    return got;
  char msg[200];
  if (t != napi_number || d != (double)(int64_t)d || d < (double)lo || d > (double)hi) {
    snprintf(msg, sizeof msg, "option %s must be a whole number from %lld to %lld", name,
             (long long)lo, (long long)hi);
    throw_idgen(env, IDGEN_ERANGE, msg);
    return -1;
  }
  *out = (int64_t)d;
  return 1;
}

/* o[name] = a number: 0, or -1 thrown. */
static int set_num(napi_env env, napi_value o, const char *name, double v) {
  napi_value x;
  NAPI_CALL_RET(env, napi_create_double(env, v, &x), -1);
  NAPI_CALL_RET(env, napi_set_named_property(env, o, name, x), -1);
  return 0;
}

/* A property of an object made here: the value v if not NULL, else the
 * string s if not NULL, else the number n.  PROP_* write one. */
typedef struct {
  const char *name;
  napi_value v;
  const char *s;
  double n;
} prop_t;
#define PROP_VAL(name, v)                                                                          \
  { name, v, NULL, 0 }
#define PROP_STR(name, s)                                                                          \
  { name, NULL, s, 0 }
#define PROP_NUM(name, n)                                                                          \
  { name, NULL, NULL, (double)(n) }

/* A new object of the n properties p, in their order: it, or NULL thrown. */
static napi_value props_object(napi_env env, const prop_t *p, size_t n) {
  napi_value o, x;
  NAPI_CALL(env, napi_create_object(env, &o));
  for (size_t i = 0; i < n; i++) {
    if ((x = p[i].v) == NULL && p[i].s != NULL)
      NAPI_CALL(env, napi_create_string_utf8(env, p[i].s, NAPI_AUTO_LENGTH, &x));
    else if (x == NULL)
      NAPI_CALL(env, napi_create_double(env, p[i].n, &x));
    NAPI_CALL(env, napi_set_named_property(env, o, p[i].name, x));
  }
  return o;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Snowflake ----------------------------------------------------------- */

/* What a generator holds of its registry: what close() gives back.  A
 * Sequence holds the registry and its sequence (seq), no lease. */
typedef struct {
  idgen_registry_t *reg;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *gen;
  idgen_seq_t *seq;
} sf_hold_t;

typedef struct sf {
  sf_hold_t h;            /* all NULL once closed */
  int is_seq;             /* a Sequence's, not a Snowflake's */
  struct sf *prev, *next; /* the environment's live objects, for its cleanup */
} sf_t;

/* The options of new Snowflake() and Snowflake.open(), as read from the
 * object (on the JavaScript thread); made into a generator by sf_make,
 * there or on a thread of its own. */
typedef struct {
  char layout[IDGEN_LAYOUT_SPEC_MAX], registry[REGISTRY_MAX], node[1024], field[64], clock[16];
  char space[IDGEN_SPACE_NAME_MAX];
  idgen_clock_mode_t clock_mode; /* of `clock`, by the library's words */
  int has_field;
  int64_t ttl, wait, borrow, start_wait, rss;
} sf_opts_t;

/* What the addon keeps per environment (its instance data).  The first
 * fields are the JavaScript thread's: the live generators, the layout
 * decode() parsed last (decoding many IDs of one layout parses it once),
 * the class (open() makes its objects) and the thread-safe function by
 * which jobs (below) come back.  The rest is shared with the jobs' threads,
 * under mu; the struct is freed by whichever of the environment, its
 * thread-safe function and its jobs lets go of it last (refs). */
typedef struct {
  sf_t *head;
  char layout_text[IDGEN_LAYOUT_SPEC_MAX];
  idgen_layout_t layout;
  napi_ref cls, seq_cls;
  sf_t *adopt; /* open()'s generator (or Sequence.open()'s), for the constructor to take */
  napi_threadsafe_function tsf; /* jobs back to this thread; ref'd while promised > 0 */
  int promised;                 /* jobs whose promise is pending */
  pthread_mutex_t mu;
  pthread_cond_t idle; /* `running` fell (CLOCK_MONOTONIC) */
  int refs, running;
  int gone; /* the environment is ending: jobs may not call tsf */
} env_t;

/* Generators of this process (every environment) holding a lease, made and
 * neither closed nor collected: what a full pool's message counts. */
static atomic_long unclosed;

/* At an environment's end (a normal exit, a worker's end), how long it
 * waits for the releases under way: a release's three writes (the keeper's
 * last, the final mark, the release) each held to the library's bound.  One
 * that takes longer is left to the process's end, which lets go of a file:
 * lease's lock; the mark on record already covers every ID issued
 * (durable), and a network lease expires by its TTL. */
#define ENV_END_WAIT_MS (3 * IDGEN_REGISTRY_CALL_MS)

/* The environment's env_t, or NULL thrown. */
static env_t *env_of(napi_env env) {
  env_t *e = NULL;
  NAPI_CALL(env, napi_get_instance_data(env, (void **)&e));
  return e;
}

static void env_unref(env_t *e) {
  pthread_mutex_lock(&e->mu);
  int last = --e->refs == 0;
  pthread_mutex_unlock(&e->mu);
  if (last) {
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
  }
}

/* Gives everything back: the generator (its keeper threads stop, the final
 * mark is written), the lease, the registry.  Each may wait for the
 * registry (bounded by the library: IDGEN_REGISTRY_CALL_MS for a file:
 * registry), so never on the JavaScript thread when a lease is held. */
static void hold_free(sf_hold_t *h) {
  if (h->seq)
    idgen_seq_close(h->seq); /* gives back the unissued rest */
  idgen_snowflake_gen_free(h->gen);
  idgen_lease_release(h->lease);
  idgen_registry_close(h->reg);
  memset(h, 0, sizeof *h);
}

/* Everything s holds, taken from it: s issues nothing from now on. */
static sf_hold_t sf_detach(sf_t *s) {
  sf_hold_t h = s->h;
  memset(&s->h, 0, sizeof s->h);
  if (h.lease)
    atomic_fetch_sub(&unclosed, 1);
  return h;
}

static void sf_unlink(env_t *e, sf_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else if (e->head == s)
    e->head = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

/* The registry option (REGISTRY_MAX bytes) made the URI to open: the
 * host's default when empty, then in the space option's space when one is
 * given (the library's one rule).  0, or the error in err. */
static int registry_resolve(char *registry, const char *space, char *err, size_t errlen) {
  int rc = 0;
  if (registry[0] == 0)
    rc = idgen_registry_default_uri(registry, REGISTRY_MAX, err, errlen);
  if (rc == 0 && space[0]) {
    char uri[REGISTRY_MAX];
    if ((rc = idgen_registry_uri_with_space(registry, space, uri, sizeof uri, err, errlen)) == 0)
      snprintf(registry, REGISTRY_MAX, "%s", uri);
  }
  return rc;
}

/* Makes a generator of o into *h: the layout, the node values, the
 * registry (its default), the lease and the binding.  No JavaScript: this
 * runs on open()'s thread too.  0, or the error with its message in err and
 * nothing held. */
static int sf_make(sf_opts_t *o, sf_hold_t *h, char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  err[0] = 0;
  idgen_layout_t layout;
  int rc = idgen_layout_parse(&layout, o->layout, err, errlen); /* a preset keeps its name */
  if (rc < 0)
    return rc;
  idgen_snowflake_settings_t set;
  idgen_snowflake_settings_init(&set);
  if (o->wait >= 0)
    set.max_wait_ms = o->wait;
  if (o->borrow >= 0)
    set.max_borrow_ms = o->borrow;
  set.random_sequence_start = (int)o->rss;
  set.clock_mode = o->clock_mode;
  unsigned given = 0;
  rc = idgen_layout_nodes_parse(&layout, o->node, idgen_host_node_resolve, NULL, set.node, &given,
                                err, errlen);
  int from_host = strchr(o->node, '@') != NULL;
  if (rc == 0)
    rc = registry_resolve(o->registry, o->space, err, errlen);
  static const char *const option[] = {[IDGEN_LEASE_SETTING_NONE] = "options",
                                       [IDGEN_LEASE_SETTING_REGISTRY] = "registry",
                                       [IDGEN_LEASE_SETTING_LAYOUT] = "layout",
                                       [IDGEN_LEASE_SETTING_NODE] = "node",
                                       [IDGEN_LEASE_SETTING_FIELD] = "leaseField"};
  char why[ERR_MAX - 80];
  const char *field = o->has_field ? o->field : NULL;
  idgen_lease_settings_t ls = {.uri = o->registry,
                               .layout = &layout,
                               .field = field,
                               .node_given = given,
                               .node_from_host = from_host};
  if (rc == 0 && (rc = idgen_lease_settings_verify(&ls, why, sizeof why)) < 0)
    snprintf(err, errlen, "%s: %s", option[ls.blame], why);
  if (rc == 0)
    rc = idgen_registry_open(&h->reg, o->registry, err, errlen);
  if (rc == 0) {
    idgen_bind_request_t req = {.layout = &layout,
                                .settings = &set,
                                .field = field,
                                .ttl_ms = o->ttl,
                                .max_start_wait_ms = o->start_wait};
    rc = idgen_registry_bind(h->reg, &req, &h->lease, &h->gen, err, errlen);
  }
  if (rc < 0)
    hold_free(h); /* the registry only: nothing was leased */
  return rc;
}

/* A full pool's message says how many of this process's own generators
 * hold a lease without having been closed (or collected yet): a loop that
 * drops them unclosed fills the pool before the collector gives them back. */
static void pool_note(int rc, char *err, size_t errlen) {
  long n = atomic_load(&unclosed);
  size_t len = strlen(err);
  if (rc != IDGEN_EPOOLFULL || n <= 0 || len + 1 >= errlen)
    return;
  snprintf(err + len, errlen - len,
           "%s(%ld generator%s of this process %s made and not closed: call close(), or await "
           "using)",
           len ? " " : "", n, n == 1 ? "" : "s", n == 1 ? "was" : "were");
}

/* Whose options an object holds: a Snowflake's and a Sequence's names are
 * the library's (src/common/options.c), a Public's the addon's. */
typedef enum { OPTS_SNOWFLAKE, OPTS_SEQUENCE, OPTS_PUBLIC } opts_kind_t;

static const char *const pub_option_names[] = {"keyFile", "key",  "keyVersion", "kind",
                                               "layout",  "bits", "prefix",     "version"};

/* 1 with the message in msg if name (cut: longer than any) is not one of
 * kind's options, else 0. */
static int opts_name_unknown(opts_kind_t kind, const char *name, int cut, char *msg, size_t n) {
  size_t j = 0, nn = sizeof pub_option_names / sizeof pub_option_names[0];
  switch (kind) {
  case OPTS_SNOWFLAKE:
    if (!cut && options_known(name))
      return 0;
    options_unknown_message(name, msg, n);
    return 1;
  case OPTS_SEQUENCE:
    if (!cut && seq_options_known(name))
      return 0;
    seq_options_unknown_message(name, msg, n);
    return 1;
  default:
    while (j < nn && strcmp(name, pub_option_names[j]) != 0)
      j++;
    if (!cut && j < nn)
      return 0;
    snprintf(msg, n,
             "new Public(options): unknown option \"%s\" (known: keyFile, key, keyVersion, "
             "kind, layout, bits, prefix, version)",
             name);
    return 1;
  }
}

/* Every own enumerable name of the options object is one of kind's: a
 * misspelt name is refused, never read as its default.  0, or -1 thrown. */
static int opts_names_check(napi_env env, napi_value o, opts_kind_t kind) {
  napi_value keys, k;
  uint32_t n = 0;
  NAPI_CALL_RET(env,
                napi_get_all_property_names(env, o, napi_key_own_only,
                                            napi_key_enumerable | napi_key_skip_symbols,
                                            napi_key_numbers_to_strings, &keys),
                -1);
  NAPI_CALL_RET(env, napi_get_array_length(env, keys, &n), -1);
  for (uint32_t i = 0; i < n; i++) {
    char name[64], msg[300];
    size_t len = 0;
    NAPI_CALL_RET(env, napi_get_element(env, keys, i, &k), -1);
    NAPI_CALL_RET(env, napi_get_value_string_utf8(env, k, name, sizeof name, &len), -1);
    if (opts_name_unknown(kind, name, len + 1 >= sizeof name, msg, sizeof msg)) {
      throw_idgen(env, IDGEN_EINVAL, msg);
      return -1;
    }
  }
  return 0;
}

/* options into o, each bound and the clock's word the library's: 0, or -1
 * thrown. */
static int opts_read(napi_env env, napi_value o, sf_opts_t *out, const char *call) {
  napi_valuetype t = napi_undefined;
  if (o != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, o, &t), -1);
  if (t != napi_object && t != napi_undefined) {
    char msg[120];
    snprintf(msg, sizeof msg, "%s: options must be an object", call);
    throw_type(env, msg);
    return -1;
  }
  if (t == napi_undefined)
    NAPI_CALL_RET(env, napi_create_object(env, &o), -1);
  else if (opts_names_check(env, o, OPTS_SNOWFLAKE) < 0)
    return -1;
  memset(out, 0, sizeof *out);
  snprintf(out->layout, sizeof out->layout, "twitter");
  out->wait = out->borrow = out->start_wait = -1;
  if (opt_string(env, o, "layout", out->layout, sizeof out->layout) < 0 ||
      opt_string(env, o, "registry", out->registry, sizeof out->registry) < 0 ||
      opt_string(env, o, "space", out->space, sizeof out->space) < 0 ||
      opt_string(env, o, "node", out->node, sizeof out->node) < 0 ||
      opt_string(env, o, "clock", out->clock, sizeof out->clock) < 0 ||
      (out->has_field = opt_string(env, o, "leaseField", out->field, sizeof out->field)) < 0 ||
      opt_int(env, o, "ttlMs", 0, IDGEN_LEASE_TTL_MAX_MS, &out->ttl) < 0 ||
      opt_int(env, o, "maxWaitMs", 0, IDGEN_MAX_WAIT_MS_MAX, &out->wait) < 0 ||
      opt_int(env, o, "maxBorrowMs", 0, IDGEN_MAX_BORROW_MS_MAX, &out->borrow) < 0 ||
      opt_int(env, o, "maxStartWaitMs", 0, IDGEN_START_WAIT_MS_MAX, &out->start_wait) < 0 ||
      opt_int(env, o, "randomSequenceStart", 0, 1, &out->rss) < 0)
    return -1;
  char err[160], msg[200];
  out->clock_mode = IDGEN_CLOCK_FAST;
  if (out->clock[0] && idgen_clock_mode_parse(out->clock, &out->clock_mode, err, sizeof err) < 0) {
    snprintf(msg, sizeof msg, "option clock: %s", err);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  return 0;
}

/* ---- jobs: registry work off the JavaScript thread --------------------- */

/* An acquisition (open()) or a release (close(), a collected generator, the
 * environment's end), on a detached thread of its own: a registry that does
 * not answer holds that thread, never the event loop nor libuv's pool
 * (which the program's file system calls share).  A job someone awaits
 * comes back through the environment's thread-safe function, which keeps
 * the event loop alive meanwhile; one nobody awaits ends on its thread. */
/* The options of new Sequence(name, {...}), read on the JavaScript thread. */
typedef struct {
  char registry[REGISTRY_MAX], space[IDGEN_SPACE_NAME_MAX], format[512], tz[128];
  idgen_seq_settings_t set;
} seq_opts_t;

typedef struct {
  env_t *e;
  napi_deferred deferred; /* NULL: nobody waits */
  int open;               /* 1: sf_make of o (seq_make of name, so); 0: hold_free of h */
  int seq;                /* Sequence.open()'s */
  sf_hold_t h;
  int rc;
  char err[ERR_MAX];
  sf_opts_t o;
  char name[IDGEN_SEQ_NAME_MAX + 8];
  seq_opts_t so;
} job_t;

static int seq_make(const char *name, seq_opts_t *o, sf_hold_t *h, char *err, size_t errlen);
static int seq_name_read(napi_env env, napi_value v, char *buf, size_t n, const char *call);
static int seq_opts_read(napi_env env, napi_value o, seq_opts_t *out);

/* A job that will not come back to JavaScript: what an acquisition made is
 * given back here (on its own thread, or at the environment's teardown). */
static void job_drop(job_t *j) {
  if (j->open && j->rc == 0)
    hold_free(&j->h);
  env_unref(j->e);
  free(j);
}

/* The acquisition j asks for: a Sequence's (j->seq) or a Snowflake's, into
 * j->h, j->rc and j->err.  No JavaScript: on a job's thread, or the
 * constructor's. */
static void job_make(job_t *j) {
  j->rc = j->seq ? seq_make(j->name, &j->so, &j->h, j->err, sizeof j->err)
                 : sf_make(&j->o, &j->h, j->err, sizeof j->err);
}

static void *job_main(void *arg) {
  job_t *j = arg;
  env_t *e = j->e;
  if (j->open)
    job_make(j);
  else
    hold_free(&j->h);
  pthread_mutex_lock(&e->mu);
  int sent = 0;
  if (j->deferred && !e->gone) {
    /* Under mu: the environment's end sets `gone` under it before the
     * function is finalized, so it is alive here. */
    napi_status st = napi_call_threadsafe_function(e->tsf, j, napi_tsfn_nonblocking);
    sent = st == napi_ok;
    if (st == napi_closing)
      e->gone = 1;
  }
  e->running--;
  pthread_cond_broadcast(&e->idle);
  pthread_mutex_unlock(&e->mu);
  if (!sent)
    job_drop(j);
  return NULL;
}

/* Starts j on a thread of its own (the JavaScript thread only): 0, or -1
 * if no thread could be had, or the event loop could not be held for it
 * (thrown; j is still the caller's).  A job someone awaits holds the event
 * loop (the thread-safe function ref'd) from before it starts. */
static int job_start(napi_env env, env_t *e, job_t *j) {
  if (j->deferred && e->promised == 0)
    NAPI_CALL_RET(env, napi_ref_threadsafe_function(env, e->tsf), -1);
  j->e = e;
  pthread_mutex_lock(&e->mu);
  e->refs++;
  e->running++;
  pthread_mutex_unlock(&e->mu);
  /* The thread (and the keeper threads an acquisition starts from it)
   * with every signal blocked: the process's handlers run on Node's. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t a;
  pthread_t t;
  int ok = pthread_attr_init(&a) == 0;
  ok = ok && pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) == 0 &&
       pthread_create(&t, &a, job_main, j) == 0;
  pthread_attr_destroy(&a);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!ok) {
    pthread_mutex_lock(&e->mu);
    e->refs--; /* the environment holds one more: not the last */
    e->running--;
    pthread_mutex_unlock(&e->mu);
    if (j->deferred && e->promised == 0)
      NAPI_CALL_RET(env, napi_unref_threadsafe_function(env, e->tsf), -1);
    return -1;
  }
  if (j->deferred)
    e->promised++;
  return 0;
}

/* Gives h back: at once when nothing of it can wait for a registry (closed
 * already, or the static registry), else on a job's thread, which settles
 * `deferred` (if not NULL) when done.  1 if a job took it (and the
 * deferred), 0 if done here. */
static int hold_release(napi_env env, env_t *e, sf_hold_t h, napi_deferred deferred) {
  if (h.lease == NULL && h.seq == NULL) {
    hold_free(&h);
    return 0;
  }
  job_t *j = calloc(1, sizeof *j);
  if (j != NULL) {
    j->h = h;
    j->deferred = deferred;
    if (job_start(env, e, j) == 0)
      return 1;
    free(j);
  }
  hold_free(&h); /* no memory or no thread: here, as before there were jobs */
  return 0;
}

/* s closed: hold_release of what it held. */
static int sf_release(napi_env env, env_t *e, sf_t *s, napi_deferred deferred) {
  return hold_release(env, e, sf_detach(s), deferred);
}

static void sf_finalize(napi_env env, void *data, void *hint);

/* Wraps s into the object self and counts it among the live ones: 0, or -1
 * thrown (s is still the caller's). */
static int sf_attach(napi_env env, env_t *e, napi_value self, sf_t *s) {
  NAPI_CALL_RET(env, napi_wrap(env, self, s, sf_finalize, NULL, NULL), -1);
  s->next = e->head;
  if (e->head)
    e->head->prev = s;
  e->head = s;
  if (s->h.lease)
    atomic_fetch_add(&unclosed, 1);
  return 0;
}

/* The object was collected: its lease goes back, off this thread. */
static void sf_finalize(napi_env env, void *data, void *hint) {
  (void)hint;
  sf_t *s = data;
  env_t *e = NULL; /* (no exception from a finalizer: none is thrown here) */
  if (napi_get_instance_data(env, (void **)&e) != napi_ok)
    e = NULL;
  if (e) {
    sf_unlink(e, s);
    sf_release(env, e, s, NULL);
  } else {
    sf_hold_t h = sf_detach(s);
    hold_free(&h);
  }
  free(s);
}

/* Settles d: rejected with `error` if not NULL, else resolved with v
 * (NULL: undefined).  A failure is thrown (from a thread-safe function's
 * call: an uncaught exception). */
static void settle(napi_env env, napi_deferred d, napi_value v, napi_value error) {
  if (error != NULL) {
    NAPI_CALL_RET(env, napi_reject_deferred(env, d, error), );
    return;
  }
  if (v == NULL)
    NAPI_CALL_RET(env, napi_get_undefined(env, &v), );
  NAPI_CALL_RET(env, napi_resolve_deferred(env, d, v), );
}

/* open()'s generator made by job j, as an object of the class: the
 * constructor takes it (e->adopt) instead of making one.  NULL if it could
 * not be made, the hold still j's and the reason thrown. */
static napi_value job_adopt(napi_env env, env_t *e, job_t *j) {
  sf_t *s = calloc(1, sizeof *s);
  napi_value cls, obj = NULL;
  if (s == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, "cannot make the object");
    return NULL;
  }
  s->h = j->h;
  s->is_seq = j->seq;
  e->adopt = s;
  if (!NAPI_OK(env, napi_get_reference_value(env, j->seq ? e->seq_cls : e->cls, &cls)) ||
      !NAPI_OK(env, napi_new_instance(env, cls, 0, NULL, &obj)))
    obj = NULL;
  if (e->adopt == s) { /* not taken: the hold is still the job's */
    e->adopt = NULL;
    free(s);
    obj = NULL;
  }
  return obj;
}

/* A job is back on the JavaScript thread (env NULL: the environment is
 * being torn down and the job's promise with it). */
static void job_back(napi_env env, napi_value cb, void *context, void *data) {
  (void)cb;
  env_t *e = context;
  job_t *j = data;
  if (env == NULL) {
    job_drop(j);
    return;
  }
  if (--e->promised == 0)
    (void)NAPI_OK(env, napi_unref_threadsafe_function(env, e->tsf));
  if (!j->open) {
    settle(env, j->deferred, NULL, NULL);
  } else if (j->rc < 0) {
    pool_note(j->rc, j->err, sizeof j->err);
    settle(env, j->deferred, NULL, make_error(env, j->rc, j->err));
  } else {
    napi_value obj = job_adopt(env, e, j);
    if (obj != NULL) {
      settle(env, j->deferred, obj, NULL);
    } else {
      bool pending = false;
      napi_value exc = NULL;
      if (NAPI_OK(env, napi_is_exception_pending(env, &pending)) && pending)
        (void)NAPI_OK(env, napi_get_and_clear_last_exception(env, &exc));
      settle(env, j->deferred, NULL,
             exc ? exc : make_error(env, IDGEN_ENOMEM, "cannot make the object"));
      hold_release(env, e, j->h, NULL);
    }
  }
  env_unref(e);
  free(j);
}

static void tsf_finalize(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  env_t *e = data;
  pthread_mutex_lock(&e->mu);
  e->gone = 1;
  pthread_mutex_unlock(&e->mu);
  env_unref(e);
}

/* The environment ends (a normal exit, a worker's end; not process.exit()):
 * every lease goes back, before the objects' finalizers (which then find
 * them closed), each on a thread of its own, all together within
 * ENV_END_WAIT_MS. */
static void env_cleanup(void *arg) {
  env_t *e = arg;
  for (sf_t *s = e->head; s; s = s->next)
    sf_release(NULL, e, s, NULL);
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += ENV_END_WAIT_MS / 1000;
  until.tv_nsec += (ENV_END_WAIT_MS % 1000) * 1000000L;
  if (until.tv_nsec >= 1000000000L) {
    until.tv_sec++;
    until.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&e->mu);
  while (e->running > 0 && pthread_cond_timedwait(&e->idle, &e->mu, &until) != ETIMEDOUT)
    ;
  e->gone = 1; /* jobs still running end on their threads */
  pthread_mutex_unlock(&e->mu);
}

static void env_free(napi_env env, void *data, void *hint) {
  (void)hint;
  env_t *e = data;
  while (e->head)
    sf_unlink(e, e->head);
  if (e->cls && napi_delete_reference(env, e->cls) != napi_ok)
    e->cls = NULL; /* (nobody to throw to: it goes with the environment) */
  if (e->seq_cls && napi_delete_reference(env, e->seq_cls) != napi_ok)
    e->seq_cls = NULL;
  env_unref(e);
}

/* The arguments of a Snowflake's making, (options), or a Sequence's
 * (j->seq), (name, options), into j; their errors name the call: open()'s
 * (open) or the constructor's.  0, or -1 thrown. */
static int job_args(napi_env env, job_t *j, size_t argc, napi_value *argv, int open) {
  napi_value arg0 = argc >= 1 ? argv[0] : NULL;
  if (!j->seq)
    return opts_read(env, arg0, &j->o, open ? "Snowflake.open(options)" : "new Snowflake(options)");
  if (seq_name_read(env, arg0, j->name, sizeof j->name, open ? "Sequence.open" : "new Sequence") <
          0 ||
      seq_opts_read(env, argc >= 2 ? argv[1] : NULL, &j->so) < 0)
    return -1;
  return 0;
}

/* A constructor called by job_adopt takes the object an open() made
 * (e->adopt) into self: 1 taken, 0 none (the constructor makes one), -1
 * thrown (not taken: job_back gives it back). */
static int adopt_this(napi_env env, env_t *e, napi_value self) {
  sf_t *s = e->adopt;
  e->adopt = NULL;
  if (s == NULL)
    return 0;
  if (sf_attach(env, e, self, s) < 0) {
    e->adopt = s;
    return -1;
  }
  return 1;
}

/* A constructor's new s into self: self, or NULL thrown (what s holds
 * given back here, and s freed). */
static napi_value attach_new(napi_env env, env_t *e, napi_value self, sf_t *s) {
  if (sf_attach(env, e, self, s) < 0) {
    hold_free(&s->h);
    free(s);
    return NULL;
  }
  return self;
}

/* new Snowflake({layout, registry, node, leaseField, ttlMs, maxWaitMs,
 * maxBorrowMs, maxStartWaitMs, randomSequenceStart, clock}) (seq 0) and
 * new Sequence(name, {registry, space, minStep, maxStep, step, prefetch,
 * ahead, segmentTargetMs, ttlMs, waitMs, strict, format, tz}) (seq 1):
 * made here, on the JavaScript thread, each registry call bounded by the
 * library (open() makes them on a thread of its own, then here takes what
 * it made).  The request is a job's, never started. */
static napi_value held_new(napi_env env, napi_callback_info info, int seq) {
  size_t argc = 2;
  napi_value argv[2] = {NULL, NULL}, self;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, &self, NULL));
  env_t *e = env_of(env);
  if (e == NULL)
    return NULL;
  int adopted = adopt_this(env, e, self);
  if (adopted != 0)
    return adopted > 0 ? self : NULL;
  job_t *j = calloc(1, sizeof *j);
  sf_t *s = NULL;
  if (j == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  j->seq = seq;
  j->rc = -1;
  if (job_args(env, j, argc, argv, 0) == 0 && (s = calloc(1, sizeof *s)) == NULL)
    throw_idgen(env, IDGEN_ENOMEM, NULL);
  else if (s != NULL)
    job_make(j);
  if (s != NULL && j->rc < 0) {
    if (!seq) /* (Sequence.open()'s failure has the note too: job_back) */
      pool_note(j->rc, j->err, sizeof j->err);
    throw_idgen(env, j->rc, j->err);
  }
  int rc = j->rc;
  if (rc == 0) {
    s->h = j->h;
    s->is_seq = seq;
  }
  free(j);
  if (rc < 0) {
    free(s);
    return NULL;
  }
  return attach_new(env, e, self, s);
}

static napi_value sf_new(napi_env env, napi_callback_info info) { return held_new(env, info, 0); }

/* this's object, or NULL with an exception thrown: closed, or not one of
 * the kind asked for (a Sequence when `seq`, else a Snowflake generator). */
static sf_t *held_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv,
                       int seq) {
  napi_value self;
  size_t n = argc ? *argc : 0;
  NAPI_CALL(env, napi_get_cb_info(env, info, argc ? argc : &n, argv, &self, NULL));
  sf_t *s = NULL;
  /* (a status other than napi_ok here is the answer: not one of ours) */
  if (napi_unwrap(env, self, (void **)&s) != napi_ok || s == NULL ||
      (s->is_seq != 0) != (seq != 0)) {
    throw_type(env, seq ? "not a Sequence" : "not a Snowflake generator");
    return NULL;
  }
  if (seq ? s->h.seq == NULL : s->h.gen == NULL) {
    throw_idgen(env, IDGEN_EINVAL, seq ? "the sequence is closed" : "the generator is closed");
    return NULL;
  }
  return s;
}

static sf_t *sf_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  return held_this(env, info, argc, argv, 0);
}

/* A failed call's error: "cannot take a number: ..." and the last claim's
 * reason when there is one. */
static void seq_throw(napi_env env, sf_t *s, int rc) {
  idgen_seq_stats_t st;
  char msg[IDGEN_REASON_MAX + 200];
  st.reason[0] = 0;
  if (rc == IDGEN_EREGISTRY || rc == IDGEN_ELEASE)
    idgen_seq_stats(s->h.seq, &st);
  snprintf(msg, sizeof msg, "cannot take a number: %s%s%s%s", idgen_strerror(rc),
           st.reason[0] ? ": " : "", st.reason,
           rc == IDGEN_EFORKED ? " (open the sequence again in the child process)" : "");
  throw_idgen(env, rc, msg);
}

/* The next value of s, or n of them for nextBatch (batch; all or none),
 * into ids: a Snowflake's IDs or a Sequence's numbers.  0, or the error
 * thrown (a Sequence's says what it could not take). */
static int held_take(napi_env env, sf_t *s, uint64_t *ids, size_t n, int batch) {
  int rc;
  if (s->is_seq) {
    rc = batch ? idgen_seq_next_n(s->h.seq, ids, n) : idgen_seq_next(s->h.seq, ids);
    if (rc < 0)
      seq_throw(env, s, rc);
  } else {
    rc = batch ? idgen_snowflake_gen_next_n(s->h.gen, ids, n)
               : idgen_snowflake_gen_next(s->h.gen, ids);
    if (rc < 0)
      throw_idgen(env, rc, NULL);
  }
  return rc;
}

/* next() → BigInt: a Snowflake's (seq 0) or a Sequence's (seq 1). */
static napi_value held_next(napi_env env, napi_callback_info info, int seq) {
  sf_t *s = held_this(env, info, NULL, NULL, seq);
  uint64_t id;
  napi_value v = NULL;
  if (s && held_take(env, s, &id, 1, 0) == 0)
    NAPI_CALL(env, napi_create_bigint_uint64(env, id, &v));
  return v;
}

static napi_value sf_next(napi_env env, napi_callback_info info) { return held_next(env, info, 0); }

static napi_value seq_next(napi_env env, napi_callback_info info) {
  return held_next(env, info, 1);
}

/* nextString() → the decimal digits */
static napi_value sf_next_string(napi_env env, napi_callback_info info) {
  sf_t *s = sf_this(env, info, NULL, NULL);
  uint64_t id;
  napi_value v = NULL;
  if (s && held_take(env, s, &id, 1, 0) == 0) {
    char text[24], *p = text + sizeof text;
    do { /* the digits from the end: no printf on this path */
      *--p = (char)('0' + id % 10);
      id /= 10;
    } while (id);
    NAPI_CALL(env, napi_create_string_latin1(env, p, (size_t)(text + sizeof text - p), &v));
  }
  return v;
}

/* A new BigUint64Array of n, its data into *data: the array, or NULL
 * thrown. */
static napi_value u64_array(napi_env env, size_t n, void **data) {
  napi_value buf, arr;
  NAPI_CALL(env, napi_create_arraybuffer(env, n * sizeof(uint64_t), data, &buf));
  NAPI_CALL(env, napi_create_typedarray(env, napi_biguint64_array, n, buf, 0, &arr));
  return arr;
}

/* nextBatch(n) → BigUint64Array of n increasing IDs (seq 0) or numbers of
 * a Sequence (seq 1), all or none. */
static napi_value held_next_batch(napi_env env, napi_callback_info info, int seq) {
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  sf_t *s = held_this(env, info, &argc, argv, seq);
  if (s == NULL)
    return NULL;
  double d = 0;
  napi_valuetype t = napi_undefined;
  if (argc >= 1)
    NAPI_CALL(env, napi_typeof(env, argv[0], &t));
  if (t == napi_number)
    NAPI_CALL(env, napi_get_value_double(env, argv[0], &d));
  if (t != napi_number || d < 1 || d > 1000000 || d != (double)(int64_t)d) {
    throw_idgen(env, IDGEN_ERANGE, "nextBatch(n): n must be a whole number from 1 to 1000000");
    return NULL;
  }
  void *data = NULL;
  napi_value arr = u64_array(env, (size_t)d, &data);
  if (arr == NULL || held_take(env, s, data, (size_t)d, 1) < 0)
    return NULL;
  return arr;
}

static napi_value sf_next_batch(napi_env env, napi_callback_info info) {
  return held_next_batch(env, info, 0);
}

static napi_value seq_next_batch(napi_env env, napi_callback_info info) {
  return held_next_batch(env, info, 1);
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
    void *data = NULL;
    napi_value arr = u64_array(env, sw->n, &data);
    if (arr != NULL)
      memcpy(data, sw->ids, sw->n * sizeof(uint64_t));
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
  const prop_t p[] = {PROP_VAL("wait", handle), PROP_NUM("waitMs", ms < 0         ? 0
                                                                   : ms > 3600000 ? 3600000
                                                                                  : ms)};
  return props_object(env, p, COUNT(p));
}

/* _batchStart(n): see wait_outcome. */
static napi_value sf_batch_start(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {NULL};
  sf_t *s = sf_this(env, info, &argc, argv);
  double d = 0;
  if (s == NULL)
    return NULL;
  /* (a status other than napi_ok here is the answer: not a number) */
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
  int rc = idgen_snowflake_gen_next_n_async(s->h.gen, sw->ids, n, &sw->w);
  napi_value handle = NULL;
  if (rc == IDGEN_EAGAIN &&
      !NAPI_OK(env, napi_create_external(env, sw, wait_finalize, NULL, &handle))) {
    free(sw);
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
  /* (a status other than napi_ok here is the answer: not one of ours) */
  if (argc < 1 || napi_get_value_external(env, argv[0], (void **)&sw) != napi_ok || sw == NULL ||
      sw->n == 0) {
    throw_type(env, "_batchResume: not a waiting call");
    return NULL;
  }
  int rc = idgen_snowflake_gen_resume(s->h.gen, &sw->w, sw->ids);
  napi_value v = wait_outcome(env, rc, sw, argv[0]);
  if (rc != IDGEN_EAGAIN)
    sw->n = 0; /* ended: a second resume is refused */
  return v;
}

/* _close() → a Promise: the generator stops issuing now (later calls
 * throw), and its lease goes back on a thread of its own; the promise
 * resolves when that is done (at once for the static registry, or when
 * closed already).  index.js's close() returns the first call's promise
 * again. */
static napi_value sf_close_js(napi_env env, napi_callback_info info) {
  napi_value self, p;
  size_t argc = 0;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, NULL, &self, NULL));
  env_t *e = env_of(env);
  if (e == NULL)
    return NULL;
  napi_deferred d;
  NAPI_CALL(env, napi_create_promise(env, &d, &p));
  sf_t *s = NULL;
  /* (unwrap's status other than napi_ok is the answer: not one of ours) */
  if (napi_unwrap(env, self, (void **)&s) == napi_ok && s && sf_release(env, e, s, d))
    return p; /* the job settles d */
  settle(env, d, NULL, NULL);
  return p;
}

/* lease() → {worker, node, pool, space, holder, markMs, registry} or null
 * (static). */
static napi_value sf_lease(napi_env env, napi_callback_info info) {
  sf_t *s = sf_this(env, info, NULL, NULL);
  if (s == NULL)
    return NULL;
  napi_value o;
  if (s->h.lease == NULL) {
    NAPI_CALL(env, napi_get_null(env, &o));
    return o;
  }
  idgen_lease_info_t li;
  idgen_lease_info(s->h.lease, &li);
  /* registry: idgen_registry_uri, its secrets masked (idgen_registry_uri_redact) */
  const prop_t p[] = {PROP_NUM("worker", li.worker),
                      PROP_STR("node", li.node),
                      PROP_STR("pool", li.pool),
                      PROP_STR("space", li.space),
                      PROP_STR("holder", li.holder),
                      PROP_NUM("markMs", li.mark_ms),
                      PROP_STR("registry", idgen_registry_uri(s->h.reg))};
  return props_object(env, p, COUNT(p));
}

/* ---- Sequence ------------------------------------------------------------ */

/* obj[name] as a number strictly between lo and hi into *out: 1 found, 0
 * absent, -1 thrown. */
static int opt_double(napi_env env, napi_value obj, const char *name, double lo, double hi,
                      double *out) {
  napi_valuetype t;
  double d;
  int got = opt_number(env, obj, name, &t, &d);
  if (got <= 0)
    return got;
  if (t != napi_number || !(d > lo && d < hi)) {
    char msg[160];
    snprintf(msg, sizeof msg, "option %s must be a number strictly between %g and %g", name, lo,
             hi);
    throw_idgen(env, IDGEN_ERANGE, msg);
    return -1;
  }
  *out = d;
  return 1;
}

/* obj[name] as a boolean (true/false, or 0/1) into *out: 1, 0 absent, -1
 * thrown. */
static int opt_bool(napi_env env, napi_value obj, const char *name, int *out) {
  napi_value v;
  napi_valuetype t;
  int got = opt_get(env, obj, name, &v, &t);
  if (got <= 0)
    return got;
  bool b = false;
  double d = -1;
  if (t == napi_boolean)
    NAPI_CALL_RET(env, napi_get_value_bool(env, v, &b), -1);
  else if (t == napi_number)
    NAPI_CALL_RET(env, napi_get_value_double(env, v, &d), -1);
  if (t != napi_boolean && d != 0 && d != 1) {
    char msg[120];
    snprintf(msg, sizeof msg, "option %s must be true or false", name);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  *out = t == napi_boolean ? b : d == 1;
  return 1;
}

/* The options object into o (the library's settings; its checks are
 * idgen_seq_open's): 0, or -1 thrown. */
static int seq_opts_read(napi_env env, napi_value o, seq_opts_t *out) {
  napi_valuetype t = napi_undefined;
  if (o != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, o, &t), -1);
  memset(out, 0, sizeof *out); /* zero: the library's default, each setting */
  if (t == napi_undefined || t == napi_null)
    return 0;
  if (t != napi_object) {
    throw_type(env, "new Sequence(name, options): options must be an object");
    return -1;
  }
  if (opts_names_check(env, o, OPTS_SEQUENCE) < 0)
    return -1;
  idgen_seq_settings_t *s = &out->set;
  const int64_t big = ((int64_t)1 << 53) - 1; /* Number.MAX_SAFE_INTEGER */
  int64_t min_step = 0, max_step = 0, step = 0, ahead = 0, target = 0, ttl = 0, wait = 0;
  int got_ahead, got_target, got_ttl, got_wait, got_fmt, got_tz;
  if (opt_string(env, o, "registry", out->registry, sizeof out->registry) < 0 ||
      opt_string(env, o, "space", out->space, sizeof out->space) < 0 ||
      (got_fmt = opt_string(env, o, "format", out->format, sizeof out->format)) < 0 ||
      (got_tz = opt_string(env, o, "tz", out->tz, sizeof out->tz)) < 0 ||
      opt_int(env, o, "minStep", 1, big, &min_step) < 0 ||
      opt_int(env, o, "maxStep", 1, big, &max_step) < 0 ||
      opt_int(env, o, "step", 1, big, &step) < 0 ||
      opt_double(env, o, "prefetch", 0, 1, &s->prefetch) < 0 ||
      (got_ahead = opt_int(env, o, "ahead", 1, 4, &ahead)) < 0 ||
      (got_target = opt_int(env, o, "segmentTargetMs", 1, big, &target)) < 0 ||
      (got_ttl = opt_int(env, o, "ttlMs", 1, big, &ttl)) < 0 ||
      (got_wait = opt_int(env, o, "waitMs", -1, big, &wait)) < 0 ||
      opt_bool(env, o, "strict", &s->strict) < 0)
    return -1;
  if (min_step)
    s->min_step = (uint64_t)min_step;
  if (max_step)
    s->max_step = (uint64_t)max_step;
  if (step)
    s->step = (uint64_t)step;
  if (got_ahead)
    s->ahead = (int)ahead;
  if (got_target)
    s->segment_target_ms = target;
  if (got_ttl)
    s->ttl_ms = ttl;
  if (got_wait)
    s->wait_ms = wait == 0 ? -1 : wait; /* 0: no wait, as -1 (the library's 0 is its default) */
  s->format = got_fmt > 0 ? out->format : NULL;
  s->tz = got_tz > 0 && out->tz[0] ? out->tz : NULL;
  return 0;
}

/* Opens sequence `name` of o into h: the registry (the host's by default,
 * as a Snowflake's), its space, the sequence.  0, or the error in err and
 * nothing held. */
static int seq_make(const char *name, seq_opts_t *o, sf_hold_t *h, char *err, size_t errlen) {
  memset(h, 0, sizeof *h);
  err[0] = 0;
  int rc = registry_resolve(o->registry, o->space, err, errlen);
  if (rc == 0)
    rc = idgen_registry_open(&h->reg, o->registry, err, errlen);
  if (rc == 0)
    rc = idgen_seq_open(&h->seq, h->reg, name, &o->set, err, errlen);
  if (rc < 0)
    hold_free(h);
  return rc;
}

/* The name argument into buf[n]: 0, or -1 thrown (not a string: a
 * TypeError; too long or holding a NUL: EINVAL; the rest is the library's
 * rule, at the open). */
static int seq_name_read(napi_env env, napi_value v, char *buf, size_t n, const char *call) {
  char what[100], name[100];
  size_t len = 0;
  snprintf(what, sizeof what, "%s(name, options): name", call);
  snprintf(name, sizeof name, "%s: the name", call);
  return str_take(env, v, what, name, IDGEN_SEQ_NAME_MAX - 1, buf, n, &len);
}

static napi_value seq_new(napi_env env, napi_callback_info info) { return held_new(env, info, 1); }

/* open(options) and seqOpen(name, options) → a Promise of a Snowflake
 * (seq 0) or a Sequence (seq 1): new Snowflake(options) or new
 * Sequence(name, options) made on a thread of its own.  A wrong name or
 * option is thrown here (index.js makes it a rejection). */
static napi_value open_js(napi_env env, napi_callback_info info, int seq) {
  size_t argc = 2;
  napi_value argv[2] = {NULL, NULL}, p;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  env_t *e = env_of(env);
  if (e == NULL)
    return NULL;
  job_t *j = calloc(1, sizeof *j);
  if (j == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  j->seq = seq;
  if (job_args(env, j, argc, argv, 1) < 0 ||
      !NAPI_OK(env, napi_create_promise(env, &j->deferred, &p))) {
    free(j);
    return NULL;
  }
  j->open = 1;
  if (job_start(env, e, j) < 0) {
    bool pending = false;
    if (NAPI_OK(env, napi_is_exception_pending(env, &pending)) && !pending)
      settle(env, j->deferred, NULL,
             make_error(env, IDGEN_ENOMEM,
                        seq ? "Sequence.open: no thread to be had"
                            : "Snowflake.open: no thread to be had"));
    free(j);
  }
  return p;
}

static napi_value sf_open_js(napi_env env, napi_callback_info info) {
  return open_js(env, info, 0);
}

static napi_value seq_open_js(napi_env env, napi_callback_info info) {
  return open_js(env, info, 1);
}

static sf_t *seq_this(napi_env env, napi_callback_info info, size_t *argc, napi_value *argv) {
  return held_this(env, info, argc, argv, 1);
}

/* nextText() → the business number (the sequence's format rendered). */
static napi_value seq_next_text(napi_env env, napi_callback_info info) {
  sf_t *s = seq_this(env, info, NULL, NULL);
  if (s == NULL)
    return NULL;
  char text[1024];
  int rc = idgen_seq_next_text(s->h.seq, text, sizeof text, NULL);
  if (rc == IDGEN_EINVAL) {
    throw_idgen(env, rc, "nextText(): the sequence has no format (new Sequence(name, {format}))");
    return NULL;
  }
  if (rc < 0) {
    seq_throw(env, s, rc);
    return NULL;
  }
  napi_value v;
  NAPI_CALL(env, napi_create_string_utf8(env, text, (size_t)rc, &v));
  return v;
}

/* stats() → {key, generation, step, inHand, issued, claimed, claims,
 * givenBack, claimFailures, failing, rate, lastsMs, claimNsLast, claimNsMax,
 * reason} (numbers: the counts stay far below 2^53 in a process's life). */
static napi_value seq_stats_js(napi_env env, napi_callback_info info) {
  sf_t *s = seq_this(env, info, NULL, NULL);
  if (s == NULL)
    return NULL;
  idgen_seq_stats_t st;
  idgen_seq_stats(s->h.seq, &st);
  napi_value b;
  NAPI_CALL(env, napi_get_boolean(env, st.failing != 0, &b));
  const prop_t p[] = {PROP_VAL("failing", b),
                      PROP_STR("key", st.key),
                      PROP_NUM("generation", st.generation),
                      PROP_NUM("step", st.step),
                      PROP_NUM("inHand", st.in_hand),
                      PROP_NUM("issued", st.issued),
                      PROP_NUM("claimed", st.claimed),
                      PROP_NUM("claims", st.claims),
                      PROP_NUM("givenBack", st.given_back),
                      PROP_NUM("claimFailures", st.claim_failures),
                      PROP_NUM("rate", st.rate),
                      PROP_NUM("lastsMs", st.lasts_ms),
                      PROP_NUM("claimNsLast", st.claim_ns_last),
                      PROP_NUM("claimNsMax", st.claim_ns_max),
                      PROP_STR("reason", st.reason)};
  return props_object(env, p, COUNT(p));
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
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, NULL, &self, NULL));
  g128_t *g = calloc(1, sizeof *g);
  if (g == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  g->uuid = uuid;
  int rc = uuid ? idgen_uuid7_gen_new(&g->uuid7, NULL) : idgen_ulid_gen_new(&g->ulid, NULL);
  if (rc < 0)
    throw_idgen(env, rc, NULL);
  if (rc < 0 || !NAPI_OK(env, napi_wrap(env, self, g, g128_finalize, NULL, NULL))) {
    g128_finalize(env, g, NULL);
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

/* 16 bytes as a UUID's text (uuid) or a ULID's, a string; NULL thrown. */
static napi_value text128(napi_env env, int uuid, const uint8_t b[16]) {
  char text[IDGEN_UUID_STRLEN + 1];
  if (uuid) {
    idgen_uuid_t w;
    memcpy(w.bytes, b, 16);
    idgen_uuid_format(&w, text);
  } else {
    idgen_ulid_t u;
    memcpy(u.bytes, b, 16);
    idgen_ulid_format(&u, text);
  }
  napi_value v;
  NAPI_CALL(env, napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &v));
  return v;
}

/* next() → the next ULID (26 characters) or UUIDv7 (36), increasing. */
static napi_value g128_next(napi_env env, napi_callback_info info) {
  napi_value self;
  size_t argc = 0;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, NULL, &self, NULL));
  g128_t *g = NULL;
  /* (a status other than napi_ok here is the answer: not one of ours) */
  if (napi_unwrap(env, self, (void **)&g) != napi_ok || g == NULL) {
    throw_type(env, "not a ULID or UUIDv7 generator");
    return NULL;
  }
  idgen_uuid_t x;
  idgen_ulid_t u;
  int rc = g->uuid ? idgen_uuid7_gen_next(g->uuid7, &x) : idgen_ulid_gen_next(g->ulid, &u);
  if (rc < 0) {
    throw_idgen(env, rc, NULL);
    return NULL;
  }
  return text128(env, g->uuid, g->uuid ? x.bytes : u.bytes);
}

/* The string argument i (at most n - 1 bytes) into buf, or -1 thrown. */
static int arg_string(napi_env env, napi_callback_info info, size_t i, const char *what, char *buf,
                      size_t n, size_t *len) {
  size_t argc = 2;
  napi_value argv[2];
  NAPI_CALL_RET(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL), -1);
  return str_take(env, i < argc ? argv[i] : NULL, what, NULL, 0, buf, n, len);
}

/* ulidToUuid(text) and uuidToUlid(text): the same 128 bits in the other
 * form; to_uuid picks the direction. */
static napi_value convert(napi_env env, napi_callback_info info, int to_uuid) {
  char in[128], err[ERR_MAX];
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
  if (to_uuid)
    idgen_ulid_to_uuid(&u, &x);
  else
    idgen_ulid_from_uuid(&x, &u);
  return text128(env, to_uuid, to_uuid ? x.bytes : u.bytes);
}

static napi_value ulid_to_uuid(napi_env env, napi_callback_info info) {
  return convert(env, info, 1);
}

static napi_value uuid_to_ulid(napi_env env, napi_callback_info info) {
  return convert(env, info, 0);
}

/* The layout option: a preset's name or a layout spec. */
static int parse_layout(napi_env env, const char *text, idgen_layout_t *l) {
  char err[ERR_MAX];
  int rc = idgen_layout_parse(l, text, err, sizeof err); /* a preset keeps its name */
  if (rc < 0)
    throw_idgen(env, rc, err);
  return rc;
}

/* The environment's parsed layout for `text` (the last one asked for is
 * kept), or NULL with the error thrown. */
static const idgen_layout_t *layout_cached(napi_env env, const char *text) {
  env_t *e = env_of(env);
  if (e == NULL)
    return NULL;
  if (e->layout_text[0] && strcmp(e->layout_text, text) == 0)
    return &e->layout;
  e->layout_text[0] = 0;
  if (parse_layout(env, text, &e->layout) < 0)
    return NULL;
  snprintf(e->layout_text, sizeof e->layout_text, "%s", text);
  return &e->layout;
}

/* The n bytes of JSON text a writer left in text as a string; n < 0 (it
 * did not fit): ERANGE thrown. */
static napi_value json_text(napi_env env, const char *text, int n) {
  if (n < 0) {
    throw_idgen(env, IDGEN_ERANGE, NULL);
    return NULL;
  }
  napi_value v;
  NAPI_CALL(env, napi_create_string_utf8(env, text, (size_t)n, &v));
  return v;
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
  return json_text(env, json, layout_info_json(l, json, sizeof json));
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

/* decodeJson(text, layout) → the JSON text of `idgen decode --json`
 * (decode_json's: index.js parses it for decode() when the ID is not read in
 * JavaScript, and the tests hold decode() to it), or the CLI's message
 * thrown. */
static napi_value decode_json_js(napi_env env, napi_callback_info info) {
  decoded_t d;
  char text[DECODE_JSON_MAX];
  if (decode_args(env, info, &d) < 0)
    return NULL;
  return json_text(env, text, decode_json(&d, text, sizeof text)); /* DECODE_JSON_MAX holds any */
}

/* layoutPlan(layout, rate, maxBorrowMs) → what `idgen plan` shows of the
 * layout as JSON text (idgen_layout_plan's numbers, layout_plan_json's
 * text: lib/layout.js names them), or the CLI's message thrown.  rate and
 * maxBorrowMs are numbers >= 0 (lib/layout.js checked them). */
static napi_value layout_plan_js(napi_env env, napi_callback_info info) {
  char text[IDGEN_LAYOUT_SPEC_MAX], json[LAYOUT_PLAN_MAX];
  size_t len, argc = 3;
  napi_value argv[3];
  double rate = -1, borrow = -1;
  if (arg_string(env, info, 0, "layout", text, sizeof text, &len) < 0)
    return NULL;
  const idgen_layout_t *l = layout_cached(env, text);
  if (l == NULL)
    return NULL;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  idgen_layout_plan_t p;
  if (argc < 3 || napi_get_value_double(env, argv[1], &rate) != napi_ok ||
      napi_get_value_double(env, argv[2], &borrow) != napi_ok ||
      idgen_layout_plan(l, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), rate, borrow, &p) < 0) {
    throw_idgen(env, IDGEN_EINVAL, "plan: rate and maxBorrowMs must be numbers >= 0");
    return NULL;
  }
  return json_text(env, json, layout_plan_json(l, &p, json, sizeof json));
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
  NAPI_CALL(env, napi_create_string_utf8(env, text, 26, &v));
  return v;
}

/* ---- Public IDs ------------------------------------------------------------ */

/* new Public({keyFile | key + keyVersion, kind, layout | bits, prefix,
 * version}): one codec (idgen_public_t) per object.  JavaScript runs on one
 * thread per environment, and a worker thread makes objects of its own, so
 * a codec is never used by two threads at once.  A key is read from a file
 * (index.js gives keyFile from IDGEN_PUBLIC_KEY when absent) or taken as 32
 * bytes the caller holds (a Buffer from its own secret store); the copy
 * made here is wiped once the codec holds its own. */
typedef struct pub {
  idgen_public_t *p;
  idgen_public_kind_t kind;
  unsigned bits;
} pub_t;

static void pub_finalize(napi_env env, void *data, void *hint) {
  (void)env, (void)hint;
  pub_t *x = data;
  idgen_public_free(x->p);
  free(x);
}

/* options.key: 32 bytes in a Buffer or Uint8Array, copied into key: 1
 * given, 0 absent, -1 thrown. */
static int pub_key_bytes(napi_env env, napi_value o, uint8_t key[IDGEN_PUBLIC_KEY_BYTES]) {
  napi_value v;
  napi_valuetype t;
  int got = opt_get(env, o, "key", &v, &t);
  if (got <= 0)
    return got;
  bool is_ta = false;
  NAPI_CALL_RET(env, napi_is_typedarray(env, v, &is_ta), -1);
  napi_typedarray_type tt = napi_int8_array;
  size_t len = 0;
  void *data = NULL;
  if (is_ta)
    NAPI_CALL_RET(env, napi_get_typedarray_info(env, v, &tt, &len, &data, NULL, NULL), -1);
  if (!is_ta || tt != napi_uint8_array) {
    throw_type(env, "option key must be a Buffer or Uint8Array (of 32 bytes)");
    return -1;
  }
  if (len != IDGEN_PUBLIC_KEY_BYTES) {
    char msg[120];
    snprintf(msg, sizeof msg, "option key holds %zu bytes: a key is %d bytes (AES-256)", len,
             IDGEN_PUBLIC_KEY_BYTES);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  memcpy(key, data, IDGEN_PUBLIC_KEY_BYTES);
  return 1;
}

/* The options of new Public(), read. */
typedef struct {
  char key_file[4096], kind[16], layout[IDGEN_LAYOUT_SPEC_MAX], prefix[IDGEN_PUBLIC_PREFIX_MAX];
  uint8_t key[IDGEN_PUBLIC_KEY_BYTES];
  int has_file, has_key, has_layout;
  int64_t key_version, bits, version;
} pub_opts_t;

static int pub_opts_read(napi_env env, napi_value o, pub_opts_t *out) {
  napi_valuetype t = napi_undefined;
  if (o != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, o, &t), -1);
  if (t != napi_object) {
    throw_type(env, "new Public(options): options must be an object (keyFile or key at least)");
    return -1;
  }
  if (opts_names_check(env, o, OPTS_PUBLIC) < 0)
    return -1;
  snprintf(out->kind, sizeof out->kind, "snowflake");
  snprintf(out->layout, sizeof out->layout, "twitter");
  out->key_version = 1;
  if ((out->has_file = opt_string(env, o, "keyFile", out->key_file, sizeof out->key_file)) < 0 ||
      (out->has_key = pub_key_bytes(env, o, out->key)) < 0 ||
      opt_int(env, o, "keyVersion", 1, IDGEN_PUBLIC_VERSION_MAX, &out->key_version) < 0 ||
      opt_string(env, o, "kind", out->kind, sizeof out->kind) < 0 ||
      (out->has_layout = opt_string(env, o, "layout", out->layout, sizeof out->layout)) < 0 ||
      opt_int(env, o, "bits", 1, 64, &out->bits) < 0 ||
      opt_string(env, o, "prefix", out->prefix, sizeof out->prefix) < 0 ||
      opt_int(env, o, "version", 0, IDGEN_PUBLIC_VERSION_MAX, &out->version) < 0)
    return -1;
  const char *why = out->has_file && out->has_key ? "give keyFile or key, not both"
                    : !out->has_file && !out->has_key
                        ? "no key: give keyFile (or set IDGEN_PUBLIC_KEY to a key file's path) "
                          "or key (32 bytes)"
                    : out->has_layout && out->bits ? "give layout or bits, not both"
                                                   : NULL;
  if (why != NULL) {
    char msg[200];
    snprintf(msg, sizeof msg, "new Public(options): %s", why);
    throw_idgen(env, IDGEN_EINVAL, msg);
    return -1;
  }
  return 0;
}

/* The kind and bit count of o into s: 0, or -1 thrown. */
static int pub_settings(napi_env env, const pub_opts_t *o, idgen_public_settings_t *s) {
  memset(s, 0, sizeof *s);
  s->prefix = o->prefix;
  s->version = (unsigned)o->version;
  if (strcmp(o->kind, "snowflake") == 0) {
    s->kind = IDGEN_PUBLIC_SNOWFLAKE;
    idgen_layout_t l;
    if (o->bits)
      s->bits = (unsigned)o->bits;
    else if (parse_layout(env, o->layout, &l) < 0)
      return -1;
    else
      s->bits = (unsigned)l.total_bits;
    return 0;
  }
  s->kind = strcmp(o->kind, "ulid") == 0    ? IDGEN_PUBLIC_ULID
            : strcmp(o->kind, "uuid7") == 0 ? IDGEN_PUBLIC_UUID7
                                            : 0;
  const char *why = s->kind == 0 ? "option kind must be \"snowflake\", \"ulid\" or \"uuid7\""
                    : o->bits || o->has_layout ? "layout and bits are for kind \"snowflake\" only"
                                               : NULL;
  if (why != NULL) {
    throw_idgen(env, IDGEN_EINVAL, why);
    return -1;
  }
  return 0;
}

/* Wipes the caller's key bytes (volatile: the stores are kept). */
static void pub_wipe(uint8_t *key, size_t n) {
  volatile uint8_t *k = key;
  for (size_t i = 0; i < n; i++)
    k[i] = 0;
}

/* The codec of o: 0, or -1 thrown (the key copy wiped either way). */
static int pub_make(napi_env env, pub_opts_t *o, pub_t *x) {
  idgen_public_settings_t s;
  if (pub_settings(env, o, &s) < 0) {
    pub_wipe(o->key, sizeof o->key);
    return -1;
  }
  idgen_public_keys_t *keys = NULL;
  char err[ERR_MAX] = "";
  int rc;
  if (o->has_key) {
    unsigned v = (unsigned)o->key_version;
    rc = idgen_public_keys_new(&keys, &v, (const uint8_t(*)[IDGEN_PUBLIC_KEY_BYTES])o->key, 1, err,
                               sizeof err);
  } else
    rc = idgen_public_keys_load(&keys, o->key_file, err, sizeof err);
  pub_wipe(o->key, sizeof o->key);
  if (rc == 0) {
    rc = idgen_public_new(&x->p, keys, &s, err, sizeof err);
    x->kind = s.kind;
    x->bits = s.bits ? s.bits : 64;
  }
  idgen_public_keys_free(keys);
  if (rc < 0)
    throw_idgen(env, rc, err);
  return rc < 0 ? -1 : 0;
}

static napi_value pub_new(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {NULL}, self;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, &self, NULL));
  pub_opts_t *o = calloc(1, sizeof *o);
  pub_t *x = calloc(1, sizeof *x);
  int ok = o != NULL && x != NULL;
  if (!ok)
    throw_idgen(env, IDGEN_ENOMEM, NULL);
  else
    ok = pub_opts_read(env, argc ? argv[0] : NULL, o) == 0 && pub_make(env, o, x) == 0;
  free(o);
  if (ok && NAPI_OK(env, napi_wrap(env, self, x, pub_finalize, NULL, NULL)))
    return self;
  if (x != NULL)
    pub_finalize(env, x, NULL);
  return NULL;
}

/* this's codec and up to 1 argument, or NULL thrown. */
static pub_t *pub_this(napi_env env, napi_callback_info info, napi_value *arg) {
  napi_value self, argv[1];
  size_t argc = 1;
  NAPI_CALL(env, napi_get_cb_info(env, info, &argc, argv, &self, NULL));
  *arg = argc ? argv[0] : NULL;
  pub_t *x = NULL;
  if (napi_unwrap(env, self, (void **)&x) != napi_ok || x == NULL || x->p == NULL) {
    throw_type(env, "not a Public codec");
    return NULL;
  }
  return x;
}

/* A Snowflake ID or integer public form: a BigInt, or a whole number from
 * 0 to 2^53 - 1.  0, or -1 thrown. */
static int pub_arg64(napi_env env, napi_value v, const char *what, uint64_t *out) {
  napi_valuetype t = napi_undefined;
  if (v != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, v, &t), -1);
  char msg[160];
  if (t == napi_bigint) {
    int sign = 0;
    size_t words = 2;
    uint64_t w[2] = {0, 0};
    NAPI_CALL_RET(env, napi_get_value_bigint_words(env, v, &sign, &words, w), -1);
    if (sign == 0 && words <= 1) {
      *out = w[0];
      return 0;
    }
  } else if (t == napi_number) {
    double d = 0;
    NAPI_CALL_RET(env, napi_get_value_double(env, v, &d), -1);
    if (d >= 0 && d <= 9007199254740991.0 && d == (double)(int64_t)d) {
      *out = (uint64_t)d;
      return 0;
    }
  } else {
    snprintf(msg, sizeof msg, "%s must be a BigInt (or a whole number below 2^53)", what);
    throw_type(env, msg);
    return -1;
  }
  snprintf(msg, sizeof msg, "%s must be from 0 to 2^64 - 1 (a number: to 2^53 - 1)", what);
  throw_idgen(env, IDGEN_ERANGE, msg);
  return -1;
}

/* A 128-bit ID as its text: a ULID's 26 characters for a ULID codec, a UUID
 * for a UUIDv7 one (the public forms likewise).  0, or -1 thrown. */
static int pub_arg128(napi_env env, const pub_t *x, napi_value v, const char *what,
                      uint8_t out[16]) {
  char text[128], err[ERR_MAX], msg[ERR_MAX + 100];
  size_t len = 0;
  napi_valuetype t = napi_undefined;
  if (v != NULL)
    NAPI_CALL_RET(env, napi_typeof(env, v, &t), -1);
  if (t != napi_string) {
    snprintf(msg, sizeof msg, "%s must be a string (%s)", what,
             x->kind == IDGEN_PUBLIC_ULID ? "a ULID" : "a UUID");
    throw_type(env, msg);
    return -1;
  }
  NAPI_CALL_RET(env, napi_get_value_string_utf8(env, v, text, sizeof text, &len), -1);
  idgen_ulid_t u;
  idgen_uuid_t w;
  int rc = x->kind == IDGEN_PUBLIC_ULID
               ? idgen_ulid_parse(&u, text, len, IDGEN_ULID_STRICT, err, sizeof err)
               : idgen_uuid_parse(&w, text, len, err, sizeof err);
  if (rc < 0) {
    snprintf(msg, sizeof msg, "%s: %s", what, err);
    throw_idgen(env, rc, msg);
    return -1;
  }
  memcpy(out, x->kind == IDGEN_PUBLIC_ULID ? u.bytes : w.bytes, 16);
  return 0;
}

/* 16 bytes as a ULID codec's or a UUIDv7 codec's text. */
static napi_value pub_text128(napi_env env, const pub_t *x, const uint8_t b[16]) {
  return text128(env, x->kind != IDGEN_PUBLIC_ULID, b);
}

/* Throws rc of a codec's call on `what`: ERANGE as "<what> at or above
 * 2^<bits> (the codec's bits)", the rest with the library's message. */
static void pub_throw(napi_env env, const pub_t *x, int rc, const char *what) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s at or above 2^%u (the codec's bits)", what, x->bits);
  throw_idgen(env, rc, rc == IDGEN_ERANGE ? msg : NULL);
}

/* map(id) and unmap(pub): the integer forms, one ID. */
static napi_value pub_map_dir(napi_env env, napi_callback_info info, int back) {
  napi_value arg, v;
  pub_t *x = pub_this(env, info, &arg);
  if (x == NULL)
    return NULL;
  const char *what = back ? "unmap(pub): pub" : "map(id): id";
  int rc;
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t in, out = 0;
    if (pub_arg64(env, arg, what, &in) < 0)
      return NULL;
    rc = back ? idgen_public_unmap64(x->p, in, &out) : idgen_public_map64(x->p, in, &out);
    if (rc == 0)
      NAPI_CALL(env, napi_create_bigint_uint64(env, out, &v));
  } else {
    uint8_t in[16], out[16];
    if (pub_arg128(env, x, arg, what, in) < 0)
      return NULL;
    rc = back ? idgen_public_unmap128(x->p, in, out) : idgen_public_map128(x->p, in, out);
    if (rc == 0 && (v = pub_text128(env, x, out)) == NULL)
      return NULL;
    if (rc == IDGEN_EPARSE) {
      throw_idgen(env, rc,
                  back ? "unmap(pub): not a UUID of version 4 (the public form of a UUIDv7)"
                       : "map(id): not a UUIDv7 (version 7, RFC 9562's variant)");
      return NULL;
    }
  }
  if (rc < 0) {
    pub_throw(env, x, rc, back ? "unmap(pub): pub:" : "map(id): id:");
    return NULL;
  }
  return v;
}

static napi_value pub_map(napi_env env, napi_callback_info info) {
  return pub_map_dir(env, info, 0);
}

static napi_value pub_unmap(napi_env env, napi_callback_info info) {
  return pub_map_dir(env, info, 1);
}

/* mapMany(ids) and unmapMany(pubs) of a ULID or UUIDv7 codec: an Array of
 * their texts in, an Array out, the cipher run over all at once. */
static napi_value pub_many128(napi_env env, pub_t *x, napi_value arg, int back) {
  const char *what = back ? "unmapMany(pubs): pubs" : "mapMany(ids): ids";
  bool is_array = false;
  uint32_t n = 0;
  if (arg != NULL)
    NAPI_CALL(env, napi_is_array(env, arg, &is_array));
  if (!is_array) {
    char msg[120];
    snprintf(msg, sizeof msg, "%s must be an Array of strings", what);
    throw_type(env, msg);
    return NULL;
  }
  NAPI_CALL(env, napi_get_array_length(env, arg, &n));
  uint8_t(*in)[16] = malloc(n ? 2 * (size_t)n * 16 : 1), (*out)[16] = in + n;
  napi_value arr = NULL, v;
  if (in == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc = napi_get_element(env, arg, i, &v) == napi_ok ? pub_arg128(env, x, v, what, in[i]) : -1;
  if (rc == 0) {
    rc = back ? idgen_public_unmap128_batch(x->p, (const uint8_t(*)[16])in, out, n)
              : idgen_public_map128_batch(x->p, (const uint8_t(*)[16])in, out, n);
    if (rc < 0)
      throw_idgen(env, rc,
                  rc == IDGEN_EPARSE ? (back ? "unmapMany(pubs): a UUID not of version 4"
                                             : "mapMany(ids): a UUID not a UUIDv7")
                                     : NULL);
  }
  if (rc == 0 && NAPI_OK(env, napi_create_array_with_length(env, n, &arr)))
    for (uint32_t i = 0; i < n && arr != NULL; i++)
      if ((v = pub_text128(env, x, out[i])) == NULL ||
          !NAPI_OK(env, napi_set_element(env, arr, i, v)))
        arr = NULL;
  free(in);
  return arr;
}

/* mapMany(ids) and unmapMany(pubs): a BigUint64Array in, a new one out
 * (Snowflake codecs), every round of the cipher over all of them at once. */
static napi_value pub_many(napi_env env, napi_callback_info info, int back) {
  napi_value arg, arr;
  pub_t *x = pub_this(env, info, &arg);
  if (x == NULL)
    return NULL;
  if (x->kind != IDGEN_PUBLIC_SNOWFLAKE)
    return pub_many128(env, x, arg, back);
  bool is_ta = false;
  napi_typedarray_type tt = napi_int8_array;
  size_t n = 0;
  void *in = NULL, *out = NULL;
  if (arg != NULL)
    NAPI_CALL(env, napi_is_typedarray(env, arg, &is_ta));
  if (is_ta)
    NAPI_CALL(env, napi_get_typedarray_info(env, arg, &tt, &n, &in, NULL, NULL));
  if (!is_ta || tt != napi_biguint64_array) {
    throw_type(env, back ? "unmapMany(pubs): pubs must be a BigUint64Array"
                         : "mapMany(ids): ids must be a BigUint64Array");
    return NULL;
  }
  if ((arr = u64_array(env, n, &out)) == NULL)
    return NULL;
  int rc = n == 0 ? 0
           : back ? idgen_public_unmap64_batch(x->p, in, out, n)
                  : idgen_public_map64_batch(x->p, in, out, n);
  if (rc < 0) {
    pub_throw(env, x, rc, back ? "unmapMany(pubs): a value" : "mapMany(ids): a value");
    return NULL;
  }
  return arr;
}

static napi_value pub_map_many(napi_env env, napi_callback_info info) {
  return pub_many(env, info, 0);
}

static napi_value pub_unmap_many(napi_env env, napi_callback_info info) {
  return pub_many(env, info, 1);
}

/* format(id) → the text form, with the newest key version. */
static napi_value pub_format(napi_env env, napi_callback_info info) {
  napi_value arg, v;
  pub_t *x = pub_this(env, info, &arg);
  if (x == NULL)
    return NULL;
  char text[IDGEN_PUBLIC_TEXT_MAX];
  int rc;
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t id;
    if (pub_arg64(env, arg, "format(id): id", &id) < 0)
      return NULL;
    rc = idgen_public_format64(x->p, id, text, sizeof text);
  } else {
    uint8_t id[16];
    if (pub_arg128(env, x, arg, "format(id): id", id) < 0)
      return NULL;
    rc = idgen_public_format128(x->p, id, text, sizeof text);
  }
  if (rc < 0) {
    pub_throw(env, x, rc, "format(id): id");
    return NULL;
  }
  NAPI_CALL(env, napi_create_string_utf8(env, text, (size_t)rc, &v));
  return v;
}

/* parseWithVersion(text) → {id, version}: the ID (a BigInt, or a ULID's or
 * UUID's text) and the key version the text was made with. */
static napi_value pub_parse_v(napi_env env, napi_callback_info info) {
  napi_value arg, id = NULL, o;
  pub_t *x = pub_this(env, info, &arg);
  if (x == NULL)
    return NULL;
  char text[IDGEN_PUBLIC_TEXT_MAX + 1], err[ERR_MAX] = "";
  size_t len = 0;
  napi_valuetype t = napi_undefined;
  if (arg != NULL)
    NAPI_CALL(env, napi_typeof(env, arg, &t));
  if (t != napi_string) {
    throw_type(env, "parse(text): text must be a string");
    return NULL;
  }
  NAPI_CALL(env, napi_get_value_string_utf8(env, arg, NULL, 0, &len));
  if (len >= sizeof text) {
    snprintf(err, sizeof err, "parse(text): %zu characters: longer than any public ID (%d)", len,
             IDGEN_PUBLIC_TEXT_MAX - 1);
    throw_idgen(env, IDGEN_EPARSE, err);
    return NULL;
  }
  NAPI_CALL(env, napi_get_value_string_utf8(env, arg, text, sizeof text, &len));
  unsigned version = 0;
  int rc;
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t v = 0;
    rc = idgen_public_parse64(x->p, text, len, &v, &version, err, sizeof err);
    if (rc == 0)
      NAPI_CALL(env, napi_create_bigint_uint64(env, v, &id));
  } else {
    uint8_t b[16];
    rc = idgen_public_parse128(x->p, text, len, b, &version, err, sizeof err);
    if (rc == 0 && (id = pub_text128(env, x, b)) == NULL)
      return NULL;
  }
  if (rc < 0) {
    throw_idgen(env, rc, err);
    return NULL;
  }
  NAPI_CALL(env, napi_create_object(env, &o));
  NAPI_CALL(env, napi_set_named_property(env, o, "id", id));
  if (set_num(env, o, "version", version) < 0)
    return NULL;
  return o;
}

/* parse(text) → the ID alone. */
static napi_value pub_parse(napi_env env, napi_callback_info info) {
  napi_value o = pub_parse_v(env, info), id;
  if (o == NULL)
    return NULL;
  NAPI_CALL(env, napi_get_named_property(env, o, "id", &id));
  return id;
}

/* ---- the module ---------------------------------------------------------- */

/* The module is never unloaded.  Node unloads an addon with the last
 * environment that loaded it (a worker thread's end, when the main thread
 * has not loaded it), but threads of this code may outlive that: a release
 * still under way, the library's bounded call waiting for a frozen file
 * system, and every thread that made a random number here, whose exit calls
 * the library's per-thread destructor (the worker's own thread crashed in
 * it, at an address no longer mapped). */
static pthread_once_t pin_once = PTHREAD_ONCE_INIT;
static void pin_module(void) {
  Dl_info info;
  if (dladdr((void *)pin_module, &info) != 0 && info.dli_fname != NULL)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

/* A method of a class: its name and function. */
#define METHOD(name, fn)                                                                           \
  { name, NULL, fn, NULL, NULL, NULL, napi_default, NULL }

static const napi_property_descriptor sf_methods[] = {
    METHOD("next", sf_next),
    METHOD("nextString", sf_next_string),
    METHOD("nextBatch", sf_next_batch),
    METHOD("lease", sf_lease),
    METHOD("_batchStart", sf_batch_start),
    METHOD("_batchResume", sf_batch_resume),
    METHOD("_close", sf_close_js),
};
static const napi_property_descriptor seq_methods[] = {
    METHOD("next", seq_next),          METHOD("nextBatch", seq_next_batch),
    METHOD("nextText", seq_next_text), METHOD("stats", seq_stats_js),
    METHOD("_close", sf_close_js),
};
static const napi_property_descriptor pub_methods[] = {
    METHOD("map", pub_map),
    METHOD("unmap", pub_unmap),
    METHOD("mapMany", pub_map_many),
    METHOD("unmapMany", pub_unmap_many),
    METHOD("format", pub_format),
    METHOD("parse", pub_parse),
    METHOD("parseWithVersion", pub_parse_v),
};
static const napi_property_descriptor g128_methods[] = {METHOD("next", g128_next)};

/* The classes, functions and values of the module onto exports: 0, or -1
 * thrown.  open() makes Snowflakes and Sequences, so the environment keeps
 * a reference to those two classes. */
static int define_exports(napi_env env, env_t *e, napi_value exports) {
  const struct {
    const char *name;
    napi_callback ctor;
    const napi_property_descriptor *methods;
    size_t n;
    napi_ref *ref; /* NULL: none kept */
  } classes[] = {
      {"Snowflake", sf_new, sf_methods, COUNT(sf_methods), &e->cls},
      {"Sequence", seq_new, seq_methods, COUNT(seq_methods), &e->seq_cls},
      {"Public", pub_new, pub_methods, COUNT(pub_methods), NULL},
      {"UlidGenerator", ulid_gen_new, g128_methods, COUNT(g128_methods), NULL},
      {"Uuid7Generator", uuid7_gen_new, g128_methods, COUNT(g128_methods), NULL},
  };
  static const struct {
    const char *name;
    napi_callback cb;
  } fns[] = {{"ulid", ulid_js},
             {"ulidToUuid", ulid_to_uuid},
             {"uuidToUlid", uuid_to_ulid},
             {"decodeJson", decode_json_js},
             {"layoutPlan", layout_plan_js},
             {"layoutInfo", layout_info_js},
             {"open", sf_open_js},
             {"seqOpen", seq_open_js}};
  napi_value v;
  for (size_t i = 0; i < COUNT(classes); i++) {
    NAPI_CALL_RET(env,
                  napi_define_class(env, classes[i].name, NAPI_AUTO_LENGTH, classes[i].ctor, NULL,
                                    classes[i].n, classes[i].methods, &v),
                  -1);
    if (classes[i].ref != NULL)
      NAPI_CALL_RET(env, napi_create_reference(env, v, 1, classes[i].ref), -1);
    NAPI_CALL_RET(env, napi_set_named_property(env, exports, classes[i].name, v), -1);
  }
  for (size_t i = 0; i < COUNT(fns); i++) {
    NAPI_CALL_RET(
        env, napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &v), -1);
    NAPI_CALL_RET(env, napi_set_named_property(env, exports, fns[i].name, v), -1);
  }
  NAPI_CALL_RET(env, napi_create_string_utf8(env, idgen_version(), NAPI_AUTO_LENGTH, &v), -1);
  NAPI_CALL_RET(env, napi_set_named_property(env, exports, "version", v), -1);
  /* plan()'s default, as `idgen plan` has it */
  NAPI_CALL_RET(env, napi_create_int64(env, IDGEN_MAX_BORROW_MS_DEFAULT, &v), -1);
  NAPI_CALL_RET(env, napi_set_named_property(env, exports, "maxBorrowMsDefault", v), -1);
  return 0;
}

static napi_value init(napi_env env, napi_value exports) {
  pthread_once(&pin_once, pin_module);
  env_t *e = calloc(1, sizeof *e);
  if (e == NULL) {
    throw_idgen(env, IDGEN_ENOMEM, NULL);
    return NULL;
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->idle, &ca);
  pthread_condattr_destroy(&ca);
  e->refs = 2; /* the environment's and the thread-safe function's */
  napi_value name;
  if (!NAPI_OK(env, napi_create_string_utf8(env, "idgen registry", NAPI_AUTO_LENGTH, &name)) ||
      !NAPI_OK(env, napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, e, tsf_finalize, e,
                                                    job_back, &e->tsf))) {
    pthread_cond_destroy(&e->idle);
    pthread_mutex_destroy(&e->mu);
    free(e);
    return NULL;
  }
  /* ref'd only while a job is awaited */
  if (!NAPI_OK(env, napi_unref_threadsafe_function(env, e->tsf)) ||
      !NAPI_OK(env, napi_set_instance_data(env, e, env_free, NULL))) {
    /* tsf_finalize lets go of its ref (when the release could be made) */
    (void)NAPI_OK(env, napi_release_threadsafe_function(e->tsf, napi_tsfn_abort));
    env_unref(e);
    return NULL;
  }
  /* from here on, env_free frees e with the environment */
  NAPI_CALL(env, napi_add_env_cleanup_hook(env, env_cleanup, e));
  if (define_exports(env, e, exports) < 0)
    return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
