package redlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

func TestExtend_MovesUntil(t *testing.T) {
	c, _, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	before := l.Until()
	clk.Advance(500 * time.Millisecond)
	require.NoError(t, l.Extend(context.Background(), 2*time.Second))
	// before = t0 + 1s - 12ms; now Until = t0 + 500ms + 2s - 22ms.
	assert.Equal(t, before.Add(1490*time.Millisecond), l.Until())
	assert.Equal(t, 2*time.Second, l.TTL())
}

func TestExtend_WithoutQuorumLosesTheLock(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	for _, f := range fakes[:3] {
		f.setMode(broken)
	}
	err = l.Extend(context.Background(), time.Second)
	require.ErrorIs(t, err, ErrLockLost)
	var ne *NodeError
	assert.ErrorAs(t, err, &ne, "the failing masters are named")
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	<-l.Done()
	assert.ErrorIs(t, l.Extend(context.Background(), time.Second), ErrLockLost)
	assert.ErrorIs(t, l.Release(context.Background()), ErrLockLost, "Release still cleans up, and says the lock was lost")
}

func TestRelease_WhenExpiredReportsNotHeldAndLoss(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countEmpty(fakes, "k") == 0 && allAnswered(fakes) }, 2*time.Second, 100*time.Microsecond)
	clk.Advance(2 * time.Second)
	assert.LessOrEqual(t, l.Validity(), time.Duration(0))
	require.ErrorIs(t, l.Release(context.Background()), ErrLockNotHeld)
	assert.ErrorIs(t, l.Err(), ErrLockLost, "holding past the TTL is a loss")
}

func TestRelease_TooFewMastersReachable(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	for _, f := range fakes[:3] {
		f.setMode(broken)
	}
	err = l.Release(context.Background())
	require.Error(t, err)
	var ne *NodeError
	require.ErrorAs(t, err, &ne)
	assert.NotErrorIs(t, err, ErrLockNotHeld)
	assert.NoError(t, l.Err(), "the lock stays as it was; Release may be tried again")
	for _, f := range fakes[:3] {
		f.setMode(healthy)
	}
	require.NoError(t, l.Release(context.Background()))
}

// parked waits until the watchdog's timer is the only one on the fake clock
// and every fake master has answered: the watchdog sleeps until its next tick.
func parked(t *testing.T, clk *clock.Fake, fakes []*fakeNode) {
	t.Helper()
	quiet := func() bool { return clk.Timers() == 1 && allAnswered(fakes) }
	require.Eventually(t, func() bool {
		if !quiet() {
			return false
		}
		time.Sleep(20 * time.Millisecond) // and still so a moment later, answers taken by the fan-out
		return quiet()
	}, 5*time.Second, 100*time.Microsecond)
}

func TestAutoExtend_KeepsTheLockPastItsTTL(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	for range 10 { // 10 s of fake time: three TTLs
		parked(t, clk, fakes)
		clk.Advance(time.Second)
		require.Eventually(t, func() bool { return l.Validity() > 2*time.Second }, 2*time.Second, time.Millisecond)
	}
	assert.NoError(t, l.Err())
	assert.GreaterOrEqual(t, len(fakes[0].callsOf("extend")), 9)
	require.NoError(t, l.Release(context.Background()))
	assert.NoError(t, l.Err())
}

// The masters stop answering: the watchdog retries and declares the loss
// before the validity window ends, not after.
func TestAutoExtend_LossIsNoticedBeforeUntil(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	until := l.Until()
	for _, f := range fakes[:3] {
		f.setMode(broken)
	}
	done := make(chan struct{})
	go func() { <-l.Done(); close(done) }()
	drive(t, clk, fakes, 10*time.Millisecond, done)
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	assert.True(t, clk.Now().Before(until), "loss noticed at %v, after the window ended at %v", clk.Now(), until)
	assert.Greater(t, len(fakes[0].callsOf("extend")), 3, "the watchdog retried within the validity")
}

// A quorum saying the token is gone ends the lock at once.
func TestAutoExtend_KeysGoneIsALossAtOnce(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	for _, f := range fakes {
		f.mu.Lock()
		delete(f.keys, "k")
		f.mu.Unlock()
	}
	parked(t, clk, fakes)
	clk.Advance(time.Second)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("loss not reported")
	}
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	// One round decided it: no master was asked twice.
	asked := 0
	for _, f := range fakes {
		n := len(f.callsOf("extend"))
		assert.LessOrEqual(t, n, 1)
		asked += n
	}
	assert.GreaterOrEqual(t, asked, 3)
}

// Transient failures, of a minority or of a majority for a moment, do not
// lose a lock that a quorum still holds: the watchdog retries.
func TestAutoExtend_TransientFailuresDoNotLoseTheLock(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	extends := func() int { return len(fakes[4].callsOf("extend")) }
	// tick advances the clock by d and waits until the watchdog made its
	// n-th extension round and every master answered.
	tick := func(d time.Duration, n int) {
		t.Helper()
		parked(t, clk, fakes)
		clk.Advance(d)
		require.Eventually(t, func() bool { return extends() >= n && allAnswered(fakes) }, 5*time.Second, 100*time.Microsecond)
		time.Sleep(20 * time.Millisecond) // let the watchdog read the answers
	}

	// A minority down: the extension still reaches a quorum.
	fakes[0].setMode(broken)
	fakes[1].setMode(broken)
	tick(time.Second, 1)
	require.NoError(t, l.Err())

	// A majority down when the watchdog fires: the round fails...
	fakes[2].setMode(broken)
	tick(time.Second, 2)
	require.NoError(t, l.Err(), "one failed round lost the lock")
	// ...and the retry, with the masters back, succeeds.
	for _, f := range fakes {
		f.setMode(healthy)
	}
	tick(100*time.Millisecond, 3)
	require.NoError(t, l.Err())
	assert.Greater(t, l.Validity(), 2500*time.Millisecond, "extended from the retry")
	require.NoError(t, l.Release(context.Background()))
}

func TestDo_RunsAndReleases(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	want := errors.New("fn failed")
	ran := false
	_, ok := FromContext(context.Background())
	assert.False(t, ok, "no lock outside Do")
	err := c.Do(context.Background(), "k", time.Second, func(ctx context.Context) error {
		ran = true
		l, ok := FromContext(ctx)
		require.True(t, ok, "fn finds its lock")
		assert.Equal(t, "k", l.Key())
		assert.Positive(t, l.Fence())
		assert.Positive(t, l.Validity())
		assert.GreaterOrEqual(t, len(fakes)-countEmpty(fakes, "k"), 2, "held on a quorum while fn runs")
		return want
	})
	assert.True(t, ran)
	assert.ErrorIs(t, err, want)
	assert.NotErrorIs(t, err, ErrLockLost)
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 3 }, 2*time.Second, time.Millisecond)
}

func countEmpty(fakes []*fakeNode, key string) int {
	n := 0
	for _, f := range fakes {
		if f.holder(key) == "" {
			n++
		}
	}
	return n
}

func TestDo_LossCancelsFn(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	var cause error
	var lostAt time.Time
	var until time.Time
	done := make(chan struct{})
	go func() {
		defer close(done)
		err := c.Do(context.Background(), "k", 3*time.Second, func(ctx context.Context) error {
			for _, f := range fakes[:3] {
				f.setMode(broken)
			}
			until = clk.Now().Add(3*time.Second - 32*time.Millisecond)
			<-ctx.Done()
			cause, lostAt = context.Cause(ctx), clk.Now()
			return ctx.Err()
		})
		assert.ErrorIs(t, err, ErrLockLost)
		assert.ErrorIs(t, err, context.Canceled, "fn's own error is kept")
	}()
	drive(t, clk, fakes, 10*time.Millisecond, done)
	assert.Equal(t, ErrLockLost, cause)
	assert.True(t, lostAt.Before(until), "fn learned of the loss at %v, after the window ended at %v", lostAt, until)
}

// clocksBehind sets every fake master's clock back to 1970, as far behind
// the client's as can be, so that each cuts the client's proposals to
// nothing and counts on its own: the tests of counters that disagree.
func clocksBehind(fakes []*fakeNode) {
	for _, f := range fakes {
		f.behind = time.Duration(f.clk.Now().UnixNano())
	}
}

// TestFence_ProposalRealignsDriftedCounters: counters that drifted apart
// take the attempt's proposal, the same on every master, so the quorum
// agrees and no fence is raised; the next holder's fence is larger.
func TestFence_ProposalRealignsDriftedCounters(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	fakes[0].floor, fakes[1].floor, fakes[2].floor = 4, 4, 8
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Equal(t, clk.Now().Add(-proposalLag).UnixMilli()*1024, l.Fence(), "the proposal")
	for i, f := range fakes {
		assert.Empty(t, f.callsOf("fence"), "master %d: no raise", i)
	}
	require.NoError(t, l.Release(context.Background()))
	l2, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Greater(t, l2.Fence(), l.Fence())
}

// TestFence_RaisedOnLaggingMasters sets counters apart, so that the quorum
// disagrees, and checks that the fence is the largest, that the laggards are
// raised before TryLock returns, and that the next holder's fence is larger
// whichever quorum it gets.
func TestFence_RaisedOnLaggingMasters(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, foreign, foreign}, WithRestartGuard(0))
	clocksBehind(fakes)
	fakes[0].floor, fakes[1].floor, fakes[2].floor = 4, 4, 8
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(9), l.Fence())
	assert.Len(t, fakes[0].callsOf("fence"), 1)
	assert.Len(t, fakes[1].callsOf("fence"), 1)
	assert.Empty(t, fakes[2].callsOf("fence"), "already at the fence")
	require.NoError(t, l.Release(context.Background()))
	// Release returns at a quorum of answers; the next attempt must find
	// the key free on masters 0 and 1, or its split vote would wait on the
	// fake clock.
	require.Eventually(t, func() bool {
		for _, f := range fakes[:3] {
			if len(f.callsOf("release")) != 1 {
				return false
			}
		}
		return allAnswered(fakes)
	}, 2*time.Second, time.Millisecond, "every holding master's release returns")

	// The next quorum leaves out master 2, which alone had counted to 9.
	fakes[2].setMode(foreign)
	fakes[3].setMode(healthy)
	l2, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Greater(t, l2.Fence(), l.Fence())
}

// TestFence_ReleaseRaisesMastersThatGrantedLate: masters that granted after
// the quorum had answered, below the fence, are raised by the release
// itself, in the same script, with no raise of their own.
func TestFence_ReleaseRaisesMastersThatGrantedLate(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	clocksBehind(fakes)
	for _, f := range fakes[:3] {
		f.floor = 8
	}
	for _, f := range fakes[3:] {
		f.floor = 2
		f.answerAfter = fakes[:3] // the quorum answers first, at 9
	}
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(9), l.Fence())
	require.NoError(t, l.Release(context.Background()))
	require.Eventually(t, func() bool {
		for _, f := range fakes {
			if len(f.callsOf("release")) != 1 {
				return false
			}
		}
		return allAnswered(fakes)
	}, 2*time.Second, time.Millisecond, "every master's release returns")
	for i, f := range fakes {
		assert.Empty(t, f.callsOf("fence"), "master %d: no raise of its own", i)
		f.mu.Lock()
		assert.Equal(t, int64(9), f.floor, "master %d: at the fence", i)
		f.mu.Unlock()
	}
}

func TestFence_RaiseFailureFailsTheAttempt(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy, foreign, foreign}, WithRestartGuard(0))
	clocksBehind(fakes)
	fakes[0].floor, fakes[1].floor, fakes[2].floor = 4, 4, 8
	fakes[0].noRaise, fakes[1].noRaise = true, true
	_, err := c.TryLock(context.Background(), "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	assert.Contains(t, err.Error(), "fence 9")
	require.NoError(t, c.Close())
	for i, f := range fakes[:3] {
		assert.Empty(t, f.holder("k"), "master %d rolled back", i)
	}
}

// TestFence_StrictlyIncreasingUnderShiftingQuorums takes the lock thousands
// of times from two clients while a random minority of masters refuses or
// fails each time, and checks that fences only grow.
func TestFence_StrictlyIncreasingUnderShiftingQuorums(t *testing.T) {
	a, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	clocksBehind(fakes[:3]) // two masters take proposals, three do not
	b, err := build(5, []Option{WithClock(a.o.clock), WithLogger(quiet()), WithRestartGuard(0)})
	require.NoError(t, err)
	nodes := make([]node, 5)
	for i, f := range fakes {
		nodes[i] = f
	}
	b.attach(nodes)
	defer b.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	var last int64
	raised := 0
	for i := range 3000 {
		for _, f := range fakes {
			f.setMode(healthy)
		}
		for _, j := range rng.Perm(5)[:rng.IntN(3)] {
			f := fakes[j]
			if rng.IntN(2) == 0 {
				f.setMode(broken)
			} else {
				f.mu.Lock()
				f.floor += int64(rng.IntN(3)) // a failed attempt elsewhere moved it on
				f.mu.Unlock()
			}
		}
		c := a
		if i%2 == 1 {
			c = b
		}
		l, err := c.TryLock(context.Background(), "k", time.Second)
		require.NoError(t, err, "attempt %d", i)
		require.Greater(t, l.Fence(), last, "attempt %d", i)
		last = l.Fence()
		for _, f := range fakes {
			f.setMode(healthy)
		}
		require.NoError(t, l.Release(context.Background()))
		// Every master has seen this round's acquire and answered all it will;
		// then time passes, so that what a late delete missed expires, as it would.
		require.Eventually(t, func() bool {
			for _, f := range fakes {
				if len(f.callsOf("acquire")) != i+1 {
					return false
				}
			}
			return allAnswered(fakes)
		}, 2*time.Second, 50*time.Microsecond, "round %d", i)
		clk.Advance(2 * time.Second)
	}
	for _, f := range fakes {
		raised += len(f.callsOf("fence"))
	}
	assert.Positive(t, raised, "the lagging counters were raised at least once")
}

func TestReentrant_SameOwnerNests(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	ctx := context.Background()
	outer, err := c.TryLock(ctx, "k", time.Second, WithOwner("job-7"))
	require.NoError(t, err)
	inner, err := c.TryLock(ctx, "k", 500*time.Millisecond, WithOwner("job-7"))
	require.NoError(t, err, "the same owner enters again at once")
	assert.GreaterOrEqual(t, inner.Fence(), outer.Fence())

	_, err = c.TryLock(ctx, "k", time.Second, WithOwner("job-8"))
	assert.ErrorIs(t, err, ErrNotObtained, "another owner")
	_, err = c.TryLock(ctx, "k", time.Second)
	assert.ErrorIs(t, err, ErrNotObtained, "a plain lock")

	require.NoError(t, inner.Release(ctx))
	assert.Equal(t, "owner:job-7", fakes[0].holder("k"), "still held by the outer hold")
	require.NoError(t, outer.Release(ctx))
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 3 }, 2*time.Second, time.Millisecond)
}

func TestReentrant_PlainLockBlocksOwners(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(context.Background(), "k", time.Second, WithOwner("job"))
	assert.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, l.Release(context.Background()))
}

// Release returns at quorum. The deletes still under way must not depend on
// the caller's ctx, which a deferred cancel ends as soon as Release returns.
func TestRelease_StragglersOutliveTheCallersContext(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countEmpty(fakes, "k") == 0 }, 2*time.Second, time.Millisecond)
	gate := make(chan struct{})
	fakes[3].gate, fakes[4].gate = gate, gate
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, l.Release(ctx))
	cancel()
	close(gate)
	assert.Eventually(t, func() bool { return countEmpty(fakes, "k") == 5 }, 2*time.Second, time.Millisecond,
		"the held-back masters keep the key")
}

// Masters that lose the key (they restarted empty, say) are taken back after
// an extension proves a quorum held the lock throughout, so the lock keeps
// every master it can: losing two, then two others, it survives.
func TestAutoExtend_TakesBackMastersThatLostTheKey(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countEmpty(fakes, "k") == 0 }, 2*time.Second, time.Millisecond)
	forget := func(fs ...*fakeNode) {
		for _, f := range fs {
			f.mu.Lock()
			delete(f.keys, "k")
			f.mu.Unlock()
		}
	}
	forget(fakes[3], fakes[4])
	parked(t, clk, fakes)
	clk.Advance(time.Second)
	require.Eventually(t, func() bool { return fakes[3].holdsToken("k", l.Token()) && fakes[4].holdsToken("k", l.Token()) },
		2*time.Second, time.Millisecond, "masters 3 and 4 taken back")
	forget(fakes[0], fakes[1])
	parked(t, clk, fakes)
	clk.Advance(time.Second)
	parked(t, clk, fakes)
	require.NoError(t, l.Err(), "2, 3 and 4 hold the lock")
	assert.Greater(t, l.Validity(), 2500*time.Millisecond)
	require.NoError(t, l.Release(context.Background()))
}

// An extension that fails takes nothing back: a majority without the key
// means another may have held the lock, and the loss is final.
func TestAutoExtend_FailedRoundTakesNothingBack(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second, WithAutoExtend())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countEmpty(fakes, "k") == 0 }, 2*time.Second, time.Millisecond)
	for _, f := range fakes[:3] {
		f.mu.Lock()
		delete(f.keys, "k")
		f.mu.Unlock()
	}
	parked(t, clk, fakes)
	clk.Advance(time.Second)
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("loss not reported")
	}
	assert.ErrorIs(t, l.Err(), ErrLockLost)
	require.NoError(t, c.Close())
	assert.Equal(t, 3, countEmpty(fakes, "k"), "the masters without the key stay without it")
}
