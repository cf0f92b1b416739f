/*
 * cmd_plan.c -- `idgen plan` (what a layout can do, and until when) and
 * `idgen layouts` (the presets).
 */
#include <getopt.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "settings.h"

#define MS_PER_YEAR (365.2425 * 86400000.0)

static const char plan_usage[] =
    "Usage: idgen plan [--layout L] [--rate IDS_PER_S] [--max-borrow-ms N]\n"
    "       idgen plan --seq [--format F] [--tz Z] [--rate N] [--start N]\n"
    "\n"
    "Show a layout's bits, lifetime, the date its time field runs out, and how\n"
    "many IDs per second one node and the whole cluster can make.  With --rate,\n"
    "show how one generator copes with that many IDs per second: within capacity,\n"
    "or for how long borrowing from the future absorbs the burst.\n"
    "\n"
    "With --seq, plan a sequence instead: how long its 63-bit counter lasts at\n"
    "--rate numbers per second and, with a business-number --format, the numbers\n"
    "each period needs at that rate against what the width of {seq:0N} holds: a\n"
    "warning says when in each period the texts would widen.\n"
    "\n"
    "  -l, --layout L        a preset name or a layout spec (default twitter)\n"
    "  -r, --rate N          IDs (or, with --seq, numbers) per second asked of one\n"
    "                        generator; \"N/s\" also\n"
    "      --max-borrow-ms N the generator's borrowing limit (default " IDGEN_STR(
        IDGEN_MAX_BORROW_MS_DEFAULT) ")\n"
                                     "      --seq             plan a sequence (idgen seq)\n"
                                     "      --format F        its business-number template, such as\n"
                                     "                        'ORD{date:%Y%m%d}{seq:06}'\n"
                                     "      --tz Z            the template's time zone, an IANA name (default UTC)\n"
                                     "      --start N         the counter's first number in each period (default 1)\n"
                                     "  -h, --help            show this help\n"
                                     "\n"
                                     "Exit status: 0 for any valid layout (also one that has run out) or\n"
                                     "sequence format, 2 bad usage.\n";

static const char layouts_usage[] =
    "Usage: idgen layouts\n"
    "\n"
    "List the preset layouts: name, spec, and the date each runs out.  A preset\n"
    "name can be used wherever a layout spec can (--layout twitter).\n";

static void show_duration(double ms, char *buf, size_t n) {
  if (ms >= MS_PER_YEAR)
    snprintf(buf, n, "%.1f years", ms / MS_PER_YEAR);
  else if (ms >= 86400000.0)
    snprintf(buf, n, "%.1f days", ms / 86400000.0);
  else if (ms >= 1000.0)
    snprintf(buf, n, "%.1f s", ms / 1000.0);
  else
    snprintf(buf, n, "%.0f ms", ms);
}

/* A count that may be huge or below one: thousands separators when it fits
 * a 64-bit integer and is at least 1, else three significant digits. */
static const char *show_count(double v, char *buf, size_t n) {
  if (v >= 1.0 && v < 1.8e19)
    return cli_thousands((uint64_t)(v + 0.5), buf, n);
  snprintf(buf, n, "%.3g", v);
  return buf;
}

static void show_unit(int64_t unit_ms, char *buf, size_t n) {
  if (unit_ms % 1000 == 0)
    snprintf(buf, n, "%" PRId64 " s", unit_ms / 1000);
  else
    snprintf(buf, n, "%" PRId64 " ms", unit_ms);
}

/* The lines about time: epoch, tick, lifetime, exhaustion, and when IDs
 * reach 2^63. */
static void print_time(const idgen_layout_t *l, const idgen_layout_plan_t *p) {
  char a[64], d[64], tbuf[IDGEN_TIME_TEXT_MAX];
  idgen_time_format(l->epoch_ms, tbuf);
  printf("epoch         %s (%" PRId64 ")\n", tbuf, l->epoch_ms);
  show_unit(l->unit_ms, a, sizeof a);
  printf("tick          %s\n", a);
  show_duration((double)p->lifetime_ms, a, sizeof a);
  show_unit(l->unit_ms, d, sizeof d);
  printf("lifetime      %s (2^%d ticks of %s)\n", a, l->fields[l->time_index].bits, d);
  idgen_time_format(p->horizon_ms, tbuf);
  tbuf[strcspn(tbuf, "T")] = '\0';
  if (p->exhausted) {
    printf("exhaustion    ran out on %s: idgen decodes these IDs but makes no more\n", tbuf);
  } else {
    show_duration((double)p->remaining_ms, a, sizeof a);
    printf("exhaustion    %s (%s from now)\n", tbuf, a);
    if (p->remaining_ms < 5 * MS_PER_YEAR)
      printf("warning       the time field runs out in %s; plan a new layout\n", a);
  }
  if (l->total_bits <= 53)
    printf("range         IDs stay below 2^53: JavaScript numbers hold them exactly\n");
  else if (p->sign_bit_ms == INT64_MIN)
    printf("range         the top bit is %s's: IDs with %s %" PRIu64 " or more are >= 2^63, which "
           "signed 64-bit columns store as negative numbers\n",
           l->fields[0].name, l->fields[0].name, UINT64_C(1) << (l->fields[0].bits - 1));
  else if (p->sign_bit_ms == INT64_MAX)
    printf("range         IDs stay below 2^63: signed 64-bit columns hold them\n");
  else {
    idgen_time_format(p->sign_bit_ms, tbuf);
    printf("range         IDs reach 2^63 from %s: signed 64-bit columns store them "
           "as negative numbers from then on\n",
           tbuf);
  }
}

/* The lines about capacity: per node, nodes, per cluster, and the rate. */
static void print_capacity(const idgen_layout_t *l, const idgen_layout_plan_t *p, int64_t rate,
                           int64_t borrow) {
  char a[64], b[64], d[64];
  printf("per node      %s IDs per tick = %s IDs/s\n", cli_thousands(p->ids_per_tick, a, sizeof a),
         show_count(p->ids_per_s, b, sizeof b));
  if (p->node_bits == 0) {
    printf("nodes         1 (no node fields: one generator per layout)\n");
  } else {
    printf("nodes         %s (", cli_thousands(p->nodes, a, sizeof a));
    for (int i = 0, first = 1; i < l->nfields; i++) {
      if (l->fields[i].kind != IDGEN_FIELD_NODE)
        continue;
      printf("%s%s 0..%" PRIu64, first ? "" : " x ", l->fields[i].name,
             (UINT64_C(1) << l->fields[i].bits) - 1);
      first = 0;
    }
    printf(")\n");
  }
  printf("per cluster   %s IDs/s\n", show_count(p->cluster_ids_per_s, a, sizeof a));
  if (rate <= 0)
    return;
  cli_thousands((uint64_t)rate, a, sizeof a);
  if (p->sustained) {
    printf("rate          %s IDs/s: %.1f%% of one node's capacity, sustained indefinitely\n", a,
           p->ratio * 100.0);
    return;
  }
  show_duration(p->burst_ms, b, sizeof b);
  char rbuf[32];
  snprintf(rbuf, sizeof rbuf, p->ratio < 1e6 ? "%.2f" : "%.3g", p->ratio);
  printf("rate          %s IDs/s: %s times one node's capacity; borrowing "
         "(max_borrow_ms %" PRId64 ") absorbs a burst of %s, then calls wait for the "
         "clock; %s nodes sustain it\n",
         a, rbuf, borrow, b, show_count(p->nodes_needed, d, sizeof d));
}

/* ---- idgen plan --seq --------------------------------------------------- */

/* A span of seconds in words: "8 min", "3.2 h", "146,235,604 years". */
static void show_span(double sec, char *buf, size_t n) {
  char c[48];
  if (sec >= 1000.0 * MS_PER_YEAR / 1000.0)
    snprintf(buf, n, "%s years", show_count(sec * 1000.0 / MS_PER_YEAR, c, sizeof c));
  else if (sec >= 86400.0)
    show_duration(sec * 1000.0, buf, n);
  else if (sec >= 7200.0)
    snprintf(buf, n, "%.1f h", sec / 3600.0);
  else if (sec >= 120.0)
    snprintf(buf, n, "%.0f min", sec / 60.0);
  else if (sec >= 1.0)
    snprintf(buf, n, "%.0f s", sec);
  else
    snprintf(buf, n, "%.0f ms", sec * 1000.0);
}

/* The period's name from its count per year (the format's finest unit). */
static const char *seq_unit(double per_year) {
  return per_year < 2      ? "year"
         : per_year < 20   ? "month"
         : per_year < 100  ? "week"
         : per_year < 1000 ? "day"
         : per_year < 1e5  ? "hour"
                           : "minute";
}

/* The example texts: the first number, and with a width the last before it
 * widens and the first after. */
static void seq_examples(const idgen_seq_format_t *f, int64_t now, uint64_t start, uint64_t cap) {
  char t1[512], t2[512], t3[512];
  if (idgen_seq_format_render(f, now, start, t1, sizeof t1) < 0)
    return;
  if (cap == 0 || idgen_seq_format_render(f, now, start + cap - 1, t2, sizeof t2) < 0 ||
      idgen_seq_format_render(f, now, start + cap, t3, sizeof t3) < 0)
    printf("example       %s\n", t1);
  else
    printf("example       %s ... %s, then %s\n", t1, t2, t3);
}

/* The width of {seq:0N} against the numbers a period needs at the rate. */
static void seq_width(const idgen_seq_format_t *f, int64_t rate, uint64_t start, uint64_t *cap) {
  char a[64], b[64], c[64], d[64];
  int w = idgen_seq_format_width(f);
  double per_year = idgen_seq_format_periods_per_year(f);
  *cap = 0;
  if (w == 0) {
    printf("width         {seq} has no width: the texts grow with the number\n");
    return;
  }
  uint64_t limit = 1;
  for (int i = 0; i < w; i++)
    limit *= 10;
  *cap = limit > start ? limit - start : 0;
  printf("width         {seq:0%d} holds %s numbers (%s to %s) before the texts widen\n", w,
         cli_thousands(*cap, a, sizeof a), cli_thousands(start, b, sizeof b),
         cli_thousands(limit - 1, c, sizeof c));
  if (rate <= 0)
    return;
  cli_thousands((uint64_t)rate, a, sizeof a);
  if (per_year == 0) {
    show_span((double)*cap / (double)rate, b, sizeof b);
    printf("warning       at %s/s {seq:0%d} widens after %s numbers, in about %s\n", a, w,
           cli_thousands(*cap, c, sizeof c), b);
    return;
  }
  const char *unit = seq_unit(per_year);
  double need = (double)rate * MS_PER_YEAR / 1000.0 / per_year;
  show_count(need, b, sizeof b);
  if (need <= (double)*cap) {
    printf("fits          at %s/s a %s needs %s numbers: %.1f%% of what {seq:0%d} holds\n", a, unit,
           b, 100.0 * need / (double)*cap, w);
    return;
  }
  show_span((double)*cap / (double)rate, d, sizeof d);
  printf("warning       at %s/s a %s needs %s numbers: {seq:0%d} widens after %s, about %s "
         "into each %s\n",
         a, unit, b, w, cli_thousands(*cap, c, sizeof c), d, unit);
}

/* --rate N or N/s. */
static int64_t plan_rate(const char *arg) {
  char buf[32];
  size_t n = strlen(arg);
  if (n > 2 && n < sizeof buf && strcmp(arg + n - 2, "/s") == 0) {
    memcpy(buf, arg, n - 2);
    buf[n - 2] = '\0';
    arg = buf;
  }
  return cli_int("--rate", arg, 1, INT64_MAX / 2);
}

static int plan_seq(const char *format, const char *tz, int64_t rate, int64_t start) {
  char a[64], b[64], c[64], err[256];
  uint64_t total = IDGEN_SEQ_COUNTER_MAX - (uint64_t)start + 1, cap = 0;
  idgen_seq_format_t *f = NULL;
  if (format != NULL && idgen_seq_format_parse(&f, format, tz, err, sizeof err) != 0)
    cli_fail(EXIT_USAGE, "plan: %s", err);
  double per_year = f != NULL ? idgen_seq_format_periods_per_year(f) : 0;
  printf("counter       63 bits: %s numbers, %s to %s\n", cli_thousands(total, a, sizeof a),
         cli_thousands((uint64_t)start, b, sizeof b),
         cli_thousands(IDGEN_SEQ_COUNTER_MAX, c, sizeof c));
  if (rate > 0) {
    show_span((double)total / (double)rate, b, sizeof b);
    printf("rate          %s numbers/s: the counter lasts %s%s\n",
           cli_thousands((uint64_t)rate, a, sizeof a), b,
           per_year > 0 ? " (and restarts each period)" : "");
  }
  if (f == NULL)
    return EXIT_OK;
  int64_t now = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
  printf("format        %s (time zone %s)\n", format, tz != NULL ? tz : "UTC");
  if (per_year > 0) {
    char key[IDGEN_SEQ_KEY_MAX] = "";
    idgen_seq_format_period(f, now, key, sizeof key, NULL);
    printf("period        %s (%.6g a year): each has its own counter, NAME@%s now\n",
           seq_unit(per_year), per_year, key);
  } else {
    printf("period        none: one counter for ever (the format has no date field)\n");
  }
  seq_width(f, rate, (uint64_t)start, &cap);
  seq_examples(f, now, (uint64_t)start, cap);
  idgen_seq_format_free(f);
  return EXIT_OK;
}

int cmd_plan(int argc, char **argv) {
  static const struct option opts[] = {{"layout", required_argument, 0, 'l'},
                                       {"rate", required_argument, 0, 'r'},
                                       {"max-borrow-ms", required_argument, 0, 'b'},
                                       {"seq", no_argument, 0, 'S'},
                                       {"format", required_argument, 0, 'F'},
                                       {"tz", required_argument, 0, 'Z'},
                                       {"start", required_argument, 0, 'T'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *spec = "twitter", *format = NULL, *tz = NULL, *ids_only = NULL, *seq_only = NULL;
  int seq = 0;
  int64_t start = 1;
  /* max_borrow_ms as `idgen snowflake` and `idgen serve` take it */
  const settings_def_t *bd = &settings_defs[SK_MAX_BORROW_MS];
  int64_t rate = 0, borrow;
  settings_parse_int(bd->defval, &borrow);
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":l:r:h", opts, NULL)) != -1) {
    switch (c) {
    case 'l':
      spec = optarg;
      ids_only = "--layout";
      break;
    case 'r':
      rate = plan_rate(optarg);
      break;
    case 'b':
      borrow = cli_int("--max-borrow-ms", optarg, bd->min, bd->max);
      ids_only = "--max-borrow-ms";
      break;
    case 'S':
      seq = 1;
      break;
    case 'F':
      format = optarg;
      seq_only = "--format";
      break;
    case 'Z':
      tz = optarg;
      seq_only = "--tz";
      break;
    case 'T':
      start = cli_int("--start", optarg, 0, INT64_MAX);
      seq_only = "--start";
      break;
    case 'h':
      fputs(plan_usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("plan", c, argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_fail(EXIT_USAGE, "unexpected argument \"%s\" (see 'idgen plan --help')",
             CLI_QUOTED(argv[optind]));
  if (seq && ids_only != NULL)
    cli_fail(EXIT_USAGE, "plan: %s is for IDs, not --seq (see 'idgen plan --help')", ids_only);
  if (!seq && seq_only != NULL)
    cli_fail(EXIT_USAGE, "plan: %s needs --seq (see 'idgen plan --help')", seq_only);
  if (tz != NULL && format == NULL)
    cli_fail(EXIT_USAGE, "plan: --tz is the time zone of a --format");
  if (seq)
    return plan_seq(format, tz, rate, start);

  idgen_layout_t l;
  idgen_layout_plan_t p;
  char fmt[IDGEN_LAYOUT_SPEC_MAX];
  cli_layout(&l, spec);
  int rc = idgen_layout_plan(&l, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), (double)rate,
                             (double)borrow, &p);
  if (rc < 0) /* cannot happen: both were checked above */
    cli_fail(EXIT_USAGE, "plan: %s", idgen_strerror(rc));
  idgen_layout_format(&l, fmt, sizeof fmt);
  printf("layout        %s\n", l.preset[0] ? l.preset : "(custom)");
  printf("spec          %s\n", fmt);
  printf("bits          %d of 64:", l.total_bits);
  for (int i = 0; i < l.nfields; i++)
    printf("%s %s %d", i ? "," : "", l.fields[i].name, l.fields[i].bits);
  putchar('\n');
  print_time(&l, &p);
  print_capacity(&l, &p, rate, borrow);
  return EXIT_OK;
}

int cmd_layouts(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    fputs(layouts_usage, stdout);
    return EXIT_OK;
  }
  if (argc > 1)
    cli_fail(EXIT_USAGE, "layouts takes no arguments (see 'idgen layouts --help')");
  const char *name;
  for (int i = 0; (name = idgen_layout_preset_name(i)) != NULL; i++) {
    idgen_layout_t l;
    char date[IDGEN_TIME_TEXT_MAX];
    cli_layout(&l, name);
    int64_t horizon = idgen_layout_horizon_ms(&l);
    idgen_time_format(horizon, date);
    date[strcspn(date, "T")] = '\0';
    printf("%-10s %-70s %s %s\n", name, idgen_layout_preset_spec(name),
           horizon <= idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) ? "ran out" : "until", date);
  }
  return EXIT_OK;
}
