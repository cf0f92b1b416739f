/*
 * fuzz_lease_body.c -- libFuzzer target for the lease service's request
 * bodies (src/server/lease_body.c), the JSON of POST /lease, /lease/renew,
 * /lease/mark and /lease/release, and of /lease/seq/load, /store, /keys.
 *
 * The first byte picks the route, the rest is the body.  Properties: never
 * crashes or reads outside the input; a refusal has a message; an accepted
 * body has a holder of 1 to 56 printable characters without spaces, a
 * secret of 32 lower-case hex digits, a leased field that is a node field
 * of its layout, a canonical layout that parses to the same layout, for an
 * acquisition no value of the leased field and for the other routes the
 * whole tuple; a sequence route's body has a well-formed key (load,
 * store), a text within LEASE_SEQ_TEXT_MAX (store), every 0 or 1 and not
 * beside a space (keys); and parsing it again gives the same result.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lease_body.h"
#include "seq_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lease_body_t a, b; /* (large: not on the stack) */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  int route = data[0] % NLEASE_ROUTES;
  const char *body = (const char *)data + 1;
  size_t len = size - 1;
  char err[LEASE_ERR_MAX];
  if (lease_body_parse(route, body, len, &a, err) < 0) {
    if (err[0] == '\0' || strlen(err) >= LEASE_ERR_MAX)
      abort();
    return 0;
  }
  if (LEASE_ROUTE_IS_SEQ(route)) {
    if (route != LR_SEQ_KEYS && idgen__seq_key_check(a.key, NULL, 0) != 0)
      abort();
    if (strlen(a.text) > LEASE_SEQ_TEXT_MAX || (a.every != 0 && a.every != 1) ||
        (a.every && a.space[0]) || a.holder[0] != '\0')
      abort();
    if (lease_body_parse(route, body, len, &b, err) != 0 || memcmp(&a, &b, sizeof a) != 0)
      abort();
    return 0;
  }
  size_t h = strlen(a.holder);
  if (h == 0 || h > LEASE_HOLDER_MAX)
    abort();
  for (size_t i = 0; i < h; i++)
    if (a.holder[i] <= ' ' || a.holder[i] >= 0x7f)
      abort();
  if (strlen(a.secret) != LEASE_SECRET_HEX || strspn(a.secret, "0123456789abcdef") != 32)
    abort();
  const idgen_layout_t *l = &a.layout;
  if (a.field < 0 || a.field >= l->nfields || l->fields[a.field].kind != IDGEN_FIELD_NODE)
    abort();
  idgen_layout_t again;
  char e[300];
  if (idgen_layout_parse(&again, a.layout_spec, e, sizeof e) < 0 ||
      again.total_bits != l->total_bits || again.nfields != l->nfields)
    abort();
  for (int i = 0; i < l->nfields; i++) {
    int given = (a.node_given >> i) & 1;
    if (l->fields[i].kind != IDGEN_FIELD_NODE)
      continue;
    if (route == LR_ACQUIRE ? (i == a.field && given) : !given)
      abort();
    if (given && l->fields[i].bits < 64 && a.node[i] >> l->fields[i].bits)
      abort();
  }
  if (lease_body_parse(route, body, len, &b, err) != 0 || memcmp(&a, &b, sizeof a) != 0)
    abort();
  return 0;
}
