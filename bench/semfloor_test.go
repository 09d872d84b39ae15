package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newSemFloor(tb testing.TB, addr, key string, permits int) *SemFloor {
	tb.Helper()
	s, err := NewSemFloor(context.Background(), addr, permits, semFloorTimeout, 10*time.Second)
	require.NoError(tb, err)
	tb.Cleanup(func() { assert.NoError(tb, s.Close()) })
	require.NoError(tb, s.Watch(key))
	return s
}

func TestSemFloor_TakesAtMostItsPermitsAndLeavesNothing(t *testing.T) {
	cl := startTestbed(t)
	s := newSemFloor(t, cl.addrs[0], "semfloor:try", 2)
	ctx := context.Background()
	a, err := s.TryLock(ctx, "semfloor:try")
	require.NoError(t, err)
	b, err := s.TryLock(ctx, "semfloor:try")
	require.NoError(t, err)
	_, err = s.TryLock(ctx, "semfloor:try")
	require.ErrorIs(t, err, errSemFull, "a third permit of two")
	require.NoError(t, a.Release(ctx))
	c, err := s.TryLock(ctx, "semfloor:try")
	require.NoError(t, err, "a released permit is free again")
	require.NoError(t, b.Release(ctx))
	require.NoError(t, c.Release(ctx))
	assert.Empty(t, value(t, cl.addrs[0], "semfloor:try"))
}

// Eight goroutines contend for two permits: the run keeps the bound, and a
// run that counts one permit sees the second holder, so the count can fire.
func TestSemFloor_Contended_KeepsTheBound(t *testing.T) {
	cl := startTestbed(t)
	for _, tc := range []struct {
		name      string
		counted   int
		overlapOK bool
	}{
		{"counted as two", 2, false},
		{"counted as one", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "semfloor:" + tc.name
			s := newSemFloor(t, cl.addrs[0], key, 2)
			r, err := RunContention(context.Background(), ContentionConfig{
				Key: key, Waiters: repeat(Waiter(s), 8), Duration: 300 * time.Millisecond,
				MaxLocks: 100000, Permits: tc.counted, Hold: time.Millisecond,
			})
			require.NoError(t, err)
			assert.Zero(t, r.Errors, "first error: %v", r.FirstErr)
			assert.Positive(t, r.Locks)
			if tc.overlapOK {
				assert.Positive(t, r.Overlaps, "two permits held at once")
			} else {
				assert.Zero(t, r.Overlaps)
			}
		})
	}
}
