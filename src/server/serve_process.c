/*
 * serve_process.c -- the metrics every Prometheus exporter has: what was
 * built (idgen_build_info) and the process's own (process_*, named and
 * typed as the Prometheus client libraries name them, read from /proc at
 * each scrape through descriptors opened at the start: a daemon out of
 * descriptors, the case process_open_fds is there for, still answers).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

static int read_proc_stat(int fd, proc_stat_t *ps) {
  char buf[1024];
  ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0)
    return -1;
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

void serve_process_open(serve_daemon_t *s) {
  s->proc.stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  s->proc.fd_dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  proc_stat_t ps;
  long long bt = boot_time();
  long ticks = sysconf(_SC_CLK_TCK);
  if (bt >= 0 && ticks > 0 && read_proc_stat(s->proc.stat_fd, &ps) == 0)
    s->proc.start_s = (double)bt + (double)ps.starttime / (double)ticks;
}

void serve_process_close(serve_daemon_t *s) {
  if (s->proc.stat_fd >= 0)
    close(s->proc.stat_fd);
  if (s->proc.fd_dir >= 0)
    close(s->proc.fd_dir);
  s->proc.stat_fd = s->proc.fd_dir = -1;
}

/* Open descriptors: the entries of /proc/self/fd (fd_dir itself among
 * them: it is open), read from its start with getdents64 (no descriptor
 * of its own, unlike opendir).  -1 when it cannot be read. */
static long count_fds(serve_daemon_t *s) {
  if (s->proc.fd_dir < 0)
    return -1;
  char buf[4096];
  long n = 0;
  pthread_mutex_lock(&s->proc.fd_mu);
  if (lseek(s->proc.fd_dir, 0, SEEK_SET) < 0)
    n = -1;
  for (long got; n >= 0 && (got = syscall(SYS_getdents64, s->proc.fd_dir, buf, sizeof buf)) != 0;) {
    if (got < 0) {
      n = -1;
      break;
    }
    for (long off = 0; off < got;) {
      /* struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name */
      unsigned short reclen;
      memcpy(&reclen, buf + off + 16, sizeof reclen);
      if (buf[off + 19] != '.')
        n++;
      off += reclen;
    }
  }
  pthread_mutex_unlock(&s->proc.fd_mu);
  return n;
}

void serve_process_metrics(serve_daemon_t *s, serve_buf_t *b) {
  serve_buf_printf(b,
                   "# HELP idgen_build_info The version and commit this daemon was built from "
                   "(always 1).\n# TYPE idgen_build_info gauge\n"
                   "idgen_build_info{version=\"%s\",commit=\"%s\"} 1\n",
                   idgen_version(), serve_build_commit);
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  proc_stat_t ps;
  if (read_proc_stat(s->proc.stat_fd, &ps) == 0 && ticks > 0 && page > 0)
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
  if (s->proc.start_s >= 0)
    serve_buf_printf(b,
                     "# HELP process_start_time_seconds Start time of the process since unix "
                     "epoch in seconds.\n# TYPE process_start_time_seconds gauge\n"
                     "process_start_time_seconds %.2f\n",
                     s->proc.start_s);
  long fds = count_fds(s);
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
