/*
 * testutil.h -- helpers shared by the unit tests: cmocka includes, the
 * known-answer vectors file, an injectable clock, and test sizes.
 */
#ifndef IDGEN_TESTUTIL_H
#define IDGEN_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* cmocka needs the four headers above first. */
#include <cmocka.h>
#include <jansson.h>
#include <stdatomic.h>

#include "idgen.h"

/* The parsed vectors.json ($IDGEN_VECTORS); fails the test if unreadable. */
json_t *tu_vectors(void);

/* A test clock: Unix ns that tests move by hand; sleeping moves it forward
 * and is counted, so "the call waited N ms" is checked without waiting. */
typedef struct tu_clock {
  _Atomic int64_t ns;
  _Atomic int64_t slept_ns;
  _Atomic int64_t sleeps;
  idgen_clock_t clock;
} tu_clock_t;

void tu_clock_init(tu_clock_t *c, int64_t unix_ms);
void tu_clock_set_ms(tu_clock_t *c, int64_t unix_ms);
void tu_clock_add_ms(tu_clock_t *c, int64_t ms);
int64_t tu_clock_ms(tu_clock_t *c);

/* A generator on layout `spec` with the given settings (NULL: defaults). */
idgen_snowflake_t *tu_gen(const char *spec, const idgen_snowflake_settings_t *s);

/* n divided by $IDGEN_TEST_SCALE (default 1), at least 1000. */
size_t tu_scaled(size_t n);

#define tu_ok(expr) assert_int_equal(0, (expr))

#endif
