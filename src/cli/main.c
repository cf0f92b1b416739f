/*
 * main.c -- the idgen command: dispatches to one command per file.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "Usage: idgen COMMAND [OPTIONS]\n"
    "\n"
    "Mint and read unique, time-ordered IDs.\n"
    "\n"
    "Commands:\n"
    "  snowflake   make Snowflake IDs (64-bit, any bit layout)\n"
    "  ulid        make ULIDs (128-bit, 26 characters)\n"
    "  uuid7       make UUIDv7s (RFC 9562)\n"
    "  decode      read IDs back: time, node fields, sequence; ULID; UUID\n"
    "  layouts     list the preset layouts and their specs\n"
    "  plan        lifetime, exhaustion date and capacity of a layout (or --seq)\n"
    "  bench       measure the generator on this machine\n"
    "  registry    list the worker-ID leases of a registry; free a stale one\n"
    "  seq         dense numbers and business numbers (INV-2026-000042) from a registry\n"
    "  public      public IDs: a keyed form that hides time, worker and order; back\n"
    "  serve       the daemon: IDs over HTTP/1.1 and the Redis protocol\n"
    "\n"
    "Options:\n"
    "  -h, --help     show this help (COMMAND --help for a command's own)\n"
    "  -V, --version  show the version\n"
    "\n"
    "Exit status: 0 success, 1 an ID could not be made or read, 2 bad usage.\n"
    "Errors go to standard error as one line: 'idgen: MESSAGE'.\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
    fputs(usage, stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    printf("idgen %s\n", idgen_version());
    cli_finish_output();
    return EXIT_OK;
  }
  static const struct {
    const char *name;
    int (*run)(int, char **);
  } commands[] = {
      {"snowflake", cmd_snowflake}, {"ulid", cmd_ulid},
      {"uuid7", cmd_uuid7},         {"decode", cmd_decode},
      {"layouts", cmd_layouts},     {"plan", cmd_plan},
      {"bench", idgen_bench_main},  {"serve", cmd_serve},
      {"registry", cmd_registry},   {"seq", cmd_seq},
      {"public", cmd_public},
  };
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(cmd, commands[i].name) == 0) {
      int rc = commands[i].run(argc - 1, argv + 1);
      cli_finish_output();
      return rc;
    }
  cli_fail(EXIT_USAGE, "unknown command \"%s\" (see 'idgen --help')", CLI_QUOTED(cmd));
}
