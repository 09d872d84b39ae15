/*
 * The multi-key lock (LockAll, issue 30) over N independent masters, for
 * Spin.
 *
 * README.md beside this file says what is checked and what is left out. In
 * short: a caller takes a set of keys. On each master one atomic step (the
 * script) takes every key of the set, or none of them when any is held by
 * another token; the set is held when a majority of masters granted it,
 * and a failed attempt rolls back everywhere and waits until a key of its
 * set is freed (a release or roll-back announced, or a key that expired),
 * then tries again. Two holders never share a key (property 10), and
 * callers whose sets overlap, taken in different orders, never all wait
 * for ever (property 11; with a search for a cycle, some caller always
 * gets its set again).
 *
 * The negative control takes the keys one at a time (ATOMIC=0): the set's
 * first key over a majority, then the next, each try rolled back and waited
 * for again on failure, the keys already taken held (and extended) in the
 * meantime, as nested Lock calls would. Two callers that take {a,b} and
 * {b,a} then each hold one key and wait for the other's for ever.
 *
 * The events, time and validity windows, and the clients' tokens, are as
 * in semaphore.pml; there are no restarts here.
 *
 * Every size is a #define, and every safeguard a switch the verifier reads
 * when it starts (QL_<name>), as in quorumlock.pml.
 */

/* ---------------------------------------------------------------- sizes */

#ifndef NM
#define NM 3            /* masters: 3 or 5 */
#endif
#ifndef NC
#define NC 3            /* clients: 2 or 3 */
#endif

#include "primitives.pml"

/* ------------------------------------------------------ what runs, and
 * the safeguards: as the design has them, unless a control changes one. */

#define SWITCH hidden byte

/* what runs */
SWITCH SETS = 43;       /* the keys each client takes, 2 bits per client (bit 0 key a,
                           bit 1 key b): 43 is {a,b}, {a,b}, {b} */
SWITCH BFIRST = 2;      /* clients (bit c) that take key b first, where the order
                           matters (ATOMIC=0) */
SWITCH LOSS = 1;        /* the network may lose a request, before or after it ran */
SWITCH EXPIRY = 1;      /* a key held may expire; 0: the watchdog extends it for ever */
SWITCH ATTEMPTS = 0;    /* attempts per client in a run; 0: no bound (the checks) */
hidden int CHECK = 1536; /* asserted properties: bit n-1 for property n (10, 11) */

/* the safeguard */
SWITCH ATOMIC = 1;      /* 1: all keys of the set or none, in one step per master;
                           0: one key at a time, holding those taken */

#define READ_SWITCHES c_code { \
	SETS = envOr("QL_SETS", SETS); \
	BFIRST = envOr("QL_BFIRST", BFIRST); \
	LOSS = envOr("QL_LOSS", LOSS); \
	EXPIRY = envOr("QL_EXPIRY", EXPIRY); \
	ATTEMPTS = envOr("QL_ATTEMPTS", ATTEMPTS); \
	CHECK = envOr("QL_CHECK", CHECK); \
	ATOMIC = envOr("QL_ATOMIC", ATOMIC); \
	}

#define Q (NM/2 + 1)

/* ------------------------------------------------------------- state */

/* Everything about master m is one number, ms[m], so that sorting the
 * masters (symmetry) is sorting numbers:
 *   bits 0..1           the holder of key a: client + 1, or 0
 *   bits 2..3           the holder of key b
 *   3 bits per client   the client's request there and its answer (S_) */
int ms[NM];

#define KB(k) (1 << (k))
#define HOLDER(m, k) ((ms[m] >> (2*(k))) & 3)
#define SETHOLDER(m, k, v) ms[m] = (ms[m] & ~(3 << (2*(k)))) | ((v) << (2*(k)))
/* the keys client c holds on master m, as a set */
#define KEYSOF(m, c) ((HOLDER(m, 0) == (c) + 1) | ((HOLDER(m, 1) == (c) + 1) << 1))
#define SB(c) (4 + 3*(c))
#define SLOT(m, c) ((ms[m] >> SB(c)) & 7)
#define SETSLOT(m, c, v) ms[m] = (ms[m] & ~(7 << SB(c))) | ((v) << SB(c))

/* clients */
#define P_IDLE 0
#define P_ACQ  1        /* a try's fan-out is out */
#define P_WAIT 2        /* the try failed and rolled back: waits for a key to be freed */
#define P_NEXT 3        /* one key at a time: took key cur, the next try to begin */
#define P_HELD 4
byte ph[NC];
bit live[NC];           /* the validity window of what it holds or takes still runs */
byte hk[NC];            /* one key at a time: the keys taken so far */
byte cur[NC];           /* one key at a time: the key the try takes */
bit wk[NC];             /* a key of its set was freed since its try began */
byte ck[NC];            /* attempts begun, counted only with ATTEMPTS */

#define SET(c) ((SETS >> (2*(c))) & 3)
/* what a try asks each master for: the whole set, or the key it takes */
#define ASK(c) (ATOMIC -> SET(c) : KB(cur[c]))
/* the keys a client holds or takes, which only an expiry takes from it;
 * any other key of its is a release's or roll-back's, and may go at once */
#define LIVEKEYS(c) (ph[c] == P_HELD -> SET(c) : \
	(ph[c] == P_ACQ -> (hk[c] | ASK(c)) : \
	((ph[c] == P_WAIT || ph[c] == P_NEXT) -> hk[c] : 0)))

/* -------------------------------------------------------- properties */

/* the keys client c holds, inside its validity */
#define HELDKEYS(c) (!live[c] -> 0 : (ph[c] == P_HELD -> SET(c) : (ATOMIC -> 0 : hk[c])))
#define SHARED(c, d) || ((d) != (c) && (HELDKEYS(d) & ASK(c)))
/* FORCD: used inside FORC, where FORC does not expand again */
#define SHARES(c) (0 FORCD(SHARED, c))

/* ----------------------------------------------------------- scripts */

/* The acquire script on master m for client c's token: every key asked
 * for that is free or its own is taken, or none when another token holds
 * any of them. Sets y: 1 granted, 0 refused. */
#define FREEK(m, c, k) (!(ASK(c) & KB(k)) || HOLDER(m, k) == 0 || HOLDER(m, k) == (c) + 1)
inline acquire(c, m) {
	if
	:: FREEK(m, c, 0) && FREEK(m, c, 1) ->
		if
		:: ASK(c) & KB(0) -> SETHOLDER(m, 0, c + 1)
		:: else -> skip
		fi;
		if
		:: ASK(c) & KB(1) -> SETHOLDER(m, 1, c + 1)
		:: else -> skip
		fi;
		y = 1
	:: else -> y = 0
	fi
}

/* ------------------------------------------------------------ clients */

/* nothing of the client's last try is out, and no key of its is left
 * on any master but those it holds */
#define CLEANM(c, m) && SLOT(m, c) == S_NONE && (KEYSOF(m, c) & ~hk[c]) == 0
#define CLEAN(c) (1 FORM2(CLEANM, c))
#define NOREPM(c, m) || SLOT(m, c) == S_NOREP



inline sayKeys(x) {
	if
	:: x == 1 -> printf("{a}")
	:: x == 2 -> printf("{b}")
	:: x == 3 -> printf("{a,b}")
	:: else -> printf("{}")
	fi
}

/* Client c begins a try: a new token, a new validity window. */
inline try(c) {
	d_step {
	FORM2(SENDM, c)
	ph[c] = P_ACQ; live[c] = 1; wk[c] = 0;
	printf("c%d: tries to take ", c); x = ASK(c); sayKeys(x); printf("\n"); x = 0
	}
}

/* Tries that can decide, decide. Property 10: the keys a try takes are
 * held by no other holder. */
#define DECIDE(c) \
	if \
	:: ph[c] == P_ACQ && YES(c) >= Q && live[c] -> \
		printf("c%d: takes ", c); x = ASK(c); sayKeys(x); x = 0; \
		printf(": %d votes\n", YES(c)); \
		PROP(10, !SHARES(c)); \
		hk[c] = hk[c] | ASK(c); \
		if \
		:: ATOMIC || hk[c] == SET(c) -> ph[c] = P_HELD; hk[c] = 0; \
			printf("c%d: holds its set\n", c); got = 1 \
		:: else -> ph[c] = P_NEXT \
		fi; \
		FORM2(FORGETM, c) skip \
	:: ph[c] == P_ACQ && (YES(c) + PEND(c) < Q || (YES(c) >= Q && !live[c])) -> \
		printf("c%d: %d votes, rolls back and waits\n", c, YES(c)); \
		/* a request without a reply: the backoff tries again */ \
		wk[c] = wk[c] || (0 FORM2(NOREPM, c)); \
		ph[c] = P_WAIT; FORM2(FORGETM, c) skip \
	:: else -> skip \
	fi;

/* ------------------------------------------------------------ events */

#define EV_START   1
#define EV_DELIVER 2
#define EV_LOSE    3
#define EV_RELEASE 4
#define EV_GO      5
#define EV_RETRY   6
#define EV_NEXT    7

#define SEL_START(c)     :: ph[c] == P_IDLE && SET(c) != 0 && CLEAN(c) && \
	(ATTEMPTS == 0 || ck[c] < ATTEMPTS) -> ev = EV_START; ec = c
#define SEL_RETRY(c)     :: ph[c] == P_WAIT && wk[c] && CLEAN(c) -> ev = EV_RETRY; ec = c
#define SEL_NEXT(c)      :: ph[c] == P_NEXT && CLEAN(c) -> ev = EV_NEXT; ec = c
#define SEL_RELEASE(c)   :: ph[c] == P_HELD -> ev = EV_RELEASE; ec = c
#define SEL_DELIVER(c, m) :: OUT(SLOT(m, c)) -> ev = EV_DELIVER; ec = c; em = m
#define SEL_LOSE(c, m)   :: LOSS && OUT(SLOT(m, c)) -> ev = EV_LOSE; ec = c; em = m
/* a key goes: the release or roll-back that deletes it arrives, or it
 * expires */
#define SEL_GOK(c, m, k) :: HOLDER(m, k) == (c) + 1 && (EXPIRY || !(LIVEKEYS(c) & KB(k))) -> \
	ev = EV_GO; ec = c; em = m; ek = k
#define SEL_GO(c, m) SEL_GOK(c, m, 0) SEL_GOK(c, m, 1)

/* a key d asks for was freed: d tries again (the release's announcement,
 * or the backoff that outlasts a key's expiry) */
#define WAKE(d) \
	if \
	:: d != ec && (ph[d] == P_ACQ || ph[d] == P_WAIT) && (ASK(d) & KB(ek)) -> wk[d] = 1 \
	:: else -> skip \
	fi;

inline deliver(c, m, ok) {
	d_step {
	acquire(c, m);
	printf("m%d: acquire c%d ", MN(m), c); x = ASK(c); sayKeys(x);
	if
	:: y -> printf(": granted")
	:: else -> printf(": refused")
	fi;
	printf("; a held by %d, b by %d (0: free, else client+1)", HOLDER(m, 0), HOLDER(m, 1));
	if
	:: !ok -> printf("; the reply is lost\n")
	:: else -> printf("\n")
	fi;
	if
	:: SLOT(m, c) == S_LATE -> SETSLOT(m, c, S_NONE)
	:: SLOT(m, c) == S_ACQ && ok && y -> SETSLOT(m, c, S_YES)
	:: SLOT(m, c) == S_ACQ && !ok -> SETSLOT(m, c, S_NOREP)
	:: else -> SETSLOT(m, c, S_DONE)
	fi;
	y = 0; x = 0
	}
}

inline happen() {
	if
	:: ev == EV_START ->
		if
		:: ATTEMPTS > 0 -> ck[ec]++
		:: else -> skip
		fi;
		hk[ec] = 0; cur[ec] = (BFIRST >> ec) & 1;
		if
		:: !ATOMIC && !(SET(ec) & KB(cur[ec])) -> cur[ec] = 1 - cur[ec]
		:: else -> skip
		fi;
		try(ec)
	:: ev == EV_RETRY -> try(ec)
	/* the next key, once the last try's requests have all returned */
	:: ev == EV_NEXT -> cur[ec] = 1 - cur[ec]; try(ec)
	:: ev == EV_RELEASE -> printf("c%d: Release\n", ec); ph[ec] = P_IDLE; live[ec] = 0; hk[ec] = 0
	:: ev == EV_DELIVER -> deliver(ec, em, 1)
	:: ev == EV_LOSE ->
		if
		:: printf("the network loses the acquire of c%d to m%d\n", ec, MN(em));
			if
			:: SLOT(em, ec) == S_ACQ -> SETSLOT(em, ec, S_NOREP)
			:: else -> SETSLOT(em, ec, S_NONE)
			fi
		:: deliver(ec, em, 0)
		fi
	:: ev == EV_GO -> d_step {
		if
		:: LIVEKEYS(ec) & KB(ek) ->
			printf("m%d: key ", MN(em)); x = KB(ek); sayKeys(x); printf(" of c%d expires\n", ec); x = 0;
			if
			:: live[ec] -> live[ec] = 0; printf("c%d: its validity window has ended\n", ec)
			:: else -> skip
			fi
		:: else ->
			printf("m%d: key ", MN(em)); x = KB(ek); sayKeys(x); printf(" of c%d goes\n", ec); x = 0
		fi;
		SETHOLDER(em, ek, 0);
		FORC(WAKE)
		skip }
	fi
}

#define WAITS(c) || ph[c] == P_WAIT

active proctype System() {
	byte ev, ec, em, ek, i, j, y;
	bit got;
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
		FORC(SEL_RETRY)
		FORC(SEL_NEXT)
		FORC(SEL_RELEASE)
		FORCM(SEL_DELIVER)
		FORCM(SEL_LOSE)
		FORCM(SEL_GO)
		fi;
		happen();
		d_step {
			FORC(DECIDE)
			canon();
			ev = 0; ec = 0; em = 0; ek = 0
		}
	};
		/* a search for a cycle (-DNP) asks for a cycle in which no client
		 * ever gets its set */
		if
		:: got ->
progress:		got = 0
		:: else -> skip
		fi
	/* Property 11: nothing can happen any more, yet a client waits. */
	:: timeout ->
		d_step {
			printf("nothing can happen any more\n");
			PROP(11, !(0 FORC(WAITS)))
		};
		break
	od
}
