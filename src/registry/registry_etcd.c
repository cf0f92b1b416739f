/*
 * registry_etcd.c -- the `etcd://` registry (docs/DESIGN.md §11): machines share
 * node tuples through an etcd v3 cluster, spoken to through its JSON gateway
 * (POST /v3/...) with libcurl and jansson.
 *
 *   etcd://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][?OPTION=VALUE&...]
 *
 * Options: prefix=NAME (the key prefix, default "idgen": one cluster can
 * carry several registries), tls=1 (https), cacert=FILE, cert=FILE,
 * key=FILE (client certificate; each implies tls).  With USER:PASSWORD the
 * registry authenticates (/v3/auth/authenticate) and sends the token.
 *
 * Keys (PREFIX/POOL/..., POOL the pool's name, which has no '/'):
 *   PREFIX/POOL/pool       the layout the pool was first used with
 *   PREFIX/POOL/node/KEY   the tuple's record: "MARK GENERATION HOLDER", MARK
 *                          in 19 zero-padded digits, so that byte order is
 *                          the marks' order (a compare can move it forward
 *                          only); never deleted by idgen
 *   PREFIX/POOL/held/KEY   the holder, attached to an etcd lease: present
 *                          exactly while the tuple is held or in quarantine
 * KEY is the tuple's key in 16 hex digits: keys sort as numbers.  And
 *   PREFIX/seq/SPACE/NAME  a sequence counter's record, versioned by the
 *                          key's mod revision (see "sequences" below)
 *
 * A grant.  Each attempt gets an etcd lease of ceil((ttl + quarantine) / 1 s)
 * and sends one transaction: if held/KEY does not exist and node/KEY has not
 * changed since the scan (its mod revision), create held/KEY on the lease
 * and write the record with the next generation.  etcd applies transactions
 * one at a time, so two acquirers cannot both win.  An attempt that lost
 * or got no answer revokes its lease, which deletes whatever that attempt
 * may have written late: a claim cannot land unseen.
 *
 * Fencing.  The holder's token is held/KEY's create revision (the revision
 * of its grant) with its etcd lease: mark writes and the release compare
 * both.  A free by hand re-attaches held/KEY to a lease of its own (the
 * quarantine) and revokes the holder's, so both its keep-alives and its
 * marks fail from then on.  A mark write also compares the record's value:
 * it only moves forward, so a late request cannot undo a later one (the
 * final mark at release is the exception, as in the other backends).
 *
 * Time.  etcd has no clock a client can read, only its leases' countdowns.
 * Expiry and quarantine are one countdown: held/KEY lives ttl + quarantine
 * after the last keep-alive, while the holder counts its lease valid for ttl
 * after sending it.  So a tuple returns to the pool at least a quarantine
 * after its holder stopped issuing, by the cluster's clock (leases are
 * whole seconds: rounded up; a leader change only lengthens them).
 * Renewal is a keep-alive, then a look at held/KEY (still this holder's
 * revision and lease).  The clock skew check reads the Date header of a
 * reply (one-second resolution).
 *
 * What is not here: etcd has no triggers, so the pool-wide mark of
 * postgres:// (raised when a row is deleted by hand) has no equal; a
 * tuple whose keys were deleted by hand starts again at the wall clock,
 * protected only by the quarantine having passed.  Do not edit idgen's keys.
 *
 * One HTTP connection per registry (libcurl keeps it alive), behind a
 * mutex.  A request that gets no answer in time, or whose member cannot be
 * reached or has no leader, is sent to the next endpoint; every request
 * here can be repeated safely (see above).  "In time" is a quarter of the
 * shortest TTL of a lease acquired through this registry (250 ms to 5 s;
 * 5 s before the first): a follower holds a write it cannot forward while
 * the cluster elects a leader, for etcd's own request timeout (about 7 s),
 * and with one connection behind the mutex a mark write held that long
 * blocked the renewals behind it until the lease lapsed.  Sent again after
 * a quarter TTL, it reaches the new leader in time.  A forked child
 * never touches its parent's connection: it leaks the handle and makes its
 * own.
 */
#define _GNU_SOURCE
/* Calls go through a table (below), where curl's type-checking macros cannot follow. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "registry_int.h"

#define PFX "registry: etcd: "

/* libcurl, loaded when an etcd:// registry is first opened (registry_int.h,
 * idgen__dynlib_need): every call goes through cu. */
/* clang-format off */
#define CURL_FUNCS(X)                                                                   \
  X(curl_easy_cleanup) X(curl_easy_getinfo) X(curl_easy_init) X(curl_easy_perform)         \
  X(curl_easy_reset) X(curl_easy_setopt) X(curl_easy_strerror) X(curl_getdate)             \
  X(curl_global_init) X(curl_slist_append) X(curl_slist_free_all)
/* clang-format on */
static void curl_init(void);
IDGEN__DYNLIB(cu, libcurl, CURL_FUNCS, "libcurl.so.4", "libcurl4 or libcurl4t64", curl_init);
/* curl's global set-up, once, as the library is loaded (under the loading
 * lock: a fork() in the middle of it left the child spinning on curl's own
 * lock). */
static void curl_init(void) { cu.curl_global_init(CURL_GLOBAL_ALL); }

#define REQUEST_TIMEOUT_MS 5000 /* the longest; see request_timeout() */
#define REQUEST_TIMEOUT_MIN_MS 250
#define CONNECT_TIMEOUT_MS 2000
#define ACQUIRE_ROUNDS 64
#define MAX_ENDPOINTS 16
#define KEY_MAX 512   /* PREFIX/POOL/node/KEY */
#define VALUE_MAX 256 /* a record: 19 + 1 + 20 + 1 + holder */
/* The longest value written (a space's or a sequence's record): well
 * under etcd's request limit (1.5 MiB by default). */
#define BIG_MAX (1 << 20)

typedef struct etcd {
  pthread_mutex_t mu; /* guards the rest */
  CURL *curl;         /* NULL: made at the next request */
  unsigned fork_gen;  /* the process that owns mu and curl */
  struct curl_slist *headers;
  int n_endpoints, cur;              /* cur: the endpoint that answered last */
  char endpoint[MAX_ENDPOINTS][300]; /* "http://host:port" */
  char prefix[128];
  char user[128], password[256], token[1024];
  char cacert[1024], cert[1024], key[1024];
  int tls;
  char *body; /* the last reply */
  size_t len, cap;
  time_t date;     /* the last reply's Date header; 0 if none */
  long timeout_ms; /* a request's; 0: REQUEST_TIMEOUT_MS */
} etcd_t;

/* ---- the URI ----------------------------------------------------------------- */

/* One HOST:PORT of the host list (p, n bytes), checked and added to e. */
static int parse_endpoint(etcd_t *e, const char *p, size_t n, char *err, size_t errlen) {
  const char *colon = memrchr(p, ':', n); /* n > 0 */
  if (colon == NULL || colon == p || colon + 1 == p + n)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "endpoint \"%.*s\": expected HOST:PORT",
                      (int)(n > 100 ? 100 : n), p);
  long port = 0;
  for (const char *d = colon + 1; d < p + n; d++) {
    if (*d < '0' || *d > '9' || (port = port * 10 + (*d - '0')) > 65535)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        PFX "endpoint \"%.*s\": the port is not a number from 1 to 65535",
                        (int)(n > 100 ? 100 : n), p);
  }
  if (port == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "endpoint \"%.*s\": the port is not a number from 1 to 65535",
                      (int)(n > 100 ? 100 : n), p);
  for (const char *d = p; d < colon; d++)
    if (!(*d == '.' || *d == '-' || *d == '_' || *d == '[' || *d == ']' || *d == ':' ||
          (*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'z') || (*d >= 'A' && *d <= 'Z')))
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        PFX "endpoint \"%.*s\": a host name has letters, digits, '.', '-'",
                        (int)(n > 100 ? 100 : n), p);
  if (e->n_endpoints == MAX_ENDPOINTS)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "more than %d endpoints", MAX_ENDPOINTS);
  snprintf(e->endpoint[e->n_endpoints++], sizeof e->endpoint[0], "%.*s", (int)n, p);
  return 0;
}

/* One NAME=VALUE of the options (o, n bytes) into e; seen: the options
 * given so far (each at most once). */
static int parse_option(etcd_t *e, const char *o, size_t n, unsigned *seen, char *err,
                        size_t errlen) {
  const char *eq = memchr(o, '=', n);
  if (eq == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "option \"%s\": expected NAME=VALUE; known: space, prefix, tls, "
                          "cacert, cert, key",
                      IDGEN_QUOTE(o, n, '"', 100));
  size_t kn = (size_t)(eq - o);
  char val[1024];
  if (idgen__pct_decode(val, sizeof val, eq + 1, n - kn - 1, 1) < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "option %.*s: bad or too long a value",
                      (int)kn, o);
  char *dst = NULL;
  size_t dstlen = 0;
  static const char *const once[] = {"prefix", "tls", "cacert", "cert", "key"};
  for (unsigned i = 0; i < sizeof once / sizeof once[0]; i++)
    if (strlen(once[i]) == kn && strncmp(once[i], o, kn) == 0) {
      if (*seen & (1u << i))
        return idgen__err(err, errlen, IDGEN_EINVAL, PFX "option %s given twice", once[i]);
      *seen |= 1u << i;
    }
  if (kn == 6 && strncmp(o, "prefix", 6) == 0) {
    if (val[0] == '\0' || strchr(val, '/') || strlen(val) >= sizeof e->prefix)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "option prefix: 1 to %zu characters, no '/'",
                        sizeof e->prefix - 1);
    dst = e->prefix, dstlen = sizeof e->prefix;
  } else if (kn == 3 && strncmp(o, "tls", 3) == 0) {
    if (strcmp(val, "0") != 0 && strcmp(val, "1") != 0)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "option tls: 0 or 1");
    e->tls = val[0] == '1';
  } else if (kn == 6 && strncmp(o, "cacert", 6) == 0) {
    dst = e->cacert, dstlen = sizeof e->cacert, e->tls = 1;
  } else if (kn == 4 && strncmp(o, "cert", 4) == 0) {
    dst = e->cert, dstlen = sizeof e->cert, e->tls = 1;
  } else if (kn == 3 && strncmp(o, "key", 3) == 0) {
    dst = e->key, dstlen = sizeof e->key, e->tls = 1;
  } else {
    /* space= was taken by registry.c: a parameter it did not take is unknown */
    static const char *const known[] = {"space", "prefix", "tls", "cacert", "cert", "key"};
    char hint[64] = "";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
      if (strlen(known[i]) == kn && strncasecmp(known[i], o, kn) == 0)
        snprintf(hint, sizeof hint, " (did you mean %s? names are case-sensitive)", known[i]);
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "unknown option \"%s\"%s; known: space, prefix, tls, cacert, cert, key",
                      IDGEN_QUOTE(o, kn, '"', 60), hint);
  }
  if (dst) {
    if (val[0] == '\0')
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "option %.*s: empty", (int)kn, o);
    snprintf(dst, dstlen, "%s", val);
  }
  return 0;
}

/* Parses rest ("//[user:pw@]h:p[,h:p...][?opts]") into e (which may be a
 * scratch struct): 0, or IDGEN_EINVAL naming what is wrong. */
static int etcd_parse(etcd_t *e, const char *rest, char *err, size_t errlen) {
  memset(e, 0, sizeof *e);
  snprintf(e->prefix, sizeof e->prefix, "idgen");
  if (strncmp(rest, "//", 2) != 0)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "expected etcd://HOST:PORT[,HOST:PORT...][?OPTIONS]");
  const char *p = rest + 2, *q = strchr(p, '?');
  size_t auth_end = q ? (size_t)(q - p) : strlen(p);
  const char *at = memchr(p, '@', auth_end);
  if (memchr(p, '/', auth_end) != NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "no path after the endpoints (use ?prefix=NAME for a key prefix)");
  if (at) {
    const char *colon = memchr(p, ':', (size_t)(at - p));
    if (colon == NULL || colon == p)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "expected USER:PASSWORD@ before the hosts");
    if (idgen__pct_decode(e->user, sizeof e->user, p, (size_t)(colon - p), 1) < 0 ||
        idgen__pct_decode(e->password, sizeof e->password, colon + 1, (size_t)(at - colon - 1), 1) <
            0)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "bad user or password (percent-encoding)");
    auth_end -= (size_t)(at + 1 - p);
    p = at + 1;
  }
  while (auth_end > 0) {
    const char *comma = memchr(p, ',', auth_end);
    size_t n = comma ? (size_t)(comma - p) : auth_end;
    if (n == 0)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "an empty endpoint in the host list");
    int rc = parse_endpoint(e, p, n, err, errlen);
    if (rc != 0)
      return rc;
    if (comma == NULL)
      break;
    auth_end -= n + 1;
    p = comma + 1;
    if (auth_end == 0)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "an empty endpoint in the host list");
  }
  if (e->n_endpoints == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "no HOST:PORT");
  unsigned seen = 0; /* each option once: a second prefix= would otherwise win, silently */
  for (const char *o = q ? q + 1 : NULL; o && *o;) {
    const char *amp = strchr(o, '&');
    size_t n = amp ? (size_t)(amp - o) : strlen(o);
    int rc = parse_option(e, o, n, &seen, err, errlen);
    if (rc != 0)
      return rc;
    o = amp ? amp + 1 : NULL;
  }
  if ((e->cert[0] != '\0') != (e->key[0] != '\0'))
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "options cert and key go together");
  for (int i = 0; i < e->n_endpoints; i++) {
    char hp[300];
    snprintf(hp, sizeof hp, "%s", e->endpoint[i]);
    snprintf(e->endpoint[i], sizeof e->endpoint[i], "%s://%.280s", e->tls ? "https" : "http", hp);
  }
  return 0;
}

/* The URI only: libcurl is loaded by etcd_open. */
static int etcd_check(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)uri;
  etcd_t *scratch = malloc(sizeof *scratch);
  if (scratch == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int rc = etcd_parse(scratch, rest, err, errlen);
  free(scratch);
  return rc;
}

/* ---- base64 and JSON ------------------------------------------------------------ */

/* A new JSON string of n bytes of s in base64. */
static json_t *b64(const char *s, size_t n) {
  char small[4 * ((KEY_MAX + VALUE_MAX + 2) / 3) + 4];
  if (n > BIG_MAX)
    return NULL;
  char *out = n <= KEY_MAX + VALUE_MAX ? small : malloc(4 * ((n + 2) / 3) + 4);
  if (out == NULL)
    return NULL;
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
  json_t *j = json_string(out);
  if (out != small)
    free(out);
  return j;
}

static json_t *b64s(const char *s) { return b64(s, strlen(s)); }

/* Decodes the base64 of JSON string j into dst[dstlen] (NUL-terminated):
 * the length, or -1. */
static int unb64(const json_t *j, char *dst, size_t dstlen) {
  const char *s = json_string_value(j);
  if (s == NULL) {
    dst[0] = '\0';
    return 0; /* absent: etcd leaves out empty values */
  }
  size_t n = strlen(s);
  if (n % 4 != 0 || n / 4 * 3 >= dstlen)
    return -1;
  int len = EVP_DecodeBlock((unsigned char *)dst, (const unsigned char *)s, (int)n);
  if (len < 0)
    return -1;
  while (n > 0 && s[n - 1] == '=') { /* EVP_DecodeBlock counts the padding */
    n--;
    len--;
  }
  dst[len] = '\0';
  return len;
}

/* A 64-bit number of a reply: etcd's gateway writes them as strings. */
static int64_t jint(const json_t *o, const char *name) {
  const json_t *v = json_object_get(o, name);
  if (json_is_string(v))
    return strtoll(json_string_value(v), NULL, 10);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static json_t *jnum(int64_t v) {
  char b[24];
  snprintf(b, sizeof b, "%" PRId64, v);
  return json_string(b);
}

/* ---- requests --------------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
  etcd_t *e = ctx;
  size_t add = size * n;
  if (e->len + add + 1 > e->cap) {
    size_t cap = e->cap ? e->cap : 4096;
    while (cap < e->len + add + 1)
      cap *= 2;
    if (cap > (64u << 20))
      return 0; /* a reply this large is not etcd's: fail the transfer */
    char *b = realloc(e->body, cap);
    if (b == NULL)
      return 0;
    e->body = b;
    e->cap = cap;
  }
  memcpy(e->body + e->len, data, add);
  e->len += add;
  e->body[e->len] = '\0';
  return add;
}

static size_t on_header(char *data, size_t size, size_t n, void *ctx) {
  etcd_t *e = ctx;
  size_t len = size * n;
  if (len > 5 && strncasecmp(data, "Date:", 5) == 0) {
    char d[128];
    snprintf(d, sizeof d, "%.*s", (int)(len - 5 < 120 ? len - 5 : 120), data + 5);
    time_t t = cu.curl_getdate(d, NULL);
    e->date = t > 0 ? t : 0;
  }
  return len;
}

/* Takes e->mu; in a forked child, first gives up the parent's handle and
 * mutex (leaked: cleaning up could talk on the parent's connection). */
static void etcd_lock(etcd_t *e) {
  unsigned gen = idgen__fork_gen();
  if (e->fork_gen != gen) {
    e->curl = NULL;
    e->headers = NULL;
    e->token[0] = '\0';
    pthread_mutex_init(&e->mu, NULL);
    e->fork_gen = gen;
  }
  pthread_mutex_lock(&e->mu);
}

static void etcd_unlock(etcd_t *e) { pthread_mutex_unlock(&e->mu); }

/* One POST of body to path on endpoint i.  0 with *reply (a JSON object,
 * HTTP 200), 1 if this endpoint should be given up for the next one (no
 * connection, no answer in time, no leader), or an error with a message. */
static int post_once(etcd_t *e, int i, const char *path, const char *body, json_t **reply,
                     char *err, size_t errlen) {
  *reply = NULL;
  if (e->curl == NULL) {
    if ((e->curl = cu.curl_easy_init()) == NULL)
      return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  CURL *c = e->curl;
  char url[400];
  snprintf(url, sizeof url, "%s%s", e->endpoint[i], path);
  cu.curl_slist_free_all(e->headers);
  e->headers = cu.curl_slist_append(NULL, "Content-Type: application/json");
  if (e->token[0] && strcmp(path, "/v3/auth/authenticate") != 0) {
    char h[1100];
    snprintf(h, sizeof h, "Authorization: %s", e->token);
    e->headers = cu.curl_slist_append(e->headers, h);
  }
  cu.curl_easy_reset(c);
  cu.curl_easy_setopt(c, CURLOPT_URL, url);
  cu.curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
  cu.curl_easy_setopt(c, CURLOPT_HTTPHEADER, e->headers);
  cu.curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  cu.curl_easy_setopt(c, CURLOPT_WRITEDATA, e);
  cu.curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  cu.curl_easy_setopt(c, CURLOPT_HEADERDATA, e);
  cu.curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  long timeout = e->timeout_ms > 0 ? e->timeout_ms : REQUEST_TIMEOUT_MS;
  cu.curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout);
  cu.curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                      timeout < CONNECT_TIMEOUT_MS ? timeout : (long)CONNECT_TIMEOUT_MS);
  cu.curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  cu.curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  if (e->cacert[0])
    cu.curl_easy_setopt(c, CURLOPT_CAINFO, e->cacert);
  if (e->cert[0]) {
    cu.curl_easy_setopt(c, CURLOPT_SSLCERT, e->cert);
    cu.curl_easy_setopt(c, CURLOPT_SSLKEY, e->key);
  }
  e->len = 0;
  e->date = 0;
  if (e->body)
    e->body[0] = '\0';
  CURLcode cc = cu.curl_easy_perform(c);
  if (cc != CURLE_OK) {
    idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%s: %s", e->endpoint[i],
               cu.curl_easy_strerror(cc));
    return cc == CURLE_SSL_CACERT_BADFILE || cc == CURLE_SSL_CERTPROBLEM ? IDGEN_EREGISTRY : 1;
  }
  long status = 0;
  cu.curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  json_error_t je;
  json_t *j = json_loadb(e->body ? e->body : "", e->len, 0, &je);
  if (status == 200 && json_is_object(j)) {
    *reply = j;
    return 0;
  }
  const char *msg = json_string_value(json_object_get(j, "error"));
  int64_t code = jint(j, "code");
  char line[300];
  snprintf(line, sizeof line, "%s", msg ? msg : e->body && e->len ? e->body : "no body");
  for (char *s = line; *s; s++)
    if (*s == '\n' || *s == '\r' || *s == '\t')
      *s = ' ';
  json_decref(j);
  idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%s: HTTP %ld: %s", e->endpoint[i], status, line);
  /* gRPC Unavailable (14), a member without a leader, or one that is
   * stopping: another member may do. */
  if (code == 14 || status == 502 || status == 503 || strstr(line, "no leader") ||
      strstr(line, "leader changed") || strstr(line, "stopped"))
    return 1;
  return IDGEN_EREGISTRY;
}

/* Authenticates with USER:PASSWORD on endpoint i: 0 (e->token set), 1 to
 * try the next endpoint, or an error (a wrong password). */
static int etcd_authenticate(etcd_t *e, int i, char *err, size_t errlen) {
  json_t *reply;
  json_t *creds = json_pack("{s:s,s:s}", "name", e->user, "password", e->password);
  char *text = creds ? json_dumps(creds, JSON_COMPACT) : NULL;
  json_decref(creds); /* (leaked at every authentication before) */
  if (text == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int rc = post_once(e, i, "/v3/auth/authenticate", text, &reply, err, errlen);
  free(text);
  if (rc != 0)
    return rc;
  const char *t = json_string_value(json_object_get(reply, "token"));
  snprintf(e->token, sizeof e->token, "%s", t ? t : "");
  json_decref(reply);
  return 0;
}

/* POSTs body (stolen) to path: the endpoint that answered last first, then
 * the others in turn.  0 with *reply (json_decref it), or IDGEN_EREGISTRY
 * naming the last failure.  Call with e->mu held. */
static int etcd_post(etcd_t *e, const char *path, json_t *body, json_t **reply, char *err,
                     size_t errlen) {
  *reply = NULL;
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (text == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  char why[512] = "";
  int rc = 1, reauth = 0;
  for (int k = 0; k < e->n_endpoints; k++) {
    int i = (e->cur + k) % e->n_endpoints;
    if (e->user[0] && e->token[0] == '\0' && (rc = etcd_authenticate(e, i, why, sizeof why)) != 0) {
      if (rc < 0)
        break;
      continue;
    }
    rc = post_once(e, i, path, text, reply, why, sizeof why);
    if (rc < 0 && e->user[0] && !reauth && strstr(why, "auth token")) {
      e->token[0] = '\0'; /* expired, or another member's: once more */
      reauth = 1;
      k--;
      continue;
    }
    if (rc == 0)
      e->cur = i;
    if (rc <= 0)
      break;
  }
  free(text);
  if (rc != 0)
    idgen__err(err, errlen, IDGEN_EREGISTRY, "%s", why);
  return rc == 0 ? 0 : rc == 1 ? IDGEN_EREGISTRY : rc;
}

/* Locked wrapper of etcd_post. */
static int call(etcd_t *e, const char *path, json_t *body, json_t **reply, char *err,
                size_t errlen) {
  etcd_lock(e);
  int rc = etcd_post(e, path, body, reply, err, errlen);
  etcd_unlock(e);
  return rc;
}

/* ---- keys, values, transactions ----------------------------------------------------- */

static void key_of(const etcd_t *e, const char *pool, const char *kind, uint64_t key, char *out) {
  snprintf(out, KEY_MAX, "%s/%s/%s/%016" PRIx64, e->prefix, pool, kind, key);
}

/* A record's value. */
static void record_text(char *out, int64_t mark, uint64_t gen, const char *holder) {
  snprintf(out, VALUE_MAX, "%019" PRId64 " %" PRIu64 " %s", mark < 0 ? 0 : mark, gen, holder);
}

typedef struct record {
  int present;
  int64_t mark_ms, mod_rev;
  uint64_t generation;
  char holder[IDGEN_HOLDER_MAX];
} record_t;

/* Digits only, at least one and at most max: their value, or -1. */
static int64_t digits(const char *s, size_t n, size_t max) {
  if (n == 0 || n > max)
    return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

/* A record's value, exactly as record_text writes it: 0, or -1 (r zeroed). */
static int record_parse(const char *v, record_t *r) {
  memset(r, 0, sizeof *r);
  const char *sp = strchr(v, ' ');
  if (sp == NULL || sp - v != 19)
    return -1;
  const char *g = sp + 1, *end = strchr(g, ' ');
  size_t gn = end ? (size_t)(end - g) : strlen(g);
  int64_t mark = digits(v, 19, 19), gen = digits(g, gn, 18);
  if (mark < 0 || gen < 0 || (gn > 1 && g[0] == '0') || end == NULL ||
      strlen(end + 1) >= sizeof r->holder)
    return -1;
  r->mark_ms = mark;
  r->generation = (uint64_t)gen;
  snprintf(r->holder, sizeof r->holder, "%s", end + 1);
  r->present = 1;
  return 0;
}

int idgen__etcd_record_parse(const char *v, int64_t *mark_ms, uint64_t *generation, char *holder,
                             size_t holderlen) {
  record_t r;
  int rc = record_parse(v, &r);
  *mark_ms = r.mark_ms;
  *generation = r.generation;
  snprintf(holder, holderlen, "%s", r.holder);
  return rc;
}

int idgen__etcd_record_format(char *out, size_t outlen, int64_t mark_ms, uint64_t generation,
                              const char *holder) {
  char v[VALUE_MAX];
  record_text(v, mark_ms, generation, holder);
  return snprintf(out, outlen, "%s", v) < (int)outlen ? 0 : -1;
}

/* held/KEY's value: "QUARANTINE_MS HOLDER", the holder empty when freed by
 * hand (list and free read the quarantine from it). */
static void held_text(char *out, int64_t quarantine_ms, const char *holder) {
  snprintf(out, VALUE_MAX, "%" PRId64 " %s", quarantine_ms, holder);
}

int idgen__etcd_held_parse(const char *v, int64_t *quarantine_ms, char *holder, size_t holderlen) {
  const char *sp = strchr(v, ' ');
  *quarantine_ms = -1;
  holder[0] = '\0';
  if (sp == NULL || (sp - v > 1 && v[0] == '0') || strlen(sp + 1) >= holderlen)
    return -1;
  int64_t q = digits(v, (size_t)(sp - v), 18);
  if (q < 0)
    return -1;
  *quarantine_ms = q;
  snprintf(holder, holderlen, "%s", sp + 1);
  return 0;
}

#define held_parse idgen__etcd_held_parse

/* A key-value of a range reply, decoded. */
typedef struct kv {
  char key[KEY_MAX], value[VALUE_MAX];
  int64_t create_rev, mod_rev, lease;
} kv_t;

static int kv_of(const json_t *j, kv_t *kv) {
  memset(kv, 0, sizeof *kv);
  if (unb64(json_object_get(j, "key"), kv->key, sizeof kv->key) < 0 ||
      unb64(json_object_get(j, "value"), kv->value, sizeof kv->value) < 0)
    return -1;
  kv->create_rev = jint(j, "create_revision");
  kv->mod_rev = jint(j, "mod_revision");
  kv->lease = jint(j, "lease");
  return 0;
}

static json_t *cmp(const char *key, const char *target, const char *result, json_t *val) {
  const char *field = strcmp(target, "CREATE") == 0  ? "create_revision"
                      : strcmp(target, "MOD") == 0   ? "mod_revision"
                      : strcmp(target, "LEASE") == 0 ? "lease"
                                                     : "value";
  return json_pack("{s:o,s:s,s:s,s:o}", "key", b64s(key), "target", target, "result", result, field,
                   val);
}

static json_t *op_put(const char *key, const char *value, int64_t lease) {
  json_t *put = json_pack("{s:o,s:o}", "key", b64s(key), "value", b64s(value));
  if (lease)
    json_object_set_new(put, "lease", jnum(lease));
  return json_pack("{s:o}", "request_put", put);
}

static json_t *op_range(const char *key) {
  return json_pack("{s:{s:o}}", "request_range", "key", b64s(key));
}

static json_t *op_delete(const char *key) {
  return json_pack("{s:{s:o}}", "request_delete_range", "key", b64s(key));
}

/* The first key-value of response i of a transaction reply (a range),
 * decoded into kv: 1 if there is one, 0 if not, -1 if malformed. */
static int txn_range_kv(const json_t *reply, size_t i, kv_t *kv) {
  const json_t *r =
      json_object_get(json_array_get(json_object_get(reply, "responses"), i), "response_range");
  const json_t *kvs = json_object_get(r, "kvs");
  memset(kv, 0, sizeof *kv);
  if (r == NULL)
    return -1;
  if (json_array_size(kvs) == 0)
    return 0;
  return kv_of(json_array_get(kvs, 0), kv) < 0 ? -1 : 1;
}

/* Every key that starts with `prefix` (which ends in '/'): a range to the
 * same text with the '/' made '0', the next byte. */
static int range_prefix(etcd_t *e, const char *prefix, json_t **reply, char *err, size_t errlen) {
  char to[KEY_MAX];
  snprintf(to, sizeof to, "%s", prefix);
  to[strlen(to) - 1] = '0';
  return call(e, "/v3/kv/range", json_pack("{s:o,s:o}", "key", b64s(prefix), "range_end", b64s(to)),
              reply, err, errlen);
}

/* A lease of `ttl_s` seconds: its ID, or 0 with a message. */
static int64_t lease_grant(etcd_t *e, int64_t ttl_s, char *err, size_t errlen) {
  json_t *reply;
  if (call(e, "/v3/lease/grant", json_pack("{s:o}", "TTL", jnum(ttl_s)), &reply, err, errlen) < 0)
    return 0;
  int64_t id = jint(reply, "ID");
  json_decref(reply);
  if (id == 0)
    idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "lease grant: no lease ID in the reply");
  return id;
}

static void lease_revoke(etcd_t *e, int64_t id) {
  json_t *reply = NULL;
  if (id && call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", jnum(id)), &reply, NULL, 0) == 0)
    json_decref(reply);
}

/* ---- open, close --------------------------------------------------------------------- */

/* Frees the backend; in a forked child the parent's handle and mutex are
 * left alone (see etcd_lock). */
static void etcd_close(idgen_registry_t *r) {
  etcd_t *e = r->be;
  if (e == NULL)
    return;
  if (e->fork_gen == idgen__fork_gen()) {
    if (e->curl)
      cu.curl_easy_cleanup(e->curl);
    cu.curl_slist_free_all(e->headers);
    pthread_mutex_destroy(&e->mu);
  }
  free(e->body);
  free(e);
  r->be = NULL;
}

static int etcd_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  int rc = idgen__dynlib_need(&libcurl, PFX, err, errlen);
  if (rc < 0)
    return rc;
  etcd_t *e = calloc(1, sizeof *e);
  if (e == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  rc = etcd_parse(e, rest, err, errlen);
  if (rc < 0) {
    free(e);
    return rc;
  }
  pthread_mutex_init(&e->mu, NULL);
  e->fork_gen = idgen__fork_gen();
  /* Reach the cluster now, so that a wrong URI fails at open. */
  json_t *reply;
  rc = call(e, "/v3/maintenance/status", json_object(), &reply, err, errlen);
  if (rc == 0) {
    json_decref(reply);
    r->be = e;
    return 0;
  }
  r->be = e;
  etcd_close(r);
  return rc;
}

/* ---- leases ----------------------------------------------------------------------------- */

/* The backend's state of a lease. */
typedef struct etcd_lease {
  int64_t lease_id;  /* the etcd lease */
  int64_t grant_rev; /* held/KEY's create revision: the fencing token */
} etcd_lease_t;

/* What a scan of a pool found about one value of the leased field. */
typedef struct slot {
  uint64_t v;
  int held;
  kv_t held_kv; /* if held */
  record_t rec;
} slot_t;

/* Reads every key of l's pool: slots (sorted by value) of the values with
 * a record or a held key under l's fixed fields.  0, or an error. */
static int scan_pool(etcd_t *e, const idgen_lease_t *l, slot_t **out, size_t *n, char *err,
                     size_t errlen) {
  const idgen__pool_t *p = &l->pool;
  char from[KEY_MAX];
  snprintf(from, sizeof from, "%s/%s/", e->prefix, p->store);
  json_t *reply;
  int rc = range_prefix(e, from, &reply, err, errlen);
  *out = NULL;
  *n = 0;
  if (rc < 0)
    return rc;
  const json_t *kvs = json_object_get(reply, "kvs");
  slot_t *s = calloc(json_array_size(kvs) + 1, sizeof *s);
  if (s == NULL) {
    json_decref(reply);
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  size_t used = 0, plen = strlen(from);
  uint64_t inv = ~((p->size - 1) << p->shift);
  for (size_t i = 0; i < json_array_size(kvs); i++) {
    kv_t kv;
    if (kv_of(json_array_get(kvs, i), &kv) < 0)
      continue;
    const char *rest = kv.key + plen;
    int held = strncmp(rest, "held/", 5) == 0;
    if (!held && strncmp(rest, "node/", 5) != 0)
      continue;
    char *end;
    uint64_t key = strtoull(rest + 5, &end, 16);
    if (*end != '\0' || strlen(rest + 5) != 16 || (key & inv) != p->fixed)
      continue;
    uint64_t v = (key >> p->shift) & (p->size - 1);
    size_t j = 0;
    while (j < used && s[j].v != v)
      j++;
    if (j == used)
      s[used++].v = v;
    if (held) {
      s[j].held = 1;
      s[j].held_kv = kv;
    } else if (record_parse(kv.value, &s[j].rec) == 0) {
      s[j].rec.mod_rev = kv.mod_rev;
    }
  }
  json_decref(reply);
  /* held/ sorts before node/: the slots are not in value order yet. */
  for (size_t i = 1; i < used; i++)
    for (size_t j = i; j > 0 && s[j - 1].v > s[j].v; j--) {
      slot_t t = s[j];
      s[j] = s[j - 1];
      s[j - 1] = t;
    }
  *out = s;
  *n = used;
  return 0;
}

static int64_t time_to_live(etcd_t *e, int64_t id, char *err, size_t errlen, int *rc);

/* Whether a held key whose etcd lease has `left_s` seconds left (as etcd
 * says them: cut to whole seconds, so up to one more) may still be its
 * holder's, whose lease is valid while more than its quarantine `q_ms`
 * remains.  Counted in the holder's favour: with a TTL of 1000 ms the etcd
 * lease is 2 s, reads "1" for most of each renewal period, and `registry
 * free` without --force took the tuple from its live holder. */
static int may_be_held(int64_t left_s, int64_t q_ms) { return (left_s + 1) * 1000 > q_ms; }

/* How many of the n slots s are held keys in quarantine (expired or freed
 * by hand), and the ms until the first is back: for the full pool's
 * message.  Looks at 64 at most. */
static int in_quarantine(etcd_t *e, const slot_t *s, size_t n, int64_t *next_ms) {
  int count = 0, looked = 0;
  *next_ms = INT64_MAX;
  for (size_t i = 0; i < n && looked < 64; i++) {
    int64_t q;
    char who[IDGEN_HOLDER_MAX];
    int rc;
    if (!s[i].held || held_parse(s[i].held_kv.value, &q, who, sizeof who) < 0)
      continue;
    looked++;
    int64_t left_s = time_to_live(e, s[i].held_kv.lease, NULL, 0, &rc);
    if (rc < 0 || left_s < 0 || (who[0] && may_be_held(left_s, q)))
      continue;
    count++;
    if (left_s * 1000 < *next_ms)
      *next_ms = left_s * 1000;
  }
  return count;
}

/* Makes the pool key if missing (the layout it was first used with). */
static int ensure_pool(etcd_t *e, const idgen_lease_t *l, char *err, size_t errlen) {
  char key[KEY_MAX];
  snprintf(key, sizeof key, "%s/%s/pool", e->prefix, l->pool.store);
  json_t *txn = json_pack("{s:[o],s:[o]}", "compare", cmp(key, "CREATE", "EQUAL", jnum(0)),
                          "success", op_put(key, l->pool.layout, 0));
  json_t *reply;
  int rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen);
  json_decref(reply);
  return rc;
}

/* ---- ID spaces (space.c) ------------------------------------------------------------- */

/* The key of the record of the space at `path` ("" or "spaces/NAME/"). */
static void space_key(const etcd_t *e, const char *path, char *out) {
  snprintf(out, KEY_MAX, "%s/%sspace", e->prefix, path);
}

/* A range's first value, whole (a space's record is longer than a tuple's):
 * 0 with *text (malloc'ed, NUL-terminated; NULL if the key is absent) and
 * *mod_rev (0 if absent), or an error. */
static int get_big(etcd_t *e, const char *key, char **text, int64_t *mod_rev, char *err,
                   size_t errlen) {
  json_t *reply;
  *text = NULL;
  *mod_rev = 0;
  int rc = call(e, "/v3/kv/range", json_pack("{s:o}", "key", b64s(key)), &reply, err, errlen);
  if (rc < 0)
    return rc;
  const json_t *kv = json_array_get(json_object_get(reply, "kvs"), 0);
  if (kv != NULL) {
    const char *v = json_string_value(json_object_get(kv, "value"));
    size_t n = v ? strlen(v) : 0;
    *text = malloc(n / 4 * 3 + 4);
    if (*text == NULL || unb64(json_object_get(kv, "value"), *text, n / 4 * 3 + 4) < 0) {
      free(*text);
      *text = NULL;
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%s: a value idgen did not write", key);
    }
    *mod_rev = jint(kv, "mod_revision");
  }
  json_decref(reply);
  return rc;
}

/* The probe of space.c: pools of the space at `path`. */
typedef struct etcd_probe {
  etcd_t *e;
  const char *path;
} etcd_probe_t;

static int etcd_live(void *ctx, const char *pool, char *holders, size_t n, char *err,
                     size_t errlen) {
  etcd_probe_t *pp = ctx;
  char from[KEY_MAX];
  snprintf(from, sizeof from, "%s/%s%s/held/", pp->e->prefix, pp->path, pool);
  json_t *reply;
  int rc = range_prefix(pp->e, from, &reply, err, errlen);
  if (rc < 0)
    return rc;
  const json_t *kvs = json_object_get(reply, "kvs");
  int live = (int)json_array_size(kvs);
  size_t used = 0;
  if (n)
    holders[0] = '\0';
  for (int i = 0; i < live && i < 3 && used < n; i++) {
    kv_t kv;
    int64_t q;
    char who[IDGEN_HOLDER_MAX] = "?";
    if (kv_of(json_array_get(kvs, (size_t)i), &kv) == 0 &&
        held_parse(kv.value, &q, who, sizeof who) == 0 && who[0] == '\0')
      snprintf(who, sizeof who, "(freed)");
    used += (size_t)snprintf(holders + used, n - used, "%s%s (key 0x%s)", i ? ", " : "", who,
                             kv.key + strlen(from));
  }
  if (live > 3 && used < n)
    snprintf(holders + used, n - used, ", ...");
  json_decref(reply);
  return live;
}

static int etcd_issued(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                       size_t errlen) {
  etcd_probe_t *pp = ctx;
  char from[KEY_MAX];
  snprintf(from, sizeof from, "%s/%s%s/node/", pp->e->prefix, pp->path, pool);
  json_t *reply;
  int rc = range_prefix(pp->e, from, &reply, err, errlen);
  *mark = 0;
  *keys = 0;
  if (rc < 0)
    return rc;
  const json_t *kvs = json_object_get(reply, "kvs");
  for (size_t i = 0; i < json_array_size(kvs); i++) {
    kv_t kv;
    record_t rec;
    if (kv_of(json_array_get(kvs, i), &kv) < 0)
      continue;
    *keys |= strtoull(kv.key + strlen(from), NULL, 16); /* node/KEY */
    if (record_parse(kv.value, &rec) < 0)
      continue;
    if (rec.mark_ms > *mark)
      *mark = rec.mark_ms;
  }
  json_decref(reply);
  return 0;
}

/* The record of the space at `path`, and its key's revision (0: none yet);
 * without one, its pools as found (PREFIX/PATH/POOL/pool keys). */
static int space_load(etcd_t *e, const char *path, idgen__space_t *s, int64_t *rev, char *err,
                      size_t errlen) {
  char key[KEY_MAX], why[300], *text;
  space_key(e, path, key);
  memset(s, 0, sizeof *s);
  int rc = get_big(e, key, &text, rev, err, errlen);
  if (rc < 0)
    return rc;
  if (text != NULL) {
    rc = idgen__space_parse(text, strlen(text), s, why, sizeof why) < 0
             ? idgen__err(err, errlen, IDGEN_EREGISTRY,
                          PFX "%s: %s (the layouts of the ID space; never guessed: restore it, "
                              "or delete the key to have it made again from the pools)",
                          key, why)
             : 0;
    free(text);
    return rc;
  }
  char from[KEY_MAX];
  snprintf(from, sizeof from, "%s/%s", e->prefix, path);
  json_t *reply;
  /* Every key under the space, keys only: its pools' names. */
  char to[KEY_MAX];
  snprintf(to, sizeof to, "%s", from);
  to[strlen(to) - 1] = '0';
  rc = call(e, "/v3/kv/range",
            json_pack("{s:o,s:o,s:b}", "key", b64s(from), "range_end", b64s(to), "keys_only", 1),
            &reply, err, errlen);
  if (rc < 0)
    return rc;
  const json_t *kvs = json_object_get(reply, "kvs");
  for (size_t i = 0; rc == 0 && i < json_array_size(kvs); i++) {
    kv_t kv;
    if (kv_of(json_array_get(kvs, i), &kv) < 0)
      continue;
    const char *pool = kv.key + strlen(from), *slash = strchr(pool, '/');
    if (strncmp(pool, "epoch=", 6) != 0 || slash == NULL || strcmp(slash, "/pool") != 0)
      continue;
    char name[IDGEN_POOL_NAME_MAX];
    snprintf(name, sizeof name, "%.*s", (int)(slash - pool), pool);
    if (idgen__space_add_pool(s, name) < 0)
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                      PFX "the ID space has more than %d pools, or one whose name is not a "
                          "pool's (%s)",
                      IDGEN__SPACE_MAX, name);
  }
  json_decref(reply);
  return rc;
}

/* The space step of an acquisition: l's layout in its space (space.c),
 * joined if it is not yet, by one transaction that compares the space
 * key's revision and, for every pool it retires, that none of its held/
 * keys exists.  0 with *rev (the revision every claim compares) and
 * *floor; 1: the space moved meanwhile, look again. */
static int space_step(etcd_t *e, idgen_lease_t *l, const idgen_lease_request_t *req, int64_t *rev,
                      int64_t *floor, char *err, size_t errlen) {
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int rc = space_load(e, l->r->space_path, s, rev, err, errlen);
  if (rc < 0 || idgen__space_member(s, &l->pool, req->layout, floor)) {
    free(s);
    return rc;
  }
  etcd_probe_t probe = {e, l->r->space_path};
  idgen__space_probe_t pr = {&probe, etcd_live, etcd_issued};
  idgen__space_plan_t plan;
  rc = idgen__space_join(s, l->r->space, &l->pool, req->layout, req, idgen__req_now_ms(req), &pr,
                         &plan, err, errlen);
  char *text = rc == 0 ? malloc(IDGEN__SPACE_TEXT_MAX) : NULL;
  int len = text ? idgen__space_format(s, text, IDGEN__SPACE_TEXT_MAX) : -1;
  free(s);
  if (rc < 0 || !plan.changed) {
    free(text);
    *floor = plan.floor_ms;
    return rc;
  }
  if (len < 0) {
    free(text);
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "the space's record is too long");
  }
  char key[KEY_MAX];
  space_key(e, l->r->space_path, key);
  json_t *compare = json_pack("[o]", cmp(key, "MOD", "EQUAL", jnum(*rev)));
  for (int i = 0; i < plan.nretired; i++) {
    char from[KEY_MAX], to[KEY_MAX];
    snprintf(from, sizeof from, "%s/%s%s/held/", e->prefix, l->r->space_path, plan.retired[i]);
    snprintf(to, sizeof to, "%s", from);
    to[strlen(to) - 1] = '0';
    json_t *c = cmp(from, "CREATE", "EQUAL", jnum(0));
    json_object_set_new(c, "range_end", b64s(to));
    json_array_append_new(compare, c);
  }
  json_t *put =
      json_pack("{s:{s:o,s:o}}", "request_put", "key", b64s(key), "value", b64(text, (size_t)len));
  free(text);
  json_t *reply;
  rc = call(e, "/v3/kv/txn", json_pack("{s:o,s:[o]}", "compare", compare, "success", put), &reply,
            err, errlen);
  if (rc < 0)
    return rc;
  int ok = json_is_true(json_object_get(reply, "succeeded"));
  *rev = jint(json_object_get(reply, "header"), "revision");
  json_decref(reply);
  *floor = plan.floor_ms;
  return ok ? 0 : 1;
}

/* Claims value v (its record as scanned: rec) if it is still as scanned
 * and the space's key is at revision `space_rev` (no layout joined since):
 * 1 won (l filled in), 0 lost, or an error. */
static int claim(etcd_t *e, idgen_lease_t *l, uint64_t v, const record_t *rec, int64_t space_rev,
                 char *err, size_t errlen) {
  int64_t ttl_s = (l->ttl_ms + l->quarantine_ms + 999) / 1000;
  int64_t id = lease_grant(e, ttl_s, err, errlen);
  if (id == 0)
    return IDGEN_EREGISTRY;
  uint64_t key = l->pool.fixed | v << l->pool.shift;
  char held[KEY_MAX], node[KEY_MAX], value[VALUE_MAX], hv[VALUE_MAX];
  key_of(e, l->pool.store, "held", key, held);
  key_of(e, l->pool.store, "node", key, node);
  held_text(hv, l->quarantine_ms, l->holder);
  uint64_t gen = rec->present ? rec->generation + 1 : 1;
  int64_t mark = rec->present ? rec->mark_ms : 0;
  record_text(value, mark, gen, l->holder);
  char sk[KEY_MAX];
  space_key(e, l->r->space_path, sk);
  json_t *txn = json_pack("{s:[o,o,o],s:[o,o]}", "compare", cmp(held, "CREATE", "EQUAL", jnum(0)),
                          cmp(node, "MOD", "EQUAL", jnum(rec->present ? rec->mod_rev : 0)),
                          cmp(sk, "MOD", "EQUAL", jnum(space_rev)), "success", op_put(held, hv, id),
                          op_put(node, value, 0));
  json_t *reply;
  int rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen);
  if (rc < 0 || !json_is_true(json_object_get(reply, "succeeded"))) {
    json_decref(reply);
    lease_revoke(e, id); /* deletes what a late-landing attempt wrote */
    return rc < 0 ? rc : 0;
  }
  etcd_lease_t *b = calloc(1, sizeof *b);
  if (b == NULL) {
    json_decref(reply);
    lease_revoke(e, id);
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  b->lease_id = id;
  b->grant_rev = jint(json_object_get(reply, "header"), "revision");
  json_decref(reply);
  l->be = b;
  l->worker = v;
  l->key = key;
  l->generation = gen;
  l->mark_ms = mark;
  l->expires_in_ms = ttl_s * 1000 - l->quarantine_ms;
  l->expires_ms = idgen__clock_precise_ms() + l->expires_in_ms;
  return 1;
}

/* Requests on behalf of a lease of ttl_ms give up on a member after a
 * quarter of it (see the top of the file); the shortest TTL wins. */
static void request_timeout(etcd_t *e, int64_t ttl_ms) {
  long t = ttl_ms / 4 < REQUEST_TIMEOUT_MIN_MS ? REQUEST_TIMEOUT_MIN_MS
           : ttl_ms / 4 > REQUEST_TIMEOUT_MS   ? REQUEST_TIMEOUT_MS
                                               : (long)(ttl_ms / 4);
  etcd_lock(e);
  if (e->timeout_ms == 0 || t < e->timeout_ms)
    e->timeout_ms = t;
  etcd_unlock(e);
}

static int etcd_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                        size_t errlen) {
  etcd_t *e = l->r->be;
  const idgen__pool_t *p = &l->pool;
  request_timeout(e, l->ttl_ms);
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0, waited = 0;
  int rc = 0, made = 0;
  for (int round = 0; round < ACQUIRE_ROUNDS; round++) {
    /* The space first: the revision the claim compares, and the floor. */
    int64_t space_rev = 0, floor = 0;
    if ((rc = space_step(e, l, req, &space_rev, &floor, err, errlen)) < 0)
      return rc;
    if (rc == 1)
      continue; /* another layout joined meanwhile */
    l->floor_ms = floor;
    if (!made && (rc = ensure_pool(e, l, err, errlen)) < 0)
      return rc;
    made = 1;
    int64_t now = idgen__req_now_ms(req);
    if (floor >= now + borrow) { /* the layout's floor in the space is ahead */
      if ((rc = idgen__start_wait(PFX, req, p, 0, floor, now, &waited,
                                  "; its layout's floor in the ID space is ahead", err, errlen)) <
          0)
        return rc;
      continue;
    }
    slot_t *s;
    size_t n;
    if ((rc = scan_pool(e, l, &s, &n, err, errlen)) < 0)
      return rc;
    /* The lowest value that is free with its mark behind the clock, or
     * never used (slots are in value order: the first gap); else the free
     * one with the lowest mark. */
    uint64_t fresh = 0;
    size_t found = SIZE_MAX, best = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
      if (s[i].v == fresh)
        fresh++;
      if (s[i].held || !s[i].rec.present) /* held, or a record idgen cannot read */
        continue;
      if (found == SIZE_MAX && s[i].rec.mark_ms < now)
        found = i;
      if (best == SIZE_MAX || s[i].rec.mark_ms < s[best].rec.mark_ms)
        best = i;
    }
    record_t none = {0};
    uint64_t v;
    const record_t *rec;
    int64_t mark = 0;
    if (found != SIZE_MAX && (fresh >= p->size || s[found].v < fresh)) {
      v = s[found].v, rec = &s[found].rec;
    } else if (fresh < p->size) {
      v = fresh, rec = &none;
    } else if (best != SIZE_MAX) {
      v = s[best].v, rec = &s[best].rec, mark = rec->mark_ms;
    } else {
      int64_t next_ms = -1;
      int quarantined = in_quarantine(e, s, n, &next_ms);
      free(s);
      /* etcd tells a lease's time left in whole seconds, cut: "0" is
       * under a second, looked at again a quarter of one later (the
       * rounds are few). */
      if (quarantined > 0 && next_ms < 250)
        next_ms = 250;
      if ((rc = idgen__pool_full(PFX, req, p, p->size - (uint64_t)quarantined,
                                 (uint64_t)quarantined, next_ms, &waited, err, errlen)) < 0)
        return rc;
      continue; /* waited for one to come out of quarantine */
    }
    record_t chosen = *rec;
    free(s);
    if (mark >= now + borrow) { /* every free value's mark is ahead: wait for the lowest */
      if ((rc = idgen__start_wait(PFX, req, p, v, mark, now, &waited, "", err, errlen)) < 0)
        return rc;
      continue;
    }
    if ((rc = claim(e, l, v, &chosen, space_rev, err, errlen)) != 0)
      return rc < 0 ? rc : 0;
  }
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "no tuple of %s could be claimed in %d rounds: other acquirers kept "
                        "taking them; try again",
                    p->name, ACQUIRE_ROUNDS);
}

/* Says why l's fencing token no longer matches: IDGEN_ELEASE. */
static int fenced(etcd_t *e, idgen_lease_t *l, const char *what, char *err, size_t errlen) {
  char held[KEY_MAX], node[KEY_MAX], why[200] = "";
  key_of(e, l->pool.store, "held", l->key, held);
  key_of(e, l->pool.store, "node", l->key, node);
  json_t *reply;
  json_t *txn = json_pack("{s:[],s:[o,o]}", "compare", "success", op_range(held), op_range(node));
  if (call(e, "/v3/kv/txn", txn, &reply, NULL, 0) == 0) {
    kv_t h, nd;
    record_t rec;
    int64_t q;
    char who[IDGEN_HOLDER_MAX];
    int hp = txn_range_kv(reply, 0, &h), np = txn_range_kv(reply, 1, &nd);
    if (np == 1 && record_parse(nd.value, &rec) == 0 && rec.generation != l->generation &&
        rec.holder[0])
      snprintf(why, sizeof why, ": granted again, generation %" PRIu64 " to %.100s", rec.generation,
               rec.holder);
    else if (hp == 1 && held_parse(h.value, &q, who, sizeof who) == 0 && who[0] == '\0')
      snprintf(why, sizeof why, ": freed by hand");
    else if (hp == 0)
      snprintf(why, sizeof why, ": its etcd lease expired or was revoked");
    json_decref(reply);
  }
  return idgen__fenced(PFX, l, what, why, err, errlen);
}

static int etcd_renew(idgen_lease_t *l, char *err, size_t errlen) {
  etcd_t *e = l->r->be;
  etcd_lease_t *b = l->be;
  json_t *reply;
  int rc = call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", jnum(b->lease_id)), &reply, err,
                errlen);
  if (rc < 0)
    return rc;
  int64_t ttl_s = jint(json_object_get(reply, "result"), "TTL");
  json_decref(reply);
  if (ttl_s <= 0)
    return fenced(e, l, "renew", err, errlen);
  /* The lease is alive; is held/KEY still this grant's? */
  char held[KEY_MAX];
  key_of(e, l->pool.store, "held", l->key, held);
  if ((rc = call(e, "/v3/kv/range", json_pack("{s:o}", "key", b64s(held)), &reply, err, errlen)) <
      0)
    return rc;
  const json_t *kvs = json_object_get(reply, "kvs");
  kv_t kv;
  int ours = json_array_size(kvs) == 1 && kv_of(json_array_get(kvs, 0), &kv) == 0 &&
             kv.create_rev == b->grant_rev && kv.lease == b->lease_id;
  json_decref(reply);
  if (!ours)
    return fenced(e, l, "renew", err, errlen);
  l->expires_in_ms = ttl_s * 1000 - l->quarantine_ms;
  l->expires_ms = idgen__clock_precise_ms() + l->expires_in_ms;
  return 0;
}

/* A write conditional on l's token: ops run if held/KEY is still this
 * grant's (and extra, if not NULL, holds).  On failure the reply's failure
 * branch reads held/KEY and node/KEY.  0 done, 1 the token holds but extra
 * did not, or an error (IDGEN_ELEASE: fenced). */
static int token_txn(etcd_t *e, idgen_lease_t *l, json_t *extra, json_t *ops, const char *what,
                     record_t *now_rec, char *err, size_t errlen) {
  etcd_lease_t *b = l->be;
  char held[KEY_MAX], node[KEY_MAX];
  key_of(e, l->pool.store, "held", l->key, held);
  key_of(e, l->pool.store, "node", l->key, node);
  json_t *compare = json_pack("[o,o]", cmp(held, "CREATE", "EQUAL", jnum(b->grant_rev)),
                              cmp(held, "LEASE", "EQUAL", jnum(b->lease_id)));
  if (extra)
    json_array_append_new(compare, extra);
  json_t *txn = json_pack("{s:o,s:o,s:[o,o]}", "compare", compare, "success", ops, "failure",
                          op_range(held), op_range(node));
  json_t *reply;
  int rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen);
  if (rc < 0)
    return rc;
  if (json_is_true(json_object_get(reply, "succeeded"))) {
    json_decref(reply);
    return 0;
  }
  kv_t h, nd;
  int ours =
      txn_range_kv(reply, 0, &h) == 1 && h.create_rev == b->grant_rev && h.lease == b->lease_id;
  if (now_rec) {
    memset(now_rec, 0, sizeof *now_rec);
    if (txn_range_kv(reply, 1, &nd) == 1 && record_parse(nd.value, now_rec) == 0)
      now_rec->mod_rev = nd.mod_rev;
  }
  json_decref(reply);
  return ours ? 1 : fenced(e, l, what, err, errlen);
}

static int etcd_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  etcd_t *e = l->r->be;
  char node[KEY_MAX], value[VALUE_MAX];
  key_of(e, l->pool.store, "node", l->key, node);
  record_text(value, mark_ms, l->generation, l->holder);
  int final = mark_ms < l->mark_ms;
  /* Forward only: the stored record must be below the new one (its mark
   * leads the value); the final mark goes in as it is. */
  json_t *extra = final ? NULL : cmp(node, "VALUE", "LESS", b64s(value));
  record_t cur;
  int rc =
      token_txn(e, l, extra, json_pack("[o]", op_put(node, value, 0)), "mark", &cur, err, errlen);
  if (rc == 1 && cur.present && cur.mark_ms >= mark_ms && cur.generation == l->generation)
    rc = 0;         /* already there (a repeated request) */
  else if (rc == 1) /* the record is gone or not this grant's: write it under the token alone */
    rc = token_txn(e, l, NULL, json_pack("[o]", op_put(node, value, 0)), "mark", NULL, err, errlen);
  if (rc == 1)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "mark: the record kept changing");
  if (rc == 0)
    l->mark_ms = mark_ms;
  return rc;
}

static void etcd_release(idgen_lease_t *l) {
  etcd_t *e = l->r->be;
  etcd_lease_t *b = l->be;
  if (b == NULL)
    return;
  char held[KEY_MAX], node[KEY_MAX], value[VALUE_MAX];
  key_of(e, l->pool.store, "held", l->key, held);
  key_of(e, l->pool.store, "node", l->key, node);
  record_text(value, l->mark_ms, l->generation, "");
  token_txn(e, l, NULL, json_pack("[o,o]", op_delete(held), op_put(node, value, 0)), "release",
            NULL, NULL, 0);
  lease_revoke(e, b->lease_id);
}

/* ---- adopt --------------------------------------------------------------------------- */

/* What an adoption found of grant (l->key, l->generation) of `was`: 0 with
 * *h (held/KEY) and *nd (node/KEY), the grant still held by `was` and not
 * expired; IDGEN_ELEASE saying why not; or an error. */
static int adopt_look(etcd_t *e, idgen_lease_t *l, const char *was, kv_t *h, kv_t *nd,
                      record_t *rec, char *err, size_t errlen) {
  char held[KEY_MAX], node[KEY_MAX], why[260] = "", who[IDGEN_HOLDER_MAX];
  key_of(e, l->pool.store, "held", l->key, held);
  key_of(e, l->pool.store, "node", l->key, node);
  json_t *reply;
  json_t *txn = json_pack("{s:[],s:[o,o]}", "compare", "success", op_range(held), op_range(node));
  int rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen);
  if (rc < 0)
    return rc;
  int hp = txn_range_kv(reply, 0, h), np = txn_range_kv(reply, 1, nd);
  json_decref(reply);
  int64_t q = 0;
  if (hp < 0 || np < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "adopt: a malformed reply");
  if (np == 0)
    snprintf(why, sizeof why, "it was never granted");
  else if (record_parse(nd->value, rec) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%s: a value idgen did not write", node);
  else if (rec->generation != l->generation && rec->holder[0])
    snprintf(why, sizeof why, "granted again, generation %" PRIu64 " to %.100s", rec->generation,
             rec->holder);
  else if (rec->generation != l->generation)
    snprintf(why, sizeof why, "freed (now generation %" PRIu64 ")", rec->generation);
  else if (hp == 0)
    snprintf(why, sizeof why, "%s", rec->holder[0] ? "its etcd lease expired" : "released");
  else if (held_parse(h->value, &q, who, sizeof who) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%s: a value idgen did not write", held);
  else if (who[0] == '\0')
    snprintf(why, sizeof why, "freed by hand");
  else if (strcmp(rec->holder, was) != 0 || strcmp(who, was) != 0)
    snprintf(why, sizeof why, "recorded for %.100s, not %.100s", rec->holder, was);
  if (!why[0]) {
    int64_t left_s = time_to_live(e, h->lease, err, errlen, &rc);
    if (rc < 0)
      return rc;
    if (left_s < 0 || !may_be_held(left_s, q))
      snprintf(why, sizeof why, "it expired (in quarantine)");
  }
  if (why[0])
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      PFX "cannot take over generation %" PRIu64 " of %s in %s: %s", l->generation,
                      l->node, l->pool.name, why);
  rec->mod_rev = nd->mod_rev;
  return 0;
}

/*
 * Takes over grant (l->key, l->generation) of `was` (idgen_registry_adopt)
 * while it is held and not expired: one transaction that compares held/KEY
 * (its grant revision, etcd lease and value: not freed nor granted again
 * meanwhile) and the record (no mark written meanwhile), and moves held/KEY
 * onto an etcd lease of this process, with the new holder in it and in the
 * record, generation and mark unchanged.  held/KEY keeps its create
 * revision, the fencing token, so renew, mark and release work unchanged on
 * the new etcd lease; the old one is revoked, so that a holder still alive
 * is fenced at its next keep-alive or mark write (etcd cannot tell a
 * stopped holder from a live one: whether it may be taken over is the
 * caller's to decide, a lease service by its client's secret).  Held and
 * unexpired since its grant, the tuple's pool cannot have been retired
 * from the ID space (that needs none of its held/ keys to exist), so its
 * floor there is the grant's: l->floor_ms, as acquire gives.
 */
static int etcd_adopt(idgen_lease_t *l, const char *was, char *err, size_t errlen) {
  etcd_t *e = l->r->be;
  request_timeout(e, l->ttl_ms);
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int64_t rev, floor = 0;
  idgen_layout_t lay;
  int rc = space_load(e, l->r->space_path, s, &rev, err, errlen);
  int member = rc == 0 && idgen_layout_parse(&lay, l->pool.layout, NULL, 0) == 0 &&
               idgen__space_member(s, &l->pool, &lay, &floor);
  free(s);
  if (rc < 0)
    return rc;
  if (!member)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      PFX "cannot take over %s of %s: its layout is not in ID space \"%s\"",
                      l->node, l->pool.name, l->r->space);
  char held[KEY_MAX], node[KEY_MAX], value[VALUE_MAX], hv[VALUE_MAX];
  key_of(e, l->pool.store, "held", l->key, held);
  key_of(e, l->pool.store, "node", l->key, node);
  held_text(hv, l->quarantine_ms, l->holder);
  int64_t ttl_s = (l->ttl_ms + l->quarantine_ms + 999) / 1000;
  /* A live holder's mark write between the look and the transaction makes
   * it fail: looked at again. */
  for (int round = 0; round < 8; round++) {
    kv_t h, nd;
    record_t rec;
    if ((rc = adopt_look(e, l, was, &h, &nd, &rec, err, errlen)) < 0)
      return rc;
    int64_t id = lease_grant(e, ttl_s, err, errlen);
    if (id == 0)
      return IDGEN_EREGISTRY;
    record_text(value, rec.mark_ms, l->generation, l->holder);
    json_t *txn = json_pack(
        "{s:[o,o,o,o],s:[o,o]}", "compare", cmp(held, "CREATE", "EQUAL", jnum(h.create_rev)),
        cmp(held, "LEASE", "EQUAL", jnum(h.lease)), cmp(held, "MOD", "EQUAL", jnum(h.mod_rev)),
        cmp(node, "MOD", "EQUAL", jnum(rec.mod_rev)), "success", op_put(held, hv, id),
        op_put(node, value, 0));
    json_t *reply;
    rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen);
    if (rc < 0 || !json_is_true(json_object_get(reply, "succeeded"))) {
      json_decref(reply);
      /* What a late-landing attempt wrote goes with its lease: the tuple
       * is then free, above the mark that covers its holder's IDs. */
      lease_revoke(e, id);
      if (rc < 0)
        return rc;
      continue;
    }
    json_decref(reply);
    etcd_lease_t *b = calloc(1, sizeof *b);
    if (b == NULL) {
      lease_revoke(e, id);
      return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
    }
    b->lease_id = id;
    b->grant_rev = h.create_rev;
    l->be = b;
    lease_revoke(e, h.lease); /* nothing else is on it: fences the previous process */
    l->mark_ms = rec.mark_ms;
    l->floor_ms = floor;
    l->expires_in_ms = ttl_s * 1000 - l->quarantine_ms;
    l->expires_ms = idgen__clock_precise_ms() + l->expires_in_ms;
    return 0;
  }
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "adopt: the record of %s in %s kept changing (its holder is alive and "
                        "writing marks)",
                    l->node, l->pool.name);
}

/* ---- list and free ------------------------------------------------------------------- */

/* The seconds left of lease id: >= 0, or -1 if it is gone. */
static int64_t time_to_live(etcd_t *e, int64_t id, char *err, size_t errlen, int *rc) {
  json_t *reply;
  *rc = call(e, "/v3/lease/timetolive", json_pack("{s:o}", "ID", jnum(id)), &reply, err, errlen);
  if (*rc < 0)
    return -1;
  int64_t ttl = jint(reply, "TTL");
  json_decref(reply);
  return ttl;
}

/* The state of a tuple from its held key (NULL: none). */
static int row_state(etcd_t *e, const kv_t *held, idgen_lease_row_t *row, char *err,
                     size_t errlen) {
  row->state = IDGEN_LEASE_FREE;
  row->expires_in_ms = -1;
  int64_t q;
  char who[IDGEN_HOLDER_MAX];
  if (held == NULL || held_parse(held->value, &q, who, sizeof who) < 0)
    return 0;
  int rc;
  int64_t left_s = time_to_live(e, held->lease, err, errlen, &rc), left = left_s * 1000;
  if (rc < 0 || left < 0)
    return rc;
  if (who[0] == '\0' || !may_be_held(left_s, q)) {
    row->state = IDGEN_LEASE_QUARANTINE;
    row->expires_in_ms = left;
    if (who[0] == '\0')
      row->holder[0] = '\0';
  } else {
    row->state = IDGEN_LEASE_HELD;
    row->expires_in_ms = left + 1000 - q; /* at most: etcd cut the second */
  }
  return 0;
}

static int etcd_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err,
                     size_t errlen) {
  etcd_t *e = r->be;
  char from[KEY_MAX], seq[KEY_MAX], past[KEY_MAX], to[KEY_MAX];
  snprintf(from, sizeof from, "%s/", e->prefix);
  /* Every key but the sequences' (PREFIX/seq/..., records of any size,
   * not the list's): the ranges before and after them, one reply. */
  snprintf(seq, sizeof seq, "%s/seq/", e->prefix);
  snprintf(past, sizeof past, "%s/seq0", e->prefix);
  snprintf(to, sizeof to, "%s0", e->prefix);
  json_t *reply, *after = NULL;
  int rc =
      call(e, "/v3/kv/range", json_pack("{s:o,s:o}", "key", b64s(from), "range_end", b64s(seq)),
           &reply, err, errlen);
  if (rc == 0 && (rc = call(e, "/v3/kv/range",
                            json_pack("{s:o,s:o}", "key", b64s(past), "range_end", b64s(to)),
                            &after, err, errlen)) < 0)
    json_decref(reply);
  if (rc < 0)
    return rc;
  json_t *kvs = json_object_get(reply, "kvs");
  if (!json_is_array(kvs)) { /* etcd leaves an empty list out */
    kvs = json_array();
    json_object_set_new(reply, "kvs", kvs);
  }
  if (json_is_array(json_object_get(after, "kvs")))
    json_array_extend(kvs, json_object_get(after, "kvs"));
  json_decref(after);
  size_t n = json_array_size(kvs), plen = strlen(from);
  kv_t *all = calloc(n + 1, sizeof *all);
  if (all == NULL) {
    json_decref(reply);
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    if (kv_of(json_array_get(kvs, i), &all[i]) < 0)
      all[i].key[0] = '\0';
  json_decref(reply);
  /* Keys sort as PREFIX/POOL/held/..., PREFIX/POOL/node/..., PREFIX/POOL/pool. */
  char layout[IDGEN_LAYOUT_SPEC_MAX] = "", parsed[IDGEN_LAYOUT_SPEC_MAX] = "";
  idgen_layout_t lay;
  int known = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *k = all[i].key;
    if (strlen(k) < plen)
      continue;
    idgen_lease_row_t row;
    memset(&row, 0, sizeof row);
    const char *pool = k + plen, *slash;
    snprintf(row.space, sizeof row.space, "default");
    if (strncmp(pool, "spaces/", 7) == 0 && (slash = strchr(pool + 7, '/')) != NULL &&
        slash - pool - 7 < IDGEN_SPACE_NAME_MAX) {
      snprintf(row.space, sizeof row.space, "%.*s", (int)(slash - pool - 7), pool + 7);
      pool = slash + 1;
    }
    slash = strchr(pool, '/');
    if (strncmp(pool, "epoch=", 6) != 0 || slash == NULL || strncmp(slash, "/node/", 6) != 0 ||
        strlen(slash + 6) != 16 || (r->space_given && strcmp(row.space, r->space) != 0))
      continue;
    snprintf(row.pool, sizeof row.pool, "%.*s", (int)(slash - pool), pool);
    row.key = strtoull(slash + 6, NULL, 16);
    record_t rec;
    if (record_parse(all[i].value, &rec) < 0)
      continue;
    row.generation = rec.generation;
    row.mark_ms = rec.mark_ms;
    snprintf(row.holder, sizeof row.holder, "%s", rec.holder);
    /* Its pool key and held key. */
    char want[KEY_MAX];
    layout[0] = '\0';
    int sp = (int)(pool - k - (int)plen); /* "spaces/NAME/" or "" */
    snprintf(want, sizeof want, "%s%.*s%s/pool", from, sp, k + plen, row.pool);
    kv_t *held = NULL;
    for (size_t j = 0; j < n; j++) {
      if (strcmp(all[j].key, want) == 0)
        snprintf(layout, sizeof layout, "%s", all[j].value);
    }
    snprintf(want, sizeof want, "%s%.*s%s/held/%s", from, sp, k + plen, row.pool, slash + 6);
    for (size_t j = 0; j < n && held == NULL; j++)
      if (strcmp(all[j].key, want) == 0)
        held = &all[j];
    snprintf(row.layout, sizeof row.layout, "%s", layout);
    if (strcmp(layout, parsed) != 0) {
      snprintf(parsed, sizeof parsed, "%s", layout);
      known = layout[0] && idgen_layout_parse(&lay, layout, NULL, 0) == 0;
    }
    idgen__node_text(known ? &lay : NULL, row.key, row.node);
    if ((rc = row_state(e, held, &row, err, errlen)) == 0)
      rc = cb(ctx, &row);
  }
  free(all);
  return rc;
}

static int etcd_free(idgen_registry_t *r, const char *pool, const char *node, int force, char *err,
                     size_t errlen) {
  etcd_t *e = r->be;
  char pk[KEY_MAX], why[300], stored[IDGEN__SPACE_PATH_MAX + IDGEN_POOL_NAME_MAX];
  snprintf(stored, sizeof stored, "%s%s", r->space_path, pool);
  snprintf(pk, sizeof pk, "%s/%s/pool", e->prefix, stored);
  json_t *reply;
  int rc = call(e, "/v3/kv/range", json_pack("{s:o}", "key", b64s(pk)), &reply, err, errlen);
  if (rc < 0)
    return rc;
  kv_t pkv;
  int pool_known = json_array_size(json_object_get(reply, "kvs")) == 1 &&
                   kv_of(json_array_get(json_object_get(reply, "kvs"), 0), &pkv) == 0;
  json_decref(reply);
  if (!pool_known)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "no pool %.100s in space %s", pool, r->space);
  idgen_layout_t lay;
  int known = idgen_layout_parse(&lay, pkv.value, NULL, 0) == 0;
  uint64_t k;
  if (idgen__node_key(known ? &lay : NULL, node, &k, why, sizeof why) < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "%s", why);
  char held[KEY_MAX], nk[KEY_MAX];
  key_of(e, stored, "held", k, held);
  key_of(e, stored, "node", k, nk);
  for (int attempt = 0; attempt < 3; attempt++) {
    json_t *txn = json_pack("{s:[],s:[o,o]}", "compare", "success", op_range(held), op_range(nk));
    if ((rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen)) < 0)
      return rc;
    kv_t h, nd;
    int hp = txn_range_kv(reply, 0, &h), np = txn_range_kv(reply, 1, &nd);
    json_decref(reply);
    record_t rec;
    if (np != 1 || record_parse(nd.value, &rec) < 0)
      return idgen__err(err, errlen, IDGEN_EINVAL, PFX "%.100s of %.100s was never leased", node,
                        pool);
    if (hp != 1)
      return idgen__err(err, errlen, 0, PFX "%.100s in %.100s is already free (its mark stays)",
                        node, pool);
    int64_t q;
    char who[IDGEN_HOLDER_MAX];
    if (held_parse(h.value, &q, who, sizeof who) < 0)
      return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "%.100s: a value idgen did not write",
                        held);
    int64_t left = time_to_live(e, h.lease, err, errlen, &rc);
    if (rc < 0)
      return rc;
    if (left < 0)
      continue; /* expired meanwhile: look again */
    if (who[0] == '\0')
      return idgen__err(err, errlen, 0,
                        PFX "%.100s in %.100s is already freed: back in the pool in %" PRId64 " ms",
                        node, pool, left * 1000);
    if (may_be_held(left, q) && !force)
      return idgen__err(err, errlen, IDGEN_ELEASE,
                        PFX "%.100s in %.100s is held by %s (its lease expires in %" PRId64
                            " ms unless renewed); force to fence the holder out",
                        node, pool, rec.holder, (left + 1) * 1000 - q);
    /* Fence: held/KEY onto a lease of its own for the rest of the holder's
     * countdown (etcd says whole seconds, cut: one more) and at least a
     * whole quarantine, the next generation in the record, then the
     * holder's lease revoked.  The holder can issue nothing above the
     * record's mark, which it can no longer raise, and the next holder
     * starts above it. */
    /* TTLs are cut to whole seconds */
    int64_t ttl_s = left + 1 > (q + 999) / 1000 ? left + 1 : (q + 999) / 1000;
    if (ttl_s < 1)
      ttl_s = 1;
    int64_t id = lease_grant(e, ttl_s, err, errlen);
    if (id == 0)
      return IDGEN_EREGISTRY;
    char value[VALUE_MAX], hv[VALUE_MAX];
    record_text(value, rec.mark_ms, rec.generation + 1, "");
    held_text(hv, q, "");
    txn = json_pack("{s:[o,o],s:[o,o]}", "compare", cmp(held, "LEASE", "EQUAL", jnum(h.lease)),
                    cmp(nk, "MOD", "EQUAL", jnum(nd.mod_rev)), "success", op_put(held, hv, id),
                    op_put(nk, value, 0));
    if ((rc = call(e, "/v3/kv/txn", txn, &reply, err, errlen)) < 0) {
      lease_revoke(e, id);
      return rc;
    }
    int ok = json_is_true(json_object_get(reply, "succeeded"));
    json_decref(reply);
    if (!ok) {
      lease_revoke(e, id);
      continue;
    }
    lease_revoke(e, h.lease);
    return idgen__err(err, errlen, 0,
                      PFX "%.100s in %.100s freed: generation %" PRIu64 " (%s) fenced out; "
                          "back in the pool in %" PRId64 " ms",
                      node, pool, rec.generation, rec.holder, ttl_s * 1000);
  }
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "%.100s in %.100s kept changing while being freed; try again", node, pool);
}

/* Every space: the default one, and each PREFIX/spaces/NAME/ with keys. */
static int etcd_spaces(idgen_registry_t *r, idgen__space_list_cb cb, void *ctx, char *err,
                       size_t errlen) {
  etcd_t *e = r->be;
  char from[KEY_MAX], to[KEY_MAX];
  snprintf(from, sizeof from, "%s/spaces/", e->prefix);
  snprintf(to, sizeof to, "%s", from);
  to[strlen(to) - 1] = '0';
  json_t *reply;
  int rc = 0;
  if (!r->space_given)
    rc = call(e, "/v3/kv/range",
              json_pack("{s:o,s:o,s:b}", "key", b64s(from), "range_end", b64s(to), "keys_only", 1),
              &reply, err, errlen);
  if (rc < 0)
    return rc;
  char names[64][IDGEN_SPACE_NAME_MAX];
  int n = 0;
  snprintf(names[n++], IDGEN_SPACE_NAME_MAX, "%s", r->space_given ? r->space : "default");
  const json_t *kvs = r->space_given ? NULL : json_object_get(reply, "kvs");
  for (size_t i = 0; i < json_array_size(kvs) && n < 64; i++) {
    kv_t kv;
    if (kv_of(json_array_get(kvs, i), &kv) < 0)
      continue;
    const char *name = kv.key + strlen(from), *slash = strchr(name, '/');
    char one[IDGEN_SPACE_NAME_MAX];
    if (slash == NULL || slash - name >= IDGEN_SPACE_NAME_MAX)
      continue;
    snprintf(one, sizeof one, "%.*s", (int)(slash - name), name);
    if (idgen__space_name_check(one, NULL, 0) == 0 && strcmp(one, names[n - 1]) != 0)
      snprintf(names[n++], IDGEN_SPACE_NAME_MAX, "%s", one); /* keys come sorted */
  }
  if (!r->space_given)
    json_decref(reply);
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  for (int i = 0; i < n && rc == 0; i++) {
    char path[IDGEN__SPACE_PATH_MAX] = "";
    int64_t rev;
    if (strcmp(names[i], "default") != 0)
      snprintf(path, sizeof path, "spaces/%.32s/", names[i]);
    etcd_probe_t probe = {e, path};
    idgen__space_probe_t pr = {&probe, etcd_live, etcd_issued};
    if ((rc = space_load(e, path, s, &rev, err, errlen)) == 0)
      rc = cb(ctx, names[i], s, &pr);
  }
  free(s);
  return rc;
}

/* ---- sequences ---------------------------------------------------------------------- */

/* A counter's record is the value of PREFIX/seq/SPACE/KEY, and its version
 * the key's mod revision (revisions only grow, cluster-wide); a store is a
 * transaction that compares it (or, for a new counter, that the key was
 * never created) and puts.  A request sent again to the next endpoint after
 * no answer may find its own earlier send landed: it then answers
 * IDGEN_EAGAIN, and the caller loads again (no claim is used before its
 * store returned 0). */
static void seq_key(const etcd_t *e, const char *space, const char *key, char *out) {
  snprintf(out, KEY_MAX, "%s/seq/%s/%s", e->prefix, space, key);
}

/* A failed sequence operation's message, naming the registry (as shown:
 * its password masked) and the counter; why is the request's, after PFX. */
static int seq_fail(const idgen_registry_t *r, const char *key, const char *what, int rc,
                    const char *why, char *err, size_t errlen) {
  if (strncmp(why, PFX, sizeof PFX - 1) == 0)
    why += sizeof PFX - 1;
  return idgen__err(err, errlen, rc, PFX "%s: counter %.140s of space %s: %s: %s",
                    r->shown ? r->shown : "etcd", key, r->space, what, why);
}

static int etcd_seq_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                         char *err, size_t errlen) {
  etcd_t *e = r->be;
  char k[KEY_MAX], why[512] = "";
  int64_t rev;
  seq_key(e, r->space, key, k);
  int rc = get_big(e, k, text, &rev, why, sizeof why);
  if (rc < 0)
    return seq_fail(r, key, "load", rc, why, err, errlen);
  *version = *text ? (uint64_t)rev : 0;
  return 0;
}

static int etcd_seq_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                          char *err, size_t errlen) {
  etcd_t *e = r->be;
  char k[KEY_MAX], why[512] = "";
  seq_key(e, r->space, key, k);
  if (strlen(text) > BIG_MAX || version > INT64_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      PFX "counter %.140s: a record over %d bytes, or a version no revision has",
                      key, BIG_MAX);
  json_t *c = version == 0 ? cmp(k, "CREATE", "EQUAL", jnum(0))
                           : cmp(k, "MOD", "EQUAL", jnum((int64_t)version));
  json_t *txn = json_pack("{s:[o],s:[o]}", "compare", c, "success", op_put(k, text, 0));
  json_t *reply;
  if (txn == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int rc = call(e, "/v3/kv/txn", txn, &reply, why, sizeof why);
  if (rc < 0)
    return seq_fail(r, key, "store", rc, why, err, errlen);
  int won = json_is_true(json_object_get(reply, "succeeded"));
  json_decref(reply);
  if (!won)
    return idgen__err(err, errlen, IDGEN_EAGAIN,
                      PFX "counter %.140s of space %s: its record changed since version %" PRIu64
                          " was read",
                      key, r->space, version);
  return 0;
}

/* Keys only, in byte order: one space's (r's, when its URI named one), or
 * every space's. */
static int etcd_seq_keys(idgen_registry_t *r,
                         int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                         char *err, size_t errlen) {
  etcd_t *e = r->be;
  char from[KEY_MAX], to[KEY_MAX], why[512] = "";
  if (r->space_given)
    snprintf(from, sizeof from, "%s/seq/%s/", e->prefix, r->space);
  else
    snprintf(from, sizeof from, "%s/seq/", e->prefix);
  snprintf(to, sizeof to, "%s", from);
  to[strlen(to) - 1] = '0';
  json_t *reply;
  int rc =
      call(e, "/v3/kv/range",
           json_pack("{s:o,s:o,s:b}", "key", b64s(from), "range_end", b64s(to), "keys_only", 1),
           &reply, why, sizeof why);
  if (rc < 0)
    return seq_fail(r, "(every one)", "list", rc, why, err, errlen);
  const json_t *kvs = json_object_get(reply, "kvs");
  size_t base = strlen(e->prefix) + 5; /* PREFIX/seq/ */
  for (size_t i = 0; i < json_array_size(kvs) && rc == 0; i++) {
    kv_t kv;
    if (kv_of(json_array_get(kvs, i), &kv) < 0 || strlen(kv.key) <= base)
      continue;
    char *space = kv.key + base, *slash = strchr(space, '/');
    if (slash == NULL || slash == space || slash[1] == '\0' || strchr(slash + 1, '/'))
      continue; /* not a counter's key */
    *slash = '\0';
    rc = cb(ctx, space, slash + 1);
  }
  json_decref(reply);
  return rc;
}

/* etcd has no clock to read; its replies carry an HTTP Date (whole
 * seconds): the middle of that second. */
static int etcd_clock(idgen_registry_t *r, int64_t *unix_ms, char *err, size_t errlen) {
  etcd_t *e = r->be;
  json_t *reply;
  etcd_lock(e);
  int rc = etcd_post(e, "/v3/maintenance/status", json_object(), &reply, err, errlen);
  time_t date = e->date;
  etcd_unlock(e);
  if (rc < 0)
    return rc;
  json_decref(reply);
  if (date <= 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "the reply had no Date header");
  *unix_ms = (int64_t)date * 1000 + 500;
  return 0;
}

const idgen__registry_ops_t idgen__registry_etcd = {
    .version = IDGEN__REGISTRY_OPS_VERSION,
    .scheme = "etcd",
    .mark_step_ms = 0,
    .expires = 1,
    .check = etcd_check,
    .open = etcd_open,
    .acquire = etcd_acquire,
    .renew = etcd_renew,
    .mark = etcd_mark,
    .release = etcd_release,
    .list = etcd_list,
    .free = etcd_free,
    .close = etcd_close,
    .clock = etcd_clock,
    .spaces = etcd_spaces,
    .adopt = etcd_adopt,
    .seq_load = etcd_seq_load,
    .seq_store = etcd_seq_store,
    .seq_keys = etcd_seq_keys,
};
