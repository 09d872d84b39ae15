package redlock

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// On real masters (Redis 7 and 6.0): K permits, the next refused, a
// released permit free again, and every key the permits wrote expires.
func TestIntegration_Semaphore(t *testing.T) {
	for _, tc := range []struct {
		name string
		srv  func(t *testing.T) []*redistest.Server
	}{
		{"redis", func(t *testing.T) []*redistest.Server { return masters(t, 5) }},
		{"redis-6.0", func(t *testing.T) []*redistest.Server { return masters60(t, 5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "redis-6.0" && aclSuite() {
				t.Skip("Redis 6.0 has no ACL rules for channels, which the suite's user needs")
			}
			srv := tc.srv(t)
			c := client(t, srv)
			s, err := c.Semaphore("sem", 2)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			a, err := s.TryAcquire(ctx, 10*time.Second)
			require.NoError(t, err)
			b, err := s.Acquire(ctx, 10*time.Second)
			require.NoError(t, err)
			assert.Greater(t, b.Fence(), a.Fence())
			_, err = s.TryAcquire(ctx, 10*time.Second)
			require.ErrorIs(t, err, ErrNotObtained)
			require.NoError(t, a.Release(ctx))
			d, err := s.TryAcquire(ctx, 10*time.Second)
			require.NoError(t, err)
			assert.Greater(t, d.Fence(), b.Fence())
			_, err = c.TryLock(ctx, "sem", time.Second)
			require.ErrorIs(t, err, ErrNotObtained, "a lock on a semaphore's key")
			assert.NotContains(t, err.Error(), "WRONGTYPE")
			for _, s := range srv {
				for _, key := range []string{stored("sem"), suiteNames().Of("sem").Permits()} {
					pttl, ok := do(t, s, "PTTL", key).(int64)
					require.True(t, ok)
					assert.Greater(t, pttl, int64(0), "%s on %s expires", key, s.Addr())
				}
			}
			require.NoError(t, b.Release(ctx))
			require.NoError(t, d.Release(ctx))
		})
	}
}

// Waiters take free permits in the order they began to wait: with two
// permits free, the first two waiters, and nobody behind them.
func TestIntegration_Semaphore_WaitersInOrder(t *testing.T) {
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder := client(t, srv)
	s, err := holder.Semaphore("line", 2)
	require.NoError(t, err)
	a, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := s.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)

	const waiters = 3
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	got := make([]*Lock, waiters)
	for w := range waiters {
		c := client(t, srv, WithQueueLease(time.Second))
		ws, err := c.Semaphore("line", 2)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := ws.Acquire(ctx, 10*time.Second)
			if !assert.NoError(t, err, "waiter %d", w) {
				return
			}
			mu.Lock()
			order, got[w] = append(order, w), l
			mu.Unlock()
		}()
		time.Sleep(150 * time.Millisecond) // each queues before the next
	}
	require.NoError(t, a.Release(ctx))
	require.NoError(t, b.Release(ctx))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 2 }, 10*time.Second, 5*time.Millisecond)
	time.Sleep(200 * time.Millisecond) // the third must not get in meanwhile
	mu.Lock()
	assert.ElementsMatch(t, []int{0, 1}, order, "the first two waiters get the free permits")
	mu.Unlock()
	require.NoError(t, got[0].Release(ctx))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2}, []int{min(order[0], order[1]), max(order[0], order[1]), order[2]},
		"the first two, in either order (both may take one of two free permits), then the third")
	for _, l := range got[1:] {
		require.NoError(t, l.Release(ctx))
	}
}

// TestIntegration_Semaphore_NeverMoreThanK runs K+1 contenders, each its
// own client, for a few hundred acquisitions while one master at a time is
// paused (SIGSTOP) or killed with SIGKILL and restarted (every write
// fsynced), on 5 masters with K = 2, where a permit needs 4: at no moment
// do more than K contenders hold a valid permit.
func TestIntegration_Semaphore_NeverMoreThanK(t *testing.T) {
	const permits, acquisitions = 2, 300
	srv := mastersWith(t, 5, redistest.FsyncAlways)
	opts := []Option{WithRestartGuard(time.Minute), WithNodeTimeout(20 * time.Millisecond), WithLogger(quiet()),
		WithRetry(ExponentialBackoff(time.Millisecond, 20*time.Millisecond))}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	var faults atomic.Int32
	go func() { // one master down at a time: a permit's quorum of 4 still stands
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(3, 5))
		for round := 0; round < 10_000; round++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+rng.IntN(30)) * time.Millisecond):
			}
			s := srv[rng.IntN(5)]
			if round%5 == 0 {
				if s.Kill() == nil && s.Restart(redistest.FsyncAlways) == nil {
					faults.Add(1)
				}
				continue
			}
			if s.Pause() == nil {
				faults.Add(1)
				time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
				s.Resume()
			}
		}
	}()

	var taken, inside, most, late atomic.Int32
	var wg sync.WaitGroup
	for range permits + 1 {
		c, err := NewFromAddrs(urls(srv), suite(opts...)()...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		s, err := c.Semaphore("bounded", permits)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for taken.Load() < acquisitions && ctx.Err() == nil {
				l, err := s.Acquire(ctx, 2*time.Second)
				if err != nil {
					continue // a master killed under an attempt; the next one waits
				}
				taken.Add(1)
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
				inside.Add(-1)
				if !time.Now().Before(l.Until()) {
					late.Add(1) // held past its validity: the count above would not be a proof
				}
				l.Release(context.Background()) // may meet a master just killed
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-chaosDone
	for _, s := range srv {
		s.Resume()
	}
	t.Logf("%d acquisitions by %d contenders, %d faults injected, at most %d held at once", taken.Load(), permits+1, faults.Load(), most.Load())
	require.NoError(t, ctx.Err(), "the contenders did not finish in time")
	assert.GreaterOrEqual(t, taken.Load(), int32(acquisitions))
	assert.LessOrEqual(t, most.Load(), int32(permits), "more holders than permits")
	assert.Zero(t, late.Load(), "a permit held past its validity")
	assert.Positive(t, faults.Load())
}

// The scenario majorities do not bound, on real masters: with 2 permits on
// 5 masters, A reaches masters {0,1,2}, B {2,3,4} and C {0,1,3,4}, the
// others being full of foreign permits in turn, and no master ever admits
// more than 2. Each reached a majority; with the permit quorum (4 of 5), at
// most 2 of them hold a permit.
func TestIntegration_Semaphore_MajoritiesDoNotBoundTheHolders(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	s, err := c.Semaphore("tight", 2)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fill := func(on []int, cmd string) {
		for _, i := range on {
			if cmd == "ZADD" {
				ends := time.Now().Add(time.Minute).UnixMilli()
				do(t, srv[i], "ZADD", stored("tight"), ends, "foreign-1", ends, "foreign-2")
				do(t, srv[i], "SET", suiteNames().Of("tight").Permits(), 2, "PX", 60_000)
			} else {
				do(t, srv[i], "ZREM", stored("tight"), "foreign-1", "foreign-2")
			}
		}
	}
	held := 0
	for _, full := range [][]int{{3, 4}, {0, 1}, {2}} {
		fill(full, "ZADD")
		l, err := s.TryAcquire(ctx, 30*time.Second)
		fill(full, "ZREM")
		if err == nil {
			held++
			defer l.Release(ctx)
			continue
		}
		require.ErrorIs(t, err, ErrNotObtained)
	}
	assert.LessOrEqual(t, held, 2, "more holders than permits")
}

// A Redis Cluster as one master: every key of a permit is in the
// semaphore key's slot, wherever that is, and a release wakes a waiter
// through the key's shard (SPUBLISH).
func TestIntegration_Semaphore_ClusterNode(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{}) // 3 masters, no replicas
	c, err := NewFromAddrs([]string{"redis+cluster://" + strings.Join(cl.Addrs(), ",")},
		WithNamespace(suiteNS), WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(time.Second),
		WithRetry(ConstantBackoff(30*time.Second)), WithQueueLease(time.Hour))
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, key := range clusterKeys(t, "sem") {
		s, err := c.Semaphore(key, 2)
		require.NoError(t, err)
		a, err := s.TryAcquire(ctx, 10*time.Second)
		require.NoError(t, err, key)
		b, err := s.TryAcquire(ctx, 10*time.Second)
		require.NoError(t, err, key)
		require.NoError(t, a.Extend(ctx, 10*time.Second), key)
		woken := make(chan error, 1)
		go func() {
			w, err := s.Acquire(ctx, 10*time.Second)
			if err == nil {
				err = w.Release(ctx)
			}
			woken <- err
		}()
		time.Sleep(300 * time.Millisecond) // the waiter queues and subscribes on the key's shard
		require.NoError(t, a.Release(ctx), key)
		select {
		case err := <-woken:
			require.NoError(t, err, key)
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the waiter was not woken; its backoff is 30s", key)
		}
		require.NoError(t, b.Release(ctx), key)
	}
}

// The permit script's line, on one real master (Redis 7 and 6.0): a free
// permit goes to a waiter whose rank is below the free permits, a request
// that does not queue takes one only when fewer wait than are free, and a
// refused waiter keeps its place.
func TestIntegration_PermitQueue_RankBelowFree(t *testing.T) {
	ms := map[string]*master{"redis": client(t, masters(t, 1)).nodes[0].(*master)}
	if !aclSuite() { // Redis 6.0 has no ACL rules for channels, which the suite's user needs
		ms["redis-6.0"] = client(t, masters60(t, 1)).nodes[0].(*master)
	}
	for name, m := range ms {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			permit := func(token, waiter string, ticket int64) request {
				r := request{key: "line", token: token, ttl: 10 * time.Second, permits: 2}
				if waiter != "" {
					r.waiter, r.ticket, r.lease = waiter, ticket, 10*time.Second
				}
				return r
			}
			step := func(r request, ok bool, rank int64) {
				t.Helper()
				g, err := awaitAcquire(ctx, m, r)
				require.NoError(t, err)
				require.Equal(t, ok, g.OK, "%s (%s): granted", r.token, r.waiter)
				if !ok && r.waiter != "" {
					assert.Equal(t, rank, g.Rank, "%s: rank", r.waiter)
				}
			}
			step(permit("a", "", 0), true, 0)
			step(permit("b", "", 0), true, 0)
			for i, w := range []string{"w0", "w1", "w2"} {
				step(permit(w+"-1", w, int64(i+1)), false, int64(i))
			}
			_, err := awaitRelease(ctx, m, permit("a", "", 0))
			require.NoError(t, err)
			step(permit("t", "", 0), false, 0)      // three wait for one free permit
			step(permit("w2-2", "w2", 3), false, 2) // behind two
			step(permit("w1-2", "w1", 2), false, 1) // behind one
			step(permit("w0-2", "w0", 1), true, 0)  // first in line
			_, err = awaitRelease(ctx, m, permit("b", "", 0))
			require.NoError(t, err)
			_, err = awaitRelease(ctx, m, permit("w0-2", "", 0))
			require.NoError(t, err)
			step(permit("w2-3", "w2", 3), true, 0) // rank 1, below the two free
			step(permit("t", "", 0), false, 0)     // one waits for one free permit
			step(permit("w1-3", "w1", 2), true, 0)
			step(permit("t", "", 0), false, 0) // none free
		})
	}
}

// Goroutines of one client waiting for a semaphore of K permits compete K
// at a time: K of them hold places in the masters' queues, ready for K
// free permits, and no more, so that the others do not hold up the line
// with places whose goroutines wait behind them in the client. Each gets a
// permit in turn, and nothing of the line is left on the masters.
func TestIntegration_Semaphore_OneClientsWaitersCompeteKAtATime(t *testing.T) {
	const permits, goroutines = 2, 6
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	holder, c := client(t, srv), client(t, srv)
	hs, err := holder.Semaphore("wide", permits)
	require.NoError(t, err)
	var held []*Lock
	for range permits {
		l, err := hs.TryAcquire(ctx, 10*time.Second)
		require.NoError(t, err)
		held = append(held, l)
	}
	s, err := c.Semaphore("wide", permits)
	require.NoError(t, err)
	var holders atomic.Int32
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := s.Acquire(ctx, 10*time.Second)
			if !assert.NoError(t, err) {
				return
			}
			assert.LessOrEqual(t, holders.Add(1), int32(permits), "more holders than permits")
			time.Sleep(5 * time.Millisecond)
			holders.Add(-1)
			assert.NoError(t, l.Release(ctx))
		}()
	}
	waitQueued(t, "wide", permits, srv)
	time.Sleep(100 * time.Millisecond) // time enough for a third to queue, were it allowed to
	for _, m := range srv {
		assert.Equal(t, permits, queued(t, m, "wide"), "waiters of one client queued on %s", m.Addr())
	}
	for _, l := range held {
		require.NoError(t, l.Release(ctx))
	}
	wg.Wait()
	for _, m := range srv {
		assert.Eventually(t, func() bool { return !queueLeft(t, m, "wide") }, 5*time.Second, 5*time.Millisecond,
			"the line left on %s", m.Addr())
	}
}

// A permit's release announces the head of the queue and the waiter the
// freed permit lets in: with F permits free, the one at rank F-1, which
// the head alone would leave to its renewal while the head has not taken
// its own permit yet. On Redis 7 and 6.0.
func TestIntegration_PermitRelease_AnnouncesTheWaiterItLetsIn(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) {
			srv := v.start(t, 1)
			m := client(t, srv).nodes[0]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			psc := subscribeTo(t, srv[0], "line")
			announced := func(want ...string) {
				t.Helper()
				for _, w := range want {
					msg, ok := psc.Receive().(redis.Message)
					require.True(t, ok)
					assert.Equal(t, w, string(msg.Data))
				}
			}
			permit := func(token, waiter string, ticket int64) request {
				r := request{key: "line", token: token, ttl: 10 * time.Second, permits: 2}
				if waiter != "" {
					r.waiter, r.ticket, r.lease = waiter, ticket, 10*time.Second
				}
				return r
			}
			for _, token := range []string{"a", "b"} {
				g, err := awaitAcquire(ctx, m, permit(token, "", 0))
				require.NoError(t, err)
				require.True(t, g.OK)
			}
			for i, w := range []string{"w0", "w1", "w2"} {
				g, err := awaitAcquire(ctx, m, permit(w+"-1", w, int64(i+1)))
				require.NoError(t, err)
				require.False(t, g.OK)
			}
			_, err := awaitRelease(ctx, m, permit("a", "", 0))
			require.NoError(t, err)
			announced("w0") // one permit free: the head alone may take it
			_, err = awaitRelease(ctx, m, permit("b", "", 0))
			require.NoError(t, err)
			announced("w0", "w1") // two free: the head, and the one behind it
			g, err := awaitAcquire(ctx, m, permit("w0-2", "w0", 1))
			require.NoError(t, err)
			require.True(t, g.OK)
			_, err = awaitRelease(ctx, m, permit("w0-2", "", 0))
			require.NoError(t, err)
			announced("w1", "w2") // nothing came in between: messages arrive in order
		})
	}
}

// A waiter that a release lets in to a permit takes it at once, though the
// head of the line ahead of it does not take its own: the release names it.
// Its renewal, every third of a minute's queue lease, would come too late.
func TestIntegration_Semaphore_ReleaseWakesTheWaiterItLetsIn(t *testing.T) {
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder := client(t, srv)
	hs, err := holder.Semaphore("let-in", 2)
	require.NoError(t, err)
	a, err := hs.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	b, err := hs.TryAcquire(ctx, 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "let-in", srv...)
	// A waiter with no Lock call behind it heads the line on every master.
	for i, n := range holder.nodes {
		g, err := awaitAcquire(ctx, n, request{key: "let-in", token: "dead-1", ttl: time.Second, permits: 2, quorum: hs.Quorum(),
			waiter: "dead", ticket: 1, lease: time.Minute})
		require.NoError(t, err, "master %d", i)
		require.False(t, g.OK, "master %d", i)
	}
	s, err := client(t, srv, WithQueueLease(time.Minute)).Semaphore("let-in", 2)
	require.NoError(t, err)
	got := make(chan *Lock, 1)
	go func() {
		l, err := s.Acquire(ctx, 10*time.Second)
		assert.NoError(t, err)
		got <- l
	}()
	waitQueued(t, "let-in", 2, srv)
	require.NoError(t, a.Release(ctx))
	time.Sleep(50 * time.Millisecond) // one free permit is the head's: the waiter stays
	select {
	case <-got:
		t.Fatal("the waiter took the head's permit")
	default:
	}
	released := time.Now()
	require.NoError(t, b.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	waited := time.Since(released)
	t.Logf("the waiter took a permit %v after the release that let it in", waited)
	assert.Less(t, waited, 2*time.Second, "woken by the release, not by its renewal")
	require.NoError(t, l.Release(ctx))
}
