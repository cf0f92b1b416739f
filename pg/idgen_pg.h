/*
 * idgen_pg.h -- between the extension's files: idgen_snowflake.c's part of
 * _PG_init (its settings; with shared_preload_libraries, its shared memory
 * and background worker).
 */
#ifndef IDGEN_PG_H
#define IDGEN_PG_H

void idgen_pg_snowflake_init(void);

#endif
