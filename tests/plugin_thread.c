/*
 * plugin_thread.c -- a plug-in for test_foreign_threads: starts a thread
 * through whichever C library it was bound to.  Loaded with dlmopen() into a
 * namespace of its own, that is a second copy of glibc, whose
 * pthread_create() the main program's copy never hears of.
 */
#include <pthread.h>
#include <stdlib.h>

struct job {
  void (*fn)(void *);
  void *arg;
};

int plugin_start(void (*fn)(void *), void *arg, pthread_t *out);
int plugin_join(pthread_t t);

static void *run(void *p) {
  struct job *j = p;
  j->fn(j->arg);
  free(j);
  return NULL;
}

int plugin_start(void (*fn)(void *), void *arg, pthread_t *out) {
  struct job *j = malloc(sizeof *j);
  if (j == NULL)
    return -1;
  j->fn = fn;
  j->arg = arg;
  int rc = pthread_create(out, NULL, run, j);
  if (rc != 0)
    free(j);
  return rc;
}

int plugin_join(pthread_t t) { return pthread_join(t, NULL); }
