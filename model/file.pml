/*
 * The file: registry's lease protocol, as implemented (registry_file.c;
 * docs/DESIGN.md §11 "file:DIR" and "The pool file", §17 this model).
 *
 * Actors: NH holders (processes) that lock a tuple's lock file, start above
 * its mark, issue IDs, keep the mark ahead, release, crash, pause (any
 * interleaving) and restart with their clock stepped back; an operator who
 * removes a lock file, moves one away and back, puts an old copy of one
 * back, removes the pool file and puts an old copy of it back; the clock.
 *
 * A file is an inode: the path DIR/<pool>/<key>.lock names one inode (or
 * none), and a holder keeps the inode it locked, whatever happens to the
 * path.  flock is on the inode.  Every step below runs as the code runs it
 * under the pool directory's lock (pool_lock), so each is one atomic step
 * here; the record write after the slot (write_record, outside the lock) is
 * a step of its own.
 *
 * Properties (asserted where an ID is issued), as in net.pml:
 *   unique, increasing, fenced (every ID at or below a mark written while
 *   the holder's checks passed), durable (nothing above where the tuple's
 *   next holder would start: its slot, or the pool mark without one, and
 *   the record at its path; or, with the pool file missing, what the
 *   rebuild would find: the records' highest mark).
 *
 * Switches:
 *   MUT_NOPOOL       no pool file: a tuple starts above its lock file's
 *                    record only (the first version: a removed lock file
 *                    read as "never used").
 *   MUT_NOSLOTCHECK  a mark write checks only that its lock file is still
 *                    the one at its path, not that its slot still holds
 *                    what it last wrote (a file moved away and back).
 *   LOCKOPS, POOLOPS the operator's actions on lock files, on the pool
 *                    file (default: both off; each case turns one on).
 *                    Both at once can lose both copies of a tuple's mark:
 *                    the documented exception (a counterexample).
 *   ONLY_UNIQUE      assert unique alone.
 *
 * Left out: ID spaces (two layouts): the space's rule is space.c's for
 * every backend and is checked in net.pml; file: makes its look and claim
 * one step by holding SPACE/space.lock across them, which is what an atomic
 * acquire is here.  The watchdog is not needed (a file: lease does not
 * expire).  The bounds and figures of each case are in model/file.cases.
 */

#ifndef NH
#define NH 3
#endif
#ifndef NK
#define NK 1      /* tuples of the pool */
#endif
#ifndef TMAX
#define TMAX 3
#endif
#ifndef NI
#define NI 4      /* inodes that can ever exist (a bound on creations) */
#endif
#ifndef OPMAX
#define OPMAX 2   /* the operator's actions */
#endif
#define BORROW 1
#define SKEW 1
#define NONE 255

#define ID(t, k) ((t) * NK + (k))
/* The slot check of a mark write: the slot holds what this holder last
 * wrote there (or the pool file was rebuilt without it). */
#ifdef MUT_NOSLOTCHECK
#define SLOT_OK(h) true
#else
#define SLOT_OK(h) (slot[key[h]] == NONE || slot[key[h]] == sm[h])
#endif
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define CLOCK(h) (now + skew[h] >= SKEW -> now + skew[h] - SKEW : 0)

byte now;
byte watch = NONE;
bit unique = 1, increasing = 1, fenced = 1, durable = 1;

/* ---- the directory ---- */
byte path[NK];        /* the inode at DIR/<pool>/<k>.lock; 0: no file */
byte rec[NI + 1];     /* an inode's record: its mark (0: empty, "never used") */
byte lockedby[NI + 1];/* flock: holder + 1, or 0 */
byte used;            /* inodes made so far (ids 1..used) */
bit pex = 1;          /* the pool file exists */
byte pmark;           /* its pool mark P */
byte slot[NK];        /* its slots: a tuple's mark, NONE: no slot */
/* the operator's copies: one lock file's record, one pool file */
byte bkey = NONE, brec;
bit bpool;
byte bpmark, bslot[NK];
byte moved = 0, movedkey;  /* an inode moved away from its path (mv), 0: none */
byte nops;

/* ---- the holders ---- */
byte up[NH];          /* 0 down, 1 holding */
byte key[NH], ino[NH];
byte tick[NH], ceil[NH];
byte sm[NH];          /* the slot's mark as this holder last wrote it */
byte skew[NH];
byte pending[NH];     /* a record write due after a slot write (0: none) */

/* Where tuple k's next holder would start (file_claim): its slot, or the
 * pool mark for a tuple without one, and at least the record at its path;
 * with the pool file missing, the rebuild's value: the highest record of
 * the files at their paths (records_max). */
inline records_max(v) {
  v = 0;
  for (i : 0 .. NK - 1) {
    if
    :: path[i] != 0 -> v = MAX(v, rec[path[i]])
    :: else -> skip
    fi
  }
  i = 0
}

/* The pool file, rebuilt if missing (pool_open_locked), under the lock. */
inline pool_open() {
#ifndef MUT_NOPOOL
  if
  :: !pex ->
    records_max(v);
    pex = 1; pmark = v;
    for (i : 0 .. NK - 1) { slot[i] = NONE }
    i = 0; v = 0
  :: else -> skip
  fi
#endif
}

/* Acquire (file_claim, try_key): the path's file is created if missing and
 * locked (LOCK_NB); then, under the pool's lock, the start is the slot (or
 * the pool mark) and at least the file's own record; the slot is written
 * with it.  The start must be within the borrow of the clock (acquisition
 * waits for a mark ahead, bounded). */
inline acquire(h) {
  atomic {
    up[h] == 0 ->
    if
    :: skew[h] = 0
    :: skew[h] = SKEW
    fi;
    select(k : 0 .. NK - 1);
    if
    :: path[k] == 0 && used < NI -> used++; path[k] = used; rec[used] = 0
    :: else -> skip
    fi;
    if
    :: path[k] != 0 && lockedby[path[k]] == 0 ->
      f = path[k];
#ifdef MUT_NOPOOL
      t = rec[f];
#else
      pool_open();
      t = (slot[k] == NONE -> pmark : slot[k]);
      t = MAX(t, rec[f]);
#endif
      if
      :: t <= CLOCK(h) + BORROW ->
        lockedby[f] = h + 1;
#ifndef MUT_NOPOOL
        slot[k] = t; pmark = MAX(pmark, t);
#endif
        up[h] = 1; key[h] = k; ino[h] = f;
        tick[h] = t; ceil[h] = t; sm[h] = t
      :: else -> skip
      fi
    :: else -> skip
    fi;
    k = 0; f = 0; t = 0
  }
}

inline down(h) {
  if
  :: up[h] && lockedby[ino[h]] == h + 1 -> lockedby[ino[h]] = 0
  :: else -> skip
  fi;
  up[h] = 0; key[h] = 0; ino[h] = 0; tick[h] = 0; ceil[h] = 0; sm[h] = 0;
  skew[h] = 0; pending[h] = 0
}

/* One ID (the generator's claim): the next tick, or the clock's; never
 * above the ceiling. */
inline issue(h) {
  atomic {
    up[h] == 1 && pending[h] == 0 && MAX(tick[h] + 1, CLOCK(h)) <= ceil[h] ->
    t = MAX(tick[h] + 1, CLOCK(h));
    id = ID(t, key[h]);
    assert(unique && (id != watch));
    if
    :: watch == NONE -> watch = id
    :: true
    fi;
#ifndef ONLY_UNIQUE
    assert(increasing && (id > ID(tick[h], key[h])));
    assert(fenced && (t <= sm[h]));
    records_max(v);
    assert(durable && (t <= (!pex -> v :
        MAX((slot[key[h]] == NONE -> pmark : slot[key[h]]),
            (path[key[h]] != 0 -> rec[path[key[h]]] : 0)))));
    v = 0;
#endif
    tick[h] = t;
    t = 0; id = 0
  }
}

/* The keeper's mark write (file_mark), under the pool's lock: its lock file
 * must still be the one at its path (file_renew) and its slot must hold
 * what it last wrote (unless the pool file was rebuilt without it); then
 * the slot and the pool mark.  The record follows, outside the lock
 * (write_record); only then does the ceiling rise (record(h)). */
inline keep_mark(h) {
  atomic {
    up[h] == 1 && pending[h] == 0 && MAX(tick[h], CLOCK(h)) + 1 > ceil[h] && ceil[h] < TMAX ->
    t = MAX(tick[h], CLOCK(h)) + 1;
    t = (t > TMAX -> TMAX : t);
#ifdef MUT_NOPOOL
    if
    :: path[key[h]] == ino[h] -> pending[h] = t
    :: else -> down(h)
    fi;
#else
    pool_open();
    if
    :: path[key[h]] == ino[h] && SLOT_OK(h) ->
      slot[key[h]] = t; pmark = MAX(pmark, t); sm[h] = t;
      pending[h] = t
    :: else -> down(h) /* IDGEN_ELEASE: the binding ends */
    fi;
#endif
    t = 0
  }
}

/* The record write to its own inode (wherever its path now points), then
 * the ceiling. */
inline record(h) {
  atomic {
    up[h] == 1 && pending[h] != 0 ->
    rec[ino[h]] = MAX(rec[ino[h]], pending[h]);
#ifdef MUT_NOPOOL
    sm[h] = pending[h];
#endif
    ceil[h] = pending[h];
    pending[h] = 0
  }
}

/* Renewal (file_renew): the path still names its inode, else the binding
 * ends. */
inline renew(h) {
  atomic {
    up[h] == 1 && path[key[h]] != ino[h] -> down(h)
  }
}

/* Release (file_release after the final mark): the final mark is the last
 * tick used, written as a mark (its checks, the slot lowered to it, the
 * record), then the lock is dropped. */
inline release(h) {
  atomic {
    up[h] == 1 && pending[h] == 0 ->
#ifndef MUT_NOPOOL
    pool_open();
    if
    :: path[key[h]] == ino[h] && SLOT_OK(h) ->
      slot[key[h]] = tick[h]; pmark = MAX(pmark, tick[h]);
      rec[ino[h]] = tick[h]
    :: else -> skip
    fi;
#else
    rec[ino[h]] = tick[h];
#endif
    down(h)
  }
}

proctype holder(byte h) {
  byte k, f, t, id, v, i;
end:
  do
  :: acquire(h)
  :: issue(h)
  :: keep_mark(h)
  :: record(h)
  :: renew(h)
  :: release(h)
  :: atomic { up[h] == 1 -> down(h) } /* crash: the kernel drops the flock */
  od
}

/* The operator, at most OPMAX actions. */
proctype operator() {
  byte k, i;
end:
  do
#ifdef LOCKOPS
  :: atomic { /* rm a lock file */
       nops < OPMAX -> nops++;
       select(k : 0 .. NK - 1);
       path[k] = 0; k = 0
     }
  :: atomic { /* mv a lock file away */
       nops < OPMAX && moved == 0 -> nops++;
       select(k : 0 .. NK - 1);
       if
       :: path[k] != 0 -> moved = path[k]; movedkey = k; path[k] = 0
       :: else -> skip
       fi;
       k = 0
     }
  :: atomic { /* ... and back, over whatever is at the path now */
       nops < OPMAX && moved != 0 -> nops++;
       path[movedkey] = moved; moved = 0; movedkey = 0
     }
  :: atomic { /* cp a lock file's record aside */
       nops < OPMAX && bkey == NONE -> nops++;
       select(k : 0 .. NK - 1);
       if
       :: path[k] != 0 -> bkey = k; brec = rec[path[k]]
       :: else -> skip
       fi;
       k = 0
     }
  :: atomic { /* ... and put the copy back: a new file at the path */
       nops < OPMAX && bkey != NONE && used < NI -> nops++;
       used++; rec[used] = brec; path[bkey] = used;
       bkey = NONE; brec = 0
     }
#endif
#ifdef POOLOPS
  :: atomic { /* rm the pool file */
       nops < OPMAX && pex -> nops++;
       pex = 0; pmark = 0;
       for (i : 0 .. NK - 1) { slot[i] = NONE }
       i = 0
     }
  :: atomic { /* cp the pool file aside */
       nops < OPMAX && pex && !bpool -> nops++;
       bpool = 1; bpmark = pmark;
       for (i : 0 .. NK - 1) { bslot[i] = slot[i] }
       i = 0
     }
  :: atomic { /* ... and put the copy back */
       nops < OPMAX && bpool -> nops++;
       pex = 1; pmark = bpmark;
       for (i : 0 .. NK - 1) { slot[i] = bslot[i] }
       bpool = 0; bpmark = 0; i = 0;
       for (i : 0 .. NK - 1) { bslot[i] = 0 }
       i = 0
     }
#endif
  :: atomic { nops >= OPMAX -> break }
  od
}

active proctype clock() {
end:
  do
  :: atomic { now < TMAX -> now++ }
  od
}

init {
  atomic {
    byte i;
    for (i : 0 .. NK - 1) { slot[i] = NONE }
    i = 0;
    do
    :: i < NH -> run holder(i); i++
    :: else -> break
    od;
#if defined(LOCKOPS) || defined(POOLOPS)
    run operator()
#endif
  }
}
