package bench

import (
	"context"
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
