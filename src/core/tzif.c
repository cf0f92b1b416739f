/*
 * tzif.c -- a small, strict reader of TZif files (RFC 8536) and of the
 * POSIX TZ rule in their footer ("EST5EDT,M3.2.0,M11.1.0"), for rendering
 * business numbers in a named time zone without the process's TZ variable
 * (tzif.h).
 *
 * Only the version 2+ data block is kept (64-bit times); the version 1
 * block before it is skipped by its counts.  Before the first transition
 * the zone is in its type 0; after the last, the footer's rule applies (or
 * the last type stays, when the footer is empty).  The one file read is the
 * zone's, at load.
 */
#include "tzif.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core_int.h"

#define TZ_FILE_MAX (1 << 20) /* bytes; the largest zone files are ~4 KB */
#define TZ_TIMES_MAX 4096     /* transitions */
#define TZ_OFF_MAX (26 * 3600)
#define TZ_RULE_TIME_MAX (167 * 3600)

typedef struct rule_date {
  char kind; /* 'J': day 1..365 without Feb 29; 'D': day 0..365; 'M': month.week.day */
  int n, m, w, d;
  int32_t time; /* seconds after local midnight, -167h..167h */
} rule_date_t;

typedef struct tz_rule {
  int32_t std_off, dst_off;
  int has_dst;
  rule_date_t start, end;
} tz_rule_t;

struct idgen__tz {
  int ntimes, ntypes;
  int64_t *times;
  uint8_t *idx;
  int32_t *offs;
  int has_rule;
  tz_rule_t rule;
};

void idgen__tz_free(idgen__tz_t *tz) {
  if (tz == NULL)
    return;
  free(tz->times);
  free(tz->idx);
  free(tz->offs);
  free(tz);
}

/* ---- the footer: a POSIX TZ string ------------------------------------- */

static int is_alpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A zone abbreviation: 3+ letters, or <...> of letters, digits, + and -. */
static const char *rule_name(const char *p) {
  const char *s = p;
  if (*p == '<') {
    for (s = ++p; is_alpha(*p) || is_digit(*p) || *p == '+' || *p == '-'; p++)
      ;
    return (*p == '>' && p - s >= 3) ? p + 1 : NULL;
  }
  while (is_alpha(*p))
    p++;
  return p - s >= 3 ? p : NULL;
}

static const char *rule_num(const char *p, int lo, int hi, int *v) {
  if (!is_digit(*p))
    return NULL;
  long x = 0;
  while (is_digit(*p) && x <= hi)
    x = x * 10 + (*p++ - '0');
  if (x < lo || x > hi || is_digit(*p))
    return NULL;
  *v = (int)x;
  return p;
}

/* [+-]hh[:mm[:ss]] with hh up to max_h: seconds into *v. */
static const char *rule_hms(const char *p, int max_h, int32_t *v) {
  int sign = 1, h, m = 0, s = 0;
  if (*p == '+' || *p == '-')
    sign = *p++ == '-' ? -1 : 1;
  if ((p = rule_num(p, 0, max_h, &h)) == NULL)
    return NULL;
  if (*p == ':' && (p = rule_num(p + 1, 0, 59, &m)) != NULL && *p == ':')
    p = rule_num(p + 1, 0, 59, &s);
  if (p == NULL)
    return NULL;
  *v = sign * (h * 3600 + m * 60 + s);
  return p;
}

static const char *rule_date(const char *p, rule_date_t *d) {
  d->time = 7200; /* 02:00 unless given */
  if (*p == 'J') {
    d->kind = 'J';
    p = rule_num(p + 1, 1, 365, &d->n);
  } else if (*p == 'M') {
    d->kind = 'M';
    if ((p = rule_num(p + 1, 1, 12, &d->m)) == NULL || *p != '.' ||
        (p = rule_num(p + 1, 1, 5, &d->w)) == NULL || *p != '.')
      return NULL;
    p = rule_num(p + 1, 0, 6, &d->d);
  } else {
    d->kind = 'D';
    p = rule_num(p, 0, 365, &d->n);
  }
  if (p != NULL && *p == '/')
    p = rule_hms(p + 1, 167, &d->time);
  return p;
}

/* The footer's text (NUL-terminated): 0, or -1 when it is not a POSIX TZ
 * string this reader takes (a DST name needs its rules). */
static int rule_parse(const char *p, tz_rule_t *r) {
  int32_t off;
  memset(r, 0, sizeof *r);
  if ((p = rule_name(p)) == NULL || (p = rule_hms(p, 24, &off)) == NULL)
    return -1;
  r->std_off = -off;
  if (*p == '\0')
    return 0;
  if ((p = rule_name(p)) == NULL)
    return -1;
  r->has_dst = 1;
  r->dst_off = r->std_off + 3600;
  if (*p != ',' && (p = rule_hms(p, 24, &off)) != NULL)
    r->dst_off = -off;
  if (p == NULL || *p != ',' || (p = rule_date(p + 1, &r->start)) == NULL || *p != ',' ||
      (p = rule_date(p + 1, &r->end)) == NULL || *p != '\0')
    return -1;
  return 0;
}

/* Unix day of a rule's date in year y. */
static int64_t rule_day(const rule_date_t *d, int64_t y) {
  int64_t jan1 = idgen__days_from_civil(y, 1, 1);
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d->kind == 'J')
    return jan1 + d->n - 1 + (leap && d->n >= 60);
  if (d->kind == 'D')
    return jan1 + d->n;
  int64_t first = idgen__days_from_civil(y, (unsigned)d->m, 1);
  int64_t next = d->m == 12 ? idgen__days_from_civil(y + 1, 1, 1)
                            : idgen__days_from_civil(y, (unsigned)d->m + 1, 1);
  int wd = (int)(((first + 4) % 7 + 7) % 7); /* 1970-01-01 was a Thursday; Sunday 0 */
  int64_t day = first + (d->d - wd + 7) % 7 + (int64_t)(d->w - 1) * 7;
  while (day >= next)
    day -= 7;
  return day;
}

/* The rule's transitions of years y-1..y+1 in order: times and whether DST
 * starts there. */
static void rule_times(const tz_rule_t *r, int64_t y, int64_t t[6], int dst[6]) {
  int k = 0;
  for (int64_t yy = y - 1; yy <= y + 1; yy++) {
    t[k] = rule_day(&r->end, yy) * 86400 + r->end.time - r->dst_off;
    dst[k++] = 0;
    t[k] = rule_day(&r->start, yy) * 86400 + r->start.time - r->std_off;
    dst[k++] = 1;
  }
  for (int i = 1; i < 6; i++) /* insertion sort; on a tie the end comes first */
    for (int j = i; j > 0 && (t[j] < t[j - 1] || (t[j] == t[j - 1] && dst[j] < dst[j - 1])); j--) {
      int64_t a = t[j];
      int b = dst[j];
      t[j] = t[j - 1], dst[j] = dst[j - 1];
      t[j - 1] = a, dst[j - 1] = b;
    }
}

static int64_t year_of(int64_t t) {
  int64_t y;
  unsigned m, d;
  int64_t days = t / 86400 - (t % 86400 < 0);
  idgen__civil_from_days(days, &y, &m, &d);
  return y;
}

static int32_t rule_offset(const tz_rule_t *r, int64_t t) {
  if (!r->has_dst)
    return r->std_off;
  int64_t ts[6];
  int dst[6], on = 0;
  rule_times(r, year_of(t), ts, dst);
  for (int i = 0; i < 6 && ts[i] <= t; i++)
    on = dst[i];
  return on ? r->dst_off : r->std_off;
}

static int64_t rule_next(const tz_rule_t *r, int64_t t) {
  if (!r->has_dst)
    return INT64_MAX;
  int64_t ts[6];
  int dst[6];
  rule_times(r, year_of(t), ts, dst);
  for (int i = 0; i < 6; i++)
    if (ts[i] > t)
      return ts[i];
  return INT64_MAX; /* cannot happen: year y+1's transitions are later */
}

/* ---- lookups ------------------------------------------------------------ */

/* Index of the last transition at or before t, or -1. */
static int tz_find(const idgen__tz_t *tz, int64_t t) {
  int lo = 0, hi = tz->ntimes; /* times[lo-1] <= t < times[hi] */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (tz->times[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo - 1;
}

int32_t idgen__tz_offset(const idgen__tz_t *tz, int64_t t) {
  int i = tz_find(tz, t);
  if (i == tz->ntimes - 1 && tz->has_rule && (tz->ntimes == 0 || t >= tz->times[i]))
    return rule_offset(&tz->rule, t);
  return tz->offs[i < 0 ? 0 : tz->idx[i]];
}

int64_t idgen__tz_next(const idgen__tz_t *tz, int64_t t) {
  int i = tz_find(tz, t);
  if (i + 1 < tz->ntimes)
    return tz->times[i + 1];
  return tz->has_rule ? rule_next(&tz->rule, t) : INT64_MAX;
}

/* ---- the file ----------------------------------------------------------- */

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static int64_t be64(const uint8_t *p) { return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4)); }

typedef struct tz_counts {
  uint32_t isut, isstd, leap, time, type, chr;
} tz_counts_t;

/* A 44-byte header at p: 0, or -1. */
static int tz_header(const uint8_t *p, size_t len, tz_counts_t *c, int *version) {
  if (len < 44 || memcmp(p, "TZif", 4) != 0)
    return -1;
  *version = p[4] == 0 ? 1 : p[4] - '0';
  c->isut = be32(p + 20), c->isstd = be32(p + 24), c->leap = be32(p + 28);
  c->time = be32(p + 32), c->type = be32(p + 36), c->chr = be32(p + 40);
  if (c->time > TZ_TIMES_MAX || c->type == 0 || c->type > 256 || c->chr == 0 || c->chr > 256 ||
      c->leap > TZ_TIMES_MAX || (c->isut != 0 && c->isut != c->type) ||
      (c->isstd != 0 && c->isstd != c->type))
    return -1;
  return 0;
}

static size_t tz_block_len(const tz_counts_t *c, size_t tsize) {
  return c->time * tsize + c->time + c->type * 6 + c->chr + c->leap * (tsize + 4) + c->isstd +
         c->isut;
}

/* The version 2+ data block at p (its counts c): the tables into tz. */
static const char *tz_block(idgen__tz_t *tz, const uint8_t *p, const tz_counts_t *c) {
  if (c->leap != 0)
    return "leap-second zones (right/...) are not supported";
  tz->ntimes = (int)c->time, tz->ntypes = (int)c->type;
  tz->times = malloc(sizeof *tz->times * (c->time + 1));
  tz->idx = malloc(c->time + 1);
  tz->offs = malloc(sizeof *tz->offs * c->type);
  if (tz->times == NULL || tz->idx == NULL || tz->offs == NULL)
    return "out of memory";
  for (uint32_t i = 0; i < c->time; i++) {
    tz->times[i] = be64(p + 8 * i);
    if (i > 0 && tz->times[i] <= tz->times[i - 1])
      return "transition times out of order";
  }
  p += 8 * c->time;
  for (uint32_t i = 0; i < c->time; i++)
    if ((tz->idx[i] = p[i]) >= c->type)
      return "a transition names a type that does not exist";
  p += c->time;
  for (uint32_t i = 0; i < c->type; i++, p += 6) {
    int32_t off = (int32_t)be32(p);
    if (off < -TZ_OFF_MAX || off > TZ_OFF_MAX || p[4] > 1 || p[5] >= c->chr)
      return "a local time type out of range";
    tz->offs[i] = off;
  }
  p += c->chr;
  for (uint32_t i = 0; i < c->isstd + c->isut; i++)
    if (p[i] > 1)
      return "a standard/UT indicator is not 0 or 1";
  return NULL;
}

int idgen__tz_parse(idgen__tz_t **out, const uint8_t *buf, size_t len, char *err, size_t errlen) {
  tz_counts_t c1, c2;
  int v1, v2;
  const char *why = NULL;
  *out = NULL;
  if (tz_header(buf, len, &c1, &v1) != 0)
    return idgen__err(err, errlen, IDGEN_EPARSE, "tz: not a TZif file (or counts out of range)");
  if (v1 < 2)
    return idgen__err(err, errlen, IDGEN_EPARSE, "tz: TZif version 1 (no 64-bit data)");
  size_t at = 44 + tz_block_len(&c1, 4);
  if (at > len || tz_header(buf + at, len - at, &c2, &v2) != 0 || v2 != v1)
    return idgen__err(err, errlen, IDGEN_EPARSE, "tz: the version 2 header is missing or bad");
  at += 44;
  size_t blen = tz_block_len(&c2, 8);
  if (blen > len - at)
    return idgen__err(err, errlen, IDGEN_EPARSE, "tz: the file ends inside its data");
  idgen__tz_t *tz = calloc(1, sizeof *tz);
  if (tz == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "tz: out of memory");
  if ((why = tz_block(tz, buf + at, &c2)) != NULL)
    goto fail;
  at += blen;
  /* The footer: "\n" TZ "\n", the file's last bytes. */
  char foot[128];
  size_t flen = len - at;
  if (flen < 2 || flen - 2 >= sizeof foot || buf[at] != '\n' || buf[len - 1] != '\n' ||
      memchr(buf + at + 1, '\n', flen - 2) != NULL || memchr(buf + at + 1, '\0', flen - 2)) {
    why = "the footer is missing or malformed";
    goto fail;
  }
  memcpy(foot, buf + at + 1, flen - 2);
  foot[flen - 2] = '\0';
  if (foot[0] != '\0') {
    if (rule_parse(foot, &tz->rule) != 0) {
      why = "the footer is not a POSIX TZ string";
      goto fail;
    }
    tz->has_rule = 1;
  }
  *out = tz;
  return 0;
fail:
  idgen__tz_free(tz);
  return idgen__err(err, errlen, strcmp(why, "out of memory") ? IDGEN_EPARSE : IDGEN_ENOMEM,
                    "tz: %s", why);
}

/* UTC: one type, offset 0, no transitions. */
static int tz_utc(idgen__tz_t **out, char *err, size_t errlen) {
  idgen__tz_t *tz = calloc(1, sizeof *tz);
  if (tz == NULL || (tz->offs = calloc(1, sizeof *tz->offs)) == NULL) {
    free(tz);
    return idgen__err(err, errlen, IDGEN_ENOMEM, "tz: out of memory");
  }
  tz->ntypes = 1;
  *out = tz;
  return 0;
}

static int tz_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 255 || name[0] == '/' || strstr(name, "..") != NULL)
    return 0;
  for (const char *p = name; *p; p++)
    if (!is_alpha(*p) && !is_digit(*p) && strchr("/_+-.", *p) == NULL)
      return 0;
  return 1;
}

int idgen__tz_load(idgen__tz_t **out, const char *name, char *err, size_t errlen) {
  *out = NULL;
  if (name == NULL)
    return tz_utc(out, err, errlen);
  if (!tz_name_ok(name))
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "tz: \"%.64s\" is not a time zone name (an IANA name such as Asia/Shanghai: "
                      "letters, digits, / _ + - ., no \"..\" and no leading /)",
                      name);
  const char *dir = getenv("TZDIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir != NULL && dir[0] ? dir : "/usr/share/zoneinfo", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0)
      return tz_utc(out, err, errlen);
    return idgen__err(err, errlen, IDGEN_EINVAL, "tz: no time zone \"%s\" (%s: %s)", name, path,
                      strerror(errno));
  }
  uint8_t *buf = malloc(TZ_FILE_MAX);
  size_t len = 0;
  ssize_t k = 0;
  if (buf != NULL)
    while (len < TZ_FILE_MAX && (k = read(fd, buf + len, TZ_FILE_MAX - len)) != 0) {
      if (k < 0 && errno == EINTR)
        continue;
      if (k < 0)
        break;
      len += (size_t)k;
    }
  close(fd);
  int rc;
  if (buf == NULL)
    rc = idgen__err(err, errlen, IDGEN_ENOMEM, "tz: out of memory");
  else if (k < 0 || len == TZ_FILE_MAX)
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "tz: cannot read %s", path);
  else if ((rc = idgen__tz_parse(out, buf, len, err, errlen)) != 0 && err != NULL && errlen > 0) {
    char why[200];
    snprintf(why, sizeof why, "%s", err);
    idgen__err(err, errlen, rc, "%s (%s)", why, path);
  }
  free(buf);
  return rc;
}
