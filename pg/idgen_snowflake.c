/*
 * idgen_snowflake.c -- idgen_snowflake() and idgen_snowflake_n(n): one
 * Snowflake generator for the whole server, in shared memory.
 *
 * DESIGN.  libidgen's generator is atomic words and nothing else on the
 * hot path, so it works from every backend at once when it lives in shared
 * memory (idgen_snowflake_gen_init_shared): one fetch_add per ID, as between
 * threads.  That needs the library loaded by the postmaster before it forks
 * (shared_preload_libraries = 'idgen'): the memory is requested then, and
 * the code sits at one address in every backend.
 *
 * The node values: the registry idgen.registry leases the leased field
 * (idgen.lease_field: worker, or the layout's only node field), idgen.node
 * gives the others, as `idgen serve` does.  The default registry is the
 * host's, from the library's idgen_registry_default_uri() as the command's
 * and the daemon's (processes on one host that take the default never use
 * two registries: tests/pg_default_registry_test.sh has the extension and a
 * daemon on defaults lease two tuples of one): when the server's user may
 * not use it, the worker leases nothing and idgen_snowflake() says why and
 * what to do.  A data directory that holds the registry earlier versions
 * made by default ($PGDATA/pg_idgen) with idgen.registry unset is refused,
 * naming both ways out: registries are never changed silently (its marks
 * order the IDs across restarts).  A file: registry inside the data
 * directory is copied with it, so it is used only by the server that made
 * it (the owner check).
 * The durable high-water mark (idgen.h) makes a restart under a clock
 * stepped back start above every ID issued before.  A fleet of servers
 * shares a postgres:// registry.  `static` takes every value from
 * idgen.node and keeps no mark (unchecked, as in the CLI).
 *
 * One background worker holds the lease: the library's keeper threads run in
 * it, renew the lease and move the mark ahead, and keep the generator's
 * `ceiling` (in the shared memory) at the durable mark, or 0 while the lease
 * cannot be shown valid -- backends never issue above it.  When the lease is
 * lost for good (fenced), the worker retires that generator and makes a new
 * one on a new lease, starting above the old one's IDs, in another of
 * NSLOTS slots.  A slot is made again only once no backend can still be in
 * a call on it: each backend announces the swap count it read before it
 * reads which slot is current (`seen`, one cache line per backend, an atomic
 * exchange), and clears it after the call; a slot retired at swap count E is
 * free once every announcement is clear or at least E (the read of `current`
 * that follows an announcement of E or more sees the swap).
 *
 * The files: this one has the shared memory, the slot protocol and the SQL
 * functions; idgen_worker.c the background worker, idgen_record.c the data
 * directory's records (the owner check, the last run) and the default
 * registry, idgen_guc.c the settings; idgen_snowflake_int.h what they share.
 */
#include "postgres.h"

#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "idgen.h"
#include "idgen_pg.h"
#include "idgen_snowflake_int.h"

#define CHUNK 4096          /* IDs per call to the library in idgen_snowflake_n */
#define START_WAIT_MS 10000 /* a call waits this long for the worker's first lease */

idgen_shared *idgen_pg_shm;
static shmem_request_hook_type prev_request;
static shmem_startup_hook_type prev_startup;

static Size shared_size(void) {
  Size s = offsetof(idgen_shared, seen) + sizeof(padded_u64) * (Size)(MaxBackends + 1);
  s = TYPEALIGN(CACHELINE, s) + CACHELINE; /* room to align the slots */
  return add_size(s, mul_size(NSLOTS, TYPEALIGN(CACHELINE, idgen_snowflake_gen_shared_size())));
}

static void request_shmem(void) {
  if (prev_request)
    prev_request();
  RequestAddinShmemSpace(shared_size());
}

static void startup_shmem(void) {
  bool found;
  if (prev_startup)
    prev_startup();
  LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
  idgen_pg_shm = ShmemInitStruct("idgen", shared_size(), &found);
  if (!found) {
    Size base = offsetof(idgen_shared, seen) + sizeof(padded_u64) * (Size)(MaxBackends + 1);
    memset(idgen_pg_shm, 0, base);
    pg_atomic_init_u32(&idgen_pg_shm->status, ST_STARTING);
    pg_atomic_init_u32(&idgen_pg_shm->current, NSLOTS);
    pg_atomic_init_u64(&idgen_pg_shm->swaps, 1);
    SpinLockInit(&idgen_pg_shm->mu);
    snprintf(idgen_pg_shm->reason, sizeof idgen_pg_shm->reason,
             "the idgen background worker has not started yet");
    idgen_pg_shm->nseen = MaxBackends + 1;
    for (int i = 0; i < idgen_pg_shm->nseen; i++)
      pg_atomic_init_u64(&idgen_pg_shm->seen[i].v, PG_UINT64_MAX);
    idgen_pg_shm->gen_size = TYPEALIGN(CACHELINE, idgen_snowflake_gen_shared_size());
    idgen_pg_shm->gens_off =
        (Size)(TYPEALIGN(CACHELINE, (uintptr_t)idgen_pg_shm + base) - (uintptr_t)idgen_pg_shm);
  }
  LWLockRelease(AddinShmemInitLock);
}

/* ---- the slot protocol: the worker's half ------------------------------- */

/* Makes slot `cur` no longer current: after this no call starts on it. */
void idgen_pg_slot_retire(int cur) {
  pg_atomic_write_u32(&idgen_pg_shm->current, NSLOTS);
  idgen_pg_shm->retired[cur] = pg_atomic_add_fetch_u64(&idgen_pg_shm->swaps, 1);
}

/* A slot no call can be using: never used, or retired at a swap count that
 * every backend's announcement is clear of or has reached. */
int idgen_pg_slot_free(void) {
  pg_memory_barrier();
  for (int i = 0; i < NSLOTS; i++) {
    bool ok = true;
    for (int b = 0; ok && idgen_pg_shm->retired[i] != 0 && b < idgen_pg_shm->nseen; b++) {
      uint64 s = pg_atomic_read_u64(&idgen_pg_shm->seen[b].v);
      ok = s == PG_UINT64_MAX || s >= idgen_pg_shm->retired[i];
    }
    if (ok)
      return i;
  }
  return -1;
}

/* Makes the generator in slot `cur` current: calls start on it from now on. */
void idgen_pg_slot_publish(int cur) {
  idgen_pg_shm->retired[cur] = 0;
  pg_write_barrier(); /* the generator's memory before the slot's number */
  pg_atomic_write_u32(&idgen_pg_shm->current, (uint32)cur);
  pg_atomic_add_fetch_u64(&idgen_pg_shm->swaps, 1);
}

void idgen_pg_snowflake_init(void) {
  /* Settings of the postmaster can only be made while it loads us. */
  if (!process_shared_preload_libraries_in_progress)
    return;
  idgen_pg_guc_define();
  prev_request = shmem_request_hook;
  shmem_request_hook = request_shmem;
  prev_startup = shmem_startup_hook;
  shmem_startup_hook = startup_shmem;
}

/* ---- the SQL functions ---------------------------------------------------- */

/* The generator to use, announced in `seen`: ERRORs (announcement cleared)
 * when there is none. */
static idgen_snowflake_gen_t *enter(const char *fn, pg_atomic_uint64 **seen) {
  int waited = 0;
  if (idgen_pg_shm == NULL)
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("idgen: %s needs the library loaded at server start", fn),
             errhint("Add idgen to shared_preload_libraries in postgresql.conf and restart the "
                     "server: the generator lives in shared memory, one for all sessions.")));
  if (RecoveryInProgress())
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("idgen: %s does not run on a standby (the server is in "
                           "recovery): a standby would issue its primary's IDs; it starts once "
                           "the server is promoted",
                           fn)));
  if (MyBackendId == InvalidBackendId || MyBackendId >= idgen_pg_shm->nseen)
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("idgen: %s cannot run in this kind of process", fn)));
  *seen = &idgen_pg_shm->seen[MyBackendId].v;
  for (;;) {
    uint32 cur, status;
    char why[sizeof idgen_pg_shm->reason];
    pg_atomic_exchange_u64(*seen, pg_atomic_read_u64(&idgen_pg_shm->swaps));
    cur = pg_atomic_read_u32(&idgen_pg_shm->current);
    if (cur < NSLOTS) {
      pg_read_barrier(); /* pairs with the worker's write barrier */
      return idgen_pg_slot_gen((int)cur);
    }
    pg_atomic_write_u64(*seen, PG_UINT64_MAX);
    status = pg_atomic_read_u32(&idgen_pg_shm->status);
    if (status == ST_STARTING && waited < START_WAIT_MS) {
      /* the server just started: the worker is taking its lease */
      CHECK_FOR_INTERRUPTS();
      pg_usleep(10000L);
      waited += 10;
      continue;
    }
    SpinLockAcquire(&idgen_pg_shm->mu);
    strlcpy(why, idgen_pg_shm->reason, sizeof why);
    SpinLockRelease(&idgen_pg_shm->mu);
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("idgen: %s has no generator: %s", fn, why)));
  }
}

/* Clears the announcement, after everything the call read and wrote (an
 * exchange: a full barrier, so also on weakly ordered CPUs). */
static void leave(pg_atomic_uint64 *seen) { pg_atomic_exchange_u64(seen, PG_UINT64_MAX); }

/* An ERROR for a refused call, with the lease's state when it is the cause. */
static void refused(const char *fn, int rc) {
  char why[sizeof idgen_pg_shm->reason];
  SpinLockAcquire(&idgen_pg_shm->mu);
  strlcpy(why, rc == IDGEN_ELEASE || rc == IDGEN_EMARK ? idgen_pg_shm->reason : "", sizeof why);
  SpinLockRelease(&idgen_pg_shm->mu);
  ereport(ERROR, (errcode(rc == IDGEN_EEXHAUSTED ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
                                                 : ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                  errmsg("idgen: %s: %s%s%s", fn, idgen_strerror(rc), why[0] ? ": " : "", why)));
}

PG_FUNCTION_INFO_V1(idgen_pg_snowflake);
Datum idgen_pg_snowflake(PG_FUNCTION_ARGS) {
  pg_atomic_uint64 *seen;
  idgen_snowflake_gen_t *g = enter("idgen_snowflake()", &seen);
  uint64_t id;
  int rc = idgen_snowflake_gen_next(g, &id);
  leave(seen);
  if (rc < 0)
    refused("idgen_snowflake()", rc);
  PG_RETURN_INT64((int64)id);
}

typedef struct {
  int64 left;     /* still to make */
  int have, next; /* buf[next..have) not returned yet */
  uint64_t buf[CHUNK];
} batch_state;

PG_FUNCTION_INFO_V1(idgen_pg_snowflake_n);
Datum idgen_pg_snowflake_n(PG_FUNCTION_ARGS) {
  FuncCallContext *fc;
  batch_state *b;
  if (SRF_IS_FIRSTCALL()) {
    int32 n = PG_GETARG_INT32(0);
    MemoryContext old;
    if (n < 0)
      ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                      errmsg("idgen: idgen_snowflake_n(%d): the count must not be negative", n)));
    fc = SRF_FIRSTCALL_INIT();
    old = MemoryContextSwitchTo(fc->multi_call_memory_ctx);
    b = palloc0(sizeof *b);
    b->left = n;
    fc->user_fctx = b;
    MemoryContextSwitchTo(old);
  }
  fc = SRF_PERCALL_SETUP();
  b = fc->user_fctx;
  if (b->next == b->have && b->left > 0) {
    /* the next chunk: one claim, each within the per-call wait (bounded) */
    pg_atomic_uint64 *seen;
    int k = b->left < CHUNK ? (int)b->left : CHUNK, rc;
    idgen_snowflake_gen_t *g = enter("idgen_snowflake_n()", &seen);
    rc = idgen_snowflake_gen_next_n(g, b->buf, (size_t)k);
    leave(seen);
    if (rc < 0)
      refused("idgen_snowflake_n()", rc);
    b->have = k;
    b->next = 0;
    b->left -= k;
  }
  if (b->next < b->have)
    SRF_RETURN_NEXT(fc, Int64GetDatum((int64)b->buf[b->next++]));
  SRF_RETURN_DONE(fc);
}
