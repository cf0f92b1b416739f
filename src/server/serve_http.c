/*
 * serve_http.c -- the HTTP/1.1 side of `idgen serve` (docs/SERVE.md, DESIGN §10).
 *
 * One request at a time from the connection's buffer: parse the head
 * (http.c), refuse a body (GET and HEAD have none; anything else is 405),
 * route, and append the reply with a Content-Length (for HEAD, GET's
 * headers without the body).  The lease routes (--leases) alone take a
 * body: a POST of at most LEASE_BODY_MAX bytes (LEASE_SEQ_BODY_MAX for
 * /lease/seq/store) with a Content-Length, read
 * whole (http_body) before the next request is parsed, handed to the lease
 * service (serve_leases.c), which answers later: the connection is parked
 * until then.  Errors in the framing (a bad head,
 * a body) close the connection after the reply; errors in the query do not.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "decode.h"
#include "http.h"
#include "server_int.h"

static int code_index(int status) {
  switch (status) {
#define X(n, phrase)                                                                               \
  case n:                                                                                          \
    return HC_##n;
    HTTP_CODES(X)
#undef X
  default:
    return HC_500;
  }
}

static const char *reason_phrase(int status) {
  static const char *const phrases[NHTTP_CODES] = {
#define X(n, phrase) phrase,
      HTTP_CODES(X)
#undef X
  };
  return phrases[code_index(status)];
}

/* "Date: <IMF-fixdate>\r\n", formatted once a second per loop. */
static const char *date_header(serve_worker_t *w) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME_COARSE, &t);
  if (t.tv_sec != w->date_sec) {
    struct tm tm;
    w->date_sec = t.tv_sec;
    gmtime_r(&t.tv_sec, &tm);
    strftime(w->date, sizeof w->date, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
  }
  return w->date;
}

/* After a reply: keep the connection, close it, or close it because the
 * request broke the framing (counted as a protocol close). */
enum { KEEP, CLOSE, CLOSE_BROKEN };

static int str_eq(const http_str_t *s, const char *lit) {
  size_t n = strlen(lit);
  return s->len == n && memcmp(s->ptr, lit, n) == 0;
}

/* Appends a whole response to w->out: HTTP/1.<minor>, `close` as above.
 * The answer to HEAD (head) is GET's without the body: the same headers,
 * Content-Length included (RFC 9110 section 9.3.2), so that a client
 * pipelining HEAD and GET keeps its framing. */
static void respond_as(serve_worker_t *w, serve_conn_t *c, int minor, int head, int status,
                       const char *ctype, const char *body, size_t len, int close,
                       const char *extra) {
  if (c->stop_parsing && close == KEEP)
    close = CLOSE; /* Connection: close from the client */
  size_t sent = head ? 0 : len;
  serve_buf_reserve(&w->out, sent + 240 + strlen(ctype) + strlen(extra)); /* the head's length */
  char *p = w->out.p + w->out.len;
  /* nosniff on every answer: an error echoes what the client sent (a bad
   * /decode/<text>), and a browser must not read text/plain as HTML. */
  p += sprintf(p,
               "HTTP/1.1 %d %s\r\n%sContent-Type: %s\r\nX-Content-Type-Options: nosniff\r\n"
               "Content-Length: %zu\r\n%s",
               status, reason_phrase(status), date_header(w), ctype, len, extra);
  if (close != KEEP)
    p += sprintf(p, "Connection: close\r\n");
  else if (minor == 0)
    p += sprintf(p, "Connection: keep-alive\r\n");
  memcpy(p, "\r\n", 2);
  p += 2;
  memcpy(p, body, sent);
  w->out.len = (size_t)(p + sent - w->out.p);
  CNT_ADD(w->st.http[code_index(status)], 1);
  w->replies++;
  if (close != KEEP) {
    c->stop_parsing = 1;
    c->close_reason = close == CLOSE_BROKEN ? CR_PROTOCOL : CR_EOF;
  }
}

static void respond(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int status,
                    const char *ctype, const char *body, size_t len, int close, const char *extra) {
  respond_as(w, c, req ? req->minor : 1, req && str_eq(&req->method, "HEAD"), status, ctype, body,
             len, close, extra);
}

static void respond_error(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int status,
                          const char *reason, int close, const char *extra) {
  char body[HTTP_ERR_MAX + 200];
  int n = snprintf(body, sizeof body, "%s\n", reason);
  if (n >= (int)sizeof body)
    n = (int)sizeof body - 1;
  if (status != 503 && status != 404 && status != 401 && status != 429) /* event=auth_failed */
    log_limited(&w->srv->client_log, "warn", "client_error",
                "proto=http peer=%s status=%d reason=%s", serve_peer_text(c, (char[64]){0}), status,
                log_quote(reason, strlen(reason), (char[300]){0}, 300));
  respond(w, c, req, status, "text/plain; charset=utf-8", body, (size_t)n, close,
          extra ? extra : "");
}

typedef struct query {
  size_t count;
  int agent; /* AGENT_NONE if not given */
  int json;  /* -1: not given */
  int pub;   /* format=public: the IDs' public form */
  int unpub; /* public=1|0 (/decode: a public form, or not); -1: not given */
} query_t;

/* Room for one decoded key or value: longer than any valid one, so that a
 * longer one, cut to this, is still refused (and quoted, cut). */
#define QUERY_ITEM_MAX 128
_Static_assert(QUERY_ITEM_MAX > AGENT_NAME_MAX, "an agent name must fit");

/* Percent-decodes one key or value of the query into buf[QUERY_ITEM_MAX];
 * 0 and its length (at most QUERY_ITEM_MAX), or -1 with a reason naming the
 * malformed escape. */
static int query_unescape(const char *s, size_t len, char *buf, size_t *out, char *err, size_t n) {
  size_t bad;
  ssize_t d = http_unescape(s, len, buf, QUERY_ITEM_MAX, &bad);
  if (d < 0) {
    snprintf(err, n, "bad percent-escape \"%s\" in the query (use %%HH: two hex digits)",
             IDGEN_QUOTE(s + bad, len - bad < 3 ? len - bad : 3, '"', 12));
    return -1;
  }
  *out = (size_t)d < QUERY_ITEM_MAX ? (size_t)d : QUERY_ITEM_MAX;
  return 0;
}

/* Reads count=, agent= and format=, each key and value percent-decoded
 * first; 0 or -1 with a reason in err. */
static int parse_query(serve_worker_t *w, const http_str_t *q, query_t *out, char *err, size_t n) {
  const serve_config_t *cfg = w->srv->cfg;
  int seen_count = 0, seen_agent = 0, seen_format = 0, seen_public = 0;
  out->count = 1;
  out->agent = AGENT_NONE;
  out->json = -1;
  out->pub = 0;
  out->unpub = -1;
  if (q->len == 0)
    return 0;
  const char *p = q->ptr, *end = q->ptr + q->len;
  while (p < end) {
    const char *amp = memchr(p, '&', (size_t)(end - p));
    const char *item_end = amp ? amp : end;
    const char *eq = memchr(p, '=', (size_t)(item_end - p));
    const char *rawv = eq ? eq + 1 : item_end;
    size_t rawklen = (size_t)((eq ? eq : item_end) - p), rawvlen = (size_t)(item_end - rawv);
    char key[QUERY_ITEM_MAX], val[QUERY_ITEM_MAX];
    size_t klen, vlen;
    if (query_unescape(p, rawklen, key, &klen, err, n) < 0 ||
        query_unescape(rawv, rawvlen, val, &vlen, err, n) < 0)
      return -1;
    p = amp ? amp + 1 : end;
    if (rawklen == 0 && rawvlen == 0)
      continue; /* "a=1&&b=2" */
#define KEY(lit) (klen == sizeof lit - 1 && memcmp(key, lit, klen) == 0)
    int *seen = KEY("count")    ? &seen_count
                : KEY("agent")  ? &seen_agent
                : KEY("format") ? &seen_format
                : KEY("public") ? &seen_public
                                : NULL;
    if (seen != NULL && (*seen)++) { /* key is one of the three: printable */
      snprintf(err, n, "query parameter \"%.*s\" given twice", (int)klen, key);
      return -1;
    }
    if (KEY("count")) {
      uint64_t v = 0;
      size_t i = 0;
      for (; i < vlen && i < 12 && val[i] >= '0' && val[i] <= '9'; i++)
        v = v * 10 + (uint64_t)(val[i] - '0');
      if (vlen == 0 || i != vlen || v < 1 || v > (uint64_t)cfg->max_batch) {
        snprintf(err, n,
                 "bad count: count must be a whole number from 1 to %" PRId64
                 " (max_batch), not \"%s\"",
                 cfg->max_batch, IDGEN_QUOTE(val, vlen, '"', 40));
        return -1;
      }
      out->count = (size_t)v;
    } else if (KEY("agent")) {
      if (!serve_agent_valid(val, vlen)) {
        snprintf(err, n,
                 "bad agent \"%s\": a name matches [a-zA-Z][a-zA-Z0-9-]* and has at "
                 "most %d characters",
                 IDGEN_QUOTE(val, vlen, '"', 40), AGENT_NAME_MAX);
        return -1;
      }
      out->agent = serve_agent_index(w->srv, val, vlen);
    } else if (KEY("format")) {
      if (vlen == 4 && memcmp(val, "json", 4) == 0)
        out->json = 1;
      else if (vlen == 4 && memcmp(val, "text", 4) == 0)
        out->json = 0;
      else if (vlen == 6 && memcmp(val, "public", 6) == 0)
        out->pub = 1; /* text or JSON as Accept says */
      else {
        snprintf(err, n, "bad format \"%s\": use json, text or public",
                 IDGEN_QUOTE(val, vlen, '"', 40));
        return -1;
      }
    } else if (KEY("public")) {
      if (vlen != 1 || (val[0] != '0' && val[0] != '1')) {
        snprintf(err, n, "bad public \"%s\": use 1 (a public form) or 0 (an ID)",
                 IDGEN_QUOTE(val, vlen, '"', 40));
        return -1;
      }
      out->unpub = val[0] == '1';
    } else {
      snprintf(err, n, "unknown query parameter \"%s\" (known: count, agent, format, public)",
               IDGEN_QUOTE(key, klen, '"', 40));
      return -1;
    }
#undef KEY
  }
  return 0;
}

/* JSON only when Accept names application/json itself with a weight above
 * 0: wildcards (curl sends one by default) keep the text that shell users
 * expect. */
static int wants_json(const http_request_t *req) {
  return http_accept_q(req, "application/json") > 0;
}

/* The IDs' reply: a line each, or {"ids":[...]} (sh->json); the body is
 * made for HEAD too, for its length. */
static int reply_ids(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                     const uint64_t *ids) {
  serve_buf_t *b = &w->body;
  size_t n = sh->count;
  int json = sh->json;
  const char *pub = NULL; /* format=public: the texts, a NUL after each */
  if (sh->pub) {
    int rc = serve_public_make(w, sh->kind, ids, n, &w->pub_text);
    if (rc < 0)
      return rc;
    pub = w->pub_text.p;
  }
  b->len = 0;
  serve_buf_reserve(b, n * (pub ? IDGEN_PUBLIC_TEXT_MAX + 4 : 44) + 32);
  char *p = b->p;
  if (json)
    p += sprintf(p, "{\"ids\":[");
  for (size_t i = 0; i < n; i++) {
    char text[40];
    const char *src = text;
    int len;
    if (pub != NULL) {
      src = pub;
      len = (int)strlen(pub);
      pub += len + 1;
    } else {
      len = sh->kind == KIND_SNOWFLAKE ? (int)serve_u64_dec(text, ids[i])
                                       : serve_ids_make128(w->srv, sh->kind, text);
    }
    if (len < 0) {
      b->len = 0;
      return len;
    }
    if (json) {
      p += sprintf(p, "%s\"", i ? "," : "");
      memcpy(p, src, (size_t)len);
      p += len;
      *p++ = '"';
    } else {
      memcpy(p, src, (size_t)len);
      p += len;
      *p++ = '\n';
    }
  }
  if (json)
    p += sprintf(p, "]}\n");
  b->len = (size_t)(p - b->p);
  respond_as(w, c, sh->minor, sh->head, 200,
             json ? "application/json" : "text/plain; charset=utf-8", b->p, b->len, KEEP, "");
  return 0;
}

/* A refused ID request: 503, and when to ask again. */
static void reply_ids_error(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                            int rc, const char *why, int64_t wait_ms) {
  (void)rc;
  char retry[48], body[512];
  snprintf(retry, sizeof retry, "Retry-After: %" PRId64 "\r\n", (wait_ms + 999) / 1000);
  int n = snprintf(body, sizeof body, "%s\n", why);
  if (n >= (int)sizeof body)
    n = (int)sizeof body - 1;
  respond_as(w, c, sh->minor, sh->head, 503, "text/plain; charset=utf-8", body, (size_t)n, KEEP,
             retry);
}

static const serve_replies_t http_replies = {reply_ids, reply_ids_error};

static void route_ids(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int kind,
                      query_t q) {
  /* A lost lease is the generator's error (IDGEN_ELEASE), answered as a 503
   * by serve_ids_request; ULIDs and UUIDv7s need no lease. */
  serve_reply_shape_t sh = {.replies = &http_replies,
                            .proto = PROTO_HTTP,
                            .kind = (uint8_t)kind,
                            .json = (uint8_t)(q.json >= 0 ? q.json : wants_json(req)),
                            .head = (uint8_t)str_eq(&req->method, "HEAD"),
                            .minor = (uint8_t)req->minor,
                            .pub = (uint8_t)q.pub,
                            .agent = q.agent,
                            .count = q.count};
  if (q.pub && !serve_public_on(w->srv)) {
    respond_error(w, c, req, 400,
                  "format=public: public IDs are off: the daemon has no public_key "
                  "(--public-key FILE, or IDGEN_PUBLIC_KEY)",
                  KEEP, NULL);
    return;
  }
  serve_ids_request(w, c, &sh); /* answered, or parked until its tick */
}

/* GET /seq/NAME: count numbers of sequence NAME, a line each (business
 * numbers when it has a template), or {"sequence","numbers"[,"texts"]}. */
static void route_seq(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, query_t q) {
  const char *name = req->path.ptr + 5;
  size_t len = req->path.len - 5;
  uint64_t *nums = malloc(q.count * sizeof *nums);
  char *texts = NULL, why[600];
  if (nums == NULL) {
    respond_error(w, c, req, 500, "out of memory", KEEP, NULL);
    return;
  }
  int status = serve_seq_take(w->srv, name, len, q.count, nums, &texts, why, sizeof why);
  int text = texts != NULL;
  if (status != 0) {
    free(nums);
    respond_error(w, c, req, status, why, KEEP, status == 503 ? "Retry-After: 1\r\n" : NULL);
    return;
  }
  int json = q.json >= 0 ? q.json : wants_json(req);
  serve_buf_t *b = &w->body;
  b->len = 0;
  if (json)
    serve_buf_printf(b, "{\"sequence\":\"%.*s\",\"numbers\":[", (int)len, name);
  for (size_t i = 0; i < q.count; i++) {
    char d[24];
    size_t k = serve_u64_dec(d, nums[i]);
    if (json) {
      serve_buf_put(b, i ? "," : "", i ? 1 : 0);
      serve_buf_put(b, d, k);
    } else if (!text) {
      serve_buf_put(b, d, k);
      serve_buf_put(b, "\n", 1);
    } else {
      serve_buf_printf(b, "%s\n", texts + i * SERVE_SEQ_TEXT_MAX);
    }
  }
  if (json && text) {
    serve_buf_put(b, "],\"texts\":[", 11);
    for (size_t i = 0; i < q.count; i++) {
      json_t *t = json_string(texts + i * SERVE_SEQ_TEXT_MAX);
      char *e = t ? json_dumps(t, JSON_ENCODE_ANY) : NULL;
      serve_buf_printf(b, "%s%s", i ? "," : "", e ? e : "null");
      free(e);
      json_decref(t);
    }
  }
  if (json)
    serve_buf_put(b, "]}\n", 3);
  free(nums);
  free(texts);
  respond(w, c, req, 200, json ? "application/json" : "text/plain; charset=utf-8", b->p, b->len,
          KEEP, "");
}

/* /decode/PUB of a public form: the ID behind it, or 1 after a 400. */
static int unpublic(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, const char *id,
                    size_t len, char *out, unsigned *version, char *err, size_t n) {
  int kind;
  int rc = serve_public_reverse(w, id, len, out, &kind, version, err, n);
  if (rc >= 0)
    return 0;
  if (rc == SERVE_ENOKEY)
    snprintf(err, n,
             "public=1: public IDs are off: the daemon has no public_key (--public-key "
             "FILE, or IDGEN_PUBLIC_KEY)");
  respond_error(w, c, req, 400, err, KEEP, NULL);
  return 1;
}

/* GET /decode/ID: the ID's parts; of a public form (public=1, or a text
 * form by its shape), the parts of the ID behind it, with "public" and,
 * for a text form, its "key_version". */
static void route_decode(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, query_t q) {
  const char *id = req->path.ptr + 8; /* after "/decode/" */
  size_t len = req->path.len - 8;
  decoded_t d;
  char err[400], inner[48];
  unsigned version = 0;
  int pub = q.unpub == 1 || (q.unpub != 0 && serve_public_looks(w->srv, id, len));
  if (pub) {
    if (unpublic(w, c, req, id, len, inner, &version, err, sizeof err))
      return;
  }
  if (decode_id(w->srv->layout, pub ? inner : id, pub ? strlen(inner) : len, 0, &d, err,
                sizeof err) < 0) {
    respond_error(w, c, req, 400, err, KEEP, NULL);
    return;
  }
  char text[DECODE_JSON_MAX + IDGEN_PUBLIC_TEXT_MAX + 64];
  int n = decode_json(&d, text, DECODE_JSON_MAX);
  if (n < 0) { /* DECODE_JSON_MAX holds any */
    respond_error(w, c, req, 500, "the decoded JSON does not fit", KEEP, NULL);
    return;
  }
  if (pub && n > 0 && text[n - 1] == '}') /* the input passed its parse: no quote in it */
    n += snprintf(text + n - 1, sizeof text - (size_t)n, ",\"public\":\"%.*s\",\"form\":\"%s\"",
                  (int)len, id, version ? "text" : "int") -
         1;
  if (pub && version)
    n += snprintf(text + n, sizeof text - (size_t)n, ",\"key_version\":%u", version);
  if (pub)
    text[n++] = '}';
  text[n++] = '\n';
  w->body.len = 0;
  serve_buf_put(&w->body, text, (size_t)n);
  respond(w, c, req, 200, "application/json", w->body.p, w->body.len, KEEP, "");
}

/* With auth_file: the caller's agent from `Authorization: Bearer TOKEN`
 * (the scheme's name in any case, RFC 9110 section 11.1) into *agent, 0; or
 * -1 after a 401 that names the scheme (WWW-Authenticate). */
static void lease_error(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int status,
                        const char *word, const char *msg, int close, const char *extra);

static int http_caller(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int *agent,
                       const char *lease_cors) {
  const http_str_t *h = http_header(req, "authorization");
  const char *tok = "";
  size_t tlen = 0;
  if (h != NULL && h->len > 7 && strncasecmp(h->ptr, "bearer ", 7) == 0) {
    tok = h->ptr + 7;
    tlen = h->len - 7;
    while (tlen > 0 && *tok == ' ')
      tok++, tlen--;
  }
  int r = serve_auth_caller(w, c, NULL, 0, tok, tlen, agent);
  if (r == 0)
    return 0;
  char extra[400];
  const char *why = h == NULL ? "a token is needed: Authorization: Bearer TOKEN"
                              : "the token is not one of auth_file's (Authorization: Bearer TOKEN)";
  if (r == AUTH_LIMITED) { /* (serve_auth_caller closes c after it) */
    const char *tm = "too many wrong tokens from this address: try again later";
    snprintf(extra, sizeof extra, "Retry-After: 2\r\n%s", lease_cors ? lease_cors : "");
    if (lease_cors)
      lease_error(w, c, req, 429, "limit", tm, KEEP, extra);
    else
      respond_error(w, c, req, 429, tm, KEEP, extra);
    return -1;
  }
  snprintf(extra, sizeof extra, "WWW-Authenticate: Bearer realm=\"idgen\"\r\n%s",
           lease_cors ? lease_cors : "");
  if (lease_cors)
    lease_error(w, c, req, 401, "auth", why, KEEP, extra);
  else
    respond_error(w, c, req, 401, why, KEEP, extra);
  if (c->auth_fails >= AUTH_FAILS_MAX)
    c->close_reason = CR_AUTH; /* (respond() counts a close as the client's) */
  return -1;
}

/* ---- the lease routes (--leases; the service: serve_leases.c) ---- */

/* An answer of the lease routes from the loop itself: {"error", "message"}. */
static void lease_error(serve_worker_t *w, serve_conn_t *c, const http_request_t *req, int status,
                        const char *word, const char *msg, int close, const char *extra) {
  if (status == 400 || status == 411 || status == 413)
    log_limited(&w->srv->client_log, "warn", "client_error",
                "proto=http peer=%s status=%d reason=%s", serve_peer_text(c, (char[64]){0}), status,
                log_quote(msg, strlen(msg), (char[300]){0}, 300));
  json_t *o = json_pack("{s:s,s:s}", "error", word, "message", msg);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  const char *body = text ? text : "{\"error\":\"invalid\"}";
  respond(w, c, req, status, "application/json", body, strlen(body), close, extra);
  free(text);
}

/* The service's answer, when it comes (serve_lease_job_t.answer). */
static void lease_answer(serve_worker_t *w, serve_conn_t *c, serve_lease_job_t *j) {
  respond_as(w, c, j->minor, 0, j->status, "application/json", j->json ? j->json : "{}",
             j->json ? j->json_len : 2, KEEP, j->extra);
}

/* lease_cors_origins: the header line for the request's Origin into
 * out[n] ("" when it names none of them, or none is set). */
static void lease_cors_line(const serve_config_t *cfg, const http_request_t *req, char *out,
                            size_t n) {
  out[0] = '\0';
  const char *list = cfg->lease_cors_origins;
  const http_str_t *o = http_header(req, "origin");
  if (list == NULL || list[0] == '\0' || o == NULL)
    return;
  if (strcmp(list, "*") == 0) {
    snprintf(out, n, "Access-Control-Allow-Origin: *\r\n");
    return;
  }
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == o->len && memcmp(p, o->ptr, k) == 0) { /* a configured origin: safe to echo */
      snprintf(out, n, "Access-Control-Allow-Origin: %.*s\r\nVary: Origin\r\n", (int)k, p);
      return;
    }
    p += k + (e != NULL);
  }
}

/* POST /lease, /lease/renew, /lease/mark, /lease/release (and their
 * OPTIONS preflights): the body read whole (http_body), then parsed here
 * and handed to the service thread, the connection parked until it
 * answers.  Returns the bytes used, 0 while the body is not all there. */
static size_t route_lease(serve_worker_t *w, serve_conn_t *c, const http_request_t *req,
                          const char *buf, size_t len, size_t head, int route, int caller) {
  const serve_config_t *cfg = w->srv->cfg;
  int on = w->srv->leases != NULL, has_body = req->content_length > 0;
  char cors[300], extra[600], err[HTTP_ERR_MAX];
  lease_cors_line(cfg, req, cors, sizeof cors);
  int post = str_eq(&req->method, "POST");
  if (!post) {
    int close = has_body ? CLOSE_BROKEN : KEEP;
    if (!on)
      lease_error(w, c, req, 404, "off", "this daemon lends no leases (it runs without --leases)",
                  close, "");
    else if (str_eq(&req->method, "OPTIONS")) { /* a browser's preflight: no token in it */
      snprintf(extra, sizeof extra,
               "%sAccess-Control-Allow-Methods: POST\r\nAccess-Control-Allow-Headers: "
               "Content-Type, Authorization\r\nAccess-Control-Max-Age: 600\r\n",
               cors);
      respond(w, c, req, 204, "application/json", "", 0, close, cors[0] ? extra : "");
    } else {
      snprintf(err, sizeof err, "method %s not allowed: use POST",
               IDGEN_QUOTE(req->method.ptr, req->method.len, 0, 20));
      snprintf(extra, sizeof extra, "Allow: POST, OPTIONS\r\n%s", cors);
      lease_error(w, c, req, 405, "invalid", err, close, extra);
    }
    return has_body ? len : head;
  }
  int status;
  ssize_t whole = http_body(len, head, req, lease_body_max(route), &status, err);
  if (whole == HTTP_NEED_MORE) {
    c->want_len = head + (size_t)req->content_length;
    return 0;
  }
  c->want_len = 0;
  if (whole < 0) {
    lease_error(w, c, req, status, "invalid", err, CLOSE_BROKEN, cors);
    return len;
  }
  if (!req->keep_alive)
    c->stop_parsing = 1; /* after this reply */
  if (!on) {
    lease_error(w, c, req, 404, "off", "this daemon lends no leases (it runs without --leases)",
                KEEP, "");
    return (size_t)whole;
  }
  if (atomic_load_explicit(&w->srv->auth, memory_order_relaxed) != NULL &&
      !(c->cert_authed && http_header(req, "authorization") == NULL) &&
      http_caller(w, c, req, &caller, cors) < 0)
    return (size_t)whole;
  serve_lease_job_t *j = calloc(1, sizeof *j);
  if (j == NULL) {
    lease_error(w, c, req, 500, "registry", "out of memory", KEEP, cors);
    return (size_t)whole;
  }
  char why[LEASE_ERR_MAX];
  if (lease_body_parse(route, buf + head, (size_t)req->content_length, &j->body, why) < 0) {
    free(j);
    lease_error(w, c, req, 400, "invalid", why, KEEP, cors);
    return (size_t)whole;
  }
  j->c = c;
  j->worker = w->index;
  j->read_ns = w->read_ns;
  memcpy(j->peer_key, c->peer_key, sizeof j->peer_key);
  j->agent = caller;
  j->minor = (uint8_t)req->minor;
  snprintf(j->extra, sizeof j->extra, "%s", cors);
  j->answer = lease_answer;
  c->lease_job = j;
  serve_leases_submit(w->srv, j);
  return (size_t)whole;
}

/* GET /info and /status.json: a JSON document the daemon writes. */
static void respond_json(serve_worker_t *w, serve_conn_t *c, const http_request_t *req,
                         int (*write_json)(serve_daemon_t *, serve_buf_t *), const char *extra) {
  w->body.len = 0;
  if (write_json(w->srv, &w->body) < 0)
    respond_error(w, c, req, 500, "out of memory", KEEP, NULL);
  else
    respond(w, c, req, 200, "application/json", w->body.p, w->body.len, KEEP, extra);
}

size_t serve_http_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len) {
  const serve_config_t *cfg = w->srv->cfg;
  http_request_t req = {.headers = w->http_headers, .max_headers = (size_t)cfg->max_headers};
  int status;
  char err[HTTP_ERR_MAX];
  ssize_t head = http_parse(buf, len, (size_t)cfg->max_request_bytes, &req, &status, err);
  if (head == HTTP_NEED_MORE)
    return 0;
  if (head < 0 && status == 501 && lease_body_route(req.path.ptr, req.path.len) >= 0) {
    /* A chunked body on a lease route: what it needs is a Content-Length. */
    http_request_t bad = {.method = req.method, .minor = 1};
    lease_error(w, c, &bad, 411, "invalid",
                "a body needs a Content-Length (chunked bodies are not taken)", CLOSE_BROKEN, "");
    return len;
  }
  if (head < 0) {
    /* Only the method, if the request line got that far: HEAD gets no body. */
    http_request_t bad = {.method = req.method, .minor = 1};
    respond_error(w, c, &bad, status, err, CLOSE_BROKEN, NULL);
    return len;
  }
  int lroute = lease_body_route(req.path.ptr, req.path.len);
  if (lroute >= 0)
    return route_lease(w, c, &req, buf, len, (size_t)head, lroute,
                       c->cert_authed ? c->cert_agent : AGENT_NONE);
  if (req.content_length > cfg->max_request_bytes) {
    snprintf(err, sizeof err, "a body of %" PRId64 " bytes is over max_request_bytes (%" PRId64 ")",
             req.content_length, cfg->max_request_bytes);
    respond_error(w, c, &req, 413, err, CLOSE_BROKEN, NULL);
    return len;
  }
  int get = str_eq(&req.method, "GET") || str_eq(&req.method, "HEAD");
  const http_str_t *path = &req.path;
  int kind = str_eq(path, "/id")      ? KIND_SNOWFLAKE
             : str_eq(path, "/ulid")  ? KIND_ULID
             : str_eq(path, "/uuid7") ? KIND_UUID7
                                      : -1;
  int page = str_eq(path, "/") || str_eq(path, "/status");
  int status_json = str_eq(path, "/status.json");
  int probe = str_eq(path, "/health") || str_eq(path, "/ready");
  int seq = path->len > 5 && memcmp(path->ptr, "/seq/", 5) == 0;
  int known = kind >= 0 || page || status_json || probe || seq || str_eq(path, "/info") ||
              str_eq(path, "/metrics") || (path->len > 8 && memcmp(path->ptr, "/decode/", 8) == 0);
  if (!known) {
    snprintf(err, sizeof err, "no such path: %s", IDGEN_QUOTE(path->ptr, path->len, 0, 60));
    respond_error(w, c, &req, 404, err, req.content_length > 0 ? CLOSE_BROKEN : KEEP, NULL);
    return req.content_length > 0 ? len : (size_t)head;
  }
  if (seq && get && req.method.len == 4) { /* HEAD: numbers taken and thrown away are gaps */
    respond_error(w, c, &req, 405,
                  "method HEAD not allowed on /seq/NAME: it would take numbers and drop them "
                  "(gaps in a dense sequence); use GET",
                  req.content_length > 0 ? CLOSE_BROKEN : KEEP, "Allow: GET\r\n");
    return req.content_length > 0 ? len : (size_t)head;
  }
  if (!get) {
    snprintf(err, sizeof err, "method %s not allowed: use GET or HEAD",
             IDGEN_QUOTE(req.method.ptr, req.method.len, 0, 20));
    respond_error(w, c, &req, 405, err, req.content_length > 0 ? CLOSE_BROKEN : KEEP,
                  "Allow: GET, HEAD\r\n");
    return req.content_length > 0 ? len : (size_t)head;
  }
  if (req.content_length > 0) {
    respond_error(w, c, &req, 400,
                  req.method.len == 4 ? "a HEAD request must not have a body"
                                      : "a GET request must not have a body",
                  CLOSE_BROKEN, NULL);
    return len;
  }
  if (!req.keep_alive)
    c->stop_parsing = 1; /* after this reply (respond() adds Connection: close) */
  /* Who asks: with auth_file, every route but the probes (/health, /ready)
   * needs a token (the status page and /metrics unless auth_metrics = false). */
  int caller = c->cert_authed ? c->cert_agent : AGENT_NONE; /* a client certificate's CN */
  int open_route =
      probe || (!cfg->auth_metrics && (page || status_json || str_eq(path, "/metrics")));
  if (atomic_load_explicit(&w->srv->auth, memory_order_relaxed) != NULL && !open_route &&
      !(c->cert_authed && http_header(&req, "authorization") == NULL) &&
      http_caller(w, c, &req, &caller, NULL) < 0)
    return (size_t)head;
  char why[200];
  query_t q;
  if (parse_query(w, &req.query, &q, why, sizeof why) < 0) { /* on every route */
    respond_error(w, c, &req, 400, why, KEEP, NULL);
    return (size_t)head;
  }
  if (caller != AGENT_NONE) { /* the token's agent is the caller's */
    if (q.agent != AGENT_NONE && q.agent != caller) {
      respond_error(w, c, &req, 400, "agent= names another agent than the token's", KEEP, NULL);
      return (size_t)head;
    }
    q.agent = caller;
  }
  if (kind >= 0) {
    route_ids(w, c, &req, kind, q);
  } else if (seq && q.pub) {
    respond_error(w, c, &req, 400, "format=public is for the ID routes (/id, /ulid, /uuid7)", KEEP,
                  NULL);
  } else if (seq) {
    route_seq(w, c, &req, q);
  } else if (page) { /* self-contained: it fetches only /status.json */
    respond(w, c, &req, 200, "text/html; charset=utf-8", serve_status_html, serve_status_html_len,
            KEEP,
            "Cache-Control: no-cache\r\nContent-Security-Policy: default-src 'none'; "
            "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; "
            "connect-src 'self'\r\n");
  } else if (status_json) {
    respond_json(w, c, &req, serve_status_json, "Cache-Control: no-store\r\n");
  } else if (path->ptr[1] == 'd') {
    route_decode(w, c, &req, q);
  } else if (probe) { /* /health: alive; /ready: can issue IDs now */
    w->body.len = 0;
    int sick = path->ptr[1] == 'h' ? serve_health_text(w->srv, &w->body)
                                   : serve_ready_text(w->srv, &w->body);
    respond(w, c, &req, sick ? 503 : 200, "text/plain; charset=utf-8", w->body.p, w->body.len, KEEP,
            "");
  } else if (path->ptr[1] == 'i') {
    respond_json(w, c, &req, serve_info_json, "");
  } else {
    w->body.len = 0;
    serve_metrics_text(w->srv, &w->body);
    respond(w, c, &req, 200, "text/plain; version=0.0.4; charset=utf-8", w->body.p, w->body.len,
            KEEP, "");
  }
  return (size_t)head;
}

const serve_proto_t serve_http_proto = {
    .name = "http",
    .index = PROTO_HTTP,
    .handle = serve_http_handle,
    .lf_ended = 1, /* (the head's last line) */
    .full_refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                    "X-Content-Type-Options: nosniff\r\n"
                    "Content-Length: 32\r\nConnection: close\r\n\r\n"
                    "too many connections; try later\n",
    .tls = 1,
    .tls_plain_refusal =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
        "X-Content-Type-Options: nosniff\r\nContent-Length: 47\r\nConnection: close\r\n\r\n"
        "this port speaks TLS: use https:// to reach it\n",
};
