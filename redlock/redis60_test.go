package redlock

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/internal/redistest"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// masters60 starts n real Redis 6.0 servers, the oldest release the library
// supports (see .ci/fetch-redis-6.0). A missing binary fails the test.
func masters60(t *testing.T, n int, extra ...string) []*redistest.Server {
	t.Helper()
	bin, err := redistest.Binary60()
	require.NoError(t, err)
	srv := redistest.StartWith(t, bin, n, redistest.Ephemeral, extra...)
	f, err := srv[0].Info("server")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(f["redis_version"], "6.0."), "redis_version %s", f["redis_version"])
	return srv
}

// deadAddr returns a loopback address where nothing listens: a master this
// client cannot reach.
func deadAddr(t *testing.T) string { return deadAddrs(t, 1)[0] }

// deadAddrs returns n such addresses, all different: two calls of deadAddr
// may get the same port back.
func deadAddrs(t *testing.T, n int) []string {
	t.Helper()
	ports, err := redistest.FreePorts(n)
	require.NoError(t, err)
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs
}

// clientAt returns a client over the given addresses, with the default
// guard window unless opts say otherwise.
func clientAt(t *testing.T, addrs []string, opts ...Option) *Client {
	t.Helper()
	c, err := NewFromAddrs(addrs, append([]Option{WithLogger(quiet()), WithNodeTimeout(100 * time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// Every operation of the lock on Redis 6.0, whose scripting lacks ZADD GT
// (6.2): plain and reentrant locks, contention, a waiter woken by a release,
// extension, auto-extension, Do, Inspect, and fences that grow, including
// the raise of a lagging master's counter.
func TestIntegration_Redis60_CoreOperations(t *testing.T) {
	srv := masters60(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := clientAt(t, redistest.Addrs(srv), WithRestartGuard(0)), clientAt(t, redistest.Addrs(srv), WithRestartGuard(0))

	l, err := a.TryLock(ctx, "k", 5*time.Second)
	require.NoError(t, err, "the 6.0 masters vote and grant")
	assert.GreaterOrEqual(t, len(l.Granted()), 2)
	assert.Positive(t, l.Fence())
	_, err = b.TryLock(ctx, "k", 5*time.Second)
	require.ErrorIs(t, err, ErrNotObtained)

	st, err := b.Inspect(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, l.Token(), st.Holder)
	for _, n := range st.Nodes {
		assert.False(t, n.Quarantined, "node %d: %s", n.Node, n.Distrust)
	}

	// A waiter is woken by the release, and gets a larger fence.
	got := make(chan *Lock, 1)
	go func() {
		l2, err := b.Lock(ctx, "k", 5*time.Second)
		assert.NoError(t, err)
		got <- l2
	}()
	time.Sleep(50 * time.Millisecond)
	released := time.Now()
	require.NoError(t, l.Release(ctx))
	l2 := <-got
	require.NotNil(t, l2)
	assert.Less(t, time.Since(released), 2*time.Second, "woken by the release announcement")
	assert.Greater(t, l2.Fence(), l.Fence())
	require.NoError(t, l2.Extend(ctx, 20*time.Second))
	assert.Greater(t, l2.Validity(), 19*time.Second)
	require.NoError(t, l2.Release(ctx))

	// Reentrant holds.
	r1, err := a.TryLock(ctx, "r", 5*time.Second, WithOwner("o"))
	require.NoError(t, err)
	r2, err := a.TryLock(ctx, "r", 5*time.Second, WithOwner("o"))
	require.NoError(t, err)
	_, err = b.TryLock(ctx, "r", 5*time.Second, WithOwner("p"))
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	for _, s := range srv {
		assert.Eventually(t, func() bool { return do(t, s, "EXISTS", "r") == int64(0) }, time.Second, 5*time.Millisecond)
	}

	// Auto-extension outlives the TTL; Do runs its function under the lock.
	ae, err := a.TryLock(ctx, "ae", 300*time.Millisecond, WithAutoExtend())
	require.NoError(t, err)
	time.Sleep(700 * time.Millisecond)
	assert.NoError(t, ae.Err())
	assert.Positive(t, ae.Validity())
	require.NoError(t, ae.Release(ctx))
	ran := false
	require.NoError(t, a.Do(ctx, "do", time.Second, func(ctx context.Context) error {
		_, ok := FromContext(ctx)
		ran = ok
		return nil
	}))
	assert.True(t, ran)

	// Counters apart: x counts on masters 0 and 1 only, then y's quorum has
	// master 2 lagging, whose counter the fence script raises.
	x := clientAt(t, []string{srv[0].Addr(), srv[1].Addr(), deadAddr(t)}, WithRestartGuard(0))
	var last int64
	for range 3 {
		lx, err := x.TryLock(ctx, "f", time.Second)
		require.NoError(t, err)
		last = lx.Fence()
		require.NoError(t, lx.Release(ctx))
	}
	y := clientAt(t, []string{deadAddr(t), srv[1].Addr(), srv[2].Addr()}, WithRestartGuard(0))
	ly, err := y.TryLock(ctx, "f", time.Second)
	require.NoError(t, err)
	assert.Greater(t, ly.Fence(), last)
	f2, err := redis.String(do(t, srv[2], "GET", scripts.Names{}.Floor("f")), nil)
	require.NoError(t, err)
	assert.Equal(t, strconv.FormatInt(ly.Fence(), 10), f2, "master 2's floor raised to the fence")
	require.NoError(t, ly.Release(ctx))
}
