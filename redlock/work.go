package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

// work counts what a client still owes the masters: the operations in
// flight and every background write they leave behind (a straggler's
// delete, a roll-back, a retake), plus the watchdogs and subscribers.
//
// Close must wait for all of it before it closes the pools, or a delete
// that could still land is abandoned. A sync.WaitGroup cannot serve: its
// Add may not race with Wait, and work in flight adds more as it goes.
// Here new operations are refused once closing has begun, and work that is
// already counted may add to it at any time, so the count can only reach
// zero once, after the last of it.
type work struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed when closing and n is zero
	ended   func()        // done, as a value made once
}

func newWork() *work {
	w := &work{idle: make(chan struct{})}
	w.ended = w.done
	return w
}

// enter counts a new operation. It reports false once the client is
// closing: the operation must not start.
func (w *work) enter() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return false
	}
	w.n++
	return true
}

// add counts n more pieces of work. Only work already counted may call it,
// so the count is above zero and Close is still waiting.
func (w *work) add(n int) {
	w.mu.Lock()
	w.n += n
	w.mu.Unlock()
}

// done ends one piece of work.
func (w *work) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n--
	if w.n == 0 && w.closing {
		close(w.idle)
	}
}

// close refuses new operations and returns a channel closed once all the
// work counted has ended.
func (w *work) close() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closing {
		w.closing = true
		if w.n == 0 {
			close(w.idle)
		}
	}
	return w.idle
}

// fanOut runs op on the nodes cfg says, each in a goroutine, each node's
// part counted as the client's work until it returns, even after the
// fan-out has returned: Close waits for the stragglers.
func fanOut[T any](ctx context.Context, c *Client, cfg fanout.Config, op fanout.Op[T]) (*fanout.Result[T], error) {
	return fanOutStarts(ctx, c, cfg, func(ctx context.Context, n *fanout.Node[T]) {
		go func() { n.Answer(op(ctx, n.Index())) }()
	})
}

// fanOutStarts is fanOut with operations that reply when they are done
// (fanout.Start): a node's part is the client's work until it replies.
func fanOutStarts[T any](ctx context.Context, c *Client, cfg fanout.Config, start fanout.Start[T]) (*fanout.Result[T], error) {
	if cfg.Nodes <= 0 {
		return fanout.RunStarts(ctx, cfg, start)
	}
	c.work.add(cfg.Nodes)
	cfg.Returned = c.work.ended
	return fanout.RunStarts(ctx, cfg, start)
}

// overMasters is a fan-out to every master that needs need yes votes, each
// master bounded by timeout.
func (c *Client) overMasters(need int, timeout time.Duration) fanout.Config {
	return fanout.Config{Nodes: len(c.nodes), Need: need, Timeout: timeout, Clock: c.o.clock}
}

// silent reports whether master i answers nothing at all: its last call
// got no reply within its timeout, and no call got an answer for a node
// timeout (see server). An acquisition does not hold on for such a master
// (see fanout.Config.Silent, hearOut, rollback): a master paused, or cut
// off with its connection open, would otherwise hold every contended round
// for the whole node timeout, the round's grants on the other masters in
// the way of the other contenders all along. Its requests still go out,
// and its first answer makes it one to wait for again.
func (c *Client) silent(i int) bool {
	s := c.nodes[i].silent(c.o.nodeTimeout)
	c.observeSilence(i, s)
	return s
}

// spawn runs f in the background, counted as the client's work.
func (c *Client) spawn(f func()) {
	c.work.add(1)
	go func() {
		defer c.work.done()
		f()
	}()
}
