/*
 * etcd_off.c -- the etcd:// registry as the extension has it: refused with a
 * reason.  The real one (src/registry/registry_etcd.c) parses etcd's JSON
 * with jansson, and a server module can link neither Debian's libjansson.so
 * (the server's own json_object() would take the place of jansson's, inside
 * jansson too) nor its libjansson.a (its parser is not position-independent).
 * file: and postgres:// registries work.
 */
#include "registry_int.h"

static int etcd_off(const char *uri, const char *rest, char *err, size_t errlen) {
  (void)uri;
  (void)rest;
  return idgen__err(err, errlen, IDGEN_EINVAL,
                    "registry: etcd:// is not available inside PostgreSQL (its JSON parser "
                    "cannot be linked into a server module); use postgres:// or file:");
}

const idgen__registry_ops_t idgen__registry_etcd = {
    .version = IDGEN__REGISTRY_OPS_VERSION,
    .scheme = "etcd",
    .check = etcd_off,
};
