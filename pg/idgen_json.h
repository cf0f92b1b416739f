/* idgen_json.h -- see idgen_json.c. */
#ifndef IDGEN_PG_JSON_H
#define IDGEN_PG_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

/* The JSON of `idgen decode --json` for Snowflake ID `id` read in `l`
 * (malloc'd: free() it), or NULL with a message in err. */
char *idgen_pg_decode_json(const idgen_layout_t *l, uint64_t id, char *err, size_t errlen);

#endif
