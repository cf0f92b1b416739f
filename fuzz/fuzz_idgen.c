/*
 * fuzz_idgen.c -- libFuzzer target for what the idgen:// registry parses
 * (src/registry/registry_idgen.c): its URIs, through idgen_registry_check
 * (no I/O), and the daemon's answers.  The first byte picks: an idgen:// or
 * idgens:// URI, or an answer.  An accepted URI has a message-free success;
 * a rejected one names the scheme and what is wrong (a bad space= is the
 * registry's own message), and shows no token but masked.  An answer is
 * read without a fault, any member count or a refusal with its reason.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096)
    return 0;
  char *in = malloc(size), buf[4200], err[512] = "";
  memcpy(in, data + 1, size - 1);
  in[size - 1] = '\0';
  if (data[0] % 3 == 2) { /* the bytes as they are, without the NUL */
    int n = idgen__idgen_answer_parse(in, size - 1, err, sizeof err);
    if (n < 0 && err[0] == '\0')
      abort();
    free(in);
    return 0;
  }
  const char *scheme = data[0] & 1 ? "idgens" : "idgen";
  snprintf(buf, sizeof buf, "%s:%s", scheme, in);
  int rc = idgen_registry_check(buf, err, sizeof err);
  char want[32];
  snprintf(want, sizeof want, "registry: %s: ", scheme);
  if (rc < 0 &&
      (err[0] == '\0' || (strstr(err, want) == NULL && strncmp(err, "registry: space", 15) != 0 &&
                          strstr(err, "***") == NULL)))
    abort();
  if (rc == 0 && err[0] != '\0')
    abort();
  free(in);
  return 0;
}
