/*
 * header_cxx.cpp -- idgen.h from C++: every public macro of the header used
 * once, in a file built with -std=c++11 -pedantic -Werror, so that a macro
 * C++ rejects (a compound literal, a designated initializer) fails the
 * build.  The test header.macros checks that every macro idgen.h defines is
 * named here; the test header.cxx runs the program, which checks a few
 * values at run time.  Links the shared libraries, as a C++ program would.
 */
#include <idgen.h>

#include <cstdio>
#include <cstring>

static int failures = 0;

static void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "header_cxx: %s\n", what);
    failures++;
  }
}

/* Every error code through the X-macro list, with its name. */
#define CXX_ERR_ROW(name, code, msg) {IDGEN_##name, #name, msg},
static const struct {
  int code;
  const char *name, *msg;
} errors[] = {IDGEN_ERRNO_MAP(CXX_ERR_ROW)};
#undef CXX_ERR_ROW

int main() {
  /* Version. */
  check(std::strcmp(idgen_version(), IDGEN_VERSION_STRING) == 0, "IDGEN_VERSION_STRING");
  check(IDGEN_VERSION_MAJOR >= 0 && IDGEN_VERSION_MINOR >= 0 && IDGEN_VERSION_PATCH >= 0,
        "IDGEN_VERSION_*");

  /* Errors. */
  for (const auto &e : errors)
    check(std::strcmp(idgen_err_name(e.code), e.name) == 0 &&
              std::strcmp(idgen_strerror(e.code), e.msg) == 0,
          "IDGEN_ERRNO_MAP");

  /* IDGEN_QUOTE: a temporary buffer in C++, alive for the full expression. */
  const char raw[] = "a\"b\x01";
  char quoted[64];
  std::snprintf(quoted, sizeof quoted, "%s", IDGEN_QUOTE(raw, sizeof raw - 1, '"', 40));
  check(std::strcmp(quoted, "a\\x22b\\x01") == 0, "IDGEN_QUOTE");

  /* IDGEN_STR. */
  check(std::strcmp(IDGEN_STR(IDGEN_MAX_WAIT_MS_DEFAULT), "100") == 0, "IDGEN_STR");

  /* Sizes of caller-owned text. */
  check(std::strstr(IDGEN_CLOCK_MODE_WORDS, "precise") != nullptr, "IDGEN_CLOCK_MODE_WORDS");
  char when[IDGEN_TIME_TEXT_MAX], old_when[IDGEN_TIME_BUFSIZE];
  check(idgen_time_format(0, when) == 24 && sizeof old_when == sizeof when, "IDGEN_TIME_TEXT_MAX");
  char uuid[IDGEN_UUID_STRLEN + 1], ulid[IDGEN_ULID_STRLEN + 1];
  idgen_uuid_t u = {};
  idgen_uuid_format(&u, uuid);
  idgen_ulid_t ul = {};
  idgen_ulid_format(&ul, ulid);
  check(std::strlen(uuid) == IDGEN_UUID_STRLEN && std::strlen(ulid) == IDGEN_ULID_STRLEN,
        "IDGEN_UUID_STRLEN, IDGEN_ULID_STRLEN");
  check(IDGEN_ULID_MAX_MS == (INT64_C(1) << 48) - 1, "IDGEN_ULID_MAX_MS");

  /* Layouts. */
  idgen_layout_t l;
  char err[200];
  check(idgen_layout_parse(&l, "twitter", err, sizeof err) == 0, "idgen_layout_parse");
  char spec[IDGEN_LAYOUT_SPEC_MAX], preset[IDGEN_PRESET_NAME_MAX], field[IDGEN_FIELD_NAME_MAX];
  check(idgen_layout_format(&l, spec, sizeof spec) > 0, "IDGEN_LAYOUT_SPEC_MAX");
  check(l.nfields <= IDGEN_LAYOUT_MAX_FIELDS && sizeof preset == sizeof l.preset &&
            sizeof field == sizeof l.fields[0].name,
        "IDGEN_LAYOUT_MAX_FIELDS, IDGEN_PRESET_NAME_MAX, IDGEN_FIELD_NAME_MAX");

  /* The Snowflake generator's bounds and defaults. */
  idgen_snowflake_settings_t s;
  idgen_snowflake_settings_init(&s);
  check(s.max_borrow_ms == IDGEN_MAX_BORROW_MS_DEFAULT &&
            s.max_wait_ms == IDGEN_MAX_WAIT_MS_DEFAULT && IDGEN_MAX_BORROW_MS_MAX > 0 &&
            IDGEN_MAX_WAIT_MS_MAX > 0,
        "IDGEN_MAX_BORROW_MS_*, IDGEN_MAX_WAIT_MS_*");
  idgen_snowflake_gen_t *g = nullptr;
  check(idgen_snowflake_gen_new(&g, &l, &s, err, sizeof err) == 0, "idgen_snowflake_gen_new");
  idgen_snowflake_lease_status_t st;
  idgen_snowflake_gen_lease_status(g, &st); /* a macro for the current symbol */
  check(st.bound == 0 && st.lease.worker == 0, "idgen_snowflake_gen_lease_status");
  idgen_snowflake_gen_free(g);

  /* The cache's bounds. */
  idgen_cached_settings_t cs;
  idgen_cached_settings_init(&cs);
  check(cs.boost_power == IDGEN_CACHE_BOOST_DEFAULT && cs.boost_power <= IDGEN_CACHE_BOOST_MAX &&
            cs.padding_percent == IDGEN_CACHE_PADDING_DEFAULT &&
            IDGEN_CACHE_PADDING_MIN <= IDGEN_CACHE_PADDING_MAX && IDGEN_CACHE_SLOTS_MAX > 0 &&
            IDGEN_CACHE_SCHEDULE_MS_MAX > 0,
        "IDGEN_CACHE_*");

  /* The registry's sizes and bounds. */
  idgen_lease_info_t info = {};
  idgen_lease_row_t row = {};
  idgen_space_info_t space = {};
  idgen_host_value_t host = {};
  char nodes[IDGEN_HOST_NODES_MAX] = "";
  check(sizeof info.pool == IDGEN_POOL_NAME_MAX && sizeof info.holder == IDGEN_HOLDER_MAX &&
            sizeof st.reason == IDGEN_REASON_MAX && sizeof row.node == IDGEN_NODE_TEXT_MAX &&
            sizeof space.name == IDGEN_SPACE_NAME_MAX &&
            sizeof space.layouts / sizeof space.layouts[0] == IDGEN_SPACE_LAYOUTS_MAX &&
            sizeof host.iface == IDGEN_IFNAME_MAX && sizeof nodes > 0,
        "IDGEN_*_MAX of the registry");
  /* Sequences' sizes. */
  idgen_seq_row_t seq = {};
  idgen_seq_stats_t sst = {};
  check(sizeof seq.key == IDGEN_SEQ_KEY_MAX && sizeof sst.key == IDGEN_SEQ_KEY_MAX &&
            IDGEN_SEQ_KEY_MAX > IDGEN_SEQ_NAME_MAX &&
            sizeof seq.holders / sizeof seq.holders[0] == IDGEN_SEQ_HOLDERS_MAX &&
            IDGEN_SEQ_COUNTER_MAX == (uint64_t)INT64_MAX,
        "IDGEN_SEQ_*");
  check(IDGEN_START_WAIT_MS_DEFAULT <= IDGEN_START_WAIT_MS_MAX && IDGEN_START_WAIT_DEFAULT < 0 &&
            IDGEN_LEASE_TTL_MIN_MS <= IDGEN_LEASE_TTL_DEFAULT_MS &&
            IDGEN_LEASE_TTL_DEFAULT_MS <= IDGEN_LEASE_TTL_MAX_MS && IDGEN_REGISTRY_CALL_MS > 0,
        "the registry's bounds");
  idgen_lease_request_t req = {};
  req.max_start_wait_ms = IDGEN_START_WAIT_DEFAULT;
  check(req.max_start_wait_ms < 0, "IDGEN_START_WAIT_DEFAULT");

  /* The lease settings check, its setting to blame an enum. */
  idgen_lease_settings_t ls = {};
  ls.uri = "static";
  ls.layout = &l;
  ls.field = "worker";
  check(idgen_lease_settings_verify(&ls, err, sizeof err) == IDGEN_EINVAL &&
            ls.blame == IDGEN_LEASE_SETTING_FIELD,
        "idgen_lease_settings_verify");

  /* Sequences: the sizes a caller allocates, and a business-number template. */
  idgen_seq_row_t srow = {};
  check(sizeof srow.key == IDGEN_SEQ_KEY_MAX && IDGEN_SEQ_KEY_MAX > IDGEN_SEQ_NAME_MAX &&
            sizeof srow.holders / sizeof srow.holders[0] == IDGEN_SEQ_HOLDERS_MAX &&
            IDGEN_SEQ_COUNTER_MAX == (uint64_t)INT64_MAX,
        "IDGEN_SEQ_*");
  idgen_seq_format_t *fmt = NULL;
  char text[64];
  check(idgen_seq_format_parse(&fmt, "ORD{date:%Y%m%d}{seq:06}", NULL, err, sizeof err) == 0 &&
            idgen_seq_format_render(fmt, 1796292000000, 42, text, sizeof text) == 17 &&
            std::strcmp(text, "ORD20261203000042") == 0,
        "idgen_seq_format_*");
  idgen_seq_format_free(fmt);

  /* Public IDs: a key from memory, a text form with the longest prefix. */
  static const unsigned pv[1] = {IDGEN_PUBLIC_VERSION_MAX};
  static const uint8_t pk[1][IDGEN_PUBLIC_KEY_BYTES] = {{1, 2, 3}};
  idgen_public_keys_t *pkeys = NULL;
  idgen_public_t *pub = NULL;
  char prefix[IDGEN_PUBLIC_PREFIX_MAX], ptext[IDGEN_PUBLIC_TEXT_MAX];
  std::memset(prefix, 'a', sizeof prefix - 1);
  prefix[sizeof prefix - 1] = '\0';
  idgen_public_settings_t ps = {};
  ps.kind = IDGEN_PUBLIC_ULID;
  ps.prefix = prefix;
  uint8_t pid[16] = {7}, pback[16];
  check(idgen_public_keys_new(&pkeys, pv, pk, 1, err, sizeof err) == 0 &&
            idgen_public_new(&pub, pkeys, &ps, err, sizeof err) == 0 &&
            idgen_public_format128(pub, pid, ptext, sizeof ptext) ==
                IDGEN_PUBLIC_TEXT_MAX - 1 &&
            std::strlen(ptext) == sizeof prefix + IDGEN_PUBLIC_TEXT128_LEN - 1 + 1 &&
            ptext[sizeof prefix] == 'z' &&
            idgen_public_parse128(pub, ptext, std::strlen(ptext), pback, NULL, err, sizeof err) ==
                0 &&
            std::memcmp(pid, pback, 16) == 0 && IDGEN_PUBLIC_TEXT64_LEN == 17 &&
            std::strcmp(IDGEN_PUBLIC_KEY_ENV, "IDGEN_PUBLIC_KEY") == 0,
        "idgen_public_*");
  idgen_public_free(pub);
  idgen_public_keys_free(pkeys);

  if (failures == 0)
    std::printf("header_cxx: ok\n");
  return failures == 0 ? 0 : 1;
}
