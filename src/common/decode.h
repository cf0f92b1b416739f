/*
 * decode.h -- reading an ID of any kind back into its parts, and its JSON:
 * one object library (idgen_decode) shared by `idgen decode`, the daemon's
 * `/decode/ID` and RESP `DECODE`, the Node.js addon, the WebAssembly build
 * and the PostgreSQL extension, so that all give the same JSON (DESIGN §4).
 * Never allocates.
 */
#ifndef IDGEN_DECODE_H
#define IDGEN_DECODE_H

#include <stddef.h>

#include "idgen.h"

typedef enum { DECODED_SNOWFLAKE, DECODED_ULID, DECODED_UUID } decoded_kind_t;

typedef struct decoded {
  decoded_kind_t kind;
  char id[48];  /* the canonical text of the input */
  int has_time; /* 0 only for a UUID version without a time */
  int64_t unix_ms;
  char time[IDGEN_TIME_TEXT_MAX];
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

/*
 * A layout's geometry as one line of JSON into buf[n], for the JavaScript
 * package's planner and its decoder (which reads Snowflake IDs in JavaScript
 * from these shifts): {"layout": the preset's name or "", "spec",
 * "total_bits", "epoch_ms", "tick_ms", "fields": [{"name", "bits", "shift",
 * "kind": "time"|"node"|"sequence"}, ...] most significant first,
 * "horizon_ms", "ids_per_tick", "sign_bit": "never"|"time"|"node" and, for
 * "time", "sign_bit_ms"}.  Millisecond values past 2^53 lose precision in a
 * JavaScript number; nothing here needs more.  Returns the length, or -1 if
 * n is too small (LAYOUT_INFO_MAX is always enough).
 */
#define LAYOUT_INFO_MAX (1024 + 96 * IDGEN_LAYOUT_MAX_FIELDS)
int layout_info_json(const idgen_layout_t *l, char *buf, size_t n);

/*
 * decode_json's object, key by key in its order, given to a sink instead
 * of written as text: a front end that builds its own objects (the Python
 * package's dict) takes these calls, so that its keys and their shape are
 * decode_json's.  `object` opens a nested object under `key` (a Snowflake
 * ID's "fields"), `end` closes it.  Thread-safe.
 */
typedef struct decode_sink {
  void (*text)(void *ctx, const char *key, const char *v);
  void (*number)(void *ctx, const char *key, int64_t v);
  void (*object)(void *ctx, const char *key);
  void (*end)(void *ctx);
} decode_sink_t;
void decode_visit(const decoded_t *d, const decode_sink_t *sink, void *ctx);

/*
 * The JSON object of `idgen decode --json` as one line of compact text (no
 * newline) into buf[n]: "id", "kind", then by kind "layout", "unix_ms",
 * "time" and "fields" (a Snowflake ID's node and sequence values), "unix_ms",
 * "time" and "uuid" (a ULID), "version", "variant" unless RFC 9562's,
 * "unix_ms" and "time" when it has a time (a UUID).  Returns the length, or
 * -1 if n is too small (DECODE_JSON_MAX is always enough).  Thread-safe.
 */
#define DECODE_JSON_MAX (256 + IDGEN_LAYOUT_SPEC_MAX + 56 * IDGEN_LAYOUT_MAX_FIELDS)
int decode_json(const decoded_t *d, char *buf, size_t n);

/*
 * What `idgen plan` shows of layout l (idgen_layout_plan's numbers, p) as
 * one line of JSON into buf[n], for the JavaScript package's plan(): {"info":
 * layout_info_json's object, "lifetime_ms", "lifetime_years", "horizon_ms",
 * "remaining_ms", "exhausted", "ids_per_tick", "ids_per_s", "node_bits",
 * "nodes", "node_fields": [{"name", "max"}, ...], "cluster_ids_per_s",
 * "rate": null or {"ids_per_s", "ratio", "sustained", "burst_ms" (null:
 * without end, when sustained or past a double), "nodes_needed"}}.
 * Fractional values with 17 significant digits (a double's round trip;
 * null for one that is not finite).  Returns the length, or -1 if n is too
 * small (LAYOUT_PLAN_MAX is always enough: past the info, the keys and
 * numbers take under 530 bytes, and a node field's entry under 70, for at
 * most IDGEN_LAYOUT_MAX_FIELDS - 2 node fields).
 */
#define LAYOUT_PLAN_MAX (LAYOUT_INFO_MAX + 512 + 64 * IDGEN_LAYOUT_MAX_FIELDS)
int layout_plan_json(const idgen_layout_t *l, const idgen_layout_plan_t *p, char *buf, size_t n);

#endif
