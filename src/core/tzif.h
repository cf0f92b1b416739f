/*
 * tzif.h -- time zones from the system's tzdata (RFC 8536 TZif files,
 * version 2 and later), for the business-number templates (seqfmt.c).
 *
 * A zone is read once into an immutable idgen__tz_t: its transitions (the
 * 64-bit block) and the POSIX TZ rule of the file's footer for times after
 * the last transition.  The process's TZ variable and localtime() are never
 * used: they are global state.  Times here are Unix seconds; offsets are
 * seconds east of UTC.
 */
#ifndef IDGEN_TZIF_H
#define IDGEN_TZIF_H

#include <stddef.h>
#include <stdint.h>

typedef struct idgen__tz idgen__tz_t;

/* Parses a TZif file's bytes: 0, or IDGEN_EPARSE / IDGEN_ENOMEM with a
 * message "tz: ..." in err.  Strict: version 2 or later, counts that add
 * up, transitions in increasing order, types and offsets in range, a valid
 * footer; leap-second files are refused. */
int idgen__tz_parse(idgen__tz_t **out, const uint8_t *buf, size_t len, char *err, size_t errlen);

/* Loads IANA zone `name` ("Asia/Shanghai") from $TZDIR or
 * /usr/share/zoneinfo.  NULL, "UTC" and "Etc/UTC" without a file give UTC.
 * IDGEN_EINVAL for a name with "..", a leading '/' or other characters than
 * [A-Za-z0-9/_+-.], or no such zone; IDGEN_EPARSE for a bad file. */
int idgen__tz_load(idgen__tz_t **out, const char *name, char *err, size_t errlen);

void idgen__tz_free(idgen__tz_t *tz);

/* The offset from UTC at Unix second t. */
int32_t idgen__tz_offset(const idgen__tz_t *tz, int64_t t);

/* The first transition strictly after t (a time where the offset may
 * change), or INT64_MAX when there is none. */
int64_t idgen__tz_next(const idgen__tz_t *tz, int64_t t);

#endif
