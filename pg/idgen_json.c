/*
 * idgen_json.c -- idgen_decode()'s JSON: `idgen decode --json`'s text, from
 * the command's own writer (decode_json, src/common/decode.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode.h"
#include "idgen_json.h"

char *idgen_pg_decode_json(const idgen_layout_t *l, uint64_t id, char *err, size_t errlen) {
  char digits[24];
  decoded_t d;
  int n = snprintf(digits, sizeof digits, "%" PRIu64, id);
  if (decode_id(l, digits, (size_t)n, 0, &d, err, errlen) < 0)
    return NULL;
  char *txt = malloc(DECODE_JSON_MAX);
  if (txt == NULL)
    snprintf(err, errlen, "out of memory");
  else if (decode_json(&d, txt, DECODE_JSON_MAX) < 0) { /* DECODE_JSON_MAX holds any */
    snprintf(err, errlen, "the decoded JSON does not fit");
    free(txt);
    txt = NULL;
  }
  return txt;
}
