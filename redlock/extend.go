package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

// Extend renews the lock for ttl on every master that still holds it, in
// parallel: the key there lives at least ttl more. On each master it goes
// once the lock's earlier requests still on their way there have returned.
// It succeeds only if a quorum did so and the new validity is positive;
// then Until moves on, and TTL is ttl. Otherwise the lock must be treated
// as lost: Extend returns an error wrapping ErrLockLost, closes Done, and
// Err reports the loss. The error is an *AttemptError: one line with the
// cause, and what each master did.
//
// A key's TTL on a master is never shortened: a shorter ttl brings Until
// closer, and the watchdog extends on the shorter schedule, but the masters
// keep the key until the longer TTL runs out, should the holder stop. An
// extension can reach a master after a later one (sent on another
// connection, or held while the master was paused), and must not cut the
// TTL the later one's validity counts on.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) (err error) {
	if err := l.checkObtained(); err != nil {
		return err
	}
	if ctx == nil {
		return invalid("nil context")
	}
	ttl, err = l.c.checkKeyTTL(ctx, l.req.key, ttl)
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
	ctx, obs := l.beginOn(ctx, OpExtend)
	// Deferred before l.op is taken: the observer hears of the end after it is released.
	defer obs.end(&err)
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.checkHeld(); err != nil {
		return err
	}
	until, err := l.extend(ctx, ttl)
	if err != nil {
		l.end(lost, ErrLockLost)
		return lostBy(err)
	}
	l.moved(until, ttl)
	return nil
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

// errGone means a quorum can no longer be reached: enough masters answered
// that they do not hold the token.
var errGone = errors.New("too many masters no longer hold the token")

// extend runs one extension round and returns the new end of validity.
func (l *Lock) extend(ctx context.Context, ttl time.Duration) (time.Time, error) {
	c := l.c
	req := l.req
	req.ttl = ttl
	c.noteTTL(ttl)
	window := c.guardWindow()
	start := c.o.clock.Now()
	parts := make([]extendPart, len(c.nodes)) // one allocation for every master's part
	res, err := fanout.Run(ctx, c.overMasters(c.need(l.req.quorum), c.nodeTimeout(ttl)),
		func(ctx context.Context, n *fanout.Node[scripts.Extended]) {
			i := n.Index()
			p := &parts[i]
			*p = extendPart{c: c, n: n, key: req.key, window: window}
			p.out.to = p
			if l.trail.repliedOn(i) {
				c.nodes[i].startExtend(ctx, req, &p.out)
				return
			}
			// A request of the lock may still be on its way there (an
			// acquire that came after the quorum, a retake): an extension
			// sent now could overtake it, find no key, and count against
			// the lock. It goes once they have returned, within the node
			// timeout.
			l.trail.whenReturned(i, func(bool) { c.nodes[i].startExtend(ctx, req, &p.out) })
		})
	if err != nil {
		return time.Time{}, err
	}
	validity := quorumlock.Validity(ttl, c.o.clock.Since(start), c.o.drift)
	if res.OK() && validity > 0 {
		l.retake(req, res)
		return start.Add(ttl - c.o.drift.Reserve(ttl)), nil
	}
	return time.Time{}, l.notExtended(res, validity, window, c.nodeTimeout(ttl))
}

// extendPart is one master's part of an extension: it takes the master's
// answer into the extension.
type extendPart struct {
	out    pending[scripts.Extended]
	c      *Client
	n      *fanout.Node[scripts.Extended]
	key    string
	window time.Duration
}

func (p *extendPart) take(e scripts.Extended, err error) {
	i, c := p.n.Index(), p.c
	switch {
	case err != nil:
		p.n.Answer(scripts.Lapsed, fanout.No, c.nodeErr(i, err))
	case e != scripts.Renewed:
		p.n.Answer(e, fanout.No, c.nodeErr(i, ErrLockNotHeld))
	default:
		p.n.Answer(e, c.vote(i, p.key, p.window), nil)
	}
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
func (l *Lock) retake(req request, res *fanout.Result[scripts.Extended]) {
	n := res.Nodes()
	if len(res.Yes) == n {
		return
	}
	c := l.c
	timeout := c.nodeTimeout(req.ttl)
	extended := make([]bool, n)
	for _, i := range res.Yes {
		extended[i] = true
	}
	for i := range n {
		if extended[i] {
			continue
		}
		sent := newRetakeRequest()
		l.trail.add(i, sent)
		c.spawn(func() { sent.finish(l.retakeOn(i, req, res, timeout)) })
	}
}

// retakeOn sets the lock again on master i once the extension's request
// there has returned, if it found the key gone. It reports whether the
// retake got no reply.
func (l *Lock) retakeOn(i int, req request, res *fanout.Result[scripts.Extended], timeout time.Duration) (noReply bool) {
	c := l.c
	<-res.Done(i) // bounded by the extension's node timeout
	if rep, _ := res.Reply(i); rep.Value != scripts.Vacant {
		return false
	}
	ctx, cancel := c.o.clock.WithTimeout(context.Background(), timeout)
	defer cancel()
	g, err := awaitAcquire(ctx, c.nodes[i], req)
	if err != nil {
		return true
	}
	if g.OK && g.Counter < l.fence {
		awaitRaise(ctx, c.nodes[i], req, l.fence)
	}
	return false
}

// notExtended is the error of an extension that failed: too few masters
// extended the lock, or the validity left was not positive. It is written
// from one tally of the round, taken once every master has answered or
// reached its node timeout.
func (l *Lock) notExtended(res *fanout.Result[scripts.Extended], validity, window, timeout time.Duration) error {
	c := l.c
	waitAll(c.o.clock, res, timeout)
	now := c.o.clock.Now()
	ms := make([]MasterAnswer, len(c.nodes))
	for i := range c.nodes {
		rep, in := res.Reply(i)
		failure := rep.Err
		if errors.Is(rep.Err, ErrLockNotHeld) {
			failure = nil // an answer, sorted below
		}
		m, ok := c.answerOf(i, in, failure, rep.Err)
		switch {
		case !ok:
		case rep.Err != nil:
			m.Answer, m.Err = MasterNotHeld, rep.Err
		case rep.Vote == fanout.Yes:
			m.Answer = MasterAgreed
		default:
			c.abstained(&m, l.req.key, now, window)
		}
		ms[i] = m
	}
	q := c.need(l.req.quorum)
	e := &AttemptError{Op: "extend", Key: l.req.key, Quorum: q, Masters: ms, head: "redlock: not extended"}
	t := tallied(ms)
	switch n := len(ms); {
	case t[MasterNotHeld] > n-q:
		e.wraps = append(e.wraps, errGone)
		e.cause = fmt.Sprintf("%d of %d masters no longer hold it", t[MasterNotHeld], n)
	case res.OK():
		e.cause = fmt.Sprintf("a quorum extended it, leaving validity %v", roughly(validity))
	default:
		e.cause = fmt.Sprintf("%d of %d masters extended it, %d needed: %s", t[MasterAgreed], n, q, obstacles(ms, timeout, "no longer hold it"))
	}
	e.wraps = append(e.wraps, nodeErrs(ms)...)
	return e
}

// lostBy is the error of an Extend that lost the lock with err.
func lostBy(err error) error {
	var ae *AttemptError
	if !errors.As(err, &ae) {
		return fmt.Errorf("%w: %w", ErrLockLost, err)
	}
	c := *ae
	c.head = "redlock: lock lost"
	c.wraps = append([]error{ErrLockLost}, ae.wraps...)
	return &c
}
