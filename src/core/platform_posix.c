/*
 * platform_posix.c -- what the core asks of a POSIX system (Linux): fork
 * detection, and the secure random source.  Its WebAssembly counterpart is
 * platform_wasm.c; cmake/sources.cmake builds one of the two.
 *
 * Fork detection.  The current generation lives in a page marked
 * MADV_WIPEONFORK: in a child made by any kind of fork -- fork(), _Fork(),
 * clone() without CLONE_VM -- the page reads as zero, before any fork
 * handler or other code runs.  The first caller in the child then takes the
 * next generation (idgen__fork_renew, clock.c).  Generators remember the
 * generation they were made in (or last used), so a mismatch means "this
 * state was copied from another process".  Where the kernel lacks
 * MADV_WIPEONFORK (before Linux 4.14), a pthread_atfork child handler,
 * registered when the library loads, bumps the ordinary counter clock.c
 * starts with instead: that covers fork() but not _Fork().
 *
 * The random source: OpenSSL's DRBG read in 4 KiB blocks into a per-thread
 * buffer.  One getrandom() or RAND_bytes() call per ID costs 300 to 600 ns
 * here; RAND_bytes(4096) costs about 3 ns per 10 bytes.  OpenSSL's DRBG is
 * seeded from the kernel, reseeds itself periodically, and detects fork()
 * on its own.  Our per-thread buffer must too: it is tagged with the fork
 * generation and thrown away in a child, so a child never hands out bytes
 * its parent also had.  Bytes handed out are not wiped from the buffer:
 * they become public ID bits anyway; the buffer is cleansed when its thread
 * exits.
 *
 * fork() beside a thread inside RAND_bytes() copies OpenSSL's lock held,
 * and the child's first refill waited for it forever (about 1 fork in 100
 * with four threads drawing, before the gate below; test_fork_beside_draws
 * in tests/test_ulid.c forks beside draws).  So a fork() waits for
 * the RAND_bytes() calls under way in other threads (pthread_atfork), calls
 * made while a fork is pending draw from getrandom(), and a process that
 * was not made by a fork() that waited (_Fork(), clone()) refills from
 * getrandom() for good: OpenSSL's locks may be held there by threads that
 * do not exist.  openssl_gen is the fork generation in which RAND_bytes()
 * is safe: the one the library was loaded in, or the one a fork() child's
 * handler found.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "core_int.h"

/* ---- fork detection ------------------------------------------------------ */

static void on_fork_child(void) {
  unsigned g = atomic_load_explicit(idgen__fork_word, memory_order_relaxed) + 1;
  atomic_store_explicit(idgen__fork_word, g ? g : 1, memory_order_relaxed);
}

__attribute__((constructor)) static void fork_init(void) {
  long psz = sysconf(_SC_PAGESIZE);
  void *p = mmap(NULL, (size_t)psz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED && madvise(p, (size_t)psz, MADV_WIPEONFORK) == 0) {
    atomic_store_explicit((_Atomic unsigned *)p, 1, memory_order_relaxed);
    idgen__fork_word = p;
    return;
  }
  if (p != MAP_FAILED)
    munmap(p, (size_t)psz);
  pthread_atfork(NULL, NULL, on_fork_child);
}

/* ---- the random source --------------------------------------------------- */

#define RBUF_SIZE IDGEN__RBUF_SIZE

/* The pointer is initial-exec TLS (8 bytes, cheap to reach, also from the
 * generators' inline idgen__random_quick); the buffer itself is allocated
 * on first use and freed when the thread exits. */
__thread struct idgen__rbuf *idgen__tls_rbuf __attribute__((tls_model("initial-exec")));
static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;

static int rbuf_key_ok;

static void rbuf_free(void *p) {
  /* A later thread-exit destructor may still ask for random bytes: it gets a
   * new buffer (and this destructor runs again for it). */
  idgen__tls_rbuf = NULL;
  if (p != NULL) {
    OPENSSL_cleanse(p, sizeof(struct idgen__rbuf));
    free(p);
  }
}

static void rbuf_init_key(void) { rbuf_key_ok = pthread_key_create(&rbuf_key, rbuf_free) == 0; }

/* A gate between RAND_bytes() and fork(): each call counts itself in
 * (in_refill), and fork()'s prepare handler counts a fork pending and waits
 * until no call is in but its own thread's.  A call never waits: while a
 * fork is pending it takes its bytes from getrandom() instead, so no lock
 * of anyone else's (an earlier fork handler's, an application's) can be
 * held by a thread that waits here.  Counts, because glibc runs the prepare
 * handlers of forks from several threads at once.  Plain atomics: a child
 * could not unlock a lock its parent's thread took (another thread ID).  A
 * process that does not use OpenSSL (see openssl_gen) does not wait at all:
 * its counts may be stale copies. */
static _Atomic int fork_pending, in_refill;
static _Atomic unsigned openssl_gen;
/* Per thread: its calls counted in in_refill, never fewer (it goes up before
 * the count and down after it, so a fork() from a signal handler never
 * waits for its own thread); the forks it has pending (its fork_parent
 * takes back only its own, also after a fork() nested in a handler); the
 * generation its last fork() was called in, 0 when the child must stay on
 * getrandom(); and its cancellation state while a call is in. */
static __thread int my_refill __attribute__((tls_model("initial-exec")));
static __thread int my_forks __attribute__((tls_model("initial-exec")));
static __thread unsigned forked_from __attribute__((tls_model("initial-exec")));
static __thread int cancel_state __attribute__((tls_model("initial-exec")));

static void fork_prepare(void) {
  unsigned gen = idgen__fork_gen();
  int openssl = atomic_load_explicit(&openssl_gen, memory_order_relaxed) == gen;
  /* A fork() from a signal handler that interrupted this thread's own call
   * copies whatever that call holds: its child stays on getrandom(). */
  forked_from = openssl && my_refill == 0 ? gen : 0;
  if (!openssl)
    return; /* no OpenSSL here: nothing to wait for */
  my_forks++;
  atomic_fetch_add(&fork_pending, 1);
  while (atomic_load(&in_refill) > my_refill)
    sched_yield();
}
static void fork_parent(void) {
  if (my_forks > 0) {
    my_forks--;
    atomic_fetch_sub(&fork_pending, 1);
  }
}
static void fork_child(void) {
  my_forks = 0;
  my_refill = 0;
  atomic_store(&in_refill, 0); /* only this thread exists: no call is under way */
  atomic_store(&fork_pending, 0);
  /* OpenSSL stays usable only where the parent's calls were waited for. */
  if (forked_from != 0 && atomic_load_explicit(&openssl_gen, memory_order_relaxed) == forked_from)
    atomic_store_explicit(&openssl_gen, idgen__fork_gen(), memory_order_relaxed);
}

__attribute__((constructor)) static void random_init(void) {
  atomic_store_explicit(&openssl_gen, idgen__fork_gen(), memory_order_relaxed);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* n bytes from getrandom(), which may return fewer or be interrupted. */
static int from_kernel(unsigned char *out, size_t n) {
  while (n > 0) {
    ssize_t k = getrandom(out, n, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return IDGEN_ERANDOM;
    out += k;
    n -= (size_t)k;
  }
  return 0;
}

/* n bytes from OpenSSL, or from the kernel in a process where OpenSSL's
 * locks may be held by threads that are not there (see the top) and while
 * a fork is pending.  The gate is passed per call of at most 1 MiB, so that
 * a large draw holds fork() off no longer than one such call.  Cancellation
 * is off while a call is in (RAND_bytes may read a file, a cancellation
 * point): a thread cancelled there would leave in_refill counting it. */
static int source(unsigned char *out, size_t n) {
  if (atomic_load_explicit(&openssl_gen, memory_order_relaxed) != idgen__fork_gen())
    return from_kernel(out, n);
  for (size_t off = 0; off < n;) { /* RAND_bytes takes an int */
    size_t k = n - off < ((size_t)1 << 20) ? n - off : (size_t)1 << 20;
    int ok;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
    my_refill++;
    atomic_signal_fence(memory_order_seq_cst);
    atomic_fetch_add(&in_refill, 1);
    if (atomic_load(&fork_pending) != 0) {
      atomic_fetch_sub(&in_refill, 1);
      atomic_signal_fence(memory_order_seq_cst);
      my_refill--;
      ok = from_kernel(out + off, k) == 0;
    } else {
      ok = RAND_bytes(out + off, (int)k) == 1;
      atomic_fetch_sub_explicit(&in_refill, 1, memory_order_release);
      atomic_signal_fence(memory_order_seq_cst);
      my_refill--;
    }
    pthread_setcancelstate(cancel_state, NULL);
    if (!ok)
      return IDGEN_ERANDOM;
    off += k;
  }
  return 0;
}

static int refill(size_t n, void *out) {
  struct idgen__rbuf *b = idgen__tls_rbuf;
  if (b == NULL) {
    pthread_once(&rbuf_once, rbuf_init_key);
    b = malloc(sizeof *b);
    if (b == NULL)
      return IDGEN_ERANDOM;
    idgen__tls_rbuf = b;
    if (rbuf_key_ok) /* otherwise the buffer lives as long as the process */
      pthread_setspecific(rbuf_key, b);
  }
  b->gen = idgen__fork_gen();
  b->pos = RBUF_SIZE;
  if (n > RBUF_SIZE / 4) /* large requests go straight to the source */
    return source(out, n);
  if (source(b->bytes, RBUF_SIZE) < 0)
    return IDGEN_ERANDOM;
  memcpy(out, b->bytes, n);
  b->pos = n;
  return 0;
}

int idgen__random(const idgen_random_t *r, void *out, size_t n) {
  if (r != NULL)
    return r->fill(r->ctx, out, n);
  if (idgen__random_quick(NULL, out, n))
    return 0;
  return refill(n, out);
}
