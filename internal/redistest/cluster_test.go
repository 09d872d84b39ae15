package redistest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// sampleSlots returns slots spread over the whole range, both ends
// included.
func sampleSlots() []int {
	out := []int{0, 1, slot.Count - 1}
	for s := 97; s < slot.Count; s += 331 {
		out = append(out, s)
	}
	return out
}

// keyIn returns a key whose slot is s.
func keyIn(t *testing.T, s int) string {
	tag, err := slot.TagFor(s)
	require.NoError(t, err)
	return "redistest:{" + tag + "}"
}

func TestStartClusters_ThreeClustersOfThreeShards_EachSlotServedByOneMaster(t *testing.T) {
	start := time.Now()
	clusters := redistest.StartClusters(t, 3, redistest.ClusterOptions{Shards: 3})
	t.Logf("three clusters of three shards ready in %v", time.Since(start).Round(time.Millisecond))

	var seen []string
	for i, c := range clusters {
		masters, err := c.Masters()
		require.NoError(t, err)
		require.Len(t, masters, 3, "cluster %d", i)
		assert.ElementsMatch(t, c.Addrs(), masters, "cluster %d: with no replicas every node is a master", i)
		for _, a := range masters {
			assert.NotContains(t, seen, a, "clusters share no node")
			seen = append(seen, a)
		}
		for _, s := range sampleSlots() {
			owner, err := c.MasterFor(s)
			require.NoError(t, err)
			key := keyIn(t, s)
			for _, m := range masters {
				_, err := redistest.DoAt(m, "SET", key, "v")
				if m == owner {
					assert.NoError(t, err, "cluster %d: slot %d's owner %s takes its key", i, s, m)
				} else {
					assert.ErrorContains(t, err, fmt.Sprintf("MOVED %d %s", s, owner), "cluster %d: %s sends slot %d on", i, m, s)
				}
			}
		}
		for _, m := range masters {
			key, s, err := c.KeyOn(m, "on")
			require.NoError(t, err)
			assert.Equal(t, slot.Of(key), s, "cluster %d: KeyOn gives the key's slot", i)
			_, err = redistest.DoAt(m, "SET", key, "v")
			assert.NoError(t, err, "cluster %d: %s takes the key KeyOn gave for it", i, m)
		}
	}
}

func TestCluster_Failover_PromotesTheReplicaWithTheMastersData(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Shards: 3, Replicas: 1, NodeTimeout: 500 * time.Millisecond})
	masters, err := c.Masters()
	require.NoError(t, err)
	require.Len(t, masters, 3)
	require.Len(t, c.Addrs(), 6)

	const s = 42
	old, err := c.MasterFor(s)
	require.NoError(t, err)
	replicas, err := c.ReplicasOf(old)
	require.NoError(t, err)
	require.Len(t, replicas, 1)

	// What is not a master is neither killed nor failed over.
	for _, addr := range []string{replicas[0], "127.0.0.1:1"} {
		assert.Error(t, c.KillMaster(addr), addr)
		_, err := c.Failover(addr)
		assert.Error(t, err, addr)
	}
	for _, a := range c.Addrs() {
		require.NotZero(t, c.Server(a).PID(), "%s still runs", a)
	}
	_, err = c.MasterFor(slot.Count)
	assert.Error(t, err, "a slot past the last")

	key := keyIn(t, s)
	_, err = redistest.DoAt(old, "SET", key, "held")
	require.NoError(t, err)
	require.NoError(t, redistest.WaitReplicated(c.Server(old), c.Server(replicas[0]), 5*time.Second))

	start := time.Now()
	promoted, err := c.Failover(old)
	require.NoError(t, err)
	t.Logf("failover done in %v", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, replicas[0], promoted)
	assert.Zero(t, c.Server(old).PID(), "the old master is dead")
	now, err := c.MasterFor(s)
	require.NoError(t, err)
	assert.Equal(t, promoted, now)
	f, err := c.Server(promoted).Info("replication")
	require.NoError(t, err)
	assert.Equal(t, "master", f["role"])
	v, err := redistest.DoAt(promoted, "GET", key)
	require.NoError(t, err)
	assert.Equal(t, "held", v, "the promoted replica kept the write")
	for _, a := range c.Addrs() {
		if a == old {
			continue
		}
		info, err := redistest.DoAt(a, "CLUSTER", "INFO")
		require.NoError(t, err)
		assert.Contains(t, info, "cluster_state:ok", a)
	}

	// The old master comes back as a replica of the one that took over.
	require.NoError(t, c.Server(old).Restart(redistest.Ephemeral))
	require.NoError(t, c.WaitReady(30*time.Second))
	replicas, err = c.ReplicasOf(promoted)
	require.NoError(t, err)
	assert.Equal(t, []string{old}, replicas)
	masters, err = c.Masters()
	require.NoError(t, err)
	assert.NotContains(t, masters, old)
}

func TestCluster_KillMaster_WithoutReplicaLeavesItsSlotsUnserved(t *testing.T) {
	c := redistest.StartCluster(t, redistest.ClusterOptions{Shards: 3, NodeTimeout: 500 * time.Millisecond})
	owner, err := c.MasterFor(0)
	require.NoError(t, err)
	require.NoError(t, c.KillMaster(owner))
	assert.Zero(t, c.Server(owner).PID())
	assert.Error(t, c.WaitReady(2*time.Second), "a slot with no master is not served")
	_, err = c.Failover(owner)
	assert.Error(t, err, "a master with no replica cannot fail over")

	require.NoError(t, c.Server(owner).Restart(redistest.Ephemeral))
	require.NoError(t, c.WaitReady(30*time.Second))
	now, err := c.MasterFor(0)
	require.NoError(t, err)
	assert.Equal(t, owner, now, "the restarted master owns its slots again")
}
