package rueidisdriver

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Gathering the calls of many goroutines into one write. Left to itself, a
// rueidis connection shared by concurrent callers writes about one command
// per write system call here: its background writer wakes for each command
// queued and flushes as soon as its queue is empty, and the master then
// reads and answers each one apart too. So the driver keeps one DoMulti in
// flight per connection, and the calls that come meanwhile wait and go out
// together in the next one: as many as came during a round trip, in one
// write, read by the master in one go. A call of Eval that finds the
// connection idle goes out at once, from its own goroutine; the others go
// out from the connection's sender goroutine.
//
// One at a time also keeps the connection out of rueidis' background mode.
// A pipe that is only ever used by one call at a time writes and reads on
// the caller's goroutine (pipe.syncDo, pipe.syncDoMulti); the first time
// two calls overlap on it, rueidis starts a writer and a reader goroutine
// for it (pipe.background), for the rest of its life, and every call then
// pays two more hand-offs between goroutines.
//
// One DoMulti on a dedicated connection is written as one run of commands
// and its replies read in order, on that connection only:
// DedicatedClient.DoMulti (rueidis client.go, dedicatedSingleClient.DoMulti)
// hands the commands to its one wire, which writes them all and flushes
// once, then reads one reply per command (pipe.go, pipe.DoMulti and
// pipe.syncDoMulti; in background mode, ring.PutMulti queues them as one
// entry, which the background writer writes whole). Each call's commands
// are contiguous in the batch, in its order, so a call's questions still go
// just ahead of its script, on the same connection, in the same round trip.

// batcher sends the calls on one connection.
type batcher struct {
	dc rueidis.DedicatedClient

	mu      sync.Mutex
	busy    bool // a DoMulti is in flight, or the sender was handed the turn to send one
	pending []entry
	stopped bool

	kick    chan struct{} // hands the sender the turn; buffered
	stop    chan struct{} // closed to end the sender
	stopper sync.Once

	// The sender's own, kept from one batch to the next so that a call
	// alone costs the batcher no allocation: the array of the batch it sent
	// last, cleared, for the calls queued next; the reply to a call of one
	// command.
	spare []entry
	one   [1]rueidis.RedisResult
}

// entry is one call's commands in a batch, and who takes their replies.
type entry struct {
	ctx context.Context
	// questions go ahead of script; nil when none do. Built with room for
	// script after them (see questionCmds).
	questions []rueidis.Completed
	script    rueidis.Completed
	to        receiver
}

// cmds returns the entry's commands, in order.
func (e *entry) cmds() []rueidis.Completed { return append(e.questions, e.script) }

// receiver takes the replies to an entry's commands, one per command, on
// the sender's goroutine: it must not block, and must not keep res, which
// the sender uses again once sent returns.
type receiver interface {
	sent(res []rueidis.RedisResult)
}

// waiter is the receiver of a caller that waits (batcher.do).
type waiter struct {
	res  []rueidis.RedisResult
	done chan struct{}
}

func (w *waiter) sent(res []rueidis.RedisResult) {
	w.res = append([]rueidis.RedisResult(nil), res...)
	close(w.done)
}

// newBatcher starts the sender of dc, counted in senders until it ends.
func newBatcher(dc rueidis.DedicatedClient, senders *sync.WaitGroup) *batcher {
	b := &batcher{dc: dc, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	senders.Go(b.run)
	return b
}

// do sends questions and script and returns their replies, one per
// command, within ctx: at once from the caller's goroutine when the
// connection is idle, or else with the next batch.
func (b *batcher) do(ctx context.Context, questions []rueidis.Completed, script rueidis.Completed) []rueidis.RedisResult {
	n := len(questions) + 1
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return fill(n, rueidis.ErrClosing)
	}
	if !b.busy {
		b.busy = true
		b.mu.Unlock()
		var res []rueidis.RedisResult
		if len(questions) == 0 {
			res = []rueidis.RedisResult{b.dc.Do(ctx, script)}
		} else {
			res = b.dc.DoMulti(ctx, append(questions, script)...)
		}
		b.idle()
		return res
	}
	w := &waiter{done: make(chan struct{})}
	b.pending = append(b.pending, entry{ctx, questions, script, w})
	wake := !b.busy
	b.busy = true
	b.mu.Unlock()
	if wake {
		b.wake()
	}
	select {
	case <-w.done:
		return w.res
	case <-ctx.Done():
		// The sender skips a call whose ctx has ended, and drops the
		// replies of one it sent.
		return fill(n, ctx.Err())
	}
}

// start queues questions and script for the sender, which hands their
// replies to to, and returns at once. After the batcher stopped, to takes
// rueidis.ErrClosing before start returns.
func (b *batcher) start(ctx context.Context, questions []rueidis.Completed, script rueidis.Completed, to receiver) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		to.sent(fill(len(questions)+1, rueidis.ErrClosing))
		return
	}
	b.pending = append(b.pending, entry{ctx, questions, script, to})
	wake := !b.busy
	b.busy = true
	b.mu.Unlock()
	if wake {
		b.wake()
	}
}

// idle ends a DoMulti sent from a caller's goroutine: its turn ends, or,
// when calls queued meanwhile, passes to the sender, which takes them.
func (b *batcher) idle() {
	b.mu.Lock()
	if len(b.pending) == 0 {
		b.busy = false
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	b.wake()
}

// wake hands the sender the turn, marked busy: there is one turn, as much
// as kick has room for, and only the sender ends a turn it was handed.
func (b *batcher) wake() { b.kick <- struct{}{} }

// run is the sender: given the turn, it sends what has queued, one batch
// at a time, until nothing has; until stopped, and then fails what is left.
func (b *batcher) run() {
	for {
		select {
		case <-b.kick:
		case <-b.stop:
			b.mu.Lock()
			left := b.pending
			b.pending, b.stopped = nil, true
			b.mu.Unlock()
			for _, e := range left {
				e.to.sent(fill(len(e.questions)+1, rueidis.ErrClosing))
			}
			return
		}
		for b.sendQueued() {
		}
	}
}

// sendQueued sends the calls queued, as one DoMulti, and reports whether
// it did; when none were queued, the sender's turn ends.
func (b *batcher) sendQueued() bool {
	b.mu.Lock()
	batch := b.pending
	if len(batch) == 0 {
		b.busy = false
		b.mu.Unlock()
		return false
	}
	b.pending, b.spare = b.spare, nil
	b.mu.Unlock()

	var (
		last time.Time
		n    int // commands
		live = batch[:0]
	)
	for _, e := range batch {
		if err := e.ctx.Err(); err != nil {
			e.to.sent(fill(len(e.questions)+1, err)) // nothing is sent for it
			continue
		}
		// Every call has a deadline: see Master.Eval and Master.Start.
		if dl, _ := e.ctx.Deadline(); dl.After(last) {
			last = dl
		}
		n += len(e.questions) + 1
		live = append(live, e)
	}
	switch {
	case len(live) == 1 && n == 1:
		// A call alone goes with its own ctx, and a command alone with
		// Do, which writes and reads it as DoMulti would.
		b.one[0] = b.dc.Do(live[0].ctx, live[0].script)
		live[0].to.sent(b.one[:])
		b.one[0] = rueidis.RedisResult{}
	case len(live) == 1:
		live[0].to.sent(b.dc.DoMulti(live[0].ctx, live[0].cmds()...))
	case len(live) > 1:
		// The batch lasts as long as its longest-lived call, whatever
		// becomes of the calls' own contexts; a caller that waits returns
		// at its own deadline.
		cmds := make([]rueidis.Completed, 0, n)
		for _, e := range live {
			cmds = append(append(cmds, e.questions...), e.script)
		}
		ctx, cancel := context.WithDeadline(context.Background(), last)
		res := b.dc.DoMulti(ctx, cmds...)
		cancel()
		for _, e := range live {
			n := len(e.questions) + 1
			e.to.sent(res[:n:n])
			res = res[n:]
		}
	}
	clear(batch)
	b.spare = batch[:0]
	return true
}

// close has the sender end, once its DoMulti in flight has returned. It
// does not wait, so that the sender itself may call it.
func (b *batcher) close() {
	b.stopper.Do(func() { close(b.stop) })
}

// questionCmds builds the guard's questions as commands, with room for
// the script after them; nil when there are none.
func questionCmds(client rueidis.CommandClient, questions [][]string) []rueidis.Completed {
	if len(questions) == 0 {
		return nil
	}
	cmds := make([]rueidis.Completed, 0, len(questions)+1)
	for _, q := range questions {
		cmds = append(cmds, client.B().Arbitrary(q...).Build())
	}
	return cmds
}

func fill(n int, err error) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, n)
	for i := range res {
		res[i] = rueidis.NewErrorResult(err)
	}
	return res
}
