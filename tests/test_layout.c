/*
 * test_layout.c -- layouts: known answers from vectors.json, every preset's
 * field positions, the table of invalid specs with their exact messages,
 * formatting round trips, horizons, compose/decompose ranges, decimal IDs,
 * time formatting.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void parse_ok(idgen_layout_t *l, const char *spec) {
  char err[256] = "";
  int rc = idgen_layout_parse(l, spec, err, sizeof err);
  if (rc != 0)
    fail_msg("parse \"%s\": %s", spec, err);
}

static uint64_t u64_of(json_t *s) { return strtoull(json_string_value(s), NULL, 10); }

/* Both ways for every vector of one group: fields -> ID and ID -> fields. */
static void check_vector_group(const char *group) {
  json_t *arr = json_object_get(json_object_get(tu_vectors(), "snowflake"), group);
  assert_non_null(arr);
  assert_true(json_array_size(arr) > 0);
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) {
    idgen_layout_t l;
    parse_ok(&l, json_string_value(json_object_get(v, "layout")));
    int64_t unix_ms = json_integer_value(json_object_get(v, "unix_ms"));
    uint64_t want = u64_of(json_object_get(v, "id"));
    json_t *fields = json_object_get(v, "fields");
    uint64_t values[IDGEN_LAYOUT_MAX_FIELDS] = {0};
    const char *name;
    json_t *fv;
    json_object_foreach(fields, name, fv) {
      int idx = idgen_layout_field_index(&l, name);
      assert_true(idx >= 0);
      values[idx] = (uint64_t)json_integer_value(fv);
    }
    uint64_t id;
    char err[256];
    tu_ok(idgen_layout_compose(&l, unix_ms, values, &id, err, sizeof err));
    assert_int_equal(want, id);

    uint64_t back[IDGEN_LAYOUT_MAX_FIELDS];
    int64_t ms;
    tu_ok(idgen_layout_decompose(&l, want, back, &ms));
    assert_int_equal(unix_ms, ms);
    json_object_foreach(fields, name, fv) {
      assert_int_equal(json_integer_value(fv), back[idgen_layout_field_index(&l, name)]);
    }
  }
}

static void test_vectors_twitter(void **state) {
  (void)state;
  check_vector_group("twitter_compose");
  /* The vectors file's twitter epoch matches the preset. */
  idgen_layout_t l;
  parse_ok(&l, "twitter");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(tu_vectors(), "snowflake"),
                                                      "twitter_epoch_ms")),
                   l.epoch_ms);
}

static void test_vectors_epoch0(void **state) {
  (void)state;
  check_vector_group("epoch0_compose");
  /* The design document splits it as time part + node part. */
  idgen_layout_t l;
  uint64_t v[IDGEN_LAYOUT_MAX_FIELDS] = {0}, id;
  parse_ok(&l, "time:41@1ms,node:10,sequence:12,epoch=0");
  tu_ok(idgen_layout_compose(&l, 1710394862311, v, &id, NULL, 0));
  assert_int_equal(UINT64_C(7173916012570476544), id);
  v[1] = 755;
  tu_ok(idgen_layout_compose(&l, 0, v, &id, NULL, 0));
  assert_int_equal(UINT64_C(3092480), id);
}

/* Each preset: field names, widths and shifts, unit, epoch, total bits. */
static void test_preset_positions(void **state) {
  (void)state;
  static const struct {
    const char *preset;
    int64_t epoch, unit;
    int total;
    const char *fields; /* name:bits:shift ... */
  } t[] = {
      {"twitter", 1288834974657, 1, 63, "time:41:22 datacenter:5:17 worker:5:12 sequence:12:0"},
      {"discord", 1420070400000, 1, 64, "time:42:22 worker:5:17 process:5:12 sequence:12:0"},
      {"sonyflake", 1409529600000, 10, 63, "time:39:24 sequence:8:16 machine:16:0"},
      {"baidu", 1463673600000, 1000, 63, "time:28:35 worker:22:13 sequence:13:0"},
      {"instagram", 1314220021721, 1, 64, "time:41:23 shard:13:10 sequence:10:0"},
      {"mastodon", 0, 1, 64, "time:48:16 sequence:16:0"},
      {"js53", 1735689600000, 1, 53, "time:41:12 worker:6:6 sequence:6:0"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    idgen_layout_t l;
    char buf[256] = "", one[64];
    parse_ok(&l, t[i].preset);
    assert_string_equal(t[i].preset, l.preset);
    assert_int_equal(t[i].epoch, l.epoch_ms);
    assert_int_equal(t[i].unit, l.unit_ms);
    assert_int_equal(t[i].total, l.total_bits);
    for (int f = 0; f < l.nfields; f++) {
      snprintf(one, sizeof one, "%s%s:%d:%d", f ? " " : "", l.fields[f].name, l.fields[f].bits,
               l.fields[f].shift);
      strcat(buf, one);
    }
    assert_string_equal(t[i].fields, buf);
    assert_string_equal(t[i].preset, idgen_layout_preset_name((int)i));
  }
  assert_null(idgen_layout_preset_name(7));
}

/* The table of invalid layouts, each with its exact message. */
static void test_invalid_layouts(void **state) {
  (void)state;
  static const struct {
    const char *spec, *msg;
  } t[] = {
      {"time:41,worker:5,worker:5,sequence:12", "layout: field \"worker\" repeated"},
      {"time:41,sequence:12,time:3", "layout: field \"time\" repeated"},
      {"worker:10,sequence:12", "layout: no \"time\" field"},
      {"time:41,worker:10", "layout: no \"sequence\" field"},
      {"time:41,worker:11,sequence:13", "layout: fields add up to 65 bits, more than 64"},
      {"time:41,worker:0,sequence:12",
       "layout: field \"worker\" has 0 bits; each field needs at least 1"},
      {"time:41@1m,sequence:12",
       "layout: bad time unit \"1m\" (use Nms or Ns, from 1ms to 86400s)"},
      {"time:41@0ms,sequence:12",
       "layout: bad time unit \"0ms\" (use Nms or Ns, from 1ms to 86400s)"},
      {"time:41@ms,sequence:12",
       "layout: bad time unit \"ms\" (use Nms or Ns, from 1ms to 86400s)"},
      {"time:41@86401s,sequence:12",
       "layout: bad time unit \"86401s\" (use Nms or Ns, from 1ms to 86400s)"},
      {"time:41,sequence:12,epoch=yesterday",
       "layout: bad epoch \"yesterday\" (use Unix milliseconds or an ISO-8601 UTC time such as "
       "2010-11-04T01:42:54.657Z)"},
      {"time:41,sequence:12,epoch=2010-13-04T01:42:54Z",
       "layout: bad epoch \"2010-13-04T01:42:54Z\" (use Unix milliseconds or an ISO-8601 UTC "
       "time such as 2010-11-04T01:42:54.657Z)"},
      {"time:41,sequence:12,epoch=-5",
       "layout: bad epoch \"-5\" (use Unix milliseconds or an ISO-8601 UTC time such as "
       "2010-11-04T01:42:54.657Z)"},
      {"twiter", "layout: unknown preset \"twiter\" (presets: twitter, discord, sonyflake, baidu, "
                 "instagram, mastodon, js53)"},
      {"", "layout: empty spec"},
      {"time:41,,sequence:12", "layout: empty item 2 (a stray comma?)"},
      {"time:41,sequence:12,", "layout: empty item 3 (a stray comma?)"},
      {"time:41,Worker:5,sequence:12", "layout: bad field name \"Worker\" (use [a-z][a-z0-9_]*)"},
      {"time:41,:5,sequence:12", "layout: bad field name \"\" (use [a-z][a-z0-9_]*)"},
      {"time:41,worker:x,sequence:12",
       "layout: field \"worker\" has bad width \"x\" (use a number of bits)"},
      {"time:64,sequence:1", "layout: field \"time\" has 64 bits, more than 63"},
      {"time:41,worker:5@1ms,sequence:12",
       "layout: only the time field takes a unit (\"worker:5@1ms\")"},
      {"time:41,sequence:12,epoch=0,epoch=1", "layout: epoch given twice"},
      {"time:41,sequence:12,start=0",
       "layout: unknown setting \"start\" (the only setting is epoch=)"},
      {"time:41,worker,sequence:12", "layout: item \"worker\" is not NAME:BITS or epoch=VALUE"},
      {"sequence:12,time:41", "layout: field \"sequence\" must come after \"time\""},
      {"time:41,a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,m:1,n:1,o:1,sequence:1",
       "layout: more than 16 fields"},
      {"time:41,abcdefghijabcdefghijabcdefghijab:1,sequence:1",
       "layout: field name \"abcdefghijabcdefghijabcdefghijab\" longer than 31 characters"},
      {"time:60@86400s,sequence:1", "layout: time:60@86400000ms runs past 64-bit milliseconds"},
      /* The spec is quoted as printable ASCII: other bytes, '\\' and '"' as \xHH. */
      {"time:41,w\xc1rker\x7f:5,sequence:12",
       "layout: bad field name \"w\\xC1rker\\x7F\" (use [a-z][a-z0-9_]*)"},
      {"time:41@1\x1bms,sequence:12",
       "layout: bad time unit \"1\\x1Bms\" (use Nms or Ns, from 1ms to 86400s)"},
      {"time:41,worker:5\xff,sequence:12",
       "layout: field \"worker\" has bad width \"5\\xFF\" (use a number of bits)"},
      {"time:41,sequence:12,\"ep\\\"=1", "layout: unknown setting \"\\x22ep\\x5C\\x22\" (the only "
                                         "setting is epoch=)"},
      {"tw\titter", "layout: unknown preset \"tw\\x09itter\" (presets: twitter, discord, "
                    "sonyflake, baidu, instagram, mastodon, js53)"},
      {"time:41,sequence:12,epoch=\xe2\x80\x94", "layout: bad epoch \"\\xE2\\x80\\x94\" (use Unix "
                                                 "milliseconds or an ISO-8601 UTC time such as "
                                                 "2010-11-04T01:42:54.657Z)"},
      {"time:41,sequence:12,epoch=1234567890123456789012345678901234567890123456789012345",
       "layout: bad epoch \"123456789012345678901234567890123456789012345...\" (use Unix "
       "milliseconds or an ISO-8601 UTC time such as 2010-11-04T01:42:54.657Z)"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    idgen_layout_t l;
    char err[512] = "";
    int rc = idgen_layout_parse(&l, t[i].spec, err, sizeof err);
    if (rc != IDGEN_ELAYOUT)
      fail_msg("spec \"%s\": expected IDGEN_ELAYOUT, got %d", t[i].spec, rc);
    assert_string_equal(t[i].msg, err);
  }
  /* NULL err buffers are allowed. */
  idgen_layout_t l;
  assert_int_equal(IDGEN_ELAYOUT, idgen_layout_parse(&l, "nope", NULL, 0));
}

static void test_valid_variants(void **state) {
  (void)state;
  idgen_layout_t a, b;
  /* Spaces around items, default unit and epoch, ISO epoch forms. */
  parse_ok(&a, " time:41 , node:10 ,sequence:12 ");
  assert_int_equal(1, a.unit_ms);
  assert_int_equal(0, a.epoch_ms);
  parse_ok(&a, "time:41@1ms,datacenter:5,worker:5,sequence:12,epoch=2010-11-04T01:42:54.657Z");
  parse_ok(&b, "twitter");
  assert_int_equal(b.epoch_ms, a.epoch_ms);
  parse_ok(&a, "time:30@2s,sequence:5,epoch=2020-02-29t00:00:00.5z");
  assert_int_equal(2000, a.unit_ms);
  assert_int_equal(1582934400500, a.epoch_ms);
  /* Node fields may be absent; 64 bits exactly is fine. */
  parse_ok(&a, "time:1,sequence:63");
  assert_int_equal(64, a.total_bits);
}

static void test_format_roundtrip(void **state) {
  (void)state;
  const char *name;
  for (int i = 0; (name = idgen_layout_preset_name(i)) != NULL; i++) {
    idgen_layout_t a, b;
    char buf[IDGEN_LAYOUT_SPEC_MAX];
    parse_ok(&a, name);
    assert_true(idgen_layout_format(&a, buf, sizeof buf) > 0);
    parse_ok(&b, buf);
    memset(a.preset, 0, sizeof a.preset);
    memset(b.preset, 0, sizeof b.preset);
    assert_memory_equal(&a, &b, sizeof a);
  }
  idgen_layout_t l;
  char buf[IDGEN_LAYOUT_SPEC_MAX];
  parse_ok(&l, "twitter");
  idgen_layout_format(&l, buf, sizeof buf);
  assert_string_equal(idgen_layout_preset_spec("twitter"), buf);
  parse_ok(&l, "baidu");
  idgen_layout_format(&l, buf, sizeof buf);
  assert_string_equal("time:28@1s,worker:22,sequence:13,epoch=1463673600000", buf);
  parse_ok(&l, "js53");
  idgen_layout_format(&l, buf, sizeof buf);
  assert_string_equal("time:41@1ms,worker:6,sequence:6,epoch=1735689600000", buf);
  assert_int_equal(IDGEN_ERANGE, idgen_layout_format(&l, buf, 10));

  /* The longest spec there is -- 16 fields, 31-character names, a 1-day
   * unit, the last epoch -- fits IDGEN_LAYOUT_SPEC_MAX and round-trips. */
  char spec[1024] = "time:1@86400s";
  for (int i = 0; i < 14; i++)
    sprintf(spec + strlen(spec), ",n%030d:1", i);
  strcat(spec, ",sequence:1,epoch=253402300799999");
  idgen_layout_t back;
  parse_ok(&l, spec);
  assert_true(idgen_layout_format(&l, buf, sizeof buf) > 500);
  parse_ok(&back, buf);
  assert_memory_equal(&l, &back, sizeof l);
}

static void test_horizon(void **state) {
  (void)state;
  idgen_layout_t l;
  char date[IDGEN_TIME_TEXT_MAX];
  parse_ok(&l, "baidu");
  /* Baidu's 28 bits of seconds from 2016-05-20 UTC+8 ran out on 2024-11-20. */
  assert_int_equal(1463673600000 + (INT64_C(1) << 28) * 1000, idgen_layout_horizon_ms(&l));
  idgen_time_format(idgen_layout_horizon_ms(&l), date);
  assert_string_equal("2024-11-20T13:24:16.000Z", date);
  parse_ok(&l, "twitter");
  idgen_time_format(idgen_layout_horizon_ms(&l), date);
  assert_string_equal("2080-07-10T17:30:30.209Z", date);
  assert_int_equal(4096, idgen_layout_ids_per_tick(&l));
  assert_int_equal(INT64_MAX, idgen_layout_sign_bit_ms(&l));
  parse_ok(&l, "mastodon");
  assert_int_equal(INT64_C(1) << 47, idgen_layout_sign_bit_ms(&l));
  idgen_time_format(idgen_layout_horizon_ms(&l), date);
  assert_string_equal("+10889-08-02T05:31:50.656Z", date);
  parse_ok(&l, "discord");
  assert_int_equal(1420070400000 + (INT64_C(1) << 41), idgen_layout_sign_bit_ms(&l));
}

static void test_compose_ranges(void **state) {
  (void)state;
  idgen_layout_t l;
  uint64_t v[IDGEN_LAYOUT_MAX_FIELDS] = {0}, id;
  char err[256];
  parse_ok(&l, "twitter");
  v[2] = 32;
  assert_int_equal(IDGEN_ERANGE, idgen_layout_compose(&l, 1505914988849, v, &id, err, sizeof err));
  assert_string_equal("worker 32 out of range 0..31", err);
  v[2] = 31;
  v[3] = 4096;
  assert_int_equal(IDGEN_ERANGE, idgen_layout_compose(&l, 1505914988849, v, &id, err, sizeof err));
  assert_string_equal("sequence 4096 out of range 0..4095", err);
  v[3] = 0;
  assert_int_equal(IDGEN_ERANGE, idgen_layout_compose(&l, 1000, v, &id, err, sizeof err));
  assert_string_equal("time 1970-01-01T00:00:01.000Z is before the layout epoch "
                      "2010-11-04T01:42:54.657Z",
                      err);
  assert_int_equal(IDGEN_ERANGE,
                   idgen_layout_compose(&l, idgen_layout_horizon_ms(&l), v, &id, err, sizeof err));
  /* The last representable millisecond composes; its time field is all ones. */
  tu_ok(idgen_layout_compose(&l, idgen_layout_horizon_ms(&l) - 1, v, &id, err, sizeof err));
  assert_int_equal((UINT64_C(1) << 41) - 1, id >> 22);

  /* Decompose refuses bits above the layout; a 64-bit layout takes anything. */
  uint64_t back[IDGEN_LAYOUT_MAX_FIELDS];
  assert_int_equal(IDGEN_ERANGE, idgen_layout_decompose(&l, UINT64_C(1) << 63, back, NULL));
  parse_ok(&l, "mastodon");
  tu_ok(idgen_layout_decompose(&l, UINT64_MAX, back, NULL));
  assert_int_equal(0xffff, back[1]);

  /* Coarse units: time is the start of the tick. */
  int64_t ms;
  parse_ok(&l, "sonyflake");
  v[0] = 0;
  v[1] = 7;
  v[2] = 0xbeef;
  tu_ok(idgen_layout_compose(&l, 1409529600000 + 12345, v, &id, NULL, 0));
  tu_ok(idgen_layout_decompose(&l, id, back, &ms));
  assert_int_equal(1409529600000 + 12340, ms);
  assert_int_equal(1234, back[0]);
  assert_int_equal(7, back[1]);
  assert_int_equal(0xbeef, back[2]);
}

static void test_decimal_parse(void **state) {
  (void)state;
  idgen_layout_t l;
  uint64_t id;
  char err[256];
  parse_ok(&l, "twitter");
  tu_ok(idgen_snowflake_parse(&l, "910499571847892992", 18, &id, err, sizeof err));
  assert_int_equal(UINT64_C(910499571847892992), id);
  tu_ok(idgen_snowflake_parse(NULL, "18446744073709551615", 20, &id, err, sizeof err));
  assert_int_equal(UINT64_MAX, id);

  static const struct {
    const char *in, *msg;
    int rc;
  } t[] = {
      {"", "empty ID", IDGEN_EPARSE},
      {"12x4", "character 'x' at position 3 is not a digit", IDGEN_EPARSE},
      {"-1", "character '-' at position 1 is not a digit", IDGEN_EPARSE},
      {"12 ", "byte 0x20 at position 3 is not a digit", IDGEN_EPARSE},
      {"18446744073709551616",
       "18446744073709551616 does not fit in 64 bits (at most 18446744073709551615)", IDGEN_ERANGE},
      {"9223372036854775808",
       "9223372036854775808 does not fit the layout's 63 bits (at most 9223372036854775807)",
       IDGEN_ERANGE},
      /* What follows the digits is quoted too, never raw. */
      {"99999999999999999999\xc1\x7f",
       "99999999999999999999\\xC1\\x7F does not fit in 64 bits (at most 18446744073709551615)",
       IDGEN_ERANGE},
      {"12\\", "character '\\x5C' at position 3 is not a digit", IDGEN_EPARSE},
      {"1'", "character '\\x27' at position 2 is not a digit", IDGEN_EPARSE},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    err[0] = '\0';
    assert_int_equal(t[i].rc,
                     idgen_snowflake_parse(&l, t[i].in, strlen(t[i].in), &id, err, sizeof err));
    assert_string_equal(t[i].msg, err);
  }
}

static void test_time_format(void **state) {
  (void)state;
  char b[IDGEN_TIME_TEXT_MAX];
  static const struct {
    int64_t ms;
    const char *s;
  } t[] = {
      {0, "1970-01-01T00:00:00.000Z"},
      {1505914988849, "2017-09-20T13:43:08.849Z"},
      {951782400000, "2000-02-29T00:00:00.000Z"},
      {253402300799999, "9999-12-31T23:59:59.999Z"},
      {253402300800000, "+10000-01-01T00:00:00.000Z"},
      {281474976710655, "+10889-08-02T05:31:50.655Z"},
      {-1, "1969-12-31T23:59:59.999Z"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    idgen_time_format(t[i].ms, b);
    assert_string_equal(t[i].s, b);
    if (t[i].s[0] != '+') {
      int64_t back;
      tu_ok(idgen_time_parse(t[i].s, strlen(t[i].s), &back));
      assert_int_equal(t[i].ms, back);
    }
  }
  int64_t ms;
  static const char *bad[] = {
      "2017-09-20",           "2017-09-20T13:43:08",   "2017-02-29T00:00:00Z",
      "2017-09-20T24:00:00Z", "2017-09-20T13:43:08.Z", "2017-09-20T13:43:08.1234Z",
      "2017-09-20T13:43:08Zx"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(IDGEN_EPARSE, idgen_time_parse(bad[i], strlen(bad[i]), &ms));
}

/* A resolver for the tests: "@seven" is 7 (noting the field in ctx),
 * anything else is refused. */
static int fake_resolve(void *ctx, const char *field, unsigned bits, const char *source,
                        uint64_t *value, char *err, size_t errlen) {
  (void)bits;
  if (strcmp(source, "@seven") != 0) {
    snprintf(err, errlen, "no such source %s", source);
    return IDGEN_EINVAL;
  }
  snprintf(ctx, 32, "%s", field);
  *value = 7;
  return 0;
}

/* The one node-list rule of the command, the daemon's config, the
 * extension's idgen.node and the registry's tuples. */
static void test_nodes_parse(void **state) {
  (void)state;
  static const struct {
    const char *list;
    int rc;
    uint64_t datacenter, worker;
    const char *msg;
  } t[] = {
      {"datacenter=1,worker=2", 0, 1, 2, ""},
      {"datacenter=1 ,worker=2", 0, 1, 2, ""},
      {" datacenter = 1 ,\tworker = 2 ", 0, 1, 2, ""},
      {"datacenter=1,,worker=2,", 0, 1, 2, ""},
      {"", 0, 0, 0, ""},
      {" , ", 0, 0, 0, ""},
      {"worker=@seven", 0, 0, 7, ""},
      {"datacenter", IDGEN_EINVAL, 0, 0, "\"datacenter\" is not NAME=VALUE"},
      {"=1", IDGEN_EINVAL, 0, 0, "\"=1\" is not NAME=VALUE"},
      {"rack=1", IDGEN_EINVAL, 0, 0,
       "\"rack\" is not a node field of the layout (its node fields: datacenter, worker)"},
      {"sequence=1", IDGEN_EINVAL, 0, 0,
       "\"sequence\" is not a node field of the layout (its node fields: datacenter, worker)"},
      {"worker=1,worker = 2", IDGEN_EINVAL, 0, 0, "worker given twice"},
      {"worker=32", IDGEN_ERANGE, 0, 0, "worker value \"32\" is not a number from 0 to 31"},
      {"worker=1 2", IDGEN_ERANGE, 0, 0, "worker value \"1 2\" is not a number from 0 to 31"},
      {"worker=", IDGEN_ERANGE, 0, 0, "worker value \"\" is not a number from 0 to 31"},
      {"worker=@mac", IDGEN_EINVAL, 0, 0, "worker: no such source @mac"},
  };
  idgen_layout_t l;
  parse_ok(&l, "twitter");
  int dc = idgen_layout_field_index(&l, "datacenter"), w = idgen_layout_field_index(&l, "worker");
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    uint64_t node[IDGEN_LAYOUT_MAX_FIELDS] = {0};
    unsigned given = 0;
    char err[256] = "", seen[32] = "";
    int rc =
        idgen_layout_nodes_parse(&l, t[i].list, fake_resolve, seen, node, &given, err, sizeof err);
    if (rc != t[i].rc || strcmp(err, t[i].msg) != 0)
      fail_msg("\"%s\": %d \"%s\", want %d \"%s\"", t[i].list, rc, err, t[i].rc, t[i].msg);
    if (rc == 0) {
      assert_int_equal(t[i].datacenter, node[dc]);
      assert_int_equal(t[i].worker, node[w]);
    }
  }
  /* No resolver: a value from the host is not a number.  NULL is no list;
   * a field given by an earlier list counts as given. */
  uint64_t node[IDGEN_LAYOUT_MAX_FIELDS] = {0};
  unsigned given = 0;
  char err[256], seen[32] = "";
  assert_int_equal(IDGEN_ERANGE, idgen_layout_nodes_parse(&l, "worker=@ip", NULL, NULL, node,
                                                          &given, err, sizeof err));
  assert_string_equal("worker value \"@ip\" is not a number from 0 to 31", err);
  tu_ok(idgen_layout_nodes_parse(&l, NULL, NULL, NULL, node, &given, err, sizeof err));
  tu_ok(idgen_layout_nodes_parse(&l, "worker=@seven", fake_resolve, seen, node, &given, err,
                                 sizeof err));
  assert_string_equal("worker", seen);
  assert_int_equal(1u << w, given);
  assert_int_equal(IDGEN_EINVAL, idgen_layout_nodes_parse(&l, "worker=3", NULL, NULL, node, &given,
                                                          err, sizeof err));
  assert_string_equal("worker given twice", err);
}

static void test_errors(void **state) {
  (void)state;
  assert_string_equal("ECLOCK", idgen_err_name(IDGEN_ECLOCK));
  assert_string_equal("the layout's time field has run out", idgen_strerror(IDGEN_EEXHAUSTED));
  assert_string_equal("unknown error", idgen_strerror(-1000));
  assert_string_equal(IDGEN_VERSION_STRING, idgen_version());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors_twitter),  cmocka_unit_test(test_vectors_epoch0),
      cmocka_unit_test(test_preset_positions), cmocka_unit_test(test_invalid_layouts),
      cmocka_unit_test(test_valid_variants),   cmocka_unit_test(test_format_roundtrip),
      cmocka_unit_test(test_horizon),          cmocka_unit_test(test_compose_ranges),
      cmocka_unit_test(test_decimal_parse),    cmocka_unit_test(test_time_format),
      cmocka_unit_test(test_errors),           cmocka_unit_test(test_nodes_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
