package redlock

import (
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/clock"
)

// Defaults, in one place. Each With… option documents the one it overrides.
const (
	DefaultDriftFactor    = 0.01
	DefaultDriftMargin    = 2 * time.Millisecond
	DefaultNodeTimeout    = 50 * time.Millisecond
	DefaultFenceRetention = 10 * time.Minute
	DefaultQueueLease     = 2 * time.Second
	// restartGuardAuto is the window's marker for "the longest TTL used plus drift".
	restartGuardAuto = time.Duration(-1)
)

// minQueueLease is the shortest queue lease: a renewal every lease/3 must
// have time to reach the masters.
const minQueueLease = 30 * time.Millisecond

// MaxTTL is the longest TTL a lock may be taken or extended with, and the
// longest fence retention: a year. Longer ones are refused with ErrInvalid
// before anything is sent.
const MaxTTL = 365 * 24 * time.Hour

// DefaultRetry is the backoff Lock uses between attempts when no
// release announcement wakes it first: exponential from 4 ms up to 512 ms,
// with full jitter.
func DefaultRetry() Backoff { return ExponentialBackoff(4*time.Millisecond, 512*time.Millisecond) }

type options struct {
	drift        quorumlock.Drift
	nodeTimeout  time.Duration
	quorum       int // 0: majority
	retry        Backoff
	clock        clock.Clock
	logger       *slog.Logger
	tokens       func() (string, error)
	restartGuard time.Duration
	// fenceKeep is how long a key's fence record outlives its lock. A
	// counter dropped after it is counted again from the master's fence
	// floor, which is at least every fence the master ever counted (see
	// the count in internal/scripts/acquire.lua), so the next fence is still
	// larger.
	fenceKeep time.Duration
	namespace string
	// trustEviction and trustUnreadable let masters vote that the guard
	// would keep out: see WithTrustEviction and WithTrustUnreadable.
	trustEviction, trustUnreadable bool
	observer                       Observer // nil: no events (see WithObserver)
	observerSet                    bool
	closeDrivers                   bool // Close closes the drivers (see WithCloseDrivers)
	queueLease                     time.Duration
}

func defaultOptions() options {
	return options{
		drift:        quorumlock.Drift{Factor: DefaultDriftFactor, Margin: DefaultDriftMargin},
		nodeTimeout:  DefaultNodeTimeout,
		retry:        DefaultRetry(),
		clock:        clock.Real(),
		logger:       defaultLogger(),
		tokens:       RandomToken,
		restartGuard: restartGuardAuto,
		fenceKeep:    DefaultFenceRetention,
		queueLease:   DefaultQueueLease,
	}
}

// Option configures a Client.
type Option interface{ apply(*options) }

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithDriftFactor sets the share of each TTL held back for clock drift
// between masters. Default 0.01. Must be in [0, 1).
func WithDriftFactor(f float64) Option { return optionFunc(func(o *options) { o.drift.Factor = f }) }

// WithDriftMargin sets the fixed part of the drift reserve, which also covers
// Redis's 1 ms expiry granularity. Default 2ms. Must not be negative.
func WithDriftMargin(d time.Duration) Option {
	return optionFunc(func(o *options) { o.drift.Margin = d })
}

// WithNodeTimeout bounds each master's part of an operation: dial, write and
// read. A master that does not answer in time counts as a no. Default 50ms.
// Must be positive. Per lock it is never more than a tenth of the TTL.
func WithNodeTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.nodeTimeout = d })
}

// WithQuorum sets how many masters must agree. Default N/2+1. Must be at
// least a majority and at most N; more than a majority trades availability
// for nothing but is allowed.
func WithQuorum(n int) Option { return optionFunc(func(o *options) { o.quorum = n }) }

// WithRetry sets the backoff Lock uses between attempts when no release
// announcement wakes it first. Default DefaultRetry(). Must not be nil.
func WithRetry(b Backoff) Option { return optionFunc(func(o *options) { o.retry = b }) }

// WithClock sets the clock. Default clock.Real(). Must not be nil.
func WithClock(c clock.Clock) Option { return optionFunc(func(o *options) { o.clock = c }) }

// WithLogger sets where the client reports what it does on its own: at
// WARN, what needs an operator (a lock lost, a master that may not vote at
// all, a refused password); at INFO, a master quarantined after a restart or
// not answering; at DEBUG, retries and extensions. Must not be nil.
//
// Default: slog.Default() as it is when the client is made, passed only
// records at WARN and above; without WithLogger the client logs nothing
// below WARN.
func WithLogger(l *slog.Logger) Option { return optionFunc(func(o *options) { o.logger = l }) }

// WithTokenGenerator sets how lock tokens are made. Default RandomToken, 128
// bits from crypto/rand. Tokens must be unique across every client that may
// lock the same keys; a generator that returns "" or an error fails the attempt.
// Must not be nil.
func WithTokenGenerator(f func() (string, error)) Option {
	return optionFunc(func(o *options) { o.tokens = f })
}

// WithRestartGuard sets how long a master that restarted, or was replaced in
// a failover, stays out of the quorum: its votes do not count until window
// has passed, though keys are still set and deleted there so it rejoins in
// step. Default: the longest TTL this client has used, plus its drift
// reserve; where other clients lock the same keys with longer TTLs, pass the
// longest of theirs (plus drift) instead. window must not be negative.
//
// The default does not shrink when this client's longest lock ends: other
// processes of the same service may hold locks of that TTL on the same
// keys, and a master that restarted empty cannot tell whose locks it lost.
// Keep TTLs short (seconds, with WithAutoExtend or Do) to keep the window
// short: a client's first lock on masters started a moment ago waits about
// one window.
//
// A master counts as restarted from the start its uptime shows, or from the
// moment this client first sees a run_id other than the one it knew,
// whatever the uptime. A master promoted from a replica counts from the
// moment it is known to have been promoted. A master with appendonly yes and
// appendfsync always keeps its keys across a restart and is not quarantined
// for one; a promoted replica is, durable or not. A quarantine can last up
// to two seconds beyond window.
//
// 0 turns these quarantines off. The guard still keeps out the masters that
// may not vote at any time (a replica, a master that may evict lock keys, one
// whose state cannot be read); WithTrustEviction and WithTrustUnreadable
// speak for those.
func WithRestartGuard(window time.Duration) Option {
	return optionFunc(func(o *options) { o.restartGuard = window })
}

// WithTrustEviction lets a master vote though its maxmemory-policy may evict
// keys with a TTL, as every lock key has: any policy but noeviction, with
// maxmemory set. Under memory pressure such a master can drop a held lock's
// key and grant the lock again. Pass it only where memory can never run out.
// Default: such a master does not vote, and a warning names its policy.
func WithTrustEviction() Option { return optionFunc(func(o *options) { o.trustEviction = true }) }

// WithTrustUnreadable lets a master vote though the client cannot read its
// state: INFO is denied to the client's user (or the server does not answer
// it). The guard is then blind there: a restart empty, a failover to a
// replica or an eviction policy go unseen, and each can let two clients
// hold a lock; a warning says so, once and again after each lost
// connection. Default: such a master does not vote, and a warning says so,
// once.
func WithTrustUnreadable() Option { return optionFunc(func(o *options) { o.trustUnreadable = true }) }

// WithFenceRetention sets how long a reentrant lock's fence record (the
// fence its later holds report, and a Resume reads) is kept beyond the
// lock's TTL. Default 10m. Must be positive and at most MaxTTL. Memory on
// each master is bounded by the reentrant keys locked within this time: one
// small string each. A plain lock's record lives as long as the lock.
// Every grant counts above the master's one fence floor, so a record gone
// only makes a Resume's fence the largest its masters report (see
// Client.Resume), never a smaller one.
func WithFenceRetention(d time.Duration) Option {
	return optionFunc(func(o *options) { o.fenceKeep = d })
}

// WithNamespace puts every key and channel the client uses on a master
// below prefix: a lock on key "job" is kept at prefix+"job", a reentrant
// lock's fence record at prefix+"quorumlock:fence:{<tag>}job" ({<tag>} keeps every name
// of a key in the key's Redis Cluster hash slot), the fence floors, the
// tombstones and the release announcements likewise. One ACL rule then
// grants them all: ~<prefix>* &<prefix>* (see docs/production.md, ACL
// users). Every client that locks the same keys must use the
// same namespace. Default "": lock keys as given, the rest below
// "quorumlock:". prefix may not hold '{' or '}': a Redis Cluster hash tag
// belongs in the keys.
func WithNamespace(prefix string) Option {
	return optionFunc(func(o *options) { o.namespace = prefix })
}

// WithObserver sets an Observer of what the client does: each attempt,
// call, extension, release, loss, hand-over, wake-up, fence raise and
// master's change of state (see Event). Default: none, which costs
// nothing. Must not be nil.
func WithObserver(obs Observer) Option {
	return optionFunc(func(o *options) { o.observer = obs; o.observerSet = true })
}

// WithCloseDrivers makes the client's Close close the drivers given to New,
// once what the client owes the masters has run, so that a lock built in
// one call (NewFromAddrs, or an adapter's NewClient) has one Close. When
// New returns an error, the drivers stay the caller's. Default: the
// drivers stay the caller's, to close after the client.
func WithCloseDrivers() Option { return optionFunc(func(o *options) { o.closeDrivers = true }) }

// WithQueueLease sets how long a waiter keeps its place in a key's waiting
// queue on a master without renewing it. A waiting Lock renews its place
// every lease/3, so the lease bounds how long a waiter that died (or was
// cut off from a quorum of masters) holds up the waiters behind it: the
// key stays free at most about 4/3 of the lease (5/3 for a waiter cut off,
// which renews once more before it knows), plus a round trip, before the
// next waiter takes it. A shorter lease costs more renewals. Default
// 2s. Must be at least 30ms and at most MaxTTL.
func WithQueueLease(d time.Duration) Option {
	return optionFunc(func(o *options) { o.queueLease = d })
}

func (o *options) validate(n int) error {
	switch {
	case math.IsNaN(o.drift.Factor) || o.drift.Factor < 0 || o.drift.Factor >= 1:
		return invalid("drift factor %v is outside [0, 1)", o.drift.Factor)
	case o.drift.Margin < 0:
		return invalid("drift margin %v is negative", o.drift.Margin)
	case o.nodeTimeout <= 0:
		return invalid("node timeout %v is not positive", o.nodeTimeout)
	case o.quorum != 0 && o.quorum < quorumlock.Quorum(n):
		return invalid("quorum %d is below a majority of %d nodes (%d)", o.quorum, n, quorumlock.Quorum(n))
	case o.quorum > n:
		return invalid("quorum %d is above the %d nodes", o.quorum, n)
	case o.clock == nil:
		return invalid("nil clock")
	case o.logger == nil:
		return invalid("nil logger")
	case o.observerSet && isNil(o.observer):
		return invalid("nil observer")
	case o.tokens == nil:
		return invalid("nil token generator")
	case o.restartGuard < 0 && o.restartGuard != restartGuardAuto:
		return invalid("restart guard window %v is negative", o.restartGuard)
	case o.fenceKeep <= 0:
		return invalid("fence retention %v is not positive", o.fenceKeep)
	case o.fenceKeep > MaxTTL: // so that ttl+fenceKeep cannot overflow: see checkKeyTTL
		return invalid("fence retention %v is above the maximum of %v", o.fenceKeep, MaxTTL)
	case o.queueLease < minQueueLease || o.queueLease > MaxTTL:
		return invalid("queue lease %v is outside [%v, %v]", o.queueLease, minQueueLease, MaxTTL)
	case strings.ContainsAny(o.namespace, "{}"):
		// A brace in the namespace would pick the hash slot of every name
		// the lock derives from a key (see scripts.Names).
		return invalid("namespace %q has a brace; put a hash tag in the keys instead", o.namespace)
	}
	if err := checkBackoff(o.retry); err != nil {
		return err
	}
	return nil
}

// LockOption configures one acquisition.
type LockOption interface{ applyLock(*lockOptions) }

type lockOptionFunc func(*lockOptions)

func (f lockOptionFunc) applyLock(o *lockOptions) { f(o) }

type lockOptions struct {
	owner      string
	ownerSet   bool
	autoExtend bool
	// read, write: a hold of an RWLock (see readHold), which is never
	// reentrant; set by its methods only.
	read, write bool
	// permits and quorum are a Semaphore's (see request): never set by a
	// LockOption.
	permits, quorum int
	set             *keySet // LockAll's keys; nil for one key
	// call is the public call that takes the hold, as an Observer names it
	// (see op), and as its *AttemptError's Op names it; set by the call.
	call Op
}

// readHold makes the call a read hold of an RWLock, writeHold its write
// hold: a plain lock, but for the options it takes.
func readHold() LockOption  { return lockOptionFunc(func(o *lockOptions) { o.read = true }) }
func writeHold() LockOption { return lockOptionFunc(func(o *lockOptions) { o.write = true }) }

// op names a call, OpLock or OpTryLock, by the hold it takes: a read
// hold's (OpRLock, OpTryRLock) or a permit's (OpAcquire, OpTryAcquire).
// Other calls keep their names.
func (o lockOptions) op(call Op) Op {
	switch {
	case o.read && call == OpLock:
		return OpRLock
	case o.read && call == OpTryLock:
		return OpTryRLock
	case o.permits > 0 && call == OpLock:
		return OpAcquire
	case o.permits > 0 && call == OpTryLock:
		return OpTryAcquire
	}
	return call
}

// hold names the hold call takes, as an *AttemptError's Op does: the call
// that waits for it, whether call waits or tries once ("lock" for Lock and
// TryLock, "acquire", "rlock", "lockall").
func hold(call Op) string {
	switch call {
	case OpTryLock:
		return string(OpLock)
	case OpTryAcquire:
		return string(OpAcquire)
	case OpTryRLock:
		return string(OpRLock)
	case OpTryLockAll:
		return string(OpLockAll)
	}
	return string(call)
}

// WithOwner makes the acquisition reentrant for owner: if owner already holds
// the key, the acquisition succeeds at once, adds a hold and refreshes the TTL
// (never shortening it). Each hold is released on its own; the key is freed
// with the last. A different owner, or a plain lock, gets ErrNotObtained.
// Default: a plain, non-reentrant lock. owner must not be empty.
func WithOwner(owner string) LockOption {
	return lockOptionFunc(func(o *lockOptions) { o.owner, o.ownerSet = owner, true })
}

// WithAutoExtend keeps the lock extended, every ttl/3, until Release. If an
// extension cannot reach a quorum before the validity runs out, the lock is
// lost: Done is closed and Err returns ErrLockLost. Default: off.
func WithAutoExtend() LockOption {
	return lockOptionFunc(func(o *lockOptions) { o.autoExtend = true })
}

// RandomToken returns 128 random bits from crypto/rand as 32 hex digits.
func RandomToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// applyLockOptions applies a lock call's options and validates them.
func applyLockOptions(opts []LockOption) (lockOptions, error) {
	var lo lockOptions
	for i, o := range opts {
		if o == nil {
			return lo, invalid("lock option %d is nil", i)
		}
		o.applyLock(&lo)
	}
	if lo.ownerSet && lo.owner == "" {
		return lo, invalid("empty owner")
	}
	if lo.ownerSet && (lo.read || lo.write) {
		return lo, invalid("WithOwner: an RWLock's holds are not reentrant")
	}
	return lo, nil
}
