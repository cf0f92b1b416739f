/*
 * config.c -- settings of `idgen serve` from three sources.
 *
 * One table names every key once; its flag (--max-batch), environment
 * variable (IDGEN_MAX_BATCH) and file key (max_batch) are derived from it.
 * Values are gathered as text, lowest precedence first (defaults, file,
 * environment, flags), each remembering its source, and only then validated
 * in table order, so that an error names the value that was in effect and
 * where it came from.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


/* A setting, key, path or argument as messages quote it: printable ASCII,
 * other bytes as \xHH (idgen_quote), at most 100 characters. */
#define Q(s) IDGEN_QUOTE((s), strlen(s), '"', 100)
#define QN(s, n) IDGEN_QUOTE((s), (n), '"', 100)

enum type { T_ADDR, T_LAYOUT, T_NODE, T_REGISTRY, T_FIELD, T_INT, T_CLOCK, T_PATH };

static const struct keydef {
  const char *name;
  enum type type;
  const char *defval;
  int64_t min, max;
  const char *arg, *help;
} keys[SERVE_NKEYS] = {
    [K_HTTP] = {"http", T_ADDR, "127.0.0.1:8080", 0, 0, "ADDR:PORT",
                "HTTP listener, or off (port 0: any free port)"},
    [K_RESP] = {"resp", T_ADDR, "127.0.0.1:6380", 0, 0, "ADDR:PORT", "RESP listener, or off"},
    [K_LAYOUT] = {"layout", T_LAYOUT, "twitter", 0, 0, "L", "preset name or layout spec"},
    [K_NODE] = {"node", T_NODE, "", 0, 0, "NAME=V", "a node field's value (repeatable)"},
    [K_REGISTRY] = {"registry", T_REGISTRY, "", 0, 0, "URI",
                    "where the node tuple is leased: file:DIR, postgres://..., or static "
                    "(the --node values, unchecked); default file:/var/lib/idgen as root, "
                    "else file:$XDG_STATE_HOME/idgen or file:~/.local/state/idgen"},
    [K_LEASE_FIELD] = {"lease_field", T_FIELD, "", 0, 0, "NAME",
                       "the node field the registry assigns (default worker, or the only "
                       "node field)"},
    [K_LEASE_TTL_MS] = {"lease_ttl_ms", T_INT, IDGEN_STR(IDGEN_LEASE_TTL_DEFAULT_MS), IDGEN_LEASE_TTL_MIN_MS,
                        IDGEN_LEASE_TTL_MAX_MS, "N",
                        "the worker lease's TTL; renewed at a third of it"},
    [K_MAX_START_WAIT_MS] = {"max_start_wait_ms", T_INT, IDGEN_STR(IDGEN_START_WAIT_MS_DEFAULT), 0,
                             IDGEN_START_WAIT_MS_MAX, "N",
                             "how long the start may wait for a worker ID's mark"},
    [K_MAX_BORROW_MS] = {"max_borrow_ms", T_INT, IDGEN_STR(IDGEN_MAX_BORROW_MS_DEFAULT), 0,
                         IDGEN_MAX_BORROW_MS_MAX, "N",
                         "how far the generator may run ahead of the wall clock"},
    [K_MAX_WAIT_MS] = {"max_wait_ms", T_INT, IDGEN_STR(IDGEN_MAX_WAIT_MS_DEFAULT), 0,
                       IDGEN_MAX_WAIT_MS_MAX, "N",
                       "how long a request may wait for the clock"},
    [K_CLOCK] = {"clock", T_CLOCK, "fast", 0, 0, "fast|precise", "clock mode"},
    [K_THREADS] = {"threads", T_INT, "0", 0, 256, "N", "event-loop threads (0: one per CPU)"},
    [K_MAX_CONNECTIONS] = {"max_connections", T_INT, "16384", 1, 1000000, "N",
                           "open client connections"},
    [K_MAX_REQUEST_BYTES] = {"max_request_bytes", T_INT, "65536", 1024, 64 << 20, "N",
                             "an HTTP request head or a RESP command"},
    [K_MAX_BATCH] = {"max_batch", T_INT, "", 1, 10000000, "N",
                     "the largest count of IDs in one request; default: what the layout "
                     "makes within max_borrow_ms + max_wait_ms, at most 100000"},
    [K_MAX_OUTPUT_BYTES] = {"max_output_bytes", T_INT, "16777216", 65536, INT64_C(1) << 32, "N",
                            "replies waiting for one client before it is closed"},
    [K_IDLE_TIMEOUT_MS] = {"idle_timeout_ms", T_INT, "60000", 0, INT64_C(1) << 40, "N",
                           "close a connection idle this long (0: never)"},
    [K_SLOW_TIMEOUT_MS] = {"slow_timeout_ms", T_INT, "10000", 100, INT64_C(1) << 40, "N",
                           "a request must arrive, and a reply move, within this"},
    [K_SHUTDOWN_TIMEOUT_MS] = {"shutdown_timeout_ms", T_INT, "5000", 0, 3600000, "N",
                               "how long a graceful stop waits for replies"},
    [K_MAX_AGENTS] = {"max_agents", T_INT, "64", 0, 4096, "N",
                      "agent names counted apart in metrics"},
    [K_PID_FILE] = {"pid_file", T_PATH, "", 0, 0, "PATH", "write the process ID here"},
    [K_LOG_FILE] = {"log_file", T_PATH, "", 0, 0, "PATH", "log here instead of stderr"},
};

const char *serve_key_name(int key) { return keys[key].name; }

/* "max_batch" -> "--max-batch" or "IDGEN_MAX_BATCH". */
static void flag_name(int k, char *buf, size_t n) {
  snprintf(buf, n, "--%s", keys[k].name);
  for (char *p = buf; *p; p++)
    if (*p == '_')
      *p = '-';
}
static void env_name(int k, char *buf, size_t n) {
  snprintf(buf, n, "IDGEN_%s", keys[k].name);
  for (char *p = buf; *p; p++)
    *p = (char)toupper((unsigned char)*p);
}

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  if (p == NULL) {
    fputs("idgen: serve: out of memory\n", stderr);
    exit(2);
  }
  return p;
}

static void set(serve_config_t *c, int k, const char *value, const char *source) {
  free(c->value[k]);
  free(c->source[k]);
  c->value[k] = xstrdup(value);
  c->source[k] = xstrdup(source);
}

__attribute__((format(printf, 2, 3))) static int fail(const char *where, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "idgen: serve: %s", where);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 2;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  size_t n = strlen(s);
  while (n > 0 && strchr(" \t\r\n", s[n - 1]) != NULL)
    s[--n] = '\0';
  return s;
}

static int find_key(const char *name) {
  for (int k = 0; k < SERVE_NKEYS; k++)
    if (strcmp(keys[k].name, name) == 0)
      return k;
  return -1;
}

static int load_file(serve_config_t *c, const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return fail("", "config file %s: %s", IDGEN_QUOTE(path, strlen(path), 0, 300),
                strerror(errno));
  char *line = NULL, where[512];
  size_t cap = 0;
  int lineno = 0, rc = 0;
  unsigned char seen[SERVE_NKEYS] = {0};
  ssize_t n;
  while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    /* The source of every value from here: shown in messages and --check-config. */
    snprintf(where, sizeof where, "%s:%d", IDGEN_QUOTE(path, strlen(path), 0, 300), lineno);
    if (memchr(line, '\0', (size_t)n) != NULL) { /* a line is read as a C string */
      while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
      rc = fail(where, ": a NUL byte in \"%s\"", QN(line, (size_t)n));
      break;
    }
    char *s = trim(line);
    if (*s == '\0' || *s == '#')
      continue;
    char *eq = strchr(s, '=');
    if (eq == NULL) {
      rc = fail(where, ": \"%s\" is not a key = value line", IDGEN_QUOTE(s, strlen(s), '"', 60));
      break;
    }
    *eq = '\0';
    char *key = trim(s), *val = trim(eq + 1);
    int k = find_key(key);
    if (k < 0)
      rc = fail(where, ": unknown key \"%s\" (see idgen serve --help)",
                IDGEN_QUOTE(key, strlen(key), '"', 60));
    else if (seen[k]++)
      rc = fail(where, ": key \"%s\" given twice", key);
    else
      set(c, k, val, where);
  }
  free(line);
  fclose(f);
  return rc;
}

static const char usage_head[] =
    "Usage: idgen serve [--config FILE] [--check-config] [OPTIONS]\n"
    "\n"
    "Hand out IDs over HTTP/1.1 (GET /id, /ulid, /uuid7, /decode/ID, /info,\n"
    "/health, /metrics) and RESP (ID, ULID, UUID7, DECODE, INFO, PING...).\n"
    "Every option is also an IDGEN_* environment variable (--max-batch is\n"
    "IDGEN_MAX_BATCH) and a config-file key (max_batch = 1000); flags win over\n"
    "the environment, which wins over the file.  The leased node field's value\n"
    "comes from the registry (by default a directory that does not depend on the\n"
    "working directory, so daemons on one host each get their own tuple); the\n"
    "other node fields come from --node.  See docs/SERVE.md.\n"
    "\n"
    "      --config FILE      read key = value settings from FILE (or IDGEN_CONFIG)\n"
    "      --check-config     validate, print the effective settings, and exit\n"
    "  -h, --help             show this help\n";

static void usage(void) {
  fputs(usage_head, stdout);
  for (int k = 0; k < SERVE_NKEYS; k++) {
    char flag[64], left[96];
    flag_name(k, flag, sizeof flag);
    snprintf(left, sizeof left, "%s %s", flag, keys[k].arg);
    printf("      %-24s %s", left, keys[k].help);
    if (keys[k].defval[0] != '\0' && strcmp(keys[k].name, "threads") != 0)
      printf(" (default %s)", keys[k].defval);
    putchar('\n');
  }
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

static int parse_int(const char *s, int64_t *v) {
  char *end;
  if (*s == '\0' || !(isdigit((unsigned char)*s) || *s == '-'))
    return -1;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0')
    return -1;
  *v = x;
  return 0;
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
  if (parse_int(colon + 1, &port) < 0 || port < 0 || port > 65535) {
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

/* "datacenter=1,worker=7" into c->gen.node[] by the layout's field indexes. */
static int parse_nodes(serve_config_t *c, const char *s, char *err, size_t errlen) {
  const idgen_layout_t *l = &c->layout;
  char buf[512];
  if (strlen(s) >= sizeof buf) {
    snprintf(err, errlen, "too long");
    return -1;
  }
  strcpy(buf, s);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
       item = strtok_r(NULL, ",", &save)) {
    item = trim(item);
    char *eq = strchr(item, '=');
    if (eq == NULL) {
      snprintf(err, errlen, "\"%s\" is not NAME=VALUE", Q(item));
      return -1;
    }
    *eq = '\0';
    if (idgen_layout_node_set(l, item, eq + 1, c->gen.node, &c->node_given, err, errlen) < 0)
      return -1;
  }
  return 0;
}

static int validate(serve_config_t *c, int k) {
  const struct keydef *d = &keys[k];
  const char *v = c->value[k];
  char err[300] = "", where[300];
  int64_t x = 0;
  snprintf(where, sizeof where, "%s = \"%s\" (from %s): ", d->name, Q(v), c->source[k]);
  switch (d->type) {
  case T_ADDR:
    if (parse_addr(k == K_HTTP ? &c->http : &c->resp, v, err, sizeof err) < 0)
      return fail(where, "%s", err);
    return 0;
  case T_LAYOUT:
    if (idgen_layout_parse(&c->layout, v, err, sizeof err) < 0)
      return fail(where, "%s", err);
    return 0;
  case T_NODE:
    if (parse_nodes(c, v, err, sizeof err) < 0)
      return fail(where, "%s", err);
    return 0;
  case T_REGISTRY:
    if (v[0] == '\0' && strcmp(c->source[k], "default") == 0) {
      /* The default does not depend on the working directory (SPEC 8). */
      char def[1100];
      if (idgen_registry_default_uri(def, sizeof def, err, sizeof err) < 0)
        return fail(where, "%s", err);
      set(c, k, def, "default");
      v = c->value[k];
    }
    if (idgen_registry_check(v, err, sizeof err) < 0)
      return fail(where, "%s", err);
    c->registry = v;
    return 0;
  case T_FIELD: {
    char why[300];
    if (v[0] && idgen_lease_field(&c->layout, v, why, sizeof why) < 0)
      return fail(where, "%s", why);
    c->lease_field = v[0] ? v : NULL;
    return 0;
  }
  case T_CLOCK:
    if (strcmp(v, "fast") == 0)
      c->gen.clock_mode = IDGEN_CLOCK_FAST;
    else if (strcmp(v, "precise") == 0)
      c->gen.clock_mode = IDGEN_CLOCK_PRECISE;
    else
      return fail(where, "expected fast or precise");
    return 0;
  case T_PATH:
    if (k == K_PID_FILE)
      c->pid_file = v;
    else
      c->log_file = v;
    return 0;
  case T_INT:
    if (k == K_MAX_BATCH && v[0] == '\0' && strcmp(c->source[k], "default") == 0) {
      /* What one request can always get while the generator is not ahead:
       * a tick's sequence for each tick within borrow + wait, and the
       * current one (the daemon never sleeps for a batch: G3 per call). */
      const idgen_layout_t *l = &c->layout;
      uint64_t per_tick = UINT64_C(1) << l->fields[l->sequence_index].bits;
      uint64_t ticks = 1 + (uint64_t)(c->gen.max_borrow_ms + c->gen.max_wait_ms) / (uint64_t)l->unit_ms;
      uint64_t fit = per_tick > 100000 / ticks ? 100000 : per_tick * ticks;
      char buf[32];
      snprintf(buf, sizeof buf, "%" PRIu64, fit > 100000 ? 100000 : fit);
      set(c, k, buf, "default: the layout within borrow + wait");
      v = c->value[k];
    }
    if (parse_int(v, &x) < 0 || x < d->min || x > d->max)
      return fail(where, "not a whole number from %" PRId64 " to %" PRId64, d->min, d->max);
    break;
  }
  switch (k) {
  case K_LEASE_TTL_MS: c->lease_ttl_ms = x; break;
  case K_MAX_START_WAIT_MS: c->max_start_wait_ms = x; break;
  case K_MAX_BORROW_MS: c->gen.max_borrow_ms = x; break;
  case K_MAX_WAIT_MS: c->gen.max_wait_ms = x; break;
  case K_THREADS: {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = x > 0 ? (int)x : (n > 0 ? (int)n : 1);
    if (x == 0 && strcmp(c->source[k], "default") == 0) {
      char buf[16];
      snprintf(buf, sizeof buf, "%d", c->threads);
      set(c, k, buf, "default: one per CPU");
    }
    break;
  }
  case K_MAX_CONNECTIONS: c->max_connections = x; break;
  case K_MAX_REQUEST_BYTES: c->max_request_bytes = x; break;
  case K_MAX_BATCH: c->max_batch = x; break;
  case K_MAX_OUTPUT_BYTES: c->max_output_bytes = x; break;
  case K_IDLE_TIMEOUT_MS: c->idle_timeout_ms = x; break;
  case K_SLOW_TIMEOUT_MS: c->slow_timeout_ms = x; break;
  case K_SHUTDOWN_TIMEOUT_MS: c->shutdown_timeout_ms = x; break;
  case K_MAX_AGENTS: c->max_agents = x; break;
  default: break;
  }
  return 0;
}

int serve_config_load(serve_config_t *c, int argc, char **argv) {
  memset(c, 0, sizeof *c);
  idgen_snowflake_settings_init(&c->gen);
  for (int k = 0; k < SERVE_NKEYS; k++)
    set(c, k, keys[k].defval, "default");

  /* Options: the keys' flags, then our own. */
  enum { OPT_CONFIG = 1000, OPT_CHECK, OPT_KEY0 };
  struct option opts[SERVE_NKEYS + 4];
  char names[SERVE_NKEYS][48];
  for (int k = 0; k < SERVE_NKEYS; k++) {
    flag_name(k, names[k], sizeof names[k]);
    opts[k] = (struct option){names[k] + 2, required_argument, 0, OPT_KEY0 + k};
  }
  opts[SERVE_NKEYS] = (struct option){"config", required_argument, 0, OPT_CONFIG};
  opts[SERVE_NKEYS + 1] = (struct option){"check-config", no_argument, 0, OPT_CHECK};
  opts[SERVE_NKEYS + 2] = (struct option){"help", no_argument, 0, 'h'};
  opts[SERVE_NKEYS + 3] = (struct option){0, 0, 0, 0};

  /* First pass: remember the flags' values (applied last) and find --config. */
  const char *config_path = getenv("IDGEN_CONFIG");
  char *flagval[SERVE_NKEYS] = {0};
  int opt, rc = 0;
  opterr = 0;
  optind = 1;
  while (rc == 0 && (opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    if (opt == 'h') {
      usage();
      rc = 1;
    } else if (opt == OPT_CONFIG) {
      config_path = optarg;
    } else if (opt == OPT_CHECK) {
      c->check_only = 1;
    } else if (opt >= OPT_KEY0 && opt < OPT_KEY0 + SERVE_NKEYS) {
      int k = opt - OPT_KEY0;
      if (k == K_NODE && flagval[k] != NULL) { /* repeatable: join with commas */
        size_t n = strlen(flagval[k]) + strlen(optarg) + 2;
        char *j = malloc(n);
        if (j == NULL)
          return fail("", "out of memory");
        snprintf(j, n, "%s,%s", flagval[k], optarg);
        free(flagval[k]);
        flagval[k] = j;
      } else {
        free(flagval[k]);
        flagval[k] = xstrdup(optarg);
      }
    } else if (opt == ':') {
      rc = fail("", "option %s needs a value",
                IDGEN_QUOTE(argv[optind - 1], strlen(argv[optind - 1]), 0, 100));
    } else {
      rc = fail("", "unknown option %s (see idgen serve --help)",
                IDGEN_QUOTE(argv[optind - 1], strlen(argv[optind - 1]), 0, 100));
    }
  }
  if (rc == 0 && optind < argc)
    rc = fail("", "unexpected argument \"%s\" (see idgen serve --help)", Q(argv[optind]));
  if (rc == 0 && config_path != NULL && config_path[0] != '\0')
    rc = load_file(c, config_path);
  for (int k = 0; rc == 0 && k < SERVE_NKEYS; k++) {
    char env[64];
    env_name(k, env, sizeof env);
    const char *e = getenv(env);
    if (e != NULL)
      set(c, k, e, env);
  }
  for (int k = 0; k < SERVE_NKEYS; k++) {
    if (rc == 0 && flagval[k] != NULL) {
      char src[64];
      snprintf(src, sizeof src, "flag %.48s", names[k]);
      set(c, k, flagval[k], src);
    }
    free(flagval[k]);
  }
  for (int k = 0; rc == 0 && k < SERVE_NKEYS; k++)
    rc = validate(c, k);
  if (rc == 0 && !c->http.enabled && !c->resp.enabled)
    rc = fail("", "http and resp are both off: nothing to serve");
  if (rc == 0 && c->http.enabled && c->resp.enabled && c->http.salen == c->resp.salen &&
      memcmp(&c->http.sa, &c->resp.sa, c->http.salen) == 0 &&
      strcmp(strrchr(c->http.text, ':'), ":0") != 0) /* port 0: two free ports */
    rc = fail("", "http and resp are both %s: give each its own port", c->http.text);
  /* A leased field's value comes from the registry, not from --node. */
  if (rc == 0 && strcmp(c->registry, "static") != 0) {
    const idgen_layout_t *l = &c->layout;
    char why[300];
    int f = idgen_lease_field(l, c->lease_field, why, sizeof why);
    if (f < 0)
      rc = fail("", "%s", why);
    else if (c->node_given >> f & 1)
      rc = fail("", "node = \"%s\" (from %s) sets %s, which the registry %s assigns: leave it "
                    "out, or use registry = static to set it by hand",
                Q(c->value[K_NODE]), c->source[K_NODE], l->fields[f].name,
                IDGEN_QUOTE(c->registry, strlen(c->registry), 0, 100));
  }
  /* One reply of max_batch IDs must fit in max_output_bytes, or a client
   * asking for a full batch would be cut off: at most 43 bytes an ID (a RESP
   * bulk UUID), plus the 64 KiB of replies that may already wait. */
  int64_t need = c->max_batch * 43 + 65536 + 4096;
  if (rc == 0 && c->max_output_bytes < need)
    rc = fail("", "max_output_bytes = %" PRId64 " (from %s) is too small for one reply of "
                  "max_batch = %" PRId64 " IDs (from %s): it needs %" PRId64
                  "; raise max_output_bytes or lower max_batch",
              c->max_output_bytes, c->source[K_MAX_OUTPUT_BYTES], c->max_batch,
              c->source[K_MAX_BATCH], need);
  return rc;
}

void serve_config_print(const serve_config_t *c, FILE *out) {
  fputs("# idgen serve: effective settings (key = value  # source)\n", out);
  for (int k = 0; k < SERVE_NKEYS; k++) {
    int n = fprintf(out, "%s = %s", keys[k].name, c->value[k]);
    fprintf(out, "%*s # %s\n", n < 40 ? 40 - n : 1, "", c->source[k]);
  }
}

void serve_config_free(serve_config_t *c) {
  for (int k = 0; k < SERVE_NKEYS; k++) {
    free(c->value[k]);
    free(c->source[k]);
    c->value[k] = c->source[k] = NULL;
  }
}
