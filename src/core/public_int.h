/*
 * public_int.h -- what public.c and public_keys.c share about key sets (the
 * public IDs, idgen.h "Public IDs"); the key-file parser from memory is here
 * for its fuzz target.  Not part of the public API.
 */
#ifndef IDGEN_PUBLIC_INT_H
#define IDGEN_PUBLIC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/* Versions held, ascending, each with its key.  Wiped when freed. */
struct idgen_public_keys {
  size_t n;
  unsigned version[IDGEN_PUBLIC_VERSION_MAX];
  uint8_t key[IDGEN_PUBLIC_VERSION_MAX][IDGEN_PUBLIC_KEY_BYTES];
};

/* The largest key file read: 32 versions and room for comments. */
#define IDGEN_PUBLIC_KEYFILE_MAX 65536

/* Parses a key file's text buf[len] (`name` only for messages): the file
 * format of idgen_public_keys_load, its errors but those of the file
 * itself.  Messages name lines, never their text. */
int idgen__public_keys_parse(idgen_public_keys_t **out, const char *buf, size_t len,
                             const char *name, char *err, size_t errlen);

/* "1, 2, 5": the versions held, for messages. */
void idgen__public_versions_text(const idgen_public_keys_t *k, char *buf, size_t buflen);

#endif /* IDGEN_PUBLIC_INT_H */
