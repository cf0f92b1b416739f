/*
 * idgen_worker.c -- idgen_snowflake()'s background worker, "idgen lease
 * keeper": the one process that holds the lease.  It opens the registry
 * (idgen.registry, or the host's), starts above what the last run issued
 * (idgen_record.c), makes the generator in a free slot of the shared memory
 * on a new lease, waits while the clock is behind the last run's IDs,
 * publishes the generator to the backends (the slot protocol,
 * idgen_snowflake.c), and watches the lease: lost for good (fenced), the
 * generator is retired and a new one made.  The library's keeper threads
 * run in this process, with every signal blocked.
 */
#include "postgres.h"

#include <signal.h>
#include <time.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/wait_event.h"

#include "idgen.h"
#include "idgen_pg.h"
#include "idgen_snowflake_int.h"

#define RETRY_MS 1000 /* between failed acquisitions */

/* ---- the background worker ---------------------------------------------- */

static volatile sig_atomic_t stopping;

static void on_sigterm(SIGNAL_ARGS) {
  int save = errno;
  (void)postgres_signal_arg;
  stopping = 1;
  SetLatch(MyLatch);
  errno = save;
}

static void set_state(int status, const char *reason, const char *info) {
  SpinLockAcquire(&idgen_pg_shm->mu);
  if (reason)
    strlcpy(idgen_pg_shm->reason, reason, sizeof idgen_pg_shm->reason);
  if (info)
    strlcpy(idgen_pg_shm->info, info, sizeof idgen_pg_shm->info);
  SpinLockRelease(&idgen_pg_shm->mu);
  pg_atomic_write_u32(&idgen_pg_shm->status, (uint32)status);
}

/* Sleeps ms on the latch (or until SIGTERM); false when stopping. */
static bool nap(long ms) {
  if (stopping)
    return false;
  (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, PG_WAIT_EXTENSION);
  ResetLatch(MyLatch);
  return !stopping;
}

/* The worker's generator and lease: current slot, or -1. */
static int cur = -1;
static idgen_lease_t *lease;
static idgen_layout_t l;

/* Ends the current generator: no call starts on it, the keeper stops with a
 * final mark, the lease goes back. */
static void end_current(void) {
  idgen_snowflake_gen_t *g;
  idgen_snowflake_stats_t gs;
  if (cur < 0)
    return;
  g = idgen_pg_slot_gen(cur);
  idgen_pg_slot_retire(cur);
  idgen_snowflake_gen_fini_shared(g); /* the final mark; the ceiling is 0 */
  /* After the ceiling went to 0: a call still on the slot cannot issue a
   * value taken from now on, so `next` covers everything issued. */
  idgen_snowflake_gen_stats(g, &gs);
  if (gs.last_id != 0) {
    uint64_t values[IDGEN_LAYOUT_MAX_FIELDS];
    int64_t ms;
    if (idgen_layout_decompose(&l, gs.last_id, values, &ms) == 0 && ms > idgen_pg_shm->after_ms)
      idgen_pg_shm->after_ms = ms;
  }
  /* what this generator issued, exactly */
  if (lease != NULL && idgen_pg_last_has_lease())
    (void)idgen_pg_last_store(idgen_pg_shm->after_ms, NULL, 0);
  if (lease != NULL)
    idgen_lease_release(lease);
  lease = NULL;
  cur = -1;
}

/* On any exit of the worker (an ERROR, too): what is current ends. */
static void worker_exit(int code, Datum arg) {
  (void)code;
  (void)arg;
  end_current();
}

/* A setting needs fixing: the reason stays for every call to see, and the
 * worker idles until it is stopped (exit code 1: after a crash restart,
 * which resets the shared memory, it runs again and says it again). */
static void off(const char *why) pg_attribute_noreturn();
static void off(const char *why) {
  set_state(ST_FAILED, why, NULL);
  ereport(LOG, (errmsg("idgen: idgen_snowflake() is off until the settings change and the "
                       "server restarts: %s",
                       why)));
  while (nap(60000))
    ;
  proc_exit(1);
}

/* ---- the worker's steps --------------------------------------------------- */

/* The registry to lease from, before idgen.space: idgen.registry, or the
 * host's. */
static void which_registry(char *base, size_t n) {
  char err[2048];
  if (idgen_pg_registry && idgen_pg_registry[0]) {
    strlcpy(base, idgen_pg_registry, n);
  } else {
    /* The host's registry, or nothing: never one of this server's own
     * unless named.  Refused while the server's user may not use it, and
     * looked at again every RETRY_MS (a directory made or shared later is
     * taken without a restart); said once, and again when it changes. */
    if (!idgen_pg_earlier_default(err, sizeof err))
      off(err);
    for (char said[sizeof err] = "";;) {
      if (idgen_pg_host_registry(base, n, err, sizeof err))
        break;
      set_state(ST_FAILED, err, NULL);
      if (strcmp(said, err) != 0)
        ereport(LOG, (errmsg("idgen: idgen_snowflake() leases nothing (looking again every %d "
                             "ms): %s",
                             RETRY_MS, err)));
      strlcpy(said, err, sizeof said);
      if (!nap(RETRY_MS))
        proc_exit(1);
    }
  }
}

/* Opening the registry: the settings into l, s, *field and uri[n] (the
 * registry's URI), the owner check, and the registry opened. */
static idgen_registry_t *open_registry(idgen_snowflake_settings_t *s, const char **field, char *uri,
                                       size_t n) {
  idgen_registry_t *reg = NULL;
  char base[1100], dir[MAXPGPATH], err[2048];
  int rc;
  which_registry(base, sizeof base);
  if (!idgen_pg_read_settings(&l, s, base, uri, n, field, err, sizeof err))
    off(err);
  /* A registry in the data directory is copied with it: only the server
   * that made it uses it. */
  if (idgen_pg_file_registry_dir(uri, dir, sizeof dir) && idgen_pg_in_data_dir(dir) &&
      !idgen_pg_owner_check(dir, err, sizeof err))
    off(err);
  /* A registry that cannot be reached yet (a database starting, this very
   * server among them) is tried again; a malformed URI is a setting. */
  for (;;) {
    WITHOUT_SIGNALS(rc = idgen_registry_open(&reg, uri, err, sizeof err));
    if (rc == 0)
      break;
    set_state(ST_FAILED, err, NULL);
    if (rc == IDGEN_EINVAL)
      off(err);
    ereport(LOG,
            (errmsg("idgen: cannot open the registry (retrying in %d ms): %s", RETRY_MS, err)));
    if (!nap(RETRY_MS))
      proc_exit(1);
  }
  return reg;
}

/* The floor from the last run: above everything the last run issued,
 * whichever tuple this run gets. */
static void floor_from_last_run(idgen_registry_t *reg, const char *uri) {
  for (;;) {
    int64 m = strcmp(uri, "static") == 0 ? 0 : idgen_pg_last_mark(reg);
    if (m >= 0) {
      if (m > idgen_pg_shm->after_ms)
        idgen_pg_shm->after_ms = m;
      break;
    }
    set_state(ST_FAILED, "cannot read the mark of the last lease from the registry (retrying)",
              NULL);
    if (!nap(RETRY_MS))
      proc_exit(1);
  }
}

enum { BIND_STOP = -1, BIND_RETRY = -2 };

/* Binding a slot: a generator made in a free slot on a new lease (`lease`,
 * recorded in pg_idgen.last), into *gp; its slot, BIND_RETRY after a
 * failure (said, and RETRY_MS later), or BIND_STOP once stopping. */
static int bind_slot(idgen_registry_t *reg, const idgen_snowflake_settings_t *s, const char *field,
                     const char *uri, idgen_snowflake_gen_t **gp) {
  idgen_snowflake_settings_t bs = *s;
  idgen_bind_request_t req = {.layout = &l,
                              .settings = &bs,
                              .field = field,
                              .ttl_ms = idgen_pg_lease_ttl_ms,
                              .max_start_wait_ms = -1};
  idgen_snowflake_gen_t *g;
  char err[2048];
  int slot, rc;
  /* a free slot to make the generator in */
  while ((slot = idgen_pg_slot_free()) < 0 && nap(10))
    ;
  if (slot < 0)
    return BIND_STOP;
  g = idgen_pg_slot_gen(slot);
  if (strcmp(uri, "static") == 0) {
    /* No mark: what an earlier run (a crash restart a moment ago) may
     * have issued by borrowing is at most max_borrow_ms and a tick ahead
     * of its clock.  Wait that out first (it does not cover a clock
     * stepped back: static keeps no record). */
    if (!nap((long)(s->max_borrow_ms + l.unit_ms + 1)))
      return BIND_STOP;
  } else {
    bs.start_after_ms = idgen_pg_shm->after_ms;
  }
  req.mem = g;
  req.mem_size = idgen_pg_shm->gen_size;
  WITHOUT_SIGNALS(rc = idgen_registry_bind(reg, &req, &lease, &g, err, sizeof err));
  if (rc == 0 && lease != NULL && !idgen_pg_last_write(reg, lease, err, sizeof err)) {
    idgen_snowflake_gen_fini_shared(g);
    idgen_lease_release(lease);
    lease = NULL;
    rc = IDGEN_EREGISTRY;
  }
  if (rc < 0) {
    set_state(ST_FAILED, err, NULL);
    ereport(LOG,
            (errmsg("idgen: cannot start the generator (retrying in %d ms): %s", RETRY_MS, err)));
    if (!nap(RETRY_MS))
      return BIND_STOP;
    return BIND_RETRY;
  }
  *gp = g;
  return slot;
}

/* Waiting for the clock: the last run's IDs may be ahead of it (it was
 * stepped back, or a mark step ahead after a crash): calls wait, saying so,
 * rather than fail one by one until it passes them.  Returns once it has,
 * or once stopping. */
static void wait_for_clock(const idgen_snowflake_settings_t *s) {
  for (bool told = false;;) {
    struct timespec ts;
    int64 now_ms, ahead;
    char at[IDGEN_TIME_TEXT_MAX], why[300];
    clock_gettime(CLOCK_REALTIME, &ts);
    now_ms = (int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    ahead = idgen_pg_shm->after_ms - s->max_borrow_ms - now_ms;
    if (ahead <= 0)
      break;
    idgen_time_format(idgen_pg_shm->after_ms, at);
    snprintf(why, sizeof why,
             "idgen_snowflake() starts in %lld ms: this database issued IDs up to %s, "
             "ahead of this server's clock, and its new IDs come after them",
             (long long)ahead, at);
    if (!told)
      ereport(LOG, (errmsg("idgen: %s", why)));
    told = true;
    set_state(ST_STARTING, why, NULL);
    if (!nap(ahead < 250 ? (long)ahead : 250))
      break;
  }
}

/* Publishing the generator in `slot`: the lease into info[n], the slot
 * current, the worker ready. */
static void publish_generator(int slot, idgen_registry_t *reg, char *info, size_t n) {
  if (lease != NULL) {
    idgen_lease_info_t li;
    idgen_lease_info(lease, &li);
    snprintf(info, n, "%s from %s, generation %llu", li.node, idgen_registry_uri(reg),
             (unsigned long long)li.generation);
  } else {
    snprintf(info, n, "%s (static: unchecked, no mark)",
             idgen_pg_node && idgen_pg_node[0] ? idgen_pg_node : "all node values 0");
  }
  cur = slot;
  idgen_pg_slot_publish(cur);
  set_state(ST_READY, "", info);
  ereport(LOG, (errmsg("idgen: idgen_snowflake() is ready: %s", info)));
}

/* Watching the lease (`info`) of generator g: returns once it is lost for
 * good (fenced), which means a new one, or once stopping. */
static void watch_lease(idgen_snowflake_gen_t *g, const char *info) {
  char err[2048];
  for (int turn = 1;; turn++) {
    idgen_snowflake_lease_status_t st;
    if (!nap(100))
      break;
    if (lease == NULL)
      continue;
    idgen_snowflake_gen_lease_status(g, &st);
    /* Once a second, the durable mark (at or above every ID issued) into
     * $PGDATA/pg_idgen.last, for a restart on a registry spelled
     * otherwise. */
    if (turn % 10 == 0 && st.lease.mark_ms > idgen_pg_last_issued())
      (void)idgen_pg_last_store(st.lease.mark_ms, NULL, 0);
    if (st.fenced) {
      snprintf(err, sizeof err, "the lease (%s) was lost: %s; taking a new one", info, st.reason);
      ereport(LOG, (errmsg("idgen: %s", err)));
      set_state(ST_FAILED, err, NULL);
      break;
    }
    if (!st.valid) {
      SpinLockAcquire(&idgen_pg_shm->mu);
      snprintf(idgen_pg_shm->reason, sizeof idgen_pg_shm->reason,
               "the lease (%s) cannot be shown valid: %s", info, st.reason);
      SpinLockRelease(&idgen_pg_shm->mu);
    }
  }
}

PGDLLEXPORT void idgen_worker_main(Datum arg);
void idgen_worker_main(Datum arg) {
  idgen_snowflake_settings_t s;
  idgen_registry_t *reg;
  const char *field;
  char uri[1100], info[512];

  (void)arg;
  pqsignal(SIGTERM, on_sigterm);
  BackgroundWorkerUnblockSignals();
  before_shmem_exit(worker_exit, 0);

  set_state(ST_STARTING, "the idgen background worker is starting", NULL);
  reg = open_registry(&s, &field, uri, sizeof uri);
  floor_from_last_run(reg, uri);

  while (!stopping) {
    idgen_snowflake_gen_t *g;
    int slot = bind_slot(reg, &s, field, uri, &g);
    if (slot == BIND_STOP)
      break;
    if (slot == BIND_RETRY)
      continue;
    wait_for_clock(&s);
    if (stopping) {
      idgen_snowflake_gen_fini_shared(g);
      if (lease != NULL)
        idgen_lease_release(lease);
      lease = NULL;
      break;
    }
    publish_generator(slot, reg, info, sizeof info);
    watch_lease(g, info);
    end_current();
  }
  /* SIGTERM: the server is shutting down, or someone stopped the worker;
   * exit code 1 has the postmaster start it again in the second case. */
  set_state(ST_FAILED,
            "the idgen background worker was stopped (SIGTERM): unless the server "
            "is shutting down, it is started again within a second and takes a new lease, "
            "above the IDs issued so far (calls wait up to 10 s for it)",
            NULL);
  idgen_registry_close(reg);
  proc_exit(1);
}

void idgen_pg_worker_register(void) {
  BackgroundWorker w;
  memset(&w, 0, sizeof w);
  w.bgw_flags = BGWORKER_SHMEM_ACCESS;
  /* Not on a standby: it would issue what its primary issues (a registry
   * in the data directory is a copy; the host's is another host's). */
  w.bgw_start_time = BgWorkerStart_RecoveryFinished;
  w.bgw_restart_time = 1;
  strlcpy(w.bgw_library_name, "idgen", sizeof w.bgw_library_name);
  strlcpy(w.bgw_function_name, "idgen_worker_main", sizeof w.bgw_function_name);
  strlcpy(w.bgw_name, "idgen lease keeper", sizeof w.bgw_name);
  strlcpy(w.bgw_type, "idgen lease keeper", sizeof w.bgw_type);
  RegisterBackgroundWorker(&w);
}
