package fanout

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/quorumlock/quorumlock/clock"
)

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

// Start begins one node's part of a fan-out, n, and arranges for n.Answer
// to be called with what the node answered, its vote and why it failed or
// refused. Answer may be called from any goroutine, before Start returns or
// later; only its first call counts. ctx carries the node's deadline: the
// operation must answer by then. Start suits an operation whose I/O
// completes on a goroutine that exists anyway, such as a pipelined
// connection's reader: the fan-out then starts no goroutine for it.
type Start[T any] func(ctx context.Context, n *Node[T])

// Config says how to run a fan-out.
type Config struct {
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
	// Began, when not nil, runs once as Run starts, with N, before any
	// node's operation starts; Returned, when not nil, runs once for each
	// node as its operation returns, before its answer is recorded. With
	// both, a caller counts the operations still running, those that
	// outlive Run included.
	Began    func(n int)
	Returned func()
	// Silent, when not nil, names the nodes known not to answer (the
	// caller's judgement), asked as Run starts. Run starts their
	// operations as any other and counts an answer that comes in before
	// it returns, but does not wait for one to reach Need: it returns as
	// soon as the other nodes still outstanding cannot bring the count
	// there, rather than wait out the timeout for an answer unlikely to
	// come. When the other nodes are too few to reach Need at all, every
	// node is waited for as usual: not waiting could only fail, and an
	// answer from a node thought silent is what shows it answers again.
	Silent func(i int) bool
}

// Reply is what one node's operation returned.
type Reply[T any] struct {
	Value T
	Vote  Vote
	Err   error
}

// Node is one node's part of a fan-out. Its reply is set once, before Done
// is closed.
type Node[T any] struct {
	done    Signal // fires once the reply is in
	reply   Reply[T]
	i       int
	res     *Result[T]
	replied atomic.Bool
	taken   bool // the collector has sorted the answer; its own
	silent  bool // Config.Silent named it as Run started
}

// Index returns the node's number, from 0 to N-1.
func (n *Node[T]) Index() int { return n.i }

// Done returns a channel closed once the node's operation has returned.
func (n *Node[T]) Done() <-chan struct{} { return n.done.Done() }

// OnDone runs f once the node's operation has returned: at once, in the
// caller's goroutine, when it has; otherwise in the goroutine that hands
// in its reply, after the reply is in and the fan-out has been told. f
// runs exactly once.
func (n *Node[T]) OnDone(f func()) { n.done.OnDone(f) }

// Reply returns the node's reply and true once it is in; a zero Reply and
// false while the operation still runs.
func (n *Node[T]) Reply() (Reply[T], bool) {
	if n.done.Fired() {
		return n.reply, true
	}
	return Reply[T]{}, false
}

// Returned reports whether the node's operation has returned.
func (n *Node[T]) Returned() bool { return n.done.Fired() }

// Result says what each node did by the time Run returned, and keeps every
// node's entry for what it does later.
type Result[T any] struct {
	Yes       []int // nodes that voted yes, in the order they answered
	No        []int // nodes that refused or failed, in the order they answered
	Abstained []int // nodes that carried out the operation without a vote
	Pending   []int // nodes with no answer yet: slow, hung, or past their timeout

	need  int
	nodes []Node[T]
	err   error

	// What the nodes' operations share.
	cancel   context.CancelFunc   // releases the deadline's timer
	answered chan int             // the nodes that answered, in order; buffered: a straggler never blocks
	running  atomic.Int32         // operations that have not answered
	returned func()               // Config.Returned
	lists    [4 * smallFanOut]int // room for the lists of a small fan-out
}

// smallFanOut is the most nodes whose lists a Result holds without an
// allocation of their own.
const smallFanOut = 8

// OK reports whether the Yes votes reached the quorum.
func (r *Result[T]) OK() bool { return len(r.Yes) >= r.need }

// Need returns the yes votes the operation needed.
func (r *Result[T]) Need() int { return r.need }

// Nodes returns N, the number of nodes.
func (r *Result[T]) Nodes() int { return len(r.nodes) }

// Node returns node i's entry.
func (r *Result[T]) Node(i int) *Node[T] { return &r.nodes[i] }

// Done returns a channel closed once node i's operation has returned, even
// if that happened after Run returned.
func (r *Result[T]) Done(i int) <-chan struct{} { return r.nodes[i].done.Done() }

// Reply returns node i's reply and true once it is in.
func (r *Result[T]) Reply(i int) (Reply[T], bool) { return r.nodes[i].Reply() }

// Err returns the errors of the nodes that had answered when Run returned,
// aggregated as by Aggregate, or nil when none failed.
func (r *Result[T]) Err() error { return r.err }

// Wait blocks until every node's operation has returned, or ctx is done.
func (r *Result[T]) Wait(ctx context.Context) error {
	for i := range r.nodes {
		n := &r.nodes[i]
		if n.done.Fired() {
			continue
		}
		select {
		case <-n.done.Done():
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

// ErrNoNodes is returned by Run when Config.Nodes is not positive.
var ErrNoNodes = errors.New("fanout: no nodes")

// Run starts every node's operation in turn, from the caller's goroutine,
// and returns when the outcome is known: Need yes votes, a quorum out of
// reach (of the nodes not named silent, see Config.Silent), every node's
// timeout passed, or ctx done. Operations still running when Run returns
// go on in the background until they answer or reach their deadline; the
// result's entries track them.
func Run[T any](ctx context.Context, cfg Config, start Start[T]) (*Result[T], error) {
	if cfg.Nodes <= 0 {
		return nil, ErrNoNodes
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.Real()
	}
	need := cfg.Need
	if need <= 0 || need > cfg.Nodes {
		need = cfg.Nodes
	}
	waitAll := cfg.Need <= 0

	opCtx, cancel := ctx, context.CancelFunc(nil)
	if cfg.Timeout > 0 {
		// One deadline serves every node: they all start now.
		opCtx, cancel = clk.WithTimeout(ctx, cfg.Timeout)
	}

	n := cfg.Nodes
	res := &Result[T]{need: need, nodes: make([]Node[T], n), cancel: cancel, answered: make(chan int, n), returned: cfg.Returned}
	// The four lists hold n entries in all: each gets room for n in one
	// array, the result's own for a fan-out of a few nodes.
	lists := res.lists[:]
	if 4*n > len(res.lists) {
		lists = make([]int, 4*n)
	}
	res.Yes, res.No, res.Abstained, res.Pending = lists[0:0:n], lists[n:n:2*n], lists[2*n:2*n:3*n], lists[3*n:3*n:4*n]
	res.running.Store(int32(n))
	s := sorter[T]{res: res, outstanding: n}
	for i := range res.nodes {
		res.nodes[i].i, res.nodes[i].res = i, res
		if cfg.Silent != nil && cfg.Silent(i) {
			res.nodes[i].silent = true
			s.silent++
		}
	}
	if n-s.silent < need { // see Config.Silent
		for i := range res.nodes {
			res.nodes[i].silent = false
		}
		s.silent = 0
	}
	if cfg.Began != nil {
		cfg.Began(n)
	}
	for i := range res.nodes {
		start(opCtx, &res.nodes[i])
	}

collect:
	for s.outstanding > 0 {
		if !waitAll && (len(res.Yes) >= need || len(res.Yes)+s.outstanding-s.silent < need) {
			break
		}
		select {
		case i := <-res.answered:
			s.take(i)
		case <-opCtx.Done():
			// Replies that arrived with the deadline still count.
			for s.outstanding > 0 {
				select {
				case i := <-res.answered:
					s.take(i)
				default:
					break collect
				}
			}
		}
	}
	for i := range res.nodes {
		if !res.nodes[i].taken {
			res.Pending = append(res.Pending, i)
		}
	}
	res.err = Aggregate(s.errs...)
	return res, nil
}

// Answer hands in the node's answer: what it answered, its vote and why
// it failed or refused. Only the first call counts; later ones do nothing.
func (n *Node[T]) Answer(v T, vote Vote, err error) {
	if !n.replied.CompareAndSwap(false, true) {
		return
	}
	r := n.res
	if r.returned != nil {
		r.returned()
	}
	n.reply = Reply[T]{Value: v, Vote: vote, Err: err}
	after := n.done.fire()
	r.answered <- n.i
	if r.running.Add(-1) == 0 && r.cancel != nil {
		r.cancel() // the last one out releases the deadline's timer
	}
	for _, f := range after {
		f()
	}
}

// sorter sorts the nodes of a fan-out by their votes as they answer.
type sorter[T any] struct {
	res         *Result[T]
	errs        []error
	outstanding int
	silent      int // of outstanding, the nodes Config.Silent named
}

func (s *sorter[T]) take(i int) {
	r := s.res.nodes[i].reply // in: its done is closed before i is sent
	s.outstanding--
	if s.res.nodes[i].silent {
		s.silent--
	}
	s.res.nodes[i].taken = true
	switch r.Vote {
	case Yes:
		s.res.Yes = append(s.res.Yes, i)
	case Abstain:
		s.res.Abstained = append(s.res.Abstained, i)
	default:
		s.res.No = append(s.res.No, i)
	}
	if r.Err != nil {
		s.errs = append(s.errs, r.Err)
	}
}

// Signal is an event that happens once: a flag set, and a channel closed,
// when it fires, and functions run after it. The zero Signal is ready; its
// channel is made only when Done is first called, so that an event nobody
// selects on costs no channel.
type Signal struct {
	fired atomic.Bool
	mu    sync.Mutex    // guards ch and after, and orders them with firing
	ch    chan struct{} // made by the first Done
	after []func()
}

// Fired reports whether s has fired. Whatever was written before s fired
// is visible to a caller that sees true.
func (s *Signal) Fired() bool { return s.fired.Load() }

// Done returns a channel closed once s has fired.
func (s *Signal) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
		if s.fired.Load() {
			close(s.ch)
		}
	}
	return s.ch
}

// OnDone runs f once s has fired: at once, in the caller's goroutine, when
// it has; otherwise in the goroutine that fires it. f runs exactly once.
func (s *Signal) OnDone(f func()) {
	s.mu.Lock()
	if s.fired.Load() {
		s.mu.Unlock()
		f()
		return
	}
	s.after = append(s.after, f)
	s.mu.Unlock()
}

// Fire fires s, once, and runs the functions OnDone registered before.
func (s *Signal) Fire() {
	for _, f := range s.fire() {
		f()
	}
}

// fire fires s and returns the functions to run after it, for a caller
// with something to do first. Firing twice panics, as closing a channel
// twice does.
func (s *Signal) fire() []func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fired.Swap(true) {
		panic("fanout: Signal fired twice")
	}
	if s.ch != nil {
		close(s.ch)
	}
	after := s.after
	s.after = nil
	return after
}
