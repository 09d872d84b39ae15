package redlock

import (
	"context"
	"errors"
	"time"
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
	return c.tryOnce(ctx, OpTryLock, key, ttl, lo)
}

// tryOnce is the one attempt of a call op (TryLock, TryLockAll) on key,
// its checks passed; it ends the call's work.
func (c *Client) tryOnce(ctx context.Context, op Op, key string, ttl time.Duration, lo lockOptions) (_ *Lock, err error) {
	defer c.work.done()
	lo.call = lo.op(op)
	ctx, obs := c.begin(ctx, lo.call, key)
	defer obs.end(&err)
	a := c.attempt(ctx, key, ttl, lo, nil, nil)
	c.observeAttempt(ctx, key, obs.next(), a)
	if a.err != nil && ctx.Err() != nil {
		return nil, gaveUp(a.err, 0, context.Cause(ctx))
	}
	return a.lock, a.err
}

// Lock takes key for ttl, retrying until it has the lock or ctx is done.
//
// Callers wait in line: on each master a waiting Lock holds a place in the
// key's queue, and a free key goes to the head of the queue alone, so that
// callers of every client take the key in the order their calls began
// (within the skew of the clients' clocks), and a release wakes only the
// next in line. Goroutines of one Client waiting for the same key take
// turns in arrival order, and a release may hand the key straight to the
// next of them (a few times in a row at most) before the other clients'
// waiters. TryLock does not queue, and does not take a key others queue for.
// A waiter that dies holds up the line at most about 4/3 of the queue lease,
// one cut off from a quorum of masters about 5/3 (see WithQueueLease).
//
// Between attempts it waits for the release that names it, which wakes it
// at once, or until the holder's TTL runs out, and at least every third of
// the queue lease, which renews its place. Where the masters' queues do not
// tell (masters that disagree, or that failed), it also retries after the
// WithRetry backoff. A Lock that waits for masters the restart
// guard keeps out logs one warning, saying why and when their first votes
// come.
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
	lo.call = lo.op(OpLock)
	ctx, obs := c.begin(ctx, lo.call, key)
	defer obs.end(&err)
	// Goroutines of this client already waiting for the key go first: a
	// newcomer joins the line instead of splitting the votes with its head.
	// An owner may already hold the key, so it always tries at once.
	start := c.o.clock.Now()
	var at *place // a reader holds none: it never queues (see read.lua)
	if !lo.read {
		if at, err = c.newPlace(); err != nil {
			return nil, err
		}
	}
	a := outcome{err: &AttemptError{Op: hold(lo.call), Key: key, Quorum: c.need(lo.quorum), head: "redlock: not obtained",
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
		a = c.attempt(ctx, key, ttl, lo, nil, at)
		c.observeAttempt(ctx, key, obs.next(), a)
		tell()
		if a.err == nil || !errors.Is(a.err, ErrNotObtained) || errors.Is(a.err, ErrMisconfigured) {
			c.leave(key, at, a.lock)
			return a.lock, a.err
		}
	}
	w := c.hub.join(key, ttl, lo, at)
	if at != nil && at.sent.Load() && !w.hasTurn() {
		// Other goroutines of this client joined the line first: only those
		// in turn keep a place on the masters, where a place ahead of theirs
		// would hold them up. This one takes its place out, and queues again
		// with a new one, at the same ticket, once its turn comes.
		old := at
		if at, err = c.newPlace(); err != nil {
			w.leave(false)
			c.leave(key, old, nil)
			return nil, err
		}
		at.ticket = old.ticket
		w.movePlace(at)
		c.leave(key, old, nil)
	}
	var got *Lock
	defer func() {
		// Readers share the key: the next of this client's line tries at
		// once after a reader got it.
		w.leave(got != nil && !lo.read)
		c.leave(key, at, got)
	}()
	// The minority rule (see place): a waiter renews its place only while
	// its last round reached a quorum of masters whose votes count.
	renew := !attempted || a.reached >= c.need(lo.quorum)
	renewEvery := c.o.queueLease / 3
	// Announcements are heard from here on, so an immediate retry closes
	// the gap between the first attempt and the subscription: a release
	// made in it, naming this waiter, went unheard. A waiter that is not
	// in turn here has no such gap (see pokeIfInTurn). One that stands
	// behind two others or more in the masters' queues is unlikely to be
	// named that soon, so it does not retry at once, but its first wait is
	// short: those ahead of it may have left in the gap (other goroutines
	// of this client, say, that joined its line behind it). One that made
	// no attempt and is in turn tries at once.
	w.ready(ctx, c.nodeTimeout(ttl))
	if !attempted || !a.far {
		w.pokeIfInTurn()
	}
	gap := attempted && a.far
	splits := 0 // split votes in a row
	for n := 1; ; n++ {
		delay, ok := c.o.retry.Delay(n)
		if !ok {
			return nil, gaveUp(a.err, c.o.clock.Since(start), nil)
		}
		delay = max(delay, 0)
		switch {
		case a.behind:
			// Others head the masters' queues: the release that names this
			// waiter wakes it; until then it only renews its place.
			delay = renewEvery
		case a.first:
			// Only the holder stands before it: the release that names it
			// wakes it, or the holder's TTL runs out.
			delay = renewEvery
			if a.freeIn > 0 {
				delay = min(delay, a.freeIn)
			}
		case a.freeIn > 0 && a.freeIn < delay:
			delay = a.freeIn
		}
		delay = min(delay, renewEvery)
		if gap {
			delay = min(delay, 2*c.nodeTimeout(ttl))
			gap = false
		}
		if w.awaitingConfirmation() {
			// A release now could go unheard: poll until the subscription is confirmed.
			delay = min(delay, c.nodeTimeout(ttl))
		}
		if a.split {
			// Several waiters each won a minority: none holds the lock, and the
			// rollbacks are done. Retry soon, spread by jitter.
			splits++
			delay = splitDelay(c.nodeTimeout(ttl)/10+time.Millisecond, splits, delay)
		} else {
			splits = 0
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
			got = handed
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
				got = handed
				return handed, nil
			}
		}
		if at != nil {
			at.idle.Store(!renew)
		}
		a = c.attempt(ctx, key, ttl, lo, nil, at)
		c.observeAttempt(ctx, key, obs.next(), a)
		w.end()
		tell()
		if a.err == nil {
			got = a.lock
			return a.lock, nil
		}
		renew = a.reached >= c.need(lo.quorum)
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
	if lo.permits > 0 && lo.ownerSet {
		return 0, lockOptions{}, invalid("WithOwner does not apply to a semaphore's permit: a permit is not reentrant")
	}
	if err := c.enter(); err != nil {
		return 0, lockOptions{}, err
	}
	return ttl, lo, nil
}
