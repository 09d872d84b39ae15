package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/internal/fanout"
)

// Lock is a lock held on a quorum of masters. It is safe for concurrent use.
//
// A Lock is valid until Until. Past it, or once Done is closed, the holder
// must stop acting on the protected resource: another client may hold the
// lock by then. Fence gives the resource a way to reject a holder that did
// not stop in time.
type Lock struct {
	c       *Client
	req     request
	fence   int64
	granted []int  // the masters whose votes made the quorum
	won     round  // the round that won the lock: each master's answer, once in
	fenced  []bool // masters whose counter settleFence raised to the fence
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
}

type lockState int8

const (
	held lockState = iota
	releasedState
	lost
)

func (c *Client) newLock(req request, lo lockOptions, fence int64, until time.Time, rounds []round, raised []int) *Lock {
	won := rounds[len(rounds)-1]
	l := &Lock{
		c: c, req: req, fence: fence, won: won, until: until, done: make(chan struct{}),
		granted: slices.Clone(won.res.Yes),
		fenced:  make([]bool, len(c.nodes)),
		trail:   newTrail(len(c.nodes), rounds),
	}
	for _, i := range raised {
		l.fenced[i] = true
	}
	if lo.autoExtend {
		l.stop, l.ended, l.rearm = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		c.spawn(l.watch)
	}
	return l
}

// A Lock's methods are safe on a nil or zero Lock, which was never
// obtained: the accessors return zero values, Done a closed channel, Err and
// the operations an error wrapping ErrInvalid.

// obtained reports whether l came from a successful acquisition.
func (l *Lock) obtained() bool { return l != nil && l.c != nil }

// Key returns the locked key.
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
// made the quorum when the lock was taken. Masters that agreed later are
// not listed.
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
// hold may carry a fence above its first hold's, never below.
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

func (l *Lock) valid() error {
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

// Extend sets the lock's TTL to ttl on every master that still holds it, in
// parallel. It succeeds only if a quorum did so and the new validity is
// positive; then Until moves on. Otherwise the lock must be treated as lost:
// Extend returns an error wrapping ErrLockLost, closes Done, and Err reports
// the loss. A reentrant lock's TTL is never shortened.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.valid(); err != nil {
		return err
	}
	if ctx == nil {
		return invalid("nil context")
	}
	ttl, err := l.c.check(ctx, l.req.key, ttl)
	if err != nil {
		return err
	}
	if err := notAttempted(ctx, "extension", l.req.key); err != nil {
		return err
	}
	if err := l.c.enter(); err != nil {
		return err
	}
	defer l.c.work.done()
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	until, err := l.extend(ctx, ttl)
	if err != nil {
		l.end(lost, ErrLockLost)
		return fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	l.moved(until, ttl)
	return nil
}

// notAttempted returns the error for an operation on a lock whose ctx was
// done before it began: nothing was sent, and the lock is as it was.
func notAttempted(ctx context.Context, what, key string) error {
	if ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("redlock: %s of key %q not attempted, the lock is unchanged: %w", what, key, context.Cause(ctx))
}

// moved records an extension: the lock is valid until until, with ttl. The
// watchdog, if any, plans its next extension from these.
func (l *Lock) moved(until time.Time, ttl time.Duration) {
	l.mu.Lock()
	l.until, l.req.ttl = until, ttl
	l.mu.Unlock()
	if l.rearm != nil {
		select {
		case l.rearm <- struct{}{}:
		default: // a replan is already pending
		}
	}
}

// usable returns the error for a lock that is no longer held.
func (l *Lock) usable() error {
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

// errGone means a quorum can no longer be reached: enough masters answered
// that they do not hold the token.
var errGone = errors.New("too many masters no longer hold the token")

// extend runs one extension round and returns the new end of validity.
func (l *Lock) extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	c := l.c
	req := l.req.withArgv()
	req.ttl = ttl
	c.noteTTL(ttl)
	window := c.guardWindow()
	start := c.o.clock.Now()
	res, err := fanOut(ctx, c, c.overMasters(c.quorum, c.nodeTimeout(ttl)),
		func(ctx context.Context, i int) (extended, fanout.Vote, error) {
			e, err := c.nodes[i].extend(ctx, req)
			if err != nil {
				return lapsed, fanout.No, c.nodeErr(i, err)
			}
			if e != renewed {
				return e, fanout.No, c.nodeErr(i, ErrLockNotHeld)
			}
			return e, c.vote(i, window), nil
		})
	if err != nil {
		return time.Time{}, err
	}
	validity := quorumlock.Validity(ttl, c.o.clock.Since(start), c.o.drift)
	if res.OK() && validity > 0 {
		l.retake(req, res)
		return start.Add(ttl - c.o.drift.Reserve(ttl)), nil
	}
	gone := 0
	for _, i := range res.No {
		if rep, _ := res.Reply(i); errors.Is(rep.Err, ErrLockNotHeld) {
			gone++
		}
	}
	why := fmt.Sprintf("%d of %d masters extended it, %d needed", len(res.Yes), len(c.nodes), c.quorum)
	if res.OK() {
		why = fmt.Sprintf("validity %v left", validity)
	}
	if gone > len(c.nodes)-c.quorum {
		return time.Time{}, fmt.Errorf("%w: %s", errGone, why)
	}
	if err := res.Err(); err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", why, err)
	}
	return time.Time{}, errors.New(why)
}

// retake sets the lock again, in the background, on masters where the
// extension found its key gone (a master restarted empty, say), those that
// answered late included, so that the lock keeps every master it can. It is
// called only after the extension proved that a quorum held the lock
// throughout: no one else can have taken it meanwhile, and a master taken
// back now is the holder's as much as those that never lost the key. Taken
// back later, when the lock may have ended, the key only waits out its TTL:
// an extension then cannot count it, since a quorum no longer holds the
// token.
//
// Each retake goes on the lock's trail before retake returns, so a Release,
// which must wait for the Extend that called it, is ordered after it on
// every master.
func (l *Lock) retake(req request, res *fanout.Result[extended]) {
	n := res.Nodes()
	if len(res.Yes) == n {
		return
	}
	c := l.c
	req = req.withArgv()
	timeout := c.nodeTimeout(req.ttl)
	extended := make([]bool, n)
	for _, i := range res.Yes {
		extended[i] = true
	}
	for i := range n {
		if extended[i] {
			continue
		}
		done := make(chan struct{})
		noReply := false // written before done is closed
		l.trail.add(i, done, func() bool { return noReply })
		c.spawn(func() {
			defer close(done)
			<-res.Done(i) // bounded by the extension's node timeout
			if rep, _ := res.Reply(i); rep.Value != vacant {
				return
			}
			ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
			defer cancel()
			g, err := c.nodes[i].acquire(ctx, req)
			if err != nil {
				noReply = true
				return
			}
			if g.ok && g.counter < l.fence {
				c.nodes[i].raiseFence(ctx, req, l.fence)
			}
		})
	}
}

// Release deletes the lock on every master that holds it, in parallel, and
// announces the release to waiters.
//
// It returns nil once a quorum of masters answered and at least one still
// held the token; the others finish within the node timeout. It returns
// ErrLockNotHeld when a quorum answered and none held the token any more:
// the lock had expired, so it counts as lost and Err reports ErrLockLost. It
// returns the aggregated *NodeError values when fewer than a quorum could be
// reached; the lock then stays as it was and Release may be called again. On
// a lock already lost it still deletes what is left and returns ErrLockLost.
//
// For a reentrant lock, Release gives up this hold; the key is freed, and
// waiters are woken, with the last hold.
//
// A ctx already done when Release is called leaves the lock as it was and
// returns an error wrapping the ctx's cause: nothing was sent. Once begun,
// a release runs to its end, whatever ctx does, so that what it returns is
// what the masters did: each master's part is bounded by the node timeout.
// The deletes still running when it returns (at a quorum) are the client's
// to finish: Close waits for them.
func (l *Lock) Release(ctx context.Context) error {
	if err := l.valid(); err != nil {
		return err
	}
	if ctx == nil {
		return invalid("nil context")
	}
	if err := notAttempted(ctx, "release", l.req.key); err != nil {
		return err
	}
	if err := l.c.enter(); err != nil {
		return err
	}
	defer l.c.work.done()
	ctx = context.WithoutCancel(ctx)
	l.stopWatchdog()
	l.op.Lock()
	defer l.op.Unlock()
	wasLost := false
	if err := l.usable(); err != nil {
		if !errors.Is(err, ErrLockLost) {
			return err
		}
		wasLost = true
	}
	if !wasLost {
		switch l.handOver(ctx) {
		case handedOver:
			l.end(releasedState, nil)
			return nil
		case handedOverFree:
			// The waiter has the lock, but this one had ended unseen.
			l.end(lost, ErrLockLost)
			return fmt.Errorf("%w: no master of the new holder's quorum still held key %q", ErrLockNotHeld, l.req.key)
		}
	}
	err := l.release(ctx)
	switch {
	case wasLost:
		return ErrLockLost
	case err == nil:
		l.end(releasedState, nil)
	case errors.Is(err, ErrLockNotHeld):
		l.end(lost, ErrLockLost)
	}
	return err
}

// handOver passes a plain lock straight to a goroutine of this client that
// waits for it, in one round instead of a release and an acquire: on each
// master the key goes from this token to the waiter's, never free in
// between, under the rules of any acquisition (quorum, validity, fence,
// roll-back). If the hand-over fails the waiter tries again by itself and
// this lock is released as usual. A lock past its validity is not handed
// over: its Release must report it.
func (l *Lock) handOver(ctx context.Context) handOverResult {
	if l.req.owner != "" || l.Validity() <= 0 || l.trail.unsure() {
		// A request of this lock that got no reply may still land: only a
		// release leaves the tombstone that turns it away.
		return notHandedOver
	}
	c := l.c
	w := c.hub.claim(l.req.key)
	if w == nil {
		return notHandedOver
	}
	lo := w.lo
	lo.from, lo.after = l.req.token, l.trail
	a := c.attempt(ctx, l.req.key, w.ttl, lo)
	result := notHandedOver
	if a.lock != nil {
		// Read, before the waiter has the lock, whether any master of its
		// quorum still held this token.
		result = handedOverFree
		for _, i := range a.lock.Granted() {
			if g, _, _ := a.lock.won.answer(i); g.grant.tookOver {
				result = handedOver
				break
			}
		}
	}
	w.handed <- a.lock
	return result
}

type handOverResult int8

const (
	notHandedOver  handOverResult = iota
	handedOver                    // the waiter holds the lock, taken over from this one
	handedOverFree                // the waiter holds the lock, but no master of its quorum held this one any more
)

func (l *Lock) release(ctx context.Context) error {
	c := l.c
	n := len(c.nodes)
	req := l.req.withArgv()
	timeout := c.nodeTimeout(l.req.ttl)
	res, err := fanOut(ctx, c, c.overMasters(c.quorum, timeout),
		func(_ context.Context, i int) (released, fanout.Vote, error) {
			// Every request of this lock still on its way here must return
			// before its delete, which then gets a node timeout of its own.
			unsure, _ := l.trail.settle(context.Background(), i)
			ctx, cancel := c.o.clock.WithTimeout(ctx, timeout)
			defer cancel()
			if a, _, _ := l.won.answer(i); a.grant.ok && a.grant.counter < l.fence && !l.fenced[i] { // in: the trail waited for it
				// A master that granted outside the quorum counts below the
				// fence: raise it while the token still holds the key there, so
				// that the masters agree on the next fence without a round trip.
				c.nodes[i].raiseFence(ctx, req, l.fence)
			}
			r := req
			if unsure {
				// One of them got no reply and may still land: leave the
				// token's tombstone, which turns it away.
				r.tombstone, r.argv = true, nil
			}
			out, err := c.nodes[i].release(ctx, r)
			if err != nil {
				// The delete may not have landed: the client keeps trying
				// in the background, while the key can still be there.
				c.spawn(func() { c.redelete(i, r, err, timeout, c.o.clock.Now().Add(l.req.ttl)) })
				return notHeld, fanout.No, c.nodeErr(i, err)
			}
			return out, fanout.Yes, nil
		})
	if err != nil {
		return err
	}
	if h := hear(res, res.Yes); h.freed {
		c.hub.notify(l.req.key)
		if res.OK() {
			return nil
		}
	} else if h.held && res.OK() {
		return nil
	}
	// The first answers did not settle it: hear every master, each bounded by
	// the node timeout, before saying nobody held the lock.
	res.Wait(ctx)
	var answered []int
	var failed []error
	for i := range n {
		rep, ok := res.Reply(i)
		switch {
		case !ok:
			failed = append(failed, c.nodeErr(i, errNoReply))
		case rep.Err != nil:
			failed = append(failed, rep.Err)
		default:
			answered = append(answered, i)
		}
	}
	agg := fanout.Aggregate(failed...)
	switch {
	case len(answered) >= c.quorum && hear(res, answered).held:
		return nil
	case len(answered) >= c.quorum && agg == nil:
		return fmt.Errorf("%w: no master still held key %q", ErrLockNotHeld, l.req.key)
	case len(answered) >= c.quorum:
		return fmt.Errorf("%w: no reachable master still held key %q: %w", ErrLockNotHeld, l.req.key, agg)
	}
	return agg
}

// heard is what the given masters answered a release: whether any still
// held the token, and whether any freed the key.
type heard struct{ held, freed bool }

func hear(res *fanout.Result[released], masters []int) heard {
	var h heard
	for _, i := range masters {
		rep, _ := res.Reply(i) // every master given has answered
		h.held = h.held || rep.Value != notHeld
		h.freed = h.freed || rep.Value == freed || rep.Value == freedUnannounced
	}
	return h
}
