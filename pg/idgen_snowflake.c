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
 * and the daemon's (SPEC §8: processes on one host that take the default
 * never use two registries): when the server's user may not use it, the
 * worker leases nothing and idgen_snowflake() says why and what to do.  A
 * data directory that holds the registry earlier versions made by default
 * ($PGDATA/pg_idgen) with idgen.registry unset is refused, naming both ways
 * out: registries are never changed silently (its marks order the IDs
 * across restarts).  A file: registry inside the data directory is copied
 * with it, so it is used only by the server that made it (owner_check).
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
 */
#include "postgres.h"

#include <signal.h>
#include <pthread.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/backendid.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "idgen.h"
#include "idgen_pg.h"

#define NSLOTS 4
#define CACHELINE 64
#define CHUNK 4096          /* IDs per call to the library in idgen_snowflake_n */
#define START_WAIT_MS 10000 /* a call waits this long for the worker's first lease */
#define RETRY_MS 1000       /* between failed acquisitions */

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
  int64 after_ms;           /* the worker's own: a new generator starts above this (the
                              * last ones' IDs), kept across the worker's restarts */
  Size gen_size;
  Size gens_off;                          /* from the struct's start, aligned */
  int nseen;                              /* MaxBackends + 1 */
  padded_u64 seen[FLEXIBLE_ARRAY_MEMBER]; /* by BackendId: a swap count, or PG_UINT64_MAX */
} idgen_shared;

static idgen_shared *sh;
static char *registry_setting, *node_setting, *lease_field_setting, *space_setting;
/* idgen.layout as the postmaster loaded us: the generator's layout for the
 * server's life, also across crash restarts after a reload changed it
 * (the workers are forked from the postmaster, which keeps this copy). */
static char *start_layout;
static int lease_ttl_setting;
static shmem_request_hook_type prev_request;
static shmem_startup_hook_type prev_startup;

static Size shared_size(void) {
  Size s = offsetof(idgen_shared, seen) + sizeof(padded_u64) * (Size)(MaxBackends + 1);
  s = TYPEALIGN(CACHELINE, s) + CACHELINE; /* room to align the slots */
  return add_size(s, mul_size(NSLOTS, TYPEALIGN(CACHELINE, idgen_snowflake_gen_shared_size())));
}

static idgen_snowflake_gen_t *slot_gen(int i) {
  return (idgen_snowflake_gen_t *)((char *)sh + sh->gens_off + (Size)i * sh->gen_size);
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
  sh = ShmemInitStruct("idgen", shared_size(), &found);
  if (!found) {
    Size base = offsetof(idgen_shared, seen) + sizeof(padded_u64) * (Size)(MaxBackends + 1);
    memset(sh, 0, base);
    pg_atomic_init_u32(&sh->status, ST_STARTING);
    pg_atomic_init_u32(&sh->current, NSLOTS);
    pg_atomic_init_u64(&sh->swaps, 1);
    SpinLockInit(&sh->mu);
    snprintf(sh->reason, sizeof sh->reason, "the idgen background worker has not started yet");
    sh->nseen = MaxBackends + 1;
    for (int i = 0; i < sh->nseen; i++)
      pg_atomic_init_u64(&sh->seen[i].v, PG_UINT64_MAX);
    sh->gen_size = TYPEALIGN(CACHELINE, idgen_snowflake_gen_shared_size());
    sh->gens_off = (Size)(TYPEALIGN(CACHELINE, (uintptr_t)sh + base) - (uintptr_t)sh);
  }
  LWLockRelease(AddinShmemInitLock);
}

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
  SpinLockAcquire(&sh->mu);
  if (reason)
    strlcpy(sh->reason, reason, sizeof sh->reason);
  if (info)
    strlcpy(sh->info, info, sizeof sh->info);
  SpinLockRelease(&sh->mu);
  pg_atomic_write_u32(&sh->status, (uint32)status);
}

/* Makes slot `cur` no longer current: after this no call starts on it. */
static void retire(int cur) {
  pg_atomic_write_u32(&sh->current, NSLOTS);
  sh->retired[cur] = pg_atomic_add_fetch_u64(&sh->swaps, 1);
}

/* A slot no call can be using: never used, or retired at a swap count that
 * every backend's announcement is clear of or has reached. */
static int free_slot(void) {
  pg_memory_barrier();
  for (int i = 0; i < NSLOTS; i++) {
    bool ok = true;
    for (int b = 0; ok && sh->retired[i] != 0 && b < sh->nseen; b++) {
      uint64 s = pg_atomic_read_u64(&sh->seen[b].v);
      ok = s == PG_UINT64_MAX || s >= sh->retired[i];
    }
    if (ok)
      return i;
  }
  return -1;
}

/* Sleeps ms on the latch (or until SIGTERM); false when stopping. */
static bool nap(long ms) {
  if (stopping)
    return false;
  (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms, PG_WAIT_EXTENSION);
  ResetLatch(MyLatch);
  return !stopping;
}

/* idgen.lease_ttl_ms: 0 (the registry's default), or within the library's
 * bounds (idgen_lease_ttl_check; the GUC's own range is wider so that
 * every refusal is the library's), refused with its message when set, not
 * by the worker later. */
static bool check_lease_ttl(int *newval, void **extra, GucSource source) {
  char e[200];
  if (*newval == 0 || idgen_lease_ttl_check(*newval, e, sizeof e) == 0)
    return true;
  GUC_check_errdetail("%s.", e);
  return false;
}

/* The worker's settings into l, s (node values) and the registry URI (the
 * registry `base`, idgen.registry or the host's, with idgen.space); false
 * with a message. */
static bool read_settings(idgen_layout_t *l, idgen_snowflake_settings_t *s, const char *base,
                          char *uri, size_t n, const char **field, char *err, size_t errlen) {
  const char *spec = start_layout, *now = GetConfigOption("idgen.layout", false, false);
  static const char *const guc[] = {[IDGEN_LEASE_SETTING_NONE] = "registry",
                                    [IDGEN_LEASE_SETTING_REGISTRY] = "registry",
                                    [IDGEN_LEASE_SETTING_LAYOUT] = "layout",
                                    [IDGEN_LEASE_SETTING_NODE] = "node",
                                    [IDGEN_LEASE_SETTING_FIELD] = "lease_field"};
  idgen_lease_settings_t ls = {0};
  unsigned given = 0;
  int f;
  char e[300];
  if (now != NULL && strcmp(now, spec) != 0)
    ereport(LOG, (errmsg("idgen: idgen.layout is now %s; idgen_snowflake() keeps the layout the "
                         "server started with, %s, until the server is restarted",
                         now, spec)));
  if (idgen_layout_parse(l, spec, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.layout: %s", e);
    return false;
  }
  if (l->total_bits > 63) {
    snprintf(err, errlen, "idgen.layout %s has %d bits; a bigint holds 63 (and a sign)", spec,
             l->total_bits);
    return false;
  }
  idgen_snowflake_settings_init(s);
  /* The library's one node-list rule, as `idgen --node`; no @ip or @mac
   * here (unchecked, so only for a static registry of the command's). */
  if (idgen_layout_nodes_parse(l, node_setting, NULL, NULL, s->node, &given, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.node: %s", e);
    return false;
  }
  if (strlen(base) >= n) {
    snprintf(err, errlen, "idgen.registry is longer than %zu bytes", n - 1);
    return false;
  }
  strlcpy(uri, base, n);
  if (space_setting && space_setting[0]) {
    size_t used = strlen(uri);
    if (strcmp(uri, "static") == 0) {
      snprintf(err, errlen, "idgen.space: the static registry keeps no ID spaces");
      return false;
    }
    if ((size_t)snprintf(uri + used, n - used, "%sspace=%s", strchr(uri, '?') ? "&" : "?",
                         space_setting) >= n - used) {
      snprintf(err, errlen, "idgen.registry with idgen.space is longer than %zu bytes", n - 1);
      return false;
    }
  }
  *field = lease_field_setting && lease_field_setting[0] ? lease_field_setting : NULL;
  /* The rules between the registry, the leased field and idgen.node: the
   * library's, as the command's and the daemon's. */
  ls.uri = uri, ls.layout = l, ls.field = *field, ls.node_given = given;
  if (idgen_lease_settings_verify(&ls, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.%s: %s", guc[ls.blame], e);
    return false;
  }
  f = ls.leased;
  /* IDs are ordered by a field above the time field first: a lease of
   * another value after a restart (or a lost lease) would issue below the
   * IDs before it (100,000 of 100,000 in a review).  A sequence's promise
   * cannot be kept then. */
  if (f >= 0 && l->fields[f].shift > l->fields[l->time_index].shift) {
    snprintf(err, errlen,
             "idgen.layout puts %s, which the registry assigns, above the time field: a "
             "restart on another %s would issue IDs below earlier ones.  Put the time field "
             "above it, or give %s by hand with idgen.registry = 'static'",
             l->fields[f].name, l->fields[f].name, l->fields[f].name);
    return false;
  }
  return true;
}

/* ---- which registry ------------------------------------------------------- */

/* The directory of a file: registry URI (file:DIR, file:///DIR or
 * file://localhost/DIR, without ?space=...), made absolute (a relative DIR
 * is the data directory's, the server's working directory), into dir[n];
 * false for any other registry. */
static bool file_registry_dir(const char *uri, char *dir, size_t n) {
  const char *p = uri + 5;
  size_t len;
  if (strncmp(uri, "file:", 5) != 0)
    return false;
  if (strncmp(p, "//", 2) == 0) {
    const char *slash = strchr(p + 2, '/');
    size_t hl = slash ? (size_t)(slash - (p + 2)) : 0;
    if (slash == NULL || (hl != 0 && !(hl == 9 && pg_strncasecmp(p + 2, "localhost", 9) == 0)))
      return false; /* another host's: the library refuses it */
    p = slash;
  }
  len = strcspn(p, "?");
  if (p[0] == '/')
    snprintf(dir, n, "%.*s", (int)len, p);
  else
    snprintf(dir, n, "%s/%.*s", DataDir, (int)len, p);
  return true;
}

/* Whether the directory `dir` is in the data directory (or is it), by real
 * paths: a directory still to be made by its parent's.  Then its leases and
 * marks are copied with the data. */
static bool in_data_dir(const char *dir) {
  char real[PATH_MAX], d[PATH_MAX], parent[MAXPGPATH];
  size_t n;
  if (realpath(DataDir, real) == NULL)
    return true; /* owner_check says why */
  if (realpath(dir, d) == NULL) {
    char *slash;
    strlcpy(parent, dir, sizeof parent);
    while ((slash = strrchr(parent, '/')) != NULL && slash[1] == '\0' && slash != parent)
      *slash = '\0'; /* trailing slashes */
    slash = strrchr(parent, '/');
    if (slash == NULL)
      strlcpy(d, dir, sizeof d);
    else {
      char pr[PATH_MAX];
      *slash = '\0';
      if (realpath(parent[0] ? parent : "/", pr) == NULL)
        strlcpy(d, dir, sizeof d); /* as given: deeper than one new level */
      else
        snprintf(d, sizeof d, "%s/%s", pr, slash + 1);
    }
  }
  n = strlen(real);
  return strncmp(d, real, n) == 0 && (d[n] == '/' || d[n] == '\0');
}

/* A registry in the data directory (the one earlier versions made by
 * default, $PGDATA/pg_idgen, or one named there on purpose) is copied with
 * it: a standby's base backup, a restore, a `cp -a` clone would lease the
 * same worker ID as the original, and their marks may be behind what the
 * original issued since.  So $PGDATA/pg_idgen.owner records which server
 * made it: the data directory (its real path and inode), the system
 * identifier and the WAL timeline.  A promotion or a point-in-time restore
 * starts a new timeline, a copy has another inode or path: the registry is
 * then refused, with what to do.  A first use on a timeline after the
 * first (a server that was promoted or restored) is refused too: its data
 * may have come from a server that issued IDs under a registry of its own.
 * The way out when the original will never issue again is the word `adopt`
 * in the record, which the next start replaces with this server's.  A
 * registry outside the data directory (the host's, a shared one) is not
 * copied with it and is not checked.  true, or false with a message. */
static bool owner_check(const char *reg, char *err, size_t errlen) {
  char path[MAXPGPATH], tmp[MAXPGPATH], real[PATH_MAX];
  char want[PATH_MAX + 200], have[PATH_MAX + 200] = "";
  struct stat st;
  FILE *f;
  TimeLineID tli = GetWALInsertionTimeLine();
  static const char *const fix =
      "Servers that share data need a registry they share (idgen.registry = "
      "'postgres://...'); if the server that made it will never issue again and the clocks "
      "agree, adopt it as this server's (its marks stay a floor): echo adopt > %s (as the "
      "server's user), then restart the server";
  if (snprintf(path, sizeof path, "%s/pg_idgen.owner", DataDir) >= (int)sizeof path ||
      snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    snprintf(err, errlen, "the data directory's path is too long");
    return false;
  }
  if (realpath(DataDir, real) == NULL || stat(real, &st) != 0) {
    snprintf(err, errlen, "cannot resolve the data directory %s: %m", DataDir);
    return false;
  }
  snprintf(want, sizeof want,
           "data_directory=%s inode=%llu system_identifier=" UINT64_FORMAT " timeline=%u\n", real,
           (unsigned long long)st.st_ino, GetSystemIdentifier(), (unsigned)tli);
  if ((f = fopen(path, "r")) != NULL) {
    int n;
    const char *h;
    if (fgets(have, sizeof have, f) == NULL)
      have[0] = '\0';
    fclose(f);
    if (strcmp(have, want) == 0)
      return true;
    if (strncmp(have, "adopt", 5) == 0 && strspn(have + 5, " \t\r\n") == strlen(have + 5)) {
      ereport(LOG, (errmsg("idgen: %s said adopt: the registry %s is this server's from now on "
                           "(%.*s)",
                           path, reg, (int)strcspn(want, "\n"), want)));
      goto write;
    }
    h = have[0] ? have : "an empty record";
    n = snprintf(err, errlen,
                 "the registry %s was made by another server (%.*s; this one is %.*s): a copy of "
                 "the data directory (a promoted standby, a restore, a clone, or a move) may "
                 "lease the worker ID the original holds and start below IDs it issued.  ",
                 reg, (int)strcspn(h, "\n"), h, (int)strcspn(want, "\n"), want);
    if (n >= 0 && (size_t)n < errlen)
      snprintf(err + n, errlen - (size_t)n, fix, path);
    return false;
  }
  if (errno != ENOENT) {
    snprintf(err, errlen, "cannot read %s: %m", path);
    return false;
  }
  if (tli > 1) {
    snprintf(err, errlen,
             "this server is on WAL timeline %u (it was promoted or restored), and its "
             "registry %s in the data directory has no record of its own: it may lease the "
             "worker ID of the server its data came from.  Set idgen.registry to a registry "
             "shared with that server, or, if it will never issue again and the clocks agree, "
             "adopt this one: echo adopt > %s (as the server's user), then restart the server",
             (unsigned)tli, reg, path);
    return false;
  }
  if (stat(reg, &st) == 0) {
    int n = snprintf(err, errlen,
                     "%s exists without %s (copied without it?): its leases may be another "
                     "server's.  ",
                     reg, path);
    if (n >= 0 && (size_t)n < errlen)
      snprintf(err + n, errlen - (size_t)n, fix, path);
    return false;
  }
write:
  /* Written durably before any lease is taken. */
  if ((f = fopen(tmp, "w")) == NULL || fputs(want, f) < 0 || fflush(f) != 0 ||
      fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
    snprintf(err, errlen, "cannot write %s: %m", path);
    return false;
  }
  return true;
}

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

/* ---- order across restarts ------------------------------------------------ */

/*
 * A DBA replacing nextval() expects a database's IDs to keep increasing
 * across restarts.  Within one run of the server, sh->after_ms does that
 * (a new generator starts above the last one's IDs); a restart resets the
 * shared memory, and the new lease may take another worker ID whose mark is
 * behind (a clock stepped back: 995,000 of 1,700,000 new IDs were below the
 * old maximum in a review).  So $PGDATA/pg_idgen.last names the tuple this
 * server leased last ("registry=URI space=NAME pool=POOL key=HEX"), written
 * durably before the generator on it is published; at the next start the
 * worker reads that tuple's mark in the registry (at or above every ID
 * issued under it: the final mark of a clean stop, the mark kept ahead
 * after a crash, or more if another holder used it since) and starts above
 * it, whichever tuple it now holds.
 */
static void last_path(char *buf, size_t n, const char *suffix) {
  snprintf(buf, n, "%s/pg_idgen.last%s", DataDir, suffix);
}

/* The lease part of the record ("registry=... key=..."), and the time up
 * to which this run may have issued, as last written. */
static char last_lease[1500];
static int64 last_issued;

/* Writes the record durably: the lease, and `issued_ms`. */
static bool last_store(int64 issued_ms, char *err, size_t errlen) {
  char path[MAXPGPATH], tmp[MAXPGPATH];
  FILE *f;
  int dfd;
  last_path(path, sizeof path, "");
  last_path(tmp, sizeof tmp, ".tmp");
  if ((f = fopen(tmp, "w")) == NULL ||
      fprintf(f, "%s issued_ms=%lld\n", last_lease, (long long)issued_ms) < 0 || fflush(f) != 0 ||
      fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
    if (err)
      snprintf(err, errlen, "cannot write %s: %m", path);
    return false;
  }
  if ((dfd = open(DataDir, O_RDONLY)) >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  last_issued = issued_ms;
  return true;
}

static bool last_write(idgen_registry_t *reg, idgen_lease_t *ls, char *err, size_t errlen) {
  idgen_lease_info_t li;
  idgen_lease_info(ls, &li);
  snprintf(last_lease, sizeof last_lease, "registry=%s space=%s pool=%s key=%016llx",
           idgen_registry_uri(reg), li.space, li.pool, (unsigned long long)li.key);
  return last_store(sh->after_ms > li.mark_ms ? sh->after_ms : li.mark_ms, err, errlen);
}

typedef struct {
  char space[IDGEN_SPACE_NAME_MAX], pool[IDGEN_POOL_NAME_MAX];
  unsigned long long key;
  int64 mark; /* the tuple's, when found */
  bool found;
  int64 top; /* the highest mark of every tuple listed */
} last_find;

static int last_row(void *ctx, const idgen_lease_row_t *row) {
  last_find *lf = ctx;
  if (row->mark_ms > lf->top)
    lf->top = row->mark_ms;
  if (row->pool_mark_ms > lf->top)
    lf->top = row->pool_mark_ms;
  if (!lf->found && row->key == lf->key && strcmp(row->pool, lf->pool) == 0 &&
      strcmp(row->space, lf->space) == 0) {
    lf->mark = row->mark_ms;
    lf->found = true;
  }
  return 0;
}

/* The record into uri[urilen], lf (the tuple) and *issued; false (and a
 * LOG for a file that is not one) when there is none. */
static bool last_read(char *uri, size_t urilen, last_find *lf, int64 *issued) {
  char path[MAXPGPATH], line[2048];
  long long ms = 0;
  FILE *f;
  memset(lf, 0, sizeof *lf);
  last_path(path, sizeof path, "");
  if ((f = fopen(path, "r")) == NULL)
    return false;
  if (fgets(line, sizeof line, f) == NULL)
    line[0] = '\0';
  fclose(f);
  Assert(urilen >= 1100);
  if (sscanf(line, "registry=%1099s space=%32s pool=%127s key=%llx issued_ms=%lld", uri, lf->space,
             lf->pool, &lf->key, &ms) != 5) {
    ereport(LOG, (errmsg("idgen: %s is not a record of this extension's; ignored", path)));
    return false;
  }
  *issued = ms;
  return true;
}

/* What a file: registry that is not this run's (the one the last lease
 * came from, or the one earlier versions made by default) says about the
 * IDs issued through it: the mark of the tuple lf if it is there (at or
 * above every ID issued under it, also those a crash left out of the
 * record), else the highest mark of all (every ID this server issued
 * through it is below one); 0 when it is not a file: registry or its
 * directory is gone, -1 when it cannot be read. */
static int64 registry_floor(const char *uri, last_find *lf) {
  char dir[MAXPGPATH], err[1100];
  idgen_registry_t *r = NULL;
  struct stat st;
  int rc;
  if (!file_registry_dir(uri, dir, sizeof dir) || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return 0;
  WITHOUT_SIGNALS(rc = idgen_registry_open(&r, uri, err, sizeof err));
  if (rc == 0) {
    WITHOUT_SIGNALS(rc = idgen_registry_list(r, last_row, lf, err, sizeof err));
    idgen_registry_close(r);
  }
  if (rc < 0) {
    ereport(LOG, (errmsg("idgen: cannot read the marks of %s: %s", uri, err)));
    return -1;
  }
  return lf->found ? lf->mark : lf->top;
}

/* The registry `uri` (earlier versions' default, not used now): the time
 * up to which this server issued IDs through it, into pg_idgen.last, so
 * that a start on another registry begins above them even when the
 * directory has been moved aside.  Best effort: logged when it fails. */
static void last_keep_floor(const char *uri) {
  char rec[1100], err[300];
  last_find lf;
  int64 issued = 0, floor;
  bool have = last_read(rec, sizeof rec, &lf, &issued);
  if (!have) {
    memset(&lf, 0, sizeof lf);
    strlcpy(rec, uri, sizeof rec);
  }
  if (strcmp(rec, uri) != 0) {
    /* the last lease was from elsewhere: a namesake here is no measure */
    last_find any;
    memset(&any, 0, sizeof any);
    floor = registry_floor(uri, &any);
  } else {
    floor = registry_floor(uri, &lf);
  }
  if (floor <= issued)
    return;
  /* With no record of a lease (versions before it), one that names no
   * tuple: only its time counts. */
  if (have)
    snprintf(last_lease, sizeof last_lease, "registry=%s space=%s pool=%s key=%016llx", rec,
             lf.space, lf.pool, lf.key);
  else
    snprintf(last_lease, sizeof last_lease, "registry=%s space=default pool=none key=0", rec);
  if (last_store(floor, err, sizeof err))
    ereport(LOG, (errmsg("idgen: recorded in pg_idgen.last that IDs issued through %s reach "
                         "%lld ms (its marks): a start on another registry begins above them",
                         uri, (long long)floor)));
  else
    ereport(LOG, (errmsg("idgen: %s", err)));
}

/* Where this server's last run left off on `reg`: the mark of the tuple it
 * held last, or, on another registry or one spelled otherwise, the time it
 * last recorded and what that registry says if it is a file: directory
 * still there; 0 if nothing is known, -1 if `reg` cannot be read. */
static int64 last_mark(idgen_registry_t *reg) {
  char uri[1100], err[512];
  last_find lf;
  int rc;
  int64 issued = 0;
  if (!last_read(uri, sizeof uri, &lf, &issued))
    return 0; /* the first start with a lease */
  {
    /* as shown: an earlier version wrote the URI with its password */
    char raw[sizeof uri];
    strlcpy(raw, uri, sizeof raw);
    idgen_registry_uri_redact(raw, uri, sizeof uri);
  }
  if (strcmp(uri, idgen_registry_uri(reg)) != 0) {
    /* Another registry, or the same one spelled otherwise (localhost for
     * 127.0.0.1): the tuple is looked for all the same (found, its mark
     * is exact; in another registry a namesake's mark is only stricter),
     * and the time the last run recorded counts (the final one at a clean
     * stop; after a crash, the durable mark of up to a second before).  A
     * file: registry left behind (the one earlier versions made in the
     * data directory) still has the exact mark: it counts too. */
    last_find other = lf;
    int64 m = registry_floor(uri, &other);
    ereport(LOG, (errmsg("idgen: the last lease was from registry %s, not %s: the new IDs start "
                         "above the time the last run recorded, above that tuple's mark if "
                         "this registry has it%s",
                         uri, idgen_registry_uri(reg),
                         m > 0 ? ", and above the marks the other registry keeps" : "")));
    if (m > issued)
      issued = m;
    lf.found = false;
    lf.top = 0;
  }
  WITHOUT_SIGNALS(rc = idgen_registry_list(reg, last_row, &lf, err, sizeof err));
  if (rc < 0) {
    ereport(LOG, (errmsg("idgen: cannot read the last lease's mark: %s", err)));
    return -1;
  }
  return lf.found && lf.mark > issued ? lf.mark : issued;
}

/* ---- the default: the host's registry ------------------------------------- */

/* The registry earlier versions made by default in the data directory:
 * with idgen.registry unset, its presence is refused (the earlier
 * default's marks order this server's IDs across restarts, and the host's
 * registry is another ID space: switching is the DBA's choice, not the
 * upgrade's), naming both ways out.  Before refusing, the time up to which
 * it issued goes into pg_idgen.last, so that the way out that moves it
 * aside keeps the order.  true when it is not there, else false with the
 * message. */
static bool earlier_default(char *err, size_t errlen) {
  char dir[MAXPGPATH], real[PATH_MAX], uri[PATH_MAX + 8], host[1100], why[1100];
  struct stat st;
  bool usable;
  snprintf(dir, sizeof dir, "%s/pg_idgen", DataDir);
  if (lstat(dir, &st) != 0 && errno == ENOENT)
    return true;
  if (realpath(dir, real) == NULL)
    strlcpy(real, dir, sizeof real);
  snprintf(uri, sizeof uri, "file:%s", real);
  last_keep_floor(uri);
  usable = idgen_registry_default_uri(host, sizeof host, why, sizeof why) == 0;
  snprintf(err, errlen,
           "idgen.registry is not set, and the data directory holds %s, the registry earlier "
           "versions of idgen used by default.  The default is now the host's registry, which "
           "every idgen on this host shares; this server does not change registries on its "
           "own (this one keeps the marks that order its IDs across restarts).  Choose, then "
           "restart the server: keep this server's own registry, which no other idgen on this "
           "host shares (their IDs may equal this server's): ALTER SYSTEM SET idgen.registry = "
           "'%s'; or share the host's registry%s%s%s by moving this one aside: mv %s "
           "%s.retired (the new IDs start above its marks, recorded in %s/pg_idgen.last)%s%s",
           real, uri, usable ? " (" : "", usable ? host : "", usable ? ")" : "", real, real,
           DataDir, usable ? "" : ", once the server's user may use it: ", usable ? "" : why);
  return false;
}

/* The host's default registry (the library's, as the command's and the
 * daemon's) into uri[n]; false with the library's refusal and this
 * server's ways out. */
static bool host_registry(char *uri, size_t n, char *err, size_t errlen) {
  char why[1100];
  if (idgen_registry_default_uri(uri, n, why, sizeof why) == 0)
    return true;
  snprintf(err, errlen,
           "idgen.registry (the default): %s.  For this server: once its user may write the "
           "host's registry (a member of its group, as said), restart the server (its processes "
           "keep the groups they started with); or set idgen.registry and restart: ALTER SYSTEM "
           "SET idgen.registry = 'file:%s/pg_idgen' is a registry private to this server, "
           "which no other idgen on this host shares (their IDs may equal this server's), "
           "'postgres://...' one that servers and daemons on many hosts share",
           why, DataDir);
  return false;
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
  g = slot_gen(cur);
  retire(cur);
  idgen_snowflake_gen_fini_shared(g); /* the final mark; the ceiling is 0 */
  /* After the ceiling went to 0: a call still on the slot cannot issue a
   * value taken from now on, so `next` covers everything issued. */
  idgen_snowflake_gen_stats(g, &gs);
  if (gs.last_id != 0) {
    uint64_t values[IDGEN_LAYOUT_MAX_FIELDS];
    int64_t ms;
    if (idgen_layout_decompose(&l, gs.last_id, values, &ms) == 0 && ms > sh->after_ms)
      sh->after_ms = ms;
  }
  if (lease != NULL && last_lease[0] != '\0')
    (void)last_store(sh->after_ms, NULL, 0); /* what this generator issued, exactly */
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

PGDLLEXPORT void idgen_worker_main(Datum arg);
void idgen_worker_main(Datum arg) {
  idgen_snowflake_settings_t s;
  idgen_registry_t *reg = NULL;
  const char *field;
  char base[1100], uri[1100], dir[MAXPGPATH], err[2048], info[512];
  int rc;

  (void)arg;
  pqsignal(SIGTERM, on_sigterm);
  BackgroundWorkerUnblockSignals();
  before_shmem_exit(worker_exit, 0);

  set_state(ST_STARTING, "the idgen background worker is starting", NULL);
  if (registry_setting && registry_setting[0]) {
    strlcpy(base, registry_setting, sizeof base);
  } else {
    /* The host's registry, or nothing: never one of this server's own
     * unless named.  Refused while the server's user may not use it, and
     * looked at again every RETRY_MS (a directory made or shared later is
     * taken without a restart); said once, and again when it changes. */
    if (!earlier_default(err, sizeof err))
      off(err);
    for (char said[sizeof err] = "";;) {
      if (host_registry(base, sizeof base, err, sizeof err))
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
  if (!read_settings(&l, &s, base, uri, sizeof uri, &field, err, sizeof err))
    off(err);
  /* A registry in the data directory is copied with it: only the server
   * that made it uses it. */
  if (file_registry_dir(uri, dir, sizeof dir) && in_data_dir(dir) &&
      !owner_check(dir, err, sizeof err))
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
  /* Above everything the last run issued, whichever tuple this run gets. */
  for (;;) {
    int64 m = strcmp(uri, "static") == 0 ? 0 : last_mark(reg);
    if (m >= 0) {
      if (m > sh->after_ms)
        sh->after_ms = m;
      break;
    }
    set_state(ST_FAILED, "cannot read the mark of the last lease from the registry (retrying)",
              NULL);
    if (!nap(RETRY_MS))
      proc_exit(1);
  }

  while (!stopping) {
    idgen_snowflake_settings_t bs = s;
    idgen_bind_request_t req = {.layout = &l,
                                .settings = &bs,
                                .field = field,
                                .ttl_ms = lease_ttl_setting,
                                .max_start_wait_ms = -1};
    idgen_snowflake_gen_t *g;
    int slot;
    /* a free slot to make the generator in */
    while ((slot = free_slot()) < 0 && nap(10))
      ;
    if (slot < 0)
      break;
    g = slot_gen(slot);
    if (strcmp(uri, "static") == 0) {
      /* No mark: what an earlier run (a crash restart a moment ago) may
       * have issued by borrowing is at most max_borrow_ms and a tick ahead
       * of its clock.  Wait that out first (it does not cover a clock
       * stepped back: static keeps no record). */
      if (!nap((long)(s.max_borrow_ms + l.unit_ms + 1)))
        break;
    } else {
      bs.start_after_ms = sh->after_ms;
    }
    req.mem = g;
    req.mem_size = sh->gen_size;
    WITHOUT_SIGNALS(rc = idgen_registry_bind(reg, &req, &lease, &g, err, sizeof err));
    if (rc == 0 && lease != NULL && !last_write(reg, lease, err, sizeof err)) {
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
        break;
      continue;
    }
    /* The last run's IDs may be ahead of this clock (it was stepped back,
     * or a mark step ahead after a crash): calls wait, saying so, rather
     * than fail one by one until it passes them. */
    for (bool told = false;;) {
      struct timespec ts;
      int64 now_ms, ahead;
      char at[IDGEN_TIME_BUFSIZE], why[300];
      clock_gettime(CLOCK_REALTIME, &ts);
      now_ms = (int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
      ahead = sh->after_ms - s.max_borrow_ms - now_ms;
      if (ahead <= 0)
        break;
      idgen_time_format(sh->after_ms, at);
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
    if (stopping) {
      idgen_snowflake_gen_fini_shared(g);
      if (lease != NULL)
        idgen_lease_release(lease);
      lease = NULL;
      break;
    }
    if (lease != NULL) {
      idgen_lease_info_t li;
      idgen_lease_info(lease, &li);
      snprintf(info, sizeof info, "%s from %s, generation %llu", li.node, idgen_registry_uri(reg),
               (unsigned long long)li.generation);
    } else {
      snprintf(info, sizeof info, "%s (static: unchecked, no mark)",
               node_setting && node_setting[0] ? node_setting : "all node values 0");
    }
    cur = slot;
    sh->retired[cur] = 0;
    pg_write_barrier(); /* the generator's memory before the slot's number */
    pg_atomic_write_u32(&sh->current, (uint32)cur);
    pg_atomic_add_fetch_u64(&sh->swaps, 1);
    set_state(ST_READY, "", info);
    ereport(LOG, (errmsg("idgen: idgen_snowflake() is ready: %s", info)));

    /* Watch the lease: lost for good (fenced) means a new one. */
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
      if (turn % 10 == 0 && st.lease.mark_ms > last_issued)
        (void)last_store(st.lease.mark_ms, NULL, 0);
      if (st.fenced) {
        snprintf(err, sizeof err, "the lease (%s) was lost: %s; taking a new one", info, st.reason);
        ereport(LOG, (errmsg("idgen: %s", err)));
        set_state(ST_FAILED, err, NULL);
        break;
      }
      if (!st.valid) {
        SpinLockAcquire(&sh->mu);
        snprintf(sh->reason, sizeof sh->reason, "the lease (%s) cannot be shown valid: %s", info,
                 st.reason);
        SpinLockRelease(&sh->mu);
      }
    }
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

static void register_worker(void) {
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

void idgen_pg_snowflake_init(void) {
  /* Settings of the postmaster can only be made while it loads us. */
  if (!process_shared_preload_libraries_in_progress)
    return;
  start_layout =
      MemoryContextStrdup(TopMemoryContext, GetConfigOption("idgen.layout", false, false));
  DefineCustomStringVariable(
      "idgen.registry", "Where idgen_snowflake() leases its node value from.",
      "file:DIR (processes on one host), postgres://... (a fleet), or static (every value "
      "from idgen.node, unchecked, no durable mark).  Empty: the host's registry "
      "(file:/var/lib/idgen), shared with every idgen on the host; refused, saying what to do, "
      "when the server's user may not use it.",
      /* superusers only: a postgres:// URI may hold a password (issue 40) */
      &registry_setting, "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
  DefineCustomStringVariable(
      "idgen.node", "idgen_snowflake()'s node values the registry does not assign.",
      "NAME=VALUE, comma-separated, as `idgen --node`: datacenter=1,worker=2.", &node_setting, "",
      PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomStringVariable(
      "idgen.space", "The registry's ID space idgen_snowflake() leases in.",
      "Empty: the default space, or the one idgen.registry names with ?space=NAME.  Within a "
      "space a layout whose IDs could equal a live one's is refused.",
      &space_setting, "", PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomStringVariable("idgen.lease_field", "The node field the registry assigns.",
                             "Empty: worker, or the layout's only node field.",
                             &lease_field_setting, "", PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomIntVariable("idgen.lease_ttl_ms", "The lease's TTL; renewed at a third of it.",
                          "0: the registry's default.", &lease_ttl_setting, 0, 0, INT_MAX,
                          PGC_POSTMASTER, 0, check_lease_ttl, NULL, NULL);
  prev_request = shmem_request_hook;
  shmem_request_hook = request_shmem;
  prev_startup = shmem_startup_hook;
  shmem_startup_hook = startup_shmem;
  register_worker();
}

/* ---- the SQL functions ---------------------------------------------------- */

/* The generator to use, announced in `seen`: ERRORs (announcement cleared)
 * when there is none. */
static idgen_snowflake_gen_t *enter(const char *fn, pg_atomic_uint64 **seen) {
  int waited = 0;
  if (sh == NULL)
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
  if (MyBackendId == InvalidBackendId || MyBackendId >= sh->nseen)
    ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                    errmsg("idgen: %s cannot run in this kind of process", fn)));
  *seen = &sh->seen[MyBackendId].v;
  for (;;) {
    uint32 cur, status;
    char why[sizeof sh->reason];
    pg_atomic_exchange_u64(*seen, pg_atomic_read_u64(&sh->swaps));
    cur = pg_atomic_read_u32(&sh->current);
    if (cur < NSLOTS) {
      pg_read_barrier(); /* pairs with the worker's write barrier */
      return slot_gen((int)cur);
    }
    pg_atomic_write_u64(*seen, PG_UINT64_MAX);
    status = pg_atomic_read_u32(&sh->status);
    if (status == ST_STARTING && waited < START_WAIT_MS) {
      /* the server just started: the worker is taking its lease */
      CHECK_FOR_INTERRUPTS();
      pg_usleep(10000L);
      waited += 10;
      continue;
    }
    SpinLockAcquire(&sh->mu);
    strlcpy(why, sh->reason, sizeof why);
    SpinLockRelease(&sh->mu);
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("idgen: %s has no generator: %s", fn, why)));
  }
}

/* Clears the announcement, after everything the call read and wrote (an
 * exchange: a full barrier, so also on weakly ordered CPUs). */
static void leave(pg_atomic_uint64 *seen) { pg_atomic_exchange_u64(seen, PG_UINT64_MAX); }

/* An ERROR for a refused call, with the lease's state when it is the cause. */
static void refused(const char *fn, int rc) {
  char why[sizeof sh->reason];
  SpinLockAcquire(&sh->mu);
  strlcpy(why, rc == IDGEN_ELEASE || rc == IDGEN_EMARK ? sh->reason : "", sizeof why);
  SpinLockRelease(&sh->mu);
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
