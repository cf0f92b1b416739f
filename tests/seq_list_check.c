/*
 * seq_list_check.c -- the accounting of one sequence counter as
 * idgen_seq_list() reports it (seq_net_procs_test.sh):
 *
 *   seq_list_check URI KEY ISSUED
 *
 * the counter is listed, no holder is left, claimed = issued + given back
 * + lost, ISSUED numbers were issued, and the counter's next number is
 * above every one claimed and not given back (next = claimed - given back
 * + 1: a number given back is claimed again; nobody moved it).  Prints
 * the row; exit status 0, or 1 with a message on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idgen.h"

typedef struct found {
  const char *key;
  int n;
  idgen_seq_row_t row;
} found_t;

static int one(void *ctx, const idgen_seq_row_t *row) {
  found_t *f = ctx;
  if (strcmp(row->key, f->key) == 0) {
    f->row = *row;
    f->n++;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: seq_list_check URI KEY ISSUED\n");
    return 2;
  }
  idgen_registry_t *r;
  char err[600];
  static found_t f;
  f.key = argv[2];
  if (idgen_registry_open(&r, argv[1], err, sizeof err) < 0 ||
      idgen_seq_list(r, one, &f, err, sizeof err) < 0) {
    fprintf(stderr, "seq_list_check: %s\n", err);
    return 1;
  }
  idgen_registry_close(r);
  const idgen_seq_row_t *w = &f.row;
  uint64_t want = strtoull(argv[3], NULL, 10);
  printf("seq_list_check: space=%s key=%s next=%" PRIu64 " claimed=%" PRIu64 " issued=%" PRIu64
         " given_back=%" PRIu64 " lost=%" PRIu64 " holders=%d\n",
         w->space, w->key, w->next, w->claimed, w->issued, w->given_back, w->lost, w->nholders);
  const char *why = f.n != 1                                            ? "not listed once"
                    : w->nholders != 0                                  ? "a holder is left"
                    : w->claimed != w->issued + w->given_back + w->lost ? "claimed != issued + "
                                                                          "given back + lost"
                    : w->issued != want                         ? "issued != the numbers taken"
                    : w->next != w->claimed - w->given_back + 1 ? "next != claimed - given back + 1"
                                                                : NULL;
  if (why != NULL) {
    fprintf(stderr, "seq_list_check: %s\n", why);
    return 1;
  }
  return 0;
}
