/*
 * server_int.h -- the daemon's insides, shared by its files: the lifecycle
 * (serve_main.c) and the event loops (serve_loop.c) on top, which know a
 * connection's protocol only by its table (serve_proto_t); below them TLS
 * handshakes (serve_tls.c), a connection's bytes and its end
 * (serve_conn.c), replies held for their audit lines (serve_held.c), new
 * connections (serve_accept.c), and the protocols (serve_http.c,
 * serve_resp.c, serve_thrift.c), which hand ID requests to serve_ids.c with
 * a table of their own replies (serve_replies_t) and take facts from
 * serve_stats.c; at the bottom buffers and clocks (serve_buf.c), sockets
 * (serve_listen.c), the lease (serve_lease.c), the audit log
 * (serve_audit.c) and busy polling (serve_poll.c).  Calls run downward
 * only: what a lower file needs from a higher one it is handed (a
 * protocol's table, a reply table, serve_resume_cb, serve_release_cb).
 * The sections below follow the files.
 */
#ifndef IDGEN_SERVER_INT_H
#define IDGEN_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "idgen.h"
#include "lease_body.h"
#include "leased.h"
#include "log.h"

#define RBUF_SIZE (64 * 1024) /* one read(2) into the worker's scratch */
/* Queued replies past which a client's further requests wait (backpressure). */
#define OUT_SOFT_LIMIT (64 * 1024)
/* Replies one connection makes in one loop turn: then the loop serves the
 * others first (a fast reader of large batches would hold it). */
#define TURN_OUT_LIMIT (1024 * 1024)
#define AGENT_NAME_MAX 64
#define AUTH_FAILS_MAX 3              /* wrong tokens on one connection before it is closed */
#define MULTI_BUDGET_BYTES (64 << 20) /* the daemon's open transactions' queues, in all */
/* Wrong tokens from one address (all its connections, every loop; IPv6: its
 * /64): the first AUTH_FREE_FAILS are answered at once; each one after
 * pushes the address's next answer AUTH_STEP_MS later, and every token it
 * shows meanwhile, right or wrong, is answered then (a right one does not
 * push).  An address whose answers are more than AUTH_HOLD_MAX_MS behind
 * is refused without a look at its token.  AUTH_FORGET_MS after its last
 * wrong token, and once its answers are due, it starts afresh. */
#define AUTH_FREE_FAILS 5
#define AUTH_STEP_MS 100
#define AUTH_HOLD_MAX_MS 2000
#define AUTH_FORGET_MS 60000
#define AUTH_LIMITED (-2)      /* serve_auth_caller: refused, the address is too far behind */
#define SWEEP_MS 100           /* timer resolution */
#define LINGER_MS 2000         /* read-and-discard after the last reply */
#define SCRATCH_KEEP (1 << 20) /* per-loop buffers larger than this are freed after use */

enum proto { PROTO_HTTP, PROTO_RESP, PROTO_THRIFT, NPROTO };
/* "http", "resp", "thrift": in logs and metric labels. */
static inline const char *serve_proto_name(int proto) {
  static const char *const names[NPROTO] = {"http", "resp", "thrift"};
  return names[proto];
}
enum id_kind { KIND_SNOWFLAKE, KIND_ULID, KIND_UUID7, NKINDS };
/* "snowflake", "ulid", "uuid7". */
static inline const char *serve_kind_name(int kind) {
  static const char *const names[NKINDS] = {"snowflake", "ulid", "uuid7"};
  return names[kind];
}
/* Why a connection was closed: the enum and the metric's labels. */
/* clang-format off */
#define CLOSE_REASONS(X)                                                                  \
  X(EOF, "eof") X(RESET, "reset") X(IDLE, "idle") X(SLOW, "slow") X(OUTPUT, "output")     \
  X(PROTOCOL, "protocol") X(LIMIT, "limit") X(SHUTDOWN, "shutdown") X(ERROR, "error")  \
  X(AUTH, "auth") X(TLS, "tls")
/* clang-format on */
enum close_reason {
#define X(name, label) CR_##name,
  CLOSE_REASONS(X)
#undef X
      NCR
};
/* How a TLS handshake ended: idgen_tls_handshakes_total{result}; aborted: the
 * client closed or reset the connection halfway. */
enum { TLS_OK, TLS_FAIL, TLS_ABORT, TLS_PLAIN, NTLS_RESULTS };
/* Agents: index 0 is "no agent", 1 is "other" (past max_agents). */
enum { AGENT_NONE = 0, AGENT_OTHER = 1, AGENT_FIRST = 2 };

/* The HTTP statuses the daemon answers with, and their reason phrases: the
 * status line and the requests counter's index both come from here. */
/* clang-format off */
#define HTTP_CODES(X)                                                                     \
  X(200, "OK") X(204, "No Content") X(400, "Bad Request") X(401, "Unauthorized") X(404, "Not Found")               \
  X(405, "Method Not Allowed") X(409, "Conflict") X(411, "Length Required") X(413, "Content Too Large")            \
  X(429, "Too Many Requests") X(431, "Request Header Fields Too Large")                    \
  X(500, "Internal Server Error") X(501, "Not Implemented") X(503, "Service Unavailable")  \
  X(505, "HTTP Version Not Supported")
/* clang-format on */
enum {
#define X(n, phrase) HC_##n,
  HTTP_CODES(X)
#undef X
      NHTTP_CODES
};

#define NBUCKETS 15 /* latency histogram bounds, plus +Inf */
extern const int64_t serve_bucket_ns[NBUCKETS];

/* A counter written by its worker only and read by any: relaxed loads and
 * stores, so that the owner's increment is a plain add (no lock prefix). */
typedef _Atomic uint64_t serve_counter_t;
#define CNT_ADD(c, n)                                                                              \
  atomic_store_explicit(&(c), atomic_load_explicit(&(c), memory_order_relaxed) + (n),              \
                        memory_order_relaxed)
#define CNT_GET(c) atomic_load_explicit(&(c), memory_order_relaxed)

typedef struct serve_wstats {
  serve_counter_t *ids; /* [NKINDS * (AGENT_FIRST + max_agents)] */
  serve_counter_t http[NHTTP_CODES];
  serve_counter_t resp_ok, resp_err;
  serve_counter_t thrift_ok, thrift_err;
  serve_counter_t hist[NPROTO][NBUCKETS];
  serve_counter_t hist_sum_ns[NPROTO], hist_count[NPROTO];
  serve_counter_t open[NPROTO], accepted[NPROTO];
  serve_counter_t closed[NCR];
  serve_counter_t parked;   /* requests that waited parked */
  serve_counter_t waits;    /* blocking waits for events (epoll_pwait2) */
  serve_counter_t polls[2]; /* busy polls that missed, that found work in time */
  /* [NPROTO * (AGENT_FIRST + max_agents)]: a token refused (or none shown
   * where one is needed), by protocol and the agent named. */
  serve_counter_t *auth_fail;
  serve_counter_t tls_hs[NTLS_RESULTS];                    /* TLS handshakes, by result */
  serve_counter_t auth_held[NPROTO], auth_refused[NPROTO]; /* answers slowed, addresses refused */
  serve_counter_t pub_made, pub_reversed;                  /* public IDs made and reversed */
  serve_counter_t pub_fail[5];                             /* ... refused, by cause (PUBF_*) */
} serve_wstats_t;

typedef struct serve_buf {
  char *p;
  size_t len, cap;
} serve_buf_t;

struct serve_replies;

/* What an ID request's reply looks like: kept while the request waits. */
typedef struct serve_reply_shape {
  const struct serve_replies *replies; /* its protocol's answers (below) */
  uint8_t proto;                       /* PROTO_* */
  uint8_t kind;                        /* KIND_* */
  uint8_t json;                        /* HTTP: {"ids":[...]} */
  uint8_t head;                        /* HTTP: HEAD, headers only */
  uint8_t minor;                       /* HTTP/1.<minor> */
  uint8_t array;                       /* RESP: ID N, an array even for N = 1 */
  uint8_t text;                        /* RESP: IDSTR, each Snowflake ID a bulk string */
  uint8_t pub;                         /* HTTP: format=public, the IDs' public form */
  int32_t seqid;                       /* Thrift: the call's sequence id */
  int agent;
  size_t count;
} serve_reply_shape_t;

struct serve_conn;
struct serve_worker;

/* How a protocol answers an ID request: each protocol's own table, carried
 * in the request's shape, so that serve_ids.c answers every protocol the
 * same way.
 *   ids: the reply with sh->count IDs appended to w->out (Snowflake IDs
 *     from `ids`, 128-bit ones made by serve_ids_make128).  0; 1 when the
 *     protocol refused them itself with an error reply (nothing counted,
 *     no audit line); or an IDGEN_E* code with nothing appended.
 *   error: the reply to a request refused with rc: `why` is the reason
 *     (serve_ids.c words it), `wait_ms` how long until IDs can be issued
 *     again. */
typedef struct serve_replies {
  int (*ids)(struct serve_worker *w, struct serve_conn *c, const struct serve_reply_shape *sh,
             const uint64_t *ids);
  void (*error)(struct serve_worker *w, struct serve_conn *c, const struct serve_reply_shape *sh,
                int rc, const char *why, int64_t wait_ms);
} serve_replies_t;

/* A Snowflake request that must wait for its tick or its mark.  It is
 * parked on its loop's timer instead of sleeping in the loop, and answered
 * when due; its connection's later requests wait behind it (replies stay
 * in order), while the loop serves every other connection. */
typedef struct serve_parked {
  struct serve_parked *prev, *next; /* the loop's list */
  struct serve_conn *c;
  idgen_snowflake_gen_t *g; /* the generator it waits on */
  /* With --cache, the cache it came from (resumed through it), else NULL. */
  idgen_cached_gen_t *cache;
  /* server_swaps() before g and cache were read: after a swap they are not
   * touched again (maybe freed). */
  uint64_t swaps;
  idgen_snowflake_wait_t wait;
  /* wait.due_ns on the kernel's CLOCK_MONOTONIC: a step of the wall clock
   * must not move the wake-up. */
  int64_t due_mono_ns;
  serve_reply_shape_t shape;
  int64_t read_ns; /* when the request was read */
  /* When it began to wait (kernel clock): the oldest wait in /ready, /info,
   * /metrics. */
  int64_t since_mono_ns;
  uint64_t ids[]; /* room for shape.count IDs */
} serve_parked_t;

/* audit_mode require: a reply with IDs held until its audit line is written
 * (serve_audit.c notes it; serve_loop.c releases it, or at
 * audit_timeout_ms sends a refusal in its place). */
typedef struct serve_held_reply {
  size_t start, end; /* its bytes: in w->out until flushed, then in c->out */
  uint64_t seq;      /* its line's end in the loop's lane (serve_audit_written) */
  uint64_t first;    /* its first ID, for the void line */
  int64_t held_ms;   /* when it was made (serve_mono_ms) */
  serve_reply_shape_t shape;
  uint8_t closing; /* HTTP: it said Connection: close */
} serve_held_reply_t;

enum { TAG_LISTENER = 1, TAG_WAKE, TAG_CONN };

struct serve_proto;

typedef struct serve_listener {
  int tag; /* TAG_LISTENER */
  int fd;
  const struct serve_proto *type; /* its protocol (serve_proto_t, below) */
} serve_listener_t;

typedef struct serve_conn {
  int tag; /* TAG_CONN */
  int fd;
  const struct serve_proto *type; /* its protocol: its listener's */
  uint8_t proto;                  /* type->index, PROTO_*: its counters' index */
  /* QUIT, an error, or Connection: close: after the last reply, half-close
   * and read until EOF. */
  uint8_t stop_parsing;
  uint8_t lingering;
  uint8_t blocked; /* replies over OUT_SOFT_LIMIT: requests wait */
  uint8_t close_reason;
  uint8_t drain_read;             /* the drain has read this connection dry */
  uint8_t drain_reading;          /* ... and is reading it now */
  serve_parked_t *parked;         /* its request waiting for a tick, or NULL */
  uint32_t events;                /* the epoll mask in effect */
  struct serve_conn *prev, *next; /* the worker's list, for the timer sweep */
  serve_buf_t in;                 /* a partial request (or waiting requests) */
  serve_buf_t out;                /* replies the kernel did not take yet */
  size_t out_off;
  int64_t req_start_ms;    /* first byte of a partial request, or 0 */
  size_t parsed_len;       /* c->in's length when it was last found partial */
  int64_t blocked_read_ns; /* when requests waiting behind replies were read */
  int64_t active_ms;       /* last read or write progress */
  int64_t write_ms;        /* last write progress while replies wait */
  uint32_t outq;           /* the kernel's unsent bytes at the last sweep (SIOCOUTQ) */
  int64_t linger_until_ms;
  uint8_t authed;             /* RESP: AUTH passed, or no auth_file */
  uint8_t auth_agent;         /* ... and c->agent is its token's (SETNAME keeps it) */
  uint8_t auth_fails;         /* wrong tokens shown on it: closed at AUTH_FAILS_MAX */
  uint8_t resp3;              /* RESP: HELLO 3 chose RESP3 */
  uint8_t multi, multi_dirty; /* RESP: in a transaction (MULTI), spoilt by an error */
  uint8_t exec_pending;       /* RESP: EXEC answered its header; multi_q runs next */
  size_t multi_n;             /* ... the commands queued */
  serve_buf_t multi_q;        /* ... their bytes, as they came */
  uint8_t tls_hs;             /* TLS: the handshake is not done (c->ssl NULL: no byte yet) */
  uint8_t tls_wants_out;      /* TLS: a read waits for the socket to be writable */
  uint8_t cert_authed;        /* TLS: a client certificate tls_client_ca signed */
  int cert_agent;             /* ... its CN's agent index (AGENT_NONE: not an agent name) */
  struct ssl_st *ssl;         /* TLS: the connection's, or NULL */
  uint8_t peer_key[16];       /* the client's address (IPv4 as ::ffff:a.b.c.d) */
  uint16_t peer_port;
  int64_t hold_until_ms;         /* auth: its answer waits until then (nothing read), or 0 */
  uint64_t id;                   /* CLIENT ID */
  int agent;                     /* CLIENT SETNAME's agent index */
  char name[AGENT_NAME_MAX + 1]; /* CLIENT SETNAME's name */
  /* audit_mode require: its replies (all of c->out) wait until the loop's
   * audit lines are written up to here (serve_audit_written); 0: none wait.
   * Then it is on the loop's `held` list. */
  uint64_t audit_seq;
  /* ... and the held replies with IDs among them (serve_held_reply_t, in
   * the order made); those from held_flushed on are still in w->out. */
  serve_buf_t held_ids;
  size_t held_flushed;
  struct serve_conn *held_prev, *held_next;
  uint8_t held_on;
  size_t held_replies;  /* replies held, and when the first one's request was read: */
  int64_t held_read_ns; /* their latency counts until they are sent */
  /* --leases: its request the lease service is answering (its later
   * requests wait, as behind a parked one), or NULL. */
  struct serve_lease_job *lease_job;
  /* HTTP: the bytes of c->in its request needs before it is parsed again
   * (a body does not end with a line feed), or 0. */
  size_t want_len;
} serve_conn_t;

struct serve_daemon;

typedef struct serve_worker {
  struct serve_daemon *srv;
  int index;
  pthread_t thread;
  int epfd, wakefd, reserve_fd;
  int wake_tag; /* TAG_WAKE, the wake fd's epoll data */
  serve_listener_t listeners[NPROTO];
  serve_conn_t *conns; /* doubly linked */
  size_t nconns;
  serve_parked_t *parked;      /* requests waiting for a tick, the newest first */
  serve_parked_t *parked_last; /* ... and the oldest (the list is in park order) */
  uint64_t nparked;
  /* Published for the other loops' /ready and /metrics: how many of this
   * loop's requests wait now, and since when the oldest (kernel clock; 0:
   * none).  Written by this loop after each change. */
  _Atomic uint64_t ids_waiting;
  _Atomic int64_t ids_waiting_since;
  char *rbuf;                       /* RBUF_SIZE */
  serve_buf_t out;                  /* replies to the requests of one read */
  serve_buf_t body;                 /* an HTTP body before its head is known */
  serve_buf_t audit;                /* this turn's audit lines, handed off at its end */
  uint64_t audit_lines;             /* lines in it */
  uint64_t audit_handed;            /* bytes handed to its audit lane since the start */
  serve_conn_t *held;               /* connections whose replies wait for audit lines */
  int held_waiting;                 /* told the writer so (serve_audit_waiting) */
  int64_t held_due_ms;              /* the first held reply's audit_timeout_ms, or INT64_MAX */
  struct http_header *http_headers; /* room for max_headers parsed headers (http.h) */
  uint64_t *ids;                    /* room for ids_cap Snowflake IDs, grown on demand */
  size_t ids_cap;
  /* public_key: this loop's codecs by kind (made on first use, again after
   * a SIGHUP swapped the keys: pub_gen is the swap count they were made
   * at), room for a batch's integer forms, and a reply's public forms. */
  struct idgen_public *pub[NKINDS];
  uint64_t pub_gen;
  uint64_t *pub_ids;
  size_t pub_cap;
  serve_buf_t pub_text;
  int64_t now_ms, last_sweep_ms, paused_until_ms;
  int64_t read_ns;      /* when the current batch of requests was read */
  size_t replies;       /* requests answered in the current batch */
  int read_eagain;      /* the last conn_readable() found nothing to read */
  int worked;           /* the last turn had events (busy polling) */
  int poll_credit;      /* busy polls' recent luck: -8 to 8 */
  unsigned poll_probes; /* turns after work while the credit is negative */
  atomic_int waiting;   /* in its blocking wait for events */
  atomic_int statfd;    /* its /proc/thread-self/stat, or -1 */
  int draining;
  int64_t drain_deadline_ms;
  /* The same on the kernel's clock (serve_kernel_mono_ns): a drain ends
   * under a clock faker that stops the other. */
  int64_t drain_kernel_ms;
  /* A request due later than this (kernel clock) is refused
   * SERVE_ESHUTDOWN: INT64_MAX until a drain sets its limit. */
  int64_t park_until_ns;
  uint64_t parks; /* requests parked so far (serve_ids_run_parked's `next`) */
  int64_t date_sec;
  char date[40]; /* "Date: ...\r\n" */
  serve_wstats_t st;
  /* The daemon's swap count as this loop read it at the top of its last
   * turn, when it held no generator but its parked requests' (which are
   * never used after a swap): the lease thread frees a retired generator
   * once every loop has seen its swap.  UINT64_MAX once the loop ended. */
  _Atomic uint64_t swaps_seen;
  _Atomic int64_t turned_ms; /* now_ms of its last turn: the systemd watchdog's evidence */
} serve_worker_t;

/* Registry calls counted for the metrics. */
enum { SERVE_REG_ACQUIRE, SERVE_REG_RENEW, SERVE_REG_MARK, SERVE_REG_OPS };

#define LOAD_SAMPLES 32 /* busy polling's gate: samples averaged */

typedef struct serve_daemon {
  const serve_config_t *cfg;
  /* The Snowflake generator now in use: replaced (by the lease thread) only
   * when the lease was lost for good and a new one was acquired; the old one
   * is kept, fenced, until every event loop has passed the top of its loop
   * since (swaps_seen), so a request still holding it fails cleanly; parked
   * requests note `swaps` when they take the generator and start again on
   * the new one after a swap, without touching the old.  Read it with
   * server_sf(), after server_swaps(). */
  _Atomic(idgen_snowflake_gen_t *) sf;
  /* With --cache, the cache over it, replaced with it; NULL without.  Read
   * it with server_cache(). */
  _Atomic(idgen_cached_gen_t *) cache;
  _Atomic uint64_t swaps;                /* generators swapped in since the start */
  idgen_cached_gen_t *retired_cache[16]; /* the caches of retired[], freed first */
  uint64_t retired_swap[16];             /* the swap that retired each */
  int retired_full_logged;               /* the lease thread's: said that all 16 are held */
  idgen_ulid_gen_t *ulid;
  idgen_uuid7_gen_t *uuid7;
  const idgen_layout_t *layout;
  char layout_spec[IDGEN_LAYOUT_SPEC_MAX];
  int nworkers;
  serve_worker_t *workers;
  atomic_int stopping;
  atomic_long nconns; /* open connections, all workers */
  /* Busy polling's gate (serve_poll.c, DESIGN §10): a loop with work samples the
   * host's runnable threads; the others' mean says how many loops may poll
   * at once (pollers_max); `pollers` are polling now. */
  int loadavg_fd; /* /proc/loadavg, or -1: no polling */
  /* /metrics' process_* (serve_process.c), opened at the start so that a
   * daemon out of descriptors still reports how many it has open. */
  struct {
    int stat_fd, fd_dir;   /* /proc/self/stat, /proc/self/fd; -1: none */
    pthread_mutex_t fd_mu; /* fd_dir's offset, shared by the loops' scrapes */
    double start_s;        /* process_start_time_seconds, or < 0 */
  } proc;
  int ncpus;             /* CPUs this process may run on */
  atomic_int others_x64; /* runnable threads not ours, averaged, times 64 */
  _Atomic int64_t load_sampled_ms;
  atomic_flag sampling;        /* held by the loop taking a sample */
  int load_ring[LOAD_SAMPLES]; /* the last samples of the others (sampling held) */
  int load_next, load_sum;
  atomic_int pollers, pollers_max;
  atomic_uint_fast64_t next_client_id;
  int64_t start_mono_ms;
  char http_addr[128], resp_addr[128], thrift_addr[128]; /* as bound */
  /* The lease.  Requests ask the generator (its errors, its status); the
   * lease thread (serve_lease.c) only logs changes and replaces a lease lost for
   * good.  lease_was_valid: its last look, its own. */
  int lease_was_valid;
  int lease_field;           /* layout index of the leased field, or -1 */
  struct serve_audit *audit; /* --audit-log and its writer (serve_audit.c), or NULL */
  /* This host's clock minus the registry's, measured at start and by the
   * lease thread every 10 s (registries with a clock of their own). */
  atomic_int clock_skew_known;
  _Atomic int64_t clock_skew_ms;
  leased_t lx;          /* the registry, lease and generator in use */
  leased_t retired[16]; /* fenced ones, freed once no loop can hold them */
  int nretired;
  pthread_t lease_thread;
  int lease_thread_on;
  int fence_logged;          /* the generator in use was logged as fenced */
  char registry_shown[1024]; /* cfg->s.registry without its password */
  /* Agent names (metrics labels): published once, never removed. */
  pthread_mutex_t agents_mu;
  atomic_int nagents; /* names in use, AGENT_FIRST.. */
  char (*agent_names)[AGENT_NAME_MAX + 1];
  _Atomic uint32_t *agent_slots; /* open hash: index + 1, or 0 */
  uint32_t agent_mask;
  /* one limit per kind */
  log_limit_t client_log, close_log, accept_log, clock_log, watchdog_log, auth_log;
  /* auth_file's tokens in force (NULL: none asked).  SIGHUP swaps in the
   * file as read again; a table swapped out is kept (a loop may be reading
   * it) until the end, in auth_old (the main thread's). */
  _Atomic(struct serve_auth *) auth;
  struct serve_auth **auth_old;
  int auth_nold;
  struct serve_auth_addr *auth_addrs; /* with auth_file: wrong tokens by address (serve_auth.c) */
  pthread_mutex_t auth_addrs_mu;
  uint64_t auth_addrs_seed;
  _Atomic int64_t multi_bytes; /* queued in open transactions (MULTI_BUDGET_BYTES) */
  /* tls_cert's context in force (NULL: plain text).  SIGHUP swaps in the
   * files as read again, under tls_mu, which the loops hold to make a
   * connection from it (each connection keeps a reference of its own). */
  pthread_mutex_t tls_mu;
  struct ssl_ctx_st *tls;
  log_limit_t tls_log;
  uint64_t mark_failures_seen; /* the lease thread's: failed mark writes logged */
  int64_t mark_logged_ms;      /* ... and when it last logged them */
  /* Registry calls since the start, over every lease this daemon held
   * (idgen_registry_operations_total): the lease thread publishes them on
   * each look, adding a retired lease's final counts to reg_before. */
  _Atomic uint64_t reg_ops[SERVE_REG_OPS][2]; /* [op][0 ok, 1 failed] */
  uint64_t reg_before[SERVE_REG_OPS][2];      /* the lease thread's own */
  uint64_t clock_fallbacks_seen;              /* the first loop's last look */
  struct serve_leases *leases;                /* --leases (serve_leases.c), or NULL */
  struct serve_seqs *seqs;                    /* the sequences opened (serve_seq.c) */
  /* public_key's keys in force (NULL: public IDs off), and the swaps so
   * far (a loop remakes its codecs when it changes).  SIGHUP swaps in the
   * file read again; a set swapped out is kept until the end (a loop may be
   * making a codec from it), in pub_old (the main thread's). */
  _Atomic(struct idgen_public_keys *) pub_keys;
  _Atomic uint64_t pub_gen;
  struct idgen_public_keys **pub_old;
  int pub_nold;
} serve_daemon_t;

static inline idgen_snowflake_gen_t *server_sf(serve_daemon_t *s) {
  return atomic_load_explicit(&s->sf, memory_order_acquire);
}
static inline idgen_cached_gen_t *server_cache(serve_daemon_t *s) {
  return atomic_load_explicit(&s->cache, memory_order_acquire);
}
/* Read before server_sf() / server_cache(): the pointers read after it are
 * at least that swap's (the lease thread stores them, then counts the swap
 * with a read-modify-write this load synchronizes with). */
static inline uint64_t server_swaps(serve_daemon_t *s) { return atomic_load(&s->swaps); }

/* ---- serve_loop.c: one event loop's making, start and end ---- */
/* Loop i of s: its epoll set, wake-up eventfd, buffers and counters (its
 * listeners are bound after, by serve_bind_all).  0, or -1 (errno). */
int serve_worker_init(serve_daemon_t *s, serve_worker_t *w, int i);
/* Its thread, named idgen-loop-N, with its listeners in its epoll set:
 * 0, or -1 when no thread could be made. */
int serve_worker_start(serve_worker_t *w);
/* Closes its connections and descriptors and frees its buffers (a loop
 * never started, or joined). */
void serve_worker_free(serve_worker_t *w);

/* ---- serve_main.c: the daemon without its loops, for fuzz/fuzz_serve.c ---- */
/* s (zeroed or not) set up from cfg (which must outlive it) as `idgen
 * serve` sets it up, but with no socket, thread or audit log: the protocols'
 * handlers (serve_http_handle, serve_resp_handle...) may be called on
 * s->workers[0..cfg->threads) from one thread.  0, or -1 with a message on
 * stderr.  Nothing frees it: it lives as long as the test's process. */
int serve_setup_for_test(serve_daemon_t *s, const serve_config_t *cfg);

/* ---- serve_accept.c: a loop's new connections ---- */
/* Accepts what waits on l (up to 64 connections a call), each taking l's
 * protocol; past max_connections a client gets its protocol's refusal and
 * is closed; an accept(2) error may pause l for 100 ms (w->paused_until_ms:
 * the sweep calls serve_accept_start then). */
void serve_accept(serve_worker_t *w, serve_listener_t *l);
/* Puts w's listeners in its epoll set: at its start, and after a pause. */
void serve_accept_start(serve_worker_t *w);

/* ---- serve_conn.c: a connection's bytes and its end ---- */
/* Sets c's epoll interest to ev (one epoll_ctl, only when it changes). */
void serve_conn_events(serve_worker_t *w, serve_conn_t *c, uint32_t ev);
/* The close reason of a failed read or write (errno err): the client reset
 * the connection, or an error. */
int serve_conn_io_reason(int err);
/* read(2) and write(2) of c, through TLS when it speaks it (tls.h: the same
 * results; a read may need the socket writable first: c->tls_wants_out). */
ssize_t serve_conn_recv(serve_conn_t *c, void *buf, size_t cap);
ssize_t serve_conn_send(serve_conn_t *c, const void *buf, size_t len);
/* Hands w->out (the replies just made for c) to the kernel, queueing what
 * it does not take (all of it behind queued or held replies).  Returns -1
 * if c was closed (an error, or over max_output_bytes). */
int serve_conn_flush(serve_worker_t *w, serve_conn_t *c);
/* After the last reply of a connection that must close: a half-close that
 * keeps reading (and discarding) until the client closes or LINGER_MS
 * pass.  Returns 0. */
int serve_conn_finish(serve_worker_t *w, serve_conn_t *c);
/* Closes c and frees it, with its parked request, its held replies and
 * what its protocol keeps for it (c->type->closed); counted under reason. */
void serve_conn_close(serve_worker_t *w, serve_conn_t *c, int reason);

/* ---- serve_held.c: replies held for their audit lines (audit_mode require) ---- */
/* c's replies wait for the loop's audit lines: on the loop's `held` list
 * until released (serve_conn_flush puts it there), or until it closes. */
void serve_held_add(serve_worker_t *w, serve_conn_t *c);
void serve_held_remove(serve_worker_t *w, serve_conn_t *c);
/* The loop's: c's replies are released (or refusals put in their place):
 * it sends them, then goes on with the requests that waited behind them.
 * Returns -1 if c was closed. */
typedef int (*serve_release_cb)(serve_worker_t *w, serve_conn_t *c);
/* After a turn: releases the held replies whose audit lines are written
 * (the writer wakes the loop when it has written some), or refuses them
 * once the first not written has waited audit_timeout_ms (the loop wakes
 * for that by itself: w->held_due_ms), each connection then handed to
 * sent(). */
void serve_held_release(serve_worker_t *w, serve_release_cb sent);

/* ---- serve_buf.c: buffers, numbers as text, and clocks ---- */
void serve_buf_reserve(serve_buf_t *b, size_t more);
void serve_buf_put(serve_buf_t *b, const void *p, size_t n);
void serve_buf_printf(serve_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void serve_buf_free(serve_buf_t *b);
size_t serve_u64_dec(char *dst, uint64_t v); /* no NUL; at most 20 bytes */
int64_t serve_mono_ms(void);
int64_t serve_mono_ns(void);
int64_t serve_kernel_mono_ns(void); /* past LD_PRELOAD clock fakers: parked requests */

/* ---- serve_listen.c: sockets, addresses, the pid file ---- */
/* An address as "a.b.c.d:port" or "[v6]:port" into buf[n];
 * binds protocol `type` on every loop (the bound address, port 0 resolved,
 * into bound[n]); writes the pid file; raises the descriptor limit for
 * max_connections.  0, or -1 with a message on stderr. */
void serve_addr_text(const struct sockaddr_storage *ss, char *buf, size_t n);
int serve_bind_all(serve_daemon_t *s, const struct serve_proto *type, const serve_addr_t *a,
                   char *bound, size_t n);
int serve_write_pid_file(const char *path);
void serve_raise_fd_limit(const serve_config_t *cfg);
/* The client's address as "ip:port" into buf[64], for log lines; kept in c
 * at accept by serve_peer_set. */
const char *serve_peer_text(const serve_conn_t *c, char *buf);
void serve_peer_set(serve_conn_t *c, const struct sockaddr_storage *ss);

/* With auth_file: the agent whose token is tok[0..tlen) (and whose name is
 * agent[0..alen), if agent is not NULL), its index as for metrics in
 * *agent_index; or -1, counted and logged (rate-limited, with the peer and
 * the agent named, never the token) as a failure of c's protocol; or
 * AUTH_LIMITED, the token not looked at: c's address showed too many wrong
 * ones (c closes after the answer).  The answer may have to wait
 * (c->hold_until_ms: the loop sends it then). */
int serve_auth_caller(serve_worker_t *w, serve_conn_t *c, const char *agent, size_t alen,
                      const char *tok, size_t tlen, int *agent_index);
/* ---- serve_tls.c: TLS connections ---- */
/* One step of c's handshake (c->tls_hs: at each of its events, until it is
 * done).  Its first byte tells a TLS client from one that speaks plain
 * text, which is told so (c->type->tls_plain_refusal) and finished.
 * 1: done, c's interest is the loop's to settle; 0: it waits for an event
 * (or finishes); -1: c was closed. */
int serve_tls_handshake(serve_worker_t *w, serve_conn_t *c);
/* SIGHUP: tls_cert, tls_key and tls_client_ca read again and swapped in
 * (new connections use them, open ones go on); kept as they were, with the
 * error logged, when they do not load.  serve_tls_fini at the end. */
void serve_tls_reload(serve_daemon_t *s);
void serve_tls_fini(serve_daemon_t *s);

/* SIGHUP: auth_file read again and swapped in; kept as it was (and the
 * error logged) if the new one is refused.  The main thread's. */
void serve_auth_reload(serve_daemon_t *s);
/* At the end, after the loops: the tables swapped out. */
void serve_auth_fini(serve_daemon_t *s);
/* Sets up the table of wrong tokens by address (with auth_file): 0 or -1. */
int serve_auth_init(serve_daemon_t *s);

/* ---- serve_lease.c: the generators and the lease thread ---- */
/* The generators (leased, or static) made at start (0, or -1 with a
 * message on stderr); logs the lease and starts the lease thread (joined
 * by serve_run). */
int serve_make_generators(serve_daemon_t *s);
void serve_lease_start(serve_daemon_t *s);

/* ---- serve_poll.c: busy polling (DESIGN §10) ---- */
struct epoll_event;
/* The gate at the start: the CPUs this process may run on, every sample as
 * if each CPU were taken (no polling until real samples come), and
 * /proc/loadavg opened when busy_poll_ns is set (s->loadavg_fd). */
void serve_poll_setup(serve_daemon_t *s);
/* In a loop's own thread, before its first turn: its /proc/thread-self/stat
 * (w->statfd), read by the samples. */
void serve_poll_loop_start(serve_worker_t *w);
/* The loop's wait: up to wait_ns for events into evs[256], polling first
 * after a turn with work while the gate lets it.  Their count, or -1 with
 * errno. */
int serve_poll_wait(serve_worker_t *w, struct epoll_event *evs, int64_t wait_ns);
/* After a turn with work: samples the host's load if it is time. */
void serve_poll_sample(serve_worker_t *w);

/* ---- serve_ids.c: making IDs ---- */
/* The daemon's own failure beside idgen's codes (all above -100): a request
 * that would come due only after the drain's time limit, refused at once
 * rather than cut off at the limit without a reply. */
#define SERVE_ESHUTDOWN (-1000)
/* audit_mode require: the audit log takes no lines now (serve_audit.c). */
#define SERVE_EAUDIT (-1001)
/* Answers the ID request `sh` of connection c into w->out, or parks it
 * (c->parked set) when it must wait: it never sleeps. */
void serve_ids_request(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh);
/* The event loop's: sends the reply to c's parked request (in w->out),
 * then goes on with the connection's requests that waited behind it.
 * Returns -1 if c was closed. */
typedef int (*serve_resume_cb)(serve_worker_t *w, serve_conn_t *c, int64_t read_ns);
/* Answers the parked requests that are due, each followed by resume().
 * Returns the ns until the next one is due, or -1 if none waits. */
int64_t serve_ids_run_parked(serve_worker_t *w, serve_resume_cb resume);
/* At the drain's time limit, before the connections close: each request
 * still parked is answered if due and refused if not, and nothing more is
 * parsed on its connection. */
void serve_ids_end_parked(serve_worker_t *w, serve_resume_cb resume);
/* A 128-bit ID of `kind` (KIND_ULID, KIND_UUID7) made now, as text into
 * out[40] (no NUL kept): its length, or an IDGEN_E* code.  (A reply's
 * Snowflake IDs are made before it, and written with serve_u64_dec.) */
int serve_ids_make128(serve_daemon_t *s, int kind, char *out);
/* Forgets c's parked request (its connection closes). */
void serve_ids_unpark(serve_worker_t *w, serve_conn_t *c);
/* 1 and a reason when /ready should say 503: IDs cannot be issued now
 * (lease, mark, clock, a request that has waited past its bound, audit_mode
 * require with the file taking no lines, a graceful stop under way, a
 * stalled loop whose clients wait). */
int serve_not_ready(serve_daemon_t *s, char *why, size_t n);
/* Requests waiting now (parked for their tick or mark), over every loop,
 * and how long the oldest has waited (ms, 0 when none waits). */
typedef struct serve_waiting {
  uint64_t requests;
  int64_t oldest_ms;
  /* What one may wait (bounded): max_wait_ms, and the rest of a used-up
   * tick when the layout's tick is a second or shorter. */
  int64_t bound_ms;
} serve_waiting_t;
serve_waiting_t serve_waiting(serve_daemon_t *s);
/* /ready is 503 once a request has waited this much longer than the bound
 * (a loop late to resume it, or a wait the generator should not allow). */
#define WAIT_MARGIN_MS 250

/* ---- serve_public.c: public IDs (public_key) ---- */
/* No public_key: a request for a public form is refused. */
#define SERVE_ENOKEY (-1002)
/* Failures counted by cause: a check (IDGEN_EKEY), a malformed form, a
 * value out of range, no key, anything else. */
enum { PUBF_KEY, PUBF_PARSE, PUBF_RANGE, PUBF_NOKEY, PUBF_OTHER, NPUBF };
_Static_assert(NPUBF == 5, "serve_wstats_t.pub_fail");
/* The configuration's keys in force (they stay the settings'); SIGHUP's
 * reload, which keeps the keys in force, with the reason logged (never a
 * key), when the file is refused; the end (after the loops). */
int serve_public_init(serve_daemon_t *s);
void serve_public_reload(serve_daemon_t *s);
void serve_public_fini(serve_daemon_t *s);
int serve_public_on(serve_daemon_t *s);
/* The loop's codec for `kind`, or NULL with why (no key, or it could not
 * be made).  serve_public_worker_free frees the loop's codecs. */
struct idgen_public *serve_public_codec(serve_worker_t *w, int kind, char *why, size_t n);
void serve_public_worker_free(serve_worker_t *w);
/* The public forms of a reply's n IDs (Snowflake: ids; others made here)
 * into b, each followed by a NUL: 0 or a code (SERVE_ENOKEY). */
int serve_public_make(serve_worker_t *w, int kind, const uint64_t *ids, size_t n, serve_buf_t *b);
/* The public form of the ID t[0..len) (decimal Snowflake, ULID, UUIDv7) in
 * the configured form into out[outn] (IDGEN_PUBLIC_TEXT_MAX), NUL ended:
 * its length, or a code with err[n]. */
int serve_public_of(serve_worker_t *w, const char *t, size_t len, char *out, size_t outn, char *err,
                    size_t n);
/* The ID behind the public form t[0..len) (either form; a text form's key
 * version in *version, 0 for an integer form) as text into out[48], and
 * its kind: the length, or a code with err[n]. */
int serve_public_reverse(serve_worker_t *w, const char *t, size_t len, char *out, int *kind,
                         unsigned *version, char *err, size_t n);
/* 1 when t looks like a text form and a key is held: the configured
 * prefix and '_', or (any prefix or none) 17 or 30 characters after the
 * last '_', not all digits. */
int serve_public_looks(serve_daemon_t *s, const char *t, size_t len);
/* Counts a failure with code rc. */
void serve_public_count(serve_worker_t *w, int rc);
/* /info's "public", /health's line, /metrics' lines: never a key. */
struct json_t *serve_public_json(serve_daemon_t *s);
void serve_public_health_line(serve_daemon_t *s, serve_buf_t *b);
/* RESP INFO's: whether public IDs are on, their form and prefix, the key
 * versions held ("1,2") into versions[n] and the newest. */
int serve_public_facts(serve_daemon_t *s, const char **form, const char **prefix, char *versions,
                       size_t n, unsigned *newest);
void serve_public_metrics(serve_daemon_t *s, serve_buf_t *b);

/* ---- serve_leases.c: the lease service for clients (--leases) ---- */
/* A request of the lease service: made by its loop (serve_http.c), which
 * parks its connection; answered by the service thread, which hands it
 * back; the loop calls answer() and resumes the connection. */
typedef struct serve_lease_job {
  struct serve_lease_job *next;
  serve_conn_t *c; /* the loop's: NULL once c has closed (the answer is dropped) */
  int worker;      /* its loop's index */
  int64_t read_ns;
  lease_body_t body;
  uint8_t peer_key[16]; /* the client's address (lease_max_per_client) */
  int agent;            /* the token's agent, or AGENT_NONE (lease_max_per_agent) */
  uint8_t minor;        /* HTTP/1.<minor> */
  /* The answer: a status, its JSON (malloc'd) and more header lines (the
   * loop's CORS line, the service's Retry-After). */
  int status;
  char *json;
  size_t json_len;
  char extra[512];
  void (*answer)(serve_worker_t *w, serve_conn_t *c, struct serve_lease_job *j);
} serve_lease_job_t;
/* Starts the service thread when cfg->leases (after the daemon's lease is
 * held): 0, or -1 with a message on stderr.  serve_leases_stop ends it once
 * the loops have ended, dropping the answers nobody waits for; the client
 * leases stay held (a daemon restarted takes them over). */
int serve_leases_start(serve_daemon_t *s);
void serve_leases_stop(serve_daemon_t *s);
/* Hands j to the service thread (c->lease_job set by the caller). */
void serve_leases_submit(serve_daemon_t *s, serve_lease_job_t *j);
/* The loop's, after each turn: the answers for its connections, each
 * followed by resume(). */
void serve_leases_run_done(serve_worker_t *w, serve_resume_cb resume);
/* c closes: its job's answer is dropped when it comes. */
void serve_leases_forget(serve_conn_t *c);
/* /info's and /status.json's "leases" (null without --leases), /metrics' lines. */
struct json_t *serve_leases_json(serve_daemon_t *s);
void serve_leases_metrics(serve_daemon_t *s, serve_buf_t *b);

/* ---- sd_notify.c: systemd's notification protocol ---- */
/* Sends msg ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET; 0 when sent or when
 * there is no such socket, else -errno. */
int serve_notify(const char *msg);
/* How often to send WATCHDOG=1 (half of $WATCHDOG_USEC), 0: no watchdog. */
int64_t serve_watchdog_interval_ms(void);

/* ---- serve_seq.c: sequences (GET /seq/NAME, RESP SEQ NAME [N]) ---- */
#define SERVE_SEQ_TEXT_MAX 128 /* bytes of one business number, with its NUL */
/* The table (empty; sequences open on first use): 0, or -1. */
int serve_seqs_init(serve_daemon_t *s);
/* Closes every sequence (each gives back what it did not issue) and the
 * registry they use; after the loops have stopped. */
void serve_seqs_close(serve_daemon_t *s);
/* cnt numbers of sequence name[len] into nums[] and, when the sequence has
 * a template, its business numbers into *texts (malloc'd: cnt times
 * SERVE_SEQ_TEXT_MAX bytes, the caller frees; else NULL): 0, or an HTTP
 * status (400 a bad name, 429 seq_max_open reached, 503 no number could be
 * taken) with why. */
int serve_seq_take(serve_daemon_t *s, const char *name, size_t len, size_t cnt, uint64_t *nums,
                   char **texts, char *why, size_t n);
void serve_seq_metrics(serve_daemon_t *s, serve_buf_t *b);
/* /health's line per sequence; the number whose claims fail. */
int serve_seq_health(serve_daemon_t *s, serve_buf_t *b);
struct json_t *serve_seq_info(serve_daemon_t *s); /* /info's "sequences" */

/* ---- serve_stats.c: agents, metrics, facts ---- */
int serve_agent_valid(const char *s, size_t n);
/* The agent index of a valid name: registered on first use while there is
 * room, else AGENT_OTHER.  Thread-safe, lock-free when the name is known. */
int serve_agent_index(serve_daemon_t *s, const char *name, size_t n);
int serve_agent_setup(serve_daemon_t *s, int64_t max_agents);
void serve_metrics_text(serve_daemon_t *s, serve_buf_t *b);
/* RESP INFO's key:value lines, of the sections in the mask (INFO_*): a value
 * with ',' '=' '%' or a byte outside '!'..'~' is percent-encoded. */
enum { INFO_SERVER = 1, INFO_CLIENTS = 2, INFO_GENERATOR = 4, INFO_STATS = 8, INFO_ALL = 15 };
void serve_info_text(serve_daemon_t *s, serve_buf_t *b, int sections);
/* A section's mask (all, default and everything: INFO_ALL), or 0. */
int serve_info_section(const char *name, size_t n);
int serve_info_json(serve_daemon_t *s, serve_buf_t *b);   /* GET /info */
int serve_status_json(serve_daemon_t *s, serve_buf_t *b); /* GET /status.json */
/* Appends o (NULL: out of memory) as one line of compact JSON and drops it;
 * -1 if it could not be written. */
struct json_t; /* jansson's json_t */
int serve_json_line(struct json_t *o, serve_buf_t *b);
extern const char serve_status_html[]; /* GET / and /status (src/server/status.html) */
extern const size_t serve_status_html_len;
/* GET /ready: "ok" (or "degraded: ...") or the reason IDs cannot be issued
 * now, then the waiting requests', the lease's and the audit log's lines;
 * returns 1 when not ready (503). */
int serve_ready_text(serve_daemon_t *s, serve_buf_t *b);
/* GET /health: "ok" while every event loop turns, or which one has not for
 * stall_timeout_ms; then "not ready: ..." when /ready would be 503.
 * Returns 1 when stalled (503). */
int serve_health_text(serve_daemon_t *s, serve_buf_t *b);
/* idgen_build_info and the process_* metrics (serve_process.c), from the
 * descriptors serve_process_open opened (none: fewer metrics). */
void serve_process_metrics(serve_daemon_t *s, serve_buf_t *b);
void serve_process_open(serve_daemon_t *s);
void serve_process_close(serve_daemon_t *s);
/* How long the event loop that turned least recently has not (ms), and
 * which (*loop; -1 without loops).  Each turns at least every SWEEP_MS;
 * one that has ended is left out.  (serve_ids.c) */
int64_t serve_loop_stalled_ms(serve_daemon_t *s, int *loop);
/* 1 and why ("stalled: event loop N ...") once a loop has not turned for
 * stall_timeout_ms: /health's 503, and /ready's too. */
int serve_stalled(serve_daemon_t *s, char *why, size_t n);
void serve_observe_latency(serve_worker_t *w, int proto, int64_t ns, size_t n);
/* Node field `field`'s value in use (the lease's for the leased field). */
uint64_t serve_node_value(serve_daemon_t *s, int field);

/* ---- serve_audit.c: the audit log, written by a thread of its own ---- */
typedef struct serve_audit serve_audit_t;
/* Opens cfg->audit_log (none: s->audit stays NULL): 0, or -1 with a
 * message on stderr.  serve_audit_start starts its writer once the loops
 * are set up; serve_audit_stop gives it shutdown_timeout_ms to write what
 * waits (once the loops have ended), then frees it (or leaves it to a write
 * that blocks).  serve_audit_reopen: SIGHUP. */
int serve_audit_open(serve_daemon_t *s);
int serve_audit_start(serve_daemon_t *s);
void serve_audit_reopen(serve_daemon_t *s);
void serve_audit_stop(serve_daemon_t *s);
/* A line for an answered Snowflake request (its first ID; its reply made
 * in w->out from reply_start to the end) into the loop's buffer; in require
 * mode c's replies must then wait (c->audit_seq), and the reply is noted in
 * c->held_ids.  serve_audit_handoff hands the loop's lines to the writer (at
 * the end of each turn, and when they pass 64 KiB). */
void serve_audit(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh, uint64_t first,
                 size_t reply_start);
void serve_audit_handoff(serve_worker_t *w);
/* require: a held reply refused at audit_timeout_ms.  serve_audit_void puts
 * the line saying its IDs were not sent into the loop's buffer (after its
 * record, in lane order); serve_audit_timed_out counts n of them; the
 * refusal's reason into buf[n]. */
void serve_audit_void(serve_worker_t *w, const serve_held_reply_t *h);
void serve_audit_timed_out(serve_daemon_t *s, uint64_t n);
void serve_audit_timeout_text(serve_daemon_t *s, char *buf, size_t n);
/* The bytes of the loop's lines written so far (against c->audit_seq), and
 * whether the loop waits for more (the writer wakes it then). */
uint64_t serve_audit_written(serve_worker_t *w);
void serve_audit_waiting(serve_worker_t *w, int on);
/* require mode: 1 (counted) when an ID request must be refused now, and
 * the reason for its answer. */
int serve_audit_refuses(serve_daemon_t *s);
void serve_audit_refusal_text(serve_daemon_t *s, char *buf, size_t n);
/* /ready: 1 and a reason for a 503 (require), or for a 200 that says
 * "degraded: ..." (count); the "audit ..." line of figures. */
int serve_audit_unhealthy(serve_daemon_t *s, char *why, size_t n);
int serve_audit_degraded(serve_daemon_t *s, char *why, size_t n);
void serve_audit_health_line(serve_daemon_t *s, serve_buf_t *b);
/* /info's and /status.json's "audit" (null without), and /metrics' lines. */
struct json_t *serve_audit_json(serve_daemon_t *s);
void serve_audit_metrics(serve_daemon_t *s, serve_buf_t *b);
/* ---- the protocols (serve_http.c, serve_resp.c, serve_thrift.c) ---- */
/* A protocol as the loops see it, as Redis's connection type: each
 * protocol's file defines its table; serve_main.c hands it to the listeners
 * it binds, and each connection carries its listener's (c->type).  The
 * files above the protocols call through it and never ask which protocol
 * they have. */
typedef struct serve_proto {
  const char *name; /* "http", "resp", "thrift" (serve_proto_name): logs, metric labels */
  int index;        /* PROTO_*: its counters' index (c->proto) */
  /* Handles the first request (a Thrift call: one frame) in buf[0..len) of
   * connection c, appending its reply to w->out; an ID request goes to
   * serve_ids_request with the protocol's serve_replies_t.  Returns the
   * bytes it used, or 0 if the request is not whole yet.  Sets
   * c->stop_parsing when the connection should close after its replies. */
  size_t (*handle)(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len);
  /* Every request ends with a line feed: a partial request is not parsed
   * again until another has come (one byte at a time would cost quadratic
   * time).  0 for Thrift's binary frames. */
  int lf_ended;
  /* Appends its answer to input over max_request_bytes that no request
   * bounded (RESP: a command of many small arguments), counted as a reply;
   * the connection closes after it.  NULL: it closes without one. */
  void (*oversize)(serve_worker_t *w, serve_conn_t *c);
  /* c closes: what the protocol keeps for it is freed.  NULL: nothing. */
  void (*closed)(serve_worker_t *w, serve_conn_t *c);
  /* Written to a client refused past max_connections before the close
   * ("": the close says it). */
  const char *full_refusal;
  /* It speaks TLS when tls_cert is set (Thrift's clients do not: it stays
   * plain text), and tells a client that speaks plain text to it then
   * tls_plain_refusal. */
  int tls;
  const char *tls_plain_refusal;
} serve_proto_t;
extern const serve_proto_t serve_http_proto, serve_resp_proto, serve_thrift_proto;

/* The tables' handlers, also called alone by the fuzzers. */
size_t serve_http_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len);
size_t serve_resp_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len);
size_t serve_thrift_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len);
/* c's open transaction (if any) ends: its queue no longer counts toward
 * MULTI_BUDGET_BYTES (its bytes stay in c->multi_q for the caller). */
void serve_resp_multi_forget(serve_daemon_t *s, serve_conn_t *c);

#endif
