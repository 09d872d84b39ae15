package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock"
)

// clusterResidue returns the clusters where key is set, asked of the master
// of its slot.
func clusterResidue(t *testing.T, cs []*redistest.Cluster, key string) []int {
	t.Helper()
	var held []int
	for i, c := range cs {
		m, err := c.MasterFor(slot.Of(key))
		require.NoError(t, err)
		n, err := redistest.DoAt(m, "EXISTS", key)
		require.NoError(t, err)
		if n != "0" {
			held = append(held, i)
		}
	}
	return held
}

// RunClusterLock runs the lock's operations through the driver over three
// Redis Clusters of three shards each, as the lock's three masters.
func RunClusterLock(t *testing.T, newDriver NewCluster) {
	const ttl = 10 * time.Second
	cs := redistest.StartClusters(t, 3, redistest.ClusterOptions{})
	open := func(t *testing.T) []driver.Master {
		ds := make([]driver.Master, len(cs))
		for i, c := range cs {
			ds[i] = openCluster(t, c, newDriver)
		}
		return ds
	}
	t.Run("AcquireContendReleaseOnEveryShard", func(t *testing.T) {
		c := lockClient(t, open(t))
		ctx := ctxFor(t, 10*time.Second)
		// Keys of slots of each shard.
		for _, s := range []int{10, 6000, 12000} {
			key := keyIn(t, fmt.Sprint("lock-", s), s)
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err, "slot %d", s)
			// TryLock returns at a quorum; the third may still be on its way.
			assert.GreaterOrEqual(t, len(clusterResidue(t, cs, key)), 2)
			_, err = c.TryLock(ctx, key, ttl)
			assert.ErrorIs(t, err, redlock.ErrHeld)
			require.NoError(t, l.Release(ctx))
			settles(t, func() []int { return clusterResidue(t, cs, key) })
		}
	})
	t.Run("PlainKeysOfManySlots", func(t *testing.T) {
		c := lockClient(t, open(t))
		ctx := ctxFor(t, 10*time.Second)
		for i := range 10 {
			key := fmt.Sprint("job-", i)
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err, key)
			require.NoError(t, l.Extend(ctx, ttl), key)
			require.NoError(t, l.Release(ctx), key)
			settles(t, func() []int { return clusterResidue(t, cs, key) })
		}
	})
	t.Run("FailedAttemptLeavesNoResidue", func(t *testing.T) {
		c := lockClient(t, open(t))
		ctx := ctxFor(t, 10*time.Second)
		key := "contended"
		for _, cl := range cs[:2] {
			m, err := cl.MasterFor(slot.Of(key))
			require.NoError(t, err)
			_, err = redistest.DoAt(m, "SET", key, "someone", "PX", "10000")
			require.NoError(t, err)
		}
		_, err := c.TryLock(ctx, key, ttl)
		require.ErrorIs(t, err, redlock.ErrNotObtained)
		assert.Equal(t, []int{0, 1}, clusterResidue(t, cs, key), "the roll-back removed the one vote")
	})
	t.Run("RestartGuardOnVotesPastTheWindow", func(t *testing.T) {
		// With the guard on, every shard master must answer its questions
		// and be past its quarantine before it votes; the guard keeps health
		// per shard master, by the address the driver gives.
		c := lockClient(t, open(t), redlock.WithRestartGuard(time.Second))
		ctx := ctxFor(t, 20*time.Second)
		for _, s := range []int{10, 6000, 12000} {
			key := keyIn(t, "guarded", s)
			var err error
			for try := 0; try < 40; try++ {
				var l *redlock.Lock
				if l, err = c.TryLock(ctx, key, ttl); err == nil {
					require.NoError(t, l.Release(ctx))
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			require.NoError(t, err, "slot %d: the shard masters vote once past the window", s)
		}

		// One shard master restarts empty in two of the three clusters: its
		// keys' votes are out there for the window, and the other shards'
		// keys still lock.
		hit, spared := keyIn(t, "hit", 10), keyIn(t, "spared", 12000)
		for _, cl := range cs[:2] {
			m, err := cl.MasterFor(10)
			require.NoError(t, err)
			srv := cl.Server(m)
			require.NoError(t, srv.Kill())
			require.NoError(t, srv.Restart(redistest.Ephemeral))
			require.NoError(t, cl.WaitReady(30*time.Second))
		}
		_, err := c.TryLock(ctx, hit, ttl)
		assert.ErrorIs(t, err, redlock.ErrQuarantined, "the restarted shard masters do not vote")
		l, err := c.TryLock(ctx, spared, ttl)
		require.NoError(t, err, "the other shards' masters still vote")
		require.NoError(t, l.Release(ctx))
	})
	t.Run("ReleaseWakesAWaiterOnEveryShard", func(t *testing.T) {
		ds := open(t)
		backoff := redlock.WithRetry(redlock.ConstantBackoff(30 * time.Second))
		c, other := lockClient(t, ds, backoff), lockClient(t, open(t), backoff)
		ctx := ctxFor(t, 20*time.Second)
		for _, s := range []int{10, 6000, 12000} {
			key := keyIn(t, "wake", s)
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err)
			got := make(chan error, 1)
			go func() {
				w, err := other.Lock(ctx, key, ttl)
				if err == nil {
					err = w.Release(ctx)
				}
				got <- err
			}()
			time.Sleep(300 * time.Millisecond) // the waiter subscribes on the key's shard
			require.NoError(t, l.Release(ctx))
			select {
			case err := <-got:
				require.NoError(t, err, "slot %d", s)
			case <-time.After(5 * time.Second):
				t.Fatalf("slot %d: the release was not heard; the waiter's backoff is 30s", s)
			}
		}
	})
}
