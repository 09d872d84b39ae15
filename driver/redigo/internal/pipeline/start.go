package pipeline

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

// Start runs call as Eval does and hands what Eval would return to done
// (see driver.Master). When a connection is open and taking requests, the
// call's commands are sent from the caller's goroutine and done runs on the
// connection's reader once the reply is in, or on the connection's timer
// when ctx's deadline passes first; no goroutine waits for the reply. Such
// a call is bounded by ctx's deadline alone: a ctx cancelled before it does
// not cut the call short (the caller, a fan-out, stops waiting on its own).
// Otherwise (a connection to open, a connection that dropped under the
// call, a script the master has not cached) a goroutine runs Eval or
// finishes the call as Eval would.
func (pl *Pipeline) Start(ctx context.Context, call driver.Call, done driver.Done) {
	if !pl.start(ctx, call, done) {
		go func() { done.Returned(pl.Eval(ctx, call)) }()
	}
}

// started is one call that Start sent on a pipe: what its continuation
// needs once the reply is in or the deadline passed. It lives in the call's
// request (request.started), so that a call costs no allocation of its
// own; it is copied out before the request is recycled.
type started struct {
	ctx      context.Context
	pl       *Pipeline
	p        *pipe
	q        *request
	call     driver.Call
	asked    bool
	hint     string
	deadline time.Time
	done     driver.Done
	rep      driver.Reply
}

// start sends call on a pipe already open, and reports false, having sent
// nothing, when it cannot: no deadline, ctx already done, or no open pipe
// taking requests.
func (pl *Pipeline) start(ctx context.Context, call driver.Call, done driver.Done) bool {
	deadline, ok := ctx.Deadline()
	if !ok || ctx.Err() != nil {
		return false
	}
	p := pl.slot().open()
	if p == nil {
		return false
	}
	q := pl.request()
	s := &q.started
	*s = started{ctx: ctx, pl: pl, p: p, q: q, call: call, deadline: deadline, done: done}
	s.rep.Dials, s.asked, s.hint = pl.encode(q, call, false)
	// The pipe tells s of the reply, or of the deadline passing first (see
	// pipe.expireDue): no timer and no callback on ctx per call.
	s.q.notify, s.q.expires = s, deadline
	if p.send(s.q, deadline) {
		return true
	}
	// The pipe stopped taking requests: nothing went out, and the caller
	// sends the call another way.
	pl.recycle(s.q)
	return false
}

// expired is the request's notification that its deadline passed before
// its reply came: it stopped waiting, as Eval's caller would (see
// pipe.wait), and the call returns the deadline's error. The request is
// never recycled: its reply may still come.
func (s *started) expired() {
	s.done.Returned(s.rep, context.DeadlineExceeded)
}

// replied is the request's notification: its replies are in, or the
// connection failed under it.
func (s *started) replied() {
	c := *s // s lives in the request, recycled below
	q := c.q
	if q.err != nil {
		err := q.err
		c.pl.recycle(q)
		if driver.Stale(err) && c.ctx.Err() == nil {
			// The connection dropped under the call: Eval replaces it and
			// sends the call again, as it does for a call of its own.
			go c.again()
			return
		}
		c.done.Returned(c.rep, err)
		return
	}
	v, answers, _ := q.split(c.asked, false) // no ASKING to be refused
	c.pl.recycle(q)
	c.rep.Answers = answers
	if noScript(v) {
		go c.bySource()
		return
	}
	v, err := replyOrError(v)
	c.rep.Value = v
	c.done.Returned(c.rep, err)
}

// again runs the call once more through Eval, after the connection dropped
// under it.
func (s started) again() {
	rep, err := s.pl.Eval(s.ctx, s.call)
	rep.Lost = true
	s.done.Returned(rep, err)
}

// bySource runs the call by its source on the same pipe, after the master
// answered EVALSHA with NOSCRIPT.
func (s started) bySource() {
	var err error
	s.rep.Value, err = s.pl.evalSource(s.ctx, s.p, s.call, s.hint, s.deadline)
	switch {
	case err == errNotSent:
		// The connection stopped taking requests in between: the call
		// goes again as a whole, as Eval sends it.
		s.done.Returned(s.pl.Eval(s.ctx, s.call))
	case err != nil && driver.Stale(err) && s.ctx.Err() == nil:
		s.again()
	default:
		s.done.Returned(s.rep, err)
	}
}
