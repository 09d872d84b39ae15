package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRWLock_BadInput(t *testing.T) {
	c, _, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy})
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		key  string
		c    *Client
	}{
		{"nil client", "k", nil},
		{"empty key", "", c},
		{"reserved prefix", "quorumlock:k", c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rw, err := tc.c.RWLock(tc.key)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Nil(t, rw)
		})
	}
	rw, err := c.RWLock("k")
	require.NoError(t, err)
	var none *RWLock
	for _, tc := range []struct {
		name string
		call func(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error)
		opts []LockOption
	}{
		{"RLock with an owner", rw.RLock, []LockOption{WithOwner("o")}},
		{"TryRLock with an owner", rw.TryRLock, []LockOption{WithOwner("o")}},
		{"Lock with an owner", rw.Lock, []LockOption{WithOwner("o")}},
		{"TryLock with an owner", rw.TryLock, []LockOption{WithOwner("o")}},
		{"RLock with a nil option", rw.RLock, []LockOption{nil}},
		{"RLock on a nil RWLock", none.RLock, nil},
		{"TryLock on a zero RWLock", new(RWLock).TryLock, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := tc.call(ctx, time.Second, tc.opts...)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Nil(t, l)
		})
	}
	_, err = rw.TryRLock(ctx, 0)
	require.ErrorIs(t, err, ErrInvalid, "a TTL that is not positive")
	require.ErrorIs(t, rw.DoRead(ctx, time.Second, nil), ErrInvalid, "a nil function")
	assert.Equal(t, "", none.Key())
	assert.Equal(t, "k", rw.Key())
}

// Readers share a key and a writer excludes them, on fake masters, through
// the engine the lock's calls take: each hold is a *Lock that extends and
// releases as a lock does.
func TestRWLock_ReadersShareAWriterExcludes(t *testing.T) {
	c, fakes, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy})
	ctx := context.Background()
	rw, err := c.RWLock("k")
	require.NoError(t, err)

	r1, err := rw.TryRLock(ctx, time.Second)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx, time.Second)
	require.NoError(t, err, "readers share")
	assert.Greater(t, r2.Fence(), r1.Fence(), "each grant counts")
	_, err = rw.TryLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a writer is refused while readers hold")
	require.NoError(t, r1.Extend(ctx, 2*time.Second))
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	for _, f := range fakes { // a release returns at quorum; the others follow
		assert.Eventually(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.liveSem("k") == nil
		}, time.Second, time.Millisecond, "%s keeps a reader", f.name)
	}

	w, err := rw.TryLock(ctx, time.Second)
	require.NoError(t, err, "the readers are gone")
	assert.Greater(t, w.Fence(), r2.Fence(), "a writer counts above the readers before it")
	_, err = rw.TryRLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "a reader is refused while a writer holds")
	_, err = c.TryLock(ctx, "k", time.Second)
	require.ErrorIs(t, err, ErrNotObtained, "the writer is the key's plain lock")
	require.NoError(t, w.Release(ctx))

	var fence int64
	err = rw.DoRead(ctx, time.Second, func(ctx context.Context) error {
		l, ok := FromContext(ctx)
		require.True(t, ok)
		fence = l.Fence()
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, fence, w.Fence(), "a reader counts above the writer before it")
}

// An observer sees a read hold's calls as OpRLock and OpTryRLock, and a
// writer's as the lock's.
func TestRWLock_Observed(t *testing.T) {
	rec := &recorder{}
	c, _, _ := newFakeClient(t, []behaviour{healthy, healthy, healthy}, WithObserver(rec))
	ctx := context.Background()
	rw, err := c.RWLock("k")
	require.NoError(t, err)
	r1, err := rw.TryRLock(ctx, time.Second)
	require.NoError(t, err)
	r2, err := rw.RLock(ctx, time.Second)
	require.NoError(t, err)
	_, err = rw.TryLock(ctx, time.Second)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, r1.Release(ctx))
	require.NoError(t, r2.Release(ctx))
	assert.Equal(t, []Op{OpTryRLock, OpRLock, OpTryLock, OpRelease, OpRelease}, rec.starts)
	assert.Equal(t, []Outcome{OutcomeObtained}, rec.calls(OpTryRLock))
	assert.Equal(t, []Outcome{OutcomeObtained}, rec.calls(OpRLock))
	assert.Equal(t, []Outcome{OutcomeHeld}, rec.calls(OpTryLock))
}

// The restart guard keeps restarted masters out of a read hold's quorum,
// as out of a lock's: with 3 of 5 in quarantine no reader is granted, and
// the attempt is rolled back everywhere.
func TestRWLock_ReadersWaitForTheRestartGuard(t *testing.T) {
	c, fakes, clk := newFakeClient(t, make([]behaviour, 5), WithRestartGuard(time.Minute))
	for _, f := range fakes[:3] {
		f.h = health{known: true, bootAt: clk.Now().Add(-time.Second)}
	}
	rw, err := c.RWLock("k")
	require.NoError(t, err)
	_, err = rw.TryRLock(context.Background(), time.Second)
	require.ErrorIs(t, err, ErrQuarantined)
	require.ErrorIs(t, err, ErrNotObtained)
	require.NoError(t, c.Close())
	for i, f := range fakes {
		f.mu.Lock()
		assert.Nil(t, f.liveSem("k"), "master %d keeps the reader", i)
		f.mu.Unlock()
	}
}
