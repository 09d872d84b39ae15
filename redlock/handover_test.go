package redlock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitFor starts c.Lock in a goroutine and returns its outcome channel once
// the waiter sleeps first in line: it has made its first attempt and the
// immediate retry that follows its subscription (holder: one acquire each
// on master 0 so far).
func waitFor(t *testing.T, ctx context.Context, c *Client, fakes []*fakeNode, key string) <-chan lockResult {
	t.Helper()
	out := make(chan lockResult, 1)
	go func() {
		l, err := c.Lock(ctx, key, time.Second)
		out <- lockResult{l, err}
	}()
	// Parked: its first attempt and the retry after its subscription have
	// reached every master (an attempt returns at quorum, so stragglers may
	// still be on their way to the others), and each has answered.
	require.Eventually(t, func() bool {
		for _, f := range fakes {
			if len(f.callsOf("acquire")) != 3 {
				return false
			}
		}
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		q := c.hub.queues[key]
		return q != nil && len(q.waiters) > 0 && !q.waiters[0].busy && allAnswered(fakes)
	}, 5*time.Second, 100*time.Microsecond, "the waiter never parked")
	return out
}

// await returns what out delivers, and fails the test if nothing comes
// within d.
func await(t *testing.T, out <-chan lockResult, d time.Duration, msg string) lockResult {
	t.Helper()
	select {
	case r := <-out:
		return r
	case <-time.After(d):
		t.Fatal(msg)
		return lockResult{}
	}
}

// allHold reports whether every one of fakes holds key for token.
func allHold(fakes []*fakeNode, key, token string) bool {
	for _, f := range fakes {
		if !f.holdsToken(key, token) {
			return false
		}
	}
	return true
}

// heldOnFakes returns a client over five fake masters, whose waiters
// retry only when woken, and a lock it holds on key "k".
func heldOnFakes(t *testing.T) (*Client, []*fakeNode, *Lock) {
	t.Helper()
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	a, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	return c, fakes, a
}

type lockResult struct {
	l   *Lock
	err error
}

func TestHandOver_PassesTheKeyWithoutFreeingIt(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	out := waitFor(t, context.Background(), c, fakes, "k")

	require.NoError(t, a.Release(context.Background()))
	r := <-out
	require.NoError(t, r.err)
	assert.Greater(t, r.l.Fence(), a.Fence())
	assert.NoError(t, a.Err())
	<-a.Done()
	for i, f := range fakes {
		assert.NotContains(t, f.callsOf("release"), a.Token(), "master %d: the old token was handed on, not deleted", i)
	}
	held := 0
	for _, f := range fakes {
		if f.holdsToken("k", r.l.Token()) {
			held++
		}
	}
	assert.GreaterOrEqual(t, held, 3)
	require.NoError(t, r.l.Release(context.Background()))
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond)
}

// A hand-over that fails leaves nothing of either token: the new one is
// rolled back, the old one released, and the waiter takes the lock itself.
func TestHandOver_FailureFallsBackToARelease(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	out := waitFor(t, context.Background(), c, fakes, "k")
	for _, f := range fakes[:3] {
		f.noFrom = true
	}
	require.NoError(t, a.Release(context.Background()))
	for _, f := range fakes[:3] {
		f.noFrom = false
	}
	r := <-out
	require.NoError(t, r.err, "the waiter takes the lock after the plain release")
	assert.Greater(t, r.l.Fence(), a.Fence())
	require.NoError(t, r.l.Release(context.Background()))
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond)
}

// A lock whose keys vanished from every master (flushed, or a master that
// restarted empty) is still handed to the waiter, who finds the key free,
// but its Release reports that it was no longer held.
func TestHandOver_OfALockNoMasterHeldIsReported(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	out := waitFor(t, context.Background(), c, fakes, "k")
	for _, f := range fakes {
		f.mu.Lock()
		delete(f.keys, "k")
		f.mu.Unlock()
	}

	err := a.Release(context.Background())
	require.ErrorIs(t, err, ErrLockNotHeld)
	assert.ErrorIs(t, a.Err(), ErrLockLost, "the loss is reported, not hidden")
	<-a.Done()
	r := <-out
	require.NoError(t, r.err, "the waiter has the lock all the same")
	assert.Greater(t, r.l.Fence(), a.Fence())
	require.NoError(t, r.l.Release(context.Background()))
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond)
}

// A waiter whose ctx ends while a hand-over to it is under way takes the
// outcome and gives the lock back: nothing is left held.
func TestHandOver_WaiterGoneMeanwhile(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	ctx, cancel := context.WithCancel(context.Background())
	out := waitFor(t, ctx, c, fakes, "k")
	gate := make(chan struct{})
	for _, f := range fakes {
		f.fromGate = gate
	}
	released := make(chan error, 1)
	go func() { released <- a.Release(context.Background()) }()
	require.Eventually(t, func() bool { return len(fakes[0].callsOf("acquire")) == 4 }, 5*time.Second, 100*time.Microsecond,
		"the hand-over reached master 0")
	cancel()
	time.Sleep(10 * time.Millisecond) // the waiter sees its ctx end while claimed
	close(gate)
	require.NoError(t, <-released)
	r := <-out
	assert.Nil(t, r.l)
	assert.ErrorIs(t, r.err, context.Canceled)
	assert.ErrorIs(t, r.err, ErrNotObtained)
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond,
		"the lock handed to a waiter that left is released")
}

// After maxHandovers in a row a release is a plain one, announced to every
// client's waiters.
func TestHandOver_StreakIsBounded(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	w := c.hub.join("k", time.Second, lockOptions{}, nil)
	defer w.leave(false)
	for i := range maxHandovers {
		require.Same(t, w, c.hub.claim("k"), "hand-over %d", i+1)
		c.hub.mu.Lock()
		w.claimed = false
		c.hub.mu.Unlock()
	}
	assert.Nil(t, c.hub.claim("k"), "one plain release after a streak")
	assert.Same(t, w, c.hub.claim("k"), "and hand-overs again")
	w.handed <- nil // the claim's outcome, as a failed hand-over gives it; leave takes it

	owner := c.hub.join("o", time.Second, lockOptions{owner: "x"}, nil)
	defer owner.leave(false)
	assert.Nil(t, c.hub.claim("o"), "reentrant waiters take the lock themselves")
}

// A goroutine that joins the line behind another waits for its turn and
// then for the release: coming first in line when the one before it got
// the lock, it makes no attempt against that lock, and the lock's release
// hands the key to it.
func TestHandOver_SecondInLineWaitsForTheRelease(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	first := waitFor(t, context.Background(), c, fakes, "k")
	second := make(chan lockResult, 1)
	go func() {
		l, err := c.Lock(context.Background(), "k", time.Second)
		second <- lockResult{l, err}
	}()
	require.Eventually(t, func() bool {
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		return len(c.hub.queues["k"].waiters) == 2
	}, 5*time.Second, 100*time.Microsecond, "the second goroutine never joined the line")
	acquires := func() (n int) {
		for _, f := range fakes {
			n += len(f.callsOf("acquire"))
		}
		return n
	}
	require.Equal(t, 15, acquires(), "the second goroutine joined the line without an attempt")

	require.NoError(t, a.Release(context.Background()))
	r1 := <-first
	require.NoError(t, r1.err)
	require.Eventually(t, func() bool { return acquires() >= 20 }, 5*time.Second, 100*time.Microsecond,
		"the hand-over reached every master")
	require.Never(t, func() bool { return acquires() > 20 }, 100*time.Millisecond, time.Millisecond,
		"an attempt beside the hand-over: the second in line tried against the lock the first got")

	require.NoError(t, r1.l.Release(context.Background()))
	r2 := <-second
	require.NoError(t, r2.err)
	assert.Greater(t, r2.l.Fence(), r1.l.Fence())
	for i, f := range fakes {
		assert.NotContains(t, f.callsOf("release"), r1.l.Token(), "master %d: the key was handed on, not released", i)
	}
	require.NoError(t, r2.l.Release(context.Background()))
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond)
}

// A hand-over that a master fails, while a quorum takes it, leaves nothing
// of the old token on that master: the old lock is released there.
func TestHandOver_MasterThatFailedItIsReleased(t *testing.T) {
	c, fakes, a := heldOnFakes(t)
	out := waitFor(t, context.Background(), c, fakes, "k")
	fakes[4].noFrom = true
	require.NoError(t, a.Release(context.Background()))
	r := <-out
	require.NoError(t, r.err)
	assert.Eventually(t, func() bool { return allHold(fakes[:4], "k", r.l.Token()) },
		2*time.Second, time.Millisecond, "masters 0 to 3 took the hand-over")
	assert.Eventually(t, func() bool { return !fakes[4].holdsToken("k", a.Token()) }, 2*time.Second, time.Millisecond,
		"master 4 still holds the old token after the hand-over")
	for i, f := range fakes[:4] {
		assert.NotContains(t, f.callsOf("release"), a.Token(), "master %d: the key was handed on, not released", i)
	}
	require.NoError(t, r.l.Release(context.Background()))
	require.NoError(t, c.Close())
	assert.Equal(t, 5, countEmpty(fakes, "k"))
}

// A master whose request of the lock is still out holds up only itself: the
// lock is handed over on the others at once, and on that master, once the
// request has returned without a reply (it may still land), nothing is
// handed over and the old lock is released, leaving its tombstone.
func TestHandOver_SlowMasterHoldsUpOnlyItself(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	fakes[4].setMode(hang) // answers only at its deadline, on the fake clock
	a, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err, "masters 0 to 3 are a quorum")
	require.Eventually(t, func() bool { return len(fakes[4].callsOf("acquire")) == 1 }, 2*time.Second, 100*time.Microsecond)
	fakes[4].setMode(healthy) // for the requests that follow
	out := waitFor(t, context.Background(), c, fakes, "k")
	// Half the node timeout (50 ms) later: the hand-over's requests have
	// time left when master 4's request of the old lock times out.
	clk.Advance(25 * time.Millisecond)

	released := make(chan error, 1)
	go func() { released <- a.Release(context.Background()) }()
	var r lockResult
	select {
	case r = <-out:
	case <-time.After(5 * time.Second):
		clk.Advance(time.Second) // let the Release end
		t.Fatal("the hand-over waited for master 4, whose request answers only when the clock moves")
	}
	require.NoError(t, <-released)
	require.NoError(t, r.err)
	_, returned := a.trail.allReturned(4)
	assert.False(t, returned, "the lock was handed over while master 4 still had its request")
	assert.Eventually(t, func() bool { return allHold(fakes[:4], "k", r.l.Token()) },
		2*time.Second, time.Millisecond, "masters 0 to 3 took the hand-over")

	clk.Advance(30 * time.Millisecond) // master 4's request of the old lock returns without a reply, and lands
	assert.Eventually(t, func() bool { return slices.Contains(fakes[4].callsOf("release"), a.Token()) },
		2*time.Second, time.Millisecond, "the old lock was not released on master 4")
	assert.False(t, fakes[4].holdsToken("k", a.Token()), "master 4 still holds the old token")
	assert.True(t, fakes[4].voidedToken(a.Token()), "master 4 has no tombstone for the old token's late request")
	assert.NotContains(t, fakes[4].callsOf("acquire"), r.l.Token(), "the hand-over was sent to master 4")

	// Nothing of the new lock went to master 4, so nothing of it can land
	// there: its own hand-over goes to master 4 again.
	before := make([]int, len(fakes))
	for i, f := range fakes {
		before[i] = len(f.callsOf("acquire"))
	}
	next := make(chan lockResult, 1)
	go func() {
		l, err := c.Lock(context.Background(), "k", time.Second)
		next <- lockResult{l, err}
	}()
	require.Eventually(t, func() bool { // parked, as waitFor has it
		for i, f := range fakes {
			if len(f.callsOf("acquire")) != before[i]+2 {
				return false
			}
		}
		c.hub.mu.Lock()
		defer c.hub.mu.Unlock()
		q := c.hub.queues["k"]
		return q != nil && len(q.waiters) > 0 && !q.waiters[0].busy && allAnswered(fakes)
	}, 5*time.Second, 100*time.Microsecond, "the second waiter never parked")
	require.NoError(t, r.l.Release(context.Background()))
	r2 := await(t, next, 5*time.Second, "the second hand-over did not happen")
	require.NoError(t, r2.err)
	// The hand-over returns at quorum: master 4's part may still be on its way.
	assert.Eventually(t, func() bool { return allHold(fakes, "k", r2.l.Token()) },
		2*time.Second, time.Millisecond, "every master took the second hand-over")
	assert.Contains(t, fakes[4].callsOf("acquire"), r2.l.Token(),
		"the second hand-over skipped master 4, where the lock it took over had sent nothing")
	require.NoError(t, r2.l.Release(context.Background()))
	require.NoError(t, c.Close())
	assert.Equal(t, 5, countEmpty(fakes, "k"))
}
