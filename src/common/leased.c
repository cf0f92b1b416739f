/*
 * leased.c -- a generator bound to a lease from a registry (leased.h).
 */
#include <stdio.h>
#include <string.h>

#include "leased.h"

int leased_acquire(leased_t *x, const leased_opts_t *o, const idgen_layout_t *l,
                   const idgen_snowflake_settings_t *s, char *err, size_t errlen) {
  x->lease = NULL;
  x->gen = NULL;
  int rc = 0;
  if (x->reg == NULL && (rc = idgen_registry_open(&x->reg, o->registry, err, errlen)) < 0)
    return rc;
  idgen_bind_request_t req = {.layout = l,
                              .settings = s,
                              .field = o->lease_field,
                              .ttl_ms = o->ttl_ms,
                              .max_start_wait_ms = o->max_start_wait_ms};
  return idgen_registry_bind(x->reg, &req, &x->lease, &x->gen, err, errlen);
}

void leased_release(leased_t *x) {
  idgen_snowflake_gen_free(x->gen);
  idgen_lease_release(x->lease);
  x->gen = NULL;
  x->lease = NULL;
}

void leased_close(leased_t *x) {
  leased_release(x);
  idgen_registry_close(x->reg);
  x->reg = NULL;
}

const char *leased_uri_display(const char *uri, char *buf, size_t n) {
  return idgen_registry_uri_redact(uri, buf, n);
}
