/*
 * serve_resp.c -- the RESP2 side of `idgen serve` (docs/SERVE.md, DESIGN §10).
 *
 * One command at a time from the connection's buffer, parsed by resp.c;
 * replies follow Redis's forms so that any Redis client works, including
 * its error texts (unknown command, arity, integers) and what redis-cli,
 * redis-benchmark and client libraries send on connecting (COMMAND DOCS,
 * CONFIG GET, HELLO, CLIENT SETNAME/SETINFO, SELECT 0).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "decode.h"
#include "resp.h"
#include "server_int.h"

static void reply(serve_worker_t *w, const char *s) { serve_buf_put(&w->out, s, strlen(s)); }

static void reply_bulk(serve_worker_t *w, const char *s, size_t n) {
  serve_buf_printf(&w->out, "$%zu\r\n", n);
  serve_buf_put(&w->out, s, n);
  serve_buf_put(&w->out, "\r\n", 2);
}

static void reply_int(serve_worker_t *w, int64_t v) {
  serve_buf_printf(&w->out, ":%" PRId64 "\r\n", v);
}

/* An argument echoed in an error, as Redis does, but printable: other bytes
 * as \xHH (idgen_quote), at most 128 characters; for '%s' in a format. */
#define ARG_QUOTE(a) IDGEN_QUOTE((a)->ptr, (a)->len, '\'', 128)

/* "-ERR ..." with CR and LF made spaces, as Redis does (arguments are
 * quoted before, so only the message's own text could hold them). */
__attribute__((format(printf, 3, 4))) static void reply_err(serve_worker_t *w, serve_conn_t *c,
                                                            const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  for (char *p = msg; *p; p++)
    if (*p == '\r' || *p == '\n')
      *p = ' ';
  serve_buf_put(&w->out, "-", 1);
  serve_buf_put(&w->out, msg, strlen(msg));
  serve_buf_put(&w->out, "\r\n", 2);
  CNT_ADD(w->st.resp_err, 1);
  (void)c;
}

static int arg_is(const resp_arg_t *a, const char *lit) {
  size_t n = strlen(lit);
  return a->len == n && strncasecmp(a->ptr, lit, n) == 0;
}

/* Redis's string2ll: optional '-', digits, no leading zeros, no spaces. */
static int arg_int(const resp_arg_t *a, int64_t *out) {
  const char *p = a->ptr;
  size_t n = a->len, i = 0;
  int neg = 0;
  if (n == 0 || n > 20)
    return -1;
  if (p[0] == '-') {
    neg = 1;
    i = 1;
    if (n == 1)
      return -1;
  }
  if (p[i] == '0' && n > i + 1)
    return -1;
  uint64_t v = 0;
  for (; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    uint64_t d = (uint64_t)(p[i] - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
    return -1;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

static void wrong_arity(serve_worker_t *w, serve_conn_t *c, const char *name) {
  reply_err(w, c, "ERR wrong number of arguments for '%s' command", name);
}

typedef void command_fn(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r);
static command_fn on_id, on_idstr, on_ulid, on_uuid7, on_decode, on_info, on_ping, on_echo, on_quit,
    on_client, on_command, on_hello, on_config, on_select, on_auth, on_seq, on_public, on_unpublic;

/* The commands, as Redis's command table: the name (lower case), what runs
 * it (NULL: the transaction's, transaction_step), and for COMMAND and
 * COMMAND COUNT the arity (negative: at least) and a flag.  ID first: the
 * one asked for most is found first. */
static const struct cmdinfo {
  const char *name;
  command_fn *run;
  int arity;
  const char *flag;
} commands[] = {
    {"id", on_id, -1, "fast"},
    {"idstr", on_idstr, -1, "fast"},
    {"ulid", on_ulid, -1, "fast"},
    {"uuid7", on_uuid7, -1, "fast"},
    {"decode", on_decode, 2, "fast"},
    {"public", on_public, 2, "fast"},
    {"unpublic", on_unpublic, 2, "fast"},
    {"seq", on_seq, -2, "fast"},
    {"info", on_info, -1, "loading"},
    {"ping", on_ping, -1, "fast"},
    {"echo", on_echo, 2, "fast"},
    {"quit", on_quit, -1, "fast"},
    {"client", on_client, -2, "loading"},
    {"command", on_command, -1, "loading"},
    {"hello", on_hello, -1, "fast"},
    {"config", on_config, -2, "loading"},
    {"select", on_select, 2, "fast"},
    {"auth", on_auth, -2, "fast"},
    {"multi", NULL, 1, "fast"},
    {"exec", NULL, 1, "loading"},
    {"discard", NULL, 1, "fast"},
    {"watch", NULL, -2, "fast"},
    {"unwatch", NULL, 1, "fast"},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void reply_command_entry(serve_worker_t *w, const struct cmdinfo *ci) {
  serve_buf_printf(&w->out, "*6\r\n$%zu\r\n%s\r\n:%d\r\n*1\r\n+%s\r\n:0\r\n:0\r\n:0\r\n",
                   strlen(ci->name), ci->name, ci->arity, ci->flag);
}

/* ID, IDSTR, ULID, UUID7's reply: for ID, an integer for each Snowflake ID
 * that fits in one, else a bulk string; for IDSTR and the 128-bit kinds a
 * bulk string; an array for ID N (sh->array).  IDSTR is the exact path for
 * clients that read integers as doubles (JavaScript's: 2^53 and up come
 * back rounded, several IDs as one). */
static int reply_ids(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                     const uint64_t *ids) {
  serve_buf_t *b = &w->out;
  size_t start = b->len, n = sh->count;
  serve_buf_reserve(b, n * 44 + 32);
  char *p = b->p + b->len;
  if (sh->array)
    p += snprintf(p, 24, "*%zu\r\n", n);
  for (size_t i = 0; i < n; i++) {
    char text[40];
    int len = sh->kind == KIND_SNOWFLAKE ? (int)serve_u64_dec(text, ids[i])
                                         : serve_ids_make128(w->srv, sh->kind, text);
    if (len < 0) {
      b->len = start;
      return len;
    }
    if (sh->kind == KIND_SNOWFLAKE && ids[i] <= INT64_MAX && !sh->text) {
      *p++ = ':';
    } else if (sh->kind == KIND_SNOWFLAKE && !sh->text && c->resp3) {
      *p++ = '('; /* past INT64_MAX: RESP3's big number */
    } else {      /* 128-bit, or past INT64_MAX (a RESP2 integer cannot carry it) */
      p += snprintf(p, 8, "$%d\r\n", len);
    }
    memcpy(p, text, (size_t)len);
    p += len;
    *p++ = '\r';
    *p++ = '\n';
  }
  b->len = (size_t)(p - b->p);
  CNT_ADD(w->st.resp_ok, 1);
  return 0;
}

static void reply_ids_error(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                            int rc, const char *why, int64_t wait_ms) {
  (void)sh, (void)rc, (void)wait_ms;
  reply_err(w, c, "ERR %s", why);
}

static const serve_replies_t resp_replies = {reply_ids, reply_ids_error};

/* The commands that take more than a line: on_NAME answers NAME. */
static void on_ids(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r, int kind,
                   int text) {
  const char *name = serve_kind_name(kind);
  int64_t n = 1;
  if (r->argc > 2) {
    wrong_arity(w, c, kind != KIND_SNOWFLAKE ? name : text ? "idstr" : "id");
    return;
  }
  if (r->argc == 2) {
    if (arg_int(&r->argv[1], &n) < 0) {
      reply_err(w, c, "ERR value is not an integer or out of range");
      return;
    }
    if (n < 1 || n > w->srv->cfg->max_batch) {
      reply_err(w, c, "ERR count %" PRId64 " out of range 1..%" PRId64 " (max_batch)", n,
                w->srv->cfg->max_batch);
      return;
    }
  }
  /* ID N is an array even for N = 1; a bare ID is one value. */
  serve_reply_shape_t sh = {.replies = &resp_replies,
                            .proto = PROTO_RESP,
                            .kind = (uint8_t)kind,
                            .array = r->argc == 2,
                            .text = (uint8_t)text,
                            .agent = c->agent,
                            .count = (size_t)n};
  serve_ids_request(w, c, &sh);
  if (c->parked)
    w->replies--; /* answered later, when its tick comes */
}

/* SEQ NAME [N]: a number of sequence NAME (an integer; a bulk string when
 * it has a template), or N of them as an array. */
static void on_seq(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  int64_t n = 1;
  if (r->argc < 2 || r->argc > 3) {
    wrong_arity(w, c, "seq");
    return;
  }
  if (r->argc == 3) {
    if (arg_int(&r->argv[2], &n) < 0) {
      reply_err(w, c, "ERR value is not an integer or out of range");
      return;
    }
    if (n < 1 || n > w->srv->cfg->max_batch) {
      reply_err(w, c, "ERR count %" PRId64 " out of range 1..%" PRId64 " (max_batch)", n,
                w->srv->cfg->max_batch);
      return;
    }
  }
  uint64_t *nums = malloc((size_t)n * sizeof *nums);
  char *texts = NULL, why[600];
  int status = nums ? 0 : 500;
  if (status != 0)
    snprintf(why, sizeof why, "out of memory");
  else
    status = serve_seq_take(w->srv, r->argv[1].ptr, r->argv[1].len, (size_t)n, nums, &texts, why,
                            sizeof why);
  int text = texts != NULL;
  if (status != 0) {
    reply_err(w, c, "ERR %s", why);
  } else {
    if (r->argc == 3)
      serve_buf_printf(&w->out, "*%" PRId64 "\r\n", n);
    for (int64_t i = 0; i < n; i++) {
      if (text)
        reply_bulk(w, texts + i * SERVE_SEQ_TEXT_MAX, strlen(texts + i * SERVE_SEQ_TEXT_MAX));
      else
        reply_int(w, (int64_t)nums[i]);
    }
    CNT_ADD(w->st.resp_ok, 1);
  }
  free(nums);
  free(texts);
}

/* CLIENT SETNAME and HELLO's SETNAME: Redis's rule (no spaces, newlines or
 * other bytes outside '!'..'~'; empty clears the name), so that a client
 * library's handshake with a name such as "my_app:1" works.  A name that is
 * also an agent name ([a-zA-Z][a-zA-Z0-9-]*) is the agent counted in the
 * metrics; any other counts under "other".  0, or -1 with the error sent. */
static int set_client_name(serve_worker_t *w, serve_conn_t *c, const resp_arg_t *a) {
  for (size_t i = 0; i < a->len; i++)
    if (a->ptr[i] < '!' || a->ptr[i] > '~') {
      reply_err(w, c, "ERR Client names cannot contain spaces, newlines or special characters.");
      return -1;
    }
  if (a->len > AGENT_NAME_MAX) {
    reply_err(w, c, "ERR Client names of more than %d characters are not kept (idgen)",
              AGENT_NAME_MAX);
    return -1;
  }
  memcpy(c->name, a->ptr, a->len);
  c->name[a->len] = '\0';
  if (c->auth_agent)
    return 0; /* the agent is the token's */
  c->agent = a->len == 0                         ? AGENT_NONE
             : serve_agent_valid(a->ptr, a->len) ? serve_agent_index(w->srv, a->ptr, a->len)
                                                 : AGENT_OTHER;
  return 0;
}

static void on_client(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc < 2) {
    wrong_arity(w, c, "client");
    return;
  }
  const resp_arg_t *sub = &r->argv[1];
  if (arg_is(sub, "setname")) {
    if (r->argc != 3) {
      wrong_arity(w, c, "client|setname");
      return;
    }
    if (set_client_name(w, c, &r->argv[2]) < 0)
      return;
    reply(w, "+OK\r\n");
  } else if (arg_is(sub, "getname") && r->argc == 2) {
    if (c->name[0])
      reply_bulk(w, c->name, strlen(c->name));
    else
      reply(w, c->resp3 ? "_\r\n" : "$-1\r\n");
  } else if (arg_is(sub, "id") && r->argc == 2) {
    reply_int(w, (int64_t)c->id);
  } else if (arg_is(sub, "setinfo") && r->argc == 4) {
    reply(w, "+OK\r\n"); /* LIB-NAME / LIB-VER, sent by newer client libraries */
  } else {
    reply_err(w, c, "ERR unknown subcommand '%s'. Try CLIENT HELP.", ARG_QUOTE(sub));
    return;
  }
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_command(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc == 1) {
    serve_buf_printf(&w->out, "*%zu\r\n", NCOMMANDS);
    for (size_t i = 0; i < NCOMMANDS; i++)
      reply_command_entry(w, &commands[i]);
  } else if (arg_is(&r->argv[1], "count") && r->argc == 2) {
    reply_int(w, (int64_t)NCOMMANDS);
  } else if (arg_is(&r->argv[1], "docs")) {
    reply(w, c->resp3 ? "%0\r\n" : "*0\r\n"); /* (a map in RESP3) */
  } else if (arg_is(&r->argv[1], "info")) {
    size_t n = r->argc - 2 > RESP_MAX_ARGV - 2 ? RESP_MAX_ARGV - 2 : r->argc - 2;
    serve_buf_printf(&w->out, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++) {
      const struct cmdinfo *ci = NULL;
      for (size_t k = 0; k < NCOMMANDS && !ci; k++)
        if (arg_is(&r->argv[2 + i], commands[k].name))
          ci = &commands[k];
      if (ci)
        reply_command_entry(w, ci);
      else
        reply(w, c->resp3 ? "_\r\n" : "*-1\r\n");
    }
  } else {
    reply_err(w, c, "ERR unknown subcommand '%s'. Try COMMAND HELP.", ARG_QUOTE(&r->argv[1]));
    return;
  }
  CNT_ADD(w->st.resp_ok, 1);
}

/* AUTH's check, shared with HELLO's AUTH: 0 with c signed in as the
 * token's agent, or -1 with Redis's answer sent.  Without auth_file, AUTH
 * is an error as in a Redis with no password. */
static int sign_in(serve_worker_t *w, serve_conn_t *c, const resp_arg_t *agent,
                   const resp_arg_t *tok) {
  if (atomic_load_explicit(&w->srv->auth, memory_order_relaxed) == NULL) {
    reply_err(w, c,
              "ERR AUTH <password> called without any password configured for the default "
              "user. Are you sure your configuration is correct?");
    return -1;
  }
  int index;
  /* "default" is the user a Redis client names when given only a password */
  int any = agent == NULL || arg_is(agent, "default");
  int r = serve_auth_caller(w, c, any ? NULL : agent->ptr, any ? 0 : agent->len, tok->ptr, tok->len,
                            &index);
  if (r < 0) {
    c->authed = 0;
    reply_err(w, c,
              r == AUTH_LIMITED
                  ? "ERR too many wrong tokens from this address: try again in a few seconds"
                  : "WRONGPASS invalid username-password pair or user is disabled.");
    return -1;
  }
  c->authed = 1;
  c->auth_agent = 1;
  c->agent = index;
  return 0;
}

static void on_auth(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc != 2 && r->argc != 3) {
    wrong_arity(w, c, "auth");
    return;
  }
  if (sign_in(w, c, r->argc == 3 ? &r->argv[1] : NULL, &r->argv[r->argc - 1]) < 0)
    return;
  reply(w, "+OK\r\n");
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_hello(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  size_t i = 1;
  int proto = c->resp3 ? 3 : 2; /* HELLO without a version keeps the connection's */
  if (r->argc >= 2) {
    int64_t v;
    if (arg_int(&r->argv[1], &v) < 0) {
      reply_err(w, c, "ERR Protocol version is not an integer or out of range");
      return;
    }
    if (v != 2 && v != 3) {
      reply_err(w, c, "NOPROTO sorry, this protocol version is not supported.");
      return;
    }
    proto = (int)v;
    i = 2;
  }
  const resp_arg_t *setname = NULL, *user = NULL, *pass = NULL;
  for (; i < r->argc; i++) {
    if (i < RESP_MAX_ARGV - 1 && arg_is(&r->argv[i], "setname") && i + 1 < r->argc) {
      setname = &r->argv[++i];
    } else if (i < RESP_MAX_ARGV - 2 && arg_is(&r->argv[i], "auth") && i + 2 < r->argc) {
      user = &r->argv[++i];
      pass = &r->argv[++i];
    } else {
      const resp_arg_t *a = &r->argv[i < RESP_MAX_ARGV ? i : RESP_MAX_ARGV - 1];
      reply_err(w, c, "ERR Syntax error in HELLO option '%s'",
                IDGEN_QUOTE(a->ptr, a->len, '\'', 64));
      return;
    }
  }
  if (pass != NULL && sign_in(w, c, user, pass) < 0)
    return;
  if (!c->authed) {
    reply_err(w, c,
              "NOAUTH HELLO must be called with the client already authenticated, otherwise "
              "the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the "
              "client and select the RESP protocol version at the same time");
    return;
  }
  if (setname && set_client_name(w, c, setname) < 0)
    return;
  /* RESP3: every reply idgen makes is the same in both but for nulls and
   * this one, a map (Redis's HELLO's fields, in its order). */
  c->resp3 = proto == 3;
  const char *v = idgen_version();
  serve_buf_printf(&w->out,
                   "%s\r\n$6\r\nserver\r\n$5\r\nidgen\r\n$7\r\nversion\r\n$%zu\r\n%s\r\n"
                   "$5\r\nproto\r\n:%d\r\n$2\r\nid\r\n:%" PRIu64
                   "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                   "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
                   c->resp3 ? "%7" : "*14", strlen(v), v, proto, c->id);
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_decode(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  decoded_t d;
  char err[400];
  if (r->argc != 2) {
    wrong_arity(w, c, "decode");
    return;
  }
  if (decode_id(w->srv->layout, r->argv[1].ptr, r->argv[1].len, 0, &d, err, sizeof err) < 0) {
    reply_err(w, c, "ERR %s", err);
    return;
  }
  char text[DECODE_JSON_MAX];
  int n = decode_json(&d, text, sizeof text);
  if (n < 0) { /* DECODE_JSON_MAX holds any */
    reply_err(w, c, "ERR the decoded JSON does not fit");
    return;
  }
  reply_bulk(w, text, (size_t)n);
  CNT_ADD(w->st.resp_ok, 1);
}

/* PUBLIC ID: the ID's public form (public_form); UNPUBLIC PUB: the ID
 * behind a public form (either form).  Refused without public_key. */
static void on_public(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  char out[IDGEN_PUBLIC_TEXT_MAX + 48], err[400];
  if (r->argc != 2) {
    wrong_arity(w, c, "public");
    return;
  }
  int n = serve_public_of(w, r->argv[1].ptr, r->argv[1].len, out, sizeof out, err, sizeof err);
  if (n < 0) {
    reply_err(w, c, "ERR %s", err);
    return;
  }
  reply_bulk(w, out, (size_t)n);
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_unpublic(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  char out[64], err[400];
  int kind;
  unsigned version;
  if (r->argc != 2) {
    wrong_arity(w, c, "unpublic");
    return;
  }
  int n = serve_public_reverse(w, r->argv[1].ptr, r->argv[1].len, out, &kind, &version, err,
                               sizeof err);
  if (n < 0) {
    reply_err(w, c, "ERR %s", err);
    return;
  }
  reply_bulk(w, out, (size_t)n);
  CNT_ADD(w->st.resp_ok, 1);
}

/* Redis's text: the arguments, each quoted, while they fit in about 128
 * characters. */
static void unknown_command(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  char args[160] = "", q[129];
  size_t used = 0, n = r->argc < RESP_MAX_ARGV ? r->argc : RESP_MAX_ARGV;
  for (size_t i = 1; i < n && used + 4 <= 128; i++) {
    idgen_quote(q, 128 - used + 1, r->argv[i].ptr, r->argv[i].len, '\'');
    used += (size_t)snprintf(args + used, sizeof args - used, "'%s' ", q);
  }
  reply_err(w, c, "ERR unknown command '%s', with args beginning with: %s", ARG_QUOTE(&r->argv[0]),
            args);
}

void serve_resp_multi_forget(serve_daemon_t *s, serve_conn_t *c) {
  if (c->multi)
    atomic_fetch_sub_explicit(&s->multi_bytes, (int64_t)c->multi_q.len, memory_order_relaxed);
  c->multi = c->multi_dirty = 0;
  c->multi_n = 0;
}

/* Ends c's transaction (DISCARD, or an aborted EXEC). */
static void multi_end(serve_worker_t *w, serve_conn_t *c) {
  serve_resp_multi_forget(w->srv, c);
  serve_buf_free(&c->multi_q);
}

/* In a transaction: a command other than EXEC, DISCARD, MULTI, WATCH and
 * QUIT is checked (known, its arity) and queued as it came, bytes and all,
 * for EXEC to run (serve_loop.c's process() reads the queue before the
 * rest of the input); a refused one spoils the transaction, as in Redis. */
static void multi_queue(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r,
                        const char *name, const char *bytes, size_t n) {
  const struct cmdinfo *ci = NULL;
  for (size_t k = 0; k < NCOMMANDS && !ci; k++)
    if (strcmp(commands[k].name, name) == 0)
      ci = &commands[k];
  size_t cap = (size_t)w->srv->cfg->max_request_bytes;
  _Atomic int64_t *all = &w->srv->multi_bytes;
  if (ci == NULL) {
    unknown_command(w, c, r);
    c->multi_dirty = 1;
  } else if (ci->arity > 0 ? r->argc != (size_t)ci->arity : r->argc < (size_t)-ci->arity) {
    wrong_arity(w, c, ci->name);
    c->multi_dirty = 1;
  } else if (c->multi_q.len + n > cap) {
    reply_err(w, c, "ERR the transaction is over max_request_bytes (%zu bytes queued)", cap);
    c->multi_dirty = 1;
  } else if (atomic_fetch_add_explicit(all, (int64_t)n, memory_order_relaxed) + (int64_t)n >
             MULTI_BUDGET_BYTES) {
    atomic_fetch_sub_explicit(all, (int64_t)n, memory_order_relaxed);
    reply_err(w, c, "ERR the transactions open on this server hold %d MiB: try later",
              MULTI_BUDGET_BYTES >> 20);
    c->multi_dirty = 1;
  } else {
    serve_buf_put(&c->multi_q, bytes, n);
    c->multi_n++;
    reply(w, "+QUEUED\r\n");
    CNT_ADD(w->st.resp_ok, 1);
  }
}

/* MULTI, EXEC, DISCARD, WATCH, UNWATCH.  idgen has no keys, so WATCH has
 * nothing to watch: a transaction is never aborted by it. */
static void on_multi(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r,
                     const char *name) {
  if (strcmp(name, "multi") == 0) {
    if (c->multi) {
      reply_err(w, c, "ERR MULTI calls can not be nested");
      return;
    }
    c->multi = 1;
    reply(w, "+OK\r\n");
  } else if (strcmp(name, "exec") == 0 || strcmp(name, "discard") == 0) {
    if (!c->multi) {
      reply_err(w, c, "ERR %s without MULTI", name[0] == 'e' ? "EXEC" : "DISCARD");
      return;
    }
    if (name[0] == 'd') {
      multi_end(w, c);
      reply(w, "+OK\r\n");
    } else if (c->multi_dirty) {
      multi_end(w, c);
      reply_err(w, c, "EXECABORT Transaction discarded because of previous errors.");
      return;
    } else {
      /* The array's header now; its elements are the queued commands'
       * replies, made next, in order (they may wait for their tick). */
      serve_buf_printf(&w->out, "*%zu\r\n", c->multi_n);
      serve_resp_multi_forget(w->srv, c);
      c->exec_pending = c->multi_q.len > 0;
    }
  } else if (strcmp(name, "watch") == 0) {
    if (c->multi) {
      reply_err(w, c, "ERR WATCH inside MULTI is not allowed");
      return;
    }
    reply(w, "+OK\r\n");
  } else { /* unwatch */
    reply(w, "+OK\r\n");
  }
  (void)r;
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_ping(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc > 2) {
    wrong_arity(w, c, "ping");
    return;
  }
  if (r->argc == 2)
    reply_bulk(w, r->argv[1].ptr, r->argv[1].len);
  else
    reply(w, "+PONG\r\n");
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_echo(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc != 2) {
    wrong_arity(w, c, "echo");
    return;
  }
  reply_bulk(w, r->argv[1].ptr, r->argv[1].len);
  CNT_ADD(w->st.resp_ok, 1);
}

/* INFO [section ...]: an unknown section adds nothing, as in Redis 7. */
static void on_info(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  (void)c;
  int sections = r->argc == 1 ? INFO_ALL : 0;
  for (size_t i = 1; i < r->argc && i < RESP_MAX_ARGV; i++)
    sections |= serve_info_section(r->argv[i].ptr, r->argv[i].len);
  size_t start = w->out.len;
  reply(w, "$0000000000\r\n"); /* the length is filled in below */
  size_t body = w->out.len;
  serve_info_text(w->srv, &w->out, sections);
  size_t n = w->out.len - body;
  char head[16];
  snprintf(head, sizeof head, "$%zu\r\n", n);
  memmove(w->out.p + start + strlen(head), w->out.p + body, n);
  memcpy(w->out.p + start, head, strlen(head));
  w->out.len = start + strlen(head) + n;
  reply(w, "\r\n");
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_quit(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  (void)r;
  reply(w, "+OK\r\n");
  c->stop_parsing = 1;
  c->close_reason = CR_EOF;
  CNT_ADD(w->st.resp_ok, 1);
}

/* CONFIG GET: what redis-benchmark asks for; nothing else is configurable
 * over RESP.  (RESP3: a map, as Redis 7 answers.) */
static void on_config(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  if (r->argc < 2) {
    wrong_arity(w, c, "config");
    return;
  }
  if (!arg_is(&r->argv[1], "get")) {
    reply_err(w, c, "ERR CONFIG %s is not supported by idgen",
              IDGEN_QUOTE(r->argv[1].ptr, r->argv[1].len, 0, 32));
    return;
  }
  if (r->argc == 3 && arg_is(&r->argv[2], "save"))
    reply(w, c->resp3 ? "%1\r\n$4\r\nsave\r\n$0\r\n\r\n" : "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  else if (r->argc == 3 && arg_is(&r->argv[2], "appendonly"))
    reply(w, c->resp3 ? "%1\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"
                      : "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  else
    reply(w, c->resp3 ? "%0\r\n" : "*0\r\n");
  CNT_ADD(w->st.resp_ok, 1);
}

static void on_select(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  int64_t db;
  if (r->argc != 2) {
    wrong_arity(w, c, "select");
    return;
  }
  if (arg_int(&r->argv[1], &db) < 0) {
    reply_err(w, c, "ERR value is not an integer or out of range");
    return;
  }
  if (db != 0) {
    reply_err(w, c, "ERR DB index is out of range");
    return;
  }
  reply(w, "+OK\r\n");
  CNT_ADD(w->st.resp_ok, 1);
}

/* The first command in buf[0..len) into *r: 1, with the bytes it takes in
 * *used; else 0 with *used 0 (not whole yet), or, after a protocol error,
 * answered as Redis answers it (and the connection closes), all of buf. */
static int parse_command(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len,
                         resp_request_t *r, size_t *used) {
  char err[RESP_ERR_MAX];
  size_t max = (size_t)w->srv->cfg->max_request_bytes;
  ssize_t n = resp_parse(buf, len, max, r, err);
  *used = 0;
  if (n == RESP_NEED_MORE)
    return 0;
  if (n > 0 && (size_t)n > max) /* whole, but over the limit all the same */
    snprintf(err, sizeof err, "Protocol error: request over max_request_bytes"), n = -1;
  if (n < 0) {
    w->replies++;
    reply_err(w, c, "ERR %s", err);
    log_limited(&w->srv->client_log, "warn", "client_error", "proto=resp peer=%s reason=%s",
                serve_peer_text(c, (char[64]){0}),
                log_quote(err, strlen(err), (char[128]){0}, 128));
    c->stop_parsing = 1;
    c->close_reason = CR_PROTOCOL;
    *used = len;
    return 0;
  }
  *used = (size_t)n;
  return 1;
}

/* A command's name in lower case into name[16] ("" when it is longer, or
 * holds a NUL: no command's). */
static void command_name(const resp_arg_t *a0, char name[16]) {
  memset(name, 0, 16);
  if (a0->len < 16 && memchr(a0->ptr, '\0', a0->len) == NULL)
    for (size_t i = 0; i < a0->len; i++)
      name[i] = (char)tolower((unsigned char)a0->ptr[i]);
}

/* Before AUTH (with auth_file): every command but AUTH, HELLO and QUIT is
 * refused, counted and logged as a missing token.  1 when `name` was. */
static int refused_unauthed(serve_worker_t *w, serve_conn_t *c, const char *name) {
  if (c->authed || strcmp(name, "auth") == 0 || strcmp(name, "hello") == 0 ||
      strcmp(name, "quit") == 0)
    return 0;
  int index;
  (void)serve_auth_caller(w, c, NULL, 0, "", 0, &index); /* counted and logged */
  reply_err(w, c, "NOAUTH Authentication required.");
  c->multi_dirty = c->multi;
  return 1;
}

/* MULTI, EXEC, DISCARD, WATCH, UNWATCH, and in a transaction any command
 * but QUIT (queued as it came: bytes[0..n)).  1 when `name` was one. */
static int transaction_step(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r,
                            const char *name, const char *bytes, size_t n) {
  int tx = strcmp(name, "multi") == 0 || strcmp(name, "exec") == 0 ||
           strcmp(name, "discard") == 0 || strcmp(name, "watch") == 0 ||
           strcmp(name, "unwatch") == 0;
  if (c->multi && !tx && strcmp(name, "quit") != 0) {
    multi_queue(w, c, r, name, bytes, n);
    return 1;
  }
  if (!tx)
    return 0;
  if ((r->argc == 1) != (strcmp(name, "watch") != 0)) /* WATCH key...; the others: no argument */
    wrong_arity(w, c, name);
  else
    on_multi(w, c, r, name);
  return 1;
}

static void on_id(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  on_ids(w, c, r, KIND_SNOWFLAKE, 0);
}
static void on_idstr(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  on_ids(w, c, r, KIND_SNOWFLAKE, 1);
}
static void on_ulid(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  on_ids(w, c, r, KIND_ULID, 0);
}
static void on_uuid7(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r) {
  on_ids(w, c, r, KIND_UUID7, 0);
}

/* Any other command, by its name (lower case). */
static void run_command(serve_worker_t *w, serve_conn_t *c, const resp_request_t *r,
                        const char *name) {
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (commands[i].run != NULL && strcmp(name, commands[i].name) == 0) {
      commands[i].run(w, c, r);
      return;
    }
  unknown_command(w, c, r);
}

size_t serve_resp_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len) {
  resp_request_t r;
  size_t used;
  if (!parse_command(w, c, buf, len, &r, &used))
    return used;
  if (r.argc == 0)
    return used; /* an empty line or *0 / *-1: no reply */
  w->replies++;
  char name[16];
  command_name(&r.argv[0], name);
  if (!refused_unauthed(w, c, name) && !transaction_step(w, c, &r, name, buf, used))
    run_command(w, c, &r, name);
  return used;
}

/* Input over max_request_bytes that no command bounded: a protocol error,
 * as serve_resp_handle answers one. */
static void resp_oversize(serve_worker_t *w, serve_conn_t *c) {
  w->replies++;
  reply_err(w, c, "ERR Protocol error: request over max_request_bytes");
}

static void resp_closed(serve_worker_t *w, serve_conn_t *c) { multi_end(w, c); }

const serve_proto_t serve_resp_proto = {
    .name = "resp",
    .index = PROTO_RESP,
    .handle = serve_resp_handle,
    .lf_ended = 1, /* (an inline command's, or a bulk string's CRLF) */
    .oversize = resp_oversize,
    .closed = resp_closed,
    .full_refusal = "-ERR max number of clients reached\r\n",
    .tls = 1,
    .tls_plain_refusal =
        "-ERR this port speaks TLS: connect with TLS (redis-cli --tls, rediss://)\r\n",
};
