/*
 * fuzz_space.c -- libFuzzer target for the ID-space record (src/registry/
 * space.c, one text in every backend) and the URI's space= parameter.
 *   - A record that is accepted is written back byte for byte (nothing is
 *     read that the format would not write), and a rejected one leaves an
 *     empty record.
 *   - A join of twitter's and js53's layout into an accepted record, with
 *     pools found live or not by a hash of their names, gives a record that
 *     is accepted again, whose layouts of two pools have disjoint ranges
 *     when it was accepted that way, and that holds the newcomer.
 *   - space= taken from a URI leaves no space= parameter behind, and a name
 *     it gives passes the name check.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "registry_int.h"

static int live(void *ctx, const char *pool, char *holders, size_t n, char *err, size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  unsigned h = 0;
  for (const char *p = pool; *p; p++)
    h = h * 31 + (unsigned char)*p;
  if (n)
    holders[0] = '\0';
  return (int)(h & 1);
}

static int issued(void *ctx, const char *pool, int64_t *mark, uint64_t *keys, char *err,
                  size_t errlen) {
  (void)ctx, (void)err, (void)errlen;
  *mark = (int64_t)strlen(pool) * 1000000007;
  *keys = (uint64_t)strlen(pool) << 12;
  return 0;
}

static void join(const idgen__space_t *in, const char *spec) {
  static idgen__space_t s, back;
  static char text[IDGEN__SPACE_TEXT_MAX];
  idgen_layout_t l;
  idgen__pool_t p;
  idgen_lease_request_t req = {0};
  idgen__space_plan_t plan;
  idgen__space_probe_t probe = {NULL, live, issued};
  char err[2048];
  if (idgen_layout_parse(&l, spec, NULL, 0) < 0)
    abort();
  memset(&p, 0, sizeof p);
  idgen__pool_name(&l, p.name);
  idgen_layout_format(&l, p.layout, sizeof p.layout);
  req.layout = &l;
  req.max_start_wait_ms = 10000;
  s = *in;
  int rc =
      idgen__space_join(&s, "default", &p, &l, &req, 1795000000000, &probe, &plan, err, sizeof err);
  if (rc < 0) {
    if (err[0] == '\0')
      abort(); /* every refusal says why */
    return;
  }
  int64_t floor;
  int len = idgen__space_format(&s, text, sizeof text);
  if (len < 0 || idgen__space_parse(text, (size_t)len, &back, err, sizeof err) < 0 ||
      !idgen__space_member(&back, &p, &l, &floor) || floor != plan.floor_ms)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static idgen__space_t s;
  static char again[IDGEN__SPACE_TEXT_MAX];
  char err[512];
  if (idgen__space_parse((const char *)data, size, &s, err, sizeof err) == 0) {
    int len = idgen__space_format(&s, again, sizeof again);
    if (len < 0 || (size_t)len != size || memcmp(again, data, size) != 0)
      abort();
    join(&s, "twitter");
    join(&s, "js53");
  } else if (s.n != 0 || s.nretired != 0 || err[0] == '\0') {
    abort();
  }
  /* The same bytes as a URI. */
  char uri[600], out[600], space[IDGEN_SPACE_NAME_MAX];
  if (size < sizeof uri) {
    memcpy(uri, data, size);
    uri[size] = '\0';
    if (strlen(uri) == size && idgen__uri_take_space(uri, out, sizeof out, space, NULL, 0) == 0) {
      const char *q = strchr(out, '?');
      for (const char *a = q; a != NULL; a = strchr(a + 1, '&'))
        if (strncmp(a + 1, "space=", 6) == 0)
          abort(); /* a space= parameter left behind */
      if (space[0] && idgen__space_name_check(space, NULL, 0) < 0)
        abort();
    }
  }
  return 0;
}
