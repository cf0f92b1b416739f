/*
 * cmd_decode.c -- `idgen decode`: read IDs back into their parts.
 *
 * The kind is recognised by form (SPEC section 6): 26 characters is a ULID,
 * a 36-character UUID (optionally behind "urn:uuid:") or 32 hex digits is a
 * UUID, 1 to 20 decimal digits is a Snowflake ID in --layout.  With
 * --lenient, hyphens are removed first.  Each input is decoded on its own: a
 * bad one is reported and the rest still decoded; the exit status is 1 if
 * any failed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static const char usage[] =
    "Usage: idgen decode [--layout L] [--lenient] [--json] ID...\n"
    "\n"
    "Show what an ID holds: its time, and for a Snowflake ID its node fields and\n"
    "sequence.  The kind is recognised by its form:\n"
    "  1 to 20 decimal digits           a Snowflake ID in --layout\n"
    "  26 characters                    a ULID\n"
    "  36-character UUID, urn:uuid:..., or 32 hex digits   a UUID\n"
    "An ID of \"-\" reads IDs from standard input, one per line.\n"
    "\n"
    "  -l, --layout L   the layout of Snowflake IDs (default twitter)\n"
    "      --lenient    remove hyphens first; for ULIDs also read I and L as 1, O as 0\n"
    "      --json       one JSON object per ID, 64-bit values as strings\n"
    "  -h, --help       show this help\n"
    "\n"
    "Example:\n"
    "  idgen decode 910499571847892992\n"
    "\n"
    "Exit status: 0 all decoded, 1 some input is not a valid ID, 2 bad usage.\n";

enum kind { KIND_SNOWFLAKE, KIND_ULID, KIND_UUID, KIND_UNKNOWN };

/* Recognises the kind of s[0..len) by its form alone.  36 or 32 characters
 * (after an optional "urn:uuid:") go to the UUID parser even when they are
 * not all hex, so that its message names the bad character and where. */
static enum kind classify(const char *s, size_t len) {
  if (len >= 1 && len <= 20 && strspn(s, "0123456789") == len)
    return KIND_SNOWFLAKE;
  if (len == 26)
    return KIND_ULID;
  if (len > 9 && strncasecmp(s, "urn:uuid:", 9) == 0)
    return KIND_UUID;
  if (len == 36 || len == 32)
    return KIND_UUID;
  return KIND_UNKNOWN;
}

struct decode_ctx {
  idgen_layout_t layout;
  int json;
  int lenient;
  int printed;
};

static void print_json(json_t *o) {
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  if (text == NULL)
    cli_fail(EXIT_ID, "out of memory");
  puts(text);
  free(text);
}

static int decode_snowflake(struct decode_ctx *c, const char *s, size_t len) {
  const idgen_layout_t *l = &c->layout;
  char err[256], tbuf[IDGEN_TIME_BUFSIZE], lbuf[IDGEN_LAYOUT_SPEC_MAX], idbuf[24];
  uint64_t id, values[IDGEN_LAYOUT_MAX_FIELDS];
  int64_t unix_ms;

  if (idgen_snowflake_parse(l, s, len, &id, err, sizeof err) < 0) {
    cli_error("%s", err);
    return EXIT_ID;
  }
  idgen_layout_decompose(l, id, values, &unix_ms);
  idgen_time_format(unix_ms, tbuf);
  snprintf(idbuf, sizeof idbuf, "%" PRIu64, id);
  const char *lname = cli_layout_name(l, lbuf, sizeof lbuf);

  if (c->json) {
    json_t *o = json_object(), *f = json_object();
    json_object_set_new(o, "id", json_string(idbuf));
    json_object_set_new(o, "kind", json_string("snowflake"));
    json_object_set_new(o, "layout", json_string(lname));
    json_object_set_new(o, "unix_ms", json_integer(unix_ms));
    json_object_set_new(o, "time", json_string(tbuf));
    for (int i = 0; i < l->nfields; i++)
      if (i != l->time_index)
        json_object_set_new(f, l->fields[i].name, json_integer((json_int_t)values[i]));
    json_object_set_new(o, "fields", f);
    print_json(o);
    json_decref(o);
    return EXIT_OK;
  }
  int w = 7; /* width of "unix_ms" */
  for (int i = 0; i < l->nfields; i++)
    if ((int)strlen(l->fields[i].name) > w)
      w = (int)strlen(l->fields[i].name);
  if (c->printed++)
    putchar('\n');
  printf("%-*s %s\n%-*s snowflake\n%-*s %s\n%-*s %" PRId64 "\n%-*s %s\n", w, "id", idbuf, w,
         "kind", w, "layout", lname, w, "unix_ms", unix_ms, w, "time", tbuf);
  for (int i = 0; i < l->nfields; i++)
    if (i != l->time_index)
      printf("%-*s %" PRIu64 "\n", w, l->fields[i].name, values[i]);
  return EXIT_OK;
}

/* Prints `names`/`values` pairs as aligned "name value" lines. */
static void print_lines(struct decode_ctx *c, const char *const *names, const char *const *vals,
                        int n) {
  if (c->printed++)
    putchar('\n');
  for (int i = 0; i < n; i++)
    printf("%-7s %s\n", names[i], vals[i]);
}

static int decode_ulid(struct decode_ctx *c, const char *s, size_t len) {
  idgen_ulid_t u;
  idgen_uuid_t uu;
  char err[256], text[IDGEN_ULID_STRLEN + 1], uuid[IDGEN_UUID_STRLEN + 1], tbuf[IDGEN_TIME_BUFSIZE];
  char msbuf[24];
  if (idgen_ulid_decode(&u, s, len, c->lenient ? IDGEN_ULID_LENIENT : IDGEN_ULID_STRICT, err,
                        sizeof err) < 0) {
    cli_error("\"%.*s\": %s", (int)len, s, err);
    return EXIT_ID;
  }
  idgen_ulid_encode(&u, text);
  idgen_ulid_to_uuid(&u, &uu);
  idgen_uuid_format(&uu, uuid);
  int64_t ms = idgen_ulid_time(&u);
  idgen_time_format(ms, tbuf);
  if (c->json) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(text));
    json_object_set_new(o, "kind", json_string("ulid"));
    json_object_set_new(o, "unix_ms", json_integer(ms));
    json_object_set_new(o, "time", json_string(tbuf));
    json_object_set_new(o, "uuid", json_string(uuid));
    print_json(o);
    json_decref(o);
    return EXIT_OK;
  }
  snprintf(msbuf, sizeof msbuf, "%" PRId64, ms);
  const char *names[] = {"id", "kind", "unix_ms", "time", "uuid"};
  const char *vals[] = {text, "ulid", msbuf, tbuf, uuid};
  print_lines(c, names, vals, 5);
  return EXIT_OK;
}

/* Gregorian 100-ns ticks (UUID versions 1 and 6) from 1582-10-15 to 1970. */
#define GREGORIAN_OFFSET INT64_C(122192928000000000)

/* The time a UUID carries, if its version carries one: 1 and *ms, else 0. */
static int uuid_time(const idgen_uuid_t *u, int64_t *ms) {
  const uint8_t *b = u->bytes;
  uint64_t w0 = (uint64_t)b[0] << 24 | (uint64_t)b[1] << 16 | (uint64_t)b[2] << 8 | b[3];
  uint64_t w1 = (uint64_t)b[4] << 8 | b[5], w2 = ((uint64_t)b[6] << 8 | b[7]) & 0x0fff, ts;
  if (!idgen_uuid_is_rfc_variant(u))
    return 0;
  switch (idgen_uuid_version(u)) {
  case 7:
    *ms = idgen_uuid7_time(u);
    return 1;
  case 1:
    ts = w2 << 48 | w1 << 32 | w0;
    break;
  case 6:
    ts = w0 << 28 | w1 << 12 | w2;
    break;
  default:
    return 0;
  }
  int64_t d = (int64_t)ts - GREGORIAN_OFFSET;
  *ms = d >= 0 ? d / 10000 : -((-d + 9999) / 10000);
  return 1;
}

static const char *uuid_variant(const idgen_uuid_t *u) {
  uint8_t v = u->bytes[8];
  if ((v & 0x80) == 0)
    return "ncs";
  if ((v & 0xc0) == 0x80)
    return "rfc9562";
  return (v & 0xe0) == 0xc0 ? "microsoft" : "future";
}

static int decode_uuid(struct decode_ctx *c, const char *s, size_t len) {
  idgen_uuid_t u;
  char err[256], text[IDGEN_UUID_STRLEN + 1], tbuf[IDGEN_TIME_BUFSIZE], msbuf[24], vbuf[8];
  int64_t ms = 0;
  if (idgen_uuid_parse(&u, s, len, err, sizeof err) < 0) {
    cli_error("\"%.*s\": %s", (int)(len > 64 ? 64 : len), s, err);
    return EXIT_ID;
  }
  idgen_uuid_format(&u, text);
  int has_time = uuid_time(&u, &ms);
  if (has_time)
    idgen_time_format(ms, tbuf);
  if (c->json) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(text));
    json_object_set_new(o, "kind", json_string("uuid"));
    json_object_set_new(o, "version", json_integer(idgen_uuid_version(&u)));
    if (!idgen_uuid_is_rfc_variant(&u))
      json_object_set_new(o, "variant", json_string(uuid_variant(&u)));
    if (has_time) {
      json_object_set_new(o, "unix_ms", json_integer(ms));
      json_object_set_new(o, "time", json_string(tbuf));
    }
    print_json(o);
    json_decref(o);
    return EXIT_OK;
  }
  snprintf(vbuf, sizeof vbuf, "%d", idgen_uuid_version(&u));
  snprintf(msbuf, sizeof msbuf, "%" PRId64, ms);
  const char *names[] = {"id", "kind", "version", "variant", "unix_ms", "time"};
  const char *vals[] = {text, "uuid", vbuf, uuid_variant(&u), msbuf, tbuf};
  print_lines(c, names, vals, has_time ? 6 : 4);
  return EXIT_OK;
}

static int decode_one(struct decode_ctx *c, const char *in) {
  char buf[128];
  size_t len = strlen(in);
  const char *s = in;
  if (c->lenient) {
    if (len >= sizeof buf) {
      cli_error("not an ID: \"%.40s...\" is %zu characters long", in, len);
      return EXIT_ID;
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++)
      if (in[i] != '-')
        buf[o++] = in[i];
    buf[o] = '\0';
    s = buf;
    len = o;
  }
  switch (classify(s, len)) {
  case KIND_SNOWFLAKE:
    return decode_snowflake(c, s, len);
  case KIND_ULID:
    /* The ULID decoder skips hyphens itself, so its positions match the input. */
    return decode_ulid(c, in, strlen(in));
  case KIND_UUID:
    return decode_uuid(c, s, len);
  default:
    if (len == 0)
      cli_error("not an ID: empty input");
    else if (len > 20 && strspn(s, "0123456789") == len)
      cli_error("not an ID: \"%.*s\" has %zu digits; a 64-bit ID has at most 20",
                (int)(len > 40 ? 40 : len), s, len);
    else /* quote the input as given, hyphens and all */
      cli_error("not an ID: \"%.*s\" is %zu characters (expected 1 to 20 decimal digits, a "
                "26-character ULID, or a UUID of 36 characters or 32 hex digits)",
                (int)(strlen(in) > 64 ? 64 : strlen(in)), in, len);
    return EXIT_ID;
  }
}

static int decode_stdin(struct decode_ctx *c) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = EXIT_OK;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    while (n > 0 && strchr("\n\r \t", line[n - 1]) != NULL)
      line[--n] = '\0';
    char *id = line + strspn(line, " \t");
    if (*id == '\0')
      continue;
    if (decode_one(c, id) != EXIT_OK)
      rc = EXIT_ID;
  }
  free(line);
  return rc;
}

int cmd_decode(int argc, char **argv) {
  static const struct option opts[] = {{"layout", required_argument, 0, 'l'},
                                       {"lenient", no_argument, 0, 'L'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  struct decode_ctx c = {0};
  const char *layout_spec = "twitter";
  int opt;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":l:h", opts, NULL)) != -1) {
    switch (opt) {
    case 'l':
      layout_spec = optarg;
      break;
    case 'L':
      c.lenient = 1;
      break;
    case 'j':
      c.json = 1;
      break;
    case 'h':
      fputs(usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("decode", opt, argv[optind - 1]);
    }
  }
  cli_layout(&c.layout, layout_spec);
  if (optind >= argc)
    cli_fail(EXIT_USAGE, "decode needs at least one ID, or - to read them from standard input");
  int rc = EXIT_OK;
  for (int i = optind; i < argc; i++) {
    int r = strcmp(argv[i], "-") == 0 ? decode_stdin(&c) : decode_one(&c, argv[i]);
    if (r != EXIT_OK)
      rc = r;
  }
  return rc;
}
