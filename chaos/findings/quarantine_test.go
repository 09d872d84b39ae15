package findings

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestLock_WhileMastersAreInRestartQuarantine_BacksOff shows Lock retrying
// in a tight loop while the restart guard keeps the masters out of the
// quorum, as it does for every master after a fleet restart.
//
// The masters' yes votes come back as abstentions, and the attempt marks
// the outcome as a split vote ("nobody holds a quorum"), for which Lock
// retries at once with a jitter of a tenth of the node timeout instead of
// its backoff. Until the quarantine ends, each client sends thousands of
// acquire and roll-back scripts a second to every master.
func TestLock_WhileMastersAreInRestartQuarantine_BacksOff(t *testing.T) {
	requireFindings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := redistest.Start(t, 5, redistest.Ephemeral)
	var attempts atomic.Int64
	c, err := redlock.NewFromAddrs(redistest.Addrs(servers), // restart guard on: the default
		redlock.WithLogger(slog.New(slog.DiscardHandler)),
		redlock.WithTokenGenerator(func() (string, error) {
			attempts.Add(1)
			return redlock.RandomToken()
		}))
	require.NoError(t, err)
	defer c.Close()

	start := time.Now()
	l, err := c.Lock(ctx, "finding-quarantine", time.Second)
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, l.Release(ctx))
	// DefaultRetry backs off exponentially from 4ms to 512ms: a wait of a
	// second or two takes a few dozen attempts, not thousands.
	assert.Less(t, attempts.Load(), int64(200),
		"Lock made %d attempts in %v while the masters were in restart quarantine", attempts.Load(), took.Round(time.Millisecond))
}
