package drivertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// RunClusterLock runs the lock's operations through the driver over three
// Redis Clusters of three shards each, as the lock's three nodes: every
// subtest of RunLock, each on a key of every shard, with the residue looked
// for on every node of every cluster; then what only a cluster has. The
// clusters are started once and shared.
//
// On a cluster, AcquireContendRelease, WakeUpAndHandOver and the rest show
// that each shard's master is reached and a release announced on its shard
// is heard; QuarantineAfterRestart shows that the restart guard keeps health per
// shard master: a restarted shard master's keys do not vote for the window,
// and the other shards' keys still lock.
func RunClusterLock(t *testing.T, newDriver NewCluster) {
	top := clusterTopology(t, newDriver)
	runLock(t, top)
	t.Run("PlainKeysOfManySlots", func(t *testing.T) {
		// Keys without a hash tag, of whatever slots they hash to: the lock
		// derives its own names' tags from them.
		n := top(t)
		c := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		const ttl = 10 * time.Second
		var keys []string
		for i := range 10 {
			key := fmt.Sprint("job-", i)
			keys = append(keys, key)
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err, key)
			require.NoError(t, l.Extend(ctx, ttl), key)
			require.NoError(t, l.Release(ctx), key)
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
}
