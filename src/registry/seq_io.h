/*
 * seq_io.h -- sequence records moved as they are, through a registry's
 * backend (seq_store.c): for the daemon's lease service, which stores them
 * for its idgen:// clients (POST /lease/seq/load, /store, /keys), and for
 * tests.  Each call refuses a registry that keeps no sequences (static:
 * IDGEN_EINVAL) and a malformed key, then calls the backend's op
 * (registry_int.h, seq_load, seq_store, seq_keys: their contract).
 */
#ifndef IDGEN_SEQ_IO_H
#define IDGEN_SEQ_IO_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/* 0 if key is a counter's key: a name of [a-z][a-z0-9_-] (1 to 64
 * characters), then perhaps '@' and 1 to 63 letters or digits; else
 * IDGEN_EINVAL naming it. */
int idgen__seq_key_check(const char *key, char *err, size_t errlen);

/* *text (malloc'd; NULL: no record) and *version (0: none). */
int idgen__seq_io_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                       char *err, size_t errlen);
/* Stores text if the record's version is still `version` (0: none yet):
 * 0; IDGEN_EAGAIN when it moved; IDGEN_EREGISTRY. */
int idgen__seq_io_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                        char *err, size_t errlen);
/* cb once per counter key (of r's space, or of every space when r's URI
 * named none); cb's nonzero stops. */
int idgen__seq_io_keys(idgen_registry_t *r,
                       int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                       char *err, size_t errlen);

#endif
