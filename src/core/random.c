/*
 * random.c -- secure random bytes, fast: OpenSSL's DRBG read in 4 KiB blocks
 * into a per-thread buffer.  Also what the ULID and UUIDv7 generators share:
 * the fork-aware spin lock, and their clock and random-source settings.
 *
 * Why this shape: one getrandom() or RAND_bytes() call per ID costs 300 to
 * 600 ns here; RAND_bytes(4096) costs about 3 ns per 10 bytes.  OpenSSL's
 * DRBG is seeded from the kernel, reseeds itself periodically, and detects
 * fork() on its own.  Our per-thread buffer must too: it is tagged with the
 * fork generation and thrown away in a child, so a child never hands out
 * bytes its parent also had.  Bytes handed out are not wiped from the
 * buffer: they become public ID bits anyway; the buffer is cleansed when its
 * thread exits.
 *
 * fork() beside a thread inside RAND_bytes() copies OpenSSL's lock held,
 * and the child's first refill waited for it forever (about 1 fork in 100
 * with four threads drawing; test_fork_beside_draws in tests/test_ulid.c
 * forks beside draws).  So a fork() waits for the RAND_bytes() calls under
 * way in other threads (pthread_atfork), calls made while a fork is
 * pending draw from getrandom(), and a process that was
 * not made by a fork() that waited (_Fork(), clone()) refills from
 * getrandom() for good: OpenSSL's locks may be held there by threads that do
 * not exist.  openssl_gen is the fork generation in which RAND_bytes() is
 * safe: the one the library was loaded in, or the one a fork() child's
 * handler found.
 */
#define _GNU_SOURCE
#include <errno.h>
#ifndef __wasm__
#include <openssl/rand.h>
#include <pthread.h>
#endif
#include <sched.h>
#include <sys/random.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"

#ifndef __wasm__

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

#else

/* WebAssembly (no threads, no fork, no OpenSSL): the host's secure source,
 * crypto.getRandomValues() behind WASI's random_get, which getentropy()
 * calls (at most 256 bytes a call), read 256 bytes at a time into one
 * buffer: a call into the host per ID costs more than the ID. */
static unsigned char rbuf[256];
static size_t rbuf_pos = sizeof rbuf;

int idgen__random(const idgen_random_t *r, void *out, size_t n) {
  if (r != NULL)
    return r->fill(r->ctx, out, n);
  unsigned char *o = out;
  while (n > 0) {
    if (rbuf_pos == sizeof rbuf) {
      if (getentropy(rbuf, sizeof rbuf) != 0)
        return IDGEN_ERANDOM;
      rbuf_pos = 0;
    }
    size_t k = sizeof rbuf - rbuf_pos < n ? sizeof rbuf - rbuf_pos : n;
    memcpy(o, rbuf + rbuf_pos, k);
    rbuf_pos += k;
    o += k;
    n -= k;
  }
  return 0;
}

#endif

int idgen_random_bytes(void *buf, size_t n) { return idgen__random(NULL, buf, n); }

void idgen__lock_init(idgen__lock_t *l) { atomic_init(&l->word, idgen__fork_gen() << 1); }

int idgen__lock_acquire_slow(idgen__lock_t *l) {
  unsigned gen = idgen__fork_gen(), backoff = 1, spins = 0;
  for (;;) {
    unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
    if ((v >> 1) != (gen & (~0u >> 1))) {
      /* First use since fork(): whatever the parent held is gone. */
      if (atomic_compare_exchange_weak_explicit(&l->word, &v, (gen << 1) | 1u, memory_order_acquire,
                                                memory_order_relaxed))
        return 1;
      continue;
    }
    if (!(v & 1u)) {
      if (atomic_compare_exchange_weak_explicit(&l->word, &v, v | 1u, memory_order_acquire,
                                                memory_order_relaxed))
        return 0;
      continue;
    }
    /* Held: the holder runs a few dozen instructions.  Wait 1, 2, 4, 8, 16
     * pauses between looks: a waiter that looks less often steals the line
     * from the holder less often (two threads sharing one ULID generator:
     * 72-82 ns an ID with one pause between looks, 61-63 with this).  The
     * holder may have been preempted (more threads than CPUs), so after 64
     * pauses yield instead of burning the slice.  Not longer: a waiter that
     * spun for 1,024 pauses before yielding could starve for most of a second
     * among 64 threads on 2 CPUs, because the scheduler kept pushing back the
     * one thread that yielded (docs/DESIGN.md §6, "Threads sharing one
     * generator"). */
    if (spins < 64) {
      for (unsigned i = 0; i < backoff; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      spins += backoff;
      if (backoff < 16)
        backoff <<= 1;
    } else {
      sched_yield();
    }
  }
}

void idgen__gen128_init(idgen__gen128_t *c, const idgen_gen128_settings_t *s) {
  memset(c, 0, sizeof *c);
  idgen__lock_init(&c->lock);
  if (s == NULL)
    return;
  c->mode = s->clock_mode;
  if (s->clock != NULL) {
    c->clock = *s->clock;
    c->clockp = &c->clock;
  }
  if (s->random != NULL) {
    c->random = *s->random;
    c->randomp = &c->random;
  }
}

int64_t idgen__gen128_injected_ms(const idgen__gen128_t *c) {
  int64_t ns = c->clock.now_ns(c->clock.ctx);
  return ns >= 0 ? ns / 1000000 : -1;
}
