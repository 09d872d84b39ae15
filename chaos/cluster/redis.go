package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// do runs one command on a fresh connection to addr, within ctx.
func do(ctx context.Context, addr, cmd string, args ...any) (any, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("cluster: command without a deadline")
	}
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return redis.DoWithTimeout(conn, time.Until(deadline), cmd, args...)
}

// waitReady waits until the master at addr answers PING, checking every
// 20ms, up to limit.
func waitReady(ctx context.Context, addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := do(pctx, addr, "PING")
		pcancel()
		if err == nil {
			return nil
		}
		last = err
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: %s did not answer PING within %v: %w", addr, limit, last)
		case <-t.C:
		}
	}
}
