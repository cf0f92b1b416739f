/*
 * serve_public.c -- public IDs in the daemon (public_key): the keys in
 * force, swapped on SIGHUP; each event loop's codecs, made from them on
 * first use and again after a swap (a codec is one thread's); the public
 * form of IDs made for a request, of an ID given (RESP PUBLIC), and the ID
 * behind a public form (RESP UNPUBLIC, /decode); their counters and facts.
 * A key is never logged or shown: only its versions are.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server_int.h"
#include "settings.h"

static const char *const fail_names[NPUBF] = {"key", "parse", "range", "nokey", "other"};

int serve_public_init(serve_daemon_t *s) {
  /* the configuration's keys (settings_free frees them) */
  atomic_store(&s->pub_keys, s->cfg->s.public_keys);
  atomic_store(&s->pub_gen, 1);
  return 0;
}

int serve_public_on(serve_daemon_t *s) { return atomic_load(&s->pub_keys) != NULL; }

/* "1,2,3" into buf[n]: the versions held. */
static void versions_text(const idgen_public_keys_t *k, char *buf, size_t n) {
  unsigned v[IDGEN_PUBLIC_VERSION_MAX];
  size_t m = idgen_public_keys_versions(k, v, IDGEN_PUBLIC_VERSION_MAX), o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < m && i < IDGEN_PUBLIC_VERSION_MAX && o + 4 < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%u", i ? "," : "", v[i]);
}

void serve_public_reload(serve_daemon_t *s) {
  const char *path = s->cfg->s.value[SK_PUBLIC_KEY];
  if (atomic_load(&s->pub_keys) == NULL || path[0] == '\0')
    return;
  idgen_public_keys_t **more = realloc(s->pub_old, (size_t)(s->pub_nold + 1) * sizeof *more);
  if (more == NULL) {
    log_event("error", "public_key_reload", "file=%s error=\"out of memory\" action=kept", path);
    return;
  }
  s->pub_old = more;
  idgen_public_keys_t *fresh = NULL;
  char err[600];
  /* The library's messages name the line and the mode, never a key. */
  if (idgen_public_keys_load(&fresh, path, err, sizeof err) < 0) {
    log_event("error", "public_key_reload", "file=%s error=%s action=kept", path,
              log_quote(err, strlen(err), (char[700]){0}, 700));
    return;
  }
  unsigned pin = s->cfg->s.public_version, v[IDGEN_PUBLIC_VERSION_MAX];
  size_t nv = idgen_public_keys_versions(fresh, v, IDGEN_PUBLIC_VERSION_MAX), i = 0;
  while (pin != 0 && i < nv && v[i] != pin)
    i++;
  if (pin != 0 && i == nv) {
    log_event("error", "public_key_reload",
              "file=%s error=\"no key version %u (public_key_version)\" action=kept", path, pin);
    idgen_public_keys_free(fresh);
    return;
  }
  s->pub_old[s->pub_nold++] = atomic_exchange(&s->pub_keys, fresh);
  atomic_fetch_add(&s->pub_gen, 1); /* after the keys: a loop reads the count first */
  char vs[128];
  versions_text(fresh, vs, sizeof vs);
  log_event("info", "public_key_reload", "file=%s versions=%s newest=%u", path, vs,
            idgen_public_keys_newest(fresh));
}

void serve_public_fini(serve_daemon_t *s) {
  idgen_public_keys_t *now = atomic_exchange(&s->pub_keys, NULL);
  for (int i = 0; i < s->pub_nold; i++)
    if (s->pub_old[i] != s->cfg->s.public_keys)
      idgen_public_keys_free(s->pub_old[i]);
  if (now != s->cfg->s.public_keys)
    idgen_public_keys_free(now);
  free(s->pub_old);
  s->pub_old = NULL;
  s->pub_nold = 0;
}

void serve_public_worker_free(serve_worker_t *w) {
  for (int k = 0; k < NKINDS; k++) {
    idgen_public_free(w->pub[k]);
    w->pub[k] = NULL;
  }
  free(w->pub_ids);
  w->pub_ids = NULL;
  w->pub_cap = 0;
}

void serve_public_count(serve_worker_t *w, int rc) {
  int f = rc == IDGEN_EKEY     ? PUBF_KEY
          : rc == IDGEN_EPARSE ? PUBF_PARSE
          : rc == IDGEN_ERANGE ? PUBF_RANGE
          : rc == SERVE_ENOKEY ? PUBF_NOKEY
                               : PUBF_OTHER;
  CNT_ADD(w->st.pub_fail[f], 1);
}

idgen_public_t *serve_public_codec(serve_worker_t *w, int kind, char *why, size_t n) {
  serve_daemon_t *s = w->srv;
  uint64_t gen = atomic_load(&s->pub_gen); /* before the keys (serve_public_reload) */
  if (gen != w->pub_gen) {
    for (int k = 0; k < NKINDS; k++) {
      idgen_public_free(w->pub[k]);
      w->pub[k] = NULL;
    }
    w->pub_gen = gen;
  }
  if (w->pub[kind] != NULL)
    return w->pub[kind];
  const idgen_public_keys_t *keys = atomic_load(&s->pub_keys);
  if (keys == NULL) {
    snprintf(why, n, "public IDs are off: the daemon has no public_key (--public-key FILE)");
    return NULL;
  }
  idgen_public_settings_t ps = {.kind = kind == KIND_SNOWFLAKE ? IDGEN_PUBLIC_SNOWFLAKE
                                        : kind == KIND_ULID    ? IDGEN_PUBLIC_ULID
                                                               : IDGEN_PUBLIC_UUID7,
                                .bits =
                                    kind == KIND_SNOWFLAKE ? (unsigned)s->layout->total_bits : 0,
                                .prefix = s->cfg->s.public_prefix,
                                .version = s->cfg->s.public_version};
  char err[300];
  if (idgen_public_new(&w->pub[kind], keys, &ps, err, sizeof err) < 0) {
    snprintf(why, n, "public IDs: %s", err);
    w->pub[kind] = NULL;
  }
  return w->pub[kind];
}

static int text_form(serve_daemon_t *s) { return s->cfg->s.public_form == PUBLIC_TEXT; }

/* 16 bytes as a ULID (26 characters) or a UUID (36) into out: the length. */
static int text128(int kind, const uint8_t b[16], char *out) {
  if (kind == KIND_ULID) {
    idgen_ulid_t u;
    memcpy(u.bytes, b, 16);
    idgen_ulid_format(&u, out);
    return IDGEN_ULID_STRLEN;
  }
  idgen_uuid_t u;
  memcpy(u.bytes, b, 16);
  idgen_uuid_format(&u, out);
  return IDGEN_UUID_STRLEN;
}

/* One 128-bit ID's public form (bytes id) into out: its length, or a code. */
static int public128(serve_daemon_t *s, idgen_public_t *p, int kind, const uint8_t id[16],
                     char *out, size_t n) {
  if (text_form(s))
    return idgen_public_format128(p, id, out, n);
  uint8_t pub[16];
  int rc = idgen_public_map128(p, id, pub);
  if (rc < 0)
    return rc;
  return text128(kind, pub, out);
}

/* A new 128-bit ID of kind into id. */
static int make128(serve_daemon_t *s, int kind, uint8_t id[16]) {
  int rc;
  if (kind == KIND_ULID) {
    idgen_ulid_t u;
    if ((rc = idgen_ulid_gen_next(s->ulid, &u)) < 0)
      return rc;
    memcpy(id, u.bytes, 16);
    return 0;
  }
  idgen_uuid_t u;
  if ((rc = idgen_uuid7_gen_next(s->uuid7, &u)) < 0)
    return rc;
  memcpy(id, u.bytes, 16);
  return 0;
}

/* Room for n uint64_t in w->pub_ids: 0 or IDGEN_ENOMEM. */
static int pub_room(serve_worker_t *w, size_t n) {
  if (n <= w->pub_cap)
    return 0;
  uint64_t *q = realloc(w->pub_ids, n * sizeof *q);
  if (q == NULL)
    return IDGEN_ENOMEM;
  w->pub_ids = q;
  w->pub_cap = n;
  return 0;
}

/* n texts of len characters back to back at at + n, spread down to at with
 * a NUL after each: text i moves down by n - i bytes, so neither it nor its
 * NUL lands on a text not yet moved. */
static void texts_spread(char *at, size_t n, size_t len) {
  for (size_t i = 0; i < n; i++) {
    memmove(at + i * (len + 1), at + n + i * len, len);
    at[i * (len + 1) + len] = '\0';
  }
}

/* The text forms of n IDs (ids64, or ids128 if NULL) as one batch, each
 * followed by its NUL. */
static int texts_batch(idgen_public_t *p, const uint64_t *ids64, const uint8_t (*ids128)[16],
                       size_t n, serve_buf_t *b) {
  int tl = idgen_public_text_len(p);
  if (tl < 0)
    return tl;
  size_t len = (size_t)tl;
  serve_buf_reserve(b, n * (len + 1));
  char *at = b->p + b->len;
  int rc = ids64 != NULL ? idgen_public_format64_batch(p, ids64, n, at + n, n * len)
                         : idgen_public_format128_batch(p, ids128, n, at + n, n * len);
  if (rc < 0)
    return rc;
  texts_spread(at, n, len);
  b->len += n * (len + 1);
  return 0;
}

/* Snowflake IDs' public forms: mapped as one batch. */
static int texts64(serve_worker_t *w, idgen_public_t *p, const uint64_t *ids, size_t n,
                   serve_buf_t *b) {
  if (text_form(w->srv))
    return texts_batch(p, ids, NULL, n, b);
  int rc = pub_room(w, n);
  if (rc < 0)
    return rc;
  rc = idgen_public_map64_batch(p, ids, w->pub_ids, n);
  if (rc < 0)
    return rc;
  serve_buf_reserve(b, n * 21);
  for (size_t i = 0; i < n; i++) {
    b->len += serve_u64_dec(b->p + b->len, w->pub_ids[i]);
    b->p[b->len++] = '\0';
  }
  return 0;
}

/* n new 128-bit IDs' public forms: mapped as one batch. */
static int texts128(serve_worker_t *w, idgen_public_t *p, int kind, size_t n, serve_buf_t *b) {
  int rc;
  if ((rc = pub_room(w, 4 * n)) < 0) /* the IDs, then their integer forms */
    return rc;
  uint8_t(*in)[16] = (uint8_t(*)[16])(void *)w->pub_ids;
  uint8_t(*v)[16] = in + n;
  for (size_t i = 0; i < n; i++)
    if ((rc = make128(w->srv, kind, in[i])) < 0)
      return rc;
  if (text_form(w->srv))
    return texts_batch(p, NULL, (const uint8_t(*)[16])in, n, b);
  if ((rc = idgen_public_map128_batch(p, (const uint8_t(*)[16])in, v, n)) < 0)
    return rc;
  serve_buf_reserve(b, n * (IDGEN_UUID_STRLEN + 1));
  for (size_t i = 0; i < n; i++) {
    if (kind == KIND_ULID) {
      idgen_ulid_t u;
      memcpy(u.bytes, v[i], 16);
      idgen_ulid_format(&u, b->p + b->len); /* and its NUL */
      b->len += IDGEN_ULID_STRLEN + 1;
    } else {
      idgen_uuid_t u;
      memcpy(u.bytes, v[i], 16);
      idgen_uuid_format(&u, b->p + b->len);
      b->len += IDGEN_UUID_STRLEN + 1;
    }
  }
  return 0;
}

int serve_public_make(serve_worker_t *w, int kind, const uint64_t *ids, size_t n, serve_buf_t *b) {
  char why[300];
  idgen_public_t *p = serve_public_codec(w, kind, why, sizeof why);
  int rc = 0;
  b->len = 0;
  if (p == NULL)
    rc = SERVE_ENOKEY;
  else if (kind == KIND_SNOWFLAKE)
    rc = texts64(w, p, ids, n, b);
  else
    rc = texts128(w, p, kind, n, b);
  if (w->pub_cap * sizeof *w->pub_ids > SCRATCH_KEEP) { /* a large batch's room given back */
    free(w->pub_ids);
    w->pub_ids = NULL;
    w->pub_cap = 0;
  }
  if (rc < 0) {
    serve_public_count(w, rc);
    return rc;
  }
  CNT_ADD(w->st.pub_made, n);
  return 0;
}

static int all_digits(const char *t, size_t len) {
  if (len == 0)
    return 0;
  for (size_t i = 0; i < len; i++)
    if (t[i] < '0' || t[i] > '9')
      return 0;
  return 1;
}

/* A decimal Snowflake ID (at most 20 digits, below 2^64) into *v. */
static int dec64(const char *t, size_t len, uint64_t *v) {
  uint64_t x = 0;
  if (!all_digits(t, len) || len > 20)
    return -1;
  for (size_t i = 0; i < len; i++) {
    uint64_t d = (uint64_t)(t[i] - '0');
    if (x > (UINT64_MAX - d) / 10)
      return -1;
    x = x * 10 + d;
  }
  *v = x;
  return 0;
}

/* An ID given as text: a decimal Snowflake ID, a ULID or a UUID: its kind,
 * and its value in *v (Snowflake) or id.  0, or a code with err. */
static int parse_id(const char *t, size_t len, int *kind, uint64_t *v, uint8_t id[16], char *err,
                    size_t n) {
  if (all_digits(t, len)) {
    *kind = KIND_SNOWFLAKE;
    if (dec64(t, len, v) == 0)
      return 0;
    snprintf(err, n, "ID \"%s\" is over 2^64", IDGEN_QUOTE(t, len, '"', 40));
    return IDGEN_ERANGE;
  }
  int rc;
  if (len == IDGEN_ULID_STRLEN) {
    idgen_ulid_t u;
    *kind = KIND_ULID;
    if ((rc = idgen_ulid_parse(&u, t, len, IDGEN_ULID_STRICT, err, n)) == 0)
      memcpy(id, u.bytes, 16);
    return rc;
  }
  idgen_uuid_t u;
  *kind = KIND_UUID7;
  if ((rc = idgen_uuid_parse(&u, t, len, err, n)) < 0) {
    snprintf(err, n,
             "\"%s\" is not an ID: a decimal Snowflake ID, a ULID (26 characters) or a "
             "UUIDv7",
             IDGEN_QUOTE(t, len, '"', 40));
    return IDGEN_EPARSE;
  }
  memcpy(id, u.bytes, 16);
  return 0;
}

/* An error of the library's for a call with no message of its own. */
static int lib_error(int rc, const char *what, char *err, size_t n) {
  snprintf(err, n, "%s: %s", what, idgen_strerror(rc));
  return rc;
}

int serve_public_of(serve_worker_t *w, const char *t, size_t len, char *out, size_t outn, char *err,
                    size_t n) {
  int kind, rc;
  uint64_t v = 0;
  uint8_t id[16];
  idgen_public_t *p = NULL;
  if ((rc = parse_id(t, len, &kind, &v, id, err, n)) < 0) {
  } else if ((p = serve_public_codec(w, kind, err, n)) == NULL) {
    rc = SERVE_ENOKEY;
  } else if (kind != KIND_SNOWFLAKE) {
    rc = public128(w->srv, p, kind, id, out, outn);
    if (rc < 0)
      lib_error(rc, kind == KIND_UUID7 ? "a UUID's public form needs a UUIDv7" : "ULID", err, n);
  } else if (text_form(w->srv)) {
    rc = idgen_public_format64(p, v, out, outn);
    if (rc < 0)
      snprintf(err, n, "ID %" PRIu64 " is not below 2^%d (the layout's bits)", v,
               w->srv->layout->total_bits);
  } else {
    uint64_t pub;
    rc = idgen_public_map64(p, v, &pub);
    if (rc < 0)
      snprintf(err, n, "ID %" PRIu64 " is not below 2^%d (the layout's bits)", v,
               w->srv->layout->total_bits);
    else
      rc = (int)serve_u64_dec(out, pub);
  }
  if (rc < 0) {
    serve_public_count(w, rc);
    return rc;
  }
  out[rc] = '\0';
  CNT_ADD(w->st.pub_made, 1);
  return rc;
}

/* The daemon's kind of a library kind. */
static int kind_of_lib(idgen_public_kind_t k) {
  return k == IDGEN_PUBLIC_SNOWFLAKE ? KIND_SNOWFLAKE
         : k == IDGEN_PUBLIC_ULID    ? KIND_ULID
                                     : KIND_UUID7;
}

/* The ID behind a 128-bit text form: tried as kinds[0], then, if its check
 * fails, as kinds[1], in idgen_public_kind_of's order (the kind is part of
 * the tweak, but a check passes by chance as often as for a wrong key: the
 * order decides which kind such a chance can hurt).  The first try's error
 * if neither passes. */
static int reverse128(serve_worker_t *w, const char *t, size_t len,
                      const idgen_public_kind_t kinds[2], uint8_t id[16], int *kind,
                      unsigned *version, char *err, size_t n) {
  char e2[300];
  idgen_public_t *p = serve_public_codec(w, kind_of_lib(kinds[0]), err, n);
  if (p == NULL)
    return SERVE_ENOKEY;
  *kind = kind_of_lib(kinds[0]);
  int rc = idgen_public_parse128(p, t, len, id, version, err, n);
  if (rc != IDGEN_EKEY)
    return rc;
  idgen_public_t *q = serve_public_codec(w, kind_of_lib(kinds[1]), e2, sizeof e2);
  if (q != NULL && idgen_public_parse128(q, t, len, id, version, e2, sizeof e2) == 0) {
    *kind = kind_of_lib(kinds[1]);
    return 0;
  }
  return rc;
}

/* The ID behind an integer form: decimal (Snowflake), a UUIDv4 (UUIDv7),
 * 26 characters (ULID); its text into out. */
static int reverse_int(serve_worker_t *w, const char *t, size_t len, char *out, int *kind,
                       char *err, size_t n) {
  uint64_t v = 0;
  uint8_t pub[16], id[16];
  int rc = parse_id(t, len, kind, &v, pub, err, n);
  if (rc < 0)
    return rc;
  idgen_public_t *p = serve_public_codec(w, *kind, err, n);
  if (p == NULL)
    return SERVE_ENOKEY;
  if (*kind == KIND_SNOWFLAKE) {
    if ((rc = idgen_public_unmap64(p, v, &v)) < 0) {
      snprintf(err, n, "public ID %s is not below 2^%d (the layout's bits)",
               IDGEN_QUOTE(t, len, '"', 40), w->srv->layout->total_bits);
      return rc;
    }
    return (int)serve_u64_dec(out, v);
  }
  if ((rc = idgen_public_unmap128(p, pub, id)) < 0)
    return lib_error(rc, *kind == KIND_UUID7 ? "a public UUID is a UUIDv4" : "ULID", err, n);
  return text128(*kind, id, out);
}

int serve_public_reverse(serve_worker_t *w, const char *t, size_t len, char *out, int *kind,
                         unsigned *version, char *err, size_t n) {
  int rc;
  *version = 0;
  int is_int = memchr(t, '_', len) == NULL && (all_digits(t, len) || len == IDGEN_ULID_STRLEN ||
                                               len == IDGEN_UUID_STRLEN || len == 32);
  idgen_public_kind_t kinds[2];
  int nkinds = idgen_public_kind_of(t, len, kinds, NULL, 0);
  if (is_int && text_form(w->srv) && nkinds < 0) {
    /* An integer form has no check: any decimal, ULID or UUID unmaps to
     * some ID.  This daemon makes text forms only, so one is refused (and
     * a text of digits only is read as the text it is). */
    *kind = all_digits(t, len) ? KIND_SNOWFLAKE : len == IDGEN_ULID_STRLEN ? KIND_ULID : KIND_UUID7;
    snprintf(err, n,
             "\"%s\" is not a public ID of this daemon: it makes text forms "
             "([prefix_]V and 16 or 29 characters), and an integer form is not read back "
             "(it has no check)",
             IDGEN_QUOTE(t, len, '"', 40));
    rc = IDGEN_EPARSE;
  } else if (is_int && !text_form(w->srv)) {
    rc = reverse_int(w, t, len, out, kind, err, n);
  } else if (nkinds == 2) {
    uint8_t id[16];
    rc = reverse128(w, t, len, kinds, id, kind, version, err, n);
    if (rc == 0)
      rc = text128(*kind, id, out);
  } else {
    /* A Snowflake text, or of no kind's length: the parse says which. */
    uint64_t v;
    idgen_public_t *p = serve_public_codec(w, KIND_SNOWFLAKE, err, n);
    *kind = KIND_SNOWFLAKE;
    rc = p == NULL ? SERVE_ENOKEY : idgen_public_parse64(p, t, len, &v, version, err, n);
    if (rc == 0)
      rc = (int)serve_u64_dec(out, v);
  }
  if (rc < 0) {
    serve_public_count(w, rc);
    return rc;
  }
  out[rc] = '\0';
  CNT_ADD(w->st.pub_reversed, 1);
  return rc;
}

int serve_public_looks(serve_daemon_t *s, const char *t, size_t len) {
  if (!serve_public_on(s))
    return 0;
  const char *pre = s->cfg->s.public_prefix;
  size_t plen = pre ? strlen(pre) : 0;
  if (plen > 0 && len > plen + 1 && memcmp(t, pre, plen) == 0 && t[plen] == '_')
    return 1;
  /* Another prefix, or none: a text form's length after it (no ID has a
   * '_', nor 17 or 30 characters that are not all digits). */
  return idgen_public_kind_of(t, len, NULL, NULL, 0) > 0 && !all_digits(t, len);
}

static const char *form_name(serve_daemon_t *s) { return text_form(s) ? "text" : "int"; }

json_t *serve_public_json(serve_daemon_t *s) {
  const idgen_public_keys_t *k = atomic_load(&s->pub_keys);
  if (k == NULL)
    return json_pack("{sb}", "on", 0);
  unsigned v[IDGEN_PUBLIC_VERSION_MAX];
  size_t m = idgen_public_keys_versions(k, v, IDGEN_PUBLIC_VERSION_MAX);
  json_t *vs = json_array();
  for (size_t i = 0; i < m && i < IDGEN_PUBLIC_VERSION_MAX; i++)
    json_array_append_new(vs, json_integer(v[i]));
  const char *pre = s->cfg->s.public_prefix;
  return json_pack("{sbsssssosI}", "on", 1, "form", form_name(s), "prefix", pre ? pre : "",
                   "key_versions", vs, "newest", (json_int_t)idgen_public_keys_newest(k));
}

int serve_public_facts(serve_daemon_t *s, const char **form, const char **prefix, char *versions,
                       size_t n, unsigned *newest) {
  const idgen_public_keys_t *k = atomic_load(&s->pub_keys);
  *form = k ? form_name(s) : "";
  *prefix = s->cfg->s.public_prefix ? s->cfg->s.public_prefix : "";
  *newest = k ? idgen_public_keys_newest(k) : 0;
  versions[0] = '\0';
  if (k != NULL)
    versions_text(k, versions, n);
  return k != NULL;
}

void serve_public_health_line(serve_daemon_t *s, serve_buf_t *b) {
  const idgen_public_keys_t *k = atomic_load(&s->pub_keys);
  if (k == NULL)
    return;
  char vs[128];
  versions_text(k, vs, sizeof vs);
  const char *pre = s->cfg->s.public_prefix;
  serve_buf_printf(b, "public form=%s prefix=%s key_versions=%s newest=%u\n", form_name(s),
                   pre && pre[0] ? pre : "none", vs, idgen_public_keys_newest(k));
}

void serve_public_metrics(serve_daemon_t *s, serve_buf_t *b) {
  uint64_t made = 0, rev = 0, fails[NPUBF] = {0};
  for (int i = 0; i < s->nworkers; i++) {
    made += CNT_GET(s->workers[i].st.pub_made);
    rev += CNT_GET(s->workers[i].st.pub_reversed);
    for (int f = 0; f < NPUBF; f++)
      fails[f] += CNT_GET(s->workers[i].st.pub_fail[f]);
  }
  const idgen_public_keys_t *k = atomic_load(&s->pub_keys);
  serve_buf_printf(b,
                   "# HELP idgen_public_ids_total Public IDs made (format=public, PUBLIC) and "
                   "reversed (UNPUBLIC, /decode of a public form).\n"
                   "# TYPE idgen_public_ids_total counter\n"
                   "idgen_public_ids_total{op=\"made\"} %" PRIu64 "\n"
                   "idgen_public_ids_total{op=\"reversed\"} %" PRIu64 "\n"
                   "# HELP idgen_public_failures_total Public IDs refused, by cause: key (a "
                   "check failed: another key, an altered text, an unknown version), parse, "
                   "range, nokey (no public_key), other.\n"
                   "# TYPE idgen_public_failures_total counter\n",
                   made, rev);
  for (int f = 0; f < NPUBF; f++)
    serve_buf_printf(b, "idgen_public_failures_total{code=\"%s\"} %" PRIu64 "\n", fail_names[f],
                     fails[f]);
  serve_buf_printf(b,
                   "# HELP idgen_public_key_newest The newest key version held (0: public IDs "
                   "off).\n# TYPE idgen_public_key_newest gauge\nidgen_public_key_newest %u\n",
                   k ? idgen_public_keys_newest(k) : 0);
}
