/*
 * decode.h -- reading an ID of any kind back into its parts: shared by
 * `idgen decode` and the daemon's `/decode/ID` and RESP `DECODE`, so that
 * both give the same JSON (DESIGN §4).
 */
#ifndef IDGEN_DECODE_H
#define IDGEN_DECODE_H

#ifndef __wasm__ /* the WebAssembly build writes its JSON itself (js/wasm/glue.c) */
#include <jansson.h>
#endif
#include <stddef.h>

#include "idgen.h"

typedef enum { DECODED_SNOWFLAKE, DECODED_ULID, DECODED_UUID } decoded_kind_t;

typedef struct decoded {
  decoded_kind_t kind;
  char id[48];  /* the canonical text of the input */
  int has_time; /* 0 only for a UUID version without a time */
  int64_t unix_ms;
  char time[IDGEN_TIME_BUFSIZE];
  /* Snowflake */
  const idgen_layout_t *layout; /* the caller's */
  char layout_name[IDGEN_LAYOUT_SPEC_MAX];
  uint64_t values[IDGEN_LAYOUT_MAX_FIELDS];
  /* ULID: the same bits as a UUID */
  char uuid[IDGEN_UUID_STRLEN + 1];
  /* UUID */
  int version;
  const char *variant; /* "rfc9562", "ncs", "microsoft" or "future" */
} decoded_t;

/*
 * Decodes s[0..len), recognising its kind by its form (DESIGN §4);
 * Snowflake IDs are read in layout `l` (which must outlive *d).  `lenient`
 * removes hyphens first and reads ULIDs leniently.  Returns 0, or -1 with a
 * one-line message in err[errlen] that names the input and what is wrong.
 * Thread-safe.
 */
int decode_id(const idgen_layout_t *l, const char *s, size_t len, int lenient, decoded_t *d,
              char *err, size_t errlen);

#ifndef __wasm__
/* The JSON object of `idgen decode --json` (64-bit values as strings), or
 * NULL when out of memory.  The caller owns the reference. */
json_t *decoded_json(const decoded_t *d);
#endif

#endif
