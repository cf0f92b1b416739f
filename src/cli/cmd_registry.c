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
    "Usage: idgen registry list [--registry URI] [--space NAME] [--json]\n"
    "       idgen registry free [--registry URI] [--space NAME] [--force] POOL NODE\n"
    "\n"
    "Show the node-tuple leases of a registry, or free a stale one by hand.\n"
    "\n"
    "  list    the registry's absolute location, then each ID space (the default\n"
    "          one, then those named with --space or ?space=NAME): the highest ID\n"
    "          it may have issued, and each layout leasing in it with the time its\n"
    "          holders start above and how many of its tuples are live; then the\n"
    "          space's pools (a layout's geometry: epoch, tick, and where the time\n"
    "          and sequence fields sit; layouts that make the same IDs share one)\n"
    "          with the layout it was first used with and its pool-wide mark (a\n"
    "          tuple new to the pool, or for postgres whose row was deleted, starts\n"
    "          above it), then one line per node tuple the registry knows: the\n"
    "          tuple (datacenter=1,worker=7), its state (held, free, quarantine),\n"
    "          the fencing generation of its last grant, how long until it expires\n"
    "          (held) or is free again (quarantine) as the registry measures it,\n"
    "          the high-water mark by the holders' clocks, and the last holder\n"
    "          (host:pid:token)\n"
    "  free    free the lease of tuple NODE in POOL (both as listed; NODE may also\n"
    "          be the tuple's key, 0x and 16 hex digits): refused while its holder\n"
    "          is alive unless --force, which fences the holder out (its next\n"
    "          renewal or mark write fails and it stops issuing).  The tuple returns\n"
    "          to the pool only after the quarantine.  A file: lease cannot be taken\n"
    "          from a live process at all: stop the process, and its tuple is free\n"
    "          at once\n"
    "\n"
    "  -r, --registry URI   file:DIR, postgres://... or etcd://HOST:PORT[,...]\n"
    "                       (an idgen:// client's tuples: the daemon's registry)\n"
    "                       (default: the daemon's, the host's file:/var/lib/idgen,\n"
    "                       shared by every user who may write it)\n"
    "      --space NAME     only this ID space (list; default: every space), or\n"
    "                       the space of POOL (free; default: default)\n"
    "      --json           list as one JSON object per line: a space's\n"
    "                       {\"kind\":\"space\",...} before its tuples' rows\n"
    "      --force          free a lease whose holder is alive (not for file:)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Examples:\n"
    "  idgen registry list\n"
    "  idgen registry list --registry file:/var/lib/idgen --json\n"
    "  idgen registry list --registry postgres://idgen@db/idgen --space billing\n"
    "  idgen registry free --registry postgres://idgen@db/idgen \\\n"
    "      epoch=1288834974657,tick=1ms,time@22,sequence@0:12 datacenter=1,worker=7\n"
    "\n"
    "Exit status: 0 success (also: already free), 1 the registry failed or the\n"
    "lease is held, 2 bad usage or an unknown pool or tuple.\n";

static const char *state_name(idgen_lease_state_t s) {
  return s == IDGEN_LEASE_HELD ? "held" : s == IDGEN_LEASE_QUARANTINE ? "quarantine" : "free";
}

typedef struct lister {
  int json;
  const char *uri;
  char pool[IDGEN_POOL_NAME_MAX]; /* the pool whose head was printed */
  int nspaces;
  idgen_space_info_t *spaces;    /* in order */
  const idgen_space_info_t *cur; /* the space being listed */
} lister_t;

/* "8.4s", or "-" for none. */
static const char *duration(int64_t ms, char *buf, size_t n) {
  if (ms < 0)
    return "-";
  snprintf(buf, n, "%.1fs", (double)ms / 1000.0);
  return buf;
}

static void put_json(json_t *o);

static int print_row(void *ctx, const idgen_lease_row_t *row) {
  lister_t *ls = ctx;
  char mark[IDGEN_TIME_TEXT_MAX] = "-", pmark[IDGEN_TIME_TEXT_MAX] = "-", in[32], key[24];
  if (row->mark_ms > 0)
    idgen_time_format(row->mark_ms, mark);
  if (row->pool_mark_ms > 0)
    idgen_time_format(row->pool_mark_ms, pmark);
  snprintf(key, sizeof key, "0x%016" PRIx64, row->key);
  if (ls->json) {
    char g[24];
    snprintf(g, sizeof g, "%" PRIu64, row->generation); /* 64-bit: a string */
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s, s:I, s:s?, s:s, s:s, s:s, s:s, s:I, s:s?, s:o, "
                  "s:s}",
                  "registry", ls->uri, "space", row->space, "pool", row->pool, "layout",
                  row->layout, "pool_mark_ms", (json_int_t)row->pool_mark_ms, "pool_mark",
                  row->pool_mark_ms > 0 ? pmark : NULL, "node", row->node, "key", key, "state",
                  state_name(row->state), "generation", g, "mark_ms", (json_int_t)row->mark_ms,
                  "mark", row->mark_ms > 0 ? mark : NULL, "expires_in_ms",
                  row->expires_in_ms >= 0 ? json_integer(row->expires_in_ms) : json_null(),
                  "holder", row->holder);
    put_json(o);
    return 0;
  }
  if (strcmp(ls->pool, row->pool) != 0) {
    snprintf(ls->pool, sizeof ls->pool, "%s", row->pool);
    int file = strncmp(ls->uri, "file:", 5) == 0, etcd = strncmp(ls->uri, "etcd:", 5) == 0;
    int in_space = ls->cur == NULL;
    for (int i = 0; ls->cur && i < ls->cur->nlayouts; i++)
      if (strcmp(ls->cur->layouts[i].pool, row->pool) == 0)
        in_space = 1;
    printf("\npool %s%s\n  layout     %s\n  pool mark  %s (%s)\n"
           "  %-32s %-10s %6s %-10s %-24s %s\n",
           row->pool, in_space ? "" : " (retired: its layout left the ID space)",
           row->layout[0] ? row->layout : "(unknown)", pmark,
           file   ? "a tuple new to the pool starts above it"
           : etcd ? "etcd keeps none: do not delete idgen's keys by hand"
                  : "a tuple whose row is new or was deleted starts above it",
           "NODE", "STATE", "GEN", "EXPIRES IN", "MARK (holder's clock)", "HOLDER");
  }
  printf("  %-32s %-10s %6" PRIu64 " %-10s %-24s %s\n", row->node, state_name(row->state),
         row->generation, duration(row->expires_in_ms, in, sizeof in), mark,
         row->holder[0] ? row->holder : "-");
  return 0;
}

static void put_json(json_t *o) {
  char *txt = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  if (txt == NULL)
    cli_fail(EXIT_ID, "out of memory");
  puts(txt);
  free(txt);
}

/* Keeps each ID space's information, in order, for printing with its pools. */
static int keep_space(void *ctx, const idgen_space_info_t *in) {
  lister_t *ls = ctx;
  idgen_space_info_t *m = realloc(ls->spaces, (size_t)(ls->nspaces + 1) * sizeof *m);
  if (m == NULL)
    cli_fail(EXIT_ID, "out of memory");
  ls->spaces = m;
  ls->spaces[ls->nspaces++] = *in;
  return 0;
}

/* One ID space: its name, highest ID and layouts (its pools and tuples
 * follow, from a listing of that space alone). */
static void print_space(lister_t *ls, const idgen_space_info_t *in) {
  char hi[24] = "-", rhi[24] = "-";
  if (in->has_highest)
    snprintf(hi, sizeof hi, "%" PRIu64, in->highest_id);
  if (in->has_retired)
    snprintf(rhi, sizeof rhi, "%" PRIu64, in->retired_highest);
  ls->cur = in;
  if (ls->json) {
    json_t *lays = json_array();
    for (int i = 0; i < in->nlayouts; i++) {
      const idgen_space_layout_t *y = &in->layouts[i];
      char floor[IDGEN_TIME_TEXT_MAX], h[24];
      idgen_time_format(y->floor_ms, floor);
      snprintf(h, sizeof h, "%" PRIu64, y->highest_id);
      json_array_append_new(lays, json_pack("{s:s, s:s, s:I, s:s, s:i, s:s?}", "layout", y->layout,
                                            "pool", y->pool, "floor_ms", (json_int_t)y->floor_ms,
                                            "floor", floor, "live", y->live, "highest_id",
                                            y->has_highest ? h : NULL));
    }
    put_json(json_pack("{s:s, s:s, s:s, s:s?, s:s?, s:o}", "kind", "space", "registry", ls->uri,
                       "space", in->name, "highest_id", in->has_highest ? hi : NULL,
                       "retired_highest_id", in->has_retired ? rhi : NULL, "layouts", lays));
    return;
  }
  printf("\nspace %s\n", in->name);
  if (in->has_highest)
    printf("  highest ID %s (at or above every ID issued in it)\n", hi);
  else
    printf("  highest ID - (nothing issued)\n");
  if (in->has_retired)
    printf("  retired    IDs up to %s, of layouts that left it\n", rhi);
  for (int i = 0; i < in->nlayouts; i++) {
    const idgen_space_layout_t *y = &in->layouts[i];
    char floor[IDGEN_TIME_TEXT_MAX];
    idgen_time_format(y->floor_ms, floor);
    printf("  layout     %s\n             %d tuple%s live; holders start above %s\n", y->layout,
           y->live, y->live == 1 ? "" : "s", floor);
  }
}

int cmd_registry(int argc, char **argv) {
  static const struct option opts[] = {
      {"registry", required_argument, 0, 'r'}, {"space", required_argument, 0, 's'},
      {"json", no_argument, 0, 'j'},           {"force", no_argument, 0, 'f'},
      {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
  const char *uri = NULL, *space = NULL;
  int json = 0, force = 0, c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":r:h", opts, NULL)) != -1) {
    switch (c) {
    case 'r':
      uri = optarg;
      break;
    case 's':
      space = optarg;
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
    cli_fail(EXIT_USAGE, "registry free: needs POOL and NODE (as 'idgen registry list' shows "
                         "them)");
  if (is_list && force)
    cli_fail(EXIT_USAGE, "registry list: --force is for free");

  char err[1100] = "", def[1100];
  uri = cli_registry_uri(uri, def, sizeof def);
  idgen_registry_t *r = cli_registry_open("registry", uri, space);
  /* each space's URI, for a listing of all */
  size_t with_n = strlen(uri) + IDGEN_SPACE_NAME_MAX + 8;
  char *with = malloc(with_n);
  if (with == NULL)
    cli_fail(EXIT_ID, "out of memory");
  int rc;
  if (is_list) {
    lister_t ls = {json, idgen_registry_uri(r), "", 0, NULL, NULL};
    if (!json)
      printf("registry %s\n", ls.uri);
    /* Each space, then its pools and tuples from a listing of it alone. */
    rc = idgen_registry_spaces(r, keep_space, &ls, err, sizeof err);
    for (int i = 0; rc == 0 && i < ls.nspaces; i++) {
      idgen_registry_t *rs = r;
      print_space(&ls, &ls.spaces[i]);
      ls.pool[0] = '\0';
      /* (opened by the URI as given: ls.uri is shown, its password masked);
       * a URI that names its space (refused here) lists that one alone */
      if (space == NULL &&
          idgen_registry_uri_with_space(uri, ls.spaces[i].name, with, with_n, NULL, 0) == 0)
        rc = idgen_registry_open(&rs, with, err, sizeof err);
      if (rc == 0)
        rc = idgen_registry_list(rs, print_row, &ls, err, sizeof err);
      if (rs != r)
        idgen_registry_close(rs);
    }
    free(ls.spaces);
  } else {
    rc = idgen_registry_free(r, argv[optind], argv[optind + 1], force, err, sizeof err);
    if (rc == 0)
      printf("%s\n", err[0] ? err : "freed");
  }
  idgen_registry_close(r);
  free(with);
  if (rc < 0)
    cli_fail(rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  return EXIT_OK;
}
