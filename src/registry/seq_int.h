/*
 * seq_int.h -- a sequence counter's record (seq_record.c): its text, the
 * same in every backend, and the transitions a holder makes on it.  Pure
 * functions: no I/O, the registry's clock passed in as now_ms.
 *
 *   idgen-seq v1 next=N gen=G claimed=C issued=I given=B lost=L strict=0|1 owner=G0
 *   holder gen=G expires_ms=E lo=A hi=B claimed=C issued=I rate=R who=HOST:PID:TOKEN
 *   ...                                       (one line per holder)
 *
 * Numbers are decimal without leading zeros; every line ends in '\n'.  The
 * accounting identity, kept by every transition:
 *   claimed = issued + given + lost + sum over holders (claimed - issued).
 */
#ifndef IDGEN_SEQ_INT_H
#define IDGEN_SEQ_INT_H

#include <stddef.h>
#include <stdint.h>

#include "idgen.h"

typedef struct idgen__seq_holder {
  uint64_t gen;
  int64_t expires_ms; /* by the registry's clock */
  uint64_t lo, hi;    /* the last range claimed */
  uint64_t claimed;   /* by this holder under this generation */
  uint64_t issued;    /* as last reported */
  uint64_t rate;      /* numbers/s, as last reported */
  char who[IDGEN_HOLDER_MAX];
} idgen__seq_holder_t;

typedef struct idgen__seq_rec {
  uint64_t next, gen, claimed, issued, given, lost;
  int strict;
  uint64_t owner; /* the strict sequence's holder's generation; 0: none */
  int n;
  idgen__seq_holder_t h[IDGEN_SEQ_HOLDERS_MAX];
} idgen__seq_rec_t;

/* Longest text, with its NUL. */
#define IDGEN__SEQ_TEXT_MAX (200 + IDGEN_SEQ_HOLDERS_MAX * (220 + IDGEN_HOLDER_MAX))

/* A new counter: next = 1, nothing claimed. */
void idgen__seq_rec_init(idgen__seq_rec_t *rec);
/* text[0..n): 0, or IDGEN_EREGISTRY naming what is wrong (rec then empty). */
int idgen__seq_rec_parse(const char *text, size_t n, idgen__seq_rec_t *rec, char *err,
                         size_t errlen);
/* Into buf[n]: the length, or -1 if it does not fit. */
int idgen__seq_rec_format(const idgen__seq_rec_t *rec, char *buf, size_t n);

/* A late report: a holder reaped under generation `gen` issued `issued`
 * numbers since its last report (they had been counted lost). */
typedef struct idgen__seq_late {
  uint64_t gen, issued;
} idgen__seq_late_t;

/* Removes every entry expired by now_ms (a strict record's owner only
 * ttl_ms after its expiry), counting its unissued numbers lost.  Every
 * transition below reaps first. */
void idgen__seq_reap(idgen__seq_rec_t *rec, int64_t now_ms, int64_t ttl_ms);
/* Registers holder `who`: *gen the new generation.  IDGEN_ELEASE when a
 * strict sequence's owner is still live; IDGEN_EINVAL when strict differs
 * from the record's and it has live holders; IDGEN_ERANGE when full. */
int idgen__seq_register(idgen__seq_rec_t *rec, const char *who, int64_t now_ms, int64_t ttl_ms,
                        int strict, const idgen__seq_late_t *late, uint64_t *gen, char *err,
                        size_t errlen);
/* Claims up to `step` numbers for holder gen: [*lo, *hi).  `issued` is the
 * holder's count issued under gen so far.  IDGEN_ELEASE: fenced (reaped,
 * or not the strict owner); IDGEN_ERANGE: the counter is past 2^63-1. */
int idgen__seq_claim(idgen__seq_rec_t *rec, uint64_t gen, uint64_t step, int64_t now_ms,
                     int64_t ttl_ms, uint64_t issued, uint64_t rate, uint64_t *lo, uint64_t *hi,
                     char *err, size_t errlen);
/* Moves the holder's expiry to now_ms + ttl_ms: 0, or IDGEN_ELEASE. */
int idgen__seq_renew(idgen__seq_rec_t *rec, uint64_t gen, int64_t now_ms, int64_t ttl_ms,
                     uint64_t issued, uint64_t rate, char *err, size_t errlen);
/* The holder stops: gives back from the top the unissued ranges
 * [u[i], hi[i]) (ascending) that are contiguous with next, counts the rest
 * of its claims lost and removes its entry.  A holder already reaped only
 * has issued - reported folded in (as a late report: `reported` is what
 * its last report that went through said).  *given: what was given back. */
int idgen__seq_close(idgen__seq_rec_t *rec, uint64_t gen, int64_t now_ms, int64_t ttl_ms,
                     const uint64_t *u, const uint64_t *hi, int nranges, uint64_t issued,
                     uint64_t reported, uint64_t *given, char *err, size_t errlen);
/* Forward only: IDGEN_ERANGE when next < rec->next (or past 2^63). */
int idgen__seq_set(idgen__seq_rec_t *rec, uint64_t next, char *err, size_t errlen);

/* Tests only: leaves the ranges s holds (counted lost) and moves its
 * cursor to full epoch `epoch` (nothing if it is not above the last range
 * installed), so that a test reaches the wrap of the cursor's 24-bit epoch
 * without 2^24 claims.  The ring is left as those claims would have left
 * it; what the jump cannot make up is time: a take racing a jump of
 * exactly 2^24 epochs from one its thread cached is the hole of
 * docs/DESIGN.md "Sequences" (a stall while 2^24 ranges go by). */
void idgen__seq_test_jump(idgen_seq_t *s, uint64_t epoch);

#endif
