package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The scale run: the three nodes of one lock are three standalone masters,
// or three Redis Clusters of three shards each.
const (
	scaleNodes  = 3
	scaleShards = 3
	// scaleClusterTimeout is the clusters' cluster-node-timeout: long
	// enough that a node starved of CPU on a loaded machine is not marked
	// failing, which would stop its cluster (there are no replicas).
	scaleClusterTimeout = 5 * time.Second
)

// topology is one set-up of the scale run: the lock's nodes, and every
// master process behind them, which its meter reads.
type topology struct {
	name    string // "masters" or "clusters", in the report's keys
	title   string // in the tables
	nodes   []lockNode
	masters []string // every master process's address
}

// startTopologies starts three standalone masters and three clusters of
// three shards, removed with the test.
func startTopologies(tb testing.TB) []topology {
	tb.Helper()
	servers := redistest.Start(tb, scaleNodes, redistest.Ephemeral)
	standalone := topology{
		name:    "masters",
		title:   fmt.Sprintf("%d masters", scaleNodes),
		nodes:   standaloneNodes(redistest.Addrs(servers)),
		masters: redistest.Addrs(servers),
	}
	clustered := topology{
		name:  "clusters",
		title: fmt.Sprintf("%d clusters × %d shards", scaleNodes, scaleShards),
	}
	for _, c := range redistest.StartClusters(tb, scaleNodes, redistest.ClusterOptions{
		Shards: scaleShards, NodeTimeout: scaleClusterTimeout,
	}) {
		ms, err := c.Masters()
		require.NoError(tb, err)
		require.Len(tb, ms, scaleShards)
		clustered.nodes = append(clustered.nodes, lockNode{seeds: c.Addrs(), cluster: true})
		clustered.masters = append(clustered.masters, ms...)
	}
	return []topology{standalone, clustered}
}

// scaleNames are the contenders of the scale run, in table order: the
// library on its own driver (pipelined, redigo.New's and redigo.NewCluster's
// default), then nodeNames.
func scaleNames(topology) []string {
	return append([]string{"quorumlock"}, nodeNames()...)
}

// scaleContenders returns the scale run's contenders on t.
func scaleContenders(tb testing.TB, t topology) []namedLocker {
	tb.Helper()
	names := scaleNames(t)
	cs := make([]namedLocker, len(names))
	for i, name := range names {
		n := new(atomic.Int64)
		cs[i] = namedLocker{name, newNodeContender(tb, name, t.nodes, n), n}
	}
	return cs
}

// idleMastersCPU returns the CPU time the masters behind m use per second
// of wall time with no client: a cluster's nodes ping each other on the
// cluster bus, which the costs per lock include.
func idleMastersCPU(tb testing.TB, m *Meter, over time.Duration) time.Duration {
	tb.Helper()
	before, err := m.Read()
	require.NoError(tb, err)
	time.Sleep(over)
	after, err := m.Read()
	require.NoError(tb, err)
	return time.Duration(float64(after.Sub(before).MastersCPU) / over.Seconds())
}

// Every contender of the scale run takes and releases locks on both
// topologies, and on the clusters the work reaches every shard: each of
// the nine masters runs scripts. The commands are counted for each.
func TestScale_ContendersSpreadOverEveryShard(t *testing.T) {
	ctx := context.Background()
	for _, topo := range startTopologies(t) {
		meter, err := NewMeter(topo.masters)
		require.NoError(t, err)
		t.Cleanup(func() { meter.Close() })
		for _, c := range scaleContenders(t, topo) {
			t.Run(topo.name+"/"+c.Name, func(t *testing.T) {
				calls := make([]int64, len(topo.masters))
				for i, a := range topo.masters {
					calls[i] = scriptCalls(t, a)
				}
				before, err := meter.Read()
				require.NoError(t, err)
				r, err := RunParallel(ctx, c, "spread:"+c.Name, 8, 120, 30*time.Second)
				require.NoError(t, err)
				after, err := meter.Read()
				require.NoError(t, err)
				require.Equal(t, 120, r.Ops)
				// The first calls dial and load scripts, and a loaded machine
				// misses some 50 ms node timeouts; most succeed.
				require.Less(t, r.Errors, 40, "%v", r.FirstErr)
				for i, a := range topo.masters {
					require.Greater(t, scriptCalls(t, a), calls[i], "master %s ran no script", a)
				}
				require.Len(t, after.Sub(before).MasterCPU, len(topo.masters), "a CPU time per master")
				// Each lock sends at least a script per node to acquire and
				// one to release.
				require.GreaterOrEqual(t, c.Sent.Load(), int64(2*scaleNodes*(r.Ops-r.Errors)), "commands counted")
			})
		}
	}
}

// scriptCalls returns how many EVAL and EVALSHA calls the master at addr
// has run since it started.
func scriptCalls(tb testing.TB, addr string) int64 {
	tb.Helper()
	info, err := redis.String(do(tb, addr, "INFO", "commandstats"), nil)
	require.NoError(tb, err)
	f := infoFields(info)
	var n int64
	for _, k := range []string{"cmdstat_eval", "cmdstat_evalsha"} {
		var calls int64
		if v, ok := f[k]; ok {
			_, err := fmt.Sscanf(v, "calls=%d", &calls)
			require.NoError(tb, err, "%s: %s", k, v)
		}
		n += calls
	}
	return n
}
