package bench

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
)

// NewRedigoPool returns a redigo pool to one master with the same settings
// as quorumlock's redigo.New defaults, so that every contender pays the same
// for connections: 1 s dial, read and write timeouts, 64 idle connections,
// no cap on active ones.
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
