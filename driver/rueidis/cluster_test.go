package rueidisdriver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// clusterClient returns a rueidis cluster client, closed when the test ends.
func clusterClient(t *testing.T, srv []*redistest.Server) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv[0].Addr()}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	require.Equal(t, rueidis.ClientModeCluster, client.Mode())
	return client
}

// newMaster returns the adapter over client, closed when the test ends,
// before the client.
func newMaster(t testing.TB, client rueidis.Client) *rueidisdriver.Master {
	t.Helper()
	m, err := rueidisdriver.New(client)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// keyOn returns a key, starting with prefix, whose slot master m of the
// cluster owns.
func keyOn(t *testing.T, cl *redistest.Cluster, m *redistest.Server, prefix string) string {
	t.Helper()
	key, _, err := cl.KeyOn(m.Addr(), prefix)
	require.NoError(t, err)
	return key
}

func runIDOf(t *testing.T, s *redistest.Server) string {
	t.Helper()
	info, err := s.Info("server")
	require.NoError(t, err)
	return info["run_id"]
}

// answeredRunID returns the run_id in the answer to INFO server.
func answeredRunID(answers []any) string {
	if len(answers) == 0 {
		return ""
	}
	s, _ := answers[0].(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// A call on a cluster goes to the master of its keys' slot, with the
// guard's questions on the same connection: the script's write, the
// answers' run_id, the server the check is asked for and the reply's Server
// all name that master. Each master's connection is fresh until it has
// answered, whatever the others' have: the first call to each is asked, and
// the next one on it is not.
func TestCluster_CallsGoToTheSlotsMaster(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m := newMaster(t, clusterClient(t, srv))
	s := driver.NewScript("set", `redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[2])`)
	for i, owner := range srv {
		key := keyOn(t, cl, srv[i], "calls")
		tagged := "{" + key + "}:other"
		var asked []string
		check := &driver.Check{Questions: [][]string{{"INFO", "server"}}}
		call := driver.Call{
			Script: s, Keys: []string{key, tagged}, Args: []string{"v"},
			Check: func(server string) *driver.Check { asked = append(asked, server); return check },
		}
		rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
		require.NoError(t, err, "node %d", i)
		assert.Nil(t, rep.Value)
		assert.Equal(t, owner.Addr(), rep.Server, "node %d", i)
		assert.Equal(t, []string{owner.Addr()}, asked, "node %d", i)
		assert.Equal(t, runIDOf(t, owner), answeredRunID(rep.Answers), "node %d: the answers come from the slot's master", i)
		again, err := m.Eval(ctxFor(t, 2*time.Second), call)
		require.NoError(t, err, "node %d", i)
		assert.Equal(t, owner.Addr(), again.Server, "node %d", i)
		assert.Nil(t, again.Answers, "node %d: its connection, answered, is asked again", i)
		for j, other := range srv {
			got, err := other.Do("GET", key)
			if j == i {
				require.NoError(t, err)
				assert.Equal(t, "v", got)
			} else {
				assert.Error(t, err, "node %d does not serve the key (MOVED)", j)
			}
		}
	}
}

// Keys of several slots cannot be one call on a cluster: ErrInvalid, and
// nothing is sent.
func TestCluster_KeysOfSeveralSlotsAreInvalid(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m := newMaster(t, clusterClient(t, srv))
	k0, k1 := keyOn(t, cl, srv[0], "x"), keyOn(t, cl, srv[1], "x")
	s := driver.NewScript("set", `redis.call('SET', KEYS[1], 'v'); redis.call('SET', KEYS[2], 'v')`)
	for _, keys := range [][]string{{k0, k1}, {"{a}x", "{b}x"}, nil} {
		_, err := m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: keys})
		assert.ErrorIs(t, err, rueidisdriver.ErrInvalid, "keys %q", keys)
	}
	_, err := srv[0].Do("GET", k0)
	assert.ErrorIs(t, err, redistest.ErrNil, "nothing ran")
}

// When a slot moves to another master, the first call after it meets a
// MOVED on the old master, where the script does not run, and goes to the
// new one, with the questions asked there.
func TestCluster_MovedIsFollowed(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m := newMaster(t, clusterClient(t, srv))
	key := keyOn(t, cl, srv[0], "moving")
	s := driver.NewScript("incr", `return redis.call('INCR', KEYS[1])`)
	check := &driver.Check{Questions: [][]string{{"INFO", "server"}}, Always: true}
	call := driver.Call{Script: s, Keys: []string{key}, Check: func(string) *driver.Check { return check }}
	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	require.Equal(t, srv[0].Addr(), rep.Server)

	// Move the key's (now empty) slot from node 0 to node 1.
	_, err = srv[0].Do("DEL", key)
	require.NoError(t, err)
	slot, err := srv[0].Do("CLUSTER", "KEYSLOT", key)
	require.NoError(t, err)
	to, err := srv[1].Do("CLUSTER", "MYID")
	require.NoError(t, err)
	for _, s := range []*redistest.Server{srv[1], srv[0], srv[2]} {
		_, err := s.Do("CLUSTER", "SETSLOT", slot, "NODE", to)
		require.NoError(t, err)
	}

	rep, err = m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rep.Value, "the script ran once, on the new master")
	assert.Equal(t, srv[1].Addr(), rep.Server)
	assert.Equal(t, runIDOf(t, srv[1]), answeredRunID(rep.Answers), "the answers are the new master's")
	got, err := srv[1].Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "1", got)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// While a slot migrates, a call for a key the old master no longer has gets
// ASK there: the script runs nowhere, and the call fails, which the lock
// counts as a missing vote. A key the old master still has is served there.
func TestCluster_AskIsANoVote(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m := newMaster(t, clusterClient(t, srv))
	here := keyOn(t, cl, srv[0], "migrating")
	gone := "{" + here + "}:gone" // the same slot
	_, err := srv[0].Do("SET", here, "0")
	require.NoError(t, err)
	slot, err := srv[0].Do("CLUSTER", "KEYSLOT", here)
	require.NoError(t, err)
	from, err := srv[0].Do("CLUSTER", "MYID")
	require.NoError(t, err)
	to, err := srv[1].Do("CLUSTER", "MYID")
	require.NoError(t, err)
	_, err = srv[1].Do("CLUSTER", "SETSLOT", slot, "IMPORTING", from)
	require.NoError(t, err)
	_, err = srv[0].Do("CLUSTER", "SETSLOT", slot, "MIGRATING", to)
	require.NoError(t, err)

	s := driver.NewScript("incr", `return redis.call('INCR', KEYS[1])`)
	rep, err := m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{here}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), rep.Value, "the old master still serves the key it has")

	_, err = m.Eval(ctxFor(t, 2*time.Second), driver.Call{Script: s, Keys: []string{gone}})
	var de driver.Error
	require.True(t, errors.As(err, &de), "%T %v", err, err)
	assert.Equal(t, "ASK", de.Code())
	for i, s := range srv {
		n, err := s.Do("CLUSTER", "COUNTKEYSINSLOT", slot)
		require.NoError(t, err)
		assert.Equal(t, map[bool]string{true: "1", false: "0"}[i == 0], n, "keys of the slot on %s: only the one that was there", s.Addr())
	}
}

// When a shard's master dies and its replica takes over, calls for the
// shard fail while it is gone (no vote), and then reach the promoted
// replica, whose own health the questions read.
func TestCluster_FailoverIsFollowed(t *testing.T) {
	// A node timeout of 2 s leaves the test the time to see the dead
	// master fail a call before its replica would take over by itself.
	cl := redistest.StartCluster(t, redistest.ClusterOptions{Replicas: 1, NodeTimeout: 2 * time.Second})
	srv := cl.Nodes()[:3] // the masters come first
	masters, err := cl.Masters()
	require.NoError(t, err)
	require.ElementsMatch(t, redistest.Addrs(srv), masters)
	replicas, err := cl.ReplicasOf(srv[0].Addr())
	require.NoError(t, err)
	require.Len(t, replicas, 1)
	replica := cl.Server(replicas[0])

	m := newMaster(t, clusterClient(t, srv))
	key := keyOn(t, cl, srv[0], "failover")
	s := driver.NewScript("incr", `return redis.call('INCR', KEYS[1])`)
	check := &driver.Check{Questions: [][]string{{"INFO", "server"}}, Always: true}
	call := driver.Call{Script: s, Keys: []string{key}, Check: func(string) *driver.Check { return check }}
	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	require.Equal(t, srv[0].Addr(), rep.Server)

	require.NoError(t, srv[0].Kill())
	_, err = m.Eval(ctxFor(t, time.Second), call)
	assert.Error(t, err, "the dead master gives no vote")
	_, err = replica.Do("CLUSTER", "FAILOVER", "TAKEOVER")
	require.NoError(t, err)

	for try := 0; try < 50; try++ {
		if rep, err = m.Eval(ctxFor(t, time.Second), call); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(t, err, "no call reached the promoted replica within 10s")
	assert.Equal(t, replica.Addr(), rep.Server)
	assert.Equal(t, runIDOf(t, replica), answeredRunID(rep.Answers), "the answers are the promoted replica's")
}
