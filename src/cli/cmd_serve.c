/*
 * cmd_serve.c -- `idgen serve`: settings in, daemon out (src/server).
 */
#include <stdio.h>

#include "cli.h"
#include "config.h"
#include "server.h"

int cmd_serve(int argc, char **argv) {
  serve_config_t c;
  int rc = serve_config_load(&c, argc, argv);
  if (rc == 1) { /* --help, --settings-markdown */
    serve_config_free(&c);
    return EXIT_OK;
  }
  if (rc == 0 && c.s.check_only) {
    serve_config_print(&c, stdout);
    serve_config_free(&c);
    return EXIT_OK;
  }
  if (rc == 0) {
    fflush(stdout);
    rc = serve_run(&c) == 0 ? EXIT_OK : EXIT_ID;
  }
  serve_config_free(&c);
  return rc;
}
