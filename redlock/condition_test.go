package redlock

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
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
		conds: &conditions{log: log, node: drv.Addr()}}
}

// TestConditions_OneShardDown_LoggedOnce: on a cluster node, calls to the
// healthy shards go on while one shard fails; the failure is logged once,
// and once again when it clears, not each time a call to another shard
// answers.
func TestConditions_OneShardDown_LoggedOnce(t *testing.T) {
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

// TestConditions_ClusterChangeIsNotPermanent: a CLUSTERDOWN, MOVED or ASK
// from a cluster given as one node is its slots moving or a shard failing
// over, which passes; from a cluster member given as a plain master it is a
// misconfiguration that no retry fixes.
func TestConditions_ClusterChangeIsNotPermanent(t *testing.T) {
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

// A master that fails for good (NOAUTH here) and now and then also times
// out is reported once: the timeouts do not end its failure, and the next
// NOAUTH is not a new one. An answer ends it.
func TestCondition_PassingFailuresDoNotInterruptAPermanentOne(t *testing.T) {
	var out logLines
	c := &condition{log: slog.New(slog.NewTextHandler(&out, nil)), addr: "m"}
	noauth := driver.Error("NOAUTH Authentication required.")
	for _, err := range []error{noauth, context.DeadlineExceeded, noauth, errBroken, noauth, nil, context.DeadlineExceeded} {
		c.note(err)
	}
	lines := out.lines()
	require.Len(t, lines, 3, "%q", lines)
	assert.Contains(t, lines[0], "failure=NOAUTH")
	assert.Contains(t, lines[1], "answers again")
	assert.Contains(t, lines[2], "failure=\"no reply\"")
}

// TestMaster_SilentUntilItAnswers: a master is silent after a call that got
// no reply, until a call gets any answer, a refusal or a Redis error too; a
// call the caller cancelled says nothing of it. A Redis Cluster given as one
// node is never silent: its shards answer for themselves.
func TestMaster_SilentUntilItAnswers(t *testing.T) {
	noReply := context.DeadlineExceeded
	tests := []struct {
		name    string
		sharded bool
		calls   []error
		silent  bool
	}{
		{"no call yet", false, nil, false},
		{"answered", false, []error{nil}, false},
		{"no reply", false, []error{noReply}, true},
		{"no reply, then an answer", false, []error{noReply, nil}, false},
		{"an answer, then no reply", false, []error{nil, noReply}, true},
		{"no reply, then a Redis error", false, []error{noReply, driver.Error("NOPERM no permissions")}, false},
		{"no reply, then a call cancelled", false, []error{noReply, context.Canceled}, true},
		{"connection refused", false, []error{syscall.ECONNREFUSED}, false},
		{"a cluster's shard gave no reply", true, []error{noReply}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next error
			m := stubMaster(&shardedStub{sharded: tt.sharded, answer: func(string) (string, error) { return "", next }}, quiet())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, err := range tt.calls {
				next = err
				m.acquire(ctx, request{key: "k", token: "t"})
			}
			assert.Equal(t, tt.silent, m.silent())
		})
	}
}
