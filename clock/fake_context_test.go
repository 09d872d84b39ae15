package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/clock"
)

func TestFake_WithTimeout_ExpiresOnAdvance(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()

	dl, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Second), dl)
	assert.NoError(t, ctx.Err())
	assert.NoError(t, context.Cause(ctx))
	assert.False(t, isDone(ctx))
	assert.Equal(t, 1, f.Timers())

	f.Advance(time.Second - time.Nanosecond)
	assert.False(t, isDone(ctx), "done before its deadline")
	assert.NoError(t, ctx.Err())

	f.Advance(time.Nanosecond)
	assert.True(t, isDone(ctx), "not done at its deadline")
	assert.Equal(t, context.DeadlineExceeded, ctx.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(ctx))
	assert.Zero(t, f.Timers())

	cancel()
	assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "cancel after expiry changed Err")
	assert.Equal(t, context.DeadlineExceeded, context.Cause(ctx))
}

func TestFake_WithTimeout_CancelBeforeDeadline(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	cancel()

	assert.True(t, isDone(ctx))
	assert.Equal(t, context.Canceled, ctx.Err())
	assert.Equal(t, context.Canceled, context.Cause(ctx))
	assert.Zero(t, f.Timers(), "cancel left the timer parked")

	f.Advance(time.Hour)
	assert.Equal(t, context.Canceled, ctx.Err(), "Advance changed the error of a cancelled context")
	cancel() // idempotent
}

func TestFake_WithTimeout_DerivedContextCancelledAloneLeavesParent(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	cancelChild()
	assert.Equal(t, context.Canceled, child.Err())
	assert.NoError(t, ctx.Err())
	assert.Equal(t, 1, f.Timers())
}

func TestFake_WithTimeout_KeepsParentValues(t *testing.T) {
	type key struct{}
	f := clock.NewFake(start)
	parent := context.WithValue(context.Background(), key{}, "v")
	ctx, cancel := f.WithTimeout(parent, time.Second)
	defer cancel()
	assert.Equal(t, "v", ctx.Value(key{}))
	f.Advance(time.Second)
	assert.Equal(t, "v", ctx.Value(key{}))
}

func TestFake_WithTimeout_AfterFuncRuns(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ran := make(chan struct{})
	context.AfterFunc(ctx, func() { close(ran) })
	f.Advance(time.Second)
	select {
	case <-ran:
	case <-time.After(waitLimit):
		t.Fatal("context.AfterFunc did not run after expiry")
	}
}

func TestFake_WithTimeout_NonPositiveIsDoneAtOnce(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		t.Run(d.String(), func(t *testing.T) {
			f := clock.NewFake(start)
			for i := range 50 {
				ctx, cancel := f.WithTimeout(context.Background(), d)
				// As context.WithTimeout: done before it is returned.
				require.Equal(t, context.DeadlineExceeded, ctx.Err(), "try %d", i)
				dl, ok := ctx.Deadline()
				require.True(t, ok)
				assert.Equal(t, start.Add(d), dl)
				cancel()
			}
			assert.Zero(t, f.Timers())
		})
	}
}
