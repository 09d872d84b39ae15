package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quorumlock/quorumlock/driver"
)

func TestTryLockAll_TakesEveryKey_AndReleaseFreesThem(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	ctx := context.Background()
	l, err := c.TryLockAll(ctx, []string{"a", "b", "c"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, l.Keys())
	assert.Equal(t, "a", l.Key())
	assert.Positive(t, l.Fence())
	for _, k := range l.Keys() {
		assert.Equal(t, l.Fence(), l.FenceOf(k), "key %s", k)
	}
	assert.Zero(t, l.FenceOf("d"), "a key the lock does not hold")
	for _, i := range l.Granted() {
		for _, k := range l.Keys() {
			assert.True(t, fakes[i].holdsToken(k, l.Token()), "master %d holds %s", i, k)
		}
	}
	require.NoError(t, l.Extend(ctx, 2*time.Second))
	require.NoError(t, l.Release(ctx))
	require.NoError(t, c.Close()) // waits for the deletes still under way
	for i, f := range fakes {
		for _, k := range l.Keys() {
			assert.Empty(t, f.holder(k), "master %d still holds %s", i, k)
		}
	}
}

func TestTryLockAll_OneKeyHeld_TakesNone(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	ctx := context.Background()
	b, err := c.TryLock(ctx, "b", time.Second)
	require.NoError(t, err)
	for _, f := range fakes { // the grants that came in after the quorum
		require.Eventually(t, func() bool { return f.holder("b") == b.Token() }, time.Second, time.Millisecond)
	}
	_, err = c.TryLockAll(ctx, []string{"a", "b"}, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	assert.ErrorIs(t, err, ErrHeld)
	for i, f := range fakes {
		assert.Empty(t, f.holder("a"), "master %d took part of the set", i)
		assert.Equal(t, b.Token(), f.holder("b"), "master %d", i)
	}
	require.NoError(t, b.Release(ctx))
	l, err := c.TryLockAll(ctx, []string{"b", "a"}, time.Second)
	require.NoError(t, err)
	assert.Greater(t, l.FenceOf("b"), b.Fence(), "b's fence grows from the lock to the set")
	_, err = c.TryLock(ctx, "a", time.Second)
	assert.ErrorIs(t, err, ErrHeld, "a lock is refused a key of a set")
	require.NoError(t, l.Release(ctx))
	a, err := c.TryLock(ctx, "a", time.Second)
	require.NoError(t, err)
	assert.Greater(t, a.Fence(), l.FenceOf("a"), "a's fence grows from the set to the lock")
}

// An extension counts a master only where it holds every key of the set.
func TestLockAll_ExtendNeedsEveryKey(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	ctx := context.Background()
	l, err := c.TryLockAll(ctx, []string{"a", "b"}, time.Second)
	require.NoError(t, err)
	for _, f := range fakes[:3] {
		f.mu.Lock()
		f.keys["b"] = &fakeKey{token: "other", until: clk.Now().Add(time.Minute)}
		f.mu.Unlock()
	}
	assert.ErrorIs(t, l.Extend(ctx, time.Second), ErrLockLost)
}

// The raise of lagging masters covers every key of the set: after it, the
// next holder of any key, on any quorum, gets a larger fence.
func TestTryLockAll_RaisesLaggingMasters_ForEveryKey(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(0))
	ctx := context.Background()
	fakes[0].floor, fakes[1].floor = 1<<50, 1<<50 // ahead: the others lag
	for _, f := range fakes[2:] {
		f.answerAfter = fakes[:2] // the quorum holds both masters ahead, and a laggard
	}
	l, err := c.TryLockAll(ctx, []string{"a", "b"}, time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<50+1), l.Fence())
	// TryLockAll returns once the quorum needs no more raises; the others
	// land after it. A master's floor is read with none of its calls under
	// way, so a raise it has logged has also set the floor.
	var floors []int64 // of the lagging masters that were raised
	require.Eventually(t, func() bool {
		floors = floors[:0]
		for _, f := range fakes[2:] {
			f.mu.Lock()
			busy, raised, floor := f.busy, len(f.callsOfLocked("fence")) > 0, f.floor
			f.mu.Unlock()
			if busy > 0 {
				return false
			}
			if raised {
				floors = append(floors, floor)
			}
		}
		return true
	}, time.Second, time.Millisecond, "the raises under way end")
	assert.NotEmpty(t, floors, "a quorum at the fence needs a lagging master raised")
	for _, floor := range floors {
		assert.Equal(t, l.Fence(), floor)
	}
	require.NoError(t, l.Release(ctx))
	for _, k := range []string{"a", "b"} {
		m, err := c.TryLock(ctx, k, time.Second)
		require.NoError(t, err)
		assert.Greater(t, m.Fence(), l.FenceOf(k), "key %s", k)
		require.NoError(t, m.Release(ctx))
	}
}

// Without a release to wake it, LockAll retries when the holder's keys
// expire: the refusal reports the holder's TTL, which bounds the wait.
func TestLockAll_HolderTTLBoundsTheWait(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	_, err := c.TryLock(context.Background(), "b", 2*time.Second)
	require.NoError(t, err)
	done := make(chan struct{})
	var l *Lock
	go func() { l, err = c.LockAll(context.Background(), []string{"a", "b"}, time.Second); close(done) }()
	drive(t, clk, fakes, 100*time.Millisecond, done)
	require.NoError(t, err)
	assert.LessOrEqual(t, clk.Since(time.Unix(1_000_000, 0)), 3*time.Second, "the wait ended with the holder's TTL, not the hour of backoff")
	require.NoError(t, l.Release(context.Background()))
}

func TestLockAll_GivesUpWithTheContext(t *testing.T) {
	c, fakes, clk := newFakeClient(t, []behaviour{foreign, foreign, foreign}, WithRestartGuard(0), WithRetry(ConstantBackoff(10*time.Millisecond)))
	ctx, cancel := clk.WithTimeout(context.Background(), 95*time.Millisecond)
	defer cancel()
	done := make(chan struct{})
	var err error
	go func() { _, err = c.LockAll(ctx, []string{"a", "b"}, time.Second); close(done) }()
	drive(t, clk, fakes, 5*time.Millisecond, done)
	assert.ErrorIs(t, err, ErrNotObtained)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestLockAll_BadInput(t *testing.T) {
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		keys []string
		opts []LockOption
		want string
	}{
		{"no keys", ctx, nil, nil, "empty key set"},
		{"an empty set", ctx, []string{}, nil, "empty key set"},
		{"a key twice", ctx, []string{"a", "b", "a"}, nil, `key "a" is given twice`},
		{"an empty key", ctx, []string{"a", ""}, nil, "empty key"},
		{"the reserved prefix", ctx, []string{"a", "quorumlock:x"}, nil, "reserved prefix"},
		{"an owner", ctx, []string{"a", "b"}, []LockOption{WithOwner("o")}, "never reentrant"},
		{"a nil option", ctx, []string{"a"}, []LockOption{nil}, "lock option 0 is nil"},
		{"a nil context", nil, []string{"a"}, nil, "nil context"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, call := range map[string]func(context.Context, []string, time.Duration, ...LockOption) (*Lock, error){
				"LockAll": c.LockAll, "TryLockAll": c.TryLockAll,
			} {
				l, err := call(tc.ctx, tc.keys, time.Second, tc.opts...)
				assert.Nil(t, l, name)
				assert.ErrorIs(t, err, ErrInvalid, name)
				assert.ErrorContains(t, err, tc.want, name)
			}
		})
	}
	_, err := c.TryLockAll(ctx, []string{"a"}, 0)
	assert.ErrorIs(t, err, ErrInvalid, "a TTL that is not positive")
	var nilClient *Client
	_, err = nilClient.TryLockAll(ctx, []string{"a"}, time.Second)
	assert.ErrorIs(t, err, ErrInvalid, "a nil client")
}

// On a Redis Cluster node one script runs in one hash slot: a set whose
// keys fall in different slots is refused before anything is sent.
func TestLockAll_ClusterNode_RefusesKeysInDifferentSlots(t *testing.T) {
	c, err := New([]driver.Master{&shardedStub{sharded: true, answer: func(string) (string, error) { return "s1", errBroken }},
		&stubPool{a: "plain"}, &stubPool{a: "other"}},
		WithRestartGuard(0), WithLogger(quiet()), WithNodeTimeout(10*time.Millisecond))
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	_, err = c.TryLockAll(ctx, []string{"a", "b"}, time.Second)
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "hash tag")
	_, err = c.TryLockAll(ctx, []string{"{o}:a", "{o}:b"}, time.Second, WithAutoExtend())
	assert.ErrorIs(t, err, ErrNotObtained, "one slot passes; these masters never answer")
	assert.NotErrorIs(t, err, ErrInvalid)
}

func TestLockAll_Observed(t *testing.T) {
	rec := &recorder{}
	c, _, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0), WithObserver(rec))
	ctx := context.Background()
	l, err := c.LockAll(ctx, []string{"a", "b"}, time.Second)
	require.NoError(t, err)
	_, err = c.TryLockAll(ctx, []string{"b", "c"}, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, l.Release(ctx))
	assert.Equal(t, []Op{OpLockAll, OpTryLockAll, OpRelease}, rec.starts)
	assert.Equal(t, []Outcome{OutcomeObtained}, rec.calls(OpLockAll))
	assert.Equal(t, []Outcome{OutcomeHeld}, rec.calls(OpTryLockAll))
	assert.Equal(t, []Outcome{OutcomeObtained, OutcomeHeld}, rec.outcomes(KindAttempt))
}

// A set is never handed over: a goroutine of the same client waiting for
// one of its keys is woken by the release and takes that key itself, and
// every key of the set is freed.
func TestLockAll_ReleaseIsNotAHandOver(t *testing.T) {
	c, fakes, _ := newFakeClient(t, make([]behaviour, 3), WithRestartGuard(0), WithRetry(ConstantBackoff(time.Hour)))
	ctx := context.Background()
	l, err := c.TryLockAll(ctx, []string{"a", "b"}, time.Hour)
	require.NoError(t, err)
	got := make(chan *Lock, 1)
	go func() {
		w, err := c.Lock(ctx, "a", time.Minute)
		assert.NoError(t, err)
		got <- w
	}()
	require.Eventually(t, func() bool { return c.hub.waiting("a") }, 5*time.Second, time.Millisecond)
	require.NoError(t, l.Release(ctx))
	var w *Lock
	select {
	case w = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken by the set's release")
	}
	require.NotNil(t, w)
	require.NoError(t, c.Close()) // waits for the deletes still under way
	for i, f := range fakes {
		assert.Empty(t, f.holder("b"), "master %d keeps the set's b", i)
	}
}
