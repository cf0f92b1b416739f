/*
 * settings.c -- the settings table of `idgen snowflake` and `idgen serve`,
 * and their loader (settings.h).
 */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BOTH (SETTINGS_SNOWFLAKE | SETTINGS_SERVE)
#define SERVE SETTINGS_SERVE
#define SEQ_BOTH (SETTINGS_SEQ | SETTINGS_SERVE)
#define INT(lo, hi) (lo), (hi)
#define NONE 0, 0

/* cache_on_empty: the library's enum; audit_mode: settings.h's. */
static const settings_word_t on_empty_words[] = {
    {"direct", IDGEN_CACHE_DIRECT}, {"fail", IDGEN_CACHE_FAIL}, {NULL, 0}};
static const settings_word_t public_form_words[] = {
    {"auto", PUBLIC_AUTO}, {"int", PUBLIC_INT}, {"text", PUBLIC_TEXT}, {NULL, 0}};
static const settings_word_t audit_mode_words[] = {
    {"count", AUDIT_COUNT}, {"require", AUDIT_REQUIRE}, {NULL, 0}};

const settings_def_t settings_defs[SETTINGS_NKEYS] = {
    [SK_HTTP] = {"http", ST_ADDR, SERVE, 0, "127.0.0.1:8080", NULL, NULL, NONE, "ADDR:PORT",
                 "the HTTP listener, or `off`; port 0 picks a free port (see the `listen` "
                 "log line)"},
    [SK_RESP] = {"resp", ST_ADDR, SERVE, 0, "127.0.0.1:6380", NULL, NULL, NONE, "ADDR:PORT",
                 "the RESP listener, or `off`; port 0 as for `http`"},
    [SK_THRIFT] = {"thrift", ST_ADDR, SERVE, 0, "off", NULL, NULL, NONE, "ADDR:PORT",
                   "Twitter's Snowflake Thrift service (framed, binary; docs/snowflake.thrift), "
                   "or `off`; its conventional port is 7609"},
    [SK_LAYOUT] = {"layout", ST_LAYOUT, BOTH, 'l', "twitter", NULL, NULL, NONE, "L",
                   "a preset name or a layout spec (see `idgen layouts`)"},
    [SK_NODE] = {"node", ST_NODE, BOTH, 0, "", NULL, "all 0", NONE, "NAME=V",
                 "the value of a node field the registry does not assign; repeat the flag "
                 "for each field, or give them comma-separated: `datacenter=1,rack=7`; with "
                 "registry `static`, `NAME=@ip` takes the low bits of the address of the "
                 "default route's interface (Sonyflake's machine ID), `NAME=@mac` of its MAC "
                 "address; never a bridge, a veth or an address many hosts share such as "
                 "docker0's 172.17.0.1 (refused, naming what was found); unchecked: two hosts "
                 "may share the low bits"},
    [SK_REGISTRY] = {"registry", ST_REGISTRY, BOTH | SETTINGS_SEQ, 0, "", "static",
                     "`file:/var/lib/idgen`, the host's: shared by every user's processes "
                     "that take the default, refused (with what to do) to a user who may not "
                     "write it",
                     NONE, "URI",
                     "where the leased node field's value comes from: `file:DIR` (processes "
                     "on one host), `postgres://...` (machines sharing a database), "
                     "`etcd://HOST:PORT[,HOST:PORT...]` (machines sharing an etcd cluster), "
                     "`idgen://[AGENT:TOKEN@]HOST:PORT` (leased from a daemon run with "
                     "`--leases`; `idgens://` for HTTPS), or "
                     "`static` (the `node` values, unchecked: two processes given the same "
                     "ones make duplicate IDs)"},
    [SK_SPACE] = {"space", ST_SPACE, BOTH | SETTINGS_SEQ, 0, "", NULL,
                  "`default`, or the registry URI's "
                  "`?space=NAME`",
                  NONE, "NAME",
                  "the registry's ID space: within one, a layout whose IDs could equal those of "
                  "a layout in use is refused, and a new layout starts above the IDs of the "
                  "one it replaces; services whose IDs never share a column may take a space "
                  "each (`[a-z][a-z0-9_-]*`)"},
    [SK_LEASE_FIELD] = {"lease_field", ST_FIELD, BOTH, 0, "", NULL,
                        "`worker`, or the layout's only node field", NONE, "NAME",
                        "the node field the registry assigns"},
    [SK_LEASE_TTL_MS] = {"lease_ttl_ms", ST_INT, BOTH, 0, IDGEN_STR(IDGEN_LEASE_TTL_DEFAULT_MS),
                         NULL, NULL, INT(IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS), "N",
                         "the lease's TTL; renewed at a third of it"},
    [SK_MAX_START_WAIT_MS] = {"max_start_wait_ms", ST_INT, BOTH, 0,
                              IDGEN_STR(IDGEN_START_WAIT_MS_DEFAULT), NULL, NULL,
                              INT(0, IDGEN_START_WAIT_MS_MAX), "N",
                              "how long the start may wait for a leased tuple's mark to fall "
                              "behind the clock"},
    [SK_MAX_BORROW_MS] = {"max_borrow_ms", ST_INT, BOTH, 0, IDGEN_STR(IDGEN_MAX_BORROW_MS_DEFAULT),
                          NULL, NULL, INT(0, IDGEN_MAX_BORROW_MS_MAX), "N",
                          "how far the generator's clock may run ahead of the wall clock when "
                          "a tick's sequence runs out"},
    [SK_MAX_WAIT_MS] = {"max_wait_ms", ST_INT, BOTH, 0, IDGEN_STR(IDGEN_MAX_WAIT_MS_DEFAULT), NULL,
                        NULL, INT(0, IDGEN_MAX_WAIT_MS_MAX), "N",
                        "how long a call may wait for a clock that is behind (the rest of a "
                        "used-up tick of at most a second is waited out beside it; a longer "
                        "tick's, or a step back, counts); the daemon parks a request that "
                        "waits, so a wait holds no loop"},
    [SK_CLOCK] = {"clock", ST_CLOCK, BOTH, 0, "fast", NULL, NULL, NONE, "fast|precise|coarse",
                  "`fast` (a calibrated cycle counter, re-checked against the system clock), "
                  "`precise` (the system clock on every call) or `coarse` (the kernel's last "
                  "timer tick: cheapest where the cycle counter is slow to read, and behind the "
                  "wall clock by one or two ticks, typically 4 to 8 ms)"},
    [SK_RANDOM_SEQUENCE_START] = {"random_sequence_start", ST_BOOL, BOTH, 0, "false", NULL, NULL,
                                  NONE, "[=BOOL]",
                                  "start each tick's sequence at a random value (IDs spread "
                                  "over shards; fewer IDs in a tick's first call)"},
    [SK_CACHE] = {"cache", ST_BOOL, SERVE, 0, "false", NULL, NULL, NONE, "[=BOOL]",
                  "serve Snowflake IDs from a ring filled ahead by a thread of its own (Baidu's "
                  "CachedUidGenerator; docs/DESIGN.md §12): faster takes, IDs whose time lags "
                  "the request's by up to the ring's age"},
    [SK_CACHE_BOOST_POWER] = {"cache_boost_power", ST_INT, SERVE, 0,
                              IDGEN_STR(IDGEN_CACHE_BOOST_DEFAULT), NULL, NULL,
                              INT(0, IDGEN_CACHE_BOOST_MAX), "N",
                              "the ring holds a tick's IDs times 2^N"},
    [SK_CACHE_PADDING_PERCENT] = {"cache_padding_percent", ST_INT, SERVE, 0,
                                  IDGEN_STR(IDGEN_CACHE_PADDING_DEFAULT), NULL, NULL,
                                  INT(IDGEN_CACHE_PADDING_MIN, IDGEN_CACHE_PADDING_MAX), "N",
                                  "refill the ring when fewer than N% of it are ready"},
    [SK_CACHE_SCHEDULE_MS] = {"cache_schedule_ms", ST_INT, SERVE, 0, "0", NULL, NULL,
                              INT(0, IDGEN_CACHE_SCHEDULE_MS_MAX), "N",
                              "also refill the ring this often (0: only when it runs low)"},
    [SK_CACHE_ON_EMPTY] = {"cache_on_empty", ST_CHOICE, SERVE, 0, "direct", NULL, NULL, NONE,
                           "direct|fail",
                           "when the ring cannot serve a request: `direct` asks the generator "
                           "(the ring's IDs first), `fail` answers 503 / `-ERR`",
                           on_empty_words},
    [SK_MAX_CLOCK_SKEW_MS] = {"max_clock_skew_ms", ST_INT, SERVE, 0, "10000", NULL, NULL,
                              INT(0, 3600000), "N",
                              "refuse to start when this host's clock is further than this from "
                              "the registry's own (PostgreSQL's), as Twitter's server refused "
                              "past 10 s from its peers; 0: do not check"},
    [SK_THREADS] = {"threads", ST_INT, SERVE, 0, "0", NULL, NULL, INT(0, 256), "N",
                    "event-loop threads; 0 is one per online CPU"},
    [SK_BUSY_POLL_US] = {"busy_poll_us", ST_INT, SERVE, 0, "20", NULL, NULL, INT(0, 1000), "N",
                         "after a turn with work, a loop polls up to this long for more "
                         "before it waits (at most this much CPU per turn with work), only "
                         "while the host's other runnable threads leave over a third of a "
                         "CPU idle and polls keep finding work (0: never; docs/DESIGN.md §10)"},
    [SK_MAX_CONNECTIONS] = {"max_connections", ST_INT, SERVE, 0, "16384", NULL, NULL,
                            INT(1, 1000000), "N",
                            "open client connections, all listeners together; more are "
                            "answered with an error and closed"},
    [SK_MAX_REQUEST_BYTES] = {"max_request_bytes", ST_INT, SERVE, 0, "65536", NULL, NULL,
                              INT(1024, 64 << 20), "N",
                              "the largest HTTP request head, or RESP command"},
    [SK_MAX_HEADERS] = {"max_headers", ST_INT, SERVE, 0, "100", NULL, NULL, INT(1, 10000), "N",
                        "header lines in one HTTP request; more is a 431 naming this limit "
                        "(proxies, meshes and tracing add headers: 100 is Apache's, Envoy's "
                        "and Tomcat's limit, so what passes them passes here)"},
    [SK_MAX_BATCH] = {"max_batch", ST_INT, SERVE, 0, "", NULL,
                      "what the layout makes within `max_borrow_ms` + `max_wait_ms`, at most "
                      "100000 (twitter 100000, sonyflake 28416)",
                      INT(1, 10000000), "N",
                      "the largest count in one request (`count=N`, `ID N`); a larger one is "
                      "a 400 / `-ERR` naming it"},
    [SK_MAX_OUTPUT_BYTES] = {"max_output_bytes", ST_INT, SERVE, 0, "16777216", NULL, NULL,
                             INT(65536, INT64_C(1) << 32), "N",
                             "replies waiting for one client; past it the client is closed"},
    [SK_IDLE_TIMEOUT_MS] = {"idle_timeout_ms", ST_INT, SERVE, 0, "60000", NULL, NULL,
                            INT(0, INT64_C(1) << 40), "N",
                            "close a connection with nothing to do after this (0: never)"},
    [SK_SLOW_TIMEOUT_MS] = {"slow_timeout_ms", ST_INT, SERVE, 0, "10000", NULL, NULL,
                            INT(100, INT64_C(1) << 40), "N",
                            "a request must arrive whole, and a reply make progress, within "
                            "this"},
    [SK_SHUTDOWN_TIMEOUT_MS] = {"shutdown_timeout_ms", ST_INT, SERVE, 0, "5000", NULL, NULL,
                                INT(0, 3600000), "N",
                                "how long a graceful stop waits for replies to drain"},
    [SK_STALL_TIMEOUT_MS] = {"stall_timeout_ms", ST_INT, SERVE, 0, "10000", NULL, NULL,
                             INT(2000, 3600000), "N",
                             "`/health` is 503 (the daemon is not alive: a liveness probe "
                             "restarts it) once an event loop has not turned for this long; "
                             "an idle loop turns every 100 ms"},
    [SK_MAX_AGENTS] = {"max_agents", ST_INT, SERVE, 0, "64", NULL, NULL, INT(0, 4096), "N",
                       "agent names counted apart in metrics; the rest count under `other`"},
    [SK_PID_FILE] = {"pid_file", ST_PATH, SERVE, 0, "", NULL, "none", NONE, "PATH",
                     "write the process ID here once the listeners are bound; removed at "
                     "exit"},
    [SK_LOG_FILE] = {"log_file", ST_PATH, SERVE, 0, "", NULL, "stderr", NONE, "PATH",
                     "log here instead of stderr; SIGHUP reopens it"},
    [SK_AUDIT_LOG] = {"audit_log", ST_PATH, SERVE, 0, "", NULL, "none", NONE, "PATH",
                      "one line per Snowflake request answered (time, protocol, first ID, count, "
                      "agent), as Twitter's server audited each ID; written by a thread of its "
                      "own (no event loop waits for the file); SIGHUP reopens it"},
    [SK_AUDIT_MODE] = {"audit_mode", ST_CHOICE, SERVE, 0, "count", NULL, NULL, NONE,
                       "count|require",
                       "when the audit log cannot take lines (a full or failing disk, a write "
                       "waiting past `audit_timeout_ms`, the queue full): `count` hands out IDs "
                       "still and counts the lines lost (`idgen_audit_lost_records_total`, "
                       "`/ready` says `degraded`, the file a `lost=` line); `require` sends no "
                       "ID before its line is written, refuses a reply whose line is not "
                       "written within `audit_timeout_ms`, and refuses ID requests while the "
                       "file takes no lines (503 / `-ERR audit ...`)",
                       audit_mode_words},
    [SK_AUDIT_QUEUE_BYTES] = {"audit_queue_bytes", ST_INT, SERVE, 0, "16777216", NULL, NULL,
                              INT(65536, INT64_C(1) << 30), "N",
                              "audit lines waiting for the file, at most (about 200,000 lines): "
                              "past it, lines are lost (`count`) or ID requests refused "
                              "(`require`)"},
    [SK_AUDIT_TIMEOUT_MS] = {"audit_timeout_ms", ST_INT, SERVE, 0, "250", NULL, NULL,
                             INT(10, 60000), "N",
                             "how long an audit line may wait for the file: a write (open, "
                             "stat) that waits longer is a stall (`/ready` says `audit "
                             "stalled`, `idgen_audit_stalled` is 1); with `require`, a reply "
                             "whose line is not written within it is refused in its place "
                             "(503 / `-ERR audit ...`; its IDs are never sent, and a `void=` "
                             "line follows their record)"},
    [SK_AUTH_FILE] = {"auth_file", ST_PATH, SERVE, 0, "", NULL, "none: no token asked", NONE,
                      "PATH",
                      "tokens the clients must show, a line `AGENT TOKEN` each (16 to 256 "
                      "visible characters; `openssl rand -hex 32` makes one): RESP `AUTH`, "
                      "HTTP `Authorization: Bearer TOKEN`; the token's agent is the caller's. "
                      "Refused when others may read it; SIGHUP reads it again"},
    [SK_AUTH_METRICS] = {"auth_metrics", ST_BOOL, SERVE, 0, "true", NULL, NULL, NONE, "[=BOOL]",
                         "with `auth_file`, `/metrics` and the status page (`GET /`) need a "
                         "token too (`/health` and `/ready` never do)"},
    [SK_THRIFT_WITHOUT_AUTH] = {"thrift_without_auth", ST_BOOL, SERVE, 0, "false", NULL, NULL, NONE,
                                "[=BOOL]",
                                "with `auth_file`, serve Thrift on an address other than "
                                "loopback all the same (Twitter's IDL has no way to show a "
                                "token: anyone who reaches the port takes IDs)"},
    [SK_TLS_CERT] = {"tls_cert", ST_PATH, SERVE, 0, "", NULL, "none: plain text", NONE, "PATH",
                     "serve HTTP and RESP over TLS (1.2 and 1.3 only) with this certificate "
                     "chain (PEM, the server's first; with `tls_key`): `https://`, "
                     "`redis-cli --tls`, `rediss://`.  Thrift stays plain text.  SIGHUP reads "
                     "the files again; open connections go on"},
    [SK_TLS_KEY] = {"tls_key", ST_PATH, SERVE, 0, "", NULL, "none", NONE, "PATH",
                    "the private key of `tls_cert` (PEM).  Refused when others may read it"},
    [SK_TLS_CLIENT_CA] = {"tls_client_ca", ST_PATH, SERVE, 0, "", NULL,
                          "none: no client certificate asked", NONE, "PATH",
                          "with `tls_cert`, every client must show a certificate signed by "
                          "these CAs (PEM), mutual TLS; its subject's CN, an agent name, is the "
                          "caller's agent, and with `auth_file` it needs no token"},
    [SK_LEASES] = {"leases", ST_BOOL, SERVE, 0, "false", NULL, NULL, NONE, "[=BOOL]",
                   "lease node tuples to clients that cannot reach the registry (`POST "
                   "/lease`; clients take `--registry idgen://HOST:PORT`); needs a registry "
                   "other than `static`"},
    [SK_LEASE_MAX_PER_CLIENT] = {"lease_max_per_client", ST_INT, SERVE, 0, "64", NULL, NULL,
                                 INT(1, 1000000), "N",
                                 "with `leases`, live leases one client address may hold; more "
                                 "is a 429"},
    [SK_LEASE_MAX_PER_AGENT] = {"lease_max_per_agent", ST_INT, SERVE, 0, "1024", NULL, NULL,
                                INT(1, 1000000), "N",
                                "with `leases` and `auth_file`, live leases one agent may hold; "
                                "more is a 429"},
    [SK_LEASE_MAX_PER_SPACE] = {"lease_max_per_space", ST_INT, SERVE, 0, "4096", NULL, NULL,
                                INT(1, 1000000), "N",
                                "with `leases`, live leases lent in one ID space (at most 16 "
                                "spaces); more is a 429"},
    [SK_LEASE_MAX_SKEW_MS] = {"lease_max_skew_ms", ST_INT, SERVE, 0, "1000", NULL, NULL,
                              INT(0, 3600000), "N",
                              "with `leases`, refuse a client whose wall clock is further than "
                              "this from the daemon's (503 `clock`); added to the quarantine"},
    [SK_LEASE_QUARANTINE_MS] = {"lease_quarantine_ms", ST_INT, SERVE, 0, "0", NULL,
                                "0: the lease's TTL plus `lease_max_skew_ms`",
                                INT(0, INT64_C(86400000)), "N",
                                "with `leases`, how long the daemon keeps holding the tuple of "
                                "a client that stopped renewing, before it frees it"},
    [SK_LEASE_CORS_ORIGINS] = {"lease_cors_origins", ST_PATH, SERVE, 0, "", NULL,
                               "none: no CORS headers", NONE, "ORIGINS",
                               "with `leases`, the browser origins (`https://app.example`, "
                               "comma-separated, or `*`) whose pages may call the `/lease` "
                               "routes: they get `Access-Control-Allow-Origin` and preflight "
                               "answers"},
    [SK_SEQ_MIN_STEP] = {"seq_min_step", ST_INT, SEQ_BOTH, 0, "1000", NULL, NULL,
                         INT(1, INT64_C(1) << 39), "N",
                         "a sequence's smallest claim: numbers taken from the registry at once "
                         "(`idgen seq` claims at least its count in one)"},
    [SK_SEQ_MAX_STEP] = {"seq_max_step", ST_INT, SEQ_BOTH, 0, "100000000", NULL, NULL,
                         INT(1, INT64_C(1) << 39), "N",
                         "a sequence's largest claim, as the step grows with the rate"},
    [SK_SEQ_PREFETCH] = {"seq_prefetch", ST_SHARE, SEQ_BOTH, 0, "0.25", NULL, NULL, NONE, "F",
                         "claim the next range once this share of the one in hand is used "
                         "(strictly between 0 and 1)"},
    [SK_SEQ_SEGMENT_TARGET_MS] = {"seq_segment_target_ms", ST_INT, SEQ_BOTH, 0, "60000", NULL, NULL,
                                  INT(1, 86400000), "N",
                                  "how long a claimed range should last: the step doubles when "
                                  "one lasts less, halves when one lasts over twice this"},
    [SK_SEQ_TTL_MS] = {"seq_ttl_ms", ST_INT, SEQ_BOTH, 0, "10000", NULL, NULL,
                       INT(IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS), "N",
                       "a sequence holder's entry in the registry; renewed at a third of it, "
                       "and once expired its unissued numbers count as lost"},
    [SK_SEQ_TZ] = {"seq_tz", ST_TZ, SEQ_BOTH, 0, "", NULL, "UTC", NONE, "ZONE",
                   "the time zone of the `{date:...}` fields of sequence templates (an IANA "
                   "name such as `Europe/Paris`): a dated counter restarts at its midnight"},
    [SK_SEQ_FORMAT] = {"seq_format", ST_SEQ_LIST, SEQ_BOTH, 0, "", NULL, "none: plain numbers",
                       NONE, "NAME=TEMPLATE",
                       "sequence NAME hands out business numbers made from TEMPLATE (such as "
                       "`INV-{date:%Y}-{seq:06}`: literal text, `{seq:0N}` and `{date:...}` "
                       "fields); repeat for each sequence"},
    [SK_SEQ_STRICT] = {"seq_strict", ST_SEQ_LIST, SEQ_BOTH, 0, "", NULL, "none", NONE, "NAME",
                       "sequence NAME has one holder at a time, whose numbers start above "
                       "every number claimed before (no gaps between holders' numbers out of "
                       "order); repeat for each sequence"},
    [SK_SEQ_MAX_OPEN] = {"seq_max_open", ST_INT, SERVE, 0, "1024", NULL, NULL, INT(0, 65536), "N",
                         "sequences the daemon opens (on first use, `GET /seq/NAME`, `SEQ "
                         "NAME`); a request for one more is refused (0: no sequences)"},
    [SK_PUBLIC_KEY] = {"public_key", ST_PUBLIC_KEY, BOTH, 0, "", NULL, "none: IDs as they are",
                       NONE, "FILE",
                       "a key file (`idgen public --new-key FILE`): IDs are given in their "
                       "public form, a keyed permutation that hides their time, worker and "
                       "order (the daemon: with `format=public`).  Refused when group or "
                       "others may read it; the key itself is never shown"},
    [SK_PUBLIC_PREFIX] = {"public_prefix", ST_PREFIX, BOTH, 0, "", NULL, "none", NONE, "PREFIX",
                          "the type prefix of public IDs' text form (`user` gives "
                          "`user_0...`: a to z and `_`, at most 63 characters, starting and "
                          "ending with a letter, as TypeID's)"},
    [SK_PUBLIC_FORM] = {"public_form", ST_CHOICE, BOTH, 0, "auto", NULL,
                        "auto: text with a prefix, int without", NONE, "auto|int|text",
                        "the public IDs' form: `int`, an integer of the layout's bits (one key "
                        "version at a time), or `text`, `[PREFIX_]` and 17 characters that "
                        "carry the key version and check bits",
                        public_form_words},
    [SK_PUBLIC_KEY_VERSION] = {"public_key_version", ST_INT, BOTH, 0, "0", NULL,
                               "0: the newest in the file", INT(0, IDGEN_PUBLIC_VERSION_MAX), "N",
                               "the key version of the integer form, which carries none: pin "
                               "it, so that adding a version to the file (rotation) does not "
                               "change what integer public IDs map to; text forms carry their "
                               "version and always use the newest"},
};

/* "max_batch" -> "--max-batch" or "IDGEN_MAX_BATCH". */
static void flag_name(int k, char *buf, size_t n) {
  snprintf(buf, n, "--%s", settings_defs[k].name);
  for (char *p = buf; *p; p++)
    if (*p == '_')
      *p = '-';
}
static void env_name(int k, char *buf, size_t n) {
  snprintf(buf, n, "IDGEN_%s", settings_defs[k].name);
  for (char *p = buf; *p; p++)
    *p = (char)toupper((unsigned char)*p);
}

static int takes(unsigned cmd, int k) { return (settings_defs[k].cmds & cmd) != 0; }

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  if (p == NULL) {
    fputs("idgen: out of memory\n", stderr);
    exit(2);
  }
  return p;
}

static void replace(char **slot, const char *s) {
  char *p = xstrdup(s);
  free(*slot);
  *slot = p;
}

void settings_set(settings_t *s, int k, const char *value, const char *source) {
  replace(&s->value[k], value);
  replace(&s->source[k], source);
}

void settings_flag(settings_t *s, int k, const char *value, const char *flag) {
  int list = settings_defs[k].type == ST_SEQ_LIST;
  if (s->flag_value[k] != NULL && (settings_defs[k].type == ST_NODE || list)) {
    size_t n = strlen(s->flag_value[k]) + strlen(value) + 2;
    char *j = malloc(n);
    if (j == NULL) {
      fputs("idgen: out of memory\n", stderr);
      exit(2);
    }
    snprintf(j, n, "%s%c%s", s->flag_value[k], list ? '\n' : ',', value);
    free(s->flag_value[k]);
    s->flag_value[k] = j;
    if (strstr(s->flag_source[k], flag) == NULL) { /* "flags --node, --worker" */
      char src[160];
      snprintf(src, sizeof src, "flags %s, %s",
               s->flag_source[k] + (strncmp(s->flag_source[k], "flags ", 6) == 0 ? 6 : 5), flag);
      replace(&s->flag_source[k], src);
    }
    return;
  }
  char src[64];
  snprintf(src, sizeof src, "flag %.48s", flag);
  replace(&s->flag_value[k], value);
  replace(&s->flag_source[k], src);
}

/* A setting's value as messages and --check-config show it: a registry
 * URI through the library's one redaction (its password never shows). */
static const char *shown(const settings_t *s, int k, char *buf, size_t n) {
  if (settings_defs[k].type == ST_REGISTRY)
    return idgen_registry_uri_redact(s->value[k], buf, n);
  if (settings_defs[k].type == ST_PUBLIC_KEY) {
    /* A key given where its file is named (the library refuses it): not
     * repeated.  No '/' and 32 hex digits in a row, as the library tells. */
    size_t run = 0;
    for (const char *c = s->value[k]; strchr(s->value[k], '/') == NULL && *c != '\0'; c++)
      if ((run = isxdigit((unsigned char)*c) ? run + 1 : 0) >= 32)
        return "(not shown: it looks like a key)";
  }
  return s->value[k];
}

__attribute__((format(printf, 3, 0))) static void vmessage(const settings_t *s, int k,
                                                           const char *fmt, va_list ap) {
  fprintf(stderr, "idgen: %s: ", s->name);
  if (k >= 0 && s->value[k][0] == '\0' && strcmp(s->source[k], "default") == 0)
    fprintf(stderr, "%s (the default): ", settings_defs[k].name); /* computed, and refused */
  else if (k >= 0) {
    char buf[2200];
    const char *v = shown(s, k, buf, sizeof buf);
    fprintf(stderr, "%s = \"%s\" (from %s): ", settings_defs[k].name, SETTINGS_Q(v), s->source[k]);
  }
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int settings_fail(const settings_t *s, int k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(s, k, fmt, ap);
  va_end(ap);
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

static int find_key(unsigned cmd, const char *name) {
  for (int k = 0; k < SETTINGS_NKEYS; k++)
    if (takes(cmd, k) && strcmp(settings_defs[k].name, name) == 0)
      return k;
  return -1;
}

/* A message about the config file or the command line (no key yet). */
__attribute__((format(printf, 3, 4))) static int fail_at(const settings_t *s, const char *where,
                                                         const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "idgen: %s: %s", s->name, where);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return 2;
}

/* A repeatable key's next entry from the file (its source: the first line's). */
static void append_line(settings_t *s, int k, const char *val, const char *where) {
  (void)where;
  size_t n = strlen(s->value[k]) + strlen(val) + 2;
  char *j = malloc(n);
  if (j == NULL) {
    fputs("idgen: out of memory\n", stderr);
    exit(2);
  }
  snprintf(j, n, "%s\n%s", s->value[k], val);
  free(s->value[k]);
  s->value[k] = j;
}

static int load_file(settings_t *s, const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return fail_at(s, "", "config file %s: %s", IDGEN_QUOTE(path, strlen(path), 0, 300),
                   strerror(errno));
  char *line = NULL, where[512];
  size_t cap = 0;
  int lineno = 0, rc = 0;
  unsigned char seen[SETTINGS_NKEYS] = {0};
  ssize_t n;
  while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    /* The source of every value from here: shown in messages and --check-config. */
    snprintf(where, sizeof where, "%s:%d", IDGEN_QUOTE(path, strlen(path), 0, 300), lineno);
    if (memchr(line, '\0', (size_t)n) != NULL) { /* a line is read as a C string */
      while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        n--;
      rc = fail_at(s, where, ": a NUL byte in \"%s\"", IDGEN_QUOTE(line, (size_t)n, '"', 100));
      break;
    }
    char *t = trim(line);
    if (*t == '\0' || *t == '#')
      continue;
    char *eq = strchr(t, '=');
    if (eq == NULL) {
      rc = fail_at(s, where, ": \"%s\" is not a key = value line",
                   IDGEN_QUOTE(t, strlen(t), '"', 60));
      break;
    }
    *eq = '\0';
    char *key = trim(t), *val = trim(eq + 1);
    int k = find_key(s->cmd, key);
    if (k < 0)
      rc = fail_at(s, where, ": unknown key \"%s\" (see 'idgen %s --help')",
                   IDGEN_QUOTE(key, strlen(key), '"', 60), s->name);
    else if (seen[k]++ && settings_defs[k].type == ST_SEQ_LIST)
      append_line(s, k, val, where);
    else if (seen[k] > 1)
      rc = fail_at(s, where, ": key \"%s\" given twice", key);
    else
      settings_set(s, k, val, where);
  }
  free(line);
  fclose(f);
  return rc;
}

int settings_clock_mode(const char *v, idgen_clock_mode_t *mode) {
  return idgen_clock_mode_parse(v, mode, NULL, 0) < 0 ? -1 : 0;
}

const char *settings_clock_word(idgen_clock_mode_t mode) { return idgen_clock_mode_name(mode); }

int settings_parse_int(const char *s, int64_t *v) {
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

int settings_int(settings_t *s, int k, int64_t *v) {
  const settings_def_t *d = &settings_defs[k];
  if (settings_parse_int(s->value[k], v) < 0 || *v < d->min || *v > d->max)
    return settings_fail(s, k, "not a whole number from %" PRId64 " to %" PRId64, d->min, d->max);
  return 0;
}

/* The node list into s->gen.node[] by the library's one rule
 * (idgen_layout_nodes_parse), NAME=@ip and NAME=@mac from the host
 * (unchecked, see check_lease). */
static int check_nodes(settings_t *s, int k) {
  char err[1200]; /* @ip's refusal lists the routes and interfaces found */
  if (idgen_layout_nodes_parse(&s->layout, s->value[k], idgen_host_node_resolve, s->host_nodes,
                               s->gen.node, &s->node_given, err, sizeof err) < 0)
    return settings_fail(s, k, "%s", err);
  return 0;
}

/* `space`: the registry URI with ?space=NAME by the library's one rule
 * (idgen_registry_uri_with_space: not for static, not also in the URI, a
 * space name), then the URI checked. */
static int check_space(settings_t *s, int k) {
  const char *v = s->value[k], *uri = s->registry;
  char err[1100];
  if (v[0] == '\0' || uri == NULL)
    return 0;
  size_t n = strlen(uri) + IDGEN_SPACE_NAME_MAX + 8;
  free(s->registry_space);
  if ((s->registry_space = malloc(n)) == NULL)
    return settings_fail(s, k, "out of memory");
  if (idgen_registry_uri_with_space(uri, v, s->registry_space, n, err, sizeof err) < 0 ||
      idgen_registry_check(s->registry_space, err, sizeof err) < 0) {
    const char *m = strncmp(err, "registry: ", 10) == 0 ? err + 10 : err;
    return settings_fail(s, k, "%s", m);
  }
  s->registry = s->registry_space;
  return 0;
}

/* seq_format's NAME=TEMPLATE entries and seq_strict's NAMEs, one a line:
 * each name by the library's rule, each template by its parser in seq_tz,
 * no name twice. */
static int check_seq_list(settings_t *s, int k) {
  const char *v = s->value[k], *tz = s->value[SK_SEQ_TZ];
  char err[600], name[IDGEN_SEQ_NAME_MAX + 1];
  while (*v) {
    size_t len = strcspn(v, "\n");
    char *e = strndup(v, len);
    if (e == NULL)
      return settings_fail(s, k, "out of memory");
    char *eq = k == SK_SEQ_FORMAT ? strchr(e, '=') : NULL;
    int rc = 0;
    if (k == SK_SEQ_FORMAT && eq == NULL)
      rc = settings_fail(s, k, "\"%s\" is not NAME=TEMPLATE", SETTINGS_Q(e));
    if (eq != NULL)
      *eq = '\0';
    if (rc == 0 && idgen_seq_name_check(e, err, sizeof err) < 0)
      rc = settings_fail(s, k, "%s", err);
    snprintf(name, sizeof name, "%s", e);
    idgen_seq_format_t *f = NULL;
    if (rc == 0 && eq != NULL &&
        idgen_seq_format_parse(&f, eq + 1, tz && tz[0] ? tz : NULL, err, sizeof err) < 0)
      rc = settings_fail(s, k, "%s: %s", name, err);
    idgen_seq_format_free(f);
    free(e);
    if (rc != 0)
      return rc;
    /* the same name in an earlier entry */
    size_t nl = strlen(name);
    for (const char *p = s->value[k]; p < v; p += strcspn(p, "\n") + 1)
      if (strncmp(p, name, nl) == 0 && (p[nl] == '=' || p[nl] == '\n' || p[nl] == '\0'))
        return settings_fail(s, k, "sequence \"%s\" named twice", name);
    v += len + (v[len] == '\n');
  }
  return 0;
}

void settings_seq_for(const settings_t *s, const char *name, idgen_seq_settings_t *out, char *buf,
                      size_t n) {
  *out = s->seq;
  out->step = 0; /* the first claim's: min_step, whatever seq_min_step and seq_max_step say */
  out->format = NULL;
  out->strict = 0;
  size_t nl = strlen(name);
  for (int k = SK_SEQ_FORMAT; k <= SK_SEQ_STRICT; k++) {
    const char *p = s->value[k];
    for (; p != NULL && *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
      size_t len = strcspn(p, "\n");
      if (strncmp(p, name, nl) != 0)
        continue;
      if (k == SK_SEQ_STRICT && len == nl)
        out->strict = 1;
      if (k == SK_SEQ_FORMAT && p[nl] == '=' && len - nl - 1 < n) {
        snprintf(buf, n, "%.*s", (int)(len - nl - 1), p + nl + 1);
        out->format = buf;
      }
    }
  }
}

/* public_form, after the key and the prefix: auto resolved, and a prefix
 * refused with the integer form (which has no room for one). */
static int check_public_form(settings_t *s, int k) {
  int prefixed = s->public_prefix != NULL && s->public_prefix[0] != '\0';
  if (s->num[k] == PUBLIC_INT && prefixed)
    return settings_fail(
        s, k, "the integer form has no prefix: `public_form = text` with `public_prefix`");
  s->public_form =
      s->num[k] == PUBLIC_AUTO ? (prefixed ? PUBLIC_TEXT : PUBLIC_INT) : (int)s->num[k];
  return 0;
}

/* public_key_version: a version the key file holds. */
static int check_public_version(settings_t *s, int k, int64_t x) {
  s->public_version = (unsigned)x;
  if (x == 0 || s->public_keys == NULL)
    return 0;
  unsigned v[IDGEN_PUBLIC_VERSION_MAX];
  size_t n = idgen_public_keys_versions(s->public_keys, v, IDGEN_PUBLIC_VERSION_MAX);
  for (size_t i = 0; i < n; i++)
    if (v[i] == (unsigned)x)
      return 0;
  return settings_fail(s, k, "the key file holds no version %" PRId64, x);
}

static int check(settings_t *s, int k) {
  const settings_def_t *d = &settings_defs[k];
  const char *v = s->value[k];
  char err[1100] = "";
  int64_t x = 0;
  switch (d->type) {
  case ST_ADDR: /* the daemon's hook parses these */
  case ST_PATH:
    return 0;
  case ST_SHARE: {
    char *end;
    errno = 0;
    double f = strtod(v, &end);
    if (v[0] == '\0' || *end != '\0' || errno != 0 || !(f > 0.0 && f < 1.0))
      return settings_fail(s, k, "not a number strictly between 0 and 1 (such as 0.25)");
    s->seq.prefetch = f;
    return 0;
  }
  case ST_TZ: {
    idgen_seq_format_t *f = NULL;
    if (v[0] && idgen_seq_format_parse(&f, "{date:%Y%m%d}-{seq:06}", v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    idgen_seq_format_free(f);
    s->seq.tz = v[0] ? v : NULL;
    return 0;
  }
  case ST_SEQ_LIST:
    return check_seq_list(s, k);
  case ST_PUBLIC_KEY:
    idgen_public_keys_free(s->public_keys);
    s->public_keys = NULL;
    if (v[0] && idgen_public_keys_load(&s->public_keys, v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    return 0;
  case ST_PREFIX:
    if (idgen_public_prefix_check(v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    if (v[0] && s->public_keys == NULL)
      return settings_fail(s, k, "a prefix without `public_key`");
    s->public_prefix = v;
    return 0;
  case ST_LAYOUT:
    if (idgen_layout_parse(&s->layout, v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    return 0;
  case ST_NODE:
    return check_nodes(s, k);
  case ST_REGISTRY:
    if (v[0] == '\0' && strcmp(s->source[k], "default") == 0) {
      /* The default does not depend on the working directory. */
      char def[1100];
      if (idgen_registry_default_uri(def, sizeof def, err, sizeof err) < 0)
        return settings_fail(s, k, "%s", err);
      settings_set(s, k, def, "default");
      v = s->value[k];
    }
    if (idgen_registry_check(v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    s->registry = v;
    return 0;
  case ST_SPACE:
    return check_space(s, k);
  case ST_FIELD:
    if (v[0] && idgen_lease_field(&s->layout, v, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    s->lease_field = v[0] ? v : NULL;
    return 0;
  case ST_CLOCK:
    if (settings_clock_mode(v, &s->gen.clock_mode) < 0)
      return settings_fail(s, k, "expected " SETTINGS_CLOCK_WORDS);
    return 0;
  case ST_CHOICE: {
    for (const settings_word_t *w = d->words; w->word != NULL; w++)
      if (strcmp(v, w->word) == 0) {
        s->num[k] = w->value;
        return k == SK_PUBLIC_FORM ? check_public_form(s, k) : 0;
      }
    char words[128]; /* "a|b|c" as "a, b or c" */
    size_t o = 0;
    const char *last = strrchr(d->arg, '|');
    for (const char *p = d->arg; *p && o + 5 < sizeof words; p++)
      o += (size_t)(*p != '|'   ? snprintf(words + o, sizeof words - o, "%c", *p)
                    : p == last ? snprintf(words + o, sizeof words - o, " or ")
                                : snprintf(words + o, sizeof words - o, ", "));
    return settings_fail(s, k, "expected %s", words);
  }
  case ST_BOOL:
    if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "on") == 0)
      x = 1;
    else if (!(strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "off") == 0))
      return settings_fail(s, k, "expected true or false");
    if (k == SK_RANDOM_SEQUENCE_START)
      s->gen.random_sequence_start = (int)x;
    s->num[k] = x;
    return 0;
  case ST_INT:
    /* The lease TTL's bounds and message are the library's, as the
     * extension's idgen.lease_ttl_ms. */
    if (k == SK_LEASE_TTL_MS && settings_parse_int(v, &x) == 0 &&
        idgen_lease_ttl_check(x, err, sizeof err) < 0)
      return settings_fail(s, k, "%s", err);
    if (settings_int(s, k, &x) != 0)
      return 2;
    s->num[k] = x;
    switch (k) {
    case SK_LEASE_TTL_MS:
      s->lease_ttl_ms = x;
      break;
    case SK_MAX_START_WAIT_MS:
      s->max_start_wait_ms = x;
      break;
    case SK_MAX_BORROW_MS:
      s->gen.max_borrow_ms = x;
      break;
    case SK_MAX_WAIT_MS:
      s->gen.max_wait_ms = x;
      break;
    case SK_SEQ_MIN_STEP:
      s->seq.min_step = (uint64_t)x;
      break;
    case SK_SEQ_MAX_STEP:
      if ((uint64_t)x < s->seq.min_step)
        return settings_fail(s, k, "below seq_min_step (%" PRIu64 ")", s->seq.min_step);
      s->seq.max_step = (uint64_t)x;
      break;
    case SK_SEQ_SEGMENT_TARGET_MS:
      s->seq.segment_target_ms = x;
      break;
    case SK_SEQ_TTL_MS:
      s->seq.ttl_ms = x;
      break;
    case SK_PUBLIC_KEY_VERSION:
      return check_public_version(s, k, x);
    default:
      break;
    }
    return 0;
  }
  return 0;
}

/* The rules between the registry, the leased field and the node values:
 * the library's (idgen_lease_settings_verify), blaming the key it names. */
static int check_lease(settings_t *s) {
  static const int key_of[] = {[IDGEN_LEASE_SETTING_NONE] = SK_REGISTRY,
                               [IDGEN_LEASE_SETTING_REGISTRY] = SK_REGISTRY,
                               [IDGEN_LEASE_SETTING_LAYOUT] = SK_LAYOUT,
                               [IDGEN_LEASE_SETTING_NODE] = SK_NODE,
                               [IDGEN_LEASE_SETTING_FIELD] = SK_LEASE_FIELD};
  if (!takes(s->cmd, SK_REGISTRY) || !takes(s->cmd, SK_LAYOUT))
    return 0;
  char why[300];
  idgen_lease_settings_t ls = {.uri = s->registry,
                               .layout = &s->layout,
                               .field = s->lease_field,
                               .node_given = s->node_given,
                               .node_from_host = s->host_nodes[0] != '\0'};
  if (idgen_lease_settings_verify(&ls, why, sizeof why) < 0)
    return settings_fail(s, takes(s->cmd, key_of[ls.blame]) ? key_of[ls.blame] : -1, "%s", why);
  return 0;
}

int settings_load(settings_t *s, const settings_spec_t *spec, int argc, char **argv) {
  memset(s, 0, sizeof *s);
  s->cmd = spec->cmd;
  s->name = spec->name;
  unsigned cmd = spec->cmd;
  idgen_snowflake_settings_init(&s->gen);
  idgen_seq_settings_init(&s->seq);
  for (int k = 0; k < SETTINGS_NKEYS; k++)
    if (takes(cmd, k)) {
      const settings_def_t *d = &settings_defs[k];
      settings_set(
          s, k, cmd == SETTINGS_SNOWFLAKE && d->snowflake_defval ? d->snowflake_defval : d->defval,
          "default");
    }

  /* Options: the keys' flags, then --config and --check-config, the
   * command's own, and --help. */
  enum { OPT_CONFIG = 1000, OPT_CHECK, OPT_KEY0 };
  size_t nextra = 0;
  while (spec->extra != NULL && spec->extra[nextra].name != NULL)
    nextra++;
  struct option opts[SETTINGS_NKEYS + 3 + 16];
  char names[SETTINGS_NKEYS][48], shorts[64];
  size_t no = 0, ns = 0;
  if (nextra > 16)
    return fail_at(s, "", "too many options"); /* a programming error */
  shorts[ns++] = ':';
  shorts[ns++] = 'h';
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    if (!takes(cmd, k))
      continue;
    flag_name(k, names[k], sizeof names[k]);
    int arg = settings_defs[k].type == ST_BOOL ? optional_argument : required_argument;
    opts[no++] = (struct option){names[k] + 2, arg, 0, OPT_KEY0 + k};
    if (settings_defs[k].short_opt) {
      shorts[ns++] = settings_defs[k].short_opt;
      shorts[ns++] = ':';
    }
  }
  if (spec->env_and_file) {
    opts[no++] = (struct option){"config", required_argument, 0, OPT_CONFIG};
    opts[no++] = (struct option){"check-config", no_argument, 0, OPT_CHECK};
  }
  for (size_t i = 0; i < nextra; i++)
    opts[no++] = spec->extra[i];
  opts[no++] = (struct option){"help", no_argument, 0, 'h'};
  opts[no] = (struct option){0, 0, 0, 0};
  if (spec->extra_short != NULL)
    ns += (size_t)snprintf(shorts + ns, sizeof shorts - ns, "%s", spec->extra_short);
  shorts[ns] = '\0';

  /* First pass: remember the flags' values (applied last) and find --config. */
  const char *config_path = spec->env_and_file ? getenv("IDGEN_CONFIG") : NULL;
  int opt, rc = 0;
  opterr = 0;
  optind = 1;
  while (rc == 0 && (opt = getopt_long(argc, argv, shorts, opts, NULL)) != -1) {
    int k = -1;
    for (int j = 0; j < SETTINGS_NKEYS && opt < 256; j++)
      if (takes(cmd, j) && settings_defs[j].short_opt == opt)
        k = j;
    if (opt >= OPT_KEY0 && opt < OPT_KEY0 + SETTINGS_NKEYS)
      k = opt - OPT_KEY0;
    if (k >= 0) {
      flag_name(k, names[k], sizeof names[k]);
      settings_flag(s, k, optarg != NULL ? optarg : "true", names[k]);
    } else if (opt == 'h') {
      if (spec->usage != NULL)
        spec->usage(spec->ctx);
      rc = 1;
    } else if (opt == OPT_CONFIG) {
      config_path = optarg;
    } else if (opt == OPT_CHECK) {
      s->check_only = 1;
    } else if (opt == ':' || opt == '?') {
      /* A long option is named as typed; a short one (also inside a bundle
       * like -ln, where the argv word is the whole bundle) by optopt. */
      const char *word = argv[optind - 1];
      char shortopt[3] = {'-', (char)optopt, '\0'};
      const char *name = strncmp(word, "--", 2) == 0 || optopt == 0 ? word : shortopt;
      rc = fail_at(s, "",
                   opt == ':' ? "option %s needs a value (see 'idgen %s --help')"
                              : "unknown option %s (see 'idgen %s --help')",
                   IDGEN_QUOTE(name, strlen(name), 0, 100), spec->name);
    } else {
      rc = spec->on_option(s, spec->ctx, opt, optarg);
    }
  }
  if (rc == 0 && optind < argc)
    rc = fail_at(s, "", "unexpected argument \"%s\" (see 'idgen %s --help')",
                 SETTINGS_Q(argv[optind]), spec->name);
  if (rc == 0 && config_path != NULL && config_path[0] != '\0')
    rc = load_file(s, config_path);
  for (int k = 0; rc == 0 && spec->env_and_file && k < SETTINGS_NKEYS; k++) {
    char env[64];
    env_name(k, env, sizeof env);
    const char *e = takes(cmd, k) ? getenv(env) : NULL;
    if (e != NULL)
      settings_set(s, k, e, env);
  }
  for (int k = 0; rc == 0 && k < SETTINGS_NKEYS; k++)
    if (s->flag_value[k] != NULL)
      settings_set(s, k, s->flag_value[k], s->flag_source[k]);
  for (int k = 0; rc == 0 && k < SETTINGS_NKEYS; k++) {
    if (!takes(cmd, k))
      continue;
    int h = spec->check != NULL ? spec->check(s, spec->ctx, k) : 0;
    rc = h == 0 ? check(s, k) : h == 1 ? 0 : h;
  }
  if (rc == 0)
    rc = check_lease(s);
  return rc;
}

void settings_free(settings_t *s) {
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    free(s->value[k]);
    free(s->source[k]);
    free(s->flag_value[k]);
    free(s->flag_source[k]);
    s->value[k] = s->source[k] = s->flag_value[k] = s->flag_source[k] = NULL;
  }
  free(s->registry_space);
  s->registry_space = NULL;
  idgen_public_keys_free(s->public_keys);
  s->public_keys = NULL;
}

/* Text with its `marks` dropped (help) or kept (Markdown), wrapped at
 * column 79 with `indent` spaces before each line after the first. */
static void put_wrapped(FILE *out, const char *text, int col, int indent) {
  char word[256];
  const char *p = text;
  while (*p) {
    while (*p == ' ')
      p++;
    size_t n = 0;
    while (p[n] && p[n] != ' ')
      n++;
    size_t w = 0;
    for (size_t i = 0; i < n && w + 1 < sizeof word; i++)
      if (p[i] != '`')
        word[w++] = p[i];
    word[w] = '\0';
    if (w == 0) {
      p += n;
      continue;
    }
    if (col > indent && col + 1 + (int)w > 79) {
      fprintf(out, "\n%*s", indent, "");
      col = indent;
    } else if (col > indent) {
      fputc(' ', out);
      col++;
    }
    fputs(word, out);
    col += (int)w;
    p += n;
  }
  fputc('\n', out);
}

void settings_usage(unsigned cmd, FILE *out) {
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    const settings_def_t *d = &settings_defs[k];
    if (!takes(cmd, k))
      continue;
    char flag[64], left[128], text[1024];
    flag_name(k, flag, sizeof flag);
    if (d->short_opt)
      snprintf(left, sizeof left, "  -%c, %s %s", d->short_opt, flag, d->arg);
    else
      snprintf(left, sizeof left, "      %s%s%s", flag, d->type == ST_BOOL ? "" : " ", d->arg);
    const char *def =
        cmd == SETTINGS_SNOWFLAKE && d->snowflake_defval ? d->snowflake_defval : d->defval;
    size_t n = (size_t)snprintf(text, sizeof text, "%s", d->help);
    if (d->type == ST_INT && n < sizeof text)
      n += (size_t)snprintf(text + n, sizeof text - n, " (%" PRId64 " to %" PRId64, d->min, d->max);
    else if (n < sizeof text)
      n += (size_t)snprintf(text + n, sizeof text - n, " (");
    if (n < sizeof text) {
      if (cmd == SETTINGS_SNOWFLAKE && d->snowflake_defval)
        snprintf(text + n, sizeof text - n, "%sdefault %s)", d->type == ST_INT ? "; " : "",
                 d->snowflake_defval);
      else if (d->default_doc != NULL)
        snprintf(text + n, sizeof text - n, "%sdefault: %s)", d->type == ST_INT ? "; " : "",
                 d->default_doc);
      else
        snprintf(text + n, sizeof text - n, "%sdefault %s)", d->type == ST_INT ? "; " : "", def);
    }
    int col = fprintf(out, "%s", left);
    if (col > 28) {
      fputc('\n', out);
      col = 0;
    }
    fprintf(out, "%*s", 29 - col, "");
    put_wrapped(out, text, 29, 29);
  }
}

void settings_print(const settings_t *s, FILE *out) {
  fprintf(out, "# idgen %s: effective settings (key = value  # source)\n", s->name);
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    if (s->value[k] == NULL)
      continue;
    char buf[2200];
    const char *v = shown(s, k, buf, sizeof buf);
    do { /* a repeatable key: a line per entry */
      size_t len = strcspn(v, "\n");
      int n = fprintf(out, "%s = %.*s", settings_defs[k].name, (int)len, v);
      fprintf(out, "%*s # %s\n", n < 40 ? 40 - n : 1, "", s->source[k]);
      v += len + (v[len] == '\n');
    } while (*v);
  }
}

/* A cell of the Markdown table: `|` escaped. */
static void md_cell(FILE *out, const char *text) {
  fputs("| ", out);
  for (const char *p = text; *p; p++) {
    if (*p == '|')
      fputc('\\', out);
    fputc(*p, out);
  }
  fputc(' ', out);
}

void settings_markdown(unsigned cmd, FILE *out) {
  fputs("| flag | environment | file key | default | range | meaning |\n"
        "|---|---|---|---|---|---|\n",
        out);
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    const settings_def_t *d = &settings_defs[k];
    if (!takes(cmd, k))
      continue;
    char flag[64], env[64], cell[1024];
    flag_name(k, flag, sizeof flag);
    env_name(k, env, sizeof env);
    snprintf(cell, sizeof cell, "`%s%s%s`", flag, d->type == ST_BOOL ? "" : " ", d->arg);
    md_cell(out, cell);
    snprintf(cell, sizeof cell, "`%s`", env);
    md_cell(out, cell);
    snprintf(cell, sizeof cell, "`%s`", d->name);
    md_cell(out, cell);
    if (d->snowflake_defval != NULL && (cmd & SETTINGS_SNOWFLAKE) == 0) {
      snprintf(cell, sizeof cell, "%s (`idgen snowflake`: `%s`)", d->default_doc,
               d->snowflake_defval);
      md_cell(out, cell);
    } else if (d->default_doc != NULL)
      md_cell(out, d->default_doc);
    else {
      snprintf(cell, sizeof cell, "`%s`", d->defval);
      md_cell(out, cell);
    }
    if (d->type == ST_INT)
      snprintf(cell, sizeof cell, "%" PRId64 " to %" PRId64, d->min, d->max);
    else
      snprintf(cell, sizeof cell, "%s", "");
    md_cell(out, cell);
    md_cell(out, d->help);
    fputs("|\n", out);
  }
}

/* Text for roff: `marks` in bold, with hyphens in them as \- (so that a flag
 * can be copied), a backslash as \e, and UTF-8 as \[uXXXX] (no preconv
 * needed); a line never starts with a control character. */
static void man_text(FILE *out, const char *text) {
  int mark = 0;
  if (*text == '.' || *text == '\'')
    fputs("\\&", out);
  for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
    if (*p == '`') {
      fputs(mark ? "\\fR" : "\\fB", out);
      mark = !mark;
    } else if (*p == '\\')
      fputs("\\e", out);
    else if (*p == '-' && mark)
      fputs("\\-", out);
    else if (*p >= 0xC0 && (p[1] & 0xC0) == 0x80) {
      unsigned cp, n = *p >= 0xF0 ? 3 : *p >= 0xE0 ? 2 : 1;
      cp = *p & (0x3F >> n);
      for (unsigned i = 1; i <= n && (p[i] & 0xC0) == 0x80; i++)
        cp = cp << 6 | (p[i] & 0x3F);
      fprintf(out, "\\[u%04X]", cp);
      while ((p[1] & 0xC0) == 0x80)
        p++;
    } else
      fputc(*p, out);
  }
  if (mark)
    fputs("\\fR", out);
}

/* A flag or its argument for roff: hyphens as \-. */
static void man_flag(FILE *out, const char *s) {
  for (; *s; s++)
    if (*s == '-')
      fputs("\\-", out);
    else if (*s == '\\')
      fputs("\\e", out);
    else
      fputc(*s, out);
}

void settings_man(unsigned cmd, FILE *out) {
  for (int k = 0; k < SETTINGS_NKEYS; k++) {
    const settings_def_t *d = &settings_defs[k];
    if (!takes(cmd, k))
      continue;
    char flag[64], env[64];
    flag_name(k, flag, sizeof flag);
    env_name(k, env, sizeof env);
    fputs(".TP\n", out);
    if (d->short_opt)
      fprintf(out, "\\fB\\-%c\\fR, ", d->short_opt);
    fputs("\\fB", out);
    man_flag(out, flag);
    fputs("\\fR", out);
    if (d->type == ST_BOOL) { /* "[=BOOL]" */
      fputs("[=\\fIBOOL\\fR]", out);
    } else {
      fputs(" \\fI", out);
      man_flag(out, d->arg);
      fputs("\\fR", out);
    }
    fputc('\n', out);
    int cap = islower((unsigned char)d->help[0]) != 0; /* a sentence of its own here */
    if (cap)
      fputc(toupper((unsigned char)d->help[0]), out);
    man_text(out, d->help + cap);
    fputs(".\n.br\nDefault: ", out);
    if (d->snowflake_defval != NULL && (cmd & SETTINGS_SNOWFLAKE) == 0) {
      man_text(out, d->default_doc);
      fputs(" (\\fBidgen snowflake\\fR: \\fB", out);
      man_flag(out, d->snowflake_defval);
      fputs("\\fR)", out);
    } else if (d->default_doc != NULL)
      man_text(out, d->default_doc);
    else {
      fputs("\\fB", out);
      man_flag(out, d->defval);
      fputs("\\fR", out);
    }
    if (d->type == ST_INT)
      fprintf(out, "; from %" PRId64 " to %" PRId64, d->min, d->max);
    fprintf(out, ".\n.br\nEnvironment: \\fB%s\\fR; config key: \\fB%s\\fR.\n", env, d->name);
  }
}
