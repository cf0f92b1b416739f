/*
 * bind_int.h -- the one seam between libidgen and libidgen-registry: the
 * table every lease begins with, filled by the registry when it grants the
 * lease, through which the core's lease keeper (lease_keeper.c) reaches the
 * registry.  The core calls nothing of the registry's but through it, and
 * the registry reaches a generator only through idgen.h, so neither
 * library includes the other's private headers beyond this one and the
 * core's helpers (core_int.h).  Not part of the public API.
 */
#ifndef IDGEN_BIND_INT_H
#define IDGEN_BIND_INT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/*
 * The bind table (docs/DESIGN.md §11), first in every idgen_lease_t:
 *   version     IDGEN__BIND_VERSION of the registry library that filled it;
 *               first, whatever later versions change, so that a core of
 *               another version reads it and refuses the lease (naming both
 *               versions) instead of misreading the rest;
 *   info        the lease as of its last registry call (idgen_lease_info);
 *   renew       shows the lease still held: 0, IDGEN_ELEASE when fenced out,
 *               IDGEN_EFORKED in a child, else the registry's error (the
 *               lease may still be held); a message in err;
 *   mark        records the high-water mark mark_ms durably, conditional on
 *               the lease's generation; the same answers;
 *   final_mark  the mark written when the bound generator stops: the last
 *               tick it used, which may be below the recorded mark (nothing
 *               above it was issued); best effort, errors dropped;
 *   expires     the lease expires unless renewed (network registries); 0:
 *               held while the process lives (file:, a flock);
 *   bound       the core's, not the registry's: a generator is bound (one
 *               per lease); 0 when filled.
 * The registry calls no function of the table; the core's keeper calls
 * renew, mark and info from its I/O thread only, final_mark once when the
 * generator stops.
 */
#define IDGEN__BIND_VERSION 3
typedef struct idgen__lease_bind {
  int version;
  void (*info)(const idgen_lease_t *lease, idgen_lease_info_t *out);
  int (*renew)(idgen_lease_t *lease, char *err, size_t errlen);
  int (*mark)(idgen_lease_t *lease, int64_t mark_ms, char *err, size_t errlen);
  int (*final_mark)(idgen_lease_t *lease, int64_t mark_ms);
  int expires;
  atomic_int bound;
} idgen__lease_bind_t;

/* The table of a lease: its first member. */
static inline idgen__lease_bind_t *idgen__lease_bind(idgen_lease_t *lease) {
  return (idgen__lease_bind_t *)(void *)lease;
}

#endif
