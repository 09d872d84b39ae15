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
		go pl.returnRun(ctx, call, done)
	}
}

// returnRun runs call as Eval does and hands the outcome to done; the
// connection that answered the questions counts as checked once done has
// taken the answers.
func (pl *Pipeline) returnRun(ctx context.Context, call driver.Call, done driver.Done) {
	rep, err, a := pl.Run(ctx, call, false)
	hand(done, rep, err, a)
}

// Taker is a driver.Done that decides itself whether a call's answers were
// taken: Start hands it the connection they were answered on, and it calls
// Taken once it has handed them on, or never, when it drops them (a Redis
// Cluster's call redirected elsewhere, whose reply names another server).
type Taker interface {
	ReturnedOn(rep driver.Reply, err error, a Answered)
}

// hand gives done the call's outcome, and marks the connection that
// answered its questions as checked once done has taken them.
func hand(done driver.Done, rep driver.Reply, err error, a Answered) {
	if t, ok := done.(Taker); ok {
		t.ReturnedOn(rep, err, a)
		return
	}
	done.Returned(rep, err)
	a.Taken()
}

// Answered is the connection on which a call's questions were answered,
// if they were. A connection is fresh, and a due check's questions go on
// it (see driver.Check.Due), until the answers of a call that carried them
// have been taken: Taken says so, once the call's driver.Done has returned.
type Answered struct{ p *pipe }

// Taken marks the connection as checked; nothing when no questions were
// answered.
func (a Answered) Taken() {
	if a.p != nil {
		a.p.checked.Store(true)
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
	fresh    bool // asked because p was fresh: taking the answers checks it
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
	s.asked, s.fresh, s.hint = pl.encode(q, p, call, false)
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
	hand(s.done, s.rep, context.DeadlineExceeded, Answered{})
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
		hand(c.done, c.rep, err, Answered{})
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
	hand(c.done, c.rep, err, c.answered())
}

// answered is the pipe that answered the call's questions, if it asked.
func (s *started) answered() Answered {
	if s.fresh {
		return Answered{s.p}
	}
	return Answered{}
}

// again runs the call once more through Eval, after the connection dropped
// under it.
func (s started) again() {
	rep, err, a := s.pl.Run(s.ctx, s.call, false)
	rep.Lost = true
	hand(s.done, rep, err, a)
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
		s.pl.returnRun(s.ctx, s.call, s.done)
	case err != nil && driver.Stale(err) && s.ctx.Err() == nil:
		s.again()
	default:
		hand(s.done, s.rep, err, s.answered())
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
// ctx the read timeout bounds the call. The answers count as taken when
// Eval returns.
func (pl *Pipeline) Eval(ctx context.Context, call driver.Call) (driver.Reply, error) {
	rep, err, a := pl.Run(ctx, call, false)
	a.Taken()
	return rep, err
}

// Run runs call as Eval does, and, asking, on a node importing the call's
// slot from another (a Redis Cluster's ASK): the check's questions when
// due, then ASKING, then the script by its source, as the node may not have
// it cached and ASKING holds for one command only. A migration is short and
// rare, so an asking call whose connection turns out dead is not sent
// again. The caller calls Taken on what it returns once it has handed the
// reply on.
func (pl *Pipeline) Run(ctx context.Context, call driver.Call, asking bool) (driver.Reply, error, Answered) {
	var rep driver.Reply
	var a Answered
	ctx, cancel := pl.bound(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return rep, err, a
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
			return rep, gerr, a
		}
		var fresh bool
		fresh, err = pl.evalOn(ctx, p, call, asking, deadline, &rep)
		if fresh && rep.Answers != nil {
			a = Answered{p}
		}
		switch {
		case err == errNotSent:
			continue
		case err != nil && driver.Stale(err) && ctx.Err() == nil && !asking:
			rep.Lost = true
			continue
		case err != nil:
			return rep, err, a
		}
		return rep, nil, a
	}
	if err == errNotSent {
		err = errNoConnection
	}
	return rep, err, a
}

// evalOn runs call on p, in one unit as encode puts it, then by its source
// (EVAL) on the same pipe if the master has not cached the script. It sets
// rep's Answers and Value. errNotSent means that nothing was run and the
// call may go elsewhere.
func (pl *Pipeline) evalOn(ctx context.Context, p *pipe, call driver.Call, asking bool, deadline time.Time, rep *driver.Reply) (fresh bool, err error) {
	q := pl.request()
	asked, fresh, hint := pl.encode(q, p, call, asking)
	rep.Answers, rep.Value = nil, nil
	if _, err := pl.roundTrip(ctx, p, q, deadline); err != nil {
		return fresh, err
	}
	v, answers, refused := q.split(asked, asking)
	pl.recycle(q)
	rep.Answers = answers
	if refused != nil {
		return fresh, refused
	}
	if !asking && noScript(v) {
		rep.Value, err = pl.evalSource(ctx, p, call, hint, deadline)
		return fresh, err
	}
	rep.Value, err = replyOrError(v)
	return fresh, err
}

// encode puts call's commands in q, for a pipe in hand: the check's
// questions when due, then, asking, ASKING (a Redis Cluster's ASK: see
// EvalAsking), then the script: EVALSHA, or after ASKING EVAL, as ASKING
// holds for one command only and the node may not have the script cached.
// It returns whether the questions are asked, and whether because p is
// still fresh (see Answered) rather than because the check asks always,
// and the hint sent, if the script takes one.
func (pl *Pipeline) encode(q *request, p *pipe, call driver.Call, asking bool) (asked, fresh bool, hint string) {
	var check *driver.Check
	if call.Check != nil {
		check = call.Check("")
	}
	asked = check.Due(!p.checked.Load())
	fresh = asked && !check.Always
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
	return asked, fresh, hint
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
