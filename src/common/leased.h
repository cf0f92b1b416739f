/*
 * leased.h -- a Snowflake generator whose leased node field comes from a
 * registry (DESIGN §11): open the registry, acquire a lease, bind a
 * generator to it; and undo all three.  Shared by `idgen snowflake` and the
 * daemon, on idgen_registry_bind (which, with the `static` registry,
 * leases and binds nothing: the generator takes the node values as given).
 */
#ifndef IDGEN_LEASED_H
#define IDGEN_LEASED_H

#include "idgen.h"

typedef struct leased_opts {
  const char *registry;      /* URI */
  const char *lease_field;   /* NULL: the registry's choice */
  int64_t ttl_ms;            /* 0: the registry's default */
  int64_t max_start_wait_ms; /* < 0: the default */
} leased_opts_t;

typedef struct leased {
  idgen_registry_t *reg; /* opened once, kept across leases */
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *gen;
} leased_t;

/* Opens the registry (once: x->reg is kept across leased_acquire calls),
 * acquires a lease for layout `l` with the node values of `s`, and makes a
 * generator with settings `s` bound to it.  0, or an IDGEN_E* code with a
 * message in err (the registry's, or the generator's).  On failure nothing
 * is held except x->reg. */
int leased_acquire(leased_t *x, const leased_opts_t *o, const idgen_layout_t *l,
                   const idgen_snowflake_settings_t *s, char *err, size_t errlen);

/* Frees the generator (its final mark), releases the lease; keeps x->reg. */
void leased_release(leased_t *x);

/* leased_release(), then closes the registry. */
void leased_close(leased_t *x);

/* The registry URI to show (logs, /info, INFO): idgen_registry_uri_redact,
 * every secret masked.  Into buf[n]. */
const char *leased_uri_display(const char *uri, char *buf, size_t n);

#endif
