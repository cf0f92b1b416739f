/*
 * cmd_seq.c -- `idgen seq`: dense numbers (and business numbers) from a
 * registry's sequence counters; `idgen seq list` and `idgen seq set`.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "settings.h"

static const char usage_head[] =
    "Usage: idgen seq NAME [-n N] [--format TEMPLATE] [--tz ZONE] [--strict]\n"
    "                 [--json] [--registry URI] [--space NAME] [SETTINGS]\n"
    "       idgen seq list [--registry URI] [--space NAME] [--json]\n"
    "       idgen seq set NAME VALUE [--registry URI] [--space NAME]\n"
    "\n"
    "Take N numbers from sequence NAME, one per line: dense, increasing numbers\n"
    "from a counter in the registry (created at 1 on first use), each issued once\n"
    "whatever the processes and machines that share the registry.  The run claims\n"
    "one range of at least N numbers, prints them, and gives back what it did not\n"
    "print (when nobody claimed after it), so consecutive runs continue where the\n"
    "last one stopped.  NAME is [a-z][a-z0-9_-]{0,63} and comes first.\n"
    "\n"
    "With --format the numbers become business numbers: TEMPLATE is literal text,\n"
    "one {seq:0N} (at least N digits) or {seq}, and {date:STRFTIME} fields (%Y %y\n"
    "%m %d %j %H %M %G %V %u %%) rendered in --tz; with a date field the counter\n"
    "restarts each period (the finest unit the template names: a year, a month,\n"
    "a day...), as counter NAME@PERIOD.\n"
    "\n"
    "  list    each counter of the registry's space (every space without --space):\n"
    "          its key, the next number nobody claimed, the numbers claimed,\n"
    "          issued, given back and lost (ranges of holders that died), and its\n"
    "          holders: name, fencing generation, last range, when the entry\n"
    "          expires, the rate reported, and how long the numbers in hand last\n"
    "          at that rate\n"
    "  set     move counter NAME (or NAME@PERIOD) forward so that the next number\n"
    "          claimed is VALUE: forward only (a counter never goes back, or a\n"
    "          number could be issued twice)\n"
    "\n"
    "  -n, --count N              how many numbers (default 1, at most " IDGEN_STR(
        CLI_COUNT_MAX) ")\n"
                       "      --format TEMPLATE      business numbers (as --seq-format NAME=TEMPLATE)\n"
                       "      --tz ZONE              the template's time zone (as --seq-tz ZONE)\n"
                       "      --strict               one holder at a time (as --seq-strict NAME)\n"
                       "      --json                 print one JSON object: {\"sequence\":NAME,\n"
                       "                             \"numbers\":[...]} (and \"texts\" with "
                       "--format)\n"
                       "  -h, --help                 show this help\n"
                       "\n"
                       "Settings:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  idgen seq orders -n 3\n"
    "  idgen seq invoices --format 'INV-{date:%Y}-{seq:06}' --tz Europe/Paris\n"
    "  idgen seq orders --registry postgres://idgen@db/idgen --space billing\n"
    "  idgen seq list --json\n"
    "  idgen seq set orders 100000\n"
    "\n"
    "Exit status: 0 success, 1 the registry failed or refused (unreachable, a\n"
    "strict sequence held elsewhere, a counter that would go back), 2 bad usage.\n";

static void usage(void *ctx) {
  (void)ctx;
  fputs(usage_head, stdout);
  settings_usage(SETTINGS_SEQ, stdout);
  fputs(usage_tail, stdout);
}

enum { OPT_FORMAT = CLI_OPT_JSON + 1, OPT_TZ, OPT_STRICT };

struct own {
  const char *name;
  cli_count_t count;
};

static int on_option(settings_t *s, void *ctx, int opt, const char *arg) {
  struct own *o = ctx;
  char *v;
  if (cli_count_option(&o->count, opt, arg))
    return 0;
  switch (opt) {
  case OPT_FORMAT:
    if ((v = malloc(strlen(o->name) + strlen(arg) + 2)) == NULL)
      cli_fail(EXIT_ID, "out of memory");
    sprintf(v, "%s=%s", o->name, arg);
    settings_flag(s, SK_SEQ_FORMAT, v, "--format");
    free(v);
    return 0;
  case OPT_TZ:
    settings_flag(s, SK_SEQ_TZ, arg, "--tz");
    return 0;
  case OPT_STRICT:
    settings_flag(s, SK_SEQ_STRICT, o->name, "--strict");
    return 0;
  default:
    return 2;
  }
}

/* Prints what was taken so far (JSON: the whole object at the end). */
static void put_one(struct own *o, json_t *nums, json_t *texts, uint64_t v, const char *text) {
  if (o->count.json) {
    json_array_append_new(nums, json_integer((json_int_t)v));
    if (text != NULL)
      json_array_append_new(texts, json_string(text));
  } else if (text != NULL) {
    fputs(text, stdout);
    fputc('\n', stdout);
  } else {
    cli_put_u64_line(v);
  }
}

static int run_take(settings_t *set, struct own *o) {
  idgen_seq_settings_t ss;
  char tmpl[1100];
  settings_seq_for(set, o->name, &ss, tmpl, sizeof tmpl);
  ss.no_thread = 1; /* a one-shot tool: claims run here */
  uint64_t n = (uint64_t)o->count.n;
  ss.step = n > ss.min_step ? n : ss.min_step; /* one claim serves the run */
  if (ss.step > ss.max_step)
    ss.step = ss.max_step;
  idgen_registry_t *r = cli_registry_open("seq", set->registry, NULL);
  idgen_seq_t *q;
  char err[1100] = "";
  int rc = idgen_seq_open(&q, r, o->name, &ss, err, sizeof err);
  if (rc < 0) {
    idgen_registry_close(r);
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  }
  json_t *nums = o->count.json ? json_array() : NULL,
         *texts = o->count.json && ss.format ? json_array() : NULL;
  char text[1024];
  uint64_t batch[4096];
  for (uint64_t done = 0; rc >= 0 && done < n;) {
    if (ss.format != NULL) {
      uint64_t v;
      rc = idgen_seq_next_text(q, text, sizeof text, &v);
      if (rc >= 0) {
        put_one(o, nums, texts, v, text);
        done++;
      }
      continue;
    }
    size_t k = n - done < 4096 ? (size_t)(n - done) : 4096;
    rc = idgen_seq_next_n(q, batch, k);
    for (size_t i = 0; rc >= 0 && i < k; i++)
      put_one(o, nums, texts, batch[i], NULL);
    done += rc >= 0 ? k : 0;
  }
  if (rc < 0) {
    idgen_seq_stats_t st;
    idgen_seq_stats(q, &st);
    cli_flush();
    idgen_seq_close(q);
    idgen_registry_close(r);
    json_decref(nums);
    json_decref(texts);
    cli_fail(EXIT_ID, "seq: %s: cannot take a number: %s%s%s", o->name, idgen_strerror(rc),
             st.reason[0] ? ": " : "", st.reason);
  }
  cli_flush();
  idgen_seq_close(q); /* gives back the rest of the range */
  idgen_registry_close(r);
  if (o->count.json) {
    json_t *obj = json_pack("{s:s, s:o}", "sequence", o->name, "numbers", nums);
    if (texts != NULL)
      json_object_set_new(obj, "texts", texts);
    char *txt = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(obj);
    if (txt == NULL)
      cli_fail(EXIT_ID, "out of memory");
    puts(txt);
    free(txt);
  }
  return EXIT_OK;
}

/* "8.4s", or "-". */
static const char *secs(int64_t ms, char *buf, size_t n) {
  if (ms < 0)
    return "-";
  snprintf(buf, n, "%.1fs", (double)ms / 1000.0);
  return buf;
}

/* How long a holder's numbers in hand last at its reported rate: -1 when
 * it reports none or its entry expired. */
static int64_t holder_lasts_ms(const idgen_seq_holder_row_t *h) {
  if (h->expires_in_ms <= 0 || h->rate <= 0.0 || h->claimed < h->issued)
    return -1;
  return (int64_t)((double)(h->claimed - h->issued) / h->rate * 1000.0);
}

typedef struct lister {
  int json;
  const char *uri;
  int rows;
} lister_t;

static json_t *holder_json(const idgen_seq_holder_row_t *h) {
  int64_t lasts = holder_lasts_ms(h);
  return json_pack("{s:s, s:I, s:[I,I], s:I, s:I, s:f, s:I, s:b, s:o}", "holder", h->holder,
                   "generation", (json_int_t)h->generation, "range", (json_int_t)h->lo,
                   (json_int_t)h->hi, "claimed", (json_int_t)h->claimed, "issued",
                   (json_int_t)h->issued, "rate", h->rate, "expires_in_ms",
                   (json_int_t)h->expires_in_ms, "owner", h->owner, "lasts_ms",
                   lasts >= 0 ? json_integer(lasts) : json_null());
}

static int print_row(void *ctx, const idgen_seq_row_t *row) {
  lister_t *ls = ctx;
  ls->rows++;
  if (ls->json) {
    json_t *hs = json_array();
    for (int i = 0; i < row->nholders && i < IDGEN_SEQ_HOLDERS_MAX; i++)
      json_array_append_new(hs, holder_json(&row->holders[i]));
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "registry", ls->uri,
                  "space", row->space, "key", row->key, "next", (json_int_t)row->next, "generation",
                  (json_int_t)row->generation, "claimed", (json_int_t)row->claimed, "issued",
                  (json_int_t)row->issued, "given_back", (json_int_t)row->given_back, "lost",
                  (json_int_t)row->lost, "strict", row->strict, "holders", hs);
    char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (txt == NULL)
      cli_fail(EXIT_ID, "out of memory");
    puts(txt);
    free(txt);
    return 0;
  }
  char a[32], b[32], c[32], d[32];
  printf("\nsequence %s (space %s)%s\n  next       %s\n", row->key, row->space,
         row->strict ? " strict" : "", cli_thousands(row->next, a, sizeof a));
  printf("  claimed    %s, issued %s, given back %s, lost %s\n",
         cli_thousands(row->claimed, a, sizeof a), cli_thousands(row->issued, b, sizeof b),
         cli_thousands(row->given_back, c, sizeof c), cli_thousands(row->lost, d, sizeof d));
  if (row->nholders == 0) {
    printf("  holders    none\n");
    return 0;
  }
  printf("  %-40s %6s %-27s %10s %10s %10s\n", "HOLDER", "GEN", "RANGE", "EXPIRES IN", "RATE/S",
         "LASTS");
  for (int i = 0; i < row->nholders && i < IDGEN_SEQ_HOLDERS_MAX; i++) {
    const idgen_seq_holder_row_t *h = &row->holders[i];
    char range[64], rate[32];
    snprintf(range, sizeof range, "%" PRIu64 "..%" PRIu64, h->lo, h->hi);
    snprintf(rate, sizeof rate, "%.1f", h->rate);
    printf("  %-40s %6" PRIu64 " %-27s %10s %10s %10s%s\n", h->holder, h->generation, range,
           h->expires_in_ms > 0 ? secs(h->expires_in_ms, a, sizeof a) : "expired", rate,
           secs(holder_lasts_ms(h), b, sizeof b), h->owner ? " (owner)" : "");
  }
  return 0;
}

/* list and set: their own options (the registry and the space). */
static int run_admin(int argc, char **argv) {
  static const struct option opts[] = {{"registry", required_argument, 0, 'r'},
                                       {"space", required_argument, 0, 's'},
                                       {"json", no_argument, 0, 'j'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *uri = NULL, *space = NULL, *sub = argv[0];
  int json = 0, c, is_list = strcmp(sub, "list") == 0;
  char cmd[16];
  snprintf(cmd, sizeof cmd, "seq %s", sub);
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":r:h", opts, NULL)) != -1) {
    switch (c) {
    case 'r':
      uri = optarg;
      break;
    case 's':
      space = optarg;
      break;
    case 'j':
      json = 1;
      break;
    case 'h':
      usage(NULL);
      return EXIT_OK;
    default:
      cli_bad_option("seq", c == ':' ? ':' : '?', argv[optind - 1]);
    }
  }
  if (is_list && optind < argc)
    cli_fail(EXIT_USAGE, "seq list: unexpected argument \"%s\"", CLI_QUOTED(argv[optind]));
  if (!is_list && argc - optind != 2)
    cli_fail(EXIT_USAGE, "seq set: needs NAME and VALUE (see 'idgen seq --help')");
  if (!is_list && json)
    cli_fail(EXIT_USAGE, "seq set: --json is for list");
  char err[1100] = "";
  uint64_t value = 0;
  const char *key = NULL;
  if (!is_list) {
    key = argv[optind];
    char name[IDGEN_SEQ_KEY_MAX];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(key, "@"), key);
    if (strlen(key) >= IDGEN_SEQ_KEY_MAX || idgen_seq_name_check(name, err, sizeof err) < 0)
      cli_fail(EXIT_USAGE, "seq set: %s", err[0] ? err : "the key is too long");
    value = (uint64_t)cli_int("VALUE", argv[optind + 1], 1, (int64_t)IDGEN_SEQ_COUNTER_MAX);
  }
  idgen_registry_t *r = cli_registry_open(cmd, uri, space);
  int rc;
  if (is_list) {
    lister_t ls = {json, idgen_registry_uri(r), 0};
    if (!json)
      printf("registry %s\n", ls.uri);
    rc = idgen_seq_list(r, print_row, &ls, err, sizeof err);
    if (rc == 0 && !json && ls.rows == 0)
      printf("\nno sequences\n");
  } else {
    rc = idgen_seq_set(r, key, value, err, sizeof err);
    if (rc == 0)
      printf("%s: the next number is %" PRIu64 "\n", key, value);
  }
  idgen_registry_close(r);
  if (rc < 0)
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  return EXIT_OK;
}

int cmd_seq(int argc, char **argv) {
  if (argc < 2)
    cli_fail(EXIT_USAGE, "seq: say a sequence NAME, list or set (see 'idgen seq --help')");
  const char *first = argv[1];
  if (strcmp(first, "list") == 0 || strcmp(first, "set") == 0)
    return run_admin(argc - 1, argv + 1);
  struct own own = {first, {1, 0}};
  if (first[0] == '-') { /* --help, or options before the name */
    if (strcmp(first, "-h") != 0 && strcmp(first, "--help") != 0)
      cli_fail(EXIT_USAGE, "seq: the sequence NAME comes first: idgen seq NAME [OPTIONS] (see "
                           "'idgen seq --help')");
    usage(NULL);
    return EXIT_OK;
  }
  char err[300];
  if (idgen_seq_name_check(first, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "seq: %s", err);
  static const struct option extra[] = {
      {"count", required_argument, 0, 'n'},         {"json", no_argument, 0, CLI_OPT_JSON},
      {"format", required_argument, 0, OPT_FORMAT}, {"tz", required_argument, 0, OPT_TZ},
      {"strict", no_argument, 0, OPT_STRICT},       {0, 0, 0, 0}};
  const settings_spec_t spec = {SETTINGS_SEQ, "seq", 0, extra, "n:", on_option, NULL, usage, &own};
  settings_t set;
  int rc = settings_load(&set, &spec, argc - 1, argv + 1);
  if (rc != 0) {
    settings_free(&set);
    return rc == 1 ? EXIT_OK : EXIT_USAGE;
  }
  rc = run_take(&set, &own);
  settings_free(&set);
  return rc;
}
