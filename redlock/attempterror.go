package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// AttemptError is a failed TryLock, Lock, Do, Extend, Release or Resume: Error is
// one line that leads with the cause, and Masters says what each master did.
// Find it with errors.As; errors.Is still matches the sentinels it wraps
// (ErrNotObtained, ErrQuarantined, ErrMisconfigured, ErrLockLost,
// ErrLockNotHeld, a context's error) and errors.As each master's *NodeError.
// The counts in Error are counts of Masters.
type AttemptError struct {
	// Op is what failed: taking a hold, named by the call that waits for
	// it whether the caller waited or tried once ("lock" for Lock,
	// TryLock and Do, "acquire" for a semaphore's permit, "rlock" for a
	// read hold, "lockall" for a set of keys), or "extend", "release" or
	// "resume".
	Op string
	// Key is the lock's key, as given.
	Key string
	// Quorum is how many masters had to agree.
	Quorum int
	// Waited is how long Lock waited in all before it gave up; 0 for a
	// single attempt.
	Waited time.Duration
	// Masters is each master's outcome in the last round, by index in the
	// client's list; empty when no round was made (a Lock that gave up
	// waiting in line behind the client's other callers of the key).
	Masters []MasterAnswer
	// Fix says what would fix a misconfiguration (ErrMisconfigured): the
	// remedy for each kind of failure, and for NOPERM the keys and channels
	// to grant. "" otherwise.
	Fix string

	head  string  // "redlock: not obtained", "redlock: lock lost", ...
	cause string  // what failed, in a few words
	wraps []error // what errors.Is and errors.As see: sentinels, then node errors
	ended error   // the context's cause, when the caller gave up
}

// MasterAnswer is what one master did in an attempt.
type MasterAnswer struct {
	Node   int    // index of the master in the list given to New
	Addr   string // its address
	Answer Answer // what it did
	// Why says more: for MasterAbstained, why the restart guard did not
	// count its vote ("new or restarted, up 0s, votes in 8s", "it is a
	// replica ..."); for MasterFailed, the kind of failure ("connection
	// refused", "NOPERM", ...); for MasterHeld, "a writer waits" when a
	// read hold was refused because a writer of the key waits in line
	// there, which no holder does, and "others wait in line" when the key
	// was free but others wait in its queue ahead of the caller. ""
	// otherwise.
	Why string
	// VotesIn is, for MasterAbstained, how long until the guard counts its
	// vote by the clock alone; 0 when only a change of the master's setup
	// would (a replica, an evicting master).
	VotesIn time.Duration
	// Err is the master's *NodeError, nil when it agreed or abstained.
	Err error
}

// Answer is what one master did in an attempt.
type Answer int8

const (
	// MasterAgreed means the master did what was asked (granted, extended
	// or released the lock, or held the token a Resume asked about) and its
	// vote counted.
	MasterAgreed Answer = iota
	// MasterAbstained means the master granted or extended the lock, but
	// the restart guard did not count its vote: see MasterAnswer.Why.
	MasterAbstained
	// MasterHeld means another owner holds the key there (ErrHeld).
	MasterHeld
	// MasterNotHeld means the lock's token was no longer there, on an
	// extension, a release or a Resume (ErrLockNotHeld).
	MasterNotHeld
	// MasterNoReply means no answer came within the node timeout.
	MasterNoReply
	// MasterFailed means the master answered with an error, or could not
	// be reached: see MasterAnswer.Why and Err.
	MasterFailed
)

// String names the outcome in a word or two.
func (o Answer) String() string {
	switch o {
	case MasterAgreed:
		return "agreed"
	case MasterAbstained:
		return "abstained"
	case MasterHeld:
		return "held by another owner"
	case MasterNotHeld:
		return "not held"
	case MasterNoReply:
		return "no reply"
	case MasterFailed:
		return "failed"
	}
	return fmt.Sprintf("Answer(%d)", int8(o))
}

// maxErrorLen bounds Error's length: a line for a log, not a report.
const maxErrorLen = 200

// Error returns one line, at most 200 characters: what failed, why, and, for
// a Lock that gave up, after how long and the context's cause.
func (e *AttemptError) Error() string {
	var b strings.Builder
	b.WriteString(e.head)
	if e.Waited > 0 {
		b.WriteString(" after " + roughly(e.Waited).String())
	}
	if e.cause != "" {
		b.WriteString(": " + e.cause)
	}
	if e.ended != nil {
		b.WriteString("; gave up: " + strings.TrimPrefix(e.ended.Error(), "redlock: "))
	}
	return oneLine(b.String(), maxErrorLen)
}

// Unwrap returns what errors.Is and errors.As see: the sentinels the error
// stands for, the context's cause when the caller gave up, and each
// master's *NodeError in the order of Masters.
func (e *AttemptError) Unwrap() []error {
	out := e.wraps
	if e.ended != nil {
		out = append(out[:len(out):len(out)], e.ended)
	}
	return out
}

// Detail returns one line per master, "node 2 (host:port): ...", and the
// Fix when there is one: the report behind Error.
func (e *AttemptError) Detail() string {
	var b strings.Builder
	for j, m := range e.Masters {
		if j > 0 {
			b.WriteByte('\n')
		}
		switch {
		case m.Answer == MasterHeld && m.Why != "":
			// A line of waiters, not a holder: the master's error would
			// say "held by another owner".
			fmt.Fprintf(&b, "redlock: node %d (%s): refused: %s", m.Node, m.Addr, m.Why)
		case m.Err != nil:
			b.WriteString(m.Err.Error())
		case m.Answer == MasterAbstained:
			fmt.Fprintf(&b, "redlock: node %d (%s): not counted: %s", m.Node, m.Addr, m.Why)
		default:
			fmt.Fprintf(&b, "redlock: node %d (%s): %s", m.Node, m.Addr, m.Answer)
		}
	}
	if e.Fix != "" {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("fix: " + e.Fix)
	}
	return b.String()
}

// Count returns how many masters had outcome o.
func (e *AttemptError) Count(o Answer) int {
	n := 0
	for _, m := range e.Masters {
		if m.Answer == o {
			n++
		}
	}
	return n
}

// gaveUp returns err, a failed attempt's error, as the error of a call that
// waited waited in all and stopped with cause (nil when it stopped for
// another reason, a backoff that ran out).
func gaveUp(err error, waited time.Duration, cause error) error {
	var ae *AttemptError
	if !errors.As(err, &ae) {
		if cause == nil {
			return err
		}
		return fmt.Errorf("%w; gave up: %w", err, cause)
	}
	c := *ae
	c.Waited, c.ended = waited, cause
	return &c
}

// oneLine folds s onto one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}
