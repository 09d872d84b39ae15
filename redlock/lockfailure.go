package redlock

import (
	"errors"
	"fmt"
	"time"

	"github.com/quorumlock/quorumlock/clock"
	"github.com/quorumlock/quorumlock/redlock/internal/fanout"
	"github.com/quorumlock/quorumlock/redlock/internal/scripts"
)

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

// waitAll waits until every master of res has answered, or d has passed.
func waitAll[T any](clk clock.Clock, res *fanout.Result[T], d time.Duration) {
	t := clk.NewTimer(d)
	defer t.Stop()
	for i := range res.Nodes() {
		select {
		case <-res.Done(i):
		case <-t.C():
			return
		}
	}
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
