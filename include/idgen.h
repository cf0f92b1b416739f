/*
 * idgen.h -- the whole public API of libidgen and libidgen-registry.
 *
 * libidgen mints unique, time-ordered identifiers: Snowflake-family 64-bit
 * IDs in any bit layout, ULIDs and UUIDv7s.  libidgen-registry (the
 * idgen_registry_* and idgen_lease_* functions) leases node tuples from a
 * registry shared by processes and machines; link it only if you use them
 * (pkg-config idgen-registry).  A generator bound to such a lease is still
 * libidgen's, idgen_snowflake_gen_lease_status too.  Anything not
 * declared in this header is private and may change without notice.
 *
 * The promises the Snowflake generator keeps, named here and referred to by
 * name below:
 *   unique     No two IDs issued through one registry are ever equal,
 *              whichever layouts and node tuples its holders use: not between
 *              threads, not between processes or machines sharing the
 *              registry, not across restarts, not after the wall clock steps
 *              back, not when a service changes layout (a registry is one ID
 *              space: idgen_registry_space).  With no registry (static), one
 *              generator's IDs are unique and keeping node tuples and layouts
 *              apart across processes is the caller's job.  A child process
 *              after fork() never issues from its parent's generator: its
 *              calls fail (IDGEN_EFORKED).
 *   increasing One generator's IDs strictly increase, also when the wall
 *              clock steps back, and in real-time order: if one call returns
 *              before another starts, on whatever threads, the later call's
 *              ID is the larger.
 *   bounded    When the wall clock falls behind the generator's own clock (a
 *              step back, or a burst that used up the sequence), the
 *              generator keeps issuing from its own clock while that is at
 *              most max_borrow_ms ahead of the wall clock; past that one call
 *              waits at most max_wait_ms in all (a batch included), then
 *              fails with IDGEN_ECLOCK.  Only the rest of a used-up tick of
 *              at most one second is waited out beside max_wait_ms; a step
 *              back never is, so with max_borrow_ms = max_wait_ms = 0 a call
 *              after a step back is refused at once.  It never sleeps without
 *              bound and never silently repeats an ID.  The fast clock may
 *              notice a step of the wall clock up to one tick late.
 *   fenced     A generator whose lease can no longer be shown valid stops
 *              issuing (IDGEN_ELEASE) before the registry could grant its
 *              tuple to anyone else; every renewal and mark write is
 *              conditional on the lease's fencing generation, so a stale
 *              holder's late write fails and it stops.
 *   no wrap    A layout whose time field has run out is refused
 *              (IDGEN_EEXHAUSTED, naming the date); IDs never wrap.
 *   durable    A generator bound to a lease records "used up to tick T" in
 *              the registry before issuing beyond T, so the tuple's next
 *              holder, after a crash, a restart or a clock step back, starts
 *              above everything already issued.  The mark is kept a step
 *              ahead off the hot path (1 s for file:, the lease TTL for
 *              network registries).
 *
 * Conventions, for every function below unless it says otherwise:
 *   - Status codes are int: 0 for success, a negative IDGEN_E* for failure.
 *     idgen_strerror() turns a code into a short English phrase.
 *   - Where a failure deserves detail (which field, which character), the
 *     function takes a caller-owned buffer `err` of `errlen` bytes and writes
 *     one NUL-terminated line there.  `err` may be NULL (no detail).  The
 *     library never prints, never exits and keeps no global error state.
 *   - Pointers documented as inputs must not be NULL unless stated.
 *   - Zero is the default unless said: in a settings or request struct set
 *     to zero (`= {0}`, memset) a field asks for its default, and a field
 *     whose zero means something else says "unless said" where it is
 *     declared: the Snowflake and cache settings' borrow, waits and ring
 *     size, and the lease requests' start wait, where 0 is none (it has
 *     always meant that, and changing it would change what zeroed structs
 *     already in use do).  For those, the settings' _init() functions fill
 *     in every default, and IDGEN_START_WAIT_DEFAULT names the start wait's.
 *   - Thread safety is stated per object.  Layouts are plain values: once
 *     parsed they are read-only and may be shared freely between threads.
 *   - Nothing here is async-signal-safe.  In particular a ULID or UUIDv7
 *     generator called from a signal handler that interrupted a call to the
 *     same generator waits forever for its own lock.
 *
 * Names:
 *   - A value is idgen_<kind>_t (idgen_ulid_t, idgen_uuid_t; a Snowflake ID
 *     is a uint64_t) and is made by idgen_<kind>_make().
 *   - A generator is idgen_<kind>_gen_t (idgen_snowflake_gen_t,
 *     idgen_ulid_gen_t, idgen_uuid7_gen_t), made by idgen_<kind>_gen_new(),
 *     freed by idgen_<kind>_gen_free(), used by idgen_<kind>_gen_<verb>().
 *     _new always allocates; _free undoes it.
 *   - Text: idgen_<thing>_format() writes it, idgen_<thing>_parse() reads it
 *     (strict unless a mode says otherwise).
 *   - Modes and states are enums (idgen_clock_mode_t,
 *     idgen_ulid_parse_mode_t); sizes of caller-owned arrays are
 *     IDGEN_*_MAX macros (bytes, the NUL included) or IDGEN_*_STRLEN macros
 *     (characters of a fixed-length text, without its NUL: the buffer is
 *     IDGEN_*_STRLEN + 1 bytes); a function pointer the caller supplies has
 *     a typedef idgen_<what>_cb.
 */
#ifndef IDGEN_H
#define IDGEN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(IDGEN_BUILDING) && defined(__GNUC__)
#define IDGEN_API __attribute__((visibility("default")))
#else
#define IDGEN_API
#endif

#define IDGEN_VERSION_MAJOR 0
#define IDGEN_VERSION_MINOR 1
#define IDGEN_VERSION_PATCH 0
#define IDGEN_VERSION_STRING "0.1.0"

/* The library's version as "MAJOR.MINOR.PATCH"; a static string. */
IDGEN_API const char *idgen_version(void);

/* ------------------------------------------------------------------------
 * Errors.  One list defines every code, its name and its message.
 */
#define IDGEN_ERRNO_MAP(XX)                                                                        \
  XX(EINVAL, -1, "invalid argument")                                                               \
  XX(ENOMEM, -2, "out of memory")                                                                  \
  XX(ELAYOUT, -3, "invalid layout")                                                                \
  XX(ERANGE, -4, "value out of range")                                                             \
  XX(EPARSE, -5, "malformed input")                                                                \
  XX(ECLOCK, -6, "clock is behind the generator beyond the allowed borrow and wait")               \
  XX(EEXHAUSTED, -7, "the layout's time field has run out")                                        \
  XX(EFORKED, -8, "generator belongs to the parent process")                                       \
  XX(EOVERFLOW, -9, "monotonic random bits would overflow")                                        \
  XX(ERANDOM, -10, "the random source failed")                                                     \
  XX(ELEASE, -11, "the worker lease is lost or cannot be shown valid")                             \
  XX(EREGISTRY, -12, "the registry failed")                                                        \
  XX(EPOOLFULL, -13, "every worker ID of the pool is held")                                        \
  XX(EMARK, -14, "the high-water mark could not be advanced in time")                              \
  XX(EBATCH, -15, "the batch is larger than the generator can fill within max_wait_ms now")        \
  XX(EAGAIN, -16, "not yet: wait for the tick or the claim under way, then try again")             \
  XX(EEMPTY, -17, "the cache holds no ready ID")                                                   \
  XX(ESPACE, -18, "another layout holds the registry's ID space")                                  \
  XX(EKEY, -19, "the public ID was not made with any key given")

typedef enum idgen_errno {
#define IDGEN__ERRNO_ENUM(name, code, msg) IDGEN_##name = (code),
  IDGEN_ERRNO_MAP(IDGEN__ERRNO_ENUM)
#undef IDGEN__ERRNO_ENUM
} idgen_errno_t;

/* A short static message for `code`; "unknown error" for codes not above. */
IDGEN_API const char *idgen_strerror(int code);
/* The code's name without the IDGEN_ prefix ("ECLOCK"); "UNKNOWN" if none. */
IDGEN_API const char *idgen_err_name(int code);

/*
 * Quotes untrusted bytes for a message: writes s[0..len) into buf[n] as
 * printable ASCII, bytes 0x20..0x7E as themselves and every other byte as
 * \xHH (upper-case hex: \xC1, \x7F, \x00), so that invalid UTF-8, control
 * bytes and DEL never reach a terminal, a log line or a protocol reply, an
 * embedded NUL does not cut the message, and the text stays on one line.
 * '\\' (the escape character, so that the text reads back one way) and the
 * character `quote` (the one the caller wraps the text in: '"', '\'', or 0
 * for none) are written as \x5C and \xHH too.  If the whole does not fit in
 * n - 1 characters, the text ends with "..." after the last whole character
 * or escape that fits (an escape is never cut).  n must be at least 4.
 * Pure and thread-safe; returns buf, always NUL-terminated.  Every message
 * of the library, the command and the daemon that echoes input uses it.
 */
IDGEN_API char *idgen_quote(char *buf, size_t n, const void *s, size_t len, int quote);

/*
 * idgen_quote() into a buffer of max + 1 bytes, for a printf argument, e.g.
 * printf("field \"%s\" repeated", IDGEN_QUOTE(name, strlen(name), '"', 40)).
 * `max` must be a constant.  In C the buffer is a compound literal and lives
 * until the end of the enclosing block; in C++ it is a temporary and lives
 * until the end of the full expression (the printf call), so there keep no
 * pointer to it.
 */
#define IDGEN_QUOTE(s, len, quote, max)                                                            \
  idgen_quote(IDGEN_QUOTE_BUF_(max), (size_t)(max) + 1, (s), (len), (quote))
#ifdef __cplusplus
} /* extern "C" */
/* Private: IDGEN_QUOTE's buffer in C++, a temporary. */
template <size_t N> struct idgen_quote_buf_ {
  char b[N];
  char *p() { return b; }
};
#define IDGEN_QUOTE_BUF_(max) (idgen_quote_buf_<(size_t)(max) + 1>().p())
extern "C" {
#else
/* Private: IDGEN_QUOTE's buffer in C, a compound literal. */
#define IDGEN_QUOTE_BUF_(max) ((char[(max) + 1]){0})
#endif

/* ------------------------------------------------------------------------
 * Time formatting.
 */

/* Bytes of the longest text idgen_time_format() writes, with its NUL. */
#define IDGEN_TIME_TEXT_MAX 32
/* deprecated: use IDGEN_TIME_TEXT_MAX (the same value). */
#define IDGEN_TIME_BUFSIZE IDGEN_TIME_TEXT_MAX

/*
 * Writes `unix_ms` as ISO-8601 UTC with milliseconds,
 * "2017-09-20T13:43:08.849Z", into `buf` (IDGEN_TIME_TEXT_MAX bytes).  Years
 * past 9999 get an expanded, signed year ("+10889-08-02T05:31:50.655Z"), as
 * do years before 0.  Returns the length written (never fails).
 */
IDGEN_API int idgen_time_format(int64_t unix_ms, char *buf);

/*
 * Parses an ISO-8601 UTC time "YYYY-MM-DDTHH:MM:SS[.fff]Z" (the fraction may
 * have 1 to 3 digits; 't' and 'z' are accepted in lower case) into Unix
 * milliseconds.  Returns 0, or IDGEN_EPARSE for anything else.
 */
IDGEN_API int idgen_time_parse(const char *s, size_t len, int64_t *unix_ms);

/* ------------------------------------------------------------------------
 * Snowflake layouts.
 *
 * A layout names the bit fields of a 64-bit ID from the most significant bit
 * down.  It is a plain value the caller owns; parse fills it in, and it may be
 * copied with memcpy and shared read-only between threads.
 */

#define IDGEN_LAYOUT_MAX_FIELDS 16 /* fields in one layout, time and sequence included */
#define IDGEN_PRESET_NAME_MAX 16   /* bytes in a preset's name, with its NUL */
#define IDGEN_FIELD_NAME_MAX 32    /* bytes in a field name, with its NUL */
#define IDGEN_LAYOUT_SPEC_MAX 640  /* bytes idgen_layout_format() may need */

typedef enum idgen_field_kind {
  IDGEN_FIELD_NODE = 0,    /* a node field: fixed per generator */
  IDGEN_FIELD_TIME = 1,    /* the time field */
  IDGEN_FIELD_SEQUENCE = 2 /* the per-tick sequence */
} idgen_field_kind_t;

typedef struct idgen_field {
  char name[IDGEN_FIELD_NAME_MAX];
  uint8_t bits;  /* width, 1..63 */
  uint8_t shift; /* position of the least significant bit in the ID */
  uint8_t kind;  /* idgen_field_kind_t */
} idgen_field_t;

typedef struct idgen_layout {
  char preset[IDGEN_PRESET_NAME_MAX]; /* preset name if parsed from one, else "" */
  int64_t epoch_ms;                   /* Unix milliseconds of time value 0 */
  int64_t unit_ms;                    /* milliseconds per time tick (>= 1) */
  int nfields;                        /* fields[0] is the most significant */
  int time_index;                     /* index of the time field in fields[] */
  int sequence_index;                 /* index of the sequence field */
  int total_bits;                     /* sum of all field widths, <= 64 */
  idgen_field_t fields[IDGEN_LAYOUT_MAX_FIELDS];
} idgen_layout_t;

/*
 * Parses a layout spec such as
 *   "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=1288834974657"
 * or a preset name ("twitter", "discord", "sonyflake", "baidu", "instagram",
 * "mastodon", "js53") into `out`.  Validation is strict; on failure returns
 * IDGEN_ELAYOUT and writes one message naming the offending item to `err`,
 * such as `layout: field "worker" repeated`.  `out` is unspecified on error.
 * The sequence must be less significant than the time field (otherwise one
 * generator's IDs would not increase).
 */
IDGEN_API int idgen_layout_parse(idgen_layout_t *out, const char *spec, char *err, size_t errlen);

/*
 * Writes the canonical spec of `l` into `buf`: every field, the time unit
 * (as Ns when it is a whole number of seconds, else Nms) and the epoch in
 * Unix milliseconds.  Parsing the result gives back an equal layout
 * (preset name aside).  Returns the length, or IDGEN_ERANGE if `buflen` is too
 * small (IDGEN_LAYOUT_SPEC_MAX always suffices).
 */
IDGEN_API int idgen_layout_format(const idgen_layout_t *l, char *buf, size_t buflen);

/* The name of each preset, in documentation order; NULL after the last. */
IDGEN_API const char *idgen_layout_preset_name(int i);
/* The spec of preset `name`, or NULL if there is no such preset. */
IDGEN_API const char *idgen_layout_preset_spec(const char *name);

/* Index of the field called `name` in l->fields, or -1 (a layout without
 * it): check before using it as an index (s.node[-1] writes outside the
 * array).  To set node values by name, idgen_layout_node_set() and
 * idgen_layout_nodes_parse() refuse a field the layout lacks. */
IDGEN_API int idgen_layout_field_index(const idgen_layout_t *l, const char *name);

/*
 * Sets one node field's value, given as text (a "NAME=VALUE" item of a
 * command line or a config file, split by the caller): `name` must be a node
 * field of `l` not yet in *given (one bit per field index, set here), and
 * `value` a decimal number that fits the field's bits.  On success
 * node[index] = the value.  Errors, with a message in err naming the field
 * and its bounds (input quoted, \xHH for unprintable bytes):
 *   IDGEN_EINVAL  not a node field of the layout (the message lists them),
 *                 or given twice;
 *   IDGEN_ERANGE  the value is not a number from 0 to the field's maximum.
 */
IDGEN_API int idgen_layout_node_set(const idgen_layout_t *l, const char *name, const char *value,
                                    uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given,
                                    char *err, size_t errlen);

/*
 * A node value taken from the host rather than given as a number: called by
 * idgen_layout_nodes_parse() for a value that starts with '@' ("@ip",
 * "@mac"), with the field's name and width.  Writes the value into *value
 * and returns 0, or a negative IDGEN_E* code with a message in err[errlen]
 * (err may be NULL).  The core does no I/O: the caller brings the resolver
 * (the registry library's idgen_host_node_resolve(), or one of its own).
 */
typedef int (*idgen_node_resolve_cb)(void *ctx, const char *field, unsigned bits,
                                     const char *source, uint64_t *value, char *err, size_t errlen);

/*
 * Parses a node list, "NAME=VALUE[,NAME=VALUE...]" (the --node flag, a
 * config file's `node =`, the extension's idgen.node, a tuple as `idgen
 * registry list` shows it), into node[] by layout field index, each item
 * by idgen_layout_node_set()'s rule (*given accumulates across calls, so a
 * field given in an earlier list counts as given).  One rule for every
 * front end: spaces and tabs around an item, its name and its value are
 * ignored ("datacenter = 1, worker = 2" is "datacenter=1,worker=2"); empty
 * items (",,", a trailing comma) and an empty or NULL list give nothing.  A
 * value that starts with '@' goes to `resolve` (with `ctx`) when it is not
 * NULL; without a resolver it is refused as not a number.  Never allocates.
 * Returns 0, or the first error with a message naming the item:
 *   IDGEN_EINVAL  an item that is not NAME=VALUE, a name that is not a node
 *                 field, a field given twice;
 *   IDGEN_ERANGE  a value that is not a number within the field's bits;
 *   the resolver's error, its message after the field's name ("worker: ...").
 */
IDGEN_API int idgen_layout_nodes_parse(const idgen_layout_t *l, const char *list,
                                       idgen_node_resolve_cb resolve, void *ctx,
                                       uint64_t node[IDGEN_LAYOUT_MAX_FIELDS], unsigned *given,
                                       char *err, size_t errlen);

/*
 * The horizon: the first Unix millisecond the time field cannot hold,
 * epoch + 2^time_bits * unit.  IDs can be made strictly before it.
 */
IDGEN_API int64_t idgen_layout_horizon_ms(const idgen_layout_t *l);

/* IDs per tick for one node (2^sequence_bits). */
IDGEN_API uint64_t idgen_layout_ids_per_tick(const idgen_layout_t *l);

/* The Unix millisecond from which IDs are >= 2^63; INT64_MAX if never (the
 * layout has fewer than 64 bits); INT64_MIN if a node field holds the top
 * bit, so that IDs are >= 2^63 whenever that field is in its upper half. */
IDGEN_API int64_t idgen_layout_sign_bit_ms(const idgen_layout_t *l);

/* What a layout can do, and until when: the numbers `idgen plan` shows (the
 * command and the JavaScript package's plan() format them).  Rates are IDs
 * per second, as doubles: a cluster's may pass 2^64. */
typedef struct idgen_layout_plan {
  int64_t horizon_ms;       /* idgen_layout_horizon_ms */
  int64_t lifetime_ms;      /* horizon - epoch */
  double lifetime_years;    /* lifetime_ms in Gregorian years of 365.2425 days */
  int64_t remaining_ms;     /* horizon - now (<= 0: exhausted) */
  int exhausted;            /* the horizon has come: no more IDs */
  int64_t sign_bit_ms;      /* idgen_layout_sign_bit_ms */
  uint64_t ids_per_tick;    /* for one node */
  double ids_per_s;         /* for one node */
  int node_bits;            /* the node fields' bits together */
  uint64_t nodes;           /* 2^node_bits */
  double cluster_ids_per_s; /* ids_per_s * nodes */
  /* With a rate asked of one generator (rate > 0; else all 0): */
  double rate;         /* IDs per second asked */
  double ratio;        /* rate / ids_per_s */
  int sustained;       /* ratio <= 1: within one node's capacity */
  double burst_ms;     /* how long borrowing absorbs it (the generator's clock gains
                          ratio - 1 ms a ms): max_borrow_ms / (ratio - 1); 0 when
                          sustained (indefinitely) */
  double nodes_needed; /* nodes that sustain it: ceil(ratio), at least 1 */
} idgen_layout_plan_t;

/* Fills *p for layout l at Unix millisecond now_ms, with `rate` IDs per
 * second asked of one generator (0: none) whose borrowing limit is
 * max_borrow_ms.  Returns 0, or IDGEN_EINVAL when rate or max_borrow_ms is
 * negative, infinite or not a number (*p then unspecified).  Never allocates. */
IDGEN_API int idgen_layout_plan(const idgen_layout_t *l, int64_t now_ms, double rate,
                                double max_borrow_ms, idgen_layout_plan_t *p);

/*
 * Composes an ID.  `values[i]` is the value of l->fields[i]; the entry for the
 * time field is ignored and computed from `unix_ms` instead.  Returns 0, or
 * IDGEN_ERANGE with a message such as "worker 32 out of range 0..31" or
 * "time 2009-01-01T00:00:00.000Z is before the layout epoch ...".
 */
IDGEN_API int idgen_layout_compose(const idgen_layout_t *l, int64_t unix_ms, const uint64_t *values,
                                   uint64_t *id, char *err, size_t errlen);

/*
 * Splits `id` into its fields: values[i] receives l->fields[i] (values must
 * have room for l->nfields entries) and *unix_ms (may be NULL) the time as
 * Unix milliseconds (the start of its tick).  Returns 0, or IDGEN_ERANGE if
 * `id` has bits set above the layout's total_bits.
 */
IDGEN_API int idgen_layout_decompose(const idgen_layout_t *l, uint64_t id, uint64_t *values,
                                     int64_t *unix_ms);

/*
 * Parses a decimal Snowflake ID of `len` bytes (1 to 20 digits, no sign, no
 * spaces) and checks that it fits `l` (pass NULL to check only that it fits 64
 * bits).  Returns 0, or IDGEN_EPARSE / IDGEN_ERANGE with a message naming the
 * problem and its position, such as `character 'x' at position 3 is not a
 * digit`.
 */
IDGEN_API int idgen_snowflake_parse(const idgen_layout_t *l, const char *s, size_t len,
                                    uint64_t *id, char *err, size_t errlen);

/* ------------------------------------------------------------------------
 * Clocks.
 *
 * Generators read the wall clock through an idgen_clock_t.  The default
 * (NULL clock) is CLOCK_REALTIME.  Tests inject their own: `now_ns` returns
 * Unix time in nanoseconds and `sleep_ns` waits (or pretends to wait, moving
 * the injected time) for the given nanoseconds.  Both are called from every
 * thread that uses the generator, so they must be thread-safe.
 */
typedef int64_t (*idgen_clock_now_cb)(void *ctx);
typedef void (*idgen_clock_sleep_cb)(void *ctx, int64_t ns);

typedef struct idgen_clock {
  idgen_clock_now_cb now_ns;
  idgen_clock_sleep_cb sleep_ns;
  void *ctx;
} idgen_clock_t;

typedef enum idgen_clock_mode {
  /*
   * The default.  Where the CPU has an invariant time-stamp counter, the
   * kernel clock is read once per millisecond per thread and the TSC tells
   * when that millisecond ends, so the tick used is the same as reading the
   * clock on every call, at a third of the cost.  Elsewhere the same as
   * PRECISE.  idgen_clock_stats() tells which it is doing now.  See
   * docs/DESIGN.md section 2.
   */
  IDGEN_CLOCK_FAST = 0,
  /* clock_gettime(CLOCK_REALTIME) on every call. */
  IDGEN_CLOCK_PRECISE = 1,
  /*
   * clock_gettime(CLOCK_REALTIME_COARSE) on every call: the time of the
   * kernel's last timer tick, read without the cycle counter, for machines
   * where reading the cycle counter is slow (a virtual machine's TSC can
   * cost 30 ns a read; the coarse clock 5).  Opt-in: its stamps lag the wall
   * clock by one or two timer ticks (idgen_clock_coarse_resolution_ns() is
   * one tick, typically 4 ms; this project's machine measures 4 to 8 ms), as
   * skeeto/ulid-c's do.  Every promise holds as in the
   * other modes (an ID's time is still a time the clock showed, and a
   * generator's IDs still increase); IDs are only placed up to one
   * resolution earlier than the moment they were made.  Where there is no
   * coarse clock (not Linux), the same as PRECISE.  See docs/DESIGN.md
   * section 2.
   */
  IDGEN_CLOCK_COARSE = 2
} idgen_clock_mode_t;

/* The words of the clock modes as every front end's clock setting takes
 * them, for messages. */
#define IDGEN_CLOCK_MODE_WORDS "fast, precise or coarse"

/* The clock mode named by `word` ("fast", "precise" or "coarse", exactly)
 * into *mode: 0, or IDGEN_EINVAL with *mode untouched and the message
 * `"WORD" is not a clock (expected fast, precise or coarse)` in err[errlen]
 * (err may be NULL).  The command, the daemon, the Node.js addon and the
 * WebAssembly build read their clock setting through it.  Pure and
 * thread-safe. */
IDGEN_API int idgen_clock_mode_parse(const char *word, idgen_clock_mode_t *mode, char *err,
                                     size_t errlen);

/* The word idgen_clock_mode_parse() reads as `mode`; "unknown" for any
 * other value.  A static string; thread-safe. */
IDGEN_API const char *idgen_clock_mode_name(idgen_clock_mode_t mode);

/* Unix milliseconds from the default clock in `mode`; for benchmarks and tools. */
IDGEN_API int64_t idgen_clock_now_ms(idgen_clock_mode_t mode);

/* The resolution of IDGEN_CLOCK_COARSE in ns (clock_getres of
 * CLOCK_REALTIME_COARSE): one timer tick; its stamps lag the wall clock by
 * one or two of these.  1 where there is no coarse clock (COARSE is then
 * PRECISE). */
IDGEN_API int64_t idgen_clock_coarse_resolution_ns(void);

/*
 * What IDGEN_CLOCK_FAST does now.  Its model of the TSC is process-wide
 * (each thread keeps only its current millisecond), so this is one state for
 * the whole process.  See docs/DESIGN.md section 2.
 */
typedef enum idgen_clock_state {
  /* No invariant TSC (or not x86-64): FAST reads the kernel clock on every
   * call, as PRECISE does.  Decided once, from the CPU. */
  IDGEN_CLOCK_STATE_UNAVAILABLE = 0,
  /* Measuring the TSC's rate (about 20 ms, after first use and after a
   * rejection); FAST reads the kernel clock on every call meanwhile. */
  IDGEN_CLOCK_STATE_CALIBRATING = 1,
  /* The kernel clock is read once per millisecond per thread. */
  IDGEN_CLOCK_STATE_FAST = 2,
  /* Cooling down after repeated rejections: FAST reads the kernel clock on
   * every call until the cool-down ends, then calibrates again. */
  IDGEN_CLOCK_STATE_PRECISE = 3
} idgen_clock_state_t;

typedef struct idgen_clock_stats {
  idgen_clock_state_t state;
  /* Rejections of the TSC model: a check caught a cached millisecond that
   * had already ended (a forward step of the wall clock looks the same as a
   * TSC running slow), or a calibration measured an implausible rate; each
   * one stops the fast path until the next calibration. */
  uint64_t fallbacks;
  /* Calibrations completed after the first. */
  uint64_t recalibrations;
  /* Times rejections came too often and the fast path stayed off for a
   * cool-down. */
  uint64_t cooldowns;
  /* In PRECISE: time left until the next calibration; else 0. */
  int64_t cooldown_ms;
  /* The TSC rate windows are computed with (the latest calibration, lowered
   * by 1/256); 0 before the first. */
  uint64_t tsc_hz;
} idgen_clock_stats_t;

/*
 * Fills *st (not NULL) with the fast clock's state and counters.  Counters
 * start at 0 when the process starts and only grow.  The first call in a
 * process starts the calibration if no clock read has; a call may also end a
 * calibration or cool-down that is due, as a clock read would.  Thread-safe;
 * it never blocks for longer than another thread's state change (a few
 * dozen instructions).
 */
IDGEN_API void idgen_clock_stats(idgen_clock_stats_t *st);

/* "unavailable", "calibrating", "fast" or "precise" (as the daemon shows
 * them); "unknown" for any other value.  A static string; thread-safe. */
IDGEN_API const char *idgen_clock_state_name(idgen_clock_state_t s);

/* ------------------------------------------------------------------------
 * The Snowflake generator (unique, increasing, bounded: see the top).
 */

typedef struct idgen_registry idgen_registry_t;
typedef struct idgen_lease idgen_lease_t;

typedef struct idgen_snowflake_gen idgen_snowflake_gen_t;

/* The generator's settings: defaults and the largest values accepted
 * (idgen_snowflake_gen_new refuses others with IDGEN_ERANGE naming the bounds).
 * The command and the daemon take their bounds from here. */
#define IDGEN_MAX_BORROW_MS_DEFAULT 1000
#define IDGEN_MAX_BORROW_MS_MAX 86400000
#define IDGEN_MAX_WAIT_MS_DEFAULT 100
#define IDGEN_MAX_WAIT_MS_MAX 3600000

/* A macro's value as a string literal: "(default " IDGEN_STR(IDGEN_MAX_WAIT_MS_DEFAULT) ")". */
#define IDGEN_STR(x) IDGEN_STR_(x)
#define IDGEN_STR_(x) #x

/*
 * Settings for idgen_snowflake_gen_new().  Call idgen_snowflake_settings_init()
 * first: it fills in the defaults (or pass NULL settings for all of them).
 * The exception to "zero is the default": max_borrow_ms and max_wait_ms,
 * whose zero has always meant zero (together they give the original Twitter
 * server's behaviour, and a zeroed struct has always asked for it), so a
 * struct set to zero without _init() refuses a call at once after a step
 * back of the clock.  Every other field's zero is its default.
 */
typedef struct idgen_snowflake_settings {
  /* Values of the node fields, by layout field index; time and sequence
   * entries are ignored.  Default 0. */
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];
  /* How far (ms) the generator's clock may run ahead of the wall clock, after
   * a step back or a burst that used up the sequence.  Default 1000
   * (IDGEN_MAX_BORROW_MS_DEFAULT, set by _init()).  Unless said: 0 is
   * no borrowing, not the default. */
  int64_t max_borrow_ms;
  /* How long (ms) a call may wait for the wall clock to come within
   * max_borrow_ms.  Waiting out the rest of a used-up tick of at most one
   * second does not count against it (unless the clock stepped back); on
   * longer ticks it does.  Default 100 (IDGEN_MAX_WAIT_MS_DEFAULT, set by
   * _init()).  Unless said: 0 is no waiting, not the default. */
  int64_t max_wait_ms;
  /* Nonzero: start the sequence of each new tick at a random value in the
   * lower half of its range, so that IDs spread over `id % N` shards.
   * Default 0 (start at 0). */
  int random_sequence_start;
  /* Default IDGEN_CLOCK_FAST.  Ignored when `clock` is set. */
  idgen_clock_mode_t clock_mode;
  /* An injected clock, or NULL for the system clock.  The pointed-to struct
   * must outlive the generator. */
  const idgen_clock_t *clock;
  /* A lease from idgen_registry_acquire() to bind the generator to, or NULL
   * (fenced, durable).  The leased field's value comes from the lease (its node[]
   * entry is ignored).  A bound generator starts above the lease's
   * high-water mark; a background thread keeps the mark mark_step ahead of
   * the IDs issued (one durable write per step) and renews the lease at a
   * third of its TTL.  It never issues an ID above the recorded mark, and
   * stops (IDGEN_ELEASE) once the lease cannot be shown valid by the
   * monotonic clock, measured from when the last successful renewal was
   * sent.  The lease must outlive the generator: free the generator, then
   * release the lease.  One generator per lease.  Default NULL. */
  idgen_lease_t *lease;
  /* Unix ms: a bound generator also starts above the tick holding this
   * time (to stay above an earlier generator's IDs when re-binding to a new
   * lease).  Default 0. */
  int64_t start_after_ms;
} idgen_snowflake_settings_t;

/* Fills `s` with the defaults listed above. */
IDGEN_API void idgen_snowflake_settings_init(idgen_snowflake_settings_t *s);

/*
 * Creates a generator for layout `l` (copied) with settings `s` (copied; NULL
 * for the defaults).  Validates once, naming the first bad setting in `err`:
 *   IDGEN_ERANGE   a node value out of range ("worker 32 out of range 0..31"),
 *                  or a negative or too large max_borrow_ms / max_wait_ms;
 *   IDGEN_EEXHAUSTED  the layout's time field has run out by the clock
 *                  ("layout ran out on 2024-11-20");
 *   IDGEN_ECLOCK   the clock reads before the layout's epoch;
 *   IDGEN_ENOMEM.
 * On success *out owns a generator to be released with idgen_snowflake_gen_free().
 */
IDGEN_API int idgen_snowflake_gen_new(idgen_snowflake_gen_t **out, const idgen_layout_t *l,
                                      const idgen_snowflake_settings_t *s, char *err,
                                      size_t errlen);

/* Frees `g` (NULL is fine).  No call on `g` may be running or start later. */
IDGEN_API void idgen_snowflake_gen_free(idgen_snowflake_gen_t *g);

/*
 * A generator shared by processes (a database server's backends, say): made
 * in memory the caller provides, mapped shared, and used by every process
 * that maps it -- its state is atomic words, so next()/next_n() work from
 * any process as from any thread, with the same guarantees.
 *   idgen_snowflake_gen_shared_size()  the bytes it needs;
 *   idgen_snowflake_gen_init_shared()  makes it in `mem` (that many bytes,
 *       aligned to 64), as idgen_snowflake_gen_new() does;
 *   idgen_snowflake_gen_fini_shared()  what idgen_snowflake_gen_free() does
 *       but freeing: stops a lease's binding with a final mark.  Only the
 *       process that made it may call it; no call may run or start later.
 * The processes must be forked after this library was loaded (its code at
 * the same address in each), so the struct's pointers hold in all of them;
 * an injected clock must be reachable at the same address too.  There is no
 * fork check.  A lease (settings `lease`) is kept by threads of the process
 * that made the generator: the others see the ceiling those threads move,
 * so a call in another process that finds its values above the mark asks
 * for more and looks again each millisecond within its budget, and fails
 * with IDGEN_ELEASE while the lease is not valid.  Where that process exits
 * without idgen_snowflake_gen_fini_shared(), nothing is issued above the
 * last durable mark (the ceiling never exceeds it), but the lease is no
 * longer watched: stop every other process's use of it.
 */
IDGEN_API size_t idgen_snowflake_gen_shared_size(void);
IDGEN_API int idgen_snowflake_gen_init_shared(void *mem, const idgen_layout_t *l,
                                              const idgen_snowflake_settings_t *s, char *err,
                                              size_t errlen);
IDGEN_API void idgen_snowflake_gen_fini_shared(idgen_snowflake_gen_t *g);

/*
 * Issues one ID into *id.  Thread-safe and lock-free: any number of threads
 * may call it on one generator.  IDs strictly increase in real-time order
 * (increasing).  The generator's first caller takes without a locked
 * instruction until another thread calls; that call first revokes it with
 * one membarrier(2), without waiting for the first (DESIGN §1).  Callers
 * must be threads with their own thread-local storage (any C library's
 * threads and signal handlers are; a raw clone(CLONE_VM) without
 * CLONE_SETTLS is not).  Returns 0, or:
 *   IDGEN_ECLOCK      the wall clock is more than max_borrow_ms behind the
 *                     generator and did not catch up within max_wait_ms (the
 *                     generator works again once it does);
 *   IDGEN_EEXHAUSTED  the time field has run out (never wraps);
 *   IDGEN_EFORKED     called in a child process after fork(): a child must
 *                     make its own generator (unique);
 *   IDGEN_EINVAL      another thread owns the generator and the kernel now
 *                     refuses membarrier(2) (a seccomp filter installed after
 *                     the first call): it cannot be shared safely;
 *   IDGEN_ELEASE, IDGEN_EMARK  (a generator bound to a lease) the lease
 *                     cannot be shown valid, or the high-water mark could not
 *                     be moved ahead within max_wait_ms (at once when the
 *                     last mark write failed and none is under way).
 * May sleep: one call waits at most max_wait_ms in all, plus the rest of a
 * used-up tick of at most one second (bounded), for its tick or for the
 * mark; after a step back of the clock, at most max_wait_ms.
 */
IDGEN_API int idgen_snowflake_gen_next(idgen_snowflake_gen_t *g, uint64_t *id);

/*
 * Issues `n` IDs into ids[0..n-1], increasing: one atomic step claims them
 * all, so a batch costs about one call plus the stores.  The batch is one
 * call (bounded): it waits no longer in total than next() may (max_wait_ms,
 * plus the rest of a used-up tick of at most one second).  A batch that
 * cannot be filled within that is refused before anything is claimed:
 * IDGEN_EBATCH (idgen_snowflake_gen_capacity() tells how many can be made
 * now); so is one that would run past the layout's end (IDGEN_EEXHAUSTED),
 * leaving the last IDs to smaller calls.  Otherwise the same errors as next(); on error the
 * content of `ids` is unspecified (IDs already claimed are skipped, never
 * reissued).  n = 0 returns 0.
 */
IDGEN_API int idgen_snowflake_gen_next_n(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n);

/*
 * How many IDs one call could make now within the wait next_n() allows
 * (max_wait_ms, plus the rest of a used-up tick of at most one second when
 * the clock has not stepped back): the room left in the window the clock
 * allows (0 when the generator is further ahead of the wall clock than that
 * window).  A bound generator may still have to wait for its mark.  For
 * messages and for sizing batches; the answer may be out of date at once.
 */
IDGEN_API uint64_t idgen_snowflake_gen_capacity(idgen_snowflake_gen_t *g);

/*
 * The same calls, for an event loop that must never sleep: a call that
 * would wait returns IDGEN_EAGAIN instead, with the time to go on in
 * w->due_ns (Unix ns by the generator's clock), and the caller calls
 * idgen_snowflake_gen_resume() at or after that time, as often as it returns
 * IDGEN_EAGAIN.  Wait for it on a monotonic timer (due_ns less the clock
 * read when the call returned), not for the wall clock to show due_ns: if
 * the wall clock steps back meanwhile, the resume then sees the step and
 * ends the call within its budget (IDGEN_ECLOCK), where a caller that waits
 * for the wall clock waits out the step itself.  A resume that comes early
 * (a loop that polls) is answered IDGEN_EAGAIN again and costs the call
 * only the time that really passed, measured on the monotonic clock (with
 * an injected clock, the whole wait asked is spent at each resume).  The
 * call keeps its place meanwhile: values it reserved are its own, and it is
 * bounded by the same per-call wait as next_n().  When next_n_async or
 * resume returns 0, the `ids` of that call hold the n IDs, which may be
 * handed out at once (resume takes the array anew, so that a waiting call
 * may move it); any other return ends the call, with nothing to hand out.
 * `w` belongs to the caller; a call that is abandoned only loses the values
 * it reserved (never reissued).  Same errors as next_n().
 */
typedef struct idgen_snowflake_wait {
  int64_t due_ns; /* when to call idgen_snowflake_gen_resume() */
  /* Private: */
  uint64_t first, last; /* the states reserved */
  uint64_t *ids;
  size_t n;
  /* When the wait last asked for ends, monotonic; during a resume, minus
   * its reading; 0: none. */
  int64_t asked_mono_ns;
  int64_t deadline_ns, charged_ns;
  int16_t phase;
  int16_t stepped;      /* the budget began after a step back of the clock */
  int32_t allowance_ms; /* the budget: deadline less the first reading */
  size_t offset;        /* resume() fills from ids + offset (a cache's direct take) */
} idgen_snowflake_wait_t;

IDGEN_API int idgen_snowflake_gen_next_n_async(idgen_snowflake_gen_t *g, uint64_t *ids, size_t n,
                                               idgen_snowflake_wait_t *w);
IDGEN_API int idgen_snowflake_gen_resume(idgen_snowflake_gen_t *g, idgen_snowflake_wait_t *w,
                                         uint64_t *ids);

/* The layout the generator was made with (a read-only view, lives as long as g). */
IDGEN_API const idgen_layout_t *idgen_snowflake_gen_layout(const idgen_snowflake_gen_t *g);

/* Counters of slow-path events, for metrics.  Reading is thread-safe. */
typedef struct idgen_snowflake_stats {
  uint64_t clock_waits;        /* calls that waited for the clock beyond the tick */
  uint64_t clock_refusals;     /* calls refused with IDGEN_ECLOCK */
  uint64_t sequence_exhausted; /* calls that waited out a tick whose sequence was used up */
  /* How far the generator's clock is ahead now (>= 0), counting values
   * reserved by waiting calls. */
  int64_t borrowed_ms;
  /* The largest value taken so far, as an ID (0 if none); it may be one
   * reserved by a waiting call and not yet returned, or one dropped by a
   * refused call.  While the generator's lease is fenced (its ceiling at
   * 0), it is every value taken, by any thread: the reading first revokes
   * a thread's ownership of the generator (docs/DESIGN.md §1), which then
   * takes with a locked instruction for good. */
  uint64_t last_id;
} idgen_snowflake_stats_t;

IDGEN_API void idgen_snowflake_gen_stats(idgen_snowflake_gen_t *g, idgen_snowflake_stats_t *st);

/* ------------------------------------------------------------------------
 * The cached Snowflake generator: Baidu's CachedUidGenerator, the idgen way.
 *
 * A ring of IDs made ahead of demand by one filler thread from a Snowflake
 * generator (bound to a lease or not), taken by any number of threads
 * without a lock: a take is one compare-and-swap on the ring's cursor.  The
 * ring has 2^sequence_bits << boost_power slots (a tick's worth of IDs times
 * 2^boost_power, at most 2^22), is filled as far as it can be at start, and
 * is refilled whenever fewer than padding_percent of its slots are ready,
 * and, with schedule_ms, also that often.  Unlike Baidu's filler, which
 * borrows future seconds without bound, the filler takes IDs only as the
 * generator issues them: never more than max_borrow_ms ahead of the clock,
 * so a layout with few IDs a tick fills the ring only that far.
 *
 * Every promise of the generator holds for the IDs taken:
 *   unique, durable: the ring holds only IDs the generator issued (under
 *     its lease's mark when bound);
 *   increasing: the filler writes IDs in increasing order into consecutive
 *     slots and takes claim slots in the cursor's order, so if one take
 *     returns before another starts, on whatever threads, the later one's
 *     ID is the larger (docs/DESIGN.md §12 gives the argument);
 *   fenced: a take checks each ID against the generator's ceiling; once
 *     the lease is lost the ring is emptied and takes fail (IDGEN_ELEASE);
 *   fork: a child process cannot take from its parent's ring
 *     (IDGEN_EFORKED).
 * The price is age: an ID may be handed out some time after it was made,
 * its time field lagging the wall clock (idgen_cached_stats_t.age_ms).
 *
 * The generator belongs to the cache while it lives: take every ID through
 * the cache (another caller of the generator would break `increasing`
 * across the two, though never `unique`).
 */
typedef struct idgen_cached_gen idgen_cached_gen_t;

/* What a take does when the ring is empty. */
typedef enum idgen_cache_empty {
  IDGEN_CACHE_DIRECT = 0, /* ask the generator directly (its own wait and refusals) */
  IDGEN_CACHE_WAIT = 1,   /* wait for the filler, at most max_wait_ms; then IDGEN_EEMPTY */
  IDGEN_CACHE_FAIL = 2    /* IDGEN_EEMPTY at once (Baidu's default: throw) */
} idgen_cache_empty_t;

#define IDGEN_CACHE_BOOST_DEFAULT 3
#define IDGEN_CACHE_BOOST_MAX 12
#define IDGEN_CACHE_SLOTS_MAX (1 << 22)
#define IDGEN_CACHE_PADDING_DEFAULT 50
#define IDGEN_CACHE_PADDING_MIN 1
#define IDGEN_CACHE_PADDING_MAX 100
#define IDGEN_CACHE_SCHEDULE_MS_MAX 86400000

/*
 * Settings for idgen_cached_gen_new() (NULL: every default).  Call
 * idgen_cached_settings_init() first: boost_power and max_wait_ms are
 * exceptions to "zero is the default", as in the Snowflake settings.
 */
typedef struct idgen_cached_settings {
  /* Ring = 2^sequence_bits << boost_power slots, 0..IDGEN_CACHE_BOOST_MAX.
   * Default IDGEN_CACHE_BOOST_DEFAULT (set by _init()).  Unless said: 0 is
   * a ring of one tick's IDs, not the default. */
  int boost_power;
  /* Refill below this share of ready slots, IDGEN_CACHE_PADDING_MIN..MAX;
   * 0: the default, IDGEN_CACHE_PADDING_DEFAULT. */
  int padding_percent;
  /* Also refill this often, at most IDGEN_CACHE_SCHEDULE_MS_MAX; 0: off, the
   * default. */
  int64_t schedule_ms;
  idgen_cache_empty_t on_empty; /* default IDGEN_CACHE_DIRECT */
  /* IDGEN_CACHE_WAIT's limit.  Default IDGEN_MAX_WAIT_MS_DEFAULT (set by
   * _init()).  Unless said: 0 is no waiting, not the default. */
  int64_t max_wait_ms;
} idgen_cached_settings_t;

/* Fills *s with the defaults. */
IDGEN_API void idgen_cached_settings_init(idgen_cached_settings_t *s);

/* Makes a cache over `g` (which must outlive it) and starts its filler,
 * which fills the ring before this returns as far as the generator allows
 * now.  IDGEN_EINVAL naming the bad setting and its bounds; IDGEN_ENOMEM;
 * or the generator's error if it cannot issue at all (IDGEN_ELEASE...). */
IDGEN_API int idgen_cached_gen_new(idgen_cached_gen_t **out, idgen_snowflake_gen_t *g,
                                   const idgen_cached_settings_t *s, char *err, size_t errlen);
/* Stops the filler and frees the cache; the IDs still in the ring are
 * never handed out (they are lost, not reused).  Not the generator. */
IDGEN_API void idgen_cached_gen_free(idgen_cached_gen_t *c);

/* One ID.  Thread-safe, lock-free while the ring has IDs.  0; IDGEN_EEMPTY
 * (the empty policy FAIL or WAIT ran out); IDGEN_ELEASE; IDGEN_EFORKED; or
 * with DIRECT the generator's errors. */
IDGEN_API int idgen_cached_gen_take(idgen_cached_gen_t *c, uint64_t *id);

/* n IDs, increasing, in one claim of n consecutive slots when that many are
 * ready; otherwise by the empty policy: FAIL and WAIT for all n; DIRECT
 * takes what the ring has and the rest from the generator's next_n (if the
 * generator then refuses, the IDs taken from the ring are lost, never
 * handed out).  Errors as take(); IDGEN_EINVAL when n exceeds the ring and
 * the policy is not DIRECT. */
IDGEN_API int idgen_cached_gen_take_n(idgen_cached_gen_t *c, uint64_t *ids, size_t n);

/* As take_n, never sleeping (for event loops): when the ring cannot serve
 * n and the policy is DIRECT, the generator's next_n_async for the rest,
 * with IDGEN_EAGAIN and *w: call idgen_cached_gen_resume() with the same ids
 * when w->due_ns has come (not the generator's resume: a call that waited
 * for a mark write must take what the ring holds first).  WAIT acts as FAIL
 * here. */
IDGEN_API int idgen_cached_gen_take_n_async(idgen_cached_gen_t *c, uint64_t *ids, size_t n,
                                            idgen_snowflake_wait_t *w);
/* Resumes a take_n_async that returned IDGEN_EAGAIN: 0 with ids[0..n),
 * IDGEN_EAGAIN again (w->due_ns updated), or an error (the IDs it had taken
 * are lost, never handed out). */
IDGEN_API int idgen_cached_gen_resume(idgen_cached_gen_t *c, idgen_snowflake_wait_t *w,
                                      uint64_t *ids);

typedef struct idgen_cached_stats {
  uint64_t slots;  /* the ring's size */
  uint64_t ready;  /* IDs ready now */
  uint64_t taken;  /* IDs handed out from the ring */
  uint64_t filled; /* IDs put into the ring */
  uint64_t fills;  /* the filler's batches */
  uint64_t empty;  /* takes that found the ring empty */
  uint64_t direct; /* of those, served by the generator directly */
  uint64_t waits;  /* of those, that waited for the filler */
  /* Scheduled refills that found the ring full (nothing is made then, so
   * nothing is dropped). */
  uint64_t rejected_puts;
  /* How far the next ready ID's time lags the wall clock now (negative:
   * ahead, borrowed); 0 when empty. */
  int64_t age_ms;
  int64_t age_max_ms; /* the largest age seen at a take (sampled) */
  int filler_error;   /* the filler's last error (IDGEN_E*), or 0 */
} idgen_cached_stats_t;

/* The generator under the cache (as given to idgen_cached_gen_new). */
IDGEN_API idgen_snowflake_gen_t *idgen_cached_gen_generator(const idgen_cached_gen_t *c);

/* The cache's counters.  Thread-safe. */
IDGEN_API void idgen_cached_gen_stats(idgen_cached_gen_t *c, idgen_cached_stats_t *st);

/* ------------------------------------------------------------------------
 * Randomness.
 *
 * ULID and UUIDv7 bits come from a cryptographically secure source.  The
 * default is OpenSSL's DRBG (seeded and reseeded from the kernel, and
 * fork-aware), read in 4 KiB blocks into a per-thread buffer: about 3 ns per
 * 10 bytes instead of about 400 ns per getrandom() call.  The buffer is
 * discarded in a child after fork(), so parent and child never share bits.
 * Tests may inject their own source through the settings structs below.
 */
/* Fills buf[0..n) with random bytes; returns 0, or a negative IDGEN_E*. */
typedef int (*idgen_random_fill_cb)(void *ctx, void *buf, size_t n);

typedef struct idgen_random {
  idgen_random_fill_cb fill;
  void *ctx;
} idgen_random_t;

/* Fills buf[0..n) from the default secure source.  Thread-safe.  Returns 0,
 * or IDGEN_ERANDOM if the source failed (the buffer is then unspecified). */
IDGEN_API int idgen_random_bytes(void *buf, size_t n);

/* ------------------------------------------------------------------------
 * UUIDs (RFC 9562) and UUIDv7 (RFC 9562 section 5.7).
 */
typedef struct idgen_uuid {
  uint8_t bytes[16]; /* big-endian, as on the wire */
} idgen_uuid_t;

#define IDGEN_UUID_STRLEN 36 /* "017f22e2-79b0-7cc3-98c4-dc0c0c07398f" */

/* Writes the lower-case 8-4-4-4-12 form and a NUL into out[37]. */
IDGEN_API void idgen_uuid_format(const idgen_uuid_t *u, char *out);

/*
 * Parses a UUID: 36 characters in the 8-4-4-4-12 form, optionally behind
 * "urn:uuid:" (any case), or 32 hex digits; hex digits in either case.
 * Returns 0, or IDGEN_EPARSE with a message naming the problem and its
 * position (1-based), such as "character 'g' at position 3 is not a hex digit".
 */
IDGEN_API int idgen_uuid_parse(idgen_uuid_t *u, const char *s, size_t len, char *err,
                               size_t errlen);

/* The version field (bits 48-51), 0..15. */
IDGEN_API int idgen_uuid_version(const idgen_uuid_t *u);
/* 1 if the variant is RFC 9562's ("10" in bits 64-65), else 0. */
IDGEN_API int idgen_uuid_is_rfc_variant(const idgen_uuid_t *u);
/* The Unix milliseconds of a version 7 UUID (its first 48 bits). */
IDGEN_API int64_t idgen_uuid7_time(const idgen_uuid_t *u);

/* Settings for the ULID and UUIDv7 generators; zero means default. */
typedef struct idgen_gen128_settings {
  idgen_clock_mode_t clock_mode; /* default IDGEN_CLOCK_FAST */
  const idgen_clock_t *clock;    /* injected clock, or NULL */
  const idgen_random_t *random;  /* injected randomness, or NULL (secure default) */
} idgen_gen128_settings_t;

/*
 * A monotonic UUIDv7 generator (RFC 9562 section 6.2, Method 1: a dedicated
 * counter).  After the 48-bit millisecond time and the version, 42 bits are a
 * counter (the 12 bits of rand_a and the top 30 bits of rand_b) and the last
 * 32 bits are fresh random bits in every UUID.  At each new millisecond the
 * counter starts at a random value below 2^41, so every UUID has at least 32
 * and usually 73 unpredictable bits.  Within one millisecond, and when the
 * clock steps back, the counter goes up by one; when it would overflow, the
 * time field moves one millisecond ahead of the clock instead (the generator
 * never repeats and never goes back).  Thread-safe (a short spin lock guards
 * 16 bytes of state), strictly increasing in real-time order.  In a child
 * after fork() it starts afresh from new random bits.
 */
typedef struct idgen_uuid7_gen idgen_uuid7_gen_t;

IDGEN_API int idgen_uuid7_gen_new(idgen_uuid7_gen_t **out, const idgen_gen128_settings_t *s);
IDGEN_API void idgen_uuid7_gen_free(idgen_uuid7_gen_t *g);
/* Returns 0, or IDGEN_ERANDOM, or IDGEN_ECLOCK for a clock before 1970 or
 * past the 48-bit horizon (year 10889). */
IDGEN_API int idgen_uuid7_gen_next(idgen_uuid7_gen_t *g, idgen_uuid_t *out);

/* A non-monotonic UUIDv7: time now, 74 random bits.  Thread-safe. */
IDGEN_API int idgen_uuid7_make(idgen_uuid_t *out);

/* ------------------------------------------------------------------------
 * ULID (https://github.com/ulid/spec): 48-bit Unix ms, 80 random bits,
 * 26 characters of Crockford's base32.
 */
typedef struct idgen_ulid {
  uint8_t bytes[16]; /* big-endian: 48-bit Unix ms, then 80 random bits */
} idgen_ulid_t;

#define IDGEN_ULID_STRLEN 26
#define IDGEN_ULID_MAX_MS INT64_C(281474976710655) /* 2^48 - 1 */

/* How idgen_ulid_parse() reads text. */
typedef enum idgen_ulid_parse_mode {
  IDGEN_ULID_STRICT = 0, /* exactly 26 characters of the alphabet */
  IDGEN_ULID_LENIENT = 1 /* also I and L as 1, O as 0, and '-' ignored */
} idgen_ulid_parse_mode_t;

/* A ULID for `unix_ms` (0..IDGEN_ULID_MAX_MS) with 80 fresh random bits from
 * `rnd` (NULL: the secure default).  IDGEN_ERANGE for a time out of range,
 * IDGEN_ERANDOM if the source failed. */
IDGEN_API int idgen_ulid_make(idgen_ulid_t *out, int64_t unix_ms, const idgen_random_t *rnd);

/* Writes the canonical 26 upper-case characters and a NUL into out[27]. */
IDGEN_API void idgen_ulid_format(const idgen_ulid_t *u, char *out);

/*
 * Decodes s[0..len).  Case-insensitive.  Strict mode: exactly 26 characters
 * of the Crockford alphabet, the first at most '7'.  Lenient mode
 * (IDGEN_ULID_LENIENT) also reads I and L as 1, O as 0, and ignores '-'.
 * 'U' is always an error.  Returns 0, or IDGEN_EPARSE / IDGEN_ERANGE
 * (overflow) with a message naming the problem and its position (1-based, in
 * the input as given), such as "ULID: character 'U' at position 5 is not in
 * the alphabet".
 */
IDGEN_API int idgen_ulid_parse(idgen_ulid_t *out, const char *s, size_t len,
                               idgen_ulid_parse_mode_t mode, char *err, size_t errlen);

/* The ULID's time, Unix milliseconds. */
IDGEN_API int64_t idgen_ulid_time(const idgen_ulid_t *u);

/* The same 128 bits as a UUID, and back (any UUID's bits make a valid ULID). */
IDGEN_API void idgen_ulid_to_uuid(const idgen_ulid_t *u, idgen_uuid_t *out);
IDGEN_API void idgen_ulid_from_uuid(const idgen_uuid_t *u, idgen_ulid_t *out);

/*
 * A monotonic ULID generator.  A new millisecond gets 80
 * fresh random bits; within the same millisecond, or when the clock stepped
 * back, the next ULID is the previous one plus 1 in its random part; when
 * that part is all ones, next() fails with IDGEN_EOVERFLOW rather than wrap
 * (it works again at a later millisecond).  Thread-safe, strictly increasing
 * in real-time order.  In a child after fork() it starts afresh from new
 * random bits, never from the parent's last value plus one.
 */
typedef struct idgen_ulid_gen idgen_ulid_gen_t;

IDGEN_API int idgen_ulid_gen_new(idgen_ulid_gen_t **out, const idgen_gen128_settings_t *s);
IDGEN_API void idgen_ulid_gen_free(idgen_ulid_gen_t *g);
/* Returns 0, IDGEN_EOVERFLOW, IDGEN_ERANDOM, or IDGEN_ECLOCK (clock outside
 * 1970..10889). */
IDGEN_API int idgen_ulid_gen_next(idgen_ulid_gen_t *g, idgen_ulid_t *out);
/* Same, with the time given instead of read from the clock (the last time
 * used still wins if it is later: monotonic). */
IDGEN_API int idgen_ulid_gen_next_at(idgen_ulid_gen_t *g, int64_t unix_ms, idgen_ulid_t *out);

/* ------------------------------------------------------------------------
 * Registry (libidgen-registry): node tuples leased across processes and
 * machines.  These functions are in their own library: link with
 * `pkg-config --libs idgen-registry` (which adds libidgen), not `idgen`
 * alone.  libpq and libcurl are loaded at run time, by the first
 * postgres:// or etcd:// registry opened.
 *
 * A registry is opened from a URI:
 *   "static"        the node values as given; nothing is coordinated;
 *   "file:DIR"      processes on one host: one lock file per node tuple under
 *                   DIR, held with flock for the life of the lease, the
 *                   high-water mark stored in it and fsync'ed;
 *   "postgres://…"  machines sharing a PostgreSQL database (a libpq URI):
 *                   tables idgen_nodes and idgen_pools, created if missing,
 *                   with lease expiry by the database's clock;
 *   "etcd://HOST:PORT[,HOST:PORT…]"  machines sharing an etcd v3 cluster,
 *                   through its JSON gateway (?cacert=&cert=&key= for TLS):
 *                   one key per tuple, leases by etcd's own leases.  etcd
 *                   keeps no pool-wide mark (below): a tuple whose keys are
 *                   deleted by hand starts again at the wall clock.
 *   "idgen://[AGENT:TOKEN@]HOST:PORT"  a tuple leased from a daemon run with
 *                   `idgen serve --leases`, which holds it in its own
 *                   registry (docs/SERVE.md, "Leases for clients");
 *                   "idgens://" for HTTPS (?cacert=FILE).  The mark step is
 *                   half the TTL; list and free are the daemon registry's.
 *
 * What a lease stands for.  A lease holds a whole node tuple: the values of
 * every node field of the layout, the leased field's assigned, the others
 * given.  Two holders on one registry never hold the same tuple, whichever
 * field each of them leases.  Tuples are compared by the bits they put in
 * the ID, not by field names: the registry keeps them in pools, one pool per
 * layout geometry (epoch, tick, and the positions of the time and sequence
 * fields), so layouts that differ only in names or in the time field's
 * width, and so make the same IDs, share a pool.  Layouts of different
 * geometry are other pools, but their IDs can be equal: the registry's ID
 * space (below, idgen_registry_space) refuses one beside the other.  Each
 * pool also keeps a pool-wide mark: a tuple whose record is new, removed or
 * replaced starts above it (see idgen_lease_row_t.pool_mark_ms).
 *
 * A lease is bound to a generator with idgen_snowflake_settings_t.lease.
 * One registry may be used from many threads; one lease from one thread at a
 * time (a bound generator's background thread counts as one).
 */

/* Bytes of a pool's name, such as
 * "epoch=1288834974657,tick=1ms,time@22,sequence@0:12", with its NUL. */
#define IDGEN_POOL_NAME_MAX 128
#define IDGEN_HOLDER_MAX 128 /* bytes of a holder's "host:pid:token", with its NUL */
#define IDGEN_REASON_MAX 256 /* bytes of a lease status's reason, with its NUL */
/* Bytes of a node tuple's text, such as "datacenter=1,worker=7", with its NUL. */
#define IDGEN_NODE_TEXT_MAX 768
/* Bytes of an ID space's name ("default", or [a-z][a-z0-9_-]*), with its NUL. */
#define IDGEN_SPACE_NAME_MAX 33

/* The leased field of layout `l` for a lease request naming `field` (NULL:
 * the default): `field` if it is a node field; else "worker" if the layout
 * has one; else the layout's only node field.  Returns its index, or
 * IDGEN_EINVAL with a message: no node field at all, `field` not a node
 * field, or several node fields and none named worker (name one). */
IDGEN_API int idgen_lease_field(const idgen_layout_t *l, const char *field, char *err,
                                size_t errlen);

/* The setting idgen_lease_settings_verify() blames; each front end names
 * it its own way (the command's flag, the daemon's config key, the
 * extension's GUC, the Node addon's option). */
typedef enum idgen_lease_setting {
  IDGEN_LEASE_SETTING_NONE = 0,     /* no rule broken */
  IDGEN_LEASE_SETTING_REGISTRY = 1, /* the registry URI */
  IDGEN_LEASE_SETTING_LAYOUT = 2,   /* the layout */
  IDGEN_LEASE_SETTING_NODE = 3,     /* the node values given */
  IDGEN_LEASE_SETTING_FIELD = 4     /* the leased field */
} idgen_lease_setting_t;

/* What idgen_lease_settings_verify() checks (in) and finds (out). */
typedef struct idgen_lease_settings {
  /* In: the registry, as idgen_registry_open() takes it (nothing is
   * opened). */
  const char *uri;
  /* In: the layout. */
  const idgen_layout_t *layout;
  /* In: the leased field; NULL: the default (idgen_lease_field). */
  const char *field;
  /* In: bit i set: node field i was given a value, as
   * idgen_layout_nodes_parse() sets it. */
  unsigned node_given;
  /* In: nonzero: some node value came from the host (@ip, @mac). */
  int node_from_host;
  /* Out: the leased field's index; -1 for static or on failure. */
  int leased;
  /* Out: the setting to blame on failure; IDGEN_LEASE_SETTING_NONE on
   * success. */
  idgen_lease_setting_t blame;
} idgen_lease_settings_t;

/*
 * The rules between a registry, its leased field and the node values given,
 * which every front end applies (the command, the daemon, the extension,
 * the Node addon):
 *   - s->field (NULL: the default) must be a node field of s->layout;
 *   - node values from the host (s->node_from_host) are unchecked, so only
 *     the `static` registry takes them;
 *   - `static` leases nothing, so it takes no field;
 *   - any other registry assigns the leased field (idgen_lease_field), so
 *     it must not be among the values given (s->node_given).
 * Returns 0 with s->leased the leased field's index (-1 for static), or
 * IDGEN_EINVAL with the first broken rule's message in err and s->blame
 * the setting to blame, for the caller's prefix.  Pure and thread-safe.
 */
IDGEN_API int idgen_lease_settings_verify(idgen_lease_settings_t *s, char *err, size_t errlen);

/* deprecated: use idgen_lease_settings_verify().  The same check with its
 * inputs as arguments; *setting is the name of the setting to blame
 * ("registry", "layout", "node" or "lease_field", the daemon's config
 * keys), "" on success. */
IDGEN_API int idgen_lease_settings_check(const char *uri, const idgen_layout_t *l,
                                         const char *field, unsigned node_given, int node_from_host,
                                         int *leased, const char **setting, char *err,
                                         size_t errlen);

/* Opens the registry named by `uri`.  A relative file: directory is made
 * absolute here, once, from the working directory (idgen_registry_uri()
 * gives the result).  IDGEN_EINVAL with a message for an unknown scheme or a
 * bad URI; IDGEN_EREGISTRY if it cannot be reached (file: creates DIR if
 * needed).  Close with idgen_registry_close(). */
IDGEN_API int idgen_registry_open(idgen_registry_t **out, const char *uri, char *err,
                                  size_t errlen);
/* Checks a registry URI without opening it (no network I/O): a known scheme
 * with a well-formed argument (static: none; file: a directory name;
 * postgres:// a URI libpq can parse; etcd:// a list of endpoints).  For
 * postgres:// it loads libpq (the first time; its only file access); where
 * libpq cannot be loaded the URI is left to idgen_registry_open, which names
 * the missing library.  0, or IDGEN_EINVAL with the message
 * idgen_registry_open would give. */
IDGEN_API int idgen_registry_check(const char *uri, char *err, size_t errlen);

/* How far this host's wall clock is ahead of the registry's own (negative:
 * behind), read once now: *skew_ms, the registry's time *registry_ms, and
 * *uncertainty_ms (half the round trip, + 1).  IDGEN_EINVAL for a registry
 * whose time is this host's (static, file:); IDGEN_EREGISTRY. */
IDGEN_API int idgen_registry_clock_skew(idgen_registry_t *r, int64_t *skew_ms, int64_t *registry_ms,
                                        int64_t *uncertainty_ms, char *err, size_t errlen);

/* Closes `r`; its leases must have been released first. */
IDGEN_API void idgen_registry_close(idgen_registry_t *r);

/* The registry's URI as opened, with a file: directory made absolute and
 * free of "." and ".." parts ("file:/home/me/var/idgen"), and every secret
 * masked as idgen_registry_uri_redact() masks it: what logs, listings and
 * status pages show.  Lives as long as `r`. */
IDGEN_API const char *idgen_registry_uri(const idgen_registry_t *r);

/* `uri` with its secrets masked, into buf[n] (cut to fit; always
 * NUL-terminated when n > 0): the password of the user info
 * ("postgres://app:***@db/ids", "etcd://root:***@10.0.0.1:2379") and the
 * value of every query parameter that holds one, `password` and
 * `sslpassword` however spelled (case, percent-encoding): "?password=***".
 * Everything else is kept, so the result still names the registry.  Every
 * front end shows a registry URI only through it.  Pure and thread-safe;
 * returns buf.  A buffer of 2 * strlen(uri) + 16 bytes always fits. */
IDGEN_API char *idgen_registry_uri_redact(const char *uri, char *buf, size_t n);

/* `uri` in the ID space `space` (below, idgen_registry_space), into buf[n]:
 * the URI with ?space=NAME, or with &space=NAME after its other
 * parameters (sslmode=require and the like); `space` NULL or "": `uri` as
 * it is.  What every front end
 * makes of a space given beside the registry (`idgen serve`'s `space`,
 * `idgen registry --space`, the extension's idgen.space).  IDGEN_EINVAL
 * with a message in err[errlen] (err may be NULL) for the static registry,
 * which keeps no ID spaces, a URI that names a space already (a space=
 * parameter), or a name that is not a space name; IDGEN_ERANGE if the
 * result does not fit in n bytes (strlen(uri) + IDGEN_SPACE_NAME_MAX + 8
 * always does).  Messages begin "registry: ", as idgen_registry_check()'s,
 * and quote no secret of the URI.  The rest of the URI is not checked here
 * (idgen_registry_check() does).  Pure and thread-safe; buf is "" on
 * failure (n > 0). */
IDGEN_API int idgen_registry_uri_with_space(const char *uri, const char *space, char *buf, size_t n,
                                            char *err, size_t errlen);

/*
 * The default registry into buf[n]: the host's, "file:/var/lib/idgen", one
 * for every user's processes (docs/DESIGN.md §11, "The default registry";
 * the test registry.default).  It is never another directory: a
 * process that may not use it -- it exists and this user may not write it,
 * or it is shared with a group (set-group-ID) this user is not in, or it
 * does not exist and this user may not make it -- gets IDGEN_EINVAL with a
 * message naming the directory, the user and what to do (join its group,
 * share it, or give a registry by name), and the earlier versions'
 * per-user directory if one exists.  The answer depends neither on the
 * working directory nor on the environment.  Also IDGEN_EINVAL when `buf`
 * is too small.  Creates nothing.
 */
IDGEN_API int idgen_registry_default_uri(char *buf, size_t n, char *err, size_t errlen);

/*
 * Node values from the host, for those who want no registry (Twitter's
 * Snowflake took the machine's MAC or IP; Sonyflake's default machine ID is the low 16 bits
 * of the IPv4 address).  Both come from the interface of the host's default
 * route, read from the kernel (rtnetlink, nothing is sent): the IPv4 default
 * route of the main table with the lowest metric, or the IPv6 one on a host
 * with none.  `source` is
 *   "@ip":  the low `bits` bits of that interface's address the kernel sends
 *           from (for IPv4 the route's preferred source, else the first
 *           primary address whose subnet holds the gateway, else the first
 *           primary one; for IPv6 the preferred source, else a global
 *           address neither temporary, deprecated nor tentative, static
 *           ones first, then the lowest);
 *   "@mac": the low `bits` bits of that interface's MAC address.
 * Refused (IDGEN_ERANGE), never passed over for another interface: no
 * default route in the main table; a default route via a bridge or, by
 * name, a virtual interface of containers or VMs (docker*, br-*, virbr*,
 * veth*, cni*); an address many hosts hold by convention (Docker's default
 * bridge network 172.17.0.0/16, Podman's 10.88.0.0/16, libvirt's
 * 192.168.122.0/24, the user-mode NAT guest 10.0.2.15, slirp4netns's
 * 10.0.2.100, and any address whose interface has the MAC Docker makes from
 * it, 02:42 and its four bytes; for "@mac" such a MAC, 02:42:ac:11:*, and
 * QEMU's default 52:54:00:12:34:56); an interface without such an address.
 * The message names the default routes and the interfaces found.
 * Fills out (the value, the interface, the address as text); zeroes it on
 * failure.  IDGEN_EINVAL for another source; IDGEN_ENOMEM.  Thread-safe.
 * UNCHECKED: two hosts whose addresses share those low bits get the same
 * value and make the same IDs (Sonyflake's users met it in Kubernetes); a
 * registry leases node values and checks them.
 */
#define IDGEN_IFNAME_MAX 16
typedef struct idgen_host_value {
  uint64_t value;
  char iface[IDGEN_IFNAME_MAX];
  char addr[48]; /* "10.1.2.3" or "02:00:00:ab:cd:ef" */
} idgen_host_value_t;

IDGEN_API int idgen_host_node_value(const char *source, unsigned bits, idgen_host_value_t *out,
                                    char *err, size_t errlen);

/* Bytes of the text idgen_host_node_resolve() keeps, with its NUL. */
#define IDGEN_HOST_NODES_MAX 512

/*
 * idgen_host_node_value() as an idgen_node_resolve_cb, for
 * idgen_layout_nodes_parse(): "worker=@ip" takes the low bits of the
 * address.  `ctx` is NULL, or a string of IDGEN_HOST_NODES_MAX bytes (""
 * at first) to which each value taken is added, for the log and status
 * pages: "worker=@ip eth0 10.1.2.3 -> 3", comma-separated.  Errors as
 * idgen_host_node_value().  Thread-safe for distinct ctx.
 */
IDGEN_API int idgen_host_node_resolve(void *ctx, const char *field, unsigned bits,
                                      const char *source, uint64_t *value, char *err,
                                      size_t errlen);

#define IDGEN_START_WAIT_MS_DEFAULT 10000
/* max_start_wait_ms's value for its default (see idgen_lease_request_t). */
#define IDGEN_START_WAIT_DEFAULT (-1)
#define IDGEN_START_WAIT_MS_MAX 3600000
#define IDGEN_LEASE_TTL_DEFAULT_MS 10000
#define IDGEN_LEASE_TTL_MIN_MS 300
#define IDGEN_LEASE_TTL_MAX_MS 3600000
/* How long a call to a file: registry may be held by its file system
 * (frozen, a hung mount) before it fails with IDGEN_EREGISTRY: a renewal,
 * a mark write and a release; an acquisition may take max_start_wait_ms
 * more.  The call goes on in the background and gives back what it takes;
 * a lease released so is freed when its file system answers.  The network
 * registries bound their calls with their own time-outs. */
#define IDGEN_REGISTRY_CALL_MS 2000

/* 0 if a lease TTL of `ttl_ms` is within IDGEN_LEASE_TTL_MIN_MS and
 * IDGEN_LEASE_TTL_MAX_MS, else IDGEN_EINVAL with the message every front
 * end shows ("lease TTL 100 ms is not from 300 to 3600000"). */
IDGEN_API int idgen_lease_ttl_check(int64_t ttl_ms, char *err, size_t errlen);

typedef struct idgen_lease_request {
  const idgen_layout_t *layout;
  /* Node values by layout field index: with the leased field's assigned
   * value, they make the tuple the lease holds; the leased field's entry is
   * ignored. */
  const uint64_t *node;
  /* The leased field: NULL for "worker" if the layout has one, else its
   * only node field. */
  const char *field;
  /* How long acquisition may wait for a free ID's mark to fall behind the
   * wall clock, at most IDGEN_START_WAIT_MS_MAX; IDGEN_START_WAIT_DEFAULT
   * (any value < 0) for the default IDGEN_START_WAIT_MS_DEFAULT.
   * Unless said: 0 is no waiting, not the default (it has always meant
   * that, and zeroed requests rely on it). */
  int64_t max_start_wait_ms;
  /* An injected clock for the wall time and the start wait, or NULL. */
  const idgen_clock_t *clock;
  /* Lease TTL in ms (0: IDGEN_LEASE_TTL_DEFAULT_MS; at least
   * IDGEN_LEASE_TTL_MIN_MS, at most IDGEN_LEASE_TTL_MAX_MS); the lease is
   * renewed at a third of it.  For
   * file: the lease lasts as long as the process, and the TTL only paces the
   * checks that its lock file is still the one in DIR. */
  int64_t ttl_ms;
  /* How long an expired worker ID stays out of the pool (0: the default,
   * one TTL). */
  int64_t quarantine_ms;
  /* How far ahead a bound generator keeps the mark (0: the backend's
   * default, 1000 for file:, the TTL for network registries). */
  int64_t mark_step_ms;
  /* When every free ID's mark is ahead of the wall clock, the start wait
   * ends this much early: the generator starts above the mark by borrowing
   * (bounded).  Pass the generator's max_borrow_ms.  Default 0 (no
   * borrowing). */
  int64_t start_borrow_ms;
} idgen_lease_request_t;

/*
 * Leases the lowest free value of the leased field, with the other node
 * fields as given, whose tuple's high-water mark is behind the wall clock
 * (durable); if every free one's mark is ahead, the one with the
 * lowest mark, after waiting until the clock passes it (at most
 * max_start_wait_ms).  A value is free when no live holder holds its tuple,
 * whatever field that holder leased.  Errors, each with a message in `err`:
 *   IDGEN_EINVAL     no node field to lease, or `field` is not a node field,
 *                    or a bad TTL;
 *   IDGEN_EPOOLFULL  every value of the leased field is held (names the
 *                    field, its size and the other node values);
 *   IDGEN_ESPACE     a layout whose IDs could equal this one's holds the
 *                    registry's ID space (names it, its holders and the
 *                    remedy), or the space issued IDs above all of this
 *                    layout's;
 *   IDGEN_ECLOCK     every free value's mark is ahead by more than the
 *                    start wait (names how long until one can start), or
 *                    the layout takes the ID space over above IDs it can
 *                    reach only later than that (names the date);
 *   IDGEN_EREGISTRY  the registry failed (names the file or server error).
 * Thread-safe for distinct leases.  Release with idgen_lease_release().
 */
IDGEN_API int idgen_registry_acquire(idgen_registry_t *r, const idgen_lease_request_t *req,
                                     idgen_lease_t **out, char *err, size_t errlen);

/*
 * For a lease service (the daemon's `--leases`, SERVE.md "Leases for clients"), which holds
 * tuples in its registry on behalf of clients that cannot reach it:
 * idgen_registry_acquire() with the holder name written in the registry
 * given (`holder`: 1..IDGEN_HOLDER_MAX-1 printable bytes, no spaces; the
 * service writes "CLIENT via SERVICE"), so that `registry list` names the
 * client.  Errors as idgen_registry_acquire(); IDGEN_EINVAL for a bad
 * holder.
 */
IDGEN_API int idgen_registry_acquire_for(idgen_registry_t *r, const idgen_lease_request_t *req,
                                         const char *holder, idgen_lease_t **out, char *err,
                                         size_t errlen);

/*
 * Takes over a lease granted earlier by this registry to a process that has
 * stopped (a lease service restarted): the tuple `key` of req's pool
 * (req->layout, req->field),
 * granted at `generation` to `holder`; req->node holds the tuple's other
 * node values (the key must agree).  0 with *out a lease as
 * idgen_registry_acquire() gives (its mark_ms the tuple's recorded mark,
 * its floor_ms its layout's floor in the space, its holder now
 * `new_holder`, or `holder` when NULL), renewed, when the registry still
 * shows that grant, held:
 *   file:     nobody holds its lock (a live process's lock is never taken),
 *             its holder recorded a mark above the floor, and its layout is
 *             still in the ID space (a grant whose mark is at or below the
 *             floor may predate another layout's takeover of the space);
 *   network   it has not expired.  The registry cannot tell a stopped
 *             holder from a live one: a live one is fenced out (its next
 *             renewal or mark write gets IDGEN_ELEASE), so whether it may
 *             be taken over is the caller's to check (a lease service: its
 *             client's secret).
 * IDGEN_ELEASE when it does not (granted again, released, freed, expired,
 * another holder recorded, a lock held by a live process; and for the
 * static registry, which keeps no grants), IDGEN_EREGISTRY when the
 * registry cannot be reached (or, file:, a call held past
 * IDGEN_REGISTRY_CALL_MS by its file system), IDGEN_EINVAL for a bad
 * holder or a key outside req's node values.  The generation stays: the
 * holder that wrote under it may go on.
 */
IDGEN_API int idgen_registry_adopt(idgen_registry_t *r, const idgen_lease_request_t *req,
                                   uint64_t key, uint64_t generation, const char *holder,
                                   const char *new_holder, idgen_lease_t **out, char *err,
                                   size_t errlen);

/* What idgen_registry_bind() binds. */
typedef struct idgen_bind_request {
  const idgen_layout_t *layout;
  /* The generator's settings (NULL: idgen_snowflake_settings_init's): its
   * node values (the leased field's is the registry's), clock, and
   * max_borrow_ms, which the start may borrow. */
  const idgen_snowflake_settings_t *settings;
  const char *field; /* the leased field; NULL: see idgen_lease_field */
  int64_t ttl_ms;    /* as in idgen_lease_request_t (0: the default) */
  /* As in idgen_lease_request_t.  Unless said: 0 is no waiting, not the
   * default (that is IDGEN_START_WAIT_DEFAULT). */
  int64_t max_start_wait_ms;
  /* NULL: the generator is allocated (idgen_snowflake_gen_new).  Else the
   * generator is made here by idgen_snowflake_gen_init_shared() (its rules:
   * at least idgen_snowflake_gen_shared_size() bytes, aligned to 64, shared
   * by the processes that use it), and ended with
   * idgen_snowflake_gen_fini_shared() instead of freed. */
  void *mem;
  /* The bytes at mem: a size below idgen_snowflake_gen_shared_size() is
   * IDGEN_EINVAL, before anything is leased (so 0 with a mem is refused). */
  size_t mem_size;
} idgen_bind_request_t;

/*
 * A generator bound to a lease, in one call: leases a node tuple of
 * req->layout from `r` (req->settings' node values and clock, req->field,
 * req->ttl_ms, req->max_start_wait_ms) and makes a generator with
 * req->settings bound to it, whose start may borrow up to max_borrow_ms.
 * On success *g is the generator (req->mem when given) and *lease its lease
 * (end the generator first, then release the lease).  With the `static`
 * registry nothing is leased: *lease is NULL and *g takes the node values as
 * given (no lease, no keeper thread); a `field` is then IDGEN_EINVAL.
 * Errors as idgen_registry_acquire and idgen_snowflake_gen_new (or
 * idgen_snowflake_gen_init_shared), with a message in err; on failure
 * nothing is held.
 */
IDGEN_API int idgen_registry_bind(idgen_registry_t *r, const idgen_bind_request_t *req,
                                  idgen_lease_t **lease, idgen_snowflake_gen_t **g, char *err,
                                  size_t errlen);

typedef struct idgen_lease_info {
  int field;            /* layout field index of the leased field */
  uint64_t worker;      /* its value */
  uint64_t key;         /* the tuple: every node field's bits, in place in the ID */
  uint64_t generation;  /* fencing generation of this grant */
  int64_t mark_ms;      /* the recorded high-water mark: Unix ms (0: none) */
  int64_t ttl_ms;       /* the lease's TTL */
  int64_t mark_step_ms; /* how far ahead a bound generator keeps the mark */
  /* Expiry by the registry's clock at the last renewal, Unix ms; 0 when the
   * lease does not expire (static, file:). */
  int64_t expires_ms;
  /* The same as a duration measured by the registry at that renewal; -1
   * when none. */
  int64_t expires_in_ms;
  char holder[IDGEN_HOLDER_MAX];  /* "host:pid:token" */
  char pool[IDGEN_POOL_NAME_MAX]; /* "epoch=1288834974657,tick=1ms,time@22,sequence@0:12" */
  char node[IDGEN_NODE_TEXT_MAX]; /* the tuple: "datacenter=1,worker=7" */
  /* The floor of its layout in the registry's ID space, Unix ms: a bound
   * generator starts above it as above mark_ms (0: none). */
  int64_t floor_ms;
  char space[IDGEN_SPACE_NAME_MAX]; /* the ID space ("default", or its name) */
} idgen_lease_info_t;

IDGEN_API void idgen_lease_info(const idgen_lease_t *l, idgen_lease_info_t *out);

/* Records in stable storage that IDs up to Unix ms `mark_ms` may have been
 * issued (durable); the mark never goes back (a lower value is a no-op).
 * Conditional on the lease's fencing generation.  The pool-wide mark is
 * raised first where the backend keeps one (file:).  Returns 0, IDGEN_ELEASE
 * if the lease is lost (fenced out, or for file: its lock file was removed
 * or replaced), IDGEN_EFORKED in a child process, or IDGEN_EREGISTRY, with a
 * message in err (NULL is fine). */
IDGEN_API int idgen_lease_record_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen);

/* Renews the lease, conditional on its fencing generation: 0, IDGEN_ELEASE
 * (fenced out: someone else may hold the ID), IDGEN_EREGISTRY (not reached;
 * the lease may still be valid), IDGEN_EFORKED. */
IDGEN_API int idgen_lease_renew(idgen_lease_t *l, char *err, size_t errlen);

/* Gives the tuple back at once (its mark stays) and frees `l` (NULL is
 * fine).  A generator bound to `l` must have been freed. */
IDGEN_API void idgen_lease_release(idgen_lease_t *l);

/* One node tuple of a registry, as idgen_registry_list() reports it. */
typedef enum idgen_lease_state {
  IDGEN_LEASE_FREE = 0, /* can be acquired */
  /* Held (file: locked by a live process; network: not expired by the
   * registry's clock). */
  IDGEN_LEASE_HELD = 1,
  IDGEN_LEASE_QUARANTINE = 2 /* expired or freed, not yet back in the pool */
} idgen_lease_state_t;

typedef struct idgen_lease_row {
  char pool[IDGEN_POOL_NAME_MAX]; /* the pool (layout geometry) */
  /* The layout the pool was first used with, canonical; "" if unknown. */
  char layout[IDGEN_LAYOUT_SPEC_MAX];
  uint64_t key; /* the tuple's bits in the ID */
  /* The tuple in `layout`'s field names, "datacenter=1,worker=7"; the key
   * in hex ("0x0000000000021000") if unknown. */
  char node[IDGEN_NODE_TEXT_MAX];
  idgen_lease_state_t state;
  uint64_t generation; /* of the last grant */
  /* The recorded high-water mark, Unix ms, by the holders' clocks. */
  int64_t mark_ms;
  /* Held: until it expires; quarantine: until it is free again; measured by
   * the registry's clock; -1: none (file:, or free). */
  int64_t expires_in_ms;
  /* The pool-wide mark, Unix ms: a tuple whose record is new, removed or
   * replaced starts above it (file: every mark ever recorded in the pool;
   * postgres: the marks of deleted rows). */
  int64_t pool_mark_ms;
  char holder[IDGEN_HOLDER_MAX];    /* the last holder ("" if never held or freed) */
  char space[IDGEN_SPACE_NAME_MAX]; /* the ID space of the pool ("default", or its name) */
} idgen_lease_row_t;

/* One row of idgen_registry_list(); nonzero stops the walk. */
typedef int (*idgen_registry_list_cb)(void *ctx, const idgen_lease_row_t *row);

/* Calls cb once per node tuple the registry knows of (tuples never leased
 * are not listed), pool by pool, in increasing key order; a nonzero return
 * from cb stops the walk and is returned.  IDGEN_EREGISTRY on failure. */
IDGEN_API int idgen_registry_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx,
                                  char *err, size_t errlen);

/*
 * ID spaces (docs/DESIGN.md §11).  Every holder of one registry draws from one
 * ID space, whatever its layout: the default space, or the space named by
 * the URI's `space=NAME` parameter (file:DIR?space=billing,
 * postgres://h/db?space=billing, etcd://h:2379?space=billing), whose pools
 * and marks are its own.  A layout whose IDs could equal those of a layout
 * live in the space is refused (IDGEN_ESPACE, naming that layout, its
 * holders and the remedy); once the other layout's holders have stopped
 * (and their quarantine passed), it takes the space over above the highest
 * ID the space issued.  Layouts whose ID ranges cannot meet share a space.
 */
#define IDGEN_SPACE_LAYOUTS_MAX 16

/* The registry's ID space: "default", or the name its URI gave. */
IDGEN_API const char *idgen_registry_space(const idgen_registry_t *r);

typedef struct idgen_space_layout {
  char pool[IDGEN_POOL_NAME_MAX];     /* its geometry, as in idgen_lease_row_t */
  char layout[IDGEN_LAYOUT_SPEC_MAX]; /* canonical spec */
  int64_t floor_ms;                   /* its holders start above this time, Unix ms */
  int live;                           /* tuples of its pool held or in quarantine now */
  int has_highest;                    /* highest_id is set: its pool has a mark */
  uint64_t highest_id;                /* at or above every ID its pool may have issued */
} idgen_space_layout_t;

typedef struct idgen_space_info {
  char name[IDGEN_SPACE_NAME_MAX];
  int has_highest; /* highest_id is set: the space issued IDs */
  /* At or above every ID the space may have issued, by its layouts' marks
   * and those that left. */
  uint64_t highest_id;
  int has_retired;
  uint64_t retired_highest; /* the same, of the layouts that left only */
  int nlayouts;
  idgen_space_layout_t layouts[IDGEN_SPACE_LAYOUTS_MAX];
} idgen_space_info_t;

typedef int (*idgen_registry_spaces_cb)(void *ctx, const idgen_space_info_t *info);

/* Calls cb once per ID space of the registry (only its own when its URI
 * named one), in name order with "default" first; a nonzero return from cb
 * stops the walk and is returned.  0 for `static` (it keeps nothing);
 * IDGEN_EREGISTRY on failure. */
IDGEN_API int idgen_registry_spaces(idgen_registry_t *r, idgen_registry_spaces_cb cb, void *ctx,
                                    char *err, size_t errlen);

/* Frees the lease of tuple `node` in `pool` by hand: `node` as listed
 * ("datacenter=1,worker=7", in the pool's layout), or its key in hex
 * ("0x0000000000021000").  A lease whose holder is alive is refused
 * (IDGEN_ELEASE) unless `force`; a forced free fences the holder out (its
 * next renewal or mark write fails).  The quarantine is never skipped.
 * file: cannot take a lock from a live process, so there a held lease is
 * always refused (stop the holder: its tuple is free at once).  0 when freed
 * or already free (err says which); IDGEN_EINVAL for an unknown pool or
 * tuple; IDGEN_EREGISTRY. */
IDGEN_API int idgen_registry_free(idgen_registry_t *r, const char *pool, const char *node,
                                  int force, char *err, size_t errlen);

/* The lease state of a bound generator (idgen_snowflake_settings_t.lease). */
typedef struct idgen_snowflake_lease_status {
  int bound; /* 0: not bound (the rest is zero) */
  /* 1 while IDs can be issued as far as the lease goes: the lease is known
   * valid by the monotonic clock.  0 after the deadline passed without a
   * renewal (the registry could not be reached: renewals go on, and a
   * later success restores it) or after a fenced-out write (for good). */
  int valid;
  int fenced; /* 1: fenced out (someone else may hold the ID); final */
  /* How long it is still known valid; 0 if not; INT64_MAX for a lease that
   * cannot expire (file:). */
  int64_t valid_ms;
  /* The lease as of its last registry call, as idgen_lease_info() gives it,
   * but for two fields measured now: lease.mark_ms is the durable
   * high-water mark the generator keeps (Unix ms, this host's clock), and
   * lease.expires_in_ms how long until the registry expires it: its own
   * measure at the last renewal less the time since (monotonic); -1 when
   * it does not expire. */
  idgen_lease_info_t lease;
  uint64_t renewals, renew_failures, mark_writes, mark_waits;
  uint64_t mark_failures;        /* mark writes that failed (not fenced) */
  int mark_failing;              /* the last mark write failed */
  char reason[IDGEN_REASON_MAX]; /* why it is not valid, or the last failure; "" */
} idgen_snowflake_lease_status_t;

/*
 * Fills *st (zero when `g` is not bound, or in a forked child).  Takes the
 * binding's lock briefly: for monitoring, not for every ID.  In libidgen,
 * with the generator.  The name is a macro for the symbol
 * idgen_snowflake_gen_lease_status2: the symbol idgen_snowflake_gen_lease_status
 * stays, for programs built with 0.1.0's header, and fills that version's
 * struct (the lease's fields in place, not embedded).
 */
IDGEN_API void idgen_snowflake_gen_lease_status2(idgen_snowflake_gen_t *g,
                                                 idgen_snowflake_lease_status_t *st);
#define idgen_snowflake_gen_lease_status idgen_snowflake_gen_lease_status2

/* ------------------------------------------------------------------------
 * Sequences (docs/DESIGN.md "Sequences"): dense numbers from a registry.
 *
 * A sequence is a named 63-bit counter in a registry's ID space (file:,
 * postgres://, etcd://, idgen://; not static).  A holder -- one
 * idgen_seq_t, one open of one sequence in one process -- claims ranges
 * [a, a+step) of the counter and hands numbers out of them in memory:
 *
 *   S1 unique      a number is issued at most once, whatever the threads,
 *                  processes, machines, restarts and pauses: a range is
 *                  claimed by one conditional write and never claimed again
 *                  (only its holder gives back what it never issued, and
 *                  only while nobody claimed after it);
 *   S2 increasing  one holder's numbers strictly increase; a strict
 *                  sequence has one holder at a time, which starts above
 *                  every number claimed before it;
 *   S3 counted     the registry counts, per sequence, the numbers claimed,
 *                  issued (as its holders report them), given back and lost
 *                  (the rest of a crashed or reaped holder's ranges).
 *
 * Each holder is registered in the sequence's record with a fencing
 * generation (grown by every open) and an expiry by the registry's clock,
 * renewed at a third of ttl_ms.  Every claim is conditional on the holder's
 * entry still being there with its generation: a holder that was paused
 * past its expiry and reaped (its unissued numbers counted lost) gets
 * IDGEN_ELEASE on its next claim, drops the ranges in hand and registers
 * anew.  A strict sequence's claims are also conditional on the holder
 * being its owner, and the owner stops issuing once it cannot show its
 * entry valid by its own clock (as a lease, G4).
 */
typedef struct idgen_seq idgen_seq_t;

#define IDGEN_SEQ_NAME_MAX 65 /* bytes of a name, [a-z][a-z0-9_-]{0,63}, with its NUL */
/* Bytes of a counter's key: the name, '@' and a period ("orders@20261203"). */
#define IDGEN_SEQ_KEY_MAX (IDGEN_SEQ_NAME_MAX + 64)
#define IDGEN_SEQ_COUNTER_MAX ((uint64_t)INT64_MAX) /* the highest number */

/* 0, or IDGEN_EINVAL naming what is wrong with `name`. */
IDGEN_API int idgen_seq_name_check(const char *name, char *err, size_t errlen);

/* Zero means "the default" for every member (idgen_seq_settings_init
 * writes the defaults). */
typedef struct idgen_seq_settings {
  uint64_t min_step;         /* default 1,000 */
  uint64_t max_step;         /* default 100,000,000 (at most 2^39) */
  uint64_t step;             /* the first claim's; default min_step */
  double prefetch;           /* claim ahead once this share of a range is
                              * used; (0, 1), default 0.25 */
  int ahead;                 /* ranges kept claimed ahead, 1..4, default 1 */
  int64_t segment_target_ms; /* default 60,000: the step doubles when a range
                              * lasts less, halves when it lasts over twice */
  int64_t ttl_ms;            /* the holder's entry; default 10,000 */
  int64_t wait_ms;           /* how long next() waits for a claim when nothing
                              * is in hand; default 5,000; -1: not at all */
  int strict;                /* one holder at a time (see above) */
  /* Business numbers: a template (idgen_seq_format_parse) and its time
   * zone (NULL: UTC).  With a {date:...} field the counter restarts each
   * period: the holder claims from the counter "NAME@PERIOD". */
  const char *format;
  const char *tz;
  const char *holder;         /* this holder's name; NULL: "host:pid:token" */
  const idgen_clock_t *clock; /* NULL: the system's (Unix ns) */
  int no_thread;              /* nonzero: no background thread; claims and
                             * renewals run in the callers (tests, one-shot
                             * tools) */
} idgen_seq_settings_t;

IDGEN_API void idgen_seq_settings_init(idgen_seq_settings_t *s);

/* Opens sequence `name` (created at 1 if the registry has none) in r's
 * space: registers the holder and claims a first range (unless
 * s->no_thread, where the first next() claims).  r must outlive the
 * sequence.  IDGEN_EINVAL naming a bad name or setting; IDGEN_EREGISTRY
 * when the registry cannot be reached; IDGEN_ELEASE when a strict
 * sequence is held by another live holder (the message names it and when
 * its entry expires); IDGEN_EPOOLFULL when it has IDGEN_SEQ_HOLDERS_MAX
 * live holders (a holder fenced out then tries again at its next claim). */
IDGEN_API int idgen_seq_open(idgen_seq_t **out, idgen_registry_t *r, const char *name,
                             const idgen_seq_settings_t *s, char *err, size_t errlen);

/* One number.  Thread-safe; without waiting while a claimed range has
 * numbers.  When none is in hand, waits for the claim under way at most
 * wait_ms, then IDGEN_EREGISTRY (the registry cannot be reached, or the
 * claim under way has had no answer for a second), IDGEN_ELEASE (fenced
 * out and could not register again) or IDGEN_EAGAIN (nothing failed: the
 * claim under way is younger than a second; with wait_ms -1, a burst that
 * outran the claim ahead).  IDGEN_ERANGE
 * past 2^63-1; IDGEN_EFORKED in a forked child. */
IDGEN_API int idgen_seq_next(idgen_seq_t *s, uint64_t *n);
/* n numbers into out[] (each increasing, not always adjacent): 0, or an
 * error as next's.  On an error the numbers taken before it (a prefix of
 * out[]) are spent: never issued again, counted as issued; the rest of
 * out[] is left as it was.  Numbers are at least 1, so a caller that sets
 * out[] to 0 first finds the prefix's length at the first 0. */
IDGEN_API int idgen_seq_next_n(idgen_seq_t *s, uint64_t *out, size_t n);
/* A business number: the template rendered with the next number of the
 * current period's counter, into buf[buflen]; its length, or a negative
 * error (IDGEN_EINVAL: the sequence has no format; IDGEN_ERANGE: buf too
 * small; IDGEN_EFORKED in a forked child; else as next's).  *n (may be
 * NULL) gets the counter's number. */
IDGEN_API int idgen_seq_next_text(idgen_seq_t *s, char *buf, size_t buflen, uint64_t *n);

/* Stops: no claim after it; gives back the unissued rest of the last
 * ranges when nobody claimed after them, reports what was issued and
 * removes the holder's entry (best effort: on failure the entry expires
 * and is reaped).  Calls waiting for a claim are woken (IDGEN_ELEASE) and
 * waited for; as with free(), no other call may be running on s or come
 * after (the Node.js and Python objects count their calls and close when
 * the last one returns). */
IDGEN_API void idgen_seq_close(idgen_seq_t *s);

typedef struct idgen_seq_stats {
  char key[IDGEN_SEQ_KEY_MAX]; /* the counter in use */
  uint64_t generation;         /* this holder's */
  uint64_t step;               /* the next claim's */
  uint64_t in_hand;            /* numbers claimed here, not yet issued */
  uint64_t issued, claimed, claims, given_back;
  uint64_t claim_failures;             /* claims that failed (the last error: reason) */
  int failing;                         /* the last claim or renewal failed */
  double rate;                         /* numbers per second, recent */
  int64_t lasts_ms;                    /* how long in_hand lasts at that rate; -1: no rate */
  int64_t claim_ns_last, claim_ns_max; /* claim latency */
  int64_t claim_running_ms;            /* how long the claim under way has run; -1: none */
  char reason[IDGEN_REASON_MAX];
} idgen_seq_stats_t;
IDGEN_API void idgen_seq_stats(idgen_seq_t *s, idgen_seq_stats_t *st);

/* One sequence counter as the registry records it (idgen_seq_list). */
typedef struct idgen_seq_holder_row {
  char holder[IDGEN_HOLDER_MAX];
  uint64_t generation;
  uint64_t lo, hi;          /* its last range claimed */
  uint64_t claimed, issued; /* as last reported */
  double rate;              /* as last reported, numbers/s */
  int64_t expires_in_ms;    /* by the registry's clock; <= 0: expired */
  int owner;                /* holds the strict sequence */
} idgen_seq_holder_row_t;
#define IDGEN_SEQ_HOLDERS_MAX 64
typedef struct idgen_seq_row {
  char space[IDGEN_SPACE_NAME_MAX];
  char key[IDGEN_SEQ_KEY_MAX]; /* "orders" or "orders@20261203" */
  uint64_t next;               /* the next number no one claimed */
  uint64_t generation;         /* the last holder's */
  uint64_t claimed, issued, given_back, lost;
  int strict;
  int nholders;
  idgen_seq_holder_row_t holders[IDGEN_SEQ_HOLDERS_MAX];
} idgen_seq_row_t;
typedef int (*idgen_seq_list_cb)(void *ctx, const idgen_seq_row_t *row);
/* Calls cb once per sequence counter in r's space (every space when r's
 * URI named none), in name order.  0, cb's nonzero, or IDGEN_EREGISTRY. */
IDGEN_API int idgen_seq_list(idgen_registry_t *r, idgen_seq_list_cb cb, void *ctx, char *err,
                             size_t errlen);
/* Moves counter `key` forward so that the next number claimed is `next`:
 * 0; IDGEN_ERANGE when next is not above what was claimed (forward only,
 * the message says the counter's value); IDGEN_EREGISTRY. */
IDGEN_API int idgen_seq_set(idgen_registry_t *r, const char *key, uint64_t next, char *err,
                            size_t errlen);

/* Business-number templates: literal text, one {seq:0N} or {seq} (at least
 * N digits, never cut; N at most 19), {date:STRFTIME} fields (%Y %y %m %d
 * %j %H %M %G %V %u and %%, each zero-padded to a fixed width; years 1 to
 * 9999) and {{ }} for literal braces, at most 255 bytes, rendered in time
 * zone tz (an IANA name read from the system's tzdata, $TZDIR or
 * /usr/share/zoneinfo, never through the process's TZ; NULL: UTC).  The
 * period is the finest unit the date fields tell apart (year, month, ISO
 * week, day, hour, minute): the counter restarts at each.  Refused
 * (IDGEN_EINVAL, "format: column C: ..." naming why, or "tz: ..."):
 * unknown fields, no {seq}, a date field with a coarser unit missing (%m
 * without %Y, %d without %m, %V without %G, %H without a day, %M without
 * %H; the ISO week with a calendar month or year but no day), and a {seq}
 * followed by a digit ("{seq}{date:%Y%m%d}": where the number ends would
 * show only by the text's length).  Since the other fields have fixed
 * widths, a text then names one (period, number) pair; but %y's texts
 * repeat a century apart (the counters do not: the key has the full year).
 * Immutable once parsed: thread-safe. */
typedef struct idgen_seq_format idgen_seq_format_t;
IDGEN_API int idgen_seq_format_parse(idgen_seq_format_t **out, const char *tmpl, const char *tz,
                                     char *err, size_t errlen);
IDGEN_API void idgen_seq_format_free(idgen_seq_format_t *f);
/* The period of unix_ms as a key into key[n] ("2026" year, "202612" month,
 * "2026W49" ISO week, "20261203" day, "2026120306" hour, "202612030615"
 * minute, in the format's time zone; "" without date fields), and in
 * *end_ms (may be NULL) the first instant of another period (INT64_MAX:
 * never), DST changes counted: a day may last 23 or 25 hours, and an hour
 * the clock repeats is one period of two.  0, or IDGEN_ERANGE (key[n] too
 * small, or a time outside years 1 to 9999). */
IDGEN_API int idgen_seq_format_period(const idgen_seq_format_t *f, int64_t unix_ms, char *key,
                                      size_t n, int64_t *end_ms);
/* The text of number `n` at unix_ms into buf[buflen], NUL-terminated: its
 * length, or IDGEN_ERANGE when it does not fit (or the time is outside
 * years 1 to 9999). */
IDGEN_API int idgen_seq_format_render(const idgen_seq_format_t *f, int64_t unix_ms, uint64_t n,
                                      char *buf, size_t buflen);
/* The width of {seq} (0: none given) and the periods per year (0: no
 * date), for idgen plan --seq. */
IDGEN_API int idgen_seq_format_width(const idgen_seq_format_t *f);
IDGEN_API double idgen_seq_format_periods_per_year(const idgen_seq_format_t *f);

/* ------------------------------------------------------------------------
 * Public IDs (SPEC §11): a keyed, reversible form of an ID that shows
 * nothing of its time, worker or volume to whoever lacks the key, and gives
 * the ID back to whoever has it.  The permutation is FF1 (NIST SP 800-38G)
 * with radix 2 on AES-256 from OpenSSL's libcrypto: never a cipher written
 * here.  Equal IDs give equal public IDs; a public ID is not an access token.
 *
 * Keys.  A key file holds one or more key versions (1 to 32), one 256-bit
 * key each; the newest (highest) version makes public IDs, every version is
 * tried on the way back where the form tells which (text forms carry their
 * version).  A key file must be a regular file that group and others can
 * neither read nor write (mode 0600 or 0400); anything else is refused,
 * naming the mode.  A key never appears in a message of the library.
 *
 * Forms, per kind of ID:
 *   Snowflake, a layout of N bits (20..64): the integer form is an N-bit
 *     integer (a twitter ID, 63 bits, stays a positive BIGINT; a js53 ID
 *     stays below 2^53); FF1 over exactly N bits.
 *   ULID (128 bits): the integer form is 128 bits, written as 26 Crockford
 *     characters (ULID-shaped: it parses as a ULID whose time is noise).
 *   UUIDv7 (122 bits besides its version and variant): the integer form is
 *     a UUID of version 4 whose 122 other bits are the permuted ones.
 *   Text form, every kind: [PREFIX_]V BODY, where PREFIX follows TypeID's
 *     rules (a to z and '_', at most 63 characters, starting and ending
 *     with a letter), V is the key version as one character of TypeID's
 *     alphabet (0123456789abcdefghjkmnpqrstvwxyz: '0' is version 1, 'z'
 *     version 32) and BODY the permuted ID with 16 check bits, in lower-case
 *     Crockford base32: 16 characters for a Snowflake ID of any layout
 *     (IDGEN_PUBLIC_TEXT64_LEN in all with V), 29 for a ULID or UUIDv7
 *     (IDGEN_PUBLIC_TEXT128_LEN).  The prefix and the layout's bit count
 *     are part of the permutation's tweak: a user_ ID given where an
 *     order_ ID is expected is refused for its prefix (IDGEN_EPARSE), and
 *     its body under the order_ prefix fails its check (IDGEN_EKEY)
 *     instead of naming an order.
 *     The check bits make a wrong key, an altered text or another kind's
 *     ID fail (IDGEN_EKEY) rather than give a wrong ID, but for one text in
 *     65,536 (2^-16 per key version tried).
 * Integer forms carry no version and no check: they are unmapped with the
 * one key version the codec was made for (the newest unless said), and a
 * wrong key gives a wrong ID.  To rotate the key of an integer form, map
 * every stored public ID anew (docs/DESIGN.md, "Public IDs").
 */
#define IDGEN_PUBLIC_KEY_BYTES 32   /* AES-256 */
#define IDGEN_PUBLIC_VERSION_MAX 32 /* key versions are 1..32 */
#define IDGEN_PUBLIC_PREFIX_MAX 64  /* a type prefix: 63 characters and NUL */
#define IDGEN_PUBLIC_TEXT64_LEN 17  /* V and 16 characters, without a prefix */
#define IDGEN_PUBLIC_TEXT128_LEN 30 /* V and 29 characters, without a prefix */
/* A text form with the longest prefix, its '_' and the NUL. */
#define IDGEN_PUBLIC_TEXT_MAX (IDGEN_PUBLIC_PREFIX_MAX + IDGEN_PUBLIC_TEXT128_LEN + 1)
/* The environment variable naming a key file where a front end takes one. */
#define IDGEN_PUBLIC_KEY_ENV "IDGEN_PUBLIC_KEY"

/* A set of key versions.  Immutable once made: thread-safe.  Freed with
 * idgen_public_keys_free, which wipes the key bytes. */
typedef struct idgen_public_keys idgen_public_keys_t;

/* Reads a key file (the format: docs/DESIGN.md, "Public IDs"; one line
 * "vN HEX" per version, '#' comments).  IDGEN_EPARSE naming the line (never
 * its text), IDGEN_EINVAL for a file group or others may read or write, or
 * not a regular file, naming the mode and the fix (chmod 600 FILE). */
IDGEN_API int idgen_public_keys_load(idgen_public_keys_t **out, const char *path, char *err,
                                     size_t errlen);
/* From memory: n versions, keys[i] of IDGEN_PUBLIC_KEY_BYTES bytes each (the
 * extension's keys, tests).  IDGEN_ERANGE for a version outside 1..32,
 * IDGEN_EINVAL for one given twice or n == 0. */
IDGEN_API int idgen_public_keys_new(idgen_public_keys_t **out, const unsigned *versions,
                                    const uint8_t (*keys)[IDGEN_PUBLIC_KEY_BYTES], size_t n,
                                    char *err, size_t errlen);
/* Makes a key from the system's random source: a new file at `path`
 * (created mode 0600, never over a file that is there) with version 1, or,
 * with `add` set, the existing file rewritten (to a temporary file renamed
 * over it, keeping its mode and, for root, its owner) with one more version, the newest + 1 (IDGEN_ERANGE past 32:
 * remove old versions first).  The new version in *version (may be NULL). */
IDGEN_API int idgen_public_keys_generate(const char *path, int add, unsigned *version, char *err,
                                         size_t errlen);
/* The newest version, and the versions held (ascending) into out[n]: the
 * count held (which may be more than n). */
IDGEN_API unsigned idgen_public_keys_newest(const idgen_public_keys_t *k);
IDGEN_API size_t idgen_public_keys_versions(const idgen_public_keys_t *k, unsigned *out, size_t n);
IDGEN_API void idgen_public_keys_free(idgen_public_keys_t *k);

typedef enum idgen_public_kind {
  IDGEN_PUBLIC_SNOWFLAKE = 1, /* an ID of a layout of `bits` bits */
  IDGEN_PUBLIC_ULID = 2,
  IDGEN_PUBLIC_UUID7 = 3
} idgen_public_kind_t;

typedef struct idgen_public_settings {
  idgen_public_kind_t kind; /* required */
  unsigned bits;            /* SNOWFLAKE: the layout's total_bits (20..64: fewer
                             * is refused, IDGEN_ERANGE); 0 = 64.
                             * Others: 0 */
  const char *prefix;       /* the text form's type prefix; NULL or "" for none */
  unsigned version;         /* the key version the integer form uses; 0 = the newest */
} idgen_public_settings_t;

/* A codec: one set of keys, one kind, one prefix.  It keeps AES state, so
 * it is used by one thread at a time: make one per thread (making one costs
 * a few microseconds per key version).  It holds its own copy of what it
 * needs from `keys`, which may be freed after.  IDGEN_EINVAL for a prefix
 * outside TypeID's rules or a version not in `keys`, naming which. */
typedef struct idgen_public idgen_public_t;
IDGEN_API int idgen_public_new(idgen_public_t **out, const idgen_public_keys_t *keys,
                               const idgen_public_settings_t *s, char *err, size_t errlen);
IDGEN_API void idgen_public_free(idgen_public_t *p);

/* Snowflake integer form: id -> pub and back, both below 2^bits
 * (IDGEN_ERANGE otherwise; IDGEN_EINVAL on a codec of another kind).  The
 * batches take n values each (in and out may be the same array) and are
 * several times faster per ID than single calls (AES in parallel). */
IDGEN_API int idgen_public_map64(idgen_public_t *p, uint64_t id, uint64_t *pub);
IDGEN_API int idgen_public_unmap64(idgen_public_t *p, uint64_t pub, uint64_t *id);
IDGEN_API int idgen_public_map64_batch(idgen_public_t *p, const uint64_t *ids, uint64_t *pubs,
                                       size_t n);
IDGEN_API int idgen_public_unmap64_batch(idgen_public_t *p, const uint64_t *pubs, uint64_t *ids,
                                         size_t n);
/* ULID and UUIDv7 integer forms, 16 big-endian bytes each way: a ULID to 128
 * permuted bits; a UUIDv7 (IDGEN_EPARSE if its version is not 7 or its
 * variant not RFC 9562's) to a UUIDv4, and a UUIDv4 back (IDGEN_EPARSE if
 * not version 4 with that variant).  The batches check every value first
 * and write nothing on an error. */
IDGEN_API int idgen_public_map128(idgen_public_t *p, const uint8_t id[16], uint8_t pub[16]);
IDGEN_API int idgen_public_unmap128(idgen_public_t *p, const uint8_t pub[16], uint8_t id[16]);
IDGEN_API int idgen_public_map128_batch(idgen_public_t *p, const uint8_t (*ids)[16],
                                        uint8_t (*pubs)[16], size_t n);
IDGEN_API int idgen_public_unmap128_batch(idgen_public_t *p, const uint8_t (*pubs)[16],
                                          uint8_t (*ids)[16], size_t n);

/* Text forms, with the newest key version, into buf[buflen]
 * (IDGEN_PUBLIC_TEXT_MAX is always enough): the length written, or
 * IDGEN_ERANGE (buffer too small, or a Snowflake ID at or above 2^bits),
 * IDGEN_EPARSE for a UUID not of version 7 to a UUIDv7 codec, IDGEN_EINVAL
 * on a codec of another kind (here and in the parse functions). */
IDGEN_API int idgen_public_format64(idgen_public_t *p, uint64_t id, char *buf, size_t buflen);
IDGEN_API int idgen_public_format128(idgen_public_t *p, const uint8_t id[16], char *buf,
                                     size_t buflen);
/* The length of every text form the codec writes: its prefix and '_' (if
 * it has one), V and 16 or 29 characters; IDGEN_EINVAL for NULL. */
IDGEN_API int idgen_public_text_len(const idgen_public_t *p);
/* n text forms back to back into buf[buflen], each exactly
 * idgen_public_text_len(p) characters, no separator and no NUL, mapped in
 * batches (AES in parallel: several times faster per ID than the single
 * calls).  0, or the single calls' errors, IDGEN_ERANGE also for buflen
 * below n times the length; every ID is checked first and nothing is
 * written on an error. */
IDGEN_API int idgen_public_format64_batch(idgen_public_t *p, const uint64_t *ids, size_t n,
                                          char *buf, size_t buflen);
IDGEN_API int idgen_public_format128_batch(idgen_public_t *p, const uint8_t (*ids)[16], size_t n,
                                           char *buf, size_t buflen);
/* ... and back from text[len] (not NUL-terminated), with the version the
 * text names.  IDGEN_EPARSE for a malformed text, naming the column and
 * what is wrong (a prefix other than the codec's, a length of another kind,
 * a character outside the alphabet); IDGEN_EKEY for a version not in the
 * keys (naming it and the versions held) or a check that fails (another
 * key, or an altered text).  The version used in *version (may be NULL). */
IDGEN_API int idgen_public_parse64(idgen_public_t *p, const char *text, size_t len, uint64_t *id,
                                   unsigned *version, char *err, size_t errlen);
IDGEN_API int idgen_public_parse128(idgen_public_t *p, const char *text, size_t len, uint8_t id[16],
                                    unsigned *version, char *err, size_t errlen);
/* The kinds a text form text[len] may be of, by its shape alone (no key is
 * needed and nothing is decoded): its length after its last '_' (a prefix
 * may hold '_', the body never does) is IDGEN_PUBLIC_TEXT64_LEN for a
 * Snowflake ID and IDGEN_PUBLIC_TEXT128_LEN for a ULID or a UUIDv7, which
 * the shape cannot tell apart.  For a reader that knows no kind (a CLI, a
 * daemon decoding what it is given), the kinds to try are written to
 * kinds[] in the order to try them, and their count returned: 1
 * (IDGEN_PUBLIC_SNOWFLAKE), or 2 (IDGEN_PUBLIC_UUID7, then
 * IDGEN_PUBLIC_ULID: a UUIDv7 codec's check also needs version 7 and the
 * variant, 22 more bits, so a ULID's text passes it once in 4 million,
 * while one UUIDv7 text in 65,536 would pass a ULID codec's check as a
 * wrong ULID).  Try the next kind only if a parse fails with IDGEN_EKEY.
 * IDGEN_EPARSE, naming the length found, for any other length.  kinds may
 * be NULL (the count alone), as may err; a NULL text is read as empty.
 * Pure: thread-safe. */
IDGEN_API int idgen_public_kind_of(const char *text, size_t len, idgen_public_kind_t kinds[2],
                                   char *err, size_t errlen);
/* Checks a type prefix by TypeID's rules ("" passes: no prefix). */
IDGEN_API int idgen_public_prefix_check(const char *prefix, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif /* IDGEN_H */
