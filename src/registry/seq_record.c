/*
 * seq_record.c -- a sequence counter's record: its text and its transitions
 * (seq_int.h).  No I/O: seq.c loads, transforms and stores it through the
 * backend's seq_load / seq_store.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core_int.h"
#include "seq_int.h"

void idgen__seq_rec_init(idgen__seq_rec_t *rec) {
  memset(rec, 0, sizeof *rec);
  rec->next = 1;
}

/* ---- text ----------------------------------------------------------------- */

/* A decimal number without leading zeros at *p, then ' ' or '\n' (not
 * consumed): 0 with *v, or -1. */
static int read_u64(const char **p, const char *end, uint64_t *v) {
  const char *s = *p;
  uint64_t x = 0;
  if (s >= end || *s < '0' || *s > '9' || (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9'))
    return -1;
  for (; s < end && *s >= '0' && *s <= '9'; s++) {
    if (x > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
      return -1;
    x = x * 10 + (uint64_t)(*s - '0');
  }
  if (s >= end || (*s != ' ' && *s != '\n'))
    return -1;
  *p = s;
  *v = x;
  return 0;
}

/* " name=" (or "name=" at the start of a line when first) then a number. */
static int read_field(const char **p, const char *end, const char *name, int first, uint64_t *v) {
  const char *s = *p;
  size_t k = strlen(name);
  if (!first) {
    if (s >= end || *s != ' ')
      return -1;
    s++;
  }
  if ((size_t)(end - s) < k + 1 || memcmp(s, name, k) != 0 || s[k] != '=')
    return -1;
  s += k + 1;
  if (read_u64(&s, end, v) < 0)
    return -1;
  *p = s;
  return 0;
}

static int read_line_end(const char **p, const char *end) {
  if (*p >= end || **p != '\n')
    return -1;
  (*p)++;
  return 0;
}

static int bad(char *err, size_t errlen, idgen__seq_rec_t *rec, const char *what, int line) {
  memset(rec, 0, sizeof *rec);
  return idgen__err(err, errlen, IDGEN_EREGISTRY, "sequence record: line %d: %s", line, what);
}

static int parse_holder(const char **p, const char *end, idgen__seq_holder_t *h) {
  static const char *const names[] = {"gen", "expires_ms", "lo", "hi", "claimed", "issued", "rate"};
  uint64_t v[7];
  const char *s = *p;
  if ((size_t)(end - s) < 7 || memcmp(s, "holder ", 7) != 0)
    return -1;
  s += 7;
  for (int i = 0; i < 7; i++)
    if (read_field(&s, end, names[i], i == 0, &v[i]) < 0)
      return -1;
  if ((size_t)(end - s) < 5 || memcmp(s, " who=", 5) != 0)
    return -1;
  s += 5;
  size_t k = 0;
  for (; s + k < end && s[k] != '\n'; k++)
    if (s[k] <= ' ' || s[k] >= 0x7f)
      return -1;
  if (k == 0 || k >= sizeof h->who || v[0] == 0 || v[1] > INT64_MAX / 2 || v[2] > v[3])
    return -1;
  memcpy(h->who, s, k);
  h->who[k] = '\0';
  s += k;
  h->gen = v[0], h->expires_ms = (int64_t)v[1], h->lo = v[2], h->hi = v[3];
  h->claimed = v[4], h->issued = v[5], h->rate = v[6];
  if (h->issued > h->claimed || read_line_end(&s, end) < 0)
    return -1;
  *p = s;
  return 0;
}

static int parse_head(const char **p, const char *end, idgen__seq_rec_t *rec) {
  static const char *const names[] = {"next",  "gen",  "claimed", "issued",
                                      "given", "lost", "strict",  "owner"};
  uint64_t v[8];
  const char *s = *p;
  if ((size_t)(end - s) < 13 || memcmp(s, "idgen-seq v1 ", 13) != 0)
    return -1;
  s += 13;
  for (int i = 0; i < 8; i++)
    if (read_field(&s, end, names[i], i == 0, &v[i]) < 0)
      return -1;
  if (read_line_end(&s, end) < 0 || v[0] == 0 || v[0] > IDGEN_SEQ_COUNTER_MAX + 1 || v[6] > 1 ||
      v[2] > IDGEN_SEQ_COUNTER_MAX + 1)
    return -1;
  rec->next = v[0], rec->gen = v[1], rec->claimed = v[2], rec->issued = v[3];
  rec->given = v[4], rec->lost = v[5], rec->strict = (int)v[6], rec->owner = v[7];
  *p = s;
  return 0;
}

int idgen__seq_rec_parse(const char *text, size_t n, idgen__seq_rec_t *rec, char *err,
                         size_t errlen) {
  const char *p = text, *end = text + n;
  memset(rec, 0, sizeof *rec);
  if (parse_head(&p, end, rec) < 0)
    return bad(err, errlen, rec,
               "not \"idgen-seq v1 next=N gen=G claimed=C issued=I given=B lost=L strict=0|1 "
               "owner=G\"",
               1);
  uint64_t held = 0;
  while (p < end) {
    if (rec->n == IDGEN_SEQ_HOLDERS_MAX)
      return bad(err, errlen, rec,
                 "more than "
                 "64"
                 " holders",
                 rec->n + 2);
    idgen__seq_holder_t *h = &rec->h[rec->n];
    if (parse_holder(&p, end, h) < 0)
      return bad(err, errlen, rec,
                 "not \"holder gen=G expires_ms=E lo=A hi=B claimed=C issued=I rate=R "
                 "who=HOLDER\" (issued <= claimed, lo <= hi)",
                 rec->n + 2);
    if (h->gen > rec->gen)
      return bad(err, errlen, rec, "a holder's generation above the record's", rec->n + 2);
    for (int i = 0; i < rec->n; i++)
      if (rec->h[i].gen == h->gen)
        return bad(err, errlen, rec, "two holders of one generation", rec->n + 2);
    held += h->claimed - h->issued;
    rec->n++;
  }
  /* The identity, so that a record written by hand cannot make counts wrap. */
  if (rec->issued > rec->claimed || rec->given > rec->claimed - rec->issued ||
      rec->lost > rec->claimed - rec->issued - rec->given ||
      held != rec->claimed - rec->issued - rec->given - rec->lost)
    return bad(err, errlen, rec, "claimed != issued + given + lost + in hand", 1);
  return 0;
}

int idgen__seq_rec_format(const idgen__seq_rec_t *rec, char *buf, size_t n) {
  size_t k = 0;
  int w =
      snprintf(buf, n,
               "idgen-seq v1 next=%" PRIu64 " gen=%" PRIu64 " claimed=%" PRIu64 " issued=%" PRIu64
               " given=%" PRIu64 " lost=%" PRIu64 " strict=%d owner=%" PRIu64 "\n",
               rec->next, rec->gen, rec->claimed, rec->issued, rec->given, rec->lost,
               rec->strict ? 1 : 0, rec->owner);
  if (w < 0 || (size_t)w >= n)
    return -1;
  k = (size_t)w;
  for (int i = 0; i < rec->n; i++) {
    const idgen__seq_holder_t *h = &rec->h[i];
    w = snprintf(buf + k, n - k,
                 "holder gen=%" PRIu64 " expires_ms=%" PRId64 " lo=%" PRIu64 " hi=%" PRIu64
                 " claimed=%" PRIu64 " issued=%" PRIu64 " rate=%" PRIu64 " who=%s\n",
                 h->gen, h->expires_ms, h->lo, h->hi, h->claimed, h->issued, h->rate, h->who);
    if (w < 0 || (size_t)w >= n - k)
      return -1;
    k += (size_t)w;
  }
  return (int)k;
}

/* ---- transitions ---------------------------------------------------------- */

static void drop(idgen__seq_rec_t *rec, int i) {
  memmove(&rec->h[i], &rec->h[i + 1], (size_t)(rec->n - i - 1) * sizeof rec->h[0]);
  rec->n--;
}

void idgen__seq_reap(idgen__seq_rec_t *rec, int64_t now_ms, int64_t ttl_ms) {
  for (int i = 0; i < rec->n;) {
    idgen__seq_holder_t *h = &rec->h[i];
    int owner = rec->strict && rec->owner == h->gen;
    int64_t until = h->expires_ms;
    if (owner && until <= INT64_MAX - ttl_ms)
      until += ttl_ms;
    if (until >= now_ms) {
      i++;
      continue;
    }
    rec->lost += h->claimed - h->issued;
    if (owner)
      rec->owner = 0;
    drop(rec, i);
  }
}

static int find(const idgen__seq_rec_t *rec, uint64_t gen) {
  for (int i = 0; i < rec->n; i++)
    if (rec->h[i].gen == gen)
      return i;
  return -1;
}

/* The holder's entry for a claim or renewal, or -1 with IDGEN_ELEASE. */
static int fenced(idgen__seq_rec_t *rec, uint64_t gen, int *ix, char *err, size_t errlen) {
  *ix = find(rec, gen);
  if (*ix < 0)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "sequence: holder generation %" PRIu64
                      " was reaped (its entry expired; its unissued numbers were counted lost)",
                      gen);
  if (rec->strict && rec->owner != gen)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "sequence: holder generation %" PRIu64
                      " is not the strict sequence's owner (%" PRIu64 ")",
                      gen, rec->owner);
  return 0;
}

/* Folds holder h's report of `issued` (cumulative) in. */
static void report(idgen__seq_rec_t *rec, idgen__seq_holder_t *h, uint64_t issued, uint64_t rate) {
  if (issued > h->claimed)
    issued = h->claimed;
  if (issued > h->issued) {
    rec->issued += issued - h->issued;
    h->issued = issued;
  }
  h->rate = rate;
}

static void late_report(idgen__seq_rec_t *rec, uint64_t gen, uint64_t x) {
  if (gen == 0 || gen > rec->gen || find(rec, gen) >= 0)
    return;
  if (x > rec->lost)
    x = rec->lost;
  rec->lost -= x;
  rec->issued += x;
}

int idgen__seq_register(idgen__seq_rec_t *rec, const char *who, int64_t now_ms, int64_t ttl_ms,
                        int strict, const idgen__seq_late_t *late, uint64_t *gen, char *err,
                        size_t errlen) {
  idgen__seq_reap(rec, now_ms, ttl_ms);
  if (late != NULL)
    late_report(rec, late->gen, late->issued);
  if (rec->n > 0 && !rec->strict != !strict)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence: it is %sstrict and has %d live holder%s (%s): open it %sstrict",
                      rec->strict ? "" : "not ", rec->n, rec->n == 1 ? "" : "s", rec->h[0].who,
                      rec->strict ? "" : "not ");
  if (strict && rec->owner != 0) {
    int i = find(rec, rec->owner);
    if (i >= 0)
      return idgen__err(
          err, errlen, IDGEN_ELEASE,
          "sequence: strict, held by %s (generation %" PRIu64 "), whose entry expires at %" PRId64
          " ms (in %" PRId64 " ms by the registry's clock, then %" PRId64 " ms of quarantine)",
          rec->h[i].who, rec->owner, rec->h[i].expires_ms, rec->h[i].expires_ms - now_ms, ttl_ms);
  }
  if (rec->n == IDGEN_SEQ_HOLDERS_MAX)
    return idgen__err(err, errlen, IDGEN_EPOOLFULL,
                      "sequence: %d live holders already, the most a sequence keeps", rec->n);
  idgen__seq_holder_t *h = &rec->h[rec->n++];
  memset(h, 0, sizeof *h);
  h->gen = ++rec->gen;
  h->expires_ms = now_ms + ttl_ms;
  h->lo = h->hi = rec->next;
  snprintf(h->who, sizeof h->who, "%s", who);
  rec->strict = strict ? 1 : 0;
  if (strict)
    rec->owner = h->gen;
  *gen = h->gen;
  return 0;
}

int idgen__seq_claim(idgen__seq_rec_t *rec, uint64_t gen, uint64_t step, int64_t now_ms,
                     int64_t ttl_ms, uint64_t issued, uint64_t rate, uint64_t *lo, uint64_t *hi,
                     char *err, size_t errlen) {
  int i;
  idgen__seq_reap(rec, now_ms, ttl_ms);
  int rc = fenced(rec, gen, &i, err, errlen);
  if (rc < 0)
    return rc;
  idgen__seq_holder_t *h = &rec->h[i];
  report(rec, h, issued, rate);
  if (rec->next > IDGEN_SEQ_COUNTER_MAX)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "sequence: the counter is past %" PRIu64 ", the highest number",
                      IDGEN_SEQ_COUNTER_MAX);
  uint64_t left = IDGEN_SEQ_COUNTER_MAX + 1 - rec->next;
  if (step == 0)
    step = 1;
  if (step > left)
    step = left;
  *lo = rec->next;
  *hi = rec->next + step;
  rec->next = *hi;
  h->lo = *lo, h->hi = *hi;
  h->claimed += step;
  h->expires_ms = now_ms + ttl_ms;
  rec->claimed += step;
  return 0;
}

int idgen__seq_renew(idgen__seq_rec_t *rec, uint64_t gen, int64_t now_ms, int64_t ttl_ms,
                     uint64_t issued, uint64_t rate, char *err, size_t errlen) {
  int i;
  idgen__seq_reap(rec, now_ms, ttl_ms);
  int rc = fenced(rec, gen, &i, err, errlen);
  if (rc < 0)
    return rc;
  report(rec, &rec->h[i], issued, rate);
  rec->h[i].expires_ms = now_ms + ttl_ms;
  return 0;
}

int idgen__seq_close(idgen__seq_rec_t *rec, uint64_t gen, int64_t now_ms, int64_t ttl_ms,
                     const uint64_t *u, const uint64_t *hi, int nranges, uint64_t issued,
                     uint64_t reported, uint64_t *given, char *err, size_t errlen) {
  (void)err, (void)errlen;
  *given = 0;
  idgen__seq_reap(rec, now_ms, ttl_ms);
  int i = find(rec, gen);
  if (i < 0) {
    late_report(rec, gen, issued > reported ? issued - reported : 0);
    return 0;
  }
  idgen__seq_holder_t *h = &rec->h[i];
  report(rec, h, issued, h->rate);
  uint64_t unissued = h->claimed - h->issued, g = 0;
  for (int k = nranges - 1; k >= 0; k--) {
    if (hi[k] != rec->next || u[k] > hi[k] || hi[k] - u[k] > unissued - g)
      break;
    g += hi[k] - u[k];
    rec->next = u[k];
  }
  rec->given += g;
  rec->lost += unissued - g;
  if (rec->strict && rec->owner == gen)
    rec->owner = 0;
  drop(rec, i);
  *given = g;
  return 0;
}

int idgen__seq_set(idgen__seq_rec_t *rec, uint64_t next, char *err, size_t errlen) {
  if (next < rec->next)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "sequence: %" PRIu64 " is below the counter's next number %" PRIu64
                      " (a counter moves forward only)",
                      next, rec->next);
  if (next > IDGEN_SEQ_COUNTER_MAX + 1)
    return idgen__err(err, errlen, IDGEN_ERANGE, "sequence: %" PRIu64 " is past %" PRIu64, next,
                      IDGEN_SEQ_COUNTER_MAX);
  rec->next = next;
  return 0;
}
