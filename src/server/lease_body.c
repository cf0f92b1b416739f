/*
 * lease_body.c -- the lease service's request bodies; see lease_body.h.
 *
 * One table says which members each route takes, of which JSON type, and
 * whether it must be there; the values are then checked by the library's
 * rules, in the order a client would fix them (layout, then node and
 * field, then the rest).
 */
#include "lease_body.h"
#include "seq_io.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_STR, T_INT };
/* Bits of the routes a member belongs to (1 << route), and must be in. */
#define R_ACQ (1u << LR_ACQUIRE)
#define R_ID ((1u << LR_RENEW) | (1u << LR_MARK) | (1u << LR_RELEASE))
#define R_ALL (R_ACQ | R_ID)
#define R_SKV ((1u << LR_SEQ_LOAD) | (1u << LR_SEQ_STORE))
#define R_SST (1u << LR_SEQ_STORE)
#define R_SKEYS (1u << LR_SEQ_KEYS)
#define R_SEQ (R_SKV | R_SKEYS)

typedef struct member {
  const char *name;
  int type;
  unsigned takes, needs; /* routes that take it, routes that need it */
  size_t max;            /* T_STR: bytes, with the NUL */
} member_t;

static const member_t members[] = {
    {"layout", T_STR, R_ALL, R_ALL, IDGEN_LAYOUT_SPEC_MAX},
    {"holder", T_STR, R_ALL, R_ALL, LEASE_HOLDER_MAX + 1},
    {"secret", T_STR, R_ALL, R_ALL, LEASE_SECRET_HEX + 1},
    {"node", T_STR, R_ALL, R_ID, IDGEN_NODE_TEXT_MAX},
    {"field", T_STR, R_ALL, 0, IDGEN_FIELD_NAME_MAX},
    {"space", T_STR, R_ALL | R_SEQ, 0, IDGEN_SPACE_NAME_MAX},
    {"generation", T_INT, R_ID, R_ID, 0},
    {"ttl_ms", T_INT, R_ACQ | (1u << LR_RENEW), 0, 0},
    {"max_start_wait_ms", T_INT, R_ACQ, 0, 0},
    {"start_borrow_ms", T_INT, R_ACQ, 0, 0},
    {"clock_ms", T_INT, R_ACQ, 0, 0},
    {"mark_ms", T_INT, (1u << LR_MARK) | (1u << LR_RELEASE), 1u << LR_MARK, 0},
    {"key", T_STR, R_SKV, R_SKV, IDGEN_SEQ_KEY_MAX},
    {"text", T_STR, R_SST, R_SST, LEASE_SEQ_TEXT_MAX + 1}, /* into out->text */
    {"version", T_INT, R_SST, R_SST, 0},
    {"after", T_STR, R_SKEYS, 0, LEASE_SEQ_AFTER_MAX},
    {"every", T_INT, R_SKEYS, 0, 0},
};
enum { M_KEY = 12, M_TEXT, M_VERSION, M_AFTER, M_EVERY };
#define NMEMBERS (sizeof members / sizeof members[0])

static const char *const route_paths[NLEASE_ROUTES] = {
    "/lease",          "/lease/renew",     "/lease/mark",    "/lease/release",
    "/lease/seq/load", "/lease/seq/store", "/lease/seq/keys"};

size_t lease_body_max(int route) {
  return route == LR_SEQ_STORE ? LEASE_SEQ_BODY_MAX : LEASE_BODY_MAX;
}

int lease_body_route(const char *path, size_t len) {
  for (int r = 0; r < NLEASE_ROUTES; r++)
    if (len == strlen(route_paths[r]) && memcmp(path, route_paths[r], len) == 0)
      return r;
  return -1;
}

static int refuse(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(char *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, LEASE_ERR_MAX, fmt, ap);
  va_end(ap);
  return -1;
}

/* A member's name as the client sent it, quoted safely for a message. */
static const char *shown(const char *key, char *buf, size_t n) {
  size_t k = 0;
  for (const char *p = key; *p && k + 5 < n && p - key < 40; p++) {
    unsigned char c = (unsigned char)*p;
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
      buf[k++] = (char)c;
    else
      k += (size_t)snprintf(buf + k, n - k, "\\x%02X", c);
  }
  buf[k] = '\0';
  return buf;
}

/* Checks each member's name and type against the table (and copies the
 * strings); `seen` gets one bit per member. */
static int read_members(int route, json_t *o, char (*str)[IDGEN_NODE_TEXT_MAX], char *text,
                        json_int_t *num, unsigned *seen, char *err) {
  const char *key;
  json_t *v;
  char q[200];
  json_object_foreach(o, key, v) {
    size_t i = 0;
    while (i < NMEMBERS && strcmp(members[i].name, key) != 0)
      i++;
    if (i == NMEMBERS || !(members[i].takes & (1u << route)))
      return refuse(err, "unknown member \"%s\" in the body of %s", shown(key, q, sizeof q),
                    route_paths[route]);
    const member_t *m = &members[i];
    if (m->type == T_STR) {
      if (!json_is_string(v))
        return refuse(err, "member \"%s\" must be a string", m->name);
      size_t n = json_string_length(v);
      if (n + 1 > m->max)
        return refuse(err, "member \"%s\" is too long (%zu bytes; at most %zu)", m->name, n,
                      m->max - 1);
      if (memchr(json_string_value(v), '\0', n) != NULL)
        return refuse(err, "member \"%s\" holds a NUL character", m->name);
      memcpy(i == M_TEXT ? text : str[i], json_string_value(v), n + 1);
    } else {
      if (!json_is_integer(v))
        return refuse(err, "member \"%s\" must be a whole number", m->name);
      num[i] = json_integer_value(v);
      if (num[i] < 0)
        return refuse(err, "member \"%s\" must not be negative", m->name);
    }
    *seen |= 1u << i;
  }
  for (size_t i = 0; i < NMEMBERS; i++)
    if ((members[i].needs & (1u << route)) && !(*seen & (1u << i)))
      return refuse(err, "member \"%s\" is missing (%s needs it)", members[i].name,
                    route_paths[route]);
  return 0;
}

/* holder: 1..56 printable characters, no spaces; secret: 32 hex digits. */
static int check_names(const char *holder, const char *secret, lease_body_t *out, char *err) {
  size_t n = strlen(holder);
  if (n == 0)
    return refuse(err, "member \"holder\" is empty (host:pid:token)");
  for (size_t i = 0; i < n; i++)
    if (holder[i] <= ' ' || holder[i] >= 0x7f)
      return refuse(err, "member \"holder\": character %zu is a space or not printable", i + 1);
  if (strstr(holder, "_via_") != NULL) /* the service's own mark in the registry's name */
    return refuse(err, "member \"holder\": \"_via_\" is the lease service's, not a client's");
  memcpy(out->holder, holder, n + 1);
  if (strlen(secret) != LEASE_SECRET_HEX)
    return refuse(err, "member \"secret\" must be %d hex digits", LEASE_SECRET_HEX);
  for (size_t i = 0; i < LEASE_SECRET_HEX; i++) {
    char c = secret[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
      return refuse(err, "member \"secret\" must be %d hex digits", LEASE_SECRET_HEX);
    out->secret[i] = (char)(c >= 'A' && c <= 'F' ? c + ('a' - 'A') : c);
  }
  out->secret[LEASE_SECRET_HEX] = '\0';
  return 0;
}

/* layout, field, node and space by the library's rules. */
static int check_tuple(int route, const char *layout, const char *field, const char *node,
                       const char *space, unsigned seen, lease_body_t *out, char *err) {
  char e[LEASE_ERR_MAX - 40];
  if (idgen_layout_parse(&out->layout, layout, e, sizeof e) < 0)
    return refuse(err, "member \"layout\": %s", e);
  if (idgen_layout_format(&out->layout, out->layout_spec, sizeof out->layout_spec) < 0)
    return refuse(err, "member \"layout\": its canonical spec does not fit");
  int f = idgen_lease_field(&out->layout, (seen & LB_FIELD) ? field : NULL, e, sizeof e);
  if (f < 0)
    return refuse(err, "member \"field\": %s", e);
  out->field = f;
  if (idgen_layout_nodes_parse(&out->layout, node, NULL, NULL, out->node, &out->node_given, e,
                               sizeof e) < 0)
    return refuse(err, "member \"node\": %s", e);
  const idgen_layout_t *l = &out->layout;
  for (int i = 0; i < l->nfields; i++) {
    if (l->fields[i].kind != IDGEN_FIELD_NODE)
      continue;
    int given = (out->node_given >> i) & 1;
    if (route == LR_ACQUIRE && i == f && given)
      return refuse(err, "member \"node\": the daemon assigns %s: leave it out of node",
                    l->fields[i].name);
    if (route != LR_ACQUIRE && !given)
      return refuse(err, "member \"node\": the whole tuple is needed, and %s is missing",
                    l->fields[i].name);
  }
  if (space[0] != '\0') {
    char uri[IDGEN_SPACE_NAME_MAX + 64];
    if (idgen_registry_uri_with_space("file:/", space, uri, sizeof uri, e, sizeof e) < 0)
      return refuse(err, "member \"space\": %s", strncmp(e, "registry: ", 10) == 0 ? e + 10 : e);
    memcpy(out->space, space, strlen(space) + 1);
  }
  return 0;
}

/* The sequence routes' members: the space's name, the key's form. */
static int check_seq(char (*s)[IDGEN_NODE_TEXT_MAX], const json_int_t *num, unsigned seen,
                     lease_body_t *out, char *err) {
  char e[LEASE_ERR_MAX - 40];
  if (s[5][0] != '\0') {
    char uri[IDGEN_SPACE_NAME_MAX + 64];
    if (idgen_registry_uri_with_space("file:/", s[5], uri, sizeof uri, e, sizeof e) < 0)
      return refuse(err, "member \"space\": %s", strncmp(e, "registry: ", 10) == 0 ? e + 10 : e);
    memcpy(out->space, s[5], strlen(s[5]) + 1);
    out->have |= LB_SPACE;
  }
  if ((seen >> M_KEY) & 1) {
    if (idgen__seq_key_check(s[M_KEY], e, sizeof e) < 0)
      return refuse(err, "member \"key\": %s", e);
    memcpy(out->key, s[M_KEY], strlen(s[M_KEY]) + 1);
  }
  out->version = (uint64_t)num[M_VERSION];
  memcpy(out->after, s[M_AFTER], strlen(s[M_AFTER]) + 1);
  if (num[M_EVERY] > 1)
    return refuse(err, "member \"every\" must be 0 or 1");
  out->every = (int)num[M_EVERY];
  if (out->every && out->space[0])
    return refuse(err, "members \"every\" and \"space\" do not go together");
  return 0;
}

int lease_body_parse(int route, const char *body, size_t len, lease_body_t *out, char *err) {
  memset(out, 0, sizeof *out);
  err[0] = '\0';
  if (route < 0 || route >= NLEASE_ROUTES)
    return refuse(err, "no such lease route");
  out->route = route;
  if (len > lease_body_max(route))
    return refuse(err, "the body is over %zu bytes", lease_body_max(route));
  json_error_t je;
  json_t *o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (o == NULL)
    return refuse(err, "the body is not JSON: %s (at byte %d)", je.text, je.position);
  if (!json_is_object(o)) {
    json_decref(o);
    return refuse(err, "the body must be a JSON object");
  }
  /* The strings, each within its member's max (on the heap: 9 KiB). */
  char(*s)[IDGEN_NODE_TEXT_MAX] = calloc(NMEMBERS, IDGEN_NODE_TEXT_MAX);
  json_int_t num[NMEMBERS] = {0};
  unsigned seen = 0;
  int rc = s == NULL ? refuse(err, "out of memory")
                     : read_members(route, o, s, out->text, num, &seen, err);
  json_decref(o);
  if (LEASE_ROUTE_IS_SEQ(route)) {
    if (rc == 0)
      rc = check_seq(s, num, seen, out, err);
    free(s);
    return rc;
  }
  if (rc == 0)
    rc = check_names(s[1], s[2], out, err);
  /* The member bits of the table, as lease_body_t.have's. */
  unsigned have = ((seen >> 3) & 1 ? LB_NODE : 0) | ((seen >> 4) & 1 ? LB_FIELD : 0) |
                  ((seen >> 5) & 1 ? LB_SPACE : 0) | ((seen >> 7) & 1 ? LB_TTL : 0) |
                  ((seen >> 8) & 1 ? LB_START_WAIT : 0) | ((seen >> 9) & 1 ? LB_BORROW : 0) |
                  ((seen >> 10) & 1 ? LB_CLOCK : 0) | ((seen >> 11) & 1 ? LB_MARK : 0);
  if (rc == 0)
    rc = check_tuple(route, s[0], s[4], s[3], s[5], have, out, err);
  free(s);
  if (rc < 0)
    return rc;
  out->have = have;
  out->generation = (uint64_t)num[6];
  out->ttl_ms = (int64_t)num[7];
  out->max_start_wait_ms = (int64_t)num[8];
  out->start_borrow_ms = (int64_t)num[9];
  out->clock_ms = (int64_t)num[10];
  out->mark_ms = (int64_t)num[11];
  char e[LEASE_ERR_MAX - 40];
  if ((have & LB_TTL) && idgen_lease_ttl_check(out->ttl_ms, e, sizeof e) < 0)
    return refuse(err, "member \"ttl_ms\": %s", e);
  if ((have & LB_START_WAIT) && out->max_start_wait_ms > IDGEN_START_WAIT_MS_MAX)
    return refuse(err, "member \"max_start_wait_ms\": at most %d", IDGEN_START_WAIT_MS_MAX);
  if ((have & LB_BORROW) && out->start_borrow_ms > IDGEN_MAX_BORROW_MS_MAX)
    return refuse(err, "member \"start_borrow_ms\": at most %d", IDGEN_MAX_BORROW_MS_MAX);
  return 0;
}
