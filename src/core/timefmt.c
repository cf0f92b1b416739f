/*
 * timefmt.c -- ISO-8601 UTC times with milliseconds, both ways, and the
 * civil-date arithmetic behind them (proleptic Gregorian, any year).
 */
#include <stdio.h>
#include <string.h>

#include "core_int.h"

int idgen__err(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err != NULL && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* The era arithmetic follows Howard Hinnant's well-known civil date method:
 * 400-year eras of 146097 days, with years starting in March. */
int64_t idgen__days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

void idgen__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  *d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
  *m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Two decimal digits of v (< 100) at p; the end.  printf would parse a
 * format for each: `idgen decode` and the packages' decode() write a time
 * an ID. */
static char *two_digits(char *p, unsigned v) {
  p[0] = (char)('0' + v / 10);
  p[1] = (char)('0' + v % 10);
  return p + 2;
}

int idgen__date_format(int64_t unix_ms, char *buf) {
  int64_t days = floor_div(unix_ms, 86400000), y;
  unsigned m, d;
  idgen__civil_from_days(days, &y, &m, &d);
  if (y < 0 || y > 9999) { /* ISO 8601's expanded years: a sign, at least 4 digits */
    int n = sprintf(buf, "%+05lld", (long long)y);
    return n + sprintf(buf + n, "-%02u-%02u", m, d);
  }
  char *p = two_digits(buf, (unsigned)(y / 100));
  p = two_digits(p, (unsigned)(y % 100));
  *p++ = '-';
  p = two_digits(p, m);
  *p++ = '-';
  p = two_digits(p, d);
  *p = '\0';
  return (int)(p - buf);
}

int idgen_time_format(int64_t unix_ms, char *buf) {
  int64_t days = floor_div(unix_ms, 86400000);
  unsigned msday = (unsigned)(unix_ms - days * 86400000);
  char *p = buf + idgen__date_format(unix_ms, buf);
  *p++ = 'T';
  p = two_digits(p, msday / 3600000);
  *p++ = ':';
  p = two_digits(p, msday / 60000 % 60);
  *p++ = ':';
  p = two_digits(p, msday / 1000 % 60);
  *p++ = '.';
  *p++ = (char)('0' + msday % 1000 / 100);
  p = two_digits(p, msday % 100);
  *p++ = 'Z';
  *p = '\0';
  return (int)(p - buf);
}

/* Reads exactly `n` digits at s[*i]; returns -1 if any is not a digit. */
static int64_t digits(const char *s, size_t len, size_t *i, int n) {
  int64_t v = 0;
  for (int k = 0; k < n; k++, (*i)++) {
    if (*i >= len || s[*i] < '0' || s[*i] > '9')
      return -1;
    v = v * 10 + (s[*i] - '0');
  }
  return v;
}

static int expect(const char *s, size_t len, size_t *i, char c) {
  if (*i < len && (s[*i] == c || (c >= 'A' && s[*i] == c + 32))) {
    (*i)++;
    return 1;
  }
  return 0;
}

int idgen_time_parse(const char *s, size_t len, int64_t *unix_ms) {
  size_t i = 0;
  int64_t y = digits(s, len, &i, 4);
  if (y < 0 || !expect(s, len, &i, '-'))
    return IDGEN_EPARSE;
  int64_t mo = digits(s, len, &i, 2);
  if (mo < 1 || mo > 12 || !expect(s, len, &i, '-'))
    return IDGEN_EPARSE;
  int64_t d = digits(s, len, &i, 2);
  static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d < 1 || d > mdays[mo - 1] || (mo == 2 && d == 29 && !leap))
    return IDGEN_EPARSE;
  if (!expect(s, len, &i, 'T'))
    return IDGEN_EPARSE;
  int64_t hh = digits(s, len, &i, 2);
  if (hh < 0 || hh > 23 || !expect(s, len, &i, ':'))
    return IDGEN_EPARSE;
  int64_t mi = digits(s, len, &i, 2);
  if (mi < 0 || mi > 59 || !expect(s, len, &i, ':'))
    return IDGEN_EPARSE;
  int64_t ss = digits(s, len, &i, 2);
  if (ss < 0 || ss > 59)
    return IDGEN_EPARSE;
  int64_t ms = 0;
  if (expect(s, len, &i, '.')) {
    int n = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9' && n < 3) {
      ms = ms * 10 + (s[i++] - '0');
      n++;
    }
    if (n == 0)
      return IDGEN_EPARSE;
    for (; n < 3; n++)
      ms *= 10;
  }
  if (!expect(s, len, &i, 'Z') || i != len)
    return IDGEN_EPARSE;
  int64_t days = idgen__days_from_civil(y, (unsigned)mo, (unsigned)d);
  *unix_ms = ((days * 24 + hh) * 60 + mi) * 60000 + ss * 1000 + ms;
  return 0;
}
