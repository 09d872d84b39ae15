package redlock

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
)

// The waiting queue on the masters (see place and acquire.lua's The queue),
// on Redis 7 and on Redis 6.0, the oldest the library runs on.
var queueVersions = []struct {
	name  string
	start func(t *testing.T, n int) []*redistest.Server
}{
	{"redis7", masters},
	{"redis6.0", func(t *testing.T, n int) []*redistest.Server {
		if aclSuite() {
			t.Skip("the ACL suite runs on Redis 7")
		}
		return masters60(t, n)
	}},
}

// queued returns how many waiters queue for key on s.
func queued(t *testing.T, s *redistest.Server, key string) int {
	t.Helper()
	n, err := redis.Int(do(t, s, "ZCARD", suiteNames().Of(key).Queue()), nil)
	require.NoError(t, err)
	return n
}

// waitQueued waits until n waiters queue for key on every server.
func waitQueued(t *testing.T, key string, n int, srv []*redistest.Server) {
	t.Helper()
	for _, s := range srv {
		require.Eventually(t, func() bool { return queued(t, s, key) == n }, 5*time.Second, time.Millisecond,
			"%s never had %d waiters for %q", s.Addr(), n, key)
	}
}

// queueLeft reports whether anything of key's queue is left on s.
func queueLeft(t *testing.T, s *redistest.Server, key string) bool {
	t.Helper()
	k := suiteNames().Of(key)
	n, err := redis.Int(do(t, s, "EXISTS", k.Queue(), k.Leases()), nil)
	require.NoError(t, err)
	return n > 0
}

// subscribeTo opens a connection of the test's own to s, as the suite's
// user, subscribed to key's release announcements.
func subscribeTo(t *testing.T, s *redistest.Server, key string) redis.PubSubConn {
	t.Helper()
	sub, err := redis.Dial("tcp", s.Addr(), redis.DialReadTimeout(5*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	if aclSuite() {
		_, err := sub.Do("AUTH", "app", "secret")
		require.NoError(t, err)
	}
	psc := redis.PubSubConn{Conn: sub}
	require.NoError(t, psc.Subscribe(suiteNames().Of(key).Channel()))
	_, ok := psc.Receive().(redis.Subscription)
	require.True(t, ok)
	return psc
}

// placeOn queues a waiter for key on every master of c, as a Lock call's
// attempt does, without a Lock call behind it: a waiter that then died.
func placeOn(t *testing.T, c *Client, key, waiter string, ticket int64, lease time.Duration) {
	t.Helper()
	for i, n := range c.nodes {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		g, err := awaitAcquire(ctx, n, request{key: key, token: "dead-" + waiter, ttl: time.Second, waiter: waiter, ticket: ticket, lease: lease})
		cancel()
		require.NoError(t, err, "master %d", i)
		require.False(t, g.OK, "master %d granted the key: the test needs it held", i)
	}
}

// Waiters of separate clients take the key in the order their Lock calls
// began. With every waiter woken by each release and racing for the key,
// five waiters come out in this order once in 120 runs.
func TestIntegration_Queue_ClientsTakeTheKeyInTheOrderTheyCame(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) {
			srv := v.start(t, 5)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			holder := client(t, srv)
			l, err := holder.TryLock(ctx, "fifo", 10*time.Second)
			require.NoError(t, err)
			const n = 5
			var mu sync.Mutex
			var order []int
			var wg sync.WaitGroup
			for i := range n {
				c := client(t, srv)
				wg.Add(1)
				go func() {
					defer wg.Done()
					l, err := c.Lock(ctx, "fifo", 5*time.Second)
					if !assert.NoError(t, err, "waiter %d", i) {
						return
					}
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					assert.NoError(t, l.Release(ctx))
				}()
				waitQueued(t, "fifo", i+1, srv) // the next call begins once this one queues
			}
			require.NoError(t, l.Release(ctx))
			wg.Wait()
			assert.Equal(t, []int{0, 1, 2, 3, 4}, order)
			for _, s := range srv {
				assert.Eventually(t, func() bool { return !queueLeft(t, s, "fifo") }, 2*time.Second, 5*time.Millisecond,
					"%s keeps a queue for the key", s.Addr())
			}
		})
	}
}

// attempts counts the attempts a client makes.
type attempts struct{ n atomic.Int64 }

func (a *attempts) Start(ctx context.Context, _ Op, _ string) context.Context { return ctx }

func (a *attempts) Observe(_ context.Context, ev Event) {
	if ev.Kind == KindAttempt {
		a.n.Add(1)
	}
}

// A release wakes the head of the line alone: separate clients contending
// for one key make about two attempts per lock, the one that queues a
// Lock call and the one its turn brings, where waking every waiter makes
// each of them try (about 6 attempts per lock for 6 clients).
func TestIntegration_Queue_ReleaseWakesOnlyTheHead(t *testing.T) {
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const clients, rounds = 6, 15
	var tries attempts
	var wg sync.WaitGroup
	var holders atomic.Int32
	for range clients {
		c := client(t, srv, WithObserver(&tries))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				l, err := c.Lock(ctx, "herd", 5*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), holders.Add(1), "two holders at once")
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				assert.NoError(t, l.Release(ctx))
			}
		}()
	}
	wg.Wait()
	per := float64(tries.n.Load()) / (clients * rounds)
	t.Logf("%d clients, %d locks each: %.2f attempts per lock", clients, rounds, per)
	assert.Less(t, per, 3.2, "attempts per lock")
}

// A waiter that died holds up the line at most about 4/3 of its lease:
// its place ends, and the next waiter, renewing its own every third of the
// lease, finds itself at the head.
func TestIntegration_Queue_DeadWaiterHoldsUpTheLineAtMostItsLease(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) {
			srv := v.start(t, 5)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const lease = 300 * time.Millisecond
			holder := client(t, srv, WithQueueLease(lease))
			l, err := holder.TryLock(ctx, "dead", 10*time.Second)
			require.NoError(t, err)
			waitHeld(t, "dead", srv...)
			// The dead waiter came first: its ticket is the smallest.
			placeOn(t, holder, "dead", "ghost", 1, lease)
			placed := time.Now()
			next := client(t, srv, WithQueueLease(lease))
			type taken struct {
				l  *Lock
				at time.Time
			}
			got := make(chan taken, 1)
			go func() {
				l, err := next.Lock(ctx, "dead", time.Second)
				if assert.NoError(t, err) {
					got <- taken{l, time.Now()}
				}
			}()
			waitQueued(t, "dead", 2, srv)
			require.NoError(t, l.Release(ctx))
			select {
			case tk := <-got:
				waited := tk.at.Sub(placed)
				t.Logf("the next waiter had the key %v after the dead one's last renewal", waited)
				assert.Less(t, waited, lease*4/3+250*time.Millisecond, "held up longer than the lease allows")
				// Released here, before the test's ctx is cancelled.
				assert.NoError(t, tk.l.Release(ctx))
			case <-time.After(10 * time.Second):
				t.Fatal("the dead waiter held up the line for good")
			}
		})
	}
}

// A Lock whose ctx ends leaves the line at once, not at the end of its
// lease, and the waiter behind it moves up.
func TestIntegration_Queue_CancelledWaiterLeavesAtOnce(t *testing.T) {
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	holder := client(t, srv, WithQueueLease(10*time.Second))
	l, err := holder.TryLock(ctx, "cancel", 10*time.Second)
	require.NoError(t, err)
	first := client(t, srv, WithQueueLease(10*time.Second))
	firstCtx, stop := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := first.Lock(firstCtx, "cancel", time.Second)
		gaveUp <- err
	}()
	waitQueued(t, "cancel", 1, srv)
	second := client(t, srv, WithQueueLease(10*time.Second))
	got := make(chan *Lock, 1)
	go func() {
		l, err := second.Lock(ctx, "cancel", time.Second)
		assert.NoError(t, err)
		got <- l
	}()
	waitQueued(t, "cancel", 2, srv)
	stop()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	waitQueued(t, "cancel", 1, srv) // well within the 10 s lease
	released := time.Now()
	require.NoError(t, l.Release(ctx))
	select {
	case l2 := <-got:
		t.Logf("the second waiter had the key %v after the release", time.Since(released))
		assert.NoError(t, l2.Release(ctx))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter behind a cancelled one did not get the key")
	}
}

// TryLock does not take a free key that others queue for, and takes it
// once they are gone.
func TestIntegration_Queue_TryLockDoesNotJumpTheLine(t *testing.T) {
	srv := masters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, srv)
	l, err := c.TryLock(ctx, "line", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "line", srv...)
	placeOn(t, c, "line", "early", 1, 10*time.Second)
	require.NoError(t, l.Release(ctx))

	_, err = c.TryLock(ctx, "line", time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "the key is free, but a waiter queues for it")
	for _, s := range srv {
		assert.Equal(t, 1, queued(t, s, "line"), "TryLock does not queue")
	}

	for _, n := range c.nodes {
		require.NoError(t, n.leave(ctx, "line", "early", time.Second))
	}
	l, err = c.TryLock(ctx, "line", time.Second)
	require.NoError(t, err, "nobody queues any more")
	require.NoError(t, l.Release(ctx))
	for _, s := range srv {
		assert.False(t, queueLeft(t, s, "line"), "%s keeps a queue for the key", s.Addr())
	}
}

// A queue nobody renews expires whole: its keys live no longer than the
// longest lease in them.
func TestIntegration_Queue_ExpiresWithItsLeases(t *testing.T) {
	srv := masters(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, srv)
	l, err := c.TryLock(ctx, "gone", 10*time.Second)
	require.NoError(t, err)
	waitHeld(t, "gone", srv...)
	placeOn(t, c, "gone", "w1", 1, 200*time.Millisecond)
	placeOn(t, c, "gone", "w2", 2, 400*time.Millisecond)
	k := suiteNames().Of("gone")
	for _, s := range srv {
		for _, key := range []string{k.Queue(), k.Leases()} {
			ttl, err := redis.Int64(do(t, s, "PTTL", key), nil)
			require.NoError(t, err)
			assert.Greater(t, ttl, int64(200), "%s lives at least the longest lease", key)
			assert.LessOrEqual(t, ttl, int64(400), "%s lives no longer than the longest lease", key)
		}
	}
	for _, s := range srv {
		assert.Eventually(t, func() bool { return !queueLeft(t, s, "gone") }, 2*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, l.Release(ctx))
}

// Goroutines of one client that queue on the masters at once, each with
// its first attempt, line up inside the client in whatever order they
// join: only the first in line keeps its place on the masters, so a place
// ahead of it there, whose goroutine waits behind it here, cannot hold up
// the line until its lease ends.
func TestIntegration_Queue_OneClientsGoroutinesDoNotHoldEachOtherUp(t *testing.T) {
	srv := masters(t, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	holder, c := client(t, srv), client(t, srv)
	const bursts, goroutines = 20, 8
	var longest time.Duration
	for range bursts {
		l, err := holder.Lock(ctx, "shared", 5*time.Second)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l, err := c.Lock(ctx, "shared", 5*time.Second)
				if assert.NoError(t, err) {
					assert.NoError(t, l.Release(ctx))
				}
			}()
		}
		require.Eventually(t, func() bool { return queued(t, srv[0], "shared") > 0 }, 5*time.Second, time.Millisecond,
			"the burst meets the held key")
		time.Sleep(2 * time.Millisecond)
		released := time.Now()
		require.NoError(t, l.Release(ctx))
		wg.Wait()
		longest = max(longest, time.Since(released))
	}
	t.Logf("longest burst after a release: %v", longest)
	assert.Less(t, longest, DefaultQueueLease/2, "a waiter was held up by a place of its own client")
}

// A roll-back of the head's attempt puts the head back in line where the
// attempt took the key: the grant took it out of the queue, and without
// it the waiter behind would head the queues of the masters the failed
// attempt reached, and the two could split the masters again and again.
// A waiter that left is not put back.
func TestIntegration_Queue_RollBackKeepsTheHeadsPlace(t *testing.T) {
	for _, v := range queueVersions {
		t.Run(v.name, func(t *testing.T) {
			srv := v.start(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := client(t, srv)
			m := c.nodes[0]
			holder := request{key: "split", token: "holder", ttl: 10 * time.Second}
			g, err := awaitAcquire(ctx, m, holder)
			require.NoError(t, err)
			require.True(t, g.OK)
			head := request{key: "split", token: "head-try", ttl: time.Second, waiter: "head", ticket: 1, lease: 10 * time.Second}
			behind := request{key: "split", token: "behind-try", ttl: time.Second, waiter: "behind", ticket: 2, lease: 10 * time.Second}
			for _, r := range []request{head, behind} {
				g, err := awaitAcquire(ctx, m, r)
				require.NoError(t, err)
				require.False(t, g.OK)
				assert.Equal(t, "head", g.Head)
			}
			_, err = awaitRelease(ctx, m, holder)
			require.NoError(t, err)

			g, err = awaitAcquire(ctx, m, head)
			require.NoError(t, err)
			require.True(t, g.OK, "the head takes the free key")
			assert.Equal(t, 1, queued(t, srv[0], "split"), "the grant took the head out of the queue")
			rb := head
			rb.rollback = true
			_, err = awaitRelease(ctx, m, rb)
			require.NoError(t, err)
			g, err = awaitAcquire(ctx, m, behind)
			require.NoError(t, err)
			assert.False(t, g.OK, "the waiter behind takes the key before the head")
			assert.Equal(t, "head", g.Head, "the roll-back put the head back in line")

			again := head
			again.token = "head-try-again" // the first try's tombstone turns its token away
			g, err = awaitAcquire(ctx, m, again)
			require.NoError(t, err)
			require.True(t, g.OK)
			require.NoError(t, m.leave(ctx, "split", "head", 10*time.Second))
			rb = again
			rb.rollback = true
			_, err = awaitRelease(ctx, m, rb)
			require.NoError(t, err)
			g, err = awaitAcquire(ctx, m, behind)
			require.NoError(t, err)
			assert.True(t, g.OK, "a waiter that left is not put back in line")
		})
	}
}

// The minority rule counts the masters that answered and whose votes
// count: a master the restart guard keeps out (or vetoes) answers, granting
// or refusing, but cannot help the waiter win, and a waiter that counted it
// would keep renewing its places from a minority of voters.
func TestQueue_MinorityRule_CountsVotersOnly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		modes   []behaviour
		distrus []int
		want    int
	}{
		{"all refuse", []behaviour{foreign, foreign, foreign}, nil, 3},
		{"one fails", []behaviour{healthy, foreign, broken}, nil, 2},
		{"a distrusted grant", []behaviour{healthy, foreign, broken}, []int{0}, 1},
		{"a distrusted refusal", []behaviour{foreign, foreign, broken}, []int{0}, 1},
		{"only distrusted masters answer", []behaviour{foreign, broken, broken}, []int{0}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, fakes, clk := newFakeClient(t, tc.modes, WithRestartGuard(0))
			for _, i := range tc.distrus {
				fakes[i].h = health{veto: "distrusted in this test"}
			}
			done := make(chan struct{})
			var res outcome
			go func() { res = c.attempt(context.Background(), "k", time.Second, lockOptions{}, nil, nil); close(done) }()
			drive(t, clk, fakes, time.Millisecond, done)
			require.Nil(t, res.lock)
			assert.Equal(t, tc.want, res.reached)
		})
	}
}

// A roll-back that frees the key tells the head of the line: the attempt
// was never the lock, but waiters in line wait for the key it took, and
// when every contender's attempt is rolled back after a split vote, no
// release would ever name them. A roll-back of the head's own attempt
// does not announce it: the head's Lock call knows its attempt failed.
// Woken, the head would try at once, take the key again where it is free,
// fail where others hold it, and roll back again, as fast as the masters
// answer.
func TestIntegration_Queue_RollBackAnnouncesTheHead(t *testing.T) {
	srv := masters(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := client(t, srv)
	m := c.nodes[0]
	psc := subscribeTo(t, srv[0], "split")

	try := request{key: "split", token: "try", ttl: time.Second}
	g, err := awaitAcquire(ctx, m, try)
	require.NoError(t, err)
	require.True(t, g.OK)
	g, err = awaitAcquire(ctx, m, request{key: "split", token: "w-try", ttl: time.Second, waiter: "w", ticket: 1, lease: 10 * time.Second})
	require.NoError(t, err)
	require.False(t, g.OK)
	try.rollback = true
	_, err = awaitRelease(ctx, m, try)
	require.NoError(t, err)
	msg, ok := psc.Receive().(redis.Message)
	require.True(t, ok, "the roll-back announced the key free")
	assert.Equal(t, "w", string(msg.Data), "to the head of the line")

	w := request{key: "split", token: "w-try-2", ttl: time.Second, waiter: "w", ticket: 1, lease: 10 * time.Second}
	g, err = awaitAcquire(ctx, m, w)
	require.NoError(t, err)
	require.True(t, g.OK, "the head takes the free key")
	w.rollback = true
	_, err = awaitRelease(ctx, m, w)
	require.NoError(t, err)
	assert.Equal(t, 1, queued(t, srv[0], "split"), "the roll-back put the head back in line")
	switch m := psc.ReceiveWithTimeout(300 * time.Millisecond).(type) {
	case redis.Message:
		t.Fatalf("the roll-back of the head's own attempt announced %q", m.Data)
	case error:
		var ne net.Error
		require.True(t, errors.As(m, &ne) && ne.Timeout(), "%v", m)
	}
}

// A waiter whose attempts take the key on masters where it is free, while
// others hold it on the rest, tries again at the pace of its backoff and
// the holder's TTL, not as fast as the masters answer. Three ways it did:
//   - a roll-back woke its own waiter (the lock, and the semaphore of 1);
//   - a semaphore's roll-back woke another waiter that had been let in
//     already, which then took a permit, rolled back, and woke the first
//     (three waiters of a semaphore of 3, whose three holders each hold
//     the same 4 masters of 5);
//   - a split vote that persists, as when the holder's key is gone from
//     some masters and one master is down: the waiter took it for
//     contenders splitting the masters, and retried within a few
//     milliseconds each time.
func TestIntegration_Queue_FailedAttemptsDoNotSpin(t *testing.T) {
	type call func(ctx context.Context, c *Client) error
	lock := func(ctx context.Context, c *Client) error {
		_, err := c.Lock(ctx, "spin", time.Second)
		return err
	}
	lockAll := func(ctx context.Context, c *Client) error {
		_, err := c.LockAll(ctx, []string{"spin", "other"}, time.Second)
		return err
	}
	acquire := func(k int, opts ...SemaphoreOption) call {
		return func(ctx context.Context, c *Client) error {
			s, err := c.Semaphore("spin", k, opts...)
			if err != nil {
				return err
			}
			_, err = s.Acquire(ctx, time.Second)
			return err
		}
	}
	tryAcquire := func(k int, opts ...SemaphoreOption) call {
		return func(ctx context.Context, c *Client) error {
			s, err := c.Semaphore("spin", k, opts...)
			if err != nil {
				return err
			}
			_, err = s.TryAcquire(ctx, 10*time.Second)
			return err
		}
	}
	tryLock := func(ctx context.Context, c *Client) error {
		_, err := c.TryLock(ctx, "spin", 10*time.Second)
		return err
	}
	for _, tc := range []struct {
		name    string
		masters int
		holds   []call   // each on its own client
		on      [][2]int // the masters each holder's client knows, srv[from:to]
		setup   func(t *testing.T, srv []*redistest.Server)
		wait    call
		waiters int // each on its own client
	}{
		{"lock", 3, []call{tryLock}, [][2]int{{0, 2}}, nil, lock, 1},
		{"semaphore of 1", 3, []call{tryAcquire(1, WithEveryMaster())}, [][2]int{{0, 2}}, nil, acquire(1), 1},
		{"lock, two waiters", 3, []call{tryLock}, [][2]int{{0, 2}}, nil, lock, 2},
		{"semaphore of 3, three waiters", 5, []call{tryAcquire(3, WithEveryMaster()), tryAcquire(3, WithEveryMaster()), tryAcquire(3, WithEveryMaster())}, [][2]int{{0, 4}, {0, 4}, {0, 4}}, nil, acquire(3), 3},
		{"lock, key lost and a master down", 5, []call{tryLock}, [][2]int{{0, 5}}, lostAndDown, lock, 1},
		{"set, key lost and a master down", 5, []call{tryLock}, [][2]int{{0, 5}}, lostAndDown, lockAll, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := masters(t, tc.masters)
			for i, hold := range tc.holds {
				require.NoError(t, hold(context.Background(), client(t, srv[tc.on[i][0]:tc.on[i][1]])))
			}
			if tc.setup != nil {
				tc.setup(t, srv)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			recs := make([]*recorder, tc.waiters)
			errs := make(chan error, tc.waiters)
			for i := range recs {
				recs[i] = &recorder{}
				c := client(t, srv, WithObserver(recs[i]), WithRetry(ConstantBackoff(50*time.Millisecond)))
				go func() { errs <- tc.wait(ctx, c) }()
			}
			for range recs {
				require.ErrorIs(t, <-errs, ErrNotObtained)
			}
			for i, rec := range recs {
				attempts := len(rec.outcomes(KindAttempt))
				t.Logf("waiter %d: %d attempts in 500ms, %d wake-ups", i, attempts, len(rec.outcomes(KindWake)))
				assert.LessOrEqual(t, attempts, 20, "waiter %d tried again too soon", i)
			}
		})
	}
}

// lostAndDown leaves the key of a holder on all five masters on the first
// two alone, as after restarts that lost it, and stops the third master: a
// waiter takes the last two and is refused on the first two, fewer than a
// quorum each way.
func lostAndDown(t *testing.T, srv []*redistest.Server) {
	for _, m := range srv[2:] {
		_, err := m.Do("FLUSHALL")
		require.NoError(t, err)
	}
	require.NoError(t, srv[2].Stop())
}
