/*
 * cmd_decode.c -- `idgen decode`: read IDs back into their parts.
 *
 * The kind is recognised by form (DESIGN §4): 26 characters is a ULID,
 * a 36-character UUID (optionally behind "urn:uuid:") or 32 hex digits is a
 * UUID, 1 to 20 decimal digits is a Snowflake ID in --layout.  With
 * --lenient, hyphens are removed first.  Each input is decoded on its own: a
 * bad one is reported and the rest still decoded; the exit status is 1 if
 * any failed.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "decode.h"

static const char usage[] =
    "Usage: idgen decode [--layout L] [--lenient] [--json | --format baidu] ID...\n"
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
    "      --format F   text (the default), json (--json), or baidu: a Snowflake ID\n"
    "                   printed as Baidu uid-generator's parseUID() prints a UID:\n"
    "                   {\"UID\":\"...\",\"timestamp\":\"yyyy-MM-dd HH:mm:ss\",\n"
    "                   \"workerId\":\"...\",\"sequence\":\"...\"}, the time in the local\n"
    "                   time zone (TZ) as the JVM's default, workerId the bits between\n"
    "                   the time and the sequence fields\n"
    "  -h, --help       show this help\n"
    "\n"
    "Examples:\n"
    "  idgen decode 910499571847892992\n"
    "  TZ=Asia/Shanghai idgen decode --format baidu \\\n"
    "    --layout 'time:29@1s,worker:21,sequence:13,epoch=1474300800000' 5980790000172826624\n"
    "\n"
    "Exit status: 0 all decoded, 1 some input is not a valid ID, 2 bad usage.\n";

struct decode_ctx {
  idgen_layout_t layout;
  int json;
  int baidu;
  int lenient;
  int printed;
};

/* Prints `names`/`values` pairs as "name value" lines aligned at width w. */
static void print_lines(struct decode_ctx *c, const char *const *names, const char *const *vals,
                        int n, int w) {
  if (c->printed++)
    putchar('\n');
  for (int i = 0; i < n; i++)
    printf("%-*s %s\n", w, names[i], vals[i]);
}

static void print_text(struct decode_ctx *c, const decoded_t *d) {
  char msbuf[24], vbuf[8];
  snprintf(msbuf, sizeof msbuf, "%" PRId64, d->unix_ms);
  if (d->kind == DECODED_ULID) {
    const char *names[] = {"id", "kind", "unix_ms", "time", "uuid"};
    const char *vals[] = {d->id, "ulid", msbuf, d->time, d->uuid};
    print_lines(c, names, vals, 5, 7);
  } else if (d->kind == DECODED_UUID) {
    snprintf(vbuf, sizeof vbuf, "%d", d->version);
    const char *names[] = {"id", "kind", "version", "variant", "unix_ms", "time"};
    const char *vals[] = {d->id, "uuid", vbuf, d->variant, msbuf, d->time};
    print_lines(c, names, vals, d->has_time ? 6 : 4, 7);
  } else {
    const idgen_layout_t *l = d->layout;
    int w = 7; /* width of "unix_ms" */
    for (int i = 0; i < l->nfields; i++)
      if ((int)strlen(l->fields[i].name) > w)
        w = (int)strlen(l->fields[i].name);
    const char *names[] = {"id", "kind", "layout", "unix_ms", "time"};
    const char *vals[] = {d->id, "snowflake", d->layout_name, msbuf, d->time};
    print_lines(c, names, vals, 5, w);
    for (int i = 0; i < l->nfields; i++)
      if (i != l->time_index)
        printf("%-*s %" PRIu64 "\n", w, l->fields[i].name, d->values[i]);
  }
}

/* Baidu's parseUID(): {"UID":"%d","timestamp":"%s","workerId":"%d",
 * "sequence":"%d"}, the time formatted "yyyy-MM-dd HH:mm:ss" in the JVM's
 * default (local) time zone, workerId the bits between the time field and
 * the sequence field (its formula: (uid << (timestampBits + signBits)) >>>
 * (totalBits - workerIdBits)). */
static void print_baidu(const decoded_t *d) {
  const idgen_layout_t *l = d->layout;
  const idgen_field_t *tf = &l->fields[l->time_index], *sf = &l->fields[l->sequence_index];
  unsigned lo = sf->shift + sf->bits, hi = tf->shift;
  uint64_t id = strtoull(d->id, NULL, 10);
  uint64_t worker = hi > lo ? (id >> lo) & ((hi - lo == 64 ? 0 : UINT64_C(1) << (hi - lo)) - 1) : 0;
  time_t secs = (time_t)(d->unix_ms >= 0 ? d->unix_ms / 1000 : (d->unix_ms - 999) / 1000);
  struct tm tm;
  char when[32] = "";
  if (localtime_r(&secs, &tm) != NULL)
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
  printf("{\"UID\":\"%s\",\"timestamp\":\"%s\",\"workerId\":\"%" PRIu64 "\",\"sequence\":\"%" PRIu64
         "\"}\n",
         d->id, when, worker, d->values[l->sequence_index]);
}

/* Decodes in[0..len): an argument, or a line of standard input, which may
 * hold a NUL byte (decoded, and quoted in the error, as any other byte). */
static int decode_one(struct decode_ctx *c, const char *in, size_t len) {
  decoded_t d;
  char err[512];
  if (decode_id(&c->layout, in, len, c->lenient, &d, err, sizeof err) < 0) {
    cli_error("%s", err);
    return EXIT_ID;
  }
  if (c->baidu) {
    if (d.kind != DECODED_SNOWFLAKE) {
      cli_error("--format baidu: \"%s\" is not a Snowflake ID", d.id);
      return EXIT_ID;
    }
    print_baidu(&d);
    return EXIT_OK;
  }
  if (!c->json) {
    print_text(c, &d);
    return EXIT_OK;
  }
  char text[DECODE_JSON_MAX];
  if (decode_json(&d, text, sizeof text) < 0)
    cli_fail(EXIT_ID, "%s: the JSON does not fit", d.id); /* DECODE_JSON_MAX holds any */
  puts(text);
  return EXIT_OK;
}

static int decode_stdin(struct decode_ctx *c) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int rc = EXIT_OK;
  while ((n = getline(&line, &cap, stdin)) >= 0) {
    while (n > 0 && line[n - 1] != '\0' && strchr("\n\r \t", line[n - 1]) != NULL)
      line[--n] = '\0';
    size_t skip = strspn(line, " \t");
    if ((size_t)n == skip)
      continue;
    if (decode_one(c, line + skip, (size_t)n - skip) != EXIT_OK)
      rc = EXIT_ID;
  }
  free(line);
  return rc;
}

int cmd_decode(int argc, char **argv) {
  static const struct option opts[] = {
      {"layout", required_argument, 0, 'l'}, {"lenient", no_argument, 0, 'L'},
      {"json", no_argument, 0, 'j'},         {"format", required_argument, 0, 'f'},
      {"help", no_argument, 0, 'h'},         {0, 0, 0, 0}};
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
    case 'f':
      if (strcmp(optarg, "baidu") == 0)
        c.baidu = 1;
      else if (strcmp(optarg, "json") == 0)
        c.json = 1;
      else if (strcmp(optarg, "text") != 0)
        cli_fail(EXIT_USAGE, "--format: \"%s\" is not text, json or baidu", CLI_QUOTED(optarg));
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
    int r = strcmp(argv[i], "-") == 0 ? decode_stdin(&c) : decode_one(&c, argv[i], strlen(argv[i]));
    if (r != EXIT_OK)
      rc = r;
  }
  return rc;
}
