package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

// Close beside work in flight never panics, and what starts after it is
// refused with ErrClosed. Goroutines take and release locks in a loop while
// Close runs at a random moment among them, many times over.
func TestClose_BesideWorkInFlight_NeverPanics(t *testing.T) {
	for round := range 40 {
		c, err := build(5, []Option{WithLogger(quiet()), WithRestartGuard(0), WithNodeTimeout(5 * time.Millisecond)})
		require.NoError(t, err)
		fakes := make([]*fakeNode, 5)
		nodes := make([]node, 5)
		for i := range nodes {
			fakes[i] = newFakeNode(fmt.Sprintf("fake%d", i), clock.Real(), healthy)
			nodes[i] = fakes[i]
		}
		fakes[4].setMode(hang) // a straggler in every fan-out
		c.attach(nodes)

		var wg sync.WaitGroup
		stop := make(chan struct{})
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := fmt.Sprintf("k%d", g)
				for range 1000 {
					select {
					case <-stop:
						return
					default:
					}
					l, err := c.TryLock(context.Background(), key, time.Second, WithAutoExtend())
					if errors.Is(err, ErrClosed) {
						return
					}
					if err == nil {
						l.Release(context.Background())
					}
				}
			}()
		}
		time.Sleep(time.Duration(round%8) * time.Millisecond)
		require.NotPanics(t, func() { c.Close() })
		_, err = c.TryLock(context.Background(), "after", time.Second)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = c.Inspect(context.Background(), "after")
		assert.ErrorIs(t, err, ErrClosed)
		close(stop)
		wg.Wait()
	}
}

// An Extend that shortens the TTL re-arms the watchdog: the lock is
// extended on the new TTL's schedule, and never looks held past Until.
func TestAutoExtend_FollowsAShorterTTL(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 6*time.Second, WithAutoExtend())
	require.NoError(t, err)
	require.NoError(t, l.Extend(context.Background(), 500*time.Millisecond))
	for range 40 { // 2 s of fake time: four of the new TTLs, a third of the old one
		parked(t, clk, fakes)
		clk.Advance(50 * time.Millisecond)
		require.Eventually(t, func() bool { return l.Validity() > 0 && l.Err() == nil }, 2*time.Second, time.Millisecond,
			"the lock is past its validity at %v (until %v) and no loss was reported", clk.Now(), l.Until())
	}
	assert.Equal(t, 500*time.Millisecond, l.TTL())
	require.NoError(t, l.Release(context.Background()))
}

// Do's function shortens its lock's TTL through FromContext: the same.
func TestDo_ExtendInsideFollowsTheShorterTTL(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	done := make(chan error, 1)
	go func() {
		done <- c.Do(context.Background(), "k", 6*time.Second, func(ctx context.Context) error {
			l, _ := FromContext(ctx)
			if err := l.Extend(ctx, 500*time.Millisecond); err != nil {
				return err
			}
			for range 40 {
				parked(t, clk, fakes)
				clk.Advance(50 * time.Millisecond)
				deadline := time.Now().Add(2 * time.Second)
				for l.Validity() <= 0 && ctx.Err() == nil && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				if l.Validity() <= 0 {
					return fmt.Errorf("past its validity at %v, until %v, ctx %v", clk.Now(), l.Until(), ctx.Err())
				}
			}
			return nil
		})
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Do did not return")
	}
}

// An acquisition that used up much of its TTL gets its first extension at
// once, not at a tick counted from when it was handed out, which would
// come after the validity ended. The lock here is handed to the watchdog
// 2.3 s into a 3 s TTL, as after split-vote rounds and a fence round on
// slow masters.
func TestAutoExtend_SlowAcquisitionIsExtendedInTime(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second)
	require.NoError(t, err)
	clk.Advance(2300 * time.Millisecond)
	require.Less(t, l.Validity(), time.Second, "the acquisition took most of the TTL")
	l.stop, l.ended, l.rearm = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	c.spawn(l.watch)
	for range 30 { // 3 s of fake time
		parked(t, clk, fakes)
		clk.Advance(100 * time.Millisecond)
		require.Eventually(t, func() bool { return l.Validity() > 0 }, 2*time.Second, time.Millisecond,
			"past the validity at %v, until %v", clk.Now(), l.Until())
	}
	require.NoError(t, l.Err(), "the lock was declared lost")
	require.NoError(t, l.Release(context.Background()))
}

// A retake still on its way when Release is called never puts the released
// token back: Release waits for it, and as it got no reply, leaves the
// token's tombstone, which turns away any copy still in the network.
func TestRelease_IsOrderedAfterARetake(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	l, err := c.TryLock(context.Background(), "k", 3*time.Second)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countEmpty(fakes, "k") == 0 }, 2*time.Second, time.Millisecond)
	fakes[4].mu.Lock()
	delete(fakes[4].keys, "k") // master 4 lost the key: the extension retakes it
	fakes[4].mu.Unlock()
	fakes[4].setMode(hang) // the retake answers only at its deadline, and lands
	require.NoError(t, l.Extend(context.Background(), 3*time.Second))

	// The retake's deadline is on the fake clock: drive it while Release
	// and then Close, which waits for every retake and delete, run.
	done := make(chan struct{})
	var rerr error
	go func() {
		defer close(done)
		rerr = l.Release(context.Background())
		c.Close()
	}()
	drive(t, clk, fakes, 10*time.Millisecond, done)
	require.NoError(t, rerr)
	assert.Equal(t, 5, countEmpty(fakes, "k"), "a master holds the released token again")
	fakes[4].mu.Lock()
	voided := fakes[4].voided[l.Token()]
	fakes[4].mu.Unlock()
	assert.True(t, voided, "the master whose retake got no reply keeps the token's tombstone")
}

// A roll-back leaves a tombstone whether or not it found its token: an
// acquire of the same attempt that arrives afterwards cannot land.
func TestRollback_LeavesATombstoneWhereTheTokenHeld(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, foreign, foreign, foreign}, WithRestartGuard(0))
	_, err := c.TryLock(context.Background(), "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, c.Close())
	for _, f := range fakes[:2] {
		f.mu.Lock()
		var voided []string
		for tok := range f.voided {
			voided = append(voided, tok)
		}
		f.mu.Unlock()
		require.Len(t, voided, 1, "%s granted, was rolled back, and keeps a tombstone", f.name)
		g := f.apply(request{key: "k", token: voided[0], ttl: time.Second})
		assert.False(t, g.OK, "%s: a late acquire of the rolled-back attempt landed", f.name)
	}
}
