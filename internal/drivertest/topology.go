package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// nodeCount is how many nodes the lock suite's lock has.
const nodeCount = 3

// nodes is what one subtest of the lock suite runs on: the lock's three
// nodes, each a standalone redis-server or a Redis Cluster, empty when the
// subtest starts. A subtest written against it runs on both.
type nodes interface {
	// open returns a driver for each node, closed with the test.
	open(t *testing.T) []driver.Master
	// keys returns keys named after name, one in a slot of each shard of a
	// node, the same slots on every node: a single key on standalone
	// masters. The first is always in the same slot, whatever the name.
	keys(t *testing.T, name string) []string
	// server returns the address of the server of node i that holds key:
	// the master, or the cluster's master owning the key's slot.
	server(t *testing.T, i int, key string) string
	// servers returns the address of every server of every node.
	servers() []string
	// restart kills the server of node i that holds key, starts it again
	// empty, and waits until it serves.
	restart(t *testing.T, i int, key string)
}

// topology gives each subtest its nodes.
type topology func(t *testing.T) nodes

// standalone is three redis-server masters, started for each subtest.
type standalone struct {
	srv       []*redistest.Server
	newDriver New
}

// standaloneTopology starts three masters for each subtest: they take
// milliseconds.
func standaloneTopology(newDriver New) topology {
	return func(t *testing.T) nodes {
		return standalone{srv: redistest.Start(t, nodeCount, redistest.Ephemeral), newDriver: newDriver}
	}
}

func (s standalone) open(t *testing.T) []driver.Master {
	ds := make([]driver.Master, len(s.srv))
	for i, srv := range s.srv {
		ds[i] = closed(t, s.newDriver(t, srv.Addr()))
	}
	return ds
}

func (s standalone) keys(_ *testing.T, name string) []string { return []string{name} }

func (s standalone) server(_ *testing.T, i int, _ string) string { return s.srv[i].Addr() }

func (s standalone) servers() []string { return redistest.Addrs(s.srv) }

func (s standalone) restart(t *testing.T, i int, _ string) {
	t.Helper()
	require.NoError(t, s.srv[i].Kill())
	require.NoError(t, s.srv[i].Restart(redistest.Ephemeral))
}

// clustered is three Redis Clusters of three shards each, started once and
// shared by the subtests, which each start on flushed masters.
type clustered struct {
	cs        []*redistest.Cluster
	slots     []int // one slot of each shard master, the same on every cluster
	newDriver NewCluster
}

// clusterTopology starts three clusters of three shards, which takes a few
// seconds, and gives them to each subtest with every master flushed. The
// subtests name their keys apart as well, so that nothing a subtest left
// running can pass for the next one's.
func clusterTopology(t *testing.T, newDriver NewCluster) topology {
	t.Helper()
	n := clustered{cs: redistest.StartClusters(t, nodeCount, redistest.ClusterOptions{}), newDriver: newDriver}
	n.slots, _ = spread(t, n.cs[0])
	for i, c := range n.cs {
		var masters []string
		for _, s := range n.slots {
			m, err := c.MasterFor(s)
			require.NoError(t, err)
			require.NotContains(t, masters, m, "cluster %d: slots %v, one per shard", i, n.slots)
			masters = append(masters, m)
		}
	}
	return func(t *testing.T) nodes {
		t.Helper()
		for _, c := range n.cs {
			masters, err := c.Masters()
			require.NoError(t, err)
			for _, m := range masters {
				_, err := redistest.DoAt(m, "FLUSHALL")
				require.NoError(t, err)
			}
		}
		return n
	}
}

func (n clustered) open(t *testing.T) []driver.Master {
	ds := make([]driver.Master, len(n.cs))
	for i, c := range n.cs {
		ds[i] = openCluster(t, c, n.newDriver)
	}
	return ds
}

func (n clustered) keys(t *testing.T, name string) []string {
	keys := make([]string, len(n.slots))
	for i, s := range n.slots {
		keys[i] = keyIn(t, name, s)
	}
	return keys
}

func (n clustered) server(t *testing.T, i int, key string) string {
	t.Helper()
	m, err := n.cs[i].MasterFor(slot.Of(key))
	require.NoError(t, err)
	return m
}

func (n clustered) servers() []string {
	var all []string
	for _, c := range n.cs {
		all = append(all, c.Addrs()...)
	}
	return all
}

func (n clustered) restart(t *testing.T, i int, key string) {
	t.Helper()
	srv := n.cs[i].Server(n.server(t, i, key))
	require.NoError(t, srv.Kill())
	require.NoError(t, srv.Restart(redistest.Ephemeral))
	require.NoError(t, n.cs[i].WaitReady(30*time.Second))
}

// closed registers d's Close with the test and returns d.
func closed(t *testing.T, d driver.Master) driver.Master {
	t.Cleanup(func() { d.Close() })
	return d
}
