package redlock

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// TestIntegration_LockAll_OverlappingOrders_NeverOverlapNorDeadlock takes
// sets of keys that overlap, in different orders ({a, b} against {b, a},
// ...), from six goroutines on three clients, while a minority of the
// masters is paused (SIGSTOP) now and then and one is killed (kill -9) and
// restarted from its log. No key ever has two holders at once (checked in
// process), each key's fence grows from holder to holder, and every LockAll
// gets its set within a bound: nobody waits on anybody for ever.
func TestIntegration_LockAll_OverlappingOrders_NeverOverlapNorDeadlock(t *testing.T) {
	srv := mastersWith(t, 5, redistest.FsyncAlways)
	// The restart guard is on: a master restarted from its log keeps its
	// keys and is trusted; one restarted empty would not be.
	opts := []Option{WithRestartGuard(time.Minute), WithNodeTimeout(20 * time.Millisecond), WithLogger(quiet())}
	clients := make([]*Client, 3)
	for i := range clients {
		c, err := NewFromAddrs(urls(srv), suite(opts...)()...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		clients[i] = c
	}
	sets := [][]string{{"a", "b"}, {"b", "a"}, {"b", "c"}, {"c", "a"}, {"a", "b", "c"}, {"c", "b"}}
	var inside [3]atomic.Int32 // holders of a, b, c right now
	var fences [3]atomic.Int64 // the last fence of each
	index := map[string]int{"a": 0, "b": 1, "c": 2}

	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	var paused, restarted atomic.Int32
	go func() { // at most two masters down at any moment
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(3, 5))
		for round := 0; round < 1000; round++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(30+rng.IntN(30)) * time.Millisecond):
			}
			down := rng.Perm(5)[:1+rng.IntN(2)]
			if round == 5 {
				s := srv[down[0]]
				if s.Kill() == nil && s.Restart(redistest.FsyncAlways) == nil {
					restarted.Add(1)
				}
				continue
			}
			for _, i := range down {
				srv[i].Pause()
			}
			paused.Add(1)
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			for _, i := range down {
				srv[i].Resume()
			}
		}
	}()

	const rounds = 80
	var total atomic.Int32
	var longest atomic.Int64 // the longest wait of a LockAll
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			c := clients[w%len(clients)]
			for r := range rounds {
				keys := sets[(w+r)%len(sets)]
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				start := time.Now()
				l, err := c.LockAll(ctx, keys, 2*time.Second)
				cancel()
				if !assert.NoError(t, err, "worker %d round %d: %v not taken within the bound", w, r, keys) {
					return
				}
				for took := time.Since(start); ; {
					if old := longest.Load(); int64(took) <= old || longest.CompareAndSwap(old, int64(took)) {
						break
					}
				}
				for _, k := range keys {
					i := index[k]
					assert.Equal(t, int32(1), inside[i].Add(1), "key %s has two holders", k)
					assert.Greater(t, l.FenceOf(k), fences[i].Load(), "key %s: the fence went backwards or repeated", k)
					fences[i].Store(l.FenceOf(k))
				}
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				for _, k := range keys {
					inside[index[k]].Add(-1)
				}
				total.Add(1)
				l.Release(context.Background()) // may report a master just killed; exclusion is what is checked
			}
		})
	}
	wg.Wait()
	close(stop)
	<-chaosDone
	for _, s := range srv {
		s.Resume()
	}
	t.Logf("%d sets taken, %d pauses of a minority, %d restarts; longest wait %v", total.Load(), paused.Load(), restarted.Load(),
		time.Duration(longest.Load()))
	assert.Equal(t, int32(6*rounds), total.Load())
	assert.Positive(t, paused.Load())
	assert.Equal(t, int32(1), restarted.Load())
	for _, s := range srv {
		for _, k := range []string{"a", "b", "c"} {
			assert.Eventually(t, func() bool { return getString(t, s, k) == "" }, 3*time.Second, 5*time.Millisecond,
				"%s keeps %s", s.Addr(), k)
		}
	}
}

// On Redis 6.0 masters a set is taken all or none, refused while a lock
// holds one of its keys, extended, released, and fenced above that lock.
func TestIntegration_Redis60_LockAll(t *testing.T) {
	srv := masters60(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := clientAt(t, redistest.Addrs(srv), WithRestartGuard(0)), clientAt(t, redistest.Addrs(srv), WithRestartGuard(0))
	k, err := b.TryLock(ctx, "y", 5*time.Second)
	require.NoError(t, err)
	_, err = a.TryLockAll(ctx, []string{"x", "y"}, 5*time.Second)
	require.ErrorIs(t, err, ErrHeld)
	for _, s := range srv {
		assert.Equal(t, int64(0), do(t, s, "EXISTS", "x"), "%s took part of the set", s.Addr())
	}
	require.NoError(t, k.Release(ctx))
	l, err := a.LockAll(ctx, []string{"y", "x"}, 5*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.FenceOf("y"), k.Fence())
	require.NoError(t, l.Extend(ctx, 20*time.Second))
	assert.Greater(t, l.Validity(), 19*time.Second)
	require.NoError(t, l.Release(ctx))
	for _, s := range srv {
		assert.Eventually(t, func() bool { return do(t, s, "EXISTS", "x", "y") == int64(0) }, time.Second, 5*time.Millisecond)
	}
}

// On a Redis Cluster node a set in one hash slot is taken and released as
// on a plain master; one whose keys are in several slots is refused, with
// the fix in the error.
func TestIntegration_Cluster_LockAll(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.ClusterOptions{})
	c, err := NewFromAddrs([]string{"redis+cluster://" + strings.Join(cl.Addrs(), ",")},
		WithRestartGuard(time.Millisecond), WithLogger(quiet()), WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = c.TryLockAll(ctx, []string{"a", "b"}, 5*time.Second)
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "hash tag")
	keys := []string{"{orders}:a", "{orders}:b", "{orders}:c"}
	var l *Lock
	for try := 0; try < 40; try++ { // fresh masters are in quarantine for up to two seconds
		if l, err = c.TryLockAll(ctx, keys, 5*time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	st, err := c.Inspect(ctx, "{orders}:b")
	require.NoError(t, err)
	assert.Equal(t, l.Token(), st.Holder)
	_, err = c.TryLock(ctx, "{orders}:c", 5*time.Second)
	assert.ErrorIs(t, err, ErrHeld)
	require.NoError(t, l.Extend(ctx, 5*time.Second))
	require.NoError(t, l.Release(ctx))
	m, err := c.TryLock(ctx, "{orders}:c", 5*time.Second)
	require.NoError(t, err)
	assert.Greater(t, m.Fence(), l.Fence())
	require.NoError(t, m.Release(ctx))
}

// A set takes a free key only where no Lock waits in line for it, as
// TryLock does, and it never queues itself.
func TestIntegration_LockAll_DoesNotJumpTheLine(t *testing.T) {
	srv := masters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, srv)
	l, err := c.TryLock(ctx, "line", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "line", srv...)
	placeOn(t, c, "line", "early", 1, 10*time.Second)
	require.NoError(t, l.Release(ctx))

	_, err = c.TryLockAll(ctx, []string{"other", "line"}, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "the keys are free, but a waiter queues for one")
	for _, s := range srv {
		assert.Equal(t, 1, queued(t, s, "line"), "a set does not queue")
		assert.Equal(t, "", getString(t, s, "other"), "%s took part of the set", s.Addr())
	}

	for _, n := range c.nodes {
		require.NoError(t, n.leave(ctx, "line", "early", time.Second))
	}
	s, err := c.TryLockAll(ctx, []string{"other", "line"}, time.Second)
	require.NoError(t, err, "nobody queues any more")
	require.NoError(t, s.Release(ctx))
}

// A set's release is announced on each of its keys' channels: a Lock of
// another client waiting for one of them is woken by it, long before its
// backoff.
func TestIntegration_LockAll_ReleaseWakesAWaiterOfAnyKey(t *testing.T) {
	srv := masters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a := client(t, srv)
	b := client(t, srv, WithRetry(ConstantBackoff(time.Hour)), WithQueueLease(time.Hour))
	l, err := a.TryLockAll(ctx, []string{"x", "y"}, 30*time.Second)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		w, err := b.Lock(ctx, "y", 10*time.Second)
		if err == nil {
			err = w.Release(ctx)
		}
		got <- err
	}()
	waitQueued(t, "y", 1, srv)
	released := time.Now()
	require.NoError(t, l.Release(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
		assert.Less(t, time.Since(released), 2*time.Second)
	case <-ctx.Done():
		t.Fatal("the waiter was not woken by the set's release")
	}
}
