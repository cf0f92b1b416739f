/*
 * seq_stub_cli.c -- TEMPORARY STAND-IN for the sequence library (seq.c), so
 * that the CLI and the daemon's sequence surfaces build and run before it
 * lands.  DELETE THIS FILE when the real seq.c is merged.
 *
 * Counters live in files DIR/.seqstub-KEY of a file: registry (other
 * registries: in process memory), claimed under flock.  No holders, no
 * renewals, no fencing: none of the real guarantees beyond one host.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"

struct idgen_seq {
  pthread_mutex_t mu;
  char key[IDGEN_SEQ_KEY_MAX];
  char dir[1024];
  uint64_t lo, hi, step, issued, claimed, claims;
  idgen_seq_format_t *format;
  char name[IDGEN_SEQ_NAME_MAX];
  int64_t period_end_ms;
  uint64_t mem; /* the counter when there is no directory */
};

int idgen_seq_name_check(const char *name, char *err, size_t errlen) {
  size_t n = name ? strlen(name) : 0;
  int ok = n >= 1 && n < IDGEN_SEQ_NAME_MAX && name[0] >= 'a' && name[0] <= 'z';
  for (size_t i = 1; ok && i < n; i++)
    ok = (name[i] >= 'a' && name[i] <= 'z') || isdigit((unsigned char)name[i]) || name[i] == '_' ||
         name[i] == '-';
  if (!ok) {
    if (err && errlen)
      snprintf(err, errlen, "sequence name \"%s\" is not [a-z][a-z0-9_-]{0,63}",
               name ? IDGEN_QUOTE(name, n, 0, 80) : "");
    return IDGEN_EINVAL;
  }
  return 0;
}

void idgen_seq_settings_init(idgen_seq_settings_t *s) {
  memset(s, 0, sizeof *s);
  s->min_step = 1000;
  s->max_step = 100000000;
  s->prefetch = 0.25;
  s->ahead = 1;
  s->segment_target_ms = 60000;
  s->ttl_ms = 10000;
  s->wait_ms = 5000;
}

static int dir_of(idgen_registry_t *r, char *dir, size_t n) {
  const char *u = idgen_registry_uri(r);
  if (strncmp(u, "file:", 5) != 0)
    return -1;
  snprintf(dir, n, "%s", u + 5);
  char *q = strchr(dir, '?');
  if (q)
    *q = '\0';
  return 0;
}

/* Reads and rewrites the counter file under flock: *v gets the old value;
 * put(v) writes the new one when it returns nonzero. */
static int with_counter(const char *dir, const char *key, uint64_t *v, uint64_t want, int mode) {
  char path[1200];
  snprintf(path, sizeof path, "%s/.seqstub-%s", dir, key);
  int fd = open(path, O_RDWR | O_CREAT, 0644);
  if (fd < 0)
    return IDGEN_EREGISTRY;
  flock(fd, LOCK_EX);
  char buf[32] = {0};
  ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
  uint64_t cur = k > 0 ? strtoull(buf, NULL, 10) : 1;
  int rc = 0;
  uint64_t nv = cur;
  if (mode == 0) /* claim want numbers */
    nv = cur + want;
  else if (mode == 1) /* give back to want when cur == v */
    nv = cur == *v ? want : cur;
  else if (mode == 2) /* set forward */
    rc = want > cur ? 0 : (want == cur ? 0 : IDGEN_ERANGE), nv = want >= cur ? want : cur;
  *v = cur;
  if (mode != 3 && rc == 0) {
    int m = snprintf(buf, sizeof buf, "%" PRIu64 "\n", nv);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)m, 0) != m)
      rc = IDGEN_EREGISTRY;
  }
  flock(fd, LOCK_UN);
  close(fd);
  return rc;
}

int idgen_seq_open(idgen_seq_t **out, idgen_registry_t *r, const char *name,
                   const idgen_seq_settings_t *s, char *err, size_t errlen) {
  if (idgen_seq_name_check(name, err, errlen) < 0)
    return IDGEN_EINVAL;
  if (r != NULL && strncmp(idgen_registry_uri(r), "static", 6) == 0) {
    snprintf(err, errlen, "sequence %s: the static registry keeps no counters", name);
    return IDGEN_EINVAL;
  }
  idgen_seq_t *q = calloc(1, sizeof *q);
  if (q == NULL)
    return IDGEN_ENOMEM;
  pthread_mutex_init(&q->mu, NULL);
  snprintf(q->key, sizeof q->key, "%s", name);
  if (r == NULL || dir_of(r, q->dir, sizeof q->dir) < 0)
    q->dir[0] = '\0';
  q->step = s && s->step ? s->step : s && s->min_step ? s->min_step : 1000;
  q->mem = 1;
  snprintf(q->name, sizeof q->name, "%s", name);
  if (s && s->format && idgen_seq_format_parse(&q->format, s->format, s->tz, err, errlen) < 0) {
    free(q);
    return IDGEN_EINVAL;
  }
  *out = q;
  return 0;
}

static int claim(idgen_seq_t *s) {
  uint64_t v = 0;
  if (s->dir[0]) {
    int rc = with_counter(s->dir, s->key, &v, s->step, 0);
    if (rc < 0)
      return rc;
  } else {
    v = s->mem;
    s->mem += s->step;
  }
  s->lo = v;
  s->hi = v + s->step;
  s->claimed += s->step;
  s->claims++;
  return 0;
}

int idgen_seq_next_n(idgen_seq_t *s, uint64_t *out, size_t n) {
  pthread_mutex_lock(&s->mu);
  for (size_t i = 0; i < n; i++) {
    if (s->lo == s->hi) {
      int rc = claim(s);
      if (rc < 0) {
        pthread_mutex_unlock(&s->mu);
        return rc;
      }
    }
    out[i] = s->lo++;
    s->issued++;
  }
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int idgen_seq_next(idgen_seq_t *s, uint64_t *n) { return idgen_seq_next_n(s, n, 1); }

int idgen_seq_next_text(idgen_seq_t *s, char *buf, size_t buflen, uint64_t *n) {
  if (s->format == NULL)
    return IDGEN_EINVAL;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  char period[64];
  int64_t end;
  if (idgen_seq_format_period(s->format, now, period, sizeof period, &end) < 0)
    return IDGEN_ERANGE;
  pthread_mutex_lock(&s->mu);
  char key[IDGEN_SEQ_KEY_MAX];
  snprintf(key, sizeof key, "%s%s%s", s->name, period[0] ? "@" : "", period);
  if (strcmp(key, s->key) != 0) { /* a new period: its own counter */
    if (s->dir[0] && s->lo < s->hi) {
      uint64_t v = s->hi;
      with_counter(s->dir, s->key, &v, s->lo, 1);
    }
    snprintf(s->key, sizeof s->key, "%s", key);
    s->lo = s->hi = 0;
    s->mem = 1;
  }
  pthread_mutex_unlock(&s->mu);
  uint64_t v;
  int rc = idgen_seq_next(s, &v);
  if (rc < 0)
    return rc;
  if (n)
    *n = v;
  return idgen_seq_format_render(s->format, now, v, buf, buflen);
}

void idgen_seq_close(idgen_seq_t *s) {
  if (s == NULL)
    return;
  if (s->dir[0] && s->lo < s->hi) {
    uint64_t v = s->hi;
    with_counter(s->dir, s->key, &v, s->lo, 1);
  }
  idgen_seq_format_free(s->format);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void idgen_seq_stats(idgen_seq_t *s, idgen_seq_stats_t *st) {
  memset(st, 0, sizeof *st);
  pthread_mutex_lock(&s->mu);
  snprintf(st->key, sizeof st->key, "%s", s->key);
  st->step = s->step;
  st->in_hand = s->hi - s->lo;
  st->issued = s->issued;
  st->claimed = s->claimed;
  st->claims = s->claims;
  st->lasts_ms = -1;
  pthread_mutex_unlock(&s->mu);
}

int idgen_seq_list(idgen_registry_t *r, idgen_seq_list_cb cb, void *ctx, char *err, size_t errlen) {
  char dir[1024];
  if (dir_of(r, dir, sizeof dir) < 0)
    return 0;
  DIR *d = opendir(dir);
  if (d == NULL) {
    snprintf(err, errlen, "registry: cannot read %s", dir);
    return IDGEN_EREGISTRY;
  }
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (strncmp(e->d_name, ".seqstub-", 9) != 0)
      continue;
    idgen_seq_row_t row;
    memset(&row, 0, sizeof row);
    snprintf(row.space, sizeof row.space, "default");
    snprintf(row.key, sizeof row.key, "%s", e->d_name + 9);
    with_counter(dir, row.key, &row.next, 0, 3);
    row.claimed = row.next - 1;
    rc = cb(ctx, &row);
  }
  closedir(d);
  return rc;
}

int idgen_seq_set(idgen_registry_t *r, const char *key, uint64_t next, char *err, size_t errlen) {
  char dir[1024];
  if (dir_of(r, dir, sizeof dir) < 0) {
    snprintf(err, errlen, "stub: file: registries only");
    return IDGEN_EREGISTRY;
  }
  uint64_t cur = 0;
  int rc = with_counter(dir, key, &cur, next, 2);
  if (rc == IDGEN_ERANGE)
    snprintf(err, errlen,
             "sequence %s: %" PRIu64 " is not above what was claimed (the next number is %" PRIu64
             "): a counter only moves forward",
             key, next, cur);
  return rc;
}
