package quorumlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-multierror"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuorum(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{-1, 0}, {0, 0}, {1, 1}, {2, 2}, {3, 2}, {4, 3}, {5, 3}, {6, 4}, {7, 4},
	} {
		assert.Equal(t, tc.want, quorumlock.Quorum(tc.n), "Quorum(%d)", tc.n)
	}
}

// Any two quorums of the same n overlap: that is what makes a majority lock safe.
func TestQuorum_TwoQuorumsOverlap(t *testing.T) {
	for n := 1; n <= 9; n++ {
		assert.Greater(t, 2*quorumlock.Quorum(n), n, "n=%d", n)
	}
}

func TestValidity(t *testing.T) {
	d := quorumlock.Drift{Factor: 0.01, Margin: 2 * time.Millisecond}
	for _, tc := range []struct {
		name         string
		ttl, elapsed time.Duration
		drift        quorumlock.Drift
		want         time.Duration
	}{
		{"defaults", 10 * time.Second, 5 * time.Millisecond, d, 10*time.Second - 5*time.Millisecond - 100*time.Millisecond - 2*time.Millisecond},
		{"no drift", time.Second, 0, quorumlock.Drift{}, time.Second},
		{"margin only", time.Second, 0, quorumlock.Drift{Margin: time.Millisecond}, 999 * time.Millisecond},
		{"factor only", time.Second, 0, quorumlock.Drift{Factor: 0.5}, 500 * time.Millisecond},
		{"elapsed and drift eat it exactly", 100 * time.Millisecond, 97 * time.Millisecond, d, 0},
		{"negative", 10 * time.Millisecond, 50 * time.Millisecond, d, 10*time.Millisecond - 50*time.Millisecond - 100*time.Microsecond - 2*time.Millisecond},
		{"huge ttl saturates", math.MaxInt64, 0, quorumlock.Drift{Factor: 0}, math.MaxInt64},
		{"huge elapsed saturates", time.Second, math.MaxInt64, quorumlock.Drift{}, time.Second - math.MaxInt64},
		{"min elapsed saturates", time.Second, math.MinInt64, quorumlock.Drift{}, math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, quorumlock.Validity(tc.ttl, tc.elapsed, tc.drift))
		})
	}
}

func TestDrift_Reserve(t *testing.T) {
	assert.Equal(t, 102*time.Millisecond, quorumlock.Drift{Factor: 0.01, Margin: 2 * time.Millisecond}.Reserve(10*time.Second))
	assert.Equal(t, time.Duration(0), quorumlock.Drift{Factor: math.NaN()}.Reserve(time.Second), "NaN factor reserves nothing")
	assert.Equal(t, time.Duration(math.MaxInt64), quorumlock.Drift{Factor: 0.99, Margin: math.MaxInt64}.Reserve(math.MaxInt64))
}

// FuzzValidity checks properties that hold for every input: no panic, the
// result never exceeds the TTL minus elapsed time, and more elapsed time or
// more drift never gives more validity.
func FuzzValidity(f *testing.F) {
	for _, s := range [][4]int64{
		{int64(10 * time.Second), int64(5 * time.Millisecond), 100, int64(2 * time.Millisecond)},
		{int64(time.Millisecond), 0, 0, 0},
		{math.MaxInt64, math.MinInt64, 9999, math.MaxInt64},
		{math.MinInt64, math.MaxInt64, 0, 0},
		{0, 0, 5000, 0},
		{1, -1, 1, -1},
	} {
		f.Add(s[0], s[1], uint16(s[2]), s[3])
	}
	f.Fuzz(func(t *testing.T, ttl, elapsed int64, factorBP uint16, margin int64) {
		factor := float64(factorBP%10000) / 10000 // [0, 1)
		if margin < 0 {
			margin = -(margin + 1) // the library validates margin >= 0
		}
		d := quorumlock.Drift{Factor: factor, Margin: time.Duration(margin)}
		v := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed), d)
		if ttl >= 0 && elapsed >= 0 && v > time.Duration(ttl)-time.Duration(elapsed) {
			t.Fatalf("validity %v exceeds ttl-elapsed %v", v, time.Duration(ttl-elapsed))
		}
		if elapsed < math.MaxInt64 {
			if later := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed+1), d); later > v {
				t.Fatalf("more elapsed time gave more validity: %v > %v", later, v)
			}
		}
		if margin < math.MaxInt64 {
			more := quorumlock.Drift{Factor: factor, Margin: time.Duration(margin + 1)}
			if w := quorumlock.Validity(time.Duration(ttl), time.Duration(elapsed), more); w > v {
				t.Fatalf("more drift gave more validity: %v > %v", w, v)
			}
		}
	})
}

// outcome is what a fake node does in the exhaustive test.
type outcome int

const (
	succeed outcome = iota
	fail
	hang // never answers within the timeout
)

func (o outcome) String() string { return [...]string{"ok", "fail", "hang"}[o] }

// TestFanOut_EveryOutcomeOfFiveNodes runs the fan-out over all 3^5 ways five
// nodes can succeed, fail or hang, and checks the verdict, the classification
// of every node, the error aggregate, and that the call returned without
// waiting for the timeout whenever the outcome was decided earlier.
func TestFanOut_EveryOutcomeOfFiveNodes(t *testing.T) {
	const n = 5
	need := quorumlock.Quorum(n)
	for combo := range int(math.Pow(3, n)) {
		outs := make([]outcome, n)
		for i, c := 0, combo; i < n; i, c = i+1, c/3 {
			outs[i] = outcome(c % 3)
		}
		t.Run(fmt.Sprint(outs), func(t *testing.T) {
			clk := clock.NewFake(time.Unix(0, 0))
			var ok, failed, hung int
			for _, o := range outs {
				switch o {
				case succeed:
					ok++
				case fail:
					failed++
				default:
					hung++
				}
			}
			release := make(chan struct{})
			var answered atomic.Int32 // nodes that will answer before the deadline, once they have
			type ret struct {
				res *quorumlock.Result
				err error
			}
			done := make(chan ret, 1)
			go func() {
				res, err := quorumlock.FanOut{Nodes: n, Need: need, Timeout: 50 * time.Millisecond, Clock: clk}.Run(context.Background(),
					func(ctx context.Context, i int) (quorumlock.Vote, error) {
						switch outs[i] {
						case succeed:
							defer answered.Add(1)
							return quorumlock.Yes, nil
						case fail:
							defer answered.Add(1)
							return quorumlock.No, fmt.Errorf("node %d refused", i)
						}
						select { // a hung node answers only after the deadline
						case <-ctx.Done():
						case <-release:
						}
						<-release
						return quorumlock.No, ctx.Err()
					})
				done <- ret{res, err}
			}()
			decidedEarly := ok >= need || ok+hung < need
			var r ret
			if !decidedEarly {
				// Only the deadline can decide: the fake clock must reach it.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				require.NoError(t, clk.BlockUntil(ctx, 1))
				cancel()
				// Every node that answers in time has, before the clock reaches the deadline.
				require.Eventually(t, func() bool { return int(answered.Load()) == ok+failed }, 5*time.Second, 50*time.Microsecond)
				select {
				case r = <-done:
					t.Fatalf("returned before the deadline with %d undecided nodes", hung)
				case <-time.After(2 * time.Millisecond):
				}
				clk.Advance(50 * time.Millisecond)
			}
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("fan-out did not return")
			}
			close(release)
			require.NoError(t, r.err)
			res := r.res
			require.NoError(t, res.Wait(context.Background()))

			assert.Equal(t, ok >= need, res.OK())
			all := slices.Concat(res.Yes, res.No, res.Abstained, res.Pending)
			slices.Sort(all)
			assert.Equal(t, []int{0, 1, 2, 3, 4}, all, "every node classified exactly once")
			for _, i := range res.Yes {
				assert.Equal(t, succeed, outs[i], "node %d counted yes", i)
			}
			for _, i := range res.No {
				assert.NotEqual(t, succeed, outs[i], "node %d counted no", i)
			}
			if !decidedEarly {
				for _, i := range res.Pending {
					assert.Equal(t, hang, outs[i], "only hung nodes are left pending at the deadline")
				}
				assert.Len(t, res.Yes, ok, "waited for every answer")
				assert.Len(t, res.Pending, hung)
			}
			// Errors: exactly the failures that were heard, as a multierror.
			var heard int
			for _, i := range res.No {
				if outs[i] == fail {
					heard++
				}
			}
			if heard == 0 {
				assert.Nil(t, res.Err)
			} else {
				var m *multierror.Error
				require.True(t, errors.As(res.Err, &m), "aggregate is a *multierror.Error")
				assert.Len(t, m.Errors, heard)
			}
		})
	}
}

func TestFanOut_AbstainDoesNotCount(t *testing.T) {
	res, err := quorumlock.FanOut{Nodes: 3, Need: 2, Timeout: time.Second}.Run(context.Background(),
		func(ctx context.Context, i int) (quorumlock.Vote, error) {
			if i == 0 {
				return quorumlock.Yes, nil
			}
			return quorumlock.Abstain, nil
		})
	require.NoError(t, err)
	require.NoError(t, res.Wait(context.Background()))
	assert.False(t, res.OK(), "two abstentions leave one vote of the two needed")
	// Run may stop as soon as the quorum is out of reach, before node 0's yes.
	assert.Contains(t, slices.Concat(res.Yes, res.Pending), 0)
	assert.Subset(t, []int{1, 2}, res.Abstained)
	assert.NotEmpty(t, res.Abstained)
	assert.Nil(t, res.Err, "abstaining is not an error")
}

func TestFanOut_NeedZeroWaitsForAll(t *testing.T) {
	res, err := quorumlock.FanOut{Nodes: 4, Timeout: time.Second}.Run(context.Background(),
		func(ctx context.Context, i int) (quorumlock.Vote, error) { return quorumlock.Yes, nil })
	require.NoError(t, err)
	assert.Len(t, res.Yes, 4)
	assert.Empty(t, res.Pending)
}

func TestFanOut_CancelledContextStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := quorumlock.FanOut{Nodes: 3, Need: 2, Timeout: time.Hour}.Run(ctx,
		func(ctx context.Context, i int) (quorumlock.Vote, error) {
			<-ctx.Done()
			return quorumlock.No, ctx.Err()
		})
	require.NoError(t, err)
	assert.False(t, res.OK())
	require.NoError(t, res.Wait(context.Background()))
}

// A straggler that answers after Run returned still closes its Done channel,
// so a clean-up can be chained after it.
func TestFanOut_StragglerStaysTracked(t *testing.T) {
	slow := make(chan struct{})
	res, err := quorumlock.FanOut{Nodes: 3, Need: 2, Timeout: time.Minute}.Run(context.Background(),
		func(ctx context.Context, i int) (quorumlock.Vote, error) {
			if i == 2 {
				<-slow
			}
			return quorumlock.Yes, nil
		})
	require.NoError(t, err)
	assert.True(t, res.OK())
	assert.Equal(t, []int{2}, res.Pending)
	select {
	case <-res.Done(2):
		t.Fatal("straggler reported done before it answered")
	default:
	}
	close(slow)
	select {
	case <-res.Done(2):
	case <-time.After(5 * time.Second):
		t.Fatal("straggler never reported done")
	}
}

func TestFanOut_NoNodes(t *testing.T) {
	_, err := quorumlock.FanOut{}.Run(context.Background(), nil)
	assert.ErrorIs(t, err, quorumlock.ErrNoNodes)
}

func TestAggregate(t *testing.T) {
	assert.Nil(t, quorumlock.Aggregate())
	assert.Nil(t, quorumlock.Aggregate(nil, nil), "never a typed nil")
	a, b := errors.New("a"), errors.New("b")
	err := quorumlock.Aggregate(a, nil, b)
	assert.Equal(t, "a; b", err.Error())
	assert.ErrorIs(t, err, a)
	assert.ErrorIs(t, err, b)
}

// BenchmarkFanOut measures the fan-out's own cost over five nodes that answer at once.
func BenchmarkFanOut(b *testing.B) {
	f := quorumlock.FanOut{Nodes: 5, Need: 3, Timeout: time.Second}
	op := func(context.Context, int) (quorumlock.Vote, error) { return quorumlock.Yes, nil }
	b.ReportAllocs()
	for range b.N {
		if _, err := f.Run(context.Background(), op); err != nil {
			b.Fatal(err)
		}
	}
}
