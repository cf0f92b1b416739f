/*
 * test_registry_pg.c -- what only the postgres:// registry has (docs/DESIGN.md
 * §11; fenced, durable: expiry and quarantine by the database's clock,
 * listing and freeing by hand, the floor of deleted rows, an earlier
 * version's table, one schema whatever the session's search_path, an
 * earlier version's registry in another schema, refused, fenced or parked;
 * what every backend must do is in
 * test_registry_contract.c), against a real server: $IDGEN_TEST_PG_URI, such as the one
 * tests/pg_server.sh starts.  Without it the test fails, unless
 * IDGEN_TEST_PG_SKIP=1 (then it reports "skipped", exit 77).
 *
 * Each test works in pools of its own: the layouts have a node field `run`
 * whose value is new for every test (random base + counter), so tests, and
 * runs sharing one server, never see each other's worker IDs; and each test
 * in an ID space of its own (?space=t<run base>-<n>), since tests of
 * several layouts take turns (the registry's ID space refuses a layout
 * beside another whose IDs could be equal).  Expiry and
 * quarantine are by the database's clock, so those tests sleep (for real,
 * under 3 s each); marks are compared with the wall clock, which the start
 * wait test injects.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "registry_int.h" /* the lease's bind table (final_mark) */
#include "testutil.h"

static const char *base_uri; /* $IDGEN_TEST_PG_URI */
static char uri[560];        /* base_uri in an ID space of the running test's own */
static char space[64];       /* its name */
static uint64_t run_base, run_next;

/* ---- helpers ---------------------------------------------------------------- */

static int64_t now_ms(void) { return idgen_clock_now_ms(IDGEN_CLOCK_PRECISE); }

/* Node values that put the test's tuples apart from every other test's:
 * run = a new value.  `name` is the pool (the layout's geometry), which
 * tests with the same geometry share; rows are told apart by run. */
typedef struct pool {
  idgen_layout_t layout;
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];
  uint64_t run;
  unsigned run_shift;
  char name[IDGEN_POOL_NAME_MAX];
  char stored[IDGEN_POOL_NAME_MAX + 80]; /* its rows' `pool`: in the test's space */
} pool_t;

static pool_t new_pool(const char *spec) {
  pool_t p;
  memset(&p, 0, sizeof p);
  p.layout = tu_layout(spec);
  p.run = (run_base + run_next++) & 0xffff;
  int i = idgen_layout_field_index(&p.layout, "run");
  p.node[i] = p.run;
  p.run_shift = p.layout.fields[i].shift;
  idgen__pool_name(&p.layout, p.name);
  snprintf(p.stored, sizeof p.stored, "spaces/%s/%s", space, p.name);
  return p;
}

/* The text of tuple (run, worker = w) of pool p, as list and free use it. */
static const char *tuple(const pool_t *p, uint64_t w) {
  static char buf[64];
  snprintf(buf, sizeof buf, "run=%llu,worker=%llu", (unsigned long long)p->run,
           (unsigned long long)w);
  return buf;
}

static idgen_lease_request_t request(const pool_t *p, int64_t ttl, int64_t quarantine) {
  idgen_lease_request_t req = {&p->layout, p->node, NULL, -1, NULL, ttl, quarantine, 0};
  return req;
}

/* Acquires from pool p; asserts success. */
static idgen_lease_t *take(idgen_registry_t *r, const pool_t *p, int64_t ttl, int64_t quarantine) {
  idgen_lease_request_t req = request(p, ttl, quarantine);
  idgen_lease_t *l = NULL;
  char err[300];
  if (idgen_registry_acquire(r, &req, &l, err, sizeof err) != 0)
    fail_msg("acquire: %s", err);
  return l;
}

static idgen_lease_info_t info_of(const idgen_lease_t *l) {
  idgen_lease_info_t i;
  idgen_lease_info(l, &i);
  return i;
}

/* The rows of one test's tuples, as idgen_registry_list() reports them. */
typedef struct rows {
  const pool_t *p;
  int n;
  idgen_lease_row_t row[16];
} rows_t;

static int collect(void *ctx, const idgen_lease_row_t *row) {
  rows_t *rs = ctx;
  if (strcmp(row->pool, rs->p->name) == 0 &&
      (row->key >> rs->p->run_shift & 0xffff) == rs->p->run && rs->n < 16)
    rs->row[rs->n++] = *row;
  return 0;
}

static rows_t list_pool(idgen_registry_t *r, const pool_t *p) {
  rows_t rs;
  memset(&rs, 0, sizeof rs);
  rs.p = p;
  char err[300];
  if (idgen_registry_list(r, collect, &rs, err, sizeof err) != 0)
    fail_msg("list: %s", err);
  return rs;
}

/* ---- tests ------------------------------------------------------------------- */

static void test_open(void **state) {
  (void)state;
  idgen_registry_t *r;
  char err[300], other[600];
  /* nobody listens on port 1: a readable error, quickly */
  int64_t t0 = now_ms();
  assert_int_equal(
      idgen_registry_open(&r, "postgres://postgres@127.0.0.1:1/postgres", err, sizeof err),
      IDGEN_EREGISTRY);
  assert_true(now_ms() - t0 < 3000);
  assert_non_null(strstr(err, "registry: postgres: cannot connect: "));
  assert_non_null(strstr(err, "127.0.0.1"));
  assert_null(strchr(err, '\n'));
  /* a URI libpq cannot parse */
  assert_int_equal(idgen_registry_open(&r, "postgres://h/db?host=%zz", err, sizeof err),
                   IDGEN_EINVAL);
  assert_non_null(strstr(err, "bad URI"));
  /* a parameter neither idgen's nor libpq's is refused, naming the known
   * ones: ?Space= never means the default space */
  static const char *const unknown[][2] = {
      {"postgres://h/db?Space=billing", "\"Space\" (did you mean space? names are case-sensitive)"},
      {"postgres://h/db?bogus=1", "\"bogus\"; known: idgen's space and schema, and libpq's"},
      {"postgres://h/db?sslmode=disable&SCHEMA=x", "\"SCHEMA\" (did you mean schema?"},
      {"postgres://h/db?Port=5432", "did you mean port?"},
      {"postgres://h/db?schema=Billing", "schema \"Billing\" is not a schema name idgen takes"},
      {"postgres://h/db?schema=pg_catalog", "not starting with a digit or pg_"},
      {"postgres://h/db?schema=", "schema \"\" is not"},
      {"postgres://h/db?schema=a;drop", "schema \"a;drop\" is not"},
      {"postgres://h/db?schema=a&schema=a", "schema= given twice"},
  };
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    assert_int_equal(idgen_registry_check(unknown[i][0], err, sizeof err), IDGEN_EINVAL);
    if (strstr(err, unknown[i][1]) == NULL)
      fail_msg("%s: %s, want %s", unknown[i][0], err, unknown[i][1]);
    assert_int_equal(idgen_registry_open(&r, unknown[i][0], err, sizeof err), IDGEN_EINVAL);
  }
  /* idgen's own parameters are not libpq's: both pass, with libpq's */
  assert_int_equal(idgen_registry_check("postgresql://h/db?sslmode=disable&schema=a_1&space=s"
                                        "&options=-csearch_path%3Dx",
                                        err, sizeof err),
                   0);
  /* postgresql:// is the same backend */
  assert_true(strncmp(uri, "postgres://", 11) == 0);
  snprintf(other, sizeof other, "postgresql://%s", uri + 11);
  assert_int_equal(idgen_registry_open(&r, other, err, sizeof err), 0);
  idgen_registry_close(r);
  r = tu_registry(uri); /* the table exists now: opening again is fine */
  idgen_registry_close(r);
}

static void test_lowest_free_release_and_marks(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  int64_t t0 = now_ms();
  idgen_lease_t *a = take(r, &p, 0, 0), *b = take(r, &p, 0, 0);
  idgen_lease_info_t ia = info_of(a);
  assert_int_equal(ia.worker, 0);
  assert_int_equal(tu_worker(b), 1);
  assert_int_equal(ia.generation, 1);
  assert_int_equal(ia.mark_ms, 0);
  assert_int_equal(ia.ttl_ms, 10000);
  assert_int_equal(ia.mark_step_ms, 10000); /* the TTL for a network registry */
  assert_string_equal(ia.pool, p.name);
  /* the database's clock, on this host: about now + TTL */
  assert_in_range(ia.expires_ms, t0 + 10000 - 1000, now_ms() + 10000 + 1000);
  /* renewals move the expiry; the mark never goes back */
  tu_sleep_ms(20);
  assert_int_equal(idgen_lease_renew(a, NULL, 0), 0);
  assert_true(info_of(a).expires_ms > ia.expires_ms);
  int64_t m = now_ms() - 60000; /* behind the wall clock: the ID can be taken again */
  assert_int_equal(idgen_lease_record_mark(a, m + 500, NULL, 0), 0);
  assert_int_equal(idgen_lease_record_mark(a, m + 100, NULL, 0), 0);
  assert_int_equal(info_of(a).mark_ms, m + 500);
  /* released: free at once; the mark and a larger generation go to the next holder */
  idgen_lease_release(a);
  idgen_lease_t *c = take(r, &p, 0, 0);
  idgen_lease_info_t ic = info_of(c);
  assert_int_equal(ic.worker, 0);
  assert_int_equal(ic.generation, 2);
  assert_int_equal(ic.mark_ms, m + 500);
  /* the final mark may go down (the table's final_mark, as the keeper writes it) */
  assert_int_equal(idgen__lease_bind(c)->final_mark(c, m + 200), 0);
  idgen_lease_release(c);
  c = take(r, &p, 0, 0);
  assert_int_equal(info_of(c).mark_ms, m + 200);
  assert_int_equal(info_of(c).generation, 3);
  /* a mark ahead of the wall clock: that ID is passed over while another is behind */
  assert_int_equal(idgen_lease_record_mark(c, now_ms() + 60000, NULL, 0), 0);
  idgen_lease_release(c);
  c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(c), 2);
  idgen_lease_release(c);
  c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(c), 2);
  /* another namespace is another pool */
  pool_t q = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *d = take(r, &q, 0, 0);
  assert_int_equal(tu_worker(d), 0);
  idgen_lease_release(b);
  idgen_lease_release(c);
  idgen_lease_release(d);
  idgen_registry_close(r);
}

/* Threads share one registry (one connection behind a mutex): each
 * acquires, renews and marks at the same time as the others. */
typedef struct thread_arg {
  idgen_registry_t *r;
  const pool_t *p;
  idgen_lease_t *l;
  int rc;
} thread_arg_t;

static void *thread_take(void *arg) {
  thread_arg_t *t = arg;
  idgen_lease_request_t req = request(t->p, 0, 0);
  t->rc = idgen_registry_acquire(t->r, &req, &t->l, NULL, 0);
  for (int i = 0; i < 5 && t->rc == 0; i++)
    t->rc = idgen_lease_renew(t->l, NULL, 0);
  if (t->rc == 0)
    t->rc = idgen_lease_record_mark(t->l, 1700000000000, NULL, 0);
  return NULL;
}

static void test_threads_share_a_registry(void **state) {
  (void)state;
  enum { N = 8 };
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  pthread_t th[N];
  thread_arg_t a[N];
  for (int i = 0; i < N; i++) {
    a[i] = (thread_arg_t){r, &p, NULL, 0};
    assert_int_equal(pthread_create(&th[i], NULL, thread_take, &a[i]), 0);
  }
  unsigned seen = 0;
  for (int i = 0; i < N; i++) {
    assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(a[i].rc, 0);
    uint64_t w = tu_worker(a[i].l);
    assert_true(w < N);
    assert_false(seen & (1u << w));
    seen |= 1u << w;
  }
  assert_int_equal(seen, 0xff); /* the lowest 8, each once */
  for (int i = 0; i < N; i++)
    idgen_lease_release(a[i].l);
  idgen_registry_close(r);
}

/* An expired lease stays out of the pool for the quarantine, by the
 * database's clock; its holder may renew it until someone else is granted
 * it, and is fenced out after. */
static void test_expiry_and_quarantine(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  char err[300];
  idgen_lease_t *a = take(r, &p, 300, 1500);
  assert_int_equal(tu_worker(a), 0);
  tu_sleep_ms(450); /* expired, in quarantine until about 1800 ms */
  rows_t rs = list_pool(r, &p);
  assert_int_equal(rs.n, 1);
  assert_int_equal(rs.row[0].state, IDGEN_LEASE_QUARANTINE);
  assert_string_equal(rs.row[0].holder, info_of(a).holder);
  assert_in_range(rs.row[0].expires_in_ms, 500, 1500); /* free again then */
  idgen_lease_t *b = take(r, &p, 300, 1500);
  assert_int_equal(tu_worker(b), 1); /* not 0: quarantine */
  /* nobody else has 0: its holder may come back */
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), 0);
  assert_int_equal(list_pool(r, &p).row[0].state, IDGEN_LEASE_HELD);
  tu_sleep_ms(2000); /* both expired, and their quarantines are over */
  rs = list_pool(r, &p);
  assert_int_equal(rs.n, 2);
  assert_int_equal(rs.row[0].state, IDGEN_LEASE_FREE);
  assert_int_equal(rs.row[0].expires_in_ms, -1);
  idgen_lease_t *c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(c), 0);
  assert_int_equal(info_of(c).generation, 2);
  /* the old holder is fenced out */
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), IDGEN_ELEASE);
  char want[400];
  snprintf(want, sizeof want, "fenced out: generation 1 of %s in pool %s", tuple(&p, 0), p.name);
  assert_non_null(strstr(err, want));
  assert_non_null(strstr(err, "granted again, generation 2"));
  assert_int_equal(idgen_lease_record_mark(a, now_ms(), err, sizeof err), IDGEN_ELEASE);
  assert_non_null(strstr(err, "registry: postgres: mark: fenced out"));
  idgen_lease_release(a); /* conditional on its generation: no effect */
  assert_int_equal(idgen_lease_renew(c, NULL, 0), 0);
  idgen_lease_release(b);
  idgen_lease_release(c);
  idgen_registry_close(r);
}

static void test_full_pool(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:2,sequence:5");
  char err[600], want[300];
  idgen_lease_t *l[4];
  for (int i = 0; i < 4; i++) {
    l[i] = take(r, &p, 0, 0);
    assert_int_equal(tu_worker(l[i]), i);
  }
  idgen_lease_request_t req = request(&p, 0, 0);
  idgen_lease_t *x;
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), IDGEN_EPOOLFULL);
  assert_non_null(strstr(err, "all 4 values of field \"worker\" (2 bits)"));
  snprintf(want, sizeof want, "with run=%llu are taken: 4 held by live holders",
           (unsigned long long)p.run);
  assert_non_null(strstr(err, want));
  /* one freed by hand: still full while it is in quarantine (its TTL and
   * the quarantine: 20 s, past the start wait), and said so */
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 2), 1, NULL, 0), 0);
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), IDGEN_EPOOLFULL);
  assert_non_null(strstr(err, "are taken: 3 held by live holders, 1 in quarantine after their "
                              "holders stopped (the first free again in "));
  for (int i = 0; i < 4; i++)
    idgen_lease_release(l[i]);
  idgen_registry_close(r);
}

static void test_list_states(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *a = take(r, &p, 0, 0), *b = take(r, &p, 0, 0), *c = take(r, &p, 300, 5000);
  assert_int_equal(idgen_lease_record_mark(b, 1700000000123, NULL, 0), 0);
  idgen_lease_release(b);
  tu_sleep_ms(400); /* c expires */
  rows_t rs = list_pool(r, &p);
  assert_int_equal(rs.n, 3);
  assert_string_equal(rs.row[0].node, tuple(&p, 0)); /* in the pool's own layout */
  assert_string_equal(rs.row[0].layout, "time:41@1ms,run:16,worker:4,sequence:3,epoch=0");
  assert_int_equal(rs.row[0].key, info_of(a).key);
  assert_int_equal(rs.row[0].state, IDGEN_LEASE_HELD);
  assert_string_equal(rs.row[0].holder, info_of(a).holder);
  assert_int_equal(rs.row[0].generation, 1);
  assert_in_range(rs.row[0].expires_in_ms, 8000, 10000); /* by the database's clock */
  assert_string_equal(rs.row[1].node, tuple(&p, 1));
  assert_int_equal(rs.row[1].state, IDGEN_LEASE_FREE); /* released: free at once */
  assert_int_equal(rs.row[1].mark_ms, 1700000000123);
  assert_string_equal(rs.row[1].holder, "");
  assert_int_equal(rs.row[1].expires_in_ms, -1);
  assert_string_equal(rs.row[2].node, tuple(&p, 2));
  assert_int_equal(rs.row[2].state, IDGEN_LEASE_QUARANTINE);
  assert_string_equal(rs.row[2].holder, info_of(c).holder);
  assert_in_range(rs.row[2].expires_in_ms, 4000, 5000); /* free again then */
  idgen_lease_release(a);
  idgen_lease_release(c);
  idgen_registry_close(r);
}

static int stop_at_first(void *ctx, const idgen_lease_row_t *row) {
  (void)row;
  ++*(int *)ctx;
  return 42;
}

static void test_list_stops(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *a = take(r, &p, 0, 0);
  int calls = 0;
  assert_int_equal(idgen_registry_list(r, stop_at_first, &calls, NULL, 0), 42);
  assert_int_equal(calls, 1);
  idgen_lease_release(a);
  idgen_registry_close(r);
}

static void test_free_by_hand(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  char err[300];
  idgen_lease_t *a = take(r, &p, 300, 300), *b = take(r, &p, 0, 0);
  /* a live lease is refused without force */
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 0), 0, err, sizeof err), IDGEN_ELEASE);
  assert_non_null(strstr(err, "is held by "));
  assert_int_equal(idgen_lease_renew(a, NULL, 0), 0);
  /* forced: fenced at once, and out of the pool for the quarantine */
  err[0] = '\0';
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 0), 1, err, sizeof err), 0);
  assert_non_null(strstr(err, "freed: generation 1"));
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), IDGEN_ELEASE);
  assert_non_null(strstr(err, "freed by hand (now generation 2)"));
  assert_int_equal(idgen_lease_record_mark(a, now_ms(), NULL, 0), IDGEN_ELEASE);
  rows_t rs = list_pool(r, &p);
  assert_int_equal(rs.row[0].state, IDGEN_LEASE_QUARANTINE);
  assert_int_equal(rs.row[0].generation, 2);
  assert_string_equal(rs.row[0].holder, "");
  idgen_lease_t *c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(c), 2); /* not 0 */
  /* freeing again, or a free ID, or an unknown one */
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 0), 0, err, sizeof err), 0);
  assert_non_null(strstr(err, "is already freed: back in the pool in "));
  idgen_lease_release(c);
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 2), 0, err, sizeof err), 0);
  assert_non_null(strstr(err, "is already free"));
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, 9), 0, err, sizeof err), IDGEN_EINVAL);
  assert_non_null(strstr(err, tuple(&p, 9)));
  assert_non_null(strstr(err, "was never leased"));
  assert_int_equal(idgen_registry_free(r, "epoch=1,tick=1ms,time@9,sequence@0:3", "run=1,worker=0",
                                       0, err, sizeof err),
                   IDGEN_EINVAL);
  assert_non_null(strstr(err, "no pool epoch=1,tick=1ms,time@9,sequence@0:3"));
  assert_int_equal(idgen_registry_free(r, p.name, "run=1,nosuch=0", 0, err, sizeof err),
                   IDGEN_EINVAL);
  assert_non_null(strstr(err, "\"nosuch\" is not a node field"));
  /* after the quarantine (lease expiry + 300 ms at the latest), 0 is back */
  tu_sleep_ms(900);
  c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(c), 0);
  assert_int_equal(info_of(c).generation, 3);
  idgen_lease_release(a);
  idgen_lease_release(b);
  idgen_lease_release(c);
  idgen_registry_close(r);
}

/* A generator bound to a postgres lease: renewed at a third of the TTL,
 * no ID above the mark in the database, and stopped once fenced out. */
static void test_bound_generator(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *lease = take(r, &p, 300, 300);
  uint64_t worker = tu_worker(lease); /* once bound, the lease is its thread's */
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  s.lease = lease;
  memcpy(s.node, p.node, sizeof s.node);
  idgen_snowflake_gen_t *g;
  char err[300];
  if (idgen_snowflake_gen_new(&g, &p.layout, &s, err, sizeof err) != 0)
    fail_msg("bind: %s", err);
  uint64_t id, last = 0, v[IDGEN_LAYOUT_MAX_FIELDS];
  int64_t ms, t0 = now_ms();
  while (now_ms() - t0 < 1000) { /* a few renewals and mark steps */
    int rc = idgen_snowflake_gen_next(g, &id);
    if (rc != 0)
      fail_msg("next: %s", idgen_strerror(rc));
    assert_true(id > last);
    last = id;
    tu_sleep_ms(1);
  }
  assert_int_equal(idgen_layout_decompose(&p.layout, last, v, &ms), 0);
  assert_int_equal(v[idgen_layout_field_index(&p.layout, "worker")], worker);
  assert_true(ms <= list_pool(r, &p).row[0].mark_ms); /* durable first */
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(g, &st);
  assert_true(st.bound && st.valid && !st.fenced);
  assert_true(st.renewals >= 3);
  assert_true(st.mark_writes >= 2);
  /* freed by force: the generator stops at its next renewal (fenced) */
  assert_int_equal(idgen_registry_free(r, p.name, tuple(&p, worker), 1, NULL, 0), 0);
  int rc = 0;
  for (int i = 0; i < 200 && rc == 0; i++) {
    rc = idgen_snowflake_gen_next(g, &id);
    if (rc == 0)
      tu_sleep_ms(5);
  }
  assert_int_equal(rc, IDGEN_ELEASE);
  idgen_snowflake_gen_lease_status(g, &st);
  assert_true(st.fenced && !st.valid);
  assert_non_null(strstr(st.reason, "fenced out"));
  idgen_snowflake_gen_free(g);
  idgen_lease_release(lease);
  idgen_registry_close(r);
}

static void no_notices(void *ctx, const char *msg) {
  (void)ctx; /* "drop cascades to ...": the test's own output stays readable */
  (void)msg;
}

/* SQL by hand on database `db` (NULL: base_uri's), as an operator would run
 * it; asserts success.  The first column of the first row, if any, into
 * out[n] (may be NULL). */
static void psql_on(const char *db, const char *sql, char *out, size_t n) {
  char dburi[600];
  snprintf(dburi, sizeof dburi, "%.*s/%s", (int)(strrchr(base_uri, '/') - base_uri), base_uri,
           db ? db : strrchr(base_uri, '/') + 1);
  PGconn *c = PQconnectdb(dburi);
  assert_int_equal(PQstatus(c), CONNECTION_OK);
  PQsetNoticeProcessor(c, no_notices, NULL);
  PGresult *res = PQexec(c, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
    fail_msg("%s: %s", sql, PQerrorMessage(c));
  if (out)
    snprintf(out, n, "%s", PQntuples(res) > 0 ? PQgetvalue(res, 0, 0) : "");
  PQclear(res);
  PQfinish(c);
}

static void psql(const char *sql) { psql_on(NULL, sql, NULL, 0); }

/* A row deleted by hand (or truncated) raises its pool's floor to its mark:
 * the next holder of that tuple starts above every ID issued under it,
 * even while the old holder lives (52df1fb re-created the row at mark 0). */
static void test_floor_after_delete(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  char spec[200];
  /* a geometry of its own (the epoch): the floor is pool-wide */
  snprintf(spec, sizeof spec, "time:41,run:16,worker:4,sequence:3,epoch=%llu",
           (unsigned long long)(1000 + run_base * 7 + run_next));
  pool_t p = new_pool(spec);
  idgen_lease_t *a = take(r, &p, 0, 0);
  int64_t m = now_ms() + 60000;
  assert_int_equal(idgen_lease_record_mark(a, m, NULL, 0), 0);
  char sql[600];
  snprintf(sql, sizeof sql, "DELETE FROM idgen.idgen_nodes WHERE pool = '%s' AND node = %lld",
           p.stored, (long long)info_of(a).key);
  psql(sql);
  rows_t rs = list_pool(r, &p);
  assert_int_equal(rs.n, 0);
  /* every tuple of the run is new now, and new tuples start at the floor,
   * a minute ahead: refused, naming the wait, not started at 0 */
  idgen_lease_request_t req = request(&p, 0, 0);
  req.max_start_wait_ms = 100;
  idgen_lease_t *b;
  char err[400];
  assert_int_equal(idgen_registry_acquire(r, &req, &b, err, sizeof err), IDGEN_ECLOCK);
  assert_non_null(strstr(err, "can start in 5"));
  /* the floor shows as the pool mark */
  assert_int_equal(idgen_lease_record_mark(a, m + 1, err, sizeof err), IDGEN_ELEASE);
  assert_non_null(strstr(err, "its row is gone"));
  idgen_lease_release(a);
  /* with the clock past the floor (injected), it starts above it */
  tu_clock_t ck;
  tu_clock_init(&ck, m + 5);
  req.clock = &ck.clock;
  req.max_start_wait_ms = -1;
  assert_int_equal(idgen_registry_acquire(r, &req, &b, err, sizeof err), 0);
  assert_true(info_of(b).mark_ms >= m);
  rs = list_pool(r, &p);
  assert_int_equal(rs.n, 1);
  assert_int_equal(rs.row[0].pool_mark_ms, m);
  idgen_lease_release(b);
  /* idgen_pools keeps its rows */
  snprintf(sql, sizeof sql, "DELETE FROM idgen.idgen_pools WHERE pool = '%s'", p.stored);
  PGconn *c = PQconnectdb(base_uri);
  PGresult *res = PQexec(c, sql);
  assert_int_equal(PQresultStatus(res), PGRES_FATAL_ERROR);
  assert_non_null(strstr(PQerrorMessage(c), "never deleted"));
  PQclear(res);
  PQfinish(c);
  idgen_registry_close(r);
}

/* The first version's table: while one of its leases is held, acquisition
 * refuses; once none is, its highest mark is a floor of the pools.  In a
 * database of the test's own: the table is one per schema and its floor
 * holds for every pool, so in the shared database it would refuse or delay
 * the other suites on this server (registry.c.postgres runs beside this). */
static void test_earlier_version_table(void **state) {
  (void)state;
  char db[64], spec[200], sql[600], err[600], dburi[700];
  snprintf(db, sizeof db, "idgen_v1_%llu", (unsigned long long)run_base);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
  psql(sql);
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
  psql(sql);
  snprintf(dburi, sizeof dburi, "%.*s/%s", (int)(strrchr(base_uri, '/') - base_uri), base_uri, db);
  idgen_registry_t *r = tu_registry(dburi);
  snprintf(spec, sizeof spec, "time:41,run:16,worker:4,sequence:3,epoch=%llu",
           (unsigned long long)(2000 + run_base * 7 + run_next));
  pool_t first = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_release(take(r, &first, 0, 0)); /* this version's registry first */
  pool_t p = new_pool(spec);                  /* a pool made after the table */
  int64_t m = now_ms() + 60000;
  psql_on(db,
          "CREATE TABLE idgen.idgen_leases (pool text NOT NULL, worker_id bigint NOT NULL,"
          " holder text, generation bigint NOT NULL, expires_at timestamptz NOT NULL,"
          " free_at timestamptz NOT NULL, mark_ms bigint NOT NULL, PRIMARY KEY (pool, worker_id))",
          NULL, 0);
  snprintf(sql, sizeof sql,
           "INSERT INTO idgen.idgen_leases VALUES ('worker@datacenter=1', 0, 'old:1:aa', 1,"
           " now() + interval '1 hour', now() + interval '2 hours', %lld)",
           (long long)m);
  psql_on(db, sql, NULL, 0);
  idgen_lease_request_t req = request(&p, 0, 0);
  req.max_start_wait_ms = 100;
  idgen_lease_t *l;
  assert_int_equal(idgen_registry_acquire(r, &req, &l, err, sizeof err), IDGEN_EREGISTRY);
  assert_non_null(strstr(err, "held by an earlier idgen"));
  psql_on(db, "UPDATE idgen.idgen_leases SET holder = NULL, expires_at = now(), free_at = now()",
          NULL, 0);
  /* released: its mark, a minute ahead, is a floor now */
  assert_int_equal(idgen_registry_acquire(r, &req, &l, err, sizeof err), IDGEN_ECLOCK);
  idgen_registry_close(r);
  snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", db);
  psql(sql);
}

/* One registry whatever the session's search_path: a connection whose
 * search_path names another schema (options=-csearch_path=...) leases from
 * the same tables, so it never takes a tuple another holds (the tables
 * were found through search_path: 1,369,216 duplicates in 4,000,000). */
static void test_search_path(void **state) {
  (void)state;
  psql("CREATE SCHEMA IF NOT EXISTS other");
  char moved[700];
  snprintf(moved, sizeof moved, "%s&options=-csearch_path%%3Dother", uri);
  idgen_registry_t *r = tu_registry(uri), *o = tu_registry(moved);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *a = take(r, &p, 0, 0), *b = take(o, &p, 0, 0), *c = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(a), 0);
  assert_int_equal(tu_worker(b), 1);
  assert_int_equal(tu_worker(c), 2);
  rows_t rs = list_pool(o, &p);
  assert_int_equal(rs.n, 3);
  char n[32];
  psql_on(NULL, "SELECT count(*) FROM pg_class WHERE relnamespace = 'other'::regnamespace", n,
          sizeof n);
  assert_string_equal(n, "0");
  idgen_lease_release(a);
  idgen_lease_release(b);
  idgen_lease_release(c);
  idgen_registry_close(o);
  idgen_registry_close(r);
}

/* ?schema=NAME: a registry of its own in that schema, made beside this
 * database's `idgen` one because the URI names it; its functions name their
 * tables and fix their own search_path. */
static void test_schema_param(void **state) {
  (void)state;
  char named[700], sql[300], got[64];
  snprintf(named, sizeof named, "%s&schema=t%llu", uri, (unsigned long long)run_base);
  idgen_registry_t *r = tu_registry(uri), *s = tu_registry(named);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *a = take(r, &p, 0, 0), *b = take(s, &p, 0, 0);
  assert_int_equal(tu_worker(a), 0);
  assert_int_equal(tu_worker(b), 0); /* another registry: it does not see a */
  assert_non_null(strstr(idgen_registry_uri(s), strstr(named, "schema=")));
  snprintf(sql, sizeof sql,
           "SELECT count(*) FROM pg_proc WHERE pronamespace = 't%llu'::regnamespace AND"
           " proconfig = '{\"search_path=pg_catalog, pg_temp\"}' AND prosrc LIKE '%%\"t%llu\".%%'",
           (unsigned long long)run_base, (unsigned long long)run_base);
  psql_on(NULL, sql, got, sizeof got);
  assert_string_equal(got, "1"); /* idgen_nodes_removed; idgen_pools_kept names no table */
  idgen_lease_release(a);
  idgen_lease_release(b);
  idgen_registry_close(s);
  idgen_registry_close(r);
  snprintf(sql, sizeof sql, "DROP SCHEMA t%llu CASCADE", (unsigned long long)run_base);
  psql(sql);
}

/* The schema of an earlier version: its tables, functions that find them
 * through search_path, and the three triggers (2026-12 and before). */
static const char OLD_SCHEMA[] =
    "CREATE TABLE idgen_pools (pool text PRIMARY KEY, layout text NOT NULL,"
    " floor_ms bigint NOT NULL DEFAULT 0, keys bigint NOT NULL DEFAULT 0);"
    "CREATE TABLE idgen_spaces (space text PRIMARY KEY, version bigint NOT NULL DEFAULT 0,"
    " state text NOT NULL DEFAULT '');"
    "CREATE TABLE idgen_nodes (pool text NOT NULL, node bigint NOT NULL, holder text,"
    " generation bigint NOT NULL, expires_at timestamptz NOT NULL, free_at timestamptz NOT NULL,"
    " mark_ms bigint NOT NULL, PRIMARY KEY (pool, node));"
    "CREATE FUNCTION idgen_nodes_removed() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
    " INSERT INTO idgen_pools AS p (pool, layout, floor_ms, keys) VALUES (OLD.pool, '',"
    " OLD.mark_ms, OLD.node) ON CONFLICT (pool) DO UPDATE SET floor_ms = greatest(p.floor_ms,"
    " excluded.floor_ms); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END $f$;"
    "CREATE FUNCTION idgen_pools_kept() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
    " RAISE EXCEPTION 'kept'; END $f$;"
    "CREATE TRIGGER idgen_nodes_removed BEFORE DELETE OR UPDATE ON idgen_nodes"
    " FOR EACH ROW EXECUTE FUNCTION idgen_nodes_removed();"
    "CREATE TRIGGER idgen_nodes_truncated BEFORE TRUNCATE ON idgen_nodes"
    " FOR EACH STATEMENT EXECUTE FUNCTION idgen_nodes_removed();"
    "CREATE TRIGGER idgen_pools_kept BEFORE DELETE OR TRUNCATE ON idgen_pools"
    " FOR EACH STATEMENT EXECUTE FUNCTION idgen_pools_kept();";

/* A registry an earlier version made in `public` (and one in another
 * schema), in a database of the test's own: the default schema is refused,
 * naming both and the fix, and nothing is made; ?schema=public mends the
 * old registry in place, but grants nothing while the other one (legacy)
 * is beside it, until that one is parked in public_earlier; then it is
 * used (its held tuple stays held); after that the default is still
 * refused (the database has a registry), and a schema named on purpose is
 * a registry of its own. */
static void test_earlier_registry_elsewhere(void **state) {
  (void)state;
  char db[64], sql[2000], dburi[700], err[600], got[64];
  snprintf(db, sizeof db, "idgen_old_%llu", (unsigned long long)run_base);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
  psql(sql);
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
  psql(sql);
  psql_on(db, OLD_SCHEMA, NULL, 0);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  snprintf(sql, sizeof sql,
           "INSERT INTO idgen_nodes VALUES ('%s', %llu, 'old:1:aa', 3, now() + interval '1 hour',"
           " now() + interval '2 hours', 0)",
           p.name, (unsigned long long)(p.run << p.run_shift));
  psql_on(db, sql, NULL, 0);
  snprintf(dburi, sizeof dburi, "%.*s/%s", (int)(strrchr(base_uri, '/') - base_uri), base_uri, db);
  idgen_registry_t *r;
  assert_int_equal(idgen_registry_open(&r, dburi, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err,
              "schema idgen has no registry, but schema public has one an earlier idgen made") ||
      !strstr(err, "add ?schema=public to the URI to use it") ||
      !strstr(err, "ALTER TABLE public.idgen_nodes SET SCHEMA idgen"))
    fail_msg("default schema beside an earlier registry: %s", err);
  psql_on(db, "SELECT count(*) FROM pg_namespace WHERE nspname = 'idgen'", got, sizeof got);
  assert_string_equal(got, "0"); /* refused before anything was made */
  /* another in schema legacy: both named */
  psql_on(db, "CREATE SCHEMA legacy", NULL, 0);
  snprintf(sql, sizeof sql, "SET search_path = legacy; %s", OLD_SCHEMA);
  psql_on(db, sql, NULL, 0);
  assert_int_equal(idgen_registry_open(&r, dburi, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err, "but schemas legacy, public have one an earlier idgen made") ||
      !strstr(err, "?schema=legacy"))
    fail_msg("two earlier registries: %s", err);
  /* named, the earlier one in public is mended in place, but nothing is
   * granted beside the one in legacy, until it is parked where the message says */
  char pub[800];
  snprintf(pub, sizeof pub, "%s?schema=public", dburi);
  r = tu_registry(pub);
  idgen_lease_request_t req = request(&p, 0, 0);
  idgen_lease_t *a = NULL;
  assert_int_equal(idgen_registry_acquire(r, &req, &a, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err, "schema legacy has a registry an earlier idgen made") ||
      !strstr(err, "CREATE SCHEMA public_earlier; ALTER TABLE legacy.idgen_nodes SET SCHEMA "
                   "public_earlier"))
    fail_msg("?schema=public beside an earlier registry in legacy: %s", err);
  psql_on(db,
          "CREATE SCHEMA public_earlier; ALTER TABLE legacy.idgen_nodes SET SCHEMA public_earlier;"
          "ALTER TABLE legacy.idgen_pools SET SCHEMA public_earlier;"
          "ALTER TABLE legacy.idgen_spaces SET SCHEMA public_earlier",
          NULL, 0);
  a = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(a), 1);
  rows_t rs = list_pool(r, &p);
  assert_int_equal(rs.n, 2);
  assert_string_equal(rs.row[0].holder, "old:1:aa");
  idgen_lease_release(a);
  idgen_registry_close(r);
  /* ... and mended: its functions name their schema and fix their search_path */
  psql_on(db,
          "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace AND"
          " proconfig IS NOT NULL AND proname IN ('idgen_nodes_removed', 'idgen_pools_kept')",
          got, sizeof got);
  assert_string_equal(got, "2");
  /* the default is refused still (public_earlier is an earlier one, not parked for
   * idgen), and with it gone, */
  assert_int_equal(idgen_registry_open(&r, dburi, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err, "schema public_earlier has one an earlier idgen made"))
    fail_msg("default beside public_earlier: %s", err);
  psql_on(db, "DROP SCHEMA legacy CASCADE; DROP SCHEMA public_earlier CASCADE", NULL, 0);
  assert_int_equal(idgen_registry_open(&r, dburi, err, sizeof err), IDGEN_EREGISTRY);
  /* because public is this database's registry now */
  if (!strstr(err, "schema idgen has no registry, but schema public has one: add ?schema=public") ||
      !strstr(err, "or ?schema=idgen to make a second, separate registry"))
    fail_msg("default schema beside this version's registry: %s", err);
  /* a schema named on purpose is a registry of its own */
  char own[800];
  snprintf(own, sizeof own, "%s?schema=idgen", dburi);
  r = tu_registry(own);
  a = take(r, &p, 0, 0);
  assert_int_equal(tu_worker(a), 0);
  idgen_lease_release(a);
  idgen_registry_close(r);
  r = tu_registry(dburi); /* now it has one */
  idgen_registry_close(r);
  snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", db);
  psql(sql);
}

/* An earlier version's registry that appears in `public` beside this
 * version's (made while no holder of this version ran, or by hand), in a
 * database of the test's own: a renewal fences the lease out (naming it,
 * its live holder, and the schema to park it in); acquisition is refused
 * while any of its leases is live, and while it is not parked; parked in
 * idgen_earlier it is harmless once none is live: a new lease starts above
 * its marks (its floor), and is fenced if they pass that floor.  Meanwhile
 * every session of this version holds the key an earlier version makes its
 * tables under, so none can (docs/DESIGN.md §11). */
static void test_earlier_registry_appears(void **state) {
  (void)state;
  char db[64], sql[2400], dburi[700], err[600], got[64];
  snprintf(db, sizeof db, "idgen_appears_%llu", (unsigned long long)run_base);
  snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
  psql(sql);
  snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
  psql(sql);
  snprintf(dburi, sizeof dburi, "%.*s/%s", (int)(strrchr(base_uri, '/') - base_uri), base_uri, db);
  idgen_registry_t *r = tu_registry(dburi);
  pool_t p = new_pool("time:41,run:16,worker:4,sequence:3");
  idgen_lease_t *a = take(r, &p, 3000, 0), *b = NULL;
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), 0);
  /* the guard: an earlier version's try for its table lock fails */
  psql_on(db, "SELECT pg_try_advisory_xact_lock(7283920174628301)", got, sizeof got);
  assert_string_equal(got, "f");
  /* the earlier registry, one lease live, its mark 1.5 s ahead */
  int64_t mark = now_ms() + 1500;
  snprintf(sql, sizeof sql,
           "SET search_path = public; %s INSERT INTO idgen_nodes VALUES ('%s', %llu, 'old:1:aa',"
           " 1, now() + interval '1 hour', now() + interval '2 hours', %lld)",
           OLD_SCHEMA, p.name, (unsigned long long)(p.run << p.run_shift | 1u << 3),
           (long long)mark);
  psql_on(db, sql, NULL, 0);
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), IDGEN_ELEASE);
  if (!strstr(err, "renew: fenced out: schema public has an earlier idgen's registry (1 lease "
                   "live: old:1:aa)") ||
      !strstr(err, "into schema idgen_earlier") || strlen(err) >= IDGEN_REASON_MAX)
    fail_msg("renewal beside an earlier registry: %s", err);
  idgen_lease_request_t req = request(&p, 3000, 0);
  assert_int_equal(idgen_registry_acquire(r, &req, &b, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err, "schema public has a registry an earlier idgen made (through search_path), 1 "
                   "lease live (old:1:aa)") ||
      !strstr(err, "Upgrade every holder") ||
      !strstr(err, "CREATE SCHEMA idgen_earlier; ALTER TABLE public.idgen_nodes SET SCHEMA "
                   "idgen_earlier") ||
      strstr(err, "drop them") || strlen(err) >= 512 - 8)
    fail_msg("acquisition beside a live earlier registry: %s", err);
  /* its holder stopped: still refused, while it is where an earlier version finds it */
  psql_on(db, "UPDATE public.idgen_nodes SET holder = NULL, expires_at = now(), free_at = now()",
          NULL, 0);
  assert_int_equal(idgen_registry_acquire(r, &req, &b, err, sizeof err), IDGEN_EREGISTRY);
  if (!strstr(err, "schema public has a registry an earlier idgen made (through search_path), "
                   "whose holders") ||
      strstr(err, "live ("))
    fail_msg("acquisition beside a stopped earlier registry: %s", err);
  /* parked: a lease is granted, above its mark */
  psql_on(db,
          "CREATE SCHEMA idgen_earlier; ALTER TABLE public.idgen_nodes SET SCHEMA idgen_earlier;"
          "ALTER TABLE public.idgen_pools SET SCHEMA idgen_earlier;"
          "ALTER TABLE public.idgen_spaces SET SCHEMA idgen_earlier",
          NULL, 0);
  b = take(r, &p, 3000, 0);
  assert_true(info_of(b).floor_ms >= mark);
  assert_true(now_ms() > mark); /* waited for it (the wall clock) */
  assert_int_equal(idgen_lease_renew(b, err, sizeof err), 0);
  /* its marks pass the lease's floor (a pool floor raised: a holder of it
   * ran again): fenced */
  snprintf(sql, sizeof sql, "INSERT INTO idgen_earlier.idgen_pools VALUES ('x', '', %lld, 0)",
           (long long)(info_of(b).floor_ms + 1));
  psql_on(db, sql, NULL, 0);
  assert_int_equal(idgen_lease_renew(b, err, sizeof err), IDGEN_ELEASE);
  if (!strstr(err, "schema idgen_earlier has an earlier idgen's registry (marks above this "
                   "lease's start)"))
    fail_msg("renewal after the parked registry's marks moved: %s", err);
  idgen_lease_release(a);
  idgen_lease_release(b);
  idgen_registry_close(r);
  /* no session of this version left: the key is free again */
  psql_on(db, "SELECT pg_try_advisory_xact_lock(7283920174628301)", got, sizeof got);
  assert_string_equal(got, "t");
  snprintf(sql, sizeof sql, "DROP DATABASE %s WITH (FORCE)", db);
  psql(sql);
}

/* Each test's own ID space. */
static int own_space(void **state) {
  (void)state;
  static unsigned n;
  snprintf(space, sizeof space, "t%llu-%u", (unsigned long long)run_base, n++);
  snprintf(uri, sizeof uri, "%s%sspace=%s", base_uri, strchr(base_uri, '?') ? "&" : "?", space);
  return 0;
}

int main(void) {
  base_uri = getenv("IDGEN_TEST_PG_URI");
  if (base_uri == NULL || base_uri[0] == '\0') {
    const char *skip = getenv("IDGEN_TEST_PG_SKIP");
    if (skip && strcmp(skip, "1") == 0) {
      fprintf(stderr, "test_registry_pg: skipped (IDGEN_TEST_PG_SKIP=1)\n");
      return 77;
    }
    fprintf(stderr, "test_registry_pg: set IDGEN_TEST_PG_URI to a PostgreSQL server "
                    "(tests/pg_server.sh start DIR PORT prints one), or IDGEN_TEST_PG_SKIP=1\n");
    return 1;
  }
  uint16_t seed = 0;
  if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
    seed = (uint16_t)(getpid() ^ time(NULL));
  run_base = seed;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_open, own_space),
      cmocka_unit_test_setup(test_lowest_free_release_and_marks, own_space),
      cmocka_unit_test_setup(test_threads_share_a_registry, own_space),
      cmocka_unit_test_setup(test_expiry_and_quarantine, own_space),
      cmocka_unit_test_setup(test_full_pool, own_space),
      cmocka_unit_test_setup(test_list_states, own_space),
      cmocka_unit_test_setup(test_list_stops, own_space),
      cmocka_unit_test_setup(test_free_by_hand, own_space),
      cmocka_unit_test_setup(test_bound_generator, own_space),
      cmocka_unit_test_setup(test_floor_after_delete, own_space),
      cmocka_unit_test_setup(test_search_path, own_space),
      cmocka_unit_test_setup(test_schema_param, own_space),
      cmocka_unit_test_setup(test_earlier_registry_elsewhere, own_space),
      cmocka_unit_test_setup(test_earlier_registry_appears, own_space),
      cmocka_unit_test_setup(test_earlier_version_table, own_space),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
