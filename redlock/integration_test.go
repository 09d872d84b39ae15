package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// masters starts n real redis-server processes.
func masters(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	return mastersWith(t, n, redistest.Ephemeral)
}

// mastersWith starts n real redis-server processes with persistence p; in
// the ACL suite, each with the least-privilege user of docs/production.md.
func mastersWith(t *testing.T, n int, p redistest.Persistence) []*redistest.Server {
	t.Helper()
	return redistest.Start(t, n, p, aclUser(t)...)
}

// client returns a client over the servers. The restart guard is off unless
// the options turn it on: these servers have only just started.
func client(t *testing.T, srv []*redistest.Server, opts ...Option) *Client {
	t.Helper()
	c, err := NewFromAddrs(urls(srv), suite(WithRestartGuard(0), WithLogger(quiet()))(opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// do runs one command on a server, outside the library.
func do(t *testing.T, s *redistest.Server, cmd string, args ...any) any {
	t.Helper()
	conn, err := redis.Dial("tcp", s.Addr(), redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(2*time.Second))
	require.NoError(t, err)
	defer conn.Close()
	v, err := conn.Do(cmd, args...)
	require.NoError(t, err, "%s %v on %s", cmd, args, s.Addr())
	return v
}

// waitHeld waits until each server holds key's lock. An attempt returns at
// quorum, so a master's grant may still be on its way when it returns.
func waitHeld(t *testing.T, key string, srv ...*redistest.Server) {
	t.Helper()
	for _, s := range srv {
		require.Eventually(t, func() bool {
			n, err := redis.Int(do(t, s, "EXISTS", stored(key)), nil)
			return err == nil && n == 1
		}, 2*time.Second, time.Millisecond, "%s never held %q", s.Addr(), key)
	}
}

// deleteHeld deletes key's lock on each server, as an operator would, once
// the server holds it: a delete that ran before a late grant would leave
// the key held.
func deleteHeld(t *testing.T, key string, srv ...*redistest.Server) {
	t.Helper()
	waitHeld(t, key, srv...)
	for _, s := range srv {
		do(t, s, "DEL", stored(key))
	}
}

func getString(t *testing.T, s *redistest.Server, key string) string {
	t.Helper()
	v, err := redis.String(do(t, s, "GET", stored(key)), nil)
	if errors.Is(err, redis.ErrNil) {
		return ""
	}
	require.NoError(t, err)
	return v
}

func TestIntegration_AcquireContendRelease(t *testing.T) {
	srv := masters(t, 5)
	a, b := client(t, srv), client(t, srv)
	ctx := context.Background()
	l, err := a.TryLock(ctx, "job", 5*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.Validity(), 4*time.Second)
	assert.Positive(t, l.Fence())
	held := 0
	for _, s := range srv {
		if getString(t, s, "job") == l.Token() {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 3, "the token is on a quorum")

	_, err = b.TryLock(ctx, "job", 5*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	var ne *NodeError
	require.ErrorAs(t, err, &ne)

	require.NoError(t, l.Release(ctx))
	for _, s := range srv {
		assert.Eventually(t, func() bool { return getString(t, s, "job") == "" }, 2*time.Second, 5*time.Millisecond)
	}
	l2, err := b.TryLock(ctx, "job", 5*time.Second)
	require.NoError(t, err)
	assert.Greater(t, l2.Fence(), l.Fence())
	require.NoError(t, l2.Release(ctx))
}

func TestIntegration_MinorityHeldByForeignToken_StillLocks_AndLeavesItAlone(t *testing.T) {
	srv := masters(t, 5)
	for _, s := range srv[:2] {
		do(t, s, "SET", stored("k"), "foreign", "PX", 30000)
	}
	c := client(t, srv)
	l, err := c.TryLock(context.Background(), "k", 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(context.Background()))
	for _, s := range srv[:2] {
		assert.Equal(t, "foreign", getString(t, s, "k"))
		pttl, _ := redis.Int64(do(t, s, "PTTL", stored("k")), nil)
		assert.Greater(t, pttl, int64(25000), "the foreign TTL is untouched")
	}
	for _, s := range srv[2:] {
		assert.Eventually(t, func() bool { return getString(t, s, "k") == "" }, 2*time.Second, 5*time.Millisecond)
	}
}

func TestIntegration_MajorityHeld_FailsAndLeavesNoResidue(t *testing.T) {
	srv := masters(t, 5)
	for _, s := range srv[:3] {
		do(t, s, "SET", stored("k"), "foreign", "PX", 30000)
	}
	c := client(t, srv)
	_, err := c.TryLock(context.Background(), "k", 5*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	// TryLock returned only after its rollback: nothing of it is left.
	for _, s := range srv[3:] {
		assert.Equal(t, "", getString(t, s, "k"), "%s keeps the failed attempt's key", s.Addr())
	}
	for _, s := range srv[:3] {
		assert.Equal(t, "foreign", getString(t, s, "k"))
	}
}

func TestIntegration_TwoPaused_StillLocksWellWithinASecond(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	_, err := c.Inspect(context.Background(), "warm") // connections up before the pause
	require.NoError(t, err)
	require.NoError(t, srv[0].Pause())
	require.NoError(t, srv[1].Pause())
	t.Cleanup(func() { srv[0].Resume(); srv[1].Resume() })
	start := time.Now()
	l, err := c.TryLock(context.Background(), "k", 5*time.Second)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("acquired with 2 of 5 masters paused in %v", took)
	assert.Less(t, took, 500*time.Millisecond)
	start = time.Now()
	require.NoError(t, l.Release(context.Background()))
	assert.Less(t, time.Since(start), 500*time.Millisecond, "Release returns at quorum, not after the hung masters")
	srv[0].Resume()
	srv[1].Resume()
}

func TestIntegration_ThreePaused_FailsWithinAFewNodeTimeouts(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv, WithNodeTimeout(DefaultNodeTimeout))
	require.NoError(t, srv[0].Pause())
	require.NoError(t, srv[1].Pause())
	require.NoError(t, srv[2].Pause())
	t.Cleanup(func() { srv[0].Resume(); srv[1].Resume(); srv[2].Resume() })
	start := time.Now()
	_, err := c.TryLock(context.Background(), "k", 5*time.Second)
	took := time.Since(start)
	require.ErrorIs(t, err, ErrNotObtained)
	t.Logf("failed with 3 of 5 masters paused in %v (node timeout %v): %v", took, DefaultNodeTimeout, err)
	// One timeout to decide, at most one more waiting for the rollback.
	assert.Less(t, took, 10*DefaultNodeTimeout)
	assert.Contains(t, err.Error(), "no reply within")
	for _, s := range srv[3:] {
		assert.Equal(t, "", getString(t, s, "k"), "the reachable masters keep nothing")
	}
}

// A master that asks for a password, stopped after its connections
// dropped, takes each dial into its listen queue and answers none: the
// kernel completes the connection, AUTH goes unanswered. Each connection
// queued then is accepted at once when the master runs again. One client
// of 16 goroutines taking and releasing one key dials it, over a 2 s stop,
// at most 3 times for its calls (see drivertest's
// UnansweredMasterIsNotDialledInAStorm) and at most twice for its
// announcements.
func TestIntegration_StoppedMasterWithAPassword_NotDialledInAStorm(t *testing.T) {
	const goroutines, stopped, password = 16, 2 * time.Second, "stopped-Pw1"
	srv := redistest.Start(t, 3, redistest.Ephemeral, "--requirepass", password)
	addrs := make([]string, len(srv))
	for i, s := range srv {
		addrs[i] = "redis://:" + password + "@" + s.Addr()
	}
	c := clientAt(t, addrs, WithRestartGuard(0))
	busy := func(d time.Duration) (locks int64) {
		var n atomic.Int64
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for range goroutines {
			wg.Go(func() {
				for i := 0; i < 100000 && time.Now().Before(end); i++ { // bounded in count and time
					ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
					l, err := c.Lock(ctx, "hot", time.Second)
					cancel()
					if err == nil {
						n.Add(1)
						l.Release(context.Background())
					}
				}
			})
		}
		wg.Wait()
		return n.Load()
	}
	require.Positive(t, busy(300*time.Millisecond), "the waiters are subscribed")
	for _, kind := range []string{"normal", "pubsub"} {
		_, err := srv[0].DoAs(password, "CLIENT", "KILL", "TYPE", kind)
		require.NoError(t, err)
	}
	before, err := srv[0].ConnectionsReceived(password)
	require.NoError(t, err)
	require.NoError(t, srv[0].Pause())
	t.Cleanup(func() { srv[0].Resume() }) // a second SIGCONT does nothing
	locks := busy(stopped)
	require.NoError(t, srv[0].Resume())
	after, err := srv[0].ConnectionsReceived(password) // the queued ones are accepted before this one
	require.NoError(t, err)
	dialled := after - before - 1
	t.Logf("%d connections over a %v stop; %d locks meanwhile", dialled, stopped, locks)
	assert.LessOrEqual(t, dialled, 5, "a stopped master was dialled in a storm")
	assert.Positive(t, locks, "the other two masters kept the lock going")
}

func TestIntegration_ExtendAndReleaseTwice(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 5*time.Second) // the node timeout is at most a tenth of it
	require.NoError(t, err)
	require.NoError(t, l.Extend(ctx, 20*time.Second))
	assert.Greater(t, l.Validity(), 19*time.Second)
	extended := 0
	for _, s := range srv {
		if pttl, _ := redis.Int64(do(t, s, "PTTL", stored("k")), nil); pttl > 19000 {
			extended++
		}
	}
	assert.GreaterOrEqual(t, extended, 3, "a quorum carries the new TTL when Extend returns")
	require.NoError(t, l.Release(ctx))
	assert.ErrorIs(t, l.Release(ctx), ErrLockNotHeld)
	assert.ErrorIs(t, l.Extend(ctx, time.Second), ErrLockNotHeld)
	assert.NoError(t, l.Err())
}

// TestIntegration_EightGoroutinesNeverOverlap hammers one key from eight
// goroutines on two clients and checks with an in-process counter that no
// two critical sections ever overlap.
func TestIntegration_EightGoroutinesNeverOverlap(t *testing.T) {
	srv := masters(t, 5)
	clients := []*Client{client(t, srv), client(t, srv)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const perWorker = 100
	var inside, maxInside, total atomic.Int32
	var lastFence atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			c := clients[w%2]
			for range perWorker {
				l, err := c.Lock(ctx, "hot", 2*time.Second)
				if !assert.NoError(t, err) {
					return
				}
				n := inside.Add(1)
				if n > maxInside.Load() {
					maxInside.Store(n)
				}
				assert.Greater(t, l.Fence(), lastFence.Load(), "fences grow hand-off to hand-off")
				lastFence.Store(l.Fence())
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				inside.Add(-1)
				total.Add(1)
				assert.NoError(t, l.Release(context.Background()))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), maxInside.Load(), "two holders at once")
	assert.Equal(t, int32(8*perWorker), total.Load())
	// Locks passed hand to hand within a client and released between clients
	// leave nothing behind once the last release has landed.
	for _, s := range srv {
		assert.Eventually(t, func() bool { return getString(t, s, "hot") == "" }, 2*time.Second, 5*time.Millisecond,
			"%s keeps a token", s.Addr())
	}
}

func TestIntegration_DoLoss_CancelsFnBeforeUntil(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	var lostAt time.Time
	var cause error
	start := time.Now()
	err := c.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
		deleteHeld(t, "k", srv...) // an operator deletes the lock everywhere
		select {
		case <-ctx.Done():
			lostAt, cause = time.Now(), context.Cause(ctx)
		case <-time.After(5 * time.Second):
		}
		return nil
	})
	require.ErrorIs(t, err, ErrLockLost)
	require.Equal(t, ErrLockLost, cause, "fn's ctx is cancelled with cause ErrLockLost")
	until := start.Add(time.Second - 12*time.Millisecond)
	t.Logf("loss noticed %v after the start, window ends at %v", lostAt.Sub(start), until.Sub(start))
	assert.True(t, lostAt.Before(until), "loss noticed after the validity window")
}

func TestIntegration_AutoExtend_OutlivesTheTTL_ThroughAPausedMinority(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", time.Second, WithAutoExtend())
	require.NoError(t, err)
	require.NoError(t, srv[3].Pause())
	require.NoError(t, srv[4].Pause())
	t.Cleanup(func() { srv[3].Resume(); srv[4].Resume() })
	time.Sleep(2500 * time.Millisecond) // two and a half TTLs
	require.NoError(t, l.Err())
	assert.Greater(t, l.Validity(), time.Duration(0))
	for _, s := range srv[:3] {
		assert.Equal(t, l.Token(), getString(t, s, "k"))
	}
	srv[3].Resume()
	srv[4].Resume()
	require.NoError(t, l.Release(ctx))
	assert.NoError(t, l.Err())
}

// TestIntegration_FencesStrictlyIncrease_WhileMinoritiesComeAndGo takes the
// lock thousands of times, alternating between two clients, while a
// minority of masters is paused, resumed, or killed and restarted (with
// every write fsynced, so no master loses data). Every fence must be larger
// than the one before.
func TestIntegration_FencesStrictlyIncrease_WhileMinoritiesComeAndGo(t *testing.T) {
	srv := mastersWith(t, 5, redistest.FsyncAlways)
	// The restart guard is on: durable masters must not be quarantined.
	opts := []Option{WithRestartGuard(time.Minute), WithNodeTimeout(20 * time.Millisecond), WithLogger(quiet())}
	mk := func() *Client {
		c, err := NewFromAddrs(urls(srv), suite(opts...)()...)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	clients := []*Client{mk(), mk()}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	stop := make(chan struct{})
	chaosDone := make(chan struct{})
	var faults atomic.Int32
	go func() { // at most two masters down at any moment
		defer close(chaosDone)
		rng := rand.New(rand.NewPCG(7, 11))
		for round := 0; round < 10_000; round++ {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+rng.IntN(30)) * time.Millisecond):
			}
			down := rng.Perm(5)[:1+rng.IntN(2)]
			if round%7 == 0 {
				s := srv[down[0]]
				if s.Kill() == nil && s.Restart(redistest.FsyncAlways) == nil {
					faults.Add(1)
				}
				continue
			}
			for _, i := range down {
				srv[i].Pause()
			}
			faults.Add(1)
			time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			for _, i := range down {
				srv[i].Resume()
			}
		}
	}()

	const rounds = 2000
	var last int64
	for i := range rounds {
		l, err := clients[i%2].Lock(ctx, "fenced", 2*time.Second)
		require.NoError(t, err, "round %d", i)
		require.Greater(t, l.Fence(), last, "round %d: fence went backwards or repeated", i)
		last = l.Fence()
		l.Release(context.Background()) // may report a master that was just killed; the fence is what is checked
	}
	close(stop)
	<-chaosDone
	for _, s := range srv {
		s.Resume()
	}
	t.Logf("%d acquisitions, %d faults injected, last fence %d", rounds, faults.Load(), last)
	assert.Positive(t, faults.Load())
}

func TestIntegration_Reentrancy(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx := context.Background()
	outer, err := c.TryLock(ctx, "r", 5*time.Second, WithOwner("job-1"))
	require.NoError(t, err)
	// TryLock returns at quorum: let the outer hold reach every master.
	require.Eventually(t, func() bool {
		for _, s := range srv {
			if n, _ := redis.Int(do(t, s, "HLEN", stored("r")), nil); n < 2 {
				return false
			}
		}
		return true
	}, 2*time.Second, time.Millisecond)
	inner, err := c.Lock(ctx, "r", time.Second, WithOwner("job-1"))
	require.NoError(t, err, "the owner enters again at once")
	both := 0 // Lock returns at quorum: a straggler may have only the outer hold yet
	for _, s := range srv {
		n, _ := redis.Int(do(t, s, "HLEN", stored("r")), nil)
		assert.Contains(t, []int{2, 3}, n, "owner field and one or two holds")
		if n == 3 {
			both++
		}
		pttl, _ := redis.Int64(do(t, s, "PTTL", stored("r")), nil)
		assert.Greater(t, pttl, int64(4000), "the shorter inner TTL never shortens the outer hold")
	}
	assert.GreaterOrEqual(t, both, 3, "a quorum holds both")
	for _, opts := range [][]LockOption{{WithOwner("job-2")}, nil} {
		_, err = c.TryLock(ctx, "r", time.Second, opts...)
		require.ErrorIs(t, err, ErrNotObtained)
		assert.NotContains(t, err.Error(), "WRONGTYPE")
	}
	require.NoError(t, inner.Release(ctx))
	st, err := c.Inspect(ctx, "r")
	require.NoError(t, err)
	assert.Equal(t, "owner:job-1", st.Holder, "the outer hold remains")
	require.NoError(t, outer.Release(ctx))
	for _, s := range srv {
		assert.Eventually(t, func() bool {
			n, _ := redis.Int(do(t, s, "EXISTS", stored("r")), nil)
			return n == 0
		}, 2*time.Second, 5*time.Millisecond)
	}

	// A plain lock, or a key of another type, shuts owners out cleanly.
	plain, err := c.TryLock(ctx, "p", time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(ctx, "p", time.Second, WithOwner("job-1"))
	require.ErrorIs(t, err, ErrNotObtained)
	assert.NotContains(t, err.Error(), "WRONGTYPE")
	require.NoError(t, plain.Release(ctx))
	for _, s := range srv {
		do(t, s, "RPUSH", stored("list"), "x")
	}
	for _, opts := range [][]LockOption{{WithOwner("job-1")}, nil} {
		_, err = c.TryLock(ctx, "list", time.Second, opts...)
		require.ErrorIs(t, err, ErrNotObtained)
		assert.NotContains(t, err.Error(), "WRONGTYPE")
	}
	for _, owner := range []string{"job-1", ""} {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		g, err := awaitAcquire(ctx, c.nodes[0], request{key: "list", token: "t", owner: owner, ttl: time.Second, keep: time.Minute})
		require.NoError(t, err)
		assert.False(t, g.OK)
		assert.Equal(t, scripts.Unknown, g.Holder, "a master names the holder of a key of another kind")
	}
	n, _ := redis.Int(do(t, srv[0], "LLEN", stored("list")), nil)
	assert.Equal(t, 1, n, "the foreign key is untouched")
}

// A waiter is woken by the release announcement: with a ten-second backoff
// and a holder TTL of ten seconds, nothing else could wake it in time.
func TestIntegration_WaiterWokenByAnotherClientsRelease(t *testing.T) {
	srv := masters(t, 5)
	holder := client(t, srv)
	waiter := client(t, srv, WithRetry(ConstantBackoff(10*time.Second)), WithQueueLease(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := holder.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	got := make(chan time.Time, 1)
	go func() {
		l2, err := waiter.Lock(ctx, "k", time.Second)
		if assert.NoError(t, err) {
			got <- time.Now()
			l2.Release(context.Background())
		}
	}()
	time.Sleep(200 * time.Millisecond) // the waiter has failed once and subscribed
	released := time.Now()
	require.NoError(t, l.Release(ctx))
	select {
	case at := <-got:
		t.Logf("hand-off across clients took %v", at.Sub(released))
		assert.Less(t, at.Sub(released), 2*time.Second)
	case <-time.After(8 * time.Second):
		t.Fatal("the waiter was not woken by the release")
	}
}

// One pub/sub connection per master per client, however many keys and waiters.
func TestIntegration_OnePubSubConnectionPerMaster(t *testing.T) {
	srv := masters(t, 3)
	holder := client(t, srv)
	waiter := client(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	keys := []string{"a", "b", "c", "d", "e"}
	for _, k := range keys {
		_, err := holder.TryLock(ctx, k, 30*time.Second)
		require.NoError(t, err)
		for range 3 {
			wg.Go(func() { waiter.Lock(ctx, k, time.Second) })
		}
	}
	require.Eventually(t, func() bool {
		v, _ := redis.Values(do(t, srv[0], "PUBSUB", "NUMSUB", suiteNames().Channel("e")), nil)
		return len(v) == 2 && v[1].(int64) == 1
	}, 5*time.Second, 10*time.Millisecond, "waiters subscribed")
	for _, s := range srv {
		var list string
		assert.Eventually(t, func() bool {
			list, _ = redis.String(do(t, s, "CLIENT", "LIST", "TYPE", "pubsub"), nil)
			return strings.Contains(list, "sub=5")
		}, 5*time.Second, 10*time.Millisecond, "%s: five channels on the one connection:\n%s", s.Addr(), list)
		lines := strings.Count(strings.TrimSpace(list), "\n") + 1
		assert.Equal(t, 1, lines, "%s: pub/sub connections:\n%s", s.Addr(), list)
	}
	cancel()
	wg.Wait()
}

// TestIntegration_RestartGuard is the scenario that breaks Redlock without a
// delayed restart. Client A holds the key on masters 0-2 (3 and 4 hold a
// foreign token). Master 2 is killed and restarted at once, without
// persistence, so it forgets A's key. The foreign keys go. Client B then
// tries the key: without the guard B gets it while A still believes it
// holds the lock (two holders: the test can fail); with the guard, master
// 2 does not vote and B is refused.
func TestIntegration_RestartGuard(t *testing.T) {
	const ttl = time.Second // the default window is then 1s plus drift
	for _, guard := range []bool{false, true} {
		t.Run(map[bool]string{false: "off", true: "on"}[guard], func(t *testing.T) {
			srv := masters(t, 5)
			if guard {
				// Let the masters age past the window, so that only the
				// restarted one is in quarantine. Uptime comes in whole
				// seconds and is read as the youngest it can be: a second less.
				time.Sleep(3100 * time.Millisecond)
			}
			ctx := context.Background()
			for _, s := range srv[3:] {
				do(t, s, "SET", stored("k"), "foreign", "PX", 60000)
			}
			a := client(t, srv)
			// A needs all three free masters; retry through any stall of the machine.
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			la, err := a.Lock(actx, "k", ttl)
			cancel()
			require.NoError(t, err)

			require.NoError(t, srv[2].Kill())
			require.NoError(t, srv[2].Restart(redistest.Ephemeral))
			deleteHeld(t, "k", srv[3:]...)

			// A node timeout a loaded machine meets on the restarted master's
			// first call, which dials and reads its health.
			opts := []Option{WithNodeTimeout(250 * time.Millisecond)}
			if guard {
				opts = append(opts, WithRestartGuard(restartGuardAuto)) // the default, which client() turns off
			}
			b := client(t, srv, opts...)
			lb, err := b.TryLock(ctx, "k", ttl)
			require.Positive(t, la.Validity(), "A still believes it holds the lock")
			if !guard {
				require.NoError(t, err, "without the guard the restarted master votes")
				assert.Positive(t, lb.Validity())
				assert.NotEqual(t, la.Token(), lb.Token(), "two holders of one lock")
				return
			}
			require.ErrorIs(t, err, ErrNotObtained)
			assert.Contains(t, err.Error(), "quarantined after a restart")
			st, err := b.Inspect(ctx, "k")
			require.NoError(t, err)
			for i, n := range st.Nodes {
				assert.Equal(t, i == 2, n.Quarantined, "master %d", i)
			}
		})
	}
}

// A client that was already connected notices the restart on its next new
// connection, and a master that fsyncs every write is never quarantined.
func TestIntegration_RestartGuard_LongLivedClientAndDurableMaster(t *testing.T) {
	srv := masters(t, 3)
	durable := mastersWith(t, 1, redistest.FsyncAlways)[0]
	all := append(srv, durable)
	c, err := NewFromAddrs(urls(all), suite(WithRestartGuard(time.Hour), WithLogger(quiet()))()...)
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	st, err := c.Inspect(ctx, "k")
	require.NoError(t, err)
	for i := range 3 {
		require.True(t, st.Nodes[i].Quarantined, "master %d is an hour short of the window", i)
	}
	require.False(t, st.Nodes[3].Quarantined, "durable")

	// With a window of one second the fresh masters soon vote: once their
	// uptime, counted in whole seconds and read as the youngest it can be,
	// says they have been up for a second.
	c2 := client(t, all, WithRestartGuard(time.Second))
	time.Sleep(2100 * time.Millisecond)
	l, err := c2.TryLock(ctx, "k", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, srv[0].Kill())
	require.NoError(t, srv[0].Restart(redistest.Ephemeral))
	// The pooled connection to master 0 is dead; the next one is new and checked.
	require.Eventually(t, func() bool {
		st, err := c2.Inspect(ctx, "k")
		return err == nil && st.Nodes[0].Err == nil && st.Nodes[0].Quarantined
	}, 5*time.Second, 20*time.Millisecond, "the restart went unnoticed")
}

func TestIntegration_ScriptCacheFlushed(t *testing.T) {
	srv := masters(t, 3)
	c := client(t, srv)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", time.Second)
	require.NoError(t, err)
	for _, s := range srv {
		do(t, s, "SCRIPT", "FLUSH")
	}
	require.NoError(t, l.Extend(ctx, time.Second), "EVALSHA falls back to EVAL")
	require.NoError(t, l.Release(ctx))
}

func TestIntegration_Inspect(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx := context.Background()
	l, err := c.TryLock(ctx, "k", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, srv[4].Kill())
	st, err := c.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.True(t, st.Held())
	assert.Equal(t, l.Token(), st.Holder)
	assert.Error(t, st.Nodes[4].Err, "a dead master is reported")
	for _, n := range st.Nodes[:4] {
		if n.Holder != "" {
			assert.Equal(t, l.Token(), n.Holder)
			assert.Greater(t, n.TTL, 9*time.Second)
		}
	}
	for _, i := range l.Granted() {
		if i != 4 {
			assert.Equal(t, l.Fence(), st.Nodes[i].Fence, "the quorum counts the fence")
		}
	}
	require.NoError(t, l.Release(ctx))
	st, err = c.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.False(t, st.Held())
}

// Release returns at quorum; the deletes on the other masters must go on
// even when the caller cancels its ctx as soon as Release returns, as a
// deferred cancel does.
func TestIntegration_ReleaseThenCancel_LeavesNothing(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	const n = 100
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		l, err := c.TryLock(ctx, "k"+strconv.Itoa(i), 10*time.Second)
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		cancel()
	}
	for _, s := range srv {
		assert.Eventually(t, func() bool {
			keys, _ := redis.Strings(do(t, s, "KEYS", stored("k*")), nil)
			return len(keys) == 0
		}, 2*time.Second, 10*time.Millisecond, "%s keeps lock keys", s.Addr())
	}
}

// The masters' fence floors are whole numbers, and a quorum of them is at
// least the last fence: fences are clock-seeded numbers near 2^50, and the
// next grant of any key counts above the floor on a quorum that meets that
// one. (A master outside the quorum, whose grant came late or counted
// lower, need not be.) A plain lock's fence record names its token.
func TestIntegration_FenceFloorCoversEveryFence(t *testing.T) {
	srv := masters(t, 3)
	c := client(t, srv)
	ctx := context.Background()
	var last int64
	for i := range 20 {
		key := "f" + strconv.Itoa(i%4) // new keys and keys again
		l, err := c.TryLock(ctx, key, time.Second)
		require.NoError(t, err)
		assert.Greater(t, l.Fence(), last, "fences grow")
		last = l.Fence()
		require.NoError(t, l.Release(ctx))
	}
	// The last grants and deletes in flight land before the floors are read.
	require.NoError(t, c.Close())
	for k := range 4 {
		key := "f" + strconv.Itoa(k)
		covered := 0
		for _, s := range srv {
			floor, err := redis.String(do(t, s, "GET", suiteNames().Floor(key)), nil)
			require.NoError(t, err)
			f, err := strconv.ParseInt(floor, 10, 64)
			require.NoError(t, err, "the floor %q is a whole number", floor)
			assert.Greater(t, f, int64(1)<<40, "floors start from the clock")
			if f >= last {
				covered++
			}
			// A plain lock's record names its token, and lives no longer than
			// the lock's TTL.
			if rec, err := redis.String(do(t, s, "GET", suiteNames().Fence(key)), nil); err == nil {
				assert.Regexp(t, `^\d+ \S+$`, rec, "%s: the record of %s", s.Addr(), key)
				pttl, err := redis.Int64(do(t, s, "PTTL", suiteNames().Fence(key)), nil)
				require.NoError(t, err)
				assert.True(t, pttl > 0 && pttl <= time.Second.Milliseconds(), "%s: the record of %s expires within the lock's TTL: PTTL %d ms", s.Addr(), key, pttl)
			}
		}
		assert.GreaterOrEqual(t, covered, c.Quorum(), "masters whose floor of %s's slot is at least the last fence", key)
	}
}

// TestIntegration_FenceFloorKeptAsASortedSet_IsReplacedFromTheClock gives
// masters that counted before (their stamp names them) a fence floor kept
// as a sorted set, as earlier versions of the library kept it, just below
// each master's clock seed, as counting there would have left it. The
// scripts cannot read it as a number: they replace it with a string no
// lower than the clock seed, so the fence handed out is above it.
func TestIntegration_FenceFloorKeptAsASortedSet_IsReplacedFromTheClock(t *testing.T) {
	srv := masters(t, 3)
	c := client(t, srv)
	ctx := context.Background()
	const key = "upgraded"
	// The masters' stamps, and a floor in key's slot, from a client closed
	// before the floors are replaced: TryLock returns at a quorum, and an
	// acquire still on its way to the last master would set the floor there
	// again after the DEL below.
	warm := client(t, srv)
	l, err := warm.TryLock(ctx, "{"+key+"}warm", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	require.NoError(t, warm.Close()) // every master's acquire and release has run
	var old int64
	for _, s := range srv {
		do(t, s, "DEL", suiteNames().Floor(key))
		tm, err := redis.Int64s(do(t, s, "TIME"), nil)
		require.NoError(t, err)
		seed := (tm[0]*1000 + tm[1]/1000) * 1024
		old = max(old, seed-10)
		do(t, s, "ZADD", suiteNames().Floor(key), seed-10, "floor")
	}
	l, err = c.TryLock(ctx, key, time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.Fence(), old, "the fence is above what the old floors held")
	// Each master seeds from its own clock, so their counts may differ by
	// a millisecond's worth: the release raises those below the fence.
	require.NoError(t, l.Release(ctx))
	require.NoError(t, c.Close()) // every master's release has run
	for _, s := range srv {
		kind, err := redis.String(do(t, s, "TYPE", suiteNames().Floor(key)), nil)
		require.NoError(t, err)
		assert.Equal(t, "string", kind, "%s: the floor is a string now", s.Addr())
		f, err := redis.Int64(do(t, s, "GET", suiteNames().Floor(key)), nil)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, f, l.Fence(), "%s: the floor covers the fence", s.Addr())
	}
}

// Eight goroutines of one client pass a key hand to hand with no hold time,
// so hand-overs follow each other while earlier ones still land on the
// slowest masters. When they stop, nothing is left behind, and fences grew
// all along.
func TestIntegration_HandOvers_LeaveNothing(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deadline := time.Now().Add(700 * time.Millisecond)
	var inside atomic.Int32
	var mu sync.Mutex
	var last int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for n := 0; n < 100_000 && time.Now().Before(deadline); n++ {
				l, err := c.Lock(ctx, "passed", 10*time.Second) // a leftover would outlast the check below
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, int32(1), inside.Add(1), "two holders at once")
				mu.Lock()
				assert.Greater(t, l.Fence(), last)
				last = l.Fence()
				mu.Unlock()
				inside.Add(-1)
				assert.NoError(t, l.Release(context.Background()))
			}
		})
	}
	wg.Wait()
	for _, s := range srv {
		assert.Eventually(t, func() bool { return getString(t, s, "passed") == "" }, time.Second, 5*time.Millisecond,
			"%s keeps a token", s.Addr())
	}
}

// TestIntegration_DriftedFloorsAgreeOnTheProposal sets the masters' fence
// floors apart, each by a different amount, as grants counted on some masters
// only would, so that every quorum's counters would disagree and the fence
// would need raising. The attempt's proposal, the same to every master,
// brings them together: the fence needs no raise on any master.
func TestIntegration_DriftedFloorsAgreeOnTheProposal(t *testing.T) {
	srv := masters(t, 5)
	c := client(t, srv)
	ctx := context.Background()
	// The first grant in the slot seeds each master's floor from its clock.
	l, err := c.TryLock(ctx, "{drift}warm", time.Second)
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	for i, s := range srv {
		floor := c.nodes[i].(*master).names.Floor("{drift}k")
		do(t, s, "INCRBY", floor, 100*(i+1))
	}
	time.Sleep(proposalLag + 50*time.Millisecond) // proposals are made from the clock proposalLag ago
	l, err = c.TryLock(ctx, "{drift}k", time.Second)
	require.NoError(t, err)
	defer l.Release(ctx)
	assert.NotContains(t, l.fenced, true, "no master's counter was raised to the fence")
	for i, s := range srv {
		v, err := redis.Int64(do(t, s, "GET", c.nodes[i].(*master).names.Floor("{drift}k")), nil)
		require.NoError(t, err, "master %d: the floor", i)
		if a, _, ok := l.won.answer(i); ok && a.grant.OK {
			assert.Equal(t, l.Fence(), a.grant.Counter, "master %d counted the fence", i)
			assert.Equal(t, l.Fence(), v, "master %d's floor is the fence", i)
		}
	}
}
