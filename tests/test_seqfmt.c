/*
 * test_seqfmt.c -- business-number templates (idgen_seq_format_*) and the
 * TZif reader under them: known answers, periods and their ends in time
 * zones (midnight in Asia/Shanghai, DST days in America/New_York), ISO
 * weeks at a year's edge, periods per year, every class of refused
 * template with its message, and the reader's offsets against glibc's
 * localtime_r for several zones (in a forked child with TZ set: the
 * library itself never touches TZ).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "tzif.h"

/* 2026-12-03T10:00:00Z and friends. */
#define MS(y, mo, d, h, mi, s)                                                                     \
  ((((int64_t)days_from_civil(y, mo, d) * 24 + (h)) * 60 + (mi)) * 60000 + (int64_t)(s)*1000)

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static idgen_seq_format_t *parse_ok(const char *tmpl, const char *tz) {
  char err[256] = "";
  idgen_seq_format_t *f = NULL;
  int rc = idgen_seq_format_parse(&f, tmpl, tz, err, sizeof err);
  if (rc != 0)
    fail_msg("parse \"%s\" tz %s: %d %s", tmpl, tz ? tz : "(null)", rc, err);
  return f;
}

static void render_is(const idgen_seq_format_t *f, int64_t ms, uint64_t n, const char *want) {
  char buf[128];
  int len = idgen_seq_format_render(f, ms, n, buf, sizeof buf);
  assert_int_equal(len, (int)strlen(want));
  assert_string_equal(buf, want);
}

static void period_is(const idgen_seq_format_t *f, int64_t ms, const char *key, int64_t end) {
  char buf[64];
  int64_t e = 0;
  assert_int_equal(idgen_seq_format_period(f, ms, buf, sizeof buf, &e), 0);
  assert_string_equal(buf, key);
  if (e != end)
    fail_msg("period %s: end %" PRId64 ", want %" PRId64 " (off by %" PRId64 " s)", key, e, end,
             (e - end) / 1000);
}

static void test_known_answers(void **state) {
  (void)state;
  idgen_seq_format_t *f = parse_ok("ORD{date:%Y%m%d}{seq:06}", NULL);
  int64_t t = MS(2026, 12, 3, 10, 0, 0);
  render_is(f, t, 42, "ORD20261203000042");
  render_is(f, t, 1234567, "ORD202612031234567"); /* widens, never cut */
  render_is(f, t, 999999, "ORD20261203999999");
  render_is(f, t, UINT64_C(9223372036854775807), "ORD202612039223372036854775807");
  period_is(f, t, "20261203", MS(2026, 12, 4, 0, 0, 0));
  assert_int_equal(idgen_seq_format_width(f), 6);
  /* Too small a buffer: IDGEN_ERANGE, whatever fits or not. */
  char small[18];
  assert_int_equal(idgen_seq_format_render(f, t, 42, small, 17), IDGEN_ERANGE);
  assert_int_equal(idgen_seq_format_render(f, t, 42, small, 18), 17);
  char key[8];
  assert_int_equal(idgen_seq_format_period(f, t, key, 8, NULL), IDGEN_ERANGE);
  idgen_seq_format_free(f);

  f = parse_ok("ORD{date:%Y%m%d}{seq}", NULL); /* digits before {seq}: fine */
  render_is(f, t, 42, "ORD2026120342");
  idgen_seq_format_free(f);

  f = parse_ok("INV-{date:%Y}-{seq:04} {{x}} 100%", NULL);
  render_is(f, t, 7, "INV-2026-0007 {x} 100%");
  period_is(f, t, "2026", MS(2027, 1, 1, 0, 0, 0));
  idgen_seq_format_free(f);

  f = parse_ok("T{seq}", NULL); /* no date: one counter forever */
  render_is(f, t, 5, "T5");
  period_is(f, t, "", INT64_MAX);
  assert_int_equal(idgen_seq_format_width(f), 0);
  idgen_seq_format_free(f);

  f = parse_ok("BIZ{date:%y%m%d}{seq:03}", NULL);
  render_is(f, MS(2025, 3, 18, 8, 0, 0), 1, "BIZ250318001");
  period_is(f, MS(2025, 3, 18, 8, 0, 0), "20250318", MS(2025, 3, 19, 0, 0, 0));
  idgen_seq_format_free(f);

  f = parse_ok("{date:%Y-%j %H:%M}/{seq}", NULL);
  render_is(f, MS(2024, 12, 31, 23, 59, 59), 3, "2024-366 23:59/3");
  period_is(f, MS(2024, 12, 31, 23, 59, 59), "202412312359", MS(2025, 1, 1, 0, 0, 0));
  idgen_seq_format_free(f);

  f = parse_ok("{date:%Y%m}{date:%d%H}-{seq}", NULL);
  period_is(f, MS(2026, 2, 28, 23, 0, 0), "2026022823", MS(2026, 3, 1, 0, 0, 0));
  idgen_seq_format_free(f);

  /* Outside years 1..9999: IDGEN_ERANGE. */
  f = parse_ok("{date:%Y}{seq}", NULL);
  char buf[64];
  assert_int_equal(idgen_seq_format_render(f, INT64_MAX, 1, buf, sizeof buf), IDGEN_ERANGE);
  assert_int_equal(idgen_seq_format_render(f, INT64_MIN, 1, buf, sizeof buf), IDGEN_ERANGE);
  assert_int_equal(idgen_seq_format_period(f, INT64_MAX, buf, sizeof buf, NULL), IDGEN_ERANGE);
  render_is(f, MS(9999, 12, 1, 0, 0, 0), 1, "99991");
  idgen_seq_format_free(f);
}

static void test_shanghai_midnight(void **state) {
  (void)state;
  idgen_seq_format_t *f = parse_ok("ORD{date:%Y%m%d}{seq:06}", "Asia/Shanghai");
  int64_t before = MS(2026, 12, 3, 15, 59, 59) + 999, at = MS(2026, 12, 3, 16, 0, 0);
  period_is(f, before, "20261203", at);
  render_is(f, before, 1, "ORD20261203000001");
  period_is(f, at, "20261204", MS(2026, 12, 4, 16, 0, 0));
  render_is(f, at, 1, "ORD20261204000001");
  idgen_seq_format_free(f);
}

static void test_new_york_dst(void **state) {
  (void)state;
  idgen_seq_format_t *f = parse_ok("{date:%Y%m%d}-{seq}", "America/New_York");
  /* 2026-03-08 starts at 05:00Z (EST) and ends at 04:00Z the next day (EDT): 23 hours. */
  int64_t start = MS(2026, 3, 8, 5, 0, 0);
  period_is(f, start, "20260308", start + 23 * 3600000LL);
  period_is(f, start - 1, "20260307", start);
  /* 2026-11-01 lasts 25 hours. */
  start = MS(2026, 11, 1, 4, 0, 0);
  period_is(f, start + 3600000, "20261101", start + 25 * 3600000LL);
  idgen_seq_format_free(f);

  /* The hour that repeats (01:00 EDT, then 01:00 EST) is one period of two hours. */
  f = parse_ok("{date:%Y%m%d%H}-{seq}", "America/New_York");
  period_is(f, MS(2026, 11, 1, 5, 30, 0), "2026110101", MS(2026, 11, 1, 7, 0, 0));
  /* The hour skipped: 01:59:59 EST is followed by 03:00 EDT. */
  period_is(f, MS(2026, 3, 8, 6, 30, 0), "2026030801", MS(2026, 3, 8, 7, 0, 0));
  period_is(f, MS(2026, 3, 8, 7, 0, 0), "2026030803", MS(2026, 3, 8, 8, 0, 0));
  idgen_seq_format_free(f);

  /* Years past the file's transitions come from its POSIX rule. */
  f = parse_ok("{date:%Y%m%d}-{seq}", "America/New_York");
  start = MS(2080, 3, 10, 5, 0, 0); /* 2080-03-10: second Sunday of March */
  period_is(f, start, "20800310", start + 23 * 3600000LL);
  idgen_seq_format_free(f);

  /* Half-hour zones. */
  f = parse_ok("{date:%Y%m%d%H%M}-{seq}", "Asia/Kolkata");
  period_is(f, MS(2026, 12, 3, 18, 29, 59), "202612032359", MS(2026, 12, 3, 18, 30, 0));
  idgen_seq_format_free(f);
}

static void test_iso_week(void **state) {
  (void)state;
  idgen_seq_format_t *f = parse_ok("W{date:%G-W%V}-{seq:03}", NULL);
  /* 2027-01-01 (a Friday) is in 2026's week 53, which ends on Monday 2027-01-04. */
  render_is(f, MS(2027, 1, 1, 12, 0, 0), 9, "W2026-W53-009");
  period_is(f, MS(2027, 1, 1, 12, 0, 0), "2026W53", MS(2027, 1, 4, 0, 0, 0));
  render_is(f, MS(2027, 1, 4, 0, 0, 0), 1, "W2027-W01-001");
  /* 2024-12-30 (a Monday) is in 2025's week 1. */
  render_is(f, MS(2024, 12, 30, 0, 0, 0), 1, "W2025-W01-001");
  period_is(f, MS(2024, 12, 30, 0, 0, 0), "2025W01", MS(2025, 1, 6, 0, 0, 0));
  period_is(f, MS(2024, 12, 29, 23, 59, 59), "2024W52", MS(2024, 12, 30, 0, 0, 0));
  idgen_seq_format_free(f);

  f = parse_ok("{date:%G%V%u}-{seq}", NULL); /* a day named by its ISO week */
  render_is(f, MS(2027, 1, 3, 0, 0, 0), 1, "2026537-1");
  period_is(f, MS(2027, 1, 3, 0, 0, 0), "20270103", MS(2027, 1, 4, 0, 0, 0));
  idgen_seq_format_free(f);
}

static void test_periods_per_year(void **state) {
  (void)state;
  static const struct {
    const char *tmpl;
    double per;
  } rows[] = {{"{seq}", 0},
              {"{date:%Y}-{seq}", 1},
              {"{date:%y%m}-{seq}", 12},
              {"{date:%G%V}-{seq}", 365.2425 / 7},
              {"{date:%Y%j}-{seq}", 365.2425},
              {"{date:%Y%m%d%H}-{seq}", 365.2425 * 24},
              {"{date:%Y%m%d%H%M}-{seq}", 365.2425 * 1440}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    idgen_seq_format_t *f = parse_ok(rows[i].tmpl, NULL);
    assert_float_equal(idgen_seq_format_periods_per_year(f), rows[i].per, 1e-9);
    idgen_seq_format_free(f);
  }
}

/* Every class of refused template, with its message. */
static void test_refused(void **state) {
  (void)state;
  static const struct {
    const char *tmpl, *tz, *msg;
  } rows[] = {
      {"ORD{date:%Y%m%d}", NULL, "format: no {seq}"},
      {"{seq}{seq}", NULL, "format: column 6: a second {seq}"},
      {"{seq:6}", NULL, "format: column 1: {seq:...} takes a width as 0N"},
      {"{seq:00}", NULL, "format: column 1: {seq:...} takes a width as 0N"},
      {"{seq:020}", NULL, "format: column 1: {seq:0N}: N is at most 19"},
      {"{seq:06x}", NULL, "format: column 1: {seq...} is not {seq} or {seq:0N}"},
      {"A{foo}{seq}", NULL, "format: column 2: unknown field"},
      {"A}{seq}", NULL, "format: column 2: a } alone"},
      {"A{seq", NULL, "format: column 2: unknown field"},
      {"{date:%Y{seq}", NULL, "format: column 9: a { inside {date:...}"},
      {"{seq}-{date:%Y", NULL, "format: column 7: {date:... has no closing }"},
      {"{seq}-{date:}", NULL, "format: column 7: {date:...} has no conversion"},
      {"{seq}-{date:%S}", NULL, "format: column 13: unknown conversion %S"},
      {"{seq}-{date:%", NULL, "format: column 13: unknown conversion %?"},
      {"{seq}\t", NULL, "format: column 6: a control character"},
      {"{seq}-{date:%m}", NULL, "format: column 13: %m needs the year"},
      {"{seq}-{date:%Y%d}", NULL, "format: column 15: %d needs the month"},
      {"{seq}-{date:%j}", NULL, "format: column 13: %j needs the year"},
      {"{seq}-{date:%Y%V}", NULL, "format: column 15: %V needs its year %G"},
      {"{seq}-{date:%G}", NULL, "format: column 13: %G is the ISO week's year"},
      {"{seq}-{date:%Y%m%d%u}", NULL, "format: column 19: %u needs the ISO week"},
      {"{seq}-{date:%H}", NULL, "format: column 13: %H needs the day"},
      {"{seq}-{date:%G%V%H}", NULL, "format: column 17: %H needs the day"},
      {"{seq}-{date:%Y%m%d%M}", NULL, "format: column 19: %M needs the hour"},
      {"{seq}-{date:%Y%m%G%V}", NULL, "format: column 19: the ISO week (%G%V) with the calendar"},
      {"{seq}{date:%y%j}", NULL, "format: column 1: {seq} runs into the digits after it"},
      {"{seq:06}{date:%Y%m%d}", NULL, "format: column 1: {seq} runs into the digits after it"},
      {"{seq}7", NULL, "format: column 1: {seq} runs into the digits after it"},
      {"{seq}", "../etc/passwd", "tz: \"../etc/passwd\" is not a time zone name"},
      {"{seq}", "/etc/localtime", "tz: \"/etc/localtime\" is not a time zone name"},
      {"{seq}", "", "tz: \"\" is not a time zone name"},
      {"{seq}", "Asia/Shanghai;rm", "tz: \"Asia/Shanghai;rm\" is not a time zone name"},
      {"{seq}", "Nowhere/Atlantis", "tz: no time zone \"Nowhere/Atlantis\""},
      {"{seq}", "Asia", "tz: "},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char err[256] = "";
    idgen_seq_format_t *f = (idgen_seq_format_t *)1;
    int rc = idgen_seq_format_parse(&f, rows[i].tmpl, rows[i].tz, err, sizeof err);
    if (rc != IDGEN_EINVAL || strncmp(err, rows[i].msg, strlen(rows[i].msg)) != 0)
      fail_msg("\"%s\": rc %d, message \"%s\", want \"%s\"", rows[i].tmpl, rc, err, rows[i].msg);
    assert_null(f);
  }
  char longer[300];
  memset(longer, 'x', sizeof longer - 6);
  strcpy(longer + sizeof longer - 6, "{seq}");
  char err[256];
  idgen_seq_format_t *f;
  assert_int_equal(idgen_seq_format_parse(&f, longer, NULL, err, sizeof err), IDGEN_EINVAL);
  assert_string_equal(err, "format: longer than 255 bytes");
}

/* Each period, walked through 1970..2050 in several zones and units, ends
 * at the first instant whose key differs: its last millisecond has its key,
 * its end has another. */
static void test_period_ends(void **state) {
  (void)state;
  static const char *zones[] = {"America/New_York", "Europe/London", "Australia/Lord_Howe",
                                "Asia/Kolkata",     "Pacific/Apia",  "America/Sao_Paulo",
                                "Africa/Casablanca"};
  static const char *tmpls[] = {"{date:%Y}-{seq}",       "{date:%Y%m}-{seq}",
                                "{date:%G%V}-{seq}",     "{date:%Y%m%d}-{seq}",
                                "{date:%Y%m%d%H}-{seq}", "{date:%Y%m%d%H%M}-{seq}"};
  for (size_t z = 0; z < sizeof zones / sizeof zones[0]; z++) {
    for (size_t k = 0; k < sizeof tmpls / sizeof tmpls[0]; k++) {
      idgen_seq_format_t *f = parse_ok(tmpls[k], zones[z]);
      for (int64_t t = 0; t < MS(2050, 1, 1, 0, 0, 0);
           t += (int64_t)(13 * 3600 + 7 * 60 + 3) * 1000) {
        char key[32], last[32], next[32];
        int64_t end;
        assert_int_equal(idgen_seq_format_period(f, t, key, sizeof key, &end), 0);
        assert_true(end > t);
        assert_int_equal(idgen_seq_format_period(f, end - 1, last, sizeof last, NULL), 0);
        assert_int_equal(idgen_seq_format_period(f, end, next, sizeof next, NULL), 0);
        if (strcmp(key, last) != 0 || strcmp(key, next) == 0)
          fail_msg("%s %s at %" PRId64 ": key %s ends at %" PRId64 " (%s just before, %s at it)",
                   zones[z], tmpls[k], t, key, end, last, next);
      }
      idgen_seq_format_free(f);
    }
  }
}

/* A zone of our own under $TZDIR: no transitions, a southern rule in the
 * footer ("AAA-10BBB,M10.1.0,M4.1.0/3", as Sydney's). */
static void test_tzdir_rule(void **state) {
  (void)state;
  uint8_t head[44] = {'T', 'Z', 'i', 'f', '2'};
  head[39] = 1; /* one local time type */
  head[43] = 4; /* four bytes of abbreviations */
  static const uint8_t type[] = {0, 0, 0x8c, 0xa0, 0, 0, 'A', 'A', 'A', 0}; /* +10:00 */
  static const char foot[] = "\nAAA-10BBB,M10.1.0,M4.1.0/3\n";
  char dir[] = "/tmp/test_seqfmt.XXXXXX", path[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/Test", dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/Test/South", dir);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  for (int block = 0; block < 2; block++) {
    fwrite(head, 1, sizeof head, fp);
    fwrite(type, 1, sizeof type, fp);
  }
  fwrite(foot, 1, sizeof foot - 1, fp);
  fclose(fp);
  setenv("TZDIR", dir, 1);
  char err[256];
  idgen_seq_format_t *f = NULL;
  int rc = idgen_seq_format_parse(&f, "{date:%Y%m%d%H}-{seq}", "Test/South", err, sizeof err);
  unsetenv("TZDIR");
  if (rc != 0)
    fail_msg("Test/South: %s", err);
  render_is(f, MS(2026, 1, 15, 0, 0, 0), 1, "2026011511-1"); /* DST: +11 */
  render_is(f, MS(2026, 7, 1, 0, 0, 0), 1, "2026070110-1");  /* +10 */
  /* DST ends on Sunday 2026-04-05 at 03:00 local (16:00Z the day before):
   * the hour 02 repeats, one period of two hours. */
  period_is(f, MS(2026, 4, 4, 15, 0, 0), "2026040502", MS(2026, 4, 4, 17, 0, 0));
  /* It starts on Sunday 2026-10-04 at 02:00 local (16:00Z the day before). */
  period_is(f, MS(2026, 10, 3, 15, 30, 0), "2026100401", MS(2026, 10, 3, 16, 0, 0));
  render_is(f, MS(2026, 10, 3, 16, 0, 0), 1, "2026100403-1");
  idgen_seq_format_free(f);
  unlink(path);
  snprintf(path, sizeof path, "%s/Test", dir);
  rmdir(path);
  rmdir(dir);
}

/* The reader's offsets against glibc's localtime_r, in a child with TZ set:
 * every transition of the years sampled, a second either side, and a
 * walk in steps of 9 hours 17 minutes from 1900 to 2100. */
static int compare_zone(const char *zone) {
  char err[256];
  idgen__tz_t *tz;
  if (idgen__tz_load(&tz, zone, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s\n", zone, err);
    return 1;
  }
  char env[128];
  snprintf(env, sizeof env, ":%s", zone);
  setenv("TZ", env, 1);
  tzset();
  int bad = 0;
  idgen_seq_format_t *f = NULL;
  if (idgen_seq_format_parse(&f, "{date:%Y%m%d%H%M-%G-%V-%u-%j-%y}-{seq}", zone, err, sizeof err) !=
      0) {
    fprintf(stderr, "%s: %s\n", zone, err);
    return 1;
  }
  int64_t from = -2208988800LL, to = 4102444800LL; /* 1900 .. 2100 */
  for (int64_t t = from; t < to && bad < 5; t += 9 * 3600 + 17 * 60) {
    int64_t probe[] = {t, 0, 0, 0};
    int64_t tr = idgen__tz_next(tz, t);
    int np = 1;
    if (tr != INT64_MAX && tr < to)
      probe[np++] = tr - 1, probe[np++] = tr, probe[np++] = tr + 1;
    for (int i = 0; i < np; i++) {
      time_t tt = (time_t)probe[i];
      struct tm tm;
      localtime_r(&tt, &tm);
      if (tm.tm_gmtoff != idgen__tz_offset(tz, probe[i])) {
        fprintf(stderr, "%s at %" PRId64 ": glibc %ld, ours %d\n", zone, probe[i], tm.tm_gmtoff,
                idgen__tz_offset(tz, probe[i]));
        bad++;
      }
      char want[64], got[64];
      size_t n = strftime(want, sizeof want - 8, "%Y%m%d%H%M-%G-%V-%u-%j-", &tm);
      snprintf(want + n, sizeof want - n, "%02d-1", (tm.tm_year + 1900) % 100); /* %y */
      if (idgen_seq_format_render(f, probe[i] * 1000, 1, got, sizeof got) < 0 ||
          strcmp(got, want) != 0) {
        fprintf(stderr, "%s at %" PRId64 ": strftime %s, ours %s\n", zone, probe[i], want, got);
        bad++;
      }
    }
  }
  idgen__tz_free(tz);
  idgen_seq_format_free(f);
  return bad;
}

static void test_tzif_vs_glibc(void **state) {
  (void)state;
  static const char *zones[] = {
      "UTC",
      "America/New_York",
      "Europe/London",
      "Asia/Shanghai",
      "Asia/Kolkata",
      "Australia/Sydney",
      "Europe/Dublin",
      "Pacific/Chatham",
      "America/Sao_Paulo",
      "Africa/Casablanca",
      "Australia/Lord_Howe",
      "Pacific/Apia",
      "America/St_Johns",
      "Europe/Moscow",
  };
  for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) {
    char path[256];
    snprintf(path, sizeof path, "/usr/share/zoneinfo/%s", zones[i]);
    if (access(path, R_OK) != 0) {
      print_message("skipped %s: not in this system's tzdata\n", zones[i]);
      continue;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
      _exit(compare_zone(zones[i]) == 0 ? 0 : 1);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      fail_msg("%s: offsets differ from glibc's (see above)", zones[i]);
  }
}

/* Malformed files: every truncation of a real one, and bytes flipped. */
static void test_tzif_malformed(void **state) {
  (void)state;
  FILE *fp = fopen("/usr/share/zoneinfo/America/New_York", "rb");
  if (fp == NULL)
    skip();
  static uint8_t buf[65536];
  size_t len = fread(buf, 1, sizeof buf, fp);
  fclose(fp);
  char err[256];
  idgen__tz_t *tz;
  assert_int_equal(idgen__tz_parse(&tz, buf, len, err, sizeof err), 0);
  assert_int_equal(idgen__tz_offset(tz, 1796299200), -5 * 3600); /* 2026-12-03 */
  idgen__tz_free(tz);
  for (size_t n = 0; n < len; n++) {
    int rc = idgen__tz_parse(&tz, buf, n, err, sizeof err);
    if (rc == 0)
      fail_msg("a file cut at %zu bytes of %zu was taken", n, len);
    assert_int_equal(strncmp(err, "tz: ", 4), 0);
  }
  buf[4] = '1';
  assert_int_equal(idgen__tz_parse(&tz, buf, len, err, sizeof err), IDGEN_EPARSE);
  assert_string_equal(err, "tz: TZif version 1 (no 64-bit data)");
  buf[4] = '2';
  buf[len - 3] = '!'; /* the footer's rule */
  assert_int_equal(idgen__tz_parse(&tz, buf, len, err, sizeof err), IDGEN_EPARSE);
  assert_string_equal(err, "tz: the footer is not a POSIX TZ string");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_known_answers),    cmocka_unit_test(test_shanghai_midnight),
      cmocka_unit_test(test_new_york_dst),     cmocka_unit_test(test_iso_week),
      cmocka_unit_test(test_periods_per_year), cmocka_unit_test(test_refused),
      cmocka_unit_test(test_period_ends),      cmocka_unit_test(test_tzdir_rule),
      cmocka_unit_test(test_tzif_vs_glibc),    cmocka_unit_test(test_tzif_malformed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
