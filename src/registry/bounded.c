/*
 * bounded.c -- backend calls that a stuck system call cannot hold past a
 * bound (docs/DESIGN.md §11, "Bounded calls").
 *
 * A `file:` registry's acquisition, renewal, mark write and release are
 * system calls on a local file system, and a frozen file system (fsfreeze,
 * a snapshot) or a hung NFS mount holds them for as long as it lasts: the
 * caller, a CLI's main thread, a daemon starting, or the Node.js event loop,
 * was held with it (9.9 s of a 10 s freeze; tests/frozen_registry_test.sh,
 * the ctest registry.frozen, checks the bound).  The network backends
 * bound their own calls (connect and statement time-outs); a backend whose
 * table sets `bounded` has its calls run here instead: on a thread of their
 * own, the caller waiting at most
 *
 *   acquire   max_start_wait_ms + IDGEN_REGISTRY_CALL_MS (its own waits
 *             for a mark to pass are part of the call),
 *   renew, mark, release, adopt   IDGEN_REGISTRY_CALL_MS,
 *
 * and then getting IDGEN_EREGISTRY naming the registry.  The call goes on
 * in the background and owns what it holds: an acquisition that succeeds
 * after its caller gave up releases what it took; a release finishes and
 * frees the lease; the registry is freed by whichever comes last, its close
 * or its last call.  Calls on one lease never overlap: while one that was
 * given up is still running, renew and mark fail at once (the keeper counts
 * a failed write and tries again later) and a release is left to it.
 *
 * What it cannot do: a thread in an uninterruptible write cannot be ended,
 * so a process that has one is not reaped until the file system answers
 * (its exit status waits; it has said what went wrong by then).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "registry_int.h"

/* Guards every registry's `calls`/`closing` and every lease's
 * `stuck`/`release_pending`, and each call's `done`/`abandoned`. */
static pthread_mutex_t bounded_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t bounded_once = PTHREAD_ONCE_INIT;
static void bounded_lock(void) { pthread_mutex_lock(&bounded_mu); }
static void bounded_unlock(void) { pthread_mutex_unlock(&bounded_mu); }
/* A fork while another thread holds the mutex would leave it held in the
 * child; the child's calls on its parent's leases are refused before they
 * get here (fork_gen), and its own are new. */
static void bounded_atfork(void) { pthread_atfork(bounded_lock, bounded_unlock, bounded_unlock); }

typedef enum { B_ACQUIRE, B_RENEW, B_MARK, B_RELEASE, B_OPEN, B_ADOPT } bkind_t;

/* Calls given up and still running, in the whole process (a worker that
 * opens a new registry for each try counts too), past which new calls (but
 * releases) are refused at once; under bounded_mu. */
#define GIVEN_UP_MAX 16
static int given_up_calls;

typedef struct bcall {
  bkind_t kind;
  idgen_lease_t *l; /* NULL for B_OPEN */
  idgen_registry_t *r;
  const char *rest; /* B_OPEN: what follows "file:", in r's memory */
  /* acquire: the request, copied with what it points to (the caller's may
   * be gone when a call it gave up returns) */
  idgen_lease_request_t req;
  idgen_layout_t layout;
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];
  char field[IDGEN_FIELD_NAME_MAX + 1];
  char was[IDGEN_HOLDER_MAX]; /* adopt: the holder to take over from, copied */
  int64_t mark_ms;
  int rc;
  char err[1024];
  int efd; /* an eventfd the call's thread writes when done */
  int done, abandoned;
} bcall_t;

static const char *const kind_name[] = {"acquisition", "renewal", "mark write",
                                        "release",     "opening", "adoption"};

/* Frees r once nothing runs on it any more (bounded_mu not held). */
static void registry_free(idgen_registry_t *r) {
  if (r->opened && r->ops->close)
    r->ops->close(r);
  free(r->uri);
  free(r->shown);
  free(r);
}

/* The kernel's CLOCK_MONOTONIC in ms, by a system call: a clock faker
 * loaded with LD_PRELOAD (libfaketime, also when told to leave this clock
 * alone, moves the deadline of a timed wait by its offset) cannot make the
 * bound pass early or never.  The wait itself is a relative poll. */
static int64_t kernel_mono_ms(void) {
  struct timespec ts;
  if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts) != 0)
    clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void call_free(bcall_t *c) {
  if (c->efd >= 0)
    close(c->efd);
  free(c);
}

static int run(bcall_t *c) {
  idgen_lease_t *l = c->l;
  switch (c->kind) {
  case B_OPEN:
    return c->r->ops->open(c->r, c->rest, c->err, sizeof c->err);
  case B_ACQUIRE:
    return l->r->ops->acquire(l, &c->req, c->err, sizeof c->err);
  case B_RENEW:
    return l->r->ops->renew(l, c->err, sizeof c->err);
  case B_MARK:
    return l->r->ops->mark(l, c->mark_ms, c->err, sizeof c->err);
  case B_RELEASE:
    l->r->ops->release(l);
    return 0;
  case B_ADOPT:
    return l->r->ops->adopt(l, c->was, c->err, sizeof c->err);
  }
  return IDGEN_EINVAL;
}

static void *call_thread(void *arg) {
  bcall_t *c = arg;
  int rc = run(c);
  idgen_lease_t *l = c->l;
  idgen_registry_t *r = c->r;
  bounded_lock();
  c->rc = rc;
  c->done = 1;
  if (!c->abandoned) {
    uint64_t one = 1;
    ssize_t w = write(c->efd, &one, sizeof one);
    (void)w; /* an eventfd's counter cannot overflow from one write */
    bounded_unlock();
    return NULL; /* the caller takes it from here */
  }
  /* Given up by its caller: finish what the call left. */
  int release = 0, free_lease = 0;
  switch (c->kind) {
  case B_OPEN: /* the caller never got r: it goes, opened or not */
    r->opened = rc == 0;
    r->closing = 1;
    break;
  case B_ACQUIRE:
  case B_ADOPT:
    release = rc == 0; /* taken after the caller left: give it back */
    free_lease = 1;
    break;
  case B_RENEW:
  case B_MARK:
    l->stuck = 0;
    release = free_lease = l->release_pending;
    break;
  case B_RELEASE:
    free_lease = 1;
    break;
  }
  bounded_unlock();
  if (release)
    r->ops->release(l);
  if (free_lease) {
    free(l->be);
    free(l);
  }
  bounded_lock();
  given_up_calls--;
  int last = --r->calls == 0 && r->closing;
  bounded_unlock();
  if (last)
    registry_free(r);
  call_free(c);
  return NULL;
}

/* Runs c on a thread of its own and waits at most bound_ms: c->rc, or
 * IDGEN_EREGISTRY with *given_up set when the bound passed (c, and what the
 * call holds, then belong to the thread). */
static int call_bounded(bcall_t *c, int64_t bound_ms, int *given_up, char *err, size_t errlen) {
  idgen_lease_t *l = c->l;
  idgen_registry_t *r = c->r;
  pthread_attr_t ta;
  pthread_attr_init(&ta);
  pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
  c->efd = eventfd(0, EFD_CLOEXEC);
  bounded_lock();
  if (given_up_calls >= GIVEN_UP_MAX && c->kind != B_RELEASE) {
    /* Each call given up holds a thread and a descriptor until its file
     * system answers: a caller that retries (a worker every few seconds)
     * must not pile them up. */
    int n = given_up_calls;
    bounded_unlock();
    pthread_attr_destroy(&ta);
    *given_up = 0;
    call_free(c);
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry %s: %d earlier calls to file: registries have not returned: "
                      "a file system does not answer (frozen, or a hung mount?)",
                      r->shown ? r->shown : r->uri, n);
  }
  r->calls++;
  if (c->kind == B_RENEW || c->kind == B_MARK)
    l->stuck = 1; /* a call on this lease is running */
  /* The thread takes no signal: they are the program's, for its threads
   * (a PostgreSQL backend's handlers must not run on it). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t t;
  int started = c->efd >= 0 && pthread_create(&t, &ta, call_thread, c) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  bounded_unlock();
  pthread_attr_destroy(&ta);
  if (!started && c->kind != B_RELEASE) { /* no thread (or eventfd) to be had: refused */
    int e = c->efd < 0 ? errno : EAGAIN;
    bounded_lock();
    if (l != NULL)
      l->stuck = 0;
    r->calls--;
    bounded_unlock();
    *given_up = 0;
    call_free(c);
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry %s: cannot start the call's thread: %s",
                      r->shown ? r->shown : r->uri, strerror(e));
  }
  if (!started) { /* a release: done here, unbounded, rather than not at all */
    c->rc = run(c);
    c->done = 1;
  }
  for (int64_t end = kernel_mono_ms() + bound_ms, left; started;) {
    if ((left = end - kernel_mono_ms()) <= 0)
      break;
    struct pollfd p = {.fd = c->efd, .events = POLLIN};
    if (poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left) > 0)
      break; /* done: the thread wrote the eventfd */
  }
  bounded_lock();
  *given_up = !c->done;
  if (!c->done) {
    c->abandoned = 1;
    given_up_calls++;
    bounded_unlock();
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry %s: the %s did not finish within %" PRId64 " ms%s: its file "
                      "system does not answer (frozen, or a hung mount?)%s; the call goes on in "
                      "the background and gives back what it takes",
                      r->shown ? r->shown : r->uri, kind_name[c->kind], bound_ms,
                      c->kind == B_ACQUIRE ? " (max_start_wait_ms and 2000)" : "",
                      c->kind == B_ACQUIRE ? ", or waiting for a mark took that long" : "");
  }
  if (l != NULL)
    l->stuck = 0;
  r->calls--;
  bounded_unlock();
  int rc = c->rc;
  if (rc < 0 && err != NULL && errlen > 0)
    snprintf(err, errlen, "%s", c->err);
  call_free(c);
  return rc;
}

static bcall_t *call_new(bkind_t kind, idgen_lease_t *l) {
  pthread_once(&bounded_once, bounded_atfork);
  bcall_t *c = calloc(1, sizeof *c);
  if (c != NULL) {
    c->kind = kind;
    c->l = l;
    c->r = l ? l->r : NULL;
    c->efd = -1;
  }
  return c;
}

int idgen__bounded_open(idgen_registry_t *r, const char *rest, int *given_up, char *err,
                        size_t errlen) {
  *given_up = 0;
  int rc;
  if (!r->ops->bounded) {
    rc = r->ops->open(r, rest, err, errlen);
  } else {
    bcall_t *c = call_new(B_OPEN, NULL);
    if (c == NULL)
      return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
    c->r = r;
    c->rest = rest;
    rc = call_bounded(c, IDGEN_REGISTRY_CALL_MS, given_up, err, errlen);
  }
  r->opened = rc == 0 && !*given_up;
  return rc;
}

int idgen__bounded_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, int *given_up,
                           char *err, size_t errlen) {
  const idgen__registry_ops_t *ops = l->r->ops;
  *given_up = 0;
  /* An injected clock (tests) is the caller's: it is not copied, so the
   * call stays on the caller's thread. */
  if (!ops->bounded || req->clock != NULL)
    return ops->acquire(l, req, err, errlen);
  bcall_t *c = call_new(B_ACQUIRE, l);
  if (c == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  c->req = *req;
  c->layout = *req->layout;
  c->req.layout = &c->layout;
  if (req->node != NULL) {
    memcpy(c->node, req->node, sizeof c->node);
    c->req.node = c->node;
  }
  if (req->field != NULL) {
    snprintf(c->field, sizeof c->field, "%s", req->field);
    c->req.field = c->field;
  }
  int64_t wait = req->max_start_wait_ms < 0 ? IDGEN_START_WAIT_MS_DEFAULT : req->max_start_wait_ms;
  return call_bounded(c, wait + IDGEN_REGISTRY_CALL_MS, given_up, err, errlen);
}

int idgen__bounded_adopt(idgen_lease_t *l, const char *was, int *given_up, char *err,
                         size_t errlen) {
  const idgen__registry_ops_t *ops = l->r->ops;
  *given_up = 0;
  if (!ops->bounded)
    return ops->adopt(l, was, err, errlen);
  bcall_t *c = call_new(B_ADOPT, l);
  if (c == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  snprintf(c->was, sizeof c->was, "%s", was);
  return call_bounded(c, IDGEN_REGISTRY_CALL_MS, given_up, err, errlen);
}

/* renew and mark: at once IDGEN_EREGISTRY while an earlier call that was
 * given up still runs on the lease. */
static int bounded_write(bkind_t kind, idgen_lease_t *l, int64_t mark_ms, char *err,
                         size_t errlen) {
  const idgen__registry_ops_t *ops = l->r->ops;
  if (!ops->bounded)
    return kind == B_RENEW ? ops->renew(l, err, errlen) : ops->mark(l, mark_ms, err, errlen);
  bcall_t *c = call_new(kind, l);
  if (c == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "registry: out of memory");
  c->mark_ms = mark_ms;
  bounded_lock();
  int stuck = l->stuck;
  bounded_unlock();
  if (stuck) {
    call_free(c);
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      "registry %s: an earlier call on this lease has not returned: its file "
                      "system does not answer (frozen, or a hung mount?)",
                      l->r->shown);
  }
  int given_up;
  return call_bounded(c, IDGEN_REGISTRY_CALL_MS, &given_up, err, errlen);
}

int idgen__bounded_renew(idgen_lease_t *l, char *err, size_t errlen) {
  return bounded_write(B_RENEW, l, 0, err, errlen);
}

int idgen__bounded_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  return bounded_write(B_MARK, l, mark_ms, err, errlen);
}

void idgen__bounded_release(idgen_lease_t *l) {
  const idgen__registry_ops_t *ops = l->r->ops;
  if (!ops->bounded) {
    ops->release(l);
    free(l->be);
    free(l);
    return;
  }
  bounded_lock();
  if (l->stuck) { /* the call still running finishes the release */
    l->release_pending = 1;
    bounded_unlock();
    return;
  }
  bounded_unlock();
  bcall_t *c = call_new(B_RELEASE, l);
  int given_up = 0;
  if (c == NULL)
    ops->release(l);
  else
    call_bounded(c, IDGEN_REGISTRY_CALL_MS, &given_up, NULL, 0);
  if (given_up)
    return; /* the call's thread frees the lease when it is done */
  free(l->be);
  free(l);
}

void idgen__bounded_close(idgen_registry_t *r) {
  bounded_lock();
  int busy = r->calls > 0;
  if (busy)
    r->closing = 1; /* the last call frees it */
  bounded_unlock();
  if (!busy)
    registry_free(r);
}
