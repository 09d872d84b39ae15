package findings

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestRestartGuard_MasterSeenJustAfterASecondBoundary recreates scenario
// 04b (kill and immediate restart without persistence, guard on) with the
// restart timed late in a wall-clock second.
//
// Redis gives uptime_in_seconds as the difference of two clock readings in
// whole seconds, so a master started at 10.8 s reports 1 at 11.0 s. A
// guard that took it at its word thought the master 0.8 s older than it
// was and let it vote 0.8 s before its window was over: B, first seeing n0
// just after the boundary, was granted the lock while A's was still valid.
func TestRestartGuard_MasterSeenJustAfterASecondBoundary(t *testing.T) {
	const key, ttl = "finding-uptime", 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := redistest.Start(t, 5, redistest.Ephemeral)
	for _, s := range servers[3:] {
		call(t, s.Addr(), "SET", key, "foreign", "PX", 60000)
	}
	newClient := func(opts ...redlock.Option) *redlock.Client {
		opts = append(opts, redlock.WithLogger(slog.New(slog.DiscardHandler)))
		c, err := redlock.NewFromAddrs(redistest.Addrs(servers), opts...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := newClient(redlock.WithRestartGuard(0))

	// A takes the key on n0-n2 at 0.7 s past a whole second; n0 is killed
	// and restarted at once, empty.
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(1700 * time.Millisecond).Sub(now))
	la, err := a.TryLock(ctx, key, ttl)
	require.NoError(t, err)
	require.NoError(t, servers[0].Kill())
	require.NoError(t, servers[0].Restart(redistest.Ephemeral))
	for _, s := range servers[3:] {
		call(t, s.Addr(), "DEL", key)
	}

	// B, with the default guard, first sees n0 once n0 says it has been up
	// a second, and tries the key every 50 ms while A's lock is valid.
	for uptime(t, servers[0]) < 1 {
		require.Positive(t, la.Validity(), "uptime_in_seconds never reached 1")
		time.Sleep(5 * time.Millisecond)
	}
	b := newClient() // the default guard: the longest TTL used, plus drift
	for i := 0; la.Validity() > 0; i++ {
		require.Less(t, i, 200)
		lb, err := b.TryLock(ctx, key, ttl)
		if err == nil {
			left := la.Validity()
			_ = lb.Release(ctx)
			t.Fatalf("B got the lock while A's was valid for %v more", left)
		}
		require.True(t, errors.Is(err, redlock.ErrNotObtained), "%v", err)
		time.Sleep(50 * time.Millisecond)
	}
	require.NoError(t, ctx.Err())
}

func uptime(t *testing.T, s *redistest.Server) int {
	t.Helper()
	up, err := s.Uptime()
	require.NoError(t, err)
	return up
}

func call(t *testing.T, addr, cmd string, args ...any) {
	t.Helper()
	conn, err := redis.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Do(cmd, args...)
	require.NoError(t, err)
}
