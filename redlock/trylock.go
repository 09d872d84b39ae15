package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// TryLock makes one attempt to take key for ttl on a quorum of masters.
//
// It returns ErrNotObtained if no quorum granted the lock, or if the time the
// attempt took left no validity. The error is an *AttemptError: one line
// with the cause, and what each master did; it also wraps each master's
// *NodeError. Nothing of a failed attempt is left on any master that can be
// reached: TryLock deletes its token everywhere it may have landed, and waits
// up to one node timeout for that, but not for a master that answers nothing
// at all (paused, or cut off with its connection open), where the delete
// follows the master's answer in the background.
func (c *Client) TryLock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (_ *Lock, err error) {
	ttl, lo, err := c.startLockCall(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer c.work.done()
	ctx, obs := c.begin(ctx, OpTryLock, key)
	defer obs.end(&err)
	a := c.attempt(ctx, key, ttl, lo, nil)
	c.observeAttempt(ctx, key, obs.next(), a)
	if a.err != nil && ctx.Err() != nil {
		return nil, gaveUp(a.err, 0, context.Cause(ctx))
	}
	return a.lock, a.err
}

// Lock takes key for ttl, retrying until it has the lock or ctx is done.
//
// Between attempts it waits for the holder's release to be announced, which
// wakes it at once; if no announcement comes (a master down, a lock that
// expired rather than being released) it retries after the WithRetry backoff,
// or sooner when the holder's TTL runs out first. Goroutines of one Client
// waiting for the same key take turns in arrival order. A Lock that waits
// for masters the restart guard keeps out logs one warning, saying why and
// when their first votes come.
//
// When ctx ends first, the error satisfies both errors.Is(err,
// ErrNotObtained) and errors.Is(err, ctx.Err()). Its text says how long Lock
// waited, and why the last attempt failed: "redlock: not obtained after
// 3.1s: 3 of 3 masters quarantined after a restart, first votes in 5s;
// gave up: context deadline exceeded".
func (c *Client) Lock(ctx context.Context, key string, ttl time.Duration, opts ...LockOption) (_ *Lock, err error) {
	ttl, lo, err := c.startLockCall(ctx, key, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer c.work.done()
	ctx, obs := c.begin(ctx, OpLock, key)
	defer obs.end(&err)
	// Goroutines of this client already waiting for the key go first: a
	// newcomer joins the line instead of splitting the votes with its head.
	// An owner may already hold the key, so it always tries at once.
	start := c.o.clock.Now()
	a := outcome{err: &AttemptError{Op: "lock", Key: key, Quorum: c.quorum, head: "redlock: not obtained",
		cause: "waiting in line behind this client's other callers of the key", wraps: []error{ErrNotObtained}}}
	attempted := lo.owner != "" || !c.hub.waiting(key)
	told := false // whether this call has said that it waits for the restart guard
	tell := func() {
		// A wait for young masters can be long, and nobody holds the key:
		// say so once, in one line with the reason and when votes come.
		if !told && errors.Is(a.err, ErrQuarantined) {
			told = true
			c.o.logger.Warn("redlock: Lock waits for the restart guard", "key", key, "why", a.err.Error())
		}
	}
	if attempted {
		a = c.attempt(ctx, key, ttl, lo, nil)
		c.observeAttempt(ctx, key, obs.next(), a)
		tell()
		if a.err == nil || !errors.Is(a.err, ErrNotObtained) || errors.Is(a.err, ErrMisconfigured) {
			return a.lock, a.err
		}
	}
	w := c.hub.join(key, ttl, lo)
	gotLock := false
	defer func() { w.leave(gotLock) }()
	// Announcements are heard from here on, so an immediate retry closes
	// the gap between the first attempt and the subscription: a release
	// made in it went unheard. A waiter that made no attempt, or that is
	// not first in line, has no such gap (see pokeIfFirst).
	w.ready(ctx, c.nodeTimeout(ttl))
	if attempted {
		w.pokeIfFirst()
	}
	for n := 1; ; n++ {
		delay, ok := c.o.retry.Delay(n)
		if !ok {
			return nil, gaveUp(a.err, c.o.clock.Since(start), nil)
		}
		delay = max(delay, 0)
		if a.freeIn > 0 && a.freeIn < delay {
			delay = a.freeIn
		}
		if w.awaitingConfirmation() {
			// A release now could go unheard: poll until the subscription is confirmed.
			delay = min(delay, c.nodeTimeout(ttl))
		}
		if a.split {
			// Several waiters each won a minority: none holds the lock, and the
			// rollbacks are done. Retry at once, spread by a little jitter.
			delay = rand.N(c.nodeTimeout(ttl)/10 + time.Millisecond)
		}
		c.o.logger.Debug("redlock: lock not obtained; waiting to retry",
			"key", key, "retry", n, "wait", delay, "err", a.err)
		handed, err := w.wait(ctx, delay)
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, gaveUp(a.err, c.o.clock.Since(start), err)
		}
		if handed != nil {
			gotLock = true
			return handed, nil
		}
		// A releaser may have claimed this waiter meanwhile: take what it
		// hands over. A failed hand-over is followed by a plain release, so
		// try at once.
		for {
			handed, claimed := w.begin()
			if !claimed {
				break
			}
			if handed != nil {
				gotLock = true
				return handed, nil
			}
		}
		a = c.attempt(ctx, key, ttl, lo, nil)
		c.observeAttempt(ctx, key, obs.next(), a)
		w.end()
		tell()
		if a.err == nil {
			gotLock = true
			return a.lock, nil
		}
		if !errors.Is(a.err, ErrNotObtained) || errors.Is(a.err, ErrMisconfigured) {
			return nil, a.err
		}
	}
}

// startLockCall validates what TryLock and Lock take, and counts the call
// as the client's work: unless it returns an error, the caller must call
// c.work.done when the call ends.
func (c *Client) startLockCall(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (time.Duration, lockOptions, error) {
	ttl, err := c.checkKeyTTL(ctx, key, ttl)
	if err != nil {
		return 0, lockOptions{}, err
	}
	lo, err := applyLockOptions(opts)
	if err != nil {
		return 0, lockOptions{}, err
	}
	if err := c.enter(); err != nil {
		return 0, lockOptions{}, err
	}
	return ttl, lo, nil
}

// checkKeyTTL validates what every lock call takes, and returns the TTL as Redis
// will keep it: whole milliseconds.
func (c *Client) checkKeyTTL(ctx context.Context, key string, ttl time.Duration) (time.Duration, error) {
	switch {
	case ctx == nil:
		return 0, invalid("nil context")
	case c == nil:
		return 0, invalid("nil client")
	case key == "":
		return 0, invalid("empty key")
	case strings.HasPrefix(key, scripts.ReservedPrefix):
		return 0, invalid("key %q uses the reserved prefix %q", key, scripts.ReservedPrefix)
	case ttl <= 0:
		return 0, invalid("ttl %v is not positive", ttl)
	case ttl > MaxTTL:
		// With every TTL and the fence retention at most MaxTTL, each sum
		// the client makes of them (the restart guard's window, a fencing
		// counter's lifetime in milliseconds for Redis's PX) stays far
		// from overflowing.
		return 0, invalid("ttl %v is above the maximum of %v", ttl, MaxTTL)
	}
	ttl = ttl.Truncate(time.Millisecond)
	if v := quorumlock.Validity(ttl, 0, c.o.drift); ttl <= 0 || v <= 0 {
		return 0, invalid("ttl %v leaves no validity after the drift reserve of %v", ttl, c.o.drift.Reserve(ttl))
	}
	return ttl, nil
}
