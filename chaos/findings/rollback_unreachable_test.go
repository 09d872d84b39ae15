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

// TestTryLock_AcquireDelayedPastAnUnreachableRollback_LeavesNoToken is the
// case the roll-back tombstones alone did not cover, and the one the docker
// backend kept showing in scenarios 03 and 04c: while a master starts, an
// acquire sent to it is delayed (its connection's SYN is retransmitted a
// second later) and the roll-back sent a moment later is refused (nothing
// listens yet). A roll-back that gave up there left no tombstone, the
// acquire landed afterwards, and the master kept the failed attempt's token
// for a whole TTL after it came back. Since 1d0a649 a roll-back that cannot
// reach a master keeps trying until the attempt's TTL has passed.
//
// Here one segment (the acquire to n0) is held back 1.2s, and every new
// connection to n0 is reset for the first 600ms, which covers the
// roll-back's first tries.
func TestTryLock_AcquireDelayedPastAnUnreachableRollback_LeavesNoToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := redistest.Start(t, 3, redistest.Ephemeral)
	n := redistest.Addrs(servers)
	const key, ttl = "finding-rollback-unreachable", 30 * time.Second
	quiet := redlock.WithLogger(slog.New(slog.DiscardHandler))

	holder, err := redlock.NewFromAddrs([]string{closedAddr(t), n[1], n[2]}, redlock.WithRestartGuard(0), quiet)
	require.NoError(t, err)
	defer holder.Close()
	held, err := holder.TryLock(ctx, key, ttl)
	require.NoError(t, err)
	defer held.Release(context.WithoutCancel(ctx))

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
	warm, err := victim.TryLock(ctx, key+"-warm", ttl)
	require.NoError(t, err)
	require.NoError(t, warm.Release(ctx))
	// Let the warm-up's background work (roll-backs, counter raises) end, so
	// that the next segment to n0 is the acquire below.
	time.Sleep(500 * time.Millisecond)

	link.DelayNext(1200 * time.Millisecond)
	link.RefuseFor(600 * time.Millisecond)
	_, err = victim.TryLock(ctx, key, ttl)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	mu.Lock()
	failed := last
	mu.Unlock()

	time.Sleep(2 * time.Second) // n0 answers again after 600ms; the held-back segment lands at 1.2s
	conn, err := redis.DialContext(ctx, "tcp", n[0])
	require.NoError(t, err)
	defer conn.Close()
	got, err := redis.String(conn.Do("GET", key))
	if err == redis.ErrNil {
		return
	}
	require.NoError(t, err)
	pttl, _ := redis.Int64(conn.Do("PTTL", key))
	assert.NotEqual(t, failed, got,
		"n0 holds the failed attempt's token, PTTL %dms: the roll-back could not reach n0, left no tombstone, and the delayed acquire landed after n0 was reachable again", pttl)
}
