package redlock

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/internal/slot"
	"github.com/quorumlock/quorumlock/redlock/internal/info"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// shardedStub is a node whose calls go to the server that owns each key, as
// a Redis Cluster's: every call's reply comes from answer, by key.
type shardedStub struct {
	sharded bool
	answer  func(key string) (server string, err error)
}

func (s *shardedStub) Addr() string { return "cluster" }
func (s *shardedStub) Start(_ context.Context, c driver.Call, done driver.Done) {
	server, err := s.answer(c.Keys[0])
	if err != nil {
		done.Returned(driver.Reply{Server: server}, err)
		return
	}
	done.Returned(driver.Reply{Server: server, Value: []any{int64(1), int64(7)}}, nil)
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
	o := defaultOptions()
	o.logger = log
	return newMaster(drv, scripts.New(), scripts.Names{NS: "t:"}, &o, nil)
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
		awaitAcquire(ctx, m, request{key: "{a}k", token: "t"})
		awaitAcquire(ctx, m, request{key: "{b}k", token: "t"})
	}
	down = false
	awaitAcquire(ctx, m, request{key: "{b}k", token: "t"})
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
			_, err := awaitAcquire(ctx, m, request{key: "k", token: "t"})
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
			s := newTestServer(clk, &logs{}, time.Minute)
			clk.Advance(time.Second) // made long ago: that counts as an answer
			for _, err := range tt.calls {
				s.answered(driver.Reply{}, err, callStart{at: clk.Now().UnixNano()})
			}
			clk.Advance(tt.after)
			assert.Equal(t, tt.silent, s.silent(100*time.Millisecond))
		})
	}
}

// A call's timeout is news of the master only where no call got an answer
// since it went out: a late one changes neither the master's condition nor
// its silence.
func TestServer_TimeoutOlderThanAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		late   bool // the call went out before another's answer came in
		silent bool
		kind   string // the master's condition after it
	}{
		{"the call went out after the last answer", false, true, "no reply"},
		{"the call went out before the last answer", true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_000_000, 0))
			s := newTestServer(clk, &logs{}, time.Minute)
			clk.Advance(time.Second)
			sent := callStart{at: clk.Now().UnixNano()}
			clk.Advance(10 * time.Millisecond)
			s.answered(driver.Reply{}, nil, callStart{at: clk.Now().UnixNano()})
			clk.Advance(10 * time.Millisecond)
			if !tc.late {
				sent = callStart{at: clk.Now().UnixNano()}
			}
			s.answered(driver.Reply{}, context.DeadlineExceeded, sent)
			clk.Advance(time.Second)
			assert.Equal(t, tc.silent, s.silent(100*time.Millisecond))
			s.cond.mu.Lock()
			defer s.cond.mu.Unlock()
			assert.Equal(t, tc.kind, s.cond.kind)
		})
	}
}

// TestMaster_NotesItsSilence: a plain master's calls feed its silence; a
// Redis Cluster given as one node is never silent.
func TestMaster_NotesItsSilence(t *testing.T) {
	for _, sharded := range []bool{false, true} {
		t.Run(fmt.Sprintf("sharded=%v", sharded), func(t *testing.T) {
			drv := &shardedStub{sharded: sharded, answer: func(string) (string, error) { return "", context.DeadlineExceeded }}
			m := stubMaster(drv, quiet())
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			awaitAcquire(ctx, m, request{key: "k", token: "t"})
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
	gs := newTestServers("cluster", clk, &logs{}, time.Minute)
	now := func() time.Time { return clk.Now() }
	a, b := "app:{a}k", "app:{b}k" // different slots
	require.NotEqual(t, slot.Of(a), slot.Of(b))

	assert.Equal(t, "", gs.healthOf(a).distrust(now(), time.Minute), "a standalone master before its first answer: asked on the call itself")
	gs.answered(a, driver.Reply{Server: "10.0.0.1:7000"}, nil, true, callStart{})
	gs.answered(b, driver.Reply{Server: "10.0.0.2:7000"}, nil, true, callStart{})
	assert.NotEqual(t, "", gs.healthOf(a).distrust(now(), time.Minute), "a shard never read does not vote")
	gs.of("10.0.0.1:7000").observe(plainMaster("r1", 3600).reading(), 1)
	gs.of("10.0.0.2:7000").observe(plainMaster("r2", 3600).reading(), 1)
	assert.Equal(t, "", gs.healthOf(a).distrust(now(), time.Minute))
	assert.Equal(t, "", gs.healthOf(b).distrust(now(), time.Minute))

	// Shard 1 restarts: its keys' votes are out, shard 2's stay in.
	gs.of("10.0.0.1:7000").observe(plainMaster("r1-new", 1).reading(), 2)
	assert.Contains(t, gs.healthOf(a).distrust(now(), time.Minute), "restarted")
	assert.Equal(t, "", gs.healthOf(b).distrust(now(), time.Minute))

	// Key b's slot fails over to a server not read yet: no vote until read.
	gs.answered(b, driver.Reply{Server: "10.0.0.3:7000"}, nil, true, callStart{})
	assert.NotEqual(t, "", gs.healthOf(b).distrust(now(), time.Minute))
	assert.NotEqual(t, "", gs.healthOf("app:{c}k").distrust(now(), time.Minute), "a slot no shard answered for yet")
}

// healthRead is a health read of a master as the guard sees it, for the unit
// tests of its decisions; the integration tests read real servers.
type healthRead struct {
	runID, version, role, replID, replID2, secondOff, policy string
	up                                                       int
	maxmemory                                                int64
	config, stamp                                            any
}

func plainMaster(runID string, up int) healthRead {
	return healthRead{runID: runID, up: up, version: "7.0.15", role: "master",
		replID: "r-" + runID, replID2: strings.Repeat("0", 40), secondOff: "-1",
		policy: "noeviction", config: []any{}}
}

func (m healthRead) reading() info.Replies {
	return info.Replies{
		Server:      fmt.Sprintf("# Server\r\nredis_version:%s\r\nrun_id:%s\r\nuptime_in_seconds:%d\r\n", m.version, m.runID, m.up),
		Replication: fmt.Sprintf("# Replication\r\nrole:%s\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\nsecond_repl_offset:%s\r\n", m.role, m.replID, m.replID2, m.secondOff),
		Memory:      fmt.Sprintf("# Memory\r\nmaxmemory:%d\r\nmaxmemory_policy:%s\r\n", m.maxmemory, m.policy),
		Config:      m.config,
		Stamp:       m.stamp,
	}
}

// Redis truncates both ends of uptime_in_seconds to whole seconds, so a
// master may report 1 a moment after it started. The quarantine must last
// the whole window from the latest moment the master can have started.
func TestGuard_UptimeIsReadAsTheYoungestItCanBe(t *testing.T) {
	const window = 3 * time.Second
	for _, up := range []int{0, 1, 2, 5} {
		t.Run(fmt.Sprint(up), func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			g := newTestServer(clk, &logs{}, window)
			g.observe(plainMaster("r", up).reading(), 1)
			// The master may have started as late as (up-1)s ago, or now.
			age := max(time.Duration(up-1)*time.Second, 0)
			h := g.load()
			require.True(t, h.known)
			assert.False(t, h.trusted(clk.Now().Add(window-age-time.Millisecond), window),
				"trusted before a master started (up-1)s ago can have been up for the window")
			assert.True(t, h.trusted(clk.Now().Add(window-age), window))
		})
	}
}

// A master restarted just before a second boundary reports an uptime of 1
// within a few hundred milliseconds; its quarantine still lasts the window.
func TestIntegration_RestartGuard_LateInASecond(t *testing.T) {
	const window = 2 * time.Second
	srv := masters(t, 1)
	c := client(t, srv, WithRestartGuard(window))
	ctx := context.Background()
	_, err := c.Inspect(ctx, "k")
	require.NoError(t, err)

	// Restart at 0.8 s past a whole second of the wall clock.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1800 * time.Millisecond).Sub(now))
	require.NoError(t, srv[0].Kill())
	restarted := time.Now() // the new master starts after this
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))

	// The client first sees the master once it says it has been up a second.
	// (With a quick restart that is after about 0.2 s, and taking the uptime
	// at its word would end the quarantine 0.8 s early.)
	for uptime(t, srv[0]) < 1 {
		require.Less(t, time.Since(restarted), window, "uptime_in_seconds never reached 1")
		time.Sleep(5 * time.Millisecond)
	}
	for i := 0; time.Since(restarted) < window-50*time.Millisecond; i++ {
		require.Less(t, i, 200)
		st, err := c.Inspect(ctx, "k")
		require.NoError(t, err)
		require.NoError(t, st.Nodes[0].Err)
		require.True(t, st.Nodes[0].Quarantined, "trusted %v after its restart", time.Since(restarted))
		time.Sleep(20 * time.Millisecond)
	}
}

func uptime(t *testing.T, s *redistest.Server) int {
	t.Helper()
	up, err := s.Uptime()
	require.NoError(t, err)
	return up
}

// A health read recorded late (its goroutine held up between the reply and
// observe) may come from the process that answered before a restart that a
// later read saw. It never lets the master vote sooner: not by its uptime,
// and not by the appendfsync of the process it came from.
func TestGuard_ALateReadNeverLetsAMasterVoteSooner(t *testing.T) {
	const window = 10 * time.Second
	durable := []any{"appendonly", "yes", "appendfsync", "always"}
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	g := newTestServer(clk, &logs{}, window)
	old := plainMaster("old", 5000)
	old.config = durable
	g.observe(old.reading(), 0)
	require.True(t, g.load().trusted(clk.Now(), window), "a first read is taken as it is")
	require.True(t, g.load().durable)

	g.observe(plainMaster("new", 0).reading(), 1) // restarted, and no longer durable
	assert.False(t, g.load().trusted(clk.Now(), window), "the restarted master is in quarantine")
	for i, started := range []uint64{0, 0, 1} { // reads of old by calls that went out before
		g.observe(old.reading(), started)
		h := g.load()
		assert.False(t, h.durable, "a late read's appendfsync counts for nothing")
		assert.False(t, h.trusted(clk.Now(), window), "a late read ended the quarantine")
		if i == 0 {
			assert.True(t, g.recheck.Load(), "another run_id: asked again")
		}
	}
	g.observe(plainMaster("new", 3).reading(), 5)
	assert.False(t, g.load().trusted(clk.Now(), window))
	assert.True(t, g.recheck.Load(), "another run_id: asked again")
	g.observe(plainMaster("new", 3).reading(), 6)
	assert.False(t, g.recheck.Load())
	assert.False(t, g.load().trusted(clk.Now(), window))
	clk.Advance(window)
	assert.True(t, g.load().trusted(clk.Now(), window), "the quarantine ends")
}

// The sequence of TestGuard_ALateReadNeverLetsAMasterVoteSooner through a
// real driver and a real restart: a reply of a durable master's process,
// read on a fresh connection and held up before the lock takes it, reaches
// the lock only after the master restarted without persistence and a
// read of the new process was recorded. The master still does not vote.
func TestIntegration_Guard_ALateReadOfTheOldProcessNeverLetsItVote(t *testing.T) {
	const window = 5 * time.Second
	srv := mastersWith(t, 3, redistest.FsyncAlways)
	held := &heldMaster{release: make(chan struct{})}
	ms := drivers(t, srv)
	held.Master, ms[0] = ms[0], held
	c, err := New(ms, suite(WithRestartGuard(window), WithLogger(quiet()), WithCloseDrivers())()...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	released := sync.OnceFunc(func() { close(held.release) })
	t.Cleanup(released) // before Close: a reply held when the test fails
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lockOn := func(key string) []int {
		t.Helper()
		l, err := c.TryLock(ctx, key, 5*time.Second) // the node timeout is at most a tenth of it
		require.NoError(t, err)
		defer l.Release(ctx)
		return l.Granted()
	}

	// A durable master votes from its first read. (An attempt returns at
	// quorum, with or without master 0's answer.)
	for i := 0; !slices.Contains(lockOn("first"), 0); i++ {
		require.Less(t, i, 100, "a durable master did not vote")
		time.Sleep(10 * time.Millisecond)
	}
	old := c.nodes[0].health("first").runID

	// A fresh connection to the same process: its first call asks, and
	// the reply is held. (An Inspect: nothing follows its late reply.)
	do(t, srv[0], "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	held.hold.Store(true)
	_, err = c.Inspect(ctx, "held")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return held.held.Load() == 1 }, 2*time.Second, 5*time.Millisecond, "no reply carrying the guard's answers")

	// The master restarts empty and without persistence; a call reads the
	// new process once the driver has a connection to it.
	require.NoError(t, srv[0].Kill())
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))
	restarted := time.Now()
	for i := 0; c.nodes[0].health("after").runID == old; i++ {
		require.Less(t, i, 100, "no read of the new process")
		require.NotContains(t, lockOn("after"), 0, "a restarted master without persistence voted at once")
		time.Sleep(10 * time.Millisecond)
	}
	own := c.nodes[0].(*master).servers.own
	require.Eventually(t, func() bool { return !own.recheck.Load() }, 2*time.Second, time.Millisecond, "the new process's read was never confirmed")

	// The old process's read arrives. What the lock knows of the master
	// then judges the vote of every reply that comes in before the read it
	// asks for at once: the master is still out.
	released()
	var late health
	require.Eventually(t, func() bool { late = c.nodes[0].health("late"); return late.runID == old }, 2*time.Second, time.Millisecond,
		"the held read was never recorded")
	assert.NotEmpty(t, late.distrust(time.Now(), window), "trusted once a late read of the old process came in")
	for i := 0; time.Since(restarted) < window-time.Second; i++ {
		require.Less(t, i, 100)
		require.NotContains(t, lockOn(fmt.Sprintf("late-%d", i)), 0,
			"voted %v after its restart, within the window, once a late read of the old process came in", time.Since(restarted).Round(time.Millisecond))
		time.Sleep(50 * time.Millisecond)
	}
}

// heldMaster is a driver.Master that, once hold is set, holds up the next
// reply carrying the guard's answers until release is closed: a reply read
// before the lock takes it.
type heldMaster struct {
	driver.Master
	hold    atomic.Bool
	held    atomic.Int32
	release chan struct{}
}

func (m *heldMaster) Start(ctx context.Context, call driver.Call, done driver.Done) {
	m.Master.Start(ctx, call, driver.DoneFunc(func(rep driver.Reply, err error) {
		if err == nil && len(rep.Answers) > 0 && m.hold.CompareAndSwap(true, false) {
			rep.Answers = slices.Clone(rep.Answers)
			m.held.Add(1)
			go func() {
				<-m.release
				done.Returned(rep, nil)
			}()
			return
		}
		done.Returned(rep, err)
	}))
}

// logs records what a client logs, for tests that count warnings.
type logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

// warnings returns the WARN messages about addr (every one when addr is "").
func (l *logs) warnings(addr string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.recs {
		if r.Level != slog.LevelWarn {
			continue
		}
		match := addr == ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" && a.Value.String() == addr {
				match = true
			}
			return true
		})
		if match {
			out = append(out, r.Message)
		}
	}
	return out
}

// newTestServers returns the servers of node, on clk, logging to l, with a
// restart guard of the window given.
func newTestServers(node string, clk clock.Clock, l *logs, window time.Duration, opts ...Option) *servers {
	o := defaultOptions()
	o.clock, o.logger = clk, slog.New(l)
	for _, opt := range opts {
		opt.apply(&o)
	}
	return newServers(node, &o, func() time.Duration { return window })
}

// newTestServer returns the master of a plain node "m", as newTestServers.
func newTestServer(clk clock.Clock, l *logs, window time.Duration, opts ...Option) *server {
	return newTestServers("m", clk, l, window, opts...).own
}

// What may never vote, whatever the time, and what an option lets vote.
func TestGuard_Vetoes(t *testing.T) {
	const window = 10 * time.Second
	denied := driver.Error("NOPERM this user has no permissions to run the 'info' command")
	for _, tc := range []struct {
		name    string
		m       func(*healthRead)
		opts    []Option
		trusted bool
		why     string // in the distrust and the warning
	}{
		{"plain master", func(*healthRead) {}, nil, true, ""},
		{"replica", func(m *healthRead) { m.role = "slave" }, nil, false, "replica"},
		{"replica, options do not help", func(m *healthRead) { m.role = "slave" }, []Option{WithTrustEviction(), WithTrustUnreadable()}, false, "replica"},
		{"allkeys-lru", func(m *healthRead) { m.maxmemory, m.policy = 1<<20, "allkeys-lru" }, nil, false, "allkeys-lru"},
		{"volatile-ttl", func(m *healthRead) { m.maxmemory, m.policy = 1<<20, "volatile-ttl" }, nil, false, "volatile-ttl"},
		{"allkeys-lru trusted", func(m *healthRead) { m.maxmemory, m.policy = 1<<20, "allkeys-lru" }, []Option{WithTrustEviction()}, true, ""},
		{"allkeys-lru without maxmemory", func(m *healthRead) { m.policy = "allkeys-lru" }, nil, true, ""},
		{"noeviction with maxmemory", func(m *healthRead) { m.maxmemory = 1 << 20 }, nil, true, ""},
		{"Redis 5", func(m *healthRead) { m.version = "5.0.14" }, nil, false, "5.0.14"},
		{"Redis 6.0", func(m *healthRead) { m.version = "6.0.16" }, nil, true, ""},
		{"unparsable version", func(m *healthRead) { m.version = "df-1.2" }, nil, true, ""},
		{"INFO denied", func(m *healthRead) { m.runID = "" }, nil, false, "cannot be read"},
		{"INFO denied, trusted", func(m *healthRead) { m.runID = "" }, []Option{WithTrustUnreadable()}, true, ""},
		{"CONFIG denied", func(m *healthRead) { m.config = denied }, nil, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			l := &logs{}
			g := newTestServer(clk, l, window, tc.opts...)
			m := plainMaster("r", 5000)
			tc.m(&m)
			rd := m.reading()
			if m.runID == "" {
				rd.Server, rd.Replication, rd.Memory = denied, denied, denied
			}
			g.observe(rd, 1)
			h := g.load()
			assert.Equal(t, tc.trusted, h.trusted(clk.Now(), window), h.distrust(clk.Now(), window))
			if tc.why != "" {
				assert.Contains(t, h.distrust(clk.Now(), window), tc.why)
				require.Len(t, l.warnings("m"), 1)
				assert.Contains(t, l.warnings("m")[0], tc.why)
			}
			// Read again and again: the warning is not repeated.
			for d := uint64(2); d < 5; d++ {
				g.observe(rd, d)
			}
			assert.Equal(t, tc.trusted, g.load().trusted(clk.Now(), window))
			if tc.why != "" {
				assert.Len(t, l.warnings("m"), 1, "one warning per change")
			}
		})
	}
}

// A master whose INFO is denied is warned about once. Trusted, it is warned
// about again after each lost connection: a restart there cannot be seen,
// and it votes. Not trusted, it is not: it does not vote either way. A
// fixed ACL lets it vote.
func TestGuard_Unreadable_WarnsAgainAfterADropWhenTrusted(t *testing.T) {
	for _, trust := range []bool{false, true} {
		t.Run(fmt.Sprint("trusted=", trust), func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			l := &logs{}
			var opts []Option
			if trust {
				opts = append(opts, WithTrustUnreadable())
			}
			g := newTestServer(clk, l, time.Second, opts...)
			denied := driver.Error("NOPERM no permissions to run the 'info' command")
			rd := info.Replies{Server: denied, Replication: denied, Memory: denied, Config: []any{}}
			g.observe(rd, 1)
			g.observe(rd, 2)
			assert.Len(t, l.warnings("m"), 1)
			g.answered(driver.Reply{Lost: true}, nil, callStart{})
			g.observe(rd, 3)
			warned := 1
			if trust {
				warned = 2
			}
			assert.Len(t, l.warnings("m"), warned, "warned again after the connection was lost only when trusted")
			g.answered(driver.Reply{Lost: true}, nil, callStart{})
			g.observe(rd, 4)
			if trust {
				warned = 3
			}
			assert.Len(t, l.warnings("m"), warned)
			g.observe(rd, 5)
			assert.Len(t, l.warnings("m"), warned)
			assert.Equal(t, trust, g.load().trusted(clk.Now(), time.Second))

			g.observe(plainMaster("r", 5000).reading(), 6)
			assert.True(t, g.load().trusted(clk.Now(), time.Second), "readable again")
			assert.Len(t, l.warnings("m"), warned)
		})
	}
}

// A run_id other than the one this client knew counts as a restart at the
// moment it is first seen, whatever the uptime: the address may now lead to
// another server, such as a long-running replica after a failover.
func TestGuard_RunIDChange_IsARestartNow(t *testing.T) {
	const window = 10 * time.Second
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	l := &logs{}
	g := newTestServer(clk, l, window)
	g.observe(plainMaster("old", 5000).reading(), 1)
	require.True(t, g.load().trusted(clk.Now(), window))

	clk.Advance(time.Minute)
	g.observe(plainMaster("new", 7200).reading(), 2)
	h := g.load()
	assert.False(t, h.trusted(clk.Now(), window), "a long uptime does not make another server trusted")
	assert.Contains(t, h.distrust(clk.Now(), window), "restarted")
	assert.Len(t, l.warnings("m"), 1, "a failover is warned about")

	clk.Advance(window - time.Millisecond)
	g.observe(plainMaster("new", 7210).reading(), 3)
	assert.False(t, g.load().trusted(clk.Now(), window))
	clk.Advance(time.Millisecond)
	assert.True(t, g.load().trusted(clk.Now(), window))
	assert.Len(t, l.warnings("m"), 1)
}

// A durable master that restarted in place keeps its keys; a changed run_id
// does not quarantine it. A promoted replica is quarantined, durable or not.
func TestGuard_Durable(t *testing.T) {
	const window = 10 * time.Second
	durable := []any{"appendonly", "yes", "appendfsync", "always"}
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	g := newTestServer(clk, &logs{}, window)
	m := plainMaster("old", 5000)
	m.config = durable
	g.observe(m.reading(), 0)
	m = plainMaster("new", 0)
	m.config = durable
	g.observe(m.reading(), 1)
	assert.False(t, g.load().trusted(clk.Now(), window), "a new run_id is durable once a later read confirms it")
	assert.True(t, g.recheck.Load(), "asked again at once")
	g.observe(m.reading(), 1) // by a call that went out before the change was recorded
	assert.False(t, g.load().trusted(clk.Now(), window), "not a confirmation")
	g.observe(m.reading(), 2) // by a call that went out after
	assert.True(t, g.load().trusted(clk.Now(), window))

	m.replID, m.replID2, m.secondOff = "promoted", "r-new", "1234"
	g.observe(m.reading(), 4)
	assert.False(t, g.load().trusted(clk.Now(), window))
}

// A promoted replica is quarantined for the window from the earliest moment
// it is known to have been promoted: first seen so, or stamped by an acquire
// under its current identity. Nothing earlier can be known.
func TestGuard_Promoted(t *testing.T) {
	const window = 10 * time.Second
	promoted := func(up int, stamp any) healthRead {
		m := plainMaster("r3", up)
		m.replID, m.replID2, m.secondOff = "new-replid", "old-replid", "5000"
		m.stamp = stamp
		return m
	}
	for _, tc := range []struct {
		name  string
		up    int
		stamp any
		left  time.Duration // quarantine left at first sight
	}{
		{"no stamp", 7200, nil, window},
		{"stamped 4s before", 7200, "r3 new-replid 1234 7196", window - 3*time.Second},
		{"stamped long before", 7200, "r3 new-replid 1234 100", 0},
		{"stamped by another run_id", 7200, "m3 new-replid 1234 100", window},
		{"stamped under another replid", 7200, "r3 old-replid 1234 100", window},
		{"stamp from the future", 7200, "r3 new-replid 1234 7300", window},
		{"garbled stamp", 7200, "r3 new-replid", window},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			l := &logs{}
			g := newTestServer(clk, l, window)
			g.observe(promoted(tc.up, tc.stamp).reading(), 1)
			h := g.load()
			if tc.left > 0 {
				assert.False(t, h.trusted(clk.Now().Add(tc.left-time.Millisecond), window))
				assert.Contains(t, h.distrust(clk.Now(), window), "promoted")
			}
			assert.True(t, h.trusted(clk.Now().Add(tc.left), window))
			assert.Len(t, l.warnings("m"), 1, "a promotion is warned about")

			// Seen again later under the same identity: the quarantine does
			// not start over, nor is the warning repeated.
			clk.Advance(window / 2)
			g.observe(promoted(tc.up+5, tc.stamp).reading(), 2)
			assert.True(t, g.load().trusted(clk.Now().Add(max(tc.left-window/2, 0)), window))
			assert.Len(t, l.warnings("m"), 1)
		})
	}
}

// The identity the acquire script gets is the guard's only when the call is
// not the one that reads the master again: a new connection may reach
// another server.
func TestGuard_Identity(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	m := &master{servers: newTestServers("m", clk, &logs{}, time.Second)}
	g := m.servers.own
	acquire := driver.Call{Script: &driver.Script{TakesHint: true}, Args: []string{"k"}}
	check := m.check("", "k")
	assert.True(t, check.Always, "nothing known yet: ask")
	q := check.Commands()
	require.Len(t, q, 5, "INFO server, replication, memory, CONFIG GET append*, the fence stamp")
	assert.Equal(t, []string{"GET", m.names.Stamp("k")}, q[4])
	assert.Equal(t, []string{"k", ""}, acquire.Argv(check, false), "nothing known yet")
	g.observe(plainMaster("r", 50).reading(), 1)
	check = m.check("", "k")
	assert.False(t, check.Due(false), "known, and a connection that answered")
	assert.True(t, check.Due(true), "a fresh connection")
	assert.Equal(t, []string{"k", "r r-r"}, acquire.Argv(check, false))
	assert.Equal(t, []string{"k", ""}, acquire.Argv(check, true))
	assert.Equal(t, []string{"k"}, acquire.Args, "the call's own arguments are left alone")
	extend := driver.Call{Script: &driver.Script{}, Args: []string{"k"}}
	assert.Equal(t, []string{"k"}, extend.Argv(check, false), "only a script that takes the identity gets it")
}

// A plain master's check is built once and shared by the calls that follow,
// until the health it was built from or a request to ask again changes it; a cluster node's is built per call, its stamp per slot.
func TestGuard_PlainCheckSharedUntilItsStateChanges(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	m := &master{servers: newTestServers("m", clk, &logs{}, time.Second)}
	g := m.servers.own
	assert.True(t, m.check("", "a").Always, "nothing known yet")
	g.observe(plainMaster("r", 50).reading(), 1)
	c1 := m.check("", "a")
	assert.Same(t, c1, m.check("", "b"), "the same health: shared")
	g.observe(plainMaster("r", 50).reading(), 2)
	c2 := m.check("", "a")
	assert.NotSame(t, c1, c2, "a new health read")
	assert.Same(t, c2, m.check("", "b"))
	g.answered(driver.Reply{}, driver.Error("READONLY You can't write against a read only replica."), callStart{})
	assert.True(t, m.check("", "a").Always, "asked again")

	sharded := &master{servers: m.servers, names: scripts.Names{PerSlot: true}}
	g.observe(plainMaster("r", 50).reading(), 3)
	assert.NotSame(t, sharded.check("", "a"), sharded.check("", "a"), "a cluster node's check is per key")
}

// A master seen young is new or restarted, the guard cannot tell which:
// the text says both, with its uptime and when it votes, in its distrust
// and in the one INFO record of it; never a restart some time "ago".
func TestGuard_SaysWhatIsTrueOfAYoungMaster(t *testing.T) {
	const window = 8 * time.Second
	for _, tc := range []struct {
		name     string
		reads    []healthRead
		after    time.Duration // between the last read and the distrust
		distrust string
		info     string // the INFO record of the last read
	}{
		{"first seen, up 0s", []healthRead{plainMaster("a", 0)}, 0,
			"new or restarted, up 0s, votes in 8s", "redlock: master new or restarted: up 0s, votes in 8s"},
		{"first seen, up 0s, 3s later", []healthRead{plainMaster("a", 0)}, 3 * time.Second,
			"new or restarted, up 3s, votes in 5s", "redlock: master new or restarted: up 0s, votes in 8s"},
		{"first seen, up 3s", []healthRead{plainMaster("a", 3)}, 0,
			"new or restarted, up 2s, votes in 6s", "redlock: master new or restarted: up 2s, votes in 6s"},
		{"run_id changed, long up", []healthRead{plainMaster("a", 5000), plainMaster("b", 100)}, time.Second,
			"restarted or replaced (its run_id changed 1s ago), votes in 7s", ""},
		{"run_id changed, up 0s", []healthRead{plainMaster("a", 5000), plainMaster("b", 0)}, 0,
			"new or restarted, up 0s, votes in 8s", "redlock: master restarted or replaced (its run_id changed): up 0s, votes in 8s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			l := &logs{}
			g := newTestServer(clk, l, window)
			for i, m := range tc.reads {
				g.observe(m.reading(), uint64(i+1))
			}
			clk.Advance(tc.after)
			got := g.load().distrust(clk.Now(), window)
			assert.Equal(t, tc.distrust, got)
			assert.NotContains(t, got, "ago,", "a restart at a time the guard cannot know")
			var infos []string
			l.mu.Lock()
			for _, r := range l.recs {
				if r.Level == slog.LevelInfo {
					infos = append(infos, r.Message)
				}
			}
			l.mu.Unlock()
			if tc.info == "" {
				assert.Empty(t, infos)
				return
			}
			assert.Equal(t, []string{tc.info}, infos)
		})
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
