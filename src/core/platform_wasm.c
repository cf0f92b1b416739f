/*
 * platform_wasm.c -- what the core asks of WebAssembly (WASI, one thread, no
 * fork, no OpenSSL): its platform_posix.c for idgen.wasm.  No fork: the
 * generation stays clock.c's first, 1.
 *
 * The random source is the host's, crypto.getRandomValues() behind WASI's
 * random_get, which getentropy() calls (at most 256 bytes a call), read 256
 * bytes at a time into the end of the one thread's buffer (core_int.h's,
 * which idgen__random_quick serves from): a call into the host per ID costs
 * more than the ID.
 */
#include <string.h>
#include <unistd.h>

#include "core_int.h"

#define CHUNK 256 /* getentropy()'s most */

__thread struct idgen__rbuf *idgen__tls_rbuf __attribute__((tls_model("initial-exec")));
static struct idgen__rbuf rbuf = {.pos = IDGEN__RBUF_SIZE};

int idgen__random(const idgen_random_t *r, void *out, size_t n) {
  if (r != NULL)
    return r->fill(r->ctx, out, n);
  if (idgen__random_quick(NULL, out, n))
    return 0;
  unsigned char *o = out;
  idgen__tls_rbuf = &rbuf;
  rbuf.gen = idgen__fork_gen();
  while (n > 0) {
    if (rbuf.pos == IDGEN__RBUF_SIZE) {
      if (getentropy(rbuf.bytes + IDGEN__RBUF_SIZE - CHUNK, CHUNK) != 0)
        return IDGEN_ERANDOM;
      rbuf.pos = IDGEN__RBUF_SIZE - CHUNK;
    }
    size_t k = IDGEN__RBUF_SIZE - rbuf.pos < n ? IDGEN__RBUF_SIZE - rbuf.pos : n;
    memcpy(o, rbuf.bytes + rbuf.pos, k);
    rbuf.pos += k;
    o += k;
    n -= k;
  }
  return 0;
}
