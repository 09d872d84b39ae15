/*
 * The semaphore (issue 30): K permits on a key over N independent masters,
 * for Spin.
 *
 * README.md beside this file says what is checked and what is left out. In
 * short: each master admits at most K live permits, each a TTL'd entry of
 * its holder's token; a permit is held when q masters granted it and the
 * holder's validity still runs. The claim is that q = floor(N·K/(K+1)) + 1
 * keeps the holders at K or fewer (property 8): K+1 holders would need
 * (K+1)·q grants, and N masters admit only N·K. A majority is not enough
 * for K >= 2 (the control permits-over-a-majority).
 *
 * One process runs every event atomically:
 *
 *   a client    begins an attempt (a fan-out of the acquire script to every
 *               master), or releases the permit it holds;
 *   the network delivers a request (the master runs the script at once),
 *               or loses it, before or after the master ran it (the client
 *               gets no reply: a timeout);
 *   a master    crashes and restarts empty, and is in quarantine (the
 *               restart guard) until every validity window that was running
 *               when it came back has ended; a permit goes (its release
 *               or roll-back arrives) or expires.
 *
 * After each event every attempt that can decide does: q counted votes and
 * a validity still running hold the permit; once q are out of reach, the
 * attempt fails and rolls back.
 *
 * Time is the order of events, as in quorumlock.pml. An attempt's validity
 * window begins when it begins, and ends before any permit granted to it
 * can expire: so a permit may expire at any moment, and when it does, the
 * window of the attempt it was granted to has ended. A quarantine may end
 * at any moment, and when it does, every window that was running at the
 * restart has ended (the guard window is longer than any TTL plus its
 * reserve).
 *
 * A client has one token at a time: it begins its next attempt once nothing
 * of its last one is left on any master or in the network (released, rolled
 * back, lost, or expired). So a client's number is its token, and the
 * number of attempts is unbounded: the search covers every run.
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
SWITCH K = 2;           /* permits per key */
SWITCH NRS = 1;         /* master restarts in one run */
SWITCH LOSS = 1;        /* the network may lose a request, before or after it ran */
SWITCH EXPIRY = 1;      /* a permit may expire */
SWITCH ATTEMPTS = 0;    /* attempts per client in a run; 0: no bound (the checks) */
SWITCH CHECK = 128;     /* asserted properties: bit n-1 for property n (8) */

/* the safeguards */
SWITCH PQ = 1;          /* 1: the permit quorum floor(N·K/(K+1)) + 1; 0: a majority */
SWITCH GUARD = 1;       /* a master in restart quarantine does not vote */
SWITCH GUARD_WIN = 1;   /* ... until every window running at its restart has ended */

#define READ_SWITCHES c_code { \
	K = envOr("QL_K", K); \
	NRS = envOr("QL_NRS", NRS); \
	LOSS = envOr("QL_LOSS", LOSS); \
	EXPIRY = envOr("QL_EXPIRY", EXPIRY); \
	ATTEMPTS = envOr("QL_ATTEMPTS", ATTEMPTS); \
	CHECK = envOr("QL_CHECK", CHECK); \
	PQ = envOr("QL_PQ", PQ); \
	GUARD = envOr("QL_GUARD", GUARD); \
	GUARD_WIN = envOr("QL_GUARD_WIN", GUARD_WIN); \
	}

/* The quorum a permit needs. */
#define Q (PQ -> NM*K/(K+1) + 1 : NM/2 + 1)

/* ------------------------------------------------------------- state */

/* Everything about master m is one number, ms[m], so that sorting the
 * masters (symmetry) is sorting numbers:
 *   bits 0..NC-1        the permits it holds (bit c: client c's token)
 *   bit  NC             in restart quarantine
 *   bits NC+1..2NC      the clients whose windows ran when it restarted
 *   3 bits per client   the client's request there and its answer (S_) */
int ms[NM];

#define PERM(m) (ms[m] & ALLC)
#define QUAR(m) ((ms[m] >> NC) & 1)
#define RWIN(m) ((ms[m] >> (NC+1)) & ALLC)
#define SB(c) (2*NC + 1 + 3*(c))
#define SLOT(m, c) ((ms[m] >> SB(c)) & 7)
#define SETSLOT(m, c, v) ms[m] = (ms[m] & ~(7 << SB(c))) | ((v) << SB(c))
#define SETPERM(m, x) ms[m] = (ms[m] & ~ALLC) | (x)
#define SETQUAR(m, b) ms[m] = (ms[m] & ~(1 << NC)) | ((b) << NC)
#define SETRWIN(m, x) ms[m] = (ms[m] & ~(ALLC << (NC+1))) | ((x) << (NC+1))

/* clients */
#define P_IDLE 0
#define P_ACQ  1        /* the attempt's fan-out is out */
#define P_HELD 2
byte ph[NC];
bit live[NC];           /* the attempt's or permit's validity window still runs */
byte ck[NC];            /* attempts begun, counted only with ATTEMPTS */

byte restarts;

/* -------------------------------------------------------- properties */

#define HOLDS(c) (ph[c] == P_HELD && live[c])
#define HOLDC(c) + HOLDS(c)
/* FORCX: HOLDERS is used inside FORC, where FORC does not expand again */
#define HOLDERS (0 FORCX(HOLDC))

/* ----------------------------------------------------------- scripts */

#define POPC(c) + ((x >> (c)) & 1)

/* The acquire script on master m for client c's token: expired permits
 * are gone already (an expiry is an event); a token that holds a permit
 * there is granted again; a free permit is granted; else refused. Sets y:
 * 1 granted, 0 refused. */
inline acquire(c, m) {
	x = PERM(m);
	if
	:: x & CB(c) -> y = 1
	:: !(x & CB(c)) && (0 FORC(POPC)) < K -> SETPERM(m, x | CB(c)); y = 1
	:: else -> y = 0
	fi;
	x = 0
}

/* ------------------------------------------------------------ clients */

#define NOTHINGM(c, m) && SLOT(m, c) == S_NONE && !(PERM(m) & CB(c))
#define NOTHING(c) (1 FORM2(NOTHINGM, c))


#define CLEARRW(c, m) SETRWIN(m, RWIN(m) & ~CB(c));

/* Client c begins an attempt: a new token, a new validity window. Its
 * last window no longer matters to any restarted master. */
inline begin(c) {
	printf("c%d: attempt\n", c);
	FORM2(CLEARRW, c)
	FORM2(SENDM, c)
	ph[c] = P_ACQ; live[c] = 1;
	if
	:: ATTEMPTS > 0 -> ck[c]++
	:: else -> skip
	fi
}

/* Attempts that can decide, decide. */
#define DECIDE(c) \
	if \
	:: ph[c] == P_ACQ && YES(c) >= Q && live[c] -> \
		printf("c%d: holds a permit: %d votes, %d holders\n", c, YES(c), HOLDERS + 1); \
		PROP(8, HOLDERS + 1 <= K); \
		ph[c] = P_HELD; FORM2(FORGETM, c) skip \
	:: ph[c] == P_ACQ && YES(c) >= Q && !live[c] -> \
		printf("c%d: %d votes, but its validity has ended: rolls back\n", c, YES(c)); \
		ph[c] = P_IDLE; FORM2(FORGETM, c) skip \
	:: ph[c] == P_ACQ && YES(c) < Q && YES(c) + PEND(c) < Q -> \
		printf("c%d: %d votes, a quorum (%d) out of reach: rolls back\n", c, YES(c), Q); \
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

#define SEL_START(c)     :: ph[c] == P_IDLE && NOTHING(c) && (ATTEMPTS == 0 || ck[c] < ATTEMPTS) -> \
	ev = EV_START; ec = c
#define SEL_RELEASE(c)   :: ph[c] == P_HELD -> ev = EV_RELEASE; ec = c
#define SEL_DELIVER(c, m) :: OUT(SLOT(m, c)) -> ev = EV_DELIVER; ec = c; em = m
#define SEL_LOSE(c, m)   :: LOSS && OUT(SLOT(m, c)) -> ev = EV_LOSE; ec = c; em = m
/* a permit goes: it expires, or the release of a token that ended arrives */
#define SEL_GO(c, m)     :: (EXPIRY || ph[c] == P_IDLE) && (PERM(m) & CB(c)) -> ev = EV_GO; ec = c; em = m
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
	printf("m%d: acquire c%d: ", MN(m), c);
	if
	:: y -> printf("granted")
	:: else -> printf("refused")
	fi;
	if
	:: y && QUAR(m) -> printf(" (in quarantine)")
	:: else -> skip
	fi;
	printf(", permits of");
	x = PERM(m);
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
		SETPERM(em, PERM(em) & ~CB(ec));
		if
		:: ph[ec] == P_IDLE -> printf("m%d: the permit of c%d goes\n", MN(em), ec)
		:: else -> printf("m%d: the permit of c%d expires\n", MN(em), ec)
		fi;
		if
		:: live[ec] -> live[ec] = 0; printf("c%d: its validity window has ended\n", ec)
		:: else -> skip
		fi
	:: ev == EV_RESTART ->
		restarts++;
		printf("m%d: crashes and restarts empty\n", MN(em));
		SETPERM(em, 0); SETQUAR(em, 1); SETRWIN(em, 0 FORC(WINDOWS))
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
