/*
 * registry_int.h -- the registry's backend interface: one table of
 * operations per URI scheme, so that a new backend is one file.
 */
#ifndef IDGEN_REGISTRY_INT_H
#define IDGEN_REGISTRY_INT_H

#include <pthread.h>

#include "bind_int.h"
#include "core_int.h"

#include "idgen.h"
#include "seq_io.h"

/* "spaces/NAME/": where a named space's pools and record are kept. */
#define IDGEN__SPACE_PATH_MAX (IDGEN_SPACE_NAME_MAX + 8)

/*
 * The pool a lease comes from (docs/DESIGN.md §11, idgen.h "What a lease stands
 * for").  A pool is named by the layout's geometry -- epoch, tick, and the
 * positions of the time and sequence fields -- so that two layouts that make
 * the same IDs share it.  Within a pool a node tuple is its key: every node
 * field's bits, in place in the ID.  A request fixes all node fields but the
 * leased one, so its candidates are key = fixed | v << shift for v in
 * 0..size-1, and two holders meet on a key whichever fields they leased.
 */
typedef struct idgen__pool {
  int field; /* layout field index of the leased field */
  char field_name[IDGEN_FIELD_NAME_MAX];
  unsigned shift;                     /* its position in the ID */
  uint64_t size;                      /* 2^bits values */
  uint64_t fixed;                     /* the other node fields' bits, in place */
  char name[IDGEN_POOL_NAME_MAX];     /* "epoch=1288834974657,tick=1ms,time@22,sequence@0:12" */
  char others[IDGEN_NODE_TEXT_MAX];   /* "datacenter=1" (the fixed fields), or "" */
  char layout[IDGEN_LAYOUT_SPEC_MAX]; /* the requester's layout, canonical */
  /* Where the backend keeps it: the name, after the space's path
   * ("spaces/NAME/" for a named space, "" for the default one). */
  char store[IDGEN__SPACE_PATH_MAX + IDGEN_POOL_NAME_MAX];
} idgen__pool_t;

/* The pool name of layout `l` into buf[IDGEN_POOL_NAME_MAX]. */
void idgen__pool_name(const idgen_layout_t *l, char *buf);

/* The tuple of `key` as "name=value,..." in layout l's node fields into
 * buf[IDGEN_NODE_TEXT_MAX]; "0x%016llx" when l is NULL. */
void idgen__node_text(const idgen_layout_t *l, uint64_t key, char *buf);

/* The key of tuple text `node` ("datacenter=1,worker=7" in layout l's
 * field names, every node field once; or "0x" and hex digits): 0, or -1
 * with a message naming what is wrong.  l may be NULL (hex only). */
int idgen__node_key(const idgen_layout_t *l, const char *node, uint64_t *key, char *err,
                    size_t errlen);

/*
 * ID spaces (space.c, docs/DESIGN.md §11): the layouts that lease in one space.
 * A space's record is text, the same in every backend (a file, a row, a
 * key):
 *     idgen-space v1
 *     retired lo=L hi=H                       (IDs layouts that left issued)
 *     layout floor_ms=F pool=POOL spec=LAYOUT  (one line per pool in it: the
 *                                              widest of its layouts seen)
 * Each `retired` range holds every ID that layouts no longer in the record
 * may have issued (ranges that meet are merged); a layout's holders start
 * above its floor (Unix ms).
 */
#define IDGEN__SPACE_MAX 16
#define IDGEN__SPACE_RETIRED_MAX 8
typedef struct idgen__space_member {
  char pool[IDGEN_POOL_NAME_MAX];
  char spec[IDGEN_LAYOUT_SPEC_MAX];
  int64_t floor_ms;
} idgen__space_member_t;
typedef struct idgen__space {
  /* Made up from the pools found (the space has no record yet: a registry
   * from before ID spaces, or a record removed): every acquisition joins,
   * so that two layouts found there are compared before either leases. */
  int provisional;
  int nretired;
  uint64_t lo[IDGEN__SPACE_RETIRED_MAX], hi[IDGEN__SPACE_RETIRED_MAX]; /* sorted, apart */
  int n;
  idgen__space_member_t m[IDGEN__SPACE_MAX];
} idgen__space_t;
/* Longest record text, with its NUL. */
#define IDGEN__SPACE_TEXT_MAX                                                                      \
  (64 + IDGEN__SPACE_RETIRED_MAX * 56 +                                                            \
   IDGEN__SPACE_MAX * (48 + IDGEN_POOL_NAME_MAX + IDGEN_LAYOUT_SPEC_MAX))

/* The backend's answers about the pools of one space, for joining:
 *   live      how many of pool's tuples are held or in quarantine (0 if the
 *             pool has none, or no storage), and some of their holders as
 *             "host:pid:token (node), ..." into holders[n]; or an error;
 *   issued    what the pool may have issued: its highest mark over every
 *             tuple it ever had (its pool-wide mark where it keeps one; 0 if
 *             none) and the OR of every tuple's key (node bits above the
 *             time field count, whatever layout put them there). */
typedef struct idgen__space_probe {
  void *ctx;
  int (*live)(void *ctx, const char *pool, char *holders, size_t n, char *err, size_t errlen);
  int (*issued)(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                size_t errlen);
} idgen__space_probe_t;

/* What a join decided: where the newcomer's tuples start (above floor_ms),
 * whether the record changed (the backend stores it, in the same step as
 * the claim that follows), and which pools it retired (postgres fences
 * their rows). */
typedef struct idgen__space_plan {
  int64_t floor_ms;
  int changed;
  int nretired;
  char retired[IDGEN__SPACE_MAX][IDGEN_POOL_NAME_MAX];
} idgen__space_plan_t;

typedef int (*idgen__space_list_cb)(void *ctx, const char *space, const idgen__space_t *s,
                                    const idgen__space_probe_t *probe);

/* 0, or IDGEN_EINVAL naming a bad space name. */
int idgen__space_name_check(const char *name, char *err, size_t errlen);
/* uri without its space= parameter into out[outlen], the name into
 * space[IDGEN_SPACE_NAME_MAX] ("" if none): 0, or IDGEN_EINVAL. */
int idgen__uri_take_space(const char *uri, char *out, size_t outlen, char *space, char *err,
                          size_t errlen);
/* The record's text: 0, or IDGEN_EREGISTRY naming what is wrong. */
int idgen__space_parse(const char *text, size_t n, idgen__space_t *s, char *err, size_t errlen);
/* Into buf[n]: the length, or -1 if it does not fit. */
int idgen__space_format(const idgen__space_t *s, char *buf, size_t n);
/* For a space without a record: pool as a member with floor 0 and the
 * widest layout of its geometry (s becomes provisional).  0, or -1 if it is
 * full or the pool's name is not one. */
int idgen__space_add_pool(idgen__space_t *s, const char *pool);
/* The widest layout of pool name `pool`'s geometry: 0, or -1. */
int idgen__pool_guess_layout(const char *pool, idgen_layout_t *l);
/* The highest ID a pool of layout l's geometry may have issued by mark_ms
 * with tuples whose keys OR to `keys`, into *id: 1, or 0 when the mark is
 * before the epoch (nothing issued). */
int idgen__space_high_id(const idgen_layout_t *l, int64_t mark_ms, uint64_t keys, uint64_t *id);
/* 1 with *floor_ms if p's pool is in s (not provisional) with a layout at
 * least as wide as l: it may lease, nothing to decide; else 0.  (One entry
 * per pool: layouts of one geometry differ only in names and in how many
 * bits they hold.) */
int idgen__space_member(const idgen__space_t *s, const idgen__pool_t *p, const idgen_layout_t *l,
                        int64_t *floor_ms);
/*
 * Decides whether a holder of pool p (layout l, requested by req, whose
 * clock reads `now`) may lease in space s (named `space`, for messages).
 * 0 with *plan: s updated when plan->changed.  IDGEN_ESPACE: a live layout
 * of another pool could issue the same IDs, or the space is past this
 * layout's end; IDGEN_ECLOCK: this layout could start above the space's
 * highest ID only later than max_start_wait_ms from now (the message gives
 * the date); a probe's error.  Run under the backend's space lock.
 */
int idgen__space_join(idgen__space_t *s, const char *space, const idgen__pool_t *p,
                      const idgen_layout_t *l, const idgen_lease_request_t *req, int64_t now,
                      const idgen__space_probe_t *probe, idgen__space_plan_t *plan, char *err,
                      size_t errlen);

/*
 * A backend.  Every operation that can fail returns 0 or a negative
 * IDGEN_E* code and, on failure, writes a one-line message to err (which may
 * be NULL with errlen 0).  The registry layer (registry.c) has checked the
 * arguments, the fork generation and the lease's state before calling.
 *
 *   open     parses the part of the URI after "scheme:" (the whole URI is in
 *            r->uri) and connects or creates what it needs.
 *   acquire  fills l->worker, l->key, l->generation (> every earlier grant
 *            of that tuple), l->mark_ms (where the holder starts: the
 *            tuple's recorded mark, or the pool-wide mark for a tuple
 *            new to the pool) following docs/DESIGN.md §11; l->pool,
 *            l->holder, l->ttl_ms, l->quarantine_ms are set.
 *   renew    shows the lease is still held, conditional on l->generation:
 *            IDGEN_ELEASE when it is not (fenced out), IDGEN_EREGISTRY when
 *            the registry cannot be reached (the lease may still be held).
 *   mark     records l's high-water mark as mark_ms, durably, conditional on
 *            l->generation (IDGEN_ELEASE when fenced out); sets l->mark_ms.
 *            mark_ms may be lower than l->mark_ms only when the generator
 *            bound to l has stopped (the final mark at release).
 *   release  gives the ID back at once (the holder has stopped issuing); the
 *            mark stays.  Best effort: errors are dropped.
 *   list     calls cb once per known tuple of every pool.
 *   free     frees a stale lease by hand (idgen_registry_free()).
 *   close    drops what open made (r itself is freed by the caller).
 */
/* A backend's table.  `version` is the IDGEN__REGISTRY_OPS_VERSION it was
 * written for: a table of another version is refused when the registry is
 * opened (a later version may add members at the end). */
#define IDGEN__REGISTRY_OPS_VERSION 5
typedef struct idgen__registry_ops {
  int version;
  const char *scheme;   /* "static", "file", "postgres", "etcd", "idgen", "idgens" */
  int64_t mark_step_ms; /* default mark step; 0: the lease's TTL */
  int expires;          /* leases expire unless renewed (network
                               * registries); 0: held while the process lives */
  /* Checks the URI's syntax without I/O (rest: what follows "scheme:"); open
   * is called only after it passed. */
  int (*check)(const char *uri, const char *rest, char *err, size_t errlen);
  int (*open)(idgen_registry_t *r, const char *rest, char *err, size_t errlen);
  int (*acquire)(idgen_lease_t *l, const idgen_lease_request_t *req, char *err, size_t errlen);
  int (*renew)(idgen_lease_t *l, char *err, size_t errlen);
  int (*mark)(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen);
  void (*release)(idgen_lease_t *l);
  int (*list)(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err, size_t errlen);
  int (*free)(idgen_registry_t *r, const char *pool, const char *node, int force, char *err,
              size_t errlen);
  void (*close)(idgen_registry_t *r);
  /* The registry's own clock, Unix ms, read once (NULL: it has none, its
   * time is this host's). */
  int (*clock)(idgen_registry_t *r, int64_t *unix_ms, char *err, size_t errlen);
  /* Version 2.  Calls cb once per ID space of the registry (only r's own
   * when r->space_given), with its record (made up from the pools found
   * when the space has none yet) and a probe of its pools; NULL: the
   * backend keeps no spaces (static). */
  int (*spaces)(idgen_registry_t *r, idgen__space_list_cb cb, void *ctx, char *err, size_t errlen);
  /* Version 3.  Its calls may be held by a stuck system call (a local file
   * system frozen or hung): acquire, renew, mark and release run on a
   * thread of their own, bounded (bounded.c). */
  int bounded;
  /* Version 4.  idgen_registry_adopt(): l is filled as for acquire (pool,
   * holder: the new one, ttl_ms, quarantine_ms, r) and l->key, l->worker and
   * l->generation are the grant to take over, `was` its holder as recorded;
   * fills l->mark_ms (and floor_ms, expires_ms) and takes the tuple for l,
   * recording l->holder, conditional on the generation, and leaves l->be
   * as acquire does (renew, mark and release then work unchanged; a
   * network backend's previous holder is fenced out by them).  Bounded
   * like acquire (bounded.c).  NULL: the backend cannot (IDGEN_ELEASE). */
  int (*adopt)(idgen_lease_t *l, const char *was, char *err, size_t errlen);
  /* Version 5.  Sequences (seq.c, docs/DESIGN.md "Sequences").  A counter's
   * record is text, the same in every backend (seq_record.c), kept per
   * space under its key ("orders", "orders@20261203"):
   *   seq_load   *text (malloc'd, the caller frees; NULL when the counter
   *              has no record) and *version, which grows with every store
   *              (0 when none);
   *   seq_store  one conditional write: stores text only if the record's
   *              version is still `version` (0: only if there is none), and
   *              durably (file: fsynced; postgres: committed; etcd: by the
   *              cluster), then 0; IDGEN_EAGAIN when the version moved (the
   *              caller loads again); IDGEN_EREGISTRY;
   *   seq_keys   calls cb once per counter key of r's space (of every space
   *              when !r->space_given), in key order; cb's nonzero stops.
   * Safe beside the lease calls on the same registry from other threads.
   * NULL: the backend keeps no sequences (static; IDGEN_EINVAL). */
  int (*seq_load)(idgen_registry_t *r, const char *key, char **text, uint64_t *version, char *err,
                  size_t errlen);
  int (*seq_store)(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                   char *err, size_t errlen);
  int (*seq_keys)(idgen_registry_t *r, int (*cb)(void *ctx, const char *space, const char *key),
                  void *ctx, char *err, size_t errlen);
} idgen__registry_ops_t;

struct idgen_registry {
  const idgen__registry_ops_t *ops;
  char *uri;                              /* as opened (file: made absolute), without space= */
  char *shown;                            /* uri, with ?space=NAME if one was named */
  char space[IDGEN_SPACE_NAME_MAX];       /* "default", or the name given */
  char space_path[IDGEN__SPACE_PATH_MAX]; /* "" or "spaces/NAME/" */
  int space_given;                        /* the URI named the space (list shows only it) */
  void *be;                               /* backend state (file: the directory; postgres:
                               * the connection), the backend's to free in close */
  int calls, closing; /* bounded.c's, under its lock: calls running; closed by its user */
  int opened;         /* the backend's open succeeded: its close is due */
};

struct idgen_lease {
  idgen__lease_bind_t bind; /* first: how the core's keeper reaches the lease (bind_int.h) */
  idgen_registry_t *r;
  idgen__pool_t pool;
  uint64_t worker, generation;
  uint64_t key;                   /* pool.fixed | worker << pool.shift */
  char node[IDGEN_NODE_TEXT_MAX]; /* the tuple, in the requester's field names */
  int64_t mark_ms;
  int64_t floor_ms; /* its layout's floor in the space: the
                               * generator starts above it too (space.c) */
  int64_t ttl_ms, quarantine_ms, mark_step_ms;
  int64_t expires_ms;    /* the registry's expiry, Unix ms by its clock; 0: none */
  int64_t expires_in_ms; /* the same as the registry measured it; -1: none */
  unsigned fork_gen;     /* the process that holds it */
  void *be;              /* the backend's state of this lease (file: its
                               * lock file), plain memory freed with the lease */
  char holder[IDGEN_HOLDER_MAX];
  int stuck, release_pending; /* bounded.c's, under its lock: a call given up runs on it; and
                               * its release is left to that call */
};

extern const idgen__registry_ops_t idgen__registry_static, idgen__registry_file,
    idgen__registry_postgres, idgen__registry_postgresql, idgen__registry_etcd,
    idgen__registry_idgen, idgen__registry_idgens;

/* file: records (registry_file.c).  A tuple's lock file holds
 * "idgen-lease v2 generation=N mark_ms=M key=K holder=H" (K: 16 hex
 * digits), padded with spaces to 255 bytes and a newline.  parse: 0, or -1
 * for anything that is not exactly such a record (holder may be NULL with
 * holderlen 0); format: 0, or -1 if it does not fit. */
#define IDGEN__LEASE_RECORD_SIZE 256
typedef struct idgen__lease_record {
  uint64_t generation, key;
  int64_t mark_ms;
  char holder[128];
} idgen__lease_record_t;
int idgen__lease_record_parse(const char *buf, size_t n, idgen__lease_record_t *rec);
int idgen__lease_record_format(char *buf, const idgen__lease_record_t *rec);

/* A pool's file: "idgen-pool v1 mark_ms=P layout=LAYOUT", padded with spaces
 * to 1023 bytes and a newline; the same rules.  Then one 64-byte slot per
 * tuple the pool has granted, "tuple key=K mark_ms=M" (K: 16 hex digits),
 * padded the same way: that tuple's mark, the one its next holder starts
 * above (registry_file.c). */
#define IDGEN__POOL_RECORD_SIZE 1024
#define IDGEN__POOL_SLOT_SIZE 64
int idgen__pool_record_parse(const char *buf, size_t n, int64_t *mark, char *layout,
                             size_t layoutlen);
int idgen__pool_record_format(char *buf, int64_t mark, const char *layout);
int idgen__pool_slot_parse(const char *buf, size_t n, uint64_t *key, int64_t *mark);
int idgen__pool_slot_format(char *buf, uint64_t key, int64_t mark);

/* etcd:// values (registry_etcd.c).  A tuple's record: "MARK GEN HOLDER",
 * MARK in exactly 19 digits, GEN without leading zeros; held/KEY's value:
 * "QUARANTINE_MS HOLDER" (HOLDER empty once freed by hand).  parse: 0, or
 * -1 for anything record_format / the grant would not have written. */
int idgen__etcd_record_parse(const char *v, int64_t *mark_ms, uint64_t *generation, char *holder,
                             size_t holderlen);
int idgen__etcd_record_format(char *out, size_t outlen, int64_t mark_ms, uint64_t generation,
                              const char *holder);
int idgen__etcd_held_parse(const char *v, int64_t *quarantine_ms, char *holder, size_t holderlen);

/* idgen:// answers (registry_idgen.c): text[0..n) read as the daemon's
 * answer, a flat JSON object: its member count, or -1 with why naming what
 * is wrong (for the fuzz target and the tests). */
int idgen__idgen_answer_parse(const char *text, size_t n, char *why, size_t whylen);

/* Bounded calls (bounded.c): the backend's call, on a thread of its own
 * when its table says `bounded`, the caller waiting at most
 * max_start_wait_ms + IDGEN_REGISTRY_CALL_MS (acquire) or
 * IDGEN_REGISTRY_CALL_MS (the others), then IDGEN_EREGISTRY naming the
 * registry.  open, acquire and adopt set *given_up when the call was given up: the
 * registry (open) or the lease (acquire) is then its thread's, not to be
 * freed; open sets r->opened when the backend's open succeeded.  release frees the lease (now or
 * when the call is done); close frees the registry (now or when its last
 * call is done). */
int idgen__bounded_open(idgen_registry_t *r, const char *rest, int *given_up, char *err,
                        size_t errlen);
int idgen__bounded_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, int *given_up,
                           char *err, size_t errlen);
int idgen__bounded_renew(idgen_lease_t *l, char *err, size_t errlen);
/* adopt: as acquire, bounded by IDGEN_REGISTRY_CALL_MS (`was` is copied);
 * a call given up that succeeds later releases what it took. */
int idgen__bounded_adopt(idgen_lease_t *l, const char *was, int *given_up, char *err,
                         size_t errlen);
int idgen__bounded_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen);
void idgen__bounded_release(idgen_lease_t *l);
void idgen__bounded_close(idgen_registry_t *r);

/* The wall clock of a request, in ms; and sleeping on it. */
int64_t idgen__req_now_ms(const idgen_lease_request_t *req);
void idgen__req_sleep_ms(const idgen_lease_request_t *req, int64_t ms);

/* The rules every backend's acquire shares (docs/DESIGN.md §11), one wording,
 * each message after the backend's prefix `pfx`:
 *   pool_full   every value is taken: `held` by live holders, `quarantined`
 *               in quarantine, the first free again in next_ms.  If that
 *               fits in what is left of max_start_wait_ms (*waited so far),
 *               sleeps it and returns 0 (the caller looks again); else
 *               IDGEN_EPOOLFULL naming the pool, the counts and the fix.
 *   start_wait  value v's mark is at or past now + start_borrow_ms: sleeps
 *               until it is behind (0; the caller reads the clock and looks
 *               again) unless *waited plus that passes max_start_wait_ms:
 *               IDGEN_ECLOCK naming the wait, `why` appended (or "").
 *   fenced      IDGEN_ELEASE: `what` (renew, mark, release) found the lease
 *               granted to another or freed; `why` says which (or ""). */
int idgen__fenced(const char *pfx, const idgen_lease_t *l, const char *what, const char *why,
                  char *err, size_t errlen);
int idgen__pool_full(const char *pfx, const idgen_lease_request_t *req, const idgen__pool_t *p,
                     uint64_t held, uint64_t quarantined, int64_t next_ms, int64_t *waited,
                     char *err, size_t errlen);
int idgen__start_wait(const char *pfx, const idgen_lease_request_t *req, const idgen__pool_t *p,
                      uint64_t v, int64_t mark, int64_t now, int64_t *waited, const char *why,
                      char *err, size_t errlen);

/*
 * A client library loaded on first use, so that a process whose registry is
 * file: or static maps neither libpq nor libcurl and the 30 libraries they
 * pull in (an idle daemon: 8.5 MB resident with them linked, DESIGN §11).
 * d->soname is dlopen()ed once (by the first caller, under a lock that fork()
 * waits for, so that no child is made in the middle of a load) and each of
 * d->names[0..d->n) looked up into d->fns.  0 when loaded, else IDGEN_EREGISTRY
 * with `pfx` and what is missing in err; later calls give the same answer.
 */
typedef struct idgen__dynlib {
  const char *soname;       /* "libpq.so.5" */
  const char *package;      /* the Debian package that has it, for the message */
  const char *const *names; /* the functions, in the order of fns */
  size_t n;
  void **fns;         /* n slots */
  void (*init)(void); /* run once loaded, under the same lock, or NULL */
  int tried;          /* under the loading lock */
  char why[200];      /* empty once loaded */
} idgen__dynlib_t;
int idgen__dynlib_need(idgen__dynlib_t *d, const char *pfx, char *err, size_t errlen);
/* Percent-decodes src[0..n) into dst[dstlen]: 0, or -1 when it does not
 * fit; strict: also -1 for a '%' without two hex digits or a NUL (what a
 * URI's parser refuses); else such a '%' stays as it is. */
int idgen__pct_decode(char *dst, size_t dstlen, const char *src, size_t n, int strict);

/* The loading lock, which fork() takes too: a client library's call that
 * takes that library's own global locks (libpq's connect) runs under it,
 * so that no child is forked while one of them is held.  Not around a
 * call that may load another client library (idgen__dynlib_need). */
void idgen__fork_lock(void);
void idgen__fork_unlock(void);

/* Defines `tab`, a union with one field per function of FUNCS (a list
 * FUNCS(X) of X(name)), named and typed as the function, and `lib`, the
 * idgen__dynlib_t that fills it from `soname` and then calls `init` (NULL: none).  Calls go through tab.name(...). */
#define IDGEN__DYNLIB(tab, lib, FUNCS, soname, package, init)                                      \
  static union {                                                                                   \
    struct {                                                                                       \
      FUNCS(IDGEN__DYN_FIELD)                                                                      \
    };                                                                                             \
    void *slot[0 FUNCS(IDGEN__DYN_COUNT)];                                                         \
  } tab;                                                                                           \
  _Static_assert(sizeof tab == sizeof tab.slot, #tab ": a slot per function, no padding");         \
  static const char *const lib##_names[] = {FUNCS(IDGEN__DYN_NAME)};                               \
  static idgen__dynlib_t lib = {soname,   package, lib##_names, 0 FUNCS(IDGEN__DYN_COUNT),         \
                                tab.slot, init,    0,           ""}
#define IDGEN__DYN_FIELD(f) __typeof__(f) *f;
#define IDGEN__DYN_COUNT(f) +1
#define IDGEN__DYN_NAME(f) #f,

#endif
