package scenario

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/chaos/cluster"
	"github.com/quorumlock/quorumlock/chaos/history"
	"github.com/quorumlock/quorumlock/redlock"
)

// TestMasters_ReadTheFenceAndBoundTheValidityOfALock checks what scenario
// 12 reads from the masters about a Do hold against what the library says
// of a Lock taken the same way: the fence, where the masters' counters
// disagree and a master granted late with a counter of its own, and a bound
// on the validity that is never before Until and not far after it.
func TestMasters_ReadTheFenceAndBoundTheValidityOfALock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.Process{}.Start(ctx, t, cluster.Spec{Nodes: 5, Clients: 1})
	require.NoError(t, err)
	const key = "masters-test"
	const ttl = 3 * time.Second

	set := func(node int, counter int64) {
		conn, err := redis.DialContext(ctx, "tcp", c.Direct(node))
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Do("SET", floorKey, counter)
		require.NoError(t, err)
	}
	// n0 counts ahead of n1-n3, so a quorum with n0 raises the others; n4
	// counts far ahead and answers late, outside any quorum. The floors are
	// set above the masters' clock seed (milliseconds times 1024): a
	// master's first acquire starts its fence epoch there, and raises a
	// lower floor to it.
	base := (time.Now().UnixMilli() + 60_000) * 1024
	for n, counter := range []int64{500, 100, 100, 100, 1_000_000} {
		set(n, base+counter)
	}
	require.NoError(t, c.Impair(ctx, cluster.Link{Client: 0, Node: 4}, cluster.Latency(150*time.Millisecond, 0)))

	client, err := redlock.NewFromAddrs(c.Addrs(0), redlock.WithNodeTimeout(300*time.Millisecond),
		redlock.WithRestartGuard(0), redlock.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	defer client.Close()
	h := history.New()
	l, err := client.Lock(ctx, key, ttl)
	require.NoError(t, err)
	defer l.Release(context.WithoutCancel(ctx))
	require.False(t, slices.Contains(l.Granted(), 4), "n4's grant is late: the precondition of the test")
	time.Sleep(300 * time.Millisecond) // n4's late grant lands

	fence, holding, ok := fenceOnMasters(ctx, direct(c), key, l.Token(), client.Quorum())
	require.True(t, ok)
	assert.Equal(t, l.Fence(), fence)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, holding)
	late, _ := evalOn(ctx, map[int]string{4: c.Direct(4)}, counterIfHeld, []any{key, floorKey}, l.Token())[4]
	assert.Equal(t, base+1_000_001, late, "n4 holds the token with a count of its own, which is not the fence")

	e := &Env{Cluster: c, History: h}
	bound, err := validityBound(ctx, e, key, l.Token(), []int{0, 1, 2, 3}, ttl)
	require.NoError(t, err)
	until := h.At(l.Until())
	assert.GreaterOrEqual(t, bound, until, "the bound is never before the validity's end")
	assert.Less(t, bound, until+250*time.Millisecond, "the bound is close to the validity's end")

	_, holding, ok = fenceOnMasters(ctx, direct(c), key, "another token", client.Quorum())
	assert.Empty(t, holding)
	assert.False(t, ok, "no fence for a token that holds nothing")
}
