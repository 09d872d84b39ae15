package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock"
)

// lockClient returns a client over drivers for the servers; the restart
// guard is off unless opts turn it on, as the servers have just started.
func lockClient(t *testing.T, ds []driver.Master, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	// A node timeout a loaded machine meets: the suite is about what the
	// driver carries, not how fast.
	all := append([]redlock.Option{redlock.WithRestartGuard(0), redlock.WithNodeTimeout(500 * time.Millisecond),
		redlock.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, opts...)
	c, err := redlock.New(ds, all...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// RunLock runs the lock's operations through the driver, each of the
// lock's three nodes a standalone master.
func RunLock(t *testing.T, newDriver New) {
	runLock(t, standaloneTopology(newDriver))
	t.Run("StoppedMasterIsNotDialledInAStorm", func(t *testing.T) { stoppedMasterDials(t, newDriver) })
}

// stoppedMasterDials has a client of 16 goroutines take and release one key
// while one of three masters is stopped for 2 s with its listen queue full,
// after its connections dropped: the client's calls and its release
// announcements both need new connections to it, and none is answered. It
// dials the master at most 5 times in all: the default driver 3 times for
// its calls (see UnansweredMasterIsNotDialledInAStorm) and twice for its
// announcements. The lock goes on, on the other two.
func stoppedMasterDials(t *testing.T, newDriver New) {
	const goroutines, stopped = 16, 2 * time.Second
	srv := append(redistest.Start(t, 1, redistest.Ephemeral, "--tcp-backlog", "1"), redistest.Start(t, nodeCount-1, redistest.Ephemeral)...)
	c := lockClient(t, standalone{srv: srv, newDriver: newDriver}.open(t))
	busy := func(d time.Duration) int64 {
		var locks atomic.Int64
		callBusily(goroutines, d, func(_, _ int) {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if l, err := c.Lock(ctx, "hot", time.Second); err == nil {
				locks.Add(1)
				l.Release(ctx)
			}
		})
		return locks.Load()
	}
	// The waiters subscribe on their first waits; a loaded machine may take
	// more than one round to get there.
	for round := 0; busy(300*time.Millisecond) == 0; round++ {
		require.Less(t, round, 10, "no lock in 3 s: the waiters are not subscribed")
	}
	dials, stop := stopUnanswering(t, srv[0], "normal", "pubsub")
	locks := busy(stopped)
	stop()
	t.Logf("%d dials to the stopped master over %v; %d locks meanwhile", dials(), stopped, locks)
	assert.LessOrEqual(t, dials(), 5, "a stopped master was dialled in a storm")
	assert.Positive(t, locks, "the other two masters kept the lock going")
}

// runLock runs the lock's operations through the driver on the nodes top
// gives. Where a node has shards, each operation is made on a key of every
// shard; after each subtest, no server of any node keeps more than the lock
// keeps by design (see leftovers).
func runLock(t *testing.T, top topology) {
	const ttl = 10 * time.Second
	t.Run("AcquireContendRelease", func(t *testing.T) {
		n := top(t)
		c := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		keys := n.keys(t, "acquire")
		for _, key := range keys {
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err, key)
			// TryLock returns at a quorum; the third master's acquire may
			// still be on its way.
			assert.GreaterOrEqual(t, len(holders(t, n, key)), 2, key)
			_, err = c.TryLock(ctx, key, ttl)
			assert.ErrorIs(t, err, redlock.ErrNotObtained, key)
			assert.ErrorIs(t, err, redlock.ErrHeld, key)
			require.NoError(t, l.Release(ctx), key)
			assert.ErrorIs(t, l.Release(ctx), redlock.ErrLockNotHeld, key)
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
	t.Run("FailedAttemptLeavesNoResidue", func(t *testing.T) {
		n := top(t)
		c := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		keys := n.keys(t, "contended")
		for _, key := range keys {
			// Another holds the key on two nodes: the attempt gets one vote
			// and must take it back before TryLock returns.
			for i := range 2 {
				_, err := redistest.DoAt(n.server(t, i, key), "SET", key, "someone", "PX", "10000")
				require.NoError(t, err)
			}
			_, err := c.TryLock(ctx, key, ttl)
			require.ErrorIs(t, err, redlock.ErrNotObtained, key)
			assert.Equal(t, []int{0, 1}, holders(t, n, key), "%s: the roll-back removed the one vote", key)
			for i := range 2 {
				_, err := redistest.DoAt(n.server(t, i, key), "DEL", key)
				require.NoError(t, err)
			}
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
	t.Run("ExtendAndFences", func(t *testing.T) {
		n := top(t)
		c := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		keys := n.keys(t, "fenced")
		for _, key := range keys {
			var last int64
			for round := range 3 {
				l, err := c.TryLock(ctx, key, time.Second)
				require.NoError(t, err)
				assert.Greater(t, l.Fence(), last, "%s, round %d: fences grow", key, round)
				last = l.Fence()
				require.NoError(t, l.Extend(ctx, ttl))
				assert.Greater(t, l.Validity(), ttl/2)
				extended := 0
				for i := range nodeCount {
					pttl, err := redistest.DoAt(n.server(t, i, key), "PTTL", key)
					require.NoError(t, err)
					if len(pttl) > 3 { // above 999 ms: the extension's TTL, not the first second
						extended++
					}
				}
				assert.GreaterOrEqual(t, extended, 2, "%s: a quorum carries the new TTL", key)
				require.NoError(t, l.Release(ctx))
			}
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
	t.Run("Reentrancy", func(t *testing.T) {
		n := top(t)
		c := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		keys := n.keys(t, "reentrant")
		for _, key := range keys {
			outer, err := c.TryLock(ctx, key, ttl, redlock.WithOwner("job-1"))
			require.NoError(t, err)
			inner, err := c.TryLock(ctx, key, ttl, redlock.WithOwner("job-1"))
			require.NoError(t, err)
			_, err = c.TryLock(ctx, key, ttl, redlock.WithOwner("job-2"))
			assert.ErrorIs(t, err, redlock.ErrHeld)
			require.NoError(t, inner.Release(ctx))
			assert.GreaterOrEqual(t, len(holders(t, n, key)), 2, "%s: the outer hold keeps the key", key)
			require.NoError(t, outer.Release(ctx))
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
	t.Run("WakeUpAndHandOver", func(t *testing.T) {
		n := top(t)
		// A backoff far longer than the test: only the release's
		// announcement, or a hand-over, can wake the waiter in time. The
		// other client has drivers of its own, as another process would.
		backoff := redlock.WithRetry(redlock.ConstantBackoff(30 * time.Second))
		c, other := lockClient(t, n.open(t), backoff), lockClient(t, n.open(t), backoff)
		ctx := ctxFor(t, 30*time.Second)
		keys := n.keys(t, "wake")
		for _, key := range keys {
			for _, tc := range []struct {
				name   string
				waiter *redlock.Client
			}{{"another client (announcement)", other}, {"the same client (hand-over)", c}} {
				// A release returns at quorum; the last case's deletes
				// may still be on their way.
				settles(t, func() []string { return leftovers(t, n, keys...) })
				l, err := c.TryLock(ctx, key, ttl)
				require.NoError(t, err)
				got := make(chan error, 1)
				var woke atomic.Int64
				go func() {
					w, err := tc.waiter.Lock(ctx, key, ttl)
					if err == nil {
						woke.Store(time.Now().UnixNano())
						err = w.Release(ctx)
					}
					got <- err
				}()
				time.Sleep(300 * time.Millisecond) // the waiter subscribes and waits
				released := time.Now()
				require.NoError(t, l.Release(ctx))
				select {
				case err := <-got:
					require.NoError(t, err, "%s: %s", key, tc.name)
					assert.Less(t, time.Duration(woke.Load()-released.UnixNano()), 2*time.Second, "%s: %s", key, tc.name)
				case <-time.After(5 * time.Second):
					t.Fatalf("%s: %s: the waiter was not woken", key, tc.name)
				}
			}
		}
		settles(t, func() []string { return leftovers(t, n, keys...) })
	})
	t.Run("QuarantineAfterRestart", func(t *testing.T) {
		n := top(t)
		const window = time.Second
		c := lockClient(t, n.open(t), redlock.WithRestartGuard(window))
		ctx := ctxFor(t, 60*time.Second)
		// A fresh master is in quarantine for one window (and INFO's
		// whole-second uptime up to two more): wait it out, and see every
		// master (every shard master) vote, which needs the driver to have
		// carried the guard's questions.
		warm := n.keys(t, "warm")
		for _, key := range warm {
			var err error
			for try := 0; try < 40; try++ {
				var l *redlock.Lock
				if l, err = c.TryLock(ctx, key, ttl); err == nil {
					require.NoError(t, l.Release(ctx))
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			require.NoError(t, err, "%s: masters up for the window vote", key)
		}
		// On two of three nodes, the server holding the first key's slot
		// restarts: the driver must let the guard see it on the connections
		// that replace the dead ones, before they vote.
		for i := range 2 {
			n.restart(t, i, warm[0])
		}
		var hit []string
		var err error
		for try := 0; try < 3; try++ {
			key := n.keys(t, fmt.Sprint("hit-", try))[0] // the restarted servers' slot
			hit = append(hit, key)
			if _, err = c.TryLock(ctx, key, ttl); errors.Is(err, redlock.ErrQuarantined) {
				break
			}
		}
		assert.ErrorIs(t, err, redlock.ErrQuarantined, "restarted masters do not vote")
		// The guard keeps health per server: a cluster's other shard masters
		// did not restart, and their keys still lock.
		spared := n.keys(t, "spared")[1:]
		for _, key := range spared {
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err, "%s: the other shards' masters still vote", key)
			require.NoError(t, l.Release(ctx))
		}
		all := append(append(warm, hit...), spared...)
		settles(t, func() []string { return leftovers(t, n, all...) }, "nothing left of refused attempts")
	})
	t.Run("CloseLeavesNothing", func(t *testing.T) {
		n := top(t)
		c := lockClient(t, n.open(t), redlock.WithRetry(redlock.ConstantBackoff(30*time.Second)))
		holder := lockClient(t, n.open(t))
		ctx := ctxFor(t, 10*time.Second)
		keys := n.keys(t, "closing")
		for _, key := range keys {
			l, err := c.TryLock(ctx, key, ttl)
			require.NoError(t, err)
			require.NoError(t, l.Release(context.Background()))
		}
		// A waiter in Lock on a key another client holds: Close ends it,
		// and its subscription.
		busy := n.keys(t, "busy")[0]
		held, err := holder.TryLock(ctx, busy, ttl)
		require.NoError(t, err)
		waited := make(chan error, 1)
		go func() {
			_, err := c.Lock(ctx, busy, ttl)
			waited <- err
		}()
		for try := 0; len(subscribers(t, n, busy)) == 0; try++ {
			require.Less(t, try, 100, "the waiter did not subscribe within 2s")
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, c.Close())
		select {
		case err := <-waited:
			assert.ErrorIs(t, err, redlock.ErrClosed)
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the waiter")
		}
		for _, key := range keys {
			assert.Empty(t, holders(t, n, key), "%s: Close waited for the deletes its release left running", key)
		}
		settles(t, func() []string { return subscribers(t, n, busy) }, "listening after Close")
		_, err = c.TryLock(ctx, keys[0], ttl)
		assert.ErrorIs(t, err, redlock.ErrClosed)
		require.NoError(t, held.Release(ctx))
		settles(t, func() []string { return leftovers(t, n, append(keys, busy)...) })
	})
}
