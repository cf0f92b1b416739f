/*
 * http.c -- HTTP/1.1 request heads; see http.h.
 *
 * Grammar (RFC 9112), strictly:
 *   request-line = method SP ( origin-form / absolute-form ) SP "HTTP/1." DIGIT CRLF
 *   header-line  = field-name ":" OWS field-value OWS CRLF
 * Empty lines before the request line are skipped (RFC 9112 section 2.2).
 * Rejected with 400: bare LF line ends, control bytes, a space before the
 * colon, obsolete line folding, a target that is neither "/path" nor
 * "http[s]://host/path" (asterisk- and authority-form are not served), a
 * malformed or conflicting Content-Length, Content-Length with
 * Transfer-Encoding (the request-smuggling pair), an HTTP/1.1 request
 * without Host, any request with two Host lines or a Host that is not
 * host[:port] (RFC 9112 section 3.2).  Any Transfer-Encoding is 501: the
 * daemon's requests have no bodies worth streaming (the lease routes take a
 * small body with a Content-Length: http_body).  Other versions than 1.x: 505.
 * More than req->max_headers headers, or a head over max_head bytes: 431.
 */
#include "http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static ssize_t fail(int *status, char *err, int code, const char *msg) {
  *status = code;
  snprintf(err, HTTP_ERR_MAX, "%s", msg);
  return HTTP_MALFORMED;
}

/* RFC 9110 tchar. */
static int tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return 1;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Finds the end of the line starting at buf[pos]: the index of its "\r\n",
 * -1 if not there yet, -2 if a bare "\n" or a control byte comes first. */
static ssize_t line_end(const char *buf, size_t len, size_t pos) {
  for (size_t i = pos; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == '\r')
      return i + 1 < len ? (buf[i + 1] == '\n' ? (ssize_t)i : -2) : -1;
    if (c == '\n' || (c < 0x20 && c != '\t') || c == 0x7f)
      return -2;
  }
  return -1;
}

/* RFC 3986 unreserved and sub-delims: a reg-name's characters besides '%'. */
static int host_char(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
    return 1;
  return c != 0 && strchr("-._~!$&'()*+,;=", c) != NULL;
}

static int hex_digit(unsigned char c) {
  return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* uri-host [ ":" port ] (RFC 9110 section 7.2, RFC 3986 section 3.2.2):
 * a reg-name (percent-escapes allowed) or an IP literal in brackets, then
 * an optional port of digits.  No userinfo, no spaces.  Empty is valid. */
static int authority_valid(const char *s, size_t len) {
  size_t i = 0;
  if (len > 0 && s[0] == '[') {
    while (++i < len && s[i] != ']')
      if (!host_char((unsigned char)s[i]) && s[i] != ':')
        return 0;
    if (i == len || i == 1)
      return 0;
    i++;
  } else {
    for (; i < len && s[i] != ':'; i++)
      if (s[i] == '%' ? !(i + 2 < len && hex_digit((unsigned char)s[i + 1]) &&
                          hex_digit((unsigned char)s[i + 2]))
                      : !host_char((unsigned char)s[i]))
        return 0;
  }
  if (i == len)
    return 1;
  if (s[i] != ':')
    return 0;
  while (++i < len)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return 1;
}

static int token_is(http_str_t s, const char *t) {
  return s.len == strlen(t) && strncasecmp(s.ptr, t, s.len) == 0;
}

/* Notes the "close" and "keep-alive" tokens of one Connection line's
 * comma-separated list; the caller decides once all lines are read, since
 * close anywhere wins whatever the order (RFC 9112 section 9.6). */
static void connection_tokens(http_str_t v, int *close, int *keep_alive) {
  size_t i = 0;
  while (i < v.len) {
    while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t' || v.ptr[i] == ','))
      i++;
    size_t a = i;
    while (i < v.len && v.ptr[i] != ',' && v.ptr[i] != ' ' && v.ptr[i] != '\t')
      i++;
    http_str_t t = {v.ptr + a, i - a};
    if (token_is(t, "close"))
      *close = 1;
    else if (token_is(t, "keep-alive"))
      *keep_alive = 1;
  }
}

/*
 * Sets path and query from the target: origin-form "/path?query", or
 * absolute-form "http://host[:port]/path?query" (RFC 9112 section 3.2.2),
 * whose scheme is http or https in any case and whose host must be there;
 * the host is checked and then ignored, as every host is served alike.  An
 * empty path is "/".  asterisk-form and authority-form (OPTIONS *, CONNECT)
 * are refused.  Returns 0, or HTTP_MALFORMED with *status and err set.
 */
static ssize_t split_target(http_request_t *req, int *status, char *err) {
  const char *t = req->target.ptr, *end = t + req->target.len, *p = t;
  if (t[0] != '/') {
    size_t s = 0; /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
    while (t + s < end &&
           (((t[s] | 0x20) >= 'a' && (t[s] | 0x20) <= 'z') ||
            (s > 0 && ((t[s] >= '0' && t[s] <= '9') || t[s] == '+' || t[s] == '-' || t[s] == '.'))))
      s++;
    if (req->target.len == 1 && t[0] == '*')
      return fail(status, err, 400, "request line: the target * (asterisk-form) is not served");
    if (s == 0 || end - (t + s) < 3 || memcmp(t + s, "://", 3) != 0)
      return fail(status, err, 400, "request line: target must be /path or http://host/path");
    if (!((s == 4 && strncasecmp(t, "http", 4) == 0) ||
          (s == 5 && strncasecmp(t, "https", 5) == 0)))
      return fail(status, err, 400, "request line: the target's scheme must be http or https");
    const char *host = t + s + 3;
    p = host;
    while (p < end && *p != '/' && *p != '?')
      p++;
    if (p == host)
      return fail(status, err, 400, "request line: no host in the target");
    if (!authority_valid(host, (size_t)(p - host)))
      return fail(status, err, 400, "request line: bad host in the target");
  }
  const char *q = memchr(p, '?', (size_t)(end - p));
  req->path = (http_str_t){p, (size_t)((q ? q : end) - p)};
  if (req->path.len == 0)
    req->path = (http_str_t){"/", 1}; /* not in the buffer: see http.h */
  req->query = q ? (http_str_t){q + 1, (size_t)(end - q - 1)} : (http_str_t){end, 0};
  return 0;
}

ssize_t http_parse(const char *buf, size_t len, size_t max_head, http_request_t *req, int *status,
                   char *err) {
  size_t pos = 0;
  char msg[HTTP_ERR_MAX];
  req->method = (http_str_t){buf, 0}; /* until the request line gives one */
  while (pos + 1 < len && buf[pos] == '\r' && buf[pos + 1] == '\n')
    pos += 2;
  ssize_t eol = line_end(buf, len, pos);
  if (eol == -1)
    return len > max_head ? fail(status, err, 431, "request header block too large")
                          : HTTP_NEED_MORE;
  if (eol == -2)
    return fail(status, err, 400, "request line: control byte or bare LF");
  /* method SP target SP version */
  size_t i = pos;
  while (i < (size_t)eol && tchar((unsigned char)buf[i]))
    i++;
  if (i == pos || i >= (size_t)eol || buf[i] != ' ')
    return fail(status, err, 400, "request line: bad method");
  req->method = (http_str_t){buf + pos, i - pos};
  size_t t0 = ++i;
  while (i < (size_t)eol && buf[i] != ' ')
    i++;
  if (i == t0 || i >= (size_t)eol)
    return fail(status, err, 400, "request line: missing target or version");
  req->target = (http_str_t){buf + t0, i - t0};
  if (split_target(req, status, err) < 0)
    return HTTP_MALFORMED;
  size_t v0 = i + 1, vlen = (size_t)eol - v0;
  if (vlen != 8 || memcmp(buf + v0, "HTTP/", 5) != 0 || buf[v0 + 6] != '.' || buf[v0 + 5] < '0' ||
      buf[v0 + 5] > '9' || buf[v0 + 7] < '0' || buf[v0 + 7] > '9')
    return fail(status, err, 400, "request line: bad HTTP version");
  if (buf[v0 + 5] != '1')
    return fail(status, err, 505, "HTTP version not supported (use HTTP/1.1)");
  req->minor = buf[v0 + 7] - '0';
  req->content_length = -1;
  req->nheaders = 0;
  int transfer_encoding = 0, hosts = 0, conn_close = 0, conn_keep_alive = 0;

  pos = (size_t)eol + 2;
  for (;;) {
    eol = line_end(buf, len, pos);
    if (eol == -1)
      return len > max_head ? fail(status, err, 431, "request header block too large")
                            : HTTP_NEED_MORE;
    if ((size_t)eol + 2 > max_head)
      return fail(status, err, 431, "request header block too large");
    if (eol == -2)
      return fail(status, err, 400, "header: control byte or bare LF");
    if ((size_t)eol == pos)
      break; /* the blank line */
    if (buf[pos] == ' ' || buf[pos] == '\t')
      return fail(status, err, 400, "header: obsolete line folding");
    size_t c = pos;
    while (c < (size_t)eol && tchar((unsigned char)buf[c]))
      c++;
    if (c == pos || c >= (size_t)eol || buf[c] != ':')
      return fail(status, err, 400, "header: bad name (or a space before the colon)");
    size_t a = c + 1, b = (size_t)eol;
    while (a < b && (buf[a] == ' ' || buf[a] == '\t'))
      a++;
    while (b > a && (buf[b - 1] == ' ' || buf[b - 1] == '\t'))
      b--;
    if (req->nheaders == req->max_headers) {
      snprintf(msg, sizeof msg, "more than %zu headers (max_headers)", req->max_headers);
      return fail(status, err, 431, msg);
    }
    http_header_t *h = &req->headers[req->nheaders++];
    h->name = (http_str_t){buf + pos, c - pos};
    h->value = (http_str_t){buf + a, b - a};
    if (token_is(h->name, "content-length")) {
      int64_t v = 0;
      if (h->value.len == 0 || h->value.len > 18)
        return fail(status, err, 400, "header: bad Content-Length");
      for (size_t k = 0; k < h->value.len; k++) {
        if (h->value.ptr[k] < '0' || h->value.ptr[k] > '9')
          return fail(status, err, 400, "header: bad Content-Length");
        v = v * 10 + (h->value.ptr[k] - '0');
      }
      if (req->content_length >= 0 && req->content_length != v)
        return fail(status, err, 400, "header: conflicting Content-Length");
      req->content_length = v;
    } else if (token_is(h->name, "transfer-encoding")) {
      transfer_encoding = 1;
    } else if (token_is(h->name, "host")) {
      /* Two could name two origins: refused whatever the version. */
      if (hosts++)
        return fail(status, err, 400, "header: more than one Host");
      if (!authority_valid(h->value.ptr, h->value.len))
        return fail(status, err, 400, "header: bad Host value");
    } else if (token_is(h->name, "connection")) {
      connection_tokens(h->value, &conn_close, &conn_keep_alive);
    }
    pos = (size_t)eol + 2;
  }
  if (transfer_encoding && req->content_length >= 0)
    return fail(status, err, 400, "header: both Content-Length and Transfer-Encoding");
  if (transfer_encoding)
    return fail(status, err, 501, "Transfer-Encoding is not supported");
  if (hosts == 0 && req->minor >= 1)
    return fail(status, err, 400, "header: no Host (HTTP/1.1 requires one)");
  req->keep_alive = !conn_close && (req->minor >= 1 || conn_keep_alive);
  return (ssize_t)pos + 2;
}

ssize_t http_body(size_t len, size_t head, const http_request_t *req, size_t max_body, int *status,
                  char *err) {
  char msg[HTTP_ERR_MAX];
  if (req->content_length < 0)
    return fail(status, err, 411, "a body needs a Content-Length (chunked bodies are not taken)");
  if ((uint64_t)req->content_length > max_body) {
    snprintf(msg, sizeof msg, "a body of %lld bytes is over this route's %zu",
             (long long)req->content_length, max_body);
    return fail(status, err, 413, msg);
  }
  size_t whole = head + (size_t)req->content_length;
  return len < whole ? HTTP_NEED_MORE : (ssize_t)whole;
}

const http_str_t *http_header(const http_request_t *req, const char *name) {
  for (size_t i = 0; i < req->nheaders; i++)
    if (token_is(req->headers[i].name, name))
      return &req->headers[i].value;
  return NULL;
}

/* A qvalue (RFC 9110 section 12.4.2): "0" [ "." 0*3DIGIT ] or
 * "1" [ "." 0*3"0" ], in thousandths; -1 if s[0..n) is not one. */
static int qvalue(const char *s, size_t n) {
  if (n == 0 || (s[0] != '0' && s[0] != '1') || n > 5 || (n > 1 && s[1] != '.'))
    return -1;
  int q = (s[0] - '0') * 1000, scale = 100;
  for (size_t i = 2; i < n; i++, scale /= 10) {
    if (s[i] < '0' || s[i] > '9' || (s[0] == '1' && s[i] != '0'))
      return -1;
    q += (s[i] - '0') * scale;
  }
  return q;
}

static size_t skip_ows(http_str_t v, size_t i) {
  while (i < v.len && (v.ptr[i] == ' ' || v.ptr[i] == '\t'))
    i++;
  return i;
}

/* Past a token (or a quoted-string, when quoted_ok) at v.ptr[i]. */
static size_t skip_word(http_str_t v, size_t i, int quoted_ok) {
  if (quoted_ok && i < v.len && v.ptr[i] == '"') {
    for (i++; i < v.len && v.ptr[i] != '"'; i++)
      if (v.ptr[i] == '\\' && i + 1 < v.len)
        i++;
    return i < v.len ? i + 1 : i;
  }
  while (i < v.len && (tchar((unsigned char)v.ptr[i]) || v.ptr[i] == '/'))
    i++;
  return i;
}

/*
 * One element of an Accept list at v.ptr[*i]: media-range *( OWS ";" OWS
 * name OWS "=" OWS value ), spaces around "=" tolerated.  Returns the
 * element's weight in thousandths if its range is exactly `type`, else -1
 * (another range, or a malformed element or weight, which counts as not
 * naming it); leaves *i after the element's comma.
 */
static int accept_element(http_str_t v, size_t *i, const char *type) {
  size_t a = skip_ows(v, *i), b = skip_word(v, a, 0), k = skip_ows(v, b);
  int named = token_is((http_str_t){v.ptr + a, b - a}, type), q = 1000, weights = 0, ok = 1;
  while (ok && k < v.len && v.ptr[k] == ';') {
    size_t na = skip_ows(v, k + 1), nb = skip_word(v, na, 0), va = skip_ows(v, nb);
    if (nb == na) { /* an empty parameter ("a/b;;q=1") is allowed */
      k = na;
      continue;
    }
    if (va >= v.len || v.ptr[va] != '=') {
      ok = 0;
      break;
    }
    va = skip_ows(v, va + 1);
    size_t vb = skip_word(v, va, 1);
    if (nb - na == 1 && (v.ptr[na] | 0x20) == 'q') {
      q = qvalue(v.ptr + va, vb - va);
      ok = q >= 0 && weights++ == 0;
    }
    k = skip_ows(v, vb);
  }
  if (k < v.len && v.ptr[k] != ',')
    ok = 0;
  while (k < v.len && v.ptr[k] != ',') /* a malformed element: on to the next */
    k = v.ptr[k] == '"' ? skip_word(v, k, 1) : k + 1;
  *i = k + 1;
  return named && ok ? q : -1;
}

int http_accept_q(const http_request_t *req, const char *type) {
  int best = -1;
  for (size_t h = 0; h < req->nheaders; h++) {
    if (!token_is(req->headers[h].name, "accept"))
      continue;
    http_str_t v = req->headers[h].value;
    for (size_t i = 0; i < v.len;) {
      int q = accept_element(v, &i, type);
      if (q > best)
        best = q;
    }
  }
  return best;
}

static int hex_value(unsigned char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

ssize_t http_unescape(const char *s, size_t len, char *out, size_t cap, size_t *bad) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++, n++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= len || !hex_digit((unsigned char)s[i + 1]) ||
          !hex_digit((unsigned char)s[i + 2])) {
        *bad = i;
        return -1;
      }
      c = (unsigned char)(hex_value((unsigned char)s[i + 1]) << 4 |
                          hex_value((unsigned char)s[i + 2]));
      i += 2;
    }
    if (n < cap)
      out[n] = (char)c;
  }
  return (ssize_t)n;
}
