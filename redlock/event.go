package redlock

import (
	"context"
	"time"
)

// Observer receives what the client does, as events, for metrics and
// traces (the module github.com/quorumlock/quorumlock/otel turns them into
// OpenTelemetry). Set it with WithObserver.
//
// Both methods are called on the goroutine of the operation, in order, and
// never while the client holds a lock of its own: they must return quickly
// (record, do not block or do I/O) and must not call the Client or its
// Locks. They may be called from many goroutines at once.
type Observer interface {
	// Start is called when a public call (Lock, TryLock, LockAll,
	// TryLockAll, Extend, Release, Do, Resume, and an RWLock's RLock and
	// TryRLock) begins, after its arguments were validated. The context it
	// returns is the call's from then on: the events of the call, its
	// driver's requests and, for Do, the function's context derive from it.
	// Return ctx itself to keep it.
	Start(ctx context.Context, op Op, key string) context.Context
	// Observe receives one event. ctx is the context of the call the event
	// belongs to, as Start returned it; context.Background() for what the
	// client does on its own (auto-extension, a master's change of state).
	Observe(ctx context.Context, ev Event)
}

// Op names a public call.
type Op string

// The public calls an Observer sees start and end.
const (
	OpLock    Op = "lock"
	OpTryLock Op = "trylock"
	// OpLockAll and OpTryLockAll are LockAll and TryLockAll, whose key is
	// the set's first.
	OpLockAll    Op = "lockall"
	OpTryLockAll Op = "trylockall"
	OpExtend     Op = "extend"
	OpRelease    Op = "release"
	OpDo         Op = "do"
	OpResume     Op = "resume"
	// A read hold of an RWLock: RLock and TryRLock. Its writer's calls are
	// OpLock and OpTryLock.
	OpRLock    Op = "rlock"
	OpTryRLock Op = "tryrlock"
	// A semaphore's permit: Acquire and TryAcquire. Its Do is OpDo.
	OpAcquire    Op = "acquire"
	OpTryAcquire Op = "tryacquire"
)

// Kind says what an Event reports.
type Kind string

// The kinds of Event.
const (
	// KindAttempt is one acquisition attempt of TryLock, Lock, TryLockAll,
	// LockAll or a hand-over: Outcome, Duration, Attempt (its number in the call; 0 for
	// a hand-over's) and the votes.
	KindAttempt Kind = "attempt"
	// KindCall is the end of a public call: Op, Outcome, Err and Duration
	// (for Lock, the whole wait); for Release, Held too.
	KindCall Kind = "call"
	// KindExtend is one extension: Outcome; Auto when the client made it on
	// its own (WithAutoExtend, Do), with Attempt its try within the
	// validity. An Extend call reports one as well as its KindCall.
	KindExtend Kind = "extend"
	// KindLost is a lock lost (see ErrLockLost): Held, and Err the cause.
	// It is reported once per lock.
	KindLost Kind = "lost"
	// KindHandOver is a Release that passed the lock straight to a waiter
	// of this client: Outcome OutcomeHandedOver, or OutcomeNotHeld when no
	// master of the waiter's quorum still held the lock released.
	KindHandOver Kind = "handover"
	// KindMaster is a master's change of state, reported once per change:
	// Master, State, Reason, Until.
	KindMaster Kind = "master"
	// KindWake is a waiter of Lock woken to try again: Outcome
	// OutcomeWoken by a release's announcement (or its turn in this
	// client's line), or OutcomeTimer by its backoff or the holder's
	// expiry, no announcement having come: one missed, or none made.
	KindWake Kind = "wake"
	// KindFenceRaise is an acquisition raising lagging masters' fence
	// counters to the fence: Fence, Raised of Lagging, Outcome.
	KindFenceRaise Kind = "fence_raise"
)

// Outcome is how an attempt, call, extension or hand-over ended. The set is
// fixed: an attribute of metrics may take it.
type Outcome string

// The outcomes.
const (
	OutcomeObtained      Outcome = "obtained"      // the lock was taken
	OutcomeHeld          Outcome = "held"          // another holder has the key
	OutcomeQuarantined   Outcome = "quarantined"   // masters kept out by the restart guard denied the quorum
	OutcomeMisconfigured Outcome = "misconfigured" // see ErrMisconfigured
	OutcomeUnavailable   Outcome = "unavailable"   // too few masters answered
	OutcomeExpired       Outcome = "expired"       // a quorum agreed, but no validity was left
	OutcomeCtxDone       Outcome = "ctx_done"      // the caller's context ended
	OutcomeInvalid       Outcome = "invalid"       // see ErrInvalid
	OutcomeClosed        Outcome = "closed"        // see ErrClosed
	OutcomeExtended      Outcome = "extended"      // an extension reached a quorum
	OutcomeReleased      Outcome = "released"      // the lock was released
	OutcomeHandedOver    Outcome = "handed_over"   // the lock passed to a waiter
	OutcomeNotHeld       Outcome = "not_held"      // the lock had ended on the masters (see ErrLockNotHeld)
	OutcomeLost          Outcome = "lost"          // the lock is lost (see ErrLockLost)
	OutcomeDone          Outcome = "done"          // Do's function returned nil
	OutcomeFailed        Outcome = "failed"        // Do's function, or a fence raise, failed
	OutcomeRaised        Outcome = "raised"        // a fence raise reached the masters it needed
	OutcomeWoken         Outcome = "woken"         // a waiter woken by a release's announcement, or by its turn in line
	OutcomeTimer         Outcome = "timer"         // a waiter woken by its timer
)

// MasterState is what a KindMaster event says of a master.
type MasterState string

// The states of a master.
const (
	MasterUp      MasterState = "up"      // it answers again
	MasterDown    MasterState = "down"    // it does not answer (Reason: no reply, connection refused, ...)
	MasterFailing MasterState = "failing" // it refuses the lock's commands until configured otherwise (Reason: NOPERM, READONLY, ...)
	MasterSilent  MasterState = "silent"  // it answers nothing at all: paused, or cut off with its connection open
	MasterHeard   MasterState = "heard"   // a silent master answered
	// MasterQuarantined: the restart guard does not count its votes
	// (Reason: restarted, replaced, promoted, replica, unreadable,
	// may-evict, too-old), until Until when that is known.
	MasterQuarantined MasterState = "quarantined"
	// MasterDegraded: it votes, but the guard is partly blind there
	// (Reason: unreadable-trusted, may-evict-trusted, config-unreadable).
	MasterDegraded MasterState = "degraded"
	MasterVoting   MasterState = "voting" // the guard counts its votes: at first sight, or again
)

// Event is one thing the client did. Kind says which fields are set; the
// others are zero.
type Event struct {
	// Kind says what the event reports.
	Kind Kind
	// Op is the call a KindCall event ends.
	Op Op
	// Key is the lock's key; "" for KindMaster. Keys are unbounded: a
	// metric must not take one as an attribute.
	Key string
	// Outcome is how it ended (see Outcome).
	Outcome Outcome
	// Err is the error returned, or the cause; nil on success.
	Err error
	// Duration is how long the attempt or the call took.
	Duration time.Duration
	// Held is how long the lock was held, by this client's clock, when it
	// was released or lost.
	Held time.Duration
	// Attempt numbers the attempts of one call from 1.
	Attempt int
	// Auto marks an extension made by the client on its own.
	Auto bool
	// Votes of an attempt's last round.
	Votes Votes
	// Master is the address of the master a KindMaster event is about.
	Master string
	// State is the master's new state.
	State MasterState
	// Reason says why, in a word from a fixed set (see MasterState).
	Reason string
	// Until is when a quarantine ends, as known now, on the client's clock
	// (see WithClock); zero when it lasts until a change of state says
	// otherwise.
	Until time.Time
	// Fence of KindFenceRaise: the fence the lagging masters were raised to.
	Fence int64
	// Raised and Lagging: how many masters' counters were raised, of those lagging.
	Raised, Lagging int
}

// Votes counts the masters' answers in an attempt's last round.
type Votes struct {
	Masters    int // masters asked
	Quorum     int // votes needed
	Granted    int // masters that granted the lock and whose votes count
	Abstained  int // masters that granted it but whose votes the restart guard does not count
	Refused    int // masters where another holds the key
	Failed     int // masters that failed
	Unanswered int // masters yet to answer when the round ended
}

// Answered is how many masters answered.
func (v Votes) Answered() int { return v.Granted + v.Abstained + v.Refused + v.Failed }
