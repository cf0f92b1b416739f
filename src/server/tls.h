/*
 * tls.h -- the daemon's TLS (tls_cert, tls_key, tls_client_ca; docs/SERVE.md,
 * Authentication and TLS), on OpenSSL's libssl: the context from the files,
 * and one connection's handshake, reads and writes, non-blocking, as the
 * event loop needs them.
 *
 * A context serves TLS 1.2 and 1.3 only, without renegotiation or
 * compression; with a client CA it asks every client for a certificate
 * signed by it and fails the handshake without one.  Connections release
 * their record buffers while idle (SSL_MODE_RELEASE_BUFFERS), so ten
 * thousand idle clients cost about what they cost in plain text.
 *
 * Reads: tls_read() takes at most one record (16 KiB of plaintext) and is
 * always given room for a whole one, so no plaintext ever waits inside
 * OpenSSL where epoll cannot see it: what is not read yet is in the kernel,
 * and level-triggered epoll reports it.  Writes: tls_write() behaves as
 * write(2) with partial writes; a write that could not finish is finished
 * by the next call, which must start at the first byte not reported sent
 * (the loop's queue does exactly that).
 */
#ifndef IDGEN_SERVE_TLS_H
#define IDGEN_SERVE_TLS_H

#include <stddef.h>
#include <sys/types.h>

struct ssl_ctx_st;
struct ssl_st;

/* The room tls_read() must be given: one record's plaintext. */
#define TLS_RECORD_MAX 16384

/* A context from the PEM files cert (the chain, the server's first), key,
 * and ca (NULL or "": no client certificate asked): 0 with *out (free with
 * tls_ctx_free), or -1 with a message naming the file and what is wrong in
 * err.  The key is refused when others may read or write it.  No message
 * quotes a key. */
int tls_ctx_load(const char *cert, const char *key, const char *ca, struct ssl_ctx_st **out,
                 char *err, size_t errlen);
void tls_ctx_free(struct ssl_ctx_st *ctx);
void tls_ctx_ref(struct ssl_ctx_st *ctx); /* one more owner; each calls tls_ctx_free */

/* A server connection on fd, or NULL (out of memory). */
struct ssl_st *tls_new(struct ssl_ctx_st *ctx, int fd);
void tls_free(struct ssl_st *ssl);

enum { TLS_DONE = 0, TLS_WANT_READ = 1, TLS_WANT_WRITE = 2, TLS_FAILED = -1, TLS_ABORTED = -2 };

/* One step of the handshake: TLS_DONE, TLS_WANT_*, TLS_FAILED with
 * OpenSSL's reason in err, or TLS_ABORTED (the client closed or reset the
 * connection: "eof" or the error in err). */
int tls_handshake(struct ssl_st *ssl, char *err, size_t errlen);

/* The verified client certificate's subject CN into buf[n]: 1; 0: none. */
int tls_peer_cn(struct ssl_st *ssl, char *buf, size_t n);

/* Read and write as read(2) and write(2): bytes, 0 at the end of the
 * stream (read), or -1 with errno EAGAIN (*wants_write set when the
 * read needs the socket writable first), ECONNRESET, or EPROTO. */
ssize_t tls_read(struct ssl_st *ssl, void *buf, size_t cap, int *wants_write);
ssize_t tls_write(struct ssl_st *ssl, const void *buf, size_t len);

/* Sends close_notify once, without waiting for the client's. */
void tls_close_notify(struct ssl_st *ssl);

/* Whether the bytes a client sent first open a TLS handshake. */
static inline int tls_is_handshake_byte(unsigned char b) { return b == 0x16; }

#endif
