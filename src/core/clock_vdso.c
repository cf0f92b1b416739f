/*
 * clock_vdso.c -- a speed trick, off by default: the precise and coarse
 * clocks call the kernel's vDSO entry for clock_gettime directly, saving
 * the C library's wrapper (1.35 ns a read in a same-run bench/peers.sh on
 * this project's machine: docs/BENCHMARKS.md).  Built only with
 * -DIDGEN_VDSO_DIRECT=ON (cmake/sources.cmake), which also defines
 * IDGEN_VDSO_DIRECT for core_int.h; off, the clocks call clock_gettime.
 * It stays off by default because what it buys is small and what it risks
 * is IDs stamped with a time the program is not shown (below), a check of
 * which object holds clock_gettime that hostile tries have fooled twice.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "core_int.h"

/*
 * The ID clocks' read (core_int.h, idgen__wall_read) with
 * -DIDGEN_VDSO_DIRECT=ON: the vDSO's
 * clock_gettime where the program's is the C library's.  The C library's
 * own is a wrapper around the same vDSO entry (a check of the clock id, an
 * indirect call, errno); calling the entry saves that, and keeps every
 * answer the kernel's.  The program's clock_gettime is the C library's when
 * the address this library calls lies in libc.so.6's code (the loaded
 * objects' own program headers say where each one's code is); otherwise
 * (libfaketime, a sanitizer, a shim, a non-PIE program's stub) the IDs go
 * through it, so that they follow the time the program is shown.  Two
 * earlier checks were fooled: "in the same object as getauxval" by a shim
 * that wraps both and by a non-PIE program that takes both addresses;
 * "what libc.so.6's dlsym gives for the name" by a shim that wraps dlsym
 * or dlopen.  What this one cannot see: a hook patched into libc's own code,
 * a shim that wraps dl_iterate_phdr or whose file is named libc.so.6; and,
 * as before, a library loaded with RTLD_DEEPBIND or dlmopen calls libc's own
 * clock_gettime anyway.  (clock_follow runs these cases; two earlier checks
 * were fooled by the first two.)
 * Chosen when the library loads, or by the first read if that comes first;
 * two threads choosing at once store the same answer.
 */
static int gettime_first(clockid_t id, struct timespec *ts);
_Atomic(idgen__gettime_fn) idgen__gettime = gettime_first;
static _Atomic int gettime_kind = -1;

/* dl_iterate_phdr's visit: whether the loaded object whose code holds
 * `addr` is libc.so.6 (by its file's name); 1 stops at that object. */
struct code_owner {
  uintptr_t addr;
  int in_libc;
};
static int find_code_owner(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct code_owner *w = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type != PT_LOAD || w->addr < start || w->addr - start >= ph->p_memsz)
      continue;
    const char *name = info->dlpi_name != NULL ? info->dlpi_name : "";
    const char *base = strrchr(name, '/');
    w->in_libc = strcmp(base != NULL ? base + 1 : name, "libc.so.6") == 0;
    return 1;
  }
  return 0;
}

static idgen__gettime_fn gettime_resolve(void) {
#if defined(__x86_64__)
  const char *sym = "__vdso_clock_gettime", *ver = "LINUX_2.6";
#elif defined(__aarch64__)
  const char *sym = "__kernel_clock_gettime", *ver = "LINUX_2.6.39";
#else
  const char *sym = NULL, *ver = NULL;
#endif
  /* The clock_gettime this library calls must lie in libc.so.6's own code.
   * Anything else (a preloaded shim, a sanitizer's interceptor, a non-PIE
   * program's stub for the function's address) is what the program calls,
   * and the library keeps calling it. */
  struct code_owner who = {(uintptr_t)(void *)clock_gettime, 0};
  if (sym == NULL || dl_iterate_phdr(find_code_owner, &who) == 0 || !who.in_libc)
    return NULL;
  void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (h == NULL)
    return NULL;
  idgen__gettime_fn f = (idgen__gettime_fn)dlvsym(h, sym, ver);
  dlclose(h);
  struct timespec ts;
  return f != NULL && f(CLOCK_REALTIME, &ts) == 0 ? f : NULL;
}

static idgen__gettime_fn gettime_choose(void) {
  idgen__gettime_fn f = gettime_resolve();
  atomic_store_explicit(&gettime_kind, f != NULL, memory_order_relaxed);
  if (f == NULL)
    f = clock_gettime;
  atomic_store_explicit(&idgen__gettime, f, memory_order_relaxed);
  return f;
}

static int gettime_first(clockid_t id, struct timespec *ts) { return gettime_choose()(id, ts); }

/* Chosen when the library is loaded, so that no ID's first read runs the
 * dynamic loader's functions (not async-signal-safe: an ID made first in a
 * signal handler).  gettime_first stays for a read made before this runs
 * (another library's constructor). */
__attribute__((constructor)) static void gettime_at_load(void) { (void)gettime_choose(); }

int idgen__gettime_direct(void) {
  return atomic_load_explicit(&gettime_kind, memory_order_relaxed);
}
