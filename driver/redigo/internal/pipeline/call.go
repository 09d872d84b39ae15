package pipeline

import (
	"context"
	"errors"
	"strings"
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

// maxPipeTries bounds the tries of one Eval: a connection that dropped is
// replaced and the call sent again, and a pipe that stopped taking requests between being
// picked and being used is passed over.
const maxPipeTries = 4

// errNoConnection is a call's error when every pipe it was given stopped
// taking requests before the call went out.
var errNoConnection = errors.New("redigo: no connection took the call")

// Eval runs call on a shared connection (see driver.Master): the check's
// questions, when due, and the script in one unit. A connection found dead
// is replaced and the call sent again, within ctx; without a deadline in
// ctx the read timeout bounds the call.
func (pl *Pipeline) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	return pl.eval(ctx, call, false)
}

// EvalAsking runs call on a node importing the call's slot from another
// (a Redis Cluster's ASK): the check's questions when due, then ASKING,
// then the script by its source, as the node may not have it cached and
// ASKING holds for one command only. A migration is short and rare, so a
// call whose connection turns out dead is not sent again.
func (pl *Pipeline) EvalAsking(ctx context.Context, call driver.Call) (driver.Reply, error) {
	return pl.eval(ctx, call, true)
}

// eval runs call as Eval does, or, asking, as EvalAsking does: then on one
// pipe only, a connection found dead failing the call.
func (pl *Pipeline) eval(ctx context.Context, call driver.Call, asking bool) (driver.Reply, error) {
	var rep driver.Reply
	ctx, cancel := pl.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	deadline, _ := ctx.Deadline()
	tries := maxPipeTries
	if asking {
		tries = 1
	}
	err := errNotSent
	for range tries {
		p, lost, gerr := pl.get(ctx)
		rep.Lost = rep.Lost || lost
		if gerr != nil {
			return rep, gerr
		}
		err = pl.evalOn(ctx, p, call, asking, deadline, &rep)
		switch {
		case err == errNotSent:
			continue
		case err != nil && driver.Stale(err) && ctx.Err() == nil && !asking:
			rep.Lost = true
			continue
		case err != nil:
			return rep, err
		}
		return rep, nil
	}
	if err == errNotSent {
		err = errNoConnection
	}
	return rep, err
}

// evalOn runs call on p, in one unit as encode puts it, then by its source
// (EVAL) on the same pipe if the master has not cached the script. It sets
// rep's Dials, Answers and Value. errNotSent means that nothing was run and
// the call may go elsewhere.
func (pl *Pipeline) evalOn(ctx context.Context, p *pipe, call driver.Call, asking bool, deadline time.Time, rep *driver.Reply) error {
	q := pl.request()
	var asked bool
	var hint string
	rep.Dials, asked, hint = pl.encode(q, call, asking)
	rep.Answers, rep.Value = nil, nil
	if _, err := pl.roundTrip(ctx, p, q, deadline); err != nil {
		return err
	}
	v, answers, refused := q.split(asked, asking)
	pl.recycle(q)
	rep.Answers = answers
	if refused != nil {
		return refused
	}
	var err error
	if !asking && noScript(v) {
		rep.Value, err = pl.evalSource(ctx, p, call, hint, deadline)
		return err
	}
	rep.Value, err = replyOrError(v)
	return err
}

// encode puts call's commands in q, for a pipe in hand: the check's
// questions when due, then, asking, ASKING (a Redis Cluster's ASK: see
// EvalAsking), then the script: EVALSHA, or after ASKING EVAL, as ASKING
// holds for one command only and the node may not have the script cached.
// It returns the connections opened so far (Reply.Dials, read here, once
// the pipe is in hand, so that one just opened counts), whether the
// questions are asked, and the hint sent, if the script takes one.
func (pl *Pipeline) encode(q *request, call driver.Call, asking bool) (dials uint64, asked bool, hint string) {
	dials = pl.dials.Load()
	var check *driver.Check
	if call.Check != nil {
		check = call.Check("")
	}
	asked = check.Due(dials)
	hint = call.Hint(check, asked)
	q.want = 1
	if asked {
		questions := check.Commands()
		for _, w := range questions {
			q.buf = appendCommand(q.buf, w)
		}
		q.want += len(questions)
	}
	if asking {
		q.buf = appendCommand(q.buf, []string{"ASKING"})
		q.want++
	}
	q.buf = appendEval(q.buf, call, hint, asking)
	return dials, asked, hint
}

// split returns the script's reply of a request that encode filled, the
// answers to the check's questions when asked (a copy: q may be recycled),
// and, asking, ASKING's error reply if the node refused it.
func (q *request) split(asked, asking bool) (v any, answers []any, refused error) {
	n := len(q.vals) - 1 // the questions' replies come before n
	if asking {
		n--
		if e, ok := q.vals[n].(driver.Error); ok {
			refused = e
		}
	}
	if asked {
		answers = append([]any(nil), q.vals[:n]...)
	}
	return q.vals[len(q.vals)-1], answers, refused
}

// noScript reports the reply of a master that has not cached the script.
func noScript(v any) bool {
	e, ok := v.(driver.Error)
	return ok && strings.HasPrefix(string(e), "NOSCRIPT")
}

// evalSource runs call by its source (EVAL) on p, after the master answered
// EVALSHA with NOSCRIPT: on the same connection, so that it goes to the
// server the answers describe.
func (pl *Pipeline) evalSource(ctx context.Context, p *pipe, call driver.Call, hint string, deadline time.Time) (any, error) {
	q := pl.request()
	q.want = 1
	q.buf = appendEval(q.buf, call, hint, true)
	vals, err := pl.roundTrip(ctx, p, q, deadline)
	if err != nil {
		return nil, err
	}
	v := vals[0]
	pl.recycle(q)
	return replyOrError(v)
}

// replyOrError returns an error reply as the error.
func replyOrError(v any) (any, error) {
	if e, ok := v.(driver.Error); ok {
		return nil, unauthenticated(e)
	}
	return v, nil
}

// roundTrip sends q on p and waits for its replies. q is the caller's to
// recycle after a nil error; after an error it is either recycled here or,
// abandoned, left to the collector.
func (pl *Pipeline) roundTrip(ctx context.Context, p *pipe, q *request, deadline time.Time) ([]any, error) {
	if !p.send(q, deadline) {
		pl.recycle(q)
		return nil, errNotSent
	}
	if err := p.wait(ctx, q); err != nil {
		return nil, err
	}
	if q.err != nil {
		err := q.err
		pl.recycle(q)
		return nil, err
	}
	return q.vals, nil
}

// Do runs one command and returns its reply in the neutral form of
// driver.Master's Eval; an error reply is returned as the error, a
// driver.Error. It returns within ctx's deadline, or the read timeout when
// ctx has none. Unlike Eval it never sends a command twice.
func (pl *Pipeline) Do(ctx context.Context, words ...string) (any, error) {
	ctx, cancel := pl.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	for range maxPipeTries {
		p, _, err := pl.get(ctx)
		if err != nil {
			return nil, err
		}
		q := pl.request()
		q.want = 1
		q.buf = appendCommand(q.buf, words)
		vals, err := pl.roundTrip(ctx, p, q, deadline)
		if err == errNotSent {
			continue
		}
		if err != nil {
			return nil, err
		}
		v := vals[0]
		pl.recycle(q)
		return replyOrError(v)
	}
	return nil, errNotSent
}

// bound gives ctx the read timeout as its deadline when it has none.
func (pl *Pipeline) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); !ok && pl.read > 0 {
		return context.WithTimeout(ctx, pl.read)
	}
	return ctx, func() {}
}
