/*
 * fuzz_decode.c -- libFuzzer target for decode_id, decode_visit and
 * decode_json (src/common/decode.c): `idgen decode`, the daemon's /decode,
 * and the packages' decode().
 *
 * The first byte picks the layout (twitter, sonyflake, a custom one with a
 * 10 ms tick) and leniency; the rest is the ID's text.  A refusal has a
 * message.  An accepted ID's JSON is one valid object whose keys, nested
 * ones included, are exactly the calls decode_visit makes, in its order;
 * every buffer too small for it gives -1 and writes nothing past its end
 * (each is a heap block of exactly that size, under ASan), and one byte
 * more than the text gives the same text.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* decode_visit's calls, counted and their keys recorded in order. */
typedef struct {
  const char *keys[4 * IDGEN_LAYOUT_MAX_FIELDS + 16];
  int n, depth, bad;
} visits_t;

static void seen(visits_t *v, const char *key) {
  if (v->n < (int)(sizeof v->keys / sizeof v->keys[0]))
    v->keys[v->n++] = key;
  else
    v->bad = 1;
}
static void on_text(void *ctx, const char *key, const char *s) {
  seen(ctx, key);
  if (s == NULL)
    ((visits_t *)ctx)->bad = 1;
}
static void on_number(void *ctx, const char *key, int64_t x) {
  (void)x;
  seen(ctx, key);
}
static void on_object(void *ctx, const char *key) {
  seen(ctx, key);
  if (((visits_t *)ctx)->depth++ != 0)
    ((visits_t *)ctx)->bad = 1; /* one level only: "fields" */
}
static void on_end(void *ctx) {
  if (--((visits_t *)ctx)->depth != 0)
    ((visits_t *)ctx)->bad = 1;
}

/* The JSON object's keys in document order (nested objects' after their
 * own key), checked against the visit. */
static void check_keys(const json_t *o, const visits_t *v, int *i) {
  const char *key;
  json_t *val;
  json_object_foreach((json_t *)o, key, val) {
    if (*i >= v->n || strcmp(key, v->keys[*i]) != 0)
      abort();
    (*i)++;
    if (json_is_object(val))
      check_keys(val, v, i);
    else if (!json_is_string(val) && !json_is_integer(val))
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const specs[] = {"twitter", "sonyflake",
                                      "time:41@10ms,dc:3,machine:7,sequence:12"};
  static idgen_layout_t layouts[3];
  static int init;
  if (!init) {
    for (int i = 0; i < 3; i++)
      if (idgen_layout_parse(&layouts[i], specs[i], NULL, 0) != 0)
        abort();
    init = 1;
  }
  if (size < 1)
    return 0;
  const idgen_layout_t *l = &layouts[data[0] % 3];
  int lenient = (data[0] >> 2) & 1;
  char err[256] = "";
  decoded_t d;
  if (decode_id(l, (const char *)data + 1, size - 1, lenient, &d, err, sizeof err) != 0) {
    if (err[0] == '\0')
      abort();
    return 0;
  }
  static const decode_sink_t sink = {on_text, on_number, on_object, on_end};
  visits_t v = {.n = 0};
  decode_visit(&d, &sink, &v);
  if (v.bad || v.depth != 0)
    abort();

  char text[DECODE_JSON_MAX];
  int n = decode_json(&d, text, sizeof text);
  if (n <= 0 || (size_t)n != strlen(text))
    abort();
  json_error_t je;
  json_t *o = json_loadb(text, (size_t)n, JSON_DECODE_ANY | JSON_PRESERVE_ORDER, &je);
  if (o == NULL || !json_is_object(o))
    abort();
  int i = 0;
  check_keys(o, &v, &i);
  if (i != v.n)
    abort();
  json_decref(o);

  /* Too small by any amount: -1, and nothing written past the end. */
  size_t sizes[] = {0, 1, (size_t)n / 2, (size_t)n - 1, (size_t)n, (size_t)n + 1};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char *small = malloc(sizes[k] ? sizes[k] : 1);
    if (small == NULL)
      abort();
    int m = decode_json(&d, small, sizes[k]);
    if (sizes[k] <= (size_t)n ? m != -1 : m != n || memcmp(small, text, (size_t)n + 1) != 0)
      abort();
    free(small);
  }
  return 0;
}
