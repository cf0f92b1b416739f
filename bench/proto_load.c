/*
 * proto_load.c -- one load client for the daemon's three protocols, so that
 * Thrift, RESP and HTTP are measured the same way in one run: C
 * connections, each sending one request for one Snowflake ID and waiting for
 * its reply before the next (no pipelining), for S seconds, from one thread
 * with epoll.  Prints requests per second and the latency percentiles.
 *
 * Usage: proto_load thrift|resp|http HOST PORT CONNECTIONS SECONDS
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

struct conn {
  int fd;
  int64_t sent_ns;
  size_t have;
  char in[4096];
};

static char req[256];
static size_t req_len;
static int proto; /* 0 thrift, 1 resp, 2 http */

/* A whole reply at the start of c->in: its length, or 0. */
static size_t whole(const struct conn *c) {
  if (proto == 0) {
    if (c->have < 4)
      return 0;
    uint32_t n = (uint32_t)(unsigned char)c->in[0] << 24 | (uint32_t)(unsigned char)c->in[1] << 16 |
                 (uint32_t)(unsigned char)c->in[2] << 8 | (unsigned char)c->in[3];
    return c->have >= 4 + n ? 4 + n : 0;
  }
  if (proto == 1) {
    const char *e = memchr(c->in, '\n', c->have);
    return e ? (size_t)(e - c->in) + 1 : 0;
  }
  const char *h = memmem(c->in, c->have, "\r\n\r\n", 4);
  if (h == NULL)
    return 0;
  const char *cl = memmem(c->in, (size_t)(h - c->in), "Content-Length: ", 16);
  size_t body = cl ? (size_t)strtoul(cl + 16, NULL, 10) : 0;
  size_t total = (size_t)(h - c->in) + 4 + body;
  return c->have >= total ? total : 0;
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: proto_load thrift|resp|http HOST PORT CONNECTIONS SECONDS\n");
    return 2;
  }
  proto = strcmp(argv[1], "thrift") == 0 ? 0 : strcmp(argv[1], "resp") == 0 ? 1 : 2;
  int nconn = atoi(argv[4]);
  double secs = atof(argv[5]);
  if (proto == 0) { /* get_id("bench"), framed, strict binary */
    static const char call[] = "\x80\x01\x00\x01"
                               "\x00\x00\x00\x06get_id"
                               "\x00\x00\x00\x01"
                               "\x0b\x00\x01\x00\x00\x00\x05"
                               "bench"
                               "\x00";
    size_t n = sizeof call - 1;
    req[0] = req[1] = req[2] = 0;
    req[3] = (char)n;
    memcpy(req + 4, call, n);
    req_len = 4 + n;
  } else if (proto == 1) {
    req_len = (size_t)snprintf(req, sizeof req, "*1\r\n$2\r\nID\r\n");
  } else {
    req_len = (size_t)snprintf(req, sizeof req, "GET /id HTTP/1.1\r\nHost: %s\r\n\r\n", argv[2]);
  }
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &sa.sin_addr);
  int ep = epoll_create1(0);
  struct conn *cs = calloc((size_t)nconn, sizeof *cs);
  size_t cap = 1 << 24, nlat = 0;
  int64_t *lat = malloc(cap * sizeof *lat);
  for (int i = 0; i < nconn; i++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
      perror("connect");
      return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    cs[i].fd = fd;
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &cs[i]};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
  }
  int64_t start = now_ns(), end = start + (int64_t)(secs * 1e9);
  for (int i = 0; i < nconn; i++) {
    cs[i].sent_ns = now_ns();
    if (write(cs[i].fd, req, req_len) != (ssize_t)req_len)
      return 1;
  }
  uint64_t done = 0, errors = 0;
  struct epoll_event ev[256];
  while (now_ns() < end) {
    int n = epoll_wait(ep, ev, 256, 100);
    for (int k = 0; k < n; k++) {
      struct conn *c = ev[k].data.ptr;
      ssize_t r = read(c->fd, c->in + c->have, sizeof c->in - c->have);
      if (r <= 0) {
        fprintf(stderr, "proto_load: connection closed\n");
        return 1;
      }
      c->have += (size_t)r;
      size_t w;
      while ((w = whole(c)) > 0) {
        int64_t t = now_ns();
        if (nlat < cap)
          lat[nlat++] = t - c->sent_ns;
        if ((proto == 0 && c->in[7] != 2) || (proto == 1 && c->in[0] != ':') ||
            (proto == 2 && memcmp(c->in, "HTTP/1.1 200", 12) != 0))
          errors++;
        done++;
        memmove(c->in, c->in + w, c->have - w);
        c->have -= w;
        c->sent_ns = t;
        if (write(c->fd, req, req_len) != (ssize_t)req_len)
          return 1;
      }
    }
  }
  double took = (double)(now_ns() - start) / 1e9;
  qsort(lat, nlat, sizeof *lat, cmp);
  printf("%-7s %4d connections  %9.0f requests/s  p50 %7.1f us  p99 %7.1f us  p99.9 %7.1f us"
         "  errors %llu\n",
         argv[1], nconn, (double)done / took, (double)lat[nlat / 2] / 1e3,
         (double)lat[nlat / 100 * 99] / 1e3, (double)lat[nlat / 1000 * 999] / 1e3,
         (unsigned long long)errors);
  return errors ? 1 : 0;
}
