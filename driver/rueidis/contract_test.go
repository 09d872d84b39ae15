package rueidisdriver_test

import (
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// standalone returns a rueidis client to the master at addr with rueidis'
// defaults (client-side caching on, four pipelined connections), closed
// when the test ends.
func standalone(t testing.TB, addr string) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	return client
}

// The adapter over a standalone client passes the contract every driver
// passes.
func TestContract_Standalone(t *testing.T) {
	drivertest.Run(t, func(t testing.TB, addr string) driver.Master {
		m, err := rueidisdriver.New(standalone(t, addr))
		require.NoError(t, err)
		return m
	})
}

// The driver's contract holds with every call made through Start, the path
// the lock takes for its acquires and releases: the replies, the questions
// on a new connection only, a restarted master, a stopped master's
// deadlines.
func TestContract_ThroughStart(t *testing.T) {
	drivertest.RunDriver(t, func(t testing.TB, addr string) driver.Master {
		m, err := rueidisdriver.New(standalone(t, addr))
		require.NoError(t, err)
		return drivertest.ThroughStart(t, m)
	})
}

// The lock suite over three Redis Clusters of three shards, each through a
// rueidis cluster client: every operation on a key of every shard, residue
// looked for on every node, the guard per shard master.
func TestContract_ClusterLock(t *testing.T) {
	drivertest.RunClusterLock(t, func(t testing.TB, seeds []string) driver.Master {
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds})
		require.NoError(t, err)
		t.Cleanup(client.Close)
		m, err := rueidisdriver.New(client)
		require.NoError(t, err)
		return m
	})
}

// A cluster client subscribes with sharded pub/sub, one dedicated
// connection per shard master, and its subscriptions end when a shard's
// connection drops or a channel's slot moves: with rueidis' defaults
// (RESP3), and over RESP2, which needs client-side caching off.
func TestContract_ClusterPubSub(t *testing.T) {
	for _, mode := range []struct {
		name  string
		resp2 bool
	}{{"resp3", false}, {"resp2", true}} {
		t.Run(mode.name, func(t *testing.T) {
			drivertest.RunClusterPubSub(t, func(t testing.TB, seeds []string) driver.Master {
				client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, AlwaysRESP2: mode.resp2, DisableCache: mode.resp2})
				require.NoError(t, err)
				t.Cleanup(client.Close)
				require.Equal(t, rueidis.ClientModeCluster, client.Mode())
				m, err := rueidisdriver.New(client)
				require.NoError(t, err)
				return m
			})
		})
	}
}
