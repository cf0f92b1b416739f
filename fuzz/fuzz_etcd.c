/*
 * fuzz_etcd.c -- libFuzzer target for what the etcd:// registry parses
 * (src/registry/registry_etcd.c): the URI (through idgen_registry_check,
 * no I/O), a tuple's record and a held key's value.  The first byte picks
 * the parser.  An accepted URI has a message-free success; a rejected one
 * names what is wrong (a bad space= is the registry's own message).  An accepted record is exactly what the registry
 * writes (formatted again, the same bytes) with a mark that is not
 * negative; a rejected one leaves nothing behind.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

static void uri(const char *in) {
  char buf[4200], err[512] = "";
  snprintf(buf, sizeof buf, "etcd:%s", in);
  int rc = idgen_registry_check(buf, err, sizeof err);
  /* A refusal names the backend and what is wrong, or the URI's space=
   * parameter (the registry's, whatever the backend: fuzz_space); a
   * password spelt as a word of the message ("etcd") is masked there. */
  if (rc < 0 &&
      (err[0] == '\0' || (strstr(err, "registry: etcd: ") == NULL &&
                          strncmp(err, "registry: space", 15) != 0 && strstr(err, "***") == NULL)))
    abort();
  if (rc == 0 && err[0] != '\0')
    abort();
}

static void record(const char *in) {
  int64_t mark;
  uint64_t gen;
  char holder[IDGEN_HOLDER_MAX], again[512];
  if (idgen__etcd_record_parse(in, &mark, &gen, holder, sizeof holder) < 0) {
    if (mark != 0 || gen != 0 || holder[0] != '\0')
      abort();
    return;
  }
  if (mark < 0 || idgen__etcd_record_format(again, sizeof again, mark, gen, holder) < 0 ||
      strcmp(again, in) != 0)
    abort();
}

static void held(const char *in) {
  int64_t q;
  char holder[IDGEN_HOLDER_MAX];
  if (idgen__etcd_held_parse(in, &q, holder, sizeof holder) < 0) {
    if (q != -1 || holder[0] != '\0')
      abort();
    return;
  }
  if (q < 0)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096)
    return 0;
  char *in = malloc(size);
  memcpy(in, data + 1, size - 1);
  in[size - 1] = '\0';
  switch (data[0] % 3) {
  case 0:
    uri(in);
    break;
  case 1:
    record(in);
    break;
  default:
    held(in);
    break;
  }
  free(in);
  return 0;
}
