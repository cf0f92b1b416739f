/*
 * cmd_snowflake.c -- `idgen snowflake`: make Snowflake IDs.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "leased.h"
#include "settings.h"

static const char usage_head[] =
    "Usage: idgen snowflake [-n N] [--json] [OPTIONS]\n"
    "\n"
    "Make N Snowflake IDs, one decimal ID per line, strictly increasing.  The\n"
    "settings are those of 'idgen serve' that make a generator (the same names,\n"
    "defaults, bounds and checks), given as flags; only the registry's default\n"
    "differs: static, the node values as given.  With a registry the leased field\n"
    "is assigned, IDs start above its recorded high-water mark, and the mark is\n"
    "kept ahead of them; see 'idgen registry'.  With --public-key (or\n"
    "$IDGEN_PUBLIC_KEY naming a key file) each ID is printed in its public form\n"
    "('idgen public --help'): then they are not increasing.\n"
    "\n"
    "  -n, --count N              how many IDs (default 1, at most " IDGEN_STR(
        CLI_COUNT_MAX) ")\n"
                       "      --json                 print {\"ids\":[\"...\",...]}, IDs as strings\n"
                       "      --worker V             the same as --node worker=V\n"
                       "      --datacenter V         the same as --node datacenter=V\n"
                       "  -h, --help                 show this help\n"
                       "\n"
                       "Settings:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  idgen snowflake -n 3 --datacenter 1 --worker 7\n"
    "  idgen snowflake --layout 'time:41@1ms,node:10,sequence:12,epoch=0' --node node=755\n"
    "  idgen snowflake -n 1000 --registry file:./var/idgen --datacenter 1\n"
    "  idgen snowflake --public-key order.key --public-prefix order\n"
    "\n"
    "Exit status: 0 success, 1 the clock refused, the layout ran out or the registry\n"
    "failed (unreachable, pool full, lease lost), 2 bad usage.\n";

static void usage(void *ctx) {
  (void)ctx;
  fputs(usage_head, stdout);
  settings_usage(SETTINGS_SNOWFLAKE, stdout);
  fputs(usage_tail, stdout);
}

enum { OPT_WORKER = CLI_OPT_JSON + 1, OPT_DC };

/* The command's own options; --worker and --datacenter stand for --node. */
static int on_option(settings_t *s, void *ctx, int opt, const char *arg) {
  char node[300];
  if (cli_count_option(ctx, opt, arg))
    return 0;
  switch (opt) {
  case OPT_WORKER:
  case OPT_DC:
    snprintf(node, sizeof node, "%s=%s", opt == OPT_WORKER ? "worker" : "datacenter", arg);
    settings_flag(s, SK_NODE, node, opt == OPT_WORKER ? "--worker" : "--datacenter");
    return 0;
  default:
    return 2;
  }
}

/* public_key: $IDGEN_PUBLIC_KEY, a file name, where no flag gives one (this
 * command reads no other IDGEN_* variables). */
static int on_check(settings_t *s, void *ctx, int k) {
  (void)ctx;
  const char *e = getenv(IDGEN_PUBLIC_KEY_ENV);
  if (k == SK_PUBLIC_KEY && e != NULL && e[0] != '\0' && strcmp(s->source[k], "default") == 0)
    settings_set(s, k, e, IDGEN_PUBLIC_KEY_ENV);
  return 0;
}

/* The public forms of ids[k], printed (JSON elements after `done` others).
 * Either form maps the batch in one call. */
static void put_public(idgen_public_t *c, int text, uint64_t *ids, size_t k, int json,
                       int64_t done) {
  if (!text) {
    if (idgen_public_map64_batch(c, ids, ids, k) < 0)
      cli_fail(EXIT_ID, "cannot make a public ID");
    for (size_t i = 0; i < k; i++) {
      if (json)
        printf("%s\"%" PRIu64 "\"", done + (int64_t)i ? "," : "", ids[i]);
      else
        cli_put_u64_line(ids[i]);
    }
    return;
  }
  int len = idgen_public_text_len(c);
  char *buf = len > 0 ? malloc(k * (size_t)len + 1) : NULL;
  if (buf == NULL)
    cli_fail(EXIT_ID, "cannot make a public ID: out of memory");
  int rc = idgen_public_format64_batch(c, ids, k, buf, k * (size_t)len);
  if (rc < 0)
    cli_fail(EXIT_ID, "cannot make a public ID: %s", idgen_strerror(rc));
  for (size_t i = 0; i < k; i++) {
    const char *t = buf + i * (size_t)len;
    if (json)
      printf("%s\"%.*s\"", done + (int64_t)i ? "," : "", len, t);
    else
      cli_put_line(t, (size_t)len);
  }
  free(buf);
}

/* The codec of the settings' public key, or NULL when none is given. */
static idgen_public_t *public_codec(const settings_t *set) {
  if (set->public_keys == NULL)
    return NULL;
  char err[512];
  idgen_public_t *c = NULL;
  idgen_public_settings_t ps = {IDGEN_PUBLIC_SNOWFLAKE, (unsigned)set->layout.total_bits,
                                set->public_form == PUBLIC_TEXT ? set->public_prefix : NULL,
                                set->public_version};
  if (idgen_public_new(&c, set->public_keys, &ps, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "snowflake: %s", err);
  return c;
}

int cmd_snowflake(int argc, char **argv) {
  static const struct option extra[] = {{"count", required_argument, 0, 'n'},
                                        {"json", no_argument, 0, CLI_OPT_JSON},
                                        {"worker", required_argument, 0, OPT_WORKER},
                                        {"datacenter", required_argument, 0, OPT_DC},
                                        {0, 0, 0, 0}};
  cli_count_t own = {1, 0};
  const settings_spec_t spec = {
      SETTINGS_SNOWFLAKE, "snowflake", 0, extra, "n:", on_option, on_check, usage, &own};
  settings_t set;
  int rc = settings_load(&set, &spec, argc, argv);
  if (rc != 0) {
    settings_free(&set);
    return rc == 1 ? EXIT_OK : EXIT_USAGE;
  }
  if (set.host_nodes[0] != '\0') /* said, as the daemon says it at start */
    cli_error("warning: node values from the host (%s) are unchecked: another process on this "
              "host, or another host, with the same values makes the same IDs; a registry "
              "(--registry file:DIR or postgres://...) leases node values and checks them",
              set.host_nodes);
  int64_t n = own.n;
  int json = own.json;
  const idgen_layout_t *l = &set.layout;
  leased_opts_t lo = {set.registry, set.lease_field, set.lease_ttl_ms, set.max_start_wait_ms};
  idgen_snowflake_settings_t s = set.gen;

  char err[512];
  leased_t x = {0};
  rc = leased_acquire(&x, &lo, l, &s, err, sizeof err);
  if (rc < 0) {
    leased_close(&x);
    settings_free(&set);
    cli_fail(rc == IDGEN_ERANGE || rc == IDGEN_EINVAL ? EXIT_USAGE : EXIT_ID, "%s", err);
  }
  idgen_snowflake_gen_t *g = x.gen;
  idgen_public_t *pub = public_codec(&set);

  uint64_t batch[4096];
  if (json)
    fputs("{\"ids\":[", stdout);
  for (int64_t done = 0, one = 0; done < n;) {
    /* A call waits at most max_wait_ms and the rest of a short tick (bounded), so a
     * batch is no larger than what the clock allows now; at least one ID,
     * which waits or is refused as next() would. */
    uint64_t room = one ? 1 : idgen_snowflake_gen_capacity(g);
    size_t k = (size_t)(n - done < 4096 ? n - done : 4096);
    if (room < k)
      k = room > 0 ? (size_t)room : 1;
    rc = idgen_snowflake_gen_next_n(g, batch, k);
    one = rc == IDGEN_EBATCH; /* the window moved since: one ID, then look again */
    if (one)
      continue;
    if (rc < 0) {
      if (json)
        fflush(stdout);
      cli_flush();
      idgen_snowflake_lease_status_t st;
      idgen_snowflake_gen_lease_status(g, &st);
      leased_close(&x);
      cli_fail(EXIT_ID, "cannot make an ID: %s%s%s", idgen_strerror(rc), st.reason[0] ? ": " : "",
               st.reason);
    }
    if (pub != NULL)
      put_public(pub, set.public_form == PUBLIC_TEXT, batch, k, json, done);
    for (size_t i = 0; pub == NULL && i < k; i++) {
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
  idgen_public_free(pub);
  leased_close(&x);
  settings_free(&set);
  return EXIT_OK;
}
