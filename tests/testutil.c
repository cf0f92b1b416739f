/*
 * testutil.c -- see testutil.h.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include "registry_int.h"
#include "seq_int.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

json_t *tu_vectors(void) {
  static json_t *v;
  if (v == NULL) {
    const char *path = getenv("IDGEN_VECTORS");
    json_error_t e;
    if (path == NULL)
      path = IDGEN_VECTORS_DEFAULT;
    v = json_load_file(path, 0, &e);
    if (v == NULL)
      fail_msg("cannot read %s: %s at line %d", path, e.text, e.line);
  }
  return v;
}

static int64_t fake_now(void *ctx) {
  tu_clock_t *c = ctx;
  return atomic_load(&c->ns);
}

static void fake_sleep(void *ctx, int64_t ns) {
  tu_clock_t *c = ctx;
  /* As a real sleep: none.  (Another thread's sleep may have moved the
   * clock past this one's end; adding it would step the clock back.) */
  if (ns <= 0)
    return;
  atomic_fetch_add(&c->slept_ns, ns);
  atomic_fetch_add(&c->sleeps, 1);
  atomic_fetch_add(&c->ns, ns);
}

void tu_clock_init(tu_clock_t *c, int64_t unix_ms) {
  atomic_init(&c->ns, unix_ms * 1000000);
  atomic_init(&c->slept_ns, 0);
  atomic_init(&c->sleeps, 0);
  c->clock = (idgen_clock_t){fake_now, fake_sleep, c};
}

void tu_clock_set_ms(tu_clock_t *c, int64_t unix_ms) { atomic_store(&c->ns, unix_ms * 1000000); }
void tu_clock_add_ms(tu_clock_t *c, int64_t ms) { atomic_fetch_add(&c->ns, ms * 1000000); }
int64_t tu_clock_ms(tu_clock_t *c) { return atomic_load(&c->ns) / 1000000; }

idgen_layout_t tu_layout(const char *spec) {
  idgen_layout_t l;
  char err[256];
  if (idgen_layout_parse(&l, spec, err, sizeof err) < 0)
    fail_msg("layout %s: %s", spec, err);
  return l;
}

idgen_snowflake_gen_t *tu_gen(const char *spec, const idgen_snowflake_settings_t *s) {
  idgen_layout_t l = tu_layout(spec);
  char err[256];
  idgen_snowflake_gen_t *g = NULL;
  int rc = idgen_snowflake_gen_new(&g, &l, s, err, sizeof err);
  if (rc < 0)
    fail_msg("idgen_snowflake_gen_new: %s (%s)", err, idgen_strerror(rc));
  return g;
}

void tu_alarm_every_us(void (*handler)(int), long us) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  assert_int_equal(sigaction(SIGALRM, &sa, NULL), 0);
  struct itimerval it = {{0, us}, {0, us}};
  assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
}

void tu_alarm_off(void) {
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  signal(SIGALRM, SIG_DFL);
}

size_t tu_scaled(size_t n) {
  const char *s = getenv("IDGEN_TEST_SCALE");
  size_t div = s ? (size_t)strtoul(s, NULL, 10) : 1;
  if (div < 1)
    div = 1;
  n /= div;
  return n < 1000 ? 1000 : n;
}

idgen_registry_t *tu_registry(const char *uri) {
  idgen_registry_t *r;
  char err[300];
  if (idgen_registry_open(&r, uri, err, sizeof err) != 0)
    fail_msg("open %s: %s", uri, err);
  return r;
}

idgen_registry_t *tu_tmp_registry(char *dir, size_t n, const char *tag) {
  char uri[128];
  snprintf(dir, n, "/tmp/idgen-%s-XXXXXX", tag);
  if (mkdtemp(dir) == NULL)
    fail_msg("mkdtemp %s: %s", dir, strerror(errno));
  snprintf(uri, sizeof uri, "file:%s", dir);
  return tu_registry(uri);
}

int tu_tmp_registry_free(idgen_registry_t *r, const char *dir) {
  char cmd[160];
  idgen_registry_close(r);
  chmod(dir, 0755);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

void tu_seq_load(idgen_registry_t *r, const char *key, idgen__seq_rec_t *rec) {
  char *text = NULL, err[256];
  uint64_t v;
  if (r->ops->seq_load(r, key, &text, &v, err, sizeof err) != 0 || text == NULL)
    fail_msg("load sequence %s: %s", key, text == NULL ? "no record" : err);
  int rc = idgen__seq_rec_parse(text, strlen(text), rec, err, sizeof err);
  free(text);
  if (rc != 0)
    fail_msg("sequence %s's record: %s", key, err);
}

uint64_t tu_worker(const idgen_lease_t *l) {
  idgen_lease_info_t i;
  idgen_lease_info(l, &i);
  return i.worker;
}

void tu_hold_until_eof(int fd) {
  char c;
  while (read(fd, &c, 1) > 0)
    ;
}

int64_t tu_mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void tu_sleep_ms(int64_t ms) {
  struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};
  while (nanosleep(&t, &t) != 0)
    ;
}

void tu_fork_holders(const char *uri, const idgen_lease_request_t *req, int n, int settle_ms,
                     const int ctl[2], pid_t *pids, uint64_t *workers) {
  int go[2] = {-1, -1}, (*fds)[2] = calloc((size_t)n, sizeof *fds);
  assert_non_null(fds);
  if (settle_ms >= 0)
    assert_int_equal(pipe(go), 0);
  for (int i = 0; i < n; i++) {
    assert_int_equal(pipe(fds[i]), 0);
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      idgen_registry_t *r;
      idgen_lease_t *l = NULL;
      char err[300] = "";
      uint64_t w = UINT64_MAX;
      int opened = idgen_registry_open(&r, uri, err, sizeof err) == 0;
      if (go[1] >= 0) {
        close(go[1]);
        tu_hold_until_eof(go[0]); /* all opened: go together */
      }
      if (opened && idgen_registry_acquire(r, req, &l, err, sizeof err) == 0)
        w = tu_worker(l);
      else
        fprintf(stderr, "holder %d: %s\n", i, err);
      if (write(fds[i][1], &w, sizeof w) != sizeof w)
        _exit(2);
      close(ctl[1]);
      tu_hold_until_eof(ctl[0]);
      _exit(0);
    }
    close(fds[i][1]);
  }
  if (go[0] >= 0) {
    close(go[0]);
    tu_sleep_ms(settle_ms);
    close(go[1]);
  }
  for (int i = 0; i < n; i++) {
    assert_int_equal(read(fds[i][0], &workers[i], sizeof workers[i]), sizeof workers[i]);
    close(fds[i][0]);
  }
  free(fds);
}

/* IDGEN_TEST_ONLY=NAME (a glob) runs only the test cases of that name, in
 * every unit test that links this file: `IDGEN_TEST_ONLY=test_step_back*
 * build/tests/test_snowflake`.  (test_registry_contract takes it as its
 * second argument too.) */
__attribute__((constructor)) static void tu_only(void) {
  const char *only = getenv("IDGEN_TEST_ONLY");
  if (only != NULL && only[0] != '\0')
    cmocka_set_test_filter(only);
}
