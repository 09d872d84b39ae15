package bench

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	rsrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	"github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"
)

// Redsync is go-redsync/redsync/v4 with its redigo, its go-redis v9 or its
// rueidis adapter, as a contender. It runs with its defaults (it waits for every
// master; Lock retries after 50 to 250 ms, 32 times) except the expiry,
// which is the benchmark's TTL.
type Redsync struct {
	rs    *redsync.Redsync
	owned []io.Closer // the pools or clients Close closes
	opts  []redsync.Option
}

var (
	_ Locker = (*Redsync)(nil)
	_ Waiter = (*Redsync)(nil)
)

// RedigoPool is what redsync's redigo adapter takes. *redis.Pool and
// ObservedRedigoPool implement it.
type RedigoPool = rsredigo.Pool

// NewRedsync returns redsync over the given pools with expiry ttl and any
// further mutex options. Close closes the pools in owned.
func NewRedsync(pools []RedigoPool, owned []*redis.Pool, ttl time.Duration, opts ...redsync.Option) *Redsync {
	rp := make([]rsredis.Pool, len(pools))
	for i, p := range pools {
		rp[i] = rsredigo.NewPool(p)
	}
	closers := make([]io.Closer, len(owned))
	for i, p := range owned {
		closers[i] = p
	}
	return redsyncOver(rp, closers, ttl, opts)
}

// NewRedsyncGoRedis returns redsync with its go-redis v9 adapter over
// clients, one per master: a *goredis.Client, or a *goredis.ClusterClient
// when a master is a Redis Cluster (redsync's commands and scripts each
// touch one key, which the cluster client sends to its slot's master).
// Close closes the clients.
func NewRedsyncGoRedis(clients []goredis.UniversalClient, ttl time.Duration, opts ...redsync.Option) *Redsync {
	rp := make([]rsredis.Pool, len(clients))
	closers := make([]io.Closer, len(clients))
	for i, c := range clients {
		rp[i] = rsgoredis.NewPool(c)
		closers[i] = c
	}
	return redsyncOver(rp, closers, ttl, opts)
}

// NewRedsyncRueidis returns redsync with its rueidis adapter (over
// rueidiscompat) over clients, one per master. Close closes the clients.
func NewRedsyncRueidis(clients []rueidis.Client, ttl time.Duration, opts ...redsync.Option) *Redsync {
	rp := make([]rsredis.Pool, len(clients))
	closers := make([]io.Closer, len(clients))
	for i, c := range clients {
		rp[i] = rsrueidis.NewPool(rueidiscompat.NewAdapter(c))
		closers[i] = rueidisCloser{c}
	}
	return redsyncOver(rp, closers, ttl, opts)
}

// rueidisCloser is a rueidis client as an io.Closer.
type rueidisCloser struct{ c rueidis.Client }

func (r rueidisCloser) Close() error { r.c.Close(); return nil }

func redsyncOver(pools []rsredis.Pool, owned []io.Closer, ttl time.Duration, opts []redsync.Option) *Redsync {
	return &Redsync{
		rs:    redsync.New(pools...),
		owned: owned,
		opts:  append([]redsync.Option{redsync.WithExpiry(ttl)}, opts...),
	}
}

// NewRedsyncFromAddrs returns redsync over fresh pools (NewRedigoPool) to addrs.
func NewRedsyncFromAddrs(addrs []string, ttl time.Duration, opts ...redsync.Option) *Redsync {
	owned := make([]*redis.Pool, len(addrs))
	pools := make([]RedigoPool, len(addrs))
	for i, a := range addrs {
		owned[i] = NewRedigoPool(a)
		pools[i] = owned[i]
	}
	return NewRedsync(pools, owned, ttl, opts...)
}

// redsyncHeld is a held redsync mutex.
type redsyncHeld struct{ m *redsync.Mutex }

// Release unlocks; a quorum that did not confirm the delete is an error.
func (h redsyncHeld) Release(ctx context.Context) error {
	ok, err := h.m.UnlockContext(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("redsync: unlock not confirmed by a quorum")
	}
	return nil
}

// TryLock makes one attempt with a new mutex (a redsync Mutex holds one
// acquisition's token, so it is not shared between goroutines).
func (r *Redsync) TryLock(ctx context.Context, key string) (Held, error) {
	m := r.rs.NewMutex(key, r.opts...)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, err
	}
	return redsyncHeld{m}, nil
}

// Lock calls LockContext until it succeeds or ctx is done: LockContext
// itself gives up after its 32 tries. At most maxLockCalls calls are made.
func (r *Redsync) Lock(ctx context.Context, key string) (Held, error) {
	m := r.rs.NewMutex(key, r.opts...)
	var err error
	for range maxLockCalls {
		if err = m.LockContext(ctx); err == nil {
			return redsyncHeld{m}, nil
		}
		if ctx.Err() != nil {
			return nil, errors.Join(err, ctx.Err())
		}
	}
	return nil, err
}

// maxLockCalls bounds Redsync.Lock: 1000 calls of 32 tries, each try at
// least 50 ms apart, is far beyond any benchmark's deadline.
const maxLockCalls = 1000

// Close closes the pools or clients it owns.
func (r *Redsync) Close() error {
	var errs []error
	for _, p := range r.owned {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}
