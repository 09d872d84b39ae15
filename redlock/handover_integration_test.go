package redlock

import (
	"context"
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

// evalshaCalls returns how many EVALSHA calls a server has run.
func evalshaCalls(t *testing.T, s *redistest.Server) int {
	t.Helper()
	stats, err := redis.String(do(t, s, "INFO", "commandstats"), nil)
	require.NoError(t, err)
	for _, line := range strings.Split(stats, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

// A Release with a waiter in line hands the lock over only when no request
// of the lock's token can still land: when one went unanswered (held back in
// the network past its node timeout) it releases instead, leaving the
// token's tombstone where that request is on its way. Here the request is
// held back on its way to master 2, the lock is released to a waiter, the
// waiter takes the lock and releases it, and only then does the request
// arrive: the released token must not hold master 2 again.
func TestIntegration_HandOverLetsNoLateRequestLand(t *testing.T) {
	acquireSHA := []byte(scripts.New().Acquire.SHA)
	for _, tc := range []struct {
		name string
		// late holds back a request of a new lock on key k on its way to
		// master 2, and returns the lock once the request is held.
		late func(t *testing.T, c *Client, srv []*redistest.Server, hb *redistest.HoldBack) *Lock
	}{
		{"an acquisition round", func(t *testing.T, c *Client, _ []*redistest.Server, hb *redistest.HoldBack) *Lock {
			hb.Hold(acquireSHA)
			l, err := c.TryLock(context.Background(), "k", 10*time.Second)
			require.NoError(t, err, "masters 0 and 1 are a quorum")
			return l
		}},
		{"a retake", func(t *testing.T, c *Client, srv []*redistest.Server, hb *redistest.HoldBack) *Lock {
			l, err := c.TryLock(context.Background(), "k", 10*time.Second)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return getString(t, srv[2], "k") == l.Token() }, 2*time.Second, time.Millisecond)
			do(t, srv[2], "DEL", stored("k")) // master 2 lost the key: the extension retakes it
			hb.Hold(acquireSHA)
			require.NoError(t, l.Extend(context.Background(), 10*time.Second))
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := masters(t, 3)
			hb := redistest.NewHoldBack(t, srv[2].Addr())
			addrs := []string{suiteURL(srv[0].Addr()), suiteURL(srv[1].Addr()), suiteURL(hb.Addr())}
			c, err := NewFromAddrs(addrs, suite(WithRestartGuard(0), WithLogger(quiet()),
				WithNodeTimeout(time.Second), WithRetry(ConstantBackoff(time.Hour)), WithQueueLease(time.Hour))()...)
			require.NoError(t, err)
			defer c.Close()
			// Every script is cached on every master: a late EVALSHA must
			// not fail for want of it.
			warm, err := c.TryLock(context.Background(), "warm", 10*time.Second)
			require.NoError(t, err)
			require.NoError(t, warm.Extend(context.Background(), 10*time.Second))
			require.NoError(t, warm.Release(context.Background()))

			a := tc.late(t, c, srv, hb)
			select {
			case <-hb.Held():
			case <-time.After(5 * time.Second):
				t.Fatal("no request of the lock was held back")
			}

			// A waiter for the key, parked: it has made its first attempt and
			// the retry that follows its subscription, and waits.
			before := evalshaCalls(t, srv[0])
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			out := make(chan lockResult, 1)
			go func() {
				l, err := c.Lock(ctx, "k", 10*time.Second)
				out <- lockResult{l, err}
			}()
			require.Eventually(t, func() bool {
				c.hub.mu.Lock()
				q := c.hub.queues["k"]
				parked := q != nil && len(q.waiters) == 1 && !q.waiters[0].busy
				c.hub.mu.Unlock()
				return parked && evalshaCalls(t, srv[0]) >= before+2
			}, 5*time.Second, time.Millisecond, "the waiter never parked")

			require.NoError(t, a.Release(context.Background()))
			r := await(t, out, 10*time.Second, "the waiter never got the lock")
			require.NoError(t, r.err)
			require.NoError(t, r.l.Release(context.Background()))
			require.NoError(t, c.Close()) // the deletes still running have run

			require.NoError(t, hb.Deliver(5*time.Second), "the request held back reached master 2")
			for i, s := range srv {
				assert.NotEqual(t, a.Token(), getString(t, s, "k"),
					"master %d holds the released token again: a request of it landed after Release returned", i)
			}
		})
	}
}

// TestIntegration_ReleaseWithoutWaitersReturnsAtQuorum holds a lock's
// acquire back on its way to one master and releases the lock with nobody
// waiting for it: Release returns on the quorum's answers, without waiting
// for the late master, whose delete follows once its acquire has returned.
// Nothing is left.
func TestIntegration_ReleaseWithoutWaitersReturnsAtQuorum(t *testing.T) {
	srv := masters(t, 3)
	hb := redistest.NewHoldBack(t, srv[2].Addr())
	late := suiteURL(hb.Addr())
	if !strings.Contains(late, "://") {
		late = "redis://" + late
	}
	// The late master's calls end at the node timeout, not before.
	late += "?read_timeout=10s"
	addrs := []string{suiteURL(srv[0].Addr()), suiteURL(srv[1].Addr()), late}
	const timeout = 3 * time.Second
	c, err := NewFromAddrs(addrs, suite(WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(timeout))()...)
	require.NoError(t, err)
	defer c.Close()
	warm, err := c.TryLock(context.Background(), "warm", 10*time.Second)
	require.NoError(t, err)
	require.NoError(t, warm.Release(context.Background()))

	hb.Hold([]byte(scripts.New().Acquire.SHA))
	l, err := c.TryLock(context.Background(), "k", time.Minute) // a node timeout of its tenth, at most
	require.NoError(t, err, "masters 0 and 1 are a quorum")
	select {
	case <-hb.Held():
	case <-time.After(5 * time.Second):
		t.Fatal("the acquire was not held back")
	}
	done := make(chan error, 1)
	go func() { done <- l.Release(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(timeout / 2):
		t.Fatal("Release waited for the late master")
	}
	require.NoError(t, hb.Deliver(5*time.Second), "the held acquire reached master 2")
	require.NoError(t, c.Close()) // the late master's delete has run
	for i, s := range srv {
		assert.Empty(t, getString(t, s, "k"), "master %d", i)
	}
}
