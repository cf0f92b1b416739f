/*
 * resp.h -- the RESP2 request parser of `idgen serve` (DESIGN §9).
 *
 * Pure and allocation-free: it reads one request from the start of a buffer
 * and returns pointers into that buffer.  It accepts what Redis accepts --
 * arrays of bulk strings, and inline commands (`PING\r\n`, as
 * redis-benchmark -t ping sends) -- and rejects the rest with Redis's own
 * error texts, after which the server answers "-ERR <text>" and closes the
 * connection, as Redis does.
 */
#ifndef IDGEN_RESP_H
#define IDGEN_RESP_H

#include <stddef.h>
#include <sys/types.h>

#define RESP_MAX_ARGV 8 /* arguments kept; argc counts them all */
#define RESP_MAX_MULTIBULK (1024 * 1024)
#define RESP_MAX_LINE (64 * 1024) /* count lines and inline requests */
#define RESP_ERR_MAX 64           /* room for any error text, with its NUL */

enum { RESP_NEED_MORE = 0, RESP_MALFORMED = -1 };

typedef struct resp_arg {
  const char *ptr; /* into the parsed buffer; not NUL-terminated */
  size_t len;
} resp_arg_t;

typedef struct resp_request {
  size_t argc;                    /* 0: an empty request, to skip without reply */
  resp_arg_t argv[RESP_MAX_ARGV]; /* the first RESP_MAX_ARGV arguments */
} resp_request_t;

/*
 * Parses one request from buf[0..len).  `max_bulk` caps each bulk string
 * (Redis allows 512 MiB; the daemon allows its request size limit).
 * Returns the bytes it takes (> 0) with *req filled; RESP_NEED_MORE when
 * buf holds only part of a request; or RESP_MALFORMED with err (the caller's,
 * RESP_ERR_MAX bytes) holding Redis's text, such as
 * "Protocol error: invalid bulk length".  Thread-safe: no shared state.
 */
ssize_t resp_parse(const char *buf, size_t len, size_t max_bulk, resp_request_t *req, char *err);

#endif
