/*
 * seq_claims.c -- what a sequence's claims cost (bench/seq_claims.sh runs it
 * against file:, postgres:// and etcd://), and how the adaptive step
 * settles.
 *
 *   seq_claims claims URI SECONDS THREADS
 *       THREADS holders of one sequence (each with a registry handle of its
 *       own, as processes would have), min_step = max_step = 1 and no
 *       background thread, so that every next() is one claim (one load and
 *       one conditional store), for SECONDS: prints one line of key=value,
 *       claims_per_s (all holders), the claim latency's median, p99 and
 *       max (us), and the conflicts (claims that lost the conditional write
 *       to another holder and were retried: claims taken more than once).
 *   seq_claims steps [SEGMENT_TARGET_MS]
 *       a holder on a file: registry in a temporary directory with an
 *       injected clock (no sleeping: simulated time), taking numbers at
 *       1,000/s, then 100,000/s, then 10,000,000/s for 60 simulated seconds
 *       each (SEGMENT_TARGET_MS default 1,000; min_step 1,000, max_step
 *       10^8): prints the step after each claim, and for each phase the
 *       claims it took until a step whose range lasts between the target
 *       and twice it (the band where the step stops changing), and the
 *       steps seen in the phase's second half (one: settled).
 * Exit status 0, or 1 with a message on stderr.
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

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* ---- claims per second ------------------------------------------------------ */

enum { LAT_MAX = 1 << 20 };

typedef struct holder {
  idgen_registry_t *r;
  idgen_seq_t *s;
  int64_t *lat;
  size_t n;
  int rc;
  const char *uri;
  char name[32];
  int64_t end_ns;
} holder_t;

static pthread_barrier_t go;

static void *claimer(void *p) {
  holder_t *h = p;
  pthread_barrier_wait(&go);
  while (mono_ns() < h->end_ns && h->n < LAT_MAX) {
    uint64_t x;
    int64_t t0 = mono_ns();
    if ((h->rc = idgen_seq_next(h->s, &x)) < 0)
      break;
    h->lat[h->n++] = mono_ns() - t0;
  }
  return NULL;
}

static int claims(const char *uri, double seconds, int threads) {
  holder_t *h = calloc((size_t)threads, sizeof *h);
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  char err[600], name[48];
  snprintf(name, sizeof name, "claims%ld", (long)getpid());
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.min_step = set.max_step = set.step = 1;
  set.no_thread = 1;
  set.ttl_ms = 60000;
  for (int i = 0; i < threads; i++) {
    h[i].lat = malloc(sizeof *h[i].lat * LAT_MAX);
    if (h[i].lat == NULL || idgen_registry_open(&h[i].r, uri, err, sizeof err) < 0 ||
        idgen_seq_open(&h[i].s, h[i].r, name, &set, err, sizeof err) < 0) {
      fprintf(stderr, "seq_claims: %s\n", h[i].lat ? err : "out of memory");
      return 1;
    }
  }
  /* one claim each first: the record exists, the connections are up */
  for (int i = 0; i < threads; i++) {
    uint64_t x;
    if (idgen_seq_next(h[i].s, &x) < 0) {
      fprintf(stderr, "seq_claims: the first claim failed\n");
      return 1;
    }
  }
  pthread_barrier_init(&go, NULL, (unsigned)threads);
  int64_t t0 = mono_ns();
  for (int i = 0; i < threads; i++) {
    h[i].end_ns = t0 + (int64_t)(seconds * 1e9);
    pthread_create(&th[i], NULL, claimer, &h[i]);
  }
  size_t total = 0;
  uint64_t claims_done = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(th[i], NULL);
    if (h[i].rc < 0) {
      fprintf(stderr, "seq_claims: next: %s\n", idgen_strerror(h[i].rc));
      return 1;
    }
    total += h[i].n;
  }
  double el = (double)(mono_ns() - t0) / 1e9;
  int64_t *all = malloc(sizeof *all * (total ? total : 1));
  size_t k = 0;
  for (int i = 0; i < threads; i++) {
    idgen_seq_stats_t st;
    idgen_seq_stats(h[i].s, &st);
    claims_done += st.claims - 1;
    memcpy(all + k, h[i].lat, sizeof *all * h[i].n);
    k += h[i].n;
  }
  qsort(all, total, sizeof *all, cmp_i64);
  printf("threads=%d seconds=%.2f claims=%" PRIu64 " claims_per_s=%.0f p50_us=%.1f "
         "p99_us=%.1f max_us=%.1f\n",
         threads, el, claims_done, (double)claims_done / el,
         total ? (double)all[total / 2] / 1e3 : 0, total ? (double)all[total * 99 / 100] / 1e3 : 0,
         total ? (double)all[total - 1] / 1e3 : 0);
  free(all);
  for (int i = 0; i < threads; i++) {
    idgen_seq_close(h[i].s);
    idgen_registry_close(h[i].r);
    free(h[i].lat);
  }
  free(h);
  free(th);
  return 0;
}

/* ---- the adaptive step under a simulated clock ------------------------------- */

typedef struct fake_clock {
  int64_t ns;
} fake_clock_t;

static int64_t fake_now(void *ctx) { return ((fake_clock_t *)ctx)->ns; }

static void fake_sleep(void *ctx, int64_t ns) { ((fake_clock_t *)ctx)->ns += ns; }

static int steps(int64_t target_ms) {
  static const double rates[] = {1e3, 1e5, 1e7};
  enum { PHASE_MS = 60000, BATCH_MAX = 10000 };
  char dir[] = "/tmp/idgen-seqclaims-XXXXXX", uri[128], err[600];
  if (mkdtemp(dir) == NULL)
    return 1;
  snprintf(uri, sizeof uri, "file:%s", dir);
  fake_clock_t fc = {1800000000000000000};
  idgen_clock_t clk = {fake_now, fake_sleep, &fc};
  idgen_seq_settings_t set;
  idgen_seq_settings_init(&set);
  set.clock = &clk;
  set.no_thread = 1;
  set.segment_target_ms = target_ms;
  set.ttl_ms = 86400000; /* no renewals without a thread */
  idgen_registry_t *r;
  idgen_seq_t *s;
  if (idgen_registry_open(&r, uri, err, sizeof err) < 0 ||
      idgen_seq_open(&s, r, "steps", &set, err, sizeof err) < 0) {
    fprintf(stderr, "seq_claims: %s\n", err);
    return 1;
  }
  static uint64_t out[BATCH_MAX];
  printf("segment_target_ms=%" PRId64 " min_step=%" PRIu64 " max_step=%" PRIu64 "\n", target_ms,
         set.min_step, set.max_step);
  uint64_t last_claims = 0;
  int rc = 0;
  for (size_t p = 0; p < sizeof rates / sizeof rates[0] && rc == 0; p++) {
    size_t batch = (size_t)(rates[p] / 1000); /* numbers per simulated ms */
    uint64_t first = last_claims, band_at = 0, seen[64];
    int nseen = 0;
    double target_s = (double)target_ms / 1000;
    printf("phase %zu: %.0f numbers/s\n", p + 1, rates[p]);
    for (int ms = 0; ms < PHASE_MS && rc == 0; ms++) {
      if ((rc = idgen_seq_next_n(s, out, batch)) < 0)
        break;
      fc.ns += 1000000;
      idgen_seq_stats_t st;
      idgen_seq_stats(s, &st);
      if (st.claims == last_claims)
        continue;
      double lasts = (double)st.step / rates[p];
      printf("  claim %" PRIu64 " at %.3f s: step now %" PRIu64 " (a range of it lasts %.3f s)\n",
             st.claims - first, (double)ms / 1000, st.step, lasts);
      if (band_at == 0 && lasts >= target_s && lasts <= 2 * target_s)
        band_at = st.claims - first;
      /* the steps of the phase's second half: where it settled, or cycles */
      if (ms >= PHASE_MS / 2 && nseen < 64) {
        int k = 0;
        while (k < nseen && seen[k] != st.step)
          k++;
        if (k == nseen)
          seen[nseen++] = st.step;
      }
      last_claims = st.claims;
    }
    printf("phase %zu: %.0f numbers/s: %" PRIu64 " claims; the step first in the band (a range "
           "lasting %g to %g s) after %" PRIu64 " claims; in the phase's second half",
           p + 1, rates[p], last_claims - first, target_s, 2 * target_s, band_at);
    for (int k = 0; k < nseen; k++)
      printf(" %" PRIu64, seen[k]);
    printf(nseen == 1 ? " (settled)\n" : " (%d steps: it cycles)\n", nseen);
  }
  if (rc < 0)
    fprintf(stderr, "seq_claims: next_n: %s\n", idgen_strerror(rc));
  idgen_seq_close(s);
  idgen_registry_close(r);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0)
    rc = -1;
  return rc < 0;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "claims") == 0)
    return claims(argv[2], atof(argv[3]), atoi(argv[4]) > 0 ? atoi(argv[4]) : 1);
  if (argc >= 2 && argc <= 3 && strcmp(argv[1], "steps") == 0)
    return steps(argc == 3 ? atoll(argv[2]) : 1000);
  fprintf(stderr, "usage: seq_claims claims URI SECONDS THREADS | steps [SEGMENT_TARGET_MS]\n");
  return 2;
}
