/*
 * test_seq_backend.c -- what every registry backend's sequence operations
 * must do (registry_int.h, seq_load / seq_store / seq_keys), against the
 * real thing: a counter's record is opaque text under a key of a space,
 * stored by one conditional write on its version.
 *
 *   test_seq_backend file|postgres|etcd [TEST_NAME]
 *
 * postgres reads $IDGEN_TEST_PG_URI and etcd $IDGEN_TEST_ETCD_URI (the
 * fixtures of tests/CMakeLists.txt start those servers); each test works in
 * an ID space of its own (a new directory for file:).  A backend without
 * the operations is skipped (exit 77).  The registry "down" test reaches
 * the server through a TCP relay of its own, then stops the relay: the
 * server, shared with other tests, keeps running.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "registry_int.h"
#include "testutil.h"

static const char *backend, *base_uri;
static char dir[256], uri[700], other_uri[700];
static unsigned run, nth;

static int fresh(void **state) {
  (void)state;
  nth++;
  if (strcmp(backend, "file") == 0) {
    snprintf(dir, sizeof dir, "/tmp/idgen-seqbe-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(uri, sizeof uri, "file:%s/reg?space=s%u", dir, nth);
    snprintf(other_uri, sizeof other_uri, "file:%s/reg?space=x%u", dir, nth);
  } else {
    const char *sep = strchr(base_uri, '?') ? "&" : "?";
    snprintf(uri, sizeof uri, "%s%sspace=q%u-%u", base_uri, sep, run, nth);
    snprintf(other_uri, sizeof other_uri, "%s%sspace=x%u-%u", base_uri, sep, run, nth);
  }
  return 0;
}

static int cleanup(void **state) {
  (void)state;
  if (dir[0] != '\0') {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    dir[0] = '\0';
    return system(cmd) == 0 ? 0 : -1;
  }
  return 0;
}

/* The default space of the test's registry: file:'s directory, or the
 * server's default space (shared: keys are made the run's own). */
static const char *default_uri(void) {
  static char buf[700];
  if (strcmp(backend, "file") == 0)
    snprintf(buf, sizeof buf, "file:%s/reg", dir);
  else
    snprintf(buf, sizeof buf, "%s", base_uri);
  return buf;
}

static int load(idgen_registry_t *r, const char *key, char **text, uint64_t *version) {
  char err[600] = "";
  int rc = r->ops->seq_load(r, key, text, version, err, sizeof err);
  if (rc < 0)
    fail_msg("seq_load %s: %s", key, err);
  return rc;
}

static int store(idgen_registry_t *r, const char *key, const char *text, uint64_t version) {
  char err[600] = "";
  int rc = r->ops->seq_store(r, key, text, version, err, sizeof err);
  if (rc < 0 && rc != IDGEN_EAGAIN)
    fail_msg("seq_store %s: %s", key, err);
  return rc;
}

/* ---- the conditional write ----------------------------------------------------- */

static void test_load_store(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  char *text = (char *)1;
  uint64_t v = 99, v1, v2;
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_null(text);
  assert_int_equal(v, 0);
  assert_int_equal(store(r, "orders", "one", 0), 0);
  assert_int_equal(load(r, "orders", &text, &v1), 0);
  assert_string_equal(text, "one");
  free(text);
  assert_true(v1 > 0);
  /* only one creation */
  assert_int_equal(store(r, "orders", "two", 0), IDGEN_EAGAIN);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, "one");
  assert_int_equal(v, v1);
  free(text);
  /* the version read: stored, and the version grows */
  assert_int_equal(store(r, "orders", "three", v1), 0);
  assert_int_equal(load(r, "orders", &text, &v2), 0);
  assert_string_equal(text, "three");
  free(text);
  assert_true(v2 > v1);
  /* a stale version: refused, the record unchanged */
  assert_int_equal(store(r, "orders", "four", v1), IDGEN_EAGAIN);
  assert_int_equal(store(r, "orders", "four", v2 + 1000), IDGEN_EAGAIN);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, "three");
  assert_int_equal(v, v2);
  free(text);
  /* a record of 64 holders' size and more, lines and all */
  size_t n = 40000;
  char *big = malloc(n + 1);
  assert_non_null(big);
  for (size_t i = 0; i < n; i++)
    big[i] = i % 100 == 99 ? '\n' : (char)('a' + i % 26);
  big[n] = '\0';
  assert_int_equal(store(r, "orders", big, v2), 0);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, big);
  assert_true(v > v2);
  free(text);
  free(big);
  /* another key is another record */
  assert_int_equal(load(r, "orders@20261203", &text, &v), 0);
  assert_null(text);
  assert_int_equal(v, 0);
  idgen_registry_close(r);
}

/* ---- no lost update ---------------------------------------------------------------- */

#define CAS_THREADS 4
#define CAS_EACH 500

typedef struct cas_arg {
  idgen_registry_t *r;
  int retries;
  char err[600];
} cas_arg_t;

/* CAS_EACH increments of the number in the record, each by load, add one,
 * store on the version read; again on IDGEN_EAGAIN. */
static void *cas_thread(void *p) {
  cas_arg_t *a = p;
  for (int i = 0; i < CAS_EACH; i++) {
    for (;;) {
      char *text, next[64];
      uint64_t v;
      if (a->r->ops->seq_load(a->r, "counter", &text, &v, a->err, sizeof a->err) < 0)
        return NULL;
      long long n = text ? atoll(text + strlen("count=")) : -1;
      free(text);
      snprintf(next, sizeof next, "count=%lld", n + 1);
      int rc = a->r->ops->seq_store(a->r, "counter", next, v, a->err, sizeof a->err);
      if (rc == 0)
        break;
      if (rc != IDGEN_EAGAIN)
        return NULL;
      a->retries++;
    }
  }
  a->err[0] = '\0';
  return NULL;
}

typedef struct lease_arg {
  idgen_registry_t *r;
  atomic_int stop;
  int rounds;
  char err[600];
} lease_arg_t;

/* Lease calls on the same registry meanwhile: acquire, renew, mark,
 * release, list, over and over. */
static int count_row(void *ctx, const idgen_lease_row_t *row) {
  (void)row;
  (*(int *)ctx)++;
  return 0;
}

static void *lease_thread(void *p) {
  lease_arg_t *a = p;
  idgen_layout_t l = tu_layout("time:41,worker:10,sequence:12,epoch=1288834974657");
  while (!atomic_load(&a->stop)) {
    idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
    idgen_lease_t *lease;
    int rows = 0;
    if (idgen_registry_acquire(a->r, &req, &lease, a->err, sizeof a->err) < 0)
      return NULL;
    if (idgen_lease_renew(lease, a->err, sizeof a->err) < 0 ||
        idgen_registry_list(a->r, count_row, &rows, a->err, sizeof a->err) < 0) {
      idgen_lease_release(lease);
      return NULL;
    }
    idgen_lease_release(lease);
    a->rounds++;
  }
  a->err[0] = '\0';
  return NULL;
}

static void test_concurrent_cas(void **state) {
  (void)state;
  /* two registries (two connections), two threads on each, and lease
   * calls beside them on the first */
  idgen_registry_t *r1 = tu_registry(uri), *r2 = tu_registry(uri);
  assert_int_equal(store(r1, "counter", "count=0", 0), 0);
  cas_arg_t a[CAS_THREADS];
  pthread_t t[CAS_THREADS], lt;
  lease_arg_t la = {.r = r1};
  snprintf(la.err, sizeof la.err, "did not end");
  assert_int_equal(pthread_create(&lt, NULL, lease_thread, &la), 0);
  for (int i = 0; i < CAS_THREADS; i++) {
    memset(&a[i], 0, sizeof a[i]);
    a[i].r = i % 2 ? r2 : r1;
    snprintf(a[i].err, sizeof a[i].err, "did not end");
    assert_int_equal(pthread_create(&t[i], NULL, cas_thread, &a[i]), 0);
  }
  int retries = 0;
  for (int i = 0; i < CAS_THREADS; i++) {
    pthread_join(t[i], NULL);
    if (a[i].err[0])
      fail_msg("thread %d: %s", i, a[i].err);
    retries += a[i].retries;
  }
  atomic_store(&la.stop, 1);
  pthread_join(lt, NULL);
  if (la.err[0])
    fail_msg("lease thread: %s", la.err);
  char *text;
  uint64_t v;
  assert_int_equal(load(r2, "counter", &text, &v), 0);
  assert_string_equal(text, "count=2000");
  free(text);
  print_message("%d increments, %d stores refused and retried, %d lease rounds beside\n",
                CAS_THREADS * CAS_EACH, retries, la.rounds);
  idgen_registry_close(r1);
  idgen_registry_close(r2);
}

/* ---- keys and spaces --------------------------------------------------------------- */

typedef struct keys {
  int n;
  char space[16][IDGEN_SPACE_NAME_MAX], key[16][IDGEN_SEQ_KEY_MAX];
  const char *only; /* keep the keys of these spaces only (a shared server) */
  const char *also;
} keys_t;

static int collect(void *ctx, const char *space, const char *key) {
  keys_t *k = ctx;
  if (k->only && strcmp(space, k->only) != 0 && (k->also == NULL || strcmp(space, k->also) != 0))
    return 0;
  if (k->n < 16) {
    snprintf(k->space[k->n], sizeof k->space[0], "%s", space);
    snprintf(k->key[k->n], sizeof k->key[0], "%s", key);
  }
  k->n++;
  return 0;
}

static keys_t keys_of(idgen_registry_t *r, const char *only, const char *also) {
  keys_t k;
  memset(&k, 0, sizeof k);
  k.only = only;
  k.also = also;
  char err[600];
  if (r->ops->seq_keys(r, collect, &k, err, sizeof err) < 0)
    fail_msg("seq_keys: %s", err);
  return k;
}

static int stop_at_first(void *ctx, const char *space, const char *key) {
  (void)space;
  (void)key;
  (*(int *)ctx)++;
  return 7;
}

typedef struct lease_rows {
  const char *holder[2];
  int n;
} lease_rows_t;

static int lease_rows(void *ctx, const idgen_lease_row_t *row) {
  lease_rows_t *lr = ctx;
  lr->n += (strcmp(row->holder, lr->holder[0]) == 0 || strcmp(row->holder, lr->holder[1]) == 0) &&
           row->state == IDGEN_LEASE_HELD;
  return 0;
}

static void test_keys_and_spaces(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri), *x = tu_registry(other_uri);
  static const char *const stored[] = {"orders@20261204", "b", "orders", "a-z", "orders@20261203"};
  for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++)
    assert_int_equal(store(r, stored[i], stored[i], 0), 0);
  /* the other space: the same key, a record of its own */
  assert_int_equal(store(x, "orders", "elsewhere", 0), 0);
  char *text;
  uint64_t v;
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, "orders");
  free(text);
  assert_int_equal(load(x, "orders", &text, &v), 0);
  assert_string_equal(text, "elsewhere");
  free(text);
  assert_int_equal(load(x, "b", &text, &v), 0);
  assert_null(text);
  /* each space's keys, in order */
  keys_t k = keys_of(r, NULL, NULL);
  static const char *const sorted[] = {"a-z", "b", "orders", "orders@20261203", "orders@20261204"};
  assert_int_equal(k.n, 5);
  for (int i = 0; i < 5; i++) {
    assert_string_equal(k.space[i], r->space);
    assert_string_equal(k.key[i], sorted[i]);
  }
  k = keys_of(x, NULL, NULL);
  assert_int_equal(k.n, 1);
  assert_string_equal(k.space[0], x->space);
  assert_string_equal(k.key[0], "orders");
  /* cb's nonzero stops the walk and is the answer */
  int calls = 0;
  char err[600];
  assert_int_equal(r->ops->seq_keys(r, stop_at_first, &calls, err, sizeof err), 7);
  assert_int_equal(calls, 1);
  /* the default space: apart from both; a registry that names no space
   * lists every space's keys */
  idgen_registry_t *d = tu_registry(default_uri());
  char mine[64];
  snprintf(mine, sizeof mine, "k%u-%u", run, nth);
  assert_int_equal(store(d, mine, "default's", 0), 0);
  assert_int_equal(load(r, mine, &text, &v), 0);
  assert_null(text);
  keys_t all = keys_of(d, r->space, x->space);
  assert_int_equal(all.n, 6);
  int in_r = 0, in_x = 0;
  for (int i = 0; i < all.n; i++) {
    if (strcmp(all.space[i], r->space) == 0)
      assert_string_equal(all.key[i], sorted[in_r++]);
    else
      in_x++;
  }
  assert_int_equal(in_r, 5);
  assert_int_equal(in_x, 1);
  /* the lease listing beside the counters: leases in two spaces are
   * listed by the registry of every space (etcd:// lists every key but the
   * counters') */
  idgen_layout_t l = tu_layout("time:41,worker:10,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  idgen_lease_t *in_d = NULL, *in_s = NULL;
  if (idgen_registry_acquire(x, &req, &in_d, err, sizeof err) < 0 ||
      idgen_registry_acquire(r, &req, &in_s, err, sizeof err) < 0)
    fail_msg("acquire: %s", err);
  idgen_lease_info_t id, ir;
  idgen_lease_info(in_d, &id);
  idgen_lease_info(in_s, &ir);
  lease_rows_t lr = {.holder = {id.holder, ir.holder}};
  assert_int_equal(idgen_registry_list(d, lease_rows, &lr, err, sizeof err), 0);
  assert_int_equal(lr.n, 2); /* one lease in each space */
  idgen_lease_release(in_d);
  idgen_lease_release(in_s);
  keys_t def = keys_of(d, "default", NULL);
  int found = 0;
  for (int i = 0; i < def.n && i < 16; i++)
    found += strcmp(def.key[i], mine) == 0;
  if (def.n <= 16)
    assert_int_equal(found, 1);
  idgen_registry_close(d);
  idgen_registry_close(x);
  idgen_registry_close(r);
}

/* ---- postgres: another role, another search_path ----------------------------------- */

static void pg_quiet(void *ctx, const char *msg) {
  (void)ctx;
  (void)msg;
}

static void pg_exec(const char *sql) {
  PGconn *c = PQconnectdb(base_uri);
  if (PQstatus(c) != CONNECTION_OK)
    fail_msg("psql: %s", PQerrorMessage(c));
  PQsetNoticeProcessor(c, pg_quiet, NULL); /* DROP SCHEMA ... CASCADE lists what it drops */
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
    fail_msg("%s: %s", sql, PQerrorMessage(c));
  PQclear(res);
  PQfinish(c);
}

static void test_pg_other_role(void **state) {
  (void)state;
  if (strcmp(backend, "postgres") != 0)
    skip();
  idgen_registry_t *r = tu_registry(uri); /* the tables exist */
  char role[64], sql[1000], as_role[800];
  snprintf(role, sizeof role, "seq_role_%u", run);
  snprintf(sql, sizeof sql,
           "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s') THEN"
           " CREATE ROLE %s LOGIN; END IF; END $$;"
           " CREATE SCHEMA IF NOT EXISTS seq_other; ALTER ROLE %s SET search_path = seq_other;"
           " GRANT USAGE ON SCHEMA idgen TO %s;"
           " GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA idgen TO %s;"
           " CREATE TABLE IF NOT EXISTS seq_other.idgen_seqs (space text, key text,"
           " version bigint, record text, PRIMARY KEY (space, key))",
           role, role, role, role, role);
  pg_exec(sql);
  /* the base URI's user is the first thing after "//" */
  const char *at = strchr(uri, '@');
  assert_non_null(at);
  snprintf(as_role, sizeof as_role, "postgres://%s%s", role, at);
  idgen_registry_t *o = tu_registry(as_role);
  assert_int_equal(store(r, "orders", "from postgres", 0), 0);
  char *text;
  uint64_t v, vo;
  assert_int_equal(load(o, "orders", &text, &vo), 0);
  assert_non_null(text);
  assert_string_equal(text, "from postgres");
  free(text);
  assert_int_equal(store(o, "orders", "from the other role", vo), 0);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, "from the other role");
  assert_true(v > vo);
  free(text);
  keys_t k = keys_of(o, NULL, NULL);
  assert_int_equal(k.n, 1);
  idgen_registry_close(o);
  idgen_registry_close(r);
}

/* A registry made before sequences (no idgen_seqs): the next open adds
 * the table, under the lock tables are made under, and sequences work. */
static void test_pg_upgrade(void **state) {
  (void)state;
  if (strcmp(backend, "postgres") != 0)
    skip();
  char schema[64], named[800], sql[300], *text;
  uint64_t v;
  snprintf(schema, sizeof schema, "sequp%u_%u", run, nth);
  snprintf(named, sizeof named, "%s&schema=%s", uri, schema);
  idgen_registry_t *r0 = tu_registry(named);
  idgen_layout_t l = tu_layout("time:41,worker:10,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  idgen_lease_t *lease;
  char err[600];
  if (idgen_registry_acquire(r0, &req, &lease, err, sizeof err) < 0)
    fail_msg("acquire: %s", err);
  snprintf(sql, sizeof sql, "DROP TABLE %s.idgen_seqs", schema);
  pg_exec(sql); /* as the earlier version made it */
  idgen_registry_t *r = tu_registry(named);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_null(text);
  assert_int_equal(store(r, "orders", "one", 0), 0);
  assert_int_equal(load(r, "orders", &text, &v), 0);
  assert_string_equal(text, "one");
  free(text);
  /* the lease made before the upgrade is still there, renewed */
  assert_int_equal(idgen_lease_renew(lease, err, sizeof err), 0);
  idgen_lease_release(lease);
  idgen_registry_close(r);
  idgen_registry_close(r0);
  snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE", schema);
  pg_exec(sql);
}

/* The same, opened first by a role that may use the tables but not add
 * one: it leases as before; sequences fail saying what to do, until the
 * owner has started once and the role has its grant. */
static void test_pg_upgrade_by_user(void **state) {
  (void)state;
  if (strcmp(backend, "postgres") != 0)
    skip();
  char schema[64], role[64], named[800], as_role[900], sql[800], err[1000], *text;
  uint64_t v;
  snprintf(schema, sizeof schema, "sequq%u_%u", run, nth);
  snprintf(role, sizeof role, "seq_user_%u", run);
  snprintf(named, sizeof named, "%s&schema=%s", uri, schema);
  idgen_registry_t *owner = tu_registry(named);
  idgen_registry_close(owner);
  snprintf(sql, sizeof sql,
           "DROP TABLE %s.idgen_seqs; DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles"
           " WHERE rolname = '%s') THEN CREATE ROLE %s LOGIN; END IF; END $$;"
           " GRANT USAGE ON SCHEMA %s TO %s;"
           " GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA %s TO %s",
           schema, role, role, schema, role, schema, role);
  pg_exec(sql);
  const char *at = strchr(named, '@');
  snprintf(as_role, sizeof as_role, "postgres://%s%s", role, at);
  idgen_registry_t *u = tu_registry(as_role);
  idgen_layout_t l = tu_layout("time:41,worker:10,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  idgen_lease_t *lease;
  if (idgen_registry_acquire(u, &req, &lease, err, sizeof err) < 0)
    fail_msg("acquire as %s: %s", role, err);
  assert_int_equal(u->ops->seq_load(u, "orders", &text, &v, err, sizeof err), IDGEN_EREGISTRY);
  if (strstr(err, "start idgen once as the owner of its tables") == NULL)
    fail_msg("%s", err);
  /* the owner starts: the table is made; the role needs its grant */
  owner = tu_registry(named);
  assert_int_equal(store(owner, "orders", "one", 0), 0);
  assert_int_equal(u->ops->seq_load(u, "orders", &text, &v, err, sizeof err), IDGEN_EREGISTRY);
  if (strstr(err, "grant this role SELECT, INSERT, UPDATE on table") == NULL)
    fail_msg("%s", err);
  snprintf(sql, sizeof sql, "GRANT SELECT, INSERT, UPDATE ON %s.idgen_seqs TO %s", schema, role);
  pg_exec(sql);
  assert_int_equal(load(u, "orders", &text, &v), 0);
  assert_string_equal(text, "one");
  free(text);
  assert_int_equal(store(u, "orders", "two", v), 0);
  assert_int_equal(idgen_lease_renew(lease, err, sizeof err), 0);
  idgen_lease_release(lease);
  idgen_registry_close(u);
  idgen_registry_close(owner);
  snprintf(sql, sizeof sql, "DROP SCHEMA %s CASCADE; DROP OWNED BY %s; DROP ROLE %s", schema, role,
           role);
  pg_exec(sql);
}

/* ---- the registry down ---------------------------------------------------------------- */

/* A TCP relay on a loopback port of its own to the server's port. */
#define RELAY_MAX 16
typedef struct relay {
  int lfd, port, up_port, wake[2];
  int fd[2 * RELAY_MAX]; /* pairs: client, server; -1 when unused */
  pthread_t th;
} relay_t;

static void relay_close_pair(relay_t *y, int i) {
  close(y->fd[i & ~1]);
  close(y->fd[i | 1]);
  y->fd[i & ~1] = y->fd[i | 1] = -1;
}

static void relay_accept(relay_t *y) {
  int c = accept(y->lfd, NULL, NULL);
  if (c < 0)
    return;
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)y->up_port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < RELAY_MAX; i++)
    if (y->fd[2 * i] < 0) {
      if (connect(s, (struct sockaddr *)&a, sizeof a) < 0)
        break;
      y->fd[2 * i] = c, y->fd[2 * i + 1] = s;
      return;
    }
  close(c);
  close(s);
}

static void *relay_run(void *p) {
  relay_t *y = p;
  for (;;) {
    struct pollfd f[2 + 2 * RELAY_MAX];
    f[0] = (struct pollfd){y->wake[0], POLLIN, 0};
    f[1] = (struct pollfd){y->lfd, POLLIN, 0};
    for (int i = 0; i < 2 * RELAY_MAX; i++)
      f[2 + i] = (struct pollfd){y->fd[i], POLLIN, 0};
    if (poll(f, 2 + 2 * RELAY_MAX, -1) < 0)
      continue;
    if (f[0].revents)
      break;
    if (f[1].revents)
      relay_accept(y);
    for (int i = 0; i < 2 * RELAY_MAX; i++) {
      if (y->fd[i] < 0 || !f[2 + i].revents)
        continue;
      char buf[65536];
      ssize_t n = read(y->fd[i], buf, sizeof buf), w = 0;
      while (n > 0 && w < n) {
        ssize_t k = write(y->fd[i ^ 1], buf + w, (size_t)(n - w));
        if (k <= 0)
          break;
        w += k;
      }
      if (n <= 0 || w < n)
        relay_close_pair(y, i);
    }
  }
  for (int i = 0; i < 2 * RELAY_MAX; i += 2)
    if (y->fd[i] >= 0)
      relay_close_pair(y, i);
  close(y->lfd);
  return NULL;
}

static void relay_start(relay_t *y, int up_port) {
  memset(y, 0, sizeof *y);
  for (int i = 0; i < 2 * RELAY_MAX; i++)
    y->fd[i] = -1;
  y->up_port = up_port;
  y->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  assert_int_equal(bind(y->lfd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(y->lfd, 16), 0);
  assert_int_equal(getsockname(y->lfd, (struct sockaddr *)&a, &n), 0);
  y->port = ntohs(a.sin_port);
  assert_int_equal(pipe(y->wake), 0);
  assert_int_equal(pthread_create(&y->th, NULL, relay_run, y), 0);
}

/* Stops it: its port refuses, its connections are closed. */
static void relay_stop(relay_t *y) {
  assert_int_equal(write(y->wake[1], "x", 1), 1);
  pthread_join(y->th, NULL);
  close(y->wake[0]);
  close(y->wake[1]);
}

static void test_down(void **state) {
  (void)state;
  if (strcmp(backend, "file") == 0)
    skip();
  const char *hp = strstr(base_uri, "127.0.0.1:");
  assert_non_null(hp);
  relay_t y;
  relay_start(&y, atoi(hp + 10));
  char via[800], err[1000], port[16];
  snprintf(port, sizeof port, ":%d", y.port);
  /* postgres: a password in the URI (the test server trusts loopback and
   * never asks for it); etcd: none (a password makes it authenticate, and
   * the test cluster has no users) */
  if (strcmp(backend, "postgres") == 0)
    snprintf(via, sizeof via, "postgres://postgres:Sekr3tPw@127.0.0.1%s%s", port,
             strchr(hp + 10, '/'));
  else
    snprintf(via, sizeof via, "etcd://127.0.0.1%s", port);
  snprintf(via + strlen(via), sizeof via - strlen(via), "%sspace=d%u-%u",
           strchr(via, '?') ? "&" : "?", run, nth);
  idgen_registry_t *r = tu_registry(via);
  assert_int_equal(store(r, "orders", "one", 0), 0);
  relay_stop(&y);
  char *text = (char *)1;
  uint64_t v = 1;
  int rc = r->ops->seq_load(r, "orders", &text, &v, err, sizeof err);
  assert_int_equal(rc, IDGEN_EREGISTRY);
  assert_null(text);
  print_message("%s\n", err);
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1%s", port);
  if (strstr(err, want) == NULL || strstr(err, "Sekr3tPw") != NULL || strchr(err, '\n') ||
      strstr(err, "orders") == NULL)
    fail_msg("load: %s", err);
  if (strcmp(backend, "postgres") == 0 && strstr(err, "postgres://postgres:***@") == NULL)
    fail_msg("load: %s", err);
  assert_int_equal(r->ops->seq_store(r, "orders", "two", 0, err, sizeof err), IDGEN_EREGISTRY);
  if (strstr(err, want) == NULL || strstr(err, "Sekr3tPw") != NULL)
    fail_msg("store: %s", err);
  keys_t k = {0};
  assert_int_equal(r->ops->seq_keys(r, collect, &k, err, sizeof err), IDGEN_EREGISTRY);
  if (strstr(err, want) == NULL || strstr(err, "Sekr3tPw") != NULL)
    fail_msg("keys: %s", err);
  idgen_registry_close(r);
}

/* A loopback port the kernel hands out whose next one is free too
 * (etcd_server.sh takes a pair). */
static int free_port_pair(void) {
  for (int tries = 0; tries < 50; tries++) {
    int a = socket(AF_INET, SOCK_STREAM, 0), b = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in s = {.sin_family = AF_INET};
    s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof s;
    int port = 0;
    if (bind(a, (struct sockaddr *)&s, sizeof s) == 0 &&
        getsockname(a, (struct sockaddr *)&s, &n) == 0 && ntohs(s.sin_port) < 65535) {
      s.sin_port = htons((uint16_t)(ntohs(s.sin_port) + 1));
      if (bind(b, (struct sockaddr *)&s, sizeof s) == 0)
        port = ntohs(s.sin_port) - 1;
    }
    close(a);
    close(b);
    if (port > 0)
      return port;
  }
  return -1;
}

/* etcd with users: an etcd of the test's own with authentication on (the
 * shared one has no users, and a password makes the registry
 * authenticate), stopped under the registry: the error names the registry
 * with its password masked. */
static void test_etcd_down_password(void **state) {
  (void)state;
  if (strcmp(backend, "etcd") != 0)
    skip();
  char work[64] = "/tmp/idgen-seqbe-etcd-XXXXXX", cmd[1200], via[300], err[1000] = "";
  assert_non_null(mkdtemp(work));
  int port = free_port_pair();
  assert_true(port > 0);
  const char *pw = "Et3dSekr3t";
  snprintf(cmd, sizeof cmd,
           "set -e; S='%s/etcd_server.sh'; \"$S\" start %s/etcd %d >/dev/null;"
           " E='etcdctl --endpoints=127.0.0.1:%d'; export ETCDCTL_API=3;"
           " $E user add root:R00tPw >/dev/null; $E user add app:%s >/dev/null;"
           " $E user grant-role app root >/dev/null; $E auth enable >/dev/null",
           IDGEN_TESTS_DIR, work, port, port, pw);
  int rc = system(cmd);
  if (rc != 0)
    snprintf(err, sizeof err, "an etcd with users could not be started in %s", work);
  snprintf(via, sizeof via, "etcd://app:%s@127.0.0.1:%d?space=d%u-%u", pw, port, run, nth);
  idgen_registry_t *r = NULL;
  /* nothing here may fail the test before the etcd is stopped */
  if (rc == 0 && (rc = idgen_registry_open(&r, via, err, sizeof err)) == 0)
    rc = r->ops->seq_store(r, "orders", "one", 0, err, sizeof err);
  if (rc == 0) {
    snprintf(cmd, sizeof cmd, "'%s/etcd_server.sh' stop %s/etcd >/dev/null 2>&1", IDGEN_TESTS_DIR,
             work);
    rc = system(cmd);
    char *text = (char *)1;
    uint64_t v;
    rc = rc != 0 ? -1000 : r->ops->seq_load(r, "orders", &text, &v, err, sizeof err);
    print_message("%s\n", err);
  }
  idgen_registry_close(r);
  snprintf(cmd, sizeof cmd, "'%s/etcd_server.sh' stop %s/etcd >/dev/null 2>&1; rm -rf %s",
           IDGEN_TESTS_DIR, work, work);
  if (system(cmd) != 0)
    print_message("cleanup: %s failed\n", cmd);
  if (rc != IDGEN_EREGISTRY)
    fail_msg("rc %d: %s", rc, err);
  char want[64];
  snprintf(want, sizeof want, "etcd://app:***@127.0.0.1:%d", port);
  if (strstr(err, want) == NULL || strstr(err, pw) != NULL || strstr(err, "orders") == NULL)
    fail_msg("load: %s", err);
}

int main(int argc, char **argv) {
  backend = argc > 1 ? argv[1] : "file";
  if (strcmp(backend, "postgres") == 0 || strcmp(backend, "etcd") == 0) {
    const char *var = backend[0] == 'p' ? "IDGEN_TEST_PG_URI" : "IDGEN_TEST_ETCD_URI";
    base_uri = getenv(var);
    if (base_uri == NULL || base_uri[0] == '\0') {
      fprintf(stderr, "test_seq_backend %s: set %s (the ctest fixtures do)\n", backend, var);
      return 1;
    }
  } else if (strcmp(backend, "file") != 0) {
    fprintf(stderr, "usage: test_seq_backend file|postgres|etcd [TEST_NAME]\n");
    return 2;
  }
  if (getrandom(&run, sizeof run, 0) != sizeof run)
    run = (unsigned)getpid();
  run %= 1000000;
  /* a backend without sequences (yet) */
  fresh(NULL);
  idgen_registry_t *r = tu_registry(uri);
  int has = r->ops->seq_load && r->ops->seq_store && r->ops->seq_keys;
  idgen_registry_close(r);
  cleanup(NULL);
  if (!has) {
    fprintf(stderr, "test_seq_backend %s: the backend keeps no sequences\n", backend);
    return 77;
  }
  if (argc > 2)
    cmocka_set_test_filter(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_load_store, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_concurrent_cas, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_keys_and_spaces, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_pg_other_role, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_pg_upgrade, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_pg_upgrade_by_user, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_down, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_etcd_down_password, fresh, cleanup),
  };
  return cmocka_run_group_tests_name(backend, tests, NULL, NULL);
}
