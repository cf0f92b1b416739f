/*
 * settings.h -- the one table of the settings that `idgen snowflake` and
 * `idgen serve` take, and the loader both use.
 *
 * Each setting is defined once: its key (max_wait_ms), from which its flag
 * (--max-wait-ms) and environment variable (IDGEN_MAX_WAIT_MS) are derived,
 * its type, default, bounds, help text, and the commands that take it.  From
 * the table come the flags each command accepts, the option lines of its
 * --help, the daemon's --check-config and the table in docs/SERVE.md
 * (`idgen serve --settings-markdown`).  The values that reach the library are
 * checked by the library's own rules (idgen_layout_parse,
 * idgen_layout_nodes_parse, idgen_lease_field, idgen_lease_settings_verify,
 * idgen_lease_ttl_check, idgen_registry_check), so a rule has one owner
 * whichever command applies it (the PostgreSQL extension applies them too).
 *
 * Values are gathered as text, lowest precedence first (default, config file,
 * environment, flags; a command may take flags only), each remembering its
 * source, and only then validated in table order, so that a message names
 * the value in effect and where it came from:
 *   idgen: serve: max_batch = "lots" (from IDGEN_MAX_BATCH): not a whole number from 1 to 10000000
 */
#ifndef IDGEN_SETTINGS_H
#define IDGEN_SETTINGS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

#include "idgen.h"

/* The settings, in the order they are validated (a layout before the node
 * values it names, borrow and wait before the batch they bound). */
enum settings_key {
  SK_HTTP,
  SK_RESP,
  SK_THRIFT,
  SK_LAYOUT,
  SK_NODE,
  SK_REGISTRY,
  SK_SPACE,
  SK_LEASE_FIELD,
  SK_LEASE_TTL_MS,
  SK_MAX_START_WAIT_MS,
  SK_MAX_BORROW_MS,
  SK_MAX_WAIT_MS,
  SK_CLOCK,
  SK_RANDOM_SEQUENCE_START,
  SK_CACHE,
  SK_CACHE_BOOST_POWER,
  SK_CACHE_PADDING_PERCENT,
  SK_CACHE_SCHEDULE_MS,
  SK_CACHE_ON_EMPTY,
  SK_MAX_CLOCK_SKEW_MS,
  SK_THREADS,
  SK_BUSY_POLL_US,
  SK_MAX_CONNECTIONS,
  SK_MAX_REQUEST_BYTES,
  SK_MAX_HEADERS,
  SK_MAX_BATCH,
  SK_MAX_OUTPUT_BYTES,
  SK_IDLE_TIMEOUT_MS,
  SK_SLOW_TIMEOUT_MS,
  SK_SHUTDOWN_TIMEOUT_MS,
  SK_STALL_TIMEOUT_MS,
  SK_MAX_AGENTS,
  SK_PID_FILE,
  SK_LOG_FILE,
  SK_AUDIT_LOG,
  SK_AUDIT_MODE,
  SK_AUDIT_QUEUE_BYTES,
  SK_AUDIT_TIMEOUT_MS,
  SK_AUTH_FILE,
  SK_AUTH_METRICS,
  SK_THRIFT_WITHOUT_AUTH,
  SK_TLS_CERT,
  SK_TLS_KEY,
  SK_TLS_CLIENT_CA,
  SK_LEASES,
  SK_LEASE_MAX_PER_CLIENT,
  SK_LEASE_MAX_PER_AGENT,
  SK_LEASE_MAX_PER_SPACE,
  SK_LEASE_MAX_SKEW_MS,
  SK_LEASE_QUARANTINE_MS,
  SK_LEASE_CORS_ORIGINS,
  SK_SEQ_MIN_STEP,
  SK_SEQ_MAX_STEP,
  SK_SEQ_PREFETCH,
  SK_SEQ_SEGMENT_TARGET_MS,
  SK_SEQ_TTL_MS,
  SK_SEQ_TZ, /* before the templates it renders */
  SK_SEQ_FORMAT,
  SK_SEQ_STRICT,
  SK_SEQ_MAX_OPEN,
  SK_PUBLIC_KEY,
  SK_PUBLIC_PREFIX, /* after the key it goes with */
  SK_PUBLIC_FORM,
  SK_PUBLIC_KEY_VERSION,
  SETTINGS_NKEYS
};

/* The commands that take settings (a bit each). */
enum { SETTINGS_SNOWFLAKE = 1, SETTINGS_SERVE = 2, SETTINGS_SEQ = 4 };

enum settings_type {
  ST_ADDR,       /* HOST:PORT or off (checked by the daemon's hook) */
  ST_LAYOUT,     /* idgen_layout_parse */
  ST_NODE,       /* NAME=V[,NAME=V...], idgen_layout_nodes_parse; flags repeat */
  ST_REGISTRY,   /* idgen_registry_check; "" is the default registry */
  ST_SPACE,      /* an ID space's name, checked with the registry (idgen_registry_check) */
  ST_FIELD,      /* idgen_lease_field */
  ST_INT,        /* a whole number within [min, max] */
  ST_CLOCK,      /* fast | precise */
  ST_BOOL,       /* true | false (a flag without a value: true) */
  ST_CHOICE,     /* one of `words` ("direct|fail" in `arg`): its value in num[] */
  ST_PATH,       /* a file name, "" for none */
  ST_SHARE,      /* a decimal fraction strictly between 0 and 1 */
  ST_TZ,         /* an IANA time zone name, "" for UTC (idgen_seq_format_parse) */
  ST_PUBLIC_KEY, /* a key file, idgen_public_keys_load; "" for none */
  ST_PREFIX,     /* a public ID's type prefix, idgen_public_prefix_check */
  ST_SEQ_LIST    /* repeatable: one entry per flag, file line or environment line
                * (kept joined by newlines); NAME=TEMPLATE (seq_format) or
                * NAME (seq_strict), checked by the library's rules */
};

/* A word an ST_CHOICE key takes and the value it stands for; a NULL word
 * ends the list. */
typedef struct settings_word {
  const char *word;
  int value;
} settings_word_t;

/* public_form's values (its words: auto, int, text): the form of the public
 * IDs `idgen snowflake` prints and the daemon's format=public gives; auto is
 * the text form with a prefix, the integer form without. */
enum public_form { PUBLIC_AUTO, PUBLIC_INT, PUBLIC_TEXT };

/* audit_mode's values (its words: count, require), the daemon's audit log's
 * behaviour when the file cannot take lines (serve_audit.c). */
enum audit_mode { AUDIT_COUNT, AUDIT_REQUIRE };

typedef struct settings_def {
  const char *name; /* the config-file key */
  enum settings_type type;
  unsigned cmds;                /* SETTINGS_* bits: the commands that take it */
  char short_opt;               /* a one-letter flag, or 0 */
  const char *defval;           /* the default as text; "" for none or computed */
  const char *snowflake_defval; /* `idgen snowflake`'s default, where it differs */
  const char *default_doc;      /* the default in words, where defval does not say it */
  int64_t min, max;             /* ST_INT */
  const char *arg;              /* the flag's argument in help ("N") */
  const char *help;             /* one sentence; `marks` are code in the docs */
  const settings_word_t *words; /* ST_CHOICE: its words, as `arg` lists them */
} settings_def_t;

extern const settings_def_t settings_defs[SETTINGS_NKEYS];

typedef struct settings settings_t;

/* How a command loads its settings. */
typedef struct settings_spec {
  unsigned cmd;     /* SETTINGS_SNOWFLAKE or SETTINGS_SERVE */
  const char *name; /* "serve": messages say "idgen: serve: ..." */
  int env_and_file; /* also IDGEN_* variables and --config / IDGEN_CONFIG */
  /* The command's own options (NULL-terminated; val >= 1, < 1000) and their
   * one-letter forms for getopt ("n:"). */
  const struct option *extra;
  const char *extra_short;
  /* An own option: 0 to go on, or the load's result (1 after output such as
   * --help, 2 after a message). */
  int (*on_option)(settings_t *s, void *ctx, int opt, const char *arg);
  /* Called for each key before its generic check: 0 to go on with it, 1 if
   * the hook checked the value itself, 2 after a message.  May be NULL. */
  int (*check)(settings_t *s, void *ctx, int key);
  void (*usage)(void *ctx); /* --help */
  void *ctx;
} settings_spec_t;

struct settings {
  unsigned cmd;     /* SETTINGS_SNOWFLAKE or SETTINGS_SERVE */
  const char *name; /* the command's name, as in its spec */
  /* Each key's value as text and where it came from ("default", "flag
   * --max-batch", "IDGEN_MAX_BATCH", "FILE:LINE"); NULL for keys the
   * command does not take.  Owned. */
  char *value[SETTINGS_NKEYS];
  char *source[SETTINGS_NKEYS];
  int check_only; /* --check-config */
  /* Validated. */
  idgen_layout_t layout;
  idgen_snowflake_settings_t gen; /* node values, borrow, wait, clock, random start */
  unsigned node_given;            /* bit i: node field i was given */
  /* Node values taken from the host (NAME=@ip, NAME=@mac), as text for the
   * log and /info: "worker=@ip eth0 10.1.2.3 -> 3"; "" if none. */
  char host_nodes[IDGEN_HOST_NODES_MAX];
  const char *registry;    /* into value[], or registry_space */
  char *registry_space;    /* the registry URI with ?space=NAME, or NULL (owned) */
  const char *lease_field; /* NULL: the registry's choice */
  int64_t lease_ttl_ms, max_start_wait_ms;
  int64_t num[SETTINGS_NKEYS]; /* each ST_INT's value */
  /* The sequence settings (min_step, max_step, prefetch, segment_target_ms,
   * ttl_ms, tz); format and strict are per name: settings_seq_for(). */
  idgen_seq_settings_t seq;
  /* public_key's keys (NULL: none given; owned), the prefix ("" for none)
   * and the form, auto resolved (PUBLIC_INT or PUBLIC_TEXT). */
  idgen_public_keys_t *public_keys;
  const char *public_prefix;
  int public_form;
  unsigned public_version; /* public_key_version: 0 for the newest */
  /* Flags seen while loading (applied after the file and the environment). */
  char *flag_value[SETTINGS_NKEYS];
  char *flag_source[SETTINGS_NKEYS];
};

/*
 * Reads the settings of spec->cmd from argv (argv[0] is the command's name),
 * and with spec->env_and_file from the environment and a config file, then
 * validates them.  Returns 0; 1 after --help or another option's output; 2
 * after a message on stderr naming the key, the value and its source.  Free
 * with settings_free() in every case.
 */
int settings_load(settings_t *s, const settings_spec_t *spec, int argc, char **argv);
void settings_free(settings_t *s);

/* A flag's value for key k as if given as `flag` ("--worker"): a
 * repeatable key's values are joined with commas.  For own options that
 * stand for a setting (--worker V is --node worker=V). */
void settings_flag(settings_t *s, int k, const char *value, const char *flag);

/* The settings of sequence `name`: s->seq with its template (seq_format
 * NAME=...) and strictness (seq_strict NAME).  The template points into
 * s->value[] joined text copied to buf[n]. */
void settings_seq_for(const settings_t *s, const char *name, idgen_seq_settings_t *out, char *buf,
                      size_t n);

/* Replaces key k's value and source (a computed default). */
void settings_set(settings_t *s, int k, const char *value, const char *source);

/* A whole decimal number (an optional '-', digits, nothing else) into *v:
 * 0, or -1. */
int settings_parse_int(const char *s, int64_t *v);

/* The clock setting's word ("fast", "precise", "coarse") into *mode
 * (idgen_clock_mode_parse): 0, or -1.  SETTINGS_CLOCK_WORDS names them for
 * messages. */
#define SETTINGS_CLOCK_WORDS IDGEN_CLOCK_MODE_WORDS
int settings_clock_mode(const char *v, idgen_clock_mode_t *mode);
/* The word of a mode settings_clock_mode reads (idgen_clock_mode_name). */
const char *settings_clock_word(idgen_clock_mode_t mode);

/* Key k's value as a whole number within its bounds into *v: 0, or 2 after
 * a message. */
int settings_int(settings_t *s, int k, int64_t *v);

/* "idgen: CMD: key = "value" (from SOURCE): MESSAGE" (key < 0: no key part)
 * on stderr; returns 2. */
int settings_fail(const settings_t *s, int k, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The option lines of `cmd`'s --help, from the table. */
void settings_usage(unsigned cmd, FILE *out);

/* The effective settings as a config file, each with its source. */
void settings_print(const settings_t *s, FILE *out);

/* docs/SERVE.md's table of `cmd`'s settings, in Markdown. */
void settings_markdown(unsigned cmd, FILE *out);

/* The same settings as roff for a man page's SETTINGS section (idgen-serve(1),
 * `idgen serve --settings-man`): one .TP entry each, with its flag, default,
 * range, environment variable and config-file key. */
void settings_man(unsigned cmd, FILE *out);

/* A quoted setting or argument in messages: printable ASCII, other bytes as
 * \xHH (idgen_quote), at most 100 characters. */
#define SETTINGS_Q(s) IDGEN_QUOTE((s), strlen(s), '"', 100)

#endif
