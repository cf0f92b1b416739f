/*
 * test_thrift.c -- the Thrift frame parser and reply writers of `idgen serve
 * --thrift`, on bytes written out by hand from the binary protocol's rules:
 * a frame is a 4-byte big-endian length; a strict message begins with
 * 0x8001 0x00 TYPE, the name as an i32 length and bytes, the sequence id;
 * the argument struct is fields (type byte, i16 id, value) up to a 0 byte.
 * Also: the old form (the name first), skipped unknown fields, refusals
 * named, every prefix of a call asking for more, and replies byte for byte.
 */
#include <string.h>

#include "testutil.h"
#include "thrift.h"

/* get_id("ab"), seqid 7, strict. */
static const unsigned char GET_ID[] = {
    0x00, 0x00, 0x00, 0x1c,                                  /* frame: 28 bytes */
    0x80, 0x01, 0x00, 0x01,                                  /* version 1, CALL */
    0x00, 0x00, 0x00, 0x06, 'g',  'e',  't',  '_', 'i', 'd', /* name */
    0x00, 0x00, 0x00, 0x07,                                  /* seqid 7 */
    0x0b, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 'a', 'b',      /* 1: string "ab" */
    0x00};                                                   /* stop */

static void test_get_id(void **state) {
  (void)state;
  thrift_call_t t;
  char err[THRIFT_ERR_MAX];
  assert_int_equal(sizeof GET_ID, thrift_parse((const char *)GET_ID, sizeof GET_ID, 4096, &t, err));
  assert_int_equal(THRIFT_CALL, t.type);
  assert_int_equal(THRIFT_M_GET_ID, t.method);
  assert_int_equal(7, t.seqid);
  assert_true(t.has_useragent);
  assert_int_equal(2, t.useragent_len);
  assert_memory_equal("ab", t.useragent, 2);
  for (size_t k = 0; k < sizeof GET_ID; k++) /* every prefix asks for more */
    assert_int_equal(THRIFT_NEED_MORE, thrift_parse((const char *)GET_ID, k, 4096, &t, err));
}

/* The old form: name length, name, type byte, seqid; and an unknown field
 * (a list of two i32) skipped before the user agent. */
static void test_old_form_and_skip(void **state) {
  (void)state;
  static const unsigned char m[] = {
      0x00, 0x00, 0x00, 0x27,                                   /* frame: 39 bytes */
      0x00, 0x00, 0x00, 0x06, 'g',  'e',  't',  '_',  'i', 'd', /* name */
      0x01,                                                     /* CALL */
      0x00, 0x00, 0x00, 0x09,                                   /* seqid 9 */
      0x0f, 0x00, 0x05, 0x08, 0x00, 0x00, 0x00, 0x02,           /* 5: list<i32> of 2 */
      0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,           /*    1, 2 */
      0x0b, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,                 /* 1: string "" */
      0x00};
  thrift_call_t t;
  char err[THRIFT_ERR_MAX];
  assert_int_equal(sizeof m, thrift_parse((const char *)m, sizeof m, 4096, &t, err));
  assert_int_equal(THRIFT_M_GET_ID, t.method);
  assert_int_equal(9, t.seqid);
  assert_true(t.has_useragent);
  assert_int_equal(0, t.useragent_len);
}

static void test_refusals(void **state) {
  (void)state;
  static const struct {
    const char *bytes;
    size_t len;
    const char *msg;
  } cases[] = {
      {"\x00\x00\x10\x01", 4, "frame of 4097 bytes, more than max_request_bytes (4096)"},
      {"\x00\x00\x00\x04\x80\x02\x00\x01", 8, "bad protocol version 0x80020001"},
      {"\x00\x00\x00\x10\x80\x01\x00\x01\x00\x00\x00\x01x\x00\x00\x00\x01\x0b\x00\x01", 20,
       "message shorter than its contents"},
      {"\x00\x00\x00\x0f\x80\x01\x00\x01\x00\x00\x00\x01x\x00\x00\x00\x01\x11\x00", 19,
       "message shorter than its contents"},
      {"\x00\x00\x00\x12\x80\x01\x00\x01\x00\x00\x00\x01x\x00\x00\x00\x01\x11\x00\x01\x00", 22,
       "unknown field type 17"},
      {"\x00\x00\x00\x0f\x80\x01\x00\x01\x00\x00\x00\x01x\x00\x00\x00\x01\x00\xff", 19,
       "1 bytes after the message in its frame"},
      {"\x00\x00\x00\x08\x80\x01\x00\x01\xff\xff\xff\xff", 12, "negative string length"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    thrift_call_t t;
    char err[THRIFT_ERR_MAX] = "";
    ssize_t n = thrift_parse(cases[i].bytes, cases[i].len, 4096, &t, err);
    if (n != THRIFT_MALFORMED || strcmp(err, cases[i].msg) != 0)
      fail_msg("case %zu: %zd \"%s\", want \"%s\"", i, n, err, cases[i].msg);
  }
}

/* Replies, byte for byte. */
static void test_writers(void **state) {
  (void)state;
  char out[128];
  static const unsigned char reply[] = {0x00, 0x00, 0x00, 0x1e, 0x80, 0x01, 0x00, 0x02, 0x00,
                                        0x00, 0x00, 0x06, 'g',  'e',  't',  '_',  'i',  'd',
                                        0x00, 0x00, 0x00, 0x07, 0x0a, 0x00, 0x00, 0x01, 0x02,
                                        0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00};
  size_t n = thrift_write_i64(out, sizeof out, "get_id", 6, 7, 0x0102030405060708);
  assert_int_equal(sizeof reply, n);
  assert_memory_equal(reply, out, n);
  static const unsigned char ex[] = {0x00, 0x00, 0x00, 0x20, 0x80, 0x01, 0x00, 0x03, 0x00,
                                     0x00, 0x00, 0x01, 'x',  0x00, 0x00, 0x00, 0x02, 0x0b,
                                     0x00, 0x01, 0x00, 0x00, 0x00, 0x04, 'o',  'o',  'p',
                                     's',  0x08, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x00};
  n = thrift_write_exception(out, sizeof out, "x", 1, 2, THRIFT_EX_UNKNOWN_METHOD, "oops");
  assert_int_equal(sizeof ex, n);
  assert_memory_equal(ex, out, n);
  assert_int_equal(0, thrift_write_i64(out, sizeof reply - 1, "get_id", 6, 7, 1)); /* no room */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_id),
      cmocka_unit_test(test_old_form_and_skip),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
