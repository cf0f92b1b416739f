/*
 * public_bench.c -- the cost of public IDs (make bench-public): ns per ID
 * and IDs per second of each call of the idgen_public_* API, one thread,
 * the median of 5 runs each, all in one run; and as a floor, a bare
 * EVP aes-256-ecb call on one block, and 10 dependent ones (what FF1's 10
 * rounds cost at the least for one ID).  Prints a markdown table.
 *
 *   public_bench [--runs N] [--ids N]
 */
#define _GNU_SOURCE
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idgen.h"

#define MAXRUNS 31

static int runs = 5;
static size_t nids = 200000; /* IDs per run of a single-ID call */
static volatile uint64_t sink;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void die(const char *what, int rc) {
  fprintf(stderr, "public_bench: %s: %s\n", what, idgen_strerror(rc));
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct bench_ctx {
  idgen_public_t *p64, *p128;
  uint64_t *ids, *pubs;
  uint8_t (*ids128)[16], (*pubs128)[16];
  char (*texts)[IDGEN_PUBLIC_TEXT_MAX];
  int *lens;
  size_t batch;
  EVP_CIPHER_CTX *evp;
} bench_ctx_t;

/* One run of an operation over n IDs: returns the IDs done. */
typedef size_t (*op_fn)(bench_ctx_t *c, size_t n);

static size_t op_map64(bench_ctx_t *c, size_t n) {
  uint64_t acc = 0, pub;
  for (size_t i = 0; i < n; i++) {
    if (idgen_public_map64(c->p64, c->ids[i], &pub) != 0)
      die("map64", -1);
    acc ^= pub;
  }
  sink = acc;
  return n;
}

static size_t op_unmap64(bench_ctx_t *c, size_t n) {
  uint64_t acc = 0, id;
  for (size_t i = 0; i < n; i++) {
    if (idgen_public_unmap64(c->p64, c->pubs[i], &id) != 0)
      die("unmap64", -1);
    acc ^= id;
  }
  sink = acc;
  return n;
}

static size_t op_map64_batch(bench_ctx_t *c, size_t n) {
  uint64_t out[1024];
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_map64_batch(c->p64, c->ids + i, out, c->batch) != 0)
      die("map64_batch", -1);
  sink = out[0];
  return done;
}

static size_t op_unmap64_batch(bench_ctx_t *c, size_t n) {
  uint64_t out[1024];
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_unmap64_batch(c->p64, c->pubs + i, out, c->batch) != 0)
      die("unmap64_batch", -1);
  sink = out[0];
  return done;
}

static size_t op_format64(bench_ctx_t *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    c->lens[i] = idgen_public_format64(c->p64, c->ids[i], c->texts[i], IDGEN_PUBLIC_TEXT_MAX);
    if (c->lens[i] < 0)
      die("format64", c->lens[i]);
  }
  return n;
}

static size_t op_parse64(bench_ctx_t *c, size_t n) {
  uint64_t acc = 0, id;
  char err[256];
  for (size_t i = 0; i < n; i++) {
    int rc =
        idgen_public_parse64(c->p64, c->texts[i], (size_t)c->lens[i], &id, NULL, err, sizeof err);
    if (rc != 0)
      die("parse64", rc);
    acc ^= id;
  }
  sink = acc;
  return n;
}

static size_t op_map128(bench_ctx_t *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (idgen_public_map128(c->p128, c->ids128[i], c->pubs128[i]) != 0)
      die("map128", -1);
  return n;
}

static size_t op_unmap128(bench_ctx_t *c, size_t n) {
  uint8_t id[16];
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i++) {
    if (idgen_public_unmap128(c->p128, c->pubs128[i], id) != 0)
      die("unmap128", -1);
    acc ^= id[15];
  }
  sink = acc;
  return n;
}

/* Text forms in batches: c->batch texts back to back in one buffer. */
static size_t op_format64_batch(bench_ctx_t *c, size_t n) {
  static char buf[1024 * IDGEN_PUBLIC_TEXT_MAX];
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_format64_batch(c->p64, c->ids + i, c->batch, buf, sizeof buf) != 0)
      die("format64_batch", -1);
  sink = (uint64_t)buf[0];
  return done;
}

static size_t op_format128_batch(bench_ctx_t *c, size_t n) {
  static char buf[1024 * IDGEN_PUBLIC_TEXT_MAX];
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_format128_batch(c->p128, (const uint8_t(*)[16])c->ids128 + i, c->batch, buf,
                                     sizeof buf) != 0)
      die("format128_batch", -1);
  sink = (uint64_t)buf[0];
  return done;
}

static size_t op_map128_batch(bench_ctx_t *c, size_t n) {
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_map128_batch(c->p128, (const uint8_t(*)[16])c->ids128 + i, c->pubs128 + i,
                                  c->batch) != 0)
      die("map128_batch", -1);
  return done;
}

static size_t op_unmap128_batch(bench_ctx_t *c, size_t n) {
  uint8_t out[1024][16];
  size_t done = 0;
  for (size_t i = 0; i + c->batch <= n; i += c->batch, done += c->batch)
    if (idgen_public_unmap128_batch(c->p128, (const uint8_t(*)[16])c->pubs128 + i, out, c->batch) !=
        0)
      die("unmap128_batch", -1);
  sink = out[0][0];
  return done;
}

static size_t op_format128(bench_ctx_t *c, size_t n) {
  for (size_t i = 0; i < n; i++) {
    c->lens[i] = idgen_public_format128(c->p128, c->ids128[i], c->texts[i], IDGEN_PUBLIC_TEXT_MAX);
    if (c->lens[i] < 0)
      die("format128", c->lens[i]);
  }
  return n;
}

static size_t op_parse128(bench_ctx_t *c, size_t n) {
  uint8_t id[16];
  char err[256];
  uint64_t acc = 0;
  for (size_t i = 0; i < n; i++) {
    int rc =
        idgen_public_parse128(c->p128, c->texts[i], (size_t)c->lens[i], id, NULL, err, sizeof err);
    if (rc != 0)
      die("parse128", rc);
    acc ^= id[15];
  }
  sink = acc;
  return n;
}

/* The floor: `rounds` dependent single-block EVP calls per ID. */
static size_t evp_rounds(bench_ctx_t *c, size_t n, int rounds) {
  uint8_t blk[16] = {0};
  int outl;
  for (size_t i = 0; i < n; i++) {
    memcpy(blk, &c->ids[i], 8);
    for (int r = 0; r < rounds; r++)
      if (EVP_EncryptUpdate(c->evp, blk, &outl, blk, 16) != 1)
        die("EVP_EncryptUpdate", -1);
  }
  sink = blk[0];
  return n;
}
static size_t op_evp1(bench_ctx_t *c, size_t n) { return evp_rounds(c, n, 1); }
static size_t op_evp10(bench_ctx_t *c, size_t n) { return evp_rounds(c, n, 10); }

/* The median ns per ID of `runs` runs. */
static double median_ns(bench_ctx_t *c, op_fn f, size_t n) {
  double ns[MAXRUNS];
  f(c, n < 1000 ? n : 1000); /* warm */
  for (int r = 0; r < runs; r++) {
    double t0 = now_ns();
    size_t done = f(c, n);
    ns[r] = (now_ns() - t0) / (double)done;
  }
  qsort(ns, (size_t)runs, sizeof ns[0], cmp_double);
  return ns[runs / 2];
}

static void print_load(const char *what) {
  char buf[128] = "?";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f))
      snprintf(buf, sizeof buf, "?\n");
    fclose(f);
  }
  printf("%s: %s", what, buf);
}

static void row(bench_ctx_t *c, const char *name, op_fn f, size_t batch, size_t n) {
  c->batch = batch;
  double ns = median_ns(c, f, n);
  printf("| %-34s | %8.1f | %12.0f |\n", name, ns, 1e9 / ns);
  fflush(stdout);
}

static idgen_public_t *codec(const idgen_public_keys_t *k, idgen_public_kind_t kind,
                             unsigned bits) {
  idgen_public_settings_t s = {kind, bits, NULL, 0};
  idgen_public_t *p = NULL;
  char err[256] = "";
  int rc = idgen_public_new(&p, k, &s, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "public_bench: idgen_public_new: %s\n", err);
    exit(1);
  }
  return p;
}

static void setup(bench_ctx_t *c, size_t n) {
  static const unsigned versions[1] = {1};
  uint8_t key[1][IDGEN_PUBLIC_KEY_BYTES];
  for (size_t i = 0; i < IDGEN_PUBLIC_KEY_BYTES; i++)
    key[0][i] = (uint8_t)(i * 29 + 7);
  idgen_public_keys_t *k = NULL;
  char err[256] = "";
  if (idgen_public_keys_new(&k, versions, (const uint8_t(*)[IDGEN_PUBLIC_KEY_BYTES])key, 1, err,
                            sizeof err) != 0) {
    fprintf(stderr, "public_bench: idgen_public_keys_new: %s\n", err);
    exit(1);
  }
  c->p64 = codec(k, IDGEN_PUBLIC_SNOWFLAKE, 63);
  c->p128 = codec(k, IDGEN_PUBLIC_UUID7, 0);
  idgen_public_keys_free(k);
  c->ids = malloc(n * sizeof *c->ids);
  c->pubs = malloc(n * sizeof *c->pubs);
  c->ids128 = malloc(n * 16);
  c->pubs128 = malloc(n * 16);
  c->texts = malloc(n * sizeof *c->texts);
  c->lens = malloc(n * sizeof *c->lens);
  if (!c->ids || !c->pubs || !c->ids128 || !c->pubs128 || !c->texts || !c->lens)
    die("malloc", IDGEN_ENOMEM);
  /* Twitter-layout IDs and UUIDv7s as a generator makes them. */
  idgen_layout_t l;
  if (idgen_layout_parse(&l, "twitter", err, sizeof err) != 0)
    die("layout", -1);
  idgen_snowflake_gen_t *g = NULL;
  int rc = idgen_snowflake_gen_new(&g, &l, NULL, err, sizeof err);
  if (rc != 0)
    die("snowflake generator", rc);
  idgen_uuid7_gen_t *u7 = NULL;
  if ((rc = idgen_uuid7_gen_new(&u7, NULL)) != 0)
    die("uuid7 generator", rc);
  for (size_t i = 0; i < n; i++) {
    idgen_uuid_t u;
    if ((rc = idgen_snowflake_gen_next(g, &c->ids[i])) != 0 ||
        (rc = idgen_uuid7_gen_next(u7, &u)) != 0)
      die("generator", rc);
    memcpy(c->ids128[i], u.bytes, 16);
  }
  idgen_snowflake_gen_free(g);
  idgen_uuid7_gen_free(u7);
  if ((rc = idgen_public_map64_batch(c->p64, c->ids, c->pubs, n)) != 0)
    die("map64_batch", rc);
  if ((rc = idgen_public_map128_batch(c->p128, (const uint8_t(*)[16])c->ids128, c->pubs128, n)) !=
      0)
    die("map128_batch", rc);
  c->evp = EVP_CIPHER_CTX_new();
  if (!c->evp || EVP_EncryptInit_ex(c->evp, EVP_aes_256_ecb(), NULL, key[0], NULL) != 1)
    die("EVP aes-256-ecb", -1);
  EVP_CIPHER_CTX_set_padding(c->evp, 0);
}

static void table(bench_ctx_t *c, size_t n) {
  size_t nb = n * 10; /* batches: more IDs per run */
  printf("| call (one thread; twitter layout, UUIDv7) | ns/ID | IDs/s |\n|---|---:|---:|\n");
  row(c, "map64 (single)", op_map64, 1, n);
  row(c, "unmap64 (single)", op_unmap64, 1, n);
  row(c, "map64_batch (64)", op_map64_batch, 64, nb);
  row(c, "map64_batch (1024)", op_map64_batch, 1024, nb);
  row(c, "unmap64_batch (64)", op_unmap64_batch, 64, nb);
  row(c, "unmap64_batch (1024)", op_unmap64_batch, 1024, nb);
  row(c, "format64 (text)", op_format64, 1, n);
  row(c, "format64_batch (text, 64)", op_format64_batch, 64, nb);
  row(c, "format64_batch (text, 1024)", op_format64_batch, 1024, nb);
  row(c, "parse64 (text)", op_parse64, 1, n);
  row(c, "map128 (UUIDv7 -> v4, single)", op_map128, 1, n);
  row(c, "unmap128 (single)", op_unmap128, 1, n);
  row(c, "map128_batch (64)", op_map128_batch, 64, nb);
  row(c, "map128_batch (1024)", op_map128_batch, 1024, nb);
  row(c, "unmap128_batch (64)", op_unmap128_batch, 64, nb);
  row(c, "unmap128_batch (1024)", op_unmap128_batch, 1024, nb);
  row(c, "format128 (text)", op_format128, 1, n);
  row(c, "format128_batch (text, 64)", op_format128_batch, 64, nb);
  row(c, "parse128 (text)", op_parse128, 1, n);
  row(c, "floor: EVP aes-256-ecb, 1 block", op_evp1, 1, n);
  row(c, "floor: 10 dependent EVP calls", op_evp10, 1, n);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ids") && i + 1 < argc)
      nids = (size_t)strtoull(argv[++i], NULL, 10);
    else {
      fprintf(stderr, "usage: public_bench [--runs N] [--ids N]\n");
      return 2;
    }
  }
  if (runs < 1 || runs > MAXRUNS || nids < 1024) {
    fprintf(stderr, "public_bench: --runs 1..%d, --ids at least 1024\n", MAXRUNS);
    return 2;
  }
  bench_ctx_t c;
  memset(&c, 0, sizeof c);
  /* Batches run over 10x the IDs; the arrays hold that many. */
  setup(&c, nids * 10);
  print_load("load average at the start");
  printf("public IDs: medians of %d runs, %zu IDs a run (batches: %zu), one thread\n\n", runs, nids,
         nids * 10);
  table(&c, nids);
  print_load("load average at the end");
  EVP_CIPHER_CTX_free(c.evp);
  idgen_public_free(c.p64);
  idgen_public_free(c.p128);
  free(c.ids);
  free(c.pubs);
  free(c.ids128);
  free(c.pubs128);
  free(c.texts);
  free(c.lens);
  return 0;
}
