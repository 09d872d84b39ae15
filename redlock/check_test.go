package redlock

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// checkNS is the namespace the check's ACL users lock in.
const checkNS = "app:lock:"

// checkUser returns redis-server arguments that create the user "app"
// (password "secret") with rules.
func checkUser(rules ...string) []string {
	return append([]string{"--user", "app", "on", ">secret"}, rules...)
}

// lockUser is the rule aclRule gives for checkNS, with more rules after it.
func lockUser(more ...string) []string {
	return checkUser(append(strings.Fields(aclRule(checkNS, false)), more...)...)
}

// checkAt runs Check against one master at addr, with opts.
func checkAt(t *testing.T, addr string, opts ...Option) MasterReadiness {
	t.Helper()
	c := clientAt(t, []string{addr}, append([]Option{WithNamespace(checkNS)}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := c.Check(ctx, CheckParams{TTL: 10 * time.Second})
	require.NoError(t, err)
	require.Len(t, r.Masters, 1)
	return r.Masters[0]
}

// finding returns m's finding on topic, failing t if there is none.
func finding(t *testing.T, m MasterReadiness, topic string) Finding {
	t.Helper()
	for _, f := range m.Findings {
		if f.Topic == topic {
			return f
		}
	}
	t.Fatalf("no %q finding in %s", topic, describe(m))
	return Finding{}
}

func describe(m MasterReadiness) string {
	var b strings.Builder
	for _, f := range m.Findings {
		fmt.Fprintf(&b, "\n  %s %s: %s (fix: %s)", f.Level, f.Topic, f.Text, f.Fix)
	}
	return b.String()
}

// want is one finding a server set up for it must show.
type want struct {
	topic string
	level CheckLevel
	says  string // in the finding's text
	fix   string // in its fix
}

// Each misconfiguration, on a real server set up with it, shows as its
// finding at its level, with its fix; a master with a failure is not
// ready. The user's permissions are tried for real: the rule aclRule gives
// passes, and each permission taken from it fails its step.
func TestIntegration_Check_EachFindingOnARealServer(t *testing.T) {
	tests := []struct {
		name  string
		p     redistest.Persistence
		args  []string
		user  bool // log in as "app"
		opts  []Option
		want  []want
		ready bool
	}{
		{name: "healthy, appendfsync always", p: redistest.FsyncAlways, ready: true, want: []want{
			{"reach", CheckOK, "answers", ""},
			{"readable", CheckOK, "INFO and CONFIG GET readable", ""},
			{"version", CheckOK, "Redis 7", ""},
			{"role", CheckOK, "standalone master", ""},
			{"persistence", CheckOK, "appendfsync always: a restart keeps every lock", ""},
			{"eviction", CheckOK, "no maxmemory", ""},
			{"uptime", CheckOK, "votes whatever its uptime", ""},
			{"clock", CheckOK, "offset", ""},
			{"acl", CheckOK, "every script of the lock runs on app:lock:redlock-check:", ""},
			{"pubsub", CheckOK, "announced on app:lock:quorumlock:released:", ""},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "default persistence: quarantined after a restart, and now", ready: true, want: []want{
			{"persistence", CheckOK, "appendonly no: a restart loses every lock, so the guard keeps it out", ""},
			{"uptime", CheckWarn, "less than the guard window 10.102s: it votes in", "wait"},
		}},
		{name: "appendonly yes, everysec", args: []string{"--appendonly", "yes"}, ready: true, want: []want{
			{"persistence", CheckOK, "appendfsync everysec: a restart may lose the last locks", ""},
			{"uptime", CheckWarn, "it votes in", ""},
		}},
		{name: "guard off", opts: []Option{WithRestartGuard(0)}, ready: true, want: []want{
			{"uptime", CheckOK, "the restart guard is off", ""},
		}},
		{name: "allkeys-lru with maxmemory", args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}, want: []want{
			{"eviction", CheckFail, "maxmemory-policy allkeys-lru with maxmemory 104857600 may evict lock keys", "noeviction"},
		}},
		{name: "volatile-ttl with maxmemory", args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "volatile-ttl"}, want: []want{
			{"eviction", CheckFail, "volatile-ttl", "noeviction"},
		}},
		{name: "allkeys-lru trusted", args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"}, opts: []Option{WithTrustEviction()}, ready: true, want: []want{
			{"eviction", CheckWarn, "as WithTrustEviction asks", "noeviction"},
		}},
		{name: "allkeys-lru without maxmemory", args: []string{"--maxmemory-policy", "allkeys-lru"}, ready: true, want: []want{
			{"eviction", CheckOK, "no maxmemory", ""},
		}},
		{name: "cluster node given as a plain master", args: []string{"--cluster-enabled", "yes"}, want: []want{
			{"role", CheckFail, "Redis Cluster node given as a standalone master", "redis+cluster://"},
			{"scripts", CheckFail, "CLUSTERDOWN", ""},
		}},
		{name: "the lock's own rule", user: true, args: lockUser(), ready: true, want: []want{
			{"acl", CheckOK, "every script", ""},
			{"pubsub", CheckOK, "heard", ""},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "INFO denied", user: true, args: lockUser("-info"), want: []want{
			{"readable", CheckFail, "INFO server: NOPERM", "+info"},
		}},
		{name: "INFO denied, trusted", user: true, args: lockUser("-info"), opts: []Option{WithTrustUnreadable()}, ready: true, want: []want{
			{"readable", CheckWarn, "votes blind", "+info"},
		}},
		{name: "CONFIG denied", user: true, args: lockUser("-config|get"), ready: true, want: []want{
			{"readable", CheckWarn, "CONFIG GET: NOPERM", "+config|get"},
			{"persistence", CheckOK, "unknown (CONFIG GET denied)", ""},
		}},
		{name: "EVALSHA denied", user: true, args: lockUser("-evalsha"), want: []want{
			{"acl", CheckFail, "EVALSHA: NOPERM", "+evalsha"},
		}},
		{name: "EVAL denied", user: true, args: lockUser("-eval"), want: []want{
			{"acl", CheckFail, "EVAL: NOPERM", "+eval"},
		}},
		{name: "keys outside the user's pattern", user: true, args: checkUser("~other:*", "&app:lock:*", "-@all", aclCommandsArgs()), want: []want{
			{"acl", CheckFail, "NOPERM", "~app:lock:*"},
		}},
		{name: "HSET denied: reentrant locks fail", user: true, args: lockUser("-hset"), want: []want{
			{"acl", CheckFail, "reentrant acquire failed", "+hset"},
			{"cleanup", CheckOK, "deleted", ""},
		}},
		{name: "EXISTS denied: the cleanup cannot tell", user: true, args: lockUser("-exists"), want: []want{
			{"acl", CheckFail, "extend of a free key failed", "+exists"},
			{"cleanup", CheckWarn, "could not delete", "+exists"},
		}},
		{name: "no channel", user: true, args: checkUser("~app:lock:*", "&other:*", "-@all", aclCommandsArgs()), ready: true, want: []want{
			{"acl", CheckOK, "every script", ""},
			{"pubsub", CheckWarn, "cannot subscribe", "&app:lock:*"},
		}},
		{name: "PUBLISH denied", user: true, args: lockUser("-publish"), ready: true, want: []want{
			{"pubsub", CheckWarn, "PUBLISH denied", "+publish"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.Start(t, 1, tt.p, splitArgs(tt.args)...)
			addr := srv[0].Addr()
			if tt.user {
				addr = "redis://app:secret@" + addr
			}
			m := checkAt(t, addr, tt.opts...)
			for _, w := range tt.want {
				f := finding(t, m, w.topic)
				assert.Equal(t, w.level, f.Level, "%s:%s", w.topic, describe(m))
				assert.Contains(t, f.Text, w.says, describe(m))
				assert.Contains(t, f.Fix, w.fix, describe(m))
			}
			assert.Equal(t, tt.ready, m.Ready(), describe(m))
			if tt.ready {
				assert.Empty(t, m.Residue)
			}
		})
	}
}

// aclCommandsArgs is aclCommands as one argument: splitArgs splits it.
func aclCommandsArgs() string { return aclCommands }

// splitArgs splits arguments that hold several words.
func splitArgs(args []string) []string {
	var out []string
	for _, a := range args {
		out = append(out, strings.Fields(a)...)
	}
	return out
}

// The check leaves nothing of its own on a master: only the fence floor and
// its stamp, which any lock leaves.
func TestIntegration_Check_LeavesNothingBehind(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := checkAt(t, srv[0].Addr())
	require.True(t, m.Ready(), describe(m))
	keys, err := redistest.ListAt(srv[0].Addr(), "KEYS", "*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{checkNS + "quorumlock:fence-floor", checkNS + "quorumlock:fence-floor:stamp"}, keys)
}

// An unreachable master fails the reach check, and nothing else is judged.
func TestIntegration_Check_Unreachable(t *testing.T) {
	m := checkAt(t, deadAddr(t))
	require.Len(t, m.Findings, 1, describe(m))
	f := m.Findings[0]
	assert.Equal(t, "reach", f.Topic)
	assert.Equal(t, CheckFail, f.Level)
	assert.Contains(t, f.Text, "unreachable")
	assert.Contains(t, f.Fix, "check the address")
	assert.False(t, m.Ready())
}

// A wrong password fails the reach check with the fix of the address.
func TestIntegration_Check_WrongPassword(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral, "--requirepass", "right")
	m := checkAt(t, "redis://:wrong@"+srv[0].Addr())
	f := finding(t, m, "reach")
	assert.Equal(t, CheckFail, f.Level, describe(m))
	assert.Contains(t, f.Text, "refuses the login")
	assert.Contains(t, f.Fix, "redis://user:password@host:port")
}

// A replica fails the role check, naming its master.
func TestIntegration_Check_Replica(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	rep := redistest.StartReplica(t, srv[0])
	m := checkAt(t, rep.Addr())
	f := finding(t, m, "role")
	assert.Equal(t, CheckFail, f.Level, describe(m))
	assert.Contains(t, f.Text, "a replica (role:slave) of 127.0.0.1:"+fmt.Sprint(srv[0].Port))
	assert.Contains(t, f.Fix, "its master's address")
	assert.False(t, m.Ready())
}

// A master older than the guard window votes now; one younger says when
// it will.
func TestIntegration_Check_UptimeAgainstTheWindow(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := checkAt(t, srv[0].Addr(), WithRestartGuard(3*time.Second))
	f := finding(t, m, "uptime")
	assert.Equal(t, CheckWarn, f.Level, describe(m))
	assert.Greater(t, m.VotesIn, time.Second, "a master up at most a second votes in 2 s or more")
	assert.LessOrEqual(t, m.VotesIn, 3*time.Second)
	require.Eventually(t, func() bool { up, err := srv[0].Uptime(); return err == nil && up >= 5 }, 10*time.Second, 100*time.Millisecond, "an uptime of 5 s")
	m = checkAt(t, srv[0].Addr(), WithRestartGuard(3*time.Second))
	f = finding(t, m, "uptime")
	assert.Equal(t, CheckOK, f.Level, describe(m))
	assert.Contains(t, f.Text, "longer than the guard window 3s")
	assert.Zero(t, m.VotesIn)
}

// The clock of a master on this machine reads a small offset over a short
// round trip.
func TestIntegration_Check_ClockOffsetIsSmallOnLoopback(t *testing.T) {
	srv := redistest.Start(t, 1, redistest.Ephemeral)
	m := checkAt(t, srv[0].Addr())
	assert.Equal(t, CheckOK, finding(t, m, "clock").Level, describe(m))
	assert.Positive(t, m.RTT)
	assert.Less(t, m.RTT, time.Second)
	// Redis TIME has microseconds; this machine's clock is the master's.
	assert.Less(t, m.Offset.Abs(), 50*time.Millisecond+m.RTT/2)
}

// On Redis 6.0, the oldest supported, every check passes (it has no
// channel permissions to check).
func TestIntegration_Check_Redis60(t *testing.T) {
	srv := masters60(t, 1)
	m := checkAt(t, srv[0].Addr(), WithRestartGuard(0))
	assert.True(t, m.Ready(), describe(m))
	assert.Contains(t, finding(t, m, "version").Text, "Redis 6.0.")
	assert.Equal(t, CheckOK, finding(t, m, "acl").Level, describe(m))
	assert.Equal(t, CheckOK, finding(t, m, "pubsub").Level, describe(m))
}

// A Redis Cluster given as one master is probed through the shard master
// of the check key: every script runs there, announced with SPUBLISH.
func TestIntegration_Check_ClusterGivenAsOneMaster(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	m := checkAt(t, "redis+cluster://"+strings.Join(cl.Addrs(), ","), WithRestartGuard(0))
	assert.True(t, m.Ready(), describe(m))
	f := finding(t, m, "role")
	assert.Equal(t, CheckOK, f.Level)
	assert.Contains(t, f.Text, "a Redis Cluster given as one master; the check key's shard master is 127.0.0.1:")
	assert.Equal(t, CheckOK, finding(t, m, "pubsub").Level, describe(m))
}

// Three healthy masters and a bad one: the check says ready when a quorum
// passes, and not when it does not.
func TestIntegration_Check_QuorumDecides(t *testing.T) {
	good := redistest.Start(t, 2, redistest.FsyncAlways)
	evicts := redistest.Start(t, 1, redistest.FsyncAlways, "--maxmemory", "10mb", "--maxmemory-policy", "allkeys-lru")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tt := range []struct {
		addrs []string
		ready bool
		says  string
	}{
		{[]string{good[0].Addr(), good[1].Addr(), evicts[0].Addr()}, true, "READY: 2 of 3 masters pass, the quorum is 2"},
		{[]string{good[0].Addr(), evicts[0].Addr(), deadAddr(t)}, false, "NOT READY: 1 of 3 masters pass, the quorum is 2; fix the failures above"},
	} {
		c := clientAt(t, tt.addrs)
		r, err := c.Check(ctx, CheckParams{TTL: time.Second})
		require.NoError(t, err)
		assert.Equal(t, tt.ready, r.Ready())
		assert.Equal(t, tt.says, r.Summary())
	}
}

// Bad input is ErrInvalid, a closed client ErrClosed.
func TestCheck_Input(t *testing.T) {
	c := clientAt(t, []string{deadAddr(t)})
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		ctx  context.Context
		p    CheckParams
	}{
		{"nil context", nil, CheckParams{TTL: time.Second}},
		{"no TTL", ctx, CheckParams{}},
		{"negative TTL", ctx, CheckParams{TTL: -time.Second}},
		{"reserved prefix", ctx, CheckParams{TTL: time.Second, KeyPrefix: "quorumlock:x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Check(tt.ctx, tt.p)
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
	var nilClient *Client
	_, err := nilClient.Check(ctx, CheckParams{TTL: time.Second})
	assert.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, c.Close())
	_, err = c.Check(ctx, CheckParams{TTL: time.Second})
	assert.ErrorIs(t, err, ErrClosed)
}

// The offset is the master's clock against the middle of the round trip,
// off by at most half of it; TIME's reply is checked.
func TestCheck_ReadClock(t *testing.T) {
	sent := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) []any {
		m := sent.Add(d)
		return []any{fmt.Sprint(m.Unix()), fmt.Sprint(m.Nanosecond() / 1000)}
	}
	for _, tt := range []struct {
		name   string
		rtt    time.Duration
		reply  any
		offset time.Duration
		err    string
	}{
		{"in step, read mid-way", 10 * time.Millisecond, at(5 * time.Millisecond), 0, ""},
		{"ahead", 10 * time.Millisecond, at(2*time.Second + 5*time.Millisecond), 2 * time.Second, ""},
		{"behind", 4 * time.Millisecond, at(-time.Second), -time.Second - 2*time.Millisecond, ""},
		{"microseconds kept", 0, at(1500 * time.Microsecond), 1500 * time.Microsecond, ""},
		{"an error reply", time.Millisecond, errString("NOPERM no time"), 0, "NOPERM"},
		{"one number", time.Millisecond, []any{"1"}, 0, "unexpected reply"},
		{"not numbers", time.Millisecond, []any{"a", "b"}, 0, "unexpected reply"},
		{"negative", time.Millisecond, []any{"-1", "0"}, 0, "unexpected reply"},
		{"clock went back", -time.Millisecond, at(0), 0, "went back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rd, err := readClock(sent, sent.Add(tt.rtt), tt.reply)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.offset, rd.offset)
			assert.Equal(t, max(tt.rtt, time.Nanosecond), rd.rtt)
		})
	}
}

// errString is an error reply.
type errString string

func (e errString) Error() string { return string(e) }

// An offset is beyond the drift reserve only when it is whatever the
// reading's error, half the round trip, either way.
func TestCheck_WithinReserve(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		offset, rtt, reserve time.Duration
		within               bool
	}{
		{0, 0, 0, true},
		{100 * ms, 0, 102 * ms, true},
		{102 * ms, 0, 102 * ms, true},
		{103 * ms, 0, 102 * ms, false},
		{-103 * ms, 0, 102 * ms, false},
		{103 * ms, 2 * ms, 102 * ms, true},
		{-103 * ms, 2 * ms, 102 * ms, true},
		{2 * time.Second, 10 * ms, 102 * ms, false},
	} {
		assert.Equal(t, tt.within, withinReserve(tt.offset, tt.rtt, tt.reserve), "%+v", tt)
	}
}

// Ready counts the masters without a failure against the quorum; the
// summary names when young masters vote.
func TestCheck_ReadinessSummary(t *testing.T) {
	ok := MasterReadiness{Findings: []Finding{{Level: CheckOK}, {Level: CheckWarn}}}
	young := MasterReadiness{Findings: []Finding{{Level: CheckWarn}}, VotesIn: 8 * time.Second}
	bad := MasterReadiness{Findings: []Finding{{Level: CheckOK}, {Level: CheckFail}}}
	for _, tt := range []struct {
		name    string
		quorum  int
		masters []MasterReadiness
		ready   bool
		summary string
	}{
		{"all pass", 2, []MasterReadiness{ok, ok, ok}, true, "READY: 3 of 3 masters pass, the quorum is 2"},
		{"a quorum passes", 2, []MasterReadiness{ok, bad, ok}, true, "READY: 2 of 3 masters pass, the quorum is 2"},
		{"no quorum", 2, []MasterReadiness{bad, bad, ok}, false, "NOT READY: 1 of 3 masters pass, the quorum is 2; fix the failures above"},
		{"young, still a quorum voting now", 2, []MasterReadiness{ok, ok, young}, true, "READY: 3 of 3 masters pass, the quorum is 2"},
		{"young, no quorum voting now", 2, []MasterReadiness{ok, young, young}, true,
			"READY: 3 of 3 masters pass, the quorum is 2; 2 vote only once up for the guard window: locks are granted in 8s at the latest"},
		{"quorum of all", 3, []MasterReadiness{ok, ok, bad}, false, "NOT READY: 2 of 3 masters pass, the quorum is 3; fix the failures above"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := &Readiness{Quorum: tt.quorum, Masters: tt.masters}
			assert.Equal(t, tt.ready, r.Ready())
			assert.Equal(t, tt.summary, r.Summary())
		})
	}
	assert.Equal(t, []string{"ok", "warn", "fail", "level(7)"},
		[]string{CheckOK.String(), CheckWarn.String(), CheckFail.String(), CheckLevel(7).String()})
}

// docs/check.md gives the rule the check's fix gives, and explains every
// topic a finding can have.
func TestCheck_DocsExplainEveryTopic(t *testing.T) {
	b, err := os.ReadFile("../docs/check.md")
	require.NoError(t, err)
	doc := string(b)
	assert.Contains(t, doc, "ACL SETUSER app on >secret "+aclRule(checkNS, false))
	assert.Contains(t, doc, aclClusterCommands)
	for _, topic := range []string{"reach", "readable", "version", "role", "persistence", "eviction", "acl and scripts", "pubsub", "cleanup", "uptime", "clock"} {
		assert.Contains(t, doc, "\n### "+topic+"\n", "docs/check.md has no section on %s", topic)
	}
}
