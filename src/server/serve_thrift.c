/*
 * serve_thrift.c -- Twitter's Snowflake service on `idgen serve --thrift`
 * (the IDL is docs/snowflake.thrift; DESIGN §9): framed transport, binary
 * protocol, parsed by thrift.c.
 *
 * get_id(useragent) follows the same rule for agent names as HTTP's agent=
 * and RESP's CLIENT SETNAME, and counts under the agent in metrics; it takes
 * the same path as any ID request (parked when it must wait for its tick).
 * The service declares no `throws`, so a refused clock or a bad user agent
 * reaches the client as Twitter's clients saw it: a TApplicationException
 * carrying the message ("InvalidSystemClock: ...", "InvalidUserAgentError:
 * ...").  Unknown methods get one too (UNKNOWN_METHOD); a malformed frame
 * gets PROTOCOL_ERROR when its call can be named, and the connection closes.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "server_int.h"
#include "thrift.h"

static void put_frame(serve_worker_t *w, size_t (*write)(char *, size_t, void *), void *arg) {
  size_t need = 512 + THRIFT_NAME_MAX;
  serve_buf_reserve(&w->out, need);
  size_t n = write(w->out.p + w->out.len, need, arg);
  w->out.len += n;
}

struct ex_arg {
  const char *name;
  size_t name_len;
  int32_t seqid;
  int type;
  const char *msg;
};

static size_t write_ex(char *out, size_t cap, void *arg) {
  const struct ex_arg *a = arg;
  return thrift_write_exception(out, cap, a->name, a->name_len, a->seqid, a->type, a->msg);
}

struct i64_arg {
  const char *name;
  int32_t seqid;
  int64_t v;
};

static size_t write_i64(char *out, size_t cap, void *arg) {
  const struct i64_arg *a = arg;
  return thrift_write_i64(out, cap, a->name, strlen(a->name), a->seqid, a->v);
}

static void error_named(serve_worker_t *w, const char *name, size_t name_len, int32_t seqid,
                        int type, const char *msg) {
  struct ex_arg a = {name, name_len, seqid, type, msg};
  put_frame(w, write_ex, &a);
  CNT_ADD(w->st.thrift_err, 1);
}

static void reply_i64(serve_worker_t *w, const char *name, int32_t seqid, int64_t v) {
  struct i64_arg a = {name, seqid, v};
  put_frame(w, write_i64, &a);
  CNT_ADD(w->st.thrift_ok, 1);
}

/* get_id's reply: one Snowflake ID, an i64. */
static int reply_ids(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                     const uint64_t *ids) {
  (void)c;
  if (ids[0] > INT64_MAX) {
    error_named(w, "get_id", 6, sh->seqid, THRIFT_EX_INTERNAL_ERROR,
                "the ID does not fit in an i64 (a layout of 64 bits)");
    return 1;
  }
  reply_i64(w, "get_id", sh->seqid, (int64_t)ids[0]);
  return 0;
}

/* A refused get_id: as Twitter's clients saw InvalidSystemClock. */
static void reply_ids_error(serve_worker_t *w, serve_conn_t *c, const serve_reply_shape_t *sh,
                            int rc, const char *why, int64_t wait_ms) {
  (void)c, (void)wait_ms;
  char msg[512];
  snprintf(msg, sizeof msg, "%s%s", rc == IDGEN_ECLOCK ? "InvalidSystemClock: " : "", why);
  error_named(w, "get_id", 6, sh->seqid, THRIFT_EX_INTERNAL_ERROR, msg);
}

static const serve_replies_t thrift_replies = {reply_ids, reply_ids_error};

/* get_worker_id / get_datacenter_id: the node field of that name. */
static void node_field(serve_worker_t *w, const thrift_call_t *t, const char *field,
                       const char *method) {
  int f = idgen_layout_field_index(w->srv->layout, field);
  if (f < 0 || w->srv->layout->fields[f].kind != IDGEN_FIELD_NODE) {
    char msg[160];
    snprintf(msg, sizeof msg, "the layout has no %s field", field);
    error_named(w, t->name, t->name_len, t->seqid, THRIFT_EX_INTERNAL_ERROR, msg);
    return;
  }
  reply_i64(w, method, t->seqid, (int64_t)serve_node_value(w->srv, f));
}

size_t serve_thrift_handle(serve_worker_t *w, serve_conn_t *c, const char *buf, size_t len) {
  thrift_call_t t;
  char err[THRIFT_ERR_MAX];
  ssize_t used = thrift_parse(buf, len, (size_t)w->srv->cfg->max_request_bytes, &t, err);
  if (used == THRIFT_NEED_MORE)
    return 0;
  if (used < 0) {
    if (t.name != NULL) { /* the call can be named: say why before closing */
      w->replies++;
      error_named(w, t.name, t.name_len, t.seqid, THRIFT_EX_PROTOCOL_ERROR, err);
    }
    log_limited(&w->srv->client_log, "warn", "client_error", "proto=thrift peer=%s reason=%s",
                serve_peer_text(c, (char[64]){0}),
                log_quote(err, strlen(err), (char[160]){0}, 160));
    c->stop_parsing = 1;
    c->close_reason = CR_PROTOCOL;
    return len;
  }
  if (t.type == THRIFT_ONEWAY)
    return (size_t)used; /* no reply is wanted, and the service has no oneway method */
  w->replies++;
  if (t.type != THRIFT_CALL) {
    char msg[64];
    snprintf(msg, sizeof msg, "message type %d is not a call", t.type);
    error_named(w, t.name, t.name_len, t.seqid, THRIFT_EX_INVALID_MESSAGE_TYPE, msg);
    return (size_t)used;
  }
  switch (t.method) {
  case THRIFT_M_GET_WORKER_ID:
    node_field(w, &t, "worker", "get_worker_id");
    break;
  case THRIFT_M_GET_DATACENTER_ID:
    node_field(w, &t, "datacenter", "get_datacenter_id");
    break;
  case THRIFT_M_GET_TIMESTAMP:
    reply_i64(w, "get_timestamp", t.seqid, idgen_clock_now_ms(IDGEN_CLOCK_PRECISE));
    break;
  case THRIFT_M_GET_ID: {
    /* Twitter's rule for a user agent, the daemon's for an agent name. */
    if (!t.has_useragent || !serve_agent_valid(t.useragent, t.useragent_len)) {
      char msg[200];
      snprintf(msg, sizeof msg,
               "InvalidUserAgentError: useragent \"%s\" must match [a-zA-Z][a-zA-Z0-9-]* (at "
               "most %d characters)",
               t.has_useragent ? IDGEN_QUOTE(t.useragent, t.useragent_len, '"', 64) : "",
               AGENT_NAME_MAX);
      error_named(w, "get_id", 6, t.seqid, THRIFT_EX_INTERNAL_ERROR, msg);
      break;
    }
    serve_reply_shape_t sh = {.replies = &thrift_replies,
                              .proto = PROTO_THRIFT,
                              .kind = KIND_SNOWFLAKE,
                              .agent = serve_agent_index(w->srv, t.useragent, t.useragent_len),
                              .count = 1,
                              .seqid = t.seqid};
    serve_ids_request(w, c, &sh);
    if (c->parked)
      w->replies--; /* answered later, when its tick comes */
    break;
  }
  default: {
    char msg[THRIFT_NAME_MAX + 40];
    snprintf(msg, sizeof msg, "Invalid method name: '%s'",
             IDGEN_QUOTE(t.name, t.name_len, 0, THRIFT_NAME_MAX));
    error_named(w, t.name, t.name_len, t.seqid, THRIFT_EX_UNKNOWN_METHOD, msg);
  }
  }
  return (size_t)used;
}

const serve_proto_t serve_thrift_proto = {
    .name = "thrift",
    .index = PROTO_THRIFT,
    .handle = serve_thrift_handle,
    .full_refusal = "", /* no call to answer yet: the close says it */
};
