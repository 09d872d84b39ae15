package quorumlock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/quorumlock/quorumlock/clock"
)

// Quorum returns the number of votes that make a majority of n nodes: n/2+1.
// It returns 0 for n <= 0.
func Quorum(n int) int {
	if n <= 0 {
		return 0
	}
	return n/2 + 1
}

// Vote is one node's answer in a fan-out.
type Vote int8

const (
	// No means the node refused or failed; the error says which.
	No Vote = iota
	// Yes means the node carried out the operation and its vote counts.
	Yes
	// Abstain means the node carried out the operation but its vote must not
	// count, for example a master that restarted too recently to be trusted.
	Abstain
)

// Op is one node's part of a fan-out. ctx carries the node's deadline; an Op
// that does I/O must stop by then.
type Op func(ctx context.Context, node int) (Vote, error)

// FanOut runs one operation on every node in parallel, each bounded by its own
// timeout, and stops waiting as soon as the outcome is decided.
type FanOut struct {
	// Nodes is the number of nodes, N.
	Nodes int
	// Need is how many Yes votes decide success. Run returns as soon as Need
	// nodes said yes, or as soon as the nodes still outstanding can no longer
	// bring the count there. Zero means: wait for every node.
	Need int
	// Timeout bounds each node's operation. Zero means no bound but ctx.
	Timeout time.Duration
	// Clock measures the timeout. Nil means clock.Real().
	Clock clock.Clock
}

// Result says what each node did by the time Run returned.
type Result struct {
	Yes       []int // nodes that voted yes, in the order they answered
	No        []int // nodes that refused or failed, in the order they answered
	Abstained []int // nodes that carried out the operation without a vote
	Pending   []int // nodes with no answer yet: slow, hung, or past their timeout
	// Err aggregates the errors of the nodes that answered, as a
	// *multierror.Error, or is nil when none failed.
	Err error

	need int
	done []chan struct{}
}

// OK reports whether the Yes votes reached the quorum.
func (r *Result) OK() bool { return len(r.Yes) >= r.need }

// Done returns a channel that is closed once node's operation has returned,
// even if that happened after Run returned. A straggler's reply therefore
// stays tracked: a caller can chain a clean-up after it.
func (r *Result) Done(node int) <-chan struct{} { return r.done[node] }

// Wait blocks until every node's operation has returned, or ctx is done.
func (r *Result) Wait(ctx context.Context) error {
	for _, d := range r.done {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Aggregate returns errs as one *multierror.Error that prints on one line,
// or nil when errs holds no error. errors.Is and errors.As see each of them.
func Aggregate(errs ...error) error {
	var m *multierror.Error
	for _, e := range errs {
		if e != nil {
			m = multierror.Append(m, e)
		}
	}
	if m == nil {
		return nil
	}
	m.ErrorFormat = oneLine
	return m
}

func oneLine(errs []error) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

type reply struct {
	node int
	vote Vote
	err  error
}

// ErrNoNodes is returned by Run when FanOut.Nodes is not positive.
var ErrNoNodes = errors.New("quorumlock: no nodes")

// Run starts op on every node at once and returns when the outcome is known:
// Need yes votes, a quorum out of reach, every node's timeout passed, or ctx
// done. Operations still running when Run returns go on in the background
// until they finish or reach their deadline; Result.Done tracks them.
func (f FanOut) Run(ctx context.Context, op Op) (*Result, error) {
	if f.Nodes <= 0 {
		return nil, ErrNoNodes
	}
	clk := f.Clock
	if clk == nil {
		clk = clock.Real()
	}
	need := f.Need
	if need <= 0 || need > f.Nodes {
		need = f.Nodes
	}
	waitAll := f.Need <= 0

	opCtx, cancel := ctx, context.CancelFunc(func() {})
	if f.Timeout > 0 {
		// One deadline serves every node: they all start now.
		opCtx, cancel = clk.WithTimeout(ctx, f.Timeout)
	}

	res := &Result{need: need, done: make([]chan struct{}, f.Nodes), Yes: make([]int, 0, f.Nodes)}
	w := &workers{op: op, ctx: opCtx, cancel: cancel, replies: make(chan reply, f.Nodes)} // buffered: a straggler never blocks
	w.running.Store(int32(f.Nodes))
	replies := w.replies
	for i := range f.Nodes {
		res.done[i] = make(chan struct{})
		go w.run(i, res.done[i])
	}

	t := tally{res: res, answered: make([]bool, f.Nodes), outstanding: f.Nodes}
collect:
	for t.outstanding > 0 {
		if !waitAll && (len(res.Yes) >= need || len(res.Yes)+t.outstanding < need) {
			break
		}
		select {
		case r := <-replies:
			t.take(r)
		case <-opCtx.Done():
			// Replies that arrived with the deadline still count.
			for t.outstanding > 0 {
				select {
				case r := <-replies:
					t.take(r)
				default:
					break collect
				}
			}
		}
	}
	for i, a := range t.answered {
		if !a {
			res.Pending = append(res.Pending, i)
		}
	}
	res.Err = Aggregate(t.errs...)
	return res, nil
}

// workers is what the goroutines of one fan-out share.
type workers struct {
	op      Op
	ctx     context.Context
	cancel  context.CancelFunc
	replies chan reply
	running atomic.Int32
}

func (w *workers) run(i int, done chan struct{}) {
	v, err := w.op(w.ctx, i)
	w.replies <- reply{node: i, vote: v, err: err}
	close(done)
	if w.running.Add(-1) == 0 {
		w.cancel() // the last one out releases the deadline's timer
	}
}

// tally sorts the replies of a fan-out as they arrive.
type tally struct {
	res         *Result
	answered    []bool
	errs        []error
	outstanding int
}

func (t *tally) take(r reply) {
	t.outstanding--
	t.answered[r.node] = true
	switch r.vote {
	case Yes:
		t.res.Yes = append(t.res.Yes, r.node)
	case Abstain:
		t.res.Abstained = append(t.res.Abstained, r.node)
	default:
		t.res.No = append(t.res.No, r.node)
	}
	if r.err != nil {
		t.errs = append(t.errs, r.err)
	}
}
