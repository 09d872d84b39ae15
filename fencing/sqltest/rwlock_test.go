package sqltest_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/fencing"
	"github.com/quorumlock/quorumlock/fencing/sqltest"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// An RWLock's fences at the guard, on SQLite and PostgreSQL, with holds
// taken on real masters: a writer after a reader is accepted, even where
// the reader's fence was recorded; a reader that outlived a later writer's
// grant finds its fence below the recorded one, and its Check is stale; a
// reader after that writer passes.
func TestGuard_RWLockFences(t *testing.T) {
	pg := sqltest.StartPostgres(t)
	masters := redistest.Addrs(redistest.Start(t, 3, redistest.Ephemeral))
	c, err := redlock.NewFromAddrs(masters, redlock.WithRestartGuard(0),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	for _, d := range sqltest.Both(t, pg) {
		t.Run(d.Name, func(t *testing.T) {
			g := newGuard(t, d)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			rw, err := c.RWLock("ledger:" + d.Name)
			require.NoError(t, err)
			res := "ledger"

			r1, err := rw.RLock(ctx, 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, checkIn(t, d, g, res, r1.Fence(), true), "a reader's fence recorded")
			require.NoError(t, r1.Release(ctx))
			w1, err := rw.Lock(ctx, 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, checkIn(t, d, g, res, w1.Fence(), true), "a writer after a reader is accepted")
			require.NoError(t, w1.Release(ctx))

			// A reader paused past its validity; a writer is granted once
			// its hold ended on the masters, and writes.
			const ttl = 300 * time.Millisecond
			stale, err := rw.TryRLock(ctx, ttl)
			require.NoError(t, err)
			time.Sleep(ttl + 50*time.Millisecond)
			require.Negative(t, stale.Validity(), "the reader outlived its hold")
			w2, err := rw.Lock(ctx, 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, checkIn(t, d, g, res, w2.Fence(), true))
			require.NoError(t, w2.Release(ctx))

			// The reader resumes.
			assert.Less(t, stale.Fence(), highest(t, d, g, res), "a stale reader's fence is below the writer's recorded")
			err = checkIn(t, d, g, res, stale.Fence(), false)
			require.ErrorIs(t, err, fencing.ErrStale, "a stale reader after a writer is rejected")
			r3, err := rw.TryRLock(ctx, 10*time.Second)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, r3.Fence(), highest(t, d, g, res), "a reader after the writer passes")
			require.NoError(t, r3.Release(ctx))
		})
	}
}
