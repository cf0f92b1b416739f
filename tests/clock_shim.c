/*
 * clock_shim.c -- a preloaded clock_gettime that shows the program a wall
 * clock one day behind the kernel's (CLOCK_REALTIME and its coarse kind),
 * and a getauxval that passes through: a shim of the kind a user preloads to
 * move time, wrapping more than the clock.  clock_follow runs under it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/auxv.h>
#include <time.h>

#define SHIFT_S 86400

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (real == NULL)
    real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int rc = real(id, ts);
  if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
    ts->tv_sec -= SHIFT_S;
  return rc;
}

unsigned long getauxval(unsigned long type) {
  static unsigned long (*real)(unsigned long);
  if (real == NULL)
    real = (unsigned long (*)(unsigned long))dlsym(RTLD_NEXT, "getauxval");
  return real(type);
}
