/*
 * serve_buf.c -- the daemon's growable byte buffers, decimal formatting, and
 * its monotonic clock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"

void serve_buf_reserve(serve_buf_t *b, size_t more) {
  if (b->cap - b->len >= more)
    return;
  size_t cap = b->cap ? b->cap : 4096;
  while (cap - b->len < more)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (p == NULL) {
    log_event("error", "out_of_memory", "bytes=%zu", cap);
    abort();
  }
  b->p = p;
  b->cap = cap;
}

void serve_buf_put(serve_buf_t *b, const void *p, size_t n) {
  serve_buf_reserve(b, n);
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

void serve_buf_printf(serve_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(b->p ? b->p + b->len : NULL, b->cap - b->len, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n >= b->cap - b->len) {
    serve_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
  }
  b->len += (size_t)n;
}

void serve_buf_free(serve_buf_t *b) {
  free(b->p);
  b->p = NULL;
  b->len = b->cap = 0;
}

static const char digit_pairs[201] = "00010203040506070809101112131415161718192021222324"
                                     "25262728293031323334353637383940414243444546474849"
                                     "50515253545556575859606162636465666768697071727374"
                                     "75767778798081828384858687888990919293949596979899";

size_t serve_u64_dec(char *dst, uint64_t v) {
  char tmp[20];
  char *p = tmp + 20;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    p -= 2;
    memcpy(p, digit_pairs + 2 * r, 2);
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, digit_pairs + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  size_t n = (size_t)(tmp + 20 - p);
  memcpy(dst, p, n);
  return n;
}

int64_t serve_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int64_t serve_mono_ms(void) { return serve_mono_ns() / 1000000; }

/* The kernel's CLOCK_MONOTONIC by a system call, past a clock faker loaded
 * with LD_PRELOAD (libfaketime given a fixed date stops the C library's):
 * parked requests' due times only, read once a loop turn while one is
 * parked, so that such a request still comes to its end (bounded). */
int64_t serve_kernel_mono_ns(void) {
  struct timespec t;
  if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t) != 0)
    return serve_mono_ns();
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
