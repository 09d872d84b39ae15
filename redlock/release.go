package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Release deletes the lock on every master that holds it, in parallel, and
// announces the release to waiters.
//
// It returns nil once a quorum of masters answered and at least one still
// held the token; the others finish within the node timeout. It returns
// ErrLockNotHeld when a quorum answered and none held the token any more:
// the lock had expired, so it counts as lost and Err reports ErrLockLost. It
// returns an *AttemptError that wraps each master's *NodeError when fewer
// than a quorum could be reached; the lock then stays as it was and Release
// may be called again. On a lock already lost it still deletes what is left
// and returns ErrLockLost.
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
func (l *Lock) Release(ctx context.Context) (err error) {
	if err := l.checkObtained(); err != nil {
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
	ctx, obs := l.beginOn(ctx, OpRelease)
	// Deferred before l.op is taken: the observer hears of the end after it is released.
	defer obs.end(&err)
	if _, dl := ctx.Deadline(); dl || ctx.Done() != nil { // a ctx that can never end needs no shield
		ctx = context.WithoutCancel(ctx)
	}
	l.stopWatchdog()
	l.op.Lock()
	defer l.op.Unlock()
	wasLost := false
	if err := l.checkHeld(); err != nil {
		if !errors.Is(err, ErrLockLost) {
			return err
		}
		wasLost = true
	}
	if !wasLost {
		switch l.handOver(ctx, &obs) {
		case handedOver:
			l.end(releasedState, nil)
			return nil
		case handedOverFree:
			// The waiter has the lock, but this one had ended unseen.
			l.end(lost, ErrLockLost)
			return fmt.Errorf("%w: no master of the new holder's quorum still held key %q", ErrLockNotHeld, l.req.key)
		}
	}
	err = l.release(ctx)
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

func (l *Lock) release(ctx context.Context) error {
	c := l.c
	n := len(c.nodes)
	timeout := c.nodeTimeout(l.req.ttl)
	parts := make([]releasePart, n) // one allocation for every master's part
	res, err := fanout.Run(ctx, c.overMasters(c.need(l.req.quorum), timeout),
		func(fctx context.Context, nd *fanout.Node[scripts.Released]) {
			i := nd.Index()
			// Every request of this lock on its way here has returned (the
			// common case): the delete goes out now, within the fan-out's
			// deadline.
			if unsure, ok := l.trail.allReturned(i); ok {
				p := &parts[i]
				*p = releasePart{l: l, n: nd, r: l.releaseOf(i, unsure), timeout: timeout}
				p.out.to = p
				c.nodes[i].startRelease(fctx, p.r, &p.out)
				return
			}
			// A request of this lock is still on its way here: the delete
			// follows it, started from its return; no goroutine waits for
			// it. It keeps the fan-out's deadline while at least half a node
			// timeout of it is left (the common case: the request returns
			// within a round trip), and otherwise gets a node timeout of its
			// own, as releaseOn gives it.
			l.trail.whenReturned(i, func(unsure bool) {
				dctx, cancel := followerDeadline(c.o.clock, ctx, fctx, timeout)
				p := &parts[i]
				*p = releasePart{l: l, n: nd, r: l.releaseOf(i, unsure), timeout: timeout, cancel: cancel}
				p.out.to = p
				c.nodes[i].startRelease(dctx, p.r, &p.out)
			})
		})
	if err != nil {
		return err
	}
	if h := hear(res, res.Yes); h.freed {
		l.notifyFreed()
		if res.OK() {
			return nil
		}
	} else if h.held && res.OK() {
		return nil
	}
	// The first answers did not decide it: hear every master, each bounded by
	// the node timeout, before saying nobody held the lock.
	res.Wait(ctx)
	return l.notReleased(res, timeout)
}

// followerDeadline is the deadline of a delete that follows a request still
// on its way when the release's fan-out fctx began: fctx itself while at
// least half a node timeout of it is left, which costs nothing, and
// otherwise a node timeout of its own from now, derived from ctx; cancel is
// nil when there is none to release.
func followerDeadline(clk clock.Clock, ctx, fctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := fctx.Deadline(); ok && dl.Sub(clk.Now()) >= timeout/2 {
		return fctx, nil
	}
	return clk.WithTimeout(ctx, timeout)
}

// releaseOn deletes the lock on master i once every request of this lock
// still on its way there has returned; the delete then gets a node timeout
// of its own.
func (l *Lock) releaseOn(ctx context.Context, i int, timeout time.Duration) (scripts.Released, fanout.Vote, error) {
	unsure, _ := l.trail.waitReturned(context.Background(), i)
	ctx, cancel := l.c.o.clock.WithTimeout(ctx, timeout)
	defer cancel()
	r := l.releaseOf(i, unsure)
	out, err := awaitRelease(ctx, l.c.nodes[i], r)
	return l.released(i, r, out, err, timeout)
}

// releaseOf is the release of this lock on master i, once every request
// of the trail there has returned (unsure: one of its requests got no reply).
func (l *Lock) releaseOf(i int, unsure bool) request {
	r := l.req
	if unsure {
		// That request may still land: leave the token's tombstone, which
		// turns it away.
		r.tombstone = true
	}
	if a, _, _ := l.won.answer(i); a.grant.OK && a.grant.Counter < l.fence && !l.fenced[i] { // in: every request of the trail there has returned
		// A master that granted outside the quorum counts below the
		// fence: the release raises it while the token still holds the
		// key there, so that the masters agree on the next fence.
		r.fence = l.fence
	}
	return r
}

// released is master i's part of a release, from what it answered r.
func (l *Lock) released(i int, r request, out scripts.Released, err error, timeout time.Duration) (scripts.Released, fanout.Vote, error) {
	c := l.c
	if err != nil {
		// The delete may not have landed: the client keeps trying in the
		// background, while the key can still be there. r is copied here,
		// so that only this branch moves it to the heap.
		r := r
		c.spawn(func() { c.redelete(i, r, err, timeout, c.o.clock.Now().Add(l.req.ttl)) })
		return scripts.NotHeld, fanout.No, c.nodeErr(i, err)
	}
	return out, fanout.Yes, nil
}

// releasePart is one master's part of a release: it takes the master's
// answer into the release.
type releasePart struct {
	out     pending[scripts.Released]
	l       *Lock
	n       *fanout.Node[scripts.Released]
	r       request
	timeout time.Duration
	cancel  context.CancelFunc // the delete's own deadline, when it has one; nil when not
}

func (p *releasePart) take(out scripts.Released, err error) {
	if p.cancel != nil {
		p.cancel()
	}
	p.n.Answer(p.l.released(p.n.Index(), p.r, out, err, p.timeout))
}

// heard is what the given masters answered a release: whether any still
// held the token, and whether any freed the key.
type heard struct{ held, freed bool }

func hear(res *fanout.Result[scripts.Released], masters []int) heard {
	var h heard
	for _, i := range masters {
		rep, _ := res.Reply(i) // every master given has answered
		h.held = h.held || rep.Value != scripts.NotHeld
		h.freed = h.freed || rep.Value == scripts.Freed || rep.Value == scripts.FreedUnannounced
	}
	return h
}

// notReleased is what a release heard from every master, once each has
// answered or reached its node timeout, when its first answers did not
// decide it: nil when a quorum answered and one still held the token;
// ErrLockNotHeld when a quorum answered and none did; else the masters
// that could not be reached.
func (l *Lock) notReleased(res *fanout.Result[scripts.Released], timeout time.Duration) error {
	c := l.c
	ms := make([]MasterAnswer, len(c.nodes))
	answered, held := 0, false
	for i := range c.nodes {
		rep, in := res.Reply(i)
		m, ok := c.answerOf(i, in, rep.Err, rep.Err)
		switch {
		case !ok:
		case rep.Value == scripts.NotHeld:
			m.Answer = MasterNotHeld
			answered++
		default:
			m.Answer = MasterAgreed
			answered, held = answered+1, true
		}
		ms[i] = m
	}
	q := c.need(l.req.quorum)
	if answered >= q && held {
		return nil
	}
	e := &AttemptError{Op: "release", Key: l.req.key, Quorum: q, Masters: ms}
	t := tallied(ms)
	switch {
	case answered >= q && t[MasterNoReply]+t[MasterFailed] == 0:
		e.head, e.cause = "redlock: lock not held", "no master still held it"
		e.wraps = []error{ErrLockNotHeld}
	case answered >= q:
		e.head = "redlock: lock not held"
		e.cause = fmt.Sprintf("no master of the %d that answered still held it; %s", answered, obstacles(ms, timeout, ""))
		e.wraps = []error{ErrLockNotHeld}
	default:
		e.head = "redlock: not released"
		e.cause = fmt.Sprintf("%d of %d masters answered, %d needed: %s; the lock is as it was", answered, len(ms), q, obstacles(ms, timeout, ""))
	}
	e.wraps = append(e.wraps, nodeErrs(ms)...)
	return e
}

// notifyFreed wakes this client's waiters for the lock's keys.
func (l *Lock) notifyFreed() {
	if l.req.set == nil {
		l.c.hub.notify(l.req.key)
		return
	}
	for _, k := range l.req.set.keys {
		l.c.hub.notify(k)
	}
}
