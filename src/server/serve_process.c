/*
 * serve_process.c -- the metrics every Prometheus exporter has: what was
 * built (idgen_build_info) and the process's own (process_*, named and
 * typed as the Prometheus client libraries name them, read from /proc at
 * each scrape).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "server_int.h"

extern const char serve_build_commit[]; /* build_commit.c, by scripts/commit.cmake */

/* /proc/self/stat's fields after the command's ")" (field 3 on): utime and
 * stime (14, 15: clock ticks), starttime (22: ticks since boot), vsize (23:
 * bytes), rss (24: pages).  0, or -1 when it cannot be read. */
typedef struct proc_stat {
  unsigned long long utime, stime, starttime, vsize;
  long long rss;
} proc_stat_t;

static int read_proc_stat(proc_stat_t *ps) {
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "re");
  if (f == NULL)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command may hold spaces and ')' */
  if (p == NULL)
    return -1;
  /* state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
   * utime stime cutime cstime priority nice threads itrealvalue starttime
   * vsize rss */
  int got = sscanf(p + 1,
                   " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                   "%*d %llu %llu %lld",
                   &ps->utime, &ps->stime, &ps->starttime, &ps->vsize, &ps->rss);
  return got == 5 ? 0 : -1;
}

/* The boot time (/proc/stat's btime, seconds since the epoch), or -1. */
static long long boot_time(void) {
  char line[256];
  long long bt = -1;
  FILE *f = fopen("/proc/stat", "re");
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "btime %lld", &bt) == 1)
      break;
  fclose(f);
  return bt;
}

/* Open descriptors: the entries of /proc/self/fd (less the one reading it). */
static long count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return -1;
  long n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1;
}

void serve_process_metrics(serve_buf_t *b) {
  serve_buf_printf(b,
                   "# HELP idgen_build_info The version and commit this daemon was built from "
                   "(always 1).\n# TYPE idgen_build_info gauge\n"
                   "idgen_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                   idgen_version(), serve_build_commit);
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  proc_stat_t ps;
  if (read_proc_stat(&ps) == 0 && ticks > 0 && page > 0) {
    serve_buf_printf(b,
                     "# HELP process_cpu_seconds_total Total user and system CPU time spent in "
                     "seconds.\n# TYPE process_cpu_seconds_total counter\n"
                     "process_cpu_seconds_total %.2f\n"
                     "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                     "# TYPE process_resident_memory_bytes gauge\n"
                     "process_resident_memory_bytes %lld\n"
                     "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                     "# TYPE process_virtual_memory_bytes gauge\n"
                     "process_virtual_memory_bytes %llu\n",
                     (double)(ps.utime + ps.stime) / (double)ticks, ps.rss * (long long)page,
                     ps.vsize);
    long long bt = boot_time();
    if (bt >= 0)
      serve_buf_printf(b,
                       "# HELP process_start_time_seconds Start time of the process since unix "
                       "epoch in seconds.\n# TYPE process_start_time_seconds gauge\n"
                       "process_start_time_seconds %.2f\n",
                       (double)bt + (double)ps.starttime / (double)ticks);
  }
  long fds = count_fds();
  struct rlimit rl;
  if (fds >= 0)
    serve_buf_printf(b,
                     "# HELP process_open_fds Number of open file descriptors.\n"
                     "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n",
                     fds);
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
    serve_buf_printf(b,
                     "# HELP process_max_fds Maximum number of open file descriptors.\n"
                     "# TYPE process_max_fds gauge\nprocess_max_fds %llu\n",
                     (unsigned long long)rl.rlim_cur);
}
