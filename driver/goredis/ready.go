package goredis

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// readiness makes sure a client has set up a connection through itself
// before the adapter opens any through its Client.Conn.
//
// A go-redis Conn shares its client's options but not the lock that guards
// them. A RESP3 client's first connections try a handshake (maintenance
// notifications) that Redis before 8 refuses, and each refusal writes to
// the options, under the client's lock, that the handshake is off. A Conn
// setting up a new connection at the same moment reads them under its own
// lock: a data race inside go-redis. Once one connection of the client
// itself has been set up, the options are written for good, and Conns only
// read them. (A server that accepts the handshake leaves them as they are,
// until a connection reaches one that refuses it, after a failover say:
// that write can still race. Turning the handshake off in the client's
// options avoids both.) A RESP2 client never tries it.
type readiness struct {
	done atomic.Bool
	gate chan struct{} // a lock that can be waited for within a ctx
}

// newReadiness returns the readiness of a client that speaks protocol
// (its options' Protocol, which go-redis never changes once the client is
// made).
func newReadiness(protocol int) *readiness {
	r := &readiness{gate: make(chan struct{}, 1)}
	r.done.Store(protocol == 2)
	return r
}

// wait returns once a command of the client's own (PING) has succeeded;
// the first caller sends it, within its ctx, and the others wait for it.
func (r *readiness) wait(ctx context.Context, client *redis.Client) error {
	if r.done.Load() {
		return nil
	}
	select {
	case r.gate <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-r.gate }()
	if r.done.Load() {
		return nil
	}
	if err := client.Ping(ctx).Err(); err != nil {
		return err
	}
	r.done.Store(true)
	return nil
}
