/*
 * fuzz_serve.c -- libFuzzer target for the daemon's request handlers,
 * serve_resp_handle() and serve_http_handle() (src/server/serve_resp.c,
 * serve_http.c), with an auth_file in force: AUTH, HELLO 2|3 AUTH, Bearer
 * tokens, NOAUTH, WRONGPASS, the slowing of wrong tokens by address
 * (serve_auth.c: hold_until_ms, AUTH_LIMITED) and every command after
 * sign-in; with a public_key in force too (prefix user): format=public,
 * /decode of public forms, PUBLIC and UNPUBLIC (serve_public.c).  The parsers alone are fuzz_resp.c and fuzz_http.c.
 *
 * DESIGN.  The daemon is set up once, as `idgen serve` sets it up but with
 * no socket or thread (serve_setup_for_test), from the flags below and an
 * auth file written to a temporary directory (and removed once read).
 * An input is one or more connections, each a record:
 *
 *   [flags] [peer] [len, 2 bytes little-endian] [len bytes]
 *
 * flags bit 0 picks the protocol (0 HTTP, 1 RESP) and bits 1-3 how the
 * clocks move before the connection opens (steps[]: not at all, a tick, a
 * slowing step, past the slowing's bound or past its memory, or the wall
 * clock a second back); peer is the client's address
 * (::ffff:10.0.0.peer); a len past the input's end takes the rest.  Each
 * connection is fed as serve_loop.c's process() feeds one, from a buffer of
 * exactly its bytes (so that a read past them is ASan's): the handler again
 * and again on what is left until it needs more or the connection stops,
 * and after an EXEC the transaction's queue before what is left.
 * Several connections from one address reach what one cannot (it closes at
 * AUTH_FAILS_MAX wrong tokens): its sixth wrong token is slowed, and enough
 * more are refused with AUTH_LIMITED.  An answer held for the slowing is
 * let go at once and the connection goes on, as it would once its time
 * came; a request parked for its tick is dropped (serve_ids_unpark, as when
 * its connection closes) and the connection goes on, as it would once it
 * was answered.
 *
 * Clocks.  Two are the input's: the loop's (w->now_ms, which the slowing
 * reads) and the Snowflake generator's (injected: idgen_clock_t), so that
 * whether a token's answer is slowed, or a batch waits or is refused, does
 * not depend on how fast the fuzzer runs.  Each input starts at the same
 * reading of the loop's clock, with the table of addresses afresh (made
 * anew after an input that showed a wrong token), and a second after the
 * generator's clock was furthest before (past any wait it left), so that
 * an input replays alike; only the counters and the agents' names
 * (registered on first use, up to max_agents) carry over, and the ULID and
 * UUIDv7 generators keep the real clock.
 *
 * Properties, besides no crash and no ASan or UBSan report: a handler never
 * takes more bytes than it was given; every HTTP reply starts with a status
 * line and every RESP reply with a RESP type byte; a RESP connection not
 * signed in gets errors only (or QUIT's +OK); an answer held for the
 * slowing is due within AUTH_HOLD_MAX_MS + AUTH_STEP_MS; and a connection
 * stops at AUTH_FAILS_MAX wrong tokens.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_int.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two agents, so that AUTH AGENT TOKEN can name the wrong one. */
static const char auth_text[] = "app 0123456789abcdef0123456789abcdef\n"
                                "batch-job fedcba9876543210fedcba9876543210\n";

/* A key file's text: a fixed key, as a test's (nothing here is secret). */
static const char key_text[] =
    "v1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
    "v2 202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f\n";

/* How the clocks move before a connection: the loop's (monotonic) and the
 * wall clock the generator reads, which may also step back (NTP). */
static const struct {
  int64_t loop_ms, wall_ms;
} steps[8] = {
    {0, 0},
    {0, -1000},
    {1, 1},
    {AUTH_STEP_MS / 2, AUTH_STEP_MS / 2},
    {AUTH_STEP_MS, AUTH_STEP_MS},
    {AUTH_HOLD_MAX_MS + AUTH_STEP_MS, AUTH_HOLD_MAX_MS + AUTH_STEP_MS},
    {AUTH_FORGET_MS, AUTH_FORGET_MS},
    {AUTH_FORGET_MS + AUTH_HOLD_MAX_MS + AUTH_STEP_MS,
     AUTH_FORGET_MS + AUTH_HOLD_MAX_MS + AUTH_STEP_MS},
};

/* The Snowflake generator's clock (Unix ns), moved by the inputs only;
 * sleep_ns (never called by the daemon, whose calls do not block) moves it
 * too, as the library's tests' clocks do. */
static int64_t gen_now_ns, gen_high_ns; /* now, and the furthest it has been */
static void wall_move(int64_t ns) {
  gen_now_ns += ns;
  if (gen_now_ns > gen_high_ns)
    gen_high_ns = gen_now_ns;
}
static int64_t gen_clock_now(void *ctx) {
  (void)ctx;
  return gen_now_ns;
}
static void gen_clock_sleep(void *ctx, int64_t ns) {
  (void)ctx;
  wall_move(ns);
}
static const idgen_clock_t gen_clock = {gen_clock_now, gen_clock_sleep, NULL};

static serve_config_t cfg;
static serve_daemon_t srv;
static serve_worker_t *w;
static int64_t base_ms;  /* the loop's clock at each input's start */
static uint64_t next_id; /* CLIENT ID */
static int addrs_used;   /* a wrong token was shown: the table of addresses has it */

/* The IDGEN_* variables would change the settings below: none is read. */
static void clear_idgen_env(void) {
  extern char **environ;
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; *e != NULL; e++)
      if (strncmp(*e, "IDGEN_", 6) == 0 && strchr(*e, '=') != NULL) {
        char name[256];
        size_t n = (size_t)(strchr(*e, '=') - *e);
        snprintf(name, sizeof name, "%.*s", (int)n, *e);
        unsetenv(name); /* environ changed: look again from the start */
        again = 1;
        break;
      }
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  clear_idgen_env();
  char dir[] = "/tmp/fuzz_serve.XXXXXX", path[sizeof dir + 8], kpath[sizeof dir + 8];
  if (mkdtemp(dir) == NULL) {
    perror("fuzz_serve: mkdtemp");
    abort();
  }
  snprintf(path, sizeof path, "%s/auth", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, auth_text, sizeof auth_text - 1) != (ssize_t)(sizeof auth_text - 1)) {
    perror("fuzz_serve: the auth file");
    abort();
  }
  close(fd);
  snprintf(kpath, sizeof kpath, "%s/key", dir);
  fd = open(kpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || write(fd, key_text, sizeof key_text - 1) != (ssize_t)(sizeof key_text - 1)) {
    perror("fuzz_serve: the key file");
    abort();
  }
  close(fd);
  /* max_batch 5000, not the layout's 100000, whose reply (2 MB) would cost
   * an input milliseconds; 5000 is past a tick's 4096 IDs, and with
   * max_borrow_ms 0 and max_wait_ms 5 such a batch waits for the next tick
   * (is parked), and a few more are refused (ECLOCK, EBATCH).
   * max_request_bytes at its least, 1024, so that inputs reach it. */
  /* clang-format off */
  char *args[] = {"serve",
                  "--registry", "static", "--layout", "twitter",
                  "--node", "datacenter=1", "--node", "worker=1",
                  "--threads", "1", "--max-batch", "5000",
                  "--max-borrow-ms", "0", "--max-wait-ms", "5",
                  "--max-request-bytes", "1024",
                  "--auth-file", path,
                  "--public-key", kpath, "--public-prefix", "user"};
  /* clang-format on */
  int rc = serve_config_load(&cfg, (int)(sizeof args / sizeof args[0]), args);
  unlink(path); /* read: auth_file is read again only on SIGHUP */
  unlink(kpath);
  rmdir(dir);
  gen_now_ns = gen_high_ns = idgen_clock_now_ms(IDGEN_CLOCK_PRECISE) * 1000000;
  cfg.s.gen.clock = &gen_clock;
  if (rc != 0 || cfg.auth == NULL || serve_setup_for_test(&srv, &cfg) < 0) {
    fprintf(stderr, "fuzz_serve: cannot set up the daemon (%d)\n", rc);
    abort();
  }
  srv.auth_addrs_seed = 0; /* (not the run's random one: an input replays alike) */
  w = &srv.workers[0];
  base_ms = serve_mono_ms();
  return 0;
}

/* What a reply of protocol `proto` may start with. */
static int reply_well_formed(int proto, const serve_buf_t *out) {
  if (out->len == 0)
    return 1;
  if (proto == PROTO_HTTP)
    return out->len >= 9 && memcmp(out->p, "HTTP/1.1 ", 9) == 0;
  return strchr("+-:$*%_", out->p[0]) != NULL;
}

/* a[0..an) and b[0..bn) in a buffer of exactly their bytes. */
static char *exact(const void *a, size_t an, const void *b, size_t bn) {
  char *p = malloc(an + bn > 0 ? an + bn : 1);
  if (p == NULL)
    abort();
  if (an > 0)
    memcpy(p, a, an);
  if (bn > 0)
    memcpy(p + an, b, bn);
  return p;
}

/* One connection: its bytes fed to its handler as process() feeds them. */
static void connection(uint8_t flags, uint8_t peer, const uint8_t *data, size_t len) {
  serve_conn_t *c = calloc(1, sizeof *c);
  char *buf = exact(data, len, NULL, 0);
  if (c == NULL)
    abort();
  c->tag = TAG_CONN;
  c->fd = -1;
  c->type = (flags & 1) ? &serve_resp_proto : &serve_http_proto; /* as the listener gives it */
  c->proto = c->type->index;
  c->authed = 0; /* auth_file is in force */
  c->peer_key[10] = c->peer_key[11] = 0xff;
  c->peer_key[12] = 10;
  c->peer_key[15] = peer;
  c->id = ++next_id;
  w->now_ms += steps[(flags >> 1) & 7].loop_ms;
  wall_move(steps[(flags >> 1) & 7].wall_ms * 1000000);
  c->active_ms = w->now_ms;
  w->read_ns = serve_mono_ns();
  size_t pos = 0;
  while (pos < len && !c->stop_parsing) {
    int was_authed = c->authed;
    w->out.len = 0;
    w->replies = 0;
    size_t used = c->type->handle(w, c, buf + pos, len - pos);
    if (used > len - pos || !reply_well_formed(c->proto, &w->out) ||
        c->auth_fails > AUTH_FAILS_MAX || (c->auth_fails == AUTH_FAILS_MAX && !c->stop_parsing))
      abort();
    /* Before sign-in, RESP answers nothing but errors, and QUIT. */
    if (c->proto == PROTO_RESP && !was_authed && !c->authed && w->out.len > 0 &&
        w->out.p[0] != '-' &&
        !(c->stop_parsing && w->out.len == 5 && memcmp(w->out.p, "+OK\r\n", 5) == 0))
      abort();
    if (c->hold_until_ms != 0) {
      if (c->hold_until_ms <= w->now_ms ||
          c->hold_until_ms > w->now_ms + AUTH_HOLD_MAX_MS + AUTH_STEP_MS)
        abort();
      c->hold_until_ms = 0; /* its time has come */
    }
    if (c->parked)
      serve_ids_unpark(w, c); /* as if answered (it waits for the clock) */
    if (used == 0)
      break; /* the rest is a partial request */
    pos += used;
    if (c->exec_pending) { /* EXEC: the queued commands come next, before the rest */
      char *nb = exact(c->multi_q.p, c->multi_q.len, buf + pos, len - pos);
      len = c->multi_q.len + (len - pos);
      pos = 0;
      free(buf);
      buf = nb;
      serve_buf_free(&c->multi_q);
      c->exec_pending = 0;
    }
  }
  if (c->auth_fails > 0) /* (counted just where serve_auth.c notes the address) */
    addrs_used = 1;
  serve_ids_unpark(w, c); /* what conn_close() frees */
  serve_buf_free(&c->in);
  serve_buf_free(&c->out);
  serve_buf_free(&c->held_ids);
  if (c->type->closed != NULL) /* as conn_close(): RESP ends an open transaction */
    c->type->closed(w, c);
  serve_buf_free(&c->multi_q);
  free(c);
  free(buf);
  w->out.len = 0;
  if (w->out.cap > SCRATCH_KEEP) /* as process() gives a large batch's memory back */
    serve_buf_free(&w->out);
  if (w->body.cap > SCRATCH_KEEP)
    serve_buf_free(&w->body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  w->now_ms = base_ms;
  gen_now_ns = gen_high_ns + 1000000000;
  for (size_t at = 0; size - at >= 4;) {
    uint8_t flags = data[at], peer = data[at + 1];
    size_t len = (size_t)data[at + 2] | (size_t)data[at + 3] << 8;
    at += 4;
    if (len > size - at)
      len = size - at;
    connection(flags, peer, data + at, len);
    at += len;
  }
  if (addrs_used) { /* the table of addresses afresh for the next input */
    addrs_used = 0;
    free(srv.auth_addrs);
    srv.auth_addrs = NULL;
    pthread_mutex_destroy(&srv.auth_addrs_mu);
    if (serve_auth_init(&srv) < 0)
      abort();
    srv.auth_addrs_seed = 0; /* (not the run's random one: an input replays alike) */
  }
  return 0;
}
