/*
 * space.c -- one registry, one ID space (docs/DESIGN.md §11): which layouts may
 * lease beside which, and where a layout that takes a space over starts.
 *
 * A pool (registry_int.h) keeps the holders of one layout geometry apart;
 * it knows nothing of other geometries, whose IDs can be equal to its own
 * (twitter's layout and the same 10 node bits split 5+6 with an 11-bit
 * sequence repeated 250,144 of 1,000,000 IDs; `spaces` in
 * tests/registry/suite_contract.py checks the refusal).  So each space
 * (a registry's default space, or one named with ?space=NAME) keeps a
 * record of the layouts that lease in it (registry_int.h,
 * idgen__space_t), and every acquisition looks at it first, under a lock
 * (file:), a row lock (postgres://) or a compared revision (etcd://) that
 * the backend's claim of a tuple also takes, so that the look and the
 * claim are one step:
 *
 *   - A layout already in the record leases as before: nothing to decide.
 *   - A new layout is compared with every layout of another pool in the
 *     record, by the range of IDs each can ever issue there: from the first
 *     ID of the tick after its floor (its holders start above it) up to the
 *     largest ID its bits can hold.  Disjoint ranges cannot meet, so both
 *     stay.  Overlapping ones meet unless one is gone: a pool none of whose
 *     tuples is held or in quarantine is retired (the IDs it may have
 *     issued, from its floor up to the highest ID of its pool-wide mark,
 *     kept as a `retired` range); a live one refuses the newcomer, naming
 *     its layout, its holders and the remedy.
 *   - The newcomer's floor is a minute before now (so that its range has a
 *     lower end a later layout can be compared with), raised to the tick
 *     whose first ID is above every retired range its range meets.  A floor
 *     that cannot be reached within max_start_wait_ms is refused with the
 *     date it could start; one past the layout's end, with the advice to
 *     use a space of its own.
 *
 * The record never weakens a guarantee: layouts of two pools in it have
 * disjoint ranges (checked when the later one joined), retired ranges only
 * grow, and a retired pool's holders are gone (file: their locks are free;
 * network registries: their leases and quarantines have run out, and
 * postgres also fences the pool's rows), so they cannot issue again
 * without joining anew, above what their pool issued.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

/* A layout's holders start at most this long before it joined (see above). */
#define JOIN_MARGIN_MS 60000

/* ---- names and URIs -------------------------------------------------------------- */

int idgen__space_name_check(const char *name, char *err, size_t errlen) {
  size_t n = strlen(name);
  if (n == 0 || n >= IDGEN_SPACE_NAME_MAX || name[0] < 'a' || name[0] > 'z' ||
      strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: space \"%s\" is not a space name (a lower-case letter, then up "
                      "to %d of a-z, 0-9, _ and -)",
                      IDGEN_QUOTE(name, n, '"', 60), IDGEN_SPACE_NAME_MAX - 2);
  return 0;
}

int idgen__uri_take_space(const char *uri, char *out, size_t outlen, char *space, char *err,
                          size_t errlen) {
  space[0] = '\0';
  if (strlen(uri) >= outlen)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: URI too long");
  const char *q = strchr(uri, '?');
  if (q == NULL) {
    strcpy(out, uri);
    return 0;
  }
  /* The query's parameters but space=, in their order. */
  size_t used = (size_t)(q - uri);
  memcpy(out, uri, used);
  out[used] = '\0';
  int kept = 0;
  for (const char *p = q + 1; *p;) {
    size_t len = strcspn(p, "&");
    if (len > 6 && strncmp(p, "space=", 6) == 0) {
      char name[IDGEN_SPACE_NAME_MAX + 1];
      size_t vl = len - 6;
      if (space[0] != '\0')
        return idgen__err(err, errlen, IDGEN_EINVAL, "registry: space= given twice in the URI");
      if (vl >= sizeof name)
        return idgen__err(err, errlen, IDGEN_EINVAL,
                          "registry: space \"%s\" is not a space name (at most %d characters)",
                          IDGEN_QUOTE(p + 6, vl, '"', 60), IDGEN_SPACE_NAME_MAX - 1);
      memcpy(name, p + 6, vl);
      name[vl] = '\0';
      int rc = idgen__space_name_check(name, err, errlen);
      if (rc < 0)
        return rc;
      strcpy(space, name);
    } else if (len == 5 && strncmp(p, "space", 5) == 0) {
      return idgen__err(err, errlen, IDGEN_EINVAL, "registry: space= needs a name");
    } else if (len == 6 && strncmp(p, "space=", 6) == 0) {
      return idgen__err(err, errlen, IDGEN_EINVAL, "registry: space= needs a name");
    } else if (len > 0) {
      out[used++] = kept++ ? '&' : '?';
      memcpy(out + used, p, len);
      used += len;
      out[used] = '\0';
    }
    p += len;
    if (*p == '&')
      p++;
  }
  return 0;
}

/* ---- pools ---------------------------------------------------------------------- */

void idgen__pool_name(const idgen_layout_t *l, char *buf) {
  const idgen_field_t *t = &l->fields[l->time_index], *q = &l->fields[l->sequence_index];
  char tick[32];
  if (l->unit_ms % 1000 == 0)
    snprintf(tick, sizeof tick, "%llds", (long long)(l->unit_ms / 1000));
  else
    snprintf(tick, sizeof tick, "%lldms", (long long)l->unit_ms);
  int n = snprintf(buf, IDGEN_POOL_NAME_MAX, "epoch=%lld,tick=%s,time@%u,sequence@%u:%u",
                   (long long)l->epoch_ms, tick, t->shift, q->shift, q->bits);
  /* At most 77 characters (an epoch of 20, a tick of 22, three numbers of
   * 2, 29 others): it fits, so two geometries never share a cut name. */
  assert(n > 0 && n < IDGEN_POOL_NAME_MAX);
  (void)n;
}

/* ---- IDs and ticks of a layout ---------------------------------------------------- */

static uint64_t layout_max_id(const idgen_layout_t *l) {
  return l->total_bits >= 64 ? UINT64_MAX : (UINT64_C(1) << l->total_bits) - 1;
}

static uint64_t max_tick(const idgen_layout_t *l) {
  const idgen_field_t *t = &l->fields[l->time_index];
  return t->bits >= 64 ? UINT64_MAX : (UINT64_C(1) << t->bits) - 1;
}

/* The first tick a holder starting above `floor_ms` may use. */
static uint64_t first_tick(const idgen_layout_t *l, int64_t floor_ms) {
  if (floor_ms < l->epoch_ms)
    return 0;
  return (uint64_t)(floor_ms - l->epoch_ms) / (uint64_t)l->unit_ms + 1;
}

/* The smallest ID of tick t: every other field 0. */
static uint64_t tick_low(const idgen_layout_t *l, uint64_t t) {
  return t << l->fields[l->time_index].shift;
}

int idgen__space_high_id(const idgen_layout_t *l, int64_t mark_ms, uint64_t keys, uint64_t *id) {
  *id = 0;
  if (mark_ms < l->epoch_ms)
    return 0; /* nothing issued */
  const idgen_field_t *t = &l->fields[l->time_index];
  uint64_t tick = (uint64_t)(mark_ms - l->epoch_ms) / (uint64_t)l->unit_ms;
  if (tick > max_tick(l))
    tick = max_tick(l);
  /* Every ID of a tuple with key k up to that tick is at most
   * tick << shift | k | (the bits under the time field): its bits above
   * the time field are k's, a subset of `keys` (the OR of every key), and
   * its time field is at most tick.  This holds whatever layout of the
   * pool's geometry issued it (node fields above the time field too), so a
   * layout only guessed from the pool's name loses nothing.  And every bit
   * l itself puts above its time field: a tuple whose key was lost (a row
   * deleted by hand: 1,500,864 duplicates before; deleted_row_takeover in
   * tests/registry/suite_pg.py) is still covered when the pool's layout is
   * known. */
  uint64_t below = (UINT64_C(1) << t->shift) - 1;
  unsigned top = t->shift + t->bits;
  uint64_t above = top >= 64 ? 0 : layout_max_id(l) & ~((UINT64_C(1) << top) - 1);
  *id = tick << t->shift | below | keys | above;
  return 1;
}

/* The floor (Unix ms: holders start above its tick) whose next tick's
 * first ID is above `id`: 0, or -1 if the layout has no such tick. */
static int floor_above(const idgen_layout_t *l, uint64_t id, int64_t *floor_ms) {
  unsigned shift = l->fields[l->time_index].shift;
  uint64_t t = (id >> shift) + 1;
  if (t == 0 || t > max_tick(l))
    return -1;
  /* The last ms of tick t - 1: the generator starts at tick t. */
  *floor_ms = l->epoch_ms + (int64_t)t * l->unit_ms - 1;
  return 0;
}

/* ---- the record ------------------------------------------------------------------ */

int idgen__pool_guess_layout(const char *pool, idgen_layout_t *l) {
  long long epoch;
  unsigned tick, t, s, b;
  char unit[3] = "", spec[256];
  int used = 0;
  if (sscanf(pool, "epoch=%lld,tick=%u%2[ms],time@%u,sequence@%u:%u%n", &epoch, &tick, unit, &t, &s,
             &b, &used) != 6 ||
      pool[used] != '\0' || t == 0 || t >= 64 || b == 0 || s + b > t)
    return -1;
  /* time at the top, as wide as 64 bits allow; the bits between the
   * sequence and time, and under the sequence, as node fields. */
  int n = snprintf(spec, sizeof spec, "time:%u@%u%s", 64 - t, tick, unit);
  if (t > s + b)
    n += snprintf(spec + n, sizeof spec - (size_t)n, ",node_a:%u", t - s - b);
  n += snprintf(spec + n, sizeof spec - (size_t)n, ",sequence:%u", b);
  if (s > 0)
    n += snprintf(spec + n, sizeof spec - (size_t)n, ",node_b:%u", s);
  snprintf(spec + n, sizeof spec - (size_t)n, ",epoch=%lld", epoch);
  if (idgen_layout_parse(l, spec, NULL, 0) < 0)
    return -1;
  char again[IDGEN_POOL_NAME_MAX];
  idgen__pool_name(l, again);
  return strcmp(again, pool) == 0 ? 0 : -1;
}

/* A member's layout: its spec, which must make its pool. */
static int member_layout(const idgen__space_member_t *m, idgen_layout_t *l) {
  char pool[IDGEN_POOL_NAME_MAX];
  if (idgen_layout_parse(l, m->spec, NULL, 0) < 0)
    return -1;
  idgen__pool_name(l, pool);
  return strcmp(pool, m->pool) == 0 ? 0 : -1;
}

#define POOL_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_=,@:.-"

/* A decimal number of at most 20 digits without sign, or "-" with *none. */
static int parse_u64(const char *s, size_t n, uint64_t *v) {
  if (n == 0 || n > 20 || strspn(s, "0123456789") < n || (n > 1 && s[0] == '0'))
    return -1;
  char buf[24], *end;
  memcpy(buf, s, n);
  buf[n] = '\0';
  if (n == 20 && strcmp(buf, "18446744073709551615") > 0)
    return -1;
  *v = strtoull(buf, &end, 10);
  return 0;
}

/* The value of `name=` in line[0..n), up to the next space: its length,
 * or -1. */
static long field(const char *line, size_t n, const char *name, const char **val) {
  size_t k = strlen(name);
  if (n < k || memcmp(line, name, k) != 0)
    return -1;
  *val = line + k;
  const char *sp = memchr(*val, ' ', n - k);
  return sp ? sp - *val : (long)(n - k);
}

/* Adds [lo, hi] to the retired ranges, merging every range it meets or
 * touches; when there would be too many, the two closest merge (wider:
 * only ever stricter). */
static void retire_range(idgen__space_t *s, uint64_t lo, uint64_t hi) {
  uint64_t a[IDGEN__SPACE_RETIRED_MAX + 1], b[IDGEN__SPACE_RETIRED_MAX + 1];
  int n = 0, i = 0;
  for (; i < s->nretired && s->lo[i] < lo; i++, n++)
    a[n] = s->lo[i], b[n] = s->hi[i];
  a[n] = lo, b[n] = hi, n++;
  for (; i < s->nretired; i++, n++)
    a[n] = s->lo[i], b[n] = s->hi[i];
  int k = 0;
  for (i = 0; i < n; i++) {
    if (k > 0 && (b[k - 1] == UINT64_MAX || a[i] <= b[k - 1] + 1)) {
      if (b[i] > b[k - 1])
        b[k - 1] = b[i];
      continue;
    }
    a[k] = a[i], b[k] = b[i], k++;
  }
  while (k > IDGEN__SPACE_RETIRED_MAX) {
    int best = 0;
    for (i = 1; i + 1 < k; i++)
      if (a[i + 1] - b[i] < a[best + 1] - b[best])
        best = i;
    b[best] = b[best + 1];
    for (i = best + 1; i + 1 < k; i++)
      a[i] = a[i + 1], b[i] = b[i + 1];
    k--;
  }
  memcpy(s->lo, a, (size_t)k * sizeof a[0]);
  memcpy(s->hi, b, (size_t)k * sizeof b[0]);
  s->nretired = k;
}

static int parse(const char *text, size_t n, idgen__space_t *s, char *err, size_t errlen);

int idgen__space_parse(const char *text, size_t n, idgen__space_t *s, char *err, size_t errlen) {
  int rc = parse(text, n, s, err, errlen);
  if (rc < 0)
    memset(s, 0, sizeof *s); /* nothing half-read is left behind */
  return rc;
}

static int parse(const char *text, size_t n, idgen__space_t *s, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  static const char head[] = "idgen-space v1\n";
  const char *p = text, *end = text + n, *eol;
  if (n < sizeof head - 1 || memcmp(p, head, sizeof head - 1) != 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "not an idgen space record (no \"idgen-space v1\" line)");
  int line = 1;
  for (p += sizeof head - 1; p < end; p = eol + 1) {
    line++;
    eol = memchr(p, '\n', (size_t)(end - p));
    if (eol == NULL)
      return idgen__err(err, errlen, IDGEN_EREGISTRY, "space record: line %d is not whole", line);
    size_t len = (size_t)(eol - p), left;
    const char *v, *q;
    long vl;
    if (len > 8 && memcmp(p, "retired ", 8) == 0) {
      /* "retired lo=L hi=H", in order, apart from the one before */
      uint64_t lo, hi;
      q = p + 8, left = len - 8;
      if (s->n > 0 || s->nretired == IDGEN__SPACE_RETIRED_MAX ||
          (vl = field(q, left, "lo=", &v)) < 0 || parse_u64(v, (size_t)vl, &lo) < 0)
        goto bad;
      left -= (size_t)(v + vl - q), q = v + vl;
      if (left < 1 || *q != ' ')
        goto bad;
      q++, left--;
      if ((vl = field(q, left, "hi=", &v)) < 0 || (size_t)vl != left - 3 ||
          parse_u64(v, (size_t)vl, &hi) < 0 || hi < lo)
        goto bad;
      if (s->nretired > 0 &&
          (lo <= s->hi[s->nretired - 1] + 1 || s->hi[s->nretired - 1] == UINT64_MAX))
        goto bad;
      s->lo[s->nretired] = lo;
      s->hi[s->nretired++] = hi;
      continue;
    }
    if (s->n == IDGEN__SPACE_MAX)
      return idgen__err(err, errlen, IDGEN_EREGISTRY, "space record: more than %d layouts",
                        IDGEN__SPACE_MAX);
    idgen__space_member_t *m = &s->m[s->n];
    uint64_t floor;
    /* "layout floor_ms=F pool=POOL spec=LAYOUT" */
    if (len < 7 || memcmp(p, "layout ", 7) != 0)
      goto bad;
    q = p + 7, left = len - 7;
    if ((vl = field(q, left, "floor_ms=", &v)) < 0 || parse_u64(v, (size_t)vl, &floor) < 0 ||
        floor > INT64_MAX)
      goto bad;
    m->floor_ms = (int64_t)floor;
    left -= (size_t)(v + vl - q), q = v + vl;
    if (left < 1 || *q != ' ')
      goto bad;
    q++, left--;
    if ((vl = field(q, left, "pool=", &v)) < 0 || vl == 0 || (size_t)vl >= sizeof m->pool ||
        strspn(v, POOL_CHARS) < (size_t)vl)
      goto bad;
    memcpy(m->pool, v, (size_t)vl);
    left -= (size_t)(v + vl - q), q = v + vl;
    if (left < 1 || *q != ' ')
      goto bad;
    q++, left--;
    if ((vl = field(q, left, "spec=", &v)) < 0 || (size_t)vl != left - 5 || vl == 0 ||
        (size_t)vl >= sizeof m->spec || strspn(v, POOL_CHARS) < (size_t)vl)
      goto bad;
    memcpy(m->spec, v, (size_t)vl);
    idgen_layout_t l;
    if (member_layout(m, &l) < 0)
      return idgen__err(err, errlen, IDGEN_EREGISTRY,
                        "space record: line %d: layout %s does not make pool %s", line, m->spec,
                        m->pool);
    for (int i = 0; i < s->n; i++)
      if (strcmp(s->m[i].pool, m->pool) == 0)
        return idgen__err(err, errlen, IDGEN_EREGISTRY, "space record: line %d: pool %s twice",
                          line, m->pool);
    s->n++;
    continue;
  bad:
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "space record: line %d is not \"retired lo=N hi=N\" (in order, before "
                      "the layouts) nor \"layout floor_ms=N pool=POOL spec=LAYOUT\": \"%s\"",
                      line, IDGEN_QUOTE(p, len, '"', 80));
  }
  return 0;
}

int idgen__space_format(const idgen__space_t *s, char *buf, size_t n) {
  int k = snprintf(buf, n, "idgen-space v1\n");
  if (k < 0 || (size_t)k >= n)
    return -1;
  size_t used = (size_t)k;
  for (int i = 0; i < s->nretired; i++) {
    k = snprintf(buf + used, n - used, "retired lo=%" PRIu64 " hi=%" PRIu64 "\n", s->lo[i],
                 s->hi[i]);
    if (k < 0 || (size_t)k >= n - used)
      return -1;
    used += (size_t)k;
  }
  for (int i = 0; i < s->n; i++) {
    k = snprintf(buf + used, n - used, "layout floor_ms=%" PRId64 " pool=%s spec=%s\n",
                 s->m[i].floor_ms, s->m[i].pool, s->m[i].spec);
    if (k < 0 || (size_t)k >= n - used)
      return -1;
    used += (size_t)k;
  }
  return (int)used;
}

int idgen__space_add_pool(idgen__space_t *s, const char *pool) {
  s->provisional = 1;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->m[i].pool, pool) == 0)
      return 0;
  if (s->n == IDGEN__SPACE_MAX)
    return -1;
  idgen__space_member_t *m = &s->m[s->n];
  memset(m, 0, sizeof *m);
  snprintf(m->pool, sizeof m->pool, "%s", pool);
  /* Whatever layouts used the pool (its file names only the first, and a
   * wider one of the same geometry may have run since: 749,568 of 60,000,000
   * IDs repeated with a version that trusted the first): the widest of its
   * geometry, whose range holds every ID any of them can make. */
  idgen_layout_t l;
  if (idgen__pool_guess_layout(pool, &l) < 0 ||
      idgen_layout_format(&l, m->spec, sizeof m->spec) < 0)
    return -1;
  s->n++;
  return 0;
}

/* ---- joining ---------------------------------------------------------------------- */

/* Whether the range of member m overlaps [lo, hi]. */
static int overlaps(const idgen__space_member_t *m, uint64_t lo, uint64_t hi) {
  idgen_layout_t l;
  if (member_layout(m, &l) < 0)
    return 1; /* cannot tell: as if it did */
  uint64_t t = first_tick(&l, m->floor_ms);
  if (t > max_tick(&l))
    return 0; /* it can issue nothing more */
  uint64_t mlo = tick_low(&l, t), mhi = layout_max_id(&l);
  return mlo <= hi && lo <= mhi;
}

/* [lo, hi]: the IDs layout l can issue with its holders above `floor`. */
static void range_of(const idgen_layout_t *l, int64_t floor, uint64_t *lo, uint64_t *hi) {
  uint64_t t = first_tick(l, floor);
  *hi = layout_max_id(l);
  *lo = t > max_tick(l) ? *hi : tick_low(l, t);
}

/* Raises *floor above every retired range that l's range meets, lowest
 * first: 0, or -1 (with the range in *hi) if l cannot get above one. */
static int above_retired(const idgen__space_t *s, const idgen_layout_t *l, int64_t *floor,
                         uint64_t *hi_out) {
  for (int i = 0; i < s->nretired; i++) {
    uint64_t lo, hi;
    int64_t above;
    range_of(l, *floor, &lo, &hi);
    if (s->lo[i] > hi || s->hi[i] < lo)
      continue;
    *hi_out = s->hi[i];
    if (floor_above(l, s->hi[i], &above) < 0)
      return -1;
    if (above > *floor)
      *floor = above;
  }
  return 0;
}

/* The entry of pool `pool` in s, or -1. */
static int pool_entry(const idgen__space_t *s, const char *pool) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->m[i].pool, pool) == 0)
      return i;
  return -1;
}

/* Whether layout l's IDs are all within the range of entry m's layout (the
 * same pool): the same floor, and no more bits. */
static int covered(const idgen__space_member_t *m, const idgen_layout_t *l) {
  idgen_layout_t ml;
  return member_layout(m, &ml) == 0 && layout_max_id(l) <= layout_max_id(&ml);
}

int idgen__space_member(const idgen__space_t *s, const idgen__pool_t *p, const idgen_layout_t *l,
                        int64_t *floor_ms) {
  int i = s->provisional ? -1 : pool_entry(s, p->name);
  if (i < 0 || !covered(&s->m[i], l))
    return 0;
  *floor_ms = s->m[i].floor_ms;
  return 1;
}

/* A minute before now, at a tick's end (so that its holders can start in
 * the tick of `now`; a floor inside it would make them wait for the next,
 * a whole minute or day on long ticks), or 0 before the epoch. */
static int64_t margin_floor(const idgen_layout_t *l, int64_t now) {
  int64_t at = now - JOIN_MARGIN_MS;
  if (at < l->epoch_ms)
    return 0;
  uint64_t t = (uint64_t)(at - l->epoch_ms) / (uint64_t)l->unit_ms;
  return t == 0 ? 0 : l->epoch_ms + (int64_t)t * l->unit_ms - 1;
}

/* Retires entry i of s (none of its pool's tuples is live): the IDs it may
 * have issued, from its range's low end to the highest of its tuples by its
 * highest mark, become a retired range.  0, or the probe's error. */
static int retire(idgen__space_t *s, int i, const idgen__space_probe_t *probe,
                  idgen__space_plan_t *plan, char *err, size_t errlen) {
  int64_t mark = 0;
  uint64_t keys = 0, lo, hi, top;
  idgen_layout_t ml;
  int rc = probe->issued(probe->ctx, s->m[i].pool, &mark, &keys, err, errlen);
  if (rc < 0)
    return rc;
  if (member_layout(&s->m[i], &ml) < 0 && idgen__pool_guess_layout(s->m[i].pool, &ml) < 0) {
    retire_range(s, 0, UINT64_MAX); /* cannot tell: all of it */
  } else {
    range_of(&ml, s->m[i].floor_ms, &lo, &hi);
    if (idgen__space_high_id(&ml, mark, keys, &top) && top >= lo)
      retire_range(s, lo, top); /* else nothing issued above its floor */
  }
  if (plan->nretired < IDGEN__SPACE_MAX)
    snprintf(plan->retired[plan->nretired++], IDGEN_POOL_NAME_MAX, "%s", s->m[i].pool);
  memmove(&s->m[i], &s->m[i + 1], (size_t)(s->n - i - 1) * sizeof s->m[0]);
  s->n--;
  plan->changed = 1;
  return 0;
}

int idgen__space_join(idgen__space_t *s, const char *space, const idgen__pool_t *p,
                      const idgen_layout_t *l, const idgen_lease_request_t *req, int64_t now,
                      const idgen__space_probe_t *probe, idgen__space_plan_t *plan, char *err,
                      size_t errlen) {
  memset(plan, 0, sizeof *plan);
  int64_t floor;
  if (idgen__space_member(s, p, l, &floor)) {
    plan->floor_ms = floor; /* its pool is in the space, as wide: nothing to decide */
    return 0;
  }
  /* A new pool, a wider layout of a pool in the space, or a record made up
   * from the pools found: compared with every other pool in the space.  Its
   * range from the floor it would get now (its pool's, if the pool is in
   * the space); every other pool whose range meets it is retired if none of
   * its tuples is live, else the newcomer is refused. */
  int self = pool_entry(s, p->name);
  floor = self >= 0 ? s->m[self].floor_ms : margin_floor(l, now);
  uint64_t hit = 0, lo, hi;
  int cannot = above_retired(s, l, &floor, &hit);
  range_of(l, floor, &lo, &hi);
  for (int i = 0; !cannot && i < s->n; i++) {
    idgen__space_member_t *m = &s->m[i];
    if (strcmp(m->pool, p->name) == 0 || !overlaps(m, lo, hi))
      continue;
    char holders[400] = "";
    int live = probe->live(probe->ctx, m->pool, holders, sizeof holders, err, errlen);
    if (live < 0)
      return live;
    if (live > 0)
      return idgen__err(err, errlen, IDGEN_ESPACE,
                        "registry: space \"%s\" is in use by layout %s: %d tuple%s held or in "
                        "quarantine (%s); layout %s could issue the same IDs.  Stop those "
                        "holders first (this layout then starts above every ID the space "
                        "issued), or give this service a space of its own (--space NAME, or "
                        "?space=NAME in the registry URI)",
                        space, m->spec, live, live == 1 ? " is" : "s are", holders, p->layout);
    int rc = retire(s, i, probe, plan, err, errlen);
    if (rc < 0)
      return rc;
    /* The array moved and the floor may rise: look again from the start. */
    cannot = above_retired(s, l, &floor, &hit);
    range_of(l, floor, &lo, &hi);
    i = -1;
  }
  if (cannot)
    return idgen__err(err, errlen, IDGEN_ESPACE,
                      "registry: space \"%s\" issued IDs up to %" PRIu64 ", above every ID "
                      "layout %s can make: give this service a space of its own (--space "
                      "NAME, or ?space=NAME in the registry URI)",
                      space, hit, p->layout);
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  int64_t max = req->max_start_wait_ms < 0 ? IDGEN_START_WAIT_MS_DEFAULT : req->max_start_wait_ms;
  int64_t wait = floor + 1 - borrow - now;
  if (wait > max) {
    char date[IDGEN_TIME_TEXT_MAX], upto[64] = "";
    idgen_time_format(floor + 1 - borrow, date);
    if (hit)
      snprintf(upto, sizeof upto, " (up to %" PRIu64 ")", hit);
    return idgen__err(err, errlen, IDGEN_ECLOCK,
                      "registry: space \"%s\": layout %s starts above the IDs its space issued "
                      "before it%s, which it can do from %s, %" PRId64 " ms from now: more than "
                      "max_start_wait_ms (%" PRId64 "); start it then, or give it a space of its "
                      "own (--space NAME)",
                      space, p->layout, upto, date, wait, max);
  }
  self = pool_entry(s, p->name);
  if (self < 0 && s->n == IDGEN__SPACE_MAX) {
    /* Full: a pool none of whose tuples is live makes room (retiring only
     * ever makes the space stricter). */
    for (int i = 0; self < 0 && i < s->n; i++) {
      char holders[8];
      int live = probe->live(probe->ctx, s->m[i].pool, holders, sizeof holders, err, errlen);
      if (live < 0)
        return live;
      if (live == 0) {
        int rc = retire(s, i, probe, plan, err, errlen);
        if (rc < 0)
          return rc;
        if (above_retired(s, l, &floor, &hit) < 0 || floor + 1 - borrow - now > max)
          return idgen__err(err, errlen, IDGEN_ESPACE,
                            "registry: space \"%s\" already has %d pools and the one that gave "
                            "way issued IDs this layout cannot start above soon: use a space of "
                            "its own (--space NAME)",
                            space, IDGEN__SPACE_MAX);
        self = -2; /* made room */
      }
    }
    if (self == -1)
      return idgen__err(err, errlen, IDGEN_ESPACE,
                        "registry: space \"%s\" already has %d pools, each with live tuples: "
                        "stop the holders of one of them, or use a space of its own (--space "
                        "NAME)",
                        space, IDGEN__SPACE_MAX);
    self = -1;
  }
  idgen__space_member_t *m;
  if (self >= 0) {
    m = &s->m[self]; /* a wider layout of the pool: its range is the pool's now */
    if (!covered(m, l))
      idgen_layout_format(l, m->spec, sizeof m->spec);
  } else {
    m = &s->m[s->n++];
    memset(m, 0, sizeof *m);
    snprintf(m->pool, sizeof m->pool, "%s", p->name);
    snprintf(m->spec, sizeof m->spec, "%s", p->layout);
  }
  m->floor_ms = floor;
  s->provisional = 0; /* from now on a record */
  plan->floor_ms = floor;
  plan->changed = 1;
  return 0;
}
