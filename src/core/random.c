/*
 * random.c -- secure random bytes, and what the ULID and UUIDv7 generators
 * share: the fork-aware spin lock, and their clock and random-source
 * settings.  The source itself (idgen__random) is the platform's:
 * platform_posix.c (OpenSSL's DRBG through a per-thread buffer, fork-safe)
 * or platform_wasm.c (the host's).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>

#include "core_int.h"

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
