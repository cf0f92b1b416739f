/*
 * registry_int.h -- the registry's backend interface: one table of
 * operations per URI scheme, so that a new backend is one file.
 */
#ifndef IDGEN_REGISTRY_INT_H
#define IDGEN_REGISTRY_INT_H

#include "core_int.h"
#include "idgen.h"

/* The pool a lease comes from: one node field of a layout, under the
 * namespace made by the values of the other node fields. */
typedef struct idgen__pool {
  int field;                  /* layout field index */
  char field_name[IDGEN_FIELD_NAME_MAX];
  uint64_t size;              /* 2^bits worker IDs */
  char ns[512];               /* "datacenter=1" (or "" with no other node field) */
} idgen__pool_t;

typedef struct idgen__registry_ops {
  const char *scheme;         /* "static", "file" */
  int (*open)(idgen_registry_t *r, const char *rest, char *err, size_t errlen);
  int (*acquire)(idgen_lease_t *l, const idgen_lease_request_t *req, char *err, size_t errlen);
  int (*renew)(idgen_lease_t *l);
  int (*mark)(idgen_lease_t *l, int64_t mark_ms);
  void (*release)(idgen_lease_t *l);
  void (*close)(idgen_registry_t *r);
} idgen__registry_ops_t;

struct idgen_registry {
  const idgen__registry_ops_t *ops;
  char *path;                 /* file: the directory */
};

struct idgen_lease {
  idgen_registry_t *r;
  idgen__pool_t pool;
  uint64_t worker, generation;
  int64_t mark_ms;
  unsigned fork_gen;          /* the process that holds it */
  int fd;                     /* file: the held lock file */
  char path[1024];            /* file: its path */
  char holder[128];
};

extern const idgen__registry_ops_t idgen__registry_static, idgen__registry_file;

/* The wall clock of a request, in ms; and sleeping on it. */
int64_t idgen__req_now_ms(const idgen_lease_request_t *req);
void idgen__req_sleep_ms(const idgen_lease_request_t *req, int64_t ms);

#endif
