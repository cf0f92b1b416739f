/*
 * fuzz_auth.c -- libFuzzer target for the daemon's auth file parser
 * (src/server/auth.c): any text is accepted or refused with a message that
 * names the file, never a crash (the messages' words never include a token:
 * tests/serve/suite_auth.py checks them).  An accepted table finds each of its tokens under its agent, and no entry
 * for a token with one byte changed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096)
    return 0;
  const char *text = (const char *)data;
  char err[600] = "";
  serve_auth_t *a = NULL;
  if (serve_auth_parse("F", text, size, &a, err, sizeof err) < 0) {
    if (a != NULL || strncmp(err, "auth file F", 11) != 0)
      abort();
    return 0;
  }
  if (a == NULL || serve_auth_count(a) < 1)
    abort();
  /* each line's words again: the token is found under its agent */
  for (size_t at = 0; at < size;) {
    const char *line = text + at, *nl = memchr(line, '\n', size - at);
    size_t ll = nl ? (size_t)(nl - line) : size - at, p = 0;
    at += ll + (nl != NULL);
    while (p < ll && (line[p] == ' ' || line[p] == '\t' || line[p] == '\r'))
      p++;
    if (p == ll || line[p] == '#')
      continue;
    size_t a0 = p;
    while (p < ll && line[p] != ' ' && line[p] != '\t' && line[p] != '\r')
      p++;
    size_t alen = p - a0;
    while (p < ll && (line[p] == ' ' || line[p] == '\t' || line[p] == '\r'))
      p++;
    size_t t0 = p;
    while (p < ll && line[p] != ' ' && line[p] != '\t' && line[p] != '\r')
      p++;
    int i = serve_auth_check(a, line + a0, alen, line + t0, p - t0);
    if (i < 0 || strlen(serve_auth_agent(a, i)) != alen ||
        memcmp(serve_auth_agent(a, i), line + a0, alen) != 0 ||
        serve_auth_check(a, NULL, 0, line + t0, p - t0) != i)
      abort();
    char changed[AUTH_TOKEN_MAX];
    memcpy(changed, line + t0, p - t0);
    changed[0] ^= 1;
    if (serve_auth_check(a, line + a0, alen, changed, p - t0) >= 0)
      abort();
  }
  serve_auth_free(a);
  return 0;
}
