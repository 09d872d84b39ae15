package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/redlock"
)

// primitiveMasters is how many masters the primitives' suite runs on: five,
// so that a semaphore's quorum (N-K+1) differs from a majority.
const primitiveMasters = 5

// RunPrimitives runs the lock's other primitives through the driver, on five
// standalone masters: a semaphore's permits, a read-write lock's holds, and
// a set of keys taken together.
func RunPrimitives(t *testing.T, newDriver New) {
	const ttl = 10 * time.Second
	t.Run("Semaphore", func(t *testing.T) {
		// K granted, the next refused, extended, released, and a waiter
		// takes the freed permit.
		_, ds := open(t, primitiveMasters, newDriver)
		c := lockClient(t, ds)
		s, err := c.Semaphore("permits", 2)
		require.NoError(t, err)
		assert.Equal(t, 4, s.Quorum())
		ctx := ctxFor(t, 10*time.Second)
		a, err := s.TryAcquire(ctx, ttl)
		require.NoError(t, err)
		b, err := s.TryAcquire(ctx, ttl)
		require.NoError(t, err)
		_, err = s.TryAcquire(ctx, ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.NoError(t, a.Extend(ctx, ttl))
		require.NoError(t, a.Release(ctx))
		d, err := s.Acquire(ctx, ttl)
		require.NoError(t, err)
		assert.Greater(t, d.Fence(), b.Fence())
		require.NoError(t, b.Release(ctx))
		require.NoError(t, d.Release(ctx))
	})
	t.Run("RWLock", func(t *testing.T) {
		// Readers share, a writer is refused beside them, a read hold is
		// extended and released, and a writer waiting for the last reader
		// takes the key.
		_, ds := open(t, primitiveMasters, newDriver)
		c := lockClient(t, ds)
		rw, err := c.RWLock("doc")
		require.NoError(t, err)
		ctx := ctxFor(t, 10*time.Second)
		a, err := rw.TryRLock(ctx, ttl)
		require.NoError(t, err)
		b, err := rw.RLock(ctx, ttl)
		require.NoError(t, err)
		_, err = rw.TryLock(ctx, ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		require.NoError(t, a.Extend(ctx, ttl))
		require.NoError(t, a.Release(ctx))
		released := make(chan error, 1)
		go func() {
			// Late enough that the writer below waits for it.
			time.Sleep(50 * time.Millisecond)
			released <- b.Release(ctx)
		}()
		w, err := rw.Lock(ctx, ttl)
		require.NoError(t, err)
		require.NoError(t, <-released)
		assert.Greater(t, w.Fence(), b.Fence())
		require.NoError(t, w.Release(ctx))
	})
	t.Run("LockAll", func(t *testing.T) {
		// Refused while a lock holds one key, then taken all together,
		// extended and released, fenced above the lock.
		_, ds := open(t, primitiveMasters, newDriver)
		c := lockClient(t, ds)
		ctx := ctxFor(t, 10*time.Second)
		k, err := c.TryLock(ctx, "b", ttl)
		require.NoError(t, err)
		_, err = c.TryLockAll(ctx, []string{"a", "b"}, ttl)
		require.ErrorIs(t, err, redlock.ErrHeld)
		require.NoError(t, k.Release(ctx))
		l, err := c.LockAll(ctx, []string{"b", "a"}, ttl)
		require.NoError(t, err)
		assert.Greater(t, l.FenceOf("b"), k.Fence())
		_, err = c.TryLock(ctx, "a", ttl)
		require.ErrorIs(t, err, redlock.ErrHeld)
		require.NoError(t, l.Extend(ctx, ttl))
		require.NoError(t, l.Release(ctx))
		m, err := c.TryLock(ctx, "a", ttl)
		require.NoError(t, err)
		assert.Greater(t, m.Fence(), l.FenceOf("a"))
		require.NoError(t, m.Release(ctx))
	})
}
