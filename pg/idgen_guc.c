/*
 * idgen_guc.c -- idgen_snowflake()'s settings: idgen.registry, idgen.node,
 * idgen.space, idgen.lease_field and idgen.lease_ttl_ms, all of the
 * postmaster (defined only while it loads the library), and the layout it
 * loaded us with; read by the background worker (idgen_worker.c) with the
 * library's rules, as the command's and the daemon's.
 */
#include "postgres.h"

#include "utils/guc.h"
#include "utils/memutils.h"

#include "idgen.h"
#include "idgen_snowflake_int.h"

char *idgen_pg_registry, *idgen_pg_node;
int idgen_pg_lease_ttl_ms;
static char *lease_field_setting, *space_setting;
/* idgen.layout as the postmaster loaded us: the generator's layout for the
 * server's life, also across crash restarts after a reload changed it
 * (the workers are forked from the postmaster, which keeps this copy). */
static char *start_layout;

/* idgen.lease_ttl_ms: 0 (the registry's default), or within the library's
 * bounds (idgen_lease_ttl_check; the GUC's own range is wider so that
 * every refusal is the library's), refused with its message when set, not
 * by the worker later. */
static bool check_lease_ttl(int *newval, void **extra, GucSource source) {
  char e[200];
  if (*newval == 0 || idgen_lease_ttl_check(*newval, e, sizeof e) == 0)
    return true;
  GUC_check_errdetail("%s.", e);
  return false;
}

/* The worker's settings into l, s (node values) and the registry URI (the
 * registry `base`, idgen.registry or the host's, with idgen.space); false
 * with a message. */
bool idgen_pg_read_settings(idgen_layout_t *l, idgen_snowflake_settings_t *s, const char *base,
                            char *uri, size_t n, const char **field, char *err, size_t errlen) {
  const char *spec = start_layout, *now = GetConfigOption("idgen.layout", false, false);
  static const char *const guc[] = {[IDGEN_LEASE_SETTING_NONE] = "registry",
                                    [IDGEN_LEASE_SETTING_REGISTRY] = "registry",
                                    [IDGEN_LEASE_SETTING_LAYOUT] = "layout",
                                    [IDGEN_LEASE_SETTING_NODE] = "node",
                                    [IDGEN_LEASE_SETTING_FIELD] = "lease_field"};
  idgen_lease_settings_t ls = {0};
  unsigned given = 0;
  int f, rc;
  char e[300];
  if (now != NULL && strcmp(now, spec) != 0)
    ereport(LOG, (errmsg("idgen: idgen.layout is now %s; idgen_snowflake() keeps the layout the "
                         "server started with, %s, until the server is restarted",
                         now, spec)));
  if (idgen_layout_parse(l, spec, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.layout: %s", e);
    return false;
  }
  if (l->total_bits > 63) {
    snprintf(err, errlen, "idgen.layout %s has %d bits; a bigint holds 63 (and a sign)", spec,
             l->total_bits);
    return false;
  }
  idgen_snowflake_settings_init(s);
  /* The library's one node-list rule, as `idgen --node`; no @ip or @mac
   * here (unchecked, so only for a static registry of the command's). */
  if (idgen_layout_nodes_parse(l, idgen_pg_node, NULL, NULL, s->node, &given, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.node: %s", e);
    return false;
  }
  if (strlen(base) >= n) {
    snprintf(err, errlen, "idgen.registry is longer than %zu bytes", n - 1);
    return false;
  }
  /* A space beside the registry: the library's one rule (the static
   * registry keeps none; the URI names none already). */
  rc = idgen_registry_uri_with_space(base, space_setting, uri, n, e, sizeof e);
  if (rc == IDGEN_ERANGE) {
    snprintf(err, errlen, "idgen.registry with idgen.space is longer than %zu bytes", n - 1);
    return false;
  }
  if (rc < 0) {
    const char *msg = strncmp(e, "registry: ", 10) == 0 ? e + 10 : e;
    snprintf(err, errlen, "idgen.space: %s", msg);
    return false;
  }
  *field = lease_field_setting && lease_field_setting[0] ? lease_field_setting : NULL;
  /* The rules between the registry, the leased field and idgen.node: the
   * library's, as the command's and the daemon's. */
  ls.uri = uri, ls.layout = l, ls.field = *field, ls.node_given = given;
  if (idgen_lease_settings_verify(&ls, e, sizeof e) < 0) {
    snprintf(err, errlen, "idgen.%s: %s", guc[ls.blame], e);
    return false;
  }
  f = ls.leased;
  /* IDs are ordered by a field above the time field first: a lease of
   * another value after a restart (or a lost lease) would issue below the
   * IDs before it (docs/DESIGN.md §14, "Order across restarts").  A
   * sequence's promise cannot be kept then. */
  if (f >= 0 && l->fields[f].shift > l->fields[l->time_index].shift) {
    snprintf(err, errlen,
             "idgen.layout puts %s, which the registry assigns, above the time field: a "
             "restart on another %s would issue IDs below earlier ones.  Put the time field "
             "above it, or give %s by hand with idgen.registry = 'static'",
             l->fields[f].name, l->fields[f].name, l->fields[f].name);
    return false;
  }
  return true;
}

void idgen_pg_guc_define(void) {
  start_layout =
      MemoryContextStrdup(TopMemoryContext, GetConfigOption("idgen.layout", false, false));
  DefineCustomStringVariable(
      "idgen.registry", "Where idgen_snowflake() leases its node value from.",
      "file:DIR (processes on one host), postgres://... (a fleet), or static (every value "
      "from idgen.node, unchecked, no durable mark).  Empty: the host's registry "
      "(file:/var/lib/idgen), shared with every idgen on the host; refused, saying what to do, "
      "when the server's user may not use it.",
      /* superusers only: a postgres:// URI may hold a password (tests/pg_ext_test.sh:
       * "idgen.registry is for superusers only") */
      &idgen_pg_registry, "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
  DefineCustomStringVariable(
      "idgen.node", "idgen_snowflake()'s node values the registry does not assign.",
      "NAME=VALUE, comma-separated, as `idgen --node`: datacenter=1,worker=2.", &idgen_pg_node, "",
      PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomStringVariable(
      "idgen.space", "The registry's ID space idgen_snowflake() leases in.",
      "Empty: the default space, or the one idgen.registry names with ?space=NAME.  Within a "
      "space a layout whose IDs could equal a live one's is refused.",
      &space_setting, "", PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomStringVariable("idgen.lease_field", "The node field the registry assigns.",
                             "Empty: worker, or the layout's only node field.",
                             &lease_field_setting, "", PGC_POSTMASTER, 0, NULL, NULL, NULL);
  DefineCustomIntVariable("idgen.lease_ttl_ms", "The lease's TTL; renewed at a third of it.",
                          "0: the registry's default.", &idgen_pg_lease_ttl_ms, 0, 0, INT_MAX,
                          PGC_POSTMASTER, 0, check_lease_ttl, NULL, NULL);
}
