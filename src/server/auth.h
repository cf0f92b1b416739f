/*
 * auth.h -- the daemon's tokens (`auth_file`; docs/SERVE.md, Authentication
 * and TLS): who may take IDs.
 *
 * The file has one line per agent, `AGENT TOKEN`; blank lines and lines
 * starting with '#' are skipped.  AGENT is an agent name
 * ([a-zA-Z][a-zA-Z0-9-]*, up to 64 characters): the caller's agent in the
 * metrics and the audit log once it shows the token.  TOKEN is 16 to 256
 * visible ASCII characters ('!' to '~'); each agent and each token appears
 * once.  The table keeps SHA-256 digests of the tokens, never the tokens,
 * and a lookup compares every digest in constant time, so its time does
 * not tell how much of a token was right.  No message quotes a token.
 */
#ifndef IDGEN_SERVE_AUTH_H
#define IDGEN_SERVE_AUTH_H

#include <stddef.h>

#define AUTH_TOKEN_MIN 16
#define AUTH_TOKEN_MAX 256
#define AUTH_MAX_ENTRIES 4096
#define AUTH_FILE_MAX (1 << 20)

typedef struct serve_auth serve_auth_t;

/* Parses an auth file's text[0..len): 0 with *out (free with
 * serve_auth_free), or -1 with a message naming the line and what is wrong
 * in err (`path` names the file in it).  Pure. */
int serve_auth_parse(const char *path, const char *text, size_t len, serve_auth_t **out, char *err,
                     size_t errlen);

/* Reads and parses the file `path`: refused when it is not a regular file,
 * when others may read or write it (mode o+rw: the message says
 * `chmod o-rwx`), or larger than AUTH_FILE_MAX. */
int serve_auth_load(const char *path, serve_auth_t **out, char *err, size_t errlen);

/* The entry whose token is tok[0..tlen) (and whose agent is agent[0..alen),
 * if agent is not NULL), or -1.  Every entry is compared, in constant time
 * in the token. */
int serve_auth_check(const serve_auth_t *a, const char *agent, size_t alen, const char *tok,
                     size_t tlen);

/* Entry i's agent name; how many entries. */
const char *serve_auth_agent(const serve_auth_t *a, int i);
int serve_auth_count(const serve_auth_t *a);

void serve_auth_free(serve_auth_t *a);

#endif
