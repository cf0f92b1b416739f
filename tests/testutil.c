/*
 * testutil.c -- see testutil.h.
 */
#include "testutil.h"

#include <stdlib.h>

json_t *tu_vectors(void) {
  static json_t *v;
  if (v == NULL) {
    const char *path = getenv("IDGEN_VECTORS");
    json_error_t e;
    if (path == NULL)
      path = IDGEN_VECTORS_DEFAULT;
    v = json_load_file(path, 0, &e);
    if (v == NULL)
      fail_msg("cannot read %s: %s at line %d", path, e.text, e.line);
  }
  return v;
}

static int64_t fake_now(void *ctx) {
  tu_clock_t *c = ctx;
  return atomic_load(&c->ns);
}

static void fake_sleep(void *ctx, int64_t ns) {
  tu_clock_t *c = ctx;
  atomic_fetch_add(&c->slept_ns, ns);
  atomic_fetch_add(&c->sleeps, 1);
  atomic_fetch_add(&c->ns, ns);
}

void tu_clock_init(tu_clock_t *c, int64_t unix_ms) {
  atomic_init(&c->ns, unix_ms * 1000000);
  atomic_init(&c->slept_ns, 0);
  atomic_init(&c->sleeps, 0);
  c->clock = (idgen_clock_t){fake_now, fake_sleep, c};
}

void tu_clock_set_ms(tu_clock_t *c, int64_t unix_ms) { atomic_store(&c->ns, unix_ms * 1000000); }
void tu_clock_add_ms(tu_clock_t *c, int64_t ms) { atomic_fetch_add(&c->ns, ms * 1000000); }
int64_t tu_clock_ms(tu_clock_t *c) { return atomic_load(&c->ns) / 1000000; }

idgen_snowflake_t *tu_gen(const char *spec, const idgen_snowflake_settings_t *s) {
  idgen_layout_t l;
  char err[256];
  idgen_snowflake_t *g = NULL;
  if (idgen_layout_parse(&l, spec, err, sizeof err) < 0)
    fail_msg("layout %s: %s", spec, err);
  int rc = idgen_snowflake_new(&g, &l, s, err, sizeof err);
  if (rc < 0)
    fail_msg("idgen_snowflake_new: %s (%s)", err, idgen_strerror(rc));
  return g;
}

size_t tu_scaled(size_t n) {
  const char *s = getenv("IDGEN_TEST_SCALE");
  size_t div = s ? (size_t)strtoul(s, NULL, 10) : 1;
  if (div < 1)
    div = 1;
  n /= div;
  return n < 1000 ? 1000 : n;
}
