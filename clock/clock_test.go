package clock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

// waitLimit bounds every wait on the real clock; the box may be slow, but
// never this slow.
const waitLimit = 5 * time.Second

func TestReal_Now_CarriesMonotonicReading(t *testing.T) {
	now := clock.Real().Now()
	// A time with a monotonic reading prints it as "m=±...".
	assert.True(t, strings.Contains(now.String(), "m="), "Now() = %v has no monotonic reading", now)
	assert.WithinDuration(t, time.Now(), now, time.Minute)
}

func TestReal_Since_IsNonNegativeAndGrows(t *testing.T) {
	c := clock.Real()
	start := c.Now()
	first := c.Since(start)
	assert.GreaterOrEqual(t, first, time.Duration(0))
	time.Sleep(2 * time.Millisecond)
	assert.GreaterOrEqual(t, c.Since(start), 2*time.Millisecond)
}

func TestReal_Since_IgnoresWallClockPart(t *testing.T) {
	c := clock.Real()
	start := c.Now()
	// Round(0) strips the monotonic reading; Since must still work on the
	// wall clock and stay near zero.
	assert.Less(t, c.Since(start.Round(0)), time.Minute)
}

func TestReal_NewTimer_FiresOnce(t *testing.T) {
	c := clock.Real()
	tm := c.NewTimer(time.Millisecond)
	select {
	case v := <-tm.C():
		assert.False(t, v.IsZero())
	case <-time.After(waitLimit):
		t.Fatal("timer did not fire")
	}
	assert.False(t, tm.Stop(), "Stop after the value was received")
}

func TestReal_Timer_StopBeforeFiring(t *testing.T) {
	tm := clock.Real().NewTimer(time.Hour)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop(), "second Stop")
}

func TestReal_Timer_ResetRearms(t *testing.T) {
	tm := clock.Real().NewTimer(time.Hour)
	assert.True(t, tm.Reset(time.Millisecond), "Reset of an active timer")
	select {
	case <-tm.C():
	case <-time.After(waitLimit):
		t.Fatal("reset timer did not fire")
	}
}

func TestReal_WithTimeout_ExpiresWithDeadlineExceeded(t *testing.T) {
	c := clock.Real()
	before := time.Now()
	ctx, cancel := c.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, before.Add(time.Millisecond), dl, time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(waitLimit):
		t.Fatal("context did not expire")
	}
	assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
}

func TestReal_WithTimeout_CancelGivesCanceled(t *testing.T) {
	ctx, cancel := clock.Real().WithTimeout(context.Background(), time.Hour)
	cancel()
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.ErrorIs(t, context.Cause(ctx), context.Canceled)
}
