/*
 * clock_shim.c -- a preloaded clock_gettime that shows the program a wall
 * clock one day behind the kernel's (CLOCK_REALTIME and its coarse kind),
 * the kind of shim a user preloads to move time, and one that wraps more
 * than the clock: getauxval passes through, and dlsym hands out the shim's
 * clock_gettime for that name from any handle but RTLD_NEXT (as hook
 * libraries do).  clock_follow runs under it: two earlier versions of the
 * library's check (clock.c, gettime_resolve) were fooled by those wrappers.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

#define SHIFT_S 86400

static void *(*real_dlsym)(void *, const char *);

static void *next_symbol(const char *name) {
  if (real_dlsym == NULL)
    real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  return real_dlsym != NULL ? real_dlsym(RTLD_NEXT, name) : dlvsym(RTLD_NEXT, name, "GLIBC_2.17");
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (real == NULL)
    real = (int (*)(clockid_t, struct timespec *))next_symbol("clock_gettime");
  int rc = real(id, ts);
  if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
    ts->tv_sec -= SHIFT_S;
  return rc;
}

unsigned long getauxval(unsigned long type) {
  static unsigned long (*real)(unsigned long);
  if (real == NULL)
    real = (unsigned long (*)(unsigned long))next_symbol("getauxval");
  return real(type);
}

void *dlsym(void *handle, const char *name) {
  if (handle != RTLD_NEXT && strcmp(name, "clock_gettime") == 0)
    return (void *)clock_gettime;
  if (real_dlsym == NULL)
    real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  return real_dlsym(handle, name);
}
