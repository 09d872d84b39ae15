package findings

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestFence_MasterLostItsDataBehindTheRestartGuard_StillGrows checks the
// promise (docs/fencing.md, "Fencing tokens") that fences keep growing across a
// master that loses its data, once the restart guard has kept it out for
// its window.
//
// Five masters; client A reaches n0, n1 and n2, client B reaches n0, n3 and
// n4 (each sees a majority, the two share n0). A takes the lock five times.
// n0 crashes and comes back empty. B waits out the guard window, as the
// guard and the delayed-restart rule require, then takes the lock. No
// member of B's quorum remembers A's fences: B's fence is above A's only
// because a master without a fence floor starts it from its clock. Masters
// that counted from zero would give B fence 1 after A's 5, and a fenced
// resource would then reject the rightful holder and accept a late write
// from A's last holder.
func TestFence_MasterLostItsDataBehindTheRestartGuard_StillGrows(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	servers := redistest.Start(t, 5, redistest.Ephemeral)
	n := redistest.Addrs(servers)
	const key, ttl = "finding-fence", time.Second
	quiet := redlock.WithLogger(slog.New(slog.DiscardHandler))

	closed := closedAddrs(t, 4)
	a, err := redlock.NewFromAddrs([]string{n[0], n[1], n[2], closed[0], closed[1]}, quiet) // guard on: the default
	require.NoError(t, err)
	defer a.Close()
	b, err := redlock.NewFromAddrs([]string{n[0], closed[2], closed[3], n[3], n[4]}, quiet)
	require.NoError(t, err)
	defer b.Close()

	// Fresh masters are quarantined until up longer than the window.
	l, err := a.Lock(ctx, key, ttl)
	require.NoError(t, err)
	last := l.Fence()
	require.NoError(t, l.Release(ctx))
	for range 4 {
		l, err := a.Lock(ctx, key, ttl)
		require.NoError(t, err)
		require.Greater(t, l.Fence(), last)
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
	}

	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[0].Restart(redistest.Ephemeral))
	// Wait out the guard window (TTL plus drift; uptime comes in whole
	// seconds, up to one ahead, and is read as a second less), and longer
	// than the TTL, as the delayed-restart rule asks.
	time.Sleep(ttl + ttl/100 + 2200*time.Millisecond)

	lb, err := b.TryLock(ctx, key, ttl)
	require.NoError(t, err, "n0 is out of quarantine and n3, n4 are free")
	defer lb.Release(context.WithoutCancel(ctx))
	assert.Greater(t, lb.Fence(), last,
		"B's fence %d is not above the fence %d of the holder before it: n0 lost its counter, and the guard does not restore it", lb.Fence(), last)
}
