/*
 * registry_pg.c -- the postgres:// registry (SPEC section 8).  Placeholder
 * while the backend is written.
 */
#include "registry_int.h"

static int pg_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  (void)r;
  (void)rest;
  return idgen__err(err, errlen, IDGEN_EINVAL, "registry: postgres:// is not built yet");
}

const idgen__registry_ops_t idgen__registry_postgres = {.scheme = "postgres", .open = pg_open};
