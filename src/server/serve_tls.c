/*
 * serve_tls.c -- the daemon's side of TLS (tls_cert; SPEC §13): the context
 * in force and its reload on SIGHUP, a connection's certificate agent, and
 * the counts and logs of handshakes.  OpenSSL's calls are tls.c; the loop
 * (serve_loop.c) drives each handshake without blocking.
 */
#include <pthread.h>
#include <string.h>

#include "server_int.h"
#include "tls.h"

struct ssl_st *serve_tls_conn(serve_daemon_t *s, int fd) {
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

const char *serve_tls_plain_refusal(int proto) {
  if (proto == PROTO_RESP)
    return "-ERR this port speaks TLS: connect with TLS (redis-cli --tls, rediss://)\r\n";
  return "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
         "X-Content-Type-Options: nosniff\r\nContent-Length: 47\r\nConnection: close\r\n\r\n"
         "this port speaks TLS: use https:// to reach it\n";
}

void serve_tls_established(serve_worker_t *w, serve_conn_t *c) {
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

void serve_tls_failed(serve_worker_t *w, serve_conn_t *c, const char *err) {
  CNT_ADD(w->st.tls_hs[TLS_FAIL], 1);
  log_limited(&w->srv->tls_log, "warn", "tls_failed", "proto=%s peer=%s error=%s",
              serve_proto_name(c->proto), serve_peer_text(c, (char[64]){0}),
              log_quote(err, strlen(err), (char[400]){0}, 400));
}
