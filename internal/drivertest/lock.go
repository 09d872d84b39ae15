package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// lockClient returns a client over drivers for the servers; the restart
// guard is off unless opts turn it on, as the servers have just started.
func lockClient(t *testing.T, ds []driver.Master, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	// A node timeout a loaded machine meets: the suite is about what the
	// driver carries, not how fast.
	all := append([]redlock.Option{redlock.WithRestartGuard(0), redlock.WithNodeTimeout(500 * time.Millisecond),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	c, err := redlock.New(ds, all...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// residue returns the servers where key is set.
func residue(t *testing.T, srv []*redistest.Server, key string) []string {
	t.Helper()
	var held []string
	for _, s := range srv {
		n, err := s.Do("EXISTS", key)
		require.NoError(t, err)
		if n != "0" {
			held = append(held, s.Addr())
		}
	}
	return held
}

// settles waits, bounded, until found returns nothing: the lock returns at a
// quorum, and its last requests (a straggler's acquire, a delete) may still
// be on their way to the other masters; none may stay.
func settles[T any](t *testing.T, found func() []T, msgAndArgs ...any) {
	t.Helper()
	var left []T
	for try := 0; try < 100; try++ {
		if left = found(); len(left) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	assert.Empty(t, left, msgAndArgs...)
}

// RunLock runs the lock's operations through the driver.
func RunLock(t *testing.T, newDriver New) {
	const ttl = 10 * time.Second
	t.Run("AcquireContendRelease", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		c := lockClient(t, ds)
		ctx := ctxFor(t, 5*time.Second)
		l, err := c.TryLock(ctx, "k", ttl)
		require.NoError(t, err)
		// TryLock returns at a quorum; the third master's acquire may still
		// be on its way.
		assert.GreaterOrEqual(t, len(residue(t, srv, "k")), 2)
		_, err = c.TryLock(ctx, "k", ttl)
		assert.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.ErrorIs(t, err, redlock.ErrHeld)
		require.NoError(t, l.Release(ctx))
		settles(t, func() []string { return residue(t, srv, "k") })
		assert.ErrorIs(t, l.Release(ctx), redlock.ErrLockNotHeld)
	})
	t.Run("FailedAttemptLeavesNoResidue", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		c := lockClient(t, ds)
		ctx := ctxFor(t, 5*time.Second)
		// Another holds the key on two masters: the attempt gets one vote
		// and must take it back.
		for _, s := range srv[:2] {
			_, err := s.Do("SET", "k", "someone", "PX", "10000")
			require.NoError(t, err)
		}
		_, err := c.TryLock(ctx, "k", ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		n, err := srv[2].Do("EXISTS", "k")
		require.NoError(t, err)
		assert.Equal(t, "0", n, "the roll-back removed the one vote")
	})
	t.Run("ExtendAndFences", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		c := lockClient(t, ds)
		ctx := ctxFor(t, 5*time.Second)
		var last int64
		for i := range 3 {
			l, err := c.TryLock(ctx, "k", time.Second)
			require.NoError(t, err)
			assert.Greater(t, l.Fence(), last, "round %d: fences grow", i)
			last = l.Fence()
			require.NoError(t, l.Extend(ctx, ttl))
			assert.Greater(t, l.Validity(), ttl/2)
			extended := 0
			for _, s := range srv {
				pttl, err := s.Do("PTTL", "k")
				require.NoError(t, err)
				if len(pttl) > 3 { // above 999 ms: the extension's TTL, not the first second
					extended++
				}
			}
			assert.GreaterOrEqual(t, extended, 2, "a quorum carries the new TTL")
			require.NoError(t, l.Release(ctx))
		}
	})
	t.Run("Reentrancy", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		c := lockClient(t, ds)
		ctx := ctxFor(t, 5*time.Second)
		outer, err := c.TryLock(ctx, "k", ttl, redlock.WithOwner("job-1"))
		require.NoError(t, err)
		inner, err := c.TryLock(ctx, "k", ttl, redlock.WithOwner("job-1"))
		require.NoError(t, err)
		_, err = c.TryLock(ctx, "k", ttl, redlock.WithOwner("job-2"))
		assert.ErrorIs(t, err, redlock.ErrHeld)
		require.NoError(t, inner.Release(ctx))
		assert.GreaterOrEqual(t, len(residue(t, srv, "k")), 2, "the outer hold keeps the key")
		require.NoError(t, outer.Release(ctx))
		settles(t, func() []string { return residue(t, srv, "k") })
	})
	t.Run("WakeUpAndHandOver", func(t *testing.T) {
		_, ds := open(t, 3, newDriver)
		// A backoff far longer than the test: only the release's
		// announcement, or a hand-over, can wake the waiter in time.
		c := lockClient(t, ds, redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
		other := lockClient(t, ds, redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
		ctx := ctxFor(t, 10*time.Second)
		for _, tc := range []struct {
			name   string
			waiter *redlock.Client
		}{{"another client (announcement)", other}, {"the same client (hand-over)", c}} {
			l, err := c.TryLock(ctx, "k", ttl)
			require.NoError(t, err)
			got := make(chan error, 1)
			var woke atomic.Int64
			go func() {
				w, err := tc.waiter.Lock(ctx, "k", ttl)
				if err == nil {
					woke.Store(time.Now().UnixNano())
					err = w.Release(ctx)
				}
				got <- err
			}()
			time.Sleep(300 * time.Millisecond) // the waiter subscribes and waits
			released := time.Now()
			require.NoError(t, l.Release(ctx))
			select {
			case err := <-got:
				require.NoError(t, err, tc.name)
				assert.Less(t, time.Duration(woke.Load()-released.UnixNano()), 2*time.Second, tc.name)
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: the waiter was not woken", tc.name)
			}
		}
	})
	t.Run("QuarantineAfterRestart", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		const window = time.Second
		c := lockClient(t, ds, redlock.WithRestartGuard(window))
		ctx := ctxFor(t, 15*time.Second)
		// A fresh master is in quarantine for one window (and INFO's
		// whole-second uptime up to two more): wait it out, and see every
		// master vote, which needs the driver to have carried the guard's
		// questions.
		var err error
		for try := 0; try < 40; try++ {
			var l *redlock.Lock
			if l, err = c.TryLock(ctx, "warm", ttl); err == nil {
				require.NoError(t, l.Release(ctx))
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		require.NoError(t, err, "masters up for the window vote")
		// Two of three restart: the driver must let the guard see it on the
		// connections that replace the dead ones, before they vote.
		for _, s := range srv[:2] {
			require.NoError(t, s.Kill())
			require.NoError(t, s.Restart(redistest.Ephemeral))
		}
		for try := 0; try < 3; try++ {
			_, err = c.TryLock(ctx, fmt.Sprint("k", try), ttl)
			if errors.Is(err, redlock.ErrQuarantined) {
				break
			}
		}
		assert.ErrorIs(t, err, redlock.ErrQuarantined, "restarted masters do not vote")
		for i := range 3 {
			settles(t, func() []string { return residue(t, srv, fmt.Sprint("k", i)) }, "nothing left of refused attempts")
		}
	})
	t.Run("CloseLeavesNothing", func(t *testing.T) {
		srv, ds := open(t, 3, newDriver)
		c, err := redlock.New(ds, redlock.WithRestartGuard(0), redlock.WithNodeTimeout(500*time.Millisecond))
		require.NoError(t, err)
		ctx := ctxFor(t, 5*time.Second)
		l, err := c.TryLock(ctx, "k", ttl)
		require.NoError(t, err)
		require.NoError(t, l.Release(context.Background()))
		require.NoError(t, c.Close())
		settles(t, func() []string { return residue(t, srv, "k") })
		_, err = c.TryLock(ctx, "k2", ttl)
		assert.ErrorIs(t, err, redlock.ErrClosed)
	})
}
