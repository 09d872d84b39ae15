package clock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// received returns the value waiting on tm's channel, without blocking.
func received(tm clock.Timer) (time.Time, bool) {
	select {
	case v := <-tm.C():
		return v, true
	default:
		return time.Time{}, false
	}
}

// isDone reports whether ctx is done, without blocking.
func isDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// waitTimers waits, within waitLimit, until f has exactly n parked timers.
func waitTimers(t *testing.T, f *clock.Fake, n int) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for f.Timers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("Timers() = %d, want %d", f.Timers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFake_Now_MovesOnlyOnAdvance(t *testing.T) {
	f := clock.NewFake(start)
	assert.Equal(t, start, f.Now())
	time.Sleep(time.Millisecond)
	assert.Equal(t, start, f.Now(), "the fake moved on its own")

	f.Advance(1500 * time.Millisecond)
	assert.Equal(t, start.Add(1500*time.Millisecond), f.Now())
	assert.Equal(t, 1500*time.Millisecond, f.Since(start))
}

func TestFake_Advance_FiresDueTimersAtTheirDeadlines(t *testing.T) {
	f := clock.NewFake(start)
	// Created out of order on purpose.
	t30 := f.NewTimer(30 * time.Millisecond)
	t10 := f.NewTimer(10 * time.Millisecond)
	t20 := f.NewTimer(20 * time.Millisecond)
	require.Equal(t, 3, f.Timers())

	f.Advance(12 * time.Millisecond)
	v, ok := received(t10)
	require.True(t, ok, "10ms timer did not fire after 12ms")
	assert.Equal(t, start.Add(10*time.Millisecond), v, "a timer delivers its own deadline")
	_, ok = received(t20)
	assert.False(t, ok, "20ms timer fired after 12ms")
	_, ok = received(t30)
	assert.False(t, ok, "30ms timer fired after 12ms")
	assert.Equal(t, 2, f.Timers())
	assert.Equal(t, start.Add(12*time.Millisecond), f.Now())

	f.Advance(time.Hour)
	for _, c := range []struct {
		tm clock.Timer
		d  time.Duration
	}{{t20, 20 * time.Millisecond}, {t30, 30 * time.Millisecond}} {
		v, ok := received(c.tm)
		if assert.True(t, ok, "%v timer did not fire", c.d) {
			assert.Equal(t, start.Add(c.d), v)
		}
	}
	assert.Zero(t, f.Timers())
	assert.Equal(t, start.Add(12*time.Millisecond+time.Hour), f.Now())
}

func TestFake_Advance_FiresTimersAndContextsFromOneQueue(t *testing.T) {
	f := clock.NewFake(start)
	// Timers and contexts share one queue: a partial Advance fires exactly
	// those due, whichever kind they are.
	ctxA, cancelA := f.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelA()
	tmB := f.NewTimer(20 * time.Millisecond)
	ctxC, cancelC := f.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancelC()

	f.Advance(25 * time.Millisecond)
	assert.True(t, isDone(ctxA))
	v, ok := received(tmB)
	require.True(t, ok)
	assert.Equal(t, start.Add(20*time.Millisecond), v)
	assert.False(t, isDone(ctxC), "30ms context done after 25ms")

	f.Advance(5 * time.Millisecond)
	assert.True(t, isDone(ctxC))
}

func TestFake_Advance_EqualDeadlinesAllFire(t *testing.T) {
	f := clock.NewFake(start)
	timers := make([]clock.Timer, 5)
	for i := range timers {
		timers[i] = f.NewTimer(time.Second)
	}
	f.Advance(time.Second)
	for i, tm := range timers {
		v, ok := received(tm)
		if assert.True(t, ok, "timer %d", i) {
			assert.Equal(t, start.Add(time.Second), v)
		}
	}
	assert.Zero(t, f.Timers())
}

func TestFake_BlockUntil_ReturnsWhenEnoughTimersPark(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 3 {
			time.Sleep(time.Millisecond)
			f.NewTimer(time.Duration(i+1) * time.Second)
		}
	}()
	require.NoError(t, f.BlockUntil(ctx, 3))
	assert.GreaterOrEqual(t, f.Timers(), 3)
	wg.Wait()
}

func TestFake_BlockUntil_CountsContexts(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	done := make(chan error, 1)
	go func() { done <- f.BlockUntil(ctx, 2) }()
	c1, cancel1 := f.WithTimeout(context.Background(), time.Second)
	defer cancel1()
	f.NewTimer(time.Second)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(waitLimit):
		t.Fatal("BlockUntil did not return")
	}
	assert.False(t, isDone(c1))
}

func TestFake_BlockUntil_ReturnsAtOnceWhenAlreadyParked(t *testing.T) {
	f := clock.NewFake(start)
	f.NewTimer(time.Second)
	// A done ctx proves no waiting happened: the count is checked first.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, f.BlockUntil(ctx, 1))
	assert.NoError(t, f.BlockUntil(ctx, 0))
}

func TestFake_BlockUntil_HonoursCtx(t *testing.T) {
	f := clock.NewFake(start)

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		begin := time.Now()
		err := f.BlockUntil(ctx, 1)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(begin), waitLimit)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, f.BlockUntil(ctx, 1), context.Canceled)
	})
}

func TestFake_BlockUntil_StoppedTimersDoNotCount(t *testing.T) {
	f := clock.NewFake(start)
	tm := f.NewTimer(time.Second)
	tm.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, f.BlockUntil(ctx, 1), context.DeadlineExceeded)
}

func TestFake_ConcurrentUse_IsRaceFree(t *testing.T) {
	f := clock.NewFake(start)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				switch (w + i) % 4 {
				case 0:
					tm := f.NewTimer(time.Duration(i) * time.Microsecond)
					tm.Reset(time.Microsecond)
					tm.Stop()
				case 1:
					ctx, cancel := f.WithTimeout(context.Background(), time.Duration(i)*time.Microsecond)
					_ = ctx.Err()
					cancel()
				case 2:
					f.Advance(time.Microsecond)
				case 3:
					_ = f.Since(start)
					_ = f.Timers()
				}
			}
		}()
	}
	wg.Wait()
}

func TestFake_Advance_NegativeNeverMovesBack(t *testing.T) {
	f := clock.NewFake(start)
	f.Advance(time.Second)
	f.Advance(-time.Hour)
	assert.Equal(t, start.Add(time.Second), f.Now())
	assert.Equal(t, time.Second, f.Since(start))
}

func TestFake_Advance_ConcurrentCallsAddUp(t *testing.T) {
	f := clock.NewFake(start)
	const workers, steps = 2, 200
	// Timers spread over the whole range make every Advance release the
	// lock while it fires them.
	for i := range workers * steps {
		f.NewTimer(time.Duration(i+1) * time.Millisecond)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range steps {
				f.Advance(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, start.Add(workers*steps*time.Millisecond), f.Now())
	assert.Zero(t, f.Timers())
}
