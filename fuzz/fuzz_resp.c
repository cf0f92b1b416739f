/*
 * fuzz_resp.c -- libFuzzer target for the RESP2 request parser.
 *
 * Properties: never crashes or reads outside the input; a rejection has a
 * "Protocol error: " message; an accepted request's arguments lie inside
 * the bytes it consumed; parsing those bytes alone gives the same result;
 * and every proper prefix of them asks for more (no decision is taken before
 * the request is complete).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  resp_request_t r, again;
  char err[RESP_ERR_MAX] = "";
  ssize_t n = resp_parse(buf, size, 4096, &r, err);
  if (n == RESP_MALFORMED) {
    if (strncmp(err, "Protocol error: ", 16) != 0)
      abort();
    return 0;
  }
  if (n == RESP_NEED_MORE)
    return 0;
  if (n < 0 || (size_t)n > size)
    abort();
  for (size_t i = 0; i < r.argc && i < RESP_MAX_ARGV; i++)
    if (r.argv[i].ptr < buf || r.argv[i].ptr + r.argv[i].len > buf + n)
      abort();
  if (resp_parse(buf, (size_t)n, 4096, &again, err) != n || again.argc != r.argc)
    abort();
  for (size_t k = 0; k < (size_t)n; k += 1 + k / 8)
    if (resp_parse(buf, k, 4096, &again, err) != RESP_NEED_MORE)
      abort();
  return 0;
}
