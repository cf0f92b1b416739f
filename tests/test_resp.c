/*
 * test_resp.c -- the RESP2 request parser: arrays and inline commands,
 * pipelining, Redis's exact error texts (tests/unit/protocol.tcl in Redis
 * checks the same inputs), limits, and the property that every proper prefix
 * of a valid request asks for more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"
#include "testutil.h"

#define BULK_MAX 65536

static ssize_t parse(const char *s, resp_request_t *r, char *err) {
  return resp_parse(s, strlen(s), BULK_MAX, r, err);
}

static void expect_args(const char *in, ssize_t consumed, const char *joined) {
  resp_request_t r;
  char err[RESP_ERR_MAX] = "", got[256] = "";
  ssize_t rc = parse(in, &r, err);
  if (rc != consumed)
    fail_msg("\"%s\": returned %zd, want %zd (%s)", in, rc, consumed, err);
  for (size_t i = 0; i < r.argc && i < RESP_MAX_ARGV; i++) {
    if (i)
      strcat(got, "|");
    strncat(got, r.argv[i].ptr, r.argv[i].len);
  }
  assert_string_equal(joined, got);
}

static void test_arrays_and_inline(void **state) {
  (void)state;
  expect_args("*1\r\n$4\r\nPING\r\n", 14, "PING");
  expect_args("*2\r\n$2\r\nID\r\n$4\r\n1000\r\n", 22, "ID|1000");
  expect_args("*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$7\r\nbilling\r\n", 42,
              "CLIENT|SETNAME|billing");
  expect_args("*1\r\n$0\r\n\r\n", 10, ""); /* an empty bulk string */
  expect_args("PING\r\n", 6, "PING");      /* redis-benchmark -t ping */
  expect_args("PING\n", 5, "PING");
  expect_args("  ID   5 \r\n", 11, "ID|5");
  expect_args("ECHO \"hello world\"\r\n", 20, "ECHO|hello world");
  expect_args("ECHO 'a b' c\r\n", 14, "ECHO|a b|c");
  expect_args("\r\n", 2, ""); /* an empty query: skipped */
  expect_args("*0\r\n", 4, "");
  expect_args("*-10\r\n", 6, ""); /* Redis skips it, then answers PING */
  /* Binary-safe bulk strings. */
  resp_request_t r;
  char err[RESP_ERR_MAX];
  static const char bin[] = "*1\r\n$3\r\na\0\r\r\n";
  assert_int_equal(sizeof bin - 1, resp_parse(bin, sizeof bin - 1, BULK_MAX, &r, err));
  assert_int_equal(3, r.argv[0].len);
  assert_memory_equal("a\0\r", r.argv[0].ptr, 3);
}

static void test_pipelining(void **state) {
  (void)state;
  const char *in = "*1\r\n$2\r\nID\r\nPING\r\n*2\r\n$4\r\nULID\r\n$1\r\n3\r\n";
  size_t len = strlen(in), off = 0;
  const char *want[] = {"ID", "PING", "ULID"};
  for (int k = 0; k < 3; k++) {
    resp_request_t r;
    char err[RESP_ERR_MAX];
    ssize_t n = resp_parse(in + off, len - off, BULK_MAX, &r, err);
    assert_true(n > 0);
    assert_int_equal(strlen(want[k]), r.argv[0].len);
    assert_memory_equal(want[k], r.argv[0].ptr, r.argv[0].len);
    off += (size_t)n;
  }
  assert_int_equal(len, off);
}

static void test_many_arguments(void **state) {
  (void)state;
  char in[512] = "*20\r\n";
  for (int i = 0; i < 20; i++)
    strcat(in, "$1\r\nx\r\n");
  resp_request_t r;
  char err[RESP_ERR_MAX];
  assert_int_equal(strlen(in), parse(in, &r, err));
  assert_int_equal(20, r.argc); /* all counted, the first RESP_MAX_ARGV kept */
}

static void test_errors(void **state) {
  (void)state;
  static const struct {
    const char *in, *msg;
  } t[] = {
      {"*20000000\r\n", "Protocol error: invalid multibulk length"},
      {"*3000000000\r\n", "Protocol error: invalid multibulk length"},
      {"*x\r\n", "Protocol error: invalid multibulk length"},
      {"*\r\n", "Protocol error: invalid multibulk length"},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n", "Protocol error: expected '$', got 'f'"},
      /* The byte found is quoted printable (Redis sends it raw). */
      {"*1\r\n\xc1", "Protocol error: expected '$', got '\\xC1'"},
      {"*1\r\n\x7f", "Protocol error: expected '$', got '\\x7F'"},
      {"*1\r\n'", "Protocol error: expected '$', got '\\x27'"},
      {"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$1073741824\r\n", "Protocol error: invalid bulk length"}, /* a 1 GiB bulk */
      {"*1\r\n$65537\r\n", "Protocol error: invalid bulk length"},      /* over the cap */
      {"*1\r\n$abc\r\n", "Protocol error: invalid bulk length"},
      {"*1\r\n$2\r\nIDxy", "Protocol error: bulk string not followed by CRLF"},
      {"ECHO \"abc\r\n", "Protocol error: unbalanced quotes in request"},
      {"ECHO \"abc\"def\r\n", "Protocol error: unbalanced quotes in request"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    resp_request_t r;
    char err[RESP_ERR_MAX] = "";
    ssize_t rc = parse(t[i].in, &r, err);
    if (rc != RESP_MALFORMED)
      fail_msg("\"%s\": returned %zd, want RESP_MALFORMED", t[i].in, rc);
    assert_string_equal(t[i].msg, err);
  }
}

static void test_line_limits(void **state) {
  (void)state;
  size_t n = RESP_MAX_LINE + 10;
  char *big = malloc(n + 1);
  resp_request_t r;
  char err[RESP_ERR_MAX];
  memset(big, 'a', n);
  assert_int_equal(RESP_MALFORMED, resp_parse(big, n, BULK_MAX, &r, err));
  assert_string_equal("Protocol error: too big inline request", err);
  big[0] = '*';
  memset(big + 1, '1', n - 1);
  assert_int_equal(RESP_MALFORMED, resp_parse(big, n, BULK_MAX, &r, err));
  assert_string_equal("Protocol error: too big mbulk count string", err);
  memcpy(big, "*1\r\n$", 5);
  memset(big + 5, '1', n - 5);
  assert_int_equal(RESP_MALFORMED, resp_parse(big, n, BULK_MAX, &r, err));
  assert_string_equal("Protocol error: too big bulk count string", err);
  free(big);
}

/* Every proper prefix of a valid request asks for more, and never fails. */
static void test_prefixes_need_more(void **state) {
  (void)state;
  static const char *valid[] = {
      "*1\r\n$4\r\nPING\r\n",
      "*2\r\n$2\r\nID\r\n$4\r\n1000\r\n",
      "PING\r\n",
      "*3\r\n$6\r\nDECODE\r\n$18\r\n910499571847892992\r\n$0\r\n\r\n",
      "ECHO \"a b\"\r\n",
  };
  for (size_t i = 0; i < sizeof valid / sizeof valid[0]; i++) {
    size_t len = strlen(valid[i]);
    for (size_t k = 0; k < len; k++) {
      resp_request_t r;
      char err[RESP_ERR_MAX];
      ssize_t rc = resp_parse(valid[i], k, BULK_MAX, &r, err);
      if (rc != RESP_NEED_MORE)
        fail_msg("\"%s\" cut at %zu: returned %zd", valid[i], k, rc);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arrays_and_inline), cmocka_unit_test(test_pipelining),
      cmocka_unit_test(test_many_arguments),    cmocka_unit_test(test_errors),
      cmocka_unit_test(test_line_limits),       cmocka_unit_test(test_prefixes_need_more),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
