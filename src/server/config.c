/*
 * config.c -- settings of `idgen serve` (config.h).
 *
 * The keys, their sources and their generic checks are src/common/settings.c;
 * here are the daemon's own checks, run by settings_load in table order
 * through the hook check_key, and the rules between the daemon's limits.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "tls.h"

#define Q(s) SETTINGS_Q(s)

/* Whether a listener's address is loopback (127.0.0.0/8, ::1). */
static int is_loopback(const serve_addr_t *a) {
  if (a->sa.ss_family == AF_INET)
    return (ntohl(((const struct sockaddr_in *)&a->sa)->sin_addr.s_addr) >> 24) == 127;
  if (a->sa.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)&a->sa)->sin6_addr);
  return 0;
}

static const char usage_head[] =
    "Usage: idgen serve [--config FILE] [--check-config] [OPTIONS]\n"
    "\n"
    "Hand out IDs over HTTP/1.1 (GET /id, /ulid, /uuid7, /seq/NAME, /decode/ID,\n"
    "/info, /health, /ready, /metrics; GET / is a live status page) and RESP (ID,\n"
    "ULID, UUID7, SEQ, DECODE, INFO, PING...).  Sequences (GET /seq/NAME, SEQ\n"
    "NAME [N]) are dense numbers from counters in the registry, opened on first\n"
    "use (see 'idgen seq').\n"
    "Every option is also an IDGEN_* environment variable (--max-batch is\n"
    "IDGEN_MAX_BATCH) and a config-file key (max_batch = 1000); flags win over\n"
    "the environment, which wins over the file.  The leased node field's value\n"
    "comes from the registry (by default a directory that does not depend on the\n"
    "working directory, so daemons on one host each get their own tuple); the\n"
    "other node fields come from --node.  See docs/SERVE.md.\n"
    "\n"
    "      --config FILE          read key = value settings from FILE (or IDGEN_CONFIG)\n"
    "      --check-config         validate, print the effective settings, and exit\n"
    "      --settings-markdown    print the settings as docs/SERVE.md's table, and exit\n"
    "      --settings-man         print the settings as idgen-serve(1)'s roff, and exit\n"
    "  -h, --help                 show this help\n"
    "\n"
    "Settings:\n";

static void usage(void *ctx) {
  (void)ctx;
  fputs(usage_head, stdout);
  settings_usage(SETTINGS_SERVE, stdout);
  fputs("\nExamples:\n"
        "  idgen serve --http 127.0.0.1:8080 --resp 127.0.0.1:6380 --node datacenter=1\n"
        "  idgen serve --registry postgres://idgen@db.internal/idgen --node datacenter=2\n"
        "  idgen serve --registry static --node datacenter=1 --node worker=7\n"
        "  curl -s 127.0.0.1:8080/id\n  redis-cli -p 6380 ID\n"
        "\nExit status: 0 after SIGTERM or SIGINT, 1 no worker ID could be leased (pool\n"
        "full, registry unreachable, marks ahead of the clock) or a start-up failure,\n"
        "2 bad settings.\n",
        stdout);
}

static int parse_addr(serve_addr_t *a, const char *s, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  if (strcmp(s, "off") == 0)
    return 0;
  char host[128];
  const char *colon = strrchr(s, ':'), *h = s;
  size_t hlen = colon ? (size_t)(colon - s) : 0;
  if (colon == NULL || colon[1] == '\0') {
    snprintf(err, errlen, "expected HOST:PORT (such as 127.0.0.1:8080) or off");
    return -1;
  }
  if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
    h++;
    hlen -= 2;
  }
  if (hlen == 0) {
    snprintf(err, errlen, "no host: use 127.0.0.1:PORT for loopback, 0.0.0.0:PORT for all");
    return -1;
  }
  if (hlen >= sizeof host) {
    snprintf(err, errlen, "host name too long");
    return -1;
  }
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  int64_t port;
  if (settings_parse_int(colon + 1, &port) < 0 || port < 0 || port > 65535) {
    snprintf(err, errlen, "port \"%s\" is not a number from 0 to 65535", Q(colon + 1));
    return -1;
  }
  struct addrinfo hints = {0}, *res;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  int rc = getaddrinfo(host, colon + 1, &hints, &res);
  if (rc != 0) {
    snprintf(err, errlen, "cannot resolve host \"%s\": %s", Q(host), gai_strerror(rc));
    return -1;
  }
  memcpy(&a->sa, res->ai_addr, res->ai_addrlen);
  a->salen = res->ai_addrlen;
  freeaddrinfo(res);
  a->enabled = 1;
  snprintf(a->text, sizeof a->text, "%s", s);
  return 0;
}

/* lease_cors_origins: "" (none), "*", or comma-separated origins, each
 * http[s]://host[:port] without a path (what a browser sends in Origin).
 * 0, or -1 naming the bad origin in err. */
static int cors_origins_check(const char *v, char *err, size_t errlen) {
  if (v[0] == '\0' || strcmp(v, "*") == 0)
    return 0;
  for (const char *p = v; *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    size_t skip = strncmp(p, "https://", 8) == 0 ? 8 : strncmp(p, "http://", 7) == 0 ? 7 : 0;
    int ok = skip > 0 && n > skip;
    for (size_t i = skip; ok && i < n; i++)
      ok = isalnum((unsigned char)p[i]) || strchr("-._:[]", p[i]) != NULL;
    if (!ok) {
      snprintf(err, errlen,
               "bad origin \"%.*s\": give `*`, or origins such as https://app.example:8443, "
               "comma-separated (a scheme, a host, a port; no path)",
               (int)(n > 80 ? 80 : n), p);
      return -1;
    }
    p += n + (e != NULL);
  }
  return 0;
}

/* The daemon's part of each key's check (settings_spec_t.check). */
static int check_key(settings_t *s, void *ctx, int k) {
  serve_config_t *c = ctx;
  char err[300];
  switch (k) {
  case SK_HTTP:
  case SK_RESP:
  case SK_THRIFT:
    if (parse_addr(k == SK_HTTP   ? &c->http
                   : k == SK_RESP ? &c->resp
                                  : &c->thrift,
                   s->value[k], err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    return 1;
  case SK_THREADS: {
    int64_t x;
    if (settings_int(s, k, &x) != 0)
      return 2;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = x > 0 ? (int)x : (n > 0 ? (int)n : 1);
    if (x == 0 && strcmp(s->source[k], "default") == 0) {
      char buf[16];
      snprintf(buf, sizeof buf, "%d", c->threads);
      settings_set(s, k, buf, "default: one per CPU");
    }
    return 1;
  }
  case SK_LEASE_CORS_ORIGINS:
    if (cors_origins_check(s->value[k], err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    return 1;
  case SK_MAX_BATCH:
    if (s->value[k][0] == '\0' && strcmp(s->source[k], "default") == 0) {
      /* What one request can always get while the generator is not ahead:
       * a tick's sequence for each tick within borrow + wait, and the
       * current one (the daemon never sleeps for a batch: one call waits
       * at most the rest of its tick plus max_wait_ms). */
      const idgen_layout_t *l = &s->layout;
      uint64_t per_tick = UINT64_C(1) << l->fields[l->sequence_index].bits;
      uint64_t ticks =
          1 + (uint64_t)(s->gen.max_borrow_ms + s->gen.max_wait_ms) / (uint64_t)l->unit_ms;
      uint64_t fit = per_tick > 100000 / ticks ? 100000 : per_tick * ticks;
      if (fit > 100000)
        fit = 100000;
      /* A cache that refuses when empty serves at most its ring. */
      unsigned shift = l->fields[l->sequence_index].bits + (unsigned)s->num[SK_CACHE_BOOST_POWER];
      int capped = s->num[SK_CACHE] && s->num[SK_CACHE_ON_EMPTY] == IDGEN_CACHE_FAIL &&
                   shift <= 22 && fit > (UINT64_C(1) << shift);
      if (capped)
        fit = UINT64_C(1) << shift;
      char buf[32];
      snprintf(buf, sizeof buf, "%" PRIu64, fit);
      settings_set(s, k, buf,
                   capped ? "default: the cache's ring"
                          : "default: the layout within borrow + wait");
    }
    return 0;
  default:
    return 0;
  }
}

static int on_option(settings_t *s, void *ctx, int opt, const char *arg) {
  (void)s;
  (void)ctx;
  (void)arg;
  if (opt == 1) { /* --settings-markdown: docs/SERVE.md's table */
    settings_markdown(SETTINGS_SERVE, stdout);
    return 1;
  }
  if (opt == 2) { /* --settings-man: idgen-serve(1)'s SETTINGS section */
    settings_man(SETTINGS_SERVE, stdout);
    return 1;
  }
  return 2;
}

int serve_config_load(serve_config_t *c, int argc, char **argv) {
  static const struct option extra[] = {
      {"settings-markdown", no_argument, 0, 1}, {"settings-man", no_argument, 0, 2}, {0, 0, 0, 0}};
  memset(c, 0, sizeof *c);
  const settings_spec_t spec = {SETTINGS_SERVE, "serve",   1,     extra, NULL,
                                on_option,      check_key, usage, c};
  settings_t *s = &c->s;
  int rc = settings_load(s, &spec, argc, argv);
  if (rc != 0)
    return rc;
  c->max_connections = s->num[SK_MAX_CONNECTIONS];
  c->max_request_bytes = s->num[SK_MAX_REQUEST_BYTES];
  c->max_headers = s->num[SK_MAX_HEADERS];
  c->max_batch = s->num[SK_MAX_BATCH];
  c->max_output_bytes = s->num[SK_MAX_OUTPUT_BYTES];
  c->busy_poll_ns = s->num[SK_BUSY_POLL_US] * 1000;
  c->idle_timeout_ms = s->num[SK_IDLE_TIMEOUT_MS];
  c->slow_timeout_ms = s->num[SK_SLOW_TIMEOUT_MS];
  c->stall_timeout_ms = s->num[SK_STALL_TIMEOUT_MS];
  c->shutdown_timeout_ms = s->num[SK_SHUTDOWN_TIMEOUT_MS];
  c->max_agents = s->num[SK_MAX_AGENTS];
  c->pid_file = s->value[SK_PID_FILE];
  c->log_file = s->value[SK_LOG_FILE];
  c->audit_log = s->value[SK_AUDIT_LOG];
  c->audit_mode = (enum audit_mode)s->num[SK_AUDIT_MODE];
  c->audit_queue_bytes = s->num[SK_AUDIT_QUEUE_BYTES];
  c->audit_timeout_ms = s->num[SK_AUDIT_TIMEOUT_MS];
  c->leases = (int)s->num[SK_LEASES];
  c->lease_max_per_client = s->num[SK_LEASE_MAX_PER_CLIENT];
  c->lease_max_per_agent = s->num[SK_LEASE_MAX_PER_AGENT];
  c->lease_max_per_space = s->num[SK_LEASE_MAX_PER_SPACE];
  c->lease_max_skew_ms = s->num[SK_LEASE_MAX_SKEW_MS];
  c->lease_quarantine_ms = s->num[SK_LEASE_QUARANTINE_MS];
  c->lease_cors_origins = s->value[SK_LEASE_CORS_ORIGINS];
  c->seq_max_open = s->num[SK_SEQ_MAX_OPEN];
  /* Nothing to lend from the static registry: it keeps no leases. */
  if (rc == 0 && c->leases && !c->http.enabled)
    rc = settings_fail(s, SK_LEASES, "the lease service speaks HTTP: give an http listener");
  if (rc == 0 && c->leases && strcmp(s->value[SK_REGISTRY], "static") == 0)
    rc = settings_fail(s, SK_LEASES,
                       "the static registry keeps no leases, so there is nothing to lend "
                       "clients: give a file:, postgres:// or etcd:// registry");
  const serve_addr_t *ls[] = {&c->http, &c->resp, &c->thrift};
  static const char *const names[] = {"http", "resp", "thrift"};
  if (!c->http.enabled && !c->resp.enabled && !c->thrift.enabled)
    rc = settings_fail(s, -1, "http, resp and thrift are all off: nothing to serve");
  for (int i = 0; i < 3 && rc == 0; i++)
    for (int j = i + 1; j < 3 && rc == 0; j++)
      if (ls[i]->enabled && ls[j]->enabled && ls[i]->salen == ls[j]->salen &&
          memcmp(&ls[i]->sa, &ls[j]->sa, ls[i]->salen) == 0 &&
          strcmp(strrchr(ls[i]->text, ':'), ":0") != 0) /* port 0: two free ports */
        rc = settings_fail(s, -1, "%s and %s are both %s: give each its own port", names[i],
                           names[j], ls[i]->text);
  /* The cache's ring fits the library's bound; with cache_on_empty = fail
   * a request larger than the ring could never be served. */
  const idgen_layout_t *l = &s->layout;
  int64_t shift = l->fields[l->sequence_index].bits + s->num[SK_CACHE_BOOST_POWER];
  _Static_assert(IDGEN_CACHE_SLOTS_MAX == 1 << 22, "the check below says 22");
  if (rc == 0 && s->num[SK_CACHE] && shift > 22)
    rc = settings_fail(s, SK_CACHE_BOOST_POWER,
                       "the ring would have 2^%" PRId64 " slots (2^%d IDs a tick), more than "
                       "the %d allowed; lower it",
                       shift, l->fields[l->sequence_index].bits, IDGEN_CACHE_SLOTS_MAX);
  if (rc == 0 && s->num[SK_CACHE] && s->num[SK_CACHE_ON_EMPTY] == IDGEN_CACHE_FAIL &&
      c->max_batch > ((int64_t)1 << shift))
    rc = settings_fail(s, -1,
                       "max_batch = %" PRId64 " (from %s) is more than the cache's %" PRId64
                       " slots: with cache_on_empty = fail no such request could be served; "
                       "lower max_batch or raise cache_boost_power",
                       c->max_batch, s->source[SK_MAX_BATCH], (int64_t)1 << shift);
  /* One reply of max_batch IDs must fit in max_output_bytes, or a client
   * asking for a full batch would be cut off: at most 43 bytes an ID (a RESP
   * bulk UUID; a public text form: its prefix, '_', 30 characters and 4
   * more), plus the 64 KiB of replies that may already wait. */
  int64_t per_id = 43;
  if (s->public_keys != NULL && s->public_form == PUBLIC_TEXT) {
    int64_t t = (int64_t)strlen(s->public_prefix ? s->public_prefix : "") + 1 + 30 + 4;
    per_id = t > per_id ? t : per_id;
  }
  int64_t need = c->max_batch * per_id + 65536 + 4096;
  if (rc == 0 && c->max_output_bytes < need)
    rc = settings_fail(s, -1,
                       "max_output_bytes = %" PRId64 " (from %s) is too small for one reply of "
                       "max_batch = %" PRId64 " IDs (from %s): it needs %" PRId64
                       "; raise max_output_bytes or lower max_batch",
                       c->max_output_bytes, s->source[SK_MAX_OUTPUT_BYTES], c->max_batch,
                       s->source[SK_MAX_BATCH], need);
  /* The public codec as the loops will make it: a layout too small to hide
   * (or a setting the library refuses) fails here, not on every request. */
  if (rc == 0 && s->public_keys != NULL) {
    idgen_public_t *pc = NULL;
    idgen_public_settings_t ps = {IDGEN_PUBLIC_SNOWFLAKE, (unsigned)s->layout.total_bits,
                                  s->public_prefix, s->public_version};
    char perr[300];
    if (idgen_public_new(&pc, s->public_keys, &ps, perr, sizeof perr) < 0)
      rc = settings_fail(s, SK_PUBLIC_KEY, "%s", perr);
    idgen_public_free(pc);
  }
  /* The tokens: read now, so that --check-config and the start refuse a
   * bad file; a Thrift listener others can reach would take IDs without. */
  c->auth_metrics = (int)s->num[SK_AUTH_METRICS];
  const char *af = s->value[SK_AUTH_FILE];
  char aerr[600];
  if (rc == 0 && af[0] != '\0' && serve_auth_load(af, &c->auth, aerr, sizeof aerr) < 0)
    rc = settings_fail(s, SK_AUTH_FILE, "%s", aerr);
  if (rc == 0 && c->auth != NULL && c->thrift.enabled && !is_loopback(&c->thrift) &&
      !s->num[SK_THRIFT_WITHOUT_AUTH])
    rc = settings_fail(s, SK_THRIFT,
                       "with auth_file, Thrift (whose IDL has no way to show a "
                       "token) on %s, which is not loopback, would hand IDs to "
                       "anyone who reaches it: bind it to 127.0.0.1, or set "
                       "thrift_without_auth = true to accept that",
                       c->thrift.text);
  /* The certificate: read now too, for the same reasons. */
  const char *cert = s->value[SK_TLS_CERT], *key = s->value[SK_TLS_KEY];
  const char *ca = s->value[SK_TLS_CLIENT_CA];
  if (rc == 0 && (cert[0] != '\0') != (key[0] != '\0'))
    rc = settings_fail(s, cert[0] ? SK_TLS_KEY : SK_TLS_CERT,
                       "TLS needs both tls_cert and tls_key (the certificate chain and its "
                       "private key, PEM)");
  if (rc == 0 && ca[0] != '\0' && cert[0] == '\0')
    rc = settings_fail(s, SK_TLS_CLIENT_CA,
                       "client certificates are asked only over TLS: give tls_cert and tls_key "
                       "too");
  char terr[1200];
  if (rc == 0 && cert[0] != '\0' && tls_ctx_load(cert, key, ca, &c->tls, terr, sizeof terr) < 0)
    rc = settings_fail(s,
                       strncmp(terr, "tls_key", 7) == 0          ? SK_TLS_KEY
                       : strncmp(terr, "tls_client_ca", 13) == 0 ? SK_TLS_CLIENT_CA
                                                                 : SK_TLS_CERT,
                       "%s", terr);
  return rc;
}

void serve_config_print(const serve_config_t *c, FILE *out) { settings_print(&c->s, out); }

void serve_config_free(serve_config_t *c) {
  serve_auth_free(c->auth);
  c->auth = NULL;
  if (c->tls != NULL)
    tls_ctx_free(c->tls);
  c->tls = NULL;
  settings_free(&c->s);
}
