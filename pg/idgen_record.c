/*
 * idgen_record.c -- what idgen_snowflake()'s background worker keeps in the
 * data directory, and which registry it takes by default:
 *
 *   - the owner check ($PGDATA/pg_idgen.owner): a registry in the data
 *     directory is used only by the server that made it, never by a copy;
 *   - the last run ($PGDATA/pg_idgen.last): the tuple this server leased
 *     last and the time up to which it issued, so that a restart starts
 *     above every ID issued before, whichever tuple it then holds;
 *   - the default, the host's registry, and the refusal of the registry
 *     earlier versions made by default in the data directory.
 *
 * The worker (idgen_worker.c) calls these; the shared memory they read is
 * idgen_snowflake.c's.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"

#include "idgen.h"
#include "idgen_snowflake_int.h"

/* ---- which registry ------------------------------------------------------- */

/* The directory of a file: registry URI (file:DIR, file:///DIR or
 * file://localhost/DIR, without ?space=...), made absolute (a relative DIR
 * is the data directory's, the server's working directory), into dir[n];
 * false for any other registry. */
bool idgen_pg_file_registry_dir(const char *uri, char *dir, size_t n) {
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
bool idgen_pg_in_data_dir(const char *dir) {
  char real[PATH_MAX], d[PATH_MAX], parent[MAXPGPATH];
  size_t n;
  if (realpath(DataDir, real) == NULL)
    return true; /* idgen_pg_owner_check says why */
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
bool idgen_pg_owner_check(const char *reg, char *err, size_t errlen) {
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

/* ---- order across restarts ------------------------------------------------ */

/*
 * A DBA replacing nextval() expects a database's IDs to keep increasing
 * across restarts.  Within one run of the server, idgen_pg_shm->after_ms
 * does that (a new generator starts above the last one's IDs); a restart
 * resets the shared memory, and the new lease may take another worker ID
 * whose mark is behind (a clock stepped back: tests/pg_ext_test.sh, "a
 * shared postgres:// registry: restarted with the clock 12 s behind the last
 * IDs").  So $PGDATA/pg_idgen.last names the tuple this server leased
 * last ("registry=URI space=NAME pool=POOL key=HEX"), written durably
 * before the generator on it is published; at the next start the worker
 * reads that tuple's mark in the registry (at or above every ID issued
 * under it: the final mark of a clean stop, the mark kept ahead after a
 * crash, or more if another holder used it since) and starts above it,
 * whichever tuple it now holds.
 */
static void last_path(char *buf, size_t n, const char *suffix) {
  snprintf(buf, n, "%s/pg_idgen.last%s", DataDir, suffix);
}

/* The lease part of the record ("registry=... key=..."), and the time up
 * to which this run may have issued, as last written. */
static char last_lease[1500];
static int64 last_issued;

/* Writes the record durably: the lease, and `issued_ms`. */
bool idgen_pg_last_store(int64 issued_ms, char *err, size_t errlen) {
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

bool idgen_pg_last_write(idgen_registry_t *reg, idgen_lease_t *ls, char *err, size_t errlen) {
  idgen_lease_info_t li;
  idgen_lease_info(ls, &li);
  snprintf(last_lease, sizeof last_lease, "registry=%s space=%s pool=%s key=%016llx",
           idgen_registry_uri(reg), li.space, li.pool, (unsigned long long)li.key);
  return idgen_pg_last_store(
      idgen_pg_shm->after_ms > li.mark_ms ? idgen_pg_shm->after_ms : li.mark_ms, err, errlen);
}

bool idgen_pg_last_has_lease(void) { return last_lease[0] != '\0'; }

int64 idgen_pg_last_issued(void) { return last_issued; }

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
  if (!idgen_pg_file_registry_dir(uri, dir, sizeof dir) || stat(dir, &st) != 0 ||
      !S_ISDIR(st.st_mode))
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
  if (idgen_pg_last_store(floor, err, sizeof err))
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
int64 idgen_pg_last_mark(idgen_registry_t *reg) {
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
bool idgen_pg_earlier_default(char *err, size_t errlen) {
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
bool idgen_pg_host_registry(char *uri, size_t n, char *err, size_t errlen) {
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
