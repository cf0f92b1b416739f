/*
 * test_errors.c -- quoting input for messages (idgen_quote): printable
 * ASCII passes, every other byte (invalid UTF-8, DEL, control bytes, NUL)
 * and the backslash and the caller's quote character become \xHH; a long
 * input is cut at a whole character or escape and marked "...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"
#include "testutil.h"

static const char *q(const char *s, size_t len, int quote) {
  static char buf[256];
  return idgen_quote(buf, sizeof buf, s, len, quote);
}

static void test_quote_escapes(void **state) {
  (void)state;
  static const struct {
    const char *in;
    size_t len;
    int quote;
    const char *want;
  } t[] = {
      {"worker", 6, '"', "worker"},
      {"", 0, '"', ""},
      {"a b~!", 5, 0, "a b~!"},
      {"\xC1\x7F", 2, '"', "\\xC1\\x7F"},
      {"a\0b", 3, '"', "a\\x00b"}, /* the NUL is shown and what follows it survives */
      {"\r\n\t\x1b", 4, 0, "\\x0D\\x0A\\x09\\x1B"},
      {"\xff\x80", 2, 0, "\\xFF\\x80"},
      {"a\\b", 3, 0, "a\\x5Cb"}, /* the escape character itself, always */
      {"say \"hi\"", 8, '"', "say \\x22hi\\x22"},
      {"say \"hi\"", 8, '\'', "say \"hi\""},
      {"it's", 4, '\'', "it\\x27s"},
      {"it's", 4, '"', "it's"},
      {"caf\xC3\xA9", 5, '"', "caf\\xC3\\xA9"}, /* UTF-8 too: the output is ASCII */
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    const char *got = q(t[i].in, t[i].len, t[i].quote);
    if (strcmp(got, t[i].want) != 0)
      fail_msg("case %zu: got \"%s\", want \"%s\"", i, got, t[i].want);
  }
}

static void test_quote_truncates(void **state) {
  (void)state;
  char buf[10];
  /* Fits exactly (9 characters and the NUL): whole, no mark. */
  assert_string_equal("abcdefghi", idgen_quote(buf, sizeof buf, "abcdefghi", 9, 0));
  assert_string_equal("abcdef...", idgen_quote(buf, sizeof buf, "abcdefghij", 10, 0));
  assert_string_equal("abcde\\xFF", idgen_quote(buf, sizeof buf, "abcde\xff", 6, 0));
  /* An escape that would not fit whole is left out, not cut. */
  assert_string_equal("abcdef...", idgen_quote(buf, sizeof buf, "abcdef\xff", 7, 0));
  assert_string_equal("abcde...", idgen_quote(buf, sizeof buf, "abcde\xff\xff", 7, 0));
  assert_string_equal("\\xFF...", idgen_quote(buf, sizeof buf, "\xff\xff\xff", 3, 0));
  char small[4];
  assert_string_equal("abc", idgen_quote(small, sizeof small, "abc", 3, 0));
  assert_string_equal("...", idgen_quote(small, sizeof small, "abcd", 4, 0));
  assert_string_equal("...", idgen_quote(small, sizeof small, "\x01", 1, 0));
  /* The macro's buffer: at most max characters. */
  assert_string_equal("12345...", IDGEN_QUOTE("12345678901234567890", 20, 0, 8));
  assert_string_equal("\\x00", IDGEN_QUOTE("\0", 1, '"', 8));
}

/* Every input, every size: printable ASCII only, within the bound, and
 * either the whole quote or a prefix of it that ends between two units,
 * followed by "...". */
static void test_quote_property(void **state) {
  (void)state;
  unsigned seed = 12345;
  for (int round = 0; round < 3000; round++) {
    unsigned char in[40];
    size_t len = (size_t)(round % 41);
    for (size_t i = 0; i < len; i++) {
      seed = seed * 1103515245u + 12345u;
      unsigned r = seed >> 16;
      in[i] = (unsigned char)(r % 3 == 0 ? r >> 3 : 'a' + r % 26);
    }
    int quote = round % 2 ? '"' : 0;
    char full[200];
    idgen_quote(full, sizeof full, in, len, quote); /* 40 * 4 fits: whole */
    for (size_t n = 4; n < 60; n++) {
      char out[64];
      idgen_quote(out, n, in, len, quote);
      size_t olen = strlen(out);
      assert_true(olen <= n - 1);
      for (size_t i = 0; i < olen; i++)
        assert_true(out[i] >= 0x20 && out[i] <= 0x7e);
      if (strcmp(out, full) == 0)
        continue;
      assert_true(olen >= 3 && strcmp(out + olen - 3, "...") == 0);
      size_t keep = olen - 3;
      assert_memory_equal(full, out, keep);
      /* A unit boundary: not inside "\xHH" (the backslash is always escaped,
       * so a backslash in the full text always starts an escape). */
      for (size_t k = keep >= 3 ? keep - 3 : 0; k < keep; k++)
        assert_false(full[k] == '\\' && k + 4 > keep);
      assert_true(strlen(full) > n - 1);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_quote_escapes),
      cmocka_unit_test(test_quote_truncates),
      cmocka_unit_test(test_quote_property),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
