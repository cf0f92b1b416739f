/*
 * fuzz_pg_keylist.c -- libFuzzer target for the extension's idgen.public_keys
 * parser (pg/idgen_keylist.c, which includes no PostgreSQL header).
 *
 * Properties checked on every input: the parser never crashes; a rejection
 * comes with a message; an accepted list has 0 to IDGEN_PG_KEYS_MAX entries,
 * each a non-empty name of letters, digits and '_' (no two the same) and a
 * non-empty path without ',' or '=' and without spaces at either end; and
 * the list written back as "NAME=PATH,..." parses to the same list.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen_keylist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const idgen_pg_keylist_t *l) {
  int i, j;
  if (l->n < 0 || l->n > IDGEN_PG_KEYS_MAX)
    abort();
  for (i = 0; i < l->n; i++) {
    const char *n = l->key[i].name, *p = l->key[i].path;
    size_t plen = strlen(p);
    if (n[0] == '\0' ||
        strspn(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(n))
      abort();
    if (plen == 0 || strpbrk(p, ",=") != NULL || p[0] == ' ' || p[plen - 1] == ' ')
      abort();
    for (j = 0; j < i; j++)
      if (strcmp(l->key[j].name, n) == 0)
        abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static idgen_pg_keylist_t l, back;
  static char s[4096], out[IDGEN_PG_KEYS_MAX * (IDGEN_PG_KEY_NAME_MAX + IDGEN_PG_KEY_PATH_MAX + 2)];
  char err[256] = "";
  size_t at = 0;
  int i;
  if (size >= sizeof s || memchr(data, '\0', size) != NULL)
    return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  if (idgen_pg_keylist_parse(s, &l, err, sizeof err) < 0) {
    if (err[0] == '\0')
      abort();
    return 0;
  }
  check(&l);
  out[0] = '\0';
  for (i = 0; i < l.n; i++)
    at += (size_t)snprintf(out + at, sizeof out - at, "%s%s=%s", i ? "," : "", l.key[i].name,
                           l.key[i].path);
  if (idgen_pg_keylist_parse(out, &back, err, sizeof err) < 0 || back.n != l.n)
    abort();
  for (i = 0; i < l.n; i++)
    if (strcmp(back.key[i].name, l.key[i].name) != 0 ||
        strcmp(back.key[i].path, l.key[i].path) != 0)
      abort();
  return 0;
}
