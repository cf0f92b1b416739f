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
#include <sys/types.h>

#include "idgen.h"

/* Defined when built with ASan or TSan (GCC says so one way, clang another):
 * some tests fork beside running threads, which the sanitizers' runtimes do
 * not survive (TSan kills such a child; ASan's locks can be copied held). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TU_UNDER_SANITIZER 1
#endif
#endif

/* Defined under TSan alone, which ends a child that starts a thread after
 * a fork beside running threads (a file: acquisition in a forked child). */
#if defined(__SANITIZE_THREAD__)
#define TU_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_UNDER_TSAN 1
#endif
#endif

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
idgen_snowflake_gen_t *tu_gen(const char *spec, const idgen_snowflake_settings_t *s);

/* The layout of `spec` (a preset name or a spec); fails the test on error. */
idgen_layout_t tu_layout(const char *spec);

/* ---- registries ---- */

/* The registry at `uri`, opened; fails the test on error. */
idgen_registry_t *tu_registry(const char *uri);

/* A file: registry in a new directory /tmp/idgen-TAG-XXXXXX, named in
 * dir[n] (n >= 64); fails the test on error. */
idgen_registry_t *tu_tmp_registry(char *dir, size_t n, const char *tag);
/* Closes r and removes dir (made writable first: a test may have taken
 * its permissions): 0, or -1 if it could not be removed. */
int tu_tmp_registry_free(idgen_registry_t *r, const char *dir);

/* Sequence counter `key`'s record as r's backend stores it; fails the
 * test on error (registry_int.h's and seq_int.h's types). */
struct idgen__seq_rec;
void tu_seq_load(idgen_registry_t *r, const char *key, struct idgen__seq_rec *rec);

/* The worker ID a lease holds. */
uint64_t tu_worker(const idgen_lease_t *l);

/* Reads fd until end of file.  A child waits so on its parent: it goes on
 * when the parent closes its end, or dies (a failed assertion leaves no
 * orphan behind to hold the test's output open). */
void tu_hold_until_eof(int fd);

/* Sleeps for real (tests of a registry's own clock). */
void tu_sleep_ms(int64_t ms);
/* CLOCK_MONOTONIC in ns (the C library's). */
int64_t tu_mono_ns(void);

/* Forks n holders.  Each opens the registry at `uri`, acquires with *req
 * and holds its lease until end of file on ctl[0]; with settle_ms >= 0 they
 * first all open, then wait settle_ms more and acquire together.  Fills
 * pids[i] and workers[i] (UINT64_MAX if it failed, the reason on stderr).
 * The caller closes ctl[1] to let them exit, and waits for them. */
void tu_fork_holders(const char *uri, const idgen_lease_request_t *req, int n, int settle_ms,
                     const int ctl[2], pid_t *pids, uint64_t *workers);

/* SIGALRM to `handler` (SA_RESTART) every `us` microseconds of real time;
 * tu_alarm_off() stops the timer and restores the default action. */
void tu_alarm_every_us(void (*handler)(int), long us);
void tu_alarm_off(void);

/* n divided by $IDGEN_TEST_SCALE (default 1), at least 1000. */
size_t tu_scaled(size_t n);

#define tu_ok(expr) assert_int_equal(0, (expr))

#endif
