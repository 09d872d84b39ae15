package goredis_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// Through a Sentinel failover client, the lock works as through a plain
// one; when the replica is promoted, the client's connections lead to it,
// the guard's questions reach it before it votes, and it does not vote for
// the guard's window (drivertest.RunSentinelFailover). The adapter's master
// is named with WithName, as a failover client has no address of its own.
func TestFailover_PromotedReplica_IsAskedAndQuarantined(t *testing.T) {
	drivertest.RunSentinelFailover(t, func(t testing.TB, sentinel, name string) driver.Master {
		client := redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: name, SentinelAddrs: []string{sentinel}, ContextTimeoutEnabled: true,
		})
		t.Cleanup(func() { client.Close() })
		m, err := goredis.New(client, goredis.WithName("sentinel:"+name))
		require.NoError(t, err)
		return m
	})
}
