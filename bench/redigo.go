package bench

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
)

// NewRedigoPool returns a redigo pool to one master with quorumlock's
// default timeouts (redigo.New), so that every contender pays the same for
// connections: 1 s dial, read and write timeouts; 64 idle connections, no
// cap on active ones, so that no call waits for a connection.
func NewRedigoPool(addr string) *redis.Pool {
	opts := []redis.DialOption{
		redis.DialConnectTimeout(time.Second),
		redis.DialReadTimeout(time.Second),
		redis.DialWriteTimeout(time.Second),
	}
	return &redis.Pool{
		MaxIdle:     64,
		IdleTimeout: 5 * time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr, opts...)
		},
	}
}
