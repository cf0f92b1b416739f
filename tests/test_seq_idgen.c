/*
 * test_seq_idgen.c -- sequence records through idgen:// (registry_idgen.c's
 * seq_load, seq_store, seq_keys), against a real `idgen serve --leases`
 * started by tests/registry/suite_seq_idgen.py, which passes its URIs:
 *
 *   IDGEN_TEST_SEQ_URI        idgen://127.0.0.1:PORT (a daemon on file:)
 *   IDGEN_TEST_SEQ_AUTH_URI   idgen://AGENT:TOKEN@... (a daemon with --auth-file)
 *   IDGEN_TEST_SEQ_NOAUTH_URI that daemon without the token
 *
 * What every backend does with sequence records (load, conditional store,
 * keys, concurrent compare-and-set) is test_registry_contract.c's, which
 * the same suite runs on idgen:// too; here, what idgen:// adds: keys over
 * several pages, the daemon's refusals, its token.
 *
 * Each run works in an ID space of its own (?space=sNNN), so runs never
 * meet.  Without IDGEN_TEST_SEQ_URI only the tests that need no daemon run.
 *
 *   test_seq_idgen [TEST_NAME]   (a glob: one test alone)
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry_int.h"
#include "testutil.h"

#define LEASE_SEQ_TEXT_TEST 32768 /* the daemon's LEASE_SEQ_TEXT_MAX */

static char uri[600], auth_uri[600], noauth_uri[600];
static unsigned run;

/* The URI in an ID space of this run's: ?space=s<run>-<tag>. */
static void in_space(char *out, size_t n, const char *base, const char *tag) {
  snprintf(out, n, "%s%sspace=s%u-%s", base, strchr(base, '?') ? "&" : "?", run, tag);
}

static idgen_registry_t *open_in(const char *base, const char *tag) {
  char u[700];
  in_space(u, sizeof u, base, tag);
  return tu_registry(u);
}

static int skip_without_daemon(void) {
  if (uri[0] == '\0') {
    print_message("IDGEN_TEST_SEQ_URI not set: skipped\n");
    return 1;
  }
  return 0;
}

typedef struct keys {
  char got[16][IDGEN_SEQ_KEY_MAX + IDGEN_SPACE_NAME_MAX];
  int n;
} keys_t;

static int key_cb(void *ctx, const char *space, const char *key) {
  keys_t *k = ctx;
  if (k->n < 16)
    snprintf(k->got[k->n++], sizeof k->got[0], "%s %s", space, key);
  return 0;
}

static int count_cb(void *ctx, const char *space, const char *key) {
  (void)space;
  int *n = ctx;
  char want[16];
  snprintf(want, sizeof want, "k%05d", *n);
  return strcmp(key, want) == 0 ? (++*n, 0) : -1; /* in order, none twice */
}

/* More keys than one answer holds (32 KiB of lines): every one, once, in
 * order, over several pages. */
static void test_keys_pages(void **state) {
  (void)state;
  if (skip_without_daemon())
    return;
  idgen_registry_t *r = open_in(uri, "pages");
  char err[600], key[16];
  enum { N = 2500 }; /* ~20 bytes a line: two pages */
  for (int i = 0; i < N; i++) {
    snprintf(key, sizeof key, "k%05d", i);
    int rc = idgen__seq_io_store(r, key, "1\n", 0, err, sizeof err);
    if (rc != 0)
      fail_msg("store %s: %s", key, err);
  }
  int n = 0;
  int rc = idgen__seq_io_keys(r, count_cb, &n, err, sizeof err);
  if (rc != 0)
    fail_msg("keys: %d after %d: %s", rc, n, err);
  assert_int_equal(n, N);
  idgen_registry_close(r);
}

/* The daemon's refusals, past the registry layer's own checks (the ops
 * called directly): a malformed key, an oversized text; named, as
 * IDGEN_EREGISTRY after idgen://HOST:PORT. */
static void test_refusals(void **state) {
  (void)state;
  if (skip_without_daemon())
    return;
  idgen_registry_t *r = open_in(uri, "bad");
  char err[600], *text;
  uint64_t v;
  int rc = r->ops->seq_load(r, "Orders", &text, &v, err, sizeof err);
  assert_int_equal(rc, IDGEN_EREGISTRY);
  assert_non_null(strstr(err, "registry: idgen://127.0.0.1:"));
  assert_non_null(strstr(err, "member \"key\""));
  assert_int_equal(idgen__seq_io_load(r, "a@b@c", &text, &v, err, sizeof err), IDGEN_EINVAL);
  size_t big = LEASE_SEQ_TEXT_TEST + 1;
  char *huge = malloc(big + 1);
  assert_non_null(huge);
  memset(huge, 'x', big);
  huge[big] = '\0';
  rc = idgen__seq_io_store(r, "big", huge, 0, err, sizeof err);
  assert_int_equal(rc, IDGEN_EREGISTRY);
  assert_non_null(strstr(err, "member \"text\" is too long"));
  /* the largest text the daemon takes, with line feeds, round-trips */
  for (size_t i = 0; i < big - 1; i += 64)
    huge[i] = '\n';
  huge[big - 1] = '\0';
  rc = idgen__seq_io_store(r, "big", huge, 0, err, sizeof err);
  if (rc != 0)
    fail_msg("store of %zu bytes: %s", big - 1, err);
  assert_int_equal(idgen__seq_io_load(r, "big", &text, &v, err, sizeof err), 0);
  assert_string_equal(text, huge);
  free(text);
  free(huge);
  idgen_registry_close(r);
}

/* With --auth-file: served with the token, refused without it; the token
 * is never in a message. */
static void test_auth(void **state) {
  (void)state;
  if (auth_uri[0] == '\0') {
    print_message("IDGEN_TEST_SEQ_AUTH_URI not set: skipped\n");
    return;
  }
  idgen_registry_t *a = open_in(auth_uri, "auth"), *n = open_in(noauth_uri, "auth");
  char err[600], *text;
  uint64_t v;
  assert_int_equal(idgen__seq_io_store(a, "orders", "1\n", 0, err, sizeof err), 0);
  assert_int_equal(idgen__seq_io_load(a, "orders", &text, &v, err, sizeof err), 0);
  assert_string_equal(text, "1\n");
  free(text);
  assert_int_equal(idgen__seq_io_load(n, "orders", &text, &v, err, sizeof err), IDGEN_EREGISTRY);
  assert_non_null(strstr(err, "registry: idgen://127.0.0.1:"));
  assert_int_equal(idgen__seq_io_store(n, "orders", "2\n", v, err, sizeof err), IDGEN_EREGISTRY);
  keys_t k = {0};
  assert_int_equal(idgen__seq_io_keys(n, key_cb, &k, err, sizeof err), IDGEN_EREGISTRY);
  const char *tok = strchr(auth_uri + 8, ':'), *at = strchr(auth_uri, '@');
  assert_non_null(tok);
  assert_non_null(at);
  char token[300];
  snprintf(token, sizeof token, "%.*s", (int)(at - tok - 1), tok + 1);
  assert_null(strstr(err, token));
  idgen_registry_close(a);
  idgen_registry_close(n);
}

/* A static registry keeps no sequences: refused before any backend call. */
static void test_static_refused(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry("static:");
  char err[600], *text;
  uint64_t v;
  assert_int_equal(idgen__seq_io_load(r, "orders", &text, &v, err, sizeof err), IDGEN_EINVAL);
  assert_non_null(strstr(err, "keeps no sequences"));
  assert_int_equal(idgen__seq_io_store(r, "orders", "x", 0, err, sizeof err), IDGEN_EINVAL);
  idgen_registry_close(r);
}

int main(int argc, char **argv) {
  const char *e;
  if ((e = getenv("IDGEN_TEST_SEQ_URI")) != NULL)
    snprintf(uri, sizeof uri, "%s", e);
  if ((e = getenv("IDGEN_TEST_SEQ_AUTH_URI")) != NULL)
    snprintf(auth_uri, sizeof auth_uri, "%s", e);
  if ((e = getenv("IDGEN_TEST_SEQ_NOAUTH_URI")) != NULL)
    snprintf(noauth_uri, sizeof noauth_uri, "%s", e);
  idgen_random_bytes((uint8_t *)&run, sizeof run);
  run %= 1000000;
  if (argc > 1)
    cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_static_refused),
      cmocka_unit_test(test_keys_pages),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_auth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
