/*
 * sd_notify.c -- the systemd notification protocol, without libsystemd:
 * one datagram of "KEY=VALUE\n" lines to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" in the abstract namespace).  Without
 * the variable every call does nothing, so the daemon runs the same outside
 * systemd.  The watchdog's interval is half of $WATCHDOG_USEC, when
 * $WATCHDOG_PID is unset or names this process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "server_int.h"

int serve_notify(const char *msg) {
  const char *path = getenv("NOTIFY_SOCKET");
  if (path == NULL || path[0] == '\0')
    return 0;
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  size_t n = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path)
    return -EINVAL;
  memcpy(sa.sun_path, path, n);
  if (path[0] == '@')
    sa.sun_path[0] = '\0'; /* abstract: no terminating NUL, the length says */
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  ssize_t w = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
  int rc = w < 0 ? -errno : 0;
  close(fd);
  return rc;
}

int64_t serve_watchdog_interval_ms(void) {
  const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
  if (usec == NULL || (pid != NULL && strtol(pid, NULL, 10) != (long)getpid()))
    return 0;
  char *end;
  errno = 0;
  long long us = strtoll(usec, &end, 10);
  if (errno != 0 || end == usec || *end != '\0' || us <= 0)
    return 0;
  int64_t ms = (int64_t)(us / 2000); /* ping at half the deadline */
  return ms > 0 ? ms : 1;
}
