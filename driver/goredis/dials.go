package goredis

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// dialCounter is a redis.Hook that counts the connections a client opens to
// one server: its pooled connections, its pub/sub connections, and any it
// opens in place of another. It only counts: commands and pipelines pass
// through untouched.
//
// The count goes up once a connection is open and before the client hands
// it to anyone, so a call that reads the count before it runs and again
// after knows whether its connection may be one it has never seen: then
// the two reads differ.
type dialCounter struct {
	n atomic.Uint64
}

// DialHook counts each connection the dial opens.
func (d *dialCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil {
			d.n.Add(1)
		}
		return conn, err
	}
}

// ProcessHook leaves commands as they are.
func (d *dialCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook leaves pipelines as they are.
func (d *dialCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// load returns the count.
func (d *dialCounter) load() uint64 { return d.n.Load() }
