package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunContention_EightGoroutines_ExclusiveAndMeasured(t *testing.T) {
	cl := startTestbed(t)
	cases := []struct {
		name    string
		waiters func(o *Observer) []Waiter
	}{
		{"quorumlock-shared", func(o *Observer) []Waiter {
			return repeat(newObservedQuorumLock(t, cl.addrs, o), 8)
		}},
		{"quorumlock-8clients", func(o *Observer) []Waiter {
			ws := make([]Waiter, 8)
			for i := range ws {
				ws[i] = newObservedQuorumLock(t, cl.addrs, o)
			}
			return ws
		}},
		{"redsync", func(o *Observer) []Waiter {
			return repeat(newObservedRedsync(t, cl.addrs, o), 8)
		}},
		{"quorumlock-goredis-8clients", func(o *Observer) []Waiter {
			ws := make([]Waiter, 8)
			for i := range ws {
				ws[i] = newObservedAdapterQuorumLock(t, "goredis", cl.addrs, o)
			}
			return ws
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := "contend:" + tc.name
			base := time.Now()
			o := NewObserver(key, base, libScripts(t).acquire)
			r, err := RunContention(context.Background(), ContentionConfig{
				Key: key, Waiters: tc.waiters(o), Duration: 300 * time.Millisecond,
				MaxLocks: 100000, Quorum: quorum, Observer: o, Base: base,
			})
			require.NoError(t, err)
			assert.Zero(t, r.Overlaps, "mutual exclusion")
			assert.Zero(t, r.Errors, "first error: %v", r.FirstErr)
			assert.Positive(t, r.Locks)
			assert.Len(t, r.Wins, 8)
			assert.Equal(t, r.Locks-1, r.Handoff.Count(), "every lock but the first is a hand-off")
			assert.GreaterOrEqual(t, r.Attempts, r.Locks, "every lock took at least one attempt")
			// Releases return at quorum; the last deletes land within a node timeout.
			for _, a := range cl.addrs {
				assert.Eventually(t, func() bool { return value(t, a, key) == "" },
					2*time.Second, 5*time.Millisecond, "released at the end on %s", a)
			}
		})
	}
}

func TestRunContention_MaxLocks_EndsTheRun(t *testing.T) {
	cl := startTestbed(t)
	q := newQuorumLock(t, cl.addrs, nil)
	r, err := RunContention(context.Background(), ContentionConfig{
		Key: "k", Waiters: repeat(q, 4), Duration: 10 * time.Second, MaxLocks: 20, Quorum: quorum,
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, r.Locks, 20)
	assert.Less(t, r.Locks, 20+4, "each goroutine stops after the bound")
	assert.Less(t, r.Elapsed, 5*time.Second)
}

func TestRunContention_MeasureStalls_OnlyWhenAsked(t *testing.T) {
	cl := startTestbed(t)
	q := newQuorumLock(t, cl.addrs, nil)
	r, err := RunContention(context.Background(), ContentionConfig{
		Key: "k", Waiters: repeat(q, 2), Duration: 100 * time.Millisecond, MaxLocks: 1 << 20,
		Quorum: quorum, MeasureStalls: true,
	})
	require.NoError(t, err)
	assert.Positive(t, r.MaxStall, "a 1 ms sleep never wakes exactly on time")
	r, err = RunContention(context.Background(), ContentionConfig{
		Key: "k", Waiters: repeat(q, 2), Duration: 100 * time.Millisecond, MaxLocks: 1 << 20, Quorum: quorum,
	})
	require.NoError(t, err)
	assert.Zero(t, r.MaxStall)
}

func TestRunContention_BadConfig_IsAnError(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []ContentionConfig{
		{},
		{Key: "k", Waiters: []Waiter{nil}, Duration: time.Second, MaxLocks: 1},
		{Key: "k", Waiters: repeat(nil, 1), Duration: 0, MaxLocks: 1},
		{Key: "", Waiters: []Waiter{(*QuorumLock)(nil)}, Duration: time.Second, MaxLocks: 1},
	} {
		_, err := RunContention(ctx, cfg)
		assert.Error(t, err)
	}
}

func TestRunSequential_BadInput_IsAnError(t *testing.T) {
	_, err := RunSequential(context.Background(), nil, SameKey("k"), 1, time.Second)
	assert.Error(t, err)
	_, err = RunSequential(context.Background(), (*Floor)(nil), SameKey("k"), 0, time.Second)
	assert.Error(t, err)
}

func TestKeys_SameAndDistinct(t *testing.T) {
	assert.Equal(t, "k", SameKey("k").At(7))
	d := DistinctKeys("p", 3)
	assert.Equal(t, []string{"p:0", "p:1", "p:2", "p:0"}, []string{d.At(0), d.At(1), d.At(2), d.At(3)})
	assert.NotEmpty(t, Keys{}.At(0))
}

// repeat returns w n times: goroutines sharing one client.
func repeat(w Waiter, n int) []Waiter {
	out := make([]Waiter, n)
	for i := range out {
		out[i] = w
	}
	return out
}
