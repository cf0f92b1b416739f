/*
 * serve_accept.c -- a loop's new connections: accepted from its listeners
 * (each carries its protocol's table, which the connection takes), or
 * refused.
 *
 * accept(2) errors.  EMFILE/ENFILE: close a reserved descriptor, accept and
 * close the connection, reopen the reserve, so the listening socket does not
 * stay readable and spin the loop.  Other errors pause the listeners for
 * 100 ms.  Past max_connections a client gets its protocol's refusal (a
 * line, or nothing: the close says it) and is closed.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_int.h"

void serve_accept_start(serve_worker_t *w) {
  for (int p = 0; p < NPROTO; p++)
    if (w->listeners[p].fd >= 0) {
      struct epoll_event e = {.events = EPOLLIN, .data.ptr = &w->listeners[p]};
      epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listeners[p].fd, &e);
    }
}

/* The listener leaves the epoll set for 100 ms (the sweep puts it back). */
static void pause_listener(serve_worker_t *w, serve_listener_t *l) {
  epoll_ctl(w->epfd, EPOLL_CTL_DEL, l->fd, NULL);
  w->paused_until_ms = w->now_ms + 100;
}

/* An accept(2) that failed with err: 1 to go on accepting, 0 to stop (the
 * listener paused when it cannot go on). */
static int accept_failed(serve_worker_t *w, serve_listener_t *l, int err) {
  serve_daemon_t *s = w->srv;
  if (err == EAGAIN)
    return 0;
  if (err == EINTR || err == ECONNABORTED || err == EPROTO)
    return 1;
  if ((err == EMFILE || err == ENFILE) && w->reserve_fd >= 0) {
    close(w->reserve_fd);
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0)
      close(fd);
    w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    CNT_ADD(w->st.closed[CR_LIMIT], 1);
    log_limited(&s->accept_log, "warn", "accept_error", "error=\"%s\" action=dropped",
                strerror(err));
    if (w->reserve_fd >= 0)
      return 1;
  } else {
    log_limited(&s->accept_log, "warn", "accept_error", "error=\"%s\" action=pause_100ms",
                strerror(err));
  }
  pause_listener(w, l);
  return 0;
}

/* Past max_connections: fd is told so (TLS: by the close alone) and closed. */
static void refuse(serve_worker_t *w, serve_listener_t *l, int fd, int tls) {
  serve_daemon_t *s = w->srv;
  const char *msg = tls ? "" : l->type->full_refusal;
  ssize_t wr = write(fd, msg, strlen(msg));
  (void)wr;
  close(fd);
  CNT_ADD(w->st.closed[CR_LIMIT], 1);
  log_limited(&s->accept_log, "warn", "client_refused", "reason=max_connections limit=%" PRId64,
              s->cfg->max_connections);
}

/* c (zeroed) made the connection on fd, in the loop's epoll set and list:
 * 0, or -1 (fd closed, c freed). */
static int add_conn(serve_worker_t *w, serve_listener_t *l, serve_conn_t *c, int fd,
                    const struct sockaddr_storage *peer, int tls) {
  serve_daemon_t *s = w->srv;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->tag = TAG_CONN;
  c->fd = fd;
  c->type = l->type;
  c->proto = (uint8_t)l->type->index;
  c->events = EPOLLIN;
  c->active_ms = w->now_ms;
  c->id = atomic_fetch_add(&s->next_client_id, 1);
  c->authed = atomic_load_explicit(&s->auth, memory_order_relaxed) == NULL;
  c->tls_hs = (uint8_t)tls;
  serve_peer_set(c, peer);
  if (tls) /* a handshake is a request: it has slow_timeout_ms to finish */
    c->req_start_ms = w->now_ms;
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
  if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
    close(fd);
    free(c);
    return -1;
  }
  c->next = w->conns;
  if (w->conns)
    w->conns->prev = c;
  w->conns = c;
  w->nconns++;
  CNT_ADD(w->st.open[c->proto], 1);
  CNT_ADD(w->st.accepted[c->proto], 1);
  return 0;
}

void serve_accept(serve_worker_t *w, serve_listener_t *l) {
  serve_daemon_t *s = w->srv;
  for (int i = 0; i < 64; i++) {
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof peer;
    int fd = accept4(l->fd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (accept_failed(w, l, errno))
        continue;
      return;
    }
    int tls = s->cfg->tls != NULL && l->type->tls;
    if (atomic_fetch_add(&s->nconns, 1) >= s->cfg->max_connections) {
      atomic_fetch_sub(&s->nconns, 1);
      refuse(w, l, fd, tls);
      continue;
    }
    serve_conn_t *c = calloc(1, sizeof *c);
    if (c == NULL) {
      close(fd);
      atomic_fetch_sub(&s->nconns, 1);
      return;
    }
    if (add_conn(w, l, c, fd, &peer, tls) < 0)
      atomic_fetch_sub(&s->nconns, 1);
  }
}
