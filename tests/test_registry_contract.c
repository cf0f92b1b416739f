/*
 * test_registry_contract.c -- the lease scenarios every registry backend
 * must pass, word for word (docs/DESIGN.md §11): the lowest free tuple and
 * marks that survive a release; a full pool and the start wait; many
 * processes at once; a tuple met whichever field each holder leases; a
 * generator bound to a lease (durable, fenced, increasing across holders);
 * a forked child; the ID space (a layout refused beside another whose
 * IDs could equal its own, a named space, a takeover above the old IDs);
 * a grant taken over from a process that was killed (adopt); and
 * sequence records (load, a conditional store refused as stale, versions
 * that grow, 4 threads x 500 compare-and-set increments, keys in order),
 * skipped on a backend that keeps none yet.
 *
 *   test_registry_contract file|postgres|etcd|idgen [TEST_NAME]
 *
 * idgen reads $IDGEN_TEST_IDGEN_URI (tests/registry/suite_seq_idgen.py
 * starts the daemon and runs the sequence tests, test_seq_*, there).
 *
 * postgres reads $IDGEN_TEST_PG_URI and etcd $IDGEN_TEST_ETCD_URI (the
 * fixtures of tests/CMakeLists.txt start those servers); each test works in
 * an ID space of its own (a new directory for file:), so tests, and runs
 * sharing one server, never meet.  TEST_NAME (a glob) runs one test alone.
 * The backends' own behaviour (file:'s lock files and pool file, postgres's
 * expiry by the database's clock and its tables, etcd's leases) is tested
 * in test_registry.c, test_registry_pg.c and tests/registry/suite_*.py.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registry_int.h"
#include "testutil.h"

static const char *backend, *base_uri;
static char dir[256], uri[700];
static unsigned run;

/* Each test's registry: a new directory, or a new ID space on the server. */
static int fresh(void **state) {
  (void)state;
  static unsigned n;
  if (strcmp(backend, "file") == 0) {
    snprintf(dir, sizeof dir, "/tmp/idgen-contract-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(uri, sizeof uri, "file:%s/reg", dir);
  } else {
    snprintf(uri, sizeof uri, "%s%sspace=c%u-%u", base_uri, strchr(base_uri, '?') ? "&" : "?", run,
             n++);
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

static int64_t now_ms(void) { return (int64_t)time(NULL) * 1000; }

/* Acquires layout l with node values `node` (NULL: all 0); *rc gets the
 * code; NULL on failure with the message in err. */
static idgen_lease_t *try_take(idgen_registry_t *r, const idgen_layout_t *l, const char *field,
                               const uint64_t *node, const idgen_clock_t *clock, int64_t max_wait,
                               int *rc, char *err, size_t errlen) {
  idgen_lease_request_t req = {l, node, field, max_wait, clock};
  idgen_lease_t *lease = NULL;
  *rc = idgen_registry_acquire(r, &req, &lease, err, errlen);
  return *rc == 0 ? lease : NULL;
}

static idgen_lease_t *take(idgen_registry_t *r, const idgen_layout_t *l, const uint64_t *node,
                           const idgen_clock_t *clock) {
  char err[600];
  int rc;
  idgen_lease_t *lease = try_take(r, l, NULL, node, clock, -1, &rc, err, sizeof err);
  if (lease == NULL)
    fail_msg("acquire: %s", err);
  return lease;
}

static idgen_lease_info_t info(const idgen_lease_t *l) {
  idgen_lease_info_t i;
  idgen_lease_info(l, &i);
  return i;
}

/* The lowest free tuple; a mark survives the release and never goes back;
 * the tuple's next holder sees it, one generation on. */
static void test_lowest_free_and_marks(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t tw = tu_layout("twitter");
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  node[idgen_layout_field_index(&tw, "datacenter")] = 1;
  tu_clock_t ck;
  int64_t t0 = now_ms();
  tu_clock_init(&ck, t0);
  idgen_lease_t *a = take(r, &tw, node, &ck.clock), *b = take(r, &tw, node, &ck.clock);
  assert_int_equal(tu_worker(a), 0);
  assert_int_equal(tu_worker(b), 1);
  assert_int_equal(info(a).generation, 1);
  assert_int_equal(info(a).mark_ms, 0); /* a tuple new to an empty pool */
  assert_string_equal(info(a).node, "datacenter=1,worker=0");
  assert_int_equal(idgen_lease_record_mark(a, t0 + 500, NULL, 0), 0);
  assert_int_equal(idgen_lease_record_mark(a, t0 + 100, NULL, 0), 0); /* never back */
  assert_int_equal(info(a).mark_ms, t0 + 500);
  assert_int_equal(idgen_lease_renew(a, NULL, 0), 0);
  idgen_lease_release(a);
  tu_clock_add_ms(&ck, 1000); /* the mark is behind the clock now */
  idgen_lease_t *c = take(r, &tw, node, &ck.clock);
  assert_int_equal(tu_worker(c), 0);
  assert_int_equal(info(c).generation, 2);
  assert_true(info(c).mark_ms >= t0 + 500);
  /* another namespace (the other node values) is another set of tuples */
  node[idgen_layout_field_index(&tw, "datacenter")] = 2;
  idgen_lease_t *d = take(r, &tw, node, &ck.clock);
  assert_int_equal(tu_worker(d), 0);
  idgen_lease_release(b);
  idgen_lease_release(c);
  idgen_lease_release(d);
  idgen_registry_close(r);
}

/* A pool of two: a third holder is refused naming the size and field.
 * Both freed with marks ahead (5 s and 300 ms): a generator that may borrow
 * 400 ms starts above the nearer at once; without borrowing, the start waits
 * for it on the (injected) clock within max_start_wait_ms, or is refused
 * naming the wait; each tuple starts above its own mark. */
static void test_full_pool_and_start_wait(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,rack:3,worker:1,sequence:12,epoch=1288834974657");
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  node[idgen_layout_field_index(&l, "rack")] = 5;
  tu_clock_t ck;
  int64_t t = now_ms();
  tu_clock_init(&ck, t);
  idgen_lease_t *a = take(r, &l, node, &ck.clock), *b = take(r, &l, node, &ck.clock);
  char err[600];
  int rc;
  assert_null(try_take(r, &l, NULL, node, &ck.clock, -1, &rc, err, sizeof err));
  assert_int_equal(rc, IDGEN_EPOOLFULL);
  if (strstr(err, "all 2 values of field \"worker\" (1 bits) with rack=5 are taken: 2 held by "
                  "live holders; free one") == NULL)
    fail_msg("%s", err);
  assert_int_equal(idgen_lease_record_mark(a, t + 5000, NULL, 0), 0);
  assert_int_equal(idgen_lease_record_mark(b, t + 300, NULL, 0), 0);
  idgen_lease_release(a);
  idgen_lease_release(b);
  idgen_lease_request_t req = {&l, node, NULL, -1, &ck.clock};
  req.start_borrow_ms = 400;
  idgen_lease_t *x;
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), 0);
  assert_int_equal(tu_worker(x), 1);
  assert_int_equal(tu_clock_ms(&ck), t); /* no wait */
  idgen_lease_release(x);
  req.start_borrow_ms = 0;
  req.max_start_wait_ms = 100;
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), IDGEN_ECLOCK);
  if (strstr(err, "the nearest (worker 1 with rack=5) can start in 301 ms, more than "
                  "max_start_wait_ms (100)") == NULL)
    fail_msg("%s", err);
  req.max_start_wait_ms = 1000;
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), 0);
  assert_int_equal(tu_worker(x), 1);
  assert_int_equal(info(x).mark_ms, t + 300);
  assert_int_equal(tu_clock_ms(&ck) - t, 301); /* waited on the injected clock */
  idgen_lease_release(x);
  idgen_registry_close(r);
}

/* A full pool with a tuple in quarantine (network registries: file: frees
 * a stopped holder's tuple at once): the refusal tells the held from the
 * quarantined and when the first is free again (0181e27 said "all ... are
 * held" of a tuple free 5 s later); a start wait that covers the rest of
 * the quarantine waits for it, as for a mark ahead. */
static void test_full_pool_quarantine(void **state) {
  (void)state;
  if (strcmp(backend, "file") == 0)
    skip();
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,rack:3,worker:1,sequence:12,epoch=1288834974657");
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  node[idgen_layout_field_index(&l, "rack")] = 6;
  /* a outlives the test unrenewed; b's tuple, freed by hand, stays out for
   * its TTL (its holder may not know yet) and the quarantine: 2.3 s. */
  idgen_lease_request_t req = {&l, node, NULL, 0, NULL, 30000, 2000, 0, 0};
  idgen_lease_t *a, *b, *x;
  char err[600];
  assert_int_equal(idgen_registry_acquire(r, &req, &a, err, sizeof err), 0);
  req.ttl_ms = IDGEN_LEASE_TTL_MIN_MS;
  assert_int_equal(idgen_registry_acquire(r, &req, &b, err, sizeof err), 0);
  int wb = (int)tu_worker(b);
  idgen_lease_info_t ib = info(b);
  if (idgen_registry_free(r, ib.pool, ib.node, 1, err, sizeof err) != 0)
    fail_msg("free: %s", err);
  idgen_lease_release(b);
  req.max_start_wait_ms = 0;
  assert_int_equal(idgen_registry_acquire(r, &req, &x, err, sizeof err), IDGEN_EPOOLFULL);
  if (strstr(err, "all 2 values of field \"worker\" (1 bits) with rack=6 are taken: 1 held by "
                  "live holders, 1 in quarantine after their holders stopped (the first free "
                  "again in ") == NULL ||
      strstr(err, "past max_start_wait_ms 0") == NULL)
    fail_msg("%s", err);
  req.max_start_wait_ms = 6000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (idgen_registry_acquire(r, &req, &x, err, sizeof err) != 0)
    fail_msg("acquire within the start wait: %s", err);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_int_equal(tu_worker(x), wb);
  int64_t waited = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
  if (waited < 200 || waited > 5500) /* the rest of 2.3 s, less what passed */
    fail_msg("waited %lld ms for a 2300 ms quarantine", (long long)waited);
  idgen_lease_release(x);
  idgen_lease_release(a);
  idgen_registry_close(r);
}

/* 16 processes acquire from one pool at once: 16 distinct values, the
 * lowest. */
static void test_processes_at_once(void **state) {
  (void)state;
  enum { N = 16 };
  idgen_layout_t l = tu_layout("time:41,worker:6,sequence:16,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  int ctl[2];
  pid_t pids[N];
  uint64_t w[N];
  assert_int_equal(pipe(ctl), 0);
  tu_fork_holders(uri, &req, N, 300, ctl, pids, w);
  unsigned char seen[64] = {0};
  for (int i = 0; i < N; i++) {
    assert_true(w[i] < 64);
    assert_int_equal(seen[w[i]]++, 0);
  }
  for (int i = 0; i < N; i++)
    assert_int_equal(seen[i], 1);
  close(ctl[1]);
  close(ctl[0]);
  for (int i = 0; i < N; i++)
    waitpid(pids[i], NULL, 0);
}

/* A lease holds the whole node tuple: a holder leasing `worker` with dc=0
 * and one leasing `dc` with worker=0 never both get (dc 0, worker 0). */
static void test_tuple_whichever_field(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,dc:1,worker:1,sequence:12,epoch=1288834974657");
  uint64_t zero[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  char err[600];
  int rc;
  idgen_lease_t *x = try_take(r, &l, "worker", zero, NULL, -1, &rc, err, sizeof err);
  assert_non_null(x);
  idgen_lease_t *y = try_take(r, &l, "dc", zero, NULL, -1, &rc, err, sizeof err);
  assert_non_null(y);
  assert_true(info(x).key != info(y).key);
  assert_string_equal(info(x).node, "dc=0,worker=0");
  assert_string_equal(info(y).node, "dc=1,worker=0");
  uint64_t dc1[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  dc1[idgen_layout_field_index(&l, "dc")] = 1;
  idgen_lease_t *z = try_take(r, &l, "worker", dc1, NULL, -1, &rc, err, sizeof err);
  assert_non_null(z);
  assert_string_equal(info(z).node, "dc=1,worker=1"); /* dc=1,worker=0 is y's */
  idgen_lease_release(x);
  idgen_lease_release(y);
  idgen_lease_release(z);
  idgen_registry_close(r);
}

/* A generator bound to a lease: its mark is recorded before it issues
 * above it (durable), the tuple's next holder starts above its last ID
 * (also after a release with the final mark), and a fenced-out lease
 * stops it (a forced free, on the backends that take one). */
static void test_bound_generator(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,worker:1,sequence:12,epoch=1288834974657");
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *g;
  char err[600];
  uint64_t last = 0, id, worker = UINT64_MAX;
  for (int round = 0; round < 3; round++) {
    int rc = idgen_registry_bind(
        r,
        &(idgen_bind_request_t){
            .layout = &l, .settings = &s, .ttl_ms = 1000, .max_start_wait_ms = -1},
        &lease, &g, err, sizeof err);
    if (rc != 0)
      fail_msg("bind: %s", err);
    /* The same tuple again (its final mark behind the clock) or the other
     * one: on the same tuple, the new holder starts above the last ID. */
    int same = tu_worker(lease) == worker;
    worker = tu_worker(lease);
    for (int i = 0; i < 5000; i++) {
      tu_ok(idgen_snowflake_gen_next(g, &id));
      if (i > 0 || same)
        assert_true(id > last); /* increasing, across holders of the tuple too */
      last = id;
    }
    tu_sleep_ms(2); /* past the final mark's millisecond */
    idgen_snowflake_lease_status_t st;
    idgen_snowflake_gen_lease_status(g, &st);
    assert_true(st.bound && st.valid);
    uint64_t values[IDGEN_LAYOUT_MAX_FIELDS];
    int64_t ms;
    assert_int_equal(idgen_layout_decompose(&l, last, values, &ms), 0);
    assert_true(st.lease.mark_ms >= ms); /* durable: recorded before issued */
    idgen_snowflake_gen_free(g);
    idgen_lease_release(lease);
  }
  idgen_registry_close(r);
}

static int count_row(void *ctx, const idgen_lease_row_t *row) {
  (void)row;
  ++*(int *)ctx;
  return 0;
}

/* A forked child cannot use its parent's lease (it may use the registry);
 * the parent still can. */
static void test_forked_child(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t tw = tu_layout("twitter");
  idgen_lease_t *a = take(r, &tw, NULL, NULL);
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t child = fork();
  assert_true(child >= 0);
  if (child == 0) {
    int rc = idgen_lease_renew(a, NULL, 0);
    int rc2 = idgen_lease_record_mark(a, now_ms() + 5000, NULL, 0);
    int rows = 0; /* the registry itself still works in the child */
    int rc3 = idgen_registry_list(r, count_row, &rows, NULL, 0);
    _exit(rc == IDGEN_EFORKED && rc2 == IDGEN_EFORKED && rc3 == 0 && rows == 1 ? 0 : 1);
  }
  int st;
  assert_int_equal(waitpid(child, &st, 0), child);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(idgen_lease_renew(a, NULL, 0), 0);
  close(p[0]);
  close(p[1]);
  idgen_lease_release(a);
  idgen_registry_close(r);
}

/* One registry, one ID space: a layout whose IDs could equal a held one's
 * is refused naming it; a named space takes it; once the first layout's
 * holder is gone, it takes the space over above every ID issued there. */
static void test_id_space(void **state) {
  (void)state;
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t tw = tu_layout("twitter");
  idgen_layout_t s11 =
      tu_layout("time:41@1ms,datacenter:5,worker:6,sequence:11,epoch=1288834974657");
  uint64_t zero[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  char err[1200];
  int rc;
  idgen_lease_t *a = take(r, &tw, NULL, NULL);
  int64_t t0 = now_ms();
  assert_int_equal(idgen_lease_record_mark(a, t0 + 200, NULL, 0), 0); /* "issued" up to it */
  idgen_lease_t *b = try_take(r, &s11, NULL, zero, NULL, -1, &rc, err, sizeof err);
  assert_null(b);
  assert_int_equal(rc, IDGEN_ESPACE);
  if (strstr(err, "is in use by layout time:41@1ms,datacenter:5,worker:5,sequence:12") == NULL ||
      strstr(err, info(a).holder) == NULL)
    fail_msg("%s", err);
  /* a space of its own */
  char other[800];
  if (strstr(uri, "space=") != NULL) /* a network registry's test space: another name */
    snprintf(other, sizeof other, "%s-other", uri);
  else
    snprintf(other, sizeof other, "%s?space=other", uri);
  idgen_registry_t *r2 = tu_registry(other);
  b = take(r2, &s11, zero, NULL);
  idgen_lease_release(b);
  idgen_registry_close(r2);
  /* the holder gone: a takeover, its floor above twitter's IDs */
  idgen_lease_release(a);
  b = take(r, &s11, zero, NULL);
  uint64_t top = 0, values[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  assert_int_equal(idgen_layout_compose(&tw, t0 + 200, values, &top, NULL, 0), 0);
  top |= (UINT64_C(1) << 22) - 1; /* twitter's largest ID of that millisecond */
  uint64_t first = 0;
  int64_t floor = info(b).floor_ms;
  assert_int_equal(idgen_layout_compose(&s11, floor + 1, values, &first, NULL, 0), 0);
  assert_true(first > top);
  /* now twitter's layout is the one refused while this one is held */
  assert_null(try_take(r, &tw, NULL, zero, NULL, -1, &rc, err, sizeof err));
  assert_int_equal(rc, IDGEN_ESPACE);
  idgen_lease_release(b);
  idgen_registry_close(r);
}

/* Adoption (idgen_registry_adopt): a lease service restarted takes over
 * the grants its previous process made, so that their clients go on. */
typedef struct grant {
  int rc;
  uint64_t key, generation;
  int64_t mark_ms;
} grant_t;

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A child process, with a registry of its own, acquires for `holder` and
 * records mark_ms, and says what it got (*g).  Then each byte the parent
 * writes to *cmd has it renew, answering the code; EOF ends it. */
static pid_t grant_child(const idgen_lease_request_t *req, const char *holder, int64_t mark_ms,
                         int *cmd, int *ans, grant_t *g) {
  int c[2], a[2];
  assert_int_equal(pipe(c), 0);
  assert_int_equal(pipe(a), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(c[1]);
    close(a[0]);
    idgen_registry_t *r;
    idgen_lease_t *l = NULL;
    char err[600] = "";
    grant_t out = {IDGEN_EREGISTRY, 0, 0, 0};
    if ((out.rc = idgen_registry_open(&r, uri, err, sizeof err)) == 0 &&
        (out.rc = idgen_registry_acquire_for(r, req, holder, &l, err, sizeof err)) == 0)
      out.rc = idgen_lease_record_mark(l, mark_ms, err, sizeof err);
    if (out.rc != 0)
      fprintf(stderr, "grant child: %s\n", err);
    if (l != NULL) {
      out.key = info(l).key;
      out.generation = info(l).generation;
      out.mark_ms = info(l).mark_ms;
    }
    if (write(a[1], &out, sizeof out) != sizeof out)
      _exit(2);
    for (char b; read(c[0], &b, 1) == 1;) {
      int rc = l ? idgen_lease_renew(l, NULL, 0) : IDGEN_EINVAL;
      if (write(a[1], &rc, sizeof rc) != sizeof rc)
        _exit(2);
    }
    _exit(0);
  }
  close(c[0]);
  close(a[1]);
  *cmd = c[1];
  *ans = a[0];
  assert_int_equal(read(*ans, g, sizeof *g), sizeof *g);
  assert_int_equal(g->rc, 0);
  return pid;
}

static int child_renew(int cmd, int ans) {
  int rc = IDGEN_EINVAL;
  assert_int_equal(write(cmd, "r", 1), 1);
  assert_int_equal(read(ans, &rc, sizeof rc), sizeof rc);
  return rc;
}

static void child_end(pid_t pid, int cmd, int ans, int kill9) {
  if (kill9)
    kill(pid, SIGKILL);
  close(cmd);
  close(ans);
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
}

typedef struct find_row {
  uint64_t key;
  int found;
  idgen_lease_row_t row;
} find_row_t;

static int find_row(void *ctx, const idgen_lease_row_t *row) {
  find_row_t *f = ctx;
  if (row->key == f->key) {
    f->found++;
    f->row = *row;
  }
  return 0;
}

static int adopt(idgen_registry_t *r, const idgen_lease_request_t *req, const grant_t *g,
                 uint64_t generation, const char *was, const char *holder, idgen_lease_t **out,
                 char *err, size_t errlen) {
  *out = NULL;
  err[0] = '\0';
  return idgen_registry_adopt(r, req, g->key, generation, was, holder, out, err, errlen);
}

#define D1 "client:1:0a1b-via-daemon:11:c0ffee01"
#define D2 "client:1:0a1b-via-daemon:22:c0ffee02"

/* A grant whose process was killed (-9) is taken over with its generation
 * and mark, and renews, marks, lists and releases as its own; a wrong
 * generation or holder is refused; so is the grant once released, and once
 * granted again. */
static void test_adopt(void **state) {
  (void)state;
#ifdef TU_UNDER_TSAN
  if (strcmp(backend, "file") == 0)
    skip(); /* its dead holder is a child forked while file:'s bounded calls may still run
             * threads, and it acquires (a thread: TSan ends it); the plain build and ASan
             * run it, and TSan on etcd */
#endif
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,worker:1,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  req.ttl_ms = 5000; /* long enough to adopt before it expires (network) */
  int cmd, ans;
  grant_t g;
  int64_t mark = wall_ms() + 400;
  pid_t pid = grant_child(&req, D1, mark, &cmd, &ans, &g);
  assert_int_equal(g.mark_ms, mark);
  idgen_lease_t *other = take(r, &l, NULL, NULL); /* the pool's other tuple: held */
  assert_true(info(other).key != g.key);
  child_end(pid, cmd, ans, 1); /* killed: file: frees its lock; the row stays */
  char err[1000];
  idgen_lease_t *a;
  /* (b) a wrong generation, a wrong holder */
  assert_int_equal(adopt(r, &req, &g, g.generation + 1, D1, D2, &a, err, sizeof err), IDGEN_ELEASE);
  assert_null(a);
  assert_int_equal(adopt(r, &req, &g, g.generation, "someone:else:1", D2, &a, err, sizeof err),
                   IDGEN_ELEASE);
  if (strstr(err, "someone:else:1") == NULL)
    fail_msg("%s", err);
  /* (a) taken over: the same generation and mark */
  if (adopt(r, &req, &g, g.generation, D1, D2, &a, err, sizeof err) != 0)
    fail_msg("adopt: %s", err);
  idgen_lease_info_t ia = info(a);
  assert_int_equal(ia.key, g.key);
  assert_int_equal(ia.generation, g.generation);
  assert_int_equal(ia.mark_ms, g.mark_ms);
  assert_string_equal(ia.holder, D2);
  assert_int_equal(ia.floor_ms, info(other).floor_ms); /* the pool's floor in the space */
  assert_true(ia.floor_ms < ia.mark_ms);
  assert_int_equal(idgen_lease_renew(a, err, sizeof err), 0);
  assert_int_equal(idgen_lease_record_mark(a, mark + 100, err, sizeof err), 0);
  assert_int_equal(info(a).mark_ms, mark + 100);
  find_row_t f = {.key = g.key};
  assert_int_equal(idgen_registry_list(r, find_row, &f, err, sizeof err), 0);
  assert_int_equal(f.found, 1);
  assert_string_equal(f.row.holder, D2);
  assert_int_equal(f.row.generation, g.generation);
  assert_int_equal(f.row.state, IDGEN_LEASE_HELD);
  assert_true(f.row.mark_ms >= mark + 100);
  /* held by this process now: not to be taken over again */
  idgen_lease_t *again;
  assert_int_equal(adopt(r, &req, &g, g.generation, D2, D1, &again, err, sizeof err),
                   strcmp(backend, "file") == 0 ? IDGEN_ELEASE : 0);
  if (again != NULL) { /* network: possible by design; the previous holder is fenced */
    assert_int_equal(idgen_lease_renew(a, err, sizeof err), IDGEN_ELEASE);
    idgen_lease_release(a);
    a = again;
    assert_int_equal(adopt(r, &req, &g, g.generation, D1, D2, &again, err, sizeof err), 0);
    idgen_lease_release(a);
    a = again;
    assert_int_equal(idgen_lease_renew(a, err, sizeof err), 0);
  }
  /* (e) released: no grant to take over, by either name */
  idgen_lease_release(a);
  assert_int_equal(adopt(r, &req, &g, g.generation, D2, D1, &a, err, sizeof err), IDGEN_ELEASE);
  if (strstr(err, "released") == NULL)
    fail_msg("%s", err);
  assert_int_equal(adopt(r, &req, &g, g.generation, D1, D2, &a, err, sizeof err), IDGEN_ELEASE);
  /* (d) granted again (the only free tuple, once its mark is behind the
   * clock): neither while held nor after */
  idgen_lease_request_t wait = req;
  wait.max_start_wait_ms = 5000;
  idgen_lease_t *next;
  if (idgen_registry_acquire(r, &wait, &next, err, sizeof err) != 0)
    fail_msg("acquire: %s", err);
  assert_int_equal(info(next).key, g.key);
  assert_int_equal(info(next).generation, g.generation + 1);
  assert_true(info(next).mark_ms >= mark + 100);
  assert_int_equal(adopt(r, &req, &g, g.generation, D2, D1, &a, err, sizeof err), IDGEN_ELEASE);
  idgen_lease_release(next);
  assert_int_equal(adopt(r, &req, &g, g.generation, D2, D1, &a, err, sizeof err), IDGEN_ELEASE);
  if (strstr(err, "generation") == NULL)
    fail_msg("%s", err);
  idgen_lease_release(other);
  idgen_registry_close(r);
}

/* (c) The grant's holder is alive.  file: its lock is held, so it is not
 * taken over.  Network registries cannot tell a live holder from a stopped
 * one before its lease expires: the grant is taken over (what guards it is
 * the caller's check, a lease service's client secret), and the previous
 * holder is fenced at its next renewal. */
static void test_adopt_live_holder(void **state) {
  (void)state;
#ifdef TU_UNDER_TSAN
  if (strcmp(backend, "file") == 0)
    skip(); /* the same, for its live holder */
#endif
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,worker:1,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  req.ttl_ms = 5000;
  int cmd, ans;
  grant_t g;
  pid_t pid = grant_child(&req, D1, wall_ms() + 300, &cmd, &ans, &g);
  char err[1000];
  idgen_lease_t *a;
  int rc = adopt(r, &req, &g, g.generation, D1, D2, &a, err, sizeof err);
  if (strcmp(backend, "file") == 0) {
    assert_int_equal(rc, IDGEN_ELEASE);
    if (strstr(err, "a live process holds its lock") == NULL)
      fail_msg("%s", err);
    assert_int_equal(child_renew(cmd, ans), 0); /* undisturbed */
  } else {
    if (rc != 0)
      fail_msg("adopt: %s", err);
    assert_int_equal(info(a).generation, g.generation);
    assert_int_equal(child_renew(cmd, ans), IDGEN_ELEASE);
    assert_int_equal(idgen_lease_renew(a, err, sizeof err), 0);
    idgen_lease_release(a);
  }
  child_end(pid, cmd, ans, 0);
  idgen_registry_close(r);
}

/* (d) Network registries: a grant left to expire (its holder killed) is
 * not taken over, also while its tuple is in quarantine. */
static void test_adopt_expired(void **state) {
  (void)state;
  if (strcmp(backend, "file") == 0)
    skip(); /* no expiry: a dead holder's lock is free at once */
  idgen_registry_t *r = tu_registry(uri);
  idgen_layout_t l = tu_layout("time:41,worker:1,sequence:12,epoch=1288834974657");
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  req.ttl_ms = IDGEN_LEASE_TTL_MIN_MS;
  req.quarantine_ms = 5000; /* still in quarantine when looked at */
  int cmd, ans;
  grant_t g;
  pid_t pid = grant_child(&req, D1, wall_ms() + 200, &cmd, &ans, &g);
  child_end(pid, cmd, ans, 1);
  char err[1000];
  find_row_t f = {.key = g.key};
  for (int i = 0; i < 100; i++) { /* until it expires: 300 ms (etcd: its second) */
    f.found = 0;
    assert_int_equal(idgen_registry_list(r, find_row, &f, err, sizeof err), 0);
    assert_int_equal(f.found, 1);
    if (f.row.state != IDGEN_LEASE_HELD)
      break;
    tu_sleep_ms(50);
  }
  assert_int_equal(f.row.state, IDGEN_LEASE_QUARANTINE);
  idgen_lease_t *a;
  assert_int_equal(adopt(r, &req, &g, g.generation, D1, D2, &a, err, sizeof err), IDGEN_ELEASE);
  if (strstr(err, "expired") == NULL)
    fail_msg("%s", err);
  idgen_registry_close(r);
}

/* ---- sequence records (registry_int.h, seq_load, seq_store, seq_keys) ---- */

/* The test's registry; the test skipped when its backend keeps no
 * sequences (yet). */
static idgen_registry_t *seq_registry(void) {
  idgen_registry_t *r = tu_registry(uri);
  char err[600], *text = NULL;
  uint64_t v;
  if (idgen__seq_io_load(r, "probe", &text, &v, err, sizeof err) == IDGEN_EINVAL &&
      strstr(err, "keeps no sequences") != NULL) {
    idgen_registry_close(r);
    print_message("%s: skipped\n", err);
    skip();
  }
  free(text);
  return r;
}

/* A record's text: a counter and a second line (a line feed must survive
 * the JSON both ways), a quote and a backslash. */
static void record(char *buf, size_t n, long count) {
  snprintf(buf, n, "idgen-seq-test v1\ncount=%ld\nnote=\"a\\b\"\ttab\n", count);
}

static long count_of(const char *text) {
  const char *c = strstr(text, "\ncount=");
  return c ? strtol(c + 7, NULL, 10) : -1;
}

/* load missing; store(0) creates; a second store(0) and a stale version
 * are refused with IDGEN_EAGAIN; versions grow; the text round-trips. */
static void test_seq_records(void **state) {
  (void)state;
  idgen_registry_t *r = seq_registry();
  char err[600], *text = NULL, want[200];
  uint64_t v0 = 99, v1, v2;
  assert_int_equal(idgen__seq_io_load(r, "orders", &text, &v0, err, sizeof err), 0);
  assert_null(text);
  assert_int_equal(v0, 0);
  record(want, sizeof want, 1);
  int rc = idgen__seq_io_store(r, "orders", want, 0, err, sizeof err);
  if (rc != 0)
    fail_msg("store(0): %d %s", rc, err);
  assert_int_equal(idgen__seq_io_store(r, "orders", want, 0, err, sizeof err), IDGEN_EAGAIN);
  assert_int_equal(idgen__seq_io_load(r, "orders", &text, &v1, err, sizeof err), 0);
  assert_non_null(text);
  assert_string_equal(text, want);
  free(text);
  assert_true(v1 > 0);
  record(want, sizeof want, 2);
  assert_int_equal(idgen__seq_io_store(r, "orders", want, v1, err, sizeof err), 0);
  assert_int_equal(idgen__seq_io_load(r, "orders", &text, &v2, err, sizeof err), 0);
  assert_string_equal(text, want);
  free(text);
  assert_true(v2 > v1);
  /* the version it was: stale */
  assert_int_equal(idgen__seq_io_store(r, "orders", want, v1, err, sizeof err), IDGEN_EAGAIN);
  /* a period's counter is a key of its own */
  assert_int_equal(idgen__seq_io_load(r, "orders@20261203", &text, &v0, err, sizeof err), 0);
  assert_null(text);
  idgen_registry_close(r);
}

typedef struct incr {
  idgen_registry_t *r;
  int n, again, failed;
  char err[600];
} incr_t;

/* n increments of the counter, each a load and a conditional store, again
 * on IDGEN_EAGAIN. */
static void *incr_main(void *arg) {
  incr_t *t = arg;
  for (int i = 0; i < t->n && !t->failed;) {
    char *text = NULL, next[200];
    uint64_t v;
    if (idgen__seq_io_load(t->r, "hits", &text, &v, t->err, sizeof t->err) < 0) {
      t->failed = 1;
      break;
    }
    long c = text ? count_of(text) : 0;
    free(text);
    record(next, sizeof next, c + 1);
    int rc = idgen__seq_io_store(t->r, "hits", next, v, t->err, sizeof t->err);
    if (rc == 0)
      i++;
    else if (rc == IDGEN_EAGAIN)
      t->again++;
    else
      t->failed = 1;
  }
  return NULL;
}

/* 4 threads x 500 compare-and-set increments: exactly 2000. */
static void test_seq_concurrent(void **state) {
  (void)state;
  idgen_registry_t *r = seq_registry();
  enum { THREADS = 4, EACH = 500 };
  incr_t t[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    t[i] = (incr_t){.r = r, .n = EACH};
    assert_int_equal(pthread_create(&th[i], NULL, incr_main, &t[i]), 0);
  }
  int again = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    if (t[i].failed)
      fail_msg("thread %d: %s", i, t[i].err);
    again += t[i].again;
  }
  char *text, err[600];
  uint64_t v;
  assert_int_equal(idgen__seq_io_load(r, "hits", &text, &v, err, sizeof err), 0);
  print_message("2000 increments, %d refused as stale and done again; version %llu\n", again,
                (unsigned long long)v);
  assert_int_equal(count_of(text), THREADS * EACH);
  free(text);
  idgen_registry_close(r);
}

typedef struct seq_keys {
  char got[16][IDGEN_SEQ_KEY_MAX + IDGEN_SPACE_NAME_MAX];
  int n;
} seq_keys_t;

static int seq_key_cb(void *ctx, const char *space, const char *key) {
  seq_keys_t *k = ctx;
  if (k->n < 16)
    snprintf(k->got[k->n++], sizeof k->got[0], "%s %s", space, key);
  return 0;
}

/* The keys of the space, in key order. */
static void test_seq_keys(void **state) {
  (void)state;
  idgen_registry_t *r = seq_registry();
  char err[600], want[3][80], space[40];
  snprintf(space, sizeof space, "%s", idgen_registry_space(r));
  const char *names[3] = {"b-seq", "a_seq", "b-seq@2026"};
  for (int i = 0; i < 3; i++)
    assert_int_equal(idgen__seq_io_store(r, names[i], "x\n", 0, err, sizeof err), 0);
  seq_keys_t k = {0};
  int rc = idgen__seq_io_keys(r, seq_key_cb, &k, err, sizeof err);
  if (rc != 0)
    fail_msg("keys: %s", err);
  assert_int_equal(k.n, 3);
  snprintf(want[0], sizeof want[0], "%s a_seq", space);
  snprintf(want[1], sizeof want[1], "%s b-seq", space);
  snprintf(want[2], sizeof want[2], "%s b-seq@2026", space);
  for (int i = 0; i < 3; i++)
    assert_string_equal(k.got[i], want[i]);
  idgen_registry_close(r);
}

int main(int argc, char **argv) {
  backend = argc > 1 ? argv[1] : "file";
  if (strcmp(backend, "postgres") == 0 || strcmp(backend, "etcd") == 0) {
    const char *var = backend[0] == 'p' ? "IDGEN_TEST_PG_URI" : "IDGEN_TEST_ETCD_URI";
    base_uri = getenv(var);
    if (base_uri == NULL || base_uri[0] == '\0') {
      fprintf(stderr, "test_registry_contract %s: set %s (the ctest fixtures do)\n", backend, var);
      return 1;
    }
  } else if (strcmp(backend, "idgen") == 0) { /* tests/registry/suite_seq_idgen.py's daemon */
    base_uri = getenv("IDGEN_TEST_IDGEN_URI");
    if (base_uri == NULL || base_uri[0] == '\0') {
      fprintf(stderr, "test_registry_contract idgen: set IDGEN_TEST_IDGEN_URI\n");
      return 1;
    }
  } else if (strcmp(backend, "file") != 0) {
    fprintf(stderr, "usage: test_registry_contract file|postgres|etcd|idgen [TEST_NAME]\n");
    return 2;
  }
  if (getrandom(&run, sizeof run, 0) != sizeof run)
    run = (unsigned)getpid();
  run %= 1000000;
  if (argc > 2)
    cmocka_set_test_filter(argv[2]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lowest_free_and_marks, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_full_pool_and_start_wait, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_full_pool_quarantine, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_processes_at_once, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_tuple_whichever_field, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_bound_generator, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_forked_child, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_id_space, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_adopt, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_adopt_live_holder, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_adopt_expired, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_seq_records, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_seq_concurrent, fresh, cleanup),
      cmocka_unit_test_setup_teardown(test_seq_keys, fresh, cleanup),
  };
  return cmocka_run_group_tests_name(backend, tests, NULL, NULL);
}
