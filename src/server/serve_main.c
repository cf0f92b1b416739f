/*
 * serve_main.c -- the daemon's life: its state made from the settings, the
 * listeners bound, the loops (serve_loop.c) started, the main thread's wait
 * for signals (SIGHUP reloads, systemd's watchdog), and the stop: the
 * drain, the lease's release, everything freed.
 */
#define _GNU_SOURCE /* sigtimedwait's siginfo_t */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "server.h"
#include "server_int.h"
#include "tls.h"

/* Stops the caches' fillers and frees the caches (before any generator:
 * a filler uses its generator until it is stopped). */
static void free_caches(serve_daemon_t *s) {
  idgen_cached_gen_free(server_cache(s));
  atomic_store(&s->cache, NULL);
  for (int i = 0; i < s->nretired; i++) {
    idgen_cached_gen_free(s->retired_cache[i]);
    s->retired_cache[i] = NULL;
  }
}

/* systemd's watchdog: WATCHDOG=1 only while every event loop turns (each
 * turns at least every SWEEP_MS when idle).  A loop that has not turned for
 * the watchdog's interval or stall_timeout_ms (when /health says stalled),
 * whichever is shorter, withholds it, so that systemd restarts a daemon
 * whose clients would wait forever. */
static void watchdog_tick(serve_daemon_t *s, int64_t interval_ms) {
  int64_t limit = interval_ms < s->cfg->stall_timeout_ms ? interval_ms : s->cfg->stall_timeout_ms;
  if (limit < 4 * SWEEP_MS)
    limit = 4 * SWEEP_MS;
  int loop;
  int64_t age = serve_loop_stalled_ms(s, &loop);
  if (age > limit) {
    log_limited(&s->watchdog_log, "error", "watchdog",
                "loop=%d stalled_ms=%" PRId64 " action=\"WATCHDOG=1 withheld\"", loop, age);
    return;
  }
  serve_notify("WATCHDOG=1");
}

static const char *signame(int sig) {
  return sig == SIGTERM ? "TERM" : sig == SIGINT ? "INT" : sig == SIGHUP ? "HUP" : "?";
}

/* The daemon's state before anything is opened. */
static void daemon_init(serve_daemon_t *s, const serve_config_t *cfg) {
  memset(s, 0, sizeof *s);
  s->cfg = cfg;
  s->nworkers = cfg->threads;
  s->lease_was_valid = 1;
  s->loadavg_fd = -1;
  s->proc.stat_fd = s->proc.fd_dir = -1;
  s->proc.start_s = -1;
  pthread_mutex_init(&s->proc.fd_mu, NULL);
  atomic_init(&s->next_client_id, 1);
  s->client_log = (log_limit_t)LOG_LIMIT_INIT(10);
  s->close_log = (log_limit_t)LOG_LIMIT_INIT(10);
  s->accept_log = (log_limit_t)LOG_LIMIT_INIT(10);
  s->clock_log = (log_limit_t)LOG_LIMIT_INIT(10);
  s->watchdog_log = (log_limit_t)LOG_LIMIT_INIT(10);
  s->auth_log = (log_limit_t)LOG_LIMIT_INIT(10);
  atomic_init(&s->auth, cfg->auth);
  s->tls_log = (log_limit_t)LOG_LIMIT_INIT(10);
  pthread_mutex_init(&s->tls_mu, NULL);
  s->tls = cfg->tls;
  if (s->tls != NULL)
    tls_ctx_ref(s->tls); /* the daemon's own, as the configuration keeps its */
}

/* The log file, if one is set (else the log is stderr): 0, or -1 with a
 * message on stderr. */
static int open_log(const serve_config_t *cfg) {
  if (cfg->log_file[0] == '\0')
    return 0;
  int rc = log_reopen(cfg->log_file);
  if (rc < 0) {
    fprintf(stderr, "idgen: serve: log_file %s: %s\n", cfg->log_file, strerror(-rc));
    return -1;
  }
  return 0;
}

/* Signals: the loops never see them (blocked before the loops start, so
 * they inherit the mask); the main thread waits for those in `set`. */
static void block_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, set, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* The generators, the agents, the auth table and each loop's worker: what
 * the handlers need (serve_setup_for_test stops here). */
static int set_up_workers(serve_daemon_t *s) {
  s->workers = calloc((size_t)s->nworkers, sizeof *s->workers);
  if (s->workers == NULL)
    return -1;
  for (int i = 0; i < s->nworkers; i++) {
    serve_worker_t *w = &s->workers[i];
    w->epfd = w->wakefd = w->reserve_fd = -1;
    atomic_init(&w->statfd, -1);
    for (int p = 0; p < NPROTO; p++)
      w->listeners[p].fd = -1;
  }
  if (serve_make_generators(s) < 0 || serve_agent_setup(s, s->cfg->max_agents) < 0 ||
      serve_auth_init(s) < 0 || serve_seqs_init(s) < 0 || serve_public_init(s) < 0)
    return -1;
  serve_process_open(s);
  for (int i = 0; i < s->nworkers; i++)
    if (serve_worker_init(s, &s->workers[i], i) < 0) {
      fprintf(stderr, "idgen: serve: cannot set up event loop %d: %s\n", i, strerror(errno));
      return -1;
    }
  return 0;
}

/* Everything the loops need before they start: the generators (and the
 * lease), the agents, each loop's epoll set and buffers, the audit log's
 * writer, the listening sockets and the pid file.  0, or -1 with a message
 * on stderr; free_daemon frees what was made either way. */
static int set_up(serve_daemon_t *s) {
  const serve_config_t *cfg = s->cfg;
  if (set_up_workers(s) < 0 || serve_audit_start(s) < 0 || serve_leases_start(s) < 0)
    return -1;
  if ((cfg->http.enabled &&
       serve_bind_all(s, &serve_http_proto, &cfg->http, s->http_addr, sizeof s->http_addr) < 0) ||
      (cfg->resp.enabled &&
       serve_bind_all(s, &serve_resp_proto, &cfg->resp, s->resp_addr, sizeof s->resp_addr) < 0) ||
      (cfg->thrift.enabled && serve_bind_all(s, &serve_thrift_proto, &cfg->thrift, s->thrift_addr,
                                             sizeof s->thrift_addr) < 0))
    return -1;
  if (cfg->pid_file[0] != '\0' && serve_write_pid_file(cfg->pid_file) < 0)
    return -1;
  return 0;
}

/* The start's log lines, and the lease thread. */
static void announce(serve_daemon_t *s) {
  s->start_mono_ms = serve_mono_ms();
  const char *lname = s->layout->preset[0] ? s->layout->preset : s->layout_spec;
  log_event("info", "start", "version=%s pid=%ld layout=%s threads=%d registry=%s", idgen_version(),
            (long)getpid(), lname, s->nworkers, s->registry_shown);
  serve_lease_start(s);
  for (int p = 0; p < NPROTO; p++) {
    const char *bound = p == PROTO_HTTP   ? s->http_addr
                        : p == PROTO_RESP ? s->resp_addr
                                          : s->thrift_addr;
    if (bound[0])
      log_event("info", "listen", "proto=%s addr=%s", serve_proto_name(p), bound);
  }
}

/* Starts the loops' threads, each with its listeners in its epoll set:
 * returns how many started (all of them, unless a thread could not be
 * made). */
static int start_loops(serve_daemon_t *s) {
  int started = 0;
  for (; started < s->nworkers; started++) {
    if (serve_worker_start(&s->workers[started]) < 0)
      break;
  }
  if (started < s->nworkers)
    log_event("error", "thread", "error=\"cannot start event loop %d\"", started);
  return started;
}

/* Ready for systemd (Type=notify): every listener bound, the worker ID
 * leased (serve_make_generators), every loop started. */
static void notify_ready(serve_daemon_t *s) {
  char note[sizeof s->http_addr * 3 + sizeof s->registry_shown + 128];
  int nlen = snprintf(
      note, sizeof note, "READY=1\nSTATUS=serving: http %s, resp %s, thrift %s; registry %s",
      s->http_addr[0] ? s->http_addr : "off", s->resp_addr[0] ? s->resp_addr : "off",
      s->thrift_addr[0] ? s->thrift_addr : "off", s->registry_shown);
  if (nlen < 0 || (size_t)nlen >= sizeof note) /* cannot be: the sizes above */
    snprintf(note, sizeof note, "READY=1");
  int nrc = serve_notify(note);
  if (nrc < 0)
    log_event("error", "sd_notify", "error=\"%s\"", strerror(-nrc));
}

/* SIGHUP: the audit log and the log file are opened again (logrotate);
 * then auth_file and public_key are read again (serve_auth_reload,
 * serve_public_reload). */
static void reopen_logs(serve_daemon_t *s) {
  const serve_config_t *cfg = s->cfg;
  serve_audit_reopen(s); /* by its writer, which may wait for the file: never here */
  if (cfg->log_file[0] == '\0') {
    log_event("info", "reopen_log", "signal=HUP log=stderr action=none");
    return;
  }
  int r = log_reopen(cfg->log_file);
  log_event(r < 0 ? "error" : "info", "reopen_log", "signal=HUP log=%s%s%s", cfg->log_file,
            r < 0 ? " error=" : "", r < 0 ? strerror(-r) : "");
}

/* The main thread while the loops serve: waits for SIGTERM or SIGINT,
 * handling SIGHUP, and meanwhile sends systemd's watchdog its WATCHDOG=1.
 * Returns the signal that stops the daemon. */
static int wait_for_stop(serve_daemon_t *s, const sigset_t *set) {
  int64_t wd = serve_watchdog_interval_ms(), next_wd = serve_mono_ms();
  for (;;) {
    siginfo_t si;
    int sig;
    if (wd > 0) {
      int64_t now = serve_mono_ms();
      if (now >= next_wd) {
        watchdog_tick(s, wd);
        next_wd = now + wd;
      }
      int64_t left = next_wd - now;
      struct timespec t = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
      sig = sigtimedwait(set, &si, &t);
    } else {
      sig = sigwaitinfo(set, &si);
    }
    if (sig < 0)
      continue;
    if (sig != SIGHUP)
      return sig;
    reopen_logs(s);
    serve_auth_reload(s);
    serve_public_reload(s);
    serve_tls_reload(s);
  }
}

/* The drain: every started loop is told to stop (it answers what it has,
 * within shutdown_timeout_ms) and joined; then the audit log's writer
 * writes their last lines, and the lease thread ends. */
static void stop_loops(serve_daemon_t *s, int started) {
  atomic_store(&s->stopping, 1);
  for (int i = 0; i < started; i++) {
    uint64_t one = 1;
    ssize_t wr = write(s->workers[i].wakefd, &one, sizeof one);
    (void)wr;
  }
  for (int i = 0; i < started; i++)
    pthread_join(s->workers[i].thread, NULL);
  serve_audit_stop(s);  /* the loops' last lines are handed off */
  serve_leases_stop(s); /* (its registry calls use the lease's registry: before it goes) */
  serve_seqs_close(s);  /* gives back the numbers in hand */
  if (s->lease_thread_on)
    pthread_join(s->lease_thread, NULL);
}

/* The final mark and the lease's release (durable: the next holder of this
 * worker ID starts past every ID issued here; DESIGN §11). */
static void release_lease(serve_daemon_t *s) {
  free_caches(s); /* their fillers use the generators freed below */
  if (s->lx.lease == NULL)
    return;
  idgen_snowflake_lease_status_t li;
  idgen_snowflake_gen_lease_status(s->lx.gen, &li);
  leased_release(&s->lx);
  log_event("info", "lease_released", "worker=%" PRIu64 " generation=%" PRIu64, li.lease.worker,
            li.lease.generation);
}

/* Requests answered over every loop, for the exit line. */
static uint64_t requests_served(serve_daemon_t *s) {
  uint64_t served = 0;
  for (int i = 0; i < s->nworkers; i++) {
    for (int k = 0; k < NHTTP_CODES; k++)
      served += CNT_GET(s->workers[i].st.http[k]);
    served += CNT_GET(s->workers[i].st.resp_ok) + CNT_GET(s->workers[i].st.resp_err) +
              CNT_GET(s->workers[i].st.thrift_ok) + CNT_GET(s->workers[i].st.thrift_err);
  }
  return served;
}

/* Frees what set_up made, also after a start that failed part way. */
static void free_daemon(serve_daemon_t *s) {
  serve_leases_stop(s); /* (a start that failed: the loops never ran) */
  serve_seqs_close(s);
  if (s->workers)
    for (int i = 0; i < s->nworkers; i++)
      serve_worker_free(&s->workers[i]);
  free(s->workers);
  free(s->agent_names);
  free((void *)s->agent_slots);
  free_caches(s);
  serve_auth_fini(s);
  serve_public_fini(s);
  serve_tls_fini(s);
  for (int i = 0; i < s->nretired; i++)
    leased_release(&s->retired[i]);
  leased_close(&s->lx);
  idgen_ulid_gen_free(s->ulid);
  idgen_uuid7_gen_free(s->uuid7);
  serve_audit_stop(s); /* (a start that failed) */
  if (s->loadavg_fd >= 0)
    close(s->loadavg_fd);
  serve_process_close(s);
}

/* For fuzz/fuzz_serve.c: the daemon as set_up() makes it (generators,
 * agents, the auth table, each loop's worker), with no audit log,
 * listening socket, pid file, lease thread or loop thread, so that the
 * protocols' handlers can be called on s->workers[i] directly.  The workers
 * come from serve_worker_init() itself, idle epoll and eventfd descriptors
 * included, so that they never drift from the daemon's.  0, or -1 with a
 * message on stderr; what was made is left to the caller (free_daemon's,
 * in a daemon). */
int serve_setup_for_test(serve_daemon_t *s, const serve_config_t *cfg) {
  daemon_init(s, cfg);
  return set_up_workers(s);
}

int serve_run(const serve_config_t *cfg) {
  static serve_daemon_t srv; /* one daemon per process */
  serve_daemon_t *s = &srv;
  daemon_init(s, cfg);
  if (serve_audit_open(s) < 0 || open_log(cfg) < 0)
    return 1;
  sigset_t set;
  block_signals(&set);
  serve_raise_fd_limit(cfg);
  if (set_up(s) < 0) {
    free_daemon(s);
    return 1;
  }
  announce(s);
  serve_poll_setup(s);
  int started = start_loops(s);
  if (started == s->nworkers) {
    notify_ready(s);
    int sig = wait_for_stop(s, &set);
    log_event("info", "stop", "signal=%s connections=%ld", signame(sig),
              (long)atomic_load(&s->nconns));
    serve_notify("STOPPING=1\nSTATUS=draining: no new connections, answering the open ones");
  }
  stop_loops(s, started);
  release_lease(s);
  int rc = started == s->nworkers ? 0 : 1;
  if (cfg->pid_file[0] != '\0')
    unlink(cfg->pid_file);
  log_event("info", "exit", "code=%d requests=%llu", rc, (unsigned long long)requests_served(s));
  free_daemon(s);
  return rc;
}
