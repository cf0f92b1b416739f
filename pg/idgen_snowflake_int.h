/*
 * idgen_snowflake_int.h -- what the files of idgen_snowflake() share (its
 * one entry point from _PG_init is idgen_pg.h's):
 *
 *   idgen_snowflake.c  the shared memory, the slot protocol between the
 *                      worker and the backends, the SQL functions
 *   idgen_worker.c     the background worker that holds the lease
 *   idgen_record.c     the data directory's records: the owner check
 *                      ($PGDATA/pg_idgen.owner) and the last run
 *                      ($PGDATA/pg_idgen.last); which registry by default
 *   idgen_guc.c        the settings (idgen.registry, idgen.node, ...)
 *
 * Include after postgres.h.  Private to pg/: nothing here is for another
 * extension or the library.
 */
#ifndef IDGEN_SNOWFLAKE_INT_H
#define IDGEN_SNOWFLAKE_INT_H

#include <signal.h>
#include <pthread.h>

#include "port/atomics.h"
#include "storage/spin.h"

#include "idgen.h"

/* Runs fn with every signal blocked, so that threads it starts (the lease's
 * keeper, libcurl's resolver) never run PostgreSQL's signal handlers. */
#define WITHOUT_SIGNALS(stmt)                                                                      \
  do {                                                                                             \
    sigset_t all_, old_;                                                                           \
    sigfillset(&all_);                                                                             \
    pthread_sigmask(SIG_BLOCK, &all_, &old_);                                                      \
    stmt;                                                                                          \
    pthread_sigmask(SIG_SETMASK, &old_, NULL);                                                     \
  } while (0)

/* ---- the shared memory (idgen_snowflake.c) ------------------------------- */

#define NSLOTS 4
#define CACHELINE 64

enum { ST_STARTING = 0, ST_READY = 1, ST_FAILED = 2 };

typedef struct {
  pg_atomic_uint64 v;
  char pad[CACHELINE - sizeof(pg_atomic_uint64)];
} padded_u64;

typedef struct {
  pg_atomic_uint32 status;  /* ST_* */
  pg_atomic_uint32 current; /* slot index, or NSLOTS: none */
  pg_atomic_uint64 swaps;   /* how many times `current` changed */
  slock_t mu;               /* guards reason and info */
  char reason[2048];        /* why it is not ready */
  char info[512];           /* the lease, for the log and messages */
  uint64 retired[NSLOTS];   /* the worker's own: swap count at retirement, 0 never used */
  /* the worker's own: a new generator starts above this (the last ones'
   * IDs), kept across the worker's restarts */
  int64 after_ms;
  Size gen_size;
  Size gens_off;                          /* from the struct's start, aligned */
  int nseen;                              /* MaxBackends + 1 */
  padded_u64 seen[FLEXIBLE_ARRAY_MEMBER]; /* by BackendId: a swap count, or PG_UINT64_MAX */
} idgen_shared;

/* The shared memory, found or made at shmem_startup_hook time; NULL where
 * the library was not loaded by the postmaster. */
extern idgen_shared *idgen_pg_shm;

/* The generator in slot i (inline: a backend's every call reads it). */
static inline idgen_snowflake_gen_t *idgen_pg_slot_gen(int i) {
  return (idgen_snowflake_gen_t *)((char *)idgen_pg_shm + idgen_pg_shm->gens_off +
                                   (Size)i * idgen_pg_shm->gen_size);
}

/* The worker's half of the slot protocol (the backends' is enter() and
 * leave() in idgen_snowflake.c): a slot no call can be using, or -1; the
 * generator made in slot `cur` made current; slot `cur` no longer current. */
int idgen_pg_slot_free(void);
void idgen_pg_slot_publish(int cur);
void idgen_pg_slot_retire(int cur);

/* ---- the background worker (idgen_worker.c) ------------------------------ */

/* ---- the settings (idgen_guc.c) ------------------------------------------ */

/* The settings idgen.registry, idgen.node and idgen.lease_ttl_ms. */
extern char *idgen_pg_registry, *idgen_pg_node;
extern int idgen_pg_lease_ttl_ms;

/* Defines idgen.registry and the others (and keeps idgen.layout as the
 * postmaster loaded us); only while the postmaster loads us. */
void idgen_pg_guc_define(void);

/* The worker's settings into l, s (node values) and the registry URI (the
 * registry `base`, idgen.registry or the host's, with idgen.space); false
 * with a message. */
bool idgen_pg_read_settings(idgen_layout_t *l, idgen_snowflake_settings_t *s, const char *base,
                            char *uri, size_t n, const char **field, char *err, size_t errlen);

/* ---- the data directory's records (idgen_record.c) ----------------------- */

/* Whether uri is a file: registry, its directory into dir[n]; whether that
 * directory is in the data directory; whether this server made the
 * registry `reg` there (false with a message). */
bool idgen_pg_file_registry_dir(const char *uri, char *dir, size_t n);
bool idgen_pg_in_data_dir(const char *dir);
bool idgen_pg_owner_check(const char *reg, char *err, size_t errlen);

/* With idgen.registry unset: true when the data directory holds no
 * registry of earlier versions' default (else false with the message);
 * the host's registry into uri[n] (else false with the message). */
bool idgen_pg_earlier_default(char *err, size_t errlen);
bool idgen_pg_host_registry(char *uri, size_t n, char *err, size_t errlen);

/* $PGDATA/pg_idgen.last: where the last run left off on `reg` (0 nothing
 * known, -1 unreadable); the lease `ls` recorded durably (false with a
 * message); the time up to which this run may have issued, recorded
 * durably (false with a message when err); whether a lease is recorded,
 * and the time last recorded. */
int64 idgen_pg_last_mark(idgen_registry_t *reg);
bool idgen_pg_last_write(idgen_registry_t *reg, idgen_lease_t *ls, char *err, size_t errlen);
bool idgen_pg_last_store(int64 issued_ms, char *err, size_t errlen);
bool idgen_pg_last_has_lease(void);
int64 idgen_pg_last_issued(void);

#endif
