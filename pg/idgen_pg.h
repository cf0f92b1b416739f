/*
 * idgen_pg.h -- between the extension's files: idgen_snowflake()'s part of
 * _PG_init, in idgen_snowflake.c (with shared_preload_libraries: its
 * settings, its shared memory and its background worker; the files that
 * make them share idgen_snowflake_int.h).
 */
#ifndef IDGEN_PG_H
#define IDGEN_PG_H

void idgen_pg_snowflake_init(void);

#endif
