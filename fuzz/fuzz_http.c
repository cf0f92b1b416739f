/*
 * fuzz_http.c -- libFuzzer target for the HTTP/1.1 request-head parser.
 *
 * Properties: never crashes or reads outside the input; a rejection has a
 * status of 400, 431, 501 or 505 and a reason; an accepted head is at most
 * the cap, its strings lie inside it (but for the "/" of an absolute-form
 * target with an empty path), it parses the same on its own, every proper
 * prefix of it asks for more, its Accept weight is -1 or 0..1000, and its
 * query decodes to no more bytes than it has, or names a '%' that is bad;
 * its body (http_body, as a /lease route takes one) is refused 411 or 413
 * with a reason, or asked for while the input is short, or ends within the
 * input exactly Content-Length bytes after the head.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 1024

static int inside(http_str_t s, const char *buf, ssize_t n) {
  return s.len == 0 || (s.ptr >= buf && s.ptr + s.len <= buf + n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  /* Room for 32 headers each, as a daemon with max_headers = 32 has. */
  http_header_t h1[32], h2[32];
  http_request_t r = {.headers = h1, .max_headers = 32}, again = {.headers = h2, .max_headers = 32};
  int st = 0;
  char err[HTTP_ERR_MAX] = "";
  ssize_t n = http_parse(buf, size, CAP, &r, &st, err);
  if (n == HTTP_MALFORMED) {
    if ((st != 400 && st != 431 && st != 501 && st != 505) || err[0] == '\0')
      abort();
    return 0;
  }
  if (n == HTTP_NEED_MORE)
    return 0;
  if (n < 0 || (size_t)n > size || (size_t)n > CAP + 2)
    abort();
  /* An absolute-form target with an empty path has the path "/" outside. */
  int path_ok = inside(r.path, buf, n) || (r.path.len == 1 && r.path.ptr[0] == '/');
  if (!inside(r.method, buf, n) || !inside(r.target, buf, n) || !path_ok ||
      !inside(r.query, buf, n))
    abort();
  for (size_t i = 0; i < r.nheaders; i++)
    if (!inside(r.headers[i].name, buf, n) || !inside(r.headers[i].value, buf, n))
      abort();
  if (http_parse(buf, (size_t)n, CAP, &again, &st, err) != n || again.nheaders != r.nheaders ||
      again.content_length != r.content_length || again.keep_alive != r.keep_alive)
    abort();
  int q = http_accept_q(&r, "application/json");
  if (q < -1 || q > 1000)
    abort();
  char dec[16];
  size_t bad = 0;
  ssize_t d = http_unescape(r.query.ptr, r.query.len, dec, sizeof dec, &bad);
  if (d > (ssize_t)r.query.len || (d < 0 && (bad >= r.query.len || r.query.ptr[bad] != '%')))
    abort();
  ssize_t whole = http_body(size, (size_t)n, &r, 64, &st, err);
  if (whole == HTTP_MALFORMED ? (st != 411 && st != 413) || err[0] == '\0'
      : whole == HTTP_NEED_MORE
          ? r.content_length < 0 || (size_t)n + (size_t)r.content_length <= size
          : whole != n + r.content_length || (size_t)whole > size)
    abort();
  for (size_t k = 0; k < (size_t)n; k += 1 + k / 8)
    if (http_parse(buf, k, CAP, &again, &st, err) != HTTP_NEED_MORE)
      abort();
  return 0;
}
