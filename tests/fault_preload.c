/*
 * fault_preload.c -- a fault injector for the registry's tests, loaded with
 * LD_PRELOAD: while the file named by $IDGEN_TEST_FAULT_FILE exists,
 * fdatasync() fails with EIO, as a dying disk would make it.  The file:
 * registry syncs every mark with fdatasync, so its mark writes fail and
 * nothing else in the daemon is touched.  Tests only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int fdatasync(int fd) {
  static int (*real)(int);
  const char *f = getenv("IDGEN_TEST_FAULT_FILE");
  int saved = errno; /* the caller's errno, untouched by the look */
  if (f != NULL && access(f, F_OK) == 0) {
    errno = EIO;
    return -1;
  }
  errno = saved;
  if (real == NULL)
    real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  return real(fd);
}
