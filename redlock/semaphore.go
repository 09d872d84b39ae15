package redlock

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// MaxPermits is the largest number of permits a Semaphore takes: each
// permit held is a member of a sorted set on every master of its quorum.
const MaxPermits = 1 << 16

// Semaphore is K permits on a key, each held on a quorum of the client's
// masters with a TTL, as a lock is: at most K holders at a time while no
// master loses its data (see docs/guarantees.md, The semaphore). Make one
// with Client.Semaphore; it is safe for concurrent use, and holds nothing
// itself.
//
// A permit is a *Lock: Until, Fence, Extend, Release, Done, Err and
// WithAutoExtend work as for a lock. Its fence is above the fence of every
// permit of the key granted before it was asked for: fences order the
// grants, they do not exclude the K holders from each other.
//
// The quorum is not a majority. Each master admits at most K holders; with
// K >= 2, K+1 holders can each hold a majority (see
// quorumlock.PermitQuorum). A permit needs PermitQuorum(N, K) masters, so
// fewer may fail than for a lock: Quorum says how many it needs.
type Semaphore struct {
	c               *Client
	key             string
	permits, quorum int
}

// SemaphoreOption configures a Semaphore.
type SemaphoreOption interface{ applySemaphore(*semaphoreOptions) }

type semaphoreOptionFunc func(*semaphoreOptions)

func (f semaphoreOptionFunc) applySemaphore(o *semaphoreOptions) { f(o) }

type semaphoreOptions struct{ everyMaster bool }

// WithEveryMaster accepts a number of permits whose quorum is every master
// (K >= N-1 on N masters; see quorumlock.PermitQuorum), which Semaphore
// otherwise refuses. The cost: no master may fail. While one is down,
// restarting, in the restart guard's quarantine, or cut off, no permit can
// be acquired, and held permits cannot be extended, so the watchdog of
// WithAutoExtend declares them lost. Without it, Semaphore refuses such a
// K with ErrInvalid; on a single master it makes no difference.
func WithEveryMaster() SemaphoreOption {
	return semaphoreOptionFunc(func(o *semaphoreOptions) { o.everyMaster = true })
}

// Semaphore returns the semaphore of permits permits on key. Every caller
// of a key must give the same permits: the masters record it with the
// first permit, and refuse another count with an error wrapping
// ErrInvalid (a *PermitsError), since callers that disagree could together
// admit more holders than either count.
//
// It returns an error wrapping ErrInvalid for an empty or reserved key,
// permits <= 0 or above MaxPermits, and, unless WithEveryMaster is given,
// for permits whose quorum is every master of two or more.
func (c *Client) Semaphore(key string, permits int, opts ...SemaphoreOption) (*Semaphore, error) {
	var o semaphoreOptions
	for i, opt := range opts {
		if opt == nil {
			return nil, invalid("semaphore option %d is nil", i)
		}
		opt.applySemaphore(&o)
	}
	if err := c.usable(); err != nil {
		return nil, err
	}
	switch {
	case key == "":
		return nil, invalid("empty key")
	case strings.HasPrefix(key, scripts.ReservedPrefix):
		return nil, invalid("key %q uses the reserved prefix %q", key, scripts.ReservedPrefix)
	case permits <= 0:
		return nil, invalid("permits %d is not positive", permits)
	case permits > MaxPermits:
		return nil, invalid("permits %d is above the maximum of %d", permits, MaxPermits)
	}
	n := len(c.nodes)
	pq := quorumlock.PermitQuorum(n, permits)
	if pq == n && n >= 2 && !o.everyMaster {
		return nil, invalid("%d permits on %d masters need all %d: no master could fail; use fewer permits or more masters, or accept that with WithEveryMaster",
			permits, n, n)
	}
	// WithQuorum may ask for more: the client's own choice of what a
	// failure costs.
	return &Semaphore{c: c, key: key, permits: permits, quorum: max(pq, c.quorum)}, nil
}

// Key returns the semaphore's key.
func (s *Semaphore) Key() string {
	if s == nil {
		return ""
	}
	return s.key
}

// Permits returns K, the number of permits.
func (s *Semaphore) Permits() int {
	if s == nil {
		return 0
	}
	return s.permits
}

// Quorum returns the number of masters each permit needs:
// quorumlock.PermitQuorum of the client's masters and Permits, or the
// client's WithQuorum where that is larger.
func (s *Semaphore) Quorum() int {
	if s == nil {
		return 0
	}
	return s.quorum
}

// Acquire takes a permit for ttl, waiting until one is free or ctx is done,
// as Client.Lock waits for a lock: in line on the masters, so that a free
// permit goes to the first waiters (see docs/guarantees.md, The semaphore).
// Goroutines of this client waiting for the key take turns as Lock's do,
// K at a time rather than one. Its errors are Lock's. WithOwner does not apply: a permit is not
// reentrant, and it is ErrInvalid.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return s.client().Lock(ctx, s.Key(), ttl, s.options(opts)...)
}

// TryAcquire makes one attempt to take a permit for ttl, as Client.TryLock
// does. It does not queue, and takes a free permit only when fewer waiters
// queue for the key than permits are free.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return s.client().TryLock(ctx, s.Key(), ttl, s.options(opts)...)
}

// Do takes a permit with Acquire, runs fn while it is held, and gives it
// back when fn returns, as Client.Do does with a lock: fn finds the permit
// with FromContext, and its ctx ends if the permit is lost.
func (s *Semaphore) Do(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return s.client().Do(ctx, s.Key(), ttl, fn, s.options(opts)...)
}

// client is s's client, nil for a nil or zero Semaphore: its calls then
// fail with ErrInvalid, as a nil Client's do.
func (s *Semaphore) client() *Client {
	if s == nil {
		return nil
	}
	return s.c
}

// options is opts with the permit's, last, so that no option overrides it.
func (s *Semaphore) options(opts []LockOption) []LockOption {
	permits, quorum := s.Permits(), s.Quorum()
	permit := lockOptionFunc(func(o *lockOptions) { o.permits, o.quorum = permits, quorum })
	return append(opts[:len(opts):len(opts)], permit)
}

// PermitsError is a master's refusal of a permit because the key's record
// names another number of permits: the callers of the key disagree on K,
// or the key holds an RWLock's readers, whose record names 0. It wraps
// ErrInvalid; no retry can succeed.
type PermitsError struct {
	Key      string // the semaphore's key
	Permits  int    // what this call asked for
	Recorded int    // what the master's record names; 0 for an RWLock's readers
	Addr     string // the master
}

// Error names both counts and the master, or says that the key holds an
// RWLock's readers.
func (e *PermitsError) Error() string {
	if e.Recorded == 0 {
		return oneLine(fmt.Sprintf("redlock: key %q holds an RWLock's readers on master %s, not a semaphore's permits: a key is one kind of lock for all its callers",
			e.Key, e.Addr), maxErrorLen)
	}
	return oneLine(fmt.Sprintf("redlock: semaphore %q has %d permits on master %s, this call asks for %d: every caller of a key must give the same permits",
		e.Key, e.Recorded, e.Addr, e.Permits), maxErrorLen)
}

// Unwrap returns ErrInvalid.
func (e *PermitsError) Unwrap() error { return ErrInvalid }

// permitsDiffer returns the *PermitsError of the first master of round r
// whose record names another number of permits than req, a permit's
// request, or nil.
func (c *Client) permitsDiffer(r round, req request) error {
	for i := range r.res.Nodes() {
		if a, _, ok := r.answer(i); ok && a.err == nil && a.grant.PTTL == scripts.PermitsDiffer {
			return &PermitsError{Key: req.key, Permits: req.permits, Recorded: int(a.grant.Permits), Addr: c.nodes[i].addr()}
		}
	}
	return nil
}
