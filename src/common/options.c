/*
 * options.c -- the one list of a JavaScript Snowflake generator's option
 * names, and the one of a Sequence's (options.h).  A name added here must be read by both front ends
 * (js/src/addon.c opts_read, js/lib/wasm.js); the list's order is the order
 * the messages show.
 */
#include "options.h"

#include <stdio.h>
#include <string.h>

#define OPTIONS_LIST                                                                               \
  "layout, registry, space, node, leaseField, ttlMs, maxWaitMs, maxBorrowMs, maxStartWaitMs, "     \
  "randomSequenceStart, clock"

#define SEQ_OPTIONS_LIST                                                                           \
  "registry, space, minStep, maxStep, step, prefetch, ahead, segmentTargetMs, ttlMs, waitMs, "     \
  "strict, format, tz"

/* Whether name is one of list's comma-separated words. */
static int known_in(const char *list, const char *name) {
  if (name == NULL || name[0] == '\0')
    return 0;
  size_t len = strlen(name);
  for (const char *p = list; *p != '\0';) {
    size_t w = strcspn(p, ",");
    if (w == len && memcmp(p, name, len) == 0)
      return 1;
    p += w;
    p += strspn(p, ", ");
  }
  return 0;
}

int options_known(const char *name) { return known_in(OPTIONS_LIST, name); }

const char *options_list(void) { return OPTIONS_LIST; }

void options_unknown_message(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "unknown option \"%s\"; known: %s", name ? name : "", OPTIONS_LIST);
}

int seq_options_known(const char *name) { return known_in(SEQ_OPTIONS_LIST, name); }

const char *seq_options_list(void) { return SEQ_OPTIONS_LIST; }

void seq_options_unknown_message(const char *name, char *buf, size_t n) {
  snprintf(buf, n, "unknown option \"%s\"; known: %s", name ? name : "", SEQ_OPTIONS_LIST);
}
