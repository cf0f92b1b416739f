/*
 * fuzz_thrift.c -- libFuzzer target for the Thrift frame and message parser
 * of `idgen serve --thrift`.
 *
 * Properties: never crashes or reads outside the input (skipping nested
 * containers included); a rejection has a message; an accepted call's name
 * and user agent lie inside the frame it consumed; parsing those bytes alone
 * gives the same result; every proper prefix of them asks for more; and the
 * reply writers never write past the room given, whatever name and message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "thrift.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  thrift_call_t t, again;
  char err[THRIFT_ERR_MAX] = "";
  ssize_t n = thrift_parse(buf, size, 4096, &t, err);
  if (n == THRIFT_MALFORMED) {
    if (err[0] == '\0')
      abort();
    if (t.name != NULL && (t.name < buf || t.name + t.name_len > buf + size))
      abort();
    return 0;
  }
  if (n == THRIFT_NEED_MORE)
    return 0;
  if (n < 4 || (size_t)n > size)
    abort();
  if (t.name < buf || t.name + t.name_len > buf + n)
    abort();
  if (t.has_useragent && (t.useragent < buf || t.useragent + t.useragent_len > buf + n))
    abort();
  if (thrift_parse(buf, (size_t)n, 4096, &again, err) != n || again.method != t.method ||
      again.seqid != t.seqid)
    abort();
  for (size_t k = 0; k < (size_t)n; k += 1 + k / 8)
    if (thrift_parse(buf, k, 4096, &again, err) != THRIFT_NEED_MORE)
      abort();
  /* The writers, into a small room: all or nothing, never past it. */
  char out[96];
  char msg[64];
  size_t ml = size < sizeof msg - 1 ? size : sizeof msg - 1;
  memcpy(msg, data, ml);
  msg[ml] = '\0';
  for (size_t cap = 0; cap <= sizeof out; cap += 7) {
    size_t w = thrift_write_exception(out, cap, t.name, t.name_len, t.seqid, 7, msg);
    if (w > cap)
      abort();
    w = thrift_write_i64(out, cap, t.name, t.name_len, t.seqid, (int64_t)size);
    if (w > cap)
      abort();
  }
  return 0;
}
