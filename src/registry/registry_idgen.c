/*
 * registry_idgen.c -- the `idgen://` registry: node tuples leased from a
 * daemon running `idgen serve --leases`, which holds them in its own
 * registry for its clients (docs/SERVE.md, "Leases for clients").
 *
 *   idgen://[AGENT:TOKEN@]HOST:PORT[/]             HTTP
 *   idgens://[AGENT:TOKEN@]HOST:PORT[/][?cacert=FILE]   HTTPS, peers verified
 *
 * TOKEN goes as `Authorization: Bearer TOKEN` (the daemon's --auth-file);
 * AGENT only names whose token it is.  `?space=NAME` is taken by
 * registry.c before check and open see the URI, and sent with each lease.
 *
 * The daemon does the registry's work (the pool, the space, the fencing
 * generation, the durable mark); this file turns each backend operation
 * into one POST with a JSON body, over libcurl, loaded on first use as
 * etcd:// loads it.  The bodies are written and the answers (flat JSON
 * objects) read here, without jansson: the PostgreSQL extension's build
 * cannot link jansson's objects into its shared module (docs/DESIGN.md §14),
 * and idgen:// is in every build of the registry library:
 *
 *   acquire   POST /lease          the lease: tuple, generation, mark, floor
 *   renew     POST /lease/renew    the lease's identity
 *   mark      POST /lease/mark     its identity and the mark
 *   release   POST /lease/release  its identity and the final mark
 *   seq_load  POST /lease/seq/load   a sequence's record: text (or null), version
 *   seq_store POST /lease/seq/store  the text, if the version is still the one given
 *   seq_keys  POST /lease/seq/keys   the counters' keys, a page at a time
 *
 * The identity is the tuple, its generation, the holder's name and a secret
 * of 32 random hex digits drawn at acquisition, which only this lease knows.
 *
 * Time.  A renewal is valid for the TTL from when it was *sent*, by this
 * process's monotonic clock (the keeper measures it, lease_keeper.c), and
 * the daemon counts from when it answered: the client's validity always
 * ends first.  The mark step is half the TTL (unless the request set one):
 * a client paused past its TTL finds its mark behind the clock on waking,
 * so its next ID waits for a mark write, which the daemon refuses
 * (`409 lease`): it stops instead of issuing on a tuple another may hold.
 * Every request is bounded by a time-out, a quarter of the shortest TTL
 * leased through the registry (250 ms to 5 s; an acquisition also gets the
 * start wait it lets the daemon spend); a daemon that cannot be reached in
 * time is IDGEN_EREGISTRY, after which the keeper suspends issuing and
 * tries again, as for etcd://.
 *
 * Open makes one `GET /health` (any answer will do), so that a wrong
 * address, port or certificate fails at open, with a clear message.
 *
 * One HTTP connection per registry (libcurl keeps it alive) for renewals,
 * mark writes and releases, behind a mutex; an acquisition, which may
 * wait, has one of its own.  A forked child leaks its parent's handle and
 * makes its own.
 *
 * Tested by test_registry (the URI, the answers' reader), fuzz_idgen and
 * the ctest registry.idgen (tests/registry/suite_idgen.py, against a real
 * daemon).
 */
#define _GNU_SOURCE
/* Calls go through a table (below), where curl's type-checking macros cannot follow. */
#define CURL_DISABLE_TYPECHECK
#include <ctype.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "registry_int.h"

/* libcurl, loaded when an idgen:// registry is first opened
 * (registry_int.h, idgen__dynlib_need): every call goes through cu. */
/* clang-format off */
#define CURL_FUNCS(X)                                                                   \
  X(curl_easy_cleanup) X(curl_easy_getinfo) X(curl_easy_init) X(curl_easy_perform)         \
  X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_strerror) X(curl_global_init)         \
  X(curl_slist_append) X(curl_slist_free_all)
/* clang-format on */
static void curl_init(void);
IDGEN__DYNLIB(cu, libcurl, CURL_FUNCS, "libcurl.so.4", "libcurl4 or libcurl4t64", curl_init);
/* Under the loading lock, as etcd's: a fork cannot split curl's set-up. */
static void curl_init(void) { cu.curl_global_init(CURL_GLOBAL_ALL); }

#define REQUEST_TIMEOUT_MS 5000 /* the longest; see request_timeout() */
#define REQUEST_TIMEOUT_MIN_MS 250
#define CONNECT_TIMEOUT_MS 2000
#define BODY_MAX 65536 /* the daemon's answers are a few hundred bytes */
/* The protocol's holder: 1 to 56 printable characters, no spaces. */
#define WIRE_HOLDER_MAX 56
#define SECRET_HEX 32
#define ACQUIRE_TRIES 64

typedef struct idg {
  pthread_mutex_t mu; /* guards the rest */
  CURL *curl;         /* NULL: made at the next request */
  unsigned fork_gen;  /* the process that owns mu and curl */
  int tls;
  char base[300];  /* "http://host:port" */
  char shown[320]; /* "idgen://host:port": every message's prefix */
  char token[260]; /* "" without one */
  char cacert[1024];
  char *body; /* the last answer */
  size_t len, cap;
  int64_t retry_after_ms; /* the last answer's Retry-After; -1: none */
  long timeout_ms;        /* a request's; 0: REQUEST_TIMEOUT_MS */
} idg_t;

/* The backend's state of a lease. */
typedef struct idg_lease {
  char holder[WIRE_HOLDER_MAX + 1];
  char secret[SECRET_HEX + 1];
} idg_lease_t;

/* ---- the URI ----------------------------------------------------------------- */

#define URI_FORM "expected %s://[AGENT:TOKEN@]HOST:PORT[/]%s"

/* HOST:PORT (p, n bytes): a name, an IPv4 address or an [IPv6] one, and a
 * port from 1 to 65535. */
static int parse_hostport(idg_t *g, const char *scheme, const char *p, size_t n, char *err,
                          size_t errlen) {
  const char *colon = memrchr(p, ':', n);
  if (n == 0 || colon == NULL || colon == p || colon + 1 == p + n)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: \"%s\": expected HOST:PORT (the daemon's HTTP address)",
                      scheme, IDGEN_QUOTE(p, n, '"', 100));
  long port = 0;
  for (const char *d = colon + 1; d < p + n && port <= 65535; d++)
    port = *d >= '0' && *d <= '9' ? port * 10 + (*d - '0') : 65536;
  if (port < 1 || port > 65535)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: \"%s\": the port is not a number from 1 to 65535", scheme,
                      IDGEN_QUOTE(p, n, '"', 100));
  size_t hn = (size_t)(colon - p);
  int v6 = p[0] == '[';
  if (v6 && (hn < 3 || p[hn - 1] != ']' || strspn(p + 1, "0123456789abcdefABCDEF:.") != hn - 2))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: \"%s\": an IPv6 address goes between [ and ]", scheme,
                      IDGEN_QUOTE(p, n, '"', 100));
  for (size_t i = 0; !v6 && i < hn; i++)
    if (!(isalnum((unsigned char)p[i]) || p[i] == '.' || p[i] == '-' || p[i] == '_'))
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: %s: \"%s\": a host name has letters, digits, '.', '-'", scheme,
                        IDGEN_QUOTE(p, n, '"', 100));
  snprintf(g->base, sizeof g->base, "%s://%.*s", g->tls ? "https" : "http", (int)n, p);
  snprintf(g->shown, sizeof g->shown, "%s://%.*s", scheme, (int)n, p);
  return 0;
}

/* AGENT:TOKEN (p, n bytes, before the '@'): the token, percent-decoded. */
static int parse_userinfo(idg_t *g, const char *scheme, const char *p, size_t n, char *err,
                          size_t errlen) {
  const char *colon = memchr(p, ':', n);
  size_t an = colon ? (size_t)(colon - p) : 0;
  int agent_ok = an > 0 && isalpha((unsigned char)p[0]);
  for (size_t i = 0; agent_ok && i < an; i++)
    agent_ok = isalnum((unsigned char)p[i]) || p[i] == '-';
  if (!agent_ok)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: expected AGENT:TOKEN@ before the host (AGENT: a letter, "
                      "then letters, digits and '-', as in the daemon's --auth-file)",
                      scheme);
  size_t tn = 0;
  if (idgen__pct_decode(g->token, sizeof g->token, colon + 1, n - an - 1, 1) < 0 ||
      (tn = strlen(g->token)) < 16 || tn > 256)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: the token is not 16 to 256 visible characters "
                      "(percent-encoded in the URI)",
                      scheme);
  for (size_t i = 0; i < tn; i++)
    if ((unsigned char)g->token[i] <= ' ' || (unsigned char)g->token[i] >= 0x7f)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: %s: the token is not 16 to 256 visible characters "
                        "(percent-encoded in the URI)",
                        scheme);
  return 0;
}

/* The query (q, after '?'): cacert=FILE, with idgens:// only. */
static int parse_query(idg_t *g, const char *scheme, const char *q, char *err, size_t errlen) {
  for (const char *o = q; o && *o;) {
    const char *amp = strchr(o, '&');
    size_t n = amp ? (size_t)(amp - o) : strlen(o);
    const char *eq = memchr(o, '=', n);
    size_t kn = eq ? (size_t)(eq - o) : n;
    if (kn != 6 || strncmp(o, "cacert", 6) != 0)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: %s: unknown parameter \"%s\"; known: space, cacert "
                        "(idgens:// only)",
                        scheme, IDGEN_QUOTE(o, kn, '"', 60));
    if (!g->tls)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: %s: cacert= is for idgens:// (HTTPS); idgen:// is plain HTTP",
                        scheme);
    if (g->cacert[0])
      return idgen__err(err, errlen, IDGEN_EINVAL, "registry: %s: cacert= given twice", scheme);
    if (eq == NULL || idgen__pct_decode(g->cacert, sizeof g->cacert, eq + 1, n - kn - 1, 1) < 0 ||
        g->cacert[0] == '\0')
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: %s: cacert= needs a file name (percent-encoded, under %zu "
                        "bytes)",
                        scheme, sizeof g->cacert);
    o = amp ? amp + 1 : NULL;
  }
  return 0;
}

/* Parses uri (its scheme, then rest: "//[a:t@]h:p[/][?q]") into g, which
 * may be scratch: 0, or IDGEN_EINVAL naming what is wrong. */
static int idg_parse(idg_t *g, const char *uri, const char *rest, char *err, size_t errlen) {
  memset(g, 0, sizeof *g);
  g->tls = strncmp(uri, "idgens:", 7) == 0;
  const char *scheme = g->tls ? "idgens" : "idgen";
  if (strncmp(rest, "//", 2) != 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: %s: " URI_FORM, scheme, scheme,
                      g->tls ? "[?cacert=FILE]" : "");
  const char *p = rest + 2, *q = strchr(p, '?');
  size_t an = q ? (size_t)(q - p) : strlen(p);
  const char *slash = memchr(p, '/', an);
  if (slash != NULL && slash + 1 != p + an)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: no path after HOST:PORT (\"%s\"): the daemon's lease "
                      "routes are its own",
                      scheme, IDGEN_QUOTE(slash, (size_t)(p + an - slash), '"', 60));
  if (slash != NULL)
    an--;
  const char *at = NULL; /* the last '@' ends the user info */
  for (size_t i = 0; i < an; i++)
    if (p[i] == '@')
      at = p + i;
  int rc = 0;
  if (at != NULL) {
    if ((rc = parse_userinfo(g, scheme, p, (size_t)(at - p), err, errlen)) < 0)
      return rc;
    an -= (size_t)(at + 1 - p);
    p = at + 1;
  }
  if ((rc = parse_hostport(g, scheme, p, an, err, errlen)) < 0)
    return rc;
  return q ? parse_query(g, scheme, q + 1, err, errlen) : 0;
}

/* The URI only: libcurl is loaded by idg_open. */
static int idg_check(const char *uri, const char *rest, char *err, size_t errlen) {
  idg_t *scratch = malloc(sizeof *scratch);
  if (scratch == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  int rc = idg_parse(scratch, uri, rest, err, errlen);
  free(scratch);
  return rc;
}

/* ---- JSON: the request bodies and the answers --------------------------------------- */

/* A request body: a flat object of strings and integers, at most the 4096
 * bytes the daemon takes (docs/SERVE.md, "The protocol"); a sequence
 * record's store, at most SEQ_BODY_MAX, in a buffer of the caller's. */
typedef struct jbody {
  char *s; /* small, or the caller's */
  size_t cap, n;
  int full; /* something did not fit: the body is not sent */
  char small[4096];
} jbody_t;
#define SEQ_BODY_MAX 49152 /* the daemon's LEASE_SEQ_BODY_MAX */

static void jb_put(jbody_t *b, const char *fmt, ...) IDGEN_PRINTF(2, 3);
static void jb_put(jbody_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = b->full ? -1 : vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= b->cap - b->n - 1) /* room left for the closing '}' */
    b->full = 1;
  else
    b->n += (size_t)k;
}

static void jb_key(jbody_t *b, const char *key) {
  jb_put(b, "%s\"%s\":", b->n > 1 ? "," : "", key);
}

/* "key":"value", with '"', '\\' and control bytes escaped. */
static void jb_str(jbody_t *b, const char *key, const char *v) {
  jb_key(b, key);
  jb_put(b, "\"");
  for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
    if (*c == '"' || *c == '\\')
      jb_put(b, "\\%c", *c);
    else if (*c < 0x20)
      jb_put(b, "\\u%04x", *c);
    else
      jb_put(b, "%c", *c);
  }
  jb_put(b, "\"");
}

static void jb_int(jbody_t *b, const char *key, int64_t v) {
  jb_key(b, key);
  jb_put(b, "%" PRId64, v);
}

/* Opens b in buf[cap] (NULL: its own 4096 bytes). */
static void jb_start_in(jbody_t *b, char *buf, size_t cap) {
  b->s = buf ? buf : b->small;
  b->cap = buf ? cap : sizeof b->small;
  b->n = 0;
  b->full = 0;
  jb_put(b, "{");
}

static void jb_start(jbody_t *b) { jb_start_in(b, NULL, 0); }

static void jb_end(jbody_t *b) {
  if (!b->full)
    b->s[b->n++] = '}', b->s[b->n] = '\0';
}

/* An answer: a flat JSON object, read strictly (one value per member name,
 * no bytes after it); members whose values are not strings, whole numbers,
 * true, false or null (fractions, nested objects) are kept as OTHER, for a
 * later daemon may add such. */
#define ANSWER_MEMBERS 48
enum { J_STR, J_INT, J_BOOL, J_NULL, J_OTHER };
typedef struct answer {
  int n;
  struct {
    char key[48];
    int kind;
    int64_t num;
    const char *str; /* in text */
  } m[ANSWER_MEMBERS];
  char text[BODY_MAX]; /* the decoded strings */
  size_t used;
} answer_t;

typedef struct jread {
  const char *start, *p, *end;
  answer_t *a;
  char *why;
  size_t whylen;
} jread_t;

static int jr_fail(jread_t *r, const char *what) {
  idgen__err(r->why, r->whylen, -1, "%s at byte %td", what, r->p - r->start);
  return -1;
}

static void jr_ws(jread_t *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
    r->p++;
}

static int hex4(const char *p, unsigned *v) {
  *v = 0;
  for (int i = 0; i < 4; i++) {
    int c = (unsigned char)p[i], d = c >= '0' && c <= '9'   ? c - '0'
                                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                            : -1;
    if (d < 0)
      return -1;
    *v = *v << 4 | (unsigned)d;
  }
  return 0;
}

/* A string (r->p at its '"') into the answer's text: its start, or NULL. */
static const char *jr_string(jread_t *r) {
  answer_t *a = r->a;
  char *out = a->text + a->used, *o = out, *lim = a->text + sizeof a->text - 5;
  r->p++;
  while (r->p < r->end && *r->p != '"') {
    unsigned char c = (unsigned char)*r->p++;
    if (c < 0x20)
      return jr_fail(r, "a control byte in a string"), NULL;
    if (o >= lim)
      return jr_fail(r, "strings too long"), NULL;
    if (c != '\\') {
      *o++ = (char)c;
      continue;
    }
    if (r->p >= r->end)
      break;
    c = (unsigned char)*r->p++;
    char simple = c == '"' || c == '\\' || c == '/' ? (char)c
                  : c == 'b'                        ? '\b'
                  : c == 'f'                        ? '\f'
                  : c == 'n'                        ? '\n'
                  : c == 'r'                        ? '\r'
                  : c == 't'                        ? '\t'
                                                    : 0;
    if (simple) {
      *o++ = simple;
      continue;
    }
    unsigned u, lo;
    if (c != 'u' || r->end - r->p < 4 || hex4(r->p, &u) < 0)
      return jr_fail(r, "a bad escape in a string"), NULL;
    r->p += 4;
    if (u >= 0xd800 && u < 0xdc00) { /* a surrogate pair */
      if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' || hex4(r->p + 2, &lo) < 0 ||
          lo < 0xdc00 || lo > 0xdfff)
        return jr_fail(r, "a lone surrogate in a string"), NULL;
      r->p += 6;
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    } else if ((u >= 0xdc00 && u < 0xe000) || u == 0) {
      return jr_fail(r, "a lone surrogate or a NUL in a string"), NULL;
    }
    if (u < 0x80) {
      *o++ = (char)u;
    } else if (u < 0x800) {
      *o++ = (char)(0xc0 | u >> 6), *o++ = (char)(0x80 | (u & 0x3f));
    } else if (u < 0x10000) {
      *o++ = (char)(0xe0 | u >> 12), *o++ = (char)(0x80 | (u >> 6 & 0x3f));
      *o++ = (char)(0x80 | (u & 0x3f));
    } else {
      *o++ = (char)(0xf0 | u >> 18), *o++ = (char)(0x80 | (u >> 12 & 0x3f));
      *o++ = (char)(0x80 | (u >> 6 & 0x3f)), *o++ = (char)(0x80 | (u & 0x3f));
    }
  }
  if (r->p >= r->end)
    return jr_fail(r, "a string without its closing quote"), NULL;
  r->p++;
  *o++ = '\0';
  a->used = (size_t)(o - a->text);
  return out;
}

/* A value that is not a string: a whole number (J_INT), true or false
 * (J_BOOL, num 1 or 0), null (J_NULL), or a number with a fraction or a
 * nested object or array, skipped (J_OTHER). */
static int jr_other(jread_t *r, int *kind, int64_t *num) {
  const char *s = r->p;
  *kind = J_OTHER;
  if (*s == '-' || (*s >= '0' && *s <= '9')) {
    const char *d = s + (*s == '-'), *e = d;
    while (e < r->end && *e >= '0' && *e <= '9')
      e++;
    if (e == d || (e - d > 1 && *d == '0'))
      return jr_fail(r, "a malformed number");
    r->p = e;
    if (r->p < r->end && strchr(".eE", *r->p) != NULL) { /* not whole: kept as OTHER */
      while (r->p < r->end && strchr("0123456789.eE+-", *r->p) != NULL)
        r->p++;
    } else if (e - d <= 18) {
      *num = 0;
      for (const char *c = d; c < e; c++)
        *num = *num * 10 + (*c - '0');
      if (*s == '-')
        *num = -*num;
      *kind = J_INT;
    }
    return 0;
  }
  static const char *const lit[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++)
    if ((size_t)(r->end - s) >= strlen(lit[i]) && strncmp(s, lit[i], strlen(lit[i])) == 0) {
      r->p += strlen(lit[i]);
      *kind = i == 2 ? J_NULL : J_BOOL;
      *num = i == 0;
      return 0;
    }
  if (*s != '{' && *s != '[')
    return jr_fail(r, "not a JSON value");
  char open[32]; /* a nested value: its brackets matched, outside strings */
  int depth = 0;
  for (; r->p < r->end; r->p++) {
    if (*r->p == '"') {
      const char *q = r->p + 1;
      while (q < r->end && *q != '"')
        q += *q == '\\' ? 2 : 1;
      if (q >= r->end)
        break;
      r->p = q;
    } else if (*r->p == '{' || *r->p == '[') {
      if (depth == (int)sizeof open)
        return jr_fail(r, "a value nested too deep");
      open[depth++] = *r->p == '{' ? '}' : ']';
    } else if (*r->p == '}' || *r->p == ']') {
      if (*r->p != open[--depth])
        return jr_fail(r, "mismatched brackets");
      if (depth == 0) {
        r->p++;
        return 0;
      }
    }
  }
  return jr_fail(r, "an unterminated nested value");
}

/* The answer text[0..n) into *a: 0, or -1 with why naming what is wrong. */
static int answer_parse(const char *text, size_t n, answer_t *a, char *why, size_t whylen) {
  jread_t r = {text, text, text + n, a, why, whylen};
  a->n = 0;
  a->used = 0;
  jr_ws(&r);
  if (r.p >= r.end || *r.p != '{')
    return jr_fail(&r, "not a JSON object");
  r.p++;
  jr_ws(&r);
  if (r.p < r.end && *r.p == '}') {
    r.p++;
  } else {
    for (;;) {
      jr_ws(&r);
      if (r.p >= r.end || *r.p != '"')
        return jr_fail(&r, "expected a member name");
      const char *key = jr_string(&r);
      if (key == NULL)
        return -1;
      if (strlen(key) >= sizeof a->m[0].key || a->n == ANSWER_MEMBERS)
        return jr_fail(&r, "a member name too long, or too many members");
      for (int i = 0; i < a->n; i++)
        if (strcmp(a->m[i].key, key) == 0)
          return jr_fail(&r, "a member given twice");
      snprintf(a->m[a->n].key, sizeof a->m[0].key, "%s", key);
      jr_ws(&r);
      if (r.p >= r.end || *r.p != ':')
        return jr_fail(&r, "expected ':'");
      r.p++;
      jr_ws(&r);
      if (r.p >= r.end)
        return jr_fail(&r, "expected a value");
      a->m[a->n].str = NULL;
      if (*r.p == '"') {
        if ((a->m[a->n].str = jr_string(&r)) == NULL)
          return -1;
        a->m[a->n].kind = J_STR;
      } else if (jr_other(&r, &a->m[a->n].kind, &a->m[a->n].num) < 0) {
        return -1;
      }
      a->n++;
      jr_ws(&r);
      if (r.p < r.end && *r.p == ',') {
        r.p++;
        continue;
      }
      if (r.p < r.end && *r.p == '}') {
        r.p++;
        break;
      }
      return jr_fail(&r, "expected ',' or '}'");
    }
  }
  jr_ws(&r);
  return r.p == r.end ? 0 : jr_fail(&r, "bytes after the object");
}

int idgen__idgen_answer_parse(const char *text, size_t n, char *why, size_t whylen) {
  answer_t *a = malloc(sizeof *a);
  if (a == NULL)
    return idgen__err(why, whylen, -1, "out of memory");
  int rc = answer_parse(text, n, a, why, whylen);
  if (rc == 0)
    rc = a->n;
  free(a);
  return rc;
}

/* The value of member `key` if it is of `kind`, else NULL. */
static const void *answer_get(const answer_t *a, const char *key, int kind, int *present) {
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->m[i].key, key) == 0) {
      if (present)
        *present = 1;
      if (a->m[i].kind != kind)
        return NULL;
      return kind == J_STR    ? (const void *)a->m[i].str
             : kind == J_NULL ? (const void *)"" /* not NULL: it is there */
                              : (const void *)&a->m[i].num;
    }
  if (present)
    *present = 0;
  return NULL;
}

/* ---- requests --------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  idg_t *g = ctx;
  size_t add = size * n;
  if (g->len + add + 1 > BODY_MAX)
    return 0; /* no answer of the protocol is this long: fail the transfer */
  if (g->len + add + 1 > g->cap) {
    size_t cap = g->cap ? g->cap : 1024;
    while (cap < g->len + add + 1)
      cap *= 2;
    char *b = realloc(g->body, cap);
    if (b == NULL)
      return 0;
    g->body = b;
    g->cap = cap;
  }
  memcpy(g->body + g->len, data, add);
  g->len += add;
  g->body[g->len] = '\0';
  return add;
}

/* Retry-After: whole seconds (HTTP's form), or seconds with a fraction. */
static size_t on_header(char *data, size_t size, size_t n, void *ctx) {
  idg_t *g = ctx;
  size_t len = size * n;
  if (len > 12 && strncasecmp(data, "Retry-After:", 12) == 0) {
    char v[40];
    snprintf(v, sizeof v, "%.*s", (int)(len - 12 < 39 ? len - 12 : 39), data + 12);
    char *end;
    double s = strtod(v, &end);
    while (*end == ' ' || *end == '\r' || *end == '\n')
      end++;
    if (end != v && *end == '\0' && s >= 0 && s < 86400)
      g->retry_after_ms = (int64_t)(s * 1000 + 0.5);
  }
  return len;
}

static void idg_lock(idg_t *g) {
  unsigned gen = idgen__fork_gen();
  if (g->fork_gen != gen) { /* a child: the parent's handle and mutex are not ours */
    g->curl = NULL;
    pthread_mutex_init(&g->mu, NULL);
    g->fork_gen = gen;
  }
  pthread_mutex_lock(&g->mu);
}

/* One request to path (POST of body, or GET when body is NULL), waiting at
 * most timeout_ms (0: the registry's).  0 with *status and g->body, or
 * IDGEN_EREGISTRY naming why no answer came.  Call with g->mu held. */
static int perform(idg_t *g, const char *path, const char *body, long timeout_ms, long *status,
                   char *err, size_t errlen) {
  *status = 0;
  if (g->curl == NULL && (g->curl = cu.curl_easy_init()) == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: %s: out of memory", g->shown);
  CURL *c = g->curl;
  char url[400], auth[300];
  snprintf(url, sizeof url, "%s%s", g->base, path);
  struct curl_slist *h = cu.curl_slist_append(NULL, "Content-Type: application/json");
  if (g->token[0]) {
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", g->token);
    h = cu.curl_slist_append(h, auth);
  }
  h = cu.curl_slist_append(h, "Expect:"); /* no 100-continue round trip */
  cu.curl_easy_reset(c);
  cu.curl_easy_setopt(c, CURLOPT_URL, url);
  if (body)
    cu.curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  cu.curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  cu.curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  cu.curl_easy_setopt(c, CURLOPT_WRITEDATA, g);
  cu.curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  cu.curl_easy_setopt(c, CURLOPT_HEADERDATA, g);
  cu.curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  long t = timeout_ms > 0 ? timeout_ms : g->timeout_ms > 0 ? g->timeout_ms : REQUEST_TIMEOUT_MS;
  cu.curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, t);
  cu.curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                      t < CONNECT_TIMEOUT_MS ? t : (long)CONNECT_TIMEOUT_MS);
  cu.curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  cu.curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, g->tls ? "https" : "http");
  if (g->cacert[0])
    cu.curl_easy_setopt(c, CURLOPT_CAINFO, g->cacert);
  g->len = 0;
  g->retry_after_ms = -1;
  if (g->body)
    g->body[0] = '\0';
  CURLcode cc = cu.curl_easy_perform(c);
  cu.curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
  cu.curl_slist_free_all(h);
  if (cc != CURLE_OK)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: cannot reach the daemon: %s",
                      g->shown, cu.curl_easy_strerror(cc));
  cu.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
  return 0;
}

/* The idgen error of an answer's `error` word (docs/SERVE.md's table). */
static int error_code(const char *word, long status) {
  static const struct {
    const char *word;
    int code;
  } map[] = {
      {"invalid", IDGEN_EINVAL},      {"auth", IDGEN_EREGISTRY}, {"off", IDGEN_EREGISTRY},
      {"lease", IDGEN_ELEASE},        {"space", IDGEN_ESPACE},   {"limit", IDGEN_EPOOLFULL},
      {"pool_full", IDGEN_EPOOLFULL}, {"clock", IDGEN_ECLOCK},   {"registry", IDGEN_EREGISTRY}};
  for (size_t i = 0; word && i < sizeof map / sizeof map[0]; i++)
    if (strcmp(word, map[i].word) == 0)
      return map[i].code;
  return status == 400 || status == 411 || status == 413 ? IDGEN_EINVAL : IDGEN_EREGISTRY;
}

/* POSTs body to path.  0 with *reply (the answer of a 200, a JSON object:
 * free() it), or the error the answer's `error` word maps to, with
 * "registry: idgen://HOST:PORT: " and the daemon's message; *word (if not
 * NULL) gets that word ("" for none) and *retry_ms the answer's
 * Retry-After (-1: none). */
static int post(idg_t *g, const char *path, const jbody_t *body, long timeout_ms, answer_t **reply,
                char *word, size_t wordlen, int64_t *retry_ms, char *err, size_t errlen) {
  *reply = NULL;
  if (word)
    word[0] = '\0';
  if (retry_ms)
    *retry_ms = -1;
  if (body->full)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: %s: the request is longer than the %zu bytes the daemon "
                      "takes",
                      g->shown, path, body->cap);
  answer_t *a = malloc(sizeof *a);
  if (a == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  idg_lock(g);
  long status;
  char why[200] = "";
  int rc = perform(g, path, body->s, timeout_ms, &status, err, errlen);
  int parsed = rc == 0 && answer_parse(g->body ? g->body : "", g->len, a, why, sizeof why) == 0;
  if (rc == 0 && status == 200 && parsed) {
    pthread_mutex_unlock(&g->mu);
    *reply = a;
    return 0;
  }
  if (rc == 0) {
    const char *w = parsed ? answer_get(a, "error", J_STR, NULL) : NULL;
    const char *m = parsed ? answer_get(a, "message", J_STR, NULL) : NULL;
    rc = error_code(w, status);
    if (retry_ms)
      *retry_ms = g->retry_after_ms;
    if (word)
      snprintf(word, wordlen, "%s", w ? w : "");
    if (m != NULL && m[0])
      idgen__err(err, errlen, rc, "registry: %s: %s", g->shown, IDGEN_QUOTE(m, strlen(m), 0, 600));
    else if (status == 200)
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s: %s: the answer is not a JSON object: %s", g->shown, path, why);
    else
      idgen__err(err, errlen, rc, "registry: %s: %s: HTTP %ld%s%s", g->shown, path, status,
                 status == 404 ? " (is it an idgen daemon started with --leases?)" : "",
                 status == 401 ? " (give the token: idgen://AGENT:TOKEN@HOST:PORT)" : "");
  }
  pthread_mutex_unlock(&g->mu);
  free(a);
  return rc;
}

/* Requests on behalf of a lease of ttl_ms wait at most a quarter of it
 * (the keeper renews at a third: a late answer leaves time to try again);
 * the shortest TTL wins. */
static void request_timeout(idg_t *g, int64_t ttl_ms) {
  long t = ttl_ms / 4 < REQUEST_TIMEOUT_MIN_MS ? REQUEST_TIMEOUT_MIN_MS
           : ttl_ms / 4 > REQUEST_TIMEOUT_MS   ? REQUEST_TIMEOUT_MS
                                               : (long)(ttl_ms / 4);
  idg_lock(g);
  if (g->timeout_ms == 0 || t < g->timeout_ms)
    g->timeout_ms = t;
  pthread_mutex_unlock(&g->mu);
}

/* ---- answers ----------------------------------------------------------------------- */

/* Member `name` of answer j, a whole number from 0 to max, into *v: 0, or
 * IDGEN_EREGISTRY naming the member. */
static int answer_int(const idg_t *g, const answer_t *j, const char *route, const char *name,
                      int64_t max, int64_t *v, char *err, size_t errlen) {
  int present;
  const int64_t *m = answer_get(j, name, J_INT, &present);
  if (m == NULL || *m < 0 || *m > max)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s: %s: the answer's \"%s\" is %s, not a whole number from 0 "
                      "to %" PRId64,
                      g->shown, route, name, present ? "something else" : "missing", max);
  *v = *m;
  return 0;
}

/* Member `name`, a string, or NULL after an error naming it. */
static const char *answer_str(const idg_t *g, const answer_t *j, const char *route,
                              const char *name, char *err, size_t errlen) {
  const char *s = answer_get(j, name, J_STR, NULL);
  if (s == NULL)
    idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s: the answer has no string \"%s\"",
               g->shown, route, name);
  return s;
}

/* The answer to POST /lease into l, checked against what was asked: the
 * same space and pool, a tuple of l's pool whose key and worker agree. */
static int take_lease(idg_t *g, idgen_lease_t *l, const idgen_lease_request_t *req,
                      const answer_t *a, char *err, size_t errlen) {
  static const char route[] = "/lease";
  int64_t worker, generation, mark, floor, ttl, quarantine, expires_in = -1;
  const char *space = answer_str(g, a, route, "space", err, errlen);
  const char *layout = space ? answer_str(g, a, route, "layout", err, errlen) : NULL;
  const char *key = layout ? answer_str(g, a, route, "key", err, errlen) : NULL;
  if (key == NULL ||
      answer_int(g, a, route, "worker", (int64_t)l->pool.size - 1, &worker, err, errlen) < 0 ||
      answer_int(g, a, route, "generation", INT64_MAX, &generation, err, errlen) < 0 ||
      answer_int(g, a, route, "mark_ms", INT64_MAX, &mark, err, errlen) < 0 ||
      answer_int(g, a, route, "floor_ms", INT64_MAX, &floor, err, errlen) < 0 ||
      answer_int(g, a, route, "ttl_ms", IDGEN_LEASE_TTL_MAX_MS, &ttl, err, errlen) < 0 ||
      answer_int(g, a, route, "quarantine_ms", INT64_MAX, &quarantine, err, errlen) < 0)
    return IDGEN_EREGISTRY;
  int in_given = 0;
  answer_get(a, "expires_in_ms", J_INT, &in_given);
  if (in_given && answer_int(g, a, route, "expires_in_ms", INT64_MAX, &expires_in, err, errlen) < 0)
    return IDGEN_EREGISTRY;
  idgen_layout_t theirs;
  char pool[IDGEN_POOL_NAME_MAX] = "";
  if (idgen_layout_parse(&theirs, layout, NULL, 0) == 0)
    idgen__pool_name(&theirs, pool);
  uint64_t want = l->pool.fixed | (uint64_t)worker << l->pool.shift;
  uint64_t k = strlen(key) == 18 && strncmp(key, "0x", 2) == 0 &&
                       strspn(key + 2, "0123456789abcdefABCDEF") == 16
                   ? strtoull(key + 2, NULL, 16)
                   : ~want; /* not a key: never the one asked for */
  if (strcmp(space, l->r->space) != 0 || strcmp(pool, l->pool.name) != 0 || k != want ||
      generation < 1 || ttl < IDGEN_LEASE_TTL_MIN_MS)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s: /lease: the answer is not a lease of what was asked (space "
                      "%s, pool %s, key 0x%016" PRIx64 ", generation %" PRId64 ", ttl_ms %" PRId64
                      "; asked: space %s, pool %s, %s %" PRId64 ")",
                      g->shown, IDGEN_QUOTE(space, strlen(space), 0, 40), pool, k, generation, ttl,
                      l->r->space, l->pool.name, l->pool.field_name, worker);
  l->worker = (uint64_t)worker;
  l->generation = (uint64_t)generation;
  l->mark_ms = mark;
  l->floor_ms = floor;
  if (ttl < l->ttl_ms)
    l->ttl_ms = ttl; /* the daemon's is shorter: the keeper counts by it */
  l->quarantine_ms = quarantine;
  /* Half the TTL (docs/SERVE.md, "Mark"): a client paused past its TTL
   * finds its mark behind the clock, and its next ID waits for a mark
   * write that the daemon refuses. */
  if (req->mark_step_ms == 0)
    l->mark_step_ms = l->ttl_ms / 2;
  l->expires_in_ms = expires_in >= 0 ? expires_in : l->ttl_ms;
  l->expires_ms = idgen__clock_precise_ms() + l->expires_in_ms;
  return 0;
}

/* ---- open, close --------------------------------------------------------------------- */

static void idg_close(idgen_registry_t *r) {
  idg_t *g = r->be;
  if (g == NULL)
    return;
  if (g->fork_gen == idgen__fork_gen()) { /* a child leaves its parent's alone */
    if (g->curl)
      cu.curl_easy_cleanup(g->curl);
    pthread_mutex_destroy(&g->mu);
  }
  free(g->body);
  free(g);
  r->be = NULL;
}

static int idg_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  int rc = idgen__dynlib_need(
      &libcurl, r->uri[5] == 's' ? "registry: idgens: " : "registry: idgen: ", err, errlen);
  if (rc < 0)
    return rc;
  idg_t *g = calloc(1, sizeof *g);
  if (g == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  if ((rc = idg_parse(g, r->uri, rest, err, errlen)) < 0) {
    free(g);
    return rc;
  }
  pthread_mutex_init(&g->mu, NULL);
  g->fork_gen = idgen__fork_gen();
  r->be = g;
  /* Reach the daemon now (any answer will do: /health needs no token), so
   * that a wrong address, port or certificate fails at open. */
  long status;
  idg_lock(g);
  rc = perform(g, "/health", NULL, REQUEST_TIMEOUT_MS, &status, err, errlen);
  pthread_mutex_unlock(&g->mu);
  if (rc < 0)
    idg_close(r);
  return rc;
}

/* ---- leases ----------------------------------------------------------------------------- */

/* The lease's identity (docs/SERVE.md, "The identity") into b, opened. */
static void identity(const idgen_lease_t *l, jbody_t *b) {
  const idg_lease_t *s = l->be;
  jb_start(b);
  jb_str(b, "space", l->r->space);
  jb_str(b, "layout", l->pool.layout);
  jb_str(b, "node", l->node);
  jb_str(b, "field", l->pool.field_name);
  jb_int(b, "generation", (int64_t)l->generation);
  jb_str(b, "holder", s->holder);
  jb_str(b, "secret", s->secret);
}

/* The holder's name as the protocol takes it: blanks made '_', and a long
 * name cut in its host part, so that ":pid:token" stays. */
static void wire_holder(const char *holder, char *out) {
  size_t n = strlen(holder);
  if (n <= WIRE_HOLDER_MAX) {
    memcpy(out, holder, n + 1);
  } else {
    const char *tail = strchr(holder, ':');
    size_t tn = tail ? strlen(tail) : 0;
    if (tn >= WIRE_HOLDER_MAX)
      tn = 0;
    snprintf(out, WIRE_HOLDER_MAX + 1, "%.*s%s", (int)(WIRE_HOLDER_MAX - tn), holder,
             tn ? tail : "");
  }
  for (char *c = out; *c; c++)
    if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
      *c = '_';
}

/* The body of one try, with what is left of the start wait. */
static void acquire_body(const idgen_lease_t *l, const idgen_lease_request_t *req,
                         int64_t wait_left, jbody_t *b) {
  const idg_lease_t *s = l->be;
  jb_start(b);
  jb_str(b, "layout", l->pool.layout);
  if (l->pool.others[0])
    jb_str(b, "node", l->pool.others);
  jb_str(b, "field", l->pool.field_name);
  jb_str(b, "space", l->r->space);
  jb_str(b, "holder", s->holder);
  jb_str(b, "secret", s->secret);
  jb_int(b, "ttl_ms", l->ttl_ms);
  jb_int(b, "max_start_wait_ms", wait_left);
  jb_int(b, "start_borrow_ms", req->start_borrow_ms > 0 ? req->start_borrow_ms : 0);
  jb_int(b, "clock_ms", idgen__req_now_ms(req));
  jb_end(b);
}

/* What is left of the start wait `max` begun at t0, by the request's clock. */
static int64_t start_wait_left(const idgen_lease_request_t *req, int64_t t0, int64_t max) {
  int64_t waited = idgen__req_now_ms(req) - t0;
  return waited < 0 ? max : waited > max ? 0 : max - waited;
}

/* How long to wait before asking again after a refusal `word` with
 * Retry-After `after` (-1: none), `left` of the start wait remaining; -1:
 * do not.  Every tuple held (pool_full) or every free one's mark ahead
 * (clock): wait as the other backends do (idgen__pool_full,
 * idgen__start_wait), within the start wait.  Retry-After is whole seconds,
 * rounded up: a second more may still find one in time.  A `clock` refusal
 * without it is the daemon's own start wait used up (it waits at most a
 * second for a client, docs/SERVE.md): ask again a second later, until the
 * client's start wait is over; the last answer is the message. */
static int64_t retry_nap(const char *word, int64_t after, int64_t left) {
  int64_t nap;
  if (left <= 0)
    return -1;
  if (strcmp(word, "pool_full") == 0 || strcmp(word, "clock") == 0) {
    if (after >= 0 && after > left + 999)
      return -1;
    if (after < 0 && strcmp(word, "clock") != 0)
      return -1;
    nap = after >= 0 ? after : 1000;
    nap = nap < left ? nap : left;
    return nap < 10 ? 10 : nap;
  }
  return -1;
}

/* A connection of its own for an acquisition, which may wait (the daemon
 * waits up to a second for a mark): renewals and mark writes of the
 * registry's other leases go on meanwhile on the shared one. */
static idg_t *idg_clone(idg_t *g) {
  idg_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  idg_lock(g);
  c->tls = g->tls;
  c->timeout_ms = g->timeout_ms;
  memcpy(c->base, g->base, sizeof c->base);
  memcpy(c->shown, g->shown, sizeof c->shown);
  memcpy(c->token, g->token, sizeof c->token);
  memcpy(c->cacert, g->cacert, sizeof c->cacert);
  pthread_mutex_unlock(&g->mu);
  pthread_mutex_init(&c->mu, NULL);
  c->fork_gen = idgen__fork_gen();
  return c;
}

static void idg_drop(idg_t *c) {
  if (c->curl)
    cu.curl_easy_cleanup(c->curl);
  pthread_mutex_destroy(&c->mu);
  free(c->body);
  free(c);
}

/* The daemon grants at once, whatever the tuple's marks (its one thread
 * waits for no client): the holder starts above mark_ms and floor_ms, so
 * it waits here until the clock is within its borrow of them, at most
 * `left` ms, renewing at a third of the TTL meanwhile.  0, or an error with
 * the lease given back. */
static int idg_renew(idgen_lease_t *l, char *err, size_t errlen);
static void idg_release(idgen_lease_t *l);
static int start_wait(idg_t *g, idgen_lease_t *l, const idgen_lease_request_t *req, int64_t left,
                      char *err, size_t errlen) {
  (void)g;
  int64_t start = l->mark_ms > l->floor_ms ? l->mark_ms : l->floor_ms;
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  int64_t need = start - borrow - idgen__req_now_ms(req);
  if (need <= 0)
    return 0;
  /* The identity the renewals below carry (registry.c sets them again). */
  l->key = l->pool.fixed | l->worker << l->pool.shift;
  idgen__node_text(req->layout, l->key, l->node);
  int rc = 0;
  if (need > left)
    rc = idgen__err(err, errlen, IDGEN_ECLOCK,
                    "registry: %s: the %s lent (%" PRIu64 ") can start in %" PRId64
                    " ms, above its mark, more than max_start_wait_ms (%" PRId64 ")",
                    ((idg_t *)l->r->be)->shown, l->pool.field_name, l->worker, need, left);
  while (rc == 0 && need > 0) {
    int64_t nap = need < l->ttl_ms / 3 ? need : l->ttl_ms / 3;
    idgen__req_sleep_ms(req, nap > 0 ? nap : 1);
    need = start - borrow - idgen__req_now_ms(req);
    if (need > 0)
      rc = idg_renew(l, err, errlen);
  }
  if (rc < 0)
    idg_release(l);
  return rc;
}

static int idg_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                       size_t errlen) {
  request_timeout(l->r->be, l->ttl_ms);
  idg_t *g = idg_clone(l->r->be);
  idg_lease_t *b = g ? calloc(1, sizeof *b) : NULL;
  if (b == NULL) {
    if (g)
      idg_drop(g);
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  }
  uint8_t raw[SECRET_HEX / 2];
  idgen_random_bytes(raw, sizeof raw);
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(b->secret + 2 * i, 3, "%02x", raw[i]);
  wire_holder(l->holder, b->holder);
  l->be = b;
  int64_t max = req->max_start_wait_ms < 0 ? IDGEN_START_WAIT_MS_DEFAULT : req->max_start_wait_ms;
  int64_t t0 = idgen__req_now_ms(req);
  int rc = IDGEN_EREGISTRY;
  for (int tries = 0; tries < ACQUIRE_TRIES; tries++) {
    answer_t *reply;
    char word[16];
    int64_t left = start_wait_left(req, t0, max), after;
    jbody_t body;
    acquire_body(l, req, left, &body);
    /* The daemon may spend (some of) the start wait before it answers. */
    rc = post(g, "/lease", &body, (long)(left + REQUEST_TIMEOUT_MS), &reply, word, sizeof word,
              &after, err, errlen);
    if (rc == 0) {
      rc = take_lease(g, l, req, reply, err, errlen);
      free(reply);
      if (rc == 0)
        rc = start_wait(g, l, req, start_wait_left(req, t0, max), err, errlen);
      if (rc < 0)
        break;
      idg_drop(g);
      return 0;
    }
    int64_t nap = retry_nap(word, after, start_wait_left(req, t0, max));
    if (nap < 0)
      break;
    idgen__req_sleep_ms(req, nap);
  }
  idg_drop(g);
  free(l->be);
  l->be = NULL;
  return rc;
}

static int idg_renew(idgen_lease_t *l, char *err, size_t errlen) {
  idg_t *g = l->r->be;
  answer_t *reply;
  jbody_t body;
  identity(l, &body);
  jb_int(&body, "ttl_ms", l->ttl_ms); /* a restarted daemon takes the grant over for it */
  jb_end(&body);
  int rc = post(g, "/lease/renew", &body, 0, &reply, NULL, 0, NULL, err, errlen);
  if (rc < 0)
    return rc;
  int64_t ttl, in, mark;
  if (answer_int(g, reply, "/lease/renew", "ttl_ms", IDGEN_LEASE_TTL_MAX_MS, &ttl, err, errlen) <
          0 ||
      answer_int(g, reply, "/lease/renew", "expires_in_ms", INT64_MAX, &in, err, errlen) < 0 ||
      answer_int(g, reply, "/lease/renew", "mark_ms", INT64_MAX, &mark, err, errlen) < 0) {
    free(reply);
    return IDGEN_EREGISTRY;
  }
  free(reply);
  if (ttl < l->ttl_ms) /* the keeper counts by l->ttl_ms: the daemon's is the one that holds */
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s: /lease/renew: renewed for %" PRId64
                      " ms, less than the lease's TTL (%" PRId64 " ms)",
                      g->shown, ttl, l->ttl_ms);
  l->expires_in_ms = in;
  l->expires_ms = idgen__clock_precise_ms() + in;
  return 0;
}

static int idg_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  if (mark_ms < l->mark_ms) {
    /* The final mark, below the one recorded (the generator has stopped):
     * it goes with the release; until then the higher one stands. */
    l->mark_ms = mark_ms;
    return 0;
  }
  idg_t *g = l->r->be;
  answer_t *reply;
  jbody_t body;
  identity(l, &body);
  jb_int(&body, "mark_ms", mark_ms);
  jb_end(&body);
  int rc = post(g, "/lease/mark", &body, 0, &reply, NULL, 0, NULL, err, errlen);
  if (rc < 0)
    return rc;
  int64_t recorded;
  rc = answer_int(g, reply, "/lease/mark", "mark_ms", INT64_MAX, &recorded, err, errlen);
  free(reply);
  if (rc == 0 && recorded < mark_ms)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    "registry: %s: /lease/mark: the daemon recorded %" PRId64 ", not %" PRId64,
                    g->shown, recorded, mark_ms);
  if (rc == 0)
    l->mark_ms = mark_ms;
  return rc;
}

static void idg_release(idgen_lease_t *l) {
  idg_t *g = l->r->be;
  if (l->be == NULL)
    return;
  answer_t *reply;
  jbody_t body;
  identity(l, &body);
  jb_int(&body, "mark_ms", l->mark_ms);
  jb_end(&body);
  if (post(g, "/lease/release", &body, 0, &reply, NULL, 0, NULL, NULL, 0) == 0)
    free(reply);
}

/* ---- what the daemon does not lend out ----------------------------------------------- */

/* list, free and spaces: the tuples are the daemon's registry's. */
static int refuse(const idgen_registry_t *r, char *err, size_t errlen) {
  const idg_t *g = r->be;
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: %s: a lease service keeps no registry a client can read: the "
                    "tuples it lends are in the daemon's own registry (give the daemon's "
                    "--registry to idgen registry list or free)",
                    g->shown);
}

static int idg_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err,
                    size_t errlen) {
  (void)cb, (void)ctx;
  return refuse(r, err, errlen);
}

static int idg_free(idgen_registry_t *r, const char *pool, const char *node, int force, char *err,
                    size_t errlen) {
  (void)pool, (void)node, (void)force;
  return refuse(r, err, errlen);
}

static int idg_spaces(idgen_registry_t *r, idgen__space_list_cb cb, void *ctx, char *err,
                      size_t errlen) {
  (void)cb, (void)ctx;
  return refuse(r, err, errlen);
}

/* ---- sequence records ------------------------------------------------------------- */

/* A sequence call failed (post's rc, word and message): IDGEN_EAGAIN when
 * the daemon said `again`, else IDGEN_EREGISTRY (the message names the
 * daemon, never the token). */
static int seq_failed(int rc, const char *word) {
  if (rc == IDGEN_ENOMEM)
    return rc;
  return strcmp(word, "again") == 0 ? IDGEN_EAGAIN : IDGEN_EREGISTRY;
}

/* The space a sequence call names: the registry's own ("default" when
 * its URI named none, as for leases). */
static void seq_space(const idgen_registry_t *r, jbody_t *b) { jb_str(b, "space", r->space); }

static int idg_seq_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                        char *err, size_t errlen) {
  idg_t *g = r->be;
  *text = NULL;
  *version = 0;
  jbody_t body;
  jb_start(&body);
  seq_space(r, &body);
  jb_str(&body, "key", key);
  jb_end(&body);
  answer_t *reply;
  char word[16];
  int rc = post(g, "/lease/seq/load", &body, 0, &reply, word, sizeof word, NULL, err, errlen);
  if (rc < 0)
    return seq_failed(rc, word);
  int64_t v;
  int present;
  const char *t = answer_get(reply, "text", J_STR, &present);
  rc = answer_int(g, reply, "/lease/seq/load", "version", INT64_MAX, &v, err, errlen);
  if (rc == 0 && t == NULL && (!present || answer_get(reply, "text", J_NULL, NULL) == NULL))
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    "registry: %s: /lease/seq/load: the answer's \"text\" is neither a string "
                    "nor null",
                    g->shown);
  if (rc == 0 && t != NULL && (*text = strdup(t)) == NULL)
    rc = idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  free(reply);
  if (rc == 0)
    *version = (uint64_t)v;
  return rc;
}

static int idg_seq_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                         char *err, size_t errlen) {
  idg_t *g = r->be;
  char *buf = malloc(SEQ_BODY_MAX);
  if (buf == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  jbody_t body;
  jb_start_in(&body, buf, SEQ_BODY_MAX);
  seq_space(r, &body);
  jb_str(&body, "key", key);
  jb_int(&body, "version", (int64_t)version);
  jb_str(&body, "text", text);
  jb_end(&body);
  answer_t *reply;
  char word[16];
  int rc = post(g, "/lease/seq/store", &body, 0, &reply, word, sizeof word, NULL, err, errlen);
  free(buf);
  if (rc < 0)
    return body.full ? IDGEN_EREGISTRY : seq_failed(rc, word);
  const int64_t *ok = answer_get(reply, "ok", J_BOOL, NULL);
  if (ok == NULL || *ok != 1)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    "registry: %s: /lease/seq/store: the answer has no \"ok\": true", g->shown);
  free(reply);
  return rc;
}

/* One answer's keys, "SPACE KEY" lines, to cb; *last gets the last line. */
static int seq_keys_page(const char *keys, int (*cb)(void *, const char *, const char *), void *ctx,
                         char *last, size_t lastlen, int *stop) {
  char line[IDGEN_SPACE_NAME_MAX + IDGEN_SEQ_KEY_MAX + 2];
  for (const char *p = keys; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n == 0 || n >= sizeof line)
      return -1;
    memcpy(line, p, n);
    line[n] = '\0';
    char *sp = strchr(line, ' ');
    if (sp == NULL || sp == line || sp[1] == '\0')
      return -1;
    snprintf(last, lastlen, "%s", line);
    *sp = '\0';
    if (cb(ctx, line, sp + 1) != 0) {
      *stop = 1;
      return 0;
    }
    p += n + (nl != NULL);
  }
  return 0;
}

static int idg_seq_keys(idgen_registry_t *r,
                        int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                        char *err, size_t errlen) {
  idg_t *g = r->be;
  char after[IDGEN_SPACE_NAME_MAX + IDGEN_SEQ_KEY_MAX + 2] = "";
  for (int pages = 0; pages < 100000; pages++) {
    jbody_t body;
    jb_start(&body);
    if (r->space_given)
      seq_space(r, &body);
    else
      jb_int(&body, "every", 1);
    if (after[0])
      jb_str(&body, "after", after);
    jb_end(&body);
    answer_t *reply;
    char word[16];
    int rc = post(g, "/lease/seq/keys", &body, 0, &reply, word, sizeof word, NULL, err, errlen);
    if (rc < 0)
      return seq_failed(rc, word);
    const char *keys = answer_get(reply, "keys", J_STR, NULL);
    const int64_t *more = answer_get(reply, "more", J_BOOL, NULL);
    char was[sizeof after];
    memcpy(was, after, sizeof was);
    int stop = 0;
    if (keys == NULL || more == NULL ||
        seq_keys_page(keys, cb, ctx, after, sizeof after, &stop) < 0 ||
        (*more && !stop && strcmp(was, after) == 0))
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s: /lease/seq/keys: the answer is not a page of keys "
                      "(\"keys\": lines of SPACE KEY, \"more\": true or false)",
                      g->shown);
    int done = rc < 0 || stop || !*more;
    free(reply);
    if (done)
      return rc;
  }
  return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: /lease/seq/keys: too many pages",
                    g->shown);
}

#define IDG_OPS(name)                                                                              \
  {                                                                                                \
    .version = IDGEN__REGISTRY_OPS_VERSION, .scheme = name, .mark_step_ms = 0, .expires = 1,       \
    .check = idg_check, .open = idg_open, .acquire = idg_acquire, .renew = idg_renew,              \
    .mark = idg_mark, .release = idg_release, .list = idg_list, .free = idg_free,                  \
    .close = idg_close, .spaces = idg_spaces, .seq_load = idg_seq_load,                            \
    .seq_store = idg_seq_store, .seq_keys = idg_seq_keys,                                          \
  }
const idgen__registry_ops_t idgen__registry_idgen = IDG_OPS("idgen"),
                            idgen__registry_idgens = IDG_OPS("idgens");
