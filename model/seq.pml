/*
 * Sequences (SPEC §10; docs/DESIGN.md §17, "The model"): a counter
 * record per sequence in a registry, holders that claim ranges of it with
 * conditional writes and issue numbers from memory.
 *
 * The record: next (the counter), gen (the last generation given), one
 * entry per registered holder {gen, expires, claimed, issued}, the totals
 * claimed, issued, given (back) and lost, and for a strict sequence its
 * owner (a generation) and the owner's expiry.  Every change is a
 * conditional write (load with a version, compute, store only if the
 * version is unchanged, else load again): one atomic step on the whole
 * record here.  Every transition reaps first: an entry whose expiry is
 * behind the registry's clock is removed, and what it claimed and did not
 * report issued is lost.
 *
 * Actors: NH holders (a process's open sequence), each of which registers,
 * claims ranges of 1..SMAX numbers (at most two in hand: the current one
 * and one claimed ahead), issues from them without the registry, renews,
 * closes (giving back the rest of its last ranges when nobody claimed
 * after them), crashes and pauses (any interleaving is a pause, however
 * long: the clock goes on without it); the registry's clock, 0..TMAX.
 * A holder fenced (its entry reaped) drops the ranges it has and registers
 * again, reporting late what it issued under the old generation.
 *
 * Properties:
 *   unique      S1: no number is issued twice (a bitmap of the numbers);
 *   increasing  S2: a holder's numbers strictly increase;
 *   ordered     S2, strict sequences: numbers strictly increase across
 *               holders, in the order they are issued;
 *   counted     S3: when every holder is down, the record's claimed equals
 *               the numbers issued + given back + lost + still in the
 *               hands of live entries (crashed holders not yet reaped),
 *               counting late reports not yet made as issued, not lost.
 *
 * Switches (spin -D...):
 *   STRICT       a strict sequence: one owner at a time; another holder's
 *                registration is refused until the owner's expiry and a
 *                quarantine QUAR have passed; a claim or renewal checks
 *                owner == gen; the owner issues only while it can show its
 *                entry valid by its own clock (from the send of its last
 *                successful claim or renewal, TTL less MARGIN, its clock
 *                slow by up to DRIFT over a TTL: the worst case is taken).
 *   MUT_NOGEN    claims and renewals without the generation check (a
 *                reaped holder, or one that is no longer the owner, claims).
 *   MUT_GIVEBACK a close gives back the rest of its last range without
 *                checking that nobody claimed after it.
 *   MUT_NOVALID  the strict owner issues without checking its validity.
 *   MUT_NOOWNER  strict: a registration is not refused while the owner's
 *                expiry and quarantine have not passed (the new holder
 *                becomes the owner at once).
 *   ONLY_UNIQUE  assert unique alone: a mutation then has to be shown to
 *                repeat a number, not only to break the rule that
 *                prevents it.
 *   NO_COUNTED   leave counted out (to show what else a mutation breaks).
 *   CRASH_ANY    a holder may crash with numbers issued and not reported:
 *                the record counts them in hand, then lost once the entry
 *                is reaped (it cannot know them issued), so counted, which
 *                compares with what was really issued, fails: the
 *                documented limit of the accounting.
 * Each MUT_ is one rule of the design removed; each must give a
 * counterexample (model/check.sh).
 */

#ifndef NH
#define NH 2       /* holders */
#endif
#ifndef NMAX
#define NMAX 8     /* numbers 0..NMAX-1: the counter stops at NMAX */
#endif
#ifndef TMAX
#define TMAX 4     /* the registry clock's last tick */
#endif
#ifndef TTL
#define TTL 1      /* an entry's TTL, in ticks */
#endif
#ifndef QUAR
#define QUAR 1     /* strict: the quarantine after the owner's expiry */
#endif
#ifndef MARGIN
#define MARGIN 1   /* strict: the owner's margin on its validity */
#endif
#ifndef DRIFT
#define DRIFT 1    /* strict: how slow a holder's clock may run over a TTL */
#endif
#ifndef GMAX
#define GMAX (NH + 2) /* registrations, at most (the model's bound) */
#endif
#ifndef SMAX
#define SMAX 2     /* the largest step */
#endif

#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define NONE 255

/* ---- the record, on the registry's clock `now` ---- */
byte next;         /* the counter */
byte gen;          /* the last generation given */
/* Entry slot h is holder h's (a holder registers only when its previous
 * incarnation's entry is gone, so one slot each is enough). */
byte egen[NH];     /* 0: no entry */
byte eexp[NH];     /* expires at (reaped once now is past it) */
byte ecl[NH];      /* claimed by it */
byte eis[NH];      /* reported issued by it */
byte claimed, issued, given;
short lost;
#ifdef STRICT
byte owner;        /* the owner's generation; 0: none */
byte oexp;         /* the owner's expiry, kept after its entry is reaped */
#endif

byte now;

/* ---- the holders (their memory) ---- */
bit up[NH];
byte hgen[NH];     /* its generation */
byte cn[NH], chi[NH]; /* the current range: next to issue, end (0: none) */
byte pn[NH], phi[NH]; /* the range claimed ahead (0: none) */
byte unrep[NH];    /* issued since its last report */
byte late[NH];     /* issued under a reaped generation: reported at its
                    * next registration */
byte last[NH];     /* its last number + 1 (0: none yet) */
#ifdef STRICT
byte sent[NH];     /* send time of its last successful claim or renewal */
#endif

/* ---- ghosts ---- */
byte used;         /* the numbers issued: a bitmap */
byte nissued;      /* how many */
#ifdef STRICT
byte glast;        /* the last number issued + 1, by anyone (0: none) */
#endif
bit unique = 1, increasing = 1, ordered = 1, counted = 1;

/* Reap: every entry whose expiry has passed is removed; what it claimed
 * and did not report is lost. */
inline reap() {
  i = 0;
  do
  :: i < NH ->
    if
    :: egen[i] != 0 && eexp[i] < now ->
      lost = lost + ecl[i] - eis[i];
      egen[i] = 0; eexp[i] = 0; ecl[i] = 0; eis[i] = 0
    :: else -> skip
    fi;
    i++
  :: else -> break
  od;
  i = 0
}

/* The fencing check of a claim or a renewal: the holder's entry, with its
 * generation, is still there; strict: it is still the owner. */
#ifdef MUT_NOGEN
#define FENCED(h) false
#elif defined(STRICT)
#define FENCED(h) (egen[h] != hgen[h] || owner != hgen[h])
#else
#define FENCED(h) (egen[h] != hgen[h])
#endif

/* A report folded into a claim or a renewal (the entry is there). */
inline report(h) {
  if
  :: egen[h] == hgen[h] -> eis[h] = eis[h] + unrep[h]
  :: else -> skip
  fi;
  issued = issued + unrep[h];
  unrep[h] = 0
}

/* A late report: numbers issued under a reaped generation, counted lost
 * when it was reaped, are issued after all. */
inline late_report(x) {
  lost = lost - x;
  issued = issued + x
}

/* S3, when every holder is down. */
inline check_end() {
  if
  :: up[0] == 0 && up[NH - 1] == 0 && (NH < 3 || up[1] == 0) ->
    x = 0; i = 0;
    do
    :: i < NH -> x = x + late[i]; i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < NH ->
      if
      :: egen[i] != 0 -> x = x - ecl[i] + eis[i]
      :: else -> skip
      fi;
      i++
    :: else -> break
    od;
    /* claimed = (issued - late) + given + lost + in hand */
#if !defined(ONLY_UNIQUE) && !defined(NO_COUNTED)
    assert(counted && (claimed + x == nissued + given + lost));
#endif
    x = 0; i = 0
  :: else -> skip
  fi
}

/* A holder forgets everything but its late report (a fenced holder) or
 * everything (a close, a crash). */
inline drop(h) {
  up[h] = 0; hgen[h] = 0; cn[h] = 0; chi[h] = 0; pn[h] = 0; phi[h] = 0;
#ifdef STRICT
  sent[h] = 0;
#endif
  unrep[h] = 0
}

/* Fenced (IDGEN_ELEASE on a claim or a renewal): the ranges in hand are
 * dropped (counted lost at the reap); what was issued under the old
 * generation and not reported is reported at the next registration. */
inline fenced(h) {
  late[h] = late[h] + unrep[h];
  drop(h);
  check_end()
}

/* register: a new generation and an entry; strict: refused while the
 * owner's expiry and quarantine have not passed (the reap is made either
 * way: it changes nothing any later step would not change). */
#if defined(STRICT) && !defined(MUT_NOOWNER)
#define REFUSED (owner != 0 && oexp + QUAR >= now)
#else
#define REFUSED false
#endif
inline register(h) {
  atomic {
    up[h] == 0 && egen[h] == 0 && gen < GMAX ->
    reap();
    if
    :: REFUSED -> skip
    :: else ->
      gen++;
      egen[h] = gen; eexp[h] = now + TTL;
      up[h] = 1; hgen[h] = gen;
      late_report(late[h]);
      late[h] = 0;
#ifdef STRICT
      owner = gen; oexp = eexp[h];
      sent[h] = now;
#endif
      skip
    fi
  }
}

/* claim(step): reap; fenced, or lo = next, next += step; the holder keeps
 * the range (as its current one, or ahead of it). */
inline claim(h) {
  atomic {
    up[h] == 1 && phi[h] == 0 && next < NMAX ->
    reap();
    if
    :: FENCED(h) -> fenced(h)
    :: else ->
      if
      :: s = 1
      :: SMAX > 1 && next + 2 <= NMAX -> s = 2
      fi;
      report(h);
      if
      :: chi[h] == 0 -> cn[h] = next; chi[h] = next + s
      :: else -> pn[h] = next; phi[h] = next + s
      fi;
      next = next + s;
      claimed = claimed + s;
      if
      :: egen[h] == hgen[h] ->
        ecl[h] = ecl[h] + s;
        eexp[h] = now + TTL
      :: else -> skip
      fi;
#ifdef STRICT
      if
      :: owner == hgen[h] -> oexp = now + TTL
      :: else -> skip
      fi;
      sent[h] = now;
#endif
      s = 0
    fi
  }
}

inline renew(h) {
  atomic {
    up[h] == 1 ->
    reap();
    if
    :: FENCED(h) -> fenced(h)
    :: else ->
      report(h);
      if
      :: egen[h] == hgen[h] -> eexp[h] = now + TTL
      :: else -> skip
      fi;
#ifdef STRICT
      if
      :: owner == hgen[h] -> oexp = now + TTL
      :: else -> skip
      fi;
      sent[h] = now;
#endif
      skip
    fi
  }
}

/* Strict: the owner issues only while its entry is valid by its own clock
 * (sent + TTL - MARGIN), which may run slow by DRIFT over a TTL: the worst
 * case.  An earlier end by a fast clock issues less. */
#if defined(STRICT) && !defined(MUT_NOVALID)
#define VALID(h) (now + MARGIN <= sent[h] + TTL + DRIFT)
#else
#define VALID(h) true
#endif

/* One number from the current range, without the registry. */
inline issue(h) {
  atomic {
    up[h] == 1 && chi[h] != 0 && VALID(h) ->
    n = cn[h];
    assert(unique && (((used >> n) & 1) == 0));
    used = used | (1 << n);
    nissued++;
#ifndef ONLY_UNIQUE
    assert(increasing && (n + 1 > last[h]));
#endif
    last[h] = n + 1;
#if defined(STRICT) && !defined(ONLY_UNIQUE)
    assert(ordered && (n + 1 > glast));
#endif
#ifdef STRICT
    glast = n + 1;
#endif
    unrep[h]++;
    cn[h]++;
    if
    :: cn[h] == chi[h] ->
      cn[h] = pn[h]; chi[h] = phi[h]; pn[h] = 0; phi[h] = 0
    :: else -> skip
    fi;
    n = 0
  }
}

/* close: reap; the report; the rest of the ranges in hand is given back
 * from the top while the counter still ends where it ends (nobody claimed
 * after), the other rest is lost; the entry is removed.  A holder already
 * reaped gives nothing back: its late report alone. */
inline close(h) {
  atomic {
    up[h] == 1 ->
    reap();
    if
    :: egen[h] == hgen[h] ->
      report(h);
      /* the range ahead, then the current one */
#ifdef MUT_GIVEBACK
      if
      :: phi[h] != 0 ->
        given = given + phi[h] - pn[h]; next = pn[h]; phi[h] = 0; pn[h] = 0
      :: phi[h] == 0 && chi[h] != 0 ->
        given = given + chi[h] - cn[h]; next = cn[h]; chi[h] = 0; cn[h] = 0
      :: else -> skip
      fi;
#endif
      if
      :: phi[h] != 0 && next == phi[h] ->
        given = given + phi[h] - pn[h]; next = pn[h]; phi[h] = 0; pn[h] = 0
      :: else -> skip
      fi;
      if
      :: phi[h] == 0 && chi[h] != 0 && next == chi[h] ->
        given = given + chi[h] - cn[h]; next = cn[h]; chi[h] = 0; cn[h] = 0
      :: else -> skip
      fi;
      lost = lost + (phi[h] - pn[h]) + (chi[h] - cn[h]);
      egen[h] = 0; eexp[h] = 0; ecl[h] = 0; eis[h] = 0;
#ifdef STRICT
      if
      :: owner == hgen[h] -> owner = 0; oexp = 0
      :: else -> skip
      fi;
#endif
      skip
    :: else ->
      late_report(unrep[h] + late[h]);
      late[h] = 0
    fi;
    drop(h);
    last[h] = 0;
    check_end()
  }
}

/* A crash between a claim and its use: the claim landed (and with it the
 * report of everything issued before), nothing of it was issued.  The
 * entry stays until it is reaped. */
#ifdef CRASH_ANY
#define CRASHES(h) true
#else
#define CRASHES(h) (unrep[h] == 0)
#endif
inline crash(h) {
  atomic {
    up[h] == 1 && CRASHES(h) ->
    drop(h);
    last[h] = 0;
    check_end()
  }
}

proctype holder(byte h) {
  byte i, s, n;
  short x;
end:
  do
  :: register(h)
  :: claim(h)
  :: issue(h)
  :: renew(h)
  :: close(h)
  :: crash(h)
  od
}

init {
  byte k;
  atomic {
    do
    :: k < NH -> run holder(k); k++
    :: else -> break
    od;
    k = 0
  }
end:
  do
  :: atomic {
       now < TMAX -> now++;
       /* a time already past is as good as now: only comparisons with now
        * and later times are made, so the past ones fold into one */
       for (k : 0 .. NH - 1) {
         if
         :: egen[k] != 0 && eexp[k] < now -> eexp[k] = now - 1
         :: else -> skip
         fi
       }
#ifdef STRICT
       if
       :: owner != 0 && oexp + QUAR < now -> oexp = now - QUAR - 1
       :: else -> skip
       fi;
       for (k : 0 .. NH - 1) {
         if
         :: up[k] && now + MARGIN > sent[k] + TTL + DRIFT && now + MARGIN >= TTL + DRIFT + 1 ->
           sent[k] = now + MARGIN - TTL - DRIFT - 1
         :: else -> skip
         fi
       }
#endif
       k = 0
     }
  od
}
