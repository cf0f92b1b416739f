/*
 * compat.c -- symbols kept for programs built with an earlier header, in
 * every build of the library (with or without the lease keeper).
 *
 * idgen_snowflake_gen_lease_status: 0.1.0's name, whose struct had the
 * lease's fields of its own; the header's name now stands for
 * idgen_snowflake_gen_lease_status2 (lease_keeper.c, or keeper_none.c),
 * whose struct embeds idgen_lease_info_t.  test_registry's
 * test_bound_marks reads the old symbol through a copy of the old struct.
 */
#include <string.h>

#include "snowflake_int.h"

/* 0.1.0's idgen_snowflake_lease_status_t. */
typedef struct {
  int bound, valid, fenced;
  int64_t valid_ms;
  int field;
  uint64_t worker, generation, key;
  int64_t mark_ms, expires_ms, expires_in_ms;
  uint64_t renewals, renew_failures, mark_writes, mark_waits, mark_failures;
  int mark_failing;
  char reason[IDGEN_REASON_MAX];
  char pool[IDGEN_POOL_NAME_MAX];
  char node[IDGEN_NODE_TEXT_MAX];
  char holder[IDGEN_HOLDER_MAX];
} lease_status_0_1_0_t;

#undef idgen_snowflake_gen_lease_status
IDGEN_API void idgen_snowflake_gen_lease_status(idgen_snowflake_gen_t *g, lease_status_0_1_0_t *st);
void idgen_snowflake_gen_lease_status(idgen_snowflake_gen_t *g, lease_status_0_1_0_t *st) {
  idgen_snowflake_lease_status_t now;
  idgen_snowflake_gen_lease_status2(g, &now);
  memset(st, 0, sizeof *st);
  st->bound = now.bound;
  st->valid = now.valid;
  st->fenced = now.fenced;
  st->valid_ms = now.valid_ms;
  st->field = now.lease.field;
  st->worker = now.lease.worker;
  st->generation = now.lease.generation;
  st->key = now.lease.key;
  st->mark_ms = now.lease.mark_ms;
  st->expires_ms = now.lease.expires_ms;
  st->expires_in_ms = now.lease.expires_in_ms;
  st->renewals = now.renewals;
  st->renew_failures = now.renew_failures;
  st->mark_writes = now.mark_writes;
  st->mark_waits = now.mark_waits;
  st->mark_failures = now.mark_failures;
  st->mark_failing = now.mark_failing;
  memcpy(st->reason, now.reason, sizeof st->reason);
  memcpy(st->pool, now.lease.pool, sizeof st->pool);
  memcpy(st->node, now.lease.node, sizeof st->node);
  memcpy(st->holder, now.lease.holder, sizeof st->holder);
}
