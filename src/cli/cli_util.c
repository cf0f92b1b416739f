/*
 * cli_util.c -- helpers shared by the idgen commands.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "settings.h"

CLI_PRINTF(1, 0) static void verror(const char *fmt, va_list ap) {
  fputs("idgen: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

void cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verror(fmt, ap);
  va_end(ap);
}

void cli_fail(int code, const char *fmt, ...) {
  va_list ap;
  cli_flush();
  va_start(ap, fmt);
  verror(fmt, ap);
  va_end(ap);
  exit(code);
}

int64_t cli_int(const char *opt, const char *s, int64_t min, int64_t max) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (*s == '\0' || *end != '\0' || errno != 0 || s[0] == ' ' || s[0] == '+')
    cli_fail(EXIT_USAGE, "%s: \"%s\" is not a whole number", opt, CLI_QUOTED(s));
  if (v < min || v > max)
    cli_fail(EXIT_USAGE, "%s: %lld out of range %" PRId64 "..%" PRId64, opt, v, min, max);
  return v;
}

int cli_count_option(cli_count_t *c, int opt, const char *arg) {
  if (opt == 'n')
    c->n = cli_int("--count", arg, 1, CLI_COUNT_MAX);
  else if (opt == CLI_OPT_JSON)
    c->json = 1;
  else
    return 0;
  return 1;
}

const char *cli_registry_uri(const char *uri, char *def, size_t n) {
  char err[1100] = "";
  if (uri == NULL && idgen_registry_default_uri(def, n, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s", err);
  return uri != NULL ? uri : def;
}

idgen_registry_t *cli_registry_open(const char *cmd, const char *uri, const char *space) {
  char err[1100] = "", def[1100];
  uri = cli_registry_uri(uri, def, sizeof def);
  size_t with_n = strlen(uri) + IDGEN_SPACE_NAME_MAX + 8;
  char *with = malloc(with_n);
  if (with == NULL)
    cli_fail(EXIT_ID, "out of memory");
  if (space != NULL) {
    /* A URI in one of its spaces: the library's ?space=NAME (or &). */
    if (idgen_registry_uri_with_space(uri, space, with, with_n, err, sizeof err) < 0)
      cli_fail(EXIT_USAGE, "%s: --space %s: %s", cmd, CLI_QUOTED(space),
               strncmp(err, "registry: ", 10) == 0 ? err + 10 : err);
    uri = with;
  }
  idgen_registry_t *r;
  int rc = idgen_registry_open(&r, uri, err, sizeof err);
  free(with);
  if (rc < 0)
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  return r;
}

void cli_text_128(const uint8_t id[16], int as_uuid, char *out) {
  if (as_uuid) {
    idgen_uuid_t u;
    memcpy(u.bytes, id, 16);
    idgen_uuid_format(&u, out);
  } else {
    idgen_ulid_t u;
    memcpy(u.bytes, id, 16);
    idgen_ulid_format(&u, out);
  }
}

idgen_clock_mode_t cli_clock(const char *value) {
  idgen_clock_mode_t m;
  if (settings_clock_mode(value, &m) < 0)
    cli_fail(EXIT_USAGE, "--clock: \"%s\" is not a clock (expected " SETTINGS_CLOCK_WORDS ")",
             CLI_QUOTED(value));
  return m;
}

void cli_layout(idgen_layout_t *l, const char *spec) {
  char err[256];
  if (idgen_layout_parse(l, spec, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s", err);
}

const char *cli_layout_name(const idgen_layout_t *l, char *buf, size_t n) {
  if (l->preset[0] != '\0')
    return l->preset;
  if (idgen_layout_format(l, buf, n) < 0) /* cannot happen with IDGEN_LAYOUT_SPEC_MAX */
    cli_fail(EXIT_ID, "layout spec longer than %zu bytes", n);
  return buf;
}

void cli_bad_option(const char *cmd, int opt, const char *arg) {
  char shortopt[3] = {'-', (char)optopt, '\0'};
  /* A long option is named as typed; a short one (also inside a bundle
   * like -mx, where the argv word is the whole bundle) by optopt. */
  const char *name = strncmp(arg, "--", 2) == 0 || optopt == 0 ? arg : shortopt;
  if (opt == '?' || opt == 0)
    cli_fail(EXIT_USAGE, "unknown option %s (see 'idgen %s --help')", CLI_WORD(name), cmd);
  cli_fail(EXIT_USAGE, "option %s needs a value (see 'idgen %s --help')", CLI_WORD(name), cmd);
}

void cli_finish_output(void) {
  cli_flush();
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "idgen: cannot write to standard output: %s\n", strerror(errno));
    exit(EXIT_ID);
  }
}

const char *cli_thousands(uint64_t v, char *buf, size_t n) {
  char tmp[32];
  int len = snprintf(tmp, sizeof tmp, "%" PRIu64, v);
  size_t o = 0;
  for (int i = 0; i < len && o + 2 < n; i++) {
    if (i > 0 && (len - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = tmp[i];
  }
  buf[o] = '\0';
  return buf;
}

static char outbuf[1 << 16];
static size_t outlen;

void cli_flush(void) {
  size_t off = 0;
  while (off < outlen) {
    ssize_t w = write(STDOUT_FILENO, outbuf + off, outlen - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      outlen = 0;
      fprintf(stderr, "idgen: cannot write to standard output: %s\n", strerror(errno));
      exit(EXIT_ID);
    }
    off += (size_t)w;
  }
  outlen = 0;
}

void cli_put_line(const char *s, size_t len) {
  if (outlen + len + 1 > sizeof outbuf)
    cli_flush();
  memcpy(outbuf + outlen, s, len);
  outbuf[outlen + len] = '\n';
  outlen += len + 1;
}

void cli_put_u64_line(uint64_t v) {
  char tmp[24];
  int i = 23;
  tmp[i] = '\n';
  do {
    tmp[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  size_t len = (size_t)(24 - i);
  if (outlen + len > sizeof outbuf)
    cli_flush();
  memcpy(outbuf + outlen, tmp + i, len);
  outlen += len;
}
