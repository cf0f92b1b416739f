/*
 * machine.h -- what a benchmark prints about the machine it ran on, shared
 * by `idgen bench` (bench.c) and the peers harness (peers.c).
 */
#ifndef IDGEN_BENCH_MACHINE_H
#define IDGEN_BENCH_MACHINE_H

#include <stdio.h>
#include <string.h>

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
