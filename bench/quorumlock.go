package bench

import (
	"context"
	"errors"
	"time"

	"github.com/quorumlock/quorumlock/redlock"
)

// QuorumLock is the library under test as a contender.
type QuorumLock struct {
	c   *redlock.Client
	ttl time.Duration
}

var (
	_ Locker = (*QuorumLock)(nil)
	_ Waiter = (*QuorumLock)(nil)
)

// NewQuorumLock wraps a client; Close closes it.
func NewQuorumLock(c *redlock.Client, ttl time.Duration) *QuorumLock {
	return &QuorumLock{c: c, ttl: ttl}
}

// TryLock calls Client.TryLock.
func (q *QuorumLock) TryLock(ctx context.Context, key string) (Held, error) {
	l, err := q.c.TryLock(ctx, key, q.ttl)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Lock calls Client.Lock, which waits for release announcements.
func (q *QuorumLock) Lock(ctx context.Context, key string) (Held, error) {
	l, err := q.c.Lock(ctx, key, q.ttl)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Close closes the client.
func (q *QuorumLock) Close() error { return q.c.Close() }

// QuorumSemaphore is the library's semaphore as a contender: each call
// takes one of Permits permits of the key it is given.
type QuorumSemaphore struct {
	c       *redlock.Client
	permits int
	ttl     time.Duration
	opts    []redlock.SemaphoreOption
}

var _ Waiter = (*QuorumSemaphore)(nil)

// NewQuorumSemaphore wraps a client; Close closes it.
func NewQuorumSemaphore(c *redlock.Client, permits int, ttl time.Duration, opts ...redlock.SemaphoreOption) *QuorumSemaphore {
	return &QuorumSemaphore{c: c, permits: permits, ttl: ttl, opts: opts}
}

// Lock takes a permit with Semaphore.Acquire, which waits in line.
func (q *QuorumSemaphore) Lock(ctx context.Context, key string) (Held, error) {
	s, err := q.c.Semaphore(key, q.permits, q.opts...)
	if err != nil {
		return nil, err
	}
	l, err := s.Acquire(ctx, q.ttl)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Close closes the client.
func (q *QuorumSemaphore) Close() error { return q.c.Close() }

// QuorumPair takes two keys for each key it is given, key+"/1" and
// key+"/2": at once with TryLockAll (AtOnce), or one TryLock after the
// other.
type QuorumPair struct {
	c      *redlock.Client
	ttl    time.Duration
	AtOnce bool
}

var _ Locker = (*QuorumPair)(nil)

// NewQuorumPair wraps a client; Close closes it.
func NewQuorumPair(c *redlock.Client, ttl time.Duration, atOnce bool) *QuorumPair {
	return &QuorumPair{c: c, ttl: ttl, AtOnce: atOnce}
}

// TryLock takes both keys, or neither.
func (q *QuorumPair) TryLock(ctx context.Context, key string) (Held, error) {
	keys := []string{key + "/1", key + "/2"}
	if q.AtOnce {
		l, err := q.c.TryLockAll(ctx, keys, q.ttl)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	first, err := q.c.TryLock(ctx, keys[0], q.ttl)
	if err != nil {
		return nil, err
	}
	second, err := q.c.TryLock(ctx, keys[1], q.ttl)
	if err != nil {
		return nil, errors.Join(err, first.Release(ctx))
	}
	return heldPair{first, second}, nil
}

// Close closes the client.
func (q *QuorumPair) Close() error { return q.c.Close() }

// heldPair is two locks taken one after the other, released in turn.
type heldPair [2]*redlock.Lock

func (p heldPair) Release(ctx context.Context) error {
	return errors.Join(p[1].Release(ctx), p[0].Release(ctx))
}
