/*
 * options.h -- the names of the options a JavaScript Snowflake generator
 * takes (`new Snowflake({...})`, `Snowflake.open({...})`): one list for the
 * Node.js addon (js/src/addon.c) and the WebAssembly build (js/wasm/glue.c,
 * read by js/lib/wasm.js), so that both refuse a misspelt name the same way
 * (`unknown option "nod"; known: ...`) instead of taking its default.
 * No I/O, no allocation.
 */
#ifndef IDGEN_OPTIONS_H
#define IDGEN_OPTIONS_H

#include <stddef.h>

/* Whether name (NUL-terminated; NULL is no name) is a known option: 1 or 0. */
int options_known(const char *name);

/* The known names, comma-separated ("layout, registry, ..."): a static
 * string, valid for the program's life. */
const char *options_list(void);

/* The refusal of an unknown name into buf (always NUL-terminated, cut to
 * n bytes): `unknown option "NAME"; known: LIST`. */
void options_unknown_message(const char *name, char *buf, size_t n);

/* The same for a Sequence's options (`new Sequence(name, {...})`, the
 * addon only: the WebAssembly build has no Sequence). */
int seq_options_known(const char *name);
const char *seq_options_list(void);
void seq_options_unknown_message(const char *name, char *buf, size_t n);

#endif
