package fanout_test

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

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// runOps runs op on every node, each in a goroutine of its own: an
// operation that blocks, as the tests' nodes do.
func runOps[T any](ctx context.Context, cfg fanout.Config, op func(ctx context.Context, node int) (T, fanout.Vote, error)) (*fanout.Result[T], error) {
	return fanout.Run(ctx, cfg, func(ctx context.Context, n *fanout.Node[T]) {
		go func() { n.Answer(op(ctx, n.Index())) }()
	})
}

// outcome is what a fake node does in the exhaustive test.
type outcome int

const (
	succeed outcome = iota
	fail
	hang   // never answers within the timeout
	silent // hangs too, and is named in Config.Silent: not waited for
)

func (o outcome) String() string { return [...]string{"ok", "fail", "hang", "silent"}[o] }

// TestFanOut_EveryOutcomeOfFiveNodes runs the fan-out over all 4^5 ways five
// nodes can succeed, fail, hang, or hang named silent, and checks the
// verdict, the classification of every node, the error aggregate, and that
// the call returned without waiting for the timeout whenever the outcome
// was decided earlier: silent nodes are not waited for, unless the others
// are too few to reach the quorum.
func TestFanOut_EveryOutcomeOfFiveNodes(t *testing.T) {
	const n = 5
	need := n/2 + 1 // a majority
	for combo := range int(math.Pow(4, n)) {
		outs := make([]outcome, n)
		for i, c := 0, combo; i < n; i, c = i+1, c/4 {
			outs[i] = outcome(c % 4)
		}
		t.Run(fmt.Sprint(outs), func(t *testing.T) {
			t.Parallel() // each combination has a clock of its own
			clk := clock.NewFake(time.Unix(0, 0))
			var ok, failed, hung, quiet int
			for _, o := range outs {
				switch o {
				case succeed:
					ok++
				case fail:
					failed++
				case hang:
					hung++
				default:
					quiet++
				}
			}
			release := make(chan struct{})
			var answered atomic.Int32 // nodes that will answer before the deadline, once they have
			type ret struct {
				res *fanout.Result[struct{}]
				err error
			}
			done := make(chan ret, 1)
			go func() {
				cfg := fanout.Config{Nodes: n, Need: need, Timeout: 50 * time.Millisecond, Clock: clk,
					Silent: func(i int) bool { return outs[i] == silent }}
				res, err := runOps(context.Background(), cfg,
					func(ctx context.Context, i int) (struct{}, fanout.Vote, error) {
						switch outs[i] {
						case succeed:
							defer answered.Add(1)
							return struct{}{}, fanout.Yes, nil
						case fail:
							defer answered.Add(1)
							return struct{}{}, fanout.No, fmt.Errorf("node %d refused", i)
						}
						select { // a hung or silent node answers only after the deadline
						case <-ctx.Done():
						case <-release:
						}
						<-release
						return struct{}{}, fanout.No, ctx.Err()
					})
				done <- ret{res, err}
			}()
			undecided := hung
			if n-quiet < need { // too few others to reach need: the silent nodes are waited for too
				undecided += quiet
			}
			decidedEarly := ok >= need || ok+undecided < need
			var r ret
			if !decidedEarly {
				// Only the deadline can decide: the fake clock must reach it.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				require.NoError(t, clk.BlockUntil(ctx, 1))
				cancel()
				// Every node that answers in time has, before the clock reaches the deadline.
				require.Eventually(t, func() bool { return int(answered.Load()) == ok+failed }, 5*time.Second, 50*time.Microsecond)
				// The answers counted above still have to reach the fan-out
				// from its goroutines: give them time, which a loaded machine
				// stretches (2 ms was seen to be too short under -race).
				select {
				case r = <-done:
					t.Fatalf("returned before the deadline with %d undecided nodes", hung+quiet)
				case <-time.After(20 * time.Millisecond):
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
					assert.Contains(t, []outcome{hang, silent}, outs[i], "only hung nodes are left pending at the deadline")
				}
				assert.Len(t, res.Yes, ok, "waited for every answer")
				assert.Len(t, res.Pending, hung+quiet)
			}
			// Errors: exactly the failures that were heard, as a multierror.
			var heard int
			for _, i := range res.No {
				if outs[i] == fail {
					heard++
				}
			}
			if heard == 0 {
				assert.Nil(t, res.Err())
			} else {
				var m *multierror.Error
				require.True(t, errors.As(res.Err(), &m), "aggregate is a *multierror.Error")
				assert.Len(t, m.Errors, heard)
			}
		})
	}
}

func TestFanOut_AbstainDoesNotCount(t *testing.T) {
	res, err := runOps(context.Background(), fanout.Config{Nodes: 3, Need: 2, Timeout: time.Second},
		func(ctx context.Context, i int) (struct{}, fanout.Vote, error) {
			if i == 0 {
				return struct{}{}, fanout.Yes, nil
			}
			return struct{}{}, fanout.Abstain, nil
		})
	require.NoError(t, err)
	require.NoError(t, res.Wait(context.Background()))
	assert.False(t, res.OK(), "two abstentions leave one vote of the two needed")
	// Run may stop as soon as the quorum is out of reach, before node 0's yes.
	assert.Contains(t, slices.Concat(res.Yes, res.Pending), 0)
	assert.Subset(t, []int{1, 2}, res.Abstained)
	assert.NotEmpty(t, res.Abstained)
	assert.Nil(t, res.Err(), "abstaining is not an error")
}

func TestFanOut_NeedZeroWaitsForAll(t *testing.T) {
	res, err := runOps(context.Background(), fanout.Config{Nodes: 4, Timeout: time.Second},
		func(ctx context.Context, i int) (struct{}, fanout.Vote, error) { return struct{}{}, fanout.Yes, nil })
	require.NoError(t, err)
	assert.Len(t, res.Yes, 4)
	assert.Empty(t, res.Pending)
}

func TestFanOut_CancelledContextStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := runOps(ctx, fanout.Config{Nodes: 3, Need: 2, Timeout: time.Hour},
		func(ctx context.Context, i int) (struct{}, fanout.Vote, error) {
			<-ctx.Done()
			return struct{}{}, fanout.No, ctx.Err()
		})
	require.NoError(t, err)
	assert.False(t, res.OK())
	require.NoError(t, res.Wait(context.Background()))
}

// A straggler that answers after Run returned still closes its Done channel,
// so a clean-up can be chained after it.
func TestFanOut_StragglerStaysTracked(t *testing.T) {
	slow := make(chan struct{})
	res, err := runOps(context.Background(), fanout.Config{Nodes: 3, Need: 2, Timeout: time.Minute},
		func(ctx context.Context, i int) (struct{}, fanout.Vote, error) {
			if i == 2 {
				<-slow
			}
			return struct{}{}, fanout.Yes, nil
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

// Run takes replies given inside Start, from other goroutines after
// Start returned, and after Run itself returned; only a node's first
// reply counts, and the deadline still bounds the wait for a node that never
// replies in time.
func TestRun_RepliesFromAnywhere(t *testing.T) {
	late := make(chan func(struct{}, fanout.Vote, error), 1)
	hung := make(chan func(struct{}, fanout.Vote, error), 1)
	var started atomic.Int32
	res, err := fanout.Run(context.Background(), fanout.Config{Nodes: 5, Need: 3, Timeout: 200 * time.Millisecond},
		func(ctx context.Context, n *fanout.Node[struct{}]) {
			i, reply := n.Index(), n.Answer
			started.Add(1)
			switch i {
			case 0: // at once, twice: the second reply is ignored
				reply(struct{}{}, fanout.Yes, nil)
				reply(struct{}{}, fanout.No, errors.New("second reply"))
			case 1: // from another goroutine
				go reply(struct{}{}, fanout.Yes, nil)
			case 2:
				reply(struct{}{}, fanout.No, errors.New("node 2 refused"))
			case 3: // after the deadline, and after Run returned
				hung <- reply
			case 4: // only after Run returned
				late <- reply
			}
		})
	require.NoError(t, err)
	assert.EqualValues(t, 5, started.Load(), "every node started before Run waited")
	assert.False(t, res.OK(), "two yes votes of three needed before the deadline")
	assert.ElementsMatch(t, []int{0, 1}, res.Yes)
	assert.Equal(t, []int{2}, res.No)
	assert.ElementsMatch(t, []int{3, 4}, res.Pending)
	assert.EqualError(t, res.Err(), "node 2 refused")
	rep, ok := res.Reply(0)
	require.True(t, ok)
	assert.Equal(t, fanout.Yes, rep.Vote, "the first reply counts")

	(<-late)(struct{}{}, fanout.Yes, nil)
	(<-hung)(struct{}{}, fanout.No, context.DeadlineExceeded)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, res.Wait(ctx), "replies after Run returned close the nodes' Done")
	rep, _ = res.Reply(4)
	assert.Equal(t, fanout.Yes, rep.Vote)
}

// OnDone runs its function once per registration: at once for a node that
// has replied, and for one still running, in the goroutine that replies,
// with the reply already in; a second reply runs nothing again.
func TestNode_OnDone(t *testing.T) {
	var reply func(string, fanout.Vote, error)
	res, err := fanout.Run(context.Background(), fanout.Config{Nodes: 2, Need: 1, Timeout: time.Minute},
		func(ctx context.Context, n *fanout.Node[string]) {
			i, r := n.Index(), n.Answer
			if i == 0 {
				r("first", fanout.Yes, nil)
				return
			}
			reply = r
		})
	require.NoError(t, err)

	ran := 0
	res.Node(0).OnDone(func() { ran++ })
	assert.Equal(t, 1, ran, "a node that replied runs it at once")

	var seen []string
	for range 2 {
		res.Node(1).OnDone(func() {
			rep, ok := res.Reply(1)
			require.True(t, ok, "the reply is in before it runs")
			seen = append(seen, rep.Value)
		})
	}
	assert.Empty(t, seen, "a node still running runs nothing yet")
	reply("late", fanout.Yes, nil) // this goroutine replies: both run here, before reply returns
	assert.Equal(t, []string{"late", "late"}, seen)
	reply("again", fanout.No, nil)
	assert.Len(t, seen, 2, "a second reply runs nothing")
}

func TestFanOut_NoNodes(t *testing.T) {
	_, err := fanout.Run[struct{}](context.Background(), fanout.Config{}, nil)
	assert.ErrorIs(t, err, fanout.ErrNoNodes)
}

func TestAggregate(t *testing.T) {
	assert.Nil(t, fanout.Aggregate())
	assert.Nil(t, fanout.Aggregate(nil, nil), "never a typed nil")
	a, b := errors.New("a"), errors.New("b")
	err := fanout.Aggregate(a, nil, b)
	assert.Equal(t, "a; b", err.Error())
	assert.ErrorIs(t, err, a)
	assert.ErrorIs(t, err, b)
}

// BenchmarkFanOut measures the fan-out's own cost over five nodes that answer at once.
func BenchmarkFanOut(b *testing.B) {
	cfg := fanout.Config{Nodes: 5, Need: 3, Timeout: time.Second}
	op := func(context.Context, int) (struct{}, fanout.Vote, error) { return struct{}{}, fanout.Yes, nil }
	b.ReportAllocs()
	for range b.N {
		if _, err := runOps(context.Background(), cfg, op); err != nil {
			b.Fatal(err)
		}
	}
}

// Began counts every node before the first operation starts, and Returned
// each node as it returns, a straggler that returns after Run included: the
// count a client's Close waits on.
func TestRun_BeganAndReturnedCountEveryNode(t *testing.T) {
	var running, most atomic.Int64
	var began atomic.Int32
	straggler := make(chan struct{})
	cfg := fanout.Config{Nodes: 3, Need: 2, Timeout: time.Second,
		Began: func(n int) {
			began.Add(1)
			running.Add(int64(n))
		},
		Returned: func() { running.Add(-1) },
	}
	res, err := fanout.Run(context.Background(), cfg, func(ctx context.Context, n *fanout.Node[int]) {
		most.Store(max(most.Load(), running.Load()))
		if n.Index() == 2 {
			go func() {
				<-straggler
				n.Answer(2, fanout.Yes, nil)
			}()
			return
		}
		n.Answer(n.Index(), fanout.Yes, nil)
	})
	require.NoError(t, err)
	require.True(t, res.OK())
	assert.Equal(t, int32(1), began.Load(), "Began runs once")
	assert.Equal(t, int64(3), most.Load(), "every node counted before the first started")
	assert.Equal(t, int64(1), running.Load(), "the straggler still counts once Run returned")
	close(straggler)
	<-res.Done(2)
	assert.Equal(t, int64(0), running.Load(), "every node returned")
}
