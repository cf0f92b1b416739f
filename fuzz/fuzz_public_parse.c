/*
 * fuzz_public_parse.c -- libFuzzer target for the public IDs' text forms,
 * with fixed keys (versions 1 and 2) and four codecs: a twitter-like
 * Snowflake layout with prefix "user", a 41-bit one without, ULIDs with
 * prefix "order" and UUIDv7s without.  The first byte picks the codec, the
 * rest is the text.
 *
 * Properties: never crashes; a rejection is IDGEN_EPARSE or IDGEN_EKEY with
 * a message starting "public ID: " that holds no key; an accepted text
 * gives an ID within the codec's bits (a UUIDv7 for the UUIDv7 codec) whose
 * text form, made again, parses to the same ID, and is the input itself when
 * the text named the newest version.  The bytes after the first also go
 * through the integer forms, both ways, as an ID.
 */
#include <stdlib.h>
#include <string.h>

#include "idgen.h"
#include "public_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static idgen_public_t *codecs[4];
static char key_hex[2][65];

static void setup(void) {
  static const unsigned versions[2] = {1, 2};
  uint8_t keys[2][IDGEN_PUBLIC_KEY_BYTES];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < IDGEN_PUBLIC_KEY_BYTES; j++) {
      keys[i][j] = (uint8_t)(0x5a ^ (j * 7 + i * 131));
      static const char hex[] = "0123456789abcdef";
      key_hex[i][2 * j] = hex[keys[i][j] >> 4];
      key_hex[i][2 * j + 1] = hex[keys[i][j] & 15];
    }
  idgen_public_keys_t *k;
  if (idgen_public_keys_new(&k, versions, (const uint8_t(*)[IDGEN_PUBLIC_KEY_BYTES])keys, 2, NULL,
                            0) != 0)
    abort();
  static const idgen_public_settings_t s[4] = {
      {.kind = IDGEN_PUBLIC_SNOWFLAKE, .bits = 63, .prefix = "user"},
      {.kind = IDGEN_PUBLIC_SNOWFLAKE, .bits = 41},
      {.kind = IDGEN_PUBLIC_ULID, .prefix = "order"},
      {.kind = IDGEN_PUBLIC_UUID7},
  };
  for (int i = 0; i < 4; i++)
    if (idgen_public_new(&codecs[i], k, &s[i], NULL, 0) != 0)
      abort();
  idgen_public_keys_free(k);
}

static void check_message(int rc, const char *err) {
  if (rc != IDGEN_EPARSE && rc != IDGEN_EKEY)
    abort();
  if (strncmp(err, "public ID: ", 11) != 0)
    abort();
  for (int i = 0; i < 2; i++)
    if (strstr(err, key_hex[i]) != NULL)
      abort();
}

static void text64(idgen_public_t *p, unsigned bits, const char *text, size_t len) {
  uint64_t id = 0, again = 0;
  unsigned v = 0;
  char err[256] = "", out[IDGEN_PUBLIC_TEXT_MAX];
  int rc = idgen_public_parse64(p, text, len, &id, &v, err, sizeof err);
  if (rc != 0) {
    check_message(rc, err);
    return;
  }
  if ((bits < 64 && id >> bits != 0) || v < 1 || v > 2)
    abort();
  int n = idgen_public_format64(p, id, out, sizeof out);
  if (n <= 0 || idgen_public_parse64(p, out, (size_t)n, &again, NULL, err, sizeof err) != 0 ||
      again != id)
    abort();
  if (v == 2 && ((size_t)n != len || memcmp(out, text, len) != 0))
    abort();
}

static void text128(idgen_public_t *p, int uuid7, const char *text, size_t len) {
  uint8_t id[16], again[16];
  unsigned v = 0;
  char err[256] = "", out[IDGEN_PUBLIC_TEXT_MAX];
  int rc = idgen_public_parse128(p, text, len, id, &v, err, sizeof err);
  if (rc != 0) {
    check_message(rc, err);
    return;
  }
  if ((uuid7 && ((id[6] >> 4) != 7 || (id[8] & 0xc0) != 0x80)) || v < 1 || v > 2)
    abort();
  int n = idgen_public_format128(p, id, out, sizeof out);
  if (n <= 0 || idgen_public_parse128(p, out, (size_t)n, again, NULL, err, sizeof err) != 0 ||
      memcmp(again, id, 16) != 0)
    abort();
  if (v == 2 && ((size_t)n != len || memcmp(out, text, len) != 0))
    abort();
}

static void integers(const uint8_t *data, size_t size) {
  uint8_t id[16] = {0}, pub[16], back[16];
  memcpy(id, data, size < 16 ? size : 16);
  uint64_t x, y, z;
  memcpy(&x, id, 8);
  x &= ((uint64_t)1 << 41) - 1;
  if (idgen_public_map64(codecs[1], x, &y) != 0 || y >> 41 != 0 ||
      idgen_public_unmap64(codecs[1], y, &z) != 0 || z != x)
    abort();
  if (idgen_public_map128(codecs[2], id, pub) != 0 ||
      idgen_public_unmap128(codecs[2], pub, back) != 0 || memcmp(id, back, 16) != 0)
    abort();
  int rc = idgen_public_map128(codecs[3], id, pub);
  int v7 = (id[6] >> 4) == 7 && (id[8] & 0xc0) == 0x80;
  if (rc != (v7 ? 0 : IDGEN_EPARSE))
    abort();
  if (v7 && (idgen_public_unmap128(codecs[3], pub, back) != 0 || memcmp(id, back, 16) != 0))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (codecs[0] == NULL)
    setup();
  if (size < 1)
    return 0;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  switch (data[0] & 3) {
  case 0:
    text64(codecs[0], 63, text, len);
    break;
  case 1:
    text64(codecs[1], 41, text, len);
    break;
  case 2:
    text128(codecs[2], 0, text, len);
    break;
  default:
    text128(codecs[3], 1, text, len);
    break;
  }
  integers(data + 1, len);
  return 0;
}
