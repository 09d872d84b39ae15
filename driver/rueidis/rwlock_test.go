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

// An RWLock's holds through this driver: readers share, a writer is
// refused beside them, extended, released, and a writer waiting for the
// last reader takes the key.
func TestRWLock_ThroughTheDriver(t *testing.T) {
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
	rw, err := lc.RWLock("doc")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := rw.TryRLock(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := rw.RLock(ctx, 10*time.Second)
	require.NoError(t, err)
	_, err = rw.TryLock(ctx, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.NoError(t, a.Extend(ctx, 10*time.Second))
	require.NoError(t, a.Release(ctx))
	go func() {
		time.Sleep(50 * time.Millisecond)
		assert.NoError(t, b.Release(ctx))
	}()
	w, err := rw.Lock(ctx, 10*time.Second)
	require.NoError(t, err)
	assert.Greater(t, w.Fence(), b.Fence())
	require.NoError(t, w.Release(ctx))
}
