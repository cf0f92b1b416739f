/*
 * bias.c -- a generator owned by one thread takes without a locked
 * instruction, and any other thread can take the ownership away safely.
 *
 * DESIGN (DESIGN.md §1, "The owner's take").  On x86-64 a locked xadd costs
 * 4 to 6 ns more than the same instruction without the lock prefix.  The
 * unlocked one is still one instruction, so a signal handler on the same
 * thread comes before or after it, never inside; only another thread can
 * interleave with it.  A generator therefore belongs to the first thread that
 * takes from it (its "owner", named by the address of a thread-local byte),
 * which takes unlocked inside a short critical section it marks with a
 * counter only it writes.  A second thread first revokes the ownership:
 * it marks the generator revoking, then runs membarrier(2)
 * (MEMBARRIER_CMD_PRIVATE_EXPEDITED), which makes every running thread of
 * the process execute a full memory barrier before it returns, and then
 * waits for the owner's counter to read zero.  After the barrier the owner
 * either has its counter visible (and is waited for) or sees the mark when it
 * looks again inside its section (and takes locked).  From then on every
 * thread takes locked, for good.  The owner's side pays plain loads and
 * stores; the other side pays one system call once per generator.
 *
 * Where the process cannot use the expedited barrier (a kernel before 4.14,
 * a seccomp filter, valgrind), no generator is ever owned.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core_int.h"

__thread _Alignas(8) char idgen__bias_token __attribute__((tls_model("initial-exec")));

/* fork generation << 2 | B_OK or B_NO for this process, 0 not yet known. */
enum { B_OK = 1, B_NO = 2 };
static _Atomic unsigned state;
static _Atomic int disabled; /* tests and benchmarks: idgen__bias_enable(0) */

static long membarrier(int cmd) {
#ifdef SYS_membarrier
  return syscall(SYS_membarrier, cmd, 0, 0);
#else
  (void)cmd;
  errno = ENOSYS;
  return -1;
#endif
}

int idgen__bias_available(void) {
#if IDGEN_BIAS_TAKE
  if (atomic_load_explicit(&disabled, memory_order_relaxed))
    return 0;
  unsigned gen = idgen__fork_gen() << 2;
  unsigned s = atomic_load_explicit(&state, memory_order_acquire);
  if ((s & ~3u) == gen && (s & 3u) != 0)
    return (s & 3u) == B_OK;
  /* The registration belongs to the process (its memory map): a child of
   * fork() starts without one, hence the generation.  Registering twice is
   * harmless. */
  int ok = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  atomic_store_explicit(&state, gen | (ok ? B_OK : B_NO), memory_order_release);
  return ok;
#else
  return 0;
#endif
}

void idgen__bias_barrier(void) {
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
    return;
  /* Registered earlier in this process, so only a filter installed since
   * can refuse it; the slow global barrier is as good. */
  if (membarrier(MEMBARRIER_CMD_GLOBAL) == 0)
    return;
  /* Without a barrier the owner's unlocked take could interleave with ours:
   * stopping is the only answer that cannot repeat an ID. */
  fprintf(stderr, "idgen: membarrier(2) failed (%s) after it was registered; "
                  "a generator's owner cannot be waited out safely\n",
          strerror(errno));
  abort();
}

void idgen__bias_enable(int on) { atomic_store_explicit(&disabled, !on, memory_order_relaxed); }
