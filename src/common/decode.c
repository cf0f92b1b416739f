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

static int decode_snowflake(const idgen_layout_t *l, const char *s, size_t len, decoded_t *d,
                            char *err, size_t errlen) {
  uint64_t id;
  if (idgen_snowflake_parse(l, s, len, &id, err, errlen) < 0)
    return -1;
  d->kind = DECODED_SNOWFLAKE;
  d->layout = l;
  idgen_layout_decompose(l, id, d->values, &d->unix_ms);
  d->has_time = 1;
  snprintf(d->id, sizeof d->id, "%" PRIu64, id);
  if (l->preset[0] != '\0')
    snprintf(d->layout_name, sizeof d->layout_name, "%s", l->preset);
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

/* Text appended to buf[n] at *k; *k past n once it did not fit (every
 * later append is then skipped). */
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

/* ,"key":"text", the text escaped as jansson escapes it: the strings here (IDs, times, layout
 * specs, field names) never need it, but a writer of JSON cannot rely on
 * that. */
/* The comma before a key, none after the object's "{" (once the text has
 * not fit, what is appended no longer matters). */
static const char *sep(const out_t *o) {
  return o->k > 0 && o->k < o->n && o->buf[o->k - 1] == '{' ? "" : ",";
}

static void put_str(out_t *o, const char *key, const char *v) {
  put(o, "%s\"%s\":\"", sep(o), key);
  static const char shorts[] = "\b\f\n\r\t", letters[] = "bfnrt";
  for (; *v != '\0'; v++) {
    unsigned char c = (unsigned char)*v;
    const char *sh = strchr(shorts, c); /* c is not NUL */
    if (c == '"' || c == '\\')
      put(o, "\\%c", c);
    else if (sh != NULL)
      put(o, "\\%c", letters[sh - shorts]);
    else if (c < 0x20)
      put(o, "\\u%04X", c);
    else
      put(o, "%c", c);
  }
  put(o, "\"");
}

static void put_int(out_t *o, const char *key, int64_t v) {
  put(o, "%s\"%s\":%" PRId64, sep(o), key, v);
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

int decode_json(const decoded_t *d, char *buf, size_t n) {
  out_t o = {buf, n, 0};
  put(&o, "{");
  put_str(&o, "id", d->id);
  switch (d->kind) {
  case DECODED_SNOWFLAKE: {
    const idgen_layout_t *l = d->layout;
    put_str(&o, "kind", "snowflake");
    put_str(&o, "layout", d->layout_name);
    put_int(&o, "unix_ms", d->unix_ms);
    put_str(&o, "time", d->time);
    put(&o, ",\"fields\":{");
    /* Node and sequence values are below 2^63 (no field has 64 bits). */
    for (int i = 0; i < l->nfields; i++)
      if (i != l->time_index)
        put_int(&o, l->fields[i].name, (int64_t)d->values[i]);
    put(&o, "}");
    break;
  }
  case DECODED_ULID:
    put_str(&o, "kind", "ulid");
    put_int(&o, "unix_ms", d->unix_ms);
    put_str(&o, "time", d->time);
    put_str(&o, "uuid", d->uuid);
    break;
  case DECODED_UUID:
    put_str(&o, "kind", "uuid");
    put_int(&o, "version", d->version);
    if (strcmp(d->variant, "rfc9562") != 0)
      put_str(&o, "variant", d->variant);
    if (d->has_time) {
      put_int(&o, "unix_ms", d->unix_ms);
      put_str(&o, "time", d->time);
    }
    break;
  }
  put(&o, "}");
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
