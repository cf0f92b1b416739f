/*
 * cmd_public.c -- `idgen public`: the public form of IDs (a keyed
 * permutation that hides their time, worker and order) and back, and
 * `idgen public --new-key FILE` to make a key file.  The work is the
 * library's (idgen_public_*); this file reads arguments or standard input,
 * tells each input's kind and form from its shape, and reports a bad input
 * by name without stopping at it.  A key is read from a file only and never
 * printed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static const char usage[] =
    "Usage: idgen public [--reverse] [--kind K] [--layout L] [--prefix P] [--form int|text]\n"
    "                    [--key-version N] [--json] [--public-key FILE] [ID... | -]\n"
    "       idgen public --new-key FILE [--add]\n"
    "\n"
    "Print the public form of each ID: a keyed, reversible permutation (FF1 on\n"
    "AES-256) that shows nothing of the ID's time, worker or order to whoever\n"
    "lacks the key; with --reverse, the ID of each public form.  IDs come from\n"
    "the arguments, or one per line from standard input when there are none or\n"
    "one is '-' (blank lines are skipped).  Each input's kind is told from its\n"
    "shape unless --kind says: a decimal integer is a Snowflake ID of --layout,\n"
    "a UUID a UUIDv7, 26 characters a ULID.\n"
    "\n"
    "Forms: the integer form keeps the ID's shape (a Snowflake ID of N bits\n"
    "gives an N-bit integer: a twitter ID stays below 2^63, a js53 one below\n"
    "2^53; a UUIDv7 gives a UUID of version 4; a ULID 26 characters) and is\n"
    "reversed with one key version only.  The text form, [PREFIX_]V and 16\n"
    "characters (Snowflake) or 29 (ULID, UUIDv7), carries its key version V and\n"
    "16 check bits: a wrong key, another prefix or an altered text is refused,\n"
    "but for one text in 65,536.  With --reverse and no --kind, a 128-bit text\n"
    "form is tried as a UUIDv7, then as a ULID, which doubles that rate: give\n"
    "--kind where it is known.\n"
    "\n"
    "  -r, --reverse           from public forms back to IDs\n"
    "  -k, --kind snowflake|ulid|uuid7\n"
    "                          the kind of the IDs (default: from each input)\n"
    "  -l, --layout L          the Snowflake IDs' layout, a preset or a spec\n"
    "                          (default twitter); its bit count is part of the key\n"
    "  -p, --prefix P          the text form's type prefix (user gives user_0...):\n"
    "                          a to z and '_', at most 63 characters, starting and\n"
    "                          ending with a letter\n"
    "  -f, --form int|text     the form (default: text with --prefix, else int;\n"
    "                          with --reverse, from each input's shape: a text form\n"
    "                          made only of digits needs --form text)\n"
    "      --key-version N     the key version of the integer form (default the\n"
    "                          newest in the file); text forms name their own\n"
    "      --public-key FILE   the key file (default $IDGEN_PUBLIC_KEY, a file\n"
    "                          name); refused when group or others may read it\n"
    "      --json              one JSON object per input: {\"input\", \"output\",\n"
    "                          \"kind\"} (and \"version\" of a text form reversed),\n"
    "                          or {\"input\", \"error\"}\n"
    "      --new-key FILE      write a new key file, mode 0600, with key version 1\n"
    "                          (never over an existing file); prints the file name\n"
    "                          and the version, never the key\n"
    "      --add               with --new-key: add a version (the newest + 1) to\n"
    "                          an existing key file; the newest makes public IDs\n"
    "                          and every version reverses text forms\n"
    "  -h, --help              show this help\n"
    "\n"
    "Keys: a key file holds lines 'vN HEX' (N 1 to 32, 64 hex digits), '#'\n"
    "comments; it must be mode 0600 or 0400.  A key is never printed or taken on\n"
    "the command line.  Equal IDs give equal public IDs; a public ID is not an\n"
    "access token.\n"
    "\n"
    "Examples:\n"
    "  idgen public --new-key order.key\n"
    "  idgen snowflake --public-key order.key --public-prefix order\n"
    "  idgen public --public-key order.key --reverse --prefix order order_0...\n"
    "  idgen uuid7 -n 3 | idgen public --public-key order.key -\n"
    "\n"
    "Exit status: 0 success, 1 an input could not be read or mapped (the others\n"
    "are still printed) or the key file could not be written, 2 bad usage or a\n"
    "key file refused.\n";

enum { FORM_AUTO, FORM_INT, FORM_TEXT };

typedef struct pub {
  int reverse, json, form, kind; /* kind: 0, or an idgen_public_kind_t */
  idgen_layout_t layout;
  const char *prefix; /* NULL: none */
  unsigned version;   /* the integer form's; 0: the newest */
  idgen_public_keys_t *keys;
  idgen_public_t *codec[4]; /* by kind, made on first use */
  int bad;                  /* an input failed */
} pub_t;

static const char *const kind_names[] = {"", "snowflake", "ulid", "uuid7"};

static idgen_public_t *codec(pub_t *p, int kind) {
  if (p->codec[kind] != NULL)
    return p->codec[kind];
  char err[512];
  idgen_public_settings_t s = {(idgen_public_kind_t)kind,
                               kind == IDGEN_PUBLIC_SNOWFLAKE ? (unsigned)p->layout.total_bits : 0,
                               p->prefix, p->version};
  if (idgen_public_new(&p->codec[kind], p->keys, &s, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s", err); /* "public: ..." */
  return p->codec[kind];
}

/* One result: a line (or a JSON object). */
static int put_ok(const pub_t *p, const char *in, const char *out, int kind, unsigned version) {
  if (!p->json) {
    puts(out);
    return 0;
  }
  json_t *o = json_object();
  json_object_set_new(o, "input", json_string_nocheck(in));
  json_object_set_new(o, "output", json_string(out));
  json_object_set_new(o, "kind", json_string(kind_names[kind]));
  if (version > 0)
    json_object_set_new(o, "version", json_integer(version));
  json_dumpf(o, stdout, JSON_COMPACT);
  json_decref(o);
  putchar('\n');
  return 0;
}

/* A bad input: named (quoted) on standard error, or as a JSON object. */
static int put_bad(pub_t *p, const char *in, const char *msg) {
  p->bad = 1;
  if (!p->json) {
    fflush(stdout); /* in input order when both go to one terminal */
    cli_error("\"%s\": %s", CLI_QUOTED(in), msg);
    return 0;
  }
  char q[128];
  json_t *o = json_object();
  json_object_set_new(o, "input", json_string(idgen_quote(q, sizeof q, in, strlen(in), 0)));
  json_object_set_new(o, "error", json_string(msg));
  json_dumpf(o, stdout, JSON_COMPACT);
  json_decref(o);
  putchar('\n');
  return 0;
}

static int all_digits(const char *s, size_t len) {
  if (len == 0)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return 1;
}

/* A whole decimal below 2^64 into *v; 0, or -1 with a message in err. */
static int parse_u64(const char *s, size_t len, uint64_t *v, char *err, size_t n) {
  if (!all_digits(s, len)) {
    snprintf(err, n, "not a decimal Snowflake ID");
    return -1;
  }
  uint64_t x = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (x > (UINT64_MAX - d) / 10) {
      snprintf(err, n, "too large for 64 bits");
      return -1;
    }
    x = x * 10 + d;
  }
  *v = x;
  return 0;
}

/* UUID-shaped: 36 characters with dashes at 8, 13, 18 and 23, "urn:uuid:"
 * and those, or 32 hex digits. */
static int uuid_shaped(const char *s, size_t len) {
  if (len == 45 && strncasecmp(s, "urn:uuid:", 9) == 0)
    return uuid_shaped(s + 9, 36);
  if (len == 36)
    return s[8] == '-' && s[13] == '-' && s[18] == '-' && s[23] == '-';
  if (len != 32)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (strchr("0123456789abcdefABCDEF", s[i]) == NULL)
      return 0;
  return 1;
}

/* The kind of an integer form (or of an ID) by its shape; 0 if none. */
static int kind_of_int(const char *s, size_t len) {
  if (all_digits(s, len))
    return IDGEN_PUBLIC_SNOWFLAKE;
  if (uuid_shaped(s, len))
    return IDGEN_PUBLIC_UUID7;
  if (len == IDGEN_ULID_STRLEN && memchr(s, '_', len) == NULL)
    return IDGEN_PUBLIC_ULID;
  return 0;
}

/* A ULID or a UUID (of `kind`) into 16 bytes; -1 with a message. */
static int parse_128(int kind, const char *s, size_t len, uint8_t b[16], char *err, size_t n) {
  if (kind == IDGEN_PUBLIC_ULID) {
    idgen_ulid_t u;
    if (idgen_ulid_parse(&u, s, len, IDGEN_ULID_STRICT, err, n) < 0)
      return -1;
    memcpy(b, u.bytes, 16);
    return 0;
  }
  idgen_uuid_t u;
  if (idgen_uuid_parse(&u, s, len, err, n) < 0)
    return -1;
  memcpy(b, u.bytes, 16);
  return 0;
}

/* "not below 2^63 (the layout twitter has 63 bits)". */
static void range_msg(const pub_t *p, char *err, size_t n) {
  char name[IDGEN_LAYOUT_SPEC_MAX];
  snprintf(err, n, "not below 2^%d (the layout %s has %d bits)", p->layout.total_bits,
           cli_layout_name(&p->layout, name, sizeof name), p->layout.total_bits);
}

/* ID -> public form. */
static int forward(pub_t *p, const char *in, size_t len) {
  int kind = p->kind ? p->kind : kind_of_int(in, len);
  char err[512], out[IDGEN_PUBLIC_TEXT_MAX];
  int text = p->form == FORM_TEXT, rc;
  if (kind == 0)
    return put_bad(p, in, "not a decimal Snowflake ID, a UUIDv7 or a 26-character ULID");
  idgen_public_t *c = codec(p, kind);
  if (kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t id, pub;
    if (parse_u64(in, len, &id, err, sizeof err) < 0)
      return put_bad(p, in, err);
    rc = text ? idgen_public_format64(c, id, out, sizeof out) : idgen_public_map64(c, id, &pub);
    if (rc < 0) {
      range_msg(p, err, sizeof err);
      return put_bad(p, in, err);
    }
    if (!text)
      snprintf(out, sizeof out, "%" PRIu64, pub);
    return put_ok(p, in, out, kind, 0);
  }
  uint8_t id[16], pub[16];
  if (parse_128(kind, in, len, id, err, sizeof err) < 0)
    return put_bad(p, in, err);
  if (kind == IDGEN_PUBLIC_UUID7 && (id[6] >> 4 != 7 || (id[8] >> 6) != 2)) {
    snprintf(err, sizeof err, "a UUID of version %d%s, not a UUIDv7", id[6] >> 4,
             (id[8] >> 6) != 2 ? " and another variant" : "");
    return put_bad(p, in, err);
  }
  rc = text ? idgen_public_format128(c, id, out, sizeof out) : idgen_public_map128(c, id, pub);
  if (rc < 0)
    return put_bad(p, in, idgen_strerror(rc));
  if (!text)
    cli_text_128(pub, kind != IDGEN_PUBLIC_ULID, out);
  return put_ok(p, in, out, kind, 0);
}

/* An integer form -> its ID. */
static int reverse_int(pub_t *p, const char *in, size_t len, int kind) {
  char err[512], out[64];
  idgen_public_t *c = codec(p, kind);
  if (kind == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t pub, id;
    if (parse_u64(in, len, &pub, err, sizeof err) < 0)
      return put_bad(p, in, err);
    if (idgen_public_unmap64(c, pub, &id) < 0) {
      range_msg(p, err, sizeof err);
      return put_bad(p, in, err);
    }
    snprintf(out, sizeof out, "%" PRIu64, id);
    return put_ok(p, in, out, kind, 0);
  }
  uint8_t pub[16], id[16];
  if (parse_128(kind, in, len, pub, err, sizeof err) < 0)
    return put_bad(p, in, err);
  if (idgen_public_unmap128(c, pub, id) < 0) {
    snprintf(err, sizeof err, "a UUID of version %d: the public form of a UUIDv7 is of version 4",
             pub[6] >> 4);
    return put_bad(p, in, err);
  }
  cli_text_128(id, kind != IDGEN_PUBLIC_ULID, out);
  return put_ok(p, in, out, kind, 0);
}

/* A text form -> its ID.  Without --kind, its kind by its shape, and a
 * 128-bit one tried as a UUIDv7, then as a ULID (idgen_public_kind_of). */
static int reverse_text(pub_t *p, const char *in, size_t len) {
  idgen_public_kind_t kinds[2] = {(idgen_public_kind_t)p->kind, (idgen_public_kind_t)p->kind};
  int nkinds = 1, kind, rc;
  char err[512], out[64];
  unsigned version = 0;
  if (p->kind == 0 && (nkinds = idgen_public_kind_of(in, len, kinds, err, sizeof err)) < 0)
    return put_bad(p, in, err);
  if (kinds[0] == IDGEN_PUBLIC_SNOWFLAKE) {
    uint64_t id;
    if (idgen_public_parse64(codec(p, kinds[0]), in, len, &id, &version, err, sizeof err) < 0)
      return put_bad(p, in, err);
    snprintf(out, sizeof out, "%" PRIu64, id);
    return put_ok(p, in, out, kinds[0], version);
  }
  uint8_t id[16];
  for (int i = 0;; i++) {
    char e[512];
    kind = kinds[i];
    rc = idgen_public_parse128(codec(p, kind), in, len, id, &version, e, sizeof e);
    if (i == 0) /* the first try's message: the second's says the same */
      memcpy(err, e, sizeof err);
    if (rc != IDGEN_EKEY || i + 1 == nkinds)
      break;
  }
  if (rc < 0 && nkinds > 1) {
    size_t n = strlen(err);
    snprintf(err + n, sizeof err - n, " (tried as a UUIDv7 and as a ULID)");
  }
  if (rc < 0)
    return put_bad(p, in, err);
  cli_text_128(id, kind != IDGEN_PUBLIC_ULID, out);
  return put_ok(p, in, out, kind, version);
}

static int one(pub_t *p, const char *in, size_t len) {
  if (!p->reverse)
    return forward(p, in, len);
  int shape = kind_of_int(in, len);
  int form = p->form != FORM_AUTO ? p->form : shape ? FORM_INT : FORM_TEXT;
  if (form == FORM_TEXT)
    return reverse_text(p, in, len);
  int kind = p->kind ? p->kind : shape;
  if (kind == 0)
    return put_bad(p, in, "not an integer form: a decimal, a UUID or 26 characters");
  return reverse_int(p, in, len, kind);
}

/* One per line from standard input, blank lines skipped. */
static void from_stdin(pub_t *p) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    size_t a = 0, b = (size_t)n;
    while (b > 0 && strchr(" \t\r\n", line[b - 1]) != NULL)
      b--;
    while (a < b && (line[a] == ' ' || line[a] == '\t'))
      a++;
    if (a == b)
      continue;
    line[b] = '\0';
    one(p, line + a, b - a);
    if (ferror(stdout)) /* stop reading for a reader that is gone */
      cli_finish_output();
  }
  free(line);
  if (ferror(stdin))
    cli_fail(EXIT_ID, "cannot read standard input");
}

static int new_key(const char *path, int add) {
  char err[512];
  unsigned v = 0;
  if (idgen_public_keys_generate(path, add, &v, err, sizeof err) < 0)
    cli_fail(EXIT_ID, "public: --new-key: %s", err);
  printf("%s: key version %u written (mode 0600)\n", path, v);
  return EXIT_OK;
}

static int parse_kind(const char *v) {
  for (int k = 1; k <= 3; k++)
    if (strcmp(v, kind_names[k]) == 0)
      return k;
  cli_fail(EXIT_USAGE, "public: --kind: \"%s\" is not a kind (expected snowflake, ulid or uuid7)",
           CLI_QUOTED(v));
}

static int parse_form(const char *v) {
  if (strcmp(v, "int") == 0)
    return FORM_INT;
  if (strcmp(v, "text") == 0)
    return FORM_TEXT;
  cli_fail(EXIT_USAGE, "public: --form: \"%s\" is not a form (expected int or text)",
           CLI_QUOTED(v));
}

enum { OPT_KEY = 256, OPT_KEYVER, OPT_JSON, OPT_NEWKEY, OPT_ADD };

/* The options into p; the key file's and --new-key's names into *key,
 * *newkey; --add into *add. */
static void options(pub_t *p, int argc, char **argv, const char **key, const char **newkey,
                    int *add) {
  static const struct option opts[] = {{"reverse", no_argument, 0, 'r'},
                                       {"kind", required_argument, 0, 'k'},
                                       {"layout", required_argument, 0, 'l'},
                                       {"prefix", required_argument, 0, 'p'},
                                       {"form", required_argument, 0, 'f'},
                                       {"key-version", required_argument, 0, OPT_KEYVER},
                                       {"public-key", required_argument, 0, OPT_KEY},
                                       {"json", no_argument, 0, OPT_JSON},
                                       {"new-key", required_argument, 0, OPT_NEWKEY},
                                       {"add", no_argument, 0, OPT_ADD},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":rk:l:p:f:h", opts, NULL)) != -1) {
    switch (c) {
    case 'r':
      p->reverse = 1;
      break;
    case 'k':
      p->kind = parse_kind(optarg);
      break;
    case 'l':
      cli_layout(&p->layout, optarg);
      break;
    case 'p':
      p->prefix = optarg;
      break;
    case 'f':
      p->form = parse_form(optarg);
      break;
    case OPT_KEYVER:
      p->version = (unsigned)cli_int("--key-version", optarg, 1, IDGEN_PUBLIC_VERSION_MAX);
      break;
    case OPT_KEY:
      *key = optarg;
      break;
    case OPT_JSON:
      p->json = 1;
      break;
    case OPT_NEWKEY:
      *newkey = optarg;
      break;
    case OPT_ADD:
      *add = 1;
      break;
    case 'h':
      fputs(usage, stdout);
      exit(EXIT_OK);
    default:
      cli_bad_option("public", c, argv[optind - 1]);
    }
  }
}

int cmd_public(int argc, char **argv) {
  pub_t p = {0};
  const char *key = NULL, *newkey = NULL;
  int add = 0;
  cli_layout(&p.layout, "twitter");
  options(&p, argc, argv, &key, &newkey, &add);
  if (newkey != NULL) {
    if (optind < argc)
      cli_fail(EXIT_USAGE, "public: --new-key takes no IDs (see 'idgen public --help')");
    return new_key(newkey, add);
  }
  if (add)
    cli_fail(EXIT_USAGE, "public: --add goes with --new-key FILE");
  char err[512];
  if (p.prefix != NULL && idgen_public_prefix_check(p.prefix, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "public: --prefix: %s", err);
  if (p.prefix != NULL && p.prefix[0] == '\0')
    p.prefix = NULL;
  if (p.prefix != NULL && p.form == FORM_INT)
    cli_fail(EXIT_USAGE, "public: the integer form has no prefix: --form text with --prefix");
  if (p.form == FORM_AUTO && (p.prefix != NULL || !p.reverse))
    p.form = p.prefix != NULL ? FORM_TEXT : FORM_INT;
  if (p.version != 0 && p.form == FORM_TEXT && !p.reverse)
    cli_fail(EXIT_USAGE, "public: --key-version is for the integer form: a text form is made "
                         "with the newest version and names it");
  const char *opt = "--public-key";
  if (key == NULL) {
    key = getenv(IDGEN_PUBLIC_KEY_ENV);
    opt = IDGEN_PUBLIC_KEY_ENV;
  }
  if (key == NULL || key[0] == '\0')
    cli_fail(EXIT_USAGE,
             "public: no key: --public-key FILE or %s=FILE (a key file: 'idgen "
             "public --new-key FILE')",
             IDGEN_PUBLIC_KEY_ENV);
  p.keys = cli_public_keys(opt, key);
  codec(&p, p.kind ? p.kind : IDGEN_PUBLIC_SNOWFLAKE); /* the version and prefix checked now */

  if (optind == argc)
    from_stdin(&p);
  for (int i = optind; i < argc; i++) {
    if (strcmp(argv[i], "-") == 0)
      from_stdin(&p);
    else
      one(&p, argv[i], strlen(argv[i]));
    if (ferror(stdout))
      cli_finish_output();
  }
  for (int k = 1; k <= 3; k++)
    idgen_public_free(p.codec[k]);
  idgen_public_keys_free(p.keys);
  return p.bad ? EXIT_ID : EXIT_OK;
}
