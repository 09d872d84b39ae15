package clock_test

import (
	"context"
	"errors"
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

func TestFake_WithTimeout_DerivedContextsSeeDeadlineExceeded(t *testing.T) {
	f := clock.NewFake(start)
	ctx, cancel := f.WithTimeout(context.Background(), time.Second)
	defer cancel()

	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	grandchild, cancelGrandchild := context.WithTimeout(child, time.Hour)
	defer cancelGrandchild()
	type key struct{}
	valued := context.WithValue(ctx, key{}, 1)

	f.Advance(time.Second)
	// As with context.WithTimeout: cancellation reaches derived contexts
	// before Advance returns, with the same error.
	for name, c := range map[string]context.Context{"child": child, "grandchild": grandchild, "value": valued} {
		assert.True(t, isDone(c), "%s not done", name)
		assert.Equal(t, context.DeadlineExceeded, c.Err(), name)
		assert.Equal(t, context.DeadlineExceeded, context.Cause(c), name)
	}

	late, cancelLate := context.WithCancel(ctx)
	defer cancelLate()
	assert.Equal(t, context.DeadlineExceeded, late.Err(), "child made after expiry")
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

func TestFake_WithTimeout_ParentCancelled(t *testing.T) {
	f := clock.NewFake(start)
	errBoom := errors.New("boom")
	parent, cancelParent := context.WithCancelCause(context.Background())
	ctx, cancel := f.WithTimeout(parent, time.Second)
	defer cancel()
	child, cancelChild := context.WithCancel(ctx)
	defer cancelChild()

	cancelParent(errBoom)
	assert.True(t, isDone(ctx), "parent cancel did not reach the context")
	assert.Equal(t, context.Canceled, ctx.Err())
	assert.Equal(t, errBoom, context.Cause(ctx))
	select {
	case <-child.Done():
	case <-time.After(waitLimit):
		t.Fatal("parent cancel did not reach the derived context")
	}
	assert.Equal(t, context.Canceled, child.Err())
	assert.Equal(t, errBoom, context.Cause(child))
	// A context that is done waits for nothing: its timer must unpark.
	waitTimers(t, f, 0)

	f.Advance(time.Hour)
	assert.Equal(t, context.Canceled, ctx.Err(), "Advance overwrote the parent's error")
	assert.Equal(t, errBoom, context.Cause(ctx))
}

func TestFake_WithTimeout_ParentAlreadyDone(t *testing.T) {
	f := clock.NewFake(start)
	parent, cancelParent := context.WithCancel(context.Background())
	cancelParent()
	ctx, cancel := f.WithTimeout(parent, time.Second)
	defer cancel()
	assert.Equal(t, context.Canceled, ctx.Err())
	assert.Zero(t, f.Timers())
}

func TestFake_WithTimeout_DeadlineIsTheEarlierOfParentAndOwn(t *testing.T) {
	f := clock.NewFake(start)
	outer, cancelOuter := f.WithTimeout(context.Background(), time.Second)
	defer cancelOuter()

	t.Run("parent earlier", func(t *testing.T) {
		inner, cancel := f.WithTimeout(outer, time.Hour)
		defer cancel()
		dl, ok := inner.Deadline()
		require.True(t, ok)
		assert.Equal(t, start.Add(time.Second), dl, "as context.WithDeadline: never later than the parent's")
	})
	t.Run("own earlier", func(t *testing.T) {
		inner, cancel := f.WithTimeout(outer, time.Millisecond)
		defer cancel()
		dl, ok := inner.Deadline()
		require.True(t, ok)
		assert.Equal(t, start.Add(time.Millisecond), dl)
	})
}

func TestFake_WithTimeout_NestedExpiryPropagates(t *testing.T) {
	f := clock.NewFake(start)
	outer, cancelOuter := f.WithTimeout(context.Background(), time.Second)
	defer cancelOuter()
	inner, cancelInner := f.WithTimeout(outer, time.Hour)
	defer cancelInner()
	require.Equal(t, 2, f.Timers())

	f.Advance(time.Second)
	assert.Equal(t, context.DeadlineExceeded, outer.Err())
	assert.True(t, isDone(inner), "the outer expiry did not reach the inner context")
	assert.Equal(t, context.DeadlineExceeded, inner.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(inner))
	waitTimers(t, f, 0)
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
