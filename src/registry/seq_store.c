/*
 * seq_store.c -- the registry layer's calls into a backend's sequence
 * records (registry_int.h, ops version 5: seq_load, seq_store, seq_keys),
 * for the callers that move records as they are: the daemon's lease
 * service (serve_leases.c, POST /lease/seq/...), which stores for its
 * idgen:// clients in its own registry, and tests.  A record is opaque text
 * here; seq_record.c reads it.
 */
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

/* 0 when r's backend keeps sequences, else IDGEN_EINVAL naming it. */
static int seq_able(const idgen_registry_t *r, char *err, size_t errlen) {
  if (r == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no registry");
  if (r->ops->seq_load == NULL || r->ops->seq_store == NULL || r->ops->seq_keys == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s: a %s: registry keeps no sequences (use file:, postgres://, "
                      "etcd:// or idgen://)",
                      r->shown ? r->shown : r->ops->scheme, r->ops->scheme);
  return 0;
}

int idgen__seq_key_check(const char *key, char *err, size_t errlen) {
  size_t n = 0;
  const char *k = key ? key : "";
  int ok = k[0] >= 'a' && k[0] <= 'z';
  for (n = 1; ok && k[n] != '\0' && k[n] != '@'; n++)
    ok = (k[n] >= 'a' && k[n] <= 'z') || (k[n] >= '0' && k[n] <= '9') || k[n] == '_' || k[n] == '-';
  ok = ok && n <= 64;
  if (ok && k[n] == '@') {
    size_t p = n + 1, m = 0;
    while (k[p + m] != '\0' &&
           ((k[p + m] >= '0' && k[p + m] <= '9') || (k[p + m] >= 'a' && k[p + m] <= 'z') ||
            (k[p + m] >= 'A' && k[p + m] <= 'Z')))
      m++;
    ok = m >= 1 && m <= 63 && k[p + m] == '\0';
  }
  if (!ok)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "sequence key \"%s\": expected a name of [a-z][a-z0-9_-] (1 to 64 "
                      "characters), then perhaps '@' and 1 to 63 letters or digits",
                      IDGEN_QUOTE(k, strlen(k), '"', 80));
  return 0;
}

int idgen__seq_io_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                       char *err, size_t errlen) {
  *text = NULL;
  *version = 0;
  int rc = seq_able(r, err, errlen);
  if (rc == 0)
    rc = idgen__seq_key_check(key, err, errlen);
  return rc < 0 ? rc : r->ops->seq_load(r, key, text, version, err, errlen);
}

int idgen__seq_io_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                        char *err, size_t errlen) {
  int rc = seq_able(r, err, errlen);
  if (rc == 0)
    rc = idgen__seq_key_check(key, err, errlen);
  if (rc == 0 && text == NULL)
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "registry: a sequence record needs its text");
  return rc < 0 ? rc : r->ops->seq_store(r, key, text, version, err, errlen);
}

int idgen__seq_io_keys(idgen_registry_t *r,
                       int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                       char *err, size_t errlen) {
  int rc = seq_able(r, err, errlen);
  return rc < 0 ? rc : r->ops->seq_keys(r, cb, ctx, err, errlen);
}
