package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/driver/goredis"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

func mustDo(t *testing.T, s *redistest.Server, args ...string) string {
	t.Helper()
	v, err := s.Do(args...)
	require.NoError(t, err, "%s: %v", s.Addr(), args)
	return v
}

// keyOn returns a key whose slot master m of the cluster owns, and the slot.
func keyOn(t *testing.T, cl *redistest.Cluster, m *redistest.Server) (string, int) {
	t.Helper()
	key, slot, err := cl.KeyOn(m.Addr(), "key")
	require.NoError(t, err)
	return key, slot
}

// wrapCluster returns the adapter over a cluster client of the nodes.
func wrapCluster(t *testing.T, srv []*redistest.Server, opt redis.ClusterOptions) (*goredis.Master, *redis.ClusterClient) {
	t.Helper()
	opt.Addrs = redistest.Addrs(srv)
	c := redis.NewClusterClient(&opt)
	t.Cleanup(func() { c.Close() })
	m, err := goredis.New(c)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, c
}

func ctx5s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func tcpPort(t *testing.T, answer any) string {
	t.Helper()
	s, _ := answer.(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "tcp_port:"); ok {
			return v
		}
	}
	t.Fatalf("no tcp_port in %q", s)
	return ""
}

// Each call goes to the master of its first key's slot, the guard's
// questions with it, and the call names that master to the guard.
func TestCluster_CallsGoToTheSlotMaster(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	for _, mode := range []struct {
		name string
		opt  redis.ClusterOptions
	}{{"ctx deadlines", redis.ClusterOptions{ContextTimeoutEnabled: true}}, {"client timeouts", redis.ClusterOptions{}}} {
		t.Run(mode.name, func(t *testing.T) {
			m, _ := wrapCluster(t, srv, mode.opt)
			s := driver.NewScript("set", `redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[2])`)
			for i := range srv {
				key, _ := keyOn(t, cl, srv[i])
				var asked []string
				rep, err := m.Eval(ctx5s(t), driver.Call{Script: s, Keys: []string{key, "{" + key + "}.other"}, Args: []string{mode.name},
					Check: func(server string) *driver.Check {
						asked = append(asked, server)
						return &driver.Check{Questions: [][]string{{"INFO", "server"}}, Always: true}
					}})
				require.NoError(t, err, "key %s", key)
				assert.Equal(t, srv[i].Addr(), rep.Server, "key %s", key)
				assert.Equal(t, []string{srv[i].Addr()}, asked, "the check is asked for the slot's master")
				require.Len(t, rep.Answers, 1)
				assert.Equal(t, strconv.Itoa(srv[i].Port), tcpPort(t, rep.Answers[0]), "the questions went to the slot's master")
				assert.Equal(t, mode.name, mustDo(t, srv[i], "GET", key), "the script ran there")
			}
		})
	}
}

// A call needs a key to be routed by.
func TestCluster_CallWithoutKeys_IsInvalid(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer c.Close()
	m, err := goredis.New(c)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.Eval(ctx5s(t), driver.Call{Script: driver.NewScript("one", `return 1`)})
	assert.ErrorIs(t, err, redlock.ErrInvalid)
}

// Node clients the cluster client made before the adapter was built may
// hold connections the application opened: the first call to such a node
// goes on a connection fresh to the adapter, and is asked.
func TestCluster_NodeClientsOlderThanTheAdapter_AreAsked(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.Addrs(srv), ContextTimeoutEnabled: true})
	defer c.Close()
	key, _ := keyOn(t, cl, srv[1])
	require.NoError(t, c.Set(ctx5s(t), key, "v", 0).Err(), "the application uses the client first")
	m, err := goredis.New(c)
	require.NoError(t, err)
	defer m.Close()
	rep, err := m.Eval(ctx5s(t), driver.Call{Script: driver.NewScript("one", `return 1`), Keys: []string{key},
		Check: func(string) *driver.Check {
			return &driver.Check{Questions: [][]string{{"INFO", "server"}}}
		}})
	require.NoError(t, err)
	assert.Equal(t, srv[1].Addr(), rep.Server)
	require.NotNil(t, rep.Answers, "a connection opened before the adapter was built was asked")
	assert.Equal(t, strconv.Itoa(srv[1].Port), tcpPort(t, rep.Answers[0]))
}

// Each shard master's connections are its own: when one restarts, the call
// to it after the restart is asked, and reaches the new process.
func TestCluster_ARestartedShardMaster_IsAsked(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m, _ := wrapCluster(t, srv, redis.ClusterOptions{ContextTimeoutEnabled: true})
	one := driver.NewScript("one", `return 1`)
	key, _ := keyOn(t, cl, srv[2])
	call := func(t *testing.T) (driver.Reply, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return m.Eval(ctx, driver.Call{Script: one, Keys: []string{key},
			Check: func(server string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"INFO", "server"}}}
			}})
	}
	rep, err := call(t)
	require.NoError(t, err)
	require.NotNil(t, rep.Answers)
	before := runIDOf(t, rep.Answers[0])
	rep, err = call(t)
	require.NoError(t, err)
	require.Nil(t, rep.Answers, "the same connection is not asked again")

	require.NoError(t, srv[2].Kill())
	require.NoError(t, srv[2].Restart(redistest.Ephemeral))
	var after string
	deadline := time.Now().Add(10 * time.Second)
	for after == "" && time.Now().Before(deadline) {
		rep, err := call(t)
		switch {
		case err == nil:
			require.NotNil(t, rep.Answers, "a call after the restart went unasked")
			after = runIDOf(t, rep.Answers[0])
		default:
			time.Sleep(100 * time.Millisecond) // the node rejoins the cluster
		}
	}
	require.NotEmpty(t, after, "no call succeeded after the restart")
	assert.NotEqual(t, before, after)
}

func runIDOf(t *testing.T, answer any) string {
	t.Helper()
	s, _ := answer.(string)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	t.Fatalf("no run_id in %q", s)
	return ""
}

// While a slot moves to another master (ASK) and after it moved (MOVED),
// calls fail as missing votes, not as a misconfigured master, and leave
// nothing; the next calls go to the new master.
func TestCluster_SlotMoving_FailsCleanlyThenFollows(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m, _ := wrapCluster(t, srv, redis.ClusterOptions{ContextTimeoutEnabled: true})
	key, slot := keyOn(t, cl, srv[0])
	from, to := srv[0], srv[1]
	set := driver.NewScript("set", `redis.call('SET', KEYS[1], 'x'); return 1`)
	call := func() (driver.Reply, error) {
		return m.Eval(ctx5s(t), driver.Call{Script: set, Keys: []string{key}})
	}
	keysIn := func(s *redistest.Server) string {
		return mustDo(t, s, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot))
	}
	probe := driver.NewScript("probe", `return 1`)
	rep, err := m.Eval(ctx5s(t), driver.Call{Script: probe, Keys: []string{key}})
	require.NoError(t, err)
	require.Equal(t, from.Addr(), rep.Server, "the client knows the slot's master")

	fromID, toID := mustDo(t, from, "CLUSTER", "MYID"), mustDo(t, to, "CLUSTER", "MYID")
	mustDo(t, to, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "IMPORTING", fromID)
	mustDo(t, from, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "MIGRATING", toID)
	for _, step := range []string{"ASK", "MOVED"} {
		if step == "MOVED" {
			for _, s := range []*redistest.Server{to, from, srv[2]} {
				mustDo(t, s, "CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", toID)
			}
		}
		rep, err := call()
		if step == "MOVED" && err == nil {
			// go-redis may have reloaded its slot map in the background
			// after the ASK: the call went straight to the new master.
			assert.Equal(t, to.Addr(), rep.Server, step)
			assert.Equal(t, "0", keysIn(from), "%s: nothing left on %s", step, from.Addr())
			continue
		}
		assert.ErrorIs(t, err, goredis.ErrRedirected, step)
		assert.Contains(t, fmt.Sprint(err), step)
		var de driver.Error
		assert.False(t, errors.As(err, &de), "%s is no error reply of the master's: %v", step, err)
		assert.Equal(t, from.Addr(), rep.Server, step)
		assert.Equal(t, "0", keysIn(from), "%s: nothing left on %s", step, from.Addr())
		assert.Equal(t, "0", keysIn(to), "%s: nothing left on %s", step, to.Addr())
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rep, err = call()
		if err == nil || !time.Now().Before(deadline) {
			break
		}
		require.ErrorIs(t, err, goredis.ErrRedirected)
		time.Sleep(20 * time.Millisecond) // the client reloads the slots in the background
	}
	require.NoError(t, err)
	assert.Equal(t, to.Addr(), rep.Server)
	assert.Equal(t, "1", keysIn(to))
}

// Concurrent calls to one shard master share one connection of its node
// client, and each shard master has its own.
func TestCluster_ConcurrentCallsToAShard_ShareOneConnection(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	srv := cl.Nodes()
	m, _ := wrapCluster(t, srv, redis.ClusterOptions{ContextTimeoutEnabled: true})
	one := driver.NewScript("one", `return 1`)
	clientID := func(key string) (string, int64) {
		rep, err := m.Eval(ctx5s(t), driver.Call{Script: one, Keys: []string{key},
			Check: func(string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"CLIENT", "ID"}}, Always: true}
			}})
		require.NoError(t, err)
		require.Len(t, rep.Answers, 1)
		id, _ := rep.Answers[0].(int64)
		return rep.Server, id
	}
	perShard := map[string]int64{}
	for _, s := range srv {
		key, _ := keyOn(t, cl, s)
		var mu sync.Mutex
		ids := map[int64]bool{}
		concurrently(16, func(int) {
			server, id := clientID(key)
			assert.Equal(t, s.Addr(), server)
			mu.Lock()
			ids[id] = true
			mu.Unlock()
		})
		require.Len(t, ids, 1, "the calls to %s went on one connection", s.Addr())
		for id := range ids {
			perShard[s.Addr()] = id
		}
	}
	assert.Len(t, perShard, len(srv))
}
