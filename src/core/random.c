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
 */
#define _GNU_SOURCE
#include <openssl/rand.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core_int.h"

#define RBUF_SIZE 4096

struct rbuf {
  unsigned gen;   /* fork generation the bytes belong to */
  size_t pos;     /* bytes before pos are used */
  unsigned char bytes[RBUF_SIZE];
};

/* The pointer is initial-exec TLS (8 bytes, cheap to reach); the buffer
 * itself is allocated on first use and freed when the thread exits. */
static __thread struct rbuf *tls_rbuf __attribute__((tls_model("initial-exec")));
static pthread_key_t rbuf_key;
static pthread_once_t rbuf_once = PTHREAD_ONCE_INIT;

static int rbuf_key_ok;

static void rbuf_free(void *p) {
  /* A later thread-exit destructor may still ask for random bytes: it gets a
   * new buffer (and this destructor runs again for it). */
  tls_rbuf = NULL;
  if (p != NULL) {
    OPENSSL_cleanse(p, sizeof(struct rbuf));
    free(p);
  }
}

static void rbuf_init_key(void) { rbuf_key_ok = pthread_key_create(&rbuf_key, rbuf_free) == 0; }

static int refill(size_t n, void *out) {
  struct rbuf *b = tls_rbuf;
  if (b == NULL) {
    pthread_once(&rbuf_once, rbuf_init_key);
    b = malloc(sizeof *b);
    if (b == NULL)
      return IDGEN_ERANDOM;
    tls_rbuf = b;
    if (rbuf_key_ok) /* otherwise the buffer lives as long as the process */
      pthread_setspecific(rbuf_key, b);
  }
  b->gen = idgen__fork_gen();
  b->pos = RBUF_SIZE;
  if (n > RBUF_SIZE / 4) { /* large requests go straight to the source, 1 MiB at a time */
    for (size_t off = 0; off < n;) {
      size_t k = n - off < ((size_t)1 << 20) ? n - off : (size_t)1 << 20;
      if (RAND_bytes((unsigned char *)out + off, (int)k) != 1)
        return IDGEN_ERANDOM;
      off += k;
    }
    return 0;
  }
  if (RAND_bytes(b->bytes, RBUF_SIZE) != 1)
    return IDGEN_ERANDOM;
  memcpy(out, b->bytes, n);
  b->pos = n;
  return 0;
}

int idgen__random(const idgen_random_t *r, void *out, size_t n) {
  if (r != NULL)
    return r->fill(r->ctx, out, n);
  struct rbuf *b = tls_rbuf;
  if (IDGEN_LIKELY(b != NULL && RBUF_SIZE - b->pos >= n && b->gen == idgen__fork_gen())) {
    memcpy(out, b->bytes + b->pos, n);
    b->pos += n;
    return 0;
  }
  return refill(n, out);
}

int idgen_random_bytes(void *buf, size_t n) { return idgen__random(NULL, buf, n); }

void idgen__lock_init(idgen__lock_t *l) { atomic_init(&l->word, idgen__fork_gen() << 1); }

int idgen__lock_acquire_slow(idgen__lock_t *l) {
  unsigned gen = idgen__fork_gen(), backoff = 1, spins = 0;
  for (;;) {
    unsigned v = atomic_load_explicit(&l->word, memory_order_relaxed);
    if ((v >> 1) != (gen & (~0u >> 1))) {
      /* First use since fork(): whatever the parent held is gone. */
      if (atomic_compare_exchange_weak_explicit(&l->word, &v, (gen << 1) | 1u,
                                                memory_order_acquire, memory_order_relaxed))
        return 1;
      continue;
    }
    if (!(v & 1u)) {
      if (atomic_compare_exchange_weak_explicit(&l->word, &v, v | 1u, memory_order_acquire,
                                                memory_order_relaxed))
        return 0;
      continue;
    }
    /* Held: the holder runs a few dozen instructions.  Wait 1, 2, 4 ... 256
     * pauses between looks: a waiter that looks less often steals the line
     * from the holder less often, so it finishes sooner (two threads sharing
     * one ULID generator: 63-70 ns an ID with one pause between looks, 48-55
     * with this).  On 2 cores the holder may have been preempted, so after
     * about 1,000 pauses yield instead of burning the slice. */
    if (spins < 1024) {
      for (unsigned i = 0; i < backoff; i++) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      }
      spins += backoff;
      if (backoff < 256)
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
