package rueidisdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// A semaphore's permits through this driver: K granted, the next refused,
// extended, released, and a waiter takes the freed permit.
func TestSemaphore_ThroughTheDriver(t *testing.T) {
	srv := redistest.Start(t, 5, redistest.Ephemeral)
	var clients []rueidis.Client
	for _, s := range srv {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		clients = append(clients, c)
	}
	lc, err := rueidisdriver.NewClient(clients, redlock.WithRestartGuard(0)) // the masters started just now
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
