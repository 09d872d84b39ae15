package redlock

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// shardedStub is a node whose calls go to the server that owns each key, as
// a Redis Cluster's: every call's reply comes from answer, by key.
type shardedStub struct {
	sharded bool
	answer  func(key string) (server string, err error)
}

func (s *shardedStub) Addr() string { return "cluster" }
func (s *shardedStub) Eval(_ context.Context, c driver.Call) (driver.Reply, error) {
	server, err := s.answer(c.Keys[0])
	if err != nil {
		return driver.Reply{Server: server}, err
	}
	return driver.Reply{Server: server, Value: []any{int64(1), int64(7)}}, nil
}
func (s *shardedStub) Subscribe(context.Context) (driver.Subscription, error) { return nil, errBroken }
func (s *shardedStub) Close() error                                           { return nil }
func (s *shardedStub) Sharded() bool                                          { return s.sharded }

// logLines is a logger that keeps what it writes.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logLines) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.FieldsFunc(l.buf.String(), func(r rune) bool { return r == '\n' })
}

func stubMaster(drv driver.Master, log *slog.Logger) *master {
	return &master{drv: drv, scripts: scripts.New(), names: scripts.Names{NS: "t:"}, clock: clock.Real(),
		servers: newServers(drv.Addr(), log, nil, nil, nil)}
}

// TestServers_OneShardDown_LoggedOnce: on a cluster node, calls to the
// healthy shards go on while one shard fails; the failure is logged once,
// and once again when it clears, not each time a call to another shard
// answers.
func TestServers_OneShardDown_LoggedOnce(t *testing.T) {
	var out logLines
	down := true
	m := stubMaster(&shardedStub{sharded: true, answer: func(key string) (string, error) {
		if strings.Contains(key, "{a}") {
			return "shard-a", nil
		}
		if down {
			return "shard-b", errBroken
		}
		return "shard-b", nil
	}}, slog.New(slog.NewTextHandler(&out, nil)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 20 {
		m.acquire(ctx, request{key: "{a}k", token: "t"})
		m.acquire(ctx, request{key: "{b}k", token: "t"})
	}
	down = false
	m.acquire(ctx, request{key: "{b}k", token: "t"})
	lines := out.lines()
	require.Len(t, lines, 2, "one note when shard b fails, one when it answers again: %q", lines)
	assert.Contains(t, lines[0], "not answering")
	assert.Contains(t, lines[0], "addr=shard-b")
	assert.Contains(t, lines[0], "node=cluster")
	assert.Contains(t, lines[1], "answers again")
}

// TestServers_ClusterChangeIsNotPermanent: a CLUSTERDOWN, MOVED or ASK
// from a cluster given as one node is its slots moving or a shard failing
// over, which passes; from a cluster member given as a plain master it is a
// misconfiguration that no retry fixes.
func TestServers_ClusterChangeIsNotPermanent(t *testing.T) {
	for _, reply := range []string{
		"CLUSTERDOWN The cluster is down",
		"MOVED 3999 127.0.0.1:6381",
		"ASK 3999 127.0.0.1:6381",
		"TRYAGAIN Multiple keys request during rehashing of slot",
	} {
		for _, sharded := range []bool{true, false} {
			m := stubMaster(&shardedStub{sharded: sharded, answer: func(string) (string, error) {
				return "shard", driver.Error(reply)
			}}, quiet())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := m.acquire(ctx, request{key: "k", token: "t"})
			cancel()
			require.Error(t, err)
			code := strings.Fields(reply)[0]
			if sharded {
				assert.False(t, permanent(err), "%s from a cluster node", code)
				assert.Equal(t, "cluster changing", failureKind(err))
			} else {
				assert.Equal(t, code != "TRYAGAIN", permanent(err), "%s from a plain master", code)
			}
			assert.ErrorIs(t, err, driver.Error(reply), "the driver's error stays matchable")
		}
	}
}

// TestSilence: a master is silent after a call sent that got no reply,
// once nothing has answered for the window, until a call gets any answer, a
// Redis error too. A call that never reached the master (a dial that timed
// out) or that the caller cancelled says nothing of it; one that failed
// fast (refused) ends the silence.
func TestSilence(t *testing.T) {
	noReply := context.DeadlineExceeded
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: noReply}
	tests := []struct {
		name   string
		calls  []error
		after  time.Duration // since the last call, before silent is asked
		silent bool
	}{
		{"no call yet", nil, time.Second, false},
		{"answered", []error{nil}, time.Second, false},
		{"no reply", []error{noReply}, time.Second, true},
		{"no reply, nothing answered within the window", []error{nil, noReply}, 100 * time.Millisecond, true},
		{"no reply, an answer within the window", []error{nil, noReply}, 50 * time.Millisecond, false},
		{"no reply, then an answer", []error{noReply, nil}, time.Second, false},
		{"no reply, then a Redis error", []error{noReply, driver.Error("NOPERM no permissions")}, time.Second, false},
		{"no reply, then a call cancelled", []error{noReply, context.Canceled}, time.Second, true},
		{"no reply, then a dial that timed out", []error{noReply, dial}, time.Second, true},
		{"a dial that timed out", []error{dial}, time.Second, false},
		{"no reply, then connection refused", []error{noReply, syscall.ECONNREFUSED}, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_000_000, 0))
			s := newSilence(clk)
			clk.Advance(time.Second) // made long ago: that counts as an answer
			for _, err := range tt.calls {
				s.note(err)
			}
			clk.Advance(tt.after)
			assert.Equal(t, tt.silent, s.silent(100*time.Millisecond))
		})
	}
}

// TestMaster_NotesItsSilence: a plain master's calls feed its silence; a
// Redis Cluster given as one node is never silent.
func TestMaster_NotesItsSilence(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			drv := &shardedStub{sharded: sharded, answer: func(string) (string, error) { return "", context.DeadlineExceeded }}
			m := newMaster(drv, scripts.New(), scripts.Names{NS: "t:"}, clock.Real(), quiet(), nil, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m.acquire(ctx, request{key: "k", token: "t"})
			assert.Equal(t, !sharded, m.silent(0))
		})
	}
}

// A cluster node has a guard per shard master: a vote on a key is judged by
// the health of the shard that answered for the key's slot, so a restart of
// one shard keeps its keys' votes out and no other's, and a shard never heard
// from does not vote.
func TestServers_GuardPerShard(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	gs := newServers("cluster", quiet(), nil, func() *guard { return newTestGuard(clk, &logs{}, time.Minute) }, nil)
	now := func() time.Time { return clk.Now() }
	a, b := "app:{a}k", "app:{b}k" // different slots
	require.NotEqual(t, slot.Of(a), slot.Of(b))

	assert.Equal(t, "", gs.healthOf(a).distrust(now(), time.Minute), "a standalone master before its first answer: asked on the call itself")
	gs.answered(a, driver.Reply{Server: "10.0.0.1:7000"}, nil, true)
	gs.answered(b, driver.Reply{Server: "10.0.0.2:7000"}, nil, true)
	assert.NotEqual(t, "", gs.healthOf(a).distrust(now(), time.Minute), "a shard never read does not vote")
	gs.of("10.0.0.1:7000").guard.observe("10.0.0.1:7000", plainMaster("r1", 3600).reading(), 1)
	gs.of("10.0.0.2:7000").guard.observe("10.0.0.2:7000", plainMaster("r2", 3600).reading(), 1)
	assert.Equal(t, "", gs.healthOf(a).distrust(now(), time.Minute))
	assert.Equal(t, "", gs.healthOf(b).distrust(now(), time.Minute))

	// Shard 1 restarts: its keys' votes are out, shard 2's stay in.
	gs.of("10.0.0.1:7000").guard.observe("10.0.0.1:7000", plainMaster("r1-new", 1).reading(), 2)
	assert.Contains(t, gs.healthOf(a).distrust(now(), time.Minute), "restarted")
	assert.Equal(t, "", gs.healthOf(b).distrust(now(), time.Minute))

	// Key b's slot fails over to a server not read yet: no vote until read.
	gs.answered(b, driver.Reply{Server: "10.0.0.3:7000"}, nil, true)
	assert.NotEqual(t, "", gs.healthOf(b).distrust(now(), time.Minute))
	assert.NotEqual(t, "", gs.healthOf("app:{c}k").distrust(now(), time.Minute), "a slot no shard answered for yet")
}
