package findings

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestLock_WhileMastersAreInRestartQuarantine_BacksOff checks that Lock
// waits with its backoff while the restart guard keeps every master out of
// the quorum, as after a fleet restart.
//
// Each failed attempt rolls back, and a roll-back announces nothing on the
// release channel. If it announced the deleted key as a release does, the
// waiter, subscribed to that channel, would hear its own roll-back as a
// release and retry at once: about a thousand attempts a second against
// every master, one PUBLISH each, until the quarantine ends.
func TestLock_WhileMastersAreInRestartQuarantine_BacksOff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := redistest.Start(t, 5, redistest.Ephemeral)
	var attempts atomic.Int64
	c, err := redlock.NewFromAddrs(redistest.Addrs(servers), // restart guard on: the default
		redlock.WithLogger(slog.New(slog.DiscardHandler)),
		redlock.WithTokenGenerator(func() (string, error) {
			attempts.Add(1)
			return redlock.RandomToken()
		}))
	require.NoError(t, err)
	defer c.Close()

	start := time.Now()
	l, err := c.Lock(ctx, "finding-quarantine", time.Second)
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, l.Release(ctx))
	publishes := publishCalls(t, servers[0].Addr())
	// DefaultRetry backs off exponentially from 4ms to 512ms: a wait of a
	// second or two takes a few dozen attempts, not thousands.
	assert.Less(t, attempts.Load(), int64(200),
		"Lock made %d attempts in %v while the masters were in restart quarantine; n0 ran PUBLISH %d times",
		attempts.Load(), took.Round(time.Millisecond), publishes)
}

// publishCalls reads how many PUBLISH commands a master has run.
func publishCalls(t *testing.T, addr string) int64 {
	t.Helper()
	conn, err := redis.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	s, err := redis.String(conn.Do("INFO", "commandstats"))
	require.NoError(t, err)
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_publish:calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}
