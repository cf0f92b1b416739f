/*
 * glue.c -- the functions the WebAssembly build exports to js/browser.mjs.
 *
 * Text goes in through two buffers the module writes (in1, in2: UTF-8, NUL
 * terminated) and comes out through `out`; a failure returns a negative
 * IDGEN_E* code with its message in `err` (the message the command prints).
 * The clock and the random bytes come from the host through WASI
 * (clock_time_get, random_get), which browser.mjs answers from
 * Date.now() (the wall clock), performance.now() (the monotonic clock) and
 * crypto.getRandomValues().
 * One thread: nothing here locks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "options.h"
#include "idgen.h"
#include "snowflake_int.h" /* idgen__sf_external_*: the lease kept from JavaScript */

/* The module's exports: called from JavaScript only, so no header declares
 * them. */
#define EXPORT(name) __attribute__((export_name(#name)))
#pragma clang diagnostic ignored "-Wmissing-prototypes"

#define IN_MAX 2048
#define OUT_MAX 4096
#define ERR_MAX 600

static char in1[IN_MAX], in2[IN_MAX], out[OUT_MAX], err[ERR_MAX];

EXPORT(in1) char *wasm_in1(void) { return in1; }
EXPORT(in2) char *wasm_in2(void) { return in2; }
EXPORT(out) char *wasm_out(void) { return out; }
EXPORT(err) char *wasm_err(void) { return err; }
EXPORT(in_max) int wasm_in_max(void) { return IN_MAX; }
EXPORT(err_name) const char *wasm_err_name(int rc) { return idgen_err_name(rc); }
EXPORT(strerror) const char *wasm_strerror(int rc) { return idgen_strerror(rc); }
EXPORT(version) const char *wasm_version(void) { return idgen_version(); }
/* The option names a Snowflake generator takes (src/common/options.c):
 * js/lib/wasm.js refuses any other, with the addon's message. */
EXPORT(option_known) int wasm_option_known(void) { return options_known(in1); }
EXPORT(option_unknown) void wasm_option_unknown(void) {
  options_unknown_message(in1, err, sizeof err);
}
EXPORT(max_borrow_ms_default) int wasm_max_borrow_ms_default(void) {
  return IDGEN_MAX_BORROW_MS_DEFAULT;
}
/* The settings' bounds, the library's: browser.mjs checks an option's type
 * and range by them before it converts the number. */
EXPORT(max_borrow_ms_max) int wasm_max_borrow_ms_max(void) { return IDGEN_MAX_BORROW_MS_MAX; }
EXPORT(max_wait_ms_max) int wasm_max_wait_ms_max(void) { return IDGEN_MAX_WAIT_MS_MAX; }
EXPORT(alloc) void *wasm_alloc(size_t n) { return malloc(n); }
EXPORT(dealloc) void wasm_dealloc(void *p) { free(p); }

static int fail(int rc) {
  if (err[0] == '\0')
    snprintf(err, sizeof err, "%s", idgen_strerror(rc));
  return rc;
}

/* A preset's name (kept, as `idgen decode` shows it) or a layout spec, as
 * the command reads --layout. */
static int parse_layout(const char *text, idgen_layout_t *l) {
  return idgen_layout_parse(l, text, err, sizeof err);
}

/* ---- Snowflake --------------------------------------------------------- */

/* The clock word in1 as the library reads it (idgen_clock_mode_parse): the
 * mode, or a negative code with the message.  (The generators here read
 * Date.now() whatever the mode: the word is checked for the one API.) */
EXPORT(clock_mode_parse) int wasm_clock_mode_parse(void) {
  err[0] = '\0';
  idgen_clock_mode_t mode;
  int rc = idgen_clock_mode_parse(in1, &mode, err, sizeof err);
  return rc < 0 ? fail(rc) : (int)mode;
}

/* A generator for layout in1 with node values in2 ("datacenter=1,worker=2",
 * unchecked: nothing leases them here).  Returns the generator's address, or
 * a negative code. */
EXPORT(sf_new) int wasm_sf_new(int64_t max_borrow_ms, int64_t max_wait_ms, int random_start) {
  err[0] = '\0';
  idgen_layout_t l;
  int rc = parse_layout(in1, &l);
  if (rc < 0)
    return fail(rc);
  idgen_snowflake_settings_t set;
  idgen_snowflake_settings_init(&set);
  if (max_borrow_ms >= 0)
    set.max_borrow_ms = max_borrow_ms;
  if (max_wait_ms >= 0)
    set.max_wait_ms = max_wait_ms;
  set.random_sequence_start = random_start;
  set.clock_mode = IDGEN_CLOCK_PRECISE;
  unsigned given = 0;
  rc = idgen_layout_nodes_parse(&l, in2, NULL, NULL, set.node, &given, err, sizeof err);
  if (rc < 0)
    return fail(rc);
  idgen_snowflake_gen_t *g;
  rc = idgen_snowflake_gen_new(&g, &l, &set, err, sizeof err);
  if (rc < 0)
    return fail(rc);
  return (int)(uintptr_t)g;
}

/* A generator made by sf_new with a leased tuple's node values, kept by
 * browser.mjs (snowflake_int.h, idgen__sf_external_*): it starts above the
 * lease's marks (mark_ms, floor_ms) and issues nothing until sf_keep says
 * which mark is recorded; sf_keep(g, 0) when the lease cannot be shown
 * valid; sf_needed_ms: the mark it needs now. */
EXPORT(sf_lease_start)
int wasm_sf_lease_start(idgen_snowflake_gen_t *g, int64_t mark_ms, int64_t floor_ms) {
  err[0] = '\0';
  int rc = idgen__sf_external_start(g, mark_ms, floor_ms, err, sizeof err);
  return rc < 0 ? fail(rc) : 0;
}
EXPORT(sf_keep) void wasm_sf_keep(idgen_snowflake_gen_t *g, int64_t mark_ms) {
  idgen__sf_external_keep(g, mark_ms);
}
EXPORT(sf_needed_ms) int64_t wasm_sf_needed_ms(idgen_snowflake_gen_t *g) {
  return idgen__sf_external_needed_ms(g);
}

EXPORT(sf_free) void wasm_sf_free(idgen_snowflake_gen_t *g) { idgen_snowflake_gen_free(g); }

/* n IDs into ids[0..n-1]: 0 or a negative code. */
EXPORT(sf_next_n) int wasm_sf_next_n(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n) {
  err[0] = '\0';
  int rc = idgen_snowflake_gen_next_n(g, ids, n);
  return rc < 0 ? fail(rc) : 0;
}

/* The same without waiting, for nextAsync and nextBatchAsync: a call that
 * would wait for its tick returns IDGEN_EAGAIN, and the module resumes it
 * after wait_ms(w) on a timer.  `w` (wait_size() bytes) and `ids` are the
 * module's, kept until the call ends. */
EXPORT(wait_size) size_t wasm_wait_size(void) { return sizeof(idgen_snowflake_wait_t); }

EXPORT(sf_start)
int wasm_sf_start(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, uint64_t *ids, size_t n) {
  err[0] = '\0';
  int rc = idgen_snowflake_gen_next_n_async(g, ids, n, w);
  return rc < 0 && rc != IDGEN_EAGAIN ? fail(rc) : rc;
}

EXPORT(sf_resume)
int wasm_sf_resume(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w, uint64_t *ids) {
  err[0] = '\0';
  int rc = idgen_snowflake_gen_resume(g, w, ids);
  return rc < 0 && rc != IDGEN_EAGAIN ? fail(rc) : rc;
}

/* Milliseconds until a waiting call is due, by the wall clock now (the
 * timer that waits them out is monotonic). */
EXPORT(wait_ms) int wasm_wait_ms(const idgen_snowflake_wait_t *w) {
  int64_t ms = (w->due_ns - idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) * 1000000 + 999999) / 1000000;
  return (int)(ms < 0 ? 0 : ms > 3600000 ? 3600000 : ms);
}

/* ---- ULID and UUIDv7 ----------------------------------------------------- */

/* The monotonic generators read the clock through this: the wall clock read
 * once per fill (a read is a call out to JavaScript, dearer than an ID),
 * every ID of the batch stamped with it. */
static int64_t batch_ns;
static int64_t batch_now(void *ctx) {
  (void)ctx;
  return batch_ns;
}
static const idgen_gen128_settings_t batch_clock = {
    .clock_mode = IDGEN_CLOCK_PRECISE, .clock = &(idgen_clock_t){batch_now, NULL, NULL}};

EXPORT(ulid_gen_new) int wasm_ulid_gen_new(void) {
  err[0] = '\0';
  idgen_ulid_gen_t *g;
  int rc = idgen_ulid_gen_new(&g, &batch_clock);
  return rc < 0 ? fail(rc) : (int)(uintptr_t)g;
}

EXPORT(ulid_gen_free) void wasm_ulid_gen_free(idgen_ulid_gen_t *g) { idgen_ulid_gen_free(g); }

/* One ID of a 128-bit generator as text (len characters, no NUL) and its
 * millisecond, or the error: what fill() needs of each kind. */
typedef int (*next_text_fn)(void *g, char *text, int64_t *ms);

/* Up to n monotonic IDs of g (n >= 1, at most OUT_MAX / len), their texts
 * one after another in out with no separator, all of one millisecond (the
 * clock is read once, before the first; a generator run ahead of it can
 * still cross into the next): the count made, or the error.  browser.mjs
 * hands them out one per next() while Date.now() still shows the
 * millisecond it read before this call, and drops the rest: a call into the
 * module per ID costs more than the ID (the glue's clock, the text's
 * decoding). */
static int fill(void *g, int n, int len, next_text_fn next) {
  err[0] = '\0';
  int made = 0;
  int64_t first_ms = -1;
  if (n > OUT_MAX / len)
    n = OUT_MAX / len;
  batch_ns = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) * 1000000;
  while (made < n) {
    int64_t ms;
    int rc = next(g, out + made * len, &ms);
    if (rc < 0)
      return made > 0 ? made : fail(rc);
    if (first_ms < 0)
      first_ms = ms;
    else if (ms != first_ms)
      break; /* a new millisecond: this one is dropped, as unused ones are */
    made++;
  }
  return made;
}

static int ulid_next_text(void *g, char *text, int64_t *ms) {
  idgen_ulid_t u;
  char buf[IDGEN_ULID_STRLEN + 1];
  int rc = idgen_ulid_gen_next(g, &u);
  if (rc < 0)
    return rc;
  idgen_ulid_format(&u, buf);
  memcpy(text, buf, IDGEN_ULID_STRLEN);
  *ms = idgen_ulid_time(&u);
  return 0;
}

EXPORT(ulid_gen_fill) int wasm_ulid_gen_fill(idgen_ulid_gen_t *g, int n) {
  return fill(g, n, IDGEN_ULID_STRLEN, ulid_next_text);
}

EXPORT(uuid7_gen_new) int wasm_uuid7_gen_new(void) {
  err[0] = '\0';
  idgen_uuid7_gen_t *g;
  int rc = idgen_uuid7_gen_new(&g, &batch_clock);
  return rc < 0 ? fail(rc) : (int)(uintptr_t)g;
}

EXPORT(uuid7_gen_free) void wasm_uuid7_gen_free(idgen_uuid7_gen_t *g) { idgen_uuid7_gen_free(g); }

/* UUIDv7s (36 characters each), as ulid_gen_fill: every one with its own
 * 32 random bits, as ever. */
static int uuid7_next_text(void *g, char *text, int64_t *ms) {
  idgen_uuid_t u;
  char buf[IDGEN_UUID_STRLEN + 1];
  int rc = idgen_uuid7_gen_next(g, &u);
  if (rc < 0)
    return rc;
  idgen_uuid_format(&u, buf);
  memcpy(text, buf, IDGEN_UUID_STRLEN);
  *ms = idgen_uuid7_time(&u);
  return 0;
}

EXPORT(uuid7_gen_fill) int wasm_uuid7_gen_fill(idgen_uuid7_gen_t *g, int n) {
  return fill(g, n, IDGEN_UUID_STRLEN, uuid7_next_text);
}

/* A new ULID (not monotonic) into out. */
EXPORT(ulid) int wasm_ulid(void) {
  err[0] = '\0';
  idgen_ulid_t u;
  int rc = idgen_ulid_make(&u, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), NULL);
  if (rc < 0)
    return fail(rc);
  idgen_ulid_format(&u, out);
  return 0;
}

/* ---- codecs ---------------------------------------------------------------- */

/* The ULID in1[0..len) as a UUID, into out. */
EXPORT(ulid_to_uuid) int wasm_ulid_to_uuid(size_t len) {
  err[0] = '\0';
  idgen_ulid_t u;
  int rc = idgen_ulid_parse(&u, in1, len, IDGEN_ULID_STRICT, err, sizeof err);
  if (rc < 0)
    return fail(rc);
  idgen_uuid_t x;
  idgen_ulid_to_uuid(&u, &x);
  idgen_uuid_format(&x, out);
  return 0;
}

/* The UUID in1[0..len) as a ULID, into out. */
EXPORT(uuid_to_ulid) int wasm_uuid_to_ulid(size_t len) {
  err[0] = '\0';
  idgen_uuid_t x;
  int rc = idgen_uuid_parse(&x, in1, len, err, sizeof err);
  if (rc < 0)
    return fail(rc);
  idgen_ulid_t u;
  idgen_ulid_from_uuid(&x, &u);
  idgen_ulid_format(&u, out);
  return 0;
}

/* Layout in2's geometry as JSON text into out (layout_info_json), or the
 * command's message. */
EXPORT(layout_info) int wasm_layout_info(void) {
  err[0] = '\0';
  idgen_layout_t l;
  int rc = parse_layout(in2, &l);
  if (rc < 0)
    return fail(rc);
  _Static_assert(OUT_MAX >= LAYOUT_INFO_MAX, "out holds any layout's geometry");
  return layout_info_json(&l, out, OUT_MAX) < 0 ? fail(IDGEN_ERANGE) : 0;
}

/* What `idgen plan` shows of layout in2, for `rate` IDs per second asked
 * of one generator whose borrowing limit is max_borrow_ms, as JSON text into
 * out (idgen_layout_plan's numbers, layout_plan_json's text), or the
 * command's message. */
EXPORT(layout_plan) int wasm_layout_plan(double rate, double max_borrow_ms) {
  err[0] = '\0';
  idgen_layout_t l;
  idgen_layout_plan_t p;
  int rc = parse_layout(in2, &l);
  if (rc < 0)
    return fail(rc);
  rc = idgen_layout_plan(&l, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), rate, max_borrow_ms, &p);
  if (rc < 0)
    return fail(rc);
  _Static_assert(OUT_MAX >= LAYOUT_PLAN_MAX, "out holds any layout's plan");
  return layout_plan_json(&l, &p, out, OUT_MAX) < 0 ? fail(IDGEN_ERANGE) : 0;
}

/* The ID in1[0..len) read as `idgen decode --json` reads it (Snowflake IDs
 * in layout in2): its JSON text into out (decode_json's, the command's).  A
 * bad ID is EPARSE with the command's message. */
EXPORT(decode_json) int wasm_decode_json(size_t len) {
  err[0] = '\0';
  idgen_layout_t l;
  int rc = parse_layout(in2, &l);
  if (rc < 0)
    return fail(rc);
  decoded_t d;
  if (decode_id(&l, in1, len, 0, &d, err, sizeof err) < 0)
    return fail(IDGEN_EPARSE);
  _Static_assert(OUT_MAX >= DECODE_JSON_MAX, "out holds any ID's JSON");
  return decode_json(&d, out, OUT_MAX) < 0 ? fail(IDGEN_ERANGE) : 0;
}
