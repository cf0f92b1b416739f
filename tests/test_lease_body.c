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

static void test_routes(void **state) {
  (void)state;
  assert_int_equal(LR_ACQUIRE, lease_body_route("/lease", 6));
  assert_int_equal(LR_RENEW, lease_body_route("/lease/renew", 12));
  assert_int_equal(LR_MARK, lease_body_route("/lease/mark", 11));
  assert_int_equal(LR_RELEASE, lease_body_route("/lease/release", 14));
  assert_int_equal(-1, lease_body_route("/lease/", 7));
  assert_int_equal(-1, lease_body_route("/leases", 7));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_acquire),
      cmocka_unit_test(test_identity),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_routes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
