/*
 * public_keys.c -- the public IDs' key sets (idgen.h, "Public IDs"): read
 * from a key file, made from memory, and new keys written to a file.
 *
 * A key file is text: one line "vN HEX" per key version (N of 1..32, HEX 64
 * hex digits: an AES-256 key), blank lines and '#' comments.  It must be a
 * regular file (a symbolic link is refused: O_NOFOLLOW; a FIFO or a device
 * is opened without waiting, then refused) that group and others have no
 * access to.  A key is never put in a message: errors name
 * the file and the line, never the line's text.  Buffers that held key
 * bytes are wiped (OPENSSL_cleanse) before they are freed.
 *
 * This is the one file of the core that touches files: the key file is the
 * one way in for a key (never a command line), and every front end reads it
 * the same way through here.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_int.h"
#include "public_int.h"

static const char header_text[] =
    "# idgen public-ID keys: one line 'vN HEX' per key version (1..32; the newest\n"
    "# makes public IDs, every one reads them back).  Keep this file mode 0600.\n";

static void wipe_free(void *p, size_t n) {
  if (p != NULL) {
    OPENSSL_cleanse(p, n);
    free(p);
  }
}

void idgen_public_keys_free(idgen_public_keys_t *k) { wipe_free(k, sizeof *k); }

unsigned idgen_public_keys_newest(const idgen_public_keys_t *k) {
  return k != NULL && k->n > 0 ? k->version[k->n - 1] : 0;
}

size_t idgen_public_keys_versions(const idgen_public_keys_t *k, unsigned *out, size_t n) {
  if (k == NULL)
    return 0;
  for (size_t i = 0; i < n && i < k->n; i++)
    out[i] = k->version[i];
  return k->n;
}

void idgen__public_versions_text(const idgen_public_keys_t *k, char *buf, size_t buflen) {
  size_t at = 0;
  if (buflen == 0)
    return;
  buf[0] = '\0';
  for (size_t i = 0; k != NULL && i < k->n && at < buflen; i++) {
    int w = snprintf(buf + at, buflen - at, "%s%u", i ? ", " : "", k->version[i]);
    if (w < 0)
      break;
    at += (size_t)w;
  }
}

/* Sorts the versions (and their keys) ascending; refuses one given twice,
 * returning its index, or -1 when all differ. */
static long sort_versions(idgen_public_keys_t *k) {
  for (size_t i = 1; i < k->n; i++)
    for (size_t j = i; j > 0 && k->version[j - 1] > k->version[j]; j--) {
      unsigned v = k->version[j];
      uint8_t tmp[IDGEN_PUBLIC_KEY_BYTES];
      k->version[j] = k->version[j - 1];
      k->version[j - 1] = v;
      memcpy(tmp, k->key[j], sizeof tmp);
      memcpy(k->key[j], k->key[j - 1], sizeof tmp);
      memcpy(k->key[j - 1], tmp, sizeof tmp);
      OPENSSL_cleanse(tmp, sizeof tmp);
    }
  for (size_t i = 1; i < k->n; i++)
    if (k->version[i] == k->version[i - 1])
      return (long)i;
  return -1;
}

int idgen_public_keys_new(idgen_public_keys_t **out, const unsigned *versions,
                          const uint8_t (*keys)[IDGEN_PUBLIC_KEY_BYTES], size_t n, char *err,
                          size_t errlen) {
  if (out == NULL || (n > 0 && (versions == NULL || keys == NULL)))
    return idgen__err(err, errlen, IDGEN_EINVAL, "public keys: NULL argument");
  *out = NULL;
  if (n == 0 || n > IDGEN_PUBLIC_VERSION_MAX)
    return idgen__err(err, errlen, n == 0 ? IDGEN_EINVAL : IDGEN_ERANGE,
                      "public keys: %zu versions given (1 to %d)", n, IDGEN_PUBLIC_VERSION_MAX);
  for (size_t i = 0; i < n; i++)
    if (versions[i] < 1 || versions[i] > IDGEN_PUBLIC_VERSION_MAX)
      return idgen__err(err, errlen, IDGEN_ERANGE, "public keys: version %u is outside 1..%d",
                        versions[i], IDGEN_PUBLIC_VERSION_MAX);
  idgen_public_keys_t *k = calloc(1, sizeof *k);
  if (k == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "public keys: out of memory");
  k->n = n;
  for (size_t i = 0; i < n; i++) {
    k->version[i] = versions[i];
    memcpy(k->key[i], keys[i], IDGEN_PUBLIC_KEY_BYTES);
  }
  long dup = sort_versions(k);
  if (dup >= 0) {
    unsigned v = k->version[dup];
    idgen_public_keys_free(k);
    return idgen__err(err, errlen, IDGEN_EINVAL, "public keys: version %u given twice", v);
  }
  *out = k;
  return 0;
}

/* ---- parsing --------------------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* One line s[len] that is neither blank nor a comment: "vN HEX".  0, or -1
 * if malformed, -2 if the version is outside 1..32. */
static int parse_line(const char *s, size_t len, unsigned *version, uint8_t key[32]) {
  size_t i = 0;
  while (i < len && is_blank(s[i]))
    i++;
  if (i >= len || s[i] != 'v')
    return -1;
  i++;
  unsigned v = 0;
  size_t digits = 0;
  for (; i < len && s[i] >= '0' && s[i] <= '9' && digits < 3; i++, digits++)
    v = v * 10 + (unsigned)(s[i] - '0');
  if (digits == 0 || digits == 3 || i >= len || !is_blank(s[i]))
    return -1;
  while (i < len && is_blank(s[i]))
    i++;
  if (len - i < 2 * IDGEN_PUBLIC_KEY_BYTES)
    return -1;
  for (size_t j = 0; j < IDGEN_PUBLIC_KEY_BYTES; j++) {
    int hi = hexval(s[i + 2 * j]), lo = hexval(s[i + 2 * j + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    key[j] = (uint8_t)(hi << 4 | lo);
  }
  for (i += 2 * IDGEN_PUBLIC_KEY_BYTES; i < len; i++)
    if (!is_blank(s[i]))
      return -1;
  if (v < 1 || v > IDGEN_PUBLIC_VERSION_MAX)
    return -2;
  *version = v;
  return 0;
}

int idgen__public_keys_parse(idgen_public_keys_t **out, const char *buf, size_t len,
                             const char *name, char *err, size_t errlen) {
  *out = NULL;
  idgen_public_keys_t *k = calloc(1, sizeof *k);
  if (k == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, "%s: out of memory", name);
  int rc = 0;
  size_t line = 0;
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(buf + at, '\n', len - at);
    size_t end = nl != NULL ? (size_t)(nl - buf) : len, i = at;
    line++;
    while (i < end && is_blank(buf[i]))
      i++;
    if (i < end && buf[i] != '#') {
      unsigned v = 0;
      int r =
          k->n < IDGEN_PUBLIC_VERSION_MAX ? parse_line(buf + at, end - at, &v, k->key[k->n]) : -3;
      if (r == -1)
        rc = idgen__err(err, errlen, IDGEN_EPARSE, "%s line %zu: expected 'vN' and %d hex digits",
                        name, line, 2 * IDGEN_PUBLIC_KEY_BYTES);
      else if (r == -2)
        rc = idgen__err(err, errlen, IDGEN_EPARSE, "%s line %zu: the version is outside 1..%d",
                        name, line, IDGEN_PUBLIC_VERSION_MAX);
      else if (r == -3)
        rc = idgen__err(err, errlen, IDGEN_EPARSE, "%s line %zu: more than %d key versions", name,
                        line, IDGEN_PUBLIC_VERSION_MAX);
      if (rc != 0)
        goto fail;
      for (size_t j = 0; j < k->n; j++)
        if (k->version[j] == v) {
          rc = idgen__err(err, errlen, IDGEN_EPARSE, "%s line %zu: version %u is given twice", name,
                          line, v);
          goto fail;
        }
      k->version[k->n++] = v;
    }
    at = end + 1;
  }
  if (k->n == 0) {
    rc = idgen__err(err, errlen, IDGEN_EPARSE, "%s: no key version in the file", name);
    goto fail;
  }
  (void)sort_versions(k);
  *out = k;
  return 0;
fail:
  idgen_public_keys_free(k);
  return rc;
}

/* ---- files ------------------------------------------------------------------ */

/* A file name without a '/' holding 32 hex digits in a row is taken for a
 * key given where its file should be named (IDGEN_PUBLIC_KEY=HEX): refused
 * without being repeated, since the message may reach a log.  (A path with
 * a folder may hold such a run, /var/lib/docker/overlay2/HEX/...) */
static int looks_like_key(const char *path) {
  size_t run = 0;
  if (strchr(path, '/') != NULL)
    return 0;
  for (const char *c = path; *c != '\0'; c++) {
    run = hexval(*c) >= 0 ? run + 1 : 0;
    if (run >= 32)
      return 1;
  }
  return 0;
}

static int key_given_err(char *err, size_t errlen) {
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "the key file's name looks like a key (32 hex digits or more; not shown): "
                    "name the file that holds the key, never give the key itself");
}

/* The key file's bytes into *buf (NUL-terminated, to be wiped and freed),
 * after the checks of idgen_public_keys_load; its owner and mode into *stp
 * if not NULL. */
static int read_key_file(const char *path, char **buf, size_t *len, struct stat *stp, char *err,
                         size_t errlen) {
  *buf = NULL;
  if (looks_like_key(path))
    return key_given_err(err, errlen);
  /* O_NONBLOCK: opening a FIFO no one writes would wait for ever; it is
   * refused below as not a regular file, and reads of a file never block. */
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ELOOP)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "%s is a symbolic link: name the key file itself", path);
    return idgen__err(err, errlen, IDGEN_EINVAL, "cannot open %s: %s", path, strerror(errno));
  }
  struct stat st;
  int rc = 0;
  if (fstat(fd, &st) != 0) {
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "cannot stat %s: %s", path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "%s is not a regular file (mode 0%o)", path,
                    (unsigned)(st.st_mode & 07777));
  } else if ((st.st_mode & 077) != 0) {
    rc = idgen__err(err, errlen, IDGEN_EINVAL,
                    "%s is readable or writable by group or others (mode 0%03o): chmod 600 %s",
                    path, (unsigned)(st.st_mode & 07777), path);
  } else if (st.st_size > IDGEN_PUBLIC_KEYFILE_MAX) {
    rc = idgen__err(err, errlen, IDGEN_EINVAL, "%s is larger than %d bytes: not a key file", path,
                    IDGEN_PUBLIC_KEYFILE_MAX);
  } else if ((*buf = malloc(IDGEN_PUBLIC_KEYFILE_MAX + 1)) == NULL) {
    rc = idgen__err(err, errlen, IDGEN_ENOMEM, "%s: out of memory", path);
  }
  size_t got = 0;
  while (rc == 0) {
    ssize_t r = read(fd, *buf + got, IDGEN_PUBLIC_KEYFILE_MAX + 1 - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      rc = idgen__err(err, errlen, IDGEN_EINVAL, "cannot read %s: %s", path, strerror(errno));
    else if (r == 0)
      break;
    else if ((got += (size_t)r) > IDGEN_PUBLIC_KEYFILE_MAX)
      rc = idgen__err(err, errlen, IDGEN_EINVAL, "%s is larger than %d bytes: not a key file", path,
                      IDGEN_PUBLIC_KEYFILE_MAX);
  }
  close(fd);
  if (rc != 0) {
    wipe_free(*buf, IDGEN_PUBLIC_KEYFILE_MAX + 1);
    *buf = NULL;
    return rc;
  }
  (*buf)[got] = '\0';
  *len = got;
  if (stp != NULL)
    *stp = st;
  return 0;
}

int idgen_public_keys_load(idgen_public_keys_t **out, const char *path, char *err, size_t errlen) {
  if (out == NULL || path == NULL)
    return idgen__err(err, errlen, IDGEN_EINVAL, "public keys: NULL argument");
  *out = NULL;
  char *buf;
  size_t len;
  int rc = read_key_file(path, &buf, &len, NULL, err, errlen);
  if (rc != 0)
    return rc;
  rc = idgen__public_keys_parse(out, buf, len, path, err, errlen);
  wipe_free(buf, IDGEN_PUBLIC_KEYFILE_MAX + 1);
  return rc;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* The folder holding path, opened: -1 if it cannot be. */
static int open_dir(const char *path) {
  char dir[4096];
  const char *slash = strrchr(path, '/');
  if (slash == NULL)
    snprintf(dir, sizeof dir, ".");
  else if (slash == path)
    snprintf(dir, sizeof dir, "/");
  else if ((size_t)(slash - path) < sizeof dir)
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
  else
    return -1;
  return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* fsync of the folder holding path, so that a new name in it lasts. */
static int sync_dir(const char *path) {
  int fd = open_dir(path);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* "vN HEX\n" for key[32] into line (at least 72 bytes): its length. */
static size_t key_line(char *line, unsigned v, const uint8_t key[32]) {
  static const char hex[] = "0123456789abcdef";
  size_t at = (size_t)snprintf(line, 8, "v%u ", v);
  for (int i = 0; i < IDGEN_PUBLIC_KEY_BYTES; i++) {
    line[at++] = hex[key[i] >> 4];
    line[at++] = hex[key[i] & 15];
  }
  line[at++] = '\n';
  return at;
}

/* Writes text[len] to fd, then syncs it: 0 or -1 with errno. */
static int write_sync(int fd, const char *a, size_t alen, const char *b, size_t blen) {
  if (write_all(fd, a, alen) != 0 || write_all(fd, b, blen) != 0 || fsync(fd) != 0)
    return -1;
  return 0;
}

static int generate_new(const char *path, const char *line, size_t linelen, char *err,
                        size_t errlen) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST)
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        "%s is there already: a new key file is never written over a file "
                        "(add a version to it instead)",
                        path);
    return idgen__err(err, errlen, IDGEN_EINVAL, "cannot create %s: %s", path, strerror(errno));
  }
  int bad =
      fchmod(fd, 0600) != 0 || write_sync(fd, header_text, strlen(header_text), line, linelen);
  int saved = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1;
    saved = errno;
  }
  if (bad) {
    unlink(path);
    return idgen__err(err, errlen, IDGEN_EINVAL, "cannot write %s: %s", path, strerror(saved));
  }
  (void)sync_dir(path);
  return 0;
}

/* Removes what an add that died between writing its temporary file and
 * renaming it left beside path (PATH.new-XXXXXX: every key the file
 * held).  Only under the folder's lock, which every add holds from before
 * it makes its temporary file to after the rename: any such file is then
 * a dead add's. */
static void remove_leftovers(int dirfd, const char *path) {
  const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
  size_t bl = strlen(base);
  int fd = dup(dirfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (d == NULL) {
    if (fd >= 0)
      close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strlen(e->d_name) == bl + 11 && strncmp(e->d_name, base, bl) == 0 &&
        strncmp(e->d_name + bl, ".new-", 5) == 0)
      (void)unlinkat(dirfd, e->d_name, 0);
  closedir(d);
}

/* The old file's text, then the new line, to a temporary file renamed over
 * it, with the old file's mode and (where allowed: root) owner, so that a
 * version added by root leaves the file readable by the daemon's user. */
static int generate_add(const char *path, const struct stat *was, const char *old, size_t oldlen,
                        const char *line, size_t linelen, char *err, size_t errlen) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.new-XXXXXX", path) >= (int)sizeof tmp)
    return idgen__err(err, errlen, IDGEN_EINVAL, "%s: the path is too long", path);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    return idgen__err(err, errlen, IDGEN_EINVAL, "cannot create a file beside %s: %s", path,
                      strerror(errno));
  if (fchown(fd, was->st_uid, was->st_gid) != 0) {
    /* Not root: the new file is the caller's, who could read the old one;
     * its mode keeps group and others out either way. */
  }
  int bad = fchmod(fd, was->st_mode & 0700) != 0;
  if (!bad && oldlen > 0 && old[oldlen - 1] != '\n')
    bad = write_all(fd, old, oldlen) != 0 || write_all(fd, "\n", 1) != 0 ||
          write_sync(fd, "", 0, line, linelen) != 0;
  else if (!bad)
    bad = write_sync(fd, old, oldlen, line, linelen) != 0;
  int saved = errno;
  if (close(fd) != 0 && !bad) {
    bad = 1;
    saved = errno;
  }
  if (!bad && rename(tmp, path) != 0) {
    bad = 1;
    saved = errno;
  }
  if (bad) {
    unlink(tmp);
    return idgen__err(err, errlen, IDGEN_EINVAL, "cannot write %s: %s", path, strerror(saved));
  }
  (void)sync_dir(path);
  return 0;
}

int idgen_public_keys_generate(const char *path, int add, unsigned *version, char *err,
                               size_t errlen) {
  if (path == NULL || path[0] == '\0')
    return idgen__err(err, errlen, IDGEN_EINVAL, "public keys: no file named");
  if (looks_like_key(path))
    return key_given_err(err, errlen);
  char *old = NULL;
  size_t oldlen = 0;
  unsigned v = 1;
  uint8_t key[IDGEN_PUBLIC_KEY_BYTES];
  char line[96];
  int rc;
  int lock = -1;
  struct stat was;
  memset(&was, 0, sizeof was);
  if (add) {
    /* Two adds at once would both write newest + 1, and one key would be
     * lost: the folder is locked from the read to the rename (the file
     * itself is replaced, so its lock would not hold). */
    idgen_public_keys_t *k;
    lock = open_dir(path);
    int locked = 0;
    if (lock >= 0)
      while (!(locked = flock(lock, LOCK_EX) == 0) && errno == EINTR)
        ;
    if (locked)
      remove_leftovers(lock, path);
    if ((rc = read_key_file(path, &old, &oldlen, &was, err, errlen)) != 0)
      goto out;
    if ((rc = idgen__public_keys_parse(&k, old, oldlen, path, err, errlen)) != 0)
      goto out;
    v = idgen_public_keys_newest(k) + 1;
    idgen_public_keys_free(k);
    if (v > IDGEN_PUBLIC_VERSION_MAX) {
      rc = idgen__err(err, errlen, IDGEN_ERANGE,
                      "%s holds version %d, the last: remove old versions first", path,
                      IDGEN_PUBLIC_VERSION_MAX);
      goto out;
    }
  }
  if (RAND_bytes(key, sizeof key) != 1) {
    rc = idgen__err(err, errlen, IDGEN_ERANDOM, "public keys: the random source failed");
    goto out;
  }
  size_t linelen = key_line(line, v, key);
  OPENSSL_cleanse(key, sizeof key);
  rc = add ? generate_add(path, &was, old, oldlen, line, linelen, err, errlen)
           : generate_new(path, line, linelen, err, errlen);
  OPENSSL_cleanse(line, sizeof line);
  if (rc == 0 && version != NULL)
    *version = v;
out:
  if (old != NULL)
    wipe_free(old, IDGEN_PUBLIC_KEYFILE_MAX + 1);
  if (lock >= 0)
    close(lock); /* and with it the lock */
  return rc;
}
