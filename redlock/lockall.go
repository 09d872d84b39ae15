package redlock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/quorumlock/quorumlock/internal/slot"
)

// TryLockAll makes one attempt to take every key of keys for ttl, all or
// none, on a quorum of masters. The *Lock it returns holds them all: it is
// extended, auto-extended and released as one, and Key returns the first
// key (see Lock.Keys, Lock.FenceOf).
//
// All or none. On each master one script checks that every key is free (or
// already the attempt's) and then takes them all, or takes none: no master
// ever holds part of the set for the attempt. The quorum rule applies to
// the set: the attempt holds the set once a quorum of masters each granted
// it the whole set, so two holders of sets that share a key would share a
// master holding that key for both, which no master allows. A failed
// attempt is rolled back on every master it may have reached, as TryLock's
// is, and it returns what TryLock returns: ErrNotObtained in an
// *AttemptError whose refusals name the first key of the set held there.
//
// No deadlock. Keys need no order: callers taking {a, b} and {b, a} cannot
// wait for each other, since no caller holds anything while it waits. On
// a master the whole set is one atomic step, and across masters an attempt
// that did not reach a quorum gives back everything it took before it
// tries again, rather than keeping part and waiting for the rest. When
// contenders split the masters, the one holding the most keeps its grants
// and asks again as TryLock's does (the others give theirs back), so a
// split seen by every contender resolves in a round or two.
//
// keys must be one at least, none empty, none repeated, none with the
// reserved prefix; on a Redis Cluster node (redis+cluster://) every key
// must be in one hash slot: give them one hash tag, {...}. Otherwise, and
// for WithOwner (a set is never reentrant), it returns an error wrapping
// ErrInvalid.
//
// A set does not queue: it takes a free key only where no Lock waits in
// line for it, as TryLock does, and its release wakes the keys' waiters.
func (c *Client) TryLockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	ttl, lo, err := c.startLockAllCall(ctx, keys, ttl, opts)
	if err != nil {
		return nil, err
	}
	return c.tryOnce(ctx, OpTryLockAll, lo.set.keys[0], ttl, lo)
}

// LockAll takes every key of keys for ttl, all or none, as TryLockAll
// does, retrying until it has them or ctx is done.
//
// It waits between attempts the client's backoff (WithRetry), or until the
// holder's TTL runs out where that comes first; after a split vote it
// tries again soon, spread by jitter over a window that doubles with each
// split in a row, up to that wait. It does not wait in the
// keys' lines (see Lock): a Lock waiting for one of the keys goes first.
// When ctx ends first, the error satisfies both errors.Is(err,
// ErrNotObtained) and errors.Is(err, ctx.Err()).
func (c *Client) LockAll(ctx context.Context, keys []string, ttl time.Duration, opts ...LockOption) (_ *Lock, err error) {
	ttl, lo, err := c.startLockAllCall(ctx, keys, ttl, opts)
	if err != nil {
		return nil, err
	}
	defer c.work.done()
	key := lo.set.keys[0]
	lo.call = OpLockAll
	ctx, obs := c.begin(ctx, lo.call, key)
	defer obs.end(&err)
	start := c.o.clock.Now()
	splits := 0 // split votes in a row
	for n := 1; ; n++ {
		a := c.attempt(ctx, key, ttl, lo, nil, nil)
		c.observeAttempt(ctx, key, obs.next(), a)
		switch {
		case a.err == nil:
			return a.lock, nil
		case !errors.Is(a.err, ErrNotObtained) || errors.Is(a.err, ErrMisconfigured):
			return nil, a.err
		}
		delay, ok := c.o.retry.Delay(n)
		if !ok {
			return nil, gaveUp(a.err, c.o.clock.Since(start), nil)
		}
		delay = max(delay, 0)
		if a.freeIn > 0 && a.freeIn < delay {
			delay = a.freeIn
		}
		if a.split {
			splits++
			delay = splitDelay(c.nodeTimeout(ttl)/10+time.Millisecond, splits, delay)
		} else {
			splits = 0
		}
		if err := c.pause(ctx, delay); err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, err
			}
			return nil, gaveUp(a.err, c.o.clock.Since(start), err)
		}
	}
}

// pause waits d on the client's clock. It returns ctx's cause if ctx ended
// first, ErrClosed if the client closed.
func (c *Client) pause(ctx context.Context, d time.Duration) error {
	t := c.o.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-c.closing:
		return ErrClosed
	}
}

// startLockAllCall validates what TryLockAll and LockAll take, and counts
// the call as the client's work, as startLockCall does.
func (c *Client) startLockAllCall(ctx context.Context, keys []string, ttl time.Duration, opts []LockOption) (time.Duration, lockOptions, error) {
	if len(keys) == 0 {
		return 0, lockOptions{}, invalid("empty key set")
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return 0, lockOptions{}, invalid("key %q is given twice", k)
		}
		seen[k] = true
		if _, err := c.checkKeyTTL(ctx, k, ttl); err != nil {
			return 0, lockOptions{}, err
		}
	}
	if err := c.checkSlots(keys); err != nil {
		return 0, lockOptions{}, err
	}
	ttl, lo, err := c.startLockCall(ctx, keys[0], ttl, opts)
	if err != nil {
		return 0, lockOptions{}, err
	}
	if lo.ownerSet {
		c.work.done()
		return 0, lockOptions{}, invalid("WithOwner does not apply to a set of keys: a set is never reentrant")
	}
	lo.set = &keySet{keys: slices.Clone(keys)}
	return ttl, lo, nil
}

// checkSlots refuses a set whose keys fall in different hash slots when a
// master is a Redis Cluster node: one script runs in one slot, so the set
// could not be taken all or none there.
func (c *Client) checkSlots(keys []string) error {
	sharded := false
	for _, n := range c.nodes {
		if m, ok := n.(*master); ok && m.drv.Sharded() {
			sharded = true
		}
	}
	if !sharded {
		return nil
	}
	nm := c.names()
	first := slot.Of(nm.Lock(keys[0]))
	for _, k := range keys[1:] {
		if s := slot.Of(nm.Lock(k)); s != first {
			return invalid("keys %q (slot %d) and %q (slot %d) are in different hash slots of a Redis Cluster master, "+
				"where a set must be in one: give every key of the set one hash tag, such as {orders}:a and {orders}:b",
				keys[0], first, k, s)
		}
	}
	return nil
}

// Keys returns the locked keys: those given to LockAll or TryLockAll, in
// their order, or the one key of a Lock or TryLock.
func (l *Lock) Keys() []string {
	if !l.obtained() {
		return nil
	}
	if l.req.set == nil {
		return []string{l.req.key}
	}
	return slices.Clone(l.req.set.keys)
}

// FenceOf returns the fencing token of key, one of Keys: a number strictly
// greater than the fence of every earlier holder of key (see Fence). It
// returns 0 for a key the lock does not hold. The keys of a set share one
// fence, counted once per grant of the set.
func (l *Lock) FenceOf(key string) int64 {
	if !slices.Contains(l.Keys(), key) {
		return 0
	}
	return l.fence
}
