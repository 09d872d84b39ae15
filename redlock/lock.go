package redlock

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
)

// Lock is a lock held on a quorum of masters. It is safe for concurrent use.
//
// A Lock is valid until Until. Past it, or once Done is closed, the holder
// must stop acting on the protected resource: another client may hold the
// lock by then. Fence gives the resource a way to reject a holder that did
// not stop in time.
//
// The methods are safe on a nil or zero Lock, which was never obtained: the
// accessors return zero values, Done a closed channel, and Err, Extend and
// Release an error wrapping ErrInvalid.
type Lock struct {
	c       *Client
	req     request
	fence   int64
	granted []int  // the masters whose votes made the quorum
	won     round  // the round that won the lock: each master's answer, once in
	fenced  []bool // masters whose counter chooseFence raised to the fence
	trail   *trail // every request with the token; a release waits for them

	op sync.Mutex // one Extend or Release at a time

	mu    sync.Mutex
	until time.Time
	state lockState
	err   error
	done  chan struct{}
	stop  chan struct{} // closed to stop the watchdog; nil without one
	ended chan struct{} // closed when the watchdog has exited
	rearm chan struct{} // the TTL or Until changed: the watchdog replans

	heldSince    time.Time   // when obtained, with an observer only
	lossReported atomic.Bool // the observer was told of the loss
}

type lockState int8

const (
	held lockState = iota
	releasedState
	lost
)

// newLock makes the handle of a lock that round won gave: an acquisition's
// last round, or a Resume's read. t is the trail of the requests that
// carried the token before.
func (c *Client) newLock(req request, lo lockOptions, fence int64, until time.Time, won round, t *trail, raised []int) *Lock {
	l := &Lock{
		c: c, req: req, fence: fence, won: won, until: until, done: make(chan struct{}),
		granted: slices.Clone(won.res.Yes),
		fenced:  make([]bool, len(c.nodes)),
		trail:   t,
	}
	for _, i := range raised {
		l.fenced[i] = true
	}
	c.stampHeld(l)
	if lo.autoExtend {
		l.stop, l.ended, l.rearm = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		c.spawn(l.watch)
	}
	return l
}

// obtained reports whether l came from a successful acquisition. Every
// exported method checks it first, so that a nil or zero Lock gets the zero
// values and ErrInvalid that Lock's doc promises.
func (l *Lock) obtained() bool { return l != nil && l.c != nil }

// Key returns the locked key; for a set (LockAll), its first key.
func (l *Lock) Key() string {
	if !l.obtained() {
		return ""
	}
	return l.req.key
}

// Token returns the random token that identifies this acquisition on the
// masters.
func (l *Lock) Token() string {
	if !l.obtained() {
		return ""
	}
	return l.req.token
}

// Owner returns the owner given with WithOwner, or "" for a plain lock.
func (l *Lock) Owner() string {
	if !l.obtained() {
		return ""
	}
	return l.req.owner
}

// TTL returns the TTL the lock was taken or last extended with.
func (l *Lock) TTL() time.Duration {
	if !l.obtained() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.req.ttl
}

// Granted returns the masters, by index in the client's list, whose votes
// made the quorum when the lock was taken (for a resumed lock, those that
// held it when Resume read them, and whose votes count). Masters that
// agreed later are not listed.
func (l *Lock) Granted() []int {
	if !l.obtained() {
		return nil
	}
	return slices.Clone(l.granted)
}

// Fence returns the fencing token: a number strictly greater than the fence
// of every earlier holder of this key, as long as no master loses its data.
// Pass it to the protected resource with each write, and have the resource
// refuse writes with a fence lower than the highest it has seen. A reentrant
// hold may carry a fence above its first hold's, never below. A set of keys
// (LockAll) has one fence, the fence of each of its keys (see FenceOf).
func (l *Lock) Fence() int64 {
	if !l.obtained() {
		return 0
	}
	return l.fence
}

// Until returns the end of the validity window, on the monotonic clock.
func (l *Lock) Until() time.Time {
	if !l.obtained() {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Validity returns the time left in the validity window; <= 0 once it has
// passed or the lock was released or lost.
func (l *Lock) Validity() time.Duration {
	if !l.obtained() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != held {
		return 0
	}
	return l.until.Sub(l.c.o.clock.Now())
}

// Done returns a channel closed when the lock ends: released, or lost.
func (l *Lock) Done() <-chan struct{} {
	if !l.obtained() {
		ended := make(chan struct{}) // a lock never obtained has ended
		close(ended)
		return ended
	}
	return l.done
}

// Err returns nil while the lock is held or after a clean Release, and
// ErrLockLost once the lock was lost.
func (l *Lock) Err() error {
	if !l.obtained() {
		return invalid("lock was never obtained")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// checkObtained returns the error for a lock never obtained.
func (l *Lock) checkObtained() error {
	if !l.obtained() {
		return invalid("lock was never obtained")
	}
	return nil
}

// end moves a held lock to its final state and wakes whoever waits on Done.
func (l *Lock) end(s lockState, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != held {
		return
	}
	l.state, l.err = s, err
	close(l.done)
}

// notAttempted returns the error for an operation on a lock whose ctx was
// done before it began: nothing was sent, and the lock is as it was.
func notAttempted(ctx context.Context, what, key string) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("redlock: %s of key %q not attempted, the lock is unchanged: %w", what, key, context.Cause(ctx))
}

// checkHeld returns the error for a lock that is no longer held.
func (l *Lock) checkHeld() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch l.state {
	case releasedState:
		return fmt.Errorf("%w: already released", ErrLockNotHeld)
	case lost:
		return ErrLockLost
	}
	return nil
}

// trail records, for each master, the requests carrying one lock's token
// that were sent there: the acquisition's rounds and every retake. A
// release, a hand-over or an extension of the lock on a master first waits
// until all of them have returned, so that none can land after it on a
// connection of its own. A request that returned without a reply (a timeout, a dropped
// connection) may still be on its way; on that master a hand-over is not
// sent, and the release leaves the token's tombstone, which the acquire
// script obeys, so it cannot land either. A released token therefore never
// comes back.
type trail struct {
	mu   sync.Mutex
	sent [][]sentRequest
}

// sentRequest is one request of a trail: Done is closed once it has
// returned, and then noReply says whether its outcome on the master is
// unknown.
type sentRequest interface {
	Done() <-chan struct{}
	// returned reports whether the request has returned: Done is closed.
	returned() bool
	noReply() bool
	// onDone runs f once the request has returned: at once when it has,
	// otherwise in the goroutine that returns it.
	onDone(f func())
}

// roundRequest is a master's part of an acquisition round.
type roundRequest struct{ *fanout.Node[ask] }

func (r roundRequest) onDone(f func()) { r.OnDone(f) }

func (r roundRequest) returned() bool { return r.Returned() }

func (r roundRequest) noReply() bool {
	rep, _ := r.Reply()
	return rep.Value.err != nil && !rep.Value.unsent
}

// retakeRequest is a retake sent to one master.
type retakeRequest struct {
	done fanout.Signal
	lost bool // the request got no reply; set before done fires
}

func newRetakeRequest() *retakeRequest { return &retakeRequest{} }

func (r *retakeRequest) Done() <-chan struct{} { return r.done.Done() }

func (r *retakeRequest) returned() bool { return r.done.Fired() }

func (r *retakeRequest) noReply() bool { return r.lost }

func (r *retakeRequest) onDone(f func()) { r.done.OnDone(f) }

// finish records that the retake returned, and whether it got no reply.
func (r *retakeRequest) finish(noReply bool) {
	r.lost = noReply
	r.done.Fire()
}

func newTrail(nodes int, rounds []round) *trail {
	t := &trail{sent: make([][]sentRequest, nodes)}
	k := len(rounds)
	all := make([]sentRequest, nodes*k) // one allocation for the rounds' requests; a retake appends past it
	for i := range nodes {
		t.sent[i] = all[i*k : i*k : (i+1)*k]
		for _, r := range rounds {
			t.sent[i] = append(t.sent[i], roundRequest{r.res.Node(i)})
		}
	}
	return t
}

// add records a request sent to master i.
func (t *trail) add(i int, s sentRequest) {
	t.mu.Lock()
	t.sent[i] = append(t.sent[i], s)
	t.mu.Unlock()
}

// waitReturned waits until every request recorded for master i has returned, and
// reports whether any of them got no reply. Each request is bounded by the
// node timeout, so without a ctx deadline the wait is bounded too.
func (t *trail) waitReturned(ctx context.Context, i int) (unsure bool, err error) {
	for _, s := range t.of(i) {
		if !s.returned() {
			select {
			case <-s.Done():
			case <-ctx.Done():
				return true, ctx.Err()
			}
		}
		unsure = unsure || s.noReply()
	}
	return unsure, nil
}

// allReturned is waitReturned without the wait: it reports ok when every request
// recorded for master i has returned, and then whether any of them got no
// reply.
func (t *trail) allReturned(i int) (unsure, ok bool) {
	for _, s := range t.of(i) {
		if !s.returned() {
			return false, false
		}
		unsure = unsure || s.noReply()
	}
	return unsure, true
}

// repliedOn reports whether every request recorded for master i has
// returned with a reply: nothing of the trail can land there any more. A
// nil trail, which records nothing, has replied everywhere.
func (t *trail) repliedOn(i int) bool {
	if t == nil {
		return true
	}
	unsure, ok := t.allReturned(i)
	return ok && !unsure
}

// whenReturned is waitReturned without a goroutine waiting: it runs f once every
// request recorded for master i by now has returned, with whether any of them
// got no reply; at once when they have, otherwise in the goroutine that returns
// the last of them. Each request is bounded by the node timeout, so f runs
// within it. A request recorded later is not waited for: an extension that
// waits here starts retakes that wait for it in turn.
func (t *trail) whenReturned(i int, f func(unsure bool)) {
	whenAllReturned(t.of(i), false, f)
}

// whenAllReturned runs f once every request of sent has returned, with
// whether any of them, or unsure, got no reply.
func whenAllReturned(sent []sentRequest, unsure bool, f func(unsure bool)) {
	for j, s := range sent {
		if !s.returned() {
			// A copy, so that unsure is not moved to the heap on every call.
			u := unsure
			s.onDone(func() { whenAllReturned(sent[j:], u, f) })
			return
		}
		unsure = unsure || s.noReply()
	}
	f(unsure)
}

// of returns the requests recorded for master i so far.
func (t *trail) of(i int) []sentRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sent[i]
}
