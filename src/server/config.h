/*
 * config.h -- the settings of `idgen serve`: flags, IDGEN_* environment
 * variables and a key = value config file, in that order of precedence.  The
 * table of keys is src/common/settings.c, shared with `idgen snowflake`;
 * this adds what only the daemon checks (listener addresses, the computed
 * defaults of threads and max_batch, the rules between its limits).
 */
#ifndef IDGEN_SERVE_CONFIG_H
#define IDGEN_SERVE_CONFIG_H

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "idgen.h"
#include "settings.h"

typedef struct serve_addr {
  int enabled; /* 0 for "off" */
  struct sockaddr_storage sa;
  socklen_t salen;
  char text[128]; /* as given: "127.0.0.1:8080" */
} serve_addr_t;

typedef struct serve_config {
  /* The settings as text with their sources, and the generator's and the
   * lease's validated values (s.layout, s.gen, s.registry...). */
  settings_t s;
  /* The daemon's own, validated. */
  serve_addr_t http, resp, thrift;
  int threads;
  int64_t max_connections, max_request_bytes, max_headers, max_batch, max_output_bytes;
  int64_t busy_poll_ns;
  int64_t idle_timeout_ms, slow_timeout_ms, shutdown_timeout_ms, stall_timeout_ms, max_agents;
  const char *pid_file, *log_file, *audit_log; /* into s.value[]; "" for none */
  enum audit_mode audit_mode;                  /* count or require (settings.h) */
  int64_t audit_queue_bytes;
  int64_t audit_timeout_ms; /* require: a reply's wait for its line; both: a stall */
  struct serve_auth *auth;  /* auth_file's tokens as read at the start, or NULL: none asked */
  int auth_metrics;         /* with auth: /metrics and GET / need a token too */
  struct ssl_ctx_st *tls;   /* tls_cert's context as read at the start, or NULL: plain text */
  /* --leases (serve_leases.c): the lease service, its limits, and the
   * browser origins allowed (lease_cors_origins, into s.value[]; "" none). */
  int leases;
  int64_t lease_max_per_client, lease_max_per_agent, lease_max_per_space;
  int64_t lease_max_skew_ms, lease_quarantine_ms;
  const char *lease_cors_origins;
  int64_t seq_max_open; /* sequences opened on first use, at most */
} serve_config_t;

/*
 * Reads the settings from argv (after "serve"), the environment and the
 * config file, and validates them.  Returns 0; 1 after printing --help (or
 * --settings-markdown) to stdout; or 2 after printing "idgen: serve: ..."
 * naming the key, value and source to stderr.
 */
int serve_config_load(serve_config_t *c, int argc, char **argv);

/* Prints the effective settings as a config file, each with its source. */
void serve_config_print(const serve_config_t *c, FILE *out);

void serve_config_free(serve_config_t *c);

#endif
