/*
 * serve_auth.c -- the daemon's side of auth_file (docs/SERVE.md,
 * Authentication and TLS): who the caller is, failures counted, logged and
 * slowed by address, and the file read again on SIGHUP.  The file's parser
 * and the constant-time lookup are auth.c.
 *
 * Slowing (server_int.h, AUTH_FREE_FAILS...): one table for the daemon,
 * AUTH_ADDR_SLOTS entries indexed by a seeded hash of the address (IPv6:
 * its /64); two addresses that meet in a slot share its count and pace.  A
 * token from an address not slowed costs one relaxed load: the slot's due
 * time, which is in the past.  Only wrong tokens take the mutex.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "auth.h"
#include "server_int.h"

#define AUTH_ADDR_SLOTS 4096

/* A slot: the addresses that hash to it (one, but for a rare collision)
 * share its count and its pace. */
struct serve_auth_addr {
  _Atomic int64_t due_ms; /* its answers wait until then */
  uint32_t fails;         /* wrong tokens, none AUTH_FORGET_MS apart (the mutex's) */
  int64_t last_ms;        /* the last one (the mutex's) */
};

int serve_auth_init(serve_daemon_t *s) {
  pthread_mutex_init(&s->auth_addrs_mu, NULL);
  if (s->cfg->auth == NULL)
    return 0;
  s->auth_addrs = calloc(AUTH_ADDR_SLOTS, sizeof *s->auth_addrs);
  /* A seed of this run's, so that which addresses share a slot cannot be
   * worked out beforehand (a pair that shares one slows each other, no
   * more: a slot is never handed from one to the other). */
  if (RAND_bytes((unsigned char *)&s->auth_addrs_seed, sizeof s->auth_addrs_seed) != 1)
    s->auth_addrs_seed = (uint64_t)serve_kernel_mono_ns() * 0x9E3779B97F4A7C15u;
  return s->auth_addrs != NULL ? 0 : -1;
}

/* The slot of c's address: IPv4 by the address, IPv6 by its /64 (one host
 * holds a whole /64 and may use any address in it). */
static struct serve_auth_addr *addr_slot(serve_daemon_t *s, const serve_conn_t *c) {
  static const uint8_t v4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  uint64_t a, b;
  memcpy(&a, c->peer_key, 8);
  memcpy(&b, c->peer_key + 8, 8);
  if (memcmp(c->peer_key, v4, 12) != 0)
    b = 0;
  uint64_t h = ((a ^ s->auth_addrs_seed) * 0x9E3779B97F4A7C15u) ^ b;
  h = (h ^ (h >> 31)) * 0xBF58476D1CE4E5B9u;
  return &s->auth_addrs[h >> 52]; /* 12 bits: AUTH_ADDR_SLOTS */
}
_Static_assert(AUTH_ADDR_SLOTS == 1 << 12, "addr_slot takes 12 bits");

/* A token from c's address, before its check: the time its answer must
 * wait for (0: none), or AUTH_LIMITED when that is too far. */
static int64_t addr_before(serve_worker_t *w, struct serve_auth_addr *p) {
  int64_t now = w->now_ms, due = atomic_load_explicit(&p->due_ms, memory_order_relaxed);
  if (due <= now)
    return 0;
  return due - now > AUTH_HOLD_MAX_MS ? AUTH_LIMITED : due;
}

/* A wrong token from c's address: the time its answer waits for (0: none). */
static int64_t addr_failed(serve_worker_t *w, struct serve_auth_addr *p) {
  serve_daemon_t *s = w->srv;
  int64_t now = w->now_ms, due = 0;
  pthread_mutex_lock(&s->auth_addrs_mu);
  int64_t was = atomic_load_explicit(&p->due_ms, memory_order_relaxed);
  if (now - p->last_ms > AUTH_FORGET_MS && was <= now) { /* forgotten: afresh */
    p->fails = 0;
    was = 0;
  }
  p->last_ms = now;
  if (++p->fails > AUTH_FREE_FAILS)
    due = (was > now ? was : now) + AUTH_STEP_MS;
  atomic_store_explicit(&p->due_ms, due ? due : was, memory_order_relaxed);
  pthread_mutex_unlock(&s->auth_addrs_mu);
  return due;
}

int serve_auth_caller(serve_worker_t *w, serve_conn_t *c, const char *agent, size_t alen,
                      const char *tok, size_t tlen, int *agent_index) {
  serve_daemon_t *s = w->srv;
  const serve_auth_t *a = atomic_load_explicit(&s->auth, memory_order_acquire);
  struct serve_auth_addr *p = tlen > 0 && s->auth_addrs ? addr_slot(s, c) : NULL;
  int64_t due = p != NULL ? addr_before(w, p) : 0;
  if (due == AUTH_LIMITED) { /* the token is not looked at: this address is too far behind */
    CNT_ADD(w->st.auth_refused[c->proto], 1);
    c->stop_parsing = 1;
    c->close_reason = CR_AUTH;
    log_limited(&s->auth_log, "warn", "auth_failed", "proto=%s peer=%s reason=address-limited",
                serve_proto_name(c->proto), serve_peer_text(c, (char[64]){0}));
    return AUTH_LIMITED;
  }
  int i = serve_auth_check(a, agent, alen, tok, tlen);
  if (i >= 0) {
    const char *name = serve_auth_agent(a, i);
    *agent_index = serve_agent_index(s, name, strlen(name));
    if (due > 0) {
      c->hold_until_ms = due;
      CNT_ADD(w->st.auth_held[c->proto], 1);
    }
    return 0;
  }
  if (p != NULL && (due = addr_failed(w, p)) > 0) {
    c->hold_until_ms = due;
    CNT_ADD(w->st.auth_held[c->proto], 1);
  }
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
  int index = AGENT_NONE; /* ... and counted under it (an agent not in the file: `other`) */
  for (int k = 0; agent != NULL && k <= serve_auth_count(a); k++) {
    const char *name = k < serve_auth_count(a) ? serve_auth_agent(a, k) : "unknown";
    if (k == serve_auth_count(a) || (strlen(name) == alen && memcmp(name, agent, alen) == 0)) {
      snprintf(shown, sizeof shown, "%s", name);
      index = k < serve_auth_count(a) ? serve_agent_index(s, name, alen) : AGENT_OTHER;
      break;
    }
  }
  size_t per_proto = (size_t)(AGENT_FIRST + s->cfg->max_agents);
  CNT_ADD(w->st.auth_fail[(size_t)c->proto * per_proto + (size_t)index], 1);
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
  free(s->auth_addrs);
  s->auth_addrs = NULL;
}
