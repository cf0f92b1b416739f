/*
 * log.c -- key=value event lines on fd 2.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "idgen.h"

LOG_PRINTF(5, 0)
static void vlog(int64_t ms, const char *level, const char *event, uint64_t suppressed,
                 const char *fmt, va_list ap) {
  char line[1024], ts[IDGEN_TIME_TEXT_MAX];
  idgen_time_format(ms, ts);
  int n = snprintf(line, sizeof line, "ts=%s level=%s event=%s", ts, level, event);
  if (fmt[0] != '\0' && n < (int)sizeof line - 1) {
    line[n++] = ' ';
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    n = m < 0 ? n : n + m;
  }
  if (suppressed && n < (int)sizeof line)
    n += snprintf(line + n, sizeof line - (size_t)n, " suppressed=%llu",
                  (unsigned long long)suppressed);
  if (n > (int)sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  ssize_t w = write(2, line, (size_t)n); /* nowhere to report a failure */
  (void)w;
}

void log_event(const char *level, const char *event, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), level, event, 0, fmt, ap);
  va_end(ap);
}

void log_limited(log_limit_t *l, const char *level, const char *event, const char *fmt, ...) {
  /* The window is the second of the line's own timestamp, so that no
   * second of the log shows more than per_second lines. */
  int64_t ms = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE), sec = ms / 1000;
  uint64_t suppressed = 0;
  pthread_mutex_lock(&l->mu);
  if (sec != l->second) {
    l->second = sec;
    l->count = 0;
  }
  int ok = l->count < l->per_second;
  if (ok) {
    l->count++;
    suppressed = l->suppressed;
    l->suppressed = 0;
  } else {
    l->suppressed++;
  }
  pthread_mutex_unlock(&l->mu);
  if (!ok)
    return;
  va_list ap;
  va_start(ap, fmt);
  vlog(ms, level, event, suppressed, fmt, ap);
  va_end(ap);
}

int log_reopen(const char *path) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -errno;
  int rc = 0;
  if (fd != 2 && dup2(fd, 2) < 0)
    rc = -errno;
  if (fd != 2)
    close(fd);
  return rc;
}

const char *log_quote(const char *s, size_t len, char *buf, size_t n) {
  int plain = len > 0;
  for (size_t i = 0; i < len && plain; i++) {
    unsigned char c = (unsigned char)s[i];
    plain = c > ' ' && c < 0x7f && c != '"' && c != '=' && c != '\\';
  }
  if (plain)
    return idgen_quote(buf, n, s, len, 0); /* nothing to escape; cut if long */
  /* Escaped as every message quotes input, '"' too, so that the value ends
   * at the first '"' (a logfmt reader unquotes \xHH). */
  buf[0] = '"';
  size_t m = strlen(idgen_quote(buf + 1, n - 2, s, len, '"'));
  buf[m + 1] = '"';
  buf[m + 2] = '\0';
  return buf;
}
