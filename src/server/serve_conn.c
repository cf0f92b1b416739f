/*
 * serve_conn.c -- a connection's bytes and its end, below the loops
 * (serve_loop.c), the handshake (serve_tls.c) and whatever else settles a
 * connection: its reads and writes (through TLS when it speaks it), its
 * replies handed to the kernel or queued, its epoll interest, its
 * half-close and its close.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_int.h"
#include "tls.h"

void serve_conn_events(serve_worker_t *w, serve_conn_t *c, uint32_t ev) {
  if (c->events == ev)
    return;
  struct epoll_event e = {.events = ev, .data.ptr = c};
  if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
    c->events = ev;
}

int serve_conn_io_reason(int err) {
  return err == ECONNRESET || err == EPIPE ? CR_RESET : CR_ERROR;
}

ssize_t serve_conn_recv(serve_conn_t *c, void *buf, size_t cap) {
  if (c->ssl == NULL)
    return read(c->fd, buf, cap);
  int wants_write = 0;
  ssize_t n = tls_read(c->ssl, buf, cap, &wants_write);
  if (wants_write)
    c->tls_wants_out = 1;
  return n;
}

ssize_t serve_conn_send(serve_conn_t *c, const void *buf, size_t len) {
  return c->ssl == NULL ? write(c->fd, buf, len) : tls_write(c->ssl, buf, len);
}

void serve_conn_close(serve_worker_t *w, serve_conn_t *c, int reason) {
  serve_ids_unpark(w, c);  /* a waiting request goes with its connection */
  serve_leases_forget(c);  /* ... and a lease request's answer is dropped */
  serve_held_remove(w, c); /* and replies held for their audit lines */
  if (c->type->closed)     /* and what its protocol keeps for it */
    c->type->closed(w, c);
  if (c->ssl != NULL)
    tls_free(c->ssl);
  close(c->fd);
  if (c->prev)
    c->prev->next = c->next;
  else
    w->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  w->nconns--;
  CNT_ADD(w->st.closed[reason], 1);
  CNT_ADD(w->st.open[c->proto], (uint64_t)-1);
  atomic_fetch_sub(&w->srv->nconns, 1);
  serve_buf_free(&c->in);
  serve_buf_free(&c->out);
  serve_buf_free(&c->held_ids);
  free(c);
}

/* A plain close() with unread input, or input arriving after it, makes the
 * kernel reset the connection and drop replies not yet delivered: hence the
 * half-close, and the reads until the client closes. */
int serve_conn_finish(serve_worker_t *w, serve_conn_t *c) {
  if (c->ssl != NULL)
    tls_close_notify(c->ssl);
  shutdown(c->fd, SHUT_WR);
  c->lingering = 1;
  c->linger_until_ms = w->now_ms + LINGER_MS;
  if (w->draining && c->linger_until_ms > w->drain_deadline_ms)
    c->linger_until_ms = w->drain_deadline_ms;
  serve_buf_free(&c->in);
  serve_conn_events(w, c, EPOLLIN);
  return 0;
}

/* Behind queued replies, or held ones (for their audit lines, or behind an
 * answer to a token that waits), w->out joins the queue; c->held_ids'
 * offsets follow their bytes from w->out into c->out. */
static void queue_replies(serve_worker_t *w, serve_conn_t *c) {
  serve_held_reply_t *h = (serve_held_reply_t *)c->held_ids.p;
  size_t nh = c->held_ids.len / sizeof *h;
  if (c->out_off > c->out.len / 2) { /* keep the queue from creeping forward forever */
    memmove(c->out.p, c->out.p + c->out_off, c->out.len - c->out_off);
    c->out.len -= c->out_off;
    for (size_t i = 0; i < c->held_flushed; i++) /* (held bytes are never sent: all after) */
      h[i].start -= c->out_off, h[i].end -= c->out_off;
    c->out_off = 0;
  }
  for (size_t i = c->held_flushed; i < nh; i++) /* from w->out's offsets to c->out's */
    h[i].start += c->out.len, h[i].end += c->out.len;
  c->held_flushed = nh;
  serve_buf_put(&c->out, w->out.p, w->out.len);
  if (c->audit_seq)
    serve_held_add(w, c);
}

int serve_conn_flush(serve_worker_t *w, serve_conn_t *c) {
  if (w->out.len == 0)
    return 0;
  if (c->out.len > c->out_off || c->audit_seq || c->hold_until_ms) { /* queued, or held */
    queue_replies(w, c);
  } else {
    ssize_t n = serve_conn_send(c, w->out.p, w->out.len);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      w->out.len = 0;
      serve_conn_close(w, c, serve_conn_io_reason(errno));
      return -1;
    }
    size_t done = n > 0 ? (size_t)n : 0;
    if (done > 0)
      c->active_ms = w->now_ms;
    if (done < w->out.len) {
      c->out.len = c->out_off = 0;
      serve_buf_put(&c->out, w->out.p + done, w->out.len - done);
      /* The clock now, not the turn's start: making these replies may have
       * taken longer than slow_timeout_ms (a large batch, a slow build), and
       * the kernel's queue only grew since the last sweep, so a stale stamp
       * closed a steady reader as slow the moment the next sweep came. */
      c->write_ms = serve_mono_ms();
    }
  }
  w->out.len = 0;
  if (c->out.len - c->out_off > (size_t)w->srv->cfg->max_output_bytes) {
    log_limited(&w->srv->close_log, "warn", "client_closed", "reason=output peer=%s queued=%zu",
                serve_peer_text(c, (char[64]){0}), c->out.len - c->out_off);
    serve_conn_close(w, c, CR_OUTPUT);
    return -1;
  }
  return 0;
}
