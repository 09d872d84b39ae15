package redlock

import (
	"context"
	"time"
)

// RWLock is a readers-writer lock on one key over the client's masters:
// any number of readers hold it together, a writer holds it alone. Each
// hold is a *Lock, with the lock's lifecycle: its TTL, Extend and
// WithAutoExtend, Done and Err when it is lost, Release, and a Fence.
//
// Quorum. A hold of either kind needs the client's quorum, a majority, as a
// lock does. A master admits either one writer or any number of readers
// of a key, never both, and any two majorities share a master: so a writer
// and another holder, reader or writer, cannot both hold a majority. (A
// semaphore of K permits needs more: there a master admits K holders at
// once, and majorities no longer bound them; see quorumlock.PermitQuorum.)
//
// Writers are not starved. A writer's Lock waits in the key's queue on the
// masters, as a lock's does, and while a writer waits there no new reader
// is granted: the readers holding the key drain, and the writer takes it.
// Readers never queue; they wait until no writer holds or waits on a
// quorum of masters, and a steady stream of writers can keep them out.
//
// Fence. Every grant, read or write, is counted and raised on the masters
// as a lock's is: a writer's fence is above the fence of every hold, read
// or write, that ended before it was granted, and a reader's above the
// fence of every write hold that ended before it was granted. Readers that
// hold the key together are not ordered among themselves.
// For a resource that records the highest fence it has seen (package
// fencing): writers check and record their fence as a lock's holder does;
// a reader compares its fence with the highest recorded, and one below it
// outlived a later writer, whose writes it may not see as it expects.
//
// In storage a writer is a plain lock of the key: a Client's Lock on the
// same key is a writer of this RWLock. A reentrant lock or a semaphore on
// the same key refuses, and is refused by, both (a semaphore's permit
// asked while readers hold gets a *PermitsError naming 0 permits).
type RWLock struct {
	c   *Client
	key string
}

// RWLock returns the readers-writer lock of key. It errors with ErrInvalid
// for an empty key or one with the reserved prefix.
func (c *Client) RWLock(key string) (*RWLock, error) {
	if err := c.checkKey(context.Background(), key); err != nil {
		return nil, err
	}
	return &RWLock{c: c, key: key}, nil
}

// Key returns the key the lock is on.
func (rw *RWLock) Key() string {
	if rw == nil {
		return ""
	}
	return rw.key
}

// client is rw's client, nil for a nil or zero RWLock: its calls then
// fail with ErrInvalid, as a nil Client's do.
func (rw *RWLock) client() *Client {
	if rw == nil {
		return nil
	}
	return rw.c
}

// RLock takes a read hold of the key for ttl, retrying until it has it or
// ctx is done, as Client.Lock does, but without a place in the key's queue:
// it waits while a writer holds or waits. WithOwner is ErrInvalid.
func (rw *RWLock) RLock(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return rw.client().Lock(ctx, rw.Key(), ttl, with(opts, readHold())...)
}

// TryRLock makes one attempt at a read hold of the key for ttl, as
// Client.TryLock does. WithOwner is ErrInvalid.
func (rw *RWLock) TryRLock(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return rw.client().TryLock(ctx, rw.Key(), ttl, with(opts, readHold())...)
}

// Lock takes the write hold of the key for ttl, retrying until it has it or
// ctx is done, as Client.Lock does. WithOwner is ErrInvalid.
func (rw *RWLock) Lock(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return rw.client().Lock(ctx, rw.Key(), ttl, with(opts, writeHold())...)
}

// TryLock makes one attempt at the write hold of the key for ttl, as
// Client.TryLock does. It does not take the key while a writer waits for
// it. WithOwner is ErrInvalid.
func (rw *RWLock) TryLock(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	return rw.client().TryLock(ctx, rw.Key(), ttl, with(opts, writeHold())...)
}

// DoRead runs fn under a read hold, as Client.Do runs it under a lock.
func (rw *RWLock) DoRead(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return rw.client().Do(ctx, rw.Key(), ttl, fn, with(opts, readHold())...)
}

// DoWrite runs fn under the write hold, as Client.Do runs it under a lock.
func (rw *RWLock) DoWrite(ctx context.Context, ttl time.Duration, fn func(ctx context.Context) error, opts ...LockOption) error {
	return rw.client().Do(ctx, rw.Key(), ttl, fn, with(opts, writeHold())...)
}

// with returns opts and o, leaving the caller's slice as it was.
func with(opts []LockOption, o LockOption) []LockOption {
	return append(opts[:len(opts):len(opts)], o)
}
