/* app.c -- a program on the installed libidgen: one Snowflake ID and one ULID
 * of a known time, printed.  Built by tests/install_test.sh and
 * tests/deb_test.sh against what they installed. */
#include <idgen.h>
#include <stdio.h>
int main(void) {
  idgen_layout_t l;
  idgen_snowflake_gen_t *g;
  idgen_ulid_t u;
  uint64_t id;
  char text[IDGEN_ULID_STRLEN + 1];
  if (idgen_layout_parse(&l, "twitter", NULL, 0) ||
      idgen_snowflake_gen_new(&g, &l, NULL, NULL, 0) || idgen_snowflake_gen_next(g, &id) ||
      idgen_ulid_make(&u, 1469922850259, NULL))
    return 1;
  idgen_ulid_format(&u, text);
  printf("%llu %s\n", (unsigned long long)id, text);
  idgen_snowflake_gen_free(g);
  return 0;
}
