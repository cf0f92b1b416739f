/*
 * lease_bench.c -- what leasing from a daemon costs (SPEC §12,
 * docs/BENCHMARKS.md "Leases from the daemon"), each figure beside the one
 * it is weighed against, in one run:
 *
 *   acquire URI...        the latency of idgen_registry_acquire + release,
 *                         K times per registry URI, in turns (p50, p99);
 *   mint URI...           IDs/s of one thread minting locally on a
 *                         generator bound through idgen_registry_bind to
 *                         each URI (`static` is the ceiling), in turns,
 *                         the median of R runs of N IDs;
 *   fetch HOST PORT N...  IDs/s of one client fetching its IDs from the
 *                         daemon instead: GET /id?count=N on one keep-alive
 *                         connection, for S seconds each.
 *
 * Usage: lease_bench acquire K URI...
 *        lease_bench mint R N URI...
 *        lease_bench fetch S HOST PORT COUNT...
 * Every URI leases in LAYOUT (below: twitter's fields with a 16-bit
 * sequence, 65 M IDs/s a tuple, so that no run waits for the clock and the
 * figures are the registry's, not the layout's) with datacenter=1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "idgen.h"

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "lease_bench: %s: %s\n", what, err);
  exit(1);
}

#define LAYOUT "time:41@1ms,datacenter:2,worker:4,sequence:16,epoch=1288834974657"

/* The layout every URI leases in, with datacenter=1. */
static void twitter(idgen_layout_t *l, uint64_t node[IDGEN_LAYOUT_MAX_FIELDS]) {
  char err[256];
  unsigned given = 0;
  memset(node, 0, sizeof(uint64_t) * IDGEN_LAYOUT_MAX_FIELDS);
  if (idgen_layout_parse(l, LAYOUT, err, sizeof err) < 0 ||
      idgen_layout_nodes_parse(l, "datacenter=1", NULL, NULL, node, &given, err, sizeof err) < 0)
    die("layout", err);
}

static int acquire(int k, char **uris, int n) {
  idgen_layout_t l;
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];
  twitter(&l, node);
  idgen_registry_t *r[16];
  int64_t *lat[16];
  char err[512];
  if (n > 16)
    n = 16;
  for (int u = 0; u < n; u++) {
    if (idgen_registry_open(&r[u], uris[u], err, sizeof err) < 0)
      die(uris[u], err);
    lat[u] = calloc((size_t)k, sizeof **lat);
  }
  idgen_lease_request_t req = {0};
  req.layout = &l;
  req.node = node;
  /* As a generator's start: within its borrow a mark a little ahead (the
   * pool-wide mark the daemon's own holder keeps) costs no wait. */
  req.max_start_wait_ms = IDGEN_START_WAIT_DEFAULT;
  req.start_borrow_ms = IDGEN_MAX_BORROW_MS_DEFAULT;
  for (int i = 0; i < k; i++) /* in turns: the machine's noise falls on each alike */
    for (int u = 0; u < n; u++) {
      idgen_lease_t *lease;
      int64_t t0 = now_ns();
      if (idgen_registry_acquire(r[u], &req, &lease, err, sizeof err) < 0)
        die(uris[u], err);
      lat[u][i] = now_ns() - t0;
      idgen_lease_release(lease);
    }
  printf("%-44s %10s %10s %10s\n", "acquire + release, registry", "p50 us", "p99 us", "n");
  for (int u = 0; u < n; u++) {
    qsort(lat[u], (size_t)k, sizeof **lat, cmp_i64);
    char shown[300];
    idgen_registry_uri_redact(uris[u], shown, sizeof shown);
    printf("%-44s %10.1f %10.1f %10d\n", shown, lat[u][k / 2] / 1e3,
           lat[u][(size_t)k * 99 / 100] / 1e3, k);
    idgen_registry_close(r[u]);
    free(lat[u]);
  }
  return 0;
}

static int mint(int runs, long n, char **uris, int nu) {
  idgen_layout_t l;
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];
  twitter(&l, node);
  char err[512];
  if (nu > 16)
    nu = 16;
  idgen_registry_t *r[16];
  idgen_lease_t *lease[16];
  idgen_snowflake_gen_t *g[16];
  double *rate[16];
  for (int u = 0; u < nu; u++) {
    idgen_snowflake_settings_t s;
    idgen_snowflake_settings_init(&s);
    memcpy(s.node, node, sizeof s.node);
    s.node[idgen_layout_field_index(&l, "worker")] = 15 - (uint64_t)u; /* static: its own */
    idgen_bind_request_t b = {0};
    b.layout = &l;
    b.settings = &s;
    b.max_start_wait_ms = IDGEN_START_WAIT_DEFAULT;
    if (idgen_registry_open(&r[u], uris[u], err, sizeof err) < 0 ||
        idgen_registry_bind(r[u], &b, &lease[u], &g[u], err, sizeof err) < 0)
      die(uris[u], err);
    rate[u] = calloc((size_t)runs, sizeof **rate);
  }
  uint64_t sink = 0;
  for (int i = 0; i < runs; i++)
    for (int u = 0; u < nu; u++) {
      uint64_t id;
      int64_t t0 = now_ns();
      for (long j = 0; j < n; j++) {
        if (idgen_snowflake_gen_next(g[u], &id) < 0)
          die(uris[u], "next failed");
        sink ^= id;
      }
      rate[u][i] = (double)n / ((double)(now_ns() - t0) / 1e9);
    }
  printf("%-44s %12s %10s %8s\n", "mint locally, registry", "IDs/s", "ns/ID", "ratio");
  double base = 0;
  for (int u = 0; u < nu; u++) {
    double *x = rate[u];
    for (int a = 1; a < runs; a++) /* the median */
      for (int b = a; b > 0 && x[b - 1] > x[b]; b--) {
        double t = x[b];
        x[b] = x[b - 1];
        x[b - 1] = t;
      }
    double med = x[runs / 2];
    if (u == 0)
      base = med;
    char shown[300];
    idgen_registry_uri_redact(uris[u], shown, sizeof shown);
    printf("%-44s %12.0f %10.2f %8.2f\n", shown, med, 1e9 / med, base / med);
    idgen_snowflake_gen_free(g[u]);
    idgen_lease_release(lease[u]);
    idgen_registry_close(r[u]);
    free(rate[u]);
  }
  volatile uint64_t keep = sink; /* the IDs are used */
  (void)keep;
  return 0;
}

/* IDs/s fetched with GET /id?count=N on one keep-alive connection. */
static double fetch_rate(const char *host, int port, int count, double seconds) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, host, &a.sin_addr);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0)
    die("connect", host);
  char req[128], buf[1 << 16];
  int rl = snprintf(req, sizeof req, "GET /id?count=%d HTTP/1.1\r\nHost: x\r\n\r\n", count);
  long ids = 0;
  int64_t t0 = now_ns(), end = t0 + (int64_t)(seconds * 1e9);
  while (now_ns() < end) {
    if (write(fd, req, (size_t)rl) != rl)
      die("write", host);
    size_t have = 0;
    long body = -1;
    char *hend = NULL;
    for (;;) { /* the head, then Content-Length bytes */
      ssize_t got = read(fd, buf + have, sizeof buf - 1 - have);
      if (got <= 0)
        die("read", host);
      have += (size_t)got;
      buf[have] = '\0';
      if (hend == NULL && (hend = strstr(buf, "\r\n\r\n")) != NULL) {
        const char *cl = strcasestr(buf, "Content-Length:");
        if (cl == NULL || strncmp(buf, "HTTP/1.1 200", 12) != 0)
          die("answer", buf);
        body = strtol(cl + 15, NULL, 10);
      }
      if (hend != NULL && (long)have >= (hend + 4 - buf) + body)
        break;
    }
    ids += count;
  }
  close(fd);
  return (double)ids / ((double)(now_ns() - t0) / 1e9);
}

int main(int argc, char **argv) {
  if (argc >= 4 && strcmp(argv[1], "acquire") == 0)
    return acquire(atoi(argv[2]), argv + 3, argc - 3);
  if (argc >= 5 && strcmp(argv[1], "mint") == 0)
    return mint(atoi(argv[2]), atol(argv[3]), argv + 4, argc - 4);
  if (argc >= 6 && strcmp(argv[1], "fetch") == 0) {
    printf("%-44s %12s %10s\n", "fetch from the daemon", "IDs/s", "ns/ID");
    for (int i = 5; i < argc; i++) {
      double r = fetch_rate(argv[3], atoi(argv[4]), atoi(argv[i]), atof(argv[2]));
      char what[64];
      snprintf(what, sizeof what, "GET /id?count=%s", argv[i]);
      printf("%-44s %12.0f %10.2f\n", what, r, 1e9 / r);
    }
    return 0;
  }
  fprintf(stderr, "usage: lease_bench acquire K URI...\n"
                  "       lease_bench mint RUNS N URI...\n"
                  "       lease_bench fetch SECONDS HOST PORT COUNT...\n");
  return 2;
}
