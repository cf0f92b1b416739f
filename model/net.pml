/*
 * The lease protocol of the network registries (postgres://, etcd://), as
 * implemented: docs/DESIGN.md §11 ("postgres://", "etcd://", "One registry,
 * one ID space") and §17 (this model, and which code each step stands for).
 *
 * Actors: NH holders (processes) that acquire a tuple of a layout, issue
 * IDs, keep a mark ahead, renew, release, crash, pause (any interleaving is
 * a pause: nothing waits on time), restart with their clock stepped, and
 * switch between two layouts whose IDs overlap; an operator who frees
 * tuples (with and without --force), deletes rows by hand and restores the
 * whole registry from a backup; the clock.
 *
 * Properties (asserted where an ID is issued):
 *   unique      no ID is issued twice;
 *   increasing  a holder's IDs increase;
 *   fenced      every ID is covered by a mark the registry accepted while
 *               the holder's generation was the tuple's (its lease);
 *   durable     nothing is issued above what the next holder of the tuple
 *               would start above (its row's mark, its pool's floor).
 *
 * Switches (spin -D...):
 *   RESTORE_ROW   the operator may put one row back as an earlier copy
 *                 of it had it (a hand edit that lowers its mark): a
 *                 documented exception too ("do not edit the tables").
 *   RESTORE       the operator may restore the whole registry from a
 *                 backup: the documented exception; a counterexample is
 *                 expected.
 *   MUT_FIELD     leases per leased field instead of per node tuple.
 *   MUT_NOFLOOR   no pool-wide mark: a row deleted by hand does not raise
 *                 its pool's floor.
 *   MUT_NOSPACE   no ID-space rule: any layout leases beside any other.
 *   MUT_UNCOND    renewals and mark writes not conditional on the
 *                 generation and holder.
 *   MUT_UNCOND_RENEW  renewals alone not conditional: not a bug, since
 *                 only a mark write (still conditional) raises a ceiling;
 *                 an `ok` case shows it.
 *   ONLY_UNIQUE   assert unique alone: a mutation then has to be shown
 *                 to repeat an ID, not only to break the rule that
 *                 prevents it.
 * Each MUT_ is one rule of the implementation removed; each must give a
 * counterexample (model/check.sh).
 */

#ifndef NH
#define NH 3      /* holders */
#endif
#ifndef NL
#define NL 2      /* layouts: layout l's epoch is l ticks earlier */
#endif
#ifndef NK
#define NK 2      /* tuples (node keys) of a layout */
#endif
#define NF 2      /* lease fields a holder can name (same tuples) */
#ifndef TMAX
#define TMAX 4    /* the clock's last tick */
#endif
#ifndef TTL
#define TTL 2     /* lease TTL, in ticks */
#endif
#ifndef QUAR
#define QUAR 1    /* quarantine after expiry */
#endif
#ifndef OPMAX
#define OPMAX 255 /* the operator's frees and deletes: 255 is no bound */
#endif
#define BORROW 1  /* how far a generator may run ahead of its clock */
#define SKEW 1    /* |clock - true time| after a step, at most */
#define NID ((TMAX + NL + 1) * NK)

/* The ID of tick t, tuple k in layout l: one ID per tick and tuple (the
 * sequence is folded into the tick); layout l's epoch is l ticks earlier,
 * so tick t of layout 1 is tick t + 1 of layout 0: overlapping ranges. */
#define ID(l, t, k) (((t) + (l)) * NK + (k))

#ifdef MUT_FIELD
#define NR (NF * NK)
#define ROW(f, k) ((f) * NK + (k))
#else
#define NR NK
#define ROW(f, k) (k)
#endif

/* ---- the registry (the database's rows, on the database's clock) ---- */
/* Row r of layout l's pool is index l * NR + r. */
#define RR(l, r) ((l) * NR + (r))
/* A row's fencing token is its generation and its holder together (SQL's
 * WHERE generation AND holder; etcd's create_revision and lease ID): a new
 * lease, a free and a fence each change it.  A holder process holds one
 * lease at a time (it acquires only when down), so here the holder's index
 * stands for the pair: the row names it exactly while its lease is the
 * row's current one. */
bit rrow[NL * NR];     /* the row exists */
byte rholder[NL * NR]; /* 0: none; h + 1 */
byte rfreeat[NL * NR]; /* free again: expiry + quarantine (expiry itself decides
                          * nothing here: the watchdog is left out, below) */
byte rmark[NL * NR];   /* durable mark (a tick) */
byte floor[NL];        /* the pool's floor: raised by the delete trigger */
bit joined[NL];        /* the space's record: layouts in it */
byte sfloor[NL];       /* the space's floor for a layout (ticks) */
byte retired;          /* highest ID of the retired ranges + 1; 0: none */
#ifdef RESTORE_ROW
byte brr = 255;      /* the row copied (255: none yet), and the copy */
byte b1holder, b1freeat, b1mark;
bit b1row, put_back;
#endif
#ifdef RESTORE
byte bholder[NL * NR], bfreeat[NL * NR], bmark[NL * NR];
byte bfloor[NL], bsfloor[NL], bretired;
bit bjoined[NL], brow[NL * NR];
bit have_backup, restored;
#endif

byte now;            /* true time, the database's clock */
/* unique, checked on one ID: when an ID is issued and none is watched, the
 * search goes on both with it watched and without (every ID is watched on
 * some path); a watched ID issued again is a duplicate. */
#define NONE 255
byte watch = NONE;
/* The properties' names, so that pan's message names the one violated
 * (model/check.sh reads it): assert(PROP && (condition)). */
#if OPMAX < 255
byte nops;           /* the operator's actions so far */
#define OP_TURN nops < OPMAX -> nops++
#else
#define OP_TURN true
#endif
bit unique = 1, increasing = 1, fenced = 1, durable = 1;

/* ---- the holders (one process each; DOWN between incarnations) ---- */
byte up[NH];         /* 0 down, 1 holding */
byte lay[NH], row[NH];
#define KEY(h) (row[h] % NK)
byte tick[NH];       /* the generator's last tick (start: above the mark) */
byte ceil[NH];       /* the ceiling: no ID above it */
byte skew[NH];       /* clock = now + skew - SKEW: behind by SKEW, or on time */
#ifdef MUT_UNCOND
byte vmark[NH];      /* ghost: the highest mark accepted under its lease */
#else
#define vmark ceil   /* the same by construction: the ceiling rises only then */
#endif

#define HR(h) RR(lay[h], row[h])
#define CLOCK(h) (now + skew[h] >= SKEW -> now + skew[h] - SKEW : 0)
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define LIVE(l, r) (rrow[RR(l, r)] && rfreeat[RR(l, r)] > now)
#define CURRENT(h) (rrow[HR(h)] && rholder[HR(h)] == h + 1)

/* The space's rule for layout l joining (space.c: space_join): every other
 * layout in the record whose range meets l's (all do here) must have no
 * live tuple; it is then retired: its rows are fenced, its IDs kept as a
 * retired range, and l's floor raised above it. */
inline space_join(l, ok) {
  ok = 1;
#ifndef MUT_NOSPACE
  if
  :: !joined[l] ->
    m = 0;
    do
    :: m < NL ->
      if
      :: m != l && joined[m] ->
        i = 0;
        do
        :: i < NR -> if :: LIVE(m, i) -> ok = 0 :: else -> skip fi; i++
        :: else -> break
        od
      :: else -> skip
      fi;
      m++
    :: else -> break
    od;
    if
    :: ok ->
      m = 0;
      do
      :: m < NL ->
        if
        :: m != l && joined[m] ->
          hi = floor[m];
          i = 0;
          do
          :: i < NR ->
            hi = MAX(hi, rmark[RR(m, i)]);
            if /* fence: generation + 1, holder = NULL */
            :: rrow[RR(m, i)] -> rholder[RR(m, i)] = 0
            :: else -> skip
            fi;
            i++
          :: else -> break
          od;
          retired = MAX(retired, ID(m, hi, NK - 1) + 1);
          joined[m] = 0
        :: else -> skip
        fi;
        m++
      :: else -> break
      od;
      joined[l] = 1;
      /* the floor: every ID of the ticks after it above the retired ranges */
      if
      :: retired > 0 && (retired - 1) / NK > l ->
        sfloor[l] = MAX(sfloor[l], (retired - 1) / NK - l)
      :: else -> skip
      fi
    :: else -> skip
    fi
  :: else -> skip
  fi
#endif
}

/* Acquire (registry_pg.c SQL_CLAIM; registry_etcd.c's claim transaction):
 * a row free past its quarantine whose mark is behind the clock, or within
 * the borrow; generation + 1; the generator starts above the row's mark and
 * the space's floor; the first mark must be written before any ID. */
inline acquire(h) {
  atomic {
    up[h] == 0 ->
    if
    :: skew[h] = 0
    :: skew[h] = SKEW
    fi;
    select(l : 0 .. NL - 1);
#ifdef MUT_FIELD
    if
    :: f = 0
    :: f = NF - 1
    fi;
#endif
    if
    :: k = 0
    :: k = NK - 1
    fi;
    r = RR(l, ROW(f, k));
    /* no row yet (SQL_CLAIM's INSERT: at the pool's floor, wherever the
     * clock is), or a row free past expiry and quarantine whose mark is
     * within the borrow of the clock (its ON CONFLICT ... WHERE) */
    t = (!rrow[r] -> floor[l] : rmark[r]);
    if
    :: !rrow[r] || (rfreeat[r] <= now && t <= CLOCK(h) + BORROW) ->
      space_join(l, ok);
      if
      :: ok ->
        rmark[r] = t;
        rrow[r] = 1;
        rholder[r] = h + 1;
        rfreeat[r] = now + TTL + QUAR;
        up[h] = 1; lay[h] = l; row[h] = ROW(f, k);
        tick[h] = MAX(t, sfloor[l]);
        ceil[h] = tick[h];
        vmark[h] = tick[h]
      :: else -> skip
      fi
    :: else -> skip
    fi;
    l = 0; f = 0; k = 0; r = 0; ok = 0; m = 0; hi = 0; t = 0; i = 0
  }
}

/* A holder that is down keeps nothing (its process is gone). */
inline down(h) {
  up[h] = 0; lay[h] = 0; row[h] = 0; tick[h] = 0; ceil[h] = 0;
  skew[h] = 0; vmark[h] = 0
}

/* One ID (snowflake.c: the generator's claim): the next tick after the
 * last, or the clock's if later; never above the ceiling. */
inline issue(h) {
  atomic {
    up[h] == 1 && MAX(tick[h] + 1, CLOCK(h)) <= ceil[h] &&
        MAX(tick[h] + 1, CLOCK(h)) <= TMAX ->
    t = MAX(tick[h] + 1, CLOCK(h));
    id = ID(lay[h], t, KEY(h));
    assert(unique && (id != watch));
    if
    :: watch == NONE -> watch = id
    :: true
    fi;
#ifndef ONLY_UNIQUE
    assert(increasing && (id > ID(lay[h], tick[h], KEY(h))));
    assert(fenced && (t <= vmark[h]));
    assert(durable && (t <= MAX(rmark[HR(h)], floor[lay[h]])));
#endif
    tick[h] = t;
    t = 0; id = 0
  }
}

/* The keeper's mark write (lease_keeper.c; SQL_MARK: greatest(mark, M)
 * WHERE generation AND holder): one step ahead of the clock, then the
 * ceiling.  A write that fails on the generation ends the binding. */
inline keep_mark(h) {
  atomic {
    up[h] == 1 && MAX(tick[h], CLOCK(h)) + 1 > ceil[h] && ceil[h] < TMAX ->
    t = MAX(tick[h], CLOCK(h)) + 1;
    t = (t > TMAX -> TMAX : t);
#ifdef MUT_UNCOND
    if
    :: CURRENT(h) -> vmark[h] = t
    :: else -> skip
    fi;
    rmark[HR(h)] = MAX(rmark[HR(h)], t);
    ceil[h] = t;
#else
    if
    :: CURRENT(h) ->
      rmark[HR(h)] = MAX(rmark[HR(h)], t);
      ceil[h] = t; vmark[h] = t
    :: else -> down(h) /* IDGEN_ELEASE: the binding ends */
    fi;
#endif
    t = 0
  }
}

/* Renewal (SQL_RENEW; etcd's keep-alive then a read of held/KEY). */
inline renew(h) {
  atomic {
    up[h] == 1 && now + TTL + QUAR > rfreeat[HR(h)] ->
#if defined(MUT_UNCOND) || defined(MUT_UNCOND_RENEW)
    rfreeat[HR(h)] = now + TTL + QUAR
#else
    if
    :: CURRENT(h) -> rfreeat[HR(h)] = now + TTL + QUAR
    :: else -> down(h)
    fi
#endif
  }
}

/* The watchdog, which drops the ceiling at the lease's deadline, is left
 * out: it only narrows what a holder issues, so without it every property
 * is checked as if each holder were paused past any deadline it has. */

/* Release (SQL_FINAL_MARK then SQL_RELEASE): the final mark is the last
 * tick used (it may be lower than the mark kept ahead). */
inline release(h) {
  atomic {
    up[h] == 1 ->
    if
    :: CURRENT(h) ->
      rmark[HR(h)] = tick[h];
      rholder[HR(h)] = 0;
      rfreeat[HR(h)] = now
    :: else -> skip
    fi;
    down(h)
  }
}

proctype holder(byte h) {
  byte l, f, k, r, m, hi, t, i;
  byte id;
  bit ok;
end:
  do
  :: acquire(h)
  :: issue(h)
  :: keep_mark(h)
  :: renew(h)
  :: release(h)
  /* crash: the row stays until it expires */
  :: atomic { up[h] == 1 -> down(h) }
  od
}

/* The operator: `idgen registry free` (SQL_FREE: generation + 1, holder =
 * NULL, quarantine from now), with --force on a held tuple; a row deleted
 * by hand (the trigger raises the pool's floor to its mark); a backup of
 * the whole registry, restored later. */
proctype operator() {
  byte l, r, i;
end:
  do
  :: atomic {
       OP_TURN;
       select(l : 0 .. NL - 1);
       if :: r = RR(l, 0) :: r = RR(l, NR - 1) fi;
       if
       :: rrow[r] ->
         /* held or not: with --force or without */
         rrow[r] = 1;
         rholder[r] = 0;
         rfreeat[r] = MAX(rfreeat[r], now + QUAR)
       :: else -> skip
       fi;
       l = 0; r = 0
     }
  :: atomic {
       OP_TURN;
       select(l : 0 .. NL - 1);
       if :: r = RR(l, 0) :: r = RR(l, NR - 1) fi;
       if
       :: rrow[r] ->
#ifndef MUT_NOFLOOR
         floor[l] = MAX(floor[l], rmark[r]);
#endif
         rrow[r] = 0; rholder[r] = 0; rfreeat[r] = 0; rmark[r] = 0
       :: else -> skip
       fi;
       l = 0; r = 0
     }
#ifdef RESTORE_ROW
  :: atomic {
       brr == 255 ->
       select(l : 0 .. NL - 1);
       if :: brr = RR(l, 0) :: brr = RR(l, NR - 1) fi;
       b1row = rrow[brr]; b1holder = rholder[brr];
       b1freeat = rfreeat[brr]; b1mark = rmark[brr];
       l = 0
     }
  :: atomic {
       brr != 255 && !put_back ->
       put_back = 1;
       rrow[brr] = b1row; rholder[brr] = b1holder;
       rfreeat[brr] = MAX(b1freeat, now); rmark[brr] = b1mark
     }
#endif
#ifdef RESTORE
  :: atomic {
       !have_backup ->
       have_backup = 1;
       for (i : 0 .. NL * NR - 1) {
         brow[i] = rrow[i]; bholder[i] = rholder[i];
         bfreeat[i] = rfreeat[i]; bmark[i] = rmark[i]
       }
       for (i : 0 .. NL - 1) { bfloor[i] = floor[i]; bsfloor[i] = sfloor[i]; bjoined[i] = joined[i] }
       bretired = retired; i = 0
     }
  :: atomic {
       have_backup && !restored ->
       restored = 1;
       for (i : 0 .. NL * NR - 1) {
         rrow[i] = brow[i]; rholder[i] = bholder[i];
         rfreeat[i] = bfreeat[i]; rmark[i] = bmark[i]
       }
       for (i : 0 .. NL - 1) { floor[i] = bfloor[i]; sfloor[i] = bsfloor[i]; joined[i] = bjoined[i] }
       retired = bretired; i = 0
     }
#endif
  od
}

active proctype clock() {
  byte i;
end:
  do
  :: atomic {
       now < TMAX -> now++;
       /* a time already past is as good as now: only comparisons with now
        * and later times are made, so the past ones are folded into one */
       for (i : 0 .. NL * NR - 1) { rfreeat[i] = MAX(rfreeat[i], now) }
       i = 0
     }
  od
}

init {
  atomic {
    byte i = 0;
    do
    :: i < NH -> run holder(i); i++
    :: else -> break
    od;
#if OPMAX > 0
    run operator()
#endif
  }
}
