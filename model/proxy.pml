/*
 * The lease service (docs/SERVE.md, "Leases for clients: `--leases` and
 * `idgen://`"): a daemon holds node tuples in its own registry on behalf of
 * remote clients, which mint IDs locally.  This is the contract the daemon
 * and the client are built to; docs/DESIGN.md §17 describes the model.
 *
 * Actors:
 *   the registry  the daemon's backend (postgres://, etcd://, as in
 *                 net.pml): a row per tuple with its holder (the fencing
 *                 token), its expiry by the registry's clock, its durable
 *                 mark; free again when released, or a quarantine RQUAR
 *                 after its expiry; renewals and marks conditional on the
 *                 holder (the generation).
 *   the daemon    serves NC clients' requests, one at a time, each in one
 *                 atomic step (a registry call and the answer); expires a
 *                 client by its own clock, keeps the tuple held for a
 *                 quarantine DQUAR and then releases it; may renew the
 *                 tuples it holds in the background; may be killed and
 *                 restarted (RESTARTS times), losing its memory and the
 *                 requests it had not answered; with EMPTY, restarted on an
 *                 empty registry (a documented exception, below).
 *   NC clients    acquire through the daemon, issue IDs while their lease
 *                 is valid by their own clock and under their mark, ask
 *                 the daemon for renewals and marks, release, crash, pause
 *                 (any interleaving is a pause, however long: the clock
 *                 goes on without them).
 *   NDH direct holders of the registry, as net.pml's (no watchdog).
 *   the clock     true time, 0..TMAX ticks: the registry's clock.
 *
 * Messages: an acquisition or a renewal is a request (creq) and an answer
 * (cans), one out per client at a time; between the send, the daemon's
 * step and the client taking the answer, any number of other steps and
 * ticks may pass (delays).  A request the daemon has not answered when it
 * is killed fails (the connection is reset); an answer already sent is
 * still delivered.  A crashed client's requests are gone (its holder and
 * secret die with it: the daemon would refuse them).  A mark request and a
 * release are one step each, the daemon's included: the mark asked is
 * computed from the client's state, which cannot pass its ceiling while it
 * waits, so asking later covers a delayed request, and a delayed answer is
 * a pause; a mark recorded whose answer is lost only raises the mark; a
 * release lost, or refused, is a crash.
 *
 * Clocks and rates (the assumptions, explicit):
 *   - true time is the registry's clock; IDs carry a wall clock that is
 *     true time or SKEW ticks behind, chosen at each acquisition;
 *   - monotonic clocks (the client's validity, the daemon's expiry) run at
 *     rates within a tenth of the registry's.  A client's lease is valid
 *     until its renewal's send time + TTL less a tenth by its own clock:
 *     with its clock slow by up to the tenth, that is at most send + TTL in
 *     true time, the worst case, which the model takes (CSLOW ticks more
 *     break the assumption: case rates.slow).  The daemon's clock may be
 *     fast by up to DFAST ticks over a lease and its quarantine: it may
 *     expire a client from its answer + TTL - DFAST, and release the tuple
 *     from its answer + TTL + DQUAR - DFAST (or any time later: it is slow
 *     to notice, or its clock is slow).
 *
 * Properties (asserted where an ID is issued):
 *   unique   no ID, (tuple, tick), is issued twice, by clients and direct
 *            holders together (checked on one watched ID, as net.pml);
 *   valid    a client issues only while the registry shows its grant
 *            (held by it via the daemon) unexpired by the registry's clock;
 *   durable  every ID's tick is at or below the mark the registry has
 *            recorded for its tuple (the next holder starts above it).
 *
 * Switches (spin -D...):
 *   MUT_NOCHECK      the client issues without checking its lease valid.
 *   MUT_GRANT_NOMARK the daemon's grant does not carry the recorded mark:
 *                    the client starts from 0, not above the mark.
 *   MUT_ASYNC_MARK   the daemon answers a mark request before recording
 *                    it (the write follows, or is lost with the daemon).
 *   MUT_LATE_RENEW   the daemon extends a client's expiry and answers its
 *                    renewal before renewing the registry (the registry's
 *                    renewal follows, or is lost with the daemon).
 *   MUT_NOQUAR       the daemon releases the tuple at the client's expiry,
 *                    without the quarantine.
 *   MUT_VALID_FROM_ANSWER  the client counts its lease valid from the
 *                    answer's arrival, not from the request's send time.
 *   EMPTY            the daemon may be restarted on an empty registry (its
 *                    rows and marks lost): a documented exception, as
 *                    net.pml's RESTORE; a counterexample is expected.
 *   CSLOW=N          a client's clock slower than the rate assumption
 *                    allows: its lease ends N ticks later than send + TTL.
 *   ONLY_UNIQUE      assert unique alone.
 */

#ifndef NC
#define NC 2       /* clients of the daemon */
#endif
#ifndef NDH
#define NDH 1      /* direct holders of the registry */
#endif
#ifndef NK
#define NK 1       /* tuples */
#endif
#ifndef TMAX
#define TMAX 5     /* the clock's last tick */
#endif
#ifndef TTL
#define TTL 2      /* the lease's TTL, in ticks (clients' and registry's) */
#endif
#ifndef RQUAR
#define RQUAR 1    /* the registry's quarantine after an expiry */
#endif
#ifndef DQUAR
#define DQUAR 1    /* the daemon's quarantine after a client's expiry */
#endif
#ifndef DFAST
#define DFAST 1    /* how far the daemon's clock may run ahead over a lease */
#endif
#ifndef CSLOW
#define CSLOW 0    /* 0: the rate assumption holds for the clients */
#endif
#ifndef RESTARTS
#define RESTARTS 1 /* the daemon's kills and restarts */
#endif
#define STEP 1     /* the mark step, in ticks */
#define SKEW 1     /* a wall clock is now or SKEW behind */
#define BORROW 1   /* a direct holder claims a mark within this of its clock */

#define ID(k, t) ((t) * NK + (k))
#define NONE 255
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define CLK(s) (now + (s) >= SKEW -> now + (s) - SKEW : 0)

/* ---- the registry, on its clock `now` ---- */
/* Holder: 0 none; 1 + c: client c via the daemon; 1 + NC + h: direct
 * holder h.  The holder stands for the fencing token (generation and
 * holder): a client or a direct holder holds one lease per incarnation and
 * its requests die with it, so its index names its current grant. */
byte rholder[NK];
byte rexp[NK];     /* expiry (registry clock); free RQUAR later */
byte rmark[NK];    /* durable mark (a tick) */
#define FREE(k) (rholder[k] == 0 || rexp[k] + RQUAR <= now)

byte now;
byte watch = NONE;
bit unique = 1, valid = 1, durable = 1;

/* ---- the clients ---- */
#define ACQ 1
#define RENEW 2
#define A_OK 1
#define A_LOST 2   /* 409 lease (or 503 pool_full for an acquisition) */
#define A_FAIL 3   /* no answer: the daemon was killed */
byte cup[NC];      /* 0 down, 1 holding */
byte ck[NC];       /* its tuple */
byte ctick[NC];    /* the last tick issued (start: the grant's mark) */
byte cceil[NC];    /* its ceiling: the last mark the daemon recorded */
byte cval[NC];     /* valid while now < cval (true time) */
byte cskew[NC];
byte creq[NC];     /* the request out */
byte creqt[NC];    /* its send time */
byte cans[NC];     /* the answer, when it came */
byte cansk[NC], cansm[NC]; /* an acquisition's tuple and mark */

/* ---- the daemon's memory (lost at a restart), by tuple ---- */
byte dc[NK];       /* 0: no grant; 1 + c */
bit dq[NK];        /* the client expired: the tuple in quarantine */
byte dexp[NK];     /* it may expire the client from this (true time) */
byte drel[NK];     /* it may release the tuple from this */
#ifdef MUT_ASYNC_MARK
byte dpend[NK];    /* a mark answered, not yet written */
#endif
#ifdef MUT_LATE_RENEW
bit dren[NK];      /* a renewal answered, not yet made in the registry */
#endif
byte restarts;

/* ---- the direct holders ---- */
byte hup[NDH + 1], hk[NDH + 1], htick[NDH + 1], hceil[NDH + 1], hskew[NDH + 1];
#define HME(h) (1 + NC + (h))

/* The properties, where any ID is issued. */
inline issued(k, t, c) {
  id = ID(k, t);
  assert(unique && (id != watch));
  if
  :: watch == NONE -> watch = id
  :: true
  fi;
#ifndef ONLY_UNIQUE
  assert(durable && (t <= rmark[k]));
  if
  :: c < NC -> assert(valid && (rholder[k] == 1 + c && rexp[k] > now))
  :: else -> skip
  fi;
#endif
  id = 0
}

/* The daemon forgets a grant; the daemon answers a grant or a renewal:
 * its deadlines, by its own clock, in true time. */
inline dforget(k) {
  dc[k] = 0; dq[k] = 0; dexp[k] = 0; drel[k] = 0
}
inline dlive(k) {
  dq[k] = 0;
  dexp[k] = now + TTL - DFAST;
  drel[k] = now + TTL + DQUAR - DFAST
}

inline cdown(c) {
  cup[c] = 0; ck[c] = 0; ctick[c] = 0; cceil[c] = 0; cval[c] = 0; cskew[c] = 0;
  creq[c] = 0; creqt[c] = 0; cans[c] = 0; cansk[c] = 0; cansm[c] = 0
}

#ifndef MUT_NOCHECK
#define CVALID(c) (now < cval[c] + CSLOW)
#else
#define CVALID(c) true
#endif
#ifndef MUT_VALID_FROM_ANSWER
#define VFROM(c) creqt[c]  /* valid from the request's send time */
#else
#define VFROM(c) now
#endif
#define CNEXT(c) MAX(ctick[c] + 1, CLK(cskew[c]))

proctype client(byte c) {
  byte k, t, id;
end:
  do
  /* acquire: POST /lease */
  :: atomic {
       cup[c] == 0 && creq[c] == 0 ->
       if
       :: cskew[c] = 0
       :: cskew[c] = SKEW
       fi;
       creq[c] = ACQ; creqt[c] = now
     }
  /* an ID: valid by its own clock, under its mark */
  :: atomic {
       cup[c] == 1 && CVALID(c) && CNEXT(c) <= cceil[c] && CNEXT(c) <= TMAX ->
       t = CNEXT(c);
       issued(ck[c], t, c);
       ctick[c] = t;
       t = 0
     }
  /* a mark ahead, before an ID beyond it: POST /lease/mark, the daemon's
   * step and its answer in one (see "Messages" above) */
  :: atomic {
       cup[c] == 1 && creq[c] == 0 && MAX(ctick[c], CLK(cskew[c])) + 1 > cceil[c] &&
           cceil[c] < TMAX ->
       t = MIN(MAX(ctick[c], CLK(cskew[c])) + STEP, TMAX);
       k = ck[c];
       if
       :: dc[k] == 1 + c && !dq[k] && rholder[k] == 1 + c ->
#ifndef MUT_ASYNC_MARK
         rmark[k] = MAX(rmark[k], t);
#else
         dpend[k] = MAX(dpend[k], t);
#endif
         cceil[c] = t
       :: dc[k] == 1 + c && !dq[k] && rholder[k] != 1 + c ->
         dforget(k); cdown(c)
       :: else -> cdown(c)
       fi;
       t = 0; k = 0
     }
  /* a renewal: POST /lease/renew */
  :: atomic {
       cup[c] == 1 && creq[c] == 0 && now + TTL > cval[c] ->
       creq[c] = RENEW; creqt[c] = now
     }
  /* release: POST /lease/release with the last tick used; the client is
   * gone (a release refused, or lost, is a crash) */
  :: atomic {
       cup[c] == 1 && creq[c] == 0 ->
       k = ck[c];
       if
       :: dc[k] == 1 + c && !dq[k] && rholder[k] == 1 + c ->
         rmark[k] = ctick[c]; rholder[k] = 0; rexp[k] = 0;
         dforget(k)
       :: else -> skip
       fi;
       cdown(c);
       k = 0
     }
  /* an answer */
  :: atomic {
       cans[c] != 0 ->
       if
       :: creq[c] == ACQ ->
         if
         :: cans[c] == A_OK ->
           cup[c] = 1; ck[c] = cansk[c];
           ctick[c] = cansm[c]; cceil[c] = cansm[c];
           cval[c] = VFROM(c) + TTL
         :: else -> skip
         fi
       :: creq[c] == RENEW ->
         if
         :: cans[c] == A_OK -> cval[c] = MAX(cval[c], VFROM(c) + TTL)
         :: cans[c] == A_LOST -> cdown(c)
         :: cans[c] == A_FAIL -> skip
         fi
       fi;
       if
       :: cup[c] == 0 -> cdown(c)
       :: else -> creq[c] = 0; creqt[c] = 0; cans[c] = 0; cansk[c] = 0; cansm[c] = 0
       fi
     }
  /* crash */
  :: atomic { cup[c] != 0 -> cdown(c) }
  od
}

/* The daemon's answer to client c's acquisition or renewal (one registry
 * call, then the answer).  The grant is named by the request's tuple and
 * holder. */

proctype dserve(byte c) {
  byte k;
end:
  do
  :: atomic {
       creq[c] != 0 && cans[c] == 0 ->
       k = ck[c];
       if
       :: creq[c] == ACQ ->
         if
         :: k = 0
         :: k = NK - 1
         fi;
         if
         :: FREE(k) ->
           rholder[k] = 1 + c; rexp[k] = now + TTL;
           dc[k] = 1 + c; dlive(k);
           cans[c] = A_OK; cansk[c] = k;
#ifndef MUT_GRANT_NOMARK
           cansm[c] = rmark[k]
#else
           cansm[c] = 0
#endif
         :: else -> cans[c] = A_LOST
         fi
       :: creq[c] == RENEW ->
         if
         :: dc[k] == 1 + c && !dq[k] ->
           if
           :: rholder[k] == 1 + c ->
#ifndef MUT_LATE_RENEW
             rexp[k] = now + TTL;
#else
             dren[k] = 1;
#endif
             dlive(k); cans[c] = A_OK
           :: else -> dforget(k); cans[c] = A_LOST
           fi
         :: dc[k] == 0 && rholder[k] == 1 + c && rexp[k] > now ->
           /* a restarted daemon takes the grant over (adopt) */
           rexp[k] = now + TTL;
           dc[k] = 1 + c; dlive(k); cans[c] = A_OK
         :: else -> cans[c] = A_LOST
         fi
       fi;
       k = 0
     }
  od
}

/* What the daemon does for tuple k on its own. */
proctype dtuple(byte k) {
end:
  do
  /* the client did not renew within its TTL, by the daemon's clock */
  :: atomic {
       dc[k] != 0 && !dq[k] && now >= dexp[k] ->
#ifndef MUT_NOQUAR
       dq[k] = 1
#else
       if
       :: rholder[k] == dc[k] -> rholder[k] = 0; rexp[k] = 0
       :: else -> skip
       fi;
       dforget(k)
#endif
     }
  /* the quarantine over: released (the mark stays as recorded) */
  :: atomic {
       dc[k] != 0 && dq[k] && now >= drel[k] ->
       if
       :: rholder[k] == dc[k] -> rholder[k] = 0; rexp[k] = 0
       :: else -> skip
       fi;
       dforget(k)
     }
  /* its registry lease renewed in the background while in quarantine (a
   * live grant's is renewed by the client's renewals) */
  :: atomic {
       dc[k] != 0 && dq[k] && now + TTL > rexp[k] ->
       if
       :: rholder[k] == dc[k] -> rexp[k] = now + TTL
       :: else -> dforget(k)
       fi
     }
#ifdef MUT_LATE_RENEW
  /* the renewal answered earlier, made in the registry now (conditional) */
  :: atomic {
       dren[k] ->
       if
       :: dc[k] != 0 && rholder[k] == dc[k] -> rexp[k] = now + TTL
       :: else -> skip
       fi;
       dren[k] = 0
     }
#endif
#ifdef MUT_ASYNC_MARK
  /* the mark answered earlier, written now (conditional) */
  :: atomic {
       dpend[k] != 0 ->
       if
       :: dc[k] != 0 && rholder[k] == dc[k] -> rmark[k] = MAX(rmark[k], dpend[k])
       :: else -> skip
       fi;
       dpend[k] = 0
     }
#endif
  od
}

/* The daemon killed and restarted: its memory is gone, the requests it had
 * not answered fail; with EMPTY, its registry may come back empty. */
active proctype dlife() {
  byte i;
end:
  do
  :: atomic {
       restarts < RESTARTS ->
       restarts++;
       for (i : 0 .. NK - 1) {
         dforget(i);
#ifdef MUT_ASYNC_MARK
         dpend[i] = 0;
#endif
#ifdef MUT_LATE_RENEW
         dren[i] = 0;
#endif
       }
       for (i : 0 .. NC - 1) {
         if
         :: creq[i] != 0 && cans[i] == 0 -> cans[i] = A_FAIL
         :: else -> skip
         fi
       }
#ifdef EMPTY
       if
       :: for (i : 0 .. NK - 1) { rholder[i] = 0; rexp[i] = 0; rmark[i] = 0 }
       :: true
       fi;
#endif
       i = 0
     }
  od
}

/* A direct holder of the registry (net.pml's, one layout, no operator). */
inline hdown(h) {
  hup[h] = 0; hk[h] = 0; htick[h] = 0; hceil[h] = 0; hskew[h] = 0
}
#define HNEXT(h) MAX(htick[h] + 1, CLK(hskew[h]))

proctype direct(byte h) {
  byte k, t, id;
end:
  do
  :: atomic {
       hup[h] == 0 ->
       if
       :: hskew[h] = 0
       :: hskew[h] = SKEW
       fi;
       if
       :: k = 0
       :: k = NK - 1
       fi;
       if
       :: FREE(k) && rmark[k] <= CLK(hskew[h]) + BORROW ->
         rholder[k] = HME(h); rexp[k] = now + TTL;
         hup[h] = 1; hk[h] = k; htick[h] = rmark[k]; hceil[h] = rmark[k]
       :: else -> hskew[h] = 0
       fi;
       k = 0
     }
  :: atomic {
       hup[h] == 1 && HNEXT(h) <= hceil[h] && HNEXT(h) <= TMAX ->
       t = HNEXT(h);
       issued(hk[h], t, NC);
       htick[h] = t;
       t = 0
     }
  :: atomic {
       hup[h] == 1 && MAX(htick[h], CLK(hskew[h])) + 1 > hceil[h] && hceil[h] < TMAX ->
       t = MIN(MAX(htick[h], CLK(hskew[h])) + STEP, TMAX);
       if
       :: rholder[hk[h]] == HME(h) -> rmark[hk[h]] = MAX(rmark[hk[h]], t); hceil[h] = t
       :: else -> hdown(h)
       fi;
       t = 0
     }
  :: atomic {
       hup[h] == 1 && now + TTL > rexp[hk[h]] ->
       if
       :: rholder[hk[h]] == HME(h) -> rexp[hk[h]] = now + TTL
       :: else -> hdown(h)
       fi
     }
  :: atomic {
       hup[h] == 1 ->
       if
       :: rholder[hk[h]] == HME(h) ->
         rmark[hk[h]] = htick[h]; rholder[hk[h]] = 0; rexp[hk[h]] = 0
       :: else -> skip
       fi;
       hdown(h)
     }
  :: atomic { hup[h] == 1 -> hdown(h) }
  od
}

/* The clock.  Times already past are folded: each is only compared with
 * now and later times, so the past ones that compare alike are one. */
active proctype clock() {
  byte i;
end:
  do
  :: atomic {
       now < TMAX -> now++;
       for (i : 0 .. NK - 1) {
         if
         :: now >= RQUAR && rexp[i] < now - RQUAR -> rexp[i] = now - RQUAR
         :: else -> skip
         fi;
         if
         :: dc[i] != 0 -> dexp[i] = MAX(dexp[i], now); drel[i] = MAX(drel[i], now)
         :: else -> skip
         fi
       }
       for (i : 0 .. NC - 1) {
         if
         :: cup[i] == 1 && now >= CSLOW && cval[i] < now - CSLOW -> cval[i] = now - CSLOW
         :: else -> skip
         fi;
         if /* a send time, only ever added TTL to */
         :: (creq[i] == ACQ || creq[i] == RENEW) && now >= TTL + CSLOW &&
               creqt[i] < now - TTL - CSLOW -> creqt[i] = now - TTL - CSLOW
         :: else -> skip
         fi
       }
       i = 0
     }
  od
}

init {
  atomic {
    byte i = 0;
    do
    :: i < NC -> run client(i); run dserve(i); i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < NK -> run dtuple(i); i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < NDH -> run direct(i); i++
    :: else -> break
    od;
    i = 0
  }
}
