/*
 * registry_file.c -- the `file:DIR` registry (SPEC section 8): processes on
 * one host share worker IDs through lock files.
 *
 * DIR/<field>@<namespace>/<id>.lock holds one worker ID's record: the
 * fencing generation, the high-water mark (Unix ms) and the last holder.  A
 * holder keeps the file locked with flock(LOCK_EX) for the life of its
 * lease, so a crashed process frees its ID at once (the kernel drops the
 * lock) and its mark stays in the file.  The lock is the fence: while it is
 * held, no other process writes the record.  Marks are written with one
 * pwrite of a fixed-size record and fdatasync'ed before they are relied on;
 * a lock file's directory is fsync'ed after the file is created.
 *
 * flock belongs to the open file description, which a forked child shares:
 * a child would keep its parent's lock alive after the parent died.  So
 * every lock file's descriptor is listed from open to close, and a
 * pthread_atfork child handler closes the child's copies (fork() only:
 * _Fork() runs no handlers).  Lock files must never be deleted: a holder
 * of a deleted file would not conflict with the next one (it notices at its
 * next renewal or mark write, IDGEN_ELEASE), and the mark would be lost.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry_int.h"

#define RECORD_SIZE IDGEN__LEASE_RECORD_SIZE

/* ---- descriptors to close in a forked child ------------------------------ */

#define MAX_HELD 256
static int held_fds[MAX_HELD]; /* fd + 1, or 0; guarded by held_mu */
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* fork() while a descriptor is between open and listed, or between unlisted
 * and closed, would leak a lock (or close a reused number) in the child:
 * both steps happen under held_mu, which fork() takes first. */
static void held_prepare(void) { pthread_mutex_lock(&held_mu); }
static void held_parent(void) { pthread_mutex_unlock(&held_mu); }
static void held_child(void) {
  for (int i = 0; i < MAX_HELD; i++)
    if (held_fds[i]) {
      close(held_fds[i] - 1);
      held_fds[i] = 0;
    }
  pthread_mutex_unlock(&held_mu);
}

static void register_atfork(void) { pthread_atfork(held_prepare, held_parent, held_child); }

/* open(2), and list the descriptor to be closed in forked children.
 * -1 with errno (EMFILE when more than MAX_HELD are listed). */
static int open_held(const char *path, int flags) {
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&held_mu);
  int slot = -1;
  for (int i = 0; i < MAX_HELD && slot < 0; i++)
    if (held_fds[i] == 0)
      slot = i;
  int fd = slot < 0 ? (errno = EMFILE, -1) : open(path, flags, 0644);
  if (fd >= 0)
    held_fds[slot] = fd + 1;
  pthread_mutex_unlock(&held_mu);
  return fd;
}

static void close_held(int fd) {
  pthread_mutex_lock(&held_mu);
  for (int i = 0; i < MAX_HELD; i++)
    if (held_fds[i] == fd + 1)
      held_fds[i] = 0;
  close(fd);
  pthread_mutex_unlock(&held_mu);
}

/* ---- records ------------------------------------------------------------- */

int idgen__lease_record_parse(const char *buf, size_t n, uint64_t *gen, int64_t *mark,
                              char *holder, size_t holderlen) {
  char rec[IDGEN__LEASE_RECORD_SIZE + 1], again[IDGEN__LEASE_RECORD_SIZE];
  char h[IDGEN__LEASE_RECORD_SIZE];
  *gen = 0;
  *mark = 0;
  if (holderlen)
    holder[0] = '\0';
  if (n != IDGEN__LEASE_RECORD_SIZE)
    return -1;
  memcpy(rec, buf, n);
  rec[n] = '\0';
  unsigned long long g;
  long long m;
  int end = 0;
  if (sscanf(rec, "idgen-lease v1 generation=%llu mark_ms=%lld holder=%n", &g, &m, &end) != 2 ||
      end == 0)
    return -1;
  size_t hl = strcspn(rec + end, " \n");
  memcpy(h, rec + end, hl);
  h[hl] = '\0';
  /* Only the canonical form is a record: written back, it must be the same
   * bytes (no sign, no leading zeros or spaces, nothing after the holder). */
  if (idgen__lease_record_format(again, g, m, h) < 0 || memcmp(again, rec, n) != 0)
    return -1;
  if (holderlen)
    snprintf(holder, holderlen, "%s", h);
  *gen = g;
  *mark = m;
  return 0;
}

int idgen__lease_record_format(char *buf, uint64_t gen, int64_t mark, const char *holder) {
  memset(buf, ' ', IDGEN__LEASE_RECORD_SIZE);
  int n = snprintf(buf, IDGEN__LEASE_RECORD_SIZE,
                   "idgen-lease v1 generation=%" PRIu64 " mark_ms=%" PRId64 " holder=%s", gen,
                   mark, holder);
  if (n < 0 || n >= IDGEN__LEASE_RECORD_SIZE - 1 || mark < 0 || strpbrk(holder, " \n"))
    return -1;
  buf[n] = ' ';
  buf[IDGEN__LEASE_RECORD_SIZE - 1] = '\n';
  return 0;
}

/* Reads a record: 0 with *gen and *mark (both 0 for a new, empty file), or
 * -1 if the file cannot be read or is not a whole, valid record (it is then
 * never guessed at: a wrong mark could repeat IDs).  holder may be NULL. */
static int read_record(int fd, uint64_t *gen, int64_t *mark, char *holder, size_t holderlen) {
  char buf[RECORD_SIZE + 1];
  ssize_t n = pread(fd, buf, RECORD_SIZE + 1, 0);
  *gen = 0;
  *mark = 0;
  if (n == 0)
    return 0;
  return n < 0 ? -1 : idgen__lease_record_parse(buf, (size_t)n, gen, mark, holder, holderlen);
}

static int write_record(idgen_lease_t *l, int64_t mark) {
  char buf[RECORD_SIZE];
  if (idgen__lease_record_format(buf, l->generation, mark, l->holder) < 0) {
    errno = EINVAL;
    return IDGEN_EREGISTRY;
  }
  /* The whole record is rewritten every time, so a failed fdatasync cannot
   * leave an earlier write silently undurable behind a later success. */
  if (pwrite(l->fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf || fdatasync(l->fd) < 0)
    return IDGEN_EREGISTRY;
  l->mark_ms = mark;
  return 0;
}

/* ---- directories ---------------------------------------------------------- */

static int fsync_dir(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* mkdir -p, fsync'ing the parent of every directory it creates. */
static int make_dirs(const char *path) {
  char buf[1024];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf)
    return -1;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != '\0')
      continue;
    char save = buf[i];
    buf[i] = '\0';
    if (mkdir(buf, 0755) == 0) {
      char *slash = strrchr(buf, '/');
      if (slash == buf)
        fsync_dir("/");
      else if (slash) {
        *slash = '\0';
        fsync_dir(buf);
        *slash = '/';
      } else {
        fsync_dir(".");
      }
    } else if (errno != EEXIST) {
      return -1;
    }
    buf[i] = save;
  }
  return 0;
}

/* ---- the backend --------------------------------------------------------- */

static int file_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  if (rest[0] == '\0')
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: file: needs a directory (file:DIR)");
  if (strlen(rest) > 512)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: file: directory name too long");
  if (make_dirs(rest) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot create %s: %s", rest,
                      strerror(errno));
  r->path = strdup(rest);
  return r->path ? 0 : IDGEN_ENOMEM;
}

/* Opens (creating if needed) and tries to lock one worker ID's file:
 * the fd, or -1 if another holder has it, or -2 with errno on failure.
 * After the lock is taken, the file must still be the one at `path`: if it
 * was removed or replaced between open and flock, the lock is on a file
 * nobody else will look at, so try again. */
static int try_id(const char *dir, uint64_t id, char *path, size_t pathlen) {
  if ((size_t)snprintf(path, pathlen, "%s/%" PRIu64 ".lock", dir, id) >= pathlen) {
    errno = ENAMETOOLONG;
    return -2;
  }
  for (int attempt = 0; attempt < 8; attempt++) {
    int fd = open_held(path, O_RDWR | O_CREAT | O_CLOEXEC);
    if (fd < 0)
      return -2;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
      int e = errno;
      close_held(fd);
      errno = e;
      return e == EWOULDBLOCK ? -1 : -2;
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      return fd;
    close_held(fd);
  }
  errno = ESTALE;
  return -2;
}

static int file_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                        size_t errlen) {
  const idgen__pool_t *p = &l->pool;
  char dir[1024], path[1100], best_path[1100] = "", bad[1100] = "";
  if ((size_t)snprintf(dir, sizeof dir, "%s/%s", l->r->path, l->pool_name) >= sizeof dir)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: pool path too long");
  if (make_dirs(dir) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot create %s: %s", dir,
                      strerror(errno));
  int64_t now = idgen__req_now_ms(req);
  int best_fd = -1;
  uint64_t best_id = 0, best_gen = 0;
  int64_t best_mark = 0;
  /* Two passes: `idgen registry list` holds each lock shared for a moment,
   * so an ID can look held once; a pool that looks full is looked at again. */
  for (int pass = 0; pass < 2 && best_fd < 0 && !bad[0]; pass++)
    for (uint64_t id = 0; id < p->size; id++) {
      int fd = try_id(dir, id, path, sizeof path);
      if (fd == -1)
        continue;
      if (fd == -2) {
        int e = errno;
        if (best_fd >= 0)
          close_held(best_fd);
        return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(e));
      }
      uint64_t gen;
      int64_t mark;
      if (read_record(fd, &gen, &mark, NULL, 0) < 0) { /* never guess a mark: skip this ID */
        close_held(fd);
        snprintf(bad, sizeof bad, "%s", path);
        continue;
      }
      if (best_fd < 0 || mark < best_mark) {
        if (best_fd >= 0)
          close_held(best_fd);
        best_fd = fd;
        best_id = id;
        best_gen = gen;
        best_mark = mark;
        snprintf(best_path, sizeof best_path, "%s", path);
      } else {
        close_held(fd);
      }
      if (best_mark < now)
        break; /* the lowest free ID whose mark is behind the clock */
    }
  if (best_fd < 0 && bad[0])
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: no usable worker ID: %s is not a valid idgen lease record "
                      "(refusing to guess its mark) and the others are held",
                      bad);
  if (best_fd < 0)
    return idgen__err(err, errlen, IDGEN_EPOOLFULL,
                      "registry: the pool is full: all %" PRIu64 " worker IDs of field \"%s\" (%d "
                      "bits)%s%s are held",
                      p->size, p->field_name, (int)__builtin_ctzll(p->size),
                      p->ns[0] ? " for " : "", p->ns);
  /* Start above the mark: wait, reading the wall clock again after each
   * sleep (a sleep is measured on another clock), at most max_start_wait. */
  int64_t max = req->max_start_wait_ms < 0 ? 10000 : req->max_start_wait_ms, waited = 0;
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  while (best_mark >= now + borrow) {
    int64_t wait = best_mark - now - borrow + 1;
    if (waited + wait > max) {
      close_held(best_fd);
      return idgen__err(err, errlen, IDGEN_ECLOCK,
                        "registry: every free worker ID has a mark ahead of the wall clock; the "
                        "nearest (%s %" PRIu64 ") can start in %" PRId64
                        " ms, more than max_start_wait_ms (%" PRId64 ")",
                        p->field_name, best_id, wait, max);
    }
    idgen__req_sleep_ms(req, wait);
    waited += wait;
    now = idgen__req_now_ms(req);
  }
  l->fd = best_fd;
  l->worker = best_id;
  l->generation = best_gen + 1;
  snprintf(l->path, sizeof l->path, "%s", best_path);
  /* The record is relied on from here: its file's name must be durable too,
   * whoever created it (a creator may have died before its own fsync). */
  int rc = write_record(l, best_mark);
  if (rc == 0 && (fsync_dir(dir) < 0 || fsync_dir(l->r->path) < 0))
    rc = IDGEN_EREGISTRY;
  if (rc < 0) {
    int e = errno;
    close_held(best_fd);
    l->fd = -1;
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot make %s durable: %s",
                      best_path, strerror(e));
  }
  return 0;
}

static int file_renew(idgen_lease_t *l, char *err, size_t errlen) {
  struct stat a, b;
  if (fstat(l->fd, &a) < 0 || (stat(l->path, &b) < 0 && errno != ENOENT))
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", l->path,
                      strerror(errno)); /* cannot tell: not (yet) a loss */
  if (errno == ENOENT || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
    return idgen__err(err, errlen, IDGEN_ELEASE, /* someone else may lock the new file */
                      "registry: lock file %s was removed or replaced under the holder", l->path);
  return 0;
}

static int file_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  int rc = file_renew(l, err, errlen);
  if (rc == 0 && (rc = write_record(l, mark_ms)) < 0)
    idgen__err(err, errlen, rc, "registry: cannot write the mark to %s: %s", l->path,
               strerror(errno));
  return rc;
}

static void file_release(idgen_lease_t *l) {
  close_held(l->fd); /* drops the lock; the record, and its mark, stay */
  l->fd = -1;
}

/* ---- list and free ------------------------------------------------------- */

/* Whether another open file description holds the lock at `path`: 1 held,
 * 0 free, -1 with errno.  A shared lock taken for the look is dropped at
 * once (an acquirer that meets it moves on to the next ID). */
static int probe_held(const char *path) {
  int fd = open_held(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int held = flock(fd, LOCK_SH | LOCK_NB) < 0 ? (errno == EWOULDBLOCK ? 1 : -1) : 0;
  close_held(fd);
  return held;
}

static int strcmp_ptr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The IDs of a pool directory with a lock file, sorted: a malloc'ed array. */
static uint64_t *pool_ids(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  uint64_t *ids = NULL;
  size_t cap = 0;
  *n = 0;
  if (d == NULL)
    return NULL;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    char *end;
    errno = 0;
    unsigned long long id = strtoull(e->d_name, &end, 10);
    if (errno || e->d_name[0] < '0' || e->d_name[0] > '9' || strcmp(end, ".lock") != 0)
      continue;
    if (*n == cap) {
      uint64_t *m = realloc(ids, (cap = cap ? 2 * cap : 64) * sizeof *ids);
      if (m == NULL)
        break;
      ids = m;
    }
    ids[(*n)++] = id;
  }
  closedir(d);
  if (*n)
    qsort(ids, *n, sizeof *ids, cmp_u64);
  return ids;
}

static int list_pool(const char *dir, const char *pool,
                     int (*cb)(void *, const idgen_lease_row_t *), void *ctx) {
  size_t n;
  uint64_t *ids = pool_ids(dir, &n);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    idgen_lease_row_t row;
    char path[1200];
    memset(&row, 0, sizeof row);
    snprintf(row.pool, sizeof row.pool, "%s", pool);
    row.worker = ids[i];
    snprintf(path, sizeof path, "%s/%" PRIu64 ".lock", dir, ids[i]);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    int valid = read_record(fd, &row.generation, &row.mark_ms, row.holder, sizeof row.holder) == 0;
    close(fd);
    if (!valid) {
      snprintf(row.holder, sizeof row.holder,
               "(corrupt record: acquisition skips this ID; do not delete the file)");
    }
    row.state = probe_held(path) == 1 ? IDGEN_LEASE_HELD : IDGEN_LEASE_FREE;
    rc = cb(ctx, &row);
  }
  free(ids);
  return rc;
}

static int file_list(idgen_registry_t *r, int (*cb)(void *, const idgen_lease_row_t *), void *ctx,
                     char *err, size_t errlen) {
  DIR *d = opendir(r->path);
  if (d == NULL)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", r->path,
                      strerror(errno));
  char **pools = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strchr(e->d_name, '@') == NULL)
      continue;
    if (n == cap) {
      char **m = realloc(pools, (cap = cap ? 2 * cap : 16) * sizeof *pools);
      if (m == NULL)
        break;
      pools = m;
    }
    if ((pools[n] = strdup(e->d_name)) != NULL)
      n++;
  }
  closedir(d);
  if (n)
    qsort(pools, n, sizeof *pools, strcmp_ptr);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", r->path, pools[i]);
    if (rc == 0)
      rc = list_pool(dir, pools[i], cb, ctx);
    free(pools[i]);
  }
  free(pools);
  return rc;
}

static int file_free(idgen_registry_t *r, const char *pool, uint64_t worker, int force, char *err,
                     size_t errlen) {
  (void)force; /* a live process's flock cannot be taken from it */
  char path[1100];
  if ((size_t)snprintf(path, sizeof path, "%s/%s/%" PRIu64 ".lock", r->path, pool, worker) >=
      sizeof path)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: pool name too long");
  int held = probe_held(path);
  if (held < 0 && errno == ENOENT)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s has no worker ID %" PRIu64 " in %s (never leased)", pool,
                      worker, r->path);
  if (held < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(errno));
  if (held)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "registry: %s %" PRIu64 " of %s is locked by a live process: a file: lease "
                      "cannot be taken from its holder%s; stop the holder and the ID is free at "
                      "once",
                      pool, worker, r->path, force ? ", even with --force" : "");
  return idgen__err(err, errlen, 0,
                    "registry: %s %" PRIu64 " is already free (no process holds its lock; its "
                    "mark stays)",
                    pool, worker);
}

const idgen__registry_ops_t idgen__registry_file = {
    .scheme = "file",
    .mark_step_ms = 1000,
    .open = file_open,
    .acquire = file_acquire,
    .renew = file_renew,
    .mark = file_mark,
    .release = file_release,
    .list = file_list,
    .free = file_free,
};
