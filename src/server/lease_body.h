/*
 * lease_body.h -- the JSON bodies of the lease service's requests (`idgen
 * serve --leases`, docs/SERVE.md "Leases for clients"): POST /lease,
 * /lease/renew, /lease/mark and /lease/release.
 *
 * Pure: one call reads a whole body (jansson parses it; nothing else is
 * kept) into a struct of fixed size, with the layout parsed and the node
 * list read by the library's own rules (idgen_layout_parse,
 * idgen_layout_nodes_parse, idgen_lease_field, idgen_lease_ttl_check).  A
 * refusal names the member at fault; the daemon answers it 400 `invalid`.
 * fuzz/fuzz_lease_body.c is its fuzz target.
 */
#ifndef IDGEN_LEASE_BODY_H
#define IDGEN_LEASE_BODY_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

enum lease_route {
  LR_ACQUIRE,
  LR_RENEW,
  LR_MARK,
  LR_RELEASE,
  LR_SEQ_LOAD,
  LR_SEQ_STORE,
  LR_SEQ_KEYS,
  NLEASE_ROUTES
};
#define LEASE_ROUTE_IS_SEQ(r) ((r) >= LR_SEQ_LOAD)

#define LEASE_BODY_MAX 4096 /* bytes of a body, at most */
/* A sequence record's text, at most (bytes, without its NUL), and the body
 * of /lease/seq/store that carries it (escaped: a line feed is 2 bytes). */
#define LEASE_SEQ_TEXT_MAX 32768
#define LEASE_SEQ_BODY_MAX 49152
/* /lease/seq/keys's "after": "SPACE KEY". */
#define LEASE_SEQ_AFTER_MAX (IDGEN_SPACE_NAME_MAX + IDGEN_SEQ_KEY_MAX + 1)
#define LEASE_HOLDER_MAX 56 /* characters of a client's holder name */
#define LEASE_SECRET_HEX 32 /* hex digits of a lease's secret */
#define LEASE_ERR_MAX 400   /* room for any refusal's message */

/* Members seen (lease_body_t.have). */
enum {
  LB_NODE = 1,
  LB_FIELD = 2,
  LB_SPACE = 4,
  LB_TTL = 8,
  LB_START_WAIT = 16,
  LB_BORROW = 32,
  LB_CLOCK = 64,
  LB_MARK = 128
};

typedef struct lease_body {
  int route; /* enum lease_route */
  unsigned have;
  idgen_layout_t layout;
  char layout_spec[IDGEN_LAYOUT_SPEC_MAX]; /* canonical (idgen_layout_format) */
  int field;                               /* the leased field's index */
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS];  /* by field index */
  unsigned node_given;                     /* one bit per field index */
  char space[IDGEN_SPACE_NAME_MAX];        /* "" when not given: the daemon's own */
  char holder[LEASE_HOLDER_MAX + 1];
  char secret[LEASE_SECRET_HEX + 1]; /* lower-case hex */
  uint64_t generation;               /* renew, mark, release */
  int64_t ttl_ms;                    /* 0 when not given */
  int64_t max_start_wait_ms, start_borrow_ms, clock_ms, mark_ms;
  /* The sequence routes (the lease members above are not theirs but space). */
  char key[IDGEN_SEQ_KEY_MAX];       /* load, store */
  uint64_t version;                  /* store */
  char after[LEASE_SEQ_AFTER_MAX];   /* keys: "" or "SPACE KEY" */
  int every;                         /* keys: of every space */
  char text[LEASE_SEQ_TEXT_MAX + 1]; /* store */
} lease_body_t;

/*
 * Reads the body of `route` from body[0..len) into *out: 0, or -1 with a
 * message naming the member (or saying the body is not a JSON object) in
 * err[LEASE_ERR_MAX].  The members each route takes are docs/SERVE.md's;
 * an unknown member, a member of the wrong type, a string too long, a
 * member missing, a bad layout, node list, field, space, holder, secret
 * or TTL is refused.  For the identity routes, `node` is the whole tuple:
 * every node field given.  The sequence routes take space (optional), key
 * (load, store: a counter's key), text and version (store: text without
 * NUL, at most LEASE_SEQ_TEXT_MAX bytes), after and every (keys).  Thread-safe; allocates only inside jansson.
 */
int lease_body_parse(int route, const char *body, size_t len, lease_body_t *out, char *err);

/* The route of a request path ("/lease", "/lease/renew" ...), or -1. */
int lease_body_route(const char *path, size_t len);
/* The most bytes route's body may have. */
size_t lease_body_max(int route);

#endif
