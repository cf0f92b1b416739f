/*
 * serve_auth.c -- the daemon's side of auth_file (SPEC §13): who the caller
 * is, failures counted and logged, and the file read again on SIGHUP.  The
 * file's parser and the constant-time lookup are auth.c.
 */
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "server_int.h"

int serve_auth_caller(serve_worker_t *w, serve_conn_t *c, const char *agent, size_t alen,
                      const char *tok, size_t tlen, int *agent_index) {
  serve_daemon_t *s = w->srv;
  const serve_auth_t *a = atomic_load_explicit(&s->auth, memory_order_acquire);
  int i = serve_auth_check(a, agent, alen, tok, tlen);
  if (i >= 0) {
    const char *name = serve_auth_agent(a, i);
    *agent_index = serve_agent_index(s, name, strlen(name));
    return 0;
  }
  CNT_ADD(w->st.auth_fail[c->proto], 1);
  /* A wrong token (not none: a client that forgot one is told so each
   * time): after a few, the connection ends with this reply, so that
   * guesses cannot be pipelined on one connection. */
  if (tlen > 0 && ++c->auth_fails >= AUTH_FAILS_MAX) {
    c->stop_parsing = 1;
    c->close_reason = CR_AUTH;
  }
  /* The agent named is logged only if the file has it: a client that
   * swapped its arguments (AUTH TOKEN AGENT) must not log its token. */
  char shown[AGENT_NAME_MAX + 8] = "-";
  for (int k = 0; agent != NULL && k <= serve_auth_count(a); k++) {
    const char *name = k < serve_auth_count(a) ? serve_auth_agent(a, k) : "unknown";
    if (k == serve_auth_count(a) || (strlen(name) == alen && memcmp(name, agent, alen) == 0)) {
      snprintf(shown, sizeof shown, "%s", name);
      break;
    }
  }
  log_limited(&s->auth_log, "warn", "auth_failed", "proto=%s peer=%s agent=%s reason=%s",
              serve_proto_name(c->proto), serve_peer_text(c, (char[64]){0}), shown,
              tlen == 0 ? "no-token" : "wrong-token");
  return -1;
}

void serve_auth_reload(serve_daemon_t *s) {
  const char *path = s->cfg->s.value[SK_AUTH_FILE];
  if (atomic_load(&s->auth) == NULL || path[0] == '\0')
    return;
  serve_auth_t *fresh = NULL;
  char err[600];
  struct serve_auth **more = realloc(s->auth_old, (size_t)(s->auth_nold + 1) * sizeof *more);
  if (more == NULL) {
    log_event("error", "auth_reload", "file=%s error=\"out of memory\" action=kept", path);
    return;
  }
  s->auth_old = more;
  if (serve_auth_load(path, &fresh, err, sizeof err) < 0) {
    log_event("error", "auth_reload", "file=%s error=%s action=kept", path,
              log_quote(err, strlen(err), (char[700]){0}, 700));
    return;
  }
  s->auth_old[s->auth_nold++] = atomic_exchange(&s->auth, fresh);
  log_event("info", "auth_reload", "file=%s agents=%d", path, serve_auth_count(fresh));
}

void serve_auth_fini(serve_daemon_t *s) {
  /* the first table is the configuration's (serve_config_free frees it) */
  serve_auth_t *now = atomic_exchange(&s->auth, NULL);
  for (int i = 0; i < s->auth_nold; i++)
    if (s->auth_old[i] != s->cfg->auth)
      serve_auth_free(s->auth_old[i]);
  if (now != s->cfg->auth)
    serve_auth_free(now);
  free(s->auth_old);
  s->auth_old = NULL;
  s->auth_nold = 0;
}
