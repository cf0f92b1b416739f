/*
 * core_int.h -- declarations shared inside src/core; the IDGEN_INTERNAL ones
 * also with the registry library (src/registry), which links the shared
 * libidgen.  Tests, benchmarks and fuzz targets link the static library and
 * may use all of it; the command and the daemon see only idgen.h.  Not part
 * of the public API.
 */
#ifndef IDGEN_CORE_INT_H
#define IDGEN_CORE_INT_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "idgen.h"

#if defined(__GNUC__)
#define IDGEN_LIKELY(x) __builtin_expect(!!(x), 1)
#define IDGEN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define IDGEN_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define IDGEN_LIKELY(x) (x)
#define IDGEN_UNLIKELY(x) (x)
#define IDGEN_PRINTF(f, a)
#endif

#define IDGEN_CACHELINE 64

/* The few internals the registry library (libidgen-registry, src/registry)
 * calls in the core library: exported from the shared library under the
 * idgen__ prefix, with no promise of stability beyond the same version. */
#if defined(IDGEN_BUILDING) && defined(__GNUC__)
#define IDGEN_INTERNAL __attribute__((visibility("default")))
#else
#define IDGEN_INTERNAL
#endif

/* Writes a formatted message into err[errlen] if err is not NULL; returns code. */
IDGEN_INTERNAL int idgen__err(char *err, size_t errlen, int code, const char *fmt, ...)
    IDGEN_PRINTF(4, 5);

/* Days since 1970-01-01 of a proleptic Gregorian date, and back. */
int64_t idgen__days_from_civil(int64_t y, unsigned m, unsigned d);
void idgen__civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* "YYYY-MM-DD" (expanded year as in idgen_time_format) of unix_ms; returns length. */
int idgen__date_format(int64_t unix_ms, char *buf);

/* Floor division of Unix ns to ms (also for times before 1970). */
static inline int64_t idgen__ns_to_ms(int64_t ns) {
  int64_t ms = ns / 1000000;
  return (ns % 1000000 < 0) ? ms - 1 : ms;
}

/* Default-clock readers (clock.c). */
IDGEN_INTERNAL int64_t idgen__clock_ns(void); /* CLOCK_REALTIME in ns */

/* CLOCK_MONOTONIC in ns and ms: for deadlines and durations, never for IDs. */
static inline int64_t idgen__mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}
static inline int64_t idgen__mono_ms(void) { return idgen__mono_ns() / 1000000; }
int64_t idgen__clock_fast_ms(void);    /* TSC-cached ms (see clock.c) */
int idgen__clock_fast_available(void); /* 1 if the TSC path is usable */
void idgen__sleep_ns(int64_t ns);

/* The fast clock checks every this many cached answers of a thread against a
 * real read (clock.c). */
#define IDGEN__CLOCK_VERIFY_EVERY 1024

/* Tests only: the fast clock's time sources.  `tsc` stands for rdtsc,
 * `realtime_ns` for CLOCK_REALTIME and `mono_ns` for both CLOCK_MONOTONIC_RAW
 * (calibration) and CLOCK_MONOTONIC_COARSE (cool-downs). */
typedef struct idgen__clock_hooks {
  uint64_t (*tsc)(void *ctx);
  int64_t (*realtime_ns)(void *ctx);
  int64_t (*mono_ns)(void *ctx);
  void *ctx;
} idgen__clock_hooks_t;

/* Tests only: makes IDGEN_CLOCK_FAST read the sources in *h (copied; NULL
 * goes back to the real ones) with an invariant TSC assumed, and resets the
 * fast clock as at process start: model, counters and the calling thread's
 * cache.  The hot path is unchanged; with hooks, a call falls through to the
 * refresh, which runs the same window logic on a cache of its own.  Call only
 * while no other thread uses the fast clock.  0, or IDGEN_EINVAL where there
 * is no TSC fast path. */
int idgen__clock_test_hooks(const idgen__clock_hooks_t *h);

/* The wall-clock reads of the ID clocks (CLOCK_REALTIME and its coarse
 * kind): the program's clock_gettime, so that IDs follow the time the
 * program is shown (libfaketime, a sanitizer's interceptor, any shim).
 * With -DIDGEN_VDSO_DIRECT=ON (off by default), the kernel's vDSO entry
 * called directly where the program's clock_gettime is the C library's
 * own, chosen when the library loads (clock_vdso.c). */
#ifdef IDGEN_VDSO_DIRECT
typedef int (*idgen__gettime_fn)(clockid_t, struct timespec *);
extern IDGEN_INTERNAL _Atomic(idgen__gettime_fn) idgen__gettime;
static inline void idgen__wall_read(clockid_t id, struct timespec *ts) {
  atomic_load_explicit(&idgen__gettime, memory_order_relaxed)(id, ts);
}
/* Which one idgen__gettime is, for the tests: 1 the vDSO's entry, 0
 * clock_gettime, -1 not yet chosen. */
int idgen__gettime_direct(void);
#else
static inline void idgen__wall_read(clockid_t id, struct timespec *ts) { clock_gettime(id, ts); }
#endif

/* CLOCK_REALTIME in ms; inline because the generator's precise mode calls it
 * once per ID.  tv_nsec is in [0, 1e9), so this is floor division without a
 * 64-bit divide. */
static inline int64_t idgen__clock_precise_ms(void) {
  struct timespec ts;
  idgen__wall_read(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + (int32_t)ts.tv_nsec / 1000000;
}

/* IDGEN_CLOCK_COARSE: CLOCK_REALTIME_COARSE in ms (the kernel's last tick,
 * read from the vDSO without the cycle counter); CLOCK_REALTIME where there
 * is none. */
#ifdef CLOCK_REALTIME_COARSE
#define IDGEN__CLOCK_COARSE_ID CLOCK_REALTIME_COARSE
#else
#define IDGEN__CLOCK_COARSE_ID CLOCK_REALTIME
#endif
static inline int64_t idgen__clock_coarse_ms(void) {
  struct timespec ts;
  idgen__wall_read(IDGEN__CLOCK_COARSE_ID, &ts);
  return (int64_t)ts.tv_sec * 1000 + (int32_t)ts.tv_nsec / 1000000;
}

/* Unix ms in a generator's clock mode (not injected). */
static inline int64_t idgen__clock_mode_ms(idgen_clock_mode_t mode) {
  if (IDGEN_LIKELY(mode == IDGEN_CLOCK_FAST))
    return idgen__clock_fast_ms();
  return mode == IDGEN_CLOCK_COARSE ? idgen__clock_coarse_ms() : idgen__clock_precise_ms();
}

/* Fork detection (clock.c): the process's generation, nonzero, different in
 * every child from its parent's.  One load on the hot path. */
extern IDGEN_INTERNAL _Atomic unsigned *idgen__fork_word;
IDGEN_INTERNAL unsigned idgen__fork_renew(void);
static inline unsigned idgen__fork_gen(void) {
  unsigned g = atomic_load_explicit(idgen__fork_word, memory_order_relaxed);
  return IDGEN_LIKELY(g != 0) ? g : idgen__fork_renew();
}

/*
 * Ownership of a generator by one thread (bias.c): the owner takes with a
 * restartable sequence (rseq, registered for every thread by glibc 2.35+),
 * other threads revoke the ownership first with a barrier that restarts
 * every section in progress.  x86-64 only.
 */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && defined(__has_include)
#if __has_include(<sys/rseq.h>)
#define IDGEN_BIAS_TAKE 1
#endif
#endif
#ifndef IDGEN_BIAS_TAKE
#define IDGEN_BIAS_TAKE 0
#endif
/* The calling thread's name as an owner: the address of its byte. */
extern __thread
    __attribute__((visibility("hidden"), tls_model("initial-exec"))) char idgen__bias_token;
static inline uintptr_t idgen__bias_me(void) { return (uintptr_t)&idgen__bias_token; }
/* 1 if the calling thread may own a generator: the process has registered
 * the restarting barrier, and the thread's rseq area is the one the kernel
 * knows (asked once per thread; the process's part again after fork). */
int idgen__bias_can_own(void);
/* Restarts every rseq section of the process running on another CPU, and
 * is a full barrier there, before it returns; 0, or -1 if the kernel
 * refused it. */
int idgen__bias_barrier(void);
void idgen__bias_enable(int on); /* tests and benchmarks: 0 = no new owners */
#if IDGEN_BIAS_TAKE
#include <sys/rseq.h>
/* The owner's take: inside a restartable sequence, if *bias is still `me`,
 * *out = *next and *next + 1 is committed with one plain store.  1 if it
 * committed; 0 if *bias was not `me` or the kernel aborted the sequence
 * (preempted, migrated, signalled, or another thread's barrier): nothing
 * was taken.  The descriptor's abort address is preceded by glibc's
 * RSEQ_SIG, as the kernel checks. */
static inline __attribute__((always_inline)) int
idgen__owner_take(uint64_t *next, const uintptr_t *bias, uintptr_t me, uint64_t *out) {
  uint64_t *cs = (uint64_t *)((char *)__builtin_thread_pointer() + __rseq_offset + 8);
  uint64_t v = 0, t;
  int ok;
  __asm__ __volatile__(
      ".pushsection __rseq_cs, \"aw\"\n\t"
      ".balign 32\n\t"
      "3:\n\t"
      ".long 0, 0\n\t"
      ".quad 1f, (2f - 1f), 4f\n\t"
      ".popsection\n\t"
      "leaq 3b(%%rip), %[t]\n\t"
      "movq %[t], %[cs]\n\t"
      "1:\n\t"
      "movq %[bias], %[t]\n\t"
      "cmpq %[t], %[me]\n\t"
      "jne 5f\n\t"
      "movq %[next], %[v]\n\t"
      "leaq 1(%[v]), %[t]\n\t"
      "movq %[t], %[next]\n\t"
      "2:\n\t"
      "movl $1, %[ok]\n\t"
      "jmp 6f\n\t"
      ".pushsection __rseq_failure, \"ax\"\n\t"
      ".byte 0x0f, 0xb9, 0x3d\n\t"
      ".long 0x53053053\n\t"
      "4:\n\t"
      "jmp 5f\n\t"
      ".popsection\n\t"
      "5:\n\t"
      "xorl %[ok], %[ok]\n\t"
      "6:\n\t"
      : [v] "+&r"(v), [t] "=&r"(t), [ok] "=&r"(ok), [next] "+m"(*next), [cs] "=m"(*cs)
      : [bias] "m"(*bias), [me] "r"(me)
      : "memory", "cc");
  *out = v;
  return ok;
}
#endif

/* SIMD fast paths (simd.c), by level: AVX2 decodes ULIDs and parses UUIDs;
 * AVX-512 VBMI does those and encodes ULIDs. */
#define IDGEN__SIMD_OFF 0
#define IDGEN__SIMD_AVX2 1
#define IDGEN__SIMD_VBMI 2
/* The level in use: the CPU's, capped by idgen__simd_enable. */
int idgen__simd_available(void);
/* The same, inline once known (the codecs ask on every call). */
/* -1 unknown, else the level */
extern __attribute__((visibility("hidden"))) _Atomic int idgen__simd_state;
static inline int idgen__simd_on(void) {
  int s = atomic_load_explicit(&idgen__simd_state, memory_order_relaxed);
  return IDGEN_LIKELY(s >= 0) ? s : idgen__simd_available();
}
/* Caps the level (tests and benchmarks): IDGEN__SIMD_OFF is scalar only,
 * IDGEN__SIMD_VBMI whatever the CPU has. */
void idgen__simd_enable(int level);
const char *idgen__simd_name(int level); /* "AVX-512 VBMI", "AVX2", "scalar" */
/* 0 and the 16 bytes if the input is valid, nonzero otherwise (the caller
 * then runs the scalar code, which decides and words the error).  Call each
 * only at its level or above. */
int idgen__ulid_decode_vbmi(const char *s26, int lenient, uint8_t *out);
int idgen__ulid_decode_avx2(const char *s26, int lenient, uint8_t *out);
int idgen__uuid_parse36_vbmi(const char *s36, uint8_t *out);
int idgen__uuid_parse36_avx2(const char *s36, uint8_t *out);
/* Writes the 26 characters and a NUL of the ULID hi:lo (big-endian halves)
 * with AVX-512 (simd.c): idgen_ulid_format calls it straight once the level
 * is known to be IDGEN__SIMD_VBMI (a call through a function that checked the
 * level again cost 1 ns of a monotonic ULID's 10 here). */
#if defined(__x86_64__) && defined(__GNUC__)
#define IDGEN__HAVE_VBMI 1
void idgen__ulid_encode_vbmi(uint64_t hi, uint64_t lo, char *out);
#else
#define IDGEN__HAVE_VBMI 0
#endif

/* Tests only: puts a UUIDv7 generator's state at (ms, counter). */
void idgen__uuid7_gen_set(idgen_uuid7_gen_t *g, int64_t ms, uint64_t counter);

/* Random bytes from the default secure source (random.c); returns 0 or
 * IDGEN_ERANDOM.  `r` may be NULL (the default) or an injected source. */
int idgen__random(const idgen_random_t *r, void *buf, size_t n);

/*
 * A spin lock for small critical sections (the 16-byte state of the ULID and
 * UUIDv7 generators), fork-aware: the lock word holds the fork generation of
 * its last use.  In a child after fork() the first thread to take the lock
 * finds a stale generation, takes it regardless (a parent's thread may have
 * held it at fork time and does not exist here), and is told so, so that it
 * resets the state it guards.  Release is a plain store.
 */
typedef struct idgen__lock {
  _Atomic unsigned word; /* generation << 1 | held */
} idgen__lock_t;

void idgen__lock_init(idgen__lock_t *l);
int idgen__lock_acquire_slow(idgen__lock_t *l);
/* One try: 1 if it took the lock, free and last used in this process (the
 * guarded state is this process's), with one compare-and-swap; 0 if the lock
 * is held or was last used before a fork, and nothing changed. */
static inline int idgen__lock_try(idgen__lock_t *l) {
  unsigned free_word = idgen__fork_gen() << 1;
  return atomic_compare_exchange_strong_explicit(&l->word, &free_word, free_word | 1u,
                                                 memory_order_acquire, memory_order_relaxed);
}
/* Takes the lock; returns 1 if this is the first use in a new process (the
 * caller must reset the guarded state), else 0.  Inline: the one try, then
 * the slow path (spinning, or the first use after fork). */
static inline int idgen__lock_acquire(idgen__lock_t *l) {
  if (IDGEN_LIKELY(idgen__lock_try(l)))
    return 0;
  return idgen__lock_acquire_slow(l);
}
static inline void idgen__lock_release(idgen__lock_t *l) {
  atomic_store_explicit(&l->word, atomic_load_explicit(&l->word, memory_order_relaxed) & ~1u,
                        memory_order_release);
}

/* A 64-bit value as 8 big-endian bytes (the 128-bit IDs' layout), and back. */
static inline void idgen__store_be64(uint8_t *p, uint64_t v) {
  v = __builtin_bswap64(v);
  memcpy(p, &v, 8);
}
static inline uint64_t idgen__load_be64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return __builtin_bswap64(v);
}

/* The thread's buffer of random bytes (random.c), reachable from the
 * generators' hot paths: idgen__random_quick serves n bytes from it when
 * it has them in this process's generation (1), else 0 and the caller
 * calls idgen__random, which refills it (platform_posix.c, a buffer per
 * thread; platform_wasm.c, the one thread's). */
#define IDGEN__RBUF_SIZE 4096
struct idgen__rbuf {
  unsigned gen; /* fork generation the bytes belong to */
  size_t pos;   /* bytes before pos are used */
  unsigned char bytes[IDGEN__RBUF_SIZE];
};
extern __thread struct idgen__rbuf *idgen__tls_rbuf __attribute__((tls_model("initial-exec")));
static inline int idgen__random_quick(const idgen_random_t *r, void *out, size_t n) {
  struct idgen__rbuf *b = idgen__tls_rbuf;
  if (IDGEN_LIKELY(r == NULL && b != NULL && IDGEN__RBUF_SIZE - b->pos >= n &&
                   b->gen == idgen__fork_gen())) {
    memcpy(out, b->bytes + b->pos, n);
    b->pos += n;
    return 1;
  }
  return 0;
}

/* What the ULID and UUIDv7 generators share: the lock, the clock and the
 * random source (random.c). */
typedef struct idgen__gen128 {
  idgen__lock_t lock;
  idgen_clock_mode_t mode;
  const idgen_clock_t *clockp;   /* &clock if injected, else NULL */
  const idgen_random_t *randomp; /* &random if injected, else NULL */
  idgen_clock_t clock;
  idgen_random_t random;
} idgen__gen128_t;

void idgen__gen128_init(idgen__gen128_t *c, const idgen_gen128_settings_t *s);
int64_t idgen__gen128_injected_ms(const idgen__gen128_t *c);
/* Unix ms from the generator's clock; -1 for a clock before 1970.  Inline:
 * the ULID and UUIDv7 hot paths call it once per ID. */
static inline int64_t idgen__gen128_now_ms(const idgen__gen128_t *c) {
  if (IDGEN_UNLIKELY(c->clockp != NULL))
    return idgen__gen128_injected_ms(c);
  return idgen__clock_mode_ms(c->mode);
}

#endif
