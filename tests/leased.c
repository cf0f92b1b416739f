/* leased.c -- a program on the installed libidgen-registry: leases a worker
 * ID from the registry given (argv[1]; "default": the host's default
 * registry, as an application on defaults takes it), makes one Snowflake ID
 * and prints it.  Built by tests/install_test.sh and tests/deb_test.sh
 * against what they installed. */
#include <idgen.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  char err[1100], def[1100];
  idgen_layout_t l;
  idgen_registry_t *r;
  idgen_lease_t *lease;
  idgen_snowflake_gen_t *g;
  idgen_snowflake_settings_t s;
  uint64_t id;
  const char *uri = argc < 2 ? NULL : argv[1];
  if (uri != NULL && strcmp(uri, "default") == 0) {
    if (idgen_registry_default_uri(def, sizeof def, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      return 1;
    }
    uri = def;
  }
  if (uri == NULL || idgen_layout_parse(&l, "twitter", NULL, 0) ||
      idgen_registry_open(&r, uri, err, sizeof err))
    return 1;
  idgen_lease_request_t req = {&l, NULL, NULL, -1, NULL};
  if (idgen_registry_acquire(r, &req, &lease, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  idgen_snowflake_settings_init(&s);
  s.lease = lease;
  if (idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err) || idgen_snowflake_gen_next(g, &id)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  printf("%llu\n", (unsigned long long)id);
  idgen_snowflake_gen_free(g);
  idgen_lease_release(lease);
  idgen_registry_close(r);
  return 0;
}
