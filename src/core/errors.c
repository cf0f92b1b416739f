/*
 * errors.c -- status codes to text, read from the one list in idgen.h; and
 * the one way every message of the library, the CLI and the daemon quotes
 * the input it names (idgen_quote, see core_int.h).
 */
#include <assert.h>
#include <string.h>

#include "core_int.h"

const char *idgen_strerror(int code) {
  switch (code) {
#define IDGEN__ERRNO_MSG(name, value, msg)                                                         \
  case value:                                                                                      \
    return msg;
    IDGEN_ERRNO_MAP(IDGEN__ERRNO_MSG)
#undef IDGEN__ERRNO_MSG
  case 0:
    return "success";
  default:
    return "unknown error";
  }
}

const char *idgen_err_name(int code) {
  switch (code) {
#define IDGEN__ERRNO_NAME(name, value, msg)                                                        \
  case value:                                                                                      \
    return #name;
    IDGEN_ERRNO_MAP(IDGEN__ERRNO_NAME)
#undef IDGEN__ERRNO_NAME
  case 0:
    return "OK";
  default:
    return "UNKNOWN";
  }
}

const char *idgen_version(void) { return IDGEN_VERSION_STRING; }

char *idgen_quote(char *buf, size_t n, const void *s, size_t len, int quote) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *p = s;
  size_t o = 0, cut = 0; /* cut: the last unit boundary that leaves room for "..." */
  assert(n >= 4);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = p[i];
    int plain = c >= 0x20 && c <= 0x7e && c != '\\' && c != quote;
    size_t unit = plain ? 1 : 4;
    if (o + unit > n - 1) {
      memcpy(buf + cut, "...", 4);
      return buf;
    }
    if (plain) {
      buf[o] = (char)c;
    } else {
      buf[o] = '\\';
      buf[o + 1] = 'x';
      buf[o + 2] = hex[c >> 4];
      buf[o + 3] = hex[c & 15];
    }
    o += unit;
    if (o + 3 <= n - 1)
      cut = o;
  }
  buf[o] = '\0';
  return buf;
}
