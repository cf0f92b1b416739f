/*
 * errors.c -- status codes to text, read from the one list in idgen.h.
 */
#include "idgen.h"

const char *idgen_strerror(int code) {
  switch (code) {
#define IDGEN__ERRNO_MSG(name, value, msg) \
  case value:                              \
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
#define IDGEN__ERRNO_NAME(name, value, msg) \
  case value:                               \
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
