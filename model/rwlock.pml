/*
 * The read-write lock (issue 30) over N independent masters, for Spin.
 *
 * README.md beside this file says what is checked and what is left out. In
 * short: on each master a key holds its readers, or one writer, each entry
 * with a TTL, and the writers that wait there. A reader is granted on a
 * master when no writer holds it there and no writer waits there (writer
 * preference); a writer when no reader and no other writer holds it there,
 * and a writer refused there is marked as waiting. Readers and writers
 * both need a majority. Two majorities intersect, and the master in both
 * refuses the second of a writer and any other holder, so a writer never
 * holds together with another holder (property 9).
 *
 * The events, time, validity windows, the restart guard and the clients'
 * tokens are as in semaphore.pml; each attempt is a reader's or a writer's,
 * chosen when it begins.
 *
 * Every size is a #define, and every safeguard a switch the verifier reads
 * when it starts (QL_<name>), as in quorumlock.pml.
 */

/* ---------------------------------------------------------------- sizes */

#ifndef NM
#define NM 3            /* masters: 3, 4 or 5 */
#endif
#ifndef NC
#define NC 3            /* clients: 2 or 3 */
#endif

#include "primitives.pml"

/* ------------------------------------------------------ what runs, and
 * the safeguards: as the design has them, unless a control changes one. */

#define SWITCH hidden byte

/* what runs */
SWITCH WRITERS = 7;     /* clients (bit c) whose attempts may be a writer's */
SWITCH READERS = 7;     /* clients (bit c) whose attempts may be a reader's */
SWITCH NRS = 1;         /* master restarts in one run */
SWITCH LOSS = 1;        /* the network may lose a request, before or after it ran */
SWITCH EXPIRY = 1;      /* an entry may expire */
SWITCH ATTEMPTS = 0;    /* attempts per client in a run; 0: no bound (the checks) */
hidden int CHECK = 256; /* asserted properties: bit n-1 for property n (9) */

/* the safeguards */
SWITCH RQ = 0;          /* the readers' quorum: 0, a majority; else that many masters */
SWITCH RWRITER = 1;     /* a reader is refused where a writer holds the key */
SWITCH WPREF = 1;       /* a reader is refused where a writer waits (writer preference) */
SWITCH GUARD = 1;       /* a master in restart quarantine does not vote */
SWITCH GUARD_WIN = 1;   /* ... until every window running at its restart has ended */

#define READ_SWITCHES c_code { \
	WRITERS = envOr("QL_WRITERS", WRITERS); \
	READERS = envOr("QL_READERS", READERS); \
	NRS = envOr("QL_NRS", NRS); \
	LOSS = envOr("QL_LOSS", LOSS); \
	EXPIRY = envOr("QL_EXPIRY", EXPIRY); \
	ATTEMPTS = envOr("QL_ATTEMPTS", ATTEMPTS); \
	CHECK = envOr("QL_CHECK", CHECK); \
	RQ = envOr("QL_RQ", RQ); \
	RWRITER = envOr("QL_RWRITER", RWRITER); \
	WPREF = envOr("QL_WPREF", WPREF); \
	GUARD = envOr("QL_GUARD", GUARD); \
	GUARD_WIN = envOr("QL_GUARD_WIN", GUARD_WIN); \
	}

/* The quorums. */
#define MAJ (NM/2 + 1)
#define QOF(c) (wr[c] -> MAJ : (RQ == 0 -> MAJ : RQ))
/* ------------------------------------------------------------- state */

/* Everything about master m is one number, ms[m], so that sorting the
 * masters (symmetry) is sorting numbers:
 *   bits 0..NC-1        its readers (bit c: client c's token)
 *   bits NC..2NC-1      its writer (one bit at most)
 *   bits 2NC..3NC-1     the writers that wait there
 *   bit  3NC            in restart quarantine
 *   bits 3NC+1..4NC     the clients whose windows ran when it restarted
 *   3 bits per client   the client's request there and its answer (S_) */
int ms[NM];

#define RDS(m) (ms[m] & ALLC)
#define WRT(m) ((ms[m] >> NC) & ALLC)
#define WWT(m) ((ms[m] >> (2*NC)) & ALLC)
#define QUAR(m) ((ms[m] >> (3*NC)) & 1)
#define RWIN(m) ((ms[m] >> (3*NC+1)) & ALLC)
#define HAS(m, c) ((RDS(m) | WRT(m)) & CB(c))
#define SB(c) (4*NC + 1 + 3*(c))
#define SLOT(m, c) ((ms[m] >> SB(c)) & 7)
#define SETSLOT(m, c, v) ms[m] = (ms[m] & ~(7 << SB(c))) | ((v) << SB(c))
#define SETRDS(m, x) ms[m] = (ms[m] & ~ALLC) | (x)
#define SETWRT(m, x) ms[m] = (ms[m] & ~(ALLC << NC)) | ((x) << NC)
#define SETWWT(m, x) ms[m] = (ms[m] & ~(ALLC << (2*NC))) | ((x) << (2*NC))
#define SETQUAR(m, b) ms[m] = (ms[m] & ~(1 << (3*NC))) | ((b) << (3*NC))
#define SETRWIN(m, x) ms[m] = (ms[m] & ~(ALLC << (3*NC+1))) | ((x) << (3*NC+1))

/* clients */
#define P_IDLE 0
#define P_ACQ  1        /* the attempt's fan-out is out */
#define P_HELD 2
byte ph[NC];
bit wr[NC];             /* the attempt, or the lock held, is a writer's */
bit live[NC];           /* the attempt's or lock's validity window still runs */
byte ck[NC];            /* attempts begun, counted only with ATTEMPTS */

byte restarts;

/* -------------------------------------------------------- properties */

#define HOLDS(c) (ph[c] == P_HELD && live[c])
#define HOLDC(c) + HOLDS(c)
#define WHOLDC(c) + (HOLDS(c) && wr[c])
/* FORCX: these are used inside FORC, where FORC does not expand again */
#define HOLDERS (0 FORCX(HOLDC))
#define WHOLDERS (0 FORCX(WHOLDC))

/* ----------------------------------------------------------- scripts */

/* The acquire script on master m for client c's token, a reader's or a
 * writer's: expired entries are gone already (an expiry is an event); a
 * token that holds the key there is granted again. A reader is granted
 * where no writer holds the key and no writer waits; a writer where no
 * reader and no writer holds it, and is marked as waiting where it is
 * refused. Sets y: 1 granted, 0 refused. */
inline acquire(c, m) {
	if
	:: HAS(m, c) -> y = 1
	:: !HAS(m, c) && !wr[c] && (WRT(m) == 0 || !RWRITER) && (WWT(m) == 0 || !WPREF) ->
		SETRDS(m, RDS(m) | CB(c)); y = 1
	:: !HAS(m, c) && !wr[c] && !((WRT(m) == 0 || !RWRITER) && (WWT(m) == 0 || !WPREF)) -> y = 0
	:: !HAS(m, c) && wr[c] && WRT(m) == 0 && RDS(m) == 0 ->
		SETWRT(m, CB(c)); SETWWT(m, WWT(m) & ~CB(c)); y = 1
	:: !HAS(m, c) && wr[c] && !(WRT(m) == 0 && RDS(m) == 0) ->
		SETWWT(m, WWT(m) | CB(c)); y = 0
	fi
}

/* ------------------------------------------------------------ clients */

#define NOTHINGM(c, m) && SLOT(m, c) == S_NONE && !HAS(m, c)
#define NOTHING(c) (1 FORM2(NOTHINGM, c))


#define CLEARRW(c, m) SETRWIN(m, RWIN(m) & ~CB(c));

/* Client c begins an attempt, a reader's or a writer's: a new token, a new
 * validity window. Its last window no longer matters to any restarted
 * master. */
inline begin(c) {
	if
	:: (WRITERS >> c) & 1 -> wr[c] = 1; printf("c%d: attempt to write\n", c)
	:: (READERS >> c) & 1 -> wr[c] = 0; printf("c%d: attempt to read\n", c)
	fi;
	FORM2(CLEARRW, c)
	FORM2(SENDM, c)
	ph[c] = P_ACQ; live[c] = 1;
	if
	:: ATTEMPTS > 0 -> ck[c]++
	:: else -> skip
	fi
}

/* Attempts that can decide, decide. Property 9: a writer never holds
 * together with another holder. */
#define DECIDE(c) \
	if \
	:: ph[c] == P_ACQ && YES(c) >= QOF(c) && live[c] -> \
		if \
		:: wr[c] -> printf("c%d: holds the lock to write", c) \
		:: else -> printf("c%d: holds the lock to read", c) \
		fi; \
		printf(": %d votes; other holders: %d, writers among them: %d\n", YES(c), HOLDERS, WHOLDERS); \
		PROP(9, (wr[c] && HOLDERS == 0) || (!wr[c] && WHOLDERS == 0)); \
		ph[c] = P_HELD; FORM2(FORGETM, c) skip \
	:: ph[c] == P_ACQ && YES(c) >= QOF(c) && !live[c] -> \
		printf("c%d: %d votes, but its validity has ended: rolls back\n", c, YES(c)); \
		ph[c] = P_IDLE; FORM2(FORGETM, c) skip \
	:: ph[c] == P_ACQ && YES(c) < QOF(c) && YES(c) + PEND(c) < QOF(c) -> \
		printf("c%d: %d votes, a quorum (%d) out of reach: rolls back\n", c, YES(c), QOF(c)); \
		ph[c] = P_IDLE; live[c] = 0; FORM2(FORGETM, c) skip \
	:: else -> skip \
	fi;

/* ------------------------------------------------------------ events */

#define EV_START   1
#define EV_DELIVER 2
#define EV_LOSE    3
#define EV_RELEASE 4
#define EV_GO      5
#define EV_RESTART 6
#define EV_QEND    7
#define EV_UNMARK  8

#define SEL_START(c)     :: ph[c] == P_IDLE && NOTHING(c) && (ATTEMPTS == 0 || ck[c] < ATTEMPTS) -> \
	ev = EV_START; ec = c
#define SEL_RELEASE(c)   :: ph[c] == P_HELD -> ev = EV_RELEASE; ec = c
#define SEL_DELIVER(c, m) :: OUT(SLOT(m, c)) -> ev = EV_DELIVER; ec = c; em = m
#define SEL_LOSE(c, m)   :: LOSS && OUT(SLOT(m, c)) -> ev = EV_LOSE; ec = c; em = m
/* an entry goes: it expires, or the release of a token that ended arrives */
#define SEL_GO(c, m)     :: (EXPIRY || ph[c] == P_IDLE) && HAS(m, c) -> ev = EV_GO; ec = c; em = m
/* a writer's mark goes: it expires, or the writer's roll-back clears it */
#define SEL_UNMARK(c, m) :: WWT(m) & CB(c) -> ev = EV_UNMARK; ec = c; em = m
#define SEL_RESTART(m)   :: restarts < NRS -> ev = EV_RESTART; em = m
#define SEL_QEND(m)      :: QUAR(m) -> ev = EV_QEND; em = m

#define WINDOWS(c) + ((ph[c] != P_IDLE && live[c]) << (c))
#define ENDRW(c) \
	if \
	:: (x & CB(c)) && live[c] -> live[c] = 0; printf("c%d: its validity window has ended\n", c) \
	:: else -> skip \
	fi;
#define SAYC(c) if :: x & CB(c) -> printf(" c%d", c) :: else -> skip fi;

/* The acquire of client c arrives at master m; its reply reaches the
 * client if it still waits (ok), and is lost if not. */
inline deliver(c, m, ok) {
	d_step {
	acquire(c, m);
	if
	:: wr[c] -> printf("m%d: acquire c%d to write: ", MN(m), c)
	:: else -> printf("m%d: acquire c%d to read: ", MN(m), c)
	fi;
	if
	:: y -> printf("granted")
	:: else -> printf("refused")
	fi;
	if
	:: y && QUAR(m) -> printf(" (in quarantine)")
	:: else -> skip
	fi;
	printf("; readers");
	x = RDS(m);
	FORC(SAYC)
	printf(", writer");
	x = WRT(m);
	FORC(SAYC)
	printf(", waiting");
	x = WWT(m);
	FORC(SAYC)
	if
	:: !ok -> printf("; the reply is lost\n")
	:: else -> printf("\n")
	fi;
	if
	:: SLOT(m, c) == S_LATE -> SETSLOT(m, c, S_NONE)
	:: SLOT(m, c) == S_ACQ && !ok -> SETSLOT(m, c, S_DONE)
	:: SLOT(m, c) == S_ACQ && ok && y && !(QUAR(m) && GUARD) -> SETSLOT(m, c, S_YES)
	:: else -> SETSLOT(m, c, S_DONE)
	fi;
	y = 0; x = 0
	}
}

inline happen() {
	if
	:: ev == EV_START -> begin(ec)
	:: ev == EV_RELEASE -> printf("c%d: Release\n", ec); ph[ec] = P_IDLE; live[ec] = 0
	:: ev == EV_DELIVER -> deliver(ec, em, 1)
	:: ev == EV_LOSE ->
		if
		:: printf("the network loses the acquire of c%d to m%d\n", ec, MN(em));
			if
			:: SLOT(em, ec) == S_ACQ -> SETSLOT(em, ec, S_DONE)
			:: else -> SETSLOT(em, ec, S_NONE)
			fi
		:: deliver(ec, em, 0)
		fi
	:: ev == EV_GO ->
		SETRDS(em, RDS(em) & ~CB(ec)); SETWRT(em, WRT(em) & ~CB(ec));
		if
		:: ph[ec] == P_IDLE -> printf("m%d: the entry of c%d goes\n", MN(em), ec)
		:: else -> printf("m%d: the entry of c%d expires\n", MN(em), ec)
		fi;
		if
		:: live[ec] -> live[ec] = 0; printf("c%d: its validity window has ended\n", ec)
		:: else -> skip
		fi
	:: ev == EV_UNMARK ->
		SETWWT(em, WWT(em) & ~CB(ec));
		printf("m%d: c%d no longer waits there\n", MN(em), ec)
	:: ev == EV_RESTART ->
		restarts++;
		printf("m%d: crashes and restarts empty\n", MN(em));
		SETRDS(em, 0); SETWRT(em, 0); SETWWT(em, 0); SETQUAR(em, 1); SETRWIN(em, 0 FORC(WINDOWS))
	:: ev == EV_QEND ->
		printf("m%d: out of quarantine\n", MN(em));
		x = RWIN(em);
		if
		:: GUARD_WIN -> FORC(ENDRW) skip
		:: else -> skip
		fi;
		x = 0;
		SETQUAR(em, 0); SETRWIN(em, 0)
	fi
}

active proctype System() {
	byte ev, ec, em, i, j, y;
	int x;
	READ_SWITCHES;
	d_step {
		for (i : 0 .. NM-1) {
			mname[i] = i
		}
		i = 0
	}
end:
	do
	:: atomic {
		if
		FORC(SEL_START)
		FORC(SEL_RELEASE)
		FORCM(SEL_DELIVER)
		FORCM(SEL_LOSE)
		FORCM(SEL_GO)
		FORCM(SEL_UNMARK)
		FORM(SEL_RESTART)
		FORM(SEL_QEND)
		fi;
		happen();
		d_step {
			FORC(DECIDE)
			canon();
			ev = 0; ec = 0; em = 0
		}
	}
	od
}
