/*
 * The waiting queue on the masters (issue 27), for Spin.
 *
 * README.md beside this file says which part stands for which part of the
 * code (acquire.lua, release.lua and leave.lua in redlock/internal/scripts,
 * the place and the minority rule of redlock/queue.go and trylock.go), what
 * is left out and why, and how the checks are run. quorumlock.pml checks the lock's safety with the queue's refusals
 * (its switch QUEUE); this model checks the queue itself: the order it
 * grants in, and that it gets the key to some waiter once the world is
 * stable.
 *
 * A waiter is one Lock call that waits. Its ticket is its number: waiter 0
 * has the smallest, and the ticket is the same on every master. Each master
 * keeps, for the one key, its holder and its queue: the waiters registered
 * there, each with a lease. One process runs every event atomically:
 *
 *   a waiter's request arrives at a master, and the master runs the acquire
 *            script: expired entries are purged; a free key is granted only
 *            to the queue's head (or to anyone when the queue is empty), and
 *            the waiter leaves the queue there; a waiter refused is
 *            registered, and its lease renewed, when it sent its id;
 *   a waiter decides its try: a quorum of votes holds the key, anything
 *            less rolls back the masters that granted, and the roll-back
 *            puts the waiter back in their queues; the minority rule
 *            decides whether it sends its id in its next try;
 *   a round ends: time moves on by one heartbeat (L/3), and leases that
 *            were not renewed for L pass.
 *
 * What is checked is the time after the world became stable: no request is
 * lost any more, no master restarts, no waiter dies, every waiter reaches
 * the same masters from round to round, and the holder is gone (no master
 * holds the key). The search starts from every state the masters' queues
 * and the waiters can be in at that moment: any waiters registered on any
 * masters (an enqueue lost on some, a master restarted empty, entries of
 * waiters that died or gave up and whose leases have not passed), any
 * waiters dead, any waiters that sent their id in their last try or not,
 * and, with the scenario switches, any partition of the waiters from the
 * masters and a master that abstains (in quarantine or distrusted: it runs
 * the scripts, and its vote does not count). Every lease left from before
 * may pass at any moment up to L; a lease renewed since passes L after it.
 *
 * Time is rounds: every live waiter tries once a round (its heartbeat,
 * every L/3), and the requests of all waiters in a round arrive in any
 * order, interleaved with the others' decisions. Time is read lazily: a
 * lease that may have passed is found passed, or not, where a script reads
 * the queue, and must have passed once the round in which its L ends is
 * over.
 *
 * Every size is a #define, and every safeguard a switch the verifier reads
 * when it starts (QL_<name>), as in quorumlock.pml.
 */

/* ---------------------------------------------------------------- sizes */

#ifndef NM
#define NM 3            /* masters */
#endif
#ifndef NW
#define NW 3            /* waiters: 2 or 3 */
#endif

#define Q (NM/2+1)
#define MB(m) (1 << (m))
#define WB(w) (1 << (w))
#define ALLM ((1 << NM) - 1)
#define ALLW ((1 << NW) - 1)
#define BELOW(w) (WB(w) - 1)    /* waiters with smaller tickets than w */

/* ------------------------------------------------------ what runs, and
 * the safeguards: as the code has them, with the minority rule counting the
 * answers of masters whose votes count (MINORITY 2: see the finding in
 * README.md), unless a control or a finding changes one. */

#define SWITCH hidden byte

/* the scenario */
SWITCH NWAIT = NW;      /* waiters in the run (2 or 3): the others never were */
SWITCH PART = 0;        /* 1: each live waiter reaches any set of masters (a stable
                           partition, or a master down); 2: every master, or one
                           (a waiter cut off in a minority); 0: every master */
SWITCH NAB = 0;         /* 1: one master abstains (in restart quarantine, or
                           distrusted: a replica, one that may evict) */
SWITCH LEASE = 3;       /* the lease L, in heartbeats (a waiter retries every L/3),
                           at most 4 */
SWITCH BOUND = 4;       /* property 7: some waiter holds the key within this many
                           rounds; 0: rounds go on without a bound, for a search
                           for a cycle of rounds in which no waiter ever holds it */
SWITCH CHECK = 96;      /* asserted properties: bit n-1 for property n (6 and 7) */

/* the safeguards */
SWITCH HEAD = 1;        /* a free key is granted only to the head of the master's
                           queue, or to anyone when it is empty */
SWITCH EXPIRY = 1;      /* a lease that is not renewed passes, and its entry goes */
SWITCH MINORITY = 2;    /* a waiter sends its id (registers, renews) only while its
                           last try had, from a quorum of masters, 2: answers of
                           masters whose votes count, 1: any answers (as
                           Client.Lock counts them); 0: always */
SWITCH KEEP = 1;        /* a grant takes the waiter out of the queue, and the
                           roll-back of a try that sent its id puts it back at its
                           ticket where the try took the key; 0: nothing puts it
                           back (the design as first written) */

c_decl {
	extern char *getenv(const char *);
	extern int atoi(const char *);
	/* envOr is the environment variable name as a number, or def. */
	static unsigned char envOr(const char *name, unsigned char def) {
		const char *v = getenv(name);
		return v != 0 && *v != 0 ? (unsigned char) atoi(v) : def;
	}
}

#define READ_SWITCHES c_code { \
	NWAIT = envOr("QL_NWAIT", NWAIT); \
	PART = envOr("QL_PART", PART); \
	NAB = envOr("QL_NAB", NAB); \
	LEASE = envOr("QL_LEASE", LEASE); \
	BOUND = envOr("QL_BOUND", BOUND); \
	CHECK = envOr("QL_CHECK", CHECK); \
	HEAD = envOr("QL_HEAD", HEAD); \
	EXPIRY = envOr("QL_EXPIRY", EXPIRY); \
	MINORITY = envOr("QL_MINORITY", MINORITY); \
	KEEP = envOr("QL_KEEP", KEEP); \
	}

/* ------------------------------------------------------ iteration macros */

#if NM == 3
#define FORM(F) F(0) F(1) F(2)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2)
#else
#error NM must be 3
#endif

#if NW == 2
#define FORW(F) F(0) F(1)
#define FORW2(F,a) F(a,0) F(a,1)
#elif NW == 3
#define FORW(F) F(0) F(1) F(2)
#define FORW2(F,a) F(a,0) F(a,1) F(a,2)
#else
#error NW must be 2 or 3
#endif

/* ------------------------------------------------------------- state */

/* masters: per master, sets of waiters are bit sets (bit w) */
byte h[NM];             /* the key's holder: waiter + 1, 0 if free */
byte q[NM];             /* the queue: waiters registered here, leases not passed */
byte ag[NM];            /* each entry's age: rounds ended since its lease was
                           last renewed, 2 bits per waiter */
byte old[NM];           /* entries not renewed since the world became stable: their
                           lease may pass at any moment */
byte rn[NM];            /* entries renewed in this round */
byte rch[NM];           /* waiters that reach this master */
bit ab[NM];             /* abstains: it runs the scripts, its votes do not count */
byte pend[NM];          /* waiters whose request of this round has not arrived */
byte gm[NM];            /* waiters it granted in this round */
byte am[NM];            /* waiters it answered in this round */

/* waiters */
byte lv;                /* live waiters: still waiting, and trying */
byte rg;                /* waiters that send their id in their next try */
byte out;               /* waiters whose try of this round is not decided */
byte rc;                /* rounds begun since the world became stable (with BOUND 0,
                           1 once one has begun) */
bit gr;                 /* some waiter holds the key */

/* ghost: property 6 */
byte ob[NW];            /* live waiters with smaller tickets registered on every
                           voting master that granted this try so far */

/* For the trail only: the masters' names before symmetry renamed them, and
 * the rounds begun. */
hidden byte mname[NM];
hidden byte rno;
#define MN(m) mname[m]

#define AGE(m, w) ((ag[m] >> (2*(w))) & 3)
#define SETAGE(m, w, a) ag[m] = (ag[m] & ~(3 << (2*(w)))) | ((a) << (2*(w)))
/* w is the head of the queue x */
#define ISHEAD(x, w) (((x) & WB(w)) && !((x) & BELOW(w)))

/* -------------------------------------------------------- properties */

#define ON(n) ((CHECK >> ((n)-1)) & 1)
#define PROP(n, c) \
	if \
	:: ON(n) && !(c) -> printf("PROPERTY %d VIOLATED\n", n); assert(c) \
	:: else -> skip \
	fi

/* events */
#define EV_DELIVER 1
#define EV_DECIDE  2
#define EV_ROUND   3

#define SEL_DELIVER(m, w) :: pend[m] & WB(w) -> ev = EV_DELIVER; ew = w; em = m
#define SEL_DELIVERM(m) FORW2(SEL_DELIVER, m)
#define SEL_DECIDE(w) :: (out & WB(w)) && !PENDING(w) -> ev = EV_DECIDE; ew = w

/* ----------------------------------------------------------- scripts */

/* The lease of w's entry on m may have passed: one left from before the
 * world became stable, at any moment up to L; one renewed since, in the
 * round in which its L ends. Read lazily, where a script reads the queue. */
#define LAPSE(m, w) \
	if \
	:: EXPIRY && (q[m] & WB(w)) && !(rn[m] & WB(w)) && \
		((old[m] & WB(w)) || AGE(m, w) == LEASE - 1) -> d_step { \
		q[m] = q[m] & ~WB(w); old[m] = old[m] & ~WB(w); SETAGE(m, w, 0); \
		printf("m%d: the lease of w%d has passed\n", MN(m), w) } \
	:: true -> skip \
	fi;

/* w's entry on m is renewed (or made): lease L from now. */
inline renew(m, w) {
	q[m] = q[m] | WB(w); rn[m] = rn[m] | WB(w); old[m] = old[m] & ~WB(w); SETAGE(m, w, 0)
}

/* Waiters registered on m, for the trail. */
#define SAYW(m, w) \
	if \
	:: q[m] & WB(w) -> printf(" w%d", w) \
	:: else -> skip \
	fi;
inline sayQueue(m) {
	printf("[");
	FORW2(SAYW, m)
	printf(" ]")
}

/* The acquire script on master m, for waiter w: purge, head, grant or
 * register. A waiter whose last try did not reach a quorum sends no id
 * (w = "" in the script): it is granted only where the queue is empty, and
 * neither registers nor renews. */
inline acquire(w, m) {
	FORW2(LAPSE, m)
	d_step {
		pend[m] = pend[m] & ~WB(w); am[m] = am[m] | WB(w);
		if
		:: h[m] == 0 && (!HEAD || q[m] == 0 || ((rg & WB(w)) && ISHEAD(q[m], w))) ->
			if
			:: !ab[m] -> ob[w] = ob[w] & q[m]
			:: else -> skip
			fi;
			h[m] = w + 1; gm[m] = gm[m] | WB(w);
			printf("m%d: acquire w%d", MN(m), w);
			if
			:: !(rg & WB(w)) -> printf(" (no id)")
			:: else -> skip
			fi;
			printf(": granted, queue "); sayQueue(m);
			if
			:: q[m] & WB(w) ->
				q[m] = q[m] & ~WB(w); old[m] = old[m] & ~WB(w); SETAGE(m, w, 0);
				printf(", w%d leaves it", w)
			:: else -> skip
			fi;
			printf("\n")
		:: else ->
			printf("m%d: acquire w%d", MN(m), w);
			if
			:: !(rg & WB(w)) -> printf(" (no id)")
			:: else -> skip
			fi;
			if
			:: h[m] != 0 -> printf(": refused, held by w%d, queue ", h[m] - 1)
			:: else -> printf(": refused, queue ")
			fi;
			sayQueue(m);
			if
			:: rg & WB(w) -> renew(m, w); printf(", w%d registered\n", w)
			:: else -> printf("\n")
			fi
		fi
	}
}

/* ------------------------------------------------------------ waiters */

#define CNT(x, m) + (((x) >> (m)) & 1)
#define GOTM(w, m) + ((gm[m] >> (w)) & 1)
#define VOTEM(w, m) + (((gm[m] >> (w)) & 1) && !ab[m])
#define ANSM(w, m) + ((am[m] >> (w)) & 1)
#define VANSM(w, m) + (((am[m] >> (w)) & 1) && !ab[m])
#define VOTES(w) (0 FORM2(VOTEM, w))
#define ANSWERS(w) (0 FORM2(ANSM, w))
#define VANSWERS(w) (0 FORM2(VANSM, w))
#define PENDM(w, m) || ((pend[m] >> (w)) & 1)
#define PENDING(w) (0 FORM2(PENDM, w))
#define ROLLM(w, m) \
	if \
	:: (gm[m] & WB(w)) && KEEP && (rg & WB(w)) -> \
		h[m] = 0; renew(m, w); \
		printf("m%d: roll-back of w%d: freed, w%d back in the queue\n", MN(m), w, w) \
	:: (gm[m] & WB(w)) && !(KEEP && (rg & WB(w))) -> \
		h[m] = 0; printf("m%d: roll-back of w%d: freed\n", MN(m), w) \
	:: else -> skip \
	fi; \
	gm[m] = gm[m] & ~WB(w); am[m] = am[m] & ~WB(w);

/* Waiter w has every answer it will get in this round: a quorum of votes
 * holds the key; anything less rolls back where it was granted. Then the
 * minority rule: w sends its id in its next try only while this one had
 * answers (votes, with MINORITY 2) from a quorum. */
inline decide(w) {
	d_step {
		out = out & ~WB(w);
		if
		:: VOTES(w) >= Q ->
			printf("w%d: holds the key: %d votes\n", w, VOTES(w));
			PROP(6, ob[w] == 0);
			gr = 1
		:: else ->
			printf("w%d: %d votes, %d answers: rolls back\n", w, VOTES(w), ANSWERS(w));
			x = (MINORITY == 0 || (MINORITY == 1 && ANSWERS(w) >= Q) ||
				(MINORITY == 2 && VANSWERS(w) >= Q));
			FORM2(ROLLM, w)
			if
			:: x -> rg = rg | WB(w)
			:: else ->
				if
				:: rg & WB(w) -> printf("w%d: stops sending its id: its try reached no quorum\n", w)
				:: else -> skip
				fi;
				rg = rg & ~WB(w)
			fi;
			x = 0
		fi
	}
}

/* ------------------------------------------------------------- rounds */

/* At the end of a round, an entry not renewed in it ages by one; one whose
 * L has ended goes. */
#define AGEONE(m, w) \
	if \
	:: (q[m] & WB(w)) && !(rn[m] & WB(w)) && EXPIRY -> \
		if \
		:: AGE(m, w) + 1 >= LEASE -> \
			q[m] = q[m] & ~WB(w); old[m] = old[m] & ~WB(w); SETAGE(m, w, 0); \
			printf("m%d: the lease of w%d has passed\n", MN(m), w) \
		:: else -> SETAGE(m, w, AGE(m, w) + 1) \
		fi \
	:: else -> skip \
	fi;
#define AGEM(m) FORW2(AGEONE, m) rn[m] = 0;
#define SENDM(m) pend[m] = rch[m] & lv;

/* A round ends (if one has begun), and the next begins: every live waiter
 * tries, with its id or without, and its requests are on their way to the
 * masters it reaches. */
inline nextRound() {
	d_step {
		if
		:: rc > 0 ->
			FORM(AGEM)
			printf("round %d ends\n", rno)
		:: else -> skip
		fi;
		if
		:: BOUND > 0 && rc >= BOUND ->
			printf("round %d ended, and no waiter holds the key\n", rc);
			PROP(7, gr);
			rc = BOUND + 1
		:: else ->
			rc = (BOUND > 0 || rc == 0 -> rc + 1 : rc); rno++; out = lv;
			FORM(SENDM)
			printf("round %d begins\n", rno);
			ob[0] = lv & BELOW(0); ob[1] = lv & BELOW(1);
#if NW == 3
			ob[2] = lv & BELOW(2)
#endif
		fi
	}
}

/* ------------------------------------------------ a partial-order reduction */

/* Events that commute with every other event left in the round are taken
 * alone, in a fixed order: the others are explored after them, and every
 * order of them ends the round in the same state. A decision commutes with
 * the rest unless a request of another waiter is still on its way to a
 * master that granted the waiter (its roll-back frees the key there: before
 * or after that request arrives are two outcomes). A request commutes with
 * the rest when it is the only one on its way to its master and no waiter
 * that has not decided holds the key there. Sets ev, ew and em, or leaves ev 0. */
#define OTHERPM(w, m) || ((gm[m] & WB(w)) && (pend[m] & ~WB(w)))
#define OTHERPEND(w) (0 FORM2(OTHERPM, w))
#define SAFEDECIDE(w) \
	if \
	:: ev == 0 && (out & WB(w)) && !PENDING(w) && !OTHERPEND(w) -> ev = EV_DECIDE; ew = w \
	:: else -> skip \
	fi;
#define ONEBIT(x) ((x) != 0 && ((x) & ((x) - 1)) == 0)
#define BITW(x) ((x) == 1 -> 0 : ((x) == 2 -> 1 : 2))
#define SAFEDELIVER(m) \
	if \
	:: ev == 0 && ONEBIT(pend[m]) && !(h[m] != 0 && (out & WB(h[m] - 1))) -> \
		ev = EV_DELIVER; em = m; ew = BITW(pend[m]) \
	:: else -> skip \
	fi;
inline ample() {
	ev = 0;
	FORW(SAFEDECIDE)
	FORM(SAFEDELIVER)
}

/* ---------------------------------------------------------- symmetry */

/* Masters are interchangeable: they are sorted by everything the state
 * holds about each of them, so that states that differ only by a renaming
 * of the masters are one state. */
#define CMPF(x, y) \
	if \
	:: cmpr == 0 && (x) < (y) -> cmpr = 1 \
	:: cmpr == 0 && (x) > (y) -> cmpr = 2 \
	:: else -> skip \
	fi
#define VSWAP(x, y) v = x; x = y; y = v

inline cmpMasters(a, b) {
	cmpr = 0;
	CMPF(h[a], h[b]); CMPF(q[a], q[b]); CMPF(ag[a], ag[b]); CMPF(old[a], old[b]);
	CMPF(rn[a], rn[b]); CMPF(rch[a], rch[b]); CMPF(ab[a], ab[b]);
	CMPF(pend[a], pend[b]); CMPF(gm[a], gm[b]); CMPF(am[a], am[b])
}

inline swapMasters(a, b) {
	VSWAP(mname[a], mname[b]);
	VSWAP(h[a], h[b]); VSWAP(q[a], q[b]); VSWAP(ag[a], ag[b]); VSWAP(old[a], old[b]);
	VSWAP(rn[a], rn[b]); VSWAP(rch[a], rch[b]); VSWAP(ab[a], ab[b]);
	VSWAP(pend[a], pend[b]); VSWAP(gm[a], gm[b]); VSWAP(am[a], am[b]);
	v = 0
}

#define CSWAP(a, b) cmpMasters(a, b); if :: cmpr == 2 -> swapMasters(a, b) :: else -> skip fi

inline canon() {
	CSWAP(0, 1); CSWAP(1, 2); CSWAP(0, 1);
	cmpr = 0
}

/* ---------------------------------------------------------- the start */

/* Waiter w: dead, or live and reaching every master (or, with PART, any
 * set of them), sending its id in its next try or not. */
#define REACHM(w, m) \
	if \
	:: x & MB(m) -> rch[m] = rch[m] | WB(w) \
	:: else -> skip \
	fi;
#define CHOOSEW(w) \
	if \
	:: skip \
	:: w < NWAIT -> lv = lv | WB(w); \
		if \
		:: PART == 0 -> x = ALLM \
		:: PART == 1 -> select(x : 1 .. ALLM) \
		:: PART == 2 -> x = ALLM \
		:: PART == 2 -> select(x : 0 .. NM - 1); x = MB(x) \
		fi; \
		FORM2(REACHM, w) \
		if \
		:: rg = rg | WB(w) \
		:: skip \
		fi \
	fi;
/* Master m: any waiters registered, every lease left from before. */
#define CHOOSEM(m) select(x : 0 .. ALLW); x = x & ((1 << NWAIT) - 1); q[m] = x; old[m] = x;
/* Waiter w reaches a quorum of voting masters (sets y). */
#define VREACHM(w, m) + (((rch[m] >> (w)) & 1) && !ab[m])
#define QREACH(w) if :: ((lv >> (w)) & 1) && (0 FORM2(VREACHM, w)) >= Q -> y = 1 :: else -> skip fi;

#define SAYWAITER(w) \
	if \
	:: lv & WB(w) -> printf("start: w%d waits, reaches", w); FORM2(SAYREACH, w) \
		if \
		:: rg & WB(w) -> printf(", sends its id\n") \
		:: else -> printf(", sends no id (its last try reached no quorum)\n") \
		fi \
	:: else -> printf("start: w%d is dead\n", w) \
	fi;
#define SAYREACH(w, m) if :: rch[m] & WB(w) -> printf(" m%d", m) :: else -> skip fi;
#define SAYMASTER(m) \
	printf("start: m%d: key free, queue ", m); sayQueue(m); \
	if \
	:: ab[m] -> printf(", abstains\n") \
	:: else -> printf("\n") \
	fi;

active proctype System() {
	byte ev, ew, em, x, y, v, cmpr;
	READ_SWITCHES;
	atomic {
		FORW(CHOOSEW)
		FORM(CHOOSEM)
		mname[0] = 0; mname[1] = 1; mname[2] = 2;
		ab[0] = (NAB > 0);
		/* the progress property asks for a live waiter that reaches a
		 * quorum of voting masters: without one, nothing is checked */
		y = 0;
		FORW(QREACH)
		if
		:: y == 0 -> goto done
		:: else -> skip
		fi;
		d_step {
			FORW(SAYWAITER)
			FORM(SAYMASTER)
		}
		d_step { x = 0; y = 0; canon() }
	}
end:
	do
	:: gr -> break
	:: !gr && (out != 0 || BOUND == 0 || rc <= BOUND) -> atomic {
		d_step { ample() };
		if
		:: ev != 0 -> skip
		:: else ->
			if
			FORM(SEL_DELIVERM)
			FORW(SEL_DECIDE)
			:: out == 0 -> ev = EV_ROUND
			fi
		fi;
		if
		:: ev == EV_DELIVER -> acquire(ew, em)
		:: ev == EV_DECIDE -> decide(ew)
		:: ev == EV_ROUND -> nextRound()
		fi;
		d_step { canon(); ev = 0; ew = 0; em = 0 }
	}
	od;
done:
	skip
}
