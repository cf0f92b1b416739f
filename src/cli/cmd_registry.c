/*
 * cmd_registry.c -- `idgen registry list|free`: the leases of a registry.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char usage[] =
    "Usage: idgen registry list [--registry URI] [--json]\n"
    "       idgen registry free [--registry URI] [--force] POOL WORKER\n"
    "\n"
    "Show the worker-ID leases of a registry, or free a stale one by hand.\n"
    "\n"
    "  list    one line per worker ID the registry knows: its pool (the leased\n"
    "          field and the other node fields' values, as in worker@datacenter=1),\n"
    "          the ID, its state (held, free, quarantine), the fencing generation\n"
    "          of its last grant, the expiry (held) or the time it is free again\n"
    "          (quarantine) by the registry's clock, the high-water mark, and the\n"
    "          last holder (host:pid:token)\n"
    "  free    free the lease of WORKER in POOL: refused while its holder is alive\n"
    "          unless --force, which fences the holder out (its next renewal or\n"
    "          mark write fails and it stops issuing).  The ID returns to the pool\n"
    "          only after the quarantine.  A file: lease cannot be taken from a\n"
    "          live process at all: stop the process, and its ID is free at once\n"
    "\n"
    "  -r, --registry URI   file:DIR or postgres://... (default file:./var/idgen,\n"
    "                       the daemon's default)\n"
    "      --json           list as one JSON object per line\n"
    "      --force          free a lease whose holder is alive (not for file:)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Examples:\n"
    "  idgen registry list --registry file:./var/idgen\n"
    "  idgen registry free --registry postgres://idgen@db/idgen worker@datacenter=1 7\n"
    "\n"
    "Exit status: 0 success (also: already free), 1 the registry failed or the\n"
    "lease is held, 2 bad usage or an unknown pool or ID.\n";

static const char *state_name(idgen_lease_state_t s) {
  return s == IDGEN_LEASE_HELD ? "held" : s == IDGEN_LEASE_QUARANTINE ? "quarantine" : "free";
}

static int print_row(void *ctx, const idgen_lease_row_t *row) {
  int json = *(int *)ctx;
  char mark[IDGEN_TIME_BUFSIZE] = "-", exp[IDGEN_TIME_BUFSIZE] = "-";
  if (row->mark_ms > 0)
    idgen_time_format(row->mark_ms, mark);
  if (row->expires_ms > 0)
    idgen_time_format(row->expires_ms, exp);
  if (json) {
    json_t *o = json_pack("{s:s, s:I, s:s, s:s, s:I, s:s?, s:s?, s:s}", "pool", row->pool,
                          "worker", (json_int_t)row->worker, "state", state_name(row->state),
                          "generation", "", "mark_ms", (json_int_t)row->mark_ms, "mark",
                          row->mark_ms > 0 ? mark : NULL, "expires",
                          row->expires_ms > 0 ? exp : NULL, "holder", row->holder);
    char g[24];
    snprintf(g, sizeof g, "%" PRIu64, row->generation);
    json_object_set_new(o, "generation", json_string(g)); /* 64-bit: a string */
    char *txt = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (txt == NULL)
      cli_fail(EXIT_ID, "out of memory");
    puts(txt);
    free(txt);
  } else {
    printf("%-24s %6" PRIu64 " %-10s %6" PRIu64 " %-24s %-24s %s\n", row->pool, row->worker,
           state_name(row->state), row->generation, exp, mark,
           row->holder[0] ? row->holder : "-");
  }
  return 0;
}

int cmd_registry(int argc, char **argv) {
  static const struct option opts[] = {{"registry", required_argument, 0, 'r'},
                                       {"json", no_argument, 0, 'j'},
                                       {"force", no_argument, 0, 'f'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
  const char *uri = "file:./var/idgen";
  int json = 0, force = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":r:h", opts, NULL)) != -1) {
    switch (c) {
    case 'r':
      uri = optarg;
      break;
    case 'j':
      json = 1;
      break;
    case 'f':
      force = 1;
      break;
    case 'h':
      fputs(usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("registry", c == ':' ? ':' : '?', argv[optind - 1]);
    }
  }
  if (optind >= argc)
    cli_fail(EXIT_USAGE, "registry: say list or free (see 'idgen registry --help')");
  const char *sub = argv[optind++];
  int is_list = strcmp(sub, "list") == 0, is_free = strcmp(sub, "free") == 0;
  if (!is_list && !is_free)
    cli_fail(EXIT_USAGE, "registry: unknown subcommand \"%s\" (list or free)", CLI_QUOTED(sub));
  if (is_list && optind < argc)
    cli_fail(EXIT_USAGE, "registry list: unexpected argument \"%s\"", CLI_QUOTED(argv[optind]));
  if (is_free && argc - optind != 2)
    cli_fail(EXIT_USAGE, "registry free: needs POOL and WORKER (as 'idgen registry list' shows "
                         "them)");
  if (is_list && force)
    cli_fail(EXIT_USAGE, "registry list: --force is for free");
  uint64_t worker = 0;
  if (is_free)
    worker = (uint64_t)cli_int("WORKER", argv[optind + 1], 0, (INT64_C(1) << 20) - 1);

  char err[512] = "";
  idgen_registry_t *r;
  int rc = idgen_registry_open(&r, uri, err, sizeof err);
  if (rc < 0)
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  if (is_list) {
    if (!json)
      printf("%-24s %6s %-10s %6s %-24s %-24s %s\n", "POOL", "WORKER", "STATE", "GEN",
             "EXPIRES", "MARK", "HOLDER");
    rc = idgen_registry_list(r, print_row, &json, err, sizeof err);
  } else {
    rc = idgen_registry_free(r, argv[optind], worker, force, err, sizeof err);
    if (rc == 0)
      printf("%s\n", err[0] ? err : "freed");
  }
  idgen_registry_close(r);
  if (rc < 0)
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  return EXIT_OK;
}
