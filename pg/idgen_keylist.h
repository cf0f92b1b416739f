/* idgen_keylist.h -- see idgen_keylist.c. */
#ifndef IDGEN_PG_KEYLIST_H
#define IDGEN_PG_KEYLIST_H

#include <stddef.h>

#define IDGEN_PG_KEYS_MAX 16       /* names in idgen.public_keys */
#define IDGEN_PG_KEY_NAME_MAX 64   /* a name: 63 characters and NUL */
#define IDGEN_PG_KEY_PATH_MAX 1024 /* a file's path, with its NUL (MAXPGPATH) */

typedef struct idgen_pg_keylist {
  int n;
  struct {
    char name[IDGEN_PG_KEY_NAME_MAX];
    char path[IDGEN_PG_KEY_PATH_MAX];
  } key[IDGEN_PG_KEYS_MAX];
} idgen_pg_keylist_t;

/* Reads idgen.public_keys, "NAME=FILE, NAME=FILE" (empty: no keys), into
 * *out; -1 with a message in err naming the entry by its position, never
 * quoting the text. */
int idgen_pg_keylist_parse(const char *s, idgen_pg_keylist_t *out, char *err, size_t errlen);

#endif
