/*
 * idgen_keylist.c -- the setting idgen.public_keys: key names and the key
 * files they stand for, "users=/etc/idgen/users.key, orders=/etc/idgen/orders.key".
 * A name is 1 to 63 letters, digits or '_'; a file is any path without a
 * comma (relative ones are read from the data directory).  No PostgreSQL
 * header here: the fuzz target links this file alone.
 */
#include <stdio.h>
#include <string.h>

#include "idgen_keylist.h"

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The entry s[0..len), the nth (from 1), into out->key[out->n]. */
static int parse_entry(const char *s, size_t len, int nth, idgen_pg_keylist_t *out, char *err,
                       size_t errlen) {
  const char *eq = memchr(s, '=', len);
  size_t nlen, plen, i;
  const char *path;
  if (eq == NULL) {
    snprintf(err, errlen, "entry %d has no '=': give NAME=FILE", nth);
    return -1;
  }
  nlen = (size_t)(eq - s);
  while (nlen > 0 && is_space(s[nlen - 1]))
    nlen--;
  if (nlen == 0 || nlen >= IDGEN_PG_KEY_NAME_MAX) {
    snprintf(err, errlen, "entry %d: a key name is 1 to %d characters", nth,
             IDGEN_PG_KEY_NAME_MAX - 1);
    return -1;
  }
  for (i = 0; i < nlen; i++)
    if (!is_name_char(s[i])) {
      snprintf(err, errlen, "entry %d: a key name is letters, digits and '_' only", nth);
      return -1;
    }
  path = eq + 1;
  plen = (size_t)(s + len - path);
  while (plen > 0 && is_space(*path))
    path++, plen--;
  while (plen > 0 && is_space(path[plen - 1]))
    plen--;
  if (plen == 0 || plen >= IDGEN_PG_KEY_PATH_MAX || memchr(path, '=', plen) != NULL) {
    snprintf(err, errlen, "entry %d: give one file after '=' (at most %d bytes)", nth,
             IDGEN_PG_KEY_PATH_MAX - 1);
    return -1;
  }
  for (i = 0; i < (size_t)out->n; i++)
    if (strlen(out->key[i].name) == nlen && memcmp(out->key[i].name, s, nlen) == 0) {
      snprintf(err, errlen, "entry %d: key name given twice (entries %zu and %d)", nth, i + 1, nth);
      return -1;
    }
  if (out->n == IDGEN_PG_KEYS_MAX) {
    snprintf(err, errlen, "more than %d keys", IDGEN_PG_KEYS_MAX);
    return -1;
  }
  memcpy(out->key[out->n].name, s, nlen);
  out->key[out->n].name[nlen] = '\0';
  memcpy(out->key[out->n].path, path, plen);
  out->key[out->n].path[plen] = '\0';
  out->n++;
  return 0;
}

int idgen_pg_keylist_parse(const char *s, idgen_pg_keylist_t *out, char *err, size_t errlen) {
  int nth = 0;
  out->n = 0;
  if (s == NULL)
    return 0;
  for (;;) {
    const char *comma;
    size_t len;
    while (is_space(*s))
      s++;
    if (*s == '\0' && nth == 0)
      return 0; /* empty: no keys */
    comma = strchr(s, ',');
    len = comma ? (size_t)(comma - s) : strlen(s);
    nth++;
    if (parse_entry(s, len, nth, out, err, errlen) < 0)
      return -1;
    if (comma == NULL)
      return 0;
    s = comma + 1;
  }
}
