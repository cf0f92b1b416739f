/*
 * seq_worker.c -- the sequence tests' helper program (seq_procs_test.sh).
 *   seq_worker take URI NAME COUNT OUT [TTL_MS [PACE]]
 *       takes COUNT numbers of sequence NAME, checks that they strictly
 *       increase, writes them to OUT (binary, native order) and closes;
 *       PACE: sleeps 1 ms after every PACE numbers.
 *   seq_worker check URI NAME FILE...
 *       no number in two places, and the record's accounting:
 *       claimed = issued + given + lost, no holder left.
 * Exit status 0, or 1 with a message on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "registry_int.h"
#include "seq_int.h"

static int fail(const char *what) {
  fprintf(stderr, "seq_worker[%ld]: %s\n", (long)getpid(), what);
  return 1;
}

static int take(const char *uri, const char *name, long count, const char *out, long ttl,
                long pace) {
  idgen_registry_t *r;
  idgen_seq_t *s;
  idgen_seq_settings_t set;
  char err[512];
  idgen_seq_settings_init(&set);
  if (ttl > 0)
    set.ttl_ms = ttl;
  if (idgen_registry_open(&r, uri, err, sizeof err) < 0 ||
      idgen_seq_open(&s, r, name, &set, err, sizeof err) < 0)
    return fail(err);
  uint64_t *v = malloc(sizeof *v * (size_t)count);
  if (v == NULL)
    return fail("out of memory");
  for (long i = 0; i < count; i++) {
    int rc = idgen_seq_next(s, &v[i]);
    if (rc < 0)
      return fail(idgen_strerror(rc));
    if (i > 0 && v[i] <= v[i - 1])
      return fail("not increasing");
    if (pace > 0 && i % pace == pace - 1)
      usleep(1000);
  }
  idgen_seq_close(s);
  idgen_registry_close(r);
  FILE *f = fopen(out, "wb");
  if (f == NULL || fwrite(v, sizeof *v, (size_t)count, f) != (size_t)count || fclose(f) != 0)
    return fail("cannot write the numbers");
  free(v);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int check(const char *uri, const char *name, int nfiles, char **files) {
  uint64_t *all = NULL;
  size_t n = 0;
  for (int i = 0; i < nfiles; i++) {
    FILE *f = fopen(files[i], "rb");
    if (f == NULL)
      return fail(files[i]);
    uint64_t x;
    while (fread(&x, sizeof x, 1, f) == 1) {
      if ((n & (n - 1)) == 0 && (all = realloc(all, sizeof *all * (n ? 2 * n : 1))) == NULL)
        return fail("out of memory");
      all[n++] = x;
    }
    fclose(f);
  }
  qsort(all, n, sizeof *all, cmp_u64);
  size_t dups = 0;
  for (size_t i = 1; i < n; i++)
    dups += all[i] == all[i - 1];
  free(all);
  idgen_registry_t *r;
  char err[512], *text = NULL;
  uint64_t version;
  static idgen__seq_rec_t rec;
  if (idgen_registry_open(&r, uri, err, sizeof err) < 0 ||
      r->ops->seq_load(r, name, &text, &version, err, sizeof err) < 0 || text == NULL ||
      idgen__seq_rec_parse(text, strlen(text), &rec, err, sizeof err) < 0)
    return fail(err);
  printf("numbers=%zu duplicates=%zu next=%" PRIu64 " claimed=%" PRIu64 " issued=%" PRIu64
         " given=%" PRIu64 " lost=%" PRIu64 " holders=%d\n",
         n, dups, rec.next, rec.claimed, rec.issued, rec.given, rec.lost, rec.n);
  free(text);
  idgen_registry_close(r);
  if (dups)
    return fail("duplicates");
  if (rec.n != 0 || rec.claimed != rec.issued + rec.given + rec.lost)
    return fail("claimed != issued + given + lost, or a holder left");
  if (rec.issued != n)
    return fail("issued != the numbers taken");
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 6 && strcmp(argv[1], "take") == 0)
    return take(argv[2], argv[3], atol(argv[4]), argv[5], argc > 6 ? atol(argv[6]) : 0,
                argc > 7 ? atol(argv[7]) : 0);
  if (argc >= 5 && strcmp(argv[1], "check") == 0)
    return check(argv[2], argv[3], argc - 4, argv + 4);
  return fail("usage: seq_worker take URI NAME COUNT OUT [TTL_MS [PACE]] | check URI NAME FILE...");
}
