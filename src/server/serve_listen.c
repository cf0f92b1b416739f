/*
 * serve_listen.c -- the daemon's sockets and process set-up: listening
 * sockets (one per loop and protocol, SO_REUSEPORT), addresses as text (a
 * client's too, for log lines), the pid file, and the descriptor limit.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "server_int.h"

void serve_addr_text(const struct sockaddr_storage *ss, char *buf, size_t n) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const void *)ss;
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    snprintf(buf, n, "%s:%d", host, port);
  } else {
    const struct sockaddr_in6 *a = (const void *)ss;
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    snprintf(buf, n, "[%s]:%d", host, port);
  }
}

static int listen_one(struct sockaddr_storage *sa, socklen_t len, int reuseport) {
  int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd < 0)
    return -errno;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if ((reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) ||
      bind(fd, (struct sockaddr *)sa, len) < 0 || listen(fd, 4096) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  if (sa->ss_family == AF_INET ? ((struct sockaddr_in *)sa)->sin_port == 0
                               : ((struct sockaddr_in6 *)sa)->sin6_port == 0) {
    struct sockaddr_storage got;
    socklen_t gl = sizeof got;
    getsockname(fd, (struct sockaddr *)&got, &gl);
    memcpy(sa, &got, gl); /* the other loops bind the port the first got */
  }
  return fd;
}

/*
 * Binds one listening socket per loop for `a`.  A first probe socket without
 * SO_REUSEPORT makes "address in use" an error even when the other holder
 * uses SO_REUSEPORT itself (another idgen), instead of silently sharing.
 */
int serve_bind_all(serve_daemon_t *s, const serve_proto_t *type, const serve_addr_t *a, char *bound,
                   size_t n) {
  struct sockaddr_storage sa;
  memcpy(&sa, &a->sa, sizeof sa);
  int probe = listen_one(&sa, a->salen, 0);
  if (probe < 0) {
    fprintf(stderr, "idgen: serve: cannot listen on %s %s: %s\n", type->name, a->text,
            strerror(-probe));
    return -1;
  }
  close(probe);
  for (int i = 0; i < s->nworkers; i++) {
    int fd = listen_one(&sa, a->salen, 1);
    if (fd < 0) {
      fprintf(stderr, "idgen: serve: cannot listen on %s %s: %s\n", type->name, a->text,
              strerror(-fd));
      return -1;
    }
    s->workers[i].listeners[type->index] = (serve_listener_t){TAG_LISTENER, fd, type};
  }
  serve_addr_text(&sa, bound, n);
  return 0;
}

int serve_write_pid_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (f != NULL) {
    long pid = 0;
    if (fscanf(f, "%ld", &pid) == 1 && pid > 0 && pid != getpid() && kill((pid_t)pid, 0) == 0) {
      fclose(f);
      fprintf(stderr, "idgen: serve: pid_file %s names process %ld, which is running\n", path, pid);
      return -1;
    }
    fclose(f);
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char line[32];
  int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  if (fd < 0 || write(fd, line, (size_t)n) != n) {
    fprintf(stderr, "idgen: serve: pid_file %s: %s\n", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  close(fd);
  return 0;
}

/* Room for max_connections descriptors: raise the soft limit to the hard one. */
void serve_raise_fd_limit(const serve_config_t *cfg) {
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) < 0)
    return;
  rlim_t want = (rlim_t)cfg->max_connections + 64 + (rlim_t)cfg->threads * 8;
  if (r.rlim_cur < want) {
    r.rlim_cur = r.rlim_max < want ? r.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  if (r.rlim_cur < want)
    log_event("warn", "fd_limit",
              "limit=%llu max_connections=%" PRId64
              " note=\"connections past the limit are accepted and closed at once\"",
              (unsigned long long)r.rlim_cur, cfg->max_connections);
}

void serve_peer_set(serve_conn_t *c, const struct sockaddr_storage *ss) {
  memset(c->peer_key, 0, sizeof c->peer_key);
  c->peer_port = 0;
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
    memcpy(c->peer_key, &a->sin6_addr, 16);
    c->peer_port = ntohs(a->sin6_port);
  } else if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
    c->peer_key[10] = c->peer_key[11] = 0xff;
    memcpy(c->peer_key + 12, &a->sin_addr, 4);
    c->peer_port = ntohs(a->sin_port);
  }
}

/* (From the address kept at accept: a client that reset the connection has
 * no address left to ask the kernel for.) */
const char *serve_peer_text(const serve_conn_t *c, char *buf) {
  static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  char ip[INET6_ADDRSTRLEN];
  int is4 = memcmp(c->peer_key, v4, 12) == 0;
  if (inet_ntop(is4 ? AF_INET : AF_INET6, is4 ? c->peer_key + 12 : c->peer_key, ip, sizeof ip) ==
      NULL)
    snprintf(buf, 64, "unknown");
  else
    snprintf(buf, 64, is4 ? "%s:%u" : "[%s]:%u", ip, (unsigned)c->peer_port);
  return buf;
}
