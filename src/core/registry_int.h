/*
 * registry_int.h -- the registry's backend interface: one table of
 * operations per URI scheme, so that a new backend is one file.
 */
#ifndef IDGEN_REGISTRY_INT_H
#define IDGEN_REGISTRY_INT_H

#include "core_int.h"
#include "idgen.h"

/* The pool a lease comes from: one node field of a layout, under the
 * namespace made by the values of the other node fields. */
typedef struct idgen__pool {
  int field;                  /* layout field index */
  char field_name[IDGEN_FIELD_NAME_MAX];
  uint64_t size;              /* 2^bits worker IDs */
  char ns[512];               /* "datacenter=1" (or "" with no other node field) */
} idgen__pool_t;

/*
 * A backend.  Every operation that can fail returns 0 or a negative
 * IDGEN_E* code and, on failure, writes a one-line message to err (which may
 * be NULL with errlen 0).  The registry layer (registry.c) has checked the
 * arguments, the fork generation and the lease's state before calling.
 *
 *   open     parses the part of the URI after "scheme:" (the whole URI is in
 *            r->uri) and connects or creates what it needs.
 *   acquire  fills l->worker, l->generation (> every earlier grant of that
 *            ID), l->mark_ms (the ID's recorded mark) following SPEC section
 *            8; l->pool, l->holder, l->ttl_ms, l->quarantine_ms are set.
 *   renew    shows the lease is still held, conditional on l->generation:
 *            IDGEN_ELEASE when it is not (fenced out), IDGEN_EREGISTRY when
 *            the registry cannot be reached (the lease may still be held).
 *   mark     records l's high-water mark as mark_ms, durably, conditional on
 *            l->generation (IDGEN_ELEASE when fenced out); sets l->mark_ms.
 *            mark_ms may be lower than l->mark_ms only when the generator
 *            bound to l has stopped (the final mark at release).
 *   release  gives the ID back at once (the holder has stopped issuing); the
 *            mark stays.  Best effort: errors are dropped.
 *   list     calls cb once per known worker ID of every pool.
 *   free     frees a stale lease by hand (idgen_registry_free()).
 *   close    drops what open made (r itself is freed by the caller).
 */
typedef struct idgen__registry_ops {
  const char *scheme;         /* "static", "file", "postgres" */
  int64_t mark_step_ms;       /* default mark step; 0: the lease's TTL */
  int (*open)(idgen_registry_t *r, const char *rest, char *err, size_t errlen);
  int (*acquire)(idgen_lease_t *l, const idgen_lease_request_t *req, char *err, size_t errlen);
  int (*renew)(idgen_lease_t *l, char *err, size_t errlen);
  int (*mark)(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen);
  void (*release)(idgen_lease_t *l);
  int (*list)(idgen_registry_t *r, int (*cb)(void *ctx, const idgen_lease_row_t *row), void *ctx,
              char *err, size_t errlen);
  int (*free)(idgen_registry_t *r, const char *pool, uint64_t worker, int force, char *err,
              size_t errlen);
  void (*close)(idgen_registry_t *r);
} idgen__registry_ops_t;

struct idgen_registry {
  const idgen__registry_ops_t *ops;
  char *uri;                  /* as opened */
  char *path;                 /* file: the directory */
  void *be;                   /* backend state (postgres: the connection) */
};

struct idgen_lease {
  idgen_registry_t *r;
  idgen__pool_t pool;
  char pool_name[IDGEN_FIELD_NAME_MAX + 520]; /* "worker@datacenter=1" or "worker@-" */
  uint64_t worker, generation;
  int64_t mark_ms;
  int64_t ttl_ms, quarantine_ms, mark_step_ms;
  int64_t expires_ms;         /* the registry's expiry, Unix ms by its clock; 0: none */
  unsigned fork_gen;          /* the process that holds it */
  atomic_int bound;           /* a generator is bound to it */
  int fd;                     /* file: the held lock file */
  char path[1024];            /* file: its path */
  char holder[128];
};

extern const idgen__registry_ops_t idgen__registry_static, idgen__registry_file,
    idgen__registry_postgres, idgen__registry_postgresql;

/* file: records (registry_file.c): "idgen-lease v1 generation=N mark_ms=M
 * holder=H", padded with spaces to 255 bytes and a newline.  parse: 0, or
 * -1 for anything that is not exactly such a record (holder may be NULL
 * with holderlen 0); format: 0, or -1 if it does not fit. */
#define IDGEN__LEASE_RECORD_SIZE 256
int idgen__lease_record_parse(const char *buf, size_t n, uint64_t *gen, int64_t *mark,
                              char *holder, size_t holderlen);
int idgen__lease_record_format(char *buf, uint64_t gen, int64_t mark, const char *holder);

/* The mark written when a bound generator stops: the last tick it used,
 * which may be below l->mark_ms (nothing above it was issued). */
int idgen__lease_final_mark(idgen_lease_t *l, int64_t mark_ms);

/* The wall clock of a request, in ms; and sleeping on it. */
int64_t idgen__req_now_ms(const idgen_lease_request_t *req);
void idgen__req_sleep_ms(const idgen_lease_request_t *req, int64_t ms);

#endif
