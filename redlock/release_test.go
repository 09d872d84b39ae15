package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

// A delete that follows a request still on its way keeps the release's
// deadline while half a node timeout of it is left, and otherwise gets a
// node timeout of its own, from when it starts.
func TestFollowerDeadline(t *testing.T) {
	const timeout = 50 * time.Millisecond
	for _, tc := range []struct {
		name    string
		elapsed time.Duration // of the release's fan-out, when the delete starts
		noDL    bool          // the fan-out has no deadline
		shared  bool
	}{
		{name: "just begun", elapsed: 0, shared: true},
		{name: "half left", elapsed: timeout / 2, shared: true},
		{name: "less than half left", elapsed: timeout/2 + time.Millisecond},
		{name: "past the deadline", elapsed: 2 * timeout},
		{name: "no deadline", noDL: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1000, 0))
			fctx, stop := clk.WithTimeout(context.Background(), timeout)
			defer stop()
			if tc.noDL {
				fctx = context.Background()
			}
			clk.Advance(tc.elapsed)
			dctx, cancel := followerDeadline(clk, context.Background(), fctx, timeout)
			dl, ok := dctx.Deadline()
			require.True(t, ok, "a delete always has a deadline")
			if tc.shared {
				assert.Equal(t, fctx, dctx)
				assert.Nil(t, cancel)
				return
			}
			require.NotNil(t, cancel)
			defer cancel()
			assert.Equal(t, clk.Now().Add(timeout), dl, "a node timeout of its own, from now")
		})
	}
}

// A plain lock's fence record, which a Resume reads, goes with the lock: a
// release leaves nothing of it on any master to expire later. A reentrant
// lock's record stays, as its later holds count from it.
func TestIntegration_Release_TakesThePlainLocksRecordWithIt(t *testing.T) {
	srv := masters(t, 3)
	c := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := c.TryLock(ctx, "plain", 10*time.Second)
	require.NoError(t, err)
	r, err := c.TryLock(ctx, "reentrant", 10*time.Second, WithOwner("o"))
	require.NoError(t, err)
	waitHeld(t, "plain", srv...)
	waitHeld(t, "reentrant", srv...)
	for _, s := range srv {
		require.Equal(t, int64(1), do(t, s, "EXISTS", suiteNames().Of("plain").Fence()), "%s keeps no record of the grant", s.Addr())
	}
	require.NoError(t, l.Release(ctx))
	require.NoError(t, r.Release(ctx))
	require.NoError(t, c.Close()) // the releases' last deletes have landed
	for _, s := range srv {
		assert.Equal(t, int64(0), do(t, s, "EXISTS", suiteNames().Of("plain").Fence()), "%s kept the released lock's record", s.Addr())
		assert.Equal(t, int64(1), do(t, s, "EXISTS", suiteNames().Of("reentrant").Fence()), "%s dropped the reentrant lock's record", s.Addr())
	}
}
