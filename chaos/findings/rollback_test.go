package findings

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestTryLock_AcquireDelayedPastItsRollback_LeavesNoToken checks TryLock's
// promise that nothing of a failed attempt is left on a master it can reach,
// when the attempt's acquire to a master is still in the network as its
// roll-back runs.
//
// One segment (the acquire to n0) is held back 800ms, as a lost and
// retransmitted segment would be. The roll-back's delete, on a new
// connection, arrives first and finds nothing; then the acquire lands.
// Before roll-backs left tombstones (428b927), n0 kept the failed
// attempt's token for the whole TTL; C4 found it on the docker backend.
func TestTryLock_AcquireDelayedPastItsRollback_LeavesNoToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := redistest.Start(t, 3, redistest.Ephemeral)
	n := redistest.Addrs(servers)
	const key, ttl = "finding-rollback", 30 * time.Second
	quiet := redlock.WithLogger(slog.New(slog.DiscardHandler))

	// Another client holds the lock on n1 and n2; it cannot reach n0.
	holder, err := redlock.NewFromAddrs([]string{closedAddr(t), n[1], n[2]}, redlock.WithRestartGuard(0), quiet)
	require.NoError(t, err)
	defer holder.Close()
	held, err := holder.TryLock(ctx, key, ttl)
	require.NoError(t, err)
	defer held.Release(context.WithoutCancel(ctx))

	// The client under test reaches n0 through a link that can delay a segment.
	link := newDelayLink(t, n[0])
	var mu sync.Mutex
	var last string
	victim, err := redlock.NewFromAddrs([]string{link.Addr(), n[1], n[2]},
		redlock.WithRestartGuard(0), redlock.WithNodeTimeout(100*time.Millisecond), quiet,
		redlock.WithTokenGenerator(func() (string, error) {
			tok, err := redlock.RandomToken()
			mu.Lock()
			last = tok
			mu.Unlock()
			return tok, err
		}))
	require.NoError(t, err)
	defer victim.Close()
	// Warm up: a pooled connection to n0 and the scripts cached there.
	warm, err := victim.TryLock(ctx, key+"-warm", ttl)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	// Let the warm-up's background work (roll-backs, counter raises) end, so
	// that the next segment to n0 is the acquire below.
	time.Sleep(500 * time.Millisecond)

	link.DelayNext(800 * time.Millisecond)
	_, err = victim.TryLock(ctx, key, ttl)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "n1 and n2 are held, so the attempt must fail")
	mu.Lock()
	failed := last
	mu.Unlock()

	time.Sleep(1500 * time.Millisecond) // the held-back segment has landed by now
	conn, err := redis.DialContext(ctx, "tcp", n[0])
	require.NoError(t, err)
	defer conn.Close()
	got, err := redis.String(conn.Do("GET", key))
	if err == redis.ErrNil {
		return // nothing left: the defect is fixed
	}
	require.NoError(t, err)
	pttl, _ := redis.Int64(conn.Do("PTTL", key))
	assert.NotEqual(t, failed, got,
		"n0 holds the failed attempt's token, PTTL %dms: its acquire, delayed in the network, landed after TryLock's roll-back delete", pttl)
}
