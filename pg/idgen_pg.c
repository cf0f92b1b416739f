/*
 * idgen_pg.c -- the PostgreSQL extension (CREATE EXTENSION idgen): libidgen's
 * 128-bit generators and codecs, and the Snowflake decoders, as SQL functions.
 *
 *   idgen_uuid7() uuid, idgen_ulid() text     monotonic within a backend
 *   idgen_ulid_to_uuid(text) uuid, idgen_uuid_to_ulid(uuid) text
 *   idgen_decode(bigint) jsonb                 the fields of `idgen decode --json`
 *   idgen_time(bigint) timestamptz             an ID's time
 *   idgen_first_id(timestamptz) bigint         the smallest ID of that time's tick
 *
 * The Snowflake functions read IDs in the layout of the setting idgen.layout
 * (a preset name or a spec, checked when it is set: a bad one is refused
 * with the layout parser's message).  Each backend has its own UUIDv7 and
 * ULID generators, made at the first call (after the fork from the
 * postmaster, so no two backends share one); IDs from two backends are
 * distinct by their random bits, and ordered only by their milliseconds.
 * Every error is an ERROR with a SQLSTATE and the library's message: a
 * malformed ULID is 22P02 (invalid_text_representation), a time outside the
 * layout 22008 (datetime_field_overflow), an ID outside it 22003
 * (numeric_value_out_of_range).
 *
 * idgen_snowflake() and idgen_snowflake_n(n), one generator for the whole
 * server in shared memory, are in idgen_snowflake.c.
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "idgen.h"
#include "idgen_json.h"
#include "idgen_pg.h"

PG_MODULE_MAGIC;

/* Unix ms of PostgreSQL's epoch, 2000-01-01. */
#define PG_EPOCH_UNIX_MS INT64CONST(946684800000)

static char *layout_setting;
static idgen_layout_t layout; /* the setting's, parsed by its check hook */

static bool check_layout(char **newval, void **extra, GucSource source) {
  char err[256];
  idgen_layout_t *l = malloc(sizeof *l); /* guc.c free()s it */
  if (l == NULL)
    return false;
  if (idgen_layout_parse(l, *newval, err, sizeof err) < 0) {
    GUC_check_errdetail("%s", err);
    free(l);
    return false;
  }
  *extra = l;
  return true;
}

static void assign_layout(const char *newval, void *extra) {
  (void)newval;
  if (extra != NULL)
    layout = *(const idgen_layout_t *)extra;
}

void _PG_init(void);
void _PG_init(void) {
  DefineCustomStringVariable(
      "idgen.layout",
      "The Snowflake layout idgen_decode, idgen_time and idgen_first_id read IDs in.",
      "A preset name (twitter, discord, sonyflake, baidu, instagram, mastodon, js53) or a "
      "layout spec such as time:41,datacenter:5,worker:5,sequence:12,epoch=1288834974657.",
      &layout_setting, "twitter", PGC_USERSET, 0, check_layout, assign_layout, NULL);
  idgen_pg_snowflake_init();
  idgen_pg_public_init();
  if (process_shared_preload_libraries_in_progress)
    idgen_pg_worker_register(); /* the worker that leases for the backends */
  MarkGUCPrefixReserved("idgen");
}

/* An ERROR for a failed library call without a message of its own. */
static void fail(int rc, const char *what) {
  ereport(ERROR, (errcode(rc == IDGEN_ECLOCK   ? ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
                          : rc == IDGEN_ENOMEM ? ERRCODE_OUT_OF_MEMORY
                                               : ERRCODE_INTERNAL_ERROR),
                  errmsg("idgen: %s: %s", what, idgen_strerror(rc))));
}

/* ---- UUIDv7 and ULID ---------------------------------------------------- */

static idgen_uuid7_gen_t *uuid7_gen;
static idgen_ulid_gen_t *ulid_gen;

PG_FUNCTION_INFO_V1(idgen_pg_uuid7);
Datum idgen_pg_uuid7(PG_FUNCTION_ARGS) {
  idgen_uuid_t u;
  pg_uuid_t *out;
  int rc;
  if (uuid7_gen == NULL) {
    idgen_gen128_settings_t s = {0};
    if ((rc = idgen_uuid7_gen_new(&uuid7_gen, &s)) < 0)
      fail(rc, "UUIDv7 generator");
  }
  if ((rc = idgen_uuid7_gen_next(uuid7_gen, &u)) < 0)
    fail(rc, "UUIDv7");
  out = palloc(sizeof *out);
  memcpy(out->data, u.bytes, UUID_LEN);
  PG_RETURN_UUID_P(out);
}

PG_FUNCTION_INFO_V1(idgen_pg_ulid);
Datum idgen_pg_ulid(PG_FUNCTION_ARGS) {
  idgen_ulid_t u;
  char text[IDGEN_ULID_STRLEN + 1];
  int rc;
  if (ulid_gen == NULL) {
    idgen_gen128_settings_t s = {0};
    if ((rc = idgen_ulid_gen_new(&ulid_gen, &s)) < 0)
      fail(rc, "ULID generator");
  }
  if ((rc = idgen_ulid_gen_next(ulid_gen, &u)) < 0)
    fail(rc, "ULID");
  idgen_ulid_format(&u, text);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(text, IDGEN_ULID_STRLEN));
}

PG_FUNCTION_INFO_V1(idgen_pg_ulid_to_uuid);
Datum idgen_pg_ulid_to_uuid(PG_FUNCTION_ARGS) {
  text *t = PG_GETARG_TEXT_PP(0);
  idgen_ulid_t u;
  idgen_uuid_t id;
  pg_uuid_t *out;
  char err[256];
  if (idgen_ulid_parse(&u, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), IDGEN_ULID_STRICT, err,
                       sizeof err) < 0)
    ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("idgen: %s", err)));
  idgen_ulid_to_uuid(&u, &id);
  out = palloc(sizeof *out);
  memcpy(out->data, id.bytes, UUID_LEN);
  PG_RETURN_UUID_P(out);
}

PG_FUNCTION_INFO_V1(idgen_pg_uuid_to_ulid);
Datum idgen_pg_uuid_to_ulid(PG_FUNCTION_ARGS) {
  pg_uuid_t *in = PG_GETARG_UUID_P(0);
  idgen_uuid_t id;
  idgen_ulid_t u;
  char text[IDGEN_ULID_STRLEN + 1];
  memcpy(id.bytes, in->data, UUID_LEN);
  idgen_ulid_from_uuid(&id, &u);
  idgen_ulid_format(&u, text);
  PG_RETURN_TEXT_P(cstring_to_text_with_len(text, IDGEN_ULID_STRLEN));
}

/* ---- Snowflake IDs in idgen.layout --------------------------------------- */

/* The layout's name in messages: the setting as given. */
static const char *layout_name(void) { return layout_setting ? layout_setting : "?"; }

PG_FUNCTION_INFO_V1(idgen_pg_decode);
Datum idgen_pg_decode(PG_FUNCTION_ARGS) {
  uint64 id = (uint64)PG_GETARG_INT64(0); /* a 64-bit layout's top half reads negative */
  char err[256];
  char *txt = idgen_pg_decode_json(&layout, id, err, sizeof err), *copy;
  if (txt == NULL)
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: %s (idgen.layout is %s)", err, layout_name())));
  copy = pstrdup(txt);
  free(txt);
  PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(copy)));
}

PG_FUNCTION_INFO_V1(idgen_pg_time);
Datum idgen_pg_time(PG_FUNCTION_ARGS) {
  uint64 id = (uint64)PG_GETARG_INT64(0);
  uint64_t values[IDGEN_LAYOUT_MAX_FIELDS];
  int64_t unix_ms;
  TimestampTz ts;
  if (idgen_layout_decompose(&layout, id, values, &unix_ms) < 0)
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: " UINT64_FORMAT " does not fit layout %s's %d bits", id,
                           layout_name(), layout.total_bits)));
  /* a layout of long ticks reaches past PostgreSQL's last timestamp */
  if (unix_ms - PG_EPOCH_UNIX_MS > PG_INT64_MAX / 1000 ||
      !IS_VALID_TIMESTAMP(ts = (TimestampTz)(unix_ms - PG_EPOCH_UNIX_MS) * 1000))
    ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: the time of " UINT64_FORMAT " (Unix ms " INT64_FORMAT
                           ") is past PostgreSQL's last timestamp",
                           id, (int64)unix_ms)));
  PG_RETURN_TIMESTAMPTZ(ts);
}

PG_FUNCTION_INFO_V1(idgen_pg_first_id);
Datum idgen_pg_first_id(PG_FUNCTION_ARGS) {
  TimestampTz ts = PG_GETARG_TIMESTAMPTZ(0);
  uint64_t values[IDGEN_LAYOUT_MAX_FIELDS] = {0}, id;
  char err[256];
  int64 ms;
  if (TIMESTAMP_NOT_FINITE(ts))
    ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: an infinite time has no first ID")));
  /* floor to the millisecond, also before 2000 */
  ms = (ts >= 0 ? ts / 1000 : -((-ts + 999) / 1000)) + PG_EPOCH_UNIX_MS;
  if (idgen_layout_compose(&layout, ms, values, &id, err, sizeof err) < 0)
    ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: %s (idgen.layout is %s)", err, layout_name())));
  if (id > (uint64)PG_INT64_MAX)
    ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                    errmsg("idgen: the first ID of that time, " UINT64_FORMAT
                           ", is above bigint's range (layout %s uses the 64th bit)",
                           id, layout_name())));
  PG_RETURN_INT64((int64)id);
}
