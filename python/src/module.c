/*
 * module.c -- idgen for Python: the extension module idgen._idgen, over the
 * C API of include/idgen.h (python/README.md).  python/idgen/__init__.py
 * wraps it (asyncio forms, uuid.UUID, JSON into dicts, release at exit).
 *
 * One class, Snowflake: a generator of any layout, its node values leased
 * from a registry as the command line's are (file: by default, postgres://,
 * etcd://, idgen://, or static with the values given); and Sequence, dense
 * numbers of a named counter in a registry (idgen_seq_*), released as a
 * generator's lease is.  Every option goes
 * through the library's own checks in the order of the settings table
 * (src/common/settings.c: layout, node, registry, space, lease field, TTL,
 * waits, clock), and a refusal reads as the command's, `key = "value":
 * MESSAGE`; an option the table does not have is refused, naming the known
 * ones.  Each failure is raised as the subclass of idgen.Error for the
 * library's code (ELEASE: idgen.LeaseError), with .code the code's name and
 * .errno its number.
 *
 * The GIL is released around every call that may wait: opening, leasing,
 * next() and next_batch() (the clock, the mark), close().  A call in
 * progress keeps the generator alive (`busy`): close() from another thread
 * meanwhile stops new calls at once and leaves the release to the last call
 * to return, as the library forbids freeing a generator in use.  In a child
 * process after fork() the library refuses the parent's generator
 * (idgen.ForkedError) and the child never releases the parent's lease: its
 * close() and collection only forget it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "decode.h"
#include "idgen.h"

#define ERR_MAX 1400

/* ---- errors -------------------------------------------------------------- */

/* The library's codes, in order (-1 .. -18), and the class each raises. */
static const struct {
  int code;
  const char *cls;
  const char *doc;
} err_table[] = {
#define XX(name, val, msg) {val, #name, msg},
    IDGEN_ERRNO_MAP(XX)
#undef XX
};
#define NERR (sizeof err_table / sizeof err_table[0])

/* Python names of the classes, by code (index -code - 1). */
static const char *const err_pyname[] = {
    "InvalidArgumentError", "OutOfMemoryError", "LayoutError",
    "RangeError",           "ParseError",       "ClockError",
    "ExhaustedError",       "ForkedError",      "MonotonicOverflowError",
    "RandomError",          "LeaseError",       "RegistryError",
    "PoolFullError",        "MarkError",        "BatchError",
    "AgainError",           "EmptyError",       "SpaceError",
    "PublicKeyError"};

static PyObject *Error;
static PyObject *err_class[sizeof err_pyname / sizeof err_pyname[0]];

/* Raises the class of `rc` with `msg` (NULL or "": the library's text for
 * rc), .code its name, .errno rc.  Returns NULL. */
static PyObject *raise_idgen(int rc, const char *msg) {
  size_t i = (size_t)(-rc - 1);
  PyObject *cls = rc < 0 && i < NERR ? err_class[i] : Error;
  PyObject *e = PyObject_CallFunction(cls, "s", msg && msg[0] ? msg : idgen_strerror(rc));
  if (e == NULL)
    return NULL;
  PyObject *code = PyUnicode_FromString(idgen_err_name(rc));
  PyObject *no = PyLong_FromLong(rc);
  if (code != NULL && no != NULL && PyObject_SetAttrString(e, "code", code) == 0 &&
      PyObject_SetAttrString(e, "errno", no) == 0)
    PyErr_SetObject(cls, e);
  Py_XDECREF(code);
  Py_XDECREF(no);
  Py_DECREF(e);
  return NULL;
}

/* `key = "value": message`, as the command says it less its prefix and the
 * value's source (src/common/settings.c, settings_fail). */
static PyObject *raise_key(int rc, const char *key, const char *value, const char *msg) {
  char q[420], text[ERR_MAX + 600];
  if (value != NULL)
    snprintf(text, sizeof text, "%s = \"%s\": %s", key,
             idgen_quote(q, sizeof q, value, strlen(value), '"'), msg);
  else
    snprintf(text, sizeof text, "%s: %s", key, msg);
  return raise_idgen(rc, text);
}

/* ---- an injected clock ---------------------------------------------------- */

/* ManualClock: the generator's idgen_clock_t, moved by the program
 * (set/advance).  A generator's wait (sleep_ns) blocks on a condition until
 * the clock is moved to its end (or, with auto_advance, moves the clock
 * itself and returns); a wait nobody ends returns after 30 real seconds,
 * the clock moved, so a forgotten test cannot hang.  Its calls take only
 * its own mutex: never the GIL. */
typedef struct {
  PyObject_HEAD idgen_clock_t clk;
  pthread_mutex_t mu;
  pthread_cond_t moved;
  int64_t now_ns;
  int auto_advance;
  int sleepers;
} mclock_t;

static int64_t mclock_now(void *ctx) {
  mclock_t *c = ctx;
  pthread_mutex_lock(&c->mu);
  int64_t t = c->now_ns;
  pthread_mutex_unlock(&c->mu);
  return t;
}

static void mclock_sleep(void *ctx, int64_t ns) {
  mclock_t *c = ctx;
  pthread_mutex_lock(&c->mu);
  int64_t end = c->now_ns + ns;
  if (c->auto_advance) {
    c->now_ns = end;
    pthread_mutex_unlock(&c->mu);
    return;
  }
  struct timespec limit;
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 30;
  c->sleepers++;
  pthread_cond_broadcast(&c->moved); /* (waiting() watchers) */
  while (c->now_ns < end)
    if (pthread_cond_timedwait(&c->moved, &c->mu, &limit) == ETIMEDOUT) {
      c->now_ns = end > c->now_ns ? end : c->now_ns;
      break;
    }
  c->sleepers--;
  pthread_mutex_unlock(&c->mu);
}

static PyObject *mclock_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"now_ns", "auto_advance", NULL};
  long long now = 0;
  int autoadv = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|Lp", kwlist, &now, &autoadv))
    return NULL;
  mclock_t *c = (mclock_t *)type->tp_alloc(type, 0);
  if (c == NULL)
    return NULL;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->moved, NULL);
  c->now_ns = now ? now : (int64_t)time(NULL) * 1000000000;
  c->auto_advance = autoadv;
  c->clk.now_ns = mclock_now;
  c->clk.sleep_ns = mclock_sleep;
  c->clk.ctx = c;
  return (PyObject *)c;
}

static void mclock_dealloc(mclock_t *c) {
  pthread_cond_destroy(&c->moved);
  pthread_mutex_destroy(&c->mu);
  Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *mclock_set(mclock_t *c, PyObject *arg) {
  long long t = PyLong_AsLongLong(arg);
  if (t == -1 && PyErr_Occurred())
    return NULL;
  pthread_mutex_lock(&c->mu);
  c->now_ns = t;
  pthread_cond_broadcast(&c->moved);
  pthread_mutex_unlock(&c->mu);
  Py_RETURN_NONE;
}

static PyObject *mclock_advance(mclock_t *c, PyObject *arg) {
  long long d = PyLong_AsLongLong(arg);
  if (d == -1 && PyErr_Occurred())
    return NULL;
  pthread_mutex_lock(&c->mu);
  c->now_ns += d;
  pthread_cond_broadcast(&c->moved);
  pthread_mutex_unlock(&c->mu);
  Py_RETURN_NONE;
}

static PyObject *mclock_get_now(mclock_t *c, void *closure) {
  (void)closure;
  return PyLong_FromLongLong(mclock_now(c));
}

static PyObject *mclock_get_waiting(mclock_t *c, void *closure) {
  (void)closure;
  pthread_mutex_lock(&c->mu);
  int n = c->sleepers;
  pthread_mutex_unlock(&c->mu);
  return PyLong_FromLong(n);
}

static PyMethodDef mclock_methods[] = {
    {"set", (PyCFunction)mclock_set, METH_O, "set(now_ns): the clock reads now_ns from now on"},
    {"advance", (PyCFunction)mclock_advance, METH_O, "advance(ns): moves the clock by ns"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef mclock_getset[] = {
    {"now_ns", (getter)mclock_get_now, NULL, "the time it reads, Unix ns", NULL},
    {"waiting", (getter)mclock_get_waiting, NULL, "calls waiting on it now", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ManualClockType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.ManualClock",
    .tp_basicsize = sizeof(mclock_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ManualClock(now_ns=now, auto_advance=False): an injected clock for tests",
    .tp_new = mclock_new,
    .tp_dealloc = (destructor)mclock_dealloc,
    .tp_methods = mclock_methods,
    .tp_getset = mclock_getset};

/* ---- holders: what Snowflake and Sequence share ---------------------------- */

/* What a Snowflake or a Sequence holds from its registry: a generator and
 * its lease (Snowflake) or a sequence's holder (Sequence), and the registry
 * under them.  The fields of the other kind stay NULL. */
typedef struct {
  idgen_registry_t *reg;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *gen;
  idgen_seq_t *seq;
} hold_t;

/* The head both object types start with: their life cycle is one.  A call
 * running without the GIL counts itself in `busy` (changed under the GIL);
 * close() meanwhile stops new calls at once and leaves the release to the
 * last call to return, as the library forbids freeing what is in use.  In a
 * forked child nothing is given back: the parent's lease, ranges and
 * holder's entry are not the child's. */
typedef struct holder {
  PyObject_HEAD hold_t h; /* all NULL once closed */
  hold_t pending;         /* closed while calls ran: the last one frees it */
  pid_t pid;              /* the process that made it */
  int busy;               /* calls running without the GIL */
  struct holder **live;   /* the list it is on, for release at exit */
  struct holder *prev, *next;
  PyObject *weakrefs;
} holder_t;

/* The live generators and sequences, each list newest first: _close_all()
 * closes the generators, then the sequences. */
static holder_t *live_sfs, *live_seqs;

static int hold_empty(const hold_t *h) {
  return h->gen == NULL && h->lease == NULL && h->seq == NULL && h->reg == NULL;
}

/* Gives back the generator (the final mark) and the lease, or the unissued
 * rest of a sequence and its holder's entry, then the registry; each
 * bounded by the library.  Without the GIL. */
static void hold_free(hold_t *h) {
  idgen_snowflake_gen_free(h->gen);
  idgen_lease_release(h->lease);
  idgen_seq_close(h->seq);
  idgen_registry_close(h->reg);
  memset(h, 0, sizeof *h);
}

static void hold_free_nogil(hold_t *h) {
  if (hold_empty(h))
    return;
  Py_BEGIN_ALLOW_THREADS hold_free(h);
  Py_END_ALLOW_THREADS
}

/* What s holds, or NULL raised ("WHO: closed"). */
static const hold_t *holder_held(const holder_t *s, const char *who) {
  if (!hold_empty(&s->h))
    return &s->h;
  char msg[80];
  snprintf(msg, sizeof msg, "%s: closed", who);
  raise_idgen(IDGEN_EINVAL, msg);
  return NULL;
}

/* "already made": __init__ called again on a made object. */
static int holder_made(const holder_t *s, const char *who) {
  if (hold_empty(&s->h) && hold_empty(&s->pending))
    return 0;
  char msg[80];
  snprintf(msg, sizeof msg, "%s: already made", who);
  raise_idgen(IDGEN_EINVAL, msg);
  return -1;
}

/* A made object: what it holds, this process as its maker, and a place at
 * the head of its live list. */
static void holder_start(holder_t *s, holder_t **live, const hold_t *h) {
  s->h = *h;
  s->pid = getpid();
  s->live = live;
  s->prev = NULL;
  s->next = *live;
  if (*live)
    (*live)->prev = s;
  *live = s;
}

static void holder_unlink(holder_t *s) {
  if (s->prev)
    s->prev->next = s->next;
  else if (s->live != NULL && *s->live == s)
    *s->live = s->next;
  if (s->next)
    s->next->prev = s->prev;
  s->prev = s->next = NULL;
}

/* Stops s: nothing is issued from now on; what it held is given back now,
 * or by the last call running (busy), or never in a forked child (the
 * parent's). */
static void holder_close_now(holder_t *s) {
  hold_t h = s->h;
  if (hold_empty(&h))
    return; /* closed already: what a running call will give back stays its */
  memset(&s->h, 0, sizeof s->h);
  holder_unlink(s);
  if (getpid() != s->pid)
    return; /* the parent's lease: a child neither writes nor releases it */
  if (s->busy > 0) {
    s->pending = h;
    return;
  }
  hold_free_nogil(&h);
}

/* After a call without the GIL: the release close() left to it. */
static void holder_call_done(holder_t *s) {
  if (--s->busy == 0 && !hold_empty(&s->pending)) {
    hold_t h = s->pending;
    memset(&s->pending, 0, sizeof s->pending);
    hold_free_nogil(&h);
  }
}

/* tp_dealloc's shared part: weak references cleared, then closed. */
static void holder_dealloc(holder_t *s) {
  if (s->weakrefs)
    PyObject_ClearWeakRefs((PyObject *)s);
  holder_close_now(s);
}

static PyObject *holder_close(holder_t *s, PyObject *unused) {
  (void)unused;
  holder_close_now(s);
  Py_RETURN_NONE;
}

static PyObject *holder_closed(holder_t *s, void *closure) {
  (void)closure;
  return PyBool_FromLong(hold_empty(&s->h));
}

/* A failed call's error: "cannot WHAT: " the library's text, the reason
 * when there is one, and in a forked child what to do instead. */
static PyObject *raise_call(int rc, const char *what, const char *reason, const char *forked) {
  char msg[IDGEN_REASON_MAX + 200];
  snprintf(msg, sizeof msg, "cannot %s: %s%s%s%s", what, idgen_strerror(rc), reason[0] ? ": " : "",
           reason, rc == IDGEN_EFORKED ? forked : "");
  return raise_idgen(rc, msg);
}

/* n numbers as a list of int, or NULL raised. */
static PyObject *list_u64(const uint64_t *v, Py_ssize_t n) {
  PyObject *list = PyList_New(n);
  for (Py_ssize_t i = 0; list != NULL && i < n; i++) {
    PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
    if (x == NULL)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, i, x);
  }
  return list;
}

/* ---- Snowflake ------------------------------------------------------------ */

typedef struct {
  holder_t hd;
  PyObject *clock; /* a ManualClock the generator reads (kept alive) */
} sf_t;

/* The options, as the settings table names them (src/common/settings.c):
 * the command's keys, but `ttl_ms` for lease_ttl_ms as the issue and the
 * Node addon name it. */
static char *sf_kwlist[] = {"layout",
                            "registry",
                            "node",
                            "lease_field",
                            "ttl_ms",
                            "max_start_wait_ms",
                            "max_borrow_ms",
                            "max_wait_ms",
                            "clock",
                            "space",
                            "random_sequence_start",
                            NULL};

/* An option's text: str; node also takes a mapping {field: value}. */
static int opt_text(const char *key, PyObject *v, char *buf, size_t n, int mapping) {
  if (v == NULL || v == Py_None)
    return 0;
  if (mapping && PyDict_Check(v)) {
    PyObject *k, *x;
    Py_ssize_t pos = 0;
    size_t o = 0;
    buf[0] = 0;
    while (PyDict_Next(v, &pos, &k, &x)) {
      PyObject *ks = PyObject_Str(k), *xs = PyObject_Str(x);
      const char *kc = ks ? PyUnicode_AsUTF8(ks) : NULL, *xc = xs ? PyUnicode_AsUTF8(xs) : NULL;
      if (kc && xc && o < n)
        o += (size_t)snprintf(buf + o, n - o, "%s%s=%s", o ? "," : "", kc, xc);
      Py_XDECREF(ks);
      Py_XDECREF(xs);
      if (kc == NULL || xc == NULL)
        return -1;
    }
    if (o >= n) {
      raise_key(IDGEN_EINVAL, key, NULL, "too long");
      return -1;
    }
    return 1;
  }
  if (!PyUnicode_Check(v)) {
    PyErr_Format(err_class[0], "%s: expected a string%s, not %.80s", key,
                 mapping ? " or a dict" : "", Py_TYPE(v)->tp_name);
    return -1;
  }
  Py_ssize_t len;
  const char *s = PyUnicode_AsUTF8AndSize(v, &len);
  if (s == NULL)
    return -1;
  if ((size_t)len >= n || strlen(s) != (size_t)len) {
    raise_key(IDGEN_EINVAL, key, NULL, (size_t)len >= n ? "too long" : "holds a NUL character");
    return -1;
  }
  memcpy(buf, s, (size_t)len + 1);
  return 1;
}

/* An integer option within [lo, hi], the command's message otherwise. */
static int opt_int(const char *key, PyObject *v, int64_t lo, int64_t hi, int64_t *out) {
  if (v == NULL || v == Py_None)
    return 0;
  int over = 0, is_int = PyLong_Check(v) && !PyBool_Check(v);
  long long x = is_int ? PyLong_AsLongLongAndOverflow(v, &over) : 0;
  if (is_int && !over && x >= lo && x <= hi) {
    *out = x;
    return 1;
  }
  /* refused: an int out of range shown as its digits, anything else as its repr */
  char text[64], msg[96];
  snprintf(msg, sizeof msg, "not a whole number from %lld to %lld", (long long)lo, (long long)hi);
  PyObject *r = is_int ? PyObject_Str(v) : PyObject_Repr(v);
  const char *rc = r ? PyUnicode_AsUTF8(r) : NULL;
  snprintf(text, sizeof text, "%s", rc ? rc : "?");
  Py_XDECREF(r);
  PyErr_Clear();
  raise_key(IDGEN_ERANGE, key, text, msg);
  return -1;
}

/* The unknown option's refusal: the name and the known ones. */
static int check_kwargs(PyObject *kw, char **known, const char *who) {
  if (kw == NULL)
    return 0;
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  while (PyDict_Next(kw, &pos, &k, &v)) {
    const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    int found = 0;
    for (char **p = known; name && *p; p++)
      found |= strcmp(*p, name) == 0;
    if (!found) {
      char list[600];
      size_t o = 0;
      for (char **p = known; *p && o < sizeof list; p++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", o ? ", " : "", *p);
      char msg[800];
      snprintf(msg, sizeof msg, "%s: unknown option %s (known: %s)", who, name ? name : "?", list);
      raise_idgen(IDGEN_EINVAL, msg);
      return -1;
    }
  }
  return 0;
}

/* The options by name into o (in known's order; NULL where absent), an
 * unknown one refused: 0, or -1 raised. */
static int kw_options(PyObject *kw, char **known, const char *who, PyObject **o) {
  if (check_kwargs(kw, known, who) < 0)
    return -1;
  for (size_t i = 0; known[i] != NULL; i++)
    o[i] = kw ? PyDict_GetItemString(kw, known[i]) : NULL;
  return 0;
}

/* clock: a ManualClock (*clk, read through it) or a clock mode's word
 * (*mode): 1 given, 0 absent, -1 raised. */
static int opt_clock(PyObject *v, const idgen_clock_t **clk, idgen_clock_mode_t *mode) {
  if (v == NULL || v == Py_None)
    return 0;
  if (PyObject_TypeCheck(v, &ManualClockType)) {
    *clk = &((mclock_t *)v)->clk;
    return 1;
  }
  char word[32];
  if (opt_text("clock", v, word, sizeof word, 0) < 0)
    return -1;
  if (idgen_clock_mode_parse(word, mode, NULL, 0) < 0) {
    raise_key(IDGEN_EINVAL, "clock", word, "expected " IDGEN_CLOCK_MODE_WORDS);
    return -1;
  }
  return 1;
}

/* The registry: the host's default where none is given (never the working
 * directory's), then checked: 0, or -1 raised. */
static int registry_resolve(char *registry, size_t n) {
  char err[ERR_MAX] = "";
  int rc;
  if (!registry[0] && (rc = idgen_registry_default_uri(registry, n, err, sizeof err)) < 0) {
    raise_key(rc, "registry", NULL, err);
    return -1;
  }
  if ((rc = idgen_registry_check(registry, err, sizeof err)) < 0) {
    raise_key(rc, "registry", registry, err);
    return -1;
  }
  return 0;
}

/* registry[n] with the ID space `space` (if any) in it, checked: 0, or -1
 * raised naming the space. */
static int registry_space(char *registry, size_t n, const char *space) {
  char err[ERR_MAX] = "", uri[2048]; /* as the callers' registry buffers */
  int rc;
  if (!space[0])
    return 0;
  if ((rc = idgen_registry_uri_with_space(registry, space, uri, sizeof uri, err, sizeof err)) < 0 ||
      (rc = idgen_registry_check(uri, err, sizeof err)) < 0) {
    raise_key(rc, "space", space, strncmp(err, "registry: ", 10) == 0 ? err + 10 : err);
    return -1;
  }
  snprintf(registry, n, "%s", uri);
  return 0;
}

static PyTypeObject SnowflakeType;

static int sf_init(sf_t *self, PyObject *args, PyObject *kw) {
  if (holder_made(&self->hd, "Snowflake") < 0)
    return -1;
  if (PyTuple_GET_SIZE(args) != 0) {
    raise_idgen(IDGEN_EINVAL, "Snowflake: options are given by name (Snowflake(layout=..., "
                              "registry=..., node=...))");
    return -1;
  }
  PyObject *o[sizeof sf_kwlist / sizeof sf_kwlist[0]] = {0};
  if (kw_options(kw, sf_kwlist, "Snowflake", o) < 0)
    return -1;

  char layout_s[IDGEN_LAYOUT_SPEC_MAX] = "twitter", registry[2048] = "", node[1024] = "";
  char field[IDGEN_FIELD_NAME_MAX + 32] = "", space[IDGEN_SPACE_NAME_MAX + 32] = "";
  int64_t ttl = 0, start_wait = IDGEN_START_WAIT_DEFAULT, borrow = -1, wait = -1;
  int has_field;
  if (opt_text("layout", o[0], layout_s, sizeof layout_s, 0) < 0 ||
      opt_text("registry", o[1], registry, sizeof registry, 0) < 0 ||
      opt_text("node", o[2], node, sizeof node, 1) < 0 ||
      (has_field = opt_text("lease_field", o[3], field, sizeof field, 0)) < 0 ||
      opt_text("space", o[9], space, sizeof space, 0) < 0)
    return -1;

  char err[ERR_MAX] = "";
  idgen_layout_t layout;
  int rc = idgen_layout_parse(&layout, layout_s, err, sizeof err); /* a preset keeps its name */
  if (rc < 0) {
    raise_key(rc, "layout", layout_s, err);
    return -1;
  }
  idgen_snowflake_settings_t set;
  idgen_snowflake_settings_init(&set);
  unsigned given = 0;
  rc = idgen_layout_nodes_parse(&layout, node, idgen_host_node_resolve, NULL, set.node, &given, err,
                                sizeof err);
  if (rc < 0) {
    raise_key(rc, "node", node, err);
    return -1;
  }
  int from_host = strchr(node, '@') != NULL;
  if (registry_resolve(registry, sizeof registry) < 0 ||
      registry_space(registry, sizeof registry, space) < 0)
    return -1;
  if (has_field > 0 && field[0] && (rc = idgen_lease_field(&layout, field, err, sizeof err)) < 0) {
    raise_key(rc, "lease_field", field, err);
    return -1;
  }
  if (o[4] != NULL && o[4] != Py_None && PyLong_Check(o[4]) && !PyBool_Check(o[4])) {
    int over = 0;
    long long x = PyLong_AsLongLongAndOverflow(o[4], &over);
    if (!over && !(x == -1 && PyErr_Occurred()) &&
        (rc = idgen_lease_ttl_check(x, err, sizeof err)) < 0) {
      char t[32];
      snprintf(t, sizeof t, "%lld", x);
      raise_key(rc, "ttl_ms", t, err);
      return -1;
    }
    PyErr_Clear();
  }
  if (opt_int("ttl_ms", o[4], IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS, &ttl) < 0 ||
      opt_int("max_start_wait_ms", o[5], 0, IDGEN_START_WAIT_MS_MAX, &start_wait) < 0 ||
      opt_int("max_borrow_ms", o[6], 0, IDGEN_MAX_BORROW_MS_MAX, &borrow) < 0 ||
      opt_int("max_wait_ms", o[7], 0, IDGEN_MAX_WAIT_MS_MAX, &wait) < 0)
    return -1;
  if (borrow >= 0)
    set.max_borrow_ms = borrow;
  if (wait >= 0)
    set.max_wait_ms = wait;
  if (opt_clock(o[8], &set.clock, &set.clock_mode) < 0)
    return -1;
  PyObject *clock_obj = set.clock != NULL ? o[8] : NULL;
  if (o[10] != NULL && o[10] != Py_None) {
    int b = PyObject_IsTrue(o[10]);
    if (b < 0)
      return -1;
    set.random_sequence_start = b;
  }
  /* the rules between registry, field and node values: the library's */
  static const char *const blame[] = {[IDGEN_LEASE_SETTING_NONE] = "options",
                                      [IDGEN_LEASE_SETTING_REGISTRY] = "registry",
                                      [IDGEN_LEASE_SETTING_LAYOUT] = "layout",
                                      [IDGEN_LEASE_SETTING_NODE] = "node",
                                      [IDGEN_LEASE_SETTING_FIELD] = "lease_field"};
  const char *fieldp = has_field > 0 && field[0] ? field : NULL;
  idgen_lease_settings_t ls = {.uri = registry,
                               .layout = &layout,
                               .field = fieldp,
                               .node_given = given,
                               .node_from_host = from_host};
  if ((rc = idgen_lease_settings_verify(&ls, err, sizeof err)) < 0) {
    const char *k = blame[ls.blame];
    const char *v = ls.blame == IDGEN_LEASE_SETTING_REGISTRY ? registry
                    : ls.blame == IDGEN_LEASE_SETTING_LAYOUT ? layout_s
                    : ls.blame == IDGEN_LEASE_SETTING_NODE   ? node
                    : ls.blame == IDGEN_LEASE_SETTING_FIELD  ? field
                                                             : NULL;
    raise_key(rc, k, v, err);
    return -1;
  }

  hold_t h = {0};
  idgen_bind_request_t req = {.layout = &layout,
                              .settings = &set,
                              .field = fieldp,
                              .ttl_ms = ttl,
                              .max_start_wait_ms = start_wait};
  Py_BEGIN_ALLOW_THREADS rc = idgen_registry_open(&h.reg, registry, err, sizeof err);
  if (rc == 0)
    rc = idgen_registry_bind(h.reg, &req, &h.lease, &h.gen, err, sizeof err);
  if (rc < 0)
    hold_free(&h);
  Py_END_ALLOW_THREADS if (rc < 0) {
    raise_idgen(rc, err);
    return -1;
  }
  holder_start(&self->hd, &live_sfs, &h);
  Py_XINCREF(clock_obj);
  Py_XSETREF(self->clock, clock_obj);
  return 0;
}

static void sf_dealloc(sf_t *self) {
  PyObject_GC_UnTrack(self);
  holder_dealloc(&self->hd);
  Py_CLEAR(self->clock);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

static int sf_traverse(sf_t *self, visitproc visit, void *arg) {
  Py_VISIT(self->clock);
  return 0;
}

/* Nothing to break: a ManualClock holds no references, so the clock is in
 * no cycle, and the generator reads it until dealloc has freed it. */
static int sf_clear(sf_t *self) {
  (void)self;
  return 0;
}

/* The generator, or NULL raised (closed). */
static idgen_snowflake_gen_t *sf_gen(sf_t *s) {
  const hold_t *h = holder_held(&s->hd, "Snowflake");
  return h != NULL ? h->gen : NULL;
}

/* A failed call's error: the command's "cannot make an ID: ..." and the
 * lease's reason when there is one. */
static PyObject *raise_next(idgen_snowflake_gen_t *g, int rc) {
  idgen_snowflake_lease_status_t st;
  st.reason[0] = 0;
  if (rc == IDGEN_ELEASE || rc == IDGEN_EMARK)
    idgen_snowflake_gen_lease_status(g, &st);
  return raise_call(rc, "make an ID", st.reason, " (make a new Snowflake in the child process)");
}

static PyObject *sf_next(sf_t *self, PyObject *unused) {
  (void)unused;
  idgen_snowflake_gen_t *g = sf_gen(self);
  if (g == NULL)
    return NULL;
  uint64_t id;
  int rc;
  self->hd.busy++;
  Py_BEGIN_ALLOW_THREADS rc = idgen_snowflake_gen_next(g, &id);
  Py_END_ALLOW_THREADS if (rc < 0) raise_next(g, rc);
  holder_call_done(&self->hd);
  if (rc < 0)
    return NULL;
  return PyLong_FromUnsignedLongLong(id);
}

/* next_batch(n): n IDs, increasing.  A batch larger than one call can fill
 * within max_wait_ms is made in parts of what the clock allows, as the
 * command makes `-n N` (each part one call, bounded). */
static PyObject *sf_next_batch(sf_t *self, PyObject *arg) {
  Py_ssize_t n = PyLong_AsSsize_t(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  if (n < 0)
    return raise_idgen(IDGEN_EINVAL, "next_batch(n): n must be >= 0");
  idgen_snowflake_gen_t *g = sf_gen(self);
  if (g == NULL)
    return NULL;
  uint64_t *ids = PyMem_RawMalloc(n ? (size_t)n * sizeof *ids : 1);
  if (ids == NULL)
    return PyErr_NoMemory();
  int rc = 0;
  self->hd.busy++;
  Py_BEGIN_ALLOW_THREADS size_t done = 0;
  int one = 0;
  while (done < (size_t)n) {
    uint64_t room = one ? 1 : idgen_snowflake_gen_capacity(g);
    size_t k = (size_t)n - done;
    if (room < k)
      k = room > 0 ? (size_t)room : 1;
    rc = idgen_snowflake_gen_next_n(g, ids + done, k);
    one = rc == IDGEN_EBATCH;
    if (one)
      continue;
    if (rc < 0)
      break;
    done += k;
  }
  Py_END_ALLOW_THREADS if (rc < 0) raise_next(g, rc);
  holder_call_done(&self->hd);
  PyObject *list = rc == 0 ? list_u64(ids, n) : NULL;
  PyMem_RawFree(ids);
  return list;
}

/* Sets d[key] = v (stolen); -1 on failure. */
static int put(PyObject *d, const char *key, PyObject *v) {
  if (v == NULL)
    return -1;
  int rc = PyDict_SetItemString(d, key, v);
  Py_DECREF(v);
  return rc;
}

/* lease() -> dict, or None (static: nothing leased).  registry is
 * idgen_registry_uri's: every secret masked (idgen_registry_uri_redact). */
static PyObject *sf_lease(sf_t *self, PyObject *unused) {
  (void)unused;
  if (sf_gen(self) == NULL)
    return NULL;
  if (self->hd.h.lease == NULL)
    Py_RETURN_NONE;
  idgen_lease_info_t li;
  idgen_lease_info(self->hd.h.lease, &li);
  PyObject *d = PyDict_New();
  if (d == NULL || put(d, "worker", PyLong_FromUnsignedLongLong(li.worker)) < 0 ||
      put(d, "node", PyUnicode_FromString(li.node)) < 0 ||
      put(d, "pool", PyUnicode_FromString(li.pool)) < 0 ||
      put(d, "space", PyUnicode_FromString(li.space)) < 0 ||
      put(d, "holder", PyUnicode_FromString(li.holder)) < 0 ||
      put(d, "generation", PyLong_FromUnsignedLongLong(li.generation)) < 0 ||
      put(d, "key", PyLong_FromUnsignedLongLong(li.key)) < 0 ||
      put(d, "mark_ms", PyLong_FromLongLong(li.mark_ms)) < 0 ||
      put(d, "ttl_ms", PyLong_FromLongLong(li.ttl_ms)) < 0 ||
      put(d, "expires_ms", PyLong_FromLongLong(li.expires_ms)) < 0 ||
      put(d, "registry", PyUnicode_FromString(idgen_registry_uri(self->hd.h.reg))) < 0) {
    Py_XDECREF(d);
    return NULL;
  }
  return d;
}

/* layout_spec: the generator's layout as text. */
static PyObject *sf_layout(sf_t *self, void *closure) {
  (void)closure;
  idgen_snowflake_gen_t *g = sf_gen(self);
  if (g == NULL)
    return NULL;
  const idgen_layout_t *l = idgen_snowflake_gen_layout(g);
  if (l->preset[0])
    return PyUnicode_FromString(l->preset);
  char buf[IDGEN_LAYOUT_SPEC_MAX];
  if (idgen_layout_format(l, buf, sizeof buf) < 0)
    return raise_idgen(IDGEN_ERANGE, NULL);
  return PyUnicode_FromString(buf);
}

static PyMethodDef sf_methods[] = {
    {"next", (PyCFunction)sf_next, METH_NOARGS,
     "next() -> int: the next ID (may wait: GIL released)"},
    {"next_batch", (PyCFunction)sf_next_batch, METH_O, "next_batch(n) -> list[int], increasing"},
    {"lease", (PyCFunction)sf_lease, METH_NOARGS, "lease() -> dict or None (static)"},
    {"close", (PyCFunction)holder_close, METH_NOARGS, "close(): releases the lease; idempotent"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef sf_getset[] = {
    {"closed", (getter)holder_closed, NULL, "True once closed", NULL},
    {"layout", (getter)sf_layout, NULL, "the layout: a preset's name or its spec", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SnowflakeType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.Snowflake",
    .tp_basicsize = sizeof(sf_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Snowflake(**options): a generator of Snowflake IDs (see idgen.Snowflake)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sf_init,
    .tp_dealloc = (destructor)sf_dealloc,
    .tp_traverse = (traverseproc)sf_traverse,
    .tp_clear = (inquiry)sf_clear,
    .tp_weaklistoffset = offsetof(sf_t, hd.weakrefs),
    .tp_methods = sf_methods,
    .tp_getset = sf_getset};

/* ---- Sequence ------------------------------------------------------------- */

/* A named sequence's holder (idgen_seq_*): dense numbers of a counter in a
 * registry.  Released as a Snowflake's lease is (holder_t): close(),
 * collection, exit; a call running without the GIL keeps it alive (busy); a
 * forked child never closes the parent's holder. */
typedef struct {
  holder_t hd;
} sq_t;

/* The keywords of Sequence(name, ...): idgen_seq_settings_t's names. */
static char *sq_kwlist[] = {"name",   "registry",          "space",  "min_step", "max_step",
                            "step",   "prefetch",          "ahead",  "ttl_ms",   "wait_ms",
                            "strict", "segment_target_ms", "format", "tz",       NULL};

/* A float option within (lo, hi) exclusive, the command's message
 * otherwise: 1 given, 0 absent, -1 raised. */
static int opt_float(const char *key, PyObject *v, double lo, double hi, double *out) {
  if (v == NULL || v == Py_None)
    return 0;
  double d = PyFloat_AsDouble(v);
  if ((d == -1.0 && PyErr_Occurred()) || PyBool_Check(v) || !(d > lo && d < hi)) {
    PyErr_Clear();
    char msg[96];
    snprintf(msg, sizeof msg, "not a number between %g and %g", lo, hi);
    raise_key(IDGEN_ERANGE, key, NULL, msg);
    return -1;
  }
  *out = d;
  return 1;
}

/* The keywords into set (zero: the library's default) and the texts into
 * the buffers: 0, or -1 raised. */
static int sq_settings(PyObject **o, idgen_seq_settings_t *set, char *registry, size_t rn,
                       char *space, size_t sn, char *format, size_t fn, char *tz, size_t tn) {
  const int64_t big = INT64_MAX;
  int64_t min_step = 0, max_step = 0, step = 0, ahead = 0, ttl = 0, wait = 0, target = 0;
  int got_fmt, got_tz, got_wait;
  if (opt_text("registry", o[1], registry, rn, 0) < 0 ||
      opt_text("space", o[2], space, sn, 0) < 0 ||
      opt_int("min_step", o[3], 1, big, &min_step) < 0 ||
      opt_int("max_step", o[4], 1, big, &max_step) < 0 ||
      opt_int("step", o[5], 1, big, &step) < 0 ||
      opt_float("prefetch", o[6], 0, 1, &set->prefetch) < 0 ||
      opt_int("ahead", o[7], 1, 4, &ahead) < 0 || opt_int("ttl_ms", o[8], 1, big, &ttl) < 0 ||
      (got_wait = opt_int("wait_ms", o[9], -1, big, &wait)) < 0 ||
      opt_int("segment_target_ms", o[11], 1, big, &target) < 0 ||
      (got_fmt = opt_text("format", o[12], format, fn, 0)) < 0 ||
      (got_tz = opt_text("tz", o[13], tz, tn, 0)) < 0)
    return -1;
  if (o[10] != NULL && o[10] != Py_None && (set->strict = PyObject_IsTrue(o[10])) < 0)
    return -1;
  set->min_step = (uint64_t)min_step;
  set->max_step = (uint64_t)max_step;
  set->step = (uint64_t)step;
  set->ahead = (int)ahead;
  set->ttl_ms = ttl;
  set->segment_target_ms = target;
  if (got_wait > 0)
    set->wait_ms = wait == 0 ? -1 : wait; /* 0: no wait (the library's 0 is its default) */
  set->format = got_fmt > 0 ? format : NULL;
  set->tz = got_tz > 0 && tz[0] ? tz : NULL;
  return 0;
}

static int sq_init(sq_t *self, PyObject *args, PyObject *kw) {
  if (holder_made(&self->hd, "Sequence") < 0)
    return -1;
  PyObject *o[sizeof sq_kwlist / sizeof sq_kwlist[0]] = {0};
  if (kw_options(kw, sq_kwlist, "Sequence", o) < 0)
    return -1;
  Py_ssize_t na = PyTuple_GET_SIZE(args);
  if (na > 1 || (na == 1 && o[0] != NULL)) {
    raise_idgen(IDGEN_EINVAL, "Sequence: one name, then options by keyword (Sequence(\"orders\", "
                              "registry=...))");
    return -1;
  }
  if (na == 1)
    o[0] = PyTuple_GET_ITEM(args, 0);
  char name[IDGEN_SEQ_NAME_MAX + 8] = "", registry[2048] = "",
                                 space[IDGEN_SPACE_NAME_MAX + 32] = "";
  char format[512] = "", tz[128] = "", err[ERR_MAX] = "";
  idgen_seq_settings_t set;
  memset(&set, 0, sizeof set);
  if (o[0] == NULL) {
    raise_idgen(IDGEN_EINVAL, "Sequence: a name is needed (Sequence(\"orders\", ...))");
    return -1;
  }
  if (opt_text("name", o[0], name, sizeof name, 0) < 0 ||
      sq_settings(o, &set, registry, sizeof registry, space, sizeof space, format, sizeof format,
                  tz, sizeof tz) < 0)
    return -1;
  if (registry_resolve(registry, sizeof registry) < 0)
    return -1;
  int rc = 0;
  if (registry_space(registry, sizeof registry, space) < 0)
    return -1;
  hold_t h = {0};
  Py_BEGIN_ALLOW_THREADS rc = idgen_registry_open(&h.reg, registry, err, sizeof err);
  if (rc == 0)
    rc = idgen_seq_open(&h.seq, h.reg, name, &set, err, sizeof err);
  if (rc < 0)
    hold_free(&h);
  Py_END_ALLOW_THREADS if (rc < 0) {
    raise_idgen(rc, err);
    return -1;
  }
  holder_start(&self->hd, &live_seqs, &h);
  return 0;
}

static void sq_dealloc(sq_t *self) {
  holder_dealloc(&self->hd);
  Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The sequence, or NULL raised (closed). */
static idgen_seq_t *sq_seq(sq_t *s) {
  const hold_t *h = holder_held(&s->hd, "Sequence");
  return h != NULL ? h->seq : NULL;
}

/* A failed call's error, with the last claim's reason when there is one. */
static PyObject *raise_seq(idgen_seq_t *q, int rc) {
  idgen_seq_stats_t st;
  st.reason[0] = 0;
  if (rc == IDGEN_EREGISTRY || rc == IDGEN_ELEASE)
    idgen_seq_stats(q, &st);
  return raise_call(rc, "take a number", st.reason,
                    " (open the Sequence again in the child process)");
}

static PyObject *sq_next(sq_t *self, PyObject *unused) {
  (void)unused;
  idgen_seq_t *q = sq_seq(self);
  if (q == NULL)
    return NULL;
  uint64_t n = 0;
  int rc;
  self->hd.busy++;
  Py_BEGIN_ALLOW_THREADS rc = idgen_seq_next(q, &n);
  Py_END_ALLOW_THREADS if (rc < 0) raise_seq(q, rc);
  holder_call_done(&self->hd);
  return rc < 0 ? NULL : PyLong_FromUnsignedLongLong(n);
}

static PyObject *sq_next_batch(sq_t *self, PyObject *arg) {
  Py_ssize_t n = PyLong_AsSsize_t(arg);
  if (n == -1 && PyErr_Occurred())
    return NULL;
  if (n < 0 || n > 100000000)
    return raise_idgen(IDGEN_EINVAL, "next_batch(n): n must be from 0 to 100,000,000");
  idgen_seq_t *q = sq_seq(self);
  if (q == NULL)
    return NULL;
  uint64_t *v = PyMem_RawMalloc(n ? (size_t)n * sizeof *v : 1);
  if (v == NULL)
    return PyErr_NoMemory();
  int rc = 0;
  self->hd.busy++;
  Py_BEGIN_ALLOW_THREADS if (n > 0) rc = idgen_seq_next_n(q, v, (size_t)n);
  Py_END_ALLOW_THREADS if (rc < 0) raise_seq(q, rc);
  holder_call_done(&self->hd);
  PyObject *list = rc == 0 ? list_u64(v, n) : NULL;
  PyMem_RawFree(v);
  return list;
}

static PyObject *sq_next_text(sq_t *self, PyObject *unused) {
  (void)unused;
  idgen_seq_t *q = sq_seq(self);
  if (q == NULL)
    return NULL;
  char text[1024];
  int rc;
  self->hd.busy++;
  Py_BEGIN_ALLOW_THREADS rc = idgen_seq_next_text(q, text, sizeof text, NULL);
  Py_END_ALLOW_THREADS if (rc == IDGEN_EINVAL)
      raise_idgen(rc, "next_text(): the sequence has no format (Sequence(name, format=...))");
  else if (rc < 0) raise_seq(q, rc);
  holder_call_done(&self->hd);
  return rc < 0 ? NULL : PyUnicode_FromStringAndSize(text, rc);
}

static PyObject *sq_stats(sq_t *self, PyObject *unused) {
  (void)unused;
  idgen_seq_t *q = sq_seq(self);
  if (q == NULL)
    return NULL;
  idgen_seq_stats_t st;
  idgen_seq_stats(q, &st);
  PyObject *d = PyDict_New();
  if (d == NULL || put(d, "key", PyUnicode_FromString(st.key)) < 0 ||
      put(d, "generation", PyLong_FromUnsignedLongLong(st.generation)) < 0 ||
      put(d, "step", PyLong_FromUnsignedLongLong(st.step)) < 0 ||
      put(d, "in_hand", PyLong_FromUnsignedLongLong(st.in_hand)) < 0 ||
      put(d, "issued", PyLong_FromUnsignedLongLong(st.issued)) < 0 ||
      put(d, "claimed", PyLong_FromUnsignedLongLong(st.claimed)) < 0 ||
      put(d, "claims", PyLong_FromUnsignedLongLong(st.claims)) < 0 ||
      put(d, "given_back", PyLong_FromUnsignedLongLong(st.given_back)) < 0 ||
      put(d, "claim_failures", PyLong_FromUnsignedLongLong(st.claim_failures)) < 0 ||
      put(d, "failing", PyBool_FromLong(st.failing)) < 0 ||
      put(d, "rate", PyFloat_FromDouble(st.rate)) < 0 ||
      put(d, "lasts_ms", PyLong_FromLongLong(st.lasts_ms)) < 0 ||
      put(d, "claim_ns_last", PyLong_FromLongLong(st.claim_ns_last)) < 0 ||
      put(d, "claim_ns_max", PyLong_FromLongLong(st.claim_ns_max)) < 0 ||
      put(d, "reason", PyUnicode_FromString(st.reason)) < 0) {
    Py_XDECREF(d);
    return NULL;
  }
  return d;
}

static PyMethodDef sq_methods[] = {
    {"next", (PyCFunction)sq_next, METH_NOARGS,
     "next() -> int: the next number (may wait for a claim: GIL released)"},
    {"next_batch", (PyCFunction)sq_next_batch, METH_O, "next_batch(n) -> list[int], increasing"},
    {"next_text", (PyCFunction)sq_next_text, METH_NOARGS,
     "next_text() -> str: the business number (the format rendered)"},
    {"stats", (PyCFunction)sq_stats, METH_NOARGS, "stats() -> dict: this holder's counts"},
    {"close", (PyCFunction)holder_close, METH_NOARGS,
     "close(): gives back the unissued rest; idempotent"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef sq_getset[] = {{"closed", (getter)holder_closed, NULL, "True once closed", NULL},
                                  {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject SequenceType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.Sequence",
    .tp_basicsize = sizeof(sq_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Sequence(name, **options): dense numbers of a named counter (see idgen.Sequence)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sq_init,
    .tp_dealloc = (destructor)sq_dealloc,
    .tp_weaklistoffset = offsetof(sq_t, hd.weakrefs),
    .tp_methods = sq_methods,
    .tp_getset = sq_getset};

/* ---- ULID and UUIDv7 ------------------------------------------------------ */

static PyObject *uuid_cls, *uuid_int_descr, *uuid_safe_descr, *safe_unknown;

/* A uuid.UUID of 16 big-endian bytes, made as uuid.UUID(int=...) makes it
 * (its two slots set), without its argument checks. */
static PyObject *make_uuid(const uint8_t b[16]) {
  PyObject *i = _PyLong_FromByteArray(b, 16, 0, 0);
  if (i == NULL)
    return NULL;
  PyTypeObject *t = (PyTypeObject *)uuid_cls;
  PyObject *u = t->tp_alloc(t, 0);
  if (u == NULL || Py_TYPE(uuid_int_descr)->tp_descr_set(uuid_int_descr, u, i) < 0 ||
      Py_TYPE(uuid_safe_descr)->tp_descr_set(uuid_safe_descr, u, safe_unknown) < 0)
    Py_CLEAR(u);
  Py_DECREF(i);
  return u;
}

/* The 16 bytes of a uuid.UUID or its text. */
static int uuid_arg(PyObject *v, idgen_uuid_t *out) {
  if (PyObject_TypeCheck(v, (PyTypeObject *)uuid_cls)) {
    PyObject *i = PyObject_GetAttrString(v, "int");
    if (i == NULL)
      return -1;
    /* int.to_bytes: _PyLong_AsByteArray's arguments changed in 3.13 */
    PyObject *b = PyObject_CallMethod(i, "to_bytes", "is", 16, "big");
    Py_DECREF(i);
    if (b == NULL)
      return -1;
    int ok = PyBytes_Check(b) && PyBytes_GET_SIZE(b) == 16;
    if (ok)
      memcpy(out->bytes, PyBytes_AS_STRING(b), 16);
    Py_DECREF(b);
    return ok ? 0 : -1;
  }
  Py_ssize_t len;
  const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
  if (s == NULL) {
    if (!PyErr_Occurred())
      raise_idgen(IDGEN_EINVAL, "expected a uuid.UUID or its text");
    return -1;
  }
  char err[ERR_MAX];
  int rc = idgen_uuid_parse(out, s, (size_t)len, err, sizeof err);
  if (rc < 0) {
    raise_idgen(rc, err);
    return -1;
  }
  return 0;
}

static PyObject *ulid_text(const idgen_ulid_t *u) {
  char text[IDGEN_ULID_STRLEN + 1];
  idgen_ulid_format(u, text);
  return PyUnicode_FromStringAndSize(text, IDGEN_ULID_STRLEN);
}

static PyObject *mod_ulid(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  idgen_ulid_t u;
  int rc = idgen_ulid_make(&u, idgen_clock_now_ms(IDGEN_CLOCK_FAST), NULL);
  if (rc < 0)
    return raise_idgen(rc, NULL);
  return ulid_text(&u);
}

static PyObject *mod_uuid7(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  idgen_uuid_t u;
  int rc = idgen_uuid7_make(&u);
  if (rc < 0)
    return raise_idgen(rc, NULL);
  return make_uuid(u.bytes);
}

static PyObject *mod_ulid_to_uuid(PyObject *m, PyObject *arg) {
  (void)m;
  Py_ssize_t len;
  const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
  if (s == NULL)
    return PyErr_Occurred() ? NULL : raise_idgen(IDGEN_EINVAL, "ulid_to_uuid: expected a str");
  char err[ERR_MAX];
  idgen_ulid_t u;
  int rc = idgen_ulid_parse(&u, s, (size_t)len, IDGEN_ULID_STRICT, err, sizeof err);
  if (rc < 0)
    return raise_idgen(rc, err);
  idgen_uuid_t x;
  idgen_ulid_to_uuid(&u, &x);
  return make_uuid(x.bytes);
}

static PyObject *mod_uuid_to_ulid(PyObject *m, PyObject *arg) {
  (void)m;
  idgen_uuid_t x;
  if (uuid_arg(arg, &x) < 0)
    return NULL;
  idgen_ulid_t u;
  idgen_ulid_from_uuid(&x, &u);
  return ulid_text(&u);
}

/* Monotonic ULID and UUIDv7 generators: one type each over one struct. */
typedef struct {
  PyObject_HEAD int uuid;
  idgen_ulid_gen_t *ulid;
  idgen_uuid7_gen_t *uuid7;
  PyObject *clock;
} g128_t;

static char *g128_kwlist[] = {"clock", NULL};

static PyObject *g128_make(PyTypeObject *type, PyObject *args, PyObject *kw, int uuid) {
  if (PyTuple_GET_SIZE(args) != 0)
    return raise_idgen(IDGEN_EINVAL, "options are given by name (clock=...)");
  if (check_kwargs(kw, g128_kwlist, uuid ? "UUID7Generator" : "ULIDGenerator") < 0)
    return NULL;
  PyObject *c = kw ? PyDict_GetItemString(kw, "clock") : NULL;
  idgen_gen128_settings_t s = {0};
  if (opt_clock(c, &s.clock, &s.clock_mode) < 0)
    return NULL;
  g128_t *g = (g128_t *)type->tp_alloc(type, 0);
  if (g == NULL)
    return NULL;
  g->uuid = uuid;
  int rc = uuid ? idgen_uuid7_gen_new(&g->uuid7, &s) : idgen_ulid_gen_new(&g->ulid, &s);
  if (rc < 0) {
    Py_DECREF(g);
    return raise_idgen(rc, NULL);
  }
  if (s.clock) {
    Py_INCREF(c);
    g->clock = c;
  }
  return (PyObject *)g;
}

static PyObject *ulidgen_new(PyTypeObject *t, PyObject *a, PyObject *k) {
  return g128_make(t, a, k, 0);
}
static PyObject *uuid7gen_new(PyTypeObject *t, PyObject *a, PyObject *k) {
  return g128_make(t, a, k, 1);
}

static void g128_dealloc(g128_t *g) {
  idgen_ulid_gen_free(g->ulid);
  idgen_uuid7_gen_free(g->uuid7);
  Py_CLEAR(g->clock);
  Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *g128_next(g128_t *g, PyObject *unused) {
  (void)unused;
  int rc;
  if (g->uuid) {
    idgen_uuid_t u;
    if ((rc = idgen_uuid7_gen_next(g->uuid7, &u)) == 0)
      return make_uuid(u.bytes);
  } else {
    idgen_ulid_t u;
    if ((rc = idgen_ulid_gen_next(g->ulid, &u)) == 0)
      return ulid_text(&u);
  }
  return raise_idgen(rc, NULL);
}

static PyMethodDef g128_methods[] = {
    {"next", (PyCFunction)g128_next, METH_NOARGS, "next(): the next value, increasing"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ULIDGeneratorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.ULIDGenerator",
    .tp_basicsize = sizeof(g128_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ULIDGenerator(clock=None): monotonic ULIDs (str), strictly increasing",
    .tp_new = ulidgen_new,
    .tp_dealloc = (destructor)g128_dealloc,
    .tp_methods = g128_methods};

static PyTypeObject UUID7GeneratorType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.UUID7Generator",
    .tp_basicsize = sizeof(g128_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "UUID7Generator(clock=None): monotonic UUIDv7s (uuid.UUID), strictly increasing",
    .tp_new = uuid7gen_new,
    .tp_dealloc = (destructor)g128_dealloc,
    .tp_methods = g128_methods};

/* ---- layouts: decode, plan, info, compose --------------------------------- */

/* The layout named by `text` (the last one asked for is kept: decoding
 * many IDs of one layout parses it once; under the GIL), or NULL raised
 * with the command's message. */
static char cached_text[IDGEN_LAYOUT_SPEC_MAX];
static idgen_layout_t cached_layout;

static const idgen_layout_t *layout_of(const char *text) {
  if (cached_text[0] && strcmp(cached_text, text) == 0)
    return &cached_layout;
  cached_text[0] = 0;
  char err[ERR_MAX];
  int rc = idgen_layout_parse(&cached_layout, text, err, sizeof err);
  if (rc < 0) { /* as `idgen decode --layout` and `idgen plan --layout` say it */
    raise_idgen(rc, err);
    return NULL;
  }
  snprintf(cached_text, sizeof cached_text, "%s", text);
  return &cached_layout;
}

/* decode_visit's calls as a dict: the object of `idgen decode --json`,
 * key by key, without its text. */
typedef struct dict_sink {
  PyObject *top, *cur; /* cur: top, or the nested object being filled */
  int failed;
} dict_sink_t;

/* The dict's keys as str objects made once (under the GIL): decode_visit's
 * keys are few, the kinds' and a layout's field names.  A slot is known by
 * the text's address and checked by its content (a layout parsed again
 * may put other names at the same address). */
static PyObject *key_str(const char *key) {
  static struct {
    const char *at;
    char text[32];
    PyObject *str;
  } keys[32];
  static unsigned next;
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (keys[i].at == key && strcmp(keys[i].text, key) == 0) {
      Py_INCREF(keys[i].str);
      return keys[i].str;
    }
  PyObject *str = PyUnicode_InternFromString(key);
  if (str == NULL || strlen(key) >= sizeof keys[0].text)
    return str;
  unsigned i = next++ % (sizeof keys / sizeof keys[0]);
  Py_XSETREF(keys[i].str, (Py_INCREF(str), str));
  keys[i].at = key;
  strcpy(keys[i].text, key);
  return str;
}

static void dict_put(dict_sink_t *ds, const char *key, PyObject *v) {
  PyObject *k = v != NULL ? key_str(key) : NULL;
  if (k == NULL || PyDict_SetItem(ds->cur, k, v) < 0)
    ds->failed = 1;
  Py_XDECREF(k);
  Py_XDECREF(v);
}

static void dict_text(void *ctx, const char *key, const char *v) {
  dict_sink_t *ds = ctx;
  if (!ds->failed)
    dict_put(ds, key, PyUnicode_FromString(v));
}

static void dict_number(void *ctx, const char *key, int64_t v) {
  dict_sink_t *ds = ctx;
  if (!ds->failed)
    dict_put(ds, key, PyLong_FromLongLong(v));
}

static void dict_object(void *ctx, const char *key) {
  dict_sink_t *ds = ctx;
  if (ds->failed)
    return;
  PyObject *inner = PyDict_New(), *k = inner != NULL ? key_str(key) : NULL;
  if (k != NULL && PyDict_SetItem(ds->cur, k, inner) == 0)
    ds->cur = inner; /* the outer dict holds it */
  else
    ds->failed = 1;
  Py_XDECREF(k);
  Py_XDECREF(inner);
}

static void dict_end(void *ctx) {
  dict_sink_t *ds = ctx;
  ds->cur = ds->top;
}

/* _decode(id, layout, lenient) -> the object of `idgen decode --json` as a dict. */
static PyObject *mod_decode(PyObject *m, PyObject *args) {
  static const decode_sink_t sink = {dict_text, dict_number, dict_object, dict_end};
  (void)m;
  PyObject *idv;
  const char *layout;
  int lenient = 0;
  if (!PyArg_ParseTuple(args, "Os|p", &idv, &layout, &lenient))
    return NULL;
  if (!PyLong_Check(idv) && !PyUnicode_Check(idv) &&
      !PyObject_TypeCheck(idv, (PyTypeObject *)uuid_cls))
    return raise_idgen(IDGEN_EINVAL, "decode(id): id must be an int, a str or a uuid.UUID");
  PyObject *str = PyUnicode_Check(idv) ? (Py_INCREF(idv), idv) : PyObject_Str(idv);
  if (str == NULL)
    return NULL;
  Py_ssize_t len;
  const char *s = PyUnicode_AsUTF8AndSize(str, &len);
  const idgen_layout_t *l = s ? layout_of(layout) : NULL;
  PyObject *out = NULL;
  if (l != NULL) {
    decoded_t d;
    char err[ERR_MAX];
    if (decode_id(l, s, (size_t)len, lenient, &d, err, sizeof err) < 0) {
      raise_idgen(IDGEN_EPARSE, err);
    } else if ((out = PyDict_New()) != NULL) {
      dict_sink_t ds = {out, out, 0};
      decode_visit(&d, &sink, &ds);
      if (ds.failed)
        Py_CLEAR(out);
    }
  }
  Py_DECREF(str);
  return out;
}

static PyObject *mod_layout_info_json(PyObject *m, PyObject *arg) {
  (void)m;
  const char *text = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (text == NULL)
    return PyErr_Occurred() ? NULL : raise_idgen(IDGEN_EINVAL, "layout must be a str");
  const idgen_layout_t *l = layout_of(text);
  if (l == NULL)
    return NULL;
  char json[LAYOUT_INFO_MAX];
  int n = layout_info_json(l, json, sizeof json);
  return n < 0 ? raise_idgen(IDGEN_ERANGE, NULL) : PyUnicode_FromStringAndSize(json, n);
}

static PyObject *mod_layout_plan_json(PyObject *m, PyObject *args) {
  (void)m;
  const char *text;
  double rate = 0, borrow = IDGEN_MAX_BORROW_MS_DEFAULT;
  if (!PyArg_ParseTuple(args, "s|dd", &text, &rate, &borrow))
    return NULL;
  const idgen_layout_t *l = layout_of(text);
  if (l == NULL)
    return NULL;
  idgen_layout_plan_t p;
  if (idgen_layout_plan(l, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), rate, borrow, &p) < 0)
    return raise_idgen(IDGEN_EINVAL, "plan: rate and max_borrow_ms must be numbers >= 0");
  char json[LAYOUT_PLAN_MAX];
  int n = layout_plan_json(l, &p, json, sizeof json);
  return n < 0 ? raise_idgen(IDGEN_ERANGE, NULL) : PyUnicode_FromStringAndSize(json, n);
}

/* compose(layout, unix_ms, fields) -> int: an ID of the layout from its time
 * and its node and sequence values (a dict by field name; 0 if absent). */
static PyObject *mod_compose(PyObject *m, PyObject *args) {
  (void)m;
  const char *text;
  long long unix_ms;
  PyObject *fields = NULL;
  if (!PyArg_ParseTuple(args, "sL|O!", &text, &unix_ms, &PyDict_Type, &fields))
    return NULL;
  const idgen_layout_t *l = layout_of(text);
  if (l == NULL)
    return NULL;
  uint64_t values[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  PyObject *k, *v;
  Py_ssize_t pos = 0;
  char err[ERR_MAX];
  while (fields && PyDict_Next(fields, &pos, &k, &v)) {
    const char *name = PyUnicode_Check(k) ? PyUnicode_AsUTF8(k) : NULL;
    int i = name ? idgen_layout_field_index(l, name) : -1;
    if (i < 0) {
      snprintf(err, sizeof err, "compose: %s is not a field of the layout", name ? name : "?");
      return raise_idgen(IDGEN_EINVAL, err);
    }
    values[i] = PyLong_AsUnsignedLongLong(v);
    if (PyErr_Occurred())
      return NULL;
  }
  uint64_t id;
  int rc = idgen_layout_compose(l, unix_ms, values, &id, err, sizeof err);
  if (rc < 0)
    return raise_idgen(rc, err);
  return PyLong_FromUnsignedLongLong(id);
}

static PyObject *mod_redact(PyObject *m, PyObject *arg) {
  (void)m;
  const char *uri = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
  if (uri == NULL)
    return PyErr_Occurred() ? NULL : raise_idgen(IDGEN_EINVAL, "redact(uri): uri must be a str");
  size_t n = 2 * strlen(uri) + 16;
  char *buf = PyMem_Malloc(n);
  if (buf == NULL)
    return PyErr_NoMemory();
  PyObject *r = PyUnicode_FromString(idgen_registry_uri_redact(uri, buf, n));
  PyMem_Free(buf);
  return r;
}

static PyObject *mod_default_registry(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  char buf[2048], err[ERR_MAX];
  int rc = idgen_registry_default_uri(buf, sizeof buf, err, sizeof err);
  if (rc < 0)
    return raise_key(rc, "registry", NULL, err);
  return PyUnicode_FromString(buf);
}

static PyObject *mod_presets(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  PyObject *d = PyDict_New();
  for (int i = 0; d && idgen_layout_preset_name(i) != NULL; i++) {
    const char *name = idgen_layout_preset_name(i);
    if (put(d, name, PyUnicode_FromString(idgen_layout_preset_spec(name))) < 0)
      Py_CLEAR(d);
  }
  return d;
}

/* _close_all(): every live generator and sequence of this process closed
 * (at exit). */
static PyObject *mod_close_all(PyObject *m, PyObject *unused) {
  (void)m, (void)unused;
  while (live_sfs != NULL)
    holder_close_now(live_sfs);
  while (live_seqs != NULL)
    holder_close_now(live_seqs);
  Py_RETURN_NONE;
}

/* ---- Public IDs ------------------------------------------------------------ */

/* Public(key_file=None, kind="snowflake", layout="twitter", bits=None,
 * prefix="", version=0, key=None, key_version=1): one codec
 * (idgen_public_t), which one thread uses at a time: each call holds the
 * object's lock (map_many and unmap_many hold it with the GIL released), so
 * threads sharing one object take turns; a thread of its own is faster with
 * a Public of its own. */
typedef struct {
  PyObject_HEAD idgen_public_t *p;
  PyThread_type_lock lock;
  idgen_public_kind_t kind;
  unsigned bits;
} pub_t;

static char *pub_kwlist[] = {"key_file", "kind", "layout",      "bits", "prefix",
                             "version",  "key",  "key_version", NULL};

/* The key: a file (key_file, else IDGEN_PUBLIC_KEY) or 32 bytes. */
static int pub_keys(PyObject *file, PyObject *key, int64_t key_version,
                    idgen_public_keys_t **keys) {
  char err[ERR_MAX] = "";
  int rc;
  if (key != NULL && key != Py_None) {
    Py_buffer b;
    if (file != NULL && file != Py_None) {
      raise_idgen(IDGEN_EINVAL, "Public: give key_file or key, not both");
      return -1;
    }
    if (PyObject_GetBuffer(key, &b, PyBUF_SIMPLE) < 0)
      return -1;
    if (b.len != IDGEN_PUBLIC_KEY_BYTES) {
      PyBuffer_Release(&b);
      snprintf(err, sizeof err, "Public: key holds %zd bytes: a key is %d bytes (AES-256)",
               (Py_ssize_t)b.len, IDGEN_PUBLIC_KEY_BYTES);
      raise_idgen(IDGEN_EINVAL, err);
      return -1;
    }
    unsigned v = (unsigned)key_version;
    rc = idgen_public_keys_new(keys, &v, (const uint8_t(*)[IDGEN_PUBLIC_KEY_BYTES])b.buf, 1, err,
                               sizeof err);
    PyBuffer_Release(&b);
  } else {
    PyObject *path = NULL;
    const char *env = getenv(IDGEN_PUBLIC_KEY_ENV);
    if (file != NULL && file != Py_None) {
      if (!PyUnicode_FSConverter(file, &path))
        return -1;
    } else if (env == NULL || env[0] == 0) {
      raise_idgen(IDGEN_EINVAL, "Public: no key: give key_file (or set IDGEN_PUBLIC_KEY to a key "
                                "file's path) or key (32 bytes)");
      return -1;
    }
    const char *p = path != NULL ? PyBytes_AS_STRING(path) : env;
    Py_BEGIN_ALLOW_THREADS rc = idgen_public_keys_load(keys, p, err, sizeof err);
    Py_END_ALLOW_THREADS Py_XDECREF(path);
  }
  if (rc < 0) {
    raise_idgen(rc, err);
    return -1;
  }
  return 0;
}

/* The kind and bits of the options into s. */
static int pub_settings(PyObject **o, idgen_public_settings_t *s, char *prefix, size_t pn) {
  char kind[16] = "snowflake", layout[IDGEN_LAYOUT_SPEC_MAX] = "twitter";
  int64_t bits = 0, version = 0;
  int has_layout;
  prefix[0] = 0;
  if (opt_text("kind", o[1], kind, sizeof kind, 0) < 0 ||
      (has_layout = opt_text("layout", o[2], layout, sizeof layout, 0)) < 0 ||
      opt_int("bits", o[3], 1, 64, &bits) < 0 || opt_text("prefix", o[4], prefix, pn, 0) < 0 ||
      opt_int("version", o[5], 0, IDGEN_PUBLIC_VERSION_MAX, &version) < 0)
    return -1;
  memset(s, 0, sizeof *s);
  s->prefix = prefix;
  s->version = (unsigned)version;
  s->kind = strcmp(kind, "snowflake") == 0 ? IDGEN_PUBLIC_SNOWFLAKE
            : strcmp(kind, "ulid") == 0    ? IDGEN_PUBLIC_ULID
            : strcmp(kind, "uuid7") == 0   ? IDGEN_PUBLIC_UUID7
                                           : 0;
  if (s->kind == 0)
    return raise_key(IDGEN_EINVAL, "kind", kind, "expected snowflake, ulid or uuid7"), -1;
  if (s->kind != IDGEN_PUBLIC_SNOWFLAKE && (has_layout || bits))
    return raise_idgen(IDGEN_EINVAL, "Public: layout and bits are for kind snowflake only"), -1;
  if (has_layout && bits)
    return raise_idgen(IDGEN_EINVAL, "Public: give layout or bits, not both"), -1;
  if (s->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    const idgen_layout_t *l = bits ? NULL : layout_of(layout);
    if (!bits && l == NULL)
      return -1;
    s->bits = bits ? (unsigned)bits : (unsigned)l->total_bits;
  }
  return 0;
}

static PyObject *pub_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  PyObject *o[8] = {NULL};
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$OOOOOOO:Public", pub_kwlist, &o[0], &o[1], &o[2],
                                   &o[3], &o[4], &o[5], &o[6], &o[7]))
    return NULL;
  idgen_public_settings_t s;
  char prefix[IDGEN_PUBLIC_PREFIX_MAX + 1], err[ERR_MAX] = "";
  int64_t key_version = 1;
  idgen_public_keys_t *keys = NULL;
  if (pub_settings(o, &s, prefix, sizeof prefix) < 0 ||
      opt_int("key_version", o[7], 1, IDGEN_PUBLIC_VERSION_MAX, &key_version) < 0 ||
      pub_keys(o[0], o[6], key_version, &keys) < 0)
    return NULL;
  pub_t *x = (pub_t *)type->tp_alloc(type, 0);
  int rc = x == NULL ? -1 : idgen_public_new(&x->p, keys, &s, err, sizeof err);
  idgen_public_keys_free(keys);
  if (x == NULL)
    return NULL;
  if (rc == 0 && (x->lock = PyThread_allocate_lock()) == NULL) {
    Py_DECREF(x);
    return PyErr_NoMemory();
  }
  if (rc < 0) {
    Py_DECREF(x);
    return raise_idgen(rc, err);
  }
  x->kind = s.kind;
  x->bits = s.kind != IDGEN_PUBLIC_SNOWFLAKE ? 128 : s.bits ? s.bits : 64;
  return (PyObject *)x;
}

static void pub_dealloc(pub_t *x) {
  idgen_public_free(x->p);
  if (x->lock != NULL)
    PyThread_free_lock(x->lock);
  Py_TYPE(x)->tp_free((PyObject *)x);
}

/* The object's lock: at once if free, else waited for with the GIL
 * released (another thread's map_many holds it). */
static void pub_lock(pub_t *x) {
  if (PyThread_acquire_lock(x->lock, NOWAIT_LOCK))
    return;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(x->lock, WAIT_LOCK);
  Py_END_ALLOW_THREADS
}

/* A Snowflake ID or integer form: an int from 0 to 2^64 - 1. */
static int pub_arg64(PyObject *v, const char *what, uint64_t *out) {
  if (!PyLong_Check(v) || PyBool_Check(v)) {
    PyErr_Format(err_class[0], "%s: expected an int, not %.80s", what, Py_TYPE(v)->tp_name);
    return -1;
  }
  unsigned long long x = PyLong_AsUnsignedLongLong(v);
  if (x == (unsigned long long)-1 && PyErr_Occurred()) {
    PyErr_Clear();
    char msg[120];
    snprintf(msg, sizeof msg, "%s: not from 0 to 2^64 - 1", what);
    raise_idgen(IDGEN_ERANGE, msg);
    return -1;
  }
  *out = x;
  return 0;
}

/* A 128-bit ID: a ULID's str for a ULID codec, a uuid.UUID or its text for
 * a UUIDv7 one. */
static int pub_arg128(const pub_t *x, PyObject *v, uint8_t out[16]) {
  if (x->kind == IDGEN_PUBLIC_UUID7) {
    idgen_uuid_t u;
    if (uuid_arg(v, &u) < 0)
      return -1;
    memcpy(out, u.bytes, 16);
    return 0;
  }
  Py_ssize_t len;
  const char *s = PyUnicode_Check(v) ? PyUnicode_AsUTF8AndSize(v, &len) : NULL;
  if (s == NULL) {
    if (!PyErr_Occurred())
      raise_idgen(IDGEN_EINVAL, "expected a ULID (str)");
    return -1;
  }
  char err[ERR_MAX];
  idgen_ulid_t u;
  int rc = idgen_ulid_parse(&u, s, (size_t)len, IDGEN_ULID_STRICT, err, sizeof err);
  if (rc < 0) {
    raise_idgen(rc, err);
    return -1;
  }
  memcpy(out, u.bytes, 16);
  return 0;
}

static PyObject *pub_value128(const pub_t *x, const uint8_t b[16]) {
  if (x->kind == IDGEN_PUBLIC_UUID7)
    return make_uuid(b);
  idgen_ulid_t u;
  memcpy(u.bytes, b, 16);
  return ulid_text(&u);
}

static PyObject *pub_range(const pub_t *x, int rc, const char *what) {
  char msg[120];
  snprintf(msg, sizeof msg, "%s: at or above 2^%u (the codec's bits)", what, x->bits);
  return raise_idgen(rc, rc == IDGEN_ERANGE ? msg : NULL);
}

/* map(id) and unmap(pub): the integer forms. */
static PyObject *pub_map_dir(pub_t *x, PyObject *arg, int back) {
  const char *what = back ? "unmap(pub)" : "map(id)";
  int rc;
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t in, out = 0;
    if (pub_arg64(arg, what, &in) < 0)
      return NULL;
    pub_lock(x);
    rc = back ? idgen_public_unmap64(x->p, in, &out) : idgen_public_map64(x->p, in, &out);
    PyThread_release_lock(x->lock);
    return rc < 0 ? pub_range(x, rc, what) : PyLong_FromUnsignedLongLong(out);
  }
  uint8_t in[16], out[16];
  if (pub_arg128(x, arg, in) < 0)
    return NULL;
  pub_lock(x);
  rc = back ? idgen_public_unmap128(x->p, in, out) : idgen_public_map128(x->p, in, out);
  PyThread_release_lock(x->lock);
  if (rc == IDGEN_EPARSE)
    return raise_idgen(rc, back
                               ? "unmap(pub): not a UUID of version 4 (the public form of a UUIDv7)"
                               : "map(id): not a UUIDv7 (version 7, RFC 9562's variant)");
  return rc < 0 ? raise_idgen(rc, NULL) : pub_value128(x, out);
}

static PyObject *pub_map(pub_t *x, PyObject *arg) { return pub_map_dir(x, arg, 0); }

static PyObject *pub_unmap(pub_t *x, PyObject *arg) { return pub_map_dir(x, arg, 1); }

/* The batch's work, the GIL released: Snowflake IDs (in and out of n
 * uint64), or 128-bit ones (n rows of 16 bytes). */
static int pub_many_run(pub_t *x, void *in, void *out, size_t n, int back) {
  int rc = 0;
  Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(x->lock, WAIT_LOCK);
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE)
    rc = back ? idgen_public_unmap64_batch(x->p, in, out, n)
              : idgen_public_map64_batch(x->p, in, out, n);
  else
    rc = back ? idgen_public_unmap128_batch(x->p, in, out, n)
              : idgen_public_map128_batch(x->p, in, out, n);
  PyThread_release_lock(x->lock);
  Py_END_ALLOW_THREADS return rc;
}

/* map_many(ids) and unmap_many(pubs): a list (any iterable) in, a list
 * out, the cipher run over all of them with the GIL released. */
static PyObject *pub_many(pub_t *x, PyObject *arg, int back) {
  const char *what = back ? "unmap_many(pubs)" : "map_many(ids)";
  PyObject *seq = PySequence_Fast(arg, "expected a list of IDs"), *list = NULL;
  if (seq == NULL)
    return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  size_t w = x->kind == IDGEN_PUBLIC_SNOWFLAKE ? 8 : 16;
  uint8_t *buf = PyMem_RawMalloc(n ? 2 * (size_t)n * w : 1);
  if (buf == NULL) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  uint8_t *out = buf + (size_t)n * w;
  int rc = 0;
  for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
    PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
    rc = w == 8 ? pub_arg64(v, what, (uint64_t *)buf + i) : pub_arg128(x, v, buf + 16 * i);
  }
  if (rc == 0 && (rc = pub_many_run(x, buf, out, (size_t)n, back)) < 0)
    pub_range(x, rc, what);
  if (rc == 0 && (list = PyList_New(n)) != NULL)
    for (Py_ssize_t i = 0; i < n; i++) {
      PyObject *v = w == 8 ? PyLong_FromUnsignedLongLong(((uint64_t *)out)[i])
                           : pub_value128(x, out + 16 * i);
      if (v == NULL) {
        Py_CLEAR(list);
        break;
      }
      PyList_SET_ITEM(list, i, v);
    }
  PyMem_RawFree(buf);
  Py_DECREF(seq);
  return list;
}

static PyObject *pub_map_many(pub_t *x, PyObject *arg) { return pub_many(x, arg, 0); }

static PyObject *pub_unmap_many(pub_t *x, PyObject *arg) { return pub_many(x, arg, 1); }

/* format(id) -> str: the text form, with the newest key version. */
static PyObject *pub_format(pub_t *x, PyObject *arg) {
  char text[IDGEN_PUBLIC_TEXT_MAX];
  int rc;
  if (x->kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t id;
    if (pub_arg64(arg, "format(id)", &id) < 0)
      return NULL;
    pub_lock(x);
    rc = idgen_public_format64(x->p, id, text, sizeof text);
  } else {
    uint8_t id[16];
    if (pub_arg128(x, arg, id) < 0)
      return NULL;
    pub_lock(x);
    rc = idgen_public_format128(x->p, id, text, sizeof text);
  }
  PyThread_release_lock(x->lock);
  return rc < 0 ? pub_range(x, rc, "format(id)") : PyUnicode_FromStringAndSize(text, rc);
}

/* parse_with_version(text) -> (id, version). */
static PyObject *pub_parse_v(pub_t *x, PyObject *arg) {
  Py_ssize_t len;
  const char *s = PyUnicode_Check(arg) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
  if (s == NULL)
    return PyErr_Occurred() ? NULL : raise_idgen(IDGEN_EINVAL, "parse(text): expected a str");
  char err[ERR_MAX] = "";
  unsigned version = 0;
  uint64_t id = 0;
  uint8_t b[16];
  pub_lock(x);
  int rc = x->kind == IDGEN_PUBLIC_SNOWFLAKE
               ? idgen_public_parse64(x->p, s, (size_t)len, &id, &version, err, sizeof err)
               : idgen_public_parse128(x->p, s, (size_t)len, b, &version, err, sizeof err);
  PyThread_release_lock(x->lock);
  if (rc < 0)
    return raise_idgen(rc, err);
  PyObject *v =
      x->kind == IDGEN_PUBLIC_SNOWFLAKE ? PyLong_FromUnsignedLongLong(id) : pub_value128(x, b);
  if (v == NULL)
    return NULL;
  return Py_BuildValue("(NI)", v, version);
}

/* parse(text) -> the ID alone. */
static PyObject *pub_parse(pub_t *x, PyObject *arg) {
  PyObject *t = pub_parse_v(x, arg);
  if (t == NULL)
    return NULL;
  PyObject *id = PyTuple_GET_ITEM(t, 0);
  Py_INCREF(id);
  Py_DECREF(t);
  return id;
}

static PyObject *pub_kind(pub_t *x, void *closure) {
  (void)closure;
  return PyUnicode_FromString(x->kind == IDGEN_PUBLIC_SNOWFLAKE ? "snowflake"
                              : x->kind == IDGEN_PUBLIC_ULID    ? "ulid"
                                                                : "uuid7");
}

static PyObject *pub_bits(pub_t *x, void *closure) {
  (void)closure;
  return PyLong_FromUnsignedLong(x->bits);
}

static PyMethodDef pub_methods[] = {
    {"map", (PyCFunction)pub_map, METH_O, "map(id): the integer public form"},
    {"unmap", (PyCFunction)pub_unmap, METH_O, "unmap(pub): the ID of an integer public form"},
    {"map_many", (PyCFunction)pub_map_many, METH_O,
     "map_many(ids) -> list: map() of each, batched, the GIL released"},
    {"unmap_many", (PyCFunction)pub_unmap_many, METH_O,
     "unmap_many(pubs) -> list: unmap() of each, batched, the GIL released"},
    {"format", (PyCFunction)pub_format, METH_O, "format(id) -> str: the text form"},
    {"parse", (PyCFunction)pub_parse, METH_O, "parse(text): the ID of a text form"},
    {"parse_with_version", (PyCFunction)pub_parse_v, METH_O,
     "parse_with_version(text) -> (id, key version)"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef pub_getset[] = {
    {"kind", (getter)pub_kind, NULL, "snowflake, ulid or uuid7", NULL},
    {"bits", (getter)pub_bits, NULL, "the integer form's bits (128 for ULID and UUIDv7)", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject PublicType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "idgen._idgen.Public",
    .tp_basicsize = sizeof(pub_t),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Public(key_file=None, *, kind='snowflake', layout='twitter', bits=None, prefix='', "
              "version=0, key=None, key_version=1): keyed public IDs (FF1 on AES-256)",
    .tp_new = pub_new,
    .tp_dealloc = (destructor)pub_dealloc,
    .tp_methods = pub_methods,
    .tp_getset = pub_getset};

static PyMethodDef mod_methods[] = {
    {"ulid", mod_ulid, METH_NOARGS, "ulid() -> str: a new ULID (not monotonic)"},
    {"uuid7", mod_uuid7, METH_NOARGS,
     "uuid7() -> uuid.UUID: a new UUIDv7 (time now, 74 random bits)"},
    {"ulid_to_uuid", mod_ulid_to_uuid, METH_O, "ulid_to_uuid(text) -> uuid.UUID, same bits"},
    {"uuid_to_ulid", mod_uuid_to_ulid, METH_O, "uuid_to_ulid(uuid) -> str, same bits"},
    {"_decode", mod_decode, METH_VARARGS, "the object of `idgen decode --json`"},
    {"_layout_info_json", mod_layout_info_json, METH_O, "a layout's geometry as JSON"},
    {"_layout_plan_json", mod_layout_plan_json, METH_VARARGS, "`idgen plan` as JSON"},
    {"compose", mod_compose, METH_VARARGS, "compose(layout, unix_ms, fields) -> int"},
    {"redact", mod_redact, METH_O, "redact(uri) -> str: a registry URI, its secrets masked"},
    {"default_registry", mod_default_registry, METH_NOARGS, "the host's default registry"},
    {"presets", mod_presets, METH_NOARGS, "presets() -> {name: spec}"},
    {"_close_all", mod_close_all, METH_NOARGS, "closes every live generator (at exit)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, "_idgen",
                                    "idgen's C extension (use the package idgen)", -1, mod_methods};

static int add_type(PyObject *m, PyTypeObject *t, const char *name) {
  if (PyType_Ready(t) < 0)
    return -1;
  Py_INCREF(t);
  if (PyModule_AddObject(m, name, (PyObject *)t) < 0) {
    Py_DECREF(t);
    return -1;
  }
  return 0;
}

/* The error classes: Error, and one subclass per code (InvalidArgumentError
 * and ParseError are ValueErrors too, RangeError, LayoutError and
 * PublicKeyError also ValueErrors, OutOfMemoryError a MemoryError). */
static int add_errors(PyObject *m) {
  Error = PyErr_NewExceptionWithDoc(
      "idgen.Error", "idgen's errors: .code is the library's name (\"ELEASE\"), .errno its number",
      PyExc_Exception, NULL);
  if (Error == NULL || PyModule_AddObject(m, "Error", Error) < 0)
    return -1;
  Py_INCREF(Error);
  for (size_t i = 0; i < NERR; i++) {
    char name[80];
    snprintf(name, sizeof name, "idgen.%s", err_pyname[i]);
    int code = err_table[i].code;
    PyObject *extra = code == IDGEN_EINVAL || code == IDGEN_EPARSE || code == IDGEN_ERANGE ||
                              code == IDGEN_ELAYOUT || code == IDGEN_EKEY
                          ? PyExc_ValueError
                      : code == IDGEN_ENOMEM ? PyExc_MemoryError
                                             : NULL;
    PyObject *bases = extra ? PyTuple_Pack(2, Error, extra) : PyTuple_Pack(1, Error);
    if (bases == NULL)
      return -1;
    char doc[160];
    snprintf(doc, sizeof doc, "%s (%s): %s", err_table[i].cls, err_pyname[i], err_table[i].doc);
    err_class[i] = PyErr_NewExceptionWithDoc(name, doc, bases, NULL);
    Py_DECREF(bases);
    if (err_class[i] == NULL || PyModule_AddObject(m, err_pyname[i], err_class[i]) < 0)
      return -1;
    Py_INCREF(err_class[i]);
  }
  return 0;
}

PyMODINIT_FUNC PyInit__idgen(void);
PyMODINIT_FUNC PyInit__idgen(void) {
  PyObject *m = PyModule_Create(&moddef);
  if (m == NULL)
    return NULL;
  PyObject *uuid_mod = PyImport_ImportModule("uuid");
  if (uuid_mod == NULL)
    goto fail;
  uuid_cls = PyObject_GetAttrString(uuid_mod, "UUID");
  PyObject *safe = PyObject_GetAttrString(uuid_mod, "SafeUUID");
  Py_DECREF(uuid_mod);
  if (uuid_cls == NULL || safe == NULL)
    goto fail;
  safe_unknown = PyObject_GetAttrString(safe, "unknown");
  Py_DECREF(safe);
  uuid_int_descr = PyObject_GetAttrString(uuid_cls, "int");
  uuid_safe_descr = PyObject_GetAttrString(uuid_cls, "is_safe");
  if (safe_unknown == NULL || uuid_int_descr == NULL || uuid_safe_descr == NULL ||
      Py_TYPE(uuid_int_descr)->tp_descr_set == NULL ||
      Py_TYPE(uuid_safe_descr)->tp_descr_set == NULL) {
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_ImportError, "idgen: this Python's uuid.UUID has no slots");
    goto fail;
  }
  if (add_errors(m) < 0 || add_type(m, &SnowflakeType, "Snowflake") < 0 ||
      add_type(m, &SequenceType, "Sequence") < 0 ||
      add_type(m, &ManualClockType, "ManualClock") < 0 ||
      add_type(m, &ULIDGeneratorType, "ULIDGenerator") < 0 ||
      add_type(m, &UUID7GeneratorType, "UUID7Generator") < 0 ||
      add_type(m, &PublicType, "Public") < 0 ||
      PyModule_AddStringConstant(m, "library_version", idgen_version()) < 0)
    goto fail;
  return m;
fail:
  Py_DECREF(m);
  return NULL;
}
