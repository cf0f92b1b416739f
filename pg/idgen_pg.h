/*
 * idgen_pg.h -- between the extension's files: what _PG_init calls with
 * shared_preload_libraries.  idgen_snowflake()'s settings and shared memory
 * (idgen_snowflake.c) and the background worker that leases for the
 * backends (idgen_worker.c); the files that make them share
 * idgen_snowflake_int.h.
 */
#ifndef IDGEN_PG_H
#define IDGEN_PG_H

void idgen_pg_snowflake_init(void);
/* Defines idgen.public_keys (idgen_public.c). */
void idgen_pg_public_init(void);
/* Registers "idgen lease keeper"; only while the postmaster loads us. */
void idgen_pg_worker_register(void);

#endif
