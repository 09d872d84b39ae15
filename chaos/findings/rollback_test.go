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
// The roll-back deletes on another connection, so its delete can arrive
// before a delayed acquire. It therefore leaves a tombstone that the acquire
// script honours, and while it cannot reach a master it keeps trying until
// the attempt's TTL has passed. Without those, the delayed acquire lands
// after the roll-back and the master keeps the failed attempt's token for a
// whole TTL; C4 catches that on the docker backend, where connections opened
// while a container starts arrive about a second late.
//
// Each case holds back one segment (the acquire to n0), as a network does
// when that segment is lost and retransmitted:
//   - delayed: the roll-back's delete, on a new connection, arrives first
//     and finds nothing; then the acquire lands.
//   - delayed while n0 refuses: n0 also resets every new connection for the
//     roll-back's first tries, as a master that is starting and not yet
//     listening does; the acquire lands once n0 answers again.
func TestTryLock_AcquireDelayedPastItsRollback_LeavesNoToken(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		delay  time.Duration // how long the acquire to n0 is held back
		refuse time.Duration // how long new connections to n0 are reset; 0 = not at all
		settle time.Duration // after TryLock returns, until the held-back segment has landed
		why    string        // what a token left on n0 means
	}{
		{
			name:   "delayed",
			key:    "finding-rollback",
			delay:  800 * time.Millisecond,
			settle: 1500 * time.Millisecond,
			why:    "its acquire, delayed in the network, landed after TryLock's roll-back delete",
		},
		{
			name:   "delayed while n0 refuses",
			key:    "finding-rollback-unreachable",
			delay:  1200 * time.Millisecond,
			refuse: 600 * time.Millisecond,
			settle: 2 * time.Second,
			why:    "the roll-back could not reach n0, left no tombstone, and the delayed acquire landed after n0 was reachable again",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			servers := redistest.Start(t, 3, redistest.Ephemeral)
			n := redistest.Addrs(servers)
			const ttl = 30 * time.Second
			quiet := redlock.WithLogger(slog.New(slog.DiscardHandler))

			// Another client holds the lock on n1 and n2; it cannot reach n0.
			holder, err := redlock.NewFromAddrs([]string{closedAddrs(t, 1)[0], n[1], n[2]}, redlock.WithRestartGuard(0), quiet)
			require.NoError(t, err)
			defer holder.Close()
			held, err := holder.TryLock(ctx, tt.key, ttl)
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
			warm, err := victim.TryLock(ctx, tt.key+"-warm", ttl)
			require.NoError(t, err)
			require.NoError(t, warm.Release(ctx))
			// Let the warm-up's background work (roll-backs, counter raises) end, so
			// that the next segment to n0 is the acquire below.
			time.Sleep(500 * time.Millisecond)

			link.DelayNext(tt.delay)
			if tt.refuse > 0 {
				link.RefuseFor(tt.refuse)
			}
			_, err = victim.TryLock(ctx, tt.key, ttl)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "n1 and n2 are held, so the attempt must fail")
			mu.Lock()
			failed := last
			mu.Unlock()

			time.Sleep(tt.settle)
			conn, err := redis.DialContext(ctx, "tcp", n[0])
			require.NoError(t, err)
			defer conn.Close()
			got, err := redis.String(conn.Do("GET", tt.key))
			if err == redis.ErrNil {
				return // nothing left on n0
			}
			require.NoError(t, err)
			pttl, _ := redis.Int64(conn.Do("PTTL", tt.key))
			assert.NotEqual(t, failed, got, "n0 holds the failed attempt's token, PTTL %dms: %s", pttl, tt.why)
		})
	}
}
