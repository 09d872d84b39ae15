package driver

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/clock"
)

// How a Gate paces the calls to a silent master: the first probe goes
// MinRedial after the master fell silent, and each next one twice as long
// after the last failed, up to MaxRedial. A master stopped for two seconds
// thus gets two probes from each client (at about 0.45s and 1.3s with
// 50ms calls), hence two new connections, with room for one more that a
// call made as it stopped may open; one that comes back is probed again
// within MaxRedial. MinRedial is eight of the lock's default node timeouts
// (50ms), so that calls which time out one after another do not each
// probe.
const (
	MinRedial = 400 * time.Millisecond
	MaxRedial = time.Second
)

// ErrSilent is the error of a call a Gate did not let through: its master
// answered nothing to the calls before it, and one probe is already under
// way or due later. It also matches context.DeadlineExceeded (errors.Is)
// and is a net.Error whose Timeout is true: the caller learns no more than
// from a call that timed out, and must not count on more (the call was not
// sent, but the lock treats it as a call that got no reply).
var ErrSilent error = &silentError{}

type silentError struct{}

func (*silentError) Error() string {
	return "driver: the master answers nothing: call not sent while a probe is due or under way"
}

// Is makes ErrSilent match context.DeadlineExceeded.
func (*silentError) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as for a call that timed out.
func (*silentError) Timeout() bool { return true }

// Temporary reports true: the master may answer again.
func (*silentError) Temporary() bool { return true }

// Gate keeps one client from dialling a master that answers nothing at
// every call's deadline. Replacing a connection whose call timed out is
// right: no late reply may be taken for another call's. But while the
// master is stopped (SIGSTOP, a fork, swap) its kernel still queues every
// new connection, and it meets them all at once when it runs again.
//
// A master falls silent when a call reached its deadline and nothing was
// answered in the second half of its wait (TimedOut), or when the driver
// judged so itself (NoReply). While it is silent, one call at a time goes
// through, the probe, at the pace of MinRedial and MaxRedial; the others
// wait for the probe's outcome or for the next probe when their deadline
// allows, and otherwise fail at once with ErrSilent. Any answer of the
// master, to the probe or to a call sent before, ends the silence
// (Answered): calls go through at once again.
//
// A driver asks Enter before a call that may open a connection and reports
// how it ended (Left): Answered for any reply (an error reply too),
// TimedOut when its deadline passed first, Failed when it ended
// otherwise. Its methods are safe for concurrent use; a healthy master costs
// Enter an atomic load and a reading of the clock, and Answered the same and
// an atomic store.
type Gate struct {
	clock  clock.Clock
	born   time.Time    // the gate's epoch, with a monotonic reading
	silent atomic.Bool  // read without the lock on every Enter
	_      [64]byte     // last, written on every answer, on a cache line of its own
	last   atomic.Int64 // when the master last answered, as a time.Duration since born
	_      [56]byte

	mu      sync.Mutex
	probes  uint64        // probes let through so far: each Pass.probe is unique
	probing uint64        // the probe under way, 0 when none
	next    time.Time     // no probe before
	backoff time.Duration // the wait after the next failed probe
	wake    chan struct{} // closed when the master answers; replaced when it falls silent
	verdict chan struct{} // closed when the probe under way ends
}

// Pass is what Enter let a call through with; the driver hands it back with
// the call's outcome.
type Pass struct {
	since time.Duration // when given, since the gate's born
	probe uint64        // the probe's number; 0 for a call that is not a probe
}

// Probe reports whether the call is the one probe of a silent master.
func (p Pass) Probe() bool { return p.probe != 0 }

// NewGate returns a gate for one master, timed by clk (clock.Real() when
// nil).
func NewGate(clk clock.Clock) *Gate {
	if clk == nil {
		clk = clock.Real()
	}
	return &Gate{clock: clk, born: clk.Now()}
}

// Silent reports whether the master is silent.
func (g *Gate) Silent() bool { return g.silent.Load() }

// maxEnterWaits bounds how many probes a call waits for before it gives up.
const maxEnterWaits = 3

// Enter lets a call through, or returns ErrSilent (or ctx's error if it is
// cancelled). A master that is not silent lets every call through. A silent
// one lets one probe through once its pace allows. A call that comes while
// the probe is under way waits for its outcome, within its ctx, and goes
// through if the master answered: a release that follows an acquire the
// master never answered is sent as soon as the master is heard again, not
// at its caller's next try. A call that comes before the probe is due waits
// for that moment if its ctx's deadline leaves it MinRedial after it (a ctx
// without a deadline always waits), and otherwise fails at once: a probe
// with only moments left could not tell a master that came back from one
// still silent.
func (g *Gate) Enter(ctx context.Context) (Pass, error) {
	if !g.silent.Load() {
		return Pass{since: g.clock.Since(g.born)}, nil
	}
	for range maxEnterWaits {
		g.mu.Lock()
		if !g.silent.Load() {
			g.mu.Unlock()
			return Pass{since: g.clock.Since(g.born)}, nil
		}
		if g.probing != 0 {
			verdict := g.verdict
			g.mu.Unlock()
			select {
			case <-verdict:
				continue
			case <-ctx.Done():
				return Pass{}, ctxErr(ctx)
			}
		}
		now := g.clock.Now()
		wait := g.next.Sub(now)
		if wait <= 0 {
			g.probes++
			g.probing = g.probes
			g.verdict = make(chan struct{})
			p := Pass{since: g.clock.Since(g.born), probe: g.probing}
			g.mu.Unlock()
			return p, nil
		}
		if dl, ok := ctx.Deadline(); ok && dl.Sub(now) < wait+MinRedial {
			g.mu.Unlock()
			return Pass{}, ErrSilent
		}
		wake := g.wake
		g.mu.Unlock()
		t := g.clock.NewTimer(wait)
		select {
		case <-t.C():
		case <-wake:
		case <-ctx.Done():
			t.Stop()
			return Pass{}, ctxErr(ctx)
		}
		t.Stop()
	}
	return Pass{}, ErrSilent
}

// ctxErr is Enter's error for a call whose ctx ended while it waited:
// ErrSilent at a deadline (the call was not sent for want of an answer),
// ctx's error otherwise.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrSilent
	}
	return ctx.Err()
}

// Answered records a reply of the master, to any call: it is not silent.
func (g *Gate) Answered() {
	g.last.Store(int64(g.clock.Since(g.born)))
	if !g.silent.Load() {
		return
	}
	g.mu.Lock()
	if g.silent.Load() {
		g.silent.Store(false)
		g.endProbe()
		close(g.wake)
	}
	g.mu.Unlock()
}

// TimedOut records that the call let through with p reached its deadline
// without a reply. If the master answered nothing in the second half of the
// call's wait, it is silent, and p's probe, if p is one, failed. A master
// that answered other calls meanwhile is busy, not silent. (Half, not all
// of it: a call sent just before the master stopped saw the answers of the
// calls before it, and its timing out should still tell.)
func (g *Gate) TimedOut(p Pass) {
	now := g.clock.Since(g.born)
	if time.Duration(g.last.Load()) < p.since+(now-p.since)/2 {
		g.NoReply(p)
	}
}

// Left records how the call let through with p ended: answered, the
// master replied (an error reply too), as Answered; or else by err, a
// deadline (context.DeadlineExceeded, or a net.Error that timed out) as
// TimedOut, and anything else as Failed.
func (g *Gate) Left(p Pass, answered bool, err error) {
	var ne net.Error
	switch {
	case answered:
		g.Answered()
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		g.TimedOut(p)
	default:
		g.Failed(p)
	}
}

// NoReply records that the master answered nothing while the call let
// through with p waited, up to its deadline, as the driver judged by its
// own count of replies (see TimedOut for the gate's): the master is silent,
// and p's probe, if p is one, failed.
func (g *Gate) NoReply(p Pass) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.silent.Load() {
		g.silent.Store(true)
		g.wake = make(chan struct{})
		g.endProbe()
		g.backoff = MinRedial
		g.next = g.clock.Now().Add(MinRedial)
		return
	}
	g.failed(p)
}

// Failed records that the call let through with p ended without an answer
// and without reaching its deadline: a dial refused, a connection reset,
// a cancelled call. If p is the probe, the probe failed, and the next one
// waits its turn; otherwise nothing is learned.
func (g *Gate) Failed(p Pass) {
	if p.probe == 0 {
		return
	}
	g.mu.Lock()
	g.failed(p)
	g.mu.Unlock()
}

// failed ends p's probe, if it is the one under way, without an answer.
// The caller holds g.mu.
func (g *Gate) failed(p Pass) {
	if p.probe == 0 || p.probe != g.probing {
		return
	}
	g.endProbe()
	g.backoff = min(2*g.backoff, MaxRedial)
	g.next = g.clock.Now().Add(g.backoff)
}

// endProbe ends the probe under way, if any: the calls waiting for its
// outcome look again. The caller holds g.mu.
func (g *Gate) endProbe() {
	if g.probing != 0 {
		g.probing = 0
		close(g.verdict)
	}
}

// Gates holds a Gate per server, made on first use, for a driver that
// reaches several (the masters of a Redis Cluster). The zero value is
// ready; its methods are safe for concurrent use.
type Gates struct {
	m sync.Map // server → *Gate
}

// For returns server's gate.
func (gs *Gates) For(server string) *Gate {
	if g, ok := gs.m.Load(server); ok {
		return g.(*Gate)
	}
	g, _ := gs.m.LoadOrStore(server, NewGate(nil))
	return g.(*Gate)
}
