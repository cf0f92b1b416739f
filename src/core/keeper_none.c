/*
 * keeper_none.c -- the library without threads (IDGEN_KEEPER=OFF, and the
 * WebAssembly build): what lease_keeper.c and cached.c provide, refused.
 * A generator cannot be bound to a lease (nothing would renew it), and no
 * cache can be made (nothing would fill it); every other generator works
 * as in the full library.  cmake/sources.cmake builds this file in place of
 * those two.
 */
#include "snowflake_int.h"

int idgen__keeper_start(idgen_snowflake_gen_t *g, idgen_lease_t *lease, char *err, size_t errlen) {
  (void)g;
  (void)lease;
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "leases are not available in this build (no threads to keep them: "
                    "IDGEN_KEEPER=OFF)");
}

/* Never reached: no generator is bound (start refuses). */
int64_t idgen__keeper_wait(idgen_snowflake_gen_t *g, uint64_t want, int64_t max_ns) {
  (void)g;
  (void)want;
  (void)max_ns;
  return IDGEN_ELEASE;
}

void idgen__keeper_stop(idgen_snowflake_gen_t *g) { (void)g; }

/* Never bound: all zero, as for an unbound generator. */
void idgen_snowflake_gen_lease_status(idgen_snowflake_gen_t *g,
                                      idgen_snowflake_lease_status_t *st) {
  (void)g;
  memset(st, 0, sizeof *st);
}

int idgen_cached_gen_new(idgen_cached_gen_t **out, idgen_snowflake_gen_t *g,
                         const idgen_cached_settings_t *s, char *err, size_t errlen) {
  (void)g;
  (void)s;
  *out = NULL;
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "the cached generator is not available in this build (no thread to fill "
                    "it: IDGEN_KEEPER=OFF)");
}

/* The rest take a cache, which cannot exist here. */
void idgen_cached_gen_free(idgen_cached_gen_t *c) { (void)c; }

int idgen_cached_gen_take(idgen_cached_gen_t *c, uint64_t *id) {
  (void)c;
  (void)id;
  return IDGEN_EINVAL;
}

int idgen_cached_gen_take_n(idgen_cached_gen_t *c, uint64_t *ids, size_t n) {
  (void)c;
  (void)ids;
  (void)n;
  return IDGEN_EINVAL;
}

int idgen_cached_gen_take_n_async(idgen_cached_gen_t *c, uint64_t *ids, size_t n,
                                  idgen_snowflake_wait_t *w) {
  (void)c;
  (void)ids;
  (void)n;
  (void)w;
  return IDGEN_EINVAL;
}

int idgen_cached_gen_resume(idgen_cached_gen_t *c, idgen_snowflake_wait_t *w, uint64_t *ids) {
  (void)c;
  (void)w;
  (void)ids;
  return IDGEN_EINVAL;
}

idgen_snowflake_gen_t *idgen_cached_gen_generator(const idgen_cached_gen_t *c) {
  (void)c;
  return NULL;
}

void idgen_cached_gen_stats(idgen_cached_gen_t *c, idgen_cached_stats_t *st) {
  (void)c;
  memset(st, 0, sizeof *st);
}
