/*
 * serve_tls.c -- the daemon's side of TLS (tls_cert; docs/SERVE.md,
 * Authentication and TLS): the context in force and its reload on SIGHUP,
 * each connection's handshake, a step at each of its events (the loop,
 * serve_loop.c, never blocks on it), its certificate's agent, and the
 * counts and logs of handshakes.  OpenSSL's calls are tls.c.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server_int.h"
#include "tls.h"

/* A connection on fd from the context in force (NULL: out of memory). */
static struct ssl_st *tls_conn(serve_daemon_t *s, int fd) {
  pthread_mutex_lock(&s->tls_mu);
  struct ssl_st *ssl = s->tls != NULL ? tls_new(s->tls, fd) : NULL;
  pthread_mutex_unlock(&s->tls_mu);
  return ssl;
}

void serve_tls_reload(serve_daemon_t *s) {
  if (s->tls == NULL)
    return;
  const settings_t *st = &s->cfg->s;
  const char *cert = st->value[SK_TLS_CERT];
  struct ssl_ctx_st *fresh = NULL, *old;
  char err[1200];
  if (tls_ctx_load(cert, st->value[SK_TLS_KEY], st->value[SK_TLS_CLIENT_CA], &fresh, err,
                   sizeof err) < 0) {
    log_event("error", "tls_reload", "cert=%s error=%s action=kept", cert,
              log_quote(err, strlen(err), (char[1300]){0}, 1300));
    return;
  }
  pthread_mutex_lock(&s->tls_mu);
  old = s->tls;
  s->tls = fresh;
  pthread_mutex_unlock(&s->tls_mu);
  tls_ctx_free(old); /* (its connections hold their own references) */
  log_event("info", "tls_reload", "cert=%s", cert);
}

void serve_tls_fini(serve_daemon_t *s) {
  if (s->tls != NULL)
    tls_ctx_free(s->tls);
  s->tls = NULL;
}

/* c's handshake is done: its certificate's agent taken; counted. */
static void established(serve_worker_t *w, serve_conn_t *c) {
  CNT_ADD(w->st.tls_hs[TLS_OK], 1);
  char cn[256];
  if (!tls_peer_cn(c->ssl, cn, sizeof cn))
    return;
  /* A certificate tls_client_ca signed (the handshake fails without one):
   * its holder is authenticated, and its CN, when an agent name, is the
   * caller's agent, as a token's would be. */
  c->cert_authed = 1;
  c->authed = 1;
  size_t n = strlen(cn);
  c->cert_agent = serve_agent_valid(cn, n) ? serve_agent_index(w->srv, cn, n) : AGENT_NONE;
  if (c->cert_agent != AGENT_NONE) {
    c->agent = c->cert_agent;
    c->auth_agent = 1;
  }
}

/* c's handshake failed (err: why): counted, and logged rate-limited. */
static void failed(serve_worker_t *w, serve_conn_t *c, const char *err) {
  CNT_ADD(w->st.tls_hs[TLS_FAIL], 1);
  log_limited(&w->srv->tls_log, "warn", "tls_failed", "proto=%s peer=%s error=%s", c->type->name,
              serve_peer_text(c, (char[64]){0}), log_quote(err, strlen(err), (char[400]){0}, 400));
}

/* Before c's first byte: a TLS client's starts a handshake (c->ssl made);
 * one that speaks plain text is told so in plain text, and finished.
 * 1 when the handshake may go on; else 0 (no byte yet, or finished) or -1
 * (closed). */
static int first_byte(serve_worker_t *w, serve_conn_t *c) {
  unsigned char b;
  ssize_t n = recv(c->fd, &b, 1, MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return 0;
  if (n <= 0) {
    serve_conn_close(w, c, n == 0 ? CR_EOF : serve_conn_io_reason(errno));
    return -1;
  }
  if (!tls_is_handshake_byte(b)) {
    CNT_ADD(w->st.tls_hs[TLS_PLAIN], 1);
    const char *msg = c->type->tls_plain_refusal;
    ssize_t wr = write(c->fd, msg, strlen(msg)); /* (a few bytes: the kernel takes them) */
    (void)wr;
    c->tls_hs = 0;
    c->stop_parsing = 1;
    c->close_reason = CR_TLS;
    return serve_conn_finish(w, c);
  }
  c->ssl = tls_conn(w->srv, c->fd);
  if (c->ssl == NULL) {
    serve_conn_close(w, c, CR_ERROR);
    return -1;
  }
  return 1;
}

int serve_tls_handshake(serve_worker_t *w, serve_conn_t *c) {
  if (c->ssl == NULL) {
    int r = first_byte(w, c);
    if (r <= 0)
      return r;
  }
  char err[300];
  int r = tls_handshake(c->ssl, err, sizeof err);
  if (r == TLS_WANT_READ || r == TLS_WANT_WRITE) {
    serve_conn_events(w, c, r == TLS_WANT_WRITE ? EPOLLOUT : EPOLLIN);
    return 0;
  }
  c->tls_hs = 0;
  if (r == TLS_ABORTED) { /* the client went away: not a failure of ours or its */
    CNT_ADD(w->st.tls_hs[TLS_ABORT], 1);
    serve_conn_close(w, c, strcmp(err, "eof") == 0 ? CR_EOF : CR_RESET);
    return -1;
  }
  if (r == TLS_FAILED) { /* OpenSSL has sent its alert: let the client read it */
    failed(w, c, err);
    tls_free(c->ssl);
    c->ssl = NULL;
    c->stop_parsing = 1;
    c->close_reason = CR_TLS;
    return serve_conn_finish(w, c);
  }
  c->req_start_ms = 0;
  c->active_ms = w->now_ms;
  established(w, c);
  return 1;
}
