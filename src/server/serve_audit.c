/*
 * serve_audit.c -- the audit log (--audit-log): one line per answered
 * Snowflake request, written by a thread of its own so that no event loop
 * ever waits for the file.
 *
 * DESIGN.  Each loop formats its turn's lines into w->audit, without a lock,
 * and at the end of the turn appends them to its lane (a buffer under the
 * lane's mutex) and wakes the writer.  The writer takes each lane's bytes in
 * turn and write()s them; it holds no lock while it writes, so a file that
 * blocks (a frozen file system) or fails (a full one) stops only the writer.
 * The bytes handed over and not yet written are bounded by
 * audit_queue_bytes, and what happens past that is the mode's:
 *
 *   count (the default): IDs keep flowing.  A turn's lines that do not fit
 *     are dropped and counted (lost records and bytes, /metrics, /ready,
 *     /info); the loop puts a line `ms=... lost=N bytes=M reason="..."`
 *     where they would have been, before its next lines that fit.
 *   require: no ID is sent before its line is written.  A reply that
 *     carries IDs is held by its loop (serve_loop.c) until the writer has
 *     written the loop's lines up to its own (serve_audit_written), and for
 *     audit_timeout_ms at most: then the loop sends a refusal in its place
 *     and a line `ms=... void=FIRST count=N ...` after the record says that
 *     its IDs were never sent.  While a write fails, one has waited past
 *     audit_timeout_ms (stalled), or the queue is full, ID requests are
 *     refused at once (503 / -ERR naming the reason).  Lines are never
 *     dropped while the daemon runs.
 *
 * Written means acknowledged: after each round of writes the writer checks
 * that the file it wrote to is still at the path (fstat's link count, and
 * stat of the path against the open file's device and inode) before it
 * counts the bytes as done.  A file removed under it (no link left) is
 * opened again at the path and what was written since the last check is
 * written there again; a file renamed away (rotation without SIGHUP) keeps
 * what was written to it, and the path is opened again for what follows.
 * With nothing to write the check runs every AUDIT_CHECK_MS.
 *
 * In both modes a write that fails keeps its lines and is tried again every
 * AUDIT_RETRY_MS.  A short write (a disk that fills in the middle of a
 * line) leaves a cut line at the end of the file: the writer writes nothing
 * else until that line is complete, so a record is never glued to half of
 * another.  SIGHUP (and a rename found) reopens the file by the writer,
 * after it has completed a cut line (require), or gives up its rest,
 * counted and marked in the new file (count).  At a stop the writer has
 * shutdown_timeout_ms to write what waits; what it cannot is counted and
 * logged (event=audit_lost).
 */
#define _GNU_SOURCE /* pthread_timedjoin_np */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "server_int.h"

#define AUDIT_RETRY_MS 100  /* a failed write is tried again after this */
#define AUDIT_CHECK_MS 250  /* with nothing to write, the file is looked for this often */
#define AUDIT_LOSS_MS 10000 /* /ready says "degraded" this long after a line was lost */

enum { OP_WRITE, OP_OPEN, OP_STAT }; /* what the writer waits in */
static const char *const op_names[] = {"write", "open", "stat"};
static const char *const op_phrases[] = {"a write to", "an open of", "a stat of"};

typedef struct audit_lane {
  pthread_mutex_t mu;
  serve_buf_t q;        /* under mu: the loop's lines not yet taken by the writer */
  uint64_t gap_records; /* the loop's (count): lines dropped since the last that fit */
  uint64_t gap_bytes;
  /* The writer's: lines taken, written up to w_off and acknowledged (found
   * in a file at the path, `done` published) up to ack_off.  w_off is
   * behind ack_off only while what a removed file took is written again. */
  serve_buf_t w;
  size_t w_off, ack_off;
  size_t line_start;     /* where in w the line at w_off begins */
  size_t ack_line;       /* where in w the line at ack_off begins */
  int wakefd;            /* the loop's eventfd (a dup of it), the writer's to close */
  _Atomic uint64_t done; /* bytes of this lane written (or given up at a reopen) */
  atomic_int waiting;    /* the loop holds replies for its lines: wake it */
} audit_lane_t;

struct serve_audit {
  const char *path;
  enum audit_mode mode;
  uint64_t cap;    /* audit_queue_bytes */
  int64_t stop_ms; /* shutdown_timeout_ms: the writer's time at a stop */
  int nlanes;
  audit_lane_t *lanes;
  int64_t stall_ms;      /* audit_timeout_ms: a write waiting longer is a stall */
  int fd;                /* the writer's (the main thread's before it starts) */
  int gone;              /* the writer's: fd's file was removed and the path cannot be opened */
  int wrote;             /* the writer's: bytes written since the last acknowledgment */
  int64_t next_check_ms; /* the writer's: when to look for the file with nothing written */
  int efd;               /* wakes the writer */
  atomic_int kicked, reopen, stop, exited;
  _Atomic uint64_t hups;    /* SIGHUPs the writer has acted on */
  _Atomic uint64_t reopens; /* reopens done: SIGHUP, a file renamed or removed */
  int move_failed;          /* the writer's: a renamed file's path could not be opened (logged) */
  _Atomic int64_t stop_deadline_ms;
  pthread_t thread;
  int thread_on;
  int cut; /* the writer's: the lane whose line is cut in the file, or -1 */
  /* The writer's own loss line, written before anything else: the records
   * and bytes it reports (0: none), its text as rendered, and how much of
   * that is in the file (a reopen renders it again, whole, for the new one). */
  uint64_t mk_records, mk_bytes;
  serve_buf_t marker;
  size_t mk_off;
  /* Figures: relaxed atomics, read by anyone. */
  _Atomic uint64_t made, written, lost, lost_bytes, queued_bytes, errors, refused;
  _Atomic uint64_t timeouts;        /* of refused: held replies refused at audit_timeout_ms */
  _Atomic int64_t blocked_since_ms; /* 0, or when the write (open, stat) in progress began */
  atomic_int busy_op;               /* which: OP_* */
  _Atomic int64_t lost_ms;          /* when a line was last lost (0: never) */
  atomic_int failing;               /* the last write (or open) failed */
  pthread_mutex_t err_mu;
  char error[256];          /* under err_mu: the last failure, in words */
  int64_t failing_since_ms; /* under err_mu */
};

static int64_t now_ms(void) { return serve_mono_ms(); }

/* A loss line, "ms=... lost=N bytes=M reason=..." and its newline, into b. */
static void loss_line(serve_buf_t *b, uint64_t records, uint64_t bytes, const char *why) {
  serve_buf_printf(b, "ms=%" PRId64 " lost=%" PRIu64 " bytes=%" PRIu64 " reason=%s\n",
                   idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), records, bytes,
                   log_quote(why, strlen(why), (char[300]){0}, 300));
}

/* Whether the line at p (which ends with a newline) is a loss line. */
static int is_loss_line(const char *p) {
  if (strncmp(p, "ms=", 3) != 0)
    return 0;
  for (p += 3; *p >= '0' && *p <= '9'; p++)
    ;
  return strncmp(p, " lost=", 6) == 0;
}

/* Whether it is a note rather than a record: a loss line, or a void line
 * (require: a record whose IDs were not sent). */
static int is_note_line(const char *p) {
  if (strncmp(p, "ms=", 3) != 0)
    return 0;
  for (p += 3; *p >= '0' && *p <= '9'; p++)
    ;
  return strncmp(p, " lost=", 6) == 0 || strncmp(p, " void=", 6) == 0;
}

/* The records (lines but notes) in p[0..n), the last line cut or not. */
static uint64_t count_records(const char *p, size_t n) {
  uint64_t r = 0;
  const char *end = p + n;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    char first[48]; /* enough to tell a note, NUL-ended for is_note_line */
    size_t len = (size_t)((nl ? nl : end) - p);
    len = len < sizeof first - 1 ? len : sizeof first - 1;
    memcpy(first, p, len);
    first[len] = '\0';
    r += !is_note_line(first);
    p = nl ? nl + 1 : end;
  }
  return r;
}

/* ---- what the others read -------------------------------------------------- */

enum { T_OK, T_STALLED, T_FAILING, T_FULL }; /* what trouble() found */

/* What keeps the file from taking lines now, with the reason: a write (or
 * open, or stat) waiting for audit_timeout_ms or more (stalled), a failed
 * one, or (require) a full queue; T_OK for none. */
static int trouble(serve_audit_t *a, char *why, size_t n) {
  int64_t since = atomic_load_explicit(&a->blocked_since_ms, memory_order_relaxed), now = now_ms();
  if (since != 0 && now - since >= a->stall_ms) {
    snprintf(why, n,
             "%s %s has been waiting for %" PRId64 " ms (audit_timeout_ms %" PRId64
             "; a frozen or hung file system?)",
             op_phrases[atomic_load(&a->busy_op)], a->path, now - since, a->stall_ms);
    return T_STALLED;
  }
  if (atomic_load_explicit(&a->failing, memory_order_relaxed)) {
    pthread_mutex_lock(&a->err_mu);
    snprintf(why, n, "%s (failing for %" PRId64 " ms)", a->error, now - a->failing_since_ms);
    pthread_mutex_unlock(&a->err_mu);
    return T_FAILING;
  }
  uint64_t q = atomic_load_explicit(&a->queued_bytes, memory_order_relaxed);
  if (a->mode == AUDIT_REQUIRE && q >= a->cap) {
    snprintf(why, n,
             "%" PRIu64 " bytes of lines wait to be written to %s (audit_queue_bytes %" PRIu64 ")",
             q, a->path, a->cap);
    return T_FULL;
  }
  return T_OK;
}

/* How a reason of trouble() begins: a stall says so first. */
static const char *trouble_head(int t) { return t == T_STALLED ? "audit stalled" : "audit log"; }

int serve_audit_refuses(serve_daemon_t *s) {
  serve_audit_t *a = s->audit;
  if (a == NULL || a->mode != AUDIT_REQUIRE)
    return 0;
  char why[8];
  if (trouble(a, why, sizeof why) == T_OK)
    return 0;
  atomic_fetch_add_explicit(&a->refused, 1, memory_order_relaxed);
  return 1;
}

void serve_audit_refusal_text(serve_daemon_t *s, char *buf, size_t n) {
  char why[300] = "";
  int t = s->audit != NULL ? trouble(s->audit, why, sizeof why) : T_OK;
  if (t == T_OK)
    snprintf(why, sizeof why, "it cannot take lines now");
  snprintf(buf, n,
           "%s: %.280s; IDs are not handed out while their lines cannot be written "
           "(audit_mode require)",
           trouble_head(t), why);
}

void serve_audit_timeout_text(serve_daemon_t *s, char *buf, size_t n) {
  serve_audit_t *a = s->audit;
  char why[300];
  int t = trouble(a, why, sizeof why);
  int64_t since = atomic_load_explicit(&a->blocked_since_ms, memory_order_relaxed);
  if (t == T_OK && since != 0) /* the write began after the line: not a stall yet */
    snprintf(why, sizeof why, "%s %s has been waiting for %" PRId64 " ms",
             op_phrases[atomic_load(&a->busy_op)], a->path, now_ms() - since);
  else if (t == T_OK)
    snprintf(why, sizeof why, "the audit writer is behind");
  snprintf(buf, n,
           "%s: this request's line was not written within audit_timeout_ms (%" PRId64
           " ms): %.280s; its IDs are not handed out (audit_mode require)",
           trouble_head(t), a->stall_ms, why);
}

int serve_audit_unhealthy(serve_daemon_t *s, char *why, size_t n) {
  if (s->audit == NULL || s->audit->mode != AUDIT_REQUIRE)
    return 0;
  char t[300];
  int k = trouble(s->audit, t, sizeof t);
  if (k == T_OK)
    return 0;
  snprintf(why, n,
           "%s: %.280s; ID requests are refused until it takes lines again "
           "(audit_mode require)",
           trouble_head(k), t);
  return 1;
}

/* The figures at one look. */
typedef struct audit_figures {
  uint64_t made, written, lost, lost_bytes, queued_bytes, errors, refused, timeouts, reopens;
  int64_t blocked_ms, lost_ago_ms; /* 0: not blocked; -1: never lost */
} audit_figures_t;

static void figures(serve_audit_t *a, audit_figures_t *f) {
  /* Written and lost before made: a line counted as written was made
   * earlier, so queued (made - written - lost) never goes below 0. */
  f->written = atomic_load(&a->written);
  f->lost = atomic_load(&a->lost);
  f->made = atomic_load(&a->made);
  f->lost_bytes = atomic_load(&a->lost_bytes);
  f->queued_bytes = atomic_load(&a->queued_bytes);
  f->errors = atomic_load(&a->errors);
  f->refused = atomic_load(&a->refused);
  f->timeouts = atomic_load(&a->timeouts);
  f->reopens = atomic_load(&a->reopens);
  int64_t since = atomic_load(&a->blocked_since_ms), lost = atomic_load(&a->lost_ms),
          now = now_ms();
  f->blocked_ms = since ? now - since : 0;
  f->lost_ago_ms = lost ? now - lost : -1;
}

static uint64_t queued_records(const audit_figures_t *f) {
  return f->made > f->written + f->lost ? f->made - f->written - f->lost : 0;
}

int serve_audit_degraded(serve_daemon_t *s, char *why, size_t n) {
  serve_audit_t *a = s->audit;
  if (a == NULL || a->mode != AUDIT_COUNT)
    return 0;
  char t[300];
  audit_figures_t f;
  figures(a, &f);
  int k = trouble(a, t, sizeof t);
  if (k != T_OK)
    snprintf(why, n,
             "degraded: %s: %.280s; %" PRIu64 " records lost so far, IDs are still "
             "handed out (audit_mode count)",
             trouble_head(k), t, f.lost);
  else if (f.lost_ago_ms >= 0 && f.lost_ago_ms < AUDIT_LOSS_MS)
    snprintf(why, n,
             "degraded: audit log: %" PRIu64 " records lost so far, the last %" PRId64
             " ms ago (audit_queue_bytes %" PRIu64 " full); IDs are still handed out "
             "(audit_mode count)",
             f.lost, f.lost_ago_ms, a->cap);
  else
    return 0;
  return 1;
}

static const char *state_name(serve_audit_t *a, const audit_figures_t *f) {
  char t[8];
  if (f->blocked_ms >= a->stall_ms)
    return "stalled";
  if (atomic_load_explicit(&a->failing, memory_order_relaxed))
    return "failing";
  if (trouble(a, t, sizeof t) != T_OK)
    return "full";
  if (f->lost_ago_ms >= 0 && f->lost_ago_ms < AUDIT_LOSS_MS)
    return "losing";
  return "ok";
}

void serve_audit_health_line(serve_daemon_t *s, serve_buf_t *b) {
  serve_audit_t *a = s->audit;
  if (a == NULL)
    return;
  audit_figures_t f;
  figures(a, &f);
  serve_buf_printf(b,
                   "audit mode=%s state=%s written=%" PRIu64 " lost=%" PRIu64 " lost_bytes=%" PRIu64
                   " queued=%" PRIu64 " queued_bytes=%" PRIu64 " refused=%" PRIu64
                   " timeouts=%" PRIu64 " reopens=%" PRIu64 "\n",
                   a->mode == AUDIT_REQUIRE ? "require" : "count", state_name(a, &f), f.written,
                   f.lost, f.lost_bytes, queued_records(&f), f.queued_bytes, f.refused, f.timeouts,
                   f.reopens);
}

struct json_t *serve_audit_json(serve_daemon_t *s) {
  serve_audit_t *a = s->audit;
  if (a == NULL)
    return json_null();
  audit_figures_t f;
  figures(a, &f);
  char why[400];
  int bad = a->mode == AUDIT_REQUIRE ? serve_audit_unhealthy(s, why, sizeof why)
                                     : serve_audit_degraded(s, why, sizeof why);
  json_t *o = json_object();
  if (o == NULL)
    return NULL;
  json_object_set_new(o, "path", json_string(a->path));
  json_object_set_new(o, "mode", json_string(a->mode == AUDIT_REQUIRE ? "require" : "count"));
  json_object_set_new(o, "state", json_string(state_name(a, &f)));
  json_object_set_new(o, "reason", bad ? json_string(why) : json_null());
  const struct {
    const char *key;
    uint64_t v;
  } nums[] = {
      {"written", f.written},           {"lost", f.lost},
      {"lost_bytes", f.lost_bytes},     {"queued", queued_records(&f)},
      {"queued_bytes", f.queued_bytes}, {"queue_max_bytes", a->cap},
      {"write_errors", f.errors},       {"refused", f.refused},
      {"timeouts", f.timeouts},         {"timeout_ms", (uint64_t)a->stall_ms},
      {"reopens", f.reopens},           {"blocked_ms", (uint64_t)f.blocked_ms},
  };
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
    json_object_set_new(o, nums[i].key, json_integer((json_int_t)nums[i].v));
  return o;
}

void serve_audit_metrics(serve_daemon_t *s, serve_buf_t *b) {
  serve_audit_t *a = s->audit;
  if (a == NULL)
    return;
  audit_figures_t f;
  figures(a, &f);
  char t[8];
  serve_buf_printf(
      b,
      "# HELP idgen_audit_written_records_total Audit lines written to the file.\n"
      "# TYPE idgen_audit_written_records_total counter\n"
      "idgen_audit_written_records_total %" PRIu64 "\n"
      "# HELP idgen_audit_lost_records_total Audit lines lost: dropped while the queue was full "
      "(audit_mode count), or not written by the end.\n"
      "# TYPE idgen_audit_lost_records_total counter\nidgen_audit_lost_records_total %" PRIu64 "\n"
      "# HELP idgen_audit_lost_bytes_total The bytes of the audit lines lost.\n"
      "# TYPE idgen_audit_lost_bytes_total counter\nidgen_audit_lost_bytes_total %" PRIu64 "\n"
      "# HELP idgen_audit_queued_records Audit lines made and not yet written.\n"
      "# TYPE idgen_audit_queued_records gauge\nidgen_audit_queued_records %" PRIu64 "\n"
      "# HELP idgen_audit_queued_bytes Bytes handed to the audit writer and not yet written "
      "(at most audit_queue_bytes).\n"
      "# TYPE idgen_audit_queued_bytes gauge\nidgen_audit_queued_bytes %" PRIu64 "\n"
      "# HELP idgen_audit_write_errors_total Writes (and opens) of the audit log that failed.\n"
      "# TYPE idgen_audit_write_errors_total counter\nidgen_audit_write_errors_total %" PRIu64 "\n"
      "# HELP idgen_audit_blocked_seconds How long the audit write in progress has been "
      "waiting for the file (0: none waits).\n"
      "# TYPE idgen_audit_blocked_seconds gauge\nidgen_audit_blocked_seconds %.3f\n"
      "# HELP idgen_audit_stalled 1 while an audit write (open, stat) has waited for the file "
      "longer than audit_timeout_ms.\n"
      "# TYPE idgen_audit_stalled gauge\nidgen_audit_stalled %d\n"
      "# HELP idgen_audit_failing 1 while the audit log takes no lines: a write failed, one has "
      "waited past audit_timeout_ms, or (audit_mode require) the queue is full.\n"
      "# TYPE idgen_audit_failing gauge\nidgen_audit_failing %d\n"
      "# HELP idgen_audit_refusals_total ID requests refused because their lines could not be "
      "written (audit_mode require), at once or at audit_timeout_ms.\n"
      "# TYPE idgen_audit_refusals_total counter\nidgen_audit_refusals_total %" PRIu64 "\n"
      "# HELP idgen_audit_timeouts_total ID requests whose reply was held for its line and "
      "refused at audit_timeout_ms (audit_mode require; their IDs were never sent).\n"
      "# TYPE idgen_audit_timeouts_total counter\nidgen_audit_timeouts_total %" PRIu64 "\n"
      "# HELP idgen_audit_reopens_total Times the audit log was opened again: SIGHUP, or its "
      "file found renamed or removed.\n"
      "# TYPE idgen_audit_reopens_total counter\nidgen_audit_reopens_total %" PRIu64 "\n",
      f.written, f.lost, f.lost_bytes, queued_records(&f), f.queued_bytes, f.errors,
      (double)f.blocked_ms / 1000.0, f.blocked_ms >= a->stall_ms, trouble(a, t, sizeof t) != T_OK,
      f.refused, f.timeouts, f.reopens);
}

/* ---- the loops' side --------------------------------------------------------- */

void serve_audit(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh, uint64_t first,
                 size_t reply_start) {
  serve_daemon_t *s = w->srv;
  if (s->audit == NULL)
    return;
  serve_buf_printf(&w->audit, "ms=%" PRId64 " proto=%s first=%" PRIu64 " count=%zu agent=%s\n",
                   idgen_clock_now_ms(IDGEN_CLOCK_FAST), serve_proto_name(sh->proto), first,
                   sh->count, s->agent_names[sh->agent]);
  w->audit_lines++;
  /* In require mode nothing enters the lane but through w->audit (no loss
   * lines): its byte count after this line is where the reply may go, and
   * the reply is noted for a refusal in its place (serve_loop.c). */
  if (s->audit->mode == AUDIT_REQUIRE) {
    c->audit_seq = w->audit_handed + w->audit.len;
    serve_held_reply_t h = {.start = reply_start,
                            .end = w->out.len,
                            .seq = c->audit_seq,
                            .first = first,
                            .held_ms = serve_mono_ms(),
                            .shape = *sh,
                            .closing = c->stop_parsing};
    serve_buf_put(&c->held_ids, &h, sizeof h);
  }
  if (w->audit.len >= 65536)
    serve_audit_handoff(w);
}

void serve_audit_void(serve_worker_t *w, const serve_held_reply_t *h) {
  serve_daemon_t *s = w->srv;
  serve_buf_printf(&w->audit,
                   "ms=%" PRId64 " void=%" PRIu64 " count=%zu proto=%s agent=%s reason=\"its line "
                   "was not written within audit_timeout_ms (%" PRId64 " ms): the IDs were "
                   "not sent\"\n",
                   idgen_clock_now_ms(IDGEN_CLOCK_FAST), h->first, h->shape.count,
                   serve_proto_name(h->shape.proto), s->agent_names[h->shape.agent],
                   s->audit->stall_ms);
}

void serve_audit_timed_out(serve_daemon_t *s, uint64_t n) {
  atomic_fetch_add_explicit(&s->audit->timeouts, n, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->audit->refused, n, memory_order_relaxed);
}

static void kick(serve_audit_t *a) {
  if (!atomic_exchange(&a->kicked, 1)) {
    uint64_t one = 1;
    ssize_t r = write(a->efd, &one, sizeof one);
    (void)r;
  }
}

void serve_audit_handoff(serve_worker_t *w) {
  serve_audit_t *a = w->srv->audit;
  if (a == NULL || (w->audit.len == 0 && a->lanes[w->index].gap_records == 0))
    return;
  audit_lane_t *l = &a->lanes[w->index];
  size_t n = w->audit.len;
  uint64_t lines = w->audit_lines;
  w->audit.len = 0;
  w->audit_lines = 0;
  atomic_fetch_add(&a->made, lines);
  uint64_t q = atomic_fetch_add(&a->queued_bytes, n);
  if (a->mode == AUDIT_COUNT && q + n > a->cap && n > 0) {
    atomic_fetch_sub(&a->queued_bytes, n);
    l->gap_records += lines;
    l->gap_bytes += n;
    atomic_fetch_add(&a->lost_bytes, n);
    atomic_fetch_add(&a->lost, lines);
    atomic_store(&a->lost_ms, now_ms());
  } else {
    serve_buf_t mark = {0};
    if (l->gap_records > 0) { /* where the dropped lines would have been */
      char why[400] = "the file took no lines";
      trouble(a, why, sizeof why);
      char reason[500];
      snprintf(reason, sizeof reason,
               "the audit queue was full (audit_queue_bytes %" PRIu64 "): %s", a->cap, why);
      loss_line(&mark, l->gap_records, l->gap_bytes, reason);
      atomic_fetch_add(&a->queued_bytes, mark.len);
      l->gap_records = l->gap_bytes = 0;
    }
    pthread_mutex_lock(&l->mu);
    if (mark.len > 0)
      serve_buf_put(&l->q, mark.p, mark.len);
    serve_buf_put(&l->q, w->audit.p, n);
    pthread_mutex_unlock(&l->mu);
    w->audit_handed += mark.len + n;
    serve_buf_free(&mark);
    kick(a);
  }
  if (w->audit.cap > SCRATCH_KEEP)
    serve_buf_free(&w->audit);
}

uint64_t serve_audit_written(serve_worker_t *w) {
  return atomic_load_explicit(&w->srv->audit->lanes[w->index].done, memory_order_acquire);
}

void serve_audit_waiting(serve_worker_t *w, int on) {
  if (w->srv->audit != NULL)
    atomic_store(&w->srv->audit->lanes[w->index].waiting, on);
}

/* ---- the writer ---------------------------------------------------------------- */

static void failed(serve_audit_t *a, int err, const char *what) {
  atomic_fetch_add(&a->errors, 1);
  pthread_mutex_lock(&a->err_mu);
  if (!atomic_load(&a->failing))
    a->failing_since_ms = now_ms();
  snprintf(a->error, sizeof a->error, "cannot %s %s: %s", what, a->path, strerror(err));
  pthread_mutex_unlock(&a->err_mu);
  if (!atomic_exchange(&a->failing, 1))
    log_event("error", "audit_log_failed", "audit_log=%s error=\"%s\" queued_bytes=%" PRIu64,
              a->path, strerror(err), (uint64_t)atomic_load(&a->queued_bytes));
}

static void recovered(serve_audit_t *a) {
  if (!atomic_load(&a->failing))
    return;
  pthread_mutex_lock(&a->err_mu);
  int64_t for_ms = now_ms() - a->failing_since_ms;
  pthread_mutex_unlock(&a->err_mu);
  atomic_store(&a->failing, 0);
  log_event("info", "audit_log_recovered", "audit_log=%s failed_ms=%" PRId64 " lost=%" PRIu64,
            a->path, for_ms, (uint64_t)atomic_load(&a->lost));
}

/* A system call on the file begins (its start published: a stall is one
 * that takes audit_timeout_ms), and ends (logged if it stalled). */
static void busy_begin(serve_audit_t *a, int op) {
  atomic_store(&a->busy_op, op);
  atomic_store(&a->blocked_since_ms, now_ms());
}

static void busy_end(serve_audit_t *a) {
  int64_t took = now_ms() - atomic_exchange(&a->blocked_since_ms, 0);
  if (took >= a->stall_ms)
    log_event("warn", "audit_log_blocked", "audit_log=%s blocked_ms=%" PRId64 " op=%s", a->path,
              took, op_names[atomic_load(&a->busy_op)]);
}

/* write(2), timed; -1 with errno on failure (a write of nothing counts as
 * EIO: it would be tried for ever). */
static ssize_t timed_write(serve_audit_t *a, const char *p, size_t n) {
  busy_begin(a, OP_WRITE);
  ssize_t r;
  do
    r = write(a->fd, p, n);
  while (r < 0 && errno == EINTR);
  int e = r == 0 ? EIO : errno;
  busy_end(a);
  if (r > 0)
    a->wrote = 1;
  errno = e;
  return r > 0 ? r : -1;
}

/* The path opened for appending (made if missing), timed: the fd, or -1
 * with errno.  O_APPEND also puts the lines after a truncation (logrotate's
 * copytruncate) at the start of the file, not at the old offset. */
static int open_path(serve_audit_t *a) {
  busy_begin(a, OP_OPEN);
  int fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  int e = errno;
  busy_end(a);
  errno = e;
  return fd;
}

enum { FILE_SAME, FILE_MOVED, FILE_GONE };

/* Where the file the writer has open is: still at the path (FILE_SAME, also
 * when it cannot tell), renamed away so that the path names another file or
 * none (FILE_MOVED: rotation; what it took stays in it), or removed, no name
 * left (FILE_GONE: what it took is gone with it).  The path is looked up
 * only when `path` is set (every AUDIT_CHECK_MS): a rename loses nothing, so
 * after each round of writes the link count alone decides what is
 * acknowledged. */
static int file_where(serve_audit_t *a, int path) {
  struct stat fs, ps;
  busy_begin(a, OP_STAT);
  int rf = fstat(a->fd, &fs), rp = 0, e = 0;
  if (path && rf == 0 && fs.st_nlink > 0) {
    rp = stat(a->path, &ps);
    e = errno;
  }
  busy_end(a);
  if (path)
    a->next_check_ms = now_ms() + AUDIT_CHECK_MS;
  if (rf != 0)
    return FILE_SAME;
  if (fs.st_nlink == 0)
    return FILE_GONE;
  if (!path)
    return FILE_SAME;
  if (rp != 0)
    return e == ENOENT || e == ENOTDIR ? FILE_MOVED : FILE_SAME;
  return ps.st_dev == fs.st_dev && ps.st_ino == fs.st_ino ? FILE_SAME : FILE_MOVED;
}

/* n bytes of lane l written at w_off, not yet acknowledged. */
static void wrote(audit_lane_t *l, size_t n) {
  const char *nl = memrchr(l->w.p + l->w_off, '\n', n);
  if (nl != NULL)
    l->line_start = (size_t)(nl + 1 - l->w.p);
  l->w_off += n;
}

/* Lane l's bytes written since its last acknowledgment are in a file at the
 * path, or in the one it was renamed to: counted, published as done, and
 * the loop told if it waits for them. */
static void ack_lane(serve_audit_t *a, audit_lane_t *l) {
  if (l->w_off <= l->ack_off)
    return;
  size_t n = l->w_off - l->ack_off;
  const char *p = l->w.p + l->ack_off, *end = l->w.p + l->w_off;
  uint64_t records = 0;
  for (const char *nl; p < end && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL; p = nl + 1) {
    records += !is_note_line(l->w.p + l->ack_line);
    l->ack_line = (size_t)(nl + 1 - l->w.p);
  }
  l->ack_off = l->w_off;
  atomic_fetch_sub(&a->queued_bytes, n);
  atomic_fetch_add(&a->written, records);
  atomic_store_explicit(&l->done, atomic_load_explicit(&l->done, memory_order_relaxed) + n,
                        memory_order_release);
  if (atomic_load(&l->waiting)) {
    uint64_t one = 1;
    ssize_t r = write(l->wakefd, &one, sizeof one);
    (void)r;
  }
}

/* What was written since the last look is where it belongs: acknowledged. */
static void ack_all(serve_audit_t *a) {
  for (int i = 0; i < a->nlanes; i++)
    ack_lane(a, &a->lanes[i]);
  if (a->marker.len > 0 && a->mk_off == a->marker.len) {
    a->marker.len = a->mk_off = 0;
    a->mk_records = a->mk_bytes = 0;
  }
  a->wrote = 0;
}

/* Writes the writer's loss line, which must come first: 0 when it is out
 * (or there is none), -1.  It is dropped once acknowledged (ack_all). */
static int write_marker(serve_audit_t *a) {
  if (a->mk_records == 0 && a->mk_bytes == 0)
    return 0;
  if (a->marker.len == 0) {
    loss_line(&a->marker, a->mk_records, a->mk_bytes,
              "lines cut by a failed write and left "
              "incomplete in the file reopened away from (SIGHUP)");
    a->mk_off = 0;
  }
  while (a->mk_off < a->marker.len) {
    ssize_t n = timed_write(a, a->marker.p + a->mk_off, a->marker.len - a->mk_off);
    if (n < 0) {
      failed(a, errno, "write");
      return -1;
    }
    a->mk_off += (size_t)n;
  }
  return 0;
}

/* Writes lane i's lines (taking what the loop has handed once all taken
 * are acknowledged): 0 when they are all out, -1 when a write failed (they
 * stay). */
static int write_lane(serve_audit_t *a, int i) {
  audit_lane_t *l = &a->lanes[i];
  if (l->ack_off == l->w.len) {
    l->w.len = l->w_off = l->ack_off = l->line_start = l->ack_line = 0;
    if (l->w.cap > SCRATCH_KEEP)
      serve_buf_free(&l->w);
    pthread_mutex_lock(&l->mu);
    serve_buf_t t = l->q;
    l->q = l->w;
    l->w = t;
    pthread_mutex_unlock(&l->mu);
    if (l->w.len == 0)
      return 0;
  }
  while (l->w_off < l->w.len) {
    ssize_t n = timed_write(a, l->w.p + l->w_off, l->w.len - l->w_off);
    if (n < 0) {
      failed(a, errno, "write");
      return -1;
    }
    wrote(l, (size_t)n);
    /* A write that ends inside a line leaves it cut in the file: nothing
     * but its rest may follow it. */
    a->cut = l->w.p[l->w_off - 1] == '\n' ? -1 : i;
  }
  return 0;
}

/* One round: the loss line, a cut line's lane, then every lane.  0 when
 * everything taken is out, -1 when a write failed. */
static int write_round(serve_audit_t *a) {
  if (write_marker(a) < 0)
    return -1;
  if (a->cut >= 0 && write_lane(a, a->cut) < 0)
    return -1;
  for (int i = 0; i < a->nlanes; i++)
    if (write_lane(a, i) < 0)
      return -1;
  recovered(a);
  return 0;
}

/* fd's file was removed: the path is opened again (made), and what the
 * removed file took since the last acknowledgment is written there again,
 * from the start of its line.  0, or -1: the path cannot be opened (failing:
 * nothing is written until it can, tried again every AUDIT_RETRY_MS). */
static int reopen_gone(serve_audit_t *a, const char *why) {
  int fd = open_path(a);
  if (fd < 0) {
    int e = errno;
    if (!a->gone)
      log_event("error", "reopen_audit_log", "%s audit_log=%s error=\"%s\"", why, a->path,
                strerror(e));
    failed(a, e, "reopen");
    a->gone = 1;
    return -1;
  }
  close(a->fd);
  a->fd = fd;
  size_t again = 0;
  for (int i = 0; i < a->nlanes; i++) {
    audit_lane_t *l = &a->lanes[i];
    again += l->w_off - l->ack_line;
    l->w_off = l->line_start = l->ack_line;
  }
  again += a->mk_off;
  a->mk_off = 0;
  a->cut = -1;
  a->gone = 0;
  a->wrote = 0;
  log_event("warn", "reopen_audit_log", "%s audit_log=%s written_again_bytes=%zu", why, a->path,
            again);
  atomic_fetch_add(&a->reopens, 1);
  return 0;
}

/* SIGHUP (why "signal=HUP"), or the file found renamed away ("reason=
 * renamed"): the same path, a new file under it; what the old one took
 * stays there.  Returns 0 when done (or when it failed: a renamed file takes
 * lines still, and the next look tries again), -1 when it must wait
 * (require: a cut line to complete in the old file). */
static int reopen(serve_audit_t *a, const char *why) {
  if (a->cut >= 0)
    write_lane(a, a->cut);             /* one more try to complete it where it began */
  if (file_where(a, 1) == FILE_GONE) { /* removed, not renamed */
    reopen_gone(a, why);
    return 0;
  }
  ack_all(a);
  if (a->cut >= 0 && a->mode == AUDIT_REQUIRE)
    return -1; /* its reply waits for it: the old file keeps it */
  int signalled = strcmp(why, "signal=HUP") == 0;
  int fd = open_path(a);
  int e = errno;
  if (fd < 0) {
    if (signalled)
      failed(a, e, "reopen");
    else
      atomic_fetch_add(&a->errors, 1);
    if (signalled || !a->move_failed)
      log_event("error", "reopen_audit_log", "%s audit_log=%s error=\"%s\"", why, a->path,
                strerror(e));
    a->move_failed = !signalled;
    return 0; /* the old file goes on, a cut line in it still to be completed */
  }
  a->move_failed = 0;
  close(a->fd);
  a->fd = fd;
  /* count: what is cut in the old file stays there, half; the new file gets
   * a loss line for it, whole.  The writer's own loss line, if the old file
   * has part of it, is rendered again, whole, for the new one. */
  a->marker.len = a->mk_off = 0;
  if (a->cut >= 0) {
    audit_lane_t *l = &a->lanes[a->cut];
    const char *p = l->w.p + l->w_off, *line = l->w.p + l->line_start;
    const char *nl = memchr(p, '\n', l->w.len - l->w_off); /* lines are handed whole */
    size_t rest = (size_t)(nl + 1 - p);
    unsigned long long rec = 1, bytes = rest;
    if (is_loss_line(line)) { /* what it reported goes to the new file's */
      rec = bytes = 0;
      sscanf(strstr(line, " lost="), " lost=%llu bytes=%llu", &rec, &bytes);
    } else {
      atomic_fetch_add(&a->lost, 1);
      atomic_fetch_add(&a->lost_bytes, rest);
      atomic_store(&a->lost_ms, now_ms());
    }
    a->mk_records += rec;
    a->mk_bytes += bytes;
    l->w_off += rest;
    l->line_start = l->ack_off = l->ack_line = l->w_off;
    atomic_fetch_sub(&a->queued_bytes, rest);
    atomic_store_explicit(&l->done, atomic_load_explicit(&l->done, memory_order_relaxed) + rest,
                          memory_order_release);
    a->cut = -1;
  }
  log_event("info", "reopen_audit_log", "%s audit_log=%s", why, a->path);
  atomic_fetch_add(&a->reopens, 1);
  return 0;
}

/* What is left at the end: counted as lost and logged. */
static void give_up(serve_audit_t *a) {
  uint64_t records = 0, bytes = 0;
  for (int i = 0; i < a->nlanes; i++) {
    audit_lane_t *l = &a->lanes[i];
    pthread_mutex_lock(&l->mu);
    if (l->w.len > l->ack_off)
      records += count_records(l->w.p + l->ack_off, l->w.len - l->ack_off);
    if (l->q.len > 0)
      records += count_records(l->q.p, l->q.len);
    bytes += l->w.len - l->ack_off + l->q.len;
    pthread_mutex_unlock(&l->mu);
  }
  if (records == 0 && bytes == 0)
    return;
  atomic_fetch_add(&a->lost, records);
  atomic_fetch_add(&a->lost_bytes, bytes);
  char why[400] = "";
  if (trouble(a, why, sizeof why) == T_OK)
    snprintf(why, sizeof why, "not written within shutdown_timeout_ms");
  log_event("error", "audit_lost", "audit_log=%s records=%" PRIu64 " bytes=%" PRIu64 " reason=%s",
            a->path, records, bytes, log_quote(why, strlen(why), (char[500]){0}, 500));
}

static void *writer_main(void *arg) {
  serve_audit_t *a = arg;
  int reopen_due = 0;
  for (;;) {
    int stop = atomic_load(&a->stop);
    if (atomic_exchange(&a->reopen, 0))
      reopen_due = 1;
    if (reopen_due && reopen(a, "signal=HUP") == 0) {
      reopen_due = 0;
      atomic_fetch_add(&a->hups, 1);
    }
    if (a->gone)
      reopen_gone(a, "reason=removed");
    atomic_store(&a->kicked, 0); /* before the lanes are read: a later hand-off kicks again */
    int rc = a->gone ? -1 : write_round(a);
    /* Nothing counts as written before the file is known to be at the path
     * still: a removed one's lines are written again to the new file. */
    int64_t now = now_ms();
    if (!a->gone && (a->wrote || now >= a->next_check_ms)) {
      int where = file_where(a, now >= a->next_check_ms);
      if (where == FILE_GONE) {
        if (reopen_gone(a, "reason=removed") == 0)
          continue;
        rc = -1;
      } else {
        ack_all(a);
        if (where == FILE_MOVED)
          reopen(a, "reason=renamed"); /* (one that must wait is tried at the next look) */
      }
    }
    if (stop && ((rc == 0 && atomic_load(&a->queued_bytes) == 0) ||
                 now_ms() >= atomic_load(&a->stop_deadline_ms)))
      break;
    struct pollfd p = {.fd = a->efd, .events = POLLIN};
    int wait = rc < 0 || reopen_due ? AUDIT_RETRY_MS : stop ? 10 : AUDIT_CHECK_MS;
    if (poll(&p, 1, wait) > 0) {
      uint64_t v;
      ssize_t r = read(a->efd, &v, sizeof v);
      (void)r;
    }
  }
  give_up(a);
  atomic_store(&a->exited, 1);
  return NULL;
}

/* ---- start and stop ---------------------------------------------------------- */

int serve_audit_open(serve_daemon_t *s) {
  const serve_config_t *cfg = s->cfg;
  if (cfg->audit_log[0] == '\0')
    return 0;
  serve_audit_t *a = calloc(1, sizeof *a);
  if (a == NULL) {
    fprintf(stderr, "idgen: serve: audit_log: out of memory\n");
    return -1;
  }
  a->path = cfg->audit_log;
  a->mode = cfg->audit_mode;
  a->cap = (uint64_t)cfg->audit_queue_bytes;
  a->stop_ms = cfg->shutdown_timeout_ms;
  a->stall_ms = cfg->audit_timeout_ms;
  a->cut = -1;
  a->efd = -1;
  pthread_mutex_init(&a->err_mu, NULL);
  a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (a->fd < 0) {
    fprintf(stderr, "idgen: serve: audit_log %s: %s\n", a->path, strerror(errno));
    pthread_mutex_destroy(&a->err_mu);
    free(a);
    return -1;
  }
  s->audit = a;
  return 0;
}

int serve_audit_start(serve_daemon_t *s) {
  serve_audit_t *a = s->audit;
  if (a == NULL)
    return 0;
  a->nlanes = s->nworkers;
  a->lanes = calloc((size_t)a->nlanes, sizeof *a->lanes);
  if (a->lanes == NULL)
    goto fail;
  for (int i = 0; i < a->nlanes; i++) {
    a->lanes[i].wakefd = -1;
    pthread_mutex_init(&a->lanes[i].mu, NULL);
  }
  for (int i = 0; i < a->nlanes; i++) {
    a->lanes[i].wakefd = fcntl(s->workers[i].wakefd, F_DUPFD_CLOEXEC, 0);
    if (a->lanes[i].wakefd < 0)
      goto fail;
  }
  if ((a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
    goto fail;
  if (pthread_create(&a->thread, NULL, writer_main, a) != 0)
    goto fail;
  a->thread_on = 1;
  return 0;
fail:
  fprintf(stderr, "idgen: serve: cannot start the audit log's writer: %s\n", strerror(errno));
  return -1;
}

void serve_audit_reopen(serve_daemon_t *s) {
  serve_audit_t *a = s->audit;
  if (a == NULL || !a->thread_on)
    return;
  uint64_t before = atomic_load(&a->hups);
  atomic_store(&a->reopen, 1);
  atomic_store(&a->kicked, 1);
  uint64_t one = 1;
  ssize_t r = write(a->efd, &one, sizeof one);
  (void)r;
  /* Done by the writer, which may be held by the file: its own line says
   * when.  Waited for a little, so that a log reopened next shows it. */
  for (int i = 0; i < 500 && atomic_load(&a->hups) == before; i++)
    nanosleep(&(struct timespec){0, 2000000}, NULL);
  if (atomic_load(&a->hups) == before)
    log_event("warn", "reopen_audit_log",
              "signal=HUP audit_log=%s state=pending "
              "reason=\"the audit writer is waiting for the file (a blocked write, or a cut line "
              "to complete first); it reopens it after\"",
              a->path);
}

/* Frees what the writer no longer uses (it has ended, or never began). */
static void audit_free(serve_audit_t *a) {
  for (int i = 0; a->lanes != NULL && i < a->nlanes; i++) {
    audit_lane_t *l = &a->lanes[i];
    serve_buf_free(&l->q);
    serve_buf_free(&l->w);
    if (l->wakefd >= 0)
      close(l->wakefd);
    pthread_mutex_destroy(&l->mu);
  }
  free(a->lanes);
  serve_buf_free(&a->marker);
  if (a->efd >= 0)
    close(a->efd);
  if (a->fd >= 0)
    close(a->fd);
  pthread_mutex_destroy(&a->err_mu);
  free(a);
}

void serve_audit_stop(serve_daemon_t *s) {
  serve_audit_t *a = s->audit;
  if (a == NULL)
    return;
  if (a->thread_on) {
    int64_t deadline = now_ms() + a->stop_ms;
    atomic_store(&a->stop_deadline_ms, deadline);
    atomic_store(&a->stop, 1);
    uint64_t one = 1;
    ssize_t r = write(a->efd, &one, sizeof one);
    (void)r;
    /* The writer ends by the deadline unless a write holds it (a frozen
     * file system): then it is left, and the process ends without it. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    int64_t wait_ms = deadline - now_ms() + 500;
    until.tv_sec += (time_t)(wait_ms / 1000);
    until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(a->thread, NULL, &until) != 0) {
      audit_figures_t f;
      figures(a, &f);
      char why[400] = "";
      trouble(a, why, sizeof why);
      log_event("error", "audit_lost",
                "audit_log=%s records=%" PRIu64 " bytes=%" PRIu64 " reason=%s", a->path,
                queued_records(&f), f.queued_bytes,
                log_quote(why, strlen(why), (char[500]){0}, 500));
      s->audit = NULL; /* the writer still uses it: never freed */
      return;
    }
  }
  audit_figures_t f;
  figures(a, &f);
  if (f.lost > 0) /* after the fact: the file's lost= lines and this say where and how many */
    log_event("warn", "audit_summary",
              "audit_log=%s written=%" PRIu64 " lost=%" PRIu64 " lost_bytes=%" PRIu64, a->path,
              f.written, f.lost, f.lost_bytes);
  s->audit = NULL;
  audit_free(a);
}
