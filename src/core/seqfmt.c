/*
 * seqfmt.c -- business-number templates (idgen_seq_format_* in idgen.h):
 * "ORD{date:%Y%m%d}{seq:06}" parsed once into tokens, then rendered with a
 * number and a time, and the period a time falls in (the counter's key and
 * when the period ends).
 *
 * Every date conversion has a fixed width (zero-padded; %Y is four digits,
 * years 1 to 9999), so {seq} is the one field whose length varies and a
 * text's length tells where each field is: a text names one (period,
 * number) pair as long as the date fields name the period (the unit checks
 * at parse) and are read from left to right (a {seq} may not run into
 * digits after it).  %y's texts repeat a century apart; its counters do not
 * (the key has the full year).
 *
 * Local times come from tzif.c's zone, never from the process's TZ.  A
 * period is the set of instants whose local time has the same key; it ends
 * at the first instant whose key differs (at a DST change that may be
 * sooner or later than the wall clock suggests; a wall-clock hour that
 * repeats is one period of two hours).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "tzif.h"

#define FMT_MAX 256                         /* bytes of a template */
#define SEQ_WIDTH_MAX 19                    /* digits of 2^63-1 */
#define FMT_YEAR_MIN_MS (-62135596800000LL) /* 0001-01-01T00:00:00Z */
#define FMT_YEAR_MAX_MS (253402300799999LL) /* 9999-12-31T23:59:59.999Z */

enum { U_NONE, U_YEAR, U_MONTH, U_WEEK, U_DAY, U_HOUR, U_MINUTE };
enum { T_LIT, T_SEQ, T_CONV };

typedef struct fmt_tok {
  uint8_t kind;
  char conv;         /* T_CONV: 'Y', 'y', 'm', ... */
  uint16_t off, len; /* T_LIT: bytes of lit[] */
} fmt_tok_t;

struct idgen_seq_format {
  int ntok, width, unit;
  fmt_tok_t tok[FMT_MAX];
  char lit[FMT_MAX];
  idgen__tz_t *tz;
};

/* The conversions, their widths and the first column of each. */
static const char CONVS[] = "YymdjHMGVu";
static const int CONV_WIDTH[] = {4, 2, 2, 2, 3, 2, 2, 4, 2, 1};

typedef struct fmt_parse {
  idgen_seq_format_t *f;
  int col[sizeof CONVS]; /* 1-based column of each conversion's first use, 0 none */
  int nlit, seq_col;
  char *err;
  size_t errlen;
} fmt_parse_t;

static int fmt_fail(fmt_parse_t *p, int col, const char *what) {
  return idgen__err(p->err, p->errlen, IDGEN_EINVAL, "format: column %d: %s", col, what);
}

static void add_lit(fmt_parse_t *p, char c) {
  idgen_seq_format_t *f = p->f;
  if (f->ntok == 0 || f->tok[f->ntok - 1].kind != T_LIT)
    f->tok[f->ntok++] = (fmt_tok_t){.kind = T_LIT, .off = (uint16_t)p->nlit};
  f->tok[f->ntok - 1].len++;
  f->lit[p->nlit++] = c;
}

/* {date:...} from s + i (after "{date:"): returns the index after its '}',
 * or a negative error. */
static int parse_date(fmt_parse_t *p, const char *s, int i) {
  int start = i, nconv = 0;
  char msg[160];
  for (; s[i] != '}'; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\0')
      return fmt_fail(p, start - 5, "{date:... has no closing }");
    if (c == '{')
      return fmt_fail(p, i + 1, "a { inside {date:...}");
    if (c < 0x20 || c == 0x7f)
      return fmt_fail(p, i + 1, "a control character");
    if (c != '%') {
      add_lit(p, (char)c);
      continue;
    }
    char cv = s[++i];
    if (cv == '%') {
      add_lit(p, '%');
      continue;
    }
    const char *k = cv != '\0' ? strchr(CONVS, cv) : NULL;
    if (k == NULL) {
      snprintf(msg, sizeof msg,
               "unknown conversion %%%c in {date:...} (use %%Y %%y %%m %%d %%j %%H %%M %%G %%V "
               "%%u or %%%%)",
               cv >= 0x21 && cv < 0x7f ? cv : '?');
      return fmt_fail(p, i, msg);
    }
    if (p->col[k - CONVS] == 0)
      p->col[k - CONVS] = i;
    p->f->tok[p->f->ntok++] = (fmt_tok_t){.kind = T_CONV, .conv = cv};
    nconv++;
  }
  if (nconv == 0)
    return fmt_fail(p, start - 5, "{date:...} has no conversion (such as %Y)");
  return i + 1;
}

/* {seq} or {seq:0N} at s + i (after "{seq"): index after '}', or < 0. */
static int parse_seq(fmt_parse_t *p, const char *s, int i) {
  int col = i - 3;
  if (p->seq_col != 0)
    return fmt_fail(p, col, "a second {seq} (a template has one)");
  p->seq_col = col;
  if (s[i] == ':') {
    int w = 0;
    if (s[i + 1] != '0' || s[i + 2] < '1' || s[i + 2] > '9')
      return fmt_fail(p, col, "{seq:...} takes a width as 0N, such as {seq:06}");
    for (i += 2; s[i] >= '0' && s[i] <= '9' && w <= SEQ_WIDTH_MAX; i++)
      w = w * 10 + (s[i] - '0');
    if (w > SEQ_WIDTH_MAX)
      return fmt_fail(p, col, "{seq:0N}: N is at most 19 (a 63-bit counter has 19 digits)");
    p->f->width = w;
  }
  if (s[i] != '}')
    return fmt_fail(p, col, "{seq...} is not {seq} or {seq:0N}");
  p->f->tok[p->f->ntok++] = (fmt_tok_t){.kind = T_SEQ};
  return i + 1;
}

static int parse_tokens(fmt_parse_t *p, const char *s) {
  int i = 0;
  while (s[i] != '\0') {
    unsigned char c = (unsigned char)s[i];
    if (c == '{' && s[i + 1] == '{') {
      add_lit(p, '{');
      i += 2;
    } else if (c == '}' && s[i + 1] == '}') {
      add_lit(p, '}');
      i += 2;
    } else if (c == '}') {
      return fmt_fail(p, i + 1, "a } alone (write }} for a literal brace)");
    } else if (c == '{' && strncmp(s + i, "{date:", 6) == 0) {
      i = parse_date(p, s, i + 6);
    } else if (c == '{' && strncmp(s + i, "{seq", 4) == 0 && (s[i + 4] == '}' || s[i + 4] == ':')) {
      i = parse_seq(p, s, i + 4);
    } else if (c == '{') {
      return fmt_fail(p, i + 1,
                      "unknown field (use {seq}, {seq:0N} or {date:...}; {{ for a literal brace)");
    } else if (c < 0x20 || c == 0x7f) {
      return fmt_fail(p, i + 1, "a control character");
    } else {
      add_lit(p, (char)c);
      i++;
    }
    if (i < 0)
      return i;
  }
  return 0;
}

#define HAS(p, c) ((p)->col[strchr(CONVS, (c)) - CONVS] != 0)
#define COL(p, c) ((p)->col[strchr(CONVS, (c)) - CONVS])

/* The date fields must name a period: each unit with the units above it. */
static int check_units(fmt_parse_t *p) {
  int year = HAS(p, 'Y') || HAS(p, 'y');
  int day = HAS(p, 'd') || HAS(p, 'j') || HAS(p, 'u');
  if (HAS(p, 'm') && !year)
    return fmt_fail(p, COL(p, 'm'), "%m needs the year (%Y or %y)");
  if (HAS(p, 'd') && !HAS(p, 'm'))
    return fmt_fail(p, COL(p, 'd'), "%d needs the month (%m), or use %j for the day of the year");
  if (HAS(p, 'j') && !year)
    return fmt_fail(p, COL(p, 'j'), "%j needs the year (%Y or %y)");
  if (HAS(p, 'V') && !HAS(p, 'G'))
    return fmt_fail(p, COL(p, 'V'),
                    "%V needs its year %G (the ISO week's year; %Y differs around January 1)");
  if (HAS(p, 'G') && !HAS(p, 'V'))
    return fmt_fail(p, COL(p, 'G'), "%G is the ISO week's year: use it with %V (or %Y alone)");
  if (HAS(p, 'u') && !HAS(p, 'V'))
    return fmt_fail(p, COL(p, 'u'), "%u needs the ISO week (%G%V)");
  if (HAS(p, 'H') && !day)
    return fmt_fail(p, COL(p, 'H'), "%H needs the day (%d, %j or %u)");
  if (HAS(p, 'M') && !HAS(p, 'H'))
    return fmt_fail(p, COL(p, 'M'), "%M needs the hour (%H)");
  if (HAS(p, 'V') && year && !day)
    return fmt_fail(p, COL(p, 'V'),
                    "the ISO week (%G%V) with the calendar year or month names no period "
                    "(a week can span two months or years): add the day or drop one");
  p->f->unit = HAS(p, 'M')   ? U_MINUTE
               : HAS(p, 'H') ? U_HOUR
               : day         ? U_DAY
               : HAS(p, 'V') ? U_WEEK
               : HAS(p, 'm') ? U_MONTH
               : year        ? U_YEAR
                             : U_NONE;
  return 0;
}

/* Left to right, {seq} must end where a reader sees it end. */
static int check_seq_end(fmt_parse_t *p) {
  idgen_seq_format_t *f = p->f;
  for (int i = 0; i + 1 < f->ntok; i++) {
    if (f->tok[i].kind != T_SEQ)
      continue;
    const fmt_tok_t *n = &f->tok[i + 1];
    char c = n->kind == T_LIT ? f->lit[n->off] : '0';
    if (c >= '0' && c <= '9')
      return fmt_fail(p, p->seq_col,
                      "{seq} runs into the digits after it (\"{seq}{date:%d}\" reads 1|12 or "
                      "11|2 once the number grows): put a separator after {seq}");
  }
  return 0;
}

int idgen_seq_format_parse(idgen_seq_format_t **out, const char *tmpl, const char *tz, char *err,
                           size_t errlen) {
  if (out == NULL || tmpl == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "format: no template");
  *out = NULL;
  if (strlen(tmpl) >= FMT_MAX)
    return idgen__err(err, errlen, IDGEN_EINVAL, "format: longer than %d bytes", FMT_MAX - 1);
  fmt_parse_t p = {.err = err, .errlen = errlen};
  p.f = calloc(1, sizeof *p.f);
  if (p.f == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "format: out of memory");
  int rc = parse_tokens(&p, tmpl);
  if (rc == 0 && p.seq_col == 0)
    rc = idgen__err(err, errlen, IDGEN_EINVAL,
                    "format: no {seq} (the number: {seq} or {seq:06} for six digits at least)");
  if (rc == 0)
    rc = check_units(&p);
  if (rc == 0)
    rc = check_seq_end(&p);
  if (rc == 0)
    rc = idgen__tz_load(&p.f->tz, tz, err, errlen);
  if (rc != 0) {
    idgen_seq_format_free(p.f);
    return rc;
  }
  *out = p.f;
  return 0;
}

void idgen_seq_format_free(idgen_seq_format_t *f) {
  if (f == NULL)
    return;
  idgen__tz_free(f->tz);
  free(f);
}

int idgen_seq_format_width(const idgen_seq_format_t *f) { return f->width; }

double idgen_seq_format_periods_per_year(const idgen_seq_format_t *f) {
  static const double per[] = {0, 1, 12, 365.2425 / 7, 365.2425, 365.2425 * 24, 365.2425 * 1440};
  return per[f->unit];
}

/* ---- local time --------------------------------------------------------- */

typedef struct fmt_tm {
  int64_t local; /* local seconds since 1970 as if UTC */
  int64_t days;  /* local day number */
  int y, m, d, yday, H, M, G, V, u;
} fmt_tm_t;

static void fmt_local(int64_t t, int32_t off, fmt_tm_t *tm) {
  int64_t y;
  unsigned m, d;
  tm->local = t + off;
  tm->days = tm->local / 86400 - (tm->local % 86400 < 0);
  int64_t sec = tm->local - tm->days * 86400;
  idgen__civil_from_days(tm->days, &y, &m, &d);
  tm->y = (int)y, tm->m = (int)m, tm->d = (int)d;
  tm->yday = (int)(tm->days - idgen__days_from_civil(y, 1, 1)) + 1;
  tm->H = (int)(sec / 3600), tm->M = (int)(sec / 60 % 60);
  tm->u = (int)(((tm->days + 3) % 7 + 7) % 7) + 1; /* Monday 1; 1970-01-01 a Thursday */
  int64_t thu = tm->days - (tm->u - 1) + 3;        /* the ISO week's Thursday */
  int64_t gy;
  unsigned gm, gd;
  idgen__civil_from_days(thu, &gy, &gm, &gd);
  tm->G = (int)gy;
  tm->V = (int)((thu - idgen__days_from_civil(gy, 1, 1)) / 7) + 1;
}

static int64_t floor_div(int64_t a, int64_t b) {
  return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* Local time of unix_ms: 0, or IDGEN_ERANGE outside years 1..9999 (with
 * room for the offset and the ISO year). */
static int fmt_at(const idgen_seq_format_t *f, int64_t unix_ms, fmt_tm_t *tm) {
  if (unix_ms < FMT_YEAR_MIN_MS + 4 * 86400000LL || unix_ms > FMT_YEAR_MAX_MS - 4 * 86400000LL)
    return IDGEN_ERANGE;
  int64_t t = floor_div(unix_ms, 1000);
  fmt_local(t, idgen__tz_offset(f->tz, t), tm);
  return 0;
}

static int fmt_key(int unit, const fmt_tm_t *tm, char *key, size_t n) {
  int len;
  switch (unit) {
  case U_YEAR:
    len = snprintf(key, n, "%04d", tm->y);
    break;
  case U_MONTH:
    len = snprintf(key, n, "%04d%02d", tm->y, tm->m);
    break;
  case U_WEEK:
    len = snprintf(key, n, "%04dW%02d", tm->G, tm->V);
    break;
  case U_DAY:
    len = snprintf(key, n, "%04d%02d%02d", tm->y, tm->m, tm->d);
    break;
  case U_HOUR:
    len = snprintf(key, n, "%04d%02d%02d%02d", tm->y, tm->m, tm->d, tm->H);
    break;
  case U_MINUTE:
    len = snprintf(key, n, "%04d%02d%02d%02d%02d", tm->y, tm->m, tm->d, tm->H, tm->M);
    break;
  default:
    len = n > 0 ? (key[0] = '\0', 0) : 1;
  }
  return len < 0 || (size_t)len >= n ? IDGEN_ERANGE : 0;
}

/* The local second the period of tm ends (the next one's first). */
static int64_t fmt_local_end(int unit, const fmt_tm_t *tm) {
  switch (unit) {
  case U_YEAR:
    return idgen__days_from_civil(tm->y + 1, 1, 1) * 86400;
  case U_MONTH:
    return (tm->m == 12 ? idgen__days_from_civil(tm->y + 1, 1, 1)
                        : idgen__days_from_civil(tm->y, (unsigned)tm->m + 1, 1)) *
           86400;
  case U_WEEK:
    return (tm->days - (tm->u - 1) + 7) * 86400;
  case U_DAY:
    return (tm->days + 1) * 86400;
  case U_HOUR:
    return floor_div(tm->local, 3600) * 3600 + 3600;
  default:
    return floor_div(tm->local, 60) * 60 + 60;
  }
}

int idgen_seq_format_period(const idgen_seq_format_t *f, int64_t unix_ms, char *key, size_t n,
                            int64_t *end_ms) {
  fmt_tm_t tm, at;
  char k0[32], k1[32];
  if (f->unit == U_NONE) {
    if (end_ms != NULL)
      *end_ms = INT64_MAX;
    return fmt_key(U_NONE, &tm, key, n);
  }
  int rc = fmt_at(f, unix_ms, &tm);
  if (rc != 0 || (rc = fmt_key(f->unit, &tm, key, n)) != 0)
    return rc;
  if (end_ms == NULL)
    return 0;
  /* Walk the zone's transitions up to the wall-clock end: one may end the
   * period first (its key changes there) or move the end. */
  fmt_key(f->unit, &tm, k0, sizeof k0);
  int64_t t = floor_div(unix_ms, 1000), lend = fmt_local_end(f->unit, &tm);
  int32_t off = idgen__tz_offset(f->tz, t);
  for (int guard = 0; guard < 64; guard++) {
    int64_t cand = lend - off, tr = idgen__tz_next(f->tz, t);
    if (tr > cand) {
      *end_ms = cand * 1000;
      return 0;
    }
    off = idgen__tz_offset(f->tz, tr);
    fmt_local(tr, off, &at);
    fmt_key(f->unit, &at, k1, sizeof k1);
    if (strcmp(k0, k1) != 0) {
      *end_ms = tr * 1000;
      return 0;
    }
    t = tr;
  }
  *end_ms = (lend - off) * 1000; /* cannot happen: no zone changes 64 times a year */
  return 0;
}

static int put_num(char *o, int v, int w) {
  for (int i = w - 1; i >= 0; i--, v /= 10)
    o[i] = (char)('0' + v % 10);
  return w;
}

int idgen_seq_format_render(const idgen_seq_format_t *f, int64_t unix_ms, uint64_t n, char *buf,
                            size_t buflen) {
  fmt_tm_t tm = {0};
  char tmp[FMT_MAX * 2 + 24];
  size_t len = 0;
  if (f->unit != U_NONE && fmt_at(f, unix_ms, &tm) != 0)
    return IDGEN_ERANGE;
  for (int i = 0; i < f->ntok; i++) {
    const fmt_tok_t *k = &f->tok[i];
    if (k->kind == T_LIT) {
      memcpy(tmp + len, f->lit + k->off, k->len);
      len += k->len;
    } else if (k->kind == T_SEQ) {
      char d[24];
      int nd = snprintf(d, sizeof d, "%" PRIu64, n);
      for (int z = nd; z < f->width; z++)
        tmp[len++] = '0';
      memcpy(tmp + len, d, (size_t)nd);
      len += (size_t)nd;
    } else {
      const int v[] = {tm.y, tm.y % 100, tm.m, tm.d, tm.yday, tm.H, tm.M, tm.G, tm.V, tm.u};
      int c = (int)(strchr(CONVS, k->conv) - CONVS);
      len += (size_t)put_num(tmp + len, v[c], CONV_WIDTH[c]);
    }
  }
  if (len >= buflen)
    return IDGEN_ERANGE;
  memcpy(buf, tmp, len);
  buf[len] = '\0';
  return (int)len;
}
