package redlock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// On Redis Cluster nodes (three clusters of three shards), an RWLock's
// holds work on a key of every shard: every key its scripts touch is in
// the key's slot.
func TestCluster_RWLock(t *testing.T) {
	cs := redistest.StartClusters(t, 3, redistest.ClusterOptions{})
	urls := make([]string, len(cs))
	for i, c := range cs {
		urls[i] = "redis+cluster://" + strings.Join(c.Addrs(), ",")
	}
	mk := func() *Client {
		c, err := NewFromAddrs(urls, WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := mk(), mk()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range clusterKeys(t, "doc") {
		ra, err := a.RWLock(key)
		require.NoError(t, err)
		rb, err := b.RWLock(key)
		require.NoError(t, err)
		r1, err := ra.TryRLock(ctx, 10*time.Second)
		require.NoError(t, err, "key %s", key)
		r2, err := rb.RLock(ctx, 10*time.Second)
		require.NoError(t, err, "key %s: readers share", key)
		require.NoError(t, r2.Extend(ctx, 10*time.Second))
		_, err = rb.TryLock(ctx, 10*time.Second)
		require.ErrorIs(t, err, ErrNotObtained, "key %s: a writer beside readers", key)
		require.NoError(t, r1.Release(ctx))
		require.NoError(t, r2.Release(ctx))
		w, err := rb.Lock(ctx, 10*time.Second)
		require.NoError(t, err, "key %s", key)
		require.Greater(t, w.Fence(), r2.Fence())
		_, err = ra.TryRLock(ctx, 10*time.Second)
		require.ErrorIs(t, err, ErrNotObtained, "key %s: a reader beside a writer", key)
		require.NoError(t, w.Release(ctx))
	}
}
