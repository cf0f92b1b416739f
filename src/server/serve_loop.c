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
 * Protocols.  The loop knows a connection's protocol only by its table
 * (c->type, serve_proto_t): it parses with it and asks it what it needs.
 * Under the loop: new connections (serve_accept.c), TLS handshakes
 * (serve_tls.c), a connection's bytes and its end (serve_conn.c), replies
 * held for their audit lines (serve_held.c).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "server.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "server_int.h"

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
    serve_conn_close(w, c, CR_SHUTDOWN);
    return -1;
  }
  if (c->hold_until_ms) { /* an answer to a token waits (the sweep releases it) */
    if (!w->draining) {
      serve_conn_events(w, c, 0);
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
    serve_conn_events(
        w, c,
        c->parked || c->lease_job || c->stop_parsing || c->blocked || w->draining ? 0 : EPOLLIN);
    return 0;
  }
  if (c->parked || c->lease_job) { /* its next requests wait in the kernel until it is answered */
    serve_conn_events(w, c, queued ? EPOLLOUT : 0);
    return 0;
  }
  if (c->stop_parsing && !queued)
    return serve_conn_finish(w, c);
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
      if (c->parked || c->lease_job) /* read on once it is answered (conn_resume) */
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
    return serve_conn_finish(w, c);
  }
  uint32_t ev = 0;
  if (!c->stop_parsing && !c->blocked && !w->draining)
    ev |= EPOLLIN;
  if (queued || c->blocked || c->tls_wants_out) /* blocked with nothing queued: at once */
    ev |= EPOLLOUT;
  serve_conn_events(w, c, ev);
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
  /* Where every request ends with a line feed (c->type->lf_ended): while
   * none has arrived since the last attempt, a partial request is still
   * partial, and is not parsed again from its start (one byte at a time
   * would cost quadratic time). */
  int need_more = !scratch && c->type->lf_ended && c->parsed_len > 0 && len > c->parsed_len &&
                  len <= (size_t)cfg->max_request_bytes &&
                  memchr(data + c->parsed_len, '\n', len - c->parsed_len) == NULL;
  if (!scratch && c->want_len > 0) /* an HTTP body: whole, or not yet (no line feed to wait for) */
    need_more = len < c->want_len;
  while (!need_more && pos < len && !c->stop_parsing && !c->parked && !c->lease_job &&
         !c->hold_until_ms) {
    if (w->out.len >= OUT_SOFT_LIMIT) {
      made += w->out.len;
      if (serve_conn_flush(w, c) < 0)
        return -1;
    }
    /* The kernel took too little, or this turn has made enough for one
     * connection: the rest waits for EPOLLOUT (the next turn, if the kernel
     * took it all), after the other connections' events. */
    if (c->out.len - c->out_off >= OUT_SOFT_LIMIT || made + w->out.len >= TURN_OUT_LIMIT) {
      if (c->out.len == c->out_off)
        c->write_ms = serve_mono_ms(); /* the sweep's slow check counts from here (now:
                                          see serve_conn_flush) */
      c->blocked = 1;
      c->blocked_read_ns = w->read_ns;
      break;
    }
    size_t used = c->type->handle(w, c, data + pos, len - pos);
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
  if (rest > 0 && !c->blocked && !c->parked && !c->lease_job &&
      rest > (size_t)cfg->max_request_bytes) {
    /* The parsers bound each header block and bulk string; this bounds the
     * rest (a RESP command of many small arguments), with the protocol's
     * answer if it has one. */
    if (c->type->oversize)
      c->type->oversize(w, c);
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
      c->req_start_ms = serve_mono_ms(); /* (now: see serve_conn_flush) */
  }
  size_t nreq = w->replies;
  if (serve_conn_flush(w, c) < 0)
    return -1;
  if (w->out.cap > SCRATCH_KEEP) /* a large batch: give its memory back */
    serve_buf_free(&w->out);
  if (w->body.cap > SCRATCH_KEEP)
    serve_buf_free(&w->body);
  if (w->pub_text.cap > SCRATCH_KEEP)
    serve_buf_free(&w->pub_text);
  if (nreq > 0)
    observe(w, c, w->read_ns, nreq);
  return conn_settle(w, c);
}

/* One read(2) and what it brings.  Returns -1 if c was closed. */
static int conn_readable(serve_worker_t *w, serve_conn_t *c) {
  if (c->lingering) {
    ssize_t n = read(c->fd, w->rbuf, RBUF_SIZE);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      serve_conn_close(w, c, c->close_reason);
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
  /* (cap >= TLS_RECORD_MAX: see tls.h) */
  ssize_t n = serve_conn_recv(c, dst, cap);
  if (n == 0) { /* the client is done sending: finish what is queued */
    if (c->out.len > c->out_off) {
      c->stop_parsing = 1;
      c->close_reason = CR_EOF;
      /* (Held replies: EPOLLOUT once they are released.) */
      serve_conn_events(w, c, c->audit_seq || c->hold_until_ms ? 0 : EPOLLOUT);
      return 0;
    }
    serve_conn_close(w, c, CR_EOF);
    return -1;
  }
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) {
      w->read_eagain = errno == EAGAIN;
      if (c->tls_wants_out) /* the read goes on once the socket is writable: EPOLLOUT only */
        serve_conn_events(w, c, EPOLLOUT);
      return 0;
    }
    serve_conn_close(w, c, serve_conn_io_reason(errno));
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
  ssize_t n = left ? serve_conn_send(c, c->out.p + c->out_off, left) : 0;
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR)
      return 0;
    serve_conn_close(w, c, serve_conn_io_reason(errno));
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
  if (serve_conn_flush(w, c) < 0)
    return -1;
  if (c->in.len > 0 && !c->stop_parsing) { /* the requests that waited behind it */
    w->read_ns = read_ns;
    return process(w, c, c->in.p, c->in.len, 0);
  }
  return conn_settle(w, c);
}

/* A connection whose held replies were released (serve_release_cb): they
 * go out, then the requests that waited behind them. */
static int conn_released(serve_worker_t *w, serve_conn_t *c) {
  if (conn_writable(w, c) < 0)
    return -1;
  if (c->out.len > c->out_off && !c->audit_seq) /* the kernel took part: EPOLLOUT */
    return conn_settle(w, c);
  return 0;
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
    w->paused_until_ms = 0; /* (an accept(2) error paused the listeners) */
    serve_accept_start(w);
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
    if (c->parked || c->audit_seq || c->lease_job)
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
                  c->type->name, serve_peer_text(c, (char[64]){0}));
    serve_conn_close(w, c, reason);
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
   * half-closed (serve_conn_finish). */
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
          if (serve_tls_handshake(w, c) > 0)
            conn_settle(w, c);
          continue;
        }
        if ((ev & EPOLLOUT) && conn_writable(w, c) < 0)
          continue;
        if ((ev & (EPOLLHUP | EPOLLERR)) || ((ev & EPOLLIN) && (c->events & EPOLLIN)))
          conn_readable(w, c);
      } else if (tag == TAG_LISTENER) {
        serve_accept(w, evs[i].data.ptr);
      } else { /* TAG_WAKE */
        uint64_t v;
        ssize_t r = read(w->wakefd, &v, sizeof v);
        (void)r;
      }
    }
    due_ns = w->parked ? serve_ids_run_parked(w, conn_resume) : -1;
    serve_leases_run_done(w, conn_resume); /* answers of the lease service */
    if (w->audit.len > 0)
      serve_audit_handoff(w);
    if (w->held || w->held_waiting)
      serve_held_release(w, conn_released);
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
          serve_conn_close(w, w->conns, CR_SHUTDOWN);
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
    serve_conn_close(w, w->conns, CR_SHUTDOWN);
  serve_public_worker_free(w);
  serve_buf_free(&w->pub_text);
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
  serve_accept_start(w);
  if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
    return -1;
  char name[16]; /* for top -H, ps -L, gdb: the kernel keeps 15 bytes */
  snprintf(name, sizeof name, "idgen-loop-%u", (unsigned)w->index % 10000u);
  pthread_setname_np(w->thread, name);
  return 0;
}
