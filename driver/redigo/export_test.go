package redigo

import (
	"context"

	"github.com/gomodule/redigo/redis"
)

// Dials returns how many shared connections r has opened so far.
func Dials(r *Redis) uint64 { return r.pl.Dials() }

// Dial opens a connection of its own with r's settings (TLS, AUTH, SELECT),
// as Subscribe does, as a redigo connection for the test to command.
func Dial(ctx context.Context, r *Redis) (redis.Conn, error) {
	nc, err := r.dial(ctx)
	if err != nil {
		return nil, err
	}
	return redis.NewConn(nc, 0, 0), nil
}
