/*
 * cli_public.c -- public IDs for `idgen ulid` and `idgen uuid7`: their
 * --public-key, --public-prefix and --public-form options (with
 * $IDGEN_PUBLIC_KEY naming a key file when the flag is not given), and the
 * key loading `idgen public` shares.  `idgen snowflake` takes the same
 * options through the settings (src/common/settings.c).  A key is never
 * printed: messages come from the library, which names lines and modes,
 * never key bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

idgen_public_keys_t *cli_public_keys(const char *opt, const char *path) {
  char err[512];
  idgen_public_keys_t *k = NULL;
  if (idgen_public_keys_load(&k, path, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s: %s", opt, err);
  return k;
}

void cli_public_open(cli_public_t *p, const char *cmd, idgen_public_kind_t kind) {
  const char *key = p->key_path, *opt = "--public-key";
  if (key == NULL) {
    key = getenv(IDGEN_PUBLIC_KEY_ENV);
    opt = IDGEN_PUBLIC_KEY_ENV;
  }
  int prefixed = p->prefix != NULL && p->prefix[0] != '\0';
  char err[512];
  if (p->prefix != NULL && idgen_public_prefix_check(p->prefix, err, sizeof err) < 0)
    cli_fail(EXIT_USAGE, "%s: --public-prefix: %s", cmd, err);
  const char *form = p->form != NULL ? p->form : "auto";
  if (strcmp(form, "auto") == 0)
    p->text = prefixed;
  else if (strcmp(form, "text") == 0)
    p->text = 1;
  else if (strcmp(form, "int") == 0)
    p->text = 0;
  else
    cli_fail(EXIT_USAGE, "%s: --public-form: \"%s\" is not a form (expected auto, int or text)",
             cmd, CLI_QUOTED(form));
  if (prefixed && !p->text)
    cli_fail(EXIT_USAGE,
             "%s: the integer form has no prefix: --public-form text with "
             "--public-prefix",
             cmd);
  if (key == NULL || key[0] == '\0') {
    if (prefixed || p->form != NULL)
      cli_fail(EXIT_USAGE, "%s: --public-%s without a key (--public-key FILE or %s)", cmd,
               prefixed ? "prefix" : "form", IDGEN_PUBLIC_KEY_ENV);
    p->codec = NULL;
    return;
  }
  idgen_public_keys_t *k = cli_public_keys(opt, key);
  idgen_public_settings_t s = {kind, 0, p->text ? p->prefix : NULL, 0};
  int rc = idgen_public_new(&p->codec, k, &s, err, sizeof err);
  idgen_public_keys_free(k);
  if (rc < 0)
    cli_fail(EXIT_USAGE, "%s: %s", cmd, err);
}

void cli_public_128(cli_public_t *p, const uint8_t id[16], int as_uuid, char *out) {
  int rc;
  if (p->text) {
    rc = idgen_public_format128(p->codec, id, out, IDGEN_PUBLIC_TEXT_MAX);
  } else {
    uint8_t pub[16];
    rc = idgen_public_map128(p->codec, id, pub);
    if (rc >= 0)
      cli_text_128(pub, as_uuid, out);
  }
  if (rc < 0) {
    fflush(stdout);
    cli_fail(EXIT_ID, "cannot make a public ID: %s", idgen_strerror(rc));
  }
}

void cli_public_close(cli_public_t *p) {
  idgen_public_free(p->codec);
  p->codec = NULL;
}
