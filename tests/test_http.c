/*
 * test_http.c -- the HTTP/1.1 request-head parser: request lines, headers,
 * keep-alive, Content-Length, the request-smuggling pair, limits (431),
 * each rejection's status and reason, and the property that every proper
 * prefix of a valid head asks for more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "testutil.h"

#define MAX_HEAD 8192
#define MAX_HEADERS 32

/* A request with room for MAX_HEADERS headers (the caller's, as the daemon's
 * max_headers array is its loop's). */
#define REQUEST                                                                                    \
  { .headers = (http_header_t[MAX_HEADERS]){{{0}}}, .max_headers = MAX_HEADERS }

static ssize_t parse(const char *s, http_request_t *r, int *status, char *err) {
  return http_parse(s, strlen(s), MAX_HEAD, r, status, err);
}

static int str_is(http_str_t s, const char *want) {
  return s.len == strlen(want) && memcmp(s.ptr, want, s.len) == 0;
}

/* Parses "GET target HTTP/version", a Host and `headers` from in[n] (which
 * *r then points into); fails the test unless the whole head is accepted. */
static void parse_ok(char *in, size_t n, const char *target, const char *version,
                     const char *headers, http_request_t *r) {
  snprintf(in, n, "GET %s HTTP/%s\r\nHost: x\r\n%s\r\n", target, version, headers);
  int st = 0;
  char err[HTTP_ERR_MAX] = "";
  ssize_t rc = parse(in, r, &st, err);
  if (rc != (ssize_t)strlen(in))
    fail_msg("\"%s\": returned %zd (%d %s)", in, rc, st, err);
}

static void test_valid(void **state) {
  (void)state;
  http_request_t r = REQUEST;
  int st = 0;
  char err[HTTP_ERR_MAX];
  const char *in = "GET /id?count=3&agent=billing HTTP/1.1\r\nHost: localhost\r\n"
                   "Accept:  application/json \r\n\r\n";
  assert_int_equal(strlen(in), parse(in, &r, &st, err));
  assert_true(str_is(r.method, "GET"));
  assert_true(str_is(r.path, "/id"));
  assert_true(str_is(r.query, "count=3&agent=billing"));
  assert_int_equal(1, r.minor);
  assert_int_equal(1, r.keep_alive);
  assert_int_equal(-1, r.content_length);
  assert_int_equal(2, r.nheaders);
  assert_true(str_is(*http_header(&r, "accept"), "application/json"));
  assert_null(http_header(&r, "cookie"));

  assert_int_equal(18, parse("GET / HTTP/1.0\r\n\r\n", &r, &st, err));
  assert_int_equal(0, r.keep_alive); /* HTTP/1.0 closes by default */
  assert_int_equal(0, r.query.len);
  in = "GET /health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n";
  assert_int_equal(strlen(in), parse(in, &r, &st, err));
  assert_int_equal(1, r.keep_alive);
  in = "GET /health HTTP/1.1\r\nHost: x\r\nConnection: foo, close\r\n\r\n";
  assert_int_equal(strlen(in), parse(in, &r, &st, err));
  assert_int_equal(0, r.keep_alive);
  in = "\r\n\r\nGET /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello";
  assert_int_equal(strlen(in) - 5, parse(in, &r, &st, err)); /* the body is not the head */
  assert_int_equal(5, r.content_length);
}

/* absolute-form: path and query come from the target; the host is ignored
 * (RFC 9112 section 3.2.2 tells the server to use it instead of Host, and
 * this daemon serves every host alike). */
static void test_absolute_form(void **state) {
  (void)state;
  static const struct {
    const char *target, *path, *query;
  } t[] = {
      {"http://127.0.0.1:8080/id?count=2", "/id", "count=2"},
      {"HTTPS://example.com/ulid", "/ulid", ""},
      {"hTTp://h", "/", ""}, /* an empty path is "/" */
      {"http://h?count=3", "/", "count=3"},
      {"http://[::1]:6380/decode/12?x=1?y", "/decode/12", "x=1?y"},
      {"http://h:/health", "/health", ""},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char in[256];
    http_request_t r = REQUEST;
    parse_ok(in, sizeof in, t[i].target, "1.1", "", &r);
    assert_true(str_is(r.target, t[i].target));
    if (!str_is(r.path, t[i].path) || !str_is(r.query, t[i].query))
      fail_msg("case %zu: path \"%.*s\" query \"%.*s\"", i, (int)r.path.len, r.path.ptr,
               (int)r.query.len, r.query.ptr);
  }
}

/* Connection is a list of tokens over any number of lines: "close"
 * anywhere closes, whatever else is said (RFC 9112 section 9.6). */
static void test_connection(void **state) {
  (void)state;
  static const struct {
    const char *version, *headers;
    int keep_alive;
  } t[] = {
      {"1.1", "", 1},
      {"1.1", "Connection: close\r\n", 0},
      {"1.1", "Connection: close, keep-alive\r\n", 0},
      {"1.1", "Connection: Keep-Alive,CLOSE\r\n", 0},
      {"1.1", "Connection: close\r\nConnection: keep-alive\r\n", 0},
      {"1.1", "Connection: keep-alive\r\nConnection: upgrade ,\tclose\r\n", 0},
      {"1.1", "Connection: keep-alive\r\n", 1},
      {"1.1", "Connection: closed, keep-alive-x\r\n", 1}, /* tokens, not prefixes */
      {"1.0", "", 0},
      {"1.0", "Connection: keep-alive\r\n", 1},
      {"1.0", "Connection: upgrade, Keep-Alive\r\n", 1},
      {"1.0", "Connection: close, keep-alive\r\n", 0},
      {"1.0", "Connection: keep-alive\r\nConnection: close\r\n", 0},
      {"1.0", "Connection: keep-alive\r\nConnection: foo\r\n", 1},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char in[256];
    http_request_t r = REQUEST;
    parse_ok(in, sizeof in, "/id", t[i].version, t[i].headers, &r);
    if (r.keep_alive != t[i].keep_alive)
      fail_msg("case %zu (%s): keep_alive %d, want %d", i, t[i].headers, r.keep_alive,
               t[i].keep_alive);
  }
}

/* Accept's media ranges and weights (RFC 9110 section 12.5.1): the weight
 * of a type named exactly, in thousandths; -1 if not named. */
static void test_accept(void **state) {
  (void)state;
  static const struct {
    const char *headers;
    int q;
  } t[] = {
      {"", -1},
      {"Accept: application/json\r\n", 1000},
      {"Accept: APPLICATION/Json\r\n", 1000},
      {"Accept: application/json;q=0\r\n", 0},
      {"Accept: application/json; q=0.0\r\n", 0},
      {"Accept: application/json ;Q=0.000\r\n", 0},
      {"Accept: application/json;q = 0\r\n", 0},
      {"Accept: application/json;charset=utf-8;q=0\r\n", 0},
      {"Accept: application/json;x=\"a,b;q=1\\\"\";q=0, text/plain\r\n", 0},
      {"Accept: text/plain, application/json;q=0.5\r\n", 500},
      {"Accept: text/html;q=0.9,application/json;q=0.001\r\n", 1},
      {"Accept: application/json;q=1.000\r\n", 1000},
      {"Accept: application/json;q=1\r\n", 1000},
      {"Accept: application/json;q=0.\r\n", 0},
      {"Accept: */*\r\n", -1},
      {"Accept: application/*\r\n", -1},
      {"Accept: application/jsonx, xapplication/json, application/json-seq\r\n", -1},
      {"Accept: text/plain; q=0.1; format=application/json\r\n", -1}, /* a parameter, not a range */
      {"Accept: text/plain\r\nAccept: application/json;q=0\r\n", 0},
      {"Accept: text/plain\r\nAccept: application/json;q=0.25\r\n", 250},
      /* Weights that are not qvalues: the range is ignored. */
      {"Accept: application/json;q=1.5\r\n", -1},
      {"Accept: application/json;q=0.0001\r\n", -1},
      {"Accept: application/json;q=\r\n", -1},
      {"Accept: application/json;q=-0\r\n", -1},
      {"Accept: application/json;q=0;q=1\r\n", -1},
      {"Accept: application/json;q=0.5, application/json;q=0\r\n", 500}, /* the higher */
      {"Accept: ,, application/json ,\r\n", 1000},
      {"Accept: application/json;;q=0;\r\n", 0}, /* empty parameters are allowed */
      {"Accept: application/json;=1;q=0.5\r\n", -1},
      {"Accept: application/json garbage, text/plain\r\n", -1},
      {"Accept: application/json;q=0 x, application/json;q=0.7\r\n", 700},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char in[256];
    http_request_t r = REQUEST;
    parse_ok(in, sizeof in, "/id", "1.1", t[i].headers, &r);
    int q = http_accept_q(&r, "application/json");
    if (q != t[i].q)
      fail_msg("case %zu (%s): q %d, want %d", i, t[i].headers, q, t[i].q);
  }
}

/* Percent-decoding (RFC 3986 section 2.1) of query keys and values. */
static void test_unescape(void **state) {
  (void)state;
  static const struct {
    const char *in;
    ssize_t len; /* decoded length, or -1 */
    const char *out;
    size_t bad; /* the malformed escape's offset */
  } t[] = {
      {"count", 5, "count", 0},
      {"%33", 1, "3", 0},
      {"bill%69ng", 7, "billing", 0},
      {"%6Ason", 4, "json", 0},
      {"%6aSON", 4, "jSON", 0},
      {"%2D1", 2, "-1", 0},
      {"a+b", 3, "a+b", 0}, /* not form-encoded: + is + */
      {"%2B%20", 2, "+ ", 0},
      {"%00x%C1%7F", 4, "\0x\xc1\x7f", 0},
      {"", 0, "", 0},
      {"%", -1, "", 0},
      {"ab%3", -1, "", 2},
      {"%zz", -1, "", 0},
      {"1%3g", -1, "", 1},
      {"ok%41%", -1, "", 5},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    char out[32];
    size_t bad = 99;
    ssize_t n = http_unescape(t[i].in, strlen(t[i].in), out, sizeof out, &bad);
    if (n != t[i].len)
      fail_msg("case %zu (%s): returned %zd, want %zd", i, t[i].in, n, t[i].len);
    if (n >= 0)
      assert_memory_equal(t[i].out, out, (size_t)n);
    else
      assert_int_equal(t[i].bad, bad);
  }
  /* Longer than the room: the length is still the whole, the room is filled. */
  char small[3];
  size_t bad;
  assert_int_equal(5, http_unescape("ab%63de", 7, small, sizeof small, &bad));
  assert_memory_equal("abc", small, 3);
}

static void test_pipelined(void **state) {
  (void)state;
  const char *in = "GET /id HTTP/1.1\r\nHost: x\r\n\r\nGET /ulid HTTP/1.1\r\nHost: x\r\n\r\n";
  http_request_t r = REQUEST;
  int st;
  char err[HTTP_ERR_MAX];
  ssize_t n = http_parse(in, strlen(in), MAX_HEAD, &r, &st, err);
  assert_int_equal(29, n);
  assert_true(str_is(r.path, "/id"));
  assert_int_equal(31, http_parse(in + n, strlen(in) - (size_t)n, MAX_HEAD, &r, &st, err));
  assert_true(str_is(r.path, "/ulid"));
}

/* http_body: a POST's body after its head, a second request pipelined
 * behind it, and each refusal (no Content-Length, too large), with the
 * path still known after a Transfer-Encoding's 501. */
static void test_body(void **state) {
  (void)state;
  const char *in = "POST /lease HTTP/1.1\r\nHost: x\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
                   "GET /id HTTP/1.1\r\nHost: x\r\n\r\n";
  http_request_t r = REQUEST;
  int st = 0;
  char err[HTTP_ERR_MAX] = "";
  ssize_t head = http_parse(in, strlen(in), MAX_HEAD, &r, &st, err);
  assert_int_equal(52, head);
  assert_int_equal(7, r.content_length);
  for (size_t len = 0; len < 59; len++)
    assert_int_equal(HTTP_NEED_MORE, http_body(len, (size_t)head, &r, 4096, &st, err));
  ssize_t whole = http_body(strlen(in), (size_t)head, &r, 4096, &st, err);
  assert_int_equal(59, whole);
  assert_memory_equal("{\"a\":1}", in + head, 7);
  assert_int_equal(29, http_parse(in + whole, strlen(in) - (size_t)whole, MAX_HEAD, &r, &st, err));
  assert_true(str_is(r.path, "/id"));

  const char *big = "POST /lease HTTP/1.1\r\nHost: x\r\nContent-Length: 4097\r\n\r\n";
  head = parse(big, &r, &st, err);
  assert_int_equal((ssize_t)strlen(big), head);
  assert_int_equal(HTTP_MALFORMED, http_body(strlen(big), (size_t)head, &r, 4096, &st, err));
  assert_int_equal(413, st);
  assert_string_equal("a body of 4097 bytes is over this route's 4096", err);

  const char *none = "POST /lease HTTP/1.1\r\nHost: x\r\n\r\n";
  head = parse(none, &r, &st, err);
  assert_int_equal(HTTP_MALFORMED, http_body(strlen(none), (size_t)head, &r, 4096, &st, err));
  assert_int_equal(411, st);
  assert_string_equal("a body needs a Content-Length (chunked bodies are not taken)", err);

  const char *chunked = "POST /lease HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  assert_int_equal(HTTP_MALFORMED, parse(chunked, &r, &st, err));
  assert_int_equal(501, st);
  assert_true(str_is(r.path, "/lease"));
}

static void test_rejections(void **state) {
  (void)state;
  static const struct {
    const char *in;
    int status;
    const char *reason;
  } t[] = {
      {"GET /id HTTP/1.1\n\n", 400, "request line: control byte or bare LF"},
      {"G@T /id HTTP/1.1\r\n\r\n", 400, "request line: bad method"},
      {" GET /id HTTP/1.1\r\n\r\n", 400, "request line: bad method"},
      {"GET\r\n\r\n", 400, "request line: bad method"},
      {"GET /id\r\n\r\n", 400, "request line: missing target or version"},
      {"GET id HTTP/1.1\r\n\r\n", 400, "request line: target must be /path or http://host/path"},
      /* absolute-form (RFC 9112 section 3.2.2): http or https, a host, no user@ */
      {"GET ftp://h/id HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: the target's scheme must be http or https"},
      {"GET git+ssh://h/id HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: the target's scheme must be http or https"},
      {"GET http:/id HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: target must be /path or http://host/path"},
      {"GET http:///id HTTP/1.1\r\nHost: h\r\n\r\n", 400, "request line: no host in the target"},
      {"GET http://?count=1 HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: no host in the target"},
      {"GET http://u@h/id HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: bad host in the target"},
      {"GET http://h:8x/id HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: bad host in the target"},
      {"CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: target must be /path or http://host/path"},
      {"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", 400,
       "request line: the target * (asterisk-form) is not served"},
      {"GET /id HTTP/1.1 \r\n\r\n", 400, "request line: bad HTTP version"},
      {"GET /id HTTQ/1.1\r\n\r\n", 400, "request line: bad HTTP version"},
      {"GET /id HTTP/2.0\r\n\r\n", 505, "HTTP version not supported (use HTTP/1.1)"},
      {"GET /i\x01 HTTP/1.1\r\n\r\n", 400, "request line: control byte or bare LF"},
      {"GET /id HTTP/1.1\r\nHost : x\r\n\r\n", 400,
       "header: bad name (or a space before the colon)"},
      {"GET /id HTTP/1.1\r\nHost\r\n\r\n", 400, "header: bad name (or a space before the colon)"},
      {"GET /id HTTP/1.1\r\nHost: x\r\n  folded\r\n\r\n", 400, "header: obsolete line folding"},
      {"GET /id HTTP/1.1\r\nX: a\x7f\r\n\r\n", 400, "header: control byte or bare LF"},
      {"GET /id HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400, "header: bad Content-Length"},
      {"GET /id HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400, "header: bad Content-Length"},
      {"GET /id HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400,
       "header: conflicting Content-Length"},
      {"POST /id HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
       "header: both Content-Length and Transfer-Encoding"},
      {"POST /id HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501,
       "Transfer-Encoding is not supported"},
      /* Host (RFC 9112 section 3.2): one, and only one, in HTTP/1.1. */
      {"GET /id HTTP/1.1\r\n\r\n", 400, "header: no Host (HTTP/1.1 requires one)"},
      {"GET /id HTTP/1.1\r\nAccept: */*\r\n\r\n", 400, "header: no Host (HTTP/1.1 requires one)"},
      {"GET /id HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "header: more than one Host"},
      {"GET /id HTTP/1.1\r\nHost: a\r\nhOST: a\r\n\r\n", 400, "header: more than one Host"},
      {"GET /id HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400, "header: more than one Host"},
      {"GET /id HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "header: bad Host value"},
      {"GET /id HTTP/1.1\r\nHost: user@a\r\n\r\n", 400, "header: bad Host value"},
      {"GET /id HTTP/1.1\r\nHost: a:80x\r\n\r\n", 400, "header: bad Host value"},
      {"GET /id HTTP/1.1\r\nHost: [::1\r\n\r\n", 400, "header: bad Host value"},
      {"GET /id HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, "header: bad Host value"},
      {"GET /id HTTP/1.1\r\nHost: \xc3\xa9\r\n\r\n", 400, "header: bad Host value"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    http_request_t r = REQUEST;
    int st = 0;
    char err[HTTP_ERR_MAX] = "";
    ssize_t rc = parse(t[i].in, &r, &st, err);
    if (rc != HTTP_MALFORMED)
      fail_msg("case %zu: returned %zd", i, rc);
    assert_int_equal(t[i].status, st);
    assert_string_equal(t[i].reason, err);
  }
}

/* The Host forms RFC 9110 section 7.2 allows, and HTTP/1.0 without one. */
static void test_host(void **state) {
  (void)state;
  static const char *ok[] = {
      "GET /id HTTP/1.0\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost: localhost\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost: [::1]:6380\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost: [v1.x]\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost: ex-ample.com.:\r\n\r\n", /* port = *DIGIT */
      "GET /id HTTP/1.1\r\nHost: caf%C3%A9.example\r\n\r\n",
      "GET /id HTTP/1.1\r\nHost:\r\n\r\n", /* empty: a URI without authority */
      "GET /id HTTP/1.1\r\nX: 1\r\nhost: a\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    http_request_t r = REQUEST;
    int st = 0;
    char err[HTTP_ERR_MAX] = "";
    ssize_t rc = parse(ok[i], &r, &st, err);
    if (rc != (ssize_t)strlen(ok[i]))
      fail_msg("case %zu: returned %zd (%d %s)", i, rc, st, err);
  }
}

static void test_limits(void **state) {
  (void)state;
  http_request_t r = REQUEST;
  int st;
  char err[HTTP_ERR_MAX];
  /* A head over the cap, complete or not: 431. */
  size_t n = MAX_HEAD + 100;
  char *big = malloc(n + 8);
  strcpy(big, "GET /id HTTP/1.1\r\nX-Big: ");
  memset(big + strlen(big), 'a', n - strlen(big));
  big[n] = '\0';
  assert_int_equal(HTTP_MALFORMED, http_parse(big, n, MAX_HEAD, &r, &st, err));
  assert_int_equal(431, st);
  memcpy(big + n - 4, "\r\n\r\n", 4);
  assert_int_equal(HTTP_MALFORMED, http_parse(big, n, MAX_HEAD, &r, &st, err));
  assert_int_equal(431, st);
  free(big);
  /* Too many headers: 431, naming the limit and its setting; exactly the
   * limit is taken. */
  char many[4096] = "GET / HTTP/1.1\r\nHost: x\r\n";
  for (int i = 2; i <= MAX_HEADERS; i++)
    strcat(many, "X: y\r\n");
  strcat(many, "\r\n");
  assert_int_equal(strlen(many), parse(many, &r, &st, err));
  assert_int_equal(MAX_HEADERS, r.nheaders);
  many[strlen(many) - 2] = '\0';
  strcat(many, "X: y\r\n\r\n");
  assert_int_equal(HTTP_MALFORMED, parse(many, &r, &st, err));
  assert_int_equal(431, st);
  assert_string_equal("more than 32 headers (max_headers)", err);
  /* A smaller room is the limit: one header (Host) passes, two do not. */
  http_header_t one[1];
  http_request_t small = {.headers = one, .max_headers = 1};
  const char *host_only = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  assert_int_equal(strlen(host_only), parse(host_only, &small, &st, err));
  assert_int_equal(HTTP_MALFORMED,
                   parse("GET / HTTP/1.1\r\nHost: x\r\nA: b\r\n\r\n", &small, &st, err));
  assert_int_equal(431, st);
  assert_string_equal("more than 1 headers (max_headers)", err);
}

static void test_prefixes_need_more(void **state) {
  (void)state;
  static const char *valid[] = {
      "GET /id HTTP/1.1\r\nHost: x\r\n\r\n",
      ("GET /id?count=1000&format=json HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: curl/7.88"
       "\r\nAccept: */*\r\n\r\n"),
      "\r\nGET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
      "GET http://127.0.0.1:8080/id?count=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
  };
  for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
    size_t len = strlen(valid[i]);
    http_request_t r = REQUEST;
    int st;
    char err[HTTP_ERR_MAX];
    assert_int_equal(len, http_parse(valid[i], len, MAX_HEAD, &r, &st, err));
    for (size_t k = 0; k < len; k++) {
      ssize_t rc = http_parse(valid[i], k, MAX_HEAD, &r, &st, err);
      if (rc != HTTP_NEED_MORE)
        fail_msg("case %zu cut at %zu: returned %zd (%s)", i, k, rc, err);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid),      cmocka_unit_test(test_absolute_form),
      cmocka_unit_test(test_connection), cmocka_unit_test(test_accept),
      cmocka_unit_test(test_unescape),   cmocka_unit_test(test_pipelined),
      cmocka_unit_test(test_rejections), cmocka_unit_test(test_host),
      cmocka_unit_test(test_limits),     cmocka_unit_test(test_prefixes_need_more),
      cmocka_unit_test(test_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
