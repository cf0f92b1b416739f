/*
 * test_ulid.c -- ULID and UUIDv7: known answers from vectors.json, codec
 * round trips and ordering, strict and lenient decoding with their exact
 * messages, the monotonic generators (same millisecond, step back, overflow),
 * fork, and 2 threads x 5 million monotonic IDs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core_int.h"
#include "tables.h"
#include "testutil.h"

static void decode_ok(idgen_ulid_t *u, const char *s, int mode) {
  char err[256] = "";
  if (idgen_ulid_parse(u, s, strlen(s), mode, err, sizeof err) != 0)
    fail_msg("decode \"%s\": %s", s, err);
}

static void hex_bytes(const char *hex, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(hex + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
}

/* Test randomness: copies n bytes from ctx. */
static int fill_copy(void *ctx, void *buf, size_t n) {
  memcpy(buf, ctx, n);
  return 0;
}

static json_t *ulid_vectors(void) { return json_object_get(tu_vectors(), "ulid"); }

static void test_ulid_encode_vectors(void **state) {
  (void)state;
  json_t *arr = json_object_get(ulid_vectors(), "encode"), *v;
  size_t i;
  assert_true(json_array_size(arr) >= 4);
  json_array_foreach(arr, i, v) {
    idgen_ulid_t u, back;
    char text[IDGEN_ULID_STRLEN + 1];
    hex_bytes(json_string_value(json_object_get(v, "bytes_hex")), u.bytes, 16);
    assert_int_equal(json_integer_value(json_object_get(v, "timestamp_ms")), idgen_ulid_time(&u));
    idgen_ulid_format(&u, text);
    assert_string_equal(json_string_value(json_object_get(v, "expected")), text);
    decode_ok(&back, text, IDGEN_ULID_STRICT);
    assert_memory_equal(u.bytes, back.bytes, 16);
    /* idgen_ulid_make with the vector's randomness injected gives the same bytes. */
    uint8_t rnd[10];
    idgen_random_t src = {fill_copy, rnd};
    hex_bytes(json_string_value(json_object_get(v, "randomness_hex")), rnd, 10);
    tu_ok(idgen_ulid_make(&back, json_integer_value(json_object_get(v, "timestamp_ms")), &src));
    assert_memory_equal(u.bytes, back.bytes, 16);
  }
}

static void test_ulid_decode_time_vectors(void **state) {
  (void)state;
  json_t *arr = json_object_get(ulid_vectors(), "decode_time"), *v;
  size_t i;
  json_array_foreach(arr, i, v) {
    idgen_ulid_t u;
    char t[IDGEN_TIME_TEXT_MAX];
    decode_ok(&u, json_string_value(json_object_get(v, "input")), IDGEN_ULID_STRICT);
    assert_int_equal(json_integer_value(json_object_get(v, "expected_ms")), idgen_ulid_time(&u));
    idgen_time_format(idgen_ulid_time(&u), t);
    /* Years past 9999 are written with a '+' (ISO 8601 expanded
     * form); the vectors file writes the plain digits. */
    const char *want = json_string_value(json_object_get(v, "expected_utc"));
    assert_string_equal(want, t[0] == '+' ? t + 1 : t);
    assert_true(t[0] != '+' || idgen_ulid_time(&u) > 253402300799999);
  }
  /* The largest ULID. */
  json_t *max = json_object_get(ulid_vectors(), "max");
  idgen_ulid_t u;
  decode_ok(&u, json_string_value(json_object_get(max, "string")), IDGEN_ULID_STRICT);
  assert_int_equal(json_integer_value(json_object_get(max, "time_ms")), idgen_ulid_time(&u));
  for (int k = 0; k < 16; k++)
    assert_int_equal(0xff, u.bytes[k]);
}

static void test_ulid_spec_example_and_uuid(void **state) {
  (void)state;
  json_t *ex = json_object_get(ulid_vectors(), "spec_example");
  idgen_ulid_t u, back;
  idgen_uuid_t uu;
  char text[IDGEN_UUID_STRLEN + 1];
  decode_ok(&u, json_string_value(json_object_get(ex, "ulid")), IDGEN_ULID_STRICT);
  assert_int_equal(json_integer_value(json_object_get(ex, "time_ms")), idgen_ulid_time(&u));
  idgen_ulid_to_uuid(&u, &uu);
  idgen_uuid_format(&uu, text);
  assert_string_equal(json_string_value(json_object_get(ex, "uuid")), text);
  idgen_uuid_t parsed;
  tu_ok(idgen_uuid_parse(&parsed, text, strlen(text), NULL, 0));
  idgen_ulid_from_uuid(&parsed, &back);
  assert_memory_equal(u.bytes, back.bytes, 16);
}

static void test_ulid_invalid_vectors(void **state) {
  (void)state;
  json_t *arr = json_object_get(ulid_vectors(), "invalid"), *v;
  size_t i;
  assert_true(json_array_size(arr) >= 8);
  json_array_foreach(arr, i, v) {
    idgen_ulid_t u;
    char err[256] = "";
    const char *s = json_string_value(json_object_get(v, "input"));
    int rc = idgen_ulid_parse(&u, s, strlen(s), IDGEN_ULID_STRICT, err, sizeof err);
    if (rc == 0)
      fail_msg("\"%s\" (%s) was accepted", s, json_string_value(json_object_get(v, "reason")));
    assert_true(strncmp(err, "ULID: ", 6) == 0);
  }
}

/* Each strict rejection, with its exact message naming problem and position. */
static void test_ulid_strict_messages(void **state) {
  (void)state;
  static const struct {
    const char *in, *msg;
    int rc;
  } t[] = {
      {"01ARZ3NDEKTSV4RRFFQ69G5FA", "ULID: 25 characters, want 26", IDGEN_EPARSE},
      {"01ARZ3NDEKTSV4RRFFQ69G5FAVV", "ULID: 27 characters, want 26", IDGEN_EPARSE},
      {"", "ULID: 0 characters, want 26", IDGEN_EPARSE},
      {"01ARZ3NDEKISV4RRFFQ69G5FAV",
       "ULID: character 'I' at position 11 is not in the alphabet (lenient decoding reads it as 1)",
       IDGEN_EPARSE},
      {"01ARZ3NDEKTSV4RRFFQ69G5FAl",
       "ULID: character 'l' at position 26 is not in the alphabet (lenient decoding reads it as 1)",
       IDGEN_EPARSE},
      {"0OARZ3NDEKTSV4RRFFQ69G5FAV",
       "ULID: character 'O' at position 2 is not in the alphabet (lenient decoding reads it as 0)",
       IDGEN_EPARSE},
      {"01ARUZ3NDEKTSV4RRFFQ69G5FA",
       "ULID: character 'U' at position 5 is not in the alphabet (U is never valid)", IDGEN_EPARSE},
      {"01ARZ3NDEKTSV4RRFFQ69G5F*V", "ULID: character '*' at position 25 is not in the alphabet",
       IDGEN_EPARSE},
      {"01ARZ3NDEKTSV4RR FQ69G5FAV", "ULID: byte 0x20 at position 17 is not in the alphabet",
       IDGEN_EPARSE},
      {"01ARZ3NDEK-SV4RRFFQ69G5FAV", "ULID: character '-' at position 11 is not in the alphabet",
       IDGEN_EPARSE},
      {"01ARZ3NDEK'SV4RRFFQ69G5FAV",
       "ULID: character '\\x27' at position 11 is not in the alphabet", IDGEN_EPARSE},
      {"8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
       "ULID: first character '8' at position 1 overflows 128 bits (at most 7)", IDGEN_ERANGE},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    idgen_ulid_t u;
    char err[256] = "";
    assert_int_equal(t[i].rc, idgen_ulid_parse(&u, t[i].in, strlen(t[i].in), IDGEN_ULID_STRICT, err,
                                               sizeof err));
    assert_string_equal(t[i].msg, err);
  }
  /* A NUL byte inside the given length is a bad character, not the end. */
  idgen_ulid_t u;
  char err[256];
  assert_int_equal(IDGEN_EPARSE, idgen_ulid_parse(&u, "01ARZ3NDEKTSV4RR\0FQ69G5FAV", 26,
                                                  IDGEN_ULID_STRICT, err, sizeof err));
  assert_string_equal("ULID: byte 0x00 at position 17 is not in the alphabet", err);
}

static void test_ulid_lenient(void **state) {
  (void)state;
  idgen_ulid_t a, b;
  char text[IDGEN_ULID_STRLEN + 1], err[256] = "";
  decode_ok(&a, "01ARZ3NDEKTSV4RRFFQ69G5FA1", IDGEN_ULID_STRICT);
  decode_ok(&b, "0lARZ3NDEK-TSV4RR-FFQ69G5FAi", IDGEN_ULID_LENIENT);
  assert_memory_equal(a.bytes, b.bytes, 16);
  decode_ok(&b, "01arz3ndektsv4rrffq69g5fa1", IDGEN_ULID_STRICT); /* case-insensitive */
  assert_memory_equal(a.bytes, b.bytes, 16);
  decode_ok(&b, "O1ARZ3NDEKTSV4RRFFQ69G5FA1", IDGEN_ULID_LENIENT);
  assert_memory_equal(a.bytes, b.bytes, 16);
  idgen_ulid_format(&b, text);
  assert_string_equal("01ARZ3NDEKTSV4RRFFQ69G5FA1", text);
  /* Still rejected: U, overflow, wrong length after removing hyphens. */
  assert_int_equal(IDGEN_EPARSE, idgen_ulid_parse(&b, "01ARZ3NDEK-TSV4RRFFQ69G5FAU", 27,
                                                  IDGEN_ULID_LENIENT, err, sizeof err));
  assert_string_equal(
      "ULID: character 'U' at position 27 is not in the alphabet (U is never valid)", err);
  assert_int_equal(IDGEN_ERANGE, idgen_ulid_parse(&b, "-8ZZZZZZZZZZZZZZZZZZZZZZZZZ", 27,
                                                  IDGEN_ULID_LENIENT, err, sizeof err));
  assert_string_equal("ULID: first character '8' at position 2 overflows 128 bits (at most 7)",
                      err);
  assert_int_equal(IDGEN_EPARSE, idgen_ulid_parse(&b, "01ARZ3NDEK-TSV4RRFFQ69G5FA", 26,
                                                  IDGEN_ULID_LENIENT, err, sizeof err));
  assert_string_equal("ULID: 25 characters without hyphens, want 26", err);
}

static int cmp_sign(int x) { return (x > 0) - (x < 0); }

/* Encode/decode round trip and order preservation on random 128-bit values. */
static void test_ulid_roundtrip_and_order(void **state) {
  (void)state;
  idgen_ulid_t prev;
  char prev_text[IDGEN_ULID_STRLEN + 1];
  memset(&prev, 0, sizeof prev);
  idgen_ulid_format(&prev, prev_text);
  for (int i = 0; i < 200000; i++) {
    idgen_ulid_t u, back;
    char text[IDGEN_ULID_STRLEN + 1];
    tu_ok(idgen_random_bytes(u.bytes, 16));
    if (i % 4 == 0) /* share long prefixes now and then, to test deep comparisons */
      memcpy(u.bytes, prev.bytes, (size_t)(i / 4) % 16);
    idgen_ulid_format(&u, text);
    assert_int_equal(IDGEN_ULID_STRLEN, strlen(text));
    decode_ok(&back, text, IDGEN_ULID_STRICT);
    assert_memory_equal(u.bytes, back.bytes, 16);
    assert_int_equal(cmp_sign(memcmp(prev.bytes, u.bytes, 16)), cmp_sign(strcmp(prev_text, text)));
    prev = u;
    memcpy(prev_text, text, sizeof text);
  }
}

/* Test randomness: a byte pattern, so overflow can be provoked. */
static int fill_pattern(void *ctx, void *buf, size_t n) {
  memset(buf, *(const int *)ctx, n);
  return 0;
}

static void test_ulid_monotonic(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1469918176385);
  int pattern = 0x00;
  idgen_random_t rnd = {fill_pattern, &pattern};
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, &rnd};
  idgen_ulid_gen_t *g;
  idgen_ulid_t u, prev;
  char text[IDGEN_ULID_STRLEN + 1];
  tu_ok(idgen_ulid_gen_new(&g, &s));
  tu_ok(idgen_ulid_gen_next(g, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S410000000000000000", text);
  tu_ok(idgen_ulid_gen_next(g, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S410000000000000001", text);
  /* Step back: still the previous plus one, with the previous time. */
  tu_clock_add_ms(&c, -5000);
  tu_ok(idgen_ulid_gen_next(g, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S410000000000000002", text);
  /* A new millisecond: fresh random bits (here all ones), then overflow. */
  pattern = 0xff;
  tu_clock_set_ms(&c, 100000);
  tu_ok(idgen_ulid_gen_next(g, &prev)); /* still behind: prev + 1 */
  tu_clock_set_ms(&c, 1469918176386);
  tu_ok(idgen_ulid_gen_next(g, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S42ZZZZZZZZZZZZZZZZ", text);
  assert_int_equal(IDGEN_EOVERFLOW, idgen_ulid_gen_next(g, &u));
  assert_int_equal(IDGEN_EOVERFLOW, idgen_ulid_gen_next(g, &u)); /* no wrap, no change */
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S42ZZZZZZZZZZZZZZZZ", text); /* out untouched on error */
  tu_clock_add_ms(&c, 1);
  pattern = 0x00;
  tu_ok(idgen_ulid_gen_next(g, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S430000000000000000", text);
  /* The spec's monotonic sequence: a generator given the first value's time
   * and random bits makes exactly the rest within that millisecond. */
  json_t *seq = json_object_get(json_array_get(json_object_get(ulid_vectors(), "monotonic"), 0),
                                "same_ms_sequence");
  idgen_ulid_t first;
  decode_ok(&first, json_string_value(json_array_get(seq, 0)), IDGEN_ULID_STRICT);
  idgen_random_t src = {fill_copy, first.bytes + 6};
  idgen_gen128_settings_t s2 = {IDGEN_CLOCK_FAST, NULL, &src};
  idgen_ulid_gen_t *g2;
  tu_ok(idgen_ulid_gen_new(&g2, &s2));
  for (size_t k = 0; k < json_array_size(seq); k++) {
    tu_ok(idgen_ulid_gen_next_at(g2, idgen_ulid_time(&first), &u));
    idgen_ulid_format(&u, text);
    assert_string_equal(json_string_value(json_array_get(seq, k)), text);
  }
  idgen_ulid_gen_free(g2);
  assert_int_equal(IDGEN_ECLOCK, idgen_ulid_gen_next_at(g, -1, &u));
  assert_int_equal(IDGEN_ECLOCK, idgen_ulid_gen_next_at(g, IDGEN_ULID_MAX_MS + 1, &u));
  assert_int_equal(IDGEN_ERANGE, idgen_ulid_make(&u, IDGEN_ULID_MAX_MS + 1, NULL));
  tu_ok(idgen_ulid_make(&u, IDGEN_ULID_MAX_MS, NULL));
  idgen_ulid_gen_free(g);
}

/* Within a millisecond the 80 random bits count up by one: the low 64 carry
 * into the high 16 (the usual call leaves that step to the full path), each
 * step checked whole, through next() and next_at() alike. */
static void test_ulid_carry(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1469918176385);
  uint8_t bits[10] = {0x12, 0x34, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe};
  idgen_random_t rnd = {fill_copy, bits};
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, &rnd};
  idgen_ulid_gen_t *g;
  idgen_ulid_t u;
  char text[IDGEN_ULID_STRLEN + 1];
  static const char *const want[] = {
      "01ARYZ6S4128TFZZZZZZZZZZZY", /* the draw */
      "01ARYZ6S4128TFZZZZZZZZZZZZ", /* + 1: low 64 bits all ones */
      "01ARYZ6S4128TG000000000000", /* + 1: carried into the high 16 */
      "01ARYZ6S4128TG000000000001",
  };
  tu_ok(idgen_ulid_gen_new(&g, &s));
  for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
    if (k % 2)
      tu_ok(idgen_ulid_gen_next(g, &u));
    else
      tu_ok(idgen_ulid_gen_next_at(g, 1469918176385, &u));
    idgen_ulid_format(&u, text);
    assert_string_equal(want[k], text);
  }
  /* An earlier time through next_at: the same count goes on. */
  tu_ok(idgen_ulid_gen_next_at(g, 1469918176000, &u));
  idgen_ulid_format(&u, text);
  assert_string_equal("01ARYZ6S4128TG000000000002", text);
  idgen_ulid_gen_free(g);
}

static void test_uuid_rfc_example(void **state) {
  (void)state;
  json_t *ex = json_object_get(json_object_get(tu_vectors(), "uuidv7"), "rfc9562_example");
  const char *s = json_string_value(json_object_get(ex, "uuid"));
  idgen_uuid_t u;
  char text[IDGEN_UUID_STRLEN + 1], urn[64];
  tu_ok(idgen_uuid_parse(&u, s, strlen(s), NULL, 0));
  assert_int_equal(7, idgen_uuid_version(&u));
  assert_true(idgen_uuid_is_rfc_variant(&u));
  assert_int_equal(json_integer_value(json_object_get(ex, "unix_ts_ms")), idgen_uuid7_time(&u));
  assert_int_equal(0xcc3, (u.bytes[6] & 0x0f) << 8 | u.bytes[7]);
  idgen_uuid_format(&u, text);
  assert_string_equal("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", text);
  snprintf(urn, sizeof urn, "urn:uuid:%s", s);
  idgen_uuid_t v;
  tu_ok(idgen_uuid_parse(&v, urn, strlen(urn), NULL, 0));
  assert_memory_equal(u.bytes, v.bytes, 16);
  tu_ok(idgen_uuid_parse(&v, "017F22E279B07CC398C4DC0C0C07398F", 32, NULL, 0));
  assert_memory_equal(u.bytes, v.bytes, 16);
}

static void test_uuid_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *in, *msg;
  } t[] = {
      {"017f22e2-79b0-7cc3-98c4-dc0c0c07398",
       "UUID: 35 characters, want 36 (8-4-4-4-12) or 32 hex digits"},
      {"", "UUID: 0 characters, want 36 (8-4-4-4-12) or 32 hex digits"},
      {"017f22e2_79b0-7cc3-98c4-dc0c0c07398f", "UUID: character '_' at position 9 is not '-'"},
      {"017f22e2-79b0-7cc3-98c4-dc0c0c07398g",
       "UUID: character 'g' at position 36 is not a hex digit"},
      {"urn:uuid:017f22e2-79b0-7cc3-98c4-dcxc0c07398f",
       "UUID: character 'x' at position 36 is not a hex digit"},
      {"017f22e2-79b0-7cc3-98c4-dc0c0c07398\xff",
       "UUID: byte 0xff at position 36 is not a hex digit"},
      {"017f22e279b0-7cc398c4dc0c0c07398f",
       "UUID: 33 characters, want 36 (8-4-4-4-12) or 32 hex digits"},
      {"017f22e279b07cc398c4dc0c0c07398-", "UUID: character '-' at position 32 is not a hex digit"},
      {"017f22e279b07cc398c4dc0c0c07398\\",
       "UUID: character '\\x5C' at position 32 is not a hex digit"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    idgen_uuid_t u;
    char err[256] = "";
    assert_int_equal(IDGEN_EPARSE, idgen_uuid_parse(&u, t[i].in, strlen(t[i].in), err, sizeof err));
    assert_string_equal(t[i].msg, err);
  }
}

static void test_uuid_roundtrip(void **state) {
  (void)state;
  for (int i = 0; i < 100000; i++) {
    idgen_uuid_t u, back;
    char text[IDGEN_UUID_STRLEN + 1], upper[IDGEN_UUID_STRLEN + 1];
    tu_ok(idgen_random_bytes(u.bytes, 16));
    idgen_uuid_format(&u, text);
    assert_int_equal(36, strlen(text));
    tu_ok(idgen_uuid_parse(&back, text, 36, NULL, 0));
    assert_memory_equal(u.bytes, back.bytes, 16);
    for (int k = 0; k < 37; k++)
      upper[k] = (char)(text[k] >= 'a' && text[k] <= 'f' ? text[k] - 32 : text[k]);
    tu_ok(idgen_uuid_parse(&back, upper, 36, NULL, 0));
    assert_memory_equal(u.bytes, back.bytes, 16);
  }
}

static void test_uuid7_monotonic(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1645557742000);
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, NULL};
  idgen_uuid7_gen_t *g;
  idgen_uuid_t u, prev;
  tu_ok(idgen_uuid7_gen_new(&g, &s));
  tu_ok(idgen_uuid7_gen_next(g, &prev));
  assert_int_equal(7, idgen_uuid_version(&prev));
  assert_true(idgen_uuid_is_rfc_variant(&prev));
  assert_int_equal(1645557742000, idgen_uuid7_time(&prev));
  /* The counter starts below 2^41: rand_a's top bit is 0. */
  assert_int_equal(0, prev.bytes[6] & 0x08);
  int random_low_differs = 0;
  for (int i = 0; i < 100000; i++) {
    if (i == 50000)
      tu_clock_add_ms(&c, -3000); /* a step back changes nothing */
    tu_ok(idgen_uuid7_gen_next(g, &u));
    assert_true(memcmp(prev.bytes, u.bytes, 16) < 0);
    assert_int_equal(1645557742000, idgen_uuid7_time(&u));
    assert_int_equal(7, idgen_uuid_version(&u));
    assert_true(idgen_uuid_is_rfc_variant(&u));
    random_low_differs += memcmp(prev.bytes + 12, u.bytes + 12, 4) != 0;
    prev = u;
  }
  assert_true(random_low_differs > 99000); /* 32 fresh random bits each time */
  tu_clock_set_ms(&c, 1645557742000 + 10);
  tu_ok(idgen_uuid7_gen_next(g, &u));
  assert_int_equal(1645557742010, idgen_uuid7_time(&u));
  tu_clock_set_ms(&c, -1);
  assert_int_equal(IDGEN_ECLOCK, idgen_uuid7_gen_next(g, &u));
  idgen_uuid7_gen_free(g);
  tu_ok(idgen_uuid7_make(&u));
  assert_int_equal(7, idgen_uuid_version(&u));
  assert_true(idgen_uuid_is_rfc_variant(&u));
  int64_t now = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE);
  assert_true(idgen_uuid7_time(&u) <= now && idgen_uuid7_time(&u) > now - 1000);
}

/* The 42-bit counter used up within one millisecond: the time field moves one
 * millisecond ahead and the counter restarts below 2^41; at the largest
 * time there is nowhere to go and the call fails without wrapping. */
static void test_uuid7_counter_rollover(void **state) {
  (void)state;
  const int64_t T = 1645557742000, MAX_MS = (INT64_C(1) << 48) - 1;
  const uint64_t counter_max = (UINT64_C(1) << 42) - 1;
  tu_clock_t c;
  tu_clock_init(&c, T);
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, NULL};
  idgen_uuid7_gen_t *g;
  idgen_uuid_t a, b;
  tu_ok(idgen_uuid7_gen_new(&g, &s));
  idgen__uuid7_gen_set(g, T, counter_max - 1);
  tu_ok(idgen_uuid7_gen_next(g, &a)); /* the last counter value of T */
  assert_int_equal(T, idgen_uuid7_time(&a));
  assert_int_equal(0xff, a.bytes[7]);
  tu_ok(idgen_uuid7_gen_next(g, &b)); /* rolls over: T + 1, ahead of the clock */
  assert_int_equal(T + 1, idgen_uuid7_time(&b));
  assert_true(memcmp(a.bytes, b.bytes, 16) < 0);
  assert_int_equal(0, b.bytes[6] & 0x08); /* the new counter starts below 2^41 */
  /* The clock (still at T) is behind the state: a step back, so the counter
   * must go on from its maximum at the largest time, and cannot. */
  idgen__uuid7_gen_set(g, MAX_MS, counter_max);
  assert_int_equal(IDGEN_EOVERFLOW, idgen_uuid7_gen_next(g, &b));
  idgen_uuid7_gen_free(g);
}

/* Parent and child after fork: different random bits, different next IDs. */
static void test_fork_fresh_bits(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000); /* frozen: the parent's next is last + 1 */
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, NULL};
  idgen_ulid_gen_t *ug;
  idgen_uuid7_gen_t *vg;
  idgen_ulid_t ulast;
  idgen_uuid_t vlast;
  uint8_t warm[8];
  tu_ok(idgen_ulid_gen_new(&ug, &s));
  tu_ok(idgen_uuid7_gen_new(&vg, &s));
  tu_ok(idgen_ulid_gen_next(ug, &ulast));
  tu_ok(idgen_uuid7_gen_next(vg, &vlast));
  tu_ok(idgen_random_bytes(warm, sizeof warm)); /* the parent's buffer holds unused bytes */

  struct {
    uint8_t rnd[32];
    idgen_ulid_t ulid;
    idgen_uuid_t uuid;
  } mine, child;
  int fd[2];
  assert_int_equal(0, pipe(fd));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int bad = idgen_random_bytes(child.rnd, 32) != 0 || idgen_ulid_gen_next(ug, &child.ulid) != 0 ||
              idgen_uuid7_gen_next(vg, &child.uuid) != 0;
    bad |= write(fd[1], &child, sizeof child) != (ssize_t)sizeof child;
    _exit(bad ? 3 : 0);
  }
  tu_ok(idgen_random_bytes(mine.rnd, 32));
  tu_ok(idgen_ulid_gen_next(ug, &mine.ulid));
  tu_ok(idgen_uuid7_gen_next(vg, &mine.uuid));
  assert_int_equal(sizeof child, read(fd[0], &child, sizeof child));
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(fd[0]);
  close(fd[1]);

  assert_memory_not_equal(mine.rnd, child.rnd, 32);
  assert_memory_not_equal(mine.ulid.bytes, child.ulid.bytes, 16);
  assert_memory_not_equal(mine.uuid.bytes, child.uuid.bytes, 16);
  /* The parent continued from its last value; the child did not. */
  idgen_ulid_t plus1 = ulast;
  int j = 15;
  while (plus1.bytes[j] == 0xff)
    plus1.bytes[j--] = 0;
  plus1.bytes[j]++;
  assert_memory_equal(plus1.bytes, mine.ulid.bytes, 16);
  assert_memory_not_equal(plus1.bytes, child.ulid.bytes, 16);
  idgen_ulid_gen_free(ug);
  idgen_uuid7_gen_free(vg);
}

/* 2 threads x N monotonic IDs from one generator, optionally on a clock that
 * steps back: each thread's IDs increase; no ID is shared. */
struct mt {
  idgen_ulid_gen_t *ug;
  idgen_uuid7_gen_t *vg;
  tu_clock_t *clock; /* thread 0 moves it if set */
  size_t n;
  uint8_t (*out)[16];
  int errors;
};

static void *mt_main(void *p) {
  struct mt *m = p;
  for (size_t i = 0; i < m->n; i++) {
    int rc = m->ug ? idgen_ulid_gen_next(m->ug, (idgen_ulid_t *)m->out[i])
                   : idgen_uuid7_gen_next(m->vg, (idgen_uuid_t *)m->out[i]);
    if (rc != 0)
      m->errors++;
    if (m->clock != NULL && i % 1000 == 999)
      tu_clock_add_ms(m->clock, (i / 1000) % 3 == 0 ? -700 : 300);
  }
  return NULL;
}

static void check_two(int ulid, tu_clock_t *clock) {
  size_t n = tu_scaled(5000000);
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, clock ? &clock->clock : NULL, NULL};
  struct mt m[2];
  pthread_t th[2];
  idgen_ulid_gen_t *ug = NULL;
  idgen_uuid7_gen_t *vg = NULL;
  if (ulid)
    tu_ok(idgen_ulid_gen_new(&ug, &s));
  else
    tu_ok(idgen_uuid7_gen_new(&vg, &s));
  for (int t = 0; t < 2; t++) {
    m[t] = (struct mt){ug, vg, t == 0 ? clock : NULL, n, malloc(n * 16), 0};
    assert_non_null(m[t].out);
    pthread_create(&th[t], NULL, mt_main, &m[t]);
  }
  for (int t = 0; t < 2; t++)
    pthread_join(th[t], NULL);
  for (int t = 0; t < 2; t++) {
    assert_int_equal(0, m[t].errors);
    for (size_t i = 1; i < n; i++)
      if (memcmp(m[t].out[i - 1], m[t].out[i], 16) >= 0)
        fail_msg("thread %d: ID %zu not above the one before", t, i);
  }
  size_t a = 0, b = 0;
  while (a < n && b < n) {
    int d = memcmp(m[0].out[a], m[1].out[b], 16);
    if (d == 0)
      fail_msg("an ID was issued to both threads");
    if (d < 0)
      a++;
    else
      b++;
  }
  free(m[0].out);
  free(m[1].out);
  idgen_ulid_gen_free(ug);
  idgen_uuid7_gen_free(vg);
}

static void test_threads_ulid(void **state) {
  (void)state;
  check_two(1, NULL);
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  check_two(1, &c);
}

static void test_threads_uuid7(void **state) {
  (void)state;
  check_two(0, NULL);
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  check_two(0, &c);
}

/* The committed tables (src/core/tables.h) agree with the alphabets. */
static void test_tables(void **state) {
  (void)state;
  static const char alpha[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ", hexd[] = "0123456789abcdef";
  for (int i = 0; i < 1024; i++) {
    assert_int_equal(alpha[i >> 5], idgen__ulid_pairs[2 * i]);
    assert_int_equal(alpha[i & 31], idgen__ulid_pairs[2 * i + 1]);
  }
  for (int i = 0; i < 256; i++) {
    assert_int_equal(hexd[i >> 4], idgen__hex_pairs[2 * i]);
    assert_int_equal(hexd[i & 15], idgen__hex_pairs[2 * i + 1]);
    const char *a = strchr(alpha, i >= 'a' && i <= 'z' ? i - 32 : i);
    int want = i != 0 && a != NULL ? (int)(a - alpha) : 0xff;
    assert_int_equal(want, idgen__ulid_strict[i]);
    int lw = want;
    if (i == 'I' || i == 'i' || i == 'L' || i == 'l')
      lw = 1;
    if (i == 'O' || i == 'o')
      lw = 0;
    assert_int_equal(lw, idgen__ulid_lenient[i]);
    const char *h = strchr(hexd, i >= 'A' && i <= 'F' ? i + 32 : i);
    assert_int_equal(i != 0 && h != NULL ? (int)(h - hexd) : 0xff, idgen__hex[i]);
  }
}

/* A thread-exit destructor that runs after idgen's own (keys made later run
 * later in glibc) and still asks for random bytes: it must get a fresh
 * buffer, not the one just freed (ASan caught that use after free). */
static pthread_key_t late_key;
static int late_rc = -100;

static void late_destructor(void *p) {
  (void)p;
  idgen_ulid_t u;
  late_rc = idgen_ulid_make(&u, 1, NULL);
}

static void *exiting_thread(void *arg) {
  (void)arg;
  uint8_t b[4];
  idgen_random_bytes(b, sizeof b); /* the thread's buffer exists */
  pthread_setspecific(late_key, (void *)1);
  return NULL;
}

static void test_random_after_thread_exit(void **state) {
  (void)state;
  uint8_t b[4];
  tu_ok(idgen_random_bytes(b, sizeof b)); /* idgen's key exists before ours */
  assert_int_equal(0, pthread_key_create(&late_key, late_destructor));
  pthread_t t;
  assert_int_equal(0, pthread_create(&t, NULL, exiting_thread, NULL));
  pthread_join(t, NULL);
  assert_int_equal(0, late_rc);
  pthread_key_delete(late_key);
}

/* What a child saw, sent back to the parent through a pipe. */
struct child_view {
  uint8_t rnd[16];
  idgen_ulid_t ulid;
  int snowflake_rc;
};

static idgen_ulid_gen_t *fork_ug;
static idgen_snowflake_gen_t *fork_sg;
static int handler_armed;
static struct child_view handler_view;

static void take_view(struct child_view *v) {
  uint64_t id;
  if (idgen_random_bytes(v->rnd, sizeof v->rnd) != 0 || idgen_ulid_gen_next(fork_ug, &v->ulid) != 0)
    memset(v, 0, sizeof *v);
  v->snowflake_rc = idgen_snowflake_gen_next(fork_sg, &id);
}

/* An application's fork handler that uses idgen in the child: it runs in
 * registration order, before any handler idgen might have registered later. */
static void app_child_handler(void) {
  if (handler_armed)
    take_view(&handler_view);
}

/* Forks with `how` (0: fork() with an application handler using idgen in the
 * child; 1: _Fork(), which runs no handlers) and checks that the child gets
 * bytes and a ULID of its own, and that the parent's Snowflake generator
 * refuses in it. */
static void check_child_fresh(int how) {
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000); /* frozen: the parent's next ULID is last + 1 */
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, NULL};
  uint8_t warm[8];
  idgen_ulid_t last;
  tu_ok(idgen_ulid_gen_new(&fork_ug, &s));
  fork_sg = tu_gen("twitter", NULL);
  tu_ok(idgen_ulid_gen_next(fork_ug, &last));
  tu_ok(idgen_random_bytes(warm, sizeof warm));
  int fd[2];
  assert_int_equal(0, pipe(fd));
  handler_armed = how == 0;
  pid_t pid = how == 0 ? fork() : _Fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct child_view v;
    if (how == 0)
      v = handler_view;
    else
      take_view(&v);
    _exit(write(fd[1], &v, sizeof v) == (ssize_t)sizeof v ? 0 : 3);
  }
  handler_armed = 0;
  struct child_view mine, theirs;
  take_view(&mine);
  assert_int_equal(sizeof theirs, read(fd[0], &theirs, sizeof theirs));
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  close(fd[0]);
  close(fd[1]);
  assert_int_equal(0, mine.snowflake_rc);
  assert_int_equal(IDGEN_EFORKED, theirs.snowflake_rc);
  assert_memory_not_equal(mine.rnd, theirs.rnd, sizeof mine.rnd);
  assert_memory_not_equal(mine.ulid.bytes, theirs.ulid.bytes, 16);
  idgen_ulid_gen_free(fork_ug);
  idgen_snowflake_gen_free(fork_sg);
}

static void test_fork_app_handler_first(void **state) {
  (void)state;
  static int registered;
  if (!registered++)
    pthread_atfork(NULL, NULL, app_child_handler);
  check_child_fresh(0);
}

static void test_underscore_fork(void **state) {
  (void)state;
  check_child_fresh(1);
}

/* A random source that fails while *fail is set, counting its calls and
 * filling with a byte pattern otherwise. */
struct flaky {
  int fail, byte, calls;
};
static int fill_flaky(void *ctx, void *buf, size_t n) {
  struct flaky *f = ctx;
  f->calls++;
  if (f->fail)
    return -77;
  memset(buf, f->byte, n);
  return 0;
}

/* fork() and _Fork() while other threads are inside OpenSSL's RAND_bytes
 * (large draws go straight to it): the child's first draw must not wait for
 * a lock a thread of the parent held.  Before the fix about 1 fork in 100
 * hung with four threads drawing small amounts; these draw 64 KiB at a time,
 * so a fork lands inside RAND_bytes most of the time.  A child that hangs
 * is ended by alarm() and fails the test. */
static _Atomic int draw_stop;
static void *draw_main(void *arg) {
  static __thread unsigned char big[1 << 16];
  (void)arg;
  while (!atomic_load(&draw_stop))
    if (idgen_random_bytes(big, sizeof big) != 0)
      return (void *)1;
  return NULL;
}

static void test_fork_beside_draws(void **state) {
  (void)state;
#ifdef TU_UNDER_SANITIZER
  skip(); /* TSan ends a child forked beside threads; ASan's own locks may be copied held */
#endif
  pthread_t th[3];
  idgen_ulid_gen_t *g;
  tu_ok(idgen_ulid_gen_new(&g, NULL));
  atomic_store(&draw_stop, 0);
  for (int t = 0; t < 3; t++)
    assert_int_equal(0, pthread_create(&th[t], NULL, draw_main, NULL));
  int forks = (int)tu_scaled(200), stuck = 0;
  for (int i = 0; i < forks; i++) {
    pid_t pid = i % 2 ? fork() : _Fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      unsigned char b[32];
      idgen_ulid_t u;
      alarm(10);
      _exit(idgen_random_bytes(b, sizeof b) == 0 && idgen_ulid_gen_next(g, &u) == 0 ? 0 : 3);
    }
    int st;
    assert_int_equal(pid, waitpid(pid, &st, 0));
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
      stuck++;
  }
  atomic_store(&draw_stop, 1);
  for (int t = 0; t < 3; t++) {
    void *rc;
    pthread_join(th[t], &rc);
    assert_null(rc);
  }
  idgen_ulid_gen_free(g);
  if (stuck)
    fail_msg("%d of %d children hung or failed drawing random bytes", stuck, forks);
}

/* Random bits are drawn only for a new millisecond; a failed draw is
 * returned as the source's error and changes nothing; within a millisecond
 * no draw is made, so a failing source does not stop the increments. */
static void test_ulid_failing_random(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  struct flaky f = {1, 0x11, 0};
  idgen_random_t rnd = {fill_flaky, &f};
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, &rnd};
  idgen_ulid_gen_t *g;
  idgen_ulid_t u, v;
  tu_ok(idgen_ulid_gen_new(&g, &s));
  assert_int_equal(-77, idgen_ulid_gen_next(g, &u)); /* a new millisecond: the draw fails */
  f.fail = 0;
  tu_ok(idgen_ulid_gen_next(g, &u));
  assert_int_equal(1700000000000, idgen_ulid_time(&u));
  assert_int_equal(0x11, u.bytes[6]);
  assert_int_equal(0x11, u.bytes[15]); /* the fresh bits, not a value left by the failure */
  int calls = f.calls;
  f.fail = 1;
  tu_ok(idgen_ulid_gen_next(g, &v)); /* same millisecond: the last plus one, nothing drawn */
  assert_int_equal(calls, f.calls);
  assert_int_equal(u.bytes[15] + 1, v.bytes[15]);
  assert_memory_equal(u.bytes, v.bytes, 15);
  tu_clock_add_ms(&c, 1);
  assert_int_equal(-77, idgen_ulid_gen_next(g, &v)); /* the next millisecond needs a draw */
  f.fail = 0;
  f.byte = 0x22;
  tu_ok(idgen_ulid_gen_next(g, &v));
  assert_int_equal(1700000000001, idgen_ulid_time(&v));
  assert_int_equal(0x22, v.bytes[15]);

  /* After fork() the child's first call draws inside the lock: a failure
   * there is returned and releases the lock, and the next call has fresh
   * bits, never the parent's last plus one. */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    idgen_ulid_t w;
    f.fail = 1;
    if (idgen_ulid_gen_next(g, &w) != -77)
      _exit(1);
    f.fail = 0;
    f.byte = 0x33;
    if (idgen_ulid_gen_next(g, &w) != 0 || idgen_ulid_time(&w) != 1700000000001 ||
        w.bytes[15] != 0x33 || w.bytes[6] != 0x33)
      _exit(2);
    if (idgen_ulid_gen_next(g, &w) != 0 || w.bytes[15] != 0x34) /* then the increments */
      _exit(3);
    _exit(0);
  }
  int st;
  assert_int_equal(pid, waitpid(pid, &st, 0));
  assert_true(WIFEXITED(st));
  assert_int_equal(0, WEXITSTATUS(st));
  idgen_ulid_gen_free(g);
}

/* A UUIDv7's 42-bit counter: rand_a and rand_b's top 30 bits. */
static uint64_t uuid7_counter(const idgen_uuid_t *u) {
  return (uint64_t)(u->bytes[6] & 0x0f) << 38 | (uint64_t)u->bytes[7] << 30 |
         (uint64_t)(u->bytes[8] & 0x3f) << 24 | (uint64_t)u->bytes[9] << 16 |
         (uint64_t)u->bytes[10] << 8 | u->bytes[11];
}

/* UUIDv7: the counter's seed is drawn for a new millisecond, 32 bits of
 * rand_b on every call; a failed draw changes nothing, so the call after it
 * continues the counter exactly. */
static void test_uuid7_failing_random(void **state) {
  (void)state;
  tu_clock_t c;
  tu_clock_init(&c, 1700000000000);
  struct flaky f = {0, 0x01, 0};
  idgen_random_t rnd = {fill_flaky, &f};
  idgen_gen128_settings_t s = {IDGEN_CLOCK_FAST, &c.clock, &rnd};
  idgen_uuid7_gen_t *g;
  idgen_uuid_t u, v;
  tu_ok(idgen_uuid7_gen_new(&g, &s));
  tu_ok(idgen_uuid7_gen_next(g, &u));
  f.fail = 1;
  assert_int_equal(-77, idgen_uuid7_gen_next(g, &v)); /* the per-call bits fail */
  f.fail = 0;
  tu_ok(idgen_uuid7_gen_next(g, &v));
  /* The counter went up by exactly one. */
  assert_int_equal(uuid7_counter(&u) + 1, uuid7_counter(&v));
  assert_int_equal(idgen_uuid7_time(&u), idgen_uuid7_time(&v));
  tu_clock_add_ms(&c, 1);
  f.fail = 1;
  assert_int_equal(-77, idgen_uuid7_gen_next(g, &v));
  f.fail = 0;
  tu_ok(idgen_uuid7_gen_next(g, &v));
  assert_int_equal(1700000000001, idgen_uuid7_time(&v));
  idgen_uuid7_gen_free(g);
}

/* The SIMD fast paths (AVX2, AVX-512 VBMI: each the CPU has) must agree with
 * the scalar code on every input: ULIDs encoded, valid ULIDs and UUIDs
 * decoded, and the same with one byte changed to any of the 256 values. */
static void test_simd_matches_scalar(void **state) {
  (void)state;
  int top = idgen__simd_available();
  if (top == IDGEN__SIMD_OFF)
    skip();
  uint64_t seed = 0x9e3779b97f4a7c15u;
  int rejected = 0, checked = 0;
  for (int i = 0; i < 300000; i++) {
    idgen_ulid_t u, a;
    idgen_uuid_t v, c;
    char us[IDGEN_ULID_STRLEN + 1], vs[IDGEN_UUID_STRLEN + 1], enc[IDGEN_ULID_STRLEN + 1];
    char scalar[IDGEN_ULID_STRLEN + 1]; /* the scalar encoder's, before the mutations */
    tu_ok(idgen_random_bytes(u.bytes, 16));
    u.bytes[0] &= (uint8_t)(i % 3 ? 0xff : 0x3f);
    memcpy(v.bytes, u.bytes, 16);
    idgen__simd_enable(IDGEN__SIMD_OFF);
    idgen_ulid_format(&u, us);
    idgen_uuid_format(&v, vs);
    memcpy(scalar, us, sizeof scalar);
    seed = seed * 6364136223846793005u + 1442695040888963407u;
    if (i % 2) { /* one byte changed: anything from 0 to 255 */
      us[(seed >> 33) % 26] = (char)(seed >> 8);
      vs[(seed >> 40) % 36] = (char)(seed >> 16);
    }
    if (i % 4 == 3) /* lower case, which both modes accept */
      for (int k = 0; k < 26; k++)
        us[k] = (char)tolower((unsigned char)us[k]);
    int rs[2], rv;
    idgen_ulid_t want[2];
    idgen_uuid_t wantv;
    for (int mode = 0; mode < 2; mode++) {
      memset(&want[mode], 0, sizeof want[mode]);
      rs[mode] = idgen_ulid_parse(&want[mode], us, 26, mode, NULL, 0);
      rejected += rs[mode] != 0;
    }
    memset(&wantv, 0, sizeof wantv);
    rv = idgen_uuid_parse(&wantv, vs, 36, NULL, 0);
    for (int level = IDGEN__SIMD_AVX2; level <= top; level++) {
      idgen__simd_enable(level);
      idgen_ulid_format(&u, enc);
      assert_string_equal(enc, scalar); /* the encoders agree */
      for (int mode = 0; mode < 2; mode++) {
        memset(&a, 0, sizeof a);
        assert_int_equal(idgen_ulid_parse(&a, us, 26, mode, NULL, 0), rs[mode]);
        if (rs[mode] == 0)
          assert_memory_equal(a.bytes, want[mode].bytes, 16);
      }
      memset(&c, 0, sizeof c);
      assert_int_equal(idgen_uuid_parse(&c, vs, 36, NULL, 0), rv);
      if (rv == 0)
        assert_memory_equal(c.bytes, wantv.bytes, 16);
      checked++;
    }
  }
  idgen__simd_enable(IDGEN__SIMD_VBMI);
  assert_int_equal(idgen__simd_available(), top);
  assert_true(rejected > 10000); /* the mutations did reach the error paths */
  assert_true(checked >= 300000);
}

/* Every byte value at every position of a valid ULID and UUID, at each
 * SIMD level against the scalar tables: the AVX2 decoders classify by their
 * own nibble tables and comparisons, so each of the 256 values is tried, and
 * each fast path must accept exactly what the scalar code accepts. */
static void test_simd_every_byte(void **state) {
  (void)state;
  int top = idgen__simd_available();
  if (top == IDGEN__SIMD_OFF)
    skip();
  const char *ulid = "01ARZ3NDEKTSV4RRFFQ69G5FAV", *uuid = "0190d6e4-5f7b-7a3c-8b2e-9f1a2b3c4d5e";
  int accepted = 0;
  for (int pos = 0; pos < 36; pos++) {
    for (int byte = 0; byte < 256; byte++) {
      char us[27], vs[37];
      memcpy(us, ulid, 27);
      memcpy(vs, uuid, 37);
      if (pos < 26)
        us[pos] = (char)byte;
      vs[pos] = (char)byte;
      for (int mode = 0; mode < 2 && pos < 26; mode++) {
        idgen_ulid_t want, got;
        memset(&want, 0, sizeof want);
        idgen__simd_enable(IDGEN__SIMD_OFF);
        int r = idgen_ulid_parse(&want, us, 26, mode, NULL, 0);
        accepted += r == 0;
        for (int level = IDGEN__SIMD_AVX2; level <= top; level++) {
          idgen__simd_enable(level);
          assert_int_equal(idgen__simd_available(), level); /* the cap holds */
          memset(&got, 0, sizeof got);
          assert_int_equal(idgen_ulid_parse(&got, us, 26, mode, NULL, 0), r);
          if (r == 0)
            assert_memory_equal(got.bytes, want.bytes, 16);
          /* The fast path itself takes exactly what the scalar code takes
           * (a hyphen sends lenient decoding elsewhere): a path that
           * refused too much would pass the checks above unseen. */
          if (!(mode == IDGEN_ULID_LENIENT && memchr(us, '-', 26) != NULL)) {
            memset(&got, 0, sizeof got);
            int fast = level == IDGEN__SIMD_AVX2 ? idgen__ulid_decode_avx2(us, mode, got.bytes)
                                                 : idgen__ulid_decode_vbmi(us, mode, got.bytes);
            assert_int_equal(fast == 0, r == 0);
            if (r == 0)
              assert_memory_equal(got.bytes, want.bytes, 16);
          }
        }
      }
      idgen_uuid_t wantv, gotv;
      memset(&wantv, 0, sizeof wantv);
      idgen__simd_enable(IDGEN__SIMD_OFF);
      int r = idgen_uuid_parse(&wantv, vs, 36, NULL, 0);
      accepted += r == 0;
      for (int level = IDGEN__SIMD_AVX2; level <= top; level++) {
        idgen__simd_enable(level);
        memset(&gotv, 0, sizeof gotv);
        assert_int_equal(idgen_uuid_parse(&gotv, vs, 36, NULL, 0), r);
        if (r == 0)
          assert_memory_equal(gotv.bytes, wantv.bytes, 16);
        memset(&gotv, 0, sizeof gotv);
        int fast = level == IDGEN__SIMD_AVX2 ? idgen__uuid_parse36_avx2(vs, gotv.bytes)
                                             : idgen__uuid_parse36_vbmi(vs, gotv.bytes);
        assert_int_equal(fast == 0, r == 0);
        if (r == 0)
          assert_memory_equal(gotv.bytes, wantv.bytes, 16);
      }
    }
  }
  idgen__simd_enable(IDGEN__SIMD_VBMI);
  /* 26 positions x (32 letters and digits in either case where strict takes
   * them, more where lenient does) and 36 x 22 hex digits, about */
  assert_true(accepted > 2500);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables),
      cmocka_unit_test(test_ulid_encode_vectors),
      cmocka_unit_test(test_ulid_decode_time_vectors),
      cmocka_unit_test(test_ulid_spec_example_and_uuid),
      cmocka_unit_test(test_ulid_invalid_vectors),
      cmocka_unit_test(test_ulid_strict_messages),
      cmocka_unit_test(test_ulid_lenient),
      cmocka_unit_test(test_ulid_roundtrip_and_order),
      cmocka_unit_test(test_ulid_monotonic),
      cmocka_unit_test(test_ulid_carry),
      cmocka_unit_test(test_uuid_rfc_example),
      cmocka_unit_test(test_uuid_parse_errors),
      cmocka_unit_test(test_uuid_roundtrip),
      cmocka_unit_test(test_uuid7_monotonic),
      cmocka_unit_test(test_uuid7_counter_rollover),
      cmocka_unit_test(test_fork_fresh_bits),
      cmocka_unit_test(test_fork_app_handler_first),
      cmocka_unit_test(test_underscore_fork),
      cmocka_unit_test(test_fork_beside_draws),
      cmocka_unit_test(test_random_after_thread_exit),
      cmocka_unit_test(test_threads_ulid),
      cmocka_unit_test(test_threads_uuid7),
      cmocka_unit_test(test_simd_matches_scalar),
      cmocka_unit_test(test_simd_every_byte),
      cmocka_unit_test(test_ulid_failing_random),
      cmocka_unit_test(test_uuid7_failing_random),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
