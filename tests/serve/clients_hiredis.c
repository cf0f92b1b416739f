/* The daemon's RESP side through hiredis, the C client (Debian's
 * libhiredis-dev): tests/serve/suite_clients.py compiles this file at test
 * time with `cc ... $(pkg-config --cflags --libs hiredis)` and runs it
 * against its daemon, as one column of its client matrix.
 *
 *   clients_hiredis HOST PORT
 *
 * Runs the matrix's steps in order on one connection (ID, ID 5, IDSTR,
 * IDSTR 3, ULID 3, UUID7 2, DECODE, INFO, INFO clients, a pipeline of 100
 * IDSTR with redisAppendCommand, MULTI/EXEC, the error of ID abc, PING after
 * it, HELLO) and prints one JSON object in the form of clients_matrix.mjs's:
 * {client, version, default_protocol, events, steps: [[name, result]...]},
 * a result {"ok": VALUE} or {"error": MESSAGE, "name": "REDIS_REPLY_ERROR"};
 * an integer reply is {"int": "DIGITS"} (hiredis reads it as a long long), a
 * status reply {"status": "TEXT"}, a bulk string a JSON string, nil null.
 * The suite checks them; this program judges nothing.  Exit 1 if it cannot
 * connect or a reply does not come. */
#include <hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int first_step = 1;

static void json_str(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

static void json_reply(const redisReply *r) {
  switch (r->type) {
  case REDIS_REPLY_STRING:
    json_str(r->str, r->len);
    break;
  case REDIS_REPLY_INTEGER:
    printf("{\"int\":\"%lld\"}", r->integer);
    break;
  case REDIS_REPLY_NIL:
    printf("null");
    break;
  case REDIS_REPLY_STATUS:
    printf("{\"status\":");
    json_str(r->str, r->len);
    putchar('}');
    break;
  case REDIS_REPLY_ERROR:
    printf("{\"error\":");
    json_str(r->str, r->len);
    printf(",\"name\":\"REDIS_REPLY_ERROR\"}");
    break;
  case REDIS_REPLY_ARRAY:
    putchar('[');
    for (size_t i = 0; i < r->elements; i++) {
      if (i > 0)
        putchar(',');
      json_reply(r->element[i]);
    }
    putchar(']');
    break;
  default:
    printf("{\"other\":\"reply type %d\"}", r->type);
  }
}

static void step_begin(const char *name) {
  printf("%s[", first_step ? "" : ",");
  json_str(name, strlen(name));
  putchar(',');
  first_step = 0;
}

/* One step's result: an error reply is the step's error, anything else its value. */
static void step_reply(const char *name, const redisReply *r) {
  step_begin(name);
  if (r->type == REDIS_REPLY_ERROR) {
    json_reply(r);
  } else {
    printf("{\"ok\":");
    json_reply(r);
    putchar('}');
  }
  putchar(']');
}

static redisReply *must(redisContext *c, void *reply) {
  if (reply == NULL) {
    fprintf(stderr, "clients_hiredis: no reply: %s\n", c->errstr);
    exit(1);
  }
  return reply;
}

static void one(redisContext *c, const char *name, const char *fmt, const char *arg) {
  redisReply *r = must(c, arg ? redisCommand(c, fmt, arg) : redisCommand(c, fmt));
  step_reply(name, r);
  freeReplyObject(r);
}

static redisReply *next(redisContext *c) {
  void *r = NULL;
  if (redisGetReply(c, &r) != REDIS_OK)
    r = NULL;
  return must(c, r);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: clients_hiredis HOST PORT\n");
    return 2;
  }
  struct timeval tv = {10, 0};
  redisContext *c = redisConnectWithTimeout(argv[1], atoi(argv[2]), tv);
  if (c == NULL || c->err) {
    fprintf(stderr, "clients_hiredis: connect: %s\n", c ? c->errstr : "out of memory");
    return 1;
  }
  redisSetTimeout(c, tv);
  printf("{\"client\":\"hiredis\",\"version\":\"%d.%d.%d\",\"default_protocol\":2,\"events\":[],"
         "\"steps\":[",
         HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
  one(c, "ID", "ID", NULL);
  one(c, "ID 5", "ID 5", NULL);
  redisReply *idstr = must(c, redisCommand(c, "IDSTR"));
  step_reply("IDSTR", idstr);
  one(c, "IDSTR 3", "IDSTR 3", NULL);
  one(c, "ULID 3", "ULID 3", NULL);
  one(c, "UUID7 2", "UUID7 2", NULL);
  one(c, "DECODE", "DECODE %s", idstr->type == REDIS_REPLY_STRING ? idstr->str : "1");
  freeReplyObject(idstr);
  one(c, "INFO", "INFO", NULL);
  one(c, "INFO clients", "INFO clients", NULL);

  /* A pipeline: 100 commands written at once, then their 100 replies. */
  for (int i = 0; i < 100; i++)
    redisAppendCommand(c, "IDSTR");
  step_begin("pipeline of 100 IDSTR");
  printf("{\"ok\":[");
  for (int i = 0; i < 100; i++) {
    redisReply *r = next(c);
    printf("%s", i ? "," : "");
    json_reply(r);
    freeReplyObject(r);
  }
  printf("]}]");

  /* A transaction, pipelined as clients send it: MULTI, four commands, EXEC.
   * The step's value is EXEC's reply; an answer other than +OK / +QUEUED
   * before it is the step's error. */
  const char *queued[] = {"MULTI", "IDSTR", "IDSTR 2", "ULID", "ID", "EXEC"};
  for (int i = 0; i < 6; i++)
    redisAppendCommand(c, queued[i]);
  char bad[256] = "";
  for (int i = 0; i < 5; i++) {
    redisReply *r = next(c);
    const char *want = i == 0 ? "OK" : "QUEUED";
    if (bad[0] == '\0' && (r->type != REDIS_REPLY_STATUS || strcmp(r->str, want) != 0))
      snprintf(bad, sizeof bad, "%s answered type %d %.100s, not +%s", queued[i], r->type,
               r->str ? r->str : "", want);
    freeReplyObject(r);
  }
  redisReply *exec = next(c);
  if (bad[0] != '\0') {
    step_begin("MULTI IDSTR, IDSTR 2, ULID, ID, EXEC");
    printf("{\"error\":");
    json_str(bad, strlen(bad));
    printf("}]");
  } else {
    step_reply("MULTI IDSTR, IDSTR 2, ULID, ID, EXEC", exec);
  }
  freeReplyObject(exec);

  one(c, "ID abc", "ID abc", NULL);
  one(c, "PING after the error", "PING", NULL);
  one(c, "HELLO", "HELLO", NULL);
  printf("]}\n");
  redisFree(c);
  return 0;
}
