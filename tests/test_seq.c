/*
 * test_seq.c -- sequences: the record's transitions (seq_record.c) and the
 * holder (seq.c) on a file: registry in a temporary directory, with an
 * injected clock.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "registry_int.h"
#include "testutil.h"
#include "seq_int.h"

/* ---- the record ----------------------------------------------------------- */

static uint64_t in_hand(const idgen__seq_rec_t *r) {
  uint64_t n = 0;
  for (int i = 0; i < r->n; i++)
    n += r->h[i].claimed - r->h[i].issued;
  return n;
}

static void identity(const idgen__seq_rec_t *r) {
  assert_int_equal(r->claimed, r->issued + r->given + r->lost + in_hand(r));
}

static void roundtrip(const idgen__seq_rec_t *r) {
  static char buf[IDGEN__SEQ_TEXT_MAX], again[IDGEN__SEQ_TEXT_MAX];
  static idgen__seq_rec_t back;
  char err[256];
  int n = idgen__seq_rec_format(r, buf, sizeof buf);
  assert_true(n > 0);
  assert_int_equal(idgen__seq_rec_parse(buf, (size_t)n, &back, err, sizeof err), 0);
  assert_int_equal(idgen__seq_rec_format(&back, again, sizeof again), n);
  assert_memory_equal(buf, again, (size_t)n);
}

static void test_record_text(void **state) {
  (void)state;
  idgen__seq_rec_t r;
  char err[256];
  const char *ok = "idgen-seq v1 next=101 gen=2 claimed=100 issued=10 given=0 lost=40 strict=0 "
                   "owner=0\nholder gen=2 expires_ms=5000 lo=51 hi=101 claimed=50 issued=0 "
                   "rate=3 who=h:1:ab\n";
  assert_int_equal(idgen__seq_rec_parse(ok, strlen(ok), &r, err, sizeof err), 0);
  assert_int_equal(r.n, 1);
  assert_int_equal(r.h[0].hi, 101);
  roundtrip(&r);
  const char *bad[] = {
      "",
      "idgen-seq v1 next=1 gen=0 claimed=0 issued=0 given=0 lost=0 strict=0 owner=0",
      "idgen-seq v1 next=01 gen=0 claimed=0 issued=0 given=0 lost=0 strict=0 owner=0\n",
      "idgen-seq v1 next=1 gen=0 claimed=5 issued=0 given=0 lost=0 strict=0 owner=0\n",
      "idgen-seq v1 next=1 gen=0 claimed=0 issued=0 given=0 lost=0 strict=2 owner=0\n",
      "idgen-seq v1 next=1 gen=0 claimed=0 issued=0 given=0 lost=0 strict=0 owner=0 x=1\n",
      ("idgen-seq v1 next=1 gen=1 claimed=0 issued=0 given=0 lost=0 strict=0 owner=0\n"
       "holder gen=1 expires_ms=1 lo=1 hi=1 claimed=0 issued=0 rate=0 who=a b\n"),
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    assert_int_equal(idgen__seq_rec_parse(bad[i], strlen(bad[i]), &r, err, sizeof err),
                     IDGEN_EREGISTRY);
    assert_non_null(strstr(err, "sequence record"));
  }
}

static void test_record_fencing(void **state) {
  (void)state;
  static idgen__seq_rec_t r;
  uint64_t a, b, lo, hi, given;
  char err[256];
  idgen__seq_rec_init(&r);
  assert_int_equal(idgen__seq_register(&r, "a:1:x", 1000, 100, 0, NULL, &a, err, sizeof err), 0);
  assert_int_equal(idgen__seq_register(&r, "b:1:x", 1000, 100, 0, NULL, &b, err, sizeof err), 0);
  assert_int_equal(a, 1);
  assert_int_equal(b, 2);
  assert_int_equal(idgen__seq_claim(&r, a, 10, 1010, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(lo, 1);
  assert_int_equal(hi, 11);
  identity(&r);
  /* b renews; a is reaped at 1111: its 10 numbers, 4 reported issued, lost. */
  assert_int_equal(idgen__seq_renew(&r, b, 1100, 100, 0, 0, err, sizeof err), 0);
  assert_int_equal(idgen__seq_renew(&r, a, 1100, 100, 4, 0, err, sizeof err), 0);
  assert_int_equal(idgen__seq_renew(&r, b, 1150, 100, 0, 0, err, sizeof err), 0);
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1201, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(r.lost, 6);
  assert_int_equal(r.issued, 4);
  identity(&r);
  /* a claims after it was reaped: fenced. */
  assert_int_equal(idgen__seq_claim(&r, a, 10, 1202, 100, 4, 0, &lo, &hi, err, sizeof err),
                   IDGEN_ELEASE);
  assert_non_null(strstr(err, "reaped"));
  /* It registers again reporting 3 more issued since its last report. */
  idgen__seq_late_t late = {a, 3};
  uint64_t a2;
  assert_int_equal(idgen__seq_register(&r, "a:1:x", 1203, 100, 0, &late, &a2, err, sizeof err), 0);
  assert_int_equal(a2, 3);
  assert_int_equal(r.lost, 3);
  assert_int_equal(r.issued, 7);
  identity(&r);
  roundtrip(&r);
  /* Give-back only while nobody claimed after: a2 claims [21,31), b then
   * [31,41); a2's close gives nothing back, b's gives its rest. */
  assert_int_equal(idgen__seq_claim(&r, a2, 10, 1204, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(lo, 21);
  uint64_t bl, bh;
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1205, 100, 0, 0, &bl, &bh, err, sizeof err), 0);
  uint64_t u = 25;
  assert_int_equal(idgen__seq_close(&r, a2, 1206, 100, &u, &hi, 1, 4, 0, &given, err, sizeof err),
                   0);
  assert_int_equal(given, 0);
  identity(&r);
  u = 33;
  assert_int_equal(idgen__seq_close(&r, b, 1207, 100, &u, &bh, 1, 12, 0, &given, err, sizeof err),
                   0);
  assert_int_equal(given, 8);
  assert_int_equal(r.next, 33);
  assert_int_equal(r.n, 0);
  identity(&r);
  roundtrip(&r);
}

static void test_record_strict_set(void **state) {
  (void)state;
  static idgen__seq_rec_t r;
  uint64_t a, b, lo, hi;
  char err[256];
  idgen__seq_rec_init(&r);
  assert_int_equal(idgen__seq_register(&r, "a:1:x", 1000, 100, 1, NULL, &a, err, sizeof err), 0);
  assert_int_equal(r.owner, a);
  assert_int_equal(idgen__seq_register(&r, "b:1:x", 1050, 100, 1, NULL, &b, err, sizeof err),
                   IDGEN_ELEASE);
  assert_non_null(strstr(err, "a:1:x"));
  /* Expired at 1100, in quarantine until 1200. */
  assert_int_equal(idgen__seq_register(&r, "b:1:x", 1150, 100, 1, NULL, &b, err, sizeof err),
                   IDGEN_ELEASE);
  assert_int_equal(idgen__seq_register(&r, "b:1:x", 1201, 100, 0, NULL, &b, err, sizeof err), 0);
  assert_int_equal(r.strict, 0); /* nobody live: the newcomer decides */
  assert_int_equal(idgen__seq_register(&r, "c:1:x", 1202, 100, 1, NULL, &a, err, sizeof err),
                   IDGEN_EINVAL);
  /* set: forward only. */
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1203, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(idgen__seq_set(&r, 5, err, sizeof err), IDGEN_ERANGE);
  assert_non_null(strstr(err, "11"));
  assert_int_equal(idgen__seq_set(&r, 1000, err, sizeof err), 0);
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1204, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(lo, 1000);
  /* The end of the counter. */
  assert_int_equal(idgen__seq_set(&r, IDGEN_SEQ_COUNTER_MAX - 4, err, sizeof err), 0);
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1205, 100, 0, 0, &lo, &hi, err, sizeof err), 0);
  assert_int_equal(hi - lo, 5);
  assert_int_equal(idgen__seq_claim(&r, b, 10, 1206, 100, 0, 0, &lo, &hi, err, sizeof err),
                   IDGEN_ERANGE);
  identity(&r);
}

/* ---- the holder on file: -------------------------------------------------- */

typedef struct fake_clock {
  _Atomic int64_t ns;
} fake_clock_t;

static int64_t fake_now(void *ctx) { return atomic_load(&((fake_clock_t *)ctx)->ns); }
static void fake_sleep(void *ctx, int64_t ns) { atomic_fetch_add(&((fake_clock_t *)ctx)->ns, ns); }

static char dir[64];
static idgen_registry_t *reg;

static int setup(void **state) {
  (void)state;
  reg = tu_tmp_registry(dir, sizeof dir, "seq");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return tu_tmp_registry_free(reg, dir);
}

static void load(const char *key, idgen__seq_rec_t *rec) { tu_seq_load(reg, key, rec); }

static void test_seq_step_adapts(void **state) {
  (void)state;
  fake_clock_t fc = {1800000000000000000};
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.no_thread = 1;
  set.min_step = 10;
  set.max_step = 80;
  set.step = 10;
  set.segment_target_ms = 1000;
  set.ttl_ms = 86400000; /* no renewals without a thread: it must not expire */
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "steps", &set, err, sizeof err), 0);
  uint64_t n, prev = 0;
  idgen_seq_stats_t st;
  /* Ranges used up at once: the step doubles to max_step. */
  for (int i = 0; i < 400; i++) {
    assert_int_equal(idgen_seq_next(s, &n), 0);
    assert_true(n > prev);
    prev = n;
  }
  idgen_seq_stats(s, &st);
  assert_int_equal(st.step, 80);
  /* Ranges that last 3 s and more: it halves back to min_step. */
  for (int i = 0; i < 6 * 80; i++) {
    fake_sleep(&fc, 3000000000);
    assert_int_equal(idgen_seq_next(s, &n), 0);
    assert_true(n > prev);
    prev = n;
  }
  idgen_seq_stats(s, &st);
  assert_int_equal(st.step, 10);
  idgen_seq_close(s);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  load("steps", rec);
  assert_int_equal(rec->n, 0);
  assert_int_equal(rec->issued, 880);
  assert_int_equal(rec->claimed, rec->issued + rec->given + rec->lost);
  assert_int_equal(rec->lost, 0);
  free(rec);
}

static void test_seq_prefetch_no_wait(void **state) {
  (void)state;
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = 1000;
  set.step = 1000;
  set.max_step = 1000;
  set.wait_ms = -1; /* a caller that would wait fails instead */
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "prefetch", &set, err, sizeof err), 0);
  uint64_t n, prev = 0;
  for (int r = 0; r < 20; r++) {
    /* Use 3/4 of a range, then let the claim ahead (woken at 1/4) land. */
    for (int i = 0; i < 750; i++) {
      assert_int_equal(idgen_seq_next(s, &n), 0);
      assert_true(n > prev);
      prev = n;
    }
    idgen_seq_stats_t st;
    for (int t = 0; t < 2000; t++) {
      idgen_seq_stats(s, &st);
      if (st.in_hand >= 1250)
        break;
      usleep(1000);
    }
    assert_true(st.in_hand >= 1250);
    for (int i = 0; i < 250; i++) {
      assert_int_equal(idgen_seq_next(s, &n), 0);
      prev = n;
    }
  }
  idgen_seq_close(s);
}

static void test_seq_registry_down(void **state) {
  (void)state;
  if (geteuid() == 0) {
    /* root writes through permissions: the fault is a file where the
     * directory of records goes instead. */
  }
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = 100;
  set.step = 100;
  set.max_step = 100;
  set.wait_ms = 300;
  idgen_seq_t *s;
  char err[256], seqdir[128], moved[160];
  assert_int_equal(idgen_seq_open(&s, reg, "down", &set, err, sizeof err), 0);
  uint64_t n;
  assert_int_equal(idgen_seq_next(s, &n), 0);
  assert_int_equal(n, 1);
  /* The registry breaks: its seq directory replaced by a file. */
  snprintf(seqdir, sizeof seqdir, "%s/seq", dir);
  snprintf(moved, sizeof moved, "%s/seq.away", dir);
  assert_int_equal(rename(seqdir, moved), 0);
  FILE *f = fopen(seqdir, "w");
  assert_non_null(f);
  fclose(f);
  /* The ranges in hand are served (two: the first and the one claimed
   * ahead, if it landed), then a clear error; in batches of 7, the one
   * that fails fills a prefix of out[] and leaves the rest as it was. */
  int rc = 0, got = 1;
  uint64_t last = n, out[7];
  for (;;) {
    memset(out, 0, sizeof out);
    rc = idgen_seq_next_n(s, out, 7);
    size_t k = 0;
    for (; k < 7 && out[k] != 0; k++) {
      assert_true(out[k] > last);
      last = out[k];
    }
    for (size_t j = k; j < 7; j++)
      assert_int_equal(out[j], 0);
    got += (int)k;
    if (rc != 0)
      break;
    assert_int_equal(k, 7);
  }
  assert_true(got >= 100 && got <= 200);
  assert_int_equal(rc, IDGEN_EREGISTRY);
  idgen_seq_stats_t st;
  idgen_seq_stats(s, &st);
  assert_true(st.claim_failures > 0);
  assert_true(st.failing);
  assert_true(st.reason[0] != '\0');
  /* Back up: it goes on. */
  unlink(seqdir);
  assert_int_equal(rename(moved, seqdir), 0);
  /* The thread retries within its backoff (at most 2 s): some call within
   * 30 of 300 ms each gets a number. */
  for (int i = 0; i < 30 && (rc = idgen_seq_next(s, &n)) != 0; i++)
    ;
  assert_int_equal(rc, 0);
  idgen_seq_close(s);
}

typedef struct thr_arg {
  idgen_seq_t *s;
  uint64_t *out;
  int n;
} thr_arg_t;

static void *taker(void *p) {
  thr_arg_t *a = p;
  for (int i = 0; i < a->n; i++)
    if (idgen_seq_next(a->s, &a->out[i]) < 0)
      return (void *)1;
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void threads(int nt) {
  enum { PER = 300000 };
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = 1000;
  set.step = 1000;
  idgen_seq_t *s;
  char err[256], name[32];
  snprintf(name, sizeof name, "threads%d", nt);
  assert_int_equal(idgen_seq_open(&s, reg, name, &set, err, sizeof err), 0);
  uint64_t *all = malloc(sizeof *all * PER * (size_t)nt);
  pthread_t th[4];
  thr_arg_t a[4];
  for (int t = 0; t < nt; t++) {
    a[t] = (thr_arg_t){s, all + (size_t)t * PER, PER};
    assert_int_equal(pthread_create(&th[t], NULL, taker, &a[t]), 0);
  }
  for (int t = 0; t < nt; t++) {
    void *r;
    pthread_join(th[t], &r);
    assert_null(r);
    for (int i = 1; i < PER; i++)
      assert_true(a[t].out[i] > a[t].out[i - 1]);
  }
  qsort(all, (size_t)PER * (size_t)nt, sizeof *all, cmp_u64);
  for (size_t i = 1; i < (size_t)PER * (size_t)nt; i++)
    assert_true(all[i] != all[i - 1]);
  free(all);
  idgen_seq_close(s);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  load(name, rec);
  assert_int_equal(rec->issued, (uint64_t)PER * (uint64_t)nt);
  assert_int_equal(rec->claimed, rec->issued + rec->given + rec->lost);
  free(rec);
}

static void test_seq_threads(void **state) {
  (void)state;
  threads(2);
  threads(4);
}

static void test_seq_next_n(void **state) {
  (void)state;
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = 100;
  set.step = 100;
  set.max_step = 100;
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "batches", &set, err, sizeof err), 0);
  uint64_t out[250], prev = 0, total = 0;
  for (int r = 0; r < 40; r++) {
    size_t k = (size_t)(r % 7) * 40 + 1;
    if (k > 250)
      k = 250;
    assert_int_equal(idgen_seq_next_n(s, out, k), 0);
    for (size_t i = 0; i < k; i++) {
      assert_true(out[i] > prev);
      prev = out[i];
    }
    total += k;
  }
  idgen_seq_close(s);
  idgen__seq_rec_t *rec = malloc(sizeof *rec);
  load("batches", rec);
  assert_int_equal(rec->issued, total);
  assert_int_equal(rec->claimed, rec->issued + rec->given + rec->lost);
  free(rec);
}

static void test_seq_fork(void **state) {
  (void)state;
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "forked", NULL, err, sizeof err), 0);
  uint64_t n;
  assert_int_equal(idgen_seq_next(s, &n), 0);
  pid_t pid = fork();
  if (pid == 0)
    _exit(idgen_seq_next(s, &n) == IDGEN_EFORKED ? 0 : 1);
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(idgen_seq_next(s, &n), 0);
  /* A child's close touches neither the parent's thread nor its ranges. */
  pid = fork();
  if (pid == 0) {
    idgen_seq_close(s);
    _exit(0);
  }
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(idgen_seq_next(s, &n), 0);
  idgen_seq_close(s);
}

static int list_cb(void *ctx, const idgen_seq_row_t *row) {
  int *n = ctx;
  (*n)++;
  assert_true(row->claimed == row->issued + row->given_back + row->lost || row->nholders > 0);
  return 0;
}

static void test_seq_list_set_static(void **state) {
  (void)state;
  char err[256];
  int n = 0;
  assert_int_equal(idgen_seq_set(reg, "fresh", 500, err, sizeof err), 0);
  assert_int_equal(idgen_seq_set(reg, "fresh", 400, err, sizeof err), IDGEN_ERANGE);
  assert_non_null(strstr(err, "500"));
  idgen_seq_t *s;
  assert_int_equal(idgen_seq_open(&s, reg, "fresh", NULL, err, sizeof err), 0);
  uint64_t v;
  assert_int_equal(idgen_seq_next(s, &v), 0);
  assert_int_equal(v, 500);
  idgen_seq_close(s);
  assert_int_equal(idgen_seq_list(reg, list_cb, &n, err, sizeof err), 0);
  assert_true(n >= 1);
  assert_int_equal(idgen_seq_open(&s, reg, "Bad", NULL, err, sizeof err), IDGEN_EINVAL);
  idgen_registry_t *st;
  assert_int_equal(idgen_registry_open(&st, "static", err, sizeof err), 0);
  assert_int_equal(idgen_seq_open(&s, st, "x", NULL, err, sizeof err), IDGEN_EINVAL);
  idgen_registry_close(st);
}

static void test_seq_strict(void **state) {
  (void)state;
  fake_clock_t fc = {1800000000000000000};
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.no_thread = 1;
  set.strict = 1;
  set.ttl_ms = 1000;
  idgen_seq_t *a, *b;
  char err[256];
  assert_int_equal(idgen_seq_open(&a, reg, "strict", &set, err, sizeof err), 0);
  uint64_t n;
  assert_int_equal(idgen_seq_next(a, &n), 0);
  assert_int_equal(idgen_seq_open(&b, reg, "strict", &set, err, sizeof err), IDGEN_ELEASE);
  /* Past its validity by its own clock: it stops. */
  fake_sleep(&fc, 900000000);
  assert_int_equal(idgen_seq_next(a, &n), IDGEN_ELEASE);
  idgen_seq_close(a);
  assert_int_equal(idgen_seq_open(&b, reg, "strict", &set, err, sizeof err), 0);
  assert_int_equal(idgen_seq_next(b, &n), 0);
  idgen_seq_close(b);
}

/* The cursor's epoch is 24 bits; a thread's cached range is keyed by the
 * holder's stamp for the epoch's wrap.  A thread that cached a range of one
 * wrap, then takes when the cursor is at the same 24-bit epoch of the
 * next wrap (reached by advancing, or by leaving the ranges in hand, as a
 * fenced holder does) gets a new number, not its cached range's again. */
typedef struct wrap_arg {
  idgen_seq_t *s;
  pthread_barrier_t *bar;
  uint64_t out[3][3];
  int rc;
} wrap_arg_t;

static void *wrap_taker(void *p) {
  wrap_arg_t *a = p;
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < 3; i++)
      if (idgen_seq_next(a->s, &a->out[round][i]) < 0)
        a->rc = -1;
    pthread_barrier_wait(a->bar);
    pthread_barrier_wait(a->bar);
  }
  return NULL;
}

static void test_seq_epoch_wrap(void **state) {
  (void)state;
  /* MAIN: from epoch 2W-2, the ranges of 2W-1, 2W, 2W+1 and one number of
   * 2W+2's, leaving the cursor at epoch 2 of wrap 2. */
  enum { STEP = 4, MAIN = 3 * STEP + 1 };
  const uint64_t WRAP = UINT64_C(1) << 24;
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = STEP;
  set.step = STEP;
  set.max_step = STEP;
  set.no_thread = 1;
  idgen_seq_t *s;
  char err[256];
  assert_int_equal(idgen_seq_open(&s, reg, "wrap", &set, err, sizeof err), 0);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  wrap_arg_t a = {.s = s, .bar = &bar};
  pthread_t th;
  uint64_t all[9 + MAIN];
  size_t n = 0;
  assert_int_equal(pthread_create(&th, NULL, wrap_taker, &a), 0);
  /* Round 0: the thread caches the range of epoch 1 (the first claim). */
  pthread_barrier_wait(&bar);
  /* Round 1: straight to epoch 1 of wrap 1, no range in hand (as a fenced
   * holder leaves its ranges); the thread's next take lands there. */
  idgen__seq_test_jump(s, WRAP + 1);
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  /* Round 2: through the end of wrap 1 by advancing, main taking, to epoch
   * 2 of wrap 2 (the thread cached epoch 2 of wrap 1 in round 1). */
  idgen__seq_test_jump(s, 2 * WRAP - 2);
  for (int i = 0; i < MAIN; i++) {
    assert_int_equal(idgen_seq_next(s, &all[n]), 0);
    if (n > 0)
      assert_true(all[n] > all[n - 1]);
    n++;
  }
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  pthread_barrier_wait(&bar);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&bar);
  assert_int_equal(a.rc, 0);
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < 3; i++) {
      if (r + i > 0) {
        uint64_t prev = i > 0 ? a.out[r][i - 1] : a.out[r - 1][2];
        assert_true(a.out[r][i] > prev);
      }
      all[n++] = a.out[r][i];
    }
  qsort(all, n, sizeof *all, cmp_u64);
  for (size_t i = 1; i < n; i++)
    assert_true(all[i] != all[i - 1]);
  idgen_seq_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_record_text),
      cmocka_unit_test(test_record_fencing),
      cmocka_unit_test(test_record_strict_set),
      cmocka_unit_test_setup_teardown(test_seq_step_adapts, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_prefetch_no_wait, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_registry_down, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_threads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_next_n, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_fork, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_list_set_static, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_strict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_seq_epoch_wrap, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
