package rueidisdriver_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// tcpPort returns the tcp_port in an answer to INFO server.
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

// Through a Sentinel client, the lock's connection leads to the master the
// client knows. When the replica is promoted, the connection the driver
// holds to the old master, a replica now, answers READONLY: the driver
// leaves it, the next call takes a new one, which leads to the promoted
// replica and is asked before it votes, and the promoted replica does not
// vote for the guard's window.
func TestFailover_PromotedReplica_IsReachedAskedAndQuarantined(t *testing.T) {
	master := redistest.Start(t, 1, redistest.Ephemeral)[0]
	replica := redistest.StartReplica(t, master)
	sentinel := redistest.StartSentinel(t, master, "locks")
	client, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{sentinel}, Sentinel: rueidis.SentinelOption{MasterSet: "locks"}, DisableCache: true,
	})
	require.NoError(t, err)
	t.Cleanup(client.Close)
	m := newMaster(t, client)

	where := driver.NewScript("where", `redis.call('SET', KEYS[1], 'w'); return string.match(redis.call('INFO', 'server'), 'tcp_port:(%d+)')`)
	var seen uint64
	call := func(t *testing.T) (ran, answered string, err error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		rep, err := m.Eval(ctx, driver.Call{Script: where, Keys: []string{"k"},
			Check: func(string) *driver.Check {
				return &driver.Check{Questions: [][]string{{"INFO", "server"}}, Seen: seen}
			}})
		if err != nil {
			return "", "", err
		}
		if rep.Answers != nil {
			seen = rep.Dials
			answered = tcpPort(t, rep.Answers[0])
		}
		ran, _ = rep.Value.(string)
		return ran, answered, nil
	}
	ran, answered, err := call(t)
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(master.Port), ran)
	require.Equal(t, ran, answered, "the first call is asked")

	const window = time.Second
	c, err := redlock.New([]driver.Master{m}, redlock.WithCloseDrivers(), redlock.WithRestartGuard(window),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	for try := 0; ; try++ {
		l, err := c.TryLock(ctx, "before", 10*time.Second)
		if err == nil {
			require.NoError(t, l.Release(ctx))
			break
		}
		require.Less(t, try, 40, "no lock within the guard's window: %v", err)
		time.Sleep(100 * time.Millisecond)
	}

	redistest.Failover(t, sentinel, "locks")
	deadline := time.Now().Add(20 * time.Second)
	for ran != strconv.Itoa(replica.Port) {
		require.True(t, time.Now().Before(deadline), "the driver did not follow the failover within 20s (last: %s, %v)", ran, err)
		time.Sleep(50 * time.Millisecond)
		if ran, answered, err = call(t); err != nil {
			continue
		}
		if ran == strconv.Itoa(replica.Port) {
			assert.Equal(t, ran, answered, "the first call to the promoted replica was asked")
		}
	}
	_, err = c.TryLock(ctx, "after", 10*time.Second)
	assert.ErrorIs(t, err, redlock.ErrQuarantined, "%v", err)
	var ae *redlock.AttemptError
	require.ErrorAs(t, err, &ae)
	require.Len(t, ae.Masters, 1)
	assert.Contains(t, ae.Masters[0].Why, "promoted from a replica", "%s", ae.Detail())
}

// A master that becomes a replica under the driver answers READONLY: the
// driver leaves that connection, and the next call goes on a new one, which
// the guard's questions go with, to whatever server the client leads to.
func TestEval_ReadOnlyLeavesTheConnection(t *testing.T) {
	srv := redistest.Start(t, 2, redistest.Ephemeral)
	m := newMaster(t, standalone(t, srv[0].Addr()))
	set := driver.NewScript("set", `return redis.call('SET', KEYS[1], 'v')`)
	check, saw := quietCheck()
	call := driver.Call{Script: set, Keys: []string{"k"}, Check: check}
	rep, err := m.Eval(ctxFor(t, 2*time.Second), call)
	require.NoError(t, err)
	require.NotNil(t, rep.Answers)
	saw(rep)
	first := rep.Dials

	_, err = srv[0].Do("REPLICAOF", "127.0.0.1", strconv.Itoa(srv[1].Port))
	require.NoError(t, err)
	_, err = m.Eval(ctxFor(t, 2*time.Second), call)
	var de driver.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, "READONLY", de.Code())
	rep, _ = m.Eval(ctxFor(t, 2*time.Second), call)
	assert.Greater(t, rep.Dials, first, "a new connection")
	assert.NotNil(t, rep.Answers, "asked on the new connection")
}
