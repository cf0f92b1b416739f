/*
 * serve_held.c -- audit_mode require's held replies: a connection whose
 * replies carry IDs waits, on its loop's `held` list, until the audit lines
 * of those IDs are written (serve_audit.c notes each reply in c->held_ids
 * and the line it waits for in c->audit_seq); then its replies go out, or,
 * once the first line not written has waited audit_timeout_ms, refusals go
 * in their place.  The loop (serve_loop.c) asks for this after each turn.
 */
#include <stdint.h>
#include <string.h>

#include "server_int.h"

void serve_held_add(serve_worker_t *w, serve_conn_t *c) {
  if (c->held_on)
    return;
  c->held_on = 1;
  c->held_prev = NULL;
  c->held_next = w->held;
  if (w->held)
    w->held->held_prev = c;
  w->held = c;
}

void serve_held_remove(serve_worker_t *w, serve_conn_t *c) {
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

/* The first of c's held replies whose line is not written yet (by `done`):
 * its index (they are in the order of their lines). */
static size_t first_unwritten(const serve_conn_t *c, uint64_t done) {
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

/* c's held replies from the k-th on (their lines not written within
 * audit_timeout_ms) are replaced, in c->out, by refusals, each made as its
 * protocol refuses an ID request (HTTP keeps the reply's Connection
 * header); their IDs are never sent, and a void line follows each record.
 * The replies in between (no IDs) stay as they were.  Later replies go with
 * the first refused: replies keep their order. */
static void refuse(serve_worker_t *w, serve_conn_t *c, size_t k) {
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

/* c's replies wait no more: its list of held ones emptied, their latency
 * observed as they go. */
static void unhold(serve_worker_t *w, serve_conn_t *c) {
  serve_held_remove(w, c);
  c->audit_seq = 0;
  c->held_flushed = 0;
  c->held_ids.len = 0;
  if (c->held_ids.cap > 4096)
    serve_buf_free(&c->held_ids);
  if (c->held_replies > 0) {
    serve_observe_latency(w, c->proto, serve_mono_ns() - c->held_read_ns, c->held_replies);
    c->held_replies = 0;
  }
  c->write_ms = serve_mono_ms(); /* the slow check counts from here (now: see serve_conn_flush) */
}

void serve_held_release(serve_worker_t *w, serve_release_cb sent) {
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
      size_t k = first_unwritten(c, done);
      int64_t due = ((serve_held_reply_t *)c->held_ids.p)[k].held_ms + bound;
      if (now < due) {
        if (due < w->held_due_ms)
          w->held_due_ms = due;
        continue;
      }
      refuse(w, c, k);
    }
    unhold(w, c);
    sent(w, c);
  }
  if (w->held == NULL && w->held_waiting)
    serve_audit_waiting(w, w->held_waiting = 0);
  else if (w->held != NULL && w->held_due_ms == INT64_MAX) /* held by the requests sent above */
    w->held_due_ms = now + bound;
  if (w->audit.len > 0) /* void lines, and the lines of the requests sent above */
    serve_audit_handoff(w);
}
