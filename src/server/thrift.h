/*
 * thrift.h -- Twitter's Snowflake service over Apache Thrift (DESIGN §9):
 * the framed transport and the binary protocol, for `idgen serve
 * --thrift`.  The IDL is docs/snowflake.thrift:
 *
 *   exception InvalidSystemClock { 1: string message }
 *   exception InvalidUserAgentError { 1: string message }
 *   service Snowflake {
 *     i64 get_worker_id()
 *     i64 get_timestamp()
 *     i64 get_id(1:string useragent)
 *     i64 get_datacenter_id()
 *   }
 *
 * The parser is pure and allocation-free: it reads one framed message from
 * the start of a buffer and returns pointers into it.  The writers append a
 * framed reply (a result struct with field 0, or a TApplicationException)
 * to a caller's buffer.
 */
#ifndef IDGEN_THRIFT_H
#define IDGEN_THRIFT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Message types of the binary protocol. */
enum { THRIFT_CALL = 1, THRIFT_REPLY = 2, THRIFT_EXCEPTION = 3, THRIFT_ONEWAY = 4 };

/* TApplicationException types. */
enum {
  THRIFT_EX_UNKNOWN = 0,
  THRIFT_EX_UNKNOWN_METHOD = 1,
  THRIFT_EX_INVALID_MESSAGE_TYPE = 2,
  THRIFT_EX_INTERNAL_ERROR = 6,
  THRIFT_EX_PROTOCOL_ERROR = 7
};

/* The service's methods. */
enum {
  THRIFT_M_UNKNOWN = 0,
  THRIFT_M_GET_WORKER_ID,
  THRIFT_M_GET_TIMESTAMP,
  THRIFT_M_GET_ID,
  THRIFT_M_GET_DATACENTER_ID
};

#define THRIFT_ERR_MAX 128 /* room for any error text, with its NUL */
#define THRIFT_NAME_MAX 64 /* longest method name echoed in a reply */

typedef struct thrift_call {
  int type;         /* THRIFT_CALL, THRIFT_ONEWAY, or another (refused) */
  int method;       /* THRIFT_M_* */
  const char *name; /* into the buffer; not NUL-terminated */
  size_t name_len;
  int32_t seqid;
  int has_useragent;     /* get_id's field 1 was present (a string) */
  const char *useragent; /* into the buffer */
  size_t useragent_len;
} thrift_call_t;

enum { THRIFT_NEED_MORE = 0, THRIFT_MALFORMED = -1 };

/*
 * Parses one framed message from buf[0..len): a 4-byte big-endian length,
 * then that many bytes holding a message in the binary protocol (strict, or
 * the old form that begins with the name), whose argument struct's unknown
 * fields are skipped (nesting at most 32 deep).  Returns the bytes it takes
 * (> 0) with *call filled; THRIFT_NEED_MORE; or THRIFT_MALFORMED with err
 * (THRIFT_ERR_MAX bytes) naming the problem.  A frame longer than
 * max_frame is malformed as soon as its length is read.  After a malformed
 * message whose head could be read, call->name and call->seqid are set (a
 * reply can name them), else call->name is NULL.
 */
ssize_t thrift_parse(const char *buf, size_t len, size_t max_frame, thrift_call_t *call, char *err);

/* Appends to out[] (at most cap bytes; returns the bytes written, 0 if they
 * did not fit) a framed REPLY to `name` carrying the i64 `value`. */
size_t thrift_write_i64(char *out, size_t cap, const char *name, size_t name_len, int32_t seqid,
                        int64_t value);

/* The same for a TApplicationException {1: message, 2: type}. */
size_t thrift_write_exception(char *out, size_t cap, const char *name, size_t name_len,
                              int32_t seqid, int type, const char *message);

#endif
