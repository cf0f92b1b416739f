/*
 * cli.h -- shared pieces of the idgen command-line tool: error reporting with
 * its exit codes, number parsing, layout and node options, output.
 */
#ifndef IDGEN_CLI_H
#define IDGEN_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "idgen.h"

/* Exit status: 0 success, 1 an ID could not be made or read, 2 bad usage
 * (idgen --help says so). */
enum { EXIT_OK = 0, EXIT_ID = 1, EXIT_USAGE = 2 };

#if defined(__GNUC__)
#define CLI_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define CLI_NORETURN __attribute__((noreturn))
#else
#define CLI_PRINTF(f, a)
#define CLI_NORETURN
#endif

/* A command-line word for a message between double quotes (or, with
 * CLI_WORD, bare): printable ASCII, other bytes as \xHH (idgen_quote), at
 * most 100 characters.  Lives until the end of the enclosing block. */
#define CLI_QUOTED(s) IDGEN_QUOTE((s), strlen(s), '"', 100)
#define CLI_WORD(s) IDGEN_QUOTE((s), strlen(s), 0, 100)

/* "idgen: MESSAGE" on stderr, one line. */
void cli_error(const char *fmt, ...) CLI_PRINTF(1, 2);
/* cli_error() then exit(code). */
CLI_NORETURN void cli_fail(int code, const char *fmt, ...) CLI_PRINTF(2, 3);

/* The most IDs one `idgen snowflake`, `idgen ulid` or `idgen uuid7` makes
 * (--count). */
#define CLI_COUNT_MAX 100000000

/* -n/--count N and --json, options of the commands that make IDs through
 * the settings (snowflake, seq): CLI_OPT_JSON is --json's getopt value (a
 * command's own long options are numbered after it). */
enum { CLI_OPT_JSON = 256 };
typedef struct cli_count {
  int64_t n; /* --count, 1 to CLI_COUNT_MAX */
  int json;  /* --json */
} cli_count_t;
/* Takes opt ('n' or CLI_OPT_JSON) into c: 1, or 0 for another option;
 * exits 2 on a bad count. */
int cli_count_option(cli_count_t *c, int opt, const char *arg);

/* Opens the registry at `uri` (the host's default when NULL) in `space`
 * (NULL: as the URI says); exits 2 (a bad URI or space) or 1 (unreachable)
 * with a message, naming `cmd` for a bad space. */
idgen_registry_t *cli_registry_open(const char *cmd, const char *uri, const char *space);
/* The registry URI to use: uri, or the host's default into def[n]; exits 2
 * if there is none. */
const char *cli_registry_uri(const char *uri, char *def, size_t n);

/* Parses a whole decimal integer in [min, max] for option `opt`; exits 2 on error. */
int64_t cli_int(const char *opt, const char *s, int64_t min, int64_t max);

/* Parses --clock's value (fast, precise, coarse); exits 2 naming it on error. */
idgen_clock_mode_t cli_clock(const char *value);

/* Parses --layout's value; exits 2 with the parser's message on error. */
void cli_layout(idgen_layout_t *l, const char *spec);

/* A layout's display name: its preset name, or its canonical spec. */
const char *cli_layout_name(const idgen_layout_t *l, char *buf, size_t n);

/* Handles an unknown option or missing argument from getopt_long; exits 2. */
CLI_NORETURN void cli_bad_option(const char *cmd, int optopt_, const char *arg);

/* A 128-bit ID's 16 bytes as a UUID (as_uuid) or a ULID's 26 characters
 * into out[IDGEN_UUID_STRLEN + 1]. */
void cli_text_128(const uint8_t id[16], int as_uuid, char *out);

/* Writes v in decimal with thousands separators ("4,096,000"). */
const char *cli_thousands(uint64_t v, char *buf, size_t n);

/* Buffered writing of decimal IDs, one per line, to stdout. */
void cli_put_u64_line(uint64_t v);
/* The same for a line of text, s[len] and a newline (len below 64 KiB). */
void cli_put_line(const char *s, size_t len);
void cli_flush(void);

/* Flushes all output; exits 1 with a message if any of it could not be
 * written (a full disk, a closed pipe with SIGPIPE ignored). */
void cli_finish_output(void);

/* Public IDs for the commands that make IDs (cli_public.c): the three
 * options' values as given (NULL where not given), then the codec. */
typedef struct cli_public {
  const char *key_path;  /* --public-key; NULL: $IDGEN_PUBLIC_KEY, if set */
  const char *prefix;    /* --public-prefix */
  const char *form;      /* --public-form: auto, int or text */
  idgen_public_t *codec; /* NULL: no key, IDs as they are */
  int text;              /* the text form (else the integer form) */
} cli_public_t;

/* Loads a key file for option `opt`; exits 2 with the library's message
 * (which never holds the key) on error. */
idgen_public_keys_t *cli_public_keys(const char *opt, const char *path);
/* Makes p->codec for `kind` when a key is given (flag or environment),
 * after checking the prefix and the form; exits 2 naming the option on
 * error.  `cmd` names the command in messages. */
void cli_public_open(cli_public_t *p, const char *cmd, idgen_public_kind_t kind);
/* A 128-bit ID's public form (integer form as `as_uuid` says: a UUID, or 26
 * characters) into out[IDGEN_PUBLIC_TEXT_MAX]; exits 1 on error. */
void cli_public_128(cli_public_t *p, const uint8_t id[16], int as_uuid, char *out);
void cli_public_close(cli_public_t *p);

/* The commands. */
int cmd_snowflake(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_layouts(int argc, char **argv);
int cmd_ulid(int argc, char **argv);
int cmd_uuid7(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_registry(int argc, char **argv);
int cmd_seq(int argc, char **argv);
int cmd_public(int argc, char **argv);

/* In bench/bench.c. */
int idgen_bench_main(int argc, char **argv);

#endif
