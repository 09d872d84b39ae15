package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// wrap returns the adapter over a client with opt for the master at addr;
// the client is closed with the test.
func wrap(t testing.TB, addr string, opt redis.Options) driver.Master {
	opt.Addr = addr
	c := redis.NewClient(&opt)
	t.Cleanup(func() { c.Close() })
	m, err := goredis.New(c)
	require.NoError(t, err)
	return m
}

// The adapter passes the contract every driver passes, over a client that
// bounds its I/O by the ctx's deadline and speaks RESP3, go-redis's default.
func TestContract_ContextDeadlines(t *testing.T) {
	drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
		return wrap(t, addr, redis.Options{ContextTimeoutEnabled: true})
	})
}

// And over a client with go-redis's own timeouts, which ignore the ctx's
// deadline, speaking RESP2.
func TestContract_ClientTimeouts(t *testing.T) {
	drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
		return wrap(t, addr, redis.Options{Protocol: 2})
	})
}

// The lock suite over three Redis Clusters of three shards, each through a
// go-redis ClusterClient: every operation on a key of every shard, residue
// looked for on every node, the guard per shard master.
func TestContract_ClusterLock(t *testing.T) {
	drivertest.RunClusterLock(t, func(t testing.TB, seeds []string) driver.Master {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds})
		t.Cleanup(func() { c.Close() })
		m, err := goredis.New(c)
		require.NoError(t, err)
		return m
	})
}

// A cluster client subscribes with sharded pub/sub, one connection per
// shard master, and its subscriptions end when a shard's connection drops
// or a channel's slot moves: through a UniversalClient that is a cluster
// client (RESP3, go-redis's default), and through a ClusterClient speaking
// RESP2 whose I/O the ctx's deadlines bound.
func TestContract_ClusterPubSub(t *testing.T) {
	for _, mode := range []struct {
		name string
		new  func(seeds []string) redis.UniversalClient
	}{
		{"universal", func(seeds []string) redis.UniversalClient {
			return redis.NewUniversalClient(&redis.UniversalOptions{Addrs: seeds})
		}},
		{"resp2", func(seeds []string) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Protocol: 2, ContextTimeoutEnabled: true})
		}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			drivertest.RunClusterPubSub(t, func(t testing.TB, seeds []string) driver.Master {
				c := mode.new(seeds)
				t.Cleanup(func() { c.Close() })
				_, ok := c.(*redis.ClusterClient)
				require.True(t, ok, "%T", c)
				m, err := goredis.New(c)
				require.NoError(t, err)
				return m
			})
		})
	}
}
