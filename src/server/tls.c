/*
 * tls.c -- the daemon's TLS on OpenSSL (see tls.h).
 */
#include "tls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* OpenSSL's reason for the last error of this thread, or `fallback`. */
static const char *ssl_reason(const char *fallback) {
  unsigned long e = ERR_peek_last_error();
  const char *r = e ? ERR_reason_error_string(e) : NULL;
  return r ? r : fallback;
}

/* An encrypted key would make OpenSSL ask on the terminal: it is refused. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return 0;
}

/* The file can be opened for reading (the message names why not). */
static int readable(const char *what, const char *path, char *err, size_t n) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    snprintf(err, n, "%s %s: %s", what, path, strerror(errno));
    return -1;
  }
  fclose(f);
  return 0;
}

int tls_ctx_load(const char *cert, const char *key, const char *ca, SSL_CTX **out, char *err,
                 size_t errlen) {
  *out = NULL;
  struct stat st;
  if (readable("tls_cert", cert, err, errlen) < 0 || readable("tls_key", key, err, errlen) < 0 ||
      (ca != NULL && ca[0] != '\0' && readable("tls_client_ca", ca, err, errlen) < 0))
    return -1;
  if (stat(key, &st) == 0 && (st.st_mode & (S_IROTH | S_IWOTH))) {
    snprintf(err, errlen,
             "tls_key %s: other users may read or write it (mode %04o); "
             "chmod o-rwx %s",
             key, (unsigned)(st.st_mode & 07777), key);
    return -1;
  }
  ERR_clear_error();
  SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == NULL) {
    snprintf(err, errlen, "tls_cert: OpenSSL: %s", ssl_reason("cannot make a context"));
    return -1;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
  static const unsigned char sid[] = "idgen";
  SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
    snprintf(err, errlen, "tls_cert %s: not a PEM certificate chain (OpenSSL: %s)", cert,
             ssl_reason("unreadable"));
    goto fail;
  }
  ERR_clear_error();
  if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
    snprintf(err, errlen, "tls_key %s: not a PEM private key without a passphrase (OpenSSL: %s)",
             key, ssl_reason("unreadable"));
    goto fail;
  }
  ERR_clear_error();
  if (SSL_CTX_check_private_key(ctx) != 1) {
    snprintf(err, errlen, "tls_key %s is not the key of tls_cert %s (OpenSSL: %s)", key, cert,
             ssl_reason("key values mismatch"));
    goto fail;
  }
  if (ca != NULL && ca[0] != '\0') {
    ERR_clear_error();
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
    if (names == NULL || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      snprintf(err, errlen, "tls_client_ca %s: no PEM certificate in it (OpenSSL: %s)", ca,
               ssl_reason("unreadable"));
      goto fail;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  }
  ERR_clear_error();
  *out = ctx;
  return 0;
fail:
  ERR_clear_error();
  SSL_CTX_free(ctx);
  return -1;
}

void tls_ctx_free(SSL_CTX *ctx) { SSL_CTX_free(ctx); }

void tls_ctx_ref(SSL_CTX *ctx) { SSL_CTX_up_ref(ctx); }

SSL *tls_new(SSL_CTX *ctx, int fd) {
  SSL *ssl = SSL_new(ctx);
  if (ssl == NULL)
    return NULL;
  if (SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return NULL;
  }
  SSL_set_accept_state(ssl);
  return ssl;
}

void tls_free(SSL *ssl) { SSL_free(ssl); }

int tls_handshake(SSL *ssl, char *err, size_t errlen) {
  ERR_clear_error();
  errno = 0;
  int r = SSL_do_handshake(ssl);
  if (r == 1)
    return TLS_DONE;
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ)
    return TLS_WANT_READ;
  if (e == SSL_ERROR_WANT_WRITE)
    return TLS_WANT_WRITE;
  if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
    snprintf(err, errlen, "%s", errno ? strerror(errno) : "eof");
    ERR_clear_error();
    return TLS_ABORTED;
  } else {
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK)
      snprintf(err, errlen, "%s: %s", ssl_reason("handshake failed"),
               X509_verify_cert_error_string(v));
    else
      snprintf(err, errlen, "%s", ssl_reason("handshake failed"));
  }
  ERR_clear_error();
  return TLS_FAILED;
}

int tls_peer_cn(SSL *ssl, char *buf, size_t n) {
  X509 *x = SSL_get0_peer_certificate(ssl);
  if (x == NULL || SSL_get_verify_result(ssl) != X509_V_OK || n > INT_MAX)
    return 0;
  int len = X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, (int)n);
  return len > 0 && (size_t)len < n && strlen(buf) == (size_t)len; /* (no NUL inside) */
}

/* errno for a failed SSL_read or SSL_write whose result was r. */
static ssize_t io_failed(SSL *ssl, int r, int *wants_write) {
  int saved = errno;
  int e = SSL_get_error(ssl, r);
  ERR_clear_error();
  switch (e) {
  case SSL_ERROR_ZERO_RETURN:
    return 0;
  case SSL_ERROR_WANT_WRITE:
    if (wants_write != NULL)
      *wants_write = 1;
    errno = EAGAIN;
    return -1;
  case SSL_ERROR_WANT_READ:
    errno = EAGAIN;
    return -1;
  case SSL_ERROR_SYSCALL:
    if (saved == 0) /* the end of the stream, without close_notify */
      return wants_write != NULL ? 0 : (errno = EPIPE, -1);
    errno = saved;
    return -1;
  default:
    errno = EPROTO;
    return -1;
  }
}

ssize_t tls_read(SSL *ssl, void *buf, size_t cap, int *wants_write) {
  ERR_clear_error();
  errno = 0;
  int r = SSL_read(ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
  if (r > 0)
    return r;
  return io_failed(ssl, r, wants_write);
}

ssize_t tls_write(SSL *ssl, const void *buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    size_t left = len - done;
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(ssl, (const char *)buf + done, left > INT_MAX ? INT_MAX : (int)left);
    if (r > 0) {
      done += (size_t)r;
      continue;
    }
    if (done > 0) { /* what went is reported; the failure comes again on the next call */
      ERR_clear_error();
      break;
    }
    ssize_t f = io_failed(ssl, r, NULL);
    if (f == 0) {
      errno = EPIPE;
      f = -1;
    }
    return f;
  }
  return (ssize_t)done;
}

void tls_close_notify(SSL *ssl) {
  ERR_clear_error();
  (void)SSL_shutdown(ssl);
  ERR_clear_error();
}
