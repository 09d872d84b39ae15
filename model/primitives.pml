/*
 * What semaphore.pml, rwlock.pml and multikey.pml share: reading the
 * switches, the iteration macros, a client's request on a master, the
 * properties' assertion, and the masters' symmetry. Each model defines NM
 * and NC, ms[] (everything about a master, one number each) and SLOT and
 * SETSLOT (where a client's request sits in it) before it uses these.
 */

c_decl {
	extern char *getenv(const char *);
	extern int atoi(const char *);
	/* envOr is the environment variable name as a number, or def. */
	static int envOr(const char *name, int def) {
		const char *v = getenv(name);
		return v != 0 && *v != 0 ? atoi(v) : def;
	}
}

/* ------------------------------------------------------ iteration macros */

#if NM == 3
#define FORM(F) F(0) F(1) F(2)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2)
#elif NM == 4
#define FORM(F) F(0) F(1) F(2) F(3)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2) F(a,3)
#elif NM == 5
#define FORM(F) F(0) F(1) F(2) F(3) F(4)
#define FORM2(F,a) F(a,0) F(a,1) F(a,2) F(a,3) F(a,4)
#else
#error NM must be 3, 4 or 5
#endif

/* FORCX and FORCD serve inside FORC, where FORC does not expand again. */
#if NC == 2
#define FORC(F) F(0) F(1)
#define FORCX(F) F(0) F(1)
#define FORCD(F, a) F(a, 0) F(a, 1)
#define FORCM(F) FORM2(F,0) FORM2(F,1)
#elif NC == 3
#define FORC(F) F(0) F(1) F(2)
#define FORCX(F) F(0) F(1) F(2)
#define FORCD(F, a) F(a, 0) F(a, 1) F(a, 2)
#define FORCM(F) FORM2(F,0) FORM2(F,1) FORM2(F,2)
#else
#error NC must be 2 or 3
#endif

#define CB(c) (1 << (c))
#define ALLC ((1 << NC) - 1)

/* ------------------------------------------------ a client's request */

/* a client's request on a master, and its answer */
#define S_NONE  0
#define S_ACQ   1       /* acquire sent, not answered yet */
#define S_YES   2       /* granted, and the vote counts */
#define S_DONE  3       /* answered without a vote that counts */
#define S_LATE  4       /* acquire still out after its attempt decided: it may land */
#define S_NOREP 5       /* no reply: it may have run (multikey.pml; the others
                           count it as S_DONE) */
#define OUT(s) ((s) == S_ACQ || (s) == S_LATE)

#define YESM(c, m) + (SLOT(m, c) == S_YES)
#define OUTM(c, m) + (SLOT(m, c) == S_ACQ)
#define YES(c) (0 FORM2(YESM, c))
#define PEND(c) (0 FORM2(OUTM, c))
#define SENDM(c, m) SETSLOT(m, c, S_ACQ);

/* Once an attempt has decided, what it was told is forgotten; an acquire
 * still out may land later. What it was granted stays where it is until it
 * goes (an event): a release or roll-back that arrives, or an expiry, which
 * are the same to every other client. */
#define FORGETM(c, m) \
	if \
	:: SLOT(m, c) == S_ACQ -> SETSLOT(m, c, S_LATE) \
	:: SLOT(m, c) == S_YES || SLOT(m, c) == S_DONE || SLOT(m, c) == S_NOREP -> \
		SETSLOT(m, c, S_NONE) \
	:: else -> skip \
	fi;

/* -------------------------------------------------------- properties */

#define ON(n) ((CHECK >> ((n)-1)) & 1)
#define PROP(n, c) \
	if \
	:: ON(n) && !(c) -> printf("PROPERTY %d VIOLATED\n", n); assert(c) \
	:: else -> skip \
	fi

/* ---------------------------------------------------------- symmetry */

/* For the trail only: the masters' names before symmetry renamed them. */
hidden byte mname[NM];
#define MN(m) mname[m]

/* Masters are interchangeable: they are sorted by their numbers, so that
 * states that differ only by a renaming of the masters are one state. */
inline canon() {
	for (i : 1 .. NM-1) {
		for (j : 0 .. NM-2) {
			if
			:: ms[j] > ms[j+1] ->
				x = ms[j]; ms[j] = ms[j+1]; ms[j+1] = x;
				x = mname[j]; mname[j] = mname[j+1]; mname[j+1] = x
			:: else -> skip
			fi
		}
	}
	i = 0; j = 0; x = 0
}
