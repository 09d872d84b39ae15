package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/slot"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, KnownLeaks()...) }

// cmd runs one command against addr with a short deadline.
func cmd(t *testing.T, addr string, timeout time.Duration, name string, args ...any) (any, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return do(ctx, addr, name, args...)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// TestCluster_Faults checks, on every available backend, that each fault
// does what the scenarios rely on.
func TestCluster_Faults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	backends, err := Backends(ctx, t)
	require.NoError(t, err)
	for _, b := range backends {
		t.Run(b.Name(), func(t *testing.T) {
			c, err := b.Start(ctx, t, Spec{Nodes: 3, Clients: 2})
			require.NoError(t, err)
			require.Equal(t, 3, c.Size())
			require.Equal(t, b.Name(), c.Backend())
			a0, a1 := c.Addrs(0), c.Addrs(1)
			require.Len(t, a0, 3)
			for i := range 3 {
				require.NotEqual(t, a0[i], a1[i], "each client has its own links")
				for _, a := range []string{a0[i], a1[i], c.Direct(i)} {
					_, err := cmd(t, a, 2*time.Second, "PING")
					require.NoError(t, err, "PING %s", a)
				}
			}
			short := 300 * time.Millisecond

			t.Run("blackhole cuts one client only", func(t *testing.T) {
				require.NoError(t, c.Impair(ctx, Link{Client: 0, Node: 0}, Impairment{Kind: Blackhole}))
				_, err := cmd(t, a0[0], short, "PING")
				assert.True(t, isTimeout(err), "want a timeout, got %v", err)
				_, err = cmd(t, a1[0], short, "PING")
				assert.NoError(t, err)
				require.NoError(t, c.Heal(ctx, Link{Client: 0, Node: 0}))
				_, err = cmd(t, a0[0], 2*time.Second, "PING")
				assert.NoError(t, err)
			})

			t.Run("reject fails fast", func(t *testing.T) {
				require.NoError(t, c.Impair(ctx, Link{Client: 0, Node: 1}, Impairment{Kind: Reject}))
				start := time.Now()
				_, err := cmd(t, a0[1], 2*time.Second, "PING")
				assert.Error(t, err)
				assert.False(t, isTimeout(err), "want a reset, got %v", err)
				assert.Less(t, time.Since(start), time.Second)
				require.NoError(t, c.Heal(ctx, Link{Client: 0, Node: 1}))
				_, err = cmd(t, a0[1], 2*time.Second, "PING")
				assert.NoError(t, err)
			})

			t.Run("dropped replies: the command runs, the reply is lost", func(t *testing.T) {
				all := Link{Client: AllClients, Node: 2}
				require.NoError(t, c.Impair(ctx, all, Impairment{Kind: DropReplies}))
				_, err := cmd(t, a1[2], short, "SET", "dropped", "ran", "PX", 60000)
				assert.True(t, isTimeout(err), "want a timeout, got %v", err)
				v, err := redis.String(cmd(t, c.Direct(2), 2*time.Second, "GET", "dropped"))
				assert.NoError(t, err)
				assert.Equal(t, "ran", v)
				require.NoError(t, c.Heal(ctx, all))
			})

			t.Run("latency delays replies", func(t *testing.T) {
				all := Link{Client: AllClients, Node: 0}
				require.NoError(t, c.Impair(ctx, all, Latency(150*time.Millisecond, 0)))
				start := time.Now()
				_, err := cmd(t, a0[0], 5*time.Second, "PING")
				assert.NoError(t, err)
				assert.GreaterOrEqual(t, time.Since(start), 140*time.Millisecond)
				require.NoError(t, c.Heal(ctx, all))
			})

			t.Run("clock jump expires keys early", func(t *testing.T) {
				d := c.Direct(1)
				_, err := cmd(t, d, 2*time.Second, "SET", "jump", "v", "PX", 10000)
				require.NoError(t, err)
				n, err := c.JumpClock(ctx, 1, 5*time.Second)
				require.NoError(t, err)
				assert.GreaterOrEqual(t, n, 1)
				pttl, err := redis.Int64(cmd(t, d, 2*time.Second, "PTTL", "jump"))
				require.NoError(t, err)
				assert.InDelta(t, 5000, pttl, 1000)
				_, err = c.JumpClock(ctx, 1, 6*time.Second)
				require.NoError(t, err)
				_, err = redis.String(cmd(t, d, 2*time.Second, "GET", "jump"))
				assert.ErrorIs(t, err, redis.ErrNil)
			})

			t.Run("pause holds replies until unpause", func(t *testing.T) {
				require.NoError(t, c.Pause(ctx, 0))
				_, err := cmd(t, c.Direct(0), short, "PING")
				assert.True(t, isTimeout(err), "want a timeout, got %v", err)
				require.NoError(t, c.Unpause(ctx, 0))
				_, err = cmd(t, c.Direct(0), 2*time.Second, "PING")
				assert.NoError(t, err)
			})

			t.Run("kill and start without persistence comes back empty", func(t *testing.T) {
				d := c.Direct(1)
				_, err := cmd(t, d, 2*time.Second, "SET", "gone", "v")
				require.NoError(t, err)
				id1 := runIDOf(t, d)
				require.NoError(t, c.Kill(ctx, 1))
				_, err = cmd(t, d, short, "PING")
				assert.Error(t, err)
				require.NoError(t, c.Start(ctx, 1, Ephemeral))
				assert.NotEqual(t, id1, runIDOf(t, d))
				_, err = redis.String(cmd(t, d, 2*time.Second, "GET", "gone"))
				assert.ErrorIs(t, err, redis.ErrNil)
				// Through a client's link too, once the old connection is gone.
				_, err = cmd(t, a0[1], 2*time.Second, "PING")
				assert.NoError(t, err)
			})

			t.Run("stop and start", func(t *testing.T) {
				require.NoError(t, c.Stop(ctx, 2))
				_, err := cmd(t, c.Direct(2), short, "PING")
				assert.Error(t, err)
				require.NoError(t, c.Start(ctx, 2, Ephemeral))
				_, err = cmd(t, c.Direct(2), 2*time.Second, "PING")
				assert.NoError(t, err)
			})

			t.Run("appendfsync always keeps keys and their expiry across a kill", func(t *testing.T) {
				d := c.Direct(0)
				require.NoError(t, c.Kill(ctx, 0))
				require.NoError(t, c.Start(ctx, 0, FsyncAlways))
				_, err := cmd(t, d, 2*time.Second, "SET", "kept", "v", "PX", 60000)
				require.NoError(t, err)
				require.NoError(t, c.Kill(ctx, 0))
				require.NoError(t, c.Start(ctx, 0, FsyncAlways))
				v, err := redis.String(cmd(t, d, 2*time.Second, "GET", "kept"))
				assert.NoError(t, err)
				assert.Equal(t, "v", v)
				pttl, err := redis.Int64(cmd(t, d, 2*time.Second, "PTTL", "kept"))
				assert.NoError(t, err)
				assert.Greater(t, pttl, int64(0))
				assert.LessOrEqual(t, pttl, int64(60000))
			})
		})
	}
}

// TestCluster_Failover checks, on every available backend, that a node's
// replica follows it, lags once detached, and takes the node's place for
// every client on failover, as the failover scenario needs.
func TestCluster_Failover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	backends, err := Backends(ctx, t)
	require.NoError(t, err)
	for _, b := range backends {
		t.Run(b.Name(), func(t *testing.T) {
			c, err := b.Start(ctx, t, Spec{Nodes: 2, Clients: 2, Replicas: []int{0}})
			require.NoError(t, err)
			require.Error(t, c.DetachReplica(ctx, 1), "node 1 has no replica")
			old := c.Direct(0)
			oldID := runIDOf(t, old)
			_, err = cmd(t, old, 2*time.Second, "SET", "before", "v")
			require.NoError(t, err)
			// Let the write reach the replica before it is detached: WAIT
			// answers how many replicas have it, 0 while the replica is
			// still syncing on a loaded machine.
			require.Eventually(t, func() bool {
				n, err := redis.Int(cmd(t, old, 5*time.Second, "WAIT", 1, 1000))
				return err == nil && n == 1
			}, 30*time.Second, 10*time.Millisecond, "the replica acknowledged the write")
			require.NoError(t, c.DetachReplica(ctx, 0))
			_, err = cmd(t, old, 2*time.Second, "SET", "after", "v")
			require.NoError(t, err)

			// A connection open through a link is closed by the failover.
			conn, err := redis.Dial("tcp", c.Addrs(0)[0])
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Do("PING")
			require.NoError(t, err)

			require.NoError(t, c.Failover(ctx, 0))
			_, err = conn.Do("PING")
			assert.Error(t, err, "the open connection was closed")
			assert.NotEqual(t, old, c.Direct(0), "Direct leads to the replica")
			for _, a := range []string{c.Addrs(0)[0], c.Addrs(1)[0], c.Direct(0)} {
				assert.NotEqual(t, oldID, runIDOf(t, a), "%s still reaches the old master", a)
				v, err := redis.String(cmd(t, a, 2*time.Second, "GET", "before"))
				assert.NoError(t, err)
				assert.Equal(t, "v", v, "the replica had what was written before it was detached")
				_, err = redis.String(cmd(t, a, 2*time.Second, "GET", "after"))
				assert.ErrorIs(t, err, redis.ErrNil, "and lacks what came after")
				info, err := redis.String(cmd(t, a, 2*time.Second, "INFO", "replication"))
				require.NoError(t, err)
				assert.Contains(t, info, "role:master")
				assert.NotContains(t, info, "master_replid2:0000000000000000000000000000000000000000", "it shows it was promoted")
			}
			_, err = cmd(t, old, 300*time.Millisecond, "PING")
			assert.Error(t, err, "the old master is gone")
		})
	}
}

func runIDOf(t *testing.T, addr string) string {
	t.Helper()
	s, err := redis.String(cmd(t, addr, 2*time.Second, "INFO", "server"))
	require.NoError(t, err)
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	t.Fatalf("no run_id in INFO of %s", addr)
	return ""
}

func TestParseLdd(t *testing.T) {
	out := "\tlinux-vdso.so.1 (0x00007ffd)\n" +
		"\tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x00007f)\n" +
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
	libs, err := parseLdd(out)
	require.NoError(t, err)
	assert.Equal(t, []string{"/lib/x86_64-linux-gnu/libm.so.6", "/lib64/ld-linux-x86-64.so.2"}, libs)

	_, err = parseLdd("\tlibgone.so.1 => not found\n")
	assert.ErrorContains(t, err, "not found")
}

func TestSplitImage(t *testing.T) {
	tests := []struct{ in, repo, tag string }{
		{"redis:7.2", "redis", "7.2"},
		{"redis", "redis", "latest"},
		{"registry.local:5000/redis", "registry.local:5000/redis", "latest"},
		{"registry.local:5000/redis:7", "registry.local:5000/redis", "7"},
	}
	for _, tt := range tests {
		repo, tag := splitImage(tt.in)
		assert.Equal(t, tt.repo, repo, tt.in)
		assert.Equal(t, tt.tag, tag, tt.in)
	}
}

// TestCluster_Sharded checks, on the process backend, that nodes can be
// Redis Clusters, and that a shard's replica cut off by LagReplicas lacks
// what its master wrote afterwards once FailoverShard has promoted it, as
// the cluster failover scenario needs. The docker backend refuses such
// nodes.
func TestCluster_Sharded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := Spec{Nodes: 2, Clients: 2, Shards: 3, ShardReplicas: 1}
	if d, err := pingDocker(ctx); err == nil {
		d.Client.HTTPClient.CloseIdleConnections()
		if os.Getenv(BackendEnv) != "process" {
			dk, err := NewDocker(ctx, t)
			require.NoError(t, err)
			_, err = dk.Start(ctx, t, spec)
			assert.ErrorIs(t, err, ErrUnsupported)
		}
	}
	c, err := Process{}.Start(ctx, t, spec)
	require.NoError(t, err)
	s, ok := c.(Sharded)
	require.True(t, ok, "a cluster of Redis Clusters is a Sharded")
	require.Equal(t, 2, s.Size())
	for n := range 2 {
		assert.True(t, strings.HasPrefix(s.Direct(n), "redis+cluster://"), s.Direct(n))
		assert.Equal(t, s.Direct(n), s.Addrs(0)[n], "no links: every client gets the cluster's URL")
		assert.Equal(t, s.Direct(n), s.Addrs(1)[n])
		ms, err := s.Masters(n)
		require.NoError(t, err)
		assert.Len(t, ms, 3)
	}
	for _, err := range []error{
		s.Kill(ctx, 0), s.Pause(ctx, 0), s.Failover(ctx, 0),
		s.Impair(ctx, Link{Client: 0, Node: 0}, Impairment{Kind: Reject}),
	} {
		assert.ErrorIs(t, err, ErrUnsupported)
	}

	const at = 100 // the slot of the keys below
	tag, err := slot.TagFor(at)
	require.NoError(t, err)
	before, after := "before{"+tag+"}", "after{"+tag+"}"
	master, err := s.MasterFor(0, at)
	require.NoError(t, err)
	_, err = cmd(t, master, 2*time.Second, "SET", before, "v")
	require.NoError(t, err)
	require.NoError(t, s.LagReplicas(ctx, 0, at))
	_, err = cmd(t, master, 2*time.Second, "SET", after, "v")
	require.NoError(t, err)
	other, err := s.MasterFor(1, at)
	require.NoError(t, err)

	killed, promoted, err := s.FailoverShard(ctx, 0, at)
	require.NoError(t, err)
	assert.Equal(t, master, killed)
	assert.NotEqual(t, killed, promoted)
	now, err := s.MasterFor(0, at)
	require.NoError(t, err)
	assert.Equal(t, promoted, now, "the promoted replica owns the slot")
	v, err := redis.String(cmd(t, promoted, 2*time.Second, "GET", before))
	assert.NoError(t, err)
	assert.Equal(t, "v", v, "the replica had what was written before it was cut off")
	_, err = redis.String(cmd(t, promoted, 2*time.Second, "GET", after))
	assert.ErrorIs(t, err, redis.ErrNil, "and lacks what came after")
	info, err := redis.String(cmd(t, promoted, 2*time.Second, "INFO", "replication"))
	require.NoError(t, err)
	assert.Contains(t, info, "role:master")
	assert.NotContains(t, info, "master_replid2:0000000000000000000000000000000000000000", "it shows it was promoted")
	_, err = cmd(t, killed, 300*time.Millisecond, "PING")
	assert.Error(t, err, "the old master is gone")
	still, err := s.MasterFor(1, at)
	require.NoError(t, err)
	assert.Equal(t, other, still, "the other node did not fail over")
	require.Error(t, s.LagReplicas(ctx, 0, at), "the promoted master has no replica left")
}
