/*
 * cmd_ulid.c -- `idgen ulid` and `idgen uuid7`: make ULIDs and UUIDv7s.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The public-key options' help, the same for both commands but for what
 * the integer form is (the lines that follow). */
#define PUBLIC_HELP                                                                                \
  "      --public-key FILE   print each one's public form, made with this key\n"                   \
  "                          file (default $IDGEN_PUBLIC_KEY, a file name);\n"                     \
  "                          see 'idgen public --help'\n"                                          \
  "      --public-prefix P   the text form's type prefix (user gives user_0...)\n"                 \
  "      --public-form auto|int|text\n"                                                            \
  "                          auto (default: text with a prefix, else int), int\n"

static const char ulid_usage[] =
    "Usage: idgen ulid [-n N] [--monotonic] [--at UNIX_MS] [--clock C] [--uuid] [--json]\n"
    "                  [--public-key FILE [--public-prefix P] [--public-form auto|int|text]]\n"
    "\n"
    "Make N ULIDs, one per line: 26 characters, a 48-bit millisecond time and 80\n"
    "random bits from a cryptographically secure source.\n"
    "\n"
    "  -n, --count N     how many (default 1, at most " IDGEN_STR(
        CLI_COUNT_MAX) ")\n"
                       "  -m, --monotonic   strictly increasing: within one millisecond each ULID is\n"
                       "                    the previous plus one (fails rather than wrap if the 80\n"
                       "                    bits run out); without it every ULID has fresh random bits\n"
                       "      --at UNIX_MS  use this time instead of the clock (0..281474976710655)\n"
                       "      --clock C     fast (default), precise or coarse: coarse is cheapest\n"
                       "                    where the cycle counter is slow to read, and behind the\n"
                       "                    wall clock by one or two timer ticks (typically 4-8 ms)\n"
                       "      --uuid        print the same 128 bits in UUID form\n"
                       "      --json        print {\"ids\":[\"...\",...]}\n" PUBLIC_HELP
                       "                          (26 characters, ULID-shaped) or text ([PREFIX_] and 30\n"
                       "                          characters with the key version)\n"
                       "  -h, --help        show this help\n"
                       "\n"
                       "Exit status: 0 success, 1 a ULID could not be made, 2 bad usage.\n";

static const char uuid7_usage[] =
    "Usage: idgen uuid7 [-n N] [--clock C] [--json]\n"
    "                   [--public-key FILE [--public-prefix P] [--public-form auto|int|text]]\n"
    "\n"
    "Make N UUIDv7s (RFC 9562), one per line, strictly increasing: a 48-bit\n"
    "millisecond time, a 42-bit counter that starts at a random value each\n"
    "millisecond, and 32 fresh random bits in every UUID.\n"
    "\n"
    "  -n, --count N   how many (default 1, at most " IDGEN_STR(
        CLI_COUNT_MAX) ")\n"
                       "      --clock C   fast (default), precise or coarse: as idgen ulid's\n"
                       "      --json      print {\"ids\":[\"...\",...]}\n" PUBLIC_HELP
                       "                          (a UUID of version 4) or text ([PREFIX_] and 30\n"
                       "                          characters with the key version)\n"
                       "  -h, --help      show this help\n"
                       "\n"
                       "Exit status: 0 success, 1 a UUID could not be made, 2 bad usage.\n";

/* --public-key, --public-prefix, --public-form ('K', 'P', 'F'). */
static void public_option(cli_public_t *p, int c, const char *arg) {
  if (c == 'K')
    p->key_path = arg;
  else if (c == 'P')
    p->prefix = arg;
  else
    p->form = arg;
}

/* Prints one text ID, as a line or as a JSON array element. */
static void emit(const char *s, int json, int64_t i) {
  if (json)
    printf("%s\"%s\"", i ? "," : "", s);
  else
    puts(s);
  if (ferror(stdout)) /* stop making IDs nobody can receive */
    cli_finish_output();
}

/* 128-bit IDs held for their text forms, made a batch at a time. */
enum { HELD_MAX = 256 };
typedef struct held128 {
  size_t n;
  int64_t first; /* the index of ids[0] among the command's IDs */
  uint8_t ids[HELD_MAX][16];
} held128_t;

/* Prints the held IDs' text forms and empties the hold; exits 1 on error. */
static void held_flush(held128_t *h, idgen_public_t *c, int json) {
  if (h->n == 0)
    return;
  static char buf[HELD_MAX * IDGEN_PUBLIC_TEXT_MAX];
  int len = idgen_public_text_len(c);
  int rc = len < 0 ? len
                   : idgen_public_format128_batch(c, (const uint8_t(*)[16])h->ids, h->n, buf,
                                                  sizeof buf);
  if (rc < 0) {
    fflush(stdout);
    cli_fail(EXIT_ID, "cannot make a public ID: %s", idgen_strerror(rc));
  }
  for (size_t i = 0; i < h->n; i++) {
    char text[IDGEN_PUBLIC_TEXT_MAX];
    memcpy(text, buf + i * (size_t)len, (size_t)len);
    text[len] = '\0';
    emit(text, json, h->first + (int64_t)i);
  }
  h->first += (int64_t)h->n;
  h->n = 0;
}

/* Holds id for its text form (a batch made when the hold is full). */
static void held_add(held128_t *h, idgen_public_t *c, int json, const uint8_t id[16]) {
  memcpy(h->ids[h->n++], id, 16);
  if (h->n == HELD_MAX)
    held_flush(h, c, json);
}

/* What tells `idgen ulid` from `idgen uuid7`: its name, what it makes, its
 * help, the options it takes (gen128_opts) and its kind. */
typedef struct gen128_cmd {
  const char *name, *what; /* "ulid", "a ULID" */
  const char *usage, *shortopts;
  const struct option *opts;
  idgen_public_kind_t kind;
} gen128_cmd_t;

/* The next ID into id: a ULID from g (monotonic) or fresh, at `at` or now;
 * or a UUIDv7 from v.  0, or a library error. */
static int next128(idgen_ulid_gen_t *g, idgen_uuid7_gen_t *v, int64_t at, int clock_mode,
                   uint8_t id[16]) {
  int rc;
  if (v != NULL) {
    idgen_uuid_t u;
    if ((rc = idgen_uuid7_gen_next(v, &u)) == 0)
      memcpy(id, u.bytes, 16);
    return rc;
  }
  idgen_ulid_t u;
  int64_t ms = at >= 0 ? at : idgen_clock_now_ms(clock_mode);
  if ((rc = g ? idgen_ulid_gen_next_at(g, ms, &u) : idgen_ulid_make(&u, ms, NULL)) == 0)
    memcpy(id, u.bytes, 16);
  return rc;
}

static int gen128_main(const gen128_cmd_t *cmd, int argc, char **argv) {
  int64_t n = 1, at = -1;
  int monotonic = 0, as_uuid = 0, json = 0, c, uuid7 = cmd->kind == IDGEN_PUBLIC_UUID7;
  idgen_gen128_settings_t set = {.clock_mode = IDGEN_CLOCK_FAST};
  cli_public_t pub = {0};
  held128_t held = {0};
  opterr = 0;
  while ((c = getopt_long(argc, argv, cmd->shortopts, cmd->opts, NULL)) != -1) {
    switch (c) {
    case 'n':
      n = cli_int("--count", optarg, 1, CLI_COUNT_MAX);
      break;
    case 'm':
      monotonic = 1;
      break;
    case 'a':
      at = cli_int("--at", optarg, 0, IDGEN_ULID_MAX_MS);
      break;
    case 'u':
      as_uuid = 1;
      break;
    case 'c':
      set.clock_mode = cli_clock(optarg);
      break;
    case 'j':
      json = 1;
      break;
    case 'K':
    case 'P':
    case 'F':
      public_option(&pub, c, optarg);
      break;
    case 'h':
      fputs(cmd->usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option(cmd->name, c, argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_fail(EXIT_USAGE, "unexpected argument \"%s\" (see 'idgen %s --help')",
             CLI_QUOTED(argv[optind]), cmd->name);
  cli_public_open(&pub, cmd->name, cmd->kind);
  if (pub.codec != NULL && as_uuid)
    cli_fail(EXIT_USAGE, "ulid: --uuid with a public key: a ULID's public form is 26 "
                         "characters or text ('idgen uuid7 --public-key' gives UUIDs)");

  idgen_ulid_gen_t *g = NULL;
  idgen_uuid7_gen_t *v = NULL;
  if (uuid7 ? idgen_uuid7_gen_new(&v, &set) < 0 : monotonic && idgen_ulid_gen_new(&g, &set) < 0)
    cli_fail(EXIT_ID, "out of memory");
  if (json)
    fputs("{\"ids\":[", stdout);
  for (int64_t i = 0; i < n; i++) {
    uint8_t id[16];
    char text[IDGEN_PUBLIC_TEXT_MAX];
    int rc = next128(g, v, at, set.clock_mode, id);
    if (rc < 0) {
      held_flush(&held, pub.codec, json);
      fflush(stdout);
      cli_fail(EXIT_ID, "cannot make %s: %s", cmd->what, idgen_strerror(rc));
    }
    if (pub.codec != NULL && pub.text) {
      held_add(&held, pub.codec, json, id);
      continue;
    }
    if (pub.codec != NULL)
      cli_public_128(&pub, id, uuid7, text);
    else /* a UUIDv7, or a ULID as a UUID with --uuid */
      cli_text_128(id, uuid7 || as_uuid, text);
    emit(text, json, i);
  }
  held_flush(&held, pub.codec, json);
  if (json)
    fputs("]}\n", stdout);
  idgen_ulid_gen_free(g);
  idgen_uuid7_gen_free(v);
  cli_public_close(&pub);
  return EXIT_OK;
}

/* The options of `idgen ulid`; `idgen uuid7` takes all but the first three
 * (its IDs always increase, at the clock's time, in UUID form). */
static const struct option gen128_opts[] = {{"monotonic", no_argument, 0, 'm'},
                                            {"at", required_argument, 0, 'a'},
                                            {"uuid", no_argument, 0, 'u'},
                                            {"count", required_argument, 0, 'n'},
                                            {"clock", required_argument, 0, 'c'},
                                            {"json", no_argument, 0, 'j'},
                                            {"help", no_argument, 0, 'h'},
                                            {"public-key", required_argument, 0, 'K'},
                                            {"public-prefix", required_argument, 0, 'P'},
                                            {"public-form", required_argument, 0, 'F'},
                                            {0, 0, 0, 0}};

int cmd_ulid(int argc, char **argv) {
  static const gen128_cmd_t cmd = {.name = "ulid",
                                   .what = "a ULID",
                                   .usage = ulid_usage,
                                   .shortopts = ":n:mh",
                                   .opts = gen128_opts,
                                   .kind = IDGEN_PUBLIC_ULID};
  return gen128_main(&cmd, argc, argv);
}

int cmd_uuid7(int argc, char **argv) {
  static const gen128_cmd_t cmd = {.name = "uuid7",
                                   .what = "a UUIDv7",
                                   .usage = uuid7_usage,
                                   .shortopts = ":n:h",
                                   .opts = gen128_opts + 3,
                                   .kind = IDGEN_PUBLIC_UUID7};
  return gen128_main(&cmd, argc, argv);
}
