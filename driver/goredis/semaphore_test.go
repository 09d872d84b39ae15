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

// A semaphore's permits through this driver: K granted, the next refused,
// extended, released, and a waiter takes the freed permit.
func TestSemaphore_ThroughTheDriver(t *testing.T) {
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
	s, err := lc.Semaphore("permits", 2)
	require.NoError(t, err)
	assert.Equal(t, 4, s.Quorum())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	_, err = s.TryAcquire(ctx, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, a.Extend(ctx, 10*time.Second))
	require.NoError(t, a.Release(ctx))
	d, err := s.Acquire(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, d.Fence(), b.Fence())
	require.NoError(t, b.Release(ctx))
	require.NoError(t, d.Release(ctx))
}
