package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// pipe is one connection to the master that many callers share: their
// commands go out together, in one write when they come at once, and the
// replies come back in the order the commands went out, which is how they
// are matched to their callers (FIFO).
//
// Every request keeps its own deadline. A caller whose deadline passes
// stops waiting at once; its request keeps its place in the queue, so that
// its reply, if it ever comes, is read and dropped and can never be taken
// for another request's. If the master answered nothing on the connection
// while the request waited, the master may be hung or the connection dead:
// the pipe is silent until a reply comes. A silent pipe still takes
// requests, which queue behind the others and run, in order, if the master
// comes back; its pipeline replaces it with a new connection only when a
// dial is due (see connSlot.replace): one dial at a time, spaced by a
// backoff while the master stays silent, so that a hung master is not
// dialled at every deadline. A replaced pipe takes no new request, the
// callers already waiting on it keep waiting up to their own deadlines (a
// master that is only slow still answers them), and it is closed once none
// is left waiting. If the master did answer meanwhile, the request timed
// out queued behind others: the master is busy, not hung, and the pipe is
// not silent. A request whose ctx is cancelled, rather than timed out, also
// stops waiting and keeps its place, and says nothing of the master. A
// request that timed out may still run on the master later: its commands
// may be in the master's socket already, whatever is done with the
// connection.
//
// Ordering: the commands of one request (the restart guard's questions and
// the script) go out contiguously and are answered in one run, by the same
// server. Requests sent on one connection run on the master in the order
// they were sent, so a request sent after another one's reply, or after it
// was merely sent on the same pipe, runs after it. Where that helps the
// lock: an acquire that timed out while the master kept answering others
// keeps its connection, and the delete the lock then sends goes out behind
// it on that connection and runs after it. The lock does not rely on this:
// it sends a release or a roll-back to a master only once that master's
// acquire has returned, answered or timed out, and when the acquire's
// connection was discarded the delete goes out on another one and may
// overtake the acquire still in the network; the tombstone the delete
// leaves is what refuses such a late acquire (see package redlock).
type pipe struct {
	nc    net.Conn // after the handshake: TLS, AUTH and SELECT done
	raw   net.Conn // what closing closes: the TCP connection under TLS, so that no close_notify is waited for
	tls   bool
	br    *bufio.Reader // the reader goroutine's alone
	pl    *Pipeline
	write time.Duration // bounds a write made in the background

	// accepting is false once the pipe is replaced or has failed: it takes
	// no new request. silent mirrors silentSince being set. Both are read
	// without the lock to pick a pipe.
	accepting, silent atomic.Bool
	// checked: the guard's questions were answered on the connection, and
	// taken (see Answered). Until then it is fresh.
	checked atomic.Bool

	mu      sync.Mutex
	out     []byte // commands accepted and not yet written
	spare   []byte // the buffer the last write used, for reuse
	writing bool   // a writer is at work: commands accepted now go out with its next write
	// notifying: the reader is telling a started call of its reply. A
	// request sent meanwhile (often a call that follows the one answered)
	// does not write at once: owed marks it, and the reader writes what is
	// queued once it has handed out the replies it holds (see flushOwed),
	// so that the calls its replies start go out in one write.
	notifying, owed bool
	queue           []*request // requests whose replies are not all in, in the order of their commands
	head            int        // queue[head] is the next to be answered
	waiting         int        // requests in the queue whose callers still wait
	replies         uint64     // replies read so far
	// silentSince is when a request timed out while the master answered
	// nothing on the connection; zero once a reply comes.
	silentSince time.Time
	replaced    bool  // the pipeline took another connection in its place: closed once nobody waits
	err         error // the connection failed or was closed; every waiting caller has been told
	// served: a reply that is not an error came; errReply is the last
	// error reply before one did, NOSCRIPT aside (see refused).
	served   bool
	errReply driver.Error
	// The started calls' deadlines: one timer, set for the earliest
	// deadline of a started call in the queue (next), or stopped (next zero).
	timer *time.Timer
	next  time.Time
}

// request is one caller's unit: one or more commands whose replies come
// back together.
type request struct {
	buf  []byte // the unit's commands, encoded
	want int    // how many replies the unit has
	vals []any  // the replies so far, in the neutral form
	err  error  // the connection failed before every reply came
	done chan struct{}
	// notify, when set, is told instead of done being signalled, once vals
	// or err is final and its caller still waits, outside the pipe's lock:
	// a started call (see Start, in call.go).
	notify notifier
	// expires, for a started call (notify set), is its deadline: the pipe's
	// timer abandons it then (see expireDue). Zero for a caller that waits.
	expires time.Time
	// Under the pipe's lock: queued once send took it; complete once vals
	// or err is final; abandoned once its caller stopped waiting (a
	// request abandoned before it was queued is refused by send); mark is
	// the pipe's replies when the request was queued.
	queued, complete, abandoned bool
	mark                        uint64
	// started is the call that Start sent with the request, if any: the
	// request's notify (see Start, in call.go).
	started started
}

// Limits of a writer.
const (
	// maxInlineRounds: a caller that writes for the others gives the work to
	// a goroutine after this many writes, so that its own reply is not held
	// up by a steady stream of other callers' commands.
	maxInlineRounds = 4
	// maxBufferKept: a write buffer that grew beyond this is dropped rather
	// than kept for the next write.
	maxBufferKept = 256 << 10
)

// Why a pipe stopped.
var (
	errDiscarded = errors.New("redigo: connection discarded after a request timed out")
	errClosed    = errors.New("redigo: closed")
	errNotSent   = errors.New("redigo: connection stopped taking requests") // internal: try another pipe
)

func newPipe(pl *Pipeline, nc net.Conn, writeTimeout time.Duration) *pipe {
	p := &pipe{nc: nc, raw: nc, pl: pl, write: writeTimeout, br: bufio.NewReaderSize(nc, 16<<10)}
	if c, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS: *tls.Conn, refusalConn
		p.raw, p.tls = c.NetConn(), true
	}
	p.accepting.Store(true)
	return p
}

// send queues q's commands on the pipe, and writes them at once when no
// other caller is writing; otherwise they go out with that caller's next
// write. It reports false, having sent nothing, when the pipe takes no new
// requests. deadline is q's; the zero time means none.
func (p *pipe) send(q *request, deadline time.Time) bool {
	p.mu.Lock()
	if !p.accepting.Load() || q.abandoned {
		p.mu.Unlock()
		return false
	}
	q.queued = true
	p.out = append(p.out, q.buf...)
	q.mark = p.replies
	p.queue = append(p.queue, q)
	p.waiting++
	if !q.expires.IsZero() && (p.next.IsZero() || q.expires.Before(p.next)) {
		p.arm(q.expires)
	}
	start := !p.writing && !p.notifying
	if start {
		p.writing = true
	} else if !p.writing {
		p.owed = true
	}
	if start && (p.tls || deadline.IsZero()) {
		// A write cut short by a deadline breaks a TLS connection for good,
		// so TLS writes are made in the background, bounded by the write
		// timeout only, and the caller bounded by its own deadline.
		p.background()
		start = false
	}
	others := p.waiting > 1
	p.mu.Unlock()
	if start {
		if others {
			// Other calls are in flight, and more are likely on their way:
			// let them queue their commands, to go out in this write.
			runtime.Gosched()
		}
		p.writeInline(deadline)
	}
	return true
}

// writeInline writes what is queued, and what is queued meanwhile, for up
// to maxInlineRounds writes, each bounded by the caller's deadline. Then, or
// when a write is cut short by that deadline (nothing is lost: the rest is
// put back first in line), a goroutine takes over.
func (p *pipe) writeInline(deadline time.Time) {
	var buf []byte
	for round := 0; ; round++ {
		if buf = p.take(buf, round == maxInlineRounds); buf == nil {
			return
		}
		p.nc.SetWriteDeadline(deadline)
		n, err := p.nc.Write(buf)
		if err == nil {
			continue
		}
		if !netTimeout(err) {
			p.fail(err)
			return
		}
		// Cut short by the caller's deadline, with n bytes out: a plain TCP
		// stream is intact, the rest goes first.
		p.mu.Lock()
		p.out = append(buf[n:len(buf):len(buf)], p.out...)
		if p.err == nil {
			p.background()
		}
		p.mu.Unlock()
		return
	}
}

// background starts a goroutine that writes until nothing is queued. The
// caller holds p.mu and has set p.writing.
func (p *pipe) background() {
	p.pl.bg.Add(1) // the reader's count is held until p.err is set, which the caller checked
	go func() {
		defer p.pl.bg.Done()
		var buf []byte
		for {
			if buf = p.take(buf, false); buf == nil {
				return
			}
			var dl time.Time
			if p.write > 0 {
				dl = time.Now().Add(p.write)
			}
			p.nc.SetWriteDeadline(dl)
			if _, err := p.nc.Write(buf); err != nil {
				p.fail(err)
				return
			}
		}
	}()
}

// take is a writer's turn: it keeps the buffer the writer last wrote
// (written) for reuse, and returns what is queued for the writer to write
// next, or nil when the writer stops: nothing is queued or the pipe failed
// (p.writing is cleared), or, with handOff, a goroutine takes the writing
// over.
func (p *pipe) take(written []byte, handOff bool) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.keep(written)
	if p.err != nil || len(p.out) == 0 {
		p.writing = false
		return nil
	}
	if handOff {
		p.background()
		return nil
	}
	buf := p.out
	p.out, p.spare = p.spare[:0], nil
	return buf
}

// keep keeps a written buffer for the next write. The caller holds p.mu.
func (p *pipe) keep(buf []byte) {
	if buf != nil && cap(buf) <= maxBufferKept {
		p.spare = buf[:0]
	}
}

// read is the pipe's reader goroutine: it hands each reply to the request
// first in line, until the connection fails or is closed.
func (p *pipe) read() {
	defer p.pl.bg.Done()
	for {
		v, err := readReply(p.br)
		if err != nil {
			p.fail(err)
			return
		}
		p.mu.Lock()
		if p.head == len(p.queue) {
			p.mu.Unlock()
			p.fail(fmt.Errorf("%w: a reply to no command", errProtocol))
			return
		}
		p.replies++
		if e, isErr := v.(driver.Error); !isErr {
			p.served = true
		} else if !p.served && !noScript(e) {
			p.errReply = e
		}
		if !p.silentSince.IsZero() {
			p.silentSince = time.Time{}
			p.silent.Store(false)
		}
		q := p.queue[p.head]
		q.vals = append(q.vals, v)
		if len(q.vals) < q.want {
			p.mu.Unlock()
			continue
		}
		p.pop()
		q.complete = true
		var notify notifier
		if !q.abandoned {
			p.waiting--
			if notify = q.notify; notify == nil {
				q.done <- struct{}{}
			}
		}
		discard := p.replaced && p.waiting == 0
		p.notifying = notify != nil
		p.mu.Unlock()
		if notify != nil {
			notify.replied()
			p.mu.Lock()
			p.notifying = false
			p.mu.Unlock()
		}
		if discard {
			p.fail(errDiscarded)
			return
		}
		if p.br.Buffered() == 0 {
			p.flushOwed()
		}
	}
}

// flushOwed writes what was queued while the reader was handing out
// replies (see notifying), unless a writer is at work, which takes it
// along. The reader calls it once it holds no more replies, before it waits
// for the next: nothing owed waits on a reply that may never come. The
// write is bounded by the pipe's write timeout, as a background write is,
// and made in the background on TLS or without a write timeout.
func (p *pipe) flushOwed() {
	p.mu.Lock()
	if !p.owed {
		p.mu.Unlock()
		return
	}
	p.owed = false
	if p.writing || p.err != nil || len(p.out) == 0 {
		p.mu.Unlock()
		return
	}
	p.writing = true
	if p.tls || p.write <= 0 {
		p.background() // as send does: see there
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.writeInline(time.Now().Add(p.write))
}

// pop removes the request first in line. The caller holds p.mu.
func (p *pipe) pop() {
	p.queue[p.head] = nil
	p.head++
	switch {
	case p.head == len(p.queue):
		p.queue, p.head = p.queue[:0], 0
	case p.head >= 64 && 2*p.head >= len(p.queue): // a queue that never empties
		n := copy(p.queue, p.queue[p.head:])
		clear(p.queue[n:])
		p.queue, p.head = p.queue[:n], 0
	}
}

// wait waits for q's replies, or for ctx to end. On a deadline with no
// reply meanwhile the pipe is silent (see pipe).
func (p *pipe) wait(ctx context.Context, q *request) error {
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if q.complete { // the reply came as ctx ended: take it
		p.mu.Unlock()
		<-q.done
		return nil
	}
	err := ctx.Err()
	p.abandon(q, err)
	return err
}

// abandon stops waiting for q, which is queued and not complete, because
// of err: q's caller's ctx ended. The caller holds p.mu, which abandon
// releases.
func (p *pipe) abandon(q *request, err error) {
	q.abandoned = true
	p.waiting--
	if errors.Is(err, context.DeadlineExceeded) && p.replies == q.mark {
		p.markSilent()
	}
	discard := p.replaced && p.waiting == 0 && p.err == nil
	p.mu.Unlock()
	if discard {
		p.fail(errDiscarded)
	}
}

// arm sets the pipe's timer for the started calls' deadlines to fire at t.
// The caller holds p.mu.
func (p *pipe) arm(t time.Time) {
	p.next = t
	d := time.Until(t)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.expireDue)
		return
	}
	p.timer.Reset(d)
}

// expireDue is the timer's: every started call whose deadline has passed
// and whose reply is not in stops waiting, as a caller of wait would when
// its ctx's deadline passes (see abandon, and pipe for when the pipe
// falls silent), and is told so; the timer is set again for the earliest deadline
// left. One timer per connection serves every started call on it, so that
// none needs a timer, or a callback on its ctx, of its own.
func (p *pipe) expireDue() {
	now := time.Now()
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	var due []notifier
	var next time.Time
	for _, q := range p.queue[p.head:] {
		if q.expires.IsZero() || q.abandoned {
			continue
		}
		if now.Before(q.expires) {
			if next.IsZero() || q.expires.Before(next) {
				next = q.expires
			}
			continue
		}
		q.abandoned = true
		p.waiting--
		if p.replies == q.mark {
			p.markSilent()
		}
		due = append(due, q.notify)
	}
	p.next = time.Time{}
	if !next.IsZero() {
		p.arm(next)
	}
	discard := p.replaced && p.waiting == 0
	p.mu.Unlock()
	for _, n := range due {
		n.expired()
	}
	if discard {
		p.fail(errDiscarded)
	}
}

// markSilent notes that a request timed out while the master answered
// nothing on the connection. The caller holds p.mu.
func (p *pipe) markSilent() {
	if p.silentSince.IsZero() {
		p.silentSince = time.Now()
		p.silent.Store(true)
	}
}

// retire stops the pipe taking requests, once the pipeline has another
// connection in its place, and closes it now if nobody waits on it, or
// else when the last caller stops waiting.
func (p *pipe) retire() {
	p.mu.Lock()
	p.replaced = true
	p.accepting.Store(false)
	discard := p.waiting == 0 && p.err == nil
	p.mu.Unlock()
	if discard {
		p.fail(errDiscarded)
	}
}

// fail ends the pipe with err, the first time: every waiting caller is
// told, the connection closed, and the pipe forgotten by its pipeline.
func (p *pipe) fail(err error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return
	}
	p.err = err
	p.accepting.Store(false)
	var notify []notifier
	for _, q := range p.queue[p.head:] {
		if !q.abandoned {
			q.err, q.complete = err, true
			if q.notify != nil {
				notify = append(notify, q.notify)
			} else {
				q.done <- struct{}{}
			}
		}
	}
	p.queue, p.head, p.waiting, p.out = nil, 0, 0, nil
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	p.raw.Close()
	p.pl.forget(p)
	for _, n := range notify {
		n.replied()
	}
}

// notifier is told that a request's replies are in, or that the connection
// failed under it (replied), or that its deadline passed first (expired);
// once, and outside the pipe's lock.
type notifier interface {
	replied()
	expired()
}

// lost reports that the pipe ended because the connection dropped (the
// master closed it, or restarted), not because it was replaced or closed
// here.
func (p *pipe) lost() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil && driver.Stale(p.err)
}

// refused returns why the master closed the connection before it served a
// call (its last error reply, or how the connection ended), or nil when it
// served one, or ended otherwise (replaced, or closed here). A master that
// does so refuses the connection (see driver.Refusals).
func (p *pipe) refused() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.served || p.err == nil || !driver.Stale(p.err) || !driver.Refused(p.err):
		return nil
	case p.errReply != "":
		return unauthenticated(p.errReply)
	}
	return p.err
}

// hasServed reports whether a reply that is not an error came on p.
func (p *pipe) hasServed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// netTimeout reports an error of a deadline that passed on a connection.
func netTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
