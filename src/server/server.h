/*
 * server.h -- `idgen serve`: runs the daemon until SIGTERM or SIGINT.
 */
#ifndef IDGEN_SERVER_H
#define IDGEN_SERVER_H

#include "config.h"

/* Runs the daemon with validated settings `c`; returns the exit status
 * (0 after a graceful stop, 1 if it could not start). */
int serve_run(const serve_config_t *c);

#endif
