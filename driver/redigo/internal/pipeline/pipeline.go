package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Pipeline is one master's calls over a fixed number of shared connections
// (pipes), opened when first needed and replaced when they fail, or when
// they fall silent and a dial is due (see pipe).
type Pipeline struct {
	dial  func(ctx context.Context) (net.Conn, error)
	dials atomic.Uint64 // connections opened so far, for the driver's tests
	read  time.Duration // bounds a call whose ctx has no deadline
	write time.Duration // the write timeout
	slots []connSlot
	next  atomic.Uint32 // round robin over the slots
	reqs  sync.Pool     // *request, reused once answered

	mu     sync.Mutex
	open   map[*pipe]struct{} // every pipe not yet failed, replaced ones included
	closed bool
	bg     sync.WaitGroup // the pipes' readers and background writers, and the dials

	life context.Context // done once Close began: it ends the dials under way
	end  context.CancelFunc
}

// connSlot holds one of the shared connections.
type connSlot struct {
	cur     atomic.Pointer[pipe] // p, read without the lock
	mu      sync.Mutex
	p       *pipe
	dialing *dial // the dial under way, or nil
	// Dialling a silent master, to replace a silent pipe or after a dial
	// it did not answer: the last such dial, and how long after it the
	// next may go (see replace).
	dialedAt time.Time
	backoff  time.Duration
	// unanswered is why the last dial failed when the master did not
	// answer it (see unanswered), until a dial succeeds.
	unanswered error
	// refusals: the dials in a row that the master refused, or whose
	// connection it closed before it served a call, which space the next.
	refusals driver.Refusals
}

// Spacing of the dials that replace a silent pipe. The first goes at once;
// while the master stays silent, each waits twice as long as the one
// before, up to maxSilentBackoff. Dials further apart than resetSilentAfter
// start again from the first.
const (
	minSilentBackoff = 500 * time.Millisecond
	maxSilentBackoff = 4 * time.Second
	resetSilentAfter = 2 * maxSilentBackoff
)

// replace reports whether a dial to the slot's silent master may go now,
// and then counts the dial. The caller holds s.mu. Until a dial is due a
// silent pipe keeps taking requests (they run, in order, if the master
// comes back), or, with no pipe open, calls fail at once: a hung master
// is not dialled at every deadline.
func (s *connSlot) replace(now time.Time) bool {
	since := now.Sub(s.dialedAt)
	switch {
	case s.dialedAt.IsZero() || since >= resetSilentAfter:
		s.backoff = minSilentBackoff
	case since < s.backoff:
		return false
	default:
		s.backoff = min(2*s.backoff, maxSilentBackoff)
	}
	s.dialedAt = now
	return true
}

// Config is what a Pipeline needs of its master.
type Config struct {
	// Dial opens a connection ready for commands, within ctx: TLS, AUTH
	// and SELECT done, and no deadline set.
	Dial func(ctx context.Context) (net.Conn, error)
	// Conns is how many connections the calls share, taken in turn; at
	// least 1.
	Conns int
	// ReadTimeout bounds a call whose ctx has no deadline; 0 means no bound.
	ReadTimeout time.Duration
	// WriteTimeout bounds a write made in the background; 0 means no bound.
	WriteTimeout time.Duration
}

// New returns a Pipeline that opens no connection before its first call.
func New(c Config) *Pipeline {
	pl := &Pipeline{dial: c.Dial, read: c.ReadTimeout, write: c.WriteTimeout, slots: make([]connSlot, c.Conns), open: map[*pipe]struct{}{}}
	pl.life, pl.end = context.WithCancel(context.Background())
	pl.reqs.New = func() any { return &request{done: make(chan struct{}, 1)} }
	return pl
}

// slot returns the next slot, round robin.
func (pl *Pipeline) slot() *connSlot {
	if len(pl.slots) == 1 {
		return &pl.slots[0]
	}
	return &pl.slots[int(pl.next.Add(1)%uint32(len(pl.slots)))]
}

// open returns the slot's pipe if it is taking requests and not silent, or
// nil.
func (s *connSlot) open() *pipe {
	if p := s.cur.Load(); p != nil && p.accepting.Load() && !p.silent.Load() {
		return p
	}
	return nil
}

// maxPipeWaits bounds how many dials of other callers a caller waits for
// before it gives up on getting a pipe.
const maxPipeWaits = 8

// get returns a pipe that takes requests, opening one in the slot's place
// when its pipe has failed, or has fallen silent and a dial is due (see
// connSlot.replace). One caller dials; the others wait for it within their
// ctx, or, while a silent pipe is still open, go on it. lost reports that
// a pipe was replaced because its connection had dropped.
func (pl *Pipeline) get(ctx context.Context) (p *pipe, lost bool, err error) {
	s := pl.slot()
	if p := s.open(); p != nil {
		return p, false, nil
	}
	for range maxPipeWaits {
		s.mu.Lock()
		old := s.p
		if old != nil && old.accepting.Load() && (!old.silent.Load() || s.dialing != nil || !s.replace(time.Now())) {
			s.mu.Unlock()
			return old, lost, nil
		}
		if old != nil && !old.accepting.Load() {
			lost = lost || old.lost()
			switch why := old.refused(); {
			case why != nil:
				s.refusals.Add(why, time.Now())
			case old.hasServed():
				s.refusals.Served()
			}
			s.p, old = nil, nil
			s.cur.Store(nil)
		}
		if d := s.dialing; d != nil {
			s.mu.Unlock()
			select {
			case <-d.done:
				continue
			case <-ctx.Done():
				return nil, lost, ctx.Err()
			}
		}
		err := s.refusals.Held(time.Now())
		if err == nil && old == nil && s.unanswered != nil && !s.replace(time.Now()) {
			err = s.unanswered
		}
		if err != nil {
			s.mu.Unlock()
			if old != nil {
				return old, lost, nil // the silent pipe is still open: the call goes on it
			}
			return nil, lost, err
		}
		d := &dial{done: make(chan struct{})}
		if !pl.goDial(ctx, s, d, old) {
			s.mu.Unlock()
			return nil, lost, errClosed
		}
		s.mu.Unlock()
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, lost, ctx.Err() // the dial goes on, for the calls after this one
		}
		if d.err != nil && old != nil && old.accepting.Load() {
			return old, lost, nil // the silent pipe is still open: the call goes on it
		}
		return d.p, lost, d.err
	}
	return nil, lost, errors.New("redigo: no connection: dials by other calls kept failing")
}

// dial is a dial of a slot's connection under way; p and err are its
// outcome once done is closed.
type dial struct {
	done chan struct{}
	p    *pipe
	err  error
}

// goDial starts d, in the slot's place, on a goroutine of its own: the
// caller that asked for it waits for it within its ctx, but the dial runs to
// the ctx's deadline even when the caller gives up sooner (the call it was
// for got its answer elsewhere, or was cancelled), so that what it finds
// (a connection, a refusal, no answer) serves the next calls and spaces the
// next dial. Close ends it. The caller holds s.mu; goDial reports false
// when the pipeline is closed.
func (pl *Pipeline) goDial(ctx context.Context, s *connSlot, d *dial, old *pipe) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return false
	}
	s.dialing = d
	pl.bg.Add(1)
	dctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(nil)
	if dl, ok := ctx.Deadline(); ok {
		dctx, cancel = context.WithDeadline(dctx, dl)
	} else {
		dctx, cancel = context.WithCancel(dctx)
	}
	stop := context.AfterFunc(pl.life, cancel)
	go func() {
		defer pl.bg.Done()
		p, err := pl.openPipe(dctx)
		stop()
		cancel()
		s.mu.Lock()
		s.dialing = nil
		switch {
		case err == nil:
			s.p = p
			s.cur.Store(p)
			s.unanswered = nil
		case errors.Is(err, errClosed):
		case driver.Refused(err):
			s.refusals.Add(err, time.Now())
		case unanswered(err):
			if s.unanswered == nil && old == nil {
				s.replace(time.Now()) // the first: later ones were counted before they went
			}
			s.unanswered = fmt.Errorf("redigo: master silent, not dialled again yet: %w", err)
		}
		s.mu.Unlock()
		d.p, d.err = p, err
		close(d.done)
		if err == nil && old != nil {
			old.retire()
		}
	}()
	return true
}

// unanswered reports whether a dial failed because the master did not
// answer in time: a host that drops packets, or a master hung with its
// listen queue full, or before it answered the connection's setup. The
// next dial then waits as one replacing a silent pipe does: a dial at
// every deadline would queue a connection at every deadline on a master
// that is only stopped, all accepted at once when it runs again. A dial
// ended by Close does not count.
func unanswered(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// Dials returns how many connections the pipeline has opened so far.
func (pl *Pipeline) Dials() uint64 { return pl.dials.Load() }

// openPipe opens a pipe, counted in Dials.
func (pl *Pipeline) openPipe(ctx context.Context) (*pipe, error) {
	nc, err := pl.dial(ctx)
	if err != nil {
		return nil, err
	}
	pl.dials.Add(1)
	p := newPipe(pl, nc, pl.write)
	pl.mu.Lock()
	if pl.closed {
		pl.mu.Unlock()
		nc.Close()
		return nil, errClosed
	}
	pl.open[p] = struct{}{}
	pl.bg.Add(1)
	pl.mu.Unlock()
	go p.read()
	return p, nil
}

// forget drops a pipe that failed.
func (pl *Pipeline) forget(p *pipe) {
	pl.mu.Lock()
	delete(pl.open, p)
	pl.mu.Unlock()
}

// Close fails every pipe and waits for their goroutines: calls waiting on
// them return an error at once, and calls after it fail.
func (pl *Pipeline) Close() {
	pl.mu.Lock()
	pl.closed = true
	pl.end()
	open := make([]*pipe, 0, len(pl.open))
	for p := range pl.open {
		open = append(open, p)
	}
	pl.mu.Unlock()
	for _, p := range open {
		p.fail(errClosed)
	}
	pl.bg.Wait()
}

func (pl *Pipeline) request() *request {
	q := pl.reqs.Get().(*request)
	q.buf, q.vals = q.buf[:0], q.vals[:0]
	return q
}

// recycle keeps an answered request for reuse. An abandoned one is never
// recycled: its reply may still come.
func (pl *Pipeline) recycle(q *request) {
	clear(q.vals)
	q.err, q.notify, q.expires = nil, nil, time.Time{}
	q.queued, q.complete, q.abandoned = false, false, false
	q.started = started{}
	if cap(q.buf) > maxBufferKept {
		q.buf = nil
	}
	pl.reqs.Put(q)
}
