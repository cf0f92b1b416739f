/*
 * idgen_json.c -- idgen_decode()'s JSON, apart from PostgreSQL's headers
 * (jansson and PostgreSQL both declare json_object()).
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
  json_t *j = decoded_json(&d);
  char *txt = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(j);
  if (txt == NULL)
    snprintf(err, errlen, "out of memory");
  return txt;
}
