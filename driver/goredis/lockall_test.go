package goredis_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// A set of keys through this driver: refused while a lock holds one key,
// then taken all together, extended and released, fenced above the lock.
func TestLockAll_ThroughTheDriver(t *testing.T) {
	srv := redistest.Start(t, 5, redistest.Ephemeral)
	var clients []redis.UniversalClient
	for _, s := range srv {
		c := redis.NewClient(&redis.Options{Addr: s.Addr()})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	lc, err := goredis.NewClient(clients, redlock.WithRestartGuard(0)) // the masters started just now
	require.NoError(t, err)
	defer lc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := lc.TryLock(ctx, "b", 10*time.Second)
	require.NoError(t, err)
	_, err = lc.TryLockAll(ctx, []string{"a", "b"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeld)
	require.NoError(t, k.Release(ctx))
	l, err := lc.LockAll(ctx, []string{"b", "a"}, 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.FenceOf("b"), k.Fence())
	_, err = lc.TryLock(ctx, "a", 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrHeld)
	require.NoError(t, l.Extend(ctx, 10*time.Second))
	require.NoError(t, l.Release(ctx))
	m, err := lc.TryLock(ctx, "a", 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, m.Fence(), l.FenceOf("a"))
	require.NoError(t, m.Release(ctx))
}
