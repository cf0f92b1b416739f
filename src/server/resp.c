/*
 * resp.c -- RESP2 request parsing; see resp.h.
 *
 * The parser starts from the beginning of the buffer each time.  That is
 * quadratic only in the size of one request, which the limits cap (count
 * lines and inline requests at 64 KiB, bulk strings at `max_bulk`); requests
 * of this daemon are a few dozen bytes.  Behaviour follows Redis 7
 * (networking.c, processInlineBuffer/processMultibulkBuffer):
 *   - "*N" with N <= 0 is an empty request (skipped, no reply);
 *   - N above 1024*1024 or not a number: "invalid multibulk length";
 *   - an element not starting with '$': "expected '$', got 'x'";
 *   - a bulk length < 0, above the cap or not a number: "invalid bulk length";
 *   - a count line, or an inline request, longer than 64 KiB without its
 *     newline: "too big mbulk count string" / "too big bulk count string" /
 *     "too big inline request";
 *   - inline requests end at "\n" (a "\r" before it is dropped) and split on
 *     spaces and tabs; "..." and '...' group words (escapes are not
 *     interpreted); an unclosed quote: "unbalanced quotes in request".
 */
#include "idgen.h"
#include "resp.h"

#include <string.h>

/* Parses a whole signed decimal in s[0..n); 0 on success. */
static int parse_ll(const char *s, size_t n, long long *out) {
  long long v = 0;
  int neg = 0;
  size_t i = 0;
  if (n == 0)
    return -1;
  if (s[0] == '-') {
    neg = 1;
    if (++i == n)
      return -1;
  }
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9' || v > (1LL << 40))
      return -1; /* anything this long is out of every range here */
    v = v * 10 + (s[i] - '0');
  }
  *out = neg ? -v : v;
  return 0;
}

/* Finds "\r\n" at or after buf[pos]; returns the index of '\r' or -1. */
static ssize_t find_crlf(const char *buf, size_t len, size_t pos) {
  while (pos + 1 < len) {
    const char *cr = memchr(buf + pos, '\r', len - pos - 1);
    if (cr == NULL)
      return -1;
    if (cr[1] == '\n')
      return cr - buf;
    pos = (size_t)(cr - buf) + 1;
  }
  return -1;
}

static ssize_t fail(char *err, const char *msg) {
  size_t n = strlen(msg);
  memcpy(err, msg, n + 1); /* every message fits RESP_ERR_MAX */
  return RESP_MALFORMED;
}

static ssize_t parse_inline(const char *buf, size_t len, resp_request_t *req, char *err) {
  const char *nl = memchr(buf, '\n', len);
  if (nl == NULL)
    return len > RESP_MAX_LINE ? fail(err, "Protocol error: too big inline request")
                               : RESP_NEED_MORE;
  size_t end = (size_t)(nl - buf);
  if (end > RESP_MAX_LINE)
    return fail(err, "Protocol error: too big inline request");
  size_t stop = end > 0 && buf[end - 1] == '\r' ? end - 1 : end;
  req->argc = 0;
  for (size_t i = 0; i < stop;) {
    if (buf[i] == ' ' || buf[i] == '\t') {
      i++;
      continue;
    }
    size_t a = i, b;
    if (buf[i] == '"' || buf[i] == '\'') {
      const char *q = memchr(buf + i + 1, buf[i], stop - i - 1);
      /* The closing quote must end the word, as in Redis. */
      if (q == NULL || (q + 1 < buf + stop && q[1] != ' ' && q[1] != '\t'))
        return fail(err, "Protocol error: unbalanced quotes in request");
      a = i + 1;
      b = (size_t)(q - buf);
      i = b + 1;
    } else {
      while (i < stop && buf[i] != ' ' && buf[i] != '\t')
        i++;
      b = i;
    }
    if (req->argc < RESP_MAX_ARGV)
      req->argv[req->argc] = (resp_arg_t){buf + a, b - a};
    req->argc++;
  }
  return (ssize_t)end + 1;
}

ssize_t resp_parse(const char *buf, size_t len, size_t max_bulk, resp_request_t *req, char *err) {
  if (len == 0)
    return RESP_NEED_MORE;
  if (buf[0] != '*')
    return parse_inline(buf, len, req, err);

  ssize_t cr = find_crlf(buf, len, 1);
  if (cr < 0)
    return len > RESP_MAX_LINE ? fail(err, "Protocol error: too big mbulk count string")
                               : RESP_NEED_MORE;
  long long n;
  if (parse_ll(buf + 1, (size_t)cr - 1, &n) != 0 || n > RESP_MAX_MULTIBULK)
    return fail(err, "Protocol error: invalid multibulk length");
  size_t pos = (size_t)cr + 2;
  req->argc = 0;
  if (n <= 0)
    return (ssize_t)pos;

  for (long long k = 0; k < n; k++) {
    if (pos >= len)
      return RESP_NEED_MORE;
    if (buf[pos] != '$') {
      /* Redis quotes the byte found raw; we make it printable. */
      static const char head[] = "Protocol error: expected '$', got '";
      memcpy(err, head, sizeof head - 1);
      idgen_quote(err + sizeof head - 1, 5, buf + pos, 1, '\'');
      strcat(err, "'");
      return RESP_MALFORMED;
    }
    cr = find_crlf(buf, len, pos + 1);
    if (cr < 0)
      return len - pos > RESP_MAX_LINE ? fail(err, "Protocol error: too big bulk count string")
                                       : RESP_NEED_MORE;
    long long bl;
    if (parse_ll(buf + pos + 1, (size_t)cr - pos - 1, &bl) != 0 || bl < 0 ||
        (unsigned long long)bl > max_bulk)
      return fail(err, "Protocol error: invalid bulk length");
    pos = (size_t)cr + 2;
    if (len - pos < (size_t)bl + 2)
      return RESP_NEED_MORE;
    if (buf[pos + bl] != '\r' || buf[pos + bl + 1] != '\n')
      return fail(err, "Protocol error: bulk string not followed by CRLF");
    if (req->argc < RESP_MAX_ARGV)
      req->argv[req->argc] = (resp_arg_t){buf + pos, (size_t)bl};
    req->argc++;
    pos += (size_t)bl + 2;
  }
  return (ssize_t)pos;
}
