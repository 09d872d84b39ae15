package redlock

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// Each misconfiguration of the server, on a real server set up with it,
// shows as its finding at its level, with its fix; a master with a
// failure does not pass.
func TestIntegration_Check_ServerFindings(t *testing.T) {
	runCases(t, []checkCase{
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
	})
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
	f = finding(t, m, "scripts")
	assert.Contains(t, f.Text, "READONLY")
	assert.Contains(t, f.Fix, "the master's address, not a replica's")
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
