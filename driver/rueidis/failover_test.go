package rueidisdriver_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	rueidisdriver "github.com/quorumlock/quorumlock/driver/rueidis"
	"github.com/quorumlock/quorumlock/internal/drivertest"
	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Through a Sentinel client, the lock's connection leads to the master the
// client knows. After the replica is promoted, a call reaches the promoted
// replica, which is asked before it votes and does not vote for the guard's
// window (drivertest.RunSentinelFailover). That the driver leaves a
// connection answering READONLY is TestEval_ReadOnlyLeavesTheConnection's.
func TestFailover_PromotedReplica_IsReachedAskedAndQuarantined(t *testing.T) {
	drivertest.RunSentinelFailover(t, func(t testing.TB, sentinel, name string) driver.Master {
		client, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: []string{sentinel}, Sentinel: rueidis.SentinelOption{MasterSet: name}, DisableCache: true,
		})
		require.NoError(t, err)
		t.Cleanup(client.Close)
		m, err := rueidisdriver.New(client)
		require.NoError(t, err)
		return m
	})
}

// A master that becomes a replica under the driver answers READONLY: the
// driver leaves that connection, and the next call goes on a new one, which
// the guard's questions go with, to whatever server the client leads to.
func TestEval_ReadOnlyLeavesTheConnection(t *testing.T) {
	srv := redistest.Start(t, 2, redistest.Ephemeral)
	m := newMaster(t, standalone(t, srv[0].Addr()))
	set := driver.NewScript("set", `return redis.call('SET', KEYS[1], 'v')`)
	call := driver.Call{Script: set, Keys: []string{"k"}, Check: quietCheck()}
	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	first := clientID(t, rep)

	_, err = srv[0].Do("REPLICAOF", "127.0.0.1", strconv.Itoa(srv[1].Port))
	require.NoError(t, err)
	_, err = m.Eval(ctxFor(t, 2*time.Second), call)
	var de driver.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "READONLY", de.Code())
	rep, _ = m.Eval(ctxFor(t, 2*time.Second), call)
	require.NotNil(t, rep.Answers, "asked on the new connection")
	assert.NotEqual(t, first, clientID(t, rep), "a new connection")
}
