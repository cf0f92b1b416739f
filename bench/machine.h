/*
 * machine.h -- what `idgen bench` (bench.c) and the peers harness (peers.c)
 * share: the timed loop, and what a benchmark prints about the machine it
 * ran on.
 */
#ifndef IDGEN_BENCH_MACHINE_H
#define IDGEN_BENCH_MACHINE_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline double mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One measurement: operations done and seconds taken. */
struct sample {
  double ids;
  double secs;
};

static volatile uint64_t sink;

/* A timed loop: BODY runs 1024 times between clock checks, with `i` counting.
 * BODY adds something of each result to the local `acc`, written to the
 * volatile sink once at the end: a volatile update per operation would add a
 * store-to-load dependency (about 2 ns here) to every measurement. */
#define TIMED(result, seconds, BODY)                                                               \
  do {                                                                                             \
    double t0_ = mono(), t_;                                                                       \
    uint64_t n_ = 0, acc = 0;                                                                      \
    do {                                                                                           \
      for (uint64_t i = n_; i < n_ + 1024; i++) {                                                  \
        BODY;                                                                                      \
      }                                                                                            \
      n_ += 1024;                                                                                  \
    } while ((t_ = mono()) - t0_ < (seconds));                                                     \
    sink = acc;                                                                                    \
    (result) = (struct sample){(double)n_, t_ - t0_};                                              \
  } while (0)

/* The same, returning the sample from the function it is in. */
#define TIMED_LOOP(seconds, BODY)                                                                  \
  do {                                                                                             \
    struct sample r_;                                                                              \
    TIMED(r_, seconds, BODY);                                                                      \
    return r_;                                                                                     \
  } while (0)

/* The value of the first line of `path` starting with `key` (after its
 * colon), or the file's first line when key is NULL; "unknown" if none. */
static inline void bench_first_line(const char *path, const char *key, char *out, size_t n) {
  char line[512];
  FILE *f = fopen(path, "r");
  snprintf(out, n, "unknown");
  if (f == NULL)
    return;
  while (fgets(line, sizeof line, f) != NULL) {
    const char *v = line;
    if (key != NULL) {
      if (strncmp(line, key, strlen(key)) != 0 || (v = strchr(line, ':')) == NULL)
        continue;
      v++;
      while (*v == ' ' || *v == '\t')
        v++;
    }
    snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  fclose(f);
}

/* The CPU's model name and the kernel's clocksource. */
static inline void bench_machine(char *cpu, size_t ncpu, char *clocksource, size_t nclock) {
  bench_first_line("/proc/cpuinfo", "model name", cpu, ncpu);
  bench_first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource", NULL,
                   clocksource, nclock);
}

#endif
