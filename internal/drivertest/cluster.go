package drivertest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
)

// NewCluster makes the driver under test for the Redis Cluster whose nodes
// are at seeds ("host:port", no password). The suite closes it.
type NewCluster func(t testing.TB, seeds []string) driver.Master

// openCluster returns a driver for c, closed with the test.
func openCluster(t *testing.T, c *redistest.Cluster, newDriver NewCluster) driver.Master {
	t.Helper()
	return closed(t, newDriver(t, c.Addrs()))
}

// keyIn returns a key of slot s.
func keyIn(t *testing.T, name string, s int) string {
	t.Helper()
	tag, err := slot.TagFor(s)
	require.NoError(t, err)
	return name + ":{" + tag + "}"
}

// spread returns one slot owned by each master of c, and the masters.
func spread(t *testing.T, c *redistest.Cluster) ([]int, []string) {
	t.Helper()
	var slots []int
	var masters []string
	for s := 0; s < slot.Count; s += 1000 {
		m, err := c.MasterFor(s)
		require.NoError(t, err)
		if !containsStr(masters, m) {
			slots, masters = append(slots, s), append(masters, m)
		}
	}
	require.GreaterOrEqual(t, len(masters), 3, "the slots of 3 shards")
	return slots, masters
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkRecorder is a Call.Check that always asks for INFO server and
// replication, and records the servers it was asked for.
type checkRecorder struct {
	mu      sync.Mutex
	servers []string
}

func (r *checkRecorder) check(server string) *driver.Check {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers = append(r.servers, server)
	return &driver.Check{Questions: [][]string{{"INFO", "server"}, {"INFO", "replication"}}, Always: true}
}

func (r *checkRecorder) asked() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.servers...)
}

// answeredBy returns the tcp_port that INFO server answered with.
func answeredBy(t *testing.T, answers []any) string {
	t.Helper()
	require.NotEmpty(t, answers)
	s, _ := answers[0].(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
			return v
		}
	}
	t.Fatalf("no tcp_port in %q", s)
	return ""
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }

// nodeID returns the cluster node id of the node at addr.
func nodeID(t *testing.T, addr string) string {
	t.Helper()
	id, err := redistest.DoAt(addr, "CLUSTER", "MYID")
	require.NoError(t, err)
	return id
}

// ownerAndAnother returns the master of slot s in c, and another master.
func ownerAndAnother(t *testing.T, c *redistest.Cluster, s int) (string, string) {
	t.Helper()
	owner, err := c.MasterFor(s)
	require.NoError(t, err)
	_, masters := spread(t, c)
	for _, m := range masters {
		if m != owner {
			return owner, m
		}
	}
	t.Fatalf("no master besides %s", owner)
	return "", ""
}

// setSlot moves the ownership of s, which must hold no keys, to the node at
// to, telling every master.
func setSlot(t *testing.T, c *redistest.Cluster, s int, to string) {
	t.Helper()
	masters, err := c.Masters()
	require.NoError(t, err)
	id := nodeID(t, to)
	// The new owner first, then the old, as redis-cli --cluster does.
	order := []string{to}
	for _, m := range masters {
		if m != to {
			order = append(order, m)
		}
	}
	for _, m := range order {
		_, err := redistest.DoAt(m, "CLUSTER", "SETSLOT", fmt.Sprint(s), "NODE", id)
		require.NoError(t, err, "SETSLOT on %s", m)
	}
}

// RunCluster checks the driver's promises on Redis Cluster nodes: scripts
// go to the master of their keys' slot, the restart guard's questions are
// asked of that master by its address, MOVED and ASK are followed after a
// slot migration and a failover, and release announcements travel over
// sharded pub/sub on every shard (the subtests of RunClusterPubSub).
func RunCluster(t *testing.T, newDriver NewCluster) {
	clusters := redistest.StartClusters(t, 2, redistest.ClusterOptions{})
	shared, moving := clusters[0], clusters[1]
	set := driver.NewScript("set", `redis.call('SET', KEYS[1], ARGV[1]); return ARGV[1]`)

	t.Run("RoutesBySlotToTheSlotsMaster", func(t *testing.T) {
		d := openCluster(t, shared, newDriver)
		slots, masters := spread(t, shared)
		for i, s := range slots {
			key := keyIn(t, "route", s)
			var rec checkRecorder
			rep, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{key}, Args: []string{"v"}, Check: rec.check})
			require.NoError(t, err, "slot %d", s)
			assert.Equal(t, "v", rep.Value)
			assert.Equal(t, masters[i], rep.Server, "slot %d goes to its master", s)
			assert.Equal(t, []string{masters[i]}, rec.asked(), "the check is asked for the slot's master, by address")
			assert.Equal(t, portOf(masters[i]), answeredBy(t, rep.Answers), "the slot's master answers the questions")
			assert.Contains(t, rep.Answers[1], "role:master")
			for _, m := range masters {
				n, err := redistest.DoAt(m, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(s))
				require.NoError(t, err)
				want := "0"
				if m == masters[i] {
					want = "1"
				}
				assert.Equal(t, want, n, "keys of slot %d on %s", s, m)
			}
		}
	})
	t.Run("EachServersConnectionIsAskedOnce", func(t *testing.T) {
		d := openCluster(t, shared, newDriver)
		slots, masters := spread(t, shared)
		ask := func(string) *driver.Check { return &driver.Check{Questions: [][]string{{"INFO", "server"}}} }
		// A connection counts as checked once the call's done has returned,
		// which may be just after the caller has its reply: the next call
		// may still ask. Soon none does.
		const rounds = 6
		asked := map[string]int{}
		for range rounds {
			for _, s := range slots {
				rep, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{keyIn(t, "fresh", s)}, Args: []string{"v"}, Check: ask})
				require.NoError(t, err)
				if rep.Answers != nil {
					asked[rep.Server]++
					assert.Equal(t, portOf(rep.Server), answeredBy(t, rep.Answers), "the server the call went to answers")
				}
			}
		}
		for _, m := range masters {
			assert.Positive(t, asked[m], "%s: its first connection is asked", m)
			assert.Less(t, asked[m], rounds, "%s: asked on every call, not once per connection", m)
		}
	})
	t.Run("KeysOfTwoSlotsAreCrossSlot", func(t *testing.T) {
		d := openCluster(t, shared, newDriver)
		a, b := keyIn(t, "cross", 1), keyIn(t, "cross", 2)
		_, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{a, b}, Args: []string{"v"}})
		var de driver.Error
		require.True(t, errors.As(err, &de), "got %T %v", err, err)
		assert.Equal(t, "CROSSSLOT", de.Code())
		for _, k := range []string{a, b} {
			m, err := shared.MasterFor(slot.Of(k))
			require.NoError(t, err)
			n, err := redistest.DoAt(m, "EXISTS", k)
			require.NoError(t, err)
			assert.Equal(t, "0", n, "nothing written")
		}
	})
	t.Run("ScriptSourceWhenTheMasterLostIt", func(t *testing.T) {
		d := openCluster(t, shared, newDriver)
		echo := driver.NewScript("echo-cluster", `return ARGV[1]`)
		key := keyIn(t, "flush", 7000)
		m, err := shared.MasterFor(7000)
		require.NoError(t, err)
		for i := range 3 {
			_, err := redistest.DoAt(m, "SCRIPT", "FLUSH")
			require.NoError(t, err)
			rep, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: echo, Keys: []string{key}, Args: []string{fmt.Sprint(i)}})
			require.NoError(t, err, "try %d", i)
			assert.Equal(t, fmt.Sprint(i), rep.Value)
		}
	})
	t.Run("ShardedSubscriptionOnEveryShard", func(t *testing.T) { shardedSubscriptionOnEveryShard(t, shared, newDriver) })
	t.Run("ChannelsOfManySlotsOnOneShard", func(t *testing.T) { channelsOfManySlotsOnOneShard(t, shared, newDriver) })
	t.Run("SubscriptionEndsWithAShardsConnection", func(t *testing.T) { subscriptionEndsWithAShardsConnection(t, shared, newDriver) })
	t.Run("CloseEndsCalls", func(t *testing.T) {
		d := newDriver(t, shared.Addrs())
		key := keyIn(t, "close", 3)
		_, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{key}, Args: []string{"v"}})
		require.NoError(t, err)
		require.NoError(t, d.Close())
		_, err = eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{key}, Args: []string{"w"}})
		assert.Error(t, err)
		m, err := shared.MasterFor(3)
		require.NoError(t, err)
		v, err := redistest.DoAt(m, "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "v", v, "nothing ran after Close")
	})
	t.Run("AskDuringMigrationThenMovedAfterIt", func(t *testing.T) {
		d := openCluster(t, moving, newDriver)
		const s = 100
		from, to := ownerAndAnother(t, moving, s)
		// The driver learns the map before the slot moves.
		_, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{keyIn(t, "warm", s)}, Args: []string{"v"}})
		require.NoError(t, err)
		_, err = redistest.DoAt(from, "DEL", keyIn(t, "warm", s))
		require.NoError(t, err)

		// Migrating: a key the old owner lacks is asked of the new one.
		_, err = redistest.DoAt(to, "CLUSTER", "SETSLOT", fmt.Sprint(s), "IMPORTING", nodeID(t, from))
		require.NoError(t, err)
		_, err = redistest.DoAt(from, "CLUSTER", "SETSLOT", fmt.Sprint(s), "MIGRATING", nodeID(t, to))
		require.NoError(t, err)
		asked := keyIn(t, "asked", s)
		var rec checkRecorder
		rep, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{asked}, Args: []string{"a"}, Check: rec.check})
		require.NoError(t, err, "ASK is followed")
		assert.Equal(t, to, rep.Server)
		assert.Equal(t, portOf(to), answeredBy(t, rep.Answers), "the questions reach the node that ran the script")
		assert.Equal(t, to, rec.asked()[len(rec.asked())-1])
		for node, want := range map[string]string{to: "1", from: "0"} {
			n, err := redistest.DoAt(node, "CLUSTER", "COUNTKEYSINSLOT", fmt.Sprint(s))
			require.NoError(t, err)
			assert.Equal(t, want, n, "the script ran on the importing node only: %s", node)
		}

		// Moved: the new owner is found by MOVED, and asked as such.
		setSlot(t, moving, s, to)
		moved := keyIn(t, "moved", s)
		rec = checkRecorder{}
		rep, err = eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{moved}, Args: []string{"m"}, Check: rec.check})
		require.NoError(t, err, "MOVED is followed")
		assert.Equal(t, to, rep.Server)
		assert.Equal(t, portOf(to), answeredBy(t, rep.Answers))
		assert.Equal(t, []string{from, to}, rec.asked(), "asked for the old owner, which said MOVED, then for the new one")
		n, err := redistest.DoAt(to, "EXISTS", moved)
		require.NoError(t, err)
		assert.Equal(t, "1", n)
		// And the next call goes straight to it.
		rec = checkRecorder{}
		rep, err = eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{moved}, Args: []string{"m"}, Check: rec.check})
		require.NoError(t, err)
		assert.Equal(t, []string{to}, rec.asked(), "the slot map was read again")
	})
	t.Run("SubscriptionEndsWhenItsSlotMoves", func(t *testing.T) { subscriptionEndsWhenItsSlotMoves(t, moving, newDriver) })
	t.Run("FailoverIsANewServer", func(t *testing.T) {
		c := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: 1})
		d := openCluster(t, c, newDriver)
		const s = 300
		key := keyIn(t, "failover", s)
		old, err := c.MasterFor(s)
		require.NoError(t, err)
		var rec checkRecorder
		rep, err := eval(t, d, ctxFor(t, 5*time.Second), driver.Call{Script: set, Keys: []string{key}, Args: []string{"v"}, Check: rec.check})
		require.NoError(t, err)
		require.Equal(t, old, rep.Server)
		promoted, err := c.Failover(old)
		require.NoError(t, err)
		// The first call may still go to the dead master; it fails, and a
		// later one finds the new owner.
		var last error
		rep = driver.Reply{}
		for try := 0; try < 10 && rep.Server != promoted; try++ {
			rep, last = eval(t, d, ctxFor(t, 2*time.Second), driver.Call{Script: set, Keys: []string{key}, Args: []string{"w"}, Check: rec.check})
			if last != nil {
				rep = driver.Reply{}
				time.Sleep(100 * time.Millisecond)
			}
		}
		require.NoError(t, last)
		assert.Equal(t, promoted, rep.Server)
		asked := rec.asked()
		assert.Equal(t, promoted, asked[len(asked)-1], "the check is asked for the promoted replica by its address")
		assert.Equal(t, portOf(promoted), answeredBy(t, rep.Answers))
		assert.Contains(t, rep.Answers[1], "role:master")
		v, err := redistest.DoAt(promoted, "GET", key)
		require.NoError(t, err)
		assert.Equal(t, "w", v)
	})
}
