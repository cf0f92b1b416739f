/*
 * bias.c -- a generator owned by one thread takes without a locked
 * instruction, and any other thread can take the ownership away without
 * waiting for it.
 *
 * DESIGN (DESIGN.md §1, "The owner's take").  On x86-64 a locked xadd costs
 * 4 to 6 ns more than a plain load and store.  A generator belongs to the
 * first thread that takes from it (named by the address of a thread-local
 * byte), which takes inside a restartable sequence (rseq(2)): it looks at
 * the owner word and commits next + 1 with one plain store; the kernel
 * sends it to the abort address instead if the thread is preempted,
 * migrated or signalled inside, and the take falls back to a locked one.
 * Another thread revokes the ownership: it marks the generator, then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ), which before it
 * returns makes every CPU running a thread of the process execute a full
 * barrier and restart any sequence in progress.  A sequence that committed
 * before is visible; one that had not is restarted and sees the mark, as
 * does every later one.  Nobody waits for anybody: the revoker's cost is
 * one system call, once per generator.
 *
 * Where the process cannot register that barrier (a kernel before 5.10, a
 * seccomp filter, valgrind), or a thread's rseq area is not registered
 * (glibc before 2.35, GLIBC_TUNABLES=glibc.pthread.rseq=0), nothing is
 * owned.  If the barrier is refused after it was registered (a filter
 * installed since), an owned generator cannot be revoked safely: the other
 * threads' calls fail with IDGEN_EINVAL, the owner goes on, and no new
 * owners are made.  A filter that kills on an unknown system call kills the
 * process at the first take (rseq, membarrier): allow both, or build
 * without (the library asks for them once per process and thread).
 */
#define _GNU_SOURCE
#include "core_int.h"

/* Elsewhere (not x86-64 Linux, WebAssembly's one thread) nothing is owned:
 * IDGEN_BIAS_TAKE is 0 (core_int.h). */
#if IDGEN_BIAS_TAKE
#include <errno.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

__thread _Alignas(8) char idgen__bias_token __attribute__((tls_model("initial-exec")));

static _Atomic int disabled; /* tests and benchmarks: idgen__bias_enable(0) */

#if IDGEN_BIAS_TAKE
/* fork generation << 2 | B_OK or B_NO for this process, 0 not yet known. */
enum { B_OK = 1, B_NO = 2 };
static _Atomic unsigned state;

static __thread signed char thread_rseq; /* 1 registered here, -1 not, 0 unknown */

static long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }

static int process_ready(void) {
  unsigned gen = idgen__fork_gen() << 2;
  unsigned s = atomic_load_explicit(&state, memory_order_acquire);
  if ((s & ~3u) == gen && (s & 3u) != 0)
    return (s & 3u) == B_OK;
  /* The registration belongs to the process (its memory map): a child of
   * fork() starts without one, hence the generation.  Registering twice is
   * harmless. */
  int ok = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0;
  atomic_store_explicit(&state, gen | (ok ? B_OK : B_NO), memory_order_release);
  return ok;
}

/* The thread's area at __rseq_offset is the one the kernel updates: a
 * request to unregister it with the wrong signature answers EPERM exactly
 * then, and changes nothing either way (asking to register it would
 * register an area nobody meant for the kernel to write). */
static int thread_ready(void) {
  if (thread_rseq == 0) {
    int ok = 0;
    if (__rseq_size > 0) {
      void *area = (char *)__builtin_thread_pointer() + __rseq_offset;
      ok = syscall(SYS_rseq, area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG ^ 1) != 0 && errno == EPERM;
    }
    thread_rseq = ok ? 1 : -1;
  }
  return thread_rseq > 0;
}
#endif

/* Both may run in a signal handler: the interrupted code's errno is kept. */
int idgen__bias_can_own(void) {
#if IDGEN_BIAS_TAKE
  if (atomic_load_explicit(&disabled, memory_order_relaxed))
    return 0;
  int saved = errno;
  int ok = process_ready() && thread_ready();
  errno = saved;
  return ok;
#else
  return 0;
#endif
}

int idgen__bias_barrier(void) {
#if IDGEN_BIAS_TAKE
  int saved = errno;
  int rc = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) == 0 ? 0 : -1;
  if (rc != 0) /* refused late (a filter installed since): make no new owners */
    atomic_store_explicit(&state, (idgen__fork_gen() << 2) | B_NO, memory_order_release);
  errno = saved;
  return rc;
#else
  return -1;
#endif
}

void idgen__bias_enable(int on) { atomic_store_explicit(&disabled, !on, memory_order_relaxed); }
