/*
 * serve_poll.c -- busy polling: an event loop that has just had work looks
 * for more without sleeping, for a while, when the host has a CPU to spare
 * (DESIGN §10).  serve_poll_wait is the loop's wait for events; the gate
 * (how many loops may poll at once) is set from samples of the host's load.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, epoll_pwait2 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "server_int.h"

/* Polling pays only on a CPU that nothing else wants.  With clients on the
 * same host and no CPU to spare (wrk -t2 on two CPUs), a polling loop looks
 * CPU-bound to the scheduler, is preempted, waits out a time slice, and the
 * HTTP p99 rose from 1-3 ms to 7-8 ms.  So a loop that has just had work
 * samples, at most every LOAD_SAMPLE_MS across all loops, how many threads the
 * host has runnable (/proc/loadavg's fourth field) and takes away this
 * daemon's loops that are runnable: the rest are the others (at most the
 * CPU count: more leave no CPU idle either).  The mean of the last
 * LOAD_SAMPLES samples decides: while the others leave more than a third of
 * a CPU idle, that idle CPUs' worth of loops (rounded up) may poll at once;
 * else none.  A loop counts as runnable when it is out of its wait and, with
 * up to LOAD_STAT_LOOPS loops, also when /proc says it was woken and has not
 * run yet (one read of a small /proc file per waiting loop, about 3 us; past
 * that many loops the reads would cost more than the correction is worth).
 * IDGEN_TEST_LOADAVG names a file read instead of /proc/loadavg (the tests'
 * way to set the load). */
#define LOAD_SAMPLE_MS 5
#define LOAD_STAT_LOOPS 8

/* 1 if the loop's thread is runnable ('R' in /proc/thread-self/stat): one
 * that was woken but has not run yet is out of its wait but not yet awake.
 * 0 without the file (opened only with up to LOAD_STAT_LOOPS loops). */
static int loop_runnable(serve_worker_t *w) {
  char b[256];
  int fd = atomic_load_explicit(&w->statfd, memory_order_acquire);
  ssize_t n = fd >= 0 ? pread(fd, b, sizeof b - 1, 0) : -1;
  if (n <= 0)
    return 0;
  b[n] = '\0';
  const char *p = strrchr(b, ')'); /* "1234 (idgen) R 1 ..." */
  return p != NULL && p[1] == ' ' && p[2] == 'R';
}

/* The runnable-thread count in a /proc/loadavg text ("0.52 0.58 0.59 3/467
 * 12345"), or -1 if there is none. */
static long loadavg_running(char *b, ssize_t n) {
  if (n <= 0)
    return -1;
  b[n] = '\0';
  const char *p = strchr(b, '/');
  if (p == NULL)
    return -1;
  const char *start = p;
  while (start > b && start[-1] >= '0' && start[-1] <= '9')
    start--;
  if (start == p || p - start > 9 || (start > b && start[-1] != ' ')) /* not a count */
    return -1;
  return strtol(start, NULL, 10);
}

/* Called by the loop that won the sample (s->sampling held). */
static void sample_load(serve_daemon_t *s) {
  char b[128];
  ssize_t n = s->loadavg_fd >= 0 ? pread(s->loadavg_fd, b, sizeof b - 1, 0) : -1;
  int ours = 0;
  for (int i = 0; i < s->nworkers; i++) {
    serve_worker_t *w = &s->workers[i];
    ours += !atomic_load_explicit(&w->waiting, memory_order_relaxed) || loop_runnable(w);
  }
  long running = loadavg_running(b, n);
  int others = s->ncpus; /* unknown: as if every CPU were taken */
  if (running >= 0)
    others = running <= ours ? 0 : running - ours >= s->ncpus ? s->ncpus : (int)(running - ours);
  s->load_sum += others - s->load_ring[s->load_next];
  s->load_ring[s->load_next] = others;
  s->load_next = (s->load_next + 1) % LOAD_SAMPLES;
  /* spare CPUs, in 1/LOAD_SAMPLES of a CPU */
  int spare = s->ncpus * LOAD_SAMPLES - s->load_sum;
  atomic_store_explicit(&s->others_x64, s->load_sum * 64 / LOAD_SAMPLES, memory_order_relaxed);
  int allowed = spare > LOAD_SAMPLES / 3 ? (spare + LOAD_SAMPLES - 1) / LOAD_SAMPLES : 0;
  atomic_store_explicit(&s->pollers_max, allowed < s->nworkers ? allowed : s->nworkers,
                        memory_order_relaxed);
}

/* After a turn with work: samples the load if it is time and no other loop
 * is sampling.  One relaxed load on the way, unless it is time. */
void serve_poll_sample(serve_worker_t *w) {
  serve_daemon_t *s = w->srv;
  if (w->now_ms - atomic_load_explicit(&s->load_sampled_ms, memory_order_relaxed) <
          LOAD_SAMPLE_MS ||
      atomic_flag_test_and_set_explicit(&s->sampling, memory_order_acquire))
    return;
  if (w->now_ms - atomic_load_explicit(&s->load_sampled_ms, memory_order_relaxed) >=
      LOAD_SAMPLE_MS) {
    atomic_store_explicit(&s->load_sampled_ms, w->now_ms, memory_order_relaxed);
    sample_load(s);
  }
  atomic_flag_clear_explicit(&s->sampling, memory_order_release);
}

/* A place among the loops that may poll now: 1, or 0 if they are taken. */
static int poll_slot(serve_daemon_t *s) {
  int max = atomic_load_explicit(&s->pollers_max, memory_order_relaxed);
  if (max <= 0)
    return 0;
  if (atomic_fetch_add_explicit(&s->pollers, 1, memory_order_relaxed) < max)
    return 1;
  atomic_fetch_sub_explicit(&s->pollers, 1, memory_order_relaxed);
  return 0;
}

/* Waits up to wait_ns for events.  After a turn with work the loop first
 * polls (epoll_wait without blocking) for up to busy_poll_ns: a loop that
 * sleeps costs the client that wakes it an inter-processor interrupt and a
 * wake-up, on every request of a request-reply client that is about as fast
 * as the loop (DESIGN §10).  So polling costs at most busy_poll_ns per turn
 * with work (requests read, a connection accepted or closed).  The credit stops
 * it while polls seldom find work: a hit raises it by one, a miss lowers it
 * by two, so polling lasts while two in three polls find work; while it is
 * negative only every eighth turn after work polls, to notice when the load
 * comes back.  No sched_yield between looks: a yield to a busy task on the
 * same CPU keeps the loop runnable, not asleep, so a request arriving
 * meanwhile waits for the next scheduler tick instead of waking it.  A find
 * after twice the budget (the thread lost its CPU meanwhile) is a miss. */
int serve_poll_wait(serve_worker_t *w, struct epoll_event *evs, int64_t wait_ns) {
  int64_t budget = w->srv->cfg->busy_poll_ns;
  if (budget > wait_ns)
    budget = wait_ns;
  int n = 0;
  if (budget > 0 && w->worked && (w->poll_credit >= 0 || (++w->poll_probes & 7) == 0) &&
      poll_slot(w->srv)) {
    int64_t start = serve_mono_ns(), spent;
    do {
      n = epoll_wait(w->epfd, evs, 256, 0);
      spent = serve_mono_ns() - start;
    } while (n == 0 && spent < budget);
    if (n >= 0) {
      int hit = n > 0 && spent < 2 * budget;
      if (hit)
        w->poll_credit += w->poll_credit < 8;
      else if ((w->poll_credit -= 2) < -8)
        w->poll_credit = -8;
      CNT_ADD(w->st.polls[hit], 1);
    }
    atomic_fetch_sub_explicit(&w->srv->pollers, 1, memory_order_relaxed);
    wait_ns = spent < wait_ns ? wait_ns - spent : 0;
  }
  if (n == 0) {
    CNT_ADD(w->st.waits, 1);
    struct timespec ts = {(time_t)(wait_ns / 1000000000), (long)(wait_ns % 1000000000)};
    atomic_store_explicit(&w->waiting, 1, memory_order_relaxed);
    n = epoll_pwait2(w->epfd, evs, 256, &ts, NULL);
    if (n < 0 && errno == ENOSYS) /* a kernel before 5.11 */
      n = epoll_wait(w->epfd, evs, 256, (int)((wait_ns + 999999) / 1000000));
    atomic_store_explicit(&w->waiting, 0, memory_order_relaxed);
  }
  w->worked = n > 0;
  return n;
}

void serve_poll_setup(serve_daemon_t *s) {
  cpu_set_t cpus;
  s->ncpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  for (int i = 0; i < LOAD_SAMPLES; i++) /* no polling until the first samples */
    s->load_ring[i] = s->ncpus;
  s->load_sum = s->ncpus * LOAD_SAMPLES;
  atomic_init(&s->others_x64, s->load_sum * 64 / LOAD_SAMPLES);
  atomic_flag_clear(&s->sampling);
  const char *loadavg = getenv("IDGEN_TEST_LOADAVG");
  if (s->cfg->busy_poll_ns > 0) /* the load is sampled only for busy polling */
    s->loadavg_fd = open(loadavg ? loadavg : "/proc/loadavg", O_RDONLY | O_CLOEXEC);
}

void serve_poll_loop_start(serve_worker_t *w) {
  serve_daemon_t *s = w->srv;
  if (s->cfg->busy_poll_ns > 0 && s->nworkers <= LOAD_STAT_LOOPS) /* read by sample_load */
    atomic_store_explicit(&w->statfd, open("/proc/thread-self/stat", O_RDONLY | O_CLOEXEC),
                          memory_order_release);
}
