package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// waitSynced waits until the replica at addr has its link to its master up
// and its first sync done, checking every 20ms, up to limit.
func waitSynced(ctx context.Context, addr string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last string
	for {
		ictx, icancel := context.WithTimeout(ctx, 500*time.Millisecond)
		info, err := redis.String(do(ictx, addr, "INFO", "replication"))
		icancel()
		if err == nil && strings.Contains(info, "master_link_status:up") && strings.Contains(info, "master_sync_in_progress:0") {
			return nil
		}
		last = info
		if err != nil {
			last = err.Error()
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("cluster: replica %s not in sync within %v: %s", addr, limit, last)
		case <-t.C:
		}
	}
}

// detach turns the replica at addr into a master of its own.
func detach(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := do(ctx, addr, "REPLICAOF", "NO", "ONE")
	return err
}
