package redigo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/redigo"
	"github.com/quorumlock/quorumlock/internal/drivertest"
)

// The redigo cluster driver keeps the driver's promises on Redis Cluster
// nodes.
func TestContract_Cluster(t *testing.T) {
	drivertest.RunCluster(t, func(t testing.TB, seeds []string) driver.Master {
		c, err := redigo.NewCluster(seeds)
		require.NoError(t, err)
		return c
	})
}

// The same, each call through Start.
func TestContract_ClusterStart(t *testing.T) {
	drivertest.RunCluster(t, func(t testing.TB, seeds []string) driver.Master {
		c, err := redigo.NewCluster(seeds)
		require.NoError(t, err)
		return drivertest.ThroughStart(t, c)
	})
}

// The lock suite runs over three clusters of three shards through the
// driver.
func TestContract_ClusterLock(t *testing.T) {
	drivertest.RunClusterLock(t, func(t testing.TB, seeds []string) driver.Master {
		c, err := redigo.NewCluster(seeds)
		require.NoError(t, err)
		return c
	})
}
