/*
 * The lock protocol of package redlock, as its code runs it, for Spin.
 *
 * README.md beside this file says which part stands for which Go function
 * and Lua script, what is left out and why that is safe, and how the checks
 * are run. In short, one process runs every event atomically:
 *
 *   a client    begins an attempt (acquire rounds, split votes, fence
 *               settle, validity, roll-back), judges a split, extends (with
 *               retake; with the lock's TTL or, NX=2, a shorter one, and a
 *               second time while the first is still out), releases, hands
 *               over, or drops its lock;
 *   the network delivers a request it held back (the master runs the script
 *               at once, as Redis runs a Lua script), or loses one, or the
 *               client gives up on one (timeout, connection error);
 *   a master    crashes and restarts empty, or comes back with an older copy
 *               of its data (a failover to a replica that lagged, a
 *               restart from an older RDB or AOF file); a master the guard
 *               distrusts for good loses a key unseen (an eviction).
 *
 * After each event, whatever follows at once follows in the same step:
 * requests whose turn has come are sent, and a fan-out that can decide
 * decides, as fanout.Run (internal/fanout) returns as soon as it can.
 *
 * The network. A request is answered at once, or held back, to arrive at
 * any later point or never; while it is held back its client may give up
 * on it, and it may still arrive after that. At most DELAYS requests are
 * held back at once: within that bound the search is exhaustive (delay
 * bounding). Requests to one master on different connections may overtake
 * one another; nothing in the code relies on their order.
 *
 * Time is the order of events, not a clock. A validity window is a TTL
 * minus the drift reserve, from the start of an attempt or an extension.
 * A lock has one TTL; with NX=2 an extension may have a shorter one
 * (SHORT), so there are two, long and short. A window ends before any key
 * that a master set or renewed after the window began, with the window's
 * TTL or a longer one, can expire. Of one client's windows, one begun later
 * with the same TTL or a longer one ends later; only a short window begun
 * after a long one may end first. Each client counts the windows it began
 * (wn), and keeps the count up to which all of them have ended (we) and,
 * with two TTLs, the count up to which the short ones have (weS). A key
 * keeps its owner's count from when it was set or renewed, with the long
 * TTL in kw: it may expire once every window up to kw has ended; with the
 * short TTL in kwS: once every short window up to kwS has. extend.lua never
 * shortens a TTL (NOSHORTEN), so a key renewed with both keeps both bounds.
 * A fan-out decides within its node timeout, a tenth of its TTL, so no key
 * set after an extension began expires while the extension is under way. A
 * restarted master keeps every client's count (rw); its quarantine may end
 * once all of those windows have ended, the guard window being longer than
 * any TTL plus its reserve. Time is read lazily: a window ends, a key
 * expires, a quarantine ends, at the latest where it matters, that is where
 * a script runs or a client reads its validity.
 *
 * Every size is a #define, and every safeguard a switch the verifier reads
 * when it starts, so that check.sh can check the model as the code is, and
 * each negative control with one safeguard removed.
 */

/* ---------------------------------------------------------------- sizes */

#ifndef NM
#define NM 3            /* masters: 3 or 5 */
#endif
#ifndef NC
#define NC 2            /* clients: 2 or 3 */
#endif
#ifndef NK
#define NK 2            /* tokens per client: its attempts, hand-overs included */
#endif
#ifndef NK0
#define NK0 NK          /* ... or per client */
#endif
#ifndef NK1
#define NK1 NK
#endif
#ifndef NK2
#define NK2 NK
#endif
#ifndef MAXR
#define MAXR 2          /* acquire rounds per attempt: 1, or 2 for a split winner's second */
#endif
#ifndef DELAYS
#define DELAYS 1        /* requests held back in the network at once */
#endif
#ifndef SYMMETRY
#define SYMMETRY 1      /* states that differ by a renaming of masters are one */
#endif
#ifndef NX
#define NX 1            /* request kinds for a token's extensions (and their
                           retakes): 1, or 2 so that a token's second extension
                           can go while its first is still in the network; with 2
                           the model also has two TTLs (SHORT) */
#endif
#if NX != 1 && NX != 2
#error NX must be 1 or 2
#endif

/* Tokens are numbered 1..NT, client 0's first; 0 is "none". */
#if NC == 2
#define NT (NK0+NK1)
#else
#define NT (NK0+NK1+NK2)
#endif
#define OWNER(t) ((t) <= NK0 -> 0 : ((t) <= NK0+NK1 -> 1 : 2))
#define TBASE(c) ((c) == 0 -> 0 : ((c) == 1 -> NK0 : NK0+NK1))
#define NKC(c) ((c) == 0 -> NK0 : ((c) == 1 -> NK1 : NK2))
#define Q (NM/2+1)

/* ------------------------------------------------------ what runs, and
 * the safeguards: 1 as the code has them, 0 = removed (a control).
 *
 * These are read when a verification starts, from the environment (QL_ and
 * the name: QL_GUARD=0 ./pan), so that one compiled verifier serves a check
 * and each of its controls; unset, they have the values below. A random
 * simulation with spin cannot run the C code that reads them, and uses the
 * values below; replay a trail with ./pan -r and the same environment. */

#ifdef BFS_NAMES
#define SWITCH byte
#else
#define SWITCH hidden byte
#endif

/* what runs */
SWITCH EXTEND = 7;      /* clients (bit c) that extend; an extension retakes vacant masters */
SWITCH NE = 1;          /* extensions per client in a run */
SWITCH HANDOVER = 7;    /* clients (bit c) whose Release may hand the lock to a waiter */
SWITCH NRS = 1;         /* master restarts in one run */
SWITCH RESTARTS = 3;    /* kinds of restart: bit 0 empty, bit 1 with an older copy of
                           the data (a failover to a replica that lagged, a reload of
                           an older RDB or AOF file) */
SWITCH NDIS = 0;        /* masters the guard distrusts for good (0 or 1): a replica,
                           one that may evict lock keys, one whose INFO is denied */
SWITCH SHORT = 7;       /* clients (bit c) whose extensions may have a shorter TTL
                           than the lock was taken with, chosen at each
                           extension; needs NX 2 */
SWITCH CHECK = 31;      /* asserted properties: bit n-1 for property n */

/* the safeguards */
SWITCH GUARD = 1;       /* a master in restart quarantine does not vote */
SWITCH GUARD_WIN = 1;   /* ... for longer than any TTL plus its reserve */
SWITCH RESERVE = 1;     /* the validity holds back the drift reserve */
SWITCH WRITEBACK = 1;   /* the fence is raised on lagging members of the quorum */
SWITCH RB_TOMB = 1;     /* a roll-back leaves its tombstone also where it deleted the key */
SWITCH REL_WAIT = 1;    /* a release waits, on each master, for the lock's trail (its
                           rounds and retakes), and leaves a tombstone where one of
                           them went unanswered */
SWITCH HO_WAIT = 3;     /* 3: a hand-over's acquire waits, on each master, for the
                           old lock's trail there, and is not sent where a request
                           of it went unanswered; once the hand-over succeeds, the
                           old lock is released on every master that did not grant
                           it, with its tombstone where the trail is unsure.
                           4: it waits on each master, but is sent all the same.
                           5: as 3, but the old lock's release where the
                           hand-over was not granted leaves no tombstone.
                           1: Release first waits for the whole trail, on every
                           master, and where any request of it went unanswered
                           does not hand over: it releases. 2: it waits, but
                           hands over all the same. 0: the hand-over's acquire
                           waits, on each master, only for the old lock's rounds */
SWITCH SEED = 1;        /* a master with no floor counts above every fence before */
SWITCH EPOCH = 1;       /* fenceEpoch: a master whose fence stamp does not name it
                           starts a new epoch from its clock before it counts */
SWITCH VETO = 1;        /* a master the guard distrusts for good never votes */
SWITCH NOSHORTEN = 1;   /* extend.lua never shortens a key's TTL: the key lives until
                           the latest end of the renewals that ran on it. 0: each
                           renewal sets its own TTL (PEXPIRE), and one that lands
                           late can cut a later one's */

/* the waiting queue (issue 27; queue.pml checks the queue itself) */
SWITCH QUEUE = 0;       /* 1: a master's waiting queue may refuse any new grant (an
                           acquire, a hand-over's or a retake's, that finds the key
                           free): the queue only adds refusals, and this stands
                           for every state it can be in */

/* a restart may bring back an older copy of the data */
#define OLDDATA ((RESTARTS & 2) && NRS > 0)

c_decl {
	extern char *getenv(const char *);
	extern int atoi(const char *);
	/* envOr is the environment variable name as a number, or def. */
	static unsigned char envOr(const char *name, unsigned char def) {
		const char *v = getenv(name);
		return v != 0 && *v != 0 ? (unsigned char) atoi(v) : def;
	}
}

/* Reads the switches from the environment (verification only). A switch
 * is a C global of the verifier, or part of its state vector where it
 * cannot be hidden (BFS_NAMES). */
#ifdef BFS_NAMES
#define SWV(x) now.x
#else
#define SWV(x) x
#endif
#define READ_SWITCHES c_code { \
	SWV(EXTEND) = envOr("QL_EXTEND", SWV(EXTEND)); \
	SWV(NE) = envOr("QL_NE", SWV(NE)); \
	SWV(HANDOVER) = envOr("QL_HANDOVER", SWV(HANDOVER)); \
	SWV(NRS) = envOr("QL_NRS", SWV(NRS)); \
	SWV(RESTARTS) = envOr("QL_RESTARTS", SWV(RESTARTS)); \
	SWV(NDIS) = envOr("QL_NDIS", SWV(NDIS)); \
	SWV(CHECK) = envOr("QL_CHECK", SWV(CHECK)); \
	SWV(GUARD) = envOr("QL_GUARD", SWV(GUARD)); \
	SWV(GUARD_WIN) = envOr("QL_GUARD_WIN", SWV(GUARD_WIN)); \
	SWV(RESERVE) = envOr("QL_RESERVE", SWV(RESERVE)); \
	SWV(WRITEBACK) = envOr("QL_WRITEBACK", SWV(WRITEBACK)); \
	SWV(RB_TOMB) = envOr("QL_RB_TOMB", SWV(RB_TOMB)); \
	SWV(REL_WAIT) = envOr("QL_REL_WAIT", SWV(REL_WAIT)); \
	SWV(HO_WAIT) = envOr("QL_HO_WAIT", SWV(HO_WAIT)); \
	SWV(SEED) = envOr("QL_SEED", SWV(SEED)); \
	SWV(EPOCH) = envOr("QL_EPOCH", SWV(EPOCH)); \
	SWV(VETO) = envOr("QL_VETO", SWV(VETO)); \
	SWV(QUEUE) = envOr("QL_QUEUE", SWV(QUEUE)); \
	SWV(NOSHORTEN) = envOr("QL_NOSHORTEN", SWV(NOSHORTEN)); \
	READ_SHORT \
	}
#if NX > 1
#define READ_SHORT SWV(SHORT) = envOr("QL_SHORT", SWV(SHORT));
#else
/* one TTL: a verifier that cannot have short extensions refuses to run
 * as if it had them */
#define READ_SHORT if (envOr("QL_SHORT", 0) != 0) { Uerror("QL_SHORT needs a verifier compiled with NX=2"); }
#endif

/* ------------------------------------------------------ iteration macros */

#if NM == 3
#define FORM(F) F(0) F(1) F(2)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2)
#elif NM == 5
#define FORM(F) F(0) F(1) F(2) F(3) F(4)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2) F(a,3) F(a,4)
#else
#error NM must be 3 or 5
#endif

#if DELAYS == 1
#define FORD(F) F(0)
#elif DELAYS == 2
#define FORD(F) F(0) F(1)
#elif DELAYS == 3
#define FORD(F) F(0) F(1) F(2)
#else
#error DELAYS must be 1, 2 or 3
#endif

#if NC == 2
#define FORC(F) F(0) F(1)
#elif NC == 3
#define FORC(F) F(0) F(1) F(2)
#else
#error NC must be 2 or 3
#endif

/* Request kinds: one slot per (token, kind, master). A token's extensions
 * take turns over NX pairs of kinds, extension and its retakes, so that one
 * can still be in the network when the next goes. */
#define KF   (MAXR)     /* fence raise (fence.lua) */
#define KRB  (MAXR+1)   /* release or roll-back (release.lua) */
#define KX   (MAXR+2)   /* extend (extend.lua) */
#define KRT  (MAXR+3)   /* retake (acquire.lua) */
#define NKIND (MAXR+2+2*NX)
#if NX == 1
#define KXN(i) KX
#define KRTN(i) KRT
#define ISKX(k) ((k) == KX)
#define ISKRT(k) ((k) == KRT)
#define XOF(k) 0
#define XI(c) 0         /* the pair the client's next extension takes */
#define XK(c) 0         /* the pair its extension under way took */
#define XB(t,i) TB(t)   /* a bit per (token, extension pair) */
#else
#define KXN(i) (MAXR+2+2*(i))  /* extend, of pair i */
#define KRTN(i) (MAXR+3+2*(i)) /* its retake */
#define ISKX(k) ((k) == KXN(0) || (k) == KXN(1))
#define ISKRT(k) ((k) == KRTN(0) || (k) == KRTN(1))
#define XOF(k) (((k) - MAXR - 2) / 2)
#define XI(c) (cne[c] % NX)
#define XK(c) ((cne[c] - 1) % NX)
#define XB(t,i) (1 << (((t)-1)*NX + (i)))
#endif
#define TXB(t) (XB(t,0) | XB(t,NX-1))  /* every pair of token t */

#define NS (NT*NKIND*NM)
#define SL(t,k,m) ((((t)-1)*NKIND+(k))*NM+(m))
#define STOK(s) ((s)/(NKIND*NM)+1)
#define SKIND(s) (((s)/NM)%NKIND)
#define SMAS(s) ((s)%NM)
#define TB(t) (1 << ((t)-1))
#define MB(m) (1 << (m))


/* client side of a slot: the goroutine that sends the request */
#define S_IDLE  0
#define S_DEFER 1       /* to be sent once the requests it waits for have returned */
#define S_WAIT  2       /* sent, held back in the network, not answered yet */
#define S_GOT   3       /* returned with the reply */
#define S_NOREP 4       /* returned without one: timeout or connection error */
#define S_UNSENT 5      /* given up on unsent (a hand-over where the old lock's
                           trail is unsure): nothing of it can land */
#define BUSY(s) (st[s] == S_DEFER || st[s] == S_WAIT)

/* replies: res = code | flags; val = counter, holder or (release) mode */
#define C_OK 1          /* granted, renewed, freed, raised */
#define C_NO 2          /* refused (val: holder), vacant, not held */
#define C_X  3          /* acquire: voided by a tombstone; extend: another holds it */
#define F_RT 4          /* ghost: the master was out of quarantine when it ran the script */
#define F_VT 8          /* the client's restart guard counts the vote */
#define CODE(s) (res[s] & 3)

/* release modes, in val of a release slot */
#define M_RELP 0        /* release, no tombstone */
#define M_RELT 1        /* release and tombstone */
#define M_RBOLD 2       /* roll-back, tombstone only where not held */
#define M_RB 3          /* roll-back, tombstone always */
#define M_ROLL 4        /* roll-back to send, once the rounds returned */
#define M_REL 5         /* release to send, once the waited-for requests returned */
#define M_RELHO 6       /* release of a lock handed over (HO_WAIT 3 to 5), to send
                           where the hand-over's acquire returned without a grant */

/* client phases */
#define P_IDLE  0
#define P_ROUND 1       /* an acquire round's fan-out is out */
#define P_HEAR  2       /* the round failed: hear out, judge a split */
#define P_FENCE 3       /* raising the fence on lagging masters */
#define P_HELD  4
#define P_EXT   5       /* an extension's fan-out is out */
#define P_REL   6       /* Release's fan-out is out */
#define P_FIN   7       /* quorum and fence settled: the validity decides */
#define P_HOWAIT 8      /* Release, before a hand-over: waits for the lock's trail */

/* events */
#define EV_DELIVER 1
#define EV_TIMEOUT 2
#define EV_DROP    3
#define EV_EVICT   5
#define EV_RESTART 6
#define EV_REPLACE 7
#define EV_START   8
#define EV_HEAR    9
#define EV_EXTEND  10
#define EV_RELEASE 11
#define EV_HANDOVER 12
#define EV_DROPLOCK 13
#define EV_EXTENDS 14   /* an extension with the shorter TTL */

/* ------------------------------------------------------------- state */

/* masters */
byte h[NM];             /* the key's holder: a token, 0 if free */
byte kw[NM];            /* the holder's window count when the key was set or renewed
                           with the lock's TTL */
#if NX > 1
byte kwS[NM];           /* ... with the shorter TTL: every short window up to kwS
                           ends before the key can expire */
#endif
byte cnt[NM];           /* the node's fence floor, from which every grant counts */
byte tomb[NM];          /* tombstones void:<token>, one bit per token */
bit quar[NM];           /* restarted, and its quarantine has not ended */
byte rw[NM*NC];         /* each client's window count when the master restarted */
bit stale[NM];          /* its fence stamp names another server: data replaced */
bit dis[NM];            /* the guard distrusts it for good (its veto) */
byte ph[NM];            /* the key's holder before the present one, 0 if none:
                           what an older copy of the data may hold (OLDDATA) */
#define PH(m, v) if :: OLDDATA && h[m] != 0 && h[m] != (v) -> ph[m] = h[m] :: else -> skip fi

/* requests: one slot per (token, kind, master) */
bit net[NS];            /* held back in the network */
byte st[NS];
byte res[NS];
byte val[NS];
byte dq[DELAYS];        /* the slots (+1) held back, ascending, then zeros */

/* per token */
byte tfrom[NT+1];       /* the token a hand-over takes the key over from */
byte rnd[NT+1];         /* acquire rounds sent */
byte tfence[NT+1];      /* the fence chosen */
byte extok;             /* (token, pair) bits: that extension reached a quorum,
                           so its answers "vacant" start retakes */
#if NX > 1
byte xsh;               /* (token, pair) bits: that extension has the shorter TTL */
#endif
#if NT*NX > 8
#error extok holds NT*NX bits
#endif
byte tfin;              /* the token's release or roll-back has begun */

/* per client: its goroutine that waits on a fan-out, and its lock */
byte cph[NC];           /* phase */
byte ck[NC];            /* tokens used */
byte ct[NC];            /* the attempt's or the lock's token */
byte co[NC];            /* a hand-over's old token */
byte crt[NC];           /* the token Release works on */
byte cr[NC];            /* the acquire round */
byte cne[NC];           /* extensions so far */
byte cyes[NC];          /* res.Yes of the round that reached the quorum */
byte clag[NC];          /* masters the fence is raised on */
byte cneed[NC];         /* raises needed */
byte caw[NC];           /* the attempt's validity window */
byte cxw[NC];           /* the extension's validity window */
byte wn[NC];            /* validity windows begun */
byte we[NC];            /* validity windows ended: every window up to we */
#if NX > 1
byte weS[NC];           /* ... and every short window up to weS */
byte lws;               /* clients (bit c) whose lock's window lw is short */
#endif
byte lw[NC];            /* the window the held lock is valid in */
bit bel[NC];            /* holds a lock it has not begun to release */

byte restarts;

/* ghosts: the properties' memory */
byte hi;                /* the largest counter any master ever had */
byte lastF;             /* the fence of the last lock handed out */
byte rbm[NT+1];         /* masters where the token's roll-back ran */
byte relm[NT+1];        /* masters where the token's release ran */
byte hom[NT+1];         /* masters where a hand-over from the token ran */
byte hov;               /* tokens whose Release returned through a hand-over */

#define VALID(c, w) ((w) > we[c])
#if NX > 1
#define VALIDS(c, w) ((w) > we[c] && (w) > weS[c])
#define LWS(c) ((lws >> (c)) & 1)
#define XS(t, i) ((xsh & XB(t, i)) != 0)
/* the lock's window, and the window of the extension under way */
#define VALIDLW(c) (LWS(c) -> VALIDS(c, lw[c]) : VALID(c, lw[c]))
#define VALIDX(c) (XS(ct[c], XK(c)) -> VALIDS(c, cxw[c]) : VALID(c, cxw[c]))
#else
#define VALIDLW(c) VALID(c, lw[c])
#define VALIDX(c) VALID(c, cxw[c])
#endif

/* For the trail only: the masters' names before symmetry renamed them, and
 * what normalize() shifted counters and windows by. Hidden: not part of the
 * state, and read by printf alone. */
#ifdef BFS_NAMES
/* a breadth-first search (pan -DBFS) cannot keep hidden variables */
byte mname[NM];
byte coff;
byte woff[NC];
#else
hidden byte mname[NM];
hidden byte coff;
hidden byte woff[NC];
#endif
#define MN(m) mname[m]
#define CN(x) ((x) + coff)
#define WN(c, w) ((w) + woff[c])

/* -------------------------------------------------------- properties */

#define ON(n) ((CHECK >> ((n)-1)) & 1)
#define PROP(n, c) \
	if \
	:: ON(n) && !(c) -> printf("PROPERTY %d VIOLATED\n", n); assert(c) \
	:: else -> skip \
	fi

/* Every write of a key's holder goes through SETH. Property 3: a token
 * never lands where its roll-back ran. Property 4: a released token
 * never lands where its release (or hand-over) ran. */
#define SETH(m, v) \
	if \
	:: (v) != 0 && (rbm[v] & MB(m)) -> \
		printf("m%d: t%d holds the key again, after its roll-back ran there\n", MN(m), v) \
	:: (v) != 0 && (relm[v] & MB(m)) -> \
		printf("m%d: t%d holds the key again, after its release ran there\n", MN(m), v) \
	:: else -> skip \
	fi; \
	PROP(3, (v) == 0 || !(rbm[v] & MB(m))); \
	PROP(4, (v) == 0 || !(relm[v] & MB(m))); \
	PH(m, v); \
	h[m] = v

/* ----------------------------------------------------------- scripts */

/* A key set or renewed with the lock's TTL outlives every window its owner
 * began before; one with the shorter TTL every short one (it outlives its
 * extension's window, as every short window begun before it). A retake
 * (SET NX) has its extension's TTL; every other acquire the lock's. */
#if NX > 1
#define KEYLONG(m, t) kw[m] = wn[OWNER(t)]; kwS[m] = 0
#define KEYSHORT(m, t) kw[m] = 0; kwS[m] = wn[OWNER(t)]
#define SETKEY(m, t, k) \
	if \
	:: ISKRT(k) && XS(t, XOF(k)) -> KEYSHORT(m, t) \
	:: else -> KEYLONG(m, t) \
	fi
/* extend.lua's PEXPIRE: the max with NOSHORTEN, the TTL as given without */
#define RENEW(m, t, k) \
	if \
	:: !XS(t, XOF(k)) -> KEYLONG(m, t) \
	:: XS(t, XOF(k)) && NOSHORTEN -> kwS[m] = wn[OWNER(t)] \
	:: else -> KEYSHORT(m, t) \
	fi
#define SAYEXT(t, k) printf("extend %d of t%d", XOF(k) + 1, t)
#define SAYRENEW(t, k) \
	if \
	:: XS(t, XOF(k)) && NOSHORTEN -> printf(" with the shorter TTL, which shortens nothing\n") \
	:: XS(t, XOF(k)) && !NOSHORTEN -> printf(" with the shorter TTL, which replaces the key's\n") \
	:: else -> printf("\n") \
	fi
#else
#define KEYLONG(m, t) kw[m] = wn[OWNER(t)]
#define SETKEY(m, t, k) KEYLONG(m, t)
#define RENEW(m, t, k) KEYLONG(m, t)
#define SAYEXT(t, k) printf("extend t%d", t)
#define SAYRENEW(t, k) printf("\n")
#endif

/* acquire.lua's count: the count moves one above the floor; with no floor (a master that
 * restarted empty) it starts from the clock, above every fence before. */
inline bump(m) {
	if
	:: cnt[m] == 0 -> cnt[m] = (SEED -> hi + 1 : 1)
	:: else -> cnt[m] = cnt[m] + 1
	fi;
	if
	:: cnt[m] > hi -> hi = cnt[m]
	:: else -> skip
	fi
}

/* lib.lua fenceEpoch, run by the acquire script before it reads or counts
 * a counter: a master whose fence stamp does not name this very server
 * (its data was replaced: a promoted replica, a reload of an RDB or AOF
 * file) starts a new epoch from its clock, raises its floor to it, and
 * treats every counter at or below it as absent, so its next count is the
 * floor's next value. With the seed above every fence before (SEED), that
 * is a counter above every fence before. Without SEED the clock seed may be
 * low, and the floor only ever rises. */
inline epoch(m) {
	if
	:: stale[m] ->
		stale[m] = 0;
		cnt[m] = (SEED -> hi + 1 : (cnt[m] > 0 -> cnt[m] : 1));
		if
		:: cnt[m] > hi -> hi = cnt[m]
		:: else -> skip
		fi;
		printf("m%d: its fence stamp names another server: a new epoch, floor %d\n", MN(m), CN(cnt[m]))
	:: else -> skip
	fi
}

/* The restart guard (Client.vote): INFO rides in the same round trip as
 * the script on every new connection, and a restart or failover drops every
 * connection, so the vote is judged on the master as it was when the script
 * ran. A master in quarantine abstains; so does one the guard distrusts
 * for good (its veto: a replica, one that may evict, one whose INFO is
 * denied).
 * F_RT (ghost, property 5): the master is not distrusted, and every
 * validity window that was running when it last restarted, and so may rest
 * on a key the restart erased, has ended. rw keeps the clients' window
 * counts at the restart. */
inline trust(t, m, s) {
	x = !dis[m];
	for (i : 0 .. NC-1) {
		if
		:: rw[m*NC + i] > we[i] -> x = 0
		:: else -> skip
		fi
	}
	if
	:: x -> res[s] = res[s] | F_RT
	:: else -> skip
	fi;
	i = 0; x = 0;
	if
	:: (!quar[m] || !GUARD) && (!dis[m] || !VETO) -> res[s] = res[s] | F_VT
	:: else -> skip
	fi
}

/* acquire.lua, plain lock (owner ''): SET NX, undone if voided(); a
 * hand-over (ARGV[6]) takes the key over from its old token; a retried
 * request that already took effect is granted again. */
inline acq(t, m, s) {
	f = tfrom[t];
	if
	:: h[m] == 0 && qn ->
		/* the queue's head is another waiter: no SET, nothing lands */
		res[s] = C_NO; val[s] = 0;
		printf("m%d: acquire t%d refused by the queue\n", MN(m), t)
	:: h[m] == 0 && !qn ->
		if
		:: tomb[m] & TB(t) ->
			res[s] = C_X; val[s] = 0;
			printf("m%d: acquire t%d voided by its tombstone\n", MN(m), t)
		:: else ->
			SETH(m, t); SETKEY(m, t, pq); epoch(m); bump(m); res[s] = C_OK; val[s] = cnt[m];
			printf("m%d: acquire t%d granted, counter %d\n", MN(m), t, CN(cnt[m]))
		fi
	:: h[m] != 0 && f != 0 && h[m] == f ->
		if
		:: tomb[m] & TB(t) ->
			res[s] = C_X; val[s] = f;
			printf("m%d: hand-over t%d->t%d voided\n", MN(m), f, t)
		:: else ->
			SETH(m, t); KEYLONG(m, t); epoch(m); bump(m); res[s] = C_OK; val[s] = cnt[m];
			printf("m%d: hand-over t%d->t%d took the key, counter %d\n", MN(m), f, t, CN(cnt[m]))
		fi
	:: h[m] != 0 && h[m] == t ->
		epoch(m); res[s] = C_OK; val[s] = cnt[m];
		printf("m%d: acquire t%d again: already held, counter %d\n", MN(m), t, CN(cnt[m]))
	:: else ->
		res[s] = C_NO; val[s] = h[m];
		printf("m%d: acquire t%d refused, held by t%d\n", MN(m), t, h[m])
	fi;
	if
	:: f != 0 && pq < MAXR && rnd[f] != 0 ->
		/* a round of the hand-over from f, while f may still act */
		hom[f] = hom[f] | MB(m);
		if
		:: hov & TB(f) -> relm[f] = relm[f] | MB(m)
		:: else -> skip
		fi
	:: else -> skip
	fi;
	f = 0;
	trust(t, m, s)
}

/* extend.lua, plain lock: 1 renewed, 2 vacant, 0 another holds it. A
 * renewal outlives every window its owner began before it ran (with the
 * shorter TTL, every short one); with NOSHORTEN it keeps what the key
 * outlived already. */
inline ext(t, m, s) {
	if
	:: h[m] == t -> RENEW(m, t, pq); res[s] = C_OK;
		printf("m%d: ", MN(m)); SAYEXT(t, pq); printf(" renewed"); SAYRENEW(t, pq)
	:: h[m] == 0 -> res[s] = C_NO;
		printf("m%d: ", MN(m)); SAYEXT(t, pq); printf(": vacant\n")
	:: else -> res[s] = C_X;
		printf("m%d: ", MN(m)); SAYEXT(t, pq); printf(": held by t%d\n", h[m])
	fi;
	trust(t, m, s)
}

inline sayRel(m, t, s) {
	if
	:: val[s] == M_RB || val[s] == M_RBOLD -> printf("m%d: release.lua, roll-back of t%d: ", MN(m), t)
	:: else -> printf("m%d: release.lua, release of t%d: ", MN(m), t)
	fi
}

/* release.lua: delete where held; the tombstone as the mode says. */
inline rel(t, m, s) {
	if
	:: h[m] == t ->
		SETH(m, 0); res[s] = C_OK;
		if
		:: val[s] == M_RB || val[s] == M_RELT -> tomb[m] = tomb[m] | TB(t)
		:: else -> skip
		fi;
		sayRel(m, t, s); printf("deleted");
		if
		:: val[s] == M_RB || val[s] == M_RELT -> printf(", tombstone left\n")
		:: else -> printf("\n")
		fi
	:: else ->
		res[s] = C_NO;
		if
		:: val[s] != M_RELP -> tomb[m] = tomb[m] | TB(t)
		:: else -> skip
		fi;
		sayRel(m, t, s); printf("not held");
		if
		:: val[s] != M_RELP -> printf(", tombstone left\n")
		:: else -> printf("\n")
		fi
	fi;
	if
	:: val[s] == M_RB || val[s] == M_RBOLD -> rbm[t] = rbm[t] | MB(m)
	:: else -> relm[t] = relm[t] | MB(m)
	fi
}

/* fence.lua: counter = max(counter, fence), owner-checked. */
inline fen(t, m, s) {
	if
	:: h[m] == t ->
		if
		:: cnt[m] < tfence[t] -> cnt[m] = tfence[t]
		:: else -> skip
		fi;
		if
		:: cnt[m] > hi -> hi = cnt[m]
		:: else -> skip
		fi;
		res[s] = C_OK;
		printf("m%d: fence.lua t%d: counter raised to %d\n", MN(m), t, CN(tfence[t]))
	:: else -> res[s] = C_NO;
		printf("m%d: fence.lua t%d: not held\n", MN(m), t)
	fi
}

/* The master of slot s runs the request's script. */
inline serve(s) {
	pt = STOK(s); pq = SKIND(s); pm = SMAS(s);
	if
	:: pq < MAXR || ISKRT(pq) -> acq(pt, pm, s)
	:: pq == KF -> fen(pt, pm, s)
	:: pq == KRB -> rel(pt, pm, s)
	:: ISKX(pq) -> ext(pt, pm, s)
	fi;
	pt = 0; pq = 0; pm = 0
}

#if NX > 1
#define SAYRT(t, k) printf("retake %d of t%d", XOF(k) + 1, t)
#define SAYRTOF(t, k) SAYRT(t, k)
#define SAYXOF(t, k) SAYEXT(t, k)
#else
#define SAYRT(t, k) printf("retake t%d", t)
#define SAYRTOF(t, k) printf("retake of t%d", t)
#define SAYXOF(t, k) printf("extend of t%d", t)
#endif

/* The reply reaches the client: an extension that reached a quorum
 * retakes a master it finds vacant (Lock.retake), for late answers too. */
inline answered(s) {
	st[s] = S_GOT;
	pt = STOK(s); pm = SMAS(s);
	if
	:: ISKX(SKIND(s)) && (extok & XB(pt, XOF(SKIND(s)))) && CODE(s) == C_NO && !BUSY(SL(pt, KRTN(XOF(SKIND(s))), pm)) ->
		st[SL(pt, KRTN(XOF(SKIND(s))), pm)] = S_DEFER;
		printf("c%d: ", OWNER(pt)); SAYRT(pt, SKIND(s)); printf(" on m%d (late answer)\n", MN(pm))
	:: else -> skip
	fi;
	/* an answer to an acquisition that is over: only whether it was a
	 * refusal is read again (by the roll-back) */
	if
	:: (ISKRT(SKIND(s)) || (SKIND(s) < MAXR && !(ct[OWNER(pt)] == pt && (cph[OWNER(pt)] == P_ROUND || cph[OWNER(pt)] == P_HEAR)))) ->
		res[s] = res[s] & 3; val[s] = 0
	:: else -> skip
	fi;
	pt = 0; pm = 0
}

/* ------------------------------------------------------ sending requests */

#if MAXR == 1
#define ROUNDS_IDLE(t,m) (!BUSY(SL(t,0,m)))
#define REFUSED_THROUGHOUT(t,m) (REFUSED(t,0,m))
#define ROUND_NOREP(t,m) (st[SL(t,0,m)] == S_NOREP)
#elif MAXR == 2
#define ROUNDS_IDLE(t,m) (!BUSY(SL(t,0,m)) && !BUSY(SL(t,1,m)))
#define REFUSED_THROUGHOUT(t,m) (REFUSED(t,0,m) && (rnd[t] < 2 || REFUSED(t,1,m)))
#define ROUND_NOREP(t,m) (st[SL(t,0,m)] == S_NOREP || st[SL(t,1,m)] == S_NOREP)
#else
#error MAXR must be 1 or 2
#endif
#define REFUSED(t,k,m) (st[SL(t,k,m)] == S_GOT && CODE(SL(t,k,m)) != C_OK)

/* The lock's trail on master m (lock.go): its acquisition rounds and its
 * retakes. A retake is on the trail from the moment the extension that
 * starts it decides (Lock.retake), and first waits for that extension's
 * answer there: while an extension of the token that succeeded has its
 * request still out, that request is on the trail too. A retake whose
 * extension answer was not "vacant" is never sent, and is not unsure. */
#if NX == 1
#define XTRAILIDLE(t,m) (!BUSY(SL(t,KRT,m)) && !(BUSY(SL(t,KX,m)) && (extok & TB(t))))
#define XTRAILNOREP(t,m) (st[SL(t,KRT,m)] == S_NOREP)
#else
#define XPAIRIDLE(t,m,i) (!BUSY(SL(t,KRTN(i),m)) && !(BUSY(SL(t,KXN(i),m)) && (extok & XB(t,i))))
#define XTRAILIDLE(t,m) (XPAIRIDLE(t,m,0) && XPAIRIDLE(t,m,1))
#define XTRAILNOREP(t,m) (st[SL(t,KRTN(0),m)] == S_NOREP || st[SL(t,KRTN(1),m)] == S_NOREP)
#endif
#define TRAILIDLE(t,m) (ROUNDS_IDLE(t,m) && XTRAILIDLE(t,m))
#define TRAILNOREP(t,m) (ROUND_NOREP(t,m) || XTRAILNOREP(t,m))
/* The hand-over from t (t's client's next token) was granted on master m
 * in its last round. */
#define HOGRANTED(t,m) (tfrom[(t)+1] == (t) && rnd[(t)+1] > 0 && \
	st[SL((t)+1, rnd[(t)+1] - 1, m)] == S_GOT && CODE(SL((t)+1, rnd[(t)+1] - 1, m)) == C_OK)
/* What a release waits for on master m, and whether it leaves the
 * tombstone there: with REL_WAIT the trail; without, only the rounds. */
#define RELREADY(t,m) (REL_WAIT -> TRAILIDLE(t,m) : ROUNDS_IDLE(t,m))
#define RELTOMB(t,m) (REL_WAIT && TRAILNOREP(t,m))

/* Whether the deferred request in slot s may go: a hand-over's acquire
 * once the old lock's trail returned at its master (acquireRound's
 * after.settle; with HO_WAIT it already has, everywhere, before the
 * hand-over began; without, only the rounds are waited for); a roll-back
 * once this attempt's rounds returned there; a release once what RELREADY
 * names returned there; anything else at once. Sets y. */
inline ready(s) {
	pt = STOK(s); pq = SKIND(s); pm = SMAS(s);
	if
	:: pq < MAXR && tfrom[pt] != 0 && HO_WAIT > 0 -> y = TRAILIDLE(tfrom[pt], pm)
	:: pq == KRB && val[s] == M_RELHO -> y = RELREADY(pt, pm) && ROUNDS_IDLE(pt + 1, pm)
	:: pq < MAXR && tfrom[pt] != 0 -> y = ROUNDS_IDLE(tfrom[pt], pm)
	:: pq == KRB && val[s] == M_ROLL -> y = ROUNDS_IDLE(pt, pm)
	:: pq == KRB && val[s] == M_REL -> y = RELREADY(pt, pm)
	:: else -> y = 1
	fi;
	pt = 0; pq = 0; pm = 0
}

/* Sets s to 1 + the first slot whose deferred request may go, or 0. */
inline findReady() {
	s = 0;
	for (i : 0 .. NS-1) {
		if
		:: s == 0 && st[i] == S_DEFER ->
			ready(i);
			if
			:: y -> s = i + 1
			:: else -> skip
			fi;
			y = 0
		:: else -> skip
		fi
	}
	i = 0
}

#define NOTLANDED(t, m) \
	rbm[t] = rbm[t] | MB(m); \
	PROP(3, h[m] != t)

/* The request of slot s is held back in the network: dq stays sorted, so
 * that the same requests held back make the same state. */
inline hold(s) {
	printf("the network holds back "); sayReq(s); printf("\n");
	net[s] = 1;
	w1 = s + 1;
	for (i : 0 .. DELAYS-1) {
		if
		:: w1 != 0 && (dq[i] == 0 || dq[i] > w1) -> w2 = dq[i]; dq[i] = w1; w1 = w2
		:: else -> skip
		fi
	}
	i = 0; w1 = 0; w2 = 0
}

/* The request of slot s leaves the network. */
inline unhold(s) {
	net[s] = 0;
	w1 = 0;
	for (i : 0 .. DELAYS-1) {
		if
		:: dq[i] == s + 1 -> w1 = 1
		:: else -> skip
		fi;
		if
		:: w1 && i + 1 < DELAYS -> dq[i] = dq[i+1]
		:: w1 && i + 1 == DELAYS -> dq[i] = 0
		:: else -> skip
		fi
	}
	i = 0; w1 = 0
}

/* A fan-out decides within its node timeout, a tenth of its TTL at most
 * (fanout.Run, Client.nodeTimeout): a key set or renewed after an
 * extension began, or a quarantine begun after, outlasts the extension,
 * and does not end its window while it is under way. With two TTLs this
 * matters: a short window ending leaves an earlier long one running. */
#if NX > 1
#define XRUNS(c, w, sh) (cph[c] == P_EXT && (w) >= cxw[c] && (!(sh) || XS(ct[c], XK(c))))
#define EXPIRES(m) (!XRUNS(OWNER(h[m]), (kw[m] > 0 -> kw[m] - 1 + RESERVE : 0), 0) && \
	!XRUNS(OWNER(h[m]), (kwS[m] > 0 -> kwS[m] - 1 + RESERVE : 0), 1))
#define QRUNS(m, c) (GUARD_WIN && XRUNS(c, rw[(m)*NC + (c)], 0))
#if NC == 2
#define QENDS(m) (!QRUNS(m, 0) && !QRUNS(m, 1))
#else
#define QENDS(m) (!QRUNS(m, 0) && !QRUNS(m, 1) && !QRUNS(m, 2))
#endif
#else
#define EXPIRES(m) true
#define QENDS(m) true
#endif

/* Time, read lazily where a master runs a script: its key may have
 * expired, once the windows it outlives have ended (they end now if they
 * had not); its restart quarantine may have ended, once every window begun
 * before the restart has ended. */
inline timeAt(m) {
	if
	:: h[m] != 0 && EXPIRES(m) -> d_step {
		x = OWNER(h[m]); w1 = (kw[m] > 0 -> kw[m] - 1 + RESERVE : 0);
		endWin(x, w1);
#if NX > 1
		w1 = (kwS[m] > 0 -> kwS[m] - 1 + RESERVE : 0); endWinS(x, w1);
#endif
		x = 0; w1 = 0;
		printf("m%d: t%d expires\n", MN(m), h[m]); SETH(m, 0) }
	:: true -> skip
	fi;
	if
	:: quar[m] && QENDS(m) -> d_step {
		if
		:: GUARD_WIN ->
			for (i : 0 .. NC-1) {
				w1 = rw[m*NC + i]; endWin(i, w1)
			};
			i = 0; w1 = 0
		:: else -> skip
		fi;
		printf("m%d: out of quarantine\n", MN(m)); quar[m] = 0 }
	:: true -> skip
	fi
}

/* The queue (QUEUE): where the acquire of slot s would find the key free,
 * the master's queue may have another waiter at its head, and refuse it. */
#define QUEUEAT(s) \
	if \
	:: QUEUE && (SKIND(s) < MAXR || ISKRT(SKIND(s))) && h[SMAS(s)] == 0 -> qn = 1 \
	:: true -> skip \
	fi

/* Send the deferred request of slot s: answered at once, or held back. A
 * roll-back where the rounds turned out to be refusals is not sent. */
inline sendSlot(s) {
	d_step {
		pt = STOK(s); pm = SMAS(s); y = 1;
		if
		:: SKIND(s) == KRB && val[s] == M_ROLL && REFUSED_THROUGHOUT(pt, pm) ->
			st[s] = S_IDLE; val[s] = 0; NOTLANDED(pt, pm); y = 0
		:: SKIND(s) == KRB && val[s] == M_ROLL ->
			val[s] = (RB_TOMB -> M_RB : M_RBOLD)
		:: SKIND(s) == KRB && val[s] == M_REL ->
			val[s] = (RELTOMB(pt, pm) -> M_RELT : M_RELP)
		:: SKIND(s) == KRB && val[s] == M_RELHO && HOGRANTED(pt, pm) ->
			/* the key passed on here: nothing to release */
			st[s] = S_IDLE; val[s] = 0; y = 0
		:: SKIND(s) == KRB && val[s] == M_RELHO ->
			val[s] = ((RELTOMB(pt, pm) && HO_WAIT != 5) -> M_RELT : M_RELP)
		:: SKIND(s) < MAXR && tfrom[pt] != 0 && (HO_WAIT == 3 || HO_WAIT == 5) && TRAILNOREP(tfrom[pt], pm) ->
			/* a request of the old lock may still land here: not sent */
			printf("c%d: the hand-over t%d->t%d is not sent to m%d: a request of t%d got no reply there\n",
				OWNER(pt), tfrom[pt], pt, MN(pm), tfrom[pt]);
			st[s] = S_UNSENT; y = 0
		:: else -> skip
		fi;
		st[s] = (y -> S_WAIT : st[s]);
		pt = 0; pm = 0
	}
	if
	:: y == 0 -> skip
	:: y != 0 -> pm = SMAS(s); timeAt(pm); QUEUEAT(s); d_step { pm = 0; serve(s); answered(s); y = 0; qn = 0 }
	:: y != 0 && dq[DELAYS-1] == 0 -> d_step { hold(s); y = 0 }
	fi
}

/* ------------------------------------------------------------ client */

#define ISYES(t,k,m)   (st[SL(t,k,m)] == S_GOT && (res[SL(t,k,m)] & (3|F_VT)) == (C_OK|F_VT))

/* One fan-out of the acquire script (Client.acquireRound). */
inline sendRound(c) {
	for (i : 0 .. NM-1) {
		st[SL(ct[c], cr[c], i)] = S_DEFER
	}
	i = 0
}

/* Client.attempt: a new token; its validity window begins now. */
inline start(c) {
	ct[c] = TBASE(c) + ck[c] + 1; ck[c]++;
	tfrom[ct[c]] = co[c]; rnd[ct[c]] = 1; cr[c] = 0;
	wn[c]++; caw[c] = wn[c];
	printf("c%d: attempt t%d", c, ct[c]);
	if
	:: co[c] != 0 -> printf(", a hand-over from t%d", co[c])
	:: else -> skip
	fi;
	printf(" (validity window %d)\n", WN(c, caw[c]));
	sendRound(c);
	cph[c] = P_ROUND
}

/* Forget the replies of the acquisition but whether each was a refusal,
 * which the roll-back still reads. */
inline forgetRounds(c) {
	for (i : 0 .. MAXR*NM-1) {
		s2 = (ct[c]-1)*NKIND*NM + i;
		res[s2] = res[s2] & 3; val[s2] = 0
	}
	i = 0; s2 = 0
}

inline release(c, z) {
	printf("c%d: Release t%d\n", c, z);
	crt[c] = z; tfin = tfin | TB(z);
	for (i : 0 .. NM-1) {
		s2 = SL(z, KRB, i); st[s2] = S_DEFER; val[s2] = M_REL
	}
	i = 0; s2 = 0;
	cph[c] = P_REL
}

/* Client.rollback: every master not refused throughout, once its rounds
 * returned there. A failed hand-over is followed by a plain release. */
inline fail(c) {
	printf("c%d: t%d failed, rolls back\n", c, ct[c]);
	forgetRounds(c);
	tfin = tfin | TB(ct[c]);
	for (i : 0 .. NM-1) {
		s2 = SL(ct[c], KRB, i);
		if
		:: REFUSED_THROUGHOUT(ct[c], i) -> NOTLANDED(ct[c], i)
		:: else -> st[s2] = S_DEFER; val[s2] = M_ROLL
		fi
	}
	i = 0; s2 = 0;
	cyes[c] = 0; cr[c] = 0; clag[c] = 0; cneed[c] = 0; caw[c] = 0; ct[c] = 0;
	if
	:: co[c] != 0 -> release(c, co[c]); co[c] = 0
	:: else -> cph[c] = P_IDLE
	fi
}

/* The lock is handed out. */
inline success(c) {
	printf("c%d: holds t%d, fence %d\n", c, ct[c], CN(tfence[ct[c]]));
	for (i : 0 .. NC-1) {
		PROP(1, i == c || !(bel[i] && VALIDLW(i)))
	}
	i = 0;
	PROP(2, tfence[ct[c]] > lastF);
	lastF = tfence[ct[c]];
	forgetRounds(c);
	bel[c] = 1; lw[c] = caw[c]; cyes[c] = 0; cr[c] = 0; clag[c] = 0; cneed[c] = 0; caw[c] = 0;
#if NX > 1
	/* an attempt has the lock's TTL */
	lws = lws & ~(1 << c);
#endif
	cph[c] = P_HELD;
	if
	:: co[c] != 0 ->
		/* Release of the old lock returns: handed over. */
		printf("c%d: Release t%d returns: handed over\n", c, co[c]);
		hov = hov | TB(co[c]); relm[co[c]] = relm[co[c]] | hom[co[c]]; tfin = tfin | TB(co[c]);
		if
		:: HO_WAIT >= 3 ->
			/* Lock.releaseWhereNotTaken */
			for (i : 0 .. NM-1) {
				st[SL(co[c], KRB, i)] = S_DEFER; val[SL(co[c], KRB, i)] = M_RELHO
			}
			i = 0
		:: else -> skip
		fi;
		co[c] = 0
	:: else -> skip
	fi
}

/* A window of client c that has not ended yet ends now, with those
 * before it. */
inline endWin(c, w) {
	if
	:: we[c] < w -> we[c] = w; printf("c%d: validity window %d has ended\n", c, WN(c, w))
	:: else -> skip
	fi
}

#if NX > 1
/* Every short window of client c up to w ends now (a long one among them,
 * begun earlier, may still run). */
inline endWinS(c, w) {
	if
	:: we[c] < w && weS[c] < w -> weS[c] = w;
		printf("c%d: every short validity window up to %d has ended\n", c, WN(c, w))
	:: else -> skip
	fi
}
/* the lock's window ends; the window of the extension under way ends */
#define ENDLW(c) if :: LWS(c) -> endWinS(c, lw[c]) :: else -> endWin(c, lw[c]) fi
#define ENDX(c) if :: XS(ct[c], XK(c)) -> endWinS(c, cxw[c]) :: else -> endWin(c, cxw[c]) fi
#else
#define ENDLW(c) endWin(c, lw[c])
#define ENDX(c) endWin(c, cxw[c])
#endif

/* chooseFence: the largest counter of the quorum; lagging members raised
 * until a quorum is at the fence. */
inline settle(c) {
	f = 0;
	for (i : 0 .. NM-1) {
		if
		:: (cyes[c] & MB(i)) && val[SL(ct[c], cr[c], i)] > f -> f = val[SL(ct[c], cr[c], i)]
		:: else -> skip
		fi
	}
	clag[c] = 0; n = 0;
	for (i : 0 .. NM-1) {
		if
		:: (cyes[c] & MB(i)) && val[SL(ct[c], cr[c], i)] < f -> clag[c] = clag[c] | MB(i)
		:: (cyes[c] & MB(i)) && val[SL(ct[c], cr[c], i)] >= f -> n++
		:: else -> skip
		fi
	}
	i = 0;
	tfence[ct[c]] = f; f = 0;
	if
	:: n >= Q || !WRITEBACK -> clag[c] = 0; n = 0; cph[c] = P_FIN
	:: else ->
		cneed[c] = Q - n; n = 0;
		printf("c%d: t%d chooses fence %d, raises it on lagging masters\n", c, ct[c], CN(tfence[ct[c]]));
		for (i : 0 .. NM-1) {
			if
			:: clag[c] & MB(i) -> st[SL(ct[c], KF, i)] = S_DEFER
			:: else -> skip
			fi
		}
		i = 0;
		cph[c] = P_FENCE
	fi
}

#define DROPYES(M) :: (cyes[c] & MB(M)) -> cyes[c] = cyes[c] & ~MB(M); n--

/* The round's fan-out has decided: a quorum of counted votes, or out of
 * reach. res.Yes holds the first Q votes to arrive; of replies that came
 * in one step, any Q may have been first. */
inline decide(c) {
	d_step {
		cyes[c] = 0; n = 0;
		for (i : 0 .. NM-1) {
			s2 = SL(ct[c], cr[c], i);
			if
			:: st[s2] == S_GOT && (res[s2] & (3|F_VT)) == (C_OK|F_VT) ->
				cyes[c] = cyes[c] | MB(i); n++;
				PROP(5, res[s2] & F_RT)
			:: else -> skip
			fi
		}
		i = 0; s2 = 0
	}
	do
	:: n > Q -> if FORM(DROPYES) fi
	:: else -> break
	od;
	skip;
	d_step {
		if
		:: n >= Q -> n = 0; settle(c)
		:: else -> n = 0; cyes[c] = 0; cph[c] = P_HEAR
		fi
	}
}

/* Client.wonSplit: every master answered, granted or refused, some refused,
 * and no other holder holds as many masters (a tie goes to the smaller
 * token). Masters are counted whether or not they vote: a grant in
 * quarantine counts. Sets kk. */
inline keeps(c) {
	y = 0; rr = 0;
	for (i : 0 .. NM-1) {
		s2 = SL(ct[c], cr[c], i);
		if
		:: st[s2] == S_GOT && CODE(s2) == C_OK -> y++
		:: st[s2] == S_GOT && CODE(s2) != C_OK -> rr++
		:: else -> skip
		fi
	}
	kk = (y > 0 && rr > 0 && y + rr == NM);
	for (i : 0 .. NM-1) {
		s2 = SL(ct[c], cr[c], i);
		if
		:: kk && st[s2] == S_GOT && CODE(s2) != C_OK ->
			hh = val[s2]; v = 0;
			for (j : 0 .. NM-1) {
				s = SL(ct[c], cr[c], j);
				if
				:: st[s] == S_GOT && CODE(s) != C_OK && val[s] == hh -> v++
				:: else -> skip
				fi
			};
			if
			:: v > y || (v == y && hh < ct[c]) -> kk = 0
			:: else -> skip
			fi
		:: else -> skip
		fi
	}
	i = 0; j = 0; s = 0; s2 = 0; y = 0; rr = 0; hh = 0; v = 0
}

/* The round failed: a split winner asks again while its validity lasts,
 * the rest roll back. */
inline hear(c) {
	d_step { keeps(c) };
	if
	:: kk && cr[c] + 1 < MAXR && VALID(c, caw[c]) -> d_step {
		printf("c%d: t%d won the split, asks again\n", c, ct[c]);
		cr[c]++; rnd[ct[c]] = cr[c] + 1; sendRound(c); cph[c] = P_ROUND; kk = 0 }
	:: true -> d_step {
		if
		:: kk && cr[c] + 1 < MAXR -> endWin(c, caw[c])
		:: else -> skip
		fi;
		kk = 0; fail(c) }
	fi
}

inline fenced(c) {
	n = 0;
	for (i : 0 .. NM-1) {
		if
		:: (clag[c] & MB(i)) && st[SL(ct[c], KF, i)] == S_GOT && CODE(SL(ct[c], KF, i)) == C_OK -> n++
		:: else -> skip
		fi;
		res[SL(ct[c], KF, i)] = 0
	}
	i = 0;
	if
	:: n >= cneed[c] -> n = 0; clag[c] = 0; cneed[c] = 0; cph[c] = P_FIN
	:: else -> n = 0; clag[c] = 0; cneed[c] = 0; fail(c)
	fi
}

/* Lock.extend: a new validity window begins with the extension, with the
 * lock's TTL or (sh) the shorter one. It takes the client's next pair of
 * kinds. */
inline extendStart(c, sh) {
	wn[c]++; cxw[c] = wn[c];
	printf("c%d: ", c); SAYEXT(ct[c], KXN(XI(c)));
#if NX > 1
	xsh = (xsh & ~XB(ct[c], XI(c))) | (sh -> XB(ct[c], XI(c)) : 0);
	if
	:: sh -> printf(", with the shorter TTL")
	:: else -> skip
	fi;
#endif
	printf(" (validity window %d)\n", WN(c, cxw[c]));
	extok = extok & ~XB(ct[c], XI(c));
	for (i : 0 .. NM-1) {
		st[SL(ct[c], KXN(XI(c)), i)] = S_DEFER
	}
	i = 0;
	cne[c]++;
	cph[c] = P_EXT
}

/* Counts the extension's votes into y and its refusals into n. */
inline countExt(c) {
	y = 0; n = 0;
	for (i : 0 .. NM-1) {
		s2 = SL(ct[c], KXN(XK(c)), i);
		if
		:: st[s2] == S_GOT && (res[s2] & (3|F_VT)) == (C_OK|F_VT) ->
			y++; PROP(5, res[s2] & F_RT)
		:: st[s2] == S_GOT && CODE(s2) != C_OK -> n++
		:: else -> skip
		fi
	}
	i = 0; s2 = 0
}

/* The extension reached a quorum within its validity: the lock's window
 * moves on, and vacant masters are taken back. */
inline extendedOK(c) {
	printf("c%d: t%d extended\n", c, ct[c]);
	for (i : 0 .. NC-1) {
		PROP(1, i == c || !(bel[i] && VALIDLW(i)))
	}
	lw[c] = cxw[c]; extok = extok | XB(ct[c], XK(c));
#if NX > 1
	lws = (lws & ~(1 << c)) | (XS(ct[c], XK(c)) -> (1 << c) : 0);
#endif
	for (i : 0 .. NM-1) {
		s2 = SL(ct[c], KXN(XK(c)), i);
		if
		:: st[s2] == S_GOT && CODE(s2) == C_NO && !BUSY(SL(ct[c], KRTN(XK(c)), i)) ->
			st[SL(ct[c], KRTN(XK(c)), i)] = S_DEFER;
			printf("c%d: ", c); SAYRT(ct[c], KRTN(XK(c))); printf(" on m%d\n", MN(i))
		:: else -> skip
		fi;
		res[s2] = 0
	}
	i = 0; s2 = 0; y = 0; n = 0;
	cxw[c] = 0; cph[c] = P_HELD
}

/* The extension failed; with too many masters gone, the lock is lost
 * (errGone); otherwise the watchdog may try again. The watchdog extends
 * with the TTL of the lock's window, its last extension that succeeded or
 * the attempt (Lock.TTL, Lock.renew): an extension with another is the
 * caller's Lock.Extend, whose failure loses the lock. */
inline extendedNot(c) {
	printf("c%d: extension of t%d failed\n", c, ct[c]);
	if
	:: n > NM - Q -> bel[c] = 0
#if NX > 1
	:: n <= NM - Q && XS(ct[c], XK(c)) != LWS(c) -> bel[c] = 0;
		printf("c%d: t%d is lost: Extend with a TTL other than the lock's failed\n", c, ct[c])
#endif
	:: else -> skip
	fi;
	for (i : 0 .. NM-1) {
		res[SL(ct[c], KXN(XK(c)), i)] = 0
	}
	i = 0; y = 0; n = 0;
	cxw[c] = 0; cph[c] = P_HELD
}

/* Lock.handOver: the whole trail has returned (trail.unsure). Where any
 * request of it got no reply, it may still land: the lock is not handed
 * over, and Release falls back to a plain release (Lock.release), which
 * leaves the token's tombstone on that master. Otherwise the waiter's
 * attempt takes the key over from this token. */
inline handOverOrRelease(c) {
	n = 0;
	for (i : 0 .. NM-1) {
		if
		:: TRAILNOREP(ct[c], i) -> n = 1
		:: else -> skip
		fi
	}
	i = 0;
	if
	:: n && HO_WAIT == 1 -> printf("c%d: t%d is not handed over: a request of its trail got no reply\n", c, ct[c]);
		release(c, ct[c]); ct[c] = 0
	:: else -> co[c] = ct[c]; start(c)
	fi;
	n = 0
}

inline released(c) {
	printf("c%d: Release t%d returns\n", c, crt[c]);
	for (i : 0 .. NM-1) {
		res[SL(crt[c], KRB, i)] = 0
	}
	i = 0;
	cph[c] = P_IDLE; crt[c] = 0
}

/* Sets cc to 1 + the first client whose fan-out can decide, or 0. */
inline findDecision() {
	cc = 0;
	for (j : 0 .. NC-1) {
		y = 0; rr = 0; n = 0;
		for (i : 0 .. NM-1) {
			if
			:: cph[j] == P_ROUND ->
				s2 = SL(ct[j], cr[j], i);
				y = y + (ISYES(ct[j], cr[j], i) -> 1 : 0); rr = rr + (BUSY(s2) -> 1 : 0)
			:: cph[j] == P_FENCE && (clag[j] & MB(i)) ->
				s2 = SL(ct[j], KF, i);
				y = y + ((st[s2] == S_GOT && CODE(s2) == C_OK) -> 1 : 0); rr = rr + (BUSY(s2) -> 1 : 0)
			:: cph[j] == P_EXT ->
				s2 = SL(ct[j], KXN(XK(j)), i);
				y = y + (ISYES(ct[j], KXN(XK(j)), i) -> 1 : 0); rr = rr + (BUSY(s2) -> 1 : 0)
			:: cph[j] == P_REL ->
				s2 = SL(crt[j], KRB, i);
				y = y + (st[s2] == S_GOT -> 1 : 0); rr = rr + (BUSY(s2) -> 1 : 0);
				n = n + ((st[s2] == S_GOT && CODE(s2) == C_OK) -> 1 : 0)
			:: cph[j] == P_HOWAIT -> rr = rr + (TRAILIDLE(ct[j], i) -> 0 : 1)
			:: else -> skip
			fi
		}
		if
		:: cc == 0 && (cph[j] == P_ROUND || cph[j] == P_EXT) && (y >= Q || y + rr < Q) -> cc = j + 1
		:: cc == 0 && cph[j] == P_FENCE && (y >= cneed[j] || y + rr < cneed[j]) -> cc = j + 1
		:: cc == 0 && cph[j] == P_REL && ((y >= Q && n > 0) || rr == 0) -> cc = j + 1
		:: cc == 0 && cph[j] == P_FIN -> cc = j + 1
		:: cc == 0 && cph[j] == P_HOWAIT && rr == 0 -> cc = j + 1
		:: else -> skip
		fi
	}
	i = 0; j = 0; s2 = 0; y = 0; rr = 0; n = 0
}

/* The fan-out of client c decides. */
inline act(c) {
	if
	:: cph[c] == P_ROUND -> decide(c)
	:: cph[c] == P_FENCE -> d_step { fenced(c) }
	:: cph[c] == P_FIN ->
		/* the validity left decides: the window may just have ended */
		if
		:: VALID(c, caw[c]) -> d_step { success(c) }
		:: true -> d_step { endWin(c, caw[c]); fail(c) }
		fi
	:: cph[c] == P_EXT ->
		d_step { countExt(c) };
		if
		:: y >= Q && VALIDX(c) -> d_step { extendedOK(c) }
		:: true -> d_step {
			if
			:: y >= Q -> ENDX(c)
			:: else -> skip
			fi;
			extendedNot(c) }
		fi
	:: cph[c] == P_REL -> d_step { released(c) }
	:: cph[c] == P_HOWAIT -> d_step { handOverOrRelease(c) }
	fi
}

/* Once a token's release or roll-back has begun and none of its requests
 * is outstanding, what the client remembers of them is forgotten, as the Go
 * code drops its rounds; requests still held back stay in the network, with
 * the mode a release was sent with. Once none is left in the network either,
 * the token can never act again: its tombstones, and the ghosts that watch
 * it, are cleared too (a tombstone outlives every request of its token). */
inline tidy() {
	for (j : 1 .. NT) {
		if
		:: tfin & TB(j) ->
			v = 0; n = 0;
			for (i : 0 .. NKIND*NM-1) {
				if
				:: BUSY((j-1)*NKIND*NM + i) -> v = 1
				:: else -> skip
				fi;
				if
				:: net[(j-1)*NKIND*NM + i] -> n = 1
				:: else -> skip
				fi
			};
			if
			:: !v ->
				for (i : 0 .. NKIND*NM-1) {
					s2 = (j-1)*NKIND*NM + i; st[s2] = S_IDLE; res[s2] = 0;
					if
					:: !net[s2] -> val[s2] = 0
					:: else -> skip
					fi
				}
			:: else -> skip
			fi;
			if
			:: !v && !n ->
				rbm[j] = 0; relm[j] = 0; hom[j] = 0; tfence[j] = 0; rnd[j] = 0; tfrom[j] = 0;
				extok = extok & ~TXB(j); hov = hov & ~TB(j);
#if NX > 1
				xsh = xsh & ~TXB(j);
#endif
				for (i : 0 .. NM-1) {
					tomb[i] = tomb[i] & ~TB(j)
				}
			:: else -> skip
			fi
		:: else -> skip
		fi
	}
	i = 0; j = 0; s2 = 0; v = 0; n = 0
}

#if NX > 1
/* With two TTLs, what no longer tells states apart is dropped: a short
 * lock window that has ended is none (as WSHIFT does); then nothing refers
 * to a short window up to weS, which can start again from 0. An extension
 * that has decided leaves in its pair only what can still act: a request
 * still out, or in the network, with the class it was sent with, and an
 * unsure retake. */
inline xnormalize() {
	for (j : 0 .. NC-1) {
		if
		:: LWS(j) && lw[j] <= weS[j] -> lw[j] = 0; lws = lws & ~(1 << j)
		:: else -> skip
		fi;
		weS[j] = 0
	}
	for (j : 1 .. NT) {
		for (f : 0 .. NX-1) {
			if
			:: cph[OWNER(j)] == P_EXT && ct[OWNER(j)] == j && XK(OWNER(j)) == f -> skip
			:: else ->
				n = 0; v = 0;
				for (i : 0 .. NM-1) {
					s2 = SL(j, KXN(f), i);
					if
					:: st[s2] == S_GOT || st[s2] == S_NOREP -> st[s2] = S_IDLE; res[s2] = 0
					:: else -> skip
					fi;
					n = n | BUSY(s2); v = v | BUSY(s2) | net[s2];
					s2 = SL(j, KRTN(f), i);
					if
					:: st[s2] == S_GOT -> st[s2] = S_IDLE; res[s2] = 0
					:: else -> skip
					fi;
					v = v | BUSY(s2) | net[s2]
				};
				if
				:: !n -> extok = extok & ~XB(j, f)
				:: else -> skip
				fi;
				if
				:: !v -> xsh = xsh & ~XB(j, f)
				:: else -> skip
				fi
			fi
		}
	}
	i = 0; j = 0; f = 0; n = 0; v = 0; s2 = 0
}
#endif

#define SHIFT(x) if :: (x) > 0 -> x = x - v :: else -> skip fi
#define LOWER(x) if :: (x) > 0 && (x) < v -> v = x :: else -> skip fi
#define COUNTER_SLOT(s2) (st[s2] == S_GOT && CODE(s2) == C_OK && (SKIND(s2) < MAXR || ISKRT(SKIND(s2))))
#define WSHIFT(x) if :: (x) > f -> x = x - f :: else -> x = 0 fi
/* a key's bounds */
#if NX > 1
#define KWSHIFT(i) WSHIFT(kw[i]); WSHIFT(kwS[i])
#else
#define KWSHIFT(i) WSHIFT(kw[i])
#endif

/* Only differences of counters, and of windows, matter: both are shifted
 * down so that states that differ only by how many grants or windows came
 * before are one state. A counter of 0 (no floor) and a window of 0 (none,
 * or ended) keep their meaning. */
inline normalize() {
	v = 255;
	LOWER(hi); LOWER(lastF);
	for (i : 0 .. NM-1) {
		LOWER(cnt[i])
	}
	for (i : 1 .. NT) {
		LOWER(tfence[i])
	}
	for (i : 0 .. NS-1) {
		if
		:: COUNTER_SLOT(i) -> LOWER(val[i])
		:: else -> skip
		fi
	}
	if
	:: v > 1 && v < 255 ->
		v = v - 1; coff = coff + v;
		SHIFT(hi); SHIFT(lastF);
		for (i : 0 .. NM-1) {
			SHIFT(cnt[i])
		}
		for (i : 1 .. NT) {
			SHIFT(tfence[i])
		}
		for (i : 0 .. NS-1) {
			if
			:: COUNTER_SLOT(i) -> SHIFT(val[i])
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
	for (j : 0 .. NC-1) {
		f = we[j];
		if
		:: f > 0 ->
			woff[j] = woff[j] + f;
			wn[j] = wn[j] - f; we[j] = 0;
			WSHIFT(caw[j]); WSHIFT(cxw[j]); WSHIFT(lw[j]);
#if NX > 1
			WSHIFT(weS[j]);
#endif
			for (i : 0 .. NM-1) {
				if
				:: h[i] != 0 && OWNER(h[i]) == j -> KWSHIFT(i)
				:: else -> skip
				fi;
				WSHIFT(rw[i*NC + j])
			}
		:: else -> skip
		fi
#if NX > 1
		;
		if
		:: lw[j] == 0 -> lws = lws & ~(1 << j)
		:: else -> skip
		fi
#endif
	}
	for (i : 0 .. NM-1) {
		if
		:: h[i] == 0 -> kw[i] = 0
		:: else -> skip
		fi
#if NX > 1
		;
		/* a short bound already passed bounds nothing */
		if
		:: h[i] == 0 || kwS[i] <= weS[OWNER(h[i])] -> kwS[i] = 0
		:: else -> skip
		fi
#endif
	}
#if NX > 1
	xnormalize();
#endif
	i = 0; j = 0; v = 0; f = 0
}


/* Masters are interchangeable: nothing in the protocol or the properties
 * tells one from another. So at the end of each step they are sorted by
 * everything the state holds about each of them, and states that differ
 * only by a renaming of the masters are one state (symmetry reduction). */
#define CMPF(x, y) \
	if \
	:: cmpr == 0 && (x) < (y) -> cmpr = 1 \
	:: cmpr == 0 && (x) > (y) -> cmpr = 2 \
	:: else -> skip \
	fi
#define BIT(x, m) (((x) >> (m)) & 1)
#define BSWAP(x, a, b) \
	if \
	:: BIT(x, a) != BIT(x, b) -> x = x ^ (MB(a) | MB(b)) \
	:: else -> skip \
	fi
#define VSWAP(x, y) v = x; x = y; y = v

/* cmpr: 0 when masters a and b hold the same, 1 when a sorts first, 2 when b does. */
inline cmpMasters(a, b) {
	cmpr = 0;
	CMPF(h[(a)], h[(b)]); CMPF(kw[(a)], kw[(b)]); CMPF(cnt[(a)], cnt[(b)]);
	CMPF(tomb[(a)], tomb[(b)]); CMPF(quar[(a)], quar[(b)]);
	CMPF(stale[(a)], stale[(b)]); CMPF(dis[(a)], dis[(b)]);
	CMPF(ph[(a)], ph[(b)]);
#if NX > 1
	CMPF(kwS[(a)], kwS[(b)]);
#endif
	for (i : 0 .. NC-1) {
		CMPF(rw[(a)*NC + i], rw[(b)*NC + i]);
		CMPF(BIT(cyes[i], (a)), BIT(cyes[i], (b)));
		CMPF(BIT(clag[i], a), BIT(clag[i], b))
	}
	for (i : 1 .. NT) {
		CMPF(BIT(rbm[i], a), BIT(rbm[i], b));
		CMPF(BIT(relm[i], a), BIT(relm[i], b));
		CMPF(BIT(hom[i], a), BIT(hom[i], b))
	}
	for (i : 0 .. NT*NKIND-1) {
		CMPF(net[i*NM + (a)], net[i*NM + (b)]);
		CMPF(st[i*NM + (a)], st[i*NM + (b)]);
		CMPF(res[i*NM + (a)], res[i*NM + (b)]);
		CMPF(val[i*NM + (a)], val[i*NM + (b)])
	}
	i = 0
}

inline swapMasters(a, b) {
	VSWAP(mname[(a)], mname[(b)]);
	VSWAP(h[(a)], h[(b)]); VSWAP(kw[(a)], kw[(b)]); VSWAP(cnt[(a)], cnt[(b)]);
	VSWAP(tomb[(a)], tomb[(b)]); VSWAP(quar[(a)], quar[(b)]);
	VSWAP(stale[(a)], stale[(b)]); VSWAP(dis[(a)], dis[(b)]);
	VSWAP(ph[(a)], ph[(b)]);
#if NX > 1
	VSWAP(kwS[(a)], kwS[(b)]);
#endif
	for (i : 0 .. NC-1) {
		VSWAP(rw[(a)*NC + i], rw[(b)*NC + i]);
		BSWAP(cyes[i], a, b); BSWAP(clag[i], a, b)
	}
	for (i : 1 .. NT) {
		BSWAP(rbm[i], a, b); BSWAP(relm[i], a, b); BSWAP(hom[i], a, b)
	}
	for (i : 0 .. NT*NKIND-1) {
		VSWAP(net[i*NM + (a)], net[i*NM + (b)]);
		VSWAP(st[i*NM + (a)], st[i*NM + (b)]);
		VSWAP(res[i*NM + (a)], res[i*NM + (b)]);
		VSWAP(val[i*NM + (a)], val[i*NM + (b)])
	}
	i = 0; v = 0
}

#define CSWAP(a, b) cmpMasters(a, b); if :: cmpr == 2 -> swapMasters(a, b) :: else -> skip fi

inline canon() {
#if SYMMETRY
#if NM == 3
	/* a sorting network */
	CSWAP(0, 1); CSWAP(1, 2); CSWAP(0, 1);
#else
	/* a bubble sort, in a loop: five copies of a network do not fit in
	 * one d_step */
	for (ca : 1 .. NM-1) {
		for (cb : 0 .. NM-2) {
			cmpMasters(cb, cb+1);
			if
			:: cmpr == 2 -> swapMasters(cb, cb+1)
			:: else -> skip
			fi
		}
	}
	ca = 0; cb = 0;
#endif
	/* the slots held back, renamed with their masters */
	j = 0;
	for (i : 0 .. DELAYS-1) {
		dq[i] = 0
	}
	for (i : 0 .. NS-1) {
		if
		:: net[i] -> dq[j] = i + 1; j++
		:: else -> skip
		fi
	}
	i = 0; j = 0; cmpr = 0
#else
	skip
#endif
}

/* Whatever follows at once: requests whose turn has come are sent, and
 * fan-outs that can decide decide, until nothing more follows. */
inline propagate() {
	do
	:: d_step { findReady() };
		if
		:: s != 0 -> s--; sendSlot(s); s = 0
		:: else ->
			d_step { findDecision() };
			if
			:: cc != 0 -> cc--; act(cc); cc = 0
			:: else -> break
			fi
		fi
	od;
	skip;
	d_step { tidy(); normalize(); canon() }
}

/* ------------------------------------------------------------- world */

/* What every restart does: tombstones are gone (none of their tokens has a
 * request left that could arrive: a roll-back or release runs on a master
 * only once the token's requests there have returned, and those given up
 * on, still in the network, are lost with the old connections), the
 * quarantine begins, and the old connections are dropped: requests on them
 * are lost, except those whose goroutine still waits, which dials again and
 * resends them. */
inline reboot(M) {
	tomb[M] = 0; quar[M] = 1; ph[M] = 0;
	for (i : 0 .. NC-1) {
		rw[M*NC + i] = wn[i]
	}
	for (j : 0 .. NT*NKIND-1) {
		s2 = j*NM + M;
		if
		:: net[s2] && st[s2] != S_WAIT -> unhold(s2)
		:: else -> skip
		fi
	}
	i = 0; j = 0; s2 = 0
}

/* A crash and an immediate restart, empty: keys, counter, floor, stamp and
 * tombstones are gone. With no floor, the first count starts from the
 * clock (bump), which stands for fenceEpoch's new epoch too. */
inline restart(M) {
	SETH(M, 0); cnt[M] = 0; stale[M] = 0; reboot(M)
}

/* A failover to a replica that lagged, or a restart from an RDB or AOF
 * file older than the last writes: the master comes back with an older
 * copy of its data. The copy holds the key as it is now, or the key as it
 * was before its present holder (a key deleted since comes back), or no
 * key; its counter is as now, or older than every fence handed out. A key
 * in the copy keeps the expiry it had, which may be any time now (kw 0).
 * The fence stamp never travels with the data to another server or
 * process, so the master's data is stale (stale) until fenceEpoch runs.
 * The guard sees a new run_id, or a promotion, and quarantines it. The
 * write does not go through SETH: no request put the key there. */
inline replace(M) {
	if
	:: x = h[M]
	:: ph[M] != 0 && ph[M] != h[M] -> x = ph[M]
	:: h[M] != 0 -> x = 0
	fi;
	if
	:: EPOCH && SEED ->
		/* the counter is never read before fenceEpoch replaces it: one
		 * value stands for all */
		cnt[M] = 0
	:: else ->
		if
		:: skip
		:: cnt[M] != 1 -> cnt[M] = 1
		fi
	fi;
	d_step {
		printf("m%d: comes back with an older copy of its data: ", MN(M));
		if
		:: x != 0 -> printf("key of t%d", x)
		:: else -> printf("no key")
		fi;
		if
		:: EPOCH && SEED -> printf(", counters stale\n")
		:: else -> printf(", counter %d\n", CN(cnt[M]))
		fi;
		h[M] = x; kw[M] = 0; x = 0; stale[M] = EPOCH;
#if NX > 1
		kwS[M] = 0;
#endif
		reboot(M)
	}
}

/* ------------------------------------------------------------ events */

#define DQS(P) (dq[P] - 1)
/* Whether anything waits for the request of slot s to return: the fan-out
 * it belongs to, a release, roll-back or hand-over that waits for it, or an
 * extension that cannot begin before it. Only then does giving up on it
 * make a difference; a request nothing waits for is answered when it
 * arrives, or, if it never does, given up on when it is lost. */
#define BC(s) OWNER(STOK(s))
/* the next token, a hand-over from this one, waits at this master */
#if MAXR == 1
#define HOWAITS(s) (STOK(s) < NT && tfrom[STOK(s)+1] == STOK(s) && \
	st[SL(STOK(s)+1, 0, SMAS(s))] == S_DEFER)
#else
#define HOWAITS(s) (STOK(s) < NT && tfrom[STOK(s)+1] == STOK(s) && \
	(st[SL(STOK(s)+1, 0, SMAS(s))] == S_DEFER || st[SL(STOK(s)+1, 1, SMAS(s))] == S_DEFER))
#endif
/* an extension of the held lock cannot begin before it: a retake, or the
 * extend of the pair the next extension takes */
#if NX == 1
#define XWAITS(s) (SKIND(s) == KX || SKIND(s) == KRT)
#else
#define XWAITS(s) (ISKRT(SKIND(s)) || \
	(ISKX(SKIND(s)) && XOF(SKIND(s)) == XI(BC(s)) && cne[BC(s)] < NE))
#endif
#define BLOCKING(s) ( \
	(SKIND(s) < MAXR && cph[BC(s)] == P_ROUND && ct[BC(s)] == STOK(s) && cr[BC(s)] == SKIND(s)) || \
	(SKIND(s) == KF && cph[BC(s)] == P_FENCE && ct[BC(s)] == STOK(s)) || \
	(SKIND(s) == KXN(XK(BC(s))) && cph[BC(s)] == P_EXT && ct[BC(s)] == STOK(s)) || \
	(SKIND(s) == KRB && cph[BC(s)] == P_REL && crt[BC(s)] == STOK(s)) || \
	(XWAITS(s) && cph[BC(s)] == P_HELD && ct[BC(s)] == STOK(s)) || \
	(cph[BC(s)] == P_HOWAIT && ct[BC(s)] == STOK(s) && \
		(SKIND(s) < MAXR || ISKRT(SKIND(s)) || (ISKX(SKIND(s)) && (extok & XB(STOK(s), XOF(SKIND(s))))))) || \
	st[SL(STOK(s), KRB, SMAS(s))] == S_DEFER || \
	HOWAITS(s))
#define SEL_DELIVER(P) :: dq[P] != 0 -> ev = EV_DELIVER; ea = DQS(P)
#define SEL_TIMEOUT(P) :: dq[P] != 0 && st[DQS(P)] == S_WAIT && BLOCKING(DQS(P)) -> ev = EV_TIMEOUT; ea = DQS(P)
#define SEL_DROP(P)    :: dq[P] != 0 -> ev = EV_DROP; ea = DQS(P)
/* a hand-over's acquire gives up while it waits for the old lock's rounds */
#define SEL_HOTO(C,M)  :: cph[C] == P_ROUND && co[C] != 0 && st[SL(ct[C], cr[C], M)] == S_DEFER -> \
	ev = EV_TIMEOUT; ea = SL(ct[C], cr[C], M)
#define SEL_HOTOC(C) FORM2(SEL_HOTO, C)
#define SEL_RESTART(M) :: restarts < NRS && (RESTARTS & 1) -> ev = EV_RESTART; ea = M
#define SEL_REPLACE(M) :: restarts < NRS && (RESTARTS & 2) -> ev = EV_REPLACE; ea = M
#define SEL_EVICT(M)   :: dis[M] && h[M] != 0 -> ev = EV_EVICT; ea = M
#define SEL_START(C)   :: cph[C] == P_IDLE && ck[C] < NKC(C) -> ev = EV_START; ea = C
#define SEL_HEAR(C)    :: cph[C] == P_HEAR -> ev = EV_HEAR; ea = C
#define SEL_EXTEND(C)  :: ((EXTEND >> C) & 1) && cph[C] == P_HELD && bel[C] && cne[C] < NE && XIDLE(C) -> ev = EV_EXTEND; ea = C
#if NX > 1
#define SEL_EXTENDS(C) :: ((EXTEND >> C) & 1) && ((SHORT >> C) & 1) && cph[C] == P_HELD && bel[C] && cne[C] < NE && XIDLE(C) -> \
	ev = EV_EXTENDS; ea = C
#else
#define SEL_EXTENDS(C)
#endif
#define SEL_RELEASE(C) :: cph[C] == P_HELD -> ev = EV_RELEASE; ea = C
#define SEL_HANDOVER(C) :: ((HANDOVER >> C) & 1) && cph[C] == P_HELD && bel[C] && VALIDLW(C) && ck[C] < NKC(C) -> \
	ev = EV_HANDOVER; ea = C
#define SEL_DROPLOCK(C) :: cph[C] == P_HELD -> ev = EV_DROPLOCK; ea = C

#if NX > 1
/* The next extension's pair is free, and none of the token's retakes is
 * out (an extension waits for them, as for the rest of the trail). */
#define XPFREE(t,k,m) (!BUSY(SL(t,k,m)) && !net[SL(t,k,m)])
#define XMIDLE(t,i,m) (XPFREE(t,KXN(i),m) && XPFREE(t,KRTN(i),m) && \
	!BUSY(SL(t,KRTN(0),m)) && !BUSY(SL(t,KRTN(1),m)))
#if NM == 3
#define XIDLE(C) (XMIDLE(ct[C],XI(C),0) && XMIDLE(ct[C],XI(C),1) && XMIDLE(ct[C],XI(C),2))
#else
#define XIDLE(C) (XMIDLE(ct[C],XI(C),0) && XMIDLE(ct[C],XI(C),1) && XMIDLE(ct[C],XI(C),2) && \
	XMIDLE(ct[C],XI(C),3) && XMIDLE(ct[C],XI(C),4))
#endif
#elif NM == 3
#define XIDLE(C) (!BUSY(SL(ct[C],KX,0)) && !BUSY(SL(ct[C],KX,1)) && !BUSY(SL(ct[C],KX,2)) && \
	!BUSY(SL(ct[C],KRT,0)) && !BUSY(SL(ct[C],KRT,1)) && !BUSY(SL(ct[C],KRT,2)))
#else
#define XIDLE(C) (!BUSY(SL(ct[C],KX,0)) && !BUSY(SL(ct[C],KX,1)) && !BUSY(SL(ct[C],KX,2)) && \
	!BUSY(SL(ct[C],KX,3)) && !BUSY(SL(ct[C],KX,4)) && \
	!BUSY(SL(ct[C],KRT,0)) && !BUSY(SL(ct[C],KRT,1)) && !BUSY(SL(ct[C],KRT,2)) && \
	!BUSY(SL(ct[C],KRT,3)) && !BUSY(SL(ct[C],KRT,4)))
#endif

/* Names the request of slot s, for the trail. */
inline sayReq(s) {
	if
	:: SKIND(s) < MAXR -> printf("acquire (round %d) of t%d", SKIND(s) + 1, STOK(s))
	:: SKIND(s) == KF -> printf("fence raise of t%d", STOK(s))
	:: SKIND(s) == KRB && (val[s] == M_RB || val[s] == M_RBOLD) -> printf("roll-back of t%d", STOK(s))
	:: SKIND(s) == KRB && !(val[s] == M_RB || val[s] == M_RBOLD) -> printf("release of t%d", STOK(s))
	:: ISKX(SKIND(s)) -> SAYXOF(STOK(s), SKIND(s))
	:: ISKRT(SKIND(s)) -> SAYRTOF(STOK(s), SKIND(s))
	fi;
	printf(" to m%d", MN(SMAS(s)))
}

/* The event ev with argument ea happens. */
inline happen() {
	if
	:: ev == EV_DELIVER ->
		d_step { unhold(ea); pm = SMAS(ea) };
		timeAt(pm);
		QUEUEAT(ea);
		d_step {
		pm = 0;
		if
		:: st[ea] == S_WAIT -> serve(ea); answered(ea)
		:: else ->
			/* its client gave up: only its effect on the master counts */
			w1 = res[ea]; w2 = val[ea]; serve(ea); res[ea] = w1; val[ea] = w2;
			w1 = 0; w2 = 0
		fi;
		qn = 0 }
	:: ev == EV_TIMEOUT -> d_step {
		printf("c%d: gives up on ", OWNER(STOK(ea))); sayReq(ea); printf(" (timeout)\n");
		st[ea] = S_NOREP }
	:: ev == EV_DROP -> d_step {
		printf("the network loses "); sayReq(ea); printf("\n");
		unhold(ea);
		if
		:: st[ea] == S_WAIT -> st[ea] = S_NOREP
		:: else -> skip
		fi }
	:: ev == EV_RESTART -> d_step {
		restarts++; printf("m%d: crashes and restarts empty\n", MN(ea)); restart(ea) }
	:: ev == EV_REPLACE -> restarts++; replace(ea)
	:: ev == EV_EVICT -> d_step {
		printf("m%d: loses the key of t%d unseen (evicted)\n", MN(ea), h[ea]); SETH(ea, 0) }
	:: ev == EV_START -> d_step { co[ea] = 0; start(ea) }
	:: ev == EV_HEAR -> hear(ea)
	:: ev == EV_EXTEND -> d_step { extendStart(ea, 0) }
#if NX > 1
	:: ev == EV_EXTENDS -> d_step { extendStart(ea, 1) }
#endif
	:: ev == EV_RELEASE -> d_step {
		bel[ea] = 0; lw[ea] = 0; release(ea, ct[ea]); ct[ea] = 0 }
	:: ev == EV_HANDOVER -> d_step {
		printf("c%d: Release t%d, handing over\n", ea, ct[ea]);
		bel[ea] = 0; lw[ea] = 0;
		if
		:: HO_WAIT == 1 || HO_WAIT == 2 -> cph[ea] = P_HOWAIT
		:: else -> co[ea] = ct[ea]; start(ea)
		fi }
	:: ev == EV_DROPLOCK -> d_step {
		printf("c%d: t%d is dropped without a release\n", ea, ct[ea]);
		ENDLW(ea); tfin = tfin | TB(ct[ea]);
		bel[ea] = 0; lw[ea] = 0; cph[ea] = P_IDLE; ct[ea] = 0 }
	fi
}

active proctype System() {
	byte ev, ea, i, j, s, s2, f, n, y, rr, hh, v, kk, pt, pq, pm, x, w1, w2, cc, cmpr, ca, cb, qn;
	READ_SWITCHES;
	d_step {
		for (i : 0 .. NM-1) {
			cnt[i] = 1; mname[i] = i;
			dis[i] = (i < NDIS)
		}
		i = 0; hi = 1
	}
end:
	do
	:: atomic {
		if
		FORD(SEL_DELIVER)
		FORD(SEL_TIMEOUT)
		FORD(SEL_DROP)
		FORC(SEL_HOTOC)
		FORM(SEL_RESTART)
		FORM(SEL_REPLACE)
		FORM(SEL_EVICT)
		FORC(SEL_START)
		FORC(SEL_HEAR)
		FORC(SEL_EXTEND)
		FORC(SEL_EXTENDS)
		FORC(SEL_RELEASE)
		FORC(SEL_HANDOVER)
		FORC(SEL_DROPLOCK)
		fi;
		happen();
		propagate();
		ev = 0; ea = 0
	}
	od
}
