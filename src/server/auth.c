/*
 * auth.c -- the daemon's tokens: the auth file's parser and the lookup
 * (auth.h).  The digests are libcrypto's SHA-256, compared with
 * CRYPTO_memcmp.
 */
#include "auth.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server_int.h"

#define DIGEST 32

typedef struct auth_entry {
  char agent[AGENT_NAME_MAX + 1];
  unsigned char digest[DIGEST];
} auth_entry_t;

struct serve_auth {
  int n;
  auth_entry_t e[];
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (errlen > 0)
    vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static int digest_of(const char *tok, size_t len, unsigned char out[DIGEST]) {
  unsigned int n = 0;
  return EVP_Digest(tok, len, out, &n, EVP_sha256(), NULL) == 1 && n == DIGEST ? 0 : -1;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

int serve_auth_parse(const char *path, const char *text, size_t len, serve_auth_t **out, char *err,
                     size_t errlen) {
  *out = NULL;
  int lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += text[i] == '\n';
  if (lines + 1 > AUTH_MAX_ENTRIES * 4)
    return fail(err, errlen, "auth file %s: more than %d lines", path, AUTH_MAX_ENTRIES * 4);
  serve_auth_t *a = calloc(1, sizeof *a + (size_t)(lines + 1) * sizeof a->e[0]);
  if (a == NULL)
    return fail(err, errlen, "auth file %s: out of memory", path);
  int lineno = 0;
  for (size_t at = 0; at < len;) {
    const char *line = text + at;
    const char *nl = memchr(line, '\n', len - at);
    size_t ll = nl ? (size_t)(nl - line) : len - at;
    at += ll + (nl != NULL);
    lineno++;
    size_t p = 0;
    while (p < ll && is_blank(line[p]))
      p++;
    if (p == ll || line[p] == '#')
      continue;
    size_t a0 = p;
    while (p < ll && !is_blank(line[p]))
      p++;
    size_t alen = p - a0;
    while (p < ll && is_blank(line[p]))
      p++;
    size_t t0 = p;
    while (p < ll && !is_blank(line[p]))
      p++;
    size_t tlen = p - t0;
    while (p < ll && is_blank(line[p]))
      p++;
    if (tlen == 0 || p != ll) {
      serve_auth_free(a);
      return fail(err, errlen, "auth file %s, line %d: expected AGENT TOKEN (two words)", path,
                  lineno);
    }
    if (!serve_agent_valid(line + a0, alen)) {
      serve_auth_free(a);
      return fail(err, errlen,
                  "auth file %s, line %d: the agent is not an agent name (a letter, then up to "
                  "%d letters, digits and -)",
                  path, lineno, AGENT_NAME_MAX - 1);
    }
    char agent[AGENT_NAME_MAX + 1];
    memcpy(agent, line + a0, alen);
    agent[alen] = '\0';
    if (tlen < AUTH_TOKEN_MIN || tlen > AUTH_TOKEN_MAX) {
      serve_auth_free(a);
      return fail(err, errlen,
                  "auth file %s, line %d: %s's token is %zu characters: %d to %d (openssl rand "
                  "-hex 32 makes one)",
                  path, lineno, agent, tlen, AUTH_TOKEN_MIN, AUTH_TOKEN_MAX);
    }
    for (size_t i = t0; i < t0 + tlen; i++)
      if (line[i] < '!' || line[i] > '~') {
        serve_auth_free(a);
        return fail(err, errlen,
                    "auth file %s, line %d: %s's token has a byte that is not visible ASCII "
                    "('!' to '~')",
                    path, lineno, agent);
      }
    if (a->n >= AUTH_MAX_ENTRIES) {
      serve_auth_free(a);
      return fail(err, errlen, "auth file %s: more than %d agents", path, AUTH_MAX_ENTRIES);
    }
    auth_entry_t *e = &a->e[a->n];
    memcpy(e->agent, agent, alen + 1);
    if (digest_of(line + t0, tlen, e->digest) < 0) {
      serve_auth_free(a);
      return fail(err, errlen, "auth file %s: SHA-256 failed (libcrypto)", path);
    }
    for (int k = 0; k < a->n; k++) {
      if (strcmp(a->e[k].agent, agent) == 0) {
        serve_auth_free(a);
        return fail(err, errlen, "auth file %s, line %d: agent %s is named twice", path, lineno,
                    agent);
      }
      if (memcmp(a->e[k].digest, e->digest, DIGEST) == 0) {
        fail(err, errlen,
             "auth file %s, line %d: %s has the token of %s (each agent needs its own)", path,
             lineno, agent, a->e[k].agent);
        serve_auth_free(a);
        return -1;
      }
    }
    a->n++;
  }
  if (a->n == 0) {
    serve_auth_free(a);
    return fail(err, errlen, "auth file %s has no AGENT TOKEN line", path);
  }
  *out = a;
  return 0;
}

int serve_auth_load(const char *path, serve_auth_t **out, char *err, size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    return fail(err, errlen, "auth file %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return fail(err, errlen, "auth file %s is not a regular file", path);
  }
  if (st.st_mode & (S_IROTH | S_IWOTH)) {
    close(fd);
    return fail(err, errlen,
                "auth file %s may be %s by any user (mode %04o): its tokens are secrets "
                "(chmod o-rwx %s)",
                path, st.st_mode & S_IROTH ? "read" : "written", (unsigned)(st.st_mode & 07777),
                path);
  }
  if (st.st_size > AUTH_FILE_MAX) {
    close(fd);
    return fail(err, errlen, "auth file %s is over %d bytes", path, AUTH_FILE_MAX);
  }
  char *text = malloc((size_t)st.st_size + 1);
  size_t got = 0;
  while (text != NULL && got < (size_t)st.st_size) {
    ssize_t r = read(fd, text + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  int saved = errno;
  close(fd);
  if (text == NULL)
    return fail(err, errlen, "auth file %s: out of memory", path);
  if (got < (size_t)st.st_size) {
    free(text);
    return fail(err, errlen, "auth file %s: %s", path,
                saved ? strerror(saved) : "it shrank while read");
  }
  int rc = serve_auth_parse(path, text, got, out, err, errlen);
  OPENSSL_cleanse(text, got);
  free(text);
  return rc;
}

int serve_auth_check(const serve_auth_t *a, const char *agent, size_t alen, const char *tok,
                     size_t tlen) {
  unsigned char d[DIGEST];
  if (a == NULL || tlen > AUTH_TOKEN_MAX || digest_of(tok, tlen, d) < 0)
    return -1;
  int found = -1;
  for (int i = 0; i < a->n; i++) {
    int same = CRYPTO_memcmp(a->e[i].digest, d, DIGEST) == 0;
    if (agent != NULL)
      same &= strlen(a->e[i].agent) == alen && memcmp(a->e[i].agent, agent, alen) == 0;
    found = same ? i : found;
  }
  return found;
}

const char *serve_auth_agent(const serve_auth_t *a, int i) { return a->e[i].agent; }

int serve_auth_count(const serve_auth_t *a) { return a ? a->n : 0; }

void serve_auth_free(serve_auth_t *a) {
  if (a == NULL)
    return;
  OPENSSL_cleanse(a, sizeof *a + (size_t)a->n * sizeof a->e[0]);
  free(a);
}
