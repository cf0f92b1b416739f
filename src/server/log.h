/*
 * log.h -- the daemon's log: one `key=value` line per event, written to
 * file descriptor 2 with a single write(2) so that lines from several threads
 * never interleave.  --log-file points fd 2 at a file; SIGHUP reopens it
 * (log_reopen() replaces fd 2 atomically with dup2).
 */
#ifndef IDGEN_SERVE_LOG_H
#define IDGEN_SERVE_LOG_H

#include <pthread.h>
#include <stdint.h>

#define LOG_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Writes "ts=... level=LEVEL event=EVENT " and the formatted rest. */
void log_event(const char *level, const char *event, const char *fmt, ...) LOG_PRINTF(3, 4);

/* At most `per_second` lines a second for one kind of event; the first line
 * after a suppressed stretch carries suppressed=N. */
typedef struct log_limit {
  pthread_mutex_t mu;
  int64_t second;
  int count, per_second;
  uint64_t suppressed;
} log_limit_t;

#define LOG_LIMIT_INIT(n)                                                                          \
  { PTHREAD_MUTEX_INITIALIZER, 0, 0, (n), 0 }

void log_limited(log_limit_t *l, const char *level, const char *event, const char *fmt, ...)
    LOG_PRINTF(4, 5);

/* Opens `path` for appending and makes it fd 2.  Returns 0 or -errno. */
int log_reopen(const char *path);

/* A value for a log line, into buf[n] (n >= 6); returns buf.  Bare if it
 * is printable ASCII without spaces, '"', '=' or '\\'; else between double
 * quotes, other bytes and '"' and '\\' as \xHH (idgen_quote).  Cut with
 * "..." if it does not fit. */
const char *log_quote(const char *s, size_t len, char *buf, size_t n);

#endif
