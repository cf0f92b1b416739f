/*
 * seq_down.c -- a sequence's holders while the registry's server is down
 * for longer than their ranges last (seq_down_test.sh):
 *
 *   seq_down URI ADDR DOWN_CMD UP_CMD [failover]
 *
 * Two holders of sequence "down" (each with a registry handle of its own,
 * min_step = max_step = 1,000, wait_ms 300) are taken from by a thread each
 * at about 500 numbers/s, so a range lasts about 2 s.  After 2.5 s, DOWN_CMD
 * (sh -c) stops the server and the registry stays down for 6 s after it
 * returned; then UP_CMD starts it again.  What must hold:
 *   - while down, each holder is still served from the ranges in hand (it
 *     takes numbers once its claims fail), then next() fails with
 *     IDGEN_EREGISTRY, and its stats say failing = 1, claim_failures > 0,
 *     a reason naming the registry (ADDR, its host:port), and once, with
 *     numbers in hand, how long they last (lasts_ms >= 0);
 *   - after UP_CMD, both are served again within 30 s (the claims resume),
 *     and failing goes back to 0;
 *   - every number taken, before and after, by both: no duplicates, each
 *     holder's strictly increasing.
 * With `failover`, DOWN_CMD stops one member of a cluster that goes on
 * without it (an etcd leader of three): the holders are served throughout,
 * no next() fails, and claims go on during those 6 s.
 * The accounting is checked afterwards by seq_list_check.  Prints what it
 * saw; exit status 0, or 1 with a message on stderr.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"

enum { HOLDERS = 2, CAP = 1 << 16 };

typedef struct taker {
  idgen_registry_t *r;
  idgen_seq_t *s;
  uint64_t v[CAP];
  size_t n;
  size_t after_down;    /* numbers taken while its claims failed, before its first error */
  int errors, first_rc; /* next()'s failures, the first one's code */
  size_t after_up;      /* numbers taken after UP_CMD returned */
  char why[400];        /* what went wrong, if anything */
} taker_t;

static atomic_int phase; /* 0 up, 1 down, 2 up again, 3 stop */
static taker_t tk[HOLDERS];

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *take(void *p) {
  taker_t *t = p;
  int ph;
  while ((ph = atomic_load(&phase)) != 3) {
    uint64_t x;
    int rc = idgen_seq_next(t->s, &x);
    if (rc == 0) {
      if (t->n == CAP) {
        snprintf(t->why, sizeof t->why, "more than %d numbers", CAP);
        break;
      }
      if (t->n > 0 && x <= t->v[t->n - 1]) {
        snprintf(t->why, sizeof t->why, "not increasing: %" PRIu64 " after %" PRIu64, x,
                 t->v[t->n - 1]);
        break;
      }
      t->v[t->n++] = x;
      if (ph == 1 && t->errors == 0) {
        idgen_seq_stats_t st;
        idgen_seq_stats(t->s, &st);
        t->after_down += st.claim_failures > 0;
      }
      if (ph == 2)
        t->after_up++;
      usleep(2000);
      continue;
    }
    if (t->errors++ == 0)
      t->first_rc = rc;
    /* The first error is the registry's; once it is back (a renewal went
     * through, the claim not yet), "not yet" (IDGEN_EAGAIN) is right too. */
    if (rc != IDGEN_EREGISTRY && !(rc == IDGEN_EAGAIN && t->errors > 1)) {
      snprintf(t->why, sizeof t->why, "next: %s, not IDGEN_EREGISTRY", idgen_strerror(rc));
      break;
    }
    if (ph == 0) {
      snprintf(t->why, sizeof t->why, "next failed before the registry went down");
      break;
    }
  }
  return NULL;
}

static int fail(const char *what, const char *detail) {
  fprintf(stderr, "seq_down: %s%s\n", what, detail);
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* DOWN_CMD, run beside the watch: its exit status, and when it returned. */
typedef struct down_run {
  const char *cmd;
  int rc;
  atomic_llong done_ms; /* 0 until it returned */
} down_run_t;

static void *run_down(void *p) {
  down_run_t *d = p;
  d->rc = system(d->cmd);
  atomic_store(&d->done_ms, (long long)mono_ms());
  return NULL;
}

/* Watches both holders' stats from DOWN_CMD's start until 6 s after it
 * returned: 1 for each holder whose stats once showed failing with a
 * reason naming addr and, with numbers in hand, lasts_ms. */
static void watch_down(const char *addr, down_run_t *d, int seen_fail[], int seen_lasts[]) {
  while (atomic_load(&d->done_ms) == 0 || mono_ms() < atomic_load(&d->done_ms) + 6000) {
    for (int i = 0; i < HOLDERS; i++) {
      idgen_seq_stats_t st;
      idgen_seq_stats(tk[i].s, &st);
      if (st.failing && st.claim_failures > 0 && strstr(st.reason, addr) != NULL && !seen_fail[i]) {
        seen_fail[i] = 1;
        printf("holder %d down: failing=1 claim_failures=%" PRIu64 " in_hand=%" PRIu64
               " rate=%.0f/s lasts_ms=%" PRId64 " reason: %s\n",
               i, st.claim_failures, st.in_hand, st.rate, st.lasts_ms, st.reason);
      }
      if (st.failing && st.in_hand > 0 && st.lasts_ms >= 0 && !seen_lasts[i]) {
        seen_lasts[i] = 1;
        printf("holder %d down: in_hand=%" PRIu64 " lasts_ms=%" PRId64 "\n", i, st.in_hand,
               st.lasts_ms);
      }
    }
    usleep(5000);
  }
}

/* What went wrong with a holder while the registry was down, or NULL. */
static const char *down_why(const taker_t *t, const idgen_seq_stats_t *st, int seen_fail,
                            int seen_lasts) {
  if (t->after_down == 0)
    return "served nothing from the ranges in hand once down";
  if (t->errors == 0)
    return "never failed while the registry was down";
  if (!seen_fail)
    return "stats never showed failing=1, claim_failures>0 and a reason naming the registry";
  if (!seen_lasts)
    return "stats never showed lasts_ms with numbers in hand";
  if (t->after_up == 0)
    return "not served again after the registry came back";
  return st->failing ? "still failing after the registry came back" : NULL;
}

/* The same while one member of a cluster that goes on without it was down. */
static const char *failover_why(const taker_t *t, const idgen_seq_stats_t *st, uint64_t claims) {
  if (t->errors != 0)
    return "next() failed while the cluster had a quorum";
  if (claims == 0)
    return "no claim while the member was down";
  if (t->after_up == 0)
    return "not served after the member came back";
  return st->failing ? "still failing after the member came back" : NULL;
}

int main(int argc, char **argv) {
  if (argc != 5 && !(argc == 6 && strcmp(argv[5], "failover") == 0))
    return fail("usage: seq_down URI ADDR DOWN_CMD UP_CMD [failover]", "");
  int failover = argc == 6;
  const char *uri = argv[1], *addr = argv[2];
  char err[600];
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = set.max_step = set.step = 1000;
  set.wait_ms = 300;
  set.ttl_ms = 3000; /* renewed (and the rate measured) each second */
  for (int i = 0; i < HOLDERS; i++)
    if (idgen_registry_open(&tk[i].r, uri, err, sizeof err) < 0 ||
        idgen_seq_open(&tk[i].s, tk[i].r, "down", &set, err, sizeof err) < 0)
      return fail("open: ", err);
  pthread_t th[HOLDERS];
  for (int i = 0; i < HOLDERS; i++)
    pthread_create(&th[i], NULL, take, &tk[i]);
  usleep(2500000);
  atomic_store(&phase, 1);
  uint64_t claims_down[HOLDERS], claims_up[HOLDERS];
  for (int i = 0; i < HOLDERS; i++) {
    idgen_seq_stats_t st;
    idgen_seq_stats(tk[i].s, &st);
    claims_down[i] = st.claims;
  }
  /* watched from the moment the server is told to stop: a stop can take
   * longer than the ranges in hand last on a busy machine */
  down_run_t dr = {.cmd = argv[3]};
  pthread_t dth;
  pthread_create(&dth, NULL, run_down, &dr);
  int seen_fail[HOLDERS] = {0}, seen_lasts[HOLDERS] = {0};
  watch_down(addr, &dr, seen_fail, seen_lasts);
  pthread_join(dth, NULL);
  if (dr.rc != 0)
    return fail("failed: ", argv[3]);
  for (int i = 0; i < HOLDERS; i++) {
    idgen_seq_stats_t st;
    idgen_seq_stats(tk[i].s, &st);
    claims_up[i] = st.claims;
  }
  if (system(argv[4]) != 0)
    return fail("failed: ", argv[4]);
  atomic_store(&phase, 2);
  int64_t give_up = mono_ms() + 30000;
  while (mono_ms() < give_up && (tk[0].after_up < 500 || tk[1].after_up < 500))
    usleep(10000);
  atomic_store(&phase, 3);
  for (int i = 0; i < HOLDERS; i++)
    pthread_join(th[i], NULL);
  int bad = 0;
  size_t total = 0;

  for (int i = 0; i < HOLDERS; i++) {
    taker_t *t = &tk[i];
    idgen_seq_stats_t st;
    idgen_seq_stats(t->s, &st);
    printf("holder %d: numbers=%zu after_down=%zu errors=%d after_up=%zu claims=%" PRIu64
           " (%" PRIu64 " while down) claim_failures=%" PRIu64 " failing=%d\n",
           i, t->n, t->after_down, t->errors, t->after_up, st.claims, claims_up[i] - claims_down[i],
           st.claim_failures, st.failing);
    const char *why = t->why[0]  ? t->why
                      : failover ? failover_why(t, &st, claims_up[i] - claims_down[i])
                                 : down_why(t, &st, seen_fail[i], seen_lasts[i]);
    if (why != NULL) {
      fprintf(stderr, "seq_down: holder %d: %s\n", i, why);
      bad = 1;
    }
    total += t->n;
  }
  uint64_t *all = malloc(sizeof *all * (total ? total : 1));
  size_t k = 0;
  for (int i = 0; i < HOLDERS; i++) {
    memcpy(all + k, tk[i].v, sizeof *all * tk[i].n);
    k += tk[i].n;
  }
  qsort(all, total, sizeof *all, cmp_u64);
  size_t dups = 0;
  for (size_t i = 1; i < total; i++)
    dups += all[i] == all[i - 1];
  free(all);
  printf("numbers=%zu duplicates=%zu\n", total, dups);
  if (dups)
    bad = fail("duplicates", "");
  for (int i = 0; i < HOLDERS; i++) {
    idgen_seq_close(tk[i].s);
    idgen_registry_close(tk[i].r);
  }
  printf("ISSUED=%zu\n", total); /* for seq_list_check */
  return bad;
}
