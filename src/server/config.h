/*
 * config.h -- the settings of `idgen serve`: flags, IDGEN_* environment
 * variables and a key = value config file, in that order of precedence
 * (SPEC section 7; the table of keys is in config.c and docs/SERVE.md).
 */
#ifndef IDGEN_SERVE_CONFIG_H
#define IDGEN_SERVE_CONFIG_H

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "idgen.h"

enum serve_key {
  K_HTTP, K_RESP, K_LAYOUT, K_NODE, K_REGISTRY, K_LEASE_FIELD, K_LEASE_TTL_MS,
  K_MAX_START_WAIT_MS, K_MAX_BORROW_MS, K_MAX_WAIT_MS, K_CLOCK,
  K_THREADS, K_MAX_CONNECTIONS, K_MAX_REQUEST_BYTES, K_MAX_BATCH, K_MAX_OUTPUT_BYTES,
  K_IDLE_TIMEOUT_MS, K_SLOW_TIMEOUT_MS, K_SHUTDOWN_TIMEOUT_MS, K_MAX_AGENTS, K_PID_FILE,
  K_LOG_FILE, SERVE_NKEYS
};

typedef struct serve_addr {
  int enabled;                  /* 0 for "off" */
  struct sockaddr_storage sa;
  socklen_t salen;
  char text[128];               /* as given: "127.0.0.1:8080" */
} serve_addr_t;

typedef struct serve_config {
  /* Each key's value as text, and where it came from ("default", "flag
   * --max-batch", "IDGEN_MAX_BATCH", "FILE:LINE"); owned. */
  char *value[SERVE_NKEYS];
  char *source[SERVE_NKEYS];
  int check_only;               /* --check-config */
  /* The validated settings. */
  serve_addr_t http, resp;
  idgen_layout_t layout;
  idgen_snowflake_settings_t gen;
  unsigned node_given;          /* bit i: node field i was given */
  const char *lease_field;      /* NULL: the registry's choice */
  int64_t lease_ttl_ms, max_start_wait_ms;
  int threads;
  int64_t max_connections, max_request_bytes, max_batch, max_output_bytes;
  int64_t idle_timeout_ms, slow_timeout_ms, shutdown_timeout_ms, max_agents;
  const char *registry, *pid_file, *log_file; /* into value[]; "" for none */
} serve_config_t;

/*
 * Reads the settings from argv (after "serve"), the environment and the
 * config file, and validates them.  Returns 0; 1 after printing --help to
 * stdout; or 2 after printing "idgen: serve: ..." naming the key, value and
 * source to stderr.
 */
int serve_config_load(serve_config_t *c, int argc, char **argv);

/* Prints the effective settings as a config file, each with its source. */
void serve_config_print(const serve_config_t *c, FILE *out);

void serve_config_free(serve_config_t *c);

/* The key's name in the config file ("max_batch"). */
const char *serve_key_name(int key);

#endif
