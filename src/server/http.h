/*
 * http.h -- the HTTP/1.1 request-head parser of `idgen serve` (DESIGN §9).
 *
 * Pure and allocation-free: it reads the request line and headers at the
 * start of a buffer and returns pointers into it.  The body, if any, is the
 * server's business (Content-Length bytes after the head).  Strict: what it
 * does not accept gets an HTTP status (400, 431, 501, 505) and a one-line
 * reason for the response.  Two readers of a parsed head, as pure: the
 * weight Accept gives a media type, and percent-decoding of the query.
 */
#ifndef IDGEN_HTTP_H
#define IDGEN_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_ERR_MAX 96 /* room for any reason, with its NUL */

enum { HTTP_NEED_MORE = 0, HTTP_MALFORMED = -1 };

typedef struct http_str {
  const char *ptr; /* into the parsed buffer; not NUL-terminated */
  size_t len;
} http_str_t;

typedef struct http_header {
  http_str_t name, value; /* value without surrounding spaces */
} http_header_t;

typedef struct http_request {
  http_str_t method;      /* "GET" */
  http_str_t target;      /* "/id?count=3", or "http://host/id?count=3" */
  http_str_t path;        /* "/id"; for an absolute-form target with an empty
                             path, "/" in static storage, not in the buffer */
  http_str_t query;       /* "count=3" (len 0 if none) */
  int minor;              /* HTTP/1.<minor> */
  int keep_alive;         /* after the version's default and Connection */
  int64_t content_length; /* -1: none given */
  size_t nheaders;
  /* The caller's, set before http_parse: room for max_headers headers (the
   * limit: a request with more is refused 431).  The parser never allocates. */
  http_header_t *headers;
  size_t max_headers;
} http_request_t;

/*
 * Parses the head of one request from buf[0..len): optional empty lines,
 * the request line, headers, and the blank line.  Returns the length of the
 * head (> 0) with *req filled; HTTP_NEED_MORE; or HTTP_MALFORMED with
 * *status (400, 431, 501 or 505) and a reason in err (the caller's,
 * HTTP_ERR_MAX bytes), and req->method set if the request line got that far
 * (else of length 0), so that the answer to a bad HEAD can leave out its
 * body; for a Transfer-Encoding (501) req->path is set too, so that a route
 * that takes bodies can say 411 instead.  `max_head` caps the head: more without its end is 431; so is a
 * head with more than req->max_headers headers (req->headers is the
 * caller's array of that many, set before the call; the other fields are
 * the parser's).
 */
ssize_t http_parse(const char *buf, size_t len, size_t max_head, http_request_t *req, int *status,
                   char *err);

/*
 * The body of a request whose head http_parse() read (head bytes at buf[0])
 * on a route that takes one, as a POST of at most max_body bytes with a
 * Content-Length: the whole request's length (head + body, > 0) with the
 * body at buf[head..) of req->content_length bytes; HTTP_NEED_MORE while
 * buf[0..len) does not hold it all; or HTTP_MALFORMED with *status and a
 * reason in err: 411 for a body without a Content-Length, 413 for one over
 * max_body.  Pure: it reads only the head's fields and len.
 */
ssize_t http_body(size_t len, size_t head, const http_request_t *req, size_t max_body, int *status,
                  char *err);

/* The header `name` (case-insensitive), or NULL. */
const http_str_t *http_header(const http_request_t *req, const char *name);

/*
 * The weight the request's Accept fields (all of them, RFC 9110 section
 * 12.5.1) give the media type `type` ("application/json") when they name it
 * exactly, in thousandths (q=0.5 is 500; no q is 1000); the highest if it is
 * named more than once; -1 if it is not named (no Accept, only wildcard
 * ranges, or only elements whose parameters or weight are malformed).
 */
int http_accept_q(const http_request_t *req, const char *type);

/*
 * Percent-decodes s[0..len) (RFC 3986 section 2.1) into out[cap]: "%HH" is
 * the byte 0xHH (either case of hex); '+' stays '+' (a query here is not
 * form-encoded).  Returns the decoded length, which may be larger than cap
 * (only cap bytes are written then); or -1 with *bad set to the offset of a
 * '%' not followed by two hex digits.  Pure.
 */
ssize_t http_unescape(const char *s, size_t len, char *out, size_t cap, size_t *bad);

#endif
