package pool

import (
	"context"
	"time"

	"github.com/quorumlock/quorumlock/driver"
)

var _ driver.Starter = (*Redis)(nil)

// Start runs call as Eval does and hands what Eval would return to done
// (see driver.Starter). In the pipelined mode, when a connection is open
// and taking requests, the call's commands are sent from the caller's
// goroutine and done runs on the connection's reader once the reply is in,
// or on the connection's timer when ctx's deadline passes first; no
// goroutine waits for the reply. Such a call is bounded by ctx's deadline
// alone: a ctx cancelled before it does not cut the call short (the
// caller, a fan-out, stops waiting on its own).
// Otherwise (the pooled mode, a connection to open, a connection that
// dropped under the call, a script the master has not cached) a goroutine
// runs Eval or finishes the call as Eval would.
func (r *Redis) Start(ctx context.Context, call driver.Call, done func(driver.Reply, error)) {
	if r.pl == nil || !r.pl.start(ctx, call, done) {
		go func() { done(r.Eval(ctx, call)) }()
	}
}

// started is one call that Start sent on a pipe: what its continuation
// needs once the reply is in or the deadline passed.
type started struct {
	ctx      context.Context
	pl       *pipeline
	p        *pipe
	q        *request
	call     driver.Call
	check    *driver.Check
	asked    bool
	hint     string
	deadline time.Time
	done     func(driver.Reply, error)
	rep      driver.Reply
}

// start sends call on a pipe already open, and reports false, having sent
// nothing, when it cannot: no deadline, ctx already done, or no open pipe
// taking requests.
func (pl *pipeline) start(ctx context.Context, call driver.Call, done func(driver.Reply, error)) bool {
	deadline, ok := ctx.Deadline()
	if !ok || ctx.Err() != nil {
		return false
	}
	p := pl.slot().open()
	if p == nil {
		return false
	}
	s := &started{ctx: ctx, pl: pl, p: p, call: call, deadline: deadline, done: done}
	// Read once the pipe is in hand, so that one just opened counts.
	s.rep.Dials = pl.r.dials.Load()
	if call.Check != nil {
		s.check = call.Check("")
	}
	s.asked = s.check.Due(s.rep.Dials)
	s.q = pl.request()
	s.hint = s.q.encode(call, s.check, s.asked)
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
	s.done(s.rep, context.DeadlineExceeded)
}

// replied is the request's notification: its replies are in, or the
// connection failed under it.
func (s *started) replied() {
	q := s.q
	if q.err != nil {
		err := q.err
		s.pl.recycle(q)
		if stale(err) && s.ctx.Err() == nil {
			// The connection dropped under the call: Eval replaces it and
			// sends the call again, as it does for a call of its own.
			go func() {
				rep, err := s.pl.r.Eval(s.ctx, s.call)
				rep.Lost = true
				s.done(rep, err)
			}()
			return
		}
		s.done(s.rep, err)
		return
	}
	v, answers := q.split(s.asked)
	s.pl.recycle(q)
	s.rep.Answers = answers
	if noScript(v) {
		go func() {
			var err error
			s.rep.Value, s.rep.Answers, err = s.pl.evalSource(s.ctx, s.p, s.call, s.hint, answers, s.deadline)
			switch {
			case err == errNotSent:
				// The connection stopped taking requests in between: the
				// call goes again as a whole, as Eval sends it.
				s.done(s.pl.r.Eval(s.ctx, s.call))
			case err != nil && stale(err) && s.ctx.Err() == nil:
				rep, err := s.pl.r.Eval(s.ctx, s.call)
				rep.Lost = true
				s.done(rep, err)
			default:
				s.done(s.rep, err)
			}
		}()
		return
	}
	v, err := replyOrError(v)
	s.rep.Value = v
	s.done(s.rep, err)
}
