/*
 * layout.c -- Snowflake layouts: the spec parser, the presets, formatting
 * back to a spec, the horizon, compose and decompose, decimal ID parsing.
 *
 * A layout is a plain value (idgen_layout_t).  The parser is strict and
 * reports the first mistake with one message that names the offending item;
 * it never allocates.  The grammar of a spec (docs/DESIGN.md §3):
 *
 *   spec  = preset-name | item *("," item)
 *   item  = NAME ":" BITS ["@" N ("ms" | "s")]  |  "epoch=" (MILLIS | ISO-8601)
 *
 * Spaces around items are ignored.  The sequence must come after (be less
 * significant than) the time field: with the sequence above the time, one
 * generator's IDs would fall back every tick (not increasing).
 */
#include <float.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core_int.h"

static const struct {
  const char *name;
  const char *spec;
} presets[] = {
    {"twitter", "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657"},
    {"discord", "time:42@1ms,worker:5,process:5,sequence:12,epoch=1420070400000"},
    {"sonyflake", "time:39@10ms,sequence:8,machine:16,epoch=1409529600000"},
    {"baidu", "time:28@1s,worker:22,sequence:13,epoch=1463673600000"},
    {"instagram", "time:41@1ms,shard:13,sequence:10,epoch=1314220021721"},
    {"mastodon", "time:48@1ms,sequence:16,epoch=0"},
    {"js53", "time:41@1ms,worker:6,sequence:6,epoch=2025-01-01T00:00:00Z"},
};
#define NPRESETS (sizeof presets / sizeof presets[0])

/* Largest unit and epoch accepted: one day per tick, and the end of 9999. */
#define UNIT_MAX_MS 86400000LL
#define EPOCH_MAX_MS 253402300799999LL

const char *idgen_layout_preset_name(int i) {
  return (i >= 0 && (size_t)i < NPRESETS) ? presets[i].name : NULL;
}

const char *idgen_layout_preset_spec(const char *name) {
  for (size_t i = 0; i < NPRESETS; i++)
    if (strcmp(presets[i].name, name) == 0)
      return presets[i].spec;
  return NULL;
}

/* The index of the field whose name is s[0..n), or -1. */
static int field_index_n(const idgen_layout_t *l, const char *s, size_t n) {
  for (int i = 0; i < l->nfields; i++)
    if (strncmp(l->fields[i].name, s, n) == 0 && l->fields[i].name[n] == '\0')
      return i;
  return -1;
}

int idgen_layout_field_index(const idgen_layout_t *l, const char *name) {
  return field_index_n(l, name, strlen(name));
}

/* Parses all of s[0..len) as a decimal number <= max; returns 0 or -1. */
static int parse_dec(const char *s, size_t len, uint64_t max, uint64_t *out) {
  uint64_t v = 0;
  if (len == 0)
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    unsigned dgt = (unsigned)(s[i] - '0');
    if (v > (max - dgt) / 10)
      return -1;
    v = v * 10 + dgt;
  }
  *out = v;
  return 0;
}

/* idgen_layout_node_set on a name and a value given by their lengths. */
static int node_set_n(const idgen_layout_t *l, const char *name, size_t nlen, const char *value,
                      size_t vlen, uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given,
                      char *err, size_t errlen) {
  int i = field_index_n(l, name, nlen);
  if (i < 0 || l->fields[i].kind != IDGEN_FIELD_NODE) {
    char names[256] = "";
    for (int j = 0; j < l->nfields; j++)
      if (l->fields[j].kind == IDGEN_FIELD_NODE)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "",
                 l->fields[j].name);
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "\"%s\" is not a node field of the layout (its node fields: %s)",
                      IDGEN_QUOTE(name, nlen, '"', 40), names[0] ? names : "none");
  }
  if (*given >> i & 1)
    return idgen__err(err, errlen, IDGEN_EINVAL, "%s given twice", l->fields[i].name);
  unsigned bits = l->fields[i].bits;
  uint64_t max = bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1, v;
  if (parse_dec(value, vlen, max, &v) < 0)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s value \"%s\" is not a number from 0 to %" PRIu64, l->fields[i].name,
                      IDGEN_QUOTE(value, vlen, '"', 40), max);
  *given |= 1u << i;
  node[i] = v;
  return 0;
}

int idgen_layout_node_set(const idgen_layout_t *l, const char *name, const char *value,
                          uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given, char *err,
                          size_t errlen) {
  return node_set_n(l, name, strlen(name), value, strlen(value), node, given, err, errlen);
}

/* s[0..*n) without the spaces and tabs around it. */
static const char *trim_blanks(const char *s, size_t *n) {
  while (*n > 0 && (*s == ' ' || *s == '\t')) {
    s++;
    (*n)--;
  }
  while (*n > 0 && (s[*n - 1] == ' ' || s[*n - 1] == '\t'))
    (*n)--;
  return s;
}

/* One NAME=VALUE item of a node list, item[0..len) without blanks around it. */
static int node_item(const idgen_layout_t *l, const char *item, size_t len,
                     idgen_node_resolve_cb resolve, void *ctx,
                     uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given, char *err,
                     size_t errlen) {
  const char *eq = memchr(item, '=', len);
  size_t nlen = eq ? (size_t)(eq - item) : 0, vlen = eq ? len - nlen - 1 : 0;
  const char *name = trim_blanks(item, &nlen), *value = eq ? trim_blanks(eq + 1, &vlen) : NULL;
  if (nlen == 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "\"%s\" is not NAME=VALUE",
                      IDGEN_QUOTE(item, len, '"', 60));
  int f = field_index_n(l, name, nlen);
  char source[16], num[24];
  if (resolve != NULL && vlen > 0 && value[0] == '@' && vlen < sizeof source && f >= 0 &&
      l->fields[f].kind == IDGEN_FIELD_NODE && !(*given >> f & 1)) {
    /* From the host: the caller's resolver does the I/O; its message
     * follows the field's name. */
    memcpy(source, value, vlen);
    source[vlen] = '\0';
    size_t pre = 0;
    if (err != NULL && errlen > 0) {
      int n = snprintf(err, errlen, "%s: ", l->fields[f].name);
      pre = n > 0 && (size_t)n < errlen ? (size_t)n : 0;
    }
    uint64_t v = 0;
    int rc = resolve(ctx, l->fields[f].name, l->fields[f].bits, source, &v,
                     err != NULL ? err + pre : NULL, errlen - pre);
    if (rc < 0)
      return rc;
    if (err != NULL && errlen > 0)
      err[0] = '\0'; /* the prefix, unused */
    vlen = (size_t)snprintf(num, sizeof num, "%" PRIu64, v);
    value = num;
  }
  return node_set_n(l, name, nlen, value, vlen, node, given, err, errlen);
}

int idgen_layout_nodes_parse(const idgen_layout_t *l, const char *list,
                             idgen_node_resolve_cb resolve, void *ctx,
                             uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given, char *err,
                             size_t errlen) {
  for (const char *p = list; p != NULL && *p != '\0';) {
    size_t len = strcspn(p, ",");
    const char *item = trim_blanks(p, &len);
    if (len > 0) {
      int rc = node_item(l, item, len, resolve, ctx, node, given, err, errlen);
      if (rc < 0)
        return rc;
    }
    p += strcspn(p, ",");
    p += *p == ',';
  }
  return 0;
}

static int valid_name(const char *s, size_t len) {
  if (len == 0 || s[0] < 'a' || s[0] > 'z')
    return 0;
  for (size_t i = 1; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
      return 0;
  }
  return 1;
}

static int parse_unit(const char *s, size_t len, int64_t *unit_ms) {
  uint64_t n, mult;
  size_t dl = 0;
  while (dl < len && s[dl] >= '0' && s[dl] <= '9')
    dl++;
  if (len - dl == 2 && memcmp(s + dl, "ms", 2) == 0)
    mult = 1;
  else if (len - dl == 1 && s[dl] == 's')
    mult = 1000;
  else
    return -1;
  if (parse_dec(s, dl, (uint64_t)UNIT_MAX_MS, &n) < 0 || n == 0 || n * mult > (uint64_t)UNIT_MAX_MS)
    return -1;
  *unit_ms = (int64_t)(n * mult);
  return 0;
}

static int parse_epoch(const char *s, size_t len, int64_t *epoch) {
  uint64_t v;
  if (parse_dec(s, len, (uint64_t)EPOCH_MAX_MS, &v) == 0) {
    *epoch = (int64_t)v;
    return 0;
  }
  int64_t ms;
  if (idgen_time_parse(s, len, &ms) == 0 && ms >= 0 && ms <= EPOCH_MAX_MS) {
    *epoch = ms;
    return 0;
  }
  return -1;
}

static int preset_list(char *buf, size_t n) {
  size_t off = 0;
  for (size_t i = 0; i < NPRESETS && off < n; i++)
    off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", presets[i].name);
  return 0;
}

#define LAYOUT_ERR(...) idgen__err(err, errlen, IDGEN_ELAYOUT, "layout: " __VA_ARGS__)
/* A piece of the spec as the messages quote it: printable, at most 48 characters. */
#define ITEM_QUOTE(s, n) IDGEN_QUOTE((s), (n), '"', 48)

/* Parses one "NAME:BITS[@UNIT]" item into l->fields[l->nfields]. */
static int parse_field(idgen_layout_t *l, const char *s, size_t len, char *err, size_t errlen) {
  const char *colon = memchr(s, ':', len);
  size_t nlen = (size_t)(colon - s);
  const char *w = colon + 1;
  size_t wlen = len - nlen - 1;
  const char *at = memchr(w, '@', wlen);
  size_t bitslen = at ? (size_t)(at - w) : wlen;
  uint64_t bits;

  if (nlen >= IDGEN_FIELD_NAME_MAX)
    return LAYOUT_ERR("field name \"%s\" longer than %d characters", ITEM_QUOTE(s, nlen),
                      IDGEN_FIELD_NAME_MAX - 1);
  if (!valid_name(s, nlen))
    return LAYOUT_ERR("bad field name \"%s\" (use [a-z][a-z0-9_]*)", ITEM_QUOTE(s, nlen));
  /* From here on the name is [a-z][a-z0-9_]*: safe to print as it is. */
  for (int i = 0; i < l->nfields; i++)
    if (strlen(l->fields[i].name) == nlen && memcmp(l->fields[i].name, s, nlen) == 0)
      return LAYOUT_ERR("field \"%.*s\" repeated", (int)nlen, s);
  if (l->nfields == IDGEN_LAYOUT_MAX_FIELDS)
    return LAYOUT_ERR("more than %d fields", IDGEN_LAYOUT_MAX_FIELDS);
  if (parse_dec(w, bitslen, 1000, &bits) < 0)
    return LAYOUT_ERR("field \"%.*s\" has bad width \"%s\" (use a number of bits)", (int)nlen, s,
                      ITEM_QUOTE(w, bitslen));
  if (bits == 0)
    return LAYOUT_ERR("field \"%.*s\" has 0 bits; each field needs at least 1", (int)nlen, s);
  if (bits > 63)
    return LAYOUT_ERR("field \"%.*s\" has %" PRIu64 " bits, more than 63", (int)nlen, s, bits);

  idgen_field_t *f = &l->fields[l->nfields];
  memcpy(f->name, s, nlen);
  f->name[nlen] = '\0';
  f->bits = (uint8_t)bits;
  f->kind = IDGEN_FIELD_NODE;
  if (strcmp(f->name, "time") == 0) {
    f->kind = IDGEN_FIELD_TIME;
    l->time_index = l->nfields;
  } else if (strcmp(f->name, "sequence") == 0) {
    f->kind = IDGEN_FIELD_SEQUENCE;
    l->sequence_index = l->nfields;
  }
  if (at != NULL) {
    const char *u = at + 1;
    size_t ulen = wlen - bitslen - 1;
    if (f->kind != IDGEN_FIELD_TIME)
      return LAYOUT_ERR("only the time field takes a unit (\"%s\")", ITEM_QUOTE(s, len));
    if (parse_unit(u, ulen, &l->unit_ms) < 0)
      return LAYOUT_ERR("bad time unit \"%s\" (use Nms or Ns, from 1ms to 86400s)",
                        ITEM_QUOTE(u, ulen));
  }
  l->nfields++;
  return 0;
}

/* Checks the parsed fields as a whole and computes the shifts. */
static int finish(idgen_layout_t *l, char *err, size_t errlen) {
  int total = 0;
  for (int i = 0; i < l->nfields; i++)
    total += l->fields[i].bits;
  if (l->time_index < 0)
    return LAYOUT_ERR("no \"time\" field");
  if (l->sequence_index < 0)
    return LAYOUT_ERR("no \"sequence\" field");
  if (total > 64)
    return LAYOUT_ERR("fields add up to %d bits, more than 64", total);
  if (l->sequence_index < l->time_index)
    return LAYOUT_ERR("field \"sequence\" must come after \"time\"");
  /* The horizon, epoch + 2^bits * unit, must fit in int64 milliseconds. */
  int tb = l->fields[l->time_index].bits;
  if (tb > 62 || (uint64_t)l->unit_ms > ((uint64_t)INT64_MAX - (uint64_t)l->epoch_ms) >> tb)
    return LAYOUT_ERR("time:%d@%" PRId64 "ms runs past 64-bit milliseconds", tb, l->unit_ms);
  l->total_bits = total;
  int shift = total;
  for (int i = 0; i < l->nfields; i++) {
    shift -= l->fields[i].bits;
    l->fields[i].shift = (uint8_t)shift;
  }
  return 0;
}

static size_t trim(const char **s, size_t len) {
  while (len > 0 && **s == ' ') {
    (*s)++;
    len--;
  }
  while (len > 0 && (*s)[len - 1] == ' ')
    len--;
  return len;
}

int idgen_layout_parse(idgen_layout_t *l, const char *spec, char *err, size_t errlen) {
  memset(l, 0, sizeof *l);
  l->unit_ms = 1;
  l->time_index = l->sequence_index = -1;
  if (spec == NULL || *spec == '\0')
    return LAYOUT_ERR("empty spec");

  if (strpbrk(spec, ":=,") == NULL) {
    const char *p = idgen_layout_preset_spec(spec);
    if (p == NULL) {
      char list[128];
      preset_list(list, sizeof list);
      return LAYOUT_ERR("unknown preset \"%s\" (presets: %s)", ITEM_QUOTE(spec, strlen(spec)),
                        list);
    }
    int rc = idgen_layout_parse(l, p, err, errlen);
    if (rc == 0)
      snprintf(l->preset, sizeof l->preset, "%s", spec);
    return rc;
  }

  int have_epoch = 0, pos = 0;
  for (const char *s = spec;; pos++) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    const char *item = s;
    len = trim(&item, len);
    if (len == 0)
      return LAYOUT_ERR("empty item %d (a stray comma?)", pos + 1);
    /* The first ':' or '=' decides: an epoch's ISO time contains ':'. */
    size_t sep = strcspn(item, ":=");
    if (sep < len && item[sep] == ':') {
      int rc = parse_field(l, item, len, err, errlen);
      if (rc < 0)
        return rc;
    } else if (sep < len) {
      const char *eq = item + sep;
      size_t klen = (size_t)(eq - item);
      const char *v = eq + 1;
      size_t vlen = len - klen - 1;
      if (klen != 5 || memcmp(item, "epoch", 5) != 0)
        return LAYOUT_ERR("unknown setting \"%s\" (the only setting is epoch=)",
                          ITEM_QUOTE(item, klen));
      if (have_epoch)
        return LAYOUT_ERR("epoch given twice");
      if (parse_epoch(v, vlen, &l->epoch_ms) < 0)
        return LAYOUT_ERR("bad epoch \"%s\" (use Unix milliseconds or an ISO-8601 UTC "
                          "time such as 2010-11-04T01:42:54.657Z)",
                          ITEM_QUOTE(v, vlen));
      have_epoch = 1;
    } else {
      return LAYOUT_ERR("item \"%s\" is not NAME:BITS or epoch=VALUE", ITEM_QUOTE(item, len));
    }
    if (end == NULL)
      break;
    s = end + 1;
  }
  return finish(l, err, errlen);
}

int idgen_layout_format(const idgen_layout_t *l, char *buf, size_t buflen) {
  size_t off = 0;
  int n;
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *f = &l->fields[i];
    if (f->kind == IDGEN_FIELD_TIME) {
      int secs = l->unit_ms % 1000 == 0;
      n = snprintf(buf + off, buflen - off, "%stime:%d@%" PRId64 "%s", i ? "," : "", f->bits,
                   secs ? l->unit_ms / 1000 : l->unit_ms, secs ? "s" : "ms");
    } else {
      n = snprintf(buf + off, buflen - off, "%s%s:%d", i ? "," : "", f->name, f->bits);
    }
    if (n < 0 || (size_t)n >= buflen - off)
      return IDGEN_ERANGE;
    off += (size_t)n;
  }
  n = snprintf(buf + off, buflen - off, ",epoch=%" PRId64, l->epoch_ms);
  if (n < 0 || (size_t)n >= buflen - off)
    return IDGEN_ERANGE;
  return (int)(off + (size_t)n);
}

int64_t idgen_layout_horizon_ms(const idgen_layout_t *l) {
  return l->epoch_ms + (int64_t)(UINT64_C(1) << l->fields[l->time_index].bits) * l->unit_ms;
}

uint64_t idgen_layout_ids_per_tick(const idgen_layout_t *l) {
  return UINT64_C(1) << l->fields[l->sequence_index].bits;
}

int64_t idgen_layout_sign_bit_ms(const idgen_layout_t *l) {
  const idgen_field_t *t = &l->fields[l->time_index];
  if (l->total_bits < 64)
    return INT64_MAX;
  if (t->shift + t->bits < 64)
    return INT64_MIN; /* a node field holds the top bit: it is set by its value, not time */
  /* The top bit belongs to the time field: it is set from tick 2^(bits-1). */
  return l->epoch_ms + (int64_t)(UINT64_C(1) << (t->bits - 1)) * l->unit_ms;
}

/* The least whole number >= x > 0, without libm. */
static double ceil_positive(double x) {
  if (x >= 4503599627370496.0) /* 2^52: a double this large is whole */
    return x;
  double t = (double)(int64_t)x;
  return t < x ? t + 1.0 : t;
}

int idgen_layout_plan(const idgen_layout_t *l, int64_t now_ms, double rate, double max_borrow_ms,
                      idgen_layout_plan_t *p) {
  if (!(rate >= 0 && rate <= DBL_MAX) || !(max_borrow_ms >= 0 && max_borrow_ms <= DBL_MAX))
    return IDGEN_EINVAL;
  memset(p, 0, sizeof *p);
  p->horizon_ms = idgen_layout_horizon_ms(l);
  p->lifetime_ms = p->horizon_ms - l->epoch_ms;
  p->lifetime_years = (double)p->lifetime_ms / (365.2425 * 86400000.0);
  p->remaining_ms = p->horizon_ms - now_ms;
  p->exhausted = p->horizon_ms <= now_ms;
  p->sign_bit_ms = idgen_layout_sign_bit_ms(l);
  p->ids_per_tick = idgen_layout_ids_per_tick(l);
  p->ids_per_s = (double)p->ids_per_tick * 1000.0 / (double)l->unit_ms;
  p->node_bits = l->total_bits - l->fields[l->time_index].bits - l->fields[l->sequence_index].bits;
  p->nodes = UINT64_C(1) << p->node_bits; /* at most 2^62: time and sequence take 2 bits */
  p->cluster_ids_per_s = p->ids_per_s * (double)p->nodes;
  if (rate > 0) {
    p->rate = rate;
    p->ratio = rate / p->ids_per_s;
    p->sustained = p->ratio <= 1.0;
    p->burst_ms = p->sustained ? 0 : max_borrow_ms / (p->ratio - 1.0);
    p->nodes_needed = p->sustained ? 1 : ceil_positive(p->ratio);
  }
  return 0;
}

static uint64_t field_max(const idgen_field_t *f) { return (UINT64_C(1) << f->bits) - 1; }

int idgen_layout_compose(const idgen_layout_t *l, int64_t unix_ms, const uint64_t *values,
                         uint64_t *id, char *err, size_t errlen) {
  char tbuf[IDGEN_TIME_TEXT_MAX], ebuf[IDGEN_TIME_TEXT_MAX];
  if (unix_ms < l->epoch_ms) {
    idgen_time_format(unix_ms, tbuf);
    idgen_time_format(l->epoch_ms, ebuf);
    return idgen__err(err, errlen, IDGEN_ERANGE, "time %s is before the layout epoch %s", tbuf,
                      ebuf);
  }
  if (unix_ms >= idgen_layout_horizon_ms(l)) {
    idgen_time_format(unix_ms, tbuf);
    idgen_time_format(idgen_layout_horizon_ms(l), ebuf);
    return idgen__err(err, errlen, IDGEN_ERANGE, "time %s is past the layout's horizon %s", tbuf,
                      ebuf);
  }
  uint64_t v = 0;
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *f = &l->fields[i];
    uint64_t x = values[i];
    if (f->kind == IDGEN_FIELD_TIME)
      x = (uint64_t)((unix_ms - l->epoch_ms) / l->unit_ms);
    else if (x > field_max(f))
      return idgen__err(err, errlen, IDGEN_ERANGE, "%s %" PRIu64 " out of range 0..%" PRIu64,
                        f->name, x, field_max(f));
    v |= x << f->shift;
  }
  *id = v;
  return 0;
}

int idgen_layout_decompose(const idgen_layout_t *l, uint64_t id, uint64_t *values,
                           int64_t *unix_ms) {
  if (l->total_bits < 64 && (id >> l->total_bits) != 0)
    return IDGEN_ERANGE;
  for (int i = 0; i < l->nfields; i++) {
    const idgen_field_t *f = &l->fields[i];
    values[i] = (id >> f->shift) & field_max(f);
  }
  if (unix_ms != NULL)
    *unix_ms = l->epoch_ms + (int64_t)values[l->time_index] * l->unit_ms;
  return 0;
}

int idgen_snowflake_parse(const idgen_layout_t *l, const char *s, size_t len, uint64_t *id,
                          char *err, size_t errlen) {
  uint64_t v = 0;
  if (len == 0)
    return idgen__err(err, errlen, IDGEN_EPARSE, "empty ID");
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < '0' || c > '9') {
      if (c >= 0x21 && c < 0x7f)
        return idgen__err(err, errlen, IDGEN_EPARSE,
                          "character '%s' at position %zu is not a digit",
                          IDGEN_QUOTE(&s[i], 1, '\'', 4), i + 1);
      return idgen__err(err, errlen, IDGEN_EPARSE, "byte 0x%02x at position %zu is not a digit", c,
                        i + 1);
    }
    /* The digits so far, and what follows them unread: quoted. */
    if (v > (UINT64_MAX - (c - '0')) / 10)
      return idgen__err(err, errlen, IDGEN_ERANGE,
                        "%s does not fit in 64 bits (at most 18446744073709551615)",
                        IDGEN_QUOTE(s, len, 0, 40));
    v = v * 10 + (c - '0');
  }
  if (l != NULL && l->total_bits < 64 && (v >> l->total_bits) != 0)
    return idgen__err(err, errlen, IDGEN_ERANGE,
                      "%" PRIu64 " does not fit the layout's %d bits (at most %" PRIu64 ")", v,
                      l->total_bits, (UINT64_C(1) << l->total_bits) - 1);
  *id = v;
  return 0;
}
