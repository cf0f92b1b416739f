/*
 * idgen_public.c -- public IDs in SQL: a keyed, reversible form of an ID
 * (libidgen's idgen_public_*, FF1 on AES-256), with keys read from the key
 * files the setting idgen.public_keys names.
 *
 *   idgen_public(bigint, key, version, bits) bigint   and idgen_unpublic
 *   idgen_public(uuid, key, version) uuid             UUIDv7 <-> UUIDv4
 *   idgen_public_text(bigint, key, prefix, bits) text and idgen_unpublic_text
 *   idgen_public_text(uuid, key, prefix) text         and idgen_unpublic_text_uuid
 *   idgen_public_ulid(text, key, version) text        26 characters, and back
 *   idgen_public_ulid_text(text, key, prefix) text    and idgen_unpublic_ulid_text
 *
 * idgen.public_keys ("users=/etc/idgen/users.key, orders=...") is PGC_SUSET
 * and GUC_SUPERUSER_ONLY: only a superuser sets it or sees it, and the key
 * files are files of the server's OS user, mode 0600 (the library refuses
 * any other), which only a superuser can read through the server.  Every
 * role may call the functions, with a key's name.  A key's bytes appear in
 * no message, log line or setting: only the library touches them.
 *
 * Each backend keeps the keys it loaded and one codec per (key, kind, bits,
 * prefix, version) it was asked for.  They are dropped when the setting
 * changes, and a key file is stat()ed at most once a second: a file
 * replaced or rewritten (another inode, size or mtime) is loaded again.
 */
#include "postgres.h"

#include <sys/stat.h>
#include <time.h>

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/uuid.h"

#include "idgen.h"
#include "idgen_keylist.h"
#include "idgen_pg.h"

#define CODECS_MAX 256  /* codecs kept per backend; all dropped past it */
#define RECHECK_MS 1000 /* a key file's stat() at most this often */

static char *public_keys_setting;
static const idgen_pg_keylist_t *keylist; /* the setting's, parsed by its check hook */
static uint64 keylist_generation;         /* bumped by each assignment */

/* A key file as this backend loaded it. */
typedef struct loaded_key {
  idgen_public_keys_t *keys; /* NULL until loaded */
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  int64 checked_ms; /* when last stat()ed */
} loaded_key;

typedef struct codec_entry {
  int key; /* index into keylist and loaded */
  idgen_public_kind_t kind;
  unsigned bits, version;
  char prefix[IDGEN_PUBLIC_PREFIX_MAX];
  idgen_public_t *codec;
} codec_entry;

static loaded_key loaded[IDGEN_PG_KEYS_MAX];
static uint64 loaded_generation;
static codec_entry *codecs;
static int ncodecs;

static bool check_public_keys(char **newval, void **extra, GucSource source) {
  char err[256];
  idgen_pg_keylist_t *l = malloc(sizeof *l); /* guc.c free()s it */
  if (l == NULL)
    return false;
  if (idgen_pg_keylist_parse(*newval, l, err, sizeof err) < 0) {
    GUC_check_errdetail("%s.", err);
    free(l);
    return false;
  }
  *extra = l;
  return true;
}

static void assign_public_keys(const char *newval, void *extra) {
  (void)newval;
  keylist = extra;
  keylist_generation++;
}

void idgen_pg_public_init(void) {
  DefineCustomStringVariable(
      "idgen.public_keys", "The key files of public IDs, by name.",
      "NAME=FILE, comma-separated: files of `idgen public --new-key FILE`, the server's user's, "
      "mode 0600.  The functions idgen_public() and others take a NAME.",
      /* superusers only: who sets it chooses which files the server reads */
      &public_keys_setting, "", PGC_SUSET, GUC_SUPERUSER_ONLY, check_public_keys,
      assign_public_keys, NULL);
}

/* Drops codecs of key k (all for k < 0). */
static void drop_codecs(int k) {
  int i, kept = 0;
  for (i = 0; i < ncodecs; i++) {
    if (k < 0 || codecs[i].key == k)
      idgen_public_free(codecs[i].codec);
    else
      codecs[kept++] = codecs[i];
  }
  ncodecs = kept;
}

/* Forgets every key and codec when the setting has changed since. */
static void sync_generation(void) {
  int i;
  if (loaded_generation == keylist_generation)
    return;
  drop_codecs(-1);
  for (i = 0; i < IDGEN_PG_KEYS_MAX; i++) {
    idgen_public_keys_free(loaded[i].keys); /* wipes them */
    memset(&loaded[i], 0, sizeof loaded[i]);
  }
  loaded_generation = keylist_generation;
}

static int64 now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The index of key `name`, its file loaded and no older than a second. */
static int key_index(const char *name) {
  const idgen_pg_keylist_t *l = keylist;
  loaded_key *lk;
  struct stat st;
  char err[512];
  int k, rc;
  int64 now;
  sync_generation();
  for (k = 0; l != NULL && k < l->n; k++)
    if (strcmp(l->key[k].name, name) == 0)
      break;
  if (l == NULL || k == l->n)
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("idgen: no key named \"%s\"", name),
             errhint("A superuser names key files in idgen.public_keys "
                     "('%s=/path/to/file.key').",
                     name)));
  lk = &loaded[k];
  now = now_ms();
  if (lk->keys != NULL && now - lk->checked_ms < RECHECK_MS)
    return k;
  if (stat(l->key[k].path, &st) < 0)
    memset(&st, 0, sizeof st); /* the load says why; checked again in a second */
  else if (lk->keys != NULL && st.st_dev == lk->dev && st.st_ino == lk->ino &&
           st.st_size == lk->size && st.st_mtim.tv_sec == lk->mtime.tv_sec &&
           st.st_mtim.tv_nsec == lk->mtime.tv_nsec) {
    lk->checked_ms = now;
    return k;
  }
  /* new, or changed: (re)load, stat()ed before, so a change while loading
   * is seen at the next check */
  drop_codecs(k);
  idgen_public_keys_free(lk->keys);
  memset(lk, 0, sizeof *lk);
  rc = idgen_public_keys_load(&lk->keys, l->key[k].path, err, sizeof err);
  if (rc < 0) {
    lk->keys = NULL;
    ereport(ERROR, (errcode(ERRCODE_CONFIG_FILE_ERROR),
                    errmsg("idgen: key \"%s\" (idgen.public_keys): %s", name, err)));
  }
  lk->dev = st.st_dev, lk->ino = st.st_ino, lk->size = st.st_size, lk->mtime = st.st_mtim;
  lk->checked_ms = now;
  return k;
}

/* This backend's codec for key `name` and these settings. */
static idgen_public_t *get_codec(text *name_t, idgen_public_kind_t kind, unsigned bits,
                                 const char *prefix, unsigned version) {
  char *name = text_to_cstring(name_t), err[512];
  idgen_public_settings_t s = {0};
  idgen_public_t *p;
  int k = key_index(name), i, rc;
  if (strlen(prefix) >= IDGEN_PUBLIC_PREFIX_MAX)
    ereport(ERROR,
            (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("idgen: a prefix is at most %d characters", IDGEN_PUBLIC_PREFIX_MAX - 1)));
  for (i = 0; i < ncodecs; i++) {
    codec_entry *c = &codecs[i];
    if (c->key == k && c->kind == kind && c->bits == bits && c->version == version &&
        strcmp(c->prefix, prefix) == 0)
      return c->codec;
  }
  s.kind = kind, s.bits = bits, s.prefix = prefix, s.version = version;
  if ((rc = idgen_public_new(&p, loaded[k].keys, &s, err, sizeof err)) < 0)
    ereport(ERROR,
            (errcode(rc == IDGEN_ENOMEM ? ERRCODE_OUT_OF_MEMORY : ERRCODE_INVALID_PARAMETER_VALUE),
             errmsg("idgen: key \"%s\": %s", name, err)));
  if (codecs == NULL)
    codecs = MemoryContextAlloc(TopMemoryContext, CODECS_MAX * sizeof *codecs);
  if (ncodecs == CODECS_MAX)
    drop_codecs(-1);
  codecs[ncodecs].key = k, codecs[ncodecs].kind = kind, codecs[ncodecs].bits = bits;
  codecs[ncodecs].version = version, codecs[ncodecs].codec = p;
  strlcpy(codecs[ncodecs].prefix, prefix, sizeof codecs[ncodecs].prefix);
  ncodecs++;
  pfree(name);
  return p;
}

static unsigned arg_bits(int32 bits) {
  if (bits < 20 || bits > 64)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("idgen: bits is %d; give the layout's total bits, 20 to 64 (63 for "
                           "twitter, 53 for js53)",
                           bits)));
  return (unsigned)bits;
}

/* Integer forms name their key version: adding a version to the key file
 * must not change what a stored column holds. */
static unsigned arg_version(int32 version) {
  if (version < 1 || version > IDGEN_PUBLIC_VERSION_MAX)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("idgen: key version %d; give one of the key file's versions, 1 to %d",
                           version, IDGEN_PUBLIC_VERSION_MAX)));
  return (unsigned)version;
}

static void out_of_range(int64 v, unsigned bits, const char *what) {
  ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                  errmsg("idgen: %s " INT64_FORMAT " is not an ID of %u bits (0 to 2^%u - 1)", what,
                         v, bits, bits)));
}

/* A library call on a ULID that cannot fail but for a bug. */
static void fail_ulid(void) {
  ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("idgen: a ULID's public form failed")));
}

/* ---- Snowflake IDs: integer form ---------------------------------------- */

PG_FUNCTION_INFO_V1(idgen_pg_public);
Datum idgen_pg_public(PG_FUNCTION_ARGS) {
  int64 id = PG_GETARG_INT64(0);
  unsigned version = arg_version(PG_GETARG_INT32(2)), bits = arg_bits(PG_GETARG_INT32(3));
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_SNOWFLAKE, bits, "", version);
  uint64_t pub;
  /* a 64-bit layout's top half reads negative, as in idgen_decode */
  if (idgen_public_map64(p, (uint64_t)id, &pub) < 0)
    out_of_range(id, bits, "ID");
  PG_RETURN_INT64((int64)pub);
}

PG_FUNCTION_INFO_V1(idgen_pg_unpublic);
Datum idgen_pg_unpublic(PG_FUNCTION_ARGS) {
  int64 pub = PG_GETARG_INT64(0);
  unsigned version = arg_version(PG_GETARG_INT32(2)), bits = arg_bits(PG_GETARG_INT32(3));
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_SNOWFLAKE, bits, "", version);
  uint64_t id;
  if (idgen_public_unmap64(p, (uint64_t)pub, &id) < 0)
    out_of_range(pub, bits, "public ID");
  PG_RETURN_INT64((int64)id);
}

/* ---- UUIDv7 <-> UUIDv4 --------------------------------------------------- */

static Datum uuid_map(PG_FUNCTION_ARGS, bool back) {
  pg_uuid_t *in = PG_GETARG_UUID_P(0), *out = palloc(sizeof *out);
  unsigned version = arg_version(PG_GETARG_INT32(2));
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_UUID7, 0, "", version);
  int rc = back ? idgen_public_unmap128(p, in->data, out->data)
                : idgen_public_map128(p, in->data, out->data);
  if (rc < 0)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("idgen: %s", back ? "a public UUID is of version 4 (and RFC 9562's "
                                               "variant)"
                                             : "idgen_public() takes a UUIDv7 (version 7, RFC "
                                               "9562's variant)"),
                    errdetail("This UUID's version is %d.", in->data[6] >> 4)));
  PG_RETURN_UUID_P(out);
}

PG_FUNCTION_INFO_V1(idgen_pg_public_uuid);
Datum idgen_pg_public_uuid(PG_FUNCTION_ARGS) { return uuid_map(fcinfo, false); }

PG_FUNCTION_INFO_V1(idgen_pg_unpublic_uuid);
Datum idgen_pg_unpublic_uuid(PG_FUNCTION_ARGS) { return uuid_map(fcinfo, true); }

/* ---- Text forms ---------------------------------------------------------- */

/* A failed parse: malformed text 22P02, a failed check or unknown key
 * version 22023, each with the library's message. */
static void parse_failed(int rc, const char *err) {
  ereport(ERROR, (errcode(rc == IDGEN_EPARSE ? ERRCODE_INVALID_TEXT_REPRESENTATION
                                             : ERRCODE_INVALID_PARAMETER_VALUE),
                  errmsg("idgen: %s", err)));
}

PG_FUNCTION_INFO_V1(idgen_pg_public_text);
Datum idgen_pg_public_text(PG_FUNCTION_ARGS) {
  int64 id = PG_GETARG_INT64(0);
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), buf[IDGEN_PUBLIC_TEXT_MAX];
  unsigned bits = arg_bits(PG_GETARG_INT32(3));
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_SNOWFLAKE, bits, prefix, 0);
  int n = idgen_public_format64(p, (uint64_t)id, buf, sizeof buf);
  if (n < 0)
    out_of_range(id, bits, "ID");
  PG_RETURN_TEXT_P(cstring_to_text_with_len(buf, n));
}

PG_FUNCTION_INFO_V1(idgen_pg_unpublic_text);
Datum idgen_pg_unpublic_text(PG_FUNCTION_ARGS) {
  text *t = PG_GETARG_TEXT_PP(0);
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), err[512];
  unsigned bits = arg_bits(PG_GETARG_INT32(3));
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_SNOWFLAKE, bits, prefix, 0);
  uint64_t id;
  int rc =
      idgen_public_parse64(p, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &id, NULL, err, sizeof err);
  if (rc < 0)
    parse_failed(rc, err);
  PG_RETURN_INT64((int64)id);
}

PG_FUNCTION_INFO_V1(idgen_pg_public_text_uuid);
Datum idgen_pg_public_text_uuid(PG_FUNCTION_ARGS) {
  pg_uuid_t *in = PG_GETARG_UUID_P(0);
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), buf[IDGEN_PUBLIC_TEXT_MAX];
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_UUID7, 0, prefix, 0);
  int n = idgen_public_format128(p, in->data, buf, sizeof buf);
  if (n < 0)
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("idgen: idgen_public_text() takes a UUIDv7 (version 7, RFC 9562's "
                           "variant)"),
                    errdetail("This UUID's version is %d.", in->data[6] >> 4)));
  PG_RETURN_TEXT_P(cstring_to_text_with_len(buf, n));
}

PG_FUNCTION_INFO_V1(idgen_pg_unpublic_text_uuid);
Datum idgen_pg_unpublic_text_uuid(PG_FUNCTION_ARGS) {
  text *t = PG_GETARG_TEXT_PP(0);
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), err[512];
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_UUID7, 0, prefix, 0);
  pg_uuid_t *out = palloc(sizeof *out);
  int rc = idgen_public_parse128(p, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), out->data, NULL, err,
                                 sizeof err);
  if (rc < 0)
    parse_failed(rc, err);
  PG_RETURN_UUID_P(out);
}

/* ---- ULIDs (text, as idgen_ulid() makes them) ----------------------------- */

/* A ULID argument's 16 bytes: 22P02 with the parser's message. */
static void ulid_arg(text *t, uint8_t out[16]) {
  idgen_ulid_t u;
  char err[256];
  if (idgen_ulid_parse(&u, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), IDGEN_ULID_STRICT, err,
                       sizeof err) < 0)
    ereport(ERROR, (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("idgen: %s", err)));
  memcpy(out, u.bytes, 16);
}

static text *ulid_text(const uint8_t b[16]) {
  idgen_ulid_t u;
  char s[IDGEN_ULID_STRLEN + 1];
  memcpy(u.bytes, b, 16);
  idgen_ulid_format(&u, s);
  return cstring_to_text_with_len(s, IDGEN_ULID_STRLEN);
}

/* A ULID to 26 characters of permuted bits (ULID-shaped), and back. */
static Datum ulid_map(PG_FUNCTION_ARGS, bool back) {
  uint8_t in[16], out[16];
  unsigned version = arg_version(PG_GETARG_INT32(2));
  idgen_public_t *p;
  ulid_arg(PG_GETARG_TEXT_PP(0), in);
  p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_ULID, 0, "", version);
  if ((back ? idgen_public_unmap128(p, in, out) : idgen_public_map128(p, in, out)) < 0)
    fail_ulid();
  PG_RETURN_TEXT_P(ulid_text(out));
}

PG_FUNCTION_INFO_V1(idgen_pg_public_ulid);
Datum idgen_pg_public_ulid(PG_FUNCTION_ARGS) { return ulid_map(fcinfo, false); }

PG_FUNCTION_INFO_V1(idgen_pg_unpublic_ulid);
Datum idgen_pg_unpublic_ulid(PG_FUNCTION_ARGS) { return ulid_map(fcinfo, true); }

PG_FUNCTION_INFO_V1(idgen_pg_public_ulid_text);
Datum idgen_pg_public_ulid_text(PG_FUNCTION_ARGS) {
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), buf[IDGEN_PUBLIC_TEXT_MAX];
  uint8_t in[16];
  idgen_public_t *p;
  int n;
  ulid_arg(PG_GETARG_TEXT_PP(0), in);
  p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_ULID, 0, prefix, 0);
  if ((n = idgen_public_format128(p, in, buf, sizeof buf)) < 0)
    fail_ulid();
  PG_RETURN_TEXT_P(cstring_to_text_with_len(buf, n));
}

PG_FUNCTION_INFO_V1(idgen_pg_unpublic_ulid_text);
Datum idgen_pg_unpublic_ulid_text(PG_FUNCTION_ARGS) {
  text *t = PG_GETARG_TEXT_PP(0);
  char *prefix = text_to_cstring(PG_GETARG_TEXT_PP(2)), err[512];
  idgen_public_t *p = get_codec(PG_GETARG_TEXT_PP(1), IDGEN_PUBLIC_ULID, 0, prefix, 0);
  uint8_t out[16];
  int rc =
      idgen_public_parse128(p, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), out, NULL, err, sizeof err);
  if (rc < 0)
    parse_failed(rc, err);
  PG_RETURN_TEXT_P(ulid_text(out));
}
