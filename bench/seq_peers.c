/*
 * seq_peers.c -- what users do today for dense numbers, one client, per call:
 * PostgreSQL nextval() (a sequence with and without CACHE), Redis INCR,
 * Redis INCRBY range allocation by the client (a segment of K numbers per
 * call, handed out in memory), and the idgen daemon's RESP `SEQ NAME N`.
 * bench/seq_peers.sh starts the servers and runs every mode in turn.
 *
 *   seq_peers pg URI CACHE SECONDS        nextval('bench_seq_CACHE'), CACHE 1 or more
 *   seq_peers incr HOST PORT SECONDS      INCR bench:seq
 *   seq_peers incrby HOST PORT K SECONDS  INCRBY bench:range K, then K numbers in memory
 *   seq_peers seq HOST PORT N SECONDS     SEQ bench N (the idgen daemon)
 *
 * Prints one line: "MODE calls=C numbers=N ns_per_call=X numbers_per_s=Y"
 * and checks that the numbers it got strictly increase (exit 1 if not).
 */
#define _POSIX_C_SOURCE 200809L
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdarg.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "seq_peers: %s: %s\n", what, why);
  exit(2);
}

typedef struct run {
  const char *mode;
  uint64_t calls, numbers, last;
  int64_t start, end;
  int bad;
} run_t;

static void got(run_t *r, uint64_t n) {
  if (r->numbers > 0 && n <= r->last)
    r->bad = 1;
  r->last = n;
  r->numbers++;
}

static void report(const run_t *r) {
  double secs = (double)(r->end - r->start) / 1e9;
  printf("%s calls=%" PRIu64 " numbers=%" PRIu64 " ns_per_call=%.0f numbers_per_s=%.0f\n", r->mode,
         r->calls, r->numbers, (double)(r->end - r->start) / (double)r->calls,
         (double)r->numbers / secs);
  if (r->bad)
    fprintf(stderr, "seq_peers: %s: numbers did not strictly increase\n", r->mode);
}

static void run_pg(run_t *r, const char *uri, long cache, int64_t until) {
  PGconn *c = PQconnectdb(uri);
  if (PQstatus(c) != CONNECTION_OK)
    die("connect", PQerrorMessage(c));
  char sql[200];
  snprintf(sql, sizeof sql, "CREATE SEQUENCE IF NOT EXISTS bench_seq_%ld CACHE %ld", cache, cache);
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    die("create sequence", PQerrorMessage(c));
  PQclear(res);
  snprintf(sql, sizeof sql, "SELECT nextval('bench_seq_%ld')", cache);
  res = PQprepare(c, "n", sql, 0, NULL);
  PQclear(res);
  r->start = now_ns();
  while (now_ns() < until) {
    for (int i = 0; i < 100; i++) {
      res = PQexecPrepared(c, "n", 0, NULL, NULL, NULL, 0);
      if (PQresultStatus(res) != PGRES_TUPLES_OK)
        die("nextval", PQerrorMessage(c));
      got(r, strtoull(PQgetvalue(res, 0, 0), NULL, 10));
      PQclear(res);
      r->calls++;
    }
  }
  r->end = now_ns();
  PQfinish(c);
}

static redisContext *redis(const char *host, const char *port) {
  redisContext *c = redisConnect(host, atoi(port));
  if (c == NULL || c->err)
    die("connect", c ? c->errstr : "out of memory");
  return c;
}

static redisReply *cmd(redisContext *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  redisReply *rep = redisvCommand(c, fmt, ap);
  va_end(ap);
  if (rep == NULL)
    die("command", c->errstr);
  if (rep->type == REDIS_REPLY_ERROR)
    die("command", rep->str);
  return rep;
}

static void run_incr(run_t *r, redisContext *c, int64_t until) {
  r->start = now_ns();
  while (now_ns() < until) {
    for (int i = 0; i < 100; i++) {
      redisReply *rep = cmd(c, "INCR bench:seq");
      got(r, (uint64_t)rep->integer);
      freeReplyObject(rep);
      r->calls++;
    }
  }
  r->end = now_ns();
}

/* A range of k per call: the client keeps [hi-k, hi) and hands it out. */
static void run_incrby(run_t *r, redisContext *c, long long k, int64_t until) {
  r->start = now_ns();
  while (now_ns() < until) {
    redisReply *rep = cmd(c, "INCRBY bench:range %lld", k);
    uint64_t hi = (uint64_t)rep->integer;
    freeReplyObject(rep);
    r->calls++;
    for (uint64_t n = hi - (uint64_t)k + 1; n <= hi; n++)
      got(r, n);
  }
  r->end = now_ns();
}

static void run_seq(run_t *r, redisContext *c, long n, int64_t until) {
  r->start = now_ns();
  while (now_ns() < until) {
    redisReply *rep = cmd(c, "SEQ bench %ld", n);
    if (rep->type != REDIS_REPLY_ARRAY)
      die("SEQ", "not an array");
    for (size_t i = 0; i < rep->elements; i++)
      got(r, (uint64_t)rep->element[i]->integer);
    freeReplyObject(rep);
    r->calls++;
  }
  r->end = now_ns();
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
    fprintf(stderr, "usage: seq_peers pg URI CACHE SECONDS | incr HOST PORT SECONDS |\n"
                    "       incrby HOST PORT K SECONDS | seq HOST PORT N SECONDS\n");
    return argc < 2 ? 2 : 0;
  }
  run_t r = {.mode = argv[1]};
  const char *m = argv[1];
  if (strcmp(m, "pg") == 0 && argc == 5) {
    run_pg(&r, argv[2], atol(argv[3]), now_ns() + (int64_t)(atof(argv[4]) * 1e9));
  } else if (strcmp(m, "incr") == 0 && argc == 5) {
    redisContext *c = redis(argv[2], argv[3]);
    run_incr(&r, c, now_ns() + (int64_t)(atof(argv[4]) * 1e9));
    redisFree(c);
  } else if (strcmp(m, "incrby") == 0 && argc == 6) {
    redisContext *c = redis(argv[2], argv[3]);
    run_incrby(&r, c, atoll(argv[4]), now_ns() + (int64_t)(atof(argv[5]) * 1e9));
    redisFree(c);
  } else if (strcmp(m, "seq") == 0 && argc == 6) {
    redisContext *c = redis(argv[2], argv[3]);
    run_seq(&r, c, atol(argv[4]), now_ns() + (int64_t)(atof(argv[5]) * 1e9));
    redisFree(c);
  } else {
    fprintf(stderr, "seq_peers: bad arguments for '%s' (see --help)\n", m);
    return 2;
  }
  report(&r);
  return r.bad ? 1 : 0;
}
