/*
 * thrift.c -- the Thrift framed binary protocol of Twitter's Snowflake
 * service (thrift.h).  Every read is bounds-checked against the frame; no
 * allocation, no recursion deeper than MAX_DEPTH.
 */
#include "thrift.h"

#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 32

/* Type ids of the binary protocol. */
enum {
  T_STOP = 0,
  T_BOOL = 2,
  T_BYTE = 3,
  T_DOUBLE = 4,
  T_I16 = 6,
  T_I32 = 8,
  T_I64 = 10,
  T_STRING = 11,
  T_STRUCT = 12,
  T_MAP = 13,
  T_SET = 14,
  T_LIST = 15
};

typedef struct rd {
  const unsigned char *p, *end;
  char *err;
} rd_t;

static int fail(rd_t *r, const char *what) {
  snprintf(r->err, THRIFT_ERR_MAX, "%s", what);
  return -1;
}

static int need(rd_t *r, size_t n) {
  return (size_t)(r->end - r->p) >= n ? 0 : fail(r, "message shorter than its contents");
}

static int rd_i32(rd_t *r, int32_t *v) {
  if (need(r, 4) < 0)
    return -1;
  *v = (int32_t)((uint32_t)r->p[0] << 24 | (uint32_t)r->p[1] << 16 | (uint32_t)r->p[2] << 8 |
                 r->p[3]);
  r->p += 4;
  return 0;
}

static int rd_byte(rd_t *r, int *v) {
  if (need(r, 1) < 0)
    return -1;
  *v = *r->p++;
  return 0;
}

static int rd_string(rd_t *r, const char **s, size_t *n) {
  int32_t len;
  if (rd_i32(r, &len) < 0)
    return -1;
  if (len < 0)
    return fail(r, "negative string length");
  if (need(r, (size_t)len) < 0)
    return -1;
  *s = (const char *)r->p;
  *n = (size_t)len;
  r->p += len;
  return 0;
}

/* Skips a value of type t. */
static int skip(rd_t *r, int t, int depth) {
  if (depth > MAX_DEPTH)
    return fail(r, "nesting deeper than 32");
  int32_t n;
  int a, b;
  const char *s;
  size_t sn;
  switch (t) {
  case T_BOOL:
  case T_BYTE:
    return need(r, 1) < 0 ? -1 : (r->p += 1, 0);
  case T_I16:
    return need(r, 2) < 0 ? -1 : (r->p += 2, 0);
  case T_I32:
    return need(r, 4) < 0 ? -1 : (r->p += 4, 0);
  case T_DOUBLE:
  case T_I64:
    return need(r, 8) < 0 ? -1 : (r->p += 8, 0);
  case T_STRING:
    return rd_string(r, &s, &sn);
  case T_STRUCT:
    for (;;) {
      if (rd_byte(r, &a) < 0)
        return -1;
      if (a == T_STOP)
        return 0;
      if (need(r, 2) < 0)
        return -1;
      r->p += 2; /* the field id */
      if (skip(r, a, depth + 1) < 0)
        return -1;
    }
  case T_MAP:
    if (rd_byte(r, &a) < 0 || rd_byte(r, &b) < 0 || rd_i32(r, &n) < 0)
      return -1;
    if (n < 0)
      return fail(r, "negative map size");
    for (int32_t i = 0; i < n; i++) /* each entry takes a byte at least: bounded by the frame */
      if (skip(r, a, depth + 1) < 0 || skip(r, b, depth + 1) < 0)
        return -1;
    return 0;
  case T_SET:
  case T_LIST:
    if (rd_byte(r, &a) < 0 || rd_i32(r, &n) < 0)
      return -1;
    if (n < 0)
      return fail(r, "negative list size");
    for (int32_t i = 0; i < n; i++)
      if (skip(r, a, depth + 1) < 0)
        return -1;
    return 0;
  default:
    snprintf(r->err, THRIFT_ERR_MAX, "unknown field type %d", t);
    return -1;
  }
}

static int method_of(const char *s, size_t n) {
  static const struct {
    const char *name;
    int m;
  } methods[] = {{"get_worker_id", THRIFT_M_GET_WORKER_ID},
                 {"get_timestamp", THRIFT_M_GET_TIMESTAMP},
                 {"get_id", THRIFT_M_GET_ID},
                 {"get_datacenter_id", THRIFT_M_GET_DATACENTER_ID}};
  for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
    if (strlen(methods[i].name) == n && memcmp(methods[i].name, s, n) == 0)
      return methods[i].m;
  return THRIFT_M_UNKNOWN;
}

ssize_t thrift_parse(const char *buf, size_t len, size_t max_frame, thrift_call_t *call,
                     char *err) {
  memset(call, 0, sizeof *call);
  if (len < 4)
    return THRIFT_NEED_MORE;
  const unsigned char *u = (const unsigned char *)buf;
  uint32_t flen = (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
  if (flen > max_frame || flen > 0x7fffffffu) {
    snprintf(err, THRIFT_ERR_MAX, "frame of %u bytes, more than max_request_bytes (%zu)", flen,
             max_frame);
    return THRIFT_MALFORMED;
  }
  if (len - 4 < flen)
    return THRIFT_NEED_MORE;
  rd_t r = {u + 4, u + 4 + flen, err};
  int32_t v;
  if (rd_i32(&r, &v) < 0)
    return THRIFT_MALFORMED;
  const char *name;
  size_t name_len;
  if (v < 0) { /* strict: version and type, then the name */
    if (((uint32_t)v & 0xffff0000u) != 0x80010000u) {
      snprintf(err, THRIFT_ERR_MAX, "bad protocol version 0x%08x", (uint32_t)v);
      return THRIFT_MALFORMED;
    }
    call->type = (int)((uint32_t)v & 0xff);
    if (rd_string(&r, &name, &name_len) < 0)
      return THRIFT_MALFORMED;
  } else { /* the old form: the name, then the type */
    r.p -= 4;
    int t;
    if (rd_string(&r, &name, &name_len) < 0 || rd_byte(&r, &t) < 0)
      return THRIFT_MALFORMED;
    call->type = t;
  }
  if (rd_i32(&r, &call->seqid) < 0)
    return THRIFT_MALFORMED;
  call->name = name;
  call->name_len = name_len;
  call->method = method_of(name, name_len);
  /* The argument struct: get_id's field 1 is the user agent; the rest (and
   * every field of the other methods) is skipped. */
  for (;;) {
    int t;
    if (rd_byte(&r, &t) < 0)
      return THRIFT_MALFORMED;
    if (t == T_STOP)
      break;
    if (need(&r, 2) < 0)
      return THRIFT_MALFORMED;
    int id = (int16_t)(r.p[0] << 8 | r.p[1]);
    r.p += 2;
    if (call->method == THRIFT_M_GET_ID && id == 1 && t == T_STRING) {
      if (rd_string(&r, &call->useragent, &call->useragent_len) < 0)
        return THRIFT_MALFORMED;
      call->has_useragent = 1;
    } else if (skip(&r, t, 1) < 0) {
      return THRIFT_MALFORMED;
    }
  }
  if (r.p != r.end) {
    snprintf(err, THRIFT_ERR_MAX, "%zu bytes after the message in its frame",
             (size_t)(r.end - r.p));
    return THRIFT_MALFORMED;
  }
  return (ssize_t)(4 + flen);
}

/* A writer into out[0..cap) that notes overflow. */
typedef struct wr {
  char *p, *end;
  int over;
} wr_t;

static void put(wr_t *w, const void *s, size_t n) {
  if (w->over || (size_t)(w->end - w->p) < n) {
    w->over = 1;
    return;
  }
  memcpy(w->p, s, n);
  w->p += n;
}

static void put_i32(wr_t *w, uint32_t v) {
  unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                        (unsigned char)v};
  put(w, b, 4);
}

static void put_byte(wr_t *w, int v) {
  unsigned char b = (unsigned char)v;
  put(w, &b, 1);
}

static void put_i16(wr_t *w, int v) {
  unsigned char b[2] = {(unsigned char)(v >> 8), (unsigned char)v};
  put(w, b, 2);
}

static void put_string(wr_t *w, const char *s, size_t n) {
  put_i32(w, (uint32_t)n);
  put(w, s, n);
}

/* The frame's length word and the message head; returns where the frame's
 * length goes. */
static char *head(wr_t *w, int type, const char *name, size_t name_len, int32_t seqid) {
  char *frame = w->p;
  put_i32(w, 0);
  put_i32(w, 0x80010000u | (uint32_t)type);
  put_string(w, name, name_len > THRIFT_NAME_MAX ? THRIFT_NAME_MAX : name_len);
  put_i32(w, (uint32_t)seqid);
  return frame;
}

static size_t finish(wr_t *w, char *frame) {
  if (w->over)
    return 0;
  uint32_t n = (uint32_t)(w->p - frame - 4);
  unsigned char b[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                        (unsigned char)n};
  memcpy(frame, b, 4);
  return (size_t)(w->p - frame);
}

size_t thrift_write_i64(char *out, size_t cap, const char *name, size_t name_len, int32_t seqid,
                        int64_t value) {
  wr_t w = {out, out + cap, 0};
  char *frame = head(&w, THRIFT_REPLY, name, name_len, seqid);
  put_byte(&w, T_I64); /* the result struct's field 0: success */
  put_i16(&w, 0);
  put_i32(&w, (uint32_t)((uint64_t)value >> 32));
  put_i32(&w, (uint32_t)value);
  put_byte(&w, T_STOP);
  return finish(&w, frame);
}

size_t thrift_write_exception(char *out, size_t cap, const char *name, size_t name_len,
                              int32_t seqid, int type, const char *message) {
  wr_t w = {out, out + cap, 0};
  char *frame = head(&w, THRIFT_EXCEPTION, name, name_len, seqid);
  put_byte(&w, T_STRING);
  put_i16(&w, 1);
  put_string(&w, message, strlen(message));
  put_byte(&w, T_I32);
  put_i16(&w, 2);
  put_i32(&w, (uint32_t)type);
  put_byte(&w, T_STOP);
  return finish(&w, frame);
}
