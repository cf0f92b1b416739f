/*
 * registry_pg.c -- the `postgres://` (and `postgresql://`) registry
 * (docs/DESIGN.md §11): machines share node tuples through PostgreSQL tables
 * (their SQL is registry_pg_sql.h).
 *
 *   idgen_pools(pool text primary key, layout text, floor_ms bigint,
 *               keys bigint)
 *   idgen_nodes(pool text, node bigint, holder text, generation bigint,
 *               expires_at timestamptz, free_at timestamptz, mark_ms bigint,
 *               primary key (pool, node))
 *   idgen_spaces(space text primary key, version bigint, state text)
 *   idgen_seqs(space text, key text, version bigint, record text,
 *              primary key (space, key))
 *
 * One schema holds them: `idgen`, or the URI's ?schema=NAME, named in every
 * statement, so a role or connection with another search_path reaches the
 * same registry.  The schema is made with the tables.  A database where it
 * has no registry but another schema has one is refused, naming that
 * schema, unless that one was made by this version and ?schema= names this
 * one on purpose: an earlier version's registry lives wherever its
 * starters' search_path led, and a second registry beside it would repeat
 * its IDs (pg_schema_txn).  Nor is a lease granted or kept beside an
 * earlier version's registry that appears later: every session keeps
 * earlier versions from making one, and acquisitions and renewals look for
 * one in the catalogs (pg_earlier).
 *
 * A pool is a layout geometry (registry_int.h); `node` is a tuple's key,
 * its node bits in the ID, as a signed 64-bit integer; holders meet on it
 * whichever node field they lease.  One row per tuple ever leased; idgen
 * never deletes rows, so a generation only grows.  Times are the database's
 * clock (now()), never the caller's.
 *
 * The pool-wide mark (docs/DESIGN.md §11).  A row deleted or moved by hand
 * would let its tuple start again from nothing, under a holder that may
 * still be alive.  So a trigger on idgen_nodes raises the pool's floor_ms
 * to the mark of every row deleted, truncated or moved out (in the same
 * transaction), and a new row starts at the floor; idgen_pools refuses
 * deletes.  Unlike file:, a new tuple does not start above the live
 * holders' marks: those run up to a TTL ahead, and a new holder would wait
 * that long.  A new tuple cannot repeat a live tuple's IDs, and every tuple
 * that no longer has its row is under the floor.
 *
 * Quarantine: free_at is when the tuple returns to the pool, and a tuple is
 * free exactly when free_at <= now().  So the quarantine needs no clock or
 * setting of its own when list and free, which have no lease request, look
 * at a row:
 *   granted or renewed   expires_at = now() + ttl, free_at = expires_at + quarantine
 *   expired              nothing is written: free once free_at passes
 *   released by holder   holder = NULL, expires_at = free_at = now(): free at once
 *   freed by hand        generation + 1 (fences the holder), holder = NULL,
 *                        free_at = greatest(free_at, now() + quarantine), the
 *                        quarantine being the row's free_at - expires_at: at
 *                        least one whole quarantine from now, and never before
 *                        the lease would have expired plus its quarantine.
 * A row is HELD while holder is set and expires_at is ahead, in QUARANTINE
 * while free_at is ahead otherwise, and FREE after.
 *
 * The claim is one INSERT ... ON CONFLICT DO UPDATE ... WHERE free_at <=
 * now() AND mark_ms < wall clock: PostgreSQL locks the row, rechecks the
 * condition on its newest version and either grants the next generation or
 * returns no row (someone else won: the next candidate is tried).  A new
 * row reads the floor with FOR SHARE, so a concurrent delete's trigger is
 * waited for.  Renewals, mark writes and releases are UPDATEs conditional on
 * (generation, holder); no row back means fenced out.  Every statement is
 * autocommitted (durable on return: synchronous_commit is turned back on if
 * the server has it off).
 *
 * The tables are made by the first starter, under an advisory lock that
 * others try and, while it is held, wait for on this side (lock_timeout
 * would fail them on the server while a slow server makes the tables).
 *
 * One connection per registry, guarded by a mutex: a bound generator's
 * thread renews while others acquire or list.  A statement that gets no
 * answer within QUERY_TIMEOUT_MS drops the connection (the next operation
 * reconnects); connecting gives up after connect_timeout (2 s, unless the
 * URI sets it).  A forked child never touches its parent's connection: it
 * closes its copy of the socket (PQfinish would send a Terminate on the
 * parent's session), leaks the rest, and connects afresh if it uses the
 * registry.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <libpq-fe.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "registry_int.h"

#define PFX "registry: postgres: "

/* libpq, loaded when a postgres:// registry is first checked or opened
 * (registry_int.h, idgen__dynlib_need): every call goes through pq. */
/* clang-format off */
#define PQ_FUNCS(X)                                                                     \
  X(PQclear) X(PQconnectdbParams) X(PQconninfoFree) X(PQconninfoParse) X(PQconsumeInput)    \
  X(PQerrorMessage) X(PQfinish) X(PQfreemem) X(PQgetResult) X(PQgetisnull) X(PQgetvalue)   \
  X(PQisBusy) X(PQntuples) X(PQresultErrorField) X(PQresultStatus) X(PQsendQueryParams)     \
  X(PQsetNoticeProcessor) X(PQsetnonblocking) X(PQsocket) X(PQstatus) X(PQconndefaults)
/* clang-format on */
static void pq_init(void);
IDGEN__DYNLIB(pq, libpq, PQ_FUNCS, "libpq.so.5", "libpq5", pq_init);

/* libpq's connection parameters, read once when libpq is loaded, under the
 * loading lock that fork() takes too: PQconndefaults() reads the user's
 * passwd entry and libpq's own state under locks, and a child forked while
 * another thread was inside it waited for them for ever
 * (registry.fork_first_open, 11 of 42 runs).  Never freed. */
static PQconninfoOption *pq_keywords;
static void pq_init(void) { pq_keywords = pq.PQconndefaults(); }

#define QUERY_TIMEOUT_MS 5000 /* per statement, on this side; the server's is 4 s */
#define ACQUIRE_ROUNDS 64     /* rescans of a pool after lost races or a start wait */
#define LIST_PAGE "500"
#define LOCK_WAIT_MS 30000 /* for another starter's schema or pool row */
#define LOCK_POLL_MS 20

typedef struct pg {
  pthread_mutex_t mu; /* guards the rest */
  PGconn *conn;       /* NULL: connect at the next statement */
  unsigned fork_gen;  /* the process that owns mu and conn */
  char *conninfo;     /* r->uri without ?schema=: libpq's */
  int schema_given;   /* ?schema= named it */
  char schema[64];    /* the registry's schema */
  char quoted[68];    /* ... as an identifier: what `@` in the SQL becomes */
  char parked[64];    /* where an earlier registry is parked: SCHEMA_earlier */
  int guard;          /* conn holds KEY_EARLIER, shared (SQL_SESSION) */
} pg_t;

#include "registry_pg_sql.h"

/* ---- connection ------------------------------------------------------------- */

/* libpq's messages end in a newline and may carry a tab-indented hint on a
 * second line: one line, each run of white space made one space. */
static void pg_one_line(char *dst, size_t n, const char *src) {
  size_t o = 0;
  int space = 0;
  for (; *src && o + 1 < n; src++) {
    if (*src == '\n' || *src == '\r' || *src == '\t' || *src == ' ') {
      space = o > 0;
      continue;
    }
    if (space && o + 2 < n)
      dst[o++] = ' ';
    space = 0;
    dst[o++] = *src;
  }
  dst[o] = '\0';
}

static int pg_fail(char *err, size_t errlen, int code, const char *what, const char *msg) {
  char line[400];
  pg_one_line(line, sizeof line, msg && *msg ? msg : "unknown error");
  return idgen__err(err, errlen, code, PFX "%s: %s", what, line);
}

static void pg_no_notices(void *ctx, const char *msg) {
  (void)ctx; /* a library never prints */
  (void)msg;
}

/* Drops the connection.  PQfinish sends a Terminate: in non-blocking mode,
 * so that a dead peer cannot hold it up. */
static void pg_drop(pg_t *pg) {
  if (pg->conn == NULL)
    return;
  pq.PQsetnonblocking(pg->conn, 1);
  pq.PQfinish(pg->conn);
  pg->conn = NULL;
  pg->guard = 0; /* the session's locks ended with it */
}

/* Takes pg->mu; in a forked child, first gives up the parent's connection
 * and mutex (another thread may have held it at the fork).  The first call
 * in a child must not race another thread of the child. */
static void pg_lock(pg_t *pg) {
  unsigned gen = idgen__fork_gen();
  if (pg->fork_gen != gen) {
    if (pg->conn && pq.PQsocket(pg->conn) >= 0)
      close(pq.PQsocket(pg->conn)); /* the PGconn is leaked: freeing it would talk */
    pg->conn = NULL;
    pg->guard = 0;
    pthread_mutex_init(&pg->mu, NULL);
    pg->fork_gen = gen;
  }
  pthread_mutex_lock(&pg->mu);
}

static void pg_unlock(pg_t *pg) { pthread_mutex_unlock(&pg->mu); }

static int pg_run(pg_t *pg, PGresult **out, const char *sql, int n, const char *const *v,
                  char *state, int *lost, char *err, size_t errlen);

/* sql with each `@` made the registry's schema, quoted (registry_pg_sql.h):
 * a malloc'ed string, or NULL. */
static char *pg_sql(const pg_t *pg, const char *sql) {
  size_t q = strlen(pg->quoted), n = strlen(sql) + 1;
  for (const char *at = strchr(sql, '@'); at; at = strchr(at + 1, '@'))
    n += q - 1;
  char *out = malloc(n), *o = out;
  for (const char *p = sql; out && *p; p++) {
    if (*p != '@') {
      *o++ = *p;
      continue;
    }
    memcpy(o, pg->quoted, q);
    o += q;
  }
  if (out)
    *o = '\0';
  return out;
}

/* Connects with bounded waits: the defaults come before the URI in the
 * keyword list, so that whatever the URI sets wins. */
static int pg_connect(pg_t *pg, char *err, size_t errlen) {
  static const char *const keys[] = {"connect_timeout",     "keepalives",       "keepalives_idle",
                                     "keepalives_interval", "keepalives_count", "tcp_user_timeout",
                                     "application_name",    "dbname",           NULL};
  const char *vals[] = {"2", "1", "2", "1", "2", "4000", "idgen", pg->conninfo, NULL};
  /* libpq's connect takes libpq's global locks (SSL's and the thread
   * lock): a child forked meanwhile would wait on them for ever
   * (registry.fork_first_open's child hung in PQconnectPoll). */
  idgen__fork_lock();
  PGconn *c = pq.PQconnectdbParams(keys, vals, 1);
  idgen__fork_unlock();
  if (c == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  if (pq.PQstatus(c) != CONNECTION_OK) {
    int rc = pg_fail(err, errlen, IDGEN_EREGISTRY, "cannot connect", pq.PQerrorMessage(c));
    pq.PQfinish(c);
    return rc;
  }
  pq.PQsetNoticeProcessor(c, pg_no_notices, NULL);
  pg->conn = c;
  PGresult *res;
  int lost;
  int rc = pg_run(pg, &res, SQL_SESSION, 0, NULL, NULL, &lost, err, errlen);
  if (rc == 0)
    pg->guard = pq.PQgetvalue(res, 0, 6)[0] == 't';
  pq.PQclear(res);
  return rc;
}

/* Sends one statement (its `@` made the schema) and waits for its result
 * at most QUERY_TIMEOUT_MS.
 * 0 with *out (PGRES_TUPLES_OK or PGRES_COMMAND_OK; PQclear it), or
 * IDGEN_EREGISTRY with a message, *out NULL, the SQLSTATE in state[6] if
 * the server answered with an error, and *lost set if the connection broke
 * (it is then dropped); or IDGEN_ENOMEM. */
static int pg_run(pg_t *pg, PGresult **out, const char *sql, int n, const char *const *v,
                  char *state, int *lost, char *err, size_t errlen) {
  PGconn *c = pg->conn;
  PGresult *res = NULL;
  int broken = 0;
  *out = NULL;
  *lost = 0;
  if (state)
    state[0] = '\0';
  char *text = pg_sql(pg, sql);
  if (text == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  if (!pq.PQsendQueryParams(c, text, n, NULL, v, NULL, NULL, 0)) /* copies text */
    broken = 1;
  free(text);
  int64_t deadline = idgen__mono_ms() + QUERY_TIMEOUT_MS;
  while (!broken) {
    while (!broken && pq.PQisBusy(c)) {
      int64_t left = deadline - idgen__mono_ms();
      if (left <= 0) {
        pq.PQclear(res);
        pg_drop(pg);
        return idgen__err(err, errlen, IDGEN_EREGISTRY,
                          PFX "no answer from the server within %d ms (connection dropped)",
                          QUERY_TIMEOUT_MS);
      }
      struct pollfd p = {pq.PQsocket(c), POLLIN, 0};
      if ((poll(&p, 1, (int)left) < 0 && errno != EINTR) || !pq.PQconsumeInput(c))
        broken = 1;
    }
    PGresult *x = broken ? NULL : pq.PQgetResult(c);
    if (x == NULL)
      break;
    if (res == NULL)
      res = x;
    else
      pq.PQclear(x);
  }
  ExecStatusType st = res ? pq.PQresultStatus(res) : PGRES_FATAL_ERROR;
  if (!broken && (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK)) {
    *out = res;
    return 0;
  }
  int rc;
  if (broken || pq.PQstatus(c) == CONNECTION_BAD) {
    *lost = 1;
    rc = pg_fail(err, errlen, IDGEN_EREGISTRY, "connection failed", pq.PQerrorMessage(c));
    pg_drop(pg);
  } else {
    const char *code = res ? pq.PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state && code)
      snprintf(state, 6, "%s", code);
    const char *msg = res ? pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    rc = pg_fail(err, errlen, IDGEN_EREGISTRY, "server error", msg ? msg : pq.PQerrorMessage(c));
  }
  pq.PQclear(res);
  return rc;
}

/* pg_run on a live connection, made first if needed.  `retry`: the
 * statement can be repeated (it is idempotent), so when a connection made
 * by an earlier operation turns out to be broken (a server restart), it is
 * sent once more on a new one.  Call with pg->mu held. */
static int pg_query(pg_t *pg, PGresult **out, const char *sql, int n, const char *const *v,
                    int retry, char *state, char *err, size_t errlen) {
  *out = NULL;
  if (pg->conn && pq.PQstatus(pg->conn) != CONNECTION_OK)
    pg_drop(pg);
  int fresh = pg->conn == NULL, lost = 0;
  if (fresh) {
    int rc = pg_connect(pg, err, errlen);
    if (rc < 0) {
      pg_drop(pg);
      return rc;
    }
  }
  int rc = pg_run(pg, out, sql, n, v, state, &lost, err, errlen);
  if (rc < 0 && lost && retry && !fresh) {
    if ((rc = pg_connect(pg, err, errlen)) < 0) {
      pg_drop(pg);
      return rc;
    }
    rc = pg_run(pg, out, sql, n, v, state, &lost, err, errlen);
  }
  return rc;
}

/* pg_query for a statement that waits for other starters' transactions
 * (the pool row's insert): one that meets lock_timeout (55P03; a server so
 * slow that another's commit took 2 s) or is a deadlock's victim (40P01;
 * rolled back, so nothing was done) is sent again, LOCK_POLL_MS apart with
 * pg->mu let go, for up to LOCK_WAIT_MS.  Call with pg->mu held. */
static int pg_query_patient(pg_t *pg, PGresult **out, const char *sql, int n, const char *const *v,
                            char *err, size_t errlen) {
  char state[6] = "";
  int64_t deadline = idgen__mono_ms() + LOCK_WAIT_MS;
  for (;;) {
    int rc = pg_query(pg, out, sql, n, v, 1, state, err, errlen);
    if (rc == 0 || (strcmp(state, "55P03") != 0 && strcmp(state, "40P01") != 0) ||
        idgen__mono_ms() >= deadline)
      return rc;
    pg_unlock(pg);
    struct timespec t = {0, LOCK_POLL_MS * 1000000L};
    nanosleep(&t, NULL);
    pg_lock(pg);
  }
}

static int64_t pg_i64(const PGresult *res, int row, int col) {
  return pq.PQgetisnull(res, row, col) ? 0 : strtoll(pq.PQgetvalue(res, row, col), NULL, 10);
}

/* ---- an earlier version's registry in another schema ------------------------ */

/* Earlier versions found their tables through the session's search_path.
 * One started after this version made its registry, or restarted after
 * its tables were moved into this one's schema, makes a registry of its
 * own where its search_path leads (normally public) and leases the same
 * tuples unseen (73,504 duplicates in 1.6 M IDs; earlier_registry_appears
 * in tests/registry/suite_pg.py holds the fix).  The guard
 * (SQL_SESSION) keeps it from making one while a session of this version
 * lasts.  One there all the same (made while none ran, by hand, restored)
 * is looked for in the catalogs at every acquisition and renewal, and no
 * lease is granted or kept beside it: an earlier version started later
 * finds its tables and needs no lock to use them.  Parked, moved by an
 * administrator into pg->parked (SCHEMA_earlier), where no search_path of
 * theirs leads, it is harmless once none of its leases is live: its marks
 * are a floor (docs/DESIGN.md §11). */

typedef struct earlier {
  int n, parked;     /* schemas holding one (up to 8 read); parked ones among them */
  char schemas[160]; /* those not parked, ", " between */
  char first[64];    /* the first of them */
  char top[64];      /* the one with the highest mark */
  int64_t live;      /* leases live in them all: held, or in quarantine */
  int64_t mark;      /* the highest mark or pool floor they keep */
  char holders[100]; /* the first live ones */
} earlier_t;

/* Takes the guard if this session does not hold it yet (its try met an
 * earlier version making its tables).  pg->mu held. */
static void pg_guard(pg_t *pg) {
  if (pg->guard)
    return;
  PGresult *res;
  if (pg_query(pg, &res, SQL_GUARD, 0, NULL, 1, NULL, NULL, 0) == 0)
    pg->guard = pq.PQgetvalue(res, 0, 0)[0] == 't';
  pq.PQclear(res);
}

/* A catalog name as a quoted identifier in which pg_sql finds no `@` to
 * replace: U&"...", with @ and the backslash as Unicode escapes. */
static void pg_ident(char *dst, size_t n, const char *name) {
  size_t o = (size_t)snprintf(dst, n, "U&\"");
  for (; *name && o + 8 < n; name++) {
    if (*name == '@' || *name == '\\') {
      o += (size_t)snprintf(dst + o, n - o, "\\%04X", (unsigned)(unsigned char)*name);
    } else {
      if (*name == '"')
        dst[o++] = '"';
      dst[o++] = *name;
    }
  }
  snprintf(dst + o, n - o, "\"");
}

/* Looks in the catalogs for schemas other than pg's that hold an earlier
 * version's registry, and reads what each holds (only then: the catalogs
 * alone in the usual database, which has none).  0 with *e (e->n 0: none),
 * or the failure: one this role may not read is not taken for harmless.
 * `retry`: outside a transaction.  pg->mu held. */
static int pg_earlier(pg_t *pg, earlier_t *e, int retry, char *err, size_t errlen) {
  static const char *const table[] = {"idgen_nodes", "idgen_pools", "idgen_leases"};
  memset(e, 0, sizeof *e);
  PGresult *res, *one;
  int rc = pg_query(pg, &res, SQL_EARLIER, 0, NULL, retry, NULL, err, errlen);
  int n = rc == 0 ? pq.PQntuples(res) : 0;
  size_t names = 0, held = 0;
  for (int i = 0; i < n && rc == 0; i++) {
    const char *name = pq.PQgetvalue(res, i, 0);
    char id[340], parts[1600] = "", sql[1800], why[400];
    pg_ident(id, sizeof id, name);
    for (int t = 0, used = 0; t < 3; t++) {
      if (pq.PQgetvalue(res, i, 1 + t)[0] != 't')
        continue;
      used += snprintf(parts + used, sizeof parts - (size_t)used, "%s", used ? " UNION ALL " : "");
      if (t == 1)
        used += snprintf(parts + used, sizeof parts - (size_t)used, SQL_EARLIER_POOLS, id);
      else
        used +=
            snprintf(parts + used, sizeof parts - (size_t)used, SQL_EARLIER_LEASES, id, table[t]);
    }
    snprintf(sql, sizeof sql, SQL_EARLIER_READ, parts);
    if ((rc = pg_query(pg, &one, sql, 0, NULL, retry, NULL, why, sizeof why)) < 0) {
      const char *w = strncmp(why, PFX, sizeof PFX - 1) == 0 ? why + sizeof PFX - 1 : why;
      rc = idgen__err(err, errlen, rc,
                      PFX "schema %.63s holds a registry an earlier idgen made, and reading it "
                          "failed (%s): whether it is in use cannot be told",
                      name, w);
      break;
    }
    int64_t live = pg_i64(one, 0, 0), mark = pg_i64(one, 0, 2);
    e->live += live;
    if (mark > e->mark || !e->top[0]) {
      e->mark = mark > e->mark ? mark : e->mark;
      snprintf(e->top, sizeof e->top, "%s", name);
    }
    if (live > 0 && held < sizeof e->holders)
      held += (size_t)snprintf(e->holders + held, sizeof e->holders - held, "%s%.60s",
                               held ? ", " : "", pq.PQgetvalue(one, 0, 1));
    pq.PQclear(one);
    if (strcmp(name, pg->parked) == 0) {
      e->parked++;
      continue;
    }
    if (e->n++ == 0)
      snprintf(e->first, sizeof e->first, "%s", name);
    if (names < sizeof e->schemas)
      names += (size_t)snprintf(e->schemas + names, sizeof e->schemas - names, "%s%.63s",
                                names ? ", " : "", name);
  }
  pq.PQclear(res);
  return rc;
}

/* ", N lease(s) live (holders)" or "", for the messages. */
static void earlier_live(const earlier_t *e, char *buf, size_t n) {
  buf[0] = '\0';
  if (e->live > 0)
    snprintf(buf, n, ", %" PRId64 " lease%s live (%.50s%s)", e->live, e->live > 1 ? "s" : "",
             e->holders, e->live > 2 || e->n + e->parked > 1 ? ", ..." : "");
}

/* The refusal of a lease beside an earlier registry (e->n or e->live):
 * IDGEN_EREGISTRY naming it, its live leases and what to do. */
static int earlier_refuse(const pg_t *pg, const earlier_t *e, char *err, size_t errlen) {
  char live[200];
  earlier_live(e, live, sizeof live);
  if (e->n == 0) /* parked, but its holders run: they started before it moved */
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      PFX "schema %s keeps a registry an earlier idgen made%s: none is granted "
                          "here until none of its leases is live (stop its holders)",
                      pg->parked, live);
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "schema%s %s ha%s a registry an earlier idgen made (through "
                        "search_path)%s, whose holders would lease these tuples unseen. Upgrade "
                        "every holder; then, once none of its leases is live, move it where they "
                        "cannot find it and this version reads its marks: CREATE SCHEMA %s; ALTER "
                        "TABLE %s.idgen_nodes SET SCHEMA %s (and idgen_pools, idgen_spaces). Never "
                        "drop it (its marks)",
                    e->n > 1 ? "s" : "", e->schemas, e->n > 1 ? "ve" : "s", live, pg->parked,
                    e->first, pg->parked);
}

/* ---- open, close ------------------------------------------------------------- */

/* Before a registry is made in pg's schema, in the schema transaction:
 * refused (IDGEN_EREGISTRY) if the schema has none of idgen's tables while
 * another schema has a registry made by an earlier version (which found its
 * tables through the session's search_path), live or not, or by this one
 * and the URI does not name this schema: holders of a second registry in
 * one database would lease the first's tuples again. */
static int pg_elsewhere(pg_t *pg, char *err, size_t errlen) {
  PGresult *res;
  int rc = pg_query(pg, &res, SQL_NONE_HERE, 0, NULL, 0, NULL, err, errlen);
  int none = rc == 0 && pq.PQgetvalue(res, 0, 0)[0] == 't';
  pq.PQclear(res);
  if (rc < 0 || !none)
    return rc;
  const char *v[] = {pg->schema, pg->parked};
  if ((rc = pg_query(pg, &res, SQL_ELSEWHERE, 2, v, 0, NULL, err, errlen)) < 0)
    return rc;
  int64_t earlier = pg_i64(res, 0, 0), ours = pg_i64(res, 0, 2);
  char where[200], first[64], live[200] = "";
  snprintf(where, sizeof where, "%s", pq.PQgetvalue(res, 0, earlier > 0 ? 1 : 3));
  pq.PQclear(res);
  snprintf(first, sizeof first, "%.*s", (int)strcspn(where, ","), where);
  const char *s = pg->schema, *many = (earlier > 0 ? earlier : ours) > 1 ? "s" : "";
  if (earlier > 0) {
    earlier_t e;
    char why[400];
    if (pg_earlier(pg, &e, 0, why, sizeof why) == 0)
      earlier_live(&e, live, sizeof live);
    else
      snprintf(live, sizeof live, " (its leases could not be read)");
    /* In place, holders of both versions share it; moved, an earlier
     * version still running, or started later, makes a new one in public
     * (the guard stops it only while a holder of this version runs). */
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      PFX "schema %s has no registry, but schema%s %s ha%s one an earlier idgen "
                          "made (through search_path)%s: add ?schema=%s to the URI to use it in "
                          "place, or, once every holder is upgraded and none of its leases is "
                          "live, move it: CREATE SCHEMA IF NOT EXISTS %s; ALTER TABLE "
                          "%s.idgen_nodes SET SCHEMA %s (and idgen_pools, idgen_spaces). Never "
                          "drop it: its marks keep new IDs above its own",
                      s, many, where, many[0] ? "ve" : "s", live, first, s, first, s);
  }
  if (ours > 0 && !pg->schema_given)
    return idgen__err(err, errlen, IDGEN_EREGISTRY,
                      PFX "schema %s has no registry, but schema%s %s ha%s one: add ?schema=%s "
                          "to the URI to use it, or ?schema=%s to make a second, separate "
                          "registry (its holders never meet the other's)",
                      s, many, where, many[0] ? "ve" : "s", first, s);
  return 0;
}

/* Runs SQL_SCHEMA in one transaction: 0; 1 if another session holds the
 * schema lock, 2 if a statement met lock_timeout (55P03) or a deadlock
 * (40P01) on a table, with the server's words in err (nothing was done: try
 * again); 3 if the role may not make or mend the tables (42501, with the
 * server's words); or the first failure (pg_elsewhere's refusal among them).  Under
 * the lock it looks again: a starter that found no tables while another
 * made them would otherwise re-run the DDL, whose table locks then deadlock
 * with the pool and node rows that starters who found the tables are
 * writing. */
static int pg_schema_txn(pg_t *pg, char *err, size_t errlen) {
  PGresult *res;
  char state[6] = "";
  int rc = pg_query(pg, &res, "BEGIN", 0, NULL, 1, NULL, err, errlen);
  pq.PQclear(res);
  if (rc == 0 && (rc = pg_query(pg, &res, SQL_SCHEMA_LOCK, 0, NULL, 0, NULL, err, errlen)) == 0) {
    rc = pq.PQgetvalue(res, 0, 0)[0] == 't' ? 0 : 1;
    pq.PQclear(res);
  }
  int made = 0;
  if (rc == 0 && (rc = pg_query(pg, &res, SQL_EXISTS, 0, NULL, 0, NULL, err, errlen)) == 0) {
    made = pq.PQgetvalue(res, 0, 0)[0] == 't';
    pq.PQclear(res);
  }
  if (rc == 0 && !made)
    rc = pg_elsewhere(pg, err, errlen);
  for (int i = 0; rc == 0 && !made && SQL_SCHEMA[i]; i++) {
    rc = pg_query(pg, &res, SQL_SCHEMA[i], 0, NULL, 0, state, err, errlen);
    pq.PQclear(res);
    if (rc < 0 && (strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0))
      rc = 2;
    else if (rc < 0 && strcmp(state, "42501") == 0) /* insufficient privilege */
      rc = 3;
  }
  if (pg->conn != NULL) {
    PGresult *end = NULL;
    pg_query(pg, &end, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL, 0, NULL, rc == 0 ? err : NULL,
             rc == 0 ? errlen : 0);
    if (rc == 0 && (end == NULL || pq.PQresultStatus(end) != PGRES_COMMAND_OK))
      rc = IDGEN_EREGISTRY;
    pq.PQclear(end);
  }
  return rc;
}

/* Makes the schema if it is missing.  Another starter making it holds the
 * schema lock: wait on this side, LOCK_POLL_MS between looks, at most
 * LOCK_WAIT_MS (its transaction is a few statements; a server slow
 * enough to take longer is named in the error). */
static int pg_create_schema(pg_t *pg, char *err, size_t errlen) {
  PGresult *res;
  int rc;
  char last[512] = "";
  for (int64_t deadline = idgen__mono_ms() + LOCK_WAIT_MS;;) {
    char st[6] = "";
    if ((rc = pg_query(pg, &res, SQL_EXISTS, 0, NULL, 1, st, err, errlen)) < 0) {
      if (strcmp(st, "55P03") == 0)
        return idgen__err(err, errlen, rc,
                          PFX "looking for idgen's tables: a lock on the system catalogs "
                              "(pg_class, pg_trigger) was not granted within lock_timeout (2 s); "
                              "another session holds one");
      return rc;
    }
    int exists = pq.PQgetvalue(res, 0, 0)[0] == 't', leases = pq.PQgetvalue(res, 0, 1)[0] == 't';
    pq.PQclear(res);
    if (exists || (rc = pg_schema_txn(pg, last, sizeof last)) == 0)
      break;
    /* A registry made before sequences, opened by a role that may use its
     * tables but not add one: leases go on; sequences fail, saying what
     * to do (pg_seq_fail), until a role that may starts once. */
    if (rc == 3 && leases)
      break;
    if (rc < 0 || rc == 3)
      return idgen__err(err, errlen, rc < 0 ? rc : IDGEN_EREGISTRY, "%s", last);
    if (idgen__mono_ms() >= deadline && rc == 2)
      return idgen__err(err, errlen, IDGEN_EREGISTRY,
                        PFX "could not make or mend idgen's tables for %d ms: another session "
                            "holds a lock on idgen_nodes or idgen_pools (%s)",
                        LOCK_WAIT_MS,
                        strncmp(last, PFX, sizeof PFX - 1) == 0 ? last + sizeof PFX - 1 : last);
    if (idgen__mono_ms() >= deadline)
      return idgen__err(err, errlen, IDGEN_EREGISTRY,
                        PFX "another session has been creating idgen's tables for %d ms (it "
                            "holds advisory lock " KEY_MAKE ", or an earlier idgen's " KEY_EARLIER
                            "): is the server overloaded?",
                        LOCK_WAIT_MS);
    struct timespec t = {0, LOCK_POLL_MS * 1000000L};
    nanosleep(&t, NULL);
  }
  char state[6] = "";
  rc = pg_query(pg, &res, SQL_CHECK, 0, NULL, 1, state, err, errlen);
  pq.PQclear(res);
  if (rc < 0 && strcmp(state, "42703") == 0) { /* undefined column */
    char why[300];
    snprintf(why, sizeof why, "%s", err ? err : "");
    return idgen__err(err, errlen, rc,
                      "%s (tables idgen_nodes and idgen_pools are not idgen's, or of another "
                      "version)",
                      why);
  }
  return rc;
}

/* ---- the URI ------------------------------------------------------------------ */

/* Whether libpq knows `key`; a name it or idgen knows in another case
 * (names are case-sensitive) into like[] if not. */
static int pg_known(const PQconninfoOption *keys, const char *key, char like[64]) {
  static const char *const ours[] = {"space", "schema"};
  like[0] = '\0';
  for (const PQconninfoOption *o = keys; o && o->keyword; o++) {
    if (strcmp(o->keyword, key) == 0)
      return 1;
    if (strcasecmp(o->keyword, key) == 0)
      snprintf(like, 64, "%s", o->keyword);
  }
  for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
    if (strcasecmp(ours[i], key) == 0)
      snprintf(like, 64, "%s", ours[i]);
  return 0;
}

/* The URI's parameters (registry.c took space=): schema=NAME into pg, and
 * quoted for the SQL; the rest left in a malloc'ed pg->conninfo, which libpq
 * parses.  One that is neither idgen's nor libpq's is refused here, naming
 * the known ones (libpq's own refusal names none); `keys` NULL (libpq not
 * loaded) leaves it to the open.  0, or IDGEN_EINVAL / IDGEN_ENOMEM. */
static int pg_params(pg_t *pg, const char *uri, const PQconninfoOption *keys, char *err,
                     size_t errlen) {
  const char *q = strchr(uri, '?');
  size_t used = q ? (size_t)(q - uri) : strlen(uri);
  snprintf(pg->schema, sizeof pg->schema, "idgen");
  if ((pg->conninfo = malloc(strlen(uri) + 1)) == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  memcpy(pg->conninfo, uri, used);
  pg->conninfo[used] = '\0';
  for (const char *p = q ? q + 1 : ""; *p;) {
    size_t len = strcspn(p, "&");
    const char *eq = memchr(p, '=', len);
    size_t kl = eq ? (size_t)(eq - p) : len;
    char key[64], like[64];
    if (idgen__pct_decode(key, sizeof key, p, kl, 1) < 0)
      key[0] = '\0'; /* libpq says what is wrong with it */
    if (strcmp(key, "schema") == 0) {
      const char *v = eq ? eq + 1 : p + len;
      size_t vl = (size_t)(p + len - v), n;
      if (pg->schema_given)
        return idgen__err(err, errlen, IDGEN_EINVAL, PFX "schema= given twice in the URI");
      pg->schema_given = 1;
      if (idgen__pct_decode(pg->schema, sizeof pg->schema, v, vl, 1) < 0 ||
          (n = strlen(pg->schema)) == 0 ||
          strspn(pg->schema, "abcdefghijklmnopqrstuvwxyz_0123456789") != n ||
          isdigit((unsigned char)pg->schema[0]) || strncmp(pg->schema, "pg_", 3) == 0)
        return idgen__err(err, errlen, IDGEN_EINVAL,
                          PFX "schema \"%s\" is not a schema name idgen takes: 1 to 63 of a-z, "
                              "0-9 and _, not starting with a digit or pg_",
                          IDGEN_QUOTE(v, vl, '"', 80));
    } else if (keys && key[0] && !pg_known(keys, key, like)) {
      char hint[100] = "";
      if (like[0])
        snprintf(hint, sizeof hint, " (did you mean %s? names are case-sensitive)", like);
      return idgen__err(err, errlen, IDGEN_EINVAL,
                        PFX "bad URI: invalid URI query parameter: \"%s\"%s; known: idgen's "
                            "space and schema, and libpq's connection parameters (host, port, "
                            "dbname, user, password, options, sslmode, connect_timeout, "
                            "application_name, ...)",
                        IDGEN_QUOTE(p, kl, '"', 60), hint);
    } else if (len > 0) {
      size_t o = strlen(pg->conninfo);
      pg->conninfo[o] = o == used ? '?' : '&';
      memcpy(pg->conninfo + o + 1, p, len);
      pg->conninfo[o + 1 + len] = '\0';
    }
    p += len;
    if (*p == '&')
      p++;
  }
  snprintf(pg->quoted, sizeof pg->quoted, "\"%s\"", pg->schema); /* nothing in it to escape */
  /* cut as PostgreSQL cuts a name to 63 bytes */
  snprintf(pg->parked, sizeof pg->parked, "%.*s_earlier", 55, pg->schema);
  return 0;
}

/* The URI's parameters, then libpq's parse of the rest.  Without libpq the
 * rest is left to pg_open, which names the missing library (a check is
 * about the URI, not the host). */
static int pg_uri(pg_t *pg, const char *uri, char *err, size_t errlen) {
  if (idgen__dynlib_need(&libpq, PFX, NULL, 0) < 0)
    return pg_params(pg, uri, NULL, err, errlen);
  if (pq_keywords == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  int rc = pg_params(pg, uri, pq_keywords, err, errlen);
  char *perr = NULL;
  PQconninfoOption *opts = rc < 0 ? NULL : pq.PQconninfoParse(pg->conninfo, &perr);
  if (rc == 0 && opts == NULL)
    rc = pg_fail(err, errlen, perr ? IDGEN_EINVAL : IDGEN_ENOMEM, "bad URI",
                 perr ? perr : "out of memory");
  pq.PQfreemem(perr);
  pq.PQconninfoFree(opts);
  return rc;
}

static int pg_check(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)rest; /* libpq takes the whole URI */
  pg_t scratch = {.conninfo = NULL};
  int rc = pg_uri(&scratch, uri, err, errlen);
  free(scratch.conninfo);
  return rc;
}

static int pg_open(idgen_registry_t *r, const char *rest, char *err, size_t errlen) {
  (void)rest;
  int rc = idgen__dynlib_need(&libpq, PFX, err, errlen);
  if (rc < 0)
    return rc;
  pg_t *pg = calloc(1, sizeof *pg);
  if (pg == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  pthread_mutex_init(&pg->mu, NULL);
  pg->fork_gen = idgen__fork_gen();
  if ((rc = pg_uri(pg, r->uri, err, errlen)) == 0)
    rc = pg_create_schema(pg, err, errlen);
  if (rc < 0) {
    pg_drop(pg);
    pthread_mutex_destroy(&pg->mu);
    free(pg->conninfo);
    free(pg);
    return rc;
  }
  r->be = pg;
  return 0;
}

static void pg_close(idgen_registry_t *r) {
  pg_t *pg = r->be;
  if (pg == NULL)
    return;
  if (pg->fork_gen == idgen__fork_gen()) {
    pg_drop(pg);
    pthread_mutex_destroy(&pg->mu);
  } else if (pg->conn && pq.PQsocket(pg->conn) >= 0) {
    close(pq.PQsocket(pg->conn)); /* the parent's session: leaked, not ended */
  }
  free(pg->conninfo);
  free(pg);
  r->be = NULL;
}

/* ---- leases ------------------------------------------------------------------ */

/* The SQL text of a uint64 key: the signed 64-bit integer of the same bits. */
static void key_text(uint64_t key, char buf[24]) { snprintf(buf, 24, "%" PRId64, (int64_t)key); }

/* The parameters of SQL_CANDIDATES / SQL_BEST for l's pool, from value
 * `from`, wall clock `wall`, new values included or not. */
typedef struct scan_args {
  char from[24], size[24], wall[24], fixed[24], inv[24], shift[8], max[24];
  const char *v[9];
} scan_args_t;

static void scan_args(scan_args_t *a, const idgen_lease_t *l, uint64_t from, int64_t wall,
                      int with_new) {
  const idgen__pool_t *p = &l->pool;
  snprintf(a->from, sizeof a->from, "%" PRIu64, from);
  snprintf(a->size, sizeof a->size, "%" PRIu64, p->size);
  snprintf(a->wall, sizeof a->wall, "%" PRId64, wall);
  key_text(p->fixed, a->fixed);
  key_text(~((p->size - 1) << p->shift), a->inv);
  snprintf(a->shift, sizeof a->shift, "%u", p->shift);
  snprintf(a->max, sizeof a->max, "%" PRIu64, p->size - 1);
  const char *v[] = {l->pool.store, a->from,  a->size,
                     a->wall,       a->fixed, a->inv,
                     a->shift,      a->max,   with_new ? "true" : "false"};
  memcpy(a->v, v, sizeof v);
}

/* What every claim of one acquisition sends besides the tuple. */
typedef struct claim_args {
  char ttl[24], q[24], version[24];
  const char *space;
} claim_args_t;

/* Claims value `id` if its tuple is free and its mark is behind `wall`: 1
 * won (l filled in), 0 lost to someone else, 2 the space's version moved
 * (look at the space again), or an error. */
static int pg_claim(pg_t *pg, idgen_lease_t *l, uint64_t id, const claim_args_t *c,
                    const char *wall, char *err, size_t errlen) {
  char key[24];
  key_text(l->pool.fixed | id << l->pool.shift, key);
  const char *v[] = {l->pool.store, key, l->holder, c->ttl, c->q, wall, c->space, c->version};
  PGresult *res;
  char state[6] = "";
  int rc = pg_query(pg, &res, SQL_CLAIM, 8, v, 0, state, err, errlen);
  /* The row locked elsewhere past lock_timeout (55P03), a serialization
   * failure (40001) or a deadlock with a delete by hand (40P01): lost to
   * someone else, as a claim that returns no row. */
  if (rc < 0 &&
      (strcmp(state, "55P03") == 0 || strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0))
    return 0;
  if (rc < 0)
    return rc;
  int won = pq.PQntuples(res) == 1;
  if (won) {
    l->worker = id;
    l->key = l->pool.fixed | id << l->pool.shift;
    l->generation = (uint64_t)pg_i64(res, 0, 0);
    l->mark_ms = pg_i64(res, 0, 1);
    l->expires_ms = pg_i64(res, 0, 2);
    l->expires_in_ms = pg_i64(res, 0, 3);
  }
  pq.PQclear(res);
  if (won)
    return 1;
  /* Lost: to another acquirer of the tuple, or to a layout that joined. */
  const char *sv[] = {c->space};
  if ((rc = pg_query(pg, &res, SQL_SPACE_GET, 1, sv, 1, NULL, err, errlen)) < 0)
    return rc;
  int moved = pq.PQntuples(res) != 1 || strcmp(pq.PQgetvalue(res, 0, 0), c->version) != 0;
  pq.PQclear(res);
  return moved ? 2 : 0;
}

/* Scans the pool from value 0 for the lowest free one whose mark is behind
 * `now` (never-leased ones too if `with_new`) and claims it: 1 won, 0 none
 * left, 2 the space moved, or an error.  A candidate lost to a concurrent
 * acquirer moves the scan past it, so it ends. */
static int pg_scan(pg_t *pg, idgen_lease_t *l, int64_t now, int with_new, const claim_args_t *c,
                   char *err, size_t errlen) {
  for (uint64_t from = 0; from < l->pool.size;) {
    scan_args_t a;
    scan_args(&a, l, from, now, with_new);
    PGresult *res;
    int rc = pg_query(pg, &res, SQL_CANDIDATES, 9, a.v, 1, NULL, err, errlen);
    if (rc < 0)
      return rc;
    int n = pq.PQntuples(res);
    for (int i = 0; i < n && rc == 0; i++) {
      uint64_t id = (uint64_t)pg_i64(res, i, 0);
      rc = pg_claim(pg, l, id, c, a.wall, err, errlen);
      from = id + 1;
    }
    pq.PQclear(res);
    if (rc != 0 || n == 0)
      return rc;
  }
  return 0;
}

/* The lowest never-leased value of l's pool, or -1 if none. */
static int64_t pg_first_new(pg_t *pg, idgen_lease_t *l, char *err, size_t errlen, int *rc) {
  scan_args_t a;
  scan_args(&a, l, 0, INT64_MIN, 1); /* no existing row is behind INT64_MIN */
  PGresult *res;
  *rc = pg_query(pg, &res, SQL_CANDIDATES, 9, a.v, 1, NULL, err, errlen);
  if (*rc < 0)
    return -1;
  int64_t v = pq.PQntuples(res) > 0 ? pg_i64(res, 0, 0) : -1;
  pq.PQclear(res);
  return v;
}

/* ---- ID spaces (space.c) ------------------------------------------------------- */

/* The probe of space.c: pools of the space whose pools are named with
 * prefix `path`; `fence`: in the joining transaction, where a pool is
 * fenced before its tuples are counted (SQL_POOL_FENCE). */
typedef struct pg_probe {
  pg_t *pg;
  const char *path;
  int fence;
} pg_probe_t;

static int pg_live(void *ctx, const char *pool, char *holders, size_t n, char *err, size_t errlen) {
  pg_probe_t *pp = ctx;
  char stored[IDGEN__SPACE_PATH_MAX + IDGEN_POOL_NAME_MAX];
  snprintf(stored, sizeof stored, "%s%s", pp->path, pool);
  const char *v[] = {stored};
  PGresult *res;
  int live = 0;
  /* Counted before the fence (the holders' names), and again after it: a
   * renewal that landed in between shows (and the fence is rolled back). */
  for (int pass = 0; pass < 1 + pp->fence && live == 0; pass++) {
    int rc = 0;
    if (pass == 1) {
      rc = pg_query(pp->pg, &res, SQL_POOL_FENCE, 1, v, 0, NULL, err, errlen);
      pq.PQclear(res);
    }
    if (rc == 0)
      rc = pg_query(pp->pg, &res, SQL_POOL_LIVE, 1, v, !pp->fence, NULL, err, errlen);
    if (rc < 0)
      return rc;
    int rows = pq.PQntuples(res);
    live = rows ? (int)pg_i64(res, 0, 0) : 0;
    size_t used = 0;
    if (n)
      holders[0] = '\0';
    for (int i = 0; i < rows && used < n; i++)
      used += (size_t)snprintf(holders + used, n - used,
                               "%s%.100s (key 0x%016" PRIx64 ", free in %.1f s)", i ? ", " : "",
                               pq.PQgetvalue(res, i, 1), (uint64_t)pg_i64(res, i, 2),
                               (double)pg_i64(res, i, 3) / 1000.0);
    if (live > rows && used < n)
      snprintf(holders + used, n - used, ", ...");
    pq.PQclear(res);
  }
  return live;
}

static int pg_issued(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                     size_t errlen) {
  pg_probe_t *pp = ctx;
  char stored[IDGEN__SPACE_PATH_MAX + IDGEN_POOL_NAME_MAX];
  snprintf(stored, sizeof stored, "%s%s", pp->path, pool);
  const char *v[] = {stored};
  PGresult *res;
  int rc = pg_query(pp->pg, &res, SQL_POOL_MAX, 1, v, !pp->fence, NULL, err, errlen);
  if (rc < 0)
    return rc;
  *mark = pg_i64(res, 0, 0);
  *keys = (uint64_t)pg_i64(res, 0, 1);
  pq.PQclear(res);
  return 0;
}

/* The probe for listing, outside any transaction: takes pg->mu itself. */
static int pg_live_locked(void *ctx, const char *pool, char *holders, size_t n, char *err,
                          size_t errlen) {
  pg_probe_t *pp = ctx;
  pg_lock(pp->pg);
  int rc = pg_live(ctx, pool, holders, n, err, errlen);
  pg_unlock(pp->pg);
  return rc;
}

static int pg_issued_locked(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                            size_t errlen) {
  pg_probe_t *pp = ctx;
  pg_lock(pp->pg);
  int rc = pg_issued(ctx, pool, mark, keys, err, errlen);
  pg_unlock(pp->pg);
  return rc;
}

/* The record of the space whose row `res` (version, state) is, into *s and
 * *version; a row without one yet: made up from the space's pools. */
static int pg_space_read(pg_t *pg, PGresult *res, const char *path, idgen__space_t *s,
                         int64_t *version, int retry, char *err, size_t errlen) {
  char why[300];
  if (pq.PQntuples(res) != 1)
    return idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "the ID space's row is missing");
  *version = pg_i64(res, 0, 0);
  const char *state = pq.PQgetvalue(res, 0, 1);
  if (state[0] != '\0') {
    if (idgen__space_parse(state, strlen(state), s, why, sizeof why) < 0)
      return idgen__err(err, errlen, IDGEN_EREGISTRY,
                        PFX "idgen_spaces: %s (the layouts of the ID space; never guessed: "
                            "restore the row, or set its state to '' to have it made again "
                            "from the pools)",
                        why);
    return 0;
  }
  memset(s, 0, sizeof *s);
  PGresult *pools;
  const char *v[] = {path};
  int rc = pg_query(pg, &pools, SQL_SPACE_POOLS, 1, v, retry, NULL, err, errlen);
  for (int i = 0; rc == 0 && i < pq.PQntuples(pools); i++)
    if (idgen__space_add_pool(s, pq.PQgetvalue(pools, i, 0)) < 0)
      rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                      PFX "the ID space has more than %d pools, or one whose name is not a "
                          "pool's (%s)",
                      IDGEN__SPACE_MAX, pq.PQgetvalue(pools, i, 0));
  pq.PQclear(pools);
  return rc;
}

/* The space step of an acquisition: l's layout in its space (space.c),
 * joined if it is not yet, in one transaction under the row's FOR UPDATE.
 * 0 with *version (what the claims compare) and *floor. */
static int pg_space(pg_t *pg, idgen_lease_t *l, const idgen_lease_request_t *req, int64_t *version,
                    int64_t *floor, char *err, size_t errlen) {
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  const char *v[] = {l->r->space};
  PGresult *res = NULL;
  pg_lock(pg);
  int rc = pg_query_patient(pg, &res, SQL_SPACE_MAKE, 1, v, err, errlen);
  pq.PQclear(res);
  if (rc == 0 && (rc = pg_query(pg, &res, SQL_SPACE_GET, 1, v, 1, NULL, err, errlen)) == 0) {
    rc = pg_space_read(pg, res, l->r->space_path, s, version, 1, err, errlen);
    pq.PQclear(res);
  }
  if (rc < 0 || idgen__space_member(s, &l->pool, req->layout, floor)) {
    pg_unlock(pg);
    free(s);
    return rc;
  }
  /* Not a member: decide under the row's lock, in one transaction with
   * the fences of the pools it retires. */
  char state[6] = "";
  rc = pg_query(pg, &res, "BEGIN", 0, NULL, 1, NULL, err, errlen);
  pq.PQclear(res);
  if (rc == 0 && (rc = pg_query(pg, &res, SQL_SPACE_LOCK, 1, v, 0, state, err, errlen)) == 0) {
    rc = pg_space_read(pg, res, l->r->space_path, s, version, 0, err, errlen);
    pq.PQclear(res);
  }
  idgen__space_plan_t plan = {0};
  pg_probe_t probe = {pg, l->r->space_path, 1};
  idgen__space_probe_t pr = {&probe, pg_live, pg_issued};
  if (rc == 0)
    rc = idgen__space_join(s, l->r->space, &l->pool, req->layout, req, idgen__req_now_ms(req), &pr,
                           &plan, err, errlen);
  if (rc == 0 && plan.changed) {
    char *text = malloc(IDGEN__SPACE_TEXT_MAX);
    int len = text ? idgen__space_format(s, text, IDGEN__SPACE_TEXT_MAX) : -1;
    const char *sv[] = {l->r->space, text};
    rc = len < 0 ? idgen__err(err, errlen, IDGEN_EREGISTRY, PFX "the space's record is too long")
                 : pg_query(pg, &res, SQL_SPACE_SET, 2, sv, 0, NULL, err, errlen);
    if (len >= 0 && rc == 0) {
      *version = pg_i64(res, 0, 0);
      pq.PQclear(res);
    }
    free(text);
  }
  if (pg->conn != NULL) {
    PGresult *end = NULL;
    int ok = rc == 0;
    pg_query(pg, &end, ok ? "COMMIT" : "ROLLBACK", 0, NULL, 0, NULL, ok ? err : NULL,
             ok ? errlen : 0);
    if (ok && (end == NULL || pq.PQresultStatus(end) != PGRES_COMMAND_OK))
      rc = IDGEN_EREGISTRY;
    pq.PQclear(end);
  } else if (rc == 0) {
    rc = IDGEN_EREGISTRY; /* the connection broke: nothing was committed */
  }
  pg_unlock(pg);
  free(s);
  /* The row locked past lock_timeout, or a deadlock: another joined; look
   * again (the caller's next round). */
  if (rc < 0 && (strcmp(state, "55P03") == 0 || strcmp(state, "40P01") == 0))
    return 1;
  *floor = plan.floor_ms;
  return rc;
}

/* The leases of an earlier version, before any claim: *legacy the marks of
 * its table idgen_leases (a floor), *e its registry in another schema;
 * refused while either has a live lease. */
static int pg_acquire_earlier(pg_t *pg, long long *legacy, earlier_t *e, char *err, size_t errlen) {
  long long legacy_held = 0;
  PGresult *res = NULL;
  pg_lock(pg);
  int rc = pg_query(pg, &res, SQL_LEGACY_EXISTS, 0, NULL, 1, NULL, err, errlen);
  int old_table = rc == 0 && pq.PQgetvalue(res, 0, 0)[0] == 't';
  pq.PQclear(res);
  res = NULL;
  if (old_table && (rc = pg_query(pg, &res, SQL_LEGACY, 0, NULL, 1, NULL, err, errlen)) == 0) {
    *legacy = pg_i64(res, 0, 0);
    legacy_held = pg_i64(res, 0, 1);
  }
  pq.PQclear(res);
  res = NULL;
  /* An earlier version's registry in another schema: refused unless it
   * is parked and none of its leases is live, and then its marks are a
   * floor.  The guard first: an earlier version making its tables after
   * this look cannot (docs/DESIGN.md §11). */
  if (rc == 0) {
    pg_guard(pg);
    rc = pg_earlier(pg, e, 1, err, errlen);
  }
  pg_unlock(pg);
  if (rc == 0 && legacy_held > 0)
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "%lld lease(s) of table idgen_leases are held by an earlier idgen, whose "
                        "leases this version cannot see: stop the earlier version's holders first "
                        "(their marks are kept)",
                    legacy_held);
  if (rc == 0 && (e->n > 0 || e->live > 0))
    rc = earlier_refuse(pg, e, err, errlen);
  return rc;
}

/* The pool's row, once the space has the layout (raised to an earlier
 * version's marks when legacy > 0). */
static int pg_make_pool(pg_t *pg, const char *const *pv, long long legacy, char *err,
                        size_t errlen) {
  PGresult *res = NULL;
  pg_lock(pg);
  int rc = pg_query_patient(pg, &res, SQL_POOL, 3, pv, err, errlen);
  pq.PQclear(res);
  res = NULL;
  if (rc == 0 && legacy > 0)
    rc = pg_query_patient(pg, &res, SQL_POOL_RAISE, 3, pv, err, errlen);
  pq.PQclear(res);
  pg_unlock(pg);
  return rc;
}

/* One round's look at the pool: its floor (*floor), a scan of its tuples,
 * and the best free one (*res: SQL_BEST's row).  0, 2 when the space moved,
 * or what pg_scan or pg_query gave. */
static int pg_look(pg_t *pg, idgen_lease_t *l, const char *const *pv, int64_t now, claim_args_t *c,
                   int64_t *floor, PGresult **res, char *err, size_t errlen) {
  *res = NULL;
  pg_lock(pg);
  int rc = pg_query(pg, res, SQL_FLOOR, 1, pv, 1, NULL, err, errlen);
  if (rc == 0) {
    *floor = pq.PQntuples(*res) ? pg_i64(*res, 0, 0) : 0;
    pq.PQclear(*res);
    *res = NULL;
    /* A never-leased tuple's mark is the floor. */
    rc = pg_scan(pg, l, now, *floor < now, c, err, errlen);
  }
  if (rc == 0) {
    scan_args_t a;
    scan_args(&a, l, 0, now, 1);
    rc = pg_query(pg, res, SQL_BEST, 9, a.v, 1, NULL, err, errlen);
  }
  pg_unlock(pg);
  return rc;
}

static int pg_acquire(idgen_lease_t *l, const idgen_lease_request_t *req, char *err,
                      size_t errlen) {
  pg_t *pg = l->r->be;
  const idgen__pool_t *p = &l->pool;
  claim_args_t c = {.space = l->r->space};
  snprintf(c.ttl, sizeof c.ttl, "%" PRId64, l->ttl_ms);
  snprintf(c.q, sizeof c.q, "%" PRId64, l->quarantine_ms);
  int64_t waited = 0;
  int64_t borrow = req->start_borrow_ms > 0 ? req->start_borrow_ms : 0;
  PGresult *res = NULL;
  long long legacy = 0;
  earlier_t e = {0};
  int rc = pg_acquire_earlier(pg, &legacy, &e, err, errlen);
  if (rc < 0)
    return rc;
  char ahead[120];
  snprintf(ahead, sizeof ahead, "; the earlier registry in schema %.63s has marks ahead", e.top);
  char floor_text[24];
  snprintf(floor_text, sizeof floor_text, "%lld", legacy);
  const char *pv[] = {p->store, p->layout, floor_text};
  int made = 0;
  for (int round = 0; round < ACQUIRE_ROUNDS; round++) {
    /* The space first: the version the claims compare, and the floor. */
    int64_t version = 0, space_floor = 0;
    if ((rc = pg_space(pg, l, req, &version, &space_floor, err, errlen)) < 0)
      return rc;
    if (rc == 1)
      continue;
    snprintf(c.version, sizeof c.version, "%" PRId64, version);
    /* The generator starts above l->floor_ms: the earlier registry's marks
     * go there, and pg_renew fences the lease if they pass it. */
    l->floor_ms = space_floor > e.mark ? space_floor : e.mark;
    int64_t now = idgen__req_now_ms(req), floor = 0;
    if (l->floor_ms >= now + borrow) { /* the floor is ahead: wait for it */
      const char *why =
          space_floor >= e.mark ? "; its layout's floor in the ID space is ahead" : ahead;
      if ((rc = idgen__start_wait(PFX, req, p, 0, l->floor_ms, now, &waited, why, err, errlen)) < 0)
        return rc;
      continue;
    }
    if (!made) {
      if ((rc = pg_make_pool(pg, pv, legacy, err, errlen)) < 0)
        return rc;
      made = 1;
    }
    rc = pg_look(pg, l, pv, now, &c, &floor, &res, err, errlen);
    if (rc == 2)
      continue; /* the space moved: look at it again */
    if (rc != 0)
      return rc < 0 ? rc : 0;
    uint64_t used = (uint64_t)pg_i64(res, 0, 0), best = (uint64_t)pg_i64(res, 0, 1);
    int none = pq.PQgetisnull(res, 0, 1);
    int64_t mark = pg_i64(res, 0, 2), quarantined = pg_i64(res, 0, 3), next_ms = pg_i64(res, 0, 4);
    pq.PQclear(res);
    int fresh = used < p->size; /* never-leased values are left */
    if ((!none && mark < now) || (fresh && floor < now))
      continue; /* freed or released since the scan: scan again */
    if (none && !fresh) {
      if ((rc = idgen__pool_full(PFX, req, p, p->size - (uint64_t)quarantined,
                                 (uint64_t)quarantined, next_ms, &waited, err, errlen)) < 0)
        return rc;
      continue; /* waited for one to come out of quarantine */
    }
    /* Every free tuple's mark is ahead: the generator may start above the
     * lowest by borrowing; else wait for it, reading the wall clock again
     * after the sleep, then scan again (it may be taken by then). */
    if (fresh && (none || floor < mark)) {
      mark = floor;
      pg_lock(pg);
      int64_t v = pg_first_new(pg, l, err, errlen, &rc);
      pg_unlock(pg);
      if (rc < 0)
        return rc;
      if (v < 0)
        continue; /* taken meanwhile */
      best = (uint64_t)v;
    }
    if (mark < now + borrow) {
      char wall[24];
      snprintf(wall, sizeof wall, "%" PRId64, now + borrow);
      pg_lock(pg);
      rc = pg_claim(pg, l, best, &c, wall, err, errlen);
      pg_unlock(pg);
      if (rc == 1 || rc < 0)
        return rc < 0 ? rc : 0;
      continue; /* lost it, or the space moved */
    }
    if ((rc = idgen__start_wait(PFX, req, p, best, mark, now, &waited, "", err, errlen)) < 0)
      return rc;
  }
  return idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "no tuple of %s could be claimed in %d rounds: other acquirers kept "
                        "taking them; try again",
                    l->pool.name, ACQUIRE_ROUNDS);
}

/* Says why a conditional write found no row: IDGEN_ELEASE.  pg->mu held. */
static int pg_fenced(pg_t *pg, idgen_lease_t *l, const char *what, char *err, size_t errlen) {
  char key[24], why[200] = "";
  key_text(l->key, key);
  const char *v[] = {l->pool.store, key};
  PGresult *res;
  if (pg_query(pg, &res, SQL_ROW, 2, v, 1, NULL, NULL, 0) == 0) {
    if (pq.PQntuples(res) == 0) {
      snprintf(why, sizeof why, ": its row is gone");
    } else {
      uint64_t gen = (uint64_t)pg_i64(res, 0, 0);
      const char *holder = pq.PQgetvalue(res, 0, 1);
      if (gen != l->generation && holder[0])
        snprintf(why, sizeof why, ": granted again, generation %" PRIu64 " to %.100s", gen, holder);
      else if (gen != l->generation)
        snprintf(why, sizeof why, ": freed by hand (now generation %" PRIu64 ")", gen);
      else
        snprintf(why, sizeof why, ": released");
    }
    pq.PQclear(res);
  }
  return idgen__fenced(PFX, l, what, why, err, errlen);
}

/* Runs a conditional write on l's row: 0 if it matched, IDGEN_ELEASE if
 * not, IDGEN_EREGISTRY.  *res (may be NULL) gets the result on 0. */
static int pg_lease_write(idgen_lease_t *l, const char *sql, const char *extra1, const char *extra2,
                          const char *what, PGresult **out, char *err, size_t errlen) {
  pg_t *pg = l->r->be;
  char key[24], gen[24];
  key_text(l->key, key);
  snprintf(gen, sizeof gen, "%" PRIu64, l->generation);
  const char *v[] = {l->pool.store, key, gen, l->holder, extra1, extra2};
  int n = extra2 ? 6 : extra1 ? 5 : 4;
  PGresult *res;
  pg_lock(pg);
  int rc = pg_query(pg, &res, sql, n, v, 1, NULL, err, errlen);
  if (rc == 0 && pq.PQntuples(res) == 0 && pq.PQresultStatus(res) == PGRES_TUPLES_OK) {
    pq.PQclear(res);
    res = NULL;
    rc = pg_fenced(pg, l, what, err, errlen);
  }
  pg_unlock(pg);
  if (out && rc == 0)
    *out = res;
  else
    pq.PQclear(res);
  return rc;
}

/* A renewal, which also counts the schemas holding an earlier version's
 * registry (catalogs only); where there is one (rare), it is read, and the
 * lease is fenced out (IDGEN_ELEASE: the generator stops at once) unless
 * it is parked, none of its leases is live and its marks are below the
 * floor this lease started above: else its holders may issue this tuple's
 * IDs.  One that cannot be read fails the renewal (IDGEN_EREGISTRY: the
 * lease lapses unless a later one succeeds).  The message fits a lease
 * status's reason (IDGEN_REASON_MAX). */
static int pg_renew(idgen_lease_t *l, char *err, size_t errlen) {
  pg_t *pg = l->r->be;
  char ttl[24], q[24];
  snprintf(ttl, sizeof ttl, "%" PRId64, l->ttl_ms);
  snprintf(q, sizeof q, "%" PRId64, l->quarantine_ms);
  PGresult *res;
  int rc = pg_lease_write(l, SQL_RENEW, ttl, q, "renew", &res, err, errlen);
  if (rc < 0)
    return rc;
  l->expires_ms = pg_i64(res, 0, 0);
  l->expires_in_ms = pg_i64(res, 0, 1);
  int64_t others = pg_i64(res, 0, 2);
  pq.PQclear(res);
  earlier_t e = {0};
  pg_lock(pg);
  pg_guard(pg);
  if (others > 0)
    rc = pg_earlier(pg, &e, 1, err, errlen);
  pg_unlock(pg);
  if (rc < 0 || (e.n == 0 && e.live == 0 && e.mark <= l->floor_ms))
    return rc;
  char why[100];
  if (e.live > 0)
    snprintf(why, sizeof why, "%" PRId64 " lease%s live: %.32s", e.live, e.live > 1 ? "s" : "",
             e.holders);
  else
    snprintf(why, sizeof why, "%s", e.n > 0 ? "not parked" : "marks above this lease's start");
  return idgen__err(err, errlen, IDGEN_ELEASE,
                    PFX "renew: fenced out: schema %.32s has an earlier idgen's registry (%s) "
                        "that may issue this tuple's IDs: upgrade its holders, then move its "
                        "tables into schema %s",
                    e.n > 0 ? e.first : pg->parked, why, pg->parked);
}

static int pg_mark(idgen_lease_t *l, int64_t mark_ms, char *err, size_t errlen) {
  char m[24];
  snprintf(m, sizeof m, "%" PRId64, mark_ms);
  int rc = pg_lease_write(l, mark_ms < l->mark_ms ? SQL_FINAL_MARK : SQL_MARK, m, NULL, "mark",
                          NULL, err, errlen);
  if (rc == 0)
    l->mark_ms = mark_ms;
  return rc;
}

static void pg_release(idgen_lease_t *l) {
  /* An UPDATE without RETURNING: no row is not "fenced" here, and errors
   * are dropped (an unreleased lease expires). */
  pg_lease_write(l, SQL_RELEASE, NULL, NULL, "release", NULL, NULL, 0);
}

/* ---- adopt -------------------------------------------------------------------- */

/* Says why SQL_ADOPT found no row: IDGEN_ELEASE.  pg->mu held. */
static int pg_adopt_refused(pg_t *pg, idgen_lease_t *l, const char *was, char *err, size_t errlen) {
  char key[24], why[260] = "";
  key_text(l->key, key);
  const char *v[] = {l->pool.store, key};
  PGresult *res;
  if (pg_query(pg, &res, SQL_ROW, 2, v, 1, NULL, NULL, 0) == 0) {
    if (pq.PQntuples(res) == 0) {
      snprintf(why, sizeof why, ": it was never granted");
    } else {
      uint64_t gen = (uint64_t)pg_i64(res, 0, 0);
      const char *holder = pq.PQgetvalue(res, 0, 1);
      if (gen != l->generation && holder[0])
        snprintf(why, sizeof why, ": granted again, generation %" PRIu64 " to %.100s", gen, holder);
      else if (gen != l->generation)
        snprintf(why, sizeof why, ": freed (now generation %" PRIu64 ")", gen);
      else if (!holder[0])
        snprintf(why, sizeof why, ": released");
      else if (strcmp(holder, was) != 0)
        snprintf(why, sizeof why, ": recorded for %.100s, not %.100s", holder, was);
      else
        snprintf(why, sizeof why, ": it expired");
    }
    pq.PQclear(res);
  }
  return idgen__err(err, errlen, IDGEN_ELEASE,
                    PFX "cannot take over generation %" PRIu64 " of %s in %s%s", l->generation,
                    l->node, l->pool.name, why);
}

/*
 * Takes over grant (l->key, l->generation) of `was` (idgen_registry_adopt):
 * one conditional UPDATE (SQL_ADOPT) while it is held and unexpired.  The
 * database cannot tell a stopped holder from a live one: a live one's next
 * renewal or mark write is fenced (they compare the holder), and whether it
 * may be taken over at all is the caller's to decide (a lease service checks
 * its client's secret).  Unexpired since its grant, the tuple's pool cannot
 * have been retired from the ID space (retiring fences every row of it), so
 * the pool's floor in the space is the one of the grant: l->floor_ms, as
 * acquire gives.  An earlier version's registry beside this one is refused
 * before, as acquire refuses it, and looked for after, as a renewal does
 * (pg_renew); refused there, the tuple is given back.
 */
static int pg_adopt(idgen_lease_t *l, const char *was, char *err, size_t errlen) {
  pg_t *pg = l->r->be;
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL)
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  const char *sv[] = {l->r->space};
  PGresult *res = NULL;
  int64_t version, floor = 0;
  idgen_layout_t lay;
  int member = 0;
  /* An earlier version's registry: refused as acquire refuses, and its
   * marks part of the floor as they were for the grant (parked, they do
   * not move). */
  long long legacy = 0;
  earlier_t e = {0};
  int rc = pg_acquire_earlier(pg, &legacy, &e, err, errlen);
  if (rc < 0) {
    free(s);
    return rc;
  }
  pg_lock(pg);
  rc = pg_query(pg, &res, SQL_SPACE_GET, 1, sv, 1, NULL, err, errlen);
  if (rc == 0 && pq.PQntuples(res) == 1 &&
      (rc = pg_space_read(pg, res, l->r->space_path, s, &version, 1, err, errlen)) == 0)
    member = idgen_layout_parse(&lay, l->pool.layout, NULL, 0) == 0 &&
             idgen__space_member(s, &l->pool, &lay, &floor);
  pq.PQclear(res);
  free(s);
  if (rc == 0 && !member)
    rc = idgen__err(err, errlen, IDGEN_ELEASE,
                    PFX "cannot take over %s of %s: its layout is not in ID space \"%s\"", l->node,
                    l->pool.name, l->r->space);
  char key[24], gen[24], ttl[24], q[24];
  key_text(l->key, key);
  snprintf(gen, sizeof gen, "%" PRIu64, l->generation);
  snprintf(ttl, sizeof ttl, "%" PRId64, l->ttl_ms);
  snprintf(q, sizeof q, "%" PRId64, l->quarantine_ms);
  const char *v[] = {l->pool.store, key, gen, was, l->holder, ttl, q};
  /* Not sent again on a new connection (retry 0): the first may have
   * landed.  SQL_SPACE_GET has just found the connection working. */
  if (rc == 0 && (rc = pg_query(pg, &res, SQL_ADOPT, 7, v, 0, NULL, err, errlen)) == 0) {
    if (pq.PQntuples(res) == 1) {
      l->mark_ms = pg_i64(res, 0, 0);
      l->expires_ms = pg_i64(res, 0, 1);
      l->expires_in_ms = pg_i64(res, 0, 2);
      l->floor_ms = floor > e.mark ? floor : e.mark;
    } else {
      rc = pg_adopt_refused(pg, l, was, err, errlen);
    }
    pq.PQclear(res);
  }
  pg_unlock(pg);
  if (rc == 0 && (rc = pg_renew(l, err, errlen)) < 0)
    pg_release(l); /* taken, but not to be kept */
  return rc;
}

/* ---- list and free ------------------------------------------------------------ */

/* Fills row from columns `c`.. of ROW_COLS. */
static void pg_row_from(const PGresult *res, int i, int c, idgen_lease_row_t *row) {
  row->generation = (uint64_t)pg_i64(res, i, c);
  snprintf(row->holder, sizeof row->holder, "%s", pq.PQgetvalue(res, i, c + 1));
  int64_t st = pg_i64(res, i, c + 2);
  row->state = st == 1 ? IDGEN_LEASE_HELD : st == 2 ? IDGEN_LEASE_QUARANTINE : IDGEN_LEASE_FREE;
  row->expires_in_ms = row->state == IDGEN_LEASE_FREE ? -1 : pg_i64(res, i, c + 3);
  row->mark_ms = pg_i64(res, i, c + 4);
}

/* A stored pool name's space and pool: "spaces/NAME/POOL" or "POOL" (the
 * default space).  0, or -1 for a name of neither form. */
static int space_of(const char *stored, char space[IDGEN_SPACE_NAME_MAX],
                    char pool[IDGEN_POOL_NAME_MAX]) {
  const char *p = stored;
  snprintf(space, IDGEN_SPACE_NAME_MAX, "default");
  if (strncmp(stored, "spaces/", 7) == 0) {
    const char *slash = strchr(stored + 7, '/');
    size_t n = slash ? (size_t)(slash - stored - 7) : 0;
    if (n == 0 || n >= IDGEN_SPACE_NAME_MAX)
      return -1;
    memcpy(space, stored + 7, n);
    space[n] = '\0';
    p = slash + 1;
  }
  if (strncmp(p, "epoch=", 6) != 0 || strlen(p) >= IDGEN_POOL_NAME_MAX)
    return -1;
  snprintf(pool, IDGEN_POOL_NAME_MAX, "%s", p);
  return 0;
}

static int pg_spaces(idgen_registry_t *r, idgen__space_list_cb cb, void *ctx, char *err,
                     size_t errlen) {
  pg_t *pg = r->be;
  PGresult *names;
  pg_lock(pg);
  int rc = pg_query(pg, &names, SQL_SPACES, 0, NULL, 1, NULL, err, errlen);
  pg_unlock(pg);
  if (rc < 0)
    return rc;
  idgen__space_t *s = malloc(sizeof *s);
  if (s == NULL) {
    pq.PQclear(names);
    return idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  /* "default" first, then by name */
  int n = pq.PQntuples(names);
  for (int pass = 0; pass < 2 && rc == 0; pass++)
    for (int i = 0; i < n && rc == 0; i++) {
      const char *name = pq.PQgetvalue(names, i, 0);
      int is_default = strcmp(name, "default") == 0;
      if (pass == is_default || (r->space_given && strcmp(name, r->space) != 0) ||
          idgen__space_name_check(name, NULL, 0) < 0)
        continue;
      char path[IDGEN__SPACE_PATH_MAX] = "";
      if (!is_default)
        snprintf(path, sizeof path, "spaces/%s/", name);
      const char *v[] = {name};
      PGresult *res;
      int64_t version;
      pg_lock(pg);
      rc = pg_query(pg, &res, SQL_SPACE_GET, 1, v, 1, NULL, err, errlen);
      if (rc == 0 && pq.PQntuples(res) == 0) {
        /* pools without a row: read as a row without a record */
        pq.PQclear(res);
        rc = pg_query(pg, &res, "SELECT 0, ''", 0, NULL, 1, NULL, err, errlen);
      }
      if (rc == 0) {
        rc = pg_space_read(pg, res, path, s, &version, 1, err, errlen);
        pq.PQclear(res);
      }
      pg_unlock(pg);
      pg_probe_t probe = {pg, path, 0};
      idgen__space_probe_t pr = {&probe, pg_live_locked, pg_issued_locked};
      if (rc == 0)
        rc = cb(ctx, name, s, &pr);
    }
  free(s);
  pq.PQclear(names);
  return rc;
}

static int pg_list(idgen_registry_t *r, idgen_registry_list_cb cb, void *ctx, char *err,
                   size_t errlen) {
  pg_t *pg = r->be;
  char after_pool[IDGEN_POOL_NAME_MAX + 8] = "", after_key[24] = "";
  snprintf(after_key, sizeof after_key, "%" PRId64, INT64_MIN);
  char parsed_spec[IDGEN_LAYOUT_SPEC_MAX] = "";
  idgen_layout_t lay;
  int known = 0;
  for (;;) {
    /* A page at a time, and cb without the lock: cb may use the registry.
     * The first page starts before every (pool, node): no pool is "". */
    const char *v[] = {after_pool, after_key};
    PGresult *res;
    pg_lock(pg);
    int rc = pg_query(pg, &res, SQL_LIST, 2, v, 1, NULL, err, errlen);
    pg_unlock(pg);
    if (rc < 0)
      return rc;
    int n = pq.PQntuples(res);
    for (int i = 0; i < n && rc == 0; i++) {
      idgen_lease_row_t row;
      memset(&row, 0, sizeof row);
      if (space_of(pq.PQgetvalue(res, i, 0), row.space, row.pool) < 0 ||
          (r->space_given && strcmp(row.space, r->space) != 0))
        continue;
      row.key = (uint64_t)pg_i64(res, i, 1);
      snprintf(row.layout, sizeof row.layout, "%s", pq.PQgetvalue(res, i, 2));
      if (strcmp(row.layout, parsed_spec) != 0) {
        snprintf(parsed_spec, sizeof parsed_spec, "%s", row.layout);
        known = row.layout[0] && idgen_layout_parse(&lay, row.layout, NULL, 0) == 0;
      }
      idgen__node_text(known ? &lay : NULL, row.key, row.node);
      row.pool_mark_ms = pg_i64(res, i, 3);
      pg_row_from(res, i, 4, &row);
      rc = cb(ctx, &row);
    }
    if (n > 0) {
      snprintf(after_pool, sizeof after_pool, "%s", pq.PQgetvalue(res, n - 1, 0));
      snprintf(after_key, sizeof after_key, "%s", pq.PQgetvalue(res, n - 1, 1));
    }
    pq.PQclear(res);
    if (rc != 0 || n < atoi(LIST_PAGE))
      return rc;
  }
}

static int pg_free(idgen_registry_t *r, const char *pool, const char *node, int force, char *err,
                   size_t errlen) {
  pg_t *pg = r->be;
  char key[24], gen[24], why[300], stored[IDGEN__SPACE_PATH_MAX + IDGEN_POOL_NAME_MAX];
  snprintf(stored, sizeof stored, "%s%s", r->space_path, pool);
  const char *v[] = {stored, key, gen, force ? "true" : "false"};
  int rc = 0;
  PGresult *res;
  pg_lock(pg);
  if ((rc = pg_query(pg, &res, SQL_POOL_LAYOUT, 1, v, 1, NULL, err, errlen)) < 0) {
    pg_unlock(pg);
    return rc;
  }
  int pool_known = pq.PQntuples(res) > 0;
  idgen_layout_t lay;
  int known = pool_known && idgen_layout_parse(&lay, pq.PQgetvalue(res, 0, 0), NULL, 0) == 0;
  pq.PQclear(res);
  uint64_t k;
  if (!pool_known) {
    pg_unlock(pg);
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "no pool %.100s in space %s", pool, r->space);
  }
  if (idgen__node_key(known ? &lay : NULL, node, &k, why, sizeof why) < 0) {
    pg_unlock(pg);
    return idgen__err(err, errlen, IDGEN_EINVAL, PFX "%s", why);
  }
  key_text(k, key);
  /* Look, then fence conditional on the generation seen; a change in
   * between (a grant, another free) means look again. */
  for (int attempt = 0; attempt < 3; attempt++) {
    if ((rc = pg_query(pg, &res, SQL_ROW, 2, v, 1, NULL, err, errlen)) < 0)
      break;
    if (pq.PQntuples(res) == 0) {
      pq.PQclear(res);
      rc = idgen__err(err, errlen, IDGEN_EINVAL, PFX "%.100s of %.100s was never leased", node,
                      pool);
      break;
    }
    idgen_lease_row_t row;
    pg_row_from(res, 0, 0, &row);
    int64_t left = pg_i64(res, 0, 3);
    pq.PQclear(res);
    if (row.state == IDGEN_LEASE_HELD && !force) {
      rc = idgen__err(err, errlen, IDGEN_ELEASE,
                      PFX "%.100s in %.100s is held by %s (its lease expires in %" PRId64
                          " ms unless renewed); force to fence the holder out",
                      node, pool, row.holder, left);
      break;
    }
    if (row.state == IDGEN_LEASE_FREE) {
      rc = idgen__err(err, errlen, 0, PFX "%.100s in %.100s is already free (its mark stays)", node,
                      pool);
      break;
    }
    if (row.state == IDGEN_LEASE_QUARANTINE && row.holder[0] == '\0') {
      rc = idgen__err(err, errlen, 0,
                      PFX "%.100s in %.100s is already freed: back in the pool in %" PRId64 " ms",
                      node, pool, left);
      break;
    }
    snprintf(gen, sizeof gen, "%" PRIu64, row.generation);
    if ((rc = pg_query(pg, &res, SQL_FREE, 4, v, 0, NULL, err, errlen)) < 0)
      break;
    if (pq.PQntuples(res) == 1) {
      rc = idgen__err(err, errlen, 0,
                      PFX "%.100s in %.100s freed: generation %" PRIu64 " (%s) fenced out; "
                          "back in the pool in %" PRId64 " ms",
                      node, pool, row.generation, row.holder, pg_i64(res, 0, 1));
      pq.PQclear(res);
      break;
    }
    pq.PQclear(res);
    rc = idgen__err(err, errlen, IDGEN_EREGISTRY,
                    PFX "%.100s in %.100s kept changing while being freed; try again", node, pool);
  }
  pg_unlock(pg);
  return rc;
}

/* The database's clock: clock_timestamp(), not now() (the transaction's). */
static int pg_clock(idgen_registry_t *r, int64_t *unix_ms, char *err, size_t errlen) {
  pg_t *pg = r->be;
  PGresult *res;
  pg_lock(pg);
  int rc = pg_query(pg, &res, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                    0, NULL, 1, NULL, err, errlen);
  pg_unlock(pg);
  if (rc < 0)
    return rc;
  *unix_ms = pg_i64(res, 0, 0);
  pq.PQclear(res);
  return 0;
}

/* ---- sequences ---------------------------------------------------------------- */

/* A failed sequence operation's message, naming the registry (as shown:
 * its password masked) and the counter: why is pg_query's, after PFX. */
static int pg_seq_fail(const idgen_registry_t *r, const char *key, const char *what, int rc,
                       const char *state, const char *why, char *err, size_t errlen) {
  const pg_t *pg = r->be;
  if (strncmp(why, PFX, sizeof PFX - 1) == 0)
    why += sizeof PFX - 1;
  char hint[300] = "";
  if (strcmp(state, "42P01") == 0) /* undefined table */
    snprintf(hint, sizeof hint,
             " (the registry was made by an idgen without sequences, and no role that may add "
             "table %s.idgen_seqs has started since: start idgen once as the owner of its "
             "tables)",
             pg->schema);
  else if (strcmp(state, "42501") == 0 && strstr(why, "idgen_seqs"))
    snprintf(hint, sizeof hint,
             " (grant this role SELECT, INSERT, UPDATE on table %s.idgen_seqs, as on the "
             "registry's other tables)",
             pg->schema);
  return idgen__err(err, errlen, rc, PFX "%s: counter %.140s of space %s: %s: %s%s",
                    r->shown ? r->shown : "postgres", key, r->space, what, why, hint);
}

static int pg_seq_load(idgen_registry_t *r, const char *key, char **text, uint64_t *version,
                       char *err, size_t errlen) {
  pg_t *pg = r->be;
  const char *v[] = {r->space, key};
  char why[512] = "", state[6] = "";
  PGresult *res;
  *text = NULL;
  *version = 0;
  pg_lock(pg);
  int rc = pg_query(pg, &res, SQL_SEQ_LOAD, 2, v, 1, state, why, sizeof why);
  pg_unlock(pg);
  if (rc < 0)
    return pg_seq_fail(r, key, "load", rc, state, why, err, errlen);
  if (pq.PQntuples(res) > 0) {
    *version = (uint64_t)pg_i64(res, 0, 0);
    if ((*text = strdup(pq.PQgetvalue(res, 0, 1))) == NULL)
      rc = idgen__err(err, errlen, IDGEN_ENOMEM, PFX "out of memory");
  }
  pq.PQclear(res);
  if (rc < 0)
    *version = 0;
  return rc;
}

/* Not sent again on a new connection when the old one broke: the write may
 * have landed, and a second send would then be refused as stale; the
 * caller gets IDGEN_EREGISTRY (the outcome is unknown) and loads again. */
static int pg_seq_store(idgen_registry_t *r, const char *key, const char *text, uint64_t version,
                        char *err, size_t errlen) {
  pg_t *pg = r->be;
  char ver[24], why[512] = "", state[6] = "";
  snprintf(ver, sizeof ver, "%" PRIu64, version);
  const char *v[] = {r->space, key, text, ver};
  PGresult *res;
  pg_lock(pg);
  int rc = pg_query(pg, &res, version == 0 ? SQL_SEQ_MAKE : SQL_SEQ_STORE, version == 0 ? 3 : 4, v,
                    0, state, why, sizeof why);
  pg_unlock(pg);
  if (rc < 0)
    return pg_seq_fail(r, key, "store", rc, state, why, err, errlen);
  int stored = pq.PQntuples(res) == 1;
  pq.PQclear(res);
  if (!stored)
    return idgen__err(err, errlen, IDGEN_EAGAIN,
                      PFX "counter %.140s of space %s: its record changed since version %" PRIu64
                          " was read",
                      key, r->space, version);
  return 0;
}

static int pg_seq_keys(idgen_registry_t *r,
                       int (*cb)(void *ctx, const char *space, const char *key), void *ctx,
                       char *err, size_t errlen) {
  pg_t *pg = r->be;
  char after_space[IDGEN_SPACE_NAME_MAX] = "", after_key[IDGEN_SEQ_KEY_MAX] = "", why[512] = "",
       state[6] = "";
  for (;;) {
    /* A page at a time, and cb without the lock: cb may use the registry. */
    const char *v[] = {r->space_given ? r->space : NULL, after_space, after_key};
    PGresult *res;
    pg_lock(pg);
    int rc = pg_query(pg, &res, SQL_SEQ_KEYS, 3, v, 1, state, why, sizeof why);
    pg_unlock(pg);
    if (rc < 0)
      return pg_seq_fail(r, "(every one)", "list", rc, state, why, err, errlen);
    int n = pq.PQntuples(res);
    for (int i = 0; i < n && rc == 0; i++)
      rc = cb(ctx, pq.PQgetvalue(res, i, 0), pq.PQgetvalue(res, i, 1));
    if (n > 0) {
      snprintf(after_space, sizeof after_space, "%s", pq.PQgetvalue(res, n - 1, 0));
      snprintf(after_key, sizeof after_key, "%s", pq.PQgetvalue(res, n - 1, 1));
    }
    pq.PQclear(res);
    if (rc != 0 || n < atoi(LIST_PAGE))
      return rc;
  }
}

#define PG_OPS(name)                                                                               \
  {                                                                                                \
    .version = IDGEN__REGISTRY_OPS_VERSION, .scheme = name, .mark_step_ms = 0, .expires = 1,       \
    .check = pg_check, .open = pg_open, .acquire = pg_acquire, .renew = pg_renew, .mark = pg_mark, \
    .release = pg_release, .list = pg_list, .free = pg_free, .close = pg_close, .clock = pg_clock, \
    .spaces = pg_spaces, .adopt = pg_adopt, .seq_load = pg_seq_load, .seq_store = pg_seq_store,    \
    .seq_keys = pg_seq_keys,                                                                       \
  }

const idgen__registry_ops_t idgen__registry_postgres = PG_OPS("postgres");
const idgen__registry_ops_t idgen__registry_postgresql = PG_OPS("postgresql");
