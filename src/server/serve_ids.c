/*
 * serve_ids.c -- making IDs for a request, in the form its protocol wants.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server_int.h"

const char *kind_name(int kind) {
  static const char *const names[NKINDS] = {"snowflake", "ulid", "uuid7"};
  return names[kind];
}

int ids_unavailable(server_t *s, char *why, size_t n) {
  if (atomic_load_explicit(&s->lease_ok, memory_order_acquire))
    return 0;
  pthread_mutex_lock(&s->lease_mu);
  snprintf(why, n, "lease lost: %s", s->lease_reason);
  pthread_mutex_unlock(&s->lease_mu);
  return 1;
}

int server_unhealthy(server_t *s, char *why, size_t n) {
  if (ids_unavailable(s, why, n))
    return 1;
  /* The lease is valid but the mark fell behind the clock: the registry
   * has not taken a new one, and IDs stop at the mark. */
  idgen_snowflake_lease_status_t ls;
  idgen_snowflake_lease_status(server_sf(s), &ls);
  if (ls.bound && ls.mark_ms < idgen_clock_now_ms(IDGEN_CLOCK_PRECISE)) {
    snprintf(why, n, "high-water mark: the registry has not recorded a mark ahead of the "
                     "clock%s%s",
             ls.reason[0] ? ": " : "", ls.reason);
    return 1;
  }
  idgen_snowflake_stats_t st;
  idgen_snowflake_stats(server_sf(s), &st);
  if (st.borrowed_ms > s->cfg->gen.max_borrow_ms) {
    snprintf(why, n,
             "clock: the wall clock is %" PRId64 " ms behind the generator (max_borrow_ms %" PRId64
             ")",
             st.borrowed_ms, s->cfg->gen.max_borrow_ms);
    return 1;
  }
  return 0;
}

int64_t ids_error_text(server_t *s, int rc, char *buf, size_t n) {
  if (rc == IDGEN_ELEASE || rc == IDGEN_EMARK) {
    idgen_snowflake_lease_status_t ls;
    idgen_snowflake_lease_status(server_sf(s), &ls);
    snprintf(buf, n, "%s: %s", rc == IDGEN_ELEASE ? "lease lost" : "high-water mark",
             ls.reason[0] ? ls.reason : idgen_strerror(rc));
    return 1000;
  }
  if (rc != IDGEN_ECLOCK) {
    snprintf(buf, n, "cannot issue IDs now: %s", idgen_strerror(rc));
    return 1000;
  }
  idgen_snowflake_stats_t st;
  idgen_snowflake_stats(server_sf(s), &st);
  int64_t wait = st.borrowed_ms - s->cfg->gen.max_borrow_ms;
  if (wait < 1)
    wait = 1;
  snprintf(buf, n,
           "clock: the wall clock is %" PRId64 " ms behind the generator (max_borrow_ms %" PRId64
           "); IDs resume in about %" PRId64 " ms",
           st.borrowed_ms, s->cfg->gen.max_borrow_ms, wait);
  return wait;
}

void ids_count(worker_t *w, int kind, int agent, size_t n) {
  size_t per_kind = (size_t)(AGENT_FIRST + w->srv->cfg->max_agents);
  CNT_ADD(w->st.ids[(size_t)kind * per_kind + (size_t)agent], n);
}

/* One 128-bit ID of `kind` as text into out (26 or 36 characters, and a
 * NUL after them: out has room for it, and the caller writes over it). */
static int make128(server_t *s, int kind, char *out, size_t *len) {
  int rc;
  if (kind == KIND_ULID) {
    idgen_ulid_t u;
    if ((rc = idgen_ulid_gen_next(s->ulid, &u)) == 0) {
      idgen_ulid_encode(&u, out);
      *len = IDGEN_ULID_STRLEN;
    }
  } else {
    idgen_uuid_t u;
    if ((rc = idgen_uuid7_gen_next(s->uuid7, &u)) == 0) {
      idgen_uuid_format(&u, out);
      *len = IDGEN_UUID_STRLEN;
    }
  }
  return rc;
}

/* Gives back the room of a large batch (SCRATCH_KEEP bytes or more). */
static void ids_shrink(worker_t *w) {
  if (w->ids_cap * sizeof *w->ids <= SCRATCH_KEEP)
    return;
  uint64_t *p = realloc(w->ids, 1024 * sizeof *p);
  if (p != NULL) {
    w->ids = p;
    w->ids_cap = 1024;
  }
}

static int make_snowflakes(worker_t *w, size_t n) {
  if (n > w->ids_cap) {
    uint64_t *p = realloc(w->ids, n * sizeof *p);
    if (p == NULL)
      return IDGEN_ENOMEM;
    w->ids = p;
    w->ids_cap = n;
  }
  idgen_snowflake_t *g = server_sf(w->srv);
  int rc = n == 1 ? idgen_snowflake_next(g, w->ids) : idgen_snowflake_next_n(g, w->ids, n);
  if (rc == IDGEN_ELEASE && server_sf(w->srv) != g) { /* swapped meanwhile: the new one */
    g = server_sf(w->srv);
    rc = n == 1 ? idgen_snowflake_next(g, w->ids) : idgen_snowflake_next_n(g, w->ids, n);
  }
  if (rc == IDGEN_ECLOCK) {
    idgen_snowflake_stats_t st;
    idgen_snowflake_stats(server_sf(w->srv), &st);
    log_limited(&w->srv->clock_log, "warn", "clock_refusal",
                "borrowed_ms=%" PRId64 " max_borrow_ms=%" PRId64 " max_wait_ms=%" PRId64
                " refusals=%" PRIu64,
                st.borrowed_ms, w->srv->cfg->gen.max_borrow_ms, w->srv->cfg->gen.max_wait_ms,
                st.clock_refusals);
  }
  return rc;
}

int ids_emit(worker_t *w, buf_t *b, int kind, size_t n, int style) {
  size_t start = b->len;
  if (kind == KIND_SNOWFLAKE) {
    int rc = make_snowflakes(w, n);
    if (rc < 0)
      return rc;
    buf_reserve(b, n * 32 + 16);
    char *p = b->p + b->len;
    if (style == STYLE_RESP && n > 1)
      p += snprintf(p, 24, "*%zu\r\n", n);
    for (size_t i = 0; i < n; i++) {
      uint64_t id = w->ids[i];
      if (style == STYLE_LINES) {
        p += u64_dec(p, id);
        *p++ = '\n';
      } else if (id <= INT64_MAX) {
        *p++ = ':';
        p += u64_dec(p, id);
        *p++ = '\r';
        *p++ = '\n';
      } else { /* past INT64_MAX a RESP integer cannot carry it: a bulk string */
        char d[20];
        size_t dl = u64_dec(d, id);
        p += snprintf(p, 8, "$%zu\r\n", dl);
        memcpy(p, d, dl);
        p += dl;
        *p++ = '\r';
        *p++ = '\n';
      }
    }
    b->len = (size_t)(p - b->p);
    ids_shrink(w);
    return 0;
  }
  size_t tl = kind == KIND_ULID ? IDGEN_ULID_STRLEN : IDGEN_UUID_STRLEN;
  buf_reserve(b, n * (tl + 8) + 16);
  char *p = b->p + b->len;
  if (style == STYLE_RESP && n > 1)
    p += snprintf(p, 24, "*%zu\r\n", n);
  for (size_t i = 0; i < n; i++) {
    if (style == STYLE_RESP)
      p += snprintf(p, 8, "$%zu\r\n", tl);
    size_t len;
    int rc = make128(w->srv, kind, p, &len);
    if (rc < 0) {
      b->len = start;
      return rc;
    }
    p += len;
    if (style == STYLE_RESP)
      *p++ = '\r';
    *p++ = '\n';
  }
  b->len = (size_t)(p - b->p);
  return 0;
}

int ids_emit_json(worker_t *w, buf_t *b, int kind, size_t n) {
  json_t *arr = json_array(), *doc = json_object();
  int rc = (arr && doc) ? 0 : IDGEN_ENOMEM;
  if (rc == 0 && kind == KIND_SNOWFLAKE)
    rc = make_snowflakes(w, n);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char text[40];
    size_t len;
    if (kind == KIND_SNOWFLAKE)
      len = u64_dec(text, w->ids[i]);
    else
      rc = make128(w->srv, kind, text, &len);
    if (rc == 0 && json_array_append_new(arr, json_stringn(text, len)) < 0)
      rc = IDGEN_ENOMEM;
  }
  if (rc == 0) {
    json_object_set_new(doc, "ids", arr);
    arr = NULL;
    size_t need = json_dumpb(doc, NULL, 0, JSON_COMPACT);
    buf_reserve(b, need + 1);
    if (need == 0 || json_dumpb(doc, b->p + b->len, need, JSON_COMPACT) != need)
      rc = IDGEN_ENOMEM;
    else
      b->len += need;
  }
  json_decref(arr);
  json_decref(doc);
  ids_shrink(w);
  return rc;
}
