/*
 * cmd_ulid.c -- `idgen ulid` and `idgen uuid7`: make ULIDs and UUIDv7s.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
                       "      --json        print {\"ids\":[\"...\",...]}\n"
                       "      --public-key FILE   print each one's public form, made with this key\n"
                       "                          file (default $IDGEN_PUBLIC_KEY, a file name);\n"
                       "                          see 'idgen public --help'\n"
                       "      --public-prefix P   the text form's type prefix (user gives user_0...)\n"
                       "      --public-form auto|int|text\n"
                       "                          auto (default: text with a prefix, else int), int\n"
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
                       "      --json      print {\"ids\":[\"...\",...]}\n"
                       "      --public-key FILE   print each one's public form, made with this key\n"
                       "                          file (default $IDGEN_PUBLIC_KEY, a file name);\n"
                       "                          see 'idgen public --help'\n"
                       "      --public-prefix P   the text form's type prefix (user gives user_0...)\n"
                       "      --public-form auto|int|text\n"
                       "                          auto (default: text with a prefix, else int), int\n"
                       "                          (a UUID of version 4) or text ([PREFIX_] and 30\n"
                       "                          characters with the key version)\n"
                       "  -h, --help      show this help\n"
                       "\n"
                       "Exit status: 0 success, 1 a UUID could not be made, 2 bad usage.\n";

/* Prints one text ID, as a line or as a JSON array element. */
/* --public-key, --public-prefix, --public-form ('K', 'P', 'F'). */
static void public_option(cli_public_t *p, int c, const char *arg) {
  if (c == 'K')
    p->key_path = arg;
  else if (c == 'P')
    p->prefix = arg;
  else
    p->form = arg;
}

static void emit(const char *s, int json, int64_t i) {
  if (json)
    printf("%s\"%s\"", i ? "," : "", s);
  else
    puts(s);
  if (ferror(stdout)) /* stop making IDs nobody can receive */
    cli_finish_output();
}

int cmd_ulid(int argc, char **argv) {
  static const struct option opts[] = {{"count", required_argument, 0, 'n'},
                                       {"monotonic", no_argument, 0, 'm'},
                                       {"at", required_argument, 0, 'a'},
                                       {"uuid", no_argument, 0, 'u'},
                                       {"clock", required_argument, 0, 'c'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {"public-key", required_argument, 0, 'K'},
                                       {"public-prefix", required_argument, 0, 'P'},
                                       {"public-form", required_argument, 0, 'F'},
                                       {0, 0, 0, 0}};
  int64_t n = 1, at = -1;
  int monotonic = 0, as_uuid = 0, json = 0, c;
  idgen_gen128_settings_t set = {.clock_mode = IDGEN_CLOCK_FAST};
  cli_public_t pub = {0};
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":n:mh", opts, NULL)) != -1) {
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
      fputs(ulid_usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("ulid", c, argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_fail(EXIT_USAGE, "unexpected argument \"%s\" (see 'idgen ulid --help')",
             CLI_QUOTED(argv[optind]));
  cli_public_open(&pub, "ulid", IDGEN_PUBLIC_ULID);
  if (pub.codec != NULL && as_uuid)
    cli_fail(EXIT_USAGE, "ulid: --uuid with a public key: a ULID's public form is 26 "
                         "characters or text ('idgen uuid7 --public-key' gives UUIDs)");

  idgen_ulid_gen_t *g = NULL;
  if (monotonic && idgen_ulid_gen_new(&g, &set) < 0)
    cli_fail(EXIT_ID, "out of memory");
  if (json)
    fputs("{\"ids\":[", stdout);
  for (int64_t i = 0; i < n; i++) {
    idgen_ulid_t u;
    int rc;
    int64_t ms = at >= 0 ? at : idgen_clock_now_ms(set.clock_mode);
    rc = g ? idgen_ulid_gen_next_at(g, ms, &u) : idgen_ulid_make(&u, ms, NULL);
    if (rc < 0) {
      fflush(stdout);
      cli_fail(EXIT_ID, "cannot make a ULID: %s", idgen_strerror(rc));
    }
    char text[IDGEN_PUBLIC_TEXT_MAX];
    if (pub.codec != NULL) {
      cli_public_128(&pub, u.bytes, 0, text);
    } else if (as_uuid) {
      idgen_uuid_t uu;
      idgen_ulid_to_uuid(&u, &uu);
      idgen_uuid_format(&uu, text);
    } else {
      idgen_ulid_format(&u, text);
    }
    emit(text, json, i);
  }
  if (json)
    fputs("]}\n", stdout);
  idgen_ulid_gen_free(g);
  cli_public_close(&pub);
  return EXIT_OK;
}

int cmd_uuid7(int argc, char **argv) {
  static const struct option opts[] = {{"count", required_argument, 0, 'n'},
                                       {"clock", required_argument, 0, 'c'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {"public-key", required_argument, 0, 'K'},
                                       {"public-prefix", required_argument, 0, 'P'},
                                       {"public-form", required_argument, 0, 'F'},
                                       {0, 0, 0, 0}};
  int64_t n = 1;
  int json = 0, c;
  idgen_gen128_settings_t set = {.clock_mode = IDGEN_CLOCK_FAST};
  cli_public_t pub = {0};
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":n:h", opts, NULL)) != -1) {
    switch (c) {
    case 'n':
      n = cli_int("--count", optarg, 1, CLI_COUNT_MAX);
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
      fputs(uuid7_usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("uuid7", c, argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_fail(EXIT_USAGE, "unexpected argument \"%s\" (see 'idgen uuid7 --help')",
             CLI_QUOTED(argv[optind]));
  cli_public_open(&pub, "uuid7", IDGEN_PUBLIC_UUID7);
  idgen_uuid7_gen_t *g;
  if (idgen_uuid7_gen_new(&g, &set) < 0)
    cli_fail(EXIT_ID, "out of memory");
  if (json)
    fputs("{\"ids\":[", stdout);
  for (int64_t i = 0; i < n; i++) {
    idgen_uuid_t u;
    char text[IDGEN_PUBLIC_TEXT_MAX];
    int rc = idgen_uuid7_gen_next(g, &u);
    if (rc < 0) {
      fflush(stdout);
      cli_fail(EXIT_ID, "cannot make a UUIDv7: %s", idgen_strerror(rc));
    }
    if (pub.codec != NULL)
      cli_public_128(&pub, u.bytes, 1, text);
    else
      idgen_uuid_format(&u, text);
    emit(text, json, i);
  }
  if (json)
    fputs("]}\n", stdout);
  idgen_uuid7_gen_free(g);
  cli_public_close(&pub);
  return EXIT_OK;
}
