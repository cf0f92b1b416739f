/*
 * cmd_snowflake.c -- `idgen snowflake`: make Snowflake IDs.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "leased.h"

static const char usage[] =
    "Usage: idgen snowflake [-n N] [--layout L] [--node NAME=V]... [--worker V]\n"
    "                       [--datacenter V] [--json] [--registry URI]\n"
    "                       [--lease-field NAME] [--lease-ttl-ms N]\n"
    "                       [--max-start-wait-ms N] [--max-borrow-ms N] [--max-wait-ms N]\n"
    "                       [--random-sequence-start]\n"
    "\n"
    "Make N Snowflake IDs, one decimal ID per line, strictly increasing.\n"
    "\n"
    "  -n, --count N            how many IDs (default 1, at most 100000000)\n"
    "  -l, --layout L           a preset name or a layout spec (default twitter);\n"
    "                           see 'idgen layouts'\n"
    "      --node NAME=V        the value of node field NAME (default 0); repeat for\n"
    "                           each field\n"
    "      --worker V           the same as --node worker=V\n"
    "      --datacenter V       the same as --node datacenter=V\n"
    "      --json               print {\"ids\":[\"...\",...]}, IDs as strings\n"
    "      --registry URI       where the worker ID comes from: 'static' (default: the\n"
    "                           values given here; uniqueness across processes is\n"
    "                           your job), 'file:DIR' (processes on this host) or\n"
    "                           'postgres://...' (machines sharing a database).  With\n"
    "                           a registry the leased field is assigned, IDs start\n"
    "                           above its recorded high-water mark, and the mark is\n"
    "                           kept ahead of them; see 'idgen registry'\n"
    "      --lease-field NAME   the node field a registry assigns (default worker, or\n"
    "                           the layout's only node field)\n"
    "      --lease-ttl-ms N     the lease's TTL (default " IDGEN_STR(IDGEN_LEASE_TTL_DEFAULT_MS) ")\n"
    "      --max-start-wait-ms N  how long to wait for a worker ID whose mark is\n"
    "                           ahead of the clock (default " IDGEN_STR(IDGEN_START_WAIT_MS_DEFAULT) ")\n"
    "      --max-borrow-ms N    how far the generator's clock may run ahead of the\n"
    "                           wall clock (default " IDGEN_STR(IDGEN_MAX_BORROW_MS_DEFAULT) ")\n"
    "      --max-wait-ms N      how long to wait, beyond the current tick, for a\n"
    "                           clock that is behind (default " IDGEN_STR(IDGEN_MAX_WAIT_MS_DEFAULT) ")\n"
    "      --random-sequence-start  start each tick's sequence at a random value\n"
    "  -h, --help               show this help\n"
    "\n"
    "Examples:\n"
    "  idgen snowflake -n 3 --datacenter 1 --worker 7\n"
    "  idgen snowflake --layout 'time:41@1ms,node:10,sequence:12,epoch=0' --node node=755\n"
    "  idgen snowflake -n 1000 --registry file:./var/idgen --datacenter 1\n"
    "\n"
    "Exit status: 0 success, 1 the clock refused, the layout ran out or the registry\n"
    "failed (unreachable, pool full, lease lost), 2 bad usage.\n";

enum { OPT_NODE = 256, OPT_WORKER, OPT_DC, OPT_JSON, OPT_REGISTRY, OPT_LEASE, OPT_TTL,
       OPT_START_WAIT, OPT_BORROW, OPT_WAIT, OPT_RANDOM };

struct node_opt {
  const char *name;
  const char *value;
  const char *flag;
};

static void set_node(const idgen_layout_t *l, idgen_snowflake_settings_t *s,
                     const struct node_opt *o, unsigned *given) {
  char err[300];
  if (idgen_layout_node_set(l, o->name, o->value, s->node, given, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s: %s", o->flag, err);
}

int cmd_snowflake(int argc, char **argv) {
  static const struct option opts[] = {
      {"count", required_argument, 0, 'n'},   {"layout", required_argument, 0, 'l'},
      {"node", required_argument, 0, OPT_NODE}, {"worker", required_argument, 0, OPT_WORKER},
      {"datacenter", required_argument, 0, OPT_DC}, {"json", no_argument, 0, OPT_JSON},
      {"registry", required_argument, 0, OPT_REGISTRY},
      {"lease-field", required_argument, 0, OPT_LEASE},
      {"lease-ttl-ms", required_argument, 0, OPT_TTL},
      {"max-start-wait-ms", required_argument, 0, OPT_START_WAIT},
      {"max-borrow-ms", required_argument, 0, OPT_BORROW},
      {"max-wait-ms", required_argument, 0, OPT_WAIT},
      {"random-sequence-start", no_argument, 0, OPT_RANDOM},
      {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
  int64_t n = 1;
  const char *layout_spec = "twitter";
  leased_opts_t lo = {"static", NULL, 0, -1};
  int json = 0;
  struct node_opt nodes[IDGEN_LAYOUT_MAX_FIELDS * 2];
  int nnodes = 0;
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);

  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":n:l:h", opts, NULL)) != -1) {
    switch (c) {
    case 'n':
      n = cli_int("--count", optarg, 1, 100000000);
      break;
    case 'l':
      layout_spec = optarg;
      break;
    case OPT_NODE:
    case OPT_WORKER:
    case OPT_DC: {
      if (nnodes == (int)(sizeof nodes / sizeof nodes[0]))
        cli_fail(EXIT_USAGE, "too many --node options");
      struct node_opt *o = &nodes[nnodes++];
      if (c == OPT_NODE) {
        char *eq = strchr(optarg, '=');
        if (eq == NULL || eq == optarg)
          cli_fail(EXIT_USAGE, "--node: \"%s\" is not NAME=VALUE", CLI_QUOTED(optarg));
        *eq = '\0';
        *o = (struct node_opt){optarg, eq + 1, "--node"};
      } else {
        *o = (struct node_opt){c == OPT_WORKER ? "worker" : "datacenter", optarg,
                               c == OPT_WORKER ? "--worker" : "--datacenter"};
      }
      break;
    }
    case OPT_JSON:
      json = 1;
      break;
    case OPT_REGISTRY:
      lo.registry = optarg;
      break;
    case OPT_LEASE:
      lo.lease_field = optarg;
      break;
    case OPT_TTL:
      lo.ttl_ms =
          cli_int("--lease-ttl-ms", optarg, IDGEN_LEASE_TTL_MIN_MS, IDGEN_LEASE_TTL_MAX_MS);
      break;
    case OPT_START_WAIT:
      lo.max_start_wait_ms = cli_int("--max-start-wait-ms", optarg, 0, IDGEN_START_WAIT_MS_MAX);
      break;
    case OPT_BORROW:
      s.max_borrow_ms = cli_int("--max-borrow-ms", optarg, 0, IDGEN_MAX_BORROW_MS_MAX);
      break;
    case OPT_WAIT:
      s.max_wait_ms = cli_int("--max-wait-ms", optarg, 0, IDGEN_MAX_WAIT_MS_MAX);
      break;
    case OPT_RANDOM:
      s.random_sequence_start = 1;
      break;
    case 'h':
      fputs(usage, stdout);
      return EXIT_OK;
    default:
      cli_bad_option("snowflake", c == ':' ? ':' : '?', argv[optind - 1]);
    }
  }
  if (optind < argc)
    cli_fail(EXIT_USAGE, "unexpected argument \"%s\" (see 'idgen snowflake --help')",
             CLI_QUOTED(argv[optind]));

  idgen_layout_t l;
  cli_layout(&l, layout_spec);
  unsigned given = 0;
  for (int i = 0; i < nnodes; i++)
    set_node(&l, &s, &nodes[i], &given);

  char err[512];
  leased_t x = {0};
  int rc = leased_acquire(&x, &lo, &l, &s, err, sizeof err);
  if (rc < 0) {
    leased_close(&x);
    cli_fail(rc == IDGEN_ERANGE || rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  }
  idgen_snowflake_t *g = x.gen;

  uint64_t batch[4096];
  if (json)
    fputs("{\"ids\":[", stdout);
  for (int64_t done = 0, one = 0; done < n;) {
    /* A call waits at most the rest of a tick plus max_wait_ms (G3), so a
     * batch is no larger than what the clock allows now; at least one ID,
     * which waits or is refused as next() would. */
    uint64_t room = one ? 1 : idgen_snowflake_capacity(g);
    size_t k = (size_t)(n - done < 4096 ? n - done : 4096);
    if (room < k)
      k = room > 0 ? (size_t)room : 1;
    rc = idgen_snowflake_next_n(g, batch, k);
    one = rc == IDGEN_EBATCH; /* the window moved since: one ID, then look again */
    if (one)
      continue;
    if (rc < 0) {
      if (json)
        fflush(stdout);
      cli_flush();
      idgen_snowflake_lease_status_t st;
      idgen_snowflake_lease_status(g, &st);
      leased_close(&x);
      cli_fail(EXIT_ID, "cannot make an ID: %s%s%s", idgen_strerror(rc), st.reason[0] ? ": " : "",
               st.reason);
    }
    for (size_t i = 0; i < k; i++) {
      if (json)
        printf("%s\"%" PRIu64 "\"", done + (int64_t)i ? "," : "", batch[i]);
      else
        cli_put_u64_line(batch[i]);
    }
    if (json && ferror(stdout))
      cli_finish_output();
    done += (int64_t)k;
  }
  if (json)
    fputs("]}\n", stdout);
  cli_flush();
  leased_close(&x);
  return EXIT_OK;
}
