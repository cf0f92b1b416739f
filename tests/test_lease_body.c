/*
 * test_lease_body.c -- the lease service's request bodies (src/server/
 * lease_body.c): each route's members, the identity's whole tuple, and a
 * table of refusals, each with the message that names the member.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lease_body.h"
#include "testutil.h"

#define SECRET "00112233445566778899AABBCCDDEEFF"

static lease_body_t b; /* (large: not on the stack) */

static int parse(int route, const char *body, char *err) {
  return lease_body_parse(route, body, strlen(body), &b, err);
}

static void test_acquire(void **state) {
  (void)state;
  char err[LEASE_ERR_MAX];
  int rc = parse(LR_ACQUIRE,
                 "{\"layout\":\"twitter\",\"node\":\"datacenter=1\",\"holder\":\"laptop:1:ab\","
                 "\"secret\":\"" SECRET "\",\"ttl_ms\":600,\"clock_ms\":1796220000000,"
                 "\"space\":\"billing\"}",
                 err);
  if (rc != 0)
    fail_msg("refused: %s", err);
  assert_string_equal("time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657",
                      b.layout_spec);
  assert_string_equal("worker", b.layout.fields[b.field].name);
  assert_int_equal(1, b.node[1]);
  assert_string_equal("laptop:1:ab", b.holder);
  assert_string_equal("00112233445566778899aabbccddeeff", b.secret); /* lower case */
  assert_string_equal("billing", b.space);
  assert_int_equal(600, b.ttl_ms);
  assert_int_equal(1796220000000LL, b.clock_ms);
  assert_int_equal(LB_NODE | LB_SPACE | LB_TTL | LB_CLOCK, b.have);
}

static void test_identity(void **state) {
  (void)state;
  char err[LEASE_ERR_MAX];
  const char *id = "{\"layout\":\"twitter\",\"node\":\"datacenter=1,worker=3\",\"generation\":4,"
                   "\"field\":\"worker\",\"holder\":\"h:1:x\",\"secret\":\"" SECRET "\"";
  char body[600];
  snprintf(body, sizeof body, "%s}", id);
  assert_int_equal(0, parse(LR_RENEW, body, err));
  assert_int_equal(4, b.generation);
  assert_int_equal(3, b.node[2]);
  assert_int_equal(0, parse(LR_RELEASE, body, err));
  assert_int_equal(-1, parse(LR_MARK, body, err));
  assert_string_equal("member \"mark_ms\" is missing (/lease/mark needs it)", err);
  snprintf(body, sizeof body, "%s,\"mark_ms\":1796220005000}", id);
  assert_int_equal(0, parse(LR_MARK, body, err));
  assert_int_equal(1796220005000LL, b.mark_ms);
  assert_int_equal(-1, parse(LR_RENEW, body, err));
  assert_string_equal("unknown member \"mark_ms\" in the body of /lease/renew", err);
}

static void test_refusals(void **state) {
  (void)state;
  static const struct {
    int route;
    const char *body, *want;
  } cases[] = {
      {LR_ACQUIRE, "", "the body is not JSON: '[' or '{' expected near end of file (at byte 0)"},
      {LR_ACQUIRE, "[1]", "the body must be a JSON object"},
      {LR_ACQUIRE, "{\"layout\":\"twitter\",\"x\\u0001\":1}",
       "unknown member \"x\\x01\" in the body of /lease"},
      {LR_ACQUIRE, "{\"layout\":7}", "member \"layout\" must be a string"},
      {LR_ACQUIRE,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET "\",\"ttl_ms\":-1}",
       "member \"ttl_ms\" must not be negative"},
      {LR_ACQUIRE, "{\"layout\":\"twitter\",\"holder\":\"h\"}",
       "member \"secret\" is missing (/lease needs it)"},
      {LR_ACQUIRE, "{\"layout\":\"twitter\",\"holder\":\"a b\",\"secret\":\"" SECRET "\"}",
       "member \"holder\": character 2 is a space or not printable"},
      {LR_ACQUIRE, "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"0011\"}",
       "member \"secret\" must be 32 hex digits"},
      {LR_ACQUIRE,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET "\",\"node\":\"worker=1\"}",
       "member \"node\": the daemon assigns worker: leave it out of node"},
      {LR_ACQUIRE,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET "\",\"field\":\"rack\"}",
       NULL},
      {LR_RENEW,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET
       "\",\"node\":\"worker=1\",\"generation\":1}",
       "member \"node\": the whole tuple is needed, and datacenter is missing"},
      {LR_ACQUIRE,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET "\",\"ttl_ms\":100}",
       "member \"ttl_ms\": lease TTL 100 ms is not from 300 to 3600000"},
      {LR_ACQUIRE,
       "{\"layout\":\"twitter\",\"holder\":\"h\",\"secret\":\"" SECRET "\",\"space\":\"Bad\"}",
       NULL},
      {LR_ACQUIRE, "{\"layout\":\"twitter\",\"layout\":\"twitter\"}", NULL},
  };
  char err[LEASE_ERR_MAX];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int rc = parse(cases[i].route, cases[i].body, err);
    if (rc != -1 || err[0] == '\0')
      fail_msg("case %zu (%s): rc %d, \"%s\"", i, cases[i].body, rc, err);
    if (cases[i].want != NULL && strcmp(cases[i].want, err) != 0)
      fail_msg("case %zu: \"%s\", not \"%s\"", i, err, cases[i].want);
    if (cases[i].want == NULL && strstr(err, "member \"") == NULL && strstr(err, "JSON") == NULL)
      fail_msg("case %zu names no member: \"%s\"", i, err);
  }
  char big[LEASE_BODY_MAX + 2];
  memset(big, ' ', sizeof big);
  assert_int_equal(-1, lease_body_parse(LR_ACQUIRE, big, sizeof big, &b, err));
  assert_string_equal("the body is over 4096 bytes", err);
}

/* The sequence routes: key, text, version, after, every; the lease
 * members are not theirs. */
static void test_seq(void **state) {
  (void)state;
  char err[LEASE_ERR_MAX];
  int rc = parse(LR_SEQ_STORE,
                 "{\"space\":\"billing\",\"key\":\"orders@20261203\",\"version\":7,"
                 "\"text\":\"idgen-seq v1\\nnext=1\\n\"}",
                 err);
  if (rc != 0)
    fail_msg("refused: %s", err);
  assert_string_equal(b.space, "billing");
  assert_string_equal(b.key, "orders@20261203");
  assert_string_equal(b.text, "idgen-seq v1\nnext=1\n");
  assert_int_equal(b.version, 7);
  assert_int_equal(0, parse(LR_SEQ_LOAD, "{\"key\":\"a\"}", err));
  assert_string_equal(b.space, "");
  assert_int_equal(0, parse(LR_SEQ_KEYS, "{}", err));
  assert_int_equal(0, parse(LR_SEQ_KEYS, "{\"every\":1,\"after\":\"default orders\"}", err));
  assert_int_equal(b.every, 1);
  assert_string_equal(b.after, "default orders");
  static const struct {
    int route;
    const char *body, *says;
  } bad[] = {
      {LR_SEQ_LOAD, "{}", "member \"key\" is missing"},
      {LR_SEQ_LOAD, "{\"key\":\"Orders\"}", "member \"key\""},
      {LR_SEQ_LOAD, "{\"key\":\"orders@\"}", "member \"key\""},
      {LR_SEQ_LOAD, "{\"key\":\"orders@2026-12\"}", "member \"key\""},
      {LR_SEQ_LOAD, "{\"key\":\"a\",\"text\":\"x\"}", "unknown member \"text\""},
      {LR_SEQ_LOAD, "{\"key\":\"a\",\"holder\":\"h\"}", "unknown member \"holder\""},
      {LR_SEQ_LOAD, "{\"key\":\"a\",\"space\":\"No\"}", "member \"space\""},
      {LR_SEQ_STORE, "{\"key\":\"a\",\"text\":\"x\"}", "member \"version\" is missing"},
      {LR_SEQ_STORE, "{\"key\":\"a\",\"version\":0}", "member \"text\" is missing"},
      {LR_SEQ_STORE, "{\"key\":\"a\",\"version\":-1,\"text\":\"\"}", "negative"},
      {LR_SEQ_KEYS, "{\"every\":2}", "member \"every\""},
      {LR_SEQ_KEYS, "{\"every\":1,\"space\":\"a\"}", "do not go together"},
      {LR_ACQUIRE, "{\"key\":\"a\"}", "unknown member \"key\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    if (parse(bad[i].route, bad[i].body, err) != -1 || strstr(err, bad[i].says) == NULL)
      fail_msg("%s: \"%s\", expected \"%s\"", bad[i].body, err, bad[i].says);
  }
  /* a text of 16384 bytes, and one more */
  static char big[LEASE_SEQ_TEXT_MAX + 100];
  int n = snprintf(big, sizeof big, "{\"key\":\"a\",\"version\":0,\"text\":\"");
  memset(big + n, 'x', LEASE_SEQ_TEXT_MAX);
  strcpy(big + n + LEASE_SEQ_TEXT_MAX, "\"}");
  assert_int_equal(0, parse(LR_SEQ_STORE, big, err));
  assert_int_equal(strlen(b.text), LEASE_SEQ_TEXT_MAX);
  memset(big + n, 'x', LEASE_SEQ_TEXT_MAX + 1);
  strcpy(big + n + LEASE_SEQ_TEXT_MAX + 1, "\"}");
  assert_int_equal(-1, parse(LR_SEQ_STORE, big, err));
  assert_non_null(strstr(err, "member \"text\" is too long"));
}

static void test_routes(void **state) {
  (void)state;
  assert_int_equal(LR_ACQUIRE, lease_body_route("/lease", 6));
  assert_int_equal(LR_RENEW, lease_body_route("/lease/renew", 12));
  assert_int_equal(LR_MARK, lease_body_route("/lease/mark", 11));
  assert_int_equal(LR_RELEASE, lease_body_route("/lease/release", 14));
  assert_int_equal(LR_SEQ_LOAD, lease_body_route("/lease/seq/load", 15));
  assert_int_equal(LR_SEQ_STORE, lease_body_route("/lease/seq/store", 16));
  assert_int_equal(LR_SEQ_KEYS, lease_body_route("/lease/seq/keys", 15));
  assert_int_equal(LEASE_BODY_MAX, lease_body_max(LR_SEQ_LOAD));
  assert_int_equal(LEASE_SEQ_BODY_MAX, lease_body_max(LR_SEQ_STORE));
  assert_int_equal(-1, lease_body_route("/lease/", 7));
  assert_int_equal(-1, lease_body_route("/leases", 7));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_acquire),  cmocka_unit_test(test_identity),
      cmocka_unit_test(test_refusals), cmocka_unit_test(test_seq),
      cmocka_unit_test(test_routes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
