/*
 * serve_loop.c -- the event loops of `idgen serve` (its lifecycle: serve_main.c).
 *
 * Threads.  One event loop per thread (--threads, default one per CPU).
 * Each loop has its own listening sockets, bound with SO_REUSEPORT to the
 * same address, so the kernel spreads new connections over the loops and no
 * lock or hand-off sits between accept and reply.  A connection lives on the
 * loop that accepted it.  The generators are shared (they are lock-free or
 * hold a spin lock for nanoseconds); counters are per loop.  The main thread
 * only waits for signals (they are blocked in every loop thread; serve_main.c).
 *
 * Level-triggered epoll.  Each readable event gets one read(2); replies are
 * written at once and only what the kernel does not take is queued.
 * Level-triggered keeps the invariants local -- a connection whose replies
 * are queued past OUT_SOFT_LIMIT simply drops EPOLLIN and its requests wait
 * in the kernel (backpressure), and nothing is lost when a loop stops
 * reading early -- at the price of one epoll_ctl when the interest changes,
 * which is rare.  Edge-triggered would force reading to EAGAIN on every
 * event, which is the opposite of backpressure.
 *
 * Memory.  A connection costs its struct (~200 bytes) plus buffers only
 * while it has a partial request or unsent replies: reads go into the loop's
 * 64 KiB scratch and replies into the loop's output buffer, and only
 * leftovers are copied into the connection.
 *
 * Timers.  Every SWEEP_MS each loop walks its connections: a partial
 * request older than slow_timeout_ms, replies that made no progress for
 * slow_timeout_ms, or no activity for idle_timeout_ms close the connection.
 * A walk over 10,000 connections takes tens of microseconds.
 *
 * accept(2) errors.  EMFILE/ENFILE: close a reserved descriptor, accept and
 * close the connection, reopen the reserve, so the listening socket does not
 * stay readable and spin the loop.  Other errors pause the listener for
 * 100 ms.  Past max_connections a client gets one error line and is closed.
 */
#define _GNU_SOURCE /* accept4, pthread_setname_np */
#include "server.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <linux/sockios.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "server_int.h"
#include "tls.h"

/* ---- connections ---------------------------------------------------------- */

static void set_events(serve_worker_t *w, serve_conn_t *c, uint32_t ev) {
  if (c->events == ev)
    return;
  struct epoll_event e = {.events = ev, .data.ptr = c};
  if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
    c->events = ev;
}

/* A failed read or write: the client reset the connection, or an error. */
static int io_close_reason(int e) { return e == ECONNRESET || e == EPIPE ? CR_RESET : CR_ERROR; }

/* read(2) and write(2) of a connection, through TLS when it speaks it
 * (tls.h: the same results; a read may need the socket writable first). */
static ssize_t conn_recv(serve_conn_t *c, void *buf, size_t cap) {
  if (c->ssl == NULL)
    return read(c->fd, buf, cap);
  int wants_write = 0;
  ssize_t n = tls_read(c->ssl, buf, cap, &wants_write);
  if (wants_write)
    c->tls_wants_out = 1;
  return n;
}

static ssize_t conn_send(serve_conn_t *c, const void *buf, size_t len) {
  return c->ssl == NULL ? write(c->fd, buf, len) : tls_write(c->ssl, buf, len);
}

/* audit_mode require: c's replies wait for the loop's audit lines (on the
 * loop's `held` list until released). */
static void held_add(serve_worker_t *w, serve_conn_t *c) {
  if (c->held_on)
    return;
  c->held_on = 1;
  c->held_prev = NULL;
  c->held_next = w->held;
  if (w->held)
    w->held->held_prev = c;
  w->held = c;
}

static void held_remove(serve_worker_t *w, serve_conn_t *c) {
  if (!c->held_on)
    return;
  if (c->held_prev)
    c->held_prev->held_next = c->held_next;
  else
    w->held = c->held_next;
  if (c->held_next)
    c->held_next->held_prev = c->held_prev;
  c->held_on = 0;
}

static void conn_close(serve_worker_t *w, serve_conn_t *c, int reason) {
  serve_ids_unpark(w, c); /* a waiting request goes with its connection */
  held_remove(w, c);      /* and replies held for their audit lines */
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
  serve_resp_multi_forget(w->srv, c);
  serve_buf_free(&c->multi_q);
  free(c);
}

/* After the last reply of a connection that must close: a half-close that
 * keeps reading (and discarding) until the client closes or LINGER_MS pass.
 * A plain close() with unread input, or input arriving after it, makes the
 * kernel reset the connection and drop replies not yet delivered. */
static int conn_finish(serve_worker_t *w, serve_conn_t *c) {
  if (c->ssl != NULL)
    tls_close_notify(c->ssl);
  shutdown(c->fd, SHUT_WR);
  c->lingering = 1;
  c->linger_until_ms = w->now_ms + LINGER_MS;
  if (w->draining && c->linger_until_ms > w->drain_deadline_ms)
    c->linger_until_ms = w->drain_deadline_ms;
  serve_buf_free(&c->in);
  set_events(w, c, EPOLLIN);
  return 0;
}

/* Hands w->out (the replies just made for c) to the kernel, queueing what it
 * does not take.  Returns -1 if c was closed. */
static int flush_replies(serve_worker_t *w, serve_conn_t *c) {
  if (w->out.len == 0)
    return 0;
  if (c->out.len > c->out_off || c->audit_seq || c->hold_until_ms) { /* queued, or held */
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
      held_add(w, c);
  } else {
    ssize_t n = conn_send(c, w->out.p, w->out.len);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      w->out.len = 0;
      conn_close(w, c, io_close_reason(errno));
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
    conn_close(w, c, CR_OUTPUT);
    return -1;
  }
  return 0;
}

static int conn_readable(serve_worker_t *w, serve_conn_t *c);

/* The drain's time is up, on either clock: the kernel's is read by a system
 * call, for a clock faker (libfaketime given a fixed date) that stops the C
 * library's monotonic clock; otherwise SIGTERM with a client that stays
 * would never end.  Read only while draining. */
static int drain_over(serve_worker_t *w, int64_t now_ms) {
  return now_ms >= w->drain_deadline_ms || serve_kernel_mono_ns() / 1000000 >= w->drain_kernel_ms;
}

/* Sets c's epoll interest from its state, or finishes it (-1: closed). */
static int conn_settle(serve_worker_t *w, serve_conn_t *c) {
  /* The flags' invariants: nothing is sent past a reply's end, and the
   * drain's reads happen only while the loop drains. */
  assert(c->out_off <= c->out.len);
  assert(!(c->drain_reading || c->drain_read) || w->draining);
  if (c->tls_hs) { /* no request yet: the drain does not wait for a handshake */
    if (!w->draining)
      return 0;
    conn_close(w, c, CR_SHUTDOWN);
    return -1;
  }
  if (c->hold_until_ms) { /* an answer to a token waits (the sweep releases it) */
    if (!w->draining) {
      set_events(w, c, 0);
      return 0;
    }
    c->hold_until_ms = 0; /* the drain sends it at once */
  }
  int queued = c->out.len > c->out_off;
  if (!queued && c->out.p != NULL) {
    serve_buf_free(&c->out);
    c->out_off = 0;
  }
  if (c->audit_seq) { /* its replies wait for their audit lines: no EPOLLOUT until then */
    set_events(w, c, c->parked || c->stop_parsing || c->blocked || w->draining ? 0 : EPOLLIN);
    return 0;
  }
  if (c->parked) { /* its next requests wait in the kernel until it is answered */
    set_events(w, c, queued ? EPOLLOUT : 0);
    return 0;
  }
  if (c->stop_parsing && !queued)
    return conn_finish(w, c);
  if (w->draining && !queued && !c->blocked) {
    /* The replies are out: read what has arrived, until the kernel has no
     * more (every request already sent is answered), then close.  The reads
     * settle the connection themselves; the loop keeps them from nesting. */
    if (c->drain_reading)
      return 0;
    /* (A client that never stops sending is cut off at the deadline.) */
    while (!c->drain_read && !drain_over(w, serve_mono_ms())) {
      c->drain_reading = 1;
      w->read_eagain = 0;
      if (conn_readable(w, c) < 0)
        return -1;
      c->drain_reading = 0;
      if (c->parked) /* read on once it is answered (conn_resume) */
        return 0;
      if (w->read_eagain)
        c->drain_read = 1;
      else if (c->lingering)
        return 0;
      else if (c->out.len > c->out_off || c->blocked || c->stop_parsing)
        return conn_settle(w, c); /* replies to send first, or a QUIT */
    }
    c->stop_parsing = 1;
    c->close_reason = CR_SHUTDOWN;
    return conn_finish(w, c);
  }
  uint32_t ev = 0;
  if (!c->stop_parsing && !c->blocked && !w->draining)
    ev |= EPOLLIN;
  if (queued || c->blocked || c->tls_wants_out) /* blocked with nothing queued: at once */
    ev |= EPOLLOUT;
  set_events(w, c, ev);
  return 0;
}

/* The latency of n replies to requests read at read_ns: observed now, or
 * when they are sent if they are held for their audit lines. */
static void observe(serve_worker_t *w, serve_conn_t *c, int64_t read_ns, size_t n) {
  if (c->audit_seq) {
    if (c->held_replies == 0 || read_ns < c->held_read_ns)
      c->held_read_ns = read_ns;
    c->held_replies += n;
    return;
  }
  serve_observe_latency(w, c->proto, serve_mono_ns() - read_ns, n);
}

/* Parses and answers the whole requests in data[0..len) (the worker's
 * scratch, or c->in), keeps the rest in c->in, and sends the replies.
 * Returns -1 if c was closed. */
static int process(serve_worker_t *w, serve_conn_t *c, const char *data, size_t len, int scratch) {
  const serve_config_t *cfg = w->srv->cfg;
  size_t pos = 0, made = 0; /* made: the replies' bytes flushed so far */
  w->out.len = 0;
  w->replies = 0;
  c->blocked = 0;
  /* Every request ends with a line feed: while none has arrived since the
   * last attempt, a partial request is still partial, and is not parsed
   * again from its start (one byte at a time would cost quadratic time). */
  int need_more = !scratch && c->proto != PROTO_THRIFT && c->parsed_len > 0 &&
                  len > c->parsed_len && len <= (size_t)cfg->max_request_bytes &&
                  memchr(data + c->parsed_len, '\n', len - c->parsed_len) == NULL;
  while (!need_more && pos < len && !c->stop_parsing && !c->parked && !c->hold_until_ms) {
    if (w->out.len >= OUT_SOFT_LIMIT) {
      made += w->out.len;
      if (flush_replies(w, c) < 0)
        return -1;
    }
    /* The kernel took too little, or this turn has made enough for one
     * connection: the rest waits for EPOLLOUT (the next turn, if the kernel
     * took it all), after the other connections' events. */
    if (c->out.len - c->out_off >= OUT_SOFT_LIMIT || made + w->out.len >= TURN_OUT_LIMIT) {
      if (c->out.len == c->out_off)
        c->write_ms = serve_mono_ms(); /* the sweep's slow check counts from here (now:
                                          see flush_replies) */
      c->blocked = 1;
      c->blocked_read_ns = w->read_ns;
      break;
    }
    size_t used = c->proto == PROTO_HTTP   ? serve_http_handle(w, c, data + pos, len - pos)
                  : c->proto == PROTO_RESP ? serve_resp_handle(w, c, data + pos, len - pos)
                                           : serve_thrift_handle(w, c, data + pos, len - pos);
    if (used == 0) {
      need_more = 1;
      break;
    }
    pos += used;
    if (c->exec_pending) { /* EXEC: the queued commands come next, before the rest */
      serve_buf_t nb = {0};
      serve_buf_reserve(&nb, c->multi_q.len + (len - pos));
      serve_buf_put(&nb, c->multi_q.p, c->multi_q.len);
      serve_buf_put(&nb, data + pos, len - pos);
      serve_buf_free(&c->multi_q);
      serve_buf_free(&c->in);
      c->in = nb;
      c->exec_pending = 0;
      data = c->in.p;
      len = c->in.len;
      pos = 0;
      scratch = 0;
    }
  }
  if (c->hold_until_ms) { /* an answer to a token waits: so do the requests after it */
    c->blocked = 1;
    c->blocked_read_ns = w->read_ns;
  }
  size_t rest = c->stop_parsing ? 0 : len - pos;
  c->parsed_len = need_more ? rest : 0;
  if (rest > 0 && !c->blocked && !c->parked && rest > (size_t)cfg->max_request_bytes) {
    /* The parsers bound each header block and bulk string; this bounds the
     * rest (a RESP command of many small arguments). */
    if (c->proto == PROTO_RESP) {
      serve_buf_printf(&w->out, "-ERR Protocol error: request over max_request_bytes\r\n");
      CNT_ADD(w->st.resp_err, 1);
      w->replies++;
    }
    c->stop_parsing = 1;
    c->close_reason = CR_PROTOCOL;
    rest = 0;
  }
  if (rest == 0) {
    serve_buf_free(&c->in);
    c->req_start_ms = 0;
  } else {
    if (scratch) {
      c->in.len = 0;
      serve_buf_put(&c->in, data + pos, rest);
    } else if (pos > 0) {
      memmove(c->in.p, c->in.p + pos, rest);
      c->in.len = rest;
    }
    if (pos > 0 || c->req_start_ms == 0)
      c->req_start_ms = serve_mono_ms(); /* (now: see flush_replies) */
  }
  size_t nreq = w->replies;
  if (flush_replies(w, c) < 0)
    return -1;
  if (w->out.cap > SCRATCH_KEEP) /* a large batch: give its memory back */
    serve_buf_free(&w->out);
  if (w->body.cap > SCRATCH_KEEP)
    serve_buf_free(&w->body);
  if (nreq > 0)
    observe(w, c, w->read_ns, nreq);
  return conn_settle(w, c);
}

/* One read(2) and what it brings.  Returns -1 if c was closed. */
static int conn_readable(serve_worker_t *w, serve_conn_t *c) {
  if (c->lingering) {
    ssize_t n = read(c->fd, w->rbuf, RBUF_SIZE);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_close(w, c, c->close_reason);
      return -1;
    }
    return 0;
  }
  char *dst = w->rbuf;
  size_t cap = RBUF_SIZE;
  if (c->in.len > 0) {
    serve_buf_reserve(&c->in, 16384);
    dst = c->in.p + c->in.len;
    cap = c->in.cap - c->in.len;
  }
  ssize_t n = conn_recv(c, dst, cap); /* (cap >= TLS_RECORD_MAX: see tls.h) */
  if (n == 0) {                       /* the client is done sending: finish what is queued */
    if (c->out.len > c->out_off) {
      c->stop_parsing = 1;
      c->close_reason = CR_EOF;
      set_events(w, c, c->audit_seq || c->hold_until_ms ? 0 : EPOLLOUT); /* held: once released */
      return 0;
    }
    conn_close(w, c, CR_EOF);
    return -1;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      w->read_eagain = errno == EAGAIN;
      if (c->tls_wants_out) /* the read goes on once the socket is writable: EPOLLOUT only */
        set_events(w, c, EPOLLOUT);
      return 0;
    }
    conn_close(w, c, io_close_reason(errno));
    return -1;
  }
  c->active_ms = w->now_ms;
  w->read_ns = serve_mono_ns();
  if (dst == w->rbuf)
    return process(w, c, w->rbuf, (size_t)n, 1);
  c->in.len += (size_t)n;
  return process(w, c, c->in.p, c->in.len, 0);
}

/* Sends queued replies.  Returns -1 if c was closed. */
static int conn_writable(serve_worker_t *w, serve_conn_t *c) {
  if (c->tls_wants_out) { /* a TLS read that had to write first: it goes on, and settles */
    c->tls_wants_out = 0;
    if (conn_readable(w, c) < 0)
      return -1;
    return c->tls_wants_out || c->lingering ? 0 : conn_settle(w, c);
  }
  if (c->audit_seq || c->hold_until_ms) /* held (an EPOLLOUT of before) */
    return 0;
  size_t left = c->out.len - c->out_off;
  ssize_t n = left ? conn_send(c, c->out.p + c->out_off, left) : 0;
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR)
      return 0;
    conn_close(w, c, io_close_reason(errno));
    return -1;
  }
  if (n > 0) {
    c->out_off += (size_t)n;
    /* (The clock now: earlier events of this turn may have taken long.) */
    c->active_ms = c->write_ms = serve_mono_ms();
  }
  if (c->out.len > c->out_off) /* more to send; the interest stays */
    return 0;
  serve_buf_free(&c->out);
  c->out_off = 0;
  if (c->blocked && c->in.len > 0) { /* requests waited for these replies */
    w->read_ns = c->blocked_read_ns;
    return process(w, c, c->in.p, c->in.len, 0);
  }
  c->blocked = 0;
  return conn_settle(w, c);
}

/* A connection whose parked request was answered (serve_resume_cb). */
static int conn_resume(serve_worker_t *w, serve_conn_t *c, int64_t read_ns) {
  if (w->replies > 0 || w->out.len > 0)
    observe(w, c, read_ns, 1);
  w->replies = 0;
  if (flush_replies(w, c) < 0)
    return -1;
  if (c->in.len > 0 && !c->stop_parsing) { /* the requests that waited behind it */
    w->read_ns = read_ns;
    return process(w, c, c->in.p, c->in.len, 0);
  }
  return conn_settle(w, c);
}

/* The first of c's held replies whose line is not written yet (by `done`):
 * its index (they are in the order of their lines). */
static size_t held_first_unwritten(const serve_conn_t *c, uint64_t done) {
  const serve_held_reply_t *h = (const serve_held_reply_t *)c->held_ids.p;
  size_t lo = 0, hi = c->held_ids.len / sizeof *h;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (h[mid].seq <= done)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* audit_mode require: c's held replies from the k-th on (their lines not
 * written within audit_timeout_ms) are replaced, in c->out, by refusals,
 * each made as its protocol refuses an ID request (HTTP keeps the reply's
 * Connection header); their IDs are never sent, and a void line follows each
 * record.  The replies in between (no IDs) stay as they were.  Later
 * replies go with the first refused: replies keep their order. */
static void held_refuse(serve_worker_t *w, serve_conn_t *c, size_t k) {
  serve_held_reply_t *h = (serve_held_reply_t *)c->held_ids.p;
  size_t nh = c->held_ids.len / sizeof *h;
  char why[600];
  serve_audit_timeout_text(w->srv, why, sizeof why);
  serve_buf_t nb = {0};
  serve_buf_reserve(&nb, c->out.len - c->out_off + 256); /* (the held bytes: never 0) */
  serve_buf_put(&nb, c->out.p + c->out_off, h[k].start - c->out_off);
  uint8_t stop = c->stop_parsing, reason = c->close_reason;
  size_t replies = w->replies, base = w->out.len;
  for (size_t i = k; i < nh; i++) {
    c->stop_parsing = h[i].closing;
    h[i].shape.replies->error(w, c, &h[i].shape, SERVE_EAUDIT, why, 1000);
    serve_buf_put(&nb, w->out.p + base, w->out.len - base);
    w->out.len = base;
    size_t next = i + 1 < nh ? h[i + 1].start : c->out.len;
    serve_buf_put(&nb, c->out.p + h[i].end, next - h[i].end);
    serve_audit_void(w, &h[i]);
  }
  c->stop_parsing = stop;
  c->close_reason = reason;
  w->replies = replies;
  serve_audit_timed_out(w->srv, nh - k);
  serve_buf_free(&c->out);
  c->out = nb;
  c->out_off = 0;
}

/* audit_mode require: sends the held replies whose audit lines are written
 * (the writer wakes the loop when it has written some), or refused once the
 * first not written has waited audit_timeout_ms (the loop wakes for that by
 * itself: w->held_due_ms), then goes on with their connections' waiting
 * requests. */
static void release_held(serve_worker_t *w) {
  int waiting = w->held != NULL;
  if (waiting != w->held_waiting) /* before the look below: a write after it wakes the loop */
    serve_audit_waiting(w, w->held_waiting = waiting);
  w->held_due_ms = INT64_MAX;
  if (!waiting)
    return;
  uint64_t done = serve_audit_written(w);
  int64_t now = serve_mono_ms(), bound = w->srv->cfg->audit_timeout_ms;
  for (serve_conn_t *c = w->held, *next; c; c = next) {
    next = c->held_next;
    if (c->audit_seq > done) {
      size_t k = held_first_unwritten(c, done);
      int64_t due = ((serve_held_reply_t *)c->held_ids.p)[k].held_ms + bound;
      if (now < due) {
        if (due < w->held_due_ms)
          w->held_due_ms = due;
        continue;
      }
      held_refuse(w, c, k);
    }
    held_remove(w, c);
    c->audit_seq = 0;
    c->held_flushed = 0;
    c->held_ids.len = 0;
    if (c->held_ids.cap > 4096)
      serve_buf_free(&c->held_ids);
    if (c->held_replies > 0) {
      serve_observe_latency(w, c->proto, serve_mono_ns() - c->held_read_ns, c->held_replies);
      c->held_replies = 0;
    }
    c->write_ms = serve_mono_ms(); /* the slow check counts from here (now: see flush_replies) */
    if (conn_writable(w, c) < 0)
      continue;
    if (c->out.len > c->out_off && !c->audit_seq) /* the kernel took part: EPOLLOUT */
      conn_settle(w, c);
  }
  if (w->held == NULL && w->held_waiting)
    serve_audit_waiting(w, w->held_waiting = 0);
  else if (w->held != NULL && w->held_due_ms == INT64_MAX) /* held by the requests sent above */
    w->held_due_ms = now + bound;
  if (w->audit.len > 0) /* void lines, and the lines of the requests sent above */
    serve_audit_handoff(w);
}

/* ---- TLS handshakes -------------------------------------------------------- */

/* One step of a TLS connection's handshake (each event, until it is done).
 * Its first byte tells a TLS client from one that speaks plain text, which
 * is told so in plain text.  Returns -1 if c was closed. */
static int conn_handshake(serve_worker_t *w, serve_conn_t *c) {
  if (c->ssl == NULL) {
    unsigned char b;
    ssize_t n = recv(c->fd, &b, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
      return 0;
    if (n <= 0) {
      conn_close(w, c, n == 0 ? CR_EOF : io_close_reason(errno));
      return -1;
    }
    if (!tls_is_handshake_byte(b)) {
      CNT_ADD(w->st.tls_hs[TLS_PLAIN], 1);
      const char *msg = serve_tls_plain_refusal(c->proto);
      ssize_t wr = write(c->fd, msg, strlen(msg)); /* (a few bytes: the kernel takes them) */
      (void)wr;
      c->tls_hs = 0;
      c->stop_parsing = 1;
      c->close_reason = CR_TLS;
      return conn_finish(w, c);
    }
    c->ssl = serve_tls_conn(w->srv, c->fd);
    if (c->ssl == NULL) {
      conn_close(w, c, CR_ERROR);
      return -1;
    }
  }
  char err[300];
  int r = tls_handshake(c->ssl, err, sizeof err);
  if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
    set_events(w, c, r == TLS_WANT_WRITE ? EPOLLOUT : EPOLLIN);
    return 0;
  }
  c->tls_hs = 0;
  if (r == TLS_ABORTED) { /* the client went away: not a failure of ours or its */
    CNT_ADD(w->st.tls_hs[TLS_ABORT], 1);
    conn_close(w, c, strcmp(err, "eof") == 0 ? CR_EOF : CR_RESET);
    return -1;
  }
  if (r == TLS_FAILED) { /* OpenSSL has sent its alert: let the client read it */
    serve_tls_failed(w, c, err);
    tls_free(c->ssl);
    c->ssl = NULL;
    c->stop_parsing = 1;
    c->close_reason = CR_TLS;
    return conn_finish(w, c);
  }
  c->req_start_ms = 0;
  c->active_ms = w->now_ms;
  serve_tls_established(w, c);
  return conn_settle(w, c);
}

/* ---- accepting ----------------------------------------------------------- */

/* A reply for a client refused for lack of room (max_connections). */
static const char *refusal_text(int proto) {
  if (proto == PROTO_THRIFT) /* no call to answer yet: the close says it */
    return "";
  return proto == PROTO_RESP ? "-ERR max number of clients reached\r\n"
                             : "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
                               "X-Content-Type-Options: nosniff\r\n"
                               "Content-Length: 32\r\nConnection: close\r\n\r\n"
                               "too many connections; try later\n";
}

static void pause_listener(serve_worker_t *w, serve_listener_t *l) {
  epoll_ctl(w->epfd, EPOLL_CTL_DEL, l->fd, NULL);
  w->paused_until_ms = w->now_ms + 100;
}

static void on_accept(serve_worker_t *w, serve_listener_t *l) {
  serve_daemon_t *s = w->srv;
  for (int i = 0; i < 64; i++) {
    struct sockaddr_storage peer;
    socklen_t peer_len = sizeof peer;
    int fd = accept4(l->fd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN)
        return;
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO)
        continue;
      int err = errno;
      if ((err == EMFILE || err == ENFILE) && w->reserve_fd >= 0) {
        close(w->reserve_fd);
        fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
          close(fd);
        w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CNT_ADD(w->st.closed[CR_LIMIT], 1);
        log_limited(&s->accept_log, "warn", "accept_error", "error=\"%s\" action=dropped",
                    strerror(err));
        if (w->reserve_fd >= 0)
          continue;
      } else {
        log_limited(&s->accept_log, "warn", "accept_error", "error=\"%s\" action=pause_100ms",
                    strerror(err));
      }
      pause_listener(w, l);
      return;
    }
    int tls = s->cfg->tls != NULL && l->proto != PROTO_THRIFT;
    if (atomic_fetch_add(&s->nconns, 1) >= s->cfg->max_connections) {
      atomic_fetch_sub(&s->nconns, 1);
      const char *msg = tls ? "" : refusal_text(l->proto); /* (TLS: the close says it) */
      ssize_t wr = write(fd, msg, strlen(msg));
      (void)wr;
      close(fd);
      CNT_ADD(w->st.closed[CR_LIMIT], 1);
      log_limited(&s->accept_log, "warn", "client_refused", "reason=max_connections limit=%" PRId64,
                  s->cfg->max_connections);
      continue;
    }
    serve_conn_t *c = calloc(1, sizeof *c);
    int one = 1;
    if (c == NULL) {
      close(fd);
      atomic_fetch_sub(&s->nconns, 1);
      return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->tag = TAG_CONN;
    c->fd = fd;
    c->proto = (uint8_t)l->proto;
    c->events = EPOLLIN;
    c->active_ms = w->now_ms;
    c->id = atomic_fetch_add(&s->next_client_id, 1);
    c->authed = atomic_load_explicit(&s->auth, memory_order_relaxed) == NULL;
    c->tls_hs = (uint8_t)tls;
    serve_peer_set(c, &peer);
    if (tls) /* a handshake is a request: it has slow_timeout_ms to finish */
      c->req_start_ms = w->now_ms;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
      close(fd);
      free(c);
      atomic_fetch_sub(&s->nconns, 1);
      continue;
    }
    c->next = w->conns;
    if (w->conns)
      w->conns->prev = c;
    w->conns = c;
    w->nconns++;
    CNT_ADD(w->st.open[l->proto], 1);
    CNT_ADD(w->st.accepted[l->proto], 1);
  }
}

/* ---- the loop ----------------------------------------------------------- */

/* The fast clock's model rejected (a wall-clock step, or a TSC that does
 * not keep time): logged once per change, by the first loop only. */
static void watch_clock(serve_daemon_t *s) {
  idgen_clock_stats_t cs;
  idgen_clock_stats(&cs);
  if (cs.fallbacks == s->clock_fallbacks_seen)
    return;
  log_limited(&s->clock_log, "warn", "clock_fallback",
              "fallbacks=%" PRIu64 " cooldowns=%" PRIu64 " state=%s cooldown_ms=%" PRId64
              " note=\"the fast clock reads the kernel clock on every call until it is "
              "calibrated again\"",
              cs.fallbacks, cs.cooldowns, idgen_clock_state_name(cs.state), cs.cooldown_ms);
  s->clock_fallbacks_seen = cs.fallbacks;
}

static void sweep(serve_worker_t *w) {
  const serve_config_t *cfg = w->srv->cfg;
  int64_t now = w->now_ms;
  w->last_sweep_ms = now;
  if (w->index == 0)
    watch_clock(w->srv);
  if (w->paused_until_ms && now >= w->paused_until_ms && !w->draining) {
    w->paused_until_ms = 0;
    for (int p = 0; p < NPROTO; p++)
      if (w->listeners[p].fd >= 0) {
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = &w->listeners[p]};
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listeners[p].fd, &e);
      }
  }
  for (serve_conn_t *c = w->conns, *next; c; c = next) {
    next = c->next;
    int reason = -1;
    if (c->hold_until_ms) { /* an answer to a token, slowed: due? */
      if (now >= c->hold_until_ms) {
        c->hold_until_ms = 0;
        c->write_ms = now; /* the slow check counts from here */
        conn_settle(w, c); /* blocked: sent on the next EPOLLOUT, then what waited */
      }
      continue;
    }
    if (c->parked || c->audit_seq)
      continue; /* its request's wait is bounded by the generator, or its replies wait for
                   their audit lines (released when written; refused meanwhile) */
    if (c->lingering) {
      if (now >= c->linger_until_ms)
        reason = c->close_reason;
    } else if (c->out.len > c->out_off || c->blocked) {
      /* (Blocked with nothing queued: waiting for EPOLLOUT, which a client
       * that does not read never gives.)  The kernel's queue shrinking is
       * progress too: once both socket buffers are full, a slow but steady
       * reader frees room in steps too small to wake EPOLLOUT (a third of
       * the send buffer, over 1 MB), so no write shows it (82 KB/s was
       * closed as slow at the default 10 s). */
      int q;
      if (ioctl(c->fd, SIOCOUTQ, &q) == 0) {
        if ((uint32_t)q < c->outq)
          c->write_ms = now;
        c->outq = (uint32_t)q;
      }
      if (now - c->write_ms >= cfg->slow_timeout_ms)
        reason = CR_SLOW;
    } else if (c->req_start_ms && !c->blocked && now - c->req_start_ms >= cfg->slow_timeout_ms) {
      /* (A blocked connection's requests are whole and wait for the loop:
       * its turn's output limit, not the client, holds them.) */
      reason = CR_SLOW;
    } else if (cfg->idle_timeout_ms && now - c->active_ms >= cfg->idle_timeout_ms) {
      reason = CR_IDLE;
    }
    if (reason < 0)
      continue;
    if (reason == CR_SLOW)
      log_limited(&w->srv->close_log, "warn", "client_closed", "reason=slow proto=%s peer=%s",
                  serve_proto_name(c->proto), serve_peer_text(c, (char[64]){0}));
    conn_close(w, c, reason);
  }
}

static void start_drain(serve_worker_t *w) {
  w->draining = 1;
  w->now_ms = serve_mono_ms(); /* not the turn's start: a long turn would shorten the drain */
  w->drain_deadline_ms = w->now_ms + w->srv->cfg->shutdown_timeout_ms;
  int64_t now_ns = serve_kernel_mono_ns();
  w->drain_kernel_ms = now_ns / 1000000 + w->srv->cfg->shutdown_timeout_ms;
  w->park_until_ns = now_ns + w->srv->cfg->shutdown_timeout_ms * 1000000;
  for (int p = 0; p < NPROTO; p++)
    if (w->listeners[p].fd >= 0) {
      close(w->listeners[p].fd); /* stop accepting; also leaves the epoll set */
      w->listeners[p].fd = -1;
    }
  /* Answer what has arrived: once its replies are out, each connection is
   * read until the kernel has nothing more (requests already sent are answered), then
   * half-closed (conn_finish). */
  for (serve_conn_t *c = w->conns, *next; c; c = next) {
    next = c->next;
    if (c->lingering) {
      if (c->linger_until_ms > w->drain_deadline_ms)
        c->linger_until_ms = w->drain_deadline_ms;
      continue;
    }
    conn_settle(w, c); /* reads it dry once its replies are out, then closes */
  }
}

static void *worker_main(void *arg) {
  serve_worker_t *w = arg;
  serve_daemon_t *s = w->srv;
  struct epoll_event evs[256];
  int64_t due_ns = -1; /* until the first parked request is due */
  serve_poll_loop_start(w);
  for (;;) {
    /* No generator held here but parked requests' (see swaps_seen). */
    atomic_store(&w->swaps_seen, server_swaps(s));
    /* Parked requests are due on the clock's ticks: wait to the
     * nanosecond, not to the next whole millisecond. */
    int64_t wait_ns = due_ns >= 0 && due_ns < SWEEP_MS * 1000000LL ? due_ns : SWEEP_MS * 1000000LL;
    if (w->draining) { /* it ends on time */
      int64_t left = (w->drain_deadline_ms - w->now_ms) * 1000000;
      if (left < wait_ns)
        wait_ns = left > 0 ? left : 0;
    }
    if (w->held && w->held_due_ms < INT64_MAX) { /* a held reply is refused on time */
      int64_t left = (w->held_due_ms - serve_mono_ms()) * 1000000;
      if (left < wait_ns)
        wait_ns = left > 0 ? left : 0;
    }
    int n = serve_poll_wait(w, evs, wait_ns);
    if (n < 0 && errno != EINTR) {
      log_event("error", "epoll_wait", "error=\"%s\"", strerror(errno));
      break;
    }
    w->now_ms = serve_mono_ms();
    atomic_store_explicit(&w->turned_ms, w->now_ms, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
      int tag = *(int *)evs[i].data.ptr;
      if (tag == TAG_CONN) {
        serve_conn_t *c = evs[i].data.ptr;
        uint32_t ev = evs[i].events;
        if (c->tls_hs) {
          conn_handshake(w, c);
          continue;
        }
        if ((ev & EPOLLOUT) && conn_writable(w, c) < 0)
          continue;
        if ((ev & (EPOLLHUP | EPOLLERR)) || ((ev & EPOLLIN) && (c->events & EPOLLIN)))
          conn_readable(w, c);
      } else if (tag == TAG_LISTENER) {
        on_accept(w, evs[i].data.ptr);
      } else { /* TAG_WAKE */
        uint64_t v;
        ssize_t r = read(w->wakefd, &v, sizeof v);
        (void)r;
      }
    }
    due_ns = w->parked ? serve_ids_run_parked(w, conn_resume) : -1;
    if (w->audit.len > 0)
      serve_audit_handoff(w);
    if (w->held || w->held_waiting)
      release_held(w);
    if (n > 0 && s->cfg->busy_poll_ns > 0)
      serve_poll_sample(w);
    if (w->now_ms - w->last_sweep_ms >= SWEEP_MS)
      sweep(w);
    if (atomic_load(&s->stopping) && !w->draining) {
      start_drain(w);
      /* Refuses at once those due after the drain's limit (unless the limit
       * is already here: then only their own replies, below). */
      if (w->parked && !drain_over(w, w->now_ms))
        due_ns = serve_ids_run_parked(w, conn_resume);
    }
    if (w->draining) {
      if (w->nconns == 0)
        break;
      if (drain_over(w, w->now_ms)) {
        if (w->parked)
          serve_ids_end_parked(w, conn_resume);
        while (w->conns)
          conn_close(w, w->conns, CR_SHUTDOWN);
        break;
      }
    }
  }
  serve_audit_handoff(w); /* the last lines (the writer writes them before it ends) */
  atomic_store_explicit(&w->turned_ms, INT64_MAX, memory_order_relaxed); /* ended: not stalled */
  atomic_store(&w->swaps_seen, UINT64_MAX);                    /* holds nothing from here on */
  atomic_store_explicit(&w->waiting, 1, memory_order_relaxed); /* not runnable for the gate */
  return NULL;
}

/* ---- a loop's making and ending ------------------------------------------ */

int serve_worker_init(serve_daemon_t *s, serve_worker_t *w, int i) {
  w->srv = s;
  w->index = i;
  for (int p = 0; p < NPROTO; p++)
    w->listeners[p].fd = -1;
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  w->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  w->rbuf = malloc(RBUF_SIZE);
  w->ids_cap = 1024;
  w->ids = malloc(w->ids_cap * sizeof *w->ids);
  w->st.ids = calloc(NKINDS * (size_t)(AGENT_FIRST + s->cfg->max_agents), sizeof(serve_counter_t));
  w->st.auth_fail =
      calloc(NPROTO * (size_t)(AGENT_FIRST + s->cfg->max_agents), sizeof(serve_counter_t));
  w->http_headers = calloc((size_t)s->cfg->max_headers, sizeof *w->http_headers);
  w->wake_tag = TAG_WAKE;
  w->now_ms = w->last_sweep_ms = serve_mono_ms();
  w->park_until_ns = INT64_MAX;
  w->held_due_ms = INT64_MAX;
  atomic_init(&w->turned_ms, w->now_ms);
  if (w->epfd < 0 || w->wakefd < 0 || !w->rbuf || !w->ids || !w->st.ids || !w->st.auth_fail ||
      !w->http_headers)
    return -1;
  struct epoll_event e = {.events = EPOLLIN, .data.ptr = &w->wake_tag};
  return epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->wakefd, &e);
}

void serve_worker_free(serve_worker_t *w) {
  for (int p = 0; p < NPROTO; p++)
    if (w->listeners[p].fd >= 0)
      close(w->listeners[p].fd);
  while (w->conns)
    conn_close(w, w->conns, CR_SHUTDOWN);
  if (w->epfd >= 0)
    close(w->epfd);
  if (w->wakefd >= 0)
    close(w->wakefd);
  if (w->reserve_fd >= 0)
    close(w->reserve_fd);
  if (w->statfd >= 0)
    close(w->statfd);
  free(w->rbuf);
  free(w->ids);
  free(w->st.ids);
  free(w->st.auth_fail);
  free(w->http_headers);
  serve_buf_free(&w->out);
  serve_buf_free(&w->body);
  serve_buf_free(&w->audit);
}

int serve_worker_start(serve_worker_t *w) {
  for (int p = 0; p < NPROTO; p++)
    if (w->listeners[p].fd >= 0) {
      struct epoll_event e = {.events = EPOLLIN, .data.ptr = &w->listeners[p]};
      epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listeners[p].fd, &e);
    }
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
    return -1;
  char name[16]; /* for top -H, ps -L, gdb: the kernel keeps 15 bytes */
  snprintf(name, sizeof name, "idgen-loop-%u", (unsigned)w->index % 10000u);
  pthread_setname_np(w->thread, name);
  return 0;
}
