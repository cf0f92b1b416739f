/*
 * fuzz_config.c -- libFuzzer target for `idgen serve`'s config-file parser
 * and the validation of every value in it: any input is either accepted
 * (and then printed back) or rejected with exit status 2, never a crash.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("fuzz-config", MFD_CLOEXEC);
  if (fd < 0 || write(fd, data, size) != (ssize_t)size)
    abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  char *argv[] = {"serve", "--config", path, "--check-config", NULL};
  /* The parser reports on stderr: keep libFuzzer's own output readable. */
  int saved = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
  dup2(null, 2);
  serve_config_t c;
  int rc = serve_config_load(&c, 4, argv);
  if (rc == 0) {
    FILE *out = fopen("/dev/null", "w");
    serve_config_print(&c, out);
    fclose(out);
  } else if (rc != 2) {
    abort(); /* only --help returns 1, and it is not given */
  }
  dup2(saved, 2);
  close(saved);
  close(null);
  serve_config_free(&c);
  close(fd);
  return 0;
}
