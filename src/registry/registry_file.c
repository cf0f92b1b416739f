/*
 * registry_file.c -- the `file:DIR` registry (docs/DESIGN.md §11): processes on
 * one host share node tuples through lock files.
 *
 * DIR/<pool>/<key>.lock holds one node tuple's record (registry_int.h): the
 * fencing generation, the high-water mark (Unix ms), the tuple's key and the
 * last holder.  <pool> is the layout's geometry and <key> the tuple's bits
 * in the ID, 16 hex digits, so two holders meet on one file whichever node
 * field each leases.  A holder keeps the file locked with flock(LOCK_EX) for
 * the life of its lease, so a crashed process frees its tuple at once (the
 * kernel drops the lock) and its mark stays in the file.  The lock is the
 * fence: while it is held, no other process writes the record.  Marks are
 * written with one pwrite of a fixed-size record and fdatasync'ed before
 * they are relied on; a file's directory is fsync'ed after it is created.
 *
 * The pool file.  A lock file can be removed or replaced behind the
 * registry's back (rm, a tmp cleaner, mv, an old copy put back): the next
 * holder would then find an empty file, read "never used", or an old mark,
 * and repeat the IDs of the tuple's last holder, who may even be alive
 * still.  So the marks the next holders start above live in DIR/<pool>/pool
 * (registry_int.h): one slot per tuple the pool has granted, and a pool mark
 * never below any slot; a tuple without a slot starts above the pool mark.
 * The record in the lock file is a copy, for people and for rebuilding.
 * The protocol, all under an exclusive flock on the pool's directory (which
 * is not removed while the pool is in use, unlike the files in it):
 *   - an acquirer creates and locks its candidate's file first, then reads
 *     the tuple's slot (or the pool mark) and writes the slot with where it
 *     starts;
 *   - a holder writing mark M (raised, or lowered to its final mark) first
 *     checks that its lock file is still the file at its path and that its
 *     slot still holds what it last wrote there, then writes M to the slot
 *     and raises the pool mark to at least M (pwrite + fdatasync), and only
 *     then writes M to its record and raises its ceiling.
 * If a holder's file was replaced, the replacing acquirer's slot write (or
 * the replaced file) makes the holder's next check fail, inside the same
 * lock, before its ceiling could rise past what the acquirer read; so the
 * tuple's next holder starts above everything the last one may issue,
 * whatever happened to the lock files.  A missing pool file is rebuilt from
 * the records' highest mark, without slots (every tuple then starts above
 * it); a corrupt one is an error naming it, never a silent 0.  An acquirer
 * starts above the larger of the slot and the tuple's record (the record is
 * never above the slot unless the pool file lost or rolled back the slot: an
 * old copy of the pool file put back).  Losing both, a tuple's lock file and
 * the pool file, is not survivable: nothing records that tuple's mark any
 * more (a live holder is fenced at its next mark write).
 *
 * flock belongs to the open file description, which a forked child shares:
 * a child would keep its parent's lock alive after the parent died.  So
 * every lock file's descriptor is listed from open to close, and a
 * pthread_atfork child handler closes the child's copies (fork() only:
 * _Fork() runs no handlers).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "registry_int.h"

/* ---- descriptors to close in a forked child ------------------------------ */

#define MAX_HELD 4096
/* fd + 1; -1 while reserved for an open under way; 0 when free.  Slots are
 * taken and given back under held_mu, but the system calls (open, close)
 * run outside it: one held by a frozen file system or a hung mount must not
 * hold fork() (whose prepare handler takes held_mu) nor every other file:
 * call of the process (fork() once waited out a whole 10 s freeze). */
static int held_fds[MAX_HELD];
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* The child closes every listed descriptor, so that it never keeps its
 * parent's locks alive.  Two narrow windows remain: a fork between an
 * open's return and its listing (the next instruction), or between
 * unlisting and close.  The second is harmless (close_held unlocks first);
 * in the first the child holds an unlocked copy that the parent then locks,
 * and only if the parent dies first does the child's copy keep the tuple
 * held (never issued from: a tuple held too long, not a duplicate) until
 * the child exits or execs (the descriptors are close-on-exec). */
static void held_prepare(void) { pthread_mutex_lock(&held_mu); }
static void held_parent(void) { pthread_mutex_unlock(&held_mu); }
static void held_child(void) {
  for (int i = 0; i < MAX_HELD; i++) {
    int v = __atomic_load_n(&held_fds[i], __ATOMIC_ACQUIRE);
    if (v > 0)
      close(v - 1);
    __atomic_store_n(&held_fds[i], 0, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&held_mu);
}

static void register_atfork(void) { pthread_atfork(held_prepare, held_parent, held_child); }

/* A directory shared by a group (set-group-ID and group-writable, as the
 * host's default registry is made: docs/DESIGN.md §11, "The default
 * registry") passes that on: what a holder
 * creates in it is group-readable and -writable, and a directory also
 * set-group-ID, whatever the holder's umask (a unit's UMask=0027), so that
 * every member's processes can lock and write it.  Nothing changes in any
 * other directory, nor what the caller does not own. */
static void share_like_parent(int fd, const char *path) {
  struct stat st, dir;
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid())
    return;
  mode_t want = S_ISDIR(st.st_mode) ? (mode_t)(S_IRWXG | S_ISGID) : (mode_t)(S_IRGRP | S_IWGRP);
  if ((st.st_mode & want) == want)
    return;
  char parent[1200];
  snprintf(parent, sizeof parent, "%s", path);
  char *slash = strrchr(parent, '/');
  if (slash == NULL)
    snprintf(parent, sizeof parent, ".");
  else
    slash[slash == parent] = '\0';
  if (stat(parent, &dir) == 0 && (dir.st_mode & S_ISGID) &&
      (dir.st_mode & (S_IWGRP | S_IXGRP)) == (S_IWGRP | S_IXGRP) && st.st_gid == dir.st_gid)
    (void)fchmod(fd, (st.st_mode & 07777) | want);
}

/* open(2), and list the descriptor to be closed in forked children.
 * -1 with errno (EMFILE when more than MAX_HELD are listed). */
static int open_held(const char *path, int flags) {
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&held_mu);
  int slot = -1;
  for (int i = 0; i < MAX_HELD && slot < 0; i++)
    if (__atomic_load_n(&held_fds[i], __ATOMIC_RELAXED) == 0)
      slot = i;
  if (slot >= 0)
    __atomic_store_n(&held_fds[slot], -1, __ATOMIC_RELAXED); /* reserved */
  pthread_mutex_unlock(&held_mu);
  if (slot < 0) {
    errno = EMFILE;
    return -1;
  }
  int fd = open(path, flags, 0644);
  /* listed at once, for a fork that comes now (the lock is not needed) */
  __atomic_store_n(&held_fds[slot], fd >= 0 ? fd + 1 : 0, __ATOMIC_RELEASE);
  if (fd >= 0 && (flags & O_CREAT))
    share_like_parent(fd, path);
  return fd;
}

static void close_held(int fd) {
  flock(fd, LOCK_UN); /* a copy a fork made meanwhile keeps no lock */
  pthread_mutex_lock(&held_mu);
  for (int i = 0; i < MAX_HELD; i++)
    if (__atomic_load_n(&held_fds[i], __ATOMIC_RELAXED) == fd + 1)
      __atomic_store_n(&held_fds[i], 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&held_mu);
  close(fd);
}

/* ---- records ------------------------------------------------------------- */

/* Shared by both records: the text must be exactly `size` bytes, in the
 * canonical form that format() writes back (no sign, no leading zeros or
 * spaces, nothing after the last field), so that nothing else is ever read
 * as some mark. */

int idgen__lease_record_format(char *buf, const idgen__lease_record_t *rec) {
  memset(buf, ' ', IDGEN__LEASE_RECORD_SIZE);
  int n = snprintf(buf, IDGEN__LEASE_RECORD_SIZE,
                   "idgen-lease v2 generation=%" PRIu64 " mark_ms=%" PRId64 " key=%016" PRIx64
                   " holder=%s",
                   rec->generation, rec->mark_ms, rec->key, rec->holder);
  if (n < 0 || n >= IDGEN__LEASE_RECORD_SIZE - 1 || rec->mark_ms < 0 || strpbrk(rec->holder, " \n"))
    return -1;
  buf[n] = ' ';
  buf[IDGEN__LEASE_RECORD_SIZE - 1] = '\n';
  return 0;
}

int idgen__lease_record_parse(const char *buf, size_t n, idgen__lease_record_t *out) {
  char text[IDGEN__LEASE_RECORD_SIZE + 1], again[IDGEN__LEASE_RECORD_SIZE];
  idgen__lease_record_t rec;
  memset(out, 0, sizeof *out);
  memset(&rec, 0, sizeof rec);
  if (n != IDGEN__LEASE_RECORD_SIZE)
    return -1;
  memcpy(text, buf, n);
  text[n] = '\0';
  unsigned long long g, k;
  long long m;
  int end = 0;
  if (sscanf(text, "idgen-lease v2 generation=%llu mark_ms=%lld key=%llx holder=%n", &g, &m, &k,
             &end) != 3 ||
      end == 0)
    return -1;
  size_t hl = strcspn(text + end, " \n");
  if (hl >= sizeof rec.holder)
    return -1;
  memcpy(rec.holder, text + end, hl);
  rec.generation = g;
  rec.mark_ms = m;
  rec.key = k;
  if (idgen__lease_record_format(again, &rec) < 0 || memcmp(again, text, n) != 0)
    return -1;
  *out = rec;
  return 0;
}

int idgen__pool_record_format(char *buf, int64_t mark, const char *layout) {
  memset(buf, ' ', IDGEN__POOL_RECORD_SIZE);
  int n = snprintf(buf, IDGEN__POOL_RECORD_SIZE, "idgen-pool v1 mark_ms=%" PRId64 " layout=%s",
                   mark, layout);
  if (n < 0 || n >= IDGEN__POOL_RECORD_SIZE - 1 || mark < 0 || strpbrk(layout, " \n"))
    return -1;
  buf[n] = ' ';
  buf[IDGEN__POOL_RECORD_SIZE - 1] = '\n';
  return 0;
}

int idgen__pool_record_parse(const char *buf, size_t n, int64_t *mark, char *layout,
                             size_t layoutlen) {
  char text[IDGEN__POOL_RECORD_SIZE + 1], again[IDGEN__POOL_RECORD_SIZE];
  char lay[IDGEN__POOL_RECORD_SIZE];
  *mark = 0;
  if (layoutlen)
    layout[0] = '\0';
  if (n != IDGEN__POOL_RECORD_SIZE)
    return -1;
  memcpy(text, buf, n);
  text[n] = '\0';
  long long m;
  int end = 0;
  if (sscanf(text, "idgen-pool v1 mark_ms=%lld layout=%n", &m, &end) != 1 || end == 0)
    return -1;
  size_t ll = strcspn(text + end, " \n");
  memcpy(lay, text + end, ll);
  lay[ll] = '\0';
  if (idgen__pool_record_format(again, m, lay) < 0 || memcmp(again, text, n) != 0)
    return -1;
  if (layoutlen)
    snprintf(layout, layoutlen, "%s", lay);
  *mark = m;
  return 0;
}

int idgen__pool_slot_format(char *buf, uint64_t key, int64_t mark) {
  memset(buf, ' ', IDGEN__POOL_SLOT_SIZE);
  int n =
      snprintf(buf, IDGEN__POOL_SLOT_SIZE, "tuple key=%016" PRIx64 " mark_ms=%" PRId64, key, mark);
  if (n < 0 || n >= IDGEN__POOL_SLOT_SIZE - 1 || mark < 0)
    return -1;
  buf[n] = ' ';
  buf[IDGEN__POOL_SLOT_SIZE - 1] = '\n';
  return 0;
}

int idgen__pool_slot_parse(const char *buf, size_t n, uint64_t *key, int64_t *mark) {
  char text[IDGEN__POOL_SLOT_SIZE + 1], again[IDGEN__POOL_SLOT_SIZE];
  *key = 0;
  *mark = 0;
  if (n != IDGEN__POOL_SLOT_SIZE)
    return -1;
  memcpy(text, buf, n);
  text[n] = '\0';
  unsigned long long k;
  long long m;
  if (sscanf(text, "tuple key=%16llx mark_ms=%lld", &k, &m) != 2)
    return -1;
  if (idgen__pool_slot_format(again, k, m) < 0 || memcmp(again, text, n) != 0)
    return -1;
  *key = k;
  *mark = m;
  return 0;
}

/* What a lock file holds. */
enum { REC_VALID, REC_EMPTY, REC_BAD };

/* A file: lease's own state (idgen_lease_t.be). */
typedef struct file_lease {
  int fd;            /* the held lock file */
  int64_t slot_mark; /* its tuple's mark in the pool file, as this
                               * holder last wrote it */
  char path[1400];   /* the lock file's path */
  char dir[1200];    /* its pool's directory */
} file_lease_t;

/* Reads a tuple's record: REC_VALID with *rec, REC_EMPTY for an empty file
 * (new, or its creator died before writing), or REC_BAD with errno for a
 * file that cannot be read or is not a whole, valid record (it is then
 * never guessed at: a wrong mark could repeat IDs). */
static int read_record(int fd, idgen__lease_record_t *rec) {
  char buf[IDGEN__LEASE_RECORD_SIZE + 1];
  memset(rec, 0, sizeof *rec);
  ssize_t n = pread(fd, buf, sizeof buf, 0);
  if (n == 0)
    return REC_EMPTY;
  if (n < 0)
    return REC_BAD;
  if (idgen__lease_record_parse(buf, (size_t)n, rec) < 0) {
    errno = EINVAL;
    return REC_BAD;
  }
  return REC_VALID;
}

static int write_record(idgen_lease_t *l, int64_t mark) {
  char buf[IDGEN__LEASE_RECORD_SIZE];
  idgen__lease_record_t rec = {.generation = l->generation, .key = l->key, .mark_ms = mark};
  snprintf(rec.holder, sizeof rec.holder, "%s", l->holder);
  if (idgen__lease_record_format(buf, &rec) < 0) {
    errno = EINVAL;
    return IDGEN_EREGISTRY;
  }
  /* The whole record is rewritten every time, so a failed fdatasync cannot
   * leave an earlier write silently undurable behind a later success. */
  int fd = ((file_lease_t *)l->be)->fd;
  if (pwrite(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf || fdatasync(fd) < 0)
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
    struct stat st;
    /* mkdir on a frozen file system waits even when the directory exists:
     * one that exists is not made again (a registry's open stays free of
     * writes). */
    if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) {
      buf[i] = save;
      continue;
    }
    if (mkdir(buf, 0755) == 0) {
      int dfd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dfd >= 0) {
        share_like_parent(dfd, buf);
        close(dfd);
      }
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

/* ---- the pool's mark ------------------------------------------------------ */

/* An exclusive flock on `path` opened with `flags` (waiting for it): the
 * descriptor, or -1 with errno.  Undone by pool_unlock. */
static int lock_exclusive(const char *path, int flags) {
  int fd = open_held(path, flags);
  if (fd < 0)
    return -1;
  while (flock(fd, LOCK_EX) < 0) {
    if (errno != EINTR) {
      int e = errno;
      close_held(fd);
      errno = e;
      return -1;
    }
  }
  return fd;
}

/* As lock_exclusive, but gives up after ms milliseconds (ETIMEDOUT): for
 * locks held only for one write, where a holder stopped while holding one
 * must not stop everyone else. */
static int lock_exclusive_for(const char *path, int flags, int ms) {
  int fd = open_held(path, flags);
  if (fd < 0)
    return -1;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
      return fd;
    int e = errno;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((e != EWOULDBLOCK && e != EINTR) ||
        (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >= ms) {
      close_held(fd);
      errno = e == EWOULDBLOCK ? ETIMEDOUT : e;
      return -1;
    }
    /* Short pauses of random length, never growing: every waiter polls
     * alike, so none starves behind the others. */
    uint32_t j = 0;
    idgen_random_bytes(&j, sizeof j);
    usleep(50 + j % 500);
  }
}

static void pool_unlock(int fd) {
  flock(fd, LOCK_UN);
  close_held(fd);
}

/* Takes the pool's lock: an exclusive flock on its directory (which stays
 * while the pool is used, unlike the files in it). */
static int pool_lock(const char *dir) {
  return lock_exclusive(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int is_lock_name(const char *name, uint64_t *key) {
  char *end;
  if (strlen(name) != 21 || strspn(name, "0123456789abcdef") != 16 || strcmp(name + 16, ".lock"))
    return 0;
  *key = strtoull(name, &end, 16);
  return 1;
}

/* The highest mark among the pool's valid records: what the pool mark must
 * be at least, when its file is missing.  0, or -1 with errno. */
static int records_max(const char *dir, int64_t *max) {
  DIR *d = opendir(dir);
  *max = 0;
  if (d == NULL)
    return -1;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    uint64_t key;
    char path[1200];
    if (!is_lock_name(e->d_name, &key))
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    idgen__lease_record_t rec;
    if (fd >= 0 && read_record(fd, &rec) == REC_VALID && rec.mark_ms > *max)
      *max = rec.mark_ms;
    if (fd >= 0)
      close(fd);
  }
  closedir(d);
  return 0;
}

/* A pool file as read: the pool mark, the layout, and each tuple's slot in
 * file order. */
typedef struct pool_file {
  int64_t mark;
  char layout[IDGEN_LAYOUT_SPEC_MAX];
  size_t n;
  uint64_t *keys;
  int64_t *marks;
  int missing; /* there was no file (or an empty one): rebuilt */
} pool_file_t;

static void pool_free(pool_file_t *pf) {
  free(pf->keys);
  free(pf->marks);
  pf->keys = NULL;
  pf->marks = NULL;
  pf->n = 0;
}

/* The slot of `key`, or -1. */
static long pool_find(const pool_file_t *pf, uint64_t key) {
  for (size_t i = 0; i < pf->n; i++)
    if (pf->keys[i] == key)
      return (long)i;
  return -1;
}

/* Reads the pool file of `dir`: 0, 1 if there is none (or it is empty: its
 * creator died before writing it; pf is then empty), -1 with errno if it
 * cannot be read or is corrupt (EINVAL).  The last slot may be torn (a
 * crash while a new tuple's slot was appended, before that tuple's holder
 * relied on it): it is left out, and the next append overwrites it.  Any
 * other slot that is not valid, or a key twice, makes the file corrupt. */
static int pool_load(const char *dir, pool_file_t *pf) {
  char path[1100];
  snprintf(path, sizeof path, "%s/pool", dir);
  memset(pf, 0, sizeof *pf);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? (pf->missing = 1) : -1;
  struct stat st;
  char *buf = NULL;
  ssize_t got = -1;
  if (fstat(fd, &st) == 0 && st.st_size <= (off_t)64 << 20 &&
      (buf = malloc((size_t)st.st_size + 1)) != NULL) {
    got = 0;
    while (got < st.st_size) {
      ssize_t r = pread(fd, buf + got, (size_t)(st.st_size - got), got);
      if (r <= 0)
        break;
      got += r;
    }
  } else if (errno == 0 || st.st_size > (off_t)64 << 20) {
    errno = EFBIG;
  }
  int e = errno;
  close(fd);
  if (buf == NULL || got < 0) {
    free(buf);
    errno = e;
    return -1;
  }
  if (got == 0) {
    free(buf);
    return pf->missing = 1;
  }
  int rc = 0;
  size_t slots = got > IDGEN__POOL_RECORD_SIZE
                     ? (size_t)(got - IDGEN__POOL_RECORD_SIZE) / IDGEN__POOL_SLOT_SIZE
                     : 0;
  if (got < IDGEN__POOL_RECORD_SIZE ||
      idgen__pool_record_parse(buf, IDGEN__POOL_RECORD_SIZE, &pf->mark, pf->layout,
                               sizeof pf->layout) < 0)
    rc = -1;
  if (rc == 0 && slots) {
    pf->keys = malloc(slots * sizeof *pf->keys);
    pf->marks = malloc(slots * sizeof *pf->marks);
    if (pf->keys == NULL || pf->marks == NULL) {
      free(buf);
      pool_free(pf);
      errno = ENOMEM;
      return -1;
    }
  }
  for (size_t i = 0; rc == 0 && i < slots; i++) {
    const char *at = buf + IDGEN__POOL_RECORD_SIZE + i * IDGEN__POOL_SLOT_SIZE;
    uint64_t key;
    int64_t mark;
    if (idgen__pool_slot_parse(at, IDGEN__POOL_SLOT_SIZE, &key, &mark) < 0) {
      if (i + 1 < slots)
        rc = -1;
      break; /* the last one: torn */
    }
    if (pool_find(pf, key) >= 0)
      rc = -1;
    pf->keys[pf->n] = key;
    pf->marks[pf->n++] = mark;
  }
  free(buf);
  if (rc < 0) {
    pool_free(pf);
    errno = EINVAL;
  }
  return rc;
}

/* Writes the header (the pool mark and layout) and slot `ix` of pf, as
 * given, durably (and the file's name, if it is new): 0, or -1 with errno.
 * ix == pf->n appends. */
static int pool_store(const char *dir, const pool_file_t *pf, long ix, uint64_t key, int64_t mark,
                      int *written) {
  char path[1100], head[IDGEN__POOL_RECORD_SIZE], slot[IDGEN__POOL_SLOT_SIZE];
  snprintf(path, sizeof path, "%s/pool", dir);
  if (idgen__pool_record_format(head, pf->mark, pf->layout) < 0 ||
      (ix >= 0 && idgen__pool_slot_format(slot, key, mark) < 0)) {
    errno = EINVAL;
    return -1;
  }
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  if (pf->missing)
    share_like_parent(fd, path);
  off_t at = IDGEN__POOL_RECORD_SIZE + (off_t)ix * IDGEN__POOL_SLOT_SIZE;
  int rc = pwrite(fd, head, sizeof head, 0) == (ssize_t)sizeof head ? 0 : -1;
  if (rc == 0 && ix >= 0 &&
      (rc = pwrite(fd, slot, sizeof slot, at) == (ssize_t)sizeof slot ? 0 : -1) == 0 && written)
    *written = 1;
  if (rc == 0 && fdatasync(fd) < 0)
    rc = -1;
  int e = errno;
  close(fd);
  if (rc == 0 && pf->missing)
    rc = fsync_dir(dir);
  errno = e;
  return rc;
}

/* Loads the pool file of `dir` with the pool's lock held by the caller; a
 * missing one is rebuilt from the records (pool mark = their highest mark,
 * no slots: every tuple then starts above it), with `layout`, and written.
 * 0, or IDGEN_EREGISTRY with a message naming the file. */
static int pool_open_locked(const char *dir, const char *layout, pool_file_t *pf, char *err,
                            size_t errlen) {
  int rc = pool_load(dir, pf);
  if (rc < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s/pool: %s (the pool-wide mark and the tuples' marks; they "
                      "are never guessed: restore the file, or remove it to have it rebuilt "
                      "from the lock files)",
                      dir, errno == EINVAL ? "not a valid idgen pool file" : strerror(errno));
  if (rc == 1) {
    if (records_max(dir, &pf->mark) < 0)
      return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", dir,
                        strerror(errno));
    snprintf(pf->layout, sizeof pf->layout, "%s", layout);
    if (pool_store(dir, pf, -1, 0, 0, NULL) < 0)
      return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot write %s/pool: %s", dir,
                        strerror(errno));
    pf->missing = 0;
  }
  return 0;
}

/* Sets tuple `key`'s slot to `mark` (appending it if new) and raises the
 * pool mark to at least `mark`, durably, with the pool's lock held. */
static int pool_set_locked(const char *dir, pool_file_t *pf, uint64_t key, int64_t mark,
                           int *written, char *err, size_t errlen) {
  long ix = pool_find(pf, key);
  if (ix < 0)
    ix = (long)pf->n;
  if (pf->mark < mark)
    pf->mark = mark;
  if (pool_store(dir, pf, ix, key, mark, written) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot write %s/pool: %s", dir,
                      strerror(errno));
  return 0;
}

/* Reads the pool mark of `dir` (and its layout, if wanted) without the
 * lock, for listing: 0, 1 if there is no pool file, -1 with errno. */
static int pool_read(const char *dir, int64_t *mark, char *layout, size_t layoutlen) {
  pool_file_t pf;
  int rc = pool_load(dir, &pf);
  *mark = pf.mark;
  if (layoutlen)
    snprintf(layout, layoutlen, "%s", pf.layout);
  pool_free(&pf);
  return rc;
}

/* ---- an earlier idgen's registry ------------------------------------------ */

/* The first version named pool directories by the leased field and the other
 * fields' values ("worker@datacenter=1/3.lock", "idgen-lease v1 ..."), so its
 * holders and this version's cannot see each other's leases.  A holder of
 * the earlier version that is alive makes acquisition refuse (mixing them
 * could repeat IDs); the earlier records' highest mark becomes a floor of
 * every pool, so that a tuple starts above anything they issued.  0 with
 * *max, or an error naming the live holder's file. */
static int probe_held(const char *path);
static int strcmp_ptr(const void *a, const void *b);
static uint64_t *pool_keys(const char *dir, size_t *n);
static int pool_layout(const char *dir, idgen_layout_t *l, char *spec, size_t speclen);

static int legacy_check(const char *root, int64_t *max, char *err, size_t errlen) {
  *max = 0;
  DIR *d = opendir(root);
  if (d == NULL)
    return 0;
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, "epoch=", 6) == 0 || !strchr(e->d_name, '@'))
      continue;
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/%s", root, e->d_name);
    DIR *p = opendir(dir);
    if (p == NULL)
      continue;
    for (struct dirent *f; rc == 0 && (f = readdir(p)) != NULL;) {
      char path[1400], buf[IDGEN__LEASE_RECORD_SIZE + 1];
      size_t digits = strspn(f->d_name, "0123456789");
      if (digits == 0 || strcmp(f->d_name + digits, ".lock") != 0)
        continue;
      snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
      if (probe_held(path) == 1) {
        rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                        "registry: %s is held by a live process of an earlier idgen, whose "
                        "leases this version cannot see: stop the earlier version's holders on "
                        "%s first (their marks are kept)",
                        path, root);
        break;
      }
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
      if (fd >= 0)
        close(fd);
      long long m;
      if (n > 0) {
        buf[n] = '\0';
        if (sscanf(buf, "idgen-lease v1 generation=%*u mark_ms=%lld ", &m) == 1 && m > *max)
          *max = m;
      }
    }
    closedir(p);
  }
  closedir(d);
  return rc;
}

/* A file: registry's directory, absolute (idgen_registry_t.be). */
static const char *root(const idgen_registry_t *r) { return r->be; }

/* ---- the backend --------------------------------------------------------- */

/* The directory of file:REST: REST itself, or, in the URI forms
 * file:///DIR and file://localhost/DIR, the /DIR after the (empty or local)
 * host; NULL for file://OTHERHOST/..., which names no directory of this
 * host (0181e27 read file://localhost/var/lib/idgen as /localhost/...: a
 * second registry). */
static const char *file_dir(const char *rest) {
  if (strncmp(rest, "//", 2) != 0)
    return rest;
  const char *host = rest + 2, *slash = strchr(host, '/');
  size_t hl = slash ? (size_t)(slash - host) : strlen(host);
  if (slash == NULL || (hl != 0 && !(hl == 9 && strncasecmp(host, "localhost", 9) == 0)))
    return NULL;
  return slash;
}

static int file_check(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)uri;
  if (strncmp(rest, "//", 2) == 0) {
    if (file_dir(rest) == NULL)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "registry: file:%s names no directory of this host (file:/DIR, "
                        "file:///DIR or file://localhost/DIR)",
                        IDGEN_QUOTE(rest, strlen(rest), 0, 100));
    rest = file_dir(rest);
  }
  if (rest[0] == '\0')
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: file: needs a directory (file:DIR)");
  if (strlen(rest) > 512)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: file: directory name too long");
  /* What follows '?' is a parameter, never part of the directory's name:
   * space= was taken out before this; anything else is refused, so that
   * `?Space=billing` is not silently the default space (of a directory
   * named "idgen?Space=billing"). */
  const char *q = strchr(rest, '?');
  if (q != NULL) {
    size_t n = strcspn(q + 1, "=&");
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: file: does not know the parameter \"%s\" (it knows only "
                      "space=NAME; a directory's name cannot hold '?')",
                      IDGEN_QUOTE(q + 1, n, '"', 60));
  }
  return 0;
}

static int file_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  /* A relative directory is resolved here, once: later changes of the
   * working directory do not move the registry, and what is shown is where
   * it is. */
  char given[1100], abs[PATH_MAX];
  rest = file_dir(rest); /* checked: not NULL */
  if (rest[0] == '/') {
    snprintf(given, sizeof given, "%s", rest);
  } else {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == NULL)
      return idgen__err(err, errlen, IDGEN_EREGISTRY,
                        "registry: cannot resolve file:%s: the working directory: %s", rest,
                        strerror(errno));
    if ((size_t)snprintf(given, sizeof given, "%s/%s", cwd, rest) >= sizeof given)
      return idgen__err(err, errlen, IDGEN_EINVAL, "registry: file: directory name too long");
  }
  if (make_dirs(given) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot create %s: %s", given,
                      strerror(errno));
  if (realpath(given, abs) == NULL || strlen(abs) > 512)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot resolve %s: %s", given,
                      strerror(errno ? errno : ENAMETOOLONG));
  size_t n = strlen(abs) + 6;
  char *uri = malloc(n), *path = strdup(abs);
  if (uri == NULL || path == NULL) {
    free(uri);
    free(path);
    return IDGEN_ENOMEM;
  }
  r->be = path; /* the registry's state: its absolute directory */
  snprintf(uri, n, "file:%s", abs);
  free(r->uri);
  r->uri = uri;
  return 0;
}

/* Opens (creating if needed) and tries to lock one tuple's file: the fd,
 * or -1 if another holder has it, or -2 with errno on failure.  After the
 * lock is taken, the file must still be the one at `path`: if it was
 * removed or replaced between open and flock, the lock is on a file nobody
 * else will look at, so try again. */
static int try_key(const char *dir, uint64_t key, char *path, size_t pathlen) {
  if ((size_t)snprintf(path, pathlen, "%s/%016" PRIx64 ".lock", dir, key) >= pathlen) {
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

/* ---- ID spaces (space.c) ----------------------------------------------------- */

/* The directory of the space at `space_path` ("" or "spaces/NAME/"): the
 * registry's own, or DIR/spaces/NAME.  Its record is `space.rec` there,
 * replaced whole (rename) under an exclusive flock on `space.lock`. */
static int space_dir(const idgen_registry_t *r, const char *space_path, char *buf, size_t n) {
  size_t k = strlen(space_path);
  int w = snprintf(buf, n, "%s%s%.*s", root(r), k ? "/" : "", k ? (int)k - 1 : 0, space_path);
  return w < 0 || (size_t)w >= n ? -1 : 0;
}

static int space_lock(const char *sdir) {
  char path[1200];
  snprintf(path, sizeof path, "%s/space.lock", sdir);
  return lock_exclusive(path, O_RDWR | O_CREAT | O_CLOEXEC);
}

/* The names of the pool directories of space directory `sdir`, sorted: a
 * malloc'ed array of *n malloc'ed names. */
static char **pool_names(const char *sdir, size_t *n) {
  DIR *d = opendir(sdir);
  char **pools = NULL;
  size_t cap = 0;
  *n = 0;
  if (d == NULL)
    return NULL;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "epoch=", 6) != 0)
      continue; /* not a pool (an older idgen's directories are not read) */
    if (*n == cap) {
      char **m = realloc(pools, (cap = cap ? 2 * cap : 16) * sizeof *pools);
      if (m == NULL)
        break;
      pools = m;
    }
    if ((pools[*n] = strdup(e->d_name)) != NULL)
      (*n)++;
  }
  closedir(d);
  if (*n)
    qsort(pools, *n, sizeof *pools, strcmp_ptr);
  return pools;
}

static void names_free(char **names, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

/* The record of the space in `sdir`; without one, its pools as found (each
 * with the layout its pool file names).  0, or IDGEN_EREGISTRY naming the
 * file. */
static int space_load(const char *sdir, idgen__space_t *s, char *err, size_t errlen) {
  char path[1200], why[300];
  snprintf(path, sizeof path, "%s/space.rec", sdir);
  memset(s, 0, sizeof *s);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno != ENOENT)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(errno));
  if (fd >= 0) {
    char *buf = malloc(IDGEN__SPACE_TEXT_MAX + 1);
    ssize_t got = buf ? pread(fd, buf, IDGEN__SPACE_TEXT_MAX + 1, 0) : -1;
    int e = errno;
    close(fd);
    int rc = got < 0 ? idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path,
                                  strerror(buf ? e : ENOMEM))
             : got > IDGEN__SPACE_TEXT_MAX
                 ? idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: too long", path)
             : idgen__space_parse(buf, (size_t)got, s, why, sizeof why) < 0
                 ? idgen__err(err, errlen, IDGEN_EREGISTRY,
                              "registry: %s: %s (the layouts of the ID space; it is never "
                              "guessed: restore it, or remove it to have it rebuilt from the "
                              "pools)",
                              path, why)
                 : 0;
    free(buf);
    return rc;
  }
  size_t n;
  char **pools = pool_names(sdir, &n);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (idgen__space_add_pool(s, pools[i]) < 0)
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s holds more than %d pools, or one whose name is not a pool's "
                      "(%s): an ID space takes at most %d layouts",
                      sdir, IDGEN__SPACE_MAX, pools[i], IDGEN__SPACE_MAX);
  }
  names_free(pools, n);
  return rc;
}

/* Replaces the record of the space in `sdir`, durably, with its lock held. */
static int space_store(const char *sdir, const idgen__space_t *s, char *err, size_t errlen) {
  char path[1200], tmp[1200];
  snprintf(path, sizeof path, "%s/space.rec", sdir);
  snprintf(tmp, sizeof tmp, "%s/space.rec.new", sdir);
  char *buf = malloc(IDGEN__SPACE_TEXT_MAX);
  int len = buf ? idgen__space_format(s, buf, IDGEN__SPACE_TEXT_MAX) : -1;
  int fd = len < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0)
    share_like_parent(fd, tmp);
  int rc = fd < 0 || write(fd, buf, (size_t)len) != len || fdatasync(fd) < 0 ? -1 : 0;
  int e = errno;
  if (fd >= 0)
    close(fd);
  free(buf);
  if (rc == 0 && (rename(tmp, path) < 0 || fsync_dir(sdir) < 0))
    rc = -1, e = errno;
  if (rc < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot write %s: %s", path,
                      len < 0 ? "too many layouts" : strerror(e));
  return 0;
}

/* The probe of space.c for the pools of space directory ctx. */
static int file_live(void *ctx, const char *pool, char *holders, size_t n, char *err,
                     size_t errlen) {
  (void)err, (void)errlen;
  char dir[1200], spec[IDGEN_LAYOUT_SPEC_MAX];
  snprintf(dir, sizeof dir, "%s/%s", (const char *)ctx, pool);
  idgen_layout_t lay;
  int known = pool_layout(dir, &lay, spec, sizeof spec) == 0;
  size_t nkeys, used = 0;
  uint64_t *keys = pool_keys(dir, &nkeys);
  int live = 0;
  if (n)
    holders[0] = '\0';
  for (size_t i = 0; i < nkeys; i++) {
    char path[1300], node[IDGEN_NODE_TEXT_MAX];
    snprintf(path, sizeof path, "%s/%016" PRIx64 ".lock", dir, keys[i]);
    if (probe_held(path) != 1)
      continue;
    idgen__lease_record_t rec;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read_record(fd, &rec) != REC_VALID)
      snprintf(rec.holder, sizeof rec.holder, "?");
    if (fd >= 0)
      close(fd);
    idgen__node_text(known ? &lay : NULL, keys[i], node);
    if (live++ < 3 && used < n)
      used += (size_t)snprintf(holders + used, n - used, "%s%s (%s)", used ? ", " : "", rec.holder,
                               node);
  }
  if (live > 3 && used < n)
    snprintf(holders + used, n - used, ", ...");
  free(keys);
  return live;
}

static int file_issued(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                       size_t errlen) {
  char dir[1200];
  snprintf(dir, sizeof dir, "%s/%s", (const char *)ctx, pool);
  int64_t recs = 0;
  pool_file_t pf;
  int rc = pool_load(dir, &pf);
  if (rc < 0 && errno != ENOENT)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s/pool: %s (the highest mark of a layout the space retires; "
                      "never guessed)",
                      dir, errno == EINVAL ? "not a valid idgen pool file" : strerror(errno));
  *mark = rc == 0 ? pf.mark : 0;
  *keys = 0;
  for (size_t i = 0; rc == 0 && i < pf.n; i++)
    *keys |= pf.keys[i]; /* the slots' tuples */
  pool_free(&pf);
  if (records_max(dir, &recs) == 0 && recs > *mark)
    *mark = recs; /* a pool file rolled back: the records remember */
  size_t n;
  uint64_t *ks = pool_keys(dir, &n); /* and the lock files' */
  for (size_t i = 0; i < n; i++)
    *keys |= ks[i];
  free(ks);
  return 0;
}

/* The space step of an acquisition, with the space's lock held: joins l's
 * layout to the space (space.c), storing the record if it changed. */
static int file_space_join(idgen_lease_t *l, const idgen_lease_request_t *req, const char *sdir,
                           int64_t *floor, char *err, size_t errlen) {
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  idgen__space_probe_t probe = {(void *)sdir, file_live, file_issued};
  idgen__space_plan_t plan;
  int rc = space_load(sdir, s, err, errlen);
  if (rc == 0)
    rc = idgen__space_join(s, l->r->space, &l->pool, req->layout, req, idgen__req_now_ms(req),
                           &probe, &plan, err, errlen);
  if (rc == 0 && plan.changed)
    rc = space_store(sdir, s, err, errlen);
  free(s);
  *floor = rc == 0 ? plan.floor_ms : 0;
  return rc;
}

/* What a claim found: the tuple's locked file and where it starts. */
typedef struct claim {
  int fd, fresh;
  uint64_t id, gen;
  int64_t mark;
  char path[1100];
} claim_t;

/* What file_claim looks at while it chooses: the pool file as read before
 * any tuple is locked, where tuples start, and what stood in the way. */
typedef struct claim_search {
  const char *dir;
  const idgen__pool_t *p;
  pool_file_t pf;
  /* legacy: the marks of an earlier version's records; floor: the space's
   * floor for the layout; now: the request's clock; best_rec: the chosen
   * tuple's own record's mark (0 if none). */
  int64_t legacy, floor, now, best_rec;
  char bad[1100], denied[1100];
} claim_search_t;

/* Step 1: where each tuple would start, for choosing (read again once the
 * chosen file is locked: the protocol above): its slot's mark, or the pool
 * mark for a tuple without one; at least the marks of an earlier version's
 * records, and the space's floor. */
static int claim_read_pool(idgen_lease_t *l, claim_search_t *cs, char *err, size_t errlen) {
  cs->legacy = 0;
  int rc = l->r->space_path[0] ? 0 : legacy_check(root(l->r), &cs->legacy, err, errlen);
  memset(&cs->pf, 0, sizeof cs->pf);
  int dfd = rc == 0 ? pool_lock(cs->dir) : -1;
  if (rc == 0 && dfd < 0)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s: %s", cs->dir,
                    strerror(errno));
  if (rc == 0) {
    rc = pool_open_locked(cs->dir, cs->p->layout, &cs->pf, err, errlen);
    pool_unlock(dfd);
  }
  return rc;
}

/* Step 2: the lowest free value whose mark is behind the clock, else the
 * free value that starts lowest, locked: c->fd >= 0; or c->fd < 0 with
 * cs->bad or cs->denied naming a file that stood in the way.  Two passes:
 * `idgen registry list` holds each lock shared for a moment, so a tuple can
 * look held once; a pool that looks full is looked at again.  A value that
 * cannot start lower than the best so far is not opened (opening creates
 * its file). */
static int claim_choose(claim_search_t *cs, claim_t *c, char *err, size_t errlen) {
  const idgen__pool_t *p = cs->p;
  char path[1100];
  c->fd = -1;
  for (int pass = 0; pass < 2 && c->fd < 0 && !cs->bad[0]; pass++)
    for (uint64_t id = 0; id < p->size; id++) {
      uint64_t key = p->fixed | id << p->shift;
      long ix = pool_find(&cs->pf, key);
      int64_t mark = ix >= 0 ? cs->pf.marks[ix] : cs->pf.mark;
      if (mark < cs->legacy)
        mark = cs->legacy;
      if (mark < cs->floor)
        mark = cs->floor; /* where it would start */
      if (c->fd >= 0 && mark >= c->mark)
        continue;
      int fd = try_key(cs->dir, key, path, sizeof path);
      if (fd == -1)
        continue;
      if (fd == -2 && (errno == EACCES || errno == EPERM)) {
        /* A tuple this user may not lock: another's, to be had by a user
         * who may (never by guessing).  Said if nothing else is free. */
        if (!cs->denied[0])
          snprintf(cs->denied, sizeof cs->denied, "%s", path);
        continue;
      }
      if (fd == -2) {
        int e = errno;
        if (c->fd >= 0)
          close_held(c->fd);
        c->fd = -1;
        return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(e));
      }
      idgen__lease_record_t rec;
      if (read_record(fd, &rec) == REC_BAD) { /* never guess: skip this tuple */
        close_held(fd);
        snprintf(cs->bad, sizeof cs->bad, "%s", path);
        continue;
      }
      if (c->fd >= 0)
        close_held(c->fd);
      c->fd = fd;
      c->id = id;
      c->gen = rec.key == key ? rec.generation : 0;
      cs->best_rec = rec.key == key ? rec.mark_ms : 0;
      c->mark = mark;
      c->fresh = ix < 0;
      snprintf(c->path, sizeof c->path, "%s", path);
      if (c->mark < cs->now)
        return 0; /* the lowest free value whose mark is behind the clock */
    }
  return 0;
}

/* Step 3, after the file is ours: the slot read again, so that any holder
 * whose file this replaced is fenced before it can raise its ceiling past
 * what this sees; and written now, with where this holder starts, so that
 * a holder whose file this replaced finds its slot moved.  On an error the
 * file is let go. */
static int claim_write_slot(claim_search_t *cs, claim_t *c, char *err, size_t errlen) {
  uint64_t key = cs->p->fixed | c->id << cs->p->shift;
  int rc = 0, dfd = pool_lock(cs->dir);
  if (dfd < 0)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s: %s", cs->dir,
                    strerror(errno));
  if (rc == 0 && (rc = pool_open_locked(cs->dir, cs->p->layout, &cs->pf, err, errlen)) == 0) {
    long ix = pool_find(&cs->pf, key);
    c->mark = ix >= 0 ? cs->pf.marks[ix] : cs->pf.mark;
    c->fresh = ix < 0;
    if (c->mark < cs->legacy)
      c->mark = cs->legacy;
    /* The tuple's own record is a copy of its slot, never above it, unless
     * the pool file lost the slot or was put back older: then the record
     * (if it is the live copy) remembers what the slot forgot. */
    if (c->mark < cs->best_rec)
      c->mark = cs->best_rec;
    rc = pool_set_locked(cs->dir, &cs->pf, key, c->mark, NULL, err, errlen);
  }
  pool_free(&cs->pf);
  if (dfd >= 0)
    pool_unlock(dfd);
  if (rc < 0) {
    close_held(c->fd);
    c->fd = -1;
  }
  return rc;
}

/* Chooses and locks l's tuple in pool directory f->dir (docs/DESIGN.md §11)
 * and writes its slot: 0 with *c (c->mark the tuple's mark), or an error
 * (nothing held).  Every tuple starts above `floor` too (its space's floor
 * for the layout), which is not written into the tuple's slot. */
static int file_claim(idgen_lease_t *l, const idgen_lease_request_t *req, int64_t floor, claim_t *c,
                      char *err, size_t errlen) {
  const idgen__pool_t *p = &l->pool;
  file_lease_t *f = l->be;
  if (make_dirs(f->dir) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot create %s: %s", f->dir,
                      strerror(errno));
  claim_search_t cs = {.dir = f->dir, .p = p, .floor = floor};
  int rc = claim_read_pool(l, &cs, err, errlen);
  if (rc < 0)
    return rc;
  cs.now = idgen__req_now_ms(req);
  rc = claim_choose(&cs, c, err, errlen);
  pool_free(&cs.pf);
  if (rc < 0)
    return rc;
  if (c->fd < 0 && cs.bad[0])
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: no usable tuple: %s is not a valid idgen lease record "
                      "(refusing to guess its mark) and the others are held",
                      cs.bad);
  if (c->fd < 0 && cs.denied[0])
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: no tuple this user may lock: %s: %s, and the others are held",
                      cs.denied, strerror(EACCES));
  if (c->fd < 0) { /* file: has no quarantine: a stopped holder's tuple is free at once */
    int64_t none = 0;
    return idgen__pool_full("registry: ", req, p, p->size, 0, -1, &none, err, errlen);
  }
  return claim_write_slot(&cs, c, err, errlen);
}

static int file_acquire_(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                         size_t errlen);

/* Acquisition, and when it was refused for want of permission on the
 * registry's files (made by another user before the directory was shared,
 * or by an earlier idgen that did not share them), what to do about it. */
static int file_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                        size_t errlen) {
  int rc = file_acquire_(l, req, err, errlen);
  if (rc < 0 && err != NULL && strstr(err, strerror(EACCES)) != NULL) {
    size_t used = strlen(err);
    const char *d = root(l->r);
    snprintf(err + used, errlen - used,
             "; this user may not write every file of the registry: share it with the group "
             "of its users (as root, with its holders stopped: chgrp -R GROUP %s && chmod -R "
             "g+rwX %s && find %s -type d -exec chmod g+s {} +)",
             d, d, d);
  }
  return rc;
}

static int file_acquire_(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                         size_t errlen) {
  const idgen__pool_t *p = &l->pool;
  file_lease_t *f = calloc(1, sizeof *f);
  if (f == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  f->fd = -1;
  l->be = f; /* freed with l, also when this fails */
  char sdir[1100];
  if ((size_t)snprintf(f->dir, sizeof f->dir, "%s/%s", root(l->r), p->store) >= sizeof f->dir ||
      space_dir(l->r, l->r->space_path, sdir, sizeof sdir) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: pool path too long");
  /* The space first (space.c), and the tuple's claim under the same lock:
   * a layout that could repeat this one's IDs cannot join in between. */
  int64_t floor = 0;
  claim_t c;
  int sfd = -1,
      rc = make_dirs(sdir) < 0 || (sfd = space_lock(sdir)) < 0
               ? idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s/space.lock: %s",
                            sdir, strerror(errno))
               : 0;
  if (rc == 0)
    rc = file_space_join(l, req, sdir, &floor, err, errlen);
  if (rc == 0)
    rc = file_claim(l, req, floor, &c, err, errlen);
  if (sfd >= 0)
    pool_unlock(sfd);
  if (rc < 0)
    return rc;
  f->slot_mark = c.mark;
  l->floor_ms = floor;
  /* Start above the mark: wait, reading the wall clock again after each
   * sleep (a sleep is measured on another clock), at most max_start_wait. */
  int64_t waited = 0, now = idgen__req_now_ms(req);
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  int64_t start = c.mark > floor ? c.mark : floor;
  while (start >= now + borrow) {
    int wrc = idgen__start_wait(
        "registry: ", req, p, c.id, start, now, &waited,
        c.fresh ? "; it is new to the pool, so it starts above the pool-wide mark" : "", err,
        errlen);
    if (wrc < 0) {
      close_held(c.fd);
      return wrc;
    }
    now = idgen__req_now_ms(req);
  }
  f->fd = c.fd;
  l->worker = c.id;
  l->key = p->fixed | c.id << p->shift;
  l->generation = c.gen + 1;
  snprintf(f->path, sizeof f->path, "%s", c.path);
  /* The record is relied on from here: its file's name must be durable too,
   * whoever created it (a creator may have died before its own fsync). */
  rc = write_record(l, c.mark);
  if (rc == 0 && (fsync_dir(f->dir) < 0 || fsync_dir(sdir) < 0))
    rc = IDGEN_EREGISTRY;
  if (rc < 0) {
    int e = errno;
    close_held(c.fd);
    f->fd = -1;
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot make %s durable: %s", c.path,
                      strerror(e));
  }
  return 0;
}

/* Whether l's lock file is still the file at its path. */
static int file_renew(idgen_lease_t *l, char *err, size_t errlen) {
  file_lease_t *f = l->be;
  struct stat a, b;
  int gone = 0;
  if (fstat(f->fd, &a) < 0 || (stat(f->path, &b) < 0 && !(gone = errno == ENOENT)))
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", f->path,
                      strerror(errno)); /* cannot tell: not (yet) a loss */
  if (gone || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
    return idgen__err(err, errlen, IDGEN_ELEASE, /* someone else may lock the new file */
                      "registry: lock file %s was removed or replaced under the holder", f->path);
  return 0;
}

static int file_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  file_lease_t *f = l->be;
  /* The checks and the tuple's slot (raised, or lowered to the final mark)
   * under the pool's lock, before the record (the protocol at the top of
   * this file). */
  int dfd = pool_lock(f->dir);
  if (dfd < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s: %s", f->dir,
                      strerror(errno));
  pool_file_t pf;
  memset(&pf, 0, sizeof pf);
  int rc = file_renew(l, err, errlen);
  if (rc == 0)
    rc = pool_open_locked(f->dir, l->pool.layout, &pf, err, errlen);
  if (rc == 0) {
    long ix = pool_find(&pf, l->key);
    int written = 0;
    if (ix >= 0 && pf.marks[ix] != f->slot_mark)
      rc = idgen__err(err, errlen, IDGEN_ELEASE,
                      "registry: tuple %016" PRIx64 "'s mark in %s/pool is %" PRId64
                      ", not %" PRId64 " as this holder left it: another holder took the "
                      "tuple while this one's lock file was away",
                      l->key, f->dir, pf.marks[ix], f->slot_mark);
    else
      rc = pool_set_locked(f->dir, &pf, l->key, mark_ms, &written, err, errlen);
    if (written) /* in the file, durable or not: what the next check finds */
      f->slot_mark = mark_ms;
  }
  pool_free(&pf);
  pool_unlock(dfd);
  if (rc == 0 && (rc = write_record(l, mark_ms)) < 0)
    idgen__err(err, errlen, rc, "registry: cannot write the mark to %s: %s", f->path,
               strerror(errno));
  return rc;
}

static void file_release(idgen_lease_t *l) {
  file_lease_t *f = l->be;
  /* The record says the grant ended (no holder; its generation and mark
   * stay), so that file_adopt tells a released tuple from one whose holder
   * died.  Not fdatasync'ed: releasing is best effort, and a record that
   * loses this write in a crash still names a grant nobody else was given
   * (file_adopt also wants the generation, and the lock free), whose mark
   * covers every ID it issued. */
  char buf[IDGEN__LEASE_RECORD_SIZE];
  idgen__lease_record_t rec = {.generation = l->generation, .key = l->key, .mark_ms = l->mark_ms};
  if (idgen__lease_record_format(buf, &rec) == 0 &&
      pwrite(f->fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
    /* dropped, as release's errors are */
  }
  close_held(f->fd); /* drops the lock; the record, and its mark, stay */
  f->fd = -1;
}

/* ---- adopt ------------------------------------------------------------------ */

/* Tuple l->key's lock file, locked without waiting: the descriptor, or -1
 * with *rc: IDGEN_ELEASE when there is none or a live process holds it.
 * A lock held for a moment by `idgen registry list` (a shared look) is not
 * a holder: looked at again. */
static int adopt_lock(idgen_lease_t *l, const char *path, int *rc, char *err, size_t errlen) {
  *rc = 0;
  for (int attempt = 0; attempt < 4; attempt++) {
    if (attempt)
      usleep(5000);
    int fd = open_held(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      *rc = errno == ENOENT ? idgen__err(err, errlen, IDGEN_ELEASE,
                                         "registry: cannot take over %s of %s: it was never "
                                         "granted (no %s)",
                                         l->node, l->pool.name, path)
                            : idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path,
                                         strerror(errno));
      return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
      int e = errno;
      close_held(fd);
      if (e == EWOULDBLOCK)
        continue;
      *rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(e));
      return -1;
    }
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
      return fd;
    close_held(fd); /* replaced meanwhile: the file at the path is the one */
  }
  *rc = idgen__err(err, errlen, IDGEN_ELEASE,
                   "registry: cannot take over %s of %s: a live process holds its lock (%s)",
                   l->node, l->pool.name, path);
  return -1;
}

/* Whether the locked record `fd` is still the grant to take over, its mark
 * above `floor`: 0 with *rec, or why not. */
static int adopt_record(idgen_lease_t *l, const char *was, int fd, const char *path, int64_t floor,
                        idgen__lease_record_t *rec, char *err, size_t errlen) {
  int kind = read_record(fd, rec);
  char why[300] = "";
  if (kind == REC_BAD)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s is not a valid idgen lease record (refusing to guess its mark)",
                      path);
  if (kind == REC_EMPTY || rec->key != l->key)
    snprintf(why, sizeof why, "its record is %s", kind == REC_EMPTY ? "empty" : "another tuple's");
  else if (rec->generation > l->generation && rec->holder[0])
    snprintf(why, sizeof why, "granted again, generation %" PRIu64 " to %.100s", rec->generation,
             rec->holder);
  else if (rec->generation > l->generation)
    snprintf(why, sizeof why, "granted again (generation %" PRIu64 ") and released since",
             rec->generation);
  else if (rec->generation != l->generation)
    snprintf(why, sizeof why, "its record shows generation %" PRIu64, rec->generation);
  else if (rec->holder[0] == '\0')
    snprintf(why, sizeof why, "released by its holder");
  else if (strcmp(rec->holder, was) != 0)
    snprintf(why, sizeof why, "generation %" PRIu64 " is recorded for %.100s, not %.100s",
             rec->generation, rec->holder, was);
  else if (rec->mark_ms <= floor)
    snprintf(why, sizeof why,
             "its mark %" PRId64 " is not above its layout's floor %" PRId64
             " in the ID space: the grant may predate a takeover of the space",
             rec->mark_ms, floor);
  if (why[0])
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "registry: cannot take over generation %" PRIu64 " of %s in %s: %s",
                      l->generation, l->node, l->pool.name, why);
  return 0;
}

/* The tuple's slot in the pool file, which must hold the record's mark:
 * 0 with *slot, or why not. */
static int adopt_slot(idgen_lease_t *l, int64_t mark, int64_t *slot, char *err, size_t errlen) {
  file_lease_t *f = l->be;
  int dfd = pool_lock(f->dir);
  if (dfd < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s: %s", f->dir,
                      strerror(errno));
  pool_file_t pf;
  memset(&pf, 0, sizeof pf);
  int rc = pool_open_locked(f->dir, l->pool.layout, &pf, err, errlen);
  long ix = rc == 0 ? pool_find(&pf, l->key) : -1;
  *slot = ix >= 0 ? pf.marks[ix] : -1;
  pool_free(&pf);
  pool_unlock(dfd);
  if (rc == 0 && *slot != mark)
    rc = idgen__err(err, errlen, IDGEN_ELEASE,
                    "registry: cannot take over generation %" PRIu64 " of %s in %s: its mark in "
                    "%s/pool is %s%" PRId64 ", not %" PRId64 " as its record says (a mark write "
                    "cut short, or another holder took it while its lock file was away)",
                    l->generation, l->node, l->pool.name, f->dir, *slot < 0 ? "missing, " : "",
                    *slot, mark);
  return rc;
}

/* file_adopt's steps, with the space's lock held (see file_adopt). */
static int adopt_locked(idgen_lease_t *l, const char *was, const char *sdir, char *err,
                        size_t errlen) {
  file_lease_t *f = l->be;
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  int64_t floor = 0, slot = -1;
  idgen_layout_t lay;
  int rc = space_load(sdir, s, err, errlen);
  int member = rc == 0 && idgen_layout_parse(&lay, l->pool.layout, NULL, 0) == 0 &&
               idgen__space_member(s, &l->pool, &lay, &floor);
  free(s);
  if (rc < 0)
    return rc;
  if (!member)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "registry: cannot take over %s of %s: its layout is no longer in ID space "
                      "\"%s\" (another layout took the space over while it was not held)",
                      l->node, l->pool.name, l->r->space);
  char path[1400];
  snprintf(path, sizeof path, "%s/%016" PRIx64 ".lock", f->dir, l->key);
  int fd = adopt_lock(l, path, &rc, err, errlen);
  if (fd < 0)
    return rc;
  idgen__lease_record_t rec;
  rc = adopt_record(l, was, fd, path, floor, &rec, err, errlen);
  if (rc == 0)
    rc = adopt_slot(l, rec.mark_ms, &slot, err, errlen);
  if (rc == 0) {
    f->fd = fd;
    f->slot_mark = slot;
    snprintf(f->path, sizeof f->path, "%s", path);
    l->floor_ms = floor;
    if (write_record(l, rec.mark_ms) < 0) /* the new holder, durably */
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot write %s: %s", path,
                      strerror(errno));
  }
  if (rc < 0) {
    close_held(fd);
    f->fd = -1;
  }
  return rc;
}

/*
 * Takes over grant (l->key, l->generation) of `was`, whose process died
 * (registry_int.h, idgen_registry_adopt).  The lock is the fence: a live
 * holder keeps its file locked, so a lock that cannot be had at once is a
 * live process's (IDGEN_ELEASE).  With the lock, the record must still be
 * that grant: the same key, generation and holder; a released tuple's
 * record has no holder (file_release), one granted again a later
 * generation.  The tuple's slot in the pool file must hold the record's
 * mark, as every complete mark write leaves it: a slot that differs is
 * either a mark write cut short or another holder's, who took the tuple
 * while its lock file was away (the protocol at the top of this file), and
 * the two cannot be told apart, so neither is adopted.
 *
 * The floor.  file: has no expiry: while the grant's process was dead, no
 * tuple of its pool may have been live, and a layout joining the ID space
 * then may have retired the pool (space.c), the IDs above its old ones
 * going to the newcomer.  So the pool must still be in the space's record
 * (read under the space's lock, held until the tuple is ours: nothing
 * joins in between), and its floor there is l->floor_ms, as acquire gives.
 * What matters for an adopted grant is the floor of its grant, which the
 * record does not keep; it is the floor read now unless the pool was
 * retired and joined again since, and then the new floor is at or above
 * the pool's mark at its retirement (the retired range's top), so at or
 * above this tuple's mark.  A grant whose holder recorded a mark above
 * the floor is therefore adopted (every ID it issued is under its mark,
 * and the space is as it was for it), and one whose mark is at or below
 * the floor is refused: it may predate a takeover, and a holder that never
 * recorded a mark above its floor issued nothing, so it loses nothing but
 * a restart.
 */
static int file_adopt(idgen_lease_t *l, const char *was, char *err, size_t errlen) {
  file_lease_t *f = calloc(1, sizeof *f);
  if (f == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  f->fd = -1;
  l->be = f; /* freed with l, also when this fails */
  char sdir[1100];
  if ((size_t)snprintf(f->dir, sizeof f->dir, "%s/%s", root(l->r), l->pool.store) >=
          sizeof f->dir ||
      space_dir(l->r, l->r->space_path, sdir, sizeof sdir) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: pool path too long");
  struct stat st;
  if (stat(f->dir, &st) != 0)
    return errno == ENOENT ? idgen__err(err, errlen, IDGEN_ELEASE,
                                        "registry: cannot take over a tuple of %s: the pool was "
                                        "never used in %s",
                                        l->pool.name, root(l->r))
                           : idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", f->dir,
                                        strerror(errno));
  /* An earlier idgen's live holder is refused as acquire refuses it (its
   * marks were part of where the grant started). */
  int64_t legacy = 0;
  int rc = l->r->space_path[0] ? 0 : legacy_check(root(l->r), &legacy, err, errlen);
  if (rc < 0)
    return rc;
  int sfd = space_lock(sdir);
  if (sfd < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s/space.lock: %s", sdir,
                      strerror(errno));
  rc = adopt_locked(l, was, sdir, err, errlen);
  pool_unlock(sfd);
  return rc;
}

/* ---- list and free ------------------------------------------------------- */

/* Whether another open file description holds the lock at `path`: 1 held,
 * 0 free, -1 with errno.  A shared lock taken for the look is dropped at
 * once (an acquirer that meets it moves on to the next tuple). */
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

/* The keys of a pool directory with a lock file, sorted: a malloc'ed array. */
static uint64_t *pool_keys(const char *dir, size_t *n) {
  DIR *d = opendir(dir);
  uint64_t *keys = NULL;
  size_t cap = 0;
  *n = 0;
  if (d == NULL)
    return NULL;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    uint64_t key;
    if (!is_lock_name(e->d_name, &key))
      continue;
    if (*n == cap) {
      uint64_t *m = realloc(keys, (cap = cap ? 2 * cap : 64) * sizeof *keys);
      if (m == NULL)
        break;
      keys = m;
    }
    keys[(*n)++] = key;
  }
  closedir(d);
  if (*n)
    qsort(keys, *n, sizeof *keys, cmp_u64);
  return keys;
}

/* The pool's layout, as its file records it: 0, or -1 if unknown. */
static int pool_layout(const char *dir, idgen_layout_t *l, char *spec, size_t speclen) {
  int64_t mark;
  spec[0] = '\0';
  if (pool_read(dir, &mark, spec, speclen) != 0 || spec[0] == '\0')
    return -1;
  return idgen_layout_parse(l, spec, NULL, 0) == 0 ? 0 : -1;
}

static int list_pool(const char *dir, const char *space, const char *pool,
                     idgen_registry_list_cb cb, void *ctx) {
  idgen_lease_row_t row;
  idgen_layout_t lay;
  memset(&row, 0, sizeof row);
  int known = pool_layout(dir, &lay, row.layout, sizeof row.layout) == 0;
  pool_file_t pf; /* read without the lock: a snapshot for people */
  int64_t pm;
  if (pool_load(dir, &pf) != 0 && records_max(dir, &pf.mark) < 0)
    pf.mark = 0; /* missing: what the next acquirer rebuilds it to */
  pm = pf.mark;
  size_t n;
  uint64_t *keys = pool_keys(dir, &n);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    char path[1600];
    snprintf(row.pool, sizeof row.pool, "%s", pool);
    snprintf(row.space, sizeof row.space, "%s", space);
    row.key = keys[i];
    row.pool_mark_ms = pm;
    row.expires_in_ms = -1;
    idgen__node_text(known ? &lay : NULL, keys[i], row.node);
    if ((size_t)snprintf(path, sizeof path, "%s/%016" PRIx64 ".lock", dir, keys[i]) >= sizeof path)
      continue;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      continue;
    idgen__lease_record_t rec;
    int kind = read_record(fd, &rec);
    close(fd);
    long ix = pool_find(&pf, keys[i]);
    row.generation = rec.generation;
    row.mark_ms = ix >= 0 ? pf.marks[ix] : pm; /* where its next holder starts */
    if (kind == REC_VALID && rec.key == keys[i] && rec.mark_ms > row.mark_ms)
      row.mark_ms = rec.mark_ms; /* the slot was lost or rolled back: file_acquire */
    snprintf(row.holder, sizeof row.holder, "%s", rec.holder);
    if (kind == REC_BAD)
      snprintf(row.holder, sizeof row.holder,
               "(corrupt record: acquisition skips this tuple; do not delete the file)");
    else if (kind == REC_EMPTY)
      snprintf(row.holder, sizeof row.holder, "(empty record)");
    else if (rec.key != keys[i])
      snprintf(row.holder, sizeof row.holder, "(another tuple's record, moved here)");
    row.state = probe_held(path) == 1 ? IDGEN_LEASE_HELD : IDGEN_LEASE_FREE;
    rc = cb(ctx, &row);
  }
  free(keys);
  pool_free(&pf);
  return rc;
}

/* The spaces of r, in order ("default", then DIR/spaces/ by name), or only
 * r's own when its URI named it: fn(ctx, name, its directory) for each,
 * until one returns nonzero. */
static int each_space(idgen_registry_t *r, int (*fn)(void *ctx, const char *name, const char *sdir),
                      void *ctx) {
  char sdir[1400], spaces[1100];
  if (r->space_given) {
    if (space_dir(r, r->space_path, sdir, sizeof sdir) < 0)
      return IDGEN_EREGISTRY;
    return fn(ctx, r->space, sdir);
  }
  int rc = fn(ctx, "default", root(r));
  snprintf(spaces, sizeof spaces, "%s/spaces", root(r));
  DIR *d = opendir(spaces);
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.' || idgen__space_name_check(e->d_name, NULL, 0) < 0)
      continue;
    if (n == cap) {
      char **m = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *names);
      if (m == NULL)
        break;
      names = m;
    }
    if ((names[n] = strdup(e->d_name)) != NULL)
      n++;
  }
  if (d != NULL)
    closedir(d);
  if (n)
    qsort(names, n, sizeof *names, strcmp_ptr);
  for (size_t i = 0; i < n && rc == 0; i++) {
    snprintf(sdir, sizeof sdir, "%s/%s", spaces, names[i]);
    rc = fn(ctx, names[i], sdir);
  }
  names_free(names, n);
  return rc;
}

typedef struct list_ctx {
  idgen_registry_list_cb cb;
  idgen__space_list_cb scb;
  void *ctx;
  char *err;
  size_t errlen;
} list_ctx_t;

static int list_space(void *ctx, const char *name, const char *sdir) {
  list_ctx_t *c = ctx;
  size_t n;
  char **pools = pool_names(sdir, &n);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    char dir[1600];
    snprintf(dir, sizeof dir, "%s/%s", sdir, pools[i]);
    rc = list_pool(dir, name, pools[i], c->cb, c->ctx);
  }
  names_free(pools, n);
  return rc;
}

static int file_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err,
                     size_t errlen) {
  if (access(root(r), R_OK | X_OK) != 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", root(r),
                      strerror(errno));
  list_ctx_t c = {cb, NULL, ctx, err, errlen};
  return each_space(r, list_space, &c);
}

static int spaces_one(void *ctx, const char *name, const char *sdir) {
  list_ctx_t *c = ctx;
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(c->err, c->errlen, IDGEN_ENOMEM, "registry: out of memory");
  idgen__space_probe_t probe = {(void *)sdir, file_live, file_issued};
  int rc = space_load(sdir, s, c->err, c->errlen);
  if (rc == 0)
    rc = c->scb(c->ctx, name, s, &probe);
  free(s);
  return rc;
}

static int file_spaces(idgen_registry_t *r, idgen__space_list_cb cb, void *ctx, char *err,
                       size_t errlen) {
  list_ctx_t c = {NULL, cb, ctx, err, errlen};
  return each_space(r, spaces_one, &c);
}

static int file_free(idgen_registry_t *r, const char *pool, const char *node, int force, char *err,
                     size_t errlen) {
  char dir[1200], path[1300], spec[IDGEN_LAYOUT_SPEC_MAX], why[300];
  if ((size_t)snprintf(dir, sizeof dir, "%s/%s%s", root(r), r->space_path, pool) >= sizeof dir)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: pool name too long");
  if (access(dir, F_OK) != 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: no pool %s in space %s of %s", pool,
                      r->space, root(r));
  idgen_layout_t lay;
  uint64_t key;
  int known = pool_layout(dir, &lay, spec, sizeof spec) == 0;
  if (idgen__node_key(known ? &lay : NULL, node, &key, why, sizeof why) < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: %s", why);
  snprintf(path, sizeof path, "%s/%016" PRIx64 ".lock", dir, key);
  int held = probe_held(path);
  if (held < 0 && errno == ENOENT)
    return idgen__err(err, errlen, IDGEN_EINVAL,
                      "registry: %s has no tuple %s in %s (never leased)", pool, node, root(r));
  if (held < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s: %s", path, strerror(errno));
  if (held)
    return idgen__err(err, errlen, IDGEN_ELEASE,
                      "registry: %s in %s is locked by a live process: a file: lease cannot be "
                      "taken from its holder%s; stop the holder and the tuple is free at once",
                      node, pool, force ? ", even with --force" : "");
  return idgen__err(err, errlen, 0,
                    "registry: %s in %s is already free (no process holds its lock; its mark "
                    "stays)",
                    node, pool);
}

static void file_close(idgen_registry_t *r) {
  free(r->be);
  r->be = NULL;
}

/* ---- sequences ------------------------------------------------------------ */

/* A counter's record is the file seq/KEY in its space's directory: a first
 * line "idgen-seqfile v1 version=V" and then the record's text (seq_int.h).
 * It is read without a lock (it is only ever replaced whole, by rename) and
 * stored under an exclusive flock on seq/KEY.lock: the version read again
 * under it, the new file written, fsynced, renamed over, the directory
 * fsynced. */
#define SEQ_FILE_HEAD "idgen-seqfile v1 version="
/* How long a store waits for the record's lock, held by a writer only for
 * one write: past it the registry counts as unreachable. */
#define SEQ_LOCK_WAIT_MS 10000

static int seq_path(idgen_registry_t *r, const char *key, const char *suffix, char *buf, size_t n) {
  char sdir[1400];
  if (space_dir(r, r->space_path, sdir, sizeof sdir) < 0)
    return -1;
  int w = snprintf(buf, n, "%s/seq%s%s%s", sdir, key ? "/" : "", key ? key : "", suffix);
  return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* The file at path: 0 with *text (malloc'd, or NULL when there is none) and
 * *version; -1 with errno, or -2 when it is not a counter's file. */
static int seq_read(const char *path, char **text, uint64_t *version) {
  *text = NULL;
  *version = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno == ENOENT ? 0 : -1;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  ssize_t got = 0;
  while (buf != NULL && (got = read(fd, buf + n, cap - n)) > 0) {
    n += (size_t)got;
    if (n == cap) {
      char *m = cap < ((size_t)1 << 24) ? realloc(buf, 2 * cap + 1) : NULL;
      if (m == NULL) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = m;
      cap *= 2;
    }
  }
  int e = errno;
  close(fd);
  if (buf == NULL || got < 0) {
    free(buf);
    errno = buf == NULL ? ENOMEM : e;
    return -1;
  }
  buf[n] = '\0';
  size_t h = strlen(SEQ_FILE_HEAD);
  char *nl = memchr(buf, '\n', n), *endp = NULL;
  if (n < h || memcmp(buf, SEQ_FILE_HEAD, h) != 0 || nl == NULL) {
    free(buf);
    return -2;
  }
  *version = strtoull(buf + h, &endp, 10);
  if (endp != nl || *version == 0) {
    free(buf);
    return -2;
  }
  memmove(buf, nl + 1, n - (size_t)(nl + 1 - buf) + 1);
  *text = buf;
  return 0;
}

static int file_seq_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                         char *err, size_t errlen) {
  char path[1600];
  if (seq_path(r, key, "", path, sizeof path) < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: sequence key %s too long", key);
  int rc = seq_read(path, text, version);
  if (rc == -2)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry: %s is not a sequence's file (no \"" SEQ_FILE_HEAD "N\" line)",
                      path);
  if (rc < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", path,
                      strerror(errno));
  return 0;
}

/* Writes path's new content through tmp, durably; with the record's lock held. */
static int seq_write(const char *dir, const char *path, const char *tmp, const char *text,
                     uint64_t version) {
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  share_like_parent(fd, tmp);
  char head[64];
  int hn = snprintf(head, sizeof head, SEQ_FILE_HEAD "%" PRIu64 "\n", version);
  size_t tn = strlen(text);
  int rc =
      write(fd, head, (size_t)hn) != hn || write(fd, text, tn) != (ssize_t)tn || fdatasync(fd) < 0
          ? -1
          : 0;
  int e = errno;
  close(fd);
  if (rc == 0 && (rename(tmp, path) < 0 || fsync_dir(dir) < 0))
    rc = -1, e = errno;
  if (rc < 0)
    unlink(tmp);
  errno = e;
  return rc;
}

static int file_seq_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                          char *err, size_t errlen) {
  char dir[1600], path[1600], tmp[1700], lock[1700];
  if (seq_path(r, NULL, "", dir, sizeof dir) < 0 || seq_path(r, key, "", path, sizeof path) < 0 ||
      seq_path(r, key, ".new", tmp, sizeof tmp) < 0 ||
      seq_path(r, key, ".lock", lock, sizeof lock) < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "registry: sequence key %s too long", key);
  if (make_dirs(dir) < 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot make %s: %s", dir,
                      strerror(errno));
  int fd = lock_exclusive_for(lock, O_RDWR | O_CREAT | O_CLOEXEC, SEQ_LOCK_WAIT_MS);
  if (fd < 0)
    return idgen__err(
        err, errlen, IDGEN_EREGISTRY, "registry: cannot lock %s: %s%s", lock, strerror(errno),
        errno == ETIMEDOUT ? " (held that long: a writer stopped while writing?)" : "");
  char *old = NULL;
  uint64_t now = 0;
  int rc = seq_read(path, &old, &now);
  free(old);
  if (rc == -2)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: %s is not a sequence's file", path);
  else if (rc < 0)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", path,
                    strerror(errno));
  else if (now != version)
    rc = IDGEN_EAGAIN;
  else if (seq_write(dir, path, tmp, text, version + 1) < 0)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot write %s: %s", path,
                    strerror(errno));
  pool_unlock(fd);
  return rc;
}

typedef struct seq_keys_ctx {
  int (*cb)(void *ctx, const char *space, const char *key);
  void *ctx;
} seq_keys_ctx_t;

static int seq_keys_space(void *ctx, const char *name, const char *sdir) {
  seq_keys_ctx_t *c = ctx;
  char dir[1500];
  snprintf(dir, sizeof dir, "%s/seq", sdir);
  DIR *d = opendir(dir);
  if (d == NULL)
    return 0;
  char **keys = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t k = strlen(e->d_name);
    if (e->d_name[0] == '.' || strchr(e->d_name, '.') != NULL || k >= IDGEN_SEQ_KEY_MAX)
      continue;
    if (n == cap) {
      char **m = realloc(keys, (cap = cap ? 2 * cap : 16) * sizeof *keys);
      if (m == NULL) {
        rc = IDGEN_ENOMEM;
        break;
      }
      keys = m;
    }
    if ((keys[n] = strdup(e->d_name)) != NULL)
      n++;
  }
  closedir(d);
  if (n)
    qsort(keys, n, sizeof *keys, strcmp_ptr);
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = c->cb(c->ctx, name, keys[i]);
  names_free(keys, n);
  return rc;
}

static int file_seq_keys(idgen_registry_t *r,
                         int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                         char *err, size_t errlen) {
  if (access(root(r), R_OK | X_OK) != 0)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, "registry: cannot read %s: %s", root(r),
                      strerror(errno));
  seq_keys_ctx_t c = {cb, ctx};
  return each_space(r, seq_keys_space, &c);
}

const idgen__registry_ops_t idgen__registry_file = {
    .version = IDGEN__REGISTRY_OPS_VERSION,
    .bounded = 1, /* a frozen or hung file system holds its calls */
    .scheme = "file",
    .check = file_check,
    .mark_step_ms = 1000,
    .expires = 0,
    .open = file_open,
    .acquire = file_acquire,
    .renew = file_renew,
    .mark = file_mark,
    .release = file_release,
    .list = file_list,
    .free = file_free,
    .close = file_close,
    .spaces = file_spaces,
    .adopt = file_adopt,
    .seq_load = file_seq_load,
    .seq_store = file_seq_store,
    .seq_keys = file_seq_keys,
};
