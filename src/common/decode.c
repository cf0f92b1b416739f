/*
 * decode.c -- recognise an ID's kind by its form and read it back.
 *
 * The kind is recognised by form (DESIGN §4): 26 characters is a ULID,
 * a 36-character UUID (optionally behind "urn:uuid:") or 32 hex digits is a
 * UUID, 1 to 20 decimal digits is a Snowflake ID.
 */
#include "decode.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum kind { KIND_SNOWFLAKE, KIND_ULID, KIND_UUID, KIND_UNKNOWN };

/* Recognises the kind of s[0..len) by its form alone.  36 or 32 characters
 * (after an optional "urn:uuid:") go to the UUID parser even when they are
 * not all hex, so that its message names the bad character and where. */
static int all_digits(const char *s, size_t len) {
  size_t i = 0;
  while (i < len && s[i] >= '0' && s[i] <= '9')
    i++;
  return i == len;
}

static enum kind classify(const char *s, size_t len) {
  if (len >= 1 && len <= 20 && all_digits(s, len))
    return KIND_SNOWFLAKE;
  if (len == 26)
    return KIND_ULID;
  if (len > 9 && strncasecmp(s, "urn:uuid:", 9) == 0)
    return KIND_UUID;
  if (len == 36 || len == 32)
    return KIND_UUID;
  return KIND_UNKNOWN;
}

/* v in decimal, NUL-terminated, into out[21]; its length.  printf would
 * parse a format for it (decode() is called an ID at a time). */
static size_t u64_decimal(uint64_t v, char *out) {
  char t[20], *p = t + sizeof t;
  size_t n;
  do
    *--p = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  n = (size_t)(t + sizeof t - p);
  memcpy(out, p, n);
  out[n] = '\0';
  return n;
}

static int decode_snowflake(const idgen_layout_t *l, const char *s, size_t len, decoded_t *d,
                            char *err, size_t errlen) {
  uint64_t id;
  if (idgen_snowflake_parse(l, s, len, &id, err, errlen) < 0)
    return -1;
  d->kind = DECODED_SNOWFLAKE;
  d->layout = l;
  idgen_layout_decompose(l, id, d->values, &d->unix_ms);
  d->has_time = 1;
  u64_decimal(id, d->id);
  if (l->preset[0] != '\0' && strlen(l->preset) < sizeof d->layout_name)
    memcpy(d->layout_name, l->preset, strlen(l->preset) + 1);
  else if (idgen_layout_format(l, d->layout_name, sizeof d->layout_name) < 0)
    d->layout_name[0] = '\0'; /* cannot happen: IDGEN_LAYOUT_SPEC_MAX holds any spec */
  return 0;
}

static int decode_ulid(const char *s, size_t len, int lenient, decoded_t *d, char *err,
                       size_t errlen) {
  idgen_ulid_t u;
  idgen_uuid_t uu;
  char msg[200];
  if (idgen_ulid_parse(&u, s, len, lenient ? IDGEN_ULID_LENIENT : IDGEN_ULID_STRICT, msg,
                       sizeof msg) < 0) {
    snprintf(err, errlen, "\"%s\": %s", IDGEN_QUOTE(s, len, '"', 64), msg);
    return -1;
  }
  d->kind = DECODED_ULID;
  idgen_ulid_format(&u, d->id);
  idgen_ulid_to_uuid(&u, &uu);
  idgen_uuid_format(&uu, d->uuid);
  d->unix_ms = idgen_ulid_time(&u);
  d->has_time = 1;
  return 0;
}

/* Gregorian 100-ns ticks (UUID versions 1 and 6) from 1582-10-15 to 1970. */
#define GREGORIAN_OFFSET INT64_C(122192928000000000)

/* The time a UUID carries, if its version carries one: 1 and *ms, else 0. */
static int uuid_time(const idgen_uuid_t *u, int64_t *ms) {
  const uint8_t *b = u->bytes;
  uint64_t w0 = (uint64_t)b[0] << 24 | (uint64_t)b[1] << 16 | (uint64_t)b[2] << 8 | b[3];
  uint64_t w1 = (uint64_t)b[4] << 8 | b[5], w2 = ((uint64_t)b[6] << 8 | b[7]) & 0x0fff, ts;
  if (!idgen_uuid_is_rfc_variant(u))
    return 0;
  switch (idgen_uuid_version(u)) {
  case 7:
    *ms = idgen_uuid7_time(u);
    return 1;
  case 1:
    ts = w2 << 48 | w1 << 32 | w0;
    break;
  case 6:
    ts = w0 << 28 | w1 << 12 | w2;
    break;
  default:
    return 0;
  }
  int64_t t = (int64_t)ts - GREGORIAN_OFFSET;
  *ms = t >= 0 ? t / 10000 : -((-t + 9999) / 10000);
  return 1;
}

static const char *uuid_variant(const idgen_uuid_t *u) {
  uint8_t v = u->bytes[8];
  if ((v & 0x80) == 0)
    return "ncs";
  if ((v & 0xc0) == 0x80)
    return "rfc9562";
  return (v & 0xe0) == 0xc0 ? "microsoft" : "future";
}

static int decode_uuid(const char *s, size_t len, decoded_t *d, char *err, size_t errlen) {
  idgen_uuid_t u;
  char msg[200];
  if (idgen_uuid_parse(&u, s, len, msg, sizeof msg) < 0) {
    snprintf(err, errlen, "\"%s\": %s", IDGEN_QUOTE(s, len, '"', 64), msg);
    return -1;
  }
  d->kind = DECODED_UUID;
  idgen_uuid_format(&u, d->id);
  d->version = idgen_uuid_version(&u);
  d->variant = uuid_variant(&u);
  d->has_time = uuid_time(&u, &d->unix_ms);
  return 0;
}

int decode_id(const idgen_layout_t *l, const char *in, size_t inlen, int lenient, decoded_t *d,
              char *err, size_t errlen) {
  char buf[128];
  const char *s = in;
  size_t len = inlen;
  memset(d, 0, sizeof *d);
  if (lenient) {
    if (inlen >= sizeof buf) {
      snprintf(err, errlen, "not an ID: \"%s\" is %zu characters long",
               IDGEN_QUOTE(in, inlen, '"', 40), inlen);
      return -1;
    }
    len = 0;
    for (size_t i = 0; i < inlen; i++)
      if (in[i] != '-')
        buf[len++] = in[i];
    s = buf;
  }
  int rc;
  switch (classify(s, len)) {
  case KIND_SNOWFLAKE:
    rc = decode_snowflake(l, s, len, d, err, errlen);
    break;
  case KIND_ULID:
    /* The ULID decoder skips hyphens itself, so its positions match the input. */
    rc = decode_ulid(in, inlen, lenient, d, err, errlen);
    break;
  case KIND_UUID:
    rc = decode_uuid(s, len, d, err, errlen);
    break;
  default:
    if (len == 0)
      snprintf(err, errlen, "not an ID: empty input");
    else if (len > 20 && all_digits(s, len))
      snprintf(err, errlen, "not an ID: \"%s\" has %zu digits; a 64-bit ID has at most 20",
               IDGEN_QUOTE(s, len, '"', 40), len);
    else /* quote the input as given, hyphens and all */
      snprintf(err, errlen,
               "not an ID: \"%s\" is %zu characters (expected 1 to 20 decimal digits, a "
               "26-character ULID, or a UUID of 36 characters or 32 hex digits)",
               IDGEN_QUOTE(in, inlen, '"', 64), len);
    return -1;
  }
  if (rc == 0 && d->has_time)
    idgen_time_format(d->unix_ms, d->time);
  return rc;
}

int layout_info_json(const idgen_layout_t *l, char *buf, size_t n) {
  static const char *const kinds[] = {"node", "time", "sequence"};
  char spec[IDGEN_LAYOUT_SPEC_MAX];
  if (idgen_layout_format(l, spec, sizeof spec) < 0)
    return -1;
  size_t k = 0;
  int w = snprintf(buf, n,
                   "{\"layout\":\"%s\",\"spec\":\"%s\",\"total_bits\":%d,\"epoch_ms\":%" PRId64
                   ",\"tick_ms\":%" PRId64 ",\"fields\":[",
                   l->preset, spec, l->total_bits, l->epoch_ms, l->unit_ms);
  for (int i = 0; w >= 0 && (k += (size_t)w) < n && i < l->nfields; i++)
    w = snprintf(buf + k, n - k, "%s{\"name\":\"%s\",\"bits\":%d,\"shift\":%d,\"kind\":\"%s\"}",
                 i ? "," : "", l->fields[i].name, l->fields[i].bits, l->fields[i].shift,
                 kinds[l->fields[i].kind]);
  if (w < 0 || k >= n)
    return -1;
  int64_t sign = idgen_layout_sign_bit_ms(l);
  w = snprintf(buf + k, n - k,
               "],\"horizon_ms\":%" PRId64 ",\"ids_per_tick\":%" PRIu64 ",\"sign_bit\":\"%s\"",
               idgen_layout_horizon_ms(l), idgen_layout_ids_per_tick(l),
               sign == INT64_MAX   ? "never"
               : sign == INT64_MIN ? "node"
                                   : "time");
  if (w < 0 || (k += (size_t)w) >= n)
    return -1;
  w = sign == INT64_MAX || sign == INT64_MIN
          ? snprintf(buf + k, n - k, "}")
          : snprintf(buf + k, n - k, ",\"sign_bit_ms\":%" PRId64 "}", sign);
  if (w < 0 || (k += (size_t)w) >= n)
    return -1;
  return (int)k;
}

/* Text appended to buf[n] at *k, NUL-terminated; *k past n once it did
 * not fit (every later append is then skipped). */
typedef struct out {
  char *buf;
  size_t n, k;
} out_t;

__attribute__((format(printf, 2, 3))) static void put(out_t *o, const char *fmt, ...) {
  if (o->k >= o->n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(o->buf + o->k, o->n - o->k, fmt, ap);
  va_end(ap);
  o->k = w < 0 ? o->n : o->k + (size_t)w;
}

/* s[0..len) as it is: the hot part of decode_json, which printf would
 * parse a format for, a character at a time. */
static void put_raw(out_t *o, const char *s, size_t len) {
  if (o->k >= o->n)
    return;
  if (len >= o->n - o->k) { /* no room for it and its NUL */
    o->k = o->n;
    return;
  }
  memcpy(o->buf + o->k, s, len);
  o->k += len;
  o->buf[o->k] = '\0';
}

static void put_i64(out_t *o, int64_t v) {
  char t[22];
  t[0] = '-';
  size_t n = u64_decimal(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, t + 1);
  put_raw(o, v < 0 ? t : t + 1, v < 0 ? n + 1 : n);
}

/* ,"key": with no comma after the object's "{" (once the text has not
 * fit, what is appended no longer matters). */
static void put_key(out_t *o, const char *key) {
  if (!(o->k > 0 && o->k < o->n && o->buf[o->k - 1] == '{'))
    put_raw(o, ",", 1);
  put_raw(o, "\"", 1);
  put_raw(o, key, strlen(key));
  put_raw(o, "\":", 2);
}

/* "text", escaped as jansson escapes it: the strings here (IDs, times,
 * layout specs, field names) never need it, but a writer of JSON cannot
 * rely on that.  Runs of plain characters are copied whole. */
static void put_quoted(out_t *o, const char *v) {
  static const char shorts[] = "\b\f\n\r\t", letters[] = "bfnrt";
  put_raw(o, "\"", 1);
  for (;;) {
    size_t run = 0;
    unsigned char c;
    const char *sh;
    while ((unsigned char)v[run] >= 0x20 && v[run] != '"' && v[run] != '\\')
      run++;
    put_raw(o, v, run);
    v += run;
    if (*v == '\0')
      break;
    c = (unsigned char)*v++;
    sh = strchr(shorts, c); /* c is not NUL */
    if (c == '"' || c == '\\')
      put(o, "\\%c", c);
    else if (sh != NULL)
      put(o, "\\%c", letters[sh - shorts]);
    else
      put(o, "\\u%04X", c);
  }
  put_raw(o, "\"", 1);
}

/* A double as JSON: null when it is not finite (JSON has no Infinity; a
 * plan's burst_ms overflows for a rate a hair above the layout's). */
static void put_num(out_t *o, double v) {
  if (isfinite(v))
    put(o, "%.17g", v);
  else
    put(o, "null");
}

static int put_end(out_t *o) {
  if (o->k >= o->n)
    return -1;
  return (int)o->k;
}

void decode_visit(const decoded_t *d, const decode_sink_t *sink, void *ctx) {
  sink->text(ctx, "id", d->id);
  switch (d->kind) {
  case DECODED_SNOWFLAKE: {
    const idgen_layout_t *l = d->layout;
    sink->text(ctx, "kind", "snowflake");
    sink->text(ctx, "layout", d->layout_name);
    sink->number(ctx, "unix_ms", d->unix_ms);
    sink->text(ctx, "time", d->time);
    sink->object(ctx, "fields");
    /* Node and sequence values are below 2^63 (no field has 64 bits). */
    for (int i = 0; i < l->nfields; i++)
      if (i != l->time_index)
        sink->number(ctx, l->fields[i].name, (int64_t)d->values[i]);
    sink->end(ctx);
    break;
  }
  case DECODED_ULID:
    sink->text(ctx, "kind", "ulid");
    sink->number(ctx, "unix_ms", d->unix_ms);
    sink->text(ctx, "time", d->time);
    sink->text(ctx, "uuid", d->uuid);
    break;
  case DECODED_UUID:
    sink->text(ctx, "kind", "uuid");
    sink->number(ctx, "version", d->version);
    if (strcmp(d->variant, "rfc9562") != 0)
      sink->text(ctx, "variant", d->variant);
    if (d->has_time) {
      sink->number(ctx, "unix_ms", d->unix_ms);
      sink->text(ctx, "time", d->time);
    }
    break;
  }
}

/* decode_visit's calls written as JSON. */
static void json_text(void *ctx, const char *key, const char *v) {
  put_key(ctx, key);
  put_quoted(ctx, v);
}

static void json_number(void *ctx, const char *key, int64_t v) {
  put_key(ctx, key);
  put_i64(ctx, v);
}

static void json_object(void *ctx, const char *key) {
  put_key(ctx, key);
  put_raw(ctx, "{", 1);
}

static void json_end(void *ctx) { put_raw(ctx, "}", 1); }

int decode_json(const decoded_t *d, char *buf, size_t n) {
  static const decode_sink_t json = {json_text, json_number, json_object, json_end};
  out_t o = {buf, n, 0};
  put_raw(&o, "{", 1);
  decode_visit(d, &json, &o);
  put_raw(&o, "}", 1);
  return put_end(&o);
}

int layout_plan_json(const idgen_layout_t *l, const idgen_layout_plan_t *p, char *buf, size_t n) {
  out_t o = {buf, n, 0};
  put(&o, "{\"info\":");
  int w = o.k < n ? layout_info_json(l, buf + o.k, n - o.k) : -1;
  if (w < 0)
    return -1;
  o.k += (size_t)w;
  put(&o, ",\"lifetime_ms\":%" PRId64 ",\"lifetime_years\":", p->lifetime_ms);
  put_num(&o, p->lifetime_years);
  put(&o,
      ",\"horizon_ms\":%" PRId64 ",\"remaining_ms\":%" PRId64 ",\"exhausted\":%s"
      ",\"ids_per_tick\":%" PRIu64 ",\"ids_per_s\":",
      p->horizon_ms, p->remaining_ms, p->exhausted ? "true" : "false", p->ids_per_tick);
  put_num(&o, p->ids_per_s);
  put(&o, ",\"node_bits\":%d,\"nodes\":%" PRIu64 ",\"node_fields\":[", p->node_bits, p->nodes);
  for (int i = 0, k = 0; i < l->nfields; i++)
    if (l->fields[i].kind == IDGEN_FIELD_NODE)
      put(&o, "%s{\"name\":\"%s\",\"max\":%" PRIu64 "}", k++ ? "," : "", l->fields[i].name,
          (UINT64_C(1) << l->fields[i].bits) - 1);
  put(&o, "],\"cluster_ids_per_s\":");
  put_num(&o, p->cluster_ids_per_s);
  put(&o, ",\"rate\":");
  if (p->rate > 0) {
    put(&o, "{\"ids_per_s\":");
    put_num(&o, p->rate);
    put(&o, ",\"ratio\":");
    put_num(&o, p->ratio);
    put(&o, ",\"sustained\":%s,\"burst_ms\":", p->sustained ? "true" : "false");
    put_num(&o, p->sustained ? INFINITY : p->burst_ms); /* null: without end */
    put(&o, ",\"nodes_needed\":");
    put_num(&o, p->nodes_needed);
    put(&o, "}");
  } else {
    put(&o, "null");
  }
  put(&o, "}");
  return put_end(&o);
}
