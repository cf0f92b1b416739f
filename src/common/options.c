/*
 * options.c -- the one list of a JavaScript Snowflake generator's option
 * names (options.h).  A name added here must be read by both front ends
 * (js/src/addon.c opts_read, js/lib/wasm.js); the list's order is the order
 * the messages show.
 */
#include "options.h"

#include <stdio.h>
#include <string.h>

#define OPTIONS_LIST                                                                               \
  "layout, registry, space, node, leaseField, ttlMs, maxWaitMs, maxBorrowMs, maxStartWaitMs, "     \
  "randomSequenceStart, clock"

/* Whether name is one of OPTIONS_LIST's comma-separated words. */
int options_known(const char *name) {
  if (name == NULL || name[0] == '\0')
    return 0;
  size_t len = strlen(name);
  for (const char *p = OPTIONS_LIST; *p != '\0';) {
    size_t w = strcspn(p, ",");
    if (w == len && memcmp(p, name, len) == 0)
      return 1;
    p += w;
    p += strspn(p, ", ");
  }
  return 0;
}

const char *options_list(void) { return OPTIONS_LIST; }

void options_unknown_message(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "unknown option \"%s\"; known: %s", name ? name : "", OPTIONS_LIST);
}
